/* Poisson driver for the PETSc tile matrix type: DMDA Laplacian (2D 5/9
 * point, 3D 7/27 point, Dirichlet boundary folded into the operator), CG
 * preconditioned by GAMG.  The matrix type comes from the DM
 * (-dm_mat_type aij | seqtile | mpitile | tile ...; "tile" is seqtile on one
 * rank and mpitile on more), so the same run compares AIJ and the tile
 * engine, sequentially or in parallel.  Prints iterations, residual, PCSetUp time and the time
 * spent in the Galerkin products (MatPtAP events), for the first setup and
 * for -resetups K re-setups with reused interpolation and new values.
 *
 *   poisson -dim 3 -n 65 -stencil 7 -dm_mat_type seqtile [-resetups 2]
 *   mpiexec -n 2 poisson -dim 3 -n 65 -dm_mat_type mpitile
 */
#include <petscdmda.h>
#include <petscksp.h>
#include "tilerap_petsc.h"

/* -wide E: symmetric diagonal scaling D A D with D = 2^e, e in [-E, E] a
 * fixed pseudo-random function of the grid point, so that entries span
 * many orders of magnitude (accuracy study of the low precisions). */
static PetscInt wide_exp = 0;
static PetscReal WideScale(PetscInt i, PetscInt j, PetscInt k)
{
  unsigned long long h = (unsigned long long)(i * 73856093LL) ^ (unsigned long long)(j * 19349663LL) ^ (unsigned long long)(k * 83492791LL);
  h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ULL; h ^= h >> 32;
  return wide_exp ? PetscPowReal(2.0, (PetscReal)((PetscInt)(h % (unsigned long long)(2 * wide_exp + 1)) - wide_exp)) : 1.0;
}

static PetscErrorCode Assemble(DM da, PetscInt dim, PetscInt stencil, PetscReal scale, Mat A)
{
  DMDALocalInfo info;
  MatStencil    row, col[27];
  PetscScalar   v[27];
  PetscBool     box = (PetscBool)(stencil == 9 || stencil == 27);

  PetscFunctionBeginUser;
  PetscCall(DMDAGetLocalInfo(da, &info));
  for (PetscInt k = info.zs; k < info.zs + (dim == 3 ? info.zm : 1); k++)
    for (PetscInt j = info.ys; j < info.ys + info.ym; j++)
      for (PetscInt i = info.xs; i < info.xs + info.xm; i++) {
        PetscInt nc = 0;
        row.i = i; row.j = j; row.k = k; row.c = 0;
        for (PetscInt dk = (dim == 3 ? -1 : 0); dk <= (dim == 3 ? 1 : 0); dk++)
          for (PetscInt dj = -1; dj <= 1; dj++)
            for (PetscInt di = -1; di <= 1; di++) {
              PetscInt far = (di != 0) + (dj != 0) + (dk != 0);
              if (far > 1 && !box) continue;
              if (i + di < 0 || i + di >= info.mx || j + dj < 0 || j + dj >= info.my) continue;
              if (dim == 3 && (k + dk < 0 || k + dk >= info.mz)) continue;
              col[nc].i = i + di; col[nc].j = j + dj; col[nc].k = k + dk; col[nc].c = 0;
              /* box stencils: the classic 8/-1 (2D) and 26/-1 (3D) operators */
              v[nc] = scale * (far == 0 ? (box ? (dim == 3 ? 26.0 : 8.0) : 2.0 * dim) : -1.0) * WideScale(i, j, k) * WideScale(i + di, j + dj, k + dk);
              nc++;
            }
        PetscCall(MatSetValuesStencil(A, 1, &row, nc, col, v, INSERT_VALUES));
      }
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* Total time and count of a log event so far (0 if it never ran). */
static PetscErrorCode EventTime(const char *name, PetscLogDouble *t, PetscInt *count)
{
  PetscLogEvent      ev;
  PetscEventPerfInfo info;

  PetscFunctionBeginUser;
  *t     = 0;
  *count = 0;
  PetscCall(PetscLogEventGetId(name, &ev));
  PetscCall(PetscLogEventGetPerfInfo(0, ev, &info));
  *t     = info.time;
  *count = info.count;
  PetscFunctionReturn(0);
}

typedef struct {
  PetscLogDouble ptap, plan, numeric;
} Galerkin;

static PetscErrorCode GalerkinNow(Galerkin *g)
{
  PetscInt       c;
  PetscLogDouble sym, num;

  PetscFunctionBeginUser;
  /* MatPtAP() is logged as its symbolic and numeric phases */
  PetscCall(EventTime("MatPtAPSymbolic", &sym, &c));
  PetscCall(EventTime("MatPtAPNumeric", &num, &c));
  g->ptap = sym + num;
  PetscCall(EventTime("TileRAPPlan", &g->plan, &c));
  PetscCall(EventTime("TileRAPNumeric", &g->numeric, &c));
  PetscFunctionReturn(0);
}

static PetscErrorCode SetupAndSolve(KSP ksp, Vec b, Vec x, const char *label)
{
  PC                 pc;
  PetscLogDouble     t0, t1, t2;
  Galerkin           g0, g1;
  PetscInt           its, nlev;
  PetscReal          rnorm;
  KSPConvergedReason reason;

  PetscFunctionBeginUser;
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(VecSet(x, 0.0));
  PetscCall(GalerkinNow(&g0));
  PetscCall(PetscTime(&t0));
  PetscCall(KSPSetUp(ksp));
  PetscCall(PCSetUp(pc));
  PetscCall(PetscTime(&t1));
  PetscCall(GalerkinNow(&g1));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(PetscTime(&t2));
  PetscCall(KSPGetIterationNumber(ksp, &its));
  PetscCall(KSPGetResidualNorm(ksp, &rnorm));
  PetscCall(KSPGetConvergedReason(ksp, &reason));
  PetscCall(PCMGGetLevels(pc, &nlev));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: %s, iterations %" PetscInt_FMT ", residual norm %.6e, GAMG levels %" PetscInt_FMT "\n", label, KSPConvergedReasons[reason], its, (double)rnorm, nlev));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "%s: PCSetUp %.4f s, Galerkin (MatPtAP symbolic+numeric) %.4f s [tile plan %.4f s, tile numeric %.4f s], solve %.4f s\n", label, t1 - t0, g1.ptap - g0.ptap, g1.plan - g0.plan,
                        g1.numeric - g0.numeric, t2 - t1));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  DM        da;
  Mat       A;
  Vec       x, b;
  KSP       ksp;
  PC        pc;
  PetscInt  dim = 2, n = 65, stencil = 0, resetups = 0;
  MatType   mtype;
  PetscBool flg;

  PetscCall(PetscInitialize(&argc, &argv, NULL, "tilerap Poisson driver: CG + GAMG on a DMDA Laplacian\n"));
  PetscCall(TileRAPInitializePackage());
  PetscCall(PetscLogIsActive(&flg));
  if (!flg) PetscCall(PetscLogDefaultBegin()); /* event times for the Galerkin report */
  PetscOptionsBegin(PETSC_COMM_WORLD, NULL, "Poisson driver options", "");
  PetscCall(PetscOptionsInt("-dim", "2 or 3", "", dim, &dim, NULL));
  PetscCall(PetscOptionsInt("-n", "grid points per direction", "", n, &n, NULL));
  PetscCall(PetscOptionsInt("-stencil", "5 or 9 (2D), 7 or 27 (3D)", "", stencil, &stencil, NULL));
  PetscCall(PetscOptionsInt("-wide", "scale the operator as D A D, D = 2^[-E,E] per grid point (0: off)", "", wide_exp, &wide_exp, NULL));
  PetscCall(PetscOptionsInt("-resetups", "re-setups with new values and reused interpolation", "", resetups, &resetups, NULL));
  PetscOptionsEnd();
  if (!stencil) stencil = dim == 2 ? 5 : 7;
  PetscCheck(dim == 2 || dim == 3, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-dim must be 2 or 3");
  PetscCheck((dim == 2 && (stencil == 5 || stencil == 9)) || (dim == 3 && (stencil == 7 || stencil == 27)), PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-stencil: 5|9 in 2D, 7|27 in 3D");
  PetscCheck(n >= 3, PETSC_COMM_WORLD, PETSC_ERR_ARG_OUTOFRANGE, "-n must be at least 3");

  if (dim == 2)
    PetscCall(DMDACreate2d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, stencil == 9 ? DMDA_STENCIL_BOX : DMDA_STENCIL_STAR, n, n, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL, NULL, &da));
  else
    PetscCall(DMDACreate3d(PETSC_COMM_WORLD, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, DM_BOUNDARY_NONE, stencil == 27 ? DMDA_STENCIL_BOX : DMDA_STENCIL_STAR, n, n, n, PETSC_DECIDE, PETSC_DECIDE, PETSC_DECIDE, 1, 1, NULL,
                           NULL, NULL, &da));
  PetscCall(DMSetMatType(da, MATAIJ));
  PetscCall(DMSetFromOptions(da)); /* -dm_mat_type */
  PetscCall(DMSetUp(da));
  PetscCall(DMCreateMatrix(da, &A));
  PetscCall(MatGetType(A, &mtype));
  PetscCall(Assemble(da, dim, stencil, 1.0, A));
  PetscCall(DMCreateGlobalVector(da, &x));
  PetscCall(VecDuplicate(x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "Poisson %" PetscInt_FMT "D %" PetscInt_FMT "-point, n = %" PetscInt_FMT " (%" PetscInt_FMT " unknowns), matrix type %s\n", dim, stencil, n, dim == 2 ? n * n : n * n * n, mtype));

  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 500));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCGAMG));
  if (resetups > 0) PetscCall(PCGAMGSetReuseInterpolation(pc, PETSC_TRUE));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(SetupAndSolve(ksp, b, x, "setup 0"));
  for (PetscInt r = 1; r <= resetups; r++) {
    char label[32];
    PetscCall(Assemble(da, dim, stencil, 1.0 + r, A)); /* new values, same pattern */
    PetscCall(KSPSetOperators(ksp, A, A));
    PetscCall(PetscSNPrintf(label, sizeof label, "setup %" PetscInt_FMT, r));
    PetscCall(SetupAndSolve(ksp, b, x, label));
  }
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(DMDestroy(&da));
  PetscCall(PetscFinalize());
  return 0;
}
