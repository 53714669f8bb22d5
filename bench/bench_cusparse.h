/* cuSPARSE and CUDA-event helpers shared by the GPU benchmarks
 * (bench_cusparse.c): device CSR matrices, the generic SpGEMM one-shot and
 * reuse paths, csr2csc transposes, event timing.  Every CUDA or cuSPARSE
 * failure exits with status 2 and the file:line of the call. */
#ifndef TILERAP_BENCH_CUSPARSE_H
#define TILERAP_BENCH_CUSPARSE_H
#include "tilerap.h"
#include <cuda_runtime_api.h>
/* cusparse.h declares deprecated legacy types: not our warnings */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cusparse.h>
#pragma GCC diagnostic pop
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(2); } \
  } while (0)
#define CS(x)                                                                                  \
  do {                                                                                         \
    cusparseStatus_t s_ = (x);                                                                 \
    if (s_ != CUSPARSE_STATUS_SUCCESS) { fprintf(stderr, "%s:%d cusparse %d\n", __FILE__, __LINE__, (int)s_); exit(2); } \
  } while (0)

/* Device memory of the cuSPARSE runs: cudaMalloc / cudaFree, as PETSc's
 * aijcusparse does, or, with BENCH_CUSPARSE_POOL=1 in the environment,
 * stream-ordered allocations from a pool that keeps its memory (what
 * tilerap's engine uses), so that allocation costs compare like for like. */
cudaError_t bench_dmalloc(void **p, size_t bytes);
void bench_dfree(void *p);
int bench_cusparse_pool(void);
/* Bytes those allocations hold now and at most since the last
 * bench_dmem_reset_peak (cuSPARSE's workspaces, the CSR arrays) */
size_t bench_dmem_in_use(void);
size_t bench_dmem_peak(void);
void bench_dmem_reset_peak(void);

/* Device CSR with 32-bit indices and its cuSPARSE descriptor. */
typedef struct {
  int m, n;
  int64_t nnz;
  int *rp, *ci;
  double *v;
  cusparseSpMatDescr_t d;
} dcsr;

/* Copies a host CSR to the device (nnz must fit 32-bit indices). */
void dcsr_upload(const tilerap_csr *A, dcsr *D);
void dcsr_free(dcsr *D);
tilerap_csr *dcsr_download(const dcsr *D);
/* Arrays of P^T (m, n swapped), no descriptor. */
void dcsr_alloc_T(const dcsr *P, dcsr *T);
/* Descriptor for arrays already set in D. */
void dcsr_describe(dcsr *D);
/* T = P^T by csr2csc (numeric), into arrays from dcsr_alloc_T; the work
 * buffer *buf grows as needed. */
void cs_transpose(cusparseHandle_t h, const dcsr *P, dcsr *T, void **buf, size_t *bufsz);
/* One-shot generic SpGEMM C = X*Y (C allocated here). */
void cs_spgemm(cusparseHandle_t h, const dcsr *X, const dcsr *Y, dcsr *C);

/* Reuse SpGEMM: structure once (setup), then numeric only (compute). */
typedef struct {
  cusparseSpGEMMDescr_t g;
  void *w[5];
} cs_reuse;
void cs_reuse_setup(cusparseHandle_t h, const dcsr *X, const dcsr *Y, dcsr *C, cs_reuse *R);
void cs_reuse_compute(cusparseHandle_t h, const dcsr *X, const dcsr *Y, dcsr *C, cs_reuse *R);
void cs_reuse_free(cs_reuse *R);

/* Event timing on the legacy default stream: gpu_tic(); ...; ms = gpu_toc(). */
void gpu_tic(void);
double gpu_toc(void);
/* Device-to-device copy rate (bytes read + written per second). */
double copy_bandwidth(void);
#endif
