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

/* A PETSc built with CUDA: MATSEQTILE is a MATSEQAIJCUSPARSE underneath
 * (matrices, MatMult and the solve stay on the device, and the products
 * read and write the device CSR), the way PETSc's own GPU users run, and
 * MATMPITILE is a MATMPIAIJCUSPARSE with such blocks.  MATSEQAIJTILEHOST
 * is the host-AIJ tile matrix of such a build.  Older CUDA builds of PETSc
 * keep host AIJ (3.25's container and destroy-callback types are used). */
#if defined(PETSC_HAVE_CUDA) && !PETSC_VERSION_LT(3, 25, 0)
  #define TILE_DEVICE_AIJ 1
  #define MATSEQAIJTILEHOST "seqaijtilehost" /* internal: a tile matrix on host AIJ */
PETSC_EXTERN PetscErrorCode MatCreate_SeqAIJCUSPARSE(Mat);
#else
  #define TILE_DEVICE_AIJ 0
  #define MATSEQAIJTILEHOST MATSEQAIJTILE
#endif

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

/* The base type's implementations that the tile type replaces, one set per
 * base: [0] host SeqAIJ, [1] SeqAIJCUSPARSE (a PETSc built with CUDA),
 * captured at the first conversion of that base.  Products the tile engine
 * does not make go to SeqAIJ's implementation on either base:
 * AIJCUSPARSE's refuse operands of another type name. */
typedef struct {
  PetscBool saved;
  PetscErrorCode (*destroy)(Mat);
  PetscErrorCode (*view)(Mat, PetscViewer);
  PetscErrorCode (*setfromoptions)(Mat, TileOptionItems);
  PetscErrorCode (*productsetfromoptions)(Mat);
  PetscErrorCode (*fallback)(Mat); /* SeqAIJ's productsetfromoptions */
  PetscErrorCode (*duplicate)(Mat, MatDuplicateOption, Mat *);
  PetscErrorCode (*bindtocpu)(Mat, PetscBool);
  PetscErrorCode (*multtranspose)(Mat, Vec, Vec);
  PetscErrorCode (*multtransposeadd)(Mat, Vec, Vec, Vec);
#if !PETSC_VERSION_LT(3, 25, 0)
  PetscErrorCode (*creategraph)(Mat, PetscBool, PetscBool, PetscReal, PetscInt, PetscInt[], Mat *);
#elif PETSC_VERSION_LT(3, 19, 0) && !PETSC_VERSION_LT(3, 18, 0)
  PetscErrorCode (*creategraph)(Mat, PetscBool, PetscBool, PetscReal, Mat *);
#endif
} TileAIJOps;

extern TileAIJOps tile_base_ops[2];

typedef struct {
  TileCache cache;
  tilerap_options opt;
  PetscBool device_aij; /* base is SeqAIJCUSPARSE: the AIJ arrays have a device copy */
  tilerap_csr_device_transpose dT; /* device_aij: the transposed view of MatMultTranspose */
  PetscObjectState             dT_state; /* ... made for this nonzerostate */
} Mat_SeqTile;

/* ---------------------------------------------------------------- shared state */
extern PetscLogEvent TILE_Plan, TILE_Numeric, TILE_Xfer, TILE_Convert, TILE_Struct, TILE_Graph;

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
/* tc_threshold as -mat_tile_tc_threshold and MatView spell it: auto or a number */
PetscErrorCode TileTcThresholdName(int tc_threshold, char *buf, size_t len);
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
/* X is a seqtile, on either base (MATSEQAIJTILE or MATSEQAIJTILEHOST). */
PetscErrorCode TileIsSeqTile(Mat, PetscBool *);
/* The tile data of a seqtile X (NULL for any other matrix). */
PetscErrorCode TileGetData(Mat X, Mat_SeqTile **t);
/* X is plain AIJ of one process that products take as an operand:
 * seqaij, or seqaijcusparse in a PETSc built with CUDA. */
PetscErrorCode TileIsPlainSeqAIJ(Mat, PetscBool *);
/* Converts a plain AIJ B in place into a seqtile: on SeqAIJCUSPARSE when
 * device is set (a PETSc built with CUDA), else on host SeqAIJ. */
PetscErrorCode TileSeqConvertInPlace(Mat B, PetscBool device);
#if TILE_DEVICE_AIJ
PetscErrorCode MatCreate_SeqTileHost(Mat);
#endif

/* X's CSR arrays, in device memory where X keeps a device copy and device
 * is asked for (AIJCUSPARSE underneath, not bound to the CPU), else in host
 * memory (brought up to date there).  32-bit columns only on the device. */
typedef struct {
  const PetscInt    *ai, *aj;
  const PetscScalar *aa;
  tilerap_memtype    mem;
  PetscBool          rowij, arrayread; /* host arrays TileAIJArraysEnd releases */
} TileAIJArrays;
PetscErrorCode TileAIJArraysBegin(Mat X, PetscBool device, TileAIJArrays *r);
PetscErrorCode TileAIJArraysEnd(Mat X, TileAIJArrays *r);
#if TILE_DEVICE_AIJ
/* C's device value array for writing (offload mask: GPU; AIJCUSPARSE's
 * transpose marked stale); the device CSR is made first if C has none. */
PetscErrorCode TileDeviceValuesBegin(Mat C, PetscScalar **ca);
PetscErrorCode TileDeviceValuesEnd(Mat C, PetscScalar **ca);
/* P's transpose on the device when P asks for one
 * (MAT_FORM_EXPLICIT_TRANSPOSE, set by GAMG on its prolongators):
 * AIJCUSPARSE's own PtAP forms it, and PCMG's restriction multiplies with
 * it, so a tile PtAP makes it in its setup too rather than leaving it to
 * the first solve: a tile P's transposed view (its MatMultTranspose),
 * another P's explicit transpose through AIJCUSPARSE. */
PetscErrorCode TileFormExplicitTranspose(Mat P);
/* mat_seqtile_transpose_mult.c: a device seqtile's MatMultTranspose and
 * MatMultTransposeAdd through tilerap's device transposed view (CUDA
 * vectors; the base's otherwise) */
PetscErrorCode MatMultTranspose_SeqTile(Mat, Vec, Vec);
PetscErrorCode MatMultTransposeAdd_SeqTile(Mat, Vec, Vec, Vec);
PetscErrorCode TileTransposeViewFor(Mat P);
/* mat_seqtile_device_product.c: a product on the operands' device CSR
 * (tilerap's device CSR products; no tile form).  Plan: *dp NULL when
 * that route does not apply (C, A or B without a device CSR, or an
 * operand row too long for the CSR path: the tile route then), else C's
 * AIJ structure made (host values zero, left unset for a MatProduct API
 * symbolic phase: structure_only) and the values kept on the device for
 * the numeric phase.  Numeric:
 * C's values into its device CSR (*fresh: those of the plan, the operands
 * unchanged since); *stale when an operand or C has left the device since
 * the plan (nothing done: plan again). */
typedef struct TileDeviceProduct TileDeviceProduct;
/* X's device CSR as tilerap's device calls read it (arr->mem HOST where X
 * has none; TileAIJArraysEnd gives it back) */
PetscErrorCode TileDeviceOperand(Mat X, TileAIJArrays *arr, tilerap_csr_device_i32 *v);
PetscErrorCode TileDeviceProductPlan(Mat C, MatProductType type, Mat A, Mat B, PetscBool structure_only, TileDeviceProduct **dp);
PetscErrorCode TileDeviceProductNumeric(Mat C, TileDeviceProduct *dp, Mat A, Mat B, PetscBool *stale, PetscBool *fresh);
PetscErrorCode TileDeviceProductView(TileDeviceProduct *dp, PetscViewer viewer);
PetscErrorCode TileDeviceProductDestroy(TileDeviceProduct **dp);
/* Around an MPI product's symbolic phase: no explicit transposes of the
 * local products' operands. */
void TileLocalProductsPush(void);
void TileLocalProductsPop(void);
/* Orders tilerap's work (legacy default stream) after PETSc's queued
 * device work when PETSc's current stream is one that does not wait. */
PetscErrorCode TileDeviceJoinPETSc(void);
/* The reverse, after tilerap wrote dev (device memory): PETSc's later work
 * on a stream that does not wait sees the result. */
PetscErrorCode TileDeviceJoinTilerap(const void *dev, PetscInt n);
#endif
/* Around the phases of an MPI product that runs MPIAIJ's own algorithm
 * (-mat_tile_mpi_products): the local products it sets up on seqtile
 * blocks take SeqAIJ's implementation, so that it costs what MPIAIJ's does. */
void      TileAIJProductsPush(void);
void      TileAIJProductsPop(void);
PetscBool TileAIJProductsActive(void);
/* Wraps a product phase of C (*op: C->ops->productsymbolic or
 * productnumeric): the phase set there is composed on C under name and
 * replaced by wrapper, which runs it from there (nothing where none is set
 * or it is wrapper already) */
PetscErrorCode TileWrapProductPhase(Mat C, PetscErrorCode (**op)(Mat), PetscErrorCode (*wrapper)(Mat), const char *name);
/* A seqtile's AIJ structure from row pointers (mat_seqtile_product.c):
 * preallocated exactly, then each row's columns written straight into
 * the column array that preallocation made (*cols, sorted rows) and taken
 * as they are (MatSeqAIJSetColumnIndices), values from vals (nz doubles
 * in memory vals_mem; NULL: zeros), assembled, new nonzeros refused.
 * MatSetValues row by row costs a call per row, MatSeqAIJSetPreallocationCSR
 * a search per entry. */
PetscErrorCode TileStructureBegin(Mat C, int32_t m, const int64_t *rowptr, PetscInt **cols);
/* *same: C is assembled with exactly this structure (host row pointers,
 * sorted 32-bit columns).  A product planned again for operands of
 * unchanged patterns then keeps C as it stands, nonzerostate included:
 * a new preallocation would tell C's users (a coarse solver, PCSetUp)
 * that its pattern changed. */
PetscErrorCode TileStructureIs(Mat C, int32_t m, const int64_t *rowptr, const int32_t *colidx, PetscBool *same);
/* Both from host CSR arrays in tilerap's layout: C's structure, values
 * zero, unless C has it already (TileStructureIs). */
PetscErrorCode TileAssembleStructure(Mat C, int32_t m, const int64_t *rowptr, const int32_t *colidx);
/* C's values from vals (host or device), else zero, or left unset where
 * zero is false (undefined until a numeric phase, as AIJCUSPARSE's own
 * symbolic phases leave them); then C assembled. */
PetscErrorCode TileStructureEnd(Mat C, PetscInt *cols, int64_t nz, const double *vals, tilerap_memtype vals_mem, PetscBool zero);
/* MatCreateGraph of a seqtile (mat_seqtile_graph.c): the strength graph
 * by the engine (tilerap_csr_graph_i32 or its device form), the same as
 * AIJ's; AIJ's own (base) where the engine does not apply.  Versions whose
 * MatCreateGraph_Simple_AIJ was checked: 3.18 (unfiltered graphs only)
 * and 3.25 on (strength index arguments); others keep AIJ's. */
#if !PETSC_VERSION_LT(3, 25, 0)
  #define TILE_GRAPH       1
  #define TILE_GRAPH_INDEX 1
PetscErrorCode MatCreateGraph_SeqTile(Mat, PetscBool, PetscBool, PetscReal, PetscInt, PetscInt[], Mat *);
#elif PETSC_VERSION_LT(3, 19, 0) && !PETSC_VERSION_LT(3, 18, 0)
  #define TILE_GRAPH       1
  #define TILE_GRAPH_INDEX 0
PetscErrorCode MatCreateGraph_SeqTile(Mat, PetscBool, PetscBool, PetscReal, Mat *);
#else
  #define TILE_GRAPH 0
#endif
/* MatConvert's start, shared by the tile conversions: *B the matrix to
 * convert in place, or NULL when nothing is left to do (MAT_REUSE_MATRIX:
 * A's values copied into *newmat; or *newmat has the target type already,
 * by is_target). */
PetscErrorCode TileConvertBegin(Mat A, MatReuse reuse, Mat *newmat, PetscErrorCode (*is_target)(Mat, PetscBool *), Mat *B);
PetscErrorCode MatConvert_SeqAIJ_SeqTile(Mat, MatType, MatReuse, Mat *);
PetscErrorCode MatProductSetFromOptions_SeqTile(Mat);
/* What the MatProductSetFromOptions of both tile types decide first
 * (mat_seqtile_product.c): *fits, C's product is one the tile engine does
 * (AB, AtB or PtAP of real double operands, each of the tile type is_tile
 * or plain AIJ (is_plain), at least one tile, C without MAT_FORCE_DIAGONAL_ENTRIES);
 * *alg_ok, product->alg is unset or one of algs (NULL-terminated). */
PetscErrorCode TileProductCandidate(Mat C, PetscErrorCode (*is_tile)(Mat, PetscBool *), PetscErrorCode (*is_plain)(Mat, PetscBool *), const char *const algs[], PetscBool *alg_ok, PetscBool *fits);

/* MATMPITILE (mat_mpitile.c) */
PetscErrorCode TileIsMPITile(Mat, PetscBool *);
PetscErrorCode TileMPISyncBlockStates(Mat);
PetscErrorCode MatConvert_MPIAIJ_MPITile(Mat, MatType, MatReuse, Mat *);

#endif
