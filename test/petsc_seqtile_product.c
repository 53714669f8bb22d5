/* MatPtAP / MatMatMult with MATSEQTILE against SEQAIJ: random matrices of
 * odd sizes, P with block size 3, every mix of seqtile and seqaij operands,
 * reuse after changing values (numeric phase only), re-planning after a
 * change of nonzero pattern, chained levels, AIJ fallbacks for the product
 * types the tile engine does not do, and errors for bad input. */
#include "tilerap_petsc.h"
#include "petsc_testutil.h"

#define TOL 1e-14

static PetscErrorCode check(Mat C, Mat Cref, const char *what)
{
  PetscBool same, istile;
  PetscReal err;

  PetscFunctionBeginUser;
  PetscCall(tu_compare(C, Cref, &same, &err));
  PetscCall(PetscObjectTypeCompare((PetscObject)C, MATSEQAIJTILE, &istile));
  tap_ok(same && err <= TOL && istile, "%s: same structure %d, rel. error %.2e, C is seqtile %d", what, (int)same, (double)err, (int)istile);
  PetscFunctionReturn(0);
}

/* tile copy of a product result equals its AIJ values (in sync) */
static PetscErrorCode check_tile_sync(Mat C, const char *what)
{
  const tilerap_tile_matrix *T;
  const PetscInt            *ci, *cj;
  PetscScalar               *ca;
  PetscMemType               mt;
  tilerap_csr               *X = NULL;
  PetscInt                   m, n;
  PetscBool                  ok = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(MatSeqTileGetTileMatrix(C, &T));
  PetscCall(MatGetSize(C, &m, &n));
  PetscCall(MatSeqAIJGetCSRAndMemType(C, &ci, &cj, &ca, &mt));
  if (tilerap_tile_check(T) == TILERAP_SUCCESS && !tilerap_tile_to_csr_alloc(T, &X) && X->nnz == ci[m]) {
    ok = PETSC_TRUE;
    for (PetscInt k = 0; k < ci[m]; k++)
      if (X->colidx[k] != cj[k] || X->val[k] != ca[k]) ok = PETSC_FALSE;
  }
  tilerap_csr_destroy(&X);
  tap_ok(ok, "%s: C's tile form is C's values", what);
  PetscFunctionReturn(0);
}

/* new random values on the existing pattern */
static PetscErrorCode new_values(Mat A, Mat Aaij, unsigned long long seed)
{
  PetscScalar *a, *b;
  PetscInt     nz, m;
  const PetscInt *ai, *aj;
  PetscMemType mt;
  unsigned long long s = seed;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(A, &m, NULL));
  PetscCall(MatSeqAIJGetCSRAndMemType(A, &ai, &aj, &a, &mt));
  nz = ai[m];
  PetscCall(MatSeqAIJGetArrayWrite(A, &a));
  PetscCall(MatSeqAIJGetArrayWrite(Aaij, &b));
  for (PetscInt k = 0; k < nz; k++) a[k] = b[k] = 2.0 * tu_rand(&s) - 1.0;
  PetscCall(MatSeqAIJRestoreArrayWrite(A, &a));
  PetscCall(MatSeqAIJRestoreArrayWrite(Aaij, &b));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm comm;
  PetscInt sizes[][2] = {{111, 39}, {333, 111}, {45, 15}};

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  comm = PETSC_COMM_SELF;
  PetscCall(PetscLogDefaultBegin());
  PetscCall(TileRAPInitializePackage());

  for (int s = 0; s < 3; s++) {
    PetscInt n = sizes[s][0], nc = sizes[s][1];
    Mat      A, Aaij, P, Paij, C, Cref, C2, AB, ABref;
    char     what[128];
    PetscInt plans0 = 0, plans1 = 0, num0 = 0, num1 = 0;

    tap_diag("n = %d, nc = %d, P block size 3", (int)n, (int)nc);
    PetscCall(tu_random_mat(comm, MATSEQTILE, n, n, 7, PETSC_TRUE, 1, 1, 100 + s, &A));
    PetscCall(tu_random_mat(comm, MATSEQAIJ, n, n, 7, PETSC_TRUE, 1, 1, 100 + s, &Aaij));
    PetscCall(tu_random_mat(comm, MATSEQTILE, n, nc, 2, PETSC_FALSE, 3, 3, 200 + s, &P));
    PetscCall(tu_random_mat(comm, MATSEQAIJ, n, nc, 2, PETSC_FALSE, 3, 3, 200 + s, &Paij));

    /* PtAP, all mixes */
    PetscCall(MatPtAP(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(MatPtAP(A, P, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(PetscSNPrintf(what, sizeof what, "PtAP seqtile*seqtile %dx%d", (int)n, (int)nc));
    PetscCall(check(C, Cref, what));
    {
      PetscInt rbs, cbs;
      PetscCall(MatGetBlockSizes(C, &rbs, &cbs));
      tap_ok(rbs == 3 && cbs == 3, "PtAP C has P's column block size (%d,%d)", (int)rbs, (int)cbs);
    }
    PetscCall(check_tile_sync(C, "PtAP initial"));
    PetscCall(MatDestroy(&C));
    PetscCall(MatPtAP(A, Paij, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(check(C, Cref, "PtAP A seqtile, P seqaij"));
    PetscCall(MatDestroy(&C));
    PetscCall(MatPtAP(Aaij, P, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(check(C, Cref, "PtAP A seqaij, P seqtile"));
    PetscCall(MatDestroy(&C));

    /* reuse after new values of A and P: numeric phase only */
    PetscCall(MatPtAP(A, P, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(new_values(A, Aaij, 300 + s));
    PetscCall(new_values(P, Paij, 400 + s));
    PetscCall(tu_event_count("TileRAPPlan", &plans0));
    PetscCall(tu_event_count("TileRAPNumeric", &num0));
    PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, 2.0, &C));
    PetscCall(tu_event_count("TileRAPPlan", &plans1));
    PetscCall(tu_event_count("TileRAPNumeric", &num1));
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatPtAP(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(check(C, Cref, "PtAP MAT_REUSE_MATRIX after new values"));
    tap_ok(plans1 == plans0 && num1 == num0 + 1, "reuse ran the numeric phase only (plans +%d, numeric +%d)", (int)(plans1 - plans0), (int)(num1 - num0));
    {
      MatSeqTileSyncStats st;
      PetscCall(MatSeqTileGetSyncStats(A, &st));
      tap_ok(st.rebuilds == 1 && st.value_refreshes >= 1, "A's tile copy: values refreshed, never rebuilt (rebuilds %d, refreshes %d)", (int)st.rebuilds, (int)st.value_refreshes);
    }
    PetscCall(check_tile_sync(C, "PtAP reuse"));
    /* values changed between the symbolic and the numeric phase: the
     * values the CPU plan computed at symbolic time must not be used */
    {
      Mat D;
      PetscCall(MatProductCreate(A, P, NULL, &D));
      PetscCall(MatProductSetType(D, MATPRODUCT_PtAP));
      PetscCall(MatProductSetFromOptions(D));
      PetscCall(MatProductSymbolic(D));
      PetscCall(new_values(A, Aaij, 550 + s));
      PetscCall(MatProductNumeric(D));
      PetscCall(MatDestroy(&Cref));
      PetscCall(MatPtAP(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
      PetscCall(check(D, Cref, "PtAP with A's values changed between symbolic and numeric"));
      PetscCall(MatProductNumeric(D)); /* and once more, unchanged */
      PetscCall(check(D, Cref, "PtAP numeric again"));
      PetscCall(MatDestroy(&D));
    }
    /* C used as an operand between its symbolic and numeric phases: its
     * tile form then took C's AIJ zeros, so the values the plan made
     * (the device C's, CUDA engine) must not be what the numeric gives */
    {
      Mat D, E;
      PetscCall(MatProductCreate(A, P, NULL, &D));
      PetscCall(MatProductSetType(D, MATPRODUCT_PtAP));
      PetscCall(MatProductSetFromOptions(D));
      PetscCall(MatProductSymbolic(D));
      PetscCall(MatMatMult(D, D, MAT_INITIAL_MATRIX, 2.0, &E));
      PetscCall(MatProductNumeric(D));
      PetscCall(check(D, Cref, "PtAP numeric after C was an operand between symbolic and numeric"));
      PetscCall(MatDestroy(&E));
      PetscCall(MatDestroy(&D));
    }
    /* three more re-runs with new values: the CPU engine's default (AUTO)
     * kernel records the products on the second run and replays them
     * afterwards; every run must equal AIJ's */
    for (int round = 2; round <= 4; round++) {
      PetscCall(new_values(A, Aaij, 600 + 10 * s + round));
      PetscCall(new_values(P, Paij, 700 + 10 * s + round));
      PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, 2.0, &C));
      PetscCall(MatDestroy(&Cref));
      PetscCall(MatPtAP(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
      PetscCall(PetscSNPrintf(what, sizeof what, "PtAP MAT_REUSE_MATRIX run %d with new values", round));
      PetscCall(check(C, Cref, what));
    }

    /* next level from C without conversion: C2 = P2^T C P2 */
    {
      Mat                 P2, P2aij, C2ref, Crefc;
      MatSeqTileSyncStats st0, st1;
      PetscCall(tu_random_mat(comm, MATSEQTILE, nc, nc / 3 + 1, 2, PETSC_FALSE, 1, 1, 500 + s, &P2));
      PetscCall(tu_random_mat(comm, MATSEQAIJ, nc, nc / 3 + 1, 2, PETSC_FALSE, 1, 1, 500 + s, &P2aij));
      PetscCall(MatSeqTileGetSyncStats(C, &st0));
      PetscCall(MatPtAP(C, P2, MAT_INITIAL_MATRIX, 2.0, &C2));
      PetscCall(MatSeqTileGetSyncStats(C, &st1));
      PetscCall(MatConvert(C, MATSEQAIJ, MAT_INITIAL_MATRIX, &Crefc));
      PetscCall(MatPtAP(Crefc, P2aij, MAT_INITIAL_MATRIX, 2.0, &C2ref));
      {
        PetscBool same;
        PetscReal err;
        PetscCall(tu_compare(C2, C2ref, &same, &err));
        tap_ok(same && err <= TOL, "second level from the first level's C: rel. error %.2e", (double)err);
      }
      tap_ok(st1.rebuilds == st0.rebuilds && st1.value_refreshes == st0.value_refreshes, "the first level's C was used in tile form as it stood (no copy)");
      PetscCall(MatDestroy(&C2));
      PetscCall(MatDestroy(&C2ref));
      PetscCall(MatDestroy(&Crefc));
      PetscCall(MatDestroy(&P2));
      PetscCall(MatDestroy(&P2aij));
    }

    /* new nonzero in A, then reuse: must plan again and stay correct */
    PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetOption(Aaij, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetValue(A, 0, n - 1, 3.0, INSERT_VALUES));
    PetscCall(MatSetValue(Aaij, 0, n - 1, 3.0, INSERT_VALUES));
    PetscCall(MatSetValue(A, n - 1, 0, -3.0, INSERT_VALUES));
    PetscCall(MatSetValue(Aaij, n - 1, 0, -3.0, INSERT_VALUES));
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyBegin(Aaij, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(Aaij, MAT_FINAL_ASSEMBLY));
    PetscCall(tu_event_count("TileRAPPlan", &plans0));
    PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, 2.0, &C));
    PetscCall(tu_event_count("TileRAPPlan", &plans1));
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatPtAP(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(check(C, Cref, "PtAP MAT_REUSE_MATRIX after a new nonzero in A"));
    tap_ok(plans1 == plans0 + 1, "changed pattern: planned again (plans +%d)", (int)(plans1 - plans0));
    PetscCall(check_tile_sync(C, "PtAP re-planned"));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));

    /* AB, all mixes, and reuse */
    PetscCall(MatMatMult(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &ABref));
    PetscCall(MatMatMult(A, P, MAT_INITIAL_MATRIX, 2.0, &AB));
    PetscCall(check(AB, ABref, "AB seqtile*seqtile"));
    PetscCall(MatDestroy(&AB));
    PetscCall(MatMatMult(A, Paij, MAT_INITIAL_MATRIX, 2.0, &AB));
    PetscCall(check(AB, ABref, "AB seqtile*seqaij"));
    PetscCall(MatDestroy(&AB));
    PetscCall(MatMatMult(Aaij, P, MAT_INITIAL_MATRIX, 2.0, &AB));
    PetscCall(check(AB, ABref, "AB seqaij*seqtile"));
    PetscCall(new_values(Aaij, A, 600 + s));
    PetscCall(tu_event_count("TileRAPPlan", &plans0));
    PetscCall(MatMatMult(Aaij, P, MAT_REUSE_MATRIX, 2.0, &AB));
    PetscCall(tu_event_count("TileRAPPlan", &plans1));
    PetscCall(MatDestroy(&ABref));
    PetscCall(MatMatMult(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &ABref));
    PetscCall(check(AB, ABref, "AB MAT_REUSE_MATRIX after new values of a seqaij A"));
    tap_ok(plans1 == plans0, "AB reuse ran the numeric phase only");
    PetscCall(MatDestroy(&AB));
    PetscCall(MatDestroy(&ABref));

    /* AtB (MatTransposeMatMult): tile engine, every operand-type mix, reuse */
    {
      Mat X, Xref;
      PetscCall(MatTransposeMatMult(Paij, Aaij, MAT_INITIAL_MATRIX, 2.0, &Xref));
      PetscCall(MatTransposeMatMult(P, A, MAT_INITIAL_MATRIX, 2.0, &X));
      PetscCall(check(X, Xref, "AtB seqtile^T*seqtile"));
      PetscCall(check_tile_sync(X, "AtB seqtile^T*seqtile"));
      PetscCall(MatDestroy(&X));
      PetscCall(MatTransposeMatMult(P, Aaij, MAT_INITIAL_MATRIX, 2.0, &X));
      PetscCall(check(X, Xref, "AtB seqtile^T*seqaij"));
      PetscCall(MatDestroy(&X));
      PetscCall(MatTransposeMatMult(Paij, A, MAT_INITIAL_MATRIX, 2.0, &X));
      PetscCall(check(X, Xref, "AtB seqaij^T*seqtile"));
      PetscCall(new_values(A, Aaij, 700 + s));
      PetscCall(tu_event_count("TileRAPPlan", &plans0));
      PetscCall(MatTransposeMatMult(Paij, A, MAT_REUSE_MATRIX, 2.0, &X));
      PetscCall(tu_event_count("TileRAPPlan", &plans1));
      PetscCall(MatDestroy(&Xref));
      PetscCall(MatTransposeMatMult(Paij, Aaij, MAT_INITIAL_MATRIX, 2.0, &Xref));
      PetscCall(check(X, Xref, "AtB MAT_REUSE_MATRIX after new values"));
      tap_ok(plans1 == plans0, "AtB reuse ran the numeric phase only");
      PetscCall(MatDestroy(&X));
      PetscCall(MatDestroy(&Xref));
    }
    /* product types the tile engine does not do: AIJ implementation */
    {
      Mat X, Xref;
      PetscCall(MatMatTransposeMult(A, A, MAT_INITIAL_MATRIX, 2.0, &X));
      PetscCall(MatMatTransposeMult(Aaij, Aaij, MAT_INITIAL_MATRIX, 2.0, &Xref));
      {
        PetscBool same;
        PetscReal err;
        PetscCall(tu_compare(X, Xref, &same, &err));
        tap_ok(same && err <= TOL, "ABt falls back to AIJ: rel. error %.2e", (double)err);
      }
      PetscCall(MatDestroy(&X));
      PetscCall(MatDestroy(&Xref));
    }
    /* dense B: SeqAIJ's dense products, reached under the seqaijtile name */
    {
      Mat       Bd, X, Xref;
      PetscReal nrm, nref;
      PetscCall(MatCreateSeqDense(comm, n, 5, NULL, &Bd));
      PetscCall(MatSetRandom(Bd, NULL));
      PetscCall(MatMatMult(A, Bd, MAT_INITIAL_MATRIX, 2.0, &X));
      PetscCall(MatMatMult(Aaij, Bd, MAT_INITIAL_MATRIX, 2.0, &Xref));
      PetscCall(MatNorm(Xref, NORM_FROBENIUS, &nref));
      PetscCall(MatAXPY(X, -1.0, Xref, SAME_NONZERO_PATTERN));
      PetscCall(MatNorm(X, NORM_FROBENIUS, &nrm));
      tap_ok(nref > 0 && nrm <= TOL * nref, "AB with a dense B (AIJ implementation): rel. error %.2e", (double)(nrm / nref));
      PetscCall(MatDestroy(&X));
      PetscCall(MatDestroy(&Xref));
      PetscCall(MatDestroy(&Bd));
    }
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&Aaij));
    PetscCall(MatDestroy(&P));
    PetscCall(MatDestroy(&Paij));
  }

  /* symbolic phase only, then MatProductClear (current PETSc's aggressive
   * coarsening): C's host CSR must be complete and C usable on its own */
  {
    Mat         A, Aaij, P, Paij, C, Cref;
    const char *names[] = {"PtAP", "AB"};
    for (int k = 0; k < 2; k++) {
      MatProductType type = k == 0 ? MATPRODUCT_PtAP : MATPRODUCT_AB;
      PetscBool      same, istile, zero = PETSC_TRUE;
      PetscReal      err, nrm;
      PetscInt       nc = 0;
      PetscCall(tu_random_mat(comm, MATSEQTILE, 97, 97, 5, PETSC_TRUE, 1, 1, 31, &A));
      PetscCall(tu_random_mat(comm, MATSEQAIJ, 97, 97, 5, PETSC_TRUE, 1, 1, 31, &Aaij));
      PetscCall(tu_random_mat(comm, MATSEQTILE, 97, 33, 2, PETSC_FALSE, 1, 1, 32, &P));
      PetscCall(tu_random_mat(comm, MATSEQAIJ, 97, 33, 2, PETSC_FALSE, 1, 1, 32, &Paij));
      PetscCall(MatProductCreate(A, P, NULL, &C));
      PetscCall(MatProductSetType(C, type));
      PetscCall(MatProductSetFromOptions(C));
      PetscCall(MatProductSymbolic(C));
      PetscCall(MatProductClear(C));
      if (type == MATPRODUCT_PtAP) PetscCall(MatPtAP(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
      else PetscCall(MatMatMult(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
      PetscCall(tu_compare(C, Cref, &same, &err));
      PetscCall(PetscObjectTypeCompare((PetscObject)C, MATSEQAIJTILE, &istile));
      PetscCall(MatNorm(C, NORM_FROBENIUS, &nrm));
      {
        const tilerap_tile_matrix *T;
        PetscCall(MatSeqTileGetTileMatrix(C, &T));
        for (int64_t q = 0; q < T->nnz; q++)
          if (T->val[q] != 0.0) zero = PETSC_FALSE;
        nc = (PetscInt)T->nnz;
      }
      tap_ok(same && istile && nrm == 0.0 && zero && nc > 0, "%s symbolic only + MatProductClear: C is seqtile with SEQAIJ's structure, values zero in CSR and tile form", names[k]);
      PetscCall(MatDestroy(&C));
      PetscCall(MatDestroy(&Cref));
      /* MatProductNumeric repeated through the MatProduct API: numeric only */
      {
        PetscInt p0 = 0, p1 = 0;
        PetscCall(MatProductCreate(A, P, NULL, &C));
        PetscCall(MatProductSetType(C, type));
        PetscCall(MatProductSetFill(C, PETSC_DEFAULT));
        PetscCall(MatProductSetFromOptions(C));
        PetscCall(MatProductSymbolic(C));
        PetscCall(MatProductNumeric(C));
        PetscCall(new_values(A, Aaij, 33));
        PetscCall(tu_event_count("TileRAPPlan", &p0));
        PetscCall(MatProductNumeric(C));
        PetscCall(MatProductNumeric(C));
        PetscCall(tu_event_count("TileRAPPlan", &p1));
        if (type == MATPRODUCT_PtAP) PetscCall(MatPtAP(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
        else PetscCall(MatMatMult(Aaij, Paij, MAT_INITIAL_MATRIX, 2.0, &Cref));
        PetscCall(tu_compare(C, Cref, &same, &err));
        tap_ok(same && err <= TOL && p1 == p0, "%s through MatProductCreate/Symbolic/Numeric, numeric repeated after new values: rel. error %.2e, plans +%d", names[k], (double)err, (int)(p1 - p0));
        PetscCall(MatDestroy(&C));
        PetscCall(MatDestroy(&Cref));
      }
      PetscCall(MatDestroy(&A));
      PetscCall(MatDestroy(&Aaij));
      PetscCall(MatDestroy(&P));
      PetscCall(MatDestroy(&Paij));
    }
  }

  /* bad input */
  {
    Mat            A, P, C = NULL, B;
    PetscErrorCode ierr;
    PetscCall(tu_random_mat(comm, MATSEQTILE, 21, 27, 3, PETSC_FALSE, 1, 1, 7, &A)); /* not square */
    PetscCall(tu_random_mat(comm, MATSEQTILE, 27, 9, 2, PETSC_FALSE, 1, 1, 8, &P));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatPtAP(A, P, MAT_INITIAL_MATRIX, 2.0, &C);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_ARG_SIZ, "PtAP with a non-square A: PETSC_ERR_ARG_SIZ (%d)", (int)ierr);
    PetscCall(MatDestroy(&C));
    PetscCall(tu_random_mat(comm, MATSEQTILE, 20, 9, 2, PETSC_FALSE, 1, 1, 9, &B)); /* 27 cols vs 20 rows */
    C = NULL;
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatMatMult(A, B, MAT_INITIAL_MATRIX, 2.0, &C);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_ARG_SIZ, "AB with incompatible sizes: PETSC_ERR_ARG_SIZ (%d)", (int)ierr);
    PetscCall(MatDestroy(&C));
    C = NULL;
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatPtAP(A, B, MAT_INITIAL_MATRIX, 2.0, &C);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_ARG_SIZ, "PtAP with incompatible sizes: PETSC_ERR_ARG_SIZ (%d)", (int)ierr);
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&P));
    PetscCall(MatDestroy(&B));
  }
  {
    int rc = tap_done();
    PetscCall(PetscFinalize());
    return rc;
  }
}
