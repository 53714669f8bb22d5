/* MATMPITILE: a MATMPIAIJ whose diagonal and off-diagonal blocks are
 * seqtile (seqaijtile) matrices, built the way PETSc's MPI device AIJ types
 * wrap their local blocks: an MPIAIJ is created and converted in place (type
 * name "mpiaijtile", a few ops replaced, functions composed).  Every MPIAIJ
 * entry point that (re)creates the blocks as plain SeqAIJ (preallocation,
 * COO preallocation) is wrapped so that the blocks are converted to seqtile
 * right after, whoever calls it (DMDA, GAMG's prolongator, MatCreateSubMatrix,
 * the product's COO assembly).
 *
 * Products AB and PtAP with a tile operand run PETSc's distributed "backend"
 * algorithm (MatProductSymbolic_MPIAIJBACKEND): remote rows of P gathered,
 * local products on the SEQ blocks -- which are seqtile, so they reach the
 * tile engine -- and the result assembled with COO.  The wrappers around its
 * symbolic and numeric phases make sure the blocks' tile copies see every
 * change of the MPI matrix (some MPIAIJ ops call the blocks' ops directly,
 * without raising the blocks' object state) and that C is mpitile. */
#include "mat_seqtile_impl.h"

PETSC_EXTERN PetscErrorCode MatCreate_MPIAIJ(Mat);

typedef struct {
  PetscObjectState seen; /* MPI object state the blocks were last checked against */
  tilerap_options  opt;  /* propagated to the blocks */
} Mat_MPITile;

/* MPIAIJ implementations replaced or wrapped (captured from a plain MPIAIJ). */
static struct {
  PetscBool saved;
  PetscErrorCode (*destroy)(Mat);
  PetscErrorCode (*assemblyend)(Mat, MatAssemblyType);
  PetscErrorCode (*setfromoptions)(Mat, TileOptionItems);
  PetscErrorCode (*productsetfromoptions)(Mat);
  PetscErrorCode (*mpiaijsetpreallocation)(Mat, PetscInt, const PetscInt[], PetscInt, const PetscInt[]);
  PetscErrorCode (*setpreallocationcoo)(Mat, PetscCount, PetscInt[], PetscInt[]);
  PetscErrorCode (*setvaluescoo)(Mat, const PetscScalar[], InsertMode);
} tile_mpiaij_ops;

/* Aliases: every function an MPIAIJ composes under a name that carries the
 * type token "mpiaij" is composed under the "mpiaijtile" spelling as well
 * (conversions, products with dense/IS/hypre ...), found once from a plain
 * MPIAIJ's function list. */
static char    **tile_mpi_alias_name; /* "mpiaijtile" spelling */
static void (**tile_mpi_alias_fn)(void);
static int       tile_mpi_nalias = -1;

static PetscErrorCode TileMPIAliasFree(void)
{
  PetscFunctionBegin;
  for (int k = 0; k < tile_mpi_nalias; k++) PetscCall(PetscFree(tile_mpi_alias_name[k]));
  PetscCall(PetscFree(tile_mpi_alias_name));
  PetscCall(PetscFree(tile_mpi_alias_fn));
  tile_mpi_nalias       = -1;
  tile_mpiaij_ops.saved = PETSC_FALSE; /* looked up again after a new PetscInitialize() */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Names we compose ourselves: never aliased. */
static const char *const tile_mpi_own_names[] = {
  "MatMPIAIJSetPreallocation_C",
  "MatSetPreallocationCOO_C",
  "MatSetValuesCOO_C",
  "MatConvert_mpiaijtile_mpiaij_C",
  "MatConvert_mpiaijtile_aij_C",
  "MatConvert_mpiaij_mpiaijtile_C",
  "MatConvert_mpiaij_mpitile_C",
  "MatProductSetFromOptions_mpiaijtile_mpiaij_C",
  "MatProductSetFromOptions_mpiaij_mpiaijtile_C",
};
#define TILE_MPI_NOWN (sizeof(tile_mpi_own_names) / sizeof(tile_mpi_own_names[0]))

/* "..._mpiaij_..." -> "..._mpiaijtile_..." (token delimited by '_'); NULL if absent. */
static PetscErrorCode TileMPIAliasName(const char *name, char **alias)
{
  const char *hit = strstr(name, "_mpiaij_");
  size_t      len, tl = strlen("_mpiaij_");

  PetscFunctionBegin;
  *alias = NULL;
  if (!hit) PetscFunctionReturn(PETSC_SUCCESS);
  len = strlen(name) + strlen("tile") + 1;
  PetscCall(PetscMalloc1(len, alias));
  PetscCall(PetscSNPrintf(*alias, len, "%.*s_mpiaijtile_%s", (int)(hit - name), name, hit + tl));
  for (size_t k = 0; k < TILE_MPI_NOWN; k++) {
    PetscBool own;
    PetscCall(PetscStrcmp(*alias, tile_mpi_own_names[k], &own));
    if (own) PetscCall(PetscFree(*alias));
    if (own) break;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileMPIAliasLookup(Mat aij)
{
  const char **names = NULL;
  int          n     = 0;

  PetscFunctionBegin;
  if (tile_mpi_nalias >= 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscFunctionListGet(((PetscObject)aij)->qlist, &names, &n));
  PetscCall(PetscCalloc1(n + 1, &tile_mpi_alias_name));
  PetscCall(PetscCalloc1(n + 1, &tile_mpi_alias_fn));
  tile_mpi_nalias = 0;
  for (int k = 0; k < n; k++) {
    char *alias;
    void (*f)(void) = NULL;
    if (!names[k]) continue;
    PetscCall(TileMPIAliasName(names[k], &alias));
    if (!alias) continue;
    PetscCall(PetscObjectQueryFunction((PetscObject)aij, names[k], &f));
    if (!f) {
      PetscCall(PetscFree(alias));
      continue;
    }
    tile_mpi_alias_name[tile_mpi_nalias] = alias;
    tile_mpi_alias_fn[tile_mpi_nalias]   = f;
    tile_mpi_nalias++;
  }
  PetscCall(PetscFree(names));
  PetscCall(PetscRegisterFinalize(TileMPIAliasFree));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- blocks */
PetscErrorCode TileIsMPITile(Mat X, PetscBool *flg)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)X, MATMPIAIJTILE, flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Converts X's diagonal and off-diagonal blocks, where they exist and are
 * plain SeqAIJ, to seqtile in place (the objects stay the same, so every
 * pointer MPIAIJ keeps to them stays valid). */
static PetscErrorCode TileMPIConvertBlocks(Mat X)
{
  Mat_MPITile    *t = (Mat_MPITile *)X->spptr;
  Mat             blk[2];
  const PetscInt *garray;

  PetscFunctionBegin;
  PetscCall(MatMPIAIJGetSeqAIJ(X, &blk[0], &blk[1], &garray));
  for (int k = 0; k < 2; k++) {
    PetscBool istile, isaij;
    Mat       b = blk[k];
    if (!b) continue;
    PetscCall(TileIsSeqTile(b, &istile));
    if (!istile) {
      PetscCall(PetscObjectTypeCompare((PetscObject)b, MATSEQAIJ, &isaij));
      PetscCheck(isaij, PetscObjectComm((PetscObject)X), PETSC_ERR_SUP, "%s block of type %s: expected seqaij", k ? "off-diagonal" : "diagonal", ((PetscObject)b)->type_name);
      PetscCall(MatConvert_SeqAIJ_SeqTile(b, MATSEQTILE, MAT_INPLACE_MATRIX, &b));
    }
    if (t) ((Mat_SeqTile *)b->spptr)->opt = t->opt;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* MPIAIJ ops such as MatDiagonalScale call the blocks' ops directly and
 * raise only the MPI object's state.  When the MPI state moved since the
 * last check, the blocks' states are raised too, so that their tile copies
 * refresh (values only, unless the pattern changed) before the next use. */
PetscErrorCode TileMPISyncBlockStates(Mat X)
{
  Mat_MPITile     *t;
  Mat              Ad, Ao;
  const PetscInt  *garray;
  PetscObjectState st;
  PetscBool        istile;

  PetscFunctionBegin;
  PetscCall(TileIsMPITile(X, &istile));
  if (!istile) PetscFunctionReturn(PETSC_SUCCESS);
  t = (Mat_MPITile *)X->spptr;
  PetscCall(TileMPIConvertBlocks(X)); /* blocks some MPIAIJ routine replaced by plain SeqAIJ */
  PetscCall(PetscObjectStateGet((PetscObject)X, &st));
  if (st == t->seen) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatMPIAIJGetSeqAIJ(X, &Ad, &Ao, &garray));
  if (Ad) PetscCall(PetscObjectStateIncrease((PetscObject)Ad));
  if (Ao) PetscCall(PetscObjectStateIncrease((PetscObject)Ao));
  t->seen = st;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- wrapped MPIAIJ entry points */
static PetscErrorCode MatMPIAIJSetPreallocation_MPITile(Mat B, PetscInt d_nz, const PetscInt d_nnz[], PetscInt o_nz, const PetscInt o_nnz[])
{
  PetscFunctionBegin;
  PetscCall(tile_mpiaij_ops.mpiaijsetpreallocation(B, d_nz, d_nnz, o_nz, o_nnz));
  PetscCall(TileMPIConvertBlocks(B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatSetPreallocationCOO_MPITile(Mat B, PetscCount n, PetscInt coo_i[], PetscInt coo_j[])
{
  PetscFunctionBegin;
  PetscCall(tile_mpiaij_ops.setpreallocationcoo(B, n, coo_i, coo_j));
  PetscCall(TileMPIConvertBlocks(B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatSetValuesCOO_MPITile(Mat B, const PetscScalar v[], InsertMode imode)
{
  Mat             Ad, Ao;
  const PetscInt *garray;

  PetscFunctionBegin;
  PetscCall(tile_mpiaij_ops.setvaluescoo(B, v, imode));
  /* values written into the blocks' arrays: their tile copies must refresh */
  PetscCall(MatMPIAIJGetSeqAIJ(B, &Ad, &Ao, &garray));
  if (Ad) PetscCall(PetscObjectStateIncrease((PetscObject)Ad));
  if (Ao) PetscCall(PetscObjectStateIncrease((PetscObject)Ao));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Assembly may replace the blocks (MatCreateSubMatrix, disassembly after
 * new off-process columns): the new ones become seqtile as well. */
static PetscErrorCode MatAssemblyEnd_MPITile(Mat A, MatAssemblyType mode)
{
  PetscFunctionBegin;
  PetscCall(tile_mpiaij_ops.assemblyend(A, mode));
  if (mode == MAT_FINAL_ASSEMBLY) PetscCall(TileMPIConvertBlocks(A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- options, destroy */
static PetscErrorCode MatSetFromOptions_MPITile(Mat A, TileOptionItems PetscOptionsObject)
{
  Mat_MPITile *t = (Mat_MPITile *)A->spptr;

  PetscFunctionBegin;
  if (tile_mpiaij_ops.setfromoptions) PetscCall(tile_mpiaij_ops.setfromoptions(A, PetscOptionsObject));
  PetscCall(TileOptionsSection(A, PetscOptionsObject, "TileRAP matrix (mpitile) options", &t->opt));
  PetscCall(TileDeviceSelect(PetscObjectComm((PetscObject)A), &t->opt)); /* the engine may have become cuda */
  PetscCall(TileMPIConvertBlocks(A)); /* propagates the options */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatConvert_MPITile_MPIAIJ(Mat, MatType, MatReuse, Mat *);
PetscErrorCode        MatProductSetFromOptions_MPITile(Mat);

static PetscErrorCode TileMPICompose(Mat B)
{
  PetscObject o = (PetscObject)B;

  PetscFunctionBegin;
  for (int k = 0; k < tile_mpi_nalias; k++) PetscCall(PetscObjectComposeFunction(o, tile_mpi_alias_name[k], tile_mpi_alias_fn[k]));
  PetscCall(PetscObjectComposeFunction(o, "MatMPIAIJSetPreallocation_C", MatMPIAIJSetPreallocation_MPITile));
  PetscCall(PetscObjectComposeFunction(o, "MatSetPreallocationCOO_C", MatSetPreallocationCOO_MPITile));
  PetscCall(PetscObjectComposeFunction(o, "MatSetValuesCOO_C", MatSetValuesCOO_MPITile));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaijtile_mpiaij_C", MatConvert_MPITile_MPIAIJ));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaijtile_aij_C", MatConvert_MPITile_MPIAIJ));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaij_mpiaijtile_C", MatConvert_MPIAIJ_MPITile));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaij_mpitile_C", MatConvert_MPIAIJ_MPITile));
  PetscCall(PetscObjectComposeFunction(o, "MatProductSetFromOptions_mpiaijtile_mpiaij_C", MatProductSetFromOptions_MPITile));
  PetscCall(PetscObjectComposeFunction(o, "MatProductSetFromOptions_mpiaij_mpiaijtile_C", MatProductSetFromOptions_MPITile));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Back to MPIAIJ: our functions removed, the saved ones restored, blocks
 * converted back to plain SeqAIJ. */
static PetscErrorCode TileMPIStrip(Mat B, PetscBool blocks_too)
{
  PetscObject o = (PetscObject)B;

  PetscFunctionBegin;
  PetscCall(PetscFree(B->spptr));
  for (int k = 0; k < tile_mpi_nalias; k++) PetscCall(PetscObjectComposeFunction(o, tile_mpi_alias_name[k], NULL));
  for (size_t k = 3; k < TILE_MPI_NOWN; k++) PetscCall(PetscObjectComposeFunction(o, tile_mpi_own_names[k], NULL));
  PetscCall(PetscObjectComposeFunction(o, "MatMPIAIJSetPreallocation_C", tile_mpiaij_ops.mpiaijsetpreallocation));
  PetscCall(PetscObjectComposeFunction(o, "MatSetPreallocationCOO_C", tile_mpiaij_ops.setpreallocationcoo));
  PetscCall(PetscObjectComposeFunction(o, "MatSetValuesCOO_C", tile_mpiaij_ops.setvaluescoo));
  B->ops->destroy               = tile_mpiaij_ops.destroy;
  B->ops->assemblyend           = tile_mpiaij_ops.assemblyend;
  B->ops->setfromoptions        = tile_mpiaij_ops.setfromoptions;
  B->ops->productsetfromoptions = tile_mpiaij_ops.productsetfromoptions;
  if (blocks_too) {
    Mat             blk[2];
    const PetscInt *garray;
    PetscCall(MatMPIAIJGetSeqAIJ(B, &blk[0], &blk[1], &garray));
    for (int k = 0; k < 2; k++) {
      PetscBool istile;
      if (!blk[k]) continue;
      PetscCall(TileIsSeqTile(blk[k], &istile));
      if (istile) PetscCall(MatConvert(blk[k], MATSEQAIJ, MAT_INPLACE_MATRIX, &blk[k]));
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatDestroy_MPITile(Mat A)
{
  PetscFunctionBegin;
  PetscCall(TileMPIStrip(A, PETSC_FALSE));
  PetscCall((*A->ops->destroy)(A)); /* MPIAIJ's, restored by TileMPIStrip */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- conversions */
PetscErrorCode MatConvert_MPIAIJ_MPITile(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat          B;
  Mat_MPITile *t;
  PetscBool    istile, copied;
  void (*f)(void) = NULL;

  PetscFunctionBegin;
  PetscCall(TileConvertTarget(A, reuse, newmat, &copied));
  if (copied) PetscFunctionReturn(PETSC_SUCCESS);
  B = *newmat;
  PetscCall(TileIsMPITile(B, &istile));
  if (istile) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(!B->spptr, PetscObjectComm((PetscObject)B), PETSC_ERR_SUP, "cannot convert a %s that carries implementation data to %s", ((PetscObject)B)->type_name, MATMPITILE);
  if (!tile_mpiaij_ops.saved) { /* B is a plain MPIAIJ here: remember what we replace */
    tile_mpiaij_ops.destroy               = B->ops->destroy;
    tile_mpiaij_ops.assemblyend           = B->ops->assemblyend;
    tile_mpiaij_ops.setfromoptions        = B->ops->setfromoptions;
    tile_mpiaij_ops.productsetfromoptions = B->ops->productsetfromoptions;
    PetscCall(PetscObjectQueryFunction((PetscObject)B, "MatMPIAIJSetPreallocation_C", &f));
    tile_mpiaij_ops.mpiaijsetpreallocation = (PetscErrorCode(*)(Mat, PetscInt, const PetscInt[], PetscInt, const PetscInt[]))f;
    PetscCall(PetscObjectQueryFunction((PetscObject)B, "MatSetPreallocationCOO_C", &f));
    tile_mpiaij_ops.setpreallocationcoo = (PetscErrorCode(*)(Mat, PetscCount, PetscInt[], PetscInt[]))f;
    PetscCall(PetscObjectQueryFunction((PetscObject)B, "MatSetValuesCOO_C", &f));
    tile_mpiaij_ops.setvaluescoo = (PetscErrorCode(*)(Mat, const PetscScalar[], InsertMode))f;
    PetscCheck(tile_mpiaij_ops.mpiaijsetpreallocation && tile_mpiaij_ops.setpreallocationcoo && tile_mpiaij_ops.setvaluescoo, PETSC_COMM_SELF, PETSC_ERR_PLIB,
               "MPIAIJ preallocation/COO functions not found");
    PetscCall(TileMPIAliasLookup(B));
    tile_mpiaij_ops.saved = PETSC_TRUE;
  }
  PetscCall(PetscNew(&t));
  tilerap_options_default(&t->opt);
  PetscCall(TileOptionsFromDatabase(B, &t->opt));
  PetscCall(TileDeviceSelect(PetscObjectComm((PetscObject)B), &t->opt)); /* one GPU per rank */
  B->spptr                      = t;
  B->ops->destroy               = MatDestroy_MPITile;
  B->ops->assemblyend           = MatAssemblyEnd_MPITile;
  B->ops->setfromoptions        = MatSetFromOptions_MPITile;
  B->ops->productsetfromoptions = MatProductSetFromOptions_MPITile;
  PetscCall(TileMPICompose(B));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATMPIAIJTILE));
  PetscCall(TileMPIConvertBlocks(B)); /* blocks that exist already */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatConvert_MPITile_MPIAIJ(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat       B;
  PetscBool copied;

  PetscFunctionBegin;
  PetscCall(TileConvertTarget(A, reuse, newmat, &copied));
  if (copied) PetscFunctionReturn(PETSC_SUCCESS);
  B = *newmat;
  PetscCall(TileMPIStrip(B, PETSC_TRUE));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATMPIAIJ));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreate_MPITile(Mat B)
{
  PetscFunctionBegin;
  PetscCall(MatCreate_MPIAIJ(B));
  PetscCall(MatConvert_MPIAIJ_MPITile(B, MATMPITILE, MAT_INPLACE_MATRIX, &B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreateMPITile(MPI_Comm comm, PetscInt m, PetscInt n, PetscInt M, PetscInt N, PetscInt d_nz, const PetscInt d_nnz[], PetscInt o_nz, const PetscInt o_nnz[], Mat *A)
{
  PetscFunctionBegin;
  PetscCall(TileRAPInitializePackage());
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, m, n, M, N));
  PetscCall(MatSetType(*A, MATMPITILE));
  PetscCall(MatMPIAIJSetPreallocation(*A, d_nz, d_nnz, o_nz, o_nnz));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- products */
/* The MPIAIJ symbolic/numeric phases our wrappers call are composed on C
 * (function pointers, so nothing to free). */
#define TILE_INNER_SYMBOLIC "MatProductSymbolic_MPITileInner_C"
#define TILE_INNER_NUMERIC  "MatProductNumeric_MPITileInner_C"

static PetscErrorCode MatProductNumeric_MPITile(Mat C)
{
  PetscErrorCode (*inner)(Mat) = NULL;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  PetscCall(PetscObjectQueryFunction((PetscObject)C, TILE_INNER_NUMERIC, &inner));
  PetscCheck(inner, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "mpitile product: numeric phase missing");
  PetscCall(TileMPISyncBlockStates(C->product->A));
  PetscCall(TileMPISyncBlockStates(C->product->B));
  PetscCall((*inner)(C));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatProductSymbolic_MPITile(Mat C)
{
  PetscErrorCode (*inner)(Mat) = NULL;
  PetscBool istile;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  PetscCall(PetscObjectQueryFunction((PetscObject)C, TILE_INNER_SYMBOLIC, &inner));
  PetscCheck(inner, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "mpitile product: symbolic phase missing");
  PetscCall(TileMPISyncBlockStates(C->product->A));
  PetscCall(TileMPISyncBlockStates(C->product->B));
  PetscCall((*inner)(C));
  /* C of the tile type, its blocks seqtile (they are the next level's operands) */
  PetscCall(TileIsMPITile(C, &istile));
  if (!istile) PetscCall(MatConvert_MPIAIJ_MPITile(C, MATMPITILE, MAT_INPLACE_MATRIX, &C));
  PetscCall(TileMPIConvertBlocks(C));
  PetscCall(PetscObjectComposeFunction((PetscObject)C, TILE_INNER_NUMERIC, C->ops->productnumeric));
  C->ops->productnumeric = MatProductNumeric_MPITile;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* AB and PtAP with a tile operand (the other mpitile or plain mpiaij): the
 * MPIAIJ "backend" algorithm, whose local products are the blocks' (seqtile)
 * products.  Everything else: the MPIAIJ implementation. */
PetscErrorCode MatProductSetFromOptions_MPITile(Mat C)
{
  Mat_Product *product = C->product;
  Mat          A, B;
  PetscBool    atile, btile, aaij, baij, algok = PETSC_TRUE;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  A = product->A;
  B = product->B;
  PetscCall(TileIsMPITile(A, &atile));
  PetscCall(TileIsMPITile(B, &btile));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATMPIAIJ, &aaij));
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATMPIAIJ, &baij));
  if (product->alg) {
    PetscBool isdef, istile, isbackend;
    PetscCall(PetscStrcmp(product->alg, MATPRODUCTALGORITHMDEFAULT, &isdef));
    PetscCall(PetscStrcmp(product->alg, "tile", &istile));
    PetscCall(PetscStrcmp(product->alg, "backend", &isbackend));
    algok = (PetscBool)(isdef || istile || isbackend);
  }
  PetscCheck(tile_mpiaij_ops.productsetfromoptions, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "MPIAIJ product implementation not captured");
  if (TILE_SCALAR_OK && algok && (product->type == MATPRODUCT_AB || product->type == MATPRODUCT_PtAP) && (atile || btile) && (atile || aaij) && (btile || baij)) {
    PetscCall(MatProductSetAlgorithm(C, "backend"));
    PetscCall(tile_mpiaij_ops.productsetfromoptions(C)); /* -matmatmult_via / -matptap_via may still pick another algorithm */
    if (C->ops->productsymbolic) {
      PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s: MPIAIJ algorithm %s, local products on the blocks' tile engine\n", MatProductTypes[product->type], ((PetscObject)A)->type_name,
                          ((PetscObject)B)->type_name, product->alg));
      PetscCall(PetscObjectComposeFunction((PetscObject)C, TILE_INNER_SYMBOLIC, C->ops->productsymbolic));
      C->ops->productsymbolic = MatProductSymbolic_MPITile;
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s (algorithm %s): MPIAIJ implementation\n", MatProductTypes[product->type], ((PetscObject)A)->type_name, ((PetscObject)B)->type_name,
                      product->alg ? product->alg : "none"));
  PetscCall(tile_mpiaij_ops.productsetfromoptions(C));
  PetscFunctionReturn(PETSC_SUCCESS);
}
