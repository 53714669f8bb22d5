/* hypre's ParCSR C from the local product: what
 * hypre_BoomerAMGBuildCoarseOperatorKT leaves.  Same structural pattern
 * (entries are never dropped for being zero), diagonal first in each row
 * when the operator is square, ascending col_map_offd without unused
 * columns, arrays from hypre's allocator, comm package, and the transposes
 * of RT's blocks kept on RT when keepT is set. */
#include "galerkin_stages.h"

#include <stdlib.h>
#include <string.h>

void tr_assembly_offd_columns(tr_galerkin *g)
{
  const HYPRE_Int nQ = g->nQ, ncP = g->ncP, next_nnz = g->next_nnz;
  if (!nQ && !next_nnz) return;
  char *usedQ = calloc((size_t)nQ + 1, 1);
  HYPRE_BigInt *colC = g->colC = hypre_TAlloc(HYPRE_BigInt, nQ + next_nnz + 1, HYPRE_MEMORY_HOST);
  HYPRE_Int nC = 0;
  if (nQ)
    for (int64_t k = 0; k < g->C->rowptr[g->ncR]; k++)
      if (g->C->colidx[k] >= ncP) usedQ[g->C->colidx[k] - ncP] = 1;
  for (HYPRE_Int q = 0; q < nQ; q++)
    if (usedQ[q]) colC[nC++] = g->colQ[q];
  for (HYPRE_Int k = 0; k < next_nnz; k++)
    if (g->ext_bj[k] < g->firstP || g->ext_bj[k] > g->lastP) colC[nC++] = g->ext_bj[k];
  nC = g->nC = tr_big_sort_unique(colC, nC);
  g->mapQC = hypre_TAlloc(HYPRE_Int, nQ + 1, HYPRE_MEMORY_HOST);
  for (HYPRE_Int q = 0; q < nQ; q++) g->mapQC[q] = usedQ[q] ? tr_big_find(colC, nC, g->colQ[q]) : -1;
  free(usedQ);
}

/* The diag block already in hypre's arrays (straight from the device); no offd. */
static void blocks_straight(tr_galerkin *g, hypre_CSRMatrix *Cd, hypre_CSRMatrix *Co)
{
  HYPRE_Int *di = g->s_di;
  HYPRE_Int *oi = hypre_CTAlloc(HYPRE_Int, g->ncR + 1, HYPRE_MEMORY_HOST);
  hypre_CSRMatrixNumNonzeros(Cd) = di[g->ncR];
  hypre_CSRMatrixNumNonzeros(Co) = 0;
  hypre_CSRMatrixI(Cd) = di; hypre_CSRMatrixJ(Cd) = g->s_dj; hypre_CSRMatrixData(Cd) = g->s_da;
  hypre_CSRMatrixI(Co) = oi; hypre_CSRMatrixJ(Co) = NULL; hypre_CSRMatrixData(Co) = NULL;
  hypre_CSRMatrixMemoryLocation(Cd) = HYPRE_MEMORY_HOST;
  hypre_CSRMatrixMemoryLocation(Co) = HYPRE_MEMORY_HOST;
  g->s_di = g->s_dj = NULL; g->s_da = NULL; /* now RAP's */
}

/* Rows in parallel: counts, scan, fill.  Rows of C are sorted and unique,
 * so a row without received contributions maps straight through (diagonal
 * moved first); rows with received ones merge them with a per-thread
 * marker (positions grow within a thread's contiguous block of rows, so
 * "marker < row start" means unseen). */
static void blocks_from_c(tr_galerkin *g, hypre_CSRMatrix *Cd, hypre_CSRMatrix *Co)
{
  const HYPRE_Int ncR = g->ncR, ncP = g->ncP, nC = g->nC, nmark = ncP + nC;
  const int square = g->square;
  const HYPRE_Int *mapQC = g->mapQC, *ext_ptr = g->ext_ptr, *ext_rows = g->ext_rows, *ext_loc = g->ext_loc;
  const HYPRE_Int *ext_i = g->ext_i;
  const HYPRE_Complex *ext_a = g->ext_a;
  const tilerap_csr *C = g->C;
  HYPRE_Int *di = hypre_TAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
  HYPRE_Int *oi = hypre_TAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
  const int64_t *crp = C->rowptr;
  const int32_t *ccol = C->colidx;
  const double *cval = C->val;
  /* one marker per thread, only when rows receive contributions */
  HYPRE_Int *marks = ext_ptr ? hypre_TAlloc(HYPRE_Int, (size_t)tr_max_threads() * ((size_t)nmark + 1),
                                           HYPRE_MEMORY_HOST) : NULL;
  di[0] = oi[0] = 0;

#pragma omp parallel if (ncR > TR_PAR_ROWS)
  {
    HYPRE_Int *mk = marks ? marks + (size_t)tr_thread() * ((size_t)nmark + 1) : NULL;
    if (mk) for (HYPRE_Int c = 0; c < nmark; c++) mk[c] = -1;
#pragma omp for schedule(static)
    for (HYPRE_Int r = 0; r < ncR; r++) {
      HYPRE_Int nd = 0, no = 0;
      if (ext_ptr && ext_ptr[r + 1] > ext_ptr[r]) {
#define TR_VISIT(c_)                                                         \
  do {                                                                       \
    HYPRE_Int cc_ = (c_);                                                    \
    if (mk[cc_] != r) { mk[cc_] = r; if (cc_ < ncP) nd++; else no++; }       \
  } while (0)
        if (square) TR_VISIT(r);
        for (int64_t k = crp[r]; k < crp[r + 1]; k++)
          TR_VISIT(ccol[k] < ncP ? ccol[k] : ncP + mapQC[ccol[k] - ncP]);
        for (HYPRE_Int t = ext_ptr[r]; t < ext_ptr[r + 1]; t++)
          for (HYPRE_Int k = ext_i[ext_rows[t]]; k < ext_i[ext_rows[t] + 1]; k++) TR_VISIT(ext_loc[k]);
#undef TR_VISIT
      } else {
        int has_diag = 0;
        for (int64_t k = crp[r]; k < crp[r + 1]; k++) {
          if (ccol[k] < ncP) { nd++; has_diag |= ccol[k] == r; }
          else no++;
        }
        if (square && !has_diag) nd++;
      }
      di[r + 1] = nd;
      oi[r + 1] = no;
    }
  }
  for (HYPRE_Int r = 0; r < ncR; r++) { di[r + 1] += di[r]; oi[r + 1] += oi[r]; }
  const HYPRE_Int nd = di[ncR], no = oi[ncR];

  hypre_CSRMatrixNumNonzeros(Cd) = nd;
  hypre_CSRMatrixNumNonzeros(Co) = no;
  hypre_CSRMatrixI(Cd) = di;
  hypre_CSRMatrixI(Co) = oi;
  hypre_CSRMatrixMemoryLocation(Cd) = HYPRE_MEMORY_HOST;
  hypre_CSRMatrixMemoryLocation(Co) = HYPRE_MEMORY_HOST;
  HYPRE_Int *dj = hypre_TAlloc(HYPRE_Int, nd, HYPRE_MEMORY_HOST);
  HYPRE_Complex *da = hypre_TAlloc(HYPRE_Complex, nd, HYPRE_MEMORY_HOST);
  HYPRE_Int *oj = nC ? hypre_TAlloc(HYPRE_Int, no, HYPRE_MEMORY_HOST) : NULL;
  HYPRE_Complex *oa = nC ? hypre_TAlloc(HYPRE_Complex, no, HYPRE_MEMORY_HOST) : NULL;
  hypre_CSRMatrixJ(Cd) = dj;
  hypre_CSRMatrixData(Cd) = da;
  hypre_CSRMatrixJ(Co) = oj;
  hypre_CSRMatrixData(Co) = oa;

#pragma omp parallel if (ncR > TR_PAR_ROWS)
  {
    HYPRE_Int *mk = marks ? marks + (size_t)tr_thread() * ((size_t)nmark + 1) : NULL;
    if (mk) for (HYPRE_Int c = 0; c < nmark; c++) mk[c] = -1;
#pragma omp for schedule(static)
    for (HYPRE_Int r = 0; r < ncR; r++) {
      HYPRE_Int pd = di[r], po = oi[r];
      if (ext_ptr && ext_ptr[r + 1] > ext_ptr[r]) {
#define TR_ADD(c_, value)                                                                    \
  do {                                                                                       \
    HYPRE_Int cc_ = (c_);                                                                    \
    if (cc_ < ncP) {                                                                         \
      if (mk[cc_] < di[r]) { mk[cc_] = pd; dj[pd] = cc_; da[pd++] = (value); }               \
      else da[mk[cc_]] += (value);                                                           \
    } else {                                                                                 \
      if (mk[cc_] < oi[r]) { mk[cc_] = po; oj[po] = cc_ - ncP; oa[po++] = (value); }         \
      else oa[mk[cc_]] += (value);                                                           \
    }                                                                                        \
  } while (0)
        if (square) TR_ADD(r, 0.0);
        for (int64_t k = crp[r]; k < crp[r + 1]; k++)
          TR_ADD(ccol[k] < ncP ? ccol[k] : ncP + mapQC[ccol[k] - ncP], cval[k]);
        for (HYPRE_Int t = ext_ptr[r]; t < ext_ptr[r + 1]; t++)
          for (HYPRE_Int k = ext_i[ext_rows[t]]; k < ext_i[ext_rows[t] + 1]; k++)
            TR_ADD(ext_loc[k], ext_a[k]);
#undef TR_ADD
      } else {
        if (square) { dj[pd] = r; da[pd++] = 0.0; }
        for (int64_t k = crp[r]; k < crp[r + 1]; k++) {
          int32_t c = ccol[k];
          if (c >= ncP) { oj[po] = mapQC[c - ncP]; oa[po++] = cval[k]; }
          else if (square && c == r) da[di[r]] = cval[k];
          else { dj[pd] = c; da[pd++] = cval[k]; }
        }
      }
    }
  }
  hypre_TFree(marks, HYPRE_MEMORY_HOST);
}

hypre_ParCSRMatrix *tr_assembly_blocks(tr_galerkin *g)
{
  hypre_ParCSRMatrix *RAP = hypre_ParCSRMatrixCreate(
      g->comm, hypre_ParCSRMatrixGlobalNumCols(g->RT), hypre_ParCSRMatrixGlobalNumCols(g->P),
      hypre_ParCSRMatrixColStarts(g->RT), hypre_ParCSRMatrixColStarts(g->P), g->nC, 0, 0);
  if (g->straight) blocks_straight(g, hypre_ParCSRMatrixDiag(RAP), hypre_ParCSRMatrixOffd(RAP));
  else blocks_from_c(g, hypre_ParCSRMatrixDiag(RAP), hypre_ParCSRMatrixOffd(RAP));
  return RAP;
}

void tr_assembly_finish(tr_galerkin *g, hypre_ParCSRMatrix *RAP)
{
  if (g->nC) {
    HYPRE_BigInt *cm = hypre_ParCSRMatrixColMapOffd(RAP);
    if (!cm) cm = hypre_ParCSRMatrixColMapOffd(RAP) = hypre_TAlloc(HYPRE_BigInt, g->nC, HYPRE_MEMORY_HOST);
    memcpy(cm, g->colC, (size_t)g->nC * sizeof *cm);
  }
  tr_galerkin_phase(g, TR_PH_OUT);
  if (g->nprocs > 1) hypre_MatvecCommPkgCreate(RAP);
  tr_galerkin_phase(g, TR_PH_COMM);

  /* keep-transpose side effect of the original: RT's blocks transposed */
  if (g->keepT) {
    hypre_CSRMatrix *T = NULL;
    hypre_CSRMatrixTranspose(g->RTd, &T, 1);
    hypre_ParCSRMatrixDiagT(g->RT) = T;
    if (g->nRo) {
      T = NULL;
      hypre_CSRMatrixTranspose(g->RTo, &T, 1);
      hypre_ParCSRMatrixOffdT(g->RT) = T;
    }
  }
}

void tr_assembly_free(tr_galerkin *g)
{
  hypre_TFree(g->colC, HYPRE_MEMORY_HOST);
  hypre_TFree(g->mapQC, HYPRE_MEMORY_HOST);
}
