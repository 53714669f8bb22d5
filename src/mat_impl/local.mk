# PETSc matrix types MATSEQTILE / MATMPITILE (included from Makefile.am).
if HAVE_PETSC
libtilerap_la_SOURCES += \
	src/mat_impl/mat_seqtile_impl.h \
	src/mpi/tile_mpi_device.h \
	src/mat_impl/mat_seqtile.c \
	src/mat_impl/tile_cache.c \
	src/mat_impl/tile_options.c \
	src/mat_impl/mat_seqtile_product.c \
	src/mat_impl/mat_seqtile_device_product.c \
	src/mat_impl/mat_seqtile_transpose_mult.c \
	src/mat_impl/mat_seqtile_graph.c \
	src/mat_impl/mat_mpitile.c \
	src/mat_impl/mat_tile_register.c
libtilerap_la_CPPFLAGS += $(PETSC_CFLAGS)
libtilerap_la_LIBADD += $(PETSC_LIBS)
include_HEADERS += include/tilerap_petsc.h

# DMDA Poisson driver (CG + GAMG; -dm_mat_type aij|seqtile)
noinst_PROGRAMS += examples/poisson/poisson
examples_poisson_poisson_SOURCES = examples/poisson/poisson.c
examples_poisson_poisson_CPPFLAGS = $(AM_CPPFLAGS) $(PETSC_CFLAGS)
examples_poisson_poisson_LDADD = libtilerap.la $(PETSC_LIBS)

# GAMG on the irregular set (bench/petsc_gamg.sh's irregular cases)
noinst_PROGRAMS += bench/petsc-gamg-irregular
bench_petsc_gamg_irregular_SOURCES = bench/petsc_gamg_irregular.c
bench_petsc_gamg_irregular_CPPFLAGS = $(AM_CPPFLAGS) $(PETSC_CFLAGS)
bench_petsc_gamg_irregular_LDADD = libtilerap.la $(PETSC_LIBS)

# ------------------------------------------------------------ PETSc-layer tests (CPU engine)
petsc_tests = test/petsc_seqtile_basic test/petsc_seqtile_product test/petsc_gamg test/petsc_device_product test/petsc_graph
check_PROGRAMS += $(petsc_tests)
TESTS += $(petsc_tests)
petsc_test_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/test $(PETSC_CFLAGS)
petsc_test_ldadd = libtilerap.la $(PETSC_LIBS)
test_petsc_graph_SOURCES = test/petsc_graph.c test/petsc_testutil.h test/tap.h
test_petsc_graph_CPPFLAGS = $(petsc_test_cppflags)
test_petsc_graph_LDADD = $(petsc_test_ldadd)
test_petsc_seqtile_basic_SOURCES = test/petsc_seqtile_basic.c test/petsc_testutil.h test/tap.h
test_petsc_seqtile_basic_CPPFLAGS = $(petsc_test_cppflags)
test_petsc_seqtile_basic_LDADD = $(petsc_test_ldadd)
test_petsc_seqtile_product_SOURCES = test/petsc_seqtile_product.c test/petsc_testutil.h test/tap.h
test_petsc_seqtile_product_CPPFLAGS = $(petsc_test_cppflags)
test_petsc_seqtile_product_LDADD = $(petsc_test_ldadd)
# the tile types on AIJCUSPARSE (a PETSc built with CUDA, on a GPU; a skip elsewhere)
test_petsc_device_product_SOURCES = test/petsc_device_product.c test/petsc_testutil.h test/tap.h
test_petsc_device_product_CPPFLAGS = $(petsc_test_cppflags)
test_petsc_device_product_LDADD = $(petsc_test_ldadd)
test_petsc_gamg_SOURCES = test/petsc_gamg.c test/petsc_testutil.h test/tap.h
test_petsc_gamg_CPPFLAGS = $(petsc_test_cppflags)
test_petsc_gamg_LDADD = $(petsc_test_ldadd)

# MATMPITILE: TAP programs run on one rank by make check and on 1, 2, 4 ranks
# by the mpiexec driver test/petsc_mpi.sh
petsc_mpi_tests = test/petsc_mpi_product test/petsc_mpi_gamg
check_PROGRAMS += $(petsc_mpi_tests)
test_petsc_mpi_gamg_SOURCES = test/petsc_mpi_gamg.c test/petsc_testutil.h test/tap.h
test_petsc_mpi_gamg_CPPFLAGS = $(petsc_test_cppflags)
test_petsc_mpi_gamg_LDADD = $(petsc_test_ldadd)
TESTS += $(petsc_mpi_tests) test/petsc_mpi.sh
EXTRA_DIST += test/petsc_mpi.sh
CLEANFILES += test/petsc_mpi.d/*
test_petsc_mpi_product_SOURCES = test/petsc_mpi_product.c test/petsc_testutil.h test/tap.h
test_petsc_mpi_product_CPPFLAGS = $(petsc_test_cppflags)
test_petsc_mpi_product_LDADD = $(petsc_test_ldadd)

# shell tests: -malloc_dump clean run; PETSc's own tutorials with -dll_append
TESTS += test/petsc_malloc_dump.sh test/petsc_tutorials.sh
EXTRA_DIST += test/petsc_malloc_dump.sh test/petsc_tutorials.sh
check_SCRIPTS += test/petsc_env.sh
CLEANFILES += test/petsc_env.sh test/petsc_malloc_dump.out
test/petsc_env.sh: Makefile
	$(AM_V_GEN)mkdir -p test && { \
	  echo "TILERAP_CC='$(CC)'"; \
	  echo "PETSC_CFLAGS='$(PETSC_CFLAGS)'"; \
	  echo "PETSC_LIBS='$(PETSC_LIBS)'"; \
	  echo "PETSC_PREFIX='$(PETSC_PREFIX)'"; \
	  echo "TILERAP_BUILDDIR='$(abs_top_builddir)'"; } > $@
CLEANFILES += test/tutorials/ex45 test/tutorials/ex50 test/tutorials/*.log
# PETSc's own src/mat/tests product programs, AIJ against the tile types
TESTS += test/petsc_mat_tests.sh
EXTRA_DIST += test/petsc_mat_tests.sh test/mat_tests_judge.sh
CLEANFILES += test/mat_tests/*
endif
