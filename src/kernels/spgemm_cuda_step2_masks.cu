/* Step 2 (CUDA): one 16-lane group per candidate C tile, lane r owning
 * local row r.  The row mask is the OR of B's row masks selected by the
 * bits of A's row masks over the tile's pairs; popcounts give the tile
 * size, and the same walk counts the tile's hits (A entries whose row of
 * B is non-empty: each becomes one work item of the numeric phase).
 * Empty candidates are dropped, one scan gives every kept tile its index,
 * entry, pair, hit and accumulator offsets, C is allocated exactly (one
 * read back of the totals) and filled: tile_ptr, tile_col, tile_off,
 * masks, row pointers and idx.  The kept tiles are cut into chunks (one
 * numeric block each, about TR_CHUNK_WORK hits + accumulator slots) and
 * the hit records are written, one 16-lane group per pair: here, or on the
 * plan's second numeric run from the pair lists the plan keeps
 * (tr_cuda_step2_fill_hits), or never for one-shot products.
 *
 * Tensor-core classification (tc_threshold >= 0): a pair whose scalar
 * multiply-adds (the popcounts of the B rows its A entries select) reach
 * the threshold becomes a tensor-core pair instead of hits; hloc then
 * holds -1 - (its rank among the candidate's tensor-core pairs).  The
 * numeric phase only reads the resulting records. */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>
#include <stdlib.h>
#include <string.h>

#define TR_WALK_MAX_MADDS 32.0
/* longest walk of one lane (pairs + multiply-adds / 16) a first run takes
 * on, in units of the mean bound (512 by default): a pair costs a chain of
 * dependent loads, about a microsecond */
#define TR_WALK_TILE_FACTOR 16.0

/* exclusive-scan element: kept tiles, their pairs, entries, hits and
 * accumulator slots (entries, or 256 for the dense accumulator) */
struct tr_scan {
  int32_t tiles, pairs;
  int64_t nnz, hits, acc, tc;
};
struct tr_scan_add {
  __host__ __device__ tr_scan operator()(const tr_scan &x, const tr_scan &y) const
  {
    tr_scan r;
    r.tiles = x.tiles + y.tiles; r.pairs = x.pairs + y.pairs; r.nnz = x.nnz + y.nnz;
    r.hits = x.hits + y.hits; r.acc = x.acc + y.acc; r.tc = x.tc + y.tc;
    return r;
  }
};
/* totals summed with integer atomics (exact, order-free) */
struct tr_totals {
  unsigned long long flops, dense, maxhits;
  unsigned long long maxwalk; /* longest first-run walk of a lane: pairs + multiply-adds / 16 */
};

/* chunk of a kept tile from its scan record */
static __device__ __forceinline__ int64_t tr_chunk_of(const tr_scan &x)
{
  return (x.hits + x.acc + TR_TC_WORK * x.tc) / TR_CHUNK_WORK;
}

/* Lanes of a 16-lane group; the whole warp takes part in the closing
 * shuffles, a group alone in those of its pair loop.  hloc[p]: hits of
 * the candidate's pairs before p. */
#define TR_MASKS_THREADS 128
static __global__ void __launch_bounds__(TR_MASKS_THREADS)
    k_masks(tr_dview A, tr_dview B, int64_t ncap, const int32_t *d_ncand, const int32_t *cand_ptr,
            const int32_t *pair_a, const int32_t *pair_b, int dense_threshold, int tc_threshold, uint16_t *cmask,
            int32_t *hloc, tr_scan *sc, tr_totals *tot)
{
  const int r = threadIdx.x & 15;
  const unsigned gmask = 0xffffu << (threadIdx.x & 16);
  const int64_t t = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  const int64_t ncand = *d_ncand;
  const bool active = t < ncand;
  unsigned m = 0;
  long long fl = 0, nh = 0;
  int32_t np = 0, ntc = 0;
  if (active) {
    int32_t p0 = cand_ptr[t], p1 = cand_ptr[t + 1];
    np = p1 - p0;
    for (int32_t p = p0; p < p1; p++) {
      const int64_t a = pair_a[p], b = pair_b[p];
      unsigned bits = A.row_mask[16 * a + r];
      const uint16_t *mb = B.row_mask + 16 * b;
      int hm = 0; /* hits | multiply-adds << 16 (at most 256 and 4096 per pair) */
      while (bits) {
        int k = __ffs(bits) - 1;
        bits &= bits - 1;
        unsigned x = mb[k];
        m |= x;
        fl += 2 * __popc(x);
        hm += (x != 0) + (__popc(x) << 16);
      }
      for (int o = 8; o > 0; o >>= 1) hm += __shfl_xor_sync(gmask, hm, o, 16);
      if (tc_threshold >= 0 && (hm >> 16) >= tc_threshold) {
        if (r == 0) hloc[p] = -1 - ntc;
        ntc++;
      } else {
        if (r == 0) hloc[p] = (int32_t)nh;
        nh += hm & 0xffff;
      }
    }
    cmask[16 * t + r] = (uint16_t)m;
  }
  int cnt = __popc(m);
  for (int o = 8; o > 0; o >>= 1) {
    cnt += __shfl_xor_sync(0xffffffffu, cnt, o, 16);
    fl += __shfl_xor_sync(0xffffffffu, fl, o, 16);
  }
  unsigned long long q[4] = {0, 0, 0, 0}; /* flops, dense tiles, max hits, max walk of this tile */
  if (r == 0 && t <= ncap) {
    tr_scan v = {0, 0, 0, 0, 0, 0};
    if (active && cnt > 0) {
      const bool dense = cnt > dense_threshold;
      v.tiles = 1; v.pairs = np; v.nnz = cnt; v.hits = nh; v.acc = dense ? 256 : cnt; v.tc = ntc;
      q[0] = (unsigned long long)fl; q[1] = dense; q[2] = (unsigned long long)nh;
      q[3] = (unsigned long long)(np + fl / 32);
    }
    sc[t] = v;
  }
  /* Totals: one atomic per block and total.  Four same-address atomics
   * per C tile bound this kernel: the L2 serialises them (level-0 AP of
   * 3D 7-point at 200^3, 2.8 M tiles: 6.6 ms with them, 1.8 ms without). */
  for (int o = 16; o > 0; o >>= 1) {
    q[0] += __shfl_xor_sync(0xffffffffu, q[0], o);
    q[1] += __shfl_xor_sync(0xffffffffu, q[1], o);
    q[2] = max(q[2], __shfl_xor_sync(0xffffffffu, q[2], o));
    q[3] = max(q[3], __shfl_xor_sync(0xffffffffu, q[3], o));
  }
  __shared__ unsigned long long red[4][TR_MASKS_THREADS / 32];
  const int w = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0)
    for (int i = 0; i < 4; i++) red[i][w] = q[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int j = 1; j < TR_MASKS_THREADS / 32; j++) {
      q[0] += red[0][j]; q[1] += red[1][j];
      q[2] = max(q[2], red[2][j]); q[3] = max(q[3], red[3][j]);
    }
    if (q[0]) atomicAdd(&tot->flops, q[0]);
    if (q[1]) atomicAdd(&tot->dense, q[1]);
    if (q[2]) atomicMax(&tot->maxhits, q[2]);
    if (q[3]) atomicMax(&tot->maxwalk, q[3]);
  }
}

/* C's tiles from the kept candidates; the scan record of every kept tile */
static __global__ void k_build(const int32_t *d_ncand, const int32_t *cand_col, const uint16_t *cmask,
                               const tr_scan *sc, int32_t *tile_col, int64_t *tile_off, uint16_t *row_mask,
                               uint8_t *row_ptr, uint8_t *idx, tr_scan *ks, int32_t *cand_tile)
{
  const int r = threadIdx.x & 15;
  const int64_t t = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  const int64_t ncand = *d_ncand;
  bool kept = false;
  unsigned m = 0;
  if (t < ncand) {
    kept = sc[t + 1].tiles != sc[t].tiles;
    if (kept) m = cmask[16 * t + r];
    if (cand_tile && r == 0) cand_tile[t] = kept ? sc[t].tiles : -1;
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
      tile_col[u] = cand_col[t];
      tile_off[u] = off;
      ks[u] = x;
    }
  }
  if (t == ncand && r == 0) { /* closing offsets */
    const tr_scan x = sc[ncand];
    tile_off[x.tiles] = x.nnz;
    ks[x.tiles] = x;
  }
}

static __global__ void k_tile_ptr(int32_t tile_rows, const int32_t *row_cand, const tr_scan *sc, int64_t *tile_ptr)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I <= tile_rows) tile_ptr[I] = sc[row_cand[I]].tiles;
}

/* Chunk j holds the kept tiles whose work prefix (hits + accumulator
 * slots before them) lies in [j, j+1) * TR_CHUNK_WORK; chunks no tile
 * starts in stay empty (zeroed).  Thread u looks at tiles u-1 and u. */
static __global__ void k_chunks(int64_t ntiles, const tr_scan *ks, int dense_threshold, tr_chunk *ch)
{
  const int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (u > ntiles) return;
  const tr_scan x = ks[u];
  const int64_t j = tr_chunk_of(x), jp = u > 0 ? tr_chunk_of(ks[u - 1]) : -1;
  if (u < ntiles && j != jp) {
    ch[j].tile0 = (int32_t)u; ch[j].hit0 = x.hits; ch[j].acc0 = x.acc; ch[j].tc0 = x.tc;
  }
  if (u > 0 && (u == ntiles || j != jp)) {
    ch[jp].tile1 = (int32_t)u; ch[jp].hit1 = x.hits; ch[jp].acc1 = x.acc; ch[jp].tc1 = x.tc;
  }
  if (u < ntiles && ks[u + 1].nnz - x.nnz > dense_threshold) ch[j].dense = 1; /* same value from every writer */
}

/* Hit records of every pair of a kept tile: one 16-lane group per pair,
 * lane r walking row r of the pair's A tile; records ordered by pair, row,
 * entry (the order of the candidate's pairs, as counted in k_masks). */
static __global__ void k_fill_hits(tr_dview A, tr_dview B, int64_t np, const int32_t *pair_cand, const int32_t *cand_ptr,
                                   const int32_t *pair_a, const int32_t *pair_b, const int32_t *hloc, const tr_scan *sc,
                                   const tr_chunk *ch, const uint16_t *c_mask, const uint8_t *c_row_ptr,
                                   int dense_threshold, tr_hit *hits, tr_tc *tcs, uint16_t *acc_loc)
{
  const int r = threadIdx.x & 15;
  const int64_t q = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  bool work = false;
  int32_t t = 0, hl = 0;
  int64_t a = 0, b = 0;
  unsigned abits = 0;
  int n = 0;
  if (q < np) {
    t = pair_cand[q];
    work = sc[t + 1].tiles != sc[t].tiles;
    if (work) {
      a = pair_a[q]; b = pair_b[q];
      hl = hloc[q];
      if (hl >= 0) { /* tensor-core pairs (hl < 0) have no hits */
        abits = A.row_mask[16 * a + r];
        for (unsigned bits = abits; bits; bits &= bits - 1) n += B.row_mask[16 * b + __ffs(bits) - 1] != 0;
      }
    }
  }
  int incl = n;
  for (int o = 1; o < 16; o <<= 1) {
    int y = __shfl_up_sync(0xffffffffu, incl, o, 16);
    if (r >= o) incl += y;
  }
  if (!work) return;
  const tr_scan x = sc[t];
  const int64_t u = x.tiles;
  const bool dense = sc[t + 1].nnz - x.nnz > dense_threshold;
  const uint32_t slot = (uint32_t)(x.acc - ch[tr_chunk_of(x)].acc0);
  if (r == 0 && q == cand_ptr[t]) acc_loc[u] = (uint16_t)slot;
  if (hl < 0) {
    if (r == 0) {
      tr_tc e;
      e.a = (int32_t)a; e.b = (int32_t)b; e.u = (int32_t)u;
      e.slot = slot | (dense ? TR_TC_DENSE : 0u);
      tcs[x.tc + (-1 - hl)] = e;
    }
    return;
  }
  if (!n) return;
  const uint32_t cm = dense ? 0xffffu : c_mask[16 * u + r];
  const uint32_t loc = slot + (dense ? 16u * r : c_row_ptr[16 * u + r]);
  int64_t h = x.hits + hl + (incl - n);
  const uint32_t a0 = (uint32_t)(A.tile_off[a] + A.row_ptr[16 * a + r]);
  const uint32_t b0 = (uint32_t)B.tile_off[b];
  for (uint32_t j = 0; abits; j++) {
    const int k = __ffs(abits) - 1;
    abits &= abits - 1;
    const unsigned bm = B.row_mask[16 * b + k];
    if (!bm) continue;
    tr_hit e;
    e.a = a0 + j;
    e.b = b0 + B.row_ptr[16 * b + k];
    e.masks = bm | cm << 16;
    e.loc = loc;
    hits[h++] = e;
  }
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

/* Largest mean walk of a lane (pairs + multiply-adds / 16 per C tile)
 * for which a plan's first run walks the pairs.  Each pair is a chain of
 * dependent loads for every lane, while the hit path spreads pairs over
 * lanes; measured on the H100 (Nsight Compute, walk against hit fill +
 * hit numeric run): walk faster at 8-13 (level-0 AP of 3D 7-point: 675 vs
 * 719 us at 101^3), hits faster from about 24 (level-0 P^T(AP): 881 vs
 * 499 us; level-1 AP at 200^3, 24: 636 vs 558 us).
 * TILERAP_CUDA_WALK_MEAN=x sets it (measurements). */
#define TR_WALK_MEAN 16.0
static double tr_walk_mean(void)
{
  const char *w = getenv("TILERAP_CUDA_WALK_MEAN");
  if (w && *w) return atof(w);
  return TR_WALK_MEAN;
}

/* Largest mean multiply-adds per lane (flops / 2 / 16 / C tiles) for
 * which a plan's first run walks the pairs (and, times
 * TR_WALK_TILE_FACTOR, the longest walk of a single lane).  TILERAP_CUDA_HITS=plan: hits
 * in the plan always (the walk never runs); TILERAP_CUDA_WALK_MAX=x sets
 * the bound (measurements). */
static double tr_walk_max(void)
{
  const char *when = getenv("TILERAP_CUDA_HITS");
  if (when && !strcmp(when, "plan")) return -1.0;
  const char *w = getenv("TILERAP_CUDA_WALK_MAX");
  if (w && *w) return atof(w);
  return TR_WALK_MAX_MADDS;
}

int tr_cuda_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_cuda_cand *cand,
                        tr_tmp *tmp, struct tr_cuda_spgemm *plan, tilerap_tile_matrix **Cout, int64_t *ncand_out,
                        int64_t *pairs_out, int64_t *flops_out, int64_t *dense_out, int64_t *tc_out)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  const int64_t np = cand->npairs;
  tilerap_tile_matrix *C = NULL;
  int err = TILERAP_SUCCESS;
  *ncand_out = *pairs_out = *flops_out = *dense_out = *tc_out = 0;
  if (np == 0) { /* no pair: C has no tile */
    TRY(tr_cuda_tile_new(A->m, B->n, 0, 0, s, &C));
    k_zero_tile_ptr<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(TR, C->tile_ptr, C->tile_off);
    TRY(tr_cuda_check_launch("step 2 empty C"));
    *Cout = C;
    return TILERAP_SUCCESS;
  }
  /* hit records index values with 32 bits */
  if (A->nnz > (int64_t)UINT32_MAX || B->nnz > (int64_t)UINT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "CUDA SpGEMM: operands with %lld and %lld entries (engine limit 2^32)",
                             (long long)A->nnz, (long long)B->nnz);
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
    int32_t *hloc;
    tr_scan *sc_in, *sc;
    tr_totals *tot;
    TRY(tr_tmp_alloc(tmp, (void **)&cmask, 16 * (size_t)ncap * sizeof(uint16_t), "step 2 masks"));
    TRY(tr_tmp_alloc(tmp, (void **)&hloc, (size_t)np * sizeof(int32_t), "step 2 hit offsets"));
    TRY(tr_tmp_alloc(tmp, (void **)&sc_in, ((size_t)ncap + 1) * sizeof(tr_scan), "step 2 counts"));
    TRY(tr_tmp_alloc(tmp, (void **)&sc, ((size_t)ncap + 1) * sizeof(tr_scan), "step 2 offsets"));
    TRY(tr_tmp_alloc(tmp, (void **)&tot, sizeof(tr_totals), "step 2 totals"));
    TRY_CU(cudaMemsetAsync(tot, 0, sizeof(tr_totals), s), "step 2 totals");
    k_masks<<<tr_blocks(16 * (ncap + 1), TR_MASKS_THREADS), TR_MASKS_THREADS, 0, s>>>(
        tr_view(A), tr_view(B), ncap, cand->d_ncand, cand->cand_ptr, cand->pair_a, cand->pair_b, plan->dense_threshold,
        plan->tc_threshold, cmask, hloc, sc_in, tot);
    TRY(tr_cuda_check_launch("step 2 masks"));
    size_t tb = 0;
    tr_scan zero = {0, 0, 0, 0, 0, 0};
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
    const int64_t ntiles = h.last.tiles, nnz = h.last.nnz, kpairs = h.last.pairs, nhits = h.last.hits, ntc = h.last.tc;
    if (h.tot.maxhits > (unsigned long long)INT32_MAX) {
      err = tilerap_set_error(TILERAP_ERR_OVERFLOW, "CUDA SpGEMM: a C tile has %llu hits (engine limit 2^31)",
                              h.tot.maxhits);
      goto fail;
    }
    const int64_t nchunks = ntiles > 0 ? (nhits + h.last.acc + TR_TC_WORK * ntc) / TR_CHUNK_WORK + 1 : 0;
    /* hits later (second numeric run) or never (one-shot): the numeric
     * phase walks the pairs until then, when a lane's walk is short (a lane
     * sums its row's products alone: on denser coarse operators, 100+
     * multiply-adds a lane, the walk was 1.5x slower than hits + their
     * numeric run), and when no single C tile's walk is long (a dense row
     * of A can give one tile thousands of pairs, and its group alone would
     * set the run's length; the hit path splits it into chunks).  Plans
     * with tensor-core pairs make hits now: only the hit path runs those
     * pairs on tensor cores. */
    const double walk_max = tr_walk_max();
    plan->pairs_walk = ntc == 0 && ntiles > 0 && (double)h.tot.flops <= 2.0 * 16.0 * walk_max * (double)ntiles &&
                       (double)h.tot.maxwalk <= TR_WALK_TILE_FACTOR * walk_max &&
                       (double)kpairs + (double)h.tot.flops / 32.0 <= tr_walk_mean() * (double)ntiles;
    const int no_hits = plan->pairs_walk && plan->one_shot;

    TRY(tr_cuda_tile_new(A->m, B->n, ntiles, nnz, s, &C));
    if (!no_hits) {
      TRY(tr_dalloc((void **)&plan->hits, (size_t)nhits * sizeof(tr_hit), s, "plan hits"));
      TRY(tr_dalloc((void **)&plan->tcs, (size_t)ntc * sizeof(tr_tc), s, "plan tensor-core pairs"));
      TRY(tr_dalloc((void **)&plan->chunks, (size_t)nchunks * sizeof(tr_chunk), s, "plan chunks"));
      TRY(tr_dalloc((void **)&plan->acc_loc, (size_t)ntiles * sizeof(uint16_t), s, "plan tile slots"));
    }
    tr_scan *ks;
    TRY(tr_tmp_alloc(tmp, (void **)&ks, ((size_t)ntiles + 1) * sizeof(tr_scan), "step 2 kept tiles"));
    int32_t *cand_tile = NULL;
    if (plan->pairs_walk) TRY(tr_tmp_alloc(tmp, (void **)&cand_tile, ((size_t)ncap + 1) * sizeof(int32_t), "step 2 candidate tiles"));

    k_build<<<tr_blocks(16 * (ncap + 1), 128), 128, 0, s>>>(cand->d_ncand, cand->cand_col, cmask, sc, C->tile_col,
                                                             C->tile_off, C->row_mask, C->row_ptr, C->idx, ks,
                                                             cand_tile);
    TRY(tr_cuda_check_launch("step 2 build"));
    k_tile_ptr<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(TR, cand->row_cand, sc, C->tile_ptr);
    TRY(tr_cuda_check_launch("step 2 tile pointers"));
    if (ntiles > 0 && !no_hits) {
      TRY_CU(cudaMemsetAsync(plan->chunks, 0, (size_t)nchunks * sizeof(tr_chunk), s), "step 2 chunks");
      k_chunks<<<tr_blocks(ntiles + 1, 256), 256, 0, s>>>(ntiles, ks, plan->dense_threshold, plan->chunks);
      TRY(tr_cuda_check_launch("step 2 chunks"));
    }
    plan->np = np;
    plan->ncap = ncap;
    if (plan->pairs_walk) { /* the plan keeps the pair lists (owned once handed over) */
#define TR_KEEP(field, ptr) do { TRY(tr_tmp_keep(tmp, (ptr))); plan->field = (ptr); } while (0)
      TR_KEEP(pair_a, cand->pair_a); TR_KEEP(pair_b, cand->pair_b); TR_KEEP(cand_ptr, cand->cand_ptr);
      TR_KEEP(cand_tile, cand_tile); TR_KEEP(d_ncand, cand->d_ncand);
      if (!plan->one_shot) { /* and what the deferred hits read */
        TR_KEEP(pair_cand, cand->pair_cand); TR_KEEP(hloc, hloc); TR_KEEP(scan, (void *)sc);
      }
#undef TR_KEEP
    } else if (ntiles > 0) {
      k_fill_hits<<<tr_blocks(16 * np, 128), 128, 0, s>>>(tr_view(A), tr_view(B), np, cand->pair_cand, cand->cand_ptr,
                                                          cand->pair_a, cand->pair_b, hloc, sc, plan->chunks,
                                                          C->row_mask, C->row_ptr, plan->dense_threshold, plan->hits,
                                                          plan->tcs, plan->acc_loc);
      TRY(tr_cuda_check_launch("step 2 hits"));
    }
    plan->c_tiles = ntiles;
    plan->c_nnz = nnz;
    plan->nhits = nhits;
    plan->nchunks = nchunks;
    plan->ntc = ntc;
    *ncand_out = h.ncand;
    *pairs_out = kpairs;
    *flops_out = (int64_t)h.tot.flops;
    *dense_out = (int64_t)h.tot.dense;
    *tc_out = ntc;
    *Cout = C;
    return TILERAP_SUCCESS;
  }
fail:
  if (C) { tr_cuda_tile_free(C); free(C); }
  return err;
}

int tr_cuda_step2_fill_hits(const struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                            const tilerap_tile_matrix *C)
{
  if (!P->scan || !P->hits) return tilerap_set_error(TILERAP_ERR_INVALID, "internal: plan kept no pair lists for its hits");
  k_fill_hits<<<tr_blocks(16 * P->np, 128), 128, 0, P->stream>>>(
      tr_view(A), tr_view(B), P->np, P->pair_cand, P->cand_ptr, P->pair_a, P->pair_b, P->hloc, (const tr_scan *)P->scan,
      P->chunks, C->row_mask, C->row_ptr, P->dense_threshold, P->hits, P->tcs, P->acc_loc);
  return tr_cuda_check_launch("deferred hits");
}
