/* Helpers of the PETSc-layer tests: deterministic random AIJ matrices and a
 * comparison of two assembled AIJ(-derived) matrices by their CSR arrays. */
#ifndef TILERAP_PETSC_TESTUTIL_H
#define TILERAP_PETSC_TESTUTIL_H
#include <petscksp.h>
#include <stdarg.h>
#include <stdio.h>
#include "tap.h"

/* A PETSc built with CUDA (3.25 on) makes the tile types AIJCUSPARSE
 * underneath: device types, whose references are PETSc's device AIJ and
 * which need CUDA vectors. */
#if defined(PETSC_HAVE_CUDA) && !PETSC_VERSION_LT(3, 25, 0)
  #define TU_DEVICE_TYPES 1
#else
  #define TU_DEVICE_TYPES 0
#endif

/* MPI datatype of PetscBool: MPIU_BOOL, deprecated since PETSc 3.24 for MPI_C_BOOL */
#if PETSC_VERSION_GE(3, 24, 0)
  #define TILE_TEST_MPI_BOOL MPI_C_BOOL
#else
  #define TILE_TEST_MPI_BOOL MPIU_BOOL
#endif

/* 64-bit LCG: the same matrices on every run and machine. */
static inline double tu_rand(unsigned long long *s)
{
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* m x n matrix of type `type` with about `per_row` random entries per row
 * (values in [-1,1)), plus the diagonal when `diag`; block sizes rbs x cbs. */
static inline PetscErrorCode tu_random_mat(MPI_Comm comm, MatType type, PetscInt m, PetscInt n, PetscInt per_row, PetscBool diag, PetscInt rbs, PetscInt cbs,
                                           unsigned long long seed, Mat *A)
{
  unsigned long long s = seed;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, m, n, m, n));
  PetscCall(MatSetBlockSizes(*A, rbs, cbs));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, per_row + 1, NULL));
  for (PetscInt i = 0; i < m; i++) {
    for (PetscInt k = 0; k < per_row; k++) {
      PetscInt    j = (PetscInt)(tu_rand(&s) * n);
      PetscScalar v = 2.0 * tu_rand(&s) - 1.0;
      if (j >= n) j = n - 1;
      PetscCall(MatSetValue(*A, i, j, v, INSERT_VALUES));
    }
    if (diag && i < n) PetscCall(MatSetValue(*A, i, i, 4.0 + tu_rand(&s), INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* X's CSR arrays in host memory (brought up to date there from the
 * device for GPU types); tu_host_csr_end releases them. */
static inline PetscErrorCode tu_host_csr(Mat X, const PetscInt **ai, const PetscInt **aj, const PetscScalar **aa)
{
  PetscInt  n;
  PetscBool done;

  PetscFunctionBeginUser;
  PetscCall(MatGetRowIJ(X, 0, PETSC_FALSE, PETSC_FALSE, &n, ai, aj, &done));
  PetscCheck(done, PETSC_COMM_SELF, PETSC_ERR_SUP, "no row structure");
  PetscCall(MatSeqAIJGetArrayRead(X, aa));
  PetscFunctionReturn(0);
}

static inline PetscErrorCode tu_host_csr_end(Mat X, const PetscInt **ai, const PetscInt **aj, const PetscScalar **aa)
{
  PetscInt  n;
  PetscBool done;

  PetscFunctionBeginUser;
  PetscCall(MatSeqAIJRestoreArrayRead(X, aa));
  PetscCall(MatRestoreRowIJ(X, 0, PETSC_FALSE, PETSC_FALSE, &n, ai, aj, &done));
  PetscFunctionReturn(0);
}

/* Compares the first m rows of two assembled sequential AIJ matrices: *same
 * is cleared on any structural difference; while the structure agrees,
 * sum (x-y)^2 and sum y^2 are added to acc[0], acc[1]. */
static inline PetscErrorCode tu_csr_diff(Mat X, Mat Y, PetscInt m, PetscBool *same, PetscReal acc[2])
{
  const PetscInt    *xi, *xj, *yi, *yj;
  const PetscScalar *xa, *ya;

  PetscFunctionBeginUser;
  PetscCall(tu_host_csr(X, &xi, &xj, &xa));
  PetscCall(tu_host_csr(Y, &yi, &yj, &ya));
  for (PetscInt i = 0; i <= m && *same; i++)
    if (xi[i] != yi[i]) *same = PETSC_FALSE;
  for (PetscInt k = 0; *same && k < xi[m]; k++)
    if (xj[k] != yj[k]) *same = PETSC_FALSE;
  for (PetscInt k = 0; *same && k < xi[m]; k++) {
    PetscReal d = PetscRealPart(xa[k] - ya[k]);
    acc[0] += d * d;
    acc[1] += PetscRealPart(ya[k] * ya[k]);
  }
  PetscCall(tu_host_csr_end(X, &xi, &xj, &xa));
  PetscCall(tu_host_csr_end(Y, &yi, &yj, &ya));
  PetscFunctionReturn(0);
}

static inline PetscReal tu_relerr(const PetscReal acc[2])
{
  return acc[1] > 0 ? PetscSqrtReal(acc[0] / acc[1]) : PetscSqrtReal(acc[0]);
}

/* Same CSR structure? and ||X-Y||_F / ||Y||_F.  Both must be sequential AIJ
 * (or derived) and assembled. */
static inline PetscErrorCode tu_compare(Mat X, Mat Y, PetscBool *same_structure, PetscReal *relerr)
{
  PetscInt  xm, xn, ym, yn;
  PetscReal acc[2] = {0, 0};

  PetscFunctionBeginUser;
  *same_structure = PETSC_FALSE;
  *relerr         = PETSC_MAX_REAL;
  PetscCall(MatGetSize(X, &xm, &xn));
  PetscCall(MatGetSize(Y, &ym, &yn));
  if (xm != ym || xn != yn) PetscFunctionReturn(0);
  *same_structure = PETSC_TRUE;
  PetscCall(tu_csr_diff(X, Y, xm, same_structure, acc));
  if (*same_structure) *relerr = tu_relerr(acc);
  PetscFunctionReturn(0);
}

/* MPI AIJ-like matrices: same layout and local structure on every rank?
 * global ||X-Y||_F/||Y||_F (PETSC_MAX_REAL when not the same). */
static inline PetscErrorCode tu_mpi_compare(Mat X, Mat Y, PetscBool *same, PetscReal *relerr)
{
  MPI_Comm  comm = PetscObjectComm((PetscObject)X);
  Mat       Xa, Ya, Xl, Yl;
  PetscInt  xm, xn, ym, yn, XM, XN, YM, YN;
  PetscReal loc[2] = {0, 0}, glob[2];
  PetscBool s      = PETSC_TRUE;

  PetscFunctionBeginUser;
  PetscCall(MatConvert(X, MATMPIAIJ, MAT_INITIAL_MATRIX, &Xa));
  PetscCall(MatConvert(Y, MATMPIAIJ, MAT_INITIAL_MATRIX, &Ya));
  PetscCall(MatMPIAIJGetLocalMat(Xa, MAT_INITIAL_MATRIX, &Xl));
  PetscCall(MatMPIAIJGetLocalMat(Ya, MAT_INITIAL_MATRIX, &Yl));
  PetscCall(MatGetLocalSize(X, &xm, &xn));
  PetscCall(MatGetLocalSize(Y, &ym, &yn));
  PetscCall(MatGetSize(X, &XM, &XN));
  PetscCall(MatGetSize(Y, &YM, &YN));
  if (xm != ym || xn != yn || XM != YM || XN != YN) s = PETSC_FALSE;
  if (s) PetscCall(tu_csr_diff(Xl, Yl, xm, &s, loc));
  PetscCall(MPIU_Allreduce(&s, same, 1, TILE_TEST_MPI_BOOL, MPI_LAND, comm));
  PetscCall(MPIU_Allreduce(loc, glob, 2, MPIU_REAL, MPIU_SUM, comm));
  *relerr = *same ? tu_relerr(glob) : PETSC_MAX_REAL;
  PetscCall(MatDestroy(&Xl));
  PetscCall(MatDestroy(&Yl));
  PetscCall(MatDestroy(&Xa));
  PetscCall(MatDestroy(&Ya));
  PetscFunctionReturn(0);
}

/* Galerkin identity of a PCMG hierarchy: op[l] (type aij) against aij's
 * P^T op[l+1] P for l + 1 < nlev; the worst cmp error and whether every
 * level had the same structure. */
static inline PetscErrorCode tu_galerkin_levels(PC pc, PetscInt nlev, Mat op[], MatType aij, PetscErrorCode (*cmp)(Mat, Mat, PetscBool *, PetscReal *), PetscReal *worst, PetscBool *all_same)
{
  PetscFunctionBeginUser;
  *worst    = 0;
  *all_same = PETSC_TRUE;
  for (PetscInt l = 0; l + 1 < nlev; l++) {
    Mat       P, Paij, Cref;
    PetscBool same;
    PetscReal err;
    PetscCall(PCMGGetInterpolation(pc, l + 1, &P));
    PetscCall(MatConvert(P, aij, MAT_INITIAL_MATRIX, &Paij));
    PetscCall(MatPtAP(op[l + 1], Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(cmp(op[l], Cref, &same, &err));
    if (!same) *all_same = PETSC_FALSE;
    *worst = PetscMax(*worst, err);
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatDestroy(&Paij));
  }
  PetscFunctionReturn(0);
}

/* MatDestroy of each of n matrices */
static inline PetscErrorCode tu_destroy_mats(int n, Mat *m[])
{
  PetscFunctionBeginUser;
  for (int k = 0; k < n; k++) PetscCall(MatDestroy(m[k]));
  PetscFunctionReturn(0);
}

/* X's -mat_view ::ascii_info text (through a file: PETSc's string viewer
 * takes no ASCII formats), at most len - 1 characters into buf */
static inline PetscErrorCode tu_view_info(Mat X, const char *file, char *buf, size_t len)
{
  PetscViewer sv;

  PetscFunctionBeginUser;
  PetscCall(PetscViewerASCIIOpen(PetscObjectComm((PetscObject)X), file, &sv));
  PetscCall(PetscViewerPushFormat(sv, PETSC_VIEWER_ASCII_INFO));
  PetscCall(MatView(X, sv));
  PetscCall(PetscViewerPopFormat(sv));
  PetscCall(PetscViewerDestroy(&sv));
  {
    FILE  *f   = fopen(file, "r");
    size_t got = f ? fread(buf, 1, len - 1, f) : 0;
    buf[got]   = 0;
    if (f) fclose(f);
    remove(file);
  }
  PetscFunctionReturn(0);
}

/* Number of times a log event ran so far (logging must be on). */
static inline PetscErrorCode tu_event_count(const char *name, PetscInt *count)
{
  PetscLogEvent      ev;
  PetscEventPerfInfo info;

  PetscFunctionBeginUser;
  PetscCall(PetscLogEventGetId(name, &ev));
  PetscCall(PetscLogEventGetPerfInfo(0, ev, &info));
  *count = info.count;
  PetscFunctionReturn(0);
}

/* KSP of the GAMG tests: CG to 1e-10 (200 its), GAMG with reuse as given and
 * coarse equation limit 20; the caller adds options, then KSPSetFromOptions. */
static inline PetscErrorCode tu_gamg_ksp(MPI_Comm comm, Mat A, PetscBool reuse, KSP *ksp)
{
  PC pc;

  PetscFunctionBeginUser;
  PetscCall(KSPCreate(comm, ksp));
  PetscCall(KSPSetOperators(*ksp, A, A));
  PetscCall(KSPSetType(*ksp, KSPCG));
  PetscCall(KSPSetTolerances(*ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 200));
  PetscCall(KSPGetPC(*ksp, &pc));
  PetscCall(PCSetType(pc, PCGAMG));
  PetscCall(PCGAMGSetReuseInterpolation(pc, reuse));
  PetscCall(PCGAMGSetCoarseEqLim(pc, 20));
  PetscFunctionReturn(0);
}

/* Re-solves with the (re-assembled) A from x = 0; counts the TileRAP plans
 * and numeric products that the re-setup ran. */
static inline PetscErrorCode tu_gamg_resolve(KSP ksp, Mat A, Vec b, Vec x, PetscInt *plans, PetscInt *numerics)
{
  PetscInt p0, p1, n0, n1;

  PetscFunctionBeginUser;
  PetscCall(tu_event_count("TileRAPPlan", &p0));
  PetscCall(tu_event_count("TileRAPNumeric", &n0));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(VecSet(x, 0.0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(tu_event_count("TileRAPPlan", &p1));
  PetscCall(tu_event_count("TileRAPNumeric", &n1));
  *plans    = p1 - p0;
  *numerics = n1 - n0;
  PetscFunctionReturn(0);
}

/* Collective TAP check on PETSC_COMM_WORLD: passes when cond holds on every
 * rank; rank 0 prints, the other ranks count a failure too (exit status). */
static inline PetscErrorCode tu_ok(PetscBool cond, const char *fmt, ...)
{
  PetscMPIInt rank, size;
  PetscBool   all;
  char        buf[1024];
  va_list     ap;

  PetscFunctionBeginUser;
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  PetscCall(MPIU_Allreduce(&cond, &all, 1, TILE_TEST_MPI_BOOL, MPI_LAND, PETSC_COMM_WORLD));
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (rank == 0) tap_ok(all, "[np=%d] %s", (int)size, buf);
  else if (!all) {
    tap_count++;
    tap_failed++;
  }
  PetscFunctionReturn(0);
}

/* tap_diag on rank 0 only. */
#define tu_diag(...) \
  do { \
    PetscMPIInt tu_r_; \
    MPI_Comm_rank(PETSC_COMM_WORLD, &tu_r_); \
    if (!tu_r_) tap_diag(__VA_ARGS__); \
  } while (0)
#endif
