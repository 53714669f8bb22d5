/* Step 1 (CUDA) for large products with short tile rows: each tile row's
 * pairs sorted by C tile column where the row is, with the candidates
 * numbered densely, so step 2 gets the same lists as from the radix path
 * (spgemm_cuda_step1_structure.cu), entry for entry.
 *
 * Why: at level 0 the radix path is a pair expansion, four or five radix
 * passes over every pair, a head flag and a scan over every pair and the
 * candidates (about a fifth of a first-time Galerkin product's kernel
 * time on the H100).  An AMG tile row has tens of pairs (AP) to hundreds
 * (P^T AP): one warp sorts tens in registers, one block hundreds in
 * shared memory.  After the pair count (read back by the caller):
 *  - k_sort_rows_warp (rows of at most 128 pairs) and k_sort_rows_block
 *    (longer rows, launched only where there are some): a row's pairs
 *    sorted on (column, pair number in the row); pair numbers ascend with
 *    A's tiles, so a candidate's pairs stay in ascending k as on the CPU.
 *    Pair lists go to the row's pair positions, the row's candidates
 *    (first pair, column) to the first positions of the row's range in
 *    two scratch arrays, and the row's candidate count to cnt;
 *  - a scan of the counts: the first candidate of every tile row;
 *  - k_cand_compact: candidates moved to their dense places.
 * Each pair's candidate (pair_cand) is written by step 2's masks kernel
 * (tr_cuda_cand.cand_late). */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>
#include <limits.h>
#include <string.h>

#define TR_FULL 0xffffffffu
#define TR_SORT_WARP_MAX 128 /* pairs of a row sorted in a warp's registers */
#define TR_SORT_WARPS 4      /* warps per block of k_sort_rows_warp */

/* Where pair q of a tile row comes from: A tile *a, B tile *b.  The row's
 * A tiles are a0..a1-1 and its pairs start at p0.  Rows of at most 32 A
 * tiles: lane i holds tile a0 + i's first pair number tq (INT_MAX on
 * lanes past the row) and B row start tb, and the tile is found by a
 * search over the lanes (every lane must call it).  Longer rows: a binary
 * search of poff, only where valid. */
static __device__ __forceinline__ void tr_pair_source(const tr_dview &A, const tr_dview &B, const int64_t *poff,
                                                      int64_t a0, int64_t a1, int64_t p0, int tq, int64_t tb, int q,
                                                      bool valid, int64_t *a, int64_t *b)
{
  if (a1 - a0 <= 32) {
    int lo = 0; /* the last tile starting at or before q (empty tiles share the next one's start) */
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) {
      const int c = lo + s; /* < 32 */
      if (__shfl_sync(TR_FULL, tq, c) <= q) lo = c;
    }
    *a = a0 + lo;
    *b = __shfl_sync(TR_FULL, tb, lo) + (q - __shfl_sync(TR_FULL, tq, lo));
  } else if (valid) {
    int64_t lo = a0, hi = a1;
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) >> 1;
      if (poff[mid] - p0 <= q) lo = mid;
      else hi = mid;
    }
    *a = lo;
    *b = B.tile_ptr[A.tile_col[lo]] + (q - (poff[lo] - p0));
  }
}

/* Bitonic sort of 32 K keys held as key[r] on lane l = element 32 r + l,
 * ascending; the loops unroll fully, so key[] stays in registers. */
template <int K> static __device__ __forceinline__ void tr_warp_bitonic_sort(unsigned long long key[K], int lane)
{
#pragma unroll
  for (int k = 2; k <= 32 * K; k <<= 1)
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
      if (j >= 32) { /* partner in another register of the same lane */
        const int jr = j >> 5;
#pragma unroll
        for (int r = 0; r < K; r++)
          if (!(r & jr)) {
            const bool up = ((32 * r + lane) & k) == 0;
            const unsigned long long x = key[r], y = key[r | jr];
            if ((x > y) == up) { key[r] = y; key[r | jr] = x; }
          }
      } else {
#pragma unroll
        for (int r = 0; r < K; r++) {
          const unsigned long long y = __shfl_xor_sync(TR_FULL, key[r], j);
          const bool up = ((32 * r + lane) & k) == 0, low = (lane & j) == 0;
          key[r] = low == up ? min(key[r], y) : max(key[r], y);
        }
      }
    }
}

/* One tile row of at most 32 K pairs (n > 0) in one warp. */
template <int K>
static __device__ __forceinline__ void tr_sort_row_warp(const tr_dview &A, const tr_dview &B, const int64_t *poff,
                                                        int64_t a0, int64_t a1, int64_t p0, int n, int lane,
                                                        int32_t *pair_a, int32_t *pair_b, int32_t *first, int32_t *col,
                                                        int32_t *cnt)
{
  int tq = INT_MAX;
  int64_t tb = 0;
  if (a1 - a0 <= 32 && lane < a1 - a0) {
    tq = (int)(poff[a0 + lane] - p0);
    tb = B.tile_ptr[A.tile_col[a0 + lane]];
  }
  unsigned long long key[K];
#pragma unroll
  for (int r = 0; r < K; r++) {
    const int q = 32 * r + lane;
    int64_t a = 0, b = 0;
    tr_pair_source(A, B, poff, a0, a1, p0, tq, tb, q, q < n, &a, &b);
    key[r] = q < n ? (unsigned long long)(uint32_t)B.tile_col[b] << 32 | (uint32_t)q : ~0ull;
  }
  tr_warp_bitonic_sort<K>(key, lane);
  /* heads (a new column), and every pair's candidate within the row */
  int base = 0;
  unsigned long long last = 0; /* the previous register's last key */
#pragma unroll
  for (int r = 0; r < K; r++) {
    const int e = 32 * r + lane;
    const unsigned long long up = __shfl_up_sync(TR_FULL, key[r], 1);
    const unsigned long long before = lane == 0 ? last : up;
    last = __shfl_sync(TR_FULL, key[r], 31);
    const bool valid = e < n;
    const bool head = valid && (e == 0 || (key[r] >> 32) != (before >> 32));
    const unsigned hm = __ballot_sync(TR_FULL, head);
    const int lc = base + __popc(hm & ((2u << lane) - 1u)) - 1; /* the pair's candidate in the row */
    int64_t a = 0, b = 0;
    tr_pair_source(A, B, poff, a0, a1, p0, tq, tb, (int)(uint32_t)key[r], valid, &a, &b);
    if (valid) {
      pair_a[p0 + e] = (int32_t)a;
      pair_b[p0 + e] = (int32_t)b;
      if (head) {
        first[p0 + lc] = (int32_t)(p0 + e);
        col[p0 + lc] = (int32_t)(key[r] >> 32);
      }
    }
    base += __popc(hm);
  }
  if (lane == 0) *cnt = base;
}

/* A warp per tile row of at most TR_SORT_WARP_MAX pairs (longer rows are
 * k_sort_rows_block's); the register count follows the row's length.
 * Every row's first pair goes to rp0 (k_cand_compact). */
static __global__ void __launch_bounds__(32 * TR_SORT_WARPS)
    k_sort_rows_warp(tr_dview A, int32_t TR, tr_dview B, const int64_t *poff, int32_t *pair_a, int32_t *pair_b,
                     int32_t *first, int32_t *col, int32_t *cnt, int32_t *rp0)
{
  const int64_t I = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (I == 0 && lane == 0) cnt[TR] = 0; /* the scan's closing entry */
  if (I >= TR) return;
  const int64_t a0 = A.tile_ptr[I], a1 = A.tile_ptr[I + 1], p0 = poff[a0];
  const int64_t n = poff[a1] - p0; /* the same on every lane */
  if (lane == 0) rp0[I] = (int32_t)p0;
  if (n > TR_SORT_WARP_MAX) return;
  if (n == 0) {
    if (lane == 0) cnt[I] = 0;
  } else if (n <= 32)
    tr_sort_row_warp<1>(A, B, poff, a0, a1, p0, (int)n, lane, pair_a, pair_b, first, col, cnt + I);
  else if (n <= 64)
    tr_sort_row_warp<2>(A, B, poff, a0, a1, p0, (int)n, lane, pair_a, pair_b, first, col, cnt + I);
  else
    tr_sort_row_warp<4>(A, B, poff, a0, a1, p0, (int)n, lane, pair_a, pair_b, first, col, cnt + I);
}

/* A block per tile row of more than TR_SORT_WARP_MAX and at most N pairs
 * (other rows: nothing).  The row's columns span a narrow range (P^T
 * (AP): a coarse tile row meets tiles a few hundred columns apart at
 * most), so the keys are (column - the row's least) << log2 N | pair
 * number, 32 bits, sorted by CUB's block radix sort on the bits they use
 * (a few passes; a bitonic sort of 64-bit keys in shared memory spent
 * 97 us at level 0 of p3d7 101^3, bound by its shared-memory traffic).
 * Rows spanning more columns than 32 bits leave take the bitonic sort.
 * Thread t owns sorted positions [t E, t E + E). */
template <int N, int T>
static __global__ void __launch_bounds__(T)
    k_sort_rows_block(tr_dview A, tr_dview B, const int64_t *poff, int32_t *pair_a, int32_t *pair_b, int32_t *first,
                      int32_t *col, int32_t *cnt)
{
  constexpr int E = N / T;
  constexpr int QB = N == 512 ? 9 : N == 1024 ? 10 : 11; /* bits of a pair number */
  static_assert((1 << QB) == N, "N: 512, 1024 or 2048");
  typedef cub::BlockRadixSort<uint32_t, T, E> sort_t;
  typedef cub::BlockScan<int, T> scan_t;
  __shared__ union {
    unsigned long long wide[N]; /* the bitonic sort's keys: column << 32 | pair number */
    typename sort_t::TempStorage sort;
  } u;
  __shared__ typename scan_t::TempStorage scan_tmp;
  __shared__ uint32_t skey[N]; /* columns by pair number, then the sorted narrow keys */
  __shared__ int32_t sa[N], sb[N];
  __shared__ int cmin, cmax;
  const int32_t I = blockIdx.x;
  const int64_t a0 = A.tile_ptr[I], a1 = A.tile_ptr[I + 1], p0 = poff[a0];
  const int64_t n64 = poff[a1] - p0;
  if (n64 <= TR_SORT_WARP_MAX || n64 > N) return; /* the same for the whole block */
  const int n = (int)n64;
  if (threadIdx.x == 0) { cmin = INT_MAX; cmax = 0; }
  __syncthreads();
  /* G lanes per A tile, as many as leave no lane idle: P^T's tile rows
   * have tens of A tiles with a few pairs each, and a warp per A tile
   * made each warp walk its tiles one chain of loads after another */
  int G = 32;
  while (G > 1 && (a1 - a0) * G > T) G >>= 1;
  const int grp = threadIdx.x / G, gl = threadIdx.x % G;
  int lo = INT_MAX, hi = 0;
  for (int64_t a = a0 + grp; a < a1; a += T / G) {
    const int32_t k = A.tile_col[a];
    const int64_t b0 = B.tile_ptr[k], nbk = B.tile_ptr[k + 1] - b0;
    const int q0 = (int)(poff[a] - p0);
    for (int j = gl; j < nbk; j += G) {
      const int q = q0 + j, c = B.tile_col[b0 + j];
      skey[q] = (uint32_t)c;
      sa[q] = (int32_t)a;
      sb[q] = (int32_t)(b0 + j);
      lo = min(lo, c);
      hi = max(hi, c);
    }
  }
  if (lo <= hi) { atomicMin(&cmin, lo); atomicMax(&cmax, hi); }
  __syncthreads();
  const int c0 = cmin;
  const uint32_t span = (uint32_t)(cmax - c0) + 1u; /* the padding key's column: after every row column */
  int cb = 1;
  while (cb < 32 && (span >> cb)) cb++;
  const bool narrow = cb + QB <= 32; /* the same for the whole block */
  const int e0 = threadIdx.x * E;
  if (narrow) {
    uint32_t k[E];
#pragma unroll
    for (int i = 0; i < E; i++) {
      const int e = e0 + i;
      k[i] = e < n ? (skey[e] - (uint32_t)c0) << QB | (uint32_t)e : span << QB;
    }
    __syncthreads(); /* skey read before it is overwritten below */
    sort_t(u.sort).Sort(k, 0, cb + QB);
#pragma unroll
    for (int i = 0; i < E; i++) skey[e0 + i] = k[i];
  } else {
    for (int q = threadIdx.x; q < N; q += T)
      u.wide[q] = q < n ? (unsigned long long)skey[q] << 32 | (uint32_t)q : ~0ull;
    __syncthreads();
    int n2 = 1;
    while (n2 < n) n2 <<= 1;
    tr_block_bitonic_sort<T>(u.wide, n2); /* all keys differ (pair numbers) */
  }
  __syncthreads();
  /* sorted position e: column and pair number */
#define TR_COL_AT(e) (narrow ? (int32_t)(skey[e] >> QB) + c0 : (int32_t)(u.wide[e] >> 32))
#define TR_Q_AT(e) (narrow ? (int)(skey[e] & (N - 1)) : (int)(uint32_t)u.wide[e])
  int heads = 0;
#pragma unroll
  for (int i = 0; i < E; i++) {
    const int e = e0 + i;
    heads += e < n && (e == 0 || TR_COL_AT(e) != TR_COL_AT(e - 1));
  }
  int lc, total;
  scan_t(scan_tmp).ExclusiveSum(heads, lc, total);
  lc--;
#pragma unroll
  for (int i = 0; i < E; i++) {
    const int e = e0 + i;
    if (e >= n) break;
    const int32_t c = TR_COL_AT(e);
    const bool head = e == 0 || c != TR_COL_AT(e - 1);
    lc += head;
    const int q = TR_Q_AT(e);
    pair_a[p0 + e] = sa[q];
    pair_b[p0 + e] = sb[q];
    if (head) {
      first[p0 + lc] = (int32_t)(p0 + e);
      col[p0 + lc] = c;
    }
  }
#undef TR_COL_AT
#undef TR_Q_AT
  if (threadIdx.x == 0) cnt[I] = total;
}

/* TR_COMPACT_LANES lanes per tile row move the row's candidates to their
 * dense places (row_cand: the scanned counts; rp0: the row's first
 * pair).  The pairs' candidate numbers are written by step 2's masks
 * kernel, which walks every candidate's pairs anyway: fixing them here
 * (pair -> A tile -> tile row -> offsets, or lanes per row looping over
 * its pairs) cost 23-34 us for AP at level 0 of p3d7 101^3, 149-187 us
 * at 200^3. */
#define TR_COMPACT_LANES 4
static __global__ void k_cand_compact(int32_t TR, int64_t np, const int32_t *row_cand, const int32_t *rp0,
                                      const int32_t *first, const int32_t *col, int32_t *cand_ptr, int32_t *cand_col,
                                      int32_t *d_ncand)
{
  const int64_t I = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / TR_COMPACT_LANES;
  const int lane = threadIdx.x % TR_COMPACT_LANES;
  if (I >= TR) return;
  const int32_t base = row_cand[I], nc = row_cand[I + 1] - base, p0 = rp0[I];
  for (int t = lane; t < nc; t += TR_COMPACT_LANES) {
    cand_ptr[base + t] = first[p0 + t];
    cand_col[base + t] = col[p0 + t];
  }
  if (I == TR - 1 && lane == 0) {
    cand_ptr[row_cand[TR]] = (int32_t)np;
    *d_ncand = row_cand[TR];
  }
}

/* Whether the row sort suits a product of np pairs over TR tile rows, the
 * longest of most pairs (<= TR_ROW_SORT_MAX).  Its block kernel has a
 * block for every tile row, and those of short rows leave at once: fine
 * where no row is long (the warp kernel alone: AMG's AP), where rows are
 * long on the whole (P^T (AP): every row over 128 pairs) or where the
 * grid is small; a few long rows among 10^5 short ones would launch 10^5
 * idle blocks of up to 42 KB of shared memory, so such products keep the
 * radix sort. */
int tr_cuda_step1_compact_suits(int64_t np, int32_t TR, int64_t most)
{
  return most <= TR_SORT_WARP_MAX || np >= (int64_t)(TR_SORT_WARP_MAX / 2) * TR || TR <= 16384;
}

int tr_cuda_step1_compact(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *poff, int64_t np,
                          int64_t most, tr_tmp *tmp, tr_cuda_cand *c)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  if (most > TR_ROW_SORT_MAX || np >= INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_INVALID,
                             "internal: step 1 row sort given %lld pairs, %lld in one tile row (limits 2^31, %d)",
                             (long long)np, (long long)most, TR_ROW_SORT_MAX);
  size_t tb = 0;
  TR_RET_CU(cub::DeviceScan::ExclusiveSum(NULL, tb, (int32_t *)NULL, (int32_t *)NULL, (int64_t)TR + 1, s),
            "step 1 row scan");
  /* the lists, as the radix path lays them out, then scratch */
  const size_t npb = (size_t)np * sizeof(int32_t);
  TR_RET(tr_step1_lists_alloc(c, np, TR, tmp));
  tr_group x;
  memset(&x, 0, sizeof x);
  const int i_first = tr_group_add(&x, npb), i_col = tr_group_add(&x, npb);
  const int i_cnt = tr_group_add(&x, ((size_t)TR + 1) * sizeof(int32_t)), i_rp0 = tr_group_add(&x, (size_t)TR * sizeof(int32_t));
  const int i_ts = tr_group_add(&x, tb);
  TR_RET(tr_group_alloc(&x, tmp, s, "step 1 row sort"));
  int32_t *first = (int32_t *)tr_group_at(&x, i_first), *col = (int32_t *)tr_group_at(&x, i_col);
  int32_t *cnt = (int32_t *)tr_group_at(&x, i_cnt), *rp0 = (int32_t *)tr_group_at(&x, i_rp0);
  c->path = TR_PATH_SORTED;
  c->cand_late = 1; /* pair_cand: step 2's masks kernel */
  c->npairs = np;

  const tr_dview dA = tr_view(A), dB = tr_view(B);
  k_sort_rows_warp<<<tr_blocks(32 * (int64_t)TR, 32 * TR_SORT_WARPS), 32 * TR_SORT_WARPS, 0, s>>>(
      dA, TR, dB, poff, c->pair_a, c->pair_b, first, col, cnt, rp0);
  TR_RET(tr_cuda_check_launch("step 1 row sort"));
  /* one block per tile row: rows of the warp kernel leave at once
   * (tr_cuda_step1_compact_suits keeps this grid for products whose rows
   * are long on the whole) */
  if (most > TR_SORT_WARP_MAX) {
#define TR_BLOCK_SORT(N, T) \
  k_sort_rows_block<N, T><<<TR, T, 0, s>>>(dA, dB, poff, c->pair_a, c->pair_b, first, col, cnt)
    if (most <= 512) TR_BLOCK_SORT(512, 128);
    else if (most <= 1024) TR_BLOCK_SORT(1024, 256);
    else TR_BLOCK_SORT(TR_ROW_SORT_MAX, 256);
#undef TR_BLOCK_SORT
    TR_RET(tr_cuda_check_launch("step 1 row sort (blocks)"));
  }
  TR_RET_CU(cub::DeviceScan::ExclusiveSum(tr_group_at(&x, i_ts), tb, cnt, c->row_cand, (int64_t)TR + 1, s),
            "step 1 row scan");
  k_cand_compact<<<tr_blocks(TR_COMPACT_LANES * (int64_t)TR, 256), 256, 0, s>>>(TR, np, c->row_cand, rp0, first, col,
                                                                              c->cand_ptr, c->cand_col, c->d_ncand);
  return tr_cuda_check_launch("step 1 candidates");
}
