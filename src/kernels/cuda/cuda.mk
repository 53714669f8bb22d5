# CUDA engine (included from Makefile.am).  .cu files become libtool
# objects through build-aux/nvcc-lt.sh.
if HAVE_CUDA
cuda_sources = \
	src/kernels/cuda/spgemm_cuda.cuh \
	src/kernels/cuda/tile_lowprec.h \
	src/kernels/cuda/tile_mma_fragments.cuh \
	src/kernels/cuda/tile_cuda_memory.cu \
	src/kernels/cuda/tile_cuda_slots.cu \
	src/kernels/cuda/tile_cuda_staging.cu \
	src/kernels/cuda/tile_cuda_transpose.cu \
	src/kernels/cuda/tile_cuda_from_csr.cu \
	src/kernels/cuda/tile_cuda_to_csr.cu \
	src/kernels/cuda/csr_cuda_fingerprint.cu \
	src/kernels/cuda/tile_cuda_structure.cu \
	src/kernels/cuda/ptap_cuda_encounter_order.cu \
	src/kernels/cuda/ptap_cuda_scatter.cu \
	src/kernels/cuda/ptap_cuda_scatter_ap.cu \
	src/kernels/cuda/ptap_cuda_rows.cu \
	src/kernels/cuda/spgemm_cuda_step1_structure.cu \
	src/kernels/cuda/spgemm_cuda_step1_rows.cu \
	src/kernels/cuda/spgemm_cuda_step1_compact.cu \
	src/kernels/cuda/spgemm_cuda_step2_masks.cu \
	src/kernels/cuda/spgemm_cuda_step3_numeric.cu \
	src/kernels/cuda/spgemm_cuda_step3_pairs.cu \
	src/kernels/cuda/spgemm_cuda_lowprec.cu \
	src/kernels/cuda/spgemm_cuda_plan.cu \
	src/kernels/cuda/csr_cuda_view.cu \
	src/kernels/cuda/csr_cuda_product.cu \
	src/kernels/cuda/csr_cuda_device_operands.cu \
	src/kernels/cuda/graph_cuda.cu
libtilerap_la_SOURCES += $(cuda_sources)
libtilerap_la_LIBADD += $(CUDA_LIBS)
NVCC_COMPILE = $(NVCC) $(NVCCFLAGS) -Xcompiler -fvisibility=hidden -std=c++17 $(DEFS) $(DEFAULT_INCLUDES) -I$(top_srcdir)/include -I$(top_builddir) $(tr_private_includes) $(CUDA_CPPFLAGS)
SUFFIXES = .cu
.cu.lo:
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/build-aux/nvcc-lt.sh $@ $(NVCC_COMPILE) -c $<
# The suffix rule has no dependency tracking: every CUDA object depends on
# every header a .cu file includes, so that a changed struct layout can
# never leave a stale object behind in an incremental build.
cuda_headers = src/kernels/cuda/spgemm_cuda.cuh src/kernels/format/csr_fingerprint.h src/kernels/format/graph_rows.h src/kernels/format/tile_structure.h src/kernels/cuda/tile_lowprec.h src/kernels/cuda/tile_mma_fragments.cuh src/kernels/format/tile_internal.h \
	src/kernels/cuda/engine_cuda.h include/tilerap.h $(top_builddir)/tilerap_config.h
src/kernels/cuda/tile_cuda_memory.lo src/kernels/cuda/tile_cuda_slots.lo src/kernels/cuda/tile_cuda_staging.lo src/kernels/cuda/tile_cuda_transpose.lo src/kernels/cuda/tile_cuda_from_csr.lo \
src/kernels/cuda/tile_cuda_to_csr.lo src/kernels/cuda/csr_cuda_fingerprint.lo src/kernels/cuda/tile_cuda_structure.lo src/kernels/cuda/ptap_cuda_encounter_order.lo src/kernels/cuda/ptap_cuda_scatter.lo src/kernels/cuda/ptap_cuda_scatter_ap.lo src/kernels/cuda/ptap_cuda_rows.lo src/kernels/cuda/spgemm_cuda_step1_structure.lo src/kernels/cuda/spgemm_cuda_step1_rows.lo src/kernels/cuda/spgemm_cuda_step1_compact.lo src/kernels/cuda/spgemm_cuda_step2_masks.lo \
src/kernels/cuda/spgemm_cuda_step3_numeric.lo src/kernels/cuda/spgemm_cuda_step3_pairs.lo src/kernels/cuda/spgemm_cuda_lowprec.lo src/kernels/cuda/spgemm_cuda_plan.lo \
src/kernels/cuda/csr_cuda_view.lo src/kernels/cuda/csr_cuda_product.lo src/kernels/cuda/csr_cuda_device_operands.lo \
src/kernels/cuda/graph_cuda.lo: $(cuda_headers)

# GPU tests: the CUDA engine against the CPU engine and the Gustavson
# reference.  Part of `make check` (they skip without a GPU).  `make
# check-gpu`, on a GPU machine: the whole suite (the core, PETSc and hypre
# tests take the CUDA engine there), then compute-sanitizer's memcheck,
# racecheck and synccheck on the quick GPU sets (test/gpu_sanitize.sh).
gpu_tests = test/test_gpu_spgemm test/test_gpu_ptap test/test_gpu_errors test/test_gpu_convert test/test_gpu_tc test/test_gpu_order \
	test/test_gpu_csr_device
check_PROGRAMS += $(gpu_tests)
TESTS += $(gpu_tests)
test_test_gpu_spgemm_SOURCES = test/test_gpu_spgemm.c test/test_gpu_common.h
test_test_gpu_spgemm_LDADD = $(test_ldadd)
test_test_gpu_ptap_SOURCES = test/test_gpu_ptap.c test/test_gpu_common.h
test_test_gpu_ptap_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
test_test_gpu_ptap_LDADD = test/libtrref.la libtilerap.la $(CUDA_LIBS)
test_test_gpu_convert_SOURCES = test/test_gpu_convert.c test/test_gpu_common.h
test_test_gpu_convert_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
test_test_gpu_convert_LDADD = test/libtrref.la libtilerap.la $(CUDA_LIBS)
test_test_gpu_errors_SOURCES = test/test_gpu_errors.c test/test_gpu_common.h

test_test_gpu_errors_LDADD = $(test_ldadd)
test_test_gpu_order_SOURCES = test/test_gpu_order.c test/test_gpu_common.h
test_test_gpu_order_LDADD = $(test_ldadd)
test_test_gpu_tc_SOURCES = test/test_gpu_tc.c test/test_gpu_common.h
test_test_gpu_tc_LDADD = $(test_ldadd)
test_test_gpu_csr_device_SOURCES = test/test_gpu_csr_device.c test/test_gpu_common.h
test_test_gpu_csr_device_LDADD = $(test_ldadd)
check-gpu:
	$(MAKE) $(AM_MAKEFLAGS) check
	@$(SHELL) $(srcdir)/test/gpu_sanitize.sh $(builddir) >test/gpu_sanitize.log; rc=$$?; cat test/gpu_sanitize.log; \
	  test $$rc = 0 && ! grep -qE '^(not ok|Bail out!)' test/gpu_sanitize.log
	@$(SHELL) $(srcdir)/test/gpu_paths.sh $(builddir) >test/gpu_paths.log; rc=$$?; cat test/gpu_paths.log; \
	  test $$rc = 0 && ! grep -qE '^(not ok|Bail out!)' test/gpu_paths.log

# GPU benchmark: tilerap (first time and numeric re-run) against cuSPARSE
# SpGEMM on the model hierarchies, per level, CUDA events.
noinst_PROGRAMS += bench/galerkin-bench-gpu bench/convert-bench-gpu
bench_convert_bench_gpu_SOURCES = bench/convert_bench_gpu.c bench/bench_common.c bench/bench_common.h
bench_convert_bench_gpu_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
bench_convert_bench_gpu_LDADD = test/libtrref.la libtilerap.la $(CUDA_LIBS)
bench_galerkin_bench_gpu_SOURCES = bench/galerkin_bench_gpu.c bench/bench_cusparse.c bench/bench_cusparse.h \
	bench/bench_common.c bench/bench_common.h
bench_galerkin_bench_gpu_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
bench_galerkin_bench_gpu_CFLAGS = $(AM_CFLAGS) -Wno-deprecated-declarations
bench_galerkin_bench_gpu_LDADD = test/libtrref.la libtilerap.la $(CUSPARSE_LIBS) $(CUDA_LIBS)
bench_spgemm_bench_SOURCES += bench/bench_cusparse.c bench/bench_cusparse.h
else
check-gpu:
	@echo "check-gpu: tilerap was configured without CUDA"
endif
.PHONY: check-gpu
