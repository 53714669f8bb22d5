/* The one tuning table of tilerap (tuning.c; doc/tuning.md lists it).
 * Every knob has an environment variable TILERAP_<NAME>, read once at
 * first use; tilerap_tuning_set overrides a knob for the process.  Plans
 * read the knobs when they are created and keep what they chose. */
#ifndef TILERAP_TUNING_H
#define TILERAP_TUNING_H
#include "tilerap.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  /* documented: users set these */
  TR_KNOB_ENGINE,            /* choice auto|cpu|cuda: the engine of an AUTO request */
  TR_KNOB_CPU_KERNEL,        /* choice auto|tiles|recorded: the CPU engine's AUTO kernel */
  TR_KNOB_DEVICE,            /* int, -1 = auto: the hypre hook's GPU (PETSc: -mat_tile_device) */
  TR_KNOB_PINNED,            /* flag: host copies through pinned staging chunks */
  TR_KNOB_PINNED_CHUNK,      /* int bytes: size of a staging chunk */
  TR_KNOB_COPY_THREADS,      /* int: threads of large host copies */
  TR_KNOB_TRACE,             /* flag: host timestamps of CUDA plan creation on stderr */
  TR_KNOB_HYPRE,             /* flag: the hypre hook computes products (0: forwards all) */
  TR_KNOB_HYPRE_VERBOSE,     /* int 0..9: the hook's report at exit (2: a line per product) */
  TR_KNOB_HYPRE_ORDER,       /* choice hypre|sorted: row order of the hook's coarse operators */
  TR_KNOB_HYPRE_REUSE,       /* int -1..: BoomerAMG re-setups from the kept hierarchy (0 off) */
  TR_KNOB_PATH,              /* choice auto|tiles|csr: the path of a product (csr_path.c) */
  TR_KNOB_CSR_PTAP,          /* choice ap|walk (default walk): CPU CSR plans' P^T A P with AP kept (faster) or without (less memory) */
  /* internal: tests force paths that the automatic choice takes only on
   * large products (doc/tuning.md says which) */
  TR_KNOB_STEP1_SORT,        /* choice auto|radix|rows|compact */
  TR_KNOB_ROWS_MAX,          /* int: pair limit of step 1's counted row path */
  TR_KNOB_MASKS_LANES,       /* choice auto|8|16: lanes of step 2's masks kernel */
  TR_KNOB_CUDA_HITS,         /* choice auto|plan: hit records made at plan creation */
  TR_KNOB_CUDA_WALK_MAX,     /* real: longest pair walk of a first numeric run */
  TR_KNOB_CUDA_WALK_MEAN,    /* real: mean pair walk of a first numeric run */
  TR_KNOB_TRANSPOSE_SORT,    /* flag: the sorted tile transpose on every size */
  TR_KNOB_PTAP,              /* choice auto|first|scatter: how the CUDA Galerkin plan makes C */
  TR_KNOB_PTAP_KERNEL,       /* choice auto|rows|scatter: its first-value kernels */
  TR_KNOB_PTAP_SCATTER_MACS, /* real: AP multiply-adds up to which C is scattered on every run */
  TR_KNOB_PTAP_GATHER,       /* flag: re-runs gather P^T's values instead of reading P's */
  TR_KNOB_ROWS_GROUP,        /* choice auto|1|8: warps per tile row of the row products */
  TR_KNOB_CSR_MACS_PER_PAIR, /* real: auto takes the CSR path below this many multiply-adds per tile pair */
  TR_KNOB_CSR_RECORD_MACS,   /* real: CUDA CSR products re-run from a record up to this many multiply-adds per C entry */
  TR_KNOB_CUDA_LOWPREC_REUSE, /* real: tensor-core pairs per converted tile below which a plan keeps fp64 */
  TR_KNOB_CONVERT,           /* choice auto|merge|sort: the device CSR->tile conversion's path */
  TR_KNOB_HYPRE_TEST_REFUSE_RANK,  /* int: that rank refuses every product */
  TR_KNOB_HYPRE_TEST_PARALLEL,     /* flag: the row-order pass's and the re-setup record's parallel paths at any size */
  TR_KNOB_HYPRE_TEST_ORDER_THREAD, /* flag: the row-order pass on its own thread on the CPU too */
  TR_KNOB_COUNT
} tr_knob_id;

/* TILERAP_SUCCESS, or TILERAP_ERR_INVALID naming the first environment
 * variable with a bad value (the message is set again on every call;
 * tilerap_tuning_set of that knob clears it) */
TILERAP_EXPORT int tr_tuning_check(void); /* exported for the hypre hook */
/* a knob's value: the number, 0/1 for a flag, the index in its list for a
 * choice (0 = the first); the default where the environment
 * held a bad value (tr_tuning_check reports it) */
TILERAP_EXPORT double tr_knob(tr_knob_id k);
static inline int tr_knob_int(tr_knob_id k) { return (int)tr_knob(k); }
/* a knob's value as its variable takes it: a choice's name, else the number */
TILERAP_EXPORT void tr_knob_text(tr_knob_id k, char *buf, size_t len);

/* Whether a CUDA CSR product whose C (rows x cnnz entries) sums macs
 * multiply-adds re-runs from a record rather than its hash tables
 * (csr_cuda_product.cu): C's entries sum at most TILERAP_CSR_RECORD_MACS
 * products on average, or, that knob not 0, at most TR_RECORD_NARROW_MACS
 * in rows of at most TR_RECORD_NARROW_LEN entries on average */
#define TR_RECORD_NARROW_MACS 1024
#define TR_RECORD_NARROW_LEN 128
int tr_csr_record_pays(int64_t macs, int64_t cnnz, int64_t rows);

/* Whether a P^T A P of device CSR operands (csr_device_product.c) pays
 * the tiles' conversions: a tile pair would carry at least
 * TR_DCSR_TILE_MACS_PER_PAIR multiply-adds, estimated as fill(A) fill(P)
 * / 16 (fill = entries per stored tile; design.md, "Dense products over
 * tiles") */
#define TR_DCSR_TILE_MACS_PER_PAIR 128
int tr_dcsr_tiles_pay(double a_fill, double p_fill);

/* TILERAP_CSR_PTAP's choices: AP kept (faster re-runs, 1.2-14x the memory
 * of PETSc's MatPtAP), or the walk (the default: csr_cpu_ptap_walk.c, no
 * AP, memory near PETSc's; design.md, "Pᵀ A P without AP") */
enum { TR_CSR_PTAP_AP, TR_CSR_PTAP_WALK };

#ifdef __cplusplus
}
#endif
#endif
