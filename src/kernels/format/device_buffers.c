/* Device buffers and copies for callers that keep arrays on the GPU
 * between calls (tilerap_device_malloc / _free, tilerap_memcpy), and
 * value moves between their layouts and tile matrices (slots, gather,
 * scatter). */
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

int tilerap_device_gather_values(int64_t n, const int64_t *perm, const double *src, double *dst)
{
  if (n <= 0) return TILERAP_SUCCESS;
  if (!perm || !src || !dst) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_device_gather_values: NULL array");
  int err = tr_require_cuda("tilerap_device_gather_values");
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_gather_values(src, perm, n, dst, NULL);
#else
  return TILERAP_ERR_ENGINE;
#endif
}

int tilerap_tile_slots_device_i32(const tilerap_tile_matrix *T, int32_t m, const int32_t *rowptr,
                                  const int32_t *colidx, int64_t nnz, int64_t *slot)
{
  if (!T || (nnz > 0 && (!rowptr || !colidx || !slot)))
    return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_tile_slots_device_i32: NULL argument");
  if (T->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "tilerap_tile_slots_device_i32: the tile matrix is not on the device");
  if (m != T->m || nnz < 0)
    return tilerap_set_error(TILERAP_ERR_SIZE, "tilerap_tile_slots_device_i32: %d rows for a %d-row tile matrix, %lld entries",
                             (int)m, (int)T->m, (long long)nnz);
  if (nnz == 0) return TILERAP_SUCCESS;
  int err = tr_require_cuda("tilerap_tile_slots_device_i32");
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_tile_slots(T, m, rowptr, colidx, nnz, slot);
#else
  return TILERAP_ERR_ENGINE;
#endif
}

int tilerap_device_scatter_values(int64_t n, const int64_t *map, const double *src, double *dst)
{
  if (n <= 0) return TILERAP_SUCCESS;
  if (!map || !src || !dst) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_device_scatter_values: NULL array");
  int err = tr_require_cuda("tilerap_device_scatter_values");
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_scatter_values(src, map, n, dst);
#else
  return TILERAP_ERR_ENGINE;
#endif
}

int tilerap_device_scatter_add_values(int64_t n, const int64_t *map, const double *src, double *dst)
{
  if (n <= 0) return TILERAP_SUCCESS;
  if (!map || !src || !dst) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_device_scatter_add_values: NULL array");
  int err = tr_require_cuda("tilerap_device_scatter_add_values");
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_scatter_add_values(src, map, n, dst);
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
