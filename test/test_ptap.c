/* Galerkin products C = P^T A P through plans, against the reference
 * (two Gustavson products with an explicit transpose): smoothed-
 * aggregation hierarchies of the four model stencils, chained level to
 * level in tile form; random rectangular P; reuse with new values. */
#include "ref_gustavson.h"
#include "tap.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdlib.h>

/* CPU kernel of the plans: the hierarchies run with each */
static tilerap_cpu_kernel g_kernel = TILERAP_CPU_KERNEL_AUTO;

static tilerap_options cpu_opts(void)
{
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = TILERAP_ENGINE_CPU;
  o.cpu_kernel = g_kernel;
  return o;
}

static double compare(const tilerap_tile_matrix *T, const tilerap_csr *R)
{
  tilerap_csr *C = ref_tile_to_csr(T);
  double e = ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  tilerap_csr_destroy(&C);
  return e;
}

/* Builds the hierarchy level by level: the tile C of level k is used as
 * level k+1's A directly (no CSR round trip into the product); the
 * prolongator of level k+1 is made from the reference coarse matrix. */
static void check_hierarchy(tilerap_stencil s, int32_t n)
{
  tilerap_options o = cpu_opts();
  tilerap_csr *A = NULL;
  int32_t dims[3], cd[3];
  int nd;
  tilerap_model_poisson(s, n, &A, dims, &nd);
  tilerap_tile_matrix *tA = ref_csr_to_tile(A);
  int owns_tA = 1;
  tilerap_ptap_plan plans[4] = {0};
  tilerap_tile_matrix *tP[4] = {0}, *tC[4] = {0};
  tilerap_csr *Pl[4] = {0}, *Al[5] = {0};
  Al[0] = A;
  int L = 0;
  for (; L < 4 && Al[L]->m >= 500; L++) {
    tilerap_model_prolongator(Al[L], nd, dims, 2.0 / 3.0, &Pl[L], cd);
    tP[L] = ref_csr_to_tile(Pl[L]);
    tilerap_tile_matrix *lvlA = L == 0 ? tA : tC[L - 1];
    int err = tilerap_ptap_plan_create(lvlA, tP[L], &o, &plans[L], &tC[L]);
    if (!err) err = tilerap_ptap_numeric(plans[L], lvlA, tP[L], tC[L]);
    Al[L + 1] = ref_ptap(Al[L], Pl[L]);
    double e = err ? INFINITY : compare(tC[L], Al[L + 1]);
    tap_ok(e <= 1e-14, "%s n=%d [%s] level %d: %d -> %d, nnz(C) %lld, relerr %.2e %s", tilerap_stencil_name(s), n,
           tilerap_cpu_kernel_name(g_kernel), L, Al[L]->m, Al[L + 1]->m, (long long)Al[L + 1]->nnz, e,
           err ? tilerap_last_error() : "");
    /* the same level planned with its values (steps 2 and 3 in one walk
     * per product): the same C, bit for bit */
    tilerap_options ov = o;
    ov.plan_values = 1;
    tilerap_ptap_plan pv = NULL;
    tilerap_tile_matrix *tV = NULL;
    int errv = tilerap_ptap_plan_create(lvlA, tP[L], &ov, &pv, &tV);
    tap_ok(!err && !errv && ref_same_tiles(tV, tC[L]), "%s n=%d [%s] level %d: plan with values gives the same C bit for bit",
           tilerap_stencil_name(s), n, tilerap_cpu_kernel_name(g_kernel), L);
    tilerap_ptap_plan_destroy(&pv);
    tilerap_tile_destroy(&tV);
    dims[0] = cd[0]; dims[1] = cd[1]; dims[2] = cd[2];
  }
  tap_ok(L >= 2, "%s n=%d: hierarchy has %d levels", tilerap_stencil_name(s), n, L);

  /* reuse down the hierarchy, three rounds (the RECORDED kernel records
   * on a plan's first run, AUTO on its second, both replay afterwards):
   * scale A by 2 and change P's values; the numeric re-runs chain through
   * the tile outputs. */
  uint64_t seed = 31;
  for (int round = 1; round <= 3; round++) {
    for (int64_t q = 0; q < tA->nnz; q++) tA->val[q] *= 2.0;
    for (int64_t q = 0; q < A->nnz; q++) A->val[q] *= 2.0;
    for (int l = 0; l < L; l++) {
      ref_randomize_values(Pl[l], &seed);
      tilerap_tile_update_values_from_csr(tP[l], Pl[l]->rowptr, Pl[l]->val);
      for (int64_t q = 0; q < tC[l]->nnz; q++) tC[l]->val[q] = NAN;
      int err = tilerap_ptap_numeric(plans[l], l == 0 ? tA : tC[l - 1], tP[l], tC[l]);
      tilerap_csr *R = ref_ptap(Al[l], Pl[l]);
      tilerap_csr_destroy(&Al[l + 1]);
      Al[l + 1] = R;
      double e = err ? INFINITY : compare(tC[l], R);
      tap_ok(e <= 1e-14, "%s n=%d [%s] level %d: numeric re-run %d after new values, relerr %.2e", tilerap_stencil_name(s),
             n, tilerap_cpu_kernel_name(g_kernel), l, round, e);
    }
  }
  for (int l = 0; l < L; l++) {
    tilerap_ptap_plan_destroy(&plans[l]);
    tilerap_tile_destroy(&tP[l]); tilerap_tile_destroy(&tC[l]);
    tilerap_csr_destroy(&Pl[l]);
  }
  for (int l = 0; l <= L; l++) tilerap_csr_destroy(&Al[l]);
  if (owns_tA) tilerap_tile_destroy(&tA);
}

static void check_random(int32_t n, int32_t nc, double dA, double dP, int empty, uint64_t *seed, const char *what)
{
  tilerap_options o = cpu_opts();
  tilerap_csr *A = ref_random(n, n, dA, empty, seed), *P = ref_random(n, nc, dP, empty ? empty + 1 : 0, seed);
  tilerap_tile_matrix *tA = ref_csr_to_tile(A), *tP = ref_csr_to_tile(P), *tC = NULL;
  int err = tilerap_ptap(tA, tP, &o, &tC);
  tilerap_csr *R = ref_ptap(A, P);
  double e = err ? INFINITY : compare(tC, R);
  tap_ok(e <= 1e-14, "%s: %d x %d A, %d x %d P, relerr %.2e", what, n, n, n, nc, e);
  if (!err) tap_ok(tilerap_tile_check(tC) == 0, "%s: C consistent", what);
  tilerap_tile_destroy(&tA); tilerap_tile_destroy(&tP); tilerap_tile_destroy(&tC);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&R);
}

int main(void)
{
  const tilerap_cpu_kernel kernels[] = {TILERAP_CPU_KERNEL_AUTO, TILERAP_CPU_KERNEL_TILES, TILERAP_CPU_KERNEL_RECORDED};
  for (int k = 0; k < 3; k++) {
    g_kernel = kernels[k];
    check_hierarchy(TILERAP_P2D5, 100);
    check_hierarchy(TILERAP_P2D9, 80);
    check_hierarchy(TILERAP_P3D7, 23);
    check_hierarchy(TILERAP_P3D27, 25);
  }
  g_kernel = TILERAP_CPU_KERNEL_AUTO;
  uint64_t seed = 4711;
  check_random(0, 0, 0, 0, 0, &seed, "empty 0x0");
  check_random(1, 1, 1, 1, 0, &seed, "1x1");
  check_random(17, 33, 0.2, 0.2, 0, &seed, "P wider than A");
  check_random(100, 7, 0.05, 0.3, 0, &seed, "narrow P");
  check_random(333, 101, 0.02, 0.03, 5, &seed, "odd sizes with empty rows");
  check_random(64, 64, 1.0, 1.0, 0, &seed, "dense");
  check_random(200, 50, 0.0, 0.1, 0, &seed, "A all empty");
  return tap_done();
}
