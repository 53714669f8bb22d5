/* Matrix Market reader and writer (see bench_mtx.h). */
#define _GNU_SOURCE /* getline, strcasecmp */
#include "bench_mtx.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { MTX_REAL, MTX_INTEGER, MTX_PATTERN };
enum { MTX_GENERAL, MTX_SYMMETRIC, MTX_SKEW };

typedef struct {
  int32_t c;
  double v;
} mtx_entry;

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return -1;
}

static int blank(const char *s)
{
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
  return *s == 0;
}

static int cmp_entry(const void *a, const void *b)
{
  int32_t x = ((const mtx_entry *)a)->c, y = ((const mtx_entry *)b)->c;
  return (x > y) - (x < y);
}

/* Banner "%%MatrixMarket matrix coordinate <field> <symmetry>". */
static int parse_banner(const char *path, const char *line, int *field, int *sym, char *err, size_t len)
{
  char tag[64] = "", obj[64] = "", fmt[64] = "", fld[64] = "", sy[64] = "";
  if (sscanf(line, "%63s %63s %63s %63s %63s", tag, obj, fmt, fld, sy) != 5 || strcasecmp(tag, "%%MatrixMarket"))
    return fail(err, len, "%s: line 1: not a Matrix Market file (expected '%%%%MatrixMarket matrix coordinate ...')", path);
  if (strcasecmp(obj, "matrix")) return fail(err, len, "%s: unsupported Matrix Market object '%s' (only 'matrix')", path, obj);
  if (strcasecmp(fmt, "coordinate"))
    return fail(err, len, "%s: unsupported Matrix Market format '%s' (only 'coordinate', i.e. sparse)", path, fmt);
  if (!strcasecmp(fld, "real") || !strcasecmp(fld, "double")) *field = MTX_REAL;
  else if (!strcasecmp(fld, "integer")) *field = MTX_INTEGER;
  else if (!strcasecmp(fld, "pattern")) *field = MTX_PATTERN;
  else return fail(err, len, "%s: unsupported Matrix Market field '%s' (only real, integer, pattern)", path, fld);
  if (!strcasecmp(sy, "general")) *sym = MTX_GENERAL;
  else if (!strcasecmp(sy, "symmetric")) *sym = MTX_SYMMETRIC;
  else if (!strcasecmp(sy, "skew-symmetric")) *sym = MTX_SKEW;
  else return fail(err, len, "%s: unsupported Matrix Market symmetry '%s' (only general, symmetric, skew-symmetric)", path, sy);
  return 0;
}

int bench_mtx_read(const char *path, tilerap_csr **out, char *err, size_t len)
{
  *out = NULL;
  FILE *f = fopen(path, "r");
  if (!f) return fail(err, len, "%s: %s", path, strerror(errno));
  int c0 = getc(f), c1 = getc(f);
  if (c0 == 0x1f && c1 == 0x8b) { fclose(f); return fail(err, len, "%s: gzip-compressed: decompress it first", path); }
  rewind(f);

  char *line = NULL;
  size_t cap = 0;
  long long lineno = 0, M = -1, N = -1, NZ = -1, seen = 0;
  int field = MTX_REAL, sym = MTX_GENERAL, rc = -1;
  int32_t *ri = NULL;
  mtx_entry *e = NULL;
  int64_t ne = 0, ecap = 0;
  tilerap_csr *A = NULL;

  if (getline(&line, &cap, f) < 0) { fail(err, len, "%s: empty file", path); goto done; }
  lineno = 1;
  if (parse_banner(path, line, &field, &sym, err, len)) goto done;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    if (line[0] == '%' || blank(line)) continue;
    char *p = line, *q;
    if (M < 0) { /* size line */
      M = strtoll(p, &q, 10); if (q == p) goto bad_size; p = q;
      N = strtoll(p, &q, 10); if (q == p) goto bad_size; p = q;
      NZ = strtoll(p, &q, 10); if (q == p || !blank(q)) goto bad_size;
      if (M < 0 || N < 0 || NZ < 0 || M >= INT32_MAX || N >= INT32_MAX) {
        fail(err, len, "%s: line %lld: sizes %lld x %lld with %lld entries are outside what tilerap indexes (32-bit rows/columns)", path, lineno, M, N, NZ);
        goto done;
      }
      if (sym != MTX_GENERAL && M != N) { fail(err, len, "%s: line %lld: a %s matrix must be square, not %lld x %lld", path, lineno, sym == MTX_SKEW ? "skew-symmetric" : "symmetric", M, N); goto done; }
      ecap = sym == MTX_GENERAL ? NZ : 2 * NZ;
      ri = malloc((size_t)(ecap ? ecap : 1) * sizeof *ri);
      e = malloc((size_t)(ecap ? ecap : 1) * sizeof *e);
      if (!ri || !e) { fail(err, len, "%s: out of memory for %lld entries", path, NZ); goto done; }
      continue;
    }
    if (seen == NZ) { fail(err, len, "%s: line %lld: more entries than the %lld the size line announces", path, lineno, NZ); goto done; }
    long long i = strtoll(p, &q, 10);
    if (q == p) goto bad_entry;
    p = q;
    long long j = strtoll(p, &q, 10);
    if (q == p) goto bad_entry;
    p = q;
    double v = 1.0;
    if (field != MTX_PATTERN) {
      v = strtod(p, &q);
      if (q == p) goto bad_entry;
      p = q;
    }
    if (!blank(p)) goto bad_entry;
    if (i < 1 || i > M || j < 1 || j > N) {
      fail(err, len, "%s: line %lld: entry (%lld, %lld) outside the %lld x %lld matrix (indices are 1-based)", path, lineno, i, j, M, N);
      goto done;
    }
    if (sym == MTX_SKEW && i == j) { fail(err, len, "%s: line %lld: diagonal entry in a skew-symmetric file", path, lineno); goto done; }
    ri[ne] = (int32_t)(i - 1); e[ne].c = (int32_t)(j - 1); e[ne].v = v; ne++;
    if (sym != MTX_GENERAL && i != j) { ri[ne] = (int32_t)(j - 1); e[ne].c = (int32_t)(i - 1); e[ne].v = sym == MTX_SKEW ? -v : v; ne++; }
    seen++;
  }
  if (M < 0) { fail(err, len, "%s: no size line", path); goto done; }
  if (seen != NZ) { fail(err, len, "%s: %lld entries, but the size line announces %lld (truncated file?)", path, seen, NZ); goto done; }

  /* rows by counting sort, columns sorted within each row, duplicates summed */
  {
    int64_t *cnt = calloc((size_t)M + 1, sizeof *cnt);
    mtx_entry *s = malloc((size_t)(ne ? ne : 1) * sizeof *s);
    if (!cnt || !s) { free(cnt); free(s); fail(err, len, "%s: out of memory", path); goto done; }
    for (int64_t k = 0; k < ne; k++) cnt[ri[k] + 1]++;
    for (long long r = 0; r < M; r++) cnt[r + 1] += cnt[r];
    for (int64_t k = 0; k < ne; k++) s[cnt[ri[k]]++] = e[k];
    for (long long r = M; r > 0; r--) cnt[r] = cnt[r - 1]; /* cnt back to row starts */
    cnt[0] = 0;
    int64_t nu = 0;
    for (long long r = 0; r < M; r++) {
      int64_t b = cnt[r], en = cnt[r + 1], start = nu;
      qsort(s + b, (size_t)(en - b), sizeof *s, cmp_entry);
      for (int64_t k = b; k < en; k++) {
        if (nu > start && s[nu - 1].c == s[k].c) s[nu - 1].v += s[k].v;
        else s[nu++] = s[k];
      }
      cnt[r] = start;
    }
    cnt[M] = nu;
    if (tilerap_csr_create((int32_t)M, (int32_t)N, nu, &A)) {
      free(cnt); free(s);
      fail(err, len, "%s: %s", path, tilerap_last_error());
      goto done;
    }
    for (long long r = 0; r <= M; r++) A->rowptr[r] = cnt[r];
    for (int64_t k = 0; k < nu; k++) { A->colidx[k] = s[k].c; A->val[k] = s[k].v; }
    free(cnt); free(s);
  }
  *out = A;
  rc = 0;
  goto done;
bad_size:
  fail(err, len, "%s: line %lld: expected the size line 'rows columns entries'", path, lineno);
  goto done;
bad_entry:
  fail(err, len, "%s: line %lld: expected 'row column%s'", path, lineno, field == MTX_PATTERN ? "" : " value");
done:
  free(line); free(ri); free(e);
  fclose(f);
  return rc;
}

int bench_mtx_write(const char *path, const tilerap_csr *A, const char *comment, char *err, size_t len)
{
  FILE *f = fopen(path, "w");
  if (!f) return fail(err, len, "%s: %s", path, strerror(errno));
  fprintf(f, "%%%%MatrixMarket matrix coordinate real general\n");
  if (comment) fprintf(f, "%% %s\n", comment);
  fprintf(f, "%d %d %lld\n", A->m, A->n, (long long)A->nnz);
  for (int32_t i = 0; i < A->m; i++)
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) fprintf(f, "%d %d %.17g\n", i + 1, A->colidx[k] + 1, A->val[k]);
  if (ferror(f) | fclose(f)) return fail(err, len, "%s: write failed", path);
  return 0;
}
