/* Step 1 (CPU): symbolic SpGEMM of the tile graphs of A and B.  Every C
 * tile (I,J) with some k such that A(I,k) and B(k,J) are stored becomes a
 * candidate, and the (A tile, B tile) pairs that feed it are listed. */
#include "spgemm_cpu.h"

void tr_pairs_free(tr_pairs *P)
{
  free(P->pair_ptr); free(P->pair_a); free(P->pair_b);
  free(P->rec_tile_ptr); free(P->rec_len); free(P->rec);
  memset(P, 0, sizeof *P);
}

static int cmp_i32(const void *a, const void *b)
{
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* A tile row has a few dozen candidate columns at most on AMG products:
 * insertion sort beats qsort's calls through a comparison function there */
static void tr_sort_cols(int32_t *c, int64_t n)
{
  if (n > 64) { qsort(c, (size_t)n, sizeof *c, cmp_i32); return; }
  for (int64_t i = 1; i < n; i++) {
    int32_t x = c[i];
    int64_t j = i;
    for (; j > 0 && c[j - 1] > x; j--) c[j] = c[j - 1];
    c[j] = x;
  }
}

typedef struct { const tilerap_tile_matrix *A, *B; } tr_step1_ctx;

/* candidate tiles and pairs of tile row I */
static int tr_step1_count_row(int32_t I, int32_t *mark, int64_t *count, void *ctx)
{
  const tilerap_tile_matrix *A = ((tr_step1_ctx *)ctx)->A, *B = ((tr_step1_ctx *)ctx)->B;
  int64_t nt = 0, np = 0;
  for (int64_t a = A->tile_ptr[I]; a < A->tile_ptr[I + 1]; a++) {
    int32_t k = A->tile_col[a];
    np += B->tile_ptr[k + 1] - B->tile_ptr[k];
    for (int64_t b = B->tile_ptr[k]; b < B->tile_ptr[k + 1]; b++) {
      int32_t J = B->tile_col[b];
      if (mark[J] != I) { mark[J] = I; nt++; }
    }
  }
  count[0] = nt;
  count[1] = np;
  return 0;
}

int tr_cpu_step1_structure(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int64_t *tile_ptr,
                           int32_t **tile_col_out, tr_pairs *pairs)
{
  const int32_t TR = A->tile_rows, TC = B->tile_cols;
  int64_t *pair_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  if (!pair_row) return TILERAP_ERR_NOMEM;
  memset(pairs, 0, sizeof *pairs);
  tr_step1_ctx ctx = {A, B};
  int64_t *const counts[2] = {tile_ptr, pair_row};
  if (tr_tile_row_counts(TR, TC, TR > TR_OMP_MIN_ITEMS / 16, 2, counts, tr_step1_count_row, &ctx)) {
    free(pair_row);
    return TILERAP_ERR_NOMEM;
  }
  const int64_t ntiles = tile_ptr[TR], npairs = pair_row[TR];
  if (ntiles > INT32_MAX) {
    free(pair_row);
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "product has %lld candidate tiles (limit 2^31)", (long long)ntiles);
  }
  int32_t *tile_col = tilerap_host_alloc((size_t)ntiles, sizeof(int32_t));
  pairs->num_tiles = ntiles;
  pairs->pair_ptr = tilerap_host_alloc((size_t)ntiles + 1, sizeof(int64_t));
  pairs->pair_a = tilerap_host_alloc((size_t)npairs, sizeof(int32_t));
  pairs->pair_b = tilerap_host_alloc((size_t)npairs, sizeof(int32_t));
  if (!tile_col || !pairs->pair_ptr || !pairs->pair_a || !pairs->pair_b) {
    free(tile_col); free(pair_row); tr_pairs_free(pairs);
    return TILERAP_ERR_NOMEM;
  }

  /* fill: sorted tile columns, pairs grouped by C tile, ascending k */
  int failed = 0;
#pragma omp parallel reduction(| : failed) if (TR > TR_OMP_MIN_ITEMS / 16)
  {
    int32_t *slot = tilerap_host_alloc((size_t)TC + 1, sizeof(int32_t));
    int64_t *cursor = tilerap_host_alloc((size_t)TC + 1, sizeof(int64_t));
    if (!slot || !cursor) failed = 1;
    else {
      for (int32_t J = 0; J <= TC; J++) slot[J] = -1;
#pragma omp for schedule(dynamic, 64)
      for (int32_t I = 0; I < TR; I++) {
        int64_t t0 = tile_ptr[I], nt = tile_ptr[I + 1] - t0, k0 = 0;
        int32_t *cols = tile_col + t0;
        /* one walk collects the row's tile columns and counts each one's
         * pairs (cursor is indexed by column J here) */
        for (int64_t a = A->tile_ptr[I]; a < A->tile_ptr[I + 1]; a++) {
          int32_t k = A->tile_col[a];
          for (int64_t b = B->tile_ptr[k]; b < B->tile_ptr[k + 1]; b++) {
            int32_t J = B->tile_col[b];
            if (slot[J] < 0) { slot[J] = 0; cols[k0++] = J; cursor[J] = 0; }
            cursor[J]++;
          }
        }
        tr_sort_cols(cols, nt);
        int64_t p = pair_row[I];
        for (int64_t s = 0; s < nt; s++) {
          int32_t J = cols[s];
          int64_t c = cursor[J];
          pairs->pair_ptr[t0 + s] = p;
          cursor[J] = p;
          p += c;
        }
        for (int64_t a = A->tile_ptr[I]; a < A->tile_ptr[I + 1]; a++) {
          int32_t k = A->tile_col[a];
          for (int64_t b = B->tile_ptr[k]; b < B->tile_ptr[k + 1]; b++) {
            int64_t q = cursor[B->tile_col[b]]++;
            pairs->pair_a[q] = (int32_t)a;
            pairs->pair_b[q] = (int32_t)b;
          }
        }
        for (int64_t s = 0; s < nt; s++) slot[cols[s]] = -1;
      }
    }
    free(slot); free(cursor);
  }
  pairs->pair_ptr[ntiles] = npairs;
  free(pair_row);
  if (failed) { free(tile_col); tr_pairs_free(pairs); return TILERAP_ERR_NOMEM; }
  *tile_col_out = tile_col;
  return TILERAP_SUCCESS;
}
