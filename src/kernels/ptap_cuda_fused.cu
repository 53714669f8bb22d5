/* Galerkin product fused (CUDA): C = P^T A P in one kernel, AP never
 * stored.  One block per tile row K of A:
 *   1. AP(K, :) = A(K, :) P in shared memory, compressed in AP's own
 *      order (AP's structure comes from a structure-only plan): for
 *      every entry (r, k) of an A tile (K, L) and every P tile (L, J)
 *      with row k stored, x * P(L, J)(k, :) is added into AP(K, J) row r;
 *   2. C(I, J) += P(K, I)^T AP(K, J) for every P tile (K, I) and AP tile
 *      (K, J), summed first in shared memory over the 16 rows of the tile
 *      row (in C's own compressed layout, one slot per stored entry of
 *      the C tiles the row reaches), then added into C with fp64 global
 *      atomics, one per non-zero partial sum.  C is zeroed before.
 * No hit records and no P^T: a numeric run reads A, P, C's and AP's
 * structure and writes C.  The two-product form streams two hit lists
 * (16 bytes per (entry, row) pair), writes AP and reads it back; the
 * unfused scatter (ptap_cuda_scatter.cu) makes one global atomic per
 * multiply-add, which the shared pre-sum cuts by the rows it merges.
 * Sums are exact up to rounding order (shared and global atomics): the
 * results match the CPU engine to rounding, not bitwise.
 * A tile row whose AP row or C partial sums do not fit the block's
 * shared memory takes the same steps through global memory (AP's own
 * value array, atomics straight into C): slower, never wrong. */
#include "spgemm_cuda.cuh"
#include <stdlib.h>

#define TR_FUSED_THREADS 128
/* what one block holds of its tile row in shared memory (about 28 KB, 8
 * blocks per multiprocessor); a larger row takes the general path */
#define TR_FUSED_AP_CAP 768  /* AP values of the row */
#define TR_FUSED_C_CAP 768   /* C partial sums of the row */
#define TR_FUSED_AP_TILES 64 /* AP tiles of the row (column, offset, masks, row pointers) */
#define TR_FUSED_PAIRS 256   /* (P tile, AP tile) pairs of the row */
#define TR_FUSED_A_TILES 64  /* A tiles of the row */
#define TR_FUSED_P_TILES 32  /* P tiles of the row */
#define TR_FUSED_Q 256       /* (A tile, P tile of its row) pairs */
#define TR_FUSED_CT 256      /* C tiles of the rows of C the P tiles reach (one past each row too) */

typedef struct {
  double acc_ap[TR_FUSED_AP_CAP];
  double acc_c[TR_FUSED_C_CAP];
  int64_t pr_coff[TR_FUSED_PAIRS];     /* value offset of each pair's C tile (general path: its index) */
  int64_t a_off[TR_FUSED_A_TILES];     /* value offset of each A tile */
  int64_t q0[TR_FUSED_A_TILES];        /* first P tile of the A tile's column (P's tile row L) */
  int64_t qoff[TR_FUSED_Q];            /* value offset of each (A tile, P tile) pair's P tile */
  int64_t poff[TR_FUSED_P_TILES + 1];  /* entry offsets of P's tiles in row K (and the end) */
  int64_t cp0[TR_FUSED_P_TILES];       /* first tile of C's row I of each P tile (K, I) */
  int64_t coff[TR_FUSED_CT];           /* value offsets of the staged C tiles */
  int32_t ccol[TR_FUSED_CT];           /* their columns (INT32_MAX one past a row's last) */
  int32_t ap_col[TR_FUSED_AP_TILES], ap_off[TR_FUSED_AP_TILES];
  uint16_t ap_mask[16 * TR_FUSED_AP_TILES];
  uint8_t ap_rp[16 * TR_FUSED_AP_TILES];
  int32_t pr_ct[TR_FUSED_PAIRS];       /* staged C tile of each pair, -1: none */
  int32_t pr_base[TR_FUSED_PAIRS + 1]; /* partial-sum slots of each pair */
  int32_t qpre[TR_FUSED_A_TILES + 1];  /* prefix of the A tiles' P tile counts */
  int32_t ipre[TR_FUSED_A_TILES + 1];  /* prefix of the A tiles' items (entries x P tiles) */
  int32_t a_ne[TR_FUSED_A_TILES], a_nq[TR_FUSED_A_TILES];
  int32_t cn[TR_FUSED_P_TILES], cpre[TR_FUSED_P_TILES + 1];
  int16_t qtl[TR_FUSED_Q];             /* AP tile (local) of each (A tile, P tile) pair, -1: none */
  int32_t wsum[TR_FUSED_THREADS / 32];
} tr_fused_smem;

/* In-place exclusive prefix of x[0, n) for n <= 2 * TR_FUSED_THREADS,
 * x[n] = the total; the whole block calls it (synchronises). */
static __device__ void tr_fused_scan(int32_t *x, int n, int32_t *wsum)
{
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int i0 = 2 * tid;
  const int32_t v0 = i0 < n ? x[i0] : 0, v1 = i0 + 1 < n ? x[i0 + 1] : 0;
  int32_t inc = v0 + v1;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int32_t y = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += y;
  }
  if (lane == 31) wsum[warp] = inc;
  __syncthreads(); /* every read of x above is done, the warp totals are in */
  int32_t before = 0;
  for (int w = 0; w < warp; w++) before += wsum[w];
  const int32_t ex = before + inc - v0 - v1;
  if (i0 < n) x[i0] = ex;
  if (i0 + 1 < n) x[i0 + 1] = ex + v0;
  if (tid == TR_FUSED_THREADS - 1) {
    int32_t tot = 0;
    for (int w = 0; w < TR_FUSED_THREADS / 32; w++) tot += wsum[w];
    x[n] = tot;
  }
  __syncthreads();
}

/* last index j in [0, n) with x[j] <= v (x ascending, x[0] <= v) */
template <typename T> static __device__ __forceinline__ int tr_last_le(const T *x, int n, int64_t v)
{
  int lo = 0, hi = n;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if ((int64_t)x[mid] <= v) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* AP tile column J among the row's staged columns [0, n): local index or -1 */
static __device__ __forceinline__ int tr_local_tile(const int32_t *cols, int n, int32_t J)
{
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (cols[mid] < J) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && cols[lo] == J ? lo : -1;
}

/* local index of AP tile (K, J) in the row (t0 its first tile), -1 if AP has none */
static __device__ __forceinline__ int tr_ap_tile(const tr_dview &AP, const int32_t *ap_col, bool staged, int nt,
                                                 int32_t K, int64_t t0, int32_t J)
{
  if (staged) return tr_local_tile(ap_col, nt, J);
  const int64_t g = tr_find_ctile(AP.tile_ptr, AP.tile_col, K, J);
  return g < 0 ? -1 : (int)(g - t0);
}

/* The staged path of one tile row K: every index the sums need is found
 * once per block in shared memory (the row's A tiles and the P tiles of
 * their rows, AP's tiles, P's tiles of row K, the rows of C they reach),
 * so that each multiply-add waits on two global loads at most, and the
 * items of each part are spread over the whole block.  Returns false
 * (block-uniform, nothing written to C) when the row does not fit.
 * c_global: partial sums straight into C (TILERAP_FUSED_GLOBAL=2, tests). */
static __device__ bool tr_fused_row_staged(tr_fused_smem &sm, int64_t a0, int64_t a1, int64_t p0, int64_t p1,
                                           int64_t t0, int64_t t1, const tr_dview &A, const tr_dview &P,
                                           const tr_dview &AP, const tr_dview &C, double *__restrict__ cval,
                                           bool c_global)
{
  const int tid = threadIdx.x, T = TR_FUSED_THREADS;
  const int na = (int)(a1 - a0), nt = (int)(t1 - t0), np = (int)(p1 - p0);
  const int64_t apbase = AP.tile_off[t0];
  const int64_t apn = AP.tile_off[t1] - apbase;
  if (na > TR_FUSED_A_TILES || nt > TR_FUSED_AP_TILES || np > TR_FUSED_P_TILES || apn > TR_FUSED_AP_CAP ||
      np * nt > TR_FUSED_PAIRS)
    return false;
  /* the row's tiles: one level of loads each (two for the P and C rows) */
  for (int j = tid; j < na; j += T) {
    const int64_t a = a0 + j;
    const int32_t L = A.tile_col[a];
    const int64_t ao = A.tile_off[a];
    const int ne = (int)(A.tile_off[a + 1] - ao);
    const int64_t q0 = P.tile_ptr[L];
    const int nq = (int)(P.tile_ptr[L + 1] - q0);
    sm.a_off[j] = ao;
    sm.a_ne[j] = ne;
    sm.q0[j] = q0;
    sm.a_nq[j] = nq;
    sm.qpre[j] = nq;
    sm.ipre[j] = ne * nq;
  }
  for (int x = tid; x < 16 * nt; x += T) {
    sm.ap_mask[x] = AP.row_mask[16 * t0 + x];
    sm.ap_rp[x] = AP.row_ptr[16 * t0 + x];
  }
  for (int j = tid; j < nt; j += T) {
    sm.ap_col[j] = AP.tile_col[t0 + j];
    sm.ap_off[j] = (int32_t)(AP.tile_off[t0 + j] - apbase);
  }
  for (int j = tid; j < np; j += T) {
    const int64_t p = p0 + j;
    sm.poff[j] = P.tile_off[p];
    if (j == np - 1) sm.poff[np] = P.tile_off[p1];
    const int32_t I = P.tile_col[p];
    const int64_t c0 = C.tile_ptr[I];
    sm.cp0[j] = c0;
    sm.cn[j] = (int)(C.tile_ptr[I + 1] - c0);
    sm.cpre[j] = sm.cn[j] + 1; /* one past the row's last tile: its end offset */
  }
  for (int i = tid; i < apn; i += T) sm.acc_ap[i] = 0.0;
  __syncthreads();
  tr_fused_scan(sm.qpre, na, sm.wsum);
  tr_fused_scan(sm.ipre, na, sm.wsum);
  tr_fused_scan(sm.cpre, np, sm.wsum);
  const int nq_all = sm.qpre[na], nc_all = sm.cpre[np];
  if (nq_all > TR_FUSED_Q || nc_all > TR_FUSED_CT) return false;
  for (int x = tid; x < nq_all; x += T) {
    const int j = tr_last_le(sm.qpre, na, x);
    const int64_t q = sm.q0[j] + (x - sm.qpre[j]);
    sm.qtl[x] = (int16_t)tr_local_tile(sm.ap_col, nt, P.tile_col[q]);
    sm.qoff[x] = P.tile_off[q];
  }
  for (int x = tid; x < nc_all; x += T) {
    const int j = tr_last_le(sm.cpre, np, x);
    const int l = x - sm.cpre[j];
    const int64_t g = sm.cp0[j] + l;
    sm.coff[x] = C.tile_off[g];
    sm.ccol[x] = l < sm.cn[j] ? C.tile_col[g] : INT32_MAX;
  }
  __syncthreads();

  /* 1. AP(K, :): items (A tile j, P tile pl of its row, entry e) */
  const int ni = sm.ipre[na];
  for (int it = tid; it < ni; it += T) {
    const int j = tr_last_le(sm.ipre, na, it);
    const int l = it - sm.ipre[j], ne = sm.a_ne[j];
    const int pl = l / ne, e = l - pl * ne;
    const int x = sm.qpre[j] + pl;
    const int tl = sm.qtl[x];
    if (tl < 0) continue; /* no AP tile: the pair has no structural product */
    const int64_t q = sm.q0[j] + pl;
    const int64_t ae = sm.a_off[j] + e;
    const unsigned id = A.idx[ae];
    const int r = (int)(id >> 4), k = (int)(id & 15u);
    unsigned pm = P.row_mask[16 * q + k];
    if (!pm) continue;
    const double xv = A.val[ae];
    const double *pv = P.val + sm.qoff[x] + P.row_ptr[16 * q + k];
    const unsigned am = sm.ap_mask[16 * tl + r];
    double *out = sm.acc_ap + sm.ap_off[tl] + sm.ap_rp[16 * tl + r];
    for (int jj = 0; pm; jj++) {
      const int c = __ffs(pm) - 1;
      pm &= pm - 1;
      atomicAdd(out + __popc(am & ((1u << c) - 1u)), xv * pv[jj]);
    }
  }

  /* 2. the pairs (P tile pl, AP tile tl): their C tiles among the staged rows */
  const int npairs = np * nt;
  for (int x = tid; x < npairs; x += T) {
    const int pl = x / nt, tl = x - (x / nt) * nt;
    const int lo = sm.cpre[pl], n = sm.cn[pl];
    const int y = lo + tr_local_tile(sm.ccol + lo, n, sm.ap_col[tl]);
    const bool found = y >= lo;
    sm.pr_ct[x] = found ? y : -1;
    sm.pr_coff[x] = found ? sm.coff[y] : 0;
    sm.pr_base[x] = found ? (int32_t)(sm.coff[y + 1] - sm.coff[y]) : 0;
  }
  __syncthreads(); /* AP's row complete, pair counts in */
  tr_fused_scan(sm.pr_base, npairs, sm.wsum);
  const int nslots = sm.pr_base[npairs];
  const bool c_shared = !c_global && nslots <= TR_FUSED_C_CAP;
  const int64_t e0 = sm.poff[0], ne2 = sm.poff[np] - e0;
  if (ne2 * nt > 0x7fffffff) return false;
  if (c_shared) {
    for (int i = tid; i < nslots; i += T) sm.acc_c[i] = 0.0;
    __syncthreads();
  }
  const int items = (int)(ne2 * nt);
  for (int it = tid; it < items; it += T) {
    const int e = (int)((unsigned)it / (unsigned)nt), tl = it - e * nt;
    const int64_t qe = e0 + e;
    const unsigned id = P.idx[qe];
    const int r = (int)(id >> 4), i = (int)(id & 15u);
    unsigned am = sm.ap_mask[16 * tl + r];
    if (!am) continue;
    const int pl = tr_last_le(sm.poff, np, qe);
    const int pr = pl * nt + tl;
    const int y = sm.pr_ct[pr];
    if (y < 0) continue; /* only with am == 0: C holds every structural product */
    const int64_t ct = sm.cp0[pl] + (y - sm.cpre[pl]);
    const double pv = P.val[qe];
    const unsigned cm = C.row_mask[16 * ct + i];
    const int crp = C.row_ptr[16 * ct + i];
    const double *apv = sm.acc_ap + sm.ap_off[tl] + sm.ap_rp[16 * tl + r];
    double *out = c_shared ? sm.acc_c + sm.pr_base[pr] + crp : cval + sm.pr_coff[pr] + crp;
    for (int jj = 0; am; jj++) {
      const int c = __ffs(am) - 1;
      am &= am - 1;
      atomicAdd(out + __popc(cm & ((1u << c) - 1u)), pv * apv[jj]);
    }
  }
  if (!c_shared) return true;
  __syncthreads();
  for (int s = tid; s < nslots; s += T) {
    const double v = sm.acc_c[s];
    if (v == 0.0) continue; /* untouched (or cancelled to zero: nothing to add) */
    const int pr = tr_last_le(sm.pr_base, npairs, s);
    atomicAdd(cval + sm.pr_coff[pr] + (s - sm.pr_base[pr]), v);
  }
  return true;
}

/* The general path of one tile row K (any size; rows too large for the
 * staged path, or all rows with TILERAP_FUSED_GLOBAL=1): the AP tiles'
 * columns in shared memory where they fit, AP's row in shared memory or
 * in AP's own value array, C's partial sums in shared memory or straight
 * into C. */
static __device__ void tr_fused_row_general(tr_fused_smem &sm, int32_t K, int64_t a0, int64_t a1, int64_t p0,
                                            int64_t p1, int64_t t0, int64_t t1, const tr_dview &A, const tr_dview &P,
                                            const tr_dview &AP, double *__restrict__ apval, const tr_dview &C,
                                            double *__restrict__ cval, bool global_only)
{
  double *acc_ap = sm.acc_ap, *acc_c = sm.acc_c;
  int32_t *ap_col = sm.ap_col, *ap_off = sm.ap_off, *pr_base = sm.pr_base;
  int64_t *pr_ct = sm.pr_coff; /* here: the C tile of each pair */
  const int64_t *ctile_ptr = C.tile_ptr, *ctile_off = C.tile_off;
  const int32_t *ctile_col = C.tile_col;
  const uint16_t *cmask = C.row_mask;
  const uint8_t *crow_ptr = C.row_ptr;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, W = TR_FUSED_THREADS / 32;
  const int nt = (int)(t1 - t0), np = (int)(p1 - p0);
  const int64_t apbase = AP.tile_off[t0];
  const int64_t apn = AP.tile_off[t1] - apbase;
  const bool staged = !global_only && nt <= TR_FUSED_AP_TILES;
  const bool ap_shared = staged && apn <= TR_FUSED_AP_CAP;
  double *acc = ap_shared ? acc_ap : apval + apbase;
  if (staged)
    for (int i = tid; i < nt; i += TR_FUSED_THREADS) {
      ap_col[i] = AP.tile_col[t0 + i];
      ap_off[i] = (int32_t)(AP.tile_off[t0 + i] - apbase);
    }
  for (int64_t i = tid; i < apn; i += TR_FUSED_THREADS) acc[i] = 0.0;
  __syncthreads();

  /* 1. AP(K, :): a warp per A tile (K, L); its lanes take the (P tile of
   * row L, A entry) items.  The AP tile of each P tile is found once per
   * A tile (lane j for P tile j of the row). */
  for (int64_t a = a0 + warp; a < a1; a += W) {
    const int32_t L = A.tile_col[a];
    const int64_t q0 = P.tile_ptr[L], q1 = P.tile_ptr[L + 1];
    const int nq = (int)(q1 - q0);
    const int64_t ao = A.tile_off[a];
    const int ne = (int)(A.tile_off[a + 1] - ao);
    const int my_tl = lane < nq ? tr_ap_tile(AP, ap_col, staged, nt, K, t0, P.tile_col[q0 + lane]) : -1;
    const int items = ne * nq;
    for (int base = 0; base < items; base += 32) { /* same trip count in every lane of the warp */
      const int it = base + lane;
      const bool on = it < items;
      const int pl = on ? it / ne : 0;
      int tl = __shfl_sync(0xffffffffu, my_tl, pl & 31);
      if (!on) continue;
      const int e = it - pl * ne;
      const int64_t q = q0 + pl;
      if (pl >= 32) tl = tr_ap_tile(AP, ap_col, staged, nt, K, t0, P.tile_col[q]);
      const unsigned id = A.idx[ao + e];
      const int r = (int)(id >> 4), k = (int)(id & 15u);
      unsigned pm = P.row_mask[16 * q + k];
      if (!pm || tl < 0) continue; /* tl < 0 only with pm == 0: AP holds every structural product */
      const double x = A.val[ao + e];
      const double *pv = P.val + P.tile_off[q] + P.row_ptr[16 * q + k];
      const int64_t t = t0 + tl;
      const unsigned am = AP.row_mask[16 * t + r];
      double *out = acc + (staged ? (int64_t)ap_off[tl] : AP.tile_off[t] - apbase) + AP.row_ptr[16 * t + r];
      for (int j = 0; pm; j++) {
        const int c = __ffs(pm) - 1;
        pm &= pm - 1;
        atomicAdd(out + __popc(am & ((1u << c) - 1u)), x * pv[j]);
      }
    }
  }

  /* 2. the pairs (P tile pl, AP tile tl) and their C tiles; partial sums
   * in shared memory when every C tile the row reaches fits */
  const int npairs = np * nt;
  const bool pairs_staged = staged && npairs <= TR_FUSED_PAIRS;
  if (pairs_staged) {
    for (int i = tid; i < npairs; i += TR_FUSED_THREADS) {
      const int pl = i / nt, tl = i - (i / nt) * nt;
      const int64_t ct = tr_find_ctile(ctile_ptr, ctile_col, P.tile_col[p0 + pl], ap_col[tl]);
      pr_ct[i] = ct;
      pr_base[i + 1] = ct >= 0 ? (int32_t)(ctile_off[ct + 1] - ctile_off[ct]) : 0;
    }
    __syncthreads();
    if (tid == 0) { /* a few hundred pairs at most: a serial prefix */
      pr_base[0] = 0;
      for (int i = 0; i < npairs; i++) pr_base[i + 1] += pr_base[i];
    }
  }
  __syncthreads(); /* AP(K, :) complete; the pair table too */
  const bool c_shared = pairs_staged && pr_base[npairs] <= TR_FUSED_C_CAP;
  if (c_shared) {
    for (int i = tid; i < pr_base[npairs]; i += TR_FUSED_THREADS) acc_c[i] = 0.0;
    __syncthreads();
  }
  /* items (P entry of row K, AP tile): consecutive threads share the P entry */
  const int64_t e0 = P.tile_off[p0], ne2 = P.tile_off[p1] - e0;
  const int64_t items = ne2 * nt;
  const bool narrow = items <= 0x7fffffff; /* 32-bit division (always, short of a huge tile row) */
  for (int64_t it = tid; it < items; it += TR_FUSED_THREADS) {
    const int64_t e = narrow ? (int64_t)((uint32_t)it / (uint32_t)nt) : it / nt;
    const int tl = (int)(it - e * nt);
    const int64_t qe = e0 + e;
    const int64_t t = t0 + tl;
    const unsigned id = P.idx[qe];
    const int r = (int)(id >> 4), i = (int)(id & 15u);
    unsigned am = AP.row_mask[16 * t + r];
    if (!am) continue;
    const int64_t tp = tr_tile_of_entry(P.tile_off, p0, p1, qe);
    const int pl = (int)(tp - p0);
    int64_t ct;
    if (pairs_staged) ct = pr_ct[pl * nt + tl];
    else ct = tr_find_ctile(ctile_ptr, ctile_col, P.tile_col[tp], staged ? ap_col[tl] : AP.tile_col[t]);
    if (ct < 0) continue; /* only with am == 0: C holds every structural product */
    const double pv = P.val[qe];
    const unsigned cm = cmask[16 * ct + i];
    const double *apv = acc + (staged ? (int64_t)ap_off[tl] : AP.tile_off[t] - apbase) + AP.row_ptr[16 * t + r];
    double *out = c_shared ? acc_c + pr_base[pl * nt + tl] + crow_ptr[16 * ct + i]
                           : cval + ctile_off[ct] + crow_ptr[16 * ct + i];
    for (int j = 0; am; j++) {
      const int c = __ffs(am) - 1;
      am &= am - 1;
      /* AP in global memory was summed by atomics (in L2): read past L1 */
      const double y = ap_shared ? apv[j] : __ldcg(apv + j);
      atomicAdd(out + __popc(cm & ((1u << c) - 1u)), pv * y);
    }
  }
  if (!c_shared) return; /* block-uniform */
  __syncthreads();
  /* partial sums into C: slot s of pair pr is entry s - pr_base[pr] of its C tile */
  const int nc = pr_base[npairs];
  for (int s = tid; s < nc; s += TR_FUSED_THREADS) {
    const double v = acc_c[s];
    if (v == 0.0) continue; /* untouched (or cancelled to zero: nothing to add) */
    int lo = 0, hi = npairs; /* last pair with pr_base <= s */
    while (hi - lo > 1) {
      const int mid = (lo + hi) >> 1;
      if (pr_base[mid] <= s) lo = mid;
      else hi = mid;
    }
    atomicAdd(cval + ctile_off[pr_ct[lo]] + (s - pr_base[lo]), v);
  }
}

static __global__ void __launch_bounds__(TR_FUSED_THREADS)
    k_ptap_fused(tr_dview A, tr_dview P, tr_dview AP, double *__restrict__ apval, tr_dview C, double *__restrict__ cval,
                 int mode)
{
  __shared__ tr_fused_smem sm;
  const int32_t K = blockIdx.x;
  const int64_t a0 = A.tile_ptr[K], a1 = A.tile_ptr[K + 1];
  const int64_t p0 = P.tile_ptr[K], p1 = P.tile_ptr[K + 1];
  const int64_t t0 = AP.tile_ptr[K], t1 = AP.tile_ptr[K + 1];
  if (a0 == a1 || p0 == p1 || t0 == t1) return; /* the row adds nothing to C (block-uniform) */
  if (mode != 1 && tr_fused_row_staged(sm, a0, a1, p0, p1, t0, t1, A, P, AP, C, cval, mode == 2)) return;
  __syncthreads(); /* the staged path gave up: its shared arrays are free */
  tr_fused_row_general(sm, K, a0, a1, p0, p1, t0, t1, A, P, AP, apval, C, cval, mode == 1);
}

/* TILERAP_FUSED_GLOBAL (tests): 1 every tile row on the general path
 * through global memory (that of rows too large for shared memory), 2
 * the staged path with C's partial sums straight into C */
static int tr_fused_mode(void)
{
  static int v = -1;
  if (v < 0) {
    const char *s = getenv("TILERAP_FUSED_GLOBAL");
    v = s && (s[0] == '1' || s[0] == '2') ? s[0] - '0' : 0;
  }
  return v;
}

extern "C" int tr_cuda_ptap_fused(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, tilerap_tile_matrix *AP,
                                  tilerap_tile_matrix *C, void *stream)
{
  if (A->memtype != TILERAP_MEM_DEVICE || P->memtype != TILERAP_MEM_DEVICE || AP->memtype != TILERAP_MEM_DEVICE ||
      C->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "CUDA fused Galerkin product: A, P, AP and C must be device matrices");
  if (AP->tile_rows != A->tile_rows || P->m != A->n || AP->n != P->n || C->m != P->n || C->n != P->n)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "CUDA fused Galerkin product: A, P, AP or C differ from the plan's");
  cudaStream_t s = (cudaStream_t)stream;
  const int nonblocking = tr_stream_nonblocking(s);
  if (nonblocking) TR_RET(tr_order_after_legacy(s));
  if (C->nnz > 0) TR_RET_CU(cudaMemsetAsync(C->val, 0, (size_t)C->nnz * sizeof(double), s), "zeroing C");
  if (A->tile_rows > 0 && C->nnz > 0) {
    k_ptap_fused<<<(unsigned)A->tile_rows, TR_FUSED_THREADS, 0, s>>>(tr_view(A), tr_view(P), tr_view(AP), AP->val,
                                                                      tr_view(C), C->val, tr_fused_mode());
    TR_RET(tr_cuda_check_launch("fused Galerkin product"));
  }
  return nonblocking ? tr_order_legacy_after(s) : TILERAP_SUCCESS;
}
