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

/* bs = 1: G has A's structure, and G + G^T is each entry plus its mirror
 * where every entry's mirror is stored (a structurally symmetric A:
 * meshes and stencils), in one pass that writes G (its first touch by
 * all threads); no transpose.  *asym: some mirror is missing (G is then
 * destroyed and the caller takes the general way). */
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
  int64_t *srp = NULL, *trp = NULL, *cur = NULL;
  int32_t *scol = NULL, *tcol = NULL;
  double *sval = NULL, *tval = NULL, *d = NULL;
  tilerap_csr *out = NULL;
  int err = tr_graph_check(m, rp, col);
  if (err) return err;
  if (bs == 1) {
    int asym = 0;
    if ((err = tr_graph_mirror(m, rp, col, val, flags, &out, &asym))) return err;
    if (!asym) goto scale;
  }

  /* S: the collapsed (or absolute) matrix, mb x mb, int64 row pointers */
  const int64_t annz = rp[m];
  if (!(srp = malloc(((size_t)mb + 1) * sizeof *srp))) goto nomem;
  if (bs == 1) {
    for (int32_t i = 0; i <= m; i++) srp[i] = rp[i];
    if (!(scol = malloc((size_t)(annz ? annz : 1) * sizeof *scol)) ||
        !(sval = malloc((size_t)(annz ? annz : 1) * sizeof *sval)))
      goto nomem;
    if (annz) memcpy(scol, col, (size_t)annz * sizeof *scol);
#pragma omp parallel for schedule(static) if (annz > 65536)
    for (int64_t k = 0; k < annz; k++) sval[k] = (flags & TILERAP_GRAPH_ABS) ? fabs(val[k]) : val[k];
  } else {
    srp[0] = 0;
#pragma omp parallel for schedule(dynamic, 256) if (mb > 4096)
    for (int32_t I = 0; I < mb; I++) srp[I + 1] = tr_graph_collapse_row(I, bs, rp, col, val, NULL, NULL);
    for (int32_t I = 0; I < mb; I++) srp[I + 1] += srp[I];
    if (!(scol = malloc((size_t)(srp[mb] ? srp[mb] : 1) * sizeof *scol)) ||
        !(sval = malloc((size_t)(srp[mb] ? srp[mb] : 1) * sizeof *sval)))
      goto nomem;
#pragma omp parallel for schedule(dynamic, 256) if (mb > 4096)
    for (int32_t I = 0; I < mb; I++) tr_graph_collapse_row(I, bs, rp, col, val, scol + srp[I], sval + srp[I]);
  }
  if (bs > 1) { /* the collapsed S the one-pass way where its structure is symmetric */
    int32_t *srp32 = malloc(((size_t)mb + 1) * sizeof *srp32);
    int asym = 0;
    if (!srp32) goto nomem;
    for (int32_t I = 0; I <= mb; I++) srp32[I] = (int32_t)srp[I]; /* S has at most A's entries */
    err = tr_graph_mirror(mb, srp32, scol, sval, flags, &out, &asym);
    free(srp32);
    if (err) goto cleanup;
    if (!asym) goto scale;
  }
  const int64_t snnz = srp[mb];

  if (flags & TILERAP_GRAPH_SYMMETRIZE) {
    /* S^T by a counting sort in row order: its rows come out ascending */
    if (!(trp = calloc((size_t)mb + 1, sizeof *trp)) || !(cur = malloc(((size_t)mb + 1) * sizeof *cur)) ||
        !(tcol = malloc((size_t)(snnz ? snnz : 1) * sizeof *tcol)) ||
        !(tval = malloc((size_t)(snnz ? snnz : 1) * sizeof *tval)))
      goto nomem;
    for (int64_t k = 0; k < snnz; k++) trp[scol[k] + 1]++;
    for (int32_t i = 0; i < mb; i++) trp[i + 1] += trp[i];
    memcpy(cur, trp, ((size_t)mb + 1) * sizeof *cur);
    for (int32_t i = 0; i < mb; i++)
      for (int64_t k = srp[i]; k < srp[i + 1]; k++) {
        const int64_t at = cur[scol[k]]++;
        tcol[at] = i;
        tval[at] = sval[k];
      }
    /* the union, counted then written */
    int64_t *grp = cur; /* reused: row lengths, then row pointers */
    grp[0] = 0;
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
  } else {
    if ((err = tilerap_csr_create(mb, mb, snnz, &out))) goto cleanup;
    memcpy(out->rowptr, srp, ((size_t)mb + 1) * sizeof *srp);
    if (snnz) {
      memcpy(out->colidx, scol, (size_t)snnz * sizeof *scol);
      memcpy(out->val, sval, (size_t)snnz * sizeof *sval);
    }
  }

scale:
  if (flags & TILERAP_GRAPH_SCALE) {
    if (!(d = malloc((size_t)(mb ? mb : 1) * sizeof *d))) goto nomem;
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
  free(srp); free(scol); free(sval); free(trp); free(cur); free(tcol); free(tval); free(d);
  return err;
}
