#!/bin/sh
# The GPU tests again with each path forced that the automatic choice takes
# only on large products (doc/tuning.md, internal knobs), so that small
# test problems cover them: part of `make check-gpu` after the whole suite
# and the sanitizers.  TAP; BUILD_DIR holds test/.
#   test/gpu_paths.sh [BUILD_DIR]
B=${1:-.}
if "$B/test/test_gpu_errors" 2>/dev/null | grep -q '^1\.\.0 # SKIP'; then
  echo "Bail out! no GPU visible (make check-gpu needs one; make check runs the rest)"
  exit 1
fi
n=0
fail=0
# run "SETTINGS" PROGRAM: the program's TAP must pass with the settings
run() {
  n=$((n + 1))
  log=$B/test/gpu_paths.$n.log
  # shellcheck disable=SC2086
  env $1 "$B/test/$2" >"$log" 2>&1
  rc=$?
  ok=$(grep -c '^ok ' "$log")
  nok=$(grep -c '^not ok ' "$log")
  if [ $rc = 0 ] && [ "$nok" = 0 ] && [ "$ok" -gt 0 ]; then
    echo "ok $n - $2 with $1 ($ok checks)"
  else
    echo "not ok $n - $2 with $1: exit $rc, $nok failed (see $log)"
    fail=1
  fi
}
for t in test_gpu_spgemm test_gpu_ptap; do
  run "TILERAP_STEP1_SORT=radix TILERAP_TRANSPOSE_SORT=1" $t
  run "TILERAP_STEP1_SORT=rows" $t
  run "TILERAP_STEP1_SORT=compact" $t
  run "TILERAP_MASKS_LANES=8" $t
done
run "TILERAP_STEP1_SORT=compact" test_ptap
for c in merge sort; do # both device CSR->tile paths on every conversion test
  run "TILERAP_CONVERT=$c" test_gpu_convert
  run "TILERAP_CONVERT=$c" test_irregular
  run "TILERAP_CONVERT=$c" test_gpu_order
done
run "TILERAP_ROWS_MAX=0" test_gpu_spgemm
run "TILERAP_CUDA_WALK_MAX=1e9 TILERAP_CUDA_WALK_MEAN=1e9" test_gpu_spgemm
run "TILERAP_CUDA_HITS=plan" test_gpu_spgemm
for m in first scatter; do
  run "TILERAP_PTAP=$m" test_gpu_ptap
  run "TILERAP_PTAP=$m" test_ptap
done
run "TILERAP_PTAP=first TILERAP_PTAP_GATHER=1" test_gpu_ptap
run "TILERAP_PTAP_KERNEL=scatter" test_gpu_ptap
run "TILERAP_PTAP_KERNEL=scatter" test_ptap
run "TILERAP_PTAP=first TILERAP_PTAP_KERNEL=rows" test_gpu_ptap
for g in 1 8; do
  run "TILERAP_PTAP_KERNEL=rows TILERAP_ROWS_GROUP=$g" test_gpu_ptap
  run "TILERAP_PTAP=scatter TILERAP_PTAP_KERNEL=rows TILERAP_ROWS_GROUP=$g" test_gpu_ptap
  run "TILERAP_PTAP_KERNEL=rows TILERAP_ROWS_GROUP=$g" test_ptap
done
# the CSR path (csr_path.c) on every GPU product test, and the tile path
# on the irregular set, where the automatic choice takes the CSR path
for t in test_gpu_spgemm test_gpu_ptap test_atb test_irregular; do
  run "TILERAP_PATH=csr" $t
done
run "TILERAP_PATH=tiles" test_irregular
# CSR-path re-runs from a record on every product, and on none
for t in test_gpu_spgemm test_gpu_ptap test_irregular; do
  run "TILERAP_PATH=csr TILERAP_CSR_RECORD_MACS=1e300" $t
done
for t in test_gpu_spgemm test_gpu_ptap; do
  run "TILERAP_PATH=csr TILERAP_CSR_RECORD_MACS=0" $t
done
run "TILERAP_CSR_RECORD_MACS=0" test_irregular
run "TILERAP_CSR_RECORD_MACS=0" test_gpu_csr_device
echo "1..$n"
exit $fail
