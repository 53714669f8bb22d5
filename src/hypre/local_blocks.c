/* Local CSR blocks of hypre matrices -> tile matrices.  hypre keeps the
 * diagonal first in each row of a diag block and offd blocks index
 * col_map_offd, so rows are neither sorted nor in one column space: each
 * output row is stitched from side-by-side blocks with a column map and
 * offset, then sorted (duplicates summed) as the tile format requires. */
#include "hook_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  int32_t c;
  double v;
} tr_pair;

static int pair_cmp(const void *x, const void *y)
{
  const tr_pair *a = x, *b = y;
  return (a->c > b->c) - (a->c < b->c);
}

/* Sorts one row by column and sums duplicates; returns the new length. */
static int64_t sort_row(int32_t *col, double *val, int64_t len, tr_pair *scratch)
{
  if (len <= 32) {
    for (int64_t k = 1; k < len; k++) {
      int32_t c = col[k];
      double v = val[k];
      int64_t q = k - 1;
      while (q >= 0 && col[q] > c) { col[q + 1] = col[q]; val[q + 1] = val[q]; q--; }
      col[q + 1] = c; val[q + 1] = v;
    }
  } else {
    for (int64_t k = 0; k < len; k++) { scratch[k].c = col[k]; scratch[k].v = val[k]; }
    qsort(scratch, (size_t)len, sizeof *scratch, pair_cmp);
    for (int64_t k = 0; k < len; k++) { col[k] = scratch[k].c; val[k] = scratch[k].v; }
  }
  int64_t w = 0;
  for (int64_t k = 0; k < len; k++) {
    if (w > 0 && col[w - 1] == col[k]) val[w - 1] += val[k];
    else { col[w] = col[k]; val[w] = val[k]; w++; }
  }
  return w;
}

int tr_tiles_from_segments(int32_t m, int32_t n, int nseg, const tr_segment *seg,
                           tilerap_tile_matrix **T)
{
  int err = TILERAP_SUCCESS;
  int64_t *rowptr = calloc((size_t)m + 1, sizeof *rowptr);
  int32_t *col = NULL;
  double *val = NULL;
  tr_pair *scratch = NULL;
  if (!rowptr) return TILERAP_ERR_NOMEM;

  int64_t maxlen = 0;
  for (int s = 0; s < nseg; s++)
    for (int32_t r = 0; r < seg[s].nrows; r++) {
      int64_t len = 0;
      for (int b = 0; b < seg[s].nblocks; b++) len += seg[s].b[b].i[r + 1] - seg[s].b[b].i[r];
      rowptr[seg[s].row0 + r + 1] = len;
      if (len > maxlen) maxlen = len;
    }
  for (int32_t r = 0; r < m; r++) rowptr[r + 1] += rowptr[r];

  col = malloc(((size_t)rowptr[m] + 1) * sizeof *col);
  val = malloc(((size_t)rowptr[m] + 1) * sizeof *val);
  scratch = malloc(((size_t)maxlen + 1) * sizeof *scratch);
  if (!col || !val || !scratch) { err = TILERAP_ERR_NOMEM; goto done; }

  for (int s = 0; s < nseg; s++)
    for (int32_t r = 0; r < seg[s].nrows; r++) {
      int64_t p = rowptr[seg[s].row0 + r];
      for (int b = 0; b < seg[s].nblocks; b++) {
        const tr_block *B = &seg[s].b[b];
        for (HYPRE_Int k = B->i[r]; k < B->i[r + 1]; k++) {
          int64_t j = B->j32 ? (int64_t)B->j32[k] : (int64_t)B->j[k];
          if (B->map) j = B->map[j];
          j += B->offset;
          if (j < 0 || j >= n) { err = TILERAP_ERR_RANGE; goto done; }
          col[p] = (int32_t)j;
          val[p] = (double)B->a[k];
          p++;
        }
      }
    }

  /* Sort each row and compact in place: rowptr[r] becomes the compacted start
   * once row r is done (its end, rowptr[r+1], is read before it is rewritten). */
  {
    int64_t w = 0, start = 0;
    for (int32_t r = 0; r < m; r++) {
      int64_t end = rowptr[r + 1];
      int64_t len = end - start;
      if (w != start) {
        memmove(col + w, col + start, (size_t)len * sizeof *col);
        memmove(val + w, val + start, (size_t)len * sizeof *val);
      }
      len = sort_row(col + w, val + w, len, scratch);
      rowptr[r] = w;
      w += len;
      start = end;
    }
    rowptr[m] = w;
  }
  err = tilerap_tile_from_csr(m, n, rowptr, col, val, T);

done:
  free(rowptr); free(col); free(val); free(scratch);
  return err;
}
