/* Structure hashes of device tile matrices (tile_structure.h), up to
 * three in one launch (a plan records its operands and C together):
 * threads over the tile-row pointers and the tiles, both words summed per
 * block, written as partial words.  Used at plan creation and when a numeric call
 * meets an operand of another structure_id, never on a plain re-run. */
#include "spgemm_cuda.cuh"
#include "tile_structure.h"

/* the words are sums over tile-row pointers and tiles; tile_structure.c
 * adds the sizes term */

#define TR_SH_THREADS 256
/* at most this many blocks, each writing its two partial words: no
 * atomics (adds to one address serialise in L2: one a warp cost more than
 * the hashing) and no zeroing; the rare read-back sums the partials */
#define TR_SH_BLOCKS 512

/* up to three matrices in one launch: one per grid row */
typedef struct { tilerap_tile_matrix T[3]; } tr_sh_set;

static __global__ void __launch_bounds__(TR_SH_THREADS) k_structure_hash(const tr_sh_set set, unsigned long long *out)
{
  const tilerap_tile_matrix &T = set.T[blockIdx.y];
  out += 2 * (int64_t)gridDim.x * blockIdx.y;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  uint64_t s0 = 0, s1 = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i <= T.tile_rows; i += stride) {
    s0 += tr_sh_tile_ptr(TR_SH_SEED0, i, T.tile_ptr[i]);
    s1 += tr_sh_tile_ptr(TR_SH_SEED1, i, T.tile_ptr[i]);
  }
  for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < T.num_tiles; t += stride) {
    const uint64_t *m = (const uint64_t *)(T.row_mask + 16 * t); /* 32-byte aligned */
    const uint64_t w[4] = {m[0], m[1], m[2], m[3]};
    s0 += tr_sh_tile(TR_SH_SEED0, t, T.tile_col[t], T.tile_off[t + 1], w);
    s1 += tr_sh_tile(TR_SH_SEED1, t, T.tile_col[t], T.tile_off[t + 1], w);
  }
  for (int d = 16; d; d >>= 1) {
    s0 += __shfl_xor_sync(0xffffffffu, s0, d);
    s1 += __shfl_xor_sync(0xffffffffu, s1, d);
  }
  __shared__ uint64_t part[2][TR_SH_THREADS / 32];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (lane == 0) { part[0][warp] = s0; part[1][warp] = s1; }
  __syncthreads();
  if (threadIdx.x < 2) {
    uint64_t sum = 0;
    for (int w = 0; w < TR_SH_THREADS / 32; w++) sum += part[threadIdx.x][w];
    out[2 * blockIdx.x + threadIdx.x] = sum;
  }
}

extern "C" int tr_cuda_structure_hash_start(int n, const tilerap_tile_matrix *const *T, void **words, int *nwords)
{
  const cudaStream_t s = cudaStreamLegacy;
  if (n < 1 || n > 3) return tilerap_set_error(TILERAP_ERR_INVALID, "internal: %d structure hashes in one launch", n);
  tr_sh_set set;
  int64_t items = 1;
  for (int i = 0; i < n; i++) {
    set.T[i] = *T[i];
    const int64_t it = T[i]->num_tiles > T[i]->tile_rows + 1 ? T[i]->num_tiles : T[i]->tile_rows + 1;
    if (it > items) items = it;
  }
  const unsigned blocks = tr_blocks(items, TR_SH_THREADS) < TR_SH_BLOCKS ? tr_blocks(items, TR_SH_THREADS) : TR_SH_BLOCKS;
  *nwords = 2 * (int)blocks; /* per matrix */
  int err = tr_dalloc(words, (size_t)n * (size_t)*nwords * sizeof(unsigned long long), s, "structure hash");
  if (err) return err;
  k_structure_hash<<<dim3(blocks, (unsigned)n), TR_SH_THREADS, 0, s>>>(set, (unsigned long long *)*words);
  const cudaError_t ce = cudaGetLastError();
  if (ce != cudaSuccess) {
    tr_dfree(*words, s);
    *words = NULL;
    return tr_cuda_error(ce, "structure hash");
  }
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_structure_hash_read(const void *words, int nwords, uint64_t h[2])
{
  const cudaStream_t s = cudaStreamLegacy;
  unsigned long long r[2 * TR_SH_BLOCKS];
  cudaError_t ce = cudaMemcpyAsync(r, words, (size_t)nwords * sizeof *r, cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
  if (ce != cudaSuccess) return tr_cuda_error(ce, "structure hash");
  h[0] = h[1] = 0;
  for (int i = 0; i < nwords; i += 2) { h[0] += r[i]; h[1] += r[i + 1]; }
  return TILERAP_SUCCESS;
}
