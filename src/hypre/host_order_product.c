/* The CPU engine's Galerkin product on one rank, made in hypre's order.
 *
 * With RT = P, one block each and C square, hypre's order of a row of C
 * (row_order.c) is the first-encounter order of R*A's row (fine rows i1
 * of P's column ic ascending, A's row i1 each) times P's rows, after the
 * diagonal.  Made that way directly, a row's columns come out in that
 * order and its values summed along the same walk: no sorted operands
 * to stitch, no sorted C to reorder afterwards, and C goes straight into
 * hypre's diag arrays (design.md, hypre hook).
 *
 * Rows are taken in blocks by the threads (blocks of rows differ a lot in
 * cost on coarse levels), each block into buffers of its own that grow,
 * joined in row order at the end. */
#include "galerkin_stages.h"
#include "tuning.h"

/* No fused multiply-adds: the sums are hypre's, rounded as hypre's own
 * (plain) build rounds them */
#pragma GCC optimize("fp-contract=off")

#include <stdlib.h>
#include <string.h>

typedef struct {
  HYPRE_Int *col;
  HYPRE_Complex *val;
  size_t n, cap;
} tr_order_buf;

static int buf_grow(tr_order_buf *b)
{
  const size_t cap = b->cap ? 2 * b->cap : 4096;
  HYPRE_Int *c = realloc(b->col, cap * sizeof *c);
  if (c) b->col = c;
  HYPRE_Complex *v = c ? realloc(b->val, cap * sizeof *v) : NULL;
  if (v) b->val = v;
  if (!c || !v) return 1;
  b->cap = cap;
  return 0;
}

/* the product handed back to hypre (reason ENGINE), why noted */
#define TR_REFUSED(g_, fmt_, n_)                                                                   \
  (tr_hypre_note("rank %d: host product in hypre's order: " fmt_, (g_)->rank, (long long)(n_)), \
   tr_galerkin_refuse((g_), TILERAP_HYPRE_FWD_ENGINE))

/* P's columns in range (they index counts and markers below) */
static int columns_in_range(hypre_CSRMatrix *M, HYPRE_Int ncols)
{
  const HYPRE_Int m = hypre_CSRMatrixNumRows(M), *mi = hypre_CSRMatrixI(M), *mj = hypre_CSRMatrixJ(M);
  const HYPRE_Int nz = mi[m];
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (nz > 16 * TR_PAR_ROWS)
  for (HYPRE_Int k = 0; k < nz; k++) bad |= mj[k] < 0 || mj[k] >= ncols;
  return !bad;
}

int tr_host_order_product(tr_galerkin *g)
{
  const HYPRE_Int ncR = g->ncR, ncP = g->ncP, nAc = g->nAc;
  const HYPRE_Int *pi = hypre_CSRMatrixI(g->Pd), *pj = hypre_CSRMatrixJ(g->Pd);
  const HYPRE_Int *ai = hypre_CSRMatrixI(g->Ad), *aj = hypre_CSRMatrixJ(g->Ad);
  const HYPRE_Complex *pa = hypre_CSRMatrixData(g->Pd), *aa = hypre_CSRMatrixData(g->Ad);
  const int nth = tr_max_threads();
  if (!columns_in_range(g->Pd, ncR)) return TR_REFUSED(g, "P has a column outside 0..%lld", ncR - 1);
  HYPRE_Int *tp = NULL, *tr = NULL, *tk = NULL; /* P's columns as rows: R = P^T with its values' positions */
  const int64_t work = (int64_t)pi[hypre_CSRMatrixNumRows(g->Pd)] + ai[hypre_CSRMatrixNumRows(g->Ad)];
  const int par = nth > 1 && (work > 65536 || tr_knob_int(TR_KNOB_HYPRE_TEST_PARALLEL));
  int64_t nb = par ? (int64_t)nth * 16 : 1;
  if (nb > ncR) nb = ncR > 0 ? ncR : 1;
  tr_order_buf *buf = calloc((size_t)nb, sizeof *buf);
  int64_t *bpos = calloc((size_t)nb + 1, sizeof *bpos);
  g->s_di = hypre_CTAlloc(HYPRE_Int, ncR + 1, HYPRE_MEMORY_HOST);
  int nomem = tr_columns_as_rows(g->Pd, ncR, nth, &tp, &tr, &tk) || !buf || !bpos || !g->s_di, range = 0;
  if (!nomem)
#pragma omp parallel num_threads(nth) reduction(| : nomem, range) if (par)
  {
    /* markers hold row + 1 (calloc: 0 is never seen) */
    HYPRE_Int *amark = calloc((size_t)nAc + 1, sizeof *amark), *emit = calloc((size_t)ncP + 1, sizeof *emit);
    HYPRE_Int *at = malloc(((size_t)ncP + 1) * sizeof *at), *ra = malloc(((size_t)nAc + 1) * sizeof *ra);
    HYPRE_Complex *rav = malloc(((size_t)nAc + 1) * sizeof *rav);
    if (!amark || !emit || !at || !ra || !rav) nomem = 1;
#pragma omp for schedule(dynamic, 1)
    for (int64_t blk = 0; blk < nb; blk++) {
      if (nomem || range) continue;
      const HYPRE_Int r0 = (HYPRE_Int)(ncR * blk / nb), r1 = (HYPRE_Int)(ncR * (blk + 1) / nb);
      tr_order_buf *b = &buf[blk];
      for (HYPRE_Int r = r0; r < r1 && !nomem && !range; r++) {
        const HYPRE_Int st = r + 1;
        const size_t n0 = b->n;
        /* the diagonal first, whether products reach it or not (hypre's) */
        if (b->n == b->cap && buf_grow(b)) { nomem = 1; break; }
        emit[r] = st; at[r] = (HYPRE_Int)(b->n - n0);
        b->col[b->n] = r; b->val[b->n++] = 0.0;
        /* R*A's row: first-encounter order, values summed along the walk */
        HYPRE_Int nra = 0;
        for (HYPRE_Int q = tp[r]; q < tp[r + 1]; q++) {
          const HYPRE_Int i1 = tr[q];
          const HYPRE_Complex rv = pa[tk[q]];
          for (HYPRE_Int k = ai[i1]; k < ai[i1 + 1]; k++) {
            const HYPRE_Int i2 = aj[k];
            if (i2 < 0 || i2 >= nAc) { range = 1; break; }
            if (amark[i2] != st) { amark[i2] = st; ra[nra++] = i2; rav[i2] = rv * aa[k]; }
            else rav[i2] += rv * aa[k];
          }
          if (range) break;
        }
        /* times P's rows, in that order */
        for (HYPRE_Int u = 0; u < nra && !range; u++) {
          const HYPRE_Int i2 = ra[u];
          const HYPRE_Complex v = rav[i2];
          for (HYPRE_Int x = pi[i2]; x < pi[i2 + 1]; x++) {
            const HYPRE_Int c = pj[x];
            if (emit[c] == st) { b->val[n0 + at[c]] += v * pa[x]; continue; }
            if (b->n == b->cap && buf_grow(b)) { nomem = 1; break; }
            emit[c] = st; at[c] = (HYPRE_Int)(b->n - n0);
            b->col[b->n] = c; b->val[b->n++] = v * pa[x];
          }
          if (nomem) break;
        }
        g->s_di[r + 1] = (HYPRE_Int)(b->n - n0);
      }
      bpos[blk + 1] = (int64_t)b->n;
    }
    free(amark); free(emit); free(at); free(ra); free(rav);
  }
  int err = nomem ? TILERAP_ERR_NOMEM : range ? TILERAP_ERR_RANGE : TILERAP_SUCCESS;
  const int64_t int_max = (int64_t)(((uint64_t)1 << (8 * sizeof(HYPRE_Int) - 1)) - 1);
  if (!err) {
    for (int64_t blk = 0; blk < nb; blk++) bpos[blk + 1] += bpos[blk];
    if (bpos[nb] > int_max) err = TILERAP_ERR_OVERFLOW; /* before the row pointers' sum */
  }
  if (!err) {
    for (HYPRE_Int r = 0; r < ncR; r++) g->s_di[r + 1] += g->s_di[r];
    const int64_t nnz = bpos[nb];
    g->s_dj = hypre_TAlloc(HYPRE_Int, nnz > 0 ? nnz : 1, HYPRE_MEMORY_HOST);
    g->s_da = hypre_TAlloc(HYPRE_Complex, nnz > 0 ? nnz : 1, HYPRE_MEMORY_HOST);
    if (!g->s_dj || !g->s_da || nnz != (int64_t)g->s_di[ncR]) err = TILERAP_ERR_NOMEM;
  }
  if (!err) /* blocks in row order; each copy touches its own pages */
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1) if (par)
    for (int64_t blk = 0; blk < nb; blk++)
      if (bpos[blk + 1] > bpos[blk]) {
        memcpy(g->s_dj + bpos[blk], buf[blk].col, (size_t)(bpos[blk + 1] - bpos[blk]) * sizeof *g->s_dj);
        memcpy(g->s_da + bpos[blk], buf[blk].val, (size_t)(bpos[blk + 1] - bpos[blk]) * sizeof *g->s_da);
      }
  for (int64_t blk = 0; buf && blk < nb; blk++) { free(buf[blk].col); free(buf[blk].val); }
  free(buf); free(tp); free(tr); free(tk);
  const int64_t total = bpos ? bpos[nb] : 0;
  free(bpos);
  if (err) {
    hypre_TFree(g->s_di, HYPRE_MEMORY_HOST); hypre_TFree(g->s_dj, HYPRE_MEMORY_HOST);
    hypre_TFree(g->s_da, HYPRE_MEMORY_HOST);
    g->s_di = g->s_dj = NULL; g->s_da = NULL;
    if (err == TILERAP_ERR_RANGE) return TR_REFUSED(g, "A has a column outside 0..%lld", nAc - 1);
    if (err == TILERAP_ERR_OVERFLOW) return TR_REFUSED(g, "C has %lld entries, beyond HYPRE_Int", total);
    return TR_REFUSED(g, "out of host memory (C of %lld rows)", ncR);
  }
  g->straight = 1;
  g->ordered = 1;
  g->c_nnz = g->s_di[ncR];
  return 0;
}
