#!/bin/sh
# PETSc's own tutorials with GAMG on the CPU, AIJ against seqtile loaded
# with -dll_append, runs alternating type by type: PCSetUp, GAMG's products
# (MatMatMult: prolongator smoothing, MatPtAP: Galerkin) and iterations from
# -log_view, then min / median / max per case and type.
#
#   bench/petsc_gamg_cpu.sh [REPS]          (default 5; run after ./quickstart)
#   NP=2 bench/petsc_gamg_cpu.sh [REPS]     (2 MPI ranks: aij against tile, i.e. mpiaij
#                                            against mpitile; give each rank one thread)
#
# Cases: SNES ex12 (Poisson, hex meshes of PETSc's box generator, Q1, Q2,
# Q3), KSP ex45 (3-D Laplacian, 49^3) and KSP ex56 (3-D elasticity, 23^3
# elements).  OMP_NUM_THREADS: the engine's threads (default all cores);
# PETSc's AIJ runs on one.  Logs in bench/petsc_gamg_cpu.d/.
set -e
REPS=${1:-5}
TOP=$(cd "$(dirname "$0")/.." && pwd)
LIB=$TOP/_build/.libs/libtilerap.so
OUT=$TOP/bench/petsc_gamg_cpu.d
TUT=${PETSC_TUTORIALS:-/usr/lib/petsc/share/petsc/examples/src}
mkdir -p "$OUT"
[ -f "$LIB" ] || { echo "build first (./quickstart): $LIB missing" >&2; exit 1; }
HDF5=; [ -d /usr/include/hdf5/openmpi ] && HDF5=-I/usr/include/hdf5/openmpi
for e in snes/tutorials/ex12 ksp/ksp/tutorials/ex45 ksp/ksp/tutorials/ex56; do
  b=$OUT/$(basename $e)
  [ -x "$b" ] || mpicc $HDF5 $(pkg-config --cflags PETSc) "$TUT/$e.c" -o "$b" $(pkg-config --libs PETSc) -lm
done
set +e

NP=${NP:-1}
MPI=; TYPES="aij seqtile"
[ "$NP" -gt 1 ] && { MPI="mpiexec --allow-run-as-root -n $NP"; TYPES="aij tile"; }
run() { # case type args...
  c=$1; t=$2; shift 2
  log=$OUT/$c.$t.np$NP.$r.log
  $MPI "$@" -dll_append "$LIB" -log_view > "$log" 2>&1 || { echo "$c $t: failed, see $log" >&2; return; }
  awk -v c=$c -v t=$t '
    $1 == "PCSetUp" && $4 > pc { pc = $4 }
    $1 == "MatMatMultSym" || $1 == "MatMatMultNum" { mm += $4 }
    $1 == "MatPtAPSymbolic" || $1 == "MatPtAPNumeric" { ptap += $4 }
    /Linear solve converged due to/ { its = its $NF "," }
    END { printf "%s %s %.4f %.4f %.4f %s\n", c, t, pc, mm, ptap, its }' "$log" >> "$OUT/results.txt"
}
one() { # case type
  c=$1; t=$2
  x12="$OUT/ex12 -dm_plex_dim 3 -dm_plex_simplex 0 -pc_type gamg -ksp_rtol 1e-10 -ksp_converged_reason -dm_mat_type $t"
  case $c in
  q1hex40) run $c $t $x12 -dm_plex_box_faces 40,40,40 -petscspace_degree 1 ;;
  q2hex20) run $c $t $x12 -dm_plex_box_faces 20,20,20 -petscspace_degree 2 ;;
  q3hex12) run $c $t $x12 -dm_plex_box_faces 12,12,12 -petscspace_degree 3 ;;
  ex45) run $c $t "$OUT/ex45" -da_grid_x 49 -da_grid_y 49 -da_grid_z 49 -pc_type gamg -ksp_converged_reason -dm_mat_type $t ;;
  ex56) run $c $t "$OUT/ex56" -ne 23 -pc_type gamg -ksp_rtol 1e-8 -ksp_converged_reason -mat_type $t ;;
  esac
}
: > "$OUT/results.txt"
for r in $(seq "$REPS"); do
  for t in $TYPES; do
    for c in ${CASES:-q1hex40 q2hex20 q3hex12 ex45 ex56}; do one $c $t; done
  done
done
# min / median / max of each column per case and type
echo "# $REPS runs each, $NP rank(s), OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}; seconds, min / median / max"
echo "| case | type | PCSetUp | MatMatMult | MatPtAP | iterations |"
echo "|---|---|---|---|---|---|"
for c in ${CASES:-q1hex40 q2hex20 q3hex12 ex45 ex56}; do
  for t in $TYPES; do
    awk -v c=$c -v t=$t '$1 == c && $2 == t' "$OUT/results.txt" > "$OUT/one.txt"
    [ -s "$OUT/one.txt" ] || continue
    line="| $c | $t"
    for col in 3 4 5; do
      line="$line | $(cut -d' ' -f$col "$OUT/one.txt" | sort -g | awk '{v[NR] = $1} END {printf "%.3f / %.3f / %.3f", v[1], v[int((NR + 1) / 2)], v[NR]}')"
    done
    echo "$line | $(cut -d' ' -f6 "$OUT/one.txt" | sort -u | tr '\n' ' ')|"
  done
done
