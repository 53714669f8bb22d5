# hypre BoomerAMG hook libtilerap_hypre (included from Makefile.am).

# The multi-rank driver test/hypre_mpi.sh runs through the shell (.sh tests
# speak TAP, see Makefile.am).

if HAVE_HYPRE
lib_LTLIBRARIES += libtilerap_hypre.la
include_HEADERS += include/tilerap_hypre.h
libtilerap_hypre_la_SOURCES = \
	src/hypre/hook_internal.h \
	src/hypre/hook_state.c \
	src/hypre/local_blocks.c \
	src/hypre/galerkin_stages.h \
	src/hypre/galerkin.c \
	src/hypre/exchange.c \
	src/hypre/local_product.c \
	src/hypre/host_order_product.c \
	src/hypre/kept_operand.c \
	src/hypre/row_order.c \
	src/hypre/assembly.c \
	src/hypre/device_galerkin.c \
	src/hypre/level_recipe.h \
	src/hypre/level_recipe.c \
	src/hypre/resetup.c \
	src/hypre/interpose.c
libtilerap_hypre_la_CPPFLAGS = $(AM_CPPFLAGS) $(HYPRE_CPPFLAGS)
libtilerap_hypre_la_LIBADD = libtilerap.la $(HYPRE_LIBS) -ldl -lpthread
libtilerap_hypre_la_LDFLAGS = -version-info 0:0:0 -no-undefined

# libtilerap_hypre must precede -lHYPRE so that its definitions win.
hypre_ldadd = libtilerap_hypre.la libtilerap.la $(HYPRE_LIBS)

bin_PROGRAMS += examples/poisson/poisson-boomeramg
examples_poisson_poisson_boomeramg_SOURCES = examples/poisson/poisson_boomeramg.c
examples_poisson_poisson_boomeramg_CPPFLAGS = $(AM_CPPFLAGS) $(HYPRE_CPPFLAGS)
examples_poisson_poisson_boomeramg_LDADD = $(hypre_ldadd)

# CUDA builds of hypre: hypre's device RAP, cuSPARSE and tilerap side by side
noinst_PROGRAMS += bench/hypre-device-bench
bench_hypre_device_bench_SOURCES = bench/hypre_device_bench.c
bench_hypre_device_bench_CPPFLAGS = $(AM_CPPFLAGS) $(HYPRE_CPPFLAGS) -I$(top_srcdir)/test
bench_hypre_device_bench_LDADD = $(hypre_ldadd)

# BoomerAMG re-setup on sequences of matrices (time steps, Picard steps)
noinst_PROGRAMS += bench/hypre-resetup-bench
bench_hypre_resetup_bench_SOURCES = bench/hypre_resetup_bench.c
bench_hypre_resetup_bench_CPPFLAGS = $(AM_CPPFLAGS) $(HYPRE_CPPFLAGS)
bench_hypre_resetup_bench_LDADD = $(hypre_ldadd) -lm

hypre_tests = test/hypre_galerkin test/hypre_device test/hypre_resetup
check_PROGRAMS += $(hypre_tests)
test_hypre_galerkin_SOURCES = test/hypre_galerkin.c test/hypre_test_util.h test/hypre_tap.h test/tap.h
test_hypre_galerkin_CPPFLAGS = $(AM_CPPFLAGS) $(HYPRE_CPPFLAGS) -I$(top_srcdir)/test
test_hypre_galerkin_LDADD = $(hypre_ldadd)
test_hypre_resetup_SOURCES = test/hypre_resetup.c test/hypre_test_util.h test/hypre_tap.h test/tap.h
test_hypre_resetup_CPPFLAGS = $(AM_CPPFLAGS) $(HYPRE_CPPFLAGS) -I$(top_srcdir)/test
test_hypre_resetup_LDADD = $(hypre_ldadd)
# device memory: a CUDA build of hypre and a GPU, else skipped
test_hypre_device_SOURCES = test/hypre_device.c test/hypre_test_util.h test/hypre_tap.h test/tap.h
test_hypre_device_CPPFLAGS = $(AM_CPPFLAGS) $(HYPRE_CPPFLAGS) -I$(top_srcdir)/test
test_hypre_device_LDADD = $(hypre_ldadd)
TESTS += $(hypre_tests) test/hypre_mpi.sh
EXTRA_DIST += test/hypre_mpi.sh test/petsc_hypre_resetup.sh
# an unmodified PETSc program with -pc_type hypre, the hook preloaded
if HAVE_PETSC
TESTS += test/petsc_hypre_resetup.sh
endif
endif
