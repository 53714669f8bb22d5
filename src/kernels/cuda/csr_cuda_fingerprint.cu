/* Content fingerprint of a device CSR matrix (see csr_fingerprint.h):
 * a warp per row (coarse operators have rows of hundreds of entries),
 * each lane summing its entries' hashes, one atomic add per warp.  The
 * sum wraps, so the order of the additions does not matter. */
#include "spgemm_cuda.cuh"
#include "csr_fingerprint.h"

/* Row pointers first (start at 0, never decrease): the hashing kernel
 * reads every row's entries, so bad ones must stop the call before it. */
static __global__ void k_fingerprint_rowptr(int32_t m, const int32_t *rp, int *bad)
{
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i > m) return;
  if ((i == 0 && rp[0] != 0) || (i < m && rp[i + 1] < rp[i])) atomicExch(bad, 1);
}

static __global__ void k_csr_fingerprint(int32_t m, const int32_t *rp, const int32_t *col, const double *val,
                                         int ordered, unsigned long long *out)
{
  const int lane = threadIdx.x & 31;
  const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
  uint64_t sum = 0;
  for (int64_t i = warp; i < m; i += nwarps) {
    const int64_t b = rp[i], e = rp[i + 1];
    for (int64_t k = b + lane; k < e; k += 32) {
      uint64_t vb = 0;
      if (val) vb = (uint64_t)__double_as_longlong(val[k]);
      sum += tr_fp_entry((int32_t)i, col[k], vb, ordered ? (int64_t)(k - b) + 1 : 0);
    }
  }
  for (int d = 16; d; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
  if (lane == 0 && sum) atomicAdd(out, (unsigned long long)sum);
}

extern "C" int tr_cuda_csr_fingerprint(int32_t m, const int32_t *rowptr, const int32_t *colidx, const double *val,
                                       int ordered, uint64_t *sum, int64_t *nnz)
{
  const cudaStream_t s = cudaStreamLegacy;
  struct { unsigned long long sum; int bad; int32_t nnz; } h = {0, 0, 0}, *d = NULL;
  int err = tr_dalloc((void **)&d, sizeof h, s, "CSR fingerprint");
  if (err) return err;
  cudaError_t ce = cudaMemcpyAsync(d, &h, sizeof h, cudaMemcpyHostToDevice, s);
  if (ce == cudaSuccess) ce = cudaMemcpyAsync(&d->nnz, rowptr + m, sizeof(int32_t), cudaMemcpyDeviceToDevice, s);
  if (ce == cudaSuccess) ce = cudaMemcpyAsync(&h.nnz, rowptr + m, sizeof(int32_t), cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) {
    k_fingerprint_rowptr<<<tr_blocks((int64_t)m + 1, 256), 256, 0, s>>>(m, rowptr, &d->bad);
    ce = cudaGetLastError();
  }
  if (ce == cudaSuccess) ce = cudaMemcpyAsync(&h.bad, &d->bad, sizeof h.bad, cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
  if (ce == cudaSuccess && h.bad) {
    tr_dfree(d, s);
    return tilerap_set_error(TILERAP_ERR_INVALID, "CSR fingerprint: row pointers do not start at 0 or decrease");
  }
  if (ce == cudaSuccess && h.nnz > 0 && !colidx) {
    tr_dfree(d, s);
    return tilerap_set_error(TILERAP_ERR_NULL, "CSR fingerprint: column indices are NULL");
  }
  if (ce == cudaSuccess && m > 0 && h.nnz > 0) {
    const int64_t warps = m < 262144 ? m : 262144;
    k_csr_fingerprint<<<tr_blocks(warps * 32, 256), 256, 0, s>>>(m, rowptr, colidx, val, ordered, &d->sum);
    ce = cudaGetLastError();
  }
  if (ce == cudaSuccess) ce = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
  if (ce == cudaSuccess) ce = cudaStreamSynchronize(s);
  tr_dfree(d, s);
  if (ce != cudaSuccess) return tr_cuda_error(ce, "CSR fingerprint");
  if (h.bad) return tilerap_set_error(TILERAP_ERR_INVALID, "CSR fingerprint: row pointers do not start at 0 or decrease");
  *sum = h.sum;
  *nnz = h.nnz;
  return TILERAP_SUCCESS;
}
