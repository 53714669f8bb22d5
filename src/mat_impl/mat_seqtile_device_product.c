/* MATSEQTILE products on the operands' device CSR (a PETSc built with
 * CUDA, the CUDA engine, AIJCUSPARSE underneath): C = A*B, A^T*B and
 * P^T A P by tilerap's device CSR products (tilerap_device.h) straight on
 * AIJCUSPARSE's device arrays, C's values straight into C's device CSR.
 * No tile copy of an operand or of C: a product made once (GAMG's
 * prolongator smoothing and graph squaring, every first Galerkin product)
 * costs less this way than through the tile plans, whose conversions each
 * way are a third of such a product (BENCHMARKS.md 3b), and needs no tile
 * copies' memory.  The tile route stays for -mat_tile_path tiles
 * (tilerap_csr_device_path_i32).
 *
 * Symbolic: the product made and filled (structure and values, sorted
 * rows); C's structure comes to the host, where PETSc's AIJ keeps it; the
 * values wait on the device for the numeric phase that follows.  Numeric:
 * those values when the operands are unchanged, else a numeric run (no
 * allocation, no wait: what numeric runs need is kept from the start, as
 * AIJCUSPARSE keeps its SpGEMM buffers). */
#include "mat_seqtile_impl.h"

#if TILE_DEVICE_AIJ

struct TileDeviceProduct {
  tilerap_csr_kind           kind;
  tilerap_csr_device_product X;
  int32_t                    m;         /* C's rows */
  int64_t                    cnnz;
  double                    *first;     /* C's values from the fill (device), for the numeric phase after it */
  PetscObjectState           ast, bst;  /* ... valid while A and B stay in these states */
  PetscInt                   nnumeric, nremade;
};

static tilerap_csr_kind TileDeviceKind(MatProductType type)
{
  return type == MATPRODUCT_PtAP ? TILERAP_CSR_PTAP : type == MATPRODUCT_AtB ? TILERAP_CSR_ATB : TILERAP_CSR_AB;
}

/* X's device CSR as the device products read it (AIJCUSPARSE's own
 * arrays, valid while X is unchanged), or mem HOST when X has none. */
PetscErrorCode TileDeviceOperand(Mat X, TileAIJArrays *arr, tilerap_csr_device_i32 *v)
{
  PetscInt m, n;

  PetscFunctionBegin;
  PetscCall(PetscMemzero(arr, sizeof *arr));
  PetscCheck(X->assembled, PetscObjectComm((PetscObject)X), PETSC_ERR_ARG_WRONGSTATE, "Matrix must be assembled before a product");
  PetscCall(MatGetSize(X, &m, &n));
  PetscCheck(m < INT32_MAX && n < INT32_MAX, PetscObjectComm((PetscObject)X), PETSC_ERR_ARG_OUTOFRANGE, "tilerap indexes rows and columns with 32 bits");
  PetscCall(TileAIJArraysBegin(X, PETSC_TRUE, arr));
  v->m      = (int32_t)m;
  v->n      = (int32_t)n;
  v->rowptr = (const int32_t *)arr->ai;
  v->colidx = (const int32_t *)arr->aj;
  v->val    = (const double *)arr->aa;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Both operands' device CSR after PETSc's queued work (A's given back if
 * B's fails). */
static PetscErrorCode TileDeviceOperands(Mat A, Mat B, TileAIJArrays *ra, tilerap_csr_device_i32 *va, TileAIJArrays *rb, tilerap_csr_device_i32 *vb)
{
  PetscErrorCode ierr;

  PetscFunctionBegin;
  PetscCall(TileDeviceJoinPETSc());
  PetscCall(TileDeviceOperand(A, ra, va));
  ierr = TileDeviceOperand(B, rb, vb);
  if (ierr) {
    PetscCall(TileAIJArraysEnd(A, ra));
    PetscCall(ierr);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceProductDestroy(TileDeviceProduct **pdp)
{
  PetscFunctionBegin;
  if (!pdp || !*pdp) PetscFunctionReturn(PETSC_SUCCESS);
  tilerap_csr_device_product_destroy(&(*pdp)->X);
  tilerap_device_free((*pdp)->first);
  PetscCall(PetscFree(*pdp));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The filled product's structure: its arrays on the device, its row
 * pointers on the host (TileDeviceProductFill). */
typedef struct {
  int32_t *drp, *dcol; /* device */
  int32_t *hrp;        /* host */
  int64_t *rp64;
} TileDeviceFillBuffers;

/* dp->X made anew (kept for numeric runs: TILERAP_CSR_REUSE, as
 * AIJCUSPARSE keeps its SpGEMM buffers) and filled, the values into
 * dp->first, the row pointers to the host in b. */
static PetscErrorCode TileDeviceProductFill(Mat C, TileDeviceProduct *dp, const tilerap_csr_device_i32 *va, const tilerap_csr_device_i32 *vb, TileDeviceFillBuffers *b)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)C);
  size_t   nz;
  int      err;

  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(TILE_Plan, C, 0, 0, 0));
  err = tilerap_csr_device_product_create_i32(dp->kind, va, vb, TILERAP_CSR_REUSE, &dp->X, &dp->cnnz);
  PetscCall(PetscLogEventEnd(TILE_Plan, C, 0, 0, 0));
  TileCall(comm, err);
  nz = (size_t)(dp->cnnz ? dp->cnnz : 1);
  TileCall(comm, tilerap_device_malloc(((size_t)dp->m + 1) * sizeof(int32_t), (void **)&b->drp));
  TileCall(comm, tilerap_device_malloc(nz * sizeof(int32_t), (void **)&b->dcol));
  TileCall(comm, tilerap_device_malloc(nz * sizeof(double), (void **)&dp->first));
  TileCall(comm, tilerap_csr_device_product_fill_i32(dp->X, va, vb, 0, b->drp, b->dcol, dp->first));
  PetscCall(PetscMalloc1(dp->m + 1, &b->hrp));
  PetscCall(PetscMalloc1(dp->m + 1, &b->rp64));
  TileCall(comm, tilerap_memcpy(b->hrp, TILERAP_MEM_HOST, b->drp, TILERAP_MEM_DEVICE, ((size_t)dp->m + 1) * sizeof(int32_t)));
  for (int32_t i = 0; i <= dp->m; i++) b->rp64[i] = b->hrp[i];
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* C's structure from the filled product's: kept where it is the same,
 * else made (may_restructure) or refused.  C's first structure takes the
 * columns straight from the device into its own array (no host copy in
 * between: GAMG's squared graph of a 101^3 Laplacian has 26 M entries);
 * values zero unless zero_values is false (a MatProduct API symbolic
 * phase, whose values are undefined until the numeric one, as
 * AIJCUSPARSE leaves them). */
static PetscErrorCode TileDeviceProductStructure(Mat C, const TileDeviceProduct *dp, const TileDeviceFillBuffers *b, PetscBool may_restructure, PetscBool zero_values)
{
  MPI_Comm       comm = PetscObjectComm((PetscObject)C);
  int32_t       *hcol;
  PetscBool      same = PETSC_FALSE;
  PetscErrorCode ierr;
  int            err = TILERAP_SUCCESS;

  PetscFunctionBegin;
  if (may_restructure && !(C->assembled && C->preallocated) && !PetscDefined(USE_64BIT_INDICES)) {
    PetscInt *cols;
    PetscCall(TileStructureBegin(C, dp->m, b->rp64, &cols));
    if (dp->cnnz > 0) TileCall(comm, tilerap_memcpy(cols, TILERAP_MEM_HOST, b->dcol, TILERAP_MEM_DEVICE, (size_t)dp->cnnz * sizeof(int32_t)));
    PetscCall(TileStructureEnd(C, cols, dp->cnnz, NULL, TILERAP_MEM_HOST, zero_values));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  /* a product made again: compared with C's structure on the host */
  PetscCall(PetscMalloc1(dp->cnnz ? dp->cnnz : 1, &hcol));
  if (dp->cnnz > 0) err = tilerap_memcpy(hcol, TILERAP_MEM_HOST, b->dcol, TILERAP_MEM_DEVICE, (size_t)dp->cnnz * sizeof(int32_t));
  if (err) ierr = TileCheckError_Private(comm, err, "tilerap_memcpy");
  else if (may_restructure) ierr = TileAssembleStructure(C, dp->m, b->rp64, hcol);
  else ierr = TileStructureIs(C, dp->m, b->rp64, hcol, &same);
  PetscCall(PetscFree(hcol));
  PetscCall(ierr);
  PetscCheck(may_restructure || same, comm, PETSC_ERR_PLIB, "the product of unchanged operand patterns differs from C's structure");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* dp->X made anew and filled (TileDeviceProductFill), its values waiting
 * in dp->first.  C keeps its structure where it is the product's (a plan
 * made again for operands of unchanged patterns: C's nonzerostate kept),
 * else C's AIJ structure is made from the product's (may_restructure; an
 * error otherwise): the device CSR is made from it at the numeric phase,
 * as AIJCUSPARSE's own products leave it.  On failure dp holds no product
 * (a numeric phase plans again). */
static PetscErrorCode TileDeviceProductMake(Mat C, TileDeviceProduct *dp, const tilerap_csr_device_i32 *va, const tilerap_csr_device_i32 *vb, PetscBool may_restructure, PetscBool zero_values)
{
  TileDeviceFillBuffers b = {NULL, NULL, NULL, NULL};
  PetscErrorCode        ierr;

  PetscFunctionBegin;
  tilerap_csr_device_product_destroy(&dp->X);
  tilerap_device_free(dp->first);
  dp->first = NULL;
  PetscCall(PetscLogEventBegin(TILE_Struct, C, 0, 0, 0));
  ierr = TileDeviceProductFill(C, dp, va, vb, &b);
  if (!ierr) ierr = TileDeviceProductStructure(C, dp, &b, may_restructure, zero_values);
  tilerap_device_free(b.drp);
  tilerap_device_free(b.dcol);
  {
    PetscErrorCode e2 = PetscFree(b.hrp);
    if (!e2) e2 = PetscFree(b.rp64);
    if (!ierr) ierr = e2;
    e2 = PetscLogEventEnd(TILE_Struct, C, 0, 0, 0);
    if (!ierr) ierr = e2;
  }
  if (ierr) {
    tilerap_csr_device_product_destroy(&dp->X);
    tilerap_device_free(dp->first);
    dp->first = NULL;
  }
  PetscCall(ierr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceProductPlan(Mat C, MatProductType type, Mat A, Mat B, PetscBool structure_only, TileDeviceProduct **out)
{
  TileDeviceProduct     *dp = NULL;
  TileAIJArrays          ra, rb;
  tilerap_csr_device_i32 va, vb;
  tilerap_path           path = TILERAP_PATH_TILES;
  Mat_SeqTile           *ct;
  PetscErrorCode         ierr;
  int                    err;

  PetscFunctionBegin;
  *out = NULL;
  /* AIJCUSPARSE's device indices are 32-bit: C's columns come down into
   * PetscInt arrays of that width only */
  if (PetscDefined(USE_64BIT_INDICES)) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileGetData(C, &ct));
  if (!ct || !ct->device_aij || C->boundtocpu) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileDeviceOperands(A, B, &ra, &va, &rb, &vb));
  ierr = PETSC_SUCCESS;
  if (ra.mem == TILERAP_MEM_DEVICE && rb.mem == TILERAP_MEM_DEVICE) {
    err = tilerap_csr_device_path_i32(TileDeviceKind(type), &va, &vb, &path, NULL);
    ierr = TileCheckError_Private(PetscObjectComm((PetscObject)C), err, "tilerap_csr_device_path_i32");
    if (!ierr && path == TILERAP_PATH_CSR) {
      ierr = PetscNew(&dp);
      if (!ierr) {
        dp->kind = TileDeviceKind(type);
        dp->m    = (int32_t)C->rmap->n;
        ierr = TileDeviceProductMake(C, dp, &va, &vb, PETSC_TRUE, (PetscBool)!structure_only);
      }
      if (!ierr) ierr = PetscObjectStateGet((PetscObject)A, &dp->ast);
      if (!ierr) ierr = PetscObjectStateGet((PetscObject)B, &dp->bst);
    }
  }
  PetscCall(TileAIJArraysEnd(A, &ra));
  PetscCall(TileAIJArraysEnd(B, &rb));
  if (ierr) PetscCall(TileDeviceProductDestroy(&dp));
  PetscCall(ierr);
  *out = dp;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceProductNumeric(Mat C, TileDeviceProduct *dp, Mat A, Mat B, PetscBool *stale, PetscBool *fresh)
{
  MPI_Comm               comm = PetscObjectComm((PetscObject)C);
  TileAIJArrays          ra, rb;
  tilerap_csr_device_i32 va, vb;
  PetscScalar           *ca = NULL;
  PetscObjectState       ast, bst;
  PetscErrorCode         ierr;
  int                    err = TILERAP_SUCCESS;

  PetscFunctionBegin;
  *stale = *fresh = PETSC_FALSE;
  PetscCall(TileDeviceOperands(A, B, &ra, &va, &rb, &vb));
  if (ra.mem != TILERAP_MEM_DEVICE || rb.mem != TILERAP_MEM_DEVICE || C->boundtocpu || !dp->X) {
    /* an operand or C went to the host since the plan (or the product
     * could not be made again): the caller plans again */
    PetscCall(TileAIJArraysEnd(A, &ra));
    PetscCall(TileAIJArraysEnd(B, &rb));
    *stale = PETSC_TRUE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscObjectStateGet((PetscObject)A, &ast));
  PetscCall(PetscObjectStateGet((PetscObject)B, &bst));
  ierr = PetscLogEventBegin(TILE_Numeric, A, B, C, 0);
  if (!ierr) ierr = TileDeviceValuesBegin(C, &ca);
  if (!ierr) {
    if (dp->first && ast == dp->ast && bst == dp->bst) { /* the fill's values: the operands are as they were */
      err = tilerap_memcpy(ca, TILERAP_MEM_DEVICE, dp->first, TILERAP_MEM_DEVICE, (size_t)dp->cnnz * sizeof(double));
      *fresh = PETSC_TRUE;
    } else {
      err = tilerap_csr_device_product_numeric_i32(dp->X, &va, &vb, (double *)ca);
      if (err == TILERAP_ERR_STRUCTURE) {
        /* AIJCUSPARSE moved an operand's unchanged pattern to new arrays
         * (its device copy rebuilt): the product made again on them, its
         * structure checked against C's before its values go there */
        ierr = TileDeviceProductMake(C, dp, &va, &vb, PETSC_FALSE, PETSC_TRUE);
        err  = ierr ? TILERAP_SUCCESS : tilerap_memcpy(ca, TILERAP_MEM_DEVICE, dp->first, TILERAP_MEM_DEVICE, (size_t)dp->cnnz * sizeof(double));
        dp->nremade++;
      }
      dp->nnumeric++;
    }
    if (!ierr && !err) ierr = TileDeviceJoinTilerap(ca, dp->cnnz);
    {
      PetscErrorCode e2 = TileDeviceValuesEnd(C, &ca);
      if (!ierr) ierr = e2;
    }
  }
  tilerap_device_free(dp->first);
  dp->first = NULL;
  {
    PetscErrorCode e2 = PetscLogEventEnd(TILE_Numeric, A, B, C, 0);
    if (!ierr) ierr = e2;
  }
  PetscCall(TileAIJArraysEnd(A, &ra));
  PetscCall(TileAIJArraysEnd(B, &rb));
  PetscCall(ierr);
  TileCall(comm, err);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceProductView(TileDeviceProduct *dp, PetscViewer viewer)
{
  int64_t      flops = 0, longest = 0;
  tilerap_path path  = TILERAP_PATH_CSR;
  double       af = 0, bf = 0;
  char         how[160];

  PetscFunctionBegin;
  TileCall(PETSC_COMM_SELF, tilerap_csr_device_product_info(dp->X, NULL, NULL, NULL, &flops, &longest));
  TileCall(PETSC_COMM_SELF, tilerap_csr_device_product_path(dp->X, &path, &af, &bf));
  if (path == TILERAP_PATH_TILES)
    PetscCall(PetscSNPrintf(how, sizeof how, "over tiles: a dense P^T A P, its operands converted on the device (mean entries per tile A %.1f, P %.1f), C back into AIJCUSPARSE's arrays", af, bf));
  else if (af > 0)
    PetscCall(PetscSNPrintf(how, sizeof how, "device CSR products on AIJCUSPARSE's arrays, no tile form (mean entries per tile A %.1f, P %.1f: too sparse for tiles)", af, bf));
  else PetscCall(PetscSNPrintf(how, sizeof how, "device CSR products on AIJCUSPARSE's arrays, no tile form"));
  PetscCall(PetscViewerASCIIPrintf(viewer,
                                   "tilerap path device-csr %s (A's longest row %" PetscInt64_FMT "; -mat_tile_path tiles for the tile plans), %" PetscInt64_FMT
                                   " entries of C, %" PetscInt64_FMT " flops a numeric run, %" PetscInt_FMT " numeric run(s), %" PetscInt_FMT " made again on moved operand arrays\n",
                                   how, (PetscInt64)longest, (PetscInt64)dp->cnnz, (PetscInt64)flops, dp->nnumeric, dp->nremade));
  PetscFunctionReturn(PETSC_SUCCESS);
}

#endif
