/* Registration of the tile matrix types with PETSc: type names, the root
 * name, log events, and the dynamic-library entry point that -dll_append
 * calls. */
#include "mat_seqtile_impl.h"

PetscLogEvent TILE_Plan, TILE_Numeric, TILE_Xfer, TILE_Convert, TILE_Struct, TILE_Graph;

static PetscBool tile_package_initialized = PETSC_FALSE;

static PetscErrorCode TileRAPFinalizePackage(void)
{
  PetscFunctionBegin;
  tile_package_initialized = PETSC_FALSE; /* PetscFinalize() dropped our registrations */
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileRAPInitializePackage(void)
{
  PetscFunctionBegin;
  if (tile_package_initialized) PetscFunctionReturn(PETSC_SUCCESS);
  tile_package_initialized = PETSC_TRUE;
  PetscCall(MatInitializePackage());
  PetscCall(MatRegister(MATSEQTILE, MatCreate_SeqTile));
  PetscCall(MatRegister(MATSEQAIJTILE, MatCreate_SeqTile)); /* the objects' own name: MatSetType(B, A's type) */
#if TILE_DEVICE_AIJ
  PetscCall(MatRegister(MATSEQAIJTILEHOST, MatCreate_SeqTileHost)); /* host-AIJ tile matrices of a CUDA build */
#endif
  PetscCall(MatRegister(MATMPITILE, MatCreate_MPITile));
  PetscCall(MatRegister(MATMPIAIJTILE, MatCreate_MPITile)); /* the objects' own name (GAMG, MatCreateSubMatrix, MatDuplicate) */
  PetscCall(MatRegisterRootName(MATTILE, MATSEQTILE, MATMPITILE));
  PetscCall(MatRegisterRootName(MATAIJTILE, MATSEQAIJTILE, MATMPIAIJTILE));
  PetscCall(PetscLogEventRegister("TileRAPPlan", MAT_CLASSID, &TILE_Plan));
  PetscCall(PetscLogEventRegister("TileRAPNumeric", MAT_CLASSID, &TILE_Numeric));
  PetscCall(PetscLogEventRegister("TileRAPXfer", MAT_CLASSID, &TILE_Xfer));
  PetscCall(PetscLogEventRegister("TileRAPConvert", MAT_CLASSID, &TILE_Convert));
  PetscCall(PetscLogEventRegister("TileRAPCStruct", MAT_CLASSID, &TILE_Struct)); /* C's AIJ structure from a plan */
  PetscCall(PetscLogEventRegister("TileRAPGraph", MAT_CLASSID, &TILE_Graph));   /* MatCreateGraph by the engine */
  PetscCall(PetscRegisterFinalize(TileRAPFinalizePackage));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode PetscDLLibraryRegister_tilerap(void)
{
  PetscFunctionBegin;
  PetscCall(TileRAPInitializePackage());
  PetscFunctionReturn(PETSC_SUCCESS);
}
