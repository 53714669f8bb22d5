/* Tensor-core pairs of the CUDA engine (opt.tc_threshold >= 0).
 *
 * fp64 (DMMA): C = A*B with tensor-core pairs equals the CUDA-core path
 * and the CPU engine (identical structure, values within 1e-14
 * relative), for every pair on tensor cores (threshold 0), a mix, and the
 * path off; block-dense matrices (the case the path is for), random and
 * model products, Galerkin products of a model hierarchy; re-runs with
 * new values.
 *
 * Low precisions (tf32, bf16, fp16), two references:
 * 1. the documented bound (tilerap.h), against the Gustavson product in
 *    fp64: |C_gpu - C| <= g (|A||B|) entry by entry, g = 2^-10 + 2^-16
 *    (tf32, fp16) or 2^-7 + 2^-13 (bf16), on block-dense, wide-range
 *    (2^+-60 inside tiles), tiny/huge, non-finite and Galerkin operators
 *    (P^T A P: 2g + g^2 times |P|^T |A| |P|);
 * 2. a CPU emulation written here independently of the library: per
 *    tensor-core pair, a tile whose non-zero magnitudes span more than the
 *    format keeps (2^28 fp16, 2^93 bf16/tf32) or that holds inf/NaN makes
 *    the pair fp64 (counted: the plan's lowprec_fallbacks must equal the
 *    emulation's count); otherwise each tile scaled by 2^(T - e) (largest
 *    magnitude f * 2^e, T = 15 for fp16, 31 otherwise), entries rounded to
 *    nearest-even to the format (bit manipulation of the double), exact
 *    products, fp32 accumulation in k order, then scaled back and summed
 *    in fp64 with the CUDA-core pairs.  Tensor cores accumulate in fp32 in
 *    their own order, so the bound is per entry:
 *      |C_gpu - C_emu| <= 2^-17 * sum over pairs and k of |a~||b~|
 *    (fp32 accumulation of 16 terms costs at most about 16 * 2^-24).
 * Values that change between runs (narrow, then wide range) are checked
 * again on the same plan: the range is checked when values arrive.  A
 * plan that declines the low precision (TILERAP_CUDA_LOWPREC_REUSE, its
 * own choice on a low-reuse product) must report no low-precision pairs
 * and give the fp64 result; on a high-reuse product the plan takes it.
 * The other checks force it (knob 0). */
#include "test_gpu_common.h"
#include <stdint.h>

static tilerap_options tc_opts(tilerap_engine e, int dense_thr, int tc_thr, tilerap_precision prec)
{
  tilerap_options o = gpu_opts(e, dense_thr);
  o.tc_threshold = tc_thr;
  o.precision = prec;
  return o;
}

/* m x n with tiles present with probability tdens, each present tile
 * holding an entry with probability fill; values in [-1,1) times
 * 2^(uniform integer in [-spread, spread]) */
/* An m x n CSR of at most cap entries: (i, j) kept where keep() says so,
 * its value from value(); both draw from seed in that order */
typedef struct {
  const char *on;               /* blockdense: tiles present */
  const unsigned short *mask;   /* mixed_tiles: row i's columns in tile column J */
  int32_t TC;
  double fill;
  int spread;
} gen_ctx;
static int keep_blockdense(const gen_ctx *g, int32_t i, int32_t j, uint64_t *seed)
{
  return g->on[(int64_t)(i / 16) * g->TC + j / 16] && ref_rand01(seed) < g->fill;
}
static int keep_mask(const gen_ctx *g, int32_t i, int32_t j, uint64_t *seed)
{
  (void)seed;
  return g->mask[(int64_t)i * g->TC + j / 16] >> (j % 16) & 1;
}
static tilerap_csr *csr_generate(int32_t m, int32_t n, int64_t cap, const gen_ctx *g,
                                 int (*keep)(const gen_ctx *, int32_t, int32_t, uint64_t *), uint64_t *seed)
{
  tilerap_csr *A = NULL;
  tilerap_csr_create(m, n, cap, &A);
  int64_t q = 0;
  for (int32_t i = 0; i < m; i++) {
    A->rowptr[i] = q;
    for (int32_t j = 0; j < n; j++)
      if (keep(g, i, j, seed)) {
        A->colidx[q] = j;
        double v = 2.0 * ref_rand01(seed) - 1.0;
        if (g->spread) v = ldexp(v, (int)(ref_rand01(seed) * (2 * g->spread + 1)) - g->spread);
        A->val[q++] = v;
      }
  }
  A->rowptr[m] = q;
  A->nnz = q;
  return A;
}

static tilerap_csr *blockdense(int32_t m, int32_t n, double tdens, double fill, int spread, uint64_t *seed)
{
  int32_t TR = (m + 15) / 16, TC = (n + 15) / 16;
  char *on = calloc((size_t)TR * TC + 1, 1);
  for (int64_t t = 0; t < (int64_t)TR * TC; t++) on[t] = ref_rand01(seed) < tdens;
  int64_t cap = 0;
  for (int32_t I = 0; I < TR; I++)
    for (int32_t J = 0; J < TC; J++) cap += on[(int64_t)I * TC + J] ? 256 : 0;
  const gen_ctx g = {on, NULL, TC, fill, spread};
  tilerap_csr *A = csr_generate(m, n, cap, &g, keep_blockdense, seed);
  free(on);
  return A;
}

/* ---------------------------------------------------------------- fp64 */
static void check_fp64(const tilerap_csr *A, const tilerap_csr *B, int dthr, int tthr, const char *what)
{
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B);
  tilerap_tile_matrix *dA = gpu_to_device(hA), *dB = gpu_to_device(hB);
  tilerap_options oc = tc_opts(TILERAP_ENGINE_CPU, dthr, -1, TILERAP_PRECISION_FP64);
  tilerap_options og0 = tc_opts(TILERAP_ENGINE_CUDA, dthr, -1, TILERAP_PRECISION_FP64);
  tilerap_options og = tc_opts(TILERAP_ENGINE_CUDA, dthr, tthr, TILERAP_PRECISION_FP64);
  tilerap_spgemm_plan pc = NULL, p0 = NULL, pt = NULL;
  tilerap_tile_matrix *Cc = NULL, *dC0 = NULL, *dCt = NULL;
  int err = tilerap_spgemm_plan_create(hA, hB, &oc, &pc, &Cc);
  if (!err) err = tilerap_spgemm_numeric(pc, hA, hB, Cc);
  if (!err) err = tilerap_spgemm_plan_create(dA, dB, &og0, &p0, &dC0);
  if (!err) err = tilerap_spgemm_plan_create(dA, dB, &og, &pt, &dCt);
  if (!tap_ok(!err, "%s [dense %d, tc %d]: plans (%s)", what, dthr, tthr, err ? tilerap_last_error() : "ok")) goto out;
  tilerap_spgemm_info i0, it;
  tilerap_spgemm_plan_info(p0, &i0);
  tilerap_spgemm_plan_info(pt, &it);
  tap_ok(i0.tc_pairs == 0 && it.pairs == i0.pairs && it.c_nnz == i0.c_nnz && (tthr != 0 || it.tc_pairs == it.pairs) &&
             it.tc_pairs <= it.pairs,
         "%s [dense %d, tc %d]: info (pairs %lld, tensor-core pairs %lld)", what, dthr, tthr, (long long)it.pairs,
         (long long)it.tc_pairs);
  uint64_t seed = 4242;
  for (int rep = 0; rep < 3; rep++) { /* first values, then new values twice */
    if (rep) {
      tilerap_csr *A2 = ref_copy(A), *B2 = ref_copy(B);
      ref_randomize_values(A2, &seed);
      ref_randomize_values(B2, &seed);
      tilerap_tile_update_values_from_csr(hA, A2->rowptr, A2->val);
      tilerap_tile_update_values_from_csr(hB, B2->rowptr, B2->val);
      tilerap_tile_copy_values(hA, dA);
      tilerap_tile_copy_values(hB, dB);
      tilerap_spgemm_numeric(pc, hA, hB, Cc);
      tilerap_csr_destroy(&A2); tilerap_csr_destroy(&B2);
    }
    gpu_poison(dC0);
    gpu_poison(dCt);
    err = tilerap_spgemm_numeric(p0, dA, dB, dC0);
    if (!err) err = tilerap_spgemm_numeric(pt, dA, dB, dCt);
    tilerap_tile_matrix *C0 = err ? NULL : gpu_to_host(dC0), *Ct = err ? NULL : gpu_to_host(dCt);
    double e0 = Ct ? gpu_relerr(Ct, C0) : INFINITY, e1 = Ct ? gpu_relerr(Ct, Cc) : INFINITY;
    int same = Ct && gpu_same_tiles(Ct, Cc) && gpu_same_tiles(C0, Cc);
    tap_ok(same && e0 <= 1e-14 && e1 <= 1e-14,
           "%s [dense %d, tc %d] run %d: tensor cores vs CUDA cores %.2e, vs CPU %.2e, same tiles %d %s", what, dthr,
           tthr, rep, e0, e1, same, err ? tilerap_last_error() : "");
    tilerap_tile_destroy(&C0); tilerap_tile_destroy(&Ct);
  }
out:
  tilerap_spgemm_plan_destroy(&pc); tilerap_spgemm_plan_destroy(&p0); tilerap_spgemm_plan_destroy(&pt);
  tilerap_tile_destroy(&Cc); tilerap_tile_destroy(&dC0); tilerap_tile_destroy(&dCt);
  tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB); tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dB);
}

/* Pairs (A tile, B tile) of A*B with at least thr scalar multiply-adds,
 * counted from the tiles' row masks; *all: every pair of an A tile (I,K)
 * and a B tile (K,J) whose C tile (I,J) gets an entry, as the plan counts
 * them (a pair without multiply-adds counts when its C tile is kept; a C
 * tile whose pairs all lack them is not stored, nor are its pairs) */
static int64_t count_pairs(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int thr, int64_t *all)
{
  int64_t n = 0, *np = calloc((size_t)B->tile_cols + 1, sizeof *np), *nm = calloc((size_t)B->tile_cols + 1, sizeof *nm);
  *all = 0;
  for (int32_t I = 0; I < A->tile_rows; I++) {
    for (int64_t a = A->tile_ptr[I]; a < A->tile_ptr[I + 1]; a++) {
      const int32_t K = A->tile_col[a];
      for (int64_t b = B->tile_ptr[K]; b < B->tile_ptr[K + 1]; b++) {
        int macs = 0;
        for (int r = 0; r < 16; r++)
          for (int k = 0; k < 16; k++)
            if (A->row_mask[16 * a + r] >> k & 1) macs += __builtin_popcount(B->row_mask[16 * b + k]);
        np[B->tile_col[b]]++;
        nm[B->tile_col[b]] += macs;
        if (macs >= thr) n++;
      }
    }
    for (int32_t J = 0; J < B->tile_cols; J++) {
      if (nm[J] > 0) *all += np[J];
      np[J] = nm[J] = 0;
    }
  }
  free(np); free(nm);
  return n;
}

/* m x n: tiles present with probability tdens, each full with probability
 * pfull, else holding `few` entries at random places */
static tilerap_csr *mixed_tiles(int32_t m, int32_t n, double tdens, double pfull, int few, uint64_t *seed)
{
  const int32_t TR = (m + 15) / 16, TC = (n + 15) / 16;
  unsigned short *mask = calloc((size_t)m * TC + 1, sizeof *mask); /* row i's columns in tile column J */
  for (int32_t I = 0; I < TR; I++)
    for (int32_t J = 0; J < TC; J++) {
      if (ref_rand01(seed) >= tdens) continue;
      const int full = ref_rand01(seed) < pfull;
      for (int e = 0; e < (full ? 256 : few); e++) {
        const int r = full ? e / 16 : (int)(ref_rand01(seed) * 16), c = full ? e % 16 : (int)(ref_rand01(seed) * 16);
        if (16 * I + r < m && 16 * J + c < n) mask[(int64_t)(16 * I + r) * TC + J] |= (unsigned short)(1u << c);
      }
    }
  int64_t cap = 0;
  for (int64_t q = 0; q < (int64_t)m * TC; q++) cap += __builtin_popcount(mask[q]);
  const gen_ctx g = {NULL, mask, TC, 0.0, 0};
  tilerap_csr *A = csr_generate(m, n, cap, &g, keep_mask, seed);
  free(mask);
  return A;
}

/* TILERAP_TC_AUTO (the default): 256 where a pair of the operands carries
 * fill(A) fill(B) / 16 >= 150 multiply-adds on average, else 512; the
 * plan's tensor-core pairs must be the ones counted here for that
 * threshold (and the products right: check_fp64) */
static void check_auto(const tilerap_csr *A, const tilerap_csr *B, int want_thr, const char *what)
{
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B);
  tilerap_tile_matrix *dA = gpu_to_device(hA), *dB = gpu_to_device(hB), *dC = NULL;
  const double mean = (hA->num_tiles ? (double)hA->nnz / (double)hA->num_tiles : 0) *
                      (hB->num_tiles ? (double)hB->nnz / (double)hB->num_tiles : 0) / 16.0;
  int64_t all = 0, n256 = count_pairs(hA, hB, 256, &all), n512 = count_pairs(hA, hB, 512, &all);
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = TILERAP_ENGINE_CUDA;
  tilerap_spgemm_plan p = NULL;
  int err = tilerap_spgemm_plan_create(dA, dB, &o, &p, &dC);
  tilerap_spgemm_info info;
  memset(&info, 0, sizeof info);
  if (!err) tilerap_spgemm_plan_info(p, &info);
  const int64_t want = want_thr == 256 ? n256 : n512;
  tap_ok(!err && o.tc_threshold == TILERAP_TC_AUTO && (mean >= 150) == (want_thr == 256) && n256 != n512 &&
             info.pairs == all && info.tc_pairs == want,
         "%s: default (auto) tensor-core threshold %d: mean pair %.0f, tensor-core pairs %lld (at 256: %lld, at 512: "
         "%lld, of %lld) %s",
         what, want_thr, mean, (long long)info.tc_pairs, (long long)n256, (long long)n512, (long long)all,
         err ? tilerap_last_error() : "");
  check_fp64(A, B, 192, TILERAP_TC_AUTO, what);
  tilerap_spgemm_plan_destroy(&p);
  tilerap_tile_destroy(&dC); tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB);
  tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dB);
}

/* -------------------------------------------------- low-precision emulation */
static int emu_bits(tilerap_precision p) { return p == TILERAP_PRECISION_BF16 ? 8 : 11; }
static int emu_emin(tilerap_precision p) { return p == TILERAP_PRECISION_FP16 ? -14 : -126; }
static int emu_top(tilerap_precision p) { return p == TILERAP_PRECISION_FP16 ? 15 : 31; }

/* nearest-even to `bits` significand bits; below 2^emin (the format's
 * subnormals) zero */
static double emu_round(double x, int bits, int emin)
{
  if (x == 0 || !isfinite(x)) return x;
  if (fabs(x) < ldexp(1.0, emin)) return 0.0 * x;
  uint64_t u;
  memcpy(&u, &x, 8);
  const int drop = 52 - (bits - 1);
  const uint64_t low = u & ((1ull << drop) - 1), half = 1ull << (drop - 1);
  u &= ~((1ull << drop) - 1);
  if (low > half || (low == half && ((u >> drop) & 1))) u += 1ull << drop; /* carries into the exponent */
  memcpy(&x, &u, 8);
  return x;
}

static void emu_tile(const tilerap_tile_matrix *T, int64_t t, double d[16][16])
{
  memset(d, 0, 256 * sizeof(double));
  for (int64_t q = T->tile_off[t]; q < T->tile_off[t + 1]; q++) d[T->idx[q] >> 4][T->idx[q] & 15] = T->val[q];
}

/* whether a tile fits the format: finite, non-zero magnitudes within
 * 2^28 (fp16) or 2^93 (bf16, tf32) of each other */
static int emu_fits(double d[16][16], tilerap_precision p)
{
  double mx = 0, mn = INFINITY;
  for (int i = 0; i < 256; i++) {
    const double x = fabs(d[i / 16][i % 16]);
    if (!isfinite(x)) return 0;
    if (x > mx) mx = x;
    if (x > 0 && x < mn) mn = x;
  }
  if (mx == 0) return 1;
  int emax, emin;
  frexp(mx, &emax);
  frexp(mn, &emin);
  return emax - emin <= (p == TILERAP_PRECISION_FP16 ? 28 : 93);
}

/* scales, rounds; returns the scaling exponent */
static int emu_lower(double d[16][16], tilerap_precision p)
{
  double mx = 0;
  for (int i = 0; i < 256; i++) mx = fmax(mx, fabs(d[i / 16][i % 16]));
  int s = 0;
  if (mx > 0 && !isinf(mx)) {
    int e;
    frexp(mx, &e);
    s = emu_top(p) - e;
  }
  for (int i = 0; i < 256; i++) d[i / 16][i % 16] = emu_round(ldexp(d[i / 16][i % 16], s), emu_bits(p), emu_emin(p));
  return s;
}

/* emulated C (values at C's structure), per-entry bound sums, and the
 * number of tensor-core pairs (of C's tiles) that must run in fp64 */
static int64_t emulate(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_tile_matrix *C, int tthr,
                       tilerap_precision prec, double *cval, double *bnd)
{
  double (*acc)[256] = calloc((size_t)C->tile_cols + 1, sizeof *acc);
  double (*ab)[256] = calloc((size_t)C->tile_cols + 1, sizeof *ab);
  char *inc = calloc((size_t)C->tile_cols + 1, 1);
  double a[16][16], b[16][16];
  int64_t fallbacks = 0;
  for (int32_t I = 0; I < A->tile_rows; I++) {
    for (int64_t t = C->tile_ptr[I]; t < C->tile_ptr[I + 1]; t++) inc[C->tile_col[t]] = 1;
    for (int64_t ta = A->tile_ptr[I]; ta < A->tile_ptr[I + 1]; ta++) {
      const int32_t K = A->tile_col[ta];
      for (int64_t tb = B->tile_ptr[K]; tb < B->tile_ptr[K + 1]; tb++) {
        const int32_t J = B->tile_col[tb];
        int macs = 0;
        for (int r = 0; r < 16; r++)
          for (int k = 0; k < 16; k++)
            if ((A->row_mask[16 * ta + r] >> k) & 1) macs += __builtin_popcount(B->row_mask[16 * tb + k]);
        emu_tile(A, ta, a);
        emu_tile(B, tb, b);
        const int tc = tthr >= 0 && macs >= tthr && inc[J];
        if (tc && emu_fits(a, prec) && emu_fits(b, prec)) {
          const int sa = emu_lower(a, prec), sb = emu_lower(b, prec);
          for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++) {
              float s = 0.0f;
              double m = 0;
              for (int k = 0; k < 16; k++) {
                s += (float)a[r][k] * (float)b[k][c]; /* exact product, fp32 sum */
                m += fabs(a[r][k] * b[k][c]);
              }
              acc[J][16 * r + c] += ldexp((double)s, -(sa + sb));
              ab[J][16 * r + c] += ldexp(m, -(sa + sb));
            }
        } else {
          fallbacks += tc;
          for (int r = 0; r < 16; r++)
            for (int c = 0; c < 16; c++)
              for (int k = 0; k < 16; k++) {
                acc[J][16 * r + c] += a[r][k] * b[k][c];
                ab[J][16 * r + c] += fabs(a[r][k] * b[k][c]);
              }
        }
      }
    }
    for (int64_t t = C->tile_ptr[I]; t < C->tile_ptr[I + 1]; t++) {
      const int32_t J = C->tile_col[t];
      for (int64_t q = C->tile_off[t]; q < C->tile_off[t + 1]; q++) {
        cval[q] = acc[J][C->idx[q]];
        bnd[q] = ab[J][C->idx[q]];
      }
      memset(acc[J], 0, sizeof acc[J]);
      memset(ab[J], 0, sizeof ab[J]);
      inc[J] = 0;
    }
  }
  free(acc);
  free(ab);
  free(inc);
  return fallbacks;
}

/* the documented bound g of a precision (tilerap.h) */
static double lp_bound(tilerap_precision p)
{
  return p == TILERAP_PRECISION_BF16 ? ldexp(1.0, -7) + ldexp(1.0, -13) : ldexp(1.0, -10) + ldexp(1.0, -16);
}

static tilerap_csr *csr_abs(const tilerap_csr *A)
{
  tilerap_csr *X = ref_copy(A);
  for (int64_t q = 0; q < X->nnz; q++) X->val[q] = fabs(X->val[q]);
  return X;
}

/* worst |C_gpu - R| / (g * AB) over the entries (> 1: bound broken), with
 * R and AB CSR references of C's structure, and the relative error.  A
 * non-finite reference entry must be non-finite on the GPU; a non-finite
 * GPU entry where R is finite is accepted only with nonfinite_inputs (an
 * inf or NaN in a tensor-core pair's tile spreads over the rows and
 * columns it meets, as in a dense product).  INFINITY on a structure
 * mismatch. */
static double bound_ratio(const tilerap_tile_matrix *Cg, const tilerap_csr *R, const tilerap_csr *AB, double g,
                          int nonfinite_inputs, double *relerr)
{
  tilerap_csr *X = ref_tile_to_csr(Cg);
  double worst = 0, d2 = 0, c2 = 0, cmax = 0;
  if (!ref_same_structure(X, R) || !ref_same_structure(X, AB)) { tilerap_csr_destroy(&X); return INFINITY; }
  for (int64_t q = 0; q < R->nnz; q++)
    if (isfinite(R->val[q])) cmax = fmax(cmax, fabs(R->val[q]));
  if (!(cmax > 0)) cmax = 1;
  for (int64_t q = 0; q < R->nnz; q++) {
    const double x = X->val[q], r = R->val[q];
    if (!isfinite(x)) {
      if (isfinite(r) && !nonfinite_inputs) worst = INFINITY;
      continue;
    }
    if (!isfinite(r)) { worst = INFINITY; continue; } /* a finite value where fp64 has none */
    if (!isfinite(AB->val[q])) continue;
    /* + 2^-50 AB: the fp64 reference's own rounding, in any summation order */
    const double dif = fabs(x - r), tol = g * AB->val[q] + ldexp(AB->val[q], -50);
    if (!(dif <= tol)) worst = fmax(worst, tol > 0 ? dif / tol : INFINITY);
    else if (tol > 0) worst = fmax(worst, dif / tol);
    d2 += ((x - r) / cmax) * ((x - r) / cmax);
    c2 += (r / cmax) * (r / cmax);
  }
  if (relerr) *relerr = c2 > 0 ? sqrt(d2 / c2) : sqrt(d2);
  tilerap_csr_destroy(&X);
  return worst;
}

/* C = A B in precision prec with tensor-core threshold tthr, against the
 * emulation (values and fallback count) and the documented bound; with
 * A2, B2 (same structures, other values): a second run of the same plan */
static void check_lowprec(const tilerap_csr *A, const tilerap_csr *B, const tilerap_csr *A2, const tilerap_csr *B2,
                          int tthr, tilerap_precision prec, const char *what)
{
  int nonfinite = 0; /* inputs holding inf or NaN */
  for (int64_t q = 0; q < A->nnz; q++) nonfinite |= !isfinite(A->val[q]);
  for (int64_t q = 0; q < B->nnz; q++) nonfinite |= !isfinite(B->val[q]);
  const char *pn = tilerap_precision_name(prec);
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B);
  tilerap_options og = tc_opts(TILERAP_ENGINE_CUDA, 192, tthr, prec);
  tilerap_spgemm_plan pg = NULL;
  tilerap_tile_matrix *Cg = NULL;
  int err = tilerap_spgemm_plan_create(hA, hB, &og, &pg, &Cg);
  if (!tap_ok(!err, "%s %s [tc %d]: plan (%s)", what, pn, tthr, err ? tilerap_last_error() : "ok")) goto out;
  for (int run = 0; run < (A2 ? 2 : 1); run++) {
    const tilerap_csr *a = run ? A2 : A, *b = run ? B2 : B;
    if (run) {
      tilerap_tile_update_values_from_csr(hA, a->rowptr, a->val);
      tilerap_tile_update_values_from_csr(hB, b->rowptr, b->val);
    }
    gpu_poison(Cg);
    err = tilerap_spgemm_numeric(pg, hA, hB, Cg);
    if (!tap_ok(!err, "%s %s [tc %d] run %d: numeric (%s)", what, pn, tthr, run, err ? tilerap_last_error() : "ok"))
      goto out;
    tilerap_spgemm_info ig;
    tilerap_spgemm_plan_info(pg, &ig);
    /* 1. the emulation */
    double *ev = malloc(((size_t)Cg->nnz + 1) * sizeof(double)), *bd = malloc(((size_t)Cg->nnz + 1) * sizeof(double));
    const int64_t efb = emulate(hA, hB, Cg, tthr, prec, ev, bd);
    double worst = 0;
    int64_t bad = 0, wq = -1;
    for (int64_t q = 0; q < Cg->nnz; q++) {
      if (!isfinite(ev[q]) || !isfinite(bd[q])) { /* inf/NaN reach C as in the (dense) emulation */
        if (!isfinite(ev[q]) && isfinite(Cg->val[q])) bad++;
        continue;
      }
      const double dif = fabs(Cg->val[q] - ev[q]), tol = ldexp(bd[q], -17);
      if (!(dif <= tol)) bad++;
      if (bd[q] > 0 && dif / bd[q] > worst) { worst = dif / bd[q]; wq = q; }
    }
    tap_ok(bad == 0 && ig.lowprec_pairs == ig.tc_pairs && ig.lowprec_fallbacks == efb,
           "%s %s [tc %d, %lld/%lld pairs, fp64 fallbacks %lld, emulation %lld] run %d: GPU vs emulation within "
           "2^-17 |A~||B~| (%lld entries over, worst %.2e)",
           what, pn, tthr, (long long)ig.tc_pairs, (long long)ig.pairs, (long long)ig.lowprec_fallbacks,
           (long long)efb, run, (long long)bad, worst);
    if (bad && wq >= 0)
      tap_diag("worst entry %lld: GPU %.17g, emulation %.17g, bound sum %.6g", (long long)wq, Cg->val[wq], ev[wq], bd[wq]);
    free(ev);
    free(bd);
    /* 2. the documented bound against the Gustavson product */
    tilerap_csr *R = ref_spgemm(a, b), *aa = csr_abs(a), *bb = csr_abs(b), *AB = ref_spgemm(aa, bb);
    double rel = 0;
    const double ratio = bound_ratio(Cg, R, AB, lp_bound(prec), nonfinite, &rel);
    tap_ok(ratio <= 1.0, "%s %s [tc %d] run %d: |C - C_fp64| <= %.3g |A||B| (worst at %.2f of the bound), relerr %.2e",
           what, pn, tthr, run, lp_bound(prec), ratio, rel);
    tilerap_csr_destroy(&R); tilerap_csr_destroy(&aa); tilerap_csr_destroy(&bb); tilerap_csr_destroy(&AB);
  }
out:
  tilerap_spgemm_plan_destroy(&pg);
  tilerap_tile_destroy(&Cg);
  tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB);
}

/* the plan's own choice (default reuse threshold): low precision where
 * its pairs reuse each converted tile often (dense 320^3: 10 pairs per
 * tile), fp64 where they do not (block-sparse tiles: about 1) */
static void check_policy(tilerap_precision prec, uint64_t *seed)
{
  gpu_knob_set("TILERAP_CUDA_LOWPREC_REUSE", NULL);
  for (int k = 0; k < 2; k++) {
    tilerap_csr *A = k ? blockdense(300, 300, 0.2, 0.2, 0, seed) : blockdense(320, 320, 1.0, 1.0, 0, seed);
    tilerap_csr *B = k ? blockdense(300, 300, 0.2, 0.2, 0, seed) : blockdense(320, 320, 1.0, 1.0, 0, seed);
    tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B), *Cg = NULL;
    tilerap_options og = tc_opts(TILERAP_ENGINE_CUDA, 192, 0, prec);
    tilerap_spgemm_plan pg = NULL;
    int err = tilerap_spgemm_plan_create(hA, hB, &og, &pg, &Cg);
    if (!err) err = tilerap_spgemm_numeric(pg, hA, hB, Cg);
    tilerap_spgemm_info ig = {0};
    if (pg) tilerap_spgemm_plan_info(pg, &ig);
    tilerap_csr *R = ref_spgemm(A, B), *aa = csr_abs(A), *bb = csr_abs(B), *AB = ref_spgemm(aa, bb);
    double rel = 0;
    const double ratio = err ? INFINITY : bound_ratio(Cg, R, AB, k ? 1e-14 : lp_bound(prec), 0, &rel);
    const int want = k ? ig.lowprec_pairs == 0 : ig.lowprec_pairs == ig.tc_pairs;
    tap_ok(!err && ig.tc_pairs > 0 && want && ratio <= 1.0,
           "%s, plan's choice: %lld of %lld tensor-core pairs in %s over %lld converted tiles (%s), within %s (%.2f of "
           "it), relerr %.2e", k ? "block-sparse" : "dense 320^3", (long long)ig.lowprec_pairs, (long long)ig.tc_pairs,
           tilerap_precision_name(prec), (long long)ig.lowprec_tiles, k ? "declined: fp64" : "taken",
           k ? "1e-14 |A||B| (fp64)" : "the precision's bound", ratio, rel);
    tilerap_csr_destroy(&R); tilerap_csr_destroy(&aa); tilerap_csr_destroy(&bb); tilerap_csr_destroy(&AB);
    tilerap_spgemm_plan_destroy(&pg);
    tilerap_tile_destroy(&Cg); tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  gpu_knob_set("TILERAP_CUDA_LOWPREC_REUSE", "0");
}

/* P^T A P in low precision on a wide-range operator (D A D, D = 2^(-40..40)):
 * within (2g + g^2) |P|^T |A| |P| of the fp64 product */
static void check_ptap_lowprec(int32_t n, tilerap_precision prec)
{
  tilerap_csr *A = NULL, *P = NULL;
  int32_t dims[3], cd[3];
  int nd;
  tilerap_model_poisson(TILERAP_P3D27, n, &A, dims, &nd);
  tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd);
  ref_scale_wide(A, 40, 5);
  tilerap_csr *R = ref_ptap(A, P), *aa = csr_abs(A), *pp = csr_abs(P), *AB = ref_ptap(aa, pp);
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hP = ref_csr_to_tile(P), *Cg = NULL;
  tilerap_options og = tc_opts(TILERAP_ENGINE_CUDA, 192, 0, prec);
  tilerap_ptap_plan pg = NULL;
  gpu_knob_set("TILERAP_PTAP", "first"); /* both halves as planned products (their tensor-core pairs) */
  int err = tilerap_ptap_plan_create(hA, hP, &og, &pg, &Cg);
  for (int run = 0; !err && run < 2; run++) { /* the first values, then the hit kernel's run */
    gpu_poison(Cg);
    err = tilerap_ptap_numeric(pg, hA, hP, Cg);
  }
  tilerap_ptap_info info = {0};
  if (pg) tilerap_ptap_plan_info(pg, &info);
  const double g = lp_bound(prec);
  double rel = 0;
  const double ratio = err ? INFINITY : bound_ratio(Cg, R, AB, 2 * g + g * g, 0, &rel);
  tap_ok(!err && ratio <= 1.0 && info.ap.lowprec_pairs + info.ptap.lowprec_pairs > 0,
         "wide-range P^T A P %s (n=%d): within (2g+g^2)|P|^T|A||P| (worst at %.2f), relerr %.2e, low-precision pairs "
         "%lld + %lld, fp64 fallbacks %lld + %lld %s",
         tilerap_precision_name(prec), n, ratio, rel, (long long)info.ap.lowprec_pairs,
         (long long)info.ptap.lowprec_pairs, (long long)info.ap.lowprec_fallbacks,
         (long long)info.ptap.lowprec_fallbacks, err ? tilerap_last_error() : "");
  gpu_knob_set("TILERAP_PTAP", NULL);
  tilerap_ptap_plan_destroy(&pg);
  tilerap_tile_destroy(&Cg); tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hP);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&R);
  tilerap_csr_destroy(&aa); tilerap_csr_destroy(&pp); tilerap_csr_destroy(&AB);
}

/* ------------------------------------------------------------- Galerkin */
static void check_ptap(tilerap_stencil s, int32_t n, int tthr)
{
  tilerap_csr *A = NULL, *P = NULL;
  int32_t dims[3], cd[3];
  int nd;
  tilerap_model_poisson(s, n, &A, dims, &nd);
  tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd);
  tilerap_csr *R = ref_ptap(A, P);
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hP = ref_csr_to_tile(P), *Cc = NULL, *Cg = NULL;
  tilerap_options oc = tc_opts(TILERAP_ENGINE_CPU, 192, -1, TILERAP_PRECISION_FP64);
  tilerap_options og = tc_opts(TILERAP_ENGINE_CUDA, 192, tthr, TILERAP_PRECISION_FP64);
  tilerap_ptap_plan pc = NULL, pg = NULL;
  int err = tilerap_ptap_plan_create(hA, hP, &oc, &pc, &Cc);
  if (!err) err = tilerap_ptap_numeric(pc, hA, hP, Cc);
  if (!err) err = tilerap_ptap_plan_create(hA, hP, &og, &pg, &Cg);
  if (!err) { gpu_poison(Cg); err = tilerap_ptap_numeric(pg, hA, hP, Cg); }
  tilerap_ptap_info info = {0};
  if (pg) tilerap_ptap_plan_info(pg, &info);
  double e1 = err ? INFINITY : gpu_relerr(Cg, Cc), e2 = err ? INFINITY : gpu_vs_ref(Cg, R);
  tap_ok(!err && gpu_same_tiles(Cg, Cc) && e1 <= 1e-14 && e2 <= 1e-14,
         "%s n=%d PtAP [tc %d]: tensor-core pairs %lld/%lld (AP) %lld/%lld (PtAP), vs CPU %.2e, vs ref %.2e %s",
         tilerap_stencil_name(s), n, tthr, (long long)info.ap.tc_pairs, (long long)info.ap.pairs,
         (long long)info.ptap.tc_pairs, (long long)info.ptap.pairs, e1, e2, err ? tilerap_last_error() : "");
  tilerap_ptap_plan_destroy(&pc); tilerap_ptap_plan_destroy(&pg);
  tilerap_tile_destroy(&Cc); tilerap_tile_destroy(&Cg); tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hP);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&R);
}

int main(int argc, char **argv)
{
  gpu_skip_without_device();
  /* the CPU emulation's own rounding, checked before any device work */
  tap_ok(emu_round(1.0 + ldexp(1.0, -8), 8, -126) == 1.0 && emu_round(1.0 + 3 * ldexp(1.0, -8), 8, -126) == 1.0 + ldexp(1.0, -6) &&
             emu_round(ldexp(1.0, -14) + ldexp(1.0, -25), 11, -14) == ldexp(1.0, -14) && emu_round(ldexp(1.9, -15), 11, -14) == 0 &&
             emu_round(ldexp(1.0, 15) - 1, 11, -14) == ldexp(1.0, 15),
         "emulation: nearest-even rounding, flush below the smallest normal");
  int quick = argc > 1 && !strcmp(argv[1], "--quick"); /* sanitizer runs */
  uint64_t seed = 6;
  struct { int32_t m, k, n; double td, fill; const char *name; } cases[] = {
      {64, 64, 64, 1.0, 1.0, "dense 64^3"},
      {1, 1, 1, 1.0, 1.0, "1x1"},
      {37, 53, 29, 1.0, 1.0, "dense odd sizes (partial edge tiles)"},
      {320, 320, 320, 0.15, 0.9, "block-dense 320^3"},
      {200, 1000, 150, 0.3, 0.5, "block-dense, long inner dimension"},
      {300, 300, 300, 0.2, 0.2, "block-sparse tiles"},
      {500, 400, 300, 0.01, 1.0, "few dense tiles (empty C tiles dropped)"},
  };
  int ncases = quick ? 4 : (int)(sizeof cases / sizeof cases[0]);
  char nm[160];
  for (int c = 0; c < ncases; c++) {
    tilerap_csr *A = blockdense(cases[c].m, cases[c].k, cases[c].td, cases[c].fill, 0, &seed);
    tilerap_csr *B = blockdense(cases[c].k, cases[c].n, cases[c].td, cases[c].fill, 0, &seed);
    int tthr[] = {0, 1024, 4096};
    snprintf(nm, sizeof nm, "%s", cases[c].name);
    for (int i = 0; i < 3; i++) check_fp64(A, B, 192, tthr[i], nm);
    check_fp64(A, B, 0, 0, nm);   /* every C tile dense-accumulated */
    check_fp64(A, B, 256, 0, nm); /* every C tile sparse */
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  {
    tilerap_csr *A = ref_random(129, 200, 0.2, 3, &seed), *B = ref_random(200, 77, 0.6, 0, &seed);
    check_fp64(A, B, 24, 0, "random mixed densities");
    check_fp64(A, B, 24, 200, "random mixed densities");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  {
    /* tiles a quarter full (pairs of about 256 multiply-adds, either side:
     * mean pair above 150), and sparse tiles with a few full ones in A
     * against B tiles of 20 entries (pairs of about 300 multiply-adds,
     * mean pair below 150) */
    tilerap_csr *A = blockdense(160, 160, 0.6, 0.25, 0, &seed), *B = blockdense(160, 96, 0.6, 0.25, 0, &seed);
    check_auto(A, B, 256, "auto, dense pairs");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
    A = mixed_tiles(320, 320, 0.5, 0.15, 2, &seed);
    B = mixed_tiles(320, 240, 0.5, 0.0, 20, &seed);
    check_auto(A, B, 512, "auto, sparse pairs with some of 256..511 multiply-adds");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  {
    /* a large product with a few tensor-core pairs among many hit-only
     * chunks: about 2.1 M pairs give about 4000 chunks, more than two
     * waves of the tensor-core kernel on 132 SMs, so the plan runs its
     * chunks with tensor-core pairs and the others by separate kernels
     * (spgemm_cuda_step3_numeric.cu) */
    tilerap_csr *A = mixed_tiles(16000, 16000, 0.05, 0.01, 3, &seed), *B = mixed_tiles(16000, 15990, 0.05, 0.01, 3, &seed);
    tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B);
    int64_t all = 0, ntc = count_pairs(hA, hB, 512, &all);
    tap_ok(ntc > 0 && ntc * 1000 < all && all > 2000000, "split chunks: %lld tensor-core pairs of %lld", (long long)ntc,
           (long long)all);
    tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB);
    check_fp64(A, B, 192, 512, "split chunks: few tensor-core pairs among many sparse ones");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  check_ptap(TILERAP_P3D27, quick ? 12 : 24, 0);
  if (!quick) check_ptap(TILERAP_P3D27, 24, 128);

  tilerap_precision precs[] = {TILERAP_PRECISION_TF32, TILERAP_PRECISION_BF16, TILERAP_PRECISION_FP16};
  /* low precision on every tensor-core pair (the accuracy-study setting):
   * the small test products reuse tiles too little for the plan to take it */
  gpu_knob_set("TILERAP_CUDA_LOWPREC_REUSE", "0");
  for (int p = 0; p < 3; p++) {
    check_policy(precs[p], &seed);
    tilerap_csr *A = blockdense(160, 96, 0.5, 0.9, 0, &seed), *B = blockdense(96, 128, 0.5, 0.9, 0, &seed);
    check_lowprec(A, B, NULL, NULL, 0, precs[p], "block-dense");
    check_lowprec(A, B, NULL, NULL, 2000, precs[p], "block-dense (mixed paths)");
    /* the same plan given wide-range values: checked when they arrive */
    tilerap_csr *A2 = ref_copy(A), *B2 = ref_copy(B);
    for (int64_t q = 0; q < A2->nnz; q++) A2->val[q] = ldexp(A2->val[q], (int)(ref_rand01(&seed) * 121) - 60);
    for (int64_t q = 0; q < B2->nnz; q++) B2->val[q] = ldexp(B2->val[q], (int)(ref_rand01(&seed) * 121) - 60);
    check_lowprec(A, B, A2, B2, 0, precs[p], "block-dense, then wide values on the same plan");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B); tilerap_csr_destroy(&A2); tilerap_csr_destroy(&B2);
    /* values spanning 2^-60 .. 2^60 inside every tile; then 2^-12..2^12
     * (fits every format) with one tile of 2^-40..2^40 */
    A = blockdense(96, 96, 0.6, 1.0, 60, &seed);
    B = blockdense(96, 64, 0.6, 1.0, 60, &seed);
    check_lowprec(A, B, NULL, NULL, 0, precs[p], "wide range 2^+-60");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
    A = blockdense(96, 96, 0.6, 1.0, 12, &seed);
    B = blockdense(96, 64, 0.6, 1.0, 12, &seed);
    for (int64_t q = A->rowptr[0]; q < A->rowptr[16]; q++)
      if (A->colidx[q] < 16) A->val[q] = ldexp(A->val[q], (int)(ref_rand01(&seed) * 81) - 40);
    check_lowprec(A, B, NULL, NULL, 0, precs[p], "range 2^+-12, one tile 2^+-52");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
    /* tiny and huge tiles (scaling keeps them off zero and infinity), and
     * tiles of both (a range no format keeps) */
    A = blockdense(64, 64, 1.0, 1.0, 0, &seed);
    B = blockdense(64, 64, 1.0, 1.0, 0, &seed);
    for (int64_t q = 0; q < A->nnz; q++) A->val[q] = ldexp(A->val[q], (q / 300) % 2 ? -1000 : 900);
    for (int64_t q = 0; q < B->nnz; q++) B->val[q] = ldexp(B->val[q], -100);
    check_lowprec(A, B, NULL, NULL, 0, precs[p], "magnitudes 2^-1100 .. 2^800");
    /* inf and NaN in one tile each: they reach C as in fp64 */
    A->val[5] = INFINITY;
    B->val[300] = NAN;
    check_lowprec(A, B, NULL, NULL, 0, precs[p], "inf and NaN");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
    check_ptap_lowprec(quick ? 12 : 24, precs[p]);
  }
  return tap_done();
}
