/* CUDA engine: host <-> device copies of large arrays through a ring of
 * pinned staging chunks.  From pageable memory the driver stages a copy
 * through small pinned buffers of its own, one thread and one chunk at a
 * time.  Here several threads copy each chunk into pinned memory
 * (tr_host_copy) while the DMA engine moves the previous chunks, and a
 * download copies chunk i out while chunks i+1.. are still coming down.
 *
 * The ring (TR_STAGE_SLOTS chunks, one per device, allocated on first use
 * and kept for the process) is shared: a copy holds its lock from first
 * to last chunk, and a slot is reused only after the event recorded
 * behind its previous DMA, whatever stream that ran on.
 *
 * Environment: TILERAP_PINNED=0 gives plain cudaMemcpyAsync (for
 * comparisons); TILERAP_PINNED_CHUNK=bytes sets the chunk size (the tests
 * use small chunks to make every copy wrap around the ring).  Copies
 * under TR_STAGE_MIN bytes go straight through the driver. */
#include "spgemm_cuda.cuh"
#include "tuning.h"
#include <mutex>
#include <stdlib.h>
#include <string.h>

#define TR_STAGE_SLOTS 4
#define TR_STAGE_MAX_DEVICES 64

typedef struct {
  int state; /* 0 not yet tried, 1 ready, 2 unavailable (plain copies) */
  char *buf;
  size_t chunk;
  cudaEvent_t ev[TR_STAGE_SLOTS];
  int busy[TR_STAGE_SLOTS]; /* an event was recorded behind the slot's last DMA */
  int next;
  std::mutex lock;
} tr_stage_ring;

static tr_stage_ring tr_rings[TR_STAGE_MAX_DEVICES];
static std::mutex tr_rings_init;

/* the tuning table's TILERAP_PINNED_CHUNK (default 8 MB) and TILERAP_PINNED */
static size_t tr_stage_chunk_setting(void) { return (size_t)tr_knob(TR_KNOB_PINNED_CHUNK); }
static int tr_stage_enabled(void) { return tr_knob_int(TR_KNOB_PINNED); }

/* Smallest copy that goes through the ring: below it the driver's own
 * staging costs less than taking the lock and events. */
static size_t tr_stage_min(const tr_stage_ring *r) { return r->chunk < ((size_t)1 << 18) ? r->chunk : (size_t)1 << 18; }

/* At exit, the rings go back (registered after the CUDA runtime set up
 * its own exit handler, so this one runs first, with CUDA still alive). */
static void tr_stage_release(void)
{
  std::lock_guard<std::mutex> guard(tr_rings_init);
  for (int d = 0; d < TR_STAGE_MAX_DEVICES; d++) {
    tr_stage_ring *r = &tr_rings[d];
    if (r->state != 1) continue;
    /* a ring in use by a copy (exit called while a copy holds it) stays */
    std::unique_lock<std::mutex> busy(r->lock, std::try_to_lock);
    if (!busy.owns_lock()) continue;
    int cur = 0;
    if (cudaGetDevice(&cur) == cudaSuccess && cudaSetDevice(d) == cudaSuccess) {
      for (int k = 0; k < TR_STAGE_SLOTS; k++) {
        if (r->busy[k]) cudaEventSynchronize(r->ev[k]);
        cudaEventDestroy(r->ev[k]);
      }
      cudaFreeHost(r->buf);
      cudaSetDevice(cur);
    }
    (void)cudaGetLastError();
    r->buf = NULL;
    r->state = 2; /* a copy after this point takes the driver's path */
  }
}

/* The current device's ring, set up on first use; NULL: plain copies. */
static tr_stage_ring *tr_stage_ring_get(void)
{
  if (!tr_stage_enabled()) return NULL;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= TR_STAGE_MAX_DEVICES) {
    (void)cudaGetLastError();
    return NULL;
  }
  tr_stage_ring *r = &tr_rings[dev];
  std::lock_guard<std::mutex> guard(tr_rings_init);
  if (r->state == 0) {
    r->state = 2;
    r->chunk = tr_stage_chunk_setting();
    void *b = NULL;
    int ok = cudaHostAlloc(&b, TR_STAGE_SLOTS * r->chunk, cudaHostAllocPortable) == cudaSuccess;
    int made = 0;
    for (; ok && made < TR_STAGE_SLOTS; made++)
      ok = cudaEventCreateWithFlags(&r->ev[made], cudaEventDisableTiming) == cudaSuccess;
    if (ok) {
      static bool registered = false;
      if (!registered) registered = atexit(tr_stage_release) == 0;
      r->buf = (char *)b;
      r->state = 1;
    } else { /* no pinned memory to spare: the driver's staging still works */
      while (made-- > 0) cudaEventDestroy(r->ev[made]);
      if (b) cudaFreeHost(b);
      (void)cudaGetLastError(); /* clear this failure only */
    }
  }
  return r->state == 1 ? r : NULL;
}

/* Waits until slot k's previous DMA is done. */
static cudaError_t tr_stage_wait(tr_stage_ring *r, int k)
{
  if (!r->busy[k]) return cudaSuccess;
  cudaError_t e = cudaEventSynchronize(r->ev[k]);
  if (e == cudaSuccess) r->busy[k] = 0;
  return e;
}

int tr_h2d(void *dst, const void *src, size_t bytes, cudaStream_t s, const char *what)
{
  if (!bytes) return TILERAP_SUCCESS;
  tr_stage_ring *r = tr_stage_ring_get();
  cudaError_t e = cudaSuccess;
  if (!r || bytes < tr_stage_min(r)) {
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
    return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, what);
  }
  std::lock_guard<std::mutex> guard(r->lock);
  for (size_t off = 0; off < bytes && e == cudaSuccess;) {
    const size_t n = bytes - off < r->chunk ? bytes - off : r->chunk;
    const int k = r->next;
    char *slot = r->buf + (size_t)k * r->chunk;
    if ((e = tr_stage_wait(r, k)) != cudaSuccess) break;
    tr_host_copy(slot, (const char *)src + off, n);
    if ((e = cudaMemcpyAsync((char *)dst + off, slot, n, cudaMemcpyHostToDevice, s)) != cudaSuccess) break;
    if ((e = cudaEventRecord(r->ev[k], s)) != cudaSuccess) {
      /* the DMA may still read the slot: wait for it before giving it back */
      (void)cudaStreamSynchronize(s);
      break;
    }
    r->busy[k] = 1;
    r->next = (k + 1) % TR_STAGE_SLOTS;
    off += n;
  }
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, what);
}

int tr_d2h(void *dst, const void *src, size_t bytes, cudaStream_t s, const char *what)
{
  if (!bytes) return TILERAP_SUCCESS;
  tr_stage_ring *r = tr_stage_ring_get();
  cudaError_t e = cudaSuccess;
  if (!r || bytes < tr_stage_min(r)) {
    e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, what);
  }
  std::lock_guard<std::mutex> guard(r->lock);
  const size_t nchunks = (bytes + r->chunk - 1) / r->chunk;
  int slot_of[TR_STAGE_SLOTS];
  size_t issued = 0;
  for (size_t c = 0; c < nchunks && e == cudaSuccess; c++) {
    /* keep up to TR_STAGE_SLOTS chunks in flight ahead of the one copied out */
    while (issued < nchunks && issued < c + TR_STAGE_SLOTS && e == cudaSuccess) {
      const int k = r->next;
      const size_t off = issued * r->chunk, n = bytes - off < r->chunk ? bytes - off : r->chunk;
      if ((e = tr_stage_wait(r, k)) != cudaSuccess) break;
      if ((e = cudaMemcpyAsync(r->buf + (size_t)k * r->chunk, (const char *)src + off, n, cudaMemcpyDeviceToHost, s)) !=
          cudaSuccess)
        break;
      if ((e = cudaEventRecord(r->ev[k], s)) != cudaSuccess) { (void)cudaStreamSynchronize(s); break; }
      r->busy[k] = 1;
      slot_of[issued % TR_STAGE_SLOTS] = k;
      r->next = (k + 1) % TR_STAGE_SLOTS;
      issued++;
    }
    if (e != cudaSuccess) break;
    const int k = slot_of[c % TR_STAGE_SLOTS];
    const size_t off = c * r->chunk, n = bytes - off < r->chunk ? bytes - off : r->chunk;
    if ((e = tr_stage_wait(r, k)) != cudaSuccess) break;
    tr_host_copy((char *)dst + off, r->buf + (size_t)k * r->chunk, n);
  }
  if (e != cudaSuccess) { /* nothing of the ring may stay in flight */
    (void)cudaStreamSynchronize(s);
    for (int k = 0; k < TR_STAGE_SLOTS; k++)
      if (r->busy[k]) { (void)cudaEventSynchronize(r->ev[k]); r->busy[k] = 0; }
    return tr_cuda_error(e, what);
  }
  return TILERAP_SUCCESS;
}

int tr_stage_active(size_t bytes)
{
  tr_stage_ring *r = tr_stage_ring_get();
  return r && bytes >= tr_stage_min(r);
}
