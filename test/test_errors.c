/* Error paths of the core API: every bad input gets its documented code
 * and a message, never a crash. */
#include "ref_gustavson.h"
#include "tilerap_csr_layouts.h"
#include "tap.h"
#include "tilerap_model.h"
#include <string.h>

#define EXPECT(call, code, what)                                                                   \
  do {                                                                                             \
    int e_ = (call);                                                                               \
    tap_ok(e_ == (code), "%s -> %s (got %d: %s)", what, tilerap_error_string(code), e_, tilerap_last_error()); \
  } while (0)

int main(void)
{
  tilerap_tile_matrix *T = NULL, *C = NULL;
  int64_t rp[4] = {0, 2, 3, 5};
  int32_t sorted[5] = {0, 2, 1, 0, 2}, unsorted[5] = {2, 0, 1, 0, 2}, dup[5] = {1, 1, 1, 0, 2}, range[5] = {0, 3, 1, 0, 2};
  double v[5] = {1, 2, 3, 4, 5};
  int64_t bad_rp[4] = {0, 3, 2, 5};
  int64_t bad_first[4] = {1, 2, 3, 5};

  EXPECT(tilerap_tile_from_csr(3, 3, rp, unsorted, v, &T), TILERAP_ERR_UNSORTED, "unsorted columns");
  tap_ok(T == NULL, "no matrix left behind after an error");
  EXPECT(tilerap_tile_from_csr(3, 3, rp, dup, v, &T), TILERAP_ERR_UNSORTED, "duplicate column");
  EXPECT(tilerap_tile_from_csr(3, 3, rp, range, v, &T), TILERAP_ERR_RANGE, "column out of range");
  EXPECT(tilerap_tile_from_csr(3, 3, bad_rp, sorted, v, &T), TILERAP_ERR_INVALID, "decreasing row pointers");
  EXPECT(tilerap_tile_from_csr(3, 3, bad_first, sorted, v, &T), TILERAP_ERR_INVALID, "rowptr[0] != 0");
  EXPECT(tilerap_tile_from_csr(-1, 3, rp, sorted, v, &T), TILERAP_ERR_SIZE, "negative size");
  EXPECT(tilerap_tile_from_csr(3, 3, NULL, sorted, v, &T), TILERAP_ERR_NULL, "NULL row pointers");
  EXPECT(tilerap_tile_from_csr(3, 3, rp, NULL, v, &T), TILERAP_ERR_NULL, "NULL column indices");
  EXPECT(tilerap_tile_from_csr(3, 3, rp, sorted, v, NULL), TILERAP_ERR_NULL, "NULL output");
  EXPECT(tilerap_csr_check(3, 3, rp, unsorted), TILERAP_ERR_UNSORTED, "tilerap_csr_check finds unsorted rows");
  EXPECT(tilerap_tile_from_csr(3, 3, rp, sorted, v, &T), TILERAP_SUCCESS, "valid 3x3");

  /* products with mismatched or missing operands */
  uint64_t seed = 5;
  tilerap_csr *a = ref_random(20, 30, 0.2, 0, &seed), *b = ref_random(20, 30, 0.2, 0, &seed);
  tilerap_tile_matrix *A = ref_csr_to_tile(a), *B = ref_csr_to_tile(b);
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = TILERAP_ENGINE_CPU;
  tilerap_spgemm_plan plan = NULL;
  EXPECT(tilerap_spgemm_plan_create(A, B, &o, &plan, &C), TILERAP_ERR_SIZE, "A*B with inner dimensions 30 and 20");
  EXPECT(tilerap_spgemm_plan_create(NULL, B, &o, &plan, &C), TILERAP_ERR_NULL, "A*B with NULL A");
  EXPECT(tilerap_spgemm_plan_create(A, B, &o, NULL, &C), TILERAP_ERR_NULL, "A*B with NULL plan");
  o.dense_threshold = 300;
  EXPECT(tilerap_spgemm_plan_create(T, T, &o, &plan, &C), TILERAP_ERR_INVALID, "dense threshold 300");
  o.dense_threshold = 192;
  o.tc_threshold = 5000;
  EXPECT(tilerap_spgemm_plan_create(T, T, &o, &plan, &C), TILERAP_ERR_INVALID, "tensor-core threshold 5000");
  o.tc_threshold = TILERAP_TC_AUTO - 1;
  EXPECT(tilerap_spgemm_plan_create(T, T, &o, &plan, &C), TILERAP_ERR_INVALID, "tensor-core threshold TILERAP_TC_AUTO - 1");
  o.tc_threshold = -1;
  o.precision = (tilerap_precision)7;
  EXPECT(tilerap_spgemm_plan_create(T, T, &o, &plan, &C), TILERAP_ERR_INVALID, "precision 7");
  o.precision = TILERAP_PRECISION_FP64;
  {
    tilerap_precision p = TILERAP_PRECISION_FP64;
    EXPECT(tilerap_precision_parse("BF16", &p), TILERAP_SUCCESS, "precision 'BF16' parsed");
    tap_ok(p == TILERAP_PRECISION_BF16 && !strcmp(tilerap_precision_name(p), "bf16"), "precision name round trip");
    EXPECT(tilerap_precision_parse("fp8", &p), TILERAP_ERR_INVALID, "precision 'fp8'");
  }
  o.cpu_kernel = (tilerap_cpu_kernel)9;
  EXPECT(tilerap_spgemm_plan_create(T, T, &o, &plan, &C), TILERAP_ERR_INVALID, "CPU kernel 9");
  o.cpu_kernel = TILERAP_CPU_KERNEL_AUTO;
  {
    tilerap_cpu_kernel k = TILERAP_CPU_KERNEL_AUTO;
    EXPECT(tilerap_cpu_kernel_parse("Recorded", &k), TILERAP_SUCCESS, "CPU kernel 'Recorded' parsed");
    tap_ok(k == TILERAP_CPU_KERNEL_RECORDED && !strcmp(tilerap_cpu_kernel_name(k), "recorded"), "CPU kernel name round trip");
    EXPECT(tilerap_cpu_kernel_parse("rows", &k), TILERAP_ERR_INVALID, "CPU kernel 'rows'");
    EXPECT(tilerap_cpu_kernel_parse(NULL, &k), TILERAP_ERR_NULL, "CPU kernel NULL name");
  }

  /* numeric with another structure than the plan's */
  tilerap_csr *bt = ref_transpose(b);
  tilerap_tile_matrix *Bt = ref_csr_to_tile(bt), *AB = NULL;
  EXPECT(tilerap_spgemm_plan_create(A, Bt, &o, &plan, &AB), TILERAP_SUCCESS, "A*B^T plan");
  EXPECT(tilerap_spgemm_numeric(plan, A, Bt, AB), TILERAP_SUCCESS, "A*B^T numeric");
  tilerap_csr *a2 = ref_random(20, 30, 0.5, 0, &seed);
  tilerap_tile_matrix *A2 = ref_csr_to_tile(a2);
  EXPECT(tilerap_spgemm_numeric(plan, A2, Bt, AB), TILERAP_ERR_STRUCTURE, "numeric with a denser A");
  EXPECT(tilerap_spgemm_numeric(NULL, A, Bt, AB), TILERAP_ERR_NULL, "numeric with NULL plan");
  tilerap_spgemm_plan_destroy(&plan);
  tap_ok(plan == NULL, "plan destroy clears the handle");
  tilerap_spgemm_plan_destroy(&plan); /* second destroy is harmless */

  /* Galerkin: A must be square, P must match */
  tilerap_ptap_plan g = NULL;
  EXPECT(tilerap_ptap_plan_create(A, Bt, &o, &g, &C), TILERAP_ERR_SIZE, "PtAP with non-square A");
  tilerap_csr *sq = ref_random(20, 20, 0.2, 0, &seed);
  tilerap_tile_matrix *S = ref_csr_to_tile(sq);
  EXPECT(tilerap_ptap_plan_create(S, Bt, &o, &g, &C), TILERAP_ERR_SIZE, "PtAP with P of 30 rows for a 20x20 A");
  EXPECT(tilerap_ptap_plan_create(S, A, &o, &g, &C), TILERAP_SUCCESS, "PtAP with 20x30 P");
  tilerap_ptap_plan_destroy(&g);
  tilerap_tile_destroy(&C);

  /* values refresh with a different structure */
  int64_t rp_long[4] = {0, 2, 3, 6};
  int32_t cols6[6] = {0, 2, 1, 0, 1, 2};
  double v6[6] = {0};
  EXPECT(tilerap_tile_update_values_from_csr(T, rp_long, v6), TILERAP_ERR_STRUCTURE, "values refresh with more entries");
  (void)cols6;

  /* engines */
  tilerap_engine e;
  EXPECT(tilerap_engine_parse("gpu", &e), TILERAP_ERR_INVALID, "engine name 'gpu'");
  EXPECT(tilerap_engine_parse("CUDA", &e), TILERAP_SUCCESS, "engine name 'CUDA'");
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
    o.engine = TILERAP_ENGINE_CUDA;
    EXPECT(tilerap_spgemm_plan_create(T, T, &o, &plan, &C), TILERAP_ERR_ENGINE, "CUDA engine without CUDA/GPU");
    EXPECT(tilerap_tile_create(4, 4, 1, 1, TILERAP_MEM_DEVICE, &C), TILERAP_ERR_ENGINE,
           "device matrix without CUDA/GPU");
    {
      double v = 1, w = 0;
      int64_t q = 0;
      EXPECT(tilerap_device_gather_values(1, &q, &v, &w), TILERAP_ERR_ENGINE, "device gather without CUDA/GPU");
      tap_ok(w == 0, "... nothing written");
    }
  }
  /* device CSR products: no product, no record to report */
  {
    int64_t rec = -1, bytes = -1;
    EXPECT(tilerap_csr_device_product_record_info(NULL, &rec, &bytes), TILERAP_ERR_NULL, "record info of no product");
    tap_ok(rec == -1 && bytes == -1, "... nothing written");
  }
  /* devices: none in a CPU build or without a GPU, a clear error on setting one */
  {
    int ndev = tilerap_device_count(), dev = 123;
    EXPECT(tilerap_get_device(NULL), TILERAP_ERR_NULL, "get_device(NULL)");
    if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
      tap_ok(ndev == 0, "device count without CUDA/GPU is 0 (%d)", ndev);
      EXPECT(tilerap_set_device(0), TILERAP_ERR_ENGINE, "set_device(0) without CUDA/GPU");
      tap_ok(strstr(tilerap_last_error(), "no CUDA device") != NULL, "set_device says why: %s", tilerap_last_error());
      EXPECT(tilerap_get_device(&dev), TILERAP_ERR_ENGINE, "get_device without CUDA/GPU");
      tap_ok(dev == -1, "get_device without CUDA/GPU gives -1");
    } else {
      tap_ok(ndev > 0, "device count with a GPU (%d)", ndev);
      EXPECT(tilerap_set_device(ndev), TILERAP_ERR_RANGE, "set_device(count)");
      EXPECT(tilerap_set_device(-1), TILERAP_ERR_RANGE, "set_device(-1)");
      EXPECT(tilerap_set_device(ndev - 1), TILERAP_SUCCESS, "set_device(count - 1)");
      EXPECT(tilerap_get_device(&dev), TILERAP_SUCCESS, "get_device");
      tap_ok(dev == ndev - 1, "get_device gives the device set (%d)", dev);
      EXPECT(tilerap_set_device(0), TILERAP_SUCCESS, "set_device(0)");
    }
  }
  EXPECT(tilerap_tile_create(4, 4, 5, 10, TILERAP_MEM_HOST, &C), TILERAP_ERR_INVALID, "5 tiles in a 4x4 matrix");
  EXPECT(tilerap_tile_create(3, 3, 1, 10, TILERAP_MEM_HOST, &C), TILERAP_ERR_INVALID, "10 entries in a 3x3 matrix");
  EXPECT(tilerap_tile_create(3, 3, 1, 9, TILERAP_MEM_HOST, &C), TILERAP_SUCCESS, "9 entries in a 3x3 matrix");
  tilerap_tile_destroy(&C);
  /* numeric calls on matrices whose arrays are missing (a hand-made
   * struct): TILERAP_ERR_NULL naming the matrix, for every plan kind and
   * operand, C included, nothing written */
  {
    tilerap_csr *sq = ref_random(40, 40, 0.1, 3, &seed), *pp = ref_random(40, 9, 0.2, 0, &seed);
    tilerap_tile_matrix *S = ref_csr_to_tile(sq), *Pt = ref_csr_to_tile(pp);
    tilerap_spgemm_plan sp = NULL;
    o.engine = TILERAP_ENGINE_CPU; /* the options above, back on the CPU engine */
    tilerap_atb_plan ap = NULL;
    tilerap_ptap_plan pp_ = NULL;
    tilerap_tile_matrix *C1 = NULL, *C2 = NULL, *C3 = NULL;
    if (tap_ok(!tilerap_spgemm_plan_create(S, S, &o, &sp, &C1) && !tilerap_atb_plan_create(Pt, S, &o, &ap, &C2) &&
                   !tilerap_ptap_plan_create(S, Pt, &o, &pp_, &C3),
               "plans for the missing-array checks")) {
      for (int which = 0; which < 3; which++) { /* 0: left operand, 1: right, 2: C */
        tilerap_tile_matrix *M[3][3] = {{S, S, C1}, {Pt, S, C2}, {S, Pt, C3}};
        for (int kind = 0; kind < 3; kind++) {
          tilerap_tile_matrix *X = M[kind][which];
          double *keep = X->val;
          X->val = NULL;
          int e = kind == 0 ? tilerap_spgemm_numeric(sp, M[0][0], M[0][1], M[0][2])
                  : kind == 1 ? tilerap_atb_numeric(ap, M[1][0], M[1][1], M[1][2])
                              : tilerap_ptap_numeric(pp_, M[2][0], M[2][1], M[2][2]);
          X->val = keep;
          tap_ok(e == TILERAP_ERR_NULL, "%s numeric with %s's values NULL: TILERAP_ERR_NULL (%d): %s",
                 kind == 0 ? "A*B" : kind == 1 ? "A^T*B" : "P^T*A*P", which == 2 ? "C" : which == 0 ? "the left operand" : "the right operand",
                 e, tilerap_last_error());
        }
      }
      int32_t *keep = S->tile_col;
      S->tile_col = NULL;
      int e = tilerap_ptap_numeric(pp_, S, Pt, C3);
      S->tile_col = keep;
      tap_ok(e == TILERAP_ERR_NULL, "P^T*A*P numeric with A's tile columns NULL: TILERAP_ERR_NULL (%d)", e);
      e = tilerap_ptap_numeric(pp_, S, Pt, C3);
      tap_ok(e == TILERAP_SUCCESS, "the plan still works after the refused calls (%d)", e);
    }
    tilerap_spgemm_plan_destroy(&sp); tilerap_atb_plan_destroy(&ap); tilerap_ptap_plan_destroy(&pp_);
    tilerap_tile_destroy(&C1); tilerap_tile_destroy(&C2); tilerap_tile_destroy(&C3);
    tilerap_tile_destroy(&S); tilerap_tile_destroy(&Pt);
    tilerap_csr_destroy(&sq); tilerap_csr_destroy(&pp);
  }
  EXPECT(tilerap_tile_check(NULL), TILERAP_ERR_NULL, "check of NULL");
  tap_ok(strlen(tilerap_error_string(TILERAP_ERR_DEVICE_NOMEM)) > 0 && strcmp(tilerap_error_string(999), "unknown error") == 0,
         "error strings");

  /* model problem generators */
  tilerap_stencil s;
  EXPECT(tilerap_stencil_parse("p4d9", &s), TILERAP_ERR_INVALID, "unknown stencil");
  tilerap_csr *M = NULL;
  int32_t dims[3];
  int nd;
  EXPECT(tilerap_model_poisson(TILERAP_P3D7, 0, &M, dims, &nd), TILERAP_ERR_SIZE, "0^3 grid");

  tilerap_tile_destroy(&T); tilerap_tile_destroy(&A); tilerap_tile_destroy(&B); tilerap_tile_destroy(&Bt);
  tilerap_tile_destroy(&AB); tilerap_tile_destroy(&A2); tilerap_tile_destroy(&S);
  tilerap_csr_destroy(&a); tilerap_csr_destroy(&b); tilerap_csr_destroy(&bt); tilerap_csr_destroy(&a2);
  tilerap_csr_destroy(&sq);
  /* device conversions: without a CUDA build or a GPU, a clear ENGINE error */
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
    tilerap_tile_matrix *dT = (tilerap_tile_matrix *)1, fake;
    int32_t rp32[4] = {0, 2, 3, 5};
    EXPECT(tilerap_tile_from_csr_device(3, 3, rp, sorted, v, TILERAP_MEM_HOST, &dT), TILERAP_ERR_ENGINE,
           "CSR -> device tiles without the CUDA engine");
    tap_ok(dT == NULL, "... no matrix left behind");
    EXPECT(tilerap_tile_from_csr_device_i32(3, 3, rp32, sorted, v, TILERAP_MEM_HOST, &dT), TILERAP_ERR_ENGINE,
           "CSR (int32) -> device tiles without the CUDA engine");
    tap_ok(strstr(tilerap_last_error(), "CUDA") != NULL, "... the message names CUDA (%s)", tilerap_last_error());
    dT = (tilerap_tile_matrix *)1;
    EXPECT(tilerap_tile_from_unsorted_csr_device(3, 3, rp, sorted, v, TILERAP_MEM_HOST, &dT), TILERAP_ERR_ENGINE,
           "unsorted CSR -> device tiles without the CUDA engine");
    EXPECT(tilerap_tile_from_unsorted_csr_device_i32(3, 3, rp32, sorted, v, TILERAP_MEM_HOST, &dT), TILERAP_ERR_ENGINE,
           "unsorted CSR (int32) -> device tiles without the CUDA engine");
    tap_ok(dT == NULL, "... no matrix left behind");
    memset(&fake, 0, sizeof fake);
    fake.memtype = TILERAP_MEM_DEVICE;
    int64_t out[4];
    double vals[5];
    EXPECT(tilerap_tile_to_csr_device(&fake, out, NULL, NULL, TILERAP_MEM_HOST), TILERAP_ERR_ENGINE,
           "device tiles -> CSR without the CUDA engine");
    EXPECT(tilerap_tile_to_csr_device_i32(&fake, rp32, NULL, NULL, TILERAP_MEM_HOST), TILERAP_ERR_ENGINE,
           "device tiles -> CSR (int32) without the CUDA engine");
    EXPECT(tilerap_tile_to_csr_values_device(&fake, vals, TILERAP_MEM_HOST), TILERAP_ERR_ENGINE,
           "device tile values -> CSR without the CUDA engine");
    EXPECT(tilerap_tile_update_values_from_csr_device(&fake, vals, TILERAP_MEM_HOST), TILERAP_ERR_ENGINE,
           "CSR values -> device tiles without the CUDA engine");
  } else {
    tap_ok(1, "# SKIP device conversion errors without CUDA: a GPU is present (test_gpu_convert covers it)");
  }
  /* a host matrix is refused by the device conversions in any build */
  {
    tilerap_tile_matrix *H = NULL;
    int64_t out[4];
    tilerap_tile_from_csr(3, 3, rp, sorted, v, &H);
    EXPECT(tilerap_tile_to_csr_device(H, out, NULL, NULL, TILERAP_MEM_HOST), TILERAP_ERR_MEMTYPE,
           "host tiles given to the device CSR conversion");
    tilerap_tile_destroy(&H);
  }
  return tap_done();
}
