/* TAP test of the hypre hook on device memory: a CUDA build of hypre
 * (>= 3.0) running BoomerAMG on the GPU, on any number of ranks.
 *
 * For structured and irregular problems (2D/3D Laplacians in grid order,
 * in a random order, and with a dense row), with keep-transpose on and off:
 *   - every coarse operator is computed by tilerap on device memory: on one
 *     rank hypre_ParCSRMatrixRAPKT itself, on several the local triple
 *     product inside hypre's own RAPKT; nothing forwarded otherwise;
 *   - each level equals hypre's own device product of the same A_l and
 *     P_l (hook disabled for the reference) to 1e-14, with identical
 *     structure, the diagonal first and hypre's col_map_offd invariants;
 *   - C's arrays are device memory, the kept transpose is on P as hypre's;
 *   - hook off: the same number of levels, the same operator complexity,
 *     the same iteration count, every level's entries alike (or iterations
 *     within hypre's own cuSPARSE-vs-native difference);
 *   - unnamed engine: hypre's own device RAP, bit for bit; the CPU engine
 *     named: forwarded with the reason;
 *   - products BoomerAMG does not make: R other than P, and an empty coarse
 *     column (C gets an empty row, left empty as hypre leaves it).
 * Without a CUDA hypre or without a GPU the whole test is skipped. */
#include "hypre_test_util.h"
#include "tilerap.h"
#include "tilerap_device.h"

#include <stdio.h>
#include <stdlib.h>

#if !defined(HYPRE_USING_CUDA)
int main(void)
{
  printf("1..0 # SKIP hypre built without CUDA: the device path is not in this build\n");
  return 0;
}
#else

#include "hypre_tap.h"

static int csr_on_device(hypre_CSRMatrix *M)
{
  hypre_MemoryLocation loc = hypre_GetActualMemLocation(hypre_CSRMatrixMemoryLocation(M));
  return loc == hypre_MEMORY_DEVICE;
}

/* A host copy for the comparisons (the caller destroys it). */
static hypre_ParCSRMatrix *to_host(hypre_ParCSRMatrix *M)
{
  return hypre_ParCSRMatrixClone_v2(M, 1, HYPRE_MEMORY_HOST);
}

static th_cmp compare_device(hypre_ParCSRMatrix *X, hypre_ParCSRMatrix *Y, int invariants)
{
  hypre_ParCSRMatrix *hx = to_host(X), *hy = to_host(Y);
  th_cmp c = th_compare_ex(hx, hy, invariants);
  hypre_ParCSRMatrixDestroy(hx);
  hypre_ParCSRMatrixDestroy(hy);
  return c;
}

/* The problem built on the host, then moved to the device as a GPU user's. */
static void device_problem(int dim, HYPRE_BigInt n, int flags, th_problem *pb)
{
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_HOST);
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_HOST);
  th_poisson_ex(g_comm, dim, n, flags, pb);
  th_problem_to_device(pb);
}

/* BoomerAMG with the GPU defaults of hypre (PMIS, ext+i, modular RAP, the
 * only coarse-operator path of a device setup); keep-transpose as asked. */
static HYPRE_Solver amg_run(th_problem *pb, int keepT, int *iters, double *setup_s)
{
  th_amg_opts o = {1, keepT};
  return th_amg_run(pb, o, iters, setup_s);
}

/* Sum of the levels' global entries over the first one's. */
static double operator_complexity(HYPRE_Solver s)
{
  double total = 0, first = 0;
  for (int l = 0; l < th_num_levels(s); l++) {
    hypre_ParCSRMatrix *A = th_level_A(s, l);
    hypre_ParCSRMatrixSetNumNonzeros(A);
    double nz = (double)hypre_ParCSRMatrixNumNonzeros(A);
    if (l == 0) first = nz;
    total += nz;
  }
  return first > 0 ? total / first : 0;
}

static void run_case(const char *name, int dim, HYPRE_BigInt n, int flags, int keepT)
{
  char tag[128];
  snprintf(tag, sizeof tag, "%s keepT=%d", name, keepT);
  th_problem pb;
  device_problem(dim, n, flags, &pb);
  TileRAP_HypreStats st;

  /* ---- hook on (the modular path: a device setup's only one) */
  int it_on = 0, it_off = 0, L = 0;
  double t_on = 0, t_off = 0;
  const th_amg_opts o = {1, keepT};
  HYPRE_Solver s_on = th_hook_on_run(&pb, o, tag, &st, &it_on, &t_on, &L);
  if (g_np == 1)
    OK(st.computed[TILERAP_HYPRE_EP_RAPKT] == L - 1 && TileRAP_HypreForwarded() == 0,
       "%s: all %d coarse operators computed on device memory by RAPKT (computed %ld, forwarded %ld)", tag, L - 1,
       st.computed[TILERAP_HYPRE_EP_RAPKT], TileRAP_HypreForwarded());
  else
    OK(st.computed[TILERAP_HYPRE_EP_TRIPLE_DEVICE] == L - 1 && st.forwarded[TILERAP_HYPRE_EP_TRIPLE_DEVICE] == 0 &&
           st.forwarded[TILERAP_HYPRE_EP_RAPKT] == L - 1 && st.reason[TILERAP_HYPRE_FWD_DELEGATED] == L - 1 &&
           st.computed[TILERAP_HYPRE_EP_RAPKT] == 0,
       "%s: all %d local triple products of hypre's RAPKT computed on device memory (computed %ld, forwarded %ld)",
       tag, L - 1, st.computed[TILERAP_HYPRE_EP_TRIPLE_DEVICE], st.forwarded[TILERAP_HYPRE_EP_TRIPLE_DEVICE]);

  int all_ok = 1, dev_ok = 1, kt_ok = 1;
  double worst = 0;
  for (int l = 0; l + 1 < L; l++) {
    hypre_ParCSRMatrix *A = th_level_A(s_on, l), *P = th_level_P(s_on, l), *C = th_level_A(s_on, l + 1);
    dev_ok &= csr_on_device(hypre_ParCSRMatrixDiag(C)) && csr_on_device(hypre_ParCSRMatrixOffd(C));
    if (keepT) kt_ok &= hypre_ParCSRMatrixDiagT(P) != NULL && csr_on_device(hypre_ParCSRMatrixDiagT(P)) &&
                        hypre_CSRMatrixNumRows(hypre_ParCSRMatrixDiagT(P)) == hypre_CSRMatrixNumCols(hypre_ParCSRMatrixDiag(P));
    /* hypre's own device product of the same operands */
    TileRAP_HypreDisable();
    hypre_ParCSRMatrix *ref = TileRAP_HypreOriginalRAPKT(P, A, P, 0, 1);
    TileRAP_HypreEnable(1);
    th_cmp c = compare_device(C, ref, 1);
    hypre_ParCSRMatrixDestroy(ref);
    if (!th_cmp_ok(c, 1e-14)) {
      all_ok = 0;
      DIAG("%s level %d: relerr %.3e, rows with other structure %ld, invariant violations %ld", tag, l + 1, c.relerr,
           c.struct_diff, c.invariant_bad);
    }
    if (c.relerr > worst) worst = c.relerr;
  }
  OK(all_ok, "%s: every level equals hypre's own device product to 1e-14 (max relerr %.2e), diagonal first", tag,
     worst);
  OK(dev_ok, "%s: every coarse operator's blocks are in device memory", tag);
  if (keepT) OK(kt_ok, "%s: P^T kept on every P (device) as hypre keeps it", tag);

  /* ---- hook off: hypre alone, same hierarchy */
  TileRAP_HypreDisable();
  HYPRE_Solver s_off = amg_run(&pb, keepT, &it_off, &t_off);
  TileRAP_HypreEnable(1);
  const int L_off = th_num_levels(s_off);
  const double oc_on = operator_complexity(s_on), oc_off = operator_complexity(s_off);
  int first_diff = 0;
  double worst_h = 0;
  for (int l = 1; l < (L < L_off ? L : L_off); l++) {
    th_cmp c = compare_device(th_level_A(s_on, l), th_level_A(s_off, l), 0);
    if (c.relerr > worst_h) worst_h = c.relerr;
    if (!first_diff && !th_cmp_ok(c, 1e-12)) first_diff = l;
  }
  /* hypre's other SpGEMM (cuSPARSE) as a control: rows in another order,
   * sums in another order, like tilerap's */
  int it_cus = 0;
  HYPRE_SetSpGemmUseVendor(1);
  TileRAP_HypreDisable();
  HYPRE_Solver s_cus = amg_run(&pb, keepT, &it_cus, NULL);
  TileRAP_HypreEnable(1);
  HYPRE_SetSpGemmUseVendor(0);
  const int L_cus = th_num_levels(s_cus);
  const double oc_cus = operator_complexity(s_cus);
  HYPRE_BoomerAMGDestroy(s_cus);
  const int same = L == L_off && oc_on == oc_off && it_on == it_off && !first_diff;
  OK(same || (L == L_off && abs(it_on - it_off) <= 1 + abs(it_cus - it_off)),
     "%s: hook off: levels %d/%d, operator complexity %.6f/%.6f, iterations %d/%d (hypre with cuSPARSE: %d levels, "
     "%.6f, %d iterations), first differing level %d (max relerr %.2e)",
     tag, L, L_off, oc_on, oc_off, it_on, it_off, L_cus, oc_cus, it_cus, first_diff, worst_h);
  DIAG("%s: setup %.4f s with tilerap, %.4f s hypre alone", tag, t_on, t_off);

  HYPRE_BoomerAMGDestroy(s_on);
  HYPRE_BoomerAMGDestroy(s_off);
  th_problem_destroy(&pb);
}

/* Unnamed engine with a GPU: device products are tilerap's (on one rank
 * RAPKT, on several the triple product inside hypre's), none forwarded,
 * and the hierarchy is hypre's up to summation order: the same levels,
 * every coarse operator within 1e-12 of hypre's alone, iterations within
 * one. */
static void check_default(void)
{
  th_problem pb;
  device_problem(2, 40, 0, &pb);
  int it = 0, it_off = 0;
  TileRAP_HypreSetEngine("auto");
  TileRAP_HypreResetStats();
  HYPRE_Solver s = amg_run(&pb, 1, &it, NULL);
  TileRAP_HypreStats st;
  TileRAP_HypreGetStats(&st);
  const int L = th_num_levels(s);
  const long computed = g_np == 1 ? st.computed[TILERAP_HYPRE_EP_RAPKT] : st.computed[TILERAP_HYPRE_EP_TRIPLE_DEVICE];
  OK(L >= 3 && computed == L - 1 && st.reason[TILERAP_HYPRE_FWD_DEVICE_NATIVE] == 0 &&
         st.forwarded[TILERAP_HYPRE_EP_TRIPLE_DEVICE] == 0,
     "TILERAP_ENGINE unset: all %d device coarse operators computed by tilerap (%ld)", L - 1, computed);
  TileRAP_HypreDisable();
  HYPRE_Solver s_off = amg_run(&pb, 1, &it_off, NULL);
  TileRAP_HypreEnable(1);
  double worst = 0;
  for (int l = 1; l < L && l < th_num_levels(s_off); l++) {
    const th_cmp c = compare_device(th_level_A(s, l), th_level_A(s_off, l), 0);
    if (c.relerr > worst) worst = c.relerr;
  }
  OK(th_num_levels(s_off) == L && abs(it - it_off) <= 1 && worst <= 1e-12,
     "TILERAP_ENGINE unset: hypre's hierarchy (levels %d/%d, iterations %d/%d, largest relative difference %.1e)", L,
     th_num_levels(s_off), it, it_off, worst);
  HYPRE_BoomerAMGDestroy(s);
  HYPRE_BoomerAMGDestroy(s_off);
  th_problem_destroy(&pb);
}

/* An n x nc prolongator on the device: fine row i interpolates from coarse
 * point i % (nc - 1), so the last coarse column is empty and C = R^T A P has
 * an empty row, whose diagonal hypre adds as an explicit zero; vary gives R
 * another set of values on the same structure. */
static HYPRE_IJMatrix device_prolongator(HYPRE_BigInt n, HYPRE_BigInt nc, int vary, hypre_ParCSRMatrix **P)
{
  HYPRE_BigInt lo = n * g_rank / g_np, hi = n * (g_rank + 1) / g_np - 1;
  HYPRE_BigInt clo = nc * g_rank / g_np, chi = nc * (g_rank + 1) / g_np - 1;
  HYPRE_IJMatrix ij;
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_HOST);
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_HOST);
  HYPRE_IJMatrixCreate(g_comm, lo, hi, clo, chi, &ij);
  HYPRE_IJMatrixSetObjectType(ij, HYPRE_PARCSR);
  HYPRE_IJMatrixInitialize(ij);
  for (HYPRE_BigInt i = lo; i <= hi; i++) {
    HYPRE_Int one = 1;
    HYPRE_BigInt c = i % (nc - 1);
    HYPRE_Complex v = 1.0 + 0.01 * (double)(i % 7) + (vary ? 0.3 * (double)(i % 3) : 0.0);
    HYPRE_IJMatrixSetValues(ij, 1, &one, &i, &c, &v);
  }
  HYPRE_IJMatrixAssemble(ij);
  HYPRE_SetMemoryLocation(HYPRE_MEMORY_DEVICE);
  HYPRE_SetExecutionPolicy(HYPRE_EXEC_DEVICE);
  HYPRE_IJMatrixMigrate(ij, HYPRE_MEMORY_DEVICE);
  void *obj;
  HYPRE_IJMatrixGetObject(ij, &obj);
  *P = (hypre_ParCSRMatrix *)obj;
  return ij;
}

/* Rows of a square device matrix whose first diag entry is not the
 * diagonal, and empty rows (host copy). */
static void diag_first_rows(hypre_ParCSRMatrix *M, long *not_first, long *empty)
{
  hypre_ParCSRMatrix *h = hypre_ParCSRMatrixClone_v2(M, 1, HYPRE_MEMORY_HOST);
  hypre_CSRMatrix *d = hypre_ParCSRMatrixDiag(h);
  long nf = 0, em = 0;
  for (HYPRE_Int i = 0; i < hypre_CSRMatrixNumRows(d); i++) {
    const HYPRE_Int b = hypre_CSRMatrixI(d)[i], e = hypre_CSRMatrixI(d)[i + 1];
    if (b == e) em++;
    else if (hypre_CSRMatrixJ(d)[b] != i) nf++;
  }
  hypre_ParCSRMatrixDestroy(h);
  MPI_Allreduce(&nf, not_first, 1, MPI_LONG, MPI_SUM, g_comm);
  MPI_Allreduce(&em, empty, 1, MPI_LONG, MPI_SUM, g_comm);
}

/* Products BoomerAMG does not make: R other than P, and a C row with no
 * entries (hypre leaves it empty, no explicit diagonal); each against
 * hypre's own. */
static void check_other_products(void)
{
  th_problem pb;
  device_problem(2, 30, TH_PERMUTE, &pb);
  hypre_ParCSRMatrix *P = NULL, *R = NULL;
  HYPRE_IJMatrix ijP = device_prolongator(900, 60, 0, &P), ijR = device_prolongator(900, 60, 1, &R);
  /* hypre's RAPKT takes the operands' communication packages as given */
  hypre_ParCSRMatrix *ops[3] = {pb.A, P, R};
  for (int k = 0; k < 3; k++)
    if (!hypre_ParCSRMatrixCommPkg(ops[k])) hypre_MatvecCommPkgCreate(ops[k]);
  struct { const char *what; hypre_ParCSRMatrix *R; } cases[] = {{"P^T A P", P}, {"R^T A P, R other than P", R}};
  for (int k = 0; k < 2; k++) {
    TileRAP_HypreResetStats();
    hypre_ParCSRMatrix *C = hypre_ParCSRMatrixRAPKT(cases[k].R, pb.A, P, 0, 1);
    const long computed = TileRAP_HypreComputed();
    TileRAP_HypreDisable();
    hypre_ParCSRMatrix *ref = TileRAP_HypreOriginalRAPKT(cases[k].R, pb.A, P, 0, 1);
    TileRAP_HypreEnable(1);
    th_cmp c = compare_device(C, ref, 0);
    long nf = 0, em = 0, nf_ref = 0, em_ref = 0;
    diag_first_rows(C, &nf, &em);
    diag_first_rows(ref, &nf_ref, &em_ref);
    OK(computed == 1 && th_cmp_ok(c, 1e-14) && nf == 0 && em == em_ref && em >= 1,
       "%s with an empty coarse column: computed by tilerap (%ld), equals hypre's (relerr %.2e, rows of other "
       "structure %ld), diagonal first in every row with entries (%ld not), %ld empty rows as hypre's %ld",
       cases[k].what, computed, c.relerr, c.struct_diff, nf, em, em_ref);
    hypre_ParCSRMatrixDestroy(C);
    hypre_ParCSRMatrixDestroy(ref);
  }
  HYPRE_IJMatrixDestroy(ijP);
  HYPRE_IJMatrixDestroy(ijR);
  th_problem_destroy(&pb);
}

/* A product the hook must refuse is forwarded, counted, and still right. */
static void check_refusals(void)
{
  th_problem pb;
  device_problem(2, 40, 0, &pb);
  int it = 0;
  TileRAP_HypreSetEngine("cpu"); /* the CPU engine cannot read device memory */
  TileRAP_HypreResetStats();
  HYPRE_Solver s = amg_run(&pb, 1, &it, NULL);
  TileRAP_HypreStats st;
  TileRAP_HypreGetStats(&st);
  const int L = th_num_levels(s);
  OK(TileRAP_HypreComputed() == 0 && st.reason[TILERAP_HYPRE_FWD_DEVICE] >= L - 1,
     "TILERAP_ENGINE=cpu on device matrices: all %d coarse operators forwarded (reason: device memory; computed %ld)",
     L - 1, TileRAP_HypreComputed());
  TileRAP_HypreSetEngine("cuda");
  HYPRE_BoomerAMGDestroy(s);

  /* TILERAP_DEVICE on device matrices: hypre's GPU (the current one) may be
   * named; another GPU refuses (the hook never moves hypre's device) */
  int cur = -1;
  tilerap_get_device(&cur);
  TileRAP_HypreSetDevice(cur);
  TileRAP_HypreResetStats();
  s = amg_run(&pb, 1, &it, NULL);
  OK(TileRAP_HypreComputed() == th_num_levels(s) - 1,
     "TILERAP_DEVICE=%d, hypre's device: every coarse operator computed (%ld)", cur, TileRAP_HypreComputed());
  HYPRE_BoomerAMGDestroy(s);
  if (tilerap_device_count() >= 2) {
    const int other = cur == 0 ? 1 : 0;
    TileRAP_HypreSetDevice(other);
    TileRAP_HypreResetStats();
    s = amg_run(&pb, 1, &it, NULL);
    TileRAP_HypreGetStats(&st);
    int now = -1;
    tilerap_get_device(&now);
    OK(TileRAP_HypreComputed() == 0 && st.reason[TILERAP_HYPRE_FWD_ENGINE] >= th_num_levels(s) - 1 && now == cur,
       "TILERAP_DEVICE=%d, hypre's matrices on device %d: every coarse operator forwarded (computed %ld), device %d "
       "still current", other, cur, TileRAP_HypreComputed(), now);
    HYPRE_BoomerAMGDestroy(s);
  }
  TileRAP_HypreSetDevice(-1);
  th_problem_destroy(&pb);
}

int main(int argc, char **argv)
{
  th_tap_init(&argc, &argv);
  if (tilerap_device_count() == 0) {
    if (g_rank == 0) printf("1..0 # SKIP no GPU visible: the device path needs one\n");
    MPI_Finalize();
    return 0;
  }
  int dev0 = -1, dev1 = -2;
  tilerap_get_device(&dev0); /* hypre's: these ranks share the current GPU, unbound */
  HYPRE_Init();
  /* PMIS's random numbers from hypre's seeded host generator: every setup
   * of a process the same (the device generator continues its sequence) */
#if HYPRE_RELEASE_NUMBER >= 22700
  HYPRE_SetUseGpuRand(0);
#endif
  /* hypre's own device SpGEMM as the reference, as its ij driver does */
#if HYPRE_RELEASE_NUMBER >= 22900
  HYPRE_SetSpGemmUseVendor(0);
#else
  HYPRE_SetSpGemmUseCusparse(0);
#endif

  static const struct {
    const char *name;
    int dim;
    HYPRE_BigInt n;
    int flags;
  } cases[] = {
    {"2D 5-point 96^2", 2, 96, 0},
    {"3D 7-point 24^3", 3, 24, 0},
    {"3D 7-point 24^3 random order", 3, 24, TH_PERMUTE},
    {"2D 5-point 80^2 random order, dense row", 2, 80, TH_PERMUTE | TH_DENSE_ROW},
    {"2D 5-point 33^2 (odd sizes)", 2, 33, 0},
  };
  check_default();
  TileRAP_HypreSetEngine("cuda"); /* the device path, named */
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
    for (int keepT = 1; keepT >= 0; keepT--) {
      if (keepT == 0 && k > 1) continue;
      run_case(cases[k].name, cases[k].dim, cases[k].n, cases[k].flags, keepT);
    }
  check_other_products();
  check_refusals();
  tilerap_get_device(&dev1);
  OK(dev1 == dev0, "the hook left hypre's GPU current (device %d, %d at the start)", dev1, dev0);

  HYPRE_Finalize();
  return th_tap_finish();
}
#endif
