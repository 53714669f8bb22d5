/* Galerkin product, first half (CUDA): AP = A * P by scatter, for the
 * products whose AP needs no planned numeric phase (the first values of
 * every Galerkin plan, all values of small ones: ptap_plan.c).
 *
 * A planned product's first run walks its pair lists one C tile per
 * 16-lane group, each lane summing its row alone: long serial loops on
 * AP's 10-odd pairs per tile (561 us at level 0 of a 101^3 7-point
 * hierarchy on the H100).  Here one warp takes an A tile (K, L): its
 * lanes take the (P tile (L, J), entry (r, k)) items, the AP tile (K, J)
 * of each P tile is found once (a binary search in AP's tile row K, one
 * lane each), and x * P(L, J)(k, :) goes into AP(K, J) row r with fp64
 * global atomics (AP zeroed first).  Sums are exact up to rounding
 * order, like the hit kernel's. */
#include "spgemm_cuda.cuh"

#define TR_SCATTER_AP_THREADS 256

static __global__ void __launch_bounds__(TR_SCATTER_AP_THREADS)
    k_ap_scatter(int64_t a_tiles, const int32_t *__restrict__ a_row, tr_dview A, tr_dview P, tr_dview AP,
                 double *__restrict__ apval)
{
  const int lane = threadIdx.x & 31;
  const int64_t a = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  if (a >= a_tiles) return; /* warp-uniform */
  const int32_t K = a_row[a], L = A.tile_col[a];
  const int64_t q0 = P.tile_ptr[L], q1 = P.tile_ptr[L + 1];
  if (q0 == q1) return;
  const int64_t ao = A.tile_off[a];
  const int ne = (int)(A.tile_off[a + 1] - ao), nq = (int)(q1 - q0);
  /* AP tile of each of the first 32 P tiles of row L, one per lane */
  int64_t myt = -1;
  if (lane < nq) myt = tr_find_tile(AP.tile_ptr, AP.tile_col, K, P.tile_col[q0 + lane]);
  const int items = ne * nq;
  for (int base = 0; base < items; base += 32) { /* same trip count in every lane */
    const int it = base + lane;
    const bool on = it < items;
    const int pl = on ? it / ne : 0;
    int64_t t = __shfl_sync(0xffffffffu, myt, pl & 31);
    if (!on) continue;
    const int e = it - pl * ne;
    const int64_t q = q0 + pl;
    if (pl >= 32) t = tr_find_tile(AP.tile_ptr, AP.tile_col, K, P.tile_col[q]);
    const unsigned id = A.idx[ao + e];
    const int r = (int)(id >> 4), k = (int)(id & 15u);
    unsigned pm = P.row_mask[16 * q + k];
    if (!pm || t < 0) continue; /* t < 0 only with pm == 0: AP holds every structural product */
    const double x = A.val[ao + e];
    const double *pv = P.val + P.tile_off[q] + P.row_ptr[16 * q + k];
    const unsigned am = AP.row_mask[16 * t + r];
    double *out = apval + AP.tile_off[t] + AP.row_ptr[16 * t + r];
    for (int j = 0; pm; j++) {
      const int c = __ffs(pm) - 1;
      pm &= pm - 1;
      atomicAdd(out + __popc(am & ((1u << c) - 1u)), x * pv[j]);
    }
  }
}

int tr_cuda_scatter_ap_launch(int64_t a_tiles, const int32_t *a_row, const tilerap_tile_matrix *A,
                              const tilerap_tile_matrix *P, tilerap_tile_matrix *AP, cudaStream_t s)
{
  if (AP->nnz > 0) TR_RET_CU(cudaMemsetAsync(AP->val, 0, (size_t)AP->nnz * sizeof(double), s), "zeroing AP");
  if (a_tiles > 0 && AP->nnz > 0) {
    k_ap_scatter<<<tr_blocks(32 * a_tiles, TR_SCATTER_AP_THREADS), TR_SCATTER_AP_THREADS, 0, s>>>(
        a_tiles, a_row, tr_view(A), tr_view(P), tr_view(AP), AP->val);
    TR_RET(tr_cuda_check_launch("AP scatter"));
  }
  return TILERAP_SUCCESS;
}
