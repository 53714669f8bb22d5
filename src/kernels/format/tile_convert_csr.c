/* Conversions between CSR and the tile format, and values-only refreshes.
 * Row pointers come as int64 or int32 (PETSc/hypre with 32-bit ints);
 * one implementation reads both through tr_rowptr. */
#include "tile_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
  const int64_t *p64;
  const int32_t *p32;
} tr_rowptr;
static inline int64_t rp_at(tr_rowptr rp, int64_t i) { return rp.p64 ? rp.p64[i] : (int64_t)rp.p32[i]; }

/* Entry p's term of a structure hash: a multiply-xorshift of its position
 * and column, a bijection of the two, so that a sum of terms changes with
 * any one changed entry and with several but for a chance of about 2^-64. */
static inline uint64_t tr_entry_mix(int64_t p, int32_t c)
{
  const uint64_t x = (((uint64_t)p << 32) ^ (uint32_t)c) * 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}

/* The CSR checks of every entry point (row pointers from 0 and
 * non-decreasing, each row's columns strictly ascending within 0..n-1; the
 * first bad row named). */
static int tr_check_csr_generic(int32_t m, int32_t n, tr_rowptr rp, const int32_t *colidx)
{
  if (m < 0 || n < 0) return tilerap_set_error(TILERAP_ERR_SIZE, "CSR with negative size %d x %d", m, n);
  if (!rp.p64 && !rp.p32) return tilerap_set_error(TILERAP_ERR_NULL, "CSR row pointers are NULL");
  if (rp_at(rp, 0) != 0) return tilerap_set_error(TILERAP_ERR_INVALID, "CSR rowptr[0] = %lld, expected 0", (long long)rp_at(rp, 0));
  if (rp_at(rp, m) > 0 && !colidx) return tilerap_set_error(TILERAP_ERR_NULL, "CSR column indices are NULL");
  int32_t bad_rp = m; /* row pointers first: entries are only meaningful if they are monotone */
#pragma omp parallel for schedule(static) reduction(min : bad_rp) if (m > 16 * TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i < m; i++)
    if (rp_at(rp, i + 1) < rp_at(rp, i) && i < bad_rp) bad_rp = i;
  if (bad_rp < m) return tilerap_set_error(TILERAP_ERR_INVALID, "CSR row pointers decrease at row %d", bad_rp);
  int err = TILERAP_SUCCESS;
#pragma omp parallel for schedule(static) reduction(max : err) if (m > 16 * TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i < m; i++) {
    const int64_t b = rp_at(rp, i), e = rp_at(rp, i + 1);
    if (e <= b) continue;
    /* no branch per entry: the compares vectorise (the first product's
     * checks took an eighth of it on one core) */
    unsigned out = (uint32_t)colidx[b] >= (uint32_t)n, down = 0;
#pragma omp simd reduction(| : out, down)
    for (int64_t p = b + 1; p < e; p++) {
      out |= (uint32_t)colidx[p] >= (uint32_t)n;
      down |= colidx[p] <= colidx[p - 1];
    }
    if (out) err = err > TILERAP_ERR_RANGE ? err : TILERAP_ERR_RANGE;
    if (down) err = err > TILERAP_ERR_UNSORTED ? err : TILERAP_ERR_UNSORTED;
  }
  if (err) {
    /* locate the first offending row for the message (rare path) */
    for (int32_t i = 0; i < m; i++) {
      int64_t b = rp_at(rp, i), e = rp_at(rp, i + 1);
      for (int64_t p = b; p < e; p++) {
        if (colidx[p] < 0 || colidx[p] >= n)
          return tilerap_set_error(TILERAP_ERR_RANGE, "CSR column index %d out of range [0,%d) in row %d", colidx[p], n, i);
        if (p > b && colidx[p] <= colidx[p - 1])
          return tilerap_set_error(TILERAP_ERR_UNSORTED, "CSR row %d: column indices not strictly increasing (%d after %d)", i, colidx[p], colidx[p - 1]);
      }
    }
  }
  return err;
}

/* the row pointers' part of tr_csr_hash */
static uint64_t tr_rowptr_hash(int32_t m, const int64_t *rowptr)
{
  uint64_t h = 0;
#pragma omp parallel for schedule(static) reduction(+ : h) if (m > 16 * TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i <= m; i++) {
    const uint64_t x = ((uint64_t)rowptr[i] ^ ((uint64_t)i << 40)) * 0xbf58476d1ce4e5b9ull;
    h += x ^ (x >> 31);
  }
  return h * 0x94d049bb133111ebull;
}

/* A hash of a CSR structure, position by position (flat passes, no branch,
 * no row loop): what a CSR plan keeps of its checked operands and compares
 * at every numeric run.  Checks and an order-free hash in one pass took a
 * third of a one-core CPU re-run (elasticity, 125-point stencil); this, half. */
uint64_t tr_csr_hash(int32_t m, const int64_t *rowptr, const int32_t *colidx)
{
  const int64_t nnz = rowptr[m];
  uint64_t h = 0;
#pragma omp parallel for schedule(static) reduction(+ : h) if (nnz > 64 * TR_OMP_MIN_ITEMS)
  for (int64_t p = 0; p < nnz; p++) h += tr_entry_mix(p, colidx[p]);
  return h + tr_rowptr_hash(m, rowptr);
}

int tilerap_csr_check(int32_t m, int32_t n, const int64_t *rowptr, const int32_t *colidx)
{
  tr_rowptr rp = {rowptr, NULL};
  if (!rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "CSR row pointers are NULL");
  return tr_check_csr_generic(m, n, rp, colidx);
}

typedef struct { tr_rowptr rp; const int32_t *colidx; int32_t m; } tr_csr_rows;

/* distinct tile columns of tile row I */
static int tr_count_tile_cols(int32_t I, int32_t *mark, int64_t *count, void *ctx)
{
  const tr_csr_rows *c = ctx;
  const int32_t r1 = (int32_t)(16 * (int64_t)I + 16 < c->m ? 16 * (int64_t)I + 16 : c->m);
  int64_t cnt = 0;
  for (int32_t i = 16 * I; i < r1; i++)
    for (int64_t p = rp_at(c->rp, i); p < rp_at(c->rp, i + 1); p++) {
      int32_t J = c->colidx[p] >> 4;
      if (mark[J] != I) { mark[J] = I; cnt++; }
    }
  count[0] = cnt;
  return 0;
}

static int cmp_i32(const void *a, const void *b)
{
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static int tr_from_csr_generic(int32_t m, int32_t n, tr_rowptr rp, const int32_t *colidx, const double *val,
                               tilerap_tile_matrix **out)
{
  if (!out) return tilerap_set_error(TILERAP_ERR_NULL, "tile conversion: NULL output");
  *out = NULL;
  int err = tr_check_csr_generic(m, n, rp, colidx);
  if (err) return err;
  const int32_t TR = tr_ceil16(m), TC = tr_ceil16(n);
  const int64_t nnz = rp_at(rp, m);
  int64_t *tiles_in_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  if (!tiles_in_row) return TILERAP_ERR_NOMEM;

  /* pass 1: tiles per tile row */
  tr_csr_rows rows = {rp, colidx, m};
  if (tr_tile_row_counts(TR, TC, TR > TR_OMP_MIN_ITEMS / 16, 1, &tiles_in_row, tr_count_tile_cols, &rows)) {
    free(tiles_in_row);
    return TILERAP_ERR_NOMEM;
  }
  tilerap_tile_matrix *T = NULL;
  err = tilerap_tile_create(m, n, tiles_in_row[TR], nnz, TILERAP_MEM_HOST, &T);
  if (err) { free(tiles_in_row); return err; }
  memcpy(T->tile_ptr, tiles_in_row, ((size_t)TR + 1) * sizeof(int64_t));
  free(tiles_in_row);

  /* pass 2: tile columns, masks, offsets, row pointers, entries */
  int failed = 0;
#pragma omp parallel reduction(| : failed) if (TR > TR_OMP_MIN_ITEMS / 16)
  {
    int32_t *slot = tilerap_host_alloc((size_t)TC + 1, sizeof(int32_t));
    if (!slot) failed = 1;
    else {
      for (int32_t J = 0; J <= TC; J++) slot[J] = -1;
#pragma omp for schedule(dynamic, 64)
      for (int32_t I = 0; I < TR; I++) {
        int32_t r0 = 16 * I, r1 = (int32_t)((int64_t)r0 + 16 < m ? r0 + 16 : m);
        int64_t t0 = T->tile_ptr[I], nt = T->tile_ptr[I + 1] - t0;
        int32_t *cols = T->tile_col + t0;
        int64_t k = 0;
        for (int32_t i = r0; i < r1; i++)
          for (int64_t p = rp_at(rp, i); p < rp_at(rp, i + 1); p++) {
            int32_t J = colidx[p] >> 4;
            if (slot[J] < 0) { slot[J] = 0; cols[k++] = J; }
          }
        qsort(cols, (size_t)nt, sizeof *cols, cmp_i32);
        for (int64_t s = 0; s < nt; s++) slot[cols[s]] = (int32_t)s;
        uint16_t *mask = T->row_mask + 16 * t0;
        memset(mask, 0, 16 * (size_t)nt * sizeof *mask);
        for (int32_t i = r0; i < r1; i++)
          for (int64_t p = rp_at(rp, i); p < rp_at(rp, i + 1); p++)
            mask[16 * slot[colidx[p] >> 4] + (i - r0)] |= (uint16_t)(1u << (colidx[p] & 15));
        /* entries of tile row I are CSR entries rowptr[r0].. */
        int64_t off = rp_at(rp, r0);
        for (int64_t s = 0; s < nt; s++) {
          int64_t t = t0 + s;
          int acc = 0;
          for (int r = 0; r < 16; r++) { T->row_ptr[16 * t + r] = (uint8_t)acc; acc += tr_popcount16(mask[16 * s + r]); }
          T->tile_off[t] = off;
          off += acc;
          if (t + 1 == T->num_tiles) T->tile_off[t + 1] = off;
        }
        for (int32_t i = r0; i < r1; i++) {
          int64_t t = -1; int e = 0;
          for (int64_t p = rp_at(rp, i); p < rp_at(rp, i + 1); p++) {
            int64_t tt = t0 + slot[colidx[p] >> 4];
            if (tt != t) { t = tt; e = 0; }
            int64_t q = T->tile_off[t] + T->row_ptr[16 * t + (i - r0)] + e++;
            T->idx[q] = (uint8_t)(((i - r0) << 4) | (colidx[p] & 15));
            T->val[q] = val ? val[p] : 0.0;
          }
        }
        for (int64_t s = 0; s < nt; s++) slot[cols[s]] = -1;
      }
      free(slot);
    }
  }
  if (failed) { tilerap_tile_destroy(&T); return TILERAP_ERR_NOMEM; }
  T->tile_off[T->num_tiles] = nnz;
  *out = T;
  return TILERAP_SUCCESS;
}

int tilerap_tile_from_csr(int32_t m, int32_t n, const int64_t *rowptr, const int32_t *colidx, const double *val,
                          tilerap_tile_matrix **T)
{
  tr_rowptr rp = {rowptr, NULL};
  if (!rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "tile conversion: CSR row pointers are NULL");
  return tr_from_csr_generic(m, n, rp, colidx, val, T);
}

int tilerap_tile_from_csr_i32(int32_t m, int32_t n, const int32_t *rowptr, const int32_t *colidx,
                              const double *val, tilerap_tile_matrix **T)
{
  tr_rowptr rp = {NULL, rowptr};
  if (!rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "tile conversion: CSR row pointers are NULL");
  return tr_from_csr_generic(m, n, rp, colidx, val, T);
}

/* Walks row i of T: for each tile of its tile row holding entries in local
 * row lr, the run of values is contiguous in both formats. dir > 0 copies
 * CSR -> tile, dir < 0 tile -> CSR. Returns the number of entries seen. */
static inline int64_t tr_row_walk(const tilerap_tile_matrix *T, int32_t i, double *csr_row, int64_t csr_len,
                                  int32_t *csr_cols, int dir)
{
  int32_t I = i >> 4, lr = i & 15;
  int64_t k = 0;
  for (int64_t t = T->tile_ptr[I]; t < T->tile_ptr[I + 1]; t++) {
    unsigned mask = T->row_mask[16 * t + lr];
    if (!mask) continue;
    int len = tr_popcount16(mask);
    if (k + len > csr_len) return -1;
    int64_t q = T->tile_off[t] + T->row_ptr[16 * t + lr];
    if (dir > 0) memcpy(T->val + q, csr_row + k, (size_t)len * sizeof(double));
    else if (csr_row) memcpy(csr_row + k, T->val + q, (size_t)len * sizeof(double));
    if (csr_cols)
      for (int e = 0; e < len; e++) csr_cols[k + e] = 16 * T->tile_col[t] + (T->idx[q + e] & 15);
    k += len;
  }
  return k;
}

/* Stored entries of row i of T (host). */
static int64_t tr_row_length(const tilerap_tile_matrix *T, int32_t i)
{
  const int32_t I = i >> 4, lr = i & 15;
  int64_t k = 0;
  for (int64_t t = T->tile_ptr[I]; t < T->tile_ptr[I + 1]; t++) k += tr_popcount16(T->row_mask[16 * t + lr]);
  return k;
}

static int tr_update_values_generic(tilerap_tile_matrix *T, tr_rowptr rp, const double *val)
{
  static const char who[] = "values refresh";
  int err = tr_require_host(T, "tile matrix");
  if (err) return err;
  if ((!rp.p64 && !rp.p32) || (!val && T->nnz)) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL CSR arrays", who);
  if (rp_at(rp, 0) != 0)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: CSR rowptr[0] = %lld, expected 0", who, (long long)rp_at(rp, 0));
  if (rp_at(rp, T->m) != T->nnz)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "%s: CSR has %lld entries, tile matrix %lld", who,
                             (long long)rp_at(rp, T->m), (long long)T->nnz);
  /* every row pointer against T's row lengths before a value is written:
   * a failed call leaves T as it was */
  int32_t bad = INT32_MAX;
#pragma omp parallel for schedule(static) reduction(min : bad) if (T->m > 16 * TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i < T->m; i++)
    if (rp_at(rp, i + 1) - rp_at(rp, i) != tr_row_length(T, i) && i < bad) bad = i;
  if (bad != INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "%s: CSR row %d has %lld entries, the tile matrix's %lld", who, bad,
                             (long long)(rp_at(rp, bad + 1) - rp_at(rp, bad)), (long long)tr_row_length(T, bad));
#pragma omp parallel for schedule(static) if (T->m > 16 * TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i < T->m; i++) {
    const int64_t b = rp_at(rp, i);
    tr_row_walk(T, i, (double *)(val + b), rp_at(rp, i + 1) - b, NULL, +1);
  }
  return TILERAP_SUCCESS;
}

int tilerap_tile_update_values_from_csr(tilerap_tile_matrix *T, const int64_t *rowptr, const double *val)
{
  tr_rowptr rp = {rowptr, NULL};
  return tr_update_values_generic(T, rp, val);
}

int tilerap_tile_update_values_from_csr_i32(tilerap_tile_matrix *T, const int32_t *rowptr, const double *val)
{
  tr_rowptr rp = {NULL, rowptr};
  return tr_update_values_generic(T, rp, val);
}

/* Row lengths of T into len[m] (host). */
static void tr_row_lengths(const tilerap_tile_matrix *T, int64_t *len)
{
#pragma omp parallel for schedule(static) if (T->m > 16 * TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i < T->m; i++) len[i] = tr_row_length(T, i);
}

static int tr_to_csr_generic(const tilerap_tile_matrix *T, int64_t *rp64, int32_t *rp32, int32_t *colidx,
                             double *val)
{
  int err = tr_require_host(T, "tile matrix");
  if (err) return err;
  if (rp32 && T->nnz > INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "%lld entries do not fit 32-bit row pointers", (long long)T->nnz);
  int64_t *start = tilerap_host_alloc((size_t)T->m + 1, sizeof(int64_t));
  if (!start) return TILERAP_ERR_NOMEM;
  tr_row_lengths(T, start + 1);
  start[0] = 0;
  for (int32_t i = 0; i < T->m; i++) start[i + 1] += start[i];
  if (rp64) memcpy(rp64, start, ((size_t)T->m + 1) * sizeof(int64_t));
  if (rp32)
    for (int32_t i = 0; i <= T->m; i++) rp32[i] = (int32_t)start[i];
  if (colidx || val) {
#pragma omp parallel for schedule(static) if (T->m > 16 * TR_OMP_MIN_ITEMS)
    for (int32_t i = 0; i < T->m; i++)
      tr_row_walk(T, i, val ? val + start[i] : NULL, start[i + 1] - start[i], colidx ? colidx + start[i] : NULL, -1);
  }
  free(start);
  return TILERAP_SUCCESS;
}

int tilerap_tile_to_csr(const tilerap_tile_matrix *T, int64_t *rowptr, int32_t *colidx, double *val)
{
  return tr_to_csr_generic(T, rowptr, NULL, colidx, val);
}

int tilerap_tile_to_csr_i32(const tilerap_tile_matrix *T, int32_t *rowptr, int32_t *colidx, double *val)
{
  return tr_to_csr_generic(T, NULL, rowptr, colidx, val);
}

int tilerap_tile_to_csr_alloc(const tilerap_tile_matrix *T, tilerap_csr **A)
{
  if (!A) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_tile_to_csr_alloc: NULL output");
  *A = NULL;
  int err = tr_require_host(T, "tile matrix");
  if (err) return err;
  err = tilerap_csr_create(T->m, T->n, T->nnz, A);
  if (err) return err;
  err = tilerap_tile_to_csr(T, (*A)->rowptr, (*A)->colidx, (*A)->val);
  if (err) tilerap_csr_destroy(A);
  return err;
}
