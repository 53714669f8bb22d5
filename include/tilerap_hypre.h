/*
 * tilerap_hypre.h -- the hypre BoomerAMG hook of tilerap (libtilerap_hypre).
 *
 * libtilerap_hypre defines the coarse-operator entry points that
 * hypre_BoomerAMGSetup calls through the PLT of a shared libHYPRE:
 *
 *   hypre_BoomerAMGBuildCoarseOperatorKT(RT, A, P, keepT, &RAP)  (default host path)
 *   hypre_ParCSRMatrixRAPKT(R, A, P, keepT [, has_diagonal])      (HYPRE_BoomerAMGSetModuleRAP2(s, 1);
 *                                                               the default on the GPU)
 *   hypre_CSRMatrixTripleMultiplyDevice(A, B, C)                (CUDA builds: the local
 *                                                               product of hypre's device RAPKT)
 * and observes (counts calls and time, hypre computes them) hypre's other
 * products of a setup, hypre_ParCSRMatMat and hypre_ParCSRTMatMatKT.
 *
 * and computes C = RT^T A P with the tile engine (tilerap_spgemm on the
 * local CSR blocks; hypre's own helpers fetch the remote rows of P and send
 * the rows of C owned by other ranks).  Whatever it does not handle goes
 * to hypre's own function through dlsym(RTLD_NEXT, ...), and is counted
 * with its reason.  Several ranks decide together: either all compute or
 * all forward.
 *
 * For the replacement to be called, libtilerap_hypre must come before
 * libHYPRE in the dynamic lookup order: link the application with
 * -ltilerap_hypre ahead of -lHYPRE, or LD_PRELOAD=libtilerap_hypre.so
 * (e.g. a PETSc program run with -pc_type hypre).
 *
 * PETSc (-pc_type hypre), no rebuild of the application; Open MPI's -x
 * exports the variables to every rank:
 *   mpiexec -n 4 -x LD_PRELOAD=$libdir/libtilerap_hypre.so -x TILERAP_HYPRE_VERBOSE=1 \
 *       ./app -ksp_type cg -pc_type hypre -pc_hypre_type boomeramg
 * (checked with PETSc 3.18 / hypre 2.26: every level reported as computed).
 *
 * CUDA builds of hypre (>= 3.0; the hook compiled against that build's
 * headers): matrices in device memory stay there.  On one rank
 * hypre_ParCSRMatrixRAPKT (what BoomerAMG calls per level on the GPU) runs
 * as one Galerkin plan on hypre's device CSR arrays, and C is handed back
 * in hypre's device allocator with the diagonal first and the other entries
 * ascending (the keep-transpose of R is stored as hypre does).  On several
 * ranks hypre's own RAPKT does the device exchanges (remote rows of P,
 * rows of C sent to their owners) and the hook computes its local triple
 * product, hypre_CSRMatrixTripleMultiplyDevice.  No operand or result is
 * copied to the host.
 *
 * BoomerAMG's coarsening (the Ruge-Stueben pass of HMIS) and interpolation
 * truncation break ties by the order of entries in a row, so on the default
 * path (hypre_BoomerAMGBuildCoarseOperatorKT) rows are returned in hypre's
 * own traversal order, rows sent to other ranks included.  The values are
 * the same products summed in another order (they differ from hypre's in
 * the last bits, relative differences of 1e-15 or so), so a strength or
 * truncation test that a value meets exactly at its threshold can decide
 * the other way and the hierarchy can part from hypre's there: the model
 * problems of the tests give hypre's hierarchy on 1, 2 and 4 ranks, hypre's
 * ij driver on other settings sometimes does not (one more or one fewer
 * level, an iteration more or fewer).  hypre_ParCSRMatrixRAPKT and
 * TILERAP_HYPRE_ORDER=sorted give rows sorted by column with the diagonal
 * first; on the GPU (a CUDA hypre) the same holds (BENCHMARKS.md, 3b).
 *
 * Environment (read at the first call; the calls TileRAP_HypreEnable and
 * TileRAP_HypreSet* below override it):
 *   TILERAP_HYPRE=1|0          enable (default) / disable the hook
 *   TILERAP_HYPRE_VERBOSE=1    print at exit how many Galerkin products
 *                              tilerap computed and how many it forwarded, and why
 *                              (2: also a line per product on stderr)
 *   TILERAP_ENGINE=cpu|cuda    engine of the tile products (see tilerap.h).
 *                              Without it the hook computes only where a GPU
 *                              is present: on BoomerAMG's operators the CPU
 *                              engine is slower than hypre's own RAP (see
 *                              BENCHMARKS.md), so with no GPU the products are
 *                              forwarded (reason "no GPU") unless
 *                              TILERAP_ENGINE=cpu asks for the CPU engine.
 *   TILERAP_HYPRE_ORDER=sorted rows sorted (diagonal first) instead of hypre's order
 *   TILERAP_DEVICE=N           the GPU of every rank for host matrices (default:
 *                              one GPU per rank, node-local rank mod device
 *                              count); a CUDA hypre's device matrices are
 *                              multiplied on hypre's GPU, the current one, and
 *                              N naming another refuses them
 *   TILERAP_HYPRE_REUSE=k      BoomerAMG re-setup from the kept hierarchy for
 *                              every solver (TileRAP_HypreSetReuse below)
 */
#ifndef TILERAP_HYPRE_H
#define TILERAP_HYPRE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Why a call went to hypre's own function instead of tilerap. */
typedef enum {
  TILERAP_HYPRE_FWD_DISABLED = 0,  /* TileRAP_HypreDisable() or TILERAP_HYPRE=0            */
  TILERAP_HYPRE_FWD_DEVICE = 1,    /* device matrices this build cannot take (hypre without
                                      CUDA headers, the CPU engine, a non-CUDA GPU build) */
  TILERAP_HYPRE_FWD_SCALAR = 2,    /* hypre built with non-double HYPRE_Complex           */
  TILERAP_HYPRE_FWD_SHAPE = 3,     /* incompatible dimensions: hypre reports the error    */
  TILERAP_HYPRE_FWD_SIZE = 4,      /* a local size exceeds the 32-bit tile indices        */
  TILERAP_HYPRE_FWD_ENGINE = 5,    /* a tilerap call failed (message in the verbose log)  */
  TILERAP_HYPRE_FWD_PEER = 6,      /* another rank of the communicator could not compute  */
  TILERAP_HYPRE_FWD_TEST = 7,      /* refused on purpose (TILERAP_HYPRE_TEST_REFUSE_RANK) */
  TILERAP_HYPRE_FWD_NOGPU = 8,     /* no GPU and the CPU engine not asked for             */
  TILERAP_HYPRE_FWD_DELEGATED = 9, /* device memory, several ranks: hypre's own RAPKT does
                                      the exchanges, its local triple product is tilerap's */
  TILERAP_HYPRE_FWD_DEVICE_NATIVE = 10, /* retired, never given now: device products were left
                                      to hypre unless TILERAP_ENGINE=cuda; since the device
                                      CSR path the CUDA engine takes them (README)         */
  TILERAP_HYPRE_FWD_NREASONS = 11
} TileRAP_HypreForwardReason;

/* Entry points that are counted separately. */
typedef enum {
  TILERAP_HYPRE_EP_BUILD_COARSE_OPERATOR = 0, /* hypre_BoomerAMGBuildCoarseOperatorKT */
  TILERAP_HYPRE_EP_RAPKT = 1,                 /* hypre_ParCSRMatrixRAPKT              */
  TILERAP_HYPRE_EP_TRIPLE_DEVICE = 2,         /* hypre_CSRMatrixTripleMultiplyDevice  */
  /* hypre's other products in a setup (rap2, non-Galerkin and AIR paths,
   * interpolation): observed, not taken over (calls and time counted) */
  TILERAP_HYPRE_EP_MATMAT = 3,                /* hypre_ParCSRMatMat                   */
  TILERAP_HYPRE_EP_TMATMAT = 4,               /* hypre_ParCSRTMatMatKT                */
  TILERAP_HYPRE_EP_N = 5
} TileRAP_HypreEntryPoint;

/* Why a BoomerAMG setup was a full one when re-setup was asked for
 * (TileRAP_HypreSetReuse, TILERAP_HYPRE_REUSE). */
typedef enum {
  TILERAP_HYPRE_SETUP_NEW = 0,     /* no kept hierarchy yet (first setup, or another
                                      hierarchy in the solver since)                   */
  TILERAP_HYPRE_SETUP_PERIOD = 1,  /* the re-setups allowed after a full one are used up */
  TILERAP_HYPRE_SETUP_PATTERN = 2, /* A's pattern or row partition is not the kept one   */
  TILERAP_HYPRE_SETUP_OPTIONS = 3, /* a setting whose setup data a re-setup does not
                                      refresh (see TileRAP_HypreSetReuse)              */
  TILERAP_HYPRE_SETUP_DEVICE = 4,  /* device matrices without the CUDA engine          */
  TILERAP_HYPRE_SETUP_LEVELS = 5,  /* a coarse operator is not P^T A P as a plan makes it
                                      (entries dropped), or tilerap failed (note)      */
  TILERAP_HYPRE_SETUP_NREASONS = 6
} TileRAP_HypreFullSetupReason;

typedef struct {
  long computed[TILERAP_HYPRE_EP_N];  /* Galerkin products computed by tilerap      */
  long forwarded[TILERAP_HYPRE_EP_N]; /* calls forwarded to hypre's own function    */
  long reason[TILERAP_HYPRE_FWD_NREASONS]; /* forwarded calls by reason            */
  double seconds_tilerap;  /* wall time inside the tilerap computations            */
  double seconds_forwarded; /* wall time inside the forwarded originals            */
  /* wall time of each entry point's calls, computed or forwarded (a
   * forwarded RAPKT of a CUDA hypre holds its triple product's time too) */
  double seconds_entry[TILERAP_HYPRE_EP_N];
  /* calls of the observed entry points (hypre computed them; not in the
   * computed / forwarded counts) */
  long observed[TILERAP_HYPRE_EP_N];
  /* One rank, CUDA engine: products whose A was the previous product's C,
   * still on the GPU and proven unchanged by a content fingerprint of
   * hypre's arrays (operand_kept), or found changed and uploaded again
   * (operand_changed). */
  long operand_kept;
  long operand_changed;
  /* BoomerAMG setups of solvers with re-setup asked for: re-setups from
   * the kept hierarchy, full setups by reason, and their wall times */
  long setups_reused;
  long setups_full[TILERAP_HYPRE_SETUP_NREASONS];
  double seconds_setup_reused, seconds_setup_full;
} TileRAP_HypreStats;

/* Turns the hook on (on != 0) or off for the whole process; returns the
 * previous state.  Overrides TILERAP_HYPRE.  The default is on. */
int TileRAP_HypreEnable(int on);
/* Same as TileRAP_HypreEnable(0). */
int TileRAP_HypreDisable(void);
/* Current state (1 on, 0 off). */
int TileRAP_HypreEnabled(void);

/* Settings for the whole process from now on, over the environment
 * variables named (they are knobs of tilerap's tuning table:
 * tilerap_tuning_set in tilerap.h sets them by name too).  Each returns
 * TILERAP_SUCCESS (0), or TILERAP_ERR_INVALID for a value out of range
 * (the setting unchanged; tilerap_last_error() says what is expected). */
/* TILERAP_HYPRE_VERBOSE, 0..9: 0 quiet, 1 the report at exit (the level in
 * force at exit decides), 2 also a line per product on stderr. */
int TileRAP_HypreSetVerbose(int level);
/* TILERAP_HYPRE_ORDER: "hypre" (the default: entries of a row in the order
 * of hypre_BoomerAMGBuildCoarseOperatorKT) or "sorted" (by column, the
 * diagonal first); NULL: back to the environment's choice.  Products from
 * then on; hypre_ParCSRMatrixRAPKT's are sorted either way. */
int TileRAP_HypreSetOrder(const char *order);
/* TILERAP_DEVICE: the GPU this process computes host matrices' products on
 * from the next product on; -1 (the default): one GPU per rank, node-local
 * rank mod device count, chosen at the first product (a GPU already set
 * stays).  Device matrices of a CUDA hypre are multiplied on hypre's GPU,
 * the one current when they reach the hook (the application binds it, as
 * hypre's drivers do before HYPRE_Init); the hook never changes it, and a
 * dev naming another GPU forwards those products (reason "engine", with a
 * note).  The CPU engine ignores it. */
int TileRAP_HypreSetDevice(int dev);
/* TILERAP_ENGINE: "auto" (the default: CUDA where a GPU is visible, else
 * every product forwarded to hypre), "cpu" (the CPU engine computes them)
 * or "cuda"; NULL: back to the environment's choice.  Products from then on. */
int TileRAP_HypreSetEngine(const char *engine);
/* TILERAP_PATH: "auto" (the default: by the operands' entries per tile),
 * "tiles" or "csr"; NULL: back to the environment's choice. */
int TileRAP_HypreSetPath(const char *path);

/* Re-setup of a BoomerAMG solver (the HYPRE_Solver of
 * HYPRE_BoomerAMGCreate) when only A's values change, as for the steps of
 * a time-dependent or Newton solve.  After a full setup the hook keeps the
 * hierarchy (coarsening, P) and a Galerkin plan per level; a later
 * HYPRE_BoomerAMGSetup on a matrix with the same pattern and row
 * partition then recomputes every coarse operator in place from the kept
 * plans and refreshes, with hypre's own routines, the setup data that
 * depend on values: l1 norms, Chebyshev coefficients, relaxation weights
 * asked for as 0, the coarsest level's Gaussian elimination.  A changed
 * pattern is detected (entry by entry) and gets a full setup.
 *   max_reuses  0: off (every setup a full one; the default),
 *               k > 0: at most k re-setups after each full setup (a full
 *               setup every k+1 setups bounds the drift of the hierarchy),
 *               -1: re-setup whenever the pattern allows.
 * Calling it again restarts the count.  TILERAP_HYPRE_REUSE=k sets the
 * same for every BoomerAMG solver without a call (e.g. PETSc's
 * -pc_type hypre, which sets BoomerAMG up at every PCSetUp).
 * Host memory (CPU builds of hypre): any number of ranks, the engine
 * TILERAP_ENGINE resolves (CUDA with a GPU, else the CPU engine).  Device
 * memory (a CUDA hypre): the CUDA engine; tiles, plans and maps stay on
 * the GPU, and a re-setup copies nothing to or from the host on one rank,
 * only the values exchanged between ranks on several (staged through host
 * buffers: MPI need not be CUDA-aware).  Settings whose
 * setup data a re-setup does not refresh always get a full setup, counted
 * as TILERAP_HYPRE_SETUP_OPTIONS: smoothers other than Jacobi, the
 * Gauss-Seidel family, their l1 variants and Chebyshev (relax types 0, 3,
 * 4, 6, 7, 8, 13, 14, 16, 18; Gaussian elimination 9, 99, 199 on the
 * coarsest level), complex smoothers (Schwarz, ILU, FSAI, ...),
 * CG-estimated relaxation weights, non-Galerkin or filtered coarse
 * operators, AIR, additive cycles, block matrices, a redundant coarse
 * solve.  Returns TILERAP_SUCCESS, or TILERAP_ERR_INVALID. */
int TileRAP_HypreSetReuse(void *solver, int max_reuses);

/* Counters of this process since start or the last reset. */
void TileRAP_HypreGetStats(TileRAP_HypreStats *stats);
void TileRAP_HypreResetStats(void);
/* Total over the entry points. */
long TileRAP_HypreComputed(void);
long TileRAP_HypreForwarded(void);
const char *TileRAP_HypreReasonString(int reason);
/* Prints the counters (what TILERAP_HYPRE_VERBOSE=1 prints at exit). */
void TileRAP_HyprePrintStats(void *FILE_stream);

/* Direct access for tests and comparisons; only when hypre's internal
 * headers were included first (_hypre_parcsr_mv.h). */
#ifdef hypre_PARCSR_MV_HEADER
/* hypre's own functions, reached through dlsym(RTLD_NEXT, ...). */
HYPRE_Int TileRAP_HypreOriginalBuildCoarseOperatorKT(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A,
                                                     hypre_ParCSRMatrix *P, HYPRE_Int keepT,
                                                     hypre_ParCSRMatrix **RAP);
/* has_diagonal is ignored for hypre < 3.0 (no such argument there). */
hypre_ParCSRMatrix *TileRAP_HypreOriginalRAPKT(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A,
                                               hypre_ParCSRMatrix *P, HYPRE_Int keepT,
                                               HYPRE_Int has_diagonal);
/* The tilerap computation of RT^T A P, with the side effects of
 * hypre_BoomerAMGBuildCoarseOperatorKT (transposes kept on RT when keepT,
 * comm packages).  Collective over A's communicator.  Returns 0 and
 * *RAP on success, else 1 + a TileRAP_HypreForwardReason (nothing was
 * changed on RT, A, P apart from comm packages, and *RAP is NULL). */
int TileRAP_HypreGalerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                          HYPRE_Int keepT, int force_diagonal, hypre_ParCSRMatrix **RAP);
#endif

#ifdef __cplusplus
}
#endif
#endif /* TILERAP_HYPRE_H */
