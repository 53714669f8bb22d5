/* P^T A P on the CPU without AP: the CSR plans' Galerkin product with
 * TILERAP_CSR_PTAP=walk, the default (less memory, slower re-runs than the
 * two passes of TILERAP_CSR_PTAP=ap).
 *
 * Per coarse row I: R*A's row (R = P^T through a transposed view of P:
 * the fine rows i of P's column I, A's row i each, summed over A's
 * columns), then that row times P's rows, summed over coarse columns.
 * Nothing of AP is kept, so the plan holds P^T's view, the scratch and C's
 * structure: the two-pass plan's AP (structure and values) is most of its
 * memory.  A numeric run makes R*A's row again and sums into a dense
 * accumulator read out through C's known row; the scratch is made with the
 * walk, so numeric runs allocate nothing.  The sums run in an order fixed
 * by the operands alone (not by the threads).
 *
 * What the walk holds grows with P's entries (P^T's view: 4 bytes each,
 * P's values found in P's sorted rows rather than through 4 more bytes of
 * positions) and per thread with A's rows (a slot per fine column) or,
 * where those slots would outgrow an eighth of A's arrays (many threads),
 * with R*A's longest row (a hash table).  Each thread's part of an array
 * starts tr_cpu_stride elements after the last (no shared cache line). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spgemm_cpu.h"
#include "tile_internal.h"

struct tr_cpu_ptap_walk {
  int nth;
  int32_t nf, nc;
  int64_t *trp;   /* P^T's view: row I's fine rows tcol[trp[I] .. trp[I+1]) */
  int32_t *tcol;
  int32_t lmax;   /* longest R*A row (bounded above) */
  size_t fs, ls, cs; /* per-thread strides: fine columns, R*A's row, coarse columns */
  /* R*A's row's place of each fine column: hsize > 0, a hash table (key,
   * place; key -1 = free) of hsize slots per thread, hpos the slot of each
   * place; else slot[column] = place + 1 (0 = not in the row) */
  int32_t hsize;
  int32_t *hkey, *hval, *hpos;
  int32_t *slot;
  int32_t *lcol;  /* per thread: R*A's row, columns in first-seen order */
  double *lval;   /* per thread: ... its values */
  double *acc;    /* per thread: C's row, dense */
  double row_est; /* C's entries per row in a sample */
};

void tr_cpu_ptap_walk_destroy(tr_cpu_ptap_walk *W)
{
  if (!W) return;
  free(W->trp); free(W->tcol);
  free(W->hkey); free(W->hval); free(W->hpos);
  free(W->slot); free(W->lcol); free(W->lval); free(W->acc);
  free(W);
}

int64_t tr_cpu_ptap_walk_bytes(const tr_cpu_ptap_walk *W)
{
  if (!W) return 0;
  const int64_t nnz = W->trp[W->nc];
  const int64_t place = W->hsize ? (int64_t)W->hsize * 8 + (int64_t)W->ls * 4 : (int64_t)W->fs * 4;
  return (int64_t)sizeof *W + ((int64_t)W->nc + 2) * 8 + nnz * 4 +
         (int64_t)W->nth * (place + (int64_t)W->ls * 12 + (int64_t)W->cs * 8);
}

/* P(i, I): a binary search in P's row i (sorted, checked at creation) */
static inline double tr_p_value(const tilerap_csr *P, int32_t i, int32_t I)
{
  int64_t lo = P->rowptr[i], hi = P->rowptr[i + 1];
  while (hi - lo > 8) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (P->colidx[mid] <= I) lo = mid;
    else hi = mid;
  }
  for (; lo < hi; lo++)
    if (P->colidx[lo] == I) return P->val[lo];
  return 0.0; /* not reached: i is in P^T's row I */
}

static inline uint32_t tr_hash(int32_t c, int32_t hsize) { return ((uint32_t)c * 2654435761u) & (uint32_t)(hsize - 1); }

/* R*A's row I into thread t's list (values 0: structure only); returns
 * its length.  The places stay set until tr_ra_done.  hashed is a
 * constant at each call: the product loop is made once per way of finding
 * a column's place. */
static inline __attribute__((always_inline)) int32_t tr_ra_sum(const tr_cpu_ptap_walk *W, int t, int32_t I,
                                                               const tilerap_csr *A, const tilerap_csr *P,
                                                               int values, const int hashed)
{
  int32_t *lcol = W->lcol + (size_t)t * W->ls;
  double *lval = W->lval + (size_t)t * W->ls;
  const int32_t hs = W->hsize;
  int32_t *hk = hashed ? W->hkey + (size_t)t * (size_t)hs : NULL, *hv = hashed ? W->hval + (size_t)t * (size_t)hs : NULL;
  int32_t *hp = hashed ? W->hpos + (size_t)t * W->ls : NULL;
  int32_t *slot = hashed ? NULL : W->slot + (size_t)t * W->fs;
  int32_t n = 0;
  for (int64_t q = W->trp[I]; q < W->trp[I + 1]; q++) {
    const int32_t i1 = W->tcol[q];
    const double rv = values ? tr_p_value(P, i1, I) : 0.0;
    for (int64_t k = A->rowptr[i1]; k < A->rowptr[i1 + 1]; k++) {
      const int32_t i2 = A->colidx[k];
      const double x = values ? rv * A->val[k] : 0.0;
      if (hashed) {
        uint32_t h = tr_hash(i2, hs);
        while (hk[h] != -1 && hk[h] != i2) h = (h + 1) & (uint32_t)(hs - 1);
        if (hk[h] == i2) lval[hv[h]] += x;
        else { hk[h] = i2; hv[h] = n; hp[n] = (int32_t)h; lcol[n] = i2; lval[n] = x; n++; }
      } else {
        const int32_t s = slot[i2];
        if (s) lval[s - 1] += x;
        else { lcol[n] = i2; lval[n] = x; slot[i2] = ++n; }
      }
    }
  }
  return n;
}

static int32_t tr_ra_row(const tr_cpu_ptap_walk *W, int t, int32_t I, const tilerap_csr *A, const tilerap_csr *P,
                         int values)
{
  return W->hsize ? tr_ra_sum(W, t, I, A, P, values, 1) : tr_ra_sum(W, t, I, A, P, values, 0);
}

static void tr_ra_done(const tr_cpu_ptap_walk *W, int t, int32_t n)
{
  if (W->hsize) {
    int32_t *hk = W->hkey + (size_t)t * (size_t)W->hsize;
    const int32_t *hp = W->hpos + (size_t)t * W->ls;
    for (int32_t u = 0; u < n; u++) hk[hp[u]] = -1;
    return;
  }
  int32_t *slot = W->slot + (size_t)t * W->fs;
  const int32_t *lcol = W->lcol + (size_t)t * W->ls;
  for (int32_t u = 0; u < n; u++) slot[lcol[u]] = 0;
}

int tr_cpu_ptap_walk_new(const tilerap_csr *A, const tilerap_csr *P, tr_cpu_ptap_walk **out)
{
  *out = NULL;
  tr_cpu_ptap_walk *W = tilerap_host_calloc(1, sizeof *W);
  if (!W) return TILERAP_ERR_NOMEM;
  W->nth = tr_cpu_threads();
  W->nf = A->m;
  W->nc = P->n;
  const int32_t nf = W->nf, nc = W->nc;
  /* P^T's view without value positions (P's values are found in its rows) */
  if (tr_cpu_csr_transpose(P->m, P->n, P->rowptr, P->colidx, &W->trp, &W->tcol, NULL)) {
    tr_cpu_ptap_walk_destroy(W);
    return TILERAP_ERR_NOMEM;
  }
  /* R*A's longest row, at most the A rows it sums and at most nf */
  int64_t lmax = 0;
  for (int32_t I = 0; I < nc; I++) {
    int64_t s = 0;
    for (int64_t q = W->trp[I]; q < W->trp[I + 1] && s < nf; q++)
      s += A->rowptr[W->tcol[q] + 1] - A->rowptr[W->tcol[q]];
    if (s > lmax) lmax = s;
  }
  W->lmax = (int32_t)(lmax < nf ? lmax : nf) + 1;
  W->fs = tr_cpu_stride(nf);
  W->ls = tr_cpu_stride(W->lmax);
  W->cs = tr_cpu_stride(nc);
  /* Every thread holds an R*A row of up to lmax entries.  A P of a few
   * columns of wide support (one aggregate, a deflation space) makes those
   * rows as long as A is wide, and 64 threads would hold 64 of them (a
   * 2000^2 grid's one-column P: 4 GB against A*P's 128 MB): no more
   * threads than C has rows, and no more than fit twice A's CSR arrays. */
  if (W->nth > nc) W->nth = nc > 1 ? nc : 1;
  {
    const int64_t row_bytes = (int64_t)W->ls * 16; /* lcol, lval, and a slot or hash entry each */
    int64_t budget = 2 * (A->nnz * 12 + (int64_t)nf * 4);
    if (budget < ((int64_t)1 << 26)) budget = (int64_t)1 << 26;
    if ((int64_t)W->nth * row_bytes > budget) W->nth = budget / row_bytes > 1 ? (int)(budget / row_bytes) : 1;
  }
  /* a slot per fine column and thread (a hash probe costs 1.4x on the
   * R*A rows of elasticity and the 125-point stencil) while those stay
   * within an eighth of A's CSR arrays; else a hash table at most half
   * full where it is smaller: many threads would otherwise hold more than
   * PETSc's MatPtAP */
  int64_t hs = 16;
  while (hs < 2 * (int64_t)W->lmax) hs *= 2;
  const size_t nth = (size_t)W->nth;
  if ((int64_t)nth * (int64_t)W->fs * 4 > A->nnz * 12 / 8 + (int64_t)nf &&
      hs * 8 + (int64_t)W->ls * 4 < (int64_t)W->fs * 4) {
    W->hsize = (int32_t)hs; /* 16 int32 at least: a thread's part fills whole cache lines */
    W->hkey = tilerap_host_alloc(nth * (size_t)hs, sizeof *W->hkey);
    W->hval = tilerap_host_alloc(nth * (size_t)hs, sizeof *W->hval);
    W->hpos = tilerap_host_alloc(nth * W->ls, sizeof *W->hpos);
    if (W->hkey) memset(W->hkey, 0xff, nth * (size_t)hs * sizeof *W->hkey);
  } else W->slot = tilerap_host_calloc(nth * W->fs, sizeof *W->slot);
  W->lcol = tilerap_host_alloc(nth * W->ls, sizeof *W->lcol);
  W->lval = tilerap_host_alloc(nth * W->ls, sizeof *W->lval);
  W->acc = tilerap_host_calloc(nth * W->cs, sizeof *W->acc);
  if ((W->hsize ? !W->hkey || !W->hval || !W->hpos : !W->slot) || !W->lcol || !W->lval || !W->acc) {
    tr_cpu_ptap_walk_destroy(W);
    return TILERAP_ERR_NOMEM;
  }
  *out = W;
  return TILERAP_SUCCESS;
}

/* C's entries per row from coarse rows spread over C (128, but at most
 * one in 32, at least 16: a few hundred coarse rows of elasticity sum
 * tens of thousands of products each), for the first product's buffers */
static void tr_walk_sample(tr_cpu_ptap_walk *W, const tilerap_csr *A, const tilerap_csr *P)
{
  const int32_t nc = W->nc;
  int32_t want = nc / 32 < 16 ? 16 : nc / 32;
  if (want > 128) want = 128;
  const int32_t step = nc > want ? nc / want : 1;
  int32_t *cm = tilerap_host_calloc((size_t)nc + 1, sizeof *cm);
  W->row_est = 1.0;
  if (!cm) return; /* buffers then grow */
  int64_t ent = 0;
  for (int32_t I = 0; I < nc; I += step) {
    const int32_t n = tr_ra_row(W, 0, I, A, P, 0);
    for (int32_t u = 0; u < n; u++)
      for (int64_t x = P->rowptr[W->lcol[u]]; x < P->rowptr[W->lcol[u] + 1]; x++)
        if (cm[P->colidx[x]] != I + 1) { cm[P->colidx[x]] = I + 1; ent++; }
    tr_ra_done(W, 0, n);
  }
  free(cm);
  const int32_t rows = (nc + step - 1) / step;
  if (rows > 0) W->row_est = (double)ent / (double)rows + 1.0;
}

typedef struct {
  int32_t *col;
  double *val;
  size_t n, cap;
} tr_walk_buf;

static int tr_walk_grow(tr_walk_buf *b)
{
  const size_t cap = b->cap ? b->cap + b->cap / 2 : 4096;
  int32_t *c = realloc(b->col, cap * sizeof *c);
  if (c) b->col = c;
  double *v = c ? realloc(b->val, cap * sizeof *v) : NULL;
  if (v) b->val = v;
  if (!c || !v) return 1;
  b->cap = cap;
  return 0;
}

/* C's structure and values (values 0: zeros), rows sorted.  Blocks of
 * coarse rows, several per thread, each into its own growing buffer; C is
 * made from them at the end. */
int tr_cpu_ptap_walk_first(tr_cpu_ptap_walk *W, const tilerap_csr *A, const tilerap_csr *P, int values,
                           tilerap_csr **Cout, int64_t *macs_out)
{
  *Cout = NULL;
  const int32_t nc = W->nc;
  const int nth = W->nth;
  tr_walk_sample(W, A, P);
  int64_t nb = nth > 1 ? (int64_t)nth * 16 : 1;
  if (nb > nc) nb = nc > 0 ? nc : 1;
  tr_walk_buf *buf = tilerap_host_calloc((size_t)nb, sizeof *buf);
  int64_t *len = tilerap_host_calloc((size_t)nc + 1, sizeof *len);
  int64_t *bpos = tilerap_host_calloc((size_t)nb + 1, sizeof *bpos);
  /* per thread: each coarse column's place in the row being made, and
   * the row that last met it (rows from 1) */
  int32_t *at = tilerap_host_alloc((size_t)nth * W->cs, sizeof *at);
  int32_t *cmk = tilerap_host_calloc((size_t)nth * W->cs, sizeof *cmk);
  int nomem = !buf || !len || !bpos || !at || !cmk;
  int64_t macs = 0;
  if (!nomem)
#pragma omp parallel num_threads(nth) reduction(| : nomem) reduction(+ : macs)
  {
    const int t = tr_cpu_thread();
    int32_t *myat = at + (size_t)t * W->cs, *em = cmk + (size_t)t * W->cs;
    const int32_t *lcol = W->lcol + (size_t)t * W->ls;
    const double *lval = W->lval + (size_t)t * W->ls;
    double *tmp = W->acc + (size_t)t * W->cs;
#pragma omp for schedule(dynamic, 1)
    for (int64_t blk = 0; blk < nb; blk++) {
      if (nomem) continue;
      tr_walk_buf *b = &buf[blk];
      const int32_t r0 = (int32_t)(nc * blk / nb), r1 = (int32_t)(nc * (blk + 1) / nb);
      /* sized by the sample: most blocks never grow (a growth holds the
       * old and the new buffer at once) */
      b->cap = (size_t)((double)(r1 - r0) * W->row_est * 1.125) + 64;
      b->col = malloc(b->cap * sizeof *b->col);
      b->val = malloc(b->cap * sizeof *b->val);
      if (!b->col || !b->val) { nomem = 1; continue; }
      for (int32_t I = r0; I < r1 && !nomem; I++) {
        const int32_t st = I + 1, nra = tr_ra_row(W, t, I, A, P, values);
        const size_t n0 = b->n;
        for (int32_t u = 0; u < nra && !nomem; u++) {
          const int32_t i2 = lcol[u];
          const double v = lval[u];
          for (int64_t x = P->rowptr[i2]; x < P->rowptr[i2 + 1]; x++) {
            const int32_t c = P->colidx[x];
            const double y = values ? v * P->val[x] : 0.0;
            macs++;
            if (em[c] == st) { b->val[n0 + myat[c]] += y; continue; }
            if (b->n == b->cap && tr_walk_grow(b)) { nomem = 1; break; }
            em[c] = st; myat[c] = (int32_t)(b->n - n0);
            b->col[b->n] = c; b->val[b->n++] = y;
          }
        }
        tr_ra_done(W, t, nra);
        if (nomem) break;
        /* sorted: the columns, then the values gathered through myat */
        const int32_t n = (int32_t)(b->n - n0);
        int32_t *cc = b->col + n0;
        tr_cpu_sort_i32(cc, n);
        for (int32_t j = 0; j < n; j++) tmp[j] = b->val[n0 + myat[cc[j]]];
        memcpy(b->val + n0, tmp, (size_t)n * sizeof *tmp);
        len[I + 1] = n;
      }
      bpos[blk + 1] = (int64_t)b->n;
    }
  }
  memset(W->acc, 0, (size_t)nth * W->cs * sizeof *W->acc);
  free(at); free(cmk);
  tilerap_csr *C = NULL;
  int err = nomem ? TILERAP_ERR_NOMEM : TILERAP_SUCCESS;
  if (!err) {
    for (int64_t blk = 0; blk < nb; blk++) bpos[blk + 1] += bpos[blk];
    for (int32_t I = 0; I < nc; I++) len[I + 1] += len[I];
    err = tilerap_csr_create(nc, nc, bpos[nb], &C);
  }
  if (!err) {
    memcpy(C->rowptr, len, ((size_t)nc + 1) * sizeof *len);
    /* each buffer freed as soon as it is copied: C and all buffers are
     * not held at once */
#pragma omp parallel for num_threads(nth) schedule(dynamic, 1)
    for (int64_t blk = 0; blk < nb; blk++) {
      if (bpos[blk + 1] > bpos[blk]) {
        memcpy(C->colidx + bpos[blk], buf[blk].col, (size_t)(bpos[blk + 1] - bpos[blk]) * sizeof *C->colidx);
        memcpy(C->val + bpos[blk], buf[blk].val, (size_t)(bpos[blk + 1] - bpos[blk]) * sizeof *C->val);
      }
      free(buf[blk].col); free(buf[blk].val);
      buf[blk].col = NULL; buf[blk].val = NULL;
    }
  }
  for (int64_t blk = 0; buf && blk < nb; blk++) { free(buf[blk].col); free(buf[blk].val); }
  free(buf); free(len); free(bpos);
  if (err) return err;
  *Cout = C;
  *macs_out = macs;
  return TILERAP_SUCCESS;
}

/* C's values on C's known structure; no allocation */
int tr_cpu_ptap_walk_numeric(tr_cpu_ptap_walk *W, const tilerap_csr *A, const tilerap_csr *P, const int64_t *crp,
                             const int32_t *ccol, double *cval)
{
  const int32_t nc = W->nc;
#pragma omp parallel num_threads(W->nth)
  {
    const int t = tr_cpu_thread();
    const int32_t *lcol = W->lcol + (size_t)t * W->ls;
    const double *lval = W->lval + (size_t)t * W->ls;
    double *acc = W->acc + (size_t)t * W->cs;
#pragma omp for schedule(dynamic, 64)
    for (int32_t I = 0; I < nc; I++) {
      const int32_t nra = tr_ra_row(W, t, I, A, P, 1);
      for (int32_t u = 0; u < nra; u++) {
        const int32_t i2 = lcol[u];
        const double v = lval[u];
        for (int64_t x = P->rowptr[i2]; x < P->rowptr[i2 + 1]; x++) acc[P->colidx[x]] += v * P->val[x];
      }
      tr_ra_done(W, t, nra);
      for (int64_t k = crp[I]; k < crp[I + 1]; k++) { cval[k] = acc[ccol[k]]; acc[ccol[k]] = 0.0; }
    }
  }
  return TILERAP_SUCCESS;
}
