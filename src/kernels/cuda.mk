# CUDA engine (included from Makefile.am).  .cu files become libtool
# objects through build-aux/nvcc-lt.sh.
if HAVE_CUDA
cuda_sources =
libtilerap_la_SOURCES += $(cuda_sources)
libtilerap_la_LIBADD += $(CUDA_LIBS)
NVCC_COMPILE = $(NVCC) $(NVCCFLAGS) -std=c++17 $(DEFS) $(DEFAULT_INCLUDES) -I$(top_srcdir)/include -I$(top_builddir) $(CUDA_CPPFLAGS)
SUFFIXES = .cu
.cu.lo:
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/build-aux/nvcc-lt.sh $@ $(NVCC_COMPILE) -c $<
endif
