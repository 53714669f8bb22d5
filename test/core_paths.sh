#!/bin/sh
# The core product tests (TAP), and the PETSc product and GAMG tests in a
# PETSc build, with each path of the plans forced
# (TILERAP_PATH=tiles|csr), and the PETSc tests with each route of the CPU
# CSR plans' P^T A P (TILERAP_CSR_PTAP=ap|walk): the automatic choice takes
# the CSR path only where tiles are nearly empty, so this is where each path
# meets every case of the other.  One TAP line per program and setting; a
# failing program's own "not ok" lines are shown.
b=${top_builddir:-.}/test
n=0; fail=0
# run_one PROGRAM TAG VAR=VALUE...: the program --quick with the settings
run_one() {
  t=$1; tag=$2; shift 2
  [ -x "$b/$t" ] || return 0
  n=$((n + 1))
  out=test/core_paths.$t.$tag.out
  env "$@" "$b/$t" --quick >"$out" 2>&1
  rc=$?
  bad=$(grep -c '^not ok' "$out")
  good=$(grep -c '^ok' "$out")
  if [ $rc -eq 0 ] && [ "$bad" -eq 0 ] && [ "$good" -gt 0 ]; then
    echo "ok $n - $t with $* ($good checks)"
  else
    echo "not ok $n - $t with $* (rc $rc, $bad of $((good + bad)) checks failed)"
    grep '^not ok' "$out" | head -20 | sed 's/^/# /'
    tail -5 "$out" | sed 's/^/# /'
    fail=1
  fi
}
for path in tiles csr; do
  # the PETSc product and GAMG tests too where PETSc was found
  for t in test_spgemm test_atb test_ptap test_irregular petsc_seqtile_product petsc_gamg; do
    run_one $t $path TILERAP_PATH=$path
  done
done
# the PETSc types' products on the CPU engine (CSR plans) by each route of
# P^T A P, against AIJ's; and GAMG with A*P kept (not the default), whose
# sums run in AIJ's order: petsc_gamg then compares whole hierarchies with
# AIJ's to 1e-12 (the default walk's other association keeps the first
# coarse level only; GAMG's later levels amplify a last-bit change: same
# iterations, operators within 3.1e-9; doc/tuning.md)
for via in walk ap; do
  run_one petsc_seqtile_product $via TILERAP_ENGINE=cpu TILERAP_CSR_PTAP=$via
done
run_one petsc_gamg ap TILERAP_ENGINE=cpu TILERAP_CSR_PTAP=ap
echo "1..$n"
exit $fail
