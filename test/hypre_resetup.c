/* BoomerAMG re-setup from the kept hierarchy (TileRAP_HypreSetReuse), on
 * host memory and any number of ranks, against independent references:
 *
 *  - A scaled by 2 keeps hypre's coarsening and interpolation exactly, so
 *    a solver re-set-up on 2A must equal a second solver freshly set up on
 *    2A by hypre: same P, coarse operators, l1 norms, Chebyshev data,
 *    relaxation weights, coarsest dense system, iterations and solution;
 *  - A changed by a symmetric diagonal scaling D A D with varying D: every
 *    coarse operator equals hypre's own Galerkin product of the kept P and
 *    the re-set-up finer operator;
 *  - a changed pattern (also one with the same sizes and counts), a period
 *    used up, settings that a re-setup does not refresh, a destroyed
 *    solver, bad arguments: full setups with their reasons, never a stale
 *    hierarchy.
 * With a CUDA hypre and a GPU the first two run again on device memory. */
#include "hypre_tap.h"

#include <math.h>

#include "tilerap.h"
#include "tilerap_device.h"
#include "tilerap_csr_layouts.h"

static int on_dev(hypre_ParCSRMatrix *A)
{
  return hypre_GetActualMemLocation(hypre_ParCSRMatrixMemoryLocation(A)) != hypre_MEMORY_HOST;
}

/* fn applied to A's values: in place on the host, else on a host copy
 * whose values then go back (the entry order of a clone is A's). */
static void modify(hypre_ParCSRMatrix *A, void (*fn)(hypre_ParCSRMatrix *, double, double), double a, double b)
{
  if (!on_dev(A)) { fn(A, a, b); return; }
  hypre_ParCSRMatrix *H = hypre_ParCSRMatrixClone_v2(A, 1, HYPRE_MEMORY_HOST);
  fn(H, a, b);
  hypre_CSRMatrix *hb[2] = {hypre_ParCSRMatrixDiag(H), hypre_ParCSRMatrixOffd(H)};
  hypre_CSRMatrix *db[2] = {hypre_ParCSRMatrixDiag(A), hypre_ParCSRMatrixOffd(A)};
  for (int q = 0; q < 2; q++)
    if (hypre_CSRMatrixNumNonzeros(hb[q]))
      hypre_TMemcpy(hypre_CSRMatrixData(db[q]), hypre_CSRMatrixData(hb[q]), HYPRE_Complex,
                    hypre_CSRMatrixNumNonzeros(hb[q]), HYPRE_MEMORY_DEVICE, HYPRE_MEMORY_HOST);
  hypre_ParCSRMatrixDestroy(H);
}

/* A host copy of a matrix for the comparisons (th_compare reads host arrays). */
static hypre_ParCSRMatrix *host_of(hypre_ParCSRMatrix *A)
{
  return on_dev(A) ? hypre_ParCSRMatrixClone_v2(A, 1, HYPRE_MEMORY_HOST) : A;
}

static th_cmp compare_any(hypre_ParCSRMatrix *X, hypre_ParCSRMatrix *Y)
{
  hypre_ParCSRMatrix *hx = host_of(X), *hy = host_of(Y);
  th_cmp c = th_compare_entries(hx, hy);
  if (hx != X) hypre_ParCSRMatrixDestroy(hx);
  if (hy != Y) hypre_ParCSRMatrixDestroy(hy);
  return c;
}

/* n values at p (memory loc) as a fresh host array, or NULL */
static double *host_values(const double *p, long n, HYPRE_MemoryLocation loc)
{
  if (!p || n <= 0) return NULL;
  double *h = malloc(sizeof *h * (size_t)n);
  if (hypre_GetActualMemLocation(loc) == hypre_MEMORY_HOST) memcpy(h, p, sizeof *h * (size_t)n);
  else hypre_TMemcpy(h, p, double, n, HYPRE_MEMORY_HOST, HYPRE_MEMORY_DEVICE);
  return h;
}

/* A's entries a_ij *= d(i) d(j), d(g) = 1 + amp sin(0.37 g + phase). */
static void scale_sym_host(hypre_ParCSRMatrix *A, double amp, double phase)
{
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(A), *o = hypre_ParCSRMatrixOffd(A);
  const HYPRE_BigInt r0 = hypre_ParCSRMatrixFirstRowIndex(A), c0 = hypre_ParCSRMatrixFirstColDiag(A);
  const HYPRE_BigInt *cm = hypre_ParCSRMatrixColMapOffd(A);
#define TH_D(g) (1.0 + amp * sin(0.37 * (double)(g) + phase))
  for (HYPRE_Int i = 0; i < hypre_CSRMatrixNumRows(d); i++) {
    const double di = TH_D(r0 + i);
    for (HYPRE_Int k = hypre_CSRMatrixI(d)[i]; k < hypre_CSRMatrixI(d)[i + 1]; k++)
      hypre_CSRMatrixData(d)[k] *= di * TH_D(c0 + hypre_CSRMatrixJ(d)[k]);
    if (hypre_CSRMatrixI(o))
      for (HYPRE_Int k = hypre_CSRMatrixI(o)[i]; k < hypre_CSRMatrixI(o)[i + 1]; k++)
        hypre_CSRMatrixData(o)[k] *= di * TH_D(cm[hypre_CSRMatrixJ(o)[k]]);
  }
#undef TH_D
}

static void scale_all_host(hypre_ParCSRMatrix *A, double f, double unused)
{
  (void)unused;
  hypre_CSRMatrix *b[2] = {hypre_ParCSRMatrixDiag(A), hypre_ParCSRMatrixOffd(A)};
  for (int q = 0; q < 2; q++)
    for (HYPRE_Int k = 0; k < hypre_CSRMatrixNumNonzeros(b[q]); k++) hypre_CSRMatrixData(b[q])[k] *= f;
}

typedef struct {
  const char *name;
  int relax, coarse, order; /* relax type (-1: hypre's default), coarsest, relax order */
  double weight;            /* relaxation weight (1: hypre's default) */
  int modular;
} cfg;

#if defined(HYPRE_USING_CUDA)
static int g_device_mode; /* problems in device memory (a CUDA hypre) */
#endif

/* The model problem, built on the host; in device mode then moved to the
 * device as a GPU user's. */
static void make_problem(int dim, int n, int flags, th_problem *pb)
{
#if defined(HYPRE_USING_CUDA)
  if (g_device_mode) {
    HYPRE_SetMemoryLocation(HYPRE_MEMORY_HOST);
    HYPRE_SetExecutionPolicy(HYPRE_EXEC_HOST);
  }
#endif
  th_poisson_ex(g_comm, dim, n, flags, pb);
#if defined(HYPRE_USING_CUDA)
  if (g_device_mode) th_problem_to_device(pb);
#endif
}

static HYPRE_Solver make_solver(const cfg *c)
{
  HYPRE_Solver s;
  HYPRE_BoomerAMGCreate(&s);
  HYPRE_BoomerAMGSetPrintLevel(s, 0);
  HYPRE_BoomerAMGSetTol(s, 1e-9);
  HYPRE_BoomerAMGSetMaxIter(s, 100);
  if (c->relax >= 0) HYPRE_BoomerAMGSetRelaxType(s, c->relax);
  if (c->coarse >= 0) HYPRE_BoomerAMGSetCycleRelaxType(s, c->coarse, 3);
  HYPRE_BoomerAMGSetRelaxOrder(s, c->order);
  if (c->weight != 1.0) HYPRE_BoomerAMGSetRelaxWt(s, c->weight);
  HYPRE_BoomerAMGSetModuleRAP2(s, c->modular);
  return s;
}

static int solve(HYPRE_Solver s, th_problem *pb)
{
  th_zero_x(pb);
  HYPRE_BoomerAMGSolve(s, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  HYPRE_Int it = 0;
  HYPRE_BoomerAMGGetNumIterations(s, &it);
  return (int)it;
}

/* max |x - y| / max |y| over every rank */
static double vec_relerr(const double *x, const double *y, long n)
{
  double d[2] = {0, 0}, g[2];
  for (long k = 0; k < n; k++) {
    d[0] = fmax(d[0], fabs(x[k] - y[k]));
    d[1] = fmax(d[1], fabs(y[k]));
  }
  MPI_Allreduce(d, g, 2, MPI_DOUBLE, MPI_MAX, g_comm);
  return g[1] > 0 ? g[0] / g[1] : g[0];
}

/* collective on every rank, whatever each holds */
static double vector_relerr(hypre_Vector *x, hypre_Vector *y)
{
  const int same = (!x && !y) || (x && y && hypre_VectorSize(x) == hypre_VectorSize(y));
  const long n = same && x ? hypre_VectorSize(x) : 0;
  double *hx = n ? host_values(hypre_VectorData(x), n, hypre_VectorMemoryLocation(x)) : NULL;
  double *hy = n ? host_values(hypre_VectorData(y), n, hypre_VectorMemoryLocation(y)) : NULL;
  const double e = vec_relerr(hx, hy, n);
  free(hx);
  free(hy);
  return th_all(g_comm, same) ? e : 1.0;
}

static long setups_reused(void)
{
  TileRAP_HypreStats st;
  TileRAP_HypreGetStats(&st);
  return st.setups_reused;
}

static long setups_full(int reason)
{
  TileRAP_HypreStats st;
  TileRAP_HypreGetStats(&st);
  return st.setups_full[reason];
}

/* Device memory: A's structure fingerprints (entry order counted / not),
 * where a re-setup is refused (diagnostics). */
static void fp_diag(const char *when, hypre_ParCSRMatrix *A)
{
#if defined(HYPRE_USING_CUDA)
  if (!g_device_mode || g_np > 1) return;
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(A);
  uint64_t f1 = 0, f0 = 0;
  tilerap_csr_fingerprint_i32(hypre_CSRMatrixNumRows(d), hypre_CSRMatrixI(d), hypre_CSRMatrixJ(d), NULL, 1,
                              TILERAP_MEM_DEVICE, &f1);
  tilerap_csr_fingerprint_i32(hypre_CSRMatrixNumRows(d), hypre_CSRMatrixI(d), hypre_CSRMatrixJ(d), NULL, 0,
                              TILERAP_MEM_DEVICE, &f0);
  DIAG("A %s: structure fingerprint %016llx (entry order) %016llx (sets), arrays %p %p", when,
       (unsigned long long)f1, (unsigned long long)f0, (void *)hypre_CSRMatrixI(d), (void *)hypre_CSRMatrixJ(d));
#else
  (void)when; (void)A;
#endif
}

/* Re-setup on 2A against a fresh setup on 2A: every setup datum. */
static void check_against_fresh(const cfg *c, int dim, int n, int flags)
{
  th_problem pb;
  make_problem(dim, n, flags, &pb);
  HYPRE_Solver s1 = make_solver(c);
  OK(TileRAP_HypreSetReuse(s1, -1) == TILERAP_SUCCESS, "%s: reuse set", c->name);
  TileRAP_HypreResetStats();
  HYPRE_BoomerAMGSetup(s1, (HYPRE_ParCSRMatrix)pb.A, pb.b, pb.x);
  OK(setups_full(TILERAP_HYPRE_SETUP_NEW) == 1 && setups_reused() == 0, "%s: first setup is a full one", c->name);
  fp_diag("after the first setup", pb.A);
  modify(pb.A, scale_all_host, 2.0, 0.0);
  fp_diag("after the values changed", pb.A);
  HYPRE_BoomerAMGSetup(s1, (HYPRE_ParCSRMatrix)pb.A, pb.b, pb.x);
  OK(setups_reused() == 1, "%s: setup on 2A re-set-up from the kept hierarchy", c->name);
  HYPRE_Solver s2 = make_solver(c); /* reuse off: hypre's full setup */
  HYPRE_BoomerAMGSetup(s2, (HYPRE_ParCSRMatrix)pb.A, pb.b, pb.x);
  OK(setups_reused() == 1 && setups_full(TILERAP_HYPRE_SETUP_NEW) == 1, "%s: reuse off: not counted", c->name);
  hypre_ParAMGData *a1 = (hypre_ParAMGData *)s1, *a2 = (hypre_ParAMGData *)s2;
  const int L = th_num_levels(s1);
  OK(L >= 3 && L == th_num_levels(s2), "%s: %d levels, fresh setup %d", c->name, L, th_num_levels(s2));
  if (L != th_num_levels(s2)) goto out;
  double ep = 0, ea = 0, el1 = 0, ecd = 0, ecc = 0, ew = 0;
  for (int l = 0; l < L; l++) {
    if (l < L - 1) {
      th_cmp cp = compare_any(th_level_P(s1, l), th_level_P(s2, l));
      ep = fmax(ep, cp.struct_diff ? 1.0 : cp.relerr);
    }
    if (l > 0) {
      th_cmp ca = compare_any(th_level_A(s1, l), th_level_A(s2, l));
      ea = fmax(ea, ca.struct_diff ? 1.0 : ca.relerr);
    }
    if (hypre_ParAMGDataL1Norms(a1) || hypre_ParAMGDataL1Norms(a2))
    {
      double e1 = (hypre_ParAMGDataL1Norms(a1) && hypre_ParAMGDataL1Norms(a2))
                        ? vector_relerr(hypre_ParAMGDataL1Norms(a1)[l], hypre_ParAMGDataL1Norms(a2)[l]) : 1.0;
      el1 = fmax(el1, e1);
    }
    if (hypre_ParAMGDataChebyCoefs(a1) || hypre_ParAMGDataChebyCoefs(a2)) {
      if (!hypre_ParAMGDataChebyCoefs(a1) || !hypre_ParAMGDataChebyCoefs(a2)) ecc = 1.0;
      else {
        ecc = fmax(ecc, vec_relerr(hypre_ParAMGDataChebyCoefs(a1)[l], hypre_ParAMGDataChebyCoefs(a2)[l],
                                   hypre_ParAMGDataChebyOrder(a1) + 1));
        ecd = fmax(ecd, vector_relerr(hypre_ParAMGDataChebyDS(a1)[l], hypre_ParAMGDataChebyDS(a2)[l]));
      }
    }
    ew = fmax(ew, fabs(hypre_ParAMGDataRelaxWeight(a1)[l] - hypre_ParAMGDataRelaxWeight(a2)[l]) /
                    fabs(hypre_ParAMGDataRelaxWeight(a2)[l]));
  }
  /* equal to the last bit where the coarse operators are summed in a fixed
   * order (hypre's host RAP, the CPU engine); the CUDA engine's may differ
   * in the last bit from run to run */
  OK(ep <= 1e-14, "%s: interpolation kept equals the fresh one (max rel. diff %.1e)", c->name, ep);
  OK(ea <= 1e-13, "%s: coarse operators equal the fresh setup's (max rel. diff %.1e)", c->name, ea);
  OK(el1 <= 1e-13, "%s: l1 norms equal the fresh setup's (max rel. diff %.1e)", c->name, el1);
  /* on the device hypre's eigenvalue estimate starts from random numbers
   * that continue their sequence from setup to setup: two estimates agree
   * to a few per cent only */
#if defined(HYPRE_USING_CUDA)
  const double cheb_tol = g_device_mode ? 0.05 : 1e-10;
#else
  const double cheb_tol = 1e-10;
#endif
  OK(ecc <= cheb_tol && ecd <= 1e-12, "%s: Chebyshev coefficients / scaling equal (%.1e / %.1e)", c->name, ecc, ecd);
  OK(ew <= 1e-13, "%s: relaxation weights equal (max rel. diff %.1e)", c->name, ew);
  {
    /* the coarsest level's dense system (ranks with rows hold it) */
#ifdef hypre_ParAMGDataGEMemoryLocation
    const HYPRE_MemoryLocation g1 = hypre_ParAMGDataGEMemoryLocation(a1), g2 = hypre_ParAMGDataGEMemoryLocation(a2);
#else
    const HYPRE_MemoryLocation g1 = HYPRE_MEMORY_HOST, g2 = HYPRE_MEMORY_HOST;
#endif
    const long nc = (long)hypre_ParCSRMatrixGlobalNumRows(th_level_A(s1, L - 1));
    const int have = (hypre_ParAMGDataAMat(a1) != NULL) == (hypre_ParAMGDataAMat(a2) != NULL);
    OK(have, "%s: Gaussian elimination data present alike", c->name);
    double *m1 = have ? host_values(hypre_ParAMGDataAMat(a1), nc * nc, g1) : NULL;
    double *m2 = have ? host_values(hypre_ParAMGDataAMat(a2), nc * nc, g2) : NULL;
    double eg = vec_relerr(m1, m2, m1 && m2 ? nc * nc : 0);
    free(m1);
    free(m2);
    OK(eg <= 1e-13, "%s: coarsest dense system equals the fresh one (%.1e)", c->name, eg);
  }
  {
    const int it1 = solve(s1, &pb);
    hypre_ParVector *x1 = hypre_ParVectorCloneDeep_v2((hypre_ParVector *)pb.x, hypre_ParVectorMemoryLocation((hypre_ParVector *)pb.x));
    const int it2 = solve(s2, &pb);
    hypre_ParVectorAxpy(-1.0, (hypre_ParVector *)pb.x, x1);
    const double dx = hypre_ParVectorInnerProd(x1, x1), xx = hypre_ParVectorInnerProd(pb.x, pb.x);
    OK(it1 == it2 && sqrt(dx / xx) <= 1e-9, "%s: iterations %d (fresh %d), solutions differ by %.1e", c->name, it1,
       it2, sqrt(dx / xx));
    hypre_ParVectorDestroy(x1);
  }
out:
  HYPRE_BoomerAMGDestroy(s1);
  HYPRE_BoomerAMGDestroy(s2);
  th_problem_destroy(&pb);
}

/* A += c diag(A) (a time step's mass term changing). */
static void shift_diag_host(hypre_ParCSRMatrix *A, double c, double unused)
{
  (void)unused;
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(A);
  for (HYPRE_Int i = 0; i < hypre_CSRMatrixNumRows(d); i++)
    for (HYPRE_Int k = hypre_CSRMatrixI(d)[i]; k < hypre_CSRMatrixI(d)[i + 1]; k++)
      if (hypre_CSRMatrixJ(d)[k] == i) hypre_CSRMatrixData(d)[k] *= 1.0 + c;
}

/* Values changed unevenly: each level against hypre's own RAP of the kept
 * P; iterations against a fresh setup on the same matrix. */
static void check_against_rap(const cfg *c, int dim, int n, int flags)
{
  th_problem pb;
  make_problem(dim, n, flags, &pb);
  HYPRE_Solver s = make_solver(c);
  TileRAP_HypreSetReuse(s, -1);
  TileRAP_HypreResetStats();
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)pb.A, pb.b, pb.x);
  for (int step = 1; step <= 2; step++) {
    /* step 1: D A D with D varying from row to row by up to 10 %;
     * step 2: the diagonal 30 % heavier */
    if (step == 1) modify(pb.A, scale_sym_host, 0.1, 1.0);
    else modify(pb.A, shift_diag_host, 0.3, 0.0);
    HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)pb.A, pb.b, pb.x);
    const int L = th_num_levels(s);
    double e = 0;
    long sd = 0;
    for (int l = 0; l + 1 < L; l++) {
      hypre_ParCSRMatrix *P = th_level_P(s, l), *C = NULL;
      /* hypre's own product: its device RAP on device memory, else the
       * host path BoomerAMG takes */
      if (on_dev(P)) C = TileRAP_HypreOriginalRAPKT(P, th_level_A(s, l), P, 0, 1);
      else TileRAP_HypreOriginalBuildCoarseOperatorKT(P, th_level_A(s, l), P, 0, &C);
      th_cmp cc = compare_any(th_level_A(s, l + 1), C);
      e = fmax(e, cc.relerr);
      sd += cc.struct_diff;
      hypre_ParCSRMatrixDestroy(C);
    }
    const int it = solve(s, &pb);
    HYPRE_Solver f = make_solver(c);
    HYPRE_BoomerAMGSetup(f, (HYPRE_ParCSRMatrix)pb.A, pb.b, pb.x);
    const int itf = solve(f, &pb);
    HYPRE_BoomerAMGDestroy(f);
    OK(setups_reused() == step && sd == 0 && e <= 1e-13,
       "%s step %d: %d coarse operators equal hypre's RAP of the kept P (max rel. diff %.1e); "
       "%d iterations (fresh setup: %d)", c->name, step, L - 1, e, it, itf);
    if (step == 2) OK(it <= itf + 2, "%s step %d: iterations within 2 of a fresh setup's", c->name, step);
  }
  HYPRE_BoomerAMGDestroy(s);
  th_problem_destroy(&pb);
}

static void set_schwarz(HYPRE_Solver s)
{
  HYPRE_BoomerAMGSetSmoothType(s, 6);
  HYPRE_BoomerAMGSetSmoothNumLevels(s, 1);
}

static void set_cg_weights(HYPRE_Solver s) { HYPRE_BoomerAMGSetRelaxWt(s, -10.0); }

/* Two setups with a setting whose setup data a re-setup does not refresh:
 * both full ones, the second counted as such (want: the count since the
 * last reset). */
static void check_settings_not_kept(const cfg *c, th_problem *pb, void (*set)(HYPRE_Solver), const char *what,
                                    long want)
{
  HYPRE_Solver s = make_solver(c);
  set(s);
  TileRAP_HypreSetReuse(s, -1);
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  OK(setups_reused() == 0 && setups_full(TILERAP_HYPRE_SETUP_OPTIONS) == want,
     "%s: every setup a full one (reason: settings)", what);
  HYPRE_BoomerAMGDestroy(s);
}

static void set_cg_smoother(HYPRE_Solver s) { HYPRE_BoomerAMGSetRelaxType(s, 15); }
static void set_two_levels(HYPRE_Solver s) { HYPRE_BoomerAMGSetMaxLevels(s, 2); }

/* A setting changed between two setups of the same pattern: the second a
 * full one (reason: settings), its hierarchy and iterations those of a
 * fresh setup with the new setting.  A re-setup from the kept hierarchy
 * left a CG smoother's setup data unmade (the solve crashed) and kept the
 * old levels under a lower MaxLevels (a fuzzing pass). */
static void check_setting_changed(const cfg *c, th_problem *pb, void (*set)(HYPRE_Solver), const char *what)
{
  HYPRE_Solver s = make_solver(c), f = make_solver(c);
  TileRAP_HypreSetReuse(s, -1);
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  solve(s, pb);
  TileRAP_HypreResetStats();
  set(s);
  set(f);
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  OK(setups_reused() == 0 && setups_full(TILERAP_HYPRE_SETUP_OPTIONS) == 1,
     "%s set between two setups: the second a full one (reason: settings)", what);
  HYPRE_BoomerAMGSetup(f, (HYPRE_ParCSRMatrix)pb->A, pb->b, pb->x);
  const int L = th_num_levels(s);
  OK(L == th_num_levels(f), "%s: levels of a fresh setup (%d, fresh %d)", what, L, th_num_levels(f));
  const int its = solve(s, pb), itf = solve(f, pb);
  OK(its == itf, "%s: iterations of a fresh setup (%d, fresh %d)", what, its, itf);
  HYPRE_BoomerAMGDestroy(s);
  HYPRE_BoomerAMGDestroy(f);
}

static void check_full_setups(void)
{
  const cfg c = {"default", -1, -1, 0, 1.0, 0};
  th_problem p1, p2, p3;
  th_poisson_ex(g_comm, 2, 24, 0, &p1);
  th_poisson_ex(g_comm, 2, 24, TH_PERMUTE, &p2); /* same sizes and counts, other pattern */
  th_poisson_ex(g_comm, 2, 25, 0, &p3);
  HYPRE_Solver s = make_solver(&c);
  TileRAP_HypreSetReuse(s, 2);
  TileRAP_HypreResetStats();
  for (int k = 0; k < 5; k++) HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p1.A, p1.b, p1.x);
  OK(setups_reused() == 3 && setups_full(TILERAP_HYPRE_SETUP_NEW) == 1 && setups_full(TILERAP_HYPRE_SETUP_PERIOD) == 1,
     "period 2: 5 setups are full, re-setup, re-setup, full (period), re-setup");
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p2.A, p2.b, p2.x);
  OK(setups_full(TILERAP_HYPRE_SETUP_PATTERN) == 1, "same sizes and counts, other pattern: full setup (pattern)");
  {
    HYPRE_Solver f = make_solver(&c);
    HYPRE_BoomerAMGSetup(f, (HYPRE_ParCSRMatrix)p2.A, p2.b, p2.x);
    const int L = th_num_levels(s);
    int same = L == th_num_levels(f);
    for (int l = 1; same && l < L; l++) same = th_cmp_ok(th_compare_entries(th_level_A(s, l), th_level_A(f, l)), 1e-13);
    OK(same, "after the pattern change the hierarchy is a fresh one (%d levels)", L);
    OK(solve(s, &p2) == solve(f, &p2), "after the pattern change: iterations of a fresh setup");
    HYPRE_BoomerAMGDestroy(f);
  }
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p3.A, p3.b, p3.x);
  OK(setups_full(TILERAP_HYPRE_SETUP_PATTERN) == 2, "another size: full setup (pattern)");
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p3.A, p3.b, p3.x);
  OK(setups_reused() == 4, "then re-setups again");
  {
    /* a new matrix object of the same pattern, the old one destroyed (as
     * PETSc's PCHYPRE does when its matrix changed): re-set-up, and right */
    th_problem p4;
    th_poisson_ex(g_comm, 2, 25, 0, &p4);
    th_problem_destroy(&p3);
    modify(p4.A, scale_all_host, 3.0, 0.0);
    HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p4.A, p4.b, p4.x);
    hypre_ParCSRMatrix *C = NULL;
    TileRAP_HypreOriginalBuildCoarseOperatorKT(th_level_P(s, 0), p4.A, th_level_P(s, 0), 0, &C);
    th_cmp cc = compare_any(th_level_A(s, 1), C);
    hypre_ParCSRMatrixDestroy(C);
    OK(setups_reused() == 5 && cc.struct_diff == 0 && cc.relerr <= 1e-13,
       "a new matrix object with the kept pattern (the old one destroyed): re-set-up, level 1 is P^T (3A) P (%.1e)",
       cc.relerr);
    p3 = p4;
  }
  OK(TileRAP_HypreSetReuse(s, 0) == TILERAP_SUCCESS, "reuse switched off");
  HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p3.A, p3.b, p3.x);
  OK(setups_reused() == 5, "off: hypre's setup, nothing counted");
  HYPRE_BoomerAMGDestroy(s);

  /* settings whose setup data a re-setup does not refresh */
  TileRAP_HypreResetStats();
  check_settings_not_kept(&c, &p1, set_schwarz, "Schwarz smoother", 1);
  check_settings_not_kept(&c, &p1, set_cg_weights, "CG-estimated relaxation weights", 2);
  check_setting_changed(&c, &p1, set_cg_smoother, "relax type 15 (CG)");
  check_setting_changed(&c, &p1, set_schwarz, "Schwarz smoother");
  check_setting_changed(&c, &p1, set_two_levels, "MaxLevels 2");

  /* the environment's setting, and a destroyed solver's state forgotten */
  TileRAP_HypreResetStats();
  OK(tilerap_tuning_set("TILERAP_HYPRE_REUSE", "-1") == TILERAP_SUCCESS, "TILERAP_HYPRE_REUSE=-1 set");
  for (int k = 0; k < 3; k++) {
    s = make_solver(&c);
    HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p1.A, p1.b, p1.x);
    HYPRE_BoomerAMGSetup(s, (HYPRE_ParCSRMatrix)p1.A, p1.b, p1.x);
    HYPRE_BoomerAMGDestroy(s);
  }
  OK(setups_reused() == 3 && setups_full(TILERAP_HYPRE_SETUP_NEW) == 3,
     "environment: solvers without a call re-set-up; a new solver never takes a destroyed one's hierarchy");
  tilerap_tuning_set("TILERAP_HYPRE_REUSE", NULL);
  OK(tilerap_tuning_set("TILERAP_HYPRE_REUSE", "-2") != TILERAP_SUCCESS, "TILERAP_HYPRE_REUSE=-2 refused");
  OK(TileRAP_HypreSetReuse(NULL, 1) == TILERAP_ERR_INVALID, "TileRAP_HypreSetReuse(NULL) refused");
  s = make_solver(&c);
  OK(TileRAP_HypreSetReuse(s, -3) == TILERAP_ERR_INVALID, "TileRAP_HypreSetReuse(s, -3) refused");
  HYPRE_BoomerAMGDestroy(s);
  th_problem_destroy(&p1);
  th_problem_destroy(&p2);
  th_problem_destroy(&p3);
}

int main(int argc, char **argv)
{
  th_tap_init(&argc, &argv);
  /* the CUDA runtime up before hypre's (as test/hypre_device does) */
  const int gpus = tilerap_device_count();
  (void)gpus;
#if defined(HYPRE_USING_CUDA)
  /* one GPU per rank, bound before HYPRE_Init as hypre's drivers bind it:
   * the same GPU the hook's host-matrix products take (node-local rank mod
   * devices), so the host and device parts below share it */
  int dev0 = -1, dev1 = -2;
  if (gpus > 0) {
    hypre_bind_device(g_rank, g_np, g_comm);
    tilerap_get_device(&dev0);
  }
#endif
  HYPRE_Init();
#if defined(HYPRE_USING_GPU) || defined(HYPRE_USING_CUDA)
  /* the host part first: host memory, as with a CPU hypre */
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_HOST);
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_HOST);
#endif
  const cfg cfgs[] = {
    {"defaults (l1 Gauss-Seidel, Gaussian elimination)", -1, -1, 0, 1.0, 0},
    {"l1-Jacobi, CF order, modular RAP", 18, 99, 1, 1.0, 1},
    {"Chebyshev", 16, -1, 0, 1.0, 0},
    {"Jacobi, weight from the matrix norm", 0, 9, 0, 0.0, 0},
    {"hybrid Gauss-Seidel, LU with pivoting", 6, 199, 0, 1.0, 0},
  };
  for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) check_against_fresh(&cfgs[k], 3, 14, 0);
  check_against_fresh(&cfgs[0], 2, 37, TH_PERMUTE | TH_DENSE_ROW);
  check_against_rap(&cfgs[0], 3, 13, 0);
  check_against_rap(&cfgs[1], 2, 41, TH_PERMUTE);
  check_full_setups();
#if defined(HYPRE_USING_CUDA)
  /* device memory (a CUDA hypre and a GPU): hypre's GPU defaults and
   * Chebyshev, l1-Jacobi, on any number of ranks */
  if (gpus > 0) {
    HYPRE_SetMemoryLocation(HYPRE_MEMORY_DEVICE);
    HYPRE_SetExecutionPolicy(HYPRE_EXEC_DEVICE);
    HYPRE_SetUseGpuRand(0); /* PMIS alike in the two setups compared */
    HYPRE_SetSpGemmUseVendor(0); /* hypre's own device SpGEMM as the reference */
    g_device_mode = 1;
    const cfg dcfg[] = {
      {"device: GPU defaults", -1, -1, 0, 1.0, 1},
      {"device: Chebyshev", 16, -1, 0, 1.0, 1},
      /* (a weight of 0, from the matrix norm, crashes hypre 3.1's own device setup) */
      {"device: l1-Jacobi, CF order", 7, -1, 1, 1.0, 1},
    };
    for (size_t k = 0; k < sizeof dcfg / sizeof dcfg[0]; k++) check_against_fresh(&dcfg[k], 3, 14, 0);
    check_against_fresh(&dcfg[0], 2, 37, TH_PERMUTE | TH_DENSE_ROW);
    check_against_rap(&dcfg[0], 3, 13, 0);
    tilerap_get_device(&dev1);
    OK(dev1 == dev0, "device: the hook left hypre's GPU current (device %d, %d at the start)", dev1, dev0);
  }
#endif
  HYPRE_Finalize();
  return th_tap_finish();
}
