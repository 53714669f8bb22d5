/* BoomerAMG re-setup (TileRAP_HypreSetReuse) on sequences of matrices
 * with one pattern, as time-dependent and nonlinear solves make them;
 * BoomerAMG-preconditioned CG (hypre's defaults, tol 1e-8), setups timed
 * on their own.  Each sequence runs three ways in one process:
 *   full    hypre's full setup at every step (the hook disabled)
 *   reuse   re-setup from the hierarchy of the first step (max_reuses -1)
 *   reuse:K a full setup every K+1 steps, re-setups between
 * and prints, per way, the setups' total and median times (full setups
 * and re-setups apart), the iterations of every step and the solve time.
 *
 *   hypre-resetup-bench [--n N] [--steps S] [--every K] heat|picard|newton ...
 * heat:   backward-Euler steps of u_t = div(k(x,t) grad u) on an N^3
 *         grid (7-point, Dirichlet), k = exp(1.5 sin(2 pi x + t/4) cos(2 pi y))
 *         moving with time (contrast e^3), A = I/dt + K(t), dt = 20 h^2;
 * picard: Picard steps of -div((1 + 10 u^2) grad u) = 10 on an N^3 grid,
 *         A = K(u_k), u_{k+1} = A^{-1} f;
 * newton: Newton steps of the same problem with the source growing by half
 *         of 10 at each step (one step per load, a continuation): A is the
 *         Jacobian, nonsymmetric, solved by GMRES(50) with BoomerAMG. 
 * Rows are split in contiguous blocks over the ranks (mpiexec -n P).  With
 * a CUDA hypre the matrices live in device memory (hypre's default there):
 * values are assembled on the host and copied in at every step. */
#include <HYPRE.h>
#include <HYPRE_IJ_mv.h>
#include <HYPRE_krylov.h>
#include <HYPRE_parcsr_ls.h>
#include <_hypre_parcsr_ls.h>
#include <_hypre_parcsr_mv.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilerap_device.h"
#include "tilerap_hypre.h"

static int g_rank, g_np;
static HYPRE_BigInt g_n; /* points a side */

typedef struct {
  HYPRE_IJMatrix ijA;
  HYPRE_IJVector ijb, ijx;
  hypre_ParCSRMatrix *A;
  hypre_ParCSRMatrix *H; /* a host copy of A whose values are set (A in device memory), else A */
  double *bh, *xh;       /* host values of b and x */
  HYPRE_ParVector b, x;
  double *u_old; /* local values of the previous solution (newton: the iterate) */
  HYPRE_BigInt lo, hi;
} problem;

static int on_device(hypre_ParCSRMatrix *A)
{
  return hypre_GetActualMemLocation(hypre_ParCSRMatrixMemoryLocation(A)) != hypre_MEMORY_HOST;
}

static void coords(HYPRE_BigInt g, double *x, double *y, double *z)
{
  *x = (double)(g % g_n) / (double)g_n;
  *y = (double)((g / g_n) % g_n) / (double)g_n;
  *z = (double)(g / (g_n * g_n)) / (double)g_n;
}

/* The pattern: 7-point stencil, rows [lo, hi] on this rank. */
static void make_problem(problem *p)
{
#if defined(HYPRE_USING_CUDA)
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_HOST); /* assembled on the host */
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_HOST);
#endif
  const HYPRE_BigInt N = g_n * g_n * g_n;
  p->lo = N * g_rank / g_np;
  p->hi = N * (g_rank + 1) / g_np - 1;
  HYPRE_IJMatrixCreate(MPI_COMM_WORLD, p->lo, p->hi, p->lo, p->hi, &p->ijA);
  HYPRE_IJMatrixSetObjectType(p->ijA, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(p->ijA);
  for (HYPRE_BigInt r = p->lo; r <= p->hi; r++) {
    HYPRE_BigInt cols[7];
    HYPRE_Complex vals[7];
    HYPRE_Int nc = 0;
    const HYPRE_BigInt x = r % g_n, y = (r / g_n) % g_n, z = r / (g_n * g_n);
    cols[nc] = r; vals[nc++] = 6.0;
    if (x > 0) { cols[nc] = r - 1; vals[nc++] = -1; }
    if (x < g_n - 1) { cols[nc] = r + 1; vals[nc++] = -1; }
    if (y > 0) { cols[nc] = r - g_n; vals[nc++] = -1; }
    if (y < g_n - 1) { cols[nc] = r + g_n; vals[nc++] = -1; }
    if (z > 0) { cols[nc] = r - g_n * g_n; vals[nc++] = -1; }
    if (z < g_n - 1) { cols[nc] = r + g_n * g_n; vals[nc++] = -1; }
    HYPRE_IJMatrixSetValues(p->ijA, 1, &nc, &r, cols, vals);
  }
  HYPRE_IJMatrixAssemble(p->ijA);
  void *obj;
  HYPRE_IJMatrixGetObject(p->ijA, &obj);
  p->A = (hypre_ParCSRMatrix *)obj;
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, p->lo, p->hi, &p->ijb);
  HYPRE_IJVectorSetObjectType(p->ijb, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(p->ijb);
  HYPRE_IJVectorAssemble(p->ijb);
  HYPRE_IJVectorGetObject(p->ijb, &obj);
  p->b = (HYPRE_ParVector)obj;
  HYPRE_IJVectorCreate(MPI_COMM_WORLD, p->lo, p->hi, &p->ijx);
  HYPRE_IJVectorSetObjectType(p->ijx, HYPRE_PARCSR);
  HYPRE_IJVectorInitialize(p->ijx);
  HYPRE_IJVectorAssemble(p->ijx);
  HYPRE_IJVectorGetObject(p->ijx, &obj);
  p->x = (HYPRE_ParVector)obj;
#if defined(HYPRE_USING_CUDA)
  /* built on the host, moved to the device as a GPU user's */
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_DEVICE);
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_DEVICE);
  HYPRE_IJMatrixMigrate(p->ijA, HYPRE_MEMORY_DEVICE);
  HYPRE_IJVectorMigrate(p->ijb, HYPRE_MEMORY_DEVICE);
  HYPRE_IJVectorMigrate(p->ijx, HYPRE_MEMORY_DEVICE);
  HYPRE_IJMatrixGetObject(p->ijA, &obj);
  p->A = (hypre_ParCSRMatrix *)obj;
  HYPRE_IJVectorGetObject(p->ijb, &obj);
  p->b = (HYPRE_ParVector)obj;
  HYPRE_IJVectorGetObject(p->ijx, &obj);
  p->x = (HYPRE_ParVector)obj;
#endif
  p->u_old = calloc((size_t)(p->hi - p->lo + 1), sizeof *p->u_old);
  p->bh = calloc((size_t)(p->hi - p->lo + 1), sizeof *p->bh);
  p->xh = calloc((size_t)(p->hi - p->lo + 1), sizeof *p->xh);
  p->H = on_device(p->A) ? hypre_ParCSRMatrixClone_v2(p->A, 1, HYPRE_MEMORY_HOST) : p->A;
}

/* The host values of H into A (device memory): what an application that
 * assembles on the host hands hypre at every step. */
static void values_to_matrix(problem *p)
{
  if (p->H == p->A) return;
  hypre_CSRMatrix *hb[2] = {hypre_ParCSRMatrixDiag(p->H), hypre_ParCSRMatrixOffd(p->H)};
  hypre_CSRMatrix *db[2] = {hypre_ParCSRMatrixDiag(p->A), hypre_ParCSRMatrixOffd(p->A)};
  for (int q = 0; q < 2; q++)
    if (hypre_CSRMatrixNumNonzeros(hb[q]))
      hypre_TMemcpy(hypre_CSRMatrixData(db[q]), hypre_CSRMatrixData(hb[q]), HYPRE_Complex,
                    hypre_CSRMatrixNumNonzeros(hb[q]), HYPRE_MEMORY_DEVICE, HYPRE_MEMORY_HOST);
}

/* host array <-> a ParVector's local values, wherever they live */
static void vec_copy(HYPRE_ParVector v, double *h, int to_vector)
{
  hypre_Vector *lv = hypre_ParVectorLocalVector((hypre_ParVector *)v);
  const HYPRE_MemoryLocation loc = hypre_VectorMemoryLocation(lv);
  const HYPRE_Int n = hypre_VectorSize(lv);
  if (to_vector) hypre_TMemcpy(hypre_VectorData(lv), h, double, n, loc, HYPRE_MEMORY_HOST);
  else hypre_TMemcpy(h, hypre_VectorData(lv), double, n, HYPRE_MEMORY_HOST, loc);
}

static void free_problem(problem *p)
{
  if (p->H != p->A) hypre_ParCSRMatrixDestroy(p->H);
  free(p->bh);
  free(p->xh);
  HYPRE_IJMatrixDestroy(p->ijA);
  HYPRE_IJVectorDestroy(p->ijb);
  HYPRE_IJVectorDestroy(p->ijx);
  free(p->u_old);
}

/* u of every rank's neighbours: gathered whole (the grids here are small
 * enough) for the Picard coefficient at off-rank points. */
static double *g_u_all;

static double kappa(int picard, HYPRE_BigInt g, double t)
{
  if (picard) {
    const double u = g_u_all[g];
    return 1.0 + 10.0 * u * u;
  }
  double x, y, z;
  coords(g, &x, &y, &z);
  return exp(1.5 * sin(2 * M_PI * x + 0.25 * t) * cos(2 * M_PI * y));
}

enum { HEAT, PICARD, NEWTON };

/* The Newton Jacobian of R(u) = sum over faces k_f (u_i - u_j) + Dirichlet
 * faces k_i u_i - h^2 f, k_f = (k_i + k_j)/2, k = 1 + 10 u^2 (into H), and
 * -R(u) into bh. */
static void set_newton(problem *p, double f)
{
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(p->H), *o = hypre_ParCSRMatrixOffd(p->H);
  const HYPRE_BigInt r0 = hypre_ParCSRMatrixFirstRowIndex(p->H), c0 = hypre_ParCSRMatrixFirstColDiag(p->H);
  const HYPRE_BigInt *cm = hypre_ParCSRMatrixColMapOffd(p->H);
  for (HYPRE_Int i = 0; i < hypre_CSRMatrixNumRows(d); i++) {
    const HYPRE_BigInt g = r0 + i;
    const double ui = g_u_all[g], ki = 1.0 + 10.0 * ui * ui, dki = 20.0 * ui;
    double jii = 0, res = 0;
    HYPRE_Int kd = -1, nb = 0;
    hypre_CSRMatrix *blk[2] = {d, o};
    for (int q = 0; q < 2; q++) {
      if (!hypre_CSRMatrixI(blk[q])) continue;
      for (HYPRE_Int k = hypre_CSRMatrixI(blk[q])[i]; k < hypre_CSRMatrixI(blk[q])[i + 1]; k++) {
        const HYPRE_BigInt gj = q == 0 ? c0 + hypre_CSRMatrixJ(d)[k] : cm[hypre_CSRMatrixJ(o)[k]];
        if (gj == g) { kd = k; continue; }
        const double uj = g_u_all[gj], kj = 1.0 + 10.0 * uj * uj, kf = 0.5 * (ki + kj);
        hypre_CSRMatrixData(blk[q])[k] = -kf + 10.0 * uj * (ui - uj); /* d/du_j of k_f (u_i - u_j) */
        jii += kf + 0.5 * dki * (ui - uj);
        res += kf * (ui - uj);
        nb++;
      }
    }
    jii += (6 - nb) * (ki + dki * ui);
    res += (6 - nb) * ki * ui - f / (double)(g_n * g_n);
    if (kd >= 0) hypre_CSRMatrixData(d)[kd] = jii;
    p->bh[i] = -res;
  }
}

/* A's values in place: face coefficients (k_i + k_j)/2, the diagonal
 * their sum (+ the Dirichlet faces' and the mass term). */
static void set_values(problem *p, int picard, double t)
{
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(p->H), *o = hypre_ParCSRMatrixOffd(p->H);
  const HYPRE_BigInt r0 = hypre_ParCSRMatrixFirstRowIndex(p->H), c0 = hypre_ParCSRMatrixFirstColDiag(p->H);
  const HYPRE_BigInt *cm = hypre_ParCSRMatrixColMapOffd(p->H);
  const double mass = picard ? 0.0 : 1.0 / 20.0;
  for (HYPRE_Int i = 0; i < hypre_CSRMatrixNumRows(d); i++) {
    const HYPRE_BigInt g = r0 + i;
    const double ki = kappa(picard, g, t);
    double sum = 0;
    HYPRE_Int kd = -1, nb = 0;
    for (HYPRE_Int k = hypre_CSRMatrixI(d)[i]; k < hypre_CSRMatrixI(d)[i + 1]; k++) {
      const HYPRE_BigInt gj = c0 + hypre_CSRMatrixJ(d)[k];
      if (gj == g) { kd = k; continue; }
      const double f = 0.5 * (ki + kappa(picard, gj, t));
      hypre_CSRMatrixData(d)[k] = -f;
      sum += f;
      nb++;
    }
    if (hypre_CSRMatrixI(o))
      for (HYPRE_Int k = hypre_CSRMatrixI(o)[i]; k < hypre_CSRMatrixI(o)[i + 1]; k++) {
        const double f = 0.5 * (ki + kappa(picard, cm[hypre_CSRMatrixJ(o)[k]], t));
        hypre_CSRMatrixData(o)[k] = -f;
        sum += f;
        nb++;
      }
    /* Dirichlet faces (missing neighbours) with the point's own coefficient */
    if (kd >= 0) hypre_CSRMatrixData(d)[kd] = sum + (6 - nb) * ki + mass;
  }
}

static void gather_u(problem *p)
{
  const HYPRE_BigInt N = g_n * g_n * g_n;
  int *cnt = malloc(sizeof *cnt * (size_t)g_np), *dsp = malloc(sizeof *dsp * (size_t)g_np);
  for (int q = 0; q < g_np; q++) {
    const HYPRE_BigInt lo = N * q / g_np, hi = N * (q + 1) / g_np;
    cnt[q] = (int)(hi - lo);
    dsp[q] = (int)lo;
  }
  MPI_Allgatherv(p->xh, cnt[g_rank], MPI_DOUBLE, g_u_all, cnt, dsp, MPI_DOUBLE, MPI_COMM_WORLD);
  free(cnt);
  free(dsp);
}

static HYPRE_Int no_setup(HYPRE_Solver s, HYPRE_Matrix A, HYPRE_Vector b, HYPRE_Vector x)
{
  (void)s; (void)A; (void)b; (void)x;
  return 0;
}

static int cmp_d(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One sequence one way: reuse 0 (hypre alone), -1, or K. */
static void run(const char *name, int kind, int steps, int reuse)
{
  const int picard = kind == PICARD;
  problem p;
  make_problem(&p);
  HYPRE_Solver amg, pcg;
  HYPRE_BoomerAMGCreate(&amg);
  HYPRE_BoomerAMGSetPrintLevel(amg, 0);
  HYPRE_BoomerAMGSetMaxIter(amg, 1);
  HYPRE_BoomerAMGSetTol(amg, 0.0);
  TileRAP_HypreEnable(reuse != 0);
  TileRAP_HypreSetReuse(amg, reuse);
  /* CG for the symmetric operators, GMRES(50) for the Newton Jacobian */
  if (kind == NEWTON) {
    HYPRE_ParCSRGMRESCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_GMRESSetKDim(pcg, 50);
    HYPRE_GMRESSetTol(pcg, 1e-8);
    HYPRE_GMRESSetMaxIter(pcg, 500);
    HYPRE_GMRESSetPrecond(pcg, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve, (HYPRE_PtrToSolverFcn)no_setup, amg);
  } else {
    HYPRE_ParCSRPCGCreate(MPI_COMM_WORLD, &pcg);
    HYPRE_PCGSetTol(pcg, 1e-8);
    HYPRE_PCGSetMaxIter(pcg, 500);
    HYPRE_PCGSetTwoNorm(pcg, 1);
    HYPRE_PCGSetPrecond(pcg, (HYPRE_PtrToSolverFcn)HYPRE_BoomerAMGSolve, (HYPRE_PtrToSolverFcn)no_setup, amg);
  }
  double *tfull = malloc(sizeof(double) * (size_t)steps), *tre = malloc(sizeof(double) * (size_t)steps);
  int *its = malloc(sizeof(int) * (size_t)steps), nfull = 0, nre = 0;
  double tsolve = 0, tsetup = 0;
  TileRAP_HypreResetStats();
  memset(g_u_all, 0, sizeof(double) * (size_t)(g_n * g_n * g_n));
  HYPRE_ParVectorSetConstantValues(p.x, 0.0);
  for (int s = 0; s < steps; s++) {
    const double t = s;
    if (kind == NEWTON) {
      set_newton(&p, 10.0 * (1.0 + 0.5 * s)); /* J(u) and -R(u) */
      HYPRE_ParVectorSetConstantValues(p.x, 0.0); /* the update starts from 0 */
    } else {
      set_values(&p, picard, t);
      /* right-hand side: h^2 f, f = 10 (heat: + u_old / dt) */
      for (HYPRE_BigInt r = p.lo; r <= p.hi; r++)
        p.bh[r - p.lo] = (picard ? 0.0 : p.u_old[r - p.lo] / 20.0) + 10.0 / (double)(g_n * g_n);
    }
    values_to_matrix(&p);
    vec_copy(p.b, p.bh, 1);
    TileRAP_HypreStats st0, st1;
    TileRAP_HypreGetStats(&st0);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    HYPRE_BoomerAMGSetup(amg, (HYPRE_ParCSRMatrix)p.A, p.b, p.x);
    MPI_Barrier(MPI_COMM_WORLD);
    const double ts = MPI_Wtime() - t0;
    TileRAP_HypreGetStats(&st1);
    tsetup += ts;
    if (st1.setups_reused > st0.setups_reused) tre[nre++] = ts;
    else tfull[nfull++] = ts;
    t0 = MPI_Wtime();
    HYPRE_Int it = 0;
    if (kind == NEWTON) {
      HYPRE_ParCSRGMRESSetup(pcg, (HYPRE_ParCSRMatrix)p.A, p.b, p.x);
      HYPRE_ParCSRGMRESSolve(pcg, (HYPRE_ParCSRMatrix)p.A, p.b, p.x);
      HYPRE_GMRESGetNumIterations(pcg, &it);
    } else {
      HYPRE_ParCSRPCGSetup(pcg, (HYPRE_ParCSRMatrix)p.A, p.b, p.x);
      HYPRE_ParCSRPCGSolve(pcg, (HYPRE_ParCSRMatrix)p.A, p.b, p.x);
      HYPRE_PCGGetNumIterations(pcg, &it);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tsolve += MPI_Wtime() - t0;
    its[s] = (int)it;
    vec_copy(p.x, p.xh, 0);
    const size_t nloc = (size_t)(p.hi - p.lo + 1);
    if (kind == NEWTON) { /* u += the update */
      for (size_t k = 0; k < nloc; k++) p.u_old[k] += p.xh[k];
      memcpy(p.xh, p.u_old, sizeof(double) * nloc);
    } else {
      memcpy(p.u_old, p.xh, sizeof(double) * nloc);
    }
    if (kind != HEAT) gather_u(&p);
  }
  if (g_rank == 0) {
    char way[32];
    if (reuse == 0) snprintf(way, sizeof way, "full");
    else if (reuse < 0) snprintf(way, sizeof way, "reuse");
    else snprintf(way, sizeof way, "reuse:%d", reuse);
    int itmin = its[0], itmax = its[0];
    long itsum = 0;
    for (int s = 0; s < steps; s++) {
      itmin = its[s] < itmin ? its[s] : itmin;
      itmax = its[s] > itmax ? its[s] : itmax;
      itsum += its[s];
    }
    printf("%-6s n=%lld np=%d %-8s setups %7.3f s (full %2d x median %.4f s, re-setup %2d x median %.4f s) "
           "solve %7.3f s  iterations min/mean/max %d/%.1f/%d:",
           name, (long long)g_n, g_np, way, tsetup, nfull, median(tfull, nfull), nre, median(tre, nre), tsolve,
           itmin, (double)itsum / steps, itmax);
    for (int s = 0; s < steps; s++) printf(" %d", its[s]);
    printf("\n");
    fflush(stdout);
  }
  if (kind == NEWTON) HYPRE_ParCSRGMRESDestroy(pcg);
  else HYPRE_ParCSRPCGDestroy(pcg);
  HYPRE_BoomerAMGDestroy(amg);
  free(tfull); free(tre); free(its);
  free_problem(&p);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_np);
  /* the CUDA runtime up before hypre's; a CUDA hypre's ranks bound to one
   * GPU each (node-local rank mod devices), as hypre's drivers bind them */
  const int gpus = tilerap_device_count();
#if defined(HYPRE_USING_CUDA)
  if (gpus > 0) hypre_bind_device(g_rank, g_np, MPI_COMM_WORLD);
#else
  (void)gpus;
#endif
  HYPRE_Init();
  g_n = 40;
  int steps = 12, every = 5, ncases = 0;
  const char *cases[8];
  for (int a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "--n") && a + 1 < argc) g_n = atoll(argv[++a]);
    else if (!strcmp(argv[a], "--steps") && a + 1 < argc) steps = atoi(argv[++a]);
    else if (!strcmp(argv[a], "--every") && a + 1 < argc) every = atoi(argv[++a]);
    else if ((!strcmp(argv[a], "heat") || !strcmp(argv[a], "picard") || !strcmp(argv[a], "newton")) && ncases < 8)
      cases[ncases++] = argv[a];
    else {
      if (g_rank == 0)
        fprintf(stderr, "usage: hypre-resetup-bench [--n N] [--steps S] [--every K] heat|picard|newton ...\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (!ncases || g_n < 4 || steps < 1 || every < 1) {
    if (g_rank == 0) fprintf(stderr, "hypre-resetup-bench: name heat, picard or newton (N >= 4, S >= 1, K >= 1)\n");
    MPI_Finalize();
    return 2;
  }
  g_u_all = calloc((size_t)(g_n * g_n * g_n), sizeof *g_u_all);
  for (int c = 0; c < ncases; c++) {
    const int kind = !strcmp(cases[c], "picard") ? PICARD : !strcmp(cases[c], "newton") ? NEWTON : HEAT;
    run(cases[c], kind, steps, 0);
    run(cases[c], kind, steps, -1);
    run(cases[c], kind, steps, every);
  }
  free(g_u_all);
  HYPRE_Finalize();
  MPI_Finalize();
  return 0;
}
