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
#include "tuning.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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

static int same_csr(hypre_CSRMatrix *X, hypre_CSRMatrix *Y)
{
  HYPRE_Int m = hypre_CSRMatrixNumRows(X), nz = hypre_CSRMatrixNumNonzeros(X);
  if (m != hypre_CSRMatrixNumRows(Y) || hypre_CSRMatrixNumCols(X) != hypre_CSRMatrixNumCols(Y) ||
      nz != hypre_CSRMatrixNumNonzeros(Y))
    return 0;
  if (!hypre_CSRMatrixI(X) || !hypre_CSRMatrixI(Y)) return hypre_CSRMatrixI(X) == hypre_CSRMatrixI(Y);
  if (memcmp(hypre_CSRMatrixI(X), hypre_CSRMatrixI(Y), ((size_t)m + 1) * sizeof(HYPRE_Int))) return 0;
  nz = hypre_CSRMatrixI(X)[m];
  if (nz == 0) return 1;
  return !memcmp(hypre_CSRMatrixJ(X), hypre_CSRMatrixJ(Y), (size_t)nz * sizeof(HYPRE_Int)) &&
         !memcmp(hypre_CSRMatrixData(X), hypre_CSRMatrixData(Y), (size_t)nz * sizeof(HYPRE_Complex));
}

/* RT is P (BoomerAMG's Galerkin case: the same object, or equal blocks and
 * column maps), so that C = P^T A P can run as one Galerkin plan. */
static int rt_is_p(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *P)
{
  if (RT == P) return 1;
  if (hypre_ParCSRMatrixGlobalNumRows(RT) != hypre_ParCSRMatrixGlobalNumRows(P) ||
      hypre_ParCSRMatrixGlobalNumCols(RT) != hypre_ParCSRMatrixGlobalNumCols(P) ||
      hypre_ParCSRMatrixFirstColDiag(RT) != hypre_ParCSRMatrixFirstColDiag(P))
    return 0;
  hypre_CSRMatrix *RTo = hypre_ParCSRMatrixOffd(RT), *Po = hypre_ParCSRMatrixOffd(P);
  if (!same_csr(hypre_ParCSRMatrixDiag(RT), hypre_ParCSRMatrixDiag(P)) || !same_csr(RTo, Po)) return 0;
  HYPRE_Int no = hypre_CSRMatrixNumCols(Po);
  return no == 0 || !memcmp(hypre_ParCSRMatrixColMapOffd(RT), hypre_ParCSRMatrixColMapOffd(P),
                            (size_t)no * sizeof(HYPRE_BigInt));
}

/* Below this many rows, parallel regions cost more than they save. */
#define TR_PAR_ROWS 4096

static int tr_max_threads(void)
{
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static int tr_team_size(void)
{
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

static int tr_thread(void)
{
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* ---- hypre's order of the entries in a row of C.
 * hypre_BoomerAMGBuildCoarseOperatorKT emits row ic of each block (diag,
 * offd) in first-encounter order of its traversal: the diagonal, the
 * received rows (ascending position in RT's send map, each in the order
 * its sender stored it: see tr_order_send_rows), then the row of R*A is
 * listed first (fine rows i1 of column ic of RT_diag ascending; the new
 * i2 of A_offd's row i1 into one list, of A_diag's row i1 into another),
 * and the products follow list by list: the A_offd list (P_ext's row i2,
 * local columns then others), then the A_diag list (P_diag's row i2, then
 * P_offd's).  BoomerAMG's coarsening and interpolation break ties by
 * that order, so sorted rows give other (equally valid) hierarchies; with
 * this order they are hypre's own (values agree to round-off, which was
 * seen not to matter).  Rows are rewritten in place after assembly: values
 * are scattered, the traversal emits them; a row whose traversal would not
 * reproduce its entries exactly (not expected) stays sorted. */
typedef struct {
  HYPRE_Int ncR, ncP, nAc, nAo;
  int square;
  hypre_CSRMatrix *RTd, *Ad, *Ao, *Pd, *Po, *Pext;
  const int32_t *pext_col, *mapPQ;
  const HYPRE_Int *mapQC, *ext_ptr, *ext_rows, *ext_i, *ext_loc;
  HYPRE_Int *di, *dj;
  HYPRE_Complex *da;
  HYPRE_Int *oi, *oj;
  HYPRE_Complex *oa;
  HYPRE_Int nmark;
} tr_order_ctx;

/* the tuning table's TILERAP_HYPRE_ORDER: hypre (default) or sorted */
static int tr_hypre_order_hypre(void) { return tr_knob_int(TR_KNOB_HYPRE_ORDER) == 0; }

/* TILERAP_HYPRE_TEST_PARALLEL=1: the parallel paths of the row-order pass
 * at every size (tests: their problems are below the thresholds). */
static int tr_test_parallel(void) { return tr_knob_int(TR_KNOB_HYPRE_TEST_PARALLEL); }

/* Columns of block M (ncols of them) as lists of its rows, rows ascending
 * (a counting sort): column c holds rows (*rows)[(*ptr)[c] .. (*ptr)[c+1]).
 * The walks below visit column ic of RT this way.  Large blocks are
 * sorted by up to nthreads threads, each counting and then placing a
 * contiguous range of rows (so rows stay ascending within a column); a
 * serial pass was 15 ms of the row-order pass on a 1M-row P.
 * 0, or 1 out of memory. */
static int tr_columns_as_rows(hypre_CSRMatrix *M, HYPRE_Int ncols, int nthreads, HYPRE_Int **ptr, HYPRE_Int **rows)
{
  const HYPRE_Int nf = hypre_CSRMatrixNumRows(M);
  const HYPRE_Int *mi = hypre_CSRMatrixI(M), *mj = hypre_CSRMatrixJ(M);
  const HYPRE_Int nz = mi ? mi[nf] : 0;
  HYPRE_Int *tp = calloc((size_t)ncols + 2, sizeof *tp), *tr = malloc(((size_t)nz + 1) * sizeof *tr);
  *ptr = tp;
  *rows = tr;
  if (!tp || !tr) return 1;
  int nt = nthreads < 1 ? 1 : nthreads;
  if (!nz || (!tr_test_parallel() && (nz < 65536 || (int64_t)nt * ncols > 16 * (int64_t)nz)))
    nt = 1; /* small, or counts larger than the block */
  HYPRE_Int *cnt = nt > 1 ? calloc((size_t)nt * ((size_t)ncols + 1), sizeof *cnt) : NULL;
  if (nt > 1 && !cnt) nt = 1;
  if (nt == 1) {
    for (HYPRE_Int k = 0; k < nz; k++) tp[mj[k] + 2]++;
    for (HYPRE_Int c = 0; c < ncols; c++) tp[c + 2] += tp[c + 1];
    for (HYPRE_Int i = 0; i < nf && nz; i++)
      for (HYPRE_Int k = mi[i]; k < mi[i + 1]; k++) tr[tp[mj[k] + 1]++] = i;
    return 0;
  }
  /* cnt[id][c]: entries of column c in thread id's rows, then their first slot */
#pragma omp parallel num_threads(nt)
  {
    const int id = tr_thread(), team = tr_team_size();
    const HYPRE_Int r0 = (HYPRE_Int)((int64_t)nf * id / team), r1 = (HYPRE_Int)((int64_t)nf * (id + 1) / team);
    HYPRE_Int *my = cnt + (size_t)id * ((size_t)ncols + 1);
    for (HYPRE_Int k = mi[r0]; k < mi[r1]; k++) my[mj[k]]++;
#pragma omp barrier
#pragma omp for schedule(static)
    for (HYPRE_Int c = 0; c < ncols; c++) {
      HYPRE_Int sum = 0;
      for (int t = 0; t < team; t++) sum += cnt[(size_t)t * ((size_t)ncols + 1) + c];
      tp[c + 1] = sum;
    }
#pragma omp single
    for (HYPRE_Int c = 0; c < ncols; c++) tp[c + 1] += tp[c];
#pragma omp for schedule(static)
    for (HYPRE_Int c = 0; c < ncols; c++) {
      HYPRE_Int at = tp[c];
      for (int t = 0; t < team; t++) {
        HYPRE_Int *x = cnt + (size_t)t * ((size_t)ncols + 1) + c, n = *x;
        *x = at;
        at += n;
      }
    }
    for (HYPRE_Int i = r0; i < r1; i++)
      for (HYPRE_Int k = mi[i]; k < mi[i + 1]; k++) tr[my[mj[k]]++] = i;
  }
  free(cnt);
  return 0;
}

static void tr_reorder_rows_hypre(const tr_order_ctx *o)
{
  const HYPRE_Int ncR = o->ncR, ncP = o->ncP, nAc = o->nAc, nmark = o->nmark;
  HYPRE_Int *tp, *tr;
  if (tr_columns_as_rows(o->RTd, ncR, tr_max_threads(), &tp, &tr)) { free(tp); free(tr); return; } /* rows stay sorted */
  HYPRE_Int maxd = 0, maxo = 0;
  for (HYPRE_Int r = 0; r < ncR; r++) {
    if (o->di[r + 1] - o->di[r] > maxd) maxd = o->di[r + 1] - o->di[r];
    if (o->oi[r + 1] - o->oi[r] > maxo) maxo = o->oi[r + 1] - o->oi[r];
  }
  const HYPRE_Int *adi = hypre_CSRMatrixI(o->Ad), *adj = hypre_CSRMatrixJ(o->Ad);
  const HYPRE_Int *aoi = o->nAo ? hypre_CSRMatrixI(o->Ao) : NULL, *aoj = o->nAo ? hypre_CSRMatrixJ(o->Ao) : NULL;
  const HYPRE_Int *pdi = hypre_CSRMatrixI(o->Pd), *pdj = hypre_CSRMatrixJ(o->Pd);
  const int has_po = hypre_CSRMatrixNumCols(o->Po) > 0 && hypre_CSRMatrixI(o->Po);
  const HYPRE_Int *poi = has_po ? hypre_CSRMatrixI(o->Po) : NULL, *poj = has_po ? hypre_CSRMatrixJ(o->Po) : NULL;
  const HYPRE_Int *xi = o->Pext ? hypre_CSRMatrixI(o->Pext) : NULL;

  /* Markers hold row + 1 (0: never seen) and come from calloc: a thread
   * touches only the pages of the columns its rows meet, where filling
   * full-length markers with -1 in every thread cost more than the pass. */
#pragma omp parallel if (ncR > TR_PAR_ROWS)
  {
    double *vv = malloc(((size_t)nmark + 1) * sizeof *vv);
    HYPRE_Int *have = calloc((size_t)nmark + 1, sizeof *have);
    HYPRE_Int *emit = calloc((size_t)nmark + 1, sizeof *emit);
    HYPRE_Int *amark = calloc((size_t)nAc + o->nAo + 1, sizeof *amark);
    HYPRE_Int *ra_d = malloc(((size_t)nAc + 1) * sizeof *ra_d), *ra_o = malloc(((size_t)o->nAo + 1) * sizeof *ra_o);
    HYPRE_Int *tj = malloc(((size_t)maxd + maxo + 1) * sizeof *tj);
    HYPRE_Complex *ta = malloc(((size_t)maxd + maxo + 1) * sizeof *ta);
    const int ok = vv && have && emit && amark && tj && ta && ra_d && ra_o;
#pragma omp for schedule(dynamic, 256)
    for (HYPRE_Int r = 0; r < ncR; r++) {
      if (!ok) continue;
      const HYPRE_Int d0 = o->di[r], d1 = o->di[r + 1], f0 = o->oi[r], f1 = o->oi[r + 1], r1 = r + 1;
      for (HYPRE_Int k = d0; k < d1; k++) { vv[o->dj[k]] = o->da[k]; have[o->dj[k]] = r1; }
      for (HYPRE_Int k = f0; k < f1; k++) { vv[ncP + o->oj[k]] = o->oa[k]; have[ncP + o->oj[k]] = r1; }
      HYPRE_Int nd = 0, no = 0, *toj = tj + (d1 - d0);
      HYPRE_Complex *toa = ta + (d1 - d0);
      int bad = 0;
#define EMIT(c_)                                                                    do {                                                                                HYPRE_Int cc_ = (c_);                                                             if (cc_ < 0 || have[cc_] != r1) bad = 1;                                           else if (emit[cc_] != r1) {                                                          emit[cc_] = r1;                                                                    if (cc_ < ncP) { tj[nd] = cc_; ta[nd++] = vv[cc_]; }                              else { toj[no] = cc_ - ncP; toa[no++] = vv[cc_]; }                              }                                                                               } while (0)
      if (o->square) EMIT(r);
      if (o->ext_ptr)
        for (HYPRE_Int t = o->ext_ptr[r]; t < o->ext_ptr[r + 1]; t++)
          for (HYPRE_Int k = o->ext_i[o->ext_rows[t]]; k < o->ext_i[o->ext_rows[t] + 1]; k++)
            EMIT(o->ext_loc[k]);
      /* R*A row first (i1 ascending; A_offd's then A_diag's new i2 into two
       * lists), then the A_offd-driven products, then the A_diag-driven
       * ones: hypre's numeric pass does not interleave them per i1 */
      HYPRE_Int nro = 0, nrd = 0;
      for (HYPRE_Int t = tp[r]; t < tp[r + 1]; t++) {
        const HYPRE_Int i1 = tr[t];
        if (aoi)
          for (HYPRE_Int k = aoi[i1]; k < aoi[i1 + 1]; k++) {
            const HYPRE_Int i2 = aoj[k];
            if (amark[nAc + i2] == r1) continue;
            amark[nAc + i2] = r1;
            ra_o[nro++] = i2;
          }
        for (HYPRE_Int k = adi[i1]; k < adi[i1 + 1]; k++) {
          const HYPRE_Int i2 = adj[k];
          if (amark[i2] == r1) continue;
          amark[i2] = r1;
          ra_d[nrd++] = i2;
        }
      }
      if (nro && !xi) bad = 1;
      for (HYPRE_Int u = 0; u < nro && !bad; u++) {
        const HYPRE_Int i2 = ra_o[u];
        /* P_ext's local columns first, then the others (hypre splits them) */
        for (HYPRE_Int q = xi[i2]; q < xi[i2 + 1]; q++)
          if (o->pext_col[q] < ncP) EMIT(o->pext_col[q]);
        for (HYPRE_Int q = xi[i2]; q < xi[i2 + 1]; q++)
          if (o->pext_col[q] >= ncP) {
            HYPRE_Int m = o->mapQC ? o->mapQC[o->pext_col[q] - ncP] : -1;
            EMIT(m < 0 ? -1 : ncP + m);
          }
      }
      for (HYPRE_Int u = 0; u < nrd && !bad; u++) {
        const HYPRE_Int i2 = ra_d[u];
        for (HYPRE_Int q = pdi[i2]; q < pdi[i2 + 1]; q++) EMIT(pdj[q]);
        if (poi)
          for (HYPRE_Int q = poi[i2]; q < poi[i2 + 1]; q++) {
            HYPRE_Int m = o->mapQC ? o->mapQC[o->mapPQ[poj[q]]] : -1;
            EMIT(m < 0 ? -1 : ncP + m);
          }
      }
#undef EMIT
      if (bad || nd != d1 - d0 || no != f1 - f0) { continue; }
      memcpy(o->dj + d0, tj, (size_t)nd * sizeof *tj);
      memcpy(o->da + d0, ta, (size_t)nd * sizeof *ta);
      if (no) {
        memcpy(o->oj + f0, toj, (size_t)no * sizeof *toj);
        memcpy(o->oa + f0, toa, (size_t)no * sizeof *toa);
      }
    }
    free(vv); free(have); free(emit); free(amark); free(tj); free(ta); free(ra_d); free(ra_o);
  }
  free(tp);
  free(tr);
}

/* ---- order of the rows sent to other ranks.  hypre's owner walks a
 * received row in its stored order, and the sender stores its rows (RAP_int)
 * in first-encounter order of: each fine row i1 of column r of RT_offd
 * (ascending), then A_offd's row i1 (each new i2: P_ext's row, this rank's
 * columns first, then the others) and A_diag's row i1 (each new i2: P_diag's
 * row, then P_offd's), interleaved per i1.  Rows whose walk does not give
 * exactly their entries stay sorted. */
typedef struct {
  hypre_CSRMatrix *RTo, *Ad, *Ao, *Pd, *Po, *Pext;
  const int32_t *pext_col, *mapPQ;
  HYPRE_Int ncP, nAc, nAo, nQ;
} tr_send_order_ctx;

static void tr_order_send_rows(const tr_send_order_ctx *o, const tilerap_csr *C, const int64_t *rrow, HYPRE_Int nRo,
                               const HYPRE_Int *ii, HYPRE_BigInt *bj, HYPRE_Complex *da, HYPRE_BigInt firstP,
                               const HYPRE_BigInt *colQ)
{
  const HYPRE_Int ncP = o->ncP, nAc = o->nAc, nAo = o->nAo, ncol = ncP + o->nQ;
  if (nRo <= 0 || !hypre_CSRMatrixI(o->RTo)) return;
  const HYPRE_Int *adi = hypre_CSRMatrixI(o->Ad), *adj = hypre_CSRMatrixJ(o->Ad);
  const HYPRE_Int *aoi = nAo ? hypre_CSRMatrixI(o->Ao) : NULL, *aoj = nAo ? hypre_CSRMatrixJ(o->Ao) : NULL;
  const HYPRE_Int *pdi = hypre_CSRMatrixI(o->Pd), *pdj = hypre_CSRMatrixJ(o->Pd);
  const int has_po = hypre_CSRMatrixNumCols(o->Po) > 0 && hypre_CSRMatrixI(o->Po);
  const HYPRE_Int *poi = has_po ? hypre_CSRMatrixI(o->Po) : NULL, *poj = has_po ? hypre_CSRMatrixJ(o->Po) : NULL;
  const HYPRE_Int *xi = o->Pext ? hypre_CSRMatrixI(o->Pext) : NULL;
  HYPRE_Int *tp, *tr;
  const int nomem = tr_columns_as_rows(o->RTo, nRo, 1, &tp, &tr);
  HYPRE_Int *amark = calloc((size_t)nAc + nAo + 1, sizeof *amark), *have = calloc((size_t)ncol + 1, sizeof *have);
  HYPRE_Int *emit = calloc((size_t)ncol + 1, sizeof *emit), *ord = NULL;
  HYPRE_Complex *vv = malloc(((size_t)ncol + 1) * sizeof *vv);
  HYPRE_Int maxlen = 0;
  for (HYPRE_Int r = 0; r < nRo; r++) maxlen = ii[r + 1] - ii[r] > maxlen ? ii[r + 1] - ii[r] : maxlen;
  ord = malloc(((size_t)maxlen + 1) * sizeof *ord);
  if (nomem || !amark || !have || !emit || !vv || !ord) goto done;
  for (HYPRE_Int r = 0; r < nRo; r++) {
    const HYPRE_Int st = r + 1, len = ii[r + 1] - ii[r];
    const int64_t c0 = C->rowptr[rrow[r]];
    for (HYPRE_Int k = 0; k < len; k++) { have[C->colidx[c0 + k]] = st; vv[C->colidx[c0 + k]] = C->val[c0 + k]; }
    HYPRE_Int n = 0;
    int bad = 0;
#define TR_SEND_EMIT(c_)                                                  \
  do {                                                                    \
    HYPRE_Int cc_ = (c_);                                                 \
    if (cc_ < 0 || cc_ >= ncol || have[cc_] != st) bad = 1;               \
    else if (emit[cc_] != st) {                                           \
      emit[cc_] = st;                                                     \
      if (n < len) ord[n] = cc_;                                          \
      n++;                                                                \
    }                                                                     \
  } while (0)
    for (HYPRE_Int t = tp[r]; t < tp[r + 1] && !bad; t++) {
      const HYPRE_Int i1 = tr[t];
      if (aoi)
        for (HYPRE_Int k = aoi[i1]; k < aoi[i1 + 1] && !bad; k++) {
          const HYPRE_Int i2 = aoj[k];
          if (amark[nAc + i2] == st) continue;
          amark[nAc + i2] = st;
          if (!xi) { bad = 1; break; }
          for (HYPRE_Int x = xi[i2]; x < xi[i2 + 1]; x++)
            if (o->pext_col[x] < ncP) TR_SEND_EMIT(o->pext_col[x]);
          for (HYPRE_Int x = xi[i2]; x < xi[i2 + 1]; x++)
            if (o->pext_col[x] >= ncP) TR_SEND_EMIT(o->pext_col[x]);
        }
      for (HYPRE_Int k = adi[i1]; k < adi[i1 + 1] && !bad; k++) {
        const HYPRE_Int i2 = adj[k];
        if (amark[i2] == st) continue;
        amark[i2] = st;
        for (HYPRE_Int x = pdi[i2]; x < pdi[i2 + 1]; x++) TR_SEND_EMIT(pdj[x]);
        if (poi)
          for (HYPRE_Int x = poi[i2]; x < poi[i2 + 1]; x++) TR_SEND_EMIT(ncP + o->mapPQ[poj[x]]);
      }
    }
#undef TR_SEND_EMIT
    if (bad || n != len) continue; /* stays sorted */
    for (HYPRE_Int k = 0; k < len; k++) {
      const HYPRE_Int c = ord[k];
      bj[ii[r] + k] = c < ncP ? firstP + c : colQ[c - ncP];
      da[ii[r] + k] = vv[c];
    }
  }
done:
  free(tp); free(tr); free(amark); free(have); free(emit); free(vv); free(ord);
}

/* ---- hypre's order computed ahead (one rank, RT = P, no off-rank blocks).
 * The traversal above needs only the structures of P and A, not C, so it
 * can run while the engine computes C (with the CUDA engine on a host
 * thread of its own, overlapping the device work); afterwards only the
 * values are placed (tr_apply_order).  Blocks of rows are walked into
 * growing buffers of their own, joined in row order at the end. */
typedef struct {
  HYPRE_Int ncR, ncP, nAc;
  int square, nthreads;
  hypre_CSRMatrix *Pd, *Ad;
  int64_t *ptr;     /* [ncR+1] */
  HYPRE_Int *col;   /* columns of every row, hypre's order */
  int ok;
  double seconds;   /* wall time of the pass */
} tr_trav;

static void tr_trav_compute(tr_trav *t)
{
  const HYPRE_Int ncR = t->ncR, ncP = t->ncP, nAc = t->nAc;
  const HYPRE_Int *pi = hypre_CSRMatrixI(t->Pd), *pj = hypre_CSRMatrixJ(t->Pd);
  const HYPRE_Int *ai = hypre_CSRMatrixI(t->Ad), *aj = hypre_CSRMatrixJ(t->Ad);
  const int nth = t->nthreads > 0 ? t->nthreads : 1;
  t->ok = 0;
  t->ptr = calloc((size_t)ncR + 2, sizeof *t->ptr);
  HYPRE_Int *tp, *tr; /* columns of P (= RT) as rows */
  const int nomem = tr_columns_as_rows(t->Pd, ncR, nth, &tp, &tr);
  /* Blocks of rows taken dynamically: rows differ a lot in cost (coarse
   * levels have few, long rows), so static shares left threads idle. The
   * work, not the row count, decides whether to go parallel: a 2000-row
   * coarse level can cost as much as 100k fine rows. */
  const int64_t work = (int64_t)pi[hypre_CSRMatrixNumRows(t->Pd)] + ai[hypre_CSRMatrixNumRows(t->Ad)];
  const int par = nth > 1 && (work > 65536 || tr_test_parallel());
  int64_t nb = par ? (int64_t)nth * 16 : 1;
  if (nb > ncR) nb = ncR > 0 ? ncR : 1;
  HYPRE_Int **buf = calloc((size_t)nb, sizeof *buf);
  int64_t *bpos = calloc((size_t)nb + 1, sizeof *bpos);
  int bad = nomem || !t->ptr || !buf || !bpos;
  if (!bad)
#pragma omp parallel num_threads(nth) reduction(| : bad) if (par)
  {
    HYPRE_Int *amark = calloc((size_t)nAc + 1, sizeof *amark), *emit = calloc((size_t)ncP + 1, sizeof *emit);
    if (!amark || !emit) bad = 1;
#pragma omp for schedule(dynamic, 1)
    for (int64_t blk = 0; blk < nb; blk++) {
      if (bad) continue;
      const HYPRE_Int r0 = (HYPRE_Int)(ncR * blk / nb), r1 = (HYPRE_Int)(ncR * (blk + 1) / nb);
      size_t cap = 4096, n = 0;
      HYPRE_Int *b = malloc(cap * sizeof *b);
      if (!b) { bad = 1; continue; }
      for (HYPRE_Int r = r0; r < r1 && !bad; r++) {
        const HYPRE_Int st = r + 1;
        const size_t n0 = n;
#define TR_EMIT(c_)                                                              \
  do {                                                                           \
    HYPRE_Int cc_ = (c_);                                                        \
    if (cc_ < 0 || cc_ >= ncP) { bad = 1; break; }                               \
    if (emit[cc_] != st) {                                                       \
      emit[cc_] = st;                                                            \
      if (n == cap) {                                                            \
        HYPRE_Int *nb_ = realloc(b, 2 * cap * sizeof *b);                        \
        if (!nb_) { bad = 1; break; }                                            \
        b = nb_; cap *= 2;                                                       \
      }                                                                          \
      b[n++] = cc_;                                                              \
    }                                                                            \
  } while (0)
        if (t->square) do { TR_EMIT(r); } while (0);
        for (int64_t q = tp[r]; q < tp[r + 1] && !bad; q++) {
          const HYPRE_Int i1 = tr[q];
          for (HYPRE_Int k = ai[i1]; k < ai[i1 + 1] && !bad; k++) {
            const HYPRE_Int i2 = aj[k];
            if (i2 < 0 || i2 >= nAc) { bad = 1; break; }
            if (amark[i2] == st) continue;
            amark[i2] = st;
            for (HYPRE_Int x = pi[i2]; x < pi[i2 + 1]; x++) TR_EMIT(pj[x]);
          }
        }
#undef TR_EMIT
        t->ptr[r + 1] = (int64_t)(n - n0);
      }
      buf[blk] = b;
      bpos[blk + 1] = (int64_t)n;
    }
    free(amark); free(emit);
  }
  if (!bad) {
    for (HYPRE_Int r = 0; r < ncR; r++) t->ptr[r + 1] += t->ptr[r];
    for (int64_t blk = 0; blk < nb; blk++) bpos[blk + 1] += bpos[blk];
    t->col = malloc(((size_t)t->ptr[ncR] + 1) * sizeof *t->col);
    if (!t->col || bpos[nb] != t->ptr[ncR]) bad = 1;
  }
  if (!bad) /* blocks in row order; each block's copy touches its own pages */
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1) if (par)
    for (int64_t blk = 0; blk < nb; blk++)
      if (bpos[blk + 1] > bpos[blk])
        memcpy(t->col + bpos[blk], buf[blk], (size_t)(bpos[blk + 1] - bpos[blk]) * sizeof *t->col);
  for (int64_t blk = 0; buf && blk < nb; blk++) free(buf[blk]);
  free(buf); free(bpos); free(tp); free(tr);
  if (bad) { free(t->ptr); free(t->col); t->ptr = NULL; t->col = NULL; }
  t->ok = !bad;
}

static void *tr_trav_thread(void *arg)
{
  tr_trav *t = (tr_trav *)arg;
  const double t0 = tr_hypre_wtime();
  tr_trav_compute(t);
  t->seconds = tr_hypre_wtime() - t0;
  return NULL;
}

/* Rows of the assembled diag block (sorted, diagonal first) rewritten in
 * the precomputed order; 0 if a row's columns differ (then nothing of that
 * row was changed and the caller runs the full pass instead). */
static int tr_apply_order(const tr_trav *t, HYPRE_Int ncR, HYPRE_Int ncP, const HYPRE_Int *di, HYPRE_Int *dj,
                          HYPRE_Complex *da)
{
  int bad = 0;
#pragma omp parallel reduction(| : bad) if (ncR > TR_PAR_ROWS)
  {
    HYPRE_Int *have = calloc((size_t)ncP + 1, sizeof *have);
    HYPRE_Complex *vv = malloc(((size_t)ncP + 1) * sizeof *vv);
    if (!have || !vv) bad = 1;
#pragma omp for schedule(static)
    for (HYPRE_Int r = 0; r < ncR; r++) {
      if (bad) continue;
      const HYPRE_Int d0 = di[r], d1 = di[r + 1], st = r + 1;
      const int64_t t0 = t->ptr[r];
      if ((int64_t)(d1 - d0) != t->ptr[r + 1] - t0) { bad = 1; continue; }
      for (HYPRE_Int k = d0; k < d1; k++) { have[dj[k]] = st; vv[dj[k]] = da[k]; }
      for (int64_t q = 0; q < d1 - d0; q++)
        if (have[t->col[t0 + q]] != st) { bad = 1; break; }
      if (bad) continue;
      for (int64_t q = 0; q < d1 - d0; q++) {
        dj[d0 + q] = t->col[t0 + q];
        da[d0 + q] = vv[t->col[t0 + q]];
      }
    }
    free(have); free(vv);
  }
  return !bad;
}

/* ---- the product kept on the GPU for the next level (one rank, CUDA
 * engine, hypre's order).  BoomerAMG's next Galerkin product takes the C
 * just returned as its A: its tiles and its structure in hypre's stored
 * order stay on the device, with the arrays handed to hypre and a content
 * fingerprint of them (positions within rows included).  The next call
 * uses them only if A's diag block is those very arrays and their
 * fingerprint, recomputed on the host, is unchanged; anything else frees
 * them and uploads A as usual. */
typedef struct {
  tilerap_tile_matrix *C; /* device tiles */
  int32_t *ci, *cj;       /* device row pointers and columns, hypre's order */
  const HYPRE_Int *hi, *hj;
  const HYPRE_Complex *ha; /* hypre's arrays holding the same */
  HYPRE_Int m, nnz;
  uint64_t fp;
} tr_kept;
static tr_kept g_kept;
static pthread_mutex_t g_kept_lock = PTHREAD_MUTEX_INITIALIZER; /* setups on several threads */

static void tr_kept_free(tr_kept *k)
{
  tilerap_tile_destroy(&k->C);
  tilerap_device_free(k->ci);
  tilerap_device_free(k->cj);
  memset(k, 0, sizeof *k);
}

void tr_hypre_drop_kept(void)
{
  pthread_mutex_lock(&g_kept_lock);
  tr_kept k = g_kept;
  memset(&g_kept, 0, sizeof g_kept);
  pthread_mutex_unlock(&g_kept_lock);
  tr_kept_free(&k);
}

/* Ad is made of the kept product's arrays (same pointers and sizes): a
 * candidate, to be proven unchanged by its fingerprint. */
static int tr_kept_candidate(const tr_kept *k, hypre_CSRMatrix *Ad)
{
  return k->C && hypre_CSRMatrixNumRows(Ad) == k->m && hypre_CSRMatrixNumCols(Ad) == k->m &&
         hypre_CSRMatrixI(Ad) == k->hi && hypre_CSRMatrixJ(Ad) == k->hj && hypre_CSRMatrixData(Ad) == k->ha &&
         hypre_CSRMatrixI(Ad)[k->m] == k->nnz;
}

/* The host fingerprint of a candidate runs on a thread of its own while
 * the device computes with the kept tiles (speculatively: a changed A
 * throws that work away and starts again from an upload). */
typedef struct {
  const tr_kept *k;
  uint64_t fp;
  int err;
  double seconds;
} tr_kept_check;

static void *tr_kept_check_thread(void *arg);

/* Waits for the check; 1 (counted as kept) if A was the kept product. */
static int tr_kept_resolve(int *check_on, pthread_t th, tr_kept_check *c)
{
  if (*check_on) pthread_join(th, NULL);
  *check_on = 0;
  const int same = !c->err && c->fp == c->k->fp;
  tr_hypre_count_kept(same ? 1 : -1);
  return same;
}

static void *tr_kept_check_thread(void *arg)
{
  tr_kept_check *c = (tr_kept_check *)arg;
  const double t0 = tr_hypre_wtime();
#ifdef _OPENMP
  /* off the cores of this call's thread and of the staging copies, which
   * upload P meanwhile (sharing every core slowed the copies down, as it
   * did with the row-order pass) */
  const int maxt = omp_get_max_threads();
  omp_set_num_threads(maxt - 5 >= maxt / 2 ? maxt - 5 : (maxt / 2 > 0 ? maxt / 2 : 1));
#endif
  c->err = tilerap_csr_fingerprint_i32((int32_t)c->k->m, (const int32_t *)c->k->hi, (const int32_t *)c->k->hj,
                                       c->k->ha, 1, TILERAP_MEM_HOST, &c->fp);
#ifdef _OPENMP
  omp_set_num_threads(maxt); /* this may be the caller's thread (no thread could be made) */
#endif
  c->seconds = tr_hypre_wtime() - t0;
  return NULL;
}

/* A hypre diag block's arrays to the device as they are (rows in hypre's
 * order), and its tiles made there; the values are dropped afterwards. */
static int tr_upload_block(hypre_CSRMatrix *M, int32_t ncols, int32_t **di, int32_t **dj, tilerap_tile_matrix **T)
{
  const int32_t m = (int32_t)hypre_CSRMatrixNumRows(M);
  const int32_t *mi = (const int32_t *)hypre_CSRMatrixI(M), *mj = (const int32_t *)hypre_CSRMatrixJ(M);
  const size_t nnz = (size_t)mi[m];
  double *da = NULL;
  /* one element at least: an empty block still gets non-NULL arrays */
  int err = tilerap_device_malloc(((size_t)m + 1) * sizeof(int32_t), (void **)di);
  if (!err) err = tilerap_device_malloc((nnz + 1) * sizeof(int32_t), (void **)dj);
  if (!err) err = tilerap_device_malloc((nnz + 1) * sizeof(double), (void **)&da);
  if (!err) err = tilerap_memcpy(*di, TILERAP_MEM_DEVICE, mi, TILERAP_MEM_HOST, ((size_t)m + 1) * sizeof(int32_t));
  if (!err) err = tilerap_memcpy(*dj, TILERAP_MEM_DEVICE, mj, TILERAP_MEM_HOST, nnz * sizeof(int32_t));
  if (!err) err = tilerap_memcpy(da, TILERAP_MEM_DEVICE, hypre_CSRMatrixData(M), TILERAP_MEM_HOST, nnz * sizeof(double));
  if (!err) err = tilerap_tile_from_unsorted_csr_device_i32(m, ncols, *di, *dj, da, TILERAP_MEM_DEVICE, T);
  tilerap_device_free(da);
  return err;
}

static int tr_hypre_galerkin_run(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                                 HYPRE_Int keepT, int force_diagonal, int order_hypre, int local_refusal,
                                 tr_kept *kept_in, tr_kept *kept_out, hypre_ParCSRMatrix **RAP_out);

int tr_hypre_galerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                      HYPRE_Int keepT, int force_diagonal, int order_hypre, int local_refusal,
                      hypre_ParCSRMatrix **RAP_out)
{
  static int at_exit = 0;
  pthread_mutex_lock(&g_kept_lock);
  tr_kept in = g_kept, out;
  memset(&g_kept, 0, sizeof g_kept);
  pthread_mutex_unlock(&g_kept_lock);
  memset(&out, 0, sizeof out);
  const int r = tr_hypre_galerkin_run(RT, A, P, keepT, force_diagonal, order_hypre, local_refusal, &in, &out, RAP_out);
  tr_kept_free(&in); /* whatever this call did not take over */
  if (r != 0) tr_kept_free(&out);
  else if (out.C) {
    /* after the first product is kept, so after CUDA set up its own exit
     * handler: this one runs first, with the device still there */
    if (!at_exit) at_exit = atexit(tr_hypre_drop_kept) == 0;
    pthread_mutex_lock(&g_kept_lock);
    tr_kept old = g_kept; /* another thread's, if setups run concurrently */
    g_kept = out;
    pthread_mutex_unlock(&g_kept_lock);
    tr_kept_free(&old);
  }
  return r;
}

static int tr_hypre_galerkin_run(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                                 HYPRE_Int keepT, int force_diagonal, int order_hypre, int local_refusal,
                                 tr_kept *kept_in, tr_kept *kept_out, hypre_ParCSRMatrix **RAP_out)
{
  MPI_Comm comm;
  int nprocs = 1, rank = 0, reason, failed = 0, result = 0;
  tr_trav trav;
  pthread_t trav_th;
  int trav_on = 0, fast_order = 0;
  memset(&trav, 0, sizeof trav);
  *RAP_out = NULL;
  if (!A) return 1 + TILERAP_HYPRE_FWD_SHAPE;
  double tp = tr_hypre_wtime();
  double ph_local[TR_PH_N] = {0};
#define PHASE(ph) do { double t_ = tr_hypre_wtime(); tr_hypre_add_phase((ph), t_ - tp); ph_local[ph] += t_ - tp; tp = t_; } while (0)
  comm = hypre_ParCSRMatrixComm(A);
  MPI_Comm_size(comm, &nprocs);
  MPI_Comm_rank(comm, &rank);

  reason = local_refusal >= 0 ? local_refusal : local_precheck(RT, A, P, rank);
  if (any_failed(comm, nprocs, reason >= 0))
    return 1 + (reason >= 0 ? reason : TILERAP_HYPRE_FWD_PEER);
  /* one GPU per rank, before anything reaches a device */
  if (tr_hypre_select_device(comm)) failed = 1;
  if (any_failed(comm, nprocs, failed))
    return 1 + (failed ? TILERAP_HYPRE_FWD_ENGINE : TILERAP_HYPRE_FWD_PEER);

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
  /* One Galerkin plan P_full^T A_sq P_full when RT is P and A's local block
   * is square (A_sq: A_loc with empty rows for the P_ext rows). */
  const int galerkin = nA == nAc && rt_is_p(RT, P);

  hypre_ParCSRCommPkg *pkgRT = NULL;
  hypre_CSRMatrix *Pext = NULL, *C_int = NULL, *C_ext = NULL;
  HYPRE_BigInt *colQ = NULL, *colC = NULL;
  int32_t *mapPQ = NULL, *pext_col = NULL;
  int64_t *rrow = NULL; /* row of C_all holding the contributions to RT offd column k */
  HYPRE_Int *mapQC = NULL, *ext_loc = NULL, *ext_ptr = NULL, *ext_rows = NULL;
  HYPRE_Int nQ = 0, nC = 0;
  tilerap_tile_matrix *Aloc = NULL, *Pfull = NULL, *Rloc = NULL, *Rt = NULL, *AP = NULL, *Call = NULL;
  tilerap_tile_matrix *dA = NULL, *dP = NULL, *dR = NULL, *dC = NULL;
  tilerap_csr *C = NULL;
  int64_t c_nnz = 0;
  /* device structures of A and P as hypre stores them (hypre's order on the device) */
  int32_t *d_ai = NULL, *d_aj = NULL, *d_pi = NULL, *d_pj = NULL;
  int ordered_on_device = 0;
  double t_dev_order = 0; /* verbose 2: the device order's part of the download */
  /* the kept previous product as A, until its fingerprint check is in */
  int speculative = 0, check_on = 0;
  pthread_t check_th;
  tr_kept_check check;
  memset(&check, 0, sizeof check);
  /* hypre's diag arrays written by the device (one rank, square) */
  int straight = 0;
  HYPRE_Int *s_di = NULL, *s_dj = NULL;
  HYPRE_Complex *s_da = NULL;
  int err = TILERAP_SUCCESS;

  /* ---- communication 1: remote rows of P (hypre's helper, as the original) */
  if (nprocs > 1) {
    if (!hypre_ParCSRMatrixCommPkg(RT)) hypre_MatvecCommPkgCreate(RT);
    pkgRT = hypre_ParCSRMatrixCommPkg(RT);
    Pext = hypre_ParCSRMatrixExtractBExt(P, A, 1);
  }
  const HYPRE_Int ext_nnz = Pext ? hypre_CSRMatrixI(Pext)[hypre_CSRMatrixNumRows(Pext)] : 0;
  PHASE(TR_PH_COMM);
  if (Pext && hypre_CSRMatrixNumRows(Pext) != nAo) { failed = 1; reason = TILERAP_HYPRE_FWD_SHAPE; goto sync; }

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
  rrow = malloc(((size_t)nRo + 1) * sizeof *rrow);
  if (!mapPQ || !pext_col || !rrow) { err = TILERAP_ERR_NOMEM; goto engine_failed; }
  for (HYPRE_Int k = 0; k < nPo; k++) mapPQ[k] = (int32_t)big_find(colQ, nQ, cmapP[k]);
  if (Pext) {
    HYPRE_BigInt *bj = hypre_CSRMatrixBigJ(Pext);
#pragma omp parallel for schedule(static) if (ext_nnz > 16 * TR_PAR_ROWS)
    for (HYPRE_Int k = 0; k < ext_nnz; k++)
      pext_col[k] = (bj[k] < firstP || bj[k] > lastP) ? (int32_t)(ncP + big_find(colQ, nQ, bj[k]))
                                                      : (int32_t)(bj[k] - firstP);
  }
  /* galerkin: RT's offd columns are P's, their rows of C_all are Q rows */
  for (HYPRE_Int k = 0; k < nRo; k++) rrow[k] = galerkin ? (int64_t)ncP + mapPQ[k] : (int64_t)ncR + k;

  /* ---- local blocks -> tiles.  CUDA engine, one block each (one rank,
   * or no off-rank couplings) and RT = P: hypre's diag blocks go up as
   * they are and become tiles on the device (rows sorted there); otherwise
   * the blocks are stitched into host tiles and uploaded. */
  tilerap_options opt;
  tilerap_options_default(&opt);
  const int dev = tilerap_engine_resolve(opt.engine) == TILERAP_ENGINE_CUDA;
  const int direct = dev && galerkin && nAo == 0 && nQ == 0 && !Pext && sizeof(HYPRE_Int) == sizeof(int32_t) &&
                     hypre_CSRMatrixI(Ad) && hypre_CSRMatrixI(Pd);
  const int straight_ok = direct && nprocs == 1 && square;
  /* one rank, square: hypre's row order made on the device from A's and
   * P's stored structures (tilerap_ptap_csr_encounter_order_device_i32),
   * and C kept there for the next level */
  const int devorder = straight_ok && order_hypre && tr_hypre_order_hypre();
  /* otherwise hypre's row order ahead of C (one rank, RT = P): on a thread
   * of its own with the CUDA engine, so that it overlaps the device work */
  fast_order = !devorder && order_hypre && tr_hypre_order_hypre() && nprocs == 1 && galerkin && nAo == 0 && nQ == 0 &&
               !Pext && hypre_CSRMatrixI(Ad) && hypre_CSRMatrixI(Pd);
  if (fast_order) {
    trav.ncR = ncR; trav.ncP = ncP; trav.nAc = nAc; trav.square = square;
    trav.Pd = Pd; trav.Ad = Ad;
    /* TILERAP_HYPRE_TEST_ORDER_THREAD=1: the threaded variant with the CPU
     * engine too (tests) */
    const int threaded = dev || tr_knob_int(TR_KNOB_HYPRE_TEST_ORDER_THREAD);
    /* On its own thread, the row-order pass's team leaves a core to this
     * thread and, with the CUDA engine, the cores of the staging copies
     * (4 threads, host_copy.c in the core library): oversubscribed, both
     * ran 2-3x slower on the H100 host.  At least half the cores. */
    const int maxt = tr_max_threads(), others = 1 + (dev ? 4 : 0);
    int team = maxt - others;
    if (team < maxt / 2) team = maxt / 2;
    trav.nthreads = team > 1 ? team : 1;
    if (threaded && pthread_create(&trav_th, NULL, tr_trav_thread, &trav) == 0) trav_on = 1;
    else { /* on this thread: every core */
      trav.nthreads = maxt;
      tr_trav_compute(&trav);
      PHASE(TR_PH_ORDER);
    }
  }
  if (devorder) {
    /* A made of the previous product's arrays: its tiles are still on the
     * device; used at once, while a thread proves A unchanged */
    if (tr_kept_candidate(kept_in, Ad)) {
      check.k = kept_in;
      if (pthread_create(&check_th, NULL, tr_kept_check_thread, &check) == 0) check_on = 1;
      else tr_kept_check_thread(&check);
      dA = kept_in->C; d_ai = kept_in->ci; d_aj = kept_in->cj;
      kept_in->C = NULL; kept_in->ci = kept_in->cj = NULL;
      speculative = 1;
    } else {
      tr_kept_free(kept_in); /* not needed: its device memory goes back first */
      if ((err = tr_upload_block(Ad, (int32_t)nAc, &d_ai, &d_aj, &dA))) goto engine_failed;
    }
    if ((err = tr_upload_block(Pd, (int32_t)ncP, &d_pi, &d_pj, &dP))) goto engine_failed;
    PHASE(TR_PH_UPLOAD);
  } else if (direct) {
    if ((err = tilerap_tile_from_unsorted_csr_device_i32(
             (int32_t)nA, (int32_t)nAc, (const int32_t *)hypre_CSRMatrixI(Ad), (const int32_t *)hypre_CSRMatrixJ(Ad),
             hypre_CSRMatrixData(Ad), TILERAP_MEM_HOST, &dA)) ||
        (err = tilerap_tile_from_unsorted_csr_device_i32(
             (int32_t)nAc, (int32_t)ncP, (const int32_t *)hypre_CSRMatrixI(Pd), (const int32_t *)hypre_CSRMatrixJ(Pd),
             hypre_CSRMatrixData(Pd), TILERAP_MEM_HOST, &dP)))
      goto engine_failed;
    PHASE(TR_PH_UPLOAD);
  } else {
    {
      tr_segment s = {0, (int32_t)nA, 1, {block_of(Ad, NULL, 0)}};
      if (nAo > 0 && has_entries(Ao)) s.b[s.nblocks++] = block_of(Ao, NULL, (int32_t)nAc);
      int32_t rows = galerkin ? (int32_t)(nAc + nAo) : (int32_t)nA;
      err = tr_tiles_from_segments(rows, (int32_t)(nAc + nAo), 1, &s, &Aloc);
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
    if (!galerkin) {
      tr_segment s = {0, (int32_t)nA, 1, {block_of(RTd, NULL, 0)}};
      if (nRo > 0 && has_entries(RTo)) s.b[s.nblocks++] = block_of(RTo, NULL, (int32_t)ncR);
      err = tr_tiles_from_segments((int32_t)nA, (int32_t)(ncR + nRo), 1, &s, &Rloc);
      if (err) goto engine_failed;
    }
    PHASE(TR_PH_IN);
    if (dev) {
      if ((err = tilerap_tile_copy(Aloc, TILERAP_MEM_DEVICE, &dA))) goto engine_failed;
      if ((err = tilerap_tile_copy(Pfull, TILERAP_MEM_DEVICE, &dP))) goto engine_failed;
      if (Rloc && (err = tilerap_tile_copy(Rloc, TILERAP_MEM_DEVICE, &dR))) goto engine_failed;
      PHASE(TR_PH_UPLOAD);
    }
  }

products:
  /* ---- tile products.  CUDA engine: operands go up once, AP stays on
   * the device, only C comes down. */
  {
    const tilerap_tile_matrix *wA = dev ? dA : Aloc, *wP = dev ? dP : Pfull, *wR = dev ? dR : Rloc;
    tilerap_tile_matrix **wC = dev ? &dC : &Call;
    if (galerkin) {
      if ((err = tilerap_ptap(wA, wP, &opt, wC))) goto engine_failed;
    } else {
      if ((err = tilerap_tile_transpose(wR, &Rt, NULL))) goto engine_failed;
      if ((err = tilerap_spgemm(wA, wP, &opt, &AP))) goto engine_failed;
      if ((err = tilerap_spgemm(Rt, AP, &opt, wC))) goto engine_failed;
    }
    PHASE(TR_PH_ENGINE);
    if (dev && straight_ok && dC->nnz <= INT32_MAX) {
      /* one rank, square: C is hypre's diag block as it stands (diagonal
       * first), made on the device and written into hypre's own arrays;
       * a row without a diagonal (hypre then adds an explicit zero) takes
       * the assembly below */
      s_di = hypre_TAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
      s_dj = hypre_TAlloc(HYPRE_Int, dC->nnz > 0 ? dC->nnz : 1, HYPRE_MEMORY_HOST);
      s_da = hypre_TAlloc(HYPRE_Complex, dC->nnz > 0 ? dC->nnz : 1, HYPRE_MEMORY_HOST);
      if (!s_di || !s_dj || !s_da) err = TILERAP_ERR_NOMEM;
      else if (devorder) { /* hypre's order, made on the device; C stays there */
        const size_t nz = (size_t)dC->nnz;
        int32_t *d_ci = NULL, *d_cj = NULL;
        double *d_ca = NULL;
        int64_t unreached = 0;
        uint64_t fp = 0;
        err = tilerap_device_malloc(((size_t)ncR + 1) * sizeof(int32_t), (void **)&d_ci);
        if (!err) err = tilerap_device_malloc((nz + 1) * sizeof(int32_t), (void **)&d_cj);
        if (!err) err = tilerap_device_malloc((nz + 1) * sizeof(double), (void **)&d_ca);
        if (!err)
          err = tilerap_ptap_csr_encounter_order_device_i32(dC, (int32_t)nA, d_ai, d_aj, d_pi, d_pj, 1, d_ci, d_cj,
                                                            d_ca, &unreached);
        if (!err) err = tilerap_csr_fingerprint_i32((int32_t)ncR, d_ci, d_cj, d_ca, 1, TILERAP_MEM_DEVICE, &fp);
        t_dev_order = tr_hypre_wtime() - tp;
        if (speculative) { /* was A the kept product after all? */
          speculative = 0;
          if (!tr_kept_resolve(&check_on, check_th, &check)) {
            tilerap_device_free(d_ci); tilerap_device_free(d_cj); tilerap_device_free(d_ca);
            goto stale_a;
          }
        }
        if (!err) err = tilerap_memcpy(s_di, TILERAP_MEM_HOST, d_ci, TILERAP_MEM_DEVICE, ((size_t)ncR + 1) * sizeof(int32_t));
        if (!err) err = tilerap_memcpy(s_dj, TILERAP_MEM_HOST, d_cj, TILERAP_MEM_DEVICE, nz * sizeof(int32_t));
        if (!err) err = tilerap_memcpy(s_da, TILERAP_MEM_HOST, d_ca, TILERAP_MEM_DEVICE, nz * sizeof(double));
        tilerap_device_free(d_ca);
        if (!err) {
          if (unreached) /* not expected: C is the product of these structures */
            tr_hypre_note("rank %d: %lld entries of C outside the product walk (kept ascending)", rank,
                          (long long)unreached);
          kept_out->C = dC; kept_out->ci = d_ci; kept_out->cj = d_cj;
          kept_out->hi = s_di; kept_out->hj = s_dj; kept_out->ha = s_da;
          kept_out->m = ncR; kept_out->nnz = (HYPRE_Int)nz; kept_out->fp = fp;
          dC = NULL; /* now kept_out's; freed if the call fails after all */
          ordered_on_device = 1;
        } else {
          tilerap_device_free(d_ci);
          tilerap_device_free(d_cj);
        }
      } else
        err = tilerap_tile_to_csr_device_diag_first_i32(dC, (int32_t *)s_di, (int32_t *)s_dj, s_da, TILERAP_MEM_HOST);
      if (!err) straight = 1;
      else {
        hypre_TFree(s_di, HYPRE_MEMORY_HOST); hypre_TFree(s_dj, HYPRE_MEMORY_HOST); hypre_TFree(s_da, HYPRE_MEMORY_HOST);
        s_di = s_dj = NULL; s_da = NULL;
        if (err != TILERAP_ERR_STRUCTURE) goto engine_failed;
        err = TILERAP_SUCCESS;
      }
    }
    if (speculative) { /* not resolved on the straight path: before C is used */
      speculative = 0;
      if (!tr_kept_resolve(&check_on, check_th, &check)) goto stale_a;
    }
    if (dev && !straight) { /* CSR made on the device, written straight into host arrays */
      if ((err = tilerap_csr_create(dC->m, dC->n, dC->nnz, &C)) ||
          (err = tilerap_tile_to_csr_device(dC, C->rowptr, C->colidx, C->val, TILERAP_MEM_HOST)))
        goto engine_failed;
    } else if (!dev && (err = tilerap_tile_to_csr_alloc(Call, &C))) goto engine_failed;
    if (dev) {
      c_nnz = straight ? (int64_t)s_di[ncR] : dC->nnz;
      PHASE(TR_PH_DOWNLOAD);
    } else c_nnz = C->rowptr[C->m];
  }
  goto sync;

stale_a: /* C came from a kept A that hypre has changed: upload A, start again */
  tr_hypre_note("rank %d: the previous product was changed before its next use; uploaded again", rank);
  hypre_TFree(s_di, HYPRE_MEMORY_HOST); hypre_TFree(s_dj, HYPRE_MEMORY_HOST); hypre_TFree(s_da, HYPRE_MEMORY_HOST);
  s_di = s_dj = NULL; s_da = NULL;
  tilerap_tile_destroy(&dC); tilerap_tile_destroy(&dA);
  tilerap_device_free(d_ai); tilerap_device_free(d_aj);
  d_ai = d_aj = NULL;
  if ((err = tr_upload_block(Ad, (int32_t)nAc, &d_ai, &d_aj, &dA))) goto engine_failed;
  PHASE(TR_PH_UPLOAD);
  goto products;

engine_failed:
  failed = 1;
  reason = TILERAP_HYPRE_FWD_ENGINE;
  tr_hypre_note("rank %d: tilerap error %d (%s): %s", rank, err, tilerap_error_string(err),
                tilerap_last_error());

sync:
  if (check_on) { /* a failed call still waits for the check thread */
    pthread_join(check_th, NULL);
    check_on = 0;
  }
  if (trav_on) { /* every path passes here: the thread never outlives the call */
    pthread_join(trav_th, NULL);
    trav_on = 0;
    PHASE(TR_PH_ORDER);
    tr_hypre_add_phase(TR_PH_TRAV, trav.seconds);
    ph_local[TR_PH_TRAV] = trav.seconds;
  }
  /* ---- collective decision after the local work */
  PHASE(TR_PH_OUT);
  if (any_failed(comm, nprocs, failed)) {
    result = 1 + (failed ? reason : TILERAP_HYPRE_FWD_PEER);
    goto cleanup;
  }
  tilerap_tile_destroy(&Aloc); tilerap_tile_destroy(&Pfull); tilerap_tile_destroy(&Rloc);
  tilerap_tile_destroy(&Rt); tilerap_tile_destroy(&AP); tilerap_tile_destroy(&Call);
  tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dP); tilerap_tile_destroy(&dR);
  tilerap_tile_destroy(&dC);

  /* ---- communication 2: rows of C owned elsewhere go to their owners */
  if (nprocs > 1) {
    HYPRE_Int nint = 0;
    for (HYPRE_Int r = 0; r < nRo; r++) nint += (HYPRE_Int)(C->rowptr[rrow[r] + 1] - C->rowptr[rrow[r]]);
    C_int = hypre_CSRMatrixCreate(nRo, hypre_ParCSRMatrixGlobalNumCols(P), nint);
    hypre_CSRMatrixInitialize_v2(C_int, 1, HYPRE_MEMORY_HOST);
    HYPRE_Int *ii = hypre_CSRMatrixI(C_int);
    HYPRE_BigInt *bj = hypre_CSRMatrixBigJ(C_int);
    HYPRE_Complex *da = hypre_CSRMatrixData(C_int);
    HYPRE_Int q = 0;
    ii[0] = 0;
    for (HYPRE_Int r = 0; r < nRo; r++) {
      for (int64_t k = C->rowptr[rrow[r]]; k < C->rowptr[rrow[r] + 1]; k++, q++) {
        int32_t c = C->colidx[k];
        bj[q] = c < ncP ? firstP + c : colQ[c - ncP];
        da[q] = C->val[k];
      }
      ii[r + 1] = q;
    }
    /* the owners emit received rows in stored order: send them in hypre's */
    if (order_hypre && tr_hypre_order_hypre()) {
      tr_send_order_ctx so = {RTo, Ad, Ao, Pd, Po, Pext, pext_col, mapPQ, ncP, nAc, nAo, nQ};
      tr_order_send_rows(&so, C, rrow, nRo, ii, bj, da, firstP, colQ);
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
  const HYPRE_Int *ext_i = C_ext ? hypre_CSRMatrixI(C_ext) : NULL;
  const HYPRE_Complex *ext_a = C_ext ? hypre_CSRMatrixData(C_ext) : NULL;
  if (nQ || next_nnz) {
    char *usedQ = calloc((size_t)nQ + 1, 1);
    colC = hypre_TAlloc(HYPRE_BigInt, nQ + next_nnz + 1, HYPRE_MEMORY_HOST);
    if (nQ)
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
  if (next > 0) {
    HYPRE_Int *elm = hypre_ParCSRCommPkgSendMapElmts(pkgRT);
    ext_ptr = hypre_CTAlloc(HYPRE_Int, ncR + 2, HYPRE_MEMORY_HOST);
    ext_rows = hypre_TAlloc(HYPRE_Int, next, HYPRE_MEMORY_HOST);
    ext_loc = hypre_TAlloc(HYPRE_Int, next_nnz + 1, HYPRE_MEMORY_HOST);
    for (HYPRE_Int e = 0; e < next; e++) ext_ptr[elm[e] + 2]++;
    for (HYPRE_Int r = 0; r < ncR; r++) ext_ptr[r + 2] += ext_ptr[r + 1];
    for (HYPRE_Int e = 0; e < next; e++) ext_rows[ext_ptr[elm[e] + 1]++] = e;
    for (HYPRE_Int k = 0; k < next_nnz; k++)
      ext_loc[k] = (ext_bj[k] < firstP || ext_bj[k] > lastP) ? ncP + big_find(colC, nC, ext_bj[k])
                                                              : (HYPRE_Int)(ext_bj[k] - firstP);
  }

  /* ---- assemble diag/offd, rows in parallel: counts, scan, fill.  Rows of
   * C are sorted and unique, so a row without received contributions maps
   * straight through (diagonal moved first); rows with received ones merge
   * them with a per-thread marker (positions grow within a thread's
   * contiguous block of rows, so "marker < row start" means unseen). */
  {
    hypre_ParCSRMatrix *RAP = hypre_ParCSRMatrixCreate(
        comm, hypre_ParCSRMatrixGlobalNumCols(RT), hypre_ParCSRMatrixGlobalNumCols(P),
        hypre_ParCSRMatrixColStarts(RT), hypre_ParCSRMatrixColStarts(P), nC, 0, 0);
    hypre_CSRMatrix *Cd = hypre_ParCSRMatrixDiag(RAP), *Co = hypre_ParCSRMatrixOffd(RAP);
    HYPRE_Int *di, *oi, *dj, *oj;
    HYPRE_Complex *da, *oa;
    const HYPRE_Int nmark = ncP + nC;
    if (straight) { /* diag block already in hypre's arrays; no offd */
      di = s_di; dj = s_dj; da = s_da;
      s_di = s_dj = NULL; s_da = NULL;
      oi = hypre_CTAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
      oj = NULL; oa = NULL;
      hypre_CSRMatrixNumNonzeros(Cd) = di[ncR];
      hypre_CSRMatrixNumNonzeros(Co) = 0;
      hypre_CSRMatrixI(Cd) = di; hypre_CSRMatrixJ(Cd) = dj; hypre_CSRMatrixData(Cd) = da;
      hypre_CSRMatrixI(Co) = oi; hypre_CSRMatrixJ(Co) = NULL; hypre_CSRMatrixData(Co) = NULL;
      hypre_CSRMatrixMemoryLocation(Cd) = HYPRE_MEMORY_HOST;
      hypre_CSRMatrixMemoryLocation(Co) = HYPRE_MEMORY_HOST;
    } else {
    di = hypre_TAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
    oi = hypre_TAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
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
    dj = hypre_TAlloc(HYPRE_Int, nd, HYPRE_MEMORY_HOST);
    da = hypre_TAlloc(HYPRE_Complex, nd, HYPRE_MEMORY_HOST);
    oj = nC ? hypre_TAlloc(HYPRE_Int, no, HYPRE_MEMORY_HOST) : NULL;
    oa = nC ? hypre_TAlloc(HYPRE_Complex, no, HYPRE_MEMORY_HOST) : NULL;
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
    } /* assembly from C */
    PHASE(TR_PH_OUT);

    /* hypre's entry order (default; TILERAP_HYPRE_ORDER=sorted skips it) */
    int applied = ordered_on_device || (fast_order && trav.ok && tr_apply_order(&trav, ncR, ncP, di, dj, da));
    if (fast_order && !applied) /* not expected: the full pass below does it */
      tr_hypre_note("rank %d: row order computed ahead did not fit C (%s); recomputed", rank,
                    trav.ok ? "other columns" : "traversal failed");
    if (applied) {
      /* done: made on the device, or computed while C was */
    } else if (order_hypre && tr_hypre_order_hypre()) {
      tr_order_ctx o = {ncR, ncP, nAc, nAo, square, RTd, Ad, Ao, Pd, Po, Pext, pext_col, mapPQ, mapQC,
                        ext_ptr, ext_rows, ext_i, ext_loc, di, dj, da, oi, oj, oa, nmark};
      tr_reorder_rows_hypre(&o);
    }
    PHASE(TR_PH_ORDER);

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
  if (tr_hypre_verbose() >= 2) /* one line per product: where its time went */
    fprintf(stderr,
            "tilerap_hypre rank %d: product %d x %d (A %lld entries, P %lld, C %lld): in %.4f, up %.4f, engine %.4f, "
            "down %.4f, out %.4f, order wait %.4f (pass %.4f), comm %.4f s; kept-A check %.4f (overlapped), device order %.4f s\n",
            rank, (int)ncR, (int)ncP, (long long)hypre_CSRMatrixNumNonzeros(Ad), (long long)hypre_CSRMatrixNumNonzeros(Pd),
            (long long)c_nnz, ph_local[TR_PH_IN], ph_local[TR_PH_UPLOAD], ph_local[TR_PH_ENGINE],
            ph_local[TR_PH_DOWNLOAD], ph_local[TR_PH_OUT], ph_local[TR_PH_ORDER], ph_local[TR_PH_TRAV],
            ph_local[TR_PH_COMM], check.seconds, t_dev_order);

cleanup:
  tilerap_tile_destroy(&Aloc); tilerap_tile_destroy(&Pfull); tilerap_tile_destroy(&Rloc);
  tilerap_tile_destroy(&Rt); tilerap_tile_destroy(&AP); tilerap_tile_destroy(&Call);
  tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dP); tilerap_tile_destroy(&dR);
  tilerap_tile_destroy(&dC);
  tilerap_csr_destroy(&C);
  hypre_TFree(s_di, HYPRE_MEMORY_HOST); hypre_TFree(s_dj, HYPRE_MEMORY_HOST); hypre_TFree(s_da, HYPRE_MEMORY_HOST);
  if (Pext) hypre_CSRMatrixDestroy(Pext);
  if (C_int) hypre_CSRMatrixDestroy(C_int);
  if (C_ext) hypre_CSRMatrixDestroy(C_ext);
  hypre_TFree(colQ, HYPRE_MEMORY_HOST);
  hypre_TFree(colC, HYPRE_MEMORY_HOST);
  hypre_TFree(mapQC, HYPRE_MEMORY_HOST);
  hypre_TFree(ext_loc, HYPRE_MEMORY_HOST);
  hypre_TFree(ext_ptr, HYPRE_MEMORY_HOST);
  hypre_TFree(ext_rows, HYPRE_MEMORY_HOST);
  free(mapPQ);
  free(pext_col);
  free(rrow);
  free(trav.ptr);
  free(trav.col);
  tilerap_device_free(d_ai); tilerap_device_free(d_aj);
  tilerap_device_free(d_pi); tilerap_device_free(d_pj);
  return result;
#undef PHASE
}

int TileRAP_HypreGalerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                          HYPRE_Int keepT, int force_diagonal, hypre_ParCSRMatrix **RAP)
{
  return tr_hypre_galerkin(RT, A, P, keepT, force_diagonal, 1, -1, RAP);
}
