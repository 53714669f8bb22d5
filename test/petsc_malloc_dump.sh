#!/bin/sh
# TAP test: the product test under PETSc's -malloc_debug -malloc_dump must
# pass and leave no PETSc allocation behind.
out=test/petsc_malloc_dump.out
if [ ! -x ./test/petsc_seqtile_product ]; then echo "1..0 # SKIP test/petsc_seqtile_product not built"; exit 0; fi
./test/petsc_seqtile_product -malloc_debug -malloc_dump > "$out" 2>&1
rc=$?
echo "1..3"
if [ $rc -eq 0 ]; then echo "ok 1 - petsc_seqtile_product exits 0 under -malloc_debug"; else echo "not ok 1 - petsc_seqtile_product exit status $rc (see $out)"; fi
if grep -q "^ok" "$out" && ! grep -q "^not ok" "$out"; then echo "ok 2 - all its checks pass under -malloc_debug"; else echo "not ok 2 - failed checks under -malloc_debug (see $out)"; fi
leaks=$(grep -c '^\[ *[0-9]*\] *[0-9][0-9]* bytes' "$out")
if [ "$leaks" -eq 0 ]; then echo "ok 3 - -malloc_dump reports nothing left allocated"; else echo "not ok 3 - -malloc_dump reports $leaks allocations left (see $out)"; fi
