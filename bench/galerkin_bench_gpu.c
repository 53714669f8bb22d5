/* GPU benchmark of the Galerkin product C = P^T A P on the model AMG
 * hierarchies (tilerap_model.h), level by level, with CUDA events
 * (median of --reps runs after a warm-up):
 *   tl_first : tilerap plan + numeric, device-resident (allocation included);
 *              BENCH_PLAN_VALUES=1: one plan creation with plan_values = 1
 *              (the plan makes C's values; no numeric call)
 *   tl_num   : tilerap numeric re-run
 *   cs_first : cuSPARSE generic SpGEMM, AP = A*P, explicit transpose of P
 *              (csr2csc), P^T*(AP); descriptors, buffers, C allocated
 *   cs_num   : cuSPARSE re-run: csr2csc values + two SpGEMMreuse_compute
 *              (cuSPARSE's memory: cudaMalloc, as PETSc; BENCH_CUSPARSE_POOL=1:
 *              a stream-ordered pool that keeps its memory, as tilerap's)
 *   floor    : CSR bytes of A, P, C over the measured device copy rate
 * Every result is checked against tilerap's CPU engine (structure and
 * relative error) before its time is reported; a failed check prints
 * FAIL in the row.  usage: galerkin-bench-gpu [--reps N] [case ...],
 * case = p2d5:1024 etc., or an irregular matrix of tilerap_model.h
 * (mesh2d:500000, mesh2d:500000:sfc, powerlaw:300000, ...) with
 * graph-aggregation prolongators (BENCH_PROLONGATOR=classical: PMIS +
 * extended interpolation), checked against the Gustavson product.
 * Each row ends with the path the plan took ("+rec": re-runs from a
 * record, design.md "Recorded re-runs"), the operands' mean entries
 * per tile (what it chose by) and the first product's peak device memory
 * above A and P, in MB, for tilerap (its pool's high-water mark: plan,
 * temporaries and C) and for cuSPARSE (its workspaces, P^T, AP and C),
 * then (rMB) the same over the re-runs: tilerap's plan or reusable
 * product, C and what the re-runs add (a record), and cuSPARSE's P^T, AP,
 * C and reuse buffers.
 *
 * --tc T1,T2,...  tensor-core mode instead of cuSPARSE: per level, the
 *   numeric re-run with tensor cores off and with tc_threshold T1, T2, ...
 *   (fp64), in one run, the tensor-core pair counts of the first, and the
 *   relative error vs the CPU engine of each low precision (tf32, bf16,
 *   fp16, with tc_threshold --prec-thr, default 0 = every pair on tensor
 *   cores; one product per level, inputs exact).  Extra cases there:
 *   blk:N[:TD] = block-dense N x N A with tile density TD (default 0.03)
 *   and an N x N/4 block-dense P (tile density 4 TD), dense tiles;
 *   wide:N = p3d27:N with values of A scaled by 2^(-40..40) per row and
 *   column pair (many orders of magnitude, symmetric scaling); and the
 *   irregular matrices (elast:N, s125:N, mesh3d:N, ...) with their
 *   graph-aggregation prolongators.  Each low precision is timed next to
 *   fp64 at the same threshold (x = speed-up over it), with its pairs in
 *   low precision / tensor-core pairs (lp; 0: the plan declined) and the
 *   pairs that fell back to fp64 (fb: a tile's range did not fit).
 *
 * --phases  also, per level, the transpose of P, the AP product and the
 *   P^T (AP) product of a first-time Galerkin product timed apart.
 *
 * --device-csr  tilerap's columns from the device CSR products instead
 *   (tilerap_device.h: A and P as device CSR with 32-bit indices, C into
 *   device CSR arrays, no tile form; first = create + C's arrays + fill,
 *   re-run = numeric on a product made with TILERAP_CSR_REUSE); the path
 *   column reads "dcsr", "dcsr+rec" where that product re-runs all its
 *   multiply-adds from records, "dcsr+recN" where N % of them,
 *   "dcsr+tiles" where the product went over tiles (its fill columns: the
 *   entries per tile it measured to choose so).
 *
 * --overhead  the fixed costs a plan pays whatever its size, on this
 *   device: a queued 4-byte memset (a launch), a launch followed by a
 *   stream synchronisation, and a stream-ordered 4 KB allocation and free
 *   from a memory pool (host wall clock, median of 9 batches of 200). */
#include "tilerap.h"
#include "tilerap_device.h"
#include "tilerap_model.h"
#include "../test/ref_gustavson.h"
#include "bench_common.h"
#include "bench_cusparse.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reps = 9;
static int tc_thr[8], ntc = 0, prec_thr = 0;
static int phases = 0;
static int device_csr = 0; /* --device-csr */
static int plan_values = 0; /* BENCH_PLAN_VALUES */

/* --phases: the three parts of a first-time Galerkin product timed apart
 * (device-resident, medians): the tile transpose of P, the AP plan with
 * its first numeric run, the P^T (AP) plan with its first numeric run. */
static void run_phases(const tilerap_tile_matrix *dA, const tilerap_tile_matrix *dP, const tilerap_options *o)
{
  double t[3][64];
  for (int r = -1; r < reps; r++) {
    tilerap_tile_matrix *Pt = NULL, *AP = NULL, *C = NULL;
    tilerap_spgemm_plan p1 = NULL, p2 = NULL;
    gpu_tic();
    TR(tilerap_tile_transpose(dP, &Pt, NULL));
    double a = gpu_toc();
    gpu_tic();
    TR(tilerap_spgemm_plan_create(dA, dP, o, &p1, &AP));
    TR(tilerap_spgemm_numeric(p1, dA, dP, AP));
    double b = gpu_toc();
    gpu_tic();
    TR(tilerap_spgemm_plan_create(Pt, AP, o, &p2, &C));
    TR(tilerap_spgemm_numeric(p2, Pt, AP, C));
    double c = gpu_toc();
    if (r >= 0) { t[0][r] = a; t[1][r] = b; t[2][r] = c; }
    tilerap_spgemm_plan_destroy(&p1); tilerap_spgemm_plan_destroy(&p2);
    tilerap_tile_destroy(&Pt); tilerap_tile_destroy(&AP); tilerap_tile_destroy(&C);
  }
  printf("#   phases (first time, ms): transpose of P %.3f | AP plan + numeric %.3f | P^T(AP) plan + numeric %.3f\n",
         bench_median(t[0], reps), bench_median(t[1], reps), bench_median(t[2], reps));
}

/* --device-csr: tilerap's first time and re-run on device CSR operands,
 * med[0..1], err[0..1], the pool's peak above what it held before, and
 * whether re-runs used a record */
typedef struct {
  tilerap_csr_device_product X;
  int32_t *rp, *col;
  double *val;
} dcsr_c;
static void dcsr_c_free(dcsr_c *c)
{
  tilerap_csr_device_product_destroy(&c->X);
  tilerap_device_free(c->rp); tilerap_device_free(c->col); tilerap_device_free(c->val);
  memset(c, 0, sizeof *c);
}
static void dcsr_c_make(const tilerap_csr_device_i32 *a, const tilerap_csr_device_i32 *p, unsigned flags, dcsr_c *c)
{
  int64_t cnnz = 0;
  TR(tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, a, p, flags, &c->X, &cnnz));
  TR(tilerap_device_malloc(((size_t)p->n + 1) * sizeof(int32_t), (void **)&c->rp));
  TR(tilerap_device_malloc((size_t)(cnnz ? cnnz : 1) * sizeof(int32_t), (void **)&c->col));
  TR(tilerap_device_malloc((size_t)(cnnz ? cnnz : 1) * sizeof(double), (void **)&c->val));
  TR(tilerap_csr_device_product_fill_i32(c->X, a, p, 0, c->rp, c->col, c->val));
}
static double dcsr_c_err(const dcsr_c *c, int n, const tilerap_csr *R)
{
  int64_t cnnz = 0;
  TR(tilerap_csr_device_product_info(c->X, NULL, NULL, &cnnz, NULL, NULL));
  dcsr D = {.m = n, .n = n, .nnz = cnnz, .rp = c->rp, .ci = c->col, .v = c->val};
  tilerap_csr *X = dcsr_download(&D);
  const double e = bench_csr_relerr(X, R);
  tilerap_csr_destroy(&X);
  return e;
}
static void run_device_csr(const tilerap_csr *A, const tilerap_csr *P, const tilerap_csr *R, double *med, double *err,
                           double *t, double *mb, double *mb_rerun, double *rec_share, int *tiled, double *fill)
{
  dcsr cA, cP;
  dcsr_upload(A, &cA); dcsr_upload(P, &cP);
  const tilerap_csr_device_i32 a = {cA.m, cA.n, cA.rp, cA.ci, cA.v}, p = {cP.m, cP.n, cP.rp, cP.ci, cP.v};
  dcsr_c c;
  memset(&c, 0, sizeof c);
  size_t base = 0, peak = 0;
  TR(tilerap_device_memory(&base, NULL));
  TR(tilerap_device_memory_reset_peak());
  for (int r = -1; r < reps; r++) {
    dcsr_c_free(&c);
    gpu_tic();
    dcsr_c_make(&a, &p, 0, &c);
    double ms = gpu_toc();
    if (r >= 0) t[r] = ms;
  }
  med[0] = bench_median(t, reps);
  TR(tilerap_device_memory(NULL, &peak));
  *mb = 1e-6 * (double)(peak - base);
  err[0] = dcsr_c_err(&c, P->n, R);
  dcsr_c_free(&c);
  TR(tilerap_device_memory_reset_peak());
  dcsr_c_make(&a, &p, TILERAP_CSR_REUSE, &c);
  {
    int64_t rec = 0, flops = 0;
    TR(tilerap_csr_device_product_record_info(c.X, &rec, NULL));
    TR(tilerap_csr_device_product_info(c.X, NULL, NULL, NULL, &flops, NULL));
    *rec_share = flops > 0 ? 2.0 * (double)rec / (double)flops : 0.0;
    tilerap_path path = TILERAP_PATH_CSR;
    TR(tilerap_csr_device_product_path(c.X, &path, &fill[0], &fill[1]));
    *tiled = path == TILERAP_PATH_TILES;
  }
  for (int r = -1; r < reps; r++) {
    gpu_tic();
    TR(tilerap_csr_device_product_numeric_i32(c.X, &a, &p, c.val));
    double ms = gpu_toc();
    if (r >= 0) t[r] = ms;
  }
  med[1] = bench_median(t, reps);
  TR(tilerap_device_memory(NULL, &peak));
  *mb_rerun = 1e-6 * (double)(peak - base); /* the product kept for re-runs, its record included */
  err[1] = dcsr_c_err(&c, P->n, R);
  dcsr_c_free(&c);
  dcsr_free(&cA); dcsr_free(&cP);
}

static void run_case(const char *spec, double bw, cusparseHandle_t h)
{
  char name[32];
  int n = 0;
  tilerap_stencil st;
  tilerap_csr *A = NULL;
  int32_t dims[3], cd[3];
  int nd = 0, irregular = 0;
  if (sscanf(spec, "%31[^:]:%d", name, &n) != 2) {
    fprintf(stderr, "bad case '%s'\n", spec);
    return;
  }
  if (!tilerap_stencil_parse(name, &st)) TR(tilerap_model_poisson(st, n, &A, dims, &nd));
  else if (!tilerap_model_irregular(spec, 1, &A)) {
    irregular = 1; /* graph-aggregation prolongators, a reference by Gustavson */
    char order[16] = "";
    if (sscanf(spec, "%*[^:]:%*d:%15s", order) == 1) { /* mesh2d:N:sfc prints as mesh2d/sfc */
      strncat(name, "/", sizeof name - strlen(name) - 1);
      strncat(name, order, sizeof name - strlen(name) - 1);
    }
  } else {
    fprintf(stderr, "bad case '%s': %s\n", spec, tilerap_last_error());
    return;
  }
  tilerap_options ocpu, ogpu;
  tilerap_options_default(&ocpu); ocpu.engine = TILERAP_ENGINE_CPU;
  tilerap_options_default(&ogpu); ogpu.engine = TILERAP_ENGINE_CUDA;
  double tot[4] = {0}, totf = 0, mem_max[4] = {0, 0, 0, 0};
  int all_ok = 1;
  for (int lvl = 0; lvl < 4 && A->m >= 500; lvl++) {
    tilerap_csr *P = NULL;
    if (irregular) TR(bench_irregular_prolongator(A, lvl, &P));
    else TR(tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd));
    /* reference: tilerap's CPU engine on model grids, Gustavson on the
     * irregular set (whose order the tile engine does not favour) */
    tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hP = ref_csr_to_tile(P), *hC = NULL;
    tilerap_csr *R = NULL;
    if (irregular) R = ref_ptap(A, P);
    else {
      TR(tilerap_ptap(hA, hP, &ocpu, &hC));
      R = ref_tile_to_csr(hC);
    }
    double t[64], med[4], err[4], dcsr_mb = 0, dcsr_mb_rerun = 0, dcsr_rec = 0, dcsr_fill[2] = {0, 0};
    int dcsr_tiled = 0;
    tilerap_ptap_info pinfo;
    memset(&pinfo, 0, sizeof pinfo);
    size_t tl_base = 0, tl_peak = 0, tl_peak_rerun = 0;
    if (device_csr) {
      run_device_csr(A, P, R, med, err, t, &dcsr_mb, &dcsr_mb_rerun, &dcsr_rec, &dcsr_tiled, dcsr_fill);
      pinfo.ap.a_fill = dcsr_fill[0]; /* measured by the product where it chose its path */
      pinfo.ap.b_fill = dcsr_fill[1];
    } else {
    /* tilerap, device-resident */
    tilerap_tile_matrix *dA = NULL, *dP = NULL, *dC = NULL;
    TR(tilerap_tile_copy(hA, TILERAP_MEM_DEVICE, &dA));
    TR(tilerap_tile_copy(hP, TILERAP_MEM_DEVICE, &dP));
    tilerap_ptap_plan plan = NULL;
    tilerap_options ofirst = ogpu;
    ofirst.plan_values = plan_values;
    TR(tilerap_device_memory(&tl_base, NULL)); /* A and P */
    TR(tilerap_device_memory_reset_peak());
    for (int r = -1; r < reps; r++) {
      gpu_tic();
      TR(tilerap_ptap_plan_create(dA, dP, &ofirst, &plan, &dC));
      if (!plan_values) TR(tilerap_ptap_numeric(plan, dA, dP, dC));
      double ms = gpu_toc();
      if (r >= 0) t[r] = ms;
      if (r < reps - 1) { tilerap_ptap_plan_destroy(&plan); tilerap_tile_destroy(&dC); }
    }
    med[0] = bench_median(t, reps);
    TR(tilerap_device_memory(NULL, &tl_peak));
    err[0] = bench_tile_relerr(dC, R);
    TR(tilerap_device_memory_reset_peak());
    for (int r = -1; r < reps; r++) {
      gpu_tic();
      TR(tilerap_ptap_numeric(plan, dA, dP, dC));
      double ms = gpu_toc();
      if (r >= 0) t[r] = ms;
    }
    med[1] = bench_median(t, reps);
    TR(tilerap_device_memory(NULL, &tl_peak_rerun)); /* the plan, C and what re-runs add (a record) */
    err[1] = bench_tile_relerr(dC, R);
    TR(tilerap_ptap_plan_info(plan, &pinfo));
    tilerap_ptap_plan_destroy(&plan);
    if (phases) run_phases(dA, dP, &ogpu);
    tilerap_tile_destroy(&dC); tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dP);
    }

    /* cuSPARSE */
    dcsr cA, cP, cT, cAP, cC;
    memset(&cT, 0, sizeof cT);
    dcsr_upload(A, &cA); dcsr_upload(P, &cP);
    void *tbuf = NULL;
    size_t tbsz = 0;
    const size_t cs_base = bench_dmem_in_use(); /* A and P */
    bench_dmem_reset_peak();
    for (int r = -1; r < reps; r++) {
      gpu_tic();
      cs_spgemm(h, &cA, &cP, &cAP);
      dcsr_alloc_T(&cP, &cT);
      cs_transpose(h, &cP, &cT, &tbuf, &tbsz);
      dcsr_describe(&cT);
      cs_spgemm(h, &cT, &cAP, &cC);
      double ms = gpu_toc();
      if (r >= 0) t[r] = ms;
      if (r < reps - 1) { dcsr_free(&cAP); dcsr_free(&cT); dcsr_free(&cC); bench_dfree(tbuf); tbuf = NULL; tbsz = 0; }
    }
    med[2] = bench_median(t, reps);
    const size_t cs_peak = bench_dmem_peak();
    tilerap_csr *X = dcsr_download(&cC);
    err[2] = bench_csr_relerr(X, R);
    tilerap_csr_destroy(&X);
    dcsr_free(&cAP); dcsr_free(&cC);
    cs_reuse r1, r2;
    bench_dmem_reset_peak();
    cs_reuse_setup(h, &cA, &cP, &cAP, &r1);
    cs_reuse_setup(h, &cT, &cAP, &cC, &r2);
    for (int r = -1; r < reps; r++) {
      gpu_tic();
      cs_transpose(h, &cP, &cT, &tbuf, &tbsz);
      cs_reuse_compute(h, &cA, &cP, &cAP, &r1);
      cs_reuse_compute(h, &cT, &cAP, &cC, &r2);
      double ms = gpu_toc();
      if (r >= 0) t[r] = ms;
    }
    med[3] = bench_median(t, reps);
    const size_t cs_peak_rerun = bench_dmem_peak(); /* P^T, AP, C and the reuse buffers */
    X = dcsr_download(&cC);
    err[3] = bench_csr_relerr(X, R);
    tilerap_csr_destroy(&X);
    cs_reuse_free(&r1); cs_reuse_free(&r2);
    dcsr_free(&cAP); dcsr_free(&cC); dcsr_free(&cT); dcsr_free(&cA); dcsr_free(&cP);
    bench_dfree(tbuf);

    double bytes = 12.0 * (double)(A->nnz + P->nnz + R->nnz) + 4.0 * ((double)A->m + P->m + R->m + 3);
    double floor_ms = bytes / bw * 1e3;
    int ok = 1;
    for (int i = 0; i < 4; i++) ok &= err[i] <= 1e-12;
    all_ok &= ok;
    const double tl_mb = device_csr ? dcsr_mb : 1e-6 * (double)(tl_peak - tl_base),
                 cs_mb = 1e-6 * (double)(cs_peak - cs_base),
                 tl_mb_rerun = device_csr ? dcsr_mb_rerun : 1e-6 * (double)(tl_peak_rerun - tl_base),
                 cs_mb_rerun = 1e-6 * (double)(cs_peak_rerun - cs_base);
    char path[32]; /* "+rec": a product of the plan re-runs from a record */
    if (device_csr) {
      const int pct = (int)(100.0 * dcsr_rec + 0.5);
      if (dcsr_tiled) snprintf(path, sizeof path, "dcsr+tiles");
      else if (dcsr_rec <= 0) snprintf(path, sizeof path, "dcsr");
      else if (pct >= 100 && dcsr_rec >= 1.0) snprintf(path, sizeof path, "dcsr+rec");
      else snprintf(path, sizeof path, "dcsr+rec%d", pct < 1 ? 1 : pct > 99 ? 99 : pct);
    }
    else
      snprintf(path, sizeof path, "%s%s", tilerap_path_name(pinfo.ap.path),
               pinfo.ap.recorded > 0 || pinfo.ptap.recorded > 0 ? "+rec" : "");
    printf("%s:%-6d %3d %9d %10lld %10lld %10lld  %8.3f %8.3f %8.3f %8.3f %8.4f  %6.1fx %6.1fx %6.1f  %.1e %.1e %.1e %.1e %s"
           "  %s %.2f %.2f  MB %.1f %.1f  rMB %.1f %.1f\n",
           name, n, lvl, A->m, (long long)A->nnz, (long long)P->nnz, (long long)R->nnz, med[0], med[1], med[2], med[3],
           floor_ms, med[2] / med[0], med[3] / med[1], med[1] / floor_ms, err[0], err[1], err[2], err[3],
           ok ? "ok" : "FAIL", path, pinfo.ap.a_fill, pinfo.ap.b_fill, tl_mb, cs_mb, tl_mb_rerun, cs_mb_rerun);
    mem_max[0] = fmax(mem_max[0], tl_mb);
    mem_max[1] = fmax(mem_max[1], cs_mb);
    mem_max[2] = fmax(mem_max[2], tl_mb_rerun);
    mem_max[3] = fmax(mem_max[3], cs_mb_rerun);
    fflush(stdout);
    for (int i = 0; i < 4; i++) tot[i] += med[i];
    totf += floor_ms;
    tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hP); tilerap_tile_destroy(&hC);
    tilerap_csr_destroy(&A);
    tilerap_csr_destroy(&P);
    A = R;
    dims[0] = cd[0]; dims[1] = cd[1]; dims[2] = cd[2];
  }
  printf("%s:%-6d all  tilerap first %.3f ms, numeric %.3f ms | cuSPARSE first %.3f ms, reuse %.3f ms | floor %.3f ms"
         " | speedup first %.1fx, numeric %.1fx | peak MB tilerap %.1f cuSPARSE %.1f | re-run peak MB tilerap %.1f"
         " cuSPARSE %.1f %s\n",
         name, n, tot[0], tot[1], tot[2], tot[3], totf, tot[2] / tot[0], tot[3] / tot[1], mem_max[0], mem_max[1],
         mem_max[2], mem_max[3], all_ok ? "ok" : "FAIL");
  fflush(stdout);
  tilerap_csr_destroy(&A);
}

/* ------------------------------------------------------ tensor-core mode */
static tilerap_csr *bench_blockdense(int32_t m, int32_t n, double tdens, uint64_t *seed)
{
  int32_t TR = (m + 15) / 16, TC = (n + 15) / 16;
  char *on = calloc((size_t)TR * TC + 1, 1);
  int64_t cap = 0;
  for (int64_t t = 0; t < (int64_t)TR * TC; t++) cap += (on[t] = ref_rand01(seed) < tdens) ? 256 : 0;
  tilerap_csr *A = NULL;
  TR(tilerap_csr_create(m, n, cap, &A));
  int64_t q = 0;
  for (int32_t i = 0; i < m; i++) {
    A->rowptr[i] = q;
    for (int32_t j = 0; j < n; j++)
      if (on[(int64_t)(i / 16) * TC + j / 16]) { A->colidx[q] = j; A->val[q++] = 2.0 * ref_rand01(seed) - 1.0; }
  }
  A->rowptr[m] = A->nnz = q;
  free(on);
  return A;
}

/* median numeric re-run (ms) of a device-resident plan with options o;
 * *err: relative error vs R; info of the plan */
static double tc_time(tilerap_tile_matrix *dA, tilerap_tile_matrix *dP, const tilerap_options *o, const tilerap_csr *R,
                      double *err, tilerap_ptap_info *info)
{
  tilerap_ptap_plan plan = NULL;
  tilerap_tile_matrix *dC = NULL;
  double t[64];
  TR(tilerap_ptap_plan_create(dA, dP, o, &plan, &dC));
  for (int r = -1; r < reps; r++) {
    gpu_tic();
    TR(tilerap_ptap_numeric(plan, dA, dP, dC));
    double ms = gpu_toc();
    if (r >= 0) t[r] = ms;
  }
  *err = bench_tile_relerr(dC, R);
  TR(tilerap_ptap_plan_info(plan, info));
  tilerap_ptap_plan_destroy(&plan);
  tilerap_tile_destroy(&dC);
  return bench_median(t, reps);
}

static void tc_level(const char *label, int lvl, const tilerap_csr *A, const tilerap_csr *P, const tilerap_csr *R)
{
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hP = ref_csr_to_tile(P), *dA = NULL, *dP = NULL;
  TR(tilerap_tile_copy(hA, TILERAP_MEM_DEVICE, &dA));
  TR(tilerap_tile_copy(hP, TILERAP_MEM_DEVICE, &dP));
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = TILERAP_ENGINE_CUDA;
  o.tc_threshold = -1; /* the baseline: tensor cores off (the default is on) */
  tilerap_ptap_info i0, it;
  double e0, et, ms0 = tc_time(dA, dP, &o, R, &e0, &i0);
  printf("%-14s %3d %8d %9lld %9lld %9lld %8.3f", label, lvl, A->m, (long long)A->nnz, (long long)P->nnz,
         (long long)R->nnz, ms0);
  int ok = e0 <= 1e-14;
  double first_ap = 0, first_pt = 0;
  char buf[512];
  int len = 0;
  for (int k = 0; k < ntc; k++) {
    o.tc_threshold = tc_thr[k];
    double ms = tc_time(dA, dP, &o, R, &et, &it);
    ok &= et <= 1e-14;
    if (!k) {
      first_ap = it.ap.pairs ? 100.0 * it.ap.tc_pairs / it.ap.pairs : 0;
      first_pt = it.ptap.pairs ? 100.0 * it.ptap.tc_pairs / it.ptap.pairs : 0;
    }
    len += snprintf(buf + len, sizeof buf - len, " %8.3f(%4.2fx)", ms, ms0 / ms);
  }
  printf("%s", buf);
  /* low precisions against fp64 at the same threshold (the pairs they take) */
  o.tc_threshold = prec_thr;
  o.precision = TILERAP_PRECISION_FP64;
  const double ms64 = tc_time(dA, dP, &o, R, &et, &it);
  ok &= et <= 1e-14;
  printf("  fp64@%d %.3f", prec_thr, ms64);
  const tilerap_precision pr[3] = {TILERAP_PRECISION_TF32, TILERAP_PRECISION_BF16, TILERAP_PRECISION_FP16};
  for (int k = 0; k < 3; k++) {
    o.precision = pr[k];
    double ms = tc_time(dA, dP, &o, R, &et, &it);
    const long long lp = (long long)(it.ap.lowprec_pairs + it.ptap.lowprec_pairs);
    const long long tc = (long long)(it.ap.tc_pairs + it.ptap.tc_pairs);
    const long long fb = (long long)(it.ap.lowprec_fallbacks + it.ptap.lowprec_fallbacks);
    const long long nt = (long long)(it.ap.lowprec_tiles + it.ptap.lowprec_tiles);
    printf("  %s %.1e %.3f(%.2fx) lp %lld/%lld tiles %lld fb %lld", tilerap_precision_name(pr[k]), et, ms, ms64 / ms, lp,
           tc, nt, fb);
  }
  printf("  tc pairs(T1) AP %.1f%% PtAP %.1f%% %s\n", first_ap, first_pt, ok ? "ok" : "FAIL");
  fflush(stdout);
  tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dP); tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hP);
}

static void run_tc_case(const char *spec)
{
  char name[32];
  int n = 0;
  double td = 0.03;
  tilerap_options ocpu;
  tilerap_options_default(&ocpu);
  ocpu.engine = TILERAP_ENGINE_CPU;
  if (sscanf(spec, "%31[^:]:%d:%lf", name, &n, &td) < 2) { fprintf(stderr, "bad case '%s'\n", spec); return; }
  if (!strcmp(name, "blk")) {
    uint64_t seed = 11;
    tilerap_csr *A = bench_blockdense(n, n, td, &seed), *P = bench_blockdense(n, n / 4, 4 * td, &seed);
    tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hP = ref_csr_to_tile(P), *hC = NULL;
    TR(tilerap_ptap(hA, hP, &ocpu, &hC));
    tilerap_csr *R = ref_tile_to_csr(hC);
    tc_level(spec, 0, A, P, R);
    tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hP); tilerap_tile_destroy(&hC);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&R);
    return;
  }
  int wide = !strcmp(name, "wide");
  tilerap_stencil st;
  tilerap_csr *A = NULL;
  if (tilerap_stencil_parse(wide ? "p3d27" : name, &st)) {
    if (tilerap_model_irregular(spec, 1, &A)) { fprintf(stderr, "bad case '%s'\n", spec); return; }
    /* an irregular matrix: graph-aggregation prolongators, Gustavson reference */
    for (int lvl = 0; lvl < 5 && A->m >= 200; lvl++) {
      tilerap_csr *P = NULL;
      TR(bench_irregular_prolongator(A, lvl, &P));
      tilerap_csr *R = ref_ptap(A, P);
      tc_level(spec, lvl, A, P, R);
      tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
      A = R;
    }
    tilerap_csr_destroy(&A);
    return;
  }
  int32_t dims[3], cd[3];
  int nd;
  TR(tilerap_model_poisson(st, n, &A, dims, &nd));
  if (wide) ref_scale_wide(A, 40, 5); /* values over ~24 orders of magnitude */
  for (int lvl = 0; lvl < 5 && A->m >= 200; lvl++) {
    tilerap_csr *P = NULL;
    TR(tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd));
    tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hP = ref_csr_to_tile(P), *hC = NULL;
    TR(tilerap_ptap(hA, hP, &ocpu, &hC));
    tilerap_csr *R = ref_tile_to_csr(hC);
    tc_level(spec, lvl, A, P, R);
    tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hP); tilerap_tile_destroy(&hC);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
    A = R;
    dims[0] = cd[0]; dims[1] = cd[1]; dims[2] = cd[2];
  }
  tilerap_csr_destroy(&A);
}

/* microseconds per iteration of the fixed-cost probes (--overhead) */
static void run_overhead(void)
{
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int *d = NULL;
  CK(cudaMalloc((void **)&d, 64));
  const int n = 200;
  double t[3][9];
  for (int b = -1; b < 9; b++) {
    double t0 = bench_now();
    for (int i = 0; i < n; i++) CK(cudaMemsetAsync(d, 0, 4, s));
    CK(cudaStreamSynchronize(s));
    double t1 = bench_now();
    for (int i = 0; i < n; i++) { CK(cudaMemsetAsync(d, 0, 4, s)); CK(cudaStreamSynchronize(s)); }
    double t2 = bench_now();
    for (int i = 0; i < n; i++) {
      void *p = NULL;
      CK(cudaMallocAsync(&p, 4096, s));
      CK(cudaFreeAsync(p, s));
    }
    CK(cudaStreamSynchronize(s));
    double t3 = bench_now();
    if (b < 0) continue;
    t[0][b] = (t1 - t0) * 1e6 / n; t[1][b] = (t2 - t1) * 1e6 / n; t[2][b] = (t3 - t2) * 1e6 / n;
  }
  printf("# fixed costs (us, median of 9 x %d): queued launch %.2f, launch + stream sync %.2f, pool alloc + free %.2f\n",
         n, bench_median(t[0], 9), bench_median(t[1], 9), bench_median(t[2], 9));
  CK(cudaFree(d));
  CK(cudaStreamDestroy(s));
}

int main(int argc, char **argv)
{
  int overhead = 0;
  const char *defaults[] = {"p2d5:1024", "p2d9:1024", "p3d7:101", "p3d27:101", "p3d7:200"};
  const char *cases[32];
  int nc = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) { reps = atoi(argv[++i]); continue; }
    if (!strcmp(argv[i], "--tc") && i + 1 < argc) {
      for (char *tok = strtok(argv[++i], ","); tok && ntc < 8; tok = strtok(NULL, ",")) tc_thr[ntc++] = atoi(tok);
      continue;
    }
    if (!strcmp(argv[i], "--prec-thr") && i + 1 < argc) { prec_thr = atoi(argv[++i]); continue; }
    if (!strcmp(argv[i], "--overhead")) { overhead = 1; continue; }
    if (!strcmp(argv[i], "--phases")) { phases = 1; continue; }
    if (!strcmp(argv[i], "--device-csr")) { device_csr = 1; continue; }
    if (nc < 32) cases[nc++] = argv[i];
  }
  if (reps < 1 || reps > 63) reps = 9;
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) { printf("no CUDA device: nothing to measure\n"); return 0; }
  if (overhead) {
    run_overhead();
    if (!nc) return 0;
  }
  if (!nc) for (int i = 0; i < 5; i++) cases[nc++] = defaults[i];
  cusparseHandle_t h;
  CS(cusparseCreate(&h));
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  if (ntc) {
    struct cudaDeviceProp pr;
    CK(cudaGetDeviceProperties(&pr, 0));
    printf("# device %s, tensor-core mode, median of %d numeric re-runs, ms; (x) = speed-up over tensor cores off;"
           " low precisions with tc_threshold %d: relerr vs fp64 CPU, ms\n", pr.name, reps, prec_thr);
    printf("# case     lvl        n      nnzA      nnzP      nnzC   tc_off  tc=");
    for (int k = 0; k < ntc; k++) printf("%d%s", tc_thr[k], k + 1 < ntc ? "," : "\n");
    for (int i = 0; i < nc; i++) run_tc_case(cases[i]);
    cusparseDestroy(h);
    return 0;
  }
  double bw = copy_bandwidth();
  const char *pv = getenv("BENCH_PLAN_VALUES");
  plan_values = pv && !strcmp(pv, "1");
  printf("# device %s, copy bandwidth %.2f TB/s, median of %d after warm-up, times in ms, cuSPARSE memory: %s,"
         " tilerap first: %s, irregular cases' prolongators: %s\n",
         prop.name, bw / 1e12, reps, bench_cusparse_pool() ? "stream-ordered pool" : "cudaMalloc",
         plan_values ? "plan with values" : "plan, then numeric", bench_prolongator_name());
  printf("# case     lvl         n       nnzA       nnzP       nnzC  tl_first   tl_num cs_first   cs_num    floor"
         "  sp_first sp_num num/floor  err: tl_first tl_num cs_first cs_num  check  path fill(A) fill(P)"
         "  MB: tilerap cuSPARSE (first product's peak device memory above A and P)\n");
  for (int i = 0; i < nc; i++) run_case(cases[i], bw, h);
  cusparseDestroy(h);
  return 0;
}
