/* MatCreateGraph of a seqtile: the strength graph GAMG coarsens, made by
 * the engine from the AIJ arrays (on the device with the CUDA engine and
 * an AIJCUSPARSE base) instead of AIJ's duplicate, transpose, add with a
 * new preallocation and vector scaling.  The graph is AIJ's bit for bit
 * (tilerap_csr_graph_i32 follows its order of operations), so GAMG makes
 * the same aggregates.  The graph comes back as a seqtile with its host
 * copy current: GAMG's coarsening reads it on the host.  PETSc 3.18
 * (Debian's): unfiltered graphs only, the filter there being its own. */
#include "mat_seqtile_impl.h"

#if TILE_GRAPH
/* The engine applies: real double, 32-bit indices, no strength index
 * (PETSc's block-entry selection), a square matrix whose blocks divide
 * it, and something to do (else AIJ returns A itself). */
static PetscErrorCode TileGraphApplies(Mat A, PetscBool sym, PetscBool scale, PetscReal filter, PetscInt index_size, PetscBool *ok)
{
  PetscInt bs, m, n;

  PetscFunctionBegin;
  PetscCall(MatGetBlockSize(A, &bs));
  PetscCall(MatGetSize(A, &m, &n));
  *ok = (PetscBool)(TILE_SCALAR_OK && !PetscDefined(USE_64BIT_INDICES) && index_size == 0 && m == n && m > 0 && bs >= 1 && bs <= 64 && m % bs == 0 && (sym || scale || filter >= 0 || bs > 1));
  #if !TILE_GRAPH_INDEX
  if (filter >= 0) *ok = PETSC_FALSE; /* 3.18 filters in its own way */
  #endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

  #if TILE_GRAPH_INDEX
PetscErrorCode MatCreateGraph_SeqTile(Mat A, PetscBool sym, PetscBool scale, PetscReal filter, PetscInt index_size, PetscInt index[], Mat *graph)
{
  #else
PetscErrorCode MatCreateGraph_SeqTile(Mat A, PetscBool sym, PetscBool scale, PetscReal filter, Mat *graph)
{
  const PetscInt index_size = 0;
  #endif
  MPI_Comm       comm = PetscObjectComm((PetscObject)A);
  Mat_SeqTile   *t;
  PetscBool      ok = PETSC_FALSE, isset = PETSC_FALSE, issym = PETSC_FALSE;
  PetscInt       bs, m, *cols;
  TileAIJArrays  arr;
  unsigned       flags = 0;
  int64_t        gnnz  = 0, *rp64 = NULL;
  int32_t       *grp = NULL, *gcol = NULL;
  double        *gval = NULL;
  tilerap_csr   *G    = NULL;
  tilerap_memtype gmem;
  Mat            Gmat;

  PetscFunctionBegin;
  PetscCall(TileGetData(A, &t));
  PetscCheck(t, comm, PETSC_ERR_PLIB, "not a tile matrix");
  PetscCall(TileGraphApplies(A, sym, scale, filter, index_size, &ok));
  if (!ok) {
    PetscCheck(tile_base_ops[t->device_aij ? 1 : 0].creategraph, comm, PETSC_ERR_SUP, "no MatCreateGraph for %s", ((PetscObject)A)->type_name);
  #if TILE_GRAPH_INDEX
    PetscCall(tile_base_ops[t->device_aij ? 1 : 0].creategraph(A, sym, scale, filter, index_size, index, graph));
  #else
    PetscCall(tile_base_ops[t->device_aij ? 1 : 0].creategraph(A, sym, scale, filter, graph));
  #endif
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscLogEventBegin(TILE_Graph, A, 0, 0, 0));
  PetscCall(MatGetBlockSize(A, &bs));
  PetscCall(MatGetSize(A, &m, NULL));
  if (sym) PetscCall(MatIsSymmetricKnown(A, &isset, &issym));
  if (bs > 1 || scale || filter >= 0) flags |= TILERAP_GRAPH_ABS;
  if (sym && !(isset && issym)) flags |= TILERAP_GRAPH_SYMMETRIZE;
  if (scale) flags |= TILERAP_GRAPH_SCALE;

  /* the graph's CSR, on the device where A's arrays are and the engine is CUDA */
  PetscCall(TileAIJArraysBegin(A, (PetscBool)(tilerap_engine_resolve(t->opt.engine) == TILERAP_ENGINE_CUDA), &arr));
  {
    int terr;
    if (arr.mem == TILERAP_MEM_DEVICE) {
  #if TILE_DEVICE_AIJ
      PetscCall(TileDeviceJoinPETSc());
  #endif
      terr = tilerap_csr_graph_device_i32((int32_t)m, (int32_t)bs, (const int32_t *)arr.ai, (const int32_t *)arr.aj, arr.aa, flags, &grp, &gcol, &gval, &gnnz);
      gmem = TILERAP_MEM_DEVICE;
    } else {
      terr = tilerap_csr_graph_i32((int32_t)m, (int32_t)bs, (const int32_t *)arr.ai, (const int32_t *)arr.aj, arr.aa, flags, &G);
      gmem = TILERAP_MEM_HOST;
    }
    PetscCall(TileAIJArraysEnd(A, &arr)); /* A's arrays given back whatever the engine said */
    TileCall(comm, terr);
  }
  const double  *vals  = gmem == TILERAP_MEM_HOST ? G->val : gval;
  const int32_t *gcols = gmem == TILERAP_MEM_HOST ? G->colidx : gcol;
  if (gmem == TILERAP_MEM_HOST) gnnz = G->nnz;

  /* a seqtile of A's type (same base) with the graph as its host CSR */
  const int32_t mb = (int32_t)(m / bs);
  PetscCall(MatCreate(comm, &Gmat));
  PetscCall(MatSetSizes(Gmat, mb, mb, mb, mb));
  PetscCall(MatSetBlockSizes(Gmat, 1, 1));
  PetscCall(MatSetType(Gmat, ((PetscObject)A)->type_name));
  {
    Mat_SeqTile *g;
    PetscCall(TileGetData(Gmat, &g));
    PetscCheck(g, comm, PETSC_ERR_PLIB, "graph of type %s is not a tile matrix", ((PetscObject)A)->type_name);
    g->opt = t->opt; /* A's options, as AIJ's MatDuplicate of A would carry them */
  }
  if (G) rp64 = G->rowptr;
  else {
    int32_t *rp32;
    PetscCall(PetscMalloc1(mb + 1, &rp64));
    PetscCall(PetscMalloc1(mb + 1, &rp32));
    TileCall(comm, tilerap_memcpy(rp32, TILERAP_MEM_HOST, grp, TILERAP_MEM_DEVICE, ((size_t)mb + 1) * sizeof(int32_t)));
    for (int32_t i = 0; i <= mb; i++) rp64[i] = rp32[i];
    PetscCall(PetscFree(rp32));
  }
  PetscCall(TileStructureBegin(Gmat, mb, rp64, &cols));
  if (gnnz > 0) TileCall(comm, tilerap_memcpy(cols, TILERAP_MEM_HOST, gcols, gmem, (size_t)gnnz * sizeof(int32_t)));
  PetscCall(TileStructureEnd(Gmat, cols, gnnz, vals, gmem, PETSC_TRUE));
  PetscCall(MatSetOption(Gmat, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE)); /* as AIJ's duplicate */
  if (!G) PetscCall(PetscFree(rp64));
  tilerap_csr_destroy(&G);
  tilerap_device_free(grp);
  tilerap_device_free(gcol);
  tilerap_device_free(gval);
  PetscCall(PetscLogEventEnd(TILE_Graph, A, 0, 0, 0));

  /* what AIJ's MatCreateGraph does after the values */
  if (sym) PetscCall(MatSetOption(Gmat, MAT_SYMMETRIC, PETSC_TRUE));
  else PetscCall(MatPropagateSymmetryOptions(A, Gmat));
  PetscCall(MatViewFromOptions(Gmat, NULL, "-mat_graph_view"));
  #if TILE_GRAPH_INDEX
  if (filter >= 0) {
    PetscCall(MatFilter(Gmat, filter, PETSC_TRUE, PETSC_TRUE));
    PetscCall(MatViewFromOptions(Gmat, NULL, "-mat_filter_graph_view"));
  }
  #endif
  *graph = Gmat;
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif
