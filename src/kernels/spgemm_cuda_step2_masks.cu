/* Step 2 (CUDA): one 16-lane group per candidate C tile, lane r owning
 * local row r.  The row mask is the OR of B's row masks selected by the
 * bits of A's row masks over the tile's pairs; popcounts give the tile
 * size.  Empty candidates are dropped, a scan gives every kept tile its
 * index, entry offset and pair offset, C is allocated exactly (one read
 * back of the totals) and filled: tile_ptr, tile_col, tile_off, masks,
 * row pointers and idx.  The kept pairs are compacted into the plan, and
 * the C tiles are binned by pair count for the numeric phase's load
 * balance (stable sort on a 2-bit bin: heavy, dense, >4 pairs, <= 4). */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>

/* exclusive-scan element: kept tiles, their pairs and entries */
struct tr_scan {
  int32_t tiles, pairs;
  int64_t nnz;
};
struct tr_scan_add {
  __host__ __device__ tr_scan operator()(const tr_scan &x, const tr_scan &y) const
  {
    tr_scan r;
    r.tiles = x.tiles + y.tiles; r.pairs = x.pairs + y.pairs; r.nnz = x.nnz + y.nnz;
    return r;
  }
};
/* totals summed with integer atomics (exact, order-free) */
struct tr_totals {
  unsigned long long flops, dense, heavy;
};

/* Lanes of a 16-lane group; the whole warp takes part in the shuffles. */
static __global__ void k_masks(tr_dview A, tr_dview B, int64_t ncap, const int32_t *d_ncand, const int32_t *cand_ptr,
                               const int32_t *pair_a, const int32_t *pair_b, int dense_threshold, uint16_t *cmask,
                               tr_scan *sc, tr_totals *tot)
{
  const int r = threadIdx.x & 15;
  const int64_t t = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  const int64_t ncand = *d_ncand;
  const bool active = t < ncand;
  unsigned m = 0;
  long long fl = 0;
  int32_t np = 0;
  if (active) {
    int32_t p0 = cand_ptr[t], p1 = cand_ptr[t + 1];
    np = p1 - p0;
    for (int32_t p = p0; p < p1; p++) {
      const int64_t a = pair_a[p], b = pair_b[p];
      unsigned bits = A.row_mask[16 * a + r];
      const uint16_t *mb = B.row_mask + 16 * b;
      while (bits) {
        int k = __ffs(bits) - 1;
        bits &= bits - 1;
        unsigned x = mb[k];
        m |= x;
        fl += 2 * __popc(x);
      }
    }
    cmask[16 * t + r] = (uint16_t)m;
  }
  int cnt = __popc(m);
  for (int o = 8; o > 0; o >>= 1) {
    cnt += __shfl_xor_sync(0xffffffffu, cnt, o, 16);
    fl += __shfl_xor_sync(0xffffffffu, fl, o, 16);
  }
  if (r == 0 && t <= ncap) {
    tr_scan v = {0, 0, 0};
    if (active && cnt > 0) {
      v.tiles = 1; v.pairs = np; v.nnz = cnt;
      atomicAdd(&tot->flops, (unsigned long long)fl);
      if (cnt > dense_threshold) atomicAdd(&tot->dense, 1ull);
      if (np > TR_HEAVY_PAIRS) atomicAdd(&tot->heavy, 1ull);
    }
    sc[t] = v;
  }
}

/* C's tiles from the kept candidates; pair pointers and bins of the plan */
static __global__ void k_build(int64_t ncap, const int32_t *d_ncand, const int32_t *cand_col, const uint16_t *cmask,
                               const tr_scan *sc, const tr_scan *cnt_sc, int dense_threshold, int32_t *tile_col,
                               int64_t *tile_off, uint16_t *row_mask, uint8_t *row_ptr, uint8_t *idx,
                               int32_t *pair_ptr, uint32_t *bin, int32_t *iota)
{
  const int r = threadIdx.x & 15;
  const int64_t t = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  const int64_t ncand = *d_ncand;
  bool kept = false;
  unsigned m = 0;
  if (t < ncand) {
    kept = sc[t + 1].tiles != sc[t].tiles;
    if (kept) m = cmask[16 * t + r];
  }
  int c = __popc(m), incl = c;
  for (int o = 1; o < 16; o <<= 1) {
    int y = __shfl_up_sync(0xffffffffu, incl, o, 16);
    if (r >= o) incl += y;
  }
  if (kept) {
    const tr_scan x = sc[t];
    const int64_t u = x.tiles, off = x.nnz;
    const int rp = incl - c;
    row_mask[16 * u + r] = (uint16_t)m;
    row_ptr[16 * u + r] = (uint8_t)rp;
    uint8_t *out = idx + off + rp;
    for (int j = 0; m; j++) {
      int col = __ffs(m) - 1;
      m &= m - 1;
      out[j] = (uint8_t)((r << 4) | col);
    }
    if (r == 0) {
      const int32_t np = sc[t + 1].pairs - x.pairs;
      const int64_t len = sc[t + 1].nnz - off;
      tile_col[u] = cand_col[t];
      tile_off[u] = off;
      pair_ptr[u] = x.pairs;
      bin[u] = np > TR_HEAVY_PAIRS ? 0u : len > dense_threshold ? 1u : np > 4 ? 2u : 3u;
      iota[u] = (int32_t)u;
    }
  }
  if (t == ncand && r == 0) { /* closing offsets */
    const tr_scan x = sc[ncand];
    tile_off[x.tiles] = x.nnz;
    pair_ptr[x.tiles] = x.pairs;
  }
  (void)cnt_sc;
}

static __global__ void k_tile_ptr(int32_t tile_rows, const int32_t *row_cand, const tr_scan *sc, int64_t *tile_ptr)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I <= tile_rows) tile_ptr[I] = sc[row_cand[I]].tiles;
}

static __global__ void k_compact_pairs(int64_t np, const int32_t *pair_cand, const int32_t *cand_ptr, const tr_scan *sc,
                                       const int32_t *pa, const int32_t *pb, int32_t *ka, int32_t *kb)
{
  int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= np) return;
  int32_t t = pair_cand[q];
  if (sc[t + 1].tiles == sc[t].tiles) return; /* dropped tile */
  int64_t d = sc[t].pairs + (q - cand_ptr[t]);
  ka[d] = pa[q];
  kb[d] = pb[q];
}

static __global__ void k_zero_tile_ptr(int32_t tile_rows, int64_t *tile_ptr, int64_t *tile_off)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I <= tile_rows) tile_ptr[I] = 0;
  if (I == 0) tile_off[0] = 0;
}

#define TRY_CU(call, what)                                                  \
  do {                                                                      \
    cudaError_t e_ = (call);                                                \
    if (e_ != cudaSuccess) { err = tr_cuda_error(e_, what); goto fail; }    \
  } while (0)
#define TRY(call)                                                           \
  do {                                                                      \
    if ((err = (call))) goto fail;                                          \
  } while (0)

int tr_cuda_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_cuda_cand *cand,
                        tr_tmp *tmp, struct tr_cuda_spgemm *plan, tilerap_tile_matrix **Cout, int64_t *ncand_out,
                        int64_t *pairs_out, int64_t *flops_out, int64_t *dense_out)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  const int64_t np = cand->npairs;
  tilerap_tile_matrix *C = NULL;
  int err = TILERAP_SUCCESS;
  *ncand_out = *pairs_out = *flops_out = *dense_out = 0;
  if (np == 0) { /* no pair: C has no tile */
    TRY(tr_cuda_tile_new(A->m, B->n, 0, 0, s, &C));
    k_zero_tile_ptr<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(TR, C->tile_ptr, C->tile_off);
    TRY(tr_cuda_check_launch("step 2 empty C"));
    *Cout = C;
    return TILERAP_SUCCESS;
  }
  {
    /* Candidates number at most np; for small products the grid is sized by
     * that bound (kernels read the true count on the device), saving a
     * host synchronisation; for large ones the count is read back to keep
     * the scan arrays small. */
    int64_t ncap = np;
    if (np > 65536) {
      int32_t nc = 0;
      TRY_CU(cudaMemcpyAsync(&nc, cand->d_ncand, sizeof nc, cudaMemcpyDeviceToHost, s), "step 2 candidate count");
      TRY_CU(cudaStreamSynchronize(s), "step 2 candidate count");
      ncap = nc;
    }
    uint16_t *cmask;
    tr_scan *sc_in, *sc;
    tr_totals *tot;
    TRY(tr_tmp_alloc(tmp, (void **)&cmask, 16 * (size_t)ncap * sizeof(uint16_t), "step 2 masks"));
    TRY(tr_tmp_alloc(tmp, (void **)&sc_in, ((size_t)ncap + 1) * sizeof(tr_scan), "step 2 counts"));
    TRY(tr_tmp_alloc(tmp, (void **)&sc, ((size_t)ncap + 1) * sizeof(tr_scan), "step 2 offsets"));
    TRY(tr_tmp_alloc(tmp, (void **)&tot, sizeof(tr_totals), "step 2 totals"));
    TRY_CU(cudaMemsetAsync(tot, 0, sizeof(tr_totals), s), "step 2 totals");
    k_masks<<<tr_blocks(16 * (ncap + 1), 128), 128, 0, s>>>(tr_view(A), tr_view(B), ncap, cand->d_ncand,
                                                             cand->cand_ptr, cand->pair_a, cand->pair_b,
                                                             plan->dense_threshold, cmask, sc_in, tot);
    TRY(tr_cuda_check_launch("step 2 masks"));
    size_t tb = 0;
    tr_scan zero = {0, 0, 0};
    TRY_CU(cub::DeviceScan::ExclusiveScan(NULL, tb, sc_in, sc, tr_scan_add(), zero, ncap + 1, s), "step 2 scan");
    void *ts;
    TRY(tr_tmp_alloc(tmp, &ts, tb, "step 2 scan storage"));
    TRY_CU(cub::DeviceScan::ExclusiveScan(ts, tb, sc_in, sc, tr_scan_add(), zero, ncap + 1, s), "step 2 scan");

    /* the one read-back of plan creation's second half: sizes of C */
    struct {
      tr_scan last;
      tr_totals tot;
      int32_t ncand;
    } h;
    TRY_CU(cudaMemcpyAsync(&h.last, sc + ncap, sizeof h.last, cudaMemcpyDeviceToHost, s), "step 2 totals");
    TRY_CU(cudaMemcpyAsync(&h.tot, tot, sizeof h.tot, cudaMemcpyDeviceToHost, s), "step 2 totals");
    TRY_CU(cudaMemcpyAsync(&h.ncand, cand->d_ncand, sizeof h.ncand, cudaMemcpyDeviceToHost, s), "step 2 totals");
    TRY_CU(cudaStreamSynchronize(s), "step 2 totals");
    const int64_t ntiles = h.last.tiles, nnz = h.last.nnz, kpairs = h.last.pairs;

    TRY(tr_cuda_tile_new(A->m, B->n, ntiles, nnz, s, &C));
    TRY(tr_dalloc((void **)&plan->pair_ptr, ((size_t)ntiles + 1) * sizeof(int32_t), s, "plan pair pointers"));
    TRY(tr_dalloc((void **)&plan->pair_a, (size_t)kpairs * sizeof(int32_t), s, "plan pairs"));
    TRY(tr_dalloc((void **)&plan->pair_b, (size_t)kpairs * sizeof(int32_t), s, "plan pairs"));
    TRY(tr_dalloc((void **)&plan->order, (size_t)ntiles * sizeof(int32_t), s, "plan tile order"));
    uint32_t *bin, *bin_sorted;
    int32_t *iota;
    TRY(tr_tmp_alloc(tmp, (void **)&bin, (size_t)ntiles * sizeof(uint32_t), "step 2 bins"));
    TRY(tr_tmp_alloc(tmp, (void **)&bin_sorted, (size_t)ntiles * sizeof(uint32_t), "step 2 bins"));
    TRY(tr_tmp_alloc(tmp, (void **)&iota, (size_t)ntiles * sizeof(int32_t), "step 2 tile ids"));

    k_build<<<tr_blocks(16 * (ncap + 1), 128), 128, 0, s>>>(ncap, cand->d_ncand, cand->cand_col, cmask, sc, sc_in,
                                                             plan->dense_threshold, C->tile_col, C->tile_off,
                                                             C->row_mask, C->row_ptr, C->idx, plan->pair_ptr, bin,
                                                             iota);
    TRY(tr_cuda_check_launch("step 2 build"));
    k_tile_ptr<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(TR, cand->row_cand, sc, C->tile_ptr);
    TRY(tr_cuda_check_launch("step 2 tile pointers"));
    k_compact_pairs<<<tr_blocks(np, 256), 256, 0, s>>>(np, cand->pair_cand, cand->cand_ptr, sc, cand->pair_a,
                                                       cand->pair_b, plan->pair_a, plan->pair_b);
    TRY(tr_cuda_check_launch("step 2 pair compaction"));
    if (ntiles > 0) {
      tb = 0;
      TRY_CU(cub::DeviceRadixSort::SortPairs(NULL, tb, bin, bin_sorted, iota, plan->order, ntiles, 0, 2, s),
             "step 2 binning");
      TRY(tr_tmp_alloc(tmp, &ts, tb, "step 2 binning storage"));
      TRY_CU(cub::DeviceRadixSort::SortPairs(ts, tb, bin, bin_sorted, iota, plan->order, ntiles, 0, 2, s),
             "step 2 binning");
    }
    plan->c_tiles = ntiles;
    plan->c_nnz = nnz;
    plan->nheavy = (int64_t)h.tot.heavy;
    *ncand_out = h.ncand;
    *pairs_out = kpairs;
    *flops_out = (int64_t)h.tot.flops;
    *dense_out = (int64_t)h.tot.dense;
    *Cout = C;
    return TILERAP_SUCCESS;
  }
fail:
  if (C) { tr_cuda_tile_free(C); free(C); }
  return err;
}
