#!/bin/sh
# spgemm-bench (TAP): A*A and A*A^T on the Matrix Market files of test/data
# with the CPU engine -- its correctness verdict against the Gustavson
# reference and the reader's entry counts (symmetric halves mirrored,
# duplicates summed), not timings; clear errors, no crash, on files it does
# not support; --gen / --write-mtx round trip.
bin=${top_builddir:-.}/bench/spgemm-bench
data=${srcdir:-.}/test/data
WORK=test/spgemm_bench.d
mkdir -p "$WORK"
unset TILERAP_ENGINE
n=0; fail=0
tap() { # tap ok|fail "description" [log]
  n=$((n + 1))
  if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fail=1; fi
  if [ -n "$3" ] && [ "$1" != ok ]; then sed 's/^/# /' "$3" | tail -30; fi
}
quick="--engine cpu --reps 1 --warmup 0 --no-cusparse"

# ---------------------------------------------------------------- verdict on test/data
out=$WORK/data.out
"$bin" $quick "$data/sym_small.mtx" "$data/gen_rect.mtx" "$data/pattern_sq.mtx" >"$out" 2>&1
rc=$?
sed 's/^/# /' "$out"
if [ $rc -eq 0 ] && grep -q '^# 5 products: 5 right, 0 WRONG$' "$out"; then
  tap ok "spgemm-bench on test/data: 5 products right (exit 0)"
else
  tap fail "spgemm-bench on test/data (rc=$rc)" "$out"
fi
# row: matrix op m n nnzA nnzC ... check
row() { awk -v m="$1" -v o="$2" '$1 == m && $2 == o' "$out"; }
check_row() { # matrix op m n nnzA
  r=$(row "$1" "$2")
  set -- "$1" "$2" "$3" "$4" "$5" $r
  if [ "$8" = "$3" ] && [ "$9" = "$4" ] && [ "${10}" = "$5" ] && [ "$(echo "$r" | awk '{print $NF}')" = ok ]; then
    tap ok "$1 $2: $3 x $4, nnz(A) $5, ok"
  else
    tap fail "$1 $2: expected $3 x $4 with nnz(A) $5, got '$r'"
  fi
}
check_row sym_small AA 70 70 530    # 300 stored, 70 on the diagonal: 70 + 2*230
check_row sym_small AAt 70 70 530
check_row gen_rect AAt 45 60 240    # 241 lines, one duplicate summed
check_row pattern_sq AA 33 33 150
check_row pattern_sq AAt 33 33 150
if grep -q 'gen_rect: 45 x 60 is not square: A\*A skipped' "$out"; then
  tap ok "rectangular A: A*A skipped with a note"
else
  tap fail "rectangular A: A*A skipped with a note" "$out"
fi
# symmetric A: A*A and A*A^T are the same product
c1=$(row sym_small AA | awk '{print $6}'); c2=$(row sym_small AAt | awk '{print $6}')
if [ -n "$c1" ] && [ "$c1" = "$c2" ]; then tap ok "symmetric A: nnz(A*A) = nnz(A*A^T) = $c1"; else tap fail "symmetric A: nnz(A*A) $c1 vs nnz(A*A^T) $c2"; fi

# ---------------------------------------------------------------- unsupported / broken files
bad() { # name expected-stderr-phrase header-and-body
  f=$WORK/$1.mtx
  printf '%b' "$3" >"$f"
  "$bin" $quick "$f" >"$WORK/$1.out" 2>"$WORK/$1.err"
  rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$2" "$WORK/$1.err"; then
    tap ok "$1: refused (exit 2): $(head -n 1 "$WORK/$1.err")"
  else
    tap fail "$1: expected exit 2 and '$2' (rc=$rc)" "$WORK/$1.err"
  fi
}
bad array "unsupported Matrix Market format 'array'" '%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n'
bad complex "unsupported Matrix Market field 'complex'" '%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 0.5\n'
bad hermitian "unsupported Matrix Market symmetry 'hermitian'" '%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n1 1 1.0\n'
bad notmtx "not a Matrix Market file" 'hello\n'
bad truncated "3 entries, but the size line announces 4" '%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1\n2 2 1\n3 3 1\n'
bad toomany "more entries than the 1" '%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n2 2 1\n'
bad range "outside the 3 x 3 matrix" '%%MatrixMarket matrix coordinate real general\n3 3 1\n4 1 1\n'
bad zero "outside the 3 x 3 matrix" '%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1\n'
bad novalue "expected 'row column value'" '%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1\n'
bad junk "expected 'row column value'" '%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 2.0 x\n'
bad symrect "must be square" '%%MatrixMarket matrix coordinate real symmetric\n3 4 1\n1 1 1\n'
bad nosize "expected the size line" '%%MatrixMarket matrix coordinate real general\n3 x 1\n'
bad empty "empty file" ''
bad gzip "gzip-compressed" '\0037\0213\0010'
"$bin" $quick "$WORK/does-not-exist.mtx" >/dev/null 2>"$WORK/missing.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "No such file" "$WORK/missing.err"; then tap ok "missing file: exit 2"; else tap fail "missing file (rc=$rc)" "$WORK/missing.err"; fi
# one bad file among good ones: the good one is still measured
"$bin" $quick "$WORK/array.mtx" "$data/pattern_sq.mtx" >"$out" 2>/dev/null
rc=$?
if [ $rc -eq 2 ] && grep -q '^# 2 products: 2 right, 0 WRONG; some inputs not read$' "$out"; then
  tap ok "bad file among good ones: the others run, exit 2"
else
  tap fail "bad file among good ones (rc=$rc)" "$out"
fi
"$bin" --reps 0 "$data/pattern_sq.mtx" >/dev/null 2>"$WORK/usage.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "expected an integer" "$WORK/usage.err"; then tap ok "--reps 0 refused"; else tap fail "--reps 0 (rc=$rc)" "$WORK/usage.err"; fi

# ---------------------------------------------------------------- --gen, --write-mtx, skew-symmetric
"$bin" --gen p2d5:20 --write-mtx "$WORK/p2d5_20.mtx" >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && head -n 1 "$WORK/p2d5_20.mtx" | grep -q '^%%MatrixMarket matrix coordinate real general$' &&
   grep -q '^400 400 1920$' "$WORK/p2d5_20.mtx"; then
  tap ok "--gen p2d5:20 --write-mtx: 400 x 400, 1920 entries"
else
  tap fail "--gen p2d5:20 --write-mtx (rc=$rc)" "$out"
fi
"$bin" $quick --gen p2d5:20 "$WORK/p2d5_20.mtx" >"$out" 2>&1
rc=$?
g=$(awk '$1 == "p2d5:20" && $2 == "AA" {print $5, $6, $7}' "$out")
w=$(awk '$1 == "p2d5_20" && $2 == "AA" {print $5, $6, $7}' "$out")
if [ $rc -eq 0 ] && [ -n "$g" ] && [ "$g" = "$w" ] && grep -q '^# 4 products: 4 right' "$out"; then
  tap ok "written file and --gen give the same product ($g)"
else
  tap fail "written file vs --gen (rc=$rc, '$g' vs '$w')" "$out"
fi
printf '%%%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 2 -2\n' >"$WORK/skew.mtx"
"$bin" $quick "$WORK/skew.mtx" >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(awk '$1 == "skew" && $2 == "AA" {print $5, $6}' "$out")" = "4 5" ]; then
  tap ok "skew-symmetric file: mirrored with the sign, A*A right"
else
  tap fail "skew-symmetric file (rc=$rc)" "$out"
fi
"$bin" $quick --gen powerlaw:3000 --gen mesh2d:2000 --gen denserow:2000 >"$out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^# 6 products: 6 right, 0 WRONG$' "$out" &&
   [ -n "$(awk '$1 == "mesh2d:2000" && $2 == "AAt" && $NF == "ok"' "$out")" ]; then
  tap ok "--gen on the irregular set (power-law, mesh, dense row): 6 products right"
else
  tap fail "--gen on the irregular set (rc=$rc)" "$out"
fi
"$bin" $quick --gen mesh9d:100 >"$out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q 'expected p2d5:N' "$out"; then
  tap ok "--gen with an unknown matrix: exit 2 with a message"
else
  tap fail "--gen mesh9d:100 (rc=$rc)" "$out"
fi

# ---------------------------------------------------------------- CUDA engine request
"$bin" --engine cuda --ops aa --reps 1 --warmup 0 "$data/pattern_sq.mtx" >"$out" 2>"$WORK/cuda.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "engine cuda not available" "$WORK/cuda.err"; then
  tap ok "--engine cuda without a GPU: clear error"
elif [ $rc -eq 0 ] && grep -q '^# 1 products: 1 right' "$out"; then
  tap ok "--engine cuda on a GPU: right"
else
  tap fail "--engine cuda (rc=$rc)" "$WORK/cuda.err"
fi

echo "1..$n"
exit $fail
