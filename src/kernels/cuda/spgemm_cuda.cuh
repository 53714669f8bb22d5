/* Internal header of the CUDA engine: error mapping, stream-ordered device
 * allocation, the device plan and the interfaces between the three steps.
 * Not installed; included by the .cu files only. */
#ifndef TILERAP_SPGEMM_CUDA_CUH
#define TILERAP_SPGEMM_CUDA_CUH
#include <cuda_runtime.h>
#include <stdint.h>
#include "tile_internal.h"
#include "engine_cuda.h"

/* Numeric phase work units ("chunks"): consecutive C tiles whose hits
 * plus accumulator slots add up to about TR_CHUNK_WORK; one block sums a
 * chunk in shared memory.  A chunk's accumulator never exceeds
 * TR_CHUNK_WORK + 256 doubles (the last tile may be dense). */
#define TR_CHUNK_WORK 1536
#define TR_CHUNK_ACC (TR_CHUNK_WORK + 256)
/* Small products cut their work into smaller chunks (at least
 * TR_CHUNK_MIN), so that their few chunks still spread over about
 * TR_CHUNK_SPREAD blocks per multiprocessor: a coarse level of a few
 * thousand hits otherwise runs as a handful of blocks, each a long
 * serial loop. */
#define TR_CHUNK_MIN 256
#define TR_CHUNK_SPREAD 2
#define TR_NUMERIC_THREADS 256
/* Chunk work of one tensor-core pair (in hit units): a warp gathers both
 * 16x16 tiles (16 loads per lane) and issues 16 DMMA; about what 64 hits
 * cost a block-wide loop. */
#define TR_TC_WORK 64


/* ---------------------------------------------------------------- errors */
/* Maps a CUDA error to TILERAP_ERR_CUDA / TILERAP_ERR_DEVICE_NOMEM with the
 * runtime's message, and clears the non-sticky error state. */
int tr_cuda_error(cudaError_t e, const char *what);
/* After a kernel launch: TILERAP_ERR_CUDA if the launch failed. */
int tr_cuda_check_launch(const char *what);

/* ---------------------------------------------------------------- trace */
/* TILERAP_TRACE=1: host wall-clock marks inside plan creation, printed to
 * stderr (one line per plan) by tr_trace_flush: where host work and the
 * waits at read-backs go on small products, whose cost is not kernel time.
 * Costs one branch per mark when off. */
extern int tr_trace_on;
void tr_trace(const char *label);
void tr_trace_flush(const char *what);
#define TR_MARK(label) do { if (tr_trace_on) tr_trace(label); } while (0)

/* ---------------------------------------------------------------- memory */
/* Stream-ordered allocation from tilerap's device memory pool (plain
 * cudaMalloc where pools are unsupported).  0 bytes gives NULL.  Failure:
 * TILERAP_ERR_DEVICE_NOMEM naming the size and `what`. */
int tr_dalloc(void **p, size_t bytes, cudaStream_t s, const char *what);
void tr_dfree(void *p, cudaStream_t s);

/* Temporaries of one plan step, freed together (also on failure). */
typedef struct {
  void *p[40];
  int n;
  cudaStream_t s;
} tr_tmp;
int tr_tmp_alloc(tr_tmp *t, void **p, size_t bytes, const char *what);
void tr_tmp_free_all(tr_tmp *t);
/* p (a temporary of t) is handed over: tr_tmp_free_all leaves it; its new
 * owner frees it with tr_dfree.  An error if p is not one of t's. */
int tr_tmp_keep(tr_tmp *t, void *p);
/* tr_dfree is stream-ordered (a memory pool), so it never waits for the device */
int tr_dfree_is_async(void);

/* Pieces of one allocation: tr_piece(&size, bytes) returns the offset of
 * the next piece (256-byte aligned) and advances the size. */
static inline size_t tr_piece(size_t *size, size_t bytes)
{
  const size_t o = *size;
  *size += (bytes + 255) & ~(size_t)255;
  return o;
}

/* A group of device arrays made together.  Up to TR_GROUP_ONE_BLOCK bytes
 * they share one allocation: on small products, whose cost is host work,
 * every allocation counts.  Larger groups get one allocation per array:
 * single blocks of hundreds of MB fragmented the memory pool, which then
 * mapped new memory on every level-0 plan (0.7-2 ms at 200^3). */
#define TR_GROUP_MAX 16
#define TR_GROUP_ONE_BLOCK ((size_t)32 << 20)
typedef struct {
  size_t off[TR_GROUP_MAX], bytes[TR_GROUP_MAX], total;
  int n, overflow; /* overflow: more than TR_GROUP_MAX pieces asked for (tr_group_alloc fails) */
  void *p[TR_GROUP_MAX]; /* the allocations: p[0] alone for one block */
  int np;
} tr_group;
/* adds a piece of `bytes` bytes, returns its number */
static inline int tr_group_add(tr_group *g, size_t bytes)
{
  if (g->n >= TR_GROUP_MAX) { g->overflow = 1; return 0; }
  if (!bytes) bytes = 1; /* every piece has an address (CUB reads NULL storage as a size query) */
  g->bytes[g->n] = bytes;
  g->off[g->n] = tr_piece(&g->total, bytes);
  return g->n++;
}
/* allocates the pieces on stream s, as temporaries of t (t may be NULL:
 * the caller owns them, tr_group_free) */
int tr_group_alloc(tr_group *g, tr_tmp *t, cudaStream_t s, const char *what);
/* device pointer of piece i */
static inline void *tr_group_at(const tr_group *g, int i)
{
  if (g->total <= TR_GROUP_ONE_BLOCK) return g->p[0] ? (char *)g->p[0] + g->off[i] : NULL;
  return g->p[i];
}
/* the group's temporaries of t handed over to the caller */
int tr_group_keep(tr_tmp *t, const tr_group *g);
void tr_group_free(tr_group *g, cudaStream_t s);

/* Read-back of a few device bytes (at most TR_PINNED_SCRATCH) into dst:
 * one copy through the calling thread's pinned buffer, then a stream
 * synchronisation (a pageable destination would wait once per copy). */
#define TR_PINNED_SCRATCH 4096
int tr_readback(void *dst, const void *src, size_t bytes, cudaStream_t s, const char *what);

/* Host <-> device copies (tile_cuda_staging.cu): large ones through a
 * ring of pinned chunks.  tr_d2h returns once dst holds the data.  tr_h2d
 * orders the device copy on stream s; through the ring
 * (tr_stage_active(bytes)) it returns once src has been read, otherwise
 * (small copies, TILERAP_PINNED=0, no pinned memory) it has
 * cudaMemcpyAsync's semantics: from pinned memory src may still be read
 * after the return, and callers that promise reuse synchronise. */
int tr_h2d(void *dst, const void *src, size_t bytes, cudaStream_t s, const char *what);
int tr_d2h(void *dst, const void *src, size_t bytes, cudaStream_t s, const char *what);
int tr_stage_active(size_t bytes);

/* Device tile matrix -> sorted CSR in device arrays, queued on the legacy
 * stream (tile_cuda_to_csr.cu); any output may be NULL. */
int tr_cuda_tile_csr_walk(const tilerap_tile_matrix *T, double *cval, int32_t *rp32, int32_t *col);

/* Tile matrix arrays in one device block, allocated on stream s (tile_ptr
 * is the block's base). */
int tr_cuda_tile_alloc_on(tilerap_tile_matrix *T, cudaStream_t s);
/* Host header + device arrays of an m x n matrix with the given counts. */
int tr_cuda_tile_new(int32_t m, int32_t n, int64_t num_tiles, int64_t nnz, cudaStream_t s, tilerap_tile_matrix **T);
/* the structure of a tile matrix without tiles (tile_ptr and tile_off[0]
 * zero), launched on s; the caller checks the launch */
void tr_cuda_tile_empty_structure(tilerap_tile_matrix *T, cudaStream_t s);

/* Ordering with the legacy default stream, on which the copies run: for
 * a non-blocking stream s, `after_legacy` makes s wait for work queued on
 * the legacy stream and `legacy_after` the reverse.  No-ops otherwise. */
int tr_stream_nonblocking(cudaStream_t s);
/* multiprocessors of the current device (132, an H100's, if the query fails):
 * grid sizes that should fill the GPU */
int tr_cuda_sm_count(void);
int tr_order_after_legacy(cudaStream_t s);
int tr_order_legacy_after(cudaStream_t s);

/* ---------------------------------------------------------------- plan */
/* One hit: an entry x = A(r,k) of a pair's A tile whose row k of the B
 * tile is non-empty.  The numeric phase adds x * B(k,c) for every c of
 * that B row into the chunk's accumulator at
 *   loc + popcount(cmask & ((1 << c) - 1)),
 * cmask being C's row mask of row r (sparse accumulator, loc = tile slot
 * + row start) or 0xffff (dense 16x16 accumulator, loc = tile slot + 16r).
 * Precomputing all of it leaves a two-load chain per hit (the record,
 * then the A and B values) and makes the hits of a chunk one flat,
 * evenly shared loop. */
typedef struct {
  uint32_t a;     /* A value index of x */
  uint32_t b;     /* B value index of row k's first entry */
  uint32_t masks; /* B row mask | cmask << 16 */
  uint32_t loc;   /* accumulator slot base inside the chunk */
} tr_hit;

/* One tensor-core pair (step 2 classified it by its multiply-add count):
 * the warp that takes it expands A tile a and B tile b into MMA fragments
 * straight from their masks (fp64) or loads their packed low-precision
 * fragments, slots la and lb of the plan's converted tiles, and sums the
 * 16x16 product in registers, added into C tile u's accumulator (slot =
 * its base inside the chunk, bit 31 set when the tile uses the dense
 * 16x16 accumulator). */
typedef struct {
  int32_t a, b, u;
  uint32_t slot;
  int32_t la, lb; /* -1 in fp64 plans */
} tr_tc;
#define TR_TC_DENSE 0x80000000u

typedef struct {
  long long hit0, hit1;  /* hits [hit0, hit1) */
  long long acc0, acc1;  /* accumulator slots (prefix over all tiles) */
  long long tc0, tc1;    /* tensor-core pairs [tc0, tc1) */
  int32_t tile0, tile1;  /* C tiles [tile0, tile1); empty chunk: equal */
  int32_t dense;         /* 1 if a tile of the chunk uses the dense accumulator */
  int32_t pad;
} tr_chunk;

struct tr_cuda_spgemm {
  cudaStream_t stream;
  int nonblocking;
  int dense_threshold;
  int tc_threshold;  /* < 0: no tensor-core pairs */
  int precision;     /* tilerap_precision of tensor-core pairs (FP64 when the plan declined a low one) */
  /* Low-precision operands (spgemm_cuda_lowprec.cu): the A and B tiles
   * that tensor-core pairs read, numbered (slots), converted to packed
   * fragments once per numeric run before the pairs are multiplied. */
  struct {
    int64_t na, nb;      /* converted A and B tiles */
    int32_t *amap, *bmap; /* [A, B tiles] slot of a tile, -1: none */
    int32_t *alist, *blist; /* [na], [nb] tile of each slot */
    int32_t *aexp, *bexp; /* [na], [nb] scale exponent, TR_LP_UNFIT */
    unsigned long long *fallbacks; /* device counter of the last run */
    void *afrag, *bfrag; /* [na], [nb] x tr_frag_vecs x 32 uint4 */
    tr_group maps, frags;
  } lp;
  int64_t c_tiles, c_nnz, nhits, nchunks, ntc;
  int chunk_work;    /* hits + slots per chunk: TR_CHUNK_MIN .. TR_CHUNK_WORK */
  tr_group arrays;   /* the arrays below, to acc_loc, and the two chunk lists */
  tr_hit *hits;      /* [nhits] grouped by chunk, tile, pair */
  tr_tc *tcs;        /* [ntc] grouped by chunk, tile */
  tr_chunk *chunks;  /* [nchunks] */
  uint16_t *acc_loc; /* [c_tiles] slot of each tile inside its chunk */
  /* Plans with a few tensor-core pairs among many chunks (step 2 says
   * which): copies of the chunks that hold such pairs ([min(ntc,
   * nchunks)]) and of the others ([nchunks]), each list's tail empty
   * chunks.  The numeric run launches the tensor-core kernel on the first
   * and the hits-only kernel on the second: the first kernel's register
   * cap halves its occupancy, which the hits-only chunks need.  NULL: one
   * kernel takes every chunk. */
  tr_chunk *chunks_tc, *chunks_hits;
  /* Hits are made on a plan's second numeric run (spgemm_cuda_step3_pairs.cu
   * says why); until then the numeric phase walks the pair lists, which
   * the plan keeps from steps 1-2 (two groups, below; one-shot plans keep
   * them too, until they are destroyed).  One-shot plans (tilerap_spgemm,
   * tilerap_ptap) never make hits. */
  int one_shot;      /* plan of a one-shot product: no hits, ever */
  int structure_only; /* C's structure only (TR_RUNS_NEVER): no numeric phase */
  int defer_hits;     /* TR_RUNS_AFTER_FIRST: the first numeric run makes the hits (never walks) */
  int pairs_walk;    /* numeric runs walk the pairs (hits not made yet) */
  int64_t runs;      /* numeric runs so far */
  /* deferred plans: A's values are read through this permutation (device,
   * [nnz(A)]): the hits made on the first run take value index a_perm[q]
   * for A's entry q, so numeric runs take the permuted array's source in
   * place of A's values (P^T * AP reading P's values, not P^T's gathered
   * copy).  NULL: A's own values. */
  const int64_t *a_perm;
  int64_t np, ncap;  /* pairs; candidates (bound of the scan arrays) */
  /* kept from steps 1-2 until the hits exist: step 1's lists
   * (tr_cuda_cand.block) and step 2's kept group; the pointers below
   * point into them */
  tr_group lists, kept;
  int32_t *pair_a, *pair_b; /* [np] grouped by candidate, ascending k */
  int32_t *cand_ptr;        /* [ncand+1] */
  int32_t *cand_tile;       /* [ncap] C tile of each candidate, -1: dropped */
  int32_t *d_ncand;         /* device scalar */
  int32_t *pair_cand, *hloc; /* [np] for the deferred hits */
  void *scan;               /* [ncap+1] step 2's scan records (the deferred hits) */
};

/* Step 1 output: candidate tiles of C and their pairs, in one group
 * (block, temporaries of the plan step; the plan keeps them while its
 * numeric runs walk the pairs). */
/* step 1's paths (tr_cuda_cand.path) */
#define TR_PATH_SORTED 0     /* dense candidates: radix sort of all pairs on C tile numbers, or the row sort */
#define TR_PATH_ROWS_SMALL 1 /* a block sorts a tile row's pairs; lists sized by a host bound, no read-back */
#define TR_PATH_ROWS 2       /* the same after the pair count was read back */
typedef struct {
  int path;
  int64_t npairs;     /* host copy; -1 on the small row path (read back in step 2) */
  int32_t *pair_a;    /* [npairs] grouped by candidate, ascending k */
  int32_t *pair_b;    /* [npairs] */
  int32_t *pair_cand; /* [npairs] candidate tile of each pair (cand_late: written by step 2's masks kernel) */
  int32_t *cand_ptr;  /* [npairs+1] first pair of each candidate */
  int32_t *cand_col;  /* [npairs] tile column of each candidate */
  int32_t *row_cand;  /* [A->tile_rows+1] first candidate of each tile row */
  int32_t *d_ncand;   /* device scalar: number of candidates */
  tr_group block;     /* the arrays above */
  /* Row paths (spgemm_cuda_step1_rows.cu): candidates are numbered by
   * their first pair, *d_ncand = pairs, most of them empty.  d_stats:
   * pairs, most pairs of one tile row, whether the small row path could
   * take the product (pairs <= cap, every tile row sortable in a block)
   * (these three on the small row path only, 0 on the counted one), and
   * the true candidates (info).  Small row path: cap, the lists' capacity
   * in pairs, a bound made on the host, so that no pair count is read
   * back before step 2.  0 / NULL elsewhere. */
  int64_t cap;
  int64_t *d_stats;
  int cand_late; /* pair_cand not yet written: step 2's masks kernel writes it (the row sort) */
} tr_cuda_cand;

/* Row path bounds: the pairs of one tile row of A sorted in one block's
 * shared memory; products whose A has at most TR_ROW_PATH_A_TILES tiles
 * and whose pair bound is at most TR_ROW_PATH_PAIRS
 * (TILERAP_STEP1_SORT=radix: never).  A product the small row
 * path turns out not to fit (a longer tile row, more pairs than the bound)
 * is redone after reading the pair count back (the counted row path or the
 * radix sort): TR_STEP1_RETRY from step 2. */
#define TR_ROW_SORT_MAX 2048
#define TR_ROW_PATH_PAIRS 65536
#define TR_ROW_PATH_A_TILES 16384
#define TR_STEP1_RETRY (-1)
int64_t tr_cuda_step1_rows_capacity(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B);
int tr_cuda_step1_rows(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int64_t cap, tr_tmp *tmp,
                       tr_cuda_cand *c);
/* the row path with the pair offsets poff and count np read back, most
 * <= TR_ROW_SORT_MAX pairs in a tile row */
int tr_cuda_step1_rows_exact(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *poff,
                             int64_t np, int64_t most, tr_tmp *tmp, tr_cuda_cand *c);

/* The lists of the sorted path (pair_a .. d_ncand) for np pairs and TR
 * tile rows of A, in c->block (a plan that walks its pairs keeps it). */
int tr_step1_lists_alloc(tr_cuda_cand *c, int64_t np, int32_t TR, tr_tmp *tmp);
/* the pairs of every tile row sorted where the row is (a warp, or a
 * block for rows over 128 pairs), candidates numbered densely as on the
 * sorted path (TR_PATH_SORTED) but pair_cand left to step 2 (cand_late);
 * pair offsets poff and count np read back, most <= TR_ROW_SORT_MAX
 * pairs in a tile row */
int tr_cuda_step1_compact(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *poff,
                          int64_t np, int64_t most, tr_tmp *tmp, tr_cuda_cand *c);
/* whether the row sort suits a product (np pairs, TR tile rows, most in one) */
int tr_cuda_step1_compact_suits(int64_t np, int32_t TR, int64_t most);

/* counted: 1 reads the pair count back first (a retry after the small row path) */
int tr_cuda_step1_structure(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int counted, tr_tmp *tmp,
                            tr_cuda_cand *cand);
/* Step 2: masks, drop empty candidates, allocate C exactly, hits and
 * chunks into the plan.  *ncand_out, *pairs_out, *flops_out, *dense_out: info.
 * TR_STEP1_RETRY (no error recorded, nothing allocated for C): the small
 * row path of step 1 did not fit this product. */
int tr_cuda_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_cuda_cand *cand,
                        tr_tmp *tmp, struct tr_cuda_spgemm *plan, tilerap_tile_matrix **C, int64_t *ncand_out,
                        int64_t *pairs_out, int64_t *flops_out, int64_t *dense_out, int64_t *tc_out);
/* Step 2, deferred part: the hit records and tensor-core pairs, from
 * the pair lists the plan kept (launches only). */
int tr_cuda_step2_fill_hits(const struct tr_cuda_spgemm *plan, const tilerap_tile_matrix *A,
                            const tilerap_tile_matrix *B, const tilerap_tile_matrix *C);
/* Low-precision operands (spgemm_cuda_lowprec.cu).  At plan creation,
 * before the tensor-core pairs are written: numbers the A and B tiles
 * that pairs with hloc < 0 read (np pairs of the lists), allocates their
 * fragments, or keeps the plan in fp64 where converting would cost more
 * than the pairs save (plan->precision set to FP64). */
int tr_cuda_lowprec_plan(struct tr_cuda_spgemm *plan, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                         int64_t np, const int32_t *pair_a, const int32_t *pair_b, const int32_t *hloc, int64_t ntc);
/* At each numeric run, before step 3: the plan's tiles scaled, checked
 * against the format's range and packed (one launch). */
int tr_cuda_lowprec_convert(const struct tr_cuda_spgemm *plan, const tilerap_tile_matrix *A,
                            const tilerap_tile_matrix *B);
void tr_cuda_lowprec_free(struct tr_cuda_spgemm *plan);
/* Step 3: launches only (no allocation, no synchronisation). */
int tr_cuda_step3_numeric(const struct tr_cuda_spgemm *plan, const tilerap_tile_matrix *A,
                          const tilerap_tile_matrix *B, tilerap_tile_matrix *C);
/* Step 3 on the pair lists (first run of a plan; every run of a one-shot
 * plan): launches only. */
int tr_cuda_step3_pairs(const struct tr_cuda_spgemm *plan, const tilerap_tile_matrix *A,
                        const tilerap_tile_matrix *B, tilerap_tile_matrix *C);

/* AP = A * P by scatter (ptap_cuda_scatter_ap.cu): a_row[a] is the tile
 * row of A's tile a; AP zeroed, then summed with atomics, on stream s
 * (launches only). */
int tr_cuda_scatter_ap_launch(int64_t a_tiles, const int32_t *a_row, const tilerap_tile_matrix *A,
                              const tilerap_tile_matrix *P, tilerap_tile_matrix *AP, cudaStream_t s);

/* Device view of a tile matrix passed to kernels by value. */
typedef struct {
  const int64_t *tile_ptr;
  const int32_t *tile_col;
  const int64_t *tile_off;
  const uint8_t *row_ptr;
  const uint16_t *row_mask;
  const uint8_t *idx;
  const double *val;
} tr_dview;
static inline tr_dview tr_view(const tilerap_tile_matrix *T)
{
  tr_dview v = {T->tile_ptr, T->tile_col, T->tile_off, T->row_ptr, T->row_mask, T->idx, T->val};
  return v;
}

/* A tile's 16 row pointers held in registers (one 16-byte load where the
 * array is aligned for it, as the engine's own allocations always are;
 * otherwise 16 byte loads), instead of a dependent load per row visited;
 * row k's pointer is picked by a tree of selects, which keeps the words
 * in registers. */
static __device__ __forceinline__ void tr_tile_rowptr(const uint8_t *rp, int64_t t, bool vec, uint32_t w[4])
{
  const uint8_t *p = rp + 16 * t;
  if (vec) {
    const uint4 x = *(const uint4 *)p;
    w[0] = x.x; w[1] = x.y; w[2] = x.z; w[3] = x.w;
  } else {
#pragma unroll
    for (int i = 0; i < 4; i++)
      w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
  }
}
static __device__ __forceinline__ int tr_pick8(const uint32_t w[4], int k)
{
  const uint32_t b = (k & 8) ? ((k & 4) ? w[3] : w[2]) : ((k & 4) ? w[1] : w[0]);
  return (int)((b >> ((k & 3) << 3)) & 0xffu);
}
/* whether a device tile matrix's row pointers allow the 16-byte loads above */
static inline bool tr_vec_ok(const tilerap_tile_matrix *T)
{
  return ((uintptr_t)T->row_ptr % 16) == 0;
}

/* *mx = max(*mx, v) over a whole warp (every lane calls it): one atomic
 * per warp, since a million atomics on one address take a millisecond */
static __device__ __forceinline__ void tr_warp_atomic_max(unsigned v, unsigned long long *mx)
{
  v = __reduce_max_sync(0xffffffffu, v);
  if ((threadIdx.x & 31) == 0 && v) atomicMax(mx, (unsigned long long)v);
}

/* Ascending bitonic sort of key[0, n2) in shared memory by the whole
 * block (T threads, n2 a power of two, padding keys ~0); the caller
 * synchronises before. */
template <int T>
static __device__ __forceinline__ void tr_block_bitonic_sort(unsigned long long *key, int n2)
{
  for (int size = 2; size <= n2; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int t = threadIdx.x; t < n2 / 2; t += T) {
        const int i = 2 * t - (t & (stride - 1)), j = i + stride;
        const unsigned long long x = key[i], y = key[j];
        if ((x > y) == ((i & size) == 0)) { key[i] = y; key[j] = x; }
      }
      __syncthreads();
    }
}

/* Error jumps of host functions that free what they hold at a label
 * cleanup: (int err in scope) */
#define TR_TRY(call)                \
  do {                              \
    if ((err = (call))) goto cleanup; \
  } while (0)
#define TR_TRY_CU(call, what)                                                \
  do {                                                                       \
    cudaError_t e_ = (call);                                                 \
    if (e_ != cudaSuccess) { err = tr_cuda_error(e_, what); goto cleanup; } \
  } while (0)

/* Error returns of host functions that own nothing to clean up */
#define TR_RET_CU(call, what)                              \
  do {                                                     \
    cudaError_t e_ = (call);                               \
    if (e_ != cudaSuccess) return tr_cuda_error(e_, what); \
  } while (0)
#define TR_RET(call)  \
  do {                \
    int r_ = (call);  \
    if (r_) return r_; \
  } while (0)

/* First position in [lo, hi) of the ascending idx whose value is >= v
 * (hi if none). */
static __device__ __forceinline__ int64_t tr_lower_bound(const int32_t *idx, int64_t lo, int64_t hi, int32_t v)
{
  while (lo < hi) {
    const int64_t mid = (lo + hi) >> 1;
    if (idx[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Tile (I, J) of a device tile matrix: its index, -1 if there is none */
static __device__ __forceinline__ int64_t tr_find_tile(const int64_t *__restrict__ ctile_ptr,
                                                        const int32_t *__restrict__ ctile_col, int32_t I, int32_t J)
{
  const int64_t lo = ctile_ptr[I], hi = ctile_ptr[I + 1];
  const int64_t t = tr_lower_bound(ctile_col, lo, hi, J);
  return t < hi && ctile_col[t] == J ? t : -1;
}

/* last tile p in [lo, hi) with tile_off[p] <= q (tiles are never empty,
 * but equal offsets would still give the tile that holds q); the same
 * search finds the row of an entry in row pointers, or the tile row of a
 * tile in tile_ptr */
static __device__ __forceinline__ int64_t tr_tile_of_entry(const int64_t *__restrict__ tile_off, int64_t lo, int64_t hi,
                                                           int64_t q)
{
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) >> 1;
    if (tile_off[mid] <= q) lo = mid;
    else hi = mid;
  }
  return lo;
}

static inline unsigned tr_blocks(int64_t work, int per_block)
{
  return (unsigned)((work + per_block - 1) / per_block);
}
#endif
