/* Step 1 (CUDA): symbolic SpGEMM of the tile graphs, on the device.
 * Every (A tile a, B tile b) with col(a) == row(b) is a pair feeding C
 * tile (row(a), col(b)).  Pairs are expanded per A tile (scan of B's tile
 * row lengths; a warp per A tile, so the writes coalesce) and stably
 * sorted by C tile (row, column): pairs of one C tile stay in ascending
 * k, as on the CPU.  Runs of equal key become the candidate tiles.
 *
 * The sort is one LSD radix sort over the whole pair list on the key
 * row * tile_cols + column, cut to the bits the product needs (32-bit
 * keys while tile_rows * tile_cols fits, 64-bit beyond).  A segmented
 * sort by column inside each tile row (the first version) spent 2.8 ms
 * on the 6M pairs of a BoomerAMG level-0 P^T (AP) on the H100: its
 * segments (tile rows of P^T) are long and few, which CUB's
 * large-segment kernel handles one block per segment.
 * TILERAP_STEP1_SORT=segmented sorts the same keys inside each tile row
 * with that sort instead, for comparisons.  Only
 * the pair total comes back to the host, to size the expansion. */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>
#include <stdlib.h>
#include <string.h>

/* A tile row of every A tile; pair count of every A tile (B row length). */
static __global__ void k_rows_and_counts(tr_dview A, int32_t tile_rows, int64_t na, tr_dview B, int32_t *arow,
                                         int64_t *nb)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I < tile_rows)
    for (int64_t a = A.tile_ptr[I]; a < A.tile_ptr[I + 1]; a++) {
      int32_t k = A.tile_col[a];
      arow[a] = I;
      nb[a] = B.tile_ptr[k + 1] - B.tile_ptr[k];
    }
  if (I == 0) nb[na] = 0;
}

/* First pair of every tile row of A (segments of the sort). */
static __global__ void k_segments(const int64_t *tile_ptr, int32_t tile_rows, const int64_t *poff, int32_t *seg)
{
  int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I <= tile_rows) seg[I] = (int32_t)poff[tile_ptr[I]];
}

/* Pair expansion, a warp per A tile: key = C tile (row * tile_cols +
 * column), value = pair number. */
template <typename K>
static __global__ void k_expand(tr_dview A, int64_t na, tr_dview B, const int32_t *arow, int64_t tc,
                                const int64_t *poff, K *key, int32_t *pid, int32_t *pa, int32_t *pb)
{
  const int64_t a = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (a >= na) return;
  const int32_t k = A.tile_col[a];
  const int64_t b0 = B.tile_ptr[k], nbk = B.tile_ptr[k + 1] - b0, p0 = poff[a];
  const K row = (K)((int64_t)arow[a] * tc);
  for (int64_t j = lane; j < nbk; j += 32) {
    const int64_t p = p0 + j, b = b0 + j;
    key[p] = row + (K)B.tile_col[b];
    pid[p] = (int32_t)p;
    pa[p] = (int32_t)a;
    pb[p] = (int32_t)b;
  }
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

#define TRY_CU(call, what)                                  \
  do {                                                      \
    cudaError_t e_ = (call);                                \
    if (e_ != cudaSuccess) return tr_cuda_error(e_, what);  \
  } while (0)
#define TRY(call)                  \
  do {                             \
    int r_ = (call);               \
    if (r_) return r_;             \
  } while (0)

/* Expansion, sort and candidates with key type K (C tile numbers,
 * row * tc + column, below 2^bits): one radix sort, or (segmented) a
 * sort inside each of the ntr tile rows' segments seg. */
template <typename K>
static int tr_step1_group(tr_dview dA, int64_t na, tr_dview dB, const int32_t *arow, int64_t tc, int bits,
                          int segmented, int32_t ntr, const int32_t *seg, const int64_t *poff, int64_t np,
                          void *key_v, void *skey_v,
                          int32_t *pid, int32_t *pa, int32_t *pb, int32_t *sid, int32_t *head, int32_t *cid,
                          tr_tmp *tmp, tr_cuda_cand *c)
{
  cudaStream_t s = tmp->s;
  K *key = (K *)key_v, *skey = (K *)skey_v;
  k_expand<K><<<tr_blocks(32 * na, 128), 128, 0, s>>>(dA, na, dB, arow, tc, poff, key, pid, pa, pb);
  TRY(tr_cuda_check_launch("step 1 expansion"));
  size_t tb = 0, tb2 = 0;
  void *ts = NULL;
  for (int pass = 0; pass < 2; pass++) { /* sizing, then sorting */
    if (!segmented) TRY_CU(cub::DeviceRadixSort::SortPairs(ts, tb, key, skey, pid, sid, (int)np, 0, bits, s), "step 1 sort");
    else TRY_CU(cub::DeviceSegmentedSort::StableSortPairs(ts, tb, key, skey, pid, sid, np, ntr, seg, seg + 1, s),
                "step 1 sort");
    if (pass) break;
    TRY_CU(cub::DeviceScan::InclusiveSum(NULL, tb2, head, cid, np, s), "step 1 scan");
    if (tb2 > tb) tb = tb2;
    TRY(tr_tmp_alloc(tmp, &ts, tb, "step 1 sort storage"));
  }
  k_heads<K><<<tr_blocks(np, 256), 256, 0, s>>>(np, skey, sid, pa, pb, c->pair_a, c->pair_b, head);
  TRY(tr_cuda_check_launch("step 1 heads"));
  TRY_CU(cub::DeviceScan::InclusiveSum(ts, tb, head, cid, np, s), "step 1 scan");
  k_candidates<K><<<tr_blocks(np, 256), 256, 0, s>>>(np, skey, tc, head, cid, c->pair_cand, c->cand_ptr, c->cand_col,
                                                     c->d_ncand);
  return tr_cuda_check_launch("step 1 candidates");
}

int tr_cuda_step1_structure(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, tr_tmp *tmp,
                            tr_cuda_cand *c)
{
  cudaStream_t s = tmp->s;
  const int32_t TR = A->tile_rows;
  const int64_t na = A->num_tiles;
  tr_dview dA = tr_view(A), dB = tr_view(B);
  memset(c, 0, sizeof *c);
  if (na == 0 || B->num_tiles == 0) return TILERAP_SUCCESS;

  int32_t *arow;
  int64_t *nb, *poff;
  TRY(tr_tmp_alloc(tmp, (void **)&arow, (size_t)na * sizeof(int32_t), "step 1 tile rows"));
  TRY(tr_tmp_alloc(tmp, (void **)&nb, ((size_t)na + 1) * sizeof(int64_t), "step 1 pair counts"));
  TRY(tr_tmp_alloc(tmp, (void **)&poff, ((size_t)na + 1) * sizeof(int64_t), "step 1 pair offsets"));
  k_rows_and_counts<<<tr_blocks(TR > 0 ? TR : 1, 128), 128, 0, s>>>(dA, TR, na, dB, arow, nb);
  TRY(tr_cuda_check_launch("step 1 counts"));
  size_t tb = 0;
  TRY_CU(cub::DeviceScan::ExclusiveSum(NULL, tb, nb, poff, na + 1, s), "step 1 scan");
  void *ts;
  TRY(tr_tmp_alloc(tmp, &ts, tb, "step 1 scan storage"));
  TRY_CU(cub::DeviceScan::ExclusiveSum(ts, tb, nb, poff, na + 1, s), "step 1 scan");
  int64_t np = 0;
  TRY_CU(cudaMemcpyAsync(&np, poff + na, sizeof np, cudaMemcpyDeviceToHost, s), "step 1 pair total");
  TRY_CU(cudaStreamSynchronize(s), "step 1 pair total");
  c->npairs = np;
  if (np == 0) return TILERAP_SUCCESS;
  if (np >= INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "product has %lld tile pairs (CUDA engine limit 2^31)", (long long)np);

  int32_t *seg, *pid, *pa, *pb, *sid, *head, *cid;
  size_t npb = (size_t)np * sizeof(int32_t);
  TRY(tr_tmp_alloc(tmp, (void **)&seg, ((size_t)TR + 1) * sizeof(int32_t), "step 1 segments"));
  TRY(tr_tmp_alloc(tmp, (void **)&pid, npb, "step 1 pair ids"));
  TRY(tr_tmp_alloc(tmp, (void **)&pa, npb, "step 1 pairs"));
  TRY(tr_tmp_alloc(tmp, (void **)&pb, npb, "step 1 pairs"));
  TRY(tr_tmp_alloc(tmp, (void **)&sid, npb, "step 1 sorted ids"));
  TRY(tr_tmp_alloc(tmp, (void **)&head, npb, "step 1 heads"));
  TRY(tr_tmp_alloc(tmp, (void **)&cid, npb, "step 1 candidate ids"));
  TRY(tr_tmp_alloc(tmp, (void **)&c->pair_a, npb, "step 1 pair list"));
  TRY(tr_tmp_alloc(tmp, (void **)&c->pair_b, npb, "step 1 pair list"));
  TRY(tr_tmp_alloc(tmp, (void **)&c->pair_cand, npb, "step 1 pair candidates"));
  TRY(tr_tmp_alloc(tmp, (void **)&c->cand_ptr, npb + sizeof(int32_t), "step 1 candidate pointers"));
  TRY(tr_tmp_alloc(tmp, (void **)&c->cand_col, npb, "step 1 candidate columns"));
  TRY(tr_tmp_alloc(tmp, (void **)&c->row_cand, ((size_t)TR + 1) * sizeof(int32_t), "step 1 row candidates"));
  TRY(tr_tmp_alloc(tmp, (void **)&c->d_ncand, sizeof(int32_t), "step 1 candidate count"));
  k_segments<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(A->tile_ptr, TR, poff, seg);
  TRY(tr_cuda_check_launch("step 1 segments"));

  /* keys: C tile numbers, 32 bits while they fit */
  const int64_t TC = B->tile_cols;
  const unsigned long long ntiles_c = (unsigned long long)(TR > 0 ? TR : 1) * (unsigned long long)(TC > 0 ? TC : 1);
  const char *env = getenv("TILERAP_STEP1_SORT");
  const int segmented = env && !strcmp(env, "segmented");
  const int wide = ntiles_c > 0xffffffffull;
  int end_bit = 1;
  while (end_bit < 64 && (ntiles_c - 1) >> end_bit) end_bit++;
  void *key, *skey;
  const size_t kb = (size_t)np * (wide ? sizeof(uint64_t) : sizeof(uint32_t));
  TRY(tr_tmp_alloc(tmp, &key, kb, "step 1 keys"));
  TRY(tr_tmp_alloc(tmp, &skey, kb, "step 1 sorted keys"));
  if (wide)
    TRY(tr_step1_group<uint64_t>(dA, na, dB, arow, TC, end_bit, segmented, TR, seg, poff, np, key, skey, pid, pa, pb,
                                 sid, head, cid, tmp, c));
  else
    TRY(tr_step1_group<uint32_t>(dA, na, dB, arow, TC, end_bit, segmented, TR, seg, poff, np, key, skey, pid, pa, pb,
                                 sid, head, cid, tmp, c));
  k_row_cand<<<tr_blocks((int64_t)TR + 1, 256), 256, 0, s>>>(TR, np, seg, cid, c->row_cand);
  TRY(tr_cuda_check_launch("step 1 row candidates"));
  return TILERAP_SUCCESS;
}
