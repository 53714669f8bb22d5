/*
 * tilerap_model.h -- model problems for tests, examples and benchmarks:
 * Poisson matrices on structured grids (2D 5/9-point, 3D 7/27-point) and
 * smoothed-aggregation prolongators (aggregates of 3^d neighbouring grid
 * points, one damped-Jacobi step with omega = 2/3, exact zeros dropped),
 * the hierarchies of ../shared/anchors/galerkin_cusparse.py.
 */
#ifndef TILERAP_MODEL_H
#define TILERAP_MODEL_H
#include "tilerap.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TILERAP_P2D5 = 0, TILERAP_P2D9, TILERAP_P3D7, TILERAP_P3D27 } tilerap_stencil;

/* Parses "p2d5", "p2d9", "p3d7", "p3d27". */
TILERAP_EXPORT int tilerap_stencil_parse(const char *name, tilerap_stencil *s);
TILERAP_EXPORT const char *tilerap_stencil_name(tilerap_stencil s);

/* Poisson matrix on an n^d grid (lexicographic order, last index fastest).
 * dims[] receives the grid (n, n[, n]) and *ndim its dimension. */
TILERAP_EXPORT int tilerap_model_poisson(tilerap_stencil s, int32_t n, tilerap_csr **A, int32_t dims[3], int *ndim);

/* Smoothed-aggregation prolongator for A on the grid dims[ndim]:
 * P = (I - omega D^-1 A) T with T the aggregation of 3^d points.
 * cdims[] receives the coarse grid ceil(dims/3). */
TILERAP_EXPORT int tilerap_model_prolongator(const tilerap_csr *A, int ndim, const int32_t dims[3], double omega,
                              tilerap_csr **P, int32_t cdims[3]);
#ifdef __cplusplus
}
#endif
#endif
