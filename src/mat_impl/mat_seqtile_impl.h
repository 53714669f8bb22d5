/* Private declarations shared by the MATSEQTILE sources (not installed). */
#ifndef TILERAP_MAT_SEQTILE_IMPL_H
#define TILERAP_MAT_SEQTILE_IMPL_H

#include <petsc/private/matimpl.h>
#include <petscversion.h>
#include "tilerap_petsc.h"
#include "tilerap_device.h"

/* ---------------------------------------------------------------- version drift */
#if PETSC_VERSION_LT(3, 19, 0)
  #ifndef PETSC_SUCCESS
    #define PETSC_SUCCESS 0
  #endif
#endif
/* MatOps setfromoptions takes PetscOptionItems by value from 3.23 on. */
#if PETSC_VERSION_LT(3, 23, 0)
typedef PetscOptionItems *TileOptionItems;
#else
typedef PetscOptionItems TileOptionItems;
#endif
/* Mat_Product's destroy callback is given the data (before 3.25) or the
 * address of the data pointer (3.25 on, typed PetscCtxRt = void *). */
#if PETSC_VERSION_LT(3, 25, 0)
  #define TILE_PRODUCT_DESTROY_ARG void *
  #define TILE_PRODUCT_DESTROY_DATA(p) (p)
  #define TILE_PRODUCT_DESTROY_PASS(p) (p) /* what a destroy callback is called with */
#else
  #define TILE_PRODUCT_DESTROY_ARG PetscCtxRt
  #define TILE_PRODUCT_DESTROY_DATA(p) (*(void **)(p))
  #define TILE_PRODUCT_DESTROY_PASS(p) ((void *)&(p))
#endif

#if PETSC_VERSION_LT(3, 20, 0)
  #define TileAssertPointer(p, a) PetscValidPointer(p, a)
#else
  #define TileAssertPointer(p, a) PetscAssertPointer(p, a)
#endif

/* The tile engine only does real double: elsewhere every product goes the
 * AIJ way (the type still works as plain AIJ). */
#if !defined(PETSC_USE_COMPLEX) && defined(PETSC_USE_REAL_DOUBLE)
  #define TILE_SCALAR_OK 1
#else
  #define TILE_SCALAR_OK 0
#endif

/* Exported by libpetsc but not prototyped in its installed headers. */
PETSC_EXTERN PetscErrorCode MatCreate_SeqAIJ(Mat);

/* ---------------------------------------------------------------- tile copy of one Mat */
/* A tile copy of an AIJ matrix and the PETSc states it reflects.  Lives in
 * a seqtile's spptr, or in product data for plain-AIJ operands. */
typedef struct {
  tilerap_tile_matrix *T;
  PetscObjectId id;           /* object the copy was taken from           */
  PetscObjectState state;     /* its object state when last in sync       */
  PetscObjectState nzstate;   /* its nonzerostate when last (re)built     */
  PetscBool state_plus_one;   /* written by a product numeric phase: the
                                 one state increase MatProductNumeric()
                                 makes afterwards is still in sync          */
  PetscInt64 gen;             /* bumped whenever T is rebuilt               */
  /* device mirror for the CUDA engine: same structure as T (generation
   * Dgen), values current when Dvalid */
  tilerap_tile_matrix *D;
  PetscInt64 Dgen;
  PetscBool Dvalid;
  MatSeqTileSyncStats stats;
} TileCache;

typedef struct {
  TileCache cache;
  tilerap_options opt;
} Mat_SeqTile;

/* ---------------------------------------------------------------- shared state */
extern PetscLogEvent TILE_Plan, TILE_Numeric, TILE_Xfer, TILE_Convert;
/* SeqAIJ implementations replaced by the type (captured from a fresh SeqAIJ). */
typedef struct {
  PetscBool saved;
  PetscErrorCode (*destroy)(Mat);
  PetscErrorCode (*view)(Mat, PetscViewer);
  PetscErrorCode (*setfromoptions)(Mat, TileOptionItems);
  PetscErrorCode (*productsetfromoptions)(Mat);
} TileAIJOps;
extern TileAIJOps tile_aij_ops;

/* ---------------------------------------------------------------- helpers */
/* tilerap error -> PETSc error with tilerap's message. */
PetscErrorCode TileCheckError_Private(MPI_Comm, int, const char *);
#define TileCall(comm, expr) PetscCall(TileCheckError_Private((comm), (expr), #expr))

/* tile_cache.c: the tile copy of an AIJ matrix brought in sync with it */
PetscErrorCode TileCacheSync(Mat X, TileCache *c);
/* TileCacheSync, then the device mirror brought in sync (upload only what changed). */
PetscErrorCode TileCacheSyncDevice(Mat X, TileCache *c);
PetscErrorCode TileCacheReset(TileCache *c);
/* Records that c now holds X's current values (X's CSR was written from c). */
PetscErrorCode TileCacheMarkInSync(Mat X, TileCache *c, PetscBool by_product_numeric);

/* tile_options.c: the -mat_tile_ options and the CUDA device of the process */
/* The options read when a tile matrix is created (-help lists them in any program). */
PetscErrorCode TileOptionsFromDatabase(Mat, tilerap_options *);
/* MatSetFromOptions of a tile type: the base type's own (base, may be NULL),
 * then the -mat_tile_ options as a section "TileRAP matrix (type) options"
 * into *opt. */
PetscErrorCode TileSetFromOptions(Mat, TileOptionItems, PetscErrorCode (*base)(Mat, TileOptionItems), MatType type, tilerap_options *opt);
/* The current device's CUDA context created once per process when the
 * CUDA engine is active (not charged to the first product). */
PetscErrorCode TileDeviceWarmUp(const tilerap_options *);
/* MATMPITILE's device: -mat_tile_device when given, else one GPU per rank,
 * (node-local rank) mod (device count), chosen once per process when the
 * CUDA engine is active.  Collective on comm unless the engine is cpu. */
PetscErrorCode TileDeviceSelect(MPI_Comm, const tilerap_options *);

/* mat_seqtile.c */
PetscErrorCode TileIsSeqTile(Mat, PetscBool *);
/* MatConvert's start, shared by the tile conversions: *B the matrix to
 * convert in place, or NULL when nothing is left to do (MAT_REUSE_MATRIX:
 * A's values copied into *newmat; or *newmat has the target type already,
 * by is_target).  With is_target (a conversion to the tile type named to)
 * *B must carry no implementation data. */
PetscErrorCode TileConvertBegin(Mat A, MatReuse reuse, Mat *newmat, PetscErrorCode (*is_target)(Mat, PetscBool *), MatType to, Mat *B);
PetscErrorCode MatConvert_SeqAIJ_SeqTile(Mat, MatType, MatReuse, Mat *);
PetscErrorCode MatProductSetFromOptions_SeqTile(Mat);
/* What the MatProductSetFromOptions of both tile types decide first
 * (mat_seqtile_product.c): *fits, C's product is one the tile engine does
 * (AB, AtB or PtAP of real double operands, each of the tile type is_tile
 * or plain aij, at least one tile, C without MAT_FORCE_DIAGONAL_ENTRIES);
 * *alg_ok, product->alg is unset or one of algs (NULL-terminated). */
PetscErrorCode TileProductCandidate(Mat C, PetscErrorCode (*is_tile)(Mat, PetscBool *), MatType aij, const char *const algs[], PetscBool *alg_ok, PetscBool *fits);

/* MATMPITILE (mat_mpitile.c) */
PetscErrorCode TileIsMPITile(Mat, PetscBool *);
PetscErrorCode TileMPISyncBlockStates(Mat);
PetscErrorCode MatConvert_MPIAIJ_MPITile(Mat, MatType, MatReuse, Mat *);

#endif
