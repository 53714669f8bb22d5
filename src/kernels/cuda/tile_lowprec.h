/* Low-precision operands of the tensor-core products: the power-of-two
 * scaling of a tile and the rounding of its scaled entries, shared by
 * host and device code (not installed).
 *
 * A tile whose largest magnitude is M = f * 2^e (f in [0.5, 1)) is scaled
 * by 2^(T - e), so its largest entry lies in [2^(T-1), 2^T): T = 15 for
 * fp16 (max 65504), 31 for bf16 and tf32 (fp32's range; 16 products of
 * two such entries stay far below fp32's overflow).  Scaled entries are
 * rounded to nearest-even to p significand bits, so the result is exactly
 * representable in the target format (converting it is exact).  Scaled
 * entries below the format's smallest normal (2^-14 fp16, 2^-126 bf16 and
 * tf32) flush to zero: tensor cores were seen to treat fp16 subnormal
 * operands differently from IEEE (H100), so none is ever handed to them.
 * Within a tile, entries down to 2^-29 (fp16) or 2^-157 (bf16, tf32)
 * times the largest one are kept. */
#ifndef TILERAP_TILE_LOWPREC_H
#define TILERAP_TILE_LOWPREC_H
#include <math.h>
#include "tilerap.h"

#ifdef __CUDACC__
#define TR_LP_FN static __host__ __device__ __forceinline__
#else
#define TR_LP_FN static inline
#endif

/* significand bits (with the implicit one), smallest normal exponent,
 * scaling target T of a precision (fp64: no rounding) */
TR_LP_FN int tr_lowprec_bits(int prec)
{
  return prec == TILERAP_PRECISION_BF16 ? 8 : prec == TILERAP_PRECISION_FP64 ? 53 : 11;
}
TR_LP_FN int tr_lowprec_emin(int prec) { return prec == TILERAP_PRECISION_FP16 ? -14 : -126; }
TR_LP_FN int tr_lowprec_top(int prec) { return prec == TILERAP_PRECISION_FP16 ? 15 : 31; }

/* exponent s such that maxabs * 2^s lies in [2^(T-1), 2^T); 0 for a zero
 * or non-finite maximum (non-finite values then propagate as they are) */
TR_LP_FN int tr_lowprec_scale_exp(int prec, double maxabs)
{
  if (!(maxabs > 0) || isinf(maxabs)) return 0;
  int e;
  frexp(maxabs, &e);
  return tr_lowprec_top(prec) - e;
}

/* x (already scaled) rounded to nearest-even in the low precision */
TR_LP_FN double tr_round_prec(int prec, double x)
{
  if (x == 0 || !isfinite(x) || prec == TILERAP_PRECISION_FP64) return x;
  int e;
  frexp(x, &e);
  const int lead = e - 1; /* |x| in [2^lead, 2^(lead+1)) */
  if (lead < tr_lowprec_emin(prec)) return 0.0 * x; /* flush, keeping the sign */
  const double q = ldexp(1.0, lead - (tr_lowprec_bits(prec) - 1)); /* spacing at x */
  return rint(x / q) * q; /* division by a power of two: exact */
}
#endif
