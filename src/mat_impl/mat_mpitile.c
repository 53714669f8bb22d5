/* MATMPITILE: a MATMPIAIJ -- MATMPIAIJCUSPARSE in a PETSc built with CUDA,
 * so that MatMult, the smoothers and the solve stay on the device -- whose
 * diagonal and off-diagonal blocks are seqtile matrices, built the way
 * PETSc's MPI device AIJ types wrap their local blocks: the base type is
 * created and converted in place (type name "mpiaijtile", a few ops
 * replaced, functions composed).  Every entry point of the base that
 * (re)creates the blocks as plain SeqAIJ(CUSPARSE) (preallocation, COO
 * preallocation) is wrapped so that the blocks are converted to seqtile
 * right after, whoever calls it (DMDA, GAMG's prolongator,
 * MatCreateSubMatrix, the product's COO assembly).
 *
 * Products AB, AtB and PtAP with a tile operand run PETSc's distributed
 * "backend" algorithm (MatProductSymbolic_MPIAIJBACKEND): remote rows of P
 * gathered, local products on the SEQ blocks -- which are seqtile, so they
 * reach the tile engine (on the device CSR with CUDA) -- and the result
 * assembled with COO (on the device with CUDA).  The wrappers around its
 * symbolic and numeric phases make sure the blocks' tile copies see every
 * change of the MPI matrix (some MPIAIJ ops call the blocks' ops directly,
 * without raising the blocks' object state), that C is mpitile, and that a
 * reuse with other operands or changed patterns plans again.  Any other
 * product (type, operand types, or an algorithm picked through the
 * options) is left to the base as it stands. */
#include "mat_seqtile_impl.h"

PETSC_EXTERN PetscErrorCode MatCreate_MPIAIJ(Mat);

/* The base of the MPI type and of its blocks. */
#if TILE_DEVICE_AIJ
PETSC_EXTERN PetscErrorCode MatCreate_MPIAIJCUSPARSE(Mat);
  #define TILE_MPI_BASE MATMPIAIJCUSPARSE
  #define TILE_SEQ_BASE MATSEQAIJCUSPARSE
#else
  #define TILE_MPI_BASE MATMPIAIJ
  #define TILE_SEQ_BASE MATSEQAIJ
#endif

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
  "MatConvert_mpiaijtile_mpiaijcusparse_C",
  "MatConvert_mpiaijtile_aijcusparse_C",
  "MatProductSetFromOptions_mpiaijtile_mpimaij_C",
  "MatProductSetFromOptions_mpiaijtile_mpiaij_C",
  "MatProductSetFromOptions_mpiaij_mpiaijtile_C",
  /* ABC: PETSc looks up three type names when the operands' ops differ */
  "MatProductSetFromOptions_mpiaijtile_mpiaij_mpiaij_C",
  "MatProductSetFromOptions_mpiaij_mpiaijtile_mpiaij_C",
  "MatProductSetFromOptions_mpiaij_mpiaij_mpiaijtile_C",
  "MatProductSetFromOptions_mpiaijtile_mpiaijtile_mpiaij_C",
  "MatProductSetFromOptions_mpiaijtile_mpiaij_mpiaijtile_C",
  "MatProductSetFromOptions_mpiaij_mpiaijtile_mpiaijtile_C",
#if TILE_DEVICE_AIJ
  /* the same with the device base as the other operand */
  "MatProductSetFromOptions_mpiaijtile_mpiaijcusparse_C",
  "MatProductSetFromOptions_mpiaijcusparse_mpiaijtile_C",
  "MatProductSetFromOptions_mpiaijtile_mpiaijcusparse_mpiaijcusparse_C",
  "MatProductSetFromOptions_mpiaijcusparse_mpiaijtile_mpiaijcusparse_C",
  "MatProductSetFromOptions_mpiaijcusparse_mpiaijcusparse_mpiaijtile_C",
  "MatProductSetFromOptions_mpiaijtile_mpiaijtile_mpiaijcusparse_C",
  "MatProductSetFromOptions_mpiaijtile_mpiaijcusparse_mpiaijtile_C",
  "MatProductSetFromOptions_mpiaijcusparse_mpiaijtile_mpiaijtile_C",
#endif
};
/* the last ones: all MatProductSetFromOptions_MPITile */
#define TILE_MPI_NOWN_PRODUCT (TILE_DEVICE_AIJ ? 16 : 8)
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

/* Adds the aliases of the functions composed on X whose names begin with
 * prefix (NULL: all). */
static PetscErrorCode TileMPIAliasAdd(Mat X, const char *prefix, PetscInt cap)
{
  const char **names = NULL;
  int          n     = 0;

  PetscFunctionBegin;
  PetscCall(PetscFunctionListGet(((PetscObject)X)->qlist, &names, &n));
  for (int k = 0; k < n && tile_mpi_nalias < cap; k++) {
    char     *alias;
    PetscBool match = PETSC_TRUE, dup = PETSC_FALSE;
    void (*f)(void) = NULL;
    if (!names[k]) continue;
    if (prefix) PetscCall(PetscStrbeginswith(names[k], prefix, &match));
    if (!match) continue;
    PetscCall(TileMPIAliasName(names[k], &alias));
    if (!alias) continue;
    for (int i = 0; i < tile_mpi_nalias && !dup; i++) PetscCall(PetscStrcmp(alias, tile_mpi_alias_name[i], &dup));
    if (!dup) PetscCall(PetscObjectQueryFunction((PetscObject)X, names[k], &f));
    if (!f) {
      PetscCall(PetscFree(alias));
      continue;
    }
    tile_mpi_alias_name[tile_mpi_nalias] = alias;
    tile_mpi_alias_fn[tile_mpi_nalias]   = f;
    tile_mpi_nalias++;
  }
  PetscCall(PetscFree(names));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* From a plain MPIAIJ (aij, not yet converted) and a plain MPIDense: the
 * products of dense and AIJ matrices are composed on the dense side only
 * (MatProductSetFromOptions_mpidense_mpiaij_C, ..._mpiaij_mpidense_C), and
 * PETSc looks them up by the operands' type names. */
static PetscErrorCode TileMPIAliasLookup(Mat aij)
{
  const PetscInt cap = 512;
  Mat            dense;

  PetscFunctionBegin;
  if (tile_mpi_nalias >= 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscCalloc1(cap, &tile_mpi_alias_name));
  PetscCall(PetscCalloc1(cap, &tile_mpi_alias_fn));
  tile_mpi_nalias = 0;
  PetscCall(PetscRegisterFinalize(TileMPIAliasFree));
  PetscCall(TileMPIAliasAdd(aij, NULL, cap));
  PetscCall(MatCreate(PETSC_COMM_SELF, &dense));
  PetscCall(MatSetSizes(dense, 1, 1, 1, 1));
  PetscCall(MatSetType(dense, MATMPIDENSE));
  PetscCall(TileMPIAliasAdd(dense, "MatProductSetFromOptions_", cap));
  PetscCall(MatDestroy(&dense));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- blocks */
PetscErrorCode TileIsMPITile(Mat X, PetscBool *flg)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)X, MATMPIAIJTILE, flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileIsPlainMPIAIJ(Mat X, PetscBool *flg)
{
  PetscFunctionBegin;
  /* the base only: with CUDA, a host MPIAIJ operand and a device tile one
   * are left to MPIAIJ (C's COO assembly lives in one memory) */
  PetscCall(PetscObjectTypeCompare((PetscObject)X, TILE_MPI_BASE, flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Converts X's diagonal and off-diagonal blocks, where they exist and are
 * plain SeqAIJ(CUSPARSE), to seqtile in place (the objects stay the same,
 * so every pointer MPIAIJ keeps to them stays valid): on the device base
 * in a PETSc built with CUDA, as the MPI type's. */
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
      PetscCall(TileIsPlainSeqAIJ(b, &isaij));
      PetscCheck(isaij, PetscObjectComm((PetscObject)X), PETSC_ERR_SUP, "%s block of type %s: expected %s", k ? "off-diagonal" : "diagonal", ((PetscObject)b)->type_name, TILE_SEQ_BASE);
      PetscCall(TileSeqConvertInPlace(b, (PetscBool)TILE_DEVICE_AIJ));
    }
    if (t) {
      Mat_SeqTile *bt;
      PetscCall(TileGetData(b, &bt));
      bt->opt = t->opt;
    }
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
  PetscCall(TileSetFromOptions(A, PetscOptionsObject, tile_mpiaij_ops.setfromoptions, MATMPITILE, &t->opt));
  PetscCall(TileDeviceSelect(PetscObjectComm((PetscObject)A), &t->opt)); /* the engine may have become cuda */
  PetscCall(TileMPIConvertBlocks(A)); /* propagates the options */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatConvert_MPITile_MPIAIJ(Mat, MatType, MatReuse, Mat *);
PetscErrorCode        MatProductSetFromOptions_MPITile(Mat);

/* Products whose MPIAIJ implementation is composed on the other operand
 * only when that one is created on several ranks (MPIMAIJ's
 * MatProductSetFromOptions_mpiaij_mpimaij_C): found there under the
 * "mpiaij" spelling of this matrix's type. */
static PetscErrorCode MatProductSetFromOptions_MPITile_Other(Mat C)
{
  Mat_Product *product = C->product;
  char         name[256];
  const char  *ta = ((PetscObject)product->A)->type_name, *tb = ((PetscObject)product->B)->type_name;
  PetscBool    atile, btile;
  PetscErrorCode (*f)(Mat) = NULL;

  PetscFunctionBegin;
  PetscCall(TileIsMPITile(product->A, &atile));
  PetscCall(TileIsMPITile(product->B, &btile));
  PetscCall(PetscSNPrintf(name, sizeof(name), "MatProductSetFromOptions_%s_%s_C", atile ? MATMPIAIJ : ta, btile ? MATMPIAIJ : tb));
  PetscCall(PetscObjectQueryFunction((PetscObject)(atile ? product->B : product->A), name, &f));
  if (f) PetscCall((*f)(C));
  PetscFunctionReturn(PETSC_SUCCESS);
}

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
#if TILE_DEVICE_AIJ
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaijtile_mpiaijcusparse_C", MatConvert_MPITile_MPIAIJ));
  PetscCall(PetscObjectComposeFunction(o, "MatConvert_mpiaijtile_aijcusparse_C", MatConvert_MPITile_MPIAIJ));
#endif
  PetscCall(PetscObjectComposeFunction(o, "MatProductSetFromOptions_mpiaijtile_mpimaij_C", MatProductSetFromOptions_MPITile_Other));
  for (size_t k = TILE_MPI_NOWN - TILE_MPI_NOWN_PRODUCT; k < TILE_MPI_NOWN; k++) PetscCall(PetscObjectComposeFunction(o, tile_mpi_own_names[k], MatProductSetFromOptions_MPITile));
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
      if (istile) PetscCall(MatConvert(blk[k], TILE_SEQ_BASE, MAT_INPLACE_MATRIX, &blk[k]));
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
  void (*f)(void) = NULL;

  PetscFunctionBegin;
  PetscCall(TileConvertBegin(A, reuse, newmat, TileIsMPITile, &B));
  if (!B) PetscFunctionReturn(PETSC_SUCCESS);
#if TILE_DEVICE_AIJ
  { /* a host MPIAIJ moves to the device base first */
    PetscBool ishost;
    PetscCall(PetscObjectTypeCompare((PetscObject)B, MATMPIAIJ, &ishost));
    if (ishost) PetscCall(MatConvert(B, MATMPIAIJCUSPARSE, MAT_INPLACE_MATRIX, &B));
  }
#endif
  PetscCheck(!B->spptr, PetscObjectComm((PetscObject)B), PETSC_ERR_SUP, "cannot convert a %s that carries implementation data to %s", ((PetscObject)B)->type_name, MATMPITILE);
  if (!tile_mpiaij_ops.saved) { /* B is a plain MPIAIJ(CUSPARSE) here: remember what we replace */
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
  {
    tilerap_options opt; /* checked before anything is attached */
    tilerap_options_default(&opt);
    PetscCall(TileOptionsFromDatabase(B, &opt));
    PetscCall(TileDeviceSelect(PetscObjectComm((PetscObject)B), &opt)); /* one GPU per rank */
    PetscCall(PetscNew(&t));
    t->opt = opt;
  }
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
  Mat B;

  PetscFunctionBegin;
  PetscCall(TileConvertBegin(A, reuse, newmat, NULL, &B));
  if (!B) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileMPIStrip(B, PETSC_TRUE));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, TILE_MPI_BASE));
#if TILE_DEVICE_AIJ
  { /* the base, then host MPIAIJ if that was asked for ("aij", "mpiaij") */
    PetscBool dev, devroot;
    PetscCall(PetscStrcmp(type, MATMPIAIJCUSPARSE, &dev));
    PetscCall(PetscStrcmp(type, MATAIJCUSPARSE, &devroot));
    if (!dev && !devroot) PetscCall(MatConvert(B, MATMPIAIJ, MAT_INPLACE_MATRIX, &B));
  }
#endif
  *newmat = B;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreate_MPITile(Mat B)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  PetscCall(MatCreate_MPIAIJCUSPARSE(B));
#else
  PetscCall(MatCreate_MPIAIJ(B));
#endif
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
/* The MPIAIJ symbolic phase our wrapper calls, composed on C between
 * MatProductSetFromOptions and MatProductSymbolic (a function pointer,
 * nothing to free). */
#define TILE_INNER_SYMBOLIC "MatProductSymbolic_MPITileInner_C"

typedef PetscErrorCode (*TileProductDestroyFn)(TILE_PRODUCT_DESTROY_ARG);

/* What a numeric phase must find unchanged to reuse the plan: the operand
 * object, its (global) nonzero pattern and its local blocks, which the
 * local products and the gathered rows hold on to. */
typedef struct {
  PetscObjectId    id, blk_id[2];
  PetscObjectState nz, blk_nz[2];
} TileOperandRecord;

/* Product data of a tile product: the MPIAIJ backend's own data, run with
 * it swapped into C->product->data, and what it was planned for. */
typedef struct {
  void                *data;
  TileProductDestroyFn destroy;
  PetscErrorCode (*view)(Mat, PetscViewer);
  PetscErrorCode (*symbolic)(Mat);
  PetscErrorCode (*numeric)(Mat);
  TileOperandRecord a, b;
  PetscObjectState  cnz;
  PetscInt          nplans, nnumeric;
} TileMPIProduct;

static PetscErrorCode TileOperandRecordGet(Mat X, TileOperandRecord *r)
{
  Mat             blk[2];
  const PetscInt *garray;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(r, sizeof(*r)));
  PetscCall(PetscObjectGetId((PetscObject)X, &r->id));
  r->nz = X->nonzerostate;
  PetscCall(MatMPIAIJGetSeqAIJ(X, &blk[0], &blk[1], &garray));
  for (int k = 0; k < 2; k++) {
    if (!blk[k]) continue;
    PetscCall(PetscObjectGetId((PetscObject)blk[k], &r->blk_id[k]));
    r->blk_nz[k] = blk[k]->nonzerostate;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscBool TileOperandRecordSame(const TileOperandRecord *x, const TileOperandRecord *y)
{
  return (PetscBool)(x->id == y->id && x->nz == y->nz && x->blk_id[0] == y->blk_id[0] && x->blk_id[1] == y->blk_id[1] && x->blk_nz[0] == y->blk_nz[0] && x->blk_nz[1] == y->blk_nz[1]);
}

static PetscErrorCode TileInnerDestroy(TileMPIProduct *w)
{
  PetscFunctionBegin;
  if (w->data && w->destroy) PetscCall((*w->destroy)(TILE_PRODUCT_DESTROY_PASS(w->data)));
  w->data    = NULL;
  w->destroy = NULL;
  w->view    = NULL;
  w->numeric = NULL;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileMPIProductDestroy(TILE_PRODUCT_DESTROY_ARG arg)
{
  TileMPIProduct *w = (TileMPIProduct *)TILE_PRODUCT_DESTROY_DATA(arg);

  PetscFunctionBegin;
  if (!w) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileInnerDestroy(w));
  PetscCall(PetscFree(w));
#if !PETSC_VERSION_LT(3, 25, 0)
  *(void **)arg = NULL;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileMPIProductView(Mat, PetscViewer);

/* C's product data, destroy and view: the backend's own, held in w (inner),
 * or w with ours around it. */
static void TileMPIProductSwap(Mat C, TileMPIProduct *w, PetscBool inner)
{
  Mat_Product *product = C->product;

  product->data    = inner ? w->data : (void *)w;
  product->destroy = inner ? (PetscErrorCode(*)(TILE_PRODUCT_DESTROY_ARG))w->destroy : TileMPIProductDestroy;
  product->view    = inner ? w->view : TileMPIProductView;
}

static PetscErrorCode TileMPIProductView(Mat C, PetscViewer viewer)
{
  TileMPIProduct *w = (TileMPIProduct *)C->product->data;
  PetscBool       iascii;
  PetscErrorCode  ierr = PETSC_SUCCESS;

  PetscFunctionBegin;
  if (!w) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &iascii));
  if (iascii)
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap %s product: MPIAIJ backend algorithm, local products on the tile engine; %" PetscInt_FMT " plan(s), %" PetscInt_FMT " numeric phase(s)\n",
                                     MatProductTypes[C->product->type], w->nplans, w->nnumeric));
  if (w->view) {
    TileMPIProductSwap(C, w, PETSC_TRUE);
    ierr = (*w->view)(C, viewer);
    TileMPIProductSwap(C, w, PETSC_FALSE);
  }
  PetscCall(ierr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* When the backend's "A" (AB, PtAP, or AtB done as AB for a symmetric A)
 * is plain MPIAIJ and B is tile, the gathered rows of P take A's
 * off-diagonal block's type, so A_off * P_oth would be a SeqAIJ product,
 * whose C stays unassembled after its symbolic phase and is then an
 * operand of the tile product P_loc^T * (A_off * P_oth).  A's plain blocks
 * are therefore seqtile for the symbolic phase only (in place, no copy):
 * every local product is a tile product, and their numeric phases take
 * the blocks as plain SeqAIJ operands. */
static PetscErrorCode TileMPIBlocksToTile(Mat X, const tilerap_options *opt, PetscBool conv[2])
{
  Mat             blk[2];
  const PetscInt *garray;

  PetscFunctionBegin;
  conv[0] = conv[1] = PETSC_FALSE;
  PetscCall(MatMPIAIJGetSeqAIJ(X, &blk[0], &blk[1], &garray));
  for (int k = 0; k < 2; k++) {
    PetscBool    isbase;
    Mat          b = blk[k];
    Mat_SeqTile *bt;
    if (!b) continue;
    PetscCall(PetscObjectTypeCompare((PetscObject)b, TILE_SEQ_BASE, &isbase));
    if (!isbase || (!TILE_DEVICE_AIJ && b->spptr)) continue; /* host SeqAIJ carrying other data: not ours */
    PetscCall(TileSeqConvertInPlace(b, (PetscBool)TILE_DEVICE_AIJ));
    PetscCall(TileGetData(b, &bt));
    bt->opt = *opt;
    conv[k] = PETSC_TRUE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileMPIBlocksBack(Mat X, const PetscBool conv[2])
{
  Mat             blk[2];
  const PetscInt *garray;

  PetscFunctionBegin;
  PetscCall(MatMPIAIJGetSeqAIJ(X, &blk[0], &blk[1], &garray));
  for (int k = 0; k < 2; k++) {
    PetscErrorCode (*back)(Mat, MatType, MatReuse, Mat *) = NULL;
    Mat  b                                                 = blk[k];
    char name[128];
    if (!conv[k] || !b) continue;
    PetscCall(PetscSNPrintf(name, sizeof name, "MatConvert_%s_seqaij_C", ((PetscObject)b)->type_name));
    PetscCall(PetscObjectQueryFunction((PetscObject)b, name, &back));
    PetscCheck(back, PETSC_COMM_SELF, PETSC_ERR_PLIB, "seqtile block without its conversion back to seqaij");
    PetscCall((*back)(b, TILE_SEQ_BASE, MAT_INPLACE_MATRIX, &b));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Runs the MPIAIJ symbolic phase on C (product data empty), makes C mpitile
 * with seqtile blocks, and attaches w around the backend's data. */
static PetscErrorCode TileMPIPlan(Mat C, TileMPIProduct *w)
{
  Mat_Product   *product = C->product;
  Mat            A = product->A, B = product->B;
  PetscBool      atile, btile, istile, conv[2] = {PETSC_FALSE, PETSC_FALSE};
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCheck(!product->data, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "Product data not empty");
  PetscCall(TileMPISyncBlockStates(A));
  PetscCall(TileMPISyncBlockStates(B));
  PetscCall(TileIsMPITile(A, &atile));
  PetscCall(TileIsMPITile(B, &btile));
  if (!atile && btile) PetscCall(TileMPIBlocksToTile(A, &((Mat_MPITile *)B->spptr)->opt, conv));
#if TILE_DEVICE_AIJ
  /* The backend gives C its "A"'s type name and keeps C's COO buffers in
   * device memory only when that name is a device AIJ's: the tile operands
   * show their base's name while it runs, and C becomes mpitile after. */
  if (atile) PetscCall(PetscObjectChangeTypeName((PetscObject)A, TILE_MPI_BASE));
  if (btile && B != A) PetscCall(PetscObjectChangeTypeName((PetscObject)B, TILE_MPI_BASE));
  TileLocalProductsPush();
#endif
  ierr = (*w->symbolic)(C);
#if TILE_DEVICE_AIJ
  TileLocalProductsPop();
  if (atile) PetscCall(PetscObjectChangeTypeName((PetscObject)A, MATMPIAIJTILE));
  if (btile && B != A) PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATMPIAIJTILE));
#endif
  if (conv[0] || conv[1]) PetscCall(TileMPIBlocksBack(A, conv));
  PetscCall(ierr);
  /* C of the tile type, its blocks seqtile (they are the next level's operands) */
  PetscCall(TileIsMPITile(C, &istile));
  if (!istile) PetscCall(MatConvert_MPIAIJ_MPITile(C, MATMPITILE, MAT_INPLACE_MATRIX, &C));
  PetscCall(TileMPIConvertBlocks(C));
  w->data          = product->data;
  w->destroy       = (TileProductDestroyFn)product->destroy;
  w->view          = product->view;
  w->numeric       = C->ops->productnumeric;
  TileMPIProductSwap(C, w, PETSC_FALSE);
  PetscCheck(w->numeric, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "MPIAIJ product %s set no numeric phase", MatProductTypes[product->type]);
  C->ops->productnumeric = NULL; /* set by the caller, after the checks */
  PetscCall(TileOperandRecordGet(A, &w->a));
  PetscCall(TileOperandRecordGet(B, &w->b));
  w->cnz = C->nonzerostate;
  w->nplans++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatProductNumeric_MPITile(Mat C);

/* A reuse runs on the operands now in C->product (MatProductReplaceMats):
 * when one of them is another object or changed its nonzero pattern (or
 * C's changed), on any rank, the backend's data (local products, gathered
 * rows, COO maps) no longer fits and the product is planned again. */
static PetscErrorCode MatProductNumeric_MPITile(Mat C)
{
  Mat_Product      *product;
  TileMPIProduct   *w;
  TileOperandRecord ra, rb;
  PetscMPIInt       changed, any; /* plain int: PetscBool's MPI type differs across PETSc versions */
  PetscErrorCode    ierr;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  product = C->product;
  w       = (TileMPIProduct *)product->data;
  PetscCheck(w && w->numeric, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "mpitile product: symbolic phase missing");
  PetscCall(TileMPISyncBlockStates(product->A));
  PetscCall(TileMPISyncBlockStates(product->B));
  PetscCall(TileOperandRecordGet(product->A, &ra));
  PetscCall(TileOperandRecordGet(product->B, &rb));
  changed = (!TileOperandRecordSame(&ra, &w->a) || !TileOperandRecordSame(&rb, &w->b) || C->nonzerostate != w->cnz) ? 1 : 0;
  PetscCallMPI(MPI_Allreduce(&changed, &any, 1, MPI_INT, MPI_MAX, PetscObjectComm((PetscObject)C)));
  if (any) {
    PetscCall(PetscInfo(C, "tilerap: %s operands changed object or nonzero pattern since the plan: planning again\n", MatProductTypes[product->type]));
    product->data    = NULL;
    product->destroy = NULL;
    product->view    = NULL;
    ierr             = TileInnerDestroy(w);
    if (!ierr) ierr = TileMPIPlan(C, w);
    if (ierr) {
      if (product->data != w) PetscCall(TileMPIProductDestroy(TILE_PRODUCT_DESTROY_PASS(w))); /* not attached: C would lose it */
      PetscCall(ierr);
    }
    C->ops->productnumeric = MatProductNumeric_MPITile;
  }
  /* the backend's own product data while it runs (C may be viewed or
   * assembled from inside: -mat_view at MatSetValuesCOO's assembly) */
  TileMPIProductSwap(C, w, PETSC_TRUE);
  ierr = (*w->numeric)(C);
  TileMPIProductSwap(C, w, PETSC_FALSE);
  PetscCall(ierr);
  w->cnz = C->nonzerostate;
  w->nnumeric++;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatProductSymbolic_MPITile(Mat C)
{
  TileMPIProduct *w;
  PetscErrorCode  ierr;
  PetscErrorCode (*inner)(Mat) = NULL;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  PetscCall(PetscObjectQueryFunction((PetscObject)C, TILE_INNER_SYMBOLIC, &inner));
  PetscCheck(inner, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "mpitile product: MPIAIJ symbolic phase missing");
  PetscCall(PetscNew(&w));
  w->symbolic = inner;
  ierr        = TileMPIPlan(C, w);
  if (ierr) {
    if (C->product->data != w) PetscCall(PetscFree(w));
    PetscCall(ierr);
  }
  /* MatSetType() in the symbolic phase may have reset C's ops */
  C->ops->productsymbolic = MatProductSymbolic_MPITile;
  C->ops->productnumeric  = MatProductNumeric_MPITile;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether the options database names the product's algorithm (the user's
 * choice, which MPIAIJ then takes: -mat_product_algorithm, or the API's
 * -matmatmult_via, -mattransposematmult_via, -matptap_via) */
static PetscErrorCode TileMPIAlgorithmGiven(Mat C, PetscBool *given)
{
  Mat_Product *product = C->product;
  const char  *opt     = !product->api_user ? "-mat_product_algorithm" : product->type == MATPRODUCT_AB ? "-matmatmult_via" : product->type == MATPRODUCT_AtB ? "-mattransposematmult_via" : "-matptap_via";

  PetscFunctionBegin;
  PetscCall(PetscOptionsHasName(((PetscObject)C)->options, ((PetscObject)C)->prefix, opt, given));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether a product of mpitile operands runs the tile path (-mat_tile_mpi_products
 * tile) or MPIAIJ's own algorithms (aij).  auto: tile on the device, and on one
 * rank; on several ranks with the CPU engine, aij: there the backend's gather of
 * P's remote rows and its COO assembly of C cost more than the CPU engine gains
 * in the local products (every PCSetUp of BENCHMARKS.md 6a was 1.02-1.39x
 * MPIAIJ's on two ranks). */
static PetscErrorCode TileMPIProductsTile(Mat C, PetscBool *tile)
{
  static const char *const choices[] = {"auto", "tile", "aij"};
  PetscInt                 v = 0;

  PetscFunctionBegin;
  PetscCall(PetscOptionsGetEList(NULL, NULL, "-mat_tile_mpi_products", choices, 3, &v, NULL));
  *tile = (PetscBool)(v != 2);
#if !TILE_DEVICE_AIJ
  if (v == 0) {
    Mat_Product       *product = C->product;
    PetscMPIInt        size;
    PetscBool          at;
    const Mat_MPITile *t;
    PetscCall(TileIsMPITile(product->A, &at));
    t = (const Mat_MPITile *)(at ? product->A : product->B)->spptr;
    PetscCallMPI(MPI_Comm_size(PetscObjectComm((PetscObject)C), &size));
    *tile = (PetscBool)(size == 1 || tilerap_engine_resolve(t->opt.engine) == TILERAP_ENGINE_CUDA);
  }
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The phases of a product run by MPIAIJ's own algorithm: its local products
 * on the seqtile blocks are SeqAIJ's (TileAIJProductsPush), so that it costs
 * what MPIAIJ's does.  The numeric phase is the one the symbolic phase set. */
static PetscErrorCode TileMPIRunAIJPhase(Mat C, const char *name)
{
  PetscErrorCode (*inner)(Mat) = NULL;
  PetscErrorCode err;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)C, name, &inner));
  PetscCheck(inner, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "MPIAIJ product phase %s not captured", name);
  TileAIJProductsPush();
  err = (*inner)(C);
  TileAIJProductsPop();
  PetscCall(err);
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatProductNumeric_MPITileAIJ(Mat C)
{
  PetscFunctionBegin;
  PetscCall(TileMPIRunAIJPhase(C, "TileRAP_AIJNumeric_C"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatProductSymbolic_MPITileAIJ(Mat C)
{
  PetscFunctionBegin;
  PetscCall(TileMPIRunAIJPhase(C, "TileRAP_AIJSymbolic_C"));
  PetscCall(TileWrapProductPhase(C, &C->ops->productnumeric, MatProductNumeric_MPITileAIJ, "TileRAP_AIJNumeric_C"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* AB, AtB and PtAP with a tile operand (the other mpitile or plain mpiaij),
 * where TileMPIProductsTile says so: the MPIAIJ "backend" algorithm, whose
 * local products are the blocks' (seqtile) products.  An algorithm picked through the options database
 * (-matmatmult_via, -matptap_via, -mattransposematmult_via,
 * -mat_product_algorithm) other than backend, and everything else: the
 * MPIAIJ implementation, untouched. */
PetscErrorCode MatProductSetFromOptions_MPITile(Mat C)
{
  static const char *const algs[] = {MATPRODUCTALGORITHMDEFAULT, "tile", "backend", NULL};
  Mat_Product             *product = C->product;
  Mat                      A, B;
  PetscBool                algok, fits;

  PetscFunctionBegin;
  /* PETSc may set a product up twice: the base keeps a symbolic phase it
   * finds set (its fallback for mixed types does), which must not be ours */
  C->ops->productsymbolic = NULL;
  /* MAT_FORCE_DIAGONAL_ENTRIES: the backend's C has no room for them (not a fit) */
  PetscCall(TileProductCandidate(C, TileIsMPITile, TileIsPlainMPIAIJ, algs, &algok, &fits));
#if TILE_DEVICE_AIJ
  if (C->force_diagonals && (product->type == MATPRODUCT_AB || product->type == MATPRODUCT_AtB || product->type == MATPRODUCT_PtAP)) {
    /* Two device tile operands of one type go to the base's device
     * backend, which makes the product's pattern only (MPIAIJCUSPARSE
     * drops the option silently): refused instead of a C without its
     * diagonal.  Operands of two types, or bound to the CPU, go to MPIAIJ,
     * which has it. */
    PetscBool at, bt;
    PetscCall(TileIsMPITile(product->A, &at));
    PetscCall(TileIsMPITile(product->B, &bt));
    PetscCheck(!(at && bt && !product->A->boundtocpu && !product->B->boundtocpu), PetscObjectComm((PetscObject)C), PETSC_ERR_SUP,
               "%s of two %s matrices with MAT_FORCE_DIAGONAL_ENTRIES: not supported on the device (convert the operands to %s for it)", MatProductTypes[product->type], MATMPITILE, MATMPIAIJ);
  }
#endif
  A = product->A;
  B = product->B;
  PetscCheck(tile_mpiaij_ops.productsetfromoptions, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "MPIAIJ product implementation not captured");
  if (algok && fits) {
    PetscBool tile = PETSC_TRUE, given, isbackend = PETSC_FALSE;
    PetscCall(TileMPIAlgorithmGiven(C, &given));
    if (!given) PetscCall(TileMPIProductsTile(C, &tile)); /* an algorithm named in the options is the user's */
    if (!tile) {
      PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s: MPIAIJ implementation (-mat_tile_mpi_products: the CPU engine on several ranks)\n", MatProductTypes[product->type], ((PetscObject)A)->type_name, ((PetscObject)B)->type_name));
      PetscCall(tile_mpiaij_ops.productsetfromoptions(C));
      PetscCall(TileWrapProductPhase(C, &C->ops->productsymbolic, MatProductSymbolic_MPITileAIJ, "TileRAP_AIJSymbolic_C"));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
    PetscCall(MatProductSetAlgorithm(C, "backend"));
    PetscCall(tile_mpiaij_ops.productsetfromoptions(C)); /* the options may still pick another algorithm */
    if (product->alg) PetscCall(PetscStrcmp(product->alg, "backend", &isbackend));
    if (!isbackend && C->ops->productsymbolic) {
      /* MPIAIJ's AtB switches to "scalable" for wide B whatever the
       * algorithm set; only the user's own choice is kept */
      if (!given) {
        PetscCall(MatProductSetAlgorithm(C, "backend"));
        isbackend = PETSC_TRUE;
      }
    }
    if (isbackend && C->ops->productsymbolic) {
      PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s: MPIAIJ algorithm backend, local products on the tile engine\n", MatProductTypes[product->type], ((PetscObject)A)->type_name, ((PetscObject)B)->type_name));
      PetscCall(TileWrapProductPhase(C, &C->ops->productsymbolic, MatProductSymbolic_MPITile, TILE_INNER_SYMBOLIC));
    } else {
      PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s: algorithm %s from the options, MPIAIJ implementation\n", MatProductTypes[product->type], ((PetscObject)A)->type_name, ((PetscObject)B)->type_name,
                          product->alg ? product->alg : "none"));
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s (algorithm %s): MPIAIJ implementation\n", MatProductTypes[product->type], ((PetscObject)A)->type_name, ((PetscObject)B)->type_name,
                      product->alg ? product->alg : "none"));
  PetscCall(tile_mpiaij_ops.productsetfromoptions(C));
  PetscFunctionReturn(PETSC_SUCCESS);
}
