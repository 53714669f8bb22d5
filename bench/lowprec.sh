#!/bin/sh
# Low-precision tensor-core products (BENCHMARKS.md section 5b): for each
# precision, time and relative error of C = P^T A P next to fp64 at the
# same threshold, on dense-tile, irregular and model products, with the
# plan's own choice (TILERAP_CUDA_LOWPREC_REUSE default) and forced on
# every tensor-core pair (TILERAP_CUDA_LOWPREC_REUSE=0, the accuracy-study
# setting); then GAMG iterations per precision (forced, every pair on
# tensor cores) through PETSc's KSP ex45 / ex56 and examples/poisson when
# given.  One run = one process per table; run it three times for the
# spread (bench/spread.py --lowprec).
#   bench/lowprec.sh BUILD_DIR [EX45 EX56 LIBTILERAP]
B=${1:?build tree}
ex45=$2 ex56=$3 lib=$4
echo "## plan's choice"
"$B/bench/galerkin-bench-gpu" --reps 7 --tc 256 --prec-thr 256 blk:4096 blk:4096:0.1 blk:2048:0.5 blk:1024:1 \
  s125:110000 elast:192000 p3d27:101 || echo "exit $?"
echo "## forced"
TILERAP_CUDA_LOWPREC_REUSE=0 "$B/bench/galerkin-bench-gpu" --reps 7 --tc 0 --prec-thr 0 blk:4096 s125:110000 \
  elast:192000 mesh3d:150000 p3d7:100 wide:48 || echo "exit $?"
[ -n "$lib" ] || exit 0
echo "## GAMG iterations (forced)"
its() { sed -n 's/.*converged due to .* iterations \([0-9]*\).*/\1/p' | tail -1; }
for p in fp64 tf32 bf16 fp16; do
  o="-dll_append $lib -mat_tile_engine cuda -mat_tile_tc_threshold 0 -mat_tile_precision $p -ksp_converged_reason"
  # shellcheck disable=SC2086
  a=$(TILERAP_CUDA_LOWPREC_REUSE=0 "$ex45" -da_grid_x 65 -da_grid_y 65 -da_grid_z 65 -dm_mat_type seqtile -pc_type gamg $o 2>&1 | its)
  # shellcheck disable=SC2086
  b=$(TILERAP_CUDA_LOWPREC_REUSE=0 "$ex56" -ne 23 -alpha 1.e-3 -ksp_type cg -pc_type gamg -pc_gamg_agg_nsmooths 1 \
      -use_mat_nearnullspace -mat_type seqtile $o 2>&1 | its)
  c=""
  if [ -x "$B/examples/poisson/poisson" ]; then
    # shellcheck disable=SC2086
    c=$(TILERAP_CUDA_LOWPREC_REUSE=0 "$B/examples/poisson/poisson" -dim 3 -n 64 -stencil 7 -wide 20 -dm_mat_type seqtile \
        -mat_tile_engine cuda -mat_tile_tc_threshold 0 -mat_tile_precision $p -ksp_converged_reason 2>&1 | its)
  fi
  echo "gamg $p: ex45 65^3 $a, ex56 -ne 23 $b, poisson 64^3 -wide 20 $c"
done
