/* MMA fragments of 16x16 tiles: which elements of an A tile (row-major
 * role) and of a B tile (column role) a lane holds, gathered straight
 * from a stored tile's row masks, and the packed low-precision fragment
 * layout that the numeric phase loads with one or two 16-byte loads per
 * lane.  Shared by the fragment converter (spgemm_cuda_lowprec.cu) and the
 * numeric kernel (spgemm_cuda_step3_numeric.cu).  Not installed.
 *
 * Lane layout (PTX ISA, "Matrix Fragments for mma"): g = lane >> 2,
 * t = lane & 3.  Every shape used here gives a lane the A elements of
 * rows g and g+8 and the B elements of columns g and g+8, at four k
 * positions tr_kpos(t, j), and the C elements (g + 8mi, 8ni + 2t + j):
 *   m8n8k4 f64 (A 8x4 row: (g, t); B 4x8 col: (t, g); C (g, 2t+j)),
 *     four k steps of 4: k = t + 4j;
 *   m16n8k8 tf32 (A regs (g,t) (g+8,t) (g,t+4) (g+8,t+4); B (t,g) (t+4,g)),
 *     two k halves of 8: k = t + 4j as well;
 *   m16n8k16 f16/bf16 (A pairs (g,2t..2t+1) (g+8,..) (g,2t+8..) (g+8,..);
 *     B pairs (2t..2t+1, g) (2t+8..2t+9, g)): k = 2t + (j&1) + 8(j>>1). */
#ifndef TILERAP_TILE_MMA_FRAGMENTS_CUH
#define TILERAP_TILE_MMA_FRAGMENTS_CUH
#include "spgemm_cuda.cuh"
#include <cuda_fp16.h>
#include <cuda_bf16.h>

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

/* fa[i][j] = A(g + 8i, kpos(t, j)) of tile a */
template <int PREC>
static __device__ __forceinline__ void tr_gather_a(const tr_dview &A, int32_t a, int g, int t, double fa[2][4])
{
  const int64_t ao = A.tile_off[a];
#pragma unroll
  for (int i = 0; i < 2; i++) {
    const int r = g + 8 * i;
    const unsigned m = A.row_mask[16 * (int64_t)a + r];
    const int64_t base = ao + A.row_ptr[16 * (int64_t)a + r];
#pragma unroll
    for (int j = 0; j < 4; j++) fa[i][j] = tr_at(A.val, base, m, tr_kpos<PREC>(t, j));
  }
}

/* fb[j][i] = B(kpos(t, j), g + 8i) of tile b */
template <int PREC>
static __device__ __forceinline__ void tr_gather_b(const tr_dview &B, int32_t b, int g, int t, double fb[4][2])
{
  const int64_t bo = B.tile_off[b];
#pragma unroll
  for (int j = 0; j < 4; j++) {
    const int k = tr_kpos<PREC>(t, j);
    const unsigned m = B.row_mask[16 * (int64_t)b + k];
    const int64_t base = bo + B.row_ptr[16 * (int64_t)b + k];
#pragma unroll
    for (int i = 0; i < 2; i++) fb[j][i] = tr_at(B.val, base, m, g + 8 * i);
  }
}

/* two already-rounded values as one 32-bit register of fp16 or bf16
 * (the conversion is exact) */
template <int PREC> static __device__ __forceinline__ uint32_t tr_pack2(double lo, double hi)
{
  if (PREC == TILERAP_PRECISION_FP16) {
    __half2 h = __halves2half2(__double2half(lo), __double2half(hi));
    return *reinterpret_cast<uint32_t *>(&h);
  } else {
    __nv_bfloat162 h = __halves2bfloat162(__double2bfloat16(lo), __double2bfloat16(hi));
    return *reinterpret_cast<uint32_t *>(&h);
  }
}

/* Packed fragments: TR_FRAG_VECS(PREC) uint4 per lane and tile, stored
 * [tile][vector][lane] so that a warp's load of one vector is 512
 * contiguous bytes.
 *   fp16/bf16 A: {a0, a1, a2, a3} of m16n8k16;
 *   fp16/bf16 B: {b0, b1} of columns 0-7, then of columns 8-15;
 *   tf32 A: vector kh = {a0, a1, a2, a3} of m16n8k8 k half kh;
 *   tf32 B: vector kh = {b0, b1} of columns 0-7, then 8-15, of k half kh. */
template <int PREC> static __host__ __device__ constexpr int tr_frag_vecs()
{
  return PREC == TILERAP_PRECISION_TF32 ? 2 : 1;
}

template <int PREC> static __device__ __forceinline__ void tr_frag_pack_a(const double fa[2][4], uint4 v[2])
{
  if (PREC == TILERAP_PRECISION_TF32) {
#pragma unroll
    for (int kh = 0; kh < 2; kh++)
      v[kh] = make_uint4(__float_as_uint((float)fa[0][2 * kh]), __float_as_uint((float)fa[1][2 * kh]),
                         __float_as_uint((float)fa[0][2 * kh + 1]), __float_as_uint((float)fa[1][2 * kh + 1]));
  } else {
    v[0] = make_uint4(tr_pack2<PREC>(fa[0][0], fa[0][1]), tr_pack2<PREC>(fa[1][0], fa[1][1]),
                      tr_pack2<PREC>(fa[0][2], fa[0][3]), tr_pack2<PREC>(fa[1][2], fa[1][3]));
  }
}

template <int PREC> static __device__ __forceinline__ void tr_frag_pack_b(const double fb[4][2], uint4 v[2])
{
  if (PREC == TILERAP_PRECISION_TF32) {
#pragma unroll
    for (int kh = 0; kh < 2; kh++)
      v[kh] = make_uint4(__float_as_uint((float)fb[2 * kh][0]), __float_as_uint((float)fb[2 * kh + 1][0]),
                         __float_as_uint((float)fb[2 * kh][1]), __float_as_uint((float)fb[2 * kh + 1][1]));
  } else {
    v[0] = make_uint4(tr_pack2<PREC>(fb[0][0], fb[1][0]), tr_pack2<PREC>(fb[2][0], fb[3][0]),
                      tr_pack2<PREC>(fb[0][1], fb[1][1]), tr_pack2<PREC>(fb[2][1], fb[3][1]));
  }
}

/* scale exponent of a tile whose operands do not fit the low precision
 * (the pairs that read it are multiplied in fp64) */
#define TR_LP_UNFIT (-0x7fffffff)

/* the low-precision operands of a plan, as the numeric kernel reads them */
typedef struct {
  const uint4 *__restrict__ afrag, *__restrict__ bfrag; /* packed fragments per slot */
  const int32_t *__restrict__ aexp, *__restrict__ bexp; /* scale exponent per slot, or TR_LP_UNFIT */
  unsigned long long *fallbacks;                        /* pairs multiplied in fp64 by this run */
} tr_lp_view;
#endif
