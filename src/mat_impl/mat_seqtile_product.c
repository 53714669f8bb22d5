/* MatProduct wiring of MATSEQTILE: C = A*B, C = A^T*B and C = P^T A P through the
 * tilerap plans when one operand is seqtile and the other seqtile or plain
 * seqaij; everything else goes to the saved SeqAIJ implementation.
 *
 * CPU engine: a CSR plan (tilerap_csr_plan) on the operands' AIJ arrays,
 * C's AIJ arrays straight from it; no tile form is made (on the CPU the
 * conversions to and from tiles cost more than a product, and PETSc's
 * setups make most products once).  -mat_tile_path tiles takes the tile
 * plans instead.
 * CUDA engine with operands and C on AIJCUSPARSE: the device CSR route
 * (mat_seqtile_device_product.c), no tile form either, unless
 * -mat_tile_path tiles or an operand's row is too long for it.
 * CUDA engine otherwise (and the CPU engine's tile route), symbolic: tile copies of
 * the operands, the plan, C's tile form (the plan's output, kept as C's
 * tile copy) and C's complete AIJ structure.  Numeric (MAT_REUSE_MATRIX as
 * well): operands' tile values refreshed, the plan's numeric phase, C's
 * values gathered into C's AIJ array.
 * Either plan records which objects and nonzero patterns it was built for
 * and is rebuilt when they change (MatPtAP(..., MAT_REUSE_MATRIX) does not
 * check). */
#include "mat_seqtile_impl.h"
#include "tuning.h"
#include "csr_plan.h"

/* C's values were written in its host arrays: a device-base C (bound to
 * the CPU or not) must take them from there next time. */
static PetscErrorCode TileHostValuesWritten(Mat C)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  Mat_SeqTile *t;
  PetscCall(TileGetData(C, &t));
  if (t && t->device_aij) C->offloadmask = PETSC_OFFLOAD_CPU;
#else
  (void)C;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

typedef struct {
  MatProductType      type;
  tilerap_options     opt;
  tilerap_spgemm_plan ab;
  tilerap_ptap_plan   ptap;
  tilerap_atb_plan    atb;
  PetscBool           device;       /* CUDA engine: operands, plan and C on the device */
  tilerap_csr_plan    csr;          /* CPU engine's CSR route: the plan on the AIJ arrays */
#if TILE_DEVICE_AIJ
  TileDeviceProduct  *dcsr;         /* CUDA engine's device CSR route (AIJCUSPARSE's arrays) */
#endif
  int64_t            *arp, *brp;    /* ... the operands' row pointers as it reads them */
  int32_t            *acol, *bcol;  /* ... and columns (64-bit PetscInt builds only) */
  tilerap_csr        *cfirst;       /* C as the CSR plan made it, with values from A, B at ast, bst */
  TileCache           own_a, own_b; /* tile copies of plain-AIJ operands */
  PetscObjectId       aid, bid;     /* operands the plan was built for    */
  PetscObjectState    anz, bnz;     /* ... and their nonzero patterns      */
  tilerap_tile_matrix *Cplan;       /* C's host tile form (owned by C's cache) */
  tilerap_tile_matrix *Cdev;        /* C's device tile form, the plan's output (owned by C's cache) */
  PetscInt64          Cgen;         /* generation of C's cache holding them */
  PetscObjectState    cnz;          /* C's nonzerostate after symbolic     */
  PetscInt            cnnz;
  PetscInt           *perm;         /* C's CSR entry q = Cplan->val[perm[q]] */
  double             *fresh;        /* CPU engine: C's tile values as the plan made them (plan_values) */
  PetscObjectState    ast, bst;     /* ... from the operands in these states */
  PetscInt            nplans, nnumeric, nfresh;
  /* planning in the symbolic phase of a product made through the MatProduct
   * API (MatProductCreate, not MatMatMult/MatPtAP...): PETSc promises no
   * operand values then, and a caller may want the structure alone (3.20+
   * GAMG's graph square): the CPU engine's CSR plan makes C's structure
   * only, the numeric phase its values */
  PetscBool           structure_only;
} TileProduct;

static PetscErrorCode TileProductDestroy(TILE_PRODUCT_DESTROY_ARG arg)
{
  TileProduct *pd = (TileProduct *)TILE_PRODUCT_DESTROY_DATA(arg);

  PetscFunctionBegin;
  if (!pd) PetscFunctionReturn(PETSC_SUCCESS);
  tilerap_spgemm_plan_destroy(&pd->ab);
  tilerap_ptap_plan_destroy(&pd->ptap);
  tilerap_atb_plan_destroy(&pd->atb);
  tilerap_csr_plan_destroy(&pd->csr);
  tilerap_csr_destroy(&pd->cfirst);
#if TILE_DEVICE_AIJ
  PetscCall(TileDeviceProductDestroy(&pd->dcsr));
#endif
  PetscCall(PetscFree4(pd->arp, pd->brp, pd->acol, pd->bcol));
  PetscCall(TileCacheReset(&pd->own_a));
  PetscCall(TileCacheReset(&pd->own_b));
  PetscCall(PetscFree(pd->perm));
  PetscCall(PetscFree(pd->fresh));
  PetscCall(PetscFree(pd));
#if !PETSC_VERSION_LT(3, 25, 0)
  *(void **)arg = NULL;
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Tile form of an operand, in sync with its AIJ values: the host copy, or
 * for the CUDA engine the device mirror (kept with the matrix, so unchanged
 * operands such as a reused prolongator are not uploaded again). */
static PetscErrorCode TileOperand(Mat X, TileCache *own, PetscBool device, const tilerap_tile_matrix **T)
{
  Mat_SeqTile *t;
  TileCache   *c;

  PetscFunctionBegin;
  PetscCall(TileGetData(X, &t));
  c = t ? &t->cache : own;
  if (device) {
    PetscCall(TileCacheSyncDevice(X, c));
    *T = c->D;
  } else {
    PetscCall(TileCacheSync(X, c));
    *T = c->T;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Both operands' tile forms, after PETSc's queued device work. */
static PetscErrorCode TileOperands(TileProduct *pd, Mat A, Mat B, const tilerap_tile_matrix **TA, const tilerap_tile_matrix **TB)
{
  PetscFunctionBegin;
#if TILE_DEVICE_AIJ
  if (pd->device) PetscCall(TileDeviceJoinPETSc());
#endif
  PetscCall(TileOperand(A, &pd->own_a, pd->device, TA));
  PetscCall(TileOperand(B, &pd->own_b, pd->device, TB));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileProductView(Mat C, PetscViewer viewer)
{
  TileProduct *pd = (TileProduct *)C->product->data;
  PetscBool    iascii;

  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &iascii));
  if (iascii && pd) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap %s product, engine %s: %" PetscInt_FMT " plan(s), %" PetscInt_FMT " numeric phase(s), %" PetscInt_FMT " first product(s) made by the plan\n", MatProductTypes[pd->type],
                                     tilerap_engine_name(tilerap_engine_resolve(pd->opt.engine)), pd->nplans, pd->nnumeric, pd->nfresh));
    if (pd->csr) {
      int64_t cnnz = 0, flops = 0;
      PetscCall(TileCheckError_Private(PetscObjectComm((PetscObject)C), tilerap_csr_plan_info(pd->csr, &cnnz, &flops), "tilerap_csr_plan_info"));
      PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap path aij-csr: the CSR plan on the AIJ arrays, no tile form (CPU engine; -mat_tile_path tiles for the tile plans), %" PetscInt64_FMT " entries of C, %" PetscInt64_FMT " flops a numeric run\n", (PetscInt64)cnnz, (PetscInt64)flops));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
#if TILE_DEVICE_AIJ
    if (pd->dcsr) {
      PetscCall(TileDeviceProductView(pd->dcsr, viewer));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
#endif
    /* which path the plan took and what it chose by (TILERAP_PATH) */
    tilerap_spgemm_info i;
    tilerap_ptap_info   g;
    int                 have = 0;
    if (pd->ptap && !tilerap_ptap_plan_info(pd->ptap, &g)) { i = g.ap; have = 1; }
    else if (pd->ab && !tilerap_spgemm_plan_info(pd->ab, &i)) have = 1;
    else if (pd->atb && !tilerap_atb_plan_info(pd->atb, &i)) have = 1;
    if (have)
      PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap path %s (operands' mean entries per tile %.2f and %.2f; -mat_tile_path)\n", tilerap_path_name(i.path), i.a_fill, i.b_fill));
    if (have && pd->ptap) { /* both halves of the Galerkin product */
      i.tc_pairs += g.ptap.tc_pairs;
      i.lowprec_pairs += g.ptap.lowprec_pairs;
      i.lowprec_fallbacks += g.ptap.lowprec_fallbacks;
    }
    if (have && i.tc_pairs > 0)
      PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap tensor-core pairs %" PetscInt64_FMT ", in %s %" PetscInt64_FMT " (0: fp64 kept by the plan), of which the last run multiplied %" PetscInt64_FMT " in fp64 (a tile's range did not fit; -mat_tile_precision)\n",
                                       (PetscInt64)i.tc_pairs, tilerap_precision_name(pd->opt.precision), (PetscInt64)i.lowprec_pairs, (PetscInt64)i.lowprec_fallbacks));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Plans the product of A and B (the product's operands, or those PETSc's
 * "Unsafe" triple-product drivers pass, see MatMatMultNumeric_SeqTile) and
 * (re)creates C's structure from the plan's C.  The tile forms of C go into
 * C's cache as soon as they exist, so C owns them whatever fails later. */

/* A new plan of A and B: the objects and nonzero patterns it is valid for */
static PetscErrorCode TileProductPlanned(TileProduct *pd, Mat A, Mat B)
{
  PetscFunctionBegin;
  pd->nplans++;
  PetscCall(PetscObjectGetId((PetscObject)A, &pd->aid));
  PetscCall(PetscObjectGetId((PetscObject)B, &pd->bid));
  pd->anz = A->nonzerostate;
  pd->bnz = B->nonzerostate;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* X's AIJ arrays as the CSR plans read them: its values and columns in
 * place (32-bit PetscInt), the row pointers (and 64-bit PetscInt's
 * columns) copied into rp and col, which the plan sized. */
static PetscErrorCode TileAIJAsCSR(Mat X, int64_t *rp, int32_t *col, tilerap_csr *v)
{
  MPI_Comm        comm = PetscObjectComm((PetscObject)X);
  const PetscInt    *ai, *aj;
  const PetscScalar *aa;
  TileAIJArrays      arr;
  PetscInt           m, n;

  PetscFunctionBegin;
  PetscCheck(X->assembled, comm, PETSC_ERR_ARG_WRONGSTATE, "Matrix must be assembled before a product");
  PetscCall(MatGetSize(X, &m, &n));
  PetscCheck(m < INT32_MAX && n < INT32_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE, "tilerap indexes rows and columns with 32 bits");
  /* host arrays (a device AIJ brings them up to date); they are the AIJ
   * object's own, valid while it is unchanged */
  PetscCall(TileAIJArraysBegin(X, PETSC_FALSE, &arr));
  ai = arr.ai;
  aj = arr.aj;
  aa = arr.aa;
  PetscCall(TileAIJArraysEnd(X, &arr));
  for (PetscInt i = 0; i <= m; i++) rp[i] = ai[i];
#if defined(PETSC_USE_64BIT_INDICES)
  for (PetscInt k = 0; k < ai[m]; k++) col[k] = (int32_t)aj[k];
  v->colidx = col;
#else
  (void)col;
  v->colidx = (int32_t *)aj;
#endif
  v->m      = (int32_t)m;
  v->n      = (int32_t)n;
  v->nnz    = ai[m];
  v->rowptr = rp;
  v->val    = (double *)aa;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* C's AIJ structure in two steps, values zero: preallocated exactly from
 * the row pointers, then every row's columns written straight into the
 * column array that preallocation made (*cols, sorted rows) and taken as
 * they are (MatSeqAIJSetColumnIndices); MatSetValues row by row costs a
 * call per row, MatSeqAIJSetPreallocationCSR a search per entry.  Then
 * assembled, new nonzeros refused. */
PetscErrorCode TileStructureBegin(Mat C, int32_t m, const int64_t *rowptr, PetscInt **cols)
{
  PetscInt       *nnz, n;
  const PetscInt *ci, *cj;
  PetscBool       done;

  PetscFunctionBegin;
  PetscCall(PetscMalloc1(m + 1, &nnz));
  for (int32_t i = 0; i < m; i++) nnz[i] = (PetscInt)(rowptr[i + 1] - rowptr[i]);
  PetscCall(MatSeqAIJSetPreallocation(C, 0, nnz));
  PetscCall(PetscFree(nnz));
  PetscCall(MatGetRowIJ(C, 0, PETSC_FALSE, PETSC_FALSE, &n, &ci, &cj, &done));
  PetscCheck(done && ci[m] == (PetscInt)rowptr[m], PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "preallocated structure differs from the plan's");
  *cols = (PetscInt *)cj; /* C's own column array, ours to fill before assembly */
  PetscCall(MatRestoreRowIJ(C, 0, PETSC_FALSE, PETSC_FALSE, &n, &ci, &cj, &done));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileStructureEnd(Mat C, PetscInt *cols, int64_t nz, const double *vals, tilerap_memtype vals_mem, PetscBool zero)
{
  PetscScalar *ca;

  PetscFunctionBegin;
  /* in place: sets the row lengths (an empty C has no column array: a
   * debug PETSc refuses the NULL, and every row length is 0 already) */
  if (nz > 0) PetscCall(MatSeqAIJSetColumnIndices(C, cols));
  PetscCall(MatSeqAIJGetArrayWrite(C, &ca));
  int terr = TILERAP_SUCCESS;
  if (!vals) { /* by all threads: a fresh array's first-touch faults dominate the zeroing */
    if (zero) {
#pragma omp parallel for schedule(static) if (nz > (1 << 20))
      for (int64_t k = 0; k < nz; k++) ca[k] = 0;
    }
  } else if (nz > 0) terr = tilerap_memcpy(ca, TILERAP_MEM_HOST, vals, vals_mem, (size_t)nz * sizeof(double));
  PetscCall(MatSeqAIJRestoreArrayWrite(C, &ca));
  TileCall(PetscObjectComm((PetscObject)C), terr);
  PetscCall(TileHostValuesWritten(C));
  PetscCall(MatAssemblyBegin(C, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(C, MAT_FINAL_ASSEMBLY));
  PetscCall(MatSetOption(C, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileStructureIs(Mat C, int32_t m, const int64_t *rowptr, const int32_t *colidx, PetscBool *same)
{
  const PetscInt *ci, *cj;
  PetscInt        n;
  PetscBool       done;

  PetscFunctionBegin;
  *same = PETSC_FALSE;
  if (!C->assembled || !C->preallocated) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatGetRowIJ(C, 0, PETSC_FALSE, PETSC_FALSE, &n, &ci, &cj, &done));
  if (done && n == m && ci[m] == (PetscInt)rowptr[m]) {
    PetscBool eq = PETSC_TRUE;
    for (PetscInt i = 0; eq && i <= m; i++) eq = (PetscBool)(ci[i] == (PetscInt)rowptr[i]);
    for (int64_t k = 0; eq && k < rowptr[m]; k++) eq = (PetscBool)(cj[k] == (PetscInt)colidx[k]);
    *same = eq;
  }
  PetscCall(MatRestoreRowIJ(C, 0, PETSC_FALSE, PETSC_FALSE, &n, &ci, &cj, &done));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileAssembleStructure(Mat C, int32_t m, const int64_t *rowptr, const int32_t *colidx)
{
  PetscInt *cols;
  PetscBool same;

  PetscFunctionBegin;
  PetscCall(TileStructureIs(C, m, rowptr, colidx, &same));
  if (same) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileStructureBegin(C, m, rowptr, &cols));
  for (int64_t k = 0; k < rowptr[m]; k++) cols[k] = (PetscInt)colidx[k];
  PetscCall(TileStructureEnd(C, cols, rowptr[m], NULL, TILERAP_MEM_HOST, PETSC_TRUE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The CSR route's plan (CPU engine): C's AIJ structure from it, values
 * zero as SeqAIJ's symbolic phase leaves them; the plan's values wait in
 * pd->cfirst for the numeric phase. */
static PetscErrorCode TileProductPlanCSR(Mat C, TileProduct *pd, Mat A, Mat B)
{
  MPI_Comm         comm = PetscObjectComm((PetscObject)C);
  tilerap_csr      va, vb;
  tilerap_csr     *Cc  = NULL;
  PetscInt         am, bm;
  tilerap_csr_kind kind = pd->type == MATPRODUCT_PtAP ? TILERAP_CSR_PTAP : pd->type == MATPRODUCT_AtB ? TILERAP_CSR_ATB : TILERAP_CSR_AB;
  int              err;

  PetscFunctionBegin;
  PetscCall(PetscFree4(pd->arp, pd->brp, pd->acol, pd->bcol));
  PetscCall(MatGetSize(A, &am, NULL));
  PetscCall(MatGetSize(B, &bm, NULL));
#if defined(PETSC_USE_64BIT_INDICES)
  {
    TileAIJArrays ra, rb;
    PetscInt      an, bn;
    PetscCall(TileAIJArraysBegin(A, PETSC_FALSE, &ra));
    PetscCall(TileAIJArraysBegin(B, PETSC_FALSE, &rb));
    an = ra.ai[am];
    bn = rb.ai[bm];
    PetscCall(TileAIJArraysEnd(A, &ra));
    PetscCall(TileAIJArraysEnd(B, &rb));
    PetscCall(PetscMalloc4(am + 1, &pd->arp, bm + 1, &pd->brp, an, &pd->acol, bn, &pd->bcol));
  }
#else
  PetscCall(PetscMalloc4(am + 1, &pd->arp, bm + 1, &pd->brp, 0, &pd->acol, 0, &pd->bcol));
#endif
  PetscCall(TileAIJAsCSR(A, pd->arp, pd->acol, &va));
  PetscCall(TileAIJAsCSR(B, pd->brp, pd->bcol, &vb));
  if (pd->structure_only) PetscCall(PetscInfo(C, "tilerap: %s symbolic phase of a MatProduct API product: C's structure alone\n", MatProductTypes[pd->type]));
  PetscCall(PetscLogEventBegin(TILE_Plan, A, B, C, 0));
  if (pd->structure_only) err = tr_csr_plan_create_structure(kind, &va, &vb, &pd->csr, &Cc); /* no values, none made */
  else err = tilerap_csr_plan_create(kind, &va, &vb, &pd->csr, &Cc);
  PetscCall(PetscLogEventEnd(TILE_Plan, A, B, C, 0));
  TileCall(comm, err);
  PetscCall(TileProductPlanned(pd, A, B));
  PetscCall(PetscObjectStateGet((PetscObject)A, &pd->ast));
  PetscCall(PetscObjectStateGet((PetscObject)B, &pd->bst));

  PetscCall(PetscLogEventBegin(TILE_Struct, C, 0, 0, 0));
  PetscCall(TileAssembleStructure(C, Cc->m, Cc->rowptr, Cc->colidx));
  pd->cnnz = (PetscInt)Cc->nnz;
  if (pd->structure_only) tilerap_csr_destroy(&Cc); /* the numeric phase runs the plan */
  pd->cfirst = Cc;
  PetscCall(PetscLogEventEnd(TILE_Struct, C, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A route with no tile form of C (the CSR plan, the device CSR
 * products): what the numeric phase checks C against. */
static PetscErrorCode TileProductUntiled(TileProduct *pd, Mat C, const TileCache *cc)
{
  PetscFunctionBegin;
  pd->Cplan = NULL;
  pd->Cdev  = NULL;
  pd->Cgen  = cc->gen;
  pd->cnz   = C->nonzerostate;
  PetscCall(PetscFree(pd->perm));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileProductPlan(Mat C, TileProduct *pd, Mat A, Mat B)
{
  MPI_Comm                   comm = PetscObjectComm((PetscObject)C);
  const tilerap_tile_matrix *TA, *TB;
  tilerap_tile_matrix       *TC = NULL, *out = NULL;
  PetscInt                   m, n;
  PetscBool                  istile;
  Mat_SeqTile               *ct;
  TileCache                 *cc;
  int                        err;

  PetscFunctionBegin;
  /* C: a seqtile of the product's size */
  m = pd->type == MATPRODUCT_PtAP ? B->cmap->N : pd->type == MATPRODUCT_AtB ? A->cmap->N : A->rmap->N;
  n = B->cmap->N;
  PetscCall(MatSetSizes(C, m, n, m, n));
  if (pd->type == MATPRODUCT_PtAP) PetscCall(MatSetBlockSizes(C, PetscAbs(B->cmap->bs), PetscAbs(B->cmap->bs)));
  else if (pd->type == MATPRODUCT_AtB) PetscCall(MatSetBlockSizes(C, PetscAbs(A->cmap->bs), PetscAbs(B->cmap->bs)));
  else PetscCall(MatSetBlockSizes(C, PetscAbs(A->rmap->bs), PetscAbs(B->cmap->bs)));
  PetscCall(TileIsSeqTile(C, &istile));
  if (!istile) { /* the tile operand's type: its base (host or device AIJ) */
    PetscBool atile;
    PetscCall(TileIsSeqTile(A, &atile));
    PetscCall(MatSetType(C, ((PetscObject)(atile ? A : B))->type_name));
  }
  PetscCall(TileGetData(C, &ct));
  cc = &ct->cache;
  ct->opt = pd->opt;
  PetscCall(TileCacheReset(cc));
  tilerap_spgemm_plan_destroy(&pd->ab);
  tilerap_ptap_plan_destroy(&pd->ptap);
  tilerap_atb_plan_destroy(&pd->atb);
  tilerap_csr_plan_destroy(&pd->csr);
  tilerap_csr_destroy(&pd->cfirst);
  PetscCall(PetscFree(pd->fresh));
#if TILE_DEVICE_AIJ
  PetscCall(TileDeviceProductDestroy(&pd->dcsr));
  if (pd->device) { /* the device CSR route where C and the operands have a device CSR */
    PetscCall(TileDeviceProductPlan(C, pd->type, A, B, pd->structure_only, &pd->dcsr));
    if (pd->dcsr) {
      PetscCall(TileProductPlanned(pd, A, B));
      PetscCall(TileProductUntiled(pd, C, cc));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
  }
#endif
  if (!pd->device && tr_knob_int(TR_KNOB_PATH) != 1) { /* the CSR route unless -mat_tile_path tiles */
    PetscCall(TileProductPlanCSR(C, pd, A, B));
    PetscCall(TileProductUntiled(pd, C, cc));
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  PetscCall(TileOperands(pd, A, B, &TA, &TB));
  /* CPU engine: the plan computes C's values too (steps 2 and 3 in one
   * walk, cheaper than plan + numeric); the numeric phase that follows
   * MAT_INITIAL_MATRIX's symbolic one then only copies them, if the
   * operands' values have not changed in between.  The CUDA engine gains
   * nothing from it (its plan would run the same numeric phase). */
  tilerap_options o = pd->opt;
  o.plan_values = !pd->device;
  PetscCall(PetscLogEventBegin(TILE_Plan, A, B, C, 0));
  if (pd->type == MATPRODUCT_PtAP) err = tilerap_ptap_plan_create(TA, TB, &o, &pd->ptap, &out);
  else if (pd->type == MATPRODUCT_AtB) err = tilerap_atb_plan_create(TA, TB, &o, &pd->atb, &out);
  else err = tilerap_spgemm_plan_create(TA, TB, &o, &pd->ab, &out);
  PetscCall(PetscLogEventEnd(TILE_Plan, A, B, C, 0));
  TileCall(comm, err);
  PetscCall(TileProductPlanned(pd, A, B));

  if (out->memtype == TILERAP_MEM_DEVICE) {
    /* CUDA engine: C stays on the device (the plan's output, and the next
     * level's operand); its CSR structure is made there and only the CSR
     * arrays come down.  No host tile copy. */
    cc->D      = out;
    cc->Dgen   = cc->gen;
    cc->Dvalid = PETSC_FALSE; /* values undefined until the numeric phase */
    PetscCheck(out->m == m && out->n == n, comm, PETSC_ERR_PLIB, "tile product has the wrong size");
    int64_t *rp;
    PetscInt *cols;
    PetscCall(PetscLogEventBegin(TILE_Struct, C, 0, 0, 0));
    PetscCall(PetscMalloc1(m + 1, &rp));
    err = tilerap_tile_to_csr_device(out, rp, NULL, NULL, TILERAP_MEM_HOST);
    if (err) PetscCall(PetscFree(rp));
    TileCall(comm, err);
    PetscCall(PetscFree(pd->perm)); /* values come down in CSR order: no permutation */
    pd->cnnz = (PetscInt)out->nnz;
    if (!PetscDefined(USE_64BIT_INDICES) && !(C->assembled && C->preallocated)) {
      /* C's first structure, zero values: the columns come down straight
       * into C's column array (32-bit PetscInt) */
      PetscCall(TileStructureBegin(C, (int32_t)m, rp, &cols));
      err = tilerap_tile_to_csr_device(out, NULL, (int32_t *)cols, NULL, TILERAP_MEM_HOST);
      if (!err) PetscCall(TileStructureEnd(C, cols, out->nnz, NULL, TILERAP_MEM_HOST, PETSC_TRUE));
    } else { /* through a 32-bit copy; a plan made again keeps C's structure where it is the product's */
      int32_t *cj32;
      PetscCall(PetscMalloc1(out->nnz ? out->nnz : 1, &cj32));
      err = tilerap_tile_to_csr_device(out, NULL, cj32, NULL, TILERAP_MEM_HOST);
      if (!err) PetscCall(TileAssembleStructure(C, (int32_t)m, rp, cj32));
      PetscCall(PetscFree(cj32));
    }
    if (err) PetscCall(PetscFree(rp));
    TileCall(comm, err);
    PetscCall(PetscFree(rp));
    PetscCall(PetscLogEventEnd(TILE_Struct, C, 0, 0, 0));
  } else {
    cc->T      = out;
    TC         = cc->T;
    cc->Dgen   = cc->gen;
    cc->Dvalid = PETSC_FALSE;
    PetscCheck(TC->m == m && TC->n == n, comm, PETSC_ERR_PLIB, "tile product has the wrong size");

    /* C's CSR structure, and where each CSR entry sits in the tile form:
     * tile positions travel through the values (exact in a double). */
    int64_t *rp;
    int32_t *cj32;
    double  *pos;
    PetscCall(PetscLogEventBegin(TILE_Struct, C, 0, 0, 0));
    PetscCall(PetscMalloc3(m + 1, &rp, TC->nnz, &cj32, TC->nnz, &pos));
    if (o.plan_values) { /* keep them aside: C's tile form must match its AIJ (zero) values until the numeric phase */
      PetscCall(PetscMalloc1(TC->nnz, &pd->fresh));
      PetscCall(PetscArraycpy(pd->fresh, TC->val, TC->nnz));
      PetscCall(PetscObjectStateGet((PetscObject)A, &pd->ast));
      PetscCall(PetscObjectStateGet((PetscObject)B, &pd->bst));
    }
    for (int64_t k = 0; k < TC->nnz; k++) TC->val[k] = (double)k;
    err = tilerap_tile_to_csr(TC, rp, cj32, pos);
    if (err) PetscCall(PetscFree3(rp, cj32, pos));
    TileCall(comm, err);
    PetscCall(PetscFree(pd->perm));
    PetscCall(PetscMalloc1(TC->nnz, &pd->perm));
    for (int64_t k = 0; k < TC->nnz; k++) pd->perm[k] = (PetscInt)pos[k];
    PetscCall(PetscArrayzero(TC->val, TC->nnz)); /* values defined until the numeric phase: zeros, as in C's AIJ */
    pd->cnnz = (PetscInt)TC->nnz;
    PetscCall(TileAssembleStructure(C, (int32_t)m, rp, cj32)); /* complete host CSR after symbolic, zero values */
    PetscCall(PetscFree3(rp, cj32, pos));
    PetscCall(PetscLogEventEnd(TILE_Struct, C, 0, 0, 0));
  }

  PetscCall(TileCacheMarkInSync(C, cc, PETSC_FALSE));
  cc->stats.rebuilds++;
  pd->Cplan = cc->T;
  pd->Cdev  = cc->D;
  pd->Cgen  = cc->gen;
  pd->cnz   = C->nonzerostate;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The plan's numeric phase into C's tile form (on the device for the CUDA engine). */
static int TileProductRun(TileProduct *pd, const tilerap_tile_matrix *TA, const tilerap_tile_matrix *TB)
{
  tilerap_tile_matrix *out = pd->device ? pd->Cdev : pd->Cplan;
  if (pd->type == MATPRODUCT_PtAP) return tilerap_ptap_numeric(pd->ptap, TA, TB, out);
  if (pd->type == MATPRODUCT_AtB) return tilerap_atb_numeric(pd->atb, TA, TB, out);
  return tilerap_spgemm_numeric(pd->ab, TA, TB, out);
}

/* The CSR route's numeric phase (plan current): C's values straight into
 * its AIJ array. */
static PetscErrorCode TileProductNumericCSR(Mat C, TileProduct *pd, Mat A, Mat B)
{
  MPI_Comm     comm = PetscObjectComm((PetscObject)C);
  Mat_SeqTile *ct;

  PetscFunctionBegin;
  PetscCall(PetscLogEventBegin(TILE_Numeric, A, B, C, 0));
  {
    PetscObjectState ast, bst;
    PetscCall(PetscObjectStateGet((PetscObject)A, &ast));
    PetscCall(PetscObjectStateGet((PetscObject)B, &bst));
    PetscScalar *ca;
    PetscCall(MatSeqAIJGetArrayWrite(C, &ca));
    if (pd->cfirst && ast == pd->ast && bst == pd->bst) { /* the plan's values of these operands */
      PetscCall(PetscArraycpy(ca, (PetscScalar *)pd->cfirst->val, pd->cnnz));
      pd->nfresh++;
    } else {
      tilerap_csr va, vb;
      int         err;
      PetscCall(TileAIJAsCSR(A, pd->arp, pd->acol, &va));
      PetscCall(TileAIJAsCSR(B, pd->brp, pd->bcol, &vb));
      err = tilerap_csr_plan_numeric(pd->csr, &va, &vb, (double *)ca);
      if (err) PetscCall(MatSeqAIJRestoreArrayWrite(C, &ca));
      TileCall(comm, err);
      pd->nnumeric++;
    }
    PetscCall(MatSeqAIJRestoreArrayWrite(C, &ca));
    PetscCall(TileHostValuesWritten(C));
    tilerap_csr_destroy(&pd->cfirst);
  }
  PetscCall(PetscLogEventEnd(TILE_Numeric, A, B, C, 0));
  PetscCall(TileGetData(C, &ct));
  if (ct) { /* a tile copy of C made meanwhile is stale */
    ct->cache.state_plus_one = PETSC_FALSE;
    ct->cache.Dvalid         = PETSC_FALSE;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The numeric phase of C = op(A) B with the operands given: the product's
 * own (MatProductNumeric_SeqTile) or those of PETSc's drivers that call
 * C->ops->matmultnumeric / transposematmultnumeric directly. */
static PetscErrorCode TileProductNumeric(Mat C, Mat A, Mat B)
{
  MPI_Comm                   comm;
  TileProduct               *pd;
  const tilerap_tile_matrix *TA, *TB;
  Mat_SeqTile               *ct;
  PetscScalar               *ca;
  PetscObjectId              aid, bid;
  int                        err;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  comm = PetscObjectComm((PetscObject)C);
  pd   = (TileProduct *)C->product->data;
  PetscCheck(pd && C->product->destroy == TileProductDestroy, comm, PETSC_ERR_PLIB, "Product data empty or not a tile product: symbolic phase missing");
  /* the plan's operand objects and patterns, C's pattern, and for a tile
   * plan C's tile form (its output) */
  PetscCall(PetscObjectGetId((PetscObject)A, &aid));
  PetscCall(PetscObjectGetId((PetscObject)B, &bid));
  PetscCall(TileGetData(C, &ct));
  {
    PetscBool tiles = (PetscBool)!pd->csr; /* a tile plan: C's tile form is its output */
#if TILE_DEVICE_AIJ
    if (pd->dcsr) tiles = PETSC_FALSE;
#endif
    if (aid != pd->aid || bid != pd->bid || A->nonzerostate != pd->anz || B->nonzerostate != pd->bnz || C->nonzerostate != pd->cnz || (tiles && (!ct || ct->cache.gen != pd->Cgen))) {
      PetscCall(PetscInfo(C, "tilerap: operands or C changed structure (or object) since the plan: planning again\n"));
      PetscCall(TileProductPlan(C, pd, A, B));
      PetscCall(TileGetData(C, &ct));
    }
  }
#if TILE_DEVICE_AIJ
  if (pd->dcsr) {
    PetscBool stale, fresh;
    PetscCall(TileDeviceProductNumeric(C, pd->dcsr, A, B, &stale, &fresh));
    if (stale) {
      PetscCall(PetscInfo(C, "tilerap: an operand or C left the device since the plan: planning again\n"));
      PetscCall(TileProductPlan(C, pd, A, B));
      PetscCall(TileProductNumeric(C, A, B));
      PetscFunctionReturn(PETSC_SUCCESS);
    }
    if (fresh) pd->nfresh++;
    else pd->nnumeric++;
    if (ct) { /* a tile copy of C made meanwhile is stale */
      ct->cache.state_plus_one = PETSC_FALSE;
      ct->cache.Dvalid         = PETSC_FALSE;
    }
    PetscFunctionReturn(PETSC_SUCCESS);
  }
#endif
  if (pd->csr) {
    PetscCall(TileProductNumericCSR(C, pd, A, B));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(TileOperands(pd, A, B, &TA, &TB));
  PetscCall(PetscLogEventBegin(TILE_Numeric, A, B, C, 0));
  {
    PetscBool use_fresh = PETSC_FALSE;
    if (pd->fresh) { /* the plan's values, if A and B are still as they were */
      PetscObjectState ast, bst;
      PetscCall(PetscObjectStateGet((PetscObject)A, &ast));
      PetscCall(PetscObjectStateGet((PetscObject)B, &bst));
      use_fresh = (PetscBool)(ast == pd->ast && bst == pd->bst);
    }
    if (use_fresh) {
      PetscCall(PetscArraycpy(pd->Cplan->val, pd->fresh, pd->cnnz));
      pd->nfresh++;
      err = 0;
    } else {
      err = TileProductRun(pd, TA, TB);
      pd->nnumeric++;
    }
    PetscCall(PetscFree(pd->fresh));
  }
  PetscCall(PetscLogEventEnd(TILE_Numeric, A, B, C, 0));
  TileCall(comm, err);
  if (pd->device) {
    PetscCall(PetscLogEventBegin(TILE_Xfer, C, 0, 0, 0));
#if TILE_DEVICE_AIJ
    if (ct->device_aij && !C->boundtocpu) {
      /* C's values in CSR order straight into its device CSR (AIJCUSPARSE
       * underneath): nothing comes down, C's host copy is made only when
       * someone asks for it */
      PetscCall(TileDeviceValuesBegin(C, &ca));
      err = tilerap_tile_to_csr_values_device(pd->Cdev, (double *)ca, TILERAP_MEM_DEVICE);
      if (!err) PetscCall(TileDeviceJoinTilerap(ca, pd->cnnz));
      PetscCall(TileDeviceValuesEnd(C, &ca));
    } else
#endif
    {
      /* C's values come down once, already in CSR order (reordered on the
       * device into the staging buffer kept with Cdev: no allocation); the
       * device C stays current for the next level */
      PetscCall(MatSeqAIJGetArrayWrite(C, &ca));
      err = tilerap_tile_to_csr_values_device(pd->Cdev, (double *)ca, TILERAP_MEM_HOST);
      PetscCall(MatSeqAIJRestoreArrayWrite(C, &ca));
      PetscCall(TileHostValuesWritten(C));
    }
    PetscCall(PetscLogEventEnd(TILE_Xfer, C, 0, 0, 0));
    TileCall(comm, err);
    tilerap_tile_destroy(&ct->cache.T); /* a host tile copy made meanwhile is stale */
    PetscCall(TileCacheMarkInSync(C, &ct->cache, PETSC_TRUE));
    ct->cache.Dvalid = PETSC_TRUE;
    PetscFunctionReturn(PETSC_SUCCESS);
  }

  /* values only into C's AIJ array; the tile form stays the in-sync copy */
  PetscCall(PetscLogEventBegin(TILE_Convert, C, 0, 0, 0));
  PetscCall(MatSeqAIJGetArrayWrite(C, &ca));
  {
    const double   *cv   = pd->Cplan->val;
    const PetscInt *perm = pd->perm;
    const PetscInt  nnz  = pd->cnnz;
#pragma omp parallel for schedule(static) if (nnz > 65536)
    for (PetscInt q = 0; q < nnz; q++) ca[q] = cv[perm[q]];
  }
  PetscCall(MatSeqAIJRestoreArrayWrite(C, &ca));
  PetscCall(TileHostValuesWritten(C));
  PetscCall(PetscLogEventEnd(TILE_Convert, C, 0, 0, 0));
  PetscCall(TileCacheMarkInSync(C, &ct->cache, PETSC_TRUE));
  ct->cache.Dvalid = pd->device;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatProductNumeric_SeqTile(Mat C)
{
  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  PetscCall(TileProductNumeric(C, C->product->A, C->product->B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* PETSc's Unsafe PtAP/ABC drivers (matproduct.c) and SeqAIJ's triple
 * products compute their last product with C->ops->matmultnumeric(A, X, C)
 * or transposematmultnumeric(P, X, C), X an intermediate that is not the
 * product's B.  SeqAIJ's own entries dispatch through C's ops again, so
 * without these C would call itself without end. */
static PetscErrorCode MatMatMultNumeric_SeqTile(Mat A, Mat B, Mat C)
{
  PetscFunctionBegin;
  PetscCall(TileProductNumeric(C, A, B)); /* the MatProductNumeric() around the caller increases C's state */
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatProductSymbolic_SeqTile(Mat C)
{
  MPI_Comm     comm;
  Mat_Product *product;
  Mat          A, B;
  TileProduct *pd;
  PetscBool    atile;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  comm    = PetscObjectComm((PetscObject)C);
  product = C->product;
  PetscCheck(!product->data, comm, PETSC_ERR_PLIB, "Product data not empty");
  A = product->A;
  B = product->B;
  if (product->type == MATPRODUCT_PtAP) {
    PetscCheck(A->rmap->N == A->cmap->N, comm, PETSC_ERR_ARG_SIZ, "PtAP needs a square A, got %" PetscInt_FMT " x %" PetscInt_FMT, A->rmap->N, A->cmap->N);
    PetscCheck(B->rmap->N == A->cmap->N, comm, PETSC_ERR_ARG_SIZ, "PtAP: P has %" PetscInt_FMT " rows, A is %" PetscInt_FMT " x %" PetscInt_FMT, B->rmap->N, A->rmap->N, A->cmap->N);
  } else if (product->type == MATPRODUCT_AtB) {
    PetscCheck(A->rmap->N == B->rmap->N, comm, PETSC_ERR_ARG_SIZ, "AtB: A is %" PetscInt_FMT " x %" PetscInt_FMT ", B is %" PetscInt_FMT " x %" PetscInt_FMT ": row counts differ", A->rmap->N, A->cmap->N, B->rmap->N, B->cmap->N);
  } else {
    PetscCheck(A->cmap->N == B->rmap->N, comm, PETSC_ERR_ARG_SIZ, "AB: A is %" PetscInt_FMT " x %" PetscInt_FMT ", B is %" PetscInt_FMT " x %" PetscInt_FMT, A->rmap->N, A->cmap->N, B->rmap->N, B->cmap->N);
  }
  PetscCall(PetscNew(&pd));
  pd->type = product->type;
  PetscCall(TileIsSeqTile(A, &atile));
  {
    Mat_SeqTile *t;
    PetscCall(TileGetData(atile ? A : B, &t));
    pd->opt = t->opt;
  }
  pd->device         = (PetscBool)(tilerap_engine_resolve(pd->opt.engine) == TILERAP_ENGINE_CUDA);
  pd->structure_only = (PetscBool)!product->api_user;
  {
    PetscErrorCode ierr = TileProductPlan(C, pd, A, B);
    pd->structure_only = PETSC_FALSE; /* a plan made again in a numeric phase makes values */
    if (ierr) {
      PetscCall(TileProductDestroy(TILE_PRODUCT_DESTROY_PASS(pd)));
      PetscCall(ierr);
    }
  }
  /* MatSetType() in the plan may have reset C's ops */
  C->product->data         = pd;
  C->product->destroy      = TileProductDestroy;
  C->product->view         = TileProductView;
  C->ops->productsymbolic  = MatProductSymbolic_SeqTile;
  C->ops->productnumeric   = MatProductNumeric_SeqTile;
  if (pd->type == MATPRODUCT_AtB) C->ops->transposematmultnumeric = MatMatMultNumeric_SeqTile;
  else if (pd->type == MATPRODUCT_AB) C->ops->matmultnumeric = MatMatMultNumeric_SeqTile;
#if TILE_DEVICE_AIJ
  if (pd->device && pd->type == MATPRODUCT_PtAP) PetscCall(TileFormExplicitTranspose(B)); /* pd is C's now */
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Products with a tile operand that went to the AIJ implementation, for
 * tests and diagnostics (MatSeqTileGetProductFallbacks). */
static PetscInt tile_product_fallbacks = 0;

PetscErrorCode MatSeqTileGetProductFallbacks(PetscInt *count)
{
  PetscFunctionBegin;
  *count = tile_product_fallbacks;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether the options name an algorithm for this product other than
 * "default" or "tile": the options SeqAIJ reads (-matmatmult_via,
 * -mattransposematmult_via, -matptap_via from the MatMatMult-style calls,
 * -mat_product_algorithm from the MatProduct API, with C's prefix).  Such
 * a product is left to SeqAIJ, which then runs the algorithm asked for. */
static PetscErrorCode TileOtherAlgorithmRequested(Mat C, PetscBool *other)
{
  Mat_Product *product = C->product;
  const char  *name    = "-mat_product_algorithm";
  char         alg[64];
  PetscBool    set = PETSC_FALSE;

  PetscFunctionBegin;
  *other = PETSC_FALSE;
  if (product->api_user) {
    if (product->type == MATPRODUCT_AB) name = "-matmatmult_via";
    else if (product->type == MATPRODUCT_AtB) name = "-mattransposematmult_via";
    else if (product->type == MATPRODUCT_PtAP) name = "-matptap_via";
  }
  PetscCall(PetscOptionsGetString(((PetscObject)C)->options, ((PetscObject)C)->prefix, name, alg, sizeof alg, &set));
  if (set) {
    PetscBool isdef, istile;
    PetscCall(PetscStrcmp(alg, MATPRODUCTALGORITHMDEFAULT, &isdef));
    PetscCall(PetscStrcmp(alg, "tile", &istile));
    *other = (PetscBool)!(isdef || istile);
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileProductCandidate(Mat C, PetscErrorCode (*is_tile)(Mat, PetscBool *), PetscErrorCode (*is_plain)(Mat, PetscBool *), const char *const algs[], PetscBool *alg_ok, PetscBool *fits)
{
  Mat_Product *product = C->product;
  PetscBool    atile, btile, aaij, baij;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  PetscCall((*is_tile)(product->A, &atile));
  PetscCall((*is_tile)(product->B, &btile));
  PetscCall((*is_plain)(product->A, &aaij));
  PetscCall((*is_plain)(product->B, &baij));
  *alg_ok = (PetscBool)!product->alg;
  for (int k = 0; algs[k] && !*alg_ok; k++) PetscCall(PetscStrcmp(product->alg, algs[k], alg_ok));
  /* MAT_FORCE_DIAGONAL_ENTRIES on C: AIJ's symbolic phases allocate the
   * diagonal, the tile plans make only the product's pattern */
  *fits = (PetscBool)(TILE_SCALAR_OK && !C->force_diagonals && (product->type == MATPRODUCT_AB || product->type == MATPRODUCT_AtB || product->type == MATPRODUCT_PtAP) && (atile || btile) && (atile || aaij) && (btile || baij));
  PetscFunctionReturn(PETSC_SUCCESS);
}

#if TILE_DEVICE_AIJ
/* Products left to SeqAIJ with device-base tile matrices: SeqAIJ's kernels
 * read and write the host arrays directly, so each phase brings the
 * operands' host copies up to date first and marks C's host copy as the
 * current one after. */
static PetscErrorCode TileFallbackSyncOperands(Mat C)
{
  Mat_Product *product = C->product;

  PetscFunctionBegin;
  for (int k = 0; k < 3; k++) {
    Mat                X = k == 0 ? product->A : k == 1 ? product->B : product->C;
    Mat_SeqTile       *x;
    PetscBool          iscusp;
    const PetscScalar *v;
    if (!X) continue;
    PetscCall(TileGetData(X, &x));
    PetscCall(PetscObjectTypeCompare((PetscObject)X, MATSEQAIJCUSPARSE, &iscusp));
    if (!(x && x->device_aij) && !iscusp) continue;
    PetscCall(MatSeqAIJGetArrayRead(X, &v));
    PetscCall(MatSeqAIJRestoreArrayRead(X, &v));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Runs SeqAIJ's phase recorded on C under name between the syncs. */
static PetscErrorCode TileFallbackRun(Mat C, const char *name)
{
  PetscErrorCode (*f)(Mat) = NULL;

  PetscFunctionBegin;
  PetscCall(PetscObjectQueryFunction((PetscObject)C, name, &f));
  PetscCheck(f, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "SeqAIJ's product phase %s not recorded", name);
  PetscCall(TileFallbackSyncOperands(C));
  PetscCall((*f)(C));
  PetscCall(TileHostValuesWritten(C));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileFallbackNumeric(Mat C)
{
  PetscFunctionBegin;
  PetscCall(TileFallbackRun(C, "TileRAP_FallbackNumeric_C"));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileFallbackSymbolic(Mat C)
{
  PetscFunctionBegin;
  PetscCall(TileFallbackRun(C, "TileRAP_FallbackSymbolic_C"));
  PetscCall(TileWrapProductPhase(C, &C->ops->productnumeric, TileFallbackNumeric, "TileRAP_FallbackNumeric_C"));
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif

/* Reached through A's productsetfromoptions (A, B both seqtile) or the
 * composed MatProductSetFromOptions_seqaijtile_seqaij_C /
 * _seqaij_seqaijtile_C (one of them plain seqaij). */
PetscErrorCode MatProductSetFromOptions_SeqTile(Mat C)
{
  static const char *const algs[] = {MATPRODUCTALGORITHMDEFAULT, "tile", NULL};
  Mat_Product             *product = C->product;
  Mat                      A, B;
  PetscBool                algok, fits;

  PetscFunctionBegin;
  PetscCall(TileProductCandidate(C, TileIsSeqTile, TileIsPlainSeqAIJ, algs, &algok, &fits));
  A = product->A;
  B = product->B;
  if (algok) {
    PetscBool other;
    PetscCall(TileOtherAlgorithmRequested(C, &other));
    algok = (PetscBool)!other;
  }
  if (TileAIJProductsActive()) fits = PETSC_FALSE; /* inside an MPI product run the MPIAIJ way */
  if (algok && fits) {
    PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s by the tile engine\n", MatProductTypes[product->type], ((PetscObject)A)->type_name, ((PetscObject)B)->type_name));
    C->ops->productsymbolic = MatProductSymbolic_SeqTile;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  if (product->type == MATPRODUCT_ABt) {
    /* SeqAIJ's A*B^T retypes B's symbolic transpose to A's type: with a
     * plain A and a seqtile B it crashed (PETSc 3.18, a fuzzing pass) */
    PetscBool aplain, btile;
    PetscCall(TileIsPlainSeqAIJ(A, &aplain));
    PetscCall(TileIsSeqTile(B, &btile));
    PetscCheck(!(aplain && btile), PetscObjectComm((PetscObject)C), PETSC_ERR_SUP,
               "tilerap: A*B^T with a plain %s A and a %s B is not supported: convert B to %s (MatConvert) or A to %s",
               ((PetscObject)A)->type_name, ((PetscObject)B)->type_name, ((PetscObject)A)->type_name,
               ((PetscObject)B)->type_name);
  }
  tile_product_fallbacks++;
  PetscCall(PetscInfo(C, "tilerap: %s with A %s, B %s (algorithm %s) falls back to the AIJ implementation\n", MatProductTypes[product->type], ((PetscObject)A)->type_name,
                      ((PetscObject)B)->type_name, product->alg ? product->alg : "none"));
  {
    Mat_SeqTile *t;
    PetscCall(TileGetData(A, &t));
    if (!t) PetscCall(TileGetData(B, &t));
    if (!t && product->C) PetscCall(TileGetData(product->C, &t)); /* ABC: the tile operand may be the third */
    PetscCheck(t && tile_base_ops[t->device_aij].fallback, PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "base product implementation not captured");
    PetscCall(tile_base_ops[t->device_aij].fallback(C));
#if TILE_DEVICE_AIJ
    /* SeqAIJ's phases, wrapped to keep host and device copies right */
    PetscCall(TileWrapProductPhase(C, &C->ops->productsymbolic, TileFallbackSymbolic, "TileRAP_FallbackSymbolic_C"));
#endif
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}
