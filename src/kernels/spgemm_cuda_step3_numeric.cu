/* Step 3 (CUDA): numeric C = A*B on the plan's hits.  No allocation, no
 * synchronisation: one launch on the plan's stream.
 *
 * AMG tiles are very sparse (a pair yields ten-odd products), so walking
 * pairs row by row leaves most lanes idle behind a chain of dependent
 * loads.  Step 2 therefore flattened the work into hits (one A entry
 * meeting a non-empty row of B) with every index resolved, and cut the
 * C tiles into chunks of about TR_CHUNK_WORK hits + accumulator slots.
 * One block per chunk: its lanes stride over the chunk's hits, each
 * loading the record, x = A(r,k) and B's row k, and adding the products
 * into the chunk's shared-memory accumulator with shared fp64 atomics
 * (sums are exact up to rounding order: results match the CPU engine to
 * rounding, not bitwise).  Accumulators keep step 2's choice: tiles with
 * at most dense_threshold entries are accumulated compressed (slot of
 * (r,c) = row start + popcount of the row mask below c), as C stores
 * them, so a chunk without dense tiles is written back by one contiguous
 * copy; dense tiles use a 16x16 block read back through C's idx. */
#include "spgemm_cuda.cuh"

static __device__ __forceinline__ void tr_apply(double *acc, const tr_hit &e, double x, double b0,
                                                const double *__restrict__ bval)
{
  unsigned bm = e.masks & 0xffffu;
  const unsigned cm = e.masks >> 16;
  int c = __ffs(bm) - 1; /* every hit has a non-empty B row */
  bm &= bm - 1;
  atomicAdd(&acc[e.loc + __popc(cm & ((1u << c) - 1u))], x * b0);
  for (uint32_t i = 1; bm; i++) {
    c = __ffs(bm) - 1;
    bm &= bm - 1;
    atomicAdd(&acc[e.loc + __popc(cm & ((1u << c) - 1u))], x * bval[e.b + i]);
  }
}

static __global__ void __launch_bounds__(TR_NUMERIC_THREADS)
    k_numeric(const tr_chunk *__restrict__ chunks, const tr_hit *__restrict__ hits, const double *__restrict__ aval,
              const double *__restrict__ bval, double *__restrict__ cval, const int64_t *__restrict__ ctile_off,
              const uint8_t *__restrict__ cidx, const uint16_t *__restrict__ acc_loc, int dense_threshold)
{
  __shared__ double acc[TR_CHUNK_ACC];
  const tr_chunk ch = chunks[blockIdx.x];
  if (ch.tile0 >= ch.tile1) return; /* empty chunk: the whole block leaves */
  const int nacc = (int)(ch.acc1 - ch.acc0);
  const int T = TR_NUMERIC_THREADS;
  for (int i = threadIdx.x; i < nacc; i += T) acc[i] = 0.0;
  __syncthreads();
  /* two hits per thread and round: both load chains in flight together */
  int64_t h = ch.hit0 + threadIdx.x;
  for (; h + T < ch.hit1; h += 2 * T) {
    const tr_hit e0 = hits[h], e1 = hits[h + T];
    const double x0 = aval[e0.a], x1 = aval[e1.a], b0 = bval[e0.b], b1 = bval[e1.b];
    tr_apply(acc, e0, x0, b0, bval);
    tr_apply(acc, e1, x1, b1, bval);
  }
  if (h < ch.hit1) {
    const tr_hit e0 = hits[h];
    tr_apply(acc, e0, aval[e0.a], bval[e0.b], bval);
  }
  __syncthreads();
  if (!ch.dense) { /* compressed slots in C's own order */
    double *out = cval + ctile_off[ch.tile0];
    for (int i = threadIdx.x; i < nacc; i += T) out[i] = acc[i];
    return;
  }
  /* a warp per tile: dense tiles compressed through idx */
  const int lane = threadIdx.x & 31;
  for (int32_t t = ch.tile0 + (threadIdx.x >> 5); t < ch.tile1; t += T / 32) {
    const int64_t off = ctile_off[t];
    const int len = (int)(ctile_off[t + 1] - off);
    const int base = acc_loc[t];
    const bool dense = len > dense_threshold;
    for (int e = lane; e < len; e += 32) cval[off + e] = acc[base + (dense ? (int)cidx[off + e] : e)];
  }
}

int tr_cuda_step3_numeric(const struct tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                          tilerap_tile_matrix *C)
{
  if (P->nchunks <= 0) return TILERAP_SUCCESS;
  k_numeric<<<(unsigned)P->nchunks, TR_NUMERIC_THREADS, 0, P->stream>>>(P->chunks, P->hits, A->val, B->val, C->val,
                                                                        C->tile_off, C->idx, P->acc_loc,
                                                                        P->dense_threshold);
  return tr_cuda_check_launch("numeric");
}
