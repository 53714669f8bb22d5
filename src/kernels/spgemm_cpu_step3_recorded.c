/* Step 3 (CPU, RECORDED kernel): numeric phase from the products a
 * previous run recorded (spgemm_cpu_step3_record.c).  Each record adds
 * A(e) * B(f) into C(slot): one loop per pair whose trip count is known,
 * no row pointers, no empty inner loops.  Products alternate between two
 * partial sums (spgemm_cpu.h), so that two products into one entry that
 * follow each other do not wait for each other's read-add-write (1.2x
 * measured).  Nothing is allocated. */
#include "spgemm_cpu.h"

void tr_cpu_step3_recorded(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                           tilerap_tile_matrix *C)
{
  const uint32_t *rec = pairs->rec;
  const uint16_t *rl = pairs->rec_len;
#pragma omp parallel for schedule(dynamic, 256) if (C->num_tiles > TR_OMP_MIN_ITEMS)
  for (int64_t t = 0; t < C->num_tiles; t++) {
    double *restrict cv = C->val + C->tile_off[t], odd[256];
    const int len = (int)(C->tile_off[t + 1] - C->tile_off[t]);
    for (int e = 0; e < len; e++) { cv[e] = 0.0; odd[e] = 0.0; }
    unsigned par = 0; /* parity of the tile's next product (spgemm_cpu.h) */
    int64_t q = pairs->rec_tile_ptr[t];
    for (int64_t p = pairs->pair_ptr[t]; p < pairs->pair_ptr[t + 1]; p++) {
      const double *av = A->val + A->tile_off[pairs->pair_a[p]], *bv = B->val + B->tile_off[pairs->pair_b[p]];
      const int64_t end = q + rl[p];
      if (par && q < end) { /* the pair starts on an odd product */
        const uint32_t w = rec[q++];
        odd[w >> 16] += av[w & 255u] * bv[(w >> 8) & 255u];
        par = 0;
      }
      for (; q + 1 < end; q += 2) { /* two independent read-add-write chains */
        const uint32_t w0 = rec[q], w1 = rec[q + 1];
        cv[w0 >> 16] += av[w0 & 255u] * bv[(w0 >> 8) & 255u];
        odd[w1 >> 16] += av[w1 & 255u] * bv[(w1 >> 8) & 255u];
      }
      if (q < end) {
        const uint32_t w = rec[q++];
        cv[w >> 16] += av[w & 255u] * bv[(w >> 8) & 255u];
        par = 1;
      }
    }
    for (int e = 0; e < len; e++) cv[e] += odd[e];
  }
}
