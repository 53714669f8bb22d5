/* Galerkin product by scatter (CUDA): the plan's state of both halves,
 * and the second half, C = P^T (AP), read straight from P's own tiles
 * (the first half, AP = A * P: ptap_cuda_scatter_ap.cu).
 *
 * The planned product P^T * AP streams a 16-byte hit record per (P^T
 * entry, AP row) pair (about 170 MB at level 0 of a 101^3 7-point
 * hierarchy) and needs P^T's values refreshed by a gather on every run.
 * Here each AP tile (K, J) adds its products into C directly:
 *   C(I, J)(i, c) += P(K, I)(r, i) * AP(K, J)(r, c)
 * for every stored entry (r, i) of P's tile row K (contiguous in P's
 * arrays) and every stored (r, c) of the AP tile.  One warp per AP tile:
 * lanes take P's entries of tile row K, the C tile of each (I, J) is
 * found once per P tile (a binary search in C's tile row I, one lane
 * each), and the sums go into C with fp64 global atomics (C is zeroed
 * first).  The only reads are P, AP and C's structure; nothing is written
 * but C.  Sums are exact up to rounding order: the results match the
 * CPU engine to rounding, not bitwise (as the hit path's shared-memory
 * atomics do).  The planned P^T * AP still gives C's structure. */
#include "spgemm_cuda.cuh"

#define TR_SCATTER_THREADS 256

struct tr_cuda_scatter {
  cudaStream_t stream;
  int nonblocking;
  int64_t ap_tiles, a_tiles;
  int32_t *ap_row; /* [ap_tiles] tile row of each AP tile, then [a_tiles] of each A tile */
  int32_t *a_row;
  int with_a; /* made with A: the AP scatter can run */
};

/* tile row of every tile: row[t] = K for t in [tile_ptr[K], tile_ptr[K+1]) */
static __global__ void k_tile_rows(int32_t tile_rows, const int64_t *__restrict__ tile_ptr, int32_t *__restrict__ row)
{
  const int32_t K = (int32_t)(blockIdx.x * (int64_t)blockDim.x + threadIdx.x);
  if (K >= tile_rows) return;
  for (int64_t t = tile_ptr[K]; t < tile_ptr[K + 1]; t++) row[t] = K;
}

static __global__ void __launch_bounds__(TR_SCATTER_THREADS)
    k_ptap_scatter(int64_t ap_tiles, const int32_t *__restrict__ ap_row, tr_dview P, tr_dview AP,
                   const int64_t *__restrict__ ctile_ptr, const int32_t *__restrict__ ctile_col,
                   const int64_t *__restrict__ ctile_off, const uint16_t *__restrict__ cmask,
                   const uint8_t *__restrict__ crow_ptr, double *__restrict__ cval)
{
  const int lane = threadIdx.x & 31;
  const int64_t t = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  if (t >= ap_tiles) return; /* warp-uniform */
  const int32_t K = ap_row[t], J = AP.tile_col[t];
  const int64_t p0 = P.tile_ptr[K], p1 = P.tile_ptr[K + 1];
  if (p0 == p1) return;
  const int64_t e0 = P.tile_off[p0], e1 = P.tile_off[p1];
  const int64_t apo = AP.tile_off[t];
  /* C tile of (I, J) for the first 32 P tiles of the row, one per lane */
  int64_t myct = -1;
  if (lane < p1 - p0) myct = tr_find_tile(ctile_ptr, ctile_col, P.tile_col[p0 + lane], J);
  for (int64_t base = e0; base < e1; base += 32) { /* same trip count in every lane */
    const int64_t q = base + lane;
    const bool on = q < e1;
    const int64_t tp = on ? tr_tile_of_entry(P.tile_off, p0, p1, q) : p0;
    const int64_t tl = tp - p0;
    int64_t ct = __shfl_sync(0xffffffffu, myct, (int)(tl & 31));
    if (!on) continue;
    if (tl >= 32) ct = tr_find_tile(ctile_ptr, ctile_col, P.tile_col[tp], J);
    const unsigned id = P.idx[q];
    const int r = (int)(id >> 4), i = (int)(id & 15u);
    unsigned m = AP.row_mask[16 * t + r];
    if (!m || ct < 0) continue; /* ct < 0 only with m == 0: C holds every structural product */
    const double pv = P.val[q];
    const unsigned cm = cmask[16 * ct + i];
    double *out = cval + ctile_off[ct] + crow_ptr[16 * ct + i];
    const double *apv = AP.val + apo + AP.row_ptr[16 * t + r];
    for (int j = 0; m; j++) {
      const int c = __ffs(m) - 1;
      m &= m - 1;
      atomicAdd(out + __popc(cm & ((1u << c) - 1u)), pv * apv[j]);
    }
  }
}

extern "C" int tr_cuda_scatter_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *AP, void *stream,
                                      tr_cuda_scatter **S)
{
  *S = NULL;
  if ((A && A->memtype != TILERAP_MEM_DEVICE) || AP->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "CUDA Galerkin scatter: A and AP must be device matrices");
  if (A && A->tile_rows != AP->tile_rows)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "CUDA Galerkin scatter: A and AP have different tile rows");
  tr_cuda_scatter *X = (tr_cuda_scatter *)tilerap_host_calloc(1, sizeof *X);
  if (!X) return TILERAP_ERR_NOMEM;
  X->stream = (cudaStream_t)stream;
  X->nonblocking = tr_stream_nonblocking(X->stream);
  X->ap_tiles = AP->num_tiles;
  X->a_tiles = A ? A->num_tiles : 0;
  int err = X->nonblocking ? tr_order_after_legacy(X->stream) : TILERAP_SUCCESS;
  const size_t n = (size_t)(X->ap_tiles + X->a_tiles);
  if (!err && n > 0) err = tr_dalloc((void **)&X->ap_row, n * sizeof(int32_t), X->stream, "AP and A tile rows");
  X->with_a = A != NULL;
  X->a_row = X->ap_row ? X->ap_row + X->ap_tiles : NULL;
  if (!err && X->ap_tiles > 0) {
    k_tile_rows<<<tr_blocks(AP->tile_rows, 256), 256, 0, X->stream>>>(AP->tile_rows, AP->tile_ptr, X->ap_row);
    err = tr_cuda_check_launch("AP tile rows");
  }
  if (!err && X->a_tiles > 0) {
    k_tile_rows<<<tr_blocks(A->tile_rows, 256), 256, 0, X->stream>>>(A->tile_rows, A->tile_ptr, X->a_row);
    err = tr_cuda_check_launch("A tile rows");
  }
  if (err) { tr_cuda_scatter_destroy(X); return err; }
  *S = X;
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_scatter_ap(const tr_cuda_scatter *S, const tilerap_tile_matrix *A, const tilerap_tile_matrix *P,
                                  tilerap_tile_matrix *AP)
{
  if (A->memtype != TILERAP_MEM_DEVICE || P->memtype != TILERAP_MEM_DEVICE || AP->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "CUDA Galerkin scatter: A, P and AP must be device matrices");
  if (!S->with_a)
    return tilerap_set_error(TILERAP_ERR_INVALID, "CUDA Galerkin scatter: made without A, so no AP scatter");
  if (A->num_tiles != S->a_tiles || AP->num_tiles != S->ap_tiles || A->n != P->m || AP->n != P->n)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "CUDA Galerkin scatter: A, P or AP differ from the plan's");
  if (S->nonblocking) TR_RET(tr_order_after_legacy(S->stream));
  TR_RET(tr_cuda_scatter_ap_launch(S->a_tiles, S->a_row, A, P, AP, S->stream));
  return S->nonblocking ? tr_order_legacy_after(S->stream) : TILERAP_SUCCESS;
}

extern "C" int tr_cuda_scatter_run(const tr_cuda_scatter *S, const tilerap_tile_matrix *P,
                                   const tilerap_tile_matrix *AP, tilerap_tile_matrix *C)
{
  if (P->memtype != TILERAP_MEM_DEVICE || AP->memtype != TILERAP_MEM_DEVICE || C->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "CUDA Galerkin scatter: P, AP and C must be device matrices");
  if (AP->num_tiles != S->ap_tiles || P->m != AP->m || C->m != P->n || C->n != AP->n)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "CUDA Galerkin scatter: P, AP or C differ from the plan's");
  if (S->nonblocking) TR_RET(tr_order_after_legacy(S->stream));
  if (C->nnz > 0) TR_RET_CU(cudaMemsetAsync(C->val, 0, (size_t)C->nnz * sizeof(double), S->stream), "zeroing C");
  if (S->ap_tiles > 0 && C->nnz > 0) {
    k_ptap_scatter<<<tr_blocks(32 * S->ap_tiles, TR_SCATTER_THREADS), TR_SCATTER_THREADS, 0, S->stream>>>(
        S->ap_tiles, S->ap_row, tr_view(P), tr_view(AP), C->tile_ptr, C->tile_col, C->tile_off, C->row_mask, C->row_ptr,
        C->val);
    TR_RET(tr_cuda_check_launch("Galerkin scatter"));
  }
  return S->nonblocking ? tr_order_legacy_after(S->stream) : TILERAP_SUCCESS;
}

extern "C" void tr_cuda_scatter_destroy(tr_cuda_scatter *S)
{
  if (!S) return;
  tr_dfree(S->ap_row, S->stream);
  free(S);
}
