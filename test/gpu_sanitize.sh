#!/bin/sh
# compute-sanitizer on the quick GPU sets: the second half of `make
# check-gpu` (the first is the whole test suite, whose core tests take the
# CUDA engine where a GPU is visible).  TAP; BUILD_DIR holds test/.
#   test/gpu_sanitize.sh [BUILD_DIR]     (SANITIZE_ONLY=REGEX: a subset, below)
# memcheck: out-of-bounds and misaligned accesses, leaks of device memory;
# racecheck: shared-memory hazards (the warp-synchronous tile code);
# synccheck: barriers and warp-synchronous primitives used wrongly.
B=${1:-.}
san=$(command -v compute-sanitizer 2>/dev/null)
[ -n "$san" ] || [ ! -x /usr/local/cuda/bin/compute-sanitizer ] || san=/usr/local/cuda/bin/compute-sanitizer
# TOOL:PROGRAM[:SETTINGS] (SETTINGS: tuning knobs, comma-separated, that
# force paths the automatic choice takes only on large products)
runs="memcheck:test_gpu_spgemm memcheck:test_gpu_ptap memcheck:test_gpu_tc racecheck:test_gpu_spgemm
racecheck:test_gpu_ptap racecheck:test_gpu_tc synccheck:test_gpu_spgemm synccheck:test_gpu_ptap synccheck:test_gpu_tc
memcheck:test_misuse synccheck:test_misuse
memcheck:test_gpu_csr_device racecheck:test_gpu_csr_device synccheck:test_gpu_csr_device
memcheck:test_gpu_convert:TILERAP_CONVERT=sort racecheck:test_gpu_convert:TILERAP_CONVERT=sort
memcheck:test_gpu_convert:TILERAP_CONVERT=merge
memcheck:test_gpu_spgemm:TILERAP_MASKS_LANES=8 memcheck:test_gpu_ptap:TILERAP_PTAP=first
memcheck:test_gpu_ptap:TILERAP_PTAP=scatter memcheck:test_gpu_ptap:TILERAP_PTAP_KERNEL=scatter
memcheck:test_gpu_ptap:TILERAP_PTAP_KERNEL=rows,TILERAP_ROWS_GROUP=1
memcheck:test_gpu_ptap:TILERAP_PTAP_KERNEL=rows,TILERAP_ROWS_GROUP=8
racecheck:test_gpu_ptap:TILERAP_PTAP_KERNEL=rows,TILERAP_ROWS_GROUP=1
racecheck:test_gpu_ptap:TILERAP_PTAP_KERNEL=rows,TILERAP_ROWS_GROUP=8
memcheck:test_gpu_spgemm:TILERAP_STEP1_SORT=compact memcheck:test_gpu_ptap:TILERAP_STEP1_SORT=compact
racecheck:test_gpu_spgemm:TILERAP_STEP1_SORT=compact racecheck:test_gpu_ptap:TILERAP_STEP1_SORT=compact
memcheck:test_irregular memcheck:test_gpu_ptap:TILERAP_PATH=csr memcheck:test_gpu_spgemm:TILERAP_PATH=csr
racecheck:test_irregular:TILERAP_PATH=csr synccheck:test_irregular:TILERAP_PATH=csr
racecheck:test_gpu_ptap:TILERAP_PATH=csr
memcheck:test_gpu_spgemm:TILERAP_PATH=csr,TILERAP_CSR_RECORD_MACS=1e300
memcheck:test_gpu_ptap:TILERAP_PATH=csr,TILERAP_CSR_RECORD_MACS=1e300
synccheck:test_gpu_ptap:TILERAP_PATH=csr,TILERAP_CSR_RECORD_MACS=1e300
memcheck:test_irregular:TILERAP_CSR_RECORD_MACS=0 racecheck:test_irregular:TILERAP_CSR_RECORD_MACS=0
synccheck:test_irregular:TILERAP_CSR_RECORD_MACS=0 racecheck:test_gpu_csr_device:TILERAP_CSR_RECORD_MACS=0
memcheck:test_gpu_csr_device:TILERAP_CSR_RECORD_MACS=0
memcheck:test_csr_graph racecheck:test_csr_graph synccheck:test_csr_graph"
# SANITIZE_ONLY=REGEX keeps the runs whose TOOL:PROGRAM[:SETTINGS] matches
# (the whole list takes longer than one device call allows)
[ -z "${SANITIZE_ONLY:-}" ] || runs=$(for r in $runs; do echo "$r"; done | grep -E "$SANITIZE_ONLY")
# check-gpu without a GPU would only skip: say so instead
if "$B/test/test_gpu_errors" 2>/dev/null | grep -q '^1\.\.0 # SKIP'; then
  echo "Bail out! no GPU visible (make check-gpu needs one; make check runs the rest)"
  exit 1
fi
echo "1..$(echo $runs | wc -w)"
i=0
for r in $runs; do
  i=$((i + 1))
  tool=${r%%:*} rest=${r#*:}
  prog=${rest%%:*} set=
  [ "$prog" = "$rest" ] || set=$(echo "${rest#*:}" | tr , ' ')
  label="$tool $prog --quick${set:+ with $set}"
  if [ -z "$san" ]; then
    echo "ok $i - $label # SKIP compute-sanitizer not found"
    continue
  fi
  log=$B/test/gpu_sanitize.$i.log
  # shellcheck disable=SC2086
  env $set "$san" --tool "$tool" --error-exitcode 9 "$B/test/$prog" --quick >"$log" 2>&1
  rc=$?
  summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1 | sed 's/^=* *//')
  if grep -q '^1\.\.0 # SKIP' "$log"; then
    echo "ok $i - $label # SKIP no GPU"
  elif [ $rc = 0 ]; then
    echo "ok $i - $label ($summary)"
  else
    echo "not ok $i - $label: exit $rc ($summary; see $log)"
  fi
done
