/* cuSPARSE and CUDA-event helpers shared by the GPU benchmarks (bench_cusparse.h). */
#include "bench_cusparse.h"
#include "bench_common.h"
#include <string.h>

static cudaEvent_t ev0, ev1;

int bench_cusparse_pool(void)
{
  static int on = -1;
  if (on < 0) {
    const char *s = getenv("BENCH_CUSPARSE_POOL");
    on = s && s[0] == '1';
    if (on) { /* the device's default pool, keeping what is freed */
      cudaMemPool_t pool;
      int dev = 0;
      uint64_t keep = UINT64_MAX;
      CK(cudaGetDevice(&dev));
      CK(cudaDeviceGetDefaultMemPool(&pool, dev));
      CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }
  }
  return on;
}
/* live allocations and their sizes, for the memory columns */
#define BENCH_LIVE_MAX 256
static struct { void *p; size_t bytes; } live[BENCH_LIVE_MAX];
static size_t dmem_now, dmem_peak;
size_t bench_dmem_in_use(void) { return dmem_now; }
size_t bench_dmem_peak(void) { return dmem_peak; }
void bench_dmem_reset_peak(void) { dmem_peak = dmem_now; }

cudaError_t bench_dmalloc(void **p, size_t bytes)
{
  cudaError_t e = bench_cusparse_pool() ? cudaMallocAsync(p, bytes, 0) : cudaMalloc(p, bytes);
  if (e != cudaSuccess) return e;
  int i = 0;
  while (i < BENCH_LIVE_MAX && live[i].p) i++;
  if (i == BENCH_LIVE_MAX) { fprintf(stderr, "bench_dmalloc: more than %d live allocations\n", BENCH_LIVE_MAX); exit(2); }
  live[i].p = *p;
  live[i].bytes = bytes;
  dmem_now += bytes;
  if (dmem_now > dmem_peak) dmem_peak = dmem_now;
  return e;
}
void bench_dfree(void *p)
{
  if (!p) return;
  for (int i = 0; i < BENCH_LIVE_MAX; i++)
    if (live[i].p == p) { dmem_now -= live[i].bytes; live[i].p = NULL; break; }
  if (bench_cusparse_pool()) cudaFreeAsync(p, 0);
  else cudaFree(p);
}

void gpu_tic(void)
{
  if (!ev0) { CK(cudaEventCreate(&ev0)); CK(cudaEventCreate(&ev1)); }
  CK(cudaEventRecord(ev0, 0));
}

double gpu_toc(void)
{
  float ms;
  CK(cudaEventRecord(ev1, 0));
  CK(cudaEventSynchronize(ev1));
  CK(cudaEventElapsedTime(&ms, ev0, ev1));
  return ms;
}

void dcsr_describe(dcsr *D)
{
  CS(cusparseCreateCsr(&D->d, D->m, D->n, D->nnz, D->rp, D->ci, D->v, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
}

void dcsr_upload(const tilerap_csr *A, dcsr *D)
{
  if (A->nnz > INT32_MAX) { fprintf(stderr, "dcsr_upload: %lld entries exceed cuSPARSE's 32-bit indices here\n", (long long)A->nnz); exit(2); }
  int *rp = malloc(((size_t)A->m + 1) * sizeof *rp);
  for (int32_t i = 0; i <= A->m; i++) rp[i] = (int)A->rowptr[i];
  D->m = A->m; D->n = A->n; D->nnz = A->nnz;
  CK(bench_dmalloc((void **)&D->rp, ((size_t)A->m + 1) * sizeof(int)));
  CK(bench_dmalloc((void **)&D->ci, (size_t)(A->nnz ? A->nnz : 1) * sizeof(int)));
  CK(bench_dmalloc((void **)&D->v, (size_t)(A->nnz ? A->nnz : 1) * sizeof(double)));
  CK(cudaMemcpy(D->rp, rp, ((size_t)A->m + 1) * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(D->ci, A->colidx, (size_t)A->nnz * sizeof(int), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(D->v, A->val, (size_t)A->nnz * sizeof(double), cudaMemcpyHostToDevice));
  dcsr_describe(D);
  free(rp);
}
void dcsr_free(dcsr *D)
{
  if (D->d) cusparseDestroySpMat(D->d);
  bench_dfree(D->rp); bench_dfree(D->ci); bench_dfree(D->v);
  memset(D, 0, sizeof *D);
}
tilerap_csr *dcsr_download(const dcsr *D)
{
  tilerap_csr *C = NULL;
  int *rp = malloc(((size_t)D->m + 1) * sizeof *rp);
  TR(tilerap_csr_create(D->m, D->n, D->nnz, &C));
  CK(cudaMemcpy(rp, D->rp, ((size_t)D->m + 1) * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i <= D->m; i++) C->rowptr[i] = rp[i];
  CK(cudaMemcpy(C->colidx, D->ci, (size_t)D->nnz * sizeof(int), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(C->val, D->v, (size_t)D->nnz * sizeof(double), cudaMemcpyDeviceToHost));
  free(rp);
  return C;
}

/* P^T by csr2csc (numeric), into an allocated T (m,n swapped) */
void cs_transpose(cusparseHandle_t h, const dcsr *P, dcsr *T, void **buf, size_t *bufsz)
{
  size_t need = 0;
  CS(cusparseCsr2cscEx2_bufferSize(h, P->m, P->n, (int)P->nnz, P->v, P->rp, P->ci, T->v, T->rp, T->ci, CUDA_R_64F,
                                   CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, &need));
  if (need > *bufsz) { bench_dfree(*buf); CK(bench_dmalloc(buf, need)); *bufsz = need; }
  CS(cusparseCsr2cscEx2(h, P->m, P->n, (int)P->nnz, P->v, P->rp, P->ci, T->v, T->rp, T->ci, CUDA_R_64F,
                        CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG1, *buf));
}
void dcsr_alloc_T(const dcsr *P, dcsr *T)
{
  T->m = P->n; T->n = P->m; T->nnz = P->nnz;
  CK(bench_dmalloc((void **)&T->rp, ((size_t)T->m + 1) * sizeof(int)));
  CK(bench_dmalloc((void **)&T->ci, (size_t)(T->nnz ? T->nnz : 1) * sizeof(int)));
  CK(bench_dmalloc((void **)&T->v, (size_t)(T->nnz ? T->nnz : 1) * sizeof(double)));
}

/* C's arrays once the SpGEMM knows its nnz (cuSPARSE fills them at copy). */
static void cs_alloc_result(dcsr *C)
{
  int64_t r, c, nz;
  CS(cusparseSpMatGetSize(C->d, &r, &c, &nz));
  C->nnz = nz;
  CK(bench_dmalloc((void **)&C->rp, ((size_t)C->m + 1) * sizeof(int)));
  CK(bench_dmalloc((void **)&C->ci, (size_t)(nz ? nz : 1) * sizeof(int)));
  CK(bench_dmalloc((void **)&C->v, (size_t)(nz ? nz : 1) * sizeof(double)));
  CS(cusparseCsrSetPointers(C->d, C->rp, C->ci, C->v));
}

/* One-shot generic SpGEMM C = X*Y (C allocated here). */
void cs_spgemm(cusparseHandle_t h, const dcsr *X, const dcsr *Y, dcsr *C)
{
  double one = 1.0, zero = 0.0;
  cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  cusparseSpGEMMDescr_t g;
  size_t b1 = 0, b2 = 0;
  void *w1 = NULL, *w2 = NULL;
  memset(C, 0, sizeof *C);
  C->m = X->m; C->n = Y->n;
  CS(cusparseCreateCsr(&C->d, C->m, C->n, 0, NULL, NULL, NULL, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  CS(cusparseSpGEMM_createDescr(&g));
  CS(cusparseSpGEMM_workEstimation(h, op, op, &one, X->d, Y->d, &zero, C->d, CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, g, &b1, NULL));
  CK(bench_dmalloc(&w1, b1 ? b1 : 1));
  CS(cusparseSpGEMM_workEstimation(h, op, op, &one, X->d, Y->d, &zero, C->d, CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, g, &b1, w1));
  CS(cusparseSpGEMM_compute(h, op, op, &one, X->d, Y->d, &zero, C->d, CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, g, &b2, NULL));
  CK(bench_dmalloc(&w2, b2 ? b2 : 1));
  CS(cusparseSpGEMM_compute(h, op, op, &one, X->d, Y->d, &zero, C->d, CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, g, &b2, w2));
  cs_alloc_result(C);
  CS(cusparseSpGEMM_copy(h, op, op, &one, X->d, Y->d, &zero, C->d, CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, g));
  CS(cusparseSpGEMM_destroyDescr(g));
  bench_dfree(w1); bench_dfree(w2);
}

void cs_reuse_setup(cusparseHandle_t h, const dcsr *X, const dcsr *Y, dcsr *C, cs_reuse *R)
{
  cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  size_t b[5] = {0};
  memset(C, 0, sizeof *C);
  memset(R, 0, sizeof *R);
  C->m = X->m; C->n = Y->n;
  CS(cusparseCreateCsr(&C->d, C->m, C->n, 0, NULL, NULL, NULL, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                       CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
  CS(cusparseSpGEMM_createDescr(&R->g));
  CS(cusparseSpGEMMreuse_workEstimation(h, op, op, X->d, Y->d, C->d, CUSPARSE_SPGEMM_DEFAULT, R->g, &b[0], NULL));
  CK(bench_dmalloc(&R->w[0], b[0] ? b[0] : 1));
  CS(cusparseSpGEMMreuse_workEstimation(h, op, op, X->d, Y->d, C->d, CUSPARSE_SPGEMM_DEFAULT, R->g, &b[0], R->w[0]));
  CS(cusparseSpGEMMreuse_nnz(h, op, op, X->d, Y->d, C->d, CUSPARSE_SPGEMM_DEFAULT, R->g, &b[1], NULL, &b[2], NULL, &b[3], NULL));
  for (int i = 1; i < 4; i++) CK(bench_dmalloc(&R->w[i], b[i] ? b[i] : 1));
  CS(cusparseSpGEMMreuse_nnz(h, op, op, X->d, Y->d, C->d, CUSPARSE_SPGEMM_DEFAULT, R->g, &b[1], R->w[1], &b[2], R->w[2],
                             &b[3], R->w[3]));
  cs_alloc_result(C);
  CS(cusparseSpGEMMreuse_copy(h, op, op, X->d, Y->d, C->d, CUSPARSE_SPGEMM_DEFAULT, R->g, &b[4], NULL));
  CK(bench_dmalloc(&R->w[4], b[4] ? b[4] : 1));
  CS(cusparseSpGEMMreuse_copy(h, op, op, X->d, Y->d, C->d, CUSPARSE_SPGEMM_DEFAULT, R->g, &b[4], R->w[4]));
  bench_dfree(R->w[1]); bench_dfree(R->w[2]); R->w[1] = R->w[2] = NULL; /* as the CUDA sample: not needed by compute */
}
void cs_reuse_compute(cusparseHandle_t h, const dcsr *X, const dcsr *Y, dcsr *C, cs_reuse *R)
{
  double one = 1.0, zero = 0.0;
  cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  CS(cusparseSpGEMMreuse_compute(h, op, op, &one, X->d, Y->d, &zero, C->d, CUDA_R_64F, CUSPARSE_SPGEMM_DEFAULT, R->g));
}
void cs_reuse_free(cs_reuse *R)
{
  cusparseSpGEMM_destroyDescr(R->g);
  for (int i = 0; i < 5; i++) bench_dfree(R->w[i]);
}

double copy_bandwidth(void)
{
  size_t n = (size_t)1 << 30;
  void *a, *b;
  CK(cudaMalloc(&a, n)); CK(cudaMalloc(&b, n));
  CK(cudaMemset(a, 1, n));
  CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
  gpu_tic();
  for (int i = 0; i < 10; i++) CK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
  double ms = gpu_toc();
  cudaFree(a); cudaFree(b);
  return 2.0 * 10 * (double)n / (ms * 1e-3);
}

