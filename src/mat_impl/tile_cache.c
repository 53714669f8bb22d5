/* The tile copy of one AIJ matrix (TileCache, mat_seqtile_impl.h): kept in
 * a seqtile's spptr, or in product data for plain-AIJ operands, and brought
 * in sync lazily, when a product needs it: nothing when the AIJ object state
 * is unchanged, a values-only refresh when the nonzero pattern
 * (nonzerostate) is unchanged, a rebuild otherwise.  The host copy (T) and
 * the CUDA engine's device mirror (D) share one structure generation, so
 * plans made on either stay valid while the pattern does. */
#include "mat_seqtile_impl.h"
#if TILE_DEVICE_AIJ
  #include <petscdevice.h>
#endif

/* ---------------------------------------------------------------- the AIJ arrays */
#if TILE_DEVICE_AIJ
/* X has a device copy of its CSR: AIJCUSPARSE underneath, not bound to the CPU. */
static PetscErrorCode TileHasDeviceCSR(Mat X, PetscBool *flg)
{
  Mat_SeqTile *t;
  PetscBool    iscusp;

  PetscFunctionBegin;
  PetscCall(TileGetData(X, &t));
  PetscCall(PetscObjectTypeCompare((PetscObject)X, MATSEQAIJCUSPARSE, &iscusp));
  *flg = (PetscBool)((iscusp || (t && t->device_aij)) && !X->boundtocpu);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* AIJCUSPARSE's array accessors check the exact type name in debug builds
 * of PETSc; a tile matrix, AIJCUSPARSE underneath, shows that name for the
 * length of the call. */
static PetscErrorCode TileShowAsCUSPARSE(Mat X, PetscBool *renamed)
{
  PetscBool istile;

  PetscFunctionBegin;
  *renamed = PETSC_FALSE;
  if (!PetscDefined(USE_DEBUG)) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscObjectTypeCompare((PetscObject)X, MATSEQAIJTILE, &istile));
  if (istile) PetscCall(PetscObjectChangeTypeName((PetscObject)X, MATSEQAIJCUSPARSE));
  *renamed = istile;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileShowAsTile(Mat X, PetscBool renamed)
{
  PetscFunctionBegin;
  if (renamed) PetscCall(PetscObjectChangeTypeName((PetscObject)X, MATSEQAIJTILE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceValuesBegin(Mat C, PetscScalar **ca)
{
  PetscBool          renamed;
  const PetscScalar *ro;

  PetscFunctionBegin;
  PetscCall(TileShowAsCUSPARSE(C, &renamed));
  /* the device CSR exists once C has been copied up (the first numeric
   * phase after the symbolic one copies its structure) */
  PetscCall(MatSeqAIJCUSPARSEGetArrayRead(C, &ro));
  PetscCall(MatSeqAIJCUSPARSERestoreArrayRead(C, &ro));
  PetscCall(MatSeqAIJCUSPARSEGetArrayWrite(C, ca));
  PetscCall(TileShowAsTile(C, renamed));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceValuesEnd(Mat C, PetscScalar **ca)
{
  PetscBool renamed;

  PetscFunctionBegin;
  PetscCall(TileShowAsCUSPARSE(C, &renamed));
  PetscCall(MatSeqAIJCUSPARSERestoreArrayWrite(C, ca));
  PetscCall(TileShowAsTile(C, renamed));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's current device context, and whether its stream orders itself
 * with the legacy default stream tilerap works on. */
static PetscErrorCode TilePETScStream(PetscDeviceContext *dctx, PetscBool *ordered)
{
  PetscStreamType st;

  PetscFunctionBegin;
  PetscCall(PetscDeviceContextGetCurrentContext(dctx));
  PetscCall(PetscDeviceContextGetStreamType(*dctx, &st));
  *ordered = (PetscBool)(st == PETSC_STREAM_DEFAULT || st == PETSC_STREAM_DEFAULT_WITH_BARRIER);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Depth of MPI product symbolic phases running: their local products take
 * blocks and merged local matrices, not the user's P (the MPI P's transpose
 * is left to its first MatMultTranspose, as for MPIAIJCUSPARSE). */
static int tile_local_products;

void TileLocalProductsPush(void)
{
  tile_local_products++;
}

void TileLocalProductsPop(void)
{
  tile_local_products--;
}

PetscErrorCode TileFormExplicitTranspose(Mat P)
{
  PetscBool    devcsr;
  Vec          x, y;
  Mat_SeqTile *t;

  PetscFunctionBegin;
  if (!P->form_explicit_transpose || tile_local_products > 0) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileHasDeviceCSR(P, &devcsr));
  if (!devcsr) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileGetData(P, &t));
  if (t && t->device_aij) { /* a tile P restricts through its own transposed view */
    PetscCall(TileTransposeViewFor(P));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* PETSc's public way to it: one transposed multiply, which forms and keeps it */
  PetscCall(MatCreateVecs(P, &x, &y));
  {
    PetscErrorCode ierr = VecZeroEntries(y);
    if (!ierr) ierr = MatMultTranspose(P, y, x);
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&y));
    PetscCall(ierr);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceJoinPETSc(void)
{
  PetscDeviceContext dctx;
  PetscBool          ordered;

  PetscFunctionBegin;
  PetscCall(TilePETScStream(&dctx, &ordered));
  if (!ordered) PetscCall(PetscDeviceContextSynchronize(dctx));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceJoinTilerap(const void *dev, PetscInt n)
{
  PetscDeviceContext dctx;
  PetscBool          ordered;

  PetscFunctionBegin;
  PetscCall(TilePETScStream(&dctx, &ordered));
  if (n > 0 && !ordered) {
    char byte; /* a copy to the host returns once tilerap's stream has drained */
    TileCall(PETSC_COMM_SELF, tilerap_memcpy(&byte, TILERAP_MEM_HOST, dev, TILERAP_MEM_DEVICE, 1));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

PetscErrorCode TileAIJArraysBegin(Mat X, PetscBool device, TileAIJArrays *r)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)X);

  PetscFunctionBegin;
  PetscCall(PetscMemzero(r, sizeof *r));
  r->mem = TILERAP_MEM_HOST;
#if TILE_DEVICE_AIJ
  PetscBool devcsr = PETSC_FALSE;
  PetscCall(TileHasDeviceCSR(X, &devcsr));
  if (devcsr && device && !PetscDefined(USE_64BIT_INDICES)) { /* the device CSR, full row offsets (not AIJ's compressed rows) */
    const int *i, *j;
    PetscBool  renamed;
    PetscCall(TileShowAsCUSPARSE(X, &renamed));
    PetscCall(MatSeqAIJCUSPARSEGetIJ(X, PETSC_FALSE, &i, &j));
    PetscCall(MatSeqAIJCUSPARSEGetArrayRead(X, &r->aa));
    PetscCall(TileShowAsTile(X, renamed));
    r->ai  = (const PetscInt *)i;
    r->aj  = (const PetscInt *)j;
    r->mem = TILERAP_MEM_DEVICE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (devcsr) { /* host arrays of AIJCUSPARSE: brought up to date from the device */
    PetscInt  n;
    PetscBool done;
    PetscCall(MatGetRowIJ(X, 0, PETSC_FALSE, PETSC_FALSE, &n, &r->ai, &r->aj, &done));
    PetscCheck(done, comm, PETSC_ERR_SUP, "no row structure from %s", ((PetscObject)X)->type_name);
    PetscCall(MatSeqAIJGetArrayRead(X, &r->aa));
    r->rowij = r->arrayread = PETSC_TRUE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
#endif
  {
    PetscMemType mtype;
    PetscScalar *aa;
    (void)device;
    PetscCall(MatSeqAIJGetCSRAndMemType(X, &r->ai, &r->aj, &aa, &mtype));
    PetscCheck(PetscMemTypeHost(mtype), comm, PETSC_ERR_SUP, "AIJ arrays must live in host memory");
    r->aa = aa;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileAIJArraysEnd(Mat X, TileAIJArrays *r)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  if (r->mem == TILERAP_MEM_DEVICE) {
    const int *i = (const int *)r->ai, *j = (const int *)r->aj;
    PetscBool  renamed;
    PetscCall(TileShowAsCUSPARSE(X, &renamed));
    PetscCall(MatSeqAIJCUSPARSERestoreIJ(X, PETSC_FALSE, &i, &j));
    PetscCall(MatSeqAIJCUSPARSERestoreArrayRead(X, &r->aa));
    PetscCall(TileShowAsTile(X, renamed));
  } else {
    if (r->arrayread) PetscCall(MatSeqAIJRestoreArrayRead(X, &r->aa));
    if (r->rowij) {
      PetscInt  n;
      PetscBool done;
      PetscCall(MatRestoreRowIJ(X, 0, PETSC_FALSE, PETSC_FALSE, &n, &r->ai, &r->aj, &done));
    }
  }
#endif
  (void)X;
  PetscCall(PetscMemzero(r, sizeof *r));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileCacheReset(TileCache *c)
{
  PetscFunctionBegin;
  tilerap_tile_destroy(&c->T);
  tilerap_tile_destroy(&c->D);
  c->Dvalid = PETSC_FALSE;
  c->gen++;
  c->id = 0;
  c->state = 0;
  c->nzstate = 0;
  c->state_plus_one = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileCacheMarkInSync(Mat X, TileCache *c, PetscBool by_product_numeric)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)X, &c->state));
  PetscCall(PetscObjectGetId((PetscObject)X, &c->id));
  c->nzstate = X->nonzerostate;
  c->state_plus_one = by_product_numeric;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Builds T from X's CSR (host arrays): a host tile matrix, or with device
 * set a device one built on the device (the CUDA engine's operands). */
static PetscErrorCode TileBuildFromAIJ(Mat X, const TileAIJArrays *r, PetscBool device, tilerap_tile_matrix **T)
{
  const PetscInt    *ai = r->ai, *aj = r->aj;
  const PetscScalar *aa = r->aa;

  MPI_Comm comm = PetscObjectComm((PetscObject)X);
  PetscInt m, n;

  PetscFunctionBegin;
  PetscCall(MatGetSize(X, &m, &n));
  PetscCheck(m <= PETSC_MAX_INT && m < INT32_MAX && n < INT32_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE, "tile matrices index rows/columns with 32 bits");
#if defined(PETSC_USE_64BIT_INDICES)
  PetscCheck(r->mem == TILERAP_MEM_HOST, comm, PETSC_ERR_PLIB, "64-bit AIJ arrays on the device");
  {
    int32_t *cols;
    PetscInt nz = ai[m];
    PetscCall(PetscMalloc1(nz, &cols));
    for (PetscInt k = 0; k < nz; k++) cols[k] = (int32_t)aj[k];
    PetscErrorCode ierr = device ? TileCheckError_Private(comm, tilerap_tile_from_csr_device((int32_t)m, (int32_t)n, (const int64_t *)ai, cols, (const double *)aa, TILERAP_MEM_HOST, T), "tilerap_tile_from_csr_device")
                                 : TileCheckError_Private(comm, tilerap_tile_from_csr((int32_t)m, (int32_t)n, (const int64_t *)ai, cols, (const double *)aa, T), "tilerap_tile_from_csr");
    PetscCall(PetscFree(cols));
    PetscCall(ierr);
  }
#else
  PetscCheck(device || r->mem == TILERAP_MEM_HOST, comm, PETSC_ERR_PLIB, "host tile form from device arrays");
  if (device) TileCall(comm, tilerap_tile_from_csr_device_i32((int32_t)m, (int32_t)n, (const int32_t *)ai, (const int32_t *)aj, (const double *)aa, r->mem, T));
  else TileCall(comm, tilerap_tile_from_csr_i32((int32_t)m, (int32_t)n, (const int32_t *)ai, (const int32_t *)aj, (const double *)aa, T));
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether c reflects X's current values (its object, pattern and state). */
static PetscBool TileCacheUpToDate(Mat X, TileCache *c, PetscObjectId id, PetscObjectState st)
{
  return (PetscBool)(c->id == id && c->nzstate == X->nonzerostate && (st == c->state || (c->state_plus_one && st == c->state + 1)));
}

/* c now reflects X at state st. */
static void TileCacheCurrent(Mat X, TileCache *c, PetscObjectState st, PetscObjectId id)
{
  c->state          = st;
  c->id             = id;
  c->nzstate        = X->nonzerostate;
  c->state_plus_one = PETSC_FALSE;
}

/* What a sync found out about X and its copy in c. */
typedef struct {
  PetscObjectState st;
  PetscObjectId    id;
  PetscBool        uptodate; /* c reflects X's object, pattern and state */
  PetscBool        same_nz;  /* c was made from X's object and its current pattern */
  TileAIJArrays    arr;      /* X's CSR arrays, for a conversion */
} TileCacheLook;

/* Shared start of the cache syncs (device: the device mirror, else the
 * host copy).  X must be assembled real AIJ.  A copy that is current is
 * counted as a reuse and *done set; else X's CSR arrays are fetched (on
 * the device for the device mirror where X has them there) and the
 * TileRAPConvert event started; TileCacheEnd releases them. */
static PetscErrorCode TileCacheBegin(Mat X, TileCache *c, PetscBool device, TileCacheLook *l, PetscBool *done)
{
  MPI_Comm  comm = PetscObjectComm((PetscObject)X);
  PetscBool current;

  PetscFunctionBegin;
  PetscCheck(TILE_SCALAR_OK, comm, PETSC_ERR_SUP, "tile matrices need real double PetscScalar");
  PetscCheck(X->assembled, comm, PETSC_ERR_ARG_WRONGSTATE, "Matrix must be assembled before its tile form is used");
  PetscCall(PetscObjectStateGet((PetscObject)X, &l->st));
  PetscCall(PetscObjectGetId((PetscObject)X, &l->id));
  l->uptodate = TileCacheUpToDate(X, c, l->id, l->st);
  l->same_nz  = (PetscBool)(c->id == l->id && c->nzstate == X->nonzerostate);
  current     = device ? (PetscBool)(c->D && c->Dgen == c->gen && l->same_nz && c->Dvalid && l->uptodate) : (PetscBool)(c->T && l->uptodate);
  *done       = current;
  if (current) {
    TileCacheCurrent(X, c, l->st, l->id);
    c->stats.reuses++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscLogEventBegin(TILE_Convert, X, 0, 0, 0));
  PetscCall(TileAIJArraysBegin(X, device, &l->arr));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileCacheEnd(Mat X, TileCacheLook *l)
{
  PetscFunctionBegin;
  PetscCall(TileAIJArraysEnd(X, &l->arr));
  PetscCall(PetscLogEventEnd(TILE_Convert, X, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileCacheSync(Mat X, TileCache *c)
{
  MPI_Comm      comm = PetscObjectComm((PetscObject)X);
  TileCacheLook l;
  PetscBool     done;

  PetscFunctionBegin;
  PetscCall(TileCacheBegin(X, c, PETSC_FALSE, &l, &done));
  if (done) PetscFunctionReturn(PETSC_SUCCESS);
  if (c->T && l.same_nz) {
#if defined(PETSC_USE_64BIT_INDICES)
    TileCall(comm, tilerap_tile_update_values_from_csr(c->T, (const int64_t *)l.arr.ai, (const double *)l.arr.aa));
#else
    TileCall(comm, tilerap_tile_update_values_from_csr_i32(c->T, (const int32_t *)l.arr.ai, (const double *)l.arr.aa));
#endif
    c->stats.value_refreshes++;
  } else {
    tilerap_tile_destroy(&c->T);
    PetscCall(TileBuildFromAIJ(X, &l.arr, PETSC_FALSE, &c->T));
    /* a device mirror built on the device from this very pattern keeps its
     * generation (the structures agree): plans made on it stay valid */
    if (!(l.same_nz && c->D && c->Dgen == c->gen)) c->gen++;
    c->stats.rebuilds++;
  }
  if (!l.uptodate) c->Dvalid = PETSC_FALSE; /* host values changed: the device mirror is stale */
  PetscCall(TileCacheEnd(X, &l));
  TileCacheCurrent(X, c, l.st, l.id);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Device mirror for the CUDA engine, converted on the device straight from
 * X's AIJ arrays: its device CSR where it has one (AIJCUSPARSE underneath),
 * else the host CSR uploaded (no host tile copy, so TileRAPConvert covers
 * the upload and the conversion): reused when in sync, values refreshed in
 * place when only values changed, rebuilt when the pattern changed. */
PetscErrorCode TileCacheSyncDevice(Mat X, TileCache *c)
{
  MPI_Comm      comm = PetscObjectComm((PetscObject)X);
  TileCacheLook l;
  PetscBool     done;

  PetscFunctionBegin;
  PetscCall(TileCacheBegin(X, c, PETSC_TRUE, &l, &done));
  if (done) PetscFunctionReturn(PETSC_SUCCESS);
  if (c->D && c->Dgen == c->gen && l.same_nz) { /* same structure */
    TileCall(comm, tilerap_tile_update_values_from_csr_device(c->D, (const double *)l.arr.aa, l.arr.mem));
    c->stats.value_refreshes++;
  } else {
    tilerap_tile_destroy(&c->D);
    PetscCall(TileBuildFromAIJ(X, &l.arr, PETSC_TRUE, &c->D));
    if (!(c->T && l.same_nz)) c->gen++; /* else: T's pattern, same generation */
    c->Dgen = c->gen;
    c->stats.rebuilds++;
  }
  PetscCall(TileCacheEnd(X, &l));
  if (!l.uptodate) tilerap_tile_destroy(&c->T); /* a host copy is stale: rebuilt on demand */
  c->Dvalid = PETSC_TRUE;
  TileCacheCurrent(X, c, l.st, l.id);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Depth of MPI products running MPIAIJ's own algorithm (TileAIJProductsPush) */
static int tile_aij_products;

void TileAIJProductsPush(void)
{
  tile_aij_products++;
}

void TileAIJProductsPop(void)
{
  tile_aij_products--;
}

PetscBool TileAIJProductsActive(void)
{
  return (PetscBool)(tile_aij_products > 0);
}

PetscErrorCode TileWrapProductPhase(Mat C, PetscErrorCode (**op)(Mat), PetscErrorCode (*wrapper)(Mat), const char *name)
{
  PetscFunctionBegin;
  if (*op && *op != wrapper) {
    PetscCall(PetscObjectComposeFunction((PetscObject)C, name, *op));
    *op = wrapper;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
