/* Helpers shared by the benchmarks: wall clock, medians, tilerap error
 * exits and result checks against a reference CSR (bench_common.c). */
#ifndef TILERAP_BENCH_COMMON_H
#define TILERAP_BENCH_COMMON_H
#include "tilerap.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Exits with status 2 and tilerap's message when a call fails: in a
 * benchmark a failing library call is a bug to look at, not to time. */
#define TR(x)                                                                                  \
  do {                                                                                         \
    int t_ = (x);                                                                              \
    if (t_) { fprintf(stderr, "%s:%d tilerap %d: %s\n", __FILE__, __LINE__, t_, tilerap_last_error()); exit(2); } \
  } while (0)

static inline double bench_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median of t[0..n) (sorts t). */
double bench_median(double *t, int n);
/* ||X - R||_F / ||R||_F when X has R's structure, +inf otherwise. */
double bench_csr_relerr(const tilerap_csr *X, const tilerap_csr *R);
/* The same for a tile matrix in host or device memory. */
double bench_tile_relerr(const tilerap_tile_matrix *T, const tilerap_csr *R);
/* The prolongator of an irregular matrix: smoothed aggregation (default),
 * or classical PMIS + extended interpolation with BENCH_PROLONGATOR=classical
 * in the environment (theta 0.25); level l seeds the coarsening. */
int bench_irregular_prolongator(const tilerap_csr *A, int level, tilerap_csr **P);
/* "sa" or "classical": what bench_irregular_prolongator makes */
const char *bench_prolongator_name(void);
#endif
