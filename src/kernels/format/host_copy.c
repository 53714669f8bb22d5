/* memcpy of large host arrays by several threads.  One thread copies
 * about 8-12 GB/s; the pinned staging of host<->device transfers
 * (tile_cuda_staging.cu) needs the host side to keep up with the DMA
 * engine, and the destination of a download is often freshly allocated,
 * so its first-touch page faults are taken in parallel too. */
#include "tile_internal.h"
#include "tuning.h"
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Pieces: one per MB, at most TR_HOST_COPY_THREADS (memory bandwidth, not
 * cores, bounds a copy: 4 threads fed the H100's PCIe link; the hypre hook
 * runs its row-order pass on the other cores meanwhile). */
#define TR_HOST_COPY_PIECE ((size_t)1 << 20)

/* the tuning table's TILERAP_COPY_THREADS (1-64, default TR_HOST_COPY_THREADS) */
static int tr_copy_threads(void) { return tr_knob_int(TR_KNOB_COPY_THREADS); }

void tr_host_copy(void *dst, const void *src, size_t bytes)
{
  if (!bytes) return;
  size_t np = 1;
#ifdef _OPENMP
  if (bytes >= 2 * TR_HOST_COPY_PIECE && !omp_in_parallel()) {
    np = bytes / TR_HOST_COPY_PIECE;
    if (np > (size_t)tr_copy_threads()) np = (size_t)tr_copy_threads();
    if (np > (size_t)omp_get_max_threads()) np = (size_t)omp_get_max_threads();
  }
#endif
  if (np <= 1) { memcpy(dst, src, bytes); return; }
  /* pieces of ceil(bytes / np) rounded up to 4 KB (no two threads fault
   * the same page); the last one takes the rest.  An omp for over the
   * pieces copies all of them whatever team size OpenMP grants. */
  const size_t per = ((bytes + np - 1) / np + 4095) / 4096 * 4096;
#ifdef _OPENMP
#pragma omp parallel for num_threads((int)np) schedule(static, 1)
#endif
  for (long i = 0; i < (long)np; i++) {
    const size_t b = (size_t)i * per;
    if (b < bytes) memcpy((char *)dst + b, (const char *)src + b, bytes - b < per ? bytes - b : per);
  }
}

int64_t tr_host_max_row(int32_t m, const int64_t *rp64, const int32_t *rp32)
{
  int64_t mx = 0;
  int np = 1;
#ifdef _OPENMP
  if (m >= (1 << 16) && !omp_in_parallel()) {
    np = tr_copy_threads();
    if (np > omp_get_max_threads()) np = omp_get_max_threads();
  }
#pragma omp parallel for num_threads(np) reduction(max : mx) schedule(static)
#endif
  for (int32_t i = 0; i < m; i++) {
    const int64_t len = rp64 ? rp64[i + 1] - rp64[i] : (int64_t)rp32[i + 1] - rp32[i];
    if (len > mx) mx = len;
  }
  (void)np;
  return mx;
}
