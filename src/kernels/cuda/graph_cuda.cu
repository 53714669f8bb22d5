/* The strength graph of aggregation AMG on the device
 * (tilerap_csr_graph_device_i32): the same passes as graph_cpu.c, in the
 * same order of operations, so both engines and PETSc's AIJ give the same
 * graph bit for bit.  Entry-wise work goes a thread per entry (the row
 * found by a search), so a dense row does not serialise it; the block
 * collapse and the union G + G^T go a thread per (block) row, whose cost
 * is the row's length.  G^T comes from a stable radix sort of the entries
 * by column, which keeps each column's rows ascending. */
#include "graph_rows.h"
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>

/* last row i < m with rp[i] <= k (empty rows share their pointer) */
static __device__ __forceinline__ int32_t tr_row_of(const int32_t *__restrict__ rp, int32_t m, int64_t k)
{
  int32_t lo = 0, hi = m;
  while (hi - lo > 1) {
    const int32_t mid = (int32_t)(((int64_t)lo + hi) >> 1);
    if (rp[mid] <= k) lo = mid;
    else hi = mid;
  }
  return lo;
}

enum { TR_GBAD_ROWPTR = 1, TR_GBAD_RANGE = 2, TR_GBAD_UNSORTED = 4 };

static __global__ void k_graph_check_rows(int32_t m, const int32_t *rp, int *bad)
{
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i > m) return;
  if ((i == 0 && rp[0] != 0) || (i < m && rp[i + 1] < rp[i])) atomicOr(bad, TR_GBAD_ROWPTR);
}

static __global__ void k_graph_check_entries(int32_t m, int64_t nnz, const int32_t *rp, const int32_t *col, int *bad)
{
  const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= nnz) return;
  const int32_t c = col[k];
  if (c < 0 || c >= m) atomicOr(bad, TR_GBAD_RANGE);
  const int32_t i = tr_row_of(rp, m, k);
  if (k + 1 < rp[i + 1] && col[k + 1] <= c) atomicOr(bad, TR_GBAD_UNSORTED);
}

static __global__ void k_graph_abs(int64_t nnz, const double *val, int absval, double *out)
{
  const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k < nnz) out[k] = absval ? fabs(val[k]) : val[k];
}

/* block row I of the collapse (graph_rows.h); pass 0 counts into len[I + 1] */
static __global__ void k_graph_collapse(int pass, int32_t mb, int32_t bs, const int32_t *__restrict__ rp,
                                        const int32_t *__restrict__ col, const double *__restrict__ val, int32_t *len,
                                        const int32_t *srp, int32_t *scol, double *sval)
{
  const int64_t I = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (I >= mb) return;
  const int64_t n = tr_graph_collapse_row(I, bs, rp, col, val, pass ? scol + srp[I] : NULL, pass ? sval + srp[I] : NULL);
  if (!pass) len[I + 1] = (int32_t)n;
}

static __global__ void k_graph_rows_iota(int32_t m, int64_t nnz, const int32_t *rp, int32_t *rowof, int32_t *iota)
{
  const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= nnz) return;
  rowof[k] = tr_row_of(rp, m, k);
  iota[k] = (int32_t)k;
}

static __global__ void k_graph_col_count(int64_t nnz, const int32_t *col, int32_t *len)
{
  const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k < nnz) atomicAdd(&len[col[k] + 1], 1);
}

static __global__ void k_graph_gather_t(int64_t nnz, const int32_t *tk, const int32_t *rowof, const double *sval,
                                        int32_t *tcol, double *tval)
{
  const int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (p >= nnz) return;
  const int32_t k = tk[p];
  tcol[p] = rowof[k];
  tval[p] = sval[k];
}

/* row i of S + S^T (graph_rows.h); pass 0 counts into len[i + 1] */
static __global__ void k_graph_union(int pass, int32_t m, const int32_t *__restrict__ srp,
                                     const int32_t *__restrict__ scol, const double *__restrict__ sval,
                                     const int32_t *__restrict__ trp, const int32_t *__restrict__ tcol,
                                     const double *__restrict__ tval, int32_t *len, const int32_t *grp, int32_t *gcol,
                                     double *gval)
{
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= m) return;
  const int64_t n = tr_graph_union_row(scol + srp[i], sval + srp[i], srp[i + 1] - srp[i], tcol + trp[i], tval + trp[i],
                                       trp[i + 1] - trp[i], pass ? gcol + grp[i] : NULL, pass ? gval + grp[i] : NULL);
  if (!pass) len[i + 1] = (int32_t)n;
}

/* D(i) = sqrt(|1 / G(i,i)|), 0 where G(i,i) is 0 or not stored (PETSc:
 * reciprocal keeping 0, then sqrt of the absolute value) */
static __global__ void k_graph_diag(int32_t m, const int32_t *rp, const int32_t *col, const double *val, double *d)
{
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= m) return;
  int32_t lo = rp[i], hi = rp[i + 1];
  double g = 0;
  while (lo < hi) {
    const int32_t mid = (int32_t)(((int64_t)lo + hi) >> 1);
    if (col[mid] < i) lo = mid + 1;
    else hi = mid;
  }
  if (lo < rp[i + 1] && col[lo] == i) g = val[lo];
  d[i] = tr_graph_scaling(g);
}

static __global__ void k_graph_scale(int32_t m, int64_t nnz, const int32_t *rp, const int32_t *col, const double *d,
                                     double *val)
{
  const int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= nnz) return;
  const double v = val[k] * d[tr_row_of(rp, m, k)];
  val[k] = v * d[col[k]];
}

/* exclusive sum of len[0..n] into out (len[0] = 0), and out[n] read back */
static int tr_graph_scan(int32_t *len, int32_t *out, int32_t n, cudaStream_t s, int32_t *total)
{
  void *tmp = NULL;
  size_t bytes = 0;
  int err = TILERAP_SUCCESS;
  TR_TRY_CU(cub::DeviceScan::InclusiveSum(NULL, bytes, len, out, (int64_t)n + 1, s), "graph scan");
  TR_TRY(tr_dalloc(&tmp, bytes, s, "graph scan storage"));
  TR_TRY_CU(cub::DeviceScan::InclusiveSum(tmp, bytes, len, out, (int64_t)n + 1, s), "graph scan");
  TR_TRY_CU(cudaMemcpyAsync(total, out + n, sizeof *total, cudaMemcpyDeviceToHost, s), "graph scan");
  TR_TRY_CU(cudaStreamSynchronize(s), "graph scan");
cleanup:
  tr_dfree(tmp, s);
  return err;
}

extern "C" int tr_cuda_csr_graph(int32_t m, int32_t bs, const int32_t *rp, const int32_t *col, const double *val,
                                 unsigned flags, int32_t **g_rp, int32_t **g_col, double **g_val, int64_t *g_nnz)
{
  const cudaStream_t s = cudaStreamLegacy;
  const int32_t mb = m / bs;
  const int T = 256;
  struct { int bad; int32_t nnz; } h = {0, 0};
  int *dbad = NULL;
  int32_t *len = NULL, *srp = NULL, *scol = NULL, *trp = NULL, *tcol = NULL, *rowof = NULL, *iota = NULL,
          *tk = NULL, *tkey = NULL, *grp = NULL, *gcol = NULL;
  double *sval = NULL, *tval = NULL, *gval = NULL, *d = NULL;
  void *sort_tmp = NULL;
  const int32_t *Srp, *Scol; /* S: borrowed from A (bs = 1) or owned */
  int32_t snnz = 0, gnnz = 0;
  int err = TILERAP_SUCCESS;

  /* A's row pointers, then its entries, checked before anything reads a row */
  TR_TRY(tr_dalloc((void **)&dbad, sizeof(int), s, "graph check"));
  TR_TRY_CU(cudaMemsetAsync(dbad, 0, sizeof(int), s), "graph check");
  k_graph_check_rows<<<tr_blocks((int64_t)m + 1, T), T, 0, s>>>(m, rp, dbad);
  TR_TRY(tr_cuda_check_launch("graph check"));
  TR_TRY_CU(cudaMemcpyAsync(&h.bad, dbad, sizeof(int), cudaMemcpyDeviceToHost, s), "graph check");
  TR_TRY_CU(cudaMemcpyAsync(&h.nnz, rp + m, sizeof(int32_t), cudaMemcpyDeviceToHost, s), "graph check");
  TR_TRY_CU(cudaStreamSynchronize(s), "graph check");
  if (h.bad) {
    err = tilerap_set_error(TILERAP_ERR_INVALID, "graph: row pointers do not start at 0 or decrease");
    goto cleanup;
  }
  if (h.nnz > 0 && (!col || !val)) {
    err = tilerap_set_error(TILERAP_ERR_NULL, "graph: NULL columns or values for %d entries", h.nnz);
    goto cleanup;
  }
  if ((flags & TILERAP_GRAPH_SYMMETRIZE) && h.nnz > INT32_MAX / 2) { /* G + G^T may have twice A's entries */
    err = tilerap_set_error(TILERAP_ERR_OVERFLOW, "graph: %d entries, G + G^T may exceed 32-bit row pointers", h.nnz);
    goto cleanup;
  }
  if (h.nnz > 0) {
    k_graph_check_entries<<<tr_blocks(h.nnz, T), T, 0, s>>>(m, h.nnz, rp, col, dbad);
    TR_TRY(tr_cuda_check_launch("graph check"));
    TR_TRY_CU(cudaMemcpyAsync(&h.bad, dbad, sizeof(int), cudaMemcpyDeviceToHost, s), "graph check");
    TR_TRY_CU(cudaStreamSynchronize(s), "graph check");
    if (h.bad & TR_GBAD_RANGE) {
      err = tilerap_set_error(TILERAP_ERR_RANGE, "graph: a column lies outside 0..%d", m - 1);
      goto cleanup;
    }
    if (h.bad) {
      err = tilerap_set_error(TILERAP_ERR_UNSORTED, "graph: columns of a row not strictly increasing");
      goto cleanup;
    }
  }

  /* S: |A| (or A) for bs = 1, else the block collapse */
  TR_TRY(tr_dalloc((void **)&len, ((size_t)mb + 1) * sizeof(int32_t), s, "graph row lengths"));
  if (bs == 1) {
    Srp = rp;
    Scol = col;
    snnz = h.nnz;
    TR_TRY(tr_dalloc((void **)&sval, (size_t)snnz * sizeof(double), s, "graph values"));
    if (snnz) k_graph_abs<<<tr_blocks(snnz, T), T, 0, s>>>(snnz, val, (flags & TILERAP_GRAPH_ABS) != 0, sval);
    TR_TRY(tr_cuda_check_launch("graph values"));
  } else {
    TR_TRY(tr_dalloc((void **)&srp, ((size_t)mb + 1) * sizeof(int32_t), s, "graph collapse"));
    TR_TRY_CU(cudaMemsetAsync(len, 0, sizeof(int32_t), s), "graph collapse");
    if (mb) k_graph_collapse<<<tr_blocks(mb, T), T, 0, s>>>(0, mb, bs, rp, col, val, len, NULL, NULL, NULL);
    TR_TRY(tr_cuda_check_launch("graph collapse"));
    TR_TRY(tr_graph_scan(len, srp, mb, s, &snnz));
    TR_TRY(tr_dalloc((void **)&scol, (size_t)snnz * sizeof(int32_t), s, "graph collapse"));
    TR_TRY(tr_dalloc((void **)&sval, (size_t)snnz * sizeof(double), s, "graph collapse"));
    if (mb) k_graph_collapse<<<tr_blocks(mb, T), T, 0, s>>>(1, mb, bs, rp, col, val, NULL, srp, scol, sval);
    TR_TRY(tr_cuda_check_launch("graph collapse"));
    Srp = srp;
    Scol = scol;
  }

  TR_TRY(tr_dalloc((void **)&grp, ((size_t)mb + 1) * sizeof(int32_t), s, "graph row pointers"));
  if (flags & TILERAP_GRAPH_SYMMETRIZE) {
    /* S^T: entries sorted stably by column (rows stay ascending) */
    int bits = 1;
    while (bits < 31 && ((int64_t)1 << bits) < mb) bits++;
    size_t sort_bytes = 0;
    TR_TRY(tr_dalloc((void **)&trp, ((size_t)mb + 1) * sizeof(int32_t), s, "graph transpose"));
    TR_TRY(tr_dalloc((void **)&rowof, (size_t)snnz * sizeof(int32_t), s, "graph transpose"));
    TR_TRY(tr_dalloc((void **)&iota, (size_t)snnz * sizeof(int32_t), s, "graph transpose"));
    TR_TRY(tr_dalloc((void **)&tk, (size_t)snnz * sizeof(int32_t), s, "graph transpose"));
    TR_TRY(tr_dalloc((void **)&tkey, (size_t)snnz * sizeof(int32_t), s, "graph transpose"));
    TR_TRY(tr_dalloc((void **)&tcol, (size_t)snnz * sizeof(int32_t), s, "graph transpose"));
    TR_TRY(tr_dalloc((void **)&tval, (size_t)snnz * sizeof(double), s, "graph transpose"));
    TR_TRY_CU(cudaMemsetAsync(len, 0, ((size_t)mb + 1) * sizeof(int32_t), s), "graph transpose");
    if (snnz) {
      k_graph_rows_iota<<<tr_blocks(snnz, T), T, 0, s>>>(mb, snnz, Srp, rowof, iota);
      TR_TRY(tr_cuda_check_launch("graph transpose"));
      k_graph_col_count<<<tr_blocks(snnz, T), T, 0, s>>>(snnz, Scol, len);
      TR_TRY(tr_cuda_check_launch("graph transpose"));
    }
    int32_t tn = 0;
    TR_TRY(tr_graph_scan(len, trp, mb, s, &tn));
    if (snnz) {
      TR_TRY_CU(cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, (const uint32_t *)Scol, (uint32_t *)tkey, iota, tk, (int64_t)snnz, 0, bits, s),
                "graph transpose sort");
      TR_TRY(tr_dalloc(&sort_tmp, sort_bytes, s, "graph transpose sort"));
      TR_TRY_CU(cub::DeviceRadixSort::SortPairs(sort_tmp, sort_bytes, (const uint32_t *)Scol, (uint32_t *)tkey, iota, tk, (int64_t)snnz, 0, bits, s),
                "graph transpose sort");
      k_graph_gather_t<<<tr_blocks(snnz, T), T, 0, s>>>(snnz, tk, rowof, sval, tcol, tval);
      TR_TRY(tr_cuda_check_launch("graph transpose"));
    }
    /* S + S^T, counted then written */
    TR_TRY_CU(cudaMemsetAsync(len, 0, sizeof(int32_t), s), "graph union");
    if (mb)
      k_graph_union<<<tr_blocks(mb, T), T, 0, s>>>(0, mb, Srp, Scol, sval, trp, tcol, tval, len, NULL, NULL, NULL);
    TR_TRY(tr_cuda_check_launch("graph union"));
    TR_TRY(tr_graph_scan(len, grp, mb, s, &gnnz));
    TR_TRY(tr_dalloc((void **)&gcol, (size_t)gnnz * sizeof(int32_t), s, "graph columns"));
    TR_TRY(tr_dalloc((void **)&gval, (size_t)gnnz * sizeof(double), s, "graph values"));
    if (mb)
      k_graph_union<<<tr_blocks(mb, T), T, 0, s>>>(1, mb, Srp, Scol, sval, trp, tcol, tval, NULL, grp, gcol, gval);
    TR_TRY(tr_cuda_check_launch("graph union"));
  } else {
    gnnz = snnz;
    TR_TRY(tr_dalloc((void **)&gcol, (size_t)gnnz * sizeof(int32_t), s, "graph columns"));
    TR_TRY_CU(cudaMemcpyAsync(grp, Srp, ((size_t)mb + 1) * sizeof(int32_t), cudaMemcpyDeviceToDevice, s), "graph");
    TR_TRY_CU(cudaMemcpyAsync(gcol, Scol, (size_t)gnnz * sizeof(int32_t), cudaMemcpyDeviceToDevice, s), "graph");
    gval = sval;
    sval = NULL;
  }

  if (flags & TILERAP_GRAPH_SCALE) {
    TR_TRY(tr_dalloc((void **)&d, (size_t)mb * sizeof(double), s, "graph scaling"));
    if (mb) k_graph_diag<<<tr_blocks(mb, T), T, 0, s>>>(mb, grp, gcol, gval, d);
    TR_TRY(tr_cuda_check_launch("graph scaling"));
    if (gnnz) k_graph_scale<<<tr_blocks(gnnz, T), T, 0, s>>>(mb, gnnz, grp, gcol, d, gval);
    TR_TRY(tr_cuda_check_launch("graph scaling"));
  }
  /* the last passes read the caller's arrays: done before it gets them back */
  TR_TRY_CU(cudaStreamSynchronize(s), "graph");
  *g_rp = grp;
  *g_col = gcol;
  *g_val = gval;
  *g_nnz = gnnz;
  grp = NULL;
  gcol = NULL;
  gval = NULL;
cleanup:
  tr_dfree(dbad, s); tr_dfree(len, s); tr_dfree(srp, s); tr_dfree(scol, s); tr_dfree(sval, s);
  tr_dfree(trp, s); tr_dfree(rowof, s); tr_dfree(iota, s); tr_dfree(tk, s); tr_dfree(tkey, s);
  tr_dfree(tcol, s); tr_dfree(tval, s); tr_dfree(sort_tmp, s); tr_dfree(d, s);
  tr_dfree(grp, s); tr_dfree(gcol, s); tr_dfree(gval, s);
  return err;
}
