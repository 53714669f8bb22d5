/* Step 2 (CUDA): one 16-lane group per candidate C tile, lane r owning
 * local row r.  The row mask is the OR of B's row masks selected by the
 * bits of A's row masks over the tile's pairs; popcounts give the tile
 * size, and the same walk counts the tile's hits (A entries whose row of
 * B is non-empty: each becomes one work item of the numeric phase).
 * Empty candidates are dropped, one scan gives every kept tile its index,
 * entry, pair, hit and accumulator offsets, C is allocated exactly (one
 * read back of the totals) and filled: tile_ptr, tile_col, tile_off,
 * masks, row pointers and idx.  The kept tiles are cut into chunks (one
 * numeric block each, about TR_CHUNK_WORK hits + accumulator slots, fewer
 * for small products: TR_CHUNK_MIN / TR_CHUNK_SPREAD) and
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
#include "tuning.h"
#include <cub/cub.cuh>
#include <stdlib.h>
#include <string.h>

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

/* chunk of a kept tile from its scan record (W: the plan's chunk work) */
static __device__ __forceinline__ int64_t tr_chunk_of(const tr_scan &x, int W)
{
  return (x.hits + x.acc + TR_TC_WORK * x.tc) / W;
}

/* Pair (a, b) seen by lane r (row r) of a 16-lane group: ORs the B rows
 * that A's row r selects into m, adds their products' flops to fl, and
 * returns the group's hits | multiply-adds << 16 (at most 256 and 4096). */
static __device__ __forceinline__ int tr_pair_masks(const tr_dview &A, const tr_dview &B, int64_t a, int64_t b, int r,
                                                    unsigned gmask, unsigned &m, long long &fl)
{
  unsigned bits = A.row_mask[16 * a + r];
  /* B's masks are loaded one row at a time: holding the tile's 16 masks
   * in registers (two 16-byte loads, a select tree per row) made level-0
   * products, 1-3 rows per pair, 23 % slower (BENCHMARKS.md section 1) */
  const uint16_t *mb = B.row_mask + 16 * b;
  int hm = 0;
  while (bits) {
    int k = __ffs(bits) - 1;
    bits &= bits - 1;
    unsigned x = mb[k];
    m |= x;
    fl += 2 * __popc(x);
    hm += (x != 0) + (__popc(x) << 16);
  }
  for (int o = 8; o > 0; o >>= 1) hm += __shfl_xor_sync(gmask, hm, o, 16);
  return hm;
}

/* A pair seen by k_masks<G> (hm: the group's hits | multiply-adds
 * << 16): a tensor-core pair (ranked, hloc = -1 - rank) or the offset of
 * its hits inside the candidate's */
static __device__ __forceinline__ void tr_masks_pair(int hm, bool lead, int tc_threshold, int32_t *hloc, int32_t &ntc,
                                                     long long &nh)
{
  if (tc_threshold >= 0 && (hm >> 16) >= tc_threshold) {
    if (lead) *hloc = -1 - ntc;
    ntc++;
  } else {
    if (lead) *hloc = (int32_t)nh;
    nh += hm & 0xffff;
  }
}

/* Closing of k_masks<G>, the whole block taking part: the lead
 * lane of candidate t's group writes its scan record (cnt entries, fl
 * flops, nh hits, np pairs, ntc tensor-core pairs: group totals), and the
 * block adds its totals with one atomic per total.  Four same-address
 * atomics per C tile bound the masks: the L2 serialises them (level-0 AP
 * of 3D 7-point at 200^3, 2.8 M tiles: 6.6 ms with them, 1.8 ms without). */
#define TR_MASKS_THREADS 128
static __device__ __forceinline__ void tr_masks_close(bool lead, bool active, int64_t t, int64_t ncap, int cnt,
                                                      long long fl, long long nh, int32_t np, int32_t ntc,
                                                      int dense_threshold, tr_scan *sc, tr_totals *tot)
{
  unsigned long long q[4] = {0, 0, 0, 0}; /* flops, dense tiles, max hits, max walk of this tile */
  if (lead && t <= ncap) {
    tr_scan v = {0, 0, 0, 0, 0, 0};
    if (active && cnt > 0) {
      const bool dense = cnt > dense_threshold;
      v.tiles = 1; v.pairs = np; v.nnz = cnt; v.hits = nh; v.acc = dense ? 256 : cnt; v.tc = ntc;
      q[0] = (unsigned long long)fl; q[1] = dense; q[2] = (unsigned long long)nh;
      q[3] = (unsigned long long)(np + fl / 32);
    }
    sc[t] = v;
  }
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

/* A pair seen by lane l of an 8-lane group (k_masks<8>): rows 2l and
 * 2l+1.  k_masks<16> runs at full occupancy and waits on a chain of
 * dependent loads per pair (pair -> A's row mask -> B's row masks); here
 * a lane has two rows' loads in flight in each round, and the grid has
 * half the warps (level 0: about 5 pairs per candidate, 1-3 B rows per
 * A row; tr_masks8 says where). */
static __device__ __forceinline__ int tr_pair_masks2(const tr_dview &A, const tr_dview &B, int64_t a, int64_t b, int l,
                                                     unsigned gmask, unsigned &m, long long &fl)
{
  unsigned b0 = A.row_mask[16 * a + 2 * l], b1 = A.row_mask[16 * a + 2 * l + 1];
  const uint16_t *mb = B.row_mask + 16 * b;
  int hm = 0;
  while (b0 | b1) {
    unsigned x0 = 0, x1 = 0;
    if (b0) { const int k = __ffs(b0) - 1; b0 &= b0 - 1; x0 = mb[k]; }
    if (b1) { const int k = __ffs(b1) - 1; b1 &= b1 - 1; x1 = mb[k]; }
    m |= x0 | (x1 << 16);
    const int c = __popc(x0) + __popc(x1);
    fl += 2 * c;
    hm += (x0 != 0) + (x1 != 0) + (c << 16);
  }
  for (int o = 4; o > 0; o >>= 1) hm += __shfl_xor_sync(gmask, hm, o, 8);
  return hm;
}

/* One G-lane group per candidate C tile (G = 16: lane r owns row r; G =
 * 8: lane l owns rows 2l and 2l+1, tr_pair_masks2); the whole warp takes
 * part in the closing shuffles, a group alone in those of its pair loop.
 * hloc[p]: hits of the candidate's pairs before p; pair_cand (non-NULL
 * after step 1's row sort): every pair's candidate. */
template <int G>
static __global__ void __launch_bounds__(TR_MASKS_THREADS)
    k_masks(tr_dview A, tr_dview B, int64_t ncap, const int32_t *d_ncand, const int32_t *cand_ptr,
            const int32_t *pair_a, const int32_t *pair_b, int dense_threshold, int tc_threshold, uint16_t *cmask,
            int32_t *hloc, tr_scan *sc, tr_totals *tot, int32_t *pair_cand)
{
  const int l = threadIdx.x & (G - 1);
  const unsigned gmask = ((1u << G) - 1u) << (threadIdx.x & (32 - G));
  const int64_t t = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / G;
  const int64_t ncand = *d_ncand;
  const bool active = t < ncand;
  unsigned m = 0; /* row l (G = 16); row 2l | row 2l+1 << 16 (G = 8) */
  long long fl = 0, nh = 0;
  int32_t np = 0, ntc = 0;
  if (active) {
    int32_t p0 = cand_ptr[t], p1 = cand_ptr[t + 1];
    np = p1 - p0;
    for (int32_t p = p0; p < p1; p++) {
      const int hm = G == 16 ? tr_pair_masks(A, B, pair_a[p], pair_b[p], l, gmask, m, fl)
                             : tr_pair_masks2(A, B, pair_a[p], pair_b[p], l, gmask, m, fl);
      tr_masks_pair(hm, l == 0, tc_threshold, hloc + p, ntc, nh);
      if (pair_cand && l == 0) pair_cand[p] = (int32_t)t;
    }
    if (G == 16) cmask[16 * t + l] = (uint16_t)m;
    else {
      cmask[16 * t + 2 * l] = (uint16_t)m;
      cmask[16 * t + 2 * l + 1] = (uint16_t)(m >> 16);
    }
  }
  int cnt = __popc(m);
  for (int o = G / 2; o > 0; o >>= 1) {
    cnt += __shfl_xor_sync(0xffffffffu, cnt, o, G);
    fl += __shfl_xor_sync(0xffffffffu, fl, o, G);
  }
  tr_masks_close(l == 0, active, t, ncap, cnt, fl, nh, np, ntc, dense_threshold, sc, tot);
}

/* k_masks for products with few candidates and many pairs each (a
 * coarse level's P^T (AP): a handful of C tiles, tens of pairs each,
 * which k_masks would walk one pair at a time): a block per candidate,
 * its 8 16-lane groups taking 8 consecutive pairs at a time.  Same
 * outputs as k_masks: hloc counts the hits of the pairs before each
 * one in pair order, tensor-core pairs ranked in pair order. */
#define TR_WIDE_GROUPS (TR_MASKS_THREADS / 16)
#define TR_WIDE_GRID 1024    /* C tile grids up to this many tiles */
#define TR_WIDE_PAIRS 16     /* or this many pairs per candidate on average, */
#define TR_WIDE_CANDS 32768  /* with this many candidates at most: beyond, k_masks has
                                enough groups to fill the GPU, and the wide kernel's
                                rounds made level 0 at 200^3 10 % slower */
/* 8-lane groups (k_masks<8>) for large products with few pairs per
 * candidate (their count read back: counted), 16 otherwise.  H100,
 * BENCHMARKS.md section 1: AP's masks at level 0 (5-6 pairs per
 * candidate) 28-29 % faster, P^T (AP)'s (about 20) 10-28 % slower.
 * The tuning table's TILERAP_MASKS_LANES=8 or 16 forces one (tests). */
#define TR_MASKS8_PAIRS 10
static bool tr_masks8(int64_t np, int64_t ncand, bool counted)
{
  const int lanes = tr_knob_int(TR_KNOB_MASKS_LANES); /* auto|8|16 */
  if (lanes) return lanes == 1;
  return counted && np <= TR_MASKS8_PAIRS * ncand;
}
static __global__ void __launch_bounds__(TR_MASKS_THREADS)
    k_masks_wide(tr_dview A, tr_dview B, int64_t ncap, const int32_t *d_ncand, const int32_t *cand_ptr,
                 const int32_t *pair_a, const int32_t *pair_b, int dense_threshold, int tc_threshold, uint16_t *cmask,
                 int32_t *hloc, tr_scan *sc, tr_totals *tot, int32_t *pair_cand)
{
  __shared__ int ghm[TR_WIDE_GROUPS];
  __shared__ unsigned gm[TR_WIDE_GROUPS][16];
  __shared__ long long gfl[TR_WIDE_GROUPS];
  const int r = threadIdx.x & 15, g = threadIdx.x >> 4;
  const unsigned gmask = 0xffffu << (threadIdx.x & 16);
  const int64_t t = blockIdx.x;
  const int64_t ncand = *d_ncand;
  int32_t p0 = 0, p1 = 0;
  if (t < ncand) { p0 = cand_ptr[t]; p1 = cand_ptr[t + 1]; }
  unsigned m = 0;
  long long fl = 0, nh = 0; /* nh, ntc: running over the rounds, the same in every thread */
  int32_t ntc = 0;
  for (int32_t base = p0; base < p1; base += TR_WIDE_GROUPS) { /* block-uniform */
    const int32_t p = base + g;
    int hm = 0;
    if (p < p1) hm = tr_pair_masks(A, B, pair_a[p], pair_b[p], r, gmask, m, fl);
    const bool tc = p < p1 && tc_threshold >= 0 && (hm >> 16) >= tc_threshold;
    if (r == 0) ghm[g] = p < p1 ? (tc ? -1 : (hm & 0xffff)) : 0;
    __syncthreads();
    long long before = nh;
    int32_t tcs = ntc;
    for (int j = 0; j < TR_WIDE_GROUPS; j++) {
      const int x = ghm[j];
      if (j < g) { if (x < 0) tcs++; else before += x; }
      if (x < 0) ntc++; else nh += x;
    }
    if (r == 0 && p < p1) {
      hloc[p] = tc ? -1 - tcs : (int32_t)before;
      if (pair_cand) pair_cand[p] = (int32_t)t;
    }
    __syncthreads(); /* ghm is rewritten next round */
  }
  gm[g][r] = m;
  for (int o = 8; o > 0; o >>= 1) fl += __shfl_xor_sync(0xffffffffu, fl, o, 16);
  if (r == 0) gfl[g] = fl;
  __syncthreads();
  if (threadIdx.x < 16) {
    unsigned row = 0;
    for (int j = 0; j < TR_WIDE_GROUPS; j++) row |= gm[j][threadIdx.x];
    if (t < ncand) cmask[16 * t + threadIdx.x] = (uint16_t)row;
    int cnt = __popc(row);
    for (int o = 8; o > 0; o >>= 1) cnt += __shfl_xor_sync(0xffffu, cnt, o, 16);
    if (threadIdx.x == 0 && t <= ncap) {
      long long flt = 0;
      for (int j = 0; j < TR_WIDE_GROUPS; j++) flt += gfl[j];
      tr_scan v = {0, 0, 0, 0, 0, 0};
      const int32_t np = p1 - p0;
      if (t < ncand && cnt > 0) {
        const bool dense = cnt > dense_threshold;
        v.tiles = 1; v.pairs = np; v.nnz = cnt; v.hits = nh; v.acc = dense ? 256 : cnt; v.tc = ntc;
        if (flt) atomicAdd(&tot->flops, (unsigned long long)flt);
        if (dense) atomicAdd(&tot->dense, 1ull);
        if (nh) atomicMax(&tot->maxhits, (unsigned long long)nh);
        atomicMax(&tot->maxwalk, (unsigned long long)(np + flt / 32));
      }
      sc[t] = v;
    }
  }
}

/* What plan creation reads back after the masks: sizes of C, totals,
 * step 1's counts (row paths) or the candidate count.  Gathered on the
 * device so that one copy brings them (tr_readback). */
struct tr_rb {
  tr_scan last;
  tr_totals tot;
  int64_t stats[4];
  int32_t ncand, pad;
};

static __device__ void tr_rb_fill(tr_rb *rb, const tr_scan *last, const tr_totals *tot, const int64_t *stats,
                                  const int32_t *d_ncand)
{
  rb->last = *last;
  rb->tot = *tot;
  for (int i = 0; i < 4; i++) rb->stats[i] = stats ? stats[i] : 0;
  rb->ncand = stats ? 0 : *d_ncand;
}

/* Exclusive scan of n records in one block (small products: one kernel
 * instead of CUB's two), then the read-back record; thread t takes a
 * contiguous run, so this is for up to TR_SCAN_SMALL_MAX records (5 a
 * thread: at 16 a thread it took 20 us, longer than CUB's two kernels). */
#define TR_SCAN_SMALL_THREADS 256
#define TR_SCAN_SMALL_MAX 1025
static __global__ void __launch_bounds__(TR_SCAN_SMALL_THREADS)
    k_scan_small(int64_t n, const tr_scan *in, tr_scan *out, tr_rb *rb, const tr_totals *tot, const int64_t *stats,
                 const int32_t *d_ncand)
{
  typedef cub::BlockScan<tr_scan, TR_SCAN_SMALL_THREADS> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  const int64_t per = (n + TR_SCAN_SMALL_THREADS - 1) / TR_SCAN_SMALL_THREADS;
  const int64_t i0 = min(n, per * threadIdx.x), i1 = min(n, i0 + per);
  const tr_scan zero = {0, 0, 0, 0, 0, 0};
  tr_scan sum = zero;
  for (int64_t i = i0; i < i1; i++) sum = tr_scan_add()(sum, in[i]);
  scan_t(tmp).ExclusiveScan(sum, sum, zero, tr_scan_add());
  for (int64_t i = i0; i < i1; i++) {
    const tr_scan x = in[i];
    out[i] = sum;
    sum = tr_scan_add()(sum, x);
  }
  __syncthreads(); /* out[n-1] written by this block */
  if (threadIdx.x == 0) tr_rb_fill(rb, &out[n - 1], tot, stats, d_ncand);
}

/* Exclusive scan of n records beyond one block's share, in three launches:
 * the sum of every TR_SCAN_SPAN records (k_scan_parts), an exclusive scan
 * of those sums in one block (k_scan_part_offsets), each span's records
 * scanned from its sum's offset (k_scan_down, which also fills the
 * read-back record).  CUB's DeviceScan moved the 40-byte record at about
 * 0.55 TB/s (509 us for the 3.7 M candidates of AP at level 0 of p3d7
 * 200^3); this reads the records twice and writes them once.  A span is
 * TR_SCAN_ROUNDS rounds of one record a thread, coalesced; k_scan_down
 * carries the sum from round to round. */
#define TR_SCAN_BLOCK 256
#define TR_SCAN_ROUNDS 4
#define TR_SCAN_SPAN (TR_SCAN_BLOCK * TR_SCAN_ROUNDS)
#define TR_SCAN_PARTS_THREADS 256
static __global__ void __launch_bounds__(TR_SCAN_BLOCK) k_scan_parts(int64_t n, const tr_scan *in, tr_scan *part)
{
  typedef cub::BlockReduce<tr_scan, TR_SCAN_BLOCK> red_t;
  __shared__ typename red_t::TempStorage tmp;
  const tr_scan zero = {0, 0, 0, 0, 0, 0};
  tr_scan x = zero;
  const int64_t i0 = blockIdx.x * (int64_t)TR_SCAN_SPAN + threadIdx.x;
#pragma unroll
  for (int j = 0; j < TR_SCAN_ROUNDS; j++) {
    const int64_t i = i0 + j * TR_SCAN_BLOCK;
    if (i < n) x = tr_scan_add()(x, in[i]);
  }
  x = red_t(tmp).Reduce(x, tr_scan_add());
  if (threadIdx.x == 0) part[blockIdx.x] = x;
}

static __global__ void __launch_bounds__(TR_SCAN_PARTS_THREADS) k_scan_part_offsets(int64_t nb, tr_scan *part)
{
  typedef cub::BlockScan<tr_scan, TR_SCAN_PARTS_THREADS, cub::BLOCK_SCAN_WARP_SCANS> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  const tr_scan zero = {0, 0, 0, 0, 0, 0};
  tr_scan carry = zero; /* the same in every thread */
  for (int64_t b0 = 0; b0 < nb; b0 += TR_SCAN_PARTS_THREADS) {
    const int64_t b = b0 + threadIdx.x;
    tr_scan x = b < nb ? part[b] : zero, total;
    scan_t(tmp).ExclusiveScan(x, x, zero, tr_scan_add(), total);
    if (b < nb) part[b] = tr_scan_add()(carry, x);
    carry = tr_scan_add()(carry, total);
    __syncthreads(); /* tmp is reused next round */
  }
}

static __global__ void __launch_bounds__(TR_SCAN_BLOCK)
    k_scan_down(int64_t n, const tr_scan *in, const tr_scan *part, tr_scan *out, tr_rb *rb, const tr_totals *tot,
                const int64_t *stats, const int32_t *d_ncand)
{
  typedef cub::BlockScan<tr_scan, TR_SCAN_BLOCK, cub::BLOCK_SCAN_WARP_SCANS> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  const tr_scan zero = {0, 0, 0, 0, 0, 0};
  tr_scan carry = part[blockIdx.x];
  const int64_t i0 = blockIdx.x * (int64_t)TR_SCAN_SPAN + threadIdx.x;
#pragma unroll 1
  for (int j = 0; j < TR_SCAN_ROUNDS; j++) {
    const int64_t i = i0 + j * TR_SCAN_BLOCK;
    tr_scan x = i < n ? in[i] : zero, total;
    scan_t(tmp).ExclusiveScan(x, x, zero, tr_scan_add(), total);
    x = tr_scan_add()(carry, x);
    if (i < n) out[i] = x;
    if (i == n - 1) tr_rb_fill(rb, &x, tot, stats, d_ncand);
    carry = tr_scan_add()(carry, total);
    __syncthreads(); /* tmp is reused next round */
  }
}

/* C's tiles from the kept candidates; the scan record of every kept tile.
 * The same launch writes C's tile_ptr and zeroes the nw words of the
 * chunk array (grid-stride: one launch less for small products). */
static __global__ void k_build(const int32_t *d_ncand, const int32_t *cand_col, const uint16_t *cmask,
                               const tr_scan *sc, int32_t *tile_col, int64_t *tile_off, uint16_t *row_mask,
                               uint8_t *row_ptr, uint8_t *idx, tr_scan *ks, int32_t *cand_tile, int32_t tile_rows,
                               const int32_t *row_cand, int64_t *tile_ptr, unsigned long long *cw, int64_t nw)
{
  const int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, G = (int64_t)gridDim.x * blockDim.x;
  for (int64_t I = g; I <= tile_rows; I += G) tile_ptr[I] = sc[row_cand[I]].tiles;
  for (int64_t j = g; j < nw; j += G) cw[j] = 0;
  const int r = threadIdx.x & 15;
  const int64_t t = g >> 4;
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

/* Chunk j holds the kept tiles whose work prefix (hits + accumulator
 * slots before them) lies in [j, j+1) * W (the plan's chunk work); chunks no tile
 * starts in stay empty (zeroed).  Thread u looks at tiles u-1 and u. */
static __global__ void k_chunks(int64_t ntiles, const tr_scan *ks, int dense_threshold, int W, tr_chunk *ch)
{
  const int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (u > ntiles) return;
  const tr_scan x = ks[u];
  const int64_t j = tr_chunk_of(x, W), jp = u > 0 ? tr_chunk_of(ks[u - 1], W) : -1;
  if (u < ntiles && j != jp) {
    ch[j].tile0 = (int32_t)u; ch[j].hit0 = x.hits; ch[j].acc0 = x.acc; ch[j].tc0 = x.tc;
  }
  if (u > 0 && (u == ntiles || j != jp)) {
    ch[jp].tile1 = (int32_t)u; ch[jp].hit1 = x.hits; ch[jp].acc1 = x.acc; ch[jp].tc1 = x.tc;
  }
  if (u < ntiles && ks[u + 1].nnz - x.nnz > dense_threshold) ch[j].dense = 1; /* same value from every writer */
}

#define TR_SPLIT_WAVES 2

/* Chunk j copied to the list of its kind (count[0]: with tensor-core
 * pairs, count[1]: without), a warp's chunks of one kind kept in order. */
static __global__ void k_split_chunks(int64_t nchunks, const tr_chunk *__restrict__ ch, tr_chunk *tc, tr_chunk *hits,
                                      unsigned *count)
{
  const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const bool on = j < nchunks;
  tr_chunk c;
  if (on) c = ch[j];
  const bool is_tc = on && c.tc1 > c.tc0;
  const unsigned mt = __ballot_sync(0xffffffffu, is_tc), mh = __ballot_sync(0xffffffffu, on && !is_tc);
  unsigned bt = 0, bh = 0;
  if (lane == 0) {
    if (mt) bt = atomicAdd(&count[0], __popc(mt));
    if (mh) bh = atomicAdd(&count[1], __popc(mh));
  }
  bt = __shfl_sync(0xffffffffu, bt, 0);
  bh = __shfl_sync(0xffffffffu, bh, 0);
  const unsigned below = (1u << lane) - 1u;
  if (is_tc) tc[bt + __popc(mt & below)] = c;
  else if (on) hits[bh + __popc(mh & below)] = c;
}

/* the lists' tails (past their counts) as empty chunks */
static __global__ void k_split_tails(int64_t ntcc, int64_t nchunks, tr_chunk *tc, tr_chunk *hits,
                                     const unsigned *__restrict__ count)
{
  const tr_chunk empty = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t j = count[0] + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < ntcc; j += (int64_t)gridDim.x * blockDim.x)
    tc[j] = empty;
  for (int64_t j = count[1] + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nchunks; j += (int64_t)gridDim.x * blockDim.x)
    hits[j] = empty;
}

/* tc (ntcc entries), hits (nchunks): the chunks with and without
 * tensor-core pairs (a chunk with such a pair holds one at least, so
 * ntcc = min(pairs, chunks) bounds the first); the rest of each list
 * empty chunks, which the numeric kernel leaves at once.  The order of
 * chunks inside a list only schedules them: each chunk's sum is its own. */
static int tr_split_chunks(const tr_chunk *ch, int64_t nchunks, int64_t ntcc, tr_tmp *tmp, tr_chunk *tc,
                           tr_chunk *hits)
{
  cudaStream_t s = tmp->s;
  unsigned *count = NULL;
  int err;
  if ((err = tr_tmp_alloc(tmp, (void **)&count, 2 * sizeof(unsigned), "chunk split"))) return err;
  TR_RET_CU(cudaMemsetAsync(count, 0, 2 * sizeof(unsigned), s), "chunk split");
  k_split_chunks<<<tr_blocks(nchunks, 256), 256, 0, s>>>(nchunks, ch, tc, hits, count);
  if ((err = tr_cuda_check_launch("chunk split"))) return err;
  const int64_t span = ntcc > nchunks ? ntcc : nchunks;
  k_split_tails<<<tr_blocks(span < 65536 ? span : 65536, 256), 256, 0, s>>>(ntcc, nchunks, tc, hits, count);
  return tr_cuda_check_launch("chunk split tails");
}

/* Hit records of every pair of a kept tile: one 16-lane group per pair,
 * lane r walking row r of the pair's A tile; records ordered by pair, row,
 * entry (the order of the candidate's pairs, as counted in k_masks).
 * WORK: the chunk work when it is TR_CHUNK_WORK (large products), 0 for
 * the plan's own W: a 64-bit division by a variable took six registers
 * more, and the occupancy they cost made level-0 fills 13-25 % slower. */
template <int WORK, bool PERM>
static __global__ void k_fill_hits(tr_dview A, tr_dview B, int64_t np, const int32_t *pair_cand,
                                   const int32_t *cand_ptr, const int32_t *pair_a, const int32_t *pair_b,
                                   const int32_t *hloc, const tr_scan *sc, const tr_chunk *ch, int W,
                                   const uint16_t *c_mask, const uint8_t *c_row_ptr, int dense_threshold, tr_hit *hits,
                                   tr_tc *tcs, uint16_t *acc_loc, const int64_t *__restrict__ a_perm,
                                   const int32_t *__restrict__ lp_amap, const int32_t *__restrict__ lp_bmap)
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
  const uint32_t slot = (uint32_t)(x.acc - ch[tr_chunk_of(x, WORK ? WORK : W)].acc0);
  if (r == 0 && q == cand_ptr[t]) acc_loc[u] = (uint16_t)slot;
  if (hl < 0) {
    if (r == 0) {
      tr_tc e;
      e.a = (int32_t)a; e.b = (int32_t)b; e.u = (int32_t)u;
      e.slot = slot | (dense ? TR_TC_DENSE : 0u);
      e.la = lp_amap ? lp_amap[a] : -1; /* slots of the low-precision fragments */
      e.lb = lp_bmap ? lp_bmap[b] : -1;
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
    e.a = PERM ? (uint32_t)a_perm[a0 + j] : a0 + j; /* PERM: the plan reads A through a_perm */
    e.b = b0 + B.row_ptr[16 * b + k];
    e.masks = bm | cm << 16;
    e.loc = loc;
    hits[h++] = e;
  }
}

static int tr_launch_fill_hits(const struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A,
                               const tilerap_tile_matrix *B, const tilerap_tile_matrix *C, int64_t np,
                               const int32_t *pair_cand, const int32_t *cand_ptr, const int32_t *pair_a,
                               const int32_t *pair_b, const int32_t *hloc, const tr_scan *sc)
{
  const bool lp = P->precision != TILERAP_PRECISION_FP64;
  const int32_t *lp_amap = lp ? P->lp.amap : NULL, *lp_bmap = lp ? P->lp.bmap : NULL;
#define TR_FILL(WORK, PERM)                                                                                         \
  k_fill_hits<WORK, PERM><<<tr_blocks(16 * np, 128), 128, 0, P->stream>>>(                                          \
      tr_view(A), tr_view(B), np, pair_cand, cand_ptr, pair_a, pair_b, hloc, sc, P->chunks, P->chunk_work,         \
      C->row_mask, C->row_ptr, P->dense_threshold, P->hits, P->tcs, P->acc_loc, P->a_perm, lp_amap, lp_bmap)
  if (P->chunk_work == TR_CHUNK_WORK) {
    if (P->a_perm) TR_FILL(TR_CHUNK_WORK, true);
    else TR_FILL(TR_CHUNK_WORK, false);
  } else {
    if (P->a_perm) TR_FILL(0, true);
    else TR_FILL(0, false);
  }
#undef TR_FILL
  return tr_cuda_check_launch("hits");
}



/* Largest mean walk of a lane (pairs + multiply-adds / 16 per C tile)
 * for which a plan's first run walks the pairs.  Each pair is a chain of
 * dependent loads for every lane, while the hit path spreads pairs over
 * lanes; measured on the H100 (Nsight Compute, walk against hit fill +
 * hit numeric run): walk faster at 8-13 (level-0 AP of 3D 7-point: 675 vs
 * 719 us at 101^3), hits faster from about 24 (level-0 P^T(AP): 881 vs
 * 499 us; level-1 AP at 200^3, 24: 636 vs 558 us).
 * The tuning table's TILERAP_CUDA_WALK_MEAN (default 16) sets it. */
static double tr_walk_mean(void) { return tr_knob(TR_KNOB_CUDA_WALK_MEAN); }

/* Largest mean multiply-adds per lane (flops / 2 / 16 / C tiles) for
 * which a plan's first run walks the pairs (and, times
 * TR_WALK_TILE_FACTOR, the longest walk of a single lane).  Tuning table:
 * TILERAP_CUDA_HITS=plan makes hits in the plan always (the walk never
 * runs), TILERAP_CUDA_WALK_MAX sets the bound (default 32; tests). */
static double tr_walk_max(void)
{
  if (tr_knob_int(TR_KNOB_CUDA_HITS)) return -1.0;
  return tr_knob(TR_KNOB_CUDA_WALK_MAX);
}

int tr_cuda_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_cuda_cand *cand,
                        tr_tmp *tmp, struct tr_cuda_spgemm *plan, tilerap_tile_matrix **Cout, int64_t *ncand_out,
                        int64_t *pairs_out, int64_t *flops_out, int64_t *dense_out, int64_t *tc_out)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  const int rows = cand->path == TR_PATH_ROWS_SMALL; /* counts read back below */
  const int pos = cand->path != TR_PATH_SORTED;     /* candidates numbered by pair position */
  int64_t np = cand->npairs;
  tilerap_tile_matrix *C = NULL;
  int err = TILERAP_SUCCESS;
  *ncand_out = *pairs_out = *flops_out = *dense_out = *tc_out = 0;
  if (!rows && np == 0) { /* no pair: C has no tile */
    TR_TRY(tr_cuda_tile_new(A->m, B->n, 0, 0, s, &C));
    tr_cuda_tile_empty_structure(C, s);
    TR_TRY(tr_cuda_check_launch("step 2 empty C"));
    *Cout = C;
    return TILERAP_SUCCESS;
  }
  /* hit records index values with 32 bits */
  if (A->nnz > (int64_t)UINT32_MAX || B->nnz > (int64_t)UINT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "CUDA SpGEMM: operands with %lld and %lld entries (engine limit 2^32)",
                             (long long)A->nnz, (long long)B->nnz);
  {
    /* Candidates number at most the pairs (the row path: at most its
     * bound); for small products the grid is sized by that bound (kernels
     * read the true count on the device), saving a host synchronisation;
     * for large ones the count is read back to keep the scan arrays small. */
    int64_t ncap = rows ? cand->cap : np;
    if (!pos && np > 65536) {
      int32_t nc = 0;
      TR_TRY(tr_readback(&nc, cand->d_ncand, sizeof nc, s, "step 2 candidate count"));
      ncap = nc;
    }
    const int64_t hcap = rows ? cand->cap : np; /* pair-indexed arrays */
    const int small_scan = ncap + 1 <= TR_SCAN_SMALL_MAX;
    size_t tb = 0;
    if (!small_scan) /* k_scan_parts' sums */
      tb = (size_t)((ncap + 1 + TR_SCAN_SPAN - 1) / TR_SCAN_SPAN) * sizeof(tr_scan);
    /* two allocations: what a plan that walks its pairs keeps (hit
     * offsets, scan records, candidate tiles), and scratch */
    tr_group kg, xg;
    memset(&kg, 0, sizeof kg);
    memset(&xg, 0, sizeof xg);
    const int i_hloc = tr_group_add(&kg, (size_t)hcap * sizeof(int32_t));
    const int i_sc = tr_group_add(&kg, ((size_t)ncap + 1) * sizeof(tr_scan));
    const int i_ct = tr_group_add(&kg, ((size_t)ncap + 1) * sizeof(int32_t));
    const int i_cmask = tr_group_add(&xg, 16 * (size_t)ncap * sizeof(uint16_t));
    const int i_scin = tr_group_add(&xg, ((size_t)ncap + 1) * sizeof(tr_scan));
    const int i_ks = tr_group_add(&xg, ((size_t)ncap + 1) * sizeof(tr_scan)); /* kept tiles <= candidates */
    const int i_tot = tr_group_add(&xg, sizeof(tr_totals));
    const int i_rb = tr_group_add(&xg, sizeof(tr_rb));
    const int i_ts = tr_group_add(&xg, tb);
    TR_TRY(tr_group_alloc(&kg, tmp, s, "step 2 offsets"));
    TR_TRY(tr_group_alloc(&xg, tmp, s, "step 2 masks"));
    int32_t *hloc = (int32_t *)tr_group_at(&kg, i_hloc);
    tr_scan *sc = (tr_scan *)tr_group_at(&kg, i_sc), *sc_in = (tr_scan *)tr_group_at(&xg, i_scin);
    tr_scan *ks = (tr_scan *)tr_group_at(&xg, i_ks);
    uint16_t *cmask = (uint16_t *)tr_group_at(&xg, i_cmask);
    tr_totals *tot = (tr_totals *)tr_group_at(&xg, i_tot);
    TR_TRY_CU(cudaMemsetAsync(tot, 0, sizeof(tr_totals), s), "step 2 totals");
    /* a block per candidate where C's tile grid is small (few candidates)
     * or the candidates have many pairs on average (P^T (AP)) */
    /* step 1's row sort left pair_cand to the masks kernels, which write
     * it for every pair (dropped candidates' too); nothing reads it before */
    int32_t *late_pc = cand->cand_late ? cand->pair_cand : NULL;
    const int64_t grid = (int64_t)(TR > 0 ? TR : 1) * (B->tile_cols > 0 ? B->tile_cols : 1);
    const bool long_rows = !pos && (double)np >= TR_WIDE_PAIRS * (double)ncap && ncap <= TR_WIDE_CANDS;
    if ((grid <= TR_WIDE_GRID && ncap + 1 <= TR_WIDE_GRID * 64) || long_rows)
      k_masks_wide<<<(unsigned)(ncap + 1), TR_MASKS_THREADS, 0, s>>>(
          tr_view(A), tr_view(B), ncap, cand->d_ncand, cand->cand_ptr, cand->pair_a, cand->pair_b,
          plan->dense_threshold, plan->tc_threshold, cmask, hloc, sc_in, tot, late_pc);
    else if (!tr_masks8(np, ncap, !pos && np > 65536))
      k_masks<16><<<tr_blocks(16 * (ncap + 1), TR_MASKS_THREADS), TR_MASKS_THREADS, 0, s>>>(
          tr_view(A), tr_view(B), ncap, cand->d_ncand, cand->cand_ptr, cand->pair_a, cand->pair_b,
          plan->dense_threshold, plan->tc_threshold, cmask, hloc, sc_in, tot, late_pc);
    else
      k_masks<8><<<tr_blocks(8 * (ncap + 1), TR_MASKS_THREADS), TR_MASKS_THREADS, 0, s>>>(
          tr_view(A), tr_view(B), ncap, cand->d_ncand, cand->cand_ptr, cand->pair_a, cand->pair_b,
          plan->dense_threshold, plan->tc_threshold, cmask, hloc, sc_in, tot, late_pc);
    TR_TRY(tr_cuda_check_launch("step 2 masks"));
    tr_rb *rb = (tr_rb *)tr_group_at(&xg, i_rb);
    const int64_t *stats = pos ? cand->d_stats : NULL;
    if (small_scan) {
      k_scan_small<<<1, TR_SCAN_SMALL_THREADS, 0, s>>>(ncap + 1, sc_in, sc, rb, tot, stats, cand->d_ncand);
      TR_TRY(tr_cuda_check_launch("step 2 scan"));
    } else {
      const int64_t nsc = ncap + 1, nb = (nsc + TR_SCAN_SPAN - 1) / TR_SCAN_SPAN;
      tr_scan *part = (tr_scan *)tr_group_at(&xg, i_ts);
      k_scan_parts<<<(unsigned)nb, TR_SCAN_BLOCK, 0, s>>>(nsc, sc_in, part);
      TR_TRY(tr_cuda_check_launch("step 2 scan (sums)"));
      k_scan_part_offsets<<<1, TR_SCAN_PARTS_THREADS, 0, s>>>(nb, part);
      TR_TRY(tr_cuda_check_launch("step 2 scan (offsets)"));
      k_scan_down<<<(unsigned)nb, TR_SCAN_BLOCK, 0, s>>>(nsc, sc_in, part, sc, rb, tot, stats, cand->d_ncand);
      TR_TRY(tr_cuda_check_launch("step 2 scan"));
    }

    /* the one read-back of plan creation's second half: sizes of C (and
     * on the row paths step 1's counts) */
    tr_rb h;
    TR_TRY(tr_readback(&h, rb, sizeof h, s, "step 2 totals"));
    TR_MARK("step2 totals");
    if (rows) {
      if (!h.stats[2]) return TR_STEP1_RETRY; /* the temporaries go with tmp */
      np = h.stats[0];
    }
    if (pos) h.ncand = (int32_t)h.stats[3];
    const int64_t ntiles = h.last.tiles, nnz = h.last.nnz, kpairs = h.last.pairs, nhits = h.last.hits, ntc = h.last.tc;
    if (h.tot.maxhits > (unsigned long long)INT32_MAX) {
      err = tilerap_set_error(TILERAP_ERR_OVERFLOW, "CUDA SpGEMM: a C tile has %llu hits (engine limit 2^31)",
                              h.tot.maxhits);
      goto cleanup;
    }
    /* chunk work: TR_CHUNK_WORK, less where that leaves the GPU idle */
    const int64_t work = nhits + h.last.acc + TR_TC_WORK * ntc;
    int W = TR_CHUNK_WORK;
    {
      const int64_t want = work / ((int64_t)TR_CHUNK_SPREAD * tr_cuda_sm_count());
      if (want < W) W = want < TR_CHUNK_MIN ? TR_CHUNK_MIN : (int)((want + 31) & ~31);
    }
    plan->chunk_work = W;
    const int64_t nchunks = ntiles > 0 ? work / W + 1 : 0;
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
    /* Plans of the Galerkin product's scatters (ptap_plan.c): structure
     * only keeps nothing for a numeric phase; deferred keeps the lists for
     * the hits of its first numeric run (a scatter made C's first values). */
    if (plan->structure_only) plan->pairs_walk = 0;
    if (plan->defer_hits && ntiles > 0) plan->pairs_walk = 1;
    const int no_hits = plan->structure_only || (plan->pairs_walk && plan->one_shot);

    TR_TRY(tr_cuda_tile_new(A->m, B->n, ntiles, nnz, s, &C));
    const int64_t ntcc = ntc < nchunks ? ntc : nchunks; /* chunks with tensor-core pairs, at most */
    if (!no_hits && nhits + ntc + nchunks > 0) { /* the plan's arrays */
      tr_group *pg = &plan->arrays;
      memset(pg, 0, sizeof *pg);
      const int i_hits = tr_group_add(pg, (size_t)nhits * sizeof(tr_hit));
      const int i_tcs = tr_group_add(pg, (size_t)ntc * sizeof(tr_tc));
      const int i_ch = tr_group_add(pg, (size_t)nchunks * sizeof(tr_chunk));
      const int i_al = tr_group_add(pg, (size_t)ntiles * sizeof(uint16_t));
      /* the chunk lists of plans with tensor-core pairs (numeric kernels
       * by kind of chunk) where the chunks fill more than
       * TR_SPLIT_WAVES waves of the tensor-core kernel (below that its
       * occupancy costs nothing and a second launch would) and the pairs
       * are at most half the work: dense coarse levels, whose chunks
       * nearly all hold such pairs, ran 7-16 % slower split (H100) */
      const int split = ntc > 0 && nchunks > (int64_t)TR_SPLIT_WAVES * 3 * tr_cuda_sm_count() &&
                        2 * TR_TC_WORK * ntc <= work;
      const int i_ctc = split ? tr_group_add(pg, (size_t)ntcc * sizeof(tr_chunk)) : -1;
      const int i_chit = split ? tr_group_add(pg, (size_t)nchunks * sizeof(tr_chunk)) : -1;
      TR_TRY(tr_group_alloc(pg, NULL, s, "plan hits"));
      plan->hits = (tr_hit *)tr_group_at(pg, i_hits);
      plan->tcs = (tr_tc *)tr_group_at(pg, i_tcs);
      plan->chunks = (tr_chunk *)tr_group_at(pg, i_ch);
      plan->acc_loc = (uint16_t *)tr_group_at(pg, i_al);
      plan->chunks_tc = i_ctc >= 0 ? (tr_chunk *)tr_group_at(pg, i_ctc) : NULL;
      plan->chunks_hits = i_chit >= 0 ? (tr_chunk *)tr_group_at(pg, i_chit) : NULL;
    }
    /* low-precision operands: their tiles numbered before the pairs are written */
    if (!no_hits && ntiles > 0 && ntc > 0)
      TR_TRY(tr_cuda_lowprec_plan(plan, A, B, np, cand->pair_a, cand->pair_b, hloc, ntc));
    int32_t *cand_tile = plan->pairs_walk ? (int32_t *)tr_group_at(&kg, i_ct) : NULL;
    const int64_t nw = ntiles > 0 && !no_hits ? nchunks * (int64_t)(sizeof(tr_chunk) / 8) : 0;
    static_assert(sizeof(tr_chunk) % 8 == 0, "chunks are zeroed in 8-byte words");
    k_build<<<tr_blocks(16 * (ncap + 1), 128), 128, 0, s>>>(
        cand->d_ncand, cand->cand_col, cmask, sc, C->tile_col, C->tile_off, C->row_mask, C->row_ptr, C->idx, ks, cand_tile,
        TR, cand->row_cand, C->tile_ptr, (unsigned long long *)plan->chunks, nw);
    TR_TRY(tr_cuda_check_launch("step 2 build"));
    if (nw > 0) {
      k_chunks<<<tr_blocks(ntiles + 1, 256), 256, 0, s>>>(ntiles, ks, plan->dense_threshold, W, plan->chunks);
      TR_TRY(tr_cuda_check_launch("step 2 chunks"));
      if (plan->chunks_tc)
        TR_TRY(tr_split_chunks(plan->chunks, nchunks, ntcc, tmp, plan->chunks_tc, plan->chunks_hits));
    }
    plan->np = np;
    plan->ncap = ncap;
    if (plan->pairs_walk) { /* the plan keeps step 1's lists and step 2's kept block */
      TR_TRY(tr_group_keep(tmp, &cand->block));
      plan->lists = cand->block;
      TR_TRY(tr_group_keep(tmp, &kg));
      plan->kept = kg;
      plan->pair_a = cand->pair_a; plan->pair_b = cand->pair_b; plan->cand_ptr = cand->cand_ptr;
      plan->d_ncand = cand->d_ncand; plan->pair_cand = cand->pair_cand;
      plan->cand_tile = cand_tile; plan->hloc = hloc; plan->scan = sc;
    } else if (ntiles > 0 && !plan->structure_only) {
      TR_TRY(tr_launch_fill_hits(plan, A, B, C, np, cand->pair_cand, cand->cand_ptr, cand->pair_a, cand->pair_b, hloc, sc));
    }
    plan->c_tiles = ntiles;
    plan->c_nnz = nnz;
    plan->nhits = no_hits ? 0 : nhits;
    plan->nchunks = no_hits ? 0 : nchunks;
    plan->ntc = no_hits ? 0 : ntc;
    *ncand_out = h.ncand;
    *pairs_out = kpairs;
    *flops_out = (int64_t)h.tot.flops;
    *dense_out = (int64_t)h.tot.dense;
    *tc_out = ntc;
    *Cout = C;
    return TILERAP_SUCCESS;
  }
cleanup:
  if (C) { tr_cuda_tile_free(C); free(C); }
  return err;
}

int tr_cuda_step2_fill_hits(const struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                            const tilerap_tile_matrix *C)
{
  if (!P->scan || !P->hits) return tilerap_set_error(TILERAP_ERR_INVALID, "internal: plan kept no pair lists for its hits");
  return tr_launch_fill_hits(P, A, B, C, P->np, P->pair_cand, P->cand_ptr, P->pair_a, P->pair_b, P->hloc,
                             (const tr_scan *)P->scan);
}
