/* Model problems: structured-grid Poisson matrices and smoothed-aggregation
 * prolongators, generated directly in CSR (columns ascending). */
#include "tile_internal.h"
#include "tilerap_model.h"
#include <strings.h>

int tilerap_stencil_parse(const char *name, tilerap_stencil *s)
{
  static const char *names[] = {"p2d5", "p2d9", "p3d7", "p3d27"};
  if (!name || !s) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_stencil_parse: NULL argument");
  for (int i = 0; i < 4; i++)
    if (!strcasecmp(name, names[i])) { *s = (tilerap_stencil)i; return TILERAP_SUCCESS; }
  return tilerap_set_error(TILERAP_ERR_INVALID, "unknown stencil '%s' (p2d5, p2d9, p3d7, p3d27)", name);
}

const char *tilerap_stencil_name(tilerap_stencil s)
{
  static const char *names[] = {"p2d5", "p2d9", "p3d7", "p3d27"};
  return (unsigned)s < 4 ? names[s] : "unknown";
}

/* Offsets of the stencil in lexicographic order: full stencils take every
 * offset in {-1,0,1}^d, 5/7-point ones those with at most one non-zero. */
static int tr_stencil_offsets(tilerap_stencil s, int off[27][3], int *ndim)
{
  int d = (s == TILERAP_P2D5 || s == TILERAP_P2D9) ? 2 : 3;
  int full = (s == TILERAP_P2D9 || s == TILERAP_P3D27);
  int k = 0;
  for (int a = -1; a <= 1; a++)
    for (int b = -1; b <= 1; b++)
      for (int c = (d == 3 ? -1 : 0); c <= (d == 3 ? 1 : 0); c++) {
        int nz = (a != 0) + (b != 0) + (c != 0);
        if (!full && nz > 1) continue;
        off[k][0] = a; off[k][1] = b; off[k][2] = c;
        k++;
      }
  *ndim = d;
  return k;
}

int tilerap_model_poisson(tilerap_stencil s, int32_t n, tilerap_csr **Aout, int32_t dims[3], int *ndim)
{
  if (!Aout || !dims || !ndim) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_model_poisson: NULL output");
  *Aout = NULL;
  if ((unsigned)s > TILERAP_P3D27) return tilerap_set_error(TILERAP_ERR_INVALID, "unknown stencil %d", (int)s);
  int off[27][3], d;
  int npts = tr_stencil_offsets(s, off, &d);
  int64_t N = d == 2 ? (int64_t)n * n : (int64_t)n * n * n;
  if (n < 1 || N > INT32_MAX) return tilerap_set_error(TILERAP_ERR_SIZE, "grid size %d invalid for %dD", n, d);
  int64_t n2 = d == 3 ? (int64_t)n * n : n, n3 = d == 3 ? n : 1;
  /* dims as (d0, d1[, d2]) with the last index fastest */
  tilerap_csr *A = NULL;
  int err = tilerap_csr_create((int32_t)N, (int32_t)N, N * npts, &A);
  if (err) return err;
  double diag = (double)(npts - 1);
  if (s == TILERAP_P2D5) diag = 4.0;
  if (s == TILERAP_P3D7) diag = 6.0;
  /* row lengths first (boundary rows are shorter), then fill */
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; i++) {
    int64_t x = d == 3 ? i / n2 : i / n, y = d == 3 ? (i / n3) % n : i % n, z = d == 3 ? i % n : 0;
    int64_t cnt = 0;
    for (int k = 0; k < npts; k++) {
      int64_t xx = x + off[k][0], yy = y + off[k][1], zz = z + off[k][2];
      if (xx < 0 || xx >= n || yy < 0 || yy >= n || (d == 3 && (zz < 0 || zz >= n))) continue;
      cnt++;
    }
    A->rowptr[i + 1] = cnt;
  }
  for (int64_t i = 0; i < N; i++) A->rowptr[i + 1] += A->rowptr[i];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; i++) {
    int64_t x = d == 3 ? i / n2 : i / n, y = d == 3 ? (i / n3) % n : i % n, z = d == 3 ? i % n : 0;
    int64_t q = A->rowptr[i];
    for (int k = 0; k < npts; k++) {
      int64_t xx = x + off[k][0], yy = y + off[k][1], zz = z + off[k][2];
      if (xx < 0 || xx >= n || yy < 0 || yy >= n || (d == 3 && (zz < 0 || zz >= n))) continue;
      int64_t j = d == 3 ? (xx * n + yy) * n + zz : xx * n + yy;
      A->colidx[q] = (int32_t)j;
      A->val[q] = (j == i) ? diag : -1.0;
      q++;
    }
  }
  A->nnz = A->rowptr[N];
  dims[0] = n; dims[1] = n; dims[2] = d == 3 ? n : 1;
  *ndim = d;
  *Aout = A;
  return TILERAP_SUCCESS;
}

/* Aggregate of grid point i: its grid coordinates divided by 3. */
static inline int32_t tr_aggregate(int64_t i, int ndim, const int32_t dims[3], const int32_t cd[3])
{
  if (ndim == 2) {
    int64_t x = i / dims[1], y = i % dims[1];
    return (int32_t)((x / 3) * cd[1] + y / 3);
  }
  int64_t x = i / ((int64_t)dims[1] * dims[2]), y = (i / dims[2]) % dims[1], z = i % dims[2];
  return (int32_t)(((x / 3) * cd[1] + y / 3) * cd[2] + z / 3);
}

/* Row i of P = T - omega D^-1 A T into (cols, vals), sorted, exact zeros
 * dropped; returns its length.  A row of A touches at most 27 aggregates. */
static int tr_prolongator_row(const tilerap_csr *A, int64_t i, int ndim, const int32_t dims[3], const int32_t cd[3],
                              double omega, int32_t *cols, double *vals, int cap)
{
  int len = 0;
  double dii = 0.0;
  for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
    if (A->colidx[p] == i) dii = A->val[p];
  if (dii == 0.0) return -1;
  int32_t own = tr_aggregate(i, ndim, dims, cd);
  for (int64_t p = A->rowptr[i]; p <= A->rowptr[i + 1]; p++) {
    int32_t g;
    double v;
    if (p == A->rowptr[i + 1]) { g = own; v = 1.0; } /* T's own entry */
    else { g = tr_aggregate(A->colidx[p], ndim, dims, cd); v = -omega * A->val[p] / dii; }
    int k = 0;
    while (k < len && cols[k] != g) k++;
    if (k == len) {
      if (len == cap) return -2;
      cols[len] = g; vals[len] = 0.0; len++;
    }
    vals[k] += v;
  }
  /* insertion sort by column, then drop exact zeros */
  for (int a = 1; a < len; a++) {
    int32_t c = cols[a]; double v = vals[a]; int b = a - 1;
    while (b >= 0 && cols[b] > c) { cols[b + 1] = cols[b]; vals[b + 1] = vals[b]; b--; }
    cols[b + 1] = c; vals[b + 1] = v;
  }
  int out = 0;
  for (int a = 0; a < len; a++)
    if (vals[a] != 0.0) { cols[out] = cols[a]; vals[out] = vals[a]; out++; }
  return out;
}

int tilerap_model_prolongator(const tilerap_csr *A, int ndim, const int32_t dims[3], double omega, tilerap_csr **Pout,
                              int32_t cdims[3])
{
  if (!A || !dims || !Pout || !cdims) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_model_prolongator: NULL argument");
  *Pout = NULL;
  if (ndim != 2 && ndim != 3) return tilerap_set_error(TILERAP_ERR_INVALID, "grid dimension %d (2 or 3)", ndim);
  int64_t npts = (int64_t)dims[0] * dims[1] * (ndim == 3 ? dims[2] : 1);
  if (A->m != A->n || A->m != npts)
    return tilerap_set_error(TILERAP_ERR_SIZE, "A is %d x %d, grid has %lld points", A->m, A->n, (long long)npts);
  int32_t cd[3] = {(dims[0] + 2) / 3, (dims[1] + 2) / 3, ndim == 3 ? (dims[2] + 2) / 3 : 1};
  int64_t nc = (int64_t)cd[0] * cd[1] * cd[2];
  enum { CAP = 64 };
  int64_t *len = tilerap_host_calloc((size_t)A->m + 1, sizeof(int64_t));
  if (!len) return TILERAP_ERR_NOMEM;
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad)
  for (int64_t i = 0; i < A->m; i++) {
    int32_t c[CAP]; double v[CAP];
    int l = tr_prolongator_row(A, i, ndim, dims, cd, omega, c, v, CAP);
    if (l < 0) bad = 1;
    else len[i + 1] = l;
  }
  if (bad) { free(len); return tilerap_set_error(TILERAP_ERR_INVALID, "prolongator: a row of A has no diagonal or spans too many aggregates"); }
  for (int64_t i = 0; i < A->m; i++) len[i + 1] += len[i];
  tilerap_csr *P = NULL;
  int err = tilerap_csr_create(A->m, (int32_t)nc, len[A->m], &P);
  if (err) { free(len); return err; }
  memcpy(P->rowptr, len, ((size_t)A->m + 1) * sizeof(int64_t));
  free(len);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < A->m; i++) {
    int32_t c[CAP]; double v[CAP];
    int l = tr_prolongator_row(A, i, ndim, dims, cd, omega, c, v, CAP);
    memcpy(P->colidx + P->rowptr[i], c, (size_t)l * sizeof(int32_t));
    memcpy(P->val + P->rowptr[i], v, (size_t)l * sizeof(double));
  }
  cdims[0] = cd[0]; cdims[1] = cd[1]; cdims[2] = cd[2];
  *Pout = P;
  return TILERAP_SUCCESS;
}
