/* galerkin-bench: Galerkin products P^T A P of smoothed-aggregation model
 * hierarchies with tilerap's plans (first time = plan + numeric, and
 * numeric re-runs), side by side with PETSc's own MatPtAP on SEQAIJ
 * (MAT_INITIAL_MATRIX and MAT_REUSE_MATRIX) on the same matrices, in the
 * same run.  Medians of -reps runs after one warm-up; every tilerap result
 * is checked against the plain CSR reference before its time counts.
 *
 *   galerkin-bench [-reps N] [-engine cpu|cuda|auto] [-cpu-kernel auto|tiles|recorded]
 *                  [-plan-values 0|1] [-csr] [-no-petsc] [-memory] [case ...]
 *   case = p2d5:N | p2d9:N | p3d7:N | p3d27:N   (default: p3d7:64 p3d7:101),
 *          or an irregular matrix of tilerap_model.h (mesh2d:N[:sfc], powerlaw:N, ...)
 *          with graph-aggregation prolongators (BENCH_PROLONGATOR=classical:
 *          PMIS + extended interpolation)
 *
 * Columns: tr_first = a fresh plan with its first values: one call with
 * plan_values = 1 (the default; -plan-values 0: plan, then numeric, the
 * way it was measured before plan_values existed); tr_num1 = that
 * plan's first re-run (where the CPU engine's AUTO kernel records the
 * products); tr_num = steady re-runs of one plan, interleaved with
 * PETSc's MAT_REUSE_MATRIX (petsc_re); x* = PETSc time / tilerap time.
 *
 * -csr: tilerap's CSR plans (tilerap_csr_plan_*, the CPU engine's route in
 * the PETSc types) on the CSR matrices instead of the tile plans: no
 * conversion (csr2tile 0), tr_first = the plan with its first values.
 *
 * -memory: instead of times, each level's peak memory above its inputs
 * (A and P in both forms) of a product as an AMG setup keeps it: the plan
 * with its first values and two numeric runs (the second records, where
 * the AUTO kernel records), against MatPtAP with MAT_INITIAL_MATRIX and two
 * MAT_REUSE_MATRIX.  The figure is the process's peak resident set
 * during the product above its resident set before (MB; Linux's
 * clear_refs restarts the peak mark before each side).
 */
#include "tilerap.h"
#include "tilerap_model.h"
#include "../test/ref_gustavson.h"
#include "bench_common.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef BENCH_WITH_PETSC
#include <petscmat.h>
#endif

#define MAXREPS 101

static tilerap_cpu_kernel g_cpu_kernel = TILERAP_CPU_KERNEL_AUTO; /* -cpu-kernel */
static int g_plan_values = 1;                                      /* -plan-values */
static int g_memory = 0;                                           /* -memory */
static int g_csr = 0;                                              /* -csr */

/* a field of /proc/self/status (VmRSS, VmHWM), KB */
static long status_kb(const char *field)
{
  char line[256];
  long kb = -1;
  const size_t len = strlen(field);
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, len) && line[len] == ':') { kb = atol(line + len + 1); break; }
  fclose(f);
  return kb;
}

/* peak resident set of work(ctx) above the resident set before it, MB:
 * freed heap memory goes back to the system first, then the kernel's peak
 * mark restarts at the current size (clear_refs 5); -1 where that is not
 * possible */
static double peak_mb(void (*work)(void *), void *ctx)
{
  malloc_trim(0);
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f || fputs("5", f) < 0) { if (f) fclose(f); return -1; }
  fclose(f);
  const long base = status_kb("VmRSS");
  work(ctx);
  const long peak = status_kb("VmHWM");
  return base < 0 || peak < 0 ? -1 : (double)(peak - base) / 1024.0;
}

typedef struct {
  const tilerap_tile_matrix *A, *P;
  const tilerap_csr *cA, *cP;
  const tilerap_options *opt;
  int64_t plan_bytes; /* -csr: what the plan holds (tilerap_csr_plan_memory) */
  int keeps_ap;
#ifdef BENCH_WITH_PETSC
  Mat pA, pP;
#endif
} mem_ctx;

static void mem_tilerap(void *p)
{
  mem_ctx *c = p;
  tilerap_ptap_plan plan = NULL;
  tilerap_tile_matrix *C = NULL;
  int err = tilerap_ptap_plan_create(c->A, c->P, c->opt, &plan, &C);
  for (int r = 0; r < 2 && !err; r++) err = tilerap_ptap_numeric(plan, c->A, c->P, C);
  if (err) fprintf(stderr, "tilerap: %s\n", tilerap_last_error());
  tilerap_ptap_plan_destroy(&plan);
  tilerap_tile_destroy(&C);
}

static void mem_csr(void *p)
{
  mem_ctx *c = p;
  tilerap_csr_plan plan = NULL;
  tilerap_csr *C = NULL;
  int err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, c->cA, c->cP, &plan, &C);
  for (int r = 0; r < 2 && !err; r++) err = tilerap_csr_plan_numeric(plan, c->cA, c->cP, C->val);
  if (!err) tilerap_csr_plan_memory(plan, &c->plan_bytes, &c->keeps_ap);
  if (err) fprintf(stderr, "tilerap: %s\n", tilerap_last_error());
  tilerap_csr_plan_destroy(&plan);
  tilerap_csr_destroy(&C);
}

/* CSR result against the reference */
static double csr_relerr(const tilerap_csr *C, const tilerap_csr *R)
{
  return ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
}

#ifdef BENCH_WITH_PETSC
static void mem_petsc(void *p)
{
  mem_ctx *c = p;
  Mat C = NULL;
  MatPtAP(c->pA, c->pP, MAT_INITIAL_MATRIX, 2.0, &C);
  for (int r = 0; r < 2; r++) MatPtAP(c->pA, c->pP, MAT_REUSE_MATRIX, 2.0, &C);
  MatDestroy(&C);
}
#endif

typedef struct {
  double conv, first, rerun1, numeric, petsc_first, petsc_reuse, relerr, petsc_relerr;
} level_times;

#ifdef BENCH_WITH_PETSC
/* SEQAIJ copy of a CSR (PETSc keeps its own arrays). */
static Mat petsc_from_csr(const tilerap_csr *A)
{
  Mat M;
  PetscInt *nnz = malloc(((size_t)A->m + 1) * sizeof *nnz);
  for (int32_t i = 0; i < A->m; i++) nnz[i] = (PetscInt)(A->rowptr[i + 1] - A->rowptr[i]);
  MatCreateSeqAIJ(PETSC_COMM_SELF, A->m, A->n, 0, nnz, &M);
  for (int32_t i = 0; i < A->m; i++) {
    PetscInt row = i, *cols = malloc(((size_t)nnz[i] + 1) * sizeof *cols);
    for (PetscInt k = 0; k < nnz[i]; k++) cols[k] = A->colidx[A->rowptr[i] + k];
    MatSetValues(M, 1, &row, nnz[i], cols, A->val + A->rowptr[i], INSERT_VALUES);
    free(cols);
  }
  MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY);
  MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY);
  free(nnz);
  return M;
}

/* ||C_petsc - R||_F / ||R||_F, entries matched by (row, column). */
static double petsc_relerr(Mat C, const tilerap_csr *R)
{
  double num = 0, den = 0;
  for (int32_t i = 0; i < R->m; i++) {
    PetscInt ncols;
    const PetscInt *cols;
    const PetscScalar *vals;
    MatGetRow(C, i, &ncols, &cols, &vals);
    int64_t p = R->rowptr[i];
    for (PetscInt k = 0; k < ncols; k++) {
      while (p < R->rowptr[i + 1] && R->colidx[p] < cols[k]) { den += R->val[p] * R->val[p]; num += R->val[p] * R->val[p]; p++; }
      double r = (p < R->rowptr[i + 1] && R->colidx[p] == cols[k]) ? R->val[p++] : 0.0;
      num += (vals[k] - r) * (vals[k] - r);
      den += r * r;
    }
    for (; p < R->rowptr[i + 1]; p++) { den += R->val[p] * R->val[p]; num += R->val[p] * R->val[p]; }
    MatRestoreRow(C, i, &ncols, &cols, &vals);
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}
#endif

static int run_case(const char *spec, int reps, tilerap_engine engine, int with_petsc)
{
  char name[32];
  int32_t n;
  const char *colon = strchr(spec, ':');
  if (!colon || colon - spec >= (long)sizeof name) { fprintf(stderr, "bad case '%s'\n", spec); return 1; }
  memcpy(name, spec, (size_t)(colon - spec));
  name[colon - spec] = 0;
  n = atoi(colon + 1);
  tilerap_stencil s;
  int irregular = 0;
  if (tilerap_stencil_parse(name, &s)) irregular = 1; /* tilerap_model_irregular's names */
  tilerap_options opt;
  tilerap_options_default(&opt);
  opt.engine = engine;
  opt.cpu_kernel = g_cpu_kernel;
  opt.plan_values = g_plan_values;

  double tb = bench_now();
  tilerap_csr *Al[5] = {0}, *Pl[4] = {0};
  int32_t dims[3], cd[3];
  int nd, L = 0;
  if (irregular ? tilerap_model_irregular(spec, 1, &Al[0]) : tilerap_model_poisson(s, n, &Al[0], dims, &nd)) {
    fprintf(stderr, "%s\n", tilerap_last_error());
    return 1;
  }
  for (; L < 4 && Al[L]->m >= 500; L++) {
    if (irregular) TR(bench_irregular_prolongator(Al[L], L, &Pl[L]));
    else tilerap_model_prolongator(Al[L], nd, dims, 2.0 / 3.0, &Pl[L], cd);
    Al[L + 1] = ref_ptap(Al[L], Pl[L]);
    memcpy(dims, cd, sizeof cd);
  }
  printf("# %s: %d levels (%s prolongators), hierarchy built on the CPU in %.1f s\n", spec, L,
         irregular ? bench_prolongator_name() : "grid SA", bench_now() - tb);

  level_times tot = {0};
  int bad = 0;
  for (int l = 0; l < L; l++) {
    level_times t = {0};
    double ts[MAXREPS];
    tilerap_tile_matrix *tA = NULL, *tP = NULL, *tC = NULL;
    /* CSR -> tile of this level's inputs (one-time cost in a tile-native hierarchy) */
    for (int r = 0; r <= reps && !g_csr; r++) {
      tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP);
      double t0 = bench_now();
      tilerap_tile_from_csr(Al[l]->m, Al[l]->n, Al[l]->rowptr, Al[l]->colidx, Al[l]->val, &tA);
      tilerap_tile_from_csr(Pl[l]->m, Pl[l]->n, Pl[l]->rowptr, Pl[l]->colidx, Pl[l]->val, &tP);
      if (r) ts[r - 1] = bench_now() - t0;
    }
    t.conv = g_csr ? 0.0 : bench_median(ts, reps);
    if (g_memory) {
      mem_ctx mc;
      memset(&mc, 0, sizeof mc);
      mc.A = tA; mc.P = tP; mc.cA = Al[l]; mc.cP = Pl[l]; mc.opt = &opt;
      double tl = peak_mb(g_csr ? mem_csr : mem_tilerap, &mc), pe = -1;
#ifdef BENCH_WITH_PETSC
      if (with_petsc) {
        mc.pA = petsc_from_csr(Al[l]);
        mc.pP = petsc_from_csr(Pl[l]);
        pe = peak_mb(mem_petsc, &mc);
        MatDestroy(&mc.pA); MatDestroy(&mc.pP);
      }
#endif
      printf("%-10s %3d %9d %10lld %9lld %9lld  peak MB above the inputs: tilerap %.1f", spec, l, Al[l]->m,
             (long long)Al[l]->nnz, (long long)Pl[l]->nnz, (long long)Al[l + 1]->nnz, tl);
      if (pe >= 0) printf(", PETSc MatPtAP %.1f (ratio %.2f)", pe, tl / pe);
      if (g_csr) printf(" | the plan holds %.1f MB%s", (double)mc.plan_bytes / 1048576.0, mc.keeps_ap ? ", A*P kept" : "");
      printf("\n");
      tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP);
      continue;
    }
    /* first time (plan + numeric) and numeric re-runs, with PETSc's
     * MAT_INITIAL_MATRIX / MAT_REUSE_MATRIX interleaved repetition by
     * repetition, so that both see the same machine load */
    tilerap_ptap_plan plan = NULL;
    tilerap_csr_plan cplan = NULL;
    tilerap_csr *cC = NULL;
    double tf[MAXREPS], tn[MAXREPS], pf[MAXREPS], pn[MAXREPS];
#ifdef BENCH_WITH_PETSC
    Mat pA = NULL, pP = NULL, pC = NULL;
    if (with_petsc) { pA = petsc_from_csr(Al[l]); pP = petsc_from_csr(Pl[l]); }
#endif
    /* fresh plans: first time, and the plan's first re-run (the CPU
     * engine's AUTO kernel records its products there) */
    double t1r[MAXREPS];
    for (int r = 0; r <= reps; r++) {
      tilerap_ptap_plan_destroy(&plan); tilerap_tile_destroy(&tC);
      tilerap_csr_plan_destroy(&cplan); tilerap_csr_destroy(&cC);
      double t0 = bench_now();
      int err = g_csr ? tilerap_csr_plan_create(TILERAP_CSR_PTAP, Al[l], Pl[l], &cplan, &cC) : tilerap_ptap_plan_create(tA, tP, &opt, &plan, &tC);
      if (!err && !g_csr && !opt.plan_values) err = tilerap_ptap_numeric(plan, tA, tP, tC);
      if (err) { fprintf(stderr, "tilerap: %s\n", tilerap_last_error()); return 1; }
      double t1 = bench_now();
      if (r == 0) {
        t.relerr = g_csr ? csr_relerr(cC, Al[l + 1]) : bench_tile_relerr(tC, Al[l + 1]);
        if (!(t.relerr <= 1e-14)) { fprintf(stderr, "level %d: WRONG RESULT relerr %.2e\n", l, t.relerr); bad = 1; }
      }
      double t2 = bench_now();
      if (g_csr) tilerap_csr_plan_numeric(cplan, Al[l], Pl[l], cC->val);
      else tilerap_ptap_numeric(plan, tA, tP, tC);
      double t3 = bench_now();
      if (r) { tf[r - 1] = t1 - t0; t1r[r - 1] = t3 - t2; }
#ifdef BENCH_WITH_PETSC
      if (with_petsc) {
        if (pC) MatDestroy(&pC);
        t0 = bench_now();
        MatPtAP(pA, pP, MAT_INITIAL_MATRIX, 2.0, &pC);
        t1 = bench_now();
        if (r) pf[r - 1] = t1 - t0;
      }
#endif
    }
    /* steady re-runs of the last plan, interleaved with PETSc's reuse */
    for (int r = 0; r <= reps; r++) {
      double t0 = bench_now();
      if (g_csr) tilerap_csr_plan_numeric(cplan, Al[l], Pl[l], cC->val);
      else tilerap_ptap_numeric(plan, tA, tP, tC);
      double t1 = bench_now();
      if (r) tn[r - 1] = t1 - t0;
#ifdef BENCH_WITH_PETSC
      if (with_petsc) {
        t0 = bench_now();
        MatPtAP(pA, pP, MAT_REUSE_MATRIX, 2.0, &pC);
        t1 = bench_now();
        if (r) pn[r - 1] = t1 - t0;
      }
#endif
    }
    t.rerun1 = bench_median(t1r, reps);
    t.first = bench_median(tf, reps);
    t.numeric = bench_median(tn, reps);
    if (!((g_csr ? csr_relerr(cC, Al[l + 1]) : bench_tile_relerr(tC, Al[l + 1])) <= 1e-14)) { fprintf(stderr, "level %d: WRONG RESULT after re-run\n", l); bad = 1; }
    tilerap_ptap_info info;
    memset(&info, 0, sizeof info);
    if (g_csr) tilerap_csr_plan_info(cplan, NULL, &info.ap.flops);
    else tilerap_ptap_plan_info(plan, &info);
#ifdef BENCH_WITH_PETSC
    if (with_petsc) {
      t.petsc_first = bench_median(pf, reps);
      t.petsc_reuse = bench_median(pn, reps);
      t.petsc_relerr = petsc_relerr(pC, Al[l + 1]);
      if (!(t.petsc_relerr <= 1e-12)) { fprintf(stderr, "level %d: PETSc differs from the reference (%.2e)\n", l, t.petsc_relerr); bad = 1; }
      MatDestroy(&pC); MatDestroy(&pA); MatDestroy(&pP);
    }
#else
    (void)pf; (void)pn;
#endif
    printf("%-10s %3d %9d %10lld %9lld %9lld %11lld %9.3f %9.3f %9.3f %9.3f", spec, l, Al[l]->m, (long long)Al[l]->nnz,
           (long long)Pl[l]->nnz, (long long)Al[l + 1]->nnz, (long long)(info.ap.flops + info.ptap.flops),
           1e3 * t.conv, 1e3 * t.first, 1e3 * t.rerun1, 1e3 * t.numeric);
    if (with_petsc)
      printf(" %9.3f %9.3f %6.2f %6.2f %6.2f", 1e3 * t.petsc_first, 1e3 * t.petsc_reuse, t.petsc_first / t.first,
             t.petsc_reuse / t.rerun1, t.petsc_reuse / t.numeric);
    printf(" %8.1e\n", t.relerr);
    tot.conv += t.conv; tot.first += t.first; tot.rerun1 += t.rerun1; tot.numeric += t.numeric;
    tot.petsc_first += t.petsc_first; tot.petsc_reuse += t.petsc_reuse;
    tilerap_ptap_plan_destroy(&plan);
    tilerap_csr_plan_destroy(&cplan); tilerap_csr_destroy(&cC);
    tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP); tilerap_tile_destroy(&tC);
  }
  if (g_memory) goto done;
  printf("%-10s all %9s %10s %9s %9s %11s %9.3f %9.3f %9.3f %9.3f", spec, "", "", "", "", "", 1e3 * tot.conv,
         1e3 * tot.first, 1e3 * tot.rerun1, 1e3 * tot.numeric);
  if (with_petsc)
    printf(" %9.3f %9.3f %6.2f %6.2f %6.2f", 1e3 * tot.petsc_first, 1e3 * tot.petsc_reuse, tot.petsc_first / tot.first,
           tot.petsc_reuse / tot.rerun1, tot.petsc_reuse / tot.numeric);
  printf("\n");
done:
  for (int l = 0; l <= L; l++) tilerap_csr_destroy(&Al[l]);
  for (int l = 0; l < L; l++) tilerap_csr_destroy(&Pl[l]);
  return bad;
}

int main(int argc, char **argv)
{
  int reps = 7, with_petsc = 0, ncases = 0;
  tilerap_engine engine = TILERAP_ENGINE_CPU;
  const char *cases[32];
#ifdef BENCH_WITH_PETSC
  with_petsc = 1;
#endif
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-engine") && i + 1 < argc) {
      if (tilerap_engine_parse(argv[++i], &engine)) { fprintf(stderr, "%s\n", tilerap_last_error()); return 2; }
    } else if (!strcmp(argv[i], "-cpu-kernel") && i + 1 < argc) {
      if (tilerap_cpu_kernel_parse(argv[++i], &g_cpu_kernel)) { fprintf(stderr, "%s\n", tilerap_last_error()); return 2; }
    } else if (!strcmp(argv[i], "-plan-values") && i + 1 < argc) g_plan_values = atoi(argv[++i]) != 0;
    else if (!strcmp(argv[i], "-no-petsc")) with_petsc = 0;
    else if (!strcmp(argv[i], "-memory")) g_memory = 1;
    else if (!strcmp(argv[i], "-csr")) g_csr = 1;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: %s [-reps N] [-engine cpu|cuda|auto] [-cpu-kernel auto|tiles|recorded] [-plan-values 0|1] [-csr] [-no-petsc] [-memory] [case ...]\n", argv[0]);
      return 2;
    }
    else if (ncases < 32) cases[ncases++] = argv[i];
  }
  if (reps < 1 || reps > MAXREPS - 1) reps = 7;
  if (!ncases) { cases[0] = "p3d7:64"; cases[1] = "p3d7:101"; ncases = 2; }
#ifdef BENCH_WITH_PETSC
  int pargc = 1;
  char **pargv = argv;
  if (with_petsc) PetscInitialize(&pargc, &pargv, NULL, NULL);
#endif
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  engine = tilerap_engine_resolve(engine);
  if (g_csr && engine != TILERAP_ENGINE_CPU) { fprintf(stderr, "-csr: the CSR plans run on the CPU engine\n"); return 2; }
  printf("# galerkin-bench: engine %s (%s, CPU kernel %s, plan_values %d), %d OpenMP threads, median of %d after warm-up, times in ms%s\n",
         tilerap_engine_name(engine), g_csr ? "CSR plans" : "tile plans", tilerap_cpu_kernel_name(g_cpu_kernel), g_plan_values, threads, reps,
         with_petsc ? "; PETSc MatPtAP on SEQAIJ (1 thread)" : "");
  printf("%-10s %3s %9s %10s %9s %9s %11s %9s %9s %9s %9s", "case", "lvl", "n", "nnzA", "nnzP", "nnzC", "flops",
         "csr2tile", "tr_first", "tr_num1", "tr_num");
  if (with_petsc) printf(" %9s %9s %6s %6s %6s", "petsc_1st", "petsc_re", "x1st", "xnum1", "xnum");
  printf(" %8s\n", "relerr");
  int bad = 0;
  for (int c = 0; c < ncases; c++) bad |= run_case(cases[c], reps, engine, with_petsc);
#ifdef BENCH_WITH_PETSC
  if (with_petsc) PetscFinalize();
#endif
  return bad;
}
