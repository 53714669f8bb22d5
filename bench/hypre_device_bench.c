/* hypre on the GPU, side by side in one run (a CUDA build of hypre, the
 * hook linked in; one or more ranks under mpiexec, A's rows split evenly,
 * one GPU per rank as hypre's own drivers bind them):
 *
 *   (a) the Galerkin product C = P^T A P of BoomerAMG's first level, P from
 *       hypre's own device PMIS + extended+i interpolation (as hypre's
 *       ij_mm -job 4), by hypre_ParCSRMatrixRAPKT with keep-transpose:
 *       hypre's native device SpGEMM, cuSPARSE through hypre, and tilerap;
 *       each timed --reps times (wall clock from a barrier, every rank's
 *       device synchronised, to the last rank's end): the first call, then
 *       min/median/max of the others; C checked against hypre's;
 *   (b) BoomerAMG-PCG (hypre's GPU defaults, tol 1e-8, b = 1), setup and
 *       solve, the same three ways (with the hook, hypre's other SpGEMMs on
 *       cuSPARSE, as hypre's CUDA builds run them by default): time, the
 *       Galerkin products' part of the setup and that of hypre's other
 *       products (hypre_ParCSRMatMat,
 *       hypre_ParCSRTMatMatKT, observed by the hook), iterations, levels,
 *       operator complexity.
 *
 *   [mpiexec -n R] hypre-device-bench [--reps N] [--no-solve] CASE...
 * CASE: p2d5:N p2d9:N p3d7:N p3d27:N (grids with N points a side), or an
 * irregular matrix of tilerap_model.h (mesh2d:N, mesh3d:N[:sfc],
 * powerlaw:N, random:N, denserow:N, elast:N, s125:N). */
#include "hypre_test_util.h"

#include <HYPRE_krylov.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h>
#include <_hypre_parcsr_mv.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilerap.h"
#include "tilerap_device.h"
#include "tilerap_hypre.h"
#include "tilerap_model.h"

#if !defined(HYPRE_USING_CUDA)
int main(void)
{
  fprintf(stderr, "hypre-device-bench: needs a CUDA build of hypre\n");
  return 2;
}
#else

enum { M_HYPRE, M_CUSPARSE, M_TILERAP, M_N };
static const char *const mode_name[M_N] = {"hypre", "cusparse", "tilerap"};

/* hypre's SpGEMM and the hook as mode m wants them.  With the hook, what
 * it does not take (the SpGEMMs inside interpolation, products it
 * forwards) runs as in hypre's CUDA builds by default, on cuSPARSE: with
 * hypre's native SpGEMM there, the power-law graph's setup spent 0.2 s in
 * those products (its hash tables overflow on the hubs' rows). */
static void set_mode(int m)
{
  HYPRE_SetSpGemmUseVendor(m != M_HYPRE);
  TileRAP_HypreEnable(m == M_TILERAP);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* This rank's rows of a tilerap CSR (every rank holds the whole matrix) as
 * hypre's ParCSR, rows split evenly: the diagonal block's diagonal first
 * and the off-diagonal block's columns ascending (hypre's host and device
 * routines expect both), moved to the device. */
static hypre_ParCSRMatrix *device_parcsr(const tilerap_csr *A)
{
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const int32_t r0 = (int32_t)((int64_t)A->m * rank / np), r1 = (int32_t)((int64_t)A->m * (rank + 1) / np);
  /* the off-diagonal columns: flagged, then numbered in ascending order */
  int32_t *offd = malloc(sizeof *offd * (size_t)(A->n > 0 ? A->n : 1));
  for (int32_t j = 0; j < A->n; j++) offd[j] = -1;
  int64_t nd = 0, no = 0;
  for (int64_t k = A->rowptr[r0]; k < A->rowptr[r1]; k++) {
    const int32_t c = A->colidx[k];
    if (c >= r0 && c < r1) nd++;
    else { no++; offd[c] = 0; }
  }
  HYPRE_Int ncol_offd = 0;
  for (int32_t j = 0; j < A->n; j++)
    if (!offd[j]) offd[j] = ncol_offd++;
  HYPRE_BigInt starts[2] = {r0, r1};
  hypre_ParCSRMatrix *M = hypre_ParCSRMatrixCreate(MPI_COMM_WORLD, A->m, A->n, starts, starts, ncol_offd,
                                                   (HYPRE_Int)nd, (HYPRE_Int)no);
  hypre_ParCSRMatrixInitialize_v2(M, HYPRE_MEMORY_HOST);
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(M), *o = hypre_ParCSRMatrixOffd(M);
  HYPRE_Int *I = hypre_CSRMatrixI(d), *J = hypre_CSRMatrixJ(d), *OI = hypre_CSRMatrixI(o), *OJ = hypre_CSRMatrixJ(o);
  HYPRE_Complex *V = hypre_CSRMatrixData(d), *OV = hypre_CSRMatrixData(o);
  HYPRE_BigInt *cmap = hypre_ParCSRMatrixColMapOffd(M);
  for (int32_t j = 0; j < A->n; j++)
    if (offd[j] >= 0) cmap[offd[j]] = j;
  HYPRE_Int p = 0, q = 0;
  I[0] = OI[0] = 0;
  for (int32_t i = r0; i < r1; i++) {
    const HYPRE_Int p0 = p;
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      const int32_t c = A->colidx[k];
      if (c < r0 || c >= r1) { OJ[q] = offd[c]; OV[q++] = A->val[k]; continue; }
      J[p] = c - r0;
      V[p] = A->val[k];
      if (c == i && p > p0) { /* the diagonal to the row's front */
        const HYPRE_Int j0 = J[p0];
        const HYPRE_Complex v0 = V[p0];
        J[p0] = J[p]; V[p0] = V[p]; J[p] = j0; V[p] = v0;
      }
      p++;
    }
    I[i - r0 + 1] = p;
    OI[i - r0 + 1] = q;
  }
  free(offd);
  hypre_ParCSRMatrixMigrate(M, HYPRE_MEMORY_DEVICE);
  hypre_ParCSRMatrixSetNumNonzeros(M);
  return M;
}

/* hypre's device PMIS + extended+i interpolation (BoomerAMG's GPU defaults:
 * strength 0.25, at most 4 entries a row). */
static hypre_ParCSRMatrix *hypre_prolongator(hypre_ParCSRMatrix *A)
{
  hypre_ParCSRMatrix *S = NULL, *P = NULL;
  hypre_IntArray *CF = NULL;
  HYPRE_BigInt cpts[2];
  hypre_BoomerAMGCreateS(A, 0.25, 0.9, 1, NULL, &S);
  hypre_BoomerAMGCoarsenPMIS(S, A, 0, 0, &CF);
  hypre_BoomerAMGCoarseParms(MPI_COMM_WORLD, hypre_ParCSRMatrixNumRows(A), 1, NULL, CF, NULL, cpts);
  hypre_BoomerAMGBuildExtPIInterp(A, hypre_IntArrayData(CF), S, cpts, 1, NULL, 0, 0.0, 4, &P);
  hypre_IntArrayDestroy(CF);
  hypre_ParCSRMatrixDestroy(S);
  return P;
}

/* every rank's device drained, then a barrier: a time from one wtime() to
 * the next is the slowest rank's */
static double wtime(void)
{
  hypre_SyncDevice();
  MPI_Barrier(MPI_COMM_WORLD);
  return MPI_Wtime();
}

static int g_rank;

/* ||X - Y||_F / ||Y||_F and structural differences, on host copies
 * (test/hypre_test_util.h: rows compared by global column). */
static th_cmp compare(hypre_ParCSRMatrix *X, hypre_ParCSRMatrix *Y)
{
  hypre_ParCSRMatrix *hx = hypre_ParCSRMatrixClone_v2(X, 1, HYPRE_MEMORY_HOST);
  hypre_ParCSRMatrix *hy = hypre_ParCSRMatrixClone_v2(Y, 1, HYPRE_MEMORY_HOST);
  th_cmp c = th_compare_entries(hx, hy);
  hypre_ParCSRMatrixDestroy(hx);
  hypre_ParCSRMatrixDestroy(hy);
  return c;
}

static int g_quiet; /* the warm-up run */

static void galerkin_products(const char *name, hypre_ParCSRMatrix *A, int reps)
{
  hypre_ParCSRMatrix *P = hypre_prolongator(A);
  hypre_ParCSRMatrix *C[M_N] = {NULL};
  double *t = malloc(sizeof *t * (size_t)reps);
  size_t peak = 0;
  for (int m = 0; m < M_N; m++) {
    set_mode(m);
    if (m == M_TILERAP) tilerap_device_memory_reset_peak();
    for (int r = 0; r < reps; r++) {
      double t0 = wtime();
      hypre_ParCSRMatrix *X = hypre_ParCSRMatrixRAPKT(P, A, P, 1, 1);
      t[r] = wtime() - t0;
      /* every call a first setup's: the transpose made again */
      if (hypre_ParCSRMatrixDiagT(P)) {
        hypre_CSRMatrixDestroy(hypre_ParCSRMatrixDiagT(P));
        hypre_ParCSRMatrixDiagT(P) = NULL;
      }
      if (hypre_ParCSRMatrixOffdT(P)) {
        hypre_CSRMatrixDestroy(hypre_ParCSRMatrixOffdT(P));
        hypre_ParCSRMatrixOffdT(P) = NULL;
      }
      if (r == 0) C[m] = X;
      else hypre_ParCSRMatrixDestroy(X);
    }
    if (m == M_TILERAP) tilerap_device_memory(NULL, &peak);
    if (g_quiet) continue;
    double first = t[0], peak_mb = (double)peak / 1048576.0;
    qsort(t + 1, (size_t)(reps - 1), sizeof *t, cmp_double);
    hypre_ParCSRMatrixSetNumNonzeros(C[m]);
    hypre_ParCSRMatrixSetNumNonzeros(P);
    MPI_Allreduce(MPI_IN_PLACE, &peak_mb, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* the largest rank's */
    th_cmp c = {0, 0, 0, 0};
    if (m != M_HYPRE) c = compare(C[m], C[M_HYPRE]);
    if (g_rank) continue;
    printf("rap %-22s %-8s n %9lld  P %9lld x %8lld nnz %10lld  C nnz %11lld  first %9.3f ms  min %9.3f  med %9.3f  "
           "max %9.3f ms",
           name, mode_name[m], (long long)hypre_ParCSRMatrixGlobalNumRows(A),
           (long long)hypre_ParCSRMatrixGlobalNumRows(P), (long long)hypre_ParCSRMatrixGlobalNumCols(P),
           (long long)hypre_ParCSRMatrixNumNonzeros(P), (long long)hypre_ParCSRMatrixNumNonzeros(C[m]),
           1e3 * first, 1e3 * t[1], 1e3 * t[reps / 2], 1e3 * t[reps - 1]);
    if (m == M_TILERAP) printf("  tilerap pool peak %.1f MB", peak_mb);
    if (m != M_HYPRE) printf("  relerr %.2e, rows of other structure %ld", c.relerr, c.struct_diff);
    printf("\n");
    fflush(stdout);
  }
  for (int m = 0; m < M_N; m++) hypre_ParCSRMatrixDestroy(C[m]);
  hypre_ParCSRMatrixDestroy(P);
  free(t);
}

static HYPRE_ParVector device_vector(hypre_ParCSRMatrix *A, double value)
{
  hypre_ParVector *v = hypre_ParVectorCreate(MPI_COMM_WORLD, hypre_ParCSRMatrixGlobalNumRows(A),
                                             hypre_ParCSRMatrixRowStarts(A));
  hypre_ParVectorInitialize_v2(v, HYPRE_MEMORY_DEVICE);
  hypre_ParVectorSetConstantValues(v, value);
  return (HYPRE_ParVector)v;
}

static void amg_pcg(const char *name, hypre_ParCSRMatrix *A)
{
  HYPRE_ParVector b = device_vector(A, 1.0), x = device_vector(A, 0.0);
  for (int m = 0; m < M_N; m++) {
    set_mode(m);
    TileRAP_HypreResetStats();
    HYPRE_ParVectorSetConstantValues(x, 0.0);
    HYPRE_Solver amg, pcg;
    HYPRE_BoomerAMGCreate(&amg);
    HYPRE_BoomerAMGSetPrintLevel(amg, 0);
    HYPRE_BoomerAMGSetMaxIter(amg, 1);
    HYPRE_BoomerAMGSetTol(amg, 0.0);
    HYPRE_ParCSRPCGCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_PCGSetTol(pcg, 1e-8);
    HYPRE_PCGSetMaxIter(pcg, 500);
    HYPRE_PCGSetTwoNorm(pcg, 1);
    HYPRE_PCGSetPrecond(pcg, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSetup,
                        amg);
    double t0 = wtime();
    HYPRE_ParCSRPCGSetup(pcg, (HYPRE_ParCSRMatrix)A, b, x);
    double t_setup = wtime() - t0;
    t0 = wtime();
    HYPRE_ParCSRPCGSolve(pcg, (HYPRE_ParCSRMatrix)A, b, x);
    double t_solve = wtime() - t0;
    HYPRE_Int it = 0;
    HYPRE_PCGGetNumIterations(pcg, &it);
    hypre_ParAMGData *d = (hypre_ParAMGData *)amg;
    const int L = hypre_ParAMGDataNumLevels(d);
    double nz0 = 0, nz = 0;
    for (int l = 0; l < L; l++) {
      hypre_ParCSRMatrix *Al = hypre_ParAMGDataAArray(d)[l];
      hypre_ParCSRMatrixSetNumNonzeros(Al);
      nz += (double)hypre_ParCSRMatrixNumNonzeros(Al);
      if (l == 0) nz0 = nz;
    }
    TileRAP_HypreStats st;
    TileRAP_HypreGetStats(&st);
    /* the hook's times: the slowest rank's */
    MPI_Allreduce(MPI_IN_PLACE, st.seconds_entry, TILERAP_HYPRE_EP_N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (!g_rank) printf("amg %-22s %-8s setup %8.4f s (Galerkin products %7.4f s, %ld by tilerap, %ld forwarded)  solve %8.4f s  "
           "iterations %3d  levels %2d  operator complexity %.6f  other products %.4f s (%ld MatMat, %ld TMatMatKT)\n",
           name, mode_name[m], t_setup, st.seconds_entry[TILERAP_HYPRE_EP_RAPKT], TileRAP_HypreComputed(),
           st.forwarded[TILERAP_HYPRE_EP_RAPKT], t_solve, (int)it, L, nz / nz0,
           st.seconds_entry[TILERAP_HYPRE_EP_MATMAT] + st.seconds_entry[TILERAP_HYPRE_EP_TMATMAT],
           st.observed[TILERAP_HYPRE_EP_MATMAT], st.observed[TILERAP_HYPRE_EP_TMATMAT]);
    fflush(stdout);
    HYPRE_ParCSRPCGDestroy(pcg);
    HYPRE_BoomerAMGDestroy(amg);
  }
  HYPRE_ParVectorDestroy(b);
  HYPRE_ParVectorDestroy(x);
}

static int make_matrix(const char *spec, tilerap_csr **A)
{
  char head[16] = "";
  const char *colon = strchr(spec, ':');
  if (colon && (size_t)(colon - spec) < sizeof head) memcpy(head, spec, (size_t)(colon - spec));
  tilerap_stencil s;
  if (colon && tilerap_stencil_parse(head, &s) == TILERAP_SUCCESS) {
    int32_t dims[3];
    int ndim;
    return tilerap_model_poisson(s, (int32_t)atoi(colon + 1), A, dims, &ndim);
  }
  return tilerap_model_irregular(spec, 1, A);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int np;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  hypre_bind_device(g_rank, np, MPI_COMM_WORLD); /* one GPU per rank, as hypre's ij binds them */
  HYPRE_Init();
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_DEVICE);
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_DEVICE);
  HYPRE_SetUseGpuRand(0);         /* PMIS the same in every setup: the three ways get one hierarchy */
  TileRAP_HypreSetEngine("cuda"); /* the hook's device path, named (it is off by default) */
  int reps = 5, solve = 1;
  { /* warm-up: the libraries' one-time initialisation (CUDA, cuSPARSE,
     * tilerap's pool) out of every timed "first" call */
    tilerap_csr *Ah = NULL;
    tilerap_model_irregular("mesh2d:20000", 1, &Ah);
    hypre_ParCSRMatrix *A = device_parcsr(Ah);
    tilerap_csr_destroy(&Ah);
    g_quiet = 1;
    galerkin_products("warm-up", A, 3);
    g_quiet = 0;
    hypre_ParCSRMatrixDestroy(A);
  }
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
      reps = atoi(argv[++a]);
      if (reps < 3) reps = 3;
      continue;
    }
    if (!strcmp(argv[a], "--no-solve")) {
      solve = 0;
      continue;
    }
    tilerap_csr *Ah = NULL;
    if (make_matrix(argv[a], &Ah)) {
      if (!g_rank) fprintf(stderr, "hypre-device-bench: %s: %s\n", argv[a], tilerap_last_error());
      return 2;
    }
    hypre_ParCSRMatrix *A = device_parcsr(Ah);
    tilerap_csr_destroy(&Ah);
    galerkin_products(argv[a], A, reps);
    if (solve) amg_pcg(argv[a], A);
    hypre_ParCSRMatrixDestroy(A);
  }
  HYPRE_Finalize();
  MPI_Finalize();
  return 0;
}
#endif
