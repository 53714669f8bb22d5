/* Content fingerprint of a CSR matrix (tilerap_csr_fingerprint_i32): the
 * host version, and the dispatch to the device one. */
#include "tile_internal.h"
#include "engine_cuda.h"
#include "csr_fingerprint.h"

static uint64_t tr_value_bits(const double *val, int64_t k)
{
  uint64_t b = 0;
  if (val) memcpy(&b, &val[k], sizeof b);
  return b;
}

static int tr_fingerprint_host(int32_t m, const int32_t *rp, const int32_t *col, const double *val, int ordered,
                               uint64_t *fp)
{
  if (rp[0] != 0) return tilerap_set_error(TILERAP_ERR_INVALID, "CSR fingerprint: rowptr[0] = %d, not 0", rp[0]);
  for (int32_t i = 0; i < m; i++)
    if (rp[i + 1] < rp[i])
      return tilerap_set_error(TILERAP_ERR_INVALID, "CSR fingerprint: row pointers decrease at row %d", i);
  const int64_t nnz = rp[m];
  if (nnz > 0 && !col) return tilerap_set_error(TILERAP_ERR_NULL, "CSR fingerprint: column indices are NULL");
  uint64_t sum = 0;
  /* rows in blocks: the sum wraps, so any split gives the same number */
#pragma omp parallel for schedule(static) reduction(+ : sum) if (nnz > 65536)
  for (int32_t i = 0; i < m; i++)
    for (int32_t k = rp[i]; k < rp[i + 1]; k++) sum += tr_fp_entry(i, col[k], tr_value_bits(val, k), ordered ? (int64_t)(k - rp[i]) + 1 : 0);
  *fp = sum + tr_fp_sizes(m, nnz);
  return TILERAP_SUCCESS;
}

int tilerap_csr_fingerprint_i32(int32_t m, const int32_t *rowptr, const int32_t *colidx, const double *val,
                                int ordered, tilerap_memtype mem, uint64_t *fingerprint)
{
  if (!fingerprint) return tilerap_set_error(TILERAP_ERR_NULL, "CSR fingerprint: NULL output");
  *fingerprint = 0;
  if (m < 0) return tilerap_set_error(TILERAP_ERR_SIZE, "CSR fingerprint: %d rows", m);
  if (!rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "CSR fingerprint: row pointers are NULL");
  if (mem == TILERAP_MEM_HOST) return tr_fingerprint_host(m, rowptr, colidx, val, ordered != 0, fingerprint);
  int err = tr_check_memtype(mem, "CSR fingerprint");
  if (err || (err = tr_require_cuda("CSR fingerprint"))) return err;
#ifdef TILERAP_HAVE_CUDA
  uint64_t sum = 0;
  int64_t nnz = 0;
  err = tr_cuda_csr_fingerprint(m, rowptr, colidx, val, ordered != 0, &sum, &nnz);
  if (!err) *fingerprint = sum + tr_fp_sizes(m, nnz);
  return err;
#else
  (void)colidx; (void)val; (void)ordered;
  return TILERAP_ERR_ENGINE;
#endif
}
