/* The interposed hypre entry points.  libHYPRE calls them through its PLT,
 * so these definitions win when libtilerap_hypre precedes libHYPRE in the
 * lookup order; hypre's own versions stay reachable via RTLD_NEXT. */
#include "hook_internal.h"

HYPRE_Int TileRAP_HypreOriginalBuildCoarseOperatorKT(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A,
                                                     hypre_ParCSRMatrix *P, HYPRE_Int keepT,
                                                     hypre_ParCSRMatrix **RAP)
{
  return tr_hypre_original_build_coarse()(RT, A, P, keepT, RAP);
}

hypre_ParCSRMatrix *TileRAP_HypreOriginalRAPKT(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A,
                                               hypre_ParCSRMatrix *P, HYPRE_Int keepT,
                                               HYPRE_Int has_diagonal)
{
#if TILERAP_HYPRE_RAPKT_HAS_DIAGONAL
  return tr_hypre_original_rapkt()(R, A, P, keepT, has_diagonal);
#else
  (void)has_diagonal;
  return tr_hypre_original_rapkt()(R, A, P, keepT);
#endif
}

/* Default host path of hypre_BoomerAMGSetup (modular mat-mat off). */
HYPRE_Int hypre_BoomerAMGBuildCoarseOperatorKT(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A,
                                               hypre_ParCSRMatrix *P, HYPRE_Int keepTranspose,
                                               hypre_ParCSRMatrix **RAP_ptr)
{
  const int ep = TILERAP_HYPRE_EP_BUILD_COARSE_OPERATOR;
  hypre_ParCSRMatrix *RAP = NULL;
  double t0 = tr_hypre_wtime();
  int refusal = tr_hypre_refusal();
  int rc = tr_hypre_galerkin(RT, A, P, keepTranspose, 1, 1, refusal, &RAP);
  if (rc == 0) {
    *RAP_ptr = RAP;
    tr_hypre_count_computed(ep, tr_hypre_wtime() - t0);
    return 0;
  }
  t0 = tr_hypre_wtime();
  HYPRE_Int ierr = tr_hypre_original_build_coarse()(RT, A, P, keepTranspose, RAP_ptr);
  tr_hypre_count_forwarded(ep, rc - 1, tr_hypre_wtime() - t0);
  return ierr;
}

/* Modular path (HYPRE_BoomerAMGSetModuleRAP2), also used by other solvers. */
#if TILERAP_HYPRE_RAPKT_HAS_DIAGONAL
hypre_ParCSRMatrix *hypre_ParCSRMatrixRAPKT(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A,
                                            hypre_ParCSRMatrix *P, HYPRE_Int keep_transpose,
                                            HYPRE_Int has_diagonal)
#else
hypre_ParCSRMatrix *hypre_ParCSRMatrixRAPKT(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A,
                                            hypre_ParCSRMatrix *P, HYPRE_Int keep_transpose)
#endif
{
#if !TILERAP_HYPRE_RAPKT_HAS_DIAGONAL
  const HYPRE_Int has_diagonal = 1;
#endif
  const int ep = TILERAP_HYPRE_EP_RAPKT;
  hypre_ParCSRMatrix *C = NULL;
  double t0 = tr_hypre_wtime();
  int refusal = tr_hypre_refusal();
  /* sorted rows here: hypre's order below made hypre's own RAPKT differ
   * in structure on a deeper level at 4 ranks (not understood yet) */
  int rc;
  /* a CUDA hypre's device setup (its own reasons: no "no GPU" here) */
  if ((refusal < 0 || refusal == TILERAP_HYPRE_FWD_NOGPU) && A && tr_hypre_on_device(A))
    rc = tr_hypre_device_rapkt(R, A, P, keep_transpose, has_diagonal, &C);
  else
    rc = tr_hypre_galerkin(R, A, P, keep_transpose, has_diagonal != 0, 0, refusal, &C);
  if (rc == 0) {
    tr_hypre_count_computed(ep, tr_hypre_wtime() - t0);
    return C;
  }
  t0 = tr_hypre_wtime();
  C = TileRAP_HypreOriginalRAPKT(R, A, P, keep_transpose, has_diagonal);
  tr_hypre_count_forwarded(ep, rc - 1, tr_hypre_wtime() - t0);
  return C;
}

/* hypre's other products of a setup: observed only (BENCHMARKS.md, section
 * 3b: where the setup's SpGEMM time goes besides the Galerkin products). */
typedef hypre_ParCSRMatrix *(*tr_matmat_fn)(hypre_ParCSRMatrix *, hypre_ParCSRMatrix *);
typedef hypre_ParCSRMatrix *(*tr_tmatmat_fn)(hypre_ParCSRMatrix *, hypre_ParCSRMatrix *, HYPRE_Int);

hypre_ParCSRMatrix *hypre_ParCSRMatMat(hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *B)
{
  static tr_matmat_fn fn;
  if (!fn) fn = (tr_matmat_fn)tr_hypre_next_symbol("hypre_ParCSRMatMat");
  const double t0 = tr_hypre_wtime();
  hypre_ParCSRMatrix *C = fn(A, B);
  tr_hypre_count_observed(TILERAP_HYPRE_EP_MATMAT, tr_hypre_wtime() - t0);
  return C;
}

hypre_ParCSRMatrix *hypre_ParCSRTMatMatKT(hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *B, HYPRE_Int keep_transpose)
{
  static tr_tmatmat_fn fn;
  if (!fn) fn = (tr_tmatmat_fn)tr_hypre_next_symbol("hypre_ParCSRTMatMatKT");
  const double t0 = tr_hypre_wtime();
  hypre_ParCSRMatrix *C = fn(A, B, keep_transpose);
  tr_hypre_count_observed(TILERAP_HYPRE_EP_TMATMAT, tr_hypre_wtime() - t0);
  return C;
}
