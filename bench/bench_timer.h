/* Timing helpers for the benchmarks: wall clock and medians. */
#ifndef TILERAP_BENCH_TIMER_H
#define TILERAP_BENCH_TIMER_H
#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of t[0..n) (sorts t). */
static inline double bench_median(double *t, int n)
{
  qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}
#endif
