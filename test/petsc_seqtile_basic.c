/* MATSEQTILE as an AIJ matrix: type names, assembly, MatMult, diagonal,
 * duplicate, conversions, submatrices, block sizes, view, and the tile copy's
 * sync rules (no copy when unchanged, values-only refresh, rebuild). */
#include <stdlib.h>
#include <string.h>
#include "tilerap_petsc.h"
#include "tilerap_device.h"
#include "petsc_testutil.h"

/* tile copy == AIJ CSR, exactly */
static PetscErrorCode tile_matches(Mat A, PetscBool *ok)
{
  const tilerap_tile_matrix *T;
  const PetscInt            *ai, *aj;
  const PetscScalar         *aa;
  PetscInt                   m, n;

  PetscFunctionBeginUser;
  *ok = PETSC_FALSE;
  PetscCall(MatSeqTileGetTileMatrix(A, &T));
  PetscCall(MatGetSize(A, &m, &n));
  PetscCall(tu_host_csr(A, &ai, &aj, &aa));
  if (tilerap_tile_check(T) == TILERAP_SUCCESS && T->m == m && T->n == n && T->nnz == ai[m]) {
    tilerap_csr *C = NULL;
    if (!tilerap_tile_to_csr_alloc(T, &C)) {
      *ok = PETSC_TRUE;
      for (PetscInt i = 0; i <= m; i++)
        if (C->rowptr[i] != ai[i]) *ok = PETSC_FALSE;
      for (PetscInt k = 0; k < ai[m] && *ok; k++)
        if (C->colidx[k] != aj[k] || C->val[k] != aa[k]) *ok = PETSC_FALSE;
    }
    tilerap_csr_destroy(&C);
  }
  PetscCall(tu_host_csr_end(A, &ai, &aj, &aa));
  PetscFunctionReturn(0);
}

static PetscErrorCode same_mat(Mat X, Mat Y, PetscBool *ok)
{
  PetscBool s;
  PetscReal e;

  PetscFunctionBeginUser;
  PetscCall(tu_compare(X, Y, &s, &e));
  *ok = (PetscBool)(s && e == 0.0);
  PetscFunctionReturn(0);
}

/* MatSetType(MATSEQTILE) of a 4x4 matrix with prefix bad_ while option has
 * value: its error code in *ierr (the option is cleared again). */
static PetscErrorCode bad_option_settype(MPI_Comm comm, const char *option, const char *value, PetscErrorCode *ierr)
{
  Mat E;

  PetscFunctionBeginUser;
  PetscCall(PetscOptionsSetValue(NULL, option, value));
  PetscCall(MatCreate(comm, &E));
  PetscCall(MatSetOptionsPrefix(E, "bad_"));
  PetscCall(MatSetSizes(E, 4, 4, 4, 4));
  PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  *ierr = MatSetType(E, MATSEQTILE);
  PetscCall(PetscPopErrorHandler());
  PetscCall(MatDestroy(&E));
  PetscCall(PetscOptionsClearValue(NULL, option));
  PetscFunctionReturn(0);
}

/* Whether a line of A's MatView in ASCII_INFO format holds every one of
 * the n strings want[]; the line found goes to the TAP diagnostics. */
static PetscErrorCode view_line_has(Mat A, int n, const char *const want[], PetscBool *found)
{
  char  buf[8192], *save = NULL;

  PetscFunctionBeginUser;
  *found = PETSC_FALSE;
  PetscCall(tu_view_info(A, "petsc_seqtile_basic_view.txt", buf, sizeof buf));
  for (char *line = strtok_r(buf, "\n", &save); line && !*found; line = strtok_r(NULL, "\n", &save)) {
    PetscBool all = PETSC_TRUE;
    for (int k = 0; k < n && all; k++) all = (PetscBool)(strstr(line, want[k]) != NULL);
    if (all) {
      *found = PETSC_TRUE;
      tap_diag("%s", line);
    }
  }
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm            comm;
  Mat                 A, Aaij, D, B, S, Saij, Dn, Dn2;
  Vec                 x, y, yref, d, dref;
  PetscBool           flg, ok;
  PetscReal           nrm;
  MatSeqTileSyncStats st, st0;
  const PetscInt      m = 77, n = 77;
  IS                  is;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  comm = PETSC_COMM_SELF;
  PetscCall(TileRAPInitializePackage());
  PetscCall(TileRAPInitializePackage());
  tap_ok(1, "TileRAPInitializePackage is idempotent");

  /* type names */
  PetscCall(tu_random_mat(comm, MATSEQTILE, m, n, 5, PETSC_TRUE, 1, 1, 11, &A));
  PetscCall(tu_random_mat(comm, MATSEQAIJ, m, n, 5, PETSC_TRUE, 1, 1, 11, &Aaij));
  PetscCall(PetscObjectTypeCompare((PetscObject)A, MATSEQAIJTILE, &flg));
  { MatType t; PetscCall(MatGetType(A, &t)); tap_ok(flg, "MatSetType(seqtile) gives an object of type %s", t); }
  PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATSEQAIJ, &flg));
  tap_ok(flg, "its type name begins with seqaij");
  {
    Mat R;
    PetscCall(MatCreate(comm, &R));
    PetscCall(MatSetSizes(R, 5, 5, 5, 5));
    PetscCall(MatSetType(R, MATTILE));
    PetscCall(PetscObjectTypeCompare((PetscObject)R, MATSEQAIJTILE, &flg));
    { MatType t; PetscCall(MatGetType(R, &t)); tap_ok(flg, "root name tile resolves to seqtile on one rank (%s)", t); }
    PetscCall(MatDestroy(&R));
  }
  PetscCall(same_mat(A, Aaij, &ok));
  tap_ok(ok, "assembled seqtile has the same CSR as seqaij");

  /* MatMult, diagonal */
  PetscCall(MatCreateVecs(A, &x, &y));
  PetscCall(VecDuplicate(y, &yref));
  PetscCall(VecDuplicate(y, &d));
  PetscCall(VecDuplicate(y, &dref));
  PetscCall(VecSetRandom(x, NULL));
  PetscCall(MatMult(A, x, y));
  PetscCall(MatMult(Aaij, x, yref));
  PetscCall(VecAXPY(y, -1.0, yref));
  PetscCall(VecNorm(y, NORM_INFINITY, &nrm));
  { /* bit-equal on the host; a GPU's fused multiply-adds round differently */
    PetscReal ref;
    PetscBool oncuda;
    PetscCall(VecNorm(yref, NORM_INFINITY, &ref));
    PetscCall(PetscObjectTypeCompare((PetscObject)x, VECSEQCUDA, &oncuda));
    tap_ok(nrm <= (oncuda ? 1e-14 * ref : 0.0), "MatMult equals seqaij (diff %g)", (double)nrm);
  }
  PetscCall(MatGetDiagonal(A, d));
  PetscCall(MatGetDiagonal(Aaij, dref));
  PetscCall(VecAXPY(d, -1.0, dref));
  PetscCall(VecNorm(d, NORM_INFINITY, &nrm));
  tap_ok(nrm == 0.0, "MatGetDiagonal equals seqaij");

  /* tile copy sync rules */
  PetscCall(tile_matches(A, &ok));
  PetscCall(MatSeqTileGetSyncStats(A, &st0));
  tap_ok(ok && st0.rebuilds == 1, "tile copy built once and equals the CSR (rebuilds %d)", (int)st0.rebuilds);
  PetscCall(tile_matches(A, &ok));
  PetscCall(MatSeqTileGetSyncStats(A, &st));
  tap_ok(ok && st.rebuilds == 1 && st.value_refreshes == 0 && st.reuses == st0.reuses + 1, "unchanged matrix: no copy (reuses %d)", (int)st.reuses);
  PetscCall(MatScale(A, 2.0));
  PetscCall(MatScale(Aaij, 2.0));
  PetscCall(tile_matches(A, &ok));
  PetscCall(MatSeqTileGetSyncStats(A, &st));
  tap_ok(ok && st.rebuilds == 1 && st.value_refreshes == 1, "MatScale: values-only refresh");
  PetscCall(MatSetValue(A, 3, 3, 1.5, ADD_VALUES));
  PetscCall(MatSetValue(Aaij, 3, 3, 1.5, ADD_VALUES));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyBegin(Aaij, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Aaij, MAT_FINAL_ASSEMBLY));
  PetscCall(tile_matches(A, &ok));
  PetscCall(MatSeqTileGetSyncStats(A, &st));
  tap_ok(ok && st.rebuilds == 1 && st.value_refreshes == 2, "MatSetValues on existing entries: values-only refresh");
  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatSetOption(Aaij, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatSetValue(A, 0, n - 1, 0.25, INSERT_VALUES));
  PetscCall(MatSetValue(Aaij, 0, n - 1, 0.25, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyBegin(Aaij, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Aaij, MAT_FINAL_ASSEMBLY));
  PetscCall(tile_matches(A, &ok));
  PetscCall(MatSeqTileGetSyncStats(A, &st));
  tap_ok(ok && st.rebuilds == 2, "new nonzero: tile copy rebuilt (rebuilds %d)", (int)st.rebuilds);
  PetscCall(same_mat(A, Aaij, &ok));
  tap_ok(ok, "after edits seqtile still equals seqaij");

  /* duplicate */
  PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &D));
  PetscCall(PetscObjectTypeCompare((PetscObject)D, MATSEQAIJTILE, &flg));
  PetscCall(same_mat(D, Aaij, &ok));
  tap_ok(flg && ok, "MatDuplicate keeps the type and values");
  PetscCall(tile_matches(D, &ok));
  tap_ok(ok, "the duplicate's tile copy matches it");
  PetscCall(MatDestroy(&D));

  /* conversions */
  PetscCall(MatConvert(A, MATSEQAIJ, MAT_INITIAL_MATRIX, &B));
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQAIJ, &flg));
  PetscCall(same_mat(B, Aaij, &ok));
  tap_ok(flg && ok, "MatConvert seqtile -> seqaij");
  PetscCall(MatConvert(B, MATSEQTILE, MAT_INPLACE_MATRIX, &B));
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQAIJTILE, &flg));
  PetscCall(same_mat(B, Aaij, &ok));
  tap_ok(flg && ok, "in-place MatConvert seqaij -> seqtile");
  PetscCall(tile_matches(B, &ok));
  tap_ok(ok, "converted matrix builds a matching tile copy");
  PetscCall(MatConvert(B, MATSEQAIJ, MAT_INPLACE_MATRIX, &B));
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQAIJ, &flg));
  tap_ok(flg, "in-place MatConvert back to seqaij");
  PetscCall(MatSetType(B, MATSEQAIJTILE));
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQAIJTILE, &flg));
  PetscCall(same_mat(B, Aaij, &ok));
  tap_ok(flg && ok, "MatSetType(assembled seqaij, seqaijtile) converts in place keeping values");
  PetscCall(MatDestroy(&B));
  PetscCall(MatConvert(Aaij, MATSEQTILE, MAT_INITIAL_MATRIX, &B));
  PetscCall(PetscObjectTypeCompare((PetscObject)B, MATSEQAIJTILE, &flg));
  PetscCall(same_mat(B, Aaij, &ok));
  tap_ok(flg && ok, "MatConvert seqaij -> seqtile (new matrix)");
  PetscCall(MatDestroy(&B));
  PetscCall(MatConvert(A, MATSEQDENSE, MAT_INITIAL_MATRIX, &Dn));
  PetscCall(MatConvert(Aaij, MATSEQDENSE, MAT_INITIAL_MATRIX, &Dn2));
  PetscCall(MatAXPY(Dn, -1.0, Dn2, SAME_NONZERO_PATTERN));
  PetscCall(MatNorm(Dn, NORM_FROBENIUS, &nrm));
  tap_ok(nrm == 0.0, "MatConvert seqtile -> seqdense");
  PetscCall(MatDestroy(&Dn));
  PetscCall(MatDestroy(&Dn2));
  { /* conversions to SeqAIJ's other formats: an object of that type (no
     * tile ops or data left on it), same values, usable */
    const char *to[] = {MATSEQAIJPERM, MATSEQAIJSELL, MATSEQAIJCRL, MATSEQBAIJ, MATSEQSELL};
    for (size_t k = 0; k < sizeof to / sizeof to[0]; k++) {
      Mat       X, Y;
      PetscBool is, istile;
      PetscCall(MatConvert(A, to[k], MAT_INITIAL_MATRIX, &X));
      PetscCall(PetscObjectTypeCompare((PetscObject)X, to[k], &is));
      PetscCall(PetscObjectTypeCompareAny((PetscObject)X, &istile, MATSEQAIJTILE, "seqaijtilehost", ""));
      PetscCall(MatSetFromOptions(X));
      PetscCall(MatConvert(X, MATSEQAIJ, MAT_INITIAL_MATRIX, &Y));
      PetscCall(same_mat(Y, Aaij, &ok));
      {
        MatType xt;
        PetscCall(MatGetType(X, &xt));
        tap_ok(is && !istile && ok, "MatConvert seqtile -> %s: type %s, same values %d", to[k], xt, (int)ok);
      }
      PetscCall(MatDestroy(&Y));
      PetscCall(MatDestroy(&X));
    }
  }

  /* submatrix */
  PetscCall(ISCreateStride(comm, 40, 5, 1, &is));
  PetscCall(MatCreateSubMatrix(A, is, is, MAT_INITIAL_MATRIX, &S));
  PetscCall(MatCreateSubMatrix(Aaij, is, is, MAT_INITIAL_MATRIX, &Saij));
  PetscCall(PetscObjectTypeCompare((PetscObject)S, MATSEQAIJTILE, &flg));
  PetscCall(same_mat(S, Saij, &ok));
  tap_ok(flg && ok, "MatCreateSubMatrix gives an equal seqtile");
  PetscCall(tile_matches(S, &ok));
  tap_ok(ok, "the submatrix's tile copy matches it");
  PetscCall(ISDestroy(&is));
  PetscCall(MatDestroy(&S));
  PetscCall(MatDestroy(&Saij));

  /* block sizes */
  {
    Mat      Bb, Bd;
    PetscInt rbs, cbs;
    PetscCall(tu_random_mat(comm, MATSEQTILE, 39, 39, 3, PETSC_TRUE, 3, 3, 5, &Bb));
    PetscCall(MatGetBlockSizes(Bb, &rbs, &cbs));
    PetscCall(MatDuplicate(Bb, MAT_COPY_VALUES, &Bd));
    PetscCall(MatGetBlockSizes(Bd, &rbs, &cbs));
    tap_ok(rbs == 3 && cbs == 3, "block size 3 kept through MatDuplicate");
    PetscCall(MatDestroy(&Bd));
    PetscCall(MatDestroy(&Bb));
  }

  /* view: ascii_info shows tile statistics */
  {
    PetscBool found = PETSC_FALSE;
    char      engine[32];
    PetscCall(PetscSNPrintf(engine, sizeof engine, "engine %s", tilerap_engine_name(tilerap_engine_resolve(TILERAP_ENGINE_AUTO))));
    PetscCall(view_line_has(A, 4, (const char *const[]){"tilerap:", "tiles", "mean entries per tile", engine}, &found));
    tap_ok(found, "MatView ascii_info prints tiles, mean entries per tile and the engine");
  }

  /* bad input: a request for an engine that is not there is a PETSc error */
  {
    PetscErrorCode ierr;
    PetscCall(bad_option_settype(comm, "-bad_mat_tile_engine", "gpu", &ierr));
    tap_ok(ierr == PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_engine gpu is rejected with PETSC_ERR_ARG_OUTOFRANGE (%d)", (int)ierr);
  }
  /* -mat_tile_device: a device that is not there is a PETSc error */
  {
    PetscErrorCode ierr;
    char           dev[16];
    int            ndev = tilerap_device_count();
    PetscCall(PetscSNPrintf(dev, sizeof dev, "%d", ndev)); /* one past the last */
    PetscCall(bad_option_settype(comm, "-bad_mat_tile_device", dev, &ierr));
    tap_ok(ierr == (ndev ? PETSC_ERR_ARG_OUTOFRANGE : PETSC_ERR_SUP), "-mat_tile_device %s with %d devices is rejected (%d)", dev, ndev, (int)ierr);
  }

  /* tensor-core options: read per matrix by MatSetFromOptions, shown by
   * MatView, bad values rejected */
  {
    Mat            E;
    PetscErrorCode ierr;
    PetscBool      found = PETSC_FALSE;
    PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_tc_threshold", "256"));
    PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_precision", "bf16"));
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &E));
    PetscCall(MatSetOptionsPrefix(E, "tc_"));
    PetscCall(MatSetFromOptions(E));
    PetscCall(view_line_has(E, 1, (const char *const[]){"tensor-core threshold 256 (bf16)"}, &found));
    tap_ok(found, "-mat_tile_tc_threshold 256 -mat_tile_precision bf16 read and shown by MatView");
    PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_precision", "fp8"));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatSetFromOptions(E);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_precision fp8 is rejected with PETSC_ERR_ARG_OUTOFRANGE (%d)", (int)ierr);
    PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_precision", "fp64"));
    PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_tc_threshold", "5000"));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatSetFromOptions(E);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_tc_threshold 5000 is rejected with PETSC_ERR_ARG_OUTOFRANGE (%d)", (int)ierr);
    PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_tc_threshold", "12x"));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatSetFromOptions(E);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_tc_threshold 12x is rejected with PETSC_ERR_ARG_OUTOFRANGE (%d)", (int)ierr);
    /* auto (the default) after a number, and a negative number (off) */
    {
      const char *const val[] = {"AUTO", "-7"}, *const shown[] = {"tensor-core threshold auto (fp64)", "tensor-core threshold -1 (fp64)"};
      for (int k = 0; k < 2; k++) {
        PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_tc_threshold", "256"));
        PetscCall(MatSetFromOptions(E));
        PetscCall(PetscOptionsSetValue(NULL, "-tc_mat_tile_tc_threshold", val[k]));
        PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
        ierr = MatSetFromOptions(E);
        PetscCall(PetscPopErrorHandler());
        found = PETSC_FALSE;
        if (!ierr) {
          PetscCall(view_line_has(E, 1, (const char *const[]){shown[k]}, &found));
        }
        tap_ok(!ierr && found, "-mat_tile_tc_threshold %s after 256 is read and shown by MatView as '%s' (%d)", val[k], shown[k], (int)ierr);
      }
    }
    PetscCall(MatDestroy(&E));
    PetscCall(PetscOptionsClearValue(NULL, "-tc_mat_tile_tc_threshold"));
    PetscCall(PetscOptionsClearValue(NULL, "-tc_mat_tile_precision"));
  }

  /* CPU kernel option: read by MatSetFromOptions, shown by MatView, bad
   * values rejected */
  {
    Mat            E;
    PetscErrorCode ierr;
    PetscBool      found = PETSC_FALSE;
    PetscCall(PetscOptionsSetValue(NULL, "-kn_mat_tile_cpu_kernel", "recorded"));
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &E));
    PetscCall(MatSetOptionsPrefix(E, "kn_"));
    PetscCall(MatSetFromOptions(E));
    PetscCall(view_line_has(E, 1, (const char *const[]){"CPU kernel recorded"}, &found));
    tap_ok(found, "-mat_tile_cpu_kernel recorded read and shown by MatView");
    PetscCall(PetscOptionsSetValue(NULL, "-kn_mat_tile_cpu_kernel", "fastest"));
    PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
    ierr = MatSetFromOptions(E);
    PetscCall(PetscPopErrorHandler());
    tap_ok(ierr == PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_cpu_kernel fastest is rejected with PETSC_ERR_ARG_OUTOFRANGE (%d)", (int)ierr);
    PetscCall(MatDestroy(&E));
    PetscCall(PetscOptionsClearValue(NULL, "-kn_mat_tile_cpu_kernel"));
  }

  /* the core's tuning knobs as options (process-wide, tilerap_tuning_set):
   * a good value accepted by MatSetFromOptions, a bad one refused with
   * tilerap's message naming the option; the knobs back to the
   * environment's values afterwards */
  {
    static const struct {
      const char *option, *knob, *good, *bad;
    } knobs[] = {
      {"-mat_tile_pinned", "TILERAP_PINNED", "0", "maybe"},
      {"-mat_tile_pinned_chunk", "TILERAP_PINNED_CHUNK", "65536", "100"},
      {"-mat_tile_copy_threads", "TILERAP_COPY_THREADS", "2", "65"},
      {"-mat_tile_trace", "TILERAP_TRACE", "", "2"}, /* no value: on, as a PETSc boolean */
      {"-mat_tile_path", "TILERAP_PATH", "csr", "fastest"},
      {"-mat_tile_lowprec_reuse", "TILERAP_CUDA_LOWPREC_REUSE", "0", "-1"},
      {"-mat_tile_csr_ptap", "TILERAP_CSR_PTAP", "ap", "fast"}, /* not the default (walk) */
    };
    Mat E;
    PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &E));
    PetscCall(MatSetOptionsPrefix(E, "tn_"));
    for (size_t k = 0; k < sizeof knobs / sizeof knobs[0]; k++) {
      PetscErrorCode ierr;
      const char    *text;
      char          *msg = NULL, name[64];
      PetscCall(PetscSNPrintf(name, sizeof name, "-tn_%s", knobs[k].option + 1));
      PetscCall(PetscOptionsSetValue(NULL, name, knobs[k].good[0] ? knobs[k].good : NULL));
      PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
      ierr = MatSetFromOptions(E);
      PetscCall(PetscPopErrorHandler());
      tap_ok(ierr == 0, "%s %s is accepted (%d)", knobs[k].option, knobs[k].good[0] ? knobs[k].good : "(no value)", (int)ierr);
      PetscCall(PetscOptionsSetValue(NULL, name, knobs[k].bad));
      PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
      ierr = MatSetFromOptions(E);
      PetscCall(PetscPopErrorHandler());
      if (ierr) PetscErrorMessage(ierr, &text, (void *)&msg); /* char ** before 3.2x, const char ** since: both take it */
      tap_ok(ierr != 0 && msg && strstr(msg, knobs[k].knob) && strstr(msg, knobs[k].option), "%s %s is refused with tilerap's message (%d: %s)", knobs[k].option, knobs[k].bad, (int)ierr, msg ? msg : "");
      PetscCall(PetscOptionsClearValue(NULL, name));
      tap_ok(tilerap_tuning_set(knobs[k].knob, NULL) == TILERAP_SUCCESS, "%s back to the environment's value", knobs[k].knob);
    }
    PetscCall(MatDestroy(&E));
  }

  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&yref));
  PetscCall(VecDestroy(&d));
  PetscCall(VecDestroy(&dref));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Aaij));
  {
    int rc = tap_done();
    PetscCall(PetscFinalize());
    return rc;
  }
}
