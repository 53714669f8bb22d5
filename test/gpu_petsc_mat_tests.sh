#!/bin/sh
# TAP test for the GPU machine: PETSc's own product tests (src/mat/tests),
# unmodified, in their CUDA variants (the /*TEST*/ sets that run with
# aijcusparse), run twice on a PETSc built with CUDA: as PETSc's tests run
# them (aijcusparse) and with the tile types in their place (loaded through
# -dll_append), which are AIJCUSPARSE underneath there.  Each pair must exit
# 0 and print the same output once type names are normalised; tile runs
# marked "tile" must have planned at least one product on the engine
# (-log_view's TileRAPPlan).
#   ex250  AB, PtAP, AtB through MatProduct, with MAT_REUSE_MATRIX and
#          product replacement: set "cuda" on 1 and 3 ranks
#   ex123  MatMatMult through the local API: sets 1_cuda (seq and mpi) and
#          2_cuda (on 3 ranks here)
#   ex70   products of AIJ(CUSPARSE) with dense CUDA operands: sets 1_cuda,
#          1_par_cuda, 2_par_cuda (the tile type leaves them to AIJCUSPARSE)
#
#   test/gpu_petsc_mat_tests.sh build DIR   on the CPU machine (a tilerap
#       build configured --with-petsc=<CUDA PETSc>; the PETSc source tree in
#       PETSC_SRC): builds the programs into DIR
#   test/gpu_petsc_mat_tests.sh run DIR LIB  on the GPU machine: runs them
#       (MPIEXEC: the launcher; PETSc's options in PETSC_OPTIONS, e.g.
#       -use_gpu_aware_mpi 0 with an MPI that is not CUDA-aware)
mode=$1; dir=$2
case $mode in
build)
  . ./test/petsc_env.sh || { echo "test/petsc_env.sh missing (run from a build tree)" >&2; exit 2; }
  src=${PETSC_SRC:?PETSC_SRC: the PETSc source tree}/src/mat/tests
  mkdir -p "$dir"
  for ex in ex70 ex123 ex250; do
    $TILERAP_CC $PETSC_CFLAGS "$src/$ex.c" -o "$dir/$ex" $PETSC_LIBS -lm || exit 1
  done
  cp "$src/output/ex250_1.out" "$dir/" || exit 1
  exit 0 ;;
run) LIB=$3 ;;
*) echo "usage: $0 build DIR | run DIR LIB" >&2; exit 2 ;;
esac
MPIEXEC=${MPIEXEC:-mpiexec}
W=${TMPDIR:-/tmp}/gpu_petsc_mat_tests.$$
mkdir -p "$W"
n=0; fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
bad() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }
. "$(dirname "$0")/mat_tests_judge.sh"
norm() { sed -e 's/seqaijcusparse/seqaij/g; s/mpiaijcusparse/mpiaij/g; s/seqaijtile/seqaij/g; s/mpiaijtile/mpiaij/g' "$1"; }

# run NAME NP EXPECT EXE "AIJCUSPARSE ARGS" "TILE ARGS" [REFERENCE]
# REFERENCE: PETSc's expected output file to compare the tile run with
# (through the test's own filter, spaces squeezed), where aijcusparse
# itself is wrong
run() {
  name=$1; np=$2; expect=$3; exe=$4; aargs=$5; targs=$6; ref=${7:-}
  log=$W/$name
  # shellcheck disable=SC2086
  timeout 120 $MPIEXEC --allow-run-as-root --oversubscribe -n "$np" "$dir/$exe" $aargs > "$log.ref" 2>&1
  rc_ref=$?
  # shellcheck disable=SC2086
  timeout 120 $MPIEXEC --allow-run-as-root --oversubscribe -n "$np" "$dir/$exe" $targs -dll_append "$LIB" -log_view ":$log.logview" > "$log.tile" 2>&1
  rc_tile=$?
  norm "$log.ref" > "$log.ref.norm"; norm "$log.tile" > "$log.tile.norm"
  what=aijcusparse
  if [ -n "$ref" ]; then
    squeeze "$ref" > "$log.ref.norm"; rc_ref=0; what="PETSc's expected output ${ref##*/}"
    squeeze "$log.tile" > "$log.tile.norm"
  fi
  judge "$name" "$np" "$targs" "$what" "$rc_ref" "$rc_tile" "$log.ref.norm" "$log.tile.norm" "$log.logview" "$expect" "AIJCUSPARSE's"
}

run ex250_cuda_np1 1 tile ex250 "-mat_type aijcusparse" "-mat_type tile"
# on 3 ranks PETSc's MPIAIJCUSPARSE backend reuses C = A*B with its old
# operands where the program asks for B*A (its output differs from the
# expected file): the tile run is compared with PETSc's expected output
run ex250_cuda_np3 3 tile ex250 "-mat_type aijcusparse" "-mat_type tile" "$dir/ex250_1.out"
for t in seq mpi; do for la in 0 1; do for neg in 0 1; do
  run ex123_1_cuda_${t}_$la$neg 1 tile ex123 "-mat_type ${t}aijcusparse -localapi $la -neg $neg" "-mat_type ${t}tile -localapi $la -neg $neg"
done; done; done
for la in 0 1; do
  run ex123_2_cuda_$la 3 tile ex123 "-mat_type mpiaijcusparse -localapi $la -neg 0" "-mat_type mpitile -localapi $la -neg 0"
done
for l in 0 1; do for x in 0 1; do
  run ex70_1_cuda_$l$x 1 aij ex70 "-local $l -xgpu $x -bgpu $x -A_mat_type seqaijcusparse -testshellops 1" "-local $l -xgpu $x -bgpu $x -A_mat_type seqtile -testshellops 1"
  run ex70_1_par_cuda_$l$x 2 aij ex70 "-local $l -xgpu $x -bgpu $x -A_mat_type mpiaijcusparse -testnest 0 -testmatmatt 0 -matproduct_batch_size 3" "-local $l -xgpu $x -bgpu $x -A_mat_type mpitile -testnest 0 -testmatmatt 0 -matproduct_batch_size 3"
done; done
for l in 0 1; do
  run ex70_2_par_cuda_$l 2 aij ex70 "-M 11 -N 9 -K 1 -local $l -testcircular 0 -A_mat_type mpiaijcusparse -xgpu -bgpu -testnest 0 -testmatmatt 0" "-M 11 -N 9 -K 1 -local $l -testcircular 0 -A_mat_type mpitile -xgpu -bgpu -testnest 0 -testmatmatt 0"
done
echo "1..$n"
rm -rf "$W"
exit $fail
