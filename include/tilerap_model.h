/*
 * tilerap_model.h -- model problems for tests, examples and benchmarks:
 * Poisson matrices on structured grids (2D 5/9-point, 3D 7/27-point) and
 * smoothed-aggregation prolongators (aggregates of 3^d neighbouring grid
 * points, one damped-Jacobi step with omega = 2/3, exact zeros dropped),
 * the hierarchies of ../shared/anchors/galerkin_cusparse.py; irregular
 * matrices (unstructured meshes, power-law and random graphs, a dense row,
 * block and wide stencils) and prolongators made without a grid.
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

/* Irregular matrices, where structured grids hide costs: spec =
 * "NAME:N[:ORDER]", about N rows (grid-based ones round the side of the
 * grid), seed makes the random parts reproducible.  All are symmetric, with
 * a positive, dominant diagonal, columns ascending.
 *   mesh2d:N[:ORDER]  graph Laplacian (random edge weights) of a triangle
 *                     mesh: each square of a sqrt(N) grid cut along a random
 *                     diagonal, degrees 4..8
 *   mesh3d:N[:ORDER]  the same on a cube grid, Kuhn split into tetrahedra
 *                     with a random reflection per cube
 *                     ORDER: random (default: nodes in arbitrary order) or
 *                     sfc (Z-order curve: locality order)
 *   powerlaw:N        Laplacian of a Chung-Lu graph (degree exponent 2.5,
 *                     mean degree about 8), nodes in random order
 *   random:N          about 9 entries a row in random columns, random signs
 *   denserow:N        2D 5-point Poisson plus one dense row and column
 *   elast:N           27-point stencil with 3 dofs a node (3x3 blocks)
 *   s125:N            125-point stencil on a cube grid
 * TILERAP_ERR_INVALID for an unknown NAME or ORDER or N < 1. */
TILERAP_EXPORT int tilerap_model_irregular(const char *spec, uint64_t seed, tilerap_csr **A);

/* Smoothed-aggregation prolongator from graph aggregation of A (no grid):
 * P = (I - omega D^-1 A_F) T, T the piecewise-constant aggregation.  Rows
 * of A with more than 8 times the mean row length are treated as dense:
 * they are left out of aggregation as neighbours (they form their own
 * aggregates) and their couplings are filtered out of A_F;
 * the neighbours of a node are the off-diagonal entries of its row.
 * Aggregates numbered in order of their root node (so a randomly ordered A
 * gives a randomly ordered coarse space). Exact zeros dropped. */
TILERAP_EXPORT int tilerap_model_sa_prolongator(const tilerap_csr *A, double omega, tilerap_csr **P);
/* Classical AMG prolongator, as hypre's BoomerAMG builds its pattern
 * (PMIS coarsening, distance-two "extended" interpolation): j strongly
 * influences i when |a_ij| >= theta max_k!=i |a_ik| (couplings to dense
 * rows, as above, left out; dense rows are C points); PMIS picks C points
 * by the number of points they influence plus a random fraction (seed); an
 * F point interpolates from its strong C neighbours and from the strong C
 * neighbours of its strong F neighbours.  Weights are simplified (|a_ij|,
 * plus |a_ik| |a_kj| / sum_l |a_kl| through each strong F neighbour k,
 * scaled to sum 1): the pattern is hypre's kind, the values are not
 * hypre's formula.  C points have a unit row; F points with nothing to
 * interpolate from have an empty row.  Coarse points are numbered in fine
 * order. */
TILERAP_EXPORT int tilerap_model_classical_prolongator(const tilerap_csr *A, double theta, uint64_t seed, tilerap_csr **P);
/* n x nc prolongator with per_row random entries per row in random columns
 * (rectangular / tall-skinny P when nc << n); every column gets at least one
 * entry when nc <= n.  Values in [0.1, 1). */
TILERAP_EXPORT int tilerap_model_random_prolongator(int32_t n, int32_t nc, int per_row, uint64_t seed, tilerap_csr **P);
#ifdef __cplusplus
}
#endif
#endif
