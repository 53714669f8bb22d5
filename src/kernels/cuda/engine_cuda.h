/* Entry points of the CUDA engine (spgemm_cuda_*.cu), called by the
 * engine-neutral dispatch in tile_matrix.c, spgemm_plan.c and the
 * galerkin plan.  Only declared when the CUDA engine is compiled in. */
#ifndef TILERAP_ENGINE_CUDA_H
#define TILERAP_ENGINE_CUDA_H
#ifdef HAVE_CONFIG_H
#include "tilerap_config.h" /* defines TILERAP_HAVE_CUDA in CUDA builds */
#endif
#include "tile_internal.h" /* tr_plan_runs, tr_structure */
#ifdef __cplusplus
extern "C" {
#endif
#ifdef TILERAP_HAVE_CUDA
int tr_cuda_device_count(void);
/* the pool's bytes in use and their high-water mark (reset: the mark
 * restarts from what is in use now); TILERAP_ERR_ENGINE without a pool */
int tr_cuda_memory_stats(size_t *in_use, size_t *peak, int reset);
int tr_cuda_set_device(int dev); /* dev checked by the caller */
int tr_cuda_get_device(int *dev);
/* memory of tile matrices on the device */
int tr_cuda_tile_alloc(tilerap_tile_matrix *T);         /* arrays by counts in T */
void tr_cuda_tile_free(tilerap_tile_matrix *T);
int tr_cuda_tile_copy(const tilerap_tile_matrix *src, tilerap_tile_matrix *dst); /* any direction */
int tr_cuda_tile_copy_values(const tilerap_tile_matrix *src, tilerap_tile_matrix *dst);
/* structure hashes of n (1..3) device tile matrices (tile_structure.h)
 * without their sizes term: one kernel into n groups of *nwords device
 * words of partial sums (one allocation, no wait); the read-back and sum
 * of one group (waits) */
int tr_cuda_structure_hash_start(int n, const tilerap_tile_matrix *const *T, void **words, int *nwords);
int tr_cuda_structure_hash_read(const void *words, int nwords, uint64_t h[2]);

/* SpGEMM plan on the device: A, B device-resident; C allocated on the device. */
typedef struct tr_cuda_spgemm tr_cuda_spgemm;
/* runs: how the plan will be used (tr_plan_runs); ONCE and NEVER make no
 * hit records (spgemm_cuda_step3_pairs.cu) */
int tr_cuda_spgemm_plan(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                        const tilerap_options *opt, tr_plan_runs runs, tr_cuda_spgemm **plan, tilerap_tile_matrix **C,
                        tilerap_spgemm_info *info);
int tr_cuda_spgemm_numeric(tr_cuda_spgemm *plan, const tilerap_tile_matrix *A,
                           const tilerap_tile_matrix *B, tilerap_tile_matrix *C);
void tr_cuda_spgemm_destroy(tr_cuda_spgemm *plan);
/* low-precision pairs the plan's last numeric run multiplied in fp64
 * (waits for that run; 0 for plans without low-precision pairs) */
int tr_cuda_spgemm_lowprec_fallbacks(const tr_cuda_spgemm *plan, int64_t *n);
/* A deferred plan (TR_RUNS_AFTER_FIRST, no numeric run yet) reads A's values
 * through perm from then on (*taken = 1): numeric runs are given, as A, a
 * matrix of A's structure whose values are the array that A's were
 * gathered from (A->val[q] = src[perm[q]]).  perm must outlive the plan.
 * A plan with tensor-core pairs (they read A's tiles in place) keeps A's
 * own values (*taken = 0).  TILERAP_ERR_INVALID for any other plan. */
int tr_cuda_spgemm_read_a_through(tr_cuda_spgemm *plan, const int64_t *perm, int *taken);

/* Galerkin product by scatter (ptap_cuda_scatter*.cu): AP = A * P and
 * C = P^T (AP) from A's and P's own tiles, no P^T values, no hit records;
 * AP's and C's structures come from plans.  ap and run: launches only
 * (the output zeroed, then summed with atomics).  A may be NULL at
 * creation: then only C's scatter runs. */
typedef struct tr_cuda_scatter tr_cuda_scatter;
int tr_cuda_scatter_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *AP, void *stream,
                           tr_cuda_scatter **S);
int tr_cuda_scatter_ap(const tr_cuda_scatter *S, const tilerap_tile_matrix *A, const tilerap_tile_matrix *P,
                       tilerap_tile_matrix *AP);
int tr_cuda_scatter_run(const tr_cuda_scatter *S, const tilerap_tile_matrix *P, const tilerap_tile_matrix *AP,
                        tilerap_tile_matrix *C);
void tr_cuda_scatter_destroy(tr_cuda_scatter *S);

/* Galerkin halves by tile rows (ptap_cuda_rows.cu): Y = X * Z into a Y
 * whose structure a plan made, a tile row of Y summed in shared memory;
 * X's values are xval[xperm[q]] (xperm NULL: xval[q]), so P^T's structure
 * can take P's values through the transpose's permutation.  group: lanes
 * per row, 1 (a warp) or 8 (a block of 8 warps).  Launches only.
 * tr_cuda_rows_choose says whether Y = X * Z should take it: Z has fewer
 * than 2^18 tile columns (tr_cuda_rows_supported), and, unless min_items
 * < 0 (forced), the product has at least min_items items (X's entries
 * times Z's tiles per tile row) in rows of a shape that suits it (at most
 * 1024 items a row for a warp per row, at least 8 rows per SM for a
 * block) and whose longest row is not far beyond the rest (measured on
 * the device: one read-back).  *use: whether to take it; *group: the
 * group size (the tuning table's TILERAP_ROWS_GROUP=1|8 forces one). */
int tr_cuda_rows_supported(const tilerap_tile_matrix *Z);
int tr_cuda_rows_choose(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Z, double min_items, void *stream,
                        int *group, int *use);
/* exported for the tests */
TILERAP_EXPORT int tr_cuda_rows_product(const tilerap_tile_matrix *X, const double *xval, const int64_t *xperm,
                                        const tilerap_tile_matrix *Z, tilerap_tile_matrix *Y, int group, void *stream);

/* Tile transpose on the device with a value permutation (device array). */
int tr_cuda_tile_transpose(const tilerap_tile_matrix *T, tilerap_tile_matrix **Tt, int64_t **perm_dev,
                           void *stream);
int tr_cuda_gather_values(const double *src, const int64_t *perm, int64_t n, double *dst, void *stream);
/* tile_cuda_slots.cu, on the legacy default stream: slot[k] = position in
 * T->val of entry k of an m-row CSR (all device arrays), or -1; and
 * dst[map[q]] = src[q] where map[q] >= 0. */
int tr_cuda_tile_slots(const tilerap_tile_matrix *T, int32_t m, const int32_t *rowptr, const int32_t *colidx,
                       int64_t nnz, int64_t *slot);
int tr_cuda_scatter_values(const double *src, const int64_t *map, int64_t n, double *dst);
/* dst[map[q]] += src[q] where map[q] >= 0 (atomic: targets may repeat) */
int tr_cuda_scatter_add_values(const double *src, const int64_t *map, int64_t n, double *dst);

/* CSR <-> tile with the tile matrix on the device (tile_cuda_from_csr.cu,
 * tile_cuda_to_csr.cu); arguments checked by tile_convert_device.c.
 * One of rp64 / rp32 is non-NULL (or, for output, any of them may be). */
/* unsorted != 0: rows in any column order, sorted on the device first */
int tr_cuda_tile_from_csr(int32_t m, int32_t n, const int64_t *rp64, const int32_t *rp32, const int32_t *colidx,
                          const double *val, tilerap_memtype csr_mem, int unsorted, tilerap_tile_matrix **T);
/* diag_first: square T, every row's diagonal entry moved to the front
 * (hypre's layout); a row without one gives TILERAP_ERR_STRUCTURE before
 * any output is written (colidx must then be given). */
int tr_cuda_tile_to_csr(const tilerap_tile_matrix *T, int64_t *rp64, int32_t *rp32, int32_t *colidx, double *val,
                        tilerap_memtype csr_mem, int diag_first);
int tr_cuda_tile_values_to_csr(const tilerap_tile_matrix *T, double *val, tilerap_memtype val_mem);
int tr_cuda_tile_values_from_csr(tilerap_tile_matrix *T, const double *val, tilerap_memtype val_mem);
/* The CSR path (csr_cuda_view.cu, csr_cuda_product.cu), as on the CPU
 * (spgemm_cpu.h) except: view rows come in no order; C's position map is
 * made apart (tr_cuda_csr_positions, for T's sorted CSR rp/col); create
 * also gives the multiply-adds; fill and numeric are launches on the
 * product's stream. */
int tr_cuda_csr_view(const tilerap_tile_matrix *T, int transpose, void *stream, int64_t **rp, int32_t **col,
                     int64_t **vidx);
int tr_cuda_csr_positions(const tilerap_tile_matrix *T, const int64_t *rp, const int32_t *col, void *stream,
                          int64_t **pos);
typedef struct tr_cuda_csr_product tr_cuda_csr_product;
int tr_cuda_csr_product_create(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, int64_t annz,
                               const int64_t *brp, const int32_t *bcol, void *stream, tr_cuda_csr_product **P,
                               int64_t *cnnz, int64_t *macs);
const int64_t *tr_cuda_csr_product_rowptr(const tr_cuda_csr_product *P);
const int32_t *tr_cuda_csr_product_colidx(const tr_cuda_csr_product *P);
int tr_cuda_csr_product_fill(tr_cuda_csr_product *P, const double *aval, const int64_t *avidx,
                             const double *bval, const int64_t *bvidx, double *cval, int sorted);
int tr_cuda_csr_product_numeric(tr_cuda_csr_product *P, const double *aval, const int64_t *avidx,
                                const double *bval, const int64_t *bvidx, double *cval, const int64_t *cvidx);
/* re-runs from a record of each C entry's products (*kept: 1 if kept; it
 * needs C's rows filled sorted; annz, bnnz: the operands' value counts) */
int tr_cuda_csr_product_keep_record(tr_cuda_csr_product *P, int64_t annz, int64_t bnnz, int *kept);
/* the multiply-adds its record holds (0: none) and the record's device bytes */
int64_t tr_cuda_csr_product_recorded(const tr_cuda_csr_product *P, int64_t *bytes);
void tr_cuda_csr_product_destroy(tr_cuda_csr_product *P);
/* Device CSR operands with 32-bit row pointers (csr_cuda_device_operands.cu),
 * all on the legacy stream: checks with 64-bit row pointers and the
 * longest row; the transposed operand as a view; C's sorted CSR written
 * into the caller's arrays (diag_first: hypre's layout, map: where each
 * entry went); a view with its values as the caller's CSR. */
typedef struct {
  const char *name;           /* for messages */
  int32_t m, n;
  const int32_t *rp, *col;
  int64_t nnz, longest, *rp64; /* out; rp64 freed with tr_cuda_free */
} tr_dcsr_op;
int tr_cuda_dcsr_operands(tr_dcsr_op *ops, int count); /* at most 4, one wait */
/* each operand's entries per stored 16 x 16 tile, estimated on a sample
 * of tile rows (0: not counted), one wait */
int tr_cuda_dcsr_fills(const tr_dcsr_op *ops, int count, double *fill);
/* the longest row alone, unchecked (tile_cuda_from_csr.cu: the conversions' own test) */
int tr_cuda_csr_longest_row_i32(int32_t m, const int32_t *rp, int64_t *longest);
int tr_cuda_dcsr_transpose(int32_t m, int32_t n, const int64_t *rp64, const int32_t *col, int64_t nnz, int64_t **trp,
                           int32_t **tcol, int64_t **tvidx);
int tr_cuda_dcsr_write(int32_t m, int64_t nnz, const int64_t *rp64, const int32_t *col, const double *val,
                       int diag_first, int32_t *orp, int32_t *ocol, double *oval, int64_t *map);
int tr_cuda_dcsr_view_write(int32_t m, int64_t nnz, const int64_t *rp64, const int32_t *col, const int64_t *vidx,
                            const double *val, int32_t *orp, int32_t *ocol, double *oval);
/* y = V x (+ z) for a view (rows rp64, columns col, values val[vidx]) of m
 * rows, lanes (4, 8, 16 or 32) per row; launches only */
int tr_cuda_dcsr_view_mult(int32_t m, const int64_t *rp64, const int32_t *col, const int64_t *vidx,
                           const double *val, int lanes, const double *x, const double *z, double *y);
/* C from its own sorted device CSR (no validation: the product made it) */
int tr_cuda_tile_from_own_csr(int32_t m, int32_t n, const int64_t *rp, const int32_t *colidx, const double *val,
                              void *stream, tilerap_tile_matrix **T);
TILERAP_EXPORT void tr_cuda_free(void *p); /* exported for the tests */
int tr_cuda_malloc(size_t bytes, void **p);
/* the legacy stream's work complete (what: names the step in an error) */
int tr_cuda_wait(const char *what);
/* any direction; returns when dst holds the data (device_buffers.c) */
int tr_cuda_memcpy(void *dst, tilerap_memtype dst_mem, const void *src, tilerap_memtype src_mem, size_t bytes);
/* wrapping sum of tr_fp_entry over the entries, and their count */
int tr_cuda_csr_fingerprint(int32_t m, const int32_t *rowptr, const int32_t *colidx, const double *val,
                            int ordered, uint64_t *sum, int64_t *nnz);
/* tilerap_ptap_csr_encounter_order_device_i32, arguments checked */
int tr_cuda_ptap_encounter_order(const tilerap_tile_matrix *C, int32_t na, const int32_t *a_rowptr,
                                 const int32_t *a_colidx, const int32_t *p_rowptr, const int32_t *p_colidx,
                                 int diag_first, int32_t *rowptr, int32_t *colidx, double *val, int64_t *unreached);
/* tilerap_csr_graph_device_i32 (graph_cuda.cu), arguments other than the arrays checked */
int tr_cuda_csr_graph(int32_t m, int32_t bs, const int32_t *rp, const int32_t *col, const double *val,
                      unsigned flags, int32_t **g_rp, int32_t **g_col, double **g_val, int64_t *g_nnz);
#endif
#ifdef __cplusplus
}
#endif
#endif
