#!/bin/bash
# One call on the GPU machine: the GPU checks, the sanitizer runs and the
# benchmarks of the CUDA engine (BENCHMARKS.md section 1), from the
# binaries of a static build tree made on the CPU machine:
#
#   mkdir _gpu && cd _gpu && ../configure --without-petsc --without-hypre \
#       --disable-shared --enable-static && make && make check TESTS=
#   bench/gpu_session.sh _gpu STEP...
#
# or of any build tree shipped with bench/gpu_bundle.sh (BUILD_DIR
# /tmp/rt/bundle there).  TAR_TO=DIR: after each step the logs go to
# DIR/gpu_session.tgz too (a device call returns a few files of $OUT).
#
# steps (in the order given):
# tests     the GPU set of `make check-gpu` plus the core tests with the
#           CUDA engine chosen automatically (TAP counts per program)
# irregular bench/irregular.sh full: the irregular set (BENCHMARKS.md section 9)
# dcsr      the same hierarchies on device CSR operands, and the classical
#           prolongators' (BENCHMARKS.md section 9b; dcsr_sa.log, dcsr_cl.log)
# paths     test/gpu_paths.sh: the GPU tests with each large-product path
#           forced on small products (as make check-gpu)
# sanitize  test/gpu_sanitize.sh: compute-sanitizer on --quick runs (as make
#           check-gpu)
# small     galerkin-bench-gpu on coarse-level sized problems, this build
#           and $BASE_BENCH (an older commit's galerkin-bench-gpu), alternating
# hier      the same on the five model hierarchies
# bench     galerkin-bench-gpu --reps 7 on the five model hierarchies
# phases    the same with --phases
# trace     TILERAP_TRACE host marks of plan creation on two levels
# dcsrab    the dcsr sets with and without $AB_ENV, or this build and
#           $BASE_BENCH, --reps 3, alternating $AB_ROUNDS (2) times
#           (dcsrab.log; AB_SA, AB_CL: other cases for the two sets, "-"
#           none; bench/spread.py --levels compares them level by level)
# envab     this build with and without the environment setting $AB_ENV
#           (e.g. AB_ENV=TILERAP_ROWS_MAX=0), alternating twice
# convert   convert-bench-gpu -n 100 (BENCHMARKS.md section 4): 1 and 16 host
#           threads, and the device path without pinned staging
# tc        galerkin-bench-gpu --tc sweep on dense-tile and model cases (section 5)
# spgemm    spgemm-bench A*A and A*A^T on model grids and the irregular set (section 8)
# petsc     PETSc GAMG, examples/poisson aij against seqtile at 100^3 (section 2)
# hypre     BoomerAMG, examples/poisson-boomeramg with and without the hook (section 3)
# precision GAMG iterations with every tile pair on tensor cores in each
#           precision (section 5)
#           (petsc, hypre and precision take poisson / poisson-boomeramg from
#           PATH: a runtime packed with ../shared/device/pack-runtime)
# hypreranks  a build against a CUDA hypre (3.x): test/hypre_device and
#           test/hypre_resetup on 1 and 2 ranks (RANK_TESTS=0: not), then
#           bench/hypre-device-bench ($HYPRE_CASES) on 1 and 2 ranks, one GPU
#           per rank, alternating $RANK_ROUNDS (3) times (ranks_NP_ROUND.log),
#           then with RESETUP_N=N hypre-resetup-bench --n N heat picard on 1
#           and 2 ranks (resetup_NP.log; BENCHMARKS.md section 3d)
# tables    bench irregular tc convert spgemm petsc hypre: one run of every table
# ncu       kernel durations of galerkin-bench-gpu --reps 1 on $NCU_CASES (ncu.csv)
# ncuab     the same, tilerap's kernels only, this build and $BASE_BENCH
#           (ncu_new.csv, ncu_base.csv)
# Logs go to $OUT (or /tmp/gpu_session); the last lines are a summary.
set -u
B=$(cd "${1:?build tree}" && pwd)
shift
out=${OUT:-/tmp/gpu_session}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }

# TAP program: "name: N ok, M not ok, exit E"
tap() {
  local label=$1
  shift
  local log=$out/tap.tmp
  "$@" >"$log" 2>&1
  local rc=$?
  { echo "=== $label"; cat "$log"; } >>"$out/tests.log"
  local ok nok
  ok=$(grep -c '^ok ' "$log")
  nok=$(grep -c '^not ok ' "$log")
  note "$label: $ok ok, $nok not ok, exit $rc"
  [ "$nok" = 0 ] || grep '^not ok' "$log" | head -5 | tee -a "$summary"
  rm -f "$log"
}

san() {
  local tool=$1
  shift
  local log=$out/san.tmp
  compute-sanitizer --tool "$tool" --error-exitcode 9 "$@" >"$log" 2>&1
  local rc=$?
  note "compute-sanitizer $tool $(basename "$1") $2: exit $rc | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
  { echo "=== $tool $*"; head -c 200000 "$log"; } >>"$out/sanitize.log"
  rm -f "$log"
}

# one galerkin-bench-gpu run: log LOG.log, summary lines prefixed LABEL
bench_run() {
  local log=$1 label=$2 cases=$3
  shift 3
  "$@" --reps 7 $cases >"$out/run.tmp" 2>&1 || note "$label: exit $?"
  { echo "== $label"; cat "$out/run.tmp"; } >>"$out/$log.log"
  grep -E '^p[23]d.* all |tilerap [0-9]+:' "$out/run.tmp" | sed "s/^/$label: /" | tee -a "$summary"
  rm -f "$out/run.tmp"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/# device: /' | tee -a "$summary"
steps=()
for what in "$@"; do
  if [ "$what" = tables ]; then steps+=(bench irregular tc convert spgemm petsc hypre); else steps+=("$what"); fi
done
for what in "${steps[@]}"; do
  t0=$(date +%s)
  case $what in
  tests)
    for t in test_gpu_spgemm test_gpu_ptap test_gpu_tc test_gpu_errors test_gpu_order test_gpu_convert test_atb \
      test_spgemm test_ptap test_tile_format test_errors test_misuse test_irregular test_gpu_csr_device test_csr_graph \
      test_csr_plan; do
      tap "$t" "$B/test/$t"
    done
    ;;
  paths)
    tap "forced paths (test/gpu_paths.sh)" sh "$(dirname "$0")/../test/gpu_paths.sh" "$B"
    ;;
  irregular)
    sh "$(dirname "$0")/irregular.sh" "$B" full --reps 5 >"$out/irregular.log" 2>&1 || note "irregular: exit $?"
    grep ' all ' "$out/irregular.log" | sed 's/^/irregular: /' | tee -a "$summary"
    ;;
  dcsr)
    sh "$(dirname "$0")/irregular.sh" "$B" full --device-csr --reps 5 >"$out/dcsr_sa.log" 2>&1 || note "dcsr: exit $?"
    BENCH_PROLONGATOR=classical "$B/bench/galerkin-bench-gpu" --device-csr --reps 5 mesh2d:500000 mesh2d:500000:sfc \
      mesh3d:150000 mesh3d:150000:sfc >"$out/dcsr_cl.log" 2>&1 || note "dcsr classical: exit $?"
    grep -h ' all ' "$out/dcsr_sa.log" "$out/dcsr_cl.log" | sed 's/^/dcsr: /' | tee -a "$summary"
    ;;
  sanitize)
    tap "sanitizers (test/gpu_sanitize.sh)" sh "$(dirname "$0")/../test/gpu_sanitize.sh" "$B"
    ;;
  small | hier)
    # new against $BASE_BENCH (a galerkin-bench-gpu of an older commit), alternating twice
    if [ $what = small ]; then cases="p3d7:8 p2d5:23 p3d7:12 p3d7:34 p2d5:342"; else cases=; fi
    for i in 1 2; do
      bench_run "$what" "$what new" "$cases" "$B/bench/galerkin-bench-gpu"
      [ -z "${BASE_BENCH:-}" ] || bench_run "$what" "$what base" "$cases" "$BASE_BENCH"
    done
    ;;
  hypreranks)
    mpx=${MPIEXEC:-mpiexec.openmpi}
    # Open MPI binds each of two ranks to one core by default, and the
    # OpenMP threads with it: the hook's host work (the several-rank
    # re-setup record) then ran 2.4x slower
    bind=${MPI_BIND---bind-to none}
    for np in 1 2; do
      [ "${RANK_TESTS:-1}" = 0 ] && break
      for t in hypre_device hypre_resetup; do
        tap "$t on $np ranks" "$mpx" --oversubscribe -n $np "$B/test/$t"
      done
    done
    cases=${HYPRE_CASES:-p3d7:101 p3d7:200 p3d27:101 mesh3d:150000 elast:192000 random:200000}
    for i in $(seq "${RANK_ROUNDS:-3}"); do
      for np in 1 2; do
        # shellcheck disable=SC2086
        OMP_NUM_THREADS=8 "$mpx" --oversubscribe $bind -n $np "$B/bench/hypre-device-bench" --reps 5 $cases \
          >"$out/ranks_${np}_$i.log" 2>&1 || note "hypreranks $np ranks, round $i: exit $?"
        grep -E '^(rap|amg) ' "$out/ranks_${np}_$i.log" | sed "s/^/ranks $np round $i: /" >>"$summary"
        [ -z "${TAR_TO:-}" ] || tar czf "$TAR_TO/gpu_session.tgz" -C "$out" . 2>/dev/null
      done
    done
    for np in 1 2; do
      [ -n "${RESETUP_N:-}" ] || break
      OMP_NUM_THREADS=8 "$mpx" --oversubscribe $bind -n $np "$B/bench/hypre-resetup-bench" --n "$RESETUP_N" --steps 10 heat \
        picard >"$out/resetup_$np.log" 2>&1 || note "hypreranks resetup $np ranks: exit $?"
      [ -z "${TAR_TO:-}" ] || tar czf "$TAR_TO/gpu_session.tgz" -C "$out" . 2>/dev/null
    done
    ;;
  envab)
    # this build with and without $AB_ENV (e.g. TILERAP_ROWS_MAX=0), alternating twice, hierarchies and $AB_CASES
    for i in 1 2; do
      bench_run envab "[default]" "${AB_CASES:-}" "$B/bench/galerkin-bench-gpu"
      bench_run envab "[${AB_ENV:?envab needs AB_ENV=VAR=value}]" "${AB_CASES:-}" env "$AB_ENV" "$B/bench/galerkin-bench-gpu"
    done
    ;;
  dcsrab)
    # the dcsr sets (smoothed aggregation, then classical), --reps 3, this build with and without $AB_ENV
    # (a temporary experiment switch), or this build and $BASE_BENCH (an older commit's galerkin-bench-gpu),
    # alternating ${AB_ROUNDS:-2} times: dcsrab.log (and dcsrab_new.log, dcsrab_base.log for
    # bench/spread.py --levels), the 'all' lines in the summary
    sa="mesh2d:500000 mesh2d:500000:sfc mesh3d:150000 mesh3d:150000:sfc random:200000 denserow:490000 elast:192000"
    sa=${AB_SA:-$sa s125:110000 powerlaw:100000}
    cl=${AB_CL:-mesh2d:500000 mesh2d:500000:sfc mesh3d:150000 mesh3d:150000:sfc}
    alt=${AB_ENV:-}
    [ -n "$alt" ] || { [ -n "${BASE_BENCH:-}" ] && alt=base; } || { note "dcsrab needs AB_ENV=VAR=value or BASE_BENCH"; continue; }
    for i in $(seq "${AB_ROUNDS:-2}"); do
      for v in default "$alt"; do
        e= g=$B/bench/galerkin-bench-gpu side=new
        case $v in default) ;; base) g=$BASE_BENCH side=base ;; *) e=$v ;; esac
        for set in sa cl; do
          if [ $set = sa ]; then c=$sa p=sa; else c=$cl p=classical; fi
          [ "$c" = - ] && continue
          env $e BENCH_PROLONGATOR=$p "$g" --device-csr --reps 3 $c >"$out/run.tmp" 2>&1 ||
            note "dcsrab $v $set: exit $?"
          { echo "== round $i, $v, $set"; cat "$out/run.tmp"; } >>"$out/dcsrab.log"
          [ "$alt" = base ] && cat "$out/run.tmp" >>"$out/dcsrab_$side.log"
          grep ' all ' "$out/run.tmp" | sed "s/^/dcsrab $i [$v] $set: /" | tee -a "$summary"
        done
        [ -z "${TAR_TO:-}" ] || tar czf "$TAR_TO/gpu_session.tgz" -C "$out" . 2>/dev/null
      done
    done
    rm -f "$out/run.tmp"
    ;;
  ncu)
    # kernel durations (Nsight Compute) of one first-time product per case in $NCU_CASES
    for c in ${NCU_CASES:-p3d7:8}; do
      ncu --clock-control none --metrics gpu__time_duration.sum --csv "$B/bench/galerkin-bench-gpu" --reps 1 $c \
        >>"$out/ncu.csv" 2>>"$out/ncu.err"
      note "ncu $c: exit $?"
    done
    ;;
  ncuab)
    # the same for this build and $BASE_BENCH, tilerap's own kernels only (names k_*)
    for c in ${NCU_CASES:-p3d7:101}; do
      for mode in new base; do
        bin="$B/bench/galerkin-bench-gpu"
        [ $mode = base ] && bin=${BASE_BENCH:-}
        [ -n "$bin" ] || continue
        ncu --clock-control none -k regex:'^k_' --metrics gpu__time_duration.sum --csv "$bin" --reps 1 $c \
          >"$out/ncu_${mode}.csv" 2>>"$out/ncu.err"
        note "ncu $mode $c: exit $?"
      done
    done
    ;;
  trace)
    # host marks inside plan creation (TILERAP_TRACE): last repetitions of a small level and a mid-size one
    for c in p3d7:8 p2d5:342; do
      TILERAP_TRACE=1 "$B/bench/galerkin-bench-gpu" --reps 3 $c >>"$out/trace.log" 2>&1
      grep 'tilerap trace' "$out/trace.log" | tail -4 | sed "s/^/$c /" | tee -a "$summary"
    done
    ;;
  convert)
    c=$B/bench/convert-bench-gpu
    for t in 1 16; do
      echo "== OMP_NUM_THREADS=$t" >>"$out/convert.log"
      OMP_NUM_THREADS=$t "$c" -n 100 -reps 7 >>"$out/convert.log" 2>&1 || note "convert $t: exit $?"
    done
    echo "== TILERAP_PINNED=0 OMP_NUM_THREADS=16" >>"$out/convert.log"
    TILERAP_PINNED=0 OMP_NUM_THREADS=16 "$c" -n 100 -reps 7 >>"$out/convert.log" 2>&1 || note "convert pinned 0: exit $?"
    note "convert: $(grep -c . "$out/convert.log") lines"
    ;;
  tc)
    "$B/bench/galerkin-bench-gpu" --reps 7 --tc 64,128,256,512,1024,2048 blk:4096 blk:8192:0.01 blk:2048:0.1 \
      p3d27:64 p3d7:100 p2d9:512 wide:48 >"$out/tc.log" 2>&1 || note "tc: exit $?"
    note "tc: $(grep -c ' ok$' "$out/tc.log") levels ok, $(grep -c FAIL "$out/tc.log") FAIL"
    ;;
  spgemm)
    "$B/bench/spgemm-bench" --gen p3d7:101 --gen p3d27:64 --gen p2d5:1024 --gen mesh2d:500000 --gen mesh3d:150000 \
      --gen powerlaw:30000 --gen random:200000 >"$out/spgemm.log" 2>&1 || note "spgemm: exit $?"
    grep '^# .* products' "$out/spgemm.log" | sed 's/^/spgemm: /' | tee -a "$summary"
    ;;
  petsc)
    for mt in aij seqtile; do
      poisson -dim 3 -n 100 -stencil 7 -dm_mat_type $mt -resetups 2 >>"$out/petsc.log" 2>&1 || note "petsc $mt: exit $?"
    done
    grep -E 'PCSetUp' "$out/petsc.log" | tail -6 | sed 's/^/petsc: /' | tee -a "$summary"
    ;;
  hypre)
    for h in 0 1; do
      TILERAP_HYPRE_VERBOSE=1 poisson-boomeramg -dim 3 -n 100 -tilerap $h -repeat 5 >>"$out/hypre.log" 2>&1 ||
        note "hypre $h: exit $?"
    done
    grep -E 'Galerkin products|iterations' "$out/hypre.log" | tail -4 | sed 's/^/hypre: /' | tee -a "$summary"
    ;;
  precision)
    for prob in "-n 100 -stencil 7" "-n 64 -stencil 27" "-n 64 -stencil 7 -wide 20"; do
      # shellcheck disable=SC2086
      poisson -dim 3 $prob -dm_mat_type aij >>"$out/precision.log" 2>&1
      for p in fp64 tf32 bf16 fp16; do
        echo "== $prob $p" >>"$out/precision.log"
        # shellcheck disable=SC2086
        poisson -dim 3 $prob -dm_mat_type seqtile -mat_tile_engine cuda -mat_tile_tc_threshold 0 -mat_tile_precision $p \
          >>"$out/precision.log" 2>&1 || note "precision $prob $p: exit $?"
      done
    done
    note "precision: $(grep -c 'iterations' "$out/precision.log") solves"
    ;;
  bench | phases)
    flag=
    [ "$what" = phases ] && flag=--phases
    "$B/bench/galerkin-bench-gpu" --reps 7 $flag >"$out/bench_$what.log" 2>&1 || note "$what: exit $?"
    grep -E ' all |tilerap [0-9]+:' "$out/bench_$what.log" | tee -a "$summary"
    ;;
  *) note "unknown step $what" ;;
  esac
  note "# step $what: $(($(date +%s) - t0)) s"
  [ -z "${TAR_TO:-}" ] || tar czf "$TAR_TO/gpu_session.tgz" -C "$(dirname "$out")" "$(basename "$out")"
done
