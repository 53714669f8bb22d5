/* Error codes, per-thread error messages and checked host allocation. */
#include "tile_internal.h"
#include <string.h>
#include <stdarg.h>
#include <stdio.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static _Thread_local char tr_errmsg[512];

int tilerap_set_error(int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tr_errmsg, sizeof tr_errmsg, fmt, ap);
  va_end(ap);
  return code;
}

const char *tilerap_last_error(void) { return tr_errmsg; }

const char *tilerap_error_string(int err)
{
  switch (err) {
  case TILERAP_SUCCESS: return "success";
  case TILERAP_ERR_NULL: return "required argument is NULL";
  case TILERAP_ERR_SIZE: return "dimension mismatch or invalid size";
  case TILERAP_ERR_UNSORTED: return "CSR column indices not strictly increasing";
  case TILERAP_ERR_RANGE: return "index out of range";
  case TILERAP_ERR_INVALID: return "inconsistent arguments";
  case TILERAP_ERR_NOMEM: return "host out of memory";
  case TILERAP_ERR_OVERFLOW: return "size exceeds the format's index range";
  case TILERAP_ERR_STRUCTURE: return "matrix structure differs from the plan's";
  case TILERAP_ERR_ENGINE: return "engine not available";
  case TILERAP_ERR_MEMTYPE: return "matrix in the wrong memory space";
  case TILERAP_ERR_CUDA: return "CUDA error";
  case TILERAP_ERR_DEVICE_NOMEM: return "device out of memory";
  default: return "unknown error";
  }
}

void *tilerap_host_alloc(size_t count, size_t size)
{
  if (size && count > SIZE_MAX / size) {
    tilerap_set_error(TILERAP_ERR_OVERFLOW, "allocation of %zu x %zu bytes overflows", count, size);
    return NULL;
  }
  size_t bytes = count * size;
  void *p = NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  /* Plans and products allocate large arrays once and fill them at once:
   * transparent huge pages cut the page faults that otherwise cost a third
   * of a CPU plan's time.  Memory stays ordinary malloc memory (free()). */
  const size_t huge = (size_t)2 << 20;
  if (bytes >= 4 * huge) {
    if (posix_memalign(&p, huge, bytes)) p = NULL;
    if (p) madvise(p, bytes & ~(huge - 1), MADV_HUGEPAGE);
  } else
#endif
    p = malloc(bytes ? bytes : 1);
  if (!p) tilerap_set_error(TILERAP_ERR_NOMEM, "host allocation of %zu bytes failed", bytes);
  return p;
}

void *tilerap_host_calloc(size_t count, size_t size)
{
  if (size && count > SIZE_MAX / size) {
    tilerap_set_error(TILERAP_ERR_OVERFLOW, "allocation of %zu x %zu bytes overflows", count, size);
    return NULL;
  }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  /* large zeroed arrays: huge pages and a memset cost less than calloc's
   * fresh 4 KiB pages, each a page fault on first touch (measured: 8 MB of
   * per-pair counts cost a GAMG setup 0.1 s in faults) */
  if (count * size >= ((size_t)8 << 20)) {
    void *q = tilerap_host_alloc(count, size);
    if (q) memset(q, 0, count * size);
    return q;
  }
#endif
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) tilerap_set_error(TILERAP_ERR_NOMEM, "host allocation of %zu bytes failed", count * size);
  return p;
}

/* 8-bit popcount table (x86-64 baseline has no popcnt instruction). */
#define B2(n) n, n + 1, n + 1, n + 2
#define B4(n) B2(n), B2(n + 1), B2(n + 1), B2(n + 2)
#define B6(n) B4(n), B4(n + 1), B4(n + 1), B4(n + 2)
const uint8_t tilerap_popcount8[256] = {B6(0), B6(1), B6(1), B6(2)};
