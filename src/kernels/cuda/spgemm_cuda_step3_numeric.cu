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
 * rounding, not bitwise); in chunks with many hits per slot a warp first
 * sums its lanes' products that go to the same slot (tr_run_add).
 * Accumulators keep step 2's choice: tiles with at most dense_threshold
 * entries are accumulated compressed (slot of
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
 * (two m16n8k16 on sm_90 measured 3-13 % slower), fp64 accumulation.
 * Low precisions (opt-in): the run starts with the conversion of the
 * pairs' tiles into packed fragments (spgemm_cuda_lowprec.cu); a pair is
 * then two 16-byte loads per lane (tf32: four), m16n8k16 (fp16, bf16) or
 * 2x m16n8k8 (tf32) with fp32 accumulation, scaled back and summed in
 * fp64; a pair with a tile outside the format's range runs in fp64.
 * The kernel that takes tensor-core pairs holds twice the registers of
 * the hits-only one, hence half its blocks per SM: where such pairs are
 * a small part of a large product the plan keeps its chunks in two lists
 * and each kind runs on its own kernel (power-law graph's coarse product
 * on the H100: 21.2 -> 16.7 ms). */
#include "spgemm_cuda.cuh"
#include "tile_mma_fragments.cuh"

/* The hit's first product goes to the caller (its slot in *slot), the
 * others of its B row straight into the accumulator. */
static __device__ __forceinline__ double tr_apply_rest(double *acc, const tr_hit &e, double x, double b0,
                                                       const double *__restrict__ bval, int *slot)
{
  unsigned bm = e.masks & 0xffffu;
  const unsigned cm = e.masks >> 16;
  int c = __ffs(bm) - 1; /* every hit has a non-empty B row */
  bm &= bm - 1;
  *slot = (int)e.loc + __popc(cm & ((1u << c) - 1u));
  for (uint32_t i = 1; bm; i++) {
    c = __ffs(bm) - 1;
    bm &= bm - 1;
    atomicAdd(&acc[e.loc + __popc(cm & ((1u << c) - 1u))], x * bval[e.b + i]);
  }
  return x * b0;
}

/* every product of the hit straight into the accumulator */
static __device__ __forceinline__ void tr_apply(double *acc, const tr_hit &e, double x, double b0,
                                                const double *__restrict__ bval)
{
  int slot;
  const double v = tr_apply_rest(acc, e, x, b0, bval, &slot);
  atomicAdd(&acc[slot], v);
}

/* Chunks with at least this many hits per accumulator slot sum runs of
 * equal slots in a warp before their atomics (tr_run_add).  Where hits
 * rarely share a slot the scan only costs: with it in every chunk, the
 * fine levels of 2-D grids ran 2-6 % slower; behind this bound they are
 * unchanged and the contended products keep their gain (design.md,
 * "Contended accumulators"). */
#define TR_RUN_HITS_PER_SLOT 8

/* v into acc[slot] (slot < 0: nothing), summed first over each run of
 * consecutive lanes with the same slot, one atomic per run.  A warp's 32
 * consecutive hits are consecutive A entries of a pair, mostly of one
 * row, and where B's rows hold one entry (P's rows of one aggregate, a
 * single coarse column) they meet the same C entry: the shared-memory
 * atomics on that address would serialise. */
static __device__ __forceinline__ void tr_run_add(double *acc, int slot, double v, int lane)
{
  const unsigned full = 0xffffffffu;
  const int prev = __shfl_up_sync(full, slot, 1);
  const unsigned heads = __ballot_sync(full, lane == 0 || prev != slot);
  if (heads != full) { /* warp-uniform: some run is longer than one lane */
    const int head = 31 - __clz(heads & (full >> (31 - lane))); /* this lane's run starts there */
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const double y = __shfl_up_sync(full, v, d);
      if (lane - d >= head) v += y;
    }
    if (lane != 31 && !(heads >> (lane + 1) & 1u)) return; /* not the run's last lane */
  }
  if (slot >= 0) atomicAdd(&acc[slot], v);
}

/* ------------------------------------------------------- tensor cores */
/* cc[(2mi + ni) * 2 + j] holds C(g + 8mi, 8ni + 2t + j) (fragment layout:
 * tile_mma_fragments.cuh) */
static __device__ __forceinline__ void tr_dmma(double &d0, double &d1, double a, double b)
{
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
               : "+d"(d0), "+d"(d1)
               : "d"(a), "d"(b));
}

/* one fp64 pair: cc += A_tile * B_tile as 16 m8n8k4, gathered from the tiles */
static __device__ __forceinline__ void tr_pair_fp64(const tr_dview &A, const tr_dview &B, int32_t a, int32_t b, int g,
                                                    int t, double cc[8])
{
  double fa[2][4], fb[4][2];
  tr_gather_a<TILERAP_PRECISION_FP64>(A, a, g, t, fa);
  tr_gather_b<TILERAP_PRECISION_FP64>(B, b, g, t, fb);
  __syncwarp();
#pragma unroll
  for (int j = 0; j < 4; j++)
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
      for (int ni = 0; ni < 2; ni++) tr_dmma(cc[(2 * mi + ni) * 2], cc[(2 * mi + ni) * 2 + 1], fa[mi][j], fb[j][ni]);
}

/* one low-precision pair from its packed fragments (a lane's vectors,
 * loaded): the 16x16 product
 * with fp32 accumulation, scaled back by 2^e and added to cc in fp64 */
template <int PREC>
static __device__ __forceinline__ void tr_pair_lowprec(const uint4 *fa, const uint4 *fb, int e, double cc[8])
{
  float f[2][4]; /* n half ni: C(g, 8ni+2t+{0,1}), C(g+8, 8ni+2t+{0,1}) */
#pragma unroll
  for (int ni = 0; ni < 2; ni++) f[ni][0] = f[ni][1] = f[ni][2] = f[ni][3] = 0.0f;
  if (PREC == TILERAP_PRECISION_TF32) {
#pragma unroll
    for (int kh = 0; kh < 2; kh++) {
      const uint4 a = fa[kh], b = fb[kh];
      const uint32_t bb[2][2] = {{b.x, b.y}, {b.z, b.w}};
#pragma unroll
      for (int ni = 0; ni < 2; ni++)
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(f[ni][0]), "+f"(f[ni][1]), "+f"(f[ni][2]), "+f"(f[ni][3])
                     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(bb[ni][0]), "r"(bb[ni][1]));
    }
  } else {
    const uint4 a = fa[0], b = fb[0];
    const uint32_t bb[2][2] = {{b.x, b.y}, {b.z, b.w}};
#pragma unroll
    for (int ni = 0; ni < 2; ni++) {
      if (PREC == TILERAP_PRECISION_FP16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(f[ni][0]), "+f"(f[ni][1]), "+f"(f[ni][2]), "+f"(f[ni][3])
                     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(bb[ni][0]), "r"(bb[ni][1]));
      else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(f[ni][0]), "+f"(f[ni][1]), "+f"(f[ni][2]), "+f"(f[ni][3])
                     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(bb[ni][0]), "r"(bb[ni][1]));
    }
  }
  /* 2^e as two factors, each a normal double for |e| < 2044: exact */
  const int e1 = e / 2, e2 = e - e1;
  const double s1 = __longlong_as_double((long long)(1023 + e1) << 52);
  const double s2 = __longlong_as_double((long long)(1023 + e2) << 52);
#pragma unroll
  for (int ni = 0; ni < 2; ni++) {
    cc[ni * 2] += ((double)f[ni][0] * s1) * s2;
    cc[ni * 2 + 1] += ((double)f[ni][1] * s1) * s2;
    cc[(2 + ni) * 2] += ((double)f[ni][2] * s1) * s2;
    cc[(2 + ni) * 2 + 1] += ((double)f[ni][3] * s1) * s2;
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
 * (pairs of a C tile are contiguous: one flush per tile and warp).  A
 * pair's product is short next to the loads that feed it, so the warp
 * reads the records (and scale exponents) of 32 pairs at once, one per
 * lane, and, in low precision, loads the next pair's fragments before it
 * multiplies the current one. */
template <int PREC>
static __device__ __forceinline__ void tr_tc_chunk(double *acc, const tr_chunk &ch, const tr_tc *__restrict__ tcs,
                                                   const tr_dview &A, const tr_dview &B,
                                                   const uint16_t *__restrict__ cmask,
                                                   const uint8_t *__restrict__ crow_ptr, const tr_lp_view &lp)
{
  const int W = TR_NUMERIC_THREADS / 32, w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  const long long n = ch.tc1 - ch.tc0;
  const long long p0 = ch.tc0 + n * w / W, p1 = ch.tc0 + n * (w + 1) / W;
  if (p0 >= p1) return; /* warp-uniform */
  constexpr bool LP = PREC != TILERAP_PRECISION_FP64;
  constexpr int V = tr_frag_vecs<PREC>();
  const unsigned full = 0xffffffffu;
  double cc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t cur_u = -1;
  uint32_t cur_slot = 0;
  for (long long base = p0; base < p1; base += 32) {
    const int nb = (int)(p1 - base < 32 ? p1 - base : 32);
    tr_tc mine = {0, 0, -1, 0, 0, 0};
    int mexp = TR_LP_UNFIT; /* the pair's scale exponent, or TR_LP_UNFIT */
    if (lane < nb) {
      mine = tcs[base + lane];
      if (LP) {
        const int sa = lp.aexp[mine.la], sb = lp.bexp[mine.lb];
        mexp = sa == TR_LP_UNFIT || sb == TR_LP_UNFIT ? TR_LP_UNFIT : -(sa + sb);
      }
    }
    uint4 fa[V], fb[V], na[V], nb4[V];
    auto load = [&](int j, uint4 *xa, uint4 *xb) {
      const int la = __shfl_sync(full, mine.la, j), lb = __shfl_sync(full, mine.lb, j);
      if (__shfl_sync(full, mexp, j) == TR_LP_UNFIT) return;
#pragma unroll
      for (int k = 0; k < V; k++) {
        xa[k] = lp.afrag[((int64_t)la * V + k) * 32 + lane];
        xb[k] = lp.bfrag[((int64_t)lb * V + k) * 32 + lane];
      }
    };
    if (LP) load(0, fa, fb);
    for (int j = 0; j < nb; j++) {
      if (LP && j + 1 < nb) load(j + 1, na, nb4);
      const int32_t u = __shfl_sync(full, mine.u, j);
      const uint32_t slot = __shfl_sync(full, mine.slot, j);
      if (u != cur_u) {
        if (cur_u >= 0) {
          tr_tc e;
          e.u = cur_u; e.slot = cur_slot;
          tr_tc_flush(acc, e, cmask, crow_ptr, g, t, cc);
        }
        cur_u = u;
        cur_slot = slot;
      }
      const int ex = LP ? __shfl_sync(full, mexp, j) : TR_LP_UNFIT;
      if (!LP || ex == TR_LP_UNFIT) { /* fp64; in low precision a tile outside the format's range, counted */
        tr_pair_fp64(A, B, __shfl_sync(full, mine.a, j), __shfl_sync(full, mine.b, j), g, t, cc);
        if (LP && lane == 0) atomicAdd(lp.fallbacks, 1ull);
      } else {
        tr_pair_lowprec<PREC>(fa, fb, ex, cc);
      }
      if (LP) {
#pragma unroll
        for (int k = 0; k < V; k++) { fa[k] = na[k]; fb[k] = nb4[k]; }
      }
    }
  }
  tr_tc e;
  e.u = cur_u; e.slot = cur_slot;
  tr_tc_flush(acc, e, cmask, crow_ptr, g, t, cc);
}

/* PREC < 0: chunks without tensor-core pairs (the kernel stays lean: its
 * occupancy carries the hits); a plan with such pairs runs them with the
 * PREC kernel, registers capped for three blocks per SM, and its other
 * chunks with this one. */
template <int PREC>
static __global__ void __launch_bounds__(TR_NUMERIC_THREADS, PREC < 0 ? 6 : 3)
    k_numeric(const tr_chunk *__restrict__ chunks, const tr_hit *__restrict__ hits, const tr_tc *__restrict__ tcs,
              tr_dview A, tr_dview B, double *__restrict__ cval, const int64_t *__restrict__ ctile_off,
              const uint8_t *__restrict__ cidx, const uint16_t *__restrict__ cmask,
              const uint8_t *__restrict__ crow_ptr, const uint16_t *__restrict__ acc_loc, int dense_threshold,
              tr_lp_view lp)
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
  if (PREC >= 0 && ch.tc1 > ch.tc0) tr_tc_chunk<(PREC < 0 ? 0 : PREC)>(acc, ch, tcs, A, B, cmask, crow_ptr, lp);
  if (ch.hit1 - ch.hit0 >= (int64_t)TR_RUN_HITS_PER_SLOT * nacc) {
    /* many hits per C entry: a warp takes 32 consecutive hits per round,
     * two rounds at once (both load chains in flight); the trip count is
     * the warp's, as tr_run_add needs */
    const int lane = threadIdx.x & 31;
    for (int64_t h = ch.hit0 + threadIdx.x - lane; h < ch.hit1; h += 2 * T) {
      const int64_t h0 = h + lane, h1 = h + T + lane;
      const bool on0 = h0 < ch.hit1, on1 = h1 < ch.hit1;
      tr_hit e0 = {0, 0, 1u, 0}, e1 = {0, 0, 1u, 0};
      if (on0) e0 = hits[h0];
      if (on1) e1 = hits[h1];
      double x0 = 0.0, b0 = 0.0, x1 = 0.0, b1 = 0.0, v0 = 0.0, v1 = 0.0;
      if (on0) { x0 = aval[e0.a]; b0 = bval[e0.b]; }
      if (on1) { x1 = aval[e1.a]; b1 = bval[e1.b]; }
      int s0 = -1, s1 = -1;
      if (on0) v0 = tr_apply_rest(acc, e0, x0, b0, bval, &s0);
      if (on1) v1 = tr_apply_rest(acc, e1, x1, b1, bval, &s1);
      tr_run_add(acc, s0, v0, lane);
      tr_run_add(acc, s1, v1, lane);
    }
  } else { /* two hits per thread and round: both load chains in flight together */
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
  const int prec = P->ntc > 0 ? P->precision : -1;
  if (prec > 0) { /* the operands' fragments for this run's values */
    const int err = tr_cuda_lowprec_convert(P, A, B);
    if (err) return err;
  }
  const tr_lp_view lp = {(const uint4 *)P->lp.afrag, (const uint4 *)P->lp.bfrag, P->lp.aexp, P->lp.bexp,
                         P->lp.fallbacks};
  /* with tensor-core pairs: their chunks on the tensor-core kernel, the
   * others on the hits-only kernel (the plan's two lists) */
  const int split = prec >= 0 && P->chunks_tc;
  const tr_chunk *tc_chunks = split ? P->chunks_tc : P->chunks;
  const unsigned ntb = split ? (unsigned)(P->ntc < P->nchunks ? P->ntc : P->nchunks) : nb;
#define TR_LAUNCH(PR, CH, GRID)                                                                                     \
  k_numeric<PR><<<GRID, TR_NUMERIC_THREADS, 0, P->stream>>>(CH, P->hits, P->tcs, tr_view(A), tr_view(B), C->val,    \
                                                            C->tile_off, C->idx, C->row_mask, C->row_ptr,          \
                                                            P->acc_loc, P->dense_threshold, lp)
  switch (prec) {
  case TILERAP_PRECISION_TF32: TR_LAUNCH(TILERAP_PRECISION_TF32, tc_chunks, ntb); break;
  case TILERAP_PRECISION_BF16: TR_LAUNCH(TILERAP_PRECISION_BF16, tc_chunks, ntb); break;
  case TILERAP_PRECISION_FP16: TR_LAUNCH(TILERAP_PRECISION_FP16, tc_chunks, ntb); break;
  case TILERAP_PRECISION_FP64: TR_LAUNCH(TILERAP_PRECISION_FP64, tc_chunks, ntb); break;
  default: TR_LAUNCH(-1, P->chunks, nb); break;
  }
  if (split) TR_LAUNCH(-1, P->chunks_hits, nb);
#undef TR_LAUNCH
  return tr_cuda_check_launch("numeric");
}
