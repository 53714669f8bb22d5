/* A's transpose times a vector on the device (tilerap_device.h): the
 * transposed view of the device CSR products (each row of A^T with its
 * entries' positions in A's values), made once for A's structure, and a
 * gather per row of A^T.  PETSc's restriction otherwise forms an explicit
 * transpose through cuSPARSE, whose first use in a process cost 21-32 ms
 * of a small GAMG setup (BENCHMARKS.md 2b). */
#include "tile_internal.h"
#include "tilerap_device.h"
#ifdef TILERAP_HAVE_CUDA
#include "engine_cuda.h"
#endif
#include <stdlib.h>

struct tilerap_csr_device_transpose_s {
  tilerap_csr_device_i32 a; /* the shape and structure arrays given to create */
  int64_t nnz;
  int lanes; /* per row of A^T, from its mean length */
#ifdef TILERAP_HAVE_CUDA
  int64_t *rp64, *trp, *tvidx;
  int32_t *tcol;
#endif
};

void tilerap_csr_device_transpose_destroy(tilerap_csr_device_transpose *pT)
{
  if (!pT || !*pT) return;
#ifdef TILERAP_HAVE_CUDA
  tilerap_csr_device_transpose T = *pT;
  tr_cuda_free(T->rp64); tr_cuda_free(T->trp); tr_cuda_free(T->tvidx); tr_cuda_free(T->tcol);
#endif
  free(*pT);
  *pT = NULL;
}

int tilerap_csr_device_transpose_create_i32(const tilerap_csr_device_i32 *A, tilerap_csr_device_transpose *out)
{
  if (!out) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_transpose_create_i32: no output");
  *out = NULL;
  if (!A) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_transpose_create_i32: A is NULL");
  if (A->m < 0 || A->n < 0) return tilerap_set_error(TILERAP_ERR_SIZE, "A is %d x %d", A->m, A->n);
  if (!A->rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_transpose_create_i32: A's row pointers are NULL");
#ifndef TILERAP_HAVE_CUDA
  return tilerap_set_error(TILERAP_ERR_ENGINE, "device transposes need the CUDA engine (built without CUDA)");
#else
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA))
    return tilerap_set_error(TILERAP_ERR_ENGINE, "device transposes need the CUDA engine and a visible GPU");
  tilerap_csr_device_transpose T = tilerap_host_calloc(1, sizeof *T);
  if (!T) return TILERAP_ERR_NOMEM;
  T->a = *A;
  T->a.val = NULL;
  tr_dcsr_op op = {"A", A->m, A->n, A->rowptr, A->colidx, 0, 0, NULL};
  int err = tr_cuda_dcsr_operands(&op, 1);
  if (!err) {
    T->rp64 = op.rp64;
    T->nnz = op.nnz;
    err = tr_cuda_dcsr_transpose(A->m, A->n, T->rp64, A->colidx, T->nnz, &T->trp, &T->tcol, &T->tvidx);
  }
  if (err) {
    tilerap_csr_device_transpose_destroy(&T);
    return err;
  }
  /* lanes per row of A^T: about two entries a lane (SA prolongators'
   * columns hold tens of entries, classical ones a few) */
  const double mean = A->n > 0 ? (double)T->nnz / A->n : 0;
  T->lanes = mean <= 8 ? 4 : mean <= 16 ? 8 : mean <= 32 ? 16 : 32;
  *out = T;
  return TILERAP_SUCCESS;
#endif
}

int tilerap_csr_device_transpose_mult_i32(tilerap_csr_device_transpose T, const tilerap_csr_device_i32 *A,
                                          const double *x, const double *z, double *y)
{
  if (!T || !A) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_transpose_mult_i32: T or A is NULL");
  if (A->m != T->a.m || A->n != T->a.n || A->rowptr != T->a.rowptr || A->colidx != T->a.colidx)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "tilerap_csr_device_transpose_mult_i32: A's shape or structure "
                                                    "arrays differ from those given to create");
  if (T->nnz > 0 && (!A->val || !x))
    return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_transpose_mult_i32: A's values or x are NULL");
  if (A->n > 0 && !y) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_transpose_mult_i32: y is NULL");
#ifndef TILERAP_HAVE_CUDA
  (void)z;
  return TILERAP_ERR_ENGINE;
#else
  return tr_cuda_dcsr_view_mult(A->n, T->trp, T->tcol, T->tvidx, A->val, T->lanes, x, z, y);
#endif
}
