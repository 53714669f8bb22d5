/* Step 3, recording run of the RECORDED kernel: the tile walk computes
 * C's values and writes down every scalar product of every pair once, as
 * the positions of its A, B and C entries inside their tiles (one byte
 * each: a tile holds at most 256 entries), into the records the plan
 * sized and allocated after step 2.  Recording inside a numeric run (not
 * in the plan) does the walk once instead of twice; the plan decides
 * which run records (spgemm_plan.c).
 * Why: on AMG products an A tile meets several B tiles whose matching
 * rows are mostly empty or hold one entry, so the tile kernel's numeric
 * loops run 0-2 times each and mispredict; with the products recorded,
 * every later run is one predictable stream (measured 1.7-1.9x faster,
 * BENCHMARKS.md section 6).  The walk below is the tile kernel's, so the
 * records keep its summation order and both kernels agree bit for bit. */
#include "spgemm_cpu.h"

static inline void tr_record_tile(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *P,
                                  tilerap_tile_matrix *C, int64_t t, const int at)
{
  const uint8_t *ci = C->idx + C->tile_off[t];
  double *cv = C->val + C->tile_off[t];
  const int len = (int)(C->tile_off[t + 1] - C->tile_off[t]);
  uint8_t slot[256]; /* C entry of local (r,c), from C's packed indices */
  for (int e = 0; e < len; e++) { slot[ci[e]] = (uint8_t)e; cv[e] = 0.0; }
  uint32_t *out = P->rec + P->rec_tile_ptr[t];
  const int64_t np_all = P->pair_ptr[P->num_tiles];
  for (int64_t p = P->pair_ptr[t]; p < P->pair_ptr[t + 1]; p++) {
    if (p + TR_PAIR_PREFETCH < np_all) {
      const int64_t an = P->pair_a[p + TR_PAIR_PREFETCH], bn = P->pair_b[p + TR_PAIR_PREFETCH];
      const int64_t ao = A->tile_off[an], bo = B->tile_off[bn];
      __builtin_prefetch(A->idx + ao); __builtin_prefetch(A->val + ao);
      __builtin_prefetch(B->idx + bo); __builtin_prefetch(B->val + bo);
      __builtin_prefetch(B->row_ptr + 16 * bn);
    }
    const int64_t a = P->pair_a[p], b = P->pair_b[p];
    const uint8_t *ai = A->idx + A->tile_off[a], *bi = B->idx + B->tile_off[b], *brp = B->row_ptr + 16 * b;
    const double *av = A->val + A->tile_off[a], *bv = B->val + B->tile_off[b];
    const int na = (int)(A->tile_off[a + 1] - A->tile_off[a]), blen = (int)(B->tile_off[b + 1] - B->tile_off[b]);
    uint32_t *const start = out;
    for (int e = 0; e < na; e++) {
      const int r = at ? ai[e] & 15 : ai[e] >> 4, k = at ? ai[e] >> 4 : ai[e] & 15;
      const int fe = k < 15 ? brp[k + 1] : blen;
      for (int f = brp[k]; f < fe; f++) {
        const unsigned s = slot[16 * r + (bi[f] & 15)];
        cv[s] += av[e] * bv[f];
        *out++ = (uint32_t)e | (uint32_t)f << 8 | (uint32_t)s << 16;
      }
    }
    P->rec_len[p] = (uint16_t)(out - start); /* <= 256 entries x 16 */
  }
}

void tr_cpu_step3_record(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                         tilerap_tile_matrix *C)
{
#pragma omp parallel for schedule(dynamic, 256) if (C->num_tiles > TR_OMP_MIN_ITEMS)
  for (int64_t t = 0; t < C->num_tiles; t++) {
    if (pairs->a_transposed) tr_record_tile(A, B, pairs, C, t, 1); /* constant flag: specialised */
    else tr_record_tile(A, B, pairs, C, t, 0);
  }
}
