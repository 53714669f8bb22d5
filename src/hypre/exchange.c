/* The MPI side of a product, through hypre's own helpers as the original
 * uses them: the rows of P owned elsewhere that A_offd touches
 * (hypre_ParCSRMatrixExtractBExt) before the local product, the rows of C
 * owned elsewhere sent to their owners (hypre_ExchangeExternalRows over
 * RT's comm package) after it. */
#include "galerkin_stages.h"

#include <stdlib.h>

static int big_cmp(const void *x, const void *y)
{
  HYPRE_BigInt a = *(const HYPRE_BigInt *)x, b = *(const HYPRE_BigInt *)y;
  return (a > b) - (a < b);
}

HYPRE_Int tr_big_sort_unique(HYPRE_BigInt *v, HYPRE_Int n)
{
  if (n <= 1) return n;
  qsort(v, (size_t)n, sizeof *v, big_cmp);
  HYPRE_Int w = 1;
  for (HYPRE_Int k = 1; k < n; k++)
    if (v[k] != v[w - 1]) v[w++] = v[k];
  return w;
}

HYPRE_Int tr_big_find(const HYPRE_BigInt *v, HYPRE_Int n, HYPRE_BigInt x)
{
  HYPRE_Int lo = 0, hi = n - 1;
  while (lo <= hi) {
    HYPRE_Int mid = lo + (hi - lo) / 2;
    if (v[mid] < x) lo = mid + 1;
    else if (v[mid] > x) hi = mid - 1;
    else return mid;
  }
  return -1;
}

static inline int off_rank(const tr_galerkin *g, HYPRE_BigInt col)
{
  return col < g->firstP || col > g->lastP;
}

int tr_columns_q(const HYPRE_BigInt *cmapP, HYPRE_Int nPo, const HYPRE_BigInt *bj, HYPRE_Int ext_nnz,
                 HYPRE_BigInt firstP, HYPRE_Int ncP, HYPRE_BigInt **colQ_out, HYPRE_Int *nQ_out,
                 int32_t **mapPo_out, int32_t **pext_col_out)
{
  HYPRE_BigInt *colQ = *colQ_out = malloc(((size_t)nPo + ext_nnz + 1) * sizeof *colQ);
  int32_t *mapPo = *mapPo_out = malloc(((size_t)nPo + 1) * sizeof *mapPo);
  int32_t *pext_col = *pext_col_out = malloc(((size_t)ext_nnz + 1) * sizeof *pext_col);
  if (!colQ || !mapPo || !pext_col) return TILERAP_ERR_NOMEM;
  const HYPRE_BigInt lastP = firstP + ncP - 1;
  HYPRE_Int nQ = 0;
  for (HYPRE_Int k = 0; k < nPo; k++) colQ[nQ++] = cmapP[k];
  for (HYPRE_Int k = 0; k < ext_nnz; k++)
    if (bj[k] < firstP || bj[k] > lastP) colQ[nQ++] = bj[k];
  nQ = *nQ_out = tr_big_sort_unique(colQ, nQ);
  if ((int64_t)ncP + nQ > INT32_MAX) return TILERAP_ERR_OVERFLOW;
  for (HYPRE_Int k = 0; k < nPo; k++) mapPo[k] = (int32_t)tr_big_find(colQ, nQ, cmapP[k]);
#pragma omp parallel for schedule(static) if (ext_nnz > 16 * TR_PAR_ROWS)
  for (HYPRE_Int k = 0; k < ext_nnz; k++)
    pext_col[k] = (bj[k] < firstP || bj[k] > lastP) ? (int32_t)(ncP + tr_big_find(colQ, nQ, bj[k]))
                                                    : (int32_t)(bj[k] - firstP);
  return 0;
}

int tr_exchange_p_rows(tr_galerkin *g)
{
  if (g->nprocs > 1) {
    if (!hypre_ParCSRMatrixCommPkg(g->RT)) hypre_MatvecCommPkgCreate(g->RT);
    g->pkgRT = hypre_ParCSRMatrixCommPkg(g->RT);
    g->Pext = hypre_ParCSRMatrixExtractBExt(g->P, g->A, 1);
  }
  hypre_CSRMatrix *Pext = g->Pext;
  const HYPRE_Int ext_nnz = g->ext_nnz = Pext ? hypre_CSRMatrixI(Pext)[hypre_CSRMatrixNumRows(Pext)] : 0;
  tr_galerkin_phase(g, TR_PH_COMM);
  if (Pext && hypre_CSRMatrixNumRows(Pext) != g->nAo) return tr_galerkin_refuse(g, TILERAP_HYPRE_FWD_SHAPE);

  /* Q: P's offd columns and the off-rank columns of P_ext */
  const int err = tr_columns_q(hypre_ParCSRMatrixColMapOffd(g->P), g->nPo, Pext ? hypre_CSRMatrixBigJ(Pext) : NULL,
                               ext_nnz, g->firstP, g->ncP, &g->colQ, &g->nQ, &g->mapPQ, &g->pext_col);
  if (err == TILERAP_ERR_OVERFLOW) return tr_galerkin_refuse(g, TILERAP_HYPRE_FWD_SIZE);
  g->rrow = malloc(((size_t)g->nRo + 1) * sizeof *g->rrow);
  if (err || !g->rrow) return tr_galerkin_engine_failed(g, TILERAP_ERR_NOMEM);
  /* galerkin: RT's offd columns are P's, their rows of C_all are Q rows */
  for (HYPRE_Int k = 0; k < g->nRo; k++)
    g->rrow[k] = g->galerkin ? (int64_t)g->ncP + g->mapPQ[k] : (int64_t)g->ncR + k;
  return 0;
}

/* C_int: this rank's contributions to rows owned elsewhere, global columns. */
static void send_rows(tr_galerkin *g)
{
  const tilerap_csr *C = g->C;
  const HYPRE_Int nRo = g->nRo, ncP = g->ncP;
  HYPRE_Int nint = 0;
  for (HYPRE_Int r = 0; r < nRo; r++) nint += (HYPRE_Int)(C->rowptr[g->rrow[r] + 1] - C->rowptr[g->rrow[r]]);
  g->C_int = hypre_CSRMatrixCreate(nRo, hypre_ParCSRMatrixGlobalNumCols(g->P), nint);
  hypre_CSRMatrixInitialize_v2(g->C_int, 1, HYPRE_MEMORY_HOST);
  HYPRE_Int *ii = hypre_CSRMatrixI(g->C_int);
  HYPRE_BigInt *bj = hypre_CSRMatrixBigJ(g->C_int);
  HYPRE_Complex *da = hypre_CSRMatrixData(g->C_int);
  HYPRE_Int q = 0;
  ii[0] = 0;
  for (HYPRE_Int r = 0; r < nRo; r++) {
    for (int64_t k = C->rowptr[g->rrow[r]]; k < C->rowptr[g->rrow[r] + 1]; k++, q++) {
      int32_t c = C->colidx[k];
      bj[q] = c < ncP ? g->firstP + c : g->colQ[c - ncP];
      da[q] = C->val[k];
    }
    ii[r + 1] = q;
  }
  /* the owners emit received rows in stored order: send them in hypre's */
  if (g->order_hypre) tr_order_send_rows(g, ii, bj, da);
}

void tr_exchange_c_rows(tr_galerkin *g)
{
  if (g->nprocs > 1) {
    send_rows(g);
    void *request = NULL;
    tr_galerkin_phase(g, TR_PH_OUT);
    hypre_ExchangeExternalRowsInit(g->C_int, g->pkgRT, &request);
    g->C_ext = hypre_ExchangeExternalRowsWait(request);
    tr_galerkin_phase(g, TR_PH_COMM);
  }
  hypre_CSRMatrix *E = g->C_ext;
  g->next = E ? hypre_CSRMatrixNumRows(E) : 0;
  g->next_nnz = E ? hypre_CSRMatrixI(E)[g->next] : 0;
  g->ext_bj = E ? hypre_CSRMatrixBigJ(E) : NULL;
  g->ext_i = E ? hypre_CSRMatrixI(E) : NULL;
  g->ext_a = E ? hypre_CSRMatrixData(E) : NULL;
}

void tr_exchange_index_received(tr_galerkin *g)
{
  const HYPRE_Int next = g->next, next_nnz = g->next_nnz, ncR = g->ncR;
  if (next <= 0) return;
  /* received row e adds to local row send_map_elmts[e] of RT */
  const HYPRE_Int *elm = hypre_ParCSRCommPkgSendMapElmts(g->pkgRT);
  HYPRE_Int *ptr = g->ext_ptr = hypre_CTAlloc(HYPRE_Int, ncR + 2, HYPRE_MEMORY_HOST);
  g->ext_rows = hypre_TAlloc(HYPRE_Int, next, HYPRE_MEMORY_HOST);
  g->ext_loc = hypre_TAlloc(HYPRE_Int, next_nnz + 1, HYPRE_MEMORY_HOST);
  for (HYPRE_Int e = 0; e < next; e++) ptr[elm[e] + 2]++;
  for (HYPRE_Int r = 0; r < ncR; r++) ptr[r + 2] += ptr[r + 1];
  for (HYPRE_Int e = 0; e < next; e++) g->ext_rows[ptr[elm[e] + 1]++] = e;
  for (HYPRE_Int k = 0; k < next_nnz; k++)
    g->ext_loc[k] = off_rank(g, g->ext_bj[k]) ? g->ncP + tr_big_find(g->colC, g->nC, g->ext_bj[k])
                                              : (HYPRE_Int)(g->ext_bj[k] - g->firstP);
}
