/* The CSR plans (tilerap_csr_plan_*: the CPU engine's products on CSR
 * operands) against the reference Gustavson products: structured and
 * irregular matrices (unordered meshes, power-law and random graphs, a
 * dense row, 3x3 blocks, a 125-point stencil) with smoothed-aggregation,
 * classical, tall-skinny and half-size random prolongators; odd sizes,
 * empty rows, empty matrices; A*B, A^T*B and P^T*A*P, first values and
 * numeric runs after new values; and the misuse a caller can make (a
 * numeric run on another structure of the same counts, wrong shapes,
 * unsorted columns, NULL arguments).  --quick: fewer matrices. */
#include "ref_gustavson.h"
#include "tap.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define TOL 1e-14

static double frob(const tilerap_csr *X)
{
  double s = 0.0;
  for (int64_t q = 0; q < X->nnz; q++) s += X->val[q] * X->val[q];
  return sqrt(s);
}

static tilerap_csr *abs_copy(const tilerap_csr *A)
{
  tilerap_csr *B = ref_copy(A);
  for (int64_t q = 0; q < B->nnz; q++) B->val[q] = fabs(B->val[q]);
  return B;
}

/* C's error against R, relative to the reference made of absolute values
 * (Rabs: sums that cancel are judged by the size of their terms) */
static double relerr(const tilerap_csr *C, const tilerap_csr *R, const tilerap_csr *Rabs)
{
  if (!ref_same_structure(C, R)) return INFINITY;
  double e = ref_relerr(C, R);
  if (Rabs && frob(Rabs) > 0.0) e *= frob(R) / frob(Rabs);
  return e;
}

/* reference of one product kind's absolute values */
static tilerap_csr *reference_abs(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B)
{
  tilerap_csr *a = abs_copy(A), *b = abs_copy(B), *R = ref_product(kind, a, b);
  tilerap_csr_destroy(&a); tilerap_csr_destroy(&b);
  return R;
}

static int same_bits(const double *x, const double *y, int64_t n)
{
  return n == 0 || !memcmp(x, y, (size_t)n * sizeof *x);
}

/* one product: the plan's first values, a numeric run on the same values
 * (the same bits), new values of both operands (against a new reference),
 * and the plan made without values (zeros) */
static void check_kind(const char *what, tilerap_csr_kind kind, tilerap_csr *A, tilerap_csr *B, uint64_t *seed)
{
  tilerap_csr_plan plan = NULL;
  tilerap_csr *C = NULL, *R = ref_product(kind, A, B), *Rabs = reference_abs(kind, A, B);
  const char *k = tilerap_csr_kind_name(kind);
  int err = tilerap_csr_plan_create(kind, A, B, &plan, &C);
  if (!tap_ok(!err, "%s %s: plan%s%s", what, k, err ? ": " : "", err ? tilerap_last_error() : "")) goto done;
  double e = relerr(C, R, Rabs);
  int64_t cnnz = -1, flops = -1;
  tilerap_csr_plan_info(plan, &cnnz, &flops);
  tap_ok(e <= TOL && cnnz == C->nnz && flops >= 0, "%s %s: first values, rel. error %.2e (C %dx%d, %lld entries)", what, k, e, C->m, C->n, (long long)C->nnz);

  double *v = malloc(((size_t)C->nnz + 1) * sizeof *v);
  err = tilerap_csr_plan_numeric(plan, A, B, v);
  tap_ok(!err && same_bits(v, C->val, C->nnz), "%s %s: numeric run gives the first values bit for bit", what, k);

  ref_randomize_values(A, seed);
  ref_randomize_values(B, seed);
  tilerap_csr_destroy(&R); tilerap_csr_destroy(&Rabs);
  R = ref_product(kind, A, B);
  Rabs = reference_abs(kind, A, B);
  err = tilerap_csr_plan_numeric(plan, A, B, v);
  memcpy(C->val, v, (size_t)C->nnz * sizeof *v);
  e = err ? INFINITY : relerr(C, R, Rabs);
  tap_ok(e <= TOL, "%s %s: numeric run after new values, rel. error %.2e", what, k, e);
  free(v);
  tilerap_csr_plan_destroy(&plan);
  tap_ok(plan == NULL, "%s %s: destroy clears the handle", what, k);

  /* structure only: zeros */
  {
    tilerap_csr a = *A, b = *B, *Z = NULL;
    a.val = NULL; b.val = NULL;
    err = tilerap_csr_plan_create(kind, &a, &b, &plan, &Z);
    int zero = !err && ref_same_structure(Z, R);
    for (int64_t q = 0; zero && q < Z->nnz; q++) zero = Z->val[q] == 0.0;
    tap_ok(zero, "%s %s: a plan of the structures alone gives C's structure with zeros", what, k);
    tilerap_csr_destroy(&Z);
    tilerap_csr_plan_destroy(&plan);
  }
done:
  tilerap_csr_destroy(&C); tilerap_csr_destroy(&R); tilerap_csr_destroy(&Rabs);
}

/* P^T A P, A P and P^T A of one operator and prolongator */
static void check_all(const char *what, tilerap_csr *A, tilerap_csr *P, uint64_t *seed)
{
  check_kind(what, TILERAP_CSR_PTAP, A, P, seed);
  check_kind(what, TILERAP_CSR_AB, A, P, seed);
  check_kind(what, TILERAP_CSR_ATB, P, A, seed);
}

static void check_spec(const char *spec, uint64_t *seed)
{
  tilerap_csr *A = NULL, *P = NULL;
  char what[128];
  int err = tilerap_model_irregular(spec, 42, &A);
  if (!tap_ok(!err, "%s: generated%s%s", spec, err ? ": " : "", err ? tilerap_last_error() : "")) return;
  if (!tilerap_model_sa_prolongator(A, 2.0 / 3.0, &P)) {
    snprintf(what, sizeof what, "%s SA P", spec);
    check_all(what, A, P, seed);
  }
  tilerap_csr_destroy(&P);
  if (!tilerap_model_classical_prolongator(A, 0.25, 7, &P)) {
    snprintf(what, sizeof what, "%s classical P", spec);
    check_kind(what, TILERAP_CSR_PTAP, A, P, seed);
  }
  tilerap_csr_destroy(&P);
  int32_t ncs[2] = {8, A->m / 2};
  for (int k = 0; k < 2; k++)
    if (!tilerap_model_random_prolongator(A->m, ncs[k], 2 + k, *seed + k, &P)) {
      snprintf(what, sizeof what, "%s random P (nc %d)", spec, ncs[k]);
      check_kind(what, TILERAP_CSR_PTAP, A, P, seed);
      tilerap_csr_destroy(&P);
    }
  tilerap_csr_destroy(&A);
}

/* P^T A P by one route of TILERAP_CSR_PTAP against the reference (what),
 * then its plan's memory and whether it keeps A*P, made on nth threads */
static void route_memory(const char *route, const char *what, tilerap_csr *A, tilerap_csr *P, int nth,
                         uint64_t *seed, int64_t *bytes, int *keeps)
{
  tilerap_tuning_set("TILERAP_CSR_PTAP", route);
  check_kind(what, TILERAP_CSR_PTAP, A, P, seed);
  tilerap_csr_plan plan = NULL;
  tilerap_csr *C = NULL;
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  omp_set_num_threads(nth);
#else
  (void)nth;
#endif
  if (!tilerap_csr_plan_create(TILERAP_CSR_PTAP, A, P, &plan, &C)) tilerap_csr_plan_memory(plan, bytes, keeps);
#ifdef _OPENMP
  omp_set_num_threads(saved);
#endif
  tilerap_csr_destroy(&C);
  tilerap_csr_plan_destroy(&plan);
}

/* P^T A P by each route of TILERAP_CSR_PTAP (the runs above take the
 * default, walk): the reference
 * on meshes, graphs, blocks and stencils with SA, classical and
 * tall-skinny P; the plan says whether it keeps A*P, and without it holds
 * less memory */
static void check_routes(int quick, uint64_t *seed)
{
  static const char *specs[] = {"mesh2d:2000:random", "powerlaw:2000", "elast:1500", "denserow:1500",
                                "s125:1000",          "random:2000",   "mesh3d:1500"};
  tap_ok(tilerap_tuning_set("TILERAP_CSR_PTAP", "fast") == TILERAP_ERR_INVALID,
         "TILERAP_CSR_PTAP=fast: refused (ap or walk)");
  for (int k = 0; k < (int)(sizeof specs / sizeof *specs) && !(quick && k > 2); k++) {
    tilerap_csr *A = NULL, *P[3] = {NULL, NULL, NULL};
    if (!tap_ok(!tilerap_model_irregular(specs[k], 5, &A), "routes: %s generated", specs[k])) continue;
    tilerap_model_sa_prolongator(A, 2.0 / 3.0, &P[0]);
    tilerap_model_classical_prolongator(A, 0.25, 7, &P[1]);
    tilerap_model_random_prolongator(A->m, 8, 2, *seed, &P[2]);
    static const char *pn[] = {"SA P", "classical P", "random P (nc 8)"};
    for (int p = 0; p < 3; p++) {
      if (!P[p]) continue;
      int64_t bytes[2] = {-1, -1};
      int keeps[2] = {-1, -1};
      for (int r = 0; r < 2; r++) {
        char what[160];
        snprintf(what, sizeof what, "TILERAP_CSR_PTAP=%s, %s %s", r ? "ap" : "walk", specs[k], pn[p]);
        /* per-thread scratch: with many threads on these small operands
         * the walk's (A's rows) can outweigh the A*P saved */
        route_memory(r ? "ap" : "walk", what, A, P[p], 2, seed, &bytes[r], &keeps[r]);
      }
      tap_ok(keeps[0] == 0 && keeps[1] == 1 && bytes[0] > 0 && bytes[0] < bytes[1],
             "routes: %s %s: the walk keeps no A*P (%d; ap %d) and, on 2 threads, holds less (%lld bytes against %lld)", specs[k], pn[p],
             keeps[0], keeps[1], (long long)bytes[0], (long long)bytes[1]);
      tilerap_csr_destroy(&P[p]);
    }
    tilerap_csr_destroy(&A);
  }
  tilerap_tuning_set("TILERAP_CSR_PTAP", NULL);
  if (!getenv("TILERAP_CSR_PTAP")) { /* the default keeps no A*P (memory near PETSc's MatPtAP) */
    tilerap_csr *A = NULL, *P = NULL, *C = NULL;
    tilerap_csr_plan plan = NULL;
    int keeps = -1;
    if (!tilerap_model_irregular("mesh3d:1500", 5, &A) && !tilerap_model_sa_prolongator(A, 2.0 / 3.0, &P) &&
        !tilerap_csr_plan_create(TILERAP_CSR_PTAP, A, P, &plan, &C))
      tilerap_csr_plan_memory(plan, NULL, &keeps);
    tap_ok(keeps == 0, "routes: the default (TILERAP_CSR_PTAP unset) is the walk: no A*P kept (%d)", keeps);
    tilerap_csr_destroy(&C); tilerap_csr_plan_destroy(&plan); tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  }
}

/* P of a few columns of wide support (one aggregate, a deflation space):
 * the walk's R*A rows then span A's columns, one per thread; on 16
 * threads it must not hold much more than ap's A*P */
static void check_wide_columns(uint64_t *seed)
{
  tilerap_stencil st;
  tilerap_csr *A = NULL;
  int32_t dims[3];
  int nd;
  if (!tap_ok(!tilerap_stencil_parse("p2d5", &st) && !tilerap_model_poisson(st, 300, &A, dims, &nd),
              "wide columns: 300^2 5-point grid generated")) return;
  static const int ncs[] = {1, 4};
  for (int k = 0; k < 2; k++) {
    tilerap_csr *P = NULL;
    if (!tap_ok(!tilerap_model_random_prolongator(A->m, ncs[k], ncs[k] > 1 ? 2 : 1, *seed, &P),
                "wide columns: %d-column P generated", ncs[k])) continue;
    int64_t bytes[2] = {-1, -1};
    for (int r = 0; r < 2; r++) {
      char what[128];
      snprintf(what, sizeof what, "wide columns: TILERAP_CSR_PTAP=%s, 300^2 grid, %d-column P", r ? "ap" : "walk", ncs[k]);
      route_memory(r ? "ap" : "walk", what, A, P, 16, seed, &bytes[r], NULL);
    }
    tap_ok(bytes[0] > 0 && bytes[1] > 0 && bytes[0] <= 2 * bytes[1],
           "wide columns: %d-column P on 16 threads: the walk holds %lld bytes, ap %lld (at most twice)", ncs[k],
           (long long)bytes[0], (long long)bytes[1]);
    tilerap_csr_destroy(&P);
  }
  tilerap_tuning_set("TILERAP_CSR_PTAP", NULL);
  tilerap_csr_destroy(&A);
}

/* misuse: every call fails with the error named, writes nothing */
static void check_errors(uint64_t *seed)
{
  tilerap_csr *A = ref_random(37, 37, 0.15, 5, seed), *P = ref_random(37, 11, 0.2, 0, seed), *C = NULL;
  tilerap_csr_plan plan = NULL;
  int err;

  err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, A, P, NULL, &C);
  tap_ok(err == TILERAP_ERR_NULL, "NULL plan output: TILERAP_ERR_NULL (%d)", err);
  err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, NULL, P, &plan, &C);
  tap_ok(err == TILERAP_ERR_NULL && !plan && !C, "NULL operand: TILERAP_ERR_NULL (%d), no plan, no C", err);
  err = tilerap_csr_plan_create((tilerap_csr_kind)7, A, P, &plan, &C);
  tap_ok(err == TILERAP_ERR_INVALID && !plan, "unknown product kind: TILERAP_ERR_INVALID (%d)", err);
  err = tilerap_csr_plan_create(TILERAP_CSR_AB, P, P, &plan, &C);
  tap_ok(err == TILERAP_ERR_SIZE && !plan, "A*B with A 37x11, B 37x11: TILERAP_ERR_SIZE (%d): %s", err, tilerap_last_error());
  err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, P, P, &plan, &C);
  tap_ok(err == TILERAP_ERR_SIZE && !plan, "P^T A P with A not square: TILERAP_ERR_SIZE (%d)", err);
  {
    tilerap_csr *B36 = ref_random(36, 4, 0.3, 0, seed);
    err = tilerap_csr_plan_create(TILERAP_CSR_ATB, A, B36, &plan, &C);
    tap_ok(err == TILERAP_ERR_SIZE && !plan, "A^T*B with different row counts: TILERAP_ERR_SIZE (%d)", err);
    tilerap_csr_destroy(&B36);
  }

  /* unsorted columns: swap the first two of a row with two entries or more */
  {
    tilerap_csr *U = ref_copy(A);
    for (int32_t i = 0; i < U->m; i++)
      if (U->rowptr[i + 1] - U->rowptr[i] >= 2) {
        int32_t t = U->colidx[U->rowptr[i]];
        U->colidx[U->rowptr[i]] = U->colidx[U->rowptr[i] + 1];
        U->colidx[U->rowptr[i] + 1] = t;
        break;
      }
    err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, U, P, &plan, &C);
    tap_ok(err == TILERAP_ERR_UNSORTED && !plan && !C, "unsorted columns: TILERAP_ERR_UNSORTED (%d)", err);
    U->colidx[0] = 99;
    tilerap_csr_destroy(&U);
  }
  {
    tilerap_csr *U = ref_copy(A);
    U->colidx[U->nnz - 1] = 37;
    err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, U, P, &plan, &C);
    tap_ok(err == TILERAP_ERR_RANGE && !plan, "a column outside A: TILERAP_ERR_RANGE (%d)", err);
    tilerap_csr_destroy(&U);
  }
  {
    tilerap_csr bad = *A;
    int64_t rp0 = A->rowptr[0];
    A->rowptr[0] = 1;
    err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, &bad, P, &plan, &C);
    A->rowptr[0] = rp0;
    tap_ok(err != TILERAP_SUCCESS && !plan, "row pointers not from 0: an error (%d)", err);
  }

  /* numeric on another structure of the same counts: one entry moved
   * to another column of its row (A), or to another row (P) */
  err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, A, P, &plan, &C);
  if (tap_ok(!err, "plan for the misuse checks")) {
    double *v = malloc(((size_t)C->nnz + 1) * sizeof *v);
    for (int64_t q = 0; q < C->nnz; q++) v[q] = -7.0;
    tilerap_csr *M = ref_copy(A);
    int moved = 0;
    for (int32_t i = 0; i < M->m && !moved; i++) {
      int64_t last = M->rowptr[i + 1] - 1;
      if (last >= M->rowptr[i] && M->colidx[last] + 1 < M->n) { M->colidx[last]++; moved = 1; }
      if (moved && last > M->rowptr[i] && M->colidx[last] == M->colidx[last - 1]) { M->colidx[last]--; moved = 0; }
    }
    err = tilerap_csr_plan_numeric(plan, M, P, v);
    int untouched = 1;
    for (int64_t q = 0; q < C->nnz; q++) untouched &= v[q] == -7.0;
    tap_ok(moved && err == TILERAP_ERR_STRUCTURE && untouched, "numeric with A's entry in another column (same counts): TILERAP_ERR_STRUCTURE (%d), C untouched: %s", err, tilerap_last_error());
    tilerap_csr_destroy(&M);

    tilerap_csr *Q = ref_copy(P);
    /* the first row with entries gives its last one to the next row that has room */
    moved = 0;
    for (int32_t i = 0; i + 1 < Q->m && !moved; i++)
      if (Q->rowptr[i + 1] - Q->rowptr[i] >= 2) {
        int64_t e = Q->rowptr[i + 1] - 1;
        int32_t c = Q->colidx[e];
        int ok = 1;
        for (int64_t f = Q->rowptr[i + 1]; f < Q->rowptr[i + 2]; f++) ok &= Q->colidx[f] != c;
        if (ok && Q->rowptr[i + 2] == Q->rowptr[i + 1]) { Q->rowptr[i + 1]--; moved = 1; }
      }
    err = moved ? tilerap_csr_plan_numeric(plan, A, Q, v) : -1;
    untouched = 1;
    for (int64_t q = 0; q < C->nnz; q++) untouched &= v[q] == -7.0;
    tap_ok(!moved || (err == TILERAP_ERR_STRUCTURE && untouched), "numeric with P's entry in another row (same counts): TILERAP_ERR_STRUCTURE (%d), C untouched (moved %d)", err, moved);
    tilerap_csr_destroy(&Q);

    /* the same matrices with one row's entries in another order (P for
     * P^T: the plan's transpose maps value positions, so a plain hash of
     * the entries would take them and give a wrong C) */
    {
      tilerap_csr *R = ref_copy(P);
      int swapped = 0;
      for (int32_t i = 0; i < R->m && !swapped; i++)
        if (R->rowptr[i + 1] - R->rowptr[i] >= 2) {
          const int64_t e = R->rowptr[i];
          int32_t c = R->colidx[e]; R->colidx[e] = R->colidx[e + 1]; R->colidx[e + 1] = c;
          double x = R->val[e]; R->val[e] = R->val[e + 1]; R->val[e + 1] = x;
          swapped = 1;
        }
      err = tilerap_csr_plan_numeric(plan, A, R, v);
      untouched = 1;
      for (int64_t q = 0; q < C->nnz; q++) untouched &= v[q] == -7.0;
      tap_ok(swapped && err == TILERAP_ERR_UNSORTED && untouched,
             "numeric with P's row in another order (same matrix): TILERAP_ERR_UNSORTED (%d), C untouched: %s", err,
             tilerap_last_error());
      tilerap_csr_destroy(&R);
    }
    /* malformed row pointers of the plan's counts: checked before any column is read */
    {
      tilerap_csr *R = ref_copy(A);
      int64_t *rp = R->rowptr;
      const int64_t keep = rp[1];
      rp[1] = R->nnz + 1000; /* rp[1] > rp[2]: out of the arrays if trusted */
      err = tilerap_csr_plan_numeric(plan, R, P, v);
      untouched = 1;
      for (int64_t q = 0; q < C->nnz; q++) untouched &= v[q] == -7.0;
      tap_ok(err == TILERAP_ERR_INVALID && untouched, "numeric with decreasing row pointers: TILERAP_ERR_INVALID (%d), C untouched", err);
      rp[1] = -5;
      err = tilerap_csr_plan_numeric(plan, R, P, v);
      tap_ok(err == TILERAP_ERR_INVALID, "numeric with a negative row pointer: TILERAP_ERR_INVALID (%d)", err);
      rp[1] = keep;
      R->colidx[R->nnz - 1] = -3;
      err = tilerap_csr_plan_numeric(plan, R, P, v);
      tap_ok(err == TILERAP_ERR_RANGE, "numeric with a negative column: TILERAP_ERR_RANGE (%d)", err);
      tilerap_csr_destroy(&R);
    }
    err = tilerap_csr_plan_numeric(plan, NULL, P, v);
    tap_ok(err == TILERAP_ERR_NULL, "numeric with a NULL operand: TILERAP_ERR_NULL (%d)", err);
    {
      int64_t nn = 0;
      err = tilerap_csr_plan_info(NULL, &nn, NULL);
      tap_ok(err == TILERAP_ERR_NULL, "info of a NULL plan: TILERAP_ERR_NULL (%d)", err);
      int keeps = -1;
      err = tilerap_csr_plan_memory(NULL, &nn, &keeps);
      tap_ok(err == TILERAP_ERR_NULL && keeps == -1, "memory of a NULL plan: TILERAP_ERR_NULL (%d), nothing written", err);
      err = tilerap_csr_plan_memory(plan, NULL, NULL);
      tap_ok(err == TILERAP_SUCCESS, "memory with NULL outputs: nothing asked, success (%d)", err);
    }

    err = tilerap_csr_plan_numeric(plan, P, P, v);
    tap_ok(err == TILERAP_ERR_STRUCTURE, "numeric with operands of other shapes: TILERAP_ERR_STRUCTURE (%d)", err);
    err = tilerap_csr_plan_numeric(plan, A, P, NULL);
    tap_ok(err == TILERAP_ERR_NULL, "numeric into NULL values: TILERAP_ERR_NULL (%d)", err);
    {
      tilerap_csr nv = *A;
      nv.val = NULL;
      err = tilerap_csr_plan_numeric(plan, &nv, P, v);
      tap_ok(err != TILERAP_SUCCESS, "numeric with an operand without values: an error (%d)", err);
    }
    err = tilerap_csr_plan_numeric(NULL, A, P, v);
    tap_ok(err != TILERAP_SUCCESS, "numeric with a NULL plan: an error (%d)", err);
    err = tilerap_csr_plan_numeric(plan, A, P, v);
    tap_ok(!err && same_bits(v, C->val, C->nnz), "the plan still works after the refused calls");
    free(v);
  }
  tilerap_csr_plan_destroy(&plan);
  tilerap_csr_plan_destroy(&plan);
  tap_ok(1, "destroying a NULL plan twice is harmless");
  tilerap_csr_destroy(&C);
  tilerap_csr_destroy(&A);
  tilerap_csr_destroy(&P);
}

/* P^T A P with 1, 3 and 8 threads (rows shared out dynamically, per-
 * thread accumulators) on a random-order mesh with a classical P, each
 * route of TILERAP_CSR_PTAP: every split gives the same bits, first values
 * and a numeric run; with A*P kept ("ap") the reference's bits (P^T (A P)
 * as the reference sums it), without ("walk", (P^T A) P) within TOL. */
static void check_threads(const char *route, int grid)
{
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  const int walk = !strcmp(route, "walk");
  tilerap_tuning_set("TILERAP_CSR_PTAP", route);
  double *bits1 = NULL, *bits2 = NULL; /* one thread's first values and numeric run */
  tilerap_csr *A = NULL, *P = NULL;
  int32_t dims[3], cdims[3];
  int ndim = 0;
  /* grid: a 7-point grid with its SA P, where the walk's 8 threads take
   * hash tables and one thread a slot per fine column */
  if (grid ? tilerap_model_poisson(TILERAP_P3D7, 17, &A, dims, &ndim) ||
                 tilerap_model_prolongator(A, ndim, dims, 2.0 / 3.0, &P, cdims)
           : tilerap_model_irregular("mesh2d:3000:random", 7, &A) ||
                 tilerap_model_classical_prolongator(A, 0.25, 7, &P)) {
    tap_ok(0, "threads: generated: %s", tilerap_last_error());
    tilerap_csr_destroy(&A);
    return;
  }
  tilerap_csr *R = ref_ptap(A, P), *A0 = ref_copy(A), *Rabs = reference_abs(TILERAP_CSR_PTAP, A, P);
  static const int teams[] = {1, 3, 8};
  for (int t = 0; t < 3; t++) {
    omp_set_num_threads(teams[t]);
    tilerap_csr_plan plan = NULL;
    tilerap_csr *C = NULL;
    int err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, A, P, &plan, &C);
    int keeps = -1;
    if (!err) tilerap_csr_plan_memory(plan, NULL, &keeps);
    int first = !err && ref_same_structure(C, R) && keeps == !walk;
    if (first && walk) {
      first = relerr(C, R, Rabs) <= TOL;
      if (!bits1 && (bits1 = malloc(((size_t)C->nnz + 1) * sizeof *bits1))) memcpy(bits1, C->val, (size_t)C->nnz * sizeof *bits1);
      first = first && bits1 && same_bits(C->val, bits1, C->nnz);
    } else if (first) first = same_bits(C->val, R->val, R->nnz);
    for (int64_t q = 0; q < A->nnz; q++) A->val[q] *= 1.0 + 1e-3 * (double)(q % 7);
    tilerap_csr *R2 = ref_ptap(A, P), *R2abs = reference_abs(TILERAP_CSR_PTAP, A, P);
    if (!err) err = tilerap_csr_plan_numeric(plan, A, P, C->val);
    int again = !err;
    if (again && walk) {
      again = relerr(C, R2, R2abs) <= TOL;
      if (!bits2 && (bits2 = malloc(((size_t)C->nnz + 1) * sizeof *bits2))) memcpy(bits2, C->val, (size_t)C->nnz * sizeof *bits2);
      again = again && bits2 && same_bits(C->val, bits2, C->nnz);
    } else if (again) again = same_bits(C->val, R2->val, R2->nnz);
    memcpy(A->val, A0->val, (size_t)A->nnz * sizeof(double));
    tap_ok(first && again, "threads (%s, %s): %d threads: first values (%d) and a numeric run (%d) equal %s %s", route,
           grid ? "7-point grid" : "random-order mesh", teams[t], first, again, walk ? "one thread's bit for bit, the reference within 1e-14" : "the reference bit for bit",
           err ? tilerap_last_error() : "");
    tilerap_csr_destroy(&R2); tilerap_csr_destroy(&R2abs); tilerap_csr_destroy(&C);
    tilerap_csr_plan_destroy(&plan);
  }
  omp_set_num_threads(saved);
  free(bits1); free(bits2);
  tilerap_tuning_set("TILERAP_CSR_PTAP", NULL);
  tilerap_csr_destroy(&R); tilerap_csr_destroy(&Rabs); tilerap_csr_destroy(&A0); tilerap_csr_destroy(&A);
  tilerap_csr_destroy(&P);
#else
  (void)route; (void)grid;
  tap_diag("threads: built without OpenMP, nothing to split");
#endif
}

/* A*B whose sampled rows (every tenth) sum ten products into one entry
 * and whose other rows ten products into ten entries: the one-pass
 * estimate of C is about a tenth of C, so one thread grows its buffers
 * and several count first; both must give the reference */
static void check_short_estimate(uint64_t *seed)
{
  const int32_t m = 1280, k = 10 + 10 * m;
  tilerap_csr *A = NULL, *B = NULL;
  if (tilerap_csr_create(m, k, 10 * (int64_t)m, &A) || tilerap_csr_create(k, k, k - 10 + 10, &B)) {
    tap_ok(0, "short estimate: allocated");
    tilerap_csr_destroy(&A);
    return;
  }
  for (int32_t i = 0; i < m; i++) {
    A->rowptr[i + 1] = 10 * (int64_t)(i + 1);
    for (int j = 0; j < 10; j++) {
      A->colidx[10 * (int64_t)i + j] = i % 10 ? 10 + 10 * i + j : j;
      A->val[10 * (int64_t)i + j] = 1.0 + 0.01 * j + 1e-4 * i;
    }
  }
  for (int32_t r = 0; r < k; r++) { /* rows 0-9: column 0; row r >= 10: column r */
    B->rowptr[r + 1] = r + 1;
    B->colidx[r] = r < 10 ? 0 : r;
    B->val[r] = 2.0 - 1e-5 * r;
  }
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
  static const int teams[] = {1, 2, 3};
  for (int t = 0; t < 3; t++) {
    omp_set_num_threads(teams[t]);
    char what[96];
    snprintf(what, sizeof what, "short estimate, %d threads", teams[t]);
    check_kind(what, TILERAP_CSR_AB, A, B, seed);
  }
  omp_set_num_threads(saved);
#else
  check_kind("short estimate", TILERAP_CSR_AB, A, B, seed);
#endif
  tilerap_csr_destroy(&A);
  tilerap_csr_destroy(&B);
}

/* odd sizes, empty rows, all-empty and zero-size operands */
static void check_odd_sizes(const char *tag, uint64_t *seed)
{
  char what[160];
  tilerap_csr *A = ref_random(37, 37, 0.12, 4, seed), *P = ref_random(37, 5, 0.25, 3, seed);
  snprintf(what, sizeof what, "%srandom 37x37 (every 4th row empty), P 37x5", tag);
  check_all(what, A, P, seed);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  tilerap_csr *E = NULL, *Q = ref_random(19, 3, 0.3, 0, seed);
  tilerap_csr_create(19, 19, 0, &E);
  snprintf(what, sizeof what, "%sA without entries 19x19", tag);
  check_all(what, E, Q, seed);
  tilerap_csr_destroy(&E); tilerap_csr_destroy(&Q);
  tilerap_csr *Z = NULL, *B0 = NULL;
  A = ref_random(9, 9, 0.3, 0, seed);
  tilerap_csr_create(9, 0, 0, &Z);
  snprintf(what, sizeof what, "%sP with no columns 9x0", tag);
  check_kind(what, TILERAP_CSR_PTAP, A, Z, seed);
  tilerap_csr_create(0, 4, 0, &B0);
  tilerap_csr *A0 = NULL;
  tilerap_csr_create(3, 0, 0, &A0);
  snprintf(what, sizeof what, "%sA 3x0 times B 0x4", tag);
  check_kind(what, TILERAP_CSR_AB, A0, B0, seed);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&Z); tilerap_csr_destroy(&B0); tilerap_csr_destroy(&A0);
}

int main(int argc, char **argv)
{
  static const char *specs[] = {"mesh2d:2000:random", "mesh3d:1500:sfc", "powerlaw:2000", "random:2000",
                                "denserow:1500",      "elast:1500",      "s125:1000",     "mesh3d:1500"};
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  uint64_t seed = 77;

  check_errors(&seed);
  /* the misuse checks again with each route of P^T A P forced */
  tilerap_tuning_set("TILERAP_CSR_PTAP", "walk");
  check_errors(&seed);
  tilerap_tuning_set("TILERAP_CSR_PTAP", "ap");
  check_errors(&seed);
  tilerap_tuning_set("TILERAP_CSR_PTAP", NULL);
  check_threads("ap", 0);
  check_threads("walk", 0);
  check_threads("walk", 1);
  check_routes(quick, &seed);
  check_wide_columns(&seed);

  check_odd_sizes("", &seed);
  check_short_estimate(&seed);
  /* the model Poisson problem with its geometric prolongator */
  {
    tilerap_csr *A = NULL, *P = NULL;
    int32_t dims[3], cdims[3];
    int ndim = 0;
    if (!tilerap_model_poisson(TILERAP_P3D7, quick ? 11 : 17, &A, dims, &ndim) &&
        !tilerap_model_prolongator(A, ndim, dims, 2.0 / 3.0, &P, cdims))
      check_all("3-D 7-point Poisson, grid SA P", A, P, &seed);
    else tap_ok(0, "3-D Poisson model: %s", tilerap_last_error());
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  }
  for (int k = 0; k < (int)(sizeof specs / sizeof *specs); k++) {
    if (quick && k > 3) break;
    check_spec(specs[k], &seed);
  }
  /* one thread: products whose entries sum many products are built in one
   * pass (no count pass), the others counted first; both against the
   * reference on the block, stencil, mesh, power-law and dense-row cases */
#ifdef _OPENMP
  {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    check_odd_sizes("one thread: ", &seed);
    static const char *one[] = {"elast:1500", "s125:1000", "mesh3d:1500", "powerlaw:2000", "denserow:1500"};
    for (int k = 0; k < 5 && !(quick && k > 1); k++) check_spec(one[k], &seed);
    omp_set_num_threads(saved);
  }
#endif
  return tap_done();
}
