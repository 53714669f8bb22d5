/* Low-precision operands of the tensor-core pairs (opt-in precisions
 * tf32, bf16, fp16).
 *
 * A tile that tensor-core pairs read is converted once per numeric run,
 * not once per pair: one warp gathers its 256 elements into the MMA
 * fragment layout, finds its largest and smallest non-zero magnitude,
 * scales it by a power of two (tile_lowprec.h), rounds and packs it
 * (tile_mma_fragments.cuh).  The pairs then load two 512-byte (tf32:
 * 1 KB) fragments instead of expanding two sparse fp64 tiles.
 *
 * Range check: a tile whose magnitudes span more than the format keeps
 * (some entry would flush to zero after scaling, or, for bf16/tf32, a
 * product of two such entries would fall below fp32's normal range), or
 * that holds a non-finite value, is marked TR_LP_UNFIT; every pair that
 * reads it is multiplied in fp64 (DMMA) and counted in the run's
 * fallbacks.  With that, each entry of C obeys the bound in tilerap.h.
 *
 * At plan creation the tiles are numbered (slots) from the pair lists,
 * and the plan declines the low precision (keeps fp64 DMMA) where its
 * pairs reuse a converted tile too little for the conversion to pay
 * (below, and BENCHMARKS.md section 5). */
#include "spgemm_cuda.cuh"
#include "tile_mma_fragments.cuh"
#include "tile_lowprec.h"
#include "tuning.h"
#include <float.h>
#include <string.h>

/* marks the tiles of the tensor-core pairs */
static __global__ void k_lp_mark(int64_t np, const int32_t *__restrict__ pair_a, const int32_t *__restrict__ pair_b,
                                 const int32_t *__restrict__ hloc, int32_t *amap, int32_t *bmap)
{
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= np || hloc[q] >= 0) return;
  amap[pair_a[q]] = 1;
  bmap[pair_b[q]] = 1;
}

/* marked tiles get slots (in any order: the slot order changes no
 * result, each pair's product is formed alone) */
static __global__ void k_lp_number(int64_t n, int32_t *map, int32_t *list, int32_t *count)
{
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= n) return;
  if (map[t]) {
    const int32_t s = atomicAdd(count, 1);
    map[t] = s;
    list[s] = (int32_t)t;
  } else {
    map[t] = -1;
  }
}

/* Largest magnitude range (binary exponents between a tile's largest and
 * smallest non-zero entry) a tile may span: fp16 keeps scaled entries
 * down to its smallest normal 2^-14 with the largest in [2^14, 2^15):
 * 28; bf16/tf32 keep 2^-126 with the largest in [2^30, 2^31), and the
 * product of two smallest entries must stay a normal fp32: 2 (30 - R) >=
 * -126, R <= 93. */
static __host__ __device__ constexpr int tr_lp_max_range(int prec) { return prec == TILERAP_PRECISION_FP16 ? 28 : 93; }

template <int PREC>
static __global__ void __launch_bounds__(256) k_lp_convert(tr_dview A, tr_dview B, int64_t na, int64_t nb,
                                                           const int32_t *__restrict__ alist,
                                                           const int32_t *__restrict__ blist, uint4 *afrag,
                                                           uint4 *bfrag, int32_t *aexp, int32_t *bexp,
                                                           unsigned long long *fallbacks)
{
  const int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  if (w == 0 && lane == 0) *fallbacks = 0; /* the numeric kernel, next on the stream, counts this run's */
  if (w >= na + nb) return;                /* warp-uniform */
  const bool isa = w < na;
  const int64_t slot = isa ? w : w - na;
  double v[8];
  double(*fa)[4] = reinterpret_cast<double(*)[4]>(v); /* A role: [2][4] */
  double(*fb)[2] = reinterpret_cast<double(*)[2]>(v); /* B role: [4][2] */
  if (isa) tr_gather_a<PREC>(A, alist[slot], g, t, fa);
  else tr_gather_b<PREC>(B, blist[slot], g, t, fb);
  double mx = 0.0, mn = DBL_MAX;
  bool bad = false;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const double x = fabs(v[i]);
    bad |= !(x <= DBL_MAX); /* inf or NaN: fp64 lets them propagate as IEEE says */
    mx = fmax(mx, x);
    if (x > 0) mn = fmin(mn, x);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    mn = fmin(mn, __shfl_xor_sync(0xffffffffu, mn, o));
  }
  bad = __any_sync(0xffffffffu, bad);
  int s = 0;
  if (!bad && mx > 0) {
    int emax, emin;
    frexp(mx, &emax);
    frexp(mn, &emin);
    if (emax - emin > tr_lp_max_range(PREC)) bad = true;
    else s = tr_lowprec_scale_exp(PREC, mx);
  }
  int32_t *ex = isa ? aexp : bexp;
  if (bad) { /* the fragments are never read */
    if (lane == 0) ex[slot] = TR_LP_UNFIT;
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; i++) v[i] = tr_round_prec(PREC, ldexp(v[i], s));
  uint4 p[2];
  if (isa) tr_frag_pack_a<PREC>(fa, p);
  else tr_frag_pack_b<PREC>(fb, p);
  constexpr int V = tr_frag_vecs<PREC>();
  uint4 *out = (isa ? afrag : bfrag) + slot * V * 32;
#pragma unroll
  for (int k = 0; k < V; k++) out[32 * k + lane] = p[k];
  if (lane == 0) ex[slot] = s;
}

void tr_cuda_lowprec_free(struct tr_cuda_spgemm *P)
{
  tr_group_free(&P->lp.frags, P->stream);
  tr_group_free(&P->lp.maps, P->stream);
  memset(&P->lp, 0, sizeof P->lp);
}

static int tr_frag_bytes(int prec) { return (prec == TILERAP_PRECISION_TF32 ? 2 : 1) * 32 * (int)sizeof(uint4); }

static int tr_lowprec_slots(struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                            int64_t np, const int32_t *pair_a, const int32_t *pair_b, const int32_t *hloc, int64_t ntc)
{
  cudaStream_t s = P->stream;
  int err = TILERAP_SUCCESS;
  {
  const int64_t ta = A->num_tiles, tb = B->num_tiles;
  /* a pair's tiles are at most ntc of each kind */
  const int64_t ca = ta < ntc ? ta : ntc, cb = tb < ntc ? tb : ntc;
  tr_group *g = &P->lp.maps;
  memset(g, 0, sizeof *g);
  const int i_am = tr_group_add(g, (size_t)ta * sizeof(int32_t)), i_bm = tr_group_add(g, (size_t)tb * sizeof(int32_t));
  const int i_al = tr_group_add(g, (size_t)ca * sizeof(int32_t)), i_bl = tr_group_add(g, (size_t)cb * sizeof(int32_t));
  const int i_ae = tr_group_add(g, (size_t)ca * sizeof(int32_t)), i_be = tr_group_add(g, (size_t)cb * sizeof(int32_t));
  const int i_fb = tr_group_add(g, sizeof(unsigned long long)), i_ct = tr_group_add(g, 2 * sizeof(int32_t));
  err = tr_group_alloc(g, NULL, s, "low-precision tile slots");
  if (err) { memset(g, 0, sizeof *g); return err; }
  P->lp.amap = (int32_t *)tr_group_at(g, i_am); P->lp.bmap = (int32_t *)tr_group_at(g, i_bm);
  P->lp.alist = (int32_t *)tr_group_at(g, i_al); P->lp.blist = (int32_t *)tr_group_at(g, i_bl);
  P->lp.aexp = (int32_t *)tr_group_at(g, i_ae); P->lp.bexp = (int32_t *)tr_group_at(g, i_be);
  P->lp.fallbacks = (unsigned long long *)tr_group_at(g, i_fb);
  int32_t *count = (int32_t *)tr_group_at(g, i_ct); /* na, nb while slots are numbered */
  TR_TRY_CU(cudaMemsetAsync(P->lp.amap, 0, (size_t)ta * sizeof(int32_t), s), "low-precision marks");
  TR_TRY_CU(cudaMemsetAsync(P->lp.bmap, 0, (size_t)tb * sizeof(int32_t), s), "low-precision marks");
  TR_TRY_CU(cudaMemsetAsync(count, 0, 2 * sizeof(int32_t), s), "low-precision counts");
  TR_TRY_CU(cudaMemsetAsync(P->lp.fallbacks, 0, sizeof(unsigned long long), s), "low-precision fallbacks");
  k_lp_mark<<<tr_blocks(np, 256), 256, 0, s>>>(np, pair_a, pair_b, hloc, P->lp.amap, P->lp.bmap);
  TR_TRY(tr_cuda_check_launch("low-precision marks"));
  k_lp_number<<<tr_blocks(ta, 256), 256, 0, s>>>(ta, P->lp.amap, P->lp.alist, count);
  k_lp_number<<<tr_blocks(tb, 256), 256, 0, s>>>(tb, P->lp.bmap, P->lp.blist, count + 1);
  TR_TRY(tr_cuda_check_launch("low-precision slots"));
  int32_t cnt[2] = {0, 0};
  TR_TRY(tr_readback(cnt, count, sizeof cnt, s, "low-precision tile counts"));
  P->lp.na = cnt[0];
  P->lp.nb = cnt[1];
  /* Converting a tile costs about what an fp64 pair spends gathering
   * one, and a pair's product is bound by its loads, not by DMMA: on the
   * H100 the low precisions ran 1.2-1.6x faster than fp64 at 11-19 pairs
   * per converted tile (block-dense products), 0.95-1.05x at 6, and
   * 0.66-0.92x at 1-2.6 (AMG levels, 125-point and elasticity operators).
   * Below TILERAP_CUDA_LOWPREC_REUSE (default 8) pairs per tile the plan
   * keeps fp64; 0 forces the low precision (accuracy studies). */
  if ((double)ntc < tr_knob(TR_KNOB_CUDA_LOWPREC_REUSE) * (double)(P->lp.na + P->lp.nb)) {
    tr_cuda_lowprec_free(P);
    P->precision = TILERAP_PRECISION_FP64;
    return TILERAP_SUCCESS;
  }
  tr_group *f = &P->lp.frags;
  memset(f, 0, sizeof *f);
  const size_t fbytes = (size_t)tr_frag_bytes(P->precision);
  const int i_af = tr_group_add(f, (size_t)P->lp.na * fbytes), i_bf = tr_group_add(f, (size_t)P->lp.nb * fbytes);
  err = tr_group_alloc(f, NULL, s, "low-precision fragments");
  if (err) { memset(f, 0, sizeof *f); return err; }
  P->lp.afrag = tr_group_at(f, i_af);
  P->lp.bfrag = tr_group_at(f, i_bf);
  return TILERAP_SUCCESS;
  }
cleanup:
  return err;
}

int tr_cuda_lowprec_plan(struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                         int64_t np, const int32_t *pair_a, const int32_t *pair_b, const int32_t *hloc, int64_t ntc)
{
  if (P->precision == TILERAP_PRECISION_FP64 || ntc <= 0) return TILERAP_SUCCESS;
  const int err = tr_lowprec_slots(P, A, B, np, pair_a, pair_b, hloc, ntc);
  if (err) tr_cuda_lowprec_free(P);
  return err;
}

int tr_cuda_lowprec_convert(const struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B)
{
  const int64_t n = P->lp.na + P->lp.nb;
  if (P->precision == TILERAP_PRECISION_FP64 || n == 0) return TILERAP_SUCCESS;
  const unsigned nblk = tr_blocks(32 * n, 256);
#define TR_CONVERT(PR)                                                                                            \
  k_lp_convert<PR><<<nblk, 256, 0, P->stream>>>(tr_view(A), tr_view(B), P->lp.na, P->lp.nb, P->lp.alist,         \
                                                P->lp.blist, (uint4 *)P->lp.afrag, (uint4 *)P->lp.bfrag,          \
                                                P->lp.aexp, P->lp.bexp, P->lp.fallbacks)
  switch (P->precision) {
  case TILERAP_PRECISION_TF32: TR_CONVERT(TILERAP_PRECISION_TF32); break;
  case TILERAP_PRECISION_BF16: TR_CONVERT(TILERAP_PRECISION_BF16); break;
  default: TR_CONVERT(TILERAP_PRECISION_FP16); break;
  }
#undef TR_CONVERT
  return tr_cuda_check_launch("low-precision operands");
}
