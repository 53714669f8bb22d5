/* Helpers of the PETSc-layer tests: deterministic random AIJ matrices and a
 * comparison of two assembled AIJ(-derived) matrices by their CSR arrays. */
#ifndef TILERAP_PETSC_TESTUTIL_H
#define TILERAP_PETSC_TESTUTIL_H
#include <petscmat.h>
#include <stdarg.h>
#include <stdio.h>
#include "tap.h"

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

/* Same CSR structure? and ||X-Y||_F / ||Y||_F.  Both must be sequential AIJ
 * (or derived) and assembled. */
static inline PetscErrorCode tu_compare(Mat X, Mat Y, PetscBool *same_structure, PetscReal *relerr)
{
  const PetscInt *xi, *xj, *yi, *yj;
  PetscScalar    *xa, *ya;
  PetscMemType    mt;
  PetscInt        xm, xn, ym, yn;
  PetscReal       num = 0, den = 0;

  PetscFunctionBeginUser;
  *same_structure = PETSC_FALSE;
  *relerr         = PETSC_MAX_REAL;
  PetscCall(MatGetSize(X, &xm, &xn));
  PetscCall(MatGetSize(Y, &ym, &yn));
  if (xm != ym || xn != yn) PetscFunctionReturn(0);
  PetscCall(MatSeqAIJGetCSRAndMemType(X, &xi, &xj, &xa, &mt));
  PetscCall(MatSeqAIJGetCSRAndMemType(Y, &yi, &yj, &ya, &mt));
  *same_structure = PETSC_TRUE;
  for (PetscInt i = 0; i <= xm; i++)
    if (xi[i] != yi[i]) *same_structure = PETSC_FALSE;
  if (*same_structure)
    for (PetscInt k = 0; k < xi[xm]; k++)
      if (xj[k] != yj[k]) *same_structure = PETSC_FALSE;
  if (!*same_structure) PetscFunctionReturn(0);
  for (PetscInt k = 0; k < xi[xm]; k++) {
    PetscReal d = PetscRealPart(xa[k] - ya[k]);
    num += d * d;
    den += PetscRealPart(ya[k] * ya[k]);
  }
  *relerr = den > 0 ? PetscSqrtReal(num / den) : PetscSqrtReal(num);
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
  PetscCall(MPIU_Allreduce(&cond, &all, 1, MPIU_BOOL, MPI_LAND, PETSC_COMM_WORLD));
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
