/* Step 3 (CUDA): numeric C = A*B on the plan's pairs.  No allocation, no
 * synchronisation: two launches on the plan's stream.
 *
 * A 16-lane group computes a C tile, lane r owning local row r: for each
 * pair it walks A's row r (entries (r,k), ascending k) and B's row k, so
 * every C entry is summed by one lane in the CPU engine's order (pairs,
 * then k) -- no atomics, deterministic.  Accumulators live in shared
 * memory: sparse tiles (<= dense_threshold entries) in compressed form,
 * the position of (r,c) being row_ptr[r] + popcount(mask[r] below c);
 * dense tiles in a 16x16 array (rows padded to 17 doubles against bank
 * conflicts) compressed through C's idx on write-back.  Lanes of a group
 * share the accumulator only when zeroing and writing back, separated by
 * explicit __syncwarp on the group's mask (no implicit warp-synchrony).
 *
 * Load balance: step 2 ordered the tiles by bin.  Heavy tiles (more than
 * TR_HEAVY_PAIRS pairs) get a block of 16 groups each summing every 16th
 * pair into its own accumulator, reduced in a fixed order; light tiles
 * get one group each, 8 per block, dense and light bins kept apart. */
#include "spgemm_cuda.cuh"

#define TR_PAD 17          /* padded dense row */
#define TR_ACC (16 * TR_PAD) /* doubles per accumulator */
#define TR_LIGHT_GROUPS 8
#define TR_HEAVY_GROUPS 16

/* Adds the products of pairs p0, p0+stride, .. < p1 into acc (row r). */
static __device__ __forceinline__ void tr_accumulate(const tr_dview &A, const tr_dview &B, const int32_t *__restrict__ pair_a,
                                                     const int32_t *__restrict__ pair_b, int32_t p0, int32_t p1, int stride,
                                                     int r, bool dense, unsigned cmask, int crp, double *acc)
{
  for (int32_t p = p0; p < p1; p += stride) {
    const int64_t a = pair_a[p], b = pair_b[p];
    unsigned abits = A.row_mask[16 * a + r];
    if (!abits) continue;
    const int64_t ab = A.tile_off[a] + A.row_ptr[16 * a + r];
    const int64_t boff = B.tile_off[b];
    const uint16_t *bm = B.row_mask + 16 * b;
    const uint8_t *brp = B.row_ptr + 16 * b;
    for (int j = 0; abits; j++) {
      const int k = __ffs(abits) - 1;
      abits &= abits - 1;
      const double x = A.val[ab + j];
      unsigned bbits = bm[k];
      const double *bv = B.val + boff + brp[k];
      for (int i = 0; bbits; i++) {
        const int c = __ffs(bbits) - 1;
        bbits &= bbits - 1;
        const int pos = dense ? r * TR_PAD + c : crp + __popc(cmask & ((1u << c) - 1u));
        acc[pos] = fma(x, bv[i], acc[pos]);
      }
    }
  }
}

static __global__ void __launch_bounds__(TR_GROUP *TR_LIGHT_GROUPS)
    k_numeric_light(tr_dview A, tr_dview B, double *__restrict__ cval, const int64_t *__restrict__ ctile_off,
                    const uint16_t *__restrict__ cmask, const uint8_t *__restrict__ crow_ptr,
                    const uint8_t *__restrict__ cidx, const int32_t *__restrict__ pair_ptr,
                    const int32_t *__restrict__ pair_a, const int32_t *__restrict__ pair_b,
                    const int32_t *__restrict__ order, int64_t ntiles, int dense_threshold)
{
  __shared__ double acc_all[TR_LIGHT_GROUPS][TR_ACC];
  const int g = threadIdx.x >> 4, r = threadIdx.x & 15;
  const int64_t gi = (int64_t)blockIdx.x * TR_LIGHT_GROUPS + g;
  if (gi >= ntiles) return; /* the whole group leaves together */
  const unsigned gmask = 0xffffu << (threadIdx.x & 16);
  double *acc = acc_all[g];
  const int64_t t = order[gi];
  const int64_t off = ctile_off[t];
  const int len = (int)(ctile_off[t + 1] - off);
  const bool dense = len > dense_threshold;
  const int zlen = dense ? TR_ACC : len;
  for (int e = r; e < zlen; e += 16) acc[e] = 0.0;
  __syncwarp(gmask);
  tr_accumulate(A, B, pair_a, pair_b, pair_ptr[t], pair_ptr[t + 1], 1, r, dense, cmask[16 * t + r],
                crow_ptr[16 * t + r], acc);
  __syncwarp(gmask);
  for (int e = r; e < len; e += 16) {
    int pos = e;
    if (dense) { int x = cidx[off + e]; pos = (x >> 4) * TR_PAD + (x & 15); }
    cval[off + e] = acc[pos];
  }
}

static __global__ void __launch_bounds__(TR_GROUP *TR_HEAVY_GROUPS)
    k_numeric_heavy(tr_dview A, tr_dview B, double *__restrict__ cval, const int64_t *__restrict__ ctile_off,
                    const uint16_t *__restrict__ cmask, const uint8_t *__restrict__ crow_ptr,
                    const uint8_t *__restrict__ cidx, const int32_t *__restrict__ pair_ptr,
                    const int32_t *__restrict__ pair_a, const int32_t *__restrict__ pair_b,
                    const int32_t *__restrict__ order, int dense_threshold)
{
  __shared__ double acc_all[TR_HEAVY_GROUPS][TR_ACC];
  const int g = threadIdx.x >> 4, r = threadIdx.x & 15;
  const int64_t t = order[blockIdx.x];
  const int64_t off = ctile_off[t];
  const int len = (int)(ctile_off[t + 1] - off);
  const bool dense = len > dense_threshold;
  const int zlen = dense ? TR_ACC : len;
  double *acc = acc_all[g];
  for (int e = r; e < zlen; e += 16) acc[e] = 0.0;
  __syncthreads();
  tr_accumulate(A, B, pair_a, pair_b, pair_ptr[t] + g, pair_ptr[t + 1], TR_HEAVY_GROUPS, r, dense, cmask[16 * t + r],
                crow_ptr[16 * t + r], acc);
  __syncthreads();
  for (int e = threadIdx.x; e < len; e += TR_GROUP * TR_HEAVY_GROUPS) {
    int pos = e;
    if (dense) { int x = cidx[off + e]; pos = (x >> 4) * TR_PAD + (x & 15); }
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < TR_HEAVY_GROUPS; j++) s += acc_all[j][pos]; /* fixed order: deterministic */
    cval[off + e] = s;
  }
}

int tr_cuda_step3_numeric(const struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                          tilerap_tile_matrix *C)
{
  const int64_t nheavy = P->nheavy, nlight = P->c_tiles - P->nheavy;
  cudaStream_t s = P->stream;
  int err;
  if (nheavy > 0) {
    k_numeric_heavy<<<(unsigned)nheavy, TR_GROUP * TR_HEAVY_GROUPS, 0, s>>>(
        tr_view(A), tr_view(B), C->val, C->tile_off, C->row_mask, C->row_ptr, C->idx, P->pair_ptr, P->pair_a,
        P->pair_b, P->order, P->dense_threshold);
    if ((err = tr_cuda_check_launch("numeric (heavy tiles)"))) return err;
  }
  if (nlight > 0) {
    k_numeric_light<<<tr_blocks(nlight, TR_LIGHT_GROUPS), TR_GROUP * TR_LIGHT_GROUPS, 0, s>>>(
        tr_view(A), tr_view(B), C->val, C->tile_off, C->row_mask, C->row_ptr, C->idx, P->pair_ptr, P->pair_a,
        P->pair_b, P->order + nheavy, nlight, P->dense_threshold);
    if ((err = tr_cuda_check_launch("numeric (light tiles)"))) return err;
  }
  return TILERAP_SUCCESS;
}
