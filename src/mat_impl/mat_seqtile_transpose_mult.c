/* MatMultTranspose and MatMultTransposeAdd of a seqtile on AIJCUSPARSE
 * (a PETSc built with CUDA), as GAMG's restriction P^T r: tilerap's
 * device transposed view of the matrix, made once for its structure and
 * kept with the tile data (tilerap_csr_device_transpose_*), the matrix's
 * current device values read through it, CUDA vectors.  AIJCUSPARSE's own
 * forms an explicit transpose through cuSPARSE's csr2csc, whose first use
 * in a process took 21-32 ms of a small GAMG setup (BENCHMARKS.md 2b).
 * Other vectors, or 64-bit indices, take the base's (a matrix bound to
 * the CPU has the base's host implementations in its ops). */
#include "mat_seqtile_impl.h"

#if TILE_DEVICE_AIJ
static PetscErrorCode TileCUDAVector(Vec v, PetscBool *ok)
{
  PetscFunctionBegin;
  if (v && *ok) PetscCall(PetscObjectTypeCompareAny((PetscObject)v, ok, VECSEQCUDA, VECMPICUDA, ""));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* A's transposed view for its current structure (kept while A's
 * nonzerostate and device structure arrays stay) */
static PetscErrorCode TileTransposeView(Mat A, Mat_SeqTile *t, const tilerap_csr_device_i32 *v, PetscBool again)
{
  PetscFunctionBegin;
  if (t->dT && (again || t->dT_state != A->nonzerostate)) tilerap_csr_device_transpose_destroy(&t->dT);
  if (!t->dT) {
    TileCall(PetscObjectComm((PetscObject)A), tilerap_csr_device_transpose_create_i32(v, &t->dT));
    t->dT_state = A->nonzerostate;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* y = A^T x (+ z; z may be y) on the device, or *done false */
static PetscErrorCode TileMultTranspose(Mat A, Vec x, Vec z, Vec y, PetscBool *done)
{
  Mat_SeqTile           *t;
  PetscBool              ok = PETSC_TRUE;
  TileAIJArrays          arr;
  tilerap_csr_device_i32 v;
  PetscInt               n;
  const PetscScalar     *xa, *za = NULL;
  PetscScalar           *ya;
  PetscErrorCode         ierr;
  int                    err;

  PetscFunctionBegin;
  *done = PETSC_FALSE;
  PetscCall(TileGetData(A, &t));
  PetscCall(TileCUDAVector(x, &ok));
  PetscCall(TileCUDAVector(y, &ok));
  PetscCall(TileCUDAVector(z, &ok));
  if (!t || !t->device_aij || A->boundtocpu || !ok || PetscDefined(USE_64BIT_INDICES)) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileDeviceOperand(A, &arr, &v));
  if (arr.mem != TILERAP_MEM_DEVICE) {
    PetscCall(TileAIJArraysEnd(A, &arr));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  n    = v.n;
  ierr = TileTransposeView(A, t, &v, PETSC_FALSE);
  if (!ierr) ierr = VecCUDAGetArrayRead(x, &xa);
  if (!ierr) {
    if (z == y) ierr = VecCUDAGetArray(y, &ya);
    else {
      if (z) ierr = VecCUDAGetArrayRead(z, &za);
      if (!ierr) ierr = VecCUDAGetArrayWrite(y, &ya);
    }
    if (!ierr) {
      if (z == y) za = ya;
      ierr = TileDeviceJoinPETSc(); /* PETSc's queued work on A, x and z done */
      err  = ierr ? TILERAP_SUCCESS : tilerap_csr_device_transpose_mult_i32(t->dT, &v, xa, za, ya);
      if (err == TILERAP_ERR_STRUCTURE) { /* AIJCUSPARSE moved A's structure to new arrays */
        ierr = TileTransposeView(A, t, &v, PETSC_TRUE);
        if (!ierr) err = tilerap_csr_device_transpose_mult_i32(t->dT, &v, xa, za, ya);
      }
      if (!ierr && err) ierr = TileCheckError_Private(PetscObjectComm((PetscObject)A), err, "tilerap_csr_device_transpose_mult_i32");
      if (!ierr) ierr = TileDeviceJoinTilerap(ya, n);
      {
        PetscErrorCode e2 = z == y ? VecCUDARestoreArray(y, &ya) : VecCUDARestoreArrayWrite(y, &ya);
        if (!ierr) ierr = e2;
      }
    }
    if (z && z != y) {
      PetscErrorCode e2 = VecCUDARestoreArrayRead(z, &za);
      if (!ierr) ierr = e2;
    }
    {
      PetscErrorCode e2 = VecCUDARestoreArrayRead(x, &xa);
      if (!ierr) ierr = e2;
    }
  }
  PetscCall(TileAIJArraysEnd(A, &arr));
  PetscCall(ierr);
  *done = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* P's transposed view made now (in a PtAP's setup, as AIJCUSPARSE forms
 * its explicit transpose there), so the solve's first restriction does
 * not make it */
PetscErrorCode TileTransposeViewFor(Mat P)
{
  Mat_SeqTile           *t;
  TileAIJArrays          arr;
  tilerap_csr_device_i32 v;
  PetscErrorCode         ierr;

  PetscFunctionBegin;
  PetscCall(TileGetData(P, &t));
  if (!t || !t->device_aij || P->boundtocpu || PetscDefined(USE_64BIT_INDICES)) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(TileDeviceOperand(P, &arr, &v));
  ierr = arr.mem == TILERAP_MEM_DEVICE ? TileDeviceJoinPETSc() : PETSC_SUCCESS;
  if (!ierr && arr.mem == TILERAP_MEM_DEVICE) ierr = TileTransposeView(P, t, &v, PETSC_FALSE);
  PetscCall(TileAIJArraysEnd(P, &arr));
  PetscCall(ierr);
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatMultTranspose_SeqTile(Mat A, Vec x, Vec y)
{
  PetscBool done;

  PetscFunctionBegin;
  PetscCall(TileMultTranspose(A, x, NULL, y, &done));
  if (!done) PetscCall(tile_base_ops[1].multtranspose(A, x, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatMultTransposeAdd_SeqTile(Mat A, Vec x, Vec z, Vec y)
{
  PetscBool done;

  PetscFunctionBegin;
  PetscCall(TileMultTranspose(A, x, z, y, &done));
  if (!done) PetscCall(tile_base_ops[1].multtransposeadd(A, x, z, y));
  PetscFunctionReturn(PETSC_SUCCESS);
}
#endif
