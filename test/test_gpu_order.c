/* Device-side pieces of the hypre hook's level-to-level flow, against
 * independent host references:
 *  - tilerap_ptap_csr_encounter_order_device_i32 against a plain
 *    sequential walk written here (rows of P^T ascending, A and P rows in
 *    their stored order, first encounter wins), on model hierarchies and
 *    random matrices with rows stored in shuffled order; values checked
 *    to be exactly C's values moved; entries the walk never reaches; the
 *    refusals (no diagonal, products missing from C, bad row pointers,
 *    out-of-range columns, wrong memory or shape) with nothing written;
 *  - tilerap_csr_fingerprint_i32 on the device against the host version,
 *    and what changes it;
 *  - tilerap_device_malloc / tilerap_memcpy round trips;
 *  - tilerap_device_gather_values / _scatter_values against host loops,
 *    tilerap_tile_slots_device_i32 against the values it must find. */
#include "test_gpu_common.h"

static void *up(const void *h, size_t bytes)
{
  void *d = NULL;
  if (tilerap_device_malloc(bytes ? bytes : 1, &d) || (bytes && tilerap_memcpy(d, TILERAP_MEM_DEVICE, h, TILERAP_MEM_HOST, bytes)))
    abort();
  return d;
}
static void down(void *h, const void *d, size_t bytes)
{
  if (bytes && tilerap_memcpy(h, TILERAP_MEM_HOST, d, TILERAP_MEM_DEVICE, bytes)) abort();
}

/* int32 structure of a CSR, each row's entries shuffled (values follow);
 * with diag_first the diagonal is moved to the front afterwards, as hypre
 * stores its diag blocks. */
typedef struct {
  int32_t m, n, *rp, *col;
  double *val;
} csr32;

static csr32 shuffled(const tilerap_csr *A, int diag_first, uint64_t *seed)
{
  csr32 S = {A->m, A->n, malloc(((size_t)A->m + 1) * sizeof(int32_t)), malloc(((size_t)A->nnz + 1) * sizeof(int32_t)),
             malloc(((size_t)A->nnz + 1) * sizeof(double))};
  for (int32_t i = 0; i <= A->m; i++) S.rp[i] = (int32_t)A->rowptr[i];
  memcpy(S.col, A->colidx, (size_t)A->nnz * sizeof(int32_t));
  memcpy(S.val, A->val, (size_t)A->nnz * sizeof(double));
  for (int32_t i = 0; i < A->m; i++) {
    const int32_t b = S.rp[i], len = S.rp[i + 1] - b;
    for (int32_t k = len - 1; k > 0; k--) {
      int32_t r = (int32_t)(ref_rand01(seed) * (k + 1));
      if (r > k) r = k;
      int32_t tc = S.col[b + k]; S.col[b + k] = S.col[b + r]; S.col[b + r] = tc;
      double tv = S.val[b + k]; S.val[b + k] = S.val[b + r]; S.val[b + r] = tv;
    }
    if (diag_first)
      for (int32_t k = 0; k < len; k++)
        if (S.col[b + k] == i) {
          int32_t tc = S.col[b]; S.col[b] = S.col[b + k]; S.col[b + k] = tc;
          double tv = S.val[b]; S.val[b] = S.val[b + k]; S.val[b + k] = tv;
        }
  }
  return S;
}
static void csr32_free(csr32 *S) { free(S->rp); free(S->col); free(S->val); }

/* The walk itself, sequentially: row r emits (diagonal first if asked)
 * the columns c of P(j,c) for A(i,j) for P(i,r), i ascending, A and P
 * rows in stored order, each column once.  Columns of C's row (sorted,
 * Cs) the walk misses are appended ascending.  Returns the number of
 * those; *missing counts walked columns that are not in Cs. */
static int64_t walk_order(const csr32 *A, const csr32 *P, const tilerap_csr *Cs, int diag_first, int32_t *out,
                          int64_t *missing)
{
  const int32_t nc = P->n, na = A->m;
  int32_t *cnt = calloc((size_t)nc + 1, sizeof *cnt), *rows = malloc(((size_t)P->rp[na] + 1) * sizeof *rows);
  for (int32_t k = 0; k < P->rp[na]; k++) cnt[P->col[k] + 1]++;
  for (int32_t c = 0; c < nc; c++) cnt[c + 1] += cnt[c];
  int32_t *at = malloc(((size_t)nc + 1) * sizeof *at);
  memcpy(at, cnt, ((size_t)nc + 1) * sizeof *at);
  for (int32_t i = 0; i < na; i++) /* rows ascending within each column */
    for (int32_t k = P->rp[i]; k < P->rp[i + 1]; k++) rows[at[P->col[k]]++] = i;
  int32_t *seen = malloc(((size_t)nc + 1) * sizeof *seen), *inc = malloc(((size_t)nc + 1) * sizeof *inc);
  for (int32_t c = 0; c < nc; c++) seen[c] = inc[c] = -1;
  int64_t unreached = 0;
  *missing = 0;
  for (int32_t r = 0; r < Cs->m; r++) {
    int64_t q = Cs->rowptr[r];
    for (int64_t k = Cs->rowptr[r]; k < Cs->rowptr[r + 1]; k++) inc[Cs->colidx[k]] = r;
#define EMIT(c_)                                     \
  do {                                               \
    int32_t cc_ = (c_);                              \
    if (seen[cc_] != r) {                            \
      seen[cc_] = r;                                 \
      if (inc[cc_] == r) out[q++] = cc_;             \
      else (*missing)++;                             \
    }                                                \
  } while (0)
    if (diag_first) EMIT(r);
    for (int32_t t = cnt[r]; t < cnt[r + 1]; t++) {
      const int32_t i = rows[t];
      for (int32_t k = A->rp[i]; k < A->rp[i + 1]; k++) {
        const int32_t j = A->col[k];
        for (int32_t x = P->rp[j]; x < P->rp[j + 1]; x++) EMIT(P->col[x]);
      }
    }
#undef EMIT
    for (int64_t k = Cs->rowptr[r]; k < Cs->rowptr[r + 1]; k++)
      if (seen[Cs->colidx[k]] != r) { out[q++] = Cs->colidx[k]; unreached++; }
  }
  free(cnt); free(rows); free(at); free(seen); free(inc);
  return unreached;
}

/* C = P^T A P on the device from the shuffled arrays (A_tiles, P_tiles:
 * the tile sources; A, P: the structures handed to the order). */
static tilerap_tile_matrix *device_product(const csr32 *At, const csr32 *Pt)
{
  tilerap_tile_matrix *dA = NULL, *dP = NULL, *dC = NULL;
  tilerap_options o = gpu_opts(TILERAP_ENGINE_CUDA, 192);
  int err = tilerap_tile_from_unsorted_csr_device_i32(At->m, At->n, At->rp, At->col, At->val, TILERAP_MEM_HOST, &dA);
  if (!err) err = tilerap_tile_from_unsorted_csr_device_i32(Pt->m, Pt->n, Pt->rp, Pt->col, Pt->val, TILERAP_MEM_HOST, &dP);
  if (!err) err = tilerap_ptap(dA, dP, &o, &dC);
  if (err) tap_diag("device product: %s", tilerap_last_error());
  tilerap_tile_destroy(&dA);
  tilerap_tile_destroy(&dP);
  return dC;
}

/* The ordered CSR of C against the walk: columns exactly, values exactly
 * C's (looked up in the sorted download), rows pointers those of C. */
static void check_order_case(const csr32 *A, const csr32 *P, const tilerap_tile_matrix *dC, int diag_first,
                             int64_t expect_unreached, const char *what)
{
  tilerap_csr *Cs = NULL;
  if (!dC || tilerap_csr_create(dC->m, dC->n, dC->nnz, &Cs) ||
      tilerap_tile_to_csr_device(dC, Cs->rowptr, Cs->colidx, Cs->val, TILERAP_MEM_HOST)) {
    tap_ok(0, "%s: product and its sorted CSR", what);
    tilerap_csr_destroy(&Cs);
    return;
  }
  const size_t nz = (size_t)dC->nnz, m1 = (size_t)dC->m + 1;
  int32_t *ref = malloc((nz + 1) * sizeof *ref);
  int64_t missing = 0, unr_ref = walk_order(A, P, Cs, diag_first, ref, &missing);
  int32_t *g_arp = up(A->rp, ((size_t)A->m + 1) * 4), *g_acol = up(A->col, (size_t)A->rp[A->m] * 4);
  int32_t *g_prp = up(P->rp, ((size_t)P->m + 1) * 4), *g_pcol = up(P->col, (size_t)P->rp[P->m] * 4);
  int32_t *g_rp = NULL, *g_col = NULL;
  double *g_val = NULL;
  tilerap_device_malloc(m1 * 4, (void **)&g_rp);
  tilerap_device_malloc((nz + 1) * 4, (void **)&g_col);
  tilerap_device_malloc((nz + 1) * 8, (void **)&g_val);
  int64_t unreached = -1;
  int err = tilerap_ptap_csr_encounter_order_device_i32(dC, A->m, g_arp, g_acol, g_prp, g_pcol, diag_first, g_rp, g_col,
                                                        g_val, &unreached);
  int32_t *rp = malloc(m1 * sizeof *rp), *col = malloc((nz + 1) * sizeof *col);
  double *val = malloc((nz + 1) * sizeof *val);
  if (!err) { down(rp, g_rp, m1 * 4); down(col, g_col, nz * 4); down(val, g_val, nz * 8); }
  int rows_ok = !err, cols_ok = !err, vals_ok = !err;
  for (int32_t r = 0; !err && r < dC->m; r++) {
    rows_ok &= rp[r] == (int32_t)Cs->rowptr[r];
    for (int64_t k = Cs->rowptr[r]; k < Cs->rowptr[r + 1]; k++) {
      cols_ok &= col[k] == ref[k];
      int64_t lo = Cs->rowptr[r], hi = Cs->rowptr[r + 1];
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (Cs->colidx[mid] < col[k]) lo = mid + 1; else hi = mid;
      }
      vals_ok &= lo < Cs->rowptr[r + 1] && Cs->colidx[lo] == col[k] && !memcmp(&val[k], &Cs->val[lo], sizeof(double));
    }
  }
  if (!err) rows_ok &= rp[dC->m] == (int32_t)nz;
  tap_ok(!err && missing == 0, "%s: ordered CSR made (%s; %lld walked columns outside C)", what,
         err ? tilerap_last_error() : "ok", (long long)missing);
  tap_ok(rows_ok && cols_ok, "%s: %zu entries in the walk's first-encounter order%s", what, nz,
         diag_first ? ", diagonal first" : "");
  tap_ok(vals_ok, "%s: every value is C's own for its column, bit for bit", what);
  tap_ok(unreached == unr_ref && unreached == expect_unreached, "%s: %lld entries outside the walk (expected %lld, walk %lld)",
         what, (long long)unreached, (long long)expect_unreached, (long long)unr_ref);
  /* the fingerprint of the result: device = host, ordered and not */
  if (!err) {
    uint64_t fd = 0, fh = 0, ud = 0, uh = 0;
    int e1 = tilerap_csr_fingerprint_i32(dC->m, g_rp, g_col, g_val, 1, TILERAP_MEM_DEVICE, &fd);
    int e2 = tilerap_csr_fingerprint_i32(dC->m, rp, col, val, 1, TILERAP_MEM_HOST, &fh);
    int e3 = tilerap_csr_fingerprint_i32(dC->m, g_rp, g_col, g_val, 0, TILERAP_MEM_DEVICE, &ud);
    int32_t *srp = malloc(m1 * sizeof *srp);
    for (size_t i = 0; i < m1; i++) srp[i] = (int32_t)Cs->rowptr[i];
    int e4 = tilerap_csr_fingerprint_i32(dC->m, srp, Cs->colidx, Cs->val, 0, TILERAP_MEM_HOST, &uh);
    uint64_t sh = 0;
    int e5 = tilerap_csr_fingerprint_i32(dC->m, srp, Cs->colidx, Cs->val, 1, TILERAP_MEM_HOST, &sh);
    const int reordered = memcmp(col, Cs->colidx, nz * sizeof *col) != 0;
    tap_ok(!e1 && !e2 && !e3 && !e4 && !e5 && fd == fh && ud == uh && (!reordered || sh != fh),
           "%s: fingerprints device = host (ordered %016llx, order-free %016llx = the sorted CSR's; sorted order %s)",
           what, (unsigned long long)fd, (unsigned long long)ud, reordered ? "differs when ordered" : "is the same");
    free(srp);
  }
  tilerap_device_free(g_arp); tilerap_device_free(g_acol); tilerap_device_free(g_prp); tilerap_device_free(g_pcol);
  tilerap_device_free(g_rp); tilerap_device_free(g_col); tilerap_device_free(g_val);
  free(ref); free(rp); free(col); free(val);
  tilerap_csr_destroy(&Cs);
}

static void check_model(tilerap_stencil model, int32_t n, const char *what, uint64_t *seed)
{
  tilerap_csr *A = NULL, *P = NULL;
  int32_t dims[3], cd[3];
  int nd;
  tilerap_model_poisson(model, n, &A, dims, &nd);
  tilerap_model_prolongator(A, nd, dims, 2.0 / 3.0, &P, cd);
  csr32 As = shuffled(A, 1, seed), Ps = shuffled(P, 0, seed);
  tilerap_tile_matrix *dC = device_product(&As, &Ps);
  check_order_case(&As, &Ps, dC, 1, 0, what);
  /* the next level: C (sorted, then reshuffled) is the next A */
  if (dC) {
    tilerap_tile_matrix *hC = gpu_to_host(dC);
    tilerap_csr *C = hC ? ref_tile_to_csr(hC) : NULL, *P2 = NULL;
    tilerap_tile_destroy(&hC);
    int32_t cd2[3];
    if (C && cd[0] >= 3 && (nd < 2 || cd[1] >= 3) && (nd < 3 || cd[2] >= 3) && !tilerap_model_prolongator(C, nd, cd, 2.0 / 3.0, &P2, cd2)) {
      csr32 Cs = shuffled(C, 1, seed), P2s = shuffled(P2, 0, seed);
      tilerap_tile_matrix *dC2 = device_product(&Cs, &P2s);
      char w[96];
      snprintf(w, sizeof w, "%s, next level", what);
      check_order_case(&Cs, &P2s, dC2, 1, 0, w);
      tilerap_tile_destroy(&dC2);
      csr32_free(&Cs); csr32_free(&P2s);
    }
    tilerap_csr_destroy(&C); tilerap_csr_destroy(&P2);
  }
  tilerap_tile_destroy(&dC);
  csr32_free(&As); csr32_free(&Ps);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
}

static void check_random(uint64_t *seed)
{
  struct { int32_t na, nc; double da, dp; int empty; const char *what; } cases[] = {
    {1, 1, 1.0, 1.0, 0, "1 x 1"},
    {37, 17, 0.2, 0.15, 0, "37 fine, 17 coarse"},
    {300, 45, 0.03, 0.05, 7, "300 fine, 45 coarse, empty rows"},
    {513, 200, 0.01, 0.02, 0, "513 fine, 200 coarse (coarse rows without entries)"},
    {129, 129, 0.3, 0.3, 0, "129 x 129, dense tiles"},
  };
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    tilerap_csr *A = ref_random(cases[t].na, cases[t].na, cases[t].da, cases[t].empty, seed);
    tilerap_csr *P = ref_random(cases[t].na, cases[t].nc, cases[t].dp, 0, seed);
    csr32 As = shuffled(A, 0, seed), Ps = shuffled(P, 0, seed);
    tilerap_tile_matrix *dC = device_product(&As, &Ps);
    check_order_case(&As, &Ps, dC, 0, 0, cases[t].what);
    tilerap_tile_destroy(&dC);
    csr32_free(&As); csr32_free(&Ps);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  }
}

/* C made from a larger A than the structure handed to the order: the
 * extra entries come last, ascending, and are counted; the other way
 * round (products C lacks) is refused. */
static void check_unreached(uint64_t *seed)
{
  tilerap_csr *A = NULL, *P = NULL;
  int32_t dims[3];
  int nd;
  tilerap_model_poisson(TILERAP_P2D5, 40, &A, dims, &nd);
  /* unsmoothed 2 x 2 aggregates: the coarse 5-point operator couples an
   * aggregate to 4 others, the 9-point one to 8 */
  tilerap_csr_create(1600, 400, 1600, &P);
  for (int32_t i = 0; i < 1600; i++) {
    P->rowptr[i + 1] = i + 1;
    P->colidx[i] = (i % 40) / 2 + 20 * ((i / 40) / 2);
    P->val[i] = 1.0;
  }
  tilerap_csr *A9 = NULL;
  int32_t d9[3];
  int n9;
  tilerap_model_poisson(TILERAP_P2D9, 40, &A9, d9, &n9); /* 9-point pattern contains the 5-point one */
  csr32 A5s = shuffled(A, 1, seed), A9s = shuffled(A9, 1, seed), Ps = shuffled(P, 0, seed);
  tilerap_tile_matrix *C9 = device_product(&A9s, &Ps), *C5 = device_product(&A5s, &Ps);
  tilerap_tile_matrix *h5 = C5 ? gpu_to_host(C5) : NULL;
  tilerap_csr *c5 = h5 ? ref_tile_to_csr(h5) : NULL;
  tilerap_tile_destroy(&h5);
  const int64_t extra = C9 && c5 ? C9->nnz - c5->nnz : -1;
  tap_ok(extra > 0, "p2d9's product has %lld entries more than p2d5's", (long long)extra);
  check_order_case(&A5s, &Ps, C9, 1, extra, "p2d9 product ordered by the p2d5 walk");
  if (C5) {
    const size_t m1 = (size_t)C5->m + 1, nz = (size_t)C5->nnz;
    int32_t *g_arp = up(A9s.rp, ((size_t)A9s.m + 1) * 4), *g_acol = up(A9s.col, (size_t)A9s.rp[A9s.m] * 4);
    int32_t *g_prp = up(Ps.rp, ((size_t)Ps.m + 1) * 4), *g_pcol = up(Ps.col, (size_t)Ps.rp[Ps.m] * 4);
    int32_t *sent = malloc((nz + m1) * sizeof *sent);
    for (size_t k = 0; k < nz + m1; k++) sent[k] = -5;
    int32_t *g_rp = up(sent, m1 * 4), *g_col = up(sent, nz * 4);
    int err = tilerap_ptap_csr_encounter_order_device_i32(C5, A9s.m, g_arp, g_acol, g_prp, g_pcol, 1, g_rp, g_col, NULL,
                                                          NULL);
    int32_t *back = malloc((nz + m1) * sizeof *back);
    down(back, g_rp, m1 * 4);
    down(back + m1, g_col, nz * 4);
    int untouched = 1;
    for (size_t k = 0; k < nz + m1; k++) untouched &= back[k] == -5;
    tap_ok(err == TILERAP_ERR_STRUCTURE && strstr(tilerap_last_error(), "not entries of C") && untouched,
           "p2d5 product walked with p2d9's A: refused, nothing written (%s)", tilerap_last_error());
    /* bad row pointers and columns */
    int32_t bad_rp[3] = {0, 5, 2};
    int32_t *g_bad = up(bad_rp, sizeof bad_rp);
    EXPECT(tilerap_ptap_csr_encounter_order_device_i32(C5, 2, g_bad, g_acol, g_bad, g_pcol, 0, g_rp, g_col, NULL, NULL),
           TILERAP_ERR_INVALID, "encounter order with decreasing row pointers");
    int32_t *acol = malloc(((size_t)A9s.rp[A9s.m] + 1) * sizeof *acol);
    memcpy(acol, A9s.col, (size_t)A9s.rp[A9s.m] * sizeof *acol);
    acol[A9s.rp[A9s.m] / 2] = A9s.m + 3;
    int32_t *g_acol2 = up(acol, (size_t)A9s.rp[A9s.m] * 4);
    EXPECT(tilerap_ptap_csr_encounter_order_device_i32(C5, A9s.m, g_arp, g_acol2, g_prp, g_pcol, 0, g_rp, g_col, NULL, NULL),
           TILERAP_ERR_RANGE, "encounter order with a column of A out of range");
    down(back, g_rp, m1 * 4);
    untouched = 1;
    for (size_t k = 0; k < m1; k++) untouched &= back[k] == -5;
    tap_ok(untouched, "  ... nothing written");
    EXPECT(tilerap_ptap_csr_encounter_order_device_i32(NULL, A9s.m, g_arp, g_acol, g_prp, g_pcol, 0, g_rp, g_col, NULL, NULL),
           TILERAP_ERR_NULL, "encounter order without C");
    EXPECT(tilerap_ptap_csr_encounter_order_device_i32(C5, A9s.m, g_arp, g_acol, g_prp, NULL, 0, g_rp, g_col, NULL, NULL),
           TILERAP_ERR_NULL, "encounter order without P's columns");
    tilerap_tile_matrix *H = NULL, *dP = NULL;
    tilerap_tile_copy(C5, TILERAP_MEM_HOST, &H);
    EXPECT(tilerap_ptap_csr_encounter_order_device_i32(H, A9s.m, g_arp, g_acol, g_prp, g_pcol, 0, g_rp, g_col, NULL, NULL),
           TILERAP_ERR_MEMTYPE, "encounter order of a host tile matrix");
    tilerap_tile_from_unsorted_csr_device_i32(Ps.m, Ps.n, Ps.rp, Ps.col, Ps.val, TILERAP_MEM_HOST, &dP);
    EXPECT(tilerap_ptap_csr_encounter_order_device_i32(dP, A9s.m, g_arp, g_acol, g_prp, g_pcol, 0, g_rp, g_col, NULL, NULL),
           TILERAP_ERR_SIZE, "encounter order of a rectangular matrix");
    tilerap_tile_destroy(&H); tilerap_tile_destroy(&dP);
    free(acol); free(sent); free(back);
    tilerap_device_free(g_bad); tilerap_device_free(g_acol2);
    tilerap_device_free(g_arp); tilerap_device_free(g_acol); tilerap_device_free(g_prp); tilerap_device_free(g_pcol);
    tilerap_device_free(g_rp); tilerap_device_free(g_col);
  }
  /* a product without some diagonal entries: refused with diag_first */
  {
    tilerap_csr *R = ref_random(200, 60, 0.01, 0, seed);
    csr32 Rs = shuffled(R, 0, seed);
    tilerap_csr *Ad = ref_random(200, 200, 0.0, 0, seed); /* no entries: C empty */
    csr32 Ads = shuffled(Ad, 0, seed);
    tilerap_tile_matrix *dC = device_product(&Ads, &Rs);
    if (dC) {
      int32_t *g_arp = up(Ads.rp, 201 * 4), *g_acol = up(Ads.col, 4), *g_prp = up(Rs.rp, 201 * 4);
      int32_t *g_pcol = up(Rs.col, (size_t)Rs.rp[200] * 4 + 4), *g_rp = NULL, *g_col = NULL;
      tilerap_device_malloc(61 * 4, (void **)&g_rp);
      tilerap_device_malloc(4, (void **)&g_col);
      EXPECT(tilerap_ptap_csr_encounter_order_device_i32(dC, 200, g_arp, g_acol, g_prp, g_pcol, 1, g_rp, g_col, NULL, NULL),
             TILERAP_ERR_STRUCTURE, "diagonal first on a product without entries");
      tap_ok(strstr(tilerap_last_error(), "row 0 has no stored diagonal") != NULL, "  ... row 0 named (%s)",
             tilerap_last_error());
      int64_t un = -1;
      int err = tilerap_ptap_csr_encounter_order_device_i32(dC, 200, g_arp, g_acol, g_prp, g_pcol, 0, g_rp, g_col, NULL, &un);
      tap_ok(!err && un == 0, "  ... without diagonal first: an empty CSR (%s)", err ? tilerap_last_error() : "ok");
      tilerap_device_free(g_arp); tilerap_device_free(g_acol); tilerap_device_free(g_prp); tilerap_device_free(g_pcol);
      tilerap_device_free(g_rp); tilerap_device_free(g_col);
    }
    tilerap_tile_destroy(&dC);
    csr32_free(&Rs); csr32_free(&Ads);
    tilerap_csr_destroy(&R); tilerap_csr_destroy(&Ad);
  }
  tilerap_tile_destroy(&C9); tilerap_tile_destroy(&C5);
  csr32_free(&A5s); csr32_free(&A9s); csr32_free(&Ps);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&A9); tilerap_csr_destroy(&c5);
}

/* Device fingerprints = host ones; what changes them; bad input. */
static void check_fingerprint(uint64_t *seed)
{
  tilerap_csr *A = ref_random(1000, 700, 0.02, 9, seed);
  csr32 S = shuffled(A, 0, seed);
  const size_t nz = (size_t)A->nnz, m1 = (size_t)A->m + 1;
  int32_t *g_rp = up(S.rp, m1 * 4), *g_col = up(S.col, nz * 4);
  double *g_val = up(S.val, nz * 8);
  int32_t *rp = malloc(m1 * sizeof *rp);
  for (size_t i = 0; i < m1; i++) rp[i] = (int32_t)A->rowptr[i];
  uint64_t h[4] = {0}, d[4] = {0};
  int err = 0;
  err |= tilerap_csr_fingerprint_i32(A->m, S.rp, S.col, S.val, 0, TILERAP_MEM_HOST, &h[0]);
  err |= tilerap_csr_fingerprint_i32(A->m, g_rp, g_col, g_val, 0, TILERAP_MEM_DEVICE, &d[0]);
  err |= tilerap_csr_fingerprint_i32(A->m, S.rp, S.col, S.val, 1, TILERAP_MEM_HOST, &h[1]);
  err |= tilerap_csr_fingerprint_i32(A->m, g_rp, g_col, g_val, 1, TILERAP_MEM_DEVICE, &d[1]);
  err |= tilerap_csr_fingerprint_i32(A->m, S.rp, S.col, NULL, 1, TILERAP_MEM_HOST, &h[2]);
  err |= tilerap_csr_fingerprint_i32(A->m, g_rp, g_col, NULL, 1, TILERAP_MEM_DEVICE, &d[2]);
  err |= tilerap_csr_fingerprint_i32(A->m, rp, A->colidx, A->val, 0, TILERAP_MEM_HOST, &h[3]);
  tap_ok(!err && h[0] == d[0] && h[1] == d[1] && h[2] == d[2], "fingerprint: device = host (order-free, ordered, structure only)");
  tap_ok(h[0] == h[3] && h[1] != h[0] && h[2] != h[1], "fingerprint: the sorted matrix has the shuffled one's order-free fingerprint");
  { /* a large matrix (the host's parallel path) and -0.0 against +0.0 */
    tilerap_csr *B = NULL;
    int32_t dims[3];
    int nd;
    tilerap_model_poisson(TILERAP_P3D27, 20, &B, dims, &nd);
    const size_t bz = (size_t)B->nnz, b1 = (size_t)B->m + 1;
    int32_t *brp = malloc(b1 * sizeof *brp);
    for (size_t i = 0; i < b1; i++) brp[i] = (int32_t)B->rowptr[i];
    B->val[bz / 2] = 0.0;
    int32_t *g_brp = up(brp, b1 * 4), *g_bcol = up(B->colidx, bz * 4);
    double *g_bval = up(B->val, bz * 8);
    uint64_t hb = 0, db = 0, hz = 0, dz = 0;
    int eb = tilerap_csr_fingerprint_i32(B->m, brp, B->colidx, B->val, 1, TILERAP_MEM_HOST, &hb) |
             tilerap_csr_fingerprint_i32(B->m, g_brp, g_bcol, g_bval, 1, TILERAP_MEM_DEVICE, &db);
    B->val[bz / 2] = -0.0;
    tilerap_memcpy(g_bval, TILERAP_MEM_DEVICE, B->val, TILERAP_MEM_HOST, bz * 8);
    eb |= tilerap_csr_fingerprint_i32(B->m, brp, B->colidx, B->val, 1, TILERAP_MEM_HOST, &hz) |
          tilerap_csr_fingerprint_i32(B->m, g_brp, g_bcol, g_bval, 1, TILERAP_MEM_DEVICE, &dz);
    tap_ok(!eb && hb == db && hz == dz && hz != hb,
           "fingerprint of p3d27 20^3 (%zu entries, the host's threaded path): device = host; a +0.0 turned -0.0 "
           "changes both alike", bz);
    tilerap_device_free(g_brp); tilerap_device_free(g_bcol); tilerap_device_free(g_bval);
    free(brp);
    tilerap_csr_destroy(&B);
  }
  S.val[nz / 3] = nextafter(S.val[nz / 3], 2.0);
  tilerap_memcpy(g_val, TILERAP_MEM_DEVICE, S.val, TILERAP_MEM_HOST, nz * 8);
  uint64_t v = 0;
  tilerap_csr_fingerprint_i32(A->m, g_rp, g_col, g_val, 0, TILERAP_MEM_DEVICE, &v);
  tap_ok(v != d[0], "fingerprint: one value one ulp off changes it");
  uint64_t e0 = 0;
  int e = tilerap_csr_fingerprint_i32(0, g_rp, NULL, NULL, 1, TILERAP_MEM_DEVICE, &e0);
  int32_t z = 0;
  uint64_t e1 = 1;
  int f = tilerap_csr_fingerprint_i32(0, &z, NULL, NULL, 1, TILERAP_MEM_HOST, &e1);
  tap_ok(!e && !f && e0 == e1, "fingerprint of a 0-row matrix: device = host");
  int32_t bad[3] = {0, 1000000, 2}; /* row 0 would read far past the arrays */
  int32_t *g_bad = up(bad, sizeof bad);
  EXPECT(tilerap_csr_fingerprint_i32(2, g_bad, g_col, NULL, 0, TILERAP_MEM_DEVICE, &v), TILERAP_ERR_INVALID,
         "device fingerprint with decreasing row pointers");
  EXPECT(tilerap_csr_fingerprint_i32(A->m, g_rp, NULL, NULL, 0, TILERAP_MEM_DEVICE, &v), TILERAP_ERR_NULL,
         "device fingerprint without columns");
  tilerap_device_free(g_bad);
  tilerap_device_free(g_rp); tilerap_device_free(g_col); tilerap_device_free(g_val);
  free(rp);
  csr32_free(&S);
  tilerap_csr_destroy(&A);
}

/* Device buffers: round trips through device memory, small and large
 * (the large ones through the staging ring), device-to-device. */
static void check_buffers(uint64_t *seed)
{
  const size_t sizes[] = {1, 1000, 3u << 20, (25u << 20) + 17};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    const size_t n = sizes[t];
    unsigned char *h = malloc(n), *b = malloc(n), *h0 = malloc(n);
    for (size_t k = 0; k < n; k++) h[k] = (unsigned char)(ref_rand01(seed) * 256);
    memcpy(h0, h, n);
    void *d1 = NULL, *d2 = NULL;
    int err = tilerap_device_malloc(n, &d1);
    if (!err) err = tilerap_device_malloc(n, &d2);
    if (!err) err = tilerap_memcpy(d1, TILERAP_MEM_DEVICE, h, TILERAP_MEM_HOST, n);
    memset(h, 0, n); /* the source is free on return */
    if (!err) err = tilerap_memcpy(d2, TILERAP_MEM_DEVICE, d1, TILERAP_MEM_DEVICE, n);
    if (!err) err = tilerap_memcpy(b, TILERAP_MEM_HOST, d2, TILERAP_MEM_DEVICE, n);
    tap_ok(!err && !memcmp(h0, b, n),
           "device buffer of %zu bytes: host -> device (source cleared on return) -> device -> host, identical (%s)", n,
           err ? tilerap_last_error() : "ok");
    if (!err) err = tilerap_memcpy(h, TILERAP_MEM_HOST, b, TILERAP_MEM_HOST, n);
    tap_ok(!err && !memcmp(h0, h, n), "  ... and host -> host");
    tilerap_device_free(d1);
    tilerap_device_free(d2);
    free(h); free(b); free(h0);
  }
  void *p = (void *)1;
  tap_ok(tilerap_device_malloc(0, &p) == TILERAP_SUCCESS && p == NULL, "device buffer of 0 bytes: NULL, no error");
  EXPECT(tilerap_device_malloc(8, NULL), TILERAP_ERR_NULL, "device buffer without output");
  EXPECT(tilerap_memcpy(NULL, TILERAP_MEM_DEVICE, &p, TILERAP_MEM_HOST, 8), TILERAP_ERR_NULL, "copy to NULL");
  EXPECT(tilerap_memcpy(&p, (tilerap_memtype)7, &p, TILERAP_MEM_HOST, 8), TILERAP_ERR_INVALID, "copy with memory type 7");
  tilerap_device_free(NULL);
}

static void check_gather(uint64_t *seed)
{
  const int64_t sizes[] = {1, 777, 3000017};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    const int64_t n = sizes[t], m = n + 13;
    double *src = malloc(sizeof *src * (size_t)m), *got = malloc(sizeof *got * (size_t)n);
    int64_t *perm = malloc(sizeof *perm * (size_t)n);
    for (int64_t k = 0; k < m; k++) src[k] = ref_rand01(seed) - 0.5;
    for (int64_t q = 0; q < n; q++) perm[q] = (int64_t)(ref_rand01(seed) * (double)m) % m;
    double *dsrc = up(src, sizeof *src * (size_t)m), *ddst = up(src, sizeof *src * (size_t)n);
    int64_t *dperm = up(perm, sizeof *perm * (size_t)n);
    const int err = tilerap_device_gather_values(n, dperm, dsrc, ddst);
    down(got, ddst, sizeof *got * (size_t)n);
    int64_t bad = 0;
    for (int64_t q = 0; q < n; q++) bad += got[q] != src[perm[q]];
    tap_ok(!err && bad == 0, "device gather of %lld values from %lld: %lld differ from the host gather (%s)",
           (long long)n, (long long)m, (long long)bad, err ? tilerap_last_error() : "ok");
    tilerap_device_free(dsrc); tilerap_device_free(ddst); tilerap_device_free(dperm);
    free(src); free(got); free(perm);
  }
  double x = 0;
  tap_ok(tilerap_device_gather_values(0, NULL, NULL, NULL) == TILERAP_SUCCESS, "device gather of 0 values: nothing to do");
  EXPECT(tilerap_device_gather_values(1, NULL, &x, &x), TILERAP_ERR_NULL, "device gather without a map");
  EXPECT(tilerap_device_scatter_values(1, NULL, &x, &x), TILERAP_ERR_NULL, "device scatter without a map");
  EXPECT(tilerap_device_scatter_add_values(1, NULL, &x, &x), TILERAP_ERR_NULL, "device scatter-add without a map");
  /* scatter-add with repeated targets and skipped (-1) entries */
  {
    const int64_t n = 100003, m = 977;
    double *src = malloc(sizeof *src * (size_t)n), *want = calloc((size_t)m, sizeof *want), *got = malloc(sizeof *got * (size_t)m);
    int64_t *map = malloc(sizeof *map * (size_t)n);
    for (int64_t q = 0; q < n; q++) {
      src[q] = (double)((q * 7919) % 1024) / 64.0; /* exact in any order of addition */
      map[q] = q % 5 == 0 ? -1 : (int64_t)(ref_rand01(seed) * (double)m) % m;
      if (map[q] >= 0) want[map[q]] += src[q];
    }
    for (int64_t k = 0; k < m; k++) want[k] += 1.0;
    double *ones = malloc(sizeof *ones * (size_t)m);
    for (int64_t k = 0; k < m; k++) ones[k] = 1.0;
    double *dsrc = up(src, sizeof *src * (size_t)n), *ddst = up(ones, sizeof *ones * (size_t)m);
    int64_t *dmap = up(map, sizeof *map * (size_t)n);
    const int err = tilerap_device_scatter_add_values(n, dmap, dsrc, ddst);
    down(got, ddst, sizeof *got * (size_t)m);
    int64_t bad = 0;
    for (int64_t k = 0; k < m; k++) bad += got[k] != want[k];
    tap_ok(!err && bad == 0, "device scatter-add of %lld values onto %lld targets (repeated, some skipped): %lld differ",
           (long long)n, (long long)m, (long long)bad);
    tilerap_device_free(dsrc); tilerap_device_free(ddst); tilerap_device_free(dmap);
    free(src); free(want); free(got); free(map); free(ones);
  }
}

/* slots of a CSR's entries (rows shuffled) in a tile matrix of a CSR that
 * holds them and more, on the device; a gather by them returns the CSR's
 * values, entries the tiles lack get -1 (and 0 from the gather), and a
 * scatter by them writes the CSR's values into the tiles. */
static void check_slots(uint64_t *seed)
{
  const int32_t sizes[][2] = {{1, 1}, {37, 53}, {1000, 777}, {20000, 20011}};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    const int32_t m = sizes[t][0], n = sizes[t][1];
    tilerap_csr *Big = ref_random(m, n, t == 3 ? 0.0006 : 0.08, 7, seed);
    ref_randomize_values(Big, seed);
    tilerap_tile_matrix *T = NULL, *dT = NULL;
    int err = tilerap_tile_from_csr(m, n, Big->rowptr, Big->colidx, Big->val, &T);
    if (!err) err = tilerap_tile_copy(T, TILERAP_MEM_DEVICE, &dT);
    /* the caller's CSR: every third entry of Big left out, one column
     * that Big lacks added where there is room, rows shuffled */
    tilerap_csr *S = NULL;
    tilerap_csr_create(m, n, Big->nnz + m, &S);
    double *want = malloc(sizeof(double) * (size_t)(Big->nnz + m + 1));
    int64_t w = 0, absent = 0;
    for (int32_t i = 0; i < m; i++) {
      S->rowptr[i] = w;
      int32_t prev = -1;
      for (int64_t k = Big->rowptr[i]; k < Big->rowptr[i + 1]; k++) {
        if (k % 3 == 0) continue;
        S->colidx[w] = Big->colidx[k]; S->val[w] = Big->val[k]; want[w++] = Big->val[k];
        prev = Big->colidx[k];
      }
      /* a column after the row's last one in Big, when the row has room */
      const int32_t last = Big->rowptr[i + 1] > Big->rowptr[i] ? Big->colidx[Big->rowptr[i + 1] - 1] : -1;
      if (last + 1 < n && last + 1 > prev) { S->colidx[w] = last + 1; S->val[w] = 9.0; want[w++] = 0.0; absent++; }
    }
    S->rowptr[m] = w;
    S->nnz = w;
    csr32 Sh = shuffled(S, 0, seed); /* values follow their entries */
    double *wsh = malloc(sizeof(double) * (size_t)(w + 1));
    for (int64_t k = 0; k < w; k++) wsh[k] = Sh.val[k] == 9.0 ? 0.0 : Sh.val[k];
    int32_t *drp = up(Sh.rp, sizeof(int32_t) * ((size_t)m + 1)), *dcol = up(Sh.col, sizeof(int32_t) * (size_t)(w + 1));
    int64_t *dslot = NULL, *slot = malloc(sizeof(int64_t) * (size_t)(w + 1));
    double *dgot = NULL, *got = malloc(sizeof(double) * (size_t)(w + 1));
    if (!err) err = tilerap_device_malloc(sizeof(int64_t) * (size_t)(w + 1), (void **)&dslot);
    if (!err) err = tilerap_device_malloc(sizeof(double) * (size_t)(w + 1), (void **)&dgot);
    if (!err) err = tilerap_tile_slots_device_i32(dT, m, drp, dcol, w, dslot);
    if (!err) err = tilerap_device_gather_values(w, dslot, dT->val, dgot);
    down(slot, dslot, sizeof(int64_t) * (size_t)w);
    down(got, dgot, sizeof(double) * (size_t)w);
    int64_t bad = 0, neg = 0;
    for (int64_t k = 0; k < w; k++) {
      bad += got[k] != wsh[k];
      neg += slot[k] < 0;
    }
    tap_ok(!err && bad == 0 && neg == absent,
           "slots of %lld entries (%lld not in the tiles) in a %dx%d tile matrix: gather gives the CSR's values "
           "(%lld differ, %lld slots -1) (%s)", (long long)w, (long long)absent, m, n, (long long)bad,
           (long long)neg, err ? tilerap_last_error() : "ok");
    /* scatter: values 1 + k into the tiles; T's other entries untouched */
    double *src = malloc(sizeof(double) * (size_t)(w + 1)), *tv = malloc(sizeof(double) * (size_t)(T->nnz + 1));
    for (int64_t k = 0; k < w; k++) src[k] = 1.0 + (double)k;
    double *dsrc = up(src, sizeof(double) * (size_t)(w + 1));
    if (!err) err = tilerap_device_scatter_values(w, dslot, dsrc, dT->val);
    down(tv, dT->val, sizeof(double) * (size_t)T->nnz);
    int64_t sbad = 0, touched = 0;
    for (int64_t k = 0; k < w; k++)
      if (slot[k] >= 0) { sbad += tv[slot[k]] != src[k]; tv[slot[k]] = T->val[slot[k]]; touched++; }
    for (int64_t q = 0; q < T->nnz; q++) sbad += tv[q] != T->val[q];
    tap_ok(!err && sbad == 0, "scatter by the slots writes %lld values and nothing else (%lld wrong)", (long long)touched,
           (long long)sbad);
    tilerap_device_free(drp); tilerap_device_free(dcol); tilerap_device_free(dslot); tilerap_device_free(dgot);
    tilerap_device_free(dsrc);
    free(slot); free(got); free(want); free(wsh); free(src); free(tv);
    csr32_free(&Sh);
    tilerap_csr_destroy(&S);
    tilerap_csr_destroy(&Big);
    tilerap_tile_destroy(&T);
    tilerap_tile_destroy(&dT);
  }
  tilerap_tile_matrix *H = NULL;
  tilerap_csr *E = ref_random(20, 20, 0.2, 0, seed);
  tilerap_tile_from_csr(20, 20, E->rowptr, E->colidx, E->val, &H);
  int64_t sl[4];
  int32_t rp[2] = {0, 0}, cl[1] = {0};
  EXPECT(tilerap_tile_slots_device_i32(H, 20, rp, cl, 1, sl), TILERAP_ERR_MEMTYPE, "slots in a host tile matrix");
  EXPECT(tilerap_tile_slots_device_i32(NULL, 20, rp, cl, 1, sl), TILERAP_ERR_NULL, "slots in NULL");
  tilerap_tile_matrix *dH = NULL;
  tilerap_tile_copy(H, TILERAP_MEM_DEVICE, &dH);
  EXPECT(tilerap_tile_slots_device_i32(dH, 19, rp, cl, 1, sl), TILERAP_ERR_SIZE, "slots with another row count");
  tilerap_tile_destroy(&dH);
  tilerap_tile_destroy(&H);
  tilerap_csr_destroy(&E);
}

int main(void)
{
  gpu_skip_without_device();
  uint64_t seed = 4242;
  check_buffers(&seed);
  check_gather(&seed);
  check_slots(&seed);
  check_fingerprint(&seed);
  check_model(TILERAP_P2D5, 50, "p2d5 50^2", &seed);
  check_model(TILERAP_P2D9, 37, "p2d9 37^2", &seed);
  check_model(TILERAP_P3D7, 16, "p3d7 16^3", &seed);
  check_model(TILERAP_P3D27, 11, "p3d27 11^3", &seed);
  check_random(&seed);
  check_unreached(&seed);
  return tap_done();
}
