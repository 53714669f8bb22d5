/* Device buffers and copies for callers that keep arrays on the GPU
 * between calls (tilerap_device_malloc / _free, tilerap_memcpy). */
#include "tile_internal.h"
#include "engine_cuda.h"

int tr_require_cuda(const char *what)
{
#ifdef TILERAP_HAVE_CUDA
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA))
    return tilerap_set_error(TILERAP_ERR_ENGINE, "%s: no CUDA device is visible", what);
  return TILERAP_SUCCESS;
#else
  return tilerap_set_error(TILERAP_ERR_ENGINE, "%s: tilerap was built without the CUDA engine", what);
#endif
}

int tilerap_device_malloc(size_t bytes, void **p)
{
  if (!p) return tilerap_set_error(TILERAP_ERR_NULL, "device buffer: NULL output");
  *p = NULL;
  int err = tr_require_cuda("device buffer");
  if (err || !bytes) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_malloc(bytes, p);
#else
  return TILERAP_ERR_ENGINE;
#endif
}

void tilerap_device_free(void *p)
{
#ifdef TILERAP_HAVE_CUDA
  if (p) tr_cuda_free(p);
#else
  (void)p;
#endif
}

int tilerap_memcpy(void *dst, tilerap_memtype dst_mem, const void *src, tilerap_memtype src_mem, size_t bytes)
{
  if (!bytes) return TILERAP_SUCCESS;
  if (!dst || !src) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_memcpy: NULL %s", dst ? "source" : "destination");
  if ((dst_mem != TILERAP_MEM_HOST && dst_mem != TILERAP_MEM_DEVICE) ||
      (src_mem != TILERAP_MEM_HOST && src_mem != TILERAP_MEM_DEVICE))
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_memcpy: memory types %d, %d", (int)dst_mem, (int)src_mem);
  if (dst_mem == TILERAP_MEM_HOST && src_mem == TILERAP_MEM_HOST) {
    tr_host_copy(dst, src, bytes);
    return TILERAP_SUCCESS;
  }
  int err = tr_require_cuda("tilerap_memcpy");
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_memcpy(dst, dst_mem, src, src_mem, bytes);
#else
  return TILERAP_ERR_ENGINE;
#endif
}

static int tr_device_memory(size_t *in_use, size_t *peak, int reset)
{
  int err = tr_require_cuda("device memory statistics");
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_memory_stats(in_use, peak, reset);
#else
  (void)in_use; (void)peak; (void)reset;
  return TILERAP_ERR_ENGINE;
#endif
}

int tilerap_device_memory(size_t *in_use, size_t *peak) { return tr_device_memory(in_use, peak, 0); }
int tilerap_device_memory_reset_peak(void) { return tr_device_memory(NULL, NULL, 1); }
