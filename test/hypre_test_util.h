/* Helpers of the hypre hook tests: distributed Poisson matrices through
 * hypre's IJ interface, BoomerAMG hierarchies, and a collective comparison
 * of two ParCSR matrices by global (row, column) with the structural
 * invariants hypre relies on. */
#ifndef TILERAP_TEST_HYPRE_UTIL_H
#define TILERAP_TEST_HYPRE_UTIL_H

#include <HYPRE.h>
#include <HYPRE_IJ_mv.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h>
#include <_hypre_parcsr_mv.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "tilerap_hypre.h"

typedef struct {
  HYPRE_IJMatrix ijA;
  HYPRE_IJVector ijb, ijx;
  hypre_ParCSRMatrix *A;
  HYPRE_ParVector b, x;
} th_problem;

/* Irregular variants of the model problems (th_poisson_ex). */
enum {
  TH_PERMUTE = 1,  /* unknowns numbered in a random order (fixed seed): unordered mesh */
  TH_DENSE_ROW = 2 /* unknown 0 coupled to every other one (a dense row and column) */
};

/* Global index of grid point g under the variant's numbering. */
static inline HYPRE_BigInt th_perm_index(const HYPRE_BigInt *perm, HYPRE_BigInt g) { return perm ? perm[g] : g; }

/* dim 2: 5-point, dim 3: 7-point Laplacian on an n^dim grid, rows split
 * in contiguous blocks over the ranks of comm, in the numbering and with
 * the couplings that flags (TH_*) ask for; b = 1, x = 0. */
static inline void th_poisson_ex(MPI_Comm comm, int dim, HYPRE_BigInt n, int flags, th_problem *pb)
{
  int rank, np;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &np);
  HYPRE_BigInt N = n * n * (dim == 3 ? n : 1);
  HYPRE_BigInt lo = N * rank / np, hi = N * (rank + 1) / np - 1;
  HYPRE_BigInt *perm = NULL, *inv = NULL;
  if (flags & TH_PERMUTE) { /* the same shuffle on every rank (LCG, fixed seed) */
    perm = malloc(sizeof *perm * (size_t)N);
    inv = malloc(sizeof *inv * (size_t)N);
    for (HYPRE_BigInt g = 0; g < N; g++) perm[g] = g;
    unsigned long long st = 0x9e3779b97f4a7c15ULL;
    for (HYPRE_BigInt g = N - 1; g > 0; g--) {
      st = st * 6364136223846793005ULL + 1442695040888963407ULL;
      HYPRE_BigInt k = (HYPRE_BigInt)((st >> 33) % (unsigned long long)(g + 1));
      HYPRE_BigInt t = perm[g]; perm[g] = perm[k]; perm[k] = t;
    }
    for (HYPRE_BigInt g = 0; g < N; g++) inv[perm[g]] = g;
  }
  const int dense = (flags & TH_DENSE_ROW) != 0;
  const HYPRE_BigInt hub = th_perm_index(perm, 0);
  HYPRE_IJMatrixCreate(comm, lo, hi, lo, hi, &pb->ijA);
  HYPRE_IJMatrixSetObjectType(pb->ijA, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(pb->ijA);
  HYPRE_BigInt *hcols = dense ? malloc(sizeof *hcols * (size_t)N) : NULL;
  HYPRE_Complex *hvals = dense ? malloc(sizeof *hvals * (size_t)N) : NULL;
  for (HYPRE_BigInt row = lo; row <= hi; row++) {
    HYPRE_BigInt cols[8];
    HYPRE_Complex vals[8];
    HYPRE_Int nc = 0;
    const HYPRE_BigInt g = inv ? inv[row] : row;
    HYPRE_BigInt x = g % n, y = (g / n) % n, z = dim == 3 ? g / (n * n) : 0;
    const double d0 = dim == 3 ? 6.0 : 4.0;
    if (dense && g == 0) { /* the hub: coupled to everybody, diagonally dominant */
      HYPRE_Int nh = 0;
      for (HYPRE_BigInt k = 0; k < N; k++) {
        hcols[nh] = th_perm_index(perm, k);
        hvals[nh++] = k == 0 ? d0 + 0.01 * (double)N : -0.01;
      }
      for (HYPRE_Int k = 0; k < nh; k++) /* the grid couplings of point 0 on top */
        if (k == 1 || k == n || (dim == 3 && k == n * n)) hvals[k] -= 1.0;
      HYPRE_IJMatrixSetValues(pb->ijA, 1, &nh, &row, hcols, hvals);
      continue;
    }
    cols[nc] = row; vals[nc++] = d0 + (dense ? 0.01 : 0.0);
    if (x > 0) { cols[nc] = th_perm_index(perm, g - 1); vals[nc++] = -1.0; }
    if (x < n - 1) { cols[nc] = th_perm_index(perm, g + 1); vals[nc++] = -1.0; }
    if (y > 0) { cols[nc] = th_perm_index(perm, g - n); vals[nc++] = -1.0; }
    if (y < n - 1) { cols[nc] = th_perm_index(perm, g + n); vals[nc++] = -1.0; }
    if (dim == 3 && z > 0) { cols[nc] = th_perm_index(perm, g - n * n); vals[nc++] = -1.0; }
    if (dim == 3 && z < n - 1) { cols[nc] = th_perm_index(perm, g + n * n); vals[nc++] = -1.0; }
    if (dense) { /* the hub's column (its grid neighbours already hold it: add) */
      int found = 0;
      for (int k = 1; k < nc; k++)
        if (cols[k] == hub) { vals[k] -= 0.01; found = 1; }
      if (!found) { cols[nc] = hub; vals[nc++] = -0.01; }
    }
    HYPRE_IJMatrixSetValues(pb->ijA, 1, &nc, &row, cols, vals);
  }
  free(hcols); free(hvals); free(perm); free(inv);
  HYPRE_IJMatrixAssemble(pb->ijA);
  void *obj;
  HYPRE_IJMatrixGetObject(pb->ijA, &obj);
  pb->A = (hypre_ParCSRMatrix *)obj;

  HYPRE_IJVectorCreate(comm, lo, hi, &pb->ijb);
  HYPRE_IJVectorSetObjectType(pb->ijb, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(pb->ijb);
  HYPRE_IJVectorCreate(comm, lo, hi, &pb->ijx);
  HYPRE_IJVectorSetObjectType(pb->ijx, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(pb->ijx);
  for (HYPRE_BigInt row = lo; row <= hi; row++) {
    HYPRE_Complex one = 1.0, zero = 0.0;
    HYPRE_IJVectorSetValues(pb->ijb, 1, &row, &one);
    HYPRE_IJVectorSetValues(pb->ijx, 1, &row, &zero);
  }
  HYPRE_IJVectorAssemble(pb->ijb);
  HYPRE_IJVectorAssemble(pb->ijx);
  HYPRE_IJVectorGetObject(pb->ijb, &obj);
  pb->b = (HYPRE_ParVector)obj;
  HYPRE_IJVectorGetObject(pb->ijx, &obj);
  pb->x = (HYPRE_ParVector)obj;
}

#if defined(HYPRE_USING_CUDA)
/* A problem built on the host moved to device memory, as a GPU user's
 * (the default memory location and execution policy become the device's). */
static inline void th_problem_to_device(th_problem *pb)
{
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_DEVICE);
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_DEVICE);
  HYPRE_IJMatrixMigrate(pb->ijA, HYPRE_MEMORY_DEVICE);
  HYPRE_IJVectorMigrate(pb->ijb, HYPRE_MEMORY_DEVICE);
  HYPRE_IJVectorMigrate(pb->ijx, HYPRE_MEMORY_DEVICE);
  void *obj;
  HYPRE_IJMatrixGetObject(pb->ijA, &obj);
  pb->A = (hypre_ParCSRMatrix *)obj;
  HYPRE_IJVectorGetObject(pb->ijb, &obj);
  pb->b = (HYPRE_ParVector)obj;
  HYPRE_IJVectorGetObject(pb->ijx, &obj);
  pb->x = (HYPRE_ParVector)obj;
}
#endif

static inline void th_poisson(MPI_Comm comm, int dim, HYPRE_BigInt n, th_problem *pb)
{
  th_poisson_ex(comm, dim, n, 0, pb);
}

static inline void th_problem_destroy(th_problem *pb)
{
  HYPRE_IJMatrixDestroy(pb->ijA);
  HYPRE_IJVectorDestroy(pb->ijb);
  HYPRE_IJVectorDestroy(pb->ijx);
}

/* x = 0 again, so that two solves start alike. */
static inline void th_zero_x(th_problem *pb) { HYPRE_ParVectorSetConstantValues(pb->x, 0.0); }

typedef struct {
  int modular;   /* HYPRE_BoomerAMGSetModuleRAP2: hypre_ParCSRMatrixRAPKT path */
  int keepT;     /* HYPRE_BoomerAMGSetKeepTranspose */
} th_amg_opts;

/* BoomerAMG as solver (tol 1e-8): setup + solve; returns the solver. */
static inline HYPRE_Solver th_amg_run(th_problem *pb, th_amg_opts o, int *iters, double *setup_s)
{
  HYPRE_Solver s;
  HYPRE_BoomerAMGCreate(&s);
  HYPRE_BoomerAMGSetPrintLevel(s, 0);
  HYPRE_BoomerAMGSetTol(s, 1e-8);
  HYPRE_BoomerAMGSetMaxIter(s, 200);
  HYPRE_BoomerAMGSetModuleRAP2(s, o.modular);
  HYPRE_BoomerAMGSetKeepTranspose(s, o.keepT);
  th_zero_x(pb);
  double t0 = MPI_Wtime();
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  if (setup_s) *setup_s = MPI_Wtime() - t0;
  HYPRE_BoomerAMGSolve(s, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  HYPRE_Int it = 0;
  HYPRE_BoomerAMGGetNumIterations(s, &it);
  *iters = (int)it;
  return s;
}

static inline int th_num_levels(HYPRE_Solver s) { return hypre_ParAMGDataNumLevels((hypre_ParAMGData *)s); }
static inline hypre_ParCSRMatrix *th_level_A(HYPRE_Solver s, int l)
{
  return hypre_ParAMGDataAArray((hypre_ParAMGData *)s)[l];
}
static inline hypre_ParCSRMatrix *th_level_P(HYPRE_Solver s, int l)
{
  return hypre_ParAMGDataPArray((hypre_ParAMGData *)s)[l];
}

typedef struct {
  HYPRE_BigInt c;
  double v;
} th_entry;

static inline int th_entry_cmp(const void *x, const void *y)
{
  const th_entry *a = x, *b = y;
  return (a->c > b->c) - (a->c < b->c);
}

/* Local row r of M as (global column, value), sorted by column. */
static inline int th_row(hypre_ParCSRMatrix *M, HYPRE_Int r, th_entry *out)
{
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(M), *o = hypre_ParCSRMatrixOffd(M);
  HYPRE_BigInt first = hypre_ParCSRMatrixFirstColDiag(M);
  HYPRE_BigInt *cm = hypre_ParCSRMatrixColMapOffd(M);
  int n = 0;
  for (HYPRE_Int k = hypre_CSRMatrixI(d)[r]; k < hypre_CSRMatrixI(d)[r + 1]; k++) {
    out[n].c = first + hypre_CSRMatrixJ(d)[k];
    out[n++].v = hypre_CSRMatrixData(d)[k];
  }
  if (hypre_CSRMatrixNumCols(o) > 0)
    for (HYPRE_Int k = hypre_CSRMatrixI(o)[r]; k < hypre_CSRMatrixI(o)[r + 1]; k++) {
      out[n].c = cm[hypre_CSRMatrixJ(o)[k]];
      out[n++].v = hypre_CSRMatrixData(o)[k];
    }
  qsort(out, (size_t)n, sizeof *out, th_entry_cmp);
  return n;
}

typedef struct {
  double relerr;     /* ||X - Y||_F / ||Y||_F (global)                      */
  long struct_diff;  /* rows whose global column sets differ (global)        */
  long invariant_bad;/* violated invariants of X (global): see below         */
  long rows;         /* global rows compared                                 */
} th_cmp;

/* Compares X (tilerap's) with Y (hypre's), collective over X's comm.
 * Invariants of X: same global sizes and row/col starts as Y; diag column
 * indices in range, diagonal first in each row when square; col_map_offd
 * ascending, unique, outside the local column range, every column used;
 * no duplicate columns in a row. */
static inline th_cmp th_compare_ex(hypre_ParCSRMatrix *X, hypre_ParCSRMatrix *Y, int invariants)
{
  th_cmp r = {0, 0, 0, 0};
  MPI_Comm comm = hypre_ParCSRMatrixComm(Y);
  double sd = 0, sy = 0;
  long sdiff = 0, bad = 0, rows = 0;
  if (hypre_ParCSRMatrixGlobalNumRows(X) != hypre_ParCSRMatrixGlobalNumRows(Y) ||
      hypre_ParCSRMatrixGlobalNumCols(X) != hypre_ParCSRMatrixGlobalNumCols(Y) ||
      hypre_ParCSRMatrixRowStarts(X)[0] != hypre_ParCSRMatrixRowStarts(Y)[0] ||
      hypre_ParCSRMatrixRowStarts(X)[1] != hypre_ParCSRMatrixRowStarts(Y)[1] ||
      hypre_ParCSRMatrixColStarts(X)[0] != hypre_ParCSRMatrixColStarts(Y)[0] ||
      hypre_ParCSRMatrixColStarts(X)[1] != hypre_ParCSRMatrixColStarts(Y)[1] ||
      hypre_ParCSRMatrixNumRows(X) != hypre_ParCSRMatrixNumRows(Y)) {
    bad = 1000000;
    goto reduce;
  }
  {
    hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(X), *o = hypre_ParCSRMatrixOffd(X);
    HYPRE_Int nr = hypre_CSRMatrixNumRows(d), ncd = hypre_CSRMatrixNumCols(d);
    HYPRE_Int nco = hypre_CSRMatrixNumCols(o);
    HYPRE_BigInt first = hypre_ParCSRMatrixFirstColDiag(X), *cm = hypre_ParCSRMatrixColMapOffd(X);
    int square = hypre_ParCSRMatrixGlobalNumRows(X) == hypre_ParCSRMatrixGlobalNumCols(X) &&
                 hypre_ParCSRMatrixRowStarts(X)[0] == hypre_ParCSRMatrixColStarts(X)[0];
    for (HYPRE_Int k = 0; k < nco; k++) {
      if (k > 0 && cm[k] <= cm[k - 1]) bad++;
      if (cm[k] >= first && cm[k] < first + ncd) bad++;
    }
    char *used = calloc((size_t)nco + 1, 1);
    for (HYPRE_Int k = 0; k < hypre_CSRMatrixNumNonzeros(d); k++)
      if (hypre_CSRMatrixJ(d)[k] < 0 || hypre_CSRMatrixJ(d)[k] >= ncd) bad++;
    if (nco > 0)
      for (HYPRE_Int k = 0; k < hypre_CSRMatrixNumNonzeros(o); k++) {
        HYPRE_Int j = hypre_CSRMatrixJ(o)[k];
        if (j < 0 || j >= nco) bad++;
        else used[j] = 1;
      }
    for (HYPRE_Int k = 0; k < nco; k++)
      if (!used[k]) bad++;
    free(used);
    if (hypre_CSRMatrixI(d)[nr] != hypre_CSRMatrixNumNonzeros(d)) bad++;
    if (hypre_CSRMatrixI(o)[nr] != hypre_CSRMatrixNumNonzeros(o)) bad++;
    if (!invariants) bad = 0;
    if (bad) goto reduce;

    HYPRE_Int maxlen = 1;
    for (HYPRE_Int i = 0; i < nr; i++) {
      HYPRE_Int lx = hypre_CSRMatrixI(d)[i + 1] - hypre_CSRMatrixI(d)[i] + hypre_CSRMatrixI(o)[i + 1] - hypre_CSRMatrixI(o)[i];
      hypre_CSRMatrix *yd = hypre_ParCSRMatrixDiag(Y), *yo = hypre_ParCSRMatrixOffd(Y);
      HYPRE_Int ly = hypre_CSRMatrixI(yd)[i + 1] - hypre_CSRMatrixI(yd)[i] +
                     (hypre_CSRMatrixI(yo) ? hypre_CSRMatrixI(yo)[i + 1] - hypre_CSRMatrixI(yo)[i] : 0);
      if (lx > maxlen) maxlen = lx;
      if (ly > maxlen) maxlen = ly;
    }
    th_entry *ex = malloc(sizeof *ex * (size_t)maxlen), *ey = malloc(sizeof *ey * (size_t)maxlen);
    for (HYPRE_Int i = 0; i < nr; i++) {
      if (invariants && square && (hypre_CSRMatrixI(d)[i + 1] == hypre_CSRMatrixI(d)[i] ||
                     hypre_CSRMatrixJ(d)[hypre_CSRMatrixI(d)[i]] != i))
        bad++;
      int nx = th_row(X, i, ex), ny = th_row(Y, i, ey);
      for (int k = 1; k < nx; k++)
        if (invariants && ex[k].c == ex[k - 1].c) bad++;
      int same = nx == ny;
      for (int k = 0; same && k < nx; k++) same = ex[k].c == ey[k].c;
      if (!same) { sdiff++; continue; }
      for (int k = 0; k < nx; k++) {
        sd += (ex[k].v - ey[k].v) * (ex[k].v - ey[k].v);
        sy += ey[k].v * ey[k].v;
      }
    }
    rows = nr;
    free(ex); free(ey);
  }
reduce:;
  double s[2] = {sd, sy}, gs[2];
  long l[3] = {sdiff, bad, rows}, gl[3];
  MPI_Allreduce(s, gs, 2, MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(l, gl, 3, MPI_LONG, MPI_SUM, comm);
  r.relerr = gs[1] > 0 ? sqrt(gs[0] / gs[1]) : sqrt(gs[0]);
  r.struct_diff = gl[0];
  r.invariant_bad = gl[1];
  r.rows = gl[2];
  return r;
}

/* X from tilerap: invariants checked.  Between two hypre matrices only
 * entries are compared (hypre's RAPKT may keep unused offd columns). */
static inline th_cmp th_compare(hypre_ParCSRMatrix *X, hypre_ParCSRMatrix *Y) { return th_compare_ex(X, Y, 1); }
static inline th_cmp th_compare_entries(hypre_ParCSRMatrix *X, hypre_ParCSRMatrix *Y) { return th_compare_ex(X, Y, 0); }

static inline int th_cmp_ok(th_cmp c, double tol)
{
  return c.struct_diff == 0 && c.invariant_bad == 0 && c.relerr <= tol;
}

/* Collective AND of a local condition. */
static inline int th_all(MPI_Comm comm, int cond)
{
  int g = 0;
  MPI_Allreduce(&cond, &g, 1, MPI_INT, MPI_MIN, comm);
  return g;
}
#endif
