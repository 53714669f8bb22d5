/* Tile transpose on the device, with the value permutation that lets a
 * Galerkin plan refresh P^T's values by one gather.  Sizes are those of T,
 * so nothing is read back: a stable radix sort of the tiles by tile
 * column gives T^T's tile order (tile rows of T ascending inside each new
 * tile row, as on the CPU), a histogram + scan its tile_ptr, a scan of the
 * tile lengths its tile_off; then a 16-lane group per tile transposes the
 * masks (lane c builds new row c) and moves idx/val/perm. */
#include "spgemm_cuda.cuh"
#include "tuning.h"
#include <cub/cub.cuh>
#include <stdlib.h>

static __global__ void k_t_rows(const int64_t *tile_ptr, int32_t tile_rows, const int32_t *tile_col, int64_t nt,
                                int32_t *trow, int32_t *iota, unsigned long long *hist)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I >= tile_rows) return;
  for (int64_t t = tile_ptr[I]; t < tile_ptr[I + 1]; t++) {
    trow[t] = I;
    iota[t] = (int32_t)t;
    atomicAdd(&hist[tile_col[t]], 1ull);
  }
}

static __global__ void k_t_meta(int64_t nt, const int32_t *src_of, const int32_t *trow, const int64_t *tile_off,
                                int32_t *tt_col, int64_t *len)
{
  int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (u > nt) return;
  if (u == nt) { len[nt] = 0; return; }
  int32_t t = src_of[u];
  tt_col[u] = trow[t];
  len[u] = tile_off[t + 1] - tile_off[t];
}

/* A 16-lane group per tile (two tiles per warp).  Lane r loads row r's
 * mask and row pointer once; lane c's new row is gathered by ballots (no
 * reloads of the 16 masks per lane).  Entries are then moved in T^T's
 * order, lane e % 16 taking new entry e: its new row by a search over the
 * lanes' row starts, its old row as the j-th bit of that row's mask, so
 * the writes of idx/val/perm are contiguous across the lanes (lane by new
 * row scattered them: p3d7 200^3's P, 23.8 M entries, 603 us). */
static __global__ void k_t_tiles(int64_t nt, const int32_t *src_of, tr_dview T, const int64_t *tt_off,
                                 uint16_t *tt_mask, uint8_t *tt_rp, uint8_t *tt_idx, double *tt_val, int64_t *perm)
{
  const int lane = threadIdx.x & 15, half = threadIdx.x & 16;
  const int64_t u = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  const bool active = u < nt;
  int32_t t = 0;
  unsigned mr = 0, rpr = 0; /* old row `lane`: mask, first entry */
  if (active) {
    t = src_of[u];
    mr = T.row_mask[16 * (int64_t)t + lane];
    rpr = T.row_ptr[16 * (int64_t)t + lane];
  }
  unsigned mt = 0; /* new row `lane` = old column `lane`: bit r for old row r */
  for (int c = 0; c < 16; c++) {
    const unsigned b = __ballot_sync(0xffffffffu, (mr >> c) & 1u);
    if (c == lane) mt = (b >> half) & 0xffffu;
  }
  const int cnt = __popc(mt);
  int incl = cnt;
  for (int o = 1; o < 16; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o, 16);
    if (lane >= o) incl += y;
  }
  const int rp = incl - cnt; /* new row `lane`'s first entry */
  const int n = __shfl_sync(0xffffffffu, incl, 15, 16); /* the tile's entries */
  const int nmax = max(n, __shfl_xor_sync(0xffffffffu, n, 16));
  int64_t src0 = 0, dst0 = 0;
  if (active) {
    tt_mask[16 * u + lane] = (uint16_t)mt;
    tt_rp[16 * u + lane] = (uint8_t)rp;
    src0 = T.tile_off[t];
    dst0 = tt_off[u];
  }
  for (int base = 0; base < nmax; base += 16) { /* the same trip count in the whole warp (shuffles) */
    const int e = base + lane;
    /* new row c of entry e: the last row starting at or before e */
    int c = 0;
    for (int step = 8; step > 0; step >>= 1) {
      const int start = __shfl_sync(0xffffffffu, rp, c + step, 16);
      if (start <= e) c += step;
    }
    const unsigned mc = __shfl_sync(0xffffffffu, mt, c, 16);
    /* old row r: the (e - rp_c)-th set bit of new row c's mask */
    unsigned rest = mc;
    for (int j = e - __shfl_sync(0xffffffffu, rp, c, 16); j > 0 && rest; j--) rest &= rest - 1;
    const int r = rest ? __ffs(rest) - 1 : 0;
    const unsigned m_r = __shfl_sync(0xffffffffu, mr, r, 16), rp_r = __shfl_sync(0xffffffffu, rpr, r, 16);
    if (active && e < n) {
      const int64_t src = src0 + rp_r + __popc(m_r & ((1u << c) - 1u));
      tt_idx[dst0 + e] = (uint8_t)((c << 4) | r);
      tt_val[dst0 + e] = T.val[src];
      if (perm) perm[dst0 + e] = src;
    }
  }
}

/* Small matrices (coarse levels): T^T's tile order, tile_col, tile_ptr
 * and tile_off in one block instead of a histogram, a radix sort and
 * three scans (six kernels, three CUB dispatches).  Tiles are sorted by
 * (column, row, tile number) in shared memory, which keeps tile rows of
 * T ascending inside each new tile row, as the sorted path does. */
#define TR_T_SMALL_TILES 4096 /* tile numbers below 2^12 */
#define TR_T_SMALL_ROWS (1 << 20)
#define TR_T_SMALL_THREADS 512
static __global__ void __launch_bounds__(TR_T_SMALL_THREADS)
    k_t_small(const int64_t *tile_ptr, int32_t tile_rows, const int32_t *tile_col, const int64_t *tile_off, int64_t nt,
              int32_t tt_rows, int32_t *src_of, int64_t *tt_ptr, int32_t *tt_col, int64_t *tt_off)
{
  typedef cub::BlockScan<int64_t, TR_T_SMALL_THREADS> scan_t;
  __shared__ unsigned long long key[TR_T_SMALL_TILES]; /* column << 32 | row << 12 | tile */
  __shared__ typename scan_t::TempStorage tmp;
  const int n = (int)nt;
  int n2 = 1;
  while (n2 < n) n2 <<= 1;
  for (int I = threadIdx.x; I < tile_rows; I += TR_T_SMALL_THREADS)
    for (int64_t t = tile_ptr[I]; t < tile_ptr[I + 1]; t++) {
      key[t] = (unsigned long long)(uint32_t)tile_col[t] << 32 | (uint32_t)I << 12 | (uint32_t)t;
    }
  for (int q = n + threadIdx.x; q < n2; q += TR_T_SMALL_THREADS) key[q] = ~0ull;
  __syncthreads();
  tr_block_bitonic_sort<TR_T_SMALL_THREADS>(key, n2);
  /* tile_ptr of T^T: tiles of columns below J */
  for (int J = threadIdx.x; J <= tt_rows; J += TR_T_SMALL_THREADS) {
    int lo = 0, hi = n;
    while (lo < hi) {
      const int mid = (lo + hi) >> 1;
      if ((int64_t)(key[mid] >> 32) < J) lo = mid + 1;
      else hi = mid;
    }
    tt_ptr[J] = lo;
  }
  /* new tile u: source tile, tile column (old row), entry offset */
  const int per = (n + TR_T_SMALL_THREADS - 1) / TR_T_SMALL_THREADS;
  const int u0 = min(n, per * (int)threadIdx.x), u1 = min(n, u0 + per);
  int64_t sum = 0, total;
  for (int u = u0; u < u1; u++) {
    const int32_t t = (int32_t)(key[u] & 4095u);
    sum += tile_off[t + 1] - tile_off[t];
  }
  scan_t(tmp).ExclusiveSum(sum, sum, total);
  for (int u = u0; u < u1; u++) {
    const int32_t t = (int32_t)(key[u] & 4095u);
    src_of[u] = t;
    tt_col[u] = (int32_t)((uint32_t)key[u] >> 12);
    tt_off[u] = sum;
    sum += tile_off[t + 1] - tile_off[t];
  }
  if (threadIdx.x == 0) tt_off[n] = total;
}



static int tr_bits(int64_t x)
{
  int b = 1;
  while (b < 32 && ((int64_t)1 << b) <= x) b++;
  return b;
}

/* the tuning table's TILERAP_TRANSPOSE_SORT=1: small matrices too take the sorted path (tests) */
static bool tr_env_transpose_sort(void) { return tr_knob_int(TR_KNOB_TRANSPOSE_SORT) != 0; }

extern "C" int tr_cuda_tile_transpose(const tilerap_tile_matrix *T, tilerap_tile_matrix **Tt_out, int64_t **perm_out,
                                      void *stream)
{
  cudaStream_t s = (cudaStream_t)stream;
  tr_trace_on = tr_knob_int(TR_KNOB_TRACE);
  tilerap_tile_matrix *Tt = NULL;
  int64_t *perm = NULL;
  tr_tmp tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.s = s;
  const int64_t nt = T->num_tiles;
  int err = tr_order_after_legacy(s);
  if (err) return err;
  TR_MARK("transpose start");
  TR_TRY(tr_cuda_tile_new(T->n, T->m, nt, T->nnz, s, &Tt));
  if (perm_out) TR_TRY(tr_dalloc((void **)&perm, (size_t)T->nnz * sizeof(int64_t), s, "transpose permutation"));
  if (nt == 0) {
    tr_cuda_tile_empty_structure(Tt, s);
    TR_TRY(tr_cuda_check_launch("transpose (empty)"));
  } else if (nt <= TR_T_SMALL_TILES && T->tile_rows <= TR_T_SMALL_ROWS && !tr_env_transpose_sort()) {
    int32_t *src_of;
    TR_TRY(tr_tmp_alloc(&tmp, (void **)&src_of, (size_t)nt * sizeof(int32_t), "transpose order"));
    k_t_small<<<1, TR_T_SMALL_THREADS, 0, s>>>(T->tile_ptr, T->tile_rows, T->tile_col, T->tile_off, nt, Tt->tile_rows,
                                               src_of, Tt->tile_ptr, Tt->tile_col, Tt->tile_off);
    TR_TRY(tr_cuda_check_launch("transpose order"));
    k_t_tiles<<<tr_blocks(16 * nt, 128), 128, 0, s>>>(nt, src_of, tr_view(T), Tt->tile_off, Tt->row_mask, Tt->row_ptr,
                                                      Tt->idx, Tt->val, perm);
    TR_TRY(tr_cuda_check_launch("transpose entries"));
  } else {
    const int32_t TC = T->tile_cols; /* tile rows of T^T */
    size_t tb = 0, tb2 = 0, tb3 = 0;
    const int bits = tr_bits(TC);
    TR_TRY_CU(cub::DeviceRadixSort::SortPairs(NULL, tb, (const int32_t *)NULL, (int32_t *)NULL, (const int32_t *)NULL,
                                           (int32_t *)NULL, nt, 0, bits, s), "transpose sort");
    TR_TRY_CU(cub::DeviceScan::ExclusiveSum(NULL, tb2, (int64_t *)NULL, (int64_t *)NULL, (int64_t)TC + 1, s), "transpose scan");
    TR_TRY_CU(cub::DeviceScan::ExclusiveSum(NULL, tb3, (int64_t *)NULL, (int64_t *)NULL, nt + 1, s), "transpose scan");
    if (tb2 > tb) tb = tb2;
    if (tb3 > tb) tb = tb3;
    tr_group g;
    memset(&g, 0, sizeof g);
    const int i_trow = tr_group_add(&g, (size_t)nt * sizeof(int32_t)), i_iota = tr_group_add(&g, (size_t)nt * sizeof(int32_t));
    const int i_ckey = tr_group_add(&g, (size_t)nt * sizeof(int32_t)), i_src = tr_group_add(&g, (size_t)nt * sizeof(int32_t));
    const int i_hist = tr_group_add(&g, ((size_t)TC + 1) * sizeof(unsigned long long));
    const int i_len = tr_group_add(&g, ((size_t)nt + 1) * sizeof(int64_t)), i_ts = tr_group_add(&g, tb);
    TR_TRY(tr_group_alloc(&g, &tmp, s, "transpose"));
    int32_t *trow = (int32_t *)tr_group_at(&g, i_trow), *iota = (int32_t *)tr_group_at(&g, i_iota);
    int32_t *ckey = (int32_t *)tr_group_at(&g, i_ckey), *src_of = (int32_t *)tr_group_at(&g, i_src);
    unsigned long long *hist = (unsigned long long *)tr_group_at(&g, i_hist);
    int64_t *len = (int64_t *)tr_group_at(&g, i_len);
    void *ts = tr_group_at(&g, i_ts);
    TR_TRY_CU(cudaMemsetAsync(hist, 0, ((size_t)TC + 1) * sizeof(unsigned long long), s), "transpose histogram");
    k_t_rows<<<tr_blocks(T->tile_rows, 128), 128, 0, s>>>(T->tile_ptr, T->tile_rows, T->tile_col, nt, trow, iota, hist);
    TR_TRY(tr_cuda_check_launch("transpose rows"));
    TR_TRY_CU(cub::DeviceRadixSort::SortPairs(ts, tb, T->tile_col, ckey, iota, src_of, nt, 0, bits, s), "transpose sort");
    TR_TRY_CU(cub::DeviceScan::ExclusiveSum(ts, tb, (int64_t *)hist, Tt->tile_ptr, (int64_t)TC + 1, s), "transpose scan");
    k_t_meta<<<tr_blocks(nt + 1, 256), 256, 0, s>>>(nt, src_of, trow, T->tile_off, Tt->tile_col, len);
    TR_TRY(tr_cuda_check_launch("transpose tiles"));
    TR_TRY_CU(cub::DeviceScan::ExclusiveSum(ts, tb, len, Tt->tile_off, nt + 1, s), "transpose scan");
    k_t_tiles<<<tr_blocks(16 * nt, 128), 128, 0, s>>>(nt, src_of, tr_view(T), Tt->tile_off, Tt->row_mask, Tt->row_ptr,
                                                      Tt->idx, Tt->val, perm);
    TR_TRY(tr_cuda_check_launch("transpose entries"));
  }
  tr_tmp_free_all(&tmp);
  if (tr_trace_on) { tr_trace("transpose"); tr_trace_flush("transpose"); }
  if ((err = tr_order_legacy_after(s))) goto cleanup;
  *Tt_out = Tt;
  if (perm_out) *perm_out = perm;
  return TILERAP_SUCCESS;
cleanup:
  /* T^T is freed on the legacy stream: nothing queued on a non-blocking s may still write it */
  if (s && s != cudaStreamLegacy) (void)cudaStreamSynchronize(s);
  tr_tmp_free_all(&tmp);
  tr_dfree(perm, s);
  if (Tt) { tr_cuda_tile_free(Tt); free(Tt); }
  return err;
}
