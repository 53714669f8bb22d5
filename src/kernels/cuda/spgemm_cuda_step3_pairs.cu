/* Step 3 (CUDA) on the pair lists: numeric C = A*B without hit records.
 *
 * The hit records (step 2) make numeric re-runs fast, but writing them
 * costs more than the run they serve: on the H100, a BoomerAMG setup's
 * hit fills took 9.7 ms of GPU time against 1.8 ms for all its numeric
 * runs (ncu, 3D 7-point, 10^6 unknowns).  A product computed once (the
 * first run of a plan, every run of a one-shot product) therefore walks
 * the pairs: one 16-lane group per candidate C tile, lane r owning row r
 * and its 16 sums in shared memory; for every pair, each entry (r,k) of
 * A's row r times B's row k.  No atomics: a lane alone writes its row.
 * The products of an entry are added in the CPU engine's order (pairs by
 * ascending k, A's entries in storage order) with separate rounding of
 * product and sum, so the result equals the CPU engine's bit for bit.
 * The plan's second run makes the hits and uses them from then on. */
#include "spgemm_cuda.cuh"

#define TR_PAIRS_THREADS 128

/* What lane r needs of pair (a, b) before it sums: its row's entries in
 * A's tile [ao + e0, ao + e1), B's tile b at bo with blen entries and
 * its 16 row pointers (in registers: an A entry's B row then costs no
 * load of its own). */
typedef struct {
  int64_t ao, bo;
  int e0, e1, blen;
  uint32_t brp[4];
} tr_pair_at;
static __device__ __forceinline__ tr_pair_at tr_pair_load(const tr_dview &A, const tr_dview &B, bool bvec, int64_t a,
                                                          int64_t b, int r)
{
  tr_pair_at x;
  x.ao = A.tile_off[a];
  x.e0 = A.row_ptr[16 * a + r];
  x.e1 = r < 15 ? A.row_ptr[16 * a + r + 1] : (int)(A.tile_off[a + 1] - x.ao);
  x.bo = B.tile_off[b];
  x.blen = (int)(B.tile_off[b + 1] - x.bo);
  tr_tile_rowptr(B.row_ptr, b, bvec, x.brp);
  return x;
}

static __global__ void __launch_bounds__(TR_PAIRS_THREADS)
    k_numeric_pairs(const int32_t *__restrict__ d_ncand, const int32_t *__restrict__ cand_ptr,
                    const int32_t *__restrict__ cand_tile, const int32_t *__restrict__ pair_a,
                    const int32_t *__restrict__ pair_b, tr_dview A, tr_dview B, bool bvec, double *__restrict__ cval,
                    const int64_t *__restrict__ ctile_off, const uint16_t *__restrict__ cmask,
                    const uint8_t *__restrict__ crow_ptr)
{
  __shared__ double sacc[TR_PAIRS_THREADS * 17]; /* a row of 16 per lane, padded against bank conflicts */
  const int r = threadIdx.x & 15;
  const int64_t t = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  if (t >= *d_ncand) return;
  const int32_t u = cand_tile[t];
  if (u < 0) return; /* dropped candidate: no C tile */
  double *acc = sacc + 17 * threadIdx.x;
#pragma unroll
  for (int c = 0; c < 16; c++) acc[c] = 0.0;
  const double *__restrict__ aval = A.val;
  const double *__restrict__ bval = B.val;
  const uint8_t *__restrict__ aidx = A.idx;
  const uint8_t *__restrict__ bidx = B.idx;
  /* A pair's sums wait on a chain of loads (tile numbers, then offsets and
   * row pointers, then entries): the next pair's tile numbers and offsets
   * are loaded while this pair is summed, so each pair waits on one link
   * of the chain instead of three.  The sums keep their order. */
  const int32_t p0 = cand_ptr[t], p1 = cand_ptr[t + 1];
  int64_t an = 0, bn = 0;
  tr_pair_at cur = {0, 0, 0, 0, 0, {0, 0, 0, 0}};
  if (p0 < p1) {
    if (p0 + 1 < p1) { an = pair_a[p0 + 1]; bn = pair_b[p0 + 1]; }
    cur = tr_pair_load(A, B, bvec, pair_a[p0], pair_b[p0], r);
  }
  for (int32_t p = p0; p < p1; p++) {
    /* next pair: offsets of pair p+1, tile numbers of pair p+2 */
    int64_t an2 = 0, bn2 = 0;
    tr_pair_at nxt = {0, 0, 0, 0, 0, {0, 0, 0, 0}};
    if (p + 1 < p1) {
      if (p + 2 < p1) { an2 = pair_a[p + 2]; bn2 = pair_b[p + 2]; }
      nxt = tr_pair_load(A, B, bvec, an, bn, r);
    }
    const int64_t ao = cur.ao, bo = cur.bo;
    const int e0 = cur.e0, e1 = cur.e1, blen = cur.blen;
    for (int e = e0; e < e1; e++) {
      const int k = aidx[ao + e] & 15;
      const double x = aval[ao + e];
      const int f1 = k < 15 ? tr_pick8(cur.brp, k + 1) : blen;
      for (int f = tr_pick8(cur.brp, k); f < f1; f++) {
        const int c = bidx[bo + f] & 15;
        acc[c] = __dadd_rn(acc[c], __dmul_rn(x, bval[bo + f]));
      }
    }
    cur = nxt;
    an = an2; bn = bn2;
  }
  unsigned m = cmask[16 * (int64_t)u + r];
  double *out = cval + ctile_off[u] + crow_ptr[16 * (int64_t)u + r];
  for (int j = 0; m; j++) {
    const int c = __ffs(m) - 1;
    m &= m - 1;
    out[j] = acc[c];
  }
}

int tr_cuda_step3_pairs(const struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                        tilerap_tile_matrix *C)
{
  if (P->c_tiles <= 0 || P->ncap <= 0) return TILERAP_SUCCESS;
  k_numeric_pairs<<<tr_blocks(16 * P->ncap, TR_PAIRS_THREADS), TR_PAIRS_THREADS, 0, P->stream>>>(
      P->d_ncand, P->cand_ptr, P->cand_tile, P->pair_a, P->pair_b, tr_view(A), tr_view(B), tr_vec_ok(B), C->val, C->tile_off,
      C->row_mask, C->row_ptr);
  return tr_cuda_check_launch("numeric on the pairs");
}
