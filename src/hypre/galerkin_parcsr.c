/* C = RT^T A P for hypre ParCSR matrices with the tile engine.
 *
 * Each rank forms, in local numbering,
 *   A_loc  = [A_diag | A_offd]                 (nA x (nA + nAo))
 *   P_full = [P_diag P_offd ; P_ext]           ((nA + nAo) x (ncP + nQ))
 *   R_loc  = [RT_diag | RT_offd]               (nA x (ncR + nRo))
 * where P_ext holds the rows of P owned elsewhere that A_offd touches
 * (hypre_ParCSRMatrixExtractBExt) and Q is the union of P's offd columns
 * and P_ext's off-rank columns.  Two tile products give
 *   C_all = R_loc^T (A_loc P_full)             ((ncR + nRo) x (ncP + nQ)):
 * its first ncR rows are this rank's rows of C, the other nRo rows are
 * contributions to rows owned by the ranks that own RT's offd columns;
 * hypre_ExchangeExternalRows sends them there (RT's comm package), and the
 * received rows are added in while C is split into diag/offd blocks.
 *
 * The result is what hypre_BoomerAMGBuildCoarseOperatorKT leaves: same
 * structural pattern (entries are never dropped for being zero), diagonal
 * first in each row when the operator is square, ascending col_map_offd
 * without unused columns, arrays from hypre's allocator, comm package,
 * and the transposes of RT's blocks kept on RT when keepT is set.
 *
 * Forwarding is decided collectively: before any communication (cheap
 * checks) and again after the local tile products, so that either every
 * rank computes or every rank calls hypre's own function. */
#include "hook_internal.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static int big_cmp(const void *x, const void *y)
{
  HYPRE_BigInt a = *(const HYPRE_BigInt *)x, b = *(const HYPRE_BigInt *)y;
  return (a > b) - (a < b);
}

/* Sorts and removes duplicates in place; returns the new length. */
static HYPRE_Int big_sort_unique(HYPRE_BigInt *v, HYPRE_Int n)
{
  if (n <= 1) return n;
  qsort(v, (size_t)n, sizeof *v, big_cmp);
  HYPRE_Int w = 1;
  for (HYPRE_Int k = 1; k < n; k++)
    if (v[k] != v[w - 1]) v[w++] = v[k];
  return w;
}

/* Index of g in the ascending array v[0..n), or -1. */
static HYPRE_Int big_find(const HYPRE_BigInt *v, HYPRE_Int n, HYPRE_BigInt g)
{
  HYPRE_Int lo = 0, hi = n - 1;
  while (lo <= hi) {
    HYPRE_Int mid = lo + (hi - lo) / 2;
    if (v[mid] < g) lo = mid + 1;
    else if (v[mid] > g) hi = mid - 1;
    else return mid;
  }
  return -1;
}

static int on_host(hypre_ParCSRMatrix *M)
{
  return hypre_GetActualMemLocation(hypre_ParCSRMatrixMemoryLocation(M)) == hypre_MEMORY_HOST;
}

/* Local checks that need no communication; -1 when the rank can compute. */
static int local_precheck(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, int rank)
{
  if (!TILERAP_HYPRE_SCALAR_OK) return TILERAP_HYPRE_FWD_SCALAR;
  if (!RT || !A || !P) return TILERAP_HYPRE_FWD_SHAPE;
  if (!on_host(RT) || !on_host(A) || !on_host(P)) return TILERAP_HYPRE_FWD_DEVICE;
  hypre_CSRMatrix *RTd = hypre_ParCSRMatrixDiag(RT), *RTo = hypre_ParCSRMatrixOffd(RT);
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  hypre_CSRMatrix *Pd = hypre_ParCSRMatrixDiag(P), *Po = hypre_ParCSRMatrixOffd(P);
  if (hypre_ParCSRMatrixGlobalNumRows(RT) != hypre_ParCSRMatrixGlobalNumRows(A) ||
      hypre_ParCSRMatrixGlobalNumCols(A) != hypre_ParCSRMatrixGlobalNumRows(P) ||
      hypre_CSRMatrixNumRows(RTd) != hypre_CSRMatrixNumRows(Ad) ||
      hypre_CSRMatrixNumCols(Ad) != hypre_CSRMatrixNumRows(Pd) ||
      hypre_CSRMatrixNumRows(Ao) != hypre_CSRMatrixNumRows(Ad) ||
      hypre_CSRMatrixNumRows(Po) != hypre_CSRMatrixNumRows(Pd) ||
      hypre_CSRMatrixNumRows(RTo) != hypre_CSRMatrixNumRows(RTd))
    return TILERAP_HYPRE_FWD_SHAPE;
  if ((int64_t)hypre_CSRMatrixNumCols(Ad) + hypre_CSRMatrixNumCols(Ao) > INT32_MAX ||
      (int64_t)hypre_CSRMatrixNumCols(RTd) + hypre_CSRMatrixNumCols(RTo) > INT32_MAX ||
      (int64_t)hypre_CSRMatrixNumCols(Pd) + hypre_CSRMatrixNumCols(Po) > INT32_MAX)
    return TILERAP_HYPRE_FWD_SIZE;
  if (rank == tr_hypre_test_refuse_rank()) return TILERAP_HYPRE_FWD_TEST;
  return -1;
}

/* Collective: 1 if any rank reports failure. */
static int any_failed(MPI_Comm comm, int nprocs, int failed)
{
  if (nprocs == 1) return failed;
  int g = 0;
  MPI_Allreduce(&failed, &g, 1, MPI_INT, MPI_MAX, comm);
  return g;
}

static tr_block block_of(hypre_CSRMatrix *M, const int32_t *map, int32_t offset)
{
  tr_block b = {hypre_CSRMatrixI(M), hypre_CSRMatrixJ(M), NULL, hypre_CSRMatrixData(M), map, offset};
  return b;
}

static int has_entries(hypre_CSRMatrix *M)
{
  return hypre_CSRMatrixI(M) && hypre_CSRMatrixNumNonzeros(M) > 0;
}

int tr_hypre_galerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                      HYPRE_Int keepT, int force_diagonal, int local_refusal,
                      hypre_ParCSRMatrix **RAP_out)
{
  MPI_Comm comm;
  int nprocs = 1, rank = 0, reason, failed = 0, result = 0;
  *RAP_out = NULL;
  if (!A) return 1 + TILERAP_HYPRE_FWD_SHAPE;
  double tp = tr_hypre_wtime();
#define PHASE(ph) do { double t_ = tr_hypre_wtime(); tr_hypre_add_phase((ph), t_ - tp); tp = t_; } while (0)
  comm = hypre_ParCSRMatrixComm(A);
  MPI_Comm_size(comm, &nprocs);
  MPI_Comm_rank(comm, &rank);

  reason = local_refusal >= 0 ? local_refusal : local_precheck(RT, A, P, rank);
  if (any_failed(comm, nprocs, reason >= 0))
    return 1 + (reason >= 0 ? reason : TILERAP_HYPRE_FWD_PEER);

  hypre_CSRMatrix *RTd = hypre_ParCSRMatrixDiag(RT), *RTo = hypre_ParCSRMatrixOffd(RT);
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  hypre_CSRMatrix *Pd = hypre_ParCSRMatrixDiag(P), *Po = hypre_ParCSRMatrixOffd(P);
  const HYPRE_Int nA = hypre_CSRMatrixNumRows(Ad);    /* local fine rows          */
  const HYPRE_Int nAc = hypre_CSRMatrixNumCols(Ad);   /* local fine columns       */
  const HYPRE_Int nAo = hypre_CSRMatrixNumCols(Ao);
  const HYPRE_Int ncR = hypre_CSRMatrixNumCols(RTd);  /* local coarse rows of C   */
  const HYPRE_Int nRo = hypre_CSRMatrixNumCols(RTo);
  const HYPRE_Int ncP = hypre_CSRMatrixNumCols(Pd);   /* local coarse columns     */
  const HYPRE_Int nPo = hypre_CSRMatrixNumCols(Po);
  const HYPRE_BigInt firstP = hypre_ParCSRMatrixFirstColDiag(P);
  const HYPRE_BigInt lastP = firstP + ncP - 1;
  HYPRE_BigInt *cmapP = hypre_ParCSRMatrixColMapOffd(P);
  const int square = force_diagonal && ncR == ncP &&
                     hypre_ParCSRMatrixGlobalNumCols(RT) == hypre_ParCSRMatrixGlobalNumCols(P);

  hypre_ParCSRCommPkg *pkgRT = NULL;
  hypre_CSRMatrix *Pext = NULL, *C_int = NULL, *C_ext = NULL;
  HYPRE_BigInt *colQ = NULL, *colC = NULL;
  int32_t *mapPQ = NULL, *pext_col = NULL;
  HYPRE_Int *mapQC = NULL, *ext_loc = NULL, *ext_ptr = NULL, *ext_rows = NULL, *marker = NULL;
  HYPRE_Int nQ = 0, nC = 0;
  tilerap_tile_matrix *Aloc = NULL, *Pfull = NULL, *Rloc = NULL, *Rt = NULL, *AP = NULL, *Call = NULL;
  tilerap_csr *C = NULL;
  int err = TILERAP_SUCCESS;

  /* ---- communication 1: remote rows of P (hypre's helper, as the original) */
  if (nprocs > 1) {
    if (!hypre_ParCSRMatrixCommPkg(RT)) hypre_MatvecCommPkgCreate(RT);
    pkgRT = hypre_ParCSRMatrixCommPkg(RT);
    Pext = hypre_ParCSRMatrixExtractBExt(P, A, 1);
  }
  const HYPRE_Int ext_nnz = Pext ? hypre_CSRMatrixI(Pext)[hypre_CSRMatrixNumRows(Pext)] : 0;
  if (Pext && hypre_CSRMatrixNumRows(Pext) != nAo) { failed = 1; reason = TILERAP_HYPRE_FWD_SHAPE; goto sync; }

  PHASE(TR_PH_COMM);
  /* ---- Q: P's offd columns and the off-rank columns of P_ext */
  colQ = hypre_TAlloc(HYPRE_BigInt, nPo + ext_nnz + 1, HYPRE_MEMORY_HOST);
  for (HYPRE_Int k = 0; k < nPo; k++) colQ[nQ++] = cmapP[k];
  if (Pext) {
    HYPRE_BigInt *bj = hypre_CSRMatrixBigJ(Pext);
    for (HYPRE_Int k = 0; k < ext_nnz; k++)
      if (bj[k] < firstP || bj[k] > lastP) colQ[nQ++] = bj[k];
  }
  nQ = big_sort_unique(colQ, nQ);
  if ((int64_t)ncP + nQ > INT32_MAX) { failed = 1; reason = TILERAP_HYPRE_FWD_SIZE; goto sync; }
  mapPQ = malloc(((size_t)nPo + 1) * sizeof *mapPQ);
  pext_col = malloc(((size_t)ext_nnz + 1) * sizeof *pext_col);
  if (!mapPQ || !pext_col) { err = TILERAP_ERR_NOMEM; goto engine_failed; }
  for (HYPRE_Int k = 0; k < nPo; k++) mapPQ[k] = (int32_t)big_find(colQ, nQ, cmapP[k]);
  if (Pext) {
    HYPRE_BigInt *bj = hypre_CSRMatrixBigJ(Pext);
    for (HYPRE_Int k = 0; k < ext_nnz; k++)
      pext_col[k] = (bj[k] < firstP || bj[k] > lastP) ? (int32_t)(ncP + big_find(colQ, nQ, bj[k]))
                                                      : (int32_t)(bj[k] - firstP);
  }

  /* ---- local blocks -> tiles, two tile products */
  {
    tr_segment s = {0, (int32_t)nA, 1, {block_of(Ad, NULL, 0)}};
    if (nAo > 0 && has_entries(Ao)) s.b[s.nblocks++] = block_of(Ao, NULL, (int32_t)nAc);
    err = tr_tiles_from_segments((int32_t)nA, (int32_t)(nAc + nAo), 1, &s, &Aloc);
    if (err) goto engine_failed;
  }
  {
    tr_segment s[2] = {{0, (int32_t)nAc, 1, {block_of(Pd, NULL, 0)}}, {0}};
    int nseg = 1;
    if (nPo > 0 && has_entries(Po)) s[0].b[s[0].nblocks++] = block_of(Po, mapPQ, (int32_t)ncP);
    if (Pext && nAo > 0) {
      tr_block b = {hypre_CSRMatrixI(Pext), NULL, pext_col, hypre_CSRMatrixData(Pext), NULL, 0};
      s[1].row0 = (int32_t)nAc; s[1].nrows = (int32_t)nAo; s[1].nblocks = 1; s[1].b[0] = b;
      nseg = 2;
    }
    err = tr_tiles_from_segments((int32_t)(nAc + nAo), (int32_t)(ncP + nQ), nseg, s, &Pfull);
    if (err) goto engine_failed;
  }
  {
    tr_segment s = {0, (int32_t)nA, 1, {block_of(RTd, NULL, 0)}};
    if (nRo > 0 && has_entries(RTo)) s.b[s.nblocks++] = block_of(RTo, NULL, (int32_t)ncR);
    err = tr_tiles_from_segments((int32_t)nA, (int32_t)(ncR + nRo), 1, &s, &Rloc);
    if (err) goto engine_failed;
  }
  {
    tilerap_options opt;
    tilerap_options_default(&opt);
    PHASE(TR_PH_IN);
    if ((err = tilerap_tile_transpose(Rloc, &Rt, NULL))) goto engine_failed;
    if ((err = tilerap_spgemm(Aloc, Pfull, &opt, &AP))) goto engine_failed;
    if ((err = tilerap_spgemm(Rt, AP, &opt, &Call))) goto engine_failed;
    PHASE(TR_PH_ENGINE);
    if ((err = tilerap_tile_to_csr_alloc(Call, &C))) goto engine_failed;
    PHASE(TR_PH_OUT);
  }
  goto sync;

engine_failed:
  failed = 1;
  reason = TILERAP_HYPRE_FWD_ENGINE;
  tr_hypre_note("rank %d: tilerap error %d (%s): %s", rank, err, tilerap_error_string(err),
                tilerap_last_error());

sync:
  /* ---- collective decision after the local work */
  PHASE(TR_PH_OUT);
  if (any_failed(comm, nprocs, failed)) {
    result = 1 + (failed ? reason : TILERAP_HYPRE_FWD_PEER);
    goto cleanup;
  }
  tilerap_tile_destroy(&Aloc); tilerap_tile_destroy(&Pfull); tilerap_tile_destroy(&Rloc);
  tilerap_tile_destroy(&Rt); tilerap_tile_destroy(&AP); tilerap_tile_destroy(&Call);

  /* ---- communication 2: rows of C owned elsewhere go to their owners */
  if (nprocs > 1) {
    const HYPRE_Int nint = C->rowptr[ncR + nRo] - C->rowptr[ncR];
    C_int = hypre_CSRMatrixCreate(nRo, hypre_ParCSRMatrixGlobalNumCols(P), nint);
    hypre_CSRMatrixInitialize_v2(C_int, 1, HYPRE_MEMORY_HOST);
    HYPRE_Int *ii = hypre_CSRMatrixI(C_int);
    HYPRE_BigInt *bj = hypre_CSRMatrixBigJ(C_int);
    HYPRE_Complex *da = hypre_CSRMatrixData(C_int);
    HYPRE_Int q = 0;
    ii[0] = 0;
    for (HYPRE_Int r = 0; r < nRo; r++) {
      for (int64_t k = C->rowptr[ncR + r]; k < C->rowptr[ncR + r + 1]; k++, q++) {
        int32_t c = C->colidx[k];
        bj[q] = c < ncP ? firstP + c : colQ[c - ncP];
        da[q] = C->val[k];
      }
      ii[r + 1] = q;
    }
    void *request = NULL;
    PHASE(TR_PH_OUT);
    hypre_ExchangeExternalRowsInit(C_int, pkgRT, &request);
    C_ext = hypre_ExchangeExternalRowsWait(request);
    PHASE(TR_PH_COMM);
  }

  /* ---- offd columns of C: used Q columns and off-rank columns of C_ext */
  const HYPRE_Int next = C_ext ? hypre_CSRMatrixNumRows(C_ext) : 0;
  const HYPRE_Int next_nnz = C_ext ? hypre_CSRMatrixI(C_ext)[next] : 0;
  HYPRE_BigInt *ext_bj = C_ext ? hypre_CSRMatrixBigJ(C_ext) : NULL;
  {
    char *usedQ = calloc((size_t)nQ + 1, 1);
    colC = hypre_TAlloc(HYPRE_BigInt, nQ + next_nnz + 1, HYPRE_MEMORY_HOST);
    for (int64_t k = 0; k < C->rowptr[ncR]; k++)
      if (C->colidx[k] >= ncP) usedQ[C->colidx[k] - ncP] = 1;
    for (HYPRE_Int q = 0; q < nQ; q++)
      if (usedQ[q]) colC[nC++] = colQ[q];
    for (HYPRE_Int k = 0; k < next_nnz; k++)
      if (ext_bj[k] < firstP || ext_bj[k] > lastP) colC[nC++] = ext_bj[k];
    nC = big_sort_unique(colC, nC);
    mapQC = hypre_TAlloc(HYPRE_Int, nQ + 1, HYPRE_MEMORY_HOST);
    for (HYPRE_Int q = 0; q < nQ; q++) mapQC[q] = usedQ[q] ? big_find(colC, nC, colQ[q]) : -1;
    free(usedQ);
  }
  /* received rows, by the local row they add to (send_map_elmts of RT) */
  ext_ptr = hypre_CTAlloc(HYPRE_Int, ncR + 2, HYPRE_MEMORY_HOST);
  if (next > 0) {
    HYPRE_Int *elm = hypre_ParCSRCommPkgSendMapElmts(pkgRT);
    ext_rows = hypre_TAlloc(HYPRE_Int, next, HYPRE_MEMORY_HOST);
    ext_loc = hypre_TAlloc(HYPRE_Int, next_nnz + 1, HYPRE_MEMORY_HOST);
    for (HYPRE_Int e = 0; e < next; e++) ext_ptr[elm[e] + 2]++;
    for (HYPRE_Int r = 0; r < ncR; r++) ext_ptr[r + 2] += ext_ptr[r + 1];
    for (HYPRE_Int e = 0; e < next; e++) ext_rows[ext_ptr[elm[e] + 1]++] = e;
    for (HYPRE_Int k = 0; k < next_nnz; k++)
      ext_loc[k] = (ext_bj[k] < firstP || ext_bj[k] > lastP) ? ncP + big_find(colC, nC, ext_bj[k])
                                                              : (HYPRE_Int)(ext_bj[k] - firstP);
  }

  /* ---- assemble diag/offd: symbolic pass, then values */
  {
    hypre_ParCSRMatrix *RAP = hypre_ParCSRMatrixCreate(
        comm, hypre_ParCSRMatrixGlobalNumCols(RT), hypre_ParCSRMatrixGlobalNumCols(P),
        hypre_ParCSRMatrixColStarts(RT), hypre_ParCSRMatrixColStarts(P), nC, 0, 0);
    hypre_CSRMatrix *Cd = hypre_ParCSRMatrixDiag(RAP), *Co = hypre_ParCSRMatrixOffd(RAP);
    HYPRE_Int *di = hypre_CTAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
    HYPRE_Int *oi = hypre_CTAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
    marker = hypre_TAlloc(HYPRE_Int, ncP + nC + 1, HYPRE_MEMORY_HOST);
    for (HYPRE_Int c = 0; c < ncP + nC; c++) marker[c] = -1;

#define TR_VISIT(col_expr)                                                   \
  do {                                                                       \
    HYPRE_Int c_ = (col_expr);                                               \
    if (marker[c_] != r) { marker[c_] = r; if (c_ < ncP) nd++; else no++; }  \
  } while (0)
    HYPRE_Int nd = 0, no = 0;
    for (HYPRE_Int r = 0; r < ncR; r++) {
      if (square) TR_VISIT(r);
      for (int64_t k = C->rowptr[r]; k < C->rowptr[r + 1]; k++) {
        int32_t c = C->colidx[k];
        TR_VISIT(c < ncP ? c : ncP + mapQC[c - ncP]);
      }
      for (HYPRE_Int t = ext_ptr[r]; t < ext_ptr[r + 1]; t++) {
        HYPRE_Int e = ext_rows[t];
        for (HYPRE_Int k = hypre_CSRMatrixI(C_ext)[e]; k < hypre_CSRMatrixI(C_ext)[e + 1]; k++)
          TR_VISIT(ext_loc[k]);
      }
      di[r + 1] = nd;
      oi[r + 1] = no;
    }
#undef TR_VISIT

    hypre_CSRMatrixNumNonzeros(Cd) = nd;
    hypre_CSRMatrixNumNonzeros(Co) = no;
    hypre_CSRMatrixI(Cd) = di;
    hypre_CSRMatrixI(Co) = oi;
    hypre_CSRMatrixMemoryLocation(Cd) = HYPRE_MEMORY_HOST;
    hypre_CSRMatrixMemoryLocation(Co) = HYPRE_MEMORY_HOST;
    HYPRE_Int *dj = hypre_CTAlloc(HYPRE_Int, nd, HYPRE_MEMORY_HOST);
    HYPRE_Complex *da = hypre_CTAlloc(HYPRE_Complex, nd, HYPRE_MEMORY_HOST);
    HYPRE_Int *oj = nC ? hypre_CTAlloc(HYPRE_Int, no, HYPRE_MEMORY_HOST) : NULL;
    HYPRE_Complex *oa = nC ? hypre_CTAlloc(HYPRE_Complex, no, HYPRE_MEMORY_HOST) : NULL;
    hypre_CSRMatrixJ(Cd) = dj;
    hypre_CSRMatrixData(Cd) = da;
    hypre_CSRMatrixJ(Co) = oj;
    hypre_CSRMatrixData(Co) = oa;

    for (HYPRE_Int c = 0; c < ncP + nC; c++) marker[c] = -1;
#define TR_ADD(col_expr, value)                                              \
  do {                                                                       \
    HYPRE_Int c_ = (col_expr);                                               \
    if (c_ < ncP) {                                                          \
      if (marker[c_] < di[r]) { marker[c_] = pd; dj[pd] = c_; da[pd++] = (value); } \
      else da[marker[c_]] += (value);                                        \
    } else {                                                                 \
      if (marker[c_] < oi[r]) { marker[c_] = po; oj[po] = c_ - ncP; oa[po++] = (value); } \
      else oa[marker[c_]] += (value);                                        \
    }                                                                        \
  } while (0)
    HYPRE_Int pd = 0, po = 0;
    for (HYPRE_Int r = 0; r < ncR; r++) {
      if (square) TR_ADD(r, 0.0);
      for (int64_t k = C->rowptr[r]; k < C->rowptr[r + 1]; k++) {
        int32_t c = C->colidx[k];
        TR_ADD(c < ncP ? c : ncP + mapQC[c - ncP], C->val[k]);
      }
      for (HYPRE_Int t = ext_ptr[r]; t < ext_ptr[r + 1]; t++) {
        HYPRE_Int e = ext_rows[t];
        for (HYPRE_Int k = hypre_CSRMatrixI(C_ext)[e]; k < hypre_CSRMatrixI(C_ext)[e + 1]; k++)
          TR_ADD(ext_loc[k], hypre_CSRMatrixData(C_ext)[k]);
      }
    }
#undef TR_ADD

    if (nC) {
      HYPRE_BigInt *cm = hypre_ParCSRMatrixColMapOffd(RAP);
      if (!cm) cm = hypre_ParCSRMatrixColMapOffd(RAP) = hypre_TAlloc(HYPRE_BigInt, nC, HYPRE_MEMORY_HOST);
      memcpy(cm, colC, (size_t)nC * sizeof *cm);
    }
    PHASE(TR_PH_OUT);
    if (nprocs > 1) hypre_MatvecCommPkgCreate(RAP);
    PHASE(TR_PH_COMM);

    /* keep-transpose side effect of the original: RT's blocks transposed */
    if (keepT) {
      hypre_CSRMatrix *T = NULL;
      hypre_CSRMatrixTranspose(RTd, &T, 1);
      hypre_ParCSRMatrixDiagT(RT) = T;
      if (nRo) {
        T = NULL;
        hypre_CSRMatrixTranspose(RTo, &T, 1);
        hypre_ParCSRMatrixOffdT(RT) = T;
      }
    }
    *RAP_out = RAP;
    result = 0;
  }
  PHASE(TR_PH_OUT);

cleanup:
  tilerap_tile_destroy(&Aloc); tilerap_tile_destroy(&Pfull); tilerap_tile_destroy(&Rloc);
  tilerap_tile_destroy(&Rt); tilerap_tile_destroy(&AP); tilerap_tile_destroy(&Call);
  tilerap_csr_destroy(&C);
  if (Pext) hypre_CSRMatrixDestroy(Pext);
  if (C_int) hypre_CSRMatrixDestroy(C_int);
  if (C_ext) hypre_CSRMatrixDestroy(C_ext);
  hypre_TFree(colQ, HYPRE_MEMORY_HOST);
  hypre_TFree(colC, HYPRE_MEMORY_HOST);
  hypre_TFree(mapQC, HYPRE_MEMORY_HOST);
  hypre_TFree(ext_loc, HYPRE_MEMORY_HOST);
  hypre_TFree(ext_ptr, HYPRE_MEMORY_HOST);
  hypre_TFree(ext_rows, HYPRE_MEMORY_HOST);
  hypre_TFree(marker, HYPRE_MEMORY_HOST);
  free(mapPQ);
  free(pext_col);
  return result;
}

int TileRAP_HypreGalerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                          HYPRE_Int keepT, int force_diagonal, hypre_ParCSRMatrix **RAP)
{
  return tr_hypre_galerkin(RT, A, P, keepT, force_diagonal, -1, RAP);
}
