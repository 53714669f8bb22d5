/* CSR <-> tile conversions for the CUDA engine, the way MATSEQTILE needs
 * them: host CSR (PETSc's AIJ arrays) to a device tile matrix, and a device
 * tile matrix (a product C) back to host CSR, first time and values only.
 * "host path": host conversion + whole-matrix transfer (what MATSEQTILE did
 * before); "device path": the conversions on the device, transfers of the
 * CSR arrays included.  Wall-clock with the device synchronised, median of
 * -reps runs.
 *   convert-bench-gpu [-reps 7] [-n 100] [-stencil p3d7] */
#include "../test/ref_gustavson.h"
#include "tilerap_model.h"
#include "tilerap_device.h"
#include "bench_common.h"
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CHECK(x)                                                                              \
  do {                                                                                        \
    int e_ = (x);                                                                             \
    if (e_) { fprintf(stderr, "%s failed: %s\n", #x, tilerap_last_error()); exit(1); }        \
  } while (0)

static double now(void)
{
  cudaDeviceSynchronize();
  return ref_wtime();
}

#define REPEAT(reps, out, ...)                  \
  do {                                          \
    double ts_[64];                             \
    for (int r_ = 0; r_ < (reps); r_++) {       \
      double t0_ = now();                       \
      __VA_ARGS__;                              \
      ts_[r_] = now() - t0_;                    \
    }                                           \
    out = bench_median(ts_, (reps));            \
  } while (0)

static int32_t *rp32_of(const tilerap_csr *A)
{
  int32_t *r = malloc(((size_t)A->m + 1) * sizeof *r);
  for (int32_t i = 0; i <= A->m; i++) r[i] = (int32_t)A->rowptr[i];
  return r;
}

/* host CSR -> device tiles; values refresh */
static void bench_in(const char *name, const tilerap_csr *A, int reps)
{
  int32_t *rp = rp32_of(A);
  double th, td, tvh, tvd;
  REPEAT(reps, th, {
    tilerap_tile_matrix *H = NULL, *D = NULL;
    CHECK(tilerap_tile_from_csr_i32(A->m, A->n, rp, A->colidx, A->val, &H));
    CHECK(tilerap_tile_copy(H, TILERAP_MEM_DEVICE, &D));
    cudaDeviceSynchronize();
    tilerap_tile_destroy(&H);
    tilerap_tile_destroy(&D);
  });
  REPEAT(reps, td, {
    tilerap_tile_matrix *D = NULL;
    CHECK(tilerap_tile_from_csr_device_i32(A->m, A->n, rp, A->colidx, A->val, TILERAP_MEM_HOST, &D));
    cudaDeviceSynchronize();
    tilerap_tile_destroy(&D);
  });
  tilerap_tile_matrix *H = NULL, *D = NULL, *D2 = NULL;
  CHECK(tilerap_tile_from_csr_i32(A->m, A->n, rp, A->colidx, A->val, &H));
  CHECK(tilerap_tile_copy(H, TILERAP_MEM_DEVICE, &D));
  CHECK(tilerap_tile_from_csr_device_i32(A->m, A->n, rp, A->colidx, A->val, TILERAP_MEM_HOST, &D2));
  REPEAT(reps, tvh, {
    CHECK(tilerap_tile_update_values_from_csr_i32(H, rp, A->val));
    CHECK(tilerap_tile_copy_values(H, D));
  });
  REPEAT(reps, tvd, CHECK(tilerap_tile_update_values_from_csr_device(D2, A->val, TILERAP_MEM_HOST)));
  /* the same from a CSR already on the device: kernels (and the two
   * read-backs that size the result) without the CSR upload */
  double tk, tvk;
  {
    size_t m1 = (size_t)A->m + 1, nz = (size_t)A->nnz;
    int32_t *drp = NULL, *dcol = NULL;
    double *dval = NULL;
    cudaMalloc((void **)&drp, m1 * sizeof *drp);
    cudaMalloc((void **)&dcol, nz * sizeof *dcol);
    cudaMalloc((void **)&dval, nz * sizeof *dval);
    cudaMemcpy(drp, rp, m1 * sizeof *drp, cudaMemcpyHostToDevice);
    cudaMemcpy(dcol, A->colidx, nz * sizeof *dcol, cudaMemcpyHostToDevice);
    cudaMemcpy(dval, A->val, nz * sizeof *dval, cudaMemcpyHostToDevice);
    REPEAT(reps, tk, {
      tilerap_tile_matrix *D = NULL;
      CHECK(tilerap_tile_from_csr_device_i32(A->m, A->n, drp, dcol, dval, TILERAP_MEM_DEVICE, &D));
      cudaDeviceSynchronize();
      tilerap_tile_destroy(&D);
    });
    REPEAT(reps, tvk, CHECK(tilerap_tile_update_values_from_csr_device(D2, dval, TILERAP_MEM_DEVICE)));
    cudaFree(drp); cudaFree(dcol); cudaFree(dval);
  }
  printf("%-18s %8d rows %9lld nnz | CSR->device tiles: host path %7.2f ms, device %6.2f ms (x%.1f) [device CSR %5.2f ms] | values: host path %6.2f ms, device %5.2f ms (x%.1f) [device CSR %5.2f ms]\n",
         name, A->m, (long long)A->nnz, 1e3 * th, 1e3 * td, th / td, 1e3 * tk, 1e3 * tvh, 1e3 * tvd, tvh / tvd, 1e3 * tvk);
  tilerap_tile_destroy(&H);
  tilerap_tile_destroy(&D);
  tilerap_tile_destroy(&D2);
  free(rp);
}

/* device tiles -> host CSR (structure + values), values only */
static void bench_out(const char *name, const tilerap_tile_matrix *dC, int reps)
{
  size_t m1 = (size_t)dC->m + 1, nz = (size_t)dC->nnz;
  int32_t *rp = malloc(m1 * sizeof *rp), *col = malloc(nz * sizeof *col);
  double *val = malloc(nz * sizeof *val), *pos = malloc(nz * sizeof *pos);
  int64_t *perm = malloc(nz * sizeof *perm);
  double th, td, tvh, tvd;
  REPEAT(reps, th, {
    tilerap_tile_matrix *H = NULL;
    CHECK(tilerap_tile_copy(dC, TILERAP_MEM_HOST, &H));
    CHECK(tilerap_tile_to_csr_i32(H, rp, col, val));
    tilerap_tile_destroy(&H);
  });
  REPEAT(reps, td, CHECK(tilerap_tile_to_csr_device_i32(dC, rp, col, val, TILERAP_MEM_HOST)));
  /* values only: before, the tile values came down and were gathered on
   * the host through a permutation */
  tilerap_tile_matrix *H = NULL;
  CHECK(tilerap_tile_copy(dC, TILERAP_MEM_HOST, &H));
  for (size_t k = 0; k < nz; k++) H->val[k] = (double)k;
  CHECK(tilerap_tile_to_csr_i32(H, rp, col, pos));
  for (size_t k = 0; k < nz; k++) perm[k] = (int64_t)pos[k];
  REPEAT(reps, tvh, {
    CHECK(tilerap_tile_copy_values(dC, H));
    for (size_t q = 0; q < nz; q++) val[q] = H->val[perm[q]];
  });
  REPEAT(reps, tvd, CHECK(tilerap_tile_to_csr_values_device(dC, val, TILERAP_MEM_HOST)));
  double tk, tvk;
  {
    int32_t *drp = NULL, *dcol = NULL;
    double *dval = NULL;
    cudaMalloc((void **)&drp, m1 * sizeof *drp);
    cudaMalloc((void **)&dcol, nz * sizeof *dcol);
    cudaMalloc((void **)&dval, nz * sizeof *dval);
    REPEAT(reps, tk, CHECK(tilerap_tile_to_csr_device_i32(dC, drp, dcol, dval, TILERAP_MEM_DEVICE)));
    REPEAT(reps, tvk, CHECK(tilerap_tile_to_csr_values_device(dC, dval, TILERAP_MEM_DEVICE)));
    cudaFree(drp); cudaFree(dcol); cudaFree(dval);
  }
  printf("%-18s %8d rows %9lld nnz | device tiles->CSR: host path %7.2f ms, device %6.2f ms (x%.1f) [device CSR %5.2f ms] | values: host path %6.2f ms, device %5.2f ms (x%.1f) [device CSR %5.2f ms]\n",
         name, dC->m, (long long)dC->nnz, 1e3 * th, 1e3 * td, th / td, 1e3 * tk, 1e3 * tvh, 1e3 * tvd, tvh / tvd, 1e3 * tvk);
  tilerap_tile_destroy(&H);
  free(rp); free(col); free(val); free(pos); free(perm);
}

int main(int argc, char **argv)
{
  int reps = 7, n = 100;
  tilerap_stencil st = TILERAP_P3D7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-stencil")) tilerap_stencil_parse(argv[i + 1], &st);
  }
  if (reps < 1 || reps > 64) reps = 7;
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) { printf("no CUDA device\n"); return 0; }
  tilerap_csr *A = NULL, *P = NULL;
  int32_t dims[3], cd[3];
  int nd;
  CHECK(tilerap_model_poisson(st, n, &A, dims, &nd));
  CHECK(tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd));
  { /* warm-up: the process's first CUDA calls create the context and the pool */
    tilerap_tile_matrix *D = NULL;
    double t0 = ref_wtime();
    CHECK(tilerap_tile_from_csr_device(P->m, P->n, P->rowptr, P->colidx, P->val, TILERAP_MEM_HOST, &D));
    cudaDeviceSynchronize();
    double t1 = ref_wtime();
    tilerap_tile_destroy(&D);
    CHECK(tilerap_tile_from_csr_device(P->m, P->n, P->rowptr, P->colidx, P->val, TILERAP_MEM_HOST, &D));
    cudaDeviceSynchronize();
    printf("# first device conversion of the process (P, CUDA context creation included): %.1f ms, second: %.1f ms\n",
           1e3 * (t1 - t0), 1e3 * (ref_wtime() - t1));
    tilerap_tile_destroy(&D);
  }
#ifdef _OPENMP
  int threads = omp_get_max_threads();
#else
  int threads = 1;
#endif
  printf("# %s n=%d, median of %d, wall clock with device synchronisation, %d host thread(s)\n", tilerap_stencil_name(st), n,
         reps, threads);
  bench_in("A", A, reps);
  bench_in("P", P, reps);
  tilerap_tile_matrix *dA = NULL, *dP = NULL, *dC = NULL;
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = TILERAP_ENGINE_CUDA;
  CHECK(tilerap_tile_from_csr_device(A->m, A->n, A->rowptr, A->colidx, A->val, TILERAP_MEM_HOST, &dA));
  CHECK(tilerap_tile_from_csr_device(P->m, P->n, P->rowptr, P->colidx, P->val, TILERAP_MEM_HOST, &dP));
  CHECK(tilerap_ptap(dA, dP, &o, &dC));
  bench_out("C = P^T A P", dC, reps);
  bench_out("A as a device C", dA, reps);
  tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dP); tilerap_tile_destroy(&dC);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  return 0;
}
