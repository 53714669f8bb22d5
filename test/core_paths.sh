#!/bin/sh
# The core product tests (TAP), and the PETSc product and GAMG tests in a
# PETSc build, with each path of the plans forced
# (TILERAP_PATH=tiles|csr), and the PETSc tests with each route of the CPU
# CSR plans' P^T A P (TILERAP_CSR_PTAP=walk|ap): the automatic choice takes the CSR path only
# where tiles are nearly empty, so this is where each path meets every
# case of the other.  One TAP line per program and path; a failing
# program's own "not ok" lines are shown.
b=${top_builddir:-.}/test
n=0; fail=0
for path in tiles csr; do
  # the PETSc product and GAMG tests too where PETSc was found
  for t in test_spgemm test_atb test_ptap test_irregular petsc_seqtile_product petsc_gamg; do
    [ -x "$b/$t" ] || continue
    n=$((n + 1))
    out=test/core_paths.$t.$path.out
    TILERAP_PATH=$path "$b/$t" --quick >"$out" 2>&1
    rc=$?
    bad=$(grep -c '^not ok' "$out")
    good=$(grep -c '^ok' "$out")
    if [ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$good" -gt 0 ]; then
      echo "ok $n - $t with TILERAP_PATH=$path ($good checks)"
    else
      echo "not ok $n - $t with TILERAP_PATH=$path (rc $rc, $bad of $((good + bad)) checks failed)"
      grep '^not ok' "$out" | head -20 | sed 's/^/# /'
      tail -5 "$out" | sed 's/^/# /'
      fail=1
    fi
  done
done
# the PETSc types' MatPtAP on the CPU engine (CSR plans) with each route
# of TILERAP_CSR_PTAP forced: auto takes the walk on most products
for via in walk ap; do
  for t in petsc_seqtile_product petsc_gamg; do
    [ -x "$b/$t" ] || continue
    n=$((n + 1))
    out=test/core_paths.$t.$via.out
    TILERAP_ENGINE=cpu TILERAP_CSR_PTAP=$via "$b/$t" --quick >"$out" 2>&1
    rc=$?
    bad=$(grep -c '^not ok' "$out")
    good=$(grep -c '^ok' "$out")
    if [ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$good" -gt 0 ]; then
      echo "ok $n - $t with TILERAP_CSR_PTAP=$via ($good checks)"
    else
      echo "not ok $n - $t with TILERAP_CSR_PTAP=$via (rc $rc, $bad of $((good + bad)) checks failed)"
      grep '^not ok' "$out" | head -20 | sed 's/^/# /'
      tail -5 "$out" | sed 's/^/# /'
      fail=1
    fi
  done
done
echo "1..$n"
exit $fail
