/* Independent references for the tests: plain scalar CSR kernels written
 * without any tile code (Gustavson's row-by-row SpGEMM with a dense
 * accumulator and a structural marker), random matrices, comparisons. */
#ifndef TILERAP_TEST_REF_H
#define TILERAP_TEST_REF_H
#include "tilerap.h"
#include <stdint.h>

/* C = A*B, structural (entries that sum to zero are kept). */
tilerap_csr *ref_spgemm(const tilerap_csr *A, const tilerap_csr *B);
/* Sums of the products above (and of ref_ptap, ref_product) in long double
 * (a 64-bit significand on x86), rounded once, instead of double in the
 * order of A's entries.  For a product's own rows of 10^5 products the
 * double sums are 1e-14 from the exact ones; but a two-stage P^T*(A*P) of
 * cancelling rows (a Laplacian's coarse levels) then rounds A*P otherwise
 * than an engine does, and the difference grows past 1e-14 in P^T*AP. */
void ref_long_double_sums(int on);
/* A^T */
tilerap_csr *ref_transpose(const tilerap_csr *A);
/* Sorts n column indices ascending, carrying val (NULL: none) along. */
void ref_sort_columns(int32_t *col, double *val, int64_t n);
/* P^T A P by two products. */
tilerap_csr *ref_ptap(const tilerap_csr *A, const tilerap_csr *P);
/* A*B, A^T*B or B^T*A*B by kind (tilerap.h's tilerap_csr_kind). */
tilerap_csr *ref_product(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B);

/* Random m x n CSR with about density*m*n entries (sorted, unique);
 * empty_rows_every > 0 empties every k-th row; values uniform in [-1,1). */
tilerap_csr *ref_random(int32_t m, int32_t n, double density, int empty_rows_every, uint64_t *seed);
/* m x n matrix whose 16x16 tiles listed as full are completely dense. */
tilerap_csr *ref_dense(int32_t m, int32_t n, uint64_t *seed);
/* Random values in place, same structure. */
void ref_randomize_values(tilerap_csr *A, uint64_t *seed);
double ref_rand01(uint64_t *seed);
/* A = D A D, D = diag(2^e_i), e_i uniform in [-E, E] (seeded): a symmetric
 * operator whose values span many orders of magnitude */
void ref_scale_wide(tilerap_csr *A, int E, uint64_t seed);

/* Structure of X equals structure of Y? */
int ref_same_structure(const tilerap_csr *X, const tilerap_csr *Y);
/* ||X - Y||_F / ||Y||_F over identical structures (0 if ||Y|| = 0 and X == 0). */
double ref_relerr(const tilerap_csr *X, const tilerap_csr *Y);
/* Deep copy */
tilerap_csr *ref_copy(const tilerap_csr *A);

/* Tile matrix -> CSR through the library's conversion (aborts on error). */
tilerap_csr *ref_tile_to_csr(const tilerap_tile_matrix *T);
/* CSR -> tile through the library's conversion (aborts on error). */
tilerap_tile_matrix *ref_csr_to_tile(const tilerap_csr *A);
/* 1 if two host tile matrices have the same tiles, indices and value bits. */
int ref_same_tiles(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y);

/* Wall-clock seconds. */
double ref_wtime(void);
#endif
