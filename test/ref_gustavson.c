/* Plain CSR references for the tests (no tile code). */
#include "ref_gustavson.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);
  if (!p) { fprintf(stderr, "ref: out of memory (%zu bytes)\n", n); abort(); }
  return p;
}

static tilerap_csr *ref_alloc(int32_t m, int32_t n, int64_t nnz)
{
  tilerap_csr *C = NULL;
  if (tilerap_csr_create(m, n, nnz, &C)) { fprintf(stderr, "ref: %s\n", tilerap_last_error()); abort(); }
  return C;
}

static int ref_ld_sums;
void ref_long_double_sums(int on) { ref_ld_sums = on; }

tilerap_csr *ref_spgemm(const tilerap_csr *A, const tilerap_csr *B)
{
  if (A->n != B->m) { fprintf(stderr, "ref_spgemm: size mismatch\n"); abort(); }
  int32_t m = A->m, n = B->n;
  int64_t *marker = xmalloc(((size_t)n + 1) * sizeof *marker);
  for (int32_t j = 0; j < n; j++) marker[j] = -1;
  int64_t *rowptr = xmalloc(((size_t)m + 1) * sizeof *rowptr);
  rowptr[0] = 0;
  for (int32_t i = 0; i < m; i++) { /* symbolic */
    int64_t cnt = 0;
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int32_t k = A->colidx[p];
      for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++)
        if (marker[B->colidx[q]] != i) { marker[B->colidx[q]] = i; cnt++; }
    }
    rowptr[i + 1] = rowptr[i] + cnt;
  }
  tilerap_csr *C = ref_alloc(m, n, rowptr[m]);
  memcpy(C->rowptr, rowptr, ((size_t)m + 1) * sizeof *rowptr);
  free(rowptr);
  for (int32_t j = 0; j < n; j++) marker[j] = -1;
  /* numeric, columns sorted afterwards; the sums in double, or in long
   * double rounded once (ref_long_double_sums) */
#define REF_NUMERIC(T)                                                                          \
  do {                                                                                          \
    T *acc = xmalloc(((size_t)n + 1) * sizeof *acc);                                            \
    for (int32_t i = 0; i < m; i++) {                                                           \
      int64_t q0 = C->rowptr[i], cnt = 0;                                                       \
      for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {                               \
        const int32_t k = A->colidx[p];                                                         \
        const T a = A->val[p];                                                                  \
        for (int64_t q = B->rowptr[k]; q < B->rowptr[k + 1]; q++) {                             \
          const int32_t j = B->colidx[q];                                                       \
          if (marker[j] != i) { marker[j] = i; acc[j] = 0; C->colidx[q0 + cnt++] = j; }        \
          acc[j] += a * B->val[q];                                                              \
        }                                                                                       \
      }                                                                                         \
      int32_t *c = C->colidx + q0;                                                              \
      ref_sort_columns(c, NULL, cnt);                                                           \
      for (int64_t x = 0; x < cnt; x++) C->val[q0 + x] = (double)acc[c[x]];                     \
    }                                                                                           \
    free(acc);                                                                                  \
  } while (0)
  if (ref_ld_sums) REF_NUMERIC(long double);
  else REF_NUMERIC(double);
#undef REF_NUMERIC
  free(marker);
  return C;
}

void ref_sort_columns(int32_t *col, double *val, int64_t n)
{ /* insertion sort: rows are short */
  for (int64_t x = 1; x < n; x++) {
    const int32_t v = col[x];
    const double w = val ? val[x] : 0.0;
    int64_t y = x - 1;
    for (; y >= 0 && col[y] > v; y--) {
      col[y + 1] = col[y];
      if (val) val[y + 1] = val[y];
    }
    col[y + 1] = v;
    if (val) val[y + 1] = w;
  }
}

tilerap_csr *ref_transpose(const tilerap_csr *A)
{
  tilerap_csr *T = ref_alloc(A->n, A->m, A->nnz);
  for (int64_t p = 0; p < A->nnz; p++) T->rowptr[A->colidx[p] + 1]++;
  for (int32_t j = 0; j < A->n; j++) T->rowptr[j + 1] += T->rowptr[j];
  int64_t *next = xmalloc(((size_t)A->n + 1) * sizeof *next);
  memcpy(next, T->rowptr, ((size_t)A->n + 1) * sizeof *next);
  for (int32_t i = 0; i < A->m; i++)
    for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++) {
      int64_t q = next[A->colidx[p]]++;
      T->colidx[q] = i;
      T->val[q] = A->val[p];
    }
  free(next);
  return T;
}

tilerap_csr *ref_ptap(const tilerap_csr *A, const tilerap_csr *P)
{
  tilerap_csr *AP = ref_spgemm(A, P), *Pt = ref_transpose(P);
  tilerap_csr *C = ref_spgemm(Pt, AP);
  tilerap_csr_destroy(&AP);
  tilerap_csr_destroy(&Pt);
  return C;
}

void ref_scale_wide(tilerap_csr *A, int E, uint64_t seed)
{
  int *d = xmalloc(((size_t)A->m + 1) * sizeof *d);
  for (int32_t i = 0; i < A->m; i++) d[i] = (int)(ref_rand01(&seed) * (2 * E + 1)) - E;
  for (int32_t i = 0; i < A->m; i++)
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) A->val[q] = ldexp(A->val[q], d[i] + d[A->colidx[q]]);
  free(d);
}

double ref_rand01(uint64_t *s)
{ /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0;
}

tilerap_csr *ref_random(int32_t m, int32_t n, double density, int empty_rows_every, uint64_t *seed)
{
  int64_t cap = 0;
  int64_t *rowptr = xmalloc(((size_t)m + 1) * sizeof *rowptr);
  int32_t *cols = NULL;
  int64_t nnz = 0;
  rowptr[0] = 0;
  for (int32_t i = 0; i < m; i++) {
    int skip = empty_rows_every > 0 && (i % empty_rows_every) == 0;
    for (int32_t j = 0; j < n && !skip; j++)
      if (ref_rand01(seed) < density) {
        if (nnz == cap) { cap = cap ? 2 * cap : 1024; cols = realloc(cols, (size_t)cap * sizeof *cols); if (!cols) abort(); }
        cols[nnz++] = j;
      }
    rowptr[i + 1] = nnz;
  }
  tilerap_csr *A = ref_alloc(m, n, nnz);
  memcpy(A->rowptr, rowptr, ((size_t)m + 1) * sizeof *rowptr);
  if (nnz) memcpy(A->colidx, cols, (size_t)nnz * sizeof *cols);
  for (int64_t p = 0; p < nnz; p++) A->val[p] = 2.0 * ref_rand01(seed) - 1.0;
  free(cols); free(rowptr);
  return A;
}

tilerap_csr *ref_dense(int32_t m, int32_t n, uint64_t *seed) { return ref_random(m, n, 1.0, 0, seed); }

void ref_randomize_values(tilerap_csr *A, uint64_t *seed)
{
  for (int64_t p = 0; p < A->nnz; p++) A->val[p] = 2.0 * ref_rand01(seed) - 1.0;
}

int ref_same_structure(const tilerap_csr *X, const tilerap_csr *Y)
{
  if (X->m != Y->m || X->n != Y->n || X->nnz != Y->nnz) return 0;
  if (memcmp(X->rowptr, Y->rowptr, ((size_t)X->m + 1) * sizeof *X->rowptr)) return 0;
  return X->nnz == 0 || !memcmp(X->colidx, Y->colidx, (size_t)X->nnz * sizeof *X->colidx);
}

double ref_relerr(const tilerap_csr *X, const tilerap_csr *Y)
{
  double num = 0.0, den = 0.0;
  for (int64_t p = 0; p < Y->nnz; p++) {
    double d = X->val[p] - Y->val[p];
    if (d != d) return INFINITY; /* NaN in X */
    num += d * d;
    den += Y->val[p] * Y->val[p];
  }
  if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
  return sqrt(num / den);
}

tilerap_csr *ref_copy(const tilerap_csr *A)
{
  tilerap_csr *C = ref_alloc(A->m, A->n, A->nnz);
  memcpy(C->rowptr, A->rowptr, ((size_t)A->m + 1) * sizeof *A->rowptr);
  memcpy(C->colidx, A->colidx, (size_t)A->nnz * sizeof *A->colidx);
  memcpy(C->val, A->val, (size_t)A->nnz * sizeof *A->val);
  return C;
}

tilerap_csr *ref_tile_to_csr(const tilerap_tile_matrix *T)
{
  tilerap_csr *A = NULL;
  if (tilerap_tile_to_csr_alloc(T, &A)) { fprintf(stderr, "tile->csr: %s\n", tilerap_last_error()); abort(); }
  return A;
}

tilerap_tile_matrix *ref_csr_to_tile(const tilerap_csr *A)
{
  tilerap_tile_matrix *T = NULL;
  if (tilerap_tile_from_csr(A->m, A->n, A->rowptr, A->colidx, A->val, &T)) {
    fprintf(stderr, "csr->tile: %s\n", tilerap_last_error());
    abort();
  }
  return T;
}

double ref_wtime(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ref_same_tiles(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y)
{
  if (X->m != Y->m || X->n != Y->n || X->num_tiles != Y->num_tiles || X->nnz != Y->nnz) return 0;
  const size_t nt = (size_t)X->num_tiles, nz = (size_t)X->nnz;
  return !memcmp(X->tile_ptr, Y->tile_ptr, ((size_t)X->tile_rows + 1) * sizeof *X->tile_ptr) &&
         (!nt || (!memcmp(X->tile_col, Y->tile_col, nt * sizeof *X->tile_col) &&
                  !memcmp(X->tile_off, Y->tile_off, (nt + 1) * sizeof *X->tile_off) &&
                  !memcmp(X->row_ptr, Y->row_ptr, 16 * nt) && !memcmp(X->row_mask, Y->row_mask, 16 * nt * sizeof *X->row_mask))) &&
         (!nz || (!memcmp(X->idx, Y->idx, nz) && !memcmp(X->val, Y->val, nz * sizeof *X->val)));
}

tilerap_csr *ref_product(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B)
{
  if (kind == TILERAP_CSR_AB) return ref_spgemm(A, B);
  if (kind == TILERAP_CSR_PTAP) return ref_ptap(A, B);
  tilerap_csr *At = ref_transpose(A), *R = ref_spgemm(At, B);
  tilerap_csr_destroy(&At);
  return R;
}
