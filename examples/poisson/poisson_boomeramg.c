/* poisson-boomeramg: hypre BoomerAMG on a 2D 5-point or 3D 7-point
 * Poisson problem through hypre's IJ interface, with the coarse operators
 * of the setup computed by tilerap (libtilerap_hypre, linked ahead of
 * libHYPRE).
 *
 *   mpiexec -n 4 poisson-boomeramg -dim 3 -n 64 [-tilerap 0|1] [-modular]
 *                                  [-keept] [-pcg] [-repeat K]
 *
 * Prints iterations, setup and solve times, and how many coarse operators
 * went through tilerap (summed over ranks; every rank takes part in each).
 * Without the hook (plain -lHYPRE) the same program runs hypre alone; with
 * PETSc, -pc_type hypre reaches the same entry points when the program runs
 * with LD_PRELOAD=libtilerap_hypre.so. */
#include <HYPRE.h>
#include <HYPRE_IJ_mv.h>
#include <HYPRE_krylov.h>
#include <HYPRE_parcsr_ls.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilerap_hypre.h"

static void usage(void)
{
  fprintf(stderr, "usage: poisson-boomeramg [-dim 2|3] [-n N] [-tilerap 0|1] [-modular] [-keept]"
                  " [-pcg] [-repeat K]\n");
}

int main(int argc, char **argv)
{
  int dim = 2, tilerap = -1, modular = 0, keept = 0, pcg = 0, repeat = 1;
  long n = 256;
  int rank, np;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "-dim") && a + 1 < argc) dim = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-n") && a + 1 < argc) n = atol(argv[++a]);
    else if (!strcmp(argv[a], "-tilerap") && a + 1 < argc) tilerap = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-modular")) modular = 1;
    else if (!strcmp(argv[a], "-keept")) keept = 1;
    else if (!strcmp(argv[a], "-pcg")) pcg = 1;
    else if (!strcmp(argv[a], "-repeat") && a + 1 < argc) repeat = atoi(argv[++a]);
    else {
      if (rank == 0) usage();
      MPI_Finalize();
      return 2;
    }
  }
  if ((dim != 2 && dim != 3) || n < 2 || repeat < 1) {
    if (rank == 0) usage();
    MPI_Finalize();
    return 2;
  }
  HYPRE_Init();
  if (tilerap >= 0) TileRAP_HypreEnable(tilerap);

  /* matrix: contiguous row blocks */
  HYPRE_BigInt N = (HYPRE_BigInt)n * n * (dim == 3 ? n : 1);
  HYPRE_BigInt lo = N * rank / np, hi = N * (rank + 1) / np - 1;
  HYPRE_IJMatrix ijA;
  HYPRE_IJMatrixCreate(MPI_COMM_WORLD, lo, hi, lo, hi, &ijA);
  HYPRE_IJMatrixSetObjectType(ijA, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(ijA);
  for (HYPRE_BigInt row = lo; row <= hi; row++) {
    HYPRE_BigInt cols[7], x = row % n, y = (row / n) % n, z = dim == 3 ? row / ((HYPRE_BigInt)n * n) : 0;
    HYPRE_Complex vals[7];
    HYPRE_Int nc = 0;
    cols[nc] = row; vals[nc++] = 2.0 * dim;
    if (x > 0) { cols[nc] = row - 1; vals[nc++] = -1.0; }
    if (x < n - 1) { cols[nc] = row + 1; vals[nc++] = -1.0; }
    if (y > 0) { cols[nc] = row - n; vals[nc++] = -1.0; }
    if (y < n - 1) { cols[nc] = row + n; vals[nc++] = -1.0; }
    if (dim == 3 && z > 0) { cols[nc] = row - (HYPRE_BigInt)n * n; vals[nc++] = -1.0; }
    if (dim == 3 && z < n - 1) { cols[nc] = row + (HYPRE_BigInt)n * n; vals[nc++] = -1.0; }
    HYPRE_IJMatrixSetValues(ijA, 1, &nc, &row, cols, vals);
  }
  HYPRE_IJMatrixAssemble(ijA);
  HYPRE_ParCSRMatrix A;
  HYPRE_IJMatrixGetObject(ijA, (void **)&A);

  HYPRE_IJVector ijb, ijx;
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi, &ijb);
  HYPRE_IJVectorSetObjectType(ijb, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(ijb);
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, lo, hi, &ijx);
  HYPRE_IJVectorSetObjectType(ijx, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(ijx);
  for (HYPRE_BigInt row = lo; row <= hi; row++) {
    HYPRE_Complex one = 1.0, zero = 0.0;
    HYPRE_IJVectorSetValues(ijb, 1, &row, &one);
    HYPRE_IJVectorSetValues(ijx, 1, &row, &zero);
  }
  HYPRE_IJVectorAssemble(ijb);
  HYPRE_IJVectorAssemble(ijx);
  HYPRE_ParVector b, x;
  HYPRE_IJVectorGetObject(ijb, (void **)&b);
  HYPRE_IJVectorGetObject(ijx, (void **)&x);

  double best_setup = 1e300, best_rap = 1e300, t_solve = 0;
  HYPRE_Int iters = 0, levels = 0;
  HYPRE_Real relres = 0;
  long computed = 0, forwarded = 0;
  for (int r = 0; r < repeat; r++) {
    HYPRE_Solver amg, solver = NULL;
    HYPRE_BoomerAMGCreate(&amg);
    HYPRE_BoomerAMGSetPrintLevel(amg, 0);
    HYPRE_BoomerAMGSetModuleRAP2(amg, modular);
    HYPRE_BoomerAMGSetKeepTranspose(amg, keept);
    if (pcg) {
      HYPRE_BoomerAMGSetMaxIter(amg, 1);
      HYPRE_BoomerAMGSetTol(amg, 0.0);
      HYPRE_ParCSRPCGCreate(MPI_COMM_WORLD, &solver);
      HYPRE_PCGSetTol(solver, 1e-8);
      HYPRE_PCGSetMaxIter(solver, 500);
      HYPRE_PCGSetTwoNorm(solver, 1);
      HYPRE_PCGSetPrecond(solver, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve,
                          (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSetup, amg);
    } else {
      HYPRE_BoomerAMGSetTol(amg, 1e-8);
      HYPRE_BoomerAMGSetMaxIter(amg, 500);
    }
    HYPRE_ParVectorSetConstantValues(x, 0.0);
    TileRAP_HypreResetStats();
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (pcg) HYPRE_ParCSRPCGSetup(solver, A, b, x);
    else HYPRE_BoomerAMGSetup(amg, A, b, x);
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (pcg) HYPRE_ParCSRPCGSolve(solver, A, b, x);
    else HYPRE_BoomerAMGSolve(amg, A, b, x);
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    if (t1 - t0 < best_setup) best_setup = t1 - t0;
    t_solve = t2 - t1;
    {
      TileRAP_HypreStats st;
      TileRAP_HypreGetStats(&st);
      double rap = st.seconds_tilerap + st.seconds_forwarded, grap = rap;
      MPI_Allreduce(&rap, &grap, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (grap < best_rap) best_rap = grap;
    }
    computed = TileRAP_HypreComputed();
    forwarded = TileRAP_HypreForwarded();
    if (pcg) {
      HYPRE_PCGGetNumIterations(solver, &iters);
      HYPRE_PCGGetFinalRelativeResidualNorm(solver, &relres);
      HYPRE_ParCSRPCGDestroy(solver);
    } else {
      HYPRE_BoomerAMGGetNumIterations(amg, &iters);
      HYPRE_BoomerAMGGetFinalRelativeResidualNorm(amg, &relres);
    }
    levels = (HYPRE_Int)(computed + forwarded) + 1;
    HYPRE_BoomerAMGDestroy(amg);
  }
  if (rank == 0) {
    printf("poisson-boomeramg: %dD n=%ld (%lld unknowns) on %d rank(s), %s, %s path%s\n", dim, n,
           (long long)N, np, pcg ? "PCG+BoomerAMG" : "BoomerAMG",
           modular ? "modular RAPKT" : "BuildCoarseOperatorKT", keept ? ", keepT" : "");
    printf("levels: %d\n", (int)levels);
    printf("iterations: %d  (final relative residual %.3e)\n", (int)iters, (double)relres);
    printf("setup time: %.4f s (best of %d)\n", best_setup, repeat);
    printf("solve time: %.4f s\n", t_solve);
    printf("Galerkin products: %.4f s (best of %d, slowest rank)\n", best_rap, repeat);
    printf("coarse operators through tilerap: %ld of %ld (forwarded to hypre: %ld)\n", computed,
           computed + forwarded, forwarded);
  }
  HYPRE_IJMatrixDestroy(ijA);
  HYPRE_IJVectorDestroy(ijb);
  HYPRE_IJVectorDestroy(ijx);
  HYPRE_Finalize();
  MPI_Finalize();
  return 0;
}
