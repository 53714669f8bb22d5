/* Step 1 (CUDA) for small products: the candidate tiles of C, one block
 * per tile row of A, in two kernels, one allocation, no CUB dispatch and
 * no read-back.
 *
 * A coarse AMG level has a few hundred to a few thousand tiles, so its
 * cost is the number of launches, dispatches, allocations and host
 * synchronisations, not work: the sorted path
 * (spgemm_cuda_step1_structure.cu) is about ten kernels, three CUB
 * dispatches and a read-back of the pair count per product.  Here the
 * lists are sized by a bound made on the host (tr_cuda_step1_rows_capacity),
 * and step 2 reads the true counts back with its own totals:
 *  - k_pair_offsets_small (one block): the pair offset of every A tile
 *    (scan of B's tile row lengths), the pair total, the longest tile
 *    row and whether both fit (otherwise the later kernels do nothing
 *    and step 2 asks for the sorted path);
 *  - k_row_pairs (a block per tile row of A): the row's pairs sorted by
 *    C tile column in shared memory (bitonic sort of (column, pair)
 *    keys), so the pairs of one C tile stay in ascending k, as on the
 *    CPU.
 * Candidates are numbered by the position of their first pair: candidate
 * p is the run of pairs starting at p, and every other pair position is
 * an empty candidate (cand_ptr[p] = cand_ptr[p+1]) that step 2 drops like
 * a tile with no entry.  So no second count and scan is needed; step 2
 * sizes its arrays by the same bound.  The true candidate count (for
 * tilerap_spgemm_info) is summed on the device. */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>

#define TR_OFFSETS_THREADS 512

/* Pair offsets of A's tiles in one block: thread t takes a contiguous run
 * of tiles.  stats: pairs, most pairs of one tile row, 1 if the row path
 * takes the product (pairs <= cap and every row sortable), true
 * candidates (counted by k_row_pairs, zeroed here). */
static __global__ void __launch_bounds__(TR_OFFSETS_THREADS)
    k_pair_offsets_small(tr_dview A, int32_t tile_rows, int64_t na, tr_dview B, int64_t cap, int64_t row_max,
                         int64_t *poff, int64_t *stats)
{
  typedef cub::BlockScan<int64_t, TR_OFFSETS_THREADS> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  __shared__ unsigned long long most_all;
  const int64_t per = (na + TR_OFFSETS_THREADS - 1) / TR_OFFSETS_THREADS;
  const int64_t a0 = min(na, per * threadIdx.x), a1 = min(na, a0 + per);
  int64_t sum = 0, total;
#pragma unroll 4
  for (int64_t a = a0; a < a1; a++) {
    const int32_t k = A.tile_col[a];
    sum += B.tile_ptr[k + 1] - B.tile_ptr[k];
  }
  if (threadIdx.x == 0) most_all = 0;
  scan_t(tmp).ExclusiveSum(sum, sum, total);
#pragma unroll 4
  for (int64_t a = a0; a < a1; a++) {
    const int32_t k = A.tile_col[a];
    poff[a] = sum;
    sum += B.tile_ptr[k + 1] - B.tile_ptr[k];
  }
  if (threadIdx.x == 0) poff[na] = total;
  __syncthreads(); /* the block's poff writes are visible to the block */
  int64_t most = 0;
  for (int32_t I = threadIdx.x; I < tile_rows; I += TR_OFFSETS_THREADS)
    most = max(most, poff[A.tile_ptr[I + 1]] - poff[A.tile_ptr[I]]);
  if (most) atomicMax(&most_all, (unsigned long long)most);
  __syncthreads();
  if (threadIdx.x == 0) {
    stats[0] = total;
    stats[1] = (int64_t)most_all;
    stats[2] = total <= cap && (int64_t)most_all <= row_max;
    stats[3] = 0;
  }
}

/* The pairs of tile row I, sorted by (C tile column, pair number) in
 * shared memory; pair numbers ascend with A's tiles, so with k. */
template <int N, int T>
static __global__ void __launch_bounds__(T)
    k_row_pairs(tr_dview A, int32_t tile_rows, tr_dview B, const int64_t *poff, int64_t *stats, int64_t np_known,
                int32_t *pair_a, int32_t *pair_b, int32_t *pair_cand, int32_t *cand_ptr, int32_t *cand_col,
                int32_t *row_cand, int32_t *d_ncand)
{
  __shared__ unsigned long long key[N]; /* column << 32 | pair number in the row */
  __shared__ int32_t sa[N], sb[N];
  __shared__ int32_t head[N]; /* run head of every sorted position */
  __shared__ int32_t nheads;
  const int32_t I = blockIdx.x;
  if (np_known < 0 && !stats[2]) { /* the product does not fit: no candidates, step 2 retries */
    if (I == tile_rows - 1 && threadIdx.x == 0) *d_ncand = 0;
    return;
  }
  const int64_t np = np_known >= 0 ? np_known : stats[0];
  const int64_t a0 = A.tile_ptr[I], a1 = A.tile_ptr[I + 1];
  const int64_t p0 = poff[a0];
  const int n = (int)(poff[a1] - p0);
  if (threadIdx.x == 0) {
    row_cand[I] = (int32_t)p0;
    nheads = 0;
    if (I == tile_rows - 1) { row_cand[tile_rows] = (int32_t)np; cand_ptr[np] = (int32_t)np; *d_ncand = (int32_t)np; }
  }
  if (n == 0) return; /* the same for the whole block */
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int64_t a = a0 + warp; a < a1; a += T / 32) {
    const int32_t k = A.tile_col[a];
    const int64_t b0 = B.tile_ptr[k], nbk = B.tile_ptr[k + 1] - b0;
    const int q0 = (int)(poff[a] - p0);
    for (int j = lane; j < nbk; j += 32) {
      const int q = q0 + j;
      key[q] = (unsigned long long)(uint32_t)B.tile_col[b0 + j] << 32 | (uint32_t)q;
      sa[q] = (int32_t)a;
      sb[q] = (int32_t)(b0 + j);
    }
  }
  int n2 = 1;
  while (n2 < n) n2 <<= 1;
  for (int q = n + threadIdx.x; q < n2; q += T) key[q] = ~0ull;
  __syncthreads();
  tr_block_bitonic_sort<T>(key, n2); /* all keys differ (pair numbers) */
  int my_heads = 0;
  for (int i = threadIdx.x; i < n; i += T) {
    const unsigned long long x = key[i];
    const int q = (int)(uint32_t)x;
    const bool h = i == 0 || (x >> 32) != (key[i - 1] >> 32);
    pair_a[p0 + i] = sa[q];
    pair_b[p0 + i] = sb[q];
    cand_col[p0 + i] = (int32_t)(x >> 32);
    head[i] = h ? i : 0;
    my_heads += h;
  }
  if (my_heads) atomicAdd(&nheads, my_heads);
  __syncthreads();
  /* head of every position: inclusive max-scan (positions ascend) */
  for (int o = 1; o < n; o <<= 1) {
    int v[N / T];
    for (int i = threadIdx.x, j = 0; i < n; i += T, j++) v[j] = i >= o ? max(head[i], head[i - o]) : head[i];
    __syncthreads();
    for (int i = threadIdx.x, j = 0; i < n; i += T, j++) head[i] = v[j];
    __syncthreads();
  }
  /* run ends, kept at the run's head (sa is free now) */
  for (int i = threadIdx.x; i < n; i += T)
    if (i == n - 1 || head[i + 1] == i + 1) sa[head[i]] = i + 1;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += T) {
    const int h = head[i];
    pair_cand[p0 + i] = (int32_t)(p0 + h);
    cand_ptr[p0 + i] = (int32_t)(p0 + (h == i ? i : sa[h]));
  }
  if (threadIdx.x == 0) atomicAdd((unsigned long long *)&stats[3], (unsigned long long)nheads);
}

/* Pair bound of the row path, 0 where it does not apply.  The host knows
 * no tile row lengths, only counts: pairs <= na * (tile columns of B) and
 * <= (tiles of B) * (tile rows of A).  Where those are loose (many tile
 * columns), about four times the mean pairs of an A tile is taken
 * instead; AMG operators have even tile rows, and a product with more
 * pairs than the bound is redone after a read-back of its pair count
 * (TR_STEP1_RETRY). */
int64_t tr_cuda_step1_rows_capacity(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B)
{
  const int64_t na = A->num_tiles, nb = B->num_tiles;
  if (na > TR_ROW_PATH_A_TILES || A->tile_rows <= 0 || B->tile_rows <= 0) return 0;
  int64_t cap = na * (int64_t)B->tile_cols;
  if (nb * (int64_t)A->tile_rows < cap) cap = nb * (int64_t)A->tile_rows;
  const int64_t mean = (nb + B->tile_rows - 1) / B->tile_rows;
  const int64_t guess = 4 * na * mean + 1024;
  if (guess < cap) cap = guess;
  return cap <= TR_ROW_PATH_PAIRS ? cap : 0;
}

/* The row paths' lists inside l (5 n + TR + 3 words): four pair-indexed
 * lists of n, candidate pointers (n + 1), row candidates (TR + 1), the
 * candidate count. */
static void tr_rows_lists(tr_cuda_cand *c, int32_t *l, int64_t n, int32_t TR)
{
  c->pair_a = l;
  c->pair_b = l + n;
  c->pair_cand = l + 2 * n;
  c->cand_col = l + 3 * n;
  c->cand_ptr = l + 4 * n;
  c->row_cand = c->cand_ptr + n + 1;
  c->d_ncand = c->row_cand + TR + 1;
}

/* k_row_pairs with shared arrays for the longest tile row (most pairs;
 * unknown: TR_ROW_SORT_MAX): AMG tile rows have tens of pairs, and small
 * arrays keep many blocks on a multiprocessor */
/* the row capacity tr_launch_rows gives rows of at most `most` pairs */
static int64_t tr_rows_capacity(int64_t most)
{
  return most <= 64 ? 64 : most <= 512 ? 512 : TR_ROW_SORT_MAX;
}

static int tr_launch_rows(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *poff,
                          int64_t np_known, int64_t most, cudaStream_t s, tr_cuda_cand *c)
{
  const int32_t TR = A->tile_rows;
#define TR_ROWS(N, T)                                                                                                \
  k_row_pairs<N, T><<<TR, T, 0, s>>>(tr_view(A), TR, tr_view(B), poff, c->d_stats, np_known, c->pair_a, c->pair_b, \
                                     c->pair_cand, c->cand_ptr, c->cand_col, c->row_cand, c->d_ncand)
  const int64_t cap = tr_rows_capacity(most);
  if (cap == 64) TR_ROWS(64, 64);
  else if (cap == 512) TR_ROWS(512, 128);
  else TR_ROWS(TR_ROW_SORT_MAX, 256);
#undef TR_ROWS
  return tr_cuda_check_launch("step 1 row pairs");
}

int tr_cuda_step1_rows_exact(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *poff,
                             int64_t np, int64_t most, tr_tmp *tmp, tr_cuda_cand *c)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  tr_group *g = &c->block;
  memset(g, 0, sizeof *g);
  const int i_stats = tr_group_add(g, 4 * sizeof(int64_t));
  const int i_lists = tr_group_add(g, (5 * (size_t)np + 1 + ((size_t)TR + 1) + 1) * sizeof(int32_t));
  TR_RET(tr_group_alloc(g, tmp, s, "step 1 pair lists"));
  tr_rows_lists(c, (int32_t *)tr_group_at(g, i_lists), np, TR);
  c->path = TR_PATH_ROWS;
  c->npairs = np;
  c->d_stats = (int64_t *)tr_group_at(g, i_stats);
  TR_RET_CU(cudaMemsetAsync(c->d_stats, 0, 4 * sizeof(int64_t), s), "step 1 counts");
  return tr_launch_rows(A, B, poff, np, most, s, c);
}

int tr_cuda_step1_rows(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int64_t cap, tr_tmp *tmp,
                       tr_cuda_cand *c)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  const int64_t na = A->num_tiles;
  /* one allocation: pair offsets, counts, the lists, room for step 2's totals */
  tr_group *g = &c->block;
  memset(g, 0, sizeof *g);
  const int i_poff = tr_group_add(g, ((size_t)na + 1) * sizeof(int64_t));
  const int i_stats = tr_group_add(g, 4 * sizeof(int64_t));
  const int i_lists = tr_group_add(g, (5 * (size_t)cap + 1 + ((size_t)TR + 1) + 1) * sizeof(int32_t));
  TR_RET(tr_group_alloc(g, tmp, s, "step 1 pair lists"));
  int64_t *poff = (int64_t *)tr_group_at(g, i_poff);
  tr_rows_lists(c, (int32_t *)tr_group_at(g, i_lists), cap, TR);
  c->path = TR_PATH_ROWS_SMALL;
  c->cap = cap;
  c->npairs = -1;
  c->d_stats = (int64_t *)tr_group_at(g, i_stats);
  /* a tile row has at most (tile columns of A) * (tile columns of B) pairs */
  int64_t most = (int64_t)A->tile_cols * (int64_t)B->tile_cols;
  if (most > cap) most = cap;
  k_pair_offsets_small<<<1, TR_OFFSETS_THREADS, 0, s>>>(tr_view(A), TR, na, tr_view(B), cap, tr_rows_capacity(most),
                                                        poff, c->d_stats);
  TR_RET(tr_cuda_check_launch("step 1 pair offsets"));
  return tr_launch_rows(A, B, poff, -1, most, s, c);
}
