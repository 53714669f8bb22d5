/* Counts per tile row in one parallel pass, each thread with marks over
 * the tile columns: the first pass of every conversion or product that
 * builds a tile structure (CSR->tile, step 1, the hypre hook's blocks). */
#include "tile_internal.h"

int tr_tile_row_counts(int32_t rows, int32_t cols, int parallel, int ncounts, int64_t *const *out,
                       tr_tile_row_count_fn count_row, void *ctx)
{
  int failed = 0, status = 0;
#pragma omp parallel reduction(| : failed) reduction(max : status) if (parallel)
  {
    int32_t *mark = tilerap_host_alloc((size_t)cols + 1, sizeof(int32_t));
    if (!mark) failed = 1;
    else
      for (int32_t J = 0; J <= cols; J++) mark[J] = -1;
    int64_t count[TR_ROW_COUNTS_MAX];
    /* every thread meets the loop (a worksharing loop skipped by one
     * thread would hang the others); one without marks counts nothing */
#pragma omp for schedule(dynamic, 64)
    for (int32_t I = 0; I < rows; I++) {
      if (!mark) continue;
      const int s = count_row(I, mark, count, ctx);
      if (s > status) status = s;
      for (int c = 0; c < ncounts; c++) out[c][I + 1] = count[c];
    }
    free(mark);
  }
  if (failed) return TILERAP_ERR_NOMEM;
  for (int c = 0; c < ncounts; c++) {
    out[c][0] = 0;
    for (int32_t I = 0; I < rows; I++) out[c][I + 1] += out[c][I];
  }
  return status;
}
