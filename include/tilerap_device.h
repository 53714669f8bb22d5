/*
 * tilerap_device.h -- the CUDA engine's device side of the core API:
 * devices, tile matrices in device memory and their CSR conversions,
 * device buffers and copies.  Every call exists in every build; without
 * CUDA, or without a visible GPU, they return TILERAP_ERR_ENGINE.
 */
#ifndef TILERAP_DEVICE_H
#define TILERAP_DEVICE_H
#include "tilerap.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Devices of the CUDA engine                                          */
/* ------------------------------------------------------------------ */
/* One device per calling thread (CUDA's current device): device matrices,
 * plans and the engine's memory pool belong to the device that was current
 * when they were created and must be used with that device current.  MPI
 * programs run one rank per GPU: MATMPITILE and the hypre hook pick
 * (node-local rank) mod (device count) themselves (see README). */

/* Number of CUDA devices visible to the process; 0 in a CPU-only build or
 * without a GPU. */
TILERAP_EXPORT int tilerap_device_count(void);
/* Makes device dev (0 <= dev < tilerap_device_count()) current for the
 * calling thread.  TILERAP_ERR_ENGINE in a CPU-only build or without a GPU,
 * TILERAP_ERR_RANGE for another dev. */
TILERAP_EXPORT int tilerap_set_device(int dev);
/* Current device of the calling thread; TILERAP_ERR_ENGINE (and *dev = -1)
 * in a CPU-only build or without a GPU. */
TILERAP_EXPORT int tilerap_get_device(int *dev);

/* The same conversions with the tile matrix in device memory, built and
 * read on the device by the CUDA engine (src/kernels/cuda/tile_cuda_*_csr.cu).
 * The CSR arrays live in memory csr_mem (host arrays are uploaded or
 * downloaded through tilerap's pinned staging chunks, see README; device
 * arrays are used in place).  Same
 * validation and error codes as the host versions, checked on the device;
 * a failed call leaves no matrix behind and writes no output array.  Work
 * runs on the legacy default stream; calls writing host arrays return when
 * the arrays are complete.  A build without CUDA, or no visible GPU, gives
 * TILERAP_ERR_ENGINE.
 *
 * CSR -> tile sorts entries on the device where a row has more than 64
 * entries (TILERAP_CONVERT in doc/tuning.md); that path takes fewer than
 * 2^31 entries (TILERAP_ERR_OVERFLOW otherwise).
 *
 * A device tile matrix made by tilerap_tile_from_csr_device from host
 * arrays, or given to tilerap_tile_to_csr_device with host arrays, keeps a
 * device staging buffer of nnz values (freed with the matrix), so that the
 * values-only calls below with host arrays allocate nothing. */
TILERAP_EXPORT int tilerap_tile_from_csr_device(int32_t m, int32_t n, const int64_t *rowptr,
                                 const int32_t *colidx, const double *val,
                                 tilerap_memtype csr_mem, tilerap_tile_matrix **T);
TILERAP_EXPORT int tilerap_tile_from_csr_device_i32(int32_t m, int32_t n, const int32_t *rowptr,
                                     const int32_t *colidx, const double *val,
                                     tilerap_memtype csr_mem, tilerap_tile_matrix **T);
/* Values-only refresh of a device tile matrix from the values (CSR order)
 * of a CSR with exactly the structure T was built from; val in memory
 * val_mem.  No allocation (see above), no structure check. */
TILERAP_EXPORT int tilerap_tile_update_values_from_csr_device(tilerap_tile_matrix *T, const double *val,
                                               tilerap_memtype val_mem);
/* Device tile matrix -> CSR arrays in memory csr_mem (rowptr[m+1],
 * colidx[nnz], val[nnz]; any may be NULL to skip it).  The _i32 variant
 * refuses matrices of 2^31 entries or more (TILERAP_ERR_OVERFLOW). */
TILERAP_EXPORT int tilerap_tile_to_csr_device(const tilerap_tile_matrix *T, int64_t *rowptr, int32_t *colidx,
                               double *val, tilerap_memtype csr_mem);
TILERAP_EXPORT int tilerap_tile_to_csr_device_i32(const tilerap_tile_matrix *T, int32_t *rowptr,
                                   int32_t *colidx, double *val, tilerap_memtype csr_mem);
/* Values only, in the CSR order of tilerap_tile_to_csr_device (numeric
 * re-runs: the structure is already in place).  No allocation. */
TILERAP_EXPORT int tilerap_tile_to_csr_values_device(const tilerap_tile_matrix *T, double *val,
                                      tilerap_memtype val_mem);

/* Device buffers for callers that keep arrays on the GPU between calls
 * (the hypre hook keeps each level's product there as the next level's
 * operand).  Memory of the current device from tilerap's stream-ordered
 * pool; tilerap_memcpy copies between any two of host and device memory
 * (host sides through the pinned staging chunks).  On return src may be
 * reused, a host dst holds the data, and a device dst holds it for every
 * later tilerap call (the copies and the engine share the legacy default
 * stream).  Without CUDA or a visible GPU: TILERAP_ERR_ENGINE. */
TILERAP_EXPORT int tilerap_device_malloc(size_t bytes, void **p);
TILERAP_EXPORT void tilerap_device_free(void *p);
TILERAP_EXPORT int tilerap_memcpy(void *dst, tilerap_memtype dst_mem, const void *src, tilerap_memtype src_mem,
                   size_t bytes);
/* Values-only refreshes between a caller's CSR layout and a tile matrix
 * of the same (or a containing) structure, device arrays, on tilerap's
 * stream after the work before it; no allocation.  TILERAP_ERR_ENGINE
 * without CUDA or a visible GPU.
 * slots: slot[k] = position in T->val of entry k (0 <= k < nnz) of the
 * m-row CSR (int32 row pointers and columns, rows in any column order),
 * or -1 where T stores no such entry; T on the device, m = T->m.
 * gather: dst[q] = src[perm[q]] for q < n, 0 where perm[q] < 0.
 * scatter: dst[map[q]] = src[q] for q < n where map[q] >= 0 (distinct).
 * scatter_add: dst[map[q]] += src[q] where map[q] >= 0; targets may
 * repeat (atomic adds: the order of a target's additions is not fixed). */
TILERAP_EXPORT int tilerap_tile_slots_device_i32(const tilerap_tile_matrix *T, int32_t m, const int32_t *rowptr,
                                                 const int32_t *colidx, int64_t nnz, int64_t *slot);
TILERAP_EXPORT int tilerap_device_gather_values(int64_t n, const int64_t *perm, const double *src, double *dst);
TILERAP_EXPORT int tilerap_device_scatter_values(int64_t n, const int64_t *map, const double *src, double *dst);
TILERAP_EXPORT int tilerap_device_scatter_add_values(int64_t n, const int64_t *map, const double *src, double *dst);
/* Bytes of the current device's memory that tilerap's allocations (its
 * pool: tile matrices, plans, temporaries) hold now, and the most they
 * held since the last tilerap_device_memory_reset_peak (or since the
 * start); either pointer may be NULL.  TILERAP_ERR_ENGINE without CUDA, a
 * visible GPU or stream-ordered memory pools. */
TILERAP_EXPORT int tilerap_device_memory(size_t *in_use, size_t *peak);
TILERAP_EXPORT int tilerap_device_memory_reset_peak(void);

/* tilerap_csr_graph_i32 (tilerap.h) on the device: A's CSR arrays and
 * G's in device memory; G's three arrays (m/bs + 1 row pointers, *g_nnz
 * columns and values) are allocated here from tilerap's pool, free each
 * with tilerap_device_free.  The same graph, bit for bit, as the CPU
 * engine's.  Work on the legacy default stream; returns when G is
 * complete and A's arrays are no longer read.  At most 2^30 - 1 entries
 * with TILERAP_GRAPH_SYMMETRIZE, 2^31 - 1 without (TILERAP_ERR_OVERFLOW).
 * Without CUDA or a visible GPU: TILERAP_ERR_ENGINE. */
TILERAP_EXPORT int tilerap_csr_graph_device_i32(int32_t m, int32_t bs, const int32_t *rowptr, const int32_t *colidx,
                                                const double *val, unsigned flags, int32_t **g_rowptr,
                                                int32_t **g_colidx, double **g_val, int64_t *g_nnz);

/* ------------------------------------------------------------------ */
/* Products of device CSR matrices (CUDA engine, no tile form)          */
/* ------------------------------------------------------------------ */
/* For callers whose matrices are device CSR with 32-bit indices (hypre's
 * device ParCSR blocks, PETSc's AIJCUSPARSE): the CSR path's row-wise
 * products straight on the caller's device arrays, C written into arrays
 * the caller allocates (its own allocator, its own layout).  A product
 * made once costs less this way than through the tile plans, whose
 * conversions each way are a third of such a product (BENCHMARKS.md 3b).
 * Rows of A and B may come in any column order (hypre keeps the diagonal
 * first); a column repeated within a row counts as the sum of its
 * entries.  Work on the legacy default stream; each call returns when its
 * work is complete. */
typedef struct {
  int32_t m, n;          /* shape                                          */
  const int32_t *rowptr; /* m + 1 device row pointers, rowptr[0] = 0      */
  const int32_t *colidx; /* rowptr[m] device column indices in [0, n)      */
  const double *val;     /* rowptr[m] device values, or NULL (C's values 0) */
} tilerap_csr_device_i32;
typedef struct tilerap_csr_device_product_s *tilerap_csr_device_product;
/* tilerap_csr_device_product_create_i32 flags */
#define TILERAP_CSR_REUSE 2u /* numeric runs will follow: keep what they need (a record of each C entry's products where it fits) */
/* tilerap_csr_device_product_fill_i32 flags */
#define TILERAP_CSR_DIAG_FIRST 1u /* C square, each row's diagonal entry first, the rest ascending (hypre's layout) */

/* The symbolic product of C = A*B, A^T*B or B^T*A*B (tilerap_csr_kind of
 * tilerap.h; P^T A P with B = P, A square): checks the operands (row
 * pointers, column ranges: TILERAP_ERR_INVALID / TILERAP_ERR_RANGE naming
 * the row), builds what the product needs and gives C's entry count.  The
 * operands' arrays, structure and values, must stay as they are until
 * tilerap_csr_device_product_fill has run: a P^T A P product computes A P
 * here.  flags: 0 or TILERAP_CSR_REUSE.  Without CUDA or a GPU:
 * TILERAP_ERR_ENGINE. */
TILERAP_EXPORT int tilerap_csr_device_product_create_i32(tilerap_csr_kind kind, const tilerap_csr_device_i32 *A,
                                                         const tilerap_csr_device_i32 *B, unsigned flags,
                                                         tilerap_csr_device_product *X, int64_t *c_nnz);
/* C into the caller's device arrays: c_rowptr[C.m + 1], c_colidx and
 * c_val[c_nnz] (c_val NULL: structure only); rows sorted, or in hypre's
 * layout with flags TILERAP_CSR_DIAG_FIRST (C not square:
 * TILERAP_ERR_SIZE; a row without a diagonal entry: TILERAP_ERR_STRUCTURE
 * naming it; both before any output is written, and the product may then
 * be filled again without the flag).  A and B must be the operands given
 * to create (same arrays and shapes, else TILERAP_ERR_STRUCTURE).  Once
 * per product (TILERAP_ERR_INVALID after). */
TILERAP_EXPORT int tilerap_csr_device_product_fill_i32(tilerap_csr_device_product X, const tilerap_csr_device_i32 *A,
                                                       const tilerap_csr_device_i32 *B, unsigned flags,
                                                       int32_t *c_rowptr, int32_t *c_colidx, double *c_val);
/* C's values, in the layout of the fill, for the operands' current values
 * (a product created with TILERAP_CSR_REUSE and filled; else
 * TILERAP_ERR_INVALID); both operands need values (TILERAP_ERR_NULL; NULL
 * is taken for an operand without entries), in
 * the arrays given here (they may differ from create's).  Their structure
 * must be the product's: the same structure arrays and shapes are checked
 * (TILERAP_ERR_STRUCTURE), their contents are not (callers track
 * structure changes, as PETSc's nonzerostate does).  Queued on the legacy
 * stream: no allocation, no wait for the device. */
TILERAP_EXPORT int tilerap_csr_device_product_numeric_i32(tilerap_csr_device_product X, const tilerap_csr_device_i32 *A,
                                                          const tilerap_csr_device_i32 *B, double *c_val);
/* The transposed operand the product made (A^T for A^T*B, B^T for
 * B^T*A*B; TILERAP_ERR_INVALID for A*B) with the operand's values (those
 * of the last numeric run's arrays, else create's; val NULL or an operand
 * without values: no values written):
 * rowptr[rows + 1], colidx and val[its entries], each row ascending (what
 * hypre keeps as a ParCSR matrix's stored transpose). */
TILERAP_EXPORT int tilerap_csr_device_product_transpose_i32(tilerap_csr_device_product X, int32_t *rowptr,
                                                            int32_t *colidx, double *val);
/* C's shape, entries, 2 * the multiply-adds, and the longest row of A (any may be NULL) */
TILERAP_EXPORT int tilerap_csr_device_product_info(tilerap_csr_device_product X, int32_t *c_m, int32_t *c_n,
                                                   int64_t *c_nnz, int64_t *flops, int64_t *a_longest_row);
/* What its numeric runs re-run from records (a product made with
 * TILERAP_CSR_REUSE keeps them where they pay: products that sum few
 * multiply-adds per C entry, or narrow rows; the others re-run from hash
 * tables): the multiply-adds recorded (0: none; at most the flops / 2 of
 * tilerap_csr_device_product_info) and the device bytes the records hold
 * (either may be NULL) */
TILERAP_EXPORT int tilerap_csr_device_product_record_info(tilerap_csr_device_product X, int64_t *recorded_macs,
                                                          int64_t *record_bytes);
/* How the product multiplies: TILERAP_PATH_CSR (rows of the CSR arrays)
 * or TILERAP_PATH_TILES (a P^T A P made with TILERAP_CSR_REUSE whose
 * operands fill their 16 x 16 tiles densely, or any P^T A P under
 * TILERAP_PATH=tiles: A and P converted, a tile plan, C written back;
 * numeric runs through slot maps), and the operands' entries per stored
 * tile that chose it (estimated on a sample of tile rows; 0 where not
 * measured).  Any output may be NULL. */
TILERAP_EXPORT int tilerap_csr_device_product_path(tilerap_csr_device_product X, tilerap_path *path, double *a_fill,
                                                   double *b_fill);
TILERAP_EXPORT void tilerap_csr_device_product_destroy(tilerap_csr_device_product *X);
/* The path a product made once of these device operands takes: CSR (the
 * calls above, which take dense P^T A P over tiles themselves) or TILES
 * (tilerap_tile_from_csr_device, the tile plans and back), by
 * TILERAP_PATH: CSR for "auto" (the default) and "csr", TILES for
 * "tiles".  *a_longest_row (optional; NULL: no work on the device) is
 * the longest row of A, read from its row pointers, unchecked (waits for
 * the device). */
TILERAP_EXPORT int tilerap_csr_device_path_i32(tilerap_csr_kind kind, const tilerap_csr_device_i32 *A,
                                               const tilerap_csr_device_i32 *B, tilerap_path *path,
                                               int64_t *a_longest_row);

/* Products of A's transpose with a vector on the device, for a restriction
 * y = P^T x (+ z) in a multigrid cycle: A's transpose as a view made once
 * for A's structure (rows of A^T, each entry's position in A's values),
 * then each product reads A's current values through it, a few lanes per
 * row of A^T summing in a fixed order (no atomics: the same result on
 * every call).  x has A->m entries, y and z (optional, may be y) A->n.
 * Runs on the legacy default stream and returns without waiting; A's
 * shape and structure arrays must be those given to create
 * (TILERAP_ERR_STRUCTURE otherwise: create again). */
typedef struct tilerap_csr_device_transpose_s *tilerap_csr_device_transpose;
TILERAP_EXPORT int tilerap_csr_device_transpose_create_i32(const tilerap_csr_device_i32 *A,
                                                           tilerap_csr_device_transpose *T);
TILERAP_EXPORT int tilerap_csr_device_transpose_mult_i32(tilerap_csr_device_transpose T,
                                                         const tilerap_csr_device_i32 *A, const double *x,
                                                         const double *z, double *y);
TILERAP_EXPORT void tilerap_csr_device_transpose_destroy(tilerap_csr_device_transpose *T);

#ifdef __cplusplus
}
#endif
#endif /* TILERAP_DEVICE_H */
