/* CSR -> tile on the device (structure and values).
 *
 * The CSR comes from host arrays (uploaded) or device arrays (used in
 * place).  Three kernels, each on the CSR as it stands:
 *   validate  one thread per row: row pointers monotone, columns in range
 *             and strictly increasing (first offending row by atomicMin; the
 *             host rebuilds the host conversion's message from that row);
 *   count     one warp per tile row: lanes 0..15 hold a cursor on their row;
 *             the warp minimum of the cursors' tile columns is the next
 *             tile, and the lanes on it step past its entries.  Rows are
 *             sorted, so this merge visits each tile of the tile row once,
 *             ascending;
 *   fill      the same merge after a scan of the counts gave tile_ptr, now
 *             writing tile columns, row masks, row pointers (shuffle scan of
 *             the 16 row counts), offsets, idx and values.
 * Entries of a tile row are contiguous in both formats and start at the
 * same position (rowptr[16 I]), so tile offsets need no global scan.
 * The host reads back two things only: the validation result and the tile
 * total (to size the matrix). */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>
#include <limits.h>
#include <stdio.h>


template <typename RP>
static __global__ void k_csr_validate(int32_t m, int32_t n, int64_t nnz, const RP *__restrict__ rp,
                                      const int32_t *__restrict__ col, int ordered, int *bad)
{
  int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  int64_t b = rp[i], e = rp[i + 1];
  if (e < b) { atomicMin(&bad[0], i); return; }
  if (b < 0 || e > nnz) return; /* only possible with a decrease elsewhere, reported by bad[0] */
  int32_t prev = INT_MIN;
  for (int64_t p = b; p < e; p++) {
    int32_t c = col[p];
    if (c < 0 || c >= n || (ordered && p > b && c <= prev)) { atomicMin(&bad[1], i); return; }
    prev = c;
  }
}

/* Tile column of the entry at p of a row ending at e, INT_MAX past the end. */
static __device__ __forceinline__ int32_t tr_tcol(const int32_t *col, int64_t p, int64_t e)
{
  return p < e ? (col[p] >> 4) : INT_MAX;
}

template <typename RP>
static __global__ void k_csr_count(int32_t m, int32_t TR, const RP *__restrict__ rp, const int32_t *__restrict__ col,
                                   int64_t *cnt)
{
  const int lane = threadIdx.x & 31;
  const int32_t I = (int32_t)((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5);
  if (I >= TR) return; /* whole warp */
  const int32_t row = 16 * I + lane;
  int64_t p = 0, e = 0;
  if (lane < 16 && row < m) { p = rp[row]; e = rp[row + 1]; }
  int32_t cur = tr_tcol(col, p, e);
  int64_t k = 0;
  for (;;) {
    int32_t J = __reduce_min_sync(0xffffffffu, cur);
    if (J == INT_MAX) break;
    k++;
    while (p < e && (col[p] >> 4) == J) p++;
    cur = tr_tcol(col, p, e);
  }
  if (lane == 0) cnt[I] = k;
}

template <typename RP>
static __global__ void k_csr_fill(int32_t m, int32_t TR, const RP *__restrict__ rp, const int32_t *__restrict__ col,
                                  const double *__restrict__ val, int64_t nnz, int64_t num_tiles,
                                  const int64_t *__restrict__ tile_ptr, int32_t *tile_col, int64_t *tile_off,
                                  uint8_t *row_ptr, uint16_t *row_mask, uint8_t *idx, double *tval)
{
  const int lane = threadIdx.x & 31;
  const int32_t I = (int32_t)((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5);
  if (I == 0 && lane == 0) tile_off[num_tiles] = nnz;
  if (I >= TR) return; /* whole warp */
  const int32_t row = 16 * I + lane;
  int64_t p = 0, e = 0;
  if (lane < 16 && row < m) { p = rp[row]; e = rp[row + 1]; }
  int64_t off = rp[16 * I]; /* first entry of the tile row, in both formats */
  int64_t t = tile_ptr[I];
  int32_t cur = tr_tcol(col, p, e);
  for (;; t++) {
    int32_t J = __reduce_min_sync(0xffffffffu, cur);
    if (J == INT_MAX) break;
    const int64_t p0 = p;
    unsigned mask = 0;
    for (; p < e && (col[p] >> 4) == J; p++) mask |= 1u << (col[p] & 15);
    int len = (int)(p - p0), incl = len;
    for (int d = 1; d < 16; d <<= 1) {
      int y = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += y;
    }
    const int total = __shfl_sync(0xffffffffu, incl, 15);
    const int start = incl - len;
    if (lane < 16) {
      row_mask[16 * t + lane] = (uint16_t)mask;
      row_ptr[16 * t + lane] = (uint8_t)start;
    }
    if (lane == 0) { tile_col[t] = J; tile_off[t] = off; }
    for (int64_t q = off + start, pp = p0; pp < p; pp++, q++) {
      idx[q] = (uint8_t)((lane << 4) | (col[pp] & 15));
      tval[q] = val ? val[pp] : 0.0;
    }
    off += total;
    cur = tr_tcol(col, p, e);
  }
}

/* Host copy of a row pointer entry, whatever its width and memory. */
template <typename RP>
static int tr_rp_get(const RP *rp, int64_t i, int on_device, int64_t *v)
{
  if (!on_device) { *v = (int64_t)rp[i]; return TILERAP_SUCCESS; }
  RP x;
  cudaError_t e = cudaMemcpy(&x, rp + i, sizeof x, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return tr_cuda_error(e, "CSR row pointer read");
  *v = (int64_t)x;
  return TILERAP_SUCCESS;
}

/* The host conversion's message for the first bad entry of row i (device CSR). */
template <typename RP>
static int tr_row_error(int32_t n, const RP *drp, const int32_t *dcol, int32_t i, int ordered)
{
  int64_t b = 0, e = 0;
  int err;
  if ((err = tr_rp_get(drp, i, 1, &b)) || (err = tr_rp_get(drp, (int64_t)i + 1, 1, &e))) return err;
  int32_t *c = (int32_t *)tilerap_host_alloc((size_t)(e - b), sizeof(int32_t));
  if (!c) return TILERAP_ERR_NOMEM;
  cudaError_t ce = cudaMemcpy(c, dcol + b, (size_t)(e - b) * sizeof(int32_t), cudaMemcpyDeviceToHost);
  if (ce != cudaSuccess) { free(c); return tr_cuda_error(ce, "CSR row read"); }
  for (int64_t p = 0; p < e - b; p++) {
    if (c[p] < 0 || c[p] >= n) {
      err = tilerap_set_error(TILERAP_ERR_RANGE, "CSR column index %d out of range [0,%d) in row %d", c[p], n, i);
      break;
    }
    if (ordered && p > 0 && c[p] <= c[p - 1]) {
      err = tilerap_set_error(TILERAP_ERR_UNSORTED, "CSR row %d: column indices not strictly increasing (%d after %d)", i,
                              c[p], c[p - 1]);
      break;
    }
  }
  free(c);
  return err ? err : tilerap_set_error(TILERAP_ERR_INVALID, "internal: row %d flagged but valid", i);
}

template <typename RP>
static int tr_from_csr(int32_t m, int32_t n, const RP *rp, const int32_t *col, const double *val, int on_device,
                       tilerap_tile_matrix **out, int trusted = 0)
{
  const cudaStream_t s = cudaStreamLegacy;
  const int32_t TR = tr_ceil16(m);
  tilerap_tile_matrix *T = NULL;
  RP *drp = NULL;
  int32_t *dcol = NULL;
  double *dval = NULL; /* uploaded values: become T's staging buffer */
  int *bad = NULL;
  int64_t *cnt = NULL, *tp = NULL;
  void *scan = NULL;
  int64_t rp0 = 0, nnz = 0, num_tiles = 0;
  int hbad[2];
  size_t scan_bytes = 0;
  int err = TILERAP_SUCCESS;

  TR_TRY(tr_rp_get(rp, 0, on_device, &rp0));
  TR_TRY(tr_rp_get(rp, m, on_device, &nnz));
  if (rp0 != 0) { err = tilerap_set_error(TILERAP_ERR_INVALID, "CSR rowptr[0] = %lld, expected 0", (long long)rp0); goto cleanup; }
  if (nnz > 0 && !col) { err = tilerap_set_error(TILERAP_ERR_NULL, "CSR column indices are NULL"); goto cleanup; }
  if (nnz < 0) { /* a decrease somewhere: let validation name the row */ }
  if (on_device) {
    drp = (RP *)rp; dcol = (int32_t *)col;
  } else {
    TR_TRY(tr_dalloc((void **)&drp, ((size_t)m + 1) * sizeof(RP), s, "CSR row pointers"));
    TR_TRY(tr_h2d(drp, rp, ((size_t)m + 1) * sizeof(RP), s, "CSR upload"));
    if (nnz > 0) {
      TR_TRY(tr_dalloc((void **)&dcol, (size_t)nnz * sizeof(int32_t), s, "CSR column indices"));
      TR_TRY(tr_h2d(dcol, col, (size_t)nnz * sizeof(int32_t), s, "CSR upload"));
    }
  }

  /* validation (not of tilerap's own products) */
  if (trusted) goto validated;
  TR_TRY(tr_dalloc((void **)&bad, 2 * sizeof(int), s, "validation flags"));
  TR_TRY_CU(cudaMemsetAsync(bad, 0x7f, 2 * sizeof(int), s), "validation flags");
  if (m > 0) {
    k_csr_validate<RP><<<tr_blocks(m, 256), 256, 0, s>>>(m, n, nnz, drp, dcol, 1, bad);
    TR_TRY(tr_cuda_check_launch("CSR validation"));
  }
  TR_TRY_CU(cudaMemcpyAsync(hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost, s), "CSR validation");
  TR_TRY_CU(cudaStreamSynchronize(s), "CSR validation");
  if (hbad[0] < m) { err = tilerap_set_error(TILERAP_ERR_INVALID, "CSR row pointers decrease at row %d", hbad[0]); goto cleanup; }
  if (nnz < 0) { err = tilerap_set_error(TILERAP_ERR_INVALID, "CSR has %lld entries", (long long)nnz); goto cleanup; }
  if (hbad[1] < m) { err = tr_row_error<RP>(n, drp, dcol, hbad[1], 1); goto cleanup; }
validated:

  if (!on_device && val && nnz > 0) { /* values go up only once the CSR is known to be valid */
    TR_TRY(tr_dalloc((void **)&dval, (size_t)nnz * sizeof(double), s, "CSR values"));
    TR_TRY(tr_h2d(dval, val, (size_t)nnz * sizeof(double), s, "CSR upload"));
  } else if (on_device) dval = (double *)val;

  /* tiles per tile row, tile_ptr */
  TR_TRY(tr_dalloc((void **)&cnt, ((size_t)TR + 1) * sizeof(int64_t), s, "tile counts"));
  TR_TRY(tr_dalloc((void **)&tp, ((size_t)TR + 1) * sizeof(int64_t), s, "tile row pointers"));
  TR_TRY_CU(cudaMemsetAsync(cnt, 0, ((size_t)TR + 1) * sizeof(int64_t), s), "tile counts");
  if (TR > 0 && nnz > 0) {
    k_csr_count<RP><<<tr_blocks((int64_t)TR * 32, 256), 256, 0, s>>>(m, TR, drp, dcol, cnt);
    TR_TRY(tr_cuda_check_launch("CSR tile count"));
  }
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(NULL, scan_bytes, cnt, tp, TR + 1, s), "tile count scan");
  TR_TRY(tr_dalloc(&scan, scan_bytes, s, "scan storage"));
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(scan, scan_bytes, cnt, tp, TR + 1, s), "tile count scan");
  TR_TRY_CU(cudaMemcpyAsync(&num_tiles, tp + TR, sizeof num_tiles, cudaMemcpyDeviceToHost, s), "tile total");
  TR_TRY_CU(cudaStreamSynchronize(s), "tile total");

  TR_TRY(tr_cuda_tile_new(m, n, num_tiles, nnz, s, &T));
  TR_TRY_CU(cudaMemcpyAsync(T->tile_ptr, tp, ((size_t)TR + 1) * sizeof(int64_t), cudaMemcpyDeviceToDevice, s), "tile_ptr");
  if (TR > 0 && nnz > 0) {
    k_csr_fill<RP><<<tr_blocks((int64_t)TR * 32, 256), 256, 0, s>>>(m, TR, drp, dcol, dval, nnz, num_tiles, tp,
                                                                    T->tile_col, T->tile_off, T->row_ptr,
                                                                    T->row_mask, T->idx, T->val);
    TR_TRY(tr_cuda_check_launch("CSR to tile"));
  } else {
    TR_TRY_CU(cudaMemsetAsync(T->tile_off, 0, sizeof(int64_t), s), "tile_off");
  }
  if (!on_device && dval) { T->internal = dval; dval = NULL; } /* kept: staging of value refreshes */

cleanup:
  if (!on_device) {
    tr_dfree(drp, s);
    tr_dfree(dcol, s);
    tr_dfree(dval, s);
  }
  tr_dfree(bad, s);
  tr_dfree(cnt, s);
  tr_dfree(tp, s);
  tr_dfree(scan, s);
  if (err) tilerap_tile_destroy(&T);
  *out = T;
  return err;
}


/* Rows in any column order (hypre keeps the diagonal first): row pointers
 * and column ranges checked, then each row's (column, value) pairs sorted
 * on the device by a CUB segmented sort, then the conversion above on the
 * sorted device copy (its strict-order check now finds repeated columns).
 * Nothing of the input order is kept, so no staging buffer either. */
template <typename RP>
static int tr_from_unsorted_csr(int32_t m, int32_t n, const RP *rp, const int32_t *col, const double *val,
                                int on_device, tilerap_tile_matrix **out)
{
  const cudaStream_t s = cudaStreamLegacy;
  RP *drp = NULL;
  int32_t *dcol = NULL, *scol = NULL;
  double *dval = NULL, *sval = NULL;
  int *bad = NULL;
  void *tmp = NULL;
  size_t tmp_bytes = 0;
  int64_t rp0 = 0, nnz = 0;
  int hbad[2];
  int err = TILERAP_SUCCESS;
  *out = NULL;

  TR_TRY(tr_rp_get(rp, 0, on_device, &rp0));
  TR_TRY(tr_rp_get(rp, m, on_device, &nnz));
  /* nothing to sort, or an error the sorted path reports as well */
  if (m == 0 || nnz <= 0 || rp0 != 0 || !col) return tr_from_csr<RP>(m, n, rp, col, val, on_device, out);
  if (nnz > INT_MAX) {
    err = tilerap_set_error(TILERAP_ERR_OVERFLOW, "unsorted CSR conversion: %lld entries (the device sort takes < 2^31)",
                            (long long)nnz);
    goto cleanup;
  }
  if (on_device) {
    drp = (RP *)rp; dcol = (int32_t *)col; dval = (double *)val;
  } else {
    TR_TRY(tr_dalloc((void **)&drp, ((size_t)m + 1) * sizeof(RP), s, "CSR row pointers"));
    TR_TRY(tr_h2d(drp, rp, ((size_t)m + 1) * sizeof(RP), s, "CSR upload"));
    TR_TRY(tr_dalloc((void **)&dcol, (size_t)nnz * sizeof(int32_t), s, "CSR column indices"));
    TR_TRY(tr_h2d(dcol, col, (size_t)nnz * sizeof(int32_t), s, "CSR upload"));
  }
  /* row pointers and column ranges before the sort trusts them */
  TR_TRY(tr_dalloc((void **)&bad, 2 * sizeof(int), s, "validation flags"));
  TR_TRY_CU(cudaMemsetAsync(bad, 0x7f, 2 * sizeof(int), s), "validation flags");
  k_csr_validate<RP><<<tr_blocks(m, 256), 256, 0, s>>>(m, n, nnz, drp, dcol, 0, bad);
  TR_TRY(tr_cuda_check_launch("CSR validation"));
  TR_TRY_CU(cudaMemcpyAsync(hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost, s), "CSR validation");
  TR_TRY_CU(cudaStreamSynchronize(s), "CSR validation");
  if (hbad[0] < m) { err = tilerap_set_error(TILERAP_ERR_INVALID, "CSR row pointers decrease at row %d", hbad[0]); goto cleanup; }
  if (hbad[1] < m) { err = tr_row_error<RP>(n, drp, dcol, hbad[1], 0); goto cleanup; }
  if (!on_device && val) {
    TR_TRY(tr_dalloc((void **)&dval, (size_t)nnz * sizeof(double), s, "CSR values"));
    TR_TRY(tr_h2d(dval, val, (size_t)nnz * sizeof(double), s, "CSR upload"));
  }
  TR_TRY(tr_dalloc((void **)&scol, (size_t)nnz * sizeof(int32_t), s, "sorted columns"));
  if (dval) {
    TR_TRY(tr_dalloc((void **)&sval, (size_t)nnz * sizeof(double), s, "sorted values"));
    TR_TRY_CU(cub::DeviceSegmentedSort::SortPairs(NULL, tmp_bytes, dcol, scol, dval, sval, (int)nnz, (int)m, drp, drp + 1, s),
           "row sort");
    TR_TRY(tr_dalloc(&tmp, tmp_bytes, s, "row sort storage"));
    TR_TRY_CU(cub::DeviceSegmentedSort::SortPairs(tmp, tmp_bytes, dcol, scol, dval, sval, (int)nnz, (int)m, drp, drp + 1, s),
           "row sort");
  } else {
    TR_TRY_CU(cub::DeviceSegmentedSort::SortKeys(NULL, tmp_bytes, dcol, scol, (int)nnz, (int)m, drp, drp + 1, s), "row sort");
    TR_TRY(tr_dalloc(&tmp, tmp_bytes, s, "row sort storage"));
    TR_TRY_CU(cub::DeviceSegmentedSort::SortKeys(tmp, tmp_bytes, dcol, scol, (int)nnz, (int)m, drp, drp + 1, s), "row sort");
  }
  err = tr_from_csr<RP>(m, n, drp, scol, sval, 1, out);
  if (err == TILERAP_ERR_UNSORTED) { /* sorted rows fail the strict order only on a repeated column */
    char msg[256];
    snprintf(msg, sizeof msg, "%s", tilerap_last_error());
    tilerap_set_error(TILERAP_ERR_UNSORTED, "unsorted CSR conversion: repeated column index (sorted: %s)", msg);
  }

cleanup:
  if (!on_device) {
    tr_dfree(drp, s);
    tr_dfree(dcol, s);
    tr_dfree(dval, s);
  }
  tr_dfree(bad, s);
  tr_dfree(scol, s);
  tr_dfree(sval, s);
  tr_dfree(tmp, s);
  if (err) tilerap_tile_destroy(out);
  return err;
}

/* the CSR was made on `stream`, the conversion runs on the legacy stream:
 * waits on both sides, so that any stream kind is ordered */
extern "C" int tr_cuda_tile_from_own_csr(int32_t m, int32_t n, const int64_t *rp, const int32_t *colidx,
                                         const double *val, void *stream, tilerap_tile_matrix **T)
{
  TR_RET_CU(cudaStreamSynchronize((cudaStream_t)stream), "CSR path product");
  TR_RET(tr_from_csr<int64_t>(m, n, rp, colidx, val, 1, T, 1));
  TR_RET_CU(cudaStreamSynchronize(cudaStreamLegacy), "CSR path tiles of C");
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_tile_from_csr(int32_t m, int32_t n, const int64_t *rp64, const int32_t *rp32,
                                     const int32_t *colidx, const double *val, tilerap_memtype csr_mem, int unsorted,
                                     tilerap_tile_matrix **T)
{
  int on_device = csr_mem == TILERAP_MEM_DEVICE;
  if (unsorted)
    return rp64 ? tr_from_unsorted_csr<int64_t>(m, n, rp64, colidx, val, on_device, T)
                : tr_from_unsorted_csr<int32_t>(m, n, rp32, colidx, val, on_device, T);
  return rp64 ? tr_from_csr<int64_t>(m, n, rp64, colidx, val, on_device, T)
              : tr_from_csr<int32_t>(m, n, rp32, colidx, val, on_device, T);
}
