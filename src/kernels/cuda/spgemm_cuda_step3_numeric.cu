/* Step 3 (CUDA): numeric C = A*B on the plan's hits (every run from a
 * plan's second on; the first walks the pairs, spgemm_cuda_step3_pairs.cu).
 * No allocation, no synchronisation: one launch on the plan's stream.
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
 * copy; dense tiles use a 16x16 block read back through C's idx.
 *
 * Tensor-core pairs (step 2 classified them: enough multiply-adds per
 * pair to fill an MMA) are split evenly over the block's warps before
 * the hits.  A warp gathers its pair's A and B tiles straight into MMA
 * fragments (a lane's elements looked up through the row masks, zeros
 * where nothing is stored), accumulates the 16x16 product in registers
 * across consecutive pairs of the same C tile and adds it into the
 * chunk's accumulator once per tile, only at C's stored positions (the
 * others are structurally zero).  fp64: 2x2x4 DMMA m8n8k4 per pair
 * (two m16n8k16 on sm_90 measured 3-13 % slower), fp64 accumulation.  Low precisions (opt-in): each tile scaled by a
 * power of two, rounded (tr_round_prec), m16n8k16 (fp16, bf16) or
 * m16n8k8 (tf32) with fp32 accumulation per pair, scaled back and summed
 * in fp64. */
#include "spgemm_cuda.cuh"
#include "tile_lowprec.h"
#include <cuda_fp16.h>
#include <cuda_bf16.h>

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

/* ------------------------------------------------------- tensor cores */
/* Lane layout (PTX ISA, "Matrix Fragments for mma"): g = lane >> 2,
 * t = lane & 3.  Every shape used here gives a lane the A elements of
 * rows g and g+8 and the B elements of columns g and g+8, at four k
 * positions tr_kpos(t, j), and the C elements (g + 8mi, 8ni + 2t + j):
 *   m8n8k4 f64 (A 8x4 row: (g, t); B 4x8 col: (t, g); C (g, 2t+j)),
 *     four k steps of 4: k = t + 4j;
 *   m16n8k8 tf32 (A regs (g,t) (g+8,t) (g,t+4) (g+8,t+4); B (t,g) (t+4,g)),
 *     two k halves of 8: k = t + 4j as well;
 *   m16n8k16 f16/bf16 (A pairs (g,2t..2t+1) (g+8,..) (g,2t+8..) (g+8,..);
 *     B pairs (2t..2t+1, g) (2t+8..2t+9, g)): k = 2t + (j&1) + 8(j>>1). */
template <int PREC> static __device__ __forceinline__ int tr_kpos(int t, int j)
{
  return (PREC == TILERAP_PRECISION_FP16 || PREC == TILERAP_PRECISION_BF16) ? 2 * t + (j & 1) + 8 * (j >> 1)
                                                                              : t + 4 * j;
}

/* element (r, c) of a stored tile given row r's mask and first entry */
static __device__ __forceinline__ double tr_at(const double *__restrict__ val, int64_t base, unsigned m, int c)
{
  return (m >> c) & 1u ? val[base + __popc(m & ((1u << c) - 1u))] : 0.0;
}

template <int PREC>
static __device__ __forceinline__ void tr_gather(const tr_dview &A, const tr_dview &B, int32_t a, int32_t b, int g,
                                                 int t, double fa[2][4], double fb[4][2])
{
  const int64_t ao = A.tile_off[a], bo = B.tile_off[b];
#pragma unroll
  for (int i = 0; i < 2; i++) {
    const int r = g + 8 * i;
    const unsigned m = A.row_mask[16 * (int64_t)a + r];
    const int64_t base = ao + A.row_ptr[16 * (int64_t)a + r];
#pragma unroll
    for (int j = 0; j < 4; j++) fa[i][j] = tr_at(A.val, base, m, tr_kpos<PREC>(t, j));
  }
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const int k = tr_kpos<PREC>(t, j);
    const unsigned m = B.row_mask[16 * (int64_t)b + k];
    const int64_t base = bo + B.row_ptr[16 * (int64_t)b + k];
#pragma unroll
    for (int i = 0; i < 2; i++) fb[j][i] = tr_at(B.val, base, m, g + 8 * i);
  }
}

/* cc[(2mi + ni) * 2 + j] holds C(g + 8mi, 8ni + 2t + j) */
static __device__ __forceinline__ void tr_dmma(double &d0, double &d1, double a, double b)
{
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d0), "+d"(d1)
               : "d"(a), "d"(b));
}

/* fp64 16x16x16 as 16 m8n8k4 */
static __device__ __forceinline__ void tr_dmma_k4(const double fa[2][4], const double fb[4][2], double cc[8])
{
#pragma unroll
  for (int j = 0; j < 4; j++)
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
      for (int ni = 0; ni < 2; ni++) tr_dmma(cc[(2 * mi + ni) * 2], cc[(2 * mi + ni) * 2 + 1], fa[mi][j], fb[j][ni]);
}

static __device__ __forceinline__ double tr_warp_absmax(const double *v, int n)
{
  double x = 0.0;
  for (int i = 0; i < n; i++) x = fmax(x, fabs(v[i]));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

template <int PREC> static __device__ __forceinline__ uint32_t tr_pack(double lo, double hi)
{
  if (PREC == TILERAP_PRECISION_FP16) {
    __half2 h = __halves2half2(__double2half(lo), __double2half(hi)); /* exact: already rounded */
    return *reinterpret_cast<uint32_t *>(&h);
  } else {
    __nv_bfloat162 h = __halves2bfloat162(__double2bfloat16(lo), __double2bfloat16(hi));
    return *reinterpret_cast<uint32_t *>(&h);
  }
}

/* one pair: cc += A_tile * B_tile */
template <int PREC> static __device__ __forceinline__ void tr_tc_pair(double fa[2][4], double fb[4][2], double cc[8])
{
  if (PREC == TILERAP_PRECISION_FP64) {
    tr_dmma_k4(fa, fb, cc);
    return;
  }
  /* low precision: power-of-two scaling per tile, warp-uniform */
  const int ea = tr_lowprec_scale_exp(PREC, tr_warp_absmax(&fa[0][0], 8));
  const int eb = tr_lowprec_scale_exp(PREC, tr_warp_absmax(&fb[0][0], 8));
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      fa[i][j] = tr_round_prec(PREC, ldexp(fa[i][j], ea));
      fb[j][i] = tr_round_prec(PREC, ldexp(fb[j][i], eb));
    }
  float f[2][4]; /* n half ni: C(g, 8ni+2t+{0,1}), C(g+8, 8ni+2t+{0,1}) */
#pragma unroll
  for (int ni = 0; ni < 2; ni++) f[ni][0] = f[ni][1] = f[ni][2] = f[ni][3] = 0.0f;
  if (PREC == TILERAP_PRECISION_TF32) {
#pragma unroll
    for (int kh = 0; kh < 2; kh++) {
      const uint32_t a0 = __float_as_uint((float)fa[0][2 * kh]), a1 = __float_as_uint((float)fa[1][2 * kh]);
      const uint32_t a2 = __float_as_uint((float)fa[0][2 * kh + 1]), a3 = __float_as_uint((float)fa[1][2 * kh + 1]);
#pragma unroll
      for (int ni = 0; ni < 2; ni++) {
        const uint32_t b0 = __float_as_uint((float)fb[2 * kh][ni]), b1 = __float_as_uint((float)fb[2 * kh + 1][ni]);
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(f[ni][0]), "+f"(f[ni][1]), "+f"(f[ni][2]), "+f"(f[ni][3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      }
    }
  } else {
    const uint32_t a0 = tr_pack<PREC>(fa[0][0], fa[0][1]), a1 = tr_pack<PREC>(fa[1][0], fa[1][1]);
    const uint32_t a2 = tr_pack<PREC>(fa[0][2], fa[0][3]), a3 = tr_pack<PREC>(fa[1][2], fa[1][3]);
#pragma unroll
    for (int ni = 0; ni < 2; ni++) {
      const uint32_t b0 = tr_pack<PREC>(fb[0][ni], fb[1][ni]), b1 = tr_pack<PREC>(fb[2][ni], fb[3][ni]);
      if (PREC == TILERAP_PRECISION_FP16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(f[ni][0]), "+f"(f[ni][1]), "+f"(f[ni][2]), "+f"(f[ni][3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
      else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(f[ni][0]), "+f"(f[ni][1]), "+f"(f[ni][2]), "+f"(f[ni][3])
                     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
  }
  const int e = -(ea + eb);
#pragma unroll
  for (int ni = 0; ni < 2; ni++) {
    cc[ni * 2] += ldexp((double)f[ni][0], e);
    cc[ni * 2 + 1] += ldexp((double)f[ni][1], e);
    cc[(2 + ni) * 2] += ldexp((double)f[ni][2], e);
    cc[(2 + ni) * 2 + 1] += ldexp((double)f[ni][3], e);
  }
}

/* adds the warp's 16x16 sum into C tile u's accumulator at C's positions */
static __device__ __forceinline__ void tr_tc_flush(double *acc, const tr_tc &e, const uint16_t *__restrict__ cmask,
                                                   const uint8_t *__restrict__ crow_ptr, int g, int t, double cc[8])
{
  const bool dense = e.slot & TR_TC_DENSE;
  const uint32_t slot = e.slot & ~TR_TC_DENSE;
#pragma unroll
  for (int mi = 0; mi < 2; mi++) {
    const int r = g + 8 * mi;
    const unsigned m = dense ? 0xffffu : cmask[16 * (int64_t)e.u + r];
    const uint32_t base = slot + (dense ? 16u * r : crow_ptr[16 * (int64_t)e.u + r]);
#pragma unroll
    for (int ni = 0; ni < 2; ni++)
#pragma unroll
      for (int j = 0; j < 2; j++) {
        const int c = 8 * ni + 2 * t + j;
        if ((m >> c) & 1u) atomicAdd(&acc[base + __popc(m & ((1u << c) - 1u))], cc[(2 * mi + ni) * 2 + j]);
        cc[(2 * mi + ni) * 2 + j] = 0.0;
      }
  }
}

/* the chunk's tensor-core pairs, split into one contiguous range per warp
 * (pairs of a C tile are contiguous: one flush per tile and warp) */
template <int PREC>
static __device__ __forceinline__ void tr_tc_chunk(double *acc, const tr_chunk &ch, const tr_tc *__restrict__ tcs,
                                                   const tr_dview &A, const tr_dview &B,
                                                   const uint16_t *__restrict__ cmask,
                                                   const uint8_t *__restrict__ crow_ptr)
{
  const int W = TR_NUMERIC_THREADS / 32, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const long long n = ch.tc1 - ch.tc0;
  const long long p0 = ch.tc0 + n * w / W, p1 = ch.tc0 + n * (w + 1) / W;
  if (p0 >= p1) return; /* warp-uniform */
  double cc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  tr_tc cur = tcs[p0];
  for (long long p = p0; p < p1; p++) {
    const tr_tc e = tcs[p];
    if (e.u != cur.u) {
      tr_tc_flush(acc, cur, cmask, crow_ptr, g, t, cc);
      cur = e;
    }
    double fa[2][4], fb[4][2];
    tr_gather<PREC>(A, B, e.a, e.b, g, t, fa, fb);
    __syncwarp();
    tr_tc_pair<PREC>(fa, fb, cc);
  }
  tr_tc_flush(acc, cur, cmask, crow_ptr, g, t, cc);
}

/* PREC < 0: plan without tensor-core pairs (the kernel stays as lean as
 * before: its occupancy carries the hits).  With them, registers are
 * capped for three blocks per SM. */
template <int PREC>
static __global__ void __launch_bounds__(TR_NUMERIC_THREADS, PREC < 0 ? 6 : 3)
    k_numeric(const tr_chunk *__restrict__ chunks, const tr_hit *__restrict__ hits, const tr_tc *__restrict__ tcs,
              tr_dview A, tr_dview B, double *__restrict__ cval, const int64_t *__restrict__ ctile_off,
              const uint8_t *__restrict__ cidx, const uint16_t *__restrict__ cmask,
              const uint8_t *__restrict__ crow_ptr, const uint16_t *__restrict__ acc_loc, int dense_threshold)
{
  __shared__ double acc[TR_CHUNK_ACC];
  const double *__restrict__ aval = A.val;
  const double *__restrict__ bval = B.val;
  const tr_chunk ch = chunks[blockIdx.x];
  if (ch.tile0 >= ch.tile1) return; /* empty chunk: the whole block leaves */
  const int nacc = (int)(ch.acc1 - ch.acc0);
  const int T = TR_NUMERIC_THREADS;
  for (int i = threadIdx.x; i < nacc; i += T) acc[i] = 0.0;
  __syncthreads();
  if (PREC >= 0 && ch.tc1 > ch.tc0) tr_tc_chunk<(PREC < 0 ? 0 : PREC)>(acc, ch, tcs, A, B, cmask, crow_ptr);
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
  const unsigned nb = (unsigned)P->nchunks;
  int prec = P->ntc > 0 ? P->precision : -1;
#define TR_LAUNCH(PR)                                                                                              \
  k_numeric<PR><<<nb, TR_NUMERIC_THREADS, 0, P->stream>>>(P->chunks, P->hits, P->tcs, tr_view(A), tr_view(B),      \
                                                          C->val, C->tile_off, C->idx, C->row_mask, C->row_ptr,     \
                                                          P->acc_loc, P->dense_threshold)
  switch (prec) {
  case TILERAP_PRECISION_TF32: TR_LAUNCH(TILERAP_PRECISION_TF32); break;
  case TILERAP_PRECISION_BF16: TR_LAUNCH(TILERAP_PRECISION_BF16); break;
  case TILERAP_PRECISION_FP16: TR_LAUNCH(TILERAP_PRECISION_FP16); break;
  case TILERAP_PRECISION_FP64: TR_LAUNCH(TILERAP_PRECISION_FP64); break;
  default: TR_LAUNCH(-1); break;
  }
#undef TR_LAUNCH
  return tr_cuda_check_launch("numeric");
}
