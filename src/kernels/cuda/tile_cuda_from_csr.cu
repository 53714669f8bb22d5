/* CSR -> tile on the device (structure and values).
 *
 * The CSR comes from host arrays (uploaded) or device arrays (used in
 * place), rows sorted or (hypre keeps the diagonal first) in any order.
 * Two paths, chosen by the longest row (tuning knob TILERAP_CONVERT):
 *
 * Merge path (rows of at most TR_MERGE_MAX_ROW entries: grids, AMG
 * levels): rows in any order are first sorted by a CUB segmented sort;
 *   validate  one thread per row: row pointers monotone, columns in range
 *             and strictly increasing (first offending row by atomicMin; the
 *             host rebuilds the host conversion's message from that row);
 *   count     one warp per tile row: lanes 0..15 hold a cursor on their row;
 *             the warp minimum of the cursors' tile columns is the next
 *             tile, and the lanes on it step past its entries;
 *   fill      the same merge after a scan of the counts gave tile_ptr, now
 *             writing tile columns, row masks, row pointers, offsets, idx
 *             and values.
 * A row or tile row is one thread's or warp's walk there, so a row of
 * 490 000 entries took 200 ms.
 *
 * Sort path (longer rows: block and high-order operators, dense rows):
 * every kernel's work follows the entries, never a row or tile row:
 *   rows      one thread per row: row pointers monotone;
 *   keys      a thread per TR_KEYS_PER_THREAD consecutive entries (its
 *             first row found by binary search, then rows and entries
 *             walked together): columns in range and, for sorted input,
 *             strictly increasing, and each entry's key (tile row, tile
 *             column, row and column in the tile);
 *   sort      a stable radix sort of the keys (only the bits they use),
 *             carrying the entry positions: tile order.  Keys of a tile
 *             row stay inside its CSR range [rowptr[16 I], rowptr[16 I +
 *             16]), so tile offsets are sorted positions;
 *   heads     tile starts flagged and scanned: tile numbers, the one
 *             read-back (flags and the tile total, to size the matrix);
 *   fill      per sorted entry: idx and value; per tile start: tile
 *             column and offset; per row start in a tile: its row mask
 *             (at most 16 entries walked); per tile: row pointers from
 *             the masks; per tile row: tile_ptr.
 *   Rows in any order come out sorted (the key orders them); a repeated
 *   column is two equal keys next to each other.
 * Measured on the H100 (BENCHMARKS.md section 3b): hypre's elasticity and
 * 125-point operators (81 and 125 entries a row) 12.6 -> 2.0 and 8.6 ->
 * 1.7 ms, the dense row 203 -> 0.9 ms; on 7- and 27-point grids the
 * merge path stays faster (the sort moves every key four or five times).
 * Entries of a tile row are contiguous in both formats and start at the
 * same position (rowptr[16 I]), so tile offsets need no global scan. */
#include "spgemm_cuda.cuh"
#include "tuning.h"
#include <cub/cub.cuh>
#include <limits.h>
#include <stdio.h>

/* longest row the merge path takes (auto) */
#define TR_MERGE_MAX_ROW 64

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

#define TR_KEYS_PER_THREAD 8

/* first offending rows: bad[0] row pointers, bad[1] columns, bad[2] a
 * repeated column (unsorted input, after the sort) */
#define TR_BAD_FLAGS 3

template <typename RP>
static __global__ void k_csr_rows(int32_t m, const RP *__restrict__ rp, int *bad)
{
  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m && rp[i + 1] < rp[i]) atomicMin(&bad[0], i);
}

/* the row holding entry p: the last row starting at or before it */
template <typename RP>
static __device__ __forceinline__ int32_t tr_row_of(const RP *__restrict__ rp, int32_t m, int64_t p)
{
  int32_t lo = 0, hi = m - 1;
  while (lo < hi) {
    const int32_t mid = (int32_t)(((int64_t)lo + hi + 1) >> 1);
    if ((int64_t)rp[mid] <= p) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* key = ((I * TC + J) << 8) | (row in tile << 4) | column in tile */
template <typename RP, typename K>
static __global__ void k_csr_keys(int32_t m, int32_t n, int64_t nnz, int64_t TC, const RP *__restrict__ rp,
                                  const int32_t *__restrict__ col, int ordered, K *key, int32_t *pos, int *bad)
{
  const int64_t p0 = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * TR_KEYS_PER_THREAD;
  if (p0 >= nnz) return;
  const int64_t p1 = p0 + TR_KEYS_PER_THREAD < nnz ? p0 + TR_KEYS_PER_THREAD : nnz;
  int32_t r = tr_row_of(rp, m, p0);
  int64_t e = rp[r + 1];
  for (int64_t p = p0; p < p1; p++) {
    while (p >= e && r < m - 1) e = rp[++r + 1]; /* empty rows between */
    const int32_t c = col[p];
    if (c < 0 || c >= n) atomicMin(&bad[1], r);
    else if (ordered && p > rp[r] && c <= col[p - 1]) atomicMin(&bad[1], r);
    const int32_t cc = c < 0 ? 0 : (c >= n ? n - 1 : c); /* a bad entry's key only has to stay in range */
    key[p] = ((K)((int64_t)(r >> 4) * TC + (cc >> 4)) << 8) | (K)(((r & 15) << 4) | (cc & 15));
    pos[p] = (int32_t)p;
  }
}

/* tile starts (1) among the sorted keys, and (unsorted input) repeated
 * columns: equal neighbours */
template <typename K>
static __global__ void k_tile_heads(int64_t nnz, const K *__restrict__ key, int32_t *head, int64_t TC, int *bad)
{
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= nnz) return;
  const K k = key[q];
  head[q] = q == 0 || (key[q - 1] >> 8) != (k >> 8);
  if (q > 0 && key[q - 1] == k) atomicMin(&bad[2], (int)(16 * (int64_t)((k >> 8) / (K)TC) + ((k >> 4) & 15)));
}

/* per sorted entry: idx and value; per tile start: column and offset;
 * per row start inside a tile: the row's mask (its entries follow) */
template <typename K>
static __global__ void k_tile_fill(int64_t nnz, int64_t TC, const K *__restrict__ key, const int32_t *__restrict__ pos,
                                   const int32_t *__restrict__ tnum, const double *__restrict__ val, int32_t *tile_col,
                                   int64_t *tile_off, uint16_t *row_mask, uint8_t *idx, double *tval)
{
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= nnz) return;
  const K k = key[q];
  const int64_t t = tnum[q] - 1; /* inclusive count of tile starts */
  idx[q] = (uint8_t)(k & 255);
  tval[q] = val ? val[pos[q]] : 0.0;
  const bool tile_start = q == 0 || (key[q - 1] >> 8) != (k >> 8);
  if (tile_start) {
    tile_col[t] = (int32_t)((k >> 8) % (K)TC);
    tile_off[t] = q;
  }
  if (tile_start || (key[q - 1] >> 4) != (k >> 4)) { /* first entry of a row of the tile */
    unsigned mask = 0;
    for (int64_t x = q; x < nnz && x < q + 16 && (key[x] >> 4) == (k >> 4); x++) mask |= 1u << (key[x] & 15);
    row_mask[16 * t + ((k >> 4) & 15)] = (uint16_t)mask;
  }
}

/* per tile: row pointers from the masks; per tile row: tile_ptr */
static __global__ void k_tile_rowptr(int64_t num_tiles, const uint16_t *__restrict__ row_mask, uint8_t *row_ptr)
{
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= num_tiles) return;
  int acc = 0;
  for (int r = 0; r < 16; r++) {
    row_ptr[16 * t + r] = (uint8_t)acc;
    acc += __popc(row_mask[16 * t + r]);
  }
}

/* tile_ptr[I] = tiles before tile row I: the tile number of its first
 * entry (of the next non-empty tile row's, for an empty one) */
template <typename RP>
static __global__ void k_tile_ptr(int32_t m, int32_t TR, int64_t nnz, int64_t num_tiles, const RP *__restrict__ rp,
                                  const int32_t *__restrict__ tnum, int64_t *tile_ptr, int64_t *tile_off)
{
  const int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I > TR) return;
  if (I == TR) { tile_ptr[TR] = num_tiles; tile_off[num_tiles] = nnz; return; }
  const int64_t p = rp[16 * (int64_t)I < m ? 16 * I : m];
  tile_ptr[I] = p < nnz ? tnum[p] - 1 : num_tiles;
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

/* The CSR's entry count and its structure on the device (host arrays
 * uploaded into *drp, *dcol; device arrays used in place), after the
 * checks every path makes first.  tr_csr_release frees what was uploaded. */
template <typename RP>
static int tr_csr_structure(int32_t m, const RP *rp, const int32_t *col, int on_device, cudaStream_t s, int64_t *nnz,
                            RP **drp, int32_t **dcol)
{
  int64_t rp0 = 0;
  int err = TILERAP_SUCCESS;
  *drp = NULL; *dcol = NULL;
  TR_RET(tr_rp_get(rp, 0, on_device, &rp0));
  TR_RET(tr_rp_get(rp, m, on_device, nnz));
  if (rp0 != 0) return tilerap_set_error(TILERAP_ERR_INVALID, "CSR rowptr[0] = %lld, expected 0", (long long)rp0);
  if (*nnz > 0 && !col) return tilerap_set_error(TILERAP_ERR_NULL, "CSR column indices are NULL");
  if (on_device) { *drp = (RP *)rp; *dcol = (int32_t *)col; return TILERAP_SUCCESS; }
  TR_TRY(tr_dalloc((void **)drp, ((size_t)m + 1) * sizeof(RP), s, "CSR row pointers"));
  TR_TRY(tr_h2d(*drp, rp, ((size_t)m + 1) * sizeof(RP), s, "CSR upload"));
  if (*nnz > 0) {
    TR_TRY(tr_dalloc((void **)dcol, (size_t)*nnz * sizeof(int32_t), s, "CSR column indices"));
    TR_TRY(tr_h2d(*dcol, col, (size_t)*nnz * sizeof(int32_t), s, "CSR upload"));
  }
  return TILERAP_SUCCESS;
cleanup:
  tr_dfree(*drp, s); tr_dfree(*dcol, s);
  *drp = NULL; *dcol = NULL;
  return err;
}

/* frees what tr_csr_structure uploaded, and uploaded values */
template <typename RP>
static void tr_csr_release(int on_device, RP *drp, int32_t *dcol, double *dval, cudaStream_t s)
{
  if (on_device) return;
  tr_dfree(drp, s);
  tr_dfree(dcol, s);
  tr_dfree(dval, s);
}

template <typename RP>
static int tr_from_csr_merge(int32_t m, int32_t n, const RP *rp, const int32_t *col, const double *val, int on_device,
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
  int64_t nnz = 0, num_tiles = 0;
  int hbad[2];
  size_t scan_bytes = 0;
  int err = TILERAP_SUCCESS;

  TR_TRY(tr_csr_structure<RP>(m, rp, col, on_device, s, &nnz, &drp, &dcol));

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
  tr_csr_release<RP>(on_device, drp, dcol, dval, s);
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
static int tr_from_unsorted_csr_merge(int32_t m, int32_t n, const RP *rp, const int32_t *col, const double *val,
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
  if (m == 0 || nnz <= 0 || rp0 != 0 || !col) return tr_from_csr_merge<RP>(m, n, rp, col, val, on_device, out);
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
  err = tr_from_csr_merge<RP>(m, n, drp, scol, sval, 1, out);
  if (err == TILERAP_ERR_UNSORTED) { /* sorted rows fail the strict order only on a repeated column */
    char msg[256];
    snprintf(msg, sizeof msg, "%s", tilerap_last_error());
    tilerap_set_error(TILERAP_ERR_UNSORTED, "unsorted CSR conversion: repeated column index (sorted: %s)", msg);
  }

cleanup:
  tr_csr_release<RP>(on_device, drp, dcol, dval, s);
  tr_dfree(bad, s);
  tr_dfree(scol, s);
  tr_dfree(sval, s);
  tr_dfree(tmp, s);
  if (err) tilerap_tile_destroy(out);
  return err;
}

/* the sort and what follows it, for keys of type K (unsigned 32 or 64 bits) */
template <typename RP, typename K>
static int tr_tiles_by_keys(int32_t m, int32_t n, int64_t nnz, const RP *drp, const int32_t *dcol, int ordered,
                            int key_bits, cudaStream_t s, int *bad, K **key_out, int32_t **pos_out, int32_t **tnum_out,
                            int64_t *num_tiles, int *hbad)
{
  const int64_t TC = tr_ceil16(n);
  K *key = NULL, *skey = NULL;
  int32_t *pos = NULL, *spos = NULL, *head = NULL;
  void *tmp = NULL;
  size_t tmp_bytes = 0, scan_bytes = 0;
  int32_t last = 0;
  int err = TILERAP_SUCCESS;
  TR_TRY(tr_dalloc((void **)&key, (size_t)nnz * sizeof(K), s, "conversion keys"));
  TR_TRY(tr_dalloc((void **)&skey, (size_t)nnz * sizeof(K), s, "conversion keys"));
  TR_TRY(tr_dalloc((void **)&pos, (size_t)nnz * sizeof(int32_t), s, "conversion positions"));
  TR_TRY(tr_dalloc((void **)&spos, (size_t)nnz * sizeof(int32_t), s, "conversion positions"));
  k_csr_keys<RP, K><<<tr_blocks((nnz + TR_KEYS_PER_THREAD - 1) / TR_KEYS_PER_THREAD, 256), 256, 0, s>>>(
      m, n, nnz, TC, drp, dcol, ordered, key, pos, bad);
  TR_TRY(tr_cuda_check_launch("CSR keys"));
  TR_TRY_CU(cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, key, skey, pos, spos, (int)nnz, 0, key_bits, s), "tile sort");
  TR_TRY_CU(cub::DeviceScan::InclusiveSum(NULL, scan_bytes, pos, pos, (int)nnz, s), "tile scan");
  if (scan_bytes > tmp_bytes) tmp_bytes = scan_bytes;
  TR_TRY(tr_dalloc(&tmp, tmp_bytes, s, "sort storage"));
  TR_TRY_CU(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, key, skey, pos, spos, (int)nnz, 0, key_bits, s), "tile sort");
  head = pos; /* the unsorted positions are done with */
  k_tile_heads<K><<<tr_blocks(nnz, 256), 256, 0, s>>>(nnz, skey, head, TC, bad);
  TR_TRY(tr_cuda_check_launch("tile starts"));
  TR_TRY_CU(cub::DeviceScan::InclusiveSum(tmp, scan_bytes, head, head, (int)nnz, s), "tile scan");
  /* the one wait: validation flags and the tile total */
  TR_TRY_CU(cudaMemcpyAsync(hbad, bad, TR_BAD_FLAGS * sizeof(int), cudaMemcpyDeviceToHost, s), "CSR validation");
  TR_TRY_CU(cudaMemcpyAsync(&last, head + nnz - 1, sizeof last, cudaMemcpyDeviceToHost, s), "tile total");
  TR_TRY_CU(cudaStreamSynchronize(s), "CSR validation");
  *num_tiles = last;
  *key_out = skey; skey = NULL;
  *pos_out = spos; spos = NULL;
  *tnum_out = head; pos = NULL;
cleanup:
  tr_dfree(key, s);
  tr_dfree(skey, s);
  tr_dfree(pos, s);
  tr_dfree(spos, s);
  tr_dfree(tmp, s);
  return err;
}

template <typename RP, typename K>
static int tr_fill_tiles(int32_t m, int64_t nnz, int64_t TC, const RP *drp, const K *key, const int32_t *pos,
                         const int32_t *tnum, const double *dval, cudaStream_t s, tilerap_tile_matrix *T)
{
  const int32_t TR = tr_ceil16(m);
  const int64_t nt = T->num_tiles;
  TR_RET_CU(cudaMemsetAsync(T->row_mask, 0, 16 * (size_t)nt * sizeof(uint16_t), s), "row masks");
  k_tile_fill<K><<<tr_blocks(nnz, 256), 256, 0, s>>>(nnz, TC, key, pos, tnum, dval, T->tile_col, T->tile_off,
                                                      T->row_mask, T->idx, T->val);
  TR_RET(tr_cuda_check_launch("CSR to tile"));
  k_tile_rowptr<<<tr_blocks(nt, 256), 256, 0, s>>>(nt, T->row_mask, T->row_ptr);
  TR_RET(tr_cuda_check_launch("tile row pointers"));
  k_tile_ptr<RP><<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(m, TR, nnz, nt, drp, tnum, T->tile_ptr, T->tile_off);
  return tr_cuda_check_launch("tile_ptr");
}

static int bits_for(uint64_t x) /* bits that hold 0 .. x */
{
  int b = 1;
  while (b < 64 && (x >> b)) b++;
  return b;
}

/* The sort path.  ordered: rows sorted (strictly increasing columns
 * required, value refreshes staged); otherwise rows in any order (sorted
 * here, a repeated column refused).  trusted: tilerap's own CSR, not
 * validated. */
template <typename RP>
static int tr_from_csr_keys(int32_t m, int32_t n, const RP *rp, const int32_t *col, const double *val, int on_device,
                       tilerap_tile_matrix **out, int ordered = 1, int trusted = 0)
{
  const cudaStream_t s = cudaStreamLegacy;
  const int32_t TR = tr_ceil16(m);
  const int64_t TC = tr_ceil16(n);
  tilerap_tile_matrix *T = NULL;
  RP *drp = NULL;
  int32_t *dcol = NULL, *pos = NULL, *tnum = NULL;
  double *dval = NULL; /* uploaded values: become T's staging buffer */
  void *key = NULL;
  int *bad = NULL;
  int64_t nnz = 0, num_tiles = 0;
  int hbad[TR_BAD_FLAGS] = {INT_MAX, INT_MAX, INT_MAX};
  const int key_bits = 8 + bits_for((uint64_t)(TR > 0 ? TR : 1) * (uint64_t)(TC > 0 ? TC : 1) - 1);
  int err = TILERAP_SUCCESS;

  TR_TRY(tr_csr_structure<RP>(m, rp, col, on_device, s, &nnz, &drp, &dcol));
  if (nnz > INT_MAX) {
    err = tilerap_set_error(TILERAP_ERR_OVERFLOW, "device CSR conversion: %lld entries (the device sort takes < 2^31)",
                            (long long)nnz);
    goto cleanup;
  }
  TR_TRY(tr_dalloc((void **)&bad, TR_BAD_FLAGS * sizeof(int), s, "validation flags"));
  TR_TRY_CU(cudaMemsetAsync(bad, 0x7f, TR_BAD_FLAGS * sizeof(int), s), "validation flags");
  if (m > 0) {
    k_csr_rows<RP><<<tr_blocks(m, 256), 256, 0, s>>>(m, drp, bad);
    TR_TRY(tr_cuda_check_launch("CSR validation"));
  }
  if (nnz > 0 && m > 0) { /* keys are built on the row pointers as they stand: bad ones give wrong keys, no stray access */
    if (key_bits <= 32)
      TR_TRY((tr_tiles_by_keys<RP, uint32_t>(m, n, nnz, drp, dcol, ordered, key_bits, s, bad, (uint32_t **)&key, &pos,
                                               &tnum, &num_tiles, hbad)));
    else
      TR_TRY((tr_tiles_by_keys<RP, uint64_t>(m, n, nnz, drp, dcol, ordered, key_bits, s, bad, (uint64_t **)&key, &pos,
                                               &tnum, &num_tiles, hbad)));
  } else {
    TR_TRY_CU(cudaMemcpyAsync(hbad, bad, TR_BAD_FLAGS * sizeof(int), cudaMemcpyDeviceToHost, s), "CSR validation");
    TR_TRY_CU(cudaStreamSynchronize(s), "CSR validation");
  }
  if (!trusted) {
    if (hbad[0] < m) { err = tilerap_set_error(TILERAP_ERR_INVALID, "CSR row pointers decrease at row %d", hbad[0]); goto cleanup; }
    if (nnz < 0) { err = tilerap_set_error(TILERAP_ERR_INVALID, "CSR has %lld entries", (long long)nnz); goto cleanup; }
    if (hbad[1] < m) { err = tr_row_error<RP>(n, drp, dcol, hbad[1], ordered); goto cleanup; }
    if (hbad[2] < m) {
      err = tilerap_set_error(TILERAP_ERR_UNSORTED, "unsorted CSR conversion: repeated column index in row %d", hbad[2]);
      goto cleanup;
    }
  }

  if (!on_device && val && nnz > 0) { /* values go up only once the CSR is known to be valid */
    TR_TRY(tr_dalloc((void **)&dval, (size_t)nnz * sizeof(double), s, "CSR values"));
    TR_TRY(tr_h2d(dval, val, (size_t)nnz * sizeof(double), s, "CSR upload"));
  } else if (on_device) dval = (double *)val;

  TR_TRY(tr_cuda_tile_new(m, n, num_tiles, nnz, s, &T));
  if (nnz > 0 && m > 0) {
    if (key_bits <= 32) TR_TRY((tr_fill_tiles<RP, uint32_t>(m, nnz, TC, drp, (uint32_t *)key, pos, tnum, dval, s, T)));
    else TR_TRY((tr_fill_tiles<RP, uint64_t>(m, nnz, TC, drp, (uint64_t *)key, pos, tnum, dval, s, T)));
  } else {
    tr_cuda_tile_empty_structure(T, s);
    TR_TRY(tr_cuda_check_launch("empty tile structure"));
  }
  /* kept: staging of value refreshes (sorted input: CSR order is tile row order) */
  if (!on_device && dval && ordered) { T->internal = dval; dval = NULL; }

cleanup:
  tr_csr_release<RP>(on_device, drp, dcol, dval, s);
  tr_dfree(bad, s);
  tr_dfree(key, s);
  tr_dfree(pos, s);
  tr_dfree(tnum, s);
  if (err) tilerap_tile_destroy(&T);
  *out = T;
  return err;
}

/* the longest row: on the device by one kernel and a read-back, on the host by a scan */
template <typename RP>
static __global__ void k_csr_max_row(int32_t m, const RP *__restrict__ rp, unsigned long long *mx)
{
  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  int64_t len = i < m ? (int64_t)rp[i + 1] - (int64_t)rp[i] : 0;
  tr_warp_atomic_max(len > 0 ? (len > (int64_t)UINT_MAX ? UINT_MAX : (unsigned)len) : 0u, mx);
}

template <typename RP>
static int tr_max_row(int32_t m, const RP *rp, int on_device, int64_t *mx)
{
  *mx = 0;
  if (m <= 0) return TILERAP_SUCCESS;
  if (!on_device) {
    *mx = sizeof(RP) == 8 ? tr_host_max_row(m, (const int64_t *)rp, NULL) : tr_host_max_row(m, NULL, (const int32_t *)rp);
    return TILERAP_SUCCESS;
  }
  const cudaStream_t s = cudaStreamLegacy;
  unsigned long long *d = NULL, h = 0;
  int err = tr_dalloc((void **)&d, sizeof *d, s, "longest row");
  if (err) return err;
  cudaError_t ce = cudaMemsetAsync(d, 0, sizeof *d, s);
  if (ce == cudaSuccess) {
    k_csr_max_row<RP><<<tr_blocks(m, 256), 256, 0, s>>>(m, rp, d);
    ce = cudaGetLastError();
  }
  if (ce == cudaSuccess) ce = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
  tr_dfree(d, s);
  if (ce != cudaSuccess) return tr_cuda_error(ce, "longest row");
  *mx = (int64_t)h;
  return TILERAP_SUCCESS;
}

/* the longest row of an m-row device CSR with 32-bit row pointers (no checks) */
extern "C" int tr_cuda_csr_longest_row_i32(int32_t m, const int32_t *rp, int64_t *longest)
{
  return tr_max_row<int32_t>(m, rp, 1, longest);
}

/* the merge path for rows up to TR_MERGE_MAX_ROW entries, else the sort path */
template <typename RP>
static int tr_from_csr(int32_t m, int32_t n, const RP *rp, const int32_t *col, const double *val, int on_device,
                       tilerap_tile_matrix **out, int ordered = 1, int trusted = 0)
{
  int choice = tr_knob_int(TR_KNOB_CONVERT); /* 0 auto, 1 merge, 2 sort */
  if (choice == 0 && rp && m > 0) {
    int64_t mx = 0;
    const int err = tr_max_row<RP>(m, rp, on_device, &mx);
    if (err) { *out = NULL; return err; }
    choice = mx > TR_MERGE_MAX_ROW ? 2 : 1;
  }
  if (choice == 2) return tr_from_csr_keys<RP>(m, n, rp, col, val, on_device, out, ordered, trusted);
  if (!ordered) return tr_from_unsorted_csr_merge<RP>(m, n, rp, col, val, on_device, out);
  return tr_from_csr_merge<RP>(m, n, rp, col, val, on_device, out, trusted);
}

/* the CSR was made on `stream`, the conversion runs on the legacy stream:
 * waits on both sides, so that any stream kind is ordered */
extern "C" int tr_cuda_tile_from_own_csr(int32_t m, int32_t n, const int64_t *rp, const int32_t *colidx,
                                         const double *val, void *stream, tilerap_tile_matrix **T)
{
  TR_RET_CU(cudaStreamSynchronize((cudaStream_t)stream), "CSR path product");
  TR_RET(tr_from_csr<int64_t>(m, n, rp, colidx, val, 1, T, 1, 1));
  TR_RET_CU(cudaStreamSynchronize(cudaStreamLegacy), "CSR path tiles of C");
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_tile_from_csr(int32_t m, int32_t n, const int64_t *rp64, const int32_t *rp32,
                                     const int32_t *colidx, const double *val, tilerap_memtype csr_mem, int unsorted,
                                     tilerap_tile_matrix **T)
{
  int on_device = csr_mem == TILERAP_MEM_DEVICE;
  return rp64 ? tr_from_csr<int64_t>(m, n, rp64, colidx, val, on_device, T, !unsorted)
              : tr_from_csr<int32_t>(m, n, rp32, colidx, val, on_device, T, !unsorted);
}
