/*
 * tilerap_petsc.h -- PETSc matrix type backed by tilerap tile matrices.
 *
 * MATSEQTILE ("seqtile") is a MATSEQAIJ whose matrix products AB, AtB and
 * PtAP (C = A*B, A^T*B, P^T*A*P, with at least one seqtile operand and the
 * other seqtile or plain seqaij) run through the tilerap plans
 * (include/tilerap.h).  Every other operation is the AIJ one.  The objects'
 * own type name is "seqaijtile" (MATSEQAIJTILE): PETSc and GAMG recognise
 * AIJ matrices by the "seqaij" prefix of their type name.
 *
 * MATMPITILE ("mpitile", objects named "mpiaijtile") is a MATMPIAIJ whose
 * diagonal and off-diagonal blocks are seqtile.  Its AB, AtB and PtAP
 * products (the other operand mpitile or plain mpiaij) run PETSc's
 * distributed MPIAIJ "backend" algorithm (remote rows gathered, local
 * products, COO assembly) with every local product on the tile engine; a
 * plain MPIAIJ A has its blocks seqtile during the symbolic phase only.  A
 * reuse (MatProductNumeric again) plans anew when an operand is another
 * object or changed its nonzero pattern on any rank (MatProductReplaceMats,
 * MatZeroRows, new entries).  That holds where the tile engine makes the
 * distributed product: the CUDA engine, or -mat_tile_mpi_products tile.
 * With the default (auto) on the CPU engine on several ranks the products
 * are MPIAIJ's own, and a reuse after such a change behaves as MPIAIJ's
 * does (a wrong C: make a new product).  The MPIAIJ preallocation entry points
 * (MatMPIAIJSetPreallocation, MatSetPreallocationCOO, ...) work and leave
 * seqtile blocks.
 *
 * Products that go the AIJ way (the SeqAIJ / MPIAIJ implementation as it
 * stands; -info says which and why): other product types (ABt, RARt, ABC:
 * mpitile's ABC with mixed operands included; an ABt with a plain seqaij A
 * and a seqtile B is refused with PETSC_ERR_SUP, SeqAIJ's crashed on it);
 * operands of other types
 * (dense, MAIJ, IS, hypre ...); an algorithm picked in the options (-mat_product_algorithm,
 * -matmatmult_via, -mattransposematmult_via, -matptap_via) other than
 * "default" or "tile" (mpitile: or "backend"), e.g. hypre or scalable;
 * C with MAT_FORCE_DIAGONAL_ENTRIES; and PETSc builds whose scalar is not
 * real double.
 *
 * "seqtile", "mpitile" and the root name "tile" (seqtile on one rank,
 * mpitile on more; "aijtile" likewise) are the names users type:
 *
 *   -mat_type tile      -dm_mat_type mpitile      MatSetType(A, MATTILE)
 *
 * Enabling the type:
 *   - in any PETSc program, unmodified:  -dll_append /path/libtilerap.so
 *     (PETSc calls PetscDLLibraryRegister_tilerap());
 *   - in a program linked with -ltilerap: TileRAPInitializePackage() after
 *     PetscInitialize() (idempotent).
 *
 * Options (read when the matrix is created and by MatSetFromOptions(), with
 * the matrix's prefix; -help lists them).  Per matrix:
 *   -mat_tile_engine auto|cpu|cuda    tilerap engine of the products
 *   -mat_tile_dense_threshold N       dense-accumulator threshold of C tiles
 *   -mat_tile_tc_threshold auto|N     CUDA engine: tile pairs with at least N
 *                                     multiply-adds use tensor cores (-1: off;
 *                                     auto, the default: 256 or 512 by the
 *                                     operands' entries per tile)
 *   -mat_tile_precision fp64|tf32|bf16|fp16   operands of those pairs (low ones
 *                       where a plan's pairs reuse each converted tile often:
 *                       -mat_tile_lowprec_reuse, tilerap.h's bound)
 *   -mat_tile_cpu_kernel auto|tiles|recorded  CPU engine's numeric kernel
 * Process-wide (the last matrix that reads one sets it for all):
 *   -mat_tile_device N                CUDA device of this process (mpitile
 *                                     default: node-local rank mod device count)
 * and the core's tuning knobs (doc/tuning.md), handed to tilerap_tuning_set,
 * which refuses a bad value (a PETSc error with tilerap's message):
 *   -mat_tile_pinned <bool>           TILERAP_PINNED: large host<->device
 *                                     copies through pinned staging chunks
 *   -mat_tile_pinned_chunk <bytes>    TILERAP_PINNED_CHUNK: their size
 *   -mat_tile_copy_threads <n>        TILERAP_COPY_THREADS: host copy threads
 *   -mat_tile_trace <bool>            TILERAP_TRACE: CUDA plan timestamps
 * (when each is taken: doc/tuning.md).
 *
 * -log_view events: TileRAPPlan (symbolic), TileRAPNumeric, TileRAPXfer
 * (host<->device copies made by this layer), TileRAPConvert (CSR<->tile).
 * With the CUDA engine the operands are converted on the device straight
 * from the AIJ arrays (TileRAPConvert: CSR upload + conversion, or a values
 * refresh), C's CSR structure is made on the device (TileRAPConvert, once
 * per plan) and TileRAPXfer is C's values coming down in CSR order after
 * each numeric phase; no host tile copies are made.
 */
#ifndef TILERAP_PETSC_H
#define TILERAP_PETSC_H

#include <petscmat.h>
#include "tilerap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MATTILE       "tile"       /* root name: seqtile on one rank, mpitile on more */
#define MATSEQTILE    "seqtile"    /* the name users type                              */
#define MATSEQAIJTILE "seqaijtile" /* the objects' type name (begins with "seqaij")    */
#define MATMPITILE    "mpitile"    /* the MPI type's user name                         */
#define MATMPIAIJTILE "mpiaijtile" /* the MPI objects' type name (begins with "mpiaij") */
#define MATAIJTILE    "aijtile"    /* root name: seqaijtile / mpiaijtile               */

/* Registers the types, options and log events.  Idempotent; undone by
 * PetscFinalize() so that a later PetscInitialize() can register again. */
PETSC_EXTERN PetscErrorCode TileRAPInitializePackage(void);
/* Entry point PETSc calls for -dll_append .../libtilerap.so. */
PETSC_EXTERN PetscErrorCode PetscDLLibraryRegister_tilerap(void);

/* Constructor registered for MATSEQTILE / MATSEQAIJTILE. */
PETSC_EXTERN PetscErrorCode MatCreate_SeqTile(Mat);
/* Creates an assembled-ready seqtile matrix (like MatCreateSeqAIJ). */
PETSC_EXTERN PetscErrorCode MatCreateSeqTile(MPI_Comm, PetscInt, PetscInt, PetscInt, const PetscInt[], Mat *);

/* Constructor registered for MATMPITILE / MATMPIAIJTILE. */
PETSC_EXTERN PetscErrorCode MatCreate_MPITile(Mat);
/* Creates a preallocated mpitile matrix (arguments of MatCreateAIJ). */
PETSC_EXTERN PetscErrorCode MatCreateMPITile(MPI_Comm, PetscInt, PetscInt, PetscInt, PetscInt, PetscInt, const PetscInt[], PetscInt, const PetscInt[], Mat *);

/* The tile copy of an assembled seqtile matrix, brought in sync with the AIJ
 * values first (host memory; owned by the matrix, valid until the matrix
 * changes or is destroyed). */
PETSC_EXTERN PetscErrorCode MatSeqTileGetTileMatrix(Mat, const tilerap_tile_matrix **);

/* Statistics of the tile copy's maintenance, for tests and diagnostics:
 * how many times it was built from scratch, refreshed values-only, and how
 * many times a sync request found it already current. */
typedef struct {
  PetscInt rebuilds, value_refreshes, reuses;
} MatSeqTileSyncStats;
PETSC_EXTERN PetscErrorCode MatSeqTileGetSyncStats(Mat, MatSeqTileSyncStats *);
/* How many matrix products with a seqtile operand this process sent to the
 * SeqAIJ implementation (product types or operand types the tile engine does
 * not do, see -info); for tests and diagnostics. */
PETSC_EXTERN PetscErrorCode MatSeqTileGetProductFallbacks(PetscInt *);

#ifdef __cplusplus
}
#endif
#endif /* TILERAP_PETSC_H */
