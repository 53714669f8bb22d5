/* Structure hash of a device tile matrix (tile_structure.h): a thread per
 * tile-row pointer and per tile, both words summed per warp, one atomic
 * add per warp and word.  Used at plan creation and when a numeric call
 * meets an operand of another structure_id, never on a plain re-run. */
#include "spgemm_cuda.cuh"
#include "tile_structure.h"

/* the words are sums over tile-row pointers and tiles; tile_structure.c
 * adds the sizes term */

static __global__ void k_structure_hash(const tilerap_tile_matrix T, unsigned long long *out)
{
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
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&out[0], (unsigned long long)s0);
    atomicAdd(&out[1], (unsigned long long)s1);
  }
}

extern "C" int tr_cuda_structure_hash_start(const tilerap_tile_matrix *T, void **words)
{
  const cudaStream_t s = cudaStreamLegacy;
  int err = tr_dalloc(words, 2 * sizeof(unsigned long long), s, "structure hash");
  if (err) return err;
  cudaError_t ce = cudaMemsetAsync(*words, 0, 2 * sizeof(unsigned long long), s);
  if (ce == cudaSuccess) {
    const int64_t items = T->num_tiles > T->tile_rows + 1 ? T->num_tiles : T->tile_rows + 1;
    const int64_t threads = items < (1 << 22) ? items : (1 << 22);
    k_structure_hash<<<tr_blocks(threads, 256), 256, 0, s>>>(*T, (unsigned long long *)*words);
    ce = cudaGetLastError();
  }
  if (ce != cudaSuccess) {
    tr_dfree(*words, s);
    *words = NULL;
    return tr_cuda_error(ce, "structure hash");
  }
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_structure_hash_finish(void *words, uint64_t h[2])
{
  const cudaStream_t s = cudaStreamLegacy;
  unsigned long long r[2] = {0, 0};
  cudaError_t ce = cudaMemcpyAsync(r, words, sizeof r, cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
  tr_dfree(words, s);
  if (ce != cudaSuccess) return tr_cuda_error(ce, "structure hash");
  h[0] = r[0];
  h[1] = r[1];
  return TILERAP_SUCCESS;
}
