/* Internal helpers shared by the engine sources (not installed). */
#ifndef TILERAP_TILE_INTERNAL_H
#define TILERAP_TILE_INTERNAL_H

#ifdef HAVE_CONFIG_H
#include "tilerap_config.h"
#endif
#include "tilerap_csr_layouts.h" /* the whole core API: tilerap.h, tilerap_device.h and the CSR layouts */
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Records a message for tilerap_last_error() and returns code. */
int tilerap_set_error(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Host allocation of count*size bytes with overflow check; NULL on failure
 * (with the error recorded). */
void *tilerap_host_alloc(size_t count, size_t size);
void *tilerap_host_calloc(size_t count, size_t size);

/* TILERAP_SUCCESS when the CUDA engine is compiled in and a GPU is
 * visible; otherwise TILERAP_ERR_ENGINE with a message naming `what`
 * (device_buffers.c). */
int tr_require_cuda(const char *what);

/* memcpy of host arrays, up to TR_HOST_COPY_THREADS threads for large
 * ones (host_copy.c). */
#define TR_HOST_COPY_THREADS 4
TILERAP_EXPORT void tr_host_copy(void *dst, const void *src, size_t bytes); /* exported for the tests */
/* longest row of a host CSR (rp64 or rp32), by the copy threads: the
 * device conversion's path choice on host input */
int64_t tr_host_max_row(int32_t m, const int64_t *rp64, const int32_t *rp32);

/* Popcount of a 16-bit mask; portable (no -mpopcnt needed). */
extern const uint8_t tilerap_popcount8[256];
static inline int tr_popcount16(unsigned m)
{
  return tilerap_popcount8[m & 0xffu] + tilerap_popcount8[(m >> 8) & 0xffu];
}

/* End (exclusive) of local row r inside tile t, relative to tile_off[t]. */
static inline int tr_row_end(const tilerap_tile_matrix *T, int64_t t, int r)
{
  return r < TILERAP_TILE - 1 ? T->row_ptr[16 * t + r + 1] : (int)(T->tile_off[t + 1] - T->tile_off[t]);
}

/* OpenMP regions go parallel only above this many work items: coarse AMG
 * levels are tiny, and a parallel region on a loaded or oversubscribed
 * machine (several MPI ranks per core) can cost milliseconds. */
#define TR_OMP_MIN_ITEMS 2048

/* a hash of a CSR structure: every column index and row pointer with its
 * position (tile_convert_csr.c; no checks: tilerap_csr_check) */
uint64_t tr_csr_hash(int32_t m, const int64_t *rowptr, const int32_t *colidx);

static inline int32_t tr_ceil16(int32_t x) { return (int32_t)(((int64_t)x + 15) / 16); }

/* Structure identity (tile_structure.c).  A plan records each operand's
 * sizes, structure_id and structure hash; a numeric call accepts an
 * operand whose id is the recorded one at once, and otherwise only if its
 * structure hashes to the recorded one (TILERAP_ERR_STRUCTURE if not,
 * before anything is written), remembering its id. */
typedef struct {
  int32_t m, n;
  int64_t num_tiles, nnz;
  tilerap_memtype memtype;
  uint64_t id;
  int hashed;          /* hash holds the words */
  void *dev_hash;      /* device operand: the hash's partial words, made on
                          the device at recording, read back only when needed */
  int dev_words;
  int dev_owner;       /* this record frees the allocation dev_hash lies in */
  uint64_t hash[2];
} tr_structure;
uint64_t tr_structure_id_new(void);
/* records the sizes, ids and hashes of n (1..3) matrices (device ones:
 * one hash kernel for all, no wait) */
int tr_structure_record(int n, const tilerap_tile_matrix *const *T, tr_structure *const *s);
/* the three of a plan: its two operands and its output */
static inline int tr_structure_record3(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y,
                                       const tilerap_tile_matrix *C, tr_structure *sx, tr_structure *sy,
                                       tr_structure *sc)
{
  const tilerap_tile_matrix *const T[3] = {X, Y, C};
  tr_structure *const s[3] = {sx, sy, sc};
  return tr_structure_record(3, T, s);
}
void tr_structure_release(tr_structure *s);
/* who: the calling function, name: the operand, for the message */
int tr_structure_check(tr_structure *s, const tilerap_tile_matrix *T, const char *who, const char *name);

/* Tile-row counts: count_row(I, mark, count, ctx) writes tile row I's
 * ncounts (<= TR_ROW_COUNTS_MAX) counts, marking the tile columns it has
 * seen (mark[J] == I: the thread's marks over cols + 1 columns start at
 * -1) and returning 0 or a status; out[c] (rows + 1 entries) receives the
 * prefix sums.  Returns TILERAP_ERR_NOMEM, else the largest status. */
#define TR_ROW_COUNTS_MAX 2
typedef int (*tr_tile_row_count_fn)(int32_t I, int32_t *mark, int64_t *count, void *ctx);
TILERAP_EXPORT int tr_tile_row_counts(int32_t rows, int32_t cols, int parallel, int ncounts, int64_t *const *out,
                                      tr_tile_row_count_fn count_row, void *ctx); /* exported for the hypre hook */

/* values of src into dst, whose structure the caller knows to be src's */
int tr_tile_copy_values(const tilerap_tile_matrix *src, tilerap_tile_matrix *dst);
/* tilerap_spgemm_numeric after its operand checks: for plans that checked
 * the operands themselves (A^T B, P^T A P) or own them */
int tr_spgemm_run(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                  tilerap_tile_matrix *C);

/* Checks every field of a tilerap_options (tr_options_check in engine.c):
 * TILERAP_ERR_INVALID naming who and the bad field. */
int tr_options_check(const tilerap_options *opt, const char *who);
/* A plan's options checked (tr_options_check) and its engine: CUDA for
 * device operands A, else the request (AUTO: the tuning table's
 * TILERAP_ENGINE, then a probe); TILERAP_ERR_ENGINE when it is not
 * available. */
int tr_plan_engine(const tilerap_options *o, const tilerap_tile_matrix *A, const char *who, tilerap_engine *engine);
/* memtype is host or device, else TILERAP_ERR_INVALID naming who */
int tr_check_memtype(tilerap_memtype mem, const char *who);

/* Returns TILERAP_SUCCESS if T is a non-NULL host tile matrix with its arrays. */
int tr_require_host(const tilerap_tile_matrix *T, const char *name);

/* How a SpGEMM plan's numeric runs will be used: the CUDA engine plans
 * its hit records by it (the Galerkin plan makes some values with kernels
 * of its own) */
typedef enum {
  TR_RUNS_REPEATED = 0, /* run again and again: hit records (tilerap_spgemm_plan_create) */
  TR_RUNS_ONCE,         /* a single numeric run (tilerap_spgemm): no hit records */
  TR_RUNS_NEVER,        /* C's structure only: its values are made elsewhere on every run */
  TR_RUNS_AFTER_FIRST   /* C's first values are made elsewhere; the first numeric run makes the hits */
} tr_plan_runs;
/* An A*B plan on the tile steps, for the Galerkin and A^T*B plans (which
 * choose the path themselves and check the operands of each run) */
int tr_spgemm_plan_tiles(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                         tr_plan_runs runs, tilerap_spgemm_plan *plan, tilerap_tile_matrix **C);
/* a deferred CUDA plan reads A's values through perm, where *taken says
 * so (tr_cuda_spgemm_read_a_through) */
int tr_spgemm_plan_read_a_through(tilerap_spgemm_plan plan, const int64_t *perm, int *taken);

#ifdef __cplusplus
}
#endif
#endif
