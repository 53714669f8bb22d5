/*
 * tilerap_csr_layouts.h -- CSR layouts that other libraries keep, for
 * callers that hand tilerap's products back to them (the hypre hook):
 * rows in any column order, the diagonal entry first, the order in which
 * a row-by-row Galerkin product emits entries, and content fingerprints
 * that prove a handed-out matrix came back unchanged.
 */
#ifndef TILERAP_CSR_LAYOUTS_H
#define TILERAP_CSR_LAYOUTS_H
#include "tilerap_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same with rows in any column order (hypre's diag blocks keep the
 * diagonal first): row pointers and column ranges are checked, each row is
 * sorted on the device (CUB segmented sort), then converted as above.
 * Repeated columns in a row give TILERAP_ERR_UNSORTED; at most 2^31 - 1
 * entries (TILERAP_ERR_OVERFLOW).  The input order is not kept: the
 * values-only calls below do not apply to the result. */
TILERAP_EXPORT int tilerap_tile_from_unsorted_csr_device(int32_t m, int32_t n, const int64_t *rowptr,
                                          const int32_t *colidx, const double *val,
                                          tilerap_memtype csr_mem, tilerap_tile_matrix **T);
TILERAP_EXPORT int tilerap_tile_from_unsorted_csr_device_i32(int32_t m, int32_t n, const int32_t *rowptr,
                                              const int32_t *colidx, const double *val,
                                              tilerap_memtype csr_mem, tilerap_tile_matrix **T);
/* The same for a square T with each row's diagonal entry first and the
 * other entries ascending (the layout of hypre's diag blocks), so that a
 * product can be written straight into hypre's arrays.  rowptr and colidx
 * are required; a row without a stored diagonal entry gives
 * TILERAP_ERR_STRUCTURE naming the row, before any output is written; a
 * non-square T gives TILERAP_ERR_SIZE.  The values-only calls keep the
 * ascending order, not this one. */
TILERAP_EXPORT int tilerap_tile_to_csr_device_diag_first_i32(const tilerap_tile_matrix *T, int32_t *rowptr,
                                              int32_t *colidx, double *val, tilerap_memtype csr_mem);
/* Content fingerprint of an m-row CSR matrix (arrays in memory mem): a
 * 64-bit sum over its entries of a hash of (row, column, value bits and,
 * when ordered != 0, the entry's position in its row), so with ordered = 0
 * it does not depend on the order of entries within rows.  The host and
 * device versions agree.  Two matrices with the same fingerprint hold the
 * same entries (in the same order, if ordered) unless a 2^-64 collision
 * occurred; callers use it to prove that a matrix they handed out came
 * back unchanged.  val may be NULL (structure only). */
TILERAP_EXPORT int tilerap_csr_fingerprint_i32(int32_t m, const int32_t *rowptr, const int32_t *colidx,
                                const double *val, int ordered, tilerap_memtype mem,
                                uint64_t *fingerprint);

/* C = P^T A P (device tile matrix, square, from tilerap_ptap) as CSR with
 * each row in the order in which a row-by-row Gustavson product emits it:
 * row r lists column c at its first encounter in the walk over the fine
 * rows i with P(i,r) stored (ascending), A(i,j) in A's stored order, then
 * P(j,c) in P's stored order (the order of hypre's BoomerAMG coarse
 * operators, which its coarsening breaks ties by).  The structures of A
 * (na x na) and P (na x C->n) are CSR arrays in device memory as stored
 * (rows in any order, no repeats; each column array as long as the last
 * row pointer says; A's structure may be that of any matrix
 * whose product with P has C's structure).  diag_first: the diagonal entry
 * first (a row without one: TILERAP_ERR_STRUCTURE before any output).
 * Entries of C the walk never reaches come last in their row, ascending,
 * counted in *unreached (optional); a product entry missing from C gives
 * TILERAP_ERR_STRUCTURE.  Outputs rowptr[C->m+1], colidx/val[C->nnz] are
 * device arrays (colidx may be NULL when C has no entries, val NULL to skip
 * values); returns when they are complete.  A row's placing costs the
 * square of its length (one warp per row): like the product itself, cubic
 * on dense coarse operators. */
TILERAP_EXPORT int tilerap_ptap_csr_encounter_order_device_i32(const tilerap_tile_matrix *C, int32_t na,
                                                const int32_t *a_rowptr, const int32_t *a_colidx,
                                                const int32_t *p_rowptr, const int32_t *p_colidx,
                                                int diag_first, int32_t *rowptr, int32_t *colidx,
                                                double *val, int64_t *unreached);

#ifdef __cplusplus
}
#endif
#endif /* TILERAP_CSR_LAYOUTS_H */
