/* Device CSR operands with 32-bit row pointers (hypre's and AIJCUSPARSE's
 * layout) for the device CSR products (csr_device_product.c): checks,
 * 64-bit row pointers for the product kernels, the transposed operand as a
 * CSR view, and C written out into the caller's arrays.  All on the legacy
 * stream, like the conversions these products replace. */
#include "spgemm_cuda.cuh"
#include <cub/cub.cuh>
#include <limits.h>

static const cudaStream_t tr_s = cudaStreamLegacy;

/* What the checks of one operand find, read back once for all operands. */
typedef struct {
  int rp0, bad_rows, bad_cols, pad;
  long long nnz;
  unsigned long long longest;
} tr_dcsr_status;

/* rows: pointers that decrease or leave [0, rowptr[m]] (the first such
 * row in bad_rows), the longest row, and 64-bit row pointers; thread 0
 * also reports rowptr[0] and rowptr[m].  Every lane reaches the warp's
 * reduction. */
static __global__ void k_dcsr_rows(int32_t m, const int32_t *__restrict__ rp, int64_t *rp64, tr_dcsr_status *st)
{
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t nnz = rp[m];
  unsigned len = 0;
  if (i <= m) rp64[i] = rp[i];
  if (i == 0) { st->rp0 = rp[0]; st->nnz = nnz; }
  if (i < m) {
    const int64_t b = rp[i], e = rp[i + 1];
    if (e < b || b < 0 || e > nnz) atomicMin(&st->bad_rows, (int)i);
    else len = (unsigned)(e - b);
  }
  tr_warp_atomic_max(len, &st->longest);
}

/* columns outside [0, n): the first such row in bad_cols (a grid-stride
 * loop over rowptr[m] entries, read here, so that no count goes through
 * the host first; the row is searched only for a bad entry, and means
 * something only when the pointers passed) */
static __global__ void k_dcsr_cols(int32_t m, int32_t n, const int32_t *__restrict__ rp,
                                   const int32_t *__restrict__ col, tr_dcsr_status *st)
{
  const int64_t nnz = rp[m];
  for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < nnz; p += (int64_t)gridDim.x * blockDim.x) {
    const int32_t c = col[p];
    if (c >= 0 && c < n) continue;
    int32_t lo = 0, hi = m; /* last row with rp[row] <= p */
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      if (rp[mid] <= p) lo = mid;
      else hi = mid;
    }
    atomicMin(&st->bad_cols, lo);
  }
}

static int tr_dcsr_verdict(const tr_dcsr_op *op, const tr_dcsr_status *st)
{
  if (st->rp0 != 0) return tilerap_set_error(TILERAP_ERR_INVALID, "%s: rowptr[0] = %d, expected 0", op->name, st->rp0);
  if (st->nnz < 0)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: rowptr[%d] = %lld is negative", op->name, op->m, st->nnz);
  if (st->nnz > 0 && !op->col) return tilerap_set_error(TILERAP_ERR_NULL, "%s: column indices are NULL", op->name);
  if (st->bad_rows != INT_MAX)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: row pointers decrease or leave [0, %lld] at row %d", op->name,
                             st->nnz, st->bad_rows);
  if (st->bad_cols != INT_MAX)
    return tilerap_set_error(TILERAP_ERR_RANGE, "%s: a column index of row %d lies outside [0, %d)", op->name,
                             st->bad_cols, op->n);
  return TILERAP_SUCCESS;
}

/* Checks device CSR operands (rowptr[0] = 0, pointers non-decreasing,
 * columns in range; rows in any order) and gives each its entry count,
 * 64-bit row pointers (op->rp64, freed by the caller with tr_dfree) and
 * longest row.  One wait for the device for all of them: a symbolic
 * phase. */
extern "C" int tr_cuda_dcsr_operands(tr_dcsr_op *ops, int count)
{
  tr_dcsr_status *st = NULL, hst[4];
  int err = TILERAP_SUCCESS;
  if (count < 1 || count > 4) return tilerap_set_error(TILERAP_ERR_INVALID, "internal: %d operands", count);
  for (int k = 0; k < count; k++) {
    ops[k].rp64 = NULL;
    hst[k] = tr_dcsr_status{-1, INT_MAX, INT_MAX, 0, 0, 0};
  }
  TR_TRY(tr_dalloc((void **)&st, sizeof hst, tr_s, "device CSR check"));
  TR_TRY_CU(cudaMemcpyAsync(st, hst, (size_t)count * sizeof *st, cudaMemcpyHostToDevice, tr_s), "device CSR check");
  for (int k = 0; k < count; k++) {
    tr_dcsr_op *op = &ops[k];
    TR_TRY(tr_dalloc((void **)&op->rp64, ((size_t)op->m + 1) * sizeof(int64_t), tr_s, "device CSR row pointers"));
    k_dcsr_rows<<<tr_blocks((int64_t)op->m + 1, 256), 256, 0, tr_s>>>(op->m, op->rp, op->rp64, st + k);
    TR_TRY(tr_cuda_check_launch("device CSR check"));
    if (op->col) {
      k_dcsr_cols<<<1024, 256, 0, tr_s>>>(op->m, op->n, op->rp, op->col, st + k);
      TR_TRY(tr_cuda_check_launch("device CSR check"));
    }
  }
  TR_TRY_CU(cudaMemcpyAsync(hst, st, (size_t)count * sizeof *st, cudaMemcpyDeviceToHost, tr_s), "device CSR check");
  TR_TRY_CU(cudaStreamSynchronize(tr_s), "device CSR check");
  for (int k = 0; k < count && !err; k++) {
    err = tr_dcsr_verdict(&ops[k], &hst[k]);
    ops[k].nnz = hst[k].nnz;
    ops[k].longest = (int64_t)hst[k].longest;
  }
cleanup:
  tr_dfree(st, tr_s);
  if (err)
    for (int k = 0; k < count; k++) { tr_dfree(ops[k].rp64, tr_s); ops[k].rp64 = NULL; }
  return err;
}

/* rows of the transpose from its column-sorted keys: row c starts at the
 * first key >= c */
static __global__ void k_dcsr_t_rowptr(int64_t nnz, int32_t n, const int32_t *__restrict__ key, int64_t *trp)
{
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= nnz) return;
  const int32_t c = key[q], prev = q ? key[q - 1] : -1;
  for (int64_t r = (int64_t)prev + 1; r <= c; r++) trp[r] = q;
  if (q == nnz - 1)
    for (int64_t r = (int64_t)c + 1; r <= n; r++) trp[r] = nnz;
}

/* entry e = pos[q] of X, now at q of X^T: its row in X is X^T's column */
static __global__ void k_dcsr_t_entries(int64_t nnz, int32_t m, const int64_t *__restrict__ rp,
                                        const int32_t *__restrict__ pos, int32_t *tcol, int64_t *tvidx)
{
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q >= nnz) return;
  const int32_t e = pos[q];
  tcol[q] = (int32_t)tr_tile_of_entry(rp, 0, m, e);
  tvidx[q] = e;
}

static __global__ void k_iota(int64_t n, int32_t *x)
{
  const int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (q < n) x[q] = (int32_t)q;
}

static int tr_bits_for(uint32_t x) /* bits that hold 0 .. x */
{
  int b = 1;
  while (b < 32 && (x >> b)) b++;
  return b;
}

/* X^T (n x m) of an m x n CSR (rp64, col, nnz < 2^31) as a view: row
 * pointers, columns and each entry's position in X.  A stable radix sort
 * by column, so each row of X^T lists X's rows in ascending order (the
 * order of hypre's device transpose), whatever the order within X's rows. */
extern "C" int tr_cuda_dcsr_transpose(int32_t m, int32_t n, const int64_t *rp64, const int32_t *col, int64_t nnz,
                                      int64_t **trp_out, int32_t **tcol_out, int64_t **tvidx_out)
{
  int64_t *trp = NULL, *tvidx = NULL;
  int32_t *tcol = NULL, *key = NULL, *pos_in = NULL, *pos = NULL;
  void *tmp = NULL;
  size_t tmp_bytes = 0;
  int err = TILERAP_SUCCESS;
  *trp_out = NULL; *tcol_out = NULL; *tvidx_out = NULL;
  TR_TRY(tr_dalloc((void **)&trp, ((size_t)n + 1) * sizeof(int64_t), tr_s, "transposed operand row pointers"));
  TR_TRY(tr_dalloc((void **)&tcol, (size_t)nnz * sizeof(int32_t), tr_s, "transposed operand columns"));
  TR_TRY(tr_dalloc((void **)&tvidx, (size_t)nnz * sizeof(int64_t), tr_s, "transposed operand positions"));
  if (nnz == 0) {
    TR_TRY_CU(cudaMemsetAsync(trp, 0, ((size_t)n + 1) * sizeof(int64_t), tr_s), "transposed operand");
  } else {
    const int bits = tr_bits_for((uint32_t)(n > 0 ? n - 1 : 0));
    TR_TRY(tr_dalloc((void **)&key, (size_t)nnz * sizeof(int32_t), tr_s, "transpose keys"));
    TR_TRY(tr_dalloc((void **)&pos_in, (size_t)nnz * sizeof(int32_t), tr_s, "transpose positions"));
    TR_TRY(tr_dalloc((void **)&pos, (size_t)nnz * sizeof(int32_t), tr_s, "transpose positions"));
    k_iota<<<tr_blocks(nnz, 256), 256, 0, tr_s>>>(nnz, pos_in);
    TR_TRY(tr_cuda_check_launch("transpose positions"));
    TR_TRY_CU(cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, col, key, pos_in, pos, nnz, 0, bits, tr_s),
              "transpose sort");
    TR_TRY(tr_dalloc(&tmp, tmp_bytes, tr_s, "transpose sort storage"));
    TR_TRY_CU(cub::DeviceRadixSort::SortPairs(tmp, tmp_bytes, col, key, pos_in, pos, nnz, 0, bits, tr_s),
              "transpose sort");
    k_dcsr_t_rowptr<<<tr_blocks(nnz, 256), 256, 0, tr_s>>>(nnz, n, key, trp);
    TR_TRY(tr_cuda_check_launch("transposed operand row pointers"));
    k_dcsr_t_entries<<<tr_blocks(nnz, 256), 256, 0, tr_s>>>(nnz, m, rp64, pos, tcol, tvidx);
    TR_TRY(tr_cuda_check_launch("transposed operand entries"));
  }
  *trp_out = trp; *tcol_out = tcol; *tvidx_out = tvidx;
  trp = NULL; tcol = NULL; tvidx = NULL;
cleanup:
  tr_dfree(trp, tr_s); tr_dfree(tcol, tr_s); tr_dfree(tvidx, tr_s);
  tr_dfree(key, tr_s); tr_dfree(pos_in, tr_s); tr_dfree(pos, tr_s); tr_dfree(tmp, tr_s);
  return err;
}

static __global__ void k_narrow_rowptr(int32_t m, const int64_t *__restrict__ rp64, int32_t *rp)
{
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i <= m) rp[i] = (int32_t)rp64[i];
}

/* rows without their diagonal entry (sorted rows): the first in *bad */
static __global__ void k_diag_check(int32_t m, const int64_t *__restrict__ rp, const int32_t *__restrict__ col, int *bad)
{
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= m) return;
  const int64_t d = tr_lower_bound(col, rp[i], rp[i + 1], (int32_t)i);
  if (d == rp[i + 1] || col[d] != i) atomicMin(bad, (int)i);
}

/* entry p of a sorted row goes to the front if it is the diagonal, one
 * place later if it comes before it */
static __global__ void k_diag_place(int32_t m, int64_t nnz, const int64_t *__restrict__ rp,
                                    const int32_t *__restrict__ col, const double *__restrict__ val, int32_t *ocol,
                                    double *oval, int64_t *map)
{
  const int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (p >= nnz) return;
  const int32_t i = (int32_t)tr_tile_of_entry(rp, 0, m, p), c = col[p];
  const int64_t to = c == i ? rp[i] : (c < i ? p + 1 : p);
  ocol[to] = c;
  if (val && oval) oval[to] = val[p];
  if (map) map[p] = to;
}

/* C's sorted CSR (rp64, col; values val, may be NULL) into the caller's
 * arrays; diag_first: each row's diagonal entry first (square C; a row
 * without one gives TILERAP_ERR_STRUCTURE before any output is written),
 * and where each sorted entry went in map (optional).  Waits for the
 * device. */
extern "C" int tr_cuda_dcsr_write(int32_t m, int64_t nnz, const int64_t *rp64, const int32_t *col, const double *val,
                                  int diag_first, int32_t *orp, int32_t *ocol, double *oval, int64_t *map)
{
  int *bad = NULL, bad_h = INT_MAX;
  int err = TILERAP_SUCCESS;
  if (diag_first && m > 0) {
    TR_TRY(tr_dalloc((void **)&bad, sizeof(int), tr_s, "diagonal check"));
    TR_TRY_CU(cudaMemcpyAsync(bad, &bad_h, sizeof bad_h, cudaMemcpyHostToDevice, tr_s), "diagonal check");
    k_diag_check<<<tr_blocks(m, 256), 256, 0, tr_s>>>(m, rp64, col, bad);
    TR_TRY(tr_cuda_check_launch("diagonal check"));
    TR_TRY_CU(cudaMemcpyAsync(&bad_h, bad, sizeof bad_h, cudaMemcpyDeviceToHost, tr_s), "diagonal check");
    TR_TRY_CU(cudaStreamSynchronize(tr_s), "diagonal check");
    if (bad_h != INT_MAX) {
      err = tilerap_set_error(TILERAP_ERR_STRUCTURE, "C's row %d has no diagonal entry to put first", bad_h);
      goto cleanup;
    }
  }
  k_narrow_rowptr<<<tr_blocks((int64_t)m + 1, 256), 256, 0, tr_s>>>(m, rp64, orp);
  TR_TRY(tr_cuda_check_launch("C's row pointers"));
  if (nnz > 0 && diag_first) {
    k_diag_place<<<tr_blocks(nnz, 256), 256, 0, tr_s>>>(m, nnz, rp64, col, val, ocol, oval, map);
    TR_TRY(tr_cuda_check_launch("C diagonal first"));
  } else if (nnz > 0) {
    TR_TRY_CU(cudaMemcpyAsync(ocol, col, (size_t)nnz * sizeof(int32_t), cudaMemcpyDeviceToDevice, tr_s), "C's columns");
    if (oval && val && oval != val)
      TR_TRY_CU(cudaMemcpyAsync(oval, val, (size_t)nnz * sizeof(double), cudaMemcpyDeviceToDevice, tr_s), "C's values");
  }
  TR_TRY_CU(cudaStreamSynchronize(tr_s), "C into the caller's arrays");
cleanup:
  tr_dfree(bad, tr_s);
  return err;
}

/* a view (rp64, col, vidx) with values val[vidx] as the caller's CSR */
extern "C" int tr_cuda_dcsr_view_write(int32_t m, int64_t nnz, const int64_t *rp64, const int32_t *col,
                                       const int64_t *vidx, const double *val, int32_t *orp, int32_t *ocol,
                                       double *oval)
{
  int err = TILERAP_SUCCESS;
  k_narrow_rowptr<<<tr_blocks((int64_t)m + 1, 256), 256, 0, tr_s>>>(m, rp64, orp);
  TR_TRY(tr_cuda_check_launch("transposed operand row pointers"));
  if (nnz > 0) {
    TR_TRY_CU(cudaMemcpyAsync(ocol, col, (size_t)nnz * sizeof(int32_t), cudaMemcpyDeviceToDevice, tr_s),
              "transposed operand columns");
    if (val && oval) TR_TRY(tr_cuda_gather_values(val, vidx, nnz, oval, (void *)tr_s));
  }
  TR_TRY_CU(cudaStreamSynchronize(tr_s), "transposed operand");
cleanup:
  return err;
}

/* y = V x (+ z) for a view V (rows rp64, columns col, values val[vidx]):
 * W lanes per row, each summing every W-th entry, then a butterfly over
 * the W lanes: the same sums in the same order on every call, no atomics
 * (a restriction P^T x through P's transposed view).  z may be y. */
template <int W>
static __global__ void k_view_mult(int32_t m, const int64_t *__restrict__ rp, const int32_t *__restrict__ col,
                                   const int64_t *__restrict__ vidx, const double *__restrict__ val,
                                   const double *__restrict__ x, const double *z, double *y)
{
  const int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / W;
  const int l = threadIdx.x % W;
  double s = 0.0;
  if (r < m)
    for (int64_t q = rp[r] + l; q < rp[r + 1]; q += W) s += val[vidx[q]] * x[col[q]];
#pragma unroll
  for (int d = W >> 1; d; d >>= 1) s += __shfl_xor_sync(0xffffffffu, s, d, W); /* every lane of the warp */
  if (r < m && l == 0) y[r] = z ? z[r] + s : s;
}

extern "C" int tr_cuda_dcsr_view_mult(int32_t m, const int64_t *rp64, const int32_t *col, const int64_t *vidx,
                                      const double *val, int lanes, const double *x, const double *z, double *y)
{
  if (m <= 0) return TILERAP_SUCCESS;
  const unsigned grid = tr_blocks((int64_t)m * lanes, 256);
  switch (lanes) {
  case 4: k_view_mult<4><<<grid, 256, 0, tr_s>>>(m, rp64, col, vidx, val, x, z, y); break;
  case 8: k_view_mult<8><<<grid, 256, 0, tr_s>>>(m, rp64, col, vidx, val, x, z, y); break;
  case 16: k_view_mult<16><<<grid, 256, 0, tr_s>>>(m, rp64, col, vidx, val, x, z, y); break;
  default: k_view_mult<32><<<grid, 256, 0, tr_s>>>(m, rp64, col, vidx, val, x, z, y); break;
  }
  return tr_cuda_check_launch("transposed product with a vector");
}

/* Entries per stored 16 x 16 tile of a checked operand, estimated on
 * evenly spaced tile rows (at most TR_FILL_SAMPLE of them) of at most
 * TR_FILL_ROW_MAX entries: a dense row's tile row would hold its block
 * for the row's length, and changes the mean little.  A block takes
 * tile rows in turn, marks each entry's tile column in a shared bitmap
 * (the first marker of a bit counts it; rows may be in any column order),
 * then clears only the bits it set, so the bitmap is cleared once per
 * block, not per tile row. */
#define TR_FILL_SAMPLE 4096
#define TR_FILL_ROW_MAX 65536
static __global__ void k_dcsr_tiles(int32_t m, const int64_t *__restrict__ rp, const int32_t *__restrict__ col,
                                    int32_t words, int32_t stride, unsigned long long *sums)
{
  extern __shared__ unsigned tr_bits[];
  for (int32_t w = threadIdx.x; w < words; w += blockDim.x) tr_bits[w] = 0;
  __syncthreads();
  unsigned long long found = 0, entries = 0;
  const int64_t TR = ((int64_t)m + 15) / 16;
  for (int64_t I = (int64_t)blockIdx.x * stride; I < TR; I += (int64_t)gridDim.x * stride) {
    const int64_t b = rp[16 * I], e = rp[min(16 * I + 16, (int64_t)m)];
    if (e - b > TR_FILL_ROW_MAX) continue; /* the whole block skips it */
    if (threadIdx.x == 0) entries += (unsigned long long)(e - b);
    for (int64_t p = b + threadIdx.x; p < e; p += blockDim.x) {
      const int32_t t = col[p] >> 4;
      const unsigned bit = 1u << (t & 31);
      if (!(atomicOr(&tr_bits[t >> 5], bit) & bit)) found++;
    }
    __syncthreads();
    for (int64_t p = b + threadIdx.x; p < e; p += blockDim.x) tr_bits[(col[p] >> 4) >> 5] = 0;
    __syncthreads();
  }
  for (int d = 16; d; d >>= 1) found += __shfl_down_sync(0xffffffffu, found, d);
  if ((threadIdx.x & 31) == 0 && found) atomicAdd(&sums[1], found);
  if (threadIdx.x == 0 && entries) atomicAdd(&sums[0], entries);
}

/* fill[k]: entries per stored tile of ops[k] (checked by
 * tr_cuda_dcsr_operands), estimated as above; 0 where nothing was
 * counted, or its tile columns need more shared memory than a block has
 * by default (more than 6.3 million columns).  One wait. */
extern "C" int tr_cuda_dcsr_fills(const tr_dcsr_op *ops, int count, double *fill)
{
  unsigned long long *d = NULL, h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int err = TILERAP_SUCCESS;
  if (count < 1 || count > 4) return tilerap_set_error(TILERAP_ERR_INVALID, "internal: %d operands", count);
  TR_TRY(tr_dalloc((void **)&d, sizeof h, tr_s, "tile fill"));
  TR_TRY_CU(cudaMemsetAsync(d, 0, sizeof h, tr_s), "tile fill");
  for (int k = 0; k < count; k++) {
    const int64_t words = ((int64_t)ops[k].n + 511) / 512, TR = ((int64_t)ops[k].m + 15) / 16;
    if (words * 4 > 48 * 1024 || ops[k].nnz <= 0) continue;
    const int64_t stride = (TR + TR_FILL_SAMPLE - 1) / TR_FILL_SAMPLE, rows = (TR + stride - 1) / stride;
    const int64_t most = 8 * (int64_t)tr_cuda_sm_count();
    k_dcsr_tiles<<<(unsigned)(rows < most ? rows : most), 256, (size_t)words * 4, tr_s>>>(
        ops[k].m, ops[k].rp64, ops[k].col, (int32_t)words, (int32_t)stride, d + 2 * k);
    TR_TRY(tr_cuda_check_launch("tile fill"));
  }
  TR_TRY_CU(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, tr_s), "tile fill");
  TR_TRY_CU(cudaStreamSynchronize(tr_s), "tile fill");
  for (int k = 0; k < count; k++) fill[k] = h[2 * k + 1] ? (double)h[2 * k] / (double)h[2 * k + 1] : 0.0;
cleanup:
  tr_dfree(d, tr_s);
  return err;
}
