/* memcpy of large host arrays by several threads.  One thread copies
 * about 8-12 GB/s; the pinned staging of host<->device transfers
 * (tile_cuda_staging.cu) needs the host side to keep up with the DMA
 * engine, and the destination of a download is often freshly allocated,
 * so its first-touch page faults are taken in parallel too. */
#include "tile_internal.h"
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Threads for a copy: one per MB, at most TR_HOST_COPY_THREADS (memory
 * bandwidth, not cores, bounds a copy: 4 threads fed the H100's PCIe link;
 * the hypre hook runs its row-order pass on the other cores meanwhile). */
#define TR_HOST_COPY_PIECE ((size_t)1 << 20)

void tr_host_copy(void *dst, const void *src, size_t bytes)
{
  if (!bytes) return;
  int nt = 1;
#ifdef _OPENMP
  if (bytes >= 2 * TR_HOST_COPY_PIECE && !omp_in_parallel()) {
    size_t want = bytes / TR_HOST_COPY_PIECE;
    int maxt = omp_get_max_threads();
    nt = (int)(want < (size_t)TR_HOST_COPY_THREADS ? want : (size_t)TR_HOST_COPY_THREADS);
    if (nt > maxt) nt = maxt;
  }
#endif
  if (nt <= 1) { memcpy(dst, src, bytes); return; }
#ifdef _OPENMP
  /* pieces on 4 KB boundaries: no two threads fault the same page */
  const size_t per = ((bytes / (size_t)nt + 4095) / 4096) * 4096;
#pragma omp parallel num_threads(nt)
  {
    const size_t b = (size_t)omp_get_thread_num() * per;
    if (b < bytes) memcpy((char *)dst + b, (const char *)src + b, bytes - b < per ? bytes - b : per);
  }
#endif
}
