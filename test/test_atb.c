/* C = A^T B through plans (tilerap_atb_*), against the reference (explicit
 * transpose, then a Gustavson product): random rectangular operands with
 * odd sizes, empty rows, empty and dense tiles; numeric re-runs with new
 * values; bad input.  Runs the CPU engine, and the CUDA engine (host- and
 * device-resident) when a GPU is present. */
#include "ref_gustavson.h"
#include "tap.h"
#include <math.h>
#include <stdlib.h>

static tilerap_options opts(tilerap_engine e, int thr)
{
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = e;
  o.dense_threshold = thr;
  return o;
}

static double compare(const tilerap_tile_matrix *T, const tilerap_csr *R)
{
  tilerap_tile_matrix *H = NULL;
  if (T->memtype != TILERAP_MEM_HOST && tilerap_tile_copy(T, TILERAP_MEM_HOST, &H)) return INFINITY;
  tilerap_csr *C = ref_tile_to_csr(H ? H : T);
  double e = ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  tilerap_csr_destroy(&C);
  tilerap_tile_destroy(&H);
  return e;
}

static tilerap_csr *ref_atb(const tilerap_csr *A, const tilerap_csr *B)
{
  tilerap_csr *At = ref_transpose(A), *C = ref_spgemm(At, B);
  tilerap_csr_destroy(&At);
  return C;
}

/* mem: where the operands live (device only with the CUDA engine). */
static void check(tilerap_engine e, tilerap_memtype mem, int32_t m, int32_t k, int32_t n, double dA, double dB,
                  int empty, int thr, uint64_t *seed, const char *what)
{
  const char *en = tilerap_engine_name(e), *mn = mem == TILERAP_MEM_HOST ? "host" : "device";
  tilerap_options o = opts(e, thr);
  tilerap_csr *A = ref_random(m, k, dA, empty, seed), *B = ref_random(m, n, dB, empty ? empty + 2 : 0, seed);
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B), *tA = hA, *tB = hB, *tC = NULL;
  if (mem == TILERAP_MEM_DEVICE) {
    tA = tB = NULL;
    if (tilerap_tile_copy(hA, mem, &tA) || tilerap_tile_copy(hB, mem, &tB)) {
      tap_ok(0, "%s/%s %s: upload failed: %s", en, mn, what, tilerap_last_error());
      goto done;
    }
  }
  tilerap_atb_plan plan = NULL;
  int err = tilerap_atb_plan_create(tA, tB, &o, &plan, &tC);
  if (!err) err = tilerap_atb_numeric(plan, tA, tB, tC);
  tilerap_csr *R = ref_atb(A, B);
  double er = err ? INFINITY : compare(tC, R);
  tap_ok(er <= 1e-14, "%s/%s %s: (%d x %d)^T (%d x %d), relerr %.2e%s%s", en, mn, what, m, k, m, n, er, err ? ": " : "",
         err ? tilerap_last_error() : "");
  if (!err && tC->memtype == TILERAP_MEM_HOST) tap_ok(tilerap_tile_check(tC) == 0, "%s/%s %s: C consistent", en, mn, what);
  if (!err) {
    tilerap_spgemm_info info;
    const int ierr = tilerap_atb_plan_info(plan, &info);
    tap_ok(!ierr && info.c_nnz == tC->nnz && (info.path == TILERAP_PATH_CSR || info.path == TILERAP_PATH_TILES) && (info.flops > 0) == (R->nnz > 0),
           "%s/%s %s: plan info: path %s, %lld entries of C (C has %lld), %lld flops", en, mn, what, tilerap_path_name(info.path),
           (long long)info.c_nnz, (long long)tC->nnz, (long long)info.flops);
  }
  tilerap_csr_destroy(&R);
  if (!err) { /* new values, same structures: numeric only */
    ref_randomize_values(A, seed);
    ref_randomize_values(B, seed);
    tilerap_tile_update_values_from_csr(hA, A->rowptr, A->val);
    tilerap_tile_update_values_from_csr(hB, B->rowptr, B->val);
    if (mem == TILERAP_MEM_DEVICE) err = tilerap_tile_copy_values(hA, tA) || tilerap_tile_copy_values(hB, tB);
    if (!err) err = tilerap_atb_numeric(plan, tA, tB, tC);
    R = ref_atb(A, B);
    er = err ? INFINITY : compare(tC, R);
    tap_ok(er <= 1e-14, "%s/%s %s: numeric re-run with new values, relerr %.2e", en, mn, what, er);
    tilerap_csr_destroy(&R);
  }
  tilerap_atb_plan_destroy(&plan);
done:
  if (tA != hA) tilerap_tile_destroy(&tA);
  if (tB != hB) tilerap_tile_destroy(&tB);
  tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB); tilerap_tile_destroy(&tC);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
}

static void check_all(tilerap_engine e, tilerap_memtype mem, uint64_t *seed)
{
  check(e, mem, 0, 0, 0, 0, 0, 0, 192, seed, "empty 0x0");
  check(e, mem, 1, 1, 1, 1, 1, 0, 192, seed, "1x1");
  check(e, mem, 333, 101, 57, 0.03, 0.05, 5, 192, seed, "odd sizes, empty rows");
  check(e, mem, 100, 7, 300, 0.3, 0.02, 0, 192, seed, "narrow A, wide B");
  check(e, mem, 64, 64, 64, 1.0, 1.0, 0, 192, seed, "dense, dense accumulator");
  check(e, mem, 64, 48, 80, 1.0, 1.0, 0, 256, seed, "dense, sparse accumulator");
  check(e, mem, 200, 50, 60, 0.0, 0.1, 0, 192, seed, "A all empty");
  check(e, mem, 1000, 340, 340, 0.004, 0.004, 3, 0, seed, "P-like, dense accumulator everywhere");
}

static void check_errors(void)
{
  uint64_t seed = 99;
  tilerap_csr *A = ref_random(30, 20, 0.2, 0, &seed), *B = ref_random(31, 20, 0.2, 0, &seed);
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tB = ref_csr_to_tile(B), *tC = NULL;
  tilerap_options o = opts(TILERAP_ENGINE_CPU, 192);
  tilerap_atb_plan plan = NULL;
  int err = tilerap_atb_plan_create(tA, tB, &o, &plan, &tC);
  tap_ok(err == TILERAP_ERR_SIZE && !plan && !tC, "row counts 30 and 31: TILERAP_ERR_SIZE (%s)", tilerap_last_error());
  err = tilerap_atb_plan_create(NULL, tB, &o, &plan, &tC);
  tap_ok(err == TILERAP_ERR_NULL, "NULL A: TILERAP_ERR_NULL");
  o.dense_threshold = 300;
  err = tilerap_atb_plan_create(tA, tA, &o, &plan, &tC);
  tap_ok(err == TILERAP_ERR_INVALID, "dense threshold 300: TILERAP_ERR_INVALID");
  o.dense_threshold = 192;
  err = tilerap_atb_plan_create(tA, tA, &o, &plan, &tC);
  tap_ok(!err, "A^T A plan");
  tilerap_tile_matrix *tB2 = NULL;
  tilerap_csr *A2 = ref_random(30, 20, 0.5, 0, &seed);
  tB2 = ref_csr_to_tile(A2);
  err = tilerap_atb_numeric(plan, tA, tB2, tC);
  tap_ok(err == TILERAP_ERR_STRUCTURE, "numeric with another B structure: TILERAP_ERR_STRUCTURE (%s)", tilerap_last_error());
  tilerap_atb_plan_destroy(&plan);
  tap_ok(plan == NULL, "destroy clears the handle");
  tilerap_atb_plan_destroy(&plan); /* idempotent */
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tB); tilerap_tile_destroy(&tB2); tilerap_tile_destroy(&tC);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B); tilerap_csr_destroy(&A2);
}

int main(void)
{
  uint64_t seed = 2024;
  check_all(TILERAP_ENGINE_CPU, TILERAP_MEM_HOST, &seed);
  check_errors();
  if (tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
    check_all(TILERAP_ENGINE_CUDA, TILERAP_MEM_HOST, &seed);
    check_all(TILERAP_ENGINE_CUDA, TILERAP_MEM_DEVICE, &seed);
  } else {
    tap_diag("CUDA engine not available: A^T B checked on the CPU engine only");
  }
  return tap_done();
}
