/* MatPtAP / MatMatMult with MATSEQTILE against SEQAIJ: random matrices of
 * odd sizes, P with block size 3, every mix of seqtile and seqaij operands,
 * reuse after changing values (numeric phase only), re-planning after a
 * change of nonzero pattern, chained levels, AIJ fallbacks for the product
 * types the tile engine does not do, and errors for bad input. */
#include "tilerap_petsc.h"
#include "petsc_testutil.h"

#define TOL 1e-14

/* the products take the tile plans (CUDA engine, or TILERAP_PATH=tiles),
 * else the CPU engine's CSR plan on the AIJ arrays, which makes no tile
 * copy of its operands */
static PetscBool tile_route;   /* products by the tile plans (CUDA engine or TILERAP_PATH=tiles) */
static PetscBool device_route; /* ... but seqtile operands on AIJCUSPARSE by the device CSR products */

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
  const PetscScalar         *ca;
  tilerap_csr               *X = NULL;
  PetscInt                   m, n;
  PetscBool                  ok = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(MatSeqTileGetTileMatrix(C, &T));
  PetscCall(MatGetSize(C, &m, &n));
  PetscCall(tu_host_csr(C, &ci, &cj, &ca));
  if (tilerap_tile_check(T) == TILERAP_SUCCESS && !tilerap_tile_to_csr_alloc(T, &X) && X->nnz == ci[m]) {
    ok = PETSC_TRUE;
    for (PetscInt k = 0; k < ci[m]; k++)
      if (X->colidx[k] != cj[k] || X->val[k] != ca[k]) ok = PETSC_FALSE;
  }
  PetscCall(tu_host_csr_end(C, &ci, &cj, &ca));
  tilerap_csr_destroy(&X);
  tap_ok(ok, "%s: C's tile form is C's values", what);
  PetscFunctionReturn(0);
}

/* new random values on the existing pattern */
static PetscErrorCode new_values(Mat A, Mat Aaij, unsigned long long seed)
{
  PetscScalar *a, *b;
  PetscInt     nz;
  MatInfo      info;
  unsigned long long s = seed;

  PetscFunctionBeginUser;
  PetscCall(MatGetInfo(A, MAT_LOCAL, &info));
  nz = (PetscInt)info.nz_used;
  PetscCall(MatSeqAIJGetArrayWrite(A, &a));
  PetscCall(MatSeqAIJGetArrayWrite(Aaij, &b));
  for (PetscInt k = 0; k < nz; k++) a[k] = b[k] = 2.0 * tu_rand(&s) - 1.0;
  PetscCall(MatSeqAIJRestoreArrayWrite(A, &a));
  PetscCall(MatSeqAIJRestoreArrayWrite(Aaij, &b));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------- regression checks of the
 * harness test/petsc_mat_tests.sh (PETSc's src/mat/tests with the tile types) */
#define RTOL 1e-12

/* X and Y (any types, same sizes) agree to RTOL in the Frobenius norm (through dense copies) */
static PetscErrorCode dense_relerr(Mat X, Mat Y, PetscReal *err)
{
  Mat       Xd, Yd;
  PetscReal nrm, nref;

  PetscFunctionBeginUser;
  PetscCall(MatConvert(X, MATSEQDENSE, MAT_INITIAL_MATRIX, &Xd));
  PetscCall(MatConvert(Y, MATSEQDENSE, MAT_INITIAL_MATRIX, &Yd));
  PetscCall(MatNorm(Yd, NORM_FROBENIUS, &nref));
  PetscCall(MatAXPY(Xd, -1.0, Yd, SAME_NONZERO_PATTERN));
  PetscCall(MatNorm(Xd, NORM_FROBENIUS, &nrm));
  *err = nref > 0 ? nrm / nref : nrm;
  PetscCall(MatDestroy(&Xd));
  PetscCall(MatDestroy(&Yd));
  PetscFunctionReturn(0);
}

/* C = op(X, Y) through the MatProduct API (symbolic, numeric twice); the
 * PETSc error code is returned in *ierr instead of aborting */
static PetscErrorCode product_or_error(Mat X, Mat Y, Mat Z, MatProductType type, Mat *C, PetscErrorCode *ierr)
{
  PetscFunctionBeginUser;
  *C = NULL;
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  *ierr = MatProductCreate(X, Y, Z, C);
  if (!*ierr) *ierr = MatProductSetType(*C, type);
  if (!*ierr) *ierr = MatProductSetFromOptions(*C);
  if (!*ierr) *ierr = MatProductSymbolic(*C);
  if (!*ierr) *ierr = MatProductNumeric(*C);
  if (!*ierr) *ierr = MatProductNumeric(*C);
  PetscCall(PetscPopErrorHandler());
  if (*ierr) PetscCall(MatDestroy(C));
  PetscFunctionReturn(0);
}

/* the product with tile operands must do what it does with SeqAIJ ones:
 * the same error, or the same values */
static PetscErrorCode same_as_aij(Mat X, Mat Y, Mat Z, Mat Xa, Mat Ya, Mat Za, MatProductType type, const char *what)
{
  Mat            C, Cref;
  PetscErrorCode e, eref;
  PetscReal      err = PETSC_MAX_REAL;

  PetscFunctionBeginUser;
  PetscCall(product_or_error(Xa, Ya, Za, type, &Cref, &eref));
  PetscCall(product_or_error(X, Y, Z, type, &C, &e));
  if (!e && !eref) PetscCall(dense_relerr(C, Cref, &err));
  tap_ok(e == eref && (e || err <= RTOL), "%s %s: error code %d (SeqAIJ: %d), rel. difference %.2e", MatProductTypes[type], what, (int)e, (int)eref, (double)(e || eref ? 0 : err));
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&Cref));
  PetscFunctionReturn(0);
}

static PetscInt plans_now(void)
{
  PetscInt p = -1;
  if (tu_event_count("TileRAPPlan", &p)) return -1;
  return p;
}

static PetscErrorCode regression_checks(MPI_Comm comm)
{
  const PetscInt n = 45, k = 5;
  Mat            A, Aa, B, Ba, P, Pa, R, Ra, Dk, Dkt, Dn;

  PetscFunctionBeginUser;
  PetscCall(tu_random_mat(comm, MATSEQTILE, n, n, 5, PETSC_TRUE, 1, 1, 901, &A));
  PetscCall(tu_random_mat(comm, MATSEQAIJ, n, n, 5, PETSC_TRUE, 1, 1, 901, &Aa));
  PetscCall(tu_random_mat(comm, MATSEQTILE, n, n, 5, PETSC_TRUE, 1, 1, 902, &B));
  PetscCall(tu_random_mat(comm, MATSEQAIJ, n, n, 5, PETSC_TRUE, 1, 1, 902, &Ba));
  PetscCall(tu_random_mat(comm, MATSEQTILE, n, 17, 2, PETSC_FALSE, 1, 1, 903, &P));
  PetscCall(tu_random_mat(comm, MATSEQAIJ, n, 17, 2, PETSC_FALSE, 1, 1, 903, &Pa));
  PetscCall(tu_random_mat(comm, MATSEQTILE, 17, n, 3, PETSC_FALSE, 1, 1, 904, &R));
  PetscCall(tu_random_mat(comm, MATSEQAIJ, 17, n, 3, PETSC_FALSE, 1, 1, 904, &Ra));
  PetscCall(MatCreateSeqDense(comm, n, k, NULL, &Dk));
  PetscCall(MatCreateSeqDense(comm, k, n, NULL, &Dkt));
  PetscCall(MatCreateSeqDense(comm, n, n, NULL, &Dn));
  {
    PetscRandom r;
    PetscCall(PetscRandomCreate(comm, &r));
    PetscCall(PetscRandomSetSeed(r, 905));
    PetscCall(PetscRandomSeed(r));
    PetscCall(MatSetRandom(Dk, r));
    PetscCall(MatSetRandom(Dkt, r));
    PetscCall(MatSetRandom(Dn, r));
    PetscCall(PetscRandomDestroy(&r));
  }

  /* dense operands (PETSc's ex109, ex258, ex93, ex70 with seqtile):
   * SeqAIJ's dense implementations, or SeqAIJ's error */
  tap_diag("products with dense operands: as SeqAIJ");
  {
    const MatProductType t[] = {MATPRODUCT_AB, MATPRODUCT_AtB, MATPRODUCT_ABt, MATPRODUCT_PtAP, MATPRODUCT_RARt};
    for (int i = 0; i < 5; i++) {
      Mat Y = t[i] == MATPRODUCT_ABt || t[i] == MATPRODUCT_RARt ? Dkt : Dk;
      PetscCall(same_as_aij(A, Y, NULL, Aa, Y, NULL, t[i], "seqtile x seqdense"));
      /* dense first operand: AtB, ABt, RARt fail for SeqAIJ too (PETSC_ERR_SUP),
       * leaving PETSc's intermediates behind, which -malloc_dump would report */
      if (t[i] == MATPRODUCT_AB || t[i] == MATPRODUCT_PtAP) PetscCall(same_as_aij(Dn, A, NULL, Dn, Aa, NULL, t[i], "seqdense x seqtile"));
    }
    PetscCall(same_as_aij(Dkt, A, NULL, Dkt, Aa, NULL, MATPRODUCT_AB, "seqdense(k x n) x seqtile"));
    PetscCall(same_as_aij(R, Dn, P, Ra, Dn, Pa, MATPRODUCT_ABC, "seqtile x seqdense x seqtile"));
  }
  /* ex258: a product of a matrix with itself, numeric again after
   * MatProductReplaceMats with another matrix of that pattern (PETSc's
   * condition for reusing the symbolic phase) */
  {
    const MatProductType t[] = {MATPRODUCT_AB, MATPRODUCT_AtB, MATPRODUCT_ABt, MATPRODUCT_PtAP};
    Mat                  As, Asa;
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &As));
    PetscCall(MatDuplicate(Aa, MAT_COPY_VALUES, &Asa));
    PetscCall(new_values(As, Asa, 930));
    for (int i = 0; i < 4; i++) {
      Mat       C, Cref;
      PetscReal err;
      PetscCall(MatProductCreate(A, A, NULL, &C));
      PetscCall(MatProductSetType(C, t[i]));
      PetscCall(MatProductSetFromOptions(C));
      PetscCall(MatProductSymbolic(C));
      PetscCall(MatProductReplaceMats(As, As, NULL, C));
      PetscCall(MatProductNumeric(C));
      /* the same calls on SeqAIJ operands */
      PetscCall(MatProductCreate(Aa, Aa, NULL, &Cref));
      PetscCall(MatProductSetType(Cref, t[i]));
      PetscCall(MatProductSetFromOptions(Cref));
      PetscCall(MatProductSymbolic(Cref));
      PetscCall(MatProductReplaceMats(Asa, Asa, NULL, Cref));
      PetscCall(MatProductNumeric(Cref));
      PetscCall(dense_relerr(C, Cref, &err));
      tap_ok(err <= RTOL, "%s of A with A, operands replaced by A' of A's pattern (MatProductReplaceMats): as SeqAIJ, rel. difference %.2e", MatProductTypes[t[i]], (double)err);
      { /* and that is the product of the new operands */
        Mat Cnew;
        PetscCall(MatProductCreate(Asa, Asa, NULL, &Cnew));
        PetscCall(MatProductSetType(Cnew, t[i]));
        PetscCall(MatProductSetFromOptions(Cnew));
        PetscCall(MatProductSymbolic(Cnew));
        PetscCall(MatProductNumeric(Cnew));
        PetscCall(dense_relerr(C, Cnew, &err));
        tap_ok(err <= RTOL, "%s after MatProductReplaceMats is the product of the new operands: rel. difference %.2e", MatProductTypes[t[i]], (double)err);
        PetscCall(MatDestroy(&Cnew));
      }
      PetscCall(MatDestroy(&C));
      PetscCall(MatDestroy(&Cref));
    }
    PetscCall(MatDestroy(&As));
    PetscCall(MatDestroy(&Asa));
  }

  /* PtAP with a MAIJ P (PCMG's DMDA interpolation for several
   * components, SNES ex19): SeqAIJ's AIJ x MAIJ implementation */
  tap_diag("PtAP with a MAIJ interpolation");
  {
    Mat       A2, A2a, P1, P2, C, Cref;
    PetscReal err;
    PetscCall(tu_random_mat(comm, MATSEQTILE, 2 * n, 2 * n, 6, PETSC_TRUE, 1, 1, 906, &A2));
    PetscCall(tu_random_mat(comm, MATSEQAIJ, 2 * n, 2 * n, 6, PETSC_TRUE, 1, 1, 906, &A2a));
    PetscCall(tu_random_mat(comm, MATSEQAIJ, n, 17, 2, PETSC_FALSE, 1, 1, 907, &P1));
    PetscCall(MatCreateMAIJ(P1, 2, &P2));
    PetscCall(MatPtAP(A2a, P2, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(MatPtAP(A2, P2, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(dense_relerr(C, Cref, &err));
    tap_ok(err <= RTOL, "PtAP seqtile A, seqmaij P (2 components): rel. difference %.2e", (double)err);
    PetscCall(new_values(A2, A2a, 908));
    PetscCall(MatPtAP(A2, P2, MAT_REUSE_MATRIX, 2.0, &C));
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatPtAP(A2a, P2, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(dense_relerr(C, Cref, &err));
    tap_ok(err <= RTOL, "PtAP seqtile A, seqmaij P, MAT_REUSE_MATRIX after new values: rel. difference %.2e", (double)err);
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
    PetscCall(same_as_aij(A2, P2, NULL, A2a, P2, NULL, MATPRODUCT_AB, "seqtile x seqmaij"));
    PetscCall(MatDestroy(&P2));
    PetscCall(MatDestroy(&P1));
    PetscCall(MatDestroy(&A2));
    PetscCall(MatDestroy(&A2a));
  }
  /* -mat_view ::ascii_info of a product's C says which path its plan took
   * and by what (the operands' entries per tile) */
  {
    Mat  A3, P3, C;
    char buf[4096] = "";
    PetscCall(tu_random_mat(comm, MATSEQTILE, 3 * n, 3 * n, 5, PETSC_TRUE, 1, 1, 911, &A3));
    PetscCall(tu_random_mat(comm, MATSEQTILE, 3 * n, n, 2, PETSC_FALSE, 1, 1, 912, &P3));
    PetscCall(MatPtAP(A3, P3, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(tu_view_info(C, "petsc_seqtile_product.view.out", buf, sizeof buf));
    tap_ok(strstr(buf, "tilerap path ") && strstr(buf, device_route ? "tilerap path device-csr" : tile_route ? "mean entries per tile" : "the CSR plan on the AIJ arrays"), "-mat_view ::ascii_info of a PtAP product names its path (%s)",
           strstr(buf, "tilerap path ") ? strstr(buf, "tilerap path ") : buf);
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&P3));
    PetscCall(MatDestroy(&A3));
  }

  /* Products made through the MatProduct API and left after their
   * symbolic phase (3.20+ GAMG squares its strength graph so, and reads
   * the structure alone): C's structure is SeqAIJ's, its values zero (on
   * the device route undefined until the numeric phase, as AIJCUSPARSE's
   * own symbolic phase leaves them: not zeroed on the host, 26 M entries
   * for GAMG's squared graph at 101^3); on
   * the CPU route the plan makes no values then (the numeric phase runs it:
   * "1 numeric phase(s), 0 first product(s)"), where MatMatMult's symbolic
   * phase makes them (the numeric phase copies them) */
  tap_diag("symbolic phase alone (MatProductCreate)");
  {
    const MatProductType t[3] = {MATPRODUCT_AB, MATPRODUCT_AtB, MATPRODUCT_PtAP};
    Mat                  A4, A4a, P4, P4a;
    PetscCall(tu_random_mat(comm, MATSEQTILE, 3 * n + 1, 3 * n + 1, 6, PETSC_TRUE, 1, 1, 921, &A4));
    PetscCall(tu_random_mat(comm, MATSEQAIJ, 3 * n + 1, 3 * n + 1, 6, PETSC_TRUE, 1, 1, 921, &A4a));
    PetscCall(tu_random_mat(comm, MATSEQTILE, 3 * n + 1, n, 2, PETSC_FALSE, 1, 1, 922, &P4));
    PetscCall(tu_random_mat(comm, MATSEQAIJ, 3 * n + 1, n, 2, PETSC_FALSE, 1, 1, 922, &P4a));
    for (int i = 0; i < 3; i++) {
      Mat                C, Cref;
      const PetscInt    *ci, *cj, *ri, *rj;
      const PetscScalar *cv;
      PetscInt           cm, rm;
      PetscBool          done, same, zero = PETSC_TRUE;
      PetscReal          err;
      char               buf[4096] = "";
      PetscCall(MatProductCreate(A4, t[i] == MATPRODUCT_PtAP ? P4 : A4, NULL, &C));
      PetscCall(MatProductSetType(C, t[i]));
      PetscCall(MatProductSetFromOptions(C));
      PetscCall(MatProductSymbolic(C));
      PetscCall(MatProductCreate(A4a, t[i] == MATPRODUCT_PtAP ? P4a : A4a, NULL, &Cref));
      PetscCall(MatProductSetType(Cref, t[i]));
      PetscCall(MatProductSetFromOptions(Cref));
      PetscCall(MatProductSymbolic(Cref));
      PetscCall(MatGetRowIJ(C, 0, PETSC_FALSE, PETSC_FALSE, &cm, &ci, &cj, &done));
      PetscCall(MatGetRowIJ(Cref, 0, PETSC_FALSE, PETSC_FALSE, &rm, &ri, &rj, &same));
      same = (PetscBool)(done && same && cm == rm);
      for (PetscInt r = 0; same && r <= cm; r++) same = (PetscBool)(ci[r] == ri[r]);
      for (PetscInt k = 0; same && k < ci[cm]; k++) same = (PetscBool)(cj[k] == rj[k]);
      PetscCall(MatSeqAIJGetArrayRead(C, &cv));
      for (PetscInt k = 0; same && k < ci[cm]; k++) zero = (PetscBool)(zero && cv[k] == 0.0);
      PetscCall(MatSeqAIJRestoreArrayRead(C, &cv));
      PetscCall(MatRestoreRowIJ(C, 0, PETSC_FALSE, PETSC_FALSE, &cm, &ci, &cj, &done));
      PetscCall(MatRestoreRowIJ(Cref, 0, PETSC_FALSE, PETSC_FALSE, &rm, &ri, &rj, &done));
      if (device_route) tap_ok(same, "%s, symbolic phase alone: SeqAIJ's structure (%s); values undefined until the numeric phase (device route)", MatProductTypes[t[i]], same ? "yes" : "no");
      else tap_ok(same && zero, "%s, symbolic phase alone: SeqAIJ's structure (%s), zero values (%s)", MatProductTypes[t[i]], same ? "yes" : "no", zero ? "yes" : "no");
      PetscCall(MatProductNumeric(C));
      PetscCall(MatProductNumeric(Cref));
      PetscCall(dense_relerr(C, Cref, &err));
      tap_ok(err <= RTOL, "%s, numeric phase after it: SeqAIJ's values, rel. difference %.2e", MatProductTypes[t[i]], (double)err);
      if (!tile_route) {
        PetscCall(tu_view_info(C, "petsc_seqtile_product.view.out", buf, sizeof buf));
        tap_ok(strstr(buf, "1 numeric phase(s), 0 first product(s)") != NULL, "%s: the numeric phase computed the values, the symbolic phase made none (%s)", MatProductTypes[t[i]],
               strstr(buf, "tilerap ") ? strstr(buf, "tilerap ") : buf);
      }
      PetscCall(MatDestroy(&C));
      PetscCall(MatDestroy(&Cref));
    }
    if (!tile_route) { /* MatMatMult's symbolic phase makes the values, its numeric phase takes them */
      Mat  C;
      char buf[4096] = "";
      PetscCall(MatMatMult(A4, A4, MAT_INITIAL_MATRIX, 2.0, &C));
      PetscCall(tu_view_info(C, "petsc_seqtile_product.view.out", buf, sizeof buf));
      tap_ok(strstr(buf, "0 numeric phase(s), 1 first product(s)") != NULL, "MatMatMult: the first product made by the symbolic phase's plan (%s)", strstr(buf, "tilerap ") ? strstr(buf, "tilerap ") : buf);
      PetscCall(MatDestroy(&C));
    }
    PetscCall(MatDestroy(&A4));
    PetscCall(MatDestroy(&A4a));
    PetscCall(MatDestroy(&P4));
    PetscCall(MatDestroy(&P4a));
  }

  /* R*A*P (MatMatMatMult, ex111): every mix of tile and AIJ operands;
   * a tile matrix in the middle recursed until the stack overflowed */
  tap_diag("MatMatMatMult R*A*P");
  for (int mix = 1; mix < 8; mix++) {
    Mat       X = mix & 1 ? R : Ra, Y = mix & 2 ? A : Aa, Z = mix & 4 ? P : Pa, C, Cref;
    PetscReal err;
    char      what[64];
    PetscCall(PetscSNPrintf(what, sizeof what, "R %s, A %s, P %s", mix & 1 ? "tile" : "aij", mix & 2 ? "tile" : "aij", mix & 4 ? "tile" : "aij"));
    PetscCall(same_as_aij(X, Y, Z, Ra, Aa, Pa, MATPRODUCT_ABC, what));
    PetscCall(MatMatMatMult(X, Y, Z, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(new_values(A, Aa, 910 + mix));
    PetscCall(MatMatMatMult(X, Y, Z, MAT_REUSE_MATRIX, 2.0, &C));
    PetscCall(MatMatMatMult(Ra, Aa, Pa, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(dense_relerr(C, Cref, &err));
    tap_ok(err <= RTOL, "MatMatMatMult %s, MAT_REUSE_MATRIX after new values of A: rel. difference %.2e", what, (double)err);
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
  }

  /* reuse with other operand objects: C = A*B, then MatMatMult(B, A,
   * MAT_REUSE_MATRIX, &C) (MatProductReplaceMats inside); A and B have
   * different patterns, so the plan must follow the new operands */
  tap_diag("reuse with other operands");
  {
    Mat       C, Cref, B3, B3a;
    PetscReal err;
    PetscInt  p0, p1;
    PetscBool same;
    PetscCall(MatMatMult(A, B, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(MatMatMult(B, A, MAT_REUSE_MATRIX, 2.0, &C));
    PetscCall(MatMatMult(Ba, Aa, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(tu_compare(C, Cref, &same, &err));
    tap_ok(same && err <= RTOL, "C = A*B, then MatMatMult(B, A, MAT_REUSE_MATRIX, C): same structure %d, rel. difference %.2e", (int)same, (double)err);
    /* an operand of the same pattern with other values: no new plan */
    PetscCall(MatDuplicate(B, MAT_COPY_VALUES, &B3));
    PetscCall(MatDuplicate(Ba, MAT_COPY_VALUES, &B3a));
    PetscCall(new_values(B3, B3a, 920));
    p0 = plans_now();
    PetscCall(MatMatMult(B3, A, MAT_REUSE_MATRIX, 2.0, &C));
    p1 = plans_now();
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatMatMult(B3a, Aa, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(tu_compare(C, Cref, &same, &err));
    tap_ok(same && err <= RTOL && p1 >= p0, "MatMatMult(B', A, MAT_REUSE_MATRIX, C), B' another object of B's pattern: rel. difference %.2e (plans +%d)", (double)err, (int)(p1 - p0));
    /* the operand's pattern changes under the product: planned again */
    PetscCall(MatSetOption(B3, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetOption(B3a, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    PetscCall(MatSetValue(B3, 0, n - 1, 2.5, INSERT_VALUES));
    PetscCall(MatSetValue(B3a, 0, n - 1, 2.5, INSERT_VALUES));
    PetscCall(MatAssemblyBegin(B3, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(B3, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyBegin(B3a, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(B3a, MAT_FINAL_ASSEMBLY));
    p0 = plans_now();
    PetscCall(MatProductNumeric(C));
    p1 = plans_now();
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatMatMult(B3a, Aa, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(tu_compare(C, Cref, &same, &err));
    tap_ok(same && err <= RTOL && p1 == p0 + 1, "numeric after a new nonzero in the operand: re-planned (plans +%d), same structure %d, rel. difference %.2e", (int)(p1 - p0), (int)same, (double)err);
    /* replaced by an operand of another pattern, through MatProductReplaceMats */
    PetscCall(MatProductReplaceMats(NULL, B, NULL, C)); /* C = B3 * B */
    p0 = plans_now();
    PetscCall(MatProductNumeric(C));
    p1 = plans_now();
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatMatMult(B3a, Ba, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(tu_compare(C, Cref, &same, &err));
    tap_ok(same && err <= RTOL && p1 == p0 + 1, "MatProductReplaceMats with an operand of another pattern: re-planned (plans +%d), rel. difference %.2e", (int)(p1 - p0), (double)err);
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatDestroy(&B3));
    PetscCall(MatDestroy(&B3a));
  }
  /* an algorithm named in the options is SeqAIJ's to run (ex93, ex226) */
  {
    Mat      C;
    PetscInt p0, p1;
    p0 = plans_now();
    PetscCall(PetscOptionsSetValue(NULL, "-matmatmult_via", "heap"));
    PetscCall(MatMatMult(A, B, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(PetscOptionsClearValue(NULL, "-matmatmult_via"));
    p1 = plans_now();
    tap_ok(p1 == p0, "-matmatmult_via heap: SeqAIJ's heap algorithm, no tile plan (plans +%d)", (int)(p1 - p0));
    PetscCall(MatDestroy(&C));
  }
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Aa));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&Ba));
  PetscCall(MatDestroy(&P));
  PetscCall(MatDestroy(&Pa));
  PetscCall(MatDestroy(&R));
  PetscCall(MatDestroy(&Ra));
  PetscCall(MatDestroy(&Dk));
  PetscCall(MatDestroy(&Dkt));
  PetscCall(MatDestroy(&Dn));
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
  {
    const char *p = getenv("TILERAP_PATH");
    tile_route    = (PetscBool)(tilerap_engine_resolve(TILERAP_ENGINE_AUTO) == TILERAP_ENGINE_CUDA || (p && !strcmp(p, "tiles")));
    device_route  = (PetscBool)(TU_DEVICE_TYPES && tilerap_engine_resolve(TILERAP_ENGINE_AUTO) == TILERAP_ENGINE_CUDA && !(p && !strcmp(p, "tiles")));
    tap_diag("products by the %s", device_route ? "device CSR products (tile operands), tile plans (host AIJ operands)" : tile_route ? "tile plans" : "CSR plan on the AIJ arrays");
  }

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
    MatSeqTileSyncStats st_before;
    PetscCall(MatSeqTileGetSyncStats(A, &st_before));
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
      if (device_route)
        tap_ok(st.rebuilds == st_before.rebuilds && st.value_refreshes == st_before.value_refreshes, "device CSR route: A's tile copy neither refreshed nor rebuilt by the re-run (rebuilds +%d, refreshes +%d)", (int)(st.rebuilds - st_before.rebuilds),
               (int)(st.value_refreshes - st_before.value_refreshes));
      else if (tile_route) tap_ok(st.rebuilds == 1 && st.value_refreshes >= 1, "A's tile copy: values refreshed, never rebuilt (rebuilds %d, refreshes %d)", (int)st.rebuilds, (int)st.value_refreshes);
      else tap_ok(st.rebuilds == 0 && st.value_refreshes == 0, "CSR route: no tile copy of A made (rebuilds %d, refreshes %d)", (int)st.rebuilds, (int)st.value_refreshes);
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
      if (device_route) /* values undefined: the symbolic phase alone on the device route, as AIJCUSPARSE's */
        tap_ok(same && istile && nc > 0, "%s symbolic only + MatProductClear: C is seqtile with SEQAIJ's structure in CSR and tile form", names[k]);
      else tap_ok(same && istile && nrm == 0.0 && zero && nc > 0, "%s symbolic only + MatProductClear: C is seqtile with SEQAIJ's structure, values zero in CSR and tile form", names[k]);
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

  PetscCall(regression_checks(comm));

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
  /* A*B^T with a plain SeqAIJ A and a seqtile B: a clear error (SeqAIJ's
   * A*B^T crashed on it), not a crash; tile x tile and tile x AIJ work */
  {
    Mat            A, B, Ba, C = NULL, Cref = NULL;
    PetscErrorCode ierr;
    PetscCall(tu_random_mat(comm, MATSEQAIJ, 5, 8, 2, PETSC_FALSE, 1, 1, 11, &A));
    PetscCall(tu_random_mat(comm, MATSEQTILE, 6, 8, 2, PETSC_FALSE, 1, 1, 12, &B));
    PetscCall(MatConvert(B, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ba));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatMatTransposeMult(A, B, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_SUP, "A*B^T with a seqaij A and a seqtile B: PETSC_ERR_SUP (%d)", (int)ierr);
    PetscCall(MatDestroy(&C));
    PetscCall(MatMatTransposeMult(B, A, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &C));
    PetscCall(MatMatTransposeMult(Ba, A, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &Cref));
    PetscCall(check(C, Cref, "A*B^T with a seqtile A and a seqaij B equals AIJ's"));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&B));
    PetscCall(MatDestroy(&Ba));
  }
  {
    int rc = tap_done();
    PetscCall(PetscFinalize());
    return rc;
  }
}
