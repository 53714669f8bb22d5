#!/bin/sh
# Multi-rank runs of the MATMPITILE tests (TAP): test/petsc_mpi_product and
# test/petsc_mpi_gamg on 1, 2 and 4 ranks; PETSc's own KSP tutorials ex45
# (3D) and ex50 (2D), unmodified, with -dll_append on 2 and 4 ranks: the
# same iterations and residual as aij, the tile engine's plans ran
# (-mat_tile_mpi_products tile), or none with the automatic choice; the
# poisson example with -dm_mat_type mpitile and tile.  Open MPI's mpiexec;
# as root the OMPI_ALLOW_RUN_AS_ROOT pair is set.
. ./test/petsc_env.sh || { echo "1..0 # SKIP test/petsc_env.sh missing"; exit 0; }
MPIEXEC=${MPIEXEC:-mpiexec}
if [ "$(id -u)" = 0 ]; then
  OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
OMPI_MCA_rmaps_base_oversubscribe=1; export OMPI_MCA_rmaps_base_oversubscribe
# one OpenMP thread per rank: several ranks share few cores here
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}; export OMP_NUM_THREADS
unset TILERAP_ENGINE
bin=${top_builddir:-.}
n=0; fail=0
tap() { # tap ok|fail "description" [log]
  n=$((n + 1))
  if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
  if [ -n "$3" ] && [ "$1" != ok ]; then sed 's/^/# /' "$3" | tail -40; fi
}
WORK=test/petsc_mpi.d
mkdir -p "$WORK"
log=$WORK/last.log

if ! command -v "$MPIEXEC" >/dev/null 2>&1; then echo "1..0 # SKIP no $MPIEXEC"; exit 0; fi

# ---------------------------------------------------------------- TAP programs
for prog in petsc_mpi_product petsc_mpi_gamg; do
  for np in 1 2 4; do
    $MPIEXEC --oversubscribe -n $np "$bin/test/$prog" >"$log" 2>&1
    rc=$?
    grep -E '^(not )?ok ' "$log" | sed "s/^/# /"
    if [ $rc -eq 0 ] && grep -q '^1\.\.' "$log" && ! grep -q '^not ok' "$log"; then
      tap ok "$prog on $np ranks ($(grep -c '^ok' "$log") checks)"
    else
      tap fail "$prog on $np ranks (rc=$rc)" "$log"
    fi
  done
done

# ---------------------------------------------------------------- PETSc tutorials
TUT=${PETSC_TUTORIALS:-$PETSC_PREFIX/share/petsc/examples/src/ksp/ksp/tutorials}
LIB=$TILERAP_BUILDDIR/.libs/libtilerap.so
its() { sed -n 's/.*Linear solve converged due to .* iterations \([0-9]*\).*/\1/p' "$1" | tail -1; }
plans() { awk '$1 == "TileRAPPlan" { print $2 }' "$1" | tail -1; }
rnorm() { sed -n 's/^Residual norm \(.*\)$/\1/p' "$1" | tail -1; }
if [ -f "$TUT/ex45.c" ] && [ -f "$TUT/ex50.c" ]; then
  for ex in ex45 ex50; do
    if ! $TILERAP_CC $PETSC_CFLAGS "$TUT/$ex.c" -o "$WORK/$ex" $PETSC_LIBS -lm >"$WORK/$ex.build.log" 2>&1; then
      tap fail "$ex does not build" "$WORK/$ex.build.log"
    fi
  done
  tut_case() { # name np tiletype exe args...
    name=$1; np=$2; ttype=$3; exe=$4; shift 4
    [ -x "$WORK/$exe" ] || { tap fail "$name: $exe not built"; return; }
    $MPIEXEC --oversubscribe -n $np "$WORK/$exe" "$@" -pc_type gamg -ksp_converged_reason -dm_mat_type aij >"$WORK/$name.aij.log" 2>&1
    rc_aij=$?
    $MPIEXEC --oversubscribe -n $np "$WORK/$exe" "$@" -dll_append "$LIB" -dm_mat_type $ttype -pc_type gamg -ksp_converged_reason \
      -mat_tile_mpi_products tile -log_view -mat_view ::ascii_info >"$WORK/$name.tile.log" 2>&1
    rc_tile=$?
    ia=$(its "$WORK/$name.aij.log"); it=$(its "$WORK/$name.tile.log"); p=$(plans "$WORK/$name.tile.log")
    ra=$(rnorm "$WORK/$name.aij.log"); rt=$(rnorm "$WORK/$name.tile.log")
    if [ $rc_aij -eq 0 ] && [ $rc_tile -eq 0 ] && [ -n "$ia" ] && [ "$ia" = "$it" ] && [ -n "$p" ] && [ "$p" -gt 0 ] &&
       grep -q 'type: mpiaijtile' "$WORK/$name.tile.log" &&
       { [ -z "$ra" ] || awk -v a="$ra" -v t="$rt" 'BEGIN { d = a - t; if (d < 0) d = -d; exit !(t != "" && d <= 1e-8 * (a < 0 ? -a : a) + 1e-300) }'; }; then
      tap ok "$name np=$np -dm_mat_type $ttype: same iterations as aij ($it), residual $rt, mpiaijtile matrices, $p tile plans (max over ranks)"
    else
      tap fail "$name np=$np -dm_mat_type $ttype: iterations aij '$ia' (rc $rc_aij) vs tile '$it' (rc $rc_tile), plans '$p', residual $ra vs $rt" "$WORK/$name.tile.log"
    fi
  }
  tut_case ex45_9 2 mpitile ex45 -da_grid_x 9 -da_grid_y 9 -da_grid_z 9
  tut_case ex45_17 4 tile ex45 -da_grid_x 17 -da_grid_y 17 -da_grid_z 17
  tut_case ex50_65 2 tile ex50 -da_grid_x 65 -da_grid_y 65
  tut_case ex50_65 4 mpitile ex50 -da_grid_x 65 -da_grid_y 65
  # the automatic choice on two ranks with the CPU engine: MPIAIJ's own
  # products (no tile plan), the same iterations and residual as aij
  $MPIEXEC --oversubscribe -n 2 "$WORK/ex45" -da_grid_x 17 -da_grid_y 17 -da_grid_z 17 -pc_type gamg -ksp_converged_reason \
    -dm_mat_type aij >"$WORK/auto.aij.log" 2>&1
  rc_aij=$?
  TILERAP_ENGINE=cpu $MPIEXEC --oversubscribe -n 2 "$WORK/ex45" -da_grid_x 17 -da_grid_y 17 -da_grid_z 17 -pc_type gamg \
    -ksp_converged_reason -dll_append "$LIB" -dm_mat_type mpitile -log_view -mat_view ::ascii_info >"$WORK/auto.tile.log" 2>&1
  rc_tile=$?
  ia=$(its "$WORK/auto.aij.log"); it=$(its "$WORK/auto.tile.log"); p=$(plans "$WORK/auto.tile.log")
  ra=$(rnorm "$WORK/auto.aij.log"); rt=$(rnorm "$WORK/auto.tile.log")
  if [ $rc_aij -eq 0 ] && [ $rc_tile -eq 0 ] && [ -n "$ia" ] && [ "$ia" = "$it" ] && { [ -z "$p" ] || [ "$p" = 0 ]; } &&
     grep -q 'type: mpiaijtile' "$WORK/auto.tile.log" &&
     awk -v a="$ra" -v t="$rt" 'BEGIN { d = a - t; if (d < 0) d = -d; exit !(t != "" && d <= 1e-8 * (a < 0 ? -a : a) + 1e-300) }'; then
    tap ok "ex45 np=2 mpitile, CPU engine, -mat_tile_mpi_products auto: MPIAIJ's products (no tile plan), same iterations ($it) and residual as aij"
  else
    tap fail "ex45 np=2 mpitile, CPU engine, auto: iterations aij '$ia' vs '$it', plans '$p'" "$WORK/auto.tile.log"
  fi
else
  tap ok "PETSc tutorials # SKIP not found in $TUT"
fi

# ---------------------------------------------------------------- poisson example
if [ -x "$bin/examples/poisson/poisson" ]; then
  for ttype in mpitile tile; do
    $MPIEXEC --oversubscribe -n 2 "$bin/examples/poisson/poisson" -dim 2 -n 65 -resetups 1 -dm_mat_type aij >"$WORK/poisson.aij.log" 2>&1
    rc_aij=$?
    $MPIEXEC --oversubscribe -n 2 "$bin/examples/poisson/poisson" -dim 2 -n 65 -resetups 1 -dm_mat_type $ttype \
      -mat_tile_mpi_products tile -log_view >"$log" 2>&1
    rc=$?
    ia=$(sed -n 's/^setup \([0-9]\): .*iterations \([0-9]*\),.*/\1:\2/p' "$WORK/poisson.aij.log" | tr '\n' ' ')
    it=$(sed -n 's/^setup \([0-9]\): .*iterations \([0-9]*\),.*/\1:\2/p' "$log" | tr '\n' ' ')
    if [ $rc -eq 0 ] && [ $rc_aij -eq 0 ] && [ -n "$it" ] && [ "$ia" = "$it" ] && grep -q 'matrix type mpiaijtile' "$log" &&
       [ -n "$(plans "$log")" ] && [ "$(plans "$log")" -gt 0 ]; then
      tap ok "poisson np=2 -dm_mat_type $ttype: mpiaijtile, same iterations as aij per setup ($it), $(plans "$log") tile plans"
    else
      tap fail "poisson np=2 -dm_mat_type $ttype (rc=$rc): iterations aij '$ia' vs tile '$it'" "$log"
    fi
  done
  # one GPU per rank: a device that is not there is a clear error on every
  # rank (no hang); -info names the choice where a GPU is present
  timeout 120 $MPIEXEC --oversubscribe -n 2 "$bin/examples/poisson/poisson" -dim 2 -n 33 -dm_mat_type mpitile \
    -mat_tile_device 99 >"$log" 2>&1
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- '-mat_tile_device 99: ' "$log"; then
    tap ok "poisson np=2 -mat_tile_device 99: refused with a clear error, no hang ($(grep -m1 -o -- '-mat_tile_device 99: .*' "$log"))"
  else
    tap fail "poisson np=2 -mat_tile_device 99 (rc=$rc)" "$log"
  fi
fi
echo "1..$n"
exit $fail
