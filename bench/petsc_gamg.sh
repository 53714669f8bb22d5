#!/bin/sh
# PETSc's own tutorials with GAMG, a PETSc type against the tile type loaded
# with -dll_append, runs alternating type by type: PCSetUp, GAMG's strength
# graph (MatCreateGraph) and products (graph squaring: MatTrnMatMult,
# MatMatMult: prolongator smoothing, MatPtAP: Galerkin), KSPSolve and the
# iterations from -log_view, then min / median / max per case and type
# (GPU=1: and the device's peak memory in use during the run, MiB).
#
#   bench/petsc_gamg.sh [REPS]            CPU: AIJ against seqtile (default 5 runs;
#                                         after ./quickstart, Debian's PETSc)
#   NP=2 bench/petsc_gamg.sh [REPS]       2 MPI ranks: aij against tile (mpiaij against
#                                         mpitile; give each rank one thread)
#   GPU=1 PETSC_DIR=DIR LIB=.../libtilerap.so bench/petsc_gamg.sh [REPS]
#                                         a PETSc built with CUDA (DIR: its prefix) on a
#                                         GPU: aijcusparse against seqtile (AIJCUSPARSE
#                                         underneath), CUDA vectors, -log_view_gpu_time;
#                                         LIB: tilerap configured --with-petsc=DIR
#   GPU=1 NP=2 MPIEXEC=mpiexec ... bench/petsc_gamg.sh [REPS]
#                                         two ranks, one GPU each: aijcusparse
#                                         (MPIAIJCUSPARSE) against tile (mpitile)
#
# Cases (CASES to choose): SNES ex12 (Poisson, hex meshes of PETSc's box
# generator, Q1, Q2, Q3), KSP ex45 (3-D Laplacian) and KSP ex56 (3-D
# elasticity); not by default, ex12 on tetrahedra (P1, P2, P3: pKtetN, N^3
# cubes of 6 tets from bench/tet_mesh.py, nodes and elements in random order
# as from an unstructured mesh generator; PETSc here has no 3-D simplex
# generator): CASES="p1tet32 p2tet20 p3tet12", GPU=1: "p1tet40 p2tet20"
# (ex12's own mesh setup and assembly, serial, take most of a run: ~80 s for
# p1tet40 on one CPU core); the meshes are made once, as tetN.msh in
# TET_MESH (default OUT; put them there on a machine without python3).
# Larger on the GPU, where "resetup" adds this repository's
# examples/poisson (7-point 100^3, GAMG with reused interpolation, two
# re-setups on new values): rows resetup-0 (first setup) and resetup-2 (the
# second re-setup), MatPtAP the Galerkin time, KSPSolve the solve.  A case
# NAME:N[:ORDER] is a matrix of the irregular set (tilerap_model_irregular)
# through bench/petsc-gamg-irregular: CG + GAMG on b = A*1, e.g.
# CASES="mesh3d:150000 powerlaw:100000 random:100000 denserow:250000".
# GPU=1: ex45-N is ex45 on an N^3 grid (scaling: NP=1 and NP=2 on the
# 2-GPU machine, one GPU per rank; MPIEXEC names the launcher).  TUTORIALS=DIR takes ex12, ex45 and ex56
# already built there (e.g. on a machine without compilers), and poisson
# for "resetup" (default: the build next to LIB).  OMP_NUM_THREADS:
# the CPU engine's threads (default all cores); PETSc's AIJ runs on one.
# Logs in bench/petsc_gamg.d/.
set -e
REPS=${1:-5}
TOP=$(cd "$(dirname "$0")/.." && pwd)
GPU=${GPU:-0}
LIB=${LIB:-$TOP/_build/.libs/libtilerap.so}
OUT=${OUT:-$TOP/bench/petsc_gamg.d}
mkdir -p "$OUT"
[ -f "$LIB" ] || { echo "build first (./quickstart): $LIB missing" >&2; exit 1; }
if [ -n "$TUTORIALS" ]; then
  BIN=$TUTORIALS
else
  BIN=$OUT
  if [ -n "$PETSC_DIR" ]; then
    SRC=${PETSC_SRC:-$PETSC_DIR/share/petsc/examples/src}
    CFL="-I$PETSC_DIR/include"; LDL="-L$PETSC_DIR/lib -Wl,-rpath,$PETSC_DIR/lib -lpetsc"
  else
    SRC=${PETSC_TUTORIALS:-/usr/lib/petsc/share/petsc/examples/src}
    CFL=$(pkg-config --cflags PETSc); LDL=$(pkg-config --libs PETSc)
    [ -d /usr/include/hdf5/openmpi ] && CFL="$CFL -I/usr/include/hdf5/openmpi"
  fi
  for e in snes/tutorials/ex12 ksp/ksp/tutorials/ex45 ksp/ksp/tutorials/ex56; do
    b=$BIN/$(basename $e)
    [ -x "$b" ] || mpicc $CFL "$SRC/$e.c" -o "$b" $LDL $EXTRA_LDFLAGS -lm
  done
fi
POISSON=$BIN/poisson
[ -x "$POISSON" ] || POISSON=$(dirname "$(dirname "$LIB")")/examples/poisson/poisson
IRR=$BIN/petsc-gamg-irregular
[ -x "$IRR" ] || IRR=$(dirname "$(dirname "$LIB")")/bench/petsc-gamg-irregular
set +e

NP=${NP:-1}
MPI=; TYPES="aij seqtile"; VEC=; GPUTIME=
[ "$NP" -gt 1 ] && { MPI="${MPIEXEC:-mpiexec} --allow-run-as-root --oversubscribe -n $NP"; TYPES="aij tile"; }
if [ "$GPU" = 1 ]; then
  TYPES="aijcusparse seqtile"; VEC="-dm_vec_type cuda -vec_type cuda"; GPUTIME=-log_view_gpu_time
  # Debian's Open MPI is not CUDA-aware (PETSc refuses to start without this;
  # drop it with an MPI that is: GPU_AWARE=1)
  [ "${GPU_AWARE:-0}" = 1 ] || VEC="$VEC -use_gpu_aware_mpi 0"
  [ "$NP" -gt 1 ] && TYPES="aijcusparse tile"
fi
# GPU=1: the device's memory in use sampled every 20 ms while a run lasts
# (nvidia-smi; the whole device, one run at a time, CUDA context included)
mem_start() { [ "$GPU" = 1 ] && command -v nvidia-smi >/dev/null || return 0; nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 20 > "$1.mem" 2>/dev/null & MEMPID=$!; }
mem_stop() { [ -n "$MEMPID" ] || { PEAK=0; return 0; }; kill $MEMPID 2>/dev/null; wait $MEMPID 2>/dev/null; MEMPID=; PEAK=$(sort -g "$1.mem" | tail -1); PEAK=${PEAK:-0}; }
run() { # case type args...
  c=$1; t=$2; shift 2
  log=$OUT/$c.$t.np$NP.$r.log
  mem_start "$log"
  $MPI "$@" $VEC -dll_append "$LIB" -log_view $GPUTIME > "$log" 2>&1 || { mem_stop "$log"; echo "$c $t: failed, see $log" >&2; return; }
  mem_stop "$log"
  awk -v c=$c -v t=$t '
    $1 == "PCSetUp" && $4 > pc { pc = $4 }
    $1 == "KSPSolve" && $4 > ks { ks = $4 }
    $1 == "MatCreateGraph" { gr += $4 }
    $1 == "PCGAMGCreateG" { cg += $4 } # PETSc before 3.20 logs no MatCreateGraph
    $1 == "MatTrnMatMultSym" || $1 == "MatTrnMatMultNum" { sq += $4 }
    $1 == "MatMatMultSym" || $1 == "MatMatMultNum" { mm += $4 }
    $1 == "MatPtAPSymbolic" || $1 == "MatPtAPNumeric" { ptap += $4 }
    /Linear solve converged due to/ { its = its $NF "," }
    END { if (gr == 0) gr = cg
          printf "%s %s %.4f %.4f %.4f %.4f %.4f %.4f %s %s\n", c, t, pc, gr, sq, mm, ptap, ks, its, peak }' peak="$PEAK" "$log" >> "$OUT/results.txt"
}
run_resetup() { # case type args...: examples/poisson's setup 0 and re-setup 2 (reused interpolation, new values)
  c=$1; t=$2; shift 2
  log=$OUT/$c.$t.np$NP.$r.log
  mem_start "$log"
  $MPI "$@" $VEC -log_view $GPUTIME > "$log" 2>&1 || { mem_stop "$log"; echo "$c $t: failed, see $log" >&2; return; }
  mem_stop "$log"
  awk -v c=$c -v t=$t '
    $1 == "setup" && /PCSetUp .* s, Galerkin/ { s = $2; sub(":", "", s); pc[s] = $4; gal[s] = $9; sol[s] = $(NF-1) }
    $1 == "setup" && /iterations/ { s = $2; sub(":", "", s); it[s] = $5 }
    END { for (k in pc) if (k == 0 || k == 2) printf "%s-%s %s %.4f 0 0 0 %.4f %.4f %s %s\n", c, k, t, pc[k], gal[k], sol[k], it[k], peak }' peak="$PEAK" "$log" >> "$OUT/results.txt"
}
# a dense row makes the squared graph of aggressive coarsening dense (with
# either type: out of device memory at 250 000 rows), so it coarsens plainly
irr_opts() { case $1 in denserow*) echo -pc_gamg_aggressive_coarsening 0 ;; esac; }
TET_MESH=${TET_MESH:-$OUT}
tet() { # N: ex12's options for $TET_MESH/tetN.msh, made if missing
  m=$TET_MESH/tet$1.msh
  [ -s "$m" ] || { python3 "$TOP/bench/tet_mesh.py" $1 "$m.tmp" --order random && mv "$m.tmp" "$m"; } >&2
  echo "-dm_plex_filename $m"
}
one() { # case type
  c=$1; t=$2
  x12="$BIN/ex12 -dm_plex_dim 3 -dm_plex_simplex 0 -pc_type gamg -ksp_rtol 1e-10 -ksp_converged_reason -dm_mat_type $t"
  # a mesh file has its cell type (no -dm_plex_simplex); ex12 of PETSc 3.18
  # crashes without a "marker" label in the file, so the boundary is marked
  xtet="$BIN/ex12 -dm_plex_boundary_label marker -pc_type gamg -ksp_rtol 1e-10 -ksp_converged_reason -dm_mat_type $t"
  case $c in *:*) run $c $t "$IRR" -spec $c -mat_type $t -ksp_converged_reason $(irr_opts $c); return ;; esac
  if [ "$GPU" = 1 ]; then
    case $c in
    q1hex40) run $c $t $x12 -dm_plex_box_faces 40,40,40 -petscspace_degree 1 ;;
    q2hex20) run $c $t $x12 -dm_plex_box_faces 20,20,20 -petscspace_degree 2 ;;
    p1tet40) run $c $t $xtet $(tet 40) -petscspace_degree 1 ;;
    p2tet20) run $c $t $xtet $(tet 20) -petscspace_degree 2 ;;
    ex45) run $c $t "$BIN/ex45" -da_grid_x 101 -da_grid_y 101 -da_grid_z 101 -pc_type gamg -ksp_converged_reason -dm_mat_type $t ;;
    ex45-*) n=${c#ex45-}; run $c $t "$BIN/ex45" -da_grid_x $n -da_grid_y $n -da_grid_z $n -pc_type gamg -ksp_converged_reason -dm_mat_type $t ;;
    ex56) run $c $t "$BIN/ex56" -ne 39 -pc_type gamg -ksp_rtol 1e-8 -ksp_converged_reason -mat_type $t ;;
    resetup) run_resetup $c $t "$POISSON" -dim 3 -n 100 -stencil 7 -resetups 2 -dm_mat_type $t ;;
    esac
    return
  fi
  case $c in
  q1hex40) run $c $t $x12 -dm_plex_box_faces 40,40,40 -petscspace_degree 1 ;;
  q2hex20) run $c $t $x12 -dm_plex_box_faces 20,20,20 -petscspace_degree 2 ;;
  q3hex12) run $c $t $x12 -dm_plex_box_faces 12,12,12 -petscspace_degree 3 ;;
  p1tet32) run $c $t $xtet $(tet 32) -petscspace_degree 1 ;;
  p2tet20) run $c $t $xtet $(tet 20) -petscspace_degree 2 ;;
  p3tet12) run $c $t $xtet $(tet 12) -petscspace_degree 3 ;;
  ex45) run $c $t "$BIN/ex45" -da_grid_x 49 -da_grid_y 49 -da_grid_z 49 -pc_type gamg -ksp_converged_reason -dm_mat_type $t ;;
  ex56) run $c $t "$BIN/ex56" -ne 23 -pc_type gamg -ksp_rtol 1e-8 -ksp_converged_reason -mat_type $t ;;
  esac
}
DEFAULT_CASES="q1hex40 q2hex20 q3hex12 ex45 ex56"
[ "$GPU" = 1 ] && DEFAULT_CASES="ex45 ex56 q1hex40 q2hex20 resetup"
CASES=${CASES:-$DEFAULT_CASES}
: > "$OUT/results.txt"
for r in $(seq "$REPS"); do
  for t in $TYPES; do
    for c in $CASES; do one $c $t; done
  done
done
# min / median / max of each column per case and type
echo "# $REPS runs each, $NP rank(s), GPU=$GPU, OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}; seconds, min / median / max"
echo "| case | type | PCSetUp | MatCreateGraph | graph square | MatMatMult | MatPtAP | KSPSolve | iterations | peak GPU MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for c in $(cut -d' ' -f1 "$OUT/results.txt" | awk '!seen[$1]++'); do
  for t in $TYPES; do
    awk -v c=$c -v t=$t '$1 == c && $2 == t' "$OUT/results.txt" > "$OUT/one.txt"
    [ -s "$OUT/one.txt" ] || continue
    line="| $c | $t"
    for col in 3 4 5 6 7 8; do
      line="$line | $(cut -d' ' -f$col "$OUT/one.txt" | sort -g | awk '{v[NR] = $1} END {printf "%.3f / %.3f / %.3f", v[1], v[int((NR + 1) / 2)], v[NR]}')"
    done
    echo "$line | $(cut -d' ' -f9 "$OUT/one.txt" | sort -u | tr '\n' ' ')| $(cut -d' ' -f10 "$OUT/one.txt" | sort -g | awk '{v[NR] = $1} END {printf "%d / %d / %d", v[1], v[int((NR + 1) / 2)], v[NR]}') |"
  done
done
