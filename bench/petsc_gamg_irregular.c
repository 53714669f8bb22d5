/* GAMG on the irregular set (tilerap_model_irregular: unordered meshes,
 * power-law and random graphs, a dense row, 3x3 blocks, a 125-point
 * stencil) through PETSc: the matrix assembled once as the type that
 * -mat_type names (aij, aijcusparse, seqtile), CG preconditioned by GAMG on
 * b = A*1, one setup and one solve.  PETSc's -log_view gives the events
 * (PCSetUp, MatCreateGraph, the products, KSPSolve) and
 * -ksp_converged_reason the iterations; bench/petsc_gamg.sh runs it for
 * its irregular cases, both types alternating.
 *
 *   petsc-gamg-irregular -spec mesh3d:150000 -mat_type seqtile [-vec_type cuda] -log_view
 */
#include <petscksp.h>
#include "tilerap_model.h"
#include "tilerap_petsc.h"

int main(int argc, char **argv)
{
  char         spec[128] = "mesh3d:20000";
  tilerap_csr *G         = NULL;
  Mat          A;
  Vec          x, b;
  KSP          ksp;
  PC           pc;
  PetscInt    *nnz, bs = 1;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(TileRAPInitializePackage());
  PetscCall(PetscOptionsGetString(NULL, NULL, "-spec", spec, sizeof spec, NULL));
  PetscCheck(tilerap_model_irregular(spec, 1, &G) == 0, PETSC_COMM_SELF, PETSC_ERR_ARG_WRONG, "irregular matrix %s: %s", spec, tilerap_last_error());
  if (!strncmp(spec, "elast", 5)) bs = 3; /* 3 dofs a node */

  PetscCall(MatCreate(PETSC_COMM_SELF, &A));
  PetscCall(MatSetSizes(A, G->m, G->n, G->m, G->n));
  PetscCall(MatSetBlockSize(A, bs));
  PetscCall(MatSetType(A, MATAIJ));
  PetscCall(MatSetFromOptions(A));
  PetscCall(PetscMalloc1(G->m, &nnz));
  for (int32_t i = 0; i < G->m; i++) nnz[i] = (PetscInt)(G->rowptr[i + 1] - G->rowptr[i]);
  PetscCall(MatSeqAIJSetPreallocation(A, 0, nnz));
  for (int32_t i = 0; i < G->m; i++) {
    PetscInt       row = i, *cols;
    const int64_t  k0  = G->rowptr[i];
    const PetscInt n   = nnz[i];
    PetscCall(PetscMalloc1(n + 1, &cols));
    for (PetscInt k = 0; k < n; k++) cols[k] = G->colidx[k0 + k];
    PetscCall(MatSetValues(A, 1, &row, n, cols, G->val + k0, INSERT_VALUES));
    PetscCall(PetscFree(cols));
  }
  PetscCall(PetscFree(nnz));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatSetOption(A, MAT_SPD, PETSC_TRUE));
  tilerap_csr_destroy(&G);

  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSet(x, 1.0));
  PetscCall(MatMult(A, x, b));
  PetscCall(VecZeroEntries(x));
  PetscCall(KSPCreate(PETSC_COMM_SELF, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCGAMG));
  PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 500));
  PetscCall(KSPSetFromOptions(ksp));
  PetscCall(KSPSetUp(ksp));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscCall(PetscFinalize());
  return 0;
}
