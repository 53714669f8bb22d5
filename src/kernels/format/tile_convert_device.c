/* CSR <-> tile conversions with the tile matrix in device memory: argument
 * checks shared by every build, then the CUDA engine
 * (tile_cuda_from_csr.cu, tile_cuda_to_csr.cu).  Without CUDA, or without
 * a visible GPU, every call reports TILERAP_ERR_ENGINE. */
#include "tile_internal.h"
#include "engine_cuda.h"

static int tr_require_device(const tilerap_tile_matrix *T, const char *what)
{
  if (!T) return tilerap_set_error(TILERAP_ERR_NULL, "%s: tile matrix is NULL", what);
  if (T->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "%s: the tile matrix must live in device memory", what);
  return TILERAP_SUCCESS;
}

static int tr_from_csr_device(int32_t m, int32_t n, const int64_t *rp64, const int32_t *rp32, const int32_t *colidx,
                              const double *val, tilerap_memtype mem, int unsorted, tilerap_tile_matrix **T)
{
  static const char what[] = "tile conversion on the device";
  if (!rp64 && !rp32) { /* first, with the host conversion's message */
    if (T) *T = NULL;
    return tilerap_set_error(TILERAP_ERR_NULL, "tile conversion: CSR row pointers are NULL");
  }
  if (!T) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL output", what);
  *T = NULL;
  int err = tr_check_memtype(mem, what);
  if (err) return err;
  if (m < 0 || n < 0) return tilerap_set_error(TILERAP_ERR_SIZE, "CSR with negative size %d x %d", m, n);
  if ((err = tr_require_cuda(what))) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_tile_from_csr(m, n, rp64, rp32, colidx, val, mem, unsorted, T);
#else
  (void)colidx; (void)val; (void)unsorted;
  return TILERAP_ERR_ENGINE;
#endif
}

int tilerap_tile_from_csr_device(int32_t m, int32_t n, const int64_t *rowptr, const int32_t *colidx,
                                 const double *val, tilerap_memtype csr_mem, tilerap_tile_matrix **T)
{
  return tr_from_csr_device(m, n, rowptr, NULL, colidx, val, csr_mem, 0, T);
}

int tilerap_tile_from_csr_device_i32(int32_t m, int32_t n, const int32_t *rowptr, const int32_t *colidx,
                                     const double *val, tilerap_memtype csr_mem, tilerap_tile_matrix **T)
{
  return tr_from_csr_device(m, n, NULL, rowptr, colidx, val, csr_mem, 0, T);
}

int tilerap_tile_from_unsorted_csr_device(int32_t m, int32_t n, const int64_t *rowptr, const int32_t *colidx,
                                          const double *val, tilerap_memtype csr_mem, tilerap_tile_matrix **T)
{
  return tr_from_csr_device(m, n, rowptr, NULL, colidx, val, csr_mem, 1, T);
}

int tilerap_tile_from_unsorted_csr_device_i32(int32_t m, int32_t n, const int32_t *rowptr, const int32_t *colidx,
                                              const double *val, tilerap_memtype csr_mem, tilerap_tile_matrix **T)
{
  return tr_from_csr_device(m, n, NULL, rowptr, colidx, val, csr_mem, 1, T);
}

int tilerap_tile_update_values_from_csr_device(tilerap_tile_matrix *T, const double *val, tilerap_memtype val_mem)
{
  static const char what[] = "values refresh on the device";
  int err = tr_require_device(T, what);
  if (!err) err = tr_check_memtype(val_mem, what);
  if (err) return err;
  if (!val && T->nnz) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL CSR values", what);
  if ((err = tr_require_cuda(what))) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_tile_values_from_csr(T, val, val_mem);
#else
  return TILERAP_ERR_ENGINE;
#endif
}

static int tr_to_csr_device(const tilerap_tile_matrix *T, int64_t *rp64, int32_t *rp32, int32_t *colidx, double *val,
                            tilerap_memtype mem, int diag_first)
{
  static const char what[] = "CSR conversion on the device";
  int err = tr_require_device(T, what);
  if (!err) err = tr_check_memtype(mem, what);
  if (err) return err;
  if (rp32 && T->nnz > INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "%lld entries do not fit 32-bit row pointers", (long long)T->nnz);
  if ((err = tr_require_cuda(what))) return err;
#ifdef TILERAP_HAVE_CUDA
  if (!rp64 && !rp32 && !colidx && !val) return TILERAP_SUCCESS;
  return tr_cuda_tile_to_csr(T, rp64, rp32, colidx, val, mem, diag_first);
#else
  (void)rp64; (void)colidx; (void)val; (void)diag_first;
  return TILERAP_ERR_ENGINE;
#endif
}

int tilerap_tile_to_csr_device(const tilerap_tile_matrix *T, int64_t *rowptr, int32_t *colidx, double *val,
                               tilerap_memtype csr_mem)
{
  return tr_to_csr_device(T, rowptr, NULL, colidx, val, csr_mem, 0);
}

int tilerap_tile_to_csr_device_i32(const tilerap_tile_matrix *T, int32_t *rowptr, int32_t *colidx, double *val,
                                   tilerap_memtype csr_mem)
{
  return tr_to_csr_device(T, NULL, rowptr, colidx, val, csr_mem, 0);
}

int tilerap_tile_to_csr_device_diag_first_i32(const tilerap_tile_matrix *T, int32_t *rowptr, int32_t *colidx,
                                              double *val, tilerap_memtype csr_mem)
{
  int err = tr_require_device(T, "diagonal-first CSR on the device");
  if (err) return err;
  if (!rowptr || !colidx)
    return tilerap_set_error(TILERAP_ERR_NULL, "diagonal-first CSR on the device: row pointers and columns are required");
  if (T->m != T->n)
    return tilerap_set_error(TILERAP_ERR_SIZE, "diagonal-first CSR of a %d x %d matrix: needs a square one", T->m, T->n);
  return tr_to_csr_device(T, NULL, rowptr, colidx, val, csr_mem, 1);
}

int tilerap_tile_to_csr_values_device(const tilerap_tile_matrix *T, double *val, tilerap_memtype val_mem)
{
  static const char what[] = "CSR values on the device";
  int err = tr_require_device(T, what);
  if (!err) err = tr_check_memtype(val_mem, what);
  if (err) return err;
  if (!val && T->nnz) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL output values", what);
  if ((err = tr_require_cuda(what))) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_tile_values_to_csr(T, val, val_mem);
#else
  return TILERAP_ERR_ENGINE;
#endif
}
