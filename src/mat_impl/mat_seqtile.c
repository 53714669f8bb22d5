/* MATSEQTILE: a MATSEQAIJ that keeps a tilerap tile copy of itself for the
 * matrix products.  Built the way PETSc's device AIJ types are: a SeqAIJ is
 * created and converted in place (type name changed, a few ops replaced,
 * functions composed), so every AIJ operation keeps working on the AIJ
 * arrays, which stay the reference copy.
 *
 * The tile copy (tile_cache.c) is brought in sync lazily, when a product
 * needs it; matrices produced by our products (mat_seqtile_product.c) get
 * their tile copy from the plan and are marked in sync, so the next level
 * starts from it.  The -mat_tile_ options are read in tile_options.c. */
#include "mat_seqtile_impl.h"

/* ---------------------------------------------------------------- errors */
PetscErrorCode TileCheckError_Private(MPI_Comm comm, int err, const char *what)
{
  PetscErrorCode perr;

  PetscFunctionBegin;
  if (err == TILERAP_SUCCESS) PetscFunctionReturn(PETSC_SUCCESS);
  switch (err) {
  case TILERAP_ERR_NOMEM:
  case TILERAP_ERR_DEVICE_NOMEM: perr = PETSC_ERR_MEM; break;
  case TILERAP_ERR_SIZE: perr = PETSC_ERR_ARG_SIZ; break;
  case TILERAP_ERR_ENGINE: perr = PETSC_ERR_SUP; break;
  case TILERAP_ERR_NULL: perr = PETSC_ERR_ARG_NULL; break;
  case TILERAP_ERR_RANGE:
  case TILERAP_ERR_OVERFLOW: perr = PETSC_ERR_ARG_OUTOFRANGE; break;
  default: perr = PETSC_ERR_LIB;
  }
  SETERRQ(comm, perr, "tilerap: %s: %s [%s]", tilerap_error_string(err), tilerap_last_error(), what);
}

PetscErrorCode TileIsSeqTile(Mat X, PetscBool *flg)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompareAny((PetscObject)X, flg, MATSEQAIJTILE, MATSEQAIJTILEHOST, ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileIsPlainSeqAIJ(Mat X, PetscBool *flg)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  PetscCall(PetscObjectTypeCompareAny((PetscObject)X, flg, MATSEQAIJ, MATSEQAIJCUSPARSE, ""));
#else
  PetscCall(PetscObjectTypeCompare((PetscObject)X, MATSEQAIJ, flg));
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The tile data lives in spptr on host AIJ; AIJCUSPARSE keeps its own
 * data there, so a PETSc built with CUDA finds ours in a composed
 * container (on both bases, one way to look it up). */
#define TILE_DATA_NAME "TileRAP_SeqTile"

/* X's tile data whatever X's type name says now (PETSc's header merges
 * destroy an object whose name is already another's). */
static PetscErrorCode TileGetDataRaw(Mat X, Mat_SeqTile **t)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  PetscCall(PetscObjectContainerQuery((PetscObject)X, TILE_DATA_NAME, (PetscCtxRt)t));
#else
  *t = (Mat_SeqTile *)X->spptr;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileGetData(Mat X, Mat_SeqTile **t)
{
  PetscBool istile;

  PetscFunctionBegin;
  *t = NULL;
  PetscCall(TileIsSeqTile(X, &istile));
  if (!istile) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileGetDataRaw(X, t));
  PetscCheck(*t, PetscObjectComm((PetscObject)X), PETSC_ERR_PLIB, "tile matrix without its tile data");
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileDataFree(Mat_SeqTile **t)
{
  PetscFunctionBegin;
  if (*t) PetscCall(TileCacheReset(&(*t)->cache));
  if (*t) tilerap_csr_device_transpose_destroy(&(*t)->dT);
  PetscCall(PetscFree(*t));
  PetscFunctionReturn(PETSC_SUCCESS);
}

#if TILE_DEVICE_AIJ
static PetscErrorCode TileDataContainerDestroy(PetscCtxRt ctx)
{
  PetscFunctionBegin;
  PetscCall(TileDataFree((Mat_SeqTile **)ctx));
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

/* Attaches t to X (replacing any earlier tile data), or with t NULL
 * detaches and frees X's. */
static PetscErrorCode TileSetData(Mat X, Mat_SeqTile *t)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  if (t) PetscCall(PetscObjectContainerCompose((PetscObject)X, TILE_DATA_NAME, t, TileDataContainerDestroy));
  else PetscCall(PetscObjectCompose((PetscObject)X, TILE_DATA_NAME, NULL));
#else
  if (X->spptr) {
    Mat_SeqTile *old = (Mat_SeqTile *)X->spptr;
    PetscCall(TileDataFree(&old));
  }
  X->spptr = t;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- options */
static PetscErrorCode MatSetFromOptions_SeqTile(Mat A, TileOptionItems PetscOptionsObject)
{
  Mat_SeqTile *t;

  PetscFunctionBegin;
  PetscCall(TileGetData(A, &t));
  PetscCall(TileSetFromOptions(A, PetscOptionsObject, tile_base_ops[t->device_aij].setfromoptions, MATSEQTILE, &t->opt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- view */
static PetscErrorCode MatView_SeqTile(Mat A, PetscViewer viewer)
{
  PetscBool         iascii;
  PetscViewerFormat format;
  Mat_SeqTile      *t;

  PetscFunctionBegin;
  PetscCall(TileGetData(A, &t));
  PetscCall(tile_base_ops[t->device_aij].view(A, viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &iascii));
  if (!iascii) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (format != PETSC_VIEWER_ASCII_INFO && format != PETSC_VIEWER_ASCII_INFO_DETAIL) PetscFunctionReturn(PETSC_SUCCESS);
  if (!A->assembled || !TILE_SCALAR_OK) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap: tile form not built (matrix not assembled or not real double)\n"));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  {
    const tilerap_tile_matrix *T;
    tilerap_engine             e = tilerap_engine_resolve(t->opt.engine);
    char                       tc[32];

    PetscCall(TileCacheSync(A, &t->cache));
    T = t->cache.T;
    PetscCall(TileTcThresholdName(t->opt.tc_threshold, tc, sizeof tc));
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap: %" PetscInt64_FMT " tiles of 16x16 (%d x %d tile grid), %" PetscInt64_FMT " entries, %.2f mean entries per tile, AIJ arrays on the %s, engine %s (requested %s), dense threshold %d, tensor-core threshold %s (%s), CPU kernel %s\n",
                                     (PetscInt64)T->num_tiles, T->tile_rows, T->tile_cols, (PetscInt64)T->nnz, T->num_tiles ? (double)T->nnz / (double)T->num_tiles : 0.0,
                                     t->device_aij ? "device (AIJCUSPARSE)" : "host", tilerap_engine_name(e), tilerap_engine_name(t->opt.engine), t->opt.dense_threshold, tc, tilerap_precision_name(t->opt.precision), tilerap_cpu_kernel_name(t->opt.cpu_kernel)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- composed functions */
/* SeqAIJ's implementations composed under names that carry its type name,
 * composed again under the tile type's name so that conversions and
 * products with other types keep SeqAIJ's implementation (on either base:
 * AIJCUSPARSE's own refuse another type name).  A name is prefix + type
 * name + suffix. */
typedef struct {
  const char *prefix, *suffix;
} TileAliasName;

static const TileAliasName tile_alias_host[] = {
  {"MatProductSetFromOptions_", "_seqdense_C"},
  {"MatProductSetFromOptions_seqdense_", "_C"},
  {"MatProductSetFromOptions_", "_seqmaij_C"},
  {"MatProductSetFromOptions_", "_hypre_C"},
};
#define TILE_NALIAS_HOST (sizeof(tile_alias_host) / sizeof(tile_alias_host[0]))

static PetscErrorCode TileAliasFullName(const TileAliasName *a, const char *type, char *name, size_t len)
{
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(name, a->prefix, len));
  PetscCall(PetscStrlcat(name, type, len));
  PetscCall(PetscStrlcat(name, a->suffix, len));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The base implementations, looked up once per base on the first matrix
 * converted (still of the base type) and on a SeqDense (products with
 * dense matrices are composed on the dense side).  Function addresses stay
 * valid for the life of the process. */
typedef struct {
  PetscBool looked_up;
  void (*host[TILE_NALIAS_HOST])(void);
} TileAliasTable;
static TileAliasTable tile_alias_tables[2]; /* [0] host base, [1] device base */

static PetscErrorCode TileAliasLookup(Mat aij, PetscBool device)
{
  TileAliasTable *tab = &tile_alias_tables[device ? 1 : 0];
  Mat             dense;
  char            name[256];

  PetscFunctionBegin;
  if (tab->looked_up) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatCreate(PETSC_COMM_SELF, &dense));
  PetscCall(MatSetSizes(dense, 1, 1, 1, 1));
  PetscCall(MatSetType(dense, MATSEQDENSE));
  for (size_t k = 0; k < TILE_NALIAS_HOST; k++) {
    void (*f)(void) = NULL;
    PetscCall(TileAliasFullName(&tile_alias_host[k], MATSEQAIJ, name, sizeof name));
    PetscCall(PetscObjectQueryFunction((PetscObject)aij, name, &f));
    if (!f) PetscCall(PetscObjectQueryFunction((PetscObject)dense, name, &f));
    tab->host[k] = f;
  }
  PetscCall(MatDestroy(&dense));
  tab->looked_up = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatConvert_SeqTile_SeqAIJ(Mat, MatType, MatReuse, Mat *);
static PetscErrorCode MatConvert_SeqAIJ_SeqTileHost(Mat, MatType, MatReuse, Mat *);
static PetscErrorCode MatConvert_SeqTile_Other(Mat, MatType, MatReuse, Mat *);
static PetscErrorCode MatProductSetFromOptions_SeqTile_Anytype(Mat);

/* Our own composed functions, under the tile object's type name tname:
 * conversions to and from plain AIJ and the products with it. */
typedef struct {
  const char *prefix, *suffix;
  int         fn; /* 0 to AIJ, 1 from AIJ, 2 product, 3 any-type product, 4 to another type through SeqAIJ */
} TileOwnName;

static const TileOwnName tile_own_names[] = {
  {"MatConvert_", "_seqaij_C", 0},
  /* SeqAIJ's converters to these would keep our ops on an object of
   * another type (and some replace spptr): the tile layer comes off first */
  {"MatConvert_", "_seqdense_C", 4},
  {"MatConvert_", "_seqbaij_C", 4},
  {"MatConvert_", "_seqsbaij_C", 4},
  {"MatConvert_", "_seqsell_C", 4},
  {"MatConvert_", "_is_C", 4},
  {"MatConvert_", "_hypre_C", 4},
  {"MatConvert_", "_seqaijperm_C", 4},
  {"MatConvert_", "_seqaijsell_C", 4},
  {"MatConvert_", "_seqaijcrl_C", 4},
  {"MatConvert_seqaij_", "_C", 1},
  {"MatConvert_seqaij_seqtile", "", 1}, /* the name users type, tname not used */
  {"MatProductSetFromOptions_", "_seqaij_C", 2},
  {"MatProductSetFromOptions_seqaij_", "_C", 2},
  {"MatProductSetFromOptions_anytype", "", 3},
#if TILE_DEVICE_AIJ
  {"MatConvert_", "_seqaijcusparse_C", 0},
  {"MatConvert_seqaijcusparse_", "_C", 1},
  {"MatConvert_seqaijcusparse_seqtile", "", 1},
  {"MatProductSetFromOptions_", "_seqaijcusparse_C", 2},
  {"MatProductSetFromOptions_seqaijcusparse_", "_C", 2},
#endif
};
#define TILE_NOWN (sizeof(tile_own_names) / sizeof(tile_own_names[0]))

/* Full name of an own function: prefix + tname + suffix, or for the
 * fixed names (empty suffix) prefix + "_C". */
static PetscErrorCode TileOwnFullName(const TileOwnName *o, const char *tname, char *name, size_t len)
{
  PetscFunctionBegin;
  PetscCall(PetscStrncpy(name, o->prefix, len));
  if (o->suffix[0]) {
    PetscCall(PetscStrlcat(name, tname, len));
    PetscCall(PetscStrlcat(name, o->suffix, len));
  } else PetscCall(PetscStrlcat(name, "_C", len));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Composes (set) or removes (!set) the aliases and our own functions under
 * the tile type name tname. */
static PetscErrorCode TileCompose(Mat B, PetscBool device, const char *tname, PetscBool set)
{
  PetscObject     o   = (PetscObject)B;
  TileAliasTable *tab = &tile_alias_tables[device ? 1 : 0];
  char            name[256];

  PetscFunctionBegin;
  /* on the device base none: SeqAIJ's converters and products read and
   * write the host arrays directly (stale beside AIJCUSPARSE's device copy)
   * or replace spptr, AIJCUSPARSE's; PETSc's generic paths go through
   * accessors that keep the copies in sync */
  if (set && !device) PetscCall(TileAliasLookup(B, device));
  for (size_t k = 0; k < TILE_NALIAS_HOST && !device; k++) {
    PetscCall(TileAliasFullName(&tile_alias_host[k], tname, name, sizeof name));
    if (!set || tab->host[k]) PetscCall(PetscObjectComposeFunction(o, name, set ? tab->host[k] : NULL));
  }
  for (size_t k = 0; k < TILE_NOWN; k++) {
    PetscCall(TileOwnFullName(&tile_own_names[k], tname, name, sizeof name));
    if (!set) PetscCall(PetscObjectComposeFunction(o, name, NULL));
    else if (tile_own_names[k].fn == 0) PetscCall(PetscObjectComposeFunction(o, name, MatConvert_SeqTile_SeqAIJ));
    else if (tile_own_names[k].fn == 1) PetscCall(PetscObjectComposeFunction(o, name, device || !tile_own_names[k].suffix[0] ? MatConvert_SeqAIJ_SeqTile : MatConvert_SeqAIJ_SeqTileHost));
    else if (tile_own_names[k].fn == 2) PetscCall(PetscObjectComposeFunction(o, name, MatProductSetFromOptions_SeqTile));
    else if (tile_own_names[k].fn == 4) PetscCall(PetscObjectComposeFunction(o, name, MatConvert_SeqTile_Other));
    else PetscCall(PetscObjectComposeFunction(o, name, MatProductSetFromOptions_SeqTile_Anytype));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Every other product with a tile operand: PETSc's dispatch
 * (MatProductSetFromOptions_Private) has queried
 * MatProductSetFromOptions_<A>_<B>[_<C>]_C under the tile type's name,
 * which nothing outside this library composes (e.g. MatProductSetFromOptions_seqaij_seqmaij_C
 * lives on MAIJ objects, _is_seqaij_C on MATIS ones), then the anytype
 * function, which is this one.  Here the dispatch continues the way it would
 * for SeqAIJ operands:
 *  - all operands tile or plain AIJ (triple products with mixed types):
 *    SeqAIJ would have matched its own setfromoptions on every operand;
 *  - else the implementation composed under the seqaij spelling of the
 *    name, queried on A, B, C in order;
 *  - else the other operands' anytype functions, in order.
 * Without a symbolic phase set here PETSc goes on with its dense-column and
 * "Unsafe" triple-product fallbacks, as for SeqAIJ. */
static PetscErrorCode MatProductSetFromOptions_SeqTile_Anytype(Mat C)
{
  Mat_Product *product = C->product;
  Mat          X[3];
  PetscInt     nx;
  PetscBool    allaij = PETSC_TRUE;
  char         name[256];
  PetscErrorCode (*f)(Mat) = NULL;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  X[0] = product->A;
  X[1] = product->B;
  X[2] = product->C;
  nx   = product->type == MATPRODUCT_ABC ? 3 : 2;
  for (PetscInt k = 0; k < nx; k++) {
    PetscBool istile, isaij;
    PetscCheck(X[k], PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "Missing operand %" PetscInt_FMT " of the product", k);
    PetscCall(TileIsSeqTile(X[k], &istile));
    PetscCall(TileIsPlainSeqAIJ(X[k], &isaij));
    if (!istile && !isaij) allaij = PETSC_FALSE;
  }
  if (allaij) {
    PetscCall(MatProductSetFromOptions_SeqTile(C));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscStrncpy(name, "MatProductSetFromOptions", sizeof name));
  for (PetscInt k = 0; k < nx; k++) {
    PetscBool istile;
    PetscCall(TileIsSeqTile(X[k], &istile));
    PetscCall(PetscStrlcat(name, "_", sizeof name));
    PetscCall(PetscStrlcat(name, istile ? MATSEQAIJ : ((PetscObject)X[k])->type_name, sizeof name));
  }
  PetscCall(PetscStrlcat(name, "_C", sizeof name));
  for (PetscInt k = 0; k < nx && !f; k++) PetscCall(PetscObjectQueryFunction((PetscObject)X[k], name, &f));
  PetscCall(PetscInfo(C, "tilerap: %s with a tile operand: %s %s\n", MatProductTypes[product->type], name, f ? "found" : "not found"));
  if (f) PetscCall((*f)(C));
  for (PetscInt k = 0; k < nx && !C->ops->productsymbolic; k++) {
    f = NULL;
    PetscCall(PetscObjectQueryFunction((PetscObject)X[k], "MatProductSetFromOptions_anytype_C", &f));
    if (f && f != MatProductSetFromOptions_SeqTile_Anytype) {
      PetscCall((*f)(C));
      break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

TileAIJOps tile_base_ops[2];

/* The base's implementations, taken from B (still of the base type) at the
 * first conversion of that base; on either base products the tile engine
 * does not make go to SeqAIJ's. */
static PetscErrorCode TileCaptureBaseOps(Mat B, PetscBool device)
{
  TileAIJOps *b = &tile_base_ops[device ? 1 : 0];

  PetscFunctionBegin;
  if (b->saved) PetscFunctionReturn(PETSC_SUCCESS);
  b->destroy               = B->ops->destroy;
  b->view                  = B->ops->view;
  b->setfromoptions        = B->ops->setfromoptions;
  b->productsetfromoptions = B->ops->productsetfromoptions;
  b->duplicate             = B->ops->duplicate;
  b->bindtocpu             = B->ops->bindtocpu;
  b->multtranspose         = B->ops->multtranspose;
  b->multtransposeadd      = B->ops->multtransposeadd;
#if TILE_GRAPH
  b->creategraph = B->ops->creategraph;
#endif
  if (device) {
    Mat aij;
    PetscCall(MatCreate(PETSC_COMM_SELF, &aij));
    PetscCall(MatSetSizes(aij, 1, 1, 1, 1));
    PetscCall(MatSetType(aij, MATSEQAIJ));
    b->fallback = aij->ops->productsetfromoptions;
    PetscCall(MatDestroy(&aij));
  } else b->fallback = b->productsetfromoptions;
  b->saved = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileRestoreBaseOps(Mat B, PetscBool device)
{
  const TileAIJOps *b = &tile_base_ops[device ? 1 : 0];

  PetscFunctionBegin;
  PetscCheck(b->saved, PETSC_COMM_SELF, PETSC_ERR_PLIB, "base implementations not captured");
  B->ops->destroy               = b->destroy;
  B->ops->view                  = b->view;
  B->ops->setfromoptions        = b->setfromoptions;
  B->ops->productsetfromoptions = b->productsetfromoptions;
  B->ops->duplicate             = b->duplicate;
  B->ops->bindtocpu             = b->bindtocpu;
#if TILE_DEVICE_AIJ
  if (!(device && B->boundtocpu)) /* bound to the CPU, B has the base's host versions */
#endif
  {
    B->ops->multtranspose    = b->multtranspose;
    B->ops->multtransposeadd = b->multtransposeadd;
  }
#if TILE_GRAPH
  B->ops->creategraph = b->creategraph;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Removes the tile data and our composed functions; ops back to the base
 * type's. */
static PetscErrorCode TileStrip(Mat B, PetscBool device)
{
  PetscFunctionBegin;
  /* under the name they were composed with: the object's name may already be another's */
  PetscCall(TileCompose(B, device, device ? MATSEQAIJTILE : MATSEQAIJTILEHOST, PETSC_FALSE));
  PetscCall(TileRestoreBaseOps(B, device));
  PetscCall(TileSetData(B, NULL));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One destroy per base: PETSc's header merges (MatHeaderMerge) destroy
 * an object with its composed objects, our data among them, set aside. */
static PetscErrorCode MatDestroy_SeqTileHost(Mat A)
{
  PetscFunctionBegin;
  PetscCall(TileStrip(A, PETSC_FALSE));
  PetscCall((*A->ops->destroy)(A)); /* the base's, restored by TileStrip */
  PetscFunctionReturn(PETSC_SUCCESS);
}

#if TILE_DEVICE_AIJ
static PetscErrorCode MatDestroy_SeqTileDevice(Mat A)
{
  PetscFunctionBegin;
  PetscCall(TileStrip(A, PETSC_TRUE));
  PetscCall((*A->ops->destroy)(A));
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

#if TILE_DEVICE_AIJ
/* MatDuplicate of AIJCUSPARSE makes the copy through the type name and
 * then converts it in place to AIJCUSPARSE again: the copy is made a tile
 * matrix again here, with A's options.  The host base's copy (SeqAIJ's,
 * through the type name) already is one. */
static PetscErrorCode MatDuplicate_SeqTile(Mat A, MatDuplicateOption op, Mat *B)
{
  Mat_SeqTile *a, *b;
  PetscBool    istile;

  PetscFunctionBegin;
  PetscCall(TileGetData(A, &a));
  PetscCall(tile_base_ops[a->device_aij].duplicate(A, op, B));
  PetscCall(TileIsSeqTile(*B, &istile));
  if (!istile) PetscCall(TileSeqConvertInPlace(*B, a->device_aij));
  PetscCall(TileGetData(*B, &b));
  b->opt = a->opt;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* AIJCUSPARSE swaps its ops between the host and device implementations
 * when bound to the CPU or released: ours are put back on top. */
static PetscErrorCode MatBindToCPU_SeqTile(Mat A, PetscBool flg)
{
  Mat_SeqTile *t;

  PetscFunctionBegin;
  PetscCall(TileGetData(A, &t));
  if (tile_base_ops[1].bindtocpu) PetscCall(tile_base_ops[1].bindtocpu(A, flg));
  A->ops->productsetfromoptions = MatProductSetFromOptions_SeqTile;
  if (!flg) { /* the base put its device versions back */
    A->ops->multtranspose    = MatMultTranspose_SeqTile;
    A->ops->multtransposeadd = MatMultTransposeAdd_SeqTile;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

/* ---------------------------------------------------------------- conversions */
PetscErrorCode TileConvertBegin(Mat A, MatReuse reuse, Mat *newmat, PetscErrorCode (*is_target)(Mat, PetscBool *), Mat *B)
{
  PetscBool done = PETSC_FALSE;

  PetscFunctionBegin;
  *B = NULL;
  if (reuse == MAT_REUSE_MATRIX) {
    PetscCall(MatCopy(A, *newmat, SAME_NONZERO_PATTERN));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (reuse == MAT_INITIAL_MATRIX) PetscCall(MatDuplicate(A, MAT_COPY_VALUES, newmat));
  if (is_target) PetscCall((*is_target)(*newmat, &done));
  if (done) PetscFunctionReturn(PETSC_SUCCESS);
  *B = *newmat;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileSeqConvertInPlace(Mat B, PetscBool device)
{
  Mat_SeqTile    *t;
  tilerap_options opt;
  PetscBool       ishost;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQAIJ, &ishost));
#if TILE_DEVICE_AIJ
  if (device && ishost) PetscCall(MatConvert(B, MATSEQAIJCUSPARSE, MAT_INPLACE_MATRIX, &B));
  else if (!device && !ishost) PetscCall(MatConvert(B, MATSEQAIJ, MAT_INPLACE_MATRIX, &B));
  {
    PetscBool iscusp;
    PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQAIJCUSPARSE, &iscusp));
    PetscCheck(device ? iscusp : !iscusp, PetscObjectComm((PetscObject)B), PETSC_ERR_SUP, "cannot make a tile matrix of a %s", ((PetscObject)B)->type_name);
  }
#else
  device = PETSC_FALSE;
  PetscCheck(ishost && !B->spptr, PetscObjectComm((PetscObject)B), PETSC_ERR_SUP, "cannot convert a %s that carries implementation data to %s", ((PetscObject)B)->type_name, MATSEQTILE);
#endif
  tilerap_options_default(&opt);
  PetscCall(TileOptionsFromDatabase(B, &opt));
  { /* in parallel runs MATMPITILE picks the device first (TileDeviceSelect) */
    PetscMPIInt size;
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    if (size == 1) PetscCall(TileDeviceWarmUp(&opt));
  }
  PetscCall(TileCaptureBaseOps(B, device));
  PetscCall(PetscNew(&t));
  t->opt                         = opt;
  t->device_aij                  = device;
  PetscCall(TileSetData(B, t));
#if TILE_DEVICE_AIJ
  B->ops->destroy = device ? MatDestroy_SeqTileDevice : MatDestroy_SeqTileHost;
#else
  B->ops->destroy = MatDestroy_SeqTileHost;
#endif
  B->ops->view                  = MatView_SeqTile;
  B->ops->setfromoptions        = MatSetFromOptions_SeqTile;
  B->ops->productsetfromoptions = MatProductSetFromOptions_SeqTile;
#if TILE_GRAPH
  B->ops->creategraph = MatCreateGraph_SeqTile;
#endif
#if TILE_DEVICE_AIJ
  B->ops->duplicate = MatDuplicate_SeqTile;
  if (device) B->ops->bindtocpu = MatBindToCPU_SeqTile;
  if (device && !B->boundtocpu) {
    B->ops->multtranspose    = MatMultTranspose_SeqTile;
    B->ops->multtransposeadd = MatMultTransposeAdd_SeqTile;
  }
#endif
  PetscCall(TileCompose(B, device, device ? MATSEQAIJTILE : MATSEQAIJTILEHOST, PETSC_TRUE));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, device ? MATSEQAIJTILE : MATSEQAIJTILEHOST));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Plain AIJ -> seqtile (MatConvert, -mat_type seqtile on an existing
 * matrix): on the device base in a PETSc built with CUDA; the host-AIJ
 * variant (MATSEQAIJTILEHOST by name) on host AIJ. */
static PetscErrorCode TileConvertToTile(Mat A, MatReuse reuse, Mat *newmat, PetscBool device)
{
  Mat B;

  PetscFunctionBegin;
  PetscCall(TileConvertBegin(A, reuse, newmat, TileIsSeqTile, &B));
  if (B) PetscCall(TileSeqConvertInPlace(B, device));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatConvert_SeqAIJ_SeqTile(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  PetscFunctionBegin;
  PetscCall(TileConvertToTile(A, reuse, newmat, (PetscBool)TILE_DEVICE_AIJ));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatConvert_SeqAIJ_SeqTileHost(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  PetscFunctionBegin;
  PetscCall(TileConvertToTile(A, reuse, newmat, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* seqtile -> another type: through plain SeqAIJ (host arrays in sync),
 * then SeqAIJ's conversion (or PETSc's generic one) to the type asked for. */
static PetscErrorCode MatConvert_SeqTile_Other(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat B;

  PetscFunctionBegin;
  if (reuse == MAT_REUSE_MATRIX) {
    PetscCall(MatCopy(A, *newmat, SAME_NONZERO_PATTERN));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  B = reuse == MAT_INPLACE_MATRIX ? A : NULL;
  PetscCall(MatConvert(A, MATSEQAIJ, reuse == MAT_INPLACE_MATRIX ? MAT_INPLACE_MATRIX : MAT_INITIAL_MATRIX, &B));
  PetscCall(MatConvert(B, type, MAT_INPLACE_MATRIX, &B));
  *newmat = B;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* seqtile -> its base type, then to the type asked for if that differs. */
static PetscErrorCode MatConvert_SeqTile_SeqAIJ(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat          B;
  Mat_SeqTile *t;
  MatType      base;
  PetscBool    same;

  PetscFunctionBegin;
  PetscCall(TileConvertBegin(A, reuse, newmat, NULL, &B));
  if (!B) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileGetData(B, &t));
  base = t->device_aij ? MATSEQAIJCUSPARSE : MATSEQAIJ;
  PetscCall(TileStrip(B, t->device_aij));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, base));
  PetscCall(PetscStrcmp(type, base, &same));
  if (!same) PetscCall(MatConvert(B, type, MAT_INPLACE_MATRIX, &B));
  *newmat = B;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreate_SeqTile(Mat B)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  PetscCall(MatCreate_SeqAIJCUSPARSE(B));
  PetscCall(TileSeqConvertInPlace(B, PETSC_TRUE));
#else
  PetscCall(MatCreate_SeqAIJ(B));
  PetscCall(TileSeqConvertInPlace(B, PETSC_FALSE));
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

#if TILE_DEVICE_AIJ
/* MATSEQAIJTILEHOST: the host-AIJ tile matrix of a PETSc built with CUDA
 * (a host block made a tile matrix for one product; MatDuplicate makes
 * copies through this name). */
PetscErrorCode MatCreate_SeqTileHost(Mat B)
{
  PetscFunctionBegin;
  PetscCall(MatCreate_SeqAIJ(B));
  PetscCall(TileSeqConvertInPlace(B, PETSC_FALSE));
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

PetscErrorCode MatCreateSeqTile(MPI_Comm comm, PetscInt m, PetscInt n, PetscInt nz, const PetscInt nnz[], Mat *A)
{
  PetscFunctionBegin;
  PetscCall(TileRAPInitializePackage());
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, m, n, m, n));
  PetscCall(MatSetType(*A, MATSEQTILE));
  PetscCall(MatSeqAIJSetPreallocation(*A, nz, nnz));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqTileGetTileMatrix(Mat A, const tilerap_tile_matrix **T)
{
  PetscBool istile;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  TileAssertPointer(T, 2);
  PetscCall(TileIsSeqTile(A, &istile));
  PetscCheck(istile, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not %s", ((PetscObject)A)->type_name, MATSEQTILE);
  {
    Mat_SeqTile *t;
    PetscCall(TileGetData(A, &t));
    PetscCall(TileCacheSync(A, &t->cache));
    *T = t->cache.T;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqTileGetSyncStats(Mat A, MatSeqTileSyncStats *s)
{
  PetscBool istile;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(TileIsSeqTile(A, &istile));
  PetscCheck(istile, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not %s", ((PetscObject)A)->type_name, MATSEQTILE);
  {
    Mat_SeqTile *t;
    PetscCall(TileGetData(A, &t));
    *s = t->cache.stats;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
