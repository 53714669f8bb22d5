/* Internal interface of libtilerap_hypre: hook state and counters
 * (hook_state.c), local CSR blocks for the tile engine (local_blocks.c),
 * the distributed Galerkin product (galerkin.c; its stages and their files
 * in galerkin_stages.h). */
#ifndef TILERAP_HYPRE_HOOK_INTERNAL_H
#define TILERAP_HYPRE_HOOK_INTERNAL_H

#include <HYPRE_config.h>
#include <_hypre_parcsr_mv.h>
#include <_hypre_parcsr_ls.h>
#include "tilerap_csr_layouts.h"
#include "tilerap_hypre.h"

/* tilerap's configuration (TILERAP_HYPRE_RAPKT_HAS_DIAGONAL when configure
 * checks it); both config headers define PACKAGE_*, tilerap's win here. */
#ifdef HAVE_CONFIG_H
#undef PACKAGE_BUGREPORT
#undef PACKAGE_NAME
#undef PACKAGE_STRING
#undef PACKAGE_TARNAME
#undef PACKAGE_URL
#undef PACKAGE_VERSION
#include "tilerap_config.h"
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

/* Internal helpers stay out of the library's dynamic symbol table. */
#pragma GCC visibility push(hidden)

/* Below this many rows, parallel regions cost more than they save. */
#define TR_PAR_ROWS 4096

static inline int tr_max_threads(void)
{
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static inline int tr_team_size(void)
{
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

static inline int tr_thread(void)
{
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* hypre >= 3.0 passes has_diagonal to hypre_ParCSRMatrixRAPKT.  The
 * configure check TILERAP_HYPRE_RAPKT_HAS_DIAGONAL wins when present;
 * otherwise the release number from HYPRE_config.h decides. */
#ifndef TILERAP_HYPRE_RAPKT_HAS_DIAGONAL
#if defined(HYPRE_RELEASE_NUMBER) && HYPRE_RELEASE_NUMBER >= 30000
#define TILERAP_HYPRE_RAPKT_HAS_DIAGONAL 1
#else
#define TILERAP_HYPRE_RAPKT_HAS_DIAGONAL 0
#endif
#endif

/* The tile engine computes in double; other hypre scalar builds forward. */
#if defined(HYPRE_COMPLEX) || defined(HYPRE_SINGLE) || defined(HYPRE_LONG_DOUBLE)
#define TILERAP_HYPRE_SCALAR_OK 0
#else
#define TILERAP_HYPRE_SCALAR_OK 1
#endif

/* ---- hook_state.c ---- */
int tr_hypre_enabled(void);            /* reads the environment once */
int tr_hypre_verbose(void);            /* TILERAP_HYPRE_VERBOSE now: 0, 1, or 2 (a line per product) */
/* Why an interposed call must forward before any work (disabled, or no GPU
 * and the CPU engine not named in TILERAP_ENGINE), or -1. */
int tr_hypre_refusal(void);
void tr_hypre_count_computed(int entry, double seconds);
void tr_hypre_count_forwarded(int entry, int reason, double seconds);
/* Remembers a detailed message for the verbose report (first few kept). */
void tr_hypre_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Rank that TILERAP_HYPRE_TEST_REFUSE_RANK names, or -1. */
int tr_hypre_test_refuse_rank(void);
double tr_hypre_wtime(void);
/* One GPU per rank: TILERAP_DEVICE=N, else (node-local rank) mod (device
 * count), chosen once when the CUDA engine is active.  On device matrices
 * (on_device, the same on every rank) the GPU is hypre's, the current one:
 * switching it would move hypre's later work away from its arrays, so
 * nothing is chosen and a TILERAP_DEVICE naming another GPU refuses.
 * Collective on comm; 0, or 1 with a note. */
int tr_hypre_select_device(MPI_Comm comm, int on_device);
/* 1, with a note, if TILERAP_DEVICE names a GPU other than the current one
 * (hypre's, for its device matrices). */
int tr_hypre_device_mismatch(void);
/* Time split of the computed products, printed with TILERAP_HYPRE_VERBOSE.
 * TR_PH_TRAV is the row-order pass on its own thread, which overlaps the
 * others (TR_PH_ORDER is what the caller waits for it, plus placing). */
enum { TR_PH_IN, TR_PH_UPLOAD, TR_PH_ENGINE, TR_PH_DOWNLOAD, TR_PH_OUT, TR_PH_ORDER, TR_PH_COMM, TR_PH_TRAV,
       TR_PH_TRANSPOSE, TR_PH_N };
void tr_hypre_add_phase(int phase, double seconds);
/* A call of an observed entry point (hypre computed it). */
void tr_hypre_count_observed(int entry, double seconds);
/* A BoomerAMG setup with re-setup asked for: reused (reason -1) or full. */
void tr_hypre_count_setup(int reason, double seconds);
/* kept: 1 A was the kept product, -1 it was changed since (see TileRAP_HypreStats) */
void tr_hypre_count_kept(int kept);

typedef HYPRE_Int (*tr_build_coarse_fn)(hypre_ParCSRMatrix *, hypre_ParCSRMatrix *,
                                        hypre_ParCSRMatrix *, HYPRE_Int, hypre_ParCSRMatrix **);
#if TILERAP_HYPRE_RAPKT_HAS_DIAGONAL
typedef hypre_ParCSRMatrix *(*tr_rapkt_fn)(hypre_ParCSRMatrix *, hypre_ParCSRMatrix *,
                                           hypre_ParCSRMatrix *, HYPRE_Int, HYPRE_Int);
#else
typedef hypre_ParCSRMatrix *(*tr_rapkt_fn)(hypre_ParCSRMatrix *, hypre_ParCSRMatrix *,
                                           hypre_ParCSRMatrix *, HYPRE_Int);
#endif
/* hypre's own functions (dlsym(RTLD_NEXT)); abort with a message if absent. */
void *tr_hypre_next_symbol(const char *name);
tr_build_coarse_fn tr_hypre_original_build_coarse(void);
tr_rapkt_fn tr_hypre_original_rapkt(void);

/* ---- exchange.c: global column lists ---- */
/* Sorts and removes duplicates in place; returns the new length. */
HYPRE_Int tr_big_sort_unique(HYPRE_BigInt *v, HYPRE_Int n);
/* Index of x in the ascending array v[0..n), or -1. */
HYPRE_Int tr_big_find(const HYPRE_BigInt *v, HYPRE_Int n, HYPRE_BigInt x);
/* Q: P's offd columns (cmapP) and P_ext's columns (bj) outside this rank's
 * [firstP, firstP + ncP), sorted and unique (*colQ, *nQ); P's offd columns
 * as ncP + their index in Q (*mapPo), P_ext's columns in the same local
 * numbering (*pext_col).  All malloc'ed (freed by the caller also on
 * failure); 0, TILERAP_ERR_NOMEM, or TILERAP_ERR_OVERFLOW when ncP + nQ
 * exceeds 32 bits. */
int tr_columns_q(const HYPRE_BigInt *cmapP, HYPRE_Int nPo, const HYPRE_BigInt *bj, HYPRE_Int ext_nnz,
                 HYPRE_BigInt firstP, HYPRE_Int ncP, HYPRE_BigInt **colQ, HYPRE_Int *nQ, int32_t **mapPo,
                 int32_t **pext_col);

/* ---- local_blocks.c ---- */
/* One block of a row segment: columns j (HYPRE_Int) or j32 (int32_t),
 * mapped through map[] when given, then shifted by offset. */
typedef struct {
  const HYPRE_Int *i;
  const HYPRE_Int *j;
  const int32_t *j32;
  const HYPRE_Complex *a;
  const int32_t *map;
  int32_t offset;
} tr_block;

/* Rows [row0, row0+nrows) of the output, made of up to two side-by-side blocks. */
typedef struct {
  int32_t row0, nrows;
  int nblocks;
  tr_block b[2];
} tr_segment;

/* Builds an m x n tile matrix from the segments (rows sorted, duplicate
 * columns summed).  Returns a tilerap error code. */
int tr_tiles_from_segments(int32_t m, int32_t n, int nseg, const tr_segment *seg,
                           tilerap_tile_matrix **T);

/* The same rows as a CSR matrix (rows sorted, duplicate columns summed):
 * the CPU engine's operands.  Returns a tilerap error code
 * (TILERAP_ERR_RANGE: a column outside [0, n)). */
int tr_csr_from_segments(int32_t m, int32_t n, int nseg, const tr_segment *seg, tilerap_csr **C);

/* ---- device_galerkin.c ---- */
/* A CUDA build of hypre (its headers): device matrices can reach the hook. */
#if defined(HYPRE_USING_CUDA)
#define TR_HYPRE_DEVICE 1
#else
#define TR_HYPRE_DEVICE 0
#endif
/* 1 if M's arrays are in memory the GPU reads (device or unified). */
int tr_hypre_on_device(hypre_ParCSRMatrix *M);
/* C = R^T A P of device matrices, computed on the GPU and returned as
 * hypre's device ParCSR; 0 with *C, or 1 + reason (nothing allocated). */
int tr_hypre_device_rapkt(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                          HYPRE_Int keep_transpose, HYPRE_Int has_diagonal, hypre_ParCSRMatrix **C);

/* ---- galerkin.c ---- */
/* RT^T A P; order_hypre: rows in the order of hypre_BoomerAMGBuildCoarseOperatorKT
 * (unless TILERAP_HYPRE_ORDER=sorted), else sorted with the diagonal first;
 * local_refusal >= 0 makes this rank refuse with that reason (collective:
 * every rank then forwards).  Returns 0, or 1 + reason. */
int tr_hypre_galerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                      HYPRE_Int keepT, int force_diagonal, int order_hypre, int local_refusal,
                      hypre_ParCSRMatrix **RAP);
/* Frees the product kept on the GPU for the next level (hook disabled;
 * kept_operand.c). */
void tr_hypre_drop_kept(void);

#pragma GCC visibility pop

#endif
