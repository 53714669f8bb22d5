/*
 * tilerap.h -- core C API of tilerap: sparse 16x16 tile matrices, the
 * three-step tiled SpGEMM (C = A*B) and the Galerkin product C = P^T A P,
 * both split into a plan (symbolic work, done once) and a numeric phase
 * (re-run whenever values change, no allocation).
 *
 * Depends on nothing but C99.  tilerap_device.h adds the device side
 * (devices, tile matrices in device memory, buffers), tilerap_csr_layouts.h
 * the CSR layouts that the hypre hook hands back; the PETSc and hypre
 * integrations sit on top (tilerap_petsc.h, tilerap_hypre.h).
 *
 * Conventions
 *   - Every function that can fail returns an int error code
 *     (TILERAP_SUCCESS == 0); tilerap_last_error() gives a message for the
 *     most recent failure of the calling thread.
 *   - Row/column/tile indices are int32_t; entry counts, offsets and
 *     intermediate-product counts are int64_t.
 *   - Values are double (fp64).
 */
#ifndef TILERAP_H
#define TILERAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's exported symbols: the public API alone (it is built with
 * hidden visibility). */
#if defined(__GNUC__) && __GNUC__ >= 4
#define TILERAP_EXPORT __attribute__((visibility("default")))
#else
#define TILERAP_EXPORT
#endif

#define TILERAP_VERSION_MAJOR 0
#define TILERAP_VERSION_MINOR 1
#define TILERAP_VERSION_PATCH 0

/* Tile edge: indices inside a tile fit in 4 bits, row masks in 16 bits. */
#define TILERAP_TILE 16

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */
typedef enum {
  TILERAP_SUCCESS = 0,
  TILERAP_ERR_NULL = 1,      /* a required pointer argument is NULL           */
  TILERAP_ERR_SIZE = 2,      /* dimensions do not match / negative sizes       */
  TILERAP_ERR_UNSORTED = 3,  /* CSR column indices not strictly increasing     */
  TILERAP_ERR_RANGE = 4,     /* an index lies outside its dimension            */
  TILERAP_ERR_INVALID = 5,   /* inconsistent arguments (row pointers, masks..) */
  TILERAP_ERR_NOMEM = 6,     /* host allocation failed                         */
  TILERAP_ERR_OVERFLOW = 7,  /* a count exceeds what the format can index      */
  TILERAP_ERR_STRUCTURE = 8, /* numeric phase called with another structure    */
  TILERAP_ERR_ENGINE = 9,    /* requested engine not available                 */
  TILERAP_ERR_MEMTYPE = 10,  /* matrix lives in the wrong memory for the call  */
  TILERAP_ERR_CUDA = 11,     /* CUDA runtime / launch failure                  */
  TILERAP_ERR_DEVICE_NOMEM = 12 /* device allocation failed                    */
} tilerap_error;

/* Static description of an error code. */
TILERAP_EXPORT const char *tilerap_error_string(int err);
/* Detailed message of the calling thread's most recent failure ("" if none). */
TILERAP_EXPORT const char *tilerap_last_error(void);

/* ------------------------------------------------------------------ */
/* Engines and options                                                 */
/* ------------------------------------------------------------------ */
typedef enum {
  TILERAP_ENGINE_AUTO = 0, /* CUDA when built with it and a GPU is present   */
  TILERAP_ENGINE_CPU = 1,  /* C + OpenMP                                      */
  TILERAP_ENGINE_CUDA = 2
} tilerap_engine;

typedef enum {
  TILERAP_MEM_HOST = 0,
  TILERAP_MEM_DEVICE = 1 /* CUDA device memory of the current device */
} tilerap_memtype;

/* Operand precision of the tensor-core products (CUDA engine).  Low
 * precisions are opt-in: each A and B tile of a tensor-core pair is scaled
 * by a power of two (its largest magnitude just below 2^15 for fp16, 2^31
 * for bf16/tf32: nothing overflows), rounded to nearest-even to the low
 * precision once per numeric run, multiplied with fp32 accumulation, and
 * the pair's product is scaled back and summed in fp64.
 * Never silently wrong: a tile whose non-zero magnitudes span more than
 * 2^28 (fp16) or 2^93 (bf16, tf32), or that holds an inf or NaN, would
 * lose entries in the format; every pair reading it is multiplied in fp64
 * instead and counted (tilerap_spgemm_info.lowprec_fallbacks).  Bound, for
 * every entry of C = A B:
 *   |C_computed - C_exact| <= g * (|A| |B|)_ij,
 *   g = 2^-10 + 2^-16 (tf32, fp16: 11-bit significands), 2^-7 + 2^-13 (bf16)
 * (two roundings of 2^-p each, plus fp32 accumulation of 16 exact products).
 * Relative to C itself the error is larger where |A||B| >> |C| (sums that
 * cancel: Laplacian-like Galerkin products); a Galerkin product P^T A P
 * with both halves in low precision: (2g + g^2) (|P|^T |A| |P|)_ij.
 * A plan takes the low precision only where its pairs reuse each converted
 * tile at least TILERAP_CUDA_LOWPREC_REUSE times (default 8: below that it
 * was not faster than fp64 on the H100), else keeps fp64
 * (tilerap_spgemm_info.lowprec_pairs = 0).  The CPU engine is always fp64. */
typedef enum {
  TILERAP_PRECISION_FP64 = 0, /* default: fp64 tensor cores (DMMA), results as the fp64 path */
  TILERAP_PRECISION_TF32 = 1, /* 11-bit significand, fp32 range */
  TILERAP_PRECISION_BF16 = 2, /* 8-bit significand, fp32 range */
  TILERAP_PRECISION_FP16 = 3  /* 11-bit significand, 5-bit exponent */
} tilerap_precision;

/* Numeric kernel of the CPU engine.  Both sum every entry's products in
 * the same order, so they give identical results; they differ in speed
 * and plan memory (BENCHMARKS.md section 6). */
typedef enum {
  TILERAP_CPU_KERNEL_AUTO = 0,    /* tuning knob TILERAP_CPU_KERNEL=tiles|recorded, else
                                     RECORDED when its records take at most twice the
                                     memory of the values of A, B and C (4 bytes per
                                     multiply-add, 8 per entry), else TILES */
  TILERAP_CPU_KERNEL_TILES = 1,   /* per C tile, each (A tile, B tile) pair walks A's
                                     entries and B's rows into a sparse or dense 16x16
                                     accumulator; nothing stored beyond the pair lists */
  TILERAP_CPU_KERNEL_RECORDED = 2 /* a numeric run records every scalar product as
                                     its three positions (A, B, C entry inside their
                                     tiles, one byte each); later runs are a straight
                                     stream, 1.7-1.9x faster on AMG products, at 4 bytes
                                     per multiply-add of plan memory.  AUTO records
                                     on a plan's second run, RECORDED on its first */
} tilerap_cpu_kernel;

/* tilerap_options.tc_threshold: the plan chooses per product (the default) */
#define TILERAP_TC_AUTO 2147483647

typedef struct {
  tilerap_engine engine; /* AUTO: tuning knob TILERAP_ENGINE=cpu|cuda|auto, then probe */
  int dense_threshold;   /* C tiles with more entries use the dense 16x16
                            accumulator, others the sparse one; default 192 */
  void *stream;          /* cudaStream_t for the CUDA engine; NULL = default */
  int tc_threshold;      /* CUDA engine: (A tile, B tile) pairs with at least
                            this many scalar multiply-adds (0..4096) are
                            multiplied on tensor cores, the others by CUDA
                            cores; negative = tensor cores off.  Default
                            TILERAP_TC_AUTO: each product takes 256 where a
                            tile pair of its operands carries 150 or more on
                            average (fill(A) * fill(B) / 16, fill = entries
                            per tile), else 512.  Measured on the H100
                            (BENCHMARKS.md section 5): dense-tile products
                            25-55x faster than without; dense coarse levels
                            up to 2.6x faster at 256 than at 512; fine levels
                            of block and high-order operators (elasticity,
                            125-point) 25 % slower at 256 than without, and
                            not at 512.
                            The CPU engine ignores it (always fp64). */
  tilerap_precision precision; /* operands of tensor-core pairs; default FP64 */
  tilerap_cpu_kernel cpu_kernel; /* CPU engine's numeric kernel; default AUTO */
  int plan_values;       /* 1: plan creation also sets C's values from A's and
                            B's current ones, so a first product needs no
                            numeric call (the run counts as the plan's first:
                            AUTO records on the next).  The CPU engine then
                            does steps 2 and 3 in one walk, same bits (on one
                            core 11-16 % less time than plan + numeric on the
                            3D Poisson hierarchies); the CUDA engine runs its
                            numeric phase at the end of the plan.
                            0 (default): C's values are undefined until the
                            first numeric call.  The one-shot products use 1. */
} tilerap_options;

/* Fills *opt with the defaults (AUTO engine, dense threshold 192, tensor
 * cores from 256 multiply-adds a pair, fp64, CPU kernel AUTO, plan_values 0). */
TILERAP_EXPORT void tilerap_options_default(tilerap_options *opt);
/* Parses "fp64", "tf32", "bf16", "fp16"; TILERAP_ERR_INVALID otherwise. */
TILERAP_EXPORT int tilerap_precision_parse(const char *name, tilerap_precision *prec);
TILERAP_EXPORT const char *tilerap_precision_name(tilerap_precision prec);

/* Tuning knobs (doc/tuning.md lists them: name, values, default).  Each
 * is an environment variable, read once, at tilerap's first use; a bad
 * value makes every plan creation fail with TILERAP_ERR_INVALID naming
 * it.  tilerap_tuning_set overrides a knob for the whole process from then
 * on (value NULL: back to the environment's value or the default);
 * plans take the values in force when they are created.
 * TILERAP_ERR_INVALID for an unknown name or a bad value. */
TILERAP_EXPORT int tilerap_tuning_set(const char *name, const char *value);

/* Engine an AUTO request resolves to on this machine (reads TILERAP_ENGINE). */
TILERAP_EXPORT tilerap_engine tilerap_engine_resolve(tilerap_engine requested);
/* 1 if the engine was compiled in and usable now (CUDA: a device is present). */
TILERAP_EXPORT int tilerap_engine_available(tilerap_engine engine);
TILERAP_EXPORT const char *tilerap_engine_name(tilerap_engine engine);
/* Parses "auto", "cpu", "cuda"; returns TILERAP_ERR_INVALID otherwise. */
TILERAP_EXPORT int tilerap_engine_parse(const char *name, tilerap_engine *engine);
/* Parses "auto", "tiles", "recorded"; returns TILERAP_ERR_INVALID otherwise. */
TILERAP_EXPORT int tilerap_cpu_kernel_parse(const char *name, tilerap_cpu_kernel *kernel);
TILERAP_EXPORT const char *tilerap_cpu_kernel_name(tilerap_cpu_kernel kernel);

/* ------------------------------------------------------------------ */
/* CSR matrices (interchange format)                                   */
/* ------------------------------------------------------------------ */
typedef struct {
  int32_t m, n;     /* rows, columns                                      */
  int64_t nnz;
  int64_t *rowptr;  /* [m+1]                                              */
  int32_t *colidx;  /* [nnz], strictly increasing within each row          */
  double *val;      /* [nnz]                                              */
} tilerap_csr;

/* Allocates an m x n CSR with room for nnz entries (rowptr zeroed). */
TILERAP_EXPORT int tilerap_csr_create(int32_t m, int32_t n, int64_t nnz, tilerap_csr **A);
TILERAP_EXPORT void tilerap_csr_destroy(tilerap_csr **A);
/* Checks shape, monotone row pointers, column range and sortedness. */
TILERAP_EXPORT int tilerap_csr_check(int32_t m, int32_t n, const int64_t *rowptr, const int32_t *colidx);

/* ------------------------------------------------------------------ */
/* Tile matrices                                                       */
/* ------------------------------------------------------------------ */
/*
 * Only non-empty 16x16 tiles are stored, tile rows in order and tiles of a
 * tile row by ascending tile column.  Inside a tile, entries are stored
 * row by row, columns ascending.  Tile t (0 <= t < num_tiles) owns entries
 * tile_off[t] .. tile_off[t+1]-1 of idx[] and val[]; its local row r starts
 * at tile_off[t] + row_ptr[16t+r].  row_mask[16t+r] has bit c set iff local
 * entry (r,c) is stored.  Edge tiles of a matrix whose size is not a
 * multiple of 16 simply have no entries outside the matrix.
 *
 * Every stored tile has at least one entry: products never emit empty
 * tiles (they are dropped in step 2).
 */
typedef struct tilerap_tile_matrix {
  int32_t m, n;               /* rows, columns                               */
  int32_t tile_rows, tile_cols; /* ceil(m/16), ceil(n/16)                     */
  int64_t num_tiles;
  int64_t nnz;
  tilerap_memtype memtype;    /* where every array below lives               */
  int64_t *tile_ptr;          /* [tile_rows+1] first tile of each tile row   */
  int32_t *tile_col;          /* [num_tiles]   tile column index             */
  int64_t *tile_off;          /* [num_tiles+1] first entry of each tile      */
  uint8_t *row_ptr;           /* [16*num_tiles] local row starts (0..240)    */
  uint16_t *row_mask;         /* [16*num_tiles] column bit mask of each row  */
  uint8_t *idx;               /* [nnz] (local row << 4) | local column        */
  double *val;                /* [nnz]                                        */
  void *internal;             /* engine-private cache; NULL for user-built   */
  uint64_t structure_id;      /* identity of the structure (below)           */
} tilerap_tile_matrix;

/* Structure identity.  tilerap gives every matrix it allocates a fresh
 * structure_id (tilerap_tile_copy keeps the source's).  A plan records the
 * ids and a 128-bit hash of its operands' structures (tile_ptr, tile_col,
 * tile_off, row_mask); a numeric call takes an operand with a recorded id
 * at once, hashes any other (0 included) and refuses it with
 * TILERAP_ERR_STRUCTURE, before writing anything, unless its structure is
 * the plan's.  Values may change freely; whoever changes a structure array
 * in place must call tilerap_tile_structure_changed (a fresh id), or the
 * change goes unseen. */
TILERAP_EXPORT void tilerap_tile_structure_changed(tilerap_tile_matrix *T);

/* Allocates a tile matrix with the given counts in memory `mem` (arrays
 * uninitialised except tile_ptr[0] = tile_off[0] = 0 on the host). */
TILERAP_EXPORT int tilerap_tile_create(int32_t m, int32_t n, int64_t num_tiles, int64_t nnz,
                        tilerap_memtype mem, tilerap_tile_matrix **T);
TILERAP_EXPORT void tilerap_tile_destroy(tilerap_tile_matrix **T);

/* Full consistency check of a host tile matrix (masks, row pointers,
 * idx, sortedness, no empty tile).  Used by tests and debug builds. */
TILERAP_EXPORT int tilerap_tile_check(const tilerap_tile_matrix *T);

/* CSR -> tile.  Column indices must be strictly increasing in each row
 * (TILERAP_ERR_UNSORTED otherwise).  val may be NULL (values set to 0).
 * The _i32 variant takes 32-bit row pointers (PETSc/hypre with 32-bit ints). */
TILERAP_EXPORT int tilerap_tile_from_csr(int32_t m, int32_t n, const int64_t *rowptr,
                          const int32_t *colidx, const double *val,
                          tilerap_tile_matrix **T);
TILERAP_EXPORT int tilerap_tile_from_csr_i32(int32_t m, int32_t n, const int32_t *rowptr,
                              const int32_t *colidx, const double *val,
                              tilerap_tile_matrix **T);
/* Values-only refresh from a CSR with exactly the structure T was built
 * from (no allocation).  The row pointers are checked against T's row
 * lengths before any value is written: a failed call leaves T as it was.
 * Column indices are not passed, so not checked. */
TILERAP_EXPORT int tilerap_tile_update_values_from_csr(tilerap_tile_matrix *T, const int64_t *rowptr,
                                        const double *val);
TILERAP_EXPORT int tilerap_tile_update_values_from_csr_i32(tilerap_tile_matrix *T, const int32_t *rowptr,
                                            const double *val);

/* tile -> CSR into caller arrays (rowptr[m+1], colidx[nnz], val[nnz]);
 * any of the three may be NULL to skip it.  Host matrices only. */
TILERAP_EXPORT int tilerap_tile_to_csr(const tilerap_tile_matrix *T, int64_t *rowptr, int32_t *colidx,
                        double *val);
TILERAP_EXPORT int tilerap_tile_to_csr_i32(const tilerap_tile_matrix *T, int32_t *rowptr, int32_t *colidx,
                            double *val);
/* tile -> newly allocated CSR. */
TILERAP_EXPORT int tilerap_tile_to_csr_alloc(const tilerap_tile_matrix *T, tilerap_csr **A);

/* Deep copy into memory `mem` (host<->device transfers for the CUDA build). */
TILERAP_EXPORT int tilerap_tile_copy(const tilerap_tile_matrix *src, tilerap_memtype mem,
                      tilerap_tile_matrix **dst);
/* Copies values only between two matrices of identical structure. */
TILERAP_EXPORT int tilerap_tile_copy_values(const tilerap_tile_matrix *src, tilerap_tile_matrix *dst);

/* Tile transpose T^T in tile form (tile structure and every tile's masks
 * transposed).  perm (optional, [nnz]) receives, for each entry of the
 * transpose, the position of its value in T: Tt->val[q] = T->val[perm[q]]. */
TILERAP_EXPORT int tilerap_tile_transpose(const tilerap_tile_matrix *T, tilerap_tile_matrix **Tt,
                           int64_t **perm);

/* ------------------------------------------------------------------ */
/* SpGEMM C = A*B with a plan                                          */
/* ------------------------------------------------------------------ */
typedef struct tilerap_spgemm_plan_s *tilerap_spgemm_plan;

/* Steps 1-2: tile structure of C, per-tile masks, row pointers and the
 * pairing lists.  Allocates *C exactly (structure set, values undefined
 * until tilerap_spgemm_numeric).  A and B must live in the same memory;
 * the engine follows opt (host matrices with the CUDA engine are uploaded
 * and the result downloaded: host-resident interface). */
TILERAP_EXPORT int tilerap_spgemm_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                               const tilerap_options *opt, tilerap_spgemm_plan *plan,
                               tilerap_tile_matrix **C);
/* Step 3: numeric C = A*B for A, B with the plan's structure (new values
 * allowed).  No allocation. */
TILERAP_EXPORT int tilerap_spgemm_numeric(tilerap_spgemm_plan plan, const tilerap_tile_matrix *A,
                           const tilerap_tile_matrix *B, tilerap_tile_matrix *C);
TILERAP_EXPORT void tilerap_spgemm_plan_destroy(tilerap_spgemm_plan *plan);
/* One-shot product (plan, numeric, destroy plan). */
TILERAP_EXPORT int tilerap_spgemm(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                   const tilerap_options *opt, tilerap_tile_matrix **C);

/* How a plan multiplies (TILERAP_PATH chooses, doc/tuning.md):
 * TILES, the three tile steps; CSR, a row-wise product over CSR views of
 * the tiles, for operands whose tiles hold too few entries to pay for
 * the tile steps (unordered meshes, random and power-law graphs).  Both
 * take and give tile matrices. */
typedef enum { TILERAP_PATH_TILES = 0, TILERAP_PATH_CSR = 1 } tilerap_path;
TILERAP_EXPORT const char *tilerap_path_name(tilerap_path path);

typedef struct {
  tilerap_engine engine;  /* engine that runs the plan            */
  tilerap_path path;      /* TILES or CSR                         */
  double a_fill, b_fill;  /* mean entries per stored tile of the operands,
                             what the path is chosen by            */
  int64_t c_tiles;        /* tiles of C (after dropping empty ones) */
  int64_t c_tiles_step1;  /* candidate tiles found by step 1        */
  int64_t c_nnz;
  int64_t pairs;          /* (A tile, B tile) pairs in the plan (0 on
                             the CSR path)                         */
  int64_t flops;          /* 2 * scalar multiply-adds of numeric     */
  int64_t dense_tiles;    /* C tiles using the dense accumulator     */
  int64_t tc_pairs;       /* pairs multiplied on tensor cores (CUDA) */
  int64_t lowprec_pairs;  /* of those, pairs planned in the options' low
                             precision; 0 when the precision is fp64 or the
                             plan declined it (its pairs reuse too few tiles
                             for the conversion to pay: fp64 DMMA instead) */
  int64_t lowprec_tiles;  /* A and B tiles those pairs read, converted once
                             per numeric run */
  int64_t lowprec_fallbacks; /* low-precision pairs the last numeric run
                             multiplied in fp64 instead: a tile's range or a
                             non-finite value did not fit the format (reading
                             it waits for that run) */
  int64_t recorded;       /* scalar products the plan records.  CPU: the
                             RECORDED kernel, filled by a numeric run (the
                             first if RECORDED was asked for, the second under
                             AUTO).  CUDA CSR path: re-runs from a record made
                             by the second product (TILERAP_CSR_RECORD_MACS).
                             0: none */
} tilerap_spgemm_info;
TILERAP_EXPORT int tilerap_spgemm_plan_info(tilerap_spgemm_plan plan, tilerap_spgemm_info *info);

/* ------------------------------------------------------------------ */
/* C = A^T * B with a plan (A^T never formed by the caller)            */
/* ------------------------------------------------------------------ */
typedef struct tilerap_atb_plan_s *tilerap_atb_plan;

/* A is m x k, B is m x n, C = A^T B is k x n (exact structural product,
 * values set by tilerap_atb_numeric).  Same memory and engine rules as
 * tilerap_spgemm_plan_create. */
TILERAP_EXPORT int tilerap_atb_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                            const tilerap_options *opt, tilerap_atb_plan *plan,
                            tilerap_tile_matrix **C);
/* Numeric C = A^T B for new values (same structures).  No allocation. */
TILERAP_EXPORT int tilerap_atb_numeric(tilerap_atb_plan plan, const tilerap_tile_matrix *A,
                        const tilerap_tile_matrix *B, tilerap_tile_matrix *C);
TILERAP_EXPORT void tilerap_atb_plan_destroy(tilerap_atb_plan *plan);
/* The plan's path and counts, as tilerap_spgemm_plan_info gives them
 * (those of the product it runs: A^T B with A^T formed on the CUDA
 * engine's tile path). */
TILERAP_EXPORT int tilerap_atb_plan_info(tilerap_atb_plan plan, tilerap_spgemm_info *info);
TILERAP_EXPORT int tilerap_atb(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                const tilerap_options *opt, tilerap_tile_matrix **C);

/* ------------------------------------------------------------------ */
/* Galerkin product C = P^T A P with a plan                            */
/* ------------------------------------------------------------------ */
typedef struct tilerap_ptap_plan_s *tilerap_ptap_plan;

/* A square (n x n), P rectangular (n x nc).  Forms P^T in tile form and
 * plans AP = A*P and C = P^T*(AP).  *C (nc x nc) is allocated with the
 * exact structural product; values are set by tilerap_ptap_numeric.
 * C is an ordinary tile matrix: it can be the A of the next level. */
TILERAP_EXPORT int tilerap_ptap_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P,
                             const tilerap_options *opt, tilerap_ptap_plan *plan,
                             tilerap_tile_matrix **C);
/* Numeric C = P^T A P for new values of A and P (same structure as at
 * plan creation).  No allocation. */
TILERAP_EXPORT int tilerap_ptap_numeric(tilerap_ptap_plan plan, const tilerap_tile_matrix *A,
                         const tilerap_tile_matrix *P, tilerap_tile_matrix *C);
TILERAP_EXPORT void tilerap_ptap_plan_destroy(tilerap_ptap_plan *plan);
TILERAP_EXPORT int tilerap_ptap(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P,
                 const tilerap_options *opt, tilerap_tile_matrix **C);

typedef struct {
  tilerap_engine engine;
  tilerap_spgemm_info ap;   /* AP = A*P      */
  tilerap_spgemm_info ptap; /* C = P^T*(AP)  */
} tilerap_ptap_info;
TILERAP_EXPORT int tilerap_ptap_plan_info(tilerap_ptap_plan plan, tilerap_ptap_info *info);
/* The path a Galerkin plan (or tilerap_ptap) of A and P with options opt
 * (NULL: defaults) would take now (TILERAP_PATH, the engine and the
 * operands' entries per tile), and those fills (any output may be NULL):
 * what the hypre hook reports per product. */
TILERAP_EXPORT int tilerap_ptap_path(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P,
                                     const tilerap_options *opt, tilerap_path *path, double *a_fill, double *p_fill);

/* ------------------------------------------------------------------ */
/* Products of host CSR matrices (CPU engine, no tile form)            */
/* ------------------------------------------------------------------ */
/* For callers whose matrices are CSR (PETSc's AIJ): row-wise products on
 * the caller's arrays with the CPU engine's threads, no conversion to or
 * from tiles.  A product made once costs less this way than through the
 * tile plans, whose conversions alone exceed it on the CPU; the PETSc
 * types make every CPU product with it. */
typedef enum { TILERAP_CSR_AB = 0, TILERAP_CSR_ATB = 1, TILERAP_CSR_PTAP = 2 } tilerap_csr_kind;
typedef struct tilerap_csr_plan_s *tilerap_csr_plan;
TILERAP_EXPORT const char *tilerap_csr_kind_name(tilerap_csr_kind kind);

/* C = A*B, A^T*B or P^T*A*P (B = P, A square): plans the product and
 * returns C (allocated here, free with tilerap_csr_destroy; rows sorted)
 * with its values when both operands carry values (val non-NULL), zeros
 * otherwise.  Operands must pass tilerap_csr_check.  The plan does not
 * keep the operands' arrays. */
TILERAP_EXPORT int tilerap_csr_plan_create(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B,
                                           tilerap_csr_plan *plan, tilerap_csr **C);
/* C's values (in C's CSR order) for the operands' current values; their
 * structure must be the plan's, rows sorted (checked, nothing written:
 * TILERAP_ERR_STRUCTURE for another structure, the codes of
 * tilerap_csr_check for a malformed operand).  No allocation. */
TILERAP_EXPORT int tilerap_csr_plan_numeric(tilerap_csr_plan plan, const tilerap_csr *A, const tilerap_csr *B,
                                            double *c_val);
/* C's entries and 2 * the multiply-adds of a numeric run (either may be NULL) */
TILERAP_EXPORT int tilerap_csr_plan_info(tilerap_csr_plan plan, int64_t *c_nnz, int64_t *flops);
/* The host memory the plan holds, bytes (C's structure and the scratch of
 * its numeric runs included, the C returned by create not), and whether it
 * keeps an intermediate product: a P^T*A*P plan keeps A*P where
 * TILERAP_CSR_PTAP (doc/tuning.md) is "ap"; by default ("walk") it makes
 * P^T*A's rows again on each run (its memory near PETSc's MatPtAP's).  Either output may be NULL. */
TILERAP_EXPORT int tilerap_csr_plan_memory(tilerap_csr_plan plan, int64_t *bytes, int *keeps_intermediate);
TILERAP_EXPORT void tilerap_csr_plan_destroy(tilerap_csr_plan *plan);

/* ------------------------------------------------------------------ */
/* Strength graphs for AMG coarsening                                  */
/* ------------------------------------------------------------------ */
/* The scalar graph that aggregation AMG coarsens (PETSc's MatCreateGraph,
 * GAMG's first setup step), from a square m x m CSR matrix A with sorted
 * rows and m a multiple of bs:
 *   G(I,J) = sum of |A(i,j)| over the bs x bs block (I,J), summed row by
 *            row, columns ascending within a row; for bs = 1, A(i,j), or
 *            |A(i,j)| with TILERAP_GRAPH_ABS;
 *   TILERAP_GRAPH_SYMMETRIZE: G + G^T on the union of the two patterns;
 *   TILERAP_GRAPH_SCALE: D G D with D(I) = sqrt(|1 / G(I,I)|), 0 where
 *            G(I,I) is 0 or not stored ((G(I,J) D(I)) D(J) in that order).
 * Stored zeros stay.  The order of every sum and product is PETSc's, so
 * the graph is bit for bit the one PETSc's AIJ makes (and its
 * coarsening the same).  G (m/bs rows, sorted) is allocated here: free it
 * with tilerap_csr_destroy.  CPU engine.  colidx and val may be NULL
 * when A has no entries.  Bad input allocates nothing and gives
 * TILERAP_ERR_UNSORTED (columns not strictly increasing), TILERAP_ERR_RANGE
 * (a column outside 0..m-1), TILERAP_ERR_INVALID (row pointers not from 0
 * or decreasing, unknown flags), TILERAP_ERR_SIZE (m < 0, bs < 1 or above
 * 64, m not a multiple of bs), TILERAP_ERR_NULL; TILERAP_ERR_OVERFLOW when
 * G would have 2^31 entries or more. */
enum { TILERAP_GRAPH_ABS = 1, TILERAP_GRAPH_SYMMETRIZE = 2, TILERAP_GRAPH_SCALE = 4 };
TILERAP_EXPORT int tilerap_csr_graph_i32(int32_t m, int32_t bs, const int32_t *rowptr, const int32_t *colidx,
                                         const double *val, unsigned flags, tilerap_csr **G);

#ifdef __cplusplus
}
#endif
#endif /* TILERAP_H */
