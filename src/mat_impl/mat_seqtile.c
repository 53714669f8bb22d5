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

TileAIJOps tile_aij_ops;

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
  PetscCall(PetscObjectTypeCompare((PetscObject)X, MATSEQAIJTILE, flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- options */
static PetscErrorCode MatSetFromOptions_SeqTile(Mat A, TileOptionItems PetscOptionsObject)
{
  PetscFunctionBegin;
  PetscCall(TileSetFromOptions(A, PetscOptionsObject, tile_aij_ops.setfromoptions, MATSEQTILE, &((Mat_SeqTile *)A->spptr)->opt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- view */
static PetscErrorCode MatView_SeqTile(Mat A, PetscViewer viewer)
{
  PetscBool         iascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  PetscCall(tile_aij_ops.view(A, viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &iascii));
  if (!iascii) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (format != PETSC_VIEWER_ASCII_INFO && format != PETSC_VIEWER_ASCII_INFO_DETAIL) PetscFunctionReturn(PETSC_SUCCESS);
  if (!A->assembled || !TILE_SCALAR_OK) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap: tile form not built (matrix not assembled or not real double)\n"));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  {
    Mat_SeqTile               *t = (Mat_SeqTile *)A->spptr;
    const tilerap_tile_matrix *T;
    tilerap_engine             e = tilerap_engine_resolve(t->opt.engine);

    PetscCall(TileCacheSync(A, &t->cache));
    T = t->cache.T;
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap: %" PetscInt64_FMT " tiles of 16x16 (%d x %d tile grid), %" PetscInt64_FMT " entries, %.2f mean entries per tile, engine %s (requested %s), dense threshold %d, tensor-core threshold %d (%s), CPU kernel %s\n",
                                     (PetscInt64)T->num_tiles, T->tile_rows, T->tile_cols, (PetscInt64)T->nnz, T->num_tiles ? (double)T->nnz / (double)T->num_tiles : 0.0,
                                     tilerap_engine_name(e), tilerap_engine_name(t->opt.engine), t->opt.dense_threshold, t->opt.tc_threshold, tilerap_precision_name(t->opt.precision), tilerap_cpu_kernel_name(t->opt.cpu_kernel)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- composed functions */
/* AIJ implementations composed on SeqAIJ objects under names that carry
 * the type name "seqaij"; the same functions are composed under the
 * "seqaijtile" spelling so conversions and products with other types keep
 * their AIJ implementation. */
static const char *const tile_alias_pairs[][2] = {
  {"MatConvert_seqaij_seqdense_C", "MatConvert_seqaijtile_seqdense_C"},
  {"MatConvert_seqaij_seqbaij_C", "MatConvert_seqaijtile_seqbaij_C"},
  {"MatConvert_seqaij_seqsbaij_C", "MatConvert_seqaijtile_seqsbaij_C"},
  {"MatConvert_seqaij_seqsell_C", "MatConvert_seqaijtile_seqsell_C"},
  {"MatConvert_seqaij_is_C", "MatConvert_seqaijtile_is_C"},
  {"MatConvert_seqaij_hypre_C", "MatConvert_seqaijtile_hypre_C"},
  {"MatConvert_seqaij_seqaijperm_C", "MatConvert_seqaijtile_seqaijperm_C"},
  {"MatConvert_seqaij_seqaijsell_C", "MatConvert_seqaijtile_seqaijsell_C"},
  {"MatConvert_seqaij_seqaijcrl_C", "MatConvert_seqaijtile_seqaijcrl_C"},
  {"MatProductSetFromOptions_seqaij_seqdense_C", "MatProductSetFromOptions_seqaijtile_seqdense_C"},
  {"MatProductSetFromOptions_seqdense_seqaij_C", "MatProductSetFromOptions_seqdense_seqaijtile_C"},
  {"MatProductSetFromOptions_seqaij_seqmaij_C", "MatProductSetFromOptions_seqaijtile_seqmaij_C"},
  {"MatProductSetFromOptions_seqaij_hypre_C", "MatProductSetFromOptions_seqaijtile_hypre_C"},
};
#define TILE_NALIAS (sizeof(tile_alias_pairs) / sizeof(tile_alias_pairs[0]))

static PetscErrorCode MatConvert_SeqTile_SeqAIJ(Mat, MatType, MatReuse, Mat *);

/* Our own composed functions (removed again when converting back). */
static const char *const tile_own_names[] = {
  "MatConvert_seqaijtile_seqaij_C",
  "MatConvert_seqaij_seqtile_C",
  "MatConvert_seqaij_seqaijtile_C",
  "MatProductSetFromOptions_seqaijtile_seqaij_C",
  "MatProductSetFromOptions_seqaij_seqaijtile_C",
  "MatProductSetFromOptions_anytype_C",
};
#define TILE_NOWN (sizeof(tile_own_names) / sizeof(tile_own_names[0]))

/* Every other product with a tile operand: PETSc's dispatch
 * (MatProductSetFromOptions_Private) has queried
 * MatProductSetFromOptions_<A>_<B>[_<C>]_C under the name "seqaijtile", which
 * nothing outside this library composes (e.g. MatProductSetFromOptions_seqaij_seqmaij_C
 * lives on MAIJ objects, _is_seqaij_C on MATIS ones), then the anytype
 * function, which is this one.  Here the dispatch continues the way it would
 * for SeqAIJ operands:
 *  - all operands seqaij or seqaijtile (triple products with mixed types):
 *    SeqAIJ would have matched its own setfromoptions on every operand;
 *  - else the implementation composed under the seqaij spelling of the name,
 *    queried on A, B, C in order;
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
    PetscCall(PetscObjectTypeCompare((PetscObject)X[k], MATSEQAIJ, &isaij));
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

/* The aliased implementations, looked up once on a SeqAIJ (B itself, still
 * plain) and on a SeqDense (products with dense matrices are composed on the
 * dense side).  Function addresses stay valid for the life of the process. */
static void (*tile_alias_fn[TILE_NALIAS])(void);
static PetscBool tile_alias_looked_up = PETSC_FALSE;

static PetscErrorCode TileAliasLookup(Mat aij)
{
  Mat dense;

  PetscFunctionBegin;
  if (tile_alias_looked_up) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatCreate(PETSC_COMM_SELF, &dense));
  PetscCall(MatSetSizes(dense, 1, 1, 1, 1));
  PetscCall(MatSetType(dense, MATSEQDENSE));
  for (size_t k = 0; k < TILE_NALIAS; k++) {
    void (*f)(void) = NULL;
    PetscCall(PetscObjectQueryFunction((PetscObject)aij, tile_alias_pairs[k][0], &f));
    if (!f) PetscCall(PetscObjectQueryFunction((PetscObject)dense, tile_alias_pairs[k][0], &f));
    tile_alias_fn[k] = f;
  }
  PetscCall(MatDestroy(&dense));
  tile_alias_looked_up = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileCompose(Mat B)
{
  PetscObject o = (PetscObject)B;

  PetscFunctionBegin;
  PetscCall(TileAliasLookup(B));
  for (size_t k = 0; k < TILE_NALIAS; k++)
    if (tile_alias_fn[k]) PetscCall(PetscObjectComposeFunction(o, tile_alias_pairs[k][1], tile_alias_fn[k]));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[0], MatConvert_SeqTile_SeqAIJ));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[1], MatConvert_SeqAIJ_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[2], MatConvert_SeqAIJ_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[3], MatProductSetFromOptions_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[4], MatProductSetFromOptions_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[5], MatProductSetFromOptions_SeqTile_Anytype));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Removes the tile data and our composed functions; ops back to SeqAIJ. */
static PetscErrorCode TileStrip(Mat B)
{
  Mat_SeqTile *t = (Mat_SeqTile *)B->spptr;

  PetscFunctionBegin;
  if (t) {
    PetscCall(TileCacheReset(&t->cache));
    PetscCall(PetscFree(B->spptr));
  }
  for (size_t k = 0; k < TILE_NALIAS; k++) PetscCall(PetscObjectComposeFunction((PetscObject)B, tile_alias_pairs[k][1], NULL));
  for (size_t k = 0; k < TILE_NOWN; k++) PetscCall(PetscObjectComposeFunction((PetscObject)B, tile_own_names[k], NULL));
  B->ops->destroy               = tile_aij_ops.destroy;
  B->ops->view                  = tile_aij_ops.view;
  B->ops->setfromoptions        = tile_aij_ops.setfromoptions;
  B->ops->productsetfromoptions = tile_aij_ops.productsetfromoptions;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatDestroy_SeqTile(Mat A)
{
  PetscFunctionBegin;
  PetscCall(TileStrip(A));
  PetscCall((*A->ops->destroy)(A)); /* SeqAIJ's, restored by TileStrip */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- conversions */
PetscErrorCode TileConvertBegin(Mat A, MatReuse reuse, Mat *newmat, PetscErrorCode (*is_target)(Mat, PetscBool *), MatType to, Mat *B)
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
  PetscCheck(!is_target || !(*newmat)->spptr, PetscObjectComm((PetscObject)*newmat), PETSC_ERR_SUP, "cannot convert a %s that carries implementation data to %s", ((PetscObject)*newmat)->type_name, to);
  *B = *newmat;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatConvert_SeqAIJ_SeqTile(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat             B;
  Mat_SeqTile    *t;
  tilerap_options opt;

  PetscFunctionBegin;
  PetscCall(TileConvertBegin(A, reuse, newmat, TileIsSeqTile, MATSEQTILE, &B));
  if (!B) PetscFunctionReturn(PETSC_SUCCESS);
  if (!tile_aij_ops.saved) { /* B is a plain SeqAIJ here: remember the implementations we replace */
    tile_aij_ops.destroy               = B->ops->destroy;
    tile_aij_ops.view                  = B->ops->view;
    tile_aij_ops.setfromoptions        = B->ops->setfromoptions;
    tile_aij_ops.productsetfromoptions = B->ops->productsetfromoptions;
    tile_aij_ops.saved                 = PETSC_TRUE;
  }
  tilerap_options_default(&opt);
  PetscCall(TileOptionsFromDatabase(B, &opt));
  { /* in parallel runs MATMPITILE picks the device first (TileDeviceSelect) */
    PetscMPIInt size;
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    if (size == 1) PetscCall(TileDeviceWarmUp(&opt));
  }
  PetscCall(PetscNew(&t));
  t->opt = opt;
  B->spptr                      = t;
  B->ops->destroy               = MatDestroy_SeqTile;
  B->ops->view                  = MatView_SeqTile;
  B->ops->setfromoptions        = MatSetFromOptions_SeqTile;
  B->ops->productsetfromoptions = MatProductSetFromOptions_SeqTile;
  PetscCall(TileCompose(B));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATSEQAIJTILE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatConvert_SeqTile_SeqAIJ(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat B;

  PetscFunctionBegin;
  PetscCall(TileConvertBegin(A, reuse, newmat, NULL, NULL, &B));
  if (!B) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileStrip(B));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATSEQAIJ));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreate_SeqTile(Mat B)
{
  PetscFunctionBegin;
  PetscCall(MatCreate_SeqAIJ(B));
  PetscCall(MatConvert_SeqAIJ_SeqTile(B, MATSEQTILE, MAT_INPLACE_MATRIX, &B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

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
  PetscCall(TileCacheSync(A, &((Mat_SeqTile *)A->spptr)->cache));
  *T = ((Mat_SeqTile *)A->spptr)->cache.T;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqTileGetSyncStats(Mat A, MatSeqTileSyncStats *s)
{
  PetscBool istile;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(TileIsSeqTile(A, &istile));
  PetscCheck(istile, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not %s", ((PetscObject)A)->type_name, MATSEQTILE);
  *s = ((Mat_SeqTile *)A->spptr)->cache.stats;
  PetscFunctionReturn(PETSC_SUCCESS);
}
