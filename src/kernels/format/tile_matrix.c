/* Tile matrix and CSR containers: allocation, copies, consistency checks. */
#include "tile_internal.h"
#include "engine_cuda.h"

int tr_require_host(const tilerap_tile_matrix *T, const char *name)
{
  if (!T) return tilerap_set_error(TILERAP_ERR_NULL, "%s is NULL", name);
  if (T->memtype != TILERAP_MEM_HOST)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "%s must be a host matrix for this call", name);
  return TILERAP_SUCCESS;
}

int tilerap_csr_create(int32_t m, int32_t n, int64_t nnz, tilerap_csr **out)
{
  if (!out) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_create: NULL output");
  *out = NULL;
  if (m < 0 || n < 0 || nnz < 0) return tilerap_set_error(TILERAP_ERR_SIZE, "tilerap_csr_create: negative size");
  tilerap_csr *A = tilerap_host_calloc(1, sizeof *A);
  if (!A) return TILERAP_ERR_NOMEM;
  A->m = m; A->n = n; A->nnz = nnz;
  A->rowptr = tilerap_host_calloc((size_t)m + 1, sizeof *A->rowptr);
  A->colidx = tilerap_host_alloc((size_t)nnz, sizeof *A->colidx);
  A->val = tilerap_host_alloc((size_t)nnz, sizeof *A->val);
  if (!A->rowptr || !A->colidx || !A->val) { tilerap_csr_destroy(&A); return TILERAP_ERR_NOMEM; }
  *out = A;
  return TILERAP_SUCCESS;
}

void tilerap_csr_destroy(tilerap_csr **A)
{
  if (!A || !*A) return;
  free((*A)->rowptr); free((*A)->colidx); free((*A)->val);
  free(*A);
  *A = NULL;
}

static int tr_tile_alloc_host(tilerap_tile_matrix *T)
{
  size_t nt = (size_t)T->num_tiles, nz = (size_t)T->nnz;
  T->tile_ptr = tilerap_host_alloc((size_t)T->tile_rows + 1, sizeof *T->tile_ptr);
  T->tile_col = tilerap_host_alloc(nt, sizeof *T->tile_col);
  T->tile_off = tilerap_host_alloc(nt + 1, sizeof *T->tile_off);
  T->row_ptr = tilerap_host_alloc(16 * nt, sizeof *T->row_ptr);
  T->row_mask = tilerap_host_alloc(16 * nt, sizeof *T->row_mask);
  T->idx = tilerap_host_alloc(nz, sizeof *T->idx);
  T->val = tilerap_host_alloc(nz, sizeof *T->val);
  if (!T->tile_ptr || !T->tile_col || !T->tile_off || !T->row_ptr || !T->row_mask || !T->idx || !T->val)
    return TILERAP_ERR_NOMEM;
  T->tile_ptr[0] = 0;
  T->tile_off[0] = 0;
  return TILERAP_SUCCESS;
}

int tilerap_tile_create(int32_t m, int32_t n, int64_t num_tiles, int64_t nnz, tilerap_memtype mem,
                        tilerap_tile_matrix **out)
{
  if (!out) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_tile_create: NULL output");
  *out = NULL;
  if (m < 0 || n < 0 || num_tiles < 0 || nnz < 0)
    return tilerap_set_error(TILERAP_ERR_SIZE, "tilerap_tile_create: negative size");
  int err = tr_check_memtype(mem, "tilerap_tile_create");
  if (err) return err;
  if (num_tiles > (int64_t)tr_ceil16(m) * tr_ceil16(n) || nnz > 256 * num_tiles || nnz < num_tiles ||
      nnz > (int64_t)m * n)
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_tile_create: %lld tiles / %lld entries impossible for %d x %d",
                             (long long)num_tiles, (long long)nnz, m, n);
  if (num_tiles > INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_OVERFLOW, "%lld tiles exceed the 2^31 tile index range", (long long)num_tiles);
  tilerap_tile_matrix *T = tilerap_host_calloc(1, sizeof *T);
  if (!T) return TILERAP_ERR_NOMEM;
  T->m = m; T->n = n;
  T->tile_rows = tr_ceil16(m); T->tile_cols = tr_ceil16(n);
  T->num_tiles = num_tiles; T->nnz = nnz;
  T->memtype = mem;
  T->structure_id = tr_structure_id_new(); /* the caller fills the structure */
  if (mem == TILERAP_MEM_HOST) err = tr_tile_alloc_host(T);
  else {
#ifdef TILERAP_HAVE_CUDA
    err = tilerap_engine_available(TILERAP_ENGINE_CUDA)
              ? tr_cuda_tile_alloc(T)
              : tilerap_set_error(TILERAP_ERR_ENGINE, "device matrix requested but no CUDA device is present");
#else
    err = tilerap_set_error(TILERAP_ERR_ENGINE, "device matrices need a CUDA build of tilerap");
#endif
  }
  if (err) { tilerap_tile_destroy(&T); return err; }
  *out = T;
  return TILERAP_SUCCESS;
}

void tilerap_tile_destroy(tilerap_tile_matrix **Tp)
{
  if (!Tp || !*Tp) return;
  tilerap_tile_matrix *T = *Tp;
  if (T->memtype == TILERAP_MEM_HOST) {
    free(T->tile_ptr); free(T->tile_col); free(T->tile_off);
    free(T->row_ptr); free(T->row_mask); free(T->idx); free(T->val);
  } else {
#ifdef TILERAP_HAVE_CUDA
    tr_cuda_tile_free(T);
#endif
  }
  free(T);
  *Tp = NULL;
}

int tilerap_tile_check(const tilerap_tile_matrix *T)
{
  int err = tr_require_host(T, "tile matrix");
  if (err) return err;
  if (T->tile_rows != tr_ceil16(T->m) || T->tile_cols != tr_ceil16(T->n))
    return tilerap_set_error(TILERAP_ERR_INVALID, "tile grid %d x %d does not match %d x %d", T->tile_rows, T->tile_cols, T->m, T->n);
  if (T->tile_ptr[0] != 0 || T->tile_ptr[T->tile_rows] != T->num_tiles)
    return tilerap_set_error(TILERAP_ERR_INVALID, "tile_ptr does not span the %lld tiles", (long long)T->num_tiles);
  if (T->tile_off[0] != 0 || T->tile_off[T->num_tiles] != T->nnz)
    return tilerap_set_error(TILERAP_ERR_INVALID, "tile_off does not span the %lld entries", (long long)T->nnz);
  for (int32_t I = 0; I < T->tile_rows; I++) {
    if (T->tile_ptr[I + 1] < T->tile_ptr[I]) return tilerap_set_error(TILERAP_ERR_INVALID, "tile_ptr decreases at tile row %d", I);
    for (int64_t t = T->tile_ptr[I]; t < T->tile_ptr[I + 1]; t++) {
      int32_t J = T->tile_col[t];
      if (J < 0 || J >= T->tile_cols) return tilerap_set_error(TILERAP_ERR_RANGE, "tile %lld: column %d out of range", (long long)t, J);
      if (t > T->tile_ptr[I] && J <= T->tile_col[t - 1])
        return tilerap_set_error(TILERAP_ERR_UNSORTED, "tile row %d: tile columns not increasing", I);
      int64_t len = T->tile_off[t + 1] - T->tile_off[t];
      if (len < 1 || len > 256) return tilerap_set_error(TILERAP_ERR_INVALID, "tile %lld holds %lld entries", (long long)t, (long long)len);
      int expect = 0;
      for (int r = 0; r < 16; r++) {
        unsigned mask = T->row_mask[16 * t + r];
        if (T->row_ptr[16 * t + r] != expect)
          return tilerap_set_error(TILERAP_ERR_INVALID, "tile %lld row %d: row pointer %d, masks say %d", (long long)t, r, T->row_ptr[16 * t + r], expect);
        int rows_left = T->m - 16 * I, cols_left = T->n - 16 * J;
        if (mask && r >= rows_left) return tilerap_set_error(TILERAP_ERR_RANGE, "tile %lld: entry in row %d beyond the matrix", (long long)t, r);
        if (cols_left < 16 && (mask >> cols_left)) return tilerap_set_error(TILERAP_ERR_RANGE, "tile %lld: entry beyond the last column", (long long)t);
        int prev = -1;
        for (int e = T->row_ptr[16 * t + r]; e < tr_row_end(T, t, r); e++) {
          uint8_t x = T->idx[T->tile_off[t] + e];
          int rr = x >> 4, cc = x & 15;
          if (rr != r || cc <= prev || !(mask & (1u << cc)))
            return tilerap_set_error(TILERAP_ERR_INVALID, "tile %lld: idx entry %d inconsistent with masks", (long long)t, e);
          prev = cc;
        }
        expect += tr_popcount16(mask);
      }
      if (expect != len) return tilerap_set_error(TILERAP_ERR_INVALID, "tile %lld: masks count %d entries, offsets %lld", (long long)t, expect, (long long)len);
    }
  }
  return TILERAP_SUCCESS;
}

int tilerap_tile_copy(const tilerap_tile_matrix *src, tilerap_memtype mem, tilerap_tile_matrix **dst)
{
  if (!src || !dst) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_tile_copy: NULL argument");
  int err = tilerap_tile_create(src->m, src->n, src->num_tiles, src->nnz, mem, dst);
  if (err) return err;
  if (src->structure_id) (*dst)->structure_id = src->structure_id; /* same structure */
  if (src->memtype == TILERAP_MEM_HOST && mem == TILERAP_MEM_HOST) {
    tilerap_tile_matrix *D = *dst;
    memcpy(D->tile_ptr, src->tile_ptr, ((size_t)src->tile_rows + 1) * sizeof *D->tile_ptr);
    memcpy(D->tile_col, src->tile_col, (size_t)src->num_tiles * sizeof *D->tile_col);
    memcpy(D->tile_off, src->tile_off, ((size_t)src->num_tiles + 1) * sizeof *D->tile_off);
    memcpy(D->row_ptr, src->row_ptr, 16 * (size_t)src->num_tiles);
    memcpy(D->row_mask, src->row_mask, 16 * (size_t)src->num_tiles * sizeof *D->row_mask);
    memcpy(D->idx, src->idx, (size_t)src->nnz);
    memcpy(D->val, src->val, (size_t)src->nnz * sizeof *D->val);
    return TILERAP_SUCCESS;
  }
#ifdef TILERAP_HAVE_CUDA
  err = tr_cuda_tile_copy(src, *dst);
  if (err) tilerap_tile_destroy(dst);
  return err;
#else
  tilerap_tile_destroy(dst);
  return tilerap_set_error(TILERAP_ERR_ENGINE, "device matrices need a CUDA build of tilerap");
#endif
}

int tr_tile_copy_values(const tilerap_tile_matrix *src, tilerap_tile_matrix *dst)
{
  if (src->memtype == TILERAP_MEM_HOST && dst->memtype == TILERAP_MEM_HOST) {
    memcpy(dst->val, src->val, (size_t)src->nnz * sizeof *dst->val);
    return TILERAP_SUCCESS;
  }
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_tile_copy_values(src, dst);
#else
  return tilerap_set_error(TILERAP_ERR_ENGINE, "device matrices need a CUDA build of tilerap");
#endif
}

int tilerap_tile_copy_values(const tilerap_tile_matrix *src, tilerap_tile_matrix *dst)
{
  static const char who[] = "tilerap_tile_copy_values";
  if (!src || !dst) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL argument", who);
  if (src->structure_id != dst->structure_id || !src->structure_id) { /* same id: same structure */
    tr_structure s, *sp = &s;
    int err = tr_structure_record(1, &src, &sp);
    s.memtype = dst->memtype; /* any two memories */
    if (!err) err = tr_structure_check(&s, dst, who, "the destination");
    tr_structure_release(&s);
    if (err) return err;
  }
  return tr_tile_copy_values(src, dst);
}
