#!/bin/sh
# Ships a build tree's GPU programs to the GPU machine: the test and bench
# programs of BUILD_DIR with the libraries they load (Debian's PETSc, hypre
# and Open MPI among them, through ../shared/device/pack-runtime), less the
# CUDA toolkit's own libraries, which the GPU machine has in
# /usr/local/cuda/lib64 (with them the bundle passes the device call's 64 MiB
# limit), and laid out as a build tree for bench/gpu_session.sh:
#
#   bench/gpu_bundle.sh _build .rt          here (.rt ignored by git), then carry .rt
#   mkdir -p /tmp/rt && tar xJf .rt/runtime.tar.xz -C /tmp/rt && . /tmp/rt/bundle/env.sh
#   bench/gpu_session.sh /tmp/rt/bundle tests sanitize dcsr      there
# EXTRA_PROGS="PROG ..." ships more programs (below).
set -eu
B=${1:?build tree}
out=${2:?output folder}
top=$(cd "$(dirname "$0")/.." && pwd)
pack=${PACK_RUNTIME:-$top/../shared/device/pack-runtime}
[ -x "$pack" ] || [ -f "$pack" ] || { echo "gpu_bundle: $pack not found (PACK_RUNTIME=...)" >&2; exit 2; }
progs=
for p in "$B"/test/test_* "$B"/test/hypre_* "$B"/test/petsc_* "$B"/bench/*-bench* "$B"/examples/poisson/poisson*; do
  case $p in *.o | *.log | *.trs | *.sh | *.c) continue ;; esac
  [ -x "$p" ] && [ -f "$p" ] && progs="$progs $p"
done
# EXTRA_PROGS="prog ...": more programs (PETSc's tutorials for bench/petsc_gamg.sh: TUTORIALS=/tmp/rt/bundle/bin)
progs="$progs ${EXTRA_PROGS:-}"
[ -n "$progs" ] || { echo "gpu_bundle: no programs in $B (make check TESTS= builds the tests)" >&2; exit 2; }
# xz on every core, a lighter level than tar's default: the bundle is
# unpacked once (about 30 MB either way)
XZ_OPT=${XZ_OPT:--T0 -3}
export XZ_OPT
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
LD_LIBRARY_PATH="$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" sh "$pack" "$tmp/rt" $progs >/dev/null
mkdir "$tmp/x"
tar xJf "$tmp/rt/runtime.tar.xz" -C "$tmp/x"
b=$tmp/x/bundle
rm -f "$b"/lib/libcu* "$b"/lib/libnv*
sed -i 's#^export LD_LIBRARY_PATH=/tmp/rt/bundle/lib:#export LD_LIBRARY_PATH=/tmp/rt/bundle/lib:/usr/local/cuda/lib64:#' "$b/env.sh"
mkdir -p "$b/test" "$b/bench"
for p in $progs; do
  n=$(basename "$p")
  case $p in */test/*) d=test ;; *) d=bench ;; esac
  ln -s ../bin/"$n" "$b/$d/$n"
done
mkdir -p "$out"
tar cJf "$out/runtime.tar.xz" -C "$tmp/x" bundle
echo "gpu_bundle: $out/runtime.tar.xz ($(du -m "$out/runtime.tar.xz" | cut -f1) MB, $(echo $progs | wc -w) programs)"
