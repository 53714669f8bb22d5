/* tilerap_ptap_csr_encounter_order_device_i32: argument checks, then the
 * CUDA kernels (src/kernels/ptap_cuda_encounter_order.cu). */
#include "tile_internal.h"
#include "engine_cuda.h"

int tilerap_ptap_csr_encounter_order_device_i32(const tilerap_tile_matrix *C, int32_t na, const int32_t *a_rowptr,
                                                const int32_t *a_colidx, const int32_t *p_rowptr,
                                                const int32_t *p_colidx, int diag_first, int32_t *rowptr,
                                                int32_t *colidx, double *val, int64_t *unreached)
{
  static const char what[] = "encounter-order CSR";
  if (unreached) *unreached = 0;
  if (!C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: C is NULL", what);
  if (!a_rowptr || !p_rowptr || !rowptr)
    return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL %s", what,
                             !a_rowptr ? "A row pointers" : !p_rowptr ? "P row pointers" : "output row pointers");
  if (!colidx && C->nnz > 0) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL output columns", what);
  if (na > 0 && (!a_colidx || !p_colidx))
    return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL column indices of %s", what, !a_colidx ? "A" : "P");
  if (C->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "%s: C must live in device memory", what);
  if (C->m != C->n || na < 0)
    return tilerap_set_error(TILERAP_ERR_SIZE, "%s: C is %d x %d and A has %d rows (C must be square)", what, C->m,
                             C->n, na);
  if (C->nnz > INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "%s: %lld entries do not fit 32-bit row pointers", what,
                             (long long)C->nnz);
  const int err = tr_require_cuda(what);
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_ptap_encounter_order(C, na, a_rowptr, a_colidx, p_rowptr, p_colidx, diag_first, rowptr, colidx, val,
                                      unreached);
#else
  (void)a_colidx; (void)p_colidx; (void)diag_first; (void)val;
  return TILERAP_ERR_ENGINE;
#endif
}
