/* Tile -> CSR on the device (row pointers, columns, values), and the
 * values-only moves in both directions used by numeric re-runs.
 *
 * Everything comes from the tile matrix alone: entries of tile row I start
 * at tile_off[tile_ptr[I]] in both formats, and inside it CSR row 16I+r
 * starts after the rows above it (a shuffle scan of the 16 row lengths,
 * each a sum of mask popcounts).  Lane r of a warp then walks the tiles of
 * its tile row: row r's run in each tile is contiguous in both formats.
 * So no permutation array is stored and the value moves allocate nothing
 * (host arrays go through the matrix's staging buffer, T->internal). */
#include "spgemm_cuda.cuh"

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

/* Diagonal entry of each row moved to the row's front, the entries before
 * it shifted by one (the rest stay ascending).  One thread per row. */
template <typename RP>
static __global__ void k_diagonal_first(int32_t m, const RP *rp, int32_t *col, double *val)
{
  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const int64_t b = rp[i], e = rp[i + 1];
  int64_t p = b;
  while (p < e && col[p] != i) p++;
  if (p == e || p == b) return;
  const double d = val ? val[p] : 0.0;
  for (int64_t q = p; q > b; q--) {
    col[q] = col[q - 1];
    if (val) val[q] = val[q - 1];
  }
  col[b] = i;
  if (val) val[b] = d;
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

static int tr_diagonal_first(int32_t m, const int64_t *rp64, const int32_t *rp32, int32_t *col, double *val)
{
  if (m == 0) return TILERAP_SUCCESS;
  if (rp64) k_diagonal_first<int64_t><<<tr_blocks(m, 128), 128, 0, cudaStreamLegacy>>>(m, rp64, col, val);
  else k_diagonal_first<int32_t><<<tr_blocks(m, 128), 128, 0, cudaStreamLegacy>>>(m, rp32, col, val);
  return tr_cuda_check_launch("diagonal first");
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

static int tr_sync(const char *what)
{
  cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, what);
}

extern "C" int tr_cuda_tile_to_csr(const tilerap_tile_matrix *T, int64_t *rp64, int32_t *rp32, int32_t *col,
                                   double *val, tilerap_memtype csr_mem, int diag_first)
{
  int err = TILERAP_SUCCESS;
  if (diag_first && (err = tr_check_diagonal(T))) return err; /* before any output */
  if (csr_mem == TILERAP_MEM_DEVICE) {
    if ((err = tr_walk(T, val, -1, rp64, rp32, col))) return err;
    return diag_first ? tr_diagonal_first(T->m, rp64, rp32, col, val) : TILERAP_SUCCESS;
  }
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
  if ((err = tr_walk(T, dval, -1, d64, d32, dcol))) goto done;
  if (diag_first && (err = tr_diagonal_first(T->m, d64, d32, dcol, dval))) goto done;
  /* only once the walk is done: no output is half-written on error */
  if ((err = tr_sync("tile to CSR"))) goto done;
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
  return tr_stage_active(bytes) ? TILERAP_SUCCESS : tr_sync("CSR value upload");
}
