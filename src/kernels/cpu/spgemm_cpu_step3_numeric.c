/* Step 3 (CPU): numeric phase.  Each C tile sums the products of its
 * pairs: every entry (r,k) of A's tile times B's row k (often empty on
 * AMG tiles: then its loop is empty).
 *  - sparse accumulator (tiles with at most dense_threshold entries):
 *    products go straight into C's values; the slot of (r,c) comes from a
 *    byte map filled from C's packed indices (O(entries) to build);
 *  - dense accumulator: a 16x16 array, compressed through C's indices;
 *    only the touched entries are reset, so its cost is O(entries) too.
 * Nothing is allocated: both scratch arrays live on the stack. */
#include "spgemm_cpu.h"

/* Visits every product of pair p: BODY sees r, c, prod.  AT != 0: A's
 * tile enters transposed (entry (k,r) of A is (r,k) of A^T). */
#define TR_FOR_EACH_PRODUCT(A, B, P, p, AT, BODY)                                                          \
  do {                                                                                                 \
    const int64_t a_ = (P)->pair_a[p], b_ = (P)->pair_b[p];                                            \
    const uint8_t *brp_ = (B)->row_ptr + 16 * b_, *ai_ = (A)->idx + (A)->tile_off[a_];                 \
    const double *av_ = (A)->val + (A)->tile_off[a_], *bv_ = (B)->val + (B)->tile_off[b_];             \
    const uint8_t *bi_ = (B)->idx + (B)->tile_off[b_];                                                 \
    const int blen_ = (int)((B)->tile_off[b_ + 1] - (B)->tile_off[b_]);                                \
    const int na_ = (int)((A)->tile_off[a_ + 1] - (A)->tile_off[a_]);                                  \
    for (int e_ = 0; e_ < na_; e_++) {                                                                 \
      int r = (AT) ? ai_[e_] & 15 : ai_[e_] >> 4, k_ = (AT) ? ai_[e_] >> 4 : ai_[e_] & 15;           \
      double x_ = av_[e_];                                                                             \
      int fe_ = k_ < 15 ? brp_[k_ + 1] : blen_;                                                        \
      for (int f_ = brp_[k_]; f_ < fe_; f_++) {                                                        \
        int c = bi_[f_] & 15;                                                                          \
        double prod = x_ * bv_[f_];                                                                    \
        BODY;                                                                                          \
      }                                                                                                \
    }                                                                                                  \
  } while (0)

static inline void tr_tile_sparse(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *P,
                                  int64_t t, tilerap_tile_matrix *C, const int at)
{
  double *cv = C->val + C->tile_off[t];
  const uint8_t *ci = C->idx + C->tile_off[t];
  int len = (int)(C->tile_off[t + 1] - C->tile_off[t]);
  uint8_t slot[256];
  for (int e = 0; e < len; e++) { cv[e] = 0.0; slot[ci[e]] = (uint8_t)e; }
  for (int64_t p = P->pair_ptr[t]; p < P->pair_ptr[t + 1]; p++) TR_FOR_EACH_PRODUCT(A, B, P, p, at, cv[slot[16 * r + c]] += prod);
}

static inline void tr_tile_dense(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *P,
                                 int64_t t, tilerap_tile_matrix *C, double *acc, const int at)
{
  for (int64_t p = P->pair_ptr[t]; p < P->pair_ptr[t + 1]; p++) TR_FOR_EACH_PRODUCT(A, B, P, p, at, acc[16 * r + c] += prod);
  double *cv = C->val + C->tile_off[t];
  const uint8_t *ci = C->idx + C->tile_off[t];
  int len = (int)(C->tile_off[t + 1] - C->tile_off[t]);
  for (int e = 0; e < len; e++) { cv[e] = acc[ci[e]]; acc[ci[e]] = 0.0; } /* idx = 16*r + c */
}

void tr_cpu_step3_numeric(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                          int dense_threshold, tilerap_tile_matrix *C)
{
#pragma omp parallel if (C->num_tiles > TR_OMP_MIN_ITEMS)
  {
    double acc[256]; /* all products land inside C's structure, so after each
                        dense tile the reset of its entries restores zeros */
    for (int e = 0; e < 256; e++) acc[e] = 0.0;
#pragma omp for schedule(dynamic, 256)
    for (int64_t t = 0; t < C->num_tiles; t++) {
      const int dense = C->tile_off[t + 1] - C->tile_off[t] > dense_threshold;
      if (pairs->a_transposed) { /* constant flags: the compiler specialises each call */
        if (dense) tr_tile_dense(A, B, pairs, t, C, acc, 1);
        else tr_tile_sparse(A, B, pairs, t, C, 1);
      } else {
        if (dense) tr_tile_dense(A, B, pairs, t, C, acc, 0);
        else tr_tile_sparse(A, B, pairs, t, C, 0);
      }
    }
  }
}
