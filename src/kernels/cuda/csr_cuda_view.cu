/* CSR views of device tile matrices for the CSR path (csr_path.c): row
 * pointers, columns and, for every CSR entry, the position of its value
 * in the tile matrix, so products read the tiles' own values and write
 * C's in place.  Work is spread over tiles, never over rows or tile rows,
 * so a dense row costs what its tiles cost.  Entries
 * of a view row come in no particular order (the hash products do not
 * need one); C's positions are for its sorted CSR. */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>

/* pass 0: row lengths (atomics into len); pass 1: entries placed through
 * the row cursors.  A thread per tile (one search for its tile row, then
 * its 16 rows); a warp-aggregated variant (one atomic per row and warp)
 * measured slower: its shuffles cost more than the atomics it saved.
 * transpose: the view of T^T. */
static __global__ void k_view(int pass, int transpose, int32_t TR, int64_t ntiles, tr_dview T, int64_t *len,
                              int32_t *col, int64_t *vidx)
{
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= ntiles) return;
  const int32_t I = (int32_t)tr_tile_of_entry(T.tile_ptr, 0, TR, t), J = T.tile_col[t]; /* t's tile row */
  const int64_t off = T.tile_off[t];
  for (int r = 0; r < 16; r++) {
    unsigned mask = T.row_mask[16 * t + r];
    if (!mask) continue;
    const int64_t q = off + T.row_ptr[16 * t + r];
    if (!transpose) {
      const int n = __popc(mask);
      const int64_t at = atomicAdd((unsigned long long *)&len[16 * I + r], (unsigned long long)n);
      if (pass == 0) continue;
      for (int e = 0; mask; e++, mask &= mask - 1) {
        col[at + e] = 16 * J + __ffs(mask) - 1;
        vidx[at + e] = q + e;
      }
      continue;
    }
    for (int e = 0; mask; e++, mask &= mask - 1) {
      const int c = __ffs(mask) - 1;
      const int64_t at = atomicAdd((unsigned long long *)&len[16 * J + c], 1ull);
      if (pass == 0) continue;
      col[at] = 16 * I + r;
      vidx[at] = q + e;
    }
  }
}

extern "C" int tr_cuda_csr_view(const tilerap_tile_matrix *T, int transpose, void *stream, int64_t **rp_out,
                                int32_t **col_out, int64_t **vidx_out)
{
  const cudaStream_t s = (cudaStream_t)stream;
  const int32_t rows = transpose ? T->n : T->m;
  const int64_t w = T->num_tiles;
  int64_t *rp = NULL, *cur = NULL, *vidx = NULL;
  int32_t *col = NULL;
  void *scan = NULL;
  size_t scan_bytes = 0;
  int err = TILERAP_SUCCESS;
  *rp_out = NULL; *col_out = NULL; *vidx_out = NULL;
  TR_TRY(tr_order_after_legacy(s)); /* T may come from the legacy stream */
  TR_TRY(tr_dalloc((void **)&rp, ((size_t)rows + 1) * sizeof(int64_t), s, "CSR view row pointers"));
  TR_TRY(tr_dalloc((void **)&cur, ((size_t)rows + 1) * sizeof(int64_t), s, "CSR view cursors"));
  TR_TRY(tr_dalloc((void **)&col, (size_t)T->nnz * sizeof(int32_t), s, "CSR view columns"));
  TR_TRY(tr_dalloc((void **)&vidx, (size_t)T->nnz * sizeof(int64_t), s, "CSR view positions"));
  TR_TRY_CU(cudaMemsetAsync(cur, 0, ((size_t)rows + 1) * sizeof(int64_t), s), "CSR view");
  if (w > 0) {
    k_view<<<tr_blocks(w, 256), 256, 0, s>>>(0, transpose, T->tile_rows, T->num_tiles, tr_view(T), cur, NULL, NULL);
    TR_TRY(tr_cuda_check_launch("CSR view count"));
  }
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(NULL, scan_bytes, cur, rp, rows + 1, s), "CSR view scan");
  TR_TRY(tr_dalloc(&scan, scan_bytes, s, "scan storage"));
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(scan, scan_bytes, cur, rp, rows + 1, s), "CSR view scan");
  TR_TRY_CU(cudaMemcpyAsync(cur, rp, ((size_t)rows + 1) * sizeof(int64_t), cudaMemcpyDeviceToDevice, s), "CSR view");
  if (w > 0) {
    k_view<<<tr_blocks(w, 256), 256, 0, s>>>(1, transpose, T->tile_rows, T->num_tiles, tr_view(T), cur, col, vidx);
    TR_TRY(tr_cuda_check_launch("CSR view fill"));
  }
  *rp_out = rp; *col_out = col; *vidx_out = vidx;
  rp = NULL; col = NULL; vidx = NULL;
cleanup:
  tr_dfree(rp, s); tr_dfree(col, s); tr_dfree(vidx, s); tr_dfree(cur, s); tr_dfree(scan, s);
  return err;
}

/* pos[p]: where entry p of T's sorted CSR (rp, col) sits in T's tiles */
static __global__ void k_positions(int32_t m, int64_t nnz, const int64_t *__restrict__ rp,
                                   const int32_t *__restrict__ col, tr_dview T, int64_t *pos)
{
  const int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (p >= nnz) return;
  /* row: last i with rp[i] <= p (empty rows share their pointer) */
  const int32_t i = (int32_t)tr_tile_of_entry(rp, 0, m, p), c = col[p];
  const int64_t t = tr_find_tile(T.tile_ptr, T.tile_col, i >> 4, c >> 4);
  const int64_t w = 16 * t + (i & 15);
  pos[p] = T.tile_off[t] + T.row_ptr[w] + __popc(T.row_mask[w] & ((1u << (c & 15)) - 1u));
}

extern "C" int tr_cuda_csr_positions(const tilerap_tile_matrix *T, const int64_t *rp, const int32_t *col, void *stream,
                                     int64_t **pos)
{
  const cudaStream_t s = (cudaStream_t)stream;
  int err = tr_dalloc((void **)pos, (size_t)T->nnz * sizeof(int64_t), s, "CSR positions");
  if (err || T->nnz == 0) return err;
  k_positions<<<tr_blocks(T->nnz, 256), 256, 0, s>>>(T->m, T->nnz, rp, col, tr_view(T), *pos);
  return tr_cuda_check_launch("CSR positions");
}

