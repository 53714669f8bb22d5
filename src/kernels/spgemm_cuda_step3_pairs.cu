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

static __global__ void __launch_bounds__(TR_PAIRS_THREADS)
    k_numeric_pairs(const int32_t *__restrict__ d_ncand, const int32_t *__restrict__ cand_ptr,
                    const int32_t *__restrict__ cand_tile, const int32_t *__restrict__ pair_a,
                    const int32_t *__restrict__ pair_b, tr_dview A, tr_dview B, double *__restrict__ cval,
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
  const int32_t p1 = cand_ptr[t + 1];
  for (int32_t p = cand_ptr[t]; p < p1; p++) {
    const int64_t a = pair_a[p], b = pair_b[p];
    const int64_t ao = A.tile_off[a];
    const int e0 = A.row_ptr[16 * a + r];
    const int e1 = r < 15 ? A.row_ptr[16 * a + r + 1] : (int)(A.tile_off[a + 1] - ao);
    if (e0 >= e1) continue;
    const int64_t bo = B.tile_off[b];
    const int blen = (int)(B.tile_off[b + 1] - bo);
    for (int e = e0; e < e1; e++) {
      const int k = aidx[ao + e] & 15;
      const double x = aval[ao + e];
      const int f1 = k < 15 ? B.row_ptr[16 * b + k + 1] : blen;
      for (int f = B.row_ptr[16 * b + k]; f < f1; f++) {
        const int c = bidx[bo + f] & 15;
        acc[c] = __dadd_rn(acc[c], __dmul_rn(x, bval[bo + f]));
      }
    }
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
      P->d_ncand, P->cand_ptr, P->cand_tile, P->pair_a, P->pair_b, tr_view(A), tr_view(B), C->val, C->tile_off,
      C->row_mask, C->row_ptr);
  return tr_cuda_check_launch("numeric on the pairs");
}
