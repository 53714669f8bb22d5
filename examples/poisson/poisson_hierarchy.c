/* poisson-hierarchy: core-engine demo.  Builds a smoothed-aggregation
 * hierarchy for a Poisson model problem with tilerap's Galerkin plans
 * (each level's tile output is the next level's input), prints per-level
 * sizes and times, and checks every level against a plain CSR reference.
 *
 *   poisson-hierarchy [-stencil p2d5|p2d9|p3d7|p3d27] [-n N] [-engine auto|cpu|cuda]
 */
#include "tilerap.h"
#include "tilerap_model.h"
#include "../../test/ref_gustavson.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
         "plan_ms", "numeric_ms", "relerr");
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
    tilerap_tile_matrix *tP = ref_csr_to_tile(P), *tC = NULL;
    tilerap_ptap_plan plan = NULL;
    double t0 = ref_wtime();
    int err = tilerap_ptap_plan_create(tA, tP, &opt, &plan, &tC);
    double t1 = ref_wtime();
    if (!err) err = tilerap_ptap_numeric(plan, tA, tP, tC);
    double t2 = ref_wtime();
    if (err) { fprintf(stderr, "level %d: %s\n", level, tilerap_last_error()); return 1; }
    tilerap_csr *Cref = ref_ptap(Aref, P), *C = ref_tile_to_csr(tC);
    double e = ref_same_structure(C, Cref) ? ref_relerr(C, Cref) : INFINITY;
    printf("%5d %10d %12lld %10lld %10lld %8d %10.2f %10.2f %10.1e %s\n", level, tA->m, (long long)tA->nnz,
           (long long)tA->num_tiles, (long long)P->nnz, P->n, 1e3 * (t1 - t0), 1e3 * (t2 - t1), e,
           e <= 1e-14 ? "ok" : "MISMATCH");
    if (!(e <= 1e-14)) status = 1;
    tilerap_ptap_plan_destroy(&plan);
    tilerap_tile_destroy(&tA);
    tilerap_tile_destroy(&tP);
    tA = tC; /* the tile output is the next level's input */
    tilerap_csr_destroy(&C);
    tilerap_csr_destroy(&P);
    if (Aref != A) tilerap_csr_destroy(&Aref);
    Aref = Cref;
    memcpy(dims, cd, sizeof cd);
  }
  printf("coarsest: %d rows, %lld entries; %s\n", tA->m, (long long)tA->nnz,
         status ? "SOME LEVELS DIFFER FROM THE REFERENCE" : "all levels match the reference");
  tilerap_tile_destroy(&tA);
  if (Aref != A) tilerap_csr_destroy(&Aref);
  tilerap_csr_destroy(&A);
  return status;
}
