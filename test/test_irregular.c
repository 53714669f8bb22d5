/* The irregular matrices of tilerap_model.h through the products, against
 * the reference (Gustavson products, explicit transposes): unstructured
 * meshes in random and Z-curve order, power-law and random graphs, a dense
 * row, 3x3 blocks, a 125-point stencil.  For each: the generator's promises
 * (sorted, symmetric, dominant positive diagonal, reproducible), graph
 * aggregation, P^T A P one-shot and through plan re-runs with new values,
 * A*A, A^T P, a second level on the first's C, tall-skinny random P.
 * The engine is the options' default (AUTO): a CUDA build on a GPU runs
 * CUDA, TILERAP_ENGINE=cpu the CPU engine.  --quick: three matrices. */
#include "ref_gustavson.h"
#include "tap.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static tilerap_options g_opt;

static double frob(const tilerap_csr *X)
{
  double s = 0.0;
  for (int64_t q = 0; q < X->nnz; q++) s += X->val[q] * X->val[q];
  return sqrt(s);
}

/* ||C - R||_F / ||R||_F, where R is the reference product; where its sums
 * cancel (a 1 x 1 coarsest level sums thousands of terms to a small
 * number), rounding is bounded by the size of the terms, not of R: with
 * Rabs, the same product of the operands' absolute values, the error is
 * taken relative to ||Rabs||_F (>= ||R||_F, equal without cancellation) */
static double compare_scaled(const tilerap_tile_matrix *T, const tilerap_csr *R, const tilerap_csr *Rabs)
{
  tilerap_tile_matrix *H = NULL;
  if (T->memtype != TILERAP_MEM_HOST && tilerap_tile_copy(T, TILERAP_MEM_HOST, &H)) return INFINITY;
  tilerap_csr *C = ref_tile_to_csr(H ? H : T);
  double e = ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  if (Rabs && isfinite(e) && frob(Rabs) > 0.0) e *= frob(R) / frob(Rabs);
  tilerap_csr_destroy(&C);
  tilerap_tile_destroy(&H);
  return e;
}
static double compare(const tilerap_tile_matrix *T, const tilerap_csr *R)
{
  return compare_scaled(T, R, NULL);
}

static tilerap_csr *abs_copy(const tilerap_csr *A)
{
  tilerap_csr *B = ref_copy(A);
  for (int64_t q = 0; q < B->nnz; q++) B->val[q] = fabs(B->val[q]);
  return B;
}
/* |P|^T |A| |P| */
static tilerap_csr *abs_ptap(const tilerap_csr *A, const tilerap_csr *P)
{
  tilerap_csr *a = abs_copy(A), *p = abs_copy(P), *R = ref_ptap(a, p);
  tilerap_csr_destroy(&a); tilerap_csr_destroy(&p);
  return R;
}

/* bit-identical matrices */
static int same_bits(const tilerap_csr *X, const tilerap_csr *Y)
{
  return ref_same_structure(X, Y) && !memcmp(X->val, Y->val, (size_t)X->nnz * sizeof *X->val);
}

static int32_t max_row(const tilerap_csr *A)
{
  int64_t m = 0;
  for (int32_t i = 0; i < A->m; i++)
    if (A->rowptr[i + 1] - A->rowptr[i] > m) m = A->rowptr[i + 1] - A->rowptr[i];
  return (int32_t)m;
}

/* sorted, symmetric in structure and values, diagonal positive and dominant */
static void check_matrix(const char *spec, const tilerap_csr *A, int32_t row_cap)
{
  tap_ok(tilerap_csr_check(A->m, A->n, A->rowptr, A->colidx) == 0 && A->m == A->n,
         "%s: %d x %d, %lld entries, CSR valid", spec, A->m, A->n, (long long)A->nnz);
  tilerap_csr *At = ref_transpose(A);
  tap_ok(same_bits(A, At), "%s: symmetric", spec);
  tilerap_csr_destroy(&At);
  int32_t bad = -1;
  double d = 0.0, off = 0.0;
  for (int32_t i = 0; i < A->m && bad < 0; i++) {
    d = off = 0.0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
      if (A->colidx[p] == i) d = A->val[p];
      else off += fabs(A->val[p]);
    if (!(d > 0.0 && d >= off)) bad = i;
  }
  if (bad < 0) tap_ok(1, "%s: diagonal positive and dominant", spec);
  else tap_ok(0, "%s: diagonal positive and dominant: row %d has %.17g, its off-diagonal sum %.17g", spec, bad, d, off);
  int32_t mr = max_row(A);
  tap_ok(mr <= row_cap, "%s: longest row %d (at most %d)", spec, mr, row_cap);
}

/* P^T A P with tilerap_ptap against the reference; *Cout (if asked) keeps C */
static void check_ptap(const char *what, const tilerap_csr *A, const tilerap_csr *P, tilerap_csr **Cout)
{
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tP = ref_csr_to_tile(P), *tC = NULL;
  int err = tilerap_ptap(tA, tP, &g_opt, &tC);
  tilerap_csr *R = ref_ptap(A, P), *Rabs = abs_ptap(A, P);
  double e = err ? INFINITY : compare_scaled(tC, R, Rabs);
  tilerap_csr_destroy(&Rabs);
  tap_ok(e <= 1e-14, "%s: P^T A P (P %d x %d), relerr %.2e%s%s", what, P->m, P->n, e, err ? ": " : "",
         err ? tilerap_last_error() : "");
  if (Cout) {
    tilerap_tile_matrix *H = NULL;
    *Cout = NULL;
    if (!err && (tC->memtype == TILERAP_MEM_HOST || !tilerap_tile_copy(tC, TILERAP_MEM_HOST, &H)))
      *Cout = ref_tile_to_csr(H ? H : tC);
    tilerap_tile_destroy(&H);
  }
  tilerap_csr_destroy(&R);
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP); tilerap_tile_destroy(&tC);
}

/* plan, numeric, then new values of A and P in the same tile objects and
 * a numeric re-run */
static void check_ptap_plan(const char *spec, const tilerap_csr *A, const tilerap_csr *P, uint64_t *seed)
{
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tP = ref_csr_to_tile(P), *tC = NULL;
  tilerap_ptap_plan plan = NULL;
  int err = tilerap_ptap_plan_create(tA, tP, &g_opt, &plan, &tC);
  if (!err) err = tilerap_ptap_numeric(plan, tA, tP, tC);
  tilerap_csr *R = ref_ptap(A, P);
  double e = err ? INFINITY : compare(tC, R);
  tap_ok(e <= 1e-14, "%s: P^T A P plan + numeric, relerr %.2e%s%s", spec, e, err ? ": " : "", err ? tilerap_last_error() : "");
  tilerap_csr_destroy(&R);
  /* the path the plan took is the one tilerap_ptap_path names; a mesh in
   * random order (nearly empty tiles) takes the CSR path unless forced */
  {
    tilerap_ptap_info info;
    tilerap_path said = TILERAP_PATH_TILES;
    double fa = 0, fp = 0;
    int e2 = err ? err : tilerap_ptap_plan_info(plan, &info);
    if (!e2) e2 = tilerap_ptap_path(tA, tP, &g_opt, &said, &fa, &fp);
    tap_ok(!e2 && said == info.ap.path && said == info.ptap.path && fa == info.ap.a_fill && fp == info.ap.b_fill,
           "%s: tilerap_ptap_path says %s (fills %.2f, %.2f), the plan took %s", spec, tilerap_path_name(said), fa, fp,
           e2 ? "?" : tilerap_path_name(info.ap.path));
    const char *forced = getenv("TILERAP_PATH");
    if (!strncmp(spec, "mesh2d:", 7) && !strstr(spec, "sfc"))
      tap_ok(said == (forced && !strcmp(forced, "tiles") ? TILERAP_PATH_TILES : TILERAP_PATH_CSR),
             "%s: random order takes the %s path", spec, tilerap_path_name(said));
  }
  /* three re-runs: on the GPU's CSR path the first makes the plan's record
   * of products and the later ones gather from it */
  for (int rerun = 1; rerun <= 3; rerun++) {
    tilerap_csr *A2 = ref_copy(A), *P2 = ref_copy(P);
    ref_randomize_values(A2, seed);
    ref_randomize_values(P2, seed);
    if (!err) err = tilerap_tile_update_values_from_csr(tA, A2->rowptr, A2->val);
    if (!err) err = tilerap_tile_update_values_from_csr(tP, P2->rowptr, P2->val);
    if (!err) err = tilerap_ptap_numeric(plan, tA, tP, tC);
    R = ref_ptap(A2, P2);
    e = err ? INFINITY : compare(tC, R);
    tap_ok(e <= 1e-14, "%s: numeric re-run %d with new values of A and P, relerr %.2e%s%s", spec, rerun, e,
           err ? ": " : "", err ? tilerap_last_error() : "");
    tilerap_csr_destroy(&R); tilerap_csr_destroy(&A2); tilerap_csr_destroy(&P2);
  }
  tilerap_ptap_plan_destroy(&plan);
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP); tilerap_tile_destroy(&tC);
}

/* A*A and A^T P */
static void check_products(const char *spec, const tilerap_csr *A, const tilerap_csr *P)
{
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tP = ref_csr_to_tile(P), *tC = NULL;
  int err = tilerap_spgemm(tA, tA, &g_opt, &tC);
  tilerap_csr *R = ref_spgemm(A, A);
  double e = err ? INFINITY : compare(tC, R);
  tap_ok(e <= 1e-14, "%s: A*A (%lld entries), relerr %.2e%s%s", spec, (long long)R->nnz, e, err ? ": " : "",
         err ? tilerap_last_error() : "");
  tilerap_csr_destroy(&R);
  tilerap_tile_destroy(&tC);
  err = tilerap_atb(tA, tP, &g_opt, &tC);
  tilerap_csr *At = ref_transpose(A);
  R = ref_spgemm(At, P);
  e = err ? INFINITY : compare(tC, R);
  tap_ok(e <= 1e-14, "%s: A^T P, relerr %.2e%s%s", spec, e, err ? ": " : "", err ? tilerap_last_error() : "");
  tilerap_csr_destroy(&R); tilerap_csr_destroy(&At);
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP); tilerap_tile_destroy(&tC);
}

/* n x nc with no empty row or column */
static void check_prolongator(const char *what, const tilerap_csr *P, int32_t n)
{
  int ok = P->m == n && P->n >= 1 && tilerap_csr_check(P->m, P->n, P->rowptr, P->colidx) == 0;
  int32_t empty_rows = 0, empty_cols = 0;
  char *hit = calloc((size_t)P->n + 1, 1);
  for (int32_t i = 0; ok && i < P->m; i++) {
    empty_rows += P->rowptr[i + 1] == P->rowptr[i];
    for (int64_t p = P->rowptr[i]; p < P->rowptr[i + 1]; p++) hit[P->colidx[p]] = 1;
  }
  for (int32_t j = 0; ok && j < P->n; j++) empty_cols += !hit[j];
  free(hit);
  tap_ok(ok && !empty_rows && !empty_cols, "%s: P %d x %d valid, %d empty rows, %d empty columns", what, P->m, P->n,
         empty_rows, empty_cols);
}

/* classical P: valid, each column has its C point's unit row (coarse
 * points in fine order), every other row sums to 1 or is empty, and the
 * Galerkin product of it and of the next level is right */
static void check_classical(const char *spec, const tilerap_csr *A)
{
  tilerap_csr *P = NULL, *C = NULL, *P1 = NULL;
  int err = tilerap_model_classical_prolongator(A, 0.25, 7, &P);
  if (!tap_ok(!err, "%s: classical prolongator%s%s", spec, err ? ": " : "", err ? tilerap_last_error() : "")) return;
  int ok = P->m == A->m && P->n >= 1 && (P->n < A->m || A->m == 1) && tilerap_csr_check(P->m, P->n, P->rowptr, P->colidx) == 0;
  int32_t unit = 0, empty = 0, last = -1, bad_sum = 0;
  for (int32_t i = 0; ok && i < P->m; i++) {
    const int64_t a = P->rowptr[i], b = P->rowptr[i + 1];
    double sum = 0;
    for (int64_t p = a; p < b; p++) sum += P->val[p];
    if (b == a) empty++;
    else if (b - a == 1 && P->val[a] == 1.0 && P->colidx[a] == last + 1) { unit++; last++; }
    else bad_sum += fabs(sum - 1.0) > 1e-14;
  }
  tap_ok(ok && unit == P->n && !bad_sum, "%s: classical P %d x %d (%.2f entries a row): %d unit rows in order, %d empty rows, rows sum to 1",
         spec, P->m, P->n, (double)P->nnz / (P->m ? P->m : 1), unit, empty);
  char what[96];
  snprintf(what, sizeof what, "%s classical", spec);
  check_ptap(what, A, P, &C);
  if (C && C->m > 1) {
    err = tilerap_model_classical_prolongator(C, 0.25, 8, &P1);
    snprintf(what, sizeof what, "%s classical level 1", spec);
    if (tap_ok(!err, "%s: made%s%s", what, err ? ": " : "", err ? tilerap_last_error() : "")) check_ptap(what, C, P1, NULL);
  }
  tilerap_csr_destroy(&P); tilerap_csr_destroy(&C); tilerap_csr_destroy(&P1);
}

static void check_spec(const char *spec, int32_t row_cap, int randomized, uint64_t *seed)
{
  double t0 = ref_wtime();
  tilerap_csr *A = NULL, *A2 = NULL, *P = NULL, *C = NULL, *P1 = NULL;
  int err = tilerap_model_irregular(spec, 42, &A);
  if (!tap_ok(!err, "%s: generated%s%s", spec, err ? ": " : "", err ? tilerap_last_error() : "")) return;
  if (row_cap < 0) row_cap = A->m; /* a dense row */
  check_matrix(spec, A, row_cap);
  err = tilerap_model_irregular(spec, 42, &A2);
  tap_ok(!err && same_bits(A, A2), "%s: same seed, same matrix", spec);
  tilerap_csr_destroy(&A2);
  if (randomized) {
    err = tilerap_model_irregular(spec, 43, &A2);
    tap_ok(!err && !same_bits(A, A2), "%s: another seed, another matrix", spec);
    tilerap_csr_destroy(&A2);
  }

  err = tilerap_model_sa_prolongator(A, 2.0 / 3.0, &P);
  if (!tap_ok(!err, "%s: SA prolongator%s%s", spec, err ? ": " : "", err ? tilerap_last_error() : "")) goto done;
  check_prolongator(spec, P, A->m);
  tap_ok(P->n >= 1 && P->n < A->m, "%s: %d aggregates of %d nodes", spec, P->n, A->m);
  check_ptap(spec, A, P, &C);
  check_ptap_plan(spec, A, P, seed);
  check_products(spec, A, P);

  /* level 1: the tilerap C as next A */
  if (tap_ok(C != NULL, "%s: level-1 A from level 0's C", spec)) {
    char what[96];
    snprintf(what, sizeof what, "%s level 1", spec);
    err = tilerap_model_sa_prolongator(C, 2.0 / 3.0, &P1);
    if (tap_ok(!err, "%s: SA prolongator%s%s", what, err ? ": " : "", err ? tilerap_last_error() : "")) {
      check_prolongator(what, P1, C->m);
      tap_ok(P1->n < C->m || C->m == 1, "%s: %d aggregates of %d nodes", what, P1->n, C->m);
      check_ptap(what, C, P1, NULL);
    }
  }

  check_classical(spec, A);

  /* tall-skinny and half-size random prolongators */
  int32_t ncs[2] = {8, A->m / 2};
  int per[2] = {2, 3};
  for (int k = 0; k < 2; k++) {
    tilerap_csr *R = NULL;
    char what[96];
    snprintf(what, sizeof what, "%s random P (nc %d, %d a row)", spec, ncs[k], per[k]);
    err = tilerap_model_random_prolongator(A->m, ncs[k], per[k], *seed + k, &R);
    if (tap_ok(!err, "%s: made%s%s", what, err ? ": " : "", err ? tilerap_last_error() : "")) {
      check_prolongator(what, R, A->m);
      check_ptap(what, A, R, NULL);
    }
    tilerap_csr_destroy(&R);
  }
  tap_diag("%s: %.2f s", spec, ref_wtime() - t0);
done:
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&C); tilerap_csr_destroy(&P1);
}

static void check_errors(void)
{
  static const char *bad[] = {"mesh2d", "mesh2d:0", "mesh2d:-5", "mesh2d:100x", "mesh2d:100:hilbert", "mesh3d:100:",
                              "cube:100", "powerlaw:100:sfc", ""};
  for (int k = 0; k < (int)(sizeof bad / sizeof *bad); k++) {
    tilerap_csr *A = NULL;
    int err = tilerap_model_irregular(bad[k], 1, &A);
    tap_ok(err == TILERAP_ERR_INVALID && !A, "spec '%s': TILERAP_ERR_INVALID (%s)", bad[k], tilerap_last_error());
  }
  tilerap_csr *A = NULL, *P = NULL;
  tap_ok(tilerap_model_irregular(NULL, 1, &A) == TILERAP_ERR_NULL, "NULL spec: TILERAP_ERR_NULL");
  tap_ok(tilerap_model_classical_prolongator(NULL, 0.25, 1, &P) == TILERAP_ERR_NULL && !P,
         "classical prolongator of NULL: TILERAP_ERR_NULL");
  {
    tilerap_csr *R = NULL;
    int e1 = tilerap_model_random_prolongator(10, 3, 2, 1, &R);
    tap_ok(!e1 && tilerap_model_classical_prolongator(R, 0.25, 1, &P) == TILERAP_ERR_SIZE && !P,
           "classical prolongator of a 10 x 3 matrix: TILERAP_ERR_SIZE (%s)", tilerap_last_error());
    tilerap_model_irregular("mesh2d:50", 1, &A);
    tap_ok(A && tilerap_model_classical_prolongator(A, 0.0, 1, &P) == TILERAP_ERR_INVALID && !P,
           "classical prolongator with theta 0: TILERAP_ERR_INVALID (%s)", tilerap_last_error());
    tilerap_csr_destroy(&R); tilerap_csr_destroy(&A);
  }
  tap_ok(tilerap_model_random_prolongator(10, 0, 2, 1, &P) == TILERAP_ERR_INVALID && !P,
         "random prolongator with nc 0: TILERAP_ERR_INVALID (%s)", tilerap_last_error());
  /* the smallest sizes still give valid matrices */
  static const char *tiny[] = {"mesh2d:1", "mesh3d:1:sfc", "powerlaw:1", "powerlaw:2", "random:1", "random:2",
                               "denserow:1", "elast:1", "s125:1"};
  for (int k = 0; k < (int)(sizeof tiny / sizeof *tiny); k++) {
    int err = tilerap_model_irregular(tiny[k], 1, &A);
    int ok = !err && tilerap_csr_check(A->m, A->n, A->rowptr, A->colidx) == 0;
    if (ok) {
      err = tilerap_model_sa_prolongator(A, 2.0 / 3.0, &P);
      ok = !err && P->m == A->m && P->n >= 1;
    }
    tap_ok(ok, "tiny '%s': %d rows, %d aggregates%s%s", tiny[k], A ? A->m : -1, P ? P->n : -1, err ? ": " : "",
           err ? tilerap_last_error() : "");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  }
  /* more columns than rows, and all columns */
  int32_t shapes[2][3] = {{5, 40, 3}, {30, 4, 9}};
  for (int k = 0; k < 2; k++) {
    int err = tilerap_model_random_prolongator(shapes[k][0], shapes[k][1], shapes[k][2], 7, &P);
    int32_t want = shapes[k][2] < shapes[k][1] ? shapes[k][2] : shapes[k][1];
    tap_ok(!err && tilerap_csr_check(P->m, P->n, P->rowptr, P->colidx) == 0 && P->nnz == (int64_t)P->m * want,
           "random prolongator %d x %d, %d a row: %d a row", shapes[k][0], shapes[k][1], shapes[k][2], want);
    tilerap_csr_destroy(&P);
  }
}

int main(int argc, char **argv)
{
  /* spec, longest row (-1: a dense row), random parts */
  static const struct { const char *spec; int32_t row_cap; int randomized; } cases[] = {
    {"mesh2d:3000:random", 9, 1}, {"mesh2d:3000:sfc", 9, 1}, {"mesh3d:3000", 27, 1}, {"mesh3d:3000:sfc", 27, 1},
    {"powerlaw:3000", 3000, 1},   {"random:3000", 3000, 1},  {"denserow:2000", -1, 0}, {"elast:3000", 81, 1},
    {"s125:2200", 125, 0},
  };
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  uint64_t seed = 2025;
  tilerap_options_default(&g_opt);
  tap_diag("engine: %s", tilerap_engine_name(tilerap_engine_resolve(g_opt.engine)));
  check_errors();
  for (int k = 0; k < (int)(sizeof cases / sizeof *cases); k++) {
    if (quick && k != 0 && k != 4 && k != 6) continue;
    check_spec(cases[k].spec, cases[k].row_cap, cases[k].randomized, &seed);
  }
  return tap_done();
}
