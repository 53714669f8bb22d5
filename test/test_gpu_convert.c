/* CSR <-> tile conversions on the device against the host conversion and
 * the input CSR, bit for bit: random matrices with odd and rectangular
 * sizes, empty rows and tiles, dense tiles, rows spanning many tiles,
 * empty and degenerate shapes, a model Poisson matrix and prolongator;
 * int64 and int32 row pointers, CSR in host and in device memory; the
 * values-only moves both ways (outputs poisoned first); structure of a
 * device product; and the error cases, with the host's codes and
 * messages and nothing left behind. */
#include "test_gpu_common.h"
#include <cuda_runtime_api.h>


static void *dup_to_device(const void *h, size_t bytes)
{
  void *d = NULL;
  if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) abort();
  if (bytes && cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) abort();
  return d;
}
static void from_device(void *h, const void *d, size_t bytes)
{
  if (bytes && cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) abort();
}

static int32_t *rp_to_i32(const tilerap_csr *A)
{
  int32_t *r = malloc(((size_t)A->m + 1) * sizeof *r);
  for (int32_t i = 0; i <= A->m; i++) r[i] = (int32_t)A->rowptr[i];
  return r;
}

/* Same structure and identical values (conversions move values, no arithmetic). */
static int same_exact(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y)
{
  return gpu_same_tiles(X, Y) && (!X->nnz || !memcmp(X->val, Y->val, (size_t)X->nnz * sizeof(double)));
}

/* Device tile matrix -> CSR (host arrays, int64 and int32; device arrays)
 * against the CSR A it must reproduce. */
static void check_to_csr(const tilerap_tile_matrix *D, const tilerap_csr *A, const char *what)
{
  size_t m1 = (size_t)A->m + 1, nz = (size_t)A->nnz;
  int64_t *rp = malloc(m1 * sizeof *rp);
  int32_t *rp32 = malloc(m1 * sizeof *rp32), *col = malloc((nz + 1) * sizeof *col);
  double *val = malloc((nz + 1) * sizeof *val);
  for (size_t q = 0; q < nz; q++) val[q] = NAN;
  int err = tilerap_tile_to_csr_device(D, rp, col, val, TILERAP_MEM_HOST);
  tap_ok(!err && !memcmp(rp, A->rowptr, m1 * sizeof *rp) && (!nz || !memcmp(col, A->colidx, nz * sizeof *col)) &&
             (!nz || !memcmp(val, A->val, nz * sizeof *val)),
         "%s: device tile -> host CSR (int64) reproduces the input (%s)", what, err ? tilerap_last_error() : "ok");
  memset(col, 0xff, (nz + 1) * sizeof *col);
  err = tilerap_tile_to_csr_device_i32(D, rp32, col, NULL, TILERAP_MEM_HOST);
  int ok = !err && (!nz || !memcmp(col, A->colidx, nz * sizeof *col));
  for (size_t i = 0; i < m1 && ok; i++) ok = rp32[i] == A->rowptr[i];
  tap_ok(ok, "%s: device tile -> host CSR (int32, structure only)", what);

  /* device outputs */
  int64_t *drp = NULL;
  cudaMalloc((void **)&drp, m1 * sizeof *drp);
  int32_t *drp32 = NULL, *dcol = NULL;
  double *dval = NULL;
  cudaMalloc((void **)&drp32, m1 * sizeof *drp32);
  cudaMalloc((void **)&dcol, (nz + 1) * sizeof *dcol);
  cudaMalloc((void **)&dval, (nz + 1) * sizeof *dval);
  err = tilerap_tile_to_csr_device(D, drp, dcol, dval, TILERAP_MEM_DEVICE);
  if (!err) err = tilerap_tile_to_csr_device_i32(D, drp32, NULL, NULL, TILERAP_MEM_DEVICE);
  cudaDeviceSynchronize();
  memset(rp, 0, m1 * sizeof *rp); memset(col, 0, (nz + 1) * sizeof *col);
  for (size_t q = 0; q < nz; q++) val[q] = NAN;
  from_device(rp, drp, m1 * sizeof *rp);
  from_device(rp32, drp32, m1 * sizeof *rp32);
  from_device(col, dcol, nz * sizeof *col);
  from_device(val, dval, nz * sizeof *val);
  ok = !err && !memcmp(rp, A->rowptr, m1 * sizeof *rp) && (!nz || !memcmp(col, A->colidx, nz * sizeof *col)) &&
       (!nz || !memcmp(val, A->val, nz * sizeof *val));
  for (size_t i = 0; i < m1 && ok; i++) ok = rp32[i] == A->rowptr[i];
  tap_ok(ok, "%s: device tile -> device CSR (int64 + int32)", what);
  cudaFree(drp); cudaFree(drp32); cudaFree(dcol); cudaFree(dval);
  free(rp); free(rp32); free(col); free(val);
}

/* New values both ways: CSR -> tile values and tile -> CSR values, host
 * and device arrays, against the host values refresh of H. */
static void check_values(tilerap_tile_matrix *D, tilerap_tile_matrix *H, const tilerap_csr *A, uint64_t *seed,
                         const char *what)
{
  tilerap_csr *A2 = ref_copy(A);
  size_t nz = (size_t)A->nnz;
  for (int pass = 0; pass < 2; pass++) {
    tilerap_memtype mem = pass ? TILERAP_MEM_DEVICE : TILERAP_MEM_HOST;
    const char *where = pass ? "device" : "host";
    ref_randomize_values(A2, seed);
    tilerap_tile_update_values_from_csr(H, A2->rowptr, A2->val);
    gpu_poison(D);
    double *dv = pass ? dup_to_device(A2->val, nz * sizeof(double)) : NULL;
    int err = tilerap_tile_update_values_from_csr_device(D, pass ? dv : A2->val, mem);
    tilerap_tile_matrix *Dh = gpu_to_host(D);
    tap_ok(!err && same_exact(Dh, H), "%s: values refresh from %s CSR values equals the host refresh (%s)", what,
           where, err ? tilerap_last_error() : "ok");
    tilerap_tile_destroy(&Dh);
    double *out = malloc((nz + 1) * sizeof *out);
    for (size_t q = 0; q < nz; q++) out[q] = NAN;
    if (pass) {
      cudaMemset(dv, 0xff, nz * sizeof(double));
      err = tilerap_tile_to_csr_values_device(D, dv, mem);
      cudaDeviceSynchronize();
      from_device(out, dv, nz * sizeof(double));
    } else err = tilerap_tile_to_csr_values_device(D, out, mem);
    tap_ok(!err && (!nz || !memcmp(out, A2->val, nz * sizeof *out)), "%s: values to %s CSR order equal the CSR values",
           what, where);
    free(out);
    if (dv) cudaFree(dv);
  }
  tilerap_csr_destroy(&A2);
}

static void check_matrix(const tilerap_csr *A, const char *what, uint64_t *seed)
{
  tilerap_tile_matrix *H = NULL, *D = NULL, *Dh = NULL;
  size_t m1 = (size_t)A->m + 1, nz = (size_t)A->nnz;
  int err = tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &H);
  if (!tap_ok(!err, "%s (%d x %d, %lld entries): host conversion", what, A->m, A->n, (long long)A->nnz)) return;

  /* host CSR, int64 */
  err = tilerap_tile_from_csr_device(A->m, A->n, A->rowptr, A->colidx, A->val, TILERAP_MEM_HOST, &D);
  if (tap_ok(!err && D && D->memtype == TILERAP_MEM_DEVICE, "%s: host CSR (int64) -> device tiles (%s)", what,
             err ? tilerap_last_error() : "ok")) {
    Dh = gpu_to_host(D);
    tap_ok(tilerap_tile_check(Dh) == 0 && same_exact(Dh, H), "%s: identical to the host conversion (%lld tiles)", what,
           (long long)H->num_tiles);
    tilerap_tile_destroy(&Dh);
    check_to_csr(D, A, what);
    check_values(D, H, A, seed, what);
  }
  tilerap_tile_destroy(&D);
  tilerap_tile_destroy(&H);
  tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &H);

  /* host CSR, int32 */
  int32_t *rp32 = rp_to_i32(A);
  err = tilerap_tile_from_csr_device_i32(A->m, A->n, rp32, A->colidx, A->val, TILERAP_MEM_HOST, &D);
  if (!err) Dh = gpu_to_host(D);
  tap_ok(!err && same_exact(Dh, H), "%s: host CSR (int32) -> device tiles identical", what);
  tilerap_tile_destroy(&Dh);
  tilerap_tile_destroy(&D);

  /* device CSR, both widths; values NULL gives zeros */
  int64_t *drp = dup_to_device(A->rowptr, m1 * sizeof(int64_t));
  int32_t *drp32 = dup_to_device(rp32, m1 * sizeof(int32_t));
  int32_t *dcol = dup_to_device(A->colidx, nz * sizeof(int32_t));
  double *dval = dup_to_device(A->val, nz * sizeof(double));
  err = tilerap_tile_from_csr_device(A->m, A->n, drp, dcol, dval, TILERAP_MEM_DEVICE, &D);
  if (!err) Dh = gpu_to_host(D);
  tap_ok(!err && same_exact(Dh, H), "%s: device CSR (int64) -> device tiles identical (%s)", what,
         err ? tilerap_last_error() : "ok");
  tilerap_tile_destroy(&Dh);
  if (D) check_values(D, H, A, seed, "  ... built from device CSR");
  tilerap_tile_destroy(&D);
  tilerap_tile_destroy(&H);
  tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, NULL, &H);
  err = tilerap_tile_from_csr_device_i32(A->m, A->n, drp32, dcol, NULL, TILERAP_MEM_DEVICE, &D);
  if (!err) Dh = gpu_to_host(D);
  tap_ok(!err && same_exact(Dh, H), "%s: device CSR (int32), no values -> identical, zeros", what);
  tilerap_tile_destroy(&Dh);
  tilerap_tile_destroy(&D);
  tilerap_tile_destroy(&H);

  /* rows shuffled (hypre-like order): the unsorted conversion sorts them */
  tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &H);
  int32_t *scol = malloc((nz ? nz : 1) * sizeof *scol);
  double *sval = malloc((nz ? nz : 1) * sizeof *sval);
  if (nz) { memcpy(scol, A->colidx, nz * sizeof *scol); memcpy(sval, A->val, nz * sizeof *sval); }
  for (int32_t i = 0; i < A->m; i++)
    for (int64_t k = A->rowptr[i + 1] - 1; k > A->rowptr[i]; k--) {
      *seed ^= *seed << 13; *seed ^= *seed >> 7; *seed ^= *seed << 17;
      int64_t q = A->rowptr[i] + (int64_t)(*seed % (uint64_t)(k - A->rowptr[i] + 1));
      int32_t tc = scol[k]; scol[k] = scol[q]; scol[q] = tc;
      double tv = sval[k]; sval[k] = sval[q]; sval[q] = tv;
    }
  err = tilerap_tile_from_unsorted_csr_device(A->m, A->n, A->rowptr, scol, sval, TILERAP_MEM_HOST, &D);
  if (!err) Dh = gpu_to_host(D);
  tap_ok(!err && tilerap_tile_check(Dh) == 0 && same_exact(Dh, H),
         "%s: host CSR, shuffled rows (int64) -> device tiles identical to the sorted conversion (%s)", what,
         err ? tilerap_last_error() : "ok");
  tilerap_tile_destroy(&Dh);
  tilerap_tile_destroy(&D);
  int32_t *dscol = dup_to_device(scol, nz * sizeof(int32_t));
  double *dsval = dup_to_device(sval, nz * sizeof(double));
  err = tilerap_tile_from_unsorted_csr_device_i32(A->m, A->n, drp32, dscol, dsval, TILERAP_MEM_DEVICE, &D);
  if (!err) Dh = gpu_to_host(D);
  tap_ok(!err && same_exact(Dh, H), "%s: device CSR, shuffled rows (int32) -> identical (%s)", what,
         err ? tilerap_last_error() : "ok");
  tilerap_tile_destroy(&Dh);
  tilerap_tile_destroy(&D);
  tilerap_tile_destroy(&H);
  tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, NULL, &H);
  err = tilerap_tile_from_unsorted_csr_device_i32(A->m, A->n, rp32, scol, NULL, TILERAP_MEM_HOST, &D);
  if (!err) Dh = gpu_to_host(D);
  tap_ok(!err && same_exact(Dh, H), "%s: host CSR, shuffled rows, no values -> identical, zeros", what);
  tilerap_tile_destroy(&Dh);
  tilerap_tile_destroy(&D);
  cudaFree(dscol); cudaFree(dsval);
  free(scol); free(sval);

  cudaFree(drp); cudaFree(drp32); cudaFree(dcol); cudaFree(dval);
  free(rp32);
  tilerap_tile_destroy(&H);
}

/* C of a device product: its CSR from the device equals the host one. */
static void check_product_structure(uint64_t *seed)
{
  tilerap_csr *a = ref_random(333, 170, 0.03, 7, seed), *b = ref_random(170, 95, 0.05, 0, seed);
  tilerap_tile_matrix *hA = ref_csr_to_tile(a), *hB = ref_csr_to_tile(b);
  tilerap_tile_matrix *dA = gpu_to_device(hA), *dB = gpu_to_device(hB), *dC = NULL;
  tilerap_options og = gpu_opts(TILERAP_ENGINE_CUDA, 192);
  int err = tilerap_spgemm(dA, dB, &og, &dC);
  if (tap_ok(!err && dC->memtype == TILERAP_MEM_DEVICE, "device product for the structure test")) {
    tilerap_tile_matrix *hC = gpu_to_host(dC);
    tilerap_csr *R = ref_tile_to_csr(hC);
    check_to_csr(dC, R, "device product C");
    tilerap_csr_destroy(&R);
    tilerap_tile_destroy(&hC);
  }
  tilerap_tile_destroy(&dC);
  tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dB); tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB);
  tilerap_csr_destroy(&a); tilerap_csr_destroy(&b);
}

/* Error: the device call gives the host call's code and message, no matrix. */
static void check_error(int32_t m, int32_t n, const int64_t *rp, const int32_t *col, const double *val,
                        const char *what)
{
  tilerap_tile_matrix *H = NULL, *D = (tilerap_tile_matrix *)1;
  int eh = tilerap_tile_from_csr(m, n, rp, col, val, &H);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", tilerap_last_error());
  int ed = tilerap_tile_from_csr_device(m, n, rp, col, val, TILERAP_MEM_HOST, &D);
  tap_ok(eh != 0 && ed == eh && D == NULL && !strcmp(msg, tilerap_last_error()),
         "%s: host CSR -> %s, same message, no matrix (\"%s\")", what, tilerap_error_string(ed), tilerap_last_error());
  /* the same CSR in device memory */
  if (rp && m >= 0) {
    int64_t nnz = rp[m] > 0 ? rp[m] : 0;
    int64_t *drp = dup_to_device(rp, ((size_t)m + 1) * sizeof *drp);
    int32_t *dcol = col ? dup_to_device(col, (size_t)nnz * sizeof *dcol) : NULL;
    double *dval = val ? dup_to_device(val, (size_t)nnz * sizeof *val) : NULL;
    D = (tilerap_tile_matrix *)1;
    ed = tilerap_tile_from_csr_device(m, n, drp, dcol, dval, TILERAP_MEM_DEVICE, &D);
    tap_ok(ed == eh && D == NULL && !strcmp(msg, tilerap_last_error()), "%s: device CSR -> same code and message", what);
    cudaFree(drp);
    if (dcol) cudaFree(dcol);
    if (dval) cudaFree(dval);
  }
  tilerap_tile_destroy(&H);
}

static void check_errors(void)
{
  int64_t rp[4] = {0, 2, 3, 5};
  int32_t sorted[5] = {0, 2, 1, 0, 2}, unsorted[5] = {2, 0, 1, 0, 2}, dup[5] = {0, 2, 1, 1, 1},
          range[5] = {0, 2, 1, 0, 3}, neg[5] = {0, 2, -1, 0, 2};
  double v[5] = {1, 2, 3, 4, 5};
  int64_t bad_rp[4] = {0, 3, 2, 5}, bad_first[4] = {1, 2, 3, 5};
  check_error(3, 3, rp, unsorted, v, "unsorted columns");
  check_error(3, 3, rp, dup, v, "duplicate column");
  check_error(3, 3, rp, range, v, "column out of range");
  check_error(3, 3, rp, neg, v, "negative column");
  check_error(3, 3, bad_rp, sorted, v, "decreasing row pointers");
  check_error(3, 3, bad_first, sorted, v, "rowptr[0] != 0");
  check_error(-1, 3, rp, sorted, v, "negative size");
  check_error(3, 3, NULL, sorted, v, "NULL row pointers");
  check_error(3, 3, rp, NULL, v, "NULL column indices");
  EXPECT(tilerap_tile_from_csr_device(3, 3, rp, sorted, v, TILERAP_MEM_HOST, NULL), TILERAP_ERR_NULL, "NULL output");
  tilerap_tile_matrix *T = NULL;
  EXPECT(tilerap_tile_from_csr_device(3, 3, rp, sorted, v, (tilerap_memtype)7, &T), TILERAP_ERR_INVALID,
         "unknown memory type");
  /* a long unsorted row far down a bigger matrix: the first bad row is named */
  {
    uint64_t seed = 3;
    tilerap_csr *a = ref_random(1000, 700, 0.02, 0, &seed);
    int32_t r = 777;
    if (a->rowptr[r + 1] - a->rowptr[r] >= 2) {
      int32_t *c = a->colidx + a->rowptr[r];
      int32_t t = c[0]; c[0] = c[1]; c[1] = t;
      check_error(a->m, a->n, a->rowptr, a->colidx, a->val, "1000 x 700 with row 777 unsorted");
    }
    tilerap_csr_destroy(&a);
  }
  /* to CSR */
  tilerap_tile_matrix *H = NULL;
  tilerap_tile_from_csr(3, 3, rp, sorted, v, &H);
  int64_t out[4];
  EXPECT(tilerap_tile_to_csr_device(H, out, NULL, NULL, TILERAP_MEM_HOST), TILERAP_ERR_MEMTYPE,
         "host tile matrix to the device CSR conversion");
  EXPECT(tilerap_tile_to_csr_values_device(H, v, TILERAP_MEM_HOST), TILERAP_ERR_MEMTYPE, "values of a host tile matrix");
  EXPECT(tilerap_tile_update_values_from_csr_device(H, v, TILERAP_MEM_HOST), TILERAP_ERR_MEMTYPE,
         "values refresh of a host tile matrix");
  EXPECT(tilerap_tile_to_csr_device(NULL, out, NULL, NULL, TILERAP_MEM_HOST), TILERAP_ERR_NULL, "NULL tile matrix");
  tilerap_tile_matrix *D = gpu_to_device(H);
  EXPECT(tilerap_tile_to_csr_values_device(D, NULL, TILERAP_MEM_HOST), TILERAP_ERR_NULL, "NULL output values");
  EXPECT(tilerap_tile_update_values_from_csr_device(D, NULL, TILERAP_MEM_HOST), TILERAP_ERR_NULL, "NULL input values");
  /* 2^31 entries and more do not fit int32 row pointers: refused before any array is touched */
  tilerap_tile_matrix big = *D;
  big.nnz = 3000000000LL;
  int32_t rp32[4];
  EXPECT(tilerap_tile_to_csr_device_i32(&big, rp32, NULL, NULL, TILERAP_MEM_HOST), TILERAP_ERR_OVERFLOW,
         "3e9 entries into int32 row pointers");
  tilerap_tile_destroy(&D);
  tilerap_tile_destroy(&H);
}

/* The MATSEQTILE flow with the CUDA engine, without PETSc: operands from
 * host CSR straight to device tiles, device Galerkin plan, C's CSR
 * structure and values down to host arrays; then new values of A (values
 * refresh on the device, numeric, values only down) and the next level with
 * the device C as its A.  Against the Gustavson reference. */
static void check_galerkin_flow(void)
{
  tilerap_csr *A = NULL, *P = NULL, *P1 = NULL;
  int32_t dims[3], cd[3], cd1[3];
  int nd;
  tilerap_model_poisson(TILERAP_P3D7, 27, &A, dims, &nd);
  tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd);
  tilerap_options og = gpu_opts(TILERAP_ENGINE_CUDA, 192);
  tilerap_tile_matrix *dA = NULL, *dP = NULL, *dC = NULL, *dP1 = NULL, *dC1 = NULL;
  tilerap_ptap_plan plan = NULL, plan1 = NULL;
  int32_t *arp = rp_to_i32(A), *prp = rp_to_i32(P);
  int err = tilerap_tile_from_csr_device_i32(A->m, A->n, arp, A->colidx, A->val, TILERAP_MEM_HOST, &dA);
  if (!err) err = tilerap_tile_from_csr_device_i32(P->m, P->n, prp, P->colidx, P->val, TILERAP_MEM_HOST, &dP);
  if (!err) err = tilerap_ptap_plan_create(dA, dP, &og, &plan, &dC);
  if (!tap_ok(!err && dC->memtype == TILERAP_MEM_DEVICE, "flow: device operands from host CSR, device plan (%s)",
              err ? tilerap_last_error() : "ok"))
    goto out;
  tilerap_csr *C = NULL;
  tilerap_csr_create(dC->m, dC->n, dC->nnz, &C);
  int32_t *crp = malloc(((size_t)C->m + 1) * sizeof *crp);
  err = tilerap_tile_to_csr_device_i32(dC, crp, C->colidx, NULL, TILERAP_MEM_HOST);
  for (int32_t i = 0; i <= C->m; i++) C->rowptr[i] = crp[i];
  uint64_t seed = 77;
  for (int round = 0; round < 3 && !err; round++) {
    if (round) { /* new values of A, same pattern */
      ref_randomize_values(A, &seed);
      err = tilerap_tile_update_values_from_csr_device(dA, A->val, TILERAP_MEM_HOST);
    }
    for (int64_t q = 0; q < C->nnz; q++) C->val[q] = NAN;
    if (!err) err = tilerap_ptap_numeric(plan, dA, dP, dC);
    if (!err) err = tilerap_tile_to_csr_values_device(dC, C->val, TILERAP_MEM_HOST);
    tilerap_csr *R = ref_ptap(A, P);
    double e = !err && ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
    tap_ok(e <= 1e-14, "flow round %d: C's CSR from the device vs reference (relerr %.2e)", round, e);
    tilerap_csr_destroy(&R);
  }
  /* next level: the device C is the next A as it stands */
  tilerap_model_prolongator(C, nd, cd, 2.0 / 3.0, &P1, cd1);
  err = tilerap_tile_from_csr_device(P1->m, P1->n, P1->rowptr, P1->colidx, P1->val, TILERAP_MEM_HOST, &dP1);
  if (!err) err = tilerap_ptap_plan_create(dC, dP1, &og, &plan1, &dC1);
  if (!err) err = tilerap_ptap_numeric(plan1, dC, dP1, dC1);
  if (tap_ok(!err, "flow: next level on the device C (%s)", err ? tilerap_last_error() : "ok")) {
    tilerap_csr *C1 = NULL;
    tilerap_csr_create(dC1->m, dC1->n, dC1->nnz, &C1);
    err = tilerap_tile_to_csr_device(dC1, C1->rowptr, C1->colidx, C1->val, TILERAP_MEM_HOST);
    tilerap_csr *R1 = ref_ptap(C, P1);
    double e = !err && ref_same_structure(C1, R1) ? ref_relerr(C1, R1) : INFINITY;
    tap_ok(e <= 1e-14, "flow: level 2 CSR from the device vs reference (relerr %.2e)", e);
    tilerap_csr_destroy(&R1);
    tilerap_csr_destroy(&C1);
  }
  tilerap_ptap_plan_destroy(&plan1);
  tilerap_tile_destroy(&dC1);
  tilerap_tile_destroy(&dP1);
  tilerap_csr_destroy(&P1);
  free(crp);
  tilerap_csr_destroy(&C);
out:
  tilerap_ptap_plan_destroy(&plan);
  tilerap_tile_destroy(&dC);
  tilerap_tile_destroy(&dA);
  tilerap_tile_destroy(&dP);
  free(arp); free(prp);
  tilerap_csr_destroy(&A);
  tilerap_csr_destroy(&P);
}

/* Diagonal-first CSR (hypre's diag-block layout) against the sorted CSR
 * rotated on the host; rows without a diagonal refused before any output. */
static void diag_first_ref(const tilerap_csr *A, int32_t *col, double *val)
{
  for (int32_t i = 0; i < A->m; i++) {
    int64_t b = A->rowptr[i], e = A->rowptr[i + 1], p = b;
    while (p < e && A->colidx[p] != i) p++;
    int64_t q = b;
    if (p < e) { col[q] = i; val[q++] = A->val[p]; }
    for (int64_t k = b; k < e; k++)
      if (k != p) { col[q] = A->colidx[k]; val[q++] = A->val[k]; }
  }
}

static void check_diag_first_one(const tilerap_csr *A, const char *what)
{
  const size_t m1 = (size_t)A->m + 1, nz = (size_t)A->nnz;
  tilerap_tile_matrix *D = NULL;
  int err = tilerap_tile_from_csr_device(A->m, A->n, A->rowptr, A->colidx, A->val, TILERAP_MEM_HOST, &D);
  int32_t *rc = malloc(nz * sizeof *rc + 4), *rp = malloc(m1 * sizeof *rp), *col = malloc(nz * sizeof *col + 4);
  double *rv = malloc(nz * sizeof *rv + 8), *val = malloc(nz * sizeof *val + 8);
  diag_first_ref(A, rc, rv);
  int ok_rp = 1;
  if (!err) err = tilerap_tile_to_csr_device_diag_first_i32(D, rp, col, val, TILERAP_MEM_HOST);
  for (size_t i = 0; !err && i < m1; i++) ok_rp &= rp[i] == (int32_t)A->rowptr[i];
  tap_ok(!err && ok_rp && !memcmp(col, rc, nz * sizeof *col) && !memcmp(val, rv, nz * sizeof *val),
         "%s: diagonal-first CSR into host arrays equals the sorted CSR with each diagonal moved first (%s)", what,
         err ? tilerap_last_error() : "ok");
  if (!err) { /* columns only */
    memset(col, 0xff, nz * sizeof *col);
    err = tilerap_tile_to_csr_device_diag_first_i32(D, rp, col, NULL, TILERAP_MEM_HOST);
    tap_ok(!err && !memcmp(col, rc, nz * sizeof *col), "%s: ... columns only, the same columns (%s)", what,
           err ? tilerap_last_error() : "ok");
  }
  /* device arrays */
  int32_t *drp = malloc(m1 * sizeof *drp), *dcol = NULL;
  double *dv = NULL;
  int32_t *gp = dup_to_device(rp, m1 * sizeof *rp), *gc = dup_to_device(col, nz * sizeof *col + 4);
  double *gv = dup_to_device(val, nz * sizeof *val + 8);
  /* sentinels: a call that wrote nothing must not pass */
  cudaMemset(gp, 0xff, m1 * sizeof *rp);
  cudaMemset(gc, 0xff, nz * sizeof *col + 4);
  cudaMemset(gv, 0xff, nz * sizeof *val + 8);
  if (!err) err = tilerap_tile_to_csr_device_diag_first_i32(D, gp, gc, gv, TILERAP_MEM_DEVICE);
  dcol = malloc(nz * sizeof *dcol + 4);
  dv = malloc(nz * sizeof *dv + 8);
  from_device(drp, gp, m1 * sizeof *drp);
  from_device(dcol, gc, nz * sizeof *dcol + 4);
  from_device(dv, gv, nz * sizeof *dv + 8);
  tap_ok(!err && !memcmp(drp, rp, m1 * sizeof *rp) && !memcmp(dcol, rc, nz * sizeof *dcol) &&
             !memcmp(dv, rv, nz * sizeof *dv),
         "%s: diagonal-first CSR into device arrays, identical (%s)", what, err ? tilerap_last_error() : "ok");
  cudaFree(gp); cudaFree(gc); cudaFree(gv);
  tilerap_tile_destroy(&D);
  free(rc); free(rp); free(col); free(rv); free(val); free(drp); free(dcol); free(dv);
}

static void check_diag_first(uint64_t *seed)
{
  tilerap_csr *A = NULL, *P = NULL;
  int32_t dims[3], cd[3];
  int nd;
  tilerap_model_poisson(TILERAP_P3D27, 12, &A, dims, &nd);
  check_diag_first_one(A, "p3d27 12^3");
  tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd);
  tilerap_csr *C = ref_ptap(A, P);
  if (tap_ok(C != NULL, "reference Galerkin product for the diagonal-first checks")) check_diag_first_one(C, "its Galerkin product");
  /* a random square matrix with its missing diagonal entries inserted:
   * diagonals at every position of their rows */
  tilerap_csr *R = ref_random(301, 301, 0.05, 7, seed), *RI = NULL;
  if (tilerap_csr_create(301, 301, R->nnz + 301, &RI) == 0) {
    int64_t q = 0;
    for (int32_t i = 0; i < 301; i++) {
      int done = 0;
      for (int64_t k = R->rowptr[i]; k < R->rowptr[i + 1]; k++) {
        if (!done && R->colidx[k] >= i) {
          if (R->colidx[k] > i) { RI->colidx[q] = i; RI->val[q++] = 1.0 + i; }
          done = 1;
        }
        RI->colidx[q] = R->colidx[k]; RI->val[q++] = R->val[k];
      }
      if (!done) { RI->colidx[q] = i; RI->val[q++] = 1.0 + i; }
      RI->rowptr[i + 1] = q;
    }
    RI->nnz = q;
    check_diag_first_one(RI, "random 301 x 301 plus its diagonal");
  }
  /* refusals: no output written */
  tilerap_tile_matrix *D = NULL;
  int32_t rp[302], *col = malloc(((size_t)R->nnz + 1) * sizeof *col);
  for (int k = 0; k < 302; k++) rp[k] = -7;
  int err = tilerap_tile_from_csr_device(R->m, R->n, R->rowptr, R->colidx, R->val, TILERAP_MEM_HOST, &D);
  int32_t first = -1;
  for (int32_t i = 0; i < R->m && first < 0; i++) {
    int has = 0;
    for (int64_t k = R->rowptr[i]; k < R->rowptr[i + 1]; k++) has |= R->colidx[k] == i;
    if (!has) first = i;
  }
  char expect[64];
  snprintf(expect, sizeof expect, "row %d has no stored diagonal", first);
  for (int64_t k = 0; k <= R->nnz; k++) col[k] = -7;
  int e2 = err ? err : tilerap_tile_to_csr_device_diag_first_i32(D, rp, col, NULL, TILERAP_MEM_HOST);
  int untouched = 1;
  for (int k = 0; k < 302; k++) untouched &= rp[k] == -7;
  for (int64_t k = 0; k <= R->nnz; k++) untouched &= col[k] == -7;
  tap_ok(first >= 0 && e2 == TILERAP_ERR_STRUCTURE && strstr(tilerap_last_error(), expect) && untouched,
         "diagonal-first CSR of a matrix without some diagonal entries: refused, lowest row named, nothing written (%s)",
         tilerap_last_error());
  { /* the same into device arrays */
    int32_t *gp = dup_to_device(rp, sizeof rp), *gc = dup_to_device(col, ((size_t)R->nnz + 1) * sizeof *col);
    int e3 = err ? err : tilerap_tile_to_csr_device_diag_first_i32(D, gp, gc, NULL, TILERAP_MEM_DEVICE);
    from_device(rp, gp, sizeof rp);
    from_device(col, gc, ((size_t)R->nnz + 1) * sizeof *col);
    int same = 1;
    for (int k = 0; k < 302; k++) same &= rp[k] == -7;
    for (int64_t k = 0; k <= R->nnz; k++) same &= col[k] == -7;
    tap_ok(e3 == TILERAP_ERR_STRUCTURE && same, "  ... into device arrays: refused, nothing written");
    cudaFree(gp); cudaFree(gc);
  }
  tilerap_tile_destroy(&D);
  { /* a whole diagonal tile missing: 40 x 40 with rows 0-15 in columns 16-31 only */
    tilerap_csr *X = NULL;
    if (tilerap_csr_create(40, 40, 40, &X) == 0) {
      for (int32_t i = 0; i < 40; i++) {
        X->rowptr[i + 1] = i + 1;
        X->colidx[i] = i < 16 ? 16 + i : i;
        X->val[i] = 1.0;
      }
      err = tilerap_tile_from_csr_device(40, 40, X->rowptr, X->colidx, X->val, TILERAP_MEM_HOST, &D);
      if (!err) err = tilerap_tile_to_csr_device_diag_first_i32(D, rp, col, NULL, TILERAP_MEM_HOST);
      tap_ok(err == TILERAP_ERR_STRUCTURE && strstr(tilerap_last_error(), "row 0 has no stored diagonal"),
             "diagonal-first CSR without the (0,0) tile: row 0 named (%s)", tilerap_last_error());
      tilerap_tile_destroy(&D);
      tilerap_csr_destroy(&X);
    }
  }
  tilerap_tile_from_csr_device(P->m, P->n, P->rowptr, P->colidx, P->val, TILERAP_MEM_HOST, &D);
  EXPECT(tilerap_tile_to_csr_device_diag_first_i32(D, rp, col, NULL, TILERAP_MEM_HOST), TILERAP_ERR_SIZE,
         "diagonal-first CSR of a rectangular matrix");
  EXPECT(tilerap_tile_to_csr_device_diag_first_i32(D, NULL, col, NULL, TILERAP_MEM_HOST), TILERAP_ERR_NULL,
         "diagonal-first CSR without row pointers");
  tilerap_tile_destroy(&D);
  free(col);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&C); tilerap_csr_destroy(&R);
  tilerap_csr_destroy(&RI);
}

/* Host <-> device transfers through the pinned staging ring (main sets
 * 64 KB chunks: a p3d7 30^3 matrix's 1.5 MB of values wrap the ring of
 * four chunks many times).  An upload must have read its source when it
 * returns: the source is overwritten right after each refresh. */
static void check_staging(uint64_t *seed)
{
  tilerap_csr *A = NULL;
  int32_t dims[3];
  int nd;
  tilerap_model_poisson(TILERAP_P3D7, 30, &A, dims, &nd);
  const size_t nz = (size_t)A->nnz, m1 = (size_t)A->m + 1;
  tilerap_tile_matrix *D = NULL;
  int err = tilerap_tile_from_csr_device(A->m, A->n, A->rowptr, A->colidx, A->val, TILERAP_MEM_HOST, &D);
  double *v = malloc(nz * sizeof *v), *keep = malloc(nz * sizeof *keep), *out = malloc(nz * sizeof *out);
  int64_t *rp = malloc(m1 * sizeof *rp);
  int32_t *col = malloc(nz * sizeof *col);
  if (!err) err = tilerap_tile_to_csr_device(D, rp, col, out, TILERAP_MEM_HOST);
  tap_ok(!err && !memcmp(rp, A->rowptr, m1 * sizeof *rp) && !memcmp(col, A->colidx, nz * sizeof *col) &&
             !memcmp(out, A->val, nz * sizeof *out),
         "staging: %zu entries up and back down in 64 KB chunks, identical (%s)", nz, err ? tilerap_last_error() : "ok");
  for (int round = 0; round < 3 && !err; round++) {
    for (size_t k = 0; k < nz; k++) v[k] = ref_rand01(seed) - 0.5;
    memcpy(keep, v, nz * sizeof *v);
    err = tilerap_tile_update_values_from_csr_device(D, v, TILERAP_MEM_HOST);
    memset(v, 0xff, nz * sizeof *v); /* NaNs: must not reach the device */
    if (!err) err = tilerap_tile_to_csr_values_device(D, out, TILERAP_MEM_HOST);
    tap_ok(!err && !memcmp(out, keep, nz * sizeof *out),
           "staging round %d: values refreshed from a host array overwritten on return, read back identical (%s)", round,
           err ? tilerap_last_error() : "ok");
  }
  tilerap_tile_matrix *H = NULL, *D2 = NULL, *H2 = NULL;
  if (!err) err = tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &H);
  if (!err) err = tilerap_tile_copy(H, TILERAP_MEM_DEVICE, &D2);
  if (!err) err = tilerap_tile_copy(D2, TILERAP_MEM_HOST, &H2);
  tap_ok(!err && same_exact(H, H2), "staging: host tiles -> device -> host, identical (%s)",
         err ? tilerap_last_error() : "ok");
  tilerap_tile_destroy(&D); tilerap_tile_destroy(&D2); tilerap_tile_destroy(&H); tilerap_tile_destroy(&H2);
  free(v); free(keep); free(out); free(rp); free(col);
  tilerap_csr_destroy(&A);
}

int main(void)
{
  /* small staging chunks, before the first transfer sets the ring up (an
   * outside setting wins: the suite also runs with the default chunks) */
  if (!getenv("TILERAP_PINNED_CHUNK")) tilerap_tuning_set("TILERAP_PINNED_CHUNK", "65536");
  gpu_skip_without_device();
  uint64_t seed = 2026;
  struct { int32_t m, n; double d; int empty; const char *what; } cases[] = {
    {1, 1, 1.0, 0, "1 x 1"},
    {17, 33, 0.2, 3, "17 x 33, empty rows"},
    {100, 100, 0.05, 0, "100 x 100"},
    {257, 31, 0.1, 5, "257 x 31 (tall)"},
    {31, 1000, 0.05, 0, "31 x 1000 (wide, many tiles per tile row)"},
    /* long tile rows, and rows whose tiles are unevenly filled */
    {40, 5000, 0.03, 0, "40 x 5000 (312 tiles per tile row)"},
    {500, 4001, 0.01, 2, "500 x 4001, every other row empty (uneven runs of tiles)"},
    {1000, 999, 0.003, 2, "1000 x 999 sparse, half the rows empty"},
    {45, 45, 0.0, 0, "45 x 45 without entries"},
    {3001, 2049, 0.004, 11, "3001 x 2049"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tilerap_csr *A = ref_random(cases[k].m, cases[k].n, cases[k].d, cases[k].empty, &seed);
    check_matrix(A, cases[k].what, &seed);
    tilerap_csr_destroy(&A);
  }
  {
    tilerap_csr *A = ref_dense(70, 90, &seed);
    check_matrix(A, "70 x 90 with dense tiles", &seed);
    tilerap_csr_destroy(&A);
  }
  {
    tilerap_csr *A = NULL;
    tilerap_csr_create(0, 0, 0, &A);
    check_matrix(A, "0 x 0", &seed);
    tilerap_csr_destroy(&A);
    tilerap_csr_create(20, 0, 0, &A);
    check_matrix(A, "20 x 0", &seed);
    tilerap_csr_destroy(&A);
  }
  {
    tilerap_csr *A = NULL, *P = NULL;
    int32_t dims[3], cd[3];
    int nd;
    tilerap_model_poisson(TILERAP_P3D7, 30, &A, dims, &nd);
    tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd);
    check_matrix(A, "p3d7 30^3", &seed);
    check_matrix(P, "its SA prolongator", &seed);
    tilerap_csr_destroy(&A);
    tilerap_csr_destroy(&P);
  }
  { /* unsorted conversion: what it refuses */
    int64_t rp[4] = {0, 2, 3, 5};
    int32_t dup[5] = {3, 1, 4, 2, 2}, rng[5] = {3, 1, 4, 9, 2}, ok5[5] = {3, 1, 4, 2, 0};
    int64_t down[4] = {0, 2, 1, 5};
    double v[5] = {1, 2, 3, 4, 5};
    tilerap_tile_matrix *D = NULL;
    EXPECT(tilerap_tile_from_unsorted_csr_device(3, 5, rp, dup, v, TILERAP_MEM_HOST, &D), TILERAP_ERR_UNSORTED,
           "unsorted conversion, row 2 holds column 2 twice");
    tap_ok(D == NULL && strstr(tilerap_last_error(), "repeated column"), "  ... no matrix, message names the repeat (%s)",
           tilerap_last_error());
    EXPECT(tilerap_tile_from_unsorted_csr_device(3, 5, rp, rng, v, TILERAP_MEM_HOST, &D), TILERAP_ERR_RANGE,
           "unsorted conversion, column 9 of 5");
    EXPECT(tilerap_tile_from_unsorted_csr_device(3, 5, down, ok5, v, TILERAP_MEM_HOST, &D), TILERAP_ERR_INVALID,
           "unsorted conversion, row pointers decrease");
    EXPECT(tilerap_tile_from_unsorted_csr_device_i32(3, 5, NULL, ok5, v, TILERAP_MEM_HOST, &D), TILERAP_ERR_NULL,
           "unsorted conversion, NULL row pointers");
    EXPECT(tilerap_tile_from_unsorted_csr_device(3, 5, rp, ok5, v, TILERAP_MEM_HOST, &D), TILERAP_SUCCESS,
           "unsorted conversion, valid 3 x 5");
    tilerap_tile_matrix *H = NULL;
    int64_t srp[4] = {0, 2, 3, 5};
    int32_t sc[5] = {1, 3, 4, 0, 2};
    double sv[5] = {2, 1, 3, 5, 4};
    tilerap_tile_from_csr(3, 5, srp, sc, sv, &H);
    tilerap_tile_matrix *Dh = D ? gpu_to_host(D) : NULL;
    tap_ok(Dh && same_exact(Dh, H), "  ... equals the conversion of the sorted rows");
    tilerap_tile_destroy(&Dh); tilerap_tile_destroy(&D); tilerap_tile_destroy(&H);
  }
  check_product_structure(&seed);
  check_staging(&seed);
  check_diag_first(&seed);
  check_galerkin_flow();
  check_errors();
  return tap_done();
}
