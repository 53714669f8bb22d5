/* spgemm-bench: C = A*A (square A) and C = A*A^T on Matrix Market files or
 * model matrices, with tilerap's tile engine and, in a CUDA build with a
 * GPU, cuSPARSE's generic SpGEMM beside it.
 *
 *   tl_first : tilerap plan + numeric (A*A^T: with tilerap_tile_transpose)
 *   tl_num   : tilerap numeric re-run on the plan
 *   cs_first : cuSPARSE SpGEMM work estimation + compute + copy, buffers and
 *              C allocated (A*A^T: with the csr2csc transpose)
 *   cs_num   : cusparseSpGEMMreuse_compute on a structure set up before
 * --device-csr (CUDA engine): tilerap's columns from the device CSR
 *   products instead (tilerap_device.h: A as device CSR with 32-bit
 *   indices, C into device CSR arrays, no tile form; first = create + C's
 *   arrays + fill, numeric = a product made with TILERAP_CSR_REUSE); A*A
 *   only (its rows read "AAd").
 * Re-runs take A^T as given for both libraries (its values are not
 * refreshed in the timed loop).  CUDA engine: device-resident operands,
 * CUDA events; CPU engine: wall clock.  Median of --reps runs after
 * --warmup runs; before that, one untimed run per column whose result is
 * checked against the independent Gustavson reference (test/ref_gustavson.c),
 * structure and relative Frobenius error (tilerap <= 1e-14, cuSPARSE
 * <= 1e-12); a column whose check fails prints WRONG instead of a time,
 * and the result is checked once more after the timed runs.
 * Exit status: 0 all results right, 1 a wrong result, 2 bad input/usage. */
#include "tilerap.h"
#include "tilerap_device.h"
#include "tilerap_model.h"
#include "../test/ref_gustavson.h"
#include "bench_common.h"
#include "bench_mtx.h"
#ifdef BENCH_WITH_CUSPARSE
#include "bench_cusparse.h"
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define TOL_TILERAP 1e-14
#define TOL_CUSPARSE 1e-12

typedef struct {
  int reps, warmup, do_aa, do_aat, cusparse, gpu, device_csr;
  tilerap_engine engine;
} bench_cfg;

/* A timed column: median in ms (NAN when not run), worst relative error. */
typedef struct {
  double ms, err;
  int run, ok;
} column;

static const char *usage =
  "usage: spgemm-bench [--reps N] [--warmup N] [--engine auto|cpu|cuda] [--ops aa|aat|both]\n"
  "                    [--no-cusparse] [--device-csr] [--gen CASE]... [--write-mtx FILE] [file.mtx ...]\n"
  "  CASE = p2d5:N | p2d9:N | p3d7:N | p3d27:N (tilerap_model.h); --write-mtx FILE writes the\n"
  "  one --gen matrix as Matrix Market and exits.  Default: --reps 9 --warmup 2 --engine auto.\n";

/* ---------------------------------------------------------------- timing */
static double wall_t0;
static void tic(const bench_cfg *c)
{
#ifdef BENCH_WITH_CUSPARSE
  if (c->gpu) { gpu_tic(); return; }
#endif
  (void)c;
  wall_t0 = bench_now();
}
static double toc(const bench_cfg *c)
{
#ifdef BENCH_WITH_CUSPARSE
  if (c->gpu) return gpu_toc();
#endif
  (void)c;
  return 1e3 * (bench_now() - wall_t0);
}

/* One column: run 0 untimed and checked, then --warmup runs, then --reps
 * timed ones; `before` (untimed, may be NULL) precedes every run (it frees
 * the previous result); the result is checked again after the timed runs. */
static void time_column(const bench_cfg *c, void *job, void (*before)(void *), void (*work)(void *),
                        double (*check)(void *), double tol, column *col)
{
  double *t = malloc((size_t)c->reps * sizeof *t);
  col->run = col->ok = 1;
  col->err = 0;
  for (int r = 0; r < 1 + c->warmup + c->reps; r++) {
    if (before) before(job);
    tic(c);
    work(job);
    double ms = toc(c);
    if (r == 0 && !((col->err = check(job)) <= tol)) { col->ok = 0; break; }
    if (r > c->warmup) t[r - 1 - c->warmup] = ms;
  }
  if (col->ok) {
    double e = check(job);
    col->err = fmax(col->err, e);
    col->ok = e <= tol;
  }
  col->ms = col->ok ? bench_median(t, c->reps) : NAN;
  free(t);
}

/* ---------------------------------------------------------------- tile engine */
typedef struct {
  const tilerap_csr *R;
  int trans;
  tilerap_options opt;
  tilerap_tile_matrix *X, *Bt, *C; /* A (host or device), A^T, result */
  tilerap_spgemm_plan plan;
} tile_job;

static void tile_free_result(void *p)
{
  tile_job *j = p;
  tilerap_spgemm_plan_destroy(&j->plan);
  tilerap_tile_destroy(&j->C);
  tilerap_tile_destroy(&j->Bt);
}
static void tile_first(void *p) /* (transpose,) plan, numeric */
{
  tile_job *j = p;
  if (j->trans) TR(tilerap_tile_transpose(j->X, &j->Bt, NULL));
  TR(tilerap_spgemm_plan_create(j->X, j->trans ? j->Bt : j->X, &j->opt, &j->plan, &j->C));
  TR(tilerap_spgemm_numeric(j->plan, j->X, j->trans ? j->Bt : j->X, j->C));
}
static void tile_numeric(void *p)
{
  tile_job *j = p;
  TR(tilerap_spgemm_numeric(j->plan, j->X, j->trans ? j->Bt : j->X, j->C));
}
static double tile_check(void *p)
{
  tile_job *j = p;
  return bench_tile_relerr(j->C, j->R);
}

/* C = A*A or A*A^T with the tile engine: first time and numeric re-runs. */
static void tile_columns(const tilerap_csr *A, int trans, const tilerap_csr *R, const bench_cfg *c, column col[2])
{
  tile_job j = {.R = R, .trans = trans};
  tilerap_tile_matrix *hA = NULL;
  tilerap_options_default(&j.opt);
  j.opt.engine = c->engine;
  TR(tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &hA));
  if (c->gpu) TR(tilerap_tile_copy(hA, TILERAP_MEM_DEVICE, &j.X));
  else j.X = hA;
  time_column(c, &j, tile_free_result, tile_first, tile_check, TOL_TILERAP, &col[0]);
  if (col[0].ok) time_column(c, &j, NULL, tile_numeric, tile_check, TOL_TILERAP, &col[1]);
  tile_free_result(&j);
  if (j.X != hA) tilerap_tile_destroy(&j.X);
  tilerap_tile_destroy(&hA);
}

/* ---------------------------------------------------------------- cuSPARSE */
#ifdef BENCH_WITH_CUSPARSE
/* relative error of a device CSR result against the reference */
static double dcsr_relerr(const dcsr *C, const tilerap_csr *R)
{
  tilerap_csr *X = dcsr_download(C);
  double e = bench_csr_relerr(X, R);
  tilerap_csr_destroy(&X);
  return e;
}

/* ------------------------------------------- tilerap's device CSR products */
typedef struct {
  const tilerap_csr *R;
  dcsr dA;
  tilerap_csr_device_i32 a;
  unsigned flags;
  tilerap_csr_device_product X;
  dcsr C; /* arrays from tilerap's pool, no descriptor */
} dp_job;

static void dp_free_result(void *p)
{
  dp_job *j = p;
  tilerap_csr_device_product_destroy(&j->X);
  tilerap_device_free(j->C.rp); tilerap_device_free(j->C.ci); tilerap_device_free(j->C.v);
  j->C.rp = NULL; j->C.ci = NULL; j->C.v = NULL;
}
static void dp_first(void *p) /* create, C's arrays, fill */
{
  dp_job *j = p;
  int64_t cnnz = 0;
  TR(tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &j->a, &j->a, j->flags, &j->X, &cnnz));
  j->C.m = j->a.m; j->C.n = j->a.n; j->C.nnz = cnnz;
  TR(tilerap_device_malloc(((size_t)j->a.m + 1) * sizeof(int), (void **)&j->C.rp));
  TR(tilerap_device_malloc((size_t)(cnnz ? cnnz : 1) * sizeof(int), (void **)&j->C.ci));
  TR(tilerap_device_malloc((size_t)(cnnz ? cnnz : 1) * sizeof(double), (void **)&j->C.v));
  TR(tilerap_csr_device_product_fill_i32(j->X, &j->a, &j->a, 0, j->C.rp, j->C.ci, j->C.v));
}
static void dp_numeric(void *p)
{
  dp_job *j = p;
  TR(tilerap_csr_device_product_numeric_i32(j->X, &j->a, &j->a, j->C.v));
}
static double dp_check(void *p)
{
  dp_job *j = p;
  return dcsr_relerr(&j->C, j->R);
}
static void device_csr_columns(const tilerap_csr *A, const tilerap_csr *R, const bench_cfg *c, column col[2])
{
  dp_job j;
  memset(&j, 0, sizeof j);
  j.R = R;
  dcsr_upload(A, &j.dA);
  j.a = (tilerap_csr_device_i32){j.dA.m, j.dA.n, j.dA.rp, j.dA.ci, j.dA.v};
  time_column(c, &j, dp_free_result, dp_first, dp_check, TOL_TILERAP, &col[0]);
  if (col[0].ok) {
    dp_free_result(&j);
    j.flags = TILERAP_CSR_REUSE;
    dp_first(&j);
    time_column(c, &j, NULL, dp_numeric, dp_check, TOL_TILERAP, &col[1]);
  }
  dp_free_result(&j);
  dcsr_free(&j.dA);
}

typedef struct {
  cusparseHandle_t h;
  const tilerap_csr *R;
  int trans;
  dcsr dA, dA2, dT, dC; /* dA2: A*A's second operand, a descriptor over dA's arrays */
  void *tbuf;
  size_t tbsz;
  cs_reuse ru;
} cs_job;

static const dcsr *cs_B(const cs_job *j) { return j->trans ? &j->dT : &j->dA2; }
static void cs_free_result(void *p)
{
  cs_job *j = p;
  dcsr_free(&j->dC);
  dcsr_free(&j->dT);
  bench_dfree(j->tbuf);
  j->tbuf = NULL;
  j->tbsz = 0;
}
static void cs_first(void *p) /* (csr2csc,) work estimation, compute, copy */
{
  cs_job *j = p;
  if (j->trans) {
    dcsr_alloc_T(&j->dA, &j->dT);
    cs_transpose(j->h, &j->dA, &j->dT, &j->tbuf, &j->tbsz);
    dcsr_describe(&j->dT);
  }
  cs_spgemm(j->h, &j->dA, cs_B(j), &j->dC);
}
static void cs_numeric(void *p)
{
  cs_job *j = p;
  cs_reuse_compute(j->h, &j->dA, cs_B(j), &j->dC, &j->ru);
}
static double cs_check(void *p)
{
  cs_job *j = p;
  return dcsr_relerr(&j->dC, j->R);
}

static void cusparse_columns(cusparseHandle_t h, const tilerap_csr *A, int trans, const tilerap_csr *R,
                             const bench_cfg *c, column col[2])
{
  cs_job j;
  memset(&j, 0, sizeof j);
  j.h = h; j.R = R; j.trans = trans;
  dcsr_upload(A, &j.dA);
  /* cuSPARSE is not asked to take one descriptor as both operands */
  j.dA2 = j.dA;
  j.dA2.d = NULL;
  dcsr_describe(&j.dA2);
  time_column(c, &j, cs_free_result, cs_first, cs_check, TOL_CUSPARSE, &col[0]);
  if (col[0].ok) {
    dcsr_free(&j.dC); /* A^T stays: the reuse path takes it as given */
    cs_reuse_setup(h, &j.dA, cs_B(&j), &j.dC, &j.ru);
    time_column(c, &j, NULL, cs_numeric, cs_check, TOL_CUSPARSE, &col[1]);
    cs_reuse_free(&j.ru);
  }
  cs_free_result(&j);
  cusparseDestroySpMat(j.dA2.d); /* its arrays are dA's */
  dcsr_free(&j.dA);
}
#endif

/* ---------------------------------------------------------------- one matrix */
/* 2 * sum over entries a_ik of A of nnz(row k of B). */
static int64_t spgemm_flops(const tilerap_csr *A, const tilerap_csr *B)
{
  int64_t f = 0;
  for (int64_t k = 0; k < A->nnz; k++) f += B->rowptr[A->colidx[k] + 1] - B->rowptr[A->colidx[k]];
  return 2 * f;
}

static void print_time(const column *x)
{
  if (!x->run) printf(" %9s", "-");
  else if (!x->ok) printf(" %9s", "WRONG");
  else printf(" %9.3f", x->ms);
}

static void print_ratio(const column *cs, const column *tl)
{
  if (cs->run && cs->ok && tl->ok) printf(" %6.2f", cs->ms / tl->ms);
  else printf(" %6s", "-");
}

/* Returns the number of wrong results. */
static int run_matrix(const char *name, const tilerap_csr *A, const bench_cfg *c, void *cs_handle)
{
  int wrong = 0;
  tilerap_csr *At = NULL;
  for (int trans = 0; trans < 2; trans++) {
    if (trans ? !c->do_aat : !c->do_aa) continue;
    if (!trans && A->m != A->n) {
      printf("# %s: %d x %d is not square: A*A skipped\n", name, A->m, A->n);
      continue;
    }
    if (trans && !At) At = ref_transpose(A);
    const tilerap_csr *B = trans ? At : A;
    tilerap_csr *R = ref_spgemm(A, B); /* independent reference */
    column col[4];
    memset(col, 0, sizeof col);
    if (c->device_csr && trans) {
      printf("# %s: --device-csr: A*A^T skipped\n", name);
      tilerap_csr_destroy(&R);
      continue;
    }
#ifdef BENCH_WITH_CUSPARSE
    if (c->device_csr) device_csr_columns(A, R, c, col);
    else
#endif
      tile_columns(A, trans, R, c, col);
#ifdef BENCH_WITH_CUSPARSE
    if (c->cusparse) {
      if (R->nnz > INT32_MAX || A->nnz > INT32_MAX)
        printf("# %s: beyond cuSPARSE's 32-bit indices here: cuSPARSE skipped\n", name);
      else cusparse_columns((cusparseHandle_t)cs_handle, A, trans, R, c, col + 2);
    }
#else
    (void)cs_handle;
#endif
    int ok = 1;
    double err = 0;
    for (int i = 0; i < 4; i++)
      if (col[i].run) { ok &= col[i].ok; err = fmax(err, col[i].err); }
    wrong += !ok;
    int64_t flops = spgemm_flops(A, B);
    printf("%-20.20s %-4s %9d %9d %11lld %11lld %13lld", name, trans ? "AAt" : c->device_csr ? "AAd" : "AA", A->m, A->n,
           (long long)A->nnz,
           (long long)R->nnz, (long long)flops);
    for (int i = 0; i < 4; i++) print_time(&col[i]);
    print_ratio(&col[2], &col[0]);
    print_ratio(&col[3], &col[1]);
    if (col[1].ok) printf(" %7.2f", (double)flops / (col[1].ms * 1e-3) / 1e9);
    else printf(" %7s", "-");
    printf(" %8.1e %s\n", err, ok ? "ok" : "WRONG");
    fflush(stdout);
    tilerap_csr_destroy(&R);
  }
  tilerap_csr_destroy(&At);
  return wrong;
}

/* a model grid (p3d7:N ...) or a matrix of the irregular set
 * (mesh2d:N[:sfc], powerlaw:N, random:N, denserow:N, ...; seed 1) */
static int gen_matrix(const char *spec, tilerap_csr **A)
{
  char name[32];
  int n = 0;
  tilerap_stencil st;
  int32_t dims[3];
  int nd;
  char extra;
  if (sscanf(spec, "%31[^:]:%d%c", name, &n, &extra) == 2 && n >= 1 && !tilerap_stencil_parse(name, &st)) {
    if (!tilerap_model_poisson(st, n, A, dims, &nd)) return 0;
  } else if (!tilerap_model_irregular(spec, 1, A))
    return 0;
  fprintf(stderr, "spgemm-bench: --gen %s: %s (expected p2d5:N, p2d9:N, p3d7:N, p3d27:N or an irregular matrix of"
                  " tilerap_model.h)\n", spec, tilerap_last_error());
  return -1;
}

static const char *base_name(const char *path, char *buf, size_t len)
{
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  snprintf(buf, len, "%s", b);
  size_t l = strlen(buf);
  if (l > 4 && !strcmp(buf + l - 4, ".mtx")) buf[l - 4] = 0;
  return buf;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *v)
{
  char *end;
  long x = strtol(s, &end, 10);
  if (end == s || *end || x < lo || x > hi) {
    fprintf(stderr, "spgemm-bench: %s %s: expected an integer in %d..%d\n", opt, s, lo, hi);
    return -1;
  }
  *v = (int)x;
  return 0;
}

/* inputs[], is_gen[]: room for argc entries (main owns them). */
static int bench_main(int argc, char **argv, const char **inputs, int *is_gen)
{
  bench_cfg c = {.reps = 9, .warmup = 2, .do_aa = 1, .do_aat = 1, .cusparse = 1, .gpu = 0, .engine = TILERAP_ENGINE_AUTO};
  int ninputs = 0, ngen = 0;
  const char *write_mtx = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_arg = i + 1 < argc;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); return 0; }
    if (!strcmp(a, "--no-cusparse")) { c.cusparse = 0; continue; }
    if (!strcmp(a, "--device-csr")) { c.device_csr = 1; continue; }
    if (a[0] == '-' && a[1] == '-' && !has_arg) { fprintf(stderr, "spgemm-bench: %s needs an argument\n%s", a, usage); return 2; }
    if (!strcmp(a, "--reps")) { if (parse_int(a, argv[++i], 1, 100000, &c.reps)) return 2; }
    else if (!strcmp(a, "--warmup")) { if (parse_int(a, argv[++i], 0, 100000, &c.warmup)) return 2; }
    else if (!strcmp(a, "--engine")) {
      if (tilerap_engine_parse(argv[++i], &c.engine)) { fprintf(stderr, "spgemm-bench: %s\n", tilerap_last_error()); return 2; }
    } else if (!strcmp(a, "--ops")) {
      const char *o = argv[++i];
      c.do_aa = !strcmp(o, "aa") || !strcmp(o, "both");
      c.do_aat = !strcmp(o, "aat") || !strcmp(o, "both");
      if (!c.do_aa && !c.do_aat) { fprintf(stderr, "spgemm-bench: --ops %s: expected aa, aat or both\n", o); return 2; }
    } else if (!strcmp(a, "--gen")) { is_gen[ninputs] = 1; inputs[ninputs++] = argv[++i]; ngen++; }
    else if (!strcmp(a, "--write-mtx")) write_mtx = argv[++i];
    else if (a[0] == '-') { fprintf(stderr, "spgemm-bench: unknown option %s\n%s", a, usage); return 2; }
    else inputs[ninputs++] = a;
  }
  if (write_mtx) {
    if (ngen != 1 || ninputs != 1) { fprintf(stderr, "spgemm-bench: --write-mtx takes exactly one --gen CASE and no files\n"); return 2; }
    tilerap_csr *A = NULL;
    char err[512], comment[96];
    if (gen_matrix(inputs[0], &A)) return 2;
    snprintf(comment, sizeof comment, "tilerap model matrix %s (tilerap_model.h)", inputs[0]);
    if (bench_mtx_write(write_mtx, A, comment, err, sizeof err)) {
      fprintf(stderr, "spgemm-bench: %s\n", err);
      tilerap_csr_destroy(&A);
      return 2;
    }
    printf("# wrote %s: %d x %d, %lld entries\n", write_mtx, A->m, A->n, (long long)A->nnz);
    tilerap_csr_destroy(&A);
    return 0;
  }
  if (!ninputs) { fprintf(stderr, "spgemm-bench: no matrix given\n%s", usage); return 2; }

  c.engine = tilerap_engine_resolve(c.engine);
  if (!tilerap_engine_available(c.engine)) {
    fprintf(stderr, "spgemm-bench: engine %s not available (no CUDA build or no GPU)\n", tilerap_engine_name(c.engine));
    return 2;
  }
  c.gpu = c.engine == TILERAP_ENGINE_CUDA;
  if (c.device_csr && !c.gpu) {
    fprintf(stderr, "spgemm-bench: --device-csr needs the CUDA engine\n");
    return 2;
  }
#ifndef BENCH_WITH_CUSPARSE
  if (c.device_csr) {
    fprintf(stderr, "spgemm-bench: --device-csr needs a CUDA build\n");
    return 2;
  }
#endif
  void *cs_handle = NULL;
  char where[400] = "";
#ifdef BENCH_WITH_CUSPARSE
  cusparseHandle_t h = NULL;
  if (c.gpu) {
    int dev = 0;
    struct cudaDeviceProp prop;
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    snprintf(where, sizeof where, " on %s (device %d), CUDA events", prop.name, dev);
    if (c.cusparse) { CS(cusparseCreate(&h)); cs_handle = h; }
  }
#endif
  if (!c.gpu) {
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    snprintf(where, sizeof where, ", %d OpenMP threads, wall clock", threads);
  }
  c.cusparse = cs_handle != NULL;
  printf("# spgemm-bench: tilerap engine %s%s%s; median of %d after %d warm-up(s), times in ms\n",
         tilerap_engine_name(c.engine), where, c.cusparse ? "; cuSPARSE generic SpGEMM beside it" : "", c.reps, c.warmup);
  printf("# x1st = cs_first/tl_first, xnum = cs_num/tl_num (> 1: tilerap faster); GF/s of tl_num; err = worst relative error\n");
  printf("%-20s %-4s %9s %9s %11s %11s %13s %9s %9s %9s %9s %6s %6s %7s %8s %s\n", "matrix", "op", "m", "n", "nnzA", "nnzC",
         "flops", "tl_first", "tl_num", "cs_first", "cs_num", "x1st", "xnum", "GF/s", "err", "check");

  int wrong = 0, bad_input = 0, products = 0;
  for (int k = 0; k < ninputs; k++) {
    tilerap_csr *A = NULL;
    char name[64];
    if (is_gen[k]) {
      if (gen_matrix(inputs[k], &A)) { bad_input = 1; continue; }
      snprintf(name, sizeof name, "%s", inputs[k]);
    } else {
      char err[512];
      if (bench_mtx_read(inputs[k], &A, err, sizeof err)) {
        fprintf(stderr, "spgemm-bench: %s\n", err);
        printf("# %s: not read (see the message on stderr)\n", inputs[k]);
        bad_input = 1;
        continue;
      }
      base_name(inputs[k], name, sizeof name);
    }
    products += (c.do_aa && A->m == A->n) + c.do_aat;
    wrong += run_matrix(name, A, &c, cs_handle);
    tilerap_csr_destroy(&A);
  }
#ifdef BENCH_WITH_CUSPARSE
  if (h) cusparseDestroy(h);
#endif
  printf("# %d products: %d right, %d WRONG%s\n", products, products - wrong, wrong, bad_input ? "; some inputs not read" : "");
  return wrong ? 1 : bad_input ? 2 : 0;
}

int main(int argc, char **argv)
{
  const char **inputs = calloc((size_t)argc, sizeof *inputs);
  int *is_gen = calloc((size_t)argc, sizeof *is_gen);
  if (!inputs || !is_gen) { fprintf(stderr, "spgemm-bench: out of memory\n"); return 2; }
  int rc = bench_main(argc, argv, inputs, is_gen);
  free(inputs);
  free(is_gen);
  return rc;
}
