#!/bin/sh
# TAP test: PETSc's own KSP tutorials ex45 (3D) and ex50 (2D), unmodified,
# built with PETSc's compiler and flags, run with GAMG on AIJ and on the tile
# type loaded through -dll_append: same iteration counts and residuals, and
# the tile engine's plans must have run.  Skipped when the tutorials
# (Debian: libpetsc3.18-dev-examples) are not installed.
. ./test/petsc_env.sh || { echo "1..0 # SKIP test/petsc_env.sh missing"; exit 0; }

TUT=${PETSC_TUTORIALS:-$PETSC_PREFIX/share/petsc/examples/src/ksp/ksp/tutorials}
if [ ! -f "$TUT/ex45.c" ] || [ ! -f "$TUT/ex50.c" ]; then
  echo "1..1"
  echo "ok 1 # SKIP PETSc KSP tutorials not found in $TUT"
  exit 0
fi
LIB=$TILERAP_BUILDDIR/.libs/libtilerap.so
WORK=test/tutorials
mkdir -p "$WORK"
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }

for ex in ex45 ex50; do
  if $TILERAP_CC $PETSC_CFLAGS "$TUT/$ex.c" -o "$WORK/$ex" $PETSC_LIBS -lm > "$WORK/$ex.build.log" 2>&1; then
    ok "$ex built unmodified with $TILERAP_CC"
  else
    notok "$ex does not build (see $WORK/$ex.build.log)"
  fi
done

# field 2 of "Linear solve converged due to CONVERGED_RTOL iterations N"
its() { sed -n 's/.*Linear solve converged due to .* iterations \([0-9]*\).*/\1/p' "$1" | tail -1; }
plans() { awk '$1 == "TileRAPPlan" { print $2 }' "$1" | tail -1; }
rnorm() { sed -n 's/^Residual norm \(.*\)$/\1/p' "$1" | tail -1; }

run_case() { # name exe args...
  name=$1; exe=$2; shift 2
  [ -x "$WORK/$exe" ] || { notok "$name: $exe not built"; return; }
  "$WORK/$exe" "$@" -pc_type gamg -ksp_converged_reason -dm_mat_type aij > "$WORK/$name.aij.log" 2>&1
  rc_aij=$?
  "$WORK/$exe" "$@" -dll_append "$LIB" -dm_mat_type seqtile -pc_type gamg -ksp_converged_reason -log_view > "$WORK/$name.tile.log" 2>&1
  rc_tile=$?
  ia=$(its "$WORK/$name.aij.log"); it=$(its "$WORK/$name.tile.log"); p=$(plans "$WORK/$name.tile.log")
  if [ $rc_aij -eq 0 ] && [ $rc_tile -eq 0 ] && [ -n "$ia" ] && [ "$ia" = "$it" ]; then
    ok "$name: same iterations with seqtile as with aij ($it)"
  else
    notok "$name: iterations aij '$ia' (rc $rc_aij) vs seqtile '$it' (rc $rc_tile); logs in $WORK"
  fi
  if [ -n "$p" ] && [ "$p" -gt 0 ]; then
    ok "$name: the tile engine planned $p products"
  else
    notok "$name: TileRAPPlan did not run (seqtile not used?)"
  fi
  ra=$(rnorm "$WORK/$name.aij.log"); rt=$(rnorm "$WORK/$name.tile.log")
  if [ -n "$ra" ]; then
    if awk -v a="$ra" -v t="$rt" 'BEGIN { d = a - t; if (d < 0) d = -d; exit !(t != "" && d <= 1e-10 * (a < 0 ? -a : a) + 1e-300) }'; then
      ok "$name: same final residual norm ($rt)"
    else
      notok "$name: residual norm aij $ra vs seqtile $rt"
    fi
  fi
}

run_case ex45_7 ex45
run_case ex45_33 ex45 -da_grid_x 33 -da_grid_y 33 -da_grid_z 33
run_case ex50_11 ex50
run_case ex50_129 ex50 -da_grid_x 129 -da_grid_y 129
echo "1..$n"
exit $fail
