#!/bin/sh
# TAP test: an unmodified PETSc program (SNES tutorial ex5, Bratu, Newton
# with -pc_type hypre: BoomerAMG set up again at every Newton step) with
# the hook preloaded and TILERAP_HYPRE_REUSE: the Newton steps after the
# first re-set-up from the kept hierarchy, the same Newton and linear
# iterations and the same final residual as hypre's full setups; with
# TILERAP_HYPRE_REUSE=1 a full setup every other step.  Skipped when the
# tutorials (Debian: libpetsc3.18-dev-examples) are not installed.
. ./test/petsc_env.sh || { echo "1..0 # SKIP test/petsc_env.sh missing"; exit 0; }
SRC=${PETSC_SNES_TUTORIALS:-$PETSC_PREFIX/share/petsc/examples/src/snes/tutorials}/ex5.c
if [ ! -f "$SRC" ]; then
  echo "1..0 # SKIP PETSc SNES tutorial ex5 not found ($SRC)"
  exit 0
fi
# -pc_type hypre needs a PETSc configured with hypre (Debian's is; a PETSc
# built without it knows no such type)
if ! grep -q '^#define PETSC_HAVE_HYPRE 1' "$PETSC_PREFIX/include/petscconf.h" 2>/dev/null; then
  echo "1..0 # SKIP PETSc at $PETSC_PREFIX was built without hypre (no -pc_type hypre)"
  exit 0
fi
HOOK=$TILERAP_BUILDDIR/.libs/libtilerap_hypre.so
WORK=test/tutorials
mkdir -p "$WORK"
unset TILERAP_HYPRE TILERAP_HYPRE_REUSE TILERAP_HYPRE_VERBOSE
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fail=1; echo "not ok $n - $*"; }
if ! $TILERAP_CC $PETSC_CFLAGS "$SRC" -o "$WORK/snes_ex5" $PETSC_LIBS -lm > "$WORK/snes_ex5.build.log" 2>&1; then
  notok "SNES ex5 does not build (see $WORK/snes_ex5.build.log)"
  echo "1..$n"
  exit 1
fi
ok "SNES ex5 built unmodified with $TILERAP_CC"

args="-da_grid_x 49 -da_grid_y 49 -par 6.0 -pc_type hypre -snes_converged_reason -ksp_converged_reason -snes_monitor"
newton() { sed -n 's/.*Nonlinear solve converged due to .* iterations \([0-9]*\).*/\1/p' "$1" | tail -1; }
linear() { sed -n 's/.*Linear solve converged due to .* iterations \([0-9]*\).*/\1/p' "$1" | tr '\n' ' '; }
fnorm() { sed -n 's/.*SNES Function norm \(.*\)$/\1/p' "$1" | tail -1; }
reused() { sed -n 's/.*setups with re-setup asked for: \([0-9]*\) re-setups.*, \([0-9]*\) full.*/\1 \2/p' "$1"; }

LD_PRELOAD=$HOOK "$WORK/snes_ex5" $args > "$WORK/snes_ex5.full.log" 2>&1
rc0=$?
for k in -1 1; do
  TILERAP_HYPRE_REUSE=$k TILERAP_HYPRE_VERBOSE=1 LD_PRELOAD=$HOOK "$WORK/snes_ex5" $args > "$WORK/snes_ex5.reuse$k.log" 2>&1
  rc=$?
  nf=$(newton "$WORK/snes_ex5.full.log"); nr=$(newton "$WORK/snes_ex5.reuse$k.log")
  lf=$(linear "$WORK/snes_ex5.full.log"); lr=$(linear "$WORK/snes_ex5.reuse$k.log")
  set -- $(reused "$WORK/snes_ex5.reuse$k.log")
  re=${1:-0}; full=${2:-0}
  if [ $k = -1 ]; then want_re=$((nf - 1)); want_full=1; else want_re=$((nf / 2)); want_full=$((nf - nf / 2)); fi
  if [ $rc0 -eq 0 ] && [ $rc -eq 0 ] && [ -n "$nf" ] && [ "$nf" -ge 3 ] && [ "$re" = "$want_re" ] && [ "$full" = "$want_full" ]; then
    ok "TILERAP_HYPRE_REUSE=$k: $re re-setups and $full full setups over $nf Newton steps"
  else
    notok "TILERAP_HYPRE_REUSE=$k: '$re' re-setups, '$full' full over '$nf' Newton steps (rc $rc0/$rc; logs in $WORK)"
  fi
  if [ -n "$nr" ] && [ "$nf" = "$nr" ] && [ "$lf" = "$lr" ]; then
    ok "TILERAP_HYPRE_REUSE=$k: Newton ($nr) and linear iterations ($lr) as with hypre's full setups"
  else
    notok "TILERAP_HYPRE_REUSE=$k: Newton $nf / $nr, linear '$lf' / '$lr'"
  fi
  ff=$(fnorm "$WORK/snes_ex5.full.log"); fr=$(fnorm "$WORK/snes_ex5.reuse$k.log")
  if [ -n "$ff" ] && awk -v a="$ff" -v b="$fr" 'BEGIN { exit !(b != "" && b + 0 <= 10 * a + 1e-300) }'; then
    ok "TILERAP_HYPRE_REUSE=$k: final function norm $fr (full setups: $ff)"
  else
    notok "TILERAP_HYPRE_REUSE=$k: final function norm '$fr' against '$ff'"
  fi
done
echo "1..$n"
exit $fail
