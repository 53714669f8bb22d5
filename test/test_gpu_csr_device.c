/* Products of device CSR operands (tilerap_csr_device_product_*): A*B,
 * A^T*B and P^T*A*P on the irregular set (random-order meshes, power-law
 * degrees, a dense row, blocks) with smoothed-aggregation and classical
 * prolongators, rectangular and tall-skinny P, empty rows and columns,
 * rows in shuffled order; C sorted and with the diagonal first, and the
 * transposed operand, each against the Gustavson reference.  Then misuse:
 * bad row pointers and columns, wrong shapes, other operands at fill, a
 * second fill, layouts C cannot take. */
#include "test_gpu_common.h"

/* device copy of a host CSR with 32-bit row pointers; shuffle: each row's
 * entries in a random order (values moved with them) */
typedef struct {
  tilerap_csr_device_i32 v;
  int32_t *rp, *col;
  double *val;
  int32_t *hcol, *hrow; /* host copies of the device order: each entry's column and row */
  int64_t nnz;
} dcsr;

/* the second value set of a numeric run: a function of the entry's place
 * and old value, so that host and device order agree */
static double new_value(int32_t i, int32_t j, double v)
{
  return v * (1.5 + (double)((i * 7 + j * 3) % 5)) - 0.25 * (double)((i + 2 * j) % 3);
}
static void new_values_host(tilerap_csr *H)
{
  for (int32_t i = 0; i < H->m; i++)
    for (int64_t p = H->rowptr[i]; p < H->rowptr[i + 1]; p++) H->val[p] = new_value(i, H->colidx[p], H->val[p]);
}
/* the same on the device copy (its values were those of H, in D's order) */
static void new_values_device(dcsr *D)
{
  double *v = malloc((size_t)(D->nnz ? D->nnz : 1) * sizeof *v);
  if (D->nnz && tilerap_memcpy(v, TILERAP_MEM_HOST, D->val, TILERAP_MEM_DEVICE, (size_t)D->nnz * sizeof *v)) abort();
  for (int64_t p = 0; p < D->nnz; p++) v[p] = new_value(D->hrow[p], D->hcol[p], v[p]);
  if (D->nnz && tilerap_memcpy(D->val, TILERAP_MEM_DEVICE, v, TILERAP_MEM_HOST, (size_t)D->nnz * sizeof *v)) abort();
  free(v);
}

static void *dup_to_device(const void *src, size_t bytes)
{
  void *d = NULL;
  if (tilerap_device_malloc(bytes ? bytes : 1, &d)) { fprintf(stderr, "device alloc: %s\n", tilerap_last_error()); abort(); }
  if (src && bytes && tilerap_memcpy(d, TILERAP_MEM_DEVICE, src, TILERAP_MEM_HOST, bytes)) abort();
  return d;
}

static dcsr up(const tilerap_csr *H, int shuffle, uint64_t *seed)
{
  dcsr D;
  int32_t *rp = malloc(((size_t)H->m + 1) * sizeof *rp), *col = malloc((size_t)(H->nnz ? H->nnz : 1) * sizeof *col);
  double *val = malloc((size_t)(H->nnz ? H->nnz : 1) * sizeof *val);
  for (int32_t i = 0; i <= H->m; i++) rp[i] = (int32_t)H->rowptr[i];
  memcpy(col, H->colidx, (size_t)H->nnz * sizeof *col);
  memcpy(val, H->val, (size_t)H->nnz * sizeof *val);
  if (shuffle)
    for (int32_t i = 0; i < H->m; i++)
      for (int64_t p = H->rowptr[i + 1] - 1; p > H->rowptr[i]; p--) {
        const int64_t q = H->rowptr[i] + (int64_t)(ref_rand01(seed) * (double)(p - H->rowptr[i] + 1));
        int32_t c = col[p]; col[p] = col[q]; col[q] = c;
        double x = val[p]; val[p] = val[q]; val[q] = x;
      }
  D.rp = dup_to_device(rp, ((size_t)H->m + 1) * sizeof *rp);
  D.col = dup_to_device(col, (size_t)H->nnz * sizeof *col);
  D.val = dup_to_device(val, (size_t)H->nnz * sizeof *val);
  D.v.m = H->m; D.v.n = H->n; D.v.rowptr = D.rp; D.v.colidx = D.col; D.v.val = D.val;
  D.nnz = H->nnz;
  D.hcol = col;
  D.hrow = malloc((size_t)(H->nnz ? H->nnz : 1) * sizeof *D.hrow);
  for (int32_t i = 0; i < H->m; i++)
    for (int64_t p = H->rowptr[i]; p < H->rowptr[i + 1]; p++) D.hrow[p] = i;
  free(rp); free(val);
  return D;
}

static void down_free(dcsr *D)
{
  tilerap_device_free(D->rp); tilerap_device_free(D->col); tilerap_device_free(D->val);
  free(D->hcol); free(D->hrow);
}

/* host copy of device CSR arrays (m rows, n columns) */
static tilerap_csr *down(int32_t m, int32_t n, const int32_t *drp, const int32_t *dcol, const double *dval)
{
  int32_t *rp = malloc(((size_t)m + 1) * sizeof *rp);
  if (tilerap_memcpy(rp, TILERAP_MEM_HOST, drp, TILERAP_MEM_DEVICE, ((size_t)m + 1) * sizeof *rp)) abort();
  tilerap_csr *H = NULL;
  if (tilerap_csr_create(m, n, rp[m], &H)) abort();
  for (int32_t i = 0; i <= m; i++) H->rowptr[i] = rp[i];
  if (rp[m] > 0) {
    if (tilerap_memcpy(H->colidx, TILERAP_MEM_HOST, dcol, TILERAP_MEM_DEVICE, (size_t)rp[m] * sizeof(int32_t))) abort();
    if (tilerap_memcpy(H->val, TILERAP_MEM_HOST, dval, TILERAP_MEM_DEVICE, (size_t)rp[m] * sizeof(double))) abort();
  }
  free(rp);
  return H;
}

/* 1 if every row of H (square) starts with its diagonal, the rest ascending */
static int diag_first_layout(const tilerap_csr *H)
{
  for (int32_t i = 0; i < H->m; i++) {
    const int64_t b = H->rowptr[i], e = H->rowptr[i + 1];
    if (b == e || H->colidx[b] != i) return 0;
    for (int64_t p = b + 2; p < e; p++)
      if (H->colidx[p] <= H->colidx[p - 1]) return 0;
  }
  return 1;
}

static int sorted_layout(const tilerap_csr *H)
{
  for (int32_t i = 0; i < H->m; i++)
    for (int64_t p = H->rowptr[i] + 1; p < H->rowptr[i + 1]; p++)
      if (H->colidx[p] <= H->colidx[p - 1]) return 0;
  return 1;
}

static void sort_rows(tilerap_csr *H)
{
  for (int32_t i = 0; i < H->m; i++)
    ref_sort_columns(H->colidx + H->rowptr[i], H->val + H->rowptr[i], H->rowptr[i + 1] - H->rowptr[i]);
}


/* n device doubles set to NaN */
static void poison(double *d, int64_t n)
{
  if (n <= 0) return;
  double *h = malloc((size_t)n * sizeof *h);
  for (int64_t q = 0; q < n; q++) h[q] = NAN;
  if (tilerap_memcpy(d, TILERAP_MEM_DEVICE, h, TILERAP_MEM_HOST, (size_t)n * sizeof *h)) abort();
  free(h);
}

/* H without the entries of column c (same shape) */
static tilerap_csr *drop_column(const tilerap_csr *H, int32_t c)
{
  int64_t nnz = 0;
  for (int64_t p = 0; p < H->nnz; p++) nnz += H->colidx[p] != c;
  tilerap_csr *X = NULL;
  if (tilerap_csr_create(H->m, H->n, nnz, &X)) abort();
  int64_t q = 0;
  X->rowptr[0] = 0;
  for (int32_t i = 0; i < H->m; i++) {
    for (int64_t p = H->rowptr[i]; p < H->rowptr[i + 1]; p++)
      if (H->colidx[p] != c) { X->colidx[q] = H->colidx[p]; X->val[q++] = H->val[p]; }
    X->rowptr[i + 1] = q;
  }
  return X;
}

static void check_refill_and_new_arrays(uint64_t *seed);

/* An operand without entries and without a value array (PETSc's empty
 * off-diagonal blocks): A*E, E^T*B and E^T*S*E (S square), made, filled
 * and re-run on new values of the other operand, are empty. */
static void check_empty_operand(uint64_t *seed)
{
  tilerap_csr *A = ref_random(57, 40, 0.1, 3, seed), *B = ref_random(40, 31, 0.1, 3, seed),
              *S = ref_random(40, 40, 0.2, 0, seed), *E = NULL;
  if (tilerap_csr_create(40, 23, 0, &E)) abort();
  for (int32_t i = 0; i <= 40; i++) E->rowptr[i] = 0;
  dcsr dA = up(A, 0, seed), dB = up(B, 0, seed), dS = up(S, 0, seed), dE = up(E, 0, seed);
  dE.v.val = NULL;
  for (int k = 0; k < 3; k++) {
    static const tilerap_csr_kind kinds[3] = {TILERAP_CSR_AB, TILERAP_CSR_ATB, TILERAP_CSR_PTAP};
    static const char *const names[3] = {"A*E", "E^T*B", "E^T*S*E"};
    const tilerap_csr_kind kind = kinds[k];
    dcsr *other = k == 0 ? &dA : k == 1 ? &dB : &dS;
    const tilerap_csr_device_i32 *l = k == 1 ? &dE.v : &other->v, *r = k == 1 ? &dB.v : &dE.v;
    const int32_t cm = k ? 23 : 57, cn = k == 1 ? 31 : 23;
    tilerap_csr_device_product X = NULL;
    int64_t cnnz = -1;
    int32_t *crp = dup_to_device(NULL, ((size_t)cm + 1) * 4), *ccol = dup_to_device(NULL, 4);
    double *cval = dup_to_device(NULL, 8);
    int err = tilerap_csr_device_product_create_i32(kind, l, r, TILERAP_CSR_REUSE, &X, &cnnz);
    if (!err) err = tilerap_csr_device_product_fill_i32(X, l, r, 0, crp, ccol, cval);
    new_values_device(other);
    if (!err) err = tilerap_csr_device_product_numeric_i32(X, l, r, cval);
    tilerap_csr *C = err ? NULL : down(cm, cn, crp, ccol, cval);
    tap_ok(!err && cnnz == 0 && C && C->nnz == 0, "%s with an operand without entries or values: made, filled, re-run; C %d x %d empty (%s)",
           names[k], cm, cn, err ? tilerap_last_error() : "ok");
    tilerap_csr_destroy(&C);
    tilerap_device_free(crp); tilerap_device_free(ccol); tilerap_device_free(cval);
    tilerap_csr_device_product_destroy(&X);
  }
  down_free(&dA); down_free(&dB); down_free(&dS); down_free(&dE);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B); tilerap_csr_destroy(&S); tilerap_csr_destroy(&E);
}

/* one product on the device against the reference R; diag: ask for the
 * diagonal first (R square with every diagonal entry) */
static void check(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B, int shuffle, int diag,
                  const char *what, uint64_t *seed)
{
  tilerap_csr *R = ref_product(kind, A, B);
  dcsr dA = up(A, shuffle, seed), dB = up(B, shuffle, seed);
  tilerap_csr_device_product X = NULL;
  int64_t cnnz = -1;
  int err = tilerap_csr_device_product_create_i32(kind, &dA.v, &dB.v, TILERAP_CSR_REUSE, &X, &cnnz);
  if (!tap_ok(!err && cnnz == R->nnz, "%s %s: create (C %lld entries, reference %lld) %s", tilerap_csr_kind_name(kind),
              what, (long long)cnnz, (long long)R->nnz, err ? tilerap_last_error() : "")) {
    down_free(&dA); down_free(&dB); tilerap_csr_destroy(&R); tilerap_csr_device_product_destroy(&X);
    return;
  }
  int32_t *crp = dup_to_device(NULL, ((size_t)R->m + 1) * sizeof(int32_t)), *ccol = dup_to_device(NULL, (size_t)cnnz * 4);
  double *cval = dup_to_device(NULL, (size_t)cnnz * 8);
  err = tilerap_csr_device_product_fill_i32(X, &dA.v, &dB.v, diag ? TILERAP_CSR_DIAG_FIRST : 0, crp, ccol, cval);
  if (!tap_ok(!err, "%s %s: fill%s %s", tilerap_csr_kind_name(kind), what, diag ? " (diagonal first)" : "",
              err ? tilerap_last_error() : "")) {
    tilerap_device_free(crp); tilerap_device_free(ccol); tilerap_device_free(cval);
    tilerap_csr_device_product_destroy(&X);
    down_free(&dA); down_free(&dB);
    tilerap_csr_destroy(&R);
    return;
  }
  tilerap_csr *C = down(R->m, R->n, crp, ccol, cval);
  tap_ok(diag ? diag_first_layout(C) : sorted_layout(C), "%s %s: rows %s", tilerap_csr_kind_name(kind), what,
         diag ? "diagonal first, then ascending" : "ascending");
  sort_rows(C);
  const double rel = ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  tap_ok(rel <= 1e-14, "%s %s: C equals the reference (relerr %.2e)", tilerap_csr_kind_name(kind), what, rel);
  int64_t flops = 0;
  int32_t cm = 0, cn = 0;
  tilerap_csr_device_product_info(X, &cm, &cn, NULL, &flops, NULL);
  tap_ok(cm == R->m && cn == R->n && (R->nnz == 0 || flops >= 2 * R->nnz), "%s %s: info %d x %d, %lld flops",
         tilerap_csr_kind_name(kind), what, cm, cn, (long long)flops);
  {
    /* a record holds 8 bytes per multiply-add and 4 per entry; none: no bytes */
    int64_t rec = -1, bytes = -1;
    err = tilerap_csr_device_product_record_info(X, &rec, &bytes);
    tap_ok(!err && rec >= 0 && 2 * rec <= flops && (rec ? bytes > 8 * rec : bytes == 0),
           "%s %s: record info %lld of %lld multiply-adds, %lld bytes", tilerap_csr_kind_name(kind), what,
           (long long)rec, (long long)(flops / 2), (long long)bytes);
  }
  if (kind != TILERAP_CSR_AB) {
    const tilerap_csr *O = kind == TILERAP_CSR_ATB ? A : B;
    tilerap_csr *Ot = ref_transpose(O);
    int32_t *trp = dup_to_device(NULL, ((size_t)O->n + 1) * 4), *tcol = dup_to_device(NULL, (size_t)O->nnz * 4);
    double *tval = dup_to_device(NULL, (size_t)O->nnz * 8);
    err = tilerap_csr_device_product_transpose_i32(X, trp, tcol, tval);
    tilerap_csr *T = down(O->n, O->m, trp, tcol, tval);
    /* rows ascending with the operand's own values: equal bit for bit */
    const int same = !err && ref_same_structure(T, Ot) && (!Ot->nnz || !memcmp(T->val, Ot->val, (size_t)Ot->nnz * 8));
    tap_ok(same, "%s %s: the transposed operand equals the reference transpose %s", tilerap_csr_kind_name(kind), what,
           err ? tilerap_last_error() : "");
    tilerap_csr_destroy(&T); tilerap_csr_destroy(&Ot);
    tilerap_device_free(trp); tilerap_device_free(tcol); tilerap_device_free(tval);
  }
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dB.v, 0, crp, ccol, cval), TILERAP_ERR_INVALID,
         "a second fill");
  /* numeric runs on new values: the first by the hash, later ones from the record where one was kept */
  tilerap_csr *A2 = ref_copy(A), *B2 = ref_copy(B);
  new_values_host(A2);
  new_values_host(B2);
  tilerap_csr *R2 = ref_product(kind, A2, B2);
  new_values_device(&dA);
  new_values_device(&dB);
  for (int run = 0; run < 3; run++) {
    poison(cval, cnnz); /* an entry a run leaves unwritten reads NaN */
    err = tilerap_csr_device_product_numeric_i32(X, &dA.v, &dB.v, cval);
    tilerap_csr *N = down(R->m, R->n, crp, ccol, cval);
    sort_rows(N);
    const double r2 = !err && ref_same_structure(N, R2) ? ref_relerr(N, R2) : INFINITY;
    tap_ok(r2 <= 1e-14, "%s %s: numeric run %d on new values equals the reference (relerr %.2e) %s",
           tilerap_csr_kind_name(kind), what, run + 1, r2, err ? tilerap_last_error() : "");
    tilerap_csr_destroy(&N);
  }
  EXPECT(tilerap_csr_device_product_numeric_i32(X, &dB.v, &dA.v, cval), TILERAP_ERR_STRUCTURE,
         "numeric with the operands swapped");
  tilerap_csr_destroy(&A2); tilerap_csr_destroy(&B2); tilerap_csr_destroy(&R2);
  tilerap_csr_destroy(&C);
  tilerap_device_free(crp); tilerap_device_free(ccol); tilerap_device_free(cval);
  tilerap_csr_device_product_destroy(&X);
  down_free(&dA); down_free(&dB);
  tilerap_csr_destroy(&R);
}

static void check_irregular(const char *spec, int classical, uint64_t *seed)
{
  tilerap_csr *A = NULL, *P = NULL;
  if (tilerap_model_irregular(spec, 7, &A)) { tap_ok(0, "model %s: %s", spec, tilerap_last_error()); return; }
  int err = classical ? tilerap_model_classical_prolongator(A, 0.25, 11, &P) : tilerap_model_sa_prolongator(A, 2.0 / 3.0, &P);
  if (err) { tap_ok(0, "prolongator of %s: %s", spec, tilerap_last_error()); tilerap_csr_destroy(&A); return; }
  char what[128];
  snprintf(what, sizeof what, "%s, %s P (%d x %d)", spec, classical ? "classical" : "SA", P->m, P->n);
  check(TILERAP_CSR_PTAP, A, P, 1, 1, what, seed);
  check(TILERAP_CSR_AB, A, P, 0, 0, what, seed);
  if (!classical) check(TILERAP_CSR_AB, A, A, 1, 1, spec, seed); /* A*A holds every diagonal entry */
  check(TILERAP_CSR_ATB, P, A, 1, 0, what, seed);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
}

/* m x k, k small: row i in column i mod k, every third row also in the
 * next column (P^T's rows hold m/k entries and more).  An aggregation's
 * shape: the model's random prolongator with two entries a row makes P
 * dense for k <= 2, and then P^T A P's four entries each sum 10^5
 * products of A's rows that sum to about zero, beyond what two
 * summation orders agree on to 1e-14. */
static tilerap_csr *tall_skinny(int32_t m, int32_t k, uint64_t *seed)
{
  tilerap_csr *P = NULL;
  if (tilerap_csr_create(m, k, (int64_t)m + m / 3 + 1, &P)) abort();
  int64_t nz = 0;
  for (int32_t i = 0; i < m; i++) {
    P->rowptr[i] = nz;
    const int32_t c = i % k, d = (c + 1) % k;
    const int two = i % 3 == 0 && d != c;
    if (two && d < c) P->colidx[nz] = d, P->val[nz++] = ref_rand01(seed) + 0.5;
    P->colidx[nz] = c, P->val[nz++] = ref_rand01(seed) + 0.5;
    if (two && d > c) P->colidx[nz] = d, P->val[nz++] = ref_rand01(seed) + 0.5;
  }
  P->rowptr[m] = nz;
  P->nnz = nz;
  return P;
}

/* Rows of more than 65536 products, which the kernels split over many
 * blocks (the first product, the hash-free numeric runs and the record of
 * later runs): the dense row of a grid Laplacian at 150000 rows, and the
 * rows of P^T for a tall-skinny P */
static void check_split_rows(uint64_t *seed)
{
  tilerap_csr *A = NULL, *P = NULL;
  if (tilerap_model_irregular("denserow:150000", 7, &A) || tilerap_model_sa_prolongator(A, 2.0 / 3.0, &P)) {
    tap_ok(0, "denserow:150000 and its prolongator: %s", tilerap_last_error());
  } else {
    char what[96];
    snprintf(what, sizeof what, "denserow:150000, SA P (%d x %d)", P->m, P->n);
    check(TILERAP_CSR_PTAP, A, P, 1, 1, what, seed);
    check(TILERAP_CSR_AB, A, P, 0, 0, what, seed);
    check(TILERAP_CSR_ATB, P, A, 1, 0, what, seed);
  }
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  if (tilerap_model_irregular("random:60000", 7, &A)) { tap_ok(0, "random:60000: %s", tilerap_last_error()); return; }
  for (int32_t k = 1; k <= 3; k++) {
    char what[96];
    P = tall_skinny(A->m, k, seed);
    snprintf(what, sizeof what, "random:60000, tall-skinny P (%d x %d)", P->m, P->n);
    check(TILERAP_CSR_PTAP, A, P, 1, 0, what, seed);
    check(TILERAP_CSR_ATB, P, A, 0, 0, what, seed);
    tilerap_csr_destroy(&P);
  }
  tilerap_csr_destroy(&A);
}

/* B (rows x cols): every hub-th row full, the others two entries */
static tilerap_csr *hub_rows(int32_t rows, int32_t cols, int32_t hub, uint64_t *seed)
{
  int64_t nz = 0;
  for (int32_t j = 0; j < rows; j++) nz += j % hub == 0 ? cols : 2;
  tilerap_csr *B = NULL;
  if (tilerap_csr_create(rows, cols, nz, &B)) abort();
  nz = 0;
  for (int32_t j = 0; j < rows; j++) {
    B->rowptr[j] = nz;
    if (j % hub == 0) {
      for (int32_t c = 0; c < cols; c++) B->colidx[nz] = c, B->val[nz++] = ref_rand01(seed) - 0.5;
    } else {
      const int32_t c0 = (int32_t)(ref_rand01(seed) * (cols - 1)), c1 = c0 + 1;
      B->colidx[nz] = c0, B->val[nz++] = ref_rand01(seed) - 0.5;
      B->colidx[nz] = c1, B->val[nz++] = ref_rand01(seed) - 0.5;
    }
  }
  B->rowptr[rows] = nz;
  B->nnz = nz;
  return B;
}

/* A (rows x rows): every 100th row long, of 2000 to rows entries spread
 * over the columns, the others five entries */
static tilerap_csr *long_rows(int32_t rows, uint64_t *seed)
{
  int64_t nz = 0;
  for (int32_t i = 0; i < rows; i++) nz += i % 100 == 0 ? 2000 + (int64_t)(i / 100) * 7919 % (rows - 2000) : 5;
  tilerap_csr *A = NULL;
  if (tilerap_csr_create(rows, rows, nz, &A)) abort();
  nz = 0;
  for (int32_t i = 0; i < rows; i++) {
    A->rowptr[i] = nz;
    const int64_t len = i % 100 == 0 ? 2000 + (int64_t)(i / 100) * 7919 % (rows - 2000) : 5;
    const int32_t step = (int32_t)(rows / len), off = (int32_t)(ref_rand01(seed) * step);
    for (int64_t e = 0; e < len; e++) A->colidx[nz] = (int32_t)(e * step + off), A->val[nz++] = ref_rand01(seed) - 0.5;
  }
  A->rowptr[rows] = nz;
  A->nnz = nz;
  return A;
}

/* Split rows of very different products in one launch, each cut into work
 * items by its products: 200 long rows of A (2000 to 20000 entries) on B
 * rows of 2 entries and hub rows of all of B's columns, so that a row's
 * products range over 10^5 to 10^6 and its entries' B rows differ 400-fold
 * (items cut at entry boundaries).  C of 800 columns sums in shared
 * memory, of 5000 columns on the global accumulator alone. */
static void check_uneven_split_rows(uint64_t *seed)
{
  tilerap_csr *A = long_rows(20000, seed);
  for (int wide = 0; wide < 2; wide++) {
    tilerap_csr *B = hub_rows(20000, wide ? 5000 : 800, wide ? 100 : 40, seed);
    char what[128];
    snprintf(what, sizeof what, "200 long rows of A times hub rows of %d columns (uneven split rows%s)", B->n,
             wide ? ", global accumulator" : ", shared sums");
    check(TILERAP_CSR_AB, A, B, 1, 0, what, seed);
    tilerap_csr_destroy(&B);
  }
  tilerap_csr_destroy(&A);
}

/* Kernel choices the matrices above leave out: table bins 3 and 4 with
 * more rows than the few-rows threshold (8 per SM: a warp per row on a
 * 132-SM H100 or H200; fewer rows take a block each), and split rows into a
 * C of between 33 and 4096 columns (shared sums, blocks per row capped
 * so that each has twice as many products as columns) */
static void check_kernel_choices(uint64_t *seed)
{
  tilerap_csr *A = ref_random(6000, 6000, 6.0 / 6000, 0, seed), *P = NULL;
  check(TILERAP_CSR_AB, A, A, 1, 0, "random 6000, 6 a row, squared (rows of about 36: bin 3)", seed);
  tilerap_csr_destroy(&A);
  A = ref_random(4000, 4000, 13.0 / 4000, 0, seed);
  check(TILERAP_CSR_AB, A, A, 1, 0, "random 4000, 13 a row, squared (rows of about 170: bin 4)", seed);
  tilerap_csr_destroy(&A);
  /* small products whose few rows each sum thousands of products into a
   * narrow C: split below TR_BIN_SPLIT over several blocks a row (the
   * threshold follows the product's work); re-runs from records (C's
   * entries sum about 740 products each in rows of 12, and about 5), from
   * hash tables with TILERAP_CSR_RECORD_MACS=0 (gpu_paths.sh) */
  A = ref_random(20000, 20000, 7.0 / 20000, 0, seed);
  P = ref_random(20000, 12, 1.0 / 12, 0, seed);
  check(TILERAP_CSR_PTAP, A, P, 1, 0, "random 20000, P of 12 columns (C rows of about 9000 products: split)", seed);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  A = ref_random(100, 2000, 0.4, 0, seed);
  P = ref_random(2000, 3000, 20.0 / 3000, 0, seed);
  check(TILERAP_CSR_AB, A, P, 1, 0,
        "100 rows of 800 times 2000 x 3000 (rows of about 16000 products: split over 2 blocks, recorded)", seed);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  if (tilerap_model_irregular("denserow:150000", 7, &A)) {
    tap_ok(0, "denserow:150000: %s", tilerap_last_error());
    return;
  }
  P = ref_random(A->n, 1000, 2.0 / 1000, 0, seed);
  check(TILERAP_CSR_AB, A, P, 1, 0, "denserow:150000 times a random 1000-column P (a split row, shared sums)", seed);
  check(TILERAP_CSR_PTAP, A, P, 0, 0, "denserow:150000, random 1000-column P", seed);
  /* two products alive at once, the narrower made second (a hierarchy's
   * next level): the first one's runs still take their shared sums */
  tilerap_csr *Q = ref_random(A->n, 40, 2.0 / 40, 0, seed);
  dcsr dA = up(A, 0, seed), dP = up(P, 0, seed), dQ = up(Q, 0, seed);
  tilerap_csr_device_product X = NULL, Y = NULL;
  int64_t xn = 0, yn = 0;
  int err = tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &dA.v, &dP.v, TILERAP_CSR_REUSE, &X, &xn);
  int32_t *xrp = dup_to_device(NULL, ((size_t)A->m + 1) * 4), *xcol = dup_to_device(NULL, (size_t)(xn > 0 ? xn : 1) * 4);
  double *xval = dup_to_device(NULL, (size_t)(xn > 0 ? xn : 1) * 8);
  if (!err) err = tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, 0, xrp, xcol, xval);
  if (!err) err = tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &dA.v, &dQ.v, TILERAP_CSR_REUSE, &Y, &yn);
  tilerap_csr *A2 = ref_copy(A);
  new_values_host(A2);
  tilerap_csr *R = ref_product(TILERAP_CSR_AB, A2, P);
  new_values_device(&dA);
  for (int run = 0; run < 2 && !err; run++) err = tilerap_csr_device_product_numeric_i32(X, &dA.v, &dP.v, xval);
  tilerap_csr *C = err ? NULL : down(R->m, R->n, xrp, xcol, xval);
  if (C) sort_rows(C);
  const double rel = C && ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  tap_ok(rel <= 1e-14, "two products alive (C of 1000 columns, then of 40): the first one's numeric runs equal the "
         "reference (relerr %.2e) %s", rel, err ? tilerap_last_error() : "");
  tilerap_csr_destroy(&C); tilerap_csr_destroy(&R); tilerap_csr_destroy(&A2);
  tilerap_device_free(xrp); tilerap_device_free(xcol); tilerap_device_free(xval);
  tilerap_csr_device_product_destroy(&X); tilerap_csr_device_product_destroy(&Y);
  down_free(&dA); down_free(&dP); down_free(&dQ);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&Q);
}

/* tilerap_csr_device_path_i32: the CSR path unless TILERAP_PATH names the
 * tile path, whatever A's longest row (a dense row's products are split
 * over many blocks); A's longest row when asked for */
static void check_path(const char *spec, uint64_t *seed)
{
  tilerap_csr *A = NULL;
  if (tilerap_model_irregular(spec, 7, &A)) { tap_ok(0, "model %s", spec); return; }
  dcsr dA = up(A, 0, seed);
  const char *knob = getenv("TILERAP_PATH");
  const tilerap_path want = knob && !strcmp(knob, "tiles") ? TILERAP_PATH_TILES : TILERAP_PATH_CSR;
  tilerap_path path = want == TILERAP_PATH_CSR ? TILERAP_PATH_TILES : TILERAP_PATH_CSR;
  int64_t longest = 0;
  int err = tilerap_csr_device_path_i32(TILERAP_CSR_PTAP, &dA.v, &dA.v, &path, &longest);
  int64_t ref = 0;
  for (int32_t i = 0; i < A->m; i++)
    if (A->rowptr[i + 1] - A->rowptr[i] > ref) ref = A->rowptr[i + 1] - A->rowptr[i];
  tap_ok(!err && path == want && longest == ref, "%s: path %s (longest row %lld, reference %lld)", spec,
         tilerap_path_name(path), (long long)longest, (long long)ref);
  path = want == TILERAP_PATH_CSR ? TILERAP_PATH_TILES : TILERAP_PATH_CSR;
  err = tilerap_csr_device_path_i32(TILERAP_CSR_AB, &dA.v, &dA.v, &path, NULL);
  tap_ok(!err && path == want, "%s: path %s without the longest row", spec, tilerap_path_name(path));
  down_free(&dA);
  tilerap_csr_destroy(&A);
}

/* a P^T A P's path and fills as the product reports them (made with flags) */
static tilerap_path product_path_flags(const tilerap_csr *A, const tilerap_csr *P, unsigned flags, double *fill,
                                       uint64_t *seed)
{
  dcsr dA = up(A, 1, seed), dP = up(P, 1, seed);
  tilerap_csr_device_product X = NULL;
  tilerap_path path = (tilerap_path)-1;
  fill[0] = fill[1] = -1;
  if (tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &dA.v, &dP.v, flags, &X, NULL) ||
      tilerap_csr_device_product_path(X, &path, &fill[0], &fill[1]))
    path = (tilerap_path)-1;
  tilerap_csr_device_product_destroy(&X);
  down_free(&dA); down_free(&dP);
  return path;
}
static tilerap_path product_path(const tilerap_csr *A, const tilerap_csr *P, double *fill, uint64_t *seed)
{
  return product_path_flags(A, P, TILERAP_CSR_REUSE, fill, seed);
}

/* H with entry 0 of row i repeated (its value split in two): the same
 * matrix, a row with a repeated column */
static tilerap_csr *repeat_entry(const tilerap_csr *H, int32_t i)
{
  tilerap_csr *R = NULL;
  if (tilerap_csr_create(H->m, H->n, H->nnz + 1, &R)) abort();
  int64_t q = 0;
  for (int32_t r = 0; r < H->m; r++) {
    R->rowptr[r] = q;
    for (int64_t p = H->rowptr[r]; p < H->rowptr[r + 1]; p++) {
      R->colidx[q] = H->colidx[p];
      R->val[q++] = H->val[p] * (r == i && p == H->rowptr[r] ? 0.5 : 1.0);
      if (r == i && p == H->rowptr[r]) { R->colidx[q] = H->colidx[p]; R->val[q++] = 0.5 * H->val[p]; }
    }
  }
  R->rowptr[H->m] = q;
  return R;
}

/* P^T A P of operands that fill their tiles densely, kept for numeric
 * runs, goes over tiles (the path auto takes by the measured fills; made
 * once, or TILERAP_PATH=csr, it keeps the CSR rows), with the same results, layouts, transposed operand and numeric
 * runs as the CSR rows (check); a row with a repeated column, which the
 * tiles do not take, stays on the CSR rows and sums it. */
static void check_dense_tiles(uint64_t *seed)
{
  tilerap_csr *A = ref_random(700, 700, 0.35, 0, seed), *P = ref_random(700, 90, 0.3, 0, seed);
  tilerap_csr *A2 = ref_random(333, 333, 0.5, 0, seed), *P2 = ref_random(333, 41, 0.4, 0, seed);
  double fill[2];
  tilerap_tuning_set("TILERAP_PATH", "auto"); /* whatever the environment says */
  tilerap_path path = product_path(A, P, fill, seed);
  /* 16 x 16 tiles of a 35 % and a 30 % random matrix: 90 and 77 entries */
  tap_ok(path == TILERAP_PATH_TILES && fabs(fill[0] - 0.35 * 256) < 8 && fabs(fill[1] - 0.3 * 256) < 8,
         "dense 700 x 700, P 700 x 90: path %s, fills %.1f %.1f", path == TILERAP_PATH_TILES ? "tiles" : "not tiles",
         fill[0], fill[1]);
  path = product_path_flags(A, P, 0, fill, seed);
  tap_ok(path == TILERAP_PATH_CSR && fill[0] == 0, "the same made once (no TILERAP_CSR_REUSE): the CSR rows");
  check(TILERAP_CSR_PTAP, A, P, 1, 1, "dense 700 x 700, P 700 x 90 (over tiles)", seed);
  check(TILERAP_CSR_PTAP, A, P, 0, 0, "dense 700 x 700, P 700 x 90 (over tiles, sorted)", seed);
  path = product_path(A2, P2, fill, seed);
  tap_ok(path == TILERAP_PATH_TILES, "dense 333 x 333, P 333 x 41: path tiles (fills %.1f %.1f)", fill[0], fill[1]);
  check(TILERAP_CSR_PTAP, A2, P2, 1, 1, "dense 333 x 333, P 333 x 41 (over tiles, partial tiles)", seed);
  tilerap_csr *Ar = repeat_entry(A2, 17);
  path = product_path(Ar, P2, fill, seed);
  tap_ok(path == TILERAP_PATH_CSR && fill[0] == 0 && fill[1] == 0,
         "a repeated column in row 17: the CSR rows (path %d), no fills reported (%.1f %.1f: not \"too sparse\")",
         (int)path, fill[0], fill[1]);
  check(TILERAP_CSR_PTAP, Ar, P2, 0, 0, "dense 333 x 333 with a repeated column, P 333 x 41", seed);
  tilerap_csr_destroy(&Ar);
  tilerap_tuning_set("TILERAP_PATH", "csr");
  path = product_path(A, P, fill, seed);
  tap_ok(path == TILERAP_PATH_CSR && fill[0] == 0 && fill[1] == 0, "TILERAP_PATH=csr: the CSR rows, no fills measured");
  check(TILERAP_CSR_PTAP, A, P, 1, 1, "dense 700 x 700, P 700 x 90 (TILERAP_PATH=csr)", seed);
  tilerap_tuning_set("TILERAP_PATH", "tiles");
  tilerap_csr *S = NULL, *Q = NULL;
  if (!tilerap_model_irregular("mesh2d:3000", 7, &S) && !tilerap_model_sa_prolongator(S, 2.0 / 3.0, &Q)) {
    path = product_path(S, Q, fill, seed);
    tap_ok(path == TILERAP_PATH_TILES, "TILERAP_PATH=tiles: a sparse mesh over tiles too");
    check(TILERAP_CSR_PTAP, S, Q, 1, 1, "mesh2d:3000, SA P (TILERAP_PATH=tiles)", seed);
    tilerap_tuning_set("TILERAP_PATH", "auto");
    path = product_path(S, Q, fill, seed);
    tap_ok(path == TILERAP_PATH_CSR && fill[0] > 0 && fill[0] < 16, "auto: the sparse mesh on CSR rows (fills %.1f %.1f)",
           fill[0], fill[1]);
  } else
    tap_ok(0, "mesh2d:3000: %s", tilerap_last_error());
  /* an empty C over tiles (A 2 x 2 with A(0,1) alone, P 2 x 1 with P(1,0)
   * alone): the diagonal first refused as the CSR rows refuse it, before
   * anything is written; then sorted */
  tilerap_tuning_set("TILERAP_PATH", "tiles");
  {
    tilerap_csr *E = NULL, *F = NULL;
    if (tilerap_csr_create(2, 2, 1, &E) || tilerap_csr_create(2, 1, 1, &F)) abort();
    E->rowptr[0] = 0; E->rowptr[1] = 1; E->rowptr[2] = 1; E->colidx[0] = 1; E->val[0] = 2.0;
    F->rowptr[0] = 0; F->rowptr[1] = 0; F->rowptr[2] = 1; F->colidx[0] = 0; F->val[0] = 3.0;
    dcsr dE = up(E, 0, seed), dF = up(F, 0, seed);
    tilerap_csr_device_product X = NULL;
    int64_t cnnz = -1;
    int32_t hrp[2] = {-1, -1}, *crp = dup_to_device(hrp, sizeof hrp);
    int err = tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &dE.v, &dF.v, TILERAP_CSR_REUSE, &X, &cnnz);
    tap_ok(!err && cnnz == 0, "empty C over tiles: made, no entries (%lld)", (long long)cnnz);
    if (!err) {
      EXPECT(tilerap_csr_device_product_fill_i32(X, &dE.v, &dF.v, TILERAP_CSR_DIAG_FIRST, crp, NULL, NULL),
             TILERAP_ERR_STRUCTURE, "empty C over tiles, diagonal first");
      err = tilerap_csr_device_product_fill_i32(X, &dE.v, &dF.v, 0, crp, NULL, NULL);
      if (!err) err = tilerap_memcpy(hrp, TILERAP_MEM_HOST, crp, TILERAP_MEM_DEVICE, sizeof hrp);
      tap_ok(!err && hrp[0] == 0 && hrp[1] == 0, "empty C over tiles, sorted: row pointers 0 0 (%s)",
             err ? tilerap_last_error() : "ok");
    }
    tilerap_csr_device_product_destroy(&X);
    tilerap_device_free(crp);
    down_free(&dE); down_free(&dF);
    tilerap_csr_destroy(&E); tilerap_csr_destroy(&F);
  }
  tilerap_tuning_set("TILERAP_PATH", NULL);
  tilerap_csr_destroy(&S); tilerap_csr_destroy(&Q);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&A2); tilerap_csr_destroy(&P2);
}

/* y = H^T x (+ z, or + y in place) on the device (tilerap_csr_device_transpose_*)
 * against long-double sums, relative to the sum of the terms' magnitudes;
 * a second product bit for bit the first (no atomics); the view refuses
 * moved structure arrays and missing vectors. */
static void check_transpose_mult(const char *what, const tilerap_csr *H, uint64_t *seed)
{
  const int32_t m = H->m, n = H->n;
  dcsr D = up(H, 1, seed);
  if (!H->nnz) D.v.val = NULL; /* a matrix without entries may have no values */
  double *hx = malloc(((size_t)m + 1) * sizeof *hx), *hz = malloc(((size_t)n + 1) * sizeof *hz);
  double *hy = malloc(((size_t)n + 1) * sizeof *hy), *hy2 = malloc(((size_t)n + 1) * sizeof *hy2);
  long double *ref = calloc((size_t)n + 1, sizeof *ref), *mag = calloc((size_t)n + 1, sizeof *mag);
  for (int32_t i = 0; i < m; i++) hx[i] = ref_rand01(seed) - 0.5;
  for (int32_t j = 0; j < n; j++) hz[j] = ref_rand01(seed) - 0.5;
  for (int32_t i = 0; i < m; i++)
    for (int64_t p = H->rowptr[i]; p < H->rowptr[i + 1]; p++) {
      ref[H->colidx[p]] += (long double)H->val[p] * hx[i];
      mag[H->colidx[p]] += fabsl((long double)H->val[p] * hx[i]);
    }
  double *dx = dup_to_device(hx, (size_t)m * sizeof *hx), *dz = dup_to_device(hz, (size_t)n * sizeof *hz);
  double *dy = dup_to_device(NULL, (size_t)n * sizeof *hy);
  tilerap_csr_device_transpose T = NULL;
  int err = tilerap_csr_device_transpose_create_i32(&D.v, &T), same = 1;
  double worst = 0;
  for (int mode = 0; mode < 3 && !err; mode++) { /* y = H^T x, + z, + y */
    if (mode == 2) err = tilerap_memcpy(dy, TILERAP_MEM_DEVICE, hz, TILERAP_MEM_HOST, (size_t)n * sizeof *hz);
    if (!err) err = tilerap_csr_device_transpose_mult_i32(T, &D.v, dx, mode == 1 ? dz : mode == 2 ? dy : NULL, dy);
    if (!err) err = tilerap_memcpy(hy, TILERAP_MEM_HOST, dy, TILERAP_MEM_DEVICE, (size_t)n * sizeof *hy);
    for (int32_t j = 0; !err && j < n; j++) {
      const long double want = ref[j] + (mode ? hz[j] : 0), scale = mag[j] + (mode ? fabs(hz[j]) : 0);
      const double e = (double)(fabsl((long double)hy[j] - want) / (scale > 0 ? scale : 1));
      if (e > worst) worst = e;
    }
    if (!err && mode == 0) {
      err = tilerap_csr_device_transpose_mult_i32(T, &D.v, dx, NULL, dy);
      if (!err) err = tilerap_memcpy(hy2, TILERAP_MEM_HOST, dy, TILERAP_MEM_DEVICE, (size_t)n * sizeof *hy2);
      same = !err && !memcmp(hy, hy2, (size_t)n * sizeof *hy);
    }
  }
  tap_ok(!err && worst <= 1e-14 && same, "transpose times a vector, %s (%d x %d, %lld entries): y = A^T x, + z, + y in place within %.1e of the sums' magnitudes%s (%s)",
         what, m, n, (long long)H->nnz, worst, same ? ", again bit for bit" : ", NOT the same twice", err ? tilerap_last_error() : "ok");
  if (T && H->nnz > 0) {
    tilerap_csr_device_i32 moved = D.v;
    moved.rowptr = dup_to_device(NULL, ((size_t)m + 1) * sizeof(int32_t));
    EXPECT(tilerap_csr_device_transpose_mult_i32(T, &moved, dx, NULL, dy), TILERAP_ERR_STRUCTURE,
           "transpose times a vector with A's row pointers moved");
    tilerap_device_free((void *)moved.rowptr);
    EXPECT(tilerap_csr_device_transpose_mult_i32(T, &D.v, NULL, NULL, dy), TILERAP_ERR_NULL,
           "transpose times a vector without x");
  }
  tilerap_csr_device_transpose_destroy(&T);
  tap_ok(T == NULL, "transpose: destroy clears the handle");
  tilerap_device_free(dx); tilerap_device_free(dz); tilerap_device_free(dy);
  free(hx); free(hz); free(hy); free(hy2); free(ref); free(mag);
  down_free(&D);
}

static void check_transpose_mults(uint64_t *seed)
{
  tilerap_csr *S = NULL, *Q = NULL;
  if (!tilerap_model_irregular("mesh2d:3000", 7, &S) && !tilerap_model_sa_prolongator(S, 2.0 / 3.0, &Q))
    check_transpose_mult("mesh2d:3000's SA P", Q, seed);
  else
    tap_ok(0, "mesh2d:3000: %s", tilerap_last_error());
  tilerap_csr_destroy(&S); tilerap_csr_destroy(&Q);
  /* columns of about 4, 12, 24 and 90 entries (each lane count), empty rows, no entries, no rows */
  static const struct { int32_t m, n; double d; int empty; } r[] = {
      {301, 77, 0.012, 9}, {400, 40, 0.03, 0}, {400, 40, 0.06, 7}, {301, 1, 0.3, 0}, {40, 23, 0.0, 0}, {0, 5, 0.0, 0}};
  for (int k = 0; k < (int)(sizeof r / sizeof *r); k++) {
    tilerap_csr *H = NULL;
    if (r[k].d > 0) H = ref_random(r[k].m, r[k].n, r[k].d, r[k].empty, seed);
    else {
      if (tilerap_csr_create(r[k].m, r[k].n, 0, &H)) abort();
      for (int32_t i = 0; i <= r[k].m; i++) H->rowptr[i] = 0;
    }
    char what[64];
    snprintf(what, sizeof what, "random %d x %d, density %g", r[k].m, r[k].n, r[k].d);
    check_transpose_mult(what, H, seed);
    tilerap_csr_destroy(&H);
  }
  tilerap_csr_device_transpose T = NULL;
  EXPECT(tilerap_csr_device_transpose_create_i32(NULL, &T), TILERAP_ERR_NULL, "transpose of a NULL matrix");
  EXPECT(tilerap_csr_device_transpose_mult_i32(NULL, NULL, NULL, NULL, NULL), TILERAP_ERR_NULL, "transpose product of NULLs");
}

static void check_misuse(uint64_t *seed)
{
  tilerap_csr *A = ref_random(40, 40, 0.1, 7, seed), *P = ref_random(40, 9, 0.2, 5, seed), *Q = ref_random(30, 9, 0.2, 0, seed);
  dcsr dA = up(A, 0, seed), dP = up(P, 0, seed), dQ = up(Q, 0, seed);
  tilerap_csr_device_product X = NULL;
  int64_t cnnz = 0;
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &dA.v, &dQ.v, 0, &X, &cnnz), TILERAP_ERR_SIZE,
         "P^T A P with P of other rows");
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &dP.v, &dP.v, 0, &X, &cnnz), TILERAP_ERR_SIZE,
         "P^T A P with a rectangular A");
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &dA.v, &dQ.v, 0, &X, &cnnz), TILERAP_ERR_SIZE,
         "A*B with inner sizes 40 and 30");
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_ATB, &dA.v, &dQ.v, 0, &X, &cnnz), TILERAP_ERR_SIZE,
         "A^T*B with rows 40 and 30");
  EXPECT(tilerap_csr_device_product_create_i32((tilerap_csr_kind)7, &dA.v, &dP.v, 0, &X, &cnnz), TILERAP_ERR_INVALID,
         "unknown kind");
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, NULL, &dP.v, 0, &X, &cnnz), TILERAP_ERR_NULL, "A NULL");
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &dA.v, &dP.v, 0, NULL, &cnnz), TILERAP_ERR_NULL,
         "no product to return");
  tap_ok(X == NULL, "no product after failed creates");
  /* corrupt copies of A's structure on the device */
  int32_t *rp = malloc(41 * sizeof *rp);
  for (int i = 0; i <= 40; i++) rp[i] = (int32_t)A->rowptr[i];
  tilerap_csr_device_i32 bad = dA.v;
  rp[0] = 1;
  int32_t *drp = dup_to_device(rp, 41 * sizeof *rp);
  bad.rowptr = drp;
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &bad, &dP.v, 0, &X, &cnnz), TILERAP_ERR_INVALID,
         "rowptr[0] = 1");
  rp[0] = 0;
  const int32_t keep = rp[20];
  rp[20] = rp[21] + 1; /* decreasing pointers at row 20 */
  tilerap_memcpy(drp, TILERAP_MEM_DEVICE, rp, TILERAP_MEM_HOST, 41 * sizeof *rp);
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &bad, &dP.v, 0, &X, &cnnz), TILERAP_ERR_INVALID,
         "row pointers that decrease");
  rp[20] = keep;
  tilerap_memcpy(drp, TILERAP_MEM_DEVICE, rp, TILERAP_MEM_HOST, 41 * sizeof *rp);
  int32_t *col = malloc((size_t)A->nnz * sizeof *col);
  memcpy(col, A->colidx, (size_t)A->nnz * sizeof *col);
  col[A->nnz / 2] = 40;
  int32_t *dcol = dup_to_device(col, (size_t)A->nnz * sizeof *col);
  bad.colidx = dcol;
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &bad, &dP.v, 0, &X, &cnnz), TILERAP_ERR_RANGE,
         "a column index equal to n");
  col[A->nnz / 2] = -1;
  tilerap_memcpy(dcol, TILERAP_MEM_DEVICE, col, TILERAP_MEM_HOST, (size_t)A->nnz * sizeof *col);
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &bad, &dP.v, 0, &X, &cnnz), TILERAP_ERR_RANGE,
         "a negative column index");
  EXPECT(tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &dA.v, &dP.v, 8u, &X, &cnnz), TILERAP_ERR_INVALID,
         "unknown create flag");
  /* a good product, then fills and runs that must refuse before writing */
  int err = tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &dA.v, &dP.v, 0, &X, &cnnz);
  tap_ok(!err && X, "A*B of good operands");
  {
    double *v = dup_to_device(NULL, (size_t)(cnnz ? cnnz : 1) * 8);
    EXPECT(tilerap_csr_device_product_numeric_i32(X, &dA.v, &dP.v, v), TILERAP_ERR_INVALID,
           "numeric run of a product made without TILERAP_CSR_REUSE");
    tilerap_device_free(v);
  }
  int32_t *crp = dup_to_device(NULL, 41 * 4), *ccol = dup_to_device(NULL, (size_t)cnnz * 4);
  double *cval = dup_to_device(NULL, (size_t)cnnz * 8);
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dQ.v, 0, crp, ccol, cval), TILERAP_ERR_STRUCTURE,
         "fill with another B");
  tilerap_csr_device_i32 moved = dA.v;
  moved.colidx = dcol;
  EXPECT(tilerap_csr_device_product_fill_i32(X, &moved, &dP.v, 0, crp, ccol, cval), TILERAP_ERR_STRUCTURE,
         "fill with A's columns in other arrays");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, TILERAP_CSR_DIAG_FIRST, crp, ccol, cval), TILERAP_ERR_SIZE,
         "diagonal first of a 40 x 9 C");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, 4u, crp, ccol, cval), TILERAP_ERR_INVALID, "unknown flag");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, 0, crp, NULL, cval),
         cnnz > 0 ? TILERAP_ERR_NULL : TILERAP_SUCCESS, "C's columns NULL");
  EXPECT(tilerap_csr_device_product_transpose_i32(X, crp, ccol, cval), TILERAP_ERR_INVALID, "transpose of A*B");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, 0, crp, ccol, cval), TILERAP_SUCCESS,
         "the fill after the refusals");
  tilerap_csr_device_product_destroy(&X);
  tilerap_csr_device_product_destroy(&X); /* twice: a no-op */
  tilerap_device_free(crp); tilerap_device_free(ccol); tilerap_device_free(cval);
  err = tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &dA.v, &dP.v, TILERAP_CSR_REUSE, &X, &cnnz);
  crp = dup_to_device(NULL, 10 * 4), ccol = dup_to_device(NULL, (size_t)(cnnz ? cnnz : 1) * 4);
  cval = dup_to_device(NULL, (size_t)(cnnz ? cnnz : 1) * 8);
  EXPECT(tilerap_csr_device_product_numeric_i32(X, &dA.v, &dP.v, cval), TILERAP_ERR_INVALID, "numeric run before the fill");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, 0, crp, ccol, cval), TILERAP_SUCCESS, "P^T A P fill");
  EXPECT(tilerap_csr_device_product_numeric_i32(X, &dA.v, &dQ.v, cval), TILERAP_ERR_STRUCTURE, "numeric run with another P");
  EXPECT(tilerap_csr_device_product_numeric_i32(X, &dA.v, &dP.v, NULL), cnnz ? TILERAP_ERR_NULL : TILERAP_SUCCESS,
         "numeric run without C's values");
  EXPECT(tilerap_csr_device_product_numeric_i32(X, &dA.v, &dP.v, cval), TILERAP_SUCCESS, "numeric run");
  tilerap_device_free(crp); tilerap_device_free(ccol); tilerap_device_free(cval);
  tilerap_csr_device_product_destroy(&X);
  /* an empty P: C's rows are empty, so no diagonal to put first */
  tilerap_csr *Pz = NULL;
  tilerap_csr_create(40, 9, 0, &Pz);
  for (int i = 0; i <= 40; i++) Pz->rowptr[i] = 0;
  dcsr dPz = up(Pz, 0, seed);
  err = tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &dA.v, &dPz.v, 0, &X, &cnnz);
  tap_ok(!err && cnnz == 0, "P^T A P of an empty P: C empty");
  crp = dup_to_device(NULL, 10 * 4);
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dPz.v, TILERAP_CSR_DIAG_FIRST, crp, NULL, NULL),
         TILERAP_ERR_STRUCTURE, "diagonal first of a C with empty rows");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dPz.v, 0, crp, NULL, NULL), TILERAP_SUCCESS,
         "the same product filled sorted after the refusal");
  tilerap_csr_device_product_destroy(&X);
  tilerap_device_free(crp);
  down_free(&dPz);
  tilerap_csr_destroy(&Pz);
  free(rp); free(col);
  tilerap_device_free(drp); tilerap_device_free(dcol);
  down_free(&dA); down_free(&dP); down_free(&dQ);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&Q);
}

int main(int argc, char **argv)
{
  gpu_skip_without_device();
  /* the split rows' products sum 10^5 terms in an order the kernels
   * choose (blocks' partial sums): against double sums in one order, the
   * reference's own error (up to 1.1e-14 on the tall-skinny P below) would
   * count as the kernels' */
  ref_long_double_sums(1);
  const int quick = argc > 1 && !strcmp(argv[1], "--quick");
  uint64_t seed = 20261127;
  if (argc > 1 && !strcmp(argv[1], "--transpose")) { /* that check alone (compute-sanitizer runs of its kernel) */
    check_transpose_mults(&seed);
    return tap_done();
  }
  const char *set[] = {"mesh2d:3000", "mesh3d:2500", "powerlaw:3000", "random:2000", "denserow:2500", "elast:1500",
                       "s125:1000", "mesh2d:20000:sfc"};
  const int nset = quick ? 4 : (int)(sizeof set / sizeof *set);
  for (int k = 0; k < nset; k++) {
    check_irregular(set[k], 0, &seed);
    check_irregular(set[k], 1, &seed);
  }
  /* rectangular, tall-skinny, empty rows and columns, shuffled rows */
  tilerap_csr *A = ref_random(301, 301, 0.03, 13, &seed), *P1 = ref_random(301, 1, 0.3, 0, &seed),
              *P3 = ref_random(301, 3, 0.2, 4, &seed), *B = ref_random(301, 77, 0.05, 9, &seed),
              *W = ref_random(45, 301, 0.08, 6, &seed);
  check(TILERAP_CSR_PTAP, A, P1, 1, 0, "random 301, one coarse column", &seed);
  check(TILERAP_CSR_PTAP, A, P3, 1, 0, "random 301, three coarse columns, empty rows", &seed);
  check(TILERAP_CSR_AB, W, B, 1, 0, "45 x 301 times 301 x 77", &seed);
  check(TILERAP_CSR_ATB, B, A, 1, 0, "(301 x 77)^T times 301 x 301", &seed);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P1); tilerap_csr_destroy(&P3); tilerap_csr_destroy(&B);
  tilerap_csr_destroy(&W);
  check_path("mesh2d:3000", &seed);
  check_path("powerlaw:3000", &seed);
  check_path("denserow:40000", &seed);
  check_split_rows(&seed);
  check_uneven_split_rows(&seed);
  check_kernel_choices(&seed);
  check_dense_tiles(&seed);
  check_misuse(&seed);
  check_refill_and_new_arrays(&seed);
  check_empty_operand(&seed);
  check_transpose_mults(&seed);
  return tap_done();
}

/* A product kept for numeric runs whose diagonal-first fill is refused (C
 * has an empty row: P an empty column), then filled sorted: its runs write
 * the sorted layout; a run on new value arrays, and the transposed operand
 * takes them. */
static void check_refill_and_new_arrays(uint64_t *seed)
{
  tilerap_csr *A = ref_random(120, 120, 0.05, 0, seed), *P0 = ref_random(120, 11, 0.15, 0, seed);
  tilerap_csr *P = drop_column(P0, 4);
  dcsr dA = up(A, 1, seed), dP = up(P, 1, seed);
  tilerap_csr_device_product X = NULL;
  int64_t cnnz = 0;
  int err = tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &dA.v, &dP.v, TILERAP_CSR_REUSE, &X, &cnnz);
  int32_t *crp = dup_to_device(NULL, 12 * 4), *ccol = dup_to_device(NULL, (size_t)(cnnz ? cnnz : 1) * 4);
  double *cval = dup_to_device(NULL, (size_t)(cnnz ? cnnz : 1) * 8);
  tap_ok(!err, "P^T A P with an empty column of P: create %s", err ? tilerap_last_error() : "");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, TILERAP_CSR_DIAG_FIRST, crp, ccol, cval),
         TILERAP_ERR_STRUCTURE, "diagonal first with an empty row of C");
  EXPECT(tilerap_csr_device_product_fill_i32(X, &dA.v, &dP.v, 0, crp, ccol, cval), TILERAP_SUCCESS,
         "the same product filled sorted");
  /* new values for both operands, in new arrays */
  tilerap_csr *A2 = ref_copy(A), *P2 = ref_copy(P);
  new_values_host(A2);
  new_values_host(P2);
  dcsr nA = dA, nP = dP;
  nA.val = dup_to_device(NULL, (size_t)(A->nnz ? A->nnz : 1) * 8);
  nP.val = dup_to_device(NULL, (size_t)(P->nnz ? P->nnz : 1) * 8);
  if (A->nnz) tilerap_memcpy(nA.val, TILERAP_MEM_DEVICE, dA.val, TILERAP_MEM_DEVICE, (size_t)A->nnz * 8);
  if (P->nnz) tilerap_memcpy(nP.val, TILERAP_MEM_DEVICE, dP.val, TILERAP_MEM_DEVICE, (size_t)P->nnz * 8);
  new_values_device(&nA);
  new_values_device(&nP);
  nA.v.val = nA.val; nP.v.val = nP.val;
  tilerap_csr *R2 = ref_product(TILERAP_CSR_PTAP, A2, P2);
  for (int run = 0; run < 2; run++) {
    poison(cval, cnnz);
    err = tilerap_csr_device_product_numeric_i32(X, &nA.v, &nP.v, cval);
    tilerap_csr *N = down(11, 11, crp, ccol, cval);
    const int sorted = sorted_layout(N);
    const double r = !err && ref_same_structure(N, R2) ? ref_relerr(N, R2) : INFINITY;
    tap_ok(sorted && r <= 1e-14, "numeric run %d after the sorted refill, new value arrays: sorted rows, relerr %.2e %s",
           run + 1, r, err ? tilerap_last_error() : "");
    tilerap_csr_destroy(&N);
  }
  tilerap_csr_device_i32 novals = nP.v;
  novals.val = NULL;
  EXPECT(tilerap_csr_device_product_numeric_i32(X, &nA.v, &novals, cval), P->nnz ? TILERAP_ERR_NULL : TILERAP_SUCCESS,
         "numeric run with an operand without values");
  int32_t *trp = dup_to_device(NULL, 12 * 4), *tcol = dup_to_device(NULL, (size_t)(P->nnz ? P->nnz : 1) * 4);
  double *tval = dup_to_device(NULL, (size_t)(P->nnz ? P->nnz : 1) * 8);
  err = tilerap_csr_device_product_transpose_i32(X, trp, tcol, tval);
  tilerap_csr *T = down(11, 120, trp, tcol, tval), *Pt = ref_transpose(P2);
  tap_ok(!err && ref_same_structure(T, Pt) && (!Pt->nnz || !memcmp(T->val, Pt->val, (size_t)Pt->nnz * 8)),
         "the transposed operand after a run on new arrays carries their values");
  tilerap_csr_destroy(&T); tilerap_csr_destroy(&Pt); tilerap_csr_destroy(&R2);
  tilerap_csr_destroy(&A2); tilerap_csr_destroy(&P2);
  tilerap_device_free(trp); tilerap_device_free(tcol); tilerap_device_free(tval);
  tilerap_device_free(nA.val); tilerap_device_free(nP.val);
  tilerap_device_free(crp); tilerap_device_free(ccol); tilerap_device_free(cval);
  tilerap_csr_device_product_destroy(&X);
  down_free(&dA); down_free(&dP);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&P0);
}
