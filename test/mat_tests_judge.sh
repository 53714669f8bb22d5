# Sourced by test/petsc_mat_tests.sh and test/gpu_petsc_mat_tests.sh: the
# verdict on one pair of runs of a PETSc test program (the caller defines
# ok and bad, TAP lines).
#   judge NAME NP TARGS REFNAME RC_REF RC_TILE REF_OUT TILE_OUT LOGVIEW EXPECT BASE
# The pair agrees when both exited 0 and REF_OUT and TILE_OUT are equal;
# against PETSc's expected output file both go through squeeze first.
# EXPECT tile: -log_view (LOGVIEW) shows at least one tile plan, aij: none
# (BASE names who did the products then).
judge() {
  j_name=$1; j_np=$2; j_targs=$3; j_what=$4; j_rcr=$5; j_rct=$6; j_ref=$7; j_tile=$8; j_lv=$9; shift 9
  j_expect=$1; j_base=$2
  if [ "$j_rcr" -eq 0 ] && [ "$j_rct" -eq 0 ] && cmp -s "$j_ref" "$j_tile"; then
    ok "$j_name ($j_np rank(s), $j_targs): same output as $j_what"
  else
    bad "$j_name ($j_np rank(s), $j_targs): exit $j_what $j_rcr, tile $j_rct; diff $j_ref $j_tile:"
    diff "$j_ref" "$j_tile" | head -15 | sed 's/^/#   /'
  fi
  j_p=$(awk '$1 == "TileRAPPlan" { print $2 }' "$j_lv" 2>/dev/null | head -1)
  j_p=${j_p:-0}
  if [ "$j_expect" = tile ]; then
    if [ "$j_p" -gt 0 ]; then ok "$j_name: the tile engine planned $j_p product(s)"; else bad "$j_name: the tile engine did not run (TileRAPPlan $j_p)"; fi
  elif [ "$j_p" -eq 0 ]; then
    ok "$j_name: no tile product, as expected ($j_base)"
  else
    bad "$j_name: expected no tile product, TileRAPPlan $j_p"
  fi
}

# A run's output as PETSc's harness compares it with an expected file: the
# test's own filter (lines naming types dropped) and blanks squeezed
# (petscdiff ignores them; MatView's padding differs between releases).
squeeze() { grep -ve type -ve "Mat Object" "$1" | sed -e 's/[[:space:]][[:space:]]*/ /g; s/^ //; s/ $//'; }
