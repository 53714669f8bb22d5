/* C = A*B with the tile engine against the plain Gustavson reference:
 * random shapes and densities, dense tiles, both accumulators, reuse. */
#include "ref_gustavson.h"
#include "tap.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Internal entry of the CPU engine (src/kernels/spgemm_cpu.h): C = A^T*B
 * planned without forming A^T; the CPU PtAP plan uses it for P^T (AP). */
int tr_cpu_spgemm_plan_create_atb(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                                  tilerap_spgemm_plan *plan, tilerap_tile_matrix **C);

/* CPU kernel of the plans made by opts(): every case runs with each */
static tilerap_cpu_kernel g_kernel = TILERAP_CPU_KERNEL_AUTO;

static tilerap_options opts(int threshold)
{
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = TILERAP_ENGINE_CPU;
  o.dense_threshold = threshold;
  o.cpu_kernel = g_kernel;
  return o;
}

/* Plan of A*B (at = 0) or A^T*B (at = 1). */
static int plan_create(int at, const tilerap_tile_matrix *tA, const tilerap_tile_matrix *tB, const tilerap_options *o,
                       tilerap_spgemm_plan *plan, tilerap_tile_matrix **tC)
{
  return at ? tr_cpu_spgemm_plan_create_atb(tA, tB, o, plan, tC) : tilerap_spgemm_plan_create(tA, tB, o, plan, tC);
}

/* Numeric runs 2, 3 and 4 of a plan, each with new values (the RECORDED
 * kernel records on run 1, AUTO on run 2, and both replay the records
 * afterwards): every run equals the reference, and equals bit for bit
 * what a fresh tile-kernel plan computes from the same values (both
 * kernels sum in the same order). */
static void check_reruns(tilerap_spgemm_plan plan, int at, tilerap_tile_matrix *tA, tilerap_tile_matrix *tB,
                         tilerap_tile_matrix *tC, const tilerap_csr *A, const tilerap_csr *B, int threshold, const char *what)
{
  uint64_t seed = 7 + (uint64_t)at;
  tilerap_csr *A2 = ref_copy(A), *B2 = ref_copy(B);
  for (int run = 2; run <= 4; run++) {
    ref_randomize_values(A2, &seed);
    ref_randomize_values(B2, &seed);
    tilerap_tile_update_values_from_csr(tA, A2->rowptr, A2->val);
    tilerap_tile_update_values_from_csr(tB, B2->rowptr, B2->val);
    for (int64_t q = 0; q < tC->nnz; q++) tC->val[q] = NAN; /* every entry must be rewritten */
    int err = tilerap_spgemm_numeric(plan, tA, tB, tC);
    tilerap_csr *At2 = at ? ref_transpose(A2) : NULL;
    tilerap_csr *R2 = ref_spgemm(at ? At2 : A2, B2), *C2 = ref_tile_to_csr(tC);
    double e = ref_same_structure(C2, R2) ? ref_relerr(C2, R2) : INFINITY;
    tilerap_options o = opts(threshold);
    o.cpu_kernel = TILERAP_CPU_KERNEL_TILES;
    tilerap_spgemm_plan twin = NULL;
    tilerap_tile_matrix *tT = NULL;
    int same = !plan_create(at, tA, tB, &o, &twin, &tT) && !tilerap_spgemm_numeric(twin, tA, tB, tT) &&
               tT->nnz == tC->nnz && (tC->nnz == 0 || !memcmp(tT->val, tC->val, (size_t)tC->nnz * sizeof(double)));
    tap_ok(!err && e <= 1e-14 && same, "%s%s [%s, thr %d]: run %d with new values (relerr %.2e, %s the tile kernel's bits)",
           at ? "A^T*B " : "", what, tilerap_cpu_kernel_name(g_kernel), threshold, run, e, same ? "equals" : "DIFFERS from");
    tilerap_spgemm_plan_destroy(&twin);
    tilerap_tile_destroy(&tT);
    tilerap_csr_destroy(&At2); tilerap_csr_destroy(&R2); tilerap_csr_destroy(&C2);
  }
  tilerap_csr_destroy(&A2); tilerap_csr_destroy(&B2);
}

#define KN tilerap_cpu_kernel_name(g_kernel)

/* Plan info's record count: all products with RECORDED, none with TILES. */
static int recorded_ok(const tilerap_spgemm_info *info)
{
  if (info->path == TILERAP_PATH_CSR) return info->recorded == 0; /* no tile kernel runs */
  if (g_kernel == TILERAP_CPU_KERNEL_RECORDED) return info->recorded == info->flops / 2;
  if (g_kernel == TILERAP_CPU_KERNEL_TILES) return info->recorded == 0;
  return info->recorded == 0 || info->recorded == info->flops / 2;
}

/* A plan created with plan_values (steps 2 and 3 in one walk) hands out
 * C with its values: the same structure and bits as a tile-kernel plan
 * followed by a numeric run; the plan's next numeric run gives them again. */
static void check_plan_values(int at, const tilerap_tile_matrix *tA, const tilerap_tile_matrix *tB, int threshold,
                              const char *what)
{
  tilerap_options o = opts(threshold);
  o.plan_values = 1;
  tilerap_spgemm_plan plan = NULL, twin = NULL;
  tilerap_tile_matrix *tC = NULL, *tT = NULL;
  int err = plan_create(at, tA, tB, &o, &plan, &tC);
  o.plan_values = 0;
  o.cpu_kernel = TILERAP_CPU_KERNEL_TILES;
  int err2 = plan_create(at, tA, tB, &o, &twin, &tT);
  if (!err2) err2 = tilerap_spgemm_numeric(twin, tA, tB, tT);
  tilerap_spgemm_info i1 = {0}, i2 = {0};
  tilerap_spgemm_plan_info(plan, &i1);
  tilerap_spgemm_plan_info(twin, &i2);
  const int same = !err && !err2 && tilerap_tile_check(tC) == 0 && ref_same_tiles(tC, tT) && i1.flops == i2.flops &&
                   i1.pairs == i2.pairs;
  int again = 0;
  if (!err) {
    for (int64_t q = 0; q < tC->nnz; q++) tC->val[q] = NAN;
    again = !tilerap_spgemm_numeric(plan, tA, tB, tC) && ref_same_tiles(tC, tT);
  }
  tap_ok(same && again, "%s%s [%s, thr %d]: plan with values equals plan + numeric bit for bit (%s), and its next run (%s)",
         at ? "A^T*B " : "", what, KN, threshold, same ? "yes" : "NO", again ? "yes" : "NO");
  tilerap_spgemm_plan_destroy(&plan); tilerap_spgemm_plan_destroy(&twin);
  tilerap_tile_destroy(&tC); tilerap_tile_destroy(&tT);
}

/* Plans C = A*B, runs numeric, compares; then new values + numeric re-run
 * compared with a fresh reference. */
static void check_product(const tilerap_csr *A, const tilerap_csr *B, int threshold, const char *what)
{
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tB = ref_csr_to_tile(B), *tC = NULL;
  tilerap_options o = opts(threshold);
  tilerap_spgemm_plan plan = NULL;
  int err = tilerap_spgemm_plan_create(tA, tB, &o, &plan, &tC);
  if (!tap_ok(!err, "%s [%s, thr %d]: plan (%s)", what, KN, threshold, err ? tilerap_last_error() : "ok")) goto out;
  err = tilerap_spgemm_numeric(plan, tA, tB, tC);
  tap_ok(!err, "%s [%s, thr %d]: numeric", what, KN, threshold);
  tap_ok(tilerap_tile_check(tC) == 0, "%s [%s, thr %d]: C consistent (no empty tiles) %s", what, KN, threshold, tilerap_last_error());
  tilerap_csr *R = ref_spgemm(A, B), *C = ref_tile_to_csr(tC);
  double e = ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  tap_ok(e <= 1e-14, "%s [%s, thr %d]: equals reference (relerr %.2e, nnz %lld)", what, KN, threshold, e, (long long)R->nnz);
  tilerap_spgemm_info info;
  tilerap_spgemm_plan_info(plan, &info);
  int64_t ref_flops = 0;
  for (int32_t i = 0; i < A->m; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
      ref_flops += 2 * (B->rowptr[A->colidx[p] + 1] - B->rowptr[A->colidx[p]]);
  tap_ok(info.flops == ref_flops && info.c_nnz == R->nnz && info.c_tiles <= info.c_tiles_step1,
         "%s [%s, thr %d]: plan info (flops %lld, tiles %lld of %lld candidates)", what, KN, threshold, (long long)info.flops,
         (long long)info.c_tiles, (long long)info.c_tiles_step1);

  tap_ok(recorded_ok(&info), "%s [%s, thr %d]: %lld products recorded", what, tilerap_cpu_kernel_name(g_kernel),
         threshold, (long long)info.recorded);
  check_plan_values(0, tA, tB, threshold, what);
  check_reruns(plan, 0, tA, tB, tC, A, B, threshold, what);
  tilerap_csr_destroy(&R); tilerap_csr_destroy(&C);
out:
  tilerap_spgemm_plan_destroy(&plan);
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tB); tilerap_tile_destroy(&tC);
}

/* C = A^T*B through the A^T*B plan against the reference on an explicit
 * transpose, then a numeric re-run with new values. */
static void check_atb(const tilerap_csr *A, const tilerap_csr *B, int threshold, const char *what)
{
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tB = ref_csr_to_tile(B), *tC = NULL;
  tilerap_spgemm_plan plan = NULL;
  tilerap_options o = opts(threshold);
  int err = tr_cpu_spgemm_plan_create_atb(tA, tB, &o, &plan, &tC);
  if (!tap_ok(!err, "A^T*B %s [%s, thr %d]: plan (%s)", what, KN, threshold, err ? tilerap_last_error() : "ok")) goto out;
  err = tilerap_spgemm_numeric(plan, tA, tB, tC);
  tilerap_csr *At = ref_transpose(A), *R = ref_spgemm(At, B), *C = ref_tile_to_csr(tC);
  double e = ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  tilerap_spgemm_info info;
  tilerap_spgemm_plan_info(plan, &info);
  int64_t ref_flops = 0;
  for (int32_t i = 0; i < At->m; i++)
    for (int64_t p = At->rowptr[i]; p < At->rowptr[i + 1]; p++)
      ref_flops += 2 * (B->rowptr[At->colidx[p] + 1] - B->rowptr[At->colidx[p]]);
  tap_ok(!err && tilerap_tile_check(tC) == 0 && e <= 1e-14 && info.flops == ref_flops && info.c_nnz == R->nnz,
         "A^T*B %s [%s, thr %d]: equals reference on explicit A^T (relerr %.2e, nnz %lld, flops %lld/%lld)", what, KN, threshold,
         e, (long long)R->nnz, (long long)info.flops, (long long)ref_flops);
  tap_ok(recorded_ok(&info), "A^T*B %s [%s, thr %d]: %lld products recorded", what, tilerap_cpu_kernel_name(g_kernel),
         threshold, (long long)info.recorded);
  check_plan_values(1, tA, tB, threshold, what);
  check_reruns(plan, 1, tA, tB, tC, A, B, threshold, what);
  /* a B of another structure is refused */
  tap_ok(tilerap_spgemm_numeric(plan, tA, tA, tC) == TILERAP_ERR_STRUCTURE || (A->n == B->n && A->nnz == B->nnz),
         "A^T*B %s: numeric refuses another B", what);
  tilerap_csr_destroy(&At); tilerap_csr_destroy(&R); tilerap_csr_destroy(&C);
out:
  tilerap_spgemm_plan_destroy(&plan);
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tB); tilerap_tile_destroy(&tC);
}

int main(void)
{
  uint64_t seed = 2024;
  struct { int32_t m, k, n; double da, db; int empty; const char *name; } cases[] = {
      {0, 0, 0, 0, 0, 0, "0x0 * 0x0"},
      {1, 1, 1, 1, 1, 0, "1x1 * 1x1"},
      {17, 33, 9, 0.3, 0.3, 0, "17x33 * 33x9"},
      {40, 40, 40, 0.0, 0.5, 0, "empty * random"},
      {64, 64, 64, 1.0, 1.0, 0, "dense tiles"},
      {100, 37, 250, 0.05, 0.05, 4, "rectangular with empty rows"},
      {300, 300, 300, 0.01, 0.01, 0, "sparse 300^2 (empty tiles dropped)"},
      {129, 65, 31, 0.2, 0.6, 3, "mixed densities"},
      {513, 257, 129, 0.004, 0.02, 0, "very sparse odd sizes"},
  };
  int thresholds[] = {0, 192, 256};
  /* the tile kernel with each accumulator choice; the recorded kernel
   * (threshold unused) asked for and chosen by AUTO */
  const tilerap_cpu_kernel kernels[] = {TILERAP_CPU_KERNEL_TILES, TILERAP_CPU_KERNEL_RECORDED, TILERAP_CPU_KERNEL_AUTO};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    tilerap_csr *A = ref_random(cases[c].m, cases[c].k, cases[c].da, cases[c].empty, &seed);
    tilerap_csr *B = ref_random(cases[c].k, cases[c].n, cases[c].db, 0, &seed);
    for (int k = 0; k < 3; k++) {
      g_kernel = kernels[k];
      for (int t = k ? 1 : 0; t < (k ? 2 : 3); t++) check_product(A, B, thresholds[t], cases[c].name);
    }
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  g_kernel = TILERAP_CPU_KERNEL_AUTO;
  /* A*A and A*A^T of a model problem */
  {
    tilerap_csr *A = NULL;
    int32_t dims[3];
    int nd;
    tilerap_model_poisson(TILERAP_P2D9, 30, &A, dims, &nd);
    tilerap_csr *At = ref_transpose(A);
    for (int k = 0; k < 3; k++) {
      g_kernel = kernels[k];
      check_product(A, A, 192, "p2d9 A*A");
      check_product(A, At, 192, "p2d9 A*A^T");
    }
    g_kernel = TILERAP_CPU_KERNEL_AUTO;
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&At);
  }
  /* large enough for the OpenMP regions (more than 128 tile rows): the
   * fused walk's per-thread value buffers are copied into C */
  {
    tilerap_csr *A = NULL;
    int32_t dims[3];
    int nd;
    tilerap_model_poisson(TILERAP_P3D7, 21, &A, dims, &nd);
    tilerap_tile_matrix *tA = ref_csr_to_tile(A);
    for (int k = 0; k < 3; k++) {
      g_kernel = kernels[k];
      check_plan_values(0, tA, tA, 192, "p3d7 21^3 A*A");
      check_plan_values(1, tA, tA, 192, "p3d7 21^3 A^T*A");
    }
    g_kernel = TILERAP_CPU_KERNEL_AUTO;
    tilerap_tile_destroy(&tA);
    tilerap_csr_destroy(&A);
  }
  /* a candidate tile whose product is empty: A(0,0) has only column 3,
   * B(0,0) only row 5, so step 1 proposes C(0,0) and step 2 must drop it
   * (tile steps only: the CSR path has no candidates) */
  tilerap_tuning_set("TILERAP_PATH", "tiles");
  {
    tilerap_csr *A = NULL, *B = NULL;
    tilerap_csr_create(16, 32, 2, &A);
    tilerap_csr_create(32, 16, 2, &B);
    for (int i = 0; i < 16; i++) A->rowptr[i + 1] = 2;
    A->colidx[0] = 3; A->colidx[1] = 20; A->val[0] = 1.5; A->val[1] = 2.0; /* row 0: cols 3 and 20 */
    for (int i = 0; i < 32; i++) B->rowptr[i + 1] = B->rowptr[i] + (i == 5 || i == 20);
    B->colidx[0] = 7; B->val[0] = 3.0;  /* row 5 */
    B->colidx[1] = 9; B->val[1] = -1.0; /* row 20 */
    tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tB = ref_csr_to_tile(B), *tC = NULL;
    tilerap_options o = opts(192);
    tilerap_spgemm_plan plan = NULL;
    int err = tilerap_spgemm_plan_create(tA, tB, &o, &plan, &tC);
    tilerap_spgemm_info info = {0};
    if (!err) err = tilerap_spgemm_numeric(plan, tA, tB, tC);
    if (!err) tilerap_spgemm_plan_info(plan, &info);
    tap_ok(!err && info.c_tiles_step1 == 1 && info.c_tiles == 1 && tC->nnz == 1, "candidate tiles: one found, kept (%lld/%lld)",
           (long long)info.c_tiles, (long long)info.c_tiles_step1);
    tilerap_spgemm_plan_destroy(&plan); tilerap_tile_destroy(&tC);
    /* now drop column 20 from A: the only candidate is structurally empty */
    A->rowptr[1] = 1; for (int i = 1; i < 16; i++) A->rowptr[i + 1] = 1; A->nnz = 1;
    tilerap_tile_destroy(&tA);
    tA = ref_csr_to_tile(A);
    err = tilerap_spgemm_plan_create(tA, tB, &o, &plan, &tC);
    if (!err) err = tilerap_spgemm_numeric(plan, tA, tB, tC);
    if (!err) tilerap_spgemm_plan_info(plan, &info);
    tap_ok(!err && info.c_tiles_step1 == 1 && info.c_tiles == 0 && tC->num_tiles == 0 && tC->nnz == 0 &&
               tilerap_tile_check(tC) == 0,
           "empty candidate tile dropped in step 2 (%lld of %lld candidates kept)", (long long)info.c_tiles,
           (long long)info.c_tiles_step1);
    tilerap_spgemm_plan_destroy(&plan); tilerap_tile_destroy(&tC);
    o.plan_values = 1;
    err = tilerap_spgemm_plan_create(tA, tB, &o, &plan, &tC);
    if (!err) tilerap_spgemm_plan_info(plan, &info);
    tap_ok(!err && info.c_tiles == 0 && tC->num_tiles == 0 && tC->nnz == 0 && tilerap_tile_check(tC) == 0,
           "empty candidate tile dropped by the plan with values too");
    o.plan_values = 2;
    tilerap_spgemm_plan_destroy(&plan); tilerap_tile_destroy(&tC);
    tap_ok(tilerap_spgemm_plan_create(tA, tB, &o, &plan, &tC) == TILERAP_ERR_INVALID && !plan && !tC,
           "plan refuses plan_values = 2");
    tap_ok(tr_cpu_spgemm_plan_create_atb(tB, tB, &o, &plan, &tC) == TILERAP_ERR_INVALID && !plan && !tC,
           "A^T*B plan refuses plan_values = 2");
    tilerap_spgemm_plan_destroy(&plan);
    tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tB); tilerap_tile_destroy(&tC);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  tilerap_tuning_set("TILERAP_PATH", NULL);
  /* A^T*B plans (the CPU PtAP's P^T (AP) without a P^T copy) */
  {
    struct { int32_t m, k, n; double da, db; const char *name; } at[] = {
        {0, 0, 0, 0, 0, "0x0"},
        {33, 17, 9, 0.3, 0.3, "33x17 ^T * 33x9"},
        {64, 64, 64, 1.0, 1.0, "dense tiles"},
        {250, 37, 100, 0.05, 0.05, "rectangular"},
        {513, 129, 257, 0.01, 0.02, "very sparse odd sizes"},
    };
    for (size_t c = 0; c < sizeof at / sizeof at[0]; c++) {
      tilerap_csr *A = ref_random(at[c].m, at[c].k, at[c].da, 0, &seed), *B = ref_random(at[c].m, at[c].n, at[c].db, 0, &seed);
      for (int k = 0; k < 3; k++) {
        g_kernel = kernels[k];
        for (int t = k ? 1 : 0; t < (k ? 2 : 3); t++) check_atb(A, B, thresholds[t], at[c].name);
      }
      g_kernel = TILERAP_CPU_KERNEL_AUTO;
      tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
    }
    tilerap_csr *A = ref_random(40, 20, 0.2, 0, &seed), *B = ref_random(41, 20, 0.2, 0, &seed);
    tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tB = ref_csr_to_tile(B), *tC = NULL;
    tilerap_spgemm_plan plan = NULL;
    tilerap_options o = opts(192);
    tap_ok(tr_cpu_spgemm_plan_create_atb(tA, tB, &o, &plan, &tC) == TILERAP_ERR_SIZE && !plan && !tC,
           "A^T*B plan refuses A and B with different row counts");
    o.dense_threshold = 300;
    tap_ok(tr_cpu_spgemm_plan_create_atb(tA, tA, &o, &plan, &tC) == TILERAP_ERR_INVALID && !plan,
           "A^T*B plan refuses a dense threshold outside [0,256]");
    o = opts(192);
    o.cpu_kernel = (tilerap_cpu_kernel)7;
    tap_ok(tr_cpu_spgemm_plan_create_atb(tA, tA, &o, &plan, &tC) == TILERAP_ERR_INVALID && !plan,
           "A^T*B plan refuses an unknown CPU kernel");
    tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tB);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  /* one-shot API */
  {
    tilerap_csr *A = ref_random(50, 60, 0.1, 0, &seed), *B = ref_random(60, 70, 0.1, 0, &seed);
    tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tB = ref_csr_to_tile(B), *tC = NULL;
    tilerap_options o = opts(192);
    int err = tilerap_spgemm(tA, tB, &o, &tC);
    tilerap_csr *R = ref_spgemm(A, B), *C = err ? NULL : ref_tile_to_csr(tC);
    tap_ok(!err && ref_same_structure(C, R) && ref_relerr(C, R) <= 1e-14, "one-shot tilerap_spgemm");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B); tilerap_csr_destroy(&R); tilerap_csr_destroy(&C);
    tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tB); tilerap_tile_destroy(&tC);
  }
  return tap_done();
}
