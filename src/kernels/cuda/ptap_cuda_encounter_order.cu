/* C = P^T A P as CSR in first-encounter order of the row-by-row walk
 * (tilerap_ptap_csr_encounter_order_device_i32): row r, fine rows i with
 * P(i,r) ascending, A(i,j) as stored, P(j,c) as stored.
 *
 * The walk is sequential per row, but its order is a minimum: entry (r,c)
 * is first met at the smallest (position of A(i,j), position of P(j,c))
 * over all paths r <- i -> j -> c, because A's positions grow with i and
 * the walk visits (i, A position, P position) lexicographically (skipping
 * a j seen before only skips later meetings).  So every path can be
 * handled independently: each entry of A takes the minimum of its
 * keys into C's sorted rows (atomicMin), and each entry's place in its
 * row is the number of smaller keys (rows are short enough to count).
 * No per-row state, no sequential walk, and hypre's order comes out of
 * the same data the product was made from. */
#include "spgemm_cuda.cuh"

#define TR_KEY_NONE 0xffffffffffffffffull

/* flags of one call, read back once before and once after the output */
typedef struct {
  unsigned long long missing_diag;  /* lowest row without a diagonal (m: none) */
  unsigned long long not_in_c;      /* product entries C does not hold */
  unsigned long long bad_index;     /* an index or row pointer out of range */
  unsigned long long unreached;     /* entries of C no path reaches */
} tr_order_flags;

/* Row pointers of A or P: start at 0, never decrease.  Their last entry
 * is trusted to be the length of the column array (the caller's contract,
 * as for any CSR handed over as three device pointers). */
static __global__ void k_check_rowptr(int32_t n, const int32_t *rp, tr_order_flags *f)
{
  const int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > n) return;
  if ((i == 0 && rp[0] != 0) || (i < n && rp[i + 1] < rp[i])) atomicAdd(&f->bad_index, 1ull);
}

/* The diagonal's key is 0, below every path key (those are >= 1). */
static __global__ void k_diagonal_key(int32_t m, const int32_t *rp, const int32_t *scol, uint64_t *key,
                                      tr_order_flags *f)
{
  const int32_t r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= m) return;
  const int64_t q = tr_lower_bound(scol, rp[r], rp[r + 1], r);
  if (q < rp[r + 1] && scol[q] == r) key[q] = 0;
  else atomicMin(&f->missing_diag, (unsigned long long)r);
}

/* Eight lanes per row i of A, each taking every eighth entry k = A(i,j)
 * (fine rows hold a handful of entries, coarse ones hundreds): for every
 * P(i,r) and P(j,c), the key (k, position of P(j,c)) + 1 goes into slot
 * (r,c) of C. */
#define TR_ROW_LANES 8
static __global__ void k_path_keys(int32_t na, int32_t m, const int32_t *arp, const int32_t *acol, const int32_t *prp,
                                   const int32_t *pcol, const int32_t *rp, const int32_t *scol, uint64_t *key,
                                   tr_order_flags *f)
{
  const int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int64_t i = t / TR_ROW_LANES;
  if (i >= na) return;
  const int32_t p0 = prp[i], p1 = prp[i + 1];
  for (int64_t k = arp[i] + t % TR_ROW_LANES; k < arp[i + 1]; k += TR_ROW_LANES) {
    const int32_t j = acol[k];
    if (j < 0 || j >= na) { atomicAdd(&f->bad_index, 1ull); continue; }
    const int32_t x0 = prp[j], x1 = prp[j + 1];
    for (int32_t pe = p0; pe < p1; pe++) {
      const int32_t r = pcol[pe];
      if (r < 0 || r >= m) { atomicAdd(&f->bad_index, 1ull); continue; }
      const int64_t rb = rp[r], re = rp[r + 1];
      for (int32_t x = x0; x < x1; x++) {
        const int32_t c = pcol[x];
        if (c < 0 || c >= m) { atomicAdd(&f->bad_index, 1ull); continue; }
        const int64_t q = tr_lower_bound(scol, rb, re, c);
        if (q >= re || scol[q] != c) { atomicAdd(&f->not_in_c, 1ull); continue; }
        const uint64_t v = (((uint64_t)k << 32) | (uint32_t)x) + 1;
        if (v < key[q]) atomicMin((unsigned long long *)&key[q], (unsigned long long)v);
      }
    }
  }
}

/* A warp per row: each entry's place is the number of entries with a
 * smaller key (ties, only among unreached entries, by column). */
static __global__ void k_place(int32_t m, const int32_t *rp, const int32_t *scol, const double *sval,
                               const uint64_t *key, int32_t *col, double *val, tr_order_flags *f)
{
  const int lane = threadIdx.x & 31;
  const int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
  if (r >= m) return;
  const int64_t b = rp[r], len = rp[r + 1] - b;
  unsigned long long unreached = 0;
  for (int64_t e = lane; e < len; e += 32) {
    const uint64_t ke = key[b + e];
    int64_t place = 0;
    for (int64_t g = 0; g < len; g++) {
      const uint64_t kg = key[b + g];
      place += kg < ke || (kg == ke && g < e);
    }
    col[b + place] = scol[b + e];
    if (val) val[b + place] = sval[b + e];
    unreached += ke == TR_KEY_NONE;
  }
  for (int d = 16; d; d >>= 1) unreached += __shfl_xor_sync(0xffffffffu, unreached, d);
  if (lane == 0 && unreached) atomicAdd(&f->unreached, unreached);
}

static int tr_read_flags(tr_order_flags *h, const tr_order_flags *d)
{
  cudaError_t e = cudaMemcpyAsync(h, d, sizeof *h, cudaMemcpyDeviceToHost, cudaStreamLegacy);
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, "encounter order");
}

extern "C" int tr_cuda_ptap_encounter_order(const tilerap_tile_matrix *C, int32_t na, const int32_t *a_rowptr,
                                            const int32_t *a_colidx, const int32_t *p_rowptr,
                                            const int32_t *p_colidx, int diag_first, int32_t *rowptr,
                                            int32_t *colidx, double *val, int64_t *unreached)
{
  const cudaStream_t s = cudaStreamLegacy;
  const int32_t m = C->m;
  const size_t nnz = (size_t)C->nnz;
  tr_tmp tmp = {};
  tmp.s = s;
  int32_t *rp = NULL, *scol = NULL;
  double *sval = NULL;
  uint64_t *key = NULL;
  tr_order_flags h = {(unsigned long long)m, 0, 0, 0}, *d = NULL;
  int err;
  TR_TRY(tr_tmp_alloc(&tmp, (void **)&rp, ((size_t)m + 1) * sizeof *rp, "encounter order: row pointers"));
  TR_TRY(tr_tmp_alloc(&tmp, (void **)&scol, (nnz + 1) * sizeof *scol, "encounter order: columns"));
  if (val) TR_TRY(tr_tmp_alloc(&tmp, (void **)&sval, (nnz + 1) * sizeof *sval, "encounter order: values"));
  TR_TRY(tr_tmp_alloc(&tmp, (void **)&key, (nnz + 1) * sizeof *key, "encounter order: keys"));
  TR_TRY(tr_tmp_alloc(&tmp, (void **)&d, sizeof *d, "encounter order: flags"));
  TR_TRY_CU(cudaMemcpyAsync(d, &h, sizeof h, cudaMemcpyHostToDevice, s), "encounter order");
  TR_TRY_CU(cudaMemsetAsync(key, 0xff, (nnz + 1) * sizeof *key, s), "encounter order");
  TR_TRY(tr_cuda_tile_csr_walk(C, sval, rp, scol));
  k_check_rowptr<<<tr_blocks((int64_t)na + 1, 256), 256, 0, s>>>(na, a_rowptr, d);
  k_check_rowptr<<<tr_blocks((int64_t)na + 1, 256), 256, 0, s>>>(na, p_rowptr, d);
  TR_TRY(tr_cuda_check_launch("encounter order: row pointer check"));
  TR_TRY(tr_read_flags(&h, d));
  if (h.bad_index) {
    err = tilerap_set_error(TILERAP_ERR_INVALID, "encounter order: row pointers of A or P do not start at 0 or decrease");
    goto cleanup;
  }
  if (diag_first && m > 0) {
    k_diagonal_key<<<tr_blocks(m, 256), 256, 0, s>>>(m, rp, scol, key, d);
    TR_TRY(tr_cuda_check_launch("encounter order: diagonal"));
  }
  if (na > 0) {
    k_path_keys<<<tr_blocks((int64_t)na * TR_ROW_LANES, 256), 256, 0, s>>>(na, m, a_rowptr, a_colidx, p_rowptr,
                                                                           p_colidx, rp, scol, key, d);
    TR_TRY(tr_cuda_check_launch("encounter order: path keys"));
  }
  TR_TRY(tr_read_flags(&h, d));
  if (h.bad_index) {
    err = tilerap_set_error(TILERAP_ERR_RANGE, "encounter order: %llu column indices of A or P out of range", h.bad_index);
    goto cleanup;
  }
  if (h.missing_diag < (unsigned long long)m) {
    err = tilerap_set_error(TILERAP_ERR_STRUCTURE, "encounter order: row %llu has no stored diagonal entry", h.missing_diag);
    goto cleanup;
  }
  if (h.not_in_c) {
    err = tilerap_set_error(TILERAP_ERR_STRUCTURE,
                            "encounter order: %llu products of the structures of P^T, A and P are not entries of C",
                            h.not_in_c);
    goto cleanup;
  }
  /* checks passed: the outputs are written from here on */
  if (m > 0) {
    k_place<<<tr_blocks((int64_t)m * 32, 256), 256, 0, s>>>(m, rp, scol, sval, key, colidx, val, d);
    TR_TRY(tr_cuda_check_launch("encounter order: placing"));
  }
  TR_TRY_CU(cudaMemcpyAsync(rowptr, rp, ((size_t)m + 1) * sizeof *rp, cudaMemcpyDeviceToDevice, s), "encounter order");
  TR_TRY(tr_read_flags(&h, d));
  if (unreached) *unreached = (int64_t)h.unreached;
cleanup:
  tr_tmp_free_all(&tmp);
  return err;
}
