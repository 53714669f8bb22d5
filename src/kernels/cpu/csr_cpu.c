/* The CSR path on the CPU engine (csr_path.c): CSR views of host tile
 * matrices and Gustavson's row-by-row product with a dense accumulator
 * per thread.  Views list each row's entries with the positions of their
 * values in the tiles, so products read the tiles' own values and write
 * C's in place; a view of T (not transposed) comes out sorted, so it is
 * also C's position map.  The accumulators are made once per product, so
 * numeric runs allocate nothing. */
#include "spgemm_cpu.h"
#include <sys/mman.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

struct tr_cpu_csr_product {
  int32_t m, n;
  const int64_t *arp, *brp;
  const int32_t *acol, *bcol;
  int64_t *crp;
  int32_t *ccol;
  int64_t cnnz, macs;
  int nthreads;
  int32_t *mark; /* per thread: n stamps */
  double *acc;   /* per thread: n values, zero between rows */
  int32_t *list; /* per thread: n columns of the row being filled */
  uint64_t *bits; /* per thread: a bit per column, zero between rows (a row's columns in order) */
  /* a product built in one pass (tr_cpu_csr_product_build), until taken:
   * its columns and values, grown row by row */
  int32_t *bcol_buf;
  double *bval_buf;
  int64_t bcap;
};


int tr_cpu_csr_view(const tilerap_tile_matrix *T, int transpose, int64_t **rp_out, int32_t **col_out,
                    int64_t **vidx_out)
{
  const int32_t rows = transpose ? T->n : T->m;
  int64_t *rp = tilerap_host_calloc((size_t)rows + 1, sizeof(int64_t));
  int32_t *col = tilerap_host_alloc((size_t)T->nnz + 1, sizeof(int32_t));
  int64_t *vidx = tilerap_host_alloc((size_t)T->nnz + 1, sizeof(int64_t));
  *rp_out = NULL; *col_out = NULL; *vidx_out = NULL;
  if (!rp || !col || !vidx) { free(rp); free(col); free(vidx); return TILERAP_ERR_NOMEM; }
  if (!transpose) {
    /* rows of a tile row: entries of tile row I start at tile_off[tile_ptr[I]] in both formats */
#pragma omp parallel for schedule(dynamic, 64) if (T->tile_rows > 256)
    for (int32_t I = 0; I < T->tile_rows; I++) {
      const int64_t t0 = T->tile_ptr[I], t1 = T->tile_ptr[I + 1];
      int64_t k = T->tile_off[t0];
      for (int r = 0; r < 16 && 16 * I + r < T->m; r++) {
        rp[16 * I + r] = k;
        for (int64_t t = t0; t < t1; t++) {
          unsigned mask = T->row_mask[16 * t + r];
          const int64_t q = T->tile_off[t] + T->row_ptr[16 * t + r];
          for (int e = 0; mask; e++, mask &= mask - 1, k++) {
            col[k] = 16 * T->tile_col[t] + __builtin_ctz(mask);
            vidx[k] = q + e;
          }
        }
      }
    }
    rp[rows] = T->nnz;
  } else {
    /* column counts, then entries in T's row order: each row of T^T sorted */
    for (int64_t t = 0; t < T->num_tiles; t++)
      for (int r = 0; r < 16; r++)
        for (unsigned mask = T->row_mask[16 * t + r]; mask; mask &= mask - 1)
          rp[16 * T->tile_col[t] + __builtin_ctz(mask) + 1]++;
    for (int32_t j = 0; j < rows; j++) rp[j + 1] += rp[j];
    int64_t *cur = tilerap_host_alloc((size_t)rows + 1, sizeof(int64_t));
    if (!cur) { free(rp); free(col); free(vidx); return TILERAP_ERR_NOMEM; }
    memcpy(cur, rp, ((size_t)rows + 1) * sizeof(int64_t));
    for (int32_t I = 0; I < T->tile_rows; I++)
      for (int r = 0; r < 16; r++)
        for (int64_t t = T->tile_ptr[I]; t < T->tile_ptr[I + 1]; t++) {
          unsigned mask = T->row_mask[16 * t + r];
          const int64_t q = T->tile_off[t] + T->row_ptr[16 * t + r];
          for (int e = 0; mask; e++, mask &= mask - 1) {
            const int64_t at = cur[16 * T->tile_col[t] + __builtin_ctz(mask)]++;
            col[at] = 16 * I + r;
            vidx[at] = q + e;
          }
        }
    free(cur);
  }
  *rp_out = rp; *col_out = col; *vidx_out = vidx;
  return TILERAP_SUCCESS;
}

/* T = A^T of an m x n CSR: rows of T sorted, vidx[t] = A's entry of T's entry t */
int tr_cpu_csr_transpose(int32_t m, int32_t n, const int64_t *rp, const int32_t *col, int64_t **trp_out,
                         int32_t **tcol_out, int64_t **tvidx_out)
{
  const int64_t nnz = rp[m];
  int64_t *trp = tilerap_host_calloc((size_t)n + 2, sizeof(int64_t));
  int32_t *tcol = tilerap_host_alloc((size_t)nnz + 1, sizeof(int32_t));
  int64_t *tvidx = tvidx_out ? tilerap_host_alloc((size_t)nnz + 1, sizeof(int64_t)) : NULL;
  *trp_out = NULL; *tcol_out = NULL;
  if (tvidx_out) *tvidx_out = NULL;
  if (!trp || !tcol || (tvidx_out && !tvidx)) { free(trp); free(tcol); free(tvidx); return TILERAP_ERR_NOMEM; }
  /* counts shifted by two: after the prefix sum trp[j + 1] is row j's start, the cursor of the scatter */
  /* (64-bit index arithmetic: a column n - 1 = INT32_MAX - 1 would overflow) */
  for (int64_t e = 0; e < nnz; e++) trp[(int64_t)col[e] + 2]++;
  for (int64_t j = 0; j < n; j++) trp[j + 2] += trp[j + 1];
  for (int32_t i = 0; i < m; i++)
    for (int64_t e = rp[i]; e < rp[i + 1]; e++) {
      const int64_t at = trp[(int64_t)col[e] + 1]++;
      tcol[at] = i;
      if (tvidx) tvidx[at] = e;
    }
  *trp_out = trp; *tcol_out = tcol;
  if (tvidx_out) *tvidx_out = tvidx;
  return TILERAP_SUCCESS;
}

/* a thread's words of bits */
static size_t tr_bits_stride(int32_t n) { return tr_cpu_stride(n) / 64 + 1; }

void tr_cpu_csr_product_bind(tr_cpu_csr_product *P, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                             const int32_t *bcol)
{
  P->arp = arp; P->acol = acol; P->brp = brp; P->bcol = bcol;
}

void tr_cpu_csr_product_destroy(tr_cpu_csr_product *P)
{
  if (!P) return;
  free(P->crp); free(P->ccol); free(P->mark); free(P->acc); free(P->list); free(P->bits);
  free(P->bcol_buf); free(P->bval_buf);
  free(P);
}

int tr_cpu_csr_product_create(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                              const int32_t *bcol, tr_cpu_csr_product **out, int64_t *cnnz, int64_t *macs)
{
  *out = NULL;
  tr_cpu_csr_product *P = tilerap_host_calloc(1, sizeof *P);
  if (!P) return TILERAP_ERR_NOMEM;
  P->m = m; P->n = n; P->arp = arp; P->acol = acol; P->brp = brp; P->bcol = bcol;
  P->nthreads = tr_cpu_threads();
  const size_t w = tr_cpu_stride(n), nt = (size_t)P->nthreads;
  P->crp = tilerap_host_calloc((size_t)m + 1, sizeof(int64_t));
  P->mark = tilerap_host_alloc(w * nt, sizeof(int32_t));
  P->acc = tilerap_host_calloc(w * nt, sizeof(double));
  P->list = tilerap_host_alloc(w * nt, sizeof(int32_t));
  P->bits = tilerap_host_calloc(tr_bits_stride(n) * nt, sizeof(uint64_t));
  if (!P->crp || !P->mark || !P->acc || !P->list || !P->bits) { tr_cpu_csr_product_destroy(P); return TILERAP_ERR_NOMEM; }
  for (size_t i = 0; i < w * nt; i++) P->mark[i] = -1;
  int64_t total_macs = 0;
#pragma omp parallel num_threads(P->nthreads) reduction(+ : total_macs)
  {
    int32_t *mark = P->mark + (size_t)tr_cpu_thread() * w;
#pragma omp for schedule(dynamic, 256)
    for (int32_t i = 0; i < m; i++) {
      int64_t cnt = 0;
      for (int64_t e = arp[i]; e < arp[i + 1]; e++) {
        const int32_t k = acol[e];
        total_macs += brp[k + 1] - brp[k];
        for (int64_t f = brp[k]; f < brp[k + 1]; f++)
          if (mark[bcol[f]] != i) { mark[bcol[f]] = i; cnt++; }
      }
      P->crp[i + 1] = cnt;
    }
  }
  for (int32_t i = 0; i < m; i++) P->crp[i + 1] += P->crp[i];
  P->cnnz = P->crp[m];
  P->macs = total_macs;
  if (!(P->ccol = tilerap_host_alloc((size_t)P->cnnz + 1, sizeof(int32_t)))) {
    tr_cpu_csr_product_destroy(P);
    return TILERAP_ERR_NOMEM;
  }
  *out = P;
  *cnnz = P->cnnz;
  *macs = P->macs;
  return TILERAP_SUCCESS;
}

const int64_t *tr_cpu_csr_product_rowptr(const tr_cpu_csr_product *P) { return P->crp; }
const int32_t *tr_cpu_csr_product_colidx(const tr_cpu_csr_product *P) { return P->ccol; }

int64_t tr_cpu_csr_product_bytes(const tr_cpu_csr_product *P)
{
  if (!P) return 0;
  return (int64_t)sizeof *P + ((int64_t)P->m + 1) * 8 + P->cnnz * 4 +
         (int64_t)P->nthreads * ((int64_t)tr_cpu_stride(P->n) * (4 + 8 + 4) + (int64_t)tr_bits_stride(P->n) * 8) +
         P->bcap * (4 + 8);
}

/* distinct columns of a row: quicksort down to runs of 24, insertion sort
 * (qsort's comparison calls cost more than the product on AMG rows) */
void tr_cpu_sort_i32(int32_t *v, int64_t n)
{
  while (n > 24) {
    const int32_t a = v[0], b = v[n / 2], c = v[n - 1];
    const int32_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    int64_t i = 0, j = n - 1;
    for (;;) {
      while (v[i] < pivot) i++;
      while (v[j] > pivot) j--;
      if (i >= j) break;
      const int32_t t = v[i]; v[i] = v[j]; v[j] = t;
      i++; j--;
    }
    /* [0, j] <= pivot <= [j + 1, n): recurse on the shorter side */
    if (j + 1 < n - j - 1) { tr_cpu_sort_i32(v, j + 1); v += j + 1; n -= j + 1; }
    else { tr_cpu_sort_i32(v + j + 1, n - j - 1); n = j + 1; }
  }
  for (int64_t i = 1; i < n; i++) {
    const int32_t x = v[i];
    int64_t j = i;
    for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
    v[j] = x;
  }
}

#define TR_VAL(val, vidx, e) ((val)[(vidx) ? (vidx)[e] : (e)])

/* Row i of C into list (its len columns, sorted if asked) and, with
 * values, their sums into acc (the caller reads and zeroes them).  stamp
 * marks the row's columns in mark; bits is zero before and after. */
static inline int64_t tr_row_product(const tr_cpu_csr_product *P, int32_t i, int32_t stamp, int32_t *mark,
                                     uint64_t *bits, int32_t *list, double *acc, const double *aval,
                                     const int64_t *avidx, const double *bval, const int64_t *bvidx, int values,
                                     int sorted)
{
  int64_t len = 0;
  for (int64_t e = P->arp[i]; e < P->arp[i + 1]; e++) {
    const int32_t k = P->acol[e];
    const double av = values ? TR_VAL(aval, avidx, e) : 0.0;
    for (int64_t f = P->brp[k]; f < P->brp[k + 1]; f++) {
      const int32_t c = P->bcol[f];
      if (mark[c] != stamp) { mark[c] = stamp; list[len++] = c; }
      if (values) acc[c] += av * TR_VAL(bval, bvidx, f);
    }
  }
  if (!sorted || len < 2) return len;
  int32_t lo = INT32_MAX, hi = -1;
  for (int64_t j = 0; j < len; j++) {
    lo = list[j] < lo ? list[j] : lo;
    hi = list[j] > hi ? list[j] : hi;
  }
  /* in order from a bitmap's words between the first and the last column,
   * or by a sort: the words cost about twice a sort's step per column, a
   * sort log2(len) steps per column.  A 125-point stencil's squared rows
   * (600 columns over 110 words) take the bitmap, a 7-point grid's (25
   * columns over 150 words) the sort. */
  const int64_t words = (int64_t)(hi >> 6) - (lo >> 6) + 1, lg = 63 - __builtin_clzll((unsigned long long)len);
  if (2 * words <= len * lg) {
    for (int64_t j = 0; j < len; j++) bits[list[j] >> 6] |= 1ull << (list[j] & 63);
    int64_t q = 0;
    for (int32_t wd = lo >> 6; wd <= hi >> 6; wd++) {
      uint64_t x = bits[wd];
      if (!x) continue;
      bits[wd] = 0;
      for (; x; x &= x - 1) list[q++] = wd * 64 + __builtin_ctzll(x);
    }
  } else {
    tr_cpu_sort_i32(list, len);
  }
  return len;
}

/* C's columns (sorted unless an intermediate product), and its values
 * into cval (NULL: structure only).
 * The marks of the count pass stay valid: row i's stamp is i, so this
 * pass stamps -2 - i. */
int tr_cpu_csr_product_fill(tr_cpu_csr_product *P, const double *aval, const int64_t *avidx, const double *bval,
                            const int64_t *bvidx, double *cval, int sorted)
{
  const size_t w = tr_cpu_stride(P->n);
#pragma omp parallel num_threads(P->nthreads)
  {
    const size_t th = (size_t)tr_cpu_thread();
    int32_t *mark = P->mark + th * w, *list = P->list + th * w;
    uint64_t *bits = P->bits + th * tr_bits_stride(P->n);
    double *acc = P->acc + th * w;
#pragma omp for schedule(dynamic, 256)
    for (int32_t i = 0; i < P->m; i++) {
      const int64_t len =
          tr_row_product(P, i, -2 - i, mark, bits, list, acc, aval, avidx, bval, bvidx, cval != NULL, sorted);
      const int64_t c0 = P->crp[i];
      for (int64_t j = 0; j < len; j++) {
        P->ccol[c0 + j] = list[j];
        if (cval) { cval[c0 + j] = acc[list[j]]; acc[list[j]] = 0.0; }
      }
    }
  }
  return TILERAP_SUCCESS;
}

/* room for need entries in the built product's buffers (doubling) */
static int tr_build_reserve(tr_cpu_csr_product *P, int64_t need, int values)
{
  if (need <= P->bcap) return 1;
  int64_t cap = P->bcap ? P->bcap : 4096;
  while (cap < need) cap *= 2;
  int32_t *col = realloc(P->bcol_buf, (size_t)cap * sizeof(int32_t));
  if (!col) return 0;
  P->bcol_buf = col;
  if (values) {
    double *val = realloc(P->bval_buf, (size_t)cap * sizeof(double));
    if (!val) return 0;
    P->bval_buf = val;
  }
  P->bcap = cap;
  return 1;
}

/* row of rl columns (list) and, with values, their sums (acc, zeroed as
 * read) into the buffers at pos */
static inline void tr_build_put(tr_cpu_csr_product *P, int64_t pos, const int32_t *list, double *acc, int64_t rl,
                                int values)
{
  memcpy(P->bcol_buf + pos, list, (size_t)rl * sizeof(int32_t));
  if (values)
    for (int64_t j = 0; j < rl; j++) { P->bval_buf[pos + j] = acc[list[j]]; acc[list[j]] = 0.0; }
}

/* n elements of size sz from element src down to element dst of base, a
 * megabyte at a time; the source's whole pages at or past element end
 * (nothing is kept there) are given back as they are passed, so the parts'
 * move does not hold the gaps' pages and the parts' old pages at once */
static void tr_move_down(char *base, size_t sz, int64_t dst, int64_t src, int64_t n, int64_t end)
{
  const size_t step = (size_t)1 << 20, bytes = (size_t)n * sz;
#if defined(MADV_DONTNEED) && defined(_SC_PAGESIZE)
  const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
#endif
  for (size_t done = 0; done < bytes; done += step) {
    const size_t c = bytes - done < step ? bytes - done : step;
    memmove(base + (size_t)dst * sz + done, base + (size_t)src * sz + done, c);
#if defined(MADV_DONTNEED) && defined(_SC_PAGESIZE)
    uintptr_t lo = (uintptr_t)(base + (size_t)src * sz + done), hi = lo + c;
    const uintptr_t keep = (uintptr_t)(base + (size_t)end * sz);
    if (lo < keep) lo = keep;
    lo = (lo + pg - 1) / pg * pg;
    hi = hi / pg * pg;
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
#endif
  }
}

/* The rows of build on several threads: part t is a run of rows of about
 * an equal share of the multiply-adds (a dense row of B weighs what it
 * costs), written into its part of the buffers (sized by that share); then
 * the parts move down to follow one another.  1: a part was too small
 * (nothing usable). */
static int tr_build_threads(tr_cpu_csr_product *P, const double *aval, const int64_t *avidx, const double *bval,
                            const int64_t *bvidx, int values, int sorted, int64_t *total_macs)
{
  const int T = P->nthreads;
  const int32_t m = P->m;
  const int64_t cap = P->bcap - 1;
  const size_t w = tr_cpu_stride(P->n);
  int64_t *work = P->crp; /* the rows' multiply-adds, summed; then their lengths */
#pragma omp parallel for schedule(static) num_threads(T)
  for (int32_t i = 0; i < m; i++) {
    int64_t x = 0;
    for (int64_t e = P->arp[i]; e < P->arp[i + 1]; e++) x += P->brp[P->acol[e] + 1] - P->brp[P->acol[e]];
    work[i + 1] = x;
  }
  for (int32_t i = 0; i < m; i++) work[i + 1] += work[i];
  const int64_t macs = work[m];
  int32_t rs[T + 1];
  int64_t off[T + 1], used[T];
  rs[0] = 0;
  rs[T] = m;
  for (int t = 1; t < T; t++) { /* the first row at or after the t-th share */
    const int64_t target = macs / T * t;
    int32_t lo = rs[t - 1], hi = m;
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo) / 2;
      if (work[mid] < target) lo = mid + 1;
      else hi = mid;
    }
    rs[t] = lo;
  }
  for (int t = 0; t <= T; t++) off[t] = macs ? (int64_t)((double)cap * (double)work[rs[t]] / (double)macs) : cap * t / T;
  off[T] = cap;
  int over = 0;
#pragma omp parallel num_threads(T)
#ifdef _OPENMP
  for (int t = omp_get_thread_num(); t < T; t += omp_get_num_threads()) /* every part, whatever the team */
#else
  for (int t = 0; t < T; t++)
#endif
  {
    int32_t *mark = P->mark + (size_t)t * w, *list = P->list + (size_t)t * w;
    uint64_t *bits = P->bits + (size_t)t * tr_bits_stride(P->n);
    double *acc = P->acc + (size_t)t * w;
    int64_t pos = off[t];
    for (int32_t i = rs[t]; i < rs[t + 1]; i++) {
      const int64_t rl = tr_row_product(P, i, i, mark, bits, list, acc, aval, avidx, bval, bvidx, values, sorted);
      if (pos + rl > off[t + 1]) {
#pragma omp atomic write
        over = 1;
        break;
      }
      tr_build_put(P, pos, list, acc, rl, values);
      pos += rl;
      P->crp[i + 1] = rl;
    }
    used[t] = pos - off[t];
  }
  *total_macs = macs;
  if (over) return 1;
  int64_t end = 0;
  for (int t = 0; t < T; t++) end += used[t];
  int64_t dst = used[0];
  for (int t = 1; t < T; t++) {
    tr_move_down((char *)P->bcol_buf, sizeof(int32_t), dst, off[t], used[t], end);
    if (values) tr_move_down((char *)P->bval_buf, sizeof(double), dst, off[t], used[t], end);
    dst += used[t];
  }
  return 0;
}

/* Create and fill in one pass (no count pass first): rows
 * go to buffers sized by the estimate of C's entries (on one thread grown
 * if short; on several, *out NULL: count first), C's row pointers come
 * from their lengths, and tr_cpu_csr_product_take makes the buffers C's
 * columns and values. */
int tr_cpu_csr_product_build(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                             const int32_t *bcol, const double *aval, const int64_t *avidx, const double *bval,
                             const int64_t *bvidx, int sorted, int64_t entries, tr_cpu_csr_product **out,
                             int64_t *cnnz, int64_t *macs)
{
  *out = NULL;
  tr_cpu_csr_product *P = tilerap_host_calloc(1, sizeof *P);
  if (!P) return TILERAP_ERR_NOMEM;
  P->m = m; P->n = n; P->arp = arp; P->acol = acol; P->brp = brp; P->bcol = bcol;
  P->nthreads = tr_cpu_threads();
  const size_t w = tr_cpu_stride(n), nt = (size_t)P->nthreads;
  const int values = aval && bval;
  P->crp = tilerap_host_calloc((size_t)m + 1, sizeof(int64_t));
  P->mark = tilerap_host_alloc(w * nt, sizeof(int32_t));
  P->acc = tilerap_host_calloc(w * nt, sizeof(double));
  P->list = tilerap_host_alloc(w * nt, sizeof(int32_t));
  P->bits = tilerap_host_calloc(tr_bits_stride(n) * nt, sizeof(uint64_t));
  /* the estimate and a tenth (one thread: the buffers rarely grow, a copy
   * with the old and new buffer held at once), or a half (threads: their
   * parts' rows merge unlike the sample's; pages never written cost no
   * memory) */
  const int64_t room = entries + (nt == 1 ? entries / 10 : entries / 2) + 1024 * (int64_t)nt;
  if (!P->crp || !P->mark || !P->acc || !P->list || !P->bits || !tr_build_reserve(P, room, values)) {
    tr_cpu_csr_product_destroy(P);
    return TILERAP_ERR_NOMEM;
  }
  for (size_t i = 0; i < w * nt; i++) P->mark[i] = -1;
  int64_t len = 0, total_macs = 0;
  if (nt == 1) { /* one thread: the buffers grow where the estimate was short */
    for (int32_t i = 0; i < m; i++) {
      for (int64_t e = arp[i]; e < arp[i + 1]; e++) total_macs += brp[acol[e] + 1] - brp[acol[e]];
      const int64_t rl =
          tr_row_product(P, i, i, P->mark, P->bits, P->list, P->acc, aval, avidx, bval, bvidx, values, sorted);
      if (!tr_build_reserve(P, len + rl + 1, values)) { tr_cpu_csr_product_destroy(P); return TILERAP_ERR_NOMEM; }
      tr_build_put(P, len, P->list, P->acc, rl, values);
      len += rl;
      P->crp[i + 1] = rl;
    }
  } else if (tr_build_threads(P, aval, avidx, bval, bvidx, values, sorted, &total_macs)) {
    /* a thread's rows outgrew its share of the buffers: the estimate was
     * wrong; the caller counts first instead */
    tr_cpu_csr_product_destroy(P);
    return TILERAP_SUCCESS;
  }
  for (int32_t i = 0; i < m; i++) P->crp[i + 1] += P->crp[i];
  len = P->crp[m];
  P->cnnz = len;
  P->macs = total_macs;
  *out = P;
  *cnnz = P->cnnz;
  *macs = P->macs;
  return TILERAP_SUCCESS;
}

/* One pass (columns and values at once, no count pass) where C's entries
 * sum many products each: the count pass costs about as much as the
 * product there, and the buffers become C's arrays.  Where C's entries sum
 * few products (a 7-point grid's AP), C is nearly as large as its
 * products, and the buffers' growth and page faults cost more than the
 * count saves.  (Threads with buffers of their own, copied into C, held C
 * twice: 2 threads, level 0, peak memory above the inputs 11 -> 16 MB on
 * elasticity, 135 -> 151 MB on the 7-point grid.) */
#define TR_ONE_PASS_SUMS 5.0

/* whether C = A*B is built in one pass: the median over every stride-th
 * row (about 128 rows) of its multiply-adds per entry; *entries: C's
 * entries, estimated from those rows' exact counts */
int tr_cpu_csr_product_one_pass(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                                const int32_t *bcol, int64_t *entries)
{
  *entries = 0;
  if (m <= 0 || n <= 0) return 0;
  int32_t *mark = tilerap_host_alloc((size_t)n, sizeof(int32_t));
  if (!mark) return 0;
  for (int32_t c = 0; c < n; c++) mark[c] = -1;
  const int32_t stride = m > 128 ? m / 128 : 1;
  double ratio[129];
  int64_t cnt = 0;
  int rows = 0, nr = 0;
  for (int32_t i = 0; i < m && rows < 129; i += stride, rows++) {
    int64_t rm = 0, rc = 0;
    for (int64_t e = arp[i]; e < arp[i + 1]; e++)
      for (int64_t f = brp[acol[e]]; f < brp[acol[e] + 1]; f++, rm++)
        if (mark[bcol[f]] != i) { mark[bcol[f]] = i; rc++; }
    cnt += rc;
    if (rc) ratio[nr++] = (double)rm / (double)rc;
  }
  free(mark);
  if (!nr) return 0;
  /* the decision on the rows' median (a dense row sampled is one row, not
   * its products); C's entries from their mean length */
  for (int j = 1; j < nr; j++) {
    const double x = ratio[j];
    int q = j;
    for (; q > 0 && ratio[q - 1] > x; q--) ratio[q] = ratio[q - 1];
    ratio[q] = x;
  }
  if (ratio[nr / 2] < TR_ONE_PASS_SUMS) return 0;
  *entries = (int64_t)((double)cnt * (double)m / (double)rows);
  return 1;
}

/* A built product's buffers become its columns and the new array *val of
 * its values (the caller frees it; zeros where built without values; val
 * NULL: none) */
int tr_cpu_csr_product_take(tr_cpu_csr_product *P, double **val)
{
  if (!P->bcol_buf) return TILERAP_ERR_INVALID;
  const size_t cn = (size_t)P->cnnz + 1; /* the buffers hold at least this (build reserves one past) */
  int32_t *col = realloc(P->bcol_buf, cn * sizeof(int32_t)); /* shrinks in place */
  P->ccol = col ? col : P->bcol_buf;
  P->bcol_buf = NULL;
  if (!val) {
    free(P->bval_buf);
    P->bval_buf = NULL;
    P->bcap = 0;
    return TILERAP_SUCCESS;
  }
  double *v = P->bval_buf ? realloc(P->bval_buf, cn * sizeof(double)) : tilerap_host_calloc(cn, sizeof(double));
  if (!v && !P->bval_buf) return TILERAP_ERR_NOMEM;
  *val = v ? v : P->bval_buf;
  P->bval_buf = NULL;
  P->bcap = 0;
  return TILERAP_SUCCESS;
}

/* C's values at cval[cvidx[p]] (cvidx NULL: cval[p]) */
int tr_cpu_csr_product_numeric(tr_cpu_csr_product *P, const double *aval, const int64_t *avidx, const double *bval,
                               const int64_t *bvidx, double *cval, const int64_t *cvidx)
{
  const size_t w = tr_cpu_stride(P->n);
#pragma omp parallel num_threads(P->nthreads)
  {
    double *acc = P->acc + (size_t)tr_cpu_thread() * w;
#pragma omp for schedule(dynamic, 256)
    for (int32_t i = 0; i < P->m; i++) {
      for (int64_t e = P->arp[i]; e < P->arp[i + 1]; e++) {
        const int32_t k = P->acol[e];
        const double av = TR_VAL(aval, avidx, e);
        for (int64_t f = P->brp[k]; f < P->brp[k + 1]; f++) acc[P->bcol[f]] += av * TR_VAL(bval, bvidx, f);
      }
      for (int64_t p = P->crp[i]; p < P->crp[i + 1]; p++) {
        const int32_t c = P->ccol[p];
        cval[cvidx ? cvidx[p] : p] = acc[c];
        acc[c] = 0.0;
      }
    }
  }
  return TILERAP_SUCCESS;
}
