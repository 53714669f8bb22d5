/* Strength graphs (tilerap_csr_graph_i32 and, with a GPU, its device form)
 * against a reference written here from the definition: block collapse
 * by lookups per entry, G + G^T by searching each entry's mirror, the
 * scaling from the stored diagonal.  Every flag combination on irregular
 * matrices (random-order meshes, power-law, an unsymmetric random matrix,
 * a dense row, 3x3 blocks collapsed), and hand-made ones: empty rows, a
 * missing and a zero diagonal, stored zeros, -0.0, blocks that are not
 * dense, an empty matrix.  Values must agree bit for bit (the order of
 * operations is specified).  Then bad input: unsorted or repeated
 * columns, a column out of range, bad row pointers, bs not dividing m,
 * unknown flags, NULL arguments. */
#include "tap.h"
#include "tilerap_device.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int32_t m;
  int32_t *rp, *col;
  double *val;
} csr32;

static csr32 to32(const tilerap_csr *A)
{
  csr32 c = {A->m, malloc(((size_t)A->m + 1) * sizeof(int32_t)), malloc((size_t)(A->nnz + 1) * sizeof(int32_t)),
             malloc((size_t)(A->nnz + 1) * sizeof(double))};
  for (int32_t i = 0; i <= A->m; i++) c.rp[i] = (int32_t)A->rowptr[i];
  memcpy(c.col, A->colidx, (size_t)A->nnz * sizeof(int32_t));
  memcpy(c.val, A->val, (size_t)A->nnz * sizeof(double));
  return c;
}
static void free32(csr32 *c) { free(c->rp); free(c->col); free(c->val); }

/* position of column j in row i of X, -1 if not stored */
static int64_t find(const tilerap_csr *X, int32_t i, int32_t j)
{
  for (int64_t k = X->rowptr[i]; k < X->rowptr[i + 1]; k++)
    if (X->colidx[k] == j) return k;
  return -1;
}

static int cmp_i32(const void *a, const void *b)
{
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* the definition, slowly */
static tilerap_csr *reference(const csr32 *A, int32_t bs, unsigned flags)
{
  const int32_t mb = A->m / bs;
  tilerap_csr *S, *G;
  int32_t *cols = malloc((size_t)(A->rp[A->m] + 1) * sizeof(int32_t));
  /* S: block columns of each block row, then the sums in the stated order */
  int64_t nnz = 0;
  tilerap_csr_create(mb, mb, A->rp[A->m], &S);
  for (int32_t I = 0; I < mb; I++) {
    int32_t n = 0;
    for (int32_t k = A->rp[I * bs]; k < A->rp[I * bs + bs]; k++) cols[n++] = A->col[k] / bs;
    qsort(cols, (size_t)n, sizeof *cols, cmp_i32);
    for (int32_t q = 0; q < n; q++)
      if (q == 0 || cols[q] != cols[q - 1]) {
        const int32_t J = cols[q];
        double s = 0;
        int first = 1;
        for (int32_t r = 0; r < bs; r++)
          for (int32_t k = A->rp[I * bs + r]; k < A->rp[I * bs + r + 1]; k++)
            if (A->col[k] / bs == J) {
              double v = A->val[k];
              if (bs > 1 || (flags & TILERAP_GRAPH_ABS)) v = fabs(v);
              if (bs == 1 && first) s = v; /* no 0 + v: keeps -0.0 */
              else s += v;
              first = 0;
            }
        S->colidx[nnz] = J;
        S->val[nnz++] = s;
      }
    S->rowptr[I + 1] = nnz;
  }
  S->nnz = nnz;
  if (!(flags & TILERAP_GRAPH_SYMMETRIZE)) G = S;
  else {
    tilerap_csr_create(mb, mb, 2 * nnz, &G);
    int64_t g = 0;
    for (int32_t i = 0; i < mb; i++) {
      int32_t n = 0;
      int32_t *c = malloc((size_t)(2 * nnz + 1) * sizeof(int32_t));
      for (int64_t k = S->rowptr[i]; k < S->rowptr[i + 1]; k++) c[n++] = S->colidx[k];
      for (int32_t j = 0; j < mb; j++)
        if (find(S, j, i) >= 0) c[n++] = j;
      qsort(c, (size_t)n, sizeof *c, cmp_i32);
      for (int32_t q = 0; q < n; q++)
        if (q == 0 || c[q] != c[q - 1]) {
          const int64_t a = find(S, i, c[q]), b = find(S, c[q], i);
          G->colidx[g] = c[q];
          G->val[g++] = a >= 0 && b >= 0 ? S->val[a] + S->val[b] : a >= 0 ? S->val[a] : S->val[b];
        }
      G->rowptr[i + 1] = g;
      free(c);
    }
    G->nnz = g;
    tilerap_csr_destroy(&S);
  }
  if (flags & TILERAP_GRAPH_SCALE) {
    double *d = calloc((size_t)mb + 1, sizeof *d);
    for (int32_t i = 0; i < mb; i++) {
      const int64_t k = find(G, i, i);
      const double x = k >= 0 ? G->val[k] : 0.0;
      const double r = x != 0 ? 1.0 / x : 0.0;
      d[i] = sqrt(fabs(r));
    }
    for (int32_t i = 0; i < mb; i++)
      for (int64_t k = G->rowptr[i]; k < G->rowptr[i + 1]; k++) {
        G->val[k] *= d[i];
        G->val[k] *= d[G->colidx[k]];
      }
    free(d);
  }
  free(cols);
  return G;
}

static int same_bits(const tilerap_csr *G, const int32_t *rp, const int32_t *col, const double *val, int64_t nnz)
{
  if (G->nnz != nnz) return 0;
  for (int32_t i = 0; i <= G->m; i++)
    if (G->rowptr[i] != rp[i]) return 0;
  return memcmp(G->colidx, col, (size_t)nnz * sizeof *col) == 0 && memcmp(G->val, val, (size_t)nnz * sizeof *val) == 0;
}
static int same_csr(const tilerap_csr *G, const tilerap_csr *R)
{
  if (G->m != R->m || G->nnz != R->nnz) return 0;
  if (memcmp(G->rowptr, R->rowptr, ((size_t)G->m + 1) * sizeof *G->rowptr)) return 0;
  return memcmp(G->colidx, R->colidx, (size_t)G->nnz * sizeof *G->colidx) == 0 &&
         memcmp(G->val, R->val, (size_t)G->nnz * sizeof *G->val) == 0;
}

static int have_gpu;

/* the device form on uploaded arrays, downloaded and compared with H */
static int device_matches(const csr32 *A, int32_t bs, unsigned flags, const tilerap_csr *H)
{
  const size_t nnz = (size_t)A->rp[A->m];
  int32_t *drp = NULL, *dcol = NULL, *grp = NULL, *gcol = NULL;
  double *dval = NULL, *gval = NULL;
  int64_t gnnz = -1;
  int ok = 0;
  if (tilerap_device_malloc(((size_t)A->m + 1) * 4, (void **)&drp) ||
      tilerap_device_malloc(nnz * 4 + 4, (void **)&dcol) || tilerap_device_malloc(nnz * 8 + 8, (void **)&dval))
    goto done;
  tilerap_memcpy(drp, TILERAP_MEM_DEVICE, A->rp, TILERAP_MEM_HOST, ((size_t)A->m + 1) * 4);
  tilerap_memcpy(dcol, TILERAP_MEM_DEVICE, A->col, TILERAP_MEM_HOST, nnz * 4);
  tilerap_memcpy(dval, TILERAP_MEM_DEVICE, A->val, TILERAP_MEM_HOST, nnz * 8);
  if (tilerap_csr_graph_device_i32(A->m, bs, drp, dcol, dval, flags, &grp, &gcol, &gval, &gnnz)) goto done;
  {
    const int32_t mb = A->m / bs;
    int32_t *rp = malloc(((size_t)mb + 1) * 4), *col = malloc((size_t)gnnz * 4 + 4);
    double *val = malloc((size_t)gnnz * 8 + 8);
    tilerap_memcpy(rp, TILERAP_MEM_HOST, grp, TILERAP_MEM_DEVICE, ((size_t)mb + 1) * 4);
    if (gnnz) {
      tilerap_memcpy(col, TILERAP_MEM_HOST, gcol, TILERAP_MEM_DEVICE, (size_t)gnnz * 4);
      tilerap_memcpy(val, TILERAP_MEM_HOST, gval, TILERAP_MEM_DEVICE, (size_t)gnnz * 8);
    }
    ok = same_bits(H, rp, col, val, gnnz);
    free(rp); free(col); free(val);
  }
done:
  tilerap_device_free(drp); tilerap_device_free(dcol); tilerap_device_free(dval);
  tilerap_device_free(grp); tilerap_device_free(gcol); tilerap_device_free(gval);
  return ok;
}

static void check_all_flags(const char *name, const csr32 *A, int32_t bs)
{
  for (unsigned flags = 0; flags < 8; flags++) {
    tilerap_csr *G = NULL, *R = reference(A, bs, flags);
    const int err = tilerap_csr_graph_i32(A->m, bs, A->rp, A->col, A->val, flags, &G);
    tap_ok(!err && G && same_csr(G, R), "%s bs %d flags %u: CPU graph equals the definition bit for bit (%lld entries)",
           name, bs, flags, (long long)R->nnz);
    if (have_gpu && G)
      tap_ok(device_matches(A, bs, flags, G), "%s bs %d flags %u: device graph equals the CPU one bit for bit", name,
             bs, flags);
    tilerap_csr_destroy(&G);
    tilerap_csr_destroy(&R);
  }
}

/* the model matrices are structurally symmetric (the one-pass way); with
 * unsym, every third row loses the entries right of its diagonal, so G +
 * G^T takes the transpose and merge */
static void model_case_sym(const char *spec, int32_t bs, int unsym)
{
  tilerap_csr *A = NULL;
  char name[96];
  if (tilerap_model_irregular(spec, 7, &A)) {
    tap_ok(0, "%s: model", spec);
    return;
  }
  csr32 a = to32(A);
  if (unsym) {
    int32_t q = 0;
    for (int32_t i = 0; i < a.m; i++) {
      const int32_t b = a.rp[i], e = a.rp[i + 1];
      a.rp[i] = q;
      for (int32_t k = b; k < e; k++)
        if (i % 3 != 0 || a.col[k] <= i) {
          a.col[q] = a.col[k];
          a.val[q++] = a.val[k];
        }
    }
    a.rp[a.m] = q;
  }
  snprintf(name, sizeof name, "%s%s", spec, unsym ? " (rows 0 mod 3 cut right of the diagonal)" : "");
  check_all_flags(name, &a, bs);
  free32(&a);
  tilerap_csr_destroy(&A);
}
static void model_case(const char *spec, int32_t bs) { model_case_sym(spec, bs, 0); }

/* small hand-made matrices: 7 x 7 with an empty row (2), no diagonal in
 * row 4, a zero diagonal in row 5, stored zeros, -0.0, unsymmetric
 * couplings, negative values */
static void small_cases(void)
{
  int32_t rp[] = {0, 3, 5, 5, 8, 10, 13, 15};
  int32_t col[] = {0, 3, 6, 1, 5, 0, 3, 4, 0, 6, 1, 5, 6, 2, 6};
  double val[] = {4, -1, 0.5, 3, -0.0, -2, 5, 0, 1e-3, -7, 2, 0, 3, -1, 9};
  csr32 A = {7, rp, col, val};
  check_all_flags("hand 7x7", &A, 1);
  /* 8 x 8 in 2 x 2 blocks that are not dense, one empty block row */
  int32_t rp2[] = {0, 2, 3, 3, 3, 6, 7, 9, 10};
  int32_t col2[] = {0, 5, 7, 1, 4, 6, 3, 0, 7, 6};
  double val2[] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10};
  csr32 B = {8, rp2, col2, val2};
  check_all_flags("hand 8x8", &B, 2);
  int32_t rp0[] = {0};
  tilerap_csr *G = NULL;
  tap_ok(!tilerap_csr_graph_i32(0, 1, rp0, NULL, NULL, 7, &G) && G && G->m == 0 && G->nnz == 0,
         "empty matrix: empty graph");
  tilerap_csr_destroy(&G);
}

static void bad_input(void)
{
  int32_t rp[] = {0, 2, 4, 5};
  int32_t col[] = {0, 1, 0, 2, 2};
  double val[] = {1, 2, 3, 4, 5};
  tilerap_csr *G = NULL;
  int32_t ucol[] = {1, 0, 0, 2, 2};
  tap_ok(tilerap_csr_graph_i32(3, 1, rp, ucol, val, 7, &G) == TILERAP_ERR_UNSORTED && !G, "unsorted columns refused");
  int32_t dcol[] = {0, 0, 0, 2, 2};
  tap_ok(tilerap_csr_graph_i32(3, 1, rp, dcol, val, 7, &G) == TILERAP_ERR_UNSORTED && !G, "repeated column refused");
  int32_t rcol[] = {0, 1, 0, 2, 3};
  tap_ok(tilerap_csr_graph_i32(3, 1, rp, rcol, val, 7, &G) == TILERAP_ERR_RANGE && !G, "column out of range refused");
  int32_t brp[] = {0, 3, 2, 5};
  tap_ok(tilerap_csr_graph_i32(3, 1, brp, col, val, 7, &G) == TILERAP_ERR_INVALID && !G, "decreasing row pointers refused");
  int32_t zrp[] = {1, 2, 4, 5};
  tap_ok(tilerap_csr_graph_i32(3, 1, zrp, col, val, 7, &G) == TILERAP_ERR_INVALID && !G, "row pointers not from 0 refused");
  tap_ok(tilerap_csr_graph_i32(3, 2, rp, col, val, 7, &G) == TILERAP_ERR_SIZE && !G, "bs not dividing m refused");
  tap_ok(tilerap_csr_graph_i32(3, 0, rp, col, val, 7, &G) == TILERAP_ERR_SIZE && !G, "bs 0 refused");
  tap_ok(tilerap_csr_graph_i32(-3, 1, rp, col, val, 7, &G) == TILERAP_ERR_SIZE && !G, "negative m refused");
  {
    int32_t rp130[131] = {0};
    tap_ok(tilerap_csr_graph_i32(130, 65, rp130, NULL, NULL, 7, &G) == TILERAP_ERR_SIZE && !G, "bs 65 refused");
    tap_ok(tilerap_csr_graph_i32(128, 64, rp130, NULL, NULL, 7, &G) == 0 && G && G->m == 2 && G->nnz == 0,
           "bs 64 on a 128 x 128 matrix without entries: a 2 x 2 graph without entries");
    tilerap_csr_destroy(&G);
  }
  tap_ok(tilerap_csr_graph_i32(3, 1, rp, col, val, 8, &G) == TILERAP_ERR_INVALID && !G, "unknown flag refused");
  tap_ok(tilerap_csr_graph_i32(3, 1, NULL, col, val, 7, &G) == TILERAP_ERR_NULL && !G, "NULL row pointers refused");
  tap_ok(tilerap_csr_graph_i32(3, 1, rp, NULL, val, 7, &G) == TILERAP_ERR_NULL && !G, "NULL columns refused");
  tap_ok(tilerap_csr_graph_i32(3, 1, rp, col, val, 7, NULL) == TILERAP_ERR_NULL, "NULL output refused");
  int32_t *grp = NULL, *gcol = NULL;
  double *gval = NULL;
  int64_t gnnz = -1;
  if (!have_gpu) {
    tap_ok(tilerap_csr_graph_device_i32(3, 1, rp, col, val, 7, &grp, &gcol, &gval, &gnnz) == TILERAP_ERR_ENGINE &&
               !grp && !gcol && !gval,
           "device graph without a GPU: TILERAP_ERR_ENGINE, nothing allocated");
    return;
  }
  /* the device checks, on device copies of the bad arrays */
  struct { const int32_t *rp, *col; int want; const char *what; } bad[] = {
    {rp, ucol, TILERAP_ERR_UNSORTED, "unsorted columns"}, {rp, dcol, TILERAP_ERR_UNSORTED, "repeated column"},
    {rp, rcol, TILERAP_ERR_RANGE, "column out of range"}, {brp, col, TILERAP_ERR_INVALID, "decreasing row pointers"},
    {zrp, col, TILERAP_ERR_INVALID, "row pointers not from 0"}};
  int32_t *drp = NULL, *dcol_ = NULL;
  double *dval = NULL;
  tilerap_device_malloc(16, (void **)&drp);
  tilerap_device_malloc(20, (void **)&dcol_);
  tilerap_device_malloc(40, (void **)&dval);
  tilerap_memcpy(dval, TILERAP_MEM_DEVICE, val, TILERAP_MEM_HOST, 40);
  for (size_t t = 0; t < sizeof bad / sizeof bad[0]; t++) {
    tilerap_memcpy(drp, TILERAP_MEM_DEVICE, bad[t].rp, TILERAP_MEM_HOST, 16);
    tilerap_memcpy(dcol_, TILERAP_MEM_DEVICE, bad[t].col, TILERAP_MEM_HOST, 20);
    const int err = tilerap_csr_graph_device_i32(3, 1, drp, dcol_, dval, 7, &grp, &gcol, &gval, &gnnz);
    tap_ok(err == bad[t].want && !grp && !gcol && !gval, "device: %s refused (%d), nothing allocated", bad[t].what, err);
  }
  tap_ok(tilerap_csr_graph_device_i32(3, 2, drp, dcol_, dval, 7, &grp, &gcol, &gval, &gnnz) == TILERAP_ERR_SIZE,
         "device: bs not dividing m refused");
  {
    /* 5 rows without entries, no column or value arrays */
    const int32_t zero[6] = {0, 0, 0, 0, 0, 0};
    int32_t back[6] = {1, 1, 1, 1, 1, 1};
    tilerap_memcpy(drp, TILERAP_MEM_DEVICE, zero, TILERAP_MEM_HOST, 16);
    int32_t *drp6 = NULL;
    tilerap_device_malloc(24, (void **)&drp6);
    tilerap_memcpy(drp6, TILERAP_MEM_DEVICE, zero, TILERAP_MEM_HOST, 24);
    const int err = tilerap_csr_graph_device_i32(5, 1, drp6, NULL, NULL, 7, &grp, &gcol, &gval, &gnnz);
    if (!err && grp) tilerap_memcpy(back, TILERAP_MEM_HOST, grp, TILERAP_MEM_DEVICE, 24);
    tap_ok(!err && gnnz == 0 && !memcmp(back, zero, sizeof zero), "device: 5 rows without entries, NULL columns and values: an empty graph (%d)", err);
    tilerap_device_free(grp); tilerap_device_free(gcol); tilerap_device_free(gval);
    grp = NULL; gcol = NULL; gval = NULL;
    tilerap_device_free(drp6);
  }
  tilerap_device_free(drp); tilerap_device_free(dcol_); tilerap_device_free(dval);
}

int main(int argc, char **argv)
{
  const int quick = argc > 1 && !strcmp(argv[1], "--quick");
  have_gpu = tilerap_device_count() > 0;
  small_cases();
  model_case("mesh2d:900:random", 1);
  model_case("powerlaw:800", 1);
  model_case("random:700", 1);
  model_case("denserow:900", 1);
  model_case("elast:600", 3);
  model_case_sym("mesh2d:900:random", 1, 1);
  model_case_sym("elast:600", 3, 1);
  if (!quick) {
    model_case("mesh3d:1500:random", 1);
    model_case("s125:512", 1);
    model_case("elast:2000", 3);
    model_case("random:1200", 1);
  }
  bad_input();
  return tap_done();
}
