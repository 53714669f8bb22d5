/* Step 1 (CUDA): symbolic SpGEMM of the tile graphs, on the device.
 * Every (A tile a, B tile b) with col(a) == row(b) is a pair feeding C
 * tile (row(a), col(b)); the pairs of one C tile, in ascending k as on
 * the CPU, form a candidate tile.  Four ways (the first two in
 * spgemm_cuda_step1_rows.cu, the third in spgemm_cuda_step1_compact.cu):
 *  - small products: the row path, no read-back (tr_cuda_step1_rows);
 *  - up to TR_ROWS_EXACT_MAX pairs, every tile row at most
 *    TR_ROW_SORT_MAX pairs: the pair count is read back, then the row
 *    path (tr_cuda_step1_rows_exact);
 *  - beyond that, every tile row at most TR_ROW_SORT_MAX pairs and rows
 *    either all short or long on the whole (tr_cuda_step1_compact_suits):
 *    the row sort with dense candidates (tr_cuda_step1_compact,
 *    spgemm_cuda_step1_compact.cu);
 *  - otherwise, here: pairs expanded per A tile (scan of B's tile row
 *    lengths; a warp per A tile, so the writes coalesce) and stably
 *    sorted by C tile (row, column); runs of equal key become the
 *    candidate tiles.
 * The sort is one LSD radix sort over the whole pair list on the key
 * row * tile_cols + column, cut to the bits the product needs (32-bit
 * keys while tile_rows * tile_cols fits, 64-bit beyond): a segmented sort
 * inside each tile row was slower on the few long tile rows of P^T.  The
 * tuning table's TILERAP_STEP1_SORT=radix takes this path for every
 * product, =compact the row sort wherever the rows fit (small products
 * included; tests).  Only the pair total (and the
 * longest tile row) comes back to the host, to size the expansion. */
#include "spgemm_cuda.cuh"
#include "tuning.h"
#include <cub/cub.cuh>
#include <stdlib.h>
#include <string.h>

/* A tile row of every A tile; pair count of every A tile (B row length);
 * the most pairs of one tile row (*most zeroed before).  A 16-lane group
 * per tile row: the tiles of a row were one thread's serial chain of
 * loads, long in P^T's rows (tens of tiles). */
#define TR_COUNTS_THREADS 512
static __global__ void __launch_bounds__(TR_COUNTS_THREADS)
    k_rows_and_counts(tr_dview A, int32_t tile_rows, int64_t na, tr_dview B, int32_t *arow, int64_t *nb,
                      unsigned long long *most)
{
  const int64_t I = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 4;
  const int lane = threadIdx.x & 15;
  unsigned long long row = 0;
  if (I < tile_rows)
    for (int64_t a = A.tile_ptr[I] + lane; a < A.tile_ptr[I + 1]; a += 16) {
      const int32_t k = A.tile_col[a];
      const int64_t n = B.tile_ptr[k + 1] - B.tile_ptr[k];
      arow[a] = (int32_t)I;
      nb[a] = n;
      row += (unsigned long long)n;
    }
  for (int o = 8; o > 0; o >>= 1) row += __shfl_xor_sync(0xffffffffu, row, o, 16);
  /* one atomic per block: same-address atomics are serialised in L2 (one
   * per warp, 250 k of them at level 0 of p3d7 200^3, kept this kernel at
   * 237 us) */
  row = max(row, __shfl_xor_sync(0xffffffffu, row, 16));
  __shared__ unsigned long long wmax[TR_COUNTS_THREADS / 32];
  if ((threadIdx.x & 31) == 0) wmax[threadIdx.x >> 5] = row;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < TR_COUNTS_THREADS / 32; w++) row = max(row, wmax[w]);
    if (row) atomicMax(most, row);
  }
  if (I == 0 && lane == 0) nb[na] = 0;
}

/* First pair of every tile row of A (segments of the sort). */
static __global__ void k_segments(const int64_t *tile_ptr, int32_t tile_rows, const int64_t *poff, int32_t *seg)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I <= tile_rows) seg[I] = (int32_t)poff[tile_ptr[I]];
}

/* Pair expansion, 2^lg lanes per A tile: key = C tile (row * tile_cols +
 * column), value = pair number.  The width follows the mean pair count
 * of an A tile (tr_expand_lg): AMG's prolongators have 2-4 tiles per tile
 * row, and a warp per A tile left 29 of 32 lanes idle (level 0 of p3d7
 * 101^3: 157 us for 2.8 M pairs). */
template <typename K>
static __global__ void k_expand(tr_dview A, int64_t na, tr_dview B, const int32_t *arow, int64_t tc,
                                const int64_t *poff, K *key, int32_t *pid, int32_t *pa, int32_t *pb, int lg)
{
  const int64_t a = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> lg;
  const int w = 1 << lg, lane = threadIdx.x & (w - 1);
  if (a >= na) return;
  const int32_t k = A.tile_col[a];
  const int64_t b0 = B.tile_ptr[k], nbk = B.tile_ptr[k + 1] - b0, p0 = poff[a];
  const K row = (K)((int64_t)arow[a] * tc);
  for (int64_t j = lane; j < nbk; j += w) {
    const int64_t p = p0 + j, b = b0 + j;
    key[p] = row + (K)B.tile_col[b];
    pid[p] = (int32_t)p;
    pa[p] = (int32_t)a;
    pb[p] = (int32_t)b;
  }
}

/* log2 of k_expand's lanes per A tile: the mean pairs per A tile (np / na,
 * na > 0) rounded up to a power of two, 1..32 */
static int tr_expand_lg(int64_t np, int64_t na)
{
  const int64_t want = (np + na - 1) / na;
  int lg = 0;
  while (lg < 5 && ((int64_t)1 << lg) < want) lg++;
  return lg;
}

/* Sorted pairs: A/B tiles, and a flag where a new candidate starts (new key). */
template <typename K>
static __global__ void k_heads(int64_t np, const K *key, const int32_t *sid, const int32_t *pa, const int32_t *pb,
                               int32_t *pair_a, int32_t *pair_b, int32_t *head)
{
  int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= np) return;
  pair_a[q] = pa[sid[q]];
  pair_b[q] = pb[sid[q]];
  head[q] = q == 0 || key[q] != key[q - 1];
}

/* candidate number of every pair (inclusive scan of heads, minus one);
 * a candidate's column is its key's remainder by tc */
template <typename K>
static __global__ void k_candidates(int64_t np, const K *key, int64_t tc, const int32_t *head, const int32_t *cid,
                                    int32_t *pair_cand, int32_t *cand_ptr, int32_t *cand_col, int32_t *d_ncand)
{
  int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= np) return;
  int32_t t = cid[q] - 1;
  pair_cand[q] = t;
  if (head[q]) { cand_ptr[t] = (int32_t)q; cand_col[t] = (int32_t)(key[q] % (K)tc); }
  if (q == np - 1) { cand_ptr[t + 1] = (int32_t)np; *d_ncand = t + 1; }
}

/* first candidate of every tile row (empty rows: the next row's first) */
static __global__ void k_row_cand(int32_t tile_rows, int64_t np, const int32_t *seg, const int32_t *cid, int32_t *row_cand)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I > tile_rows) return;
  int32_t s = seg[I];
  row_cand[I] = s < np ? cid[s] - 1 : cid[np - 1];
}

/* Temporary storage of the sort and the head scan (sizes only: CUB reads
 * no array while sizing). */
template <typename K>
static int tr_step1_sort_bytes(int64_t np, int bits, cudaStream_t s, size_t *bytes)
{
  size_t tb = 0, tb2 = 0;
  cudaError_t e = cub::DeviceRadixSort::SortPairs(NULL, tb, (K *)NULL, (K *)NULL, (int32_t *)NULL, (int32_t *)NULL,
                                                  (int)np, 0, bits, s);
  if (e == cudaSuccess) e = cub::DeviceScan::InclusiveSum(NULL, tb2, (int32_t *)NULL, (int32_t *)NULL, np, s);
  if (e != cudaSuccess) return tr_cuda_error(e, "step 1 sort sizing");
  *bytes = tb > tb2 ? tb : tb2;
  return TILERAP_SUCCESS;
}

/* Expansion, sort and candidates with key type K (C tile numbers,
 * row * tc + column, below 2^bits): one radix sort; ts: tb bytes of
 * storage (tr_step1_sort_bytes). */
template <typename K>
static int tr_step1_group(tr_dview dA, int64_t na, tr_dview dB, const int32_t *arow, int64_t tc, int bits,
                          const int64_t *poff, int64_t np,
                          void *key_v, void *skey_v, int32_t *pid, int32_t *pa, int32_t *pb, int32_t *sid,
                          int32_t *head, int32_t *cid, void *ts, size_t tb, cudaStream_t s, tr_cuda_cand *c)
{
  K *key = (K *)key_v, *skey = (K *)skey_v;
  const int lg = tr_expand_lg(np, na);
  k_expand<K><<<tr_blocks(na << lg, 128), 128, 0, s>>>(dA, na, dB, arow, tc, poff, key, pid, pa, pb, lg);
  TR_RET(tr_cuda_check_launch("step 1 expansion"));
  TR_RET_CU(cub::DeviceRadixSort::SortPairs(ts, tb, key, skey, pid, sid, (int)np, 0, bits, s), "step 1 sort");
  k_heads<K><<<tr_blocks(np, 256), 256, 0, s>>>(np, skey, sid, pa, pb, c->pair_a, c->pair_b, head);
  TR_RET(tr_cuda_check_launch("step 1 heads"));
  TR_RET_CU(cub::DeviceScan::InclusiveSum(ts, tb, head, cid, np, s), "step 1 scan");
  k_candidates<K><<<tr_blocks(np, 256), 256, 0, s>>>(np, skey, tc, head, cid, c->pair_cand, c->cand_ptr, c->cand_col,
                                                     c->d_ncand);
  return tr_cuda_check_launch("step 1 candidates");
}

int tr_step1_lists_alloc(tr_cuda_cand *c, int64_t np, int32_t TR, tr_tmp *tmp)
{
  const size_t npb = (size_t)np * sizeof(int32_t);
  tr_group *l = &c->block;
  memset(l, 0, sizeof *l);
  const int i_pa = tr_group_add(l, npb), i_pb = tr_group_add(l, npb), i_pc = tr_group_add(l, npb);
  const int i_cp = tr_group_add(l, npb + sizeof(int32_t)), i_cc = tr_group_add(l, npb);
  const int i_rc = tr_group_add(l, ((size_t)TR + 1) * sizeof(int32_t)), i_nc = tr_group_add(l, sizeof(int32_t));
  TR_RET(tr_group_alloc(l, tmp, tmp->s, "step 1 pair lists"));
  c->pair_a = (int32_t *)tr_group_at(l, i_pa); c->pair_b = (int32_t *)tr_group_at(l, i_pb);
  c->pair_cand = (int32_t *)tr_group_at(l, i_pc); c->cand_ptr = (int32_t *)tr_group_at(l, i_cp);
  c->cand_col = (int32_t *)tr_group_at(l, i_cc); c->row_cand = (int32_t *)tr_group_at(l, i_rc);
  c->d_ncand = (int32_t *)tr_group_at(l, i_nc);
  return TILERAP_SUCCESS;
}

/* Largest pair count the row path takes once the count is known: its
 * candidates are numbered by pair position, so step 2 and the first run
 * work over all pairs, and its kernel gives a block to every tile row.
 * Measured on the H100 (BENCHMARKS.md section 1): faster than the radix
 * sort up to about 10^5 pairs (levels of 10^4 - 10^5 rows), 1.4-1.8x
 * slower at 10^6 and more (level 0).  The tuning table's
 * TILERAP_ROWS_MAX (default 2^18) sets it: tests lower it to reach the
 * row sort on small products. */
static int64_t tr_rows_exact_max(void) { return (int64_t)tr_knob(TR_KNOB_ROWS_MAX); }

int tr_cuda_step1_structure(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int counted, tr_tmp *tmp,
                            tr_cuda_cand *c)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  const int64_t na = A->num_tiles;
  tr_dview dA = tr_view(A), dB = tr_view(B);
  memset(c, 0, sizeof *c);
  if (na == 0 || B->num_tiles == 0) return TILERAP_SUCCESS;

  /* products whose tile rows have at most TR_ROW_SORT_MAX pairs take
   * the row path (spgemm_cuda_step1_rows.cu) or, beyond
   * tr_rows_exact_max() pairs, the row sort; small ones without the pair
   * count's read-back.  The tuning table's TILERAP_STEP1_SORT (tests):
   * radix keeps every product on the radix path, rows reads the count
   * back first and never takes the row sort, compact reads it back and
   * takes the row sort wherever the rows fit */
  const int how = tr_knob_int(TR_KNOB_STEP1_SORT);   /* auto|radix|rows|compact */
  const int sort_all = how == 1;                     /* no row path, no row sort */
  const int rows_only = how == 2;                    /* the row path after a read-back only */
  const int compact_only = how == 3;                 /* the row sort after a read-back only */
  if (!counted && !sort_all && !rows_only && !compact_only) {
    const int64_t cap = tr_cuda_step1_rows_capacity(A, B);
    if (cap > 0) return tr_cuda_step1_rows(A, B, cap, tmp, c);
  }

  /* pair counts and offsets, the one read-back: the pair total */
  size_t tb = 0;
  TR_RET_CU(cub::DeviceScan::ExclusiveSum(NULL, tb, (int64_t *)NULL, (int64_t *)NULL, na + 1, s), "step 1 scan");
  tr_group w;
  memset(&w, 0, sizeof w);
  const int i_arow = tr_group_add(&w, (size_t)na * sizeof(int32_t));
  const int i_nb = tr_group_add(&w, ((size_t)na + 1) * sizeof(int64_t));
  const int i_poff = tr_group_add(&w, ((size_t)na + 2) * sizeof(int64_t)); /* + the longest row */
  const int i_ts = tr_group_add(&w, tb);
  TR_RET(tr_group_alloc(&w, tmp, s, "step 1 pair counts"));
  int32_t *arow = (int32_t *)tr_group_at(&w, i_arow);
  int64_t *nb = (int64_t *)tr_group_at(&w, i_nb), *poff = (int64_t *)tr_group_at(&w, i_poff);
  TR_RET_CU(cudaMemsetAsync(poff + na + 1, 0, sizeof(int64_t), s), "step 1 counts");
  k_rows_and_counts<<<tr_blocks(16 * (int64_t)(TR > 0 ? TR : 1), TR_COUNTS_THREADS), TR_COUNTS_THREADS, 0, s>>>(
      dA, TR, na, dB, arow, nb, (unsigned long long *)(poff + na + 1));
  TR_RET(tr_cuda_check_launch("step 1 counts"));
  TR_RET_CU(cub::DeviceScan::ExclusiveSum(tr_group_at(&w, i_ts), tb, nb, poff, na + 1, s), "step 1 scan");
  int64_t h[2]; /* pairs, most pairs of a tile row */
  TR_RET(tr_readback(h, poff + na, sizeof h, s, "step 1 pair total"));
  TR_MARK("step1 count");
  const int64_t np = h[0];
  c->npairs = np;
  if (np == 0) return TILERAP_SUCCESS;
  if (np >= INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "product has %lld tile pairs (CUDA engine limit 2^31)", (long long)np);
  /* every tile row's pairs sortable in a block: the row path for up to
   * tr_rows_exact_max() pairs, the row sort with dense candidates
   * (spgemm_cuda_step1_compact.cu) beyond */
  if (!sort_all && h[1] <= TR_ROW_SORT_MAX && !compact_only && np <= tr_rows_exact_max())
    return tr_cuda_step1_rows_exact(A, B, poff, np, h[1], tmp, c);
  if (!sort_all && !rows_only && h[1] <= TR_ROW_SORT_MAX && (compact_only || tr_cuda_step1_compact_suits(np, TR, h[1])))
    return tr_cuda_step1_compact(A, B, poff, np, h[1], tmp, c);

  /* keys: C tile numbers, 32 bits while they fit */
  const int64_t TC = B->tile_cols;
  const unsigned long long ntiles_c = (unsigned long long)(TR > 0 ? TR : 1) * (unsigned long long)(TC > 0 ? TC : 1);
  const int wide = ntiles_c > 0xffffffffull;
  int end_bit = 1;
  while (end_bit < 64 && (ntiles_c - 1) >> end_bit) end_bit++;
  size_t sb = 0;
  if (wide) TR_RET(tr_step1_sort_bytes<uint64_t>(np, end_bit, s, &sb));
  else TR_RET(tr_step1_sort_bytes<uint32_t>(np, end_bit, s, &sb));

  /* the lists (kept by a plan that walks its pairs), then the sort's scratch */
  const size_t npb = (size_t)np * sizeof(int32_t);
  TR_RET(tr_step1_lists_alloc(c, np, TR, tmp));
  const size_t kb = (size_t)np * (wide ? sizeof(uint64_t) : sizeof(uint32_t));
  tr_group x;
  memset(&x, 0, sizeof x);
  const int i_seg = tr_group_add(&x, ((size_t)TR + 1) * sizeof(int32_t));
  const int i_pid = tr_group_add(&x, npb), i_pa2 = tr_group_add(&x, npb), i_pb2 = tr_group_add(&x, npb);
  const int i_sid = tr_group_add(&x, npb), i_head = tr_group_add(&x, npb), i_cid = tr_group_add(&x, npb);
  const int i_key = tr_group_add(&x, kb), i_skey = tr_group_add(&x, kb), i_sts = tr_group_add(&x, sb);
  TR_RET(tr_group_alloc(&x, tmp, s, "step 1 sort"));
  int32_t *seg = (int32_t *)tr_group_at(&x, i_seg), *cid = (int32_t *)tr_group_at(&x, i_cid);
#define TR_P32(i) ((int32_t *)tr_group_at(&x, (i)))
  k_segments<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(A->tile_ptr, TR, poff, seg);
  TR_RET(tr_cuda_check_launch("step 1 segments"));
  if (wide)
    TR_RET(tr_step1_group<uint64_t>(dA, na, dB, arow, TC, end_bit, poff, np, tr_group_at(&x, i_key),
                                 tr_group_at(&x, i_skey), TR_P32(i_pid), TR_P32(i_pa2), TR_P32(i_pb2), TR_P32(i_sid),
                                 TR_P32(i_head), cid, tr_group_at(&x, i_sts), sb, s, c));
  else
    TR_RET(tr_step1_group<uint32_t>(dA, na, dB, arow, TC, end_bit, poff, np, tr_group_at(&x, i_key),
                                 tr_group_at(&x, i_skey), TR_P32(i_pid), TR_P32(i_pa2), TR_P32(i_pb2), TR_P32(i_sid),
                                 TR_P32(i_head), cid, tr_group_at(&x, i_sts), sb, s, c));
#undef TR_P32
  k_row_cand<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(TR, np, seg, cid, c->row_cand);
  TR_RET(tr_cuda_check_launch("step 1 row candidates"));
  return TILERAP_SUCCESS;
}
