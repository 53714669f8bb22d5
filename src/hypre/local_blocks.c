/* Local CSR blocks of hypre matrices -> tile matrices.  hypre keeps the
 * diagonal first in each row of a diag block and offd blocks index
 * col_map_offd, so rows are neither sorted nor in one column space: each
 * output row is stitched from side-by-side blocks with a column map and
 * offset.
 *
 * Rows need not be sorted to build tiles: inside a tile, an entry's slot
 * is the number of mask bits below its column in its row, so tiles are
 * built straight from the unsorted rows (per tile row: tile columns, masks,
 * then every entry placed at its slot), in parallel over tile rows.  Only
 * rows with a repeated column (which hypre's blocks do not have) take the
 * slow path: rows sorted, duplicates summed, then tilerap_tile_from_csr. */
#include "hook_internal.h"
#include "tile_internal.h" /* tr_tile_row_counts */

#include <stdlib.h>
#include <string.h>

/* Segment holding output row i (local row in *r), or NULL for an empty row. */
static inline const tr_segment *seg_of(int nseg, const tr_segment *seg, int32_t i, int32_t *r)
{
  for (int s = 0; s < nseg; s++)
    if (i >= seg[s].row0 && i < seg[s].row0 + seg[s].nrows) { *r = i - seg[s].row0; return &seg[s]; }
  return NULL;
}

static inline int64_t blk_col(const tr_block *B, HYPRE_Int k)
{
  int64_t j = B->j32 ? (int64_t)B->j32[k] : (int64_t)B->j[k];
  if (B->map) j = B->map[j];
  return j + B->offset;
}

typedef struct {
  int32_t c;
  double v;
} tr_pair;

/* LSD radix sort of a row's (column, value) pairs, 8 bits a pass over the
 * bits its largest column needs: coarse operators' rows in hypre's order
 * hold hundreds of entries in no order, where qsort's calls cost most of
 * the stitching */
static void radix_row(int32_t *col, double *val, int64_t len, tr_pair *tmp)
{
  uint32_t top = 0;
  for (int64_t k = 0; k < len; k++) top |= (uint32_t)col[k];
  int passes = 0;
  while (passes < 4 && (top >> (8 * passes))) passes++;
  for (int p = 0; p < passes; p++) {
    const int sh = 8 * p;
    int64_t at[257] = {0};
    if (p % 2 == 0) { /* the row's arrays into tmp */
      for (int64_t k = 0; k < len; k++) at[(((uint32_t)col[k] >> sh) & 255u) + 1]++;
      for (int d = 0; d < 256; d++) at[d + 1] += at[d];
      for (int64_t k = 0; k < len; k++) {
        const int64_t q = at[((uint32_t)col[k] >> sh) & 255u]++;
        tmp[q].c = col[k];
        tmp[q].v = val[k];
      }
    } else { /* and back */
      for (int64_t k = 0; k < len; k++) at[(((uint32_t)tmp[k].c >> sh) & 255u) + 1]++;
      for (int d = 0; d < 256; d++) at[d + 1] += at[d];
      for (int64_t k = 0; k < len; k++) {
        const int64_t q = at[((uint32_t)tmp[k].c >> sh) & 255u]++;
        col[q] = tmp[k].c;
        val[q] = tmp[k].v;
      }
    }
  }
  if (passes % 2)
    for (int64_t k = 0; k < len; k++) { col[k] = tmp[k].c; val[k] = tmp[k].v; }
}

/* Sorts one row by column and sums duplicates; returns the new length. */
static int64_t sort_row(int32_t *col, double *val, int64_t len, tr_pair *scratch)
{
  int64_t descents = 0; /* hypre's rows: the diagonal first, the rest ascending (one or two) */
  for (int64_t k = 1; k < len && descents <= 2; k++) descents += col[k] < col[k - 1];
  if (len <= 32 || descents <= 2) { /* insertion: linear on such rows */
    for (int64_t k = 1; k < len; k++) {
      int32_t c = col[k];
      double v = val[k];
      int64_t q = k - 1;
      while (q >= 0 && col[q] > c) { col[q + 1] = col[q]; val[q + 1] = val[q]; q--; }
      col[q + 1] = c; val[q + 1] = v;
    }
  } else {
    radix_row(col, val, len, scratch);
  }
  int64_t w = 0;
  for (int64_t k = 0; k < len; k++) {
    if (w > 0 && col[w - 1] == col[k]) val[w - 1] += val[k];
    else { col[w] = col[k]; val[w] = val[k]; w++; }
  }
  return w;
}

int tr_csr_from_segments(int32_t m, int32_t n, int nseg, const tr_segment *seg, tilerap_csr **out)
{
  *out = NULL;
  int64_t *len = calloc((size_t)m + 1, sizeof *len); /* row i's length at len[i + 1], then its kept length at len[i] */
  if (!len) return TILERAP_ERR_NOMEM;
#pragma omp parallel for schedule(static) if (m > TR_PAR_ROWS)
  for (int32_t i = 0; i < m; i++) {
    int32_t r;
    const tr_segment *S = seg_of(nseg, seg, i, &r);
    int64_t l = 0;
    if (S)
      for (int b = 0; b < S->nblocks; b++) l += S->b[b].i[r + 1] - S->b[b].i[r];
    len[i + 1] = l;
  }
  for (int32_t i = 0; i < m; i++) len[i + 1] += len[i];
  tilerap_csr *C = NULL;
  int err = tilerap_csr_create(m, n, len[m], &C);
  if (err) { free(len); return err; }
  memcpy(C->rowptr, len, ((size_t)m + 1) * sizeof *len);
  int failed = 0, range = 0, shrunk = 0;
  /* threads by the entries: a coarse level's few rows hold hundreds each */
#pragma omp parallel reduction(| : failed, range, shrunk) if (m > TR_PAR_ROWS || C->nnz > 16 * TR_PAR_ROWS)
  {
    tr_pair *scratch = NULL;
    int64_t cap = 0;
#pragma omp for schedule(dynamic, 256)
    for (int32_t i = 0; i < m; i++) {
      int32_t r;
      const tr_segment *S = seg_of(nseg, seg, i, &r);
      const int64_t start = C->rowptr[i], l = C->rowptr[i + 1] - start;
      int64_t w = start;
      if (S)
        for (int b = 0; b < S->nblocks; b++) {
          const tr_block *B = &S->b[b];
          for (HYPRE_Int k = B->i[r]; k < B->i[r + 1]; k++) {
            const int64_t j = blk_col(B, k);
            if (j < 0 || j >= n) range = 1;
            C->colidx[w] = (int32_t)j;
            C->val[w++] = (double)B->a[k];
          }
        }
      if (l > 32 && l > cap) { /* the radix sort's buffer (longer rows only) */
        free(scratch);
        scratch = malloc((size_t)l * sizeof *scratch);
        cap = scratch ? l : 0;
        if (!scratch) { failed = 1; continue; }
      }
      len[i] = sort_row(C->colidx + start, C->val + start, l, scratch);
      shrunk |= len[i] != l;
    }
    free(scratch);
  }
  err = failed ? TILERAP_ERR_NOMEM : range ? TILERAP_ERR_RANGE : TILERAP_SUCCESS;
  if (!err && shrunk) { /* repeated columns were summed: rows move down */
    int64_t w = 0;
    for (int32_t i = 0; i < m; i++) {
      const int64_t start = C->rowptr[i], kept = len[i];
      memmove(C->colidx + w, C->colidx + start, (size_t)kept * sizeof *C->colidx);
      memmove(C->val + w, C->val + start, (size_t)kept * sizeof *C->val);
      C->rowptr[i] = w;
      w += kept;
    }
    C->rowptr[m] = C->nnz = w;
  }
  free(len);
  if (err) tilerap_csr_destroy(&C);
  *out = C;
  return err;
}

/* Rows with repeated columns: sorted CSR, then tiles. */
static int tiles_via_sorted_csr(int32_t m, int32_t n, int nseg, const tr_segment *seg, tilerap_tile_matrix **T)
{
  tilerap_csr *C = NULL;
  int err = tr_csr_from_segments(m, n, nseg, seg, &C);
  if (!err) err = tilerap_tile_from_csr(m, n, C->rowptr, C->colidx, C->val, T);
  tilerap_csr_destroy(&C);
  return err;
}

/* Bits set in a 16-bit mask (no popcnt instruction assumed). */
static inline int pop16(unsigned x)
{
  x = x - ((x >> 1) & 0x5555u);
  x = (x & 0x3333u) + ((x >> 2) & 0x3333u);
  x = (x + (x >> 4)) & 0x0f0fu;
  return (int)((x + (x >> 8)) & 0x1fu);
}

static int cmp_i32(const void *a, const void *b)
{
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

typedef struct { int32_t m, n; int nseg; const tr_segment *seg; } tr_segments;

/* distinct tile columns and entries of tile row I; TILERAP_ERR_RANGE for
 * a column outside [0, n) */
static int tr_segments_count_row(int32_t I, int32_t *mark, int64_t *count, void *ctx)
{
  const tr_segments *g = ctx;
  int64_t nt = 0, ne = 0;
  int status = 0;
  for (int32_t i = 16 * I; i < g->m && (int64_t)i < 16 * (int64_t)I + 16; i++) {
    int32_t r;
    const tr_segment *S = seg_of(g->nseg, g->seg, i, &r);
    if (!S) continue;
    for (int b = 0; b < S->nblocks; b++) {
      const tr_block *B = &S->b[b];
      for (HYPRE_Int k = B->i[r]; k < B->i[r + 1]; k++) {
        int64_t j = blk_col(B, k);
        if (j < 0 || j >= g->n) { status = TILERAP_ERR_RANGE; continue; }
        int32_t J = (int32_t)(j >> 4);
        if (mark[J] != I) { mark[J] = I; nt++; }
        ne++;
      }
    }
  }
  count[0] = nt;
  count[1] = ne;
  return status;
}

int tr_tiles_from_segments(int32_t m, int32_t n, int nseg, const tr_segment *seg,
                           tilerap_tile_matrix **T)
{
  *T = NULL;
  const int32_t TR = (m + 15) / 16, TC = (n + 15) / 16;
  int64_t *tiles_in = calloc((size_t)TR + 1, sizeof *tiles_in);
  int64_t *ents_in = calloc((size_t)TR + 1, sizeof *ents_in);
  int failed = 0, dup = 0;
  if (!tiles_in || !ents_in) { free(tiles_in); free(ents_in); return TILERAP_ERR_NOMEM; }

  /* pass 1: distinct tile columns and entries of every tile row */
  tr_segments segs = {m, n, nseg, seg};
  int64_t *const counts[2] = {tiles_in, ents_in};
  int err = tr_tile_row_counts(TR, TC, m > TR_PAR_ROWS, 2, counts, tr_segments_count_row, &segs);
  if (err) {
    free(tiles_in); free(ents_in);
    return err;
  }
  tilerap_tile_matrix *M = NULL;
  err = tilerap_tile_create(m, n, tiles_in[TR], ents_in[TR], TILERAP_MEM_HOST, &M);
  if (err) { free(tiles_in); free(ents_in); return err; }
  memcpy(M->tile_ptr, tiles_in, ((size_t)TR + 1) * sizeof *tiles_in);

  /* pass 2: tile columns, masks, offsets, entries at their mask slots */
#pragma omp parallel reduction(| : failed, dup) if (m > TR_PAR_ROWS)
  {
    int32_t *slot = malloc(((size_t)TC + 1) * sizeof *slot);
    if (!slot) failed = 1;
    else {
      for (int32_t J = 0; J <= TC; J++) slot[J] = -1;
#pragma omp for schedule(dynamic, 64)
      for (int32_t I = 0; I < TR; I++) {
        const int32_t r0 = 16 * I, r1 = (int64_t)r0 + 16 < m ? r0 + 16 : m;
        const int64_t t0 = M->tile_ptr[I], nt = M->tile_ptr[I + 1] - t0;
        int32_t *cols = M->tile_col + t0;
        int64_t k = 0;
        for (int32_t i = r0; i < r1; i++) {
          int32_t r;
          const tr_segment *S = seg_of(nseg, seg, i, &r);
          if (!S) continue;
          for (int b = 0; b < S->nblocks; b++)
            for (HYPRE_Int q = S->b[b].i[r]; q < S->b[b].i[r + 1]; q++) {
              int32_t J = (int32_t)(blk_col(&S->b[b], q) >> 4);
              if (slot[J] < 0) { slot[J] = 0; cols[k++] = J; }
            }
        }
        if (nt > 32) qsort(cols, (size_t)nt, sizeof *cols, cmp_i32);
        else /* the usual few tiles per tile row: qsort's calls cost more */
          for (int64_t a = 1; a < nt; a++) {
            int32_t v = cols[a];
            int64_t q = a - 1;
            while (q >= 0 && cols[q] > v) { cols[q + 1] = cols[q]; q--; }
            cols[q + 1] = v;
          }
        for (int64_t s = 0; s < nt; s++) slot[cols[s]] = (int32_t)s;
        uint16_t *mask = M->row_mask + 16 * t0;
        memset(mask, 0, 16 * (size_t)nt * sizeof *mask);
        for (int32_t i = r0; i < r1; i++) {
          int32_t r;
          const tr_segment *S = seg_of(nseg, seg, i, &r);
          if (!S) continue;
          for (int b = 0; b < S->nblocks; b++)
            for (HYPRE_Int q = S->b[b].i[r]; q < S->b[b].i[r + 1]; q++) {
              int64_t j = blk_col(&S->b[b], q);
              mask[16 * slot[j >> 4] + (i - r0)] |= (uint16_t)(1u << (j & 15));
            }
        }
        /* local copies: stores into idx/val must not force reloads of M's fields */
        uint8_t *restrict rptr = M->row_ptr;
        int64_t *restrict toff = M->tile_off;
        uint8_t *restrict idx = M->idx;
        double *restrict val = M->val;
        int64_t off = ents_in[I];
        for (int64_t s = 0; s < nt; s++) {
          int acc = 0;
          for (int r = 0; r < 16; r++) {
            rptr[16 * (t0 + s) + r] = (uint8_t)acc;
            acc += pop16(mask[16 * s + r]);
          }
          toff[t0 + s] = off;
          off += acc;
        }
        if (off != ents_in[I + 1]) dup = 1; /* a repeated column: masks hold fewer */
        else
          for (int32_t i = r0; i < r1; i++) {
            int32_t r;
            const tr_segment *S = seg_of(nseg, seg, i, &r);
            if (!S) continue;
            const int lr = i - r0;
            for (int b = 0; b < S->nblocks; b++) {
              const tr_block B = S->b[b];
              for (HYPRE_Int q = B.i[r]; q < B.i[r + 1]; q++) {
                int64_t j = blk_col(&B, q);
                int64_t s = slot[j >> 4];
                unsigned c = (unsigned)(j & 15);
                int64_t p = toff[t0 + s] + rptr[16 * (t0 + s) + lr] +
                            pop16(mask[16 * s + lr] & ((1u << c) - 1u));
                idx[p] = (uint8_t)((lr << 4) | c);
                val[p] = (double)B.a[q];
              }
            }
          }
        for (int64_t s = 0; s < nt; s++) slot[cols[s]] = -1;
      }
      free(slot);
    }
  }
  M->tile_off[M->num_tiles] = ents_in[TR];
  free(tiles_in); free(ents_in);
  if (failed) { tilerap_tile_destroy(&M); return TILERAP_ERR_NOMEM; }
  if (dup) { tilerap_tile_destroy(&M); return tiles_via_sorted_csr(m, n, nseg, seg, T); }
  *T = M;
  return TILERAP_SUCCESS;
}
