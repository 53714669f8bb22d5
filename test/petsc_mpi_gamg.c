/* GAMG with MATMPITILE against MATMPIAIJ on DMDA Poisson problems, on any
 * number of ranks (TAP; test/petsc_mpi.sh runs it with mpiexec -n 1, 2, 4):
 * every level operator equal to MPIAIJ's to 1e-12 with the same layout and
 * structure, the same iteration count, coarse operators of type mpiaijtile
 * and each equal to MPIAIJ's P^T A P of its own level, tile plans built on
 * every rank; one case with repartitioning and process reduction on the
 * coarse levels (MatCreateSubMatrix, -pc_gamg_process_eq_limit); a re-setup
 * with reused interpolation after new values runs numeric phases only
 * (without process reduction, for which GAMG itself recomputes the reduced
 * level with MAT_INITIAL_MATRIX). */
#include <petscdmda.h>
#include <petscksp.h>
#include "tilerap_petsc.h"
#include "petsc_testutil.h"

/* A PETSc built with CUDA (3.25 on) makes mpitile MPIAIJCUSPARSE
 * underneath: the reference run is then mpiaijcusparse, both with CUDA
 * vectors (a device matrix needs them). */
#if TU_DEVICE_TYPES
  #define REF_TYPE MATMPIAIJCUSPARSE
#else
  #define REF_TYPE MATMPIAIJ
#endif

#define MAXLEV 16

typedef struct {
  PetscInt           nlev, its;
  KSPConvergedReason reason;
  PetscReal          rnorm;
  Mat                op[MAXLEV]; /* MPIAIJ copies of the level operators, finest last */
  PetscReal          galerkin;
  PetscBool          galerkin_same, tile_coarse;
  PetscInt           min_active; /* fewest ranks owning rows of a level */
} Run;

static PetscErrorCode assemble_poisson(DM da, PetscInt dim, PetscReal scale, Mat A)
{
  DMDALocalInfo info;
  MatStencil    row, col[7];
  PetscScalar   v[7];

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  PetscCall(MatZeroEntries(A));
  for (PetscInt k = info.zs; k < info.zs + (dim == 3 ? info.zm : 1); k++)
    for (PetscInt j = info.ys; j < info.ys + info.ym; j++)
      for (PetscInt i = info.xs; i < info.xs + info.xm; i++) {
        PetscInt nc = 0;
        row.i = i; row.j = j; row.k = k; row.c = 0;
        col[nc] = row; v[nc++] = scale * 2.0 * dim;
        const PetscInt d[6][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}};
        for (PetscInt s = 0; s < 2 * dim; s++) {
          PetscInt ii = i + d[s][0], jj = j + d[s][1], kk = k + d[s][2];
          if (ii < 0 || ii >= info.mx || jj < 0 || jj >= info.my || (dim == 3 && (kk < 0 || kk >= info.mz))) continue;
          col[nc].i = ii; col[nc].j = jj; col[nc].k = kk; col[nc].c = 0;
          v[nc++] = -scale;
        }
        PetscCall(MatSetValuesStencil(A, 1, &row, nc, col, v, INSERT_VALUES));
      }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode collect(KSP ksp, Run *r)
{
  PC pc;

  PetscFunctionBeginUser;
  PetscCall(KSPGetIterationNumber(ksp, &r->its));
  PetscCall(KSPGetResidualNorm(ksp, &r->rnorm));
  PetscCall(KSPGetConvergedReason(ksp, &r->reason));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCMGGetLevels(pc, &r->nlev));
  r->tile_coarse = PETSC_TRUE;
  r->min_active  = PETSC_MAX_INT;
  for (PetscInt l = 0; l < r->nlev && l < MAXLEV; l++) {
    KSP         sm;
    Mat         Al;
    PetscBool   istile;
    PetscMPIInt has, active;
    PetscInt    mloc;
    PetscCall(PCMGGetSmoother(pc, l, &sm));
    PetscCall(KSPGetOperators(sm, &Al, NULL));
    PetscCall(PetscObjectTypeCompare((PetscObject)Al, MATMPIAIJTILE, &istile));
    if (l < r->nlev - 1 && !istile) r->tile_coarse = PETSC_FALSE;
    PetscCall(MatGetLocalSize(Al, &mloc, NULL));
    has = mloc > 0;
    PetscCall(MPIU_Allreduce(&has, &active, 1, MPI_INT, MPI_SUM, PetscObjectComm((PetscObject)Al)));
    r->min_active = PetscMin(r->min_active, active);
    PetscCall(MatDestroy(&r->op[l]));
    PetscCall(MatConvert(Al, MATMPIAIJ, MAT_INITIAL_MATRIX, &r->op[l]));
  }
  PetscCall(tu_galerkin_levels(pc, PetscMin(r->nlev, MAXLEV), r->op, MATMPIAIJ, tu_mpi_compare, &r->galerkin, &r->galerkin_same));
  PetscFunctionReturn(0);
}

static PetscErrorCode run(PetscInt dim, PetscInt n, MatType type, PetscBool repart, PetscBool reuse, Run *first, Run *second, PetscInt *plans, PetscInt *numerics)
{
  DM       da;
  Mat      A;
  Vec      x, b;
  KSP      ksp;
  PC       pc;

  PetscFunctionBeginUser;
  if (dim == 2) PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n, n, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
  else PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DMDA_STENCIL_STAR, n, n, n, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, NULL, &da));
  PetscCall(DMSetUp(da));
  PetscCall(DMSetMatType(da, type));
#if TU_DEVICE_TYPES
  PetscCall(DMSetVecType(da, VECCUDA));
#endif
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(assemble_poisson(da, dim, 1.0, A));
  PetscCall(DMCreateGlobalVector(da, &x));
  PetscCall(VecDuplicate(x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(tu_gamg_ksp(PETSC_COMM_WORLD, A, reuse, &ksp));
  PetscCall(KSPGetPC(ksp, &pc));
  if (repart) {
    PetscCall(PCGAMGSetRepartition(pc, PETSC_TRUE));
    PetscCall(PCGAMGSetProcEqLim(pc, 200));
  }
  if (reuse) { /* no process reduction: GAMG reuses every level's product (a reduced level it recomputes) */
    PetscMPIInt size;
    PetscCall(PCGAMGSetProcEqLim(pc, 1));
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    /* on one rank the coarse solve is then LU on the MPI matrix, which
     * needs an MPI LU package (MUMPS, SuperLU_dist); without one it is
     * left out there, where the coarse level stays on the rank anyway */
    PetscBool par_coarse = (PetscBool)(size > 1);
#if defined(PETSC_HAVE_MUMPS) || defined(PETSC_HAVE_SUPERLU_DIST)
    par_coarse = PETSC_TRUE;
#endif
#if PETSC_VERSION_LT(3, 20, 0)
    if (par_coarse) PetscCall(PCGAMGSetUseParallelCoarseGridSolve(pc, PETSC_TRUE));
#else
    if (par_coarse) PetscCall(PCGAMGSetParallelCoarseGridSolve(pc, PETSC_TRUE));
#endif
  }
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(collect(ksp, first));
  if (reuse) {
    PetscCall(assemble_poisson(da, dim, 3.0, A));
    PetscCall(MatShift(A, 0.5));
    PetscCall(tu_gamg_resolve(ksp, A, b, x, plans, numerics));
    PetscCall(collect(ksp, second));
  }
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscFunctionReturn(0);
}

static PetscErrorCode compare_runs(const char *name, Run *t, Run *a)
{
  PetscBool allsame = PETSC_TRUE;
  PetscReal maxerr  = 0, first = 0;
  /* bit-for-bit AIJ order only where every step runs on the host; else
   * (as in test/petsc_gamg.c) the first coarse operator to 1e-12 and the
   * deeper ones through the Galerkin identity of their own level */
  PetscBool host = (PetscBool)(!TU_DEVICE_TYPES && tilerap_engine_resolve(TILERAP_ENGINE_AUTO) == TILERAP_ENGINE_CPU);

  PetscFunctionBeginUser;
  PetscCall(tu_ok((PetscBool)(t->nlev == a->nlev && t->nlev > 1), "%s: same number of GAMG levels (%d vs %d)", name, (int)t->nlev, (int)a->nlev));
  for (PetscInt l = 0; l < PetscMin(t->nlev, a->nlev) && l < MAXLEV; l++) {
    PetscBool same;
    PetscReal err;
    PetscCall(tu_mpi_compare(t->op[l], a->op[l], &same, &err));
    if (!same) allsame = PETSC_FALSE;
    maxerr = PetscMax(maxerr, err);
    if (l == t->nlev - 2) first = err;
    tu_diag("%s: level %d: same layout and structure %d, rel. error %.2e", name, (int)l, (int)same, (double)err);
  }
  if (host) PetscCall(tu_ok((PetscBool)(allsame && maxerr <= 1e-12), "%s: every level operator has %s's layout and structure, max rel. error %.2e", name, REF_TYPE, (double)maxerr));
  else PetscCall(tu_ok((PetscBool)(allsame && first <= 1e-12), "%s: every level has %s's layout and structure, first coarse level rel. error %.2e (deeper levels %.2e, GAMG's sensitivity)", name, REF_TYPE, (double)first, (double)maxerr));
  PetscCall(tu_ok(t->tile_coarse, "%s: coarse operators are mpiaijtile", name));
  PetscCall(tu_ok((PetscBool)(t->galerkin_same && t->galerkin <= 1e-13), "%s: every coarse operator is P^T A P of its own level (MPIAIJ MatPtAP) to %.2e", name, (double)t->galerkin));
  PetscCall(tu_ok((PetscBool)(t->reason > 0 && a->reason > 0 && t->its == a->its), "%s: both converged, same iterations (%d vs %d)", name, (int)t->its, (int)a->its));
  PetscCall(tu_ok((PetscBool)(PetscAbsReal(t->rnorm - a->rnorm) <= (host ? 1e-8 : 1e-6) * a->rnorm), "%s: final residual %.6e vs %.6e", name, (double)t->rnorm, (double)a->rnorm));
  PetscFunctionReturn(0);
}

static PetscErrorCode free_run(Run *r)
{
  PetscFunctionBeginUser;
  for (PetscInt l = 0; l < MAXLEV; l++) PetscCall(MatDestroy(&r->op[l]));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  struct {
    PetscInt  dim, n;
    PetscBool repart;
  } cases[] = {{2, 65, PETSC_FALSE}, {3, 17, PETSC_FALSE}, {2, 65, PETSC_TRUE}};
  PetscMPIInt size, rank;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscLogDefaultBegin());
  PetscCall(TileRAPInitializePackage());
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  /* the tile path on any number of ranks (its automatic choice on several
   * CPU ranks is MPIAIJ's algorithms: petsc_mpi_product checks it) */
  PetscCall(PetscOptionsSetValue(NULL, "-mat_tile_mpi_products", "tile"));
  /* MPIAIJ's reference by the same distributed algorithm as the tile run
   * (PETSc's backend: local products, C assembled from COO), so that the
   * hierarchies differ only by their local products.  With MPIAIJ's default
   * (scalable) algorithms the sums run in another order, and GAMG's setup
   * magnifies that level by level (2 ranks, 3-D: 7e-17 on the first coarse
   * level, 1.2e-12 on PETSc 3.25's coarsest) */
  PetscCall(PetscOptionsSetValue(NULL, "-matptap_via", "backend"));
  PetscCall(PetscOptionsSetValue(NULL, "-matmatmult_via", "backend"));
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    Run      t = {0}, a = {0};
    char     name[96];
    PetscInt pl0 = 0, pl1 = 0;
    PetscCall(PetscSNPrintf(name, sizeof name, "%dD n=%d%s", (int)cases[c].dim, (int)cases[c].n, cases[c].repart ? " repartition, process_eq_limit 200" : ""));
#if !defined(PETSC_HAVE_PARMETIS) && !defined(PETSC_HAVE_PTSCOTCH) && !defined(PETSC_HAVE_CHACO) && !defined(PETSC_HAVE_PARTY)
    if (cases[c].repart && size > 1) { /* GAMG's repartitioning needs a partitioner package on several ranks */
      tu_diag("%s: skipped, this PETSc has no partitioner package", name);
      continue;
    }
#endif
    PetscCall(tu_event_count("TileRAPPlan", &pl0));
    PetscCall(run(cases[c].dim, cases[c].n, MATMPITILE, cases[c].repart, PETSC_FALSE, &t, NULL, NULL, NULL));
    PetscCall(tu_event_count("TileRAPPlan", &pl1));
    PetscCall(run(cases[c].dim, cases[c].n, REF_TYPE, cases[c].repart, PETSC_FALSE, &a, NULL, NULL, NULL));
    PetscCall(compare_runs(name, &t, &a));
    PetscCall(tu_ok((PetscBool)(pl1 - pl0 >= t.nlev - 1), "%s: tile plans built on every rank (this rank: %d)", name, (int)(pl1 - pl0)));
    if (cases[c].repart && size > 1) PetscCall(tu_ok((PetscBool)(t.min_active < size && t.min_active == a.min_active), "%s: coarse levels on fewer ranks (down to %d of %d, MPIAIJ %d)", name, (int)t.min_active, (int)size, (int)a.min_active));
    PetscCall(free_run(&t));
    PetscCall(free_run(&a));
  }
  {
    Run      t1 = {0}, t2 = {0}, a1 = {0}, a2 = {0};
    PetscInt plans = -1, numerics = -1, d1, d2;
    PetscCall(run(2, 65, MATMPITILE, PETSC_FALSE, PETSC_TRUE, &t1, &t2, &plans, &numerics));
    PetscCall(run(2, 65, REF_TYPE, PETSC_FALSE, PETSC_TRUE, &a1, &a2, &d1, &d2));
    PetscCall(compare_runs("reuse: first setup", &t1, &a1));
    PetscCall(compare_runs("reuse: second setup", &t2, &a2));
    PetscCall(tu_ok((PetscBool)(plans == 0 && numerics >= t2.nlev - 1), "-pc_gamg_reuse_interpolation re-setup: numeric phases only (this rank: plans %d, numeric phases %d, levels %d)", (int)plans, (int)numerics, (int)t2.nlev));
    PetscCall(free_run(&t1));
    PetscCall(free_run(&t2));
    PetscCall(free_run(&a1));
    PetscCall(free_run(&a2));
  }
  {
    int rc = rank == 0 ? tap_done() : (tap_failed ? 1 : 0);
    PetscCall(PetscFinalize());
    return rc;
  }
}
