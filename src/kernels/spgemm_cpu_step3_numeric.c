/* Step 3 (CPU): numeric phase.  Each C tile sums the products of its
 * pairs.  Sparse tiles accumulate straight into C's values: the position
 * of (r,c) is row_ptr[r] + popcount(mask[r] below bit c).  Dense tiles
 * (more than dense_threshold entries) accumulate in a 16x16 array and are
 * compressed through the masks.  Nothing is allocated. */
#include "spgemm_cpu.h"

static inline void tr_tile_sparse(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *P,
                                  int64_t t, tilerap_tile_matrix *C)
{
  double *cv = C->val + C->tile_off[t];
  const uint8_t *crp = C->row_ptr + 16 * t;
  const uint16_t *cm = C->row_mask + 16 * t;
  int len = (int)(C->tile_off[t + 1] - C->tile_off[t]);
  for (int e = 0; e < len; e++) cv[e] = 0.0;
  for (int64_t p = P->pair_ptr[t]; p < P->pair_ptr[t + 1]; p++) {
    int64_t a = P->pair_a[p], b = P->pair_b[p];
    const double *av = A->val + A->tile_off[a], *bv = B->val + B->tile_off[b];
    const uint8_t *ai = A->idx + A->tile_off[a], *bi = B->idx + B->tile_off[b];
    int alen = (int)(A->tile_off[a + 1] - A->tile_off[a]);
    for (int e = 0; e < alen; e++) {
      int r = ai[e] >> 4, k = ai[e] & 15;
      double x = av[e];
      unsigned below_mask = cm[r];
      int base = crp[r];
      for (int f = B->row_ptr[16 * b + k], fe = tr_row_end(B, b, k); f < fe; f++) {
        int c = bi[f] & 15;
        cv[base + tr_popcount16(below_mask & ((1u << c) - 1u))] += x * bv[f];
      }
    }
  }
}

static inline void tr_tile_dense(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *P,
                                 int64_t t, tilerap_tile_matrix *C)
{
  double acc[256];
  for (int e = 0; e < 256; e++) acc[e] = 0.0;
  for (int64_t p = P->pair_ptr[t]; p < P->pair_ptr[t + 1]; p++) {
    int64_t a = P->pair_a[p], b = P->pair_b[p];
    const double *av = A->val + A->tile_off[a], *bv = B->val + B->tile_off[b];
    const uint8_t *ai = A->idx + A->tile_off[a], *bi = B->idx + B->tile_off[b];
    int alen = (int)(A->tile_off[a + 1] - A->tile_off[a]);
    for (int e = 0; e < alen; e++) {
      int r = ai[e] >> 4, k = ai[e] & 15;
      double x = av[e];
      double *row = acc + 16 * r;
      for (int f = B->row_ptr[16 * b + k], fe = tr_row_end(B, b, k); f < fe; f++) row[bi[f] & 15] += x * bv[f];
    }
  }
  double *cv = C->val + C->tile_off[t];
  const uint8_t *ci = C->idx + C->tile_off[t];
  int len = (int)(C->tile_off[t + 1] - C->tile_off[t]);
  for (int e = 0; e < len; e++) cv[e] = acc[ci[e]]; /* idx = 16*r + c */
}

void tr_cpu_step3_numeric(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                          int dense_threshold, tilerap_tile_matrix *C)
{
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t t = 0; t < C->num_tiles; t++) {
    if (C->tile_off[t + 1] - C->tile_off[t] > dense_threshold) tr_tile_dense(A, B, pairs, t, C);
    else tr_tile_sparse(A, B, pairs, t, C);
  }
}
