/* The strength graph of aggregation AMG on the CPU engine
 * (tilerap_csr_graph_i32, tilerap.h): the block collapse, G + G^T and the
 * diagonal scaling as whole-array passes with row-parallel loops (a
 * structurally symmetric scalar A, the common case, in one pass that adds
 * each entry's mirror, with no transpose and no copy of A), in
 * PETSc's order of operations so that the coarsening that reads the graph
 * makes the same aggregates.  PETSc's own AIJ version transposes, adds
 * with a new preallocation and scales through vectors: several passes
 * over the matrix and an insertion per entry. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_rows.h"
#include "spgemm_cpu.h"
#include "tile_internal.h"

/* Input checks: row pointers from 0, not decreasing; columns in range and
 * strictly increasing within rows (rows checked in parallel; the first bad
 * row is reported). */
static int tr_graph_check(int32_t m, const int32_t *rp, const int32_t *col)
{
  if (rp[0] != 0) return tilerap_set_error(TILERAP_ERR_INVALID, "graph: row pointers do not start at 0");
  int32_t bad_rp = INT32_MAX, bad_range = INT32_MAX, bad_order = INT32_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad_rp) if (m > 16384)
  for (int32_t i = 0; i < m; i++)
    if (rp[i + 1] < rp[i] && i < bad_rp) bad_rp = i;
  if (bad_rp != INT32_MAX) return tilerap_set_error(TILERAP_ERR_INVALID, "graph: row pointers decrease at row %d", bad_rp);
#pragma omp parallel for schedule(static) reduction(min : bad_range, bad_order) if (m > 16384)
  for (int32_t i = 0; i < m; i++)
    for (int32_t k = rp[i]; k < rp[i + 1]; k++) {
      if ((col[k] < 0 || col[k] >= m) && i < bad_range) bad_range = i;
      if (k > rp[i] && col[k] <= col[k - 1] && i < bad_order) bad_order = i;
    }
  if (bad_range != INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_RANGE, "graph: a column of row %d outside 0..%d", bad_range, m - 1);
  if (bad_order != INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_UNSORTED, "graph: columns of row %d not strictly increasing", bad_order);
  return TILERAP_SUCCESS;
}

/* position of column j in row i (sorted), -1 if not stored */
static int64_t tr_find(const int32_t *rp, const int32_t *col, int32_t i, int32_t j)
{
  int32_t lo = rp[i], hi = rp[i + 1];
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (col[mid] < j) lo = mid + 1;
    else hi = mid;
  }
  return lo < rp[i + 1] && col[lo] == j ? lo : -1;
}

/* Position of the mirror (j,i) of entry k = (i,j) in row j, -1 if not
 * stored.  First guess: the offset from the row's end that k has from its
 * row's start, where a symmetric stencil's mirror sits; else a search. */
static int64_t tr_mirror(const int32_t *rp, const int32_t *col, int32_t i, int32_t j, int32_t k)
{
  const int32_t g = rp[j + 1] - 1 - (k - rp[i]);
  if (g >= rp[j] && g < rp[j + 1] && col[g] == i) return g;
  return tr_find(rp, col, j, i);
}

/* G from S (A, or its block collapse): S's structure, and G + G^T is each
 * entry plus its mirror where every entry's mirror is stored (a
 * structurally symmetric S: meshes, stencils, their block collapses), in
 * one pass that writes G (its first touch by all threads); no transpose.
 * Without TILERAP_GRAPH_SYMMETRIZE always.  *asym: some mirror is missing
 * (G is then destroyed and the caller takes the general way). */
static int tr_graph_mirror(int32_t m, const int32_t *rp, const int32_t *col, const double *val, unsigned flags,
                           tilerap_csr **G, int *asym)
{
  const int absval = (flags & TILERAP_GRAPH_ABS) != 0, sym = (flags & TILERAP_GRAPH_SYMMETRIZE) != 0;
  int missing = 0;
  int err = tilerap_csr_create(m, m, rp[m], G);
  if (err) return err;
  tilerap_csr *out = *G;
#pragma omp parallel for schedule(dynamic, 1024) reduction(| : missing) if (m > 16384)
  for (int32_t i = 0; i < m; i++) {
    out->rowptr[i + 1] = rp[i + 1];
    for (int32_t k = rp[i]; k < rp[i + 1]; k++) {
      const double a = absval ? fabs(val[k]) : val[k];
      out->colidx[k] = col[k];
      out->val[k] = a;
      if (!sym || missing) continue;
      const int64_t t = tr_mirror(rp, col, i, col[k], k);
      if (t < 0) missing = 1;
      else out->val[k] = a + (absval ? fabs(val[t]) : val[t]);
    }
  }
  *asym = missing;
  if (missing) tilerap_csr_destroy(G);
  return TILERAP_SUCCESS;
}

int tr_cpu_csr_graph(int32_t m, int32_t bs, const int32_t *rp, const int32_t *col, const double *val,
                     unsigned flags, tilerap_csr **G)
{
  const int32_t mb = m / bs;
  int32_t *srp_own = NULL, *scol_own = NULL;
  int64_t *trp = NULL, *grp = NULL;
  int32_t *tcol = NULL;
  double *sval_own = NULL, *tval = NULL, *d = NULL;
  tilerap_csr *out = NULL;
  int asym = 0;
  int err = tr_graph_check(m, rp, col);
  if (err) return err;

  /* S: A itself for bs = 1 (|.| applied where read), else the block
   * collapse (32-bit row pointers: it has at most A's entries) */
  const int32_t *srp = rp, *scol = col;
  const double *sval = val;
  if (bs > 1) {
    if (!(srp_own = malloc(((size_t)mb + 1) * sizeof *srp_own))) goto nomem;
    srp_own[0] = 0;
#pragma omp parallel for schedule(dynamic, 256) if (mb > 4096)
    for (int32_t I = 0; I < mb; I++) srp_own[I + 1] = (int32_t)tr_graph_collapse_row(I, bs, rp, col, val, NULL, NULL);
    for (int32_t I = 0; I < mb; I++) srp_own[I + 1] += srp_own[I];
    const size_t sn = (size_t)srp_own[mb] + 1;
    if (!(scol_own = malloc(sn * sizeof *scol_own)) || !(sval_own = malloc(sn * sizeof *sval_own))) goto nomem;
#pragma omp parallel for schedule(dynamic, 256) if (mb > 4096)
    for (int32_t I = 0; I < mb; I++)
      tr_graph_collapse_row(I, bs, rp, col, val, scol_own + srp_own[I], sval_own + srp_own[I]);
    srp = srp_own;
    scol = scol_own;
    sval = sval_own;
  }
  /* without G + G^T, or with S structurally symmetric: one pass */
  if ((err = tr_graph_mirror(mb, srp, scol, sval, flags, &out, &asym))) goto cleanup;
  if (!asym) goto scale;

  /* G + G^T the general way: |S| (bs = 1 with |.|), S^T by a counting sort
   * in row order (its rows come out ascending), the union per row */
  const int64_t snnz = srp[mb];
  if (bs == 1 && (flags & TILERAP_GRAPH_ABS)) {
    if (!(sval_own = malloc(((size_t)snnz + 1) * sizeof *sval_own))) goto nomem;
#pragma omp parallel for schedule(static) if (snnz > 65536)
    for (int64_t k = 0; k < snnz; k++) sval_own[k] = fabs(val[k]);
    sval = sval_own;
  }
  if (!(trp = calloc((size_t)mb + 1, sizeof *trp)) || !(grp = malloc(((size_t)mb + 1) * sizeof *grp)) ||
      !(tcol = malloc(((size_t)snnz + 1) * sizeof *tcol)) || !(tval = malloc(((size_t)snnz + 1) * sizeof *tval)))
    goto nomem;
  for (int64_t k = 0; k < snnz; k++) trp[scol[k] + 1]++;
  for (int32_t i = 0; i < mb; i++) trp[i + 1] += trp[i];
  memcpy(grp, trp, ((size_t)mb + 1) * sizeof *grp); /* cursors first */
  for (int32_t i = 0; i < mb; i++)
    for (int64_t k = srp[i]; k < srp[i + 1]; k++) {
      const int64_t at = grp[scol[k]]++;
      tcol[at] = i;
      tval[at] = sval[k];
    }
  grp[0] = 0; /* then row lengths, then G's row pointers */
#pragma omp parallel for schedule(dynamic, 1024) if (mb > 4096)
  for (int32_t i = 0; i < mb; i++)
    grp[i + 1] = tr_graph_union_row(scol + srp[i], sval + srp[i], srp[i + 1] - srp[i], tcol + trp[i], tval + trp[i],
                                    trp[i + 1] - trp[i], NULL, NULL);
  for (int32_t i = 0; i < mb; i++) grp[i + 1] += grp[i];
  if (grp[mb] > INT32_MAX) {
    err = tilerap_set_error(TILERAP_ERR_OVERFLOW, "graph: %lld entries exceed 32-bit row pointers", (long long)grp[mb]);
    goto cleanup;
  }
  if ((err = tilerap_csr_create(mb, mb, grp[mb], &out))) goto cleanup;
  memcpy(out->rowptr, grp, ((size_t)mb + 1) * sizeof *grp);
#pragma omp parallel for schedule(dynamic, 1024) if (mb > 4096)
  for (int32_t i = 0; i < mb; i++)
    tr_graph_union_row(scol + srp[i], sval + srp[i], srp[i + 1] - srp[i], tcol + trp[i], tval + trp[i],
                       trp[i + 1] - trp[i], out->colidx + out->rowptr[i], out->val + out->rowptr[i]);

scale:
  if (flags & TILERAP_GRAPH_SCALE) {
    if (!(d = malloc(((size_t)mb + 1) * sizeof *d))) goto nomem;
#pragma omp parallel for schedule(static) if (mb > 4096)
    for (int32_t i = 0; i < mb; i++) {
      double g = 0;
      for (int64_t k = out->rowptr[i]; k < out->rowptr[i + 1]; k++)
        if (out->colidx[k] == i) g = out->val[k];
      d[i] = tr_graph_scaling(g);
    }
#pragma omp parallel for schedule(static) if (mb > 4096)
    for (int32_t i = 0; i < mb; i++)
      for (int64_t k = out->rowptr[i]; k < out->rowptr[i + 1]; k++) {
        double v = out->val[k] * d[i];
        out->val[k] = v * d[out->colidx[k]];
      }
  }
  *G = out;
  out = NULL;
  goto cleanup;
nomem:
  err = tilerap_set_error(TILERAP_ERR_NOMEM, "graph: out of host memory");
cleanup:
  tilerap_csr_destroy(&out);
  free(srp_own); free(scol_own); free(sval_own); free(trp); free(grp); free(tcol); free(tval); free(d);
  return err;
}
