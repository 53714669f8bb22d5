/* CUDA engine: device memory of tile matrices, copies, value gathers and
 * error mapping.  Device memory comes from a private stream-ordered pool
 * (cudaMallocFromPoolAsync / cudaFreeAsync): plans of coarse levels make
 * many small allocations, and a pool turns each into a cheap, non-
 * synchronising call where cudaMalloc/cudaFree would cost tens of
 * microseconds and a device-wide synchronisation each.
 * Copies run on the legacy default stream; for non-blocking user streams
 * the plan code orders its kernels against it with events. */
#include "spgemm_cuda.cuh"
#include "tuning.h"
#include <chrono>
#include <mutex>
#include <stdio.h>

int tr_cuda_error(cudaError_t e, const char *what)
{
  (void)cudaGetLastError(); /* clear a non-sticky error */
  if (e == cudaErrorMemoryAllocation)
    return tilerap_set_error(TILERAP_ERR_DEVICE_NOMEM, "%s: %s", what, cudaGetErrorString(e));
  return tilerap_set_error(TILERAP_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
}

int tr_cuda_check_launch(const char *what)
{
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? TILERAP_SUCCESS : tilerap_set_error(TILERAP_ERR_CUDA, "launch of %s failed: %s", what, cudaGetErrorString(e));
}

/* ---------------------------------------------------------------- trace */
/* the tuning table's TILERAP_TRACE, taken at each plan creation (a branch per mark) */
int tr_trace_on = 0;
#define TR_TRACE_MAX 64
static thread_local struct {
  const char *label[TR_TRACE_MAX];
  double t[TR_TRACE_MAX];
  int n;
} tr_tr;
static double tr_now_us(void)
{
  return 1e-3 * (double)std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch()).count();
}
void tr_trace(const char *label)
{
  if (tr_tr.n < TR_TRACE_MAX) { tr_tr.label[tr_tr.n] = label; tr_tr.t[tr_tr.n++] = tr_now_us(); }
}
void tr_trace_flush(const char *what)
{
  if (tr_tr.n > 1) {
    fprintf(stderr, "tilerap trace %s (us): total %.1f |", what, tr_tr.t[tr_tr.n - 1] - tr_tr.t[0]);
    for (int i = 1; i < tr_tr.n; i++) fprintf(stderr, " %s %.1f", tr_tr.label[i], tr_tr.t[i] - tr_tr.t[i - 1]);
    fprintf(stderr, "\n");
  }
  tr_tr.n = 0;
}

/* ---------------------------------------------------------------- read-backs */
/* A cudaMemcpyAsync into pageable memory waits for the stream, so plans
 * read their counts back through a small pinned buffer of the calling
 * thread (allocated once, kept for the thread's life): one copy, one
 * synchronisation. */
/* freed when the thread ends (errors ignored: at process exit the CUDA
 * runtime may be gone first) */
struct tr_pinned_holder {
  void *p = NULL;
  ~tr_pinned_holder()
  {
    if (p) (void)cudaFreeHost(p);
  }
};
static thread_local tr_pinned_holder tr_pinned_buf;
static int tr_pinned_scratch(size_t bytes, void **p)
{
  *p = NULL;
  if (bytes > TR_PINNED_SCRATCH) return tilerap_set_error(TILERAP_ERR_INVALID, "internal: read-back of %zu bytes", bytes);
  if (!tr_pinned_buf.p) {
    cudaError_t e = cudaHostAlloc(&tr_pinned_buf.p, TR_PINNED_SCRATCH, cudaHostAllocPortable);
    if (e != cudaSuccess) { tr_pinned_buf.p = NULL; return tr_cuda_error(e, "pinned read-back buffer"); }
  }
  *p = tr_pinned_buf.p;
  return TILERAP_SUCCESS;
}

int tr_readback(void *dst, const void *src, size_t bytes, cudaStream_t s, const char *what)
{
  void *h;
  int err = tr_pinned_scratch(bytes, &h);
  if (err) return err;
  cudaError_t e = cudaMemcpyAsync(h, src, bytes, cudaMemcpyDeviceToHost, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  if (e != cudaSuccess) return tr_cuda_error(e, what);
  memcpy(dst, h, bytes);
  return TILERAP_SUCCESS;
}

/* ---------------------------------------------------------------- pool */
#define TR_MAX_DEVICES 64
static std::mutex tr_pool_lock;
static int tr_pool_state[TR_MAX_DEVICES]; /* 0 unknown, 1 pool, 2 plain cudaMalloc */
static cudaMemPool_t tr_pools[TR_MAX_DEVICES];

static cudaMemPool_t tr_pool(void)
{
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= TR_MAX_DEVICES) { (void)cudaGetLastError(); return NULL; }
  std::lock_guard<std::mutex> guard(tr_pool_lock);
  if (tr_pool_state[dev] == 0) {
    int supported = 0;
    tr_pool_state[dev] = 2;
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, dev) == cudaSuccess && supported) {
      cudaMemPoolProps props = {};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = dev;
      cudaMemPool_t pool;
      if (cudaMemPoolCreate(&pool, &props) == cudaSuccess) {
        /* keep freed blocks for reuse instead of returning them at every sync */
        uint64_t keep = UINT64_MAX;
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        tr_pools[dev] = pool;
        tr_pool_state[dev] = 1;
      }
    }
    (void)cudaGetLastError();
  }
  return tr_pool_state[dev] == 1 ? tr_pools[dev] : NULL;
}

extern "C" int tr_cuda_memory_stats(size_t *in_use, size_t *peak, int reset)
{
  cudaMemPool_t pool = tr_pool();
  if (!pool) return tilerap_set_error(TILERAP_ERR_ENGINE, "device memory statistics: no stream-ordered memory pool");
  uint64_t v = 0;
  cudaError_t e = cudaSuccess;
  if (reset) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &v);
  if (e == cudaSuccess && in_use && (e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v)) == cudaSuccess)
    *in_use = (size_t)v;
  if (e == cudaSuccess && peak && (e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &v)) == cudaSuccess)
    *peak = (size_t)v;
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, "device memory statistics");
}

int tr_dalloc(void **p, size_t bytes, cudaStream_t s, const char *what)
{
  *p = NULL;
  if (!bytes) return TILERAP_SUCCESS;
  cudaMemPool_t pool = tr_pool();
  cudaError_t e = pool ? cudaMallocFromPoolAsync(p, bytes, pool, s) : cudaMalloc(p, bytes);
  if (e != cudaSuccess) {
    *p = NULL;
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
      return tilerap_set_error(TILERAP_ERR_DEVICE_NOMEM, "device allocation of %zu bytes for %s failed: %s", bytes,
                               what, cudaGetErrorString(e));
    return tilerap_set_error(TILERAP_ERR_CUDA, "device allocation of %zu bytes for %s failed: %s", bytes, what,
                             cudaGetErrorString(e));
  }
  return TILERAP_SUCCESS;
}

void tr_dfree(void *p, cudaStream_t s)
{
  if (!p) return;
  if (tr_pool()) cudaFreeAsync(p, s);
  else cudaFree(p);
  (void)cudaGetLastError();
}

int tr_tmp_alloc(tr_tmp *t, void **p, size_t bytes, const char *what)
{
  *p = NULL;
  if (t->n >= (int)(sizeof t->p / sizeof t->p[0]))
    return tilerap_set_error(TILERAP_ERR_INVALID, "internal: too many temporaries (%s)", what);
  int err = tr_dalloc(p, bytes, t->s, what);
  if (!err && *p) t->p[t->n++] = *p;
  return err;
}

int tr_tmp_keep(tr_tmp *t, void *p)
{
  for (int i = 0; i < t->n; i++)
    if (t->p[i] == p) { t->p[i] = t->p[--t->n]; return TILERAP_SUCCESS; }
  return tilerap_set_error(TILERAP_ERR_INVALID, "internal: kept array is not a temporary");
}

int tr_dfree_is_async(void) { return tr_pool() != NULL; }

int tr_group_alloc(tr_group *g, tr_tmp *t, cudaStream_t s, const char *what)
{
  int err = TILERAP_SUCCESS;
  g->np = 0;
  if (g->overflow) return tilerap_set_error(TILERAP_ERR_INVALID, "internal: more than %d arrays in %s", TR_GROUP_MAX, what);
  if (g->total <= TR_GROUP_ONE_BLOCK) {
    void *b = NULL;
    err = t ? tr_tmp_alloc(t, &b, g->total, what) : tr_dalloc(&b, g->total, s, what);
    if (!err) { g->p[0] = b; g->np = 1; }
    return err;
  }
  for (int i = 0; i < g->n && !err; i++) {
    void *b = NULL;
    err = t ? tr_tmp_alloc(t, &b, g->bytes[i], what) : tr_dalloc(&b, g->bytes[i], s, what);
    g->p[i] = b;
    g->np = i + 1;
  }
  if (err && !t) tr_group_free(g, s);
  return err;
}

int tr_group_keep(tr_tmp *t, const tr_group *g)
{
  for (int i = 0; i < g->np; i++)
    if (g->p[i]) {
      int err = tr_tmp_keep(t, g->p[i]);
      if (err) return err;
    }
  return TILERAP_SUCCESS;
}

void tr_group_free(tr_group *g, cudaStream_t s)
{
  for (int i = 0; i < g->np; i++) tr_dfree(g->p[i], s);
  memset(g, 0, sizeof *g);
}

void tr_tmp_free_all(tr_tmp *t)
{
  for (int i = 0; i < t->n; i++) tr_dfree(t->p[i], t->s);
  t->n = 0;
}

/* ---------------------------------------------------------------- streams */
int tr_stream_nonblocking(cudaStream_t s)
{
  unsigned flags = 0;
  if (!s || s == cudaStreamLegacy) return 0;
  if (cudaStreamGetFlags(s, &flags) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
  return (flags & cudaStreamNonBlocking) != 0;
}

static thread_local cudaEvent_t tr_order_event = NULL;

static int tr_order(cudaStream_t waiter, cudaStream_t signaller)
{
  cudaError_t e = cudaSuccess;
  if (!tr_order_event) e = cudaEventCreateWithFlags(&tr_order_event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(tr_order_event, signaller);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(waiter, tr_order_event, 0);
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, "stream ordering");
}

int tr_order_after_legacy(cudaStream_t s)
{
  return tr_stream_nonblocking(s) ? tr_order(s, cudaStreamLegacy) : TILERAP_SUCCESS;
}

int tr_order_legacy_after(cudaStream_t s)
{
  return tr_stream_nonblocking(s) ? tr_order(cudaStreamLegacy, s) : TILERAP_SUCCESS;
}

/* ---------------------------------------------------------------- matrices */
extern "C" int tr_cuda_device_count(void)
{
  static int cached = -1;
  if (cached >= 0) return cached;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) { (void)cudaGetLastError(); n = 0; }
  cached = n;
  return n;
}

int tr_cuda_sm_count(void)
{
  int nsm = 0, dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      nsm <= 0)
    nsm = 132;
  (void)cudaGetLastError();
  return nsm;
}

extern "C" int tr_cuda_set_device(int dev)
{
  cudaError_t e = cudaSetDevice(dev);
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, "cudaSetDevice");
}

extern "C" int tr_cuda_get_device(int *dev)
{
  cudaError_t e = cudaGetDevice(dev);
  if (e != cudaSuccess) { *dev = -1; return tr_cuda_error(e, "cudaGetDevice"); }
  return TILERAP_SUCCESS;
}

/* Byte layout of the arrays inside one block (256-byte aligned pieces). */
typedef struct {
  size_t tile_ptr, tile_off, val, tile_col, row_mask, row_ptr, idx, total;
} tr_layout;

static size_t tr_up(size_t x) { return (x + 255) & ~(size_t)255; }

static tr_layout tr_layout_of(const tilerap_tile_matrix *T)
{
  tr_layout L;
  size_t nt = (size_t)T->num_tiles, nz = (size_t)T->nnz, o = 0;
  L.tile_ptr = o; o += tr_up(((size_t)T->tile_rows + 1) * sizeof(int64_t));
  L.tile_off = o; o += tr_up((nt + 1) * sizeof(int64_t));
  L.val = o; o += tr_up(nz * sizeof(double));
  L.tile_col = o; o += tr_up(nt * sizeof(int32_t));
  L.row_mask = o; o += tr_up(16 * nt * sizeof(uint16_t));
  L.row_ptr = o; o += tr_up(16 * nt);
  L.idx = o; o += tr_up(nz);
  L.total = o;
  return L;
}

int tr_cuda_tile_alloc_on(tilerap_tile_matrix *T, cudaStream_t s)
{
  tr_layout L = tr_layout_of(T);
  char *base = NULL;
  int err = tr_dalloc((void **)&base, L.total, s, "tile matrix");
  if (err) return err;
  T->tile_ptr = (int64_t *)(base + L.tile_ptr);
  T->tile_off = (int64_t *)(base + L.tile_off);
  T->val = (double *)(base + L.val);
  T->tile_col = (int32_t *)(base + L.tile_col);
  T->row_mask = (uint16_t *)(base + L.row_mask);
  T->row_ptr = (uint8_t *)(base + L.row_ptr);
  T->idx = (uint8_t *)(base + L.idx);
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_tile_alloc(tilerap_tile_matrix *T)
{
  return tr_cuda_tile_alloc_on(T, cudaStreamLegacy);
}

extern "C" void tr_cuda_tile_free(tilerap_tile_matrix *T)
{
  if (!T) return;
  tr_dfree(T->tile_ptr, cudaStreamLegacy); /* base of the block */
  tr_dfree(T->internal, cudaStreamLegacy);  /* staging of CSR values (tile_cuda_csr_values.cu), if any */
  T->internal = NULL;
  T->tile_ptr = NULL; T->tile_off = NULL; T->val = NULL; T->tile_col = NULL;
  T->row_mask = NULL; T->row_ptr = NULL; T->idx = NULL;
}

int tr_cuda_tile_new(int32_t m, int32_t n, int64_t num_tiles, int64_t nnz, cudaStream_t s, tilerap_tile_matrix **out)
{
  *out = NULL;
  if (num_tiles > INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "%lld tiles exceed the 2^31 tile index range", (long long)num_tiles);
  tilerap_tile_matrix *T = (tilerap_tile_matrix *)tilerap_host_calloc(1, sizeof *T);
  if (!T) return TILERAP_ERR_NOMEM;
  T->m = m; T->n = n;
  T->tile_rows = tr_ceil16(m); T->tile_cols = tr_ceil16(n);
  T->num_tiles = num_tiles; T->nnz = nnz;
  T->memtype = TILERAP_MEM_DEVICE;
  T->structure_id = tr_structure_id_new();
  int err = tr_cuda_tile_alloc_on(T, s);
  if (err) { free(T); return err; }
  *out = T;
  return TILERAP_SUCCESS;
}

/* One array of a tile copy; host sides go through the pinned staging ring
 * (a download returns with the data in place). */
static int tr_copy(void *dst, tilerap_memtype dmem, const void *src, tilerap_memtype smem, size_t bytes, const char *what)
{
  if (!bytes) return TILERAP_SUCCESS;
  if (smem == TILERAP_MEM_HOST && dmem == TILERAP_MEM_DEVICE) return tr_h2d(dst, src, bytes, cudaStreamLegacy, what);
  if (smem == TILERAP_MEM_DEVICE && dmem == TILERAP_MEM_HOST) return tr_d2h(dst, src, bytes, cudaStreamLegacy, what);
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamLegacy);
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, what);
}

extern "C" int tr_cuda_tile_copy(const tilerap_tile_matrix *S, tilerap_tile_matrix *D)
{
  if (S->num_tiles != D->num_tiles || S->nnz != D->nnz || S->tile_rows != D->tile_rows)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "tr_cuda_tile_copy: sizes differ");
  int err;
  if (S->memtype == TILERAP_MEM_DEVICE && D->memtype == TILERAP_MEM_DEVICE) {
    /* same counts, same layout: one copy of the whole block */
    err = tr_copy(D->tile_ptr, D->memtype, S->tile_ptr, S->memtype, tr_layout_of(S).total, "device tile copy");
    return err;
  }
  size_t nt = (size_t)S->num_tiles, nz = (size_t)S->nnz;
  if ((err = tr_copy(D->tile_ptr, D->memtype, S->tile_ptr, S->memtype, ((size_t)S->tile_rows + 1) * sizeof(int64_t), "tile copy")) ||
      (err = tr_copy(D->tile_off, D->memtype, S->tile_off, S->memtype, (nt + 1) * sizeof(int64_t), "tile copy")) ||
      (err = tr_copy(D->tile_col, D->memtype, S->tile_col, S->memtype, nt * sizeof(int32_t), "tile copy")) ||
      (err = tr_copy(D->row_mask, D->memtype, S->row_mask, S->memtype, 16 * nt * sizeof(uint16_t), "tile copy")) ||
      (err = tr_copy(D->row_ptr, D->memtype, S->row_ptr, S->memtype, 16 * nt, "tile copy")) ||
      (err = tr_copy(D->idx, D->memtype, S->idx, S->memtype, nz, "tile copy")) ||
      (err = tr_copy(D->val, D->memtype, S->val, S->memtype, nz * sizeof(double), "tile copy")))
    return err;
  if (D->memtype == TILERAP_MEM_HOST) {
    cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
    if (e != cudaSuccess) return tr_cuda_error(e, "tile copy to the host");
  }
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_tile_copy_values(const tilerap_tile_matrix *S, tilerap_tile_matrix *D)
{
  int err = tr_copy(D->val, D->memtype, S->val, S->memtype, (size_t)S->nnz * sizeof(double), "value copy");
  if (err) return err;
  /* the host reads the values next: wait for them (and the work before) */
  if (D->memtype == TILERAP_MEM_HOST) {
    cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
    if (e != cudaSuccess) return tr_cuda_error(e, "value copy to the host");
  }
  return TILERAP_SUCCESS;
}

static __global__ void k_gather(const double *__restrict__ src, const int64_t *__restrict__ perm, int64_t n,
                                double *__restrict__ dst)
{
  for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n; q += (int64_t)gridDim.x * blockDim.x)
  {
    const int64_t p = perm[q];
    dst[q] = p >= 0 ? src[p] : 0.0; /* -1: an entry the source does not hold */
  }
}

extern "C" int tr_cuda_gather_values(const double *src, const int64_t *perm, int64_t n, double *dst, void *stream)
{
  if (n <= 0) return TILERAP_SUCCESS;
  cudaStream_t s = (cudaStream_t)stream;
  int err = tr_order_after_legacy(s);
  if (err) return err;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65536) blocks = 65536;
  k_gather<<<(unsigned)blocks, 256, 0, s>>>(src, perm, n, dst);
  if ((err = tr_cuda_check_launch("value gather"))) return err;
  return tr_order_legacy_after(s);
}

static __global__ void k_empty_structure(int32_t tile_rows, int64_t *tile_ptr, int64_t *tile_off)
{
  const int32_t I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I <= tile_rows) tile_ptr[I] = 0;
  if (I == 0) tile_off[0] = 0;
}

void tr_cuda_tile_empty_structure(tilerap_tile_matrix *T, cudaStream_t s)
{
  k_empty_structure<<<tr_blocks((int64_t)T->tile_rows + 1, 256), 256, 0, s>>>(T->tile_rows, T->tile_ptr, T->tile_off);
}

extern "C" void tr_cuda_free(void *p)
{
  tr_dfree(p, cudaStreamLegacy);
}

extern "C" int tr_cuda_malloc(size_t bytes, void **p)
{
  return tr_dalloc(p, bytes, cudaStreamLegacy, "device buffer");
}

extern "C" int tr_cuda_memcpy(void *dst, tilerap_memtype dst_mem, const void *src, tilerap_memtype src_mem, size_t bytes)
{
  int err = tr_copy(dst, dst_mem, src, src_mem, bytes, "tilerap_memcpy");
  /* downloads return with the data in place, device copies are ordered
   * before later work on the legacy stream; an upload must also leave src
   * free for reuse, which the ring guarantees and a direct copy does not */
  if (err || src_mem != TILERAP_MEM_HOST || tr_stage_active(bytes)) return err;
  const cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, "tilerap_memcpy");
}

/* the legacy stream's work complete (calls that return with their output in place) */
extern "C" int tr_cuda_wait(const char *what)
{
  const cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
  return e == cudaSuccess ? TILERAP_SUCCESS : tr_cuda_error(e, what);
}
