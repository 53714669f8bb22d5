/* Galerkin C = P^T A P with the CUDA engine: the model hierarchies of
 * tilerap_model.h against the CPU engine (identical structure, values
 * within 1e-14) and the Gustavson reference, host-resident and device-
 * resident (device C of one level is the device A of the next), numeric
 * re-runs with new values, a non-blocking user stream, random
 * rectangular P, and the device tile transpose with its permutation. */
#include "test_gpu_common.h"
#include <cuda_runtime_api.h>
#include "engine_cuda.h" /* tr_cuda_free for the device permutation */

static void check_hierarchy(tilerap_stencil s, int32_t n, void *stream)
{
  tilerap_options oc = gpu_opts(TILERAP_ENGINE_CPU, 192), og = gpu_opts(TILERAP_ENGINE_CUDA, 192);
  og.stream = stream;
  const char *sn = tilerap_stencil_name(s);
  const char *how = stream ? "non-blocking stream" : "default stream";
  tilerap_csr *A = NULL;
  int32_t dims[3], cd[3];
  int nd;
  tilerap_model_poisson(s, n, &A, dims, &nd);
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *dA0 = gpu_to_device(hA);
  tilerap_ptap_plan pc[4] = {0}, ph[4] = {0}, pd[4] = {0};
  tilerap_tile_matrix *hP[4] = {0}, *dP[4] = {0}, *Cc[4] = {0}, *Ch[4] = {0}, *dC[4] = {0};
  tilerap_csr *Pl[4] = {0}, *Al[5] = {0};
  Al[0] = A;
  int L = 0;
  for (; L < 4 && Al[L]->m >= 500; L++) {
    tilerap_model_prolongator(Al[L], nd, dims, 2.0 / 3.0, &Pl[L], cd);
    hP[L] = ref_csr_to_tile(Pl[L]);
    dP[L] = gpu_to_device(hP[L]);
    Al[L + 1] = ref_ptap(Al[L], Pl[L]);
    const tilerap_tile_matrix *cA = L == 0 ? hA : Cc[L - 1];
    int err = tilerap_ptap_plan_create(cA, hP[L], &oc, &pc[L], &Cc[L]);
    if (!err) err = tilerap_ptap_numeric(pc[L], cA, hP[L], Cc[L]);
    if (!tap_ok(!err, "%s n=%d level %d: CPU engine", sn, n, L)) break;
    /* host-resident CUDA, chained on the host CUDA outputs */
    const tilerap_tile_matrix *gA = L == 0 ? hA : Ch[L - 1];
    err = tilerap_ptap_plan_create(gA, hP[L], &og, &ph[L], &Ch[L]);
    if (!err) { gpu_poison(Ch[L]); err = tilerap_ptap_numeric(ph[L], gA, hP[L], Ch[L]); }
    double e1 = err ? INFINITY : gpu_relerr(Ch[L], Cc[L]), e2 = err ? INFINITY : gpu_vs_ref(Ch[L], Al[L + 1]);
    int same = !err && gpu_same_tiles(Ch[L], Cc[L]);
    tap_ok(same && e1 <= 1e-14 && e2 <= 1e-14, "%s n=%d level %d (%s): host-resident %d -> %d, same tiles %d, vs CPU %.2e, vs ref %.2e %s",
           sn, n, L, how, Al[L]->m, Al[L + 1]->m, same, e1, e2, err ? tilerap_last_error() : "");
    /* device-resident, chained on device outputs */
    const tilerap_tile_matrix *dAl = L == 0 ? dA0 : dC[L - 1];
    err = tilerap_ptap_plan_create(dAl, dP[L], &og, &pd[L], &dC[L]);
    if (!err) { gpu_poison(dC[L]); err = tilerap_ptap_numeric(pd[L], dAl, dP[L], dC[L]); }
    tilerap_tile_matrix *Cd = err ? NULL : gpu_to_host(dC[L]);
    e1 = Cd ? gpu_relerr(Cd, Cc[L]) : INFINITY;
    same = Cd && gpu_same_tiles(Cd, Cc[L]);
    tap_ok(same && e1 <= 1e-14 && dC[L]->memtype == TILERAP_MEM_DEVICE,
           "%s n=%d level %d (%s): device-resident, same tiles %d, vs CPU %.2e %s", sn, n, L, how, same, e1,
           err ? tilerap_last_error() : "");
    /* plan_values: plan and first run in one call, against plan + numeric
     * (same structure, values to 1e-14: two CUDA runs of one product are
     * not bit-identical, their sums' order varies at 1e-16) */
    if (Cd) {
      tilerap_options ov = og;
      ov.plan_values = 1;
      tilerap_ptap_plan pv = NULL;
      tilerap_tile_matrix *Vh = NULL, *Vd = NULL, *Vdh = NULL;
      int ev = tilerap_ptap_plan_create(gA, hP[L], &ov, &pv, &Vh);
      const double eh = !ev && gpu_same_tiles(Vh, Ch[L]) ? gpu_relerr(Vh, Ch[L]) : INFINITY;
      tilerap_ptap_plan_destroy(&pv);
      ev = tilerap_ptap_plan_create(dAl, dP[L], &ov, &pv, &Vd);
      if (!ev) Vdh = gpu_to_host(Vd);
      const double ed = Vdh && gpu_same_tiles(Vdh, Cd) ? gpu_relerr(Vdh, Cd) : INFINITY;
      tap_ok(eh <= 1e-14 && ed <= 1e-14, "%s n=%d level %d (%s): plan with values equals plan + numeric (host-resident %.2e, device-resident %.2e)",
             sn, n, L, how, eh, ed);
      tilerap_ptap_plan_destroy(&pv);
      tilerap_tile_destroy(&Vh); tilerap_tile_destroy(&Vd); tilerap_tile_destroy(&Vdh);
    }
    tilerap_tile_destroy(&Cd);
    dims[0] = cd[0]; dims[1] = cd[1]; dims[2] = cd[2];
  }
  tap_ok(L >= 2, "%s n=%d: %d levels", sn, n, L);

  /* re-runs with new values of A (scaled) and P (random) down the hierarchy */
  uint64_t seed = 77;
  for (int64_t q = 0; q < hA->nnz; q++) hA->val[q] *= 2.0;
  for (int64_t q = 0; q < A->nnz; q++) A->val[q] *= 2.0;
  tilerap_tile_copy_values(hA, dA0);
  for (int l = 0; l < L && pd[l] && ph[l]; l++) {
    ref_randomize_values(Pl[l], &seed);
    tilerap_tile_update_values_from_csr(hP[l], Pl[l]->rowptr, Pl[l]->val);
    tilerap_tile_copy_values(hP[l], dP[l]);
    tilerap_ptap_numeric(pc[l], l == 0 ? hA : Cc[l - 1], hP[l], Cc[l]);
    tilerap_csr *R = ref_ptap(Al[l], Pl[l]);
    tilerap_csr_destroy(&Al[l + 1]);
    Al[l + 1] = R;
    gpu_poison(Ch[l]);
    int err = tilerap_ptap_numeric(ph[l], l == 0 ? hA : Ch[l - 1], hP[l], Ch[l]);
    double e1 = err ? INFINITY : gpu_relerr(Ch[l], Cc[l]), e2 = err ? INFINITY : gpu_vs_ref(Ch[l], R);
    tap_ok(e1 <= 1e-14 && e2 <= 1e-14, "%s n=%d level %d (%s): host-resident re-run, vs CPU %.2e, vs ref %.2e", sn, n, l,
           how, e1, e2);
    gpu_poison(dC[l]);
    err = tilerap_ptap_numeric(pd[l], l == 0 ? dA0 : dC[l - 1], dP[l], dC[l]);
    tilerap_tile_matrix *Cd = err ? NULL : gpu_to_host(dC[l]);
    e1 = Cd ? gpu_relerr(Cd, Cc[l]) : INFINITY;
    tap_ok(e1 <= 1e-14, "%s n=%d level %d (%s): device-resident re-run, vs CPU %.2e", sn, n, l, how, e1);
    tilerap_tile_destroy(&Cd);
  }
  for (int l = 0; l < 4; l++) {
    tilerap_ptap_plan_destroy(&pc[l]); tilerap_ptap_plan_destroy(&ph[l]); tilerap_ptap_plan_destroy(&pd[l]);
    tilerap_tile_destroy(&hP[l]); tilerap_tile_destroy(&dP[l]);
    tilerap_tile_destroy(&Cc[l]); tilerap_tile_destroy(&Ch[l]); tilerap_tile_destroy(&dC[l]);
    tilerap_csr_destroy(&Pl[l]);
  }
  for (int l = 0; l <= L && l < 5; l++) tilerap_csr_destroy(&Al[l]);
  tilerap_tile_destroy(&hA); tilerap_tile_destroy(&dA0);
}

/* C = P^T A P of given A and P (taken) with the CUDA engine against the
 * reference and the CPU engine: one-shot, then a plan with re-runs */
static void check_pair(tilerap_csr *A, tilerap_csr *P, uint64_t *seed, const char *what)
{
  tilerap_options og = gpu_opts(TILERAP_ENGINE_CUDA, 192), oc = gpu_opts(TILERAP_ENGINE_CPU, 192);
  const int32_t n = A->m, nc = P->n;
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tP = ref_csr_to_tile(P), *Cg = NULL, *Cc = NULL;
  int err = tilerap_ptap(tA, tP, &og, &Cg);
  tilerap_ptap(tA, tP, &oc, &Cc);
  tilerap_csr *R = ref_ptap(A, P);
  double e = err ? INFINITY : gpu_vs_ref(Cg, R);
  tap_ok(!err && e <= 1e-14 && gpu_same_tiles(Cg, Cc) && gpu_relerr(Cg, Cc) <= 1e-14,
         "%s: %d x %d A, %d x %d P: CUDA vs ref %.2e, same tiles as CPU %s", what, n, n, n, nc, e,
         err ? tilerap_last_error() : "");
  /* a plan: first values, then a re-run with new values of A and P (the
   * planned path of re-runs, not the one-shot one) */
  tilerap_ptap_plan G = NULL;
  tilerap_tile_matrix *Cp = NULL;
  err = tilerap_ptap_plan_create(tA, tP, &og, &G, &Cp);
  if (!err) err = tilerap_ptap_numeric(G, tA, tP, Cp);
  const double e1 = err ? INFINITY : gpu_vs_ref(Cp, R);
  ref_randomize_values(A, seed);
  ref_randomize_values(P, seed);
  tilerap_csr *R2 = ref_ptap(A, P);
  tilerap_tile_matrix *tA2 = ref_csr_to_tile(A), *tP2 = ref_csr_to_tile(P);
  if (!err) err = tilerap_ptap_numeric(G, tA2, tP2, Cp);
  if (!err) err = tilerap_ptap_numeric(G, tA2, tP2, Cp); /* a third run: the steady re-run */
  const double e2 = err ? INFINITY : gpu_vs_ref(Cp, R2);
  tap_ok(!err && e1 <= 1e-14 && e2 <= 1e-14, "%s: plan, first run vs ref %.2e, re-runs with new values vs ref %.2e %s",
         what, e1, e2, err ? tilerap_last_error() : "");
  tilerap_ptap_plan_destroy(&G);
  tilerap_tile_destroy(&Cp); tilerap_tile_destroy(&tA2); tilerap_tile_destroy(&tP2); tilerap_csr_destroy(&R2);
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP); tilerap_tile_destroy(&Cg); tilerap_tile_destroy(&Cc);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&R);
}

static void check_random(int32_t n, int32_t nc, double dA, double dP, int empty, uint64_t *seed, const char *what)
{
  tilerap_csr *A = ref_random(n, n, dA, empty, seed), *P = ref_random(n, nc, dP, empty ? empty + 1 : 0, seed);
  check_pair(A, P, seed, what);
}

/* rows of AP and C whose few tiles lie far apart (the row products'
 * column table does not span them): P's row k holds columns k % 16 and
 * far + k */
static void check_far_columns(int32_t far, uint64_t *seed)
{
  tilerap_csr *A = ref_random(32, 32, 0.3, 0, seed), *P = NULL;
  tilerap_csr_create(32, far + 32, 64, &P);
  for (int32_t k = 0; k < 32; k++) {
    P->rowptr[k + 1] = 2 * (k + 1);
    P->colidx[2 * k] = k % 16;
    P->colidx[2 * k + 1] = far + k;
    P->val[2 * k] = 1.0 + 0.25 * k;
    P->val[2 * k + 1] = -0.5 + 0.125 * k;
  }
  char what[64];
  snprintf(what, sizeof what, "P with columns %d apart", far);
  check_pair(A, P, seed, what);
}

/* The row product itself on a tile row of Z of nz tiles (a 16 x 16 X of
 * 255 entries against a 16 x 16nz Z, one diagonal per tile): a window of
 * over 2^24 items (where the entry index needs a division, not the
 * multiply), an output row far over the shared accumulator and the column
 * table.  Against the CPU engine's X * Z, with each group size. */
static void check_rows_long_z(int32_t nz, uint64_t *seed)
{
  tilerap_csr *X = NULL, *Z = NULL;
  tilerap_csr_create(16, 16, 255, &X);
  tilerap_csr_create(16, 16 * nz, (int64_t)16 * nz, &Z);
  int64_t q = 0;
  for (int32_t r = 0; r < 16; r++) {
    for (int32_t c = 0; c < 16; c++)
      if (r < 15 || c < 15) { X->colidx[q] = c; X->val[q++] = 2.0 * ref_rand01(seed) - 1.0; }
    X->rowptr[r + 1] = q;
  }
  q = 0;
  for (int32_t k = 0; k < 16; k++) {
    for (int32_t j = 0; j < nz; j++) { Z->colidx[q] = 16 * j + k; Z->val[q++] = 2.0 * ref_rand01(seed) - 1.0; }
    Z->rowptr[k + 1] = q;
  }
  tilerap_tile_matrix *hX = ref_csr_to_tile(X), *hZ = ref_csr_to_tile(Z), *hY = NULL;
  tilerap_options oc = gpu_opts(TILERAP_ENGINE_CPU, 192);
  int err = tilerap_spgemm(hX, hZ, &oc, &hY);
  tilerap_tile_matrix *dX = err ? NULL : gpu_to_device(hX), *dZ = err ? NULL : gpu_to_device(hZ);
  for (int g = 1; g <= 8 && !err; g += 7) {
    tilerap_tile_matrix *dY = gpu_to_device(hY), *Y = NULL;
    gpu_poison(dY);
    int e = tr_cuda_rows_product(dX, dX->val, NULL, dZ, dY, g, NULL);
    if (!e) Y = gpu_to_host(dY);
    const double rel = Y ? gpu_relerr(Y, hY) : INFINITY;
    tap_ok(!e && rel <= 1e-14, "row product, group %d, Z tile row of %d tiles (%lld entries in Y's row): vs CPU %.2e %s", g,
           nz, (long long)hY->nnz, rel, e ? tilerap_last_error() : "");
    tilerap_tile_destroy(&Y); tilerap_tile_destroy(&dY);
  }
  tap_ok(!err, "CPU reference of the long row product %s", err ? tilerap_last_error() : "");
  tilerap_tile_destroy(&hX); tilerap_tile_destroy(&hZ); tilerap_tile_destroy(&hY);
  tilerap_tile_destroy(&dX); tilerap_tile_destroy(&dZ);
  tilerap_csr_destroy(&X); tilerap_csr_destroy(&Z);
}

static void check_transpose(int32_t m, int32_t n, double d, uint64_t *seed)
{
  tilerap_csr *A = ref_random(m, n, d, 3, seed);
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *dA = gpu_to_device(hA), *hT = NULL, *dT = NULL;
  int64_t *hperm = NULL, *dperm = NULL;
  tilerap_tile_transpose(hA, &hT, &hperm);
  int err = tilerap_tile_transpose(dA, &dT, &dperm);
  int ok = !err;
  if (ok) {
    tilerap_tile_matrix *T = gpu_to_host(dT);
    int64_t *p = malloc((size_t)(hA->nnz ? hA->nnz : 1) * sizeof *p);
    cudaMemcpy(p, dperm, (size_t)hA->nnz * sizeof *p, cudaMemcpyDeviceToHost);
    ok = gpu_same_tiles(T, hT) && gpu_relerr(T, hT) == 0.0 && (!hA->nnz || !memcmp(p, hperm, (size_t)hA->nnz * sizeof *p)) &&
         tilerap_tile_check(T) == 0;
    free(p);
    tilerap_tile_destroy(&T);
  }
  tap_ok(ok, "device transpose of %d x %d (density %.3f) equals the CPU's, permutation included %s", m, n, d,
         err ? tilerap_last_error() : "");
  free(hperm);
  tilerap_tile_destroy(&hA); tilerap_tile_destroy(&dA); tilerap_tile_destroy(&hT); tilerap_tile_destroy(&dT);
  if (dperm) tr_cuda_free(dperm); /* allocated by the library's device allocator */
  tilerap_csr_destroy(&A);
}

/* An unknown TILERAP_PTAP (or TILERAP_PTAP_KERNEL) is an error naming the
 * knob, not a silent default, and leaves the knob as it was */
static void check_bad_mode(const char *var)
{
  const int bad = tilerap_tuning_set(var, "fastest");
  tap_ok(bad == TILERAP_ERR_INVALID && strstr(tilerap_last_error(), var), "%s=fastest -> invalid argument (%s)", var,
         tilerap_last_error());
  uint64_t seed = 99;
  tilerap_csr *A = ref_random(40, 40, 0.1, 0, &seed), *P = ref_random(40, 9, 0.2, 0, &seed);
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hP = ref_csr_to_tile(P), *C = NULL;
  tilerap_options o = gpu_opts(TILERAP_ENGINE_CUDA, 192);
  tilerap_ptap_plan G = NULL;
  const int err = tilerap_ptap_plan_create(hA, hP, &o, &G, &C);
  tap_ok(!err, "%s: a plan after the refused value (%s)", var, err ? tilerap_last_error() : "ok");
  tilerap_ptap_plan_destroy(&G);
  tilerap_tile_destroy(&C); tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hP);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
}

/* random products: odd sizes, empty rows and matrices, rectangular and
 * dense P, and the row products' limits */
static void check_random_set(int quick, uint64_t *seed)
{
  check_random(0, 0, 0, 0, 0, seed, "empty 0x0");
  check_random(1, 1, 1, 1, 0, seed, "1x1");
  check_random(17, 33, 0.2, 0.2, 0, seed, "P wider than A");
  check_random(100, 7, 0.05, 0.3, 0, seed, "narrow P");
  check_random(333, 101, 0.02, 0.03, 5, seed, "odd sizes with empty rows");
  check_random(64, 64, 1.0, 1.0, 0, seed, "dense");
  check_random(200, 50, 0.0, 0.1, 0, seed, "A all empty");
  /* the row products' limits (with TILERAP_PTAP_KERNEL=rows): rows of AP
   * and C over the shared accumulator (summed in global memory), rows of
   * more output tiles than the column table takes or spanning more
   * columns than it covers (binary search), X tile rows longer than a
   * window of 32 tiles a warp; with TILERAP_ROWS_GROUP=1 and 8
   * (bench/gpu_session.sh paths) each limit is crossed by both group
   * sizes */
  check_random(96, 96, 1.0, 1.0, 0, seed, "dense 96: rows over the accumulator");
  check_random(40, 1100, 0.5, 0.5, 0, seed, "wide P: rows of over 64 tiles");
  check_random(60, 5000, 0.3, 0.01, 0, seed, "P of 5000 columns: rows of many tiles far apart");
  check_far_columns(7000, seed);
  /* many products per C entry: the hit kernel sums runs of lanes with the
   * same slot before its atomics (chunks of >= 8 hits a slot) */
  check_random(1000, 1, 0.2, 1.0, 0, seed, "one coarse column: every product of A's rows into one C entry");
  check_random(1200, 3, 0.15, 0.6, 7, seed, "three coarse columns, empty rows: runs of one slot and of mixed slots");
  if (!quick) check_random(4200, 300, 0.05, 0.01, 0, seed, "long tile rows of A: several windows a warp");
}

int main(int argc, char **argv)
{
  gpu_skip_without_device();
  int quick = argc > 1 && !strcmp(argv[1], "--quick");
  uint64_t seed = 4712;
  check_transpose(0, 5, 0.1, &seed);
  check_transpose(37, 101, 0.1, &seed);
  check_transpose(300, 17, 0.3, &seed);
  check_transpose(64, 64, 1.0, &seed);
  check_transpose(3000, 2000, 0.005, &seed); /* 23500 tiles: the sorted tile order */
  check_hierarchy(TILERAP_P2D5, 100, NULL); /* 2 levels: 10000 -> 1156 -> 144 */
  if (!quick) {
    check_hierarchy(TILERAP_P2D9, 80, NULL);
    check_hierarchy(TILERAP_P3D7, 23, NULL);
    check_hierarchy(TILERAP_P3D27, 25, NULL);
    cudaStream_t st;
    if (tap_ok(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess, "non-blocking stream created")) {
      check_hierarchy(TILERAP_P3D7, 30, st);
      cudaStreamDestroy(st);
    }
  }
  {
    /* the large levels' way on small ones (auto above the threshold:
     * first values by scatter, re-runs by the hits, P^T * AP's reading
     * P's values through them), re-runs with new values of P included */
    gpu_knob_set("TILERAP_PTAP_SCATTER_MACS", "0");
    check_hierarchy(TILERAP_P2D5, 100, NULL);
    if (!quick) check_hierarchy(TILERAP_P3D7, 23, NULL);
    gpu_knob_set("TILERAP_PTAP_SCATTER_MACS", NULL);
  }
  check_random_set(quick, &seed);
  {
    /* the row products on every size (auto takes them for large halves
     * only); bench/gpu_session.sh runs this with each group size too */
    gpu_knob_set("TILERAP_PTAP_KERNEL", "rows");
    check_hierarchy(TILERAP_P2D5, 100, NULL);
    if (!quick) check_hierarchy(TILERAP_P3D7, 23, NULL);
    check_random_set(quick, &seed);
    gpu_knob_set("TILERAP_PTAP_KERNEL", NULL);
  }
  {
    /* step 1's row sort with dense candidates on every product (auto
     * takes it above 2^18 pairs: the level-0 sized hierarchy below); P^T
     * (AP)'s tile rows of hundreds of pairs take its block kernel */
    gpu_knob_set("TILERAP_STEP1_SORT", "compact");
    check_hierarchy(TILERAP_P2D5, 100, NULL);
    if (!quick) check_hierarchy(TILERAP_P3D7, 30, NULL);
    gpu_knob_set("TILERAP_STEP1_SORT", NULL);
    if (!quick) check_hierarchy(TILERAP_P3D7, 64, NULL);
  }
  check_rows_long_z(quick ? 600 : 70000, &seed);
  check_bad_mode("TILERAP_PTAP");
  check_bad_mode("TILERAP_PTAP_KERNEL");
  return tap_done();
}
