#!/bin/sh
# The irregular set (issue: fast on every sparsity pattern): Galerkin
# products C = P^T A P on matrices no model grid looks like, each level
# checked against the Gustavson product, tilerap and cuSPARSE in the same
# process (galerkin-bench-gpu).  Matrices and graph-aggregation
# prolongators come from tilerap_model.h, generated in C (no downloads).
#   bench/irregular.sh BUILD_DIR [small|full] [extra galerkin-bench-gpu args]
# small: sizes of about 50k rows (a quick look); full: the sizes of the
# issue's table (about 100k-500k rows).  TILERAP_PATH=tiles|csr in the
# environment forces a path (the default chooses per product).
B=${1:?build tree}; shift
size=${1:-full}; [ $# -gt 0 ] && shift
case $size in
small) cases="mesh2d:50000 mesh2d:50000:sfc mesh3d:30000 mesh3d:30000:sfc random:50000
         denserow:50000 elast:30000 s125:30000 powerlaw:50000" ;;
full) cases="mesh2d:500000 mesh2d:500000:sfc mesh3d:150000 mesh3d:150000:sfc random:200000
        denserow:490000 elast:192000 s125:110000 powerlaw:100000" ;;
*) echo "usage: $0 BUILD_DIR [small|full] [args]" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
exec "$B/bench/galerkin-bench-gpu" "$@" $cases
