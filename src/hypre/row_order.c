/* hypre's order of the entries in a row of C.
 *
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
 * seen not to matter).
 *
 * Three ways: computed ahead from the structures of A and P alone (one
 * rank, RT = P, no off-rank blocks), on a thread of its own while the
 * engine computes C, then only the values placed; made on the device
 * (local_product.c); or the full pass over the assembled rows, which are
 * rewritten in place.  A row whose traversal would not reproduce its
 * entries exactly (not expected) stays sorted. */
#include "galerkin_stages.h"
#include "tuning.h"

#include <stdlib.h>
#include <string.h>

/* TILERAP_HYPRE_TEST_PARALLEL=1: the parallel paths of the row-order pass
 * at every size (tests: their problems are below the thresholds). */
static int tr_test_parallel(void) { return tr_knob_int(TR_KNOB_HYPRE_TEST_PARALLEL); }

/* Columns of block M (ncols of them) as lists of its rows, rows ascending
 * (a counting sort): column c holds rows (*rows)[(*ptr)[c] .. (*ptr)[c+1]),
 * and, with pos, the entries' positions in M at (*pos)[...] alike.
 * The walks below visit column ic of RT this way.  Large blocks are
 * sorted by up to nthreads threads, each counting and then placing a
 * contiguous range of rows (so rows stay ascending within a column); a
 * serial pass was 15 ms of the row-order pass on a 1M-row P.
 * 0, or 1 out of memory. */
int tr_columns_as_rows(hypre_CSRMatrix *M, HYPRE_Int ncols, int nthreads, HYPRE_Int **ptr, HYPRE_Int **rows,
                       HYPRE_Int **pos)
{
  const HYPRE_Int nf = hypre_CSRMatrixNumRows(M);
  const HYPRE_Int *mi = hypre_CSRMatrixI(M), *mj = hypre_CSRMatrixJ(M);
  const HYPRE_Int nz = mi ? mi[nf] : 0;
  HYPRE_Int *tp = calloc((size_t)ncols + 2, sizeof *tp), *tr = malloc(((size_t)nz + 1) * sizeof *tr);
  HYPRE_Int *tk = pos ? malloc(((size_t)nz + 1) * sizeof *tk) : NULL;
  *ptr = tp;
  *rows = tr;
  if (pos) *pos = tk;
  if (!tp || !tr || (pos && !tk)) return 1;
  int nt = nthreads < 1 ? 1 : nthreads;
  if (!nz || (!tr_test_parallel() && (nz < 65536 || (int64_t)nt * ncols > 16 * (int64_t)nz)))
    nt = 1; /* small, or counts larger than the block */
  HYPRE_Int *cnt = nt > 1 ? calloc((size_t)nt * ((size_t)ncols + 1), sizeof *cnt) : NULL;
  if (nt > 1 && !cnt) nt = 1;
  if (nt == 1) {
    for (HYPRE_Int k = 0; k < nz; k++) tp[mj[k] + 2]++;
    for (HYPRE_Int c = 0; c < ncols; c++) tp[c + 2] += tp[c + 1];
    for (HYPRE_Int i = 0; i < nf && nz; i++)
      for (HYPRE_Int k = mi[i]; k < mi[i + 1]; k++) {
        const HYPRE_Int at = tp[mj[k] + 1]++;
        tr[at] = i;
        if (tk) tk[at] = k;
      }
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
      for (HYPRE_Int k = mi[i]; k < mi[i + 1]; k++) {
        const HYPRE_Int at = my[mj[k]]++;
        tr[at] = i;
        if (tk) tk[at] = k;
      }
  }
  free(cnt);
  return 0;
}

/* The full pass over the assembled rows of RAP. */
static void reorder_rows(const tr_galerkin *g, hypre_ParCSRMatrix *RAP)
{
  const HYPRE_Int ncR = g->ncR, ncP = g->ncP, nAc = g->nAc, nmark = ncP + g->nC;
  hypre_CSRMatrix *Cd = hypre_ParCSRMatrixDiag(RAP), *Co = hypre_ParCSRMatrixOffd(RAP);
  const HYPRE_Int *di = hypre_CSRMatrixI(Cd), *oi = hypre_CSRMatrixI(Co);
  HYPRE_Int *dj = hypre_CSRMatrixJ(Cd), *oj = hypre_CSRMatrixJ(Co);
  HYPRE_Complex *da = hypre_CSRMatrixData(Cd), *oa = hypre_CSRMatrixData(Co);
  HYPRE_Int *tp, *tr;
  if (tr_columns_as_rows(g->RTd, ncR, tr_max_threads(), &tp, &tr, NULL)) { free(tp); free(tr); return; } /* rows stay sorted */
  HYPRE_Int maxd = 0, maxo = 0;
  for (HYPRE_Int r = 0; r < ncR; r++) {
    if (di[r + 1] - di[r] > maxd) maxd = di[r + 1] - di[r];
    if (oi[r + 1] - oi[r] > maxo) maxo = oi[r + 1] - oi[r];
  }
  const HYPRE_Int *adi = hypre_CSRMatrixI(g->Ad), *adj = hypre_CSRMatrixJ(g->Ad);
  const HYPRE_Int *aoi = g->nAo ? hypre_CSRMatrixI(g->Ao) : NULL, *aoj = g->nAo ? hypre_CSRMatrixJ(g->Ao) : NULL;
  const HYPRE_Int *pdi = hypre_CSRMatrixI(g->Pd), *pdj = hypre_CSRMatrixJ(g->Pd);
  const int has_po = hypre_CSRMatrixNumCols(g->Po) > 0 && hypre_CSRMatrixI(g->Po);
  const HYPRE_Int *poi = has_po ? hypre_CSRMatrixI(g->Po) : NULL, *poj = has_po ? hypre_CSRMatrixJ(g->Po) : NULL;
  const HYPRE_Int *xi = g->Pext ? hypre_CSRMatrixI(g->Pext) : NULL;

  /* Markers hold row + 1 (0: never seen) and come from calloc: a thread
   * touches only the pages of the columns its rows meet, where filling
   * full-length markers with -1 in every thread cost more than the pass. */
#pragma omp parallel if (ncR > TR_PAR_ROWS)
  {
    double *vv = malloc(((size_t)nmark + 1) * sizeof *vv);
    HYPRE_Int *have = calloc((size_t)nmark + 1, sizeof *have);
    HYPRE_Int *emit = calloc((size_t)nmark + 1, sizeof *emit);
    HYPRE_Int *amark = calloc((size_t)nAc + g->nAo + 1, sizeof *amark);
    HYPRE_Int *ra_d = malloc(((size_t)nAc + 1) * sizeof *ra_d), *ra_o = malloc(((size_t)g->nAo + 1) * sizeof *ra_o);
    HYPRE_Int *tj = malloc(((size_t)maxd + maxo + 1) * sizeof *tj);
    HYPRE_Complex *ta = malloc(((size_t)maxd + maxo + 1) * sizeof *ta);
    const int ok = vv && have && emit && amark && tj && ta && ra_d && ra_o;
#pragma omp for schedule(dynamic, 256)
    for (HYPRE_Int r = 0; r < ncR; r++) {
      if (!ok) continue;
      const HYPRE_Int d0 = di[r], d1 = di[r + 1], f0 = oi[r], f1 = oi[r + 1], r1 = r + 1;
      for (HYPRE_Int k = d0; k < d1; k++) { vv[dj[k]] = da[k]; have[dj[k]] = r1; }
      for (HYPRE_Int k = f0; k < f1; k++) { vv[ncP + oj[k]] = oa[k]; have[ncP + oj[k]] = r1; }
      HYPRE_Int nd = 0, no = 0, *toj = tj + (d1 - d0);
      HYPRE_Complex *toa = ta + (d1 - d0);
      int bad = 0;
#define EMIT(c_)                                                                  \
  do {                                                                            \
    HYPRE_Int cc_ = (c_);                                                         \
    if (cc_ < 0 || have[cc_] != r1) bad = 1;                                      \
    else if (emit[cc_] != r1) {                                                   \
      emit[cc_] = r1;                                                             \
      if (cc_ < ncP) { tj[nd] = cc_; ta[nd++] = vv[cc_]; }                        \
      else { toj[no] = cc_ - ncP; toa[no++] = vv[cc_]; }                          \
    }                                                                             \
  } while (0)
      if (g->square) EMIT(r);
      if (g->ext_ptr)
        for (HYPRE_Int t = g->ext_ptr[r]; t < g->ext_ptr[r + 1]; t++)
          for (HYPRE_Int k = g->ext_i[g->ext_rows[t]]; k < g->ext_i[g->ext_rows[t] + 1]; k++)
            EMIT(g->ext_loc[k]);
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
          if (g->pext_col[q] < ncP) EMIT(g->pext_col[q]);
        for (HYPRE_Int q = xi[i2]; q < xi[i2 + 1]; q++)
          if (g->pext_col[q] >= ncP) {
            HYPRE_Int m = g->mapQC ? g->mapQC[g->pext_col[q] - ncP] : -1;
            EMIT(m < 0 ? -1 : ncP + m);
          }
      }
      for (HYPRE_Int u = 0; u < nrd && !bad; u++) {
        const HYPRE_Int i2 = ra_d[u];
        for (HYPRE_Int q = pdi[i2]; q < pdi[i2 + 1]; q++) EMIT(pdj[q]);
        if (poi)
          for (HYPRE_Int q = poi[i2]; q < poi[i2 + 1]; q++) {
            HYPRE_Int m = g->mapQC ? g->mapQC[g->mapPQ[poj[q]]] : -1;
            EMIT(m < 0 ? -1 : ncP + m);
          }
      }
#undef EMIT
      if (bad || nd != d1 - d0 || no != f1 - f0) { continue; }
      memcpy(dj + d0, tj, (size_t)nd * sizeof *tj);
      memcpy(da + d0, ta, (size_t)nd * sizeof *ta);
      if (no) {
        memcpy(oj + f0, toj, (size_t)no * sizeof *toj);
        memcpy(oa + f0, toa, (size_t)no * sizeof *toa);
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
void tr_order_send_rows(const tr_galerkin *g, const HYPRE_Int *ii, HYPRE_BigInt *bj, HYPRE_Complex *da)
{
  const HYPRE_Int ncP = g->ncP, nAc = g->nAc, nAo = g->nAo, ncol = ncP + g->nQ, nRo = g->nRo;
  const tilerap_csr *C = g->C;
  const int64_t *rrow = g->rrow;
  const HYPRE_BigInt firstP = g->firstP, *colQ = g->colQ;
  if (nRo <= 0 || !hypre_CSRMatrixI(g->RTo)) return;
  const HYPRE_Int *adi = hypre_CSRMatrixI(g->Ad), *adj = hypre_CSRMatrixJ(g->Ad);
  const HYPRE_Int *aoi = nAo ? hypre_CSRMatrixI(g->Ao) : NULL, *aoj = nAo ? hypre_CSRMatrixJ(g->Ao) : NULL;
  const HYPRE_Int *pdi = hypre_CSRMatrixI(g->Pd), *pdj = hypre_CSRMatrixJ(g->Pd);
  const int has_po = hypre_CSRMatrixNumCols(g->Po) > 0 && hypre_CSRMatrixI(g->Po);
  const HYPRE_Int *poi = has_po ? hypre_CSRMatrixI(g->Po) : NULL, *poj = has_po ? hypre_CSRMatrixJ(g->Po) : NULL;
  const HYPRE_Int *xi = g->Pext ? hypre_CSRMatrixI(g->Pext) : NULL;
  HYPRE_Int *tp, *tr;
  const int nomem = tr_columns_as_rows(g->RTo, nRo, 1, &tp, &tr, NULL);
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
            if (g->pext_col[x] < ncP) TR_SEND_EMIT(g->pext_col[x]);
          for (HYPRE_Int x = xi[i2]; x < xi[i2 + 1]; x++)
            if (g->pext_col[x] >= ncP) TR_SEND_EMIT(g->pext_col[x]);
        }
      for (HYPRE_Int k = adi[i1]; k < adi[i1 + 1] && !bad; k++) {
        const HYPRE_Int i2 = adj[k];
        if (amark[i2] == st) continue;
        amark[i2] = st;
        for (HYPRE_Int x = pdi[i2]; x < pdi[i2 + 1]; x++) TR_SEND_EMIT(pdj[x]);
        if (poi)
          for (HYPRE_Int x = poi[i2]; x < poi[i2 + 1]; x++) TR_SEND_EMIT(ncP + g->mapPQ[poj[x]]);
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
 * values are placed (apply_order).  Blocks of rows are walked into
 * growing buffers of their own, joined in row order at the end. */
static void trav_compute(tr_trav *t)
{
  const HYPRE_Int ncR = t->ncR, ncP = t->ncP, nAc = t->nAc;
  const HYPRE_Int *pi = hypre_CSRMatrixI(t->Pd), *pj = hypre_CSRMatrixJ(t->Pd);
  const HYPRE_Int *ai = hypre_CSRMatrixI(t->Ad), *aj = hypre_CSRMatrixJ(t->Ad);
  const int nth = t->nthreads > 0 ? t->nthreads : 1;
  t->ok = 0;
  t->ptr = calloc((size_t)ncR + 2, sizeof *t->ptr);
  HYPRE_Int *tp, *tr; /* columns of P (= RT) as rows */
  const int nomem = tr_columns_as_rows(t->Pd, ncR, nth, &tp, &tr, NULL);
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

static void *trav_thread(void *arg)
{
  tr_trav *t = (tr_trav *)arg;
  const double t0 = tr_hypre_wtime();
  trav_compute(t);
  t->seconds = tr_hypre_wtime() - t0;
  return NULL;
}

/* Rows of the assembled diag block (sorted, diagonal first) rewritten in
 * the precomputed order; 0 if a row's columns differ (then nothing of that
 * row was changed and the caller runs the full pass instead). */
static int apply_order(const tr_trav *t, HYPRE_Int ncR, HYPRE_Int ncP, const HYPRE_Int *di, HYPRE_Int *dj,
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

void tr_order_ahead_start(tr_galerkin *g)
{
  tr_trav *t = &g->trav;
  t->ncR = g->ncR; t->ncP = g->ncP; t->nAc = g->nAc; t->square = g->square;
  t->Pd = g->Pd; t->Ad = g->Ad;
  /* TILERAP_HYPRE_TEST_ORDER_THREAD=1: the threaded variant with the CPU
   * engine too (tests) */
  const int threaded = g->dev || tr_knob_int(TR_KNOB_HYPRE_TEST_ORDER_THREAD);
  /* On its own thread, the row-order pass's team leaves a core to this
   * thread and, with the CUDA engine, the cores of the staging copies
   * (4 threads, host_copy.c in the core library): oversubscribed, both
   * ran 2-3x slower on the H100 host.  At least half the cores. */
  const int maxt = tr_max_threads(), others = 1 + (g->dev ? 4 : 0);
  int team = maxt - others;
  if (team < maxt / 2) team = maxt / 2;
  t->nthreads = team > 1 ? team : 1;
  if (threaded && pthread_create(&g->trav_th, NULL, trav_thread, t) == 0) g->trav_on = 1;
  else { /* on this thread: every core */
    t->nthreads = maxt;
    trav_compute(t);
    tr_galerkin_phase(g, TR_PH_ORDER);
  }
}

void tr_order_ahead_join(tr_galerkin *g)
{
  if (!g->trav_on) return;
  pthread_join(g->trav_th, NULL);
  g->trav_on = 0;
  tr_galerkin_phase(g, TR_PH_ORDER);
  tr_hypre_add_phase(TR_PH_TRAV, g->trav.seconds);
  g->ph_local[TR_PH_TRAV] = g->trav.seconds;
}

void tr_order_rows(tr_galerkin *g, hypre_ParCSRMatrix *RAP)
{
  hypre_CSRMatrix *Cd = hypre_ParCSRMatrixDiag(RAP);
  const int applied = g->ordered ||
                      (g->fast_order && g->trav.ok &&
                       apply_order(&g->trav, g->ncR, g->ncP, hypre_CSRMatrixI(Cd), hypre_CSRMatrixJ(Cd),
                                   hypre_CSRMatrixData(Cd)));
  if (g->fast_order && !applied) /* not expected: the full pass below does it */
    tr_hypre_note("rank %d: row order computed ahead did not fit C (%s); recomputed", g->rank,
                  g->trav.ok ? "other columns" : "traversal failed");
  /* done when made on the device or computed while C was */
  if (!applied && g->order_hypre) reorder_rows(g, RAP);
}

void tr_order_free(tr_galerkin *g)
{
  free(g->trav.ptr);
  free(g->trav.col);
}
