/* One level of a kept BoomerAMG hierarchy (re-setup, resetup.c): the
 * Galerkin product A_{l+1} = P^T A_l P recomputed from new values of A_l
 * with P, the plan and every map kept.
 *
 * Recorded once from the level's A, P and the A_{l+1} that the full setup
 * made (by tilerap or by hypre): A_sq = [A_diag | A_offd] with empty rows
 * for the rows of P owned elsewhere, P_full = [P_diag P_offd ; P_ext], one
 * Galerkin plan C_all = P_full^T A_sq P_full, and for every entry of C_all
 * the slot it lands in: A_{l+1}'s diag or offd data, or a send buffer for
 * the rank that owns its row (which adds what it receives).  A re-run is
 * then a scatter of A_l's values, a numeric run of the plan, a scatter of
 * C_all's values and one exchange of values: no allocation, no search.
 *
 * Host memory (CPU builds of hypre; the engine is the plan's), or device
 * memory (CUDA builds): on one rank the tiles are made from hypre's device
 * arrays and the maps are slots found on the GPU, so that nothing but a
 * count passes through the host, at the record only; on several ranks the
 * record is the host's, made once on host copies, and a run stages only the
 * exchanged values through the host. */
#include "hook_internal.h"
#include "level_recipe.h"
#include "tilerap_csr_layouts.h"
#include "tilerap_device.h"
#include "tuning.h"

#include <stdlib.h>
#include <string.h>

struct tr_level_recipe {
  MPI_Comm comm;
  int nprocs;
  /* what the recipe was made for (checked at every run) */
  HYPRE_Int nA, nAo, nnz_ad, nnz_ao;
  HYPRE_Int nC, nnz_cd, nnz_co;
  tilerap_tile_matrix *Asq, *Pfull, *Call;
  tilerap_ptap_plan plan;
  int64_t *amap;     /* [nnz_ad + nnz_ao]: A_l's entry -> slot of Asq->val  */
  int64_t *cmap;     /* [Call->nnz]: diag slot, nnz_cd + offd slot, or
                        nnz_cd + nnz_co + send slot                          */
  /* values exchanged with the neighbours */
  int nsend, nrecv;
  int *send_proc, *recv_proc;
  HYPRE_Int *send_off, *recv_off; /* [n+1] */
  double *send_buf, *recv_buf;
  HYPRE_Int *rmap;   /* [recv_off[nrecv]]: received value -> slot of A_{l+1} */
  MPI_Request *req;
  /* device memory: A_sq->val[aslot[k]] = A's data[k], C's data[k] =
   * C_all->val[cslot[k]] (0 where cslot[k] < 0) (device arrays) */
  int dev;
  int64_t *d_aslot, *d_cslot;
  /* device memory on several ranks (dev == 2): amap on the device, cmap
   * split by destination (C's diag, C's offd, the send buffer; -1
   * elsewhere), rmap split likewise, the exchanged values staged through
   * the host buffers */
  int64_t *d_amap, *d_cmap[3], *d_rmap[2];
  double *d_send, *d_recv;
};

/* ---- record ------------------------------------------------------- */

/* Slot of entry (r, c) in a host tile matrix, or -1 if not stored. */
static int64_t tile_slot(const tilerap_tile_matrix *T, int32_t r, int32_t c)
{
  const int64_t t0 = T->tile_ptr[r >> 4], t1 = T->tile_ptr[(r >> 4) + 1];
  int64_t lo = t0, hi = t1 - 1;
  const int32_t tc = c >> 4;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (T->tile_col[mid] < tc) lo = mid + 1;
    else if (T->tile_col[mid] > tc) hi = mid - 1;
    else {
      const int64_t k = 16 * mid + (r & 15);
      const unsigned mask = T->row_mask[k], bit = 1u << (c & 15);
      if (!(mask & bit)) return -1;
      return T->tile_off[mid] + T->row_ptr[k] + __builtin_popcount(mask & (bit - 1));
    }
  }
  return -1;
}

/* Column keys of A_{l+1}'s rows: diag column c as c, offd column o as nC + o. */
typedef struct {
  HYPRE_Int key, slot;
} tr_keyslot;

static int keyslot_cmp(const void *x, const void *y)
{
  const tr_keyslot *a = x, *b = y;
  return (a->key > b->key) - (a->key < b->key);
}

typedef struct {
  HYPRE_Int nC;
  HYPRE_Int *ptr;    /* [nC+1] */
  tr_keyslot *ks;    /* each row sorted by key */
} tr_row_index;

static int row_index_make(hypre_CSRMatrix *Cd, hypre_CSRMatrix *Co, tr_row_index *ix)
{
  const HYPRE_Int nC = hypre_CSRMatrixNumRows(Cd), nnzd = hypre_CSRMatrixNumNonzeros(Cd);
  const HYPRE_Int *di = hypre_CSRMatrixI(Cd), *dj = hypre_CSRMatrixJ(Cd);
  const HYPRE_Int *oi = hypre_CSRMatrixI(Co), *oj = hypre_CSRMatrixJ(Co);
  ix->nC = nC;
  ix->ptr = malloc(((size_t)nC + 1) * sizeof *ix->ptr);
  ix->ks = malloc(((size_t)nnzd + hypre_CSRMatrixNumNonzeros(Co) + 1) * sizeof *ix->ks);
  if (!ix->ptr || !ix->ks) return 1;
  ix->ptr[0] = 0;
  for (HYPRE_Int r = 0; r < nC; r++) ix->ptr[r + 1] = ix->ptr[r] + di[r + 1] - di[r] + (oi ? oi[r + 1] - oi[r] : 0);
  /* rows apart: filled and sorted in parallel (TILERAP_HYPRE_TEST_PARALLEL:
   * at every size, for the tests' small problems) */
#pragma omp parallel for schedule(dynamic, 256) if (nC > TR_PAR_ROWS || tr_knob_int(TR_KNOB_HYPRE_TEST_PARALLEL))
  for (HYPRE_Int r = 0; r < nC; r++) {
    HYPRE_Int w = ix->ptr[r];
    for (HYPRE_Int k = di[r]; k < di[r + 1]; k++) ix->ks[w++] = (tr_keyslot){dj[k], k};
    if (oi)
      for (HYPRE_Int k = oi[r]; k < oi[r + 1]; k++) ix->ks[w++] = (tr_keyslot){nC + oj[k], nnzd + k};
    qsort(ix->ks + ix->ptr[r], (size_t)(w - ix->ptr[r]), sizeof *ix->ks, keyslot_cmp);
  }
  return 0;
}

static HYPRE_Int row_index_find(const tr_row_index *ix, HYPRE_Int r, HYPRE_Int key)
{
  HYPRE_Int lo = ix->ptr[r], hi = ix->ptr[r + 1] - 1;
  while (lo <= hi) {
    const HYPRE_Int mid = lo + (hi - lo) / 2;
    if (ix->ks[mid].key < key) lo = mid + 1;
    else if (ix->ks[mid].key > key) hi = mid - 1;
    else return ix->ks[mid].slot;
  }
  return -1;
}

/* Key of global column g in A_{l+1} (first, nC, its col_map_offd), or -1. */
static HYPRE_Int col_key(HYPRE_BigInt g, HYPRE_BigInt first, HYPRE_Int nC, const HYPRE_BigInt *cmap, HYPRE_Int nco)
{
  if (g >= first && g < first + nC) return (HYPRE_Int)(g - first);
  const HYPRE_Int o = nco ? tr_big_find(cmap, nco, g) : -1;
  return o < 0 ? -1 : nC + o;
}

/* Owner of global coarse row g from every rank's first row (np+1 starts). */
static int owner_of(const HYPRE_BigInt *starts, int np, HYPRE_BigInt g)
{
  int lo = 0, hi = np - 1;
  while (lo < hi) { /* last p with starts[p] <= g */
    const int mid = (lo + hi + 1) / 2;
    if (starts[mid] <= g) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

typedef struct {
  hypre_CSRMatrix *Pext;
  HYPRE_BigInt *colQ;
  int32_t *mapPo, *pext_col;
  HYPRE_BigInt *starts, *pairs, *rpairs;
  int *scount, *rcount, *sdisp, *rdisp, *dest;
  tr_row_index ix;
  tilerap_tile_matrix *Chost; /* C_all's structure on the host (device recipes) */
} tr_record_tmp;

static void record_tmp_free(tr_record_tmp *t)
{
  if (t->Pext) hypre_CSRMatrixDestroy(t->Pext);
  free(t->colQ); free(t->mapPo); free(t->pext_col); free(t->starts); free(t->pairs); free(t->rpairs);
  free(t->scount); free(t->rcount); free(t->sdisp); free(t->rdisp); free(t->dest);
  free(t->ix.ptr); free(t->ix.ks);
  tilerap_tile_destroy(&t->Chost);
}

void tr_level_recipe_free(tr_level_recipe **rp)
{
  tr_level_recipe *r = *rp;
  if (!r) return;
  tilerap_ptap_plan_destroy(&r->plan);
  tilerap_tile_destroy(&r->Asq);
  tilerap_tile_destroy(&r->Pfull);
  tilerap_tile_destroy(&r->Call);
  free(r->amap); free(r->cmap);
  free(r->send_proc); free(r->recv_proc); free(r->send_off); free(r->recv_off);
  free(r->send_buf); free(r->recv_buf); free(r->rmap); free(r->req);
  tilerap_device_free(r->d_aslot);
  tilerap_device_free(r->d_cslot);
  tilerap_device_free(r->d_amap);
  for (int q = 0; q < 3; q++) tilerap_device_free(r->d_cmap[q]);
  for (int q = 0; q < 2; q++) tilerap_device_free(r->d_rmap[q]);
  tilerap_device_free(r->d_send);
  tilerap_device_free(r->d_recv);
  free(r);
  *rp = NULL;
}

/* The local part of the record; 0, or 1 with *why. */
static int record_local(tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, hypre_ParCSRMatrix *C,
                        const tilerap_options *opt, tr_record_tmp *t, const char **why)
{
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  hypre_CSRMatrix *Pd = hypre_ParCSRMatrixDiag(P), *Po = hypre_ParCSRMatrixOffd(P);
  hypre_CSRMatrix *Cd = hypre_ParCSRMatrixDiag(C), *Co = hypre_ParCSRMatrixOffd(C);
  const HYPRE_Int nA = hypre_CSRMatrixNumRows(Ad), nAo = hypre_CSRMatrixNumCols(Ao);
  const HYPRE_Int ncP = hypre_CSRMatrixNumCols(Pd), nPo = hypre_CSRMatrixNumCols(Po);
  const HYPRE_BigInt firstP = hypre_ParCSRMatrixFirstColDiag(P);
  r->nA = nA; r->nAo = nAo;
  r->nnz_ad = hypre_CSRMatrixNumNonzeros(Ad); r->nnz_ao = hypre_CSRMatrixNumNonzeros(Ao);
  r->nC = hypre_CSRMatrixNumRows(Cd);
  r->nnz_cd = hypre_CSRMatrixNumNonzeros(Cd); r->nnz_co = hypre_CSRMatrixNumNonzeros(Co);
  if (hypre_CSRMatrixNumCols(Ad) != nA || hypre_CSRMatrixNumRows(Pd) != nA || r->nC != ncP ||
      hypre_ParCSRMatrixFirstRowIndex(C) != firstP || hypre_CSRMatrixNumCols(Cd) != ncP) {
    *why = "shapes of A, P and the coarse operator do not match";
    return 1;
  }
  if ((r->nnz_ao && !hypre_CSRMatrixI(Ao)) || (r->nnz_co && !hypre_CSRMatrixI(Co))) {
    *why = "an offd block without row pointers";
    return 1;
  }

  /* Q: P's offd columns and the off-rank columns of P_ext */
  const HYPRE_Int ext_nnz = t->Pext ? hypre_CSRMatrixI(t->Pext)[hypre_CSRMatrixNumRows(t->Pext)] : 0;
  if (t->Pext && hypre_CSRMatrixNumRows(t->Pext) != nAo) { *why = "rows of P from other ranks"; return 1; }
  HYPRE_Int nQ = 0;
  const int qerr = tr_columns_q(hypre_ParCSRMatrixColMapOffd(P), nPo, t->Pext ? hypre_CSRMatrixBigJ(t->Pext) : NULL,
                                ext_nnz, firstP, ncP, &t->colQ, &nQ, &t->mapPo, &t->pext_col);
  if (qerr || (int64_t)nA + nAo > INT32_MAX) {
    *why = qerr == TILERAP_ERR_NOMEM ? "out of memory" : "local size beyond 32 bits";
    return 1;
  }

  /* P_full and A_sq as tiles (P's values are kept for good) */
  tr_segment ps[2];
  int nps = 0;
  ps[nps] = (tr_segment){0, nA, 1, {{hypre_CSRMatrixI(Pd), hypre_CSRMatrixJ(Pd), NULL, hypre_CSRMatrixData(Pd), NULL, 0}}};
  if (nPo && hypre_CSRMatrixI(Po))
    ps[nps].b[ps[nps].nblocks++] =
      (tr_block){hypre_CSRMatrixI(Po), hypre_CSRMatrixJ(Po), NULL, hypre_CSRMatrixData(Po), t->mapPo, ncP};
  nps++;
  if (t->Pext && nAo)
    ps[nps++] = (tr_segment){nA, nAo, 1,
                             {{hypre_CSRMatrixI(t->Pext), NULL, t->pext_col, hypre_CSRMatrixData(t->Pext), NULL, 0}}};
  int err = tr_tiles_from_segments(nA + nAo, ncP + nQ, nps, ps, &r->Pfull);
  tr_segment as = {0, nA, 1, {{hypre_CSRMatrixI(Ad), hypre_CSRMatrixJ(Ad), NULL, hypre_CSRMatrixData(Ad), NULL, 0}}};
  if (r->nnz_ao) as.b[as.nblocks++] = (tr_block){hypre_CSRMatrixI(Ao), hypre_CSRMatrixJ(Ao), NULL,
                                                  hypre_CSRMatrixData(Ao), NULL, nA};
  if (!err) err = tr_tiles_from_segments(nA + nAo, nA + nAo, 1, &as, &r->Asq);
  if (err) { *why = tilerap_last_error(); return 1; }

  /* A_l's entries -> A_sq's slots */
  r->amap = malloc(((size_t)r->nnz_ad + r->nnz_ao + 1) * sizeof *r->amap);
  if (!r->amap) { *why = "out of memory"; return 1; }
  int bad = 0;
  const HYPRE_Int *adi = hypre_CSRMatrixI(Ad), *adj = hypre_CSRMatrixJ(Ad);
  const HYPRE_Int *aoi = hypre_CSRMatrixI(Ao), *aoj = hypre_CSRMatrixJ(Ao);
#pragma omp parallel for schedule(static) reduction(| : bad) if (nA > TR_PAR_ROWS)
  for (HYPRE_Int i = 0; i < nA; i++) {
    for (HYPRE_Int k = adi[i]; k < adi[i + 1]; k++) bad |= (r->amap[k] = tile_slot(r->Asq, i, adj[k])) < 0;
    if (r->nnz_ao)
      for (HYPRE_Int k = aoi[i]; k < aoi[i + 1]; k++)
        bad |= (r->amap[r->nnz_ad + k] = tile_slot(r->Asq, i, nA + aoj[k])) < 0;
  }
  if (bad) { *why = "repeated columns in a row of A"; return 1; }
  if (r->dev) { /* device recipe: the tiles go up, C_all's structure comes down once */
    tilerap_tile_matrix *dA = NULL, *dP = NULL;
    err = tilerap_tile_copy(r->Asq, TILERAP_MEM_DEVICE, &dA);
    if (!err) err = tilerap_tile_copy(r->Pfull, TILERAP_MEM_DEVICE, &dP);
    tilerap_tile_destroy(&r->Asq);
    tilerap_tile_destroy(&r->Pfull);
    r->Asq = dA;
    r->Pfull = dP;
  }
  if (!err) err = tilerap_ptap_plan_create(r->Asq, r->Pfull, opt, &r->plan, &r->Call);
  if (!err && r->dev) err = tilerap_tile_copy(r->Call, TILERAP_MEM_HOST, &t->Chost);
  if (err) { *why = tilerap_last_error(); return 1; }

  /* C_all's entries -> A_{l+1}'s slots, or a send buffer (counted here,
   * placed in record_sends) */
  if (row_index_make(Cd, Co, &t->ix)) { *why = "out of memory"; return 1; }
  const tilerap_tile_matrix *Cl = t->Chost ? t->Chost : r->Call;
  r->cmap = malloc(((size_t)Cl->nnz + 1) * sizeof *r->cmap);
  t->dest = malloc(((size_t)Cl->nnz + 1) * sizeof *t->dest);
  t->scount = calloc((size_t)r->nprocs, sizeof *t->scount);
  if (!r->cmap || !t->dest || !t->scount) { *why = "out of memory"; return 1; }
  const HYPRE_BigInt *cmapC = hypre_ParCSRMatrixColMapOffd(C);
  const HYPRE_Int nco = hypre_CSRMatrixNumCols(Co);
  int missing = 0, elsewhere = 0;
  /* tile rows apart, in parallel (two binary searches an entry) */
#pragma omp parallel for schedule(dynamic, 64) reduction(| : missing, elsewhere) \
    if (Cl->tile_rows > TR_PAR_ROWS / 16 || tr_knob_int(TR_KNOB_HYPRE_TEST_PARALLEL))
  for (int32_t tr = 0; tr < Cl->tile_rows; tr++)
    for (int64_t tt = Cl->tile_ptr[tr]; tt < Cl->tile_ptr[tr + 1]; tt++)
      for (int64_t e = Cl->tile_off[tt]; e < Cl->tile_off[tt + 1]; e++) {
        const int32_t row = 16 * tr + (Cl->idx[e] >> 4), col = 16 * Cl->tile_col[tt] + (Cl->idx[e] & 15);
        const HYPRE_BigInt gcol = col < ncP ? firstP + col : t->colQ[col - ncP];
        t->dest[e] = -1;
        if (row < ncP) {
          const HYPRE_Int key = col_key(gcol, firstP, ncP, cmapC, nco);
          const HYPRE_Int slot = key < 0 ? -1 : row_index_find(&t->ix, row, key);
          missing |= slot < 0;
          r->cmap[e] = slot;
        } else if (!t->starts) {
          elsewhere = 1;
        } else {
          t->dest[e] = owner_of(t->starts, r->nprocs, t->colQ[row - ncP]);
        }
      }
  if (missing) { *why = "an entry of P^T A P missing from the coarse operator (dropped or filtered)"; return 1; }
  if (elsewhere) { *why = "rows of the coarse operator owned elsewhere on one rank"; return 1; }
  for (int64_t e = 0; e < Cl->nnz; e++)
    if (t->dest[e] >= 0) t->scount[t->dest[e]]++;
  return 0;
}

/* Pairs (row, column) of the entries sent, by destination; the owners
 * find their slots (collective).  0, or 1 with *why. */
static int record_sends(tr_level_recipe *r, hypre_ParCSRMatrix *C, tr_record_tmp *t, const char **why)
{
  const int np = r->nprocs;
  const tilerap_tile_matrix *Cl = t->Chost ? t->Chost : r->Call;
  const HYPRE_Int ncP = r->nC;
  const HYPRE_BigInt firstP = hypre_ParCSRMatrixFirstRowIndex(C);
  t->rcount = malloc((size_t)np * sizeof *t->rcount);
  t->sdisp = malloc(((size_t)np + 1) * sizeof *t->sdisp);
  t->rdisp = malloc(((size_t)np + 1) * sizeof *t->rdisp);
  if (!t->rcount || !t->sdisp || !t->rdisp) { *why = "out of memory"; return 1; }
  MPI_Alltoall(t->scount, 1, MPI_INT, t->rcount, 1, MPI_INT, r->comm);
  t->sdisp[0] = t->rdisp[0] = 0;
  for (int p = 0; p < np; p++) {
    t->sdisp[p + 1] = t->sdisp[p] + t->scount[p];
    t->rdisp[p + 1] = t->rdisp[p] + t->rcount[p];
  }
  const int ns = t->sdisp[np], nr = t->rdisp[np];
  t->pairs = malloc(((size_t)2 * ns + 1) * sizeof *t->pairs);
  t->rpairs = malloc(((size_t)2 * nr + 1) * sizeof *t->rpairs);
  r->send_buf = malloc(((size_t)ns + 1) * sizeof *r->send_buf);
  r->recv_buf = malloc(((size_t)nr + 1) * sizeof *r->recv_buf);
  r->rmap = malloc(((size_t)nr + 1) * sizeof *r->rmap);
  if (!t->pairs || !t->rpairs || !r->send_buf || !r->recv_buf || !r->rmap) { *why = "out of memory"; return 1; }
  int *fill = t->scount; /* reused as the running slot of each destination */
  for (int p = 0; p < np; p++) fill[p] = t->sdisp[p];
  const int64_t base = (int64_t)r->nnz_cd + r->nnz_co;
  for (int32_t tr = 0; tr < Cl->tile_rows; tr++)
    for (int64_t tt = Cl->tile_ptr[tr]; tt < Cl->tile_ptr[tr + 1]; tt++)
      for (int64_t e = Cl->tile_off[tt]; e < Cl->tile_off[tt + 1]; e++) {
        const int p = t->dest[e];
        if (p < 0) continue;
        const int32_t row = 16 * tr + (Cl->idx[e] >> 4), col = 16 * Cl->tile_col[tt] + (Cl->idx[e] & 15);
        const int s = fill[p]++;
        t->pairs[2 * s] = t->colQ[row - ncP];
        t->pairs[2 * s + 1] = col < ncP ? firstP + col : t->colQ[col - ncP];
        r->cmap[e] = base + s;
      }
  for (int p = 0; p <= np; p++) { t->sdisp[p] *= 2; t->rdisp[p] *= 2; }
  for (int p = 0; p < np; p++) { t->scount[p] = t->sdisp[p + 1] - t->sdisp[p]; t->rcount[p] = t->rdisp[p + 1] - t->rdisp[p]; }
  MPI_Alltoallv(t->pairs, t->scount, t->sdisp, HYPRE_MPI_BIG_INT, t->rpairs, t->rcount, t->rdisp,
                HYPRE_MPI_BIG_INT, r->comm);
  /* received (row, column) -> slot of A_{l+1} */
  const HYPRE_BigInt *cmapC = hypre_ParCSRMatrixColMapOffd(C);
  const HYPRE_Int nco = hypre_CSRMatrixNumCols(hypre_ParCSRMatrixOffd(C));
  for (int k = 0; k < nr; k++) {
    const HYPRE_BigInt grow = t->rpairs[2 * k], gcol = t->rpairs[2 * k + 1];
    const HYPRE_Int key = col_key(gcol, firstP, ncP, cmapC, nco);
    const HYPRE_Int slot = (grow < firstP || grow >= firstP + ncP || key < 0)
                             ? -1 : row_index_find(&t->ix, (HYPRE_Int)(grow - firstP), key);
    if (slot < 0) { *why = "a row of P^T A P from another rank missing from the coarse operator"; return 1; }
    r->rmap[k] = slot;
  }
  /* neighbour lists (values only from now on) */
  r->send_proc = malloc((size_t)np * sizeof *r->send_proc);
  r->recv_proc = malloc((size_t)np * sizeof *r->recv_proc);
  r->send_off = malloc(((size_t)np + 1) * sizeof *r->send_off);
  r->recv_off = malloc(((size_t)np + 1) * sizeof *r->recv_off);
  r->req = malloc(((size_t)2 * np + 1) * sizeof *r->req);
  if (!r->send_proc || !r->recv_proc || !r->send_off || !r->recv_off || !r->req) { *why = "out of memory"; return 1; }
  r->send_off[0] = r->recv_off[0] = 0;
  for (int p = 0; p < np; p++) {
    if (t->scount[p]) {
      r->send_proc[r->nsend] = p;
      r->send_off[r->nsend + 1] = t->sdisp[p + 1] / 2;
      r->nsend++;
    }
    if (t->rcount[p]) {
      r->recv_proc[r->nrecv] = p;
      r->recv_off[r->nrecv + 1] = t->rdisp[p + 1] / 2;
      r->nrecv++;
    }
  }
  return 0;
}

/* One rank, device memory: tiles made from hypre's device arrays, the
 * plan on the GPU, and for each of A's and C's entries its slot in the
 * tiles (tilerap_tile_slots_device_i32); only a count comes to the host. */
static int record_device(tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, hypre_ParCSRMatrix *C,
                         const tilerap_options *opt, const char **why)
{
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Pd = hypre_ParCSRMatrixDiag(P), *Cd = hypre_ParCSRMatrixDiag(C);
  r->dev = 1;
  r->nA = hypre_CSRMatrixNumRows(Ad);
  r->nAo = hypre_CSRMatrixNumCols(hypre_ParCSRMatrixOffd(A));
  r->nnz_ad = hypre_CSRMatrixNumNonzeros(Ad);
  r->nnz_ao = hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(A));
  r->nC = hypre_CSRMatrixNumRows(Cd);
  r->nnz_cd = hypre_CSRMatrixNumNonzeros(Cd);
  r->nnz_co = hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(C));
  const HYPRE_Int ncP = hypre_CSRMatrixNumCols(Pd);
  if (sizeof(HYPRE_Int) != sizeof(int32_t) || r->nnz_ao || r->nnz_co ||
      hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(P)) || hypre_CSRMatrixNumCols(Ad) != r->nA ||
      hypre_CSRMatrixNumRows(Pd) != r->nA || r->nC != ncP || hypre_CSRMatrixNumCols(Cd) != ncP) {
    *why = "device memory: shapes of A, P and the coarse operator, or offd blocks on one rank";
    return 1;
  }
  int64_t *slots = NULL, covered = 0;
  int err = tilerap_tile_from_unsorted_csr_device_i32(r->nA, r->nA, (const int32_t *)hypre_CSRMatrixI(Ad),
                                                      (const int32_t *)hypre_CSRMatrixJ(Ad), hypre_CSRMatrixData(Ad),
                                                      TILERAP_MEM_DEVICE, &r->Asq);
  if (!err)
    err = tilerap_tile_from_unsorted_csr_device_i32(r->nA, ncP, (const int32_t *)hypre_CSRMatrixI(Pd),
                                                    (const int32_t *)hypre_CSRMatrixJ(Pd), hypre_CSRMatrixData(Pd),
                                                    TILERAP_MEM_DEVICE, &r->Pfull);
  if (!err) err = tilerap_ptap_plan_create(r->Asq, r->Pfull, opt, &r->plan, &r->Call);
  if (!err) err = tilerap_device_malloc(((size_t)r->nnz_ad + 1) * sizeof(int64_t), (void **)&r->d_aslot);
  if (!err) err = tilerap_device_malloc(((size_t)r->nnz_cd + 1) * sizeof(int64_t), (void **)&r->d_cslot);
  if (!err)
    err = tilerap_tile_slots_device_i32(r->Asq, r->nA, (const int32_t *)hypre_CSRMatrixI(Ad),
                                        (const int32_t *)hypre_CSRMatrixJ(Ad), r->nnz_ad, r->d_aslot);
  if (!err)
    err = tilerap_tile_slots_device_i32(r->Call, r->nC, (const int32_t *)hypre_CSRMatrixI(Cd),
                                        (const int32_t *)hypre_CSRMatrixJ(Cd), r->nnz_cd, r->d_cslot);
  if (err) {
    *why = tilerap_last_error();
    return 1;
  }
  /* every entry of C_all must land in C (C's own extra entries get 0) */
  slots = malloc(((size_t)r->nnz_cd + 1) * sizeof *slots);
  if (!slots || tilerap_memcpy(slots, TILERAP_MEM_HOST, r->d_cslot, TILERAP_MEM_DEVICE,
                               (size_t)r->nnz_cd * sizeof *slots)) {
    free(slots);
    *why = "device memory: the coarse operator's slots not readable";
    return 1;
  }
  for (HYPRE_Int k = 0; k < r->nnz_cd; k++) covered += slots[k] >= 0;
  free(slots);
  if (covered != r->Call->nnz || r->Asq->nnz != r->nnz_ad) {
    *why = "an entry of P^T A P missing from the coarse operator (dropped or filtered)";
    return 1;
  }
  return 0;
}

#if TR_HYPRE_DEVICE
/* A host map split by destination and uploaded: out[q][e] = map[e] - base[q]
 * where base[q] <= map[e] < base[q+1], else -1. */
static int upload_split(const int64_t *map, int64_t n, const int64_t *base, int nparts, int64_t **out)
{
  int64_t *h = malloc(((size_t)n + 1) * sizeof *h);
  if (!h) return TILERAP_ERR_NOMEM;
  int err = 0;
  for (int q = 0; q < nparts && !err; q++) {
    for (int64_t e = 0; e < n; e++) h[e] = map[e] >= base[q] && map[e] < base[q + 1] ? map[e] - base[q] : -1;
    err = tilerap_device_malloc(((size_t)n + 1) * sizeof *h, (void **)&out[q]);
    if (!err) err = tilerap_memcpy(out[q], TILERAP_MEM_DEVICE, h, TILERAP_MEM_HOST, (size_t)n * sizeof *h);
  }
  free(h);
  return err;
}
#endif

/* Several ranks, device memory: the host record run on host copies of the
 * three matrices (once), the tiles and the plan on the GPU, the maps
 * uploaded split by destination. */
static int record_device_ranks(tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                               hypre_ParCSRMatrix *C, const tilerap_options *opt, const char **why)
{
  int failed = 0;
#if TR_HYPRE_DEVICE
  hypre_ParCSRMatrix *Ah = hypre_ParCSRMatrixClone_v2(A, 1, HYPRE_MEMORY_HOST);
  hypre_ParCSRMatrix *Ph = hypre_ParCSRMatrixClone_v2(P, 1, HYPRE_MEMORY_HOST);
  hypre_ParCSRMatrix *Ch = hypre_ParCSRMatrixClone_v2(C, 0, HYPRE_MEMORY_HOST);
  tr_record_tmp t;
  memset(&t, 0, sizeof t);
  r->dev = 2;
  t.starts = malloc(((size_t)r->nprocs + 1) * sizeof *t.starts);
  HYPRE_BigInt first = hypre_ParCSRMatrixFirstColDiag(P);
  failed = !Ah || !Ph || !Ch || !t.starts;
  if (t.starts) {
    MPI_Allgather(&first, 1, HYPRE_MPI_BIG_INT, t.starts, 1, HYPRE_MPI_BIG_INT, r->comm);
    t.starts[r->nprocs] = hypre_ParCSRMatrixGlobalNumCols(P);
  }
  if (Ah && Ph) {
    hypre_MatvecCommPkgCreate(Ah);
    t.Pext = hypre_ParCSRMatrixExtractBExt(Ph, Ah, 1);
  }
  if (!failed) failed = record_local(r, Ah, Ph, Ch, opt, &t, why);
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, r->comm);
  if (!any) failed = record_sends(r, Ch, &t, why);
  if (!failed) {
    const int64_t nc = r->Call->nnz, ns = r->nsend ? r->send_off[r->nsend] : 0, nr = r->nrecv ? r->recv_off[r->nrecv] : 0;
    const int64_t cbase[4] = {0, r->nnz_cd, (int64_t)r->nnz_cd + r->nnz_co, (int64_t)r->nnz_cd + r->nnz_co + ns};
    const int64_t rbase[3] = {0, r->nnz_cd, (int64_t)r->nnz_cd + r->nnz_co};
    int64_t *rm = malloc(((size_t)nr + 1) * sizeof *rm);
    const size_t na = (size_t)r->nnz_ad + r->nnz_ao;
    int err = rm ? 0 : TILERAP_ERR_NOMEM;
    for (int64_t k = 0; rm && k < nr; k++) rm[k] = r->rmap[k];
    if (!err) err = tilerap_device_malloc((na + 1) * sizeof(int64_t), (void **)&r->d_amap);
    if (!err) err = tilerap_memcpy(r->d_amap, TILERAP_MEM_DEVICE, r->amap, TILERAP_MEM_HOST, na * sizeof(int64_t));
    if (!err) err = upload_split(r->cmap, nc, cbase, 3, r->d_cmap);
    if (!err) err = upload_split(rm, nr, rbase, 2, r->d_rmap);
    if (!err) err = tilerap_device_malloc(((size_t)ns + 1) * sizeof(double), (void **)&r->d_send);
    if (!err) err = tilerap_device_malloc(((size_t)nr + 1) * sizeof(double), (void **)&r->d_recv);
    free(rm);
    if (err) { *why = err == TILERAP_ERR_NOMEM ? "out of memory" : tilerap_last_error(); failed = 1; }
  }
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, r->comm);
  if (any && !failed) *why = "another rank could not keep its part";
  failed = any;
  record_tmp_free(&t);
  if (Ah) hypre_ParCSRMatrixDestroy(Ah);
  if (Ph) hypre_ParCSRMatrixDestroy(Ph);
  if (Ch) hypre_ParCSRMatrixDestroy(Ch);
#else
  (void)r; (void)A; (void)P; (void)C; (void)opt;
  *why = "device memory in a build without CUDA hypre";
  failed = 1;
#endif
  return failed;
}

int tr_level_recipe_record(hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, hypre_ParCSRMatrix *C,
                           const tilerap_options *opt, tr_level_recipe **out, const char **why)
{
  *out = NULL;
  *why = NULL;
  tr_level_recipe *r = calloc(1, sizeof *r);
  tr_record_tmp t;
  memset(&t, 0, sizeof t);
  if (!r) { *why = "out of memory"; return 1; }
  r->comm = hypre_ParCSRMatrixComm(A);
  MPI_Comm_size(r->comm, &r->nprocs);
  int failed = 0;
  const int dev = tr_hypre_on_device(A) || tr_hypre_on_device(P) || tr_hypre_on_device(C);
  if (dev && r->nprocs > 1) { /* every rank's matrices are in device memory alike */
    failed = record_device_ranks(r, A, P, C, opt, why);
    if (failed) tr_level_recipe_free(&r);
    *out = r;
    return failed;
  }
  if (dev) {
    failed = record_device(r, A, P, C, opt, why);
    if (failed) tr_level_recipe_free(&r);
    *out = r;
    return failed;
  }
  if (r->nprocs > 1) {
    /* every rank's first coarse row; the rows of P that A_offd touches */
    t.starts = malloc(((size_t)r->nprocs + 1) * sizeof *t.starts);
    HYPRE_BigInt first = hypre_ParCSRMatrixFirstColDiag(P);
    if (!t.starts) failed = 1;
    else {
      MPI_Allgather(&first, 1, HYPRE_MPI_BIG_INT, t.starts, 1, HYPRE_MPI_BIG_INT, r->comm);
      t.starts[r->nprocs] = hypre_ParCSRMatrixGlobalNumCols(P);
    }
    if (!hypre_ParCSRMatrixCommPkg(A)) hypre_MatvecCommPkgCreate(A);
    t.Pext = hypre_ParCSRMatrixExtractBExt(P, A, 1);
  }
  if (!failed) failed = record_local(r, A, P, C, opt, &t, why);
  if (r->nprocs > 1) {
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, r->comm);
    if (!any) failed = record_sends(r, C, &t, why);
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, r->comm);
    if (any && !failed) *why = "another rank could not keep its part";
    failed = any;
  }
  record_tmp_free(&t);
  if (failed) {
    tr_level_recipe_free(&r);
    return 1;
  }
  *out = r;
  return 0;
}

/* ---- re-run ------------------------------------------------------- */

int tr_level_recipe_matches(const tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *C)
{
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  hypre_CSRMatrix *Cd = hypre_ParCSRMatrixDiag(C), *Co = hypre_ParCSRMatrixOffd(C);
  return hypre_CSRMatrixNumRows(Ad) == r->nA && hypre_CSRMatrixNumCols(Ao) == r->nAo &&
         hypre_CSRMatrixNumNonzeros(Ad) == r->nnz_ad && hypre_CSRMatrixNumNonzeros(Ao) == r->nnz_ao &&
         hypre_CSRMatrixNumRows(Cd) == r->nC && hypre_CSRMatrixNumNonzeros(Cd) == r->nnz_cd &&
         hypre_CSRMatrixNumNonzeros(Co) == r->nnz_co;
}

/* Several ranks, device memory: the host run's steps with device arrays;
 * the values sent and received go through the host buffers (MPI need not
 * be CUDA-aware); received values are added atomically (several ranks may
 * add to one entry). */
static int run_device_ranks(tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *C)
{
#if TR_HYPRE_DEVICE
  hypre_CSRMatrix *Cd = hypre_ParCSRMatrixDiag(C), *Co = hypre_ParCSRMatrixOffd(C);
  HYPRE_Complex *cd = hypre_CSRMatrixData(Cd), *co = hypre_CSRMatrixData(Co);
  const int64_t ns = r->nsend ? r->send_off[r->nsend] : 0, nr = r->nrecv ? r->recv_off[r->nrecv] : 0;
  int err = tilerap_device_scatter_values(r->nnz_ad, r->d_amap, hypre_CSRMatrixData(hypre_ParCSRMatrixDiag(A)),
                                          r->Asq->val); /* (no entries, no call: the counts guard the arrays) */
  if (!err) err = tilerap_device_scatter_values(r->nnz_ao, r->d_amap + r->nnz_ad,
                                                hypre_CSRMatrixData(hypre_ParCSRMatrixOffd(A)), r->Asq->val);
  if (!err) err = tilerap_ptap_numeric(r->plan, r->Asq, r->Pfull, r->Call);
  if (r->nnz_cd) hypre_Memset(cd, 0, (size_t)r->nnz_cd * sizeof *cd, HYPRE_MEMORY_DEVICE);
  if (r->nnz_co) hypre_Memset(co, 0, (size_t)r->nnz_co * sizeof *co, HYPRE_MEMORY_DEVICE);
  if (ns) hypre_Memset(r->d_send, 0, (size_t)ns * sizeof(double), HYPRE_MEMORY_DEVICE);
  /* a destination without entries (a rank with no offd block, nothing to
   * send) has no array: its map holds only -1 */
  if (!err && r->nnz_cd) err = tilerap_device_scatter_values(r->Call->nnz, r->d_cmap[0], r->Call->val, cd);
  if (!err && r->nnz_co) err = tilerap_device_scatter_values(r->Call->nnz, r->d_cmap[1], r->Call->val, co);
  if (!err && ns) err = tilerap_device_scatter_values(r->Call->nnz, r->d_cmap[2], r->Call->val, r->d_send);
  /* every rank takes part in the exchange, a failed one with zeros */
  if (ns && tilerap_memcpy(r->send_buf, TILERAP_MEM_HOST, r->d_send, TILERAP_MEM_DEVICE, (size_t)ns * sizeof(double)))
    err = err ? err : TILERAP_ERR_CUDA;
  int nreq = 0;
  for (int q = 0; q < r->nrecv; q++)
    MPI_Irecv(r->recv_buf + r->recv_off[q], (int)(r->recv_off[q + 1] - r->recv_off[q]), MPI_DOUBLE,
              r->recv_proc[q], 0x7e5e, r->comm, &r->req[nreq++]);
  for (int q = 0; q < r->nsend; q++)
    MPI_Isend(r->send_buf + r->send_off[q], (int)(r->send_off[q + 1] - r->send_off[q]), MPI_DOUBLE,
              r->send_proc[q], 0x7e5e, r->comm, &r->req[nreq++]);
  if (nreq) MPI_Waitall(nreq, r->req, MPI_STATUSES_IGNORE);
  if (!err && nr) err = tilerap_memcpy(r->d_recv, TILERAP_MEM_DEVICE, r->recv_buf, TILERAP_MEM_HOST, (size_t)nr * sizeof(double));
  if (!err && r->nnz_cd) err = tilerap_device_scatter_add_values(nr, r->d_rmap[0], r->d_recv, cd);
  if (!err && r->nnz_co) err = tilerap_device_scatter_add_values(nr, r->d_rmap[1], r->d_recv, co);
  return err;
#else
  (void)r; (void)A; (void)C;
  return TILERAP_ERR_ENGINE;
#endif
}

int tr_level_recipe_run(tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *C)
{
  if (r->dev == 2) return run_device_ranks(r, A, C);
  if (r->dev) { /* one rank, device memory: a scatter and a gather around the numeric run */
    int err = tilerap_device_scatter_values(r->nnz_ad, r->d_aslot, hypre_CSRMatrixData(hypre_ParCSRMatrixDiag(A)),
                                            r->Asq->val);
    if (!err) err = tilerap_ptap_numeric(r->plan, r->Asq, r->Pfull, r->Call);
    if (!err) err = tilerap_device_gather_values(r->nnz_cd, r->d_cslot, r->Call->val,
                                                 hypre_CSRMatrixData(hypre_ParCSRMatrixDiag(C)));
    return err;
  }
  const HYPRE_Complex *ad = hypre_CSRMatrixData(hypre_ParCSRMatrixDiag(A));
  const HYPRE_Complex *ao = hypre_CSRMatrixData(hypre_ParCSRMatrixOffd(A));
  HYPRE_Complex *cd = hypre_CSRMatrixData(hypre_ParCSRMatrixDiag(C));
  HYPRE_Complex *co = hypre_CSRMatrixData(hypre_ParCSRMatrixOffd(C));
  double *av = r->Asq->val;
  const int64_t *amap = r->amap;
  const HYPRE_Int nd = r->nnz_ad, no = r->nnz_ao;
#pragma omp parallel for schedule(static) if (nd > 16 * TR_PAR_ROWS)
  for (HYPRE_Int k = 0; k < nd; k++) av[amap[k]] = ad[k];
#pragma omp parallel for schedule(static) if (no > 16 * TR_PAR_ROWS)
  for (HYPRE_Int k = 0; k < no; k++) av[amap[nd + k]] = ao[k];
  int err = tilerap_ptap_numeric(r->plan, r->Asq, r->Pfull, r->Call);
  /* every rank takes part in the exchange, a failed one with zeros */
  int nreq = 0;
  for (int q = 0; q < r->nrecv; q++)
    MPI_Irecv(r->recv_buf + r->recv_off[q], (int)(r->recv_off[q + 1] - r->recv_off[q]), MPI_DOUBLE,
              r->recv_proc[q], 0x7e5e, r->comm, &r->req[nreq++]);
  if (r->nnz_cd) memset(cd, 0, (size_t)r->nnz_cd * sizeof *cd);
  if (r->nnz_co) memset(co, 0, (size_t)r->nnz_co * sizeof *co);
  const int64_t nc = err ? 0 : r->Call->nnz, base = (int64_t)r->nnz_cd + r->nnz_co;
  const int64_t *cmap = r->cmap;
  const double *cv = r->Call->val;
  double *sb = r->send_buf;
  const HYPRE_Int ncd = r->nnz_cd;
  if (err && r->nsend) memset(sb, 0, (size_t)r->send_off[r->nsend] * sizeof *sb);
#pragma omp parallel for schedule(static) if (nc > 16 * TR_PAR_ROWS)
  for (int64_t e = 0; e < nc; e++) {
    const int64_t s = cmap[e];
    if (s < ncd) cd[s] = cv[e];
    else if (s < base) co[s - ncd] = cv[e];
    else sb[s - base] = cv[e];
  }
  for (int q = 0; q < r->nsend; q++)
    MPI_Isend(r->send_buf + r->send_off[q], (int)(r->send_off[q + 1] - r->send_off[q]), MPI_DOUBLE,
              r->send_proc[q], 0x7e5e, r->comm, &r->req[nreq++]);
  if (nreq) MPI_Waitall(nreq, r->req, MPI_STATUSES_IGNORE);
  const HYPRE_Int nr = r->nrecv ? r->recv_off[r->nrecv] : 0;
  for (HYPRE_Int k = 0; k < nr; k++) {
    const HYPRE_Int s = r->rmap[k];
    if (s < ncd) cd[s] += r->recv_buf[k];
    else co[s - ncd] += r->recv_buf[k];
  }
  return err;
}
