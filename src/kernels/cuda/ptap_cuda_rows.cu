/* Galerkin product by tile rows (CUDA): Y = X * Z for a Y whose structure
 * a plan already made, the sums of each tile row of Y kept in shared
 * memory and written out once.  Both halves of a large Galerkin product
 * use it: AP = A * P (X = A) and C = P^T (AP) (X = P^T's structure, its
 * values read from P through the transpose's permutation).
 *
 * The scatters (ptap_cuda_scatter*.cu) add every multiply-add into Y with
 * a global fp64 atomic; at level 0 of the 3D hierarchies those atomics
 * were about 40 % of a first-time product's kernel time (5-6.5e10 per
 * second on the H100).  Here a group of lanes owns tile row I of Y: its
 * items are the (X entry (r, k) of tile (I, K), Z tile (K, J)) pairs of
 * the row, and x * Z(K, J)(k, :) goes into Y(I, J) row r with
 * shared-memory atomics.  The row's values are contiguous in Y (tiles of
 * a tile row are), so the row is zeroed, summed and written with no
 * global atomic.  A row with more entries than the shared accumulator
 * holds is summed in Y itself with global atomics (zeroed by its group
 * first).  Groups: a warp per tile row for many short rows (AP), a block
 * of 8 warps per row for few long ones (C: at level 0 of p3d7 101^3 a
 * tile row of P^T has 84 tiles and about 7000 items).
 *
 * A product of few output tile rows leaves most of the GPU idle here (a
 * coarse C of 108 tile rows: 99 us against the scatter's 29 us on the
 * H100), so the Galerkin plan takes this kernel for large products only
 * (ptap_plan.c).  Sums are exact up to rounding order, as with the
 * scatters and the hit kernel. */
#include "spgemm_cuda.cuh"
#include "tuning.h"

#define TR_ROWS_THREADS 256

template <int G> static __device__ __forceinline__ void tr_group_sync()
{
  if (G == 1) __syncwarp();
  else __syncthreads();
}

/* Windows of X tiles held in registers.  Each warp of a group loads a
 * window of up to 32 X tiles of the row (lane t: tile w + G*t, so the
 * warps of a block share a row's tiles evenly), drops those without
 * items, and scans their item counts in registers.  A round covers 32
 * consecutive items: the tiles starting inside it are one OR-reduction
 * of a bit per tile, a lane's tile is a popcount, and its data comes by
 * shuffles (no search).  A tile's entry index is rel / ne by a multiply
 * where the window holds fewer than 2^24 items (ne <= 256: exact), by a
 * division otherwise (a tile row of Z of over 65536 tiles).  Y's tile of
 * column J is a shared table indexed by J - J_min where the row's
 * columns span fewer than TR_ROWS_SPAN tiles (AMG rows do), a binary
 * search otherwise. */
#define TR_ROWS_SPAN 256

template <int ACC, int YC> struct tr_win_smem {
  double acc[ACC];
  int32_t ybase[YC];               /* first entry of Y's local tile, relative to the row's */
  uint8_t slot[TR_ROWS_SPAN];      /* local tile of column J_min + i, 0xff: none */
};

static __device__ __forceinline__ unsigned tr_warp_or(unsigned v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_or_sync(0xffffffffu, v);
#else
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v |= __shfl_xor_sync(0xffffffffu, v, o);
  return v;
#endif
}

template <int G, int ACC, int YC>
static __global__ void __launch_bounds__(TR_ROWS_THREADS, 5)
    k_rows_window(int32_t rows, tr_dview X, const double *__restrict__ xval, const int64_t *__restrict__ xperm,
                  tr_dview Z, tr_dview Y, double *__restrict__ yval)
{
  static_assert(YC < 255, "local tiles fit the slot table's bytes");
  constexpr int GT = 32 * G, GROUPS = TR_ROWS_THREADS / GT;
  typedef tr_win_smem<ACC, YC> S;
  __shared__ S sm[GROUPS];
  S &s = sm[threadIdx.x / GT];
  const int gl = threadIdx.x % GT, lane = threadIdx.x & 31, w = gl >> 5;
  const int32_t I = (int32_t)(blockIdx.x * GROUPS + threadIdx.x / GT);
  if (I >= rows) return; /* group-uniform */
  const int64_t yt0 = Y.tile_ptr[I], yt1 = Y.tile_ptr[I + 1];
  if (yt0 == yt1) return; /* an empty row of Y: every product of the row is structurally zero */
  const int64_t yoff = Y.tile_off[yt0];
  const int64_t ny = Y.tile_off[yt1] - yoff;
  const int nyt = (int)(yt1 - yt0);
  const int32_t jmin = Y.tile_col[yt0];
  /* the table serves rows of at most YC tiles spanning fewer than TR_ROWS_SPAN columns */
  const bool table = nyt <= YC && Y.tile_col[yt1 - 1] - jmin < TR_ROWS_SPAN;
  const bool in_smem = ny <= ACC; /* group-uniform */
  double *out = yval + yoff;
  if (table) {
    for (int i = gl; i < TR_ROWS_SPAN; i += GT) s.slot[i] = 0xff;
    tr_group_sync<G>();
    for (int j = gl; j < nyt; j += GT) {
      s.slot[Y.tile_col[yt0 + j] - jmin] = (uint8_t)j;
      s.ybase[j] = (int32_t)(Y.tile_off[yt0 + j] - yoff);
    }
  }
  if (in_smem)
    for (int i = gl; i < ny; i += GT) s.acc[i] = 0.0;
  else
    for (int64_t i = gl; i < ny; i += GT) out[i] = 0.0;
  tr_group_sync<G>();
  const int64_t xt0 = X.tile_ptr[I], xt1 = X.tile_ptr[I + 1];
  for (int64_t wb = xt0 + w; wb < xt1; wb += 32 * G) { /* this warp's window: tiles wb + G*t */
    const int64_t x = wb + (int64_t)G * lane;
    int cnt = 0, ne = 0;
    int64_t xo = 0, q0 = 0;
    if (x < xt1) {
      const int32_t K = X.tile_col[x];
      q0 = Z.tile_ptr[K];
      xo = X.tile_off[x];
      ne = (int)(X.tile_off[x + 1] - xo);
      cnt = ne * (int)(Z.tile_ptr[K + 1] - q0); /* < 2^26: the host checks Z's tile columns */
    }
    /* compact the window to tiles with items, then their starts */
    const unsigned has = __ballot_sync(0xffffffffu, cnt > 0);
    const int nt = __popc(has);
    const int src = __fns(has, 0, lane + 1); /* lane's tile after compaction (lane < nt) */
    cnt = __shfl_sync(0xffffffffu, cnt, src & 31);
    ne = __shfl_sync(0xffffffffu, ne, src & 31);
    xo = __shfl_sync(0xffffffffu, xo, src & 31);
    q0 = __shfl_sync(0xffffffffu, q0, src & 31);
    if (lane >= nt) cnt = 0;
    int end = cnt; /* inclusive scan */
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, end, o);
      if (lane >= o) end += v;
    }
    const int start = end - cnt;
    const int total = __shfl_sync(0xffffffffu, end, 31);
    const unsigned magic = ne > 1 ? (unsigned)(0xffffffffu / (unsigned)ne) + 1u : 0u;
    int cur = 0; /* tile holding the round's first item */
    for (int base = 0; base < total; base += 32) {
      /* tiles starting at base+1 .. base+32: bit start-base-1 */
      const int d = start - base;
      const unsigned m = tr_warp_or(lane < nt && d >= 1 && d <= 32 ? 1u << (d - 1) : 0u);
      const int t = cur + __popc(m & ((1u << lane) - 1u));
      cur += __popc(m);
      const int tst = __shfl_sync(0xffffffffu, start, t & 31), tne = __shfl_sync(0xffffffffu, ne, t & 31);
      const unsigned tmg = __shfl_sync(0xffffffffu, magic, t & 31);
      const int64_t txo = __shfl_sync(0xffffffffu, xo, t & 31), tq0 = __shfl_sync(0xffffffffu, q0, t & 31);
      const int it = base + lane;
      if (it >= total) continue;
      const unsigned rel = (unsigned)(it - tst);
      /* the multiply is exact while rel * ne < 2^32 (window-uniform branch) */
      const unsigned pl = tne == 1 ? rel : total < (1 << 24) ? __umulhi(rel, tmg) : rel / (unsigned)tne;
      const int64_t q = tq0 + pl, xe = txo + (rel - pl * (unsigned)tne);
      const unsigned id = X.idx[xe];
      const int r = (int)(id >> 4), k = (int)(id & 15u);
      unsigned zm = Z.row_mask[16 * q + k];
      if (!zm) continue;
      const int32_t J = Z.tile_col[q];
      int64_t yt, ybase;
      if (table) {
        const unsigned dj = (unsigned)(J - jmin);
        const int a = dj < TR_ROWS_SPAN ? s.slot[dj] : 0xff;
        if (a == 0xff) continue; /* never: Y holds every structural product */
        yt = yt0 + a;
        ybase = s.ybase[a];
      } else {
        yt = tr_lower_bound(Y.tile_col, yt0, yt1, J);
        if (yt >= yt1 || Y.tile_col[yt] != J) continue;
        ybase = Y.tile_off[yt] - yoff;
      }
      const double xv = xperm ? xval[xperm[xe]] : xval[xe];
      const double *zv = Z.val + Z.tile_off[q] + Z.row_ptr[16 * q + k];
      const unsigned ym = Y.row_mask[16 * yt + r];
      const int64_t b = ybase + Y.row_ptr[16 * yt + r];
      if (in_smem) {
        for (int j = 0; zm; j++) {
          const int c = __ffs(zm) - 1;
          zm &= zm - 1;
          atomicAdd(&s.acc[(int)b + __popc(ym & ((1u << c) - 1u))], xv * zv[j]);
        }
      } else {
        for (int j = 0; zm; j++) {
          const int c = __ffs(zm) - 1;
          zm &= zm - 1;
          atomicAdd(out + b + __popc(ym & ((1u << c) - 1u)), xv * zv[j]);
        }
      }
    }
  }
  tr_group_sync<G>();
  if (in_smem)
    for (int i = gl; i < ny; i += GT) out[i] = s.acc[i];
}

/* a warp per row: AP's rows hold up to ~350 entries on the model levels;
 * a block per row: C's rows up to ~430 entries, P^T's rows ~100 tiles */
#define TR_ROWS_WARP k_rows_window<1, 384, 32>
#define TR_ROWS_BLOCK k_rows_window<8, 1024, 128>

/* Where the row product beats the scatter, besides size (H100, ncu with
 * warm caches, BENCHMARKS.md section 1): a warp per row up to about 1000
 * items a row (p3d7 101^3 level-0 AP, 355 a row: 292 against 410 us;
 * 200^3 level-1 AP, 1260 a row: 360 against 334 us), a block per row
 * with at least 8 rows per SM (200^3 level-1 C, 761 rows: 235 against
 * 171 us). */
#define TR_ROWS_WARP_MAX_ITEMS 1024.0
#define TR_ROWS_BLOCK_MIN_ROWS_PER_SM 8

extern "C" int tr_cuda_rows_supported(const tilerap_tile_matrix *Z)
{
  /* a window's items (32 tiles * 256 entries * Z tiles of a row) stay below 2^31 */
  return Z->tile_cols < (1 << 18);
}

/* items of a mean row: X's entries times Z's tiles per tile row */
static double tr_rows_items_per_row(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Z)
{
  if (X->tile_rows <= 0 || Z->tile_rows <= 0) return 0.0;
  return (double)X->nnz / X->tile_rows * ((double)Z->num_tiles / Z->tile_rows);
}

/* Items of every tile row of X (a warp per row): their total and the
 * longest row's, added into tot[0] and maxed into tot[1] */
static __global__ void k_row_items(int32_t rows, tr_dview X, tr_dview Z, unsigned long long *tot)
{
  const int lane = threadIdx.x & 31;
  const int64_t I = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  if (I >= rows) return; /* warp-uniform */
  unsigned long long items = 0;
  for (int64_t x = X.tile_ptr[I] + lane, x1 = X.tile_ptr[I + 1]; x < x1; x += 32) {
    const int32_t K = X.tile_col[x];
    items += (unsigned long long)(X.tile_off[x + 1] - X.tile_off[x]) *
             (unsigned long long)(Z.tile_ptr[K + 1] - Z.tile_ptr[K]);
  }
  for (int o = 16; o; o >>= 1) items += __shfl_xor_sync(0xffffffffu, items, o);
  if (lane == 0 && items) {
    atomicAdd(&tot[0], items);
    atomicMax(&tot[1], items);
  }
}

/* A group owns a whole tile row, so a row far longer than the rest (a
 * dense row of A: hundreds of thousands of items) runs alone on one group
 * long after the others finish: the rows kernel only where the longest
 * row's rounds stay within about twice the kernel's mean (about 40 warps
 * in flight per SM), the scatter otherwise */
#define TR_ROWS_WARPS_PER_SM 40.0
extern "C" int tr_cuda_rows_choose(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Z, double min_items,
                                   void *stream, int *group, int *use)
{
  const double per_row = tr_rows_items_per_row(X, Z);
  const int nsm = tr_cuda_sm_count();
  /* a warp per row leaves the SMs short of warps below 32 rows per SM,
   * and a long row serialises its warp */
  *group = X->tile_rows < 32 * nsm || per_row > 2048.0 ? 8 : 1;
  const int forced = tr_knob_int(TR_KNOB_ROWS_GROUP); /* auto|1|8 (tests) */
  if (forced) *group = forced == 1 ? 1 : 8;
  *use = 0;
  if (!tr_cuda_rows_supported(Z)) return TILERAP_SUCCESS;
  if (min_items < 0) { *use = 1; return TILERAP_SUCCESS; } /* forced */
  if (per_row * X->tile_rows < min_items) return TILERAP_SUCCESS;
  if (!(*group == 8 ? X->tile_rows >= TR_ROWS_BLOCK_MIN_ROWS_PER_SM * nsm : per_row <= TR_ROWS_WARP_MAX_ITEMS))
    return TILERAP_SUCCESS;
  /* the rows as they are, not their mean */
  const cudaStream_t s = (cudaStream_t)stream;
  unsigned long long *d = NULL, h[2];
  TR_RET(tr_dalloc((void **)&d, 2 * sizeof *d, s, "row product sizes"));
  cudaError_t ce = cudaMemsetAsync(d, 0, 2 * sizeof *d, s);
  if (ce == cudaSuccess) {
    k_row_items<<<tr_blocks((int64_t)X->tile_rows * 32, 256), 256, 0, s>>>(X->tile_rows, tr_view(X), tr_view(Z), d);
    ce = cudaGetLastError();
  }
  int err = ce != cudaSuccess ? tr_cuda_error(ce, "row product sizes") : tr_readback(h, d, sizeof h, s, "row product sizes");
  tr_dfree(d, s);
  if (err) return err;
  *use = (double)h[1] / *group <= 2.0 * (double)h[0] / (TR_ROWS_WARPS_PER_SM * nsm);
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_rows_product(const tilerap_tile_matrix *X, const double *xval, const int64_t *xperm,
                                    const tilerap_tile_matrix *Z, tilerap_tile_matrix *Y, int group, void *stream)
{
  if (X->memtype != TILERAP_MEM_DEVICE || Z->memtype != TILERAP_MEM_DEVICE || Y->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "CUDA row product: X, Z and Y must be device matrices");
  if (X->tile_rows != Y->tile_rows || X->n != Z->m || Y->n != Z->n || X->m != Y->m)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "CUDA row product: X (%d x %d), Z (%d x %d) and Y (%d x %d) do not match",
                             X->m, X->n, Z->m, Z->n, Y->m, Y->n);
  if (group != 1 && group != 8) return tilerap_set_error(TILERAP_ERR_INVALID, "CUDA row product: group %d (1 or 8)", group);
  if (Y->nnz == 0) return TILERAP_SUCCESS;
  if (!tr_cuda_rows_supported(Z))
    return tilerap_set_error(TILERAP_ERR_INVALID, "CUDA row product: Z has %d tile columns (at most 2^18 - 1)", Z->tile_cols);
  cudaStream_t s = (cudaStream_t)stream;
  const int nonblocking = tr_stream_nonblocking(s);
  if (nonblocking) TR_RET(tr_order_after_legacy(s));
  tr_dview xv = tr_view(X);
  xv.val = NULL; /* the values come as xval (through xperm) */
  if (group == 8)
    TR_ROWS_BLOCK<<<(unsigned)Y->tile_rows, TR_ROWS_THREADS, 0, s>>>(Y->tile_rows, xv, xval, xperm, tr_view(Z),
                                                                     tr_view(Y), Y->val);
  else
    TR_ROWS_WARP<<<tr_blocks(Y->tile_rows, TR_ROWS_THREADS / 32), TR_ROWS_THREADS, 0, s>>>(
        Y->tile_rows, xv, xval, xperm, tr_view(Z), tr_view(Y), Y->val);
  TR_RET(tr_cuda_check_launch("row product"));
  return nonblocking ? tr_order_legacy_after(s) : TILERAP_SUCCESS;
}
