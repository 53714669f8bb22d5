/* CSR <-> tile conversions, values refresh and tile transpose against the
 * plain CSR reference, on shapes that stress tile boundaries. */
#include "ref_gustavson.h"
#include "tilerap_csr_layouts.h"
#include "tap.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* internal (src/kernels/host_copy.c): the parallel memcpy behind the
 * pinned staging of host<->device copies; CPU code, so tested here */
void tr_host_copy(void *dst, const void *src, size_t bytes);

/* Every byte copied, none beyond: sizes around the piece boundaries (1 MB
 * pieces, 4 KB-rounded shares), odd sizes, several team sizes. */
static void check_host_copy(void)
{
  const size_t MB = (size_t)1 << 20;
  const size_t sizes[] = {0, 1, 4095, 2 * MB - 1, 2 * MB, 2 * MB + 1, 3 * MB + 2, 4 * MB + 3, 10 * MB + 1, 16 * MB + 4097};
  const size_t maxb = 16 * MB + 4097;
  unsigned char *src = malloc(maxb), *dst = malloc(maxb + 64);
  if (!tap_ok(src && dst, "host copy: buffers")) { free(src); free(dst); return; }
  for (size_t k = 0; k < maxb; k++) src[k] = (unsigned char)(k * 2654435761u >> 13);
  const int teams[] = {0, 1, 3, 8};
#ifdef _OPENMP
  const int saved = omp_get_max_threads();
#endif
  for (size_t t = 0; t < sizeof teams / sizeof teams[0]; t++) {
#ifdef _OPENMP
    omp_set_num_threads(teams[t] ? teams[t] : saved);
#else
    if (teams[t] > 1) continue;
#endif
    int ok = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      memset(dst, 0xa5, sizes[i] + 64);
      tr_host_copy(dst, src, sizes[i]);
      if (memcmp(dst, src, sizes[i])) ok = 0;
      for (size_t g = 0; g < 64; g++) ok &= dst[sizes[i] + g] == 0xa5;
    }
    char who[32];
    if (teams[t]) snprintf(who, sizeof who, "%d threads", teams[t]);
    else snprintf(who, sizeof who, "default threads");
    tap_ok(ok, "host copy, %s: every size from 0 to 16 MB + 4097 bytes copied exactly, nothing past the end", who);
  }
#ifdef _OPENMP
  omp_set_num_threads(saved);
#endif
  free(src);
  free(dst);
}

static void check_roundtrip(const tilerap_csr *A, const char *what)
{
  tilerap_tile_matrix *T = NULL;
  int err = tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &T);
  if (!tap_ok(err == 0, "%s: csr->tile (%s)", what, err ? tilerap_last_error() : "ok")) return;
  tap_ok(tilerap_tile_check(T) == 0, "%s: tile matrix consistent %s", what, tilerap_last_error());
  tap_ok(T->nnz == A->nnz && T->m == A->m && T->n == A->n, "%s: sizes kept", what);
  tilerap_csr *B = ref_tile_to_csr(T);
  tap_ok(ref_same_structure(A, B) && ref_relerr(B, A) == 0.0, "%s: tile->csr reproduces the matrix exactly", what);

  /* 32-bit row pointer variants */
  int32_t *rp32 = malloc(((size_t)A->m + 1) * sizeof *rp32);
  for (int32_t i = 0; i <= A->m; i++) rp32[i] = (int32_t)A->rowptr[i];
  tilerap_tile_matrix *T32 = NULL;
  err = tilerap_tile_from_csr_i32(A->m, A->n, rp32, A->colidx, A->val, &T32);
  int same = !err && T32->num_tiles == T->num_tiles &&
             !memcmp(T32->row_mask, T->row_mask, 16 * (size_t)T->num_tiles * sizeof(uint16_t)) &&
             !memcmp(T32->tile_col, T->tile_col, (size_t)T->num_tiles * sizeof(int32_t)) &&
             !memcmp(T32->val, T->val, (size_t)T->nnz * sizeof(double));
  tap_ok(same, "%s: int32 row pointers give the same tiles", what);
  int32_t *rp_out = malloc(((size_t)A->m + 1) * sizeof *rp_out);
  int32_t *col_out = malloc(((size_t)A->nnz + 1) * sizeof *col_out);
  err = tilerap_tile_to_csr_i32(T, rp_out, col_out, NULL);
  tap_ok(!err && !memcmp(rp_out, rp32, ((size_t)A->m + 1) * sizeof *rp32) &&
             (A->nnz == 0 || !memcmp(col_out, A->colidx, (size_t)A->nnz * sizeof *col_out)),
         "%s: tile->csr with int32 row pointers", what);

  /* values-only refresh with new values */
  uint64_t seed = 99;
  tilerap_csr *A2 = ref_copy(A);
  ref_randomize_values(A2, &seed);
  err = tilerap_tile_update_values_from_csr(T, A2->rowptr, A2->val);
  tilerap_csr *B2 = ref_tile_to_csr(T);
  tap_ok(!err && ref_same_structure(A2, B2) && ref_relerr(B2, A2) == 0.0, "%s: values refresh", what);
  err = tilerap_tile_update_values_from_csr_i32(T32, rp32, A2->val);
  tilerap_csr *B3 = ref_tile_to_csr(T32);
  tap_ok(!err && ref_relerr(B3, A2) == 0.0, "%s: values refresh (int32)", what);

  /* transpose in tile form with value permutation */
  tilerap_tile_matrix *Tt = NULL;
  int64_t *perm = NULL;
  err = tilerap_tile_transpose(T, &Tt, &perm);
  if (tap_ok(!err, "%s: tile transpose", what)) {
    tap_ok(tilerap_tile_check(Tt) == 0, "%s: transpose consistent %s", what, tilerap_last_error());
    tilerap_csr *R = ref_transpose(A2), *Ct = ref_tile_to_csr(Tt);
    tap_ok(ref_same_structure(R, Ct) && ref_relerr(Ct, R) == 0.0, "%s: transpose equals reference", what);
    int perm_ok = 1;
    for (int64_t q = 0; q < Tt->nnz; q++) perm_ok &= Tt->val[q] == T->val[perm[q]];
    tap_ok(perm_ok, "%s: transpose permutation maps values", what);
    tilerap_csr_destroy(&R); tilerap_csr_destroy(&Ct);
  }
  free(perm);
  tilerap_tile_destroy(&Tt);
  free(rp32); free(rp_out); free(col_out);
  tilerap_csr_destroy(&B); tilerap_csr_destroy(&A2); tilerap_csr_destroy(&B2); tilerap_csr_destroy(&B3);
  tilerap_tile_destroy(&T); tilerap_tile_destroy(&T32);
}

/* Host CSR fingerprints (the hypre hook's proof that a matrix it handed
 * out came back unchanged): what changes them and what does not. */
static void check_fingerprint(uint64_t *seed)
{
  tilerap_csr *A = ref_random(300, 200, 0.05, 7, seed);
  const int32_t m = A->m;
  const int64_t nz = A->nnz;
  int32_t *rp = malloc(((size_t)m + 1) * sizeof *rp), *col = malloc(((size_t)nz + 1) * sizeof *col);
  double *val = malloc(((size_t)nz + 1) * sizeof *val);
  for (int32_t i = 0; i <= m; i++) rp[i] = (int32_t)A->rowptr[i];
  memcpy(col, A->colidx, (size_t)nz * sizeof *col);
  memcpy(val, A->val, (size_t)nz * sizeof *val);
  uint64_t f0 = 0, o0 = 0, f = 0, o = 0;
  int err = tilerap_csr_fingerprint_i32(m, rp, col, val, 0, TILERAP_MEM_HOST, &f0) |
            tilerap_csr_fingerprint_i32(m, rp, col, val, 1, TILERAP_MEM_HOST, &o0);
  tap_ok(!err && f0 != o0, "fingerprint: order-free and ordered of a 300 x 200 matrix (%016llx, %016llx)",
         (unsigned long long)f0, (unsigned long long)o0);
  /* two entries of a row swapped: the order-free one stays */
  int32_t r = 0;
  while (r < m && rp[r + 1] - rp[r] < 2) r++;
  int32_t a = rp[r], b = rp[r] + 1;
  int32_t tc = col[a]; col[a] = col[b]; col[b] = tc;
  double tv = val[a]; val[a] = val[b]; val[b] = tv;
  tilerap_csr_fingerprint_i32(m, rp, col, val, 0, TILERAP_MEM_HOST, &f);
  tilerap_csr_fingerprint_i32(m, rp, col, val, 1, TILERAP_MEM_HOST, &o);
  tap_ok(r < m && f == f0 && o != o0, "fingerprint: two entries of row %d swapped: order-free same, ordered differs", r);
  tc = col[a]; col[a] = col[b]; col[b] = tc;
  tv = val[a]; val[a] = val[b]; val[b] = tv;
  /* a value one ulp off, a column moved, an entry moved to the next row */
  val[nz / 2] = nextafter(val[nz / 2], 10.0);
  tilerap_csr_fingerprint_i32(m, rp, col, val, 0, TILERAP_MEM_HOST, &f);
  tap_ok(f != f0, "fingerprint: one value one ulp off changes it");
  val[nz / 2] = A->val[nz / 2];
  int32_t k = rp[r + 1] - 1;
  col[k] = (col[k] + 1) % A->n;
  tilerap_csr_fingerprint_i32(m, rp, col, val, 0, TILERAP_MEM_HOST, &f);
  tap_ok(f != f0, "fingerprint: one column index changed changes it");
  col[k] = A->colidx[k];
  rp[r + 1]--; /* the last entry of row r becomes the first of row r+1 */
  tilerap_csr_fingerprint_i32(m, rp, col, val, 0, TILERAP_MEM_HOST, &f);
  tap_ok(f != f0, "fingerprint: an entry moved to the next row changes it");
  rp[r + 1]++;
  tilerap_csr_fingerprint_i32(m, rp, col, val, 0, TILERAP_MEM_HOST, &f);
  tap_ok(f == f0, "fingerprint: restored matrix gives the first one again");
  tilerap_csr_fingerprint_i32(m, rp, col, NULL, 0, TILERAP_MEM_HOST, &f);
  tap_ok(f != f0, "fingerprint: structure only differs from with values");
  /* bad input */
  int32_t bad[4] = {0, 3, 1, 4}, one[2] = {1, 1};
  uint64_t x = 0;
  tap_ok(tilerap_csr_fingerprint_i32(3, bad, col, NULL, 0, TILERAP_MEM_HOST, &x) == TILERAP_ERR_INVALID,
         "fingerprint: decreasing row pointers refused");
  tap_ok(tilerap_csr_fingerprint_i32(1, one, col, NULL, 0, TILERAP_MEM_HOST, &x) == TILERAP_ERR_INVALID,
         "fingerprint: row pointers not starting at 0 refused");
  tap_ok(tilerap_csr_fingerprint_i32(m, rp, NULL, NULL, 0, TILERAP_MEM_HOST, &x) == TILERAP_ERR_NULL &&
             tilerap_csr_fingerprint_i32(m, NULL, col, NULL, 0, TILERAP_MEM_HOST, &x) == TILERAP_ERR_NULL &&
             tilerap_csr_fingerprint_i32(m, rp, col, NULL, 0, TILERAP_MEM_HOST, NULL) == TILERAP_ERR_NULL &&
             tilerap_csr_fingerprint_i32(-1, rp, col, NULL, 0, TILERAP_MEM_HOST, &x) == TILERAP_ERR_SIZE &&
             tilerap_csr_fingerprint_i32(m, rp, col, NULL, 0, (tilerap_memtype)5, &x) == TILERAP_ERR_INVALID,
         "fingerprint: NULL arguments, negative size, unknown memory type refused");
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
    void *p = NULL;
    tap_ok(tilerap_csr_fingerprint_i32(m, rp, col, NULL, 0, TILERAP_MEM_DEVICE, &x) == TILERAP_ERR_ENGINE &&
               tilerap_device_malloc(8, &p) == TILERAP_ERR_ENGINE && p == NULL &&
               tilerap_memcpy(&x, TILERAP_MEM_DEVICE, &f, TILERAP_MEM_HOST, 8) == TILERAP_ERR_ENGINE,
           "without a GPU: device fingerprint, buffers and copies report TILERAP_ERR_ENGINE");
  }
  tap_ok(tilerap_memcpy(&x, TILERAP_MEM_HOST, &f0, TILERAP_MEM_HOST, sizeof x) == 0 && x == f0,
         "tilerap_memcpy host to host");
  free(rp); free(col); free(val);
  tilerap_csr_destroy(&A);
}

int main(void)
{
  uint64_t seed = 12345;
  check_fingerprint(&seed);
  struct { int32_t m, n; double d; int empty; const char *name; } cases[] = {
      {0, 0, 0.0, 0, "0x0"},         {1, 1, 1.0, 0, "1x1 full"},      {1, 1, 0.0, 0, "1x1 empty"},
      {17, 33, 0.2, 0, "17x33"},     {33, 17, 0.2, 3, "33x17 empty rows"}, {40, 40, 0.0, 0, "all-empty 40x40"},
      {64, 48, 1.0, 0, "dense 64x48"}, {100, 3, 0.5, 0, "tall 100x3"}, {3, 100, 0.5, 0, "wide 3x100"},
      {257, 129, 0.01, 5, "sparse 257x129"}, {16, 16, 1.0, 0, "one full tile"}, {500, 700, 0.003, 7, "500x700"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    tilerap_csr *A = ref_random(cases[c].m, cases[c].n, cases[c].d, cases[c].empty, &seed);
    check_roundtrip(A, cases[c].name);
    tilerap_csr_destroy(&A);
  }
  /* single-entry tiles: a diagonal with stride 16 puts one entry per tile */
  {
    tilerap_csr *A = NULL;
    tilerap_csr_create(160, 160, 10, &A);
    for (int32_t i = 0; i < 160; i++) A->rowptr[i + 1] = A->rowptr[i] + (i % 17 == 0 && i / 17 < 10 ? 1 : 0);
    int64_t q = 0;
    for (int32_t i = 0; i < 160; i++)
      if (i % 17 == 0 && i / 17 < 10) { A->colidx[q] = i; A->val[q] = 1.0 + i; q++; }
    A->nnz = q;
    check_roundtrip(A, "single-entry tiles");
    tilerap_tile_matrix *T = ref_csr_to_tile(A);
    tap_ok(T->num_tiles == A->nnz, "single-entry tiles: one tile per entry (%lld tiles)", (long long)T->num_tiles);
    tilerap_tile_destroy(&T);
    tilerap_csr_destroy(&A);
  }
  /* model problem */
  {
    tilerap_csr *A = NULL;
    int32_t dims[3];
    int nd;
    tilerap_model_poisson(TILERAP_P3D7, 11, &A, dims, &nd);
    check_roundtrip(A, "p3d7 11^3");
    tilerap_csr_destroy(&A);
  }
  check_host_copy();
  return tap_done();
}
