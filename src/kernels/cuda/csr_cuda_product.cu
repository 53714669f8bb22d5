/* Row-wise hash SpGEMM C = A*B on device CSR: the CSR path's product
 * (csr_path.c), for operands whose tiles hold too few entries for the
 * tile engine to pay.
 *
 * Each row's upper bound (the B entries its A entries reach) is summed by
 * an entry-parallel kernel, so a dense row costs its entries, not a
 * thread's serial loop.  Inside a row, a group of a warp or more deals
 * out the row's products (pairs of an A entry and an entry of the B row
 * it reaches) evenly over its lanes, consecutive lanes on consecutive B
 * entries: a long B row (a hub of a power-law graph) is shared by the
 * group instead of serialising one lane, and B is read coalesced.
 * Rows are binned by that bound; a bin's rows go to groups of G threads,
 * each with a hash table of S slots in shared memory (linear probing, S
 * at least 1.5 times the bound), or, beyond the
 * largest table (2048 slots), to a block with a dense accumulator as wide
 * as B: in shared memory where B is narrow enough (a bitmap of the columns
 * seen, and the values), else in global memory.  fp64 atomics on shared
 * memory are compare-and-swap loops, yet far cheaper than global ones: the
 * rows of random and power-law matrices' coarse products land here, with
 * thousands of columns a row.  Three modes run the same insertion: COUNT (distinct
 * columns, for C's row pointers), FILL (the row's columns sorted, values
 * too when given: a plan's first product) and NUMERIC (values looked up
 * at C's known columns: re-runs, no sort).  A operand values are read as
 * aval[avidx[e]] when avidx is given (a tile matrix's own values through
 * its CSR view), likewise B; C's values go to cval[cvidx[p]].
 * Sums use shared or global atomics: results agree with the tile engine
 * to rounding, not bit for bit. */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>
#include <limits.h>

#define TR_CSR_COUNT 0
#define TR_CSR_FILL 1
#define TR_CSR_NUMERIC 2
#define TR_CSR_EMPTY INT_MAX
#define TR_CSR_BINS 8 /* 0: empty rows, 1-5: shared tables, 6: dense accumulator, 7: split rows */
/* the binning's device words: bin cursors, their starts and, read back
 * with them, the caller's value; then the split rows' threshold (the
 * device's alone) */
#define TR_CSR_SPLIT_AT (2 * TR_CSR_BINS + 1)
#define TR_CSR_CURSORS (2 * TR_CSR_BINS + 2)
#define TR_SPLIT_SHARED_COLS 4096 /* split rows sum in shared memory up to this many columns of C */
#define TR_DENSE_THREADS 512

struct tr_cuda_csr_product {
  cudaStream_t s;
  int32_t m, n;
  const int64_t *arp, *brp;
  const int32_t *acol, *bcol;
  int64_t *crp;
  int32_t *ccol;
  int64_t cnnz;
  int32_t *rows;                   /* row numbers grouped by bin */
  int64_t bin_start[TR_CSR_BINS + 1];
  void *dense;                     /* per block: n int32 flags, then n doubles */
  int dense_blocks;
  void *split;                     /* the split rows' accumulators, as dense's, one per row in flight */
  int split_slots;
  /* the split rows' work items (tr_split_layout): per launch of
   * split_slots rows, items_cap items; cum[r] the items of the launch's
   * rows up to r (inclusive), item[w] item w's first entry of A */
  int32_t *split_cum;
  int64_t *split_item;
  unsigned long long *split_w;     /* per launch: the products of an item */
  int64_t split_items_cap;
  size_t split_shm_bytes[3];       /* per mode: the split rows' shared sums (0: global atomics alone) */
  int run_sums;                    /* C is narrow enough for run sums (tr_run_sum) */
  int sms;                         /* the device's multiprocessors */
  /* the dense rows in shared memory, per mode (0: not there), and the
   * grid that fits the device */
  size_t shm_bytes[3];
  int shm_blocks[3];
  int64_t macs;
  int sorted;                      /* C's rows were filled in column order */
  /* the record (tr_cuda_csr_product_keep_record): each C entry's products
   * as value positions, entry p's at rec_a/rec_b[rec_ptr[p] .. rec_ptr[p+1]) */
  uint32_t *rec_ptr;
  int32_t *rec_a, *rec_b;
  void *rec_scan;
  size_t rec_scan_bytes;
  int runs;                        /* numeric runs so far (counted to 2) */
};

struct tr_operand {
  const int64_t *rp;
  const int32_t *col;
  const double *val;
  const int64_t *vidx;
};
static __device__ __forceinline__ double tr_val(const tr_operand &X, int64_t e)
{
  return X.val ? X.val[X.vidx ? X.vidx[e] : e] : 0.0;
}

/* A lane's products that meet one accumulator slot in a row are summed in
 * a register and added once, when the slot changes and at the end (flush,
 * before the barrier that precedes the read-out).  fp64 atomics on shared
 * memory are compare-and-swap loops that lanes on one address serialise:
 * a one-column P, or a coarse P^T*AP of few columns, sent every product of
 * a warp to one slot.  Where C has more columns than TR_RUN_COLS the
 * lanes rarely meet and the extra compare costs more than it saves: ON
 * false (or on = 0) adds each product at once.  The hash and split rows
 * take them; dense rows (more than 1365 columns) and split rows on the
 * global accumulator alone (more than TR_SPLIT_SHARED_COLS) never do. */
#define TR_RUN_COLS 32
template <bool ON>
struct tr_run_sum {
  int on;
  int32_t at = -1;
  double sum = 0.0;
  __device__ __forceinline__ explicit tr_run_sum(int enable = 1) { on = ON && enable; }
  __device__ __forceinline__ void add(double *acc, int32_t slot, double x)
  {
    if (!ON || !on) { atomicAdd(&acc[slot], x); return; }
    if (slot == at) { sum += x; return; }
    if (at >= 0) atomicAdd(&acc[at], sum);
    at = slot;
    sum = x;
  }
  __device__ __forceinline__ void flush(double *acc)
  {
    if (ON && at >= 0) atomicAdd(&acc[at], sum);
    at = -1;
  }
};

/* ---------------------------------------------------------- row bounds */
/* Each thread sums the B row lengths of 8 consecutive A entries and adds
 * them to their rows; a warp whose entries all lie in one row adds once. */
#define TR_BOUND_ITEMS 8
static __global__ void k_row_bound(int32_t m, int64_t annz, const int64_t *__restrict__ arp,
                                   const int32_t *__restrict__ acol, const int64_t *__restrict__ brp,
                                   unsigned long long *ub)
{
  const int64_t e0 = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) * TR_BOUND_ITEMS;
  const int lane = threadIdx.x & 31;
  int32_t row = -1;
  unsigned long long sum = 0;
  int32_t first = INT_MAX, last = -1;
  if (e0 < annz) {
    row = (int32_t)tr_tile_of_entry(arp, 0, m, e0); /* last row with arp[row] <= e0 */
    first = row;
    const int64_t e1 = min(e0 + TR_BOUND_ITEMS, annz);
    for (int64_t e = e0; e < e1; e++) {
      while (arp[row + 1] <= e) {
        if (sum) atomicAdd(&ub[row], sum);
        sum = 0;
        row++;
      }
      const int32_t k = acol[e];
      sum += (unsigned long long)(brp[k + 1] - brp[k]);
    }
    last = row;
  }
  /* one row for the whole warp (a long row): one atomic */
  const int32_t r0 = __shfl_sync(0xffffffffu, first, 0);
  const bool one = __all_sync(0xffffffffu, first == r0 && last == r0);
  if (one) {
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, d);
    if (lane == 0 && sum) atomicAdd(&ub[r0], sum);
  } else if (row >= 0 && sum) atomicAdd(&ub[row], sum);
}

/* A row's bin: its table size S (at least 1.5 times the entries it can
 * hold: the row's length c, or its bound while lengths are unknown) and
 * its group of G lanes, which follows the work (the bound ub): a short
 * row with a long bound (P^T's rows reach many AP entries that sum into
 * few) gets a small table and a wide group.
 *   bin  G    S     rows
 *   1    8    32    c <= 21, ub <= 64
 *   2    32   32    c <= 21, ub > 64
 *   3    32   128   c <= 85
 *   4    32   512   c <= 341
 *   5    256  2048  c <= 1365, or ub > TR_BIN_HEAVY
 *   6    a block over a dense accumulator (global memory)
 *   7    ub > split_at: many blocks over one accumulator
 * A row of more than TR_BIN_HEAVY products takes a block's group whatever
 * its length: left to one warp, the few such rows of a coarse Pᵀ·AP (rows
 * of 300 entries summing 10⁵ products) set the kernel's length while the
 * GPU idled (classical 2-D mesh, level 3: one launch of 43 blocks, 1 ms at
 * 2 % of the SMs busy). */
#define TR_BIN_HEAVY 8192
/* A row of more than TR_BIN_SPLIT products (a dense row of A, a dense
 * column of P in P^T·AP) is split over many blocks sharing one global
 * accumulator, so that no launch lasts as long as its longest row: a grid
 * Laplacian with one dense row of 490000 entries took 8.9 ms for its
 * level-0 P^T·AP with that row on one block, 2.0 ms split (H200), and the
 * record's two kernels 155 ms with it on one warp. */
#define TR_BIN_SPLIT 65536
/* Where the split rows' sums fit in shared memory (C narrow enough), a
 * product too small to fill the GPU splits smaller rows: split_at is the
 * product's multiply-adds over TR_SPLIT_WAVES blocks per SM, within
 * [max(TR_SPLIT_MIN, 4n), TR_BIN_SPLIT] (4n: a split row's blocks can
 * each take twice as many products as the n columns they read out).  A
 * coarse level's few rows of thousands of products each into a few dozen
 * columns otherwise ran on a warp or a block apiece, the launch as long as
 * its longest row while most SMs idled (the 3-D mesh hierarchy's last
 * level: three launches of 1 to 46 blocks, 250 us of its 470 us re-run).
 * Below TR_BIN_SPLIT this splits at most TR_SPLIT_WAVES * SMs rows.  A
 * floor of 1024 sped the 3-D meshes' re-runs further but slowed the first
 * products of the 125-point stencil and the dense-row grid by 8-11 % (one
 * H100 call): 4096 kept. */
#define TR_SPLIT_WAVES 4
#define TR_SPLIT_MIN 4096
static __global__ void k_split_at(const unsigned long long *__restrict__ macs, int sms, int32_t n, int shared,
                                  unsigned long long *cursor)
{
  unsigned long long v = TR_BIN_SPLIT;
  if (shared) {
    const unsigned long long lo = 4ull * (unsigned long long)n > TR_SPLIT_MIN ? 4ull * n : TR_SPLIT_MIN;
    v = *macs / (unsigned long long)(TR_SPLIT_WAVES * (sms > 0 ? sms : 1));
    v = v < lo ? lo : v > TR_BIN_SPLIT ? TR_BIN_SPLIT : v;
  }
  cursor[TR_CSR_SPLIT_AT] = v;
}

static __device__ __forceinline__ int tr_bin_of(unsigned long long c, unsigned long long ub,
                                                unsigned long long split_at)
{
  if (c == 0) return 0;
  if (ub > split_at) return 7;
  if (c <= 341 && ub > TR_BIN_HEAVY) return 5;
  if (c <= 21) return ub <= 64 ? 1 : 2;
  if (c <= 85) return 3;
  if (c <= 341) return 4;
  if (c <= 1365) return 5;
  return 6;
}

/* A row's bin: by its bound alone for the count (count_pass), by its
 * length and bound once C's row pointers exist (fill and numeric runs,
 * whose tables then fit the row, not the bound, which can be far larger) */
static __device__ __forceinline__ int tr_bin_row(int count_pass, const unsigned long long *ub, const int64_t *crp,
                                                 int32_t i, unsigned long long split_at)
{
  return count_pass ? tr_bin_of(ub[i], ub[i], split_at)
                    : tr_bin_of((unsigned long long)(crp[i + 1] - crp[i]), ub[i], split_at);
}

/* pass 0: bin sizes; pass 1: rows placed through the bin cursors.  Both
 * count in shared memory first: one global atomic per bin and block */
static __global__ void k_bin(int pass, int count_pass, int32_t m, const unsigned long long *__restrict__ ub,
                             const int64_t *__restrict__ crp, unsigned long long *cursor, int32_t *rows)
{
  __shared__ unsigned int cnt[TR_CSR_BINS];
  __shared__ unsigned long long base[TR_CSR_BINS];
  if (threadIdx.x < TR_CSR_BINS) cnt[threadIdx.x] = 0;
  __syncthreads();
  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long split_at = cursor[TR_CSR_SPLIT_AT];
  int b = -1;
  unsigned int rank = 0;
  if (i < m) {
    b = tr_bin_row(count_pass, ub, crp, i, split_at);
    rank = atomicAdd(&cnt[b], 1u);
  }
  __syncthreads();
  if (threadIdx.x < TR_CSR_BINS && cnt[threadIdx.x])
    base[threadIdx.x] = atomicAdd(&cursor[threadIdx.x], (unsigned long long)cnt[threadIdx.x]);
  if (pass == 0) return;
  __syncthreads();
  if (b >= 0) rows[base[b] + rank] = i;
}

/* The bin sizes of pass 0 turned into pass 1's cursors in place (an
 * exclusive scan), with a copy in cursor[TR_CSR_BINS ..] for the host. */
static __global__ void k_bin_starts(unsigned long long *cursor)
{
  unsigned long long run = 0;
  for (int b = 0; b < TR_CSR_BINS; b++) {
    const unsigned long long c = cursor[b];
    cursor[b] = run;
    cursor[TR_CSR_BINS + b] = run;
    run += c;
  }
}

/* Bins the rows (for the count, or by length once crp exists): both passes
 * queued, then one read of the bins' starts and of cursor[2 * TR_CSR_BINS]
 * (the caller's value: A's multiply-adds, C's entries) into
 * hb[0 .. TR_CSR_BINS]; P->bin_start set.  The one wait of the binning:
 * the host needs the bins' sizes for the launches. */
static int tr_bin_rows(tr_cuda_csr_product *P, int count_pass, const unsigned long long *ub, unsigned long long *cursor,
                       unsigned long long *hb)
{
  const cudaStream_t s = P->s;
  const int32_t m = P->m;
  TR_RET_CU(cudaMemsetAsync(cursor, 0, TR_CSR_BINS * sizeof(*cursor), s), "CSR path bins");
  if (m > 0) {
    k_bin<<<tr_blocks(m, 256), 256, 0, s>>>(0, count_pass, m, ub, P->crp, cursor, NULL);
    TR_RET(tr_cuda_check_launch("CSR path bins"));
  }
  k_bin_starts<<<1, 1, 0, s>>>(cursor);
  TR_RET(tr_cuda_check_launch("CSR path bins"));
  if (m > 0) {
    k_bin<<<tr_blocks(m, 256), 256, 0, s>>>(1, count_pass, m, ub, P->crp, cursor, P->rows);
    TR_RET(tr_cuda_check_launch("CSR path bins"));
  }
  TR_RET(tr_readback(hb, cursor + TR_CSR_BINS, (TR_CSR_BINS + 1) * sizeof(*hb), s, "CSR path bins"));
  for (int b = 0; b < TR_CSR_BINS; b++) P->bin_start[b] = (int64_t)hb[b];
  P->bin_start[TR_CSR_BINS] = m;
  return TILERAP_SUCCESS;
}

/* one value into device memory without a host buffer to keep alive */
static __global__ void k_set_u32(uint32_t *p, uint32_t v) { *p = v; }

/* ------------------------------------------------- shared-table groups */
template <int G>
static __device__ __forceinline__ void tr_group_sync()
{
  if (G <= 32) __syncwarp();
  else __syncthreads();
}

template <int S>
static __device__ __forceinline__ int tr_slot(int32_t c)
{
  return (int)(((uint32_t)c * 2654435761u) >> 7) & (S - 1);
}

/* the slot of column c, inserted if new (*fresh: it was) */
template <int S>
static __device__ __forceinline__ int tr_insert(int32_t *key, int32_t c, bool *fresh)
{
  int h = tr_slot<S>(c);
  for (;;) {
    const int32_t k = key[h];
    if (k == c) { *fresh = false; return h; }
    if (k == TR_CSR_EMPTY) {
      const int32_t old = atomicCAS(&key[h], TR_CSR_EMPTY, c);
      if (old == TR_CSR_EMPTY) { *fresh = true; return h; }
      if (old == c) { *fresh = false; return h; }
    }
    h = (h + 1) & (S - 1);
  }
}

template <int S>
static __device__ __forceinline__ int tr_lookup(const int32_t *key, int32_t c)
{
  int h = tr_slot<S>(c);
  while (key[h] != c) h = (h + 1) & (S - 1);
  return h;
}

/* exclusive scan of x over the G lanes of a group (G <= 32: shuffles in
 * the group; G > 32: the whole block is the group, tmp >= G/32 ints) */
template <int G>
static __device__ __forceinline__ int tr_group_scan(int x, int lane, int *tmp)
{
  int incl = x;
  if constexpr (G <= 32) {
    for (int d = 1; d < G; d <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, incl, d, G);
      if (lane >= d) incl += y;
    }
    return incl - x;
  } else {
  for (int d = 1; d < 32; d <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, d);
    if ((lane & 31) >= d) incl += y;
  }
  if ((lane & 31) == 31) tmp[lane >> 5] = incl;
  __syncthreads();
  if (lane < 32) {
    int t = lane < G / 32 ? tmp[lane] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      const int y = __shfl_up_sync(0xffffffffu, t, d);
      if (lane >= d) t += y;
    }
    if (lane < G / 32) tmp[lane] = t;
  }
  __syncthreads();
  return (lane >= 32 ? tmp[(lane >> 5) - 1] : 0) + incl - x;
  }
}

/* The products of A's entries a0..a1-1 with the B rows they reach, dealt
 * out over a warp: per batch of 32 A entries, a scan of their B row
 * lengths; product t goes to lane t mod 32, whose binary search over the
 * scan (shuffles) finds its A entry.  visit(f, a, e): B entry f times A
 * entry e of value a (0 when values is false).  Every lane of the warp calls it. */
template <typename F>
static __device__ __forceinline__ void tr_warp_products(const tr_operand &A, const tr_operand &B, int64_t a0,
                                                        int64_t a1, int lane, bool values, F visit)
{
  const unsigned all = 0xffffffffu;
  for (int64_t eb = a0; eb < a1; eb += 32) {
    const int64_t e = eb + lane;
    int64_t bs = 0, len = 0;
    double av = 0.0;
    if (e < a1) {
      const int32_t k = A.col[e];
      bs = B.rp[k];
      len = B.rp[k + 1] - bs;
      if (values) av = tr_val(A, e);
    }
    /* B rows of at most one entry (an aggregation P, a one-column P):
     * each lane's product is its own, no dealing */
    if (__all_sync(all, len <= 1)) {
      if (len) visit(bs, av, e);
      continue;
    }
    int64_t incl = len;
    for (int d = 1; d < 32; d <<= 1) {
      const int64_t y = __shfl_up_sync(all, incl, d);
      if (lane >= d) incl += y;
    }
    const int64_t total = __shfl_sync(all, incl, 31);
    for (int64_t tb = 0; tb < total; tb += 32) {
      const int64_t t = tb + lane;
      int lo = 0; /* lanes whose products all come before t: t's lane */
      for (int step = 16; step; step >>= 1)
        if (__shfl_sync(all, incl, lo + step - 1) <= t) lo += step;
      const int64_t obs = __shfl_sync(all, bs, lo), oincl = __shfl_sync(all, incl, lo),
                    olen = __shfl_sync(all, len, lo);
      const double oav = __shfl_sync(all, av, lo);
      if (t < total) visit(obs + t - (oincl - olen), oav, eb + lo);
    }
  }
}

/* The same over a block of G threads (the whole block), the scan in
 * shared memory: incl, bs and av hold G entries each.  Every thread of
 * the block calls it with the same a0, a1. */
template <int G, typename F>
static __device__ __forceinline__ void tr_block_products(const tr_operand &A, const tr_operand &B, int64_t a0,
                                                         int64_t a1, int lane, bool values,
                                                         typename cub::BlockScan<long long, G>::TempStorage &scan,
                                                         long long *incl, int64_t *bs, double *av, F visit)
{
  for (int64_t eb = a0; eb < a1; eb += G) {
    const int64_t e = eb + lane;
    long long len = 0, my;
    int64_t b0 = 0;
    double a = 0.0;
    if (e < a1) {
      const int32_t k = A.col[e];
      b0 = B.rp[k];
      len = B.rp[k + 1] - b0;
      if (values) a = tr_val(A, e);
    }
    if (__syncthreads_and(len <= 1)) { /* as in tr_warp_products */
      if (len) visit(b0, a, e);
      continue;
    }
    bs[lane] = b0;
    av[lane] = a;
    cub::BlockScan<long long, G>(scan).InclusiveSum(len, my);
    incl[lane] = my;
    __syncthreads();
    const long long total = incl[G - 1];
    for (long long t = lane; t < total; t += G) {
      int lo = 0;
      for (int step = G / 2; step; step >>= 1)
        if (incl[lo + step - 1] <= t) lo += step;
      visit(bs[lo] + t - (lo ? incl[lo - 1] : 0), av[lo], eb + lo);
    }
    __syncthreads(); /* before the next batch overwrites the scan */
  }
}

template <int G, int S, int BLOCK, bool RUN>
static __global__ void __launch_bounds__(BLOCK)
    k_hash_rows(int mode, int sorted, const int32_t *__restrict__ rows, int64_t nrows, tr_operand A, tr_operand B,
                int64_t *crp, int32_t *ccol, double *cval, const int64_t *__restrict__ cvidx)
{
  constexpr int PER = S / G; /* table slots per lane in FILL */
  __shared__ int scan_tmp[G > 32 ? G / 32 : 1];
  constexpr int R = BLOCK / G;
  __shared__ int32_t skey[R][S];
  __shared__ double sval[R][S];
  __shared__ int scount[R];
  constexpr int PG = G > 32 ? G : 1; /* the block-wide product scan (G > 32) */
  __shared__ struct {
    typename cub::BlockScan<long long, PG>::TempStorage scan;
    long long incl[PG];
    int64_t bs[PG];
    double av[PG];
  } prod;
  const int g = threadIdx.x / G, lane = threadIdx.x % G;
  const int64_t slot = (int64_t)blockIdx.x * R + g;
  const bool active = slot < nrows;
  const int32_t i = active ? rows[slot] : 0;
  int32_t *key = skey[g];
  double *val = sval[g];
  for (int h = lane; h < S; h += G) { key[h] = TR_CSR_EMPTY; val[h] = 0.0; }
  if (lane == 0) scount[g] = 0;
  tr_group_sync<G>();
  {
    int fresh_n = 0;
    const bool values = mode != TR_CSR_COUNT && A.val;
    int32_t last = -1; /* the lane's last column and its slot: a repeat skips the probe */
    int h = 0;
    tr_run_sum<RUN> run;
    auto visit = [&](int64_t f, double av, int64_t) {
      const int32_t c = B.col[f];
      if (c != last) {
        bool fresh;
        h = tr_insert<S>(key, c, &fresh);
        last = c;
        if (mode == TR_CSR_COUNT) fresh_n += fresh;
      }
      if (values) run.add(val, h, av * tr_val(B, f));
    };
    const int64_t a0 = active ? A.rp[i] : 0, a1 = active ? A.rp[i + 1] : 0;
    if constexpr (G < 32) { /* short rows with short bounds (bin 1): a lane per A entry */
      for (int64_t e = a0 + lane; e < a1; e += G) {
        const int32_t k = A.col[e];
        const double av = values ? tr_val(A, e) : 0.0;
        for (int64_t f = B.rp[k], b1 = B.rp[k + 1]; f < b1; f++) visit(f, av, e);
      }
    } else if constexpr (G == 32) {
      tr_warp_products(A, B, a0, a1, lane, values, visit);
    } else {
      static_assert(G == BLOCK, "a group wider than a warp is the whole block");
      tr_block_products<G>(A, B, a0, a1, lane, values, prod.scan, prod.incl, prod.bs, prod.av, visit);
    }
    if (mode == TR_CSR_COUNT && fresh_n) atomicAdd(&scount[g], fresh_n);
    run.flush(val);
  }
  tr_group_sync<G>();
  if (mode == TR_CSR_COUNT) {
    if (active && lane == 0) crp[i] = scount[g]; /* the row's count */
    return;
  }
  if (mode == TR_CSR_FILL) {
    /* each lane takes a run of PER slots into registers; a scan of the
     * lanes' occupied counts places them: unsorted rows (an intermediate
     * product) are written at once; sorted ones are packed at the
     * table's front and sorted there, on the next power of two above the
     * row's length, not on the whole table */
    int32_t k[PER];
    double v[PER];
    int mine = 0;
#pragma unroll
    for (int j = 0; j < PER; j++) {
      k[j] = key[lane * PER + j];
      v[j] = val[lane * PER + j];
      mine += k[j] != TR_CSR_EMPTY;
    }
    const int base = tr_group_scan<G>(mine, lane, scan_tmp);
    const int64_t c0 = active ? crp[i] : 0;
    if (!sorted) {
      if (!active) return;
      int at = base;
#pragma unroll
      for (int j = 0; j < PER; j++)
        if (k[j] != TR_CSR_EMPTY) {
          ccol[c0 + at] = k[j];
          if (cval) cval[c0 + at] = v[j];
          at++;
        }
      return;
    }
    const int len = active ? (int)(crp[i + 1] - c0) : 0;
    tr_group_sync<G>(); /* the whole table is in registers */
    int at = base;
#pragma unroll
    for (int j = 0; j < PER; j++)
      if (k[j] != TR_CSR_EMPTY) { key[at] = k[j]; val[at] = v[j]; at++; }
    int n2 = 1;
    while (n2 < len) n2 <<= 1;
    if (G < 32) n2 = __reduce_max_sync(0xffffffffu, n2); /* the groups of a warp sort alike */
    for (int h = len + lane; h < n2; h += G) key[h] = TR_CSR_EMPTY;
    tr_group_sync<G>();
    for (int size = 2; size <= n2; size <<= 1)
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        for (int t = lane; t < n2 / 2; t += G) {
          const int x = 2 * t - (t & (stride - 1)), y = x + stride;
          const int32_t kx = key[x], ky = key[y];
          if ((kx > ky) == ((x & size) == 0)) {
            key[x] = ky; key[y] = kx;
            const double w = val[x]; val[x] = val[y]; val[y] = w;
          }
        }
        tr_group_sync<G>();
      }
    for (int j = lane; j < len; j += G) {
      ccol[c0 + j] = key[j];
      if (cval) cval[c0 + j] = val[j];
    }
    return;
  }
  if (!active) return;
  const int64_t c1 = crp[i + 1];
  for (int64_t p = crp[i] + lane; p < c1; p += G) cval[cvidx ? cvidx[p] : p] = val[tr_lookup<S>(key, ccol[p])];
}

/* -------------------------------------------------- dense accumulator */
/* the block's temporaries: a reduction or scan, and the product dealing */
struct tr_dense_tmp {
  typedef cub::BlockReduce<long long, TR_DENSE_THREADS> Reduce;
  typedef cub::BlockScan<long long, TR_DENSE_THREADS> Scan;
  union {
    typename Reduce::TempStorage r;
    typename Scan::TempStorage s;
  };
};
struct tr_dense_prod {
  cub::BlockScan<long long, TR_DENSE_THREADS>::TempStorage scan;
  long long incl[TR_DENSE_THREADS];
  int64_t bs[TR_DENSE_THREADS];
  double av[TR_DENSE_THREADS];
};

/* NUMERIC: C's values of a row (entries p0..p1-1) from the accumulator,
 * zeroed as read for the block's next row */
static __device__ __forceinline__ void tr_dense_values_out(int64_t p0, int64_t p1, const int32_t *__restrict__ ccol,
                                                           double *cval, const int64_t *__restrict__ cvidx, double *acc)
{
  for (int64_t p = p0 + threadIdx.x; p < p1; p += TR_DENSE_THREADS) {
    const int32_t c = ccol[p];
    cval[cvidx ? cvidx[p] : p] = acc[c];
    acc[c] = 0.0;
  }
}

/* FILL: a row's flagged columns in order, each thread a run of columns,
 * and their values, zeroed as read */
static __device__ __forceinline__ void tr_dense_fill_out(int32_t n, int32_t stamp, const int32_t *flag, double *acc,
                                                         int64_t c0, int32_t *ccol, double *cval, tr_dense_tmp &tmp)
{
  const int32_t run = (n + TR_DENSE_THREADS - 1) / TR_DENSE_THREADS;
  const int32_t lo = min(n, (int32_t)threadIdx.x * run), hi = min(n, lo + run);
  long long mine = 0, before;
  for (int32_t c = lo; c < hi; c++) mine += flag[c] == stamp;
  tr_dense_tmp::Scan(tmp.s).ExclusiveSum(mine, before);
  int64_t p = c0 + before;
  for (int32_t c = lo; c < hi; c++)
    if (flag[c] == stamp) {
      ccol[p] = c;
      if (cval) cval[p] = acc[c];
      acc[c] = 0.0;
      p++;
    }
}

/* the accumulator of a dense row: n flags (aligned), then n values */
static __host__ __device__ __forceinline__ size_t tr_dense_width(int32_t n)
{
  return ((size_t)n * sizeof(int32_t) + 255) / 256 * 256 + (size_t)n * sizeof(double);
}

/* accumulator number slot of the workspace ws */
static __device__ __forceinline__ void tr_dense_slot(void *ws, int32_t n, int64_t slot, int32_t **flag, double **acc)
{
  *flag = (int32_t *)((char *)ws + slot * tr_dense_width(n));
  *acc = (double *)((char *)*flag + ((size_t)n * sizeof(int32_t) + 255) / 256 * 256);
}

/* A block per row (rows taken in turn by the grid), an accumulator of
 * n flags and n values per block in global memory.  Flags carry a stamp
 * per row and mode (never cleared); values are zeroed as they are read. */
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_dense_rows(int mode, const int32_t *__restrict__ rows, int64_t nrows, int32_t n, tr_operand A, tr_operand B,
                 int64_t *crp, int32_t *ccol, double *cval, const int64_t *__restrict__ cvidx, void *ws)
{
  __shared__ tr_dense_tmp tmp;
  __shared__ tr_dense_prod prod;
  int32_t *flag;
  double *acc;
  tr_dense_slot(ws, n, blockIdx.x, &flag, &acc);
  for (int64_t slot = blockIdx.x; slot < nrows; slot += gridDim.x) {
    const int32_t i = rows[slot];
    const int32_t stamp = mode == TR_CSR_COUNT ? i + 1 : -(i + 1);
    long long fresh_n = 0;
    const bool values = mode != TR_CSR_COUNT && A.val;
    tr_block_products<TR_DENSE_THREADS>(A, B, A.rp[i], A.rp[i + 1], threadIdx.x, values, prod.scan, prod.incl,
                                        prod.bs, prod.av, [&](int64_t f, double av, int64_t) {
      const int32_t c = B.col[f];
      if (mode == TR_CSR_COUNT) {
        if (flag[c] != stamp && atomicExch(&flag[c], stamp) != stamp) fresh_n++;
      } else {
        if (mode == TR_CSR_FILL) flag[c] = stamp;
        if (values) atomicAdd(&acc[c], av * tr_val(B, f));
      }
    });
    if (mode == TR_CSR_COUNT) {
      const long long total = tr_dense_tmp::Reduce(tmp.r).Sum(fresh_n);
      if (threadIdx.x == 0) crp[i] = total; /* the row's count */
      __syncthreads();
      continue;
    }
    __syncthreads();
    if (mode == TR_CSR_FILL) {
      tr_dense_fill_out(n, stamp, flag, acc, crp[i], ccol, cval, tmp);
    } else {
      tr_dense_values_out(crp[i], crp[i + 1], ccol, cval, cvidx, acc);
    }
    __syncthreads();
  }
}

/* A block's accumulator in dynamic shared memory (smem), cleared: the
 * values (FILL, NUMERIC), then a bitmap of the columns met (COUNT, FILL);
 * tr_shared_acc_bytes is its size */
template <int MODE>
static __host__ __device__ __forceinline__ size_t tr_shared_acc_bytes(int32_t n)
{
  return (MODE == TR_CSR_COUNT ? 0 : (size_t)n * sizeof(double)) +
         (MODE == TR_CSR_NUMERIC ? 0 : ((size_t)n + 31) / 32 * sizeof(uint32_t));
}
template <int MODE>
static __device__ __forceinline__ void tr_shared_acc(unsigned char *smem, int32_t n, double **acc, uint32_t **bits)
{
  *acc = (double *)smem;
  *bits = (uint32_t *)(smem + (MODE == TR_CSR_COUNT ? 0 : (size_t)n * sizeof(double)));
  if (MODE != TR_CSR_COUNT)
    for (int32_t c = threadIdx.x; c < n; c += TR_DENSE_THREADS) (*acc)[c] = 0.0;
  if (MODE != TR_CSR_NUMERIC)
    for (int32_t w = threadIdx.x; w < (n + 31) >> 5; w += TR_DENSE_THREADS) (*bits)[w] = 0u;
  __syncthreads();
}

/* The same with the accumulator in shared memory (dynamic, sized at the
 * product's creation): COUNT a bitmap of the row's columns, FILL the bitmap
 * and the values, NUMERIC the values alone.  Values are zeroed as they are
 * read and the bitmap as it is written out, so a block's next row starts
 * clean; the grid is what fits the device at once, rows taken in turn. */
template <int MODE>
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_dense_rows_shared(const int32_t *__restrict__ rows, int64_t nrows, int32_t n, tr_operand A, tr_operand B,
                        int64_t *crp, int32_t *ccol, double *cval, const int64_t *__restrict__ cvidx)
{
  __shared__ tr_dense_tmp tmp;
  __shared__ tr_dense_prod prod;
  extern __shared__ __align__(16) unsigned char tr_dense_smem[];
  const int32_t words = (n + 31) >> 5;
  double *acc;
  uint32_t *bits;
  tr_shared_acc<MODE>(tr_dense_smem, n, &acc, &bits);
  const bool values = MODE != TR_CSR_COUNT && A.val;
  for (int64_t slot = blockIdx.x; slot < nrows; slot += gridDim.x) {
    const int32_t i = rows[slot];
    long long fresh_n = 0;
    tr_block_products<TR_DENSE_THREADS>(A, B, A.rp[i], A.rp[i + 1], threadIdx.x, values, prod.scan, prod.incl,
                                        prod.bs, prod.av, [&](int64_t f, double av, int64_t) {
      const int32_t c = B.col[f];
      if (MODE != TR_CSR_NUMERIC) {
        const uint32_t bit = 1u << (c & 31);
        if (!(bits[c >> 5] & bit) && !(atomicOr(&bits[c >> 5], bit) & bit)) fresh_n++;
      }
      if (values) atomicAdd(&acc[c], av * tr_val(B, f));
    });
    __syncthreads();
    if (MODE == TR_CSR_COUNT) {
      const long long total = tr_dense_tmp::Reduce(tmp.r).Sum(fresh_n);
      if (threadIdx.x == 0) crp[i] = total; /* the row's count */
      for (int32_t w = threadIdx.x; w < words; w += TR_DENSE_THREADS) bits[w] = 0u;
    } else if (MODE == TR_CSR_FILL) { /* each thread a run of words, in order */
      const int32_t run = (words + TR_DENSE_THREADS - 1) / TR_DENSE_THREADS;
      const int32_t lo = min(words, (int32_t)threadIdx.x * run), hi = min(words, lo + run);
      long long mine = 0, before;
      for (int32_t w = lo; w < hi; w++) mine += __popc(bits[w]);
      tr_dense_tmp::Scan(tmp.s).ExclusiveSum(mine, before);
      int64_t p = crp[i] + before;
      for (int32_t w = lo; w < hi; w++) {
        for (uint32_t b = bits[w]; b; b &= b - 1) {
          const int32_t c = w * 32 + __ffs(b) - 1;
          ccol[p] = c;
          if (cval) { cval[p] = acc[c]; acc[c] = 0.0; }
          p++;
        }
        bits[w] = 0u;
      }
    } else {
      tr_dense_values_out(crp[i], crp[i + 1], ccol, cval, cvidx, acc);
    }
    __syncthreads();
  }
}

/* Split rows are cut into work items in proportion to their products
 * (tr_split_layout): a launch's products over TR_SPLIT_ITEMS_PER_SM items
 * per SM, each item a run of its row's A entries holding about that many
 * products.  (The same number of blocks for every row of a launch let the
 * longest row set the launch's length: design.md, "Split rows' work
 * items".) */
#define TR_SPLIT_ITEMS_PER_SM 8
/* the fewest products of an item: 4 a thread */
#define TR_SPLIT_ITEM_MIN 2048
/* items of a row of at least this many A entries each are even runs of
 * entries: enough entries to even out their B rows' lengths, and no scan
 * of a long row on one block */
#define TR_SPLIT_EVEN_ENTRIES 64

/* work item w of a launch of k split rows: its row's slot in the launch,
 * the row, and its run e0..e1-1 of the row's A entries */
static __device__ __forceinline__ void tr_split_item(int64_t w, int32_t k, const int32_t *__restrict__ cum,
                                                     const int64_t *__restrict__ item, const int32_t *__restrict__ rows,
                                                     const int64_t *__restrict__ arp, int32_t *slot, int32_t *i,
                                                     int64_t *e0, int64_t *e1)
{
  int32_t lo = 0, hi = k - 1; /* the first row whose items reach past w */
  while (lo < hi) {
    const int32_t mid = (lo + hi) >> 1;
    if (cum[mid] > w) hi = mid;
    else lo = mid + 1;
  }
  *slot = lo;
  *i = rows[lo];
  *e0 = item[w];
  *e1 = w + 1 < cum[lo] ? item[w + 1] : arp[*i + 1];
}

/* Per launch of slots rows (a block each): each row's items, its products
 * over the launch's item size W (at least one item, at most one per A
 * entry), W = the launch's products over target items, at least lo;
 * cum[r] their running sum over the launch's rows, w[launch] = W */
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_split_counts(const int32_t *__restrict__ rows, int64_t nsplit, int32_t slots,
                   const unsigned long long *__restrict__ ub, const int64_t *__restrict__ arp,
                   unsigned long long target, unsigned long long lo, int32_t *cum, unsigned long long *w)
{
  __shared__ tr_dense_tmp tmp;
  __shared__ unsigned long long size;
  __shared__ long long carry;
  const int64_t r0 = (int64_t)blockIdx.x * slots, r1 = nsplit < r0 + slots ? nsplit : r0 + slots;
  long long mine = 0;
  for (int64_t r = r0 + threadIdx.x; r < r1; r += TR_DENSE_THREADS) mine += (long long)ub[rows[r]];
  const long long total = tr_dense_tmp::Reduce(tmp.r).Sum(mine);
  if (threadIdx.x == 0) {
    const unsigned long long W = ((unsigned long long)total + target - 1) / target;
    size = W < lo ? lo : W;
    w[blockIdx.x] = size;
    carry = 0;
  }
  __syncthreads();
  const unsigned long long W = size;
  for (int64_t b = r0; b < r1; b += TR_DENSE_THREADS) {
    const int64_t r = b + threadIdx.x;
    long long x = 0, incl;
    if (r < r1) {
      const int32_t i = rows[r];
      const long long len = arp[i + 1] - arp[i];
      x = (long long)((ub[i] + W - 1) / W);
      if (x > len) x = len;
      if (x < 1) x = 1;
    }
    tr_dense_tmp::Scan(tmp.s).InclusiveSum(x, incl);
    if (r < r1) cum[r] = (int32_t)(carry + incl);
    __syncthreads();
    if (threadIdx.x == TR_DENSE_THREADS - 1) carry += incl;
    __syncthreads();
  }
}

/* Per split row (a block each): each item's first A entry, item x (of X)
 * starting at the entry that holds the row's product x W (a scan of the
 * row's B row lengths), or even runs of a long row's entries; items of a
 * launch from item + launch * cap */
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_split_bounds(const int32_t *__restrict__ rows, int32_t slots, const int32_t *__restrict__ cum,
                   const unsigned long long *__restrict__ w, const int64_t *__restrict__ arp,
                   const int32_t *__restrict__ acol, const int64_t *__restrict__ brp, int64_t cap, int64_t *item)
{
  __shared__ tr_dense_tmp tmp;
  __shared__ long long carry;
  const int64_t r = blockIdx.x, launch = r / slots;
  const int32_t i = rows[r];
  const long long first = r % slots ? cum[r - 1] : 0, X = cum[r] - first;
  const unsigned long long W = w[launch];
  int64_t *it = item + launch * cap + first;
  const int64_t a0 = arp[i], a1 = arp[i + 1];
  if (a1 - a0 >= TR_SPLIT_EVEN_ENTRIES * X) {
    for (long long x = threadIdx.x; x < X; x += TR_DENSE_THREADS) it[x] = a0 + (a1 - a0) * x / X;
    return;
  }
  if (threadIdx.x == 0) {
    it[0] = a0;
    carry = 0;
  }
  if (X == 1) return; /* the whole block */
  __syncthreads();
  for (int64_t eb = a0; eb < a1; eb += TR_DENSE_THREADS) {
    const int64_t e = eb + threadIdx.x;
    long long len = 0, incl;
    if (e < a1) {
      const int32_t c = acol[e];
      len = brp[c + 1] - brp[c];
    }
    tr_dense_tmp::Scan(tmp.s).InclusiveSum(len, incl);
    /* entry e holds the row's products lo..hi-1: items x whose x W falls there
     * ((X - 1) W is below the row's products: X is at most their count over W, rounded up) */
    const unsigned long long hi = (unsigned long long)(carry + incl), lo = hi - (unsigned long long)len;
    if (len > 0)
      for (long long x = lo ? (long long)((lo + W - 1) / W) : 1; x < X && (unsigned long long)x * W < hi; x++) it[x] = e;
    __syncthreads();
    if (threadIdx.x == TR_DENSE_THREADS - 1) carry += incl;
    __syncthreads();
  }
}

/* Split rows, a work item per block (tr_split_item; the grid is the
 * launch's most items, the blocks past its items return), all of a row's
 * items on one global accumulator (slot = the row's place in the launch).  COUNT
 * adds each item's new columns to crp[i] (zeroed by the caller); FILL and
 * NUMERIC accumulate, k_split_out writes. */
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_split_rows(int mode, const int32_t *__restrict__ rows, int32_t k, const int32_t *__restrict__ cum,
                 const int64_t *__restrict__ item, int32_t n, tr_operand A, tr_operand B, int64_t *crp, void *ws)
{
  __shared__ tr_dense_tmp tmp;
  __shared__ tr_dense_prod prod;
  const int64_t w = blockIdx.x;
  if (k <= 0 || w >= cum[k - 1]) return; /* the whole block */
  const bool values = mode != TR_CSR_COUNT && A.val;
  int32_t slot, i;
  int64_t e0, e1;
  tr_split_item(w, k, cum, item, rows, A.rp, &slot, &i, &e0, &e1);
  int32_t *flag;
  double *acc;
  tr_dense_slot(ws, n, slot, &flag, &acc);
  const int32_t stamp = mode == TR_CSR_COUNT ? i + 1 : -(i + 1);
  long long fresh_n = 0;
  tr_block_products<TR_DENSE_THREADS>(A, B, e0, e1, threadIdx.x, values, prod.scan, prod.incl, prod.bs, prod.av,
                                      [&](int64_t f, double av, int64_t) {
    const int32_t c = B.col[f];
    if (mode == TR_CSR_COUNT) {
      if (flag[c] != stamp && atomicExch(&flag[c], stamp) != stamp) fresh_n++;
    } else {
      if (mode == TR_CSR_FILL && flag[c] != stamp) flag[c] = stamp; /* every item writes the same stamp */
      if (values) atomicAdd(&acc[c], av * tr_val(B, f));
    }
  });
  if (mode == TR_CSR_COUNT) {
    const long long total = tr_dense_tmp::Reduce(tmp.r).Sum(fresh_n);
    if (threadIdx.x == 0 && total) atomicAdd((unsigned long long *)&crp[i], (unsigned long long)total);
  }
}

/* Split rows where C is narrow (n <= TR_SPLIT_SHARED_COLS): each item's
 * products summed in shared memory (the values for FILL and NUMERIC, a
 * bitmap of the columns met for COUNT and FILL), then added to the row's
 * global accumulator once per column met.  With the global accumulator
 * alone, a power-law graph's hub rows (10^5 products into a few thousand
 * columns) had all their blocks' fp64 atomics on the same few thousand
 * addresses.  (TR_SPLIT_SHARED_COLS: at the top) */
template <int MODE>
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_split_rows_shared(const int32_t *__restrict__ rows, int32_t k, const int32_t *__restrict__ cum,
                        const int64_t *__restrict__ item, int32_t n, tr_operand A, tr_operand B, int64_t *crp,
                        void *ws, int run_sums)
{
  __shared__ tr_dense_tmp tmp;
  __shared__ tr_dense_prod prod;
  extern __shared__ __align__(16) unsigned char tr_split_smem[];
  const int32_t words = (n + 31) >> 5;
  const int64_t w = blockIdx.x;
  if (k <= 0 || w >= cum[k - 1]) return; /* the whole block */
  const bool values = MODE != TR_CSR_COUNT && A.val;
  int32_t slot, i;
  int64_t e0, e1;
  tr_split_item(w, k, cum, item, rows, A.rp, &slot, &i, &e0, &e1);
  double *sacc;
  uint32_t *bits;
  tr_shared_acc<MODE>(tr_split_smem, n, &sacc, &bits);
  int32_t *flag;
  double *acc;
  tr_dense_slot(ws, n, slot, &flag, &acc);
  const int32_t stamp = MODE == TR_CSR_COUNT ? i + 1 : -(i + 1);
  tr_run_sum<true> run(run_sums);
  tr_block_products<TR_DENSE_THREADS>(A, B, e0, e1, threadIdx.x, values, prod.scan, prod.incl, prod.bs, prod.av,
                                      [&](int64_t f, double av, int64_t) {
    const int32_t c = B.col[f];
    if (MODE != TR_CSR_NUMERIC) {
      const uint32_t bit = 1u << (c & 31);
      if (!(bits[c >> 5] & bit)) atomicOr(&bits[c >> 5], bit);
    }
    if (values) run.add(sacc, c, av * tr_val(B, f));
  });
  if (values) run.flush(sacc);
  __syncthreads();
  if constexpr (MODE == TR_CSR_NUMERIC) { /* a column met with a zero sum adds nothing */
    for (int32_t c = threadIdx.x; c < n; c += TR_DENSE_THREADS) {
      const double v = sacc[c];
      if (v != 0.0) atomicAdd(&acc[c], v);
    }
  } else {
    long long fresh_n = 0;
    for (int32_t wd = threadIdx.x; wd < words; wd += TR_DENSE_THREADS)
      for (uint32_t b = bits[wd]; b; b &= b - 1) {
        const int32_t c = wd * 32 + __ffs(b) - 1;
        if (MODE == TR_CSR_COUNT) {
          if (flag[c] != stamp && atomicExch(&flag[c], stamp) != stamp) fresh_n++;
        } else {
          if (flag[c] != stamp) flag[c] = stamp; /* every item writes the same stamp */
          if (values) atomicAdd(&acc[c], sacc[c]);
        }
      }
    if (MODE == TR_CSR_COUNT) {
      const long long total = tr_dense_tmp::Reduce(tmp.r).Sum(fresh_n);
      if (threadIdx.x == 0 && total) atomicAdd((unsigned long long *)&crp[i], (unsigned long long)total);
    }
  }
}

/* the split rows' columns (FILL) or values (NUMERIC) once all their
 * blocks are done: a block per row */
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_split_out(int mode, const int32_t *__restrict__ rows, int32_t n, const int64_t *__restrict__ crp, int32_t *ccol,
                double *cval, const int64_t *__restrict__ cvidx, void *ws)
{
  __shared__ tr_dense_tmp tmp;
  int32_t *flag;
  double *acc;
  tr_dense_slot(ws, n, blockIdx.x, &flag, &acc);
  const int32_t i = rows[blockIdx.x];
  if (mode == TR_CSR_FILL) tr_dense_fill_out(n, -(i + 1), flag, acc, crp[i], ccol, cval, tmp);
  else tr_dense_values_out(crp[i], crp[i + 1], ccol, cval, cvidx, acc);
}

/* blocks per split row: the device filled a few times over by the rows of
 * one launch */
static int tr_split_blocks(const tr_cuda_csr_product *P, int64_t nrows)
{
  const int64_t x = 4 * (int64_t)P->sms / (nrows > 0 ? nrows : 1);
  return (int)(x < 1 ? 1 : x > 1024 ? 1024 : x);
}

/* The blocks of kernel k with need bytes of dynamic shared memory that fit
 * an SM at once (0: need does not fit a block).  The kernel's limit is set
 * to the device's, for the whole process: set to one product's need, a
 * product of a narrower C made later lowered it under an earlier product's,
 * whose next runs then failed to launch. */
template <typename K>
static int tr_shared_fit(K k, size_t need, const char *what, int *per_sm)
{
  int dev = 0, optin = 0;
  cudaFuncAttributes fa;
  *per_sm = 0;
  TR_RET_CU(cudaGetDevice(&dev), what);
  TR_RET_CU(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), what);
  TR_RET_CU(cudaFuncGetAttributes(&fa, k), what);
  if (need + fa.sharedSizeBytes > (size_t)optin) return TILERAP_SUCCESS;
  TR_RET_CU(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - (int)fa.sharedSizeBytes),
            what);
  TR_RET_CU(cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, k, TR_DENSE_THREADS, need), what);
  return TILERAP_SUCCESS;
}

/* Dynamic shared memory of the dense rows in each mode, where it fits
 * (else 0: the global accumulator), and the blocks that fit the device at
 * once.  COUNT's bitmap is cleared whole after each row: it is kept to 16
 * words a thread. */
template <int MODE>
static int tr_dense_shared_fit(int32_t n, int sms, size_t *bytes, int *blocks)
{
  const size_t words = ((size_t)n + 31) / 32, need = tr_shared_acc_bytes<MODE>(n);
  int per_sm = 0;
  *bytes = 0;
  *blocks = 0;
  if (MODE == TR_CSR_COUNT && words > 16 * TR_DENSE_THREADS) return TILERAP_SUCCESS;
  TR_RET(tr_shared_fit(k_dense_rows_shared<MODE>, need, "CSR path dense rows", &per_sm));
  if (per_sm < 1) return TILERAP_SUCCESS;
  *bytes = need;
  *blocks = per_sm * sms;
  return TILERAP_SUCCESS;
}

/* Dynamic shared memory of the split rows in each mode where C is narrow
 * enough and it fits (else 0: the global accumulator alone) */
template <int MODE>
static int tr_split_shared_fit(int32_t n, size_t *bytes)
{
  *bytes = 0;
  if (n > TR_SPLIT_SHARED_COLS) return TILERAP_SUCCESS;
  size_t need = tr_shared_acc_bytes<MODE>(n);
  if (!need) need = sizeof(double);
  int per_sm = 0;
  TR_RET(tr_shared_fit(k_split_rows_shared<MODE>, need, "CSR path split rows", &per_sm));
  if (per_sm >= 1) *bytes = need;
  return TILERAP_SUCCESS;
}

/* The split rows' work items for the rows of the latest binning (the
 * count's, then the fill's, whose order can differ): launches only */
static int tr_split_layout(const tr_cuda_csr_product *P, const unsigned long long *ub)
{
  const int64_t nsplit = P->bin_start[8] - P->bin_start[7];
  if (nsplit <= 0) return TILERAP_SUCCESS;
  const int32_t *rows = P->rows + P->bin_start[7];
  const int64_t launches = (nsplit + P->split_slots - 1) / P->split_slots;
  /* an item in shared memory clears and reads out n columns: it takes at
   * least twice as many products as that */
  const unsigned long long lo = P->split_shm_bytes[TR_CSR_NUMERIC] && 2ull * (unsigned long long)P->n > TR_SPLIT_ITEM_MIN
                                    ? 2ull * P->n
                                    : TR_SPLIT_ITEM_MIN;
  k_split_counts<<<(unsigned)launches, TR_DENSE_THREADS, 0, P->s>>>(
      rows, nsplit, P->split_slots, ub, P->arp, (unsigned long long)TR_SPLIT_ITEMS_PER_SM * P->sms, lo, P->split_cum,
      P->split_w);
  TR_RET(tr_cuda_check_launch("CSR path split rows"));
  k_split_bounds<<<(unsigned)nsplit, TR_DENSE_THREADS, 0, P->s>>>(rows, P->split_slots, P->split_cum, P->split_w,
                                                                  P->arp, P->acol, P->brp, P->split_items_cap,
                                                                  P->split_item);
  return tr_cuda_check_launch("CSR path split rows");
}

/* ---------------------------------------------------- recorded re-runs */
/* A hash or dense-accumulator run costs a table insertion and a shared
 * fp64 atomic (a compare-and-swap loop) per multiply-add, and beyond that
 * the per-row table set-up and read-out; where C's entries sum few
 * products each (unordered meshes, random graphs: one to two), that is
 * most of the run.  A record lists each C entry's products as the
 * positions of their two values; a recorded run is then a gather per C
 * entry: no table, no atomic, and the sum order is fixed, so re-runs give
 * the same bits.  The record is made by the second numeric run (the first
 * whose plan is being reused), from C's sorted rows: a count of each
 * entry's products, a scan, and a placement that counts down from each
 * entry's end. */

/* the position of column c in C's sorted row i (present) */
static __device__ __forceinline__ int64_t tr_entry_of(const int64_t *__restrict__ crp, const int32_t *__restrict__ ccol,
                                                      int32_t i, int32_t c)
{
  int64_t lo = crp[i], hi = crp[i + 1] - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi) >> 1;
    if (ccol[mid] < c) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* PLACE 0: ptr[p] counts entry p's products; PLACE 1 (ptr the inclusive
 * scan of the counts): each product's value positions go to the end of its
 * entry's range, ptr[p] counting down to the range's start */
template <int PLACE>
static __device__ __forceinline__ void tr_record_product(const tr_operand &A, const tr_operand &B,
                                                         const int64_t *__restrict__ crp,
                                                         const int32_t *__restrict__ ccol, int32_t i, int64_t f,
                                                         int64_t e, uint32_t *ptr, int32_t *ra, int32_t *rb)
{
  const int64_t p = tr_entry_of(crp, ccol, i, B.col[f]);
  if (!PLACE) {
    atomicAdd(&ptr[p], 1u);
  } else {
    const uint32_t q = atomicSub(&ptr[p], 1u) - 1u;
    ra[q] = (int32_t)(A.vidx ? A.vidx[e] : e);
    rb[q] = (int32_t)(B.vidx ? B.vidx[f] : f);
  }
}

/* a warp per row of C (the rows of the table bins 1-4) */
template <int PLACE>
static __global__ void k_record(const int32_t *__restrict__ rows, int64_t nrows, tr_operand A, tr_operand B,
                                const int64_t *__restrict__ crp, const int32_t *__restrict__ ccol, uint32_t *ptr,
                                int32_t *ra, int32_t *rb)
{
  const int64_t slot = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  if (slot >= nrows) return; /* the whole warp */
  const int32_t i = rows[slot];
  tr_warp_products(A, B, A.rp[i], A.rp[i + 1], threadIdx.x & 31, false, [&](int64_t f, double, int64_t e) {
    tr_record_product<PLACE>(A, B, crp, ccol, i, f, e, ptr, ra, rb);
  });
}

/* X blocks per row (the rows of bins 5-7: long, heavy and split), as
 * k_split_rows deals them */
template <int PLACE>
static __global__ void __launch_bounds__(TR_DENSE_THREADS)
    k_record_split(const int32_t *__restrict__ rows, int X, tr_operand A, tr_operand B,
                   const int64_t *__restrict__ crp, const int32_t *__restrict__ ccol, uint32_t *ptr, int32_t *ra,
                   int32_t *rb)
{
  __shared__ tr_dense_prod prod;
  const int64_t slot = blockIdx.x / X, x = blockIdx.x % X;
  const int32_t i = rows[slot];
  const int64_t a0 = A.rp[i], len = A.rp[i + 1] - a0;
  tr_block_products<TR_DENSE_THREADS>(A, B, a0 + len * x / X, a0 + len * (x + 1) / X, threadIdx.x, false, prod.scan,
                                      prod.incl, prod.bs, prod.av, [&](int64_t f, double, int64_t e) {
    tr_record_product<PLACE>(A, B, crp, ccol, i, f, e, ptr, ra, rb);
  });
}

/* a warp per 32 consecutive C entries: a lane per entry, or, where the 32
 * hold more than TR_REC_LANE_MEAN products each on average, subgroups of
 * W lanes (a power of two up to the warp) an entry each, about
 * TR_REC_SUB_PER_LANE products a lane: a warp per entry leaves lanes idle
 * on entries of 10-40 products and pays its 5 shuffle steps per entry.
 * W is a template argument: with a stride known at compile time the
 * product loop unrolls and keeps several loads in flight */
#define TR_REC_LANE_MEAN 8
#define TR_REC_SUB_PER_LANE 4
template <int W>
static __device__ __forceinline__ void tr_recorded_sub(int64_t p0, int np, int lane, const uint32_t *__restrict__ ptr,
                                                       const int32_t *__restrict__ ra, const int32_t *__restrict__ rb,
                                                       const double *__restrict__ aval,
                                                       const double *__restrict__ bval, double *cval,
                                                       const int64_t *__restrict__ cvidx)
{
  const int sub = lane / W, sl = lane % W;
  /* rounds taken by every lane alike: the shuffles need the whole warp */
  for (int j0 = 0; j0 < np; j0 += 32 / W) {
    const int j = j0 + sub;
    double sum = 0.0;
    if (j < np)
      for (uint32_t q = ptr[p0 + j] + sl, q1 = ptr[p0 + j + 1]; q < q1; q += W) sum += aval[ra[q]] * bval[rb[q]];
#pragma unroll
    for (int d = W >> 1; d; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    if (j < np && sl == 0) cval[cvidx ? cvidx[p0 + j] : p0 + j] = sum;
  }
}

static __global__ void k_recorded(int64_t cnnz, const uint32_t *__restrict__ ptr, const int32_t *__restrict__ ra,
                                  const int32_t *__restrict__ rb, const double *__restrict__ aval,
                                  const double *__restrict__ bval, double *cval, const int64_t *__restrict__ cvidx)
{
  const int64_t p0 = ((blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5) * 32;
  const int lane = threadIdx.x & 31;
  if (p0 >= cnnz) return; /* the whole warp */
  const int np = (int)(cnnz - p0 < 32 ? cnnz - p0 : 32);
  const uint32_t total = ptr[p0 + np] - ptr[p0];
  if (total <= 32u * TR_REC_LANE_MEAN) {
    if (lane >= np) return;
    const int64_t p = p0 + lane;
    double sum = 0.0;
    for (uint32_t q = ptr[p], q1 = ptr[p + 1]; q < q1; q++) sum += aval[ra[q]] * bval[rb[q]];
    cval[cvidx ? cvidx[p] : p] = sum;
    return;
  }
  int w = 2; /* the mean is above TR_REC_LANE_MEAN: two lanes at least */
  while (w < 32 && (uint32_t)w * TR_REC_SUB_PER_LANE * (uint32_t)np < total) w <<= 1;
  switch (w) { /* the same for the whole warp */
  case 2: tr_recorded_sub<2>(p0, np, lane, ptr, ra, rb, aval, bval, cval, cvidx); break;
  case 4: tr_recorded_sub<4>(p0, np, lane, ptr, ra, rb, aval, bval, cval, cvidx); break;
  case 8: tr_recorded_sub<8>(p0, np, lane, ptr, ra, rb, aval, bval, cval, cvidx); break;
  case 16: tr_recorded_sub<16>(p0, np, lane, ptr, ra, rb, aval, bval, cval, cvidx); break;
  default: tr_recorded_sub<32>(p0, np, lane, ptr, ra, rb, aval, bval, cval, cvidx); break;
  }
}

/* one pass of the record over every row with products: the table bins'
 * rows a warp each, those of bins 5-7 over blocks */
template <int PLACE>
static int tr_record_pass(const tr_cuda_csr_product *P, const tr_operand &A, const tr_operand &B)
{
  const int64_t nwarp = P->bin_start[5] - P->bin_start[1], nblock = P->bin_start[8] - P->bin_start[5];
  int32_t *ra = PLACE ? P->rec_a : NULL, *rb = PLACE ? P->rec_b : NULL;
  if (nwarp > 0)
    k_record<PLACE><<<tr_blocks(nwarp * 32, 256), 256, 0, P->s>>>(P->rows + P->bin_start[1], nwarp, A, B, P->crp,
                                                                   P->ccol, P->rec_ptr, ra, rb);
  if (nblock > 0) {
    const int X = tr_split_blocks(P, nblock);
    k_record_split<PLACE><<<(unsigned)(nblock * X), TR_DENSE_THREADS, 0, P->s>>>(P->rows + P->bin_start[5], X, A, B,
                                                                                 P->crp, P->ccol, P->rec_ptr, ra, rb);
  }
  return tr_cuda_check_launch("CSR path record");
}

/* the record from the operands' views: launches only */
static int tr_record(tr_cuda_csr_product *P, const tr_operand &A, const tr_operand &B)
{
  TR_RET_CU(cudaMemsetAsync(P->rec_ptr, 0, (size_t)P->cnnz * sizeof(uint32_t), P->s), "CSR path record");
  TR_RET(tr_record_pass<0>(P, A, B));
  size_t bytes = P->rec_scan_bytes;
  TR_RET_CU(cub::DeviceScan::InclusiveSum(P->rec_scan, bytes, P->rec_ptr, P->rec_ptr, P->cnnz, P->s),
            "CSR path record");
  return tr_record_pass<1>(P, A, B);
}

static void tr_record_free(tr_cuda_csr_product *P)
{
  tr_dfree(P->rec_ptr, P->s); tr_dfree(P->rec_a, P->s); tr_dfree(P->rec_b, P->s); tr_dfree(P->rec_scan, P->s);
  P->rec_ptr = NULL; P->rec_a = P->rec_b = NULL; P->rec_scan = NULL;
}

/* Keeps a record for re-runs: its memory now (4 bytes per C entry, 8 per
 * multiply-add), made by the second numeric run.  Value positions are
 * 32-bit: operands of 2^31 entries or more, or 2^32 multiply-adds, keep
 * the table runs (TILERAP_SUCCESS, no record). */
extern "C" int tr_cuda_csr_product_keep_record(tr_cuda_csr_product *P, int64_t annz, int64_t bnnz, int *kept)
{
  *kept = 0;
  if (P->rec_ptr || P->macs <= 0 || P->macs >= (int64_t)UINT32_MAX || annz >= INT32_MAX || bnnz >= INT32_MAX ||
      P->cnnz >= INT32_MAX)
    return TILERAP_SUCCESS;
  const cudaStream_t s = P->s;
  const uint32_t total = (uint32_t)P->macs;
  int err = TILERAP_SUCCESS;
  TR_TRY(tr_dalloc((void **)&P->rec_ptr, ((size_t)P->cnnz + 1) * sizeof(uint32_t), s, "CSR path record"));
  TR_TRY(tr_dalloc((void **)&P->rec_a, (size_t)P->macs * sizeof(int32_t), s, "CSR path record"));
  TR_TRY(tr_dalloc((void **)&P->rec_b, (size_t)P->macs * sizeof(int32_t), s, "CSR path record"));
  TR_TRY_CU(cub::DeviceScan::InclusiveSum(NULL, P->rec_scan_bytes, P->rec_ptr, P->rec_ptr, P->cnnz, s),
            "CSR path record");
  TR_TRY(tr_dalloc(&P->rec_scan, P->rec_scan_bytes ? P->rec_scan_bytes : 1, s, "CSR path record"));
  /* the end of the last entry's range, which the runs never write (a
   * kernel, not a copy from the host: no wait) */
  k_set_u32<<<1, 1, 0, s>>>(P->rec_ptr + P->cnnz, total);
  TR_TRY(tr_cuda_check_launch("CSR path record"));
  *kept = 1;
  return TILERAP_SUCCESS;
cleanup:
  tr_record_free(P);
  return err;
}

extern "C" int64_t tr_cuda_csr_product_recorded(const tr_cuda_csr_product *P, int64_t *bytes)
{
  const int kept = P && P->rec_ptr;
  *bytes = kept ? (int64_t)(((size_t)P->cnnz + 1) * sizeof(uint32_t) + 2 * (size_t)P->macs * sizeof(int32_t) +
                            P->rec_scan_bytes)
                : 0;
  return kept ? P->macs : 0;
}

/* ------------------------------------------------------------ driver */
/* a table bin's launch, with or without run sums */
template <int G, int S, int BLOCK>
static void tr_hash_launch(const tr_cuda_csr_product *P, unsigned grid, int mode, int sorted, const int32_t *rows,
                           int64_t nr, const tr_operand &A, const tr_operand &B, int64_t *crp, double *cval,
                           const int64_t *cvidx)
{
  if (P->run_sums)
    k_hash_rows<G, S, BLOCK, true><<<grid, BLOCK, 0, P->s>>>(mode, sorted, rows, nr, A, B, crp, P->ccol, cval, cvidx);
  else
    k_hash_rows<G, S, BLOCK, false><<<grid, BLOCK, 0, P->s>>>(mode, sorted, rows, nr, A, B, crp, P->ccol, cval, cvidx);
}

/* Bins 3 and 4 with fewer rows than this many per SM take a block per row
 * instead of a warp: a coarse level's few long rows otherwise leave most
 * SMs idle for the launch. */
#define TR_FEW_ROWS_PER_SM 8

/* the split rows of one launch (k rows; their items: cum, item) */
static void tr_split_launch(const tr_cuda_csr_product *P, int mode, const int32_t *rows, int64_t k, const int32_t *cum,
                            const int64_t *item, const tr_operand &A, const tr_operand &B, int64_t *crp)
{
  const cudaStream_t s = P->s;
  const size_t sh = P->split_shm_bytes[mode];
  const unsigned g = (unsigned)P->split_items_cap; /* the blocks past the launch's items return */
  const int32_t kk = (int32_t)k;
  if (!sh)
    k_split_rows<<<g, TR_DENSE_THREADS, 0, s>>>(mode, rows, kk, cum, item, P->n, A, B, crp, P->split);
  else if (mode == TR_CSR_COUNT)
    k_split_rows_shared<TR_CSR_COUNT><<<g, TR_DENSE_THREADS, sh, s>>>(rows, kk, cum, item, P->n, A, B, crp, P->split,
                                                                      P->run_sums);
  else if (mode == TR_CSR_FILL)
    k_split_rows_shared<TR_CSR_FILL><<<g, TR_DENSE_THREADS, sh, s>>>(rows, kk, cum, item, P->n, A, B, crp, P->split,
                                                                     P->run_sums);
  else
    k_split_rows_shared<TR_CSR_NUMERIC><<<g, TR_DENSE_THREADS, sh, s>>>(rows, kk, cum, item, P->n, A, B, crp,
                                                                        P->split, P->run_sums);
}

/* COUNT writes each row's count to cnt[row] */
static int tr_launch(const tr_cuda_csr_product *P, int mode, const tr_operand &A, const tr_operand &B, double *cval,
                     const int64_t *cvidx, int64_t *cnt = NULL, int sorted = 0)
{
  int64_t *crp = mode == TR_CSR_COUNT ? cnt : P->crp;
  const cudaStream_t s = P->s;
  for (int b = 1; b < TR_CSR_BINS; b++) {
    const int64_t nr = P->bin_start[b + 1] - P->bin_start[b];
    if (!nr) continue;
    const int32_t *rows = P->rows + P->bin_start[b];
    const bool few = nr < (int64_t)TR_FEW_ROWS_PER_SM * P->sms;
    switch (b) {
    case 1: tr_hash_launch<8, 32, 256>(P, tr_blocks(nr, 32), mode, sorted, rows, nr, A, B, crp, cval, cvidx); break;
    case 2: tr_hash_launch<32, 32, 256>(P, tr_blocks(nr, 8), mode, sorted, rows, nr, A, B, crp, cval, cvidx); break;
    case 3:
      if (few) tr_hash_launch<128, 128, 128>(P, (unsigned)nr, mode, sorted, rows, nr, A, B, crp, cval, cvidx);
      else tr_hash_launch<32, 128, 256>(P, tr_blocks(nr, 8), mode, sorted, rows, nr, A, B, crp, cval, cvidx);
      break;
    case 4:
      if (few) tr_hash_launch<256, 512, 256>(P, (unsigned)nr, mode, sorted, rows, nr, A, B, crp, cval, cvidx);
      else tr_hash_launch<32, 512, 128>(P, tr_blocks(nr, 4), mode, sorted, rows, nr, A, B, crp, cval, cvidx);
      break;
    case 5: tr_hash_launch<256, 2048, 256>(P, (unsigned)nr, mode, sorted, rows, nr, A, B, crp, cval, cvidx); break;
    case 7: /* in launches of as many rows as there are accumulators */
      for (int64_t r0 = 0; r0 < nr; r0 += P->split_slots) {
        const int64_t k = nr - r0 < P->split_slots ? nr - r0 : P->split_slots;
        tr_split_launch(P, mode, rows + r0, k, P->split_cum + r0,
                        P->split_item + r0 / P->split_slots * P->split_items_cap, A, B, crp);
        if (mode != TR_CSR_COUNT)
          k_split_out<<<(unsigned)k, TR_DENSE_THREADS, 0, s>>>(mode, rows + r0, P->n, crp, P->ccol, cval, cvidx,
                                                              P->split);
      }
      break;
    default:
      if (P->shm_bytes[mode]) {
        const unsigned g = (unsigned)(nr < P->shm_blocks[mode] ? nr : P->shm_blocks[mode]);
        const size_t sh = P->shm_bytes[mode];
        if (mode == TR_CSR_COUNT)
          k_dense_rows_shared<TR_CSR_COUNT><<<g, TR_DENSE_THREADS, sh, s>>>(rows, nr, P->n, A, B, crp, P->ccol, cval, cvidx);
        else if (mode == TR_CSR_FILL)
          k_dense_rows_shared<TR_CSR_FILL><<<g, TR_DENSE_THREADS, sh, s>>>(rows, nr, P->n, A, B, crp, P->ccol, cval, cvidx);
        else
          k_dense_rows_shared<TR_CSR_NUMERIC><<<g, TR_DENSE_THREADS, sh, s>>>(rows, nr, P->n, A, B, crp, P->ccol, cval, cvidx);
      } else
        k_dense_rows<<<(unsigned)(nr < P->dense_blocks ? nr : P->dense_blocks), TR_DENSE_THREADS, 0, s>>>(
            mode, rows, nr, P->n, A, B, crp, P->ccol, cval, cvidx, P->dense);
    }
    int err = tr_cuda_check_launch("CSR path product");
    if (err) return err;
  }
  return TILERAP_SUCCESS;
}

extern "C" void tr_cuda_csr_product_destroy(tr_cuda_csr_product *P)
{
  if (!P) return;
  tr_dfree(P->crp, P->s); tr_dfree(P->ccol, P->s); tr_dfree(P->rows, P->s); tr_dfree(P->dense, P->s);
  tr_dfree(P->split, P->s); tr_dfree(P->split_cum, P->s); tr_dfree(P->split_item, P->s); tr_dfree(P->split_w, P->s);
  tr_record_free(P);
  free(P);
}

/* Symbolic phase: C's row pointers (and the bins, the dense accumulators).
 * C's columns are allocated, filled by tr_cuda_csr_product_fill. */
extern "C" int tr_cuda_csr_product_create(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, int64_t annz,
                                          const int64_t *brp, const int32_t *bcol, void *stream,
                                          tr_cuda_csr_product **out, int64_t *cnnz, int64_t *macs)
{
  const cudaStream_t s = (cudaStream_t)stream;
  tr_cuda_csr_product *P = (tr_cuda_csr_product *)calloc(1, sizeof *P);
  if (!P) return TILERAP_ERR_NOMEM;
  P->s = s; P->m = m; P->n = n; P->arp = arp; P->acol = acol; P->brp = brp; P->bcol = bcol;
  P->run_sums = n <= TR_RUN_COLS;
  unsigned long long *ub = NULL, *cursor = NULL;
  int64_t *cnt = NULL;
  unsigned long long hb[TR_CSR_BINS + 1];
  void *scan = NULL;
  size_t scan_bytes = 0;
  int err = TILERAP_SUCCESS;
  *out = NULL;
  const size_t nr1 = (size_t)m + 1;
  TR_TRY(tr_dalloc((void **)&ub, nr1 * sizeof(*ub), s, "CSR path row bounds"));
  TR_TRY(tr_dalloc((void **)&cnt, nr1 * sizeof(*cnt), s, "CSR path row counts"));
  TR_TRY(tr_dalloc((void **)&cursor, TR_CSR_CURSORS * sizeof(*cursor), s, "CSR path bins"));
  TR_TRY(tr_dalloc((void **)&P->rows, (size_t)(m > 0 ? m : 1) * sizeof(int32_t), s, "CSR path rows"));
  TR_TRY(tr_dalloc((void **)&P->crp, nr1 * sizeof(int64_t), s, "CSR path row pointers"));
  TR_TRY_CU(cudaMemsetAsync(ub, 0, nr1 * sizeof(*ub), s), "CSR path");
  TR_TRY_CU(cudaMemsetAsync(cursor, 0, TR_CSR_CURSORS * sizeof(*cursor), s), "CSR path");
  if (annz > 0) {
    k_row_bound<<<tr_blocks((annz + TR_BOUND_ITEMS - 1) / TR_BOUND_ITEMS, 256), 256, 0, s>>>(m, annz, arp, acol, brp, ub);
    TR_TRY(tr_cuda_check_launch("CSR path row bounds"));
  }
  /* the multiply-adds (the bounds' sum) */
  TR_TRY_CU(cub::DeviceReduce::Sum(NULL, scan_bytes, ub, cursor + 2 * TR_CSR_BINS, m, s), "CSR path sum");
  TR_TRY(tr_dalloc(&scan, scan_bytes, s, "scan storage"));
  TR_TRY_CU(cub::DeviceReduce::Sum(scan, scan_bytes, ub, cursor + 2 * TR_CSR_BINS, m, s), "CSR path sum");
  {
    int dev = 0;
    TR_TRY_CU(cudaGetDevice(&dev), "CSR path");
    TR_TRY_CU(cudaDeviceGetAttribute(&P->sms, cudaDevAttrMultiProcessorCount, dev), "CSR path");
  }
  /* the split rows' shared sums, where C is narrow enough and they fit:
   * the split threshold follows the work only there */
  TR_TRY(tr_split_shared_fit<TR_CSR_COUNT>(n, &P->split_shm_bytes[TR_CSR_COUNT]));
  TR_TRY(tr_split_shared_fit<TR_CSR_FILL>(n, &P->split_shm_bytes[TR_CSR_FILL]));
  TR_TRY(tr_split_shared_fit<TR_CSR_NUMERIC>(n, &P->split_shm_bytes[TR_CSR_NUMERIC]));
  k_split_at<<<1, 1, 0, s>>>(cursor + 2 * TR_CSR_BINS, P->sms, n,
                             P->split_shm_bytes[TR_CSR_COUNT] && P->split_shm_bytes[TR_CSR_FILL] &&
                                 P->split_shm_bytes[TR_CSR_NUMERIC],
                             cursor);
  TR_TRY(tr_cuda_check_launch("CSR path split rows"));
  TR_TRY(tr_bin_rows(P, 1, ub, cursor, hb)); /* reads the sum back with the bins */
  tr_dfree(scan, s); scan = NULL;
  P->macs = (int64_t)hb[TR_CSR_BINS];
  {
    const int64_t ndense = P->bin_start[7] - P->bin_start[6], nsplit = P->bin_start[8] - P->bin_start[7];
    const size_t width = tr_dense_width(n);
    /* accumulators in 512 MB (at least one) */
    const int64_t cap_raw = (int64_t)(((size_t)512 << 20) / (width ? width : 1)), cap = cap_raw > 0 ? cap_raw : 1;
    if (ndense > 0) {
      TR_TRY(tr_dense_shared_fit<TR_CSR_COUNT>(n, P->sms, &P->shm_bytes[TR_CSR_COUNT],
                                               &P->shm_blocks[TR_CSR_COUNT]));
      TR_TRY(tr_dense_shared_fit<TR_CSR_FILL>(n, P->sms, &P->shm_bytes[TR_CSR_FILL], &P->shm_blocks[TR_CSR_FILL]));
      TR_TRY(tr_dense_shared_fit<TR_CSR_NUMERIC>(n, P->sms, &P->shm_bytes[TR_CSR_NUMERIC],
                                                 &P->shm_blocks[TR_CSR_NUMERIC]));
    }
    /* a global accumulator for the modes that shared memory cannot hold:
     * at most 2 blocks per SM, and at most 512 MB */
    if (ndense > 0 && !(P->shm_bytes[TR_CSR_COUNT] && P->shm_bytes[TR_CSR_FILL] && P->shm_bytes[TR_CSR_NUMERIC])) {
      int64_t nb = ndense < 2 * P->sms ? ndense : 2 * P->sms;
      if (nb > cap) nb = cap;
      P->dense_blocks = (int)nb;
      TR_TRY(tr_dalloc(&P->dense, (size_t)nb * width, s, "CSR path dense accumulators"));
      TR_TRY_CU(cudaMemsetAsync(P->dense, 0, (size_t)nb * width, s), "CSR path dense accumulators");
    }
    /* the split rows' accumulators: as many rows at once as 512 MB hold */
    if (nsplit > 0) {
      const int64_t k = nsplit < cap ? nsplit : cap, launches = (nsplit + k - 1) / k;
      P->split_slots = (int)k;
      TR_TRY(tr_dalloc(&P->split, (size_t)k * width, s, "CSR path split rows"));
      TR_TRY_CU(cudaMemsetAsync(P->split, 0, (size_t)k * width, s), "CSR path split rows");
      /* a launch's items: its products over the item size, rounded up per row */
      P->split_items_cap = (int64_t)TR_SPLIT_ITEMS_PER_SM * P->sms + k;
      TR_TRY(tr_dalloc((void **)&P->split_cum, (size_t)nsplit * sizeof(int32_t), s, "CSR path split rows"));
      TR_TRY(tr_dalloc((void **)&P->split_item, (size_t)(launches * P->split_items_cap) * sizeof(int64_t), s,
                       "CSR path split rows"));
      TR_TRY(tr_dalloc((void **)&P->split_w, (size_t)launches * sizeof(unsigned long long), s, "CSR path split rows"));
      TR_TRY(tr_split_layout(P, ub));
    }
  }
  {
    tr_operand A = {arp, acol, NULL, NULL}, B = {brp, bcol, NULL, NULL};
    /* counts (rows of bin 0 keep their 0, as does cnt[m]) */
    TR_TRY_CU(cudaMemsetAsync(cnt, 0, nr1 * sizeof(int64_t), s), "CSR path");
    TR_TRY(tr_launch(P, TR_CSR_COUNT, A, B, NULL, NULL, cnt));
  }
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(NULL, scan_bytes, cnt, P->crp, m + 1, s), "CSR path scan");
  TR_TRY(tr_dalloc(&scan, scan_bytes, s, "scan storage"));
  TR_TRY_CU(cub::DeviceScan::ExclusiveSum(scan, scan_bytes, cnt, P->crp, m + 1, s), "CSR path scan");
  /* fill and numeric runs: bins by C's row lengths; C's size read back with them */
  TR_TRY_CU(cudaMemcpyAsync(cursor + 2 * TR_CSR_BINS, P->crp + m, sizeof(int64_t), cudaMemcpyDeviceToDevice, s),
            "CSR path size");
  TR_TRY(tr_bin_rows(P, 0, ub, cursor, hb));
  TR_TRY(tr_split_layout(P, ub));
  P->cnnz = (int64_t)hb[TR_CSR_BINS];
  TR_TRY(tr_dalloc((void **)&P->ccol, (size_t)P->cnnz * sizeof(int32_t), s, "CSR path columns"));
  *cnnz = P->cnnz;
  *macs = P->macs;
  *out = P;
  P = NULL;
cleanup:
  tr_dfree(ub, s); tr_dfree(cnt, s); tr_dfree(cursor, s); tr_dfree(scan, s);
  tr_cuda_csr_product_destroy(P);
  return err;
}

extern "C" const int64_t *tr_cuda_csr_product_rowptr(const tr_cuda_csr_product *P) { return P->crp; }
extern "C" const int32_t *tr_cuda_csr_product_colidx(const tr_cuda_csr_product *P) { return P->ccol; }

/* C's columns (sorted in each row, or in no order), and its values into
 * cval (NULL: structure only) */
extern "C" int tr_cuda_csr_product_fill(tr_cuda_csr_product *P, const double *aval, const int64_t *avidx,
                                        const double *bval, const int64_t *bvidx, double *cval, int sorted)
{
  P->sorted = sorted;
  tr_operand A = {P->arp, P->acol, cval ? aval : NULL, avidx}, B = {P->brp, P->bcol, bval, bvidx};
  TR_RET(tr_order_after_legacy(P->s)); /* operands made on the legacy stream */
  TR_RET(tr_launch(P, TR_CSR_FILL, A, B, cval, NULL, NULL, sorted));
  return tr_order_legacy_after(P->s);
}

/* C's values at cval[cvidx[p]] (cvidx NULL: cval[p]); launches only.  With
 * a record: the second run makes it, and it and every later run gather
 * from it (the value indirections avidx, bvidx are the plan's: the same
 * on every run) */
extern "C" int tr_cuda_csr_product_numeric(tr_cuda_csr_product *P, const double *aval, const int64_t *avidx,
                                           const double *bval, const int64_t *bvidx, double *cval,
                                           const int64_t *cvidx)
{
  tr_operand A = {P->arp, P->acol, aval, avidx}, B = {P->brp, P->bcol, bval, bvidx};
  /* values moved on the legacy stream (host-resident use) come before,
   * and C's go after: events, no wait on the host */
  TR_RET(tr_order_after_legacy(P->s));
  if (P->rec_ptr && P->sorted && P->runs >= 1) {
    if (P->runs == 1) TR_RET(tr_record(P, A, B));
    if (P->cnnz > 0) {
      k_recorded<<<tr_blocks((P->cnnz + 31) / 32 * 32, 256), 256, 0, P->s>>>(P->cnnz, P->rec_ptr, P->rec_a, P->rec_b,
                                                                         aval, bval, cval, cvidx);
      TR_RET(tr_cuda_check_launch("CSR path recorded run"));
    }
  } else {
    TR_RET(tr_launch(P, TR_CSR_NUMERIC, A, B, cval, cvidx));
  }
  if (P->runs < 2) P->runs++;
  return tr_order_legacy_after(P->s);
}
