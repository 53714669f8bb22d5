/* poisson-hierarchy: core-engine demo.  Builds a smoothed-aggregation
 * hierarchy for a Poisson model problem with tilerap's Galerkin plans
 * (each level's tile output is the next level's input), prints per-level
 * sizes and times, and checks every level without forming a reference
 * product: C x against P^T (A (P x)) for a random x, by three sparse
 * matrix-vector products on the CSR level operators.
 *
 *   poisson-hierarchy [-stencil p2d5|p2d9|p3d7|p3d27] [-n N] [-engine auto|cpu|cuda]
 */
#include "tilerap.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double wtime(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* y = M x, or y = M^T x (y zeroed first) */
static void spmv(const tilerap_csr *M, int transpose, const double *x, double *y)
{
  if (transpose) memset(y, 0, (size_t)M->n * sizeof *y);
  for (int32_t i = 0; i < M->m; i++) {
    double s = 0;
    for (int64_t k = M->rowptr[i]; k < M->rowptr[i + 1]; k++) {
      if (transpose) y[M->colidx[k]] += M->val[k] * x[i];
      else s += M->val[k] * x[M->colidx[k]];
    }
    if (!transpose) y[i] = s;
  }
}

/* max |C x - P^T A P x| / max |P^T |A| |P| |x||: the tile product against
 * three products with vectors (the denominator bounds the rounding) */
static double check_level(const tilerap_csr *A, const tilerap_csr *P, const tilerap_csr *C)
{
  const int32_t n = A->m, nc = P->n;
  double *x = malloc((size_t)nc * sizeof *x), *px = malloc((size_t)n * sizeof *px), *apx = malloc((size_t)n * sizeof *apx);
  double *r = malloc((size_t)nc * sizeof *r), *cx = malloc((size_t)nc * sizeof *cx);
  tilerap_csr Aabs = *A, Pabs = *P;
  Aabs.val = malloc((size_t)A->nnz * sizeof(double));
  Pabs.val = malloc((size_t)P->nnz * sizeof(double));
  for (int64_t k = 0; k < A->nnz; k++) Aabs.val[k] = fabs(A->val[k]);
  for (int64_t k = 0; k < P->nnz; k++) Pabs.val[k] = fabs(P->val[k]);
  unsigned seed = 12345u;
  for (int32_t j = 0; j < nc; j++) { seed = seed * 1103515245u + 12345u; x[j] = (double)(seed >> 8) / 16777216.0 - 0.5; }
  spmv(P, 0, x, px); spmv(A, 0, px, apx); spmv(P, 1, apx, r);
  spmv(C, 0, x, cx);
  double err = 0, scale = 0;
  for (int32_t j = 0; j < nc; j++) err = fmax(err, fabs(cx[j] - r[j]));
  for (int32_t j = 0; j < nc; j++) x[j] = fabs(x[j]);
  spmv(&Pabs, 0, x, px); spmv(&Aabs, 0, px, apx); spmv(&Pabs, 1, apx, r);
  for (int32_t j = 0; j < nc; j++) scale = fmax(scale, r[j]);
  free(x); free(px); free(apx); free(r); free(cx); free(Aabs.val); free(Pabs.val);
  return scale > 0 ? err / scale : err;
}

/* the tile matrix T as a new CSR */
static tilerap_csr *to_csr(const tilerap_tile_matrix *T)
{
  tilerap_csr *M = NULL;
  if (tilerap_csr_create(T->m, T->n, T->nnz, &M) || tilerap_tile_to_csr(T, M->rowptr, M->colidx, M->val)) {
    fprintf(stderr, "%s\n", tilerap_last_error());
    exit(1);
  }
  return M;
}

int main(int argc, char **argv)
{
  tilerap_stencil s = TILERAP_P3D7;
  int32_t n = 50;
  tilerap_options opt;
  tilerap_options_default(&opt);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-stencil") && i + 1 < argc) {
      if (tilerap_stencil_parse(argv[++i], &s)) { fprintf(stderr, "%s\n", tilerap_last_error()); return 2; }
    } else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-engine") && i + 1 < argc) {
      if (tilerap_engine_parse(argv[++i], &opt.engine)) { fprintf(stderr, "%s\n", tilerap_last_error()); return 2; }
    } else {
      fprintf(stderr, "usage: %s [-stencil p2d5|p2d9|p3d7|p3d27] [-n N] [-engine auto|cpu|cuda]\n", argv[0]);
      return 2;
    }
  }
  tilerap_csr *A = NULL;
  int32_t dims[3], cd[3];
  int nd;
  if (tilerap_model_poisson(s, n, &A, dims, &nd)) { fprintf(stderr, "%s\n", tilerap_last_error()); return 1; }
  printf("tilerap %d.%d.%d poisson-hierarchy: %s on a %d^%d grid, engine %s\n", TILERAP_VERSION_MAJOR,
         TILERAP_VERSION_MINOR, TILERAP_VERSION_PATCH, tilerap_stencil_name(s), n, nd,
         tilerap_engine_name(tilerap_engine_resolve(opt.engine)));
  printf("%5s %10s %12s %10s %10s %8s %10s %10s %10s\n", "level", "rows", "nnz(A)", "tiles(A)", "nnz(P)", "cols(P)",
         "plan_ms", "numeric_ms", "check");
  tilerap_tile_matrix *tA = NULL;
  if (tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &tA)) {
    fprintf(stderr, "%s\n", tilerap_last_error());
    return 1;
  }
  tilerap_csr *Aref = A;
  int status = 0;
  for (int level = 0; level < 6 && Aref->m >= 500; level++) {
    tilerap_csr *P = NULL;
    tilerap_model_prolongator(Aref, nd, dims, 2.0 / 3.0, &P, cd);
    tilerap_tile_matrix *tP = NULL, *tC = NULL;
    tilerap_ptap_plan plan = NULL;
    int err = tilerap_tile_from_csr(P->m, P->n, P->rowptr, P->colidx, P->val, &tP);
    double t0 = wtime();
    if (!err) err = tilerap_ptap_plan_create(tA, tP, &opt, &plan, &tC);
    double t1 = wtime();
    if (!err) err = tilerap_ptap_numeric(plan, tA, tP, tC);
    double t2 = wtime();
    if (err) { fprintf(stderr, "level %d: %s\n", level, tilerap_last_error()); return 1; }
    tilerap_csr *C = to_csr(tC);
    double e = check_level(Aref, P, C);
    printf("%5d %10d %12lld %10lld %10lld %8d %10.2f %10.2f %10.1e %s\n", level, tA->m, (long long)tA->nnz,
           (long long)tA->num_tiles, (long long)P->nnz, P->n, 1e3 * (t1 - t0), 1e3 * (t2 - t1), e,
           e <= 1e-14 ? "ok" : "MISMATCH");
    if (!(e <= 1e-14)) status = 1;
    tilerap_ptap_plan_destroy(&plan);
    tilerap_tile_destroy(&tA);
    tilerap_tile_destroy(&tP);
    tA = tC; /* the tile output is the next level's input */
    tilerap_csr_destroy(&P);
    if (Aref != A) tilerap_csr_destroy(&Aref);
    Aref = C;
    memcpy(dims, cd, sizeof cd);
  }
  printf("coarsest: %d rows, %lld entries; %s\n", tA->m, (long long)tA->nnz,
         status ? "SOME LEVELS FAIL THE CHECK" : "every level passes the check");
  tilerap_tile_destroy(&tA);
  if (Aref != A) tilerap_csr_destroy(&Aref);
  tilerap_csr_destroy(&A);
  return status;
}
