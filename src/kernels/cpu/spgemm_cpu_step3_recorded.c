/* Step 3 (CPU, RECORDED kernel): numeric phase from the products a
 * previous run recorded (spgemm_cpu_step3_record.c).  Each record adds
 * A(e) * B(f) into C(slot): one loop per pair whose trip count is known,
 * no row pointers, no empty inner loops.  The records keep the tile
 * walk's order, so every entry is summed as by the tile kernel (and as
 * by PETSc's AIJ product): same bits.  (Two alternating partial sums
 * would replay 1.2x faster, measured, but change the last bits, which
 * GAMG's eigenvalue estimates amplify to 1e-9 differences in the coarse
 * operators against AIJ.)  Nothing is allocated. */
#include "spgemm_cpu.h"

void tr_cpu_step3_recorded(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                           tilerap_tile_matrix *C)
{
  const uint32_t *rec = pairs->rec;
  const uint16_t *rl = pairs->rec_len;
  const int64_t np_all = pairs->pair_ptr[pairs->num_tiles];
#pragma omp parallel for schedule(dynamic, 256) if (C->num_tiles > TR_OMP_MIN_ITEMS)
  for (int64_t t = 0; t < C->num_tiles; t++) {
    double *restrict cv = C->val + C->tile_off[t];
    const int len = (int)(C->tile_off[t + 1] - C->tile_off[t]);
    for (int e = 0; e < len; e++) cv[e] = 0.0;
    const uint32_t *w = rec + pairs->rec_tile_ptr[t];
    for (int64_t p = pairs->pair_ptr[t]; p < pairs->pair_ptr[t + 1]; p++) {
      if (p + TR_PAIR_PREFETCH < np_all) {
        __builtin_prefetch(A->val + A->tile_off[pairs->pair_a[p + TR_PAIR_PREFETCH]]);
        __builtin_prefetch(B->val + B->tile_off[pairs->pair_b[p + TR_PAIR_PREFETCH]]);
      }
      const double *av = A->val + A->tile_off[pairs->pair_a[p]], *bv = B->val + B->tile_off[pairs->pair_b[p]];
      for (const uint32_t *end = w + rl[p]; w < end; w++) cv[*w >> 16] += av[*w & 255u] * bv[(*w >> 8) & 255u];
    }
  }
}
