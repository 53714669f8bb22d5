/* Helpers shared by the benchmarks (bench_common.h). */
#include "bench_common.h"
#include "tilerap_model.h"
#include <string.h>
#include "../test/ref_gustavson.h"
#include <math.h>

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *t, int n)
{
  if (n <= 0) return NAN;
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

double bench_csr_relerr(const tilerap_csr *X, const tilerap_csr *R)
{
  return ref_same_structure(X, R) ? ref_relerr(X, R) : INFINITY;
}

double bench_tile_relerr(const tilerap_tile_matrix *T, const tilerap_csr *R)
{
  tilerap_tile_matrix *H = NULL;
  const tilerap_tile_matrix *h = T;
  if (T->memtype != TILERAP_MEM_HOST) { TR(tilerap_tile_copy(T, TILERAP_MEM_HOST, &H)); h = H; }
  tilerap_csr *C = ref_tile_to_csr(h);
  double e = bench_csr_relerr(C, R);
  tilerap_csr_destroy(&C);
  tilerap_tile_destroy(&H);
  return e;
}

static int bench_classical(void)
{
  static int on = -1;
  if (on < 0) {
    const char *v = getenv("BENCH_PROLONGATOR");
    on = v && !strcmp(v, "classical");
    if (v && !on && strcmp(v, "sa")) {
      fprintf(stderr, "BENCH_PROLONGATOR=%s: expected sa or classical\n", v);
      exit(2);
    }
  }
  return on;
}

const char *bench_prolongator_name(void) { return bench_classical() ? "classical" : "sa"; }

int bench_irregular_prolongator(const tilerap_csr *A, int level, tilerap_csr **P)
{
  if (bench_classical()) return tilerap_model_classical_prolongator(A, 0.25, 100 + (uint64_t)level, P);
  return tilerap_model_sa_prolongator(A, 2.0 / 3.0, P);
}
