/* Tile -> CSR on the device (row pointers, columns, values), and the
 * values-only moves in both directions used by numeric re-runs.
 *
 * Everything comes from the tile matrix alone: entries of tile row I start
 * at tile_off[tile_ptr[I]] in both formats, and inside it CSR row 16I+r
 * starts after the rows above it (a shuffle scan of the 16 row lengths,
 * each a sum of mask popcounts).  Lane r of a warp then walks the tiles of
 * its tile row: row r's run in each tile is contiguous in both formats.
 * So no permutation array is stored and the value moves allocate nothing
 * (host arrays go through the matrix's staging buffer, T->internal).
 *
 * The structural conversion with the diagonal first, and any structural
 * conversion where a tile row holds more than TR_WALK_MAX_TILES tiles,
 * instead follows the tiles, not the rows, so that a
 * tile row of many tiles (a dense row) is not one lane's walk: the 16 row
 * counts of every tile are scanned per row slot across all tiles
 * (lr-major), which gives each row's start and each tile row's part of
 * it; then one thread per tile places its at most 256 entries, moving a
 * row's diagonal to the front and the entries before it up by one. */
#include "spgemm_cuda.cuh"
#include "tuning.h"
#include <cub/cub.cuh>
#include <limits.h>

/* dir < 0: tile -> CSR (rp64/rp32/col/cval written when non-NULL);
 * dir > 0: CSR values cval -> tile values. */
static __global__ void k_tile_csr_walk(int32_t m, int32_t TR, int64_t nnz, tr_dview T, double *tval, double *cval,
                                       int dir, int64_t *rp64, int32_t *rp32, int32_t *col)
{
  const int lane = threadIdx.x & 31;
  const int32_t I = (int32_t)((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5);
  if (I == 0 && lane == 0) {
    if (rp64) rp64[m] = nnz;
    if (rp32) rp32[m] = (int32_t)nnz;
  }
  if (I >= TR) return; /* whole warp */
  const int32_t row = 16 * I + lane;
  const bool active = lane < 16 && row < m;
  const int64_t t0 = T.tile_ptr[I], t1 = T.tile_ptr[I + 1];
  int len = 0; /* a row of a tile row has at most 16 * tile_cols entries: fits an int */
  if (active)
    for (int64_t t = t0; t < t1; t++) len += __popc(T.row_mask[16 * t + lane]);
  int incl = len;
  for (int d = 1; d < 16; d <<= 1) {
    int y = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += y;
  }
  if (!active) return;
  int64_t k = T.tile_off[t0] + (incl - len);
  if (rp64) rp64[row] = k;
  if (rp32) rp32[row] = (int32_t)k;
  if (!cval && !col) return;
  for (int64_t t = t0; t < t1; t++) {
    unsigned mask = T.row_mask[16 * t + lane];
    if (!mask) continue;
    const int64_t q = T.tile_off[t] + T.row_ptr[16 * t + lane];
    const int nq = __popc(mask);
    if (cval) {
      if (dir > 0)
        for (int e = 0; e < nq; e++) tval[q + e] = cval[k + e];
      else
        for (int e = 0; e < nq; e++) cval[k + e] = tval[q + e];
    }
    if (col) {
      const int32_t c0 = 16 * T.tile_col[t];
      for (int e = 0; mask; e++, mask &= mask - 1) col[k + e] = c0 + __ffs(mask) - 1;
    }
    k += nq;
  }
}

static int tr_walk(const tilerap_tile_matrix *T, double *cval, int dir, int64_t *rp64, int32_t *rp32, int32_t *col)
{
  const int32_t TR = T->tile_rows;
  k_tile_csr_walk<<<tr_blocks((int64_t)(TR > 0 ? TR : 1) * 32, 256), 256, 0, cudaStreamLegacy>>>(
      T->m, TR, T->nnz, tr_view(T), T->val, cval, dir, rp64, rp32, col);
  return tr_cuda_check_launch("tile/CSR walk");
}

/* Sorted CSR of a device tile matrix into device arrays (any may be NULL). */
int tr_cuda_tile_csr_walk(const tilerap_tile_matrix *T, double *cval, int32_t *rp32, int32_t *col)
{
  return tr_walk(T, cval, -1, NULL, rp32, col);
}

/* cnt[lr * nt + t] = entries of row lr in tile t (nt = tiles) */
static __global__ void k_tile_row_counts(int64_t nt, const uint16_t *__restrict__ row_mask, int64_t *cnt)
{
  const int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (x >= 16 * nt) return;
  const int64_t t = x >> 4, lr = x & 15;
  cnt[lr * nt + t] = __popc(row_mask[x]);
}

/* row pointers from S, the exclusive scan of cnt: row 16I+lr starts
 * after the rows above it in tile row I */
template <typename RP>
static __global__ void k_csr_rowptr(int32_t m, int64_t nt, int64_t nnz, tr_dview T, const int64_t *__restrict__ S,
                                    RP *rp, int32_t *rp32)
{
  const int32_t r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r > m) return;
  int64_t k = nnz;
  if (r < m) {
    const int32_t I = r >> 4, lr = r & 15;
    const int64_t t0 = T.tile_ptr[I], t1 = T.tile_ptr[I + 1];
    k = T.tile_off[t0];
    for (int j = 0; j < lr; j++) k += S[j * nt + t1] - S[j * nt + t0];
  }
  rp[r] = (RP)k;
  if (rp32) rp32[r] = (int32_t)k;
}

/* one thread per tile: its entries to their CSR positions */
static __global__ void k_tile_entries_to_csr(int32_t TR, int64_t nt, tr_dview T, const int64_t *__restrict__ S,
                                             const int64_t *__restrict__ rp, int diag_first, int32_t *col, double *cval)
{
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= nt) return;
  int32_t lo = 0, hi = TR - 1; /* tile row: the last one starting at or before t */
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) >> 1;
    if (T.tile_ptr[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  const int32_t I = lo;
  const int64_t t0 = T.tile_ptr[I], q0 = T.tile_off[t], q1 = T.tile_off[t + 1];
  const int32_t c0 = 16 * T.tile_col[t];
  for (int64_t q = q0; q < q1; q++) {
    const int lr = T.idx[q] >> 4, lc = T.idx[q] & 15;
    const int32_t r = 16 * I + lr, c = c0 + lc;
    int64_t k = rp[r] + (S[lr * nt + t] - S[lr * nt + t0]) + (q - q0 - T.row_ptr[16 * t + lr]);
    if (diag_first) k = c == r ? rp[r] : k + (c < r); /* the diagonal first, the entries before it up one */
    if (col) col[k] = c;
    if (cval) cval[k] = T.val[q];
  }
}

/* Structure (and values) of T as CSR in device arrays; rp64 or a
 * temporary holds the row pointers the placement reads. */
static int tr_tiles_to_csr(const tilerap_tile_matrix *T, int64_t *rp64, int32_t *rp32, int32_t *col, double *cval,
                           int diag_first)
{
  const cudaStream_t s = cudaStreamLegacy;
  const int64_t nt = T->num_tiles;
  int64_t *cnt = NULL, *S = NULL, *rp = rp64;
  void *tmp = NULL;
  size_t bytes = 0;
  int err = TILERAP_SUCCESS;
  TR_TRY(tr_dalloc((void **)&cnt, (16 * (size_t)nt + 1) * sizeof(int64_t), s, "tile row counts"));
  TR_TRY(tr_dalloc((void **)&S, (16 * (size_t)nt + 1) * sizeof(int64_t), s, "tile row counts"));
  if (!rp) TR_TRY(tr_dalloc((void **)&rp, ((size_t)T->m + 1) * sizeof(int64_t), s, "CSR row pointers"));
  TR_TRY_CU(cudaMemsetAsync(cnt + 16 * nt, 0, sizeof(int64_t), s), "tile row counts");
  if (nt > 0) {
    k_tile_row_counts<<<tr_blocks(16 * nt, 256), 256, 0, s>>>(nt, T->row_mask, cnt);
    TR_TRY(tr_cuda_check_launch("tile row counts"));
  }
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(NULL, bytes, cnt, S, 16 * nt + 1, s), "tile row scan");
  TR_TRY(tr_dalloc(&tmp, bytes, s, "scan storage"));
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(tmp, bytes, cnt, S, 16 * nt + 1, s), "tile row scan");
  k_csr_rowptr<int64_t><<<tr_blocks((int64_t)T->m + 1, 256), 256, 0, s>>>(T->m, nt, T->nnz, tr_view(T), S, rp, rp32);
  TR_TRY(tr_cuda_check_launch("CSR row pointers"));
  if (nt > 0 && (col || cval)) {
    k_tile_entries_to_csr<<<tr_blocks(nt, 128), 128, 0, s>>>(T->tile_rows, nt, tr_view(T), S, rp, diag_first, col, cval);
    TR_TRY(tr_cuda_check_launch("tile entries to CSR"));
  }
cleanup:
  tr_dfree(cnt, s);
  tr_dfree(S, s);
  tr_dfree(tmp, s);
  if (rp != rp64) tr_dfree(rp, s);
  return err;
}

/* Lowest row without a stored diagonal entry (m if none): row i needs tile
 * (I, I) in tile row I and bit i%16 in that tile's row mask i%16. */
static __global__ void k_missing_diagonal(int32_t m, tr_dview T, int *first_missing)
{
  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const int32_t I = i >> 4;
  /* tile columns ascend within a tile row */
  const int64_t lo = tr_lower_bound(T.tile_col, T.tile_ptr[I], T.tile_ptr[I + 1], I);
  const bool found = lo < T.tile_ptr[I + 1] && T.tile_col[lo] == I && ((T.row_mask[16 * lo + (i & 15)] >> (i & 15)) & 1u);
  if (!found) atomicMin(first_missing, i);
}

/* T is square (checked by the caller, tile_convert_device.c). */
static int tr_check_diagonal(const tilerap_tile_matrix *T)
{
  if (T->m == 0) return TILERAP_SUCCESS;
  const cudaStream_t s = cudaStreamLegacy;
  int *d = NULL, h = T->m;
  int err = tr_dalloc((void **)&d, sizeof(int), s, "diagonal check");
  if (err) return err;
  cudaError_t ce = cudaMemcpyAsync(d, &h, sizeof h, cudaMemcpyHostToDevice, s);
  if (ce == cudaSuccess) {
    k_missing_diagonal<<<tr_blocks(T->m, 256), 256, 0, s>>>(T->m, tr_view(T), d);
    ce = cudaGetLastError();
  }
  if (ce == cudaSuccess) ce = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
  tr_dfree(d, s);
  if (ce != cudaSuccess) return tr_cuda_error(ce, "diagonal check");
  if (h < T->m)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "diagonal-first CSR: row %d has no stored diagonal entry", h);
  return TILERAP_SUCCESS;
}

/* T's staging buffer of nnz values (allocated on first use). */
static int tr_staging(const tilerap_tile_matrix *T, double **stage)
{
  tilerap_tile_matrix *W = (tilerap_tile_matrix *)T; /* the engine-private cache is not part of the value */
  if (!W->internal && T->nnz > 0) {
    int err = tr_dalloc(&W->internal, (size_t)T->nnz * sizeof(double), cudaStreamLegacy, "CSR value staging");
    if (err) return err;
  }
  *stage = (double *)W->internal;
  return TILERAP_SUCCESS;
}

/* Most tiles in one tile row (one read-back): the walk is a lane's loop
 * over its tile row's tiles, fastest where they are few (grids: 0.17 against
 * 0.54 ms for 1M rows on the H200), the placement where one tile row holds
 * thousands (a dense row). */
#define TR_WALK_MAX_TILES 64
static __global__ void k_max_tiles(int32_t TR, const int64_t *__restrict__ tile_ptr, unsigned long long *mx)
{
  const int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t k = I < TR ? tile_ptr[I + 1] - tile_ptr[I] : 0;
  tr_warp_atomic_max(k > (int64_t)UINT_MAX ? UINT_MAX : (unsigned)k, mx);
}

static int tr_walk_suits(const tilerap_tile_matrix *T, int *suits)
{
  *suits = 1;
  if (T->tile_rows <= 0 || T->num_tiles <= TR_WALK_MAX_TILES) return TILERAP_SUCCESS;
  const cudaStream_t s = cudaStreamLegacy;
  unsigned long long *d = NULL, h = 0;
  int err = tr_dalloc((void **)&d, sizeof *d, s, "tiles per tile row");
  if (err) return err;
  cudaError_t ce = cudaMemsetAsync(d, 0, sizeof *d, s);
  if (ce == cudaSuccess) {
    k_max_tiles<<<tr_blocks(T->tile_rows, 256), 256, 0, s>>>(T->tile_rows, T->tile_ptr, d);
    ce = cudaGetLastError();
  }
  if (ce == cudaSuccess) ce = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
  tr_dfree(d, s);
  if (ce != cudaSuccess) return tr_cuda_error(ce, "tiles per tile row");
  *suits = h <= TR_WALK_MAX_TILES;
  return TILERAP_SUCCESS;
}

/* the walk (plain CSR, balanced tile rows) or the placement */
static int tr_structure_to_csr(const tilerap_tile_matrix *T, int64_t *rp64, int32_t *rp32, int32_t *col, double *cval,
                               int diag_first)
{
  const int choice = tr_knob_int(TR_KNOB_CONVERT); /* 0 auto, 1 merge (walk), 2 sort (placement) */
  int walk = 0;
  if (!diag_first && choice != 2) {
    walk = 1;
    const int err = choice == 1 ? TILERAP_SUCCESS : tr_walk_suits(T, &walk);
    if (err) return err;
  }
  return walk ? tr_walk(T, cval, -1, rp64, rp32, col) : tr_tiles_to_csr(T, rp64, rp32, col, cval, diag_first);
}

extern "C" int tr_cuda_tile_to_csr(const tilerap_tile_matrix *T, int64_t *rp64, int32_t *rp32, int32_t *col,
                                   double *val, tilerap_memtype csr_mem, int diag_first)
{
  int err = TILERAP_SUCCESS;
  if (diag_first && (err = tr_check_diagonal(T))) return err; /* before any output */
  if (csr_mem == TILERAP_MEM_DEVICE) return tr_structure_to_csr(T, rp64, rp32, col, val, diag_first);
  const cudaStream_t s = cudaStreamLegacy;
  const size_t nrp = (size_t)T->m + 1, nz = (size_t)T->nnz;
  int64_t *d64 = NULL;
  int32_t *d32 = NULL, *dcol = NULL;
  double *dval = NULL;
  /* the staging buffer is taken even without val: the values-only call follows */
  if ((err = tr_staging(T, &dval))) return err;
  if (!val) dval = NULL;
  if ((rp64 && (err = tr_dalloc((void **)&d64, nrp * sizeof(int64_t), s, "CSR row pointers"))) ||
      (rp32 && (err = tr_dalloc((void **)&d32, nrp * sizeof(int32_t), s, "CSR row pointers"))) ||
      (col && (err = tr_dalloc((void **)&dcol, nz * sizeof(int32_t), s, "CSR column indices"))))
    goto done;
  if ((err = tr_structure_to_csr(T, d64, d32, dcol, dval, diag_first))) goto done;
  /* only once the walk is done: no output is half-written on error */
  if ((err = tr_cuda_wait("tile to CSR"))) goto done;
  if (rp64) err = tr_d2h(rp64, d64, nrp * sizeof(int64_t), s, "CSR download");
  if (rp32 && !err) err = tr_d2h(rp32, d32, nrp * sizeof(int32_t), s, "CSR download");
  if (col && nz && !err) err = tr_d2h(col, dcol, nz * sizeof(int32_t), s, "CSR download");
  if (val && nz && !err) err = tr_d2h(val, dval, nz * sizeof(double), s, "CSR download");
done:
  tr_dfree(d64, s);
  tr_dfree(d32, s);
  tr_dfree(dcol, s);
  return err;
}

extern "C" int tr_cuda_tile_values_to_csr(const tilerap_tile_matrix *T, double *val, tilerap_memtype val_mem)
{
  if (T->nnz == 0) return TILERAP_SUCCESS;
  if (val_mem == TILERAP_MEM_DEVICE) return tr_walk(T, val, -1, NULL, NULL, NULL);
  double *stage = NULL;
  int err = tr_staging(T, &stage);
  if (!err) err = tr_walk(T, stage, -1, NULL, NULL, NULL);
  if (err) return err;
  return tr_d2h(val, stage, (size_t)T->nnz * sizeof(double), cudaStreamLegacy, "CSR value download");
}

extern "C" int tr_cuda_tile_values_from_csr(tilerap_tile_matrix *T, const double *val, tilerap_memtype val_mem)
{
  if (T->nnz == 0) return TILERAP_SUCCESS;
  if (val_mem == TILERAP_MEM_DEVICE) return tr_walk(T, (double *)val, +1, NULL, NULL, NULL);
  double *stage = NULL;
  int err = tr_staging(T, &stage);
  if (err) return err;
  /* stream-ordered after earlier walks that read the buffer */
  const size_t bytes = (size_t)T->nnz * sizeof(double);
  if ((err = tr_h2d(stage, val, bytes, cudaStreamLegacy, "CSR value upload"))) return err;
  if ((err = tr_walk(T, stage, +1, NULL, NULL, NULL))) return err;
  /* the caller may reuse val on return: the ring has read it already; a
   * direct copy from pinned memory may still be reading it */
  return tr_stage_active(bytes) ? TILERAP_SUCCESS : tr_cuda_wait("CSR value upload");
}
