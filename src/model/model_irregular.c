/* Irregular model matrices: unstructured-mesh Laplacians in random or
 * space-filling-curve order, power-law and random graphs, a dense row, a
 * 3-dof block operator and a 125-point stencil; prolongators made without
 * a grid (graph aggregation, random columns).  Every matrix is symmetric
 * with a positive, dominant diagonal, and a pure function of its spec and
 * seed: the random choices come from hashes of the seed and of node or
 * edge indices, so rows can be built independently (and in parallel). */
#include "tile_internal.h"
#include "tilerap_model.h"
#include <errno.h>
#include <math.h>
#include <strings.h>

/* ------------------------------------------------------------------ random numbers */
/* splitmix64: a mixer for hashes, and a sequential generator */
static inline uint64_t tr_mix(uint64_t z)
{
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static inline uint64_t tr_next(uint64_t *s) { return tr_mix(*s += 0x9e3779b97f4a7c15ULL); }
static inline double tr_u01(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }
/* uniform in [0, n), n < 2^32 */
static inline uint32_t tr_below(uint64_t x, uint32_t n) { return (uint32_t)(((x >> 32) * (uint64_t)n) >> 32); }
static inline uint64_t tr_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
  return tr_mix(tr_mix(tr_mix(seed + 0x9e3779b97f4a7c15ULL * (a + 1)) + b) + c);
}

/* weight of the undirected edge {a, b} in [0.5, 1.5): the same from both ends */
static inline double tr_edge_weight(uint64_t seed, int64_t a, int64_t b)
{
  return 0.5 + tr_u01(tr_hash(seed, (uint64_t)(a < b ? a : b), (uint64_t)(a < b ? b : a), 17));
}

/* perm[old] = new, a uniform random permutation (Fisher-Yates) */
static void tr_random_perm(int32_t n, uint64_t seed, int32_t *perm)
{
  uint64_t s = tr_mix(seed ^ 0x5851f42d4c957f2dULL);
  for (int32_t i = 0; i < n; i++) perm[i] = i;
  for (int32_t i = n - 1; i > 0; i--) {
    int32_t j = (int32_t)tr_below(tr_next(&s), (uint32_t)i + 1);
    int32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
  }
}

/* ------------------------------------------------------------------ sorting */
static int tr_cmp_i32(const void *a, const void *b)
{
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}
static int tr_cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* sorts cols ascending, vals (may be NULL) carried along: short rows by insertion */
static void tr_sort_row(int32_t *cols, double *vals, int64_t len)
{
  if (!vals && len > 32) { qsort(cols, (size_t)len, sizeof *cols, tr_cmp_i32); return; }
  for (int64_t a = 1; a < len; a++) {
    int32_t c = cols[a];
    double v = vals ? vals[a] : 0.0;
    int64_t b = a - 1;
    while (b >= 0 && cols[b] > c) {
      cols[b + 1] = cols[b];
      if (vals) vals[b + 1] = vals[b];
      b--;
    }
    cols[b + 1] = c;
    if (vals) vals[b + 1] = v;
  }
}

/* ------------------------------------------------------------------ row-wise assembly */
/* A row generator writes row i (columns ascending, at most TR_CAP) and
 * returns its length; tr_build_rows calls it twice per row (count, fill),
 * so rows need no shared state. */
enum { TR_CAP = 128 };
typedef int (*tr_rowfn)(const void *ctx, int32_t i, int32_t *cols, double *vals);

static int tr_build_rows(int32_t n, tr_rowfn fn, const void *ctx, tilerap_csr **Aout)
{
  int64_t *len = tilerap_host_calloc((size_t)n + 1, sizeof *len);
  if (!len) return TILERAP_ERR_NOMEM;
#pragma omp parallel for schedule(static) if (n > TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i < n; i++) {
    int32_t c[TR_CAP];
    double v[TR_CAP];
    len[i + 1] = fn(ctx, i, c, v);
  }
  for (int32_t i = 0; i < n; i++) len[i + 1] += len[i];
  tilerap_csr *A = NULL;
  int err = tilerap_csr_create(n, n, len[n], &A);
  if (err) { free(len); return err; }
  memcpy(A->rowptr, len, ((size_t)n + 1) * sizeof *len);
  free(len);
#pragma omp parallel for schedule(static) if (n > TR_OMP_MIN_ITEMS)
  for (int32_t i = 0; i < n; i++) fn(ctx, i, A->colidx + A->rowptr[i], A->val + A->rowptr[i]);
  *Aout = A;
  return TILERAP_SUCCESS;
}

/* Graph-Laplacian row of new index i from the old ids nb[0..k) of its
 * neighbours (distinct, none equal to old): -w off the diagonal, the sum
 * of the weights plus a shift on it, columns renumbered by perm. */
static const double tr_shift = 1e-2;
static int tr_laplacian_row(uint64_t seed, const int32_t *perm, int32_t i, int64_t old, const int64_t *nb, int k,
                            int32_t *cols, double *vals)
{
  double sum = 0.0;
  for (int q = 0; q < k; q++) {
    double w = tr_edge_weight(seed, old, nb[q]);
    cols[q] = perm[nb[q]];
    vals[q] = -w;
    sum += w;
  }
  cols[k] = i;
  vals[k] = sum + tr_shift;
  tr_sort_row(cols, vals, k + 1);
  return k + 1;
}

/* ------------------------------------------------------------------ node orders */
/* Morton (Z-order) code: bit b of coordinate k goes to bit d*b + k */
static uint64_t tr_morton(int d, const int64_t *x)
{
  uint64_t code = 0;
  for (int b = 0; b < 21; b++)
    for (int k = 0; k < d; k++) code |= (uint64_t)((x[k] >> b) & 1) << (d * b + k);
  return code;
}

/* perm[old] = position along the Z-order curve of the s^d grid (old ids
 * lexicographic, last coordinate fastest).  Codes are distinct, so sorting
 * them and decoding gives the order. */
static int tr_sfc_perm(int d, int64_t s, int32_t n, int32_t *perm)
{
  uint64_t *code = tilerap_host_alloc((size_t)n, sizeof *code);
  if (!code) return TILERAP_ERR_NOMEM;
  for (int32_t g = 0; g < n; g++) {
    int64_t x[3] = {d == 3 ? g / (s * s) : g / s, d == 3 ? (g / s) % s : g % s, g % s};
    code[g] = tr_morton(d, x);
  }
  qsort(code, (size_t)n, sizeof *code, tr_cmp_u64);
  for (int32_t r = 0; r < n; r++) {
    int64_t x[3] = {0, 0, 0};
    for (int b = 0; b < 21; b++)
      for (int k = 0; k < d; k++) x[k] |= (int64_t)((code[r] >> (d * b + k)) & 1) << b;
    int64_t g = d == 3 ? (x[0] * s + x[1]) * s + x[2] : x[0] * s + x[1];
    perm[g] = r;
  }
  free(code);
  return TILERAP_SUCCESS;
}

/* ------------------------------------------------------------------ unstructured meshes */
typedef struct {
  int64_t s;                 /* grid side */
  uint64_t seed;
  const int32_t *perm, *inv; /* old -> new, new -> old */
} tr_mesh_ctx;

/* 2-D: square (a, b) of the s x s grid is cut along (a,b)-(a+1,b+1) or
 * (a+1,b)-(a,b+1) by a coin: degrees 4..8 as on a Delaunay mesh. */
static inline int tr_square_cut(const tr_mesh_ctx *c, int64_t a, int64_t b)
{
  return (int)(tr_hash(c->seed, (uint64_t)a, (uint64_t)b, 2) & 1);
}

static int tr_mesh2d_row(const void *vctx, int32_t i, int32_t *cols, double *vals)
{
  const tr_mesh_ctx *c = vctx;
  int64_t s = c->s, g = c->inv[i], x = g / s, y = g % s, nb[8];
  int k = 0;
  if (x > 0) nb[k++] = g - s;
  if (x < s - 1) nb[k++] = g + s;
  if (y > 0) nb[k++] = g - 1;
  if (y < s - 1) nb[k++] = g + 1;
  /* the diagonals of the four squares around (x, y) that end in it */
  if (x < s - 1 && y < s - 1 && tr_square_cut(c, x, y) == 0) nb[k++] = g + s + 1;
  if (x > 0 && y > 0 && tr_square_cut(c, x - 1, y - 1) == 0) nb[k++] = g - s - 1;
  if (x > 0 && y < s - 1 && tr_square_cut(c, x - 1, y) == 1) nb[k++] = g - s + 1;
  if (x < s - 1 && y > 0 && tr_square_cut(c, x, y - 1) == 1) nb[k++] = g + s - 1;
  return tr_laplacian_row(c->seed, c->perm, i, g, nb, k, cols, vals);
}

/* 3-D: the Kuhn split of a cube into 6 tetrahedra around one body
 * diagonal has an edge between two corners iff they are ordered
 * componentwise; a random reflection r per cube picks the diagonal.
 * Faces shared by cubes of different reflections carry both diagonals:
 * a non-conforming mesh, but the graph is what the products see. */
static int tr_mesh3d_row(const void *vctx, int32_t i, int32_t *cols, double *vals)
{
  const tr_mesh_ctx *c = vctx;
  int64_t s = c->s, g = c->inv[i], x[3] = {g / (s * s), (g / s) % s, g % s}, nb[26];
  uint8_t seen[27] = {0}; /* neighbours by offset in {-1,0,1}^3: corners shared by cubes count once */
  for (int v = 0; v < 8; v++) { /* this node is corner v of the cube at x - v */
    int64_t o[3];
    int ok = 1;
    for (int a = 0; a < 3; a++) {
      o[a] = x[a] - ((v >> a) & 1);
      ok &= o[a] >= 0 && o[a] < s - 1;
    }
    if (!ok) continue;
    int r = (int)(tr_hash(c->seed, (uint64_t)o[0], (uint64_t)((o[1] << 21) | o[2]), 3) & 7);
    for (int u = 0; u < 8; u++) {
      int p = v ^ r, q = u ^ r;
      if (u == v || ((p & ~q) && (q & ~p))) continue; /* incomparable corners */
      int d0 = (u & 1) - (v & 1), d1 = ((u >> 1) & 1) - ((v >> 1) & 1), d2 = ((u >> 2) & 1) - ((v >> 2) & 1);
      seen[(d0 + 1) * 9 + (d1 + 1) * 3 + d2 + 1] = 1;
    }
  }
  int k = 0;
  for (int t = 0; t < 27; t++) /* ascending offsets: ascending old ids */
    if (seen[t]) nb[k++] = g + ((t / 9 - 1) * s + (t / 3 % 3 - 1)) * s + (t % 3 - 1);
  return tr_laplacian_row(c->seed, c->perm, i, g, nb, k, cols, vals);
}

static int tr_gen_mesh(int d, int64_t N, int sfc, uint64_t seed, tilerap_csr **A)
{
  int64_t s = d == 2 ? llround(sqrt((double)N)) : llround(cbrt((double)N));
  if (s < 1) s = 1;
  int64_t n = d == 2 ? s * s : s * s * s;
  if (n > INT32_MAX) return tilerap_set_error(TILERAP_ERR_SIZE, "mesh%dd: %lld nodes exceed int32", d, (long long)n);
  int32_t *perm = tilerap_host_alloc((size_t)n, sizeof *perm), *inv = tilerap_host_alloc((size_t)n, sizeof *inv);
  int err = (!perm || !inv) ? TILERAP_ERR_NOMEM : TILERAP_SUCCESS;
  if (!err) {
    if (sfc) err = tr_sfc_perm(d, s, (int32_t)n, perm);
    else tr_random_perm((int32_t)n, seed, perm);
  }
  if (!err) {
    for (int32_t g = 0; g < n; g++) inv[perm[g]] = g;
    tr_mesh_ctx c = {s, seed, perm, inv};
    err = tr_build_rows((int32_t)n, d == 2 ? tr_mesh2d_row : tr_mesh3d_row, &c, A);
  }
  free(perm); free(inv);
  return err;
}

/* ------------------------------------------------------------------ graphs from edge lists */
/* Symmetric matrix of the undirected edges (ei[e], ej[e]) (self loops
 * skipped, duplicates merged): -w off the diagonal with w the edge weight,
 * its sign random if signed_vals; the diagonal the sum of |w| plus a shift. */
static int tr_from_edges(int32_t n, int64_t ne, const int32_t *ei, const int32_t *ej, uint64_t seed, int signed_vals,
                         tilerap_csr **Aout)
{
  int64_t *beg = tilerap_host_calloc((size_t)n + 1, sizeof *beg), *cur = tilerap_host_alloc((size_t)n + 1, sizeof *cur);
  int32_t *adj = tilerap_host_alloc((size_t)(2 * ne), sizeof *adj);
  tilerap_csr *A = NULL;
  int err = (!beg || !cur || !adj) ? TILERAP_ERR_NOMEM : TILERAP_SUCCESS;
  if (err) goto done;
  for (int64_t e = 0; e < ne; e++)
    if (ei[e] != ej[e]) { beg[ei[e] + 1]++; beg[ej[e] + 1]++; }
  for (int32_t i = 0; i < n; i++) beg[i + 1] += beg[i];
  memcpy(cur, beg, ((size_t)n + 1) * sizeof *cur);
  for (int64_t e = 0; e < ne; e++)
    if (ei[e] != ej[e]) { adj[cur[ei[e]]++] = ej[e]; adj[cur[ej[e]]++] = ei[e]; }
  /* rows sorted and deduplicated in place (cur[i]: row i's distinct
   * neighbours), then one diagonal each */
  for (int32_t i = 0; i < n; i++) {
    int32_t *r = adj + beg[i];
    int64_t l = beg[i + 1] - beg[i], m = 0;
    tr_sort_row(r, NULL, l);
    for (int64_t q = 0; q < l; q++)
      if (m == 0 || r[q] != r[m - 1]) r[m++] = r[q];
    cur[i] = m;
  }
  int64_t nnz = n;
  for (int32_t i = 0; i < n; i++) nnz += cur[i];
  err = tilerap_csr_create(n, n, nnz, &A);
  if (err) goto done;
  for (int32_t i = 0; i < n; i++) {
    const int32_t *r = adj + beg[i];
    int64_t q = A->rowptr[i], dpos = -1;
    double sum = 0.0;
    for (int64_t t = 0; t < cur[i]; t++) {
      if (dpos < 0 && r[t] > i) dpos = q++; /* the diagonal's slot */
      uint64_t h = tr_hash(seed, (uint64_t)(i < r[t] ? i : r[t]), (uint64_t)(i < r[t] ? r[t] : i), 5);
      double w = 0.5 + tr_u01(h);
      A->colidx[q] = r[t];
      A->val[q] = (signed_vals && (h & 1)) ? w : -w;
      sum += w;
      q++;
    }
    if (dpos < 0) dpos = q++;
    A->colidx[dpos] = i;
    A->val[dpos] = sum + tr_shift;
    A->rowptr[i + 1] = q;
  }
  *Aout = A;
done:
  free(beg); free(cur); free(adj);
  return err;
}

/* Chung-Lu graph: expected degree w_i ~ (i+1)^(-1/(gamma-1)), gamma = 2.5,
 * scaled to mean 8 with the largest capped at 4 sqrt(n); about sum(w)/2
 * edges whose two ends are each drawn with probability w_i / sum(w)
 * (cumulative table, binary search).  Nodes renumbered at random so the
 * hubs are not the first rows. */
static int tr_gen_powerlaw(int32_t n, uint64_t seed, tilerap_csr **A)
{
  double *w = tilerap_host_alloc((size_t)n, sizeof *w), *cum = tilerap_host_alloc((size_t)n, sizeof *cum);
  int32_t *perm = tilerap_host_alloc((size_t)n, sizeof *perm), *ei = NULL, *ej = NULL;
  int err = (!w || !cum || !perm) ? TILERAP_ERR_NOMEM : TILERAP_SUCCESS;
  if (err) goto done;
  double cap = 4.0 * sqrt((double)n), c = 1.0, tot = 0.0;
  if (cap > n - 1) cap = n - 1;
  for (int32_t i = 0; i < n; i++) w[i] = pow((double)i + 1.0, -1.0 / (2.5 - 1.0));
  for (int it = 0; it < 30; it++) { /* scale c so that sum(min(c w, cap)) = 8 n */
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += fmin(c * w[i], cap);
    if (sum <= 0.0) break;
    c *= 8.0 * n / sum;
  }
  for (int32_t i = 0; i < n; i++) { tot += fmin(c * w[i], cap); cum[i] = tot; }
  int64_t ne = n > 1 ? (int64_t)llround(tot / 2.0) : 0;
  ei = tilerap_host_alloc((size_t)ne + 1, sizeof *ei);
  ej = tilerap_host_alloc((size_t)ne + 1, sizeof *ej);
  if (!ei || !ej) { err = TILERAP_ERR_NOMEM; goto done; }
  tr_random_perm(n, seed, perm);
  uint64_t s = tr_mix(seed ^ 0x1234567890abcdefULL);
  for (int64_t e = 0; e < 2 * ne; e++) {
    double u = tr_u01(tr_next(&s)) * tot;
    int32_t lo = 0, hi = n - 1; /* first i with cum[i] > u */
    while (lo < hi) {
      int32_t mid = lo + (hi - lo) / 2;
      if (cum[mid] > u) hi = mid;
      else lo = mid + 1;
    }
    if (e < ne) ei[e] = perm[lo];
    else ej[e - ne] = perm[lo];
  }
  err = tr_from_edges(n, ne, ei, ej, seed, 0, A);
done:
  free(w); free(cum); free(perm); free(ei); free(ej);
  return err;
}

/* Random symmetric matrix: 4 random partners a row, symmetrised (about 9
 * entries a row), off-diagonal signs random. */
static int tr_gen_random(int32_t n, uint64_t seed, tilerap_csr **A)
{
  int64_t ne = n > 1 ? 4 * (int64_t)n : 0;
  int32_t *ei = tilerap_host_alloc((size_t)ne + 1, sizeof *ei), *ej = tilerap_host_alloc((size_t)ne + 1, sizeof *ej);
  int err = (!ei || !ej) ? TILERAP_ERR_NOMEM : TILERAP_SUCCESS;
  if (!err) {
    uint64_t s = tr_mix(seed ^ 0x2545f4914f6cdd1dULL);
    for (int64_t e = 0; e < ne; e++) {
      int32_t i = (int32_t)(e / 4), j = (int32_t)tr_below(tr_next(&s), (uint32_t)n - 1);
      ei[e] = i;
      ej[e] = j >= i ? j + 1 : j; /* never i itself */
    }
    err = tr_from_edges(n, ne, ei, ej, seed, 1, A);
  }
  free(ei); free(ej);
  return err;
}

/* ------------------------------------------------------------------ structured, with a twist */
/* 5-point Poisson on an s x s grid plus node c = n/2 coupled to all nodes
 * by -1e-3 (a dense row and column, as a global constraint would give);
 * diagonals 4 + the dense coupling (the dense row's: its off-diagonal sum
 * plus a shift). */
static int tr_gen_denserow(int64_t N, tilerap_csr **Aout)
{
  const double eps = 1e-3;
  int64_t s = llround(sqrt((double)N));
  if (s < 1) s = 1;
  if (s * s > INT32_MAX) return tilerap_set_error(TILERAP_ERR_SIZE, "denserow: %lld rows exceed int32", (long long)(s * s));
  int32_t n = (int32_t)(s * s), c = n / 2;
  tilerap_csr *A = NULL;
  int err = tilerap_csr_create(n, n, 7 * (int64_t)n, &A); /* 5 + 1 a row + the dense row, an upper bound */
  if (err) return err;
  int64_t q = 0;
  for (int32_t i = 0; i < n; i++) {
    int64_t x = i / s, y = i % s;
    if (i == c) { /* its diagonal: the sum of the others as added, plus a shift, so dominant after rounding */
      double sum = 0.0;
      for (int32_t j = 0; j < n; j++) {
        int64_t dx = j / s - x, dy = j % s - y;
        int grid = (dx == 0 && (dy == 1 || dy == -1)) || (dy == 0 && (dx == 1 || dx == -1));
        A->colidx[q] = j;
        A->val[q] = j == c ? 0.0 : grid ? -1.0 - eps : -eps;
        sum -= A->val[q];
        q++;
      }
      A->val[A->rowptr[i] + c] = sum + tr_shift;
    } else {
      int32_t cols[6];
      double vals[6];
      int k = 0;
      if (x > 0) { cols[k] = i - (int32_t)s; vals[k++] = -1.0; }
      if (y > 0) { cols[k] = i - 1; vals[k++] = -1.0; }
      cols[k] = i; vals[k++] = 4.0 + eps;
      if (y < s - 1) { cols[k] = i + 1; vals[k++] = -1.0; }
      if (x < s - 1) { cols[k] = i + (int32_t)s; vals[k++] = -1.0; }
      int a = 0;
      while (a < k && cols[a] < c) a++;
      if (a < k && cols[a] == c) vals[a] -= eps;
      else { /* insert c at a */
        for (int b = k; b > a; b--) { cols[b] = cols[b - 1]; vals[b] = vals[b - 1]; }
        cols[a] = c; vals[a] = -eps; k++;
      }
      memcpy(A->colidx + q, cols, (size_t)k * sizeof *cols);
      memcpy(A->val + q, vals, (size_t)k * sizeof *vals);
      q += k;
    }
    A->rowptr[i + 1] = q;
  }
  A->nnz = q;
  *Aout = A;
  return TILERAP_SUCCESS;
}

typedef struct {
  int64_t s;    /* node grid side */
  int r;        /* stencil radius */
  uint64_t seed;
} tr_stencil_ctx;

/* Elasticity-like: 3 dofs a node (interleaved), a 3x3 block for each pair
 * of nodes of the 27-point stencil.  The block of nodes p < q is random
 * (its diagonal negative, as in a vector Laplacian), that of q, p its
 * transpose; the diagonal block symmetric, its diagonal the row's sum of
 * |entries| plus a shift. */
static double tr_elast_entry(uint64_t seed, int64_t p, int64_t q, int a, int b)
{
  if (p > q) { int64_t t = p; p = q; q = t; int u = a; a = b; b = u; }
  if (p == q && a > b) { int u = a; a = b; b = u; }
  double u = tr_u01(tr_hash(seed, (uint64_t)p, (uint64_t)q, (uint64_t)(3 * a + b + 7)));
  if (p == q) return 0.5 * (u - 0.5);
  return a == b ? -(0.5 + u) : u - 0.5;
}

static int tr_elast_row(const void *vctx, int32_t i, int32_t *cols, double *vals)
{
  const tr_stencil_ctx *c = vctx;
  int64_t s = c->s, p = i / 3, x = p / (s * s), y = (p / s) % s, z = p % s;
  int a = i % 3, k = 0, d = -1;
  double sum = 0.0;
  for (int64_t xx = x - 1; xx <= x + 1; xx++)
    for (int64_t yy = y - 1; yy <= y + 1; yy++)
      for (int64_t zz = z - 1; zz <= z + 1; zz++) {
        if (xx < 0 || xx >= s || yy < 0 || yy >= s || zz < 0 || zz >= s) continue;
        int64_t q = (xx * s + yy) * s + zz;
        for (int b = 0; b < 3; b++) {
          cols[k] = (int32_t)(3 * q + b);
          if (q == p && b == a) d = k;
          else { vals[k] = tr_elast_entry(c->seed, p, q, a, b); sum += fabs(vals[k]); }
          k++;
        }
      }
  vals[d] = sum + 0.1;
  return k;
}

/* (2r+1)^3-point stencil, -1 off the diagonal, (2r+1)^3 - 1 on it */
static int tr_wide_row(const void *vctx, int32_t i, int32_t *cols, double *vals)
{
  const tr_stencil_ctx *c = vctx;
  int64_t s = c->s, x = i / (s * s), y = (i / s) % s, z = i % s, w = 2 * c->r + 1;
  int k = 0;
  for (int64_t xx = x - c->r; xx <= x + c->r; xx++)
    for (int64_t yy = y - c->r; yy <= y + c->r; yy++)
      for (int64_t zz = z - c->r; zz <= z + c->r; zz++) {
        if (xx < 0 || xx >= s || yy < 0 || yy >= s || zz < 0 || zz >= s) continue;
        int64_t j = (xx * s + yy) * s + zz;
        cols[k] = (int32_t)j;
        vals[k] = j == i ? (double)(w * w * w - 1) : -1.0;
        k++;
      }
  return k;
}

static int tr_gen_stencil(int64_t N, int dofs, int r, uint64_t seed, tilerap_csr **A)
{
  int64_t s = llround(cbrt((double)N / dofs));
  if (s < 1) s = 1;
  if (dofs * s * s * s > INT32_MAX)
    return tilerap_set_error(TILERAP_ERR_SIZE, "%lld rows exceed int32", (long long)(dofs * s * s * s));
  tr_stencil_ctx c = {s, r, seed};
  return tr_build_rows((int32_t)(dofs * s * s * s), dofs == 3 ? tr_elast_row : tr_wide_row, &c, A);
}

/* ------------------------------------------------------------------ spec */
int tilerap_model_irregular(const char *spec, uint64_t seed, tilerap_csr **A)
{
  static const char *usage = "mesh2d:N[:random|sfc], mesh3d:N[:random|sfc], powerlaw:N, random:N, denserow:N, "
                             "elast:N, s125:N";
  if (!spec || !A) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_model_irregular: NULL argument");
  *A = NULL;
  char name[32], order[32] = "";
  const char *c1 = strchr(spec, ':');
  if (!c1 || c1 - spec >= (ptrdiff_t)sizeof name)
    return tilerap_set_error(TILERAP_ERR_INVALID, "irregular matrix '%s': expected NAME:N[:ORDER] (%s)", spec, usage);
  memcpy(name, spec, (size_t)(c1 - spec));
  name[c1 - spec] = '\0';
  char *end;
  errno = 0;
  long long N = strtoll(c1 + 1, &end, 10);
  if (end == c1 + 1 || (*end && *end != ':') || errno || N < 1)
    return tilerap_set_error(TILERAP_ERR_INVALID, "irregular matrix '%s': N must be an integer >= 1", spec);
  if (N > INT32_MAX) return tilerap_set_error(TILERAP_ERR_SIZE, "irregular matrix '%s': N exceeds int32", spec);
  if (*end == ':') {
    if (strlen(end + 1) >= sizeof order || !end[1])
      return tilerap_set_error(TILERAP_ERR_INVALID, "irregular matrix '%s': bad ORDER (random, sfc)", spec);
    strcpy(order, end + 1);
  }
  int mesh = !strcasecmp(name, "mesh2d") ? 2 : !strcasecmp(name, "mesh3d") ? 3 : 0;
  if (mesh) {
    int sfc = !strcasecmp(order, "sfc");
    if (!sfc && *order && strcasecmp(order, "random"))
      return tilerap_set_error(TILERAP_ERR_INVALID, "irregular matrix '%s': unknown ORDER '%s' (random, sfc)", spec, order);
    return tr_gen_mesh(mesh, N, sfc, seed, A);
  }
  static const char *others[] = {"powerlaw", "random", "denserow", "elast", "s125"};
  int which = -1;
  for (int k = 0; k < 5; k++)
    if (!strcasecmp(name, others[k])) which = k;
  if (which < 0) return tilerap_set_error(TILERAP_ERR_INVALID, "irregular matrix '%s': unknown NAME '%s' (%s)", spec, name, usage);
  if (*order) return tilerap_set_error(TILERAP_ERR_INVALID, "irregular matrix '%s': %s takes no ORDER", spec, name);
  switch (which) {
  case 0: return tr_gen_powerlaw((int32_t)N, seed, A);
  case 1: return tr_gen_random((int32_t)N, seed, A);
  case 2: return tr_gen_denserow(N, A);
  case 3: return tr_gen_stencil(N, 3, 1, seed, A);
  default: return tr_gen_stencil(N, 1, 2, seed, A);
  }
}

/* ------------------------------------------------------------------ prolongators */
/* dense[i] = 1 for rows longer than 8 times the mean row length: both
 * prolongators keep such nodes apart (their own aggregate, or a C point) */
static void tr_mark_dense_rows(const tilerap_csr *A, uint8_t *dense)
{
  const double mean = A->m ? (double)A->rowptr[A->m] / A->m : 0.0;
  for (int32_t i = 0; i < A->m; i++) dense[i] = (double)(A->rowptr[i + 1] - A->rowptr[i]) > 8.0 * mean;
}

int tilerap_model_sa_prolongator(const tilerap_csr *A, double omega, tilerap_csr **Pout)
{
  if (!A || !Pout) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_model_sa_prolongator: NULL argument");
  *Pout = NULL;
  if (A->m != A->n) return tilerap_set_error(TILERAP_ERR_SIZE, "sa_prolongator: A is %d x %d, not square", A->m, A->n);
  int err = tilerap_csr_check(A->m, A->n, A->rowptr, A->colidx);
  if (err) return err;
  int32_t n = A->m, nc = 0;
  const int64_t *rp = A->rowptr;
  const int32_t *ci = A->colidx;
  int32_t *agg = tilerap_host_alloc((size_t)n + 1, sizeof *agg), *join = tilerap_host_alloc((size_t)n + 1, sizeof *join);
  uint8_t *dense = tilerap_host_calloc((size_t)n + 1, 1);
  int64_t *mark = NULL;
  double *acc = NULL;
  tilerap_csr *P = NULL;
  if (!agg || !join || !dense) { err = TILERAP_ERR_NOMEM; goto done; }
  /* aggregates are held by their root node until numbered */
  tr_mark_dense_rows(A, dense);
  for (int32_t i = 0; i < n; i++) agg[i] = dense[i] ? i : -1;
  /* neighbours: the off-diagonal entries of a row that are not dense nodes */
  /* pass 1: roots whose neighbours are all free take them */
  for (int32_t i = 0; i < n; i++) {
    if (agg[i] >= 0) continue;
    int free_ = 1;
    for (int64_t p = rp[i]; p < rp[i + 1] && free_; p++)
      if (ci[p] != i && !dense[ci[p]]) free_ = agg[ci[p]] < 0;
    if (!free_) continue;
    agg[i] = i;
    for (int64_t p = rp[i]; p < rp[i + 1]; p++)
      if (ci[p] != i && !dense[ci[p]]) agg[ci[p]] = i;
  }
  /* pass 2: the others join the first pass-1 aggregate next to them */
  for (int32_t i = 0; i < n; i++) {
    join[i] = -1;
    if (agg[i] >= 0) continue;
    for (int64_t p = rp[i]; p < rp[i + 1] && join[i] < 0; p++)
      if (ci[p] != i && !dense[ci[p]]) join[i] = agg[ci[p]];
  }
  for (int32_t i = 0; i < n; i++)
    if (agg[i] < 0) agg[i] = join[i];
  /* pass 3: what is left (nothing after a full pass 1; kept for safety) */
  for (int32_t i = 0; i < n; i++) {
    if (agg[i] >= 0) continue;
    agg[i] = i;
    for (int64_t p = rp[i]; p < rp[i + 1]; p++)
      if (ci[p] != i && !dense[ci[p]] && agg[ci[p]] < 0) agg[ci[p]] = i;
  }
  /* number the aggregates in the order of their roots */
  for (int32_t i = 0; i < n; i++) join[i] = agg[i] == i ? nc++ : -1;
  for (int32_t i = 0; i < n; i++) agg[i] = join[agg[i]];

  /* P = (I - omega D^-1 A_F) T row by row (A_F: A without the couplings
   * of dense nodes): count, then fill */
  mark = tilerap_host_alloc((size_t)nc + 1, sizeof *mark);
  acc = tilerap_host_alloc((size_t)nc + 1, sizeof *acc);
  int64_t *len = tilerap_host_calloc((size_t)n + 1, sizeof *len);
  int32_t *cols = tilerap_host_alloc((size_t)nc + 1, sizeof *cols);
  if (!mark || !acc || !len || !cols) { free(len); free(cols); err = TILERAP_ERR_NOMEM; goto done; }
  for (int pass = 0; pass < 2; pass++) {
    for (int32_t g = 0; g < nc; g++) mark[g] = -1;
    for (int32_t i = 0; i < n; i++) {
      double dii = 0.0;
      for (int64_t p = rp[i]; p < rp[i + 1]; p++)
        if (ci[p] == i) dii = A->val[p];
      if (dii == 0.0) {
        err = tilerap_set_error(TILERAP_ERR_INVALID, "sa_prolongator: row %d of A has no (non-zero) diagonal", i);
        break;
      }
      int64_t k = 0;
      for (int64_t p = rp[i]; p <= rp[i + 1]; p++) {
        /* couplings with dense nodes are filtered out of the smoothing (as
         * AMG codes drop weak couplings): smoothing through a hub would
         * spread its aggregate over every neighbour and fill C */
        if (p < rp[i + 1] && ci[p] != i && (dense[i] || dense[ci[p]])) continue;
        int32_t g = p < rp[i + 1] ? agg[ci[p]] : agg[i];
        double v = p < rp[i + 1] ? -omega * A->val[p] / dii : 1.0; /* last: T's own entry */
        if (mark[g] != i) { mark[g] = i; acc[g] = 0.0; cols[k++] = g; }
        acc[g] += v;
      }
      int64_t m = 0;
      for (int64_t t = 0; t < k; t++)
        if (acc[cols[t]] != 0.0) cols[m++] = cols[t];
      if (pass == 0) { len[i + 1] = len[i] + m; continue; }
      int32_t *pc = P->colidx + P->rowptr[i];
      memcpy(pc, cols, (size_t)m * sizeof *cols);
      tr_sort_row(pc, NULL, m);
      for (int64_t t = 0; t < m; t++) P->val[P->rowptr[i] + t] = acc[pc[t]];
    }
    if (err) break;
    if (pass == 0) {
      err = tilerap_csr_create(n, nc, len[n], &P);
      if (err) break;
      memcpy(P->rowptr, len, ((size_t)n + 1) * sizeof *len);
    }
  }
  free(len); free(cols);
  if (!err) { *Pout = P; P = NULL; }
done:
  free(agg); free(join); free(dense); free(mark); free(acc);
  tilerap_csr_destroy(&P);
  return err;
}

int tilerap_model_random_prolongator(int32_t n, int32_t nc, int per_row, uint64_t seed, tilerap_csr **Pout)
{
  if (!Pout) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_model_random_prolongator: NULL output");
  *Pout = NULL;
  if (n < 0 || nc < 1 || per_row < 1)
    return tilerap_set_error(TILERAP_ERR_INVALID, "random_prolongator: n = %d, nc = %d, per_row = %d (need n >= 0, nc >= 1, per_row >= 1)",
                             n, nc, per_row);
  int32_t k = per_row < nc ? per_row : nc;
  /* rows perm^-1[0..nc) own column perm position: every column is hit when nc <= n */
  int32_t *perm = tilerap_host_alloc((size_t)n + 1, sizeof *perm);
  tilerap_csr *P = NULL;
  int err = perm ? tilerap_csr_create(n, nc, (int64_t)n * k, &P) : TILERAP_ERR_NOMEM;
  if (err) { free(perm); return err; }
  tr_random_perm(n, seed, perm);
  for (int32_t i = 0; i < n; i++) {
    int32_t *c = P->colidx + (int64_t)i * k, f = perm[i] < nc ? perm[i] : -1, m = 0;
    double *v = P->val + (int64_t)i * k;
    uint64_t s = tr_hash(seed, (uint64_t)i, 0, 11);
    if (k == nc) {
      for (int32_t j = 0; j < nc; j++) c[m++] = j;
    } else {
      /* Floyd's sample of the k (k-1 besides f) columns, f skipped */
      int32_t pool = f >= 0 ? nc - 1 : nc, want = f >= 0 ? k - 1 : k;
      if (f >= 0) c[m++] = f;
      for (int32_t j = pool - want; j < pool; j++) {
        int32_t t = (int32_t)tr_below(tr_next(&s), (uint32_t)j + 1), tc, jc, hit = 0;
        tc = f >= 0 && t >= f ? t + 1 : t;
        jc = f >= 0 && j >= f ? j + 1 : j;
        for (int32_t a = 0; a < m; a++) hit |= c[a] == tc;
        c[m++] = hit ? jc : tc;
      }
    }
    tr_sort_row(c, NULL, m);
    for (int32_t a = 0; a < m; a++) v[a] = 0.1 + 0.9 * tr_u01(tr_next(&s));
    P->rowptr[i + 1] = P->rowptr[i] + m;
  }
  free(perm);
  *Pout = P;
  return TILERAP_SUCCESS;
}

/* ------------------------------------------------------------------ classical prolongator */
/* strength: j != i with |a_ij| >= theta max_k!=i |a_ik|, couplings to dense
 * nodes left out; S as CSR (sp, sj) */
static int tr_strength(const tilerap_csr *A, double theta, const uint8_t *dense, int64_t **sp_out, int32_t **sj_out)
{
  const int32_t n = A->m;
  int64_t *sp = tilerap_host_calloc((size_t)n + 1, sizeof *sp);
  int32_t *sj = tilerap_host_alloc((size_t)A->nnz + 1, sizeof *sj);
  if (!sp || !sj) { free(sp); free(sj); return TILERAP_ERR_NOMEM; }
  for (int32_t i = 0; i < n; i++) {
    double mx = 0;
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
      if (A->colidx[k] != i && !dense[A->colidx[k]] && fabs(A->val[k]) > mx) mx = fabs(A->val[k]);
    sp[i + 1] = sp[i];
    if (dense[i]) continue; /* dense nodes depend on nobody: they become C points */
    for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
      const int32_t j = A->colidx[k];
      if (j != i && !dense[j] && mx > 0 && fabs(A->val[k]) >= theta * mx) sj[sp[i + 1]++] = j;
    }
  }
  *sp_out = sp; *sj_out = sj;
  return TILERAP_SUCCESS;
}

int tilerap_model_classical_prolongator(const tilerap_csr *A, double theta, uint64_t seed, tilerap_csr **Pout)
{
  if (!A || !Pout) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_model_classical_prolongator: NULL argument");
  *Pout = NULL;
  if (A->m != A->n) return tilerap_set_error(TILERAP_ERR_SIZE, "classical prolongator: A is %d x %d, not square", A->m, A->n);
  if (!(theta > 0 && theta <= 1))
    return tilerap_set_error(TILERAP_ERR_INVALID, "classical prolongator: theta %g outside (0, 1]", theta);
  int err = tilerap_csr_check(A->m, A->n, A->rowptr, A->colidx);
  if (err) return err;
  const int32_t n = A->m;
  uint8_t *dense = tilerap_host_calloc((size_t)n + 1, 1);
  int8_t *state = tilerap_host_calloc((size_t)n + 1, 1); /* 0 undecided, 1 C, -1 F */
  double *lambda = tilerap_host_alloc((size_t)n + 1, sizeof *lambda);
  int32_t *cnum = tilerap_host_alloc((size_t)n + 1, sizeof *cnum), *mark = NULL, *cols = NULL;
  int64_t *sp = NULL, *tp = NULL;
  int32_t *sj = NULL, *tj = NULL;
  double *w = NULL;
  tilerap_csr *P = NULL;
  if (!dense || !state || !lambda || !cnum) { err = TILERAP_ERR_NOMEM; goto done; }
  tr_mark_dense_rows(A, dense);
  if ((err = tr_strength(A, theta, dense, &sp, &sj))) goto done;
  /* S^T: who depends on each node */
  tp = tilerap_host_calloc((size_t)n + 1, sizeof *tp);
  tj = tilerap_host_alloc((size_t)sp[n] + 1, sizeof *tj);
  if (!tp || !tj) { err = TILERAP_ERR_NOMEM; goto done; }
  for (int64_t k = 0; k < sp[n]; k++) tp[sj[k] + 1]++;
  for (int32_t i = 0; i < n; i++) tp[i + 1] += tp[i];
  {
    int64_t *cur = tilerap_host_alloc((size_t)n + 1, sizeof *cur);
    if (!cur) { err = TILERAP_ERR_NOMEM; goto done; }
    memcpy(cur, tp, ((size_t)n + 1) * sizeof *cur);
    for (int32_t i = 0; i < n; i++)
      for (int64_t k = sp[i]; k < sp[i + 1]; k++) tj[cur[sj[k]]++] = i;
    free(cur);
  }
  /* PMIS: measure = points influenced + a random fraction; isolated points are F */
  for (int32_t i = 0; i < n; i++) {
    lambda[i] = (double)(tp[i + 1] - tp[i]) + tr_u01(tr_hash(seed, (uint64_t)i, 0, 29));
    if (dense[i]) state[i] = 1;
    else if (tp[i + 1] == tp[i] && sp[i + 1] == sp[i]) state[i] = -1;
  }
  for (int round = 0;; round++) {
    int64_t undecided = 0;
    for (int32_t i = 0; i < n; i++) {
      if (state[i]) continue;
      int best = 1;
      for (int64_t k = sp[i]; k < sp[i + 1] && best; k++) best = state[sj[k]] || lambda[sj[k]] < lambda[i];
      for (int64_t k = tp[i]; k < tp[i + 1] && best; k++) best = state[tj[k]] || lambda[tj[k]] < lambda[i];
      if (best) state[i] = 2; /* new C point of this round */
    }
    for (int32_t i = 0; i < n; i++)
      if (state[i] == 2) {
        state[i] = 1;
        for (int64_t k = tp[i]; k < tp[i + 1]; k++) /* points that depend strongly on i */
          if (!state[tj[k]]) state[tj[k]] = -1;
      }
    for (int32_t i = 0; i < n; i++) undecided += !state[i];
    if (!undecided) break;
    if (round > n) { err = tilerap_set_error(TILERAP_ERR_INVALID, "classical prolongator: PMIS did not finish"); goto done; }
  }
  int32_t nc = 0;
  for (int32_t i = 0; i < n; i++) cnum[i] = state[i] == 1 ? nc++ : -1;
  if (nc == 0) { state[0] = 1; cnum[0] = 0; nc = 1; } /* a P needs a column */
  /* extended interpolation: an F point takes its strong C neighbours and
   * the strong C neighbours of its strong F neighbours, weights |a_ij|
   * plus |a_ik| |a_kj| / sum_l |a_kl| through each such k, scaled to sum 1 */
  mark = tilerap_host_alloc((size_t)nc + 1, sizeof *mark);
  cols = tilerap_host_alloc((size_t)nc + 1, sizeof *cols);
  w = tilerap_host_calloc((size_t)nc + 1, sizeof *w);
  if (!mark || !cols || !w) { err = TILERAP_ERR_NOMEM; goto done; }
  for (int32_t c = 0; c < nc; c++) mark[c] = -1;
  for (int pass = 0; pass < 2; pass++) {
    int64_t q = 0;
    for (int32_t i = 0; i < n; i++) {
      int32_t m = 0;
      if (cnum[i] >= 0) {
        cols[m++] = cnum[i];
        w[cnum[i]] = 1.0;
      } else {
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
          const int32_t j = A->colidx[k];
          if (j == i) continue;
          int strong = 0;
          for (int64_t s = sp[i]; s < sp[i + 1] && !strong; s++) strong = sj[s] == j;
          if (!strong) continue;
          if (cnum[j] >= 0) {
            if (mark[cnum[j]] != i) { mark[cnum[j]] = i; cols[m++] = cnum[j]; w[cnum[j]] = 0; }
            w[cnum[j]] += fabs(A->val[k]);
          } else { /* strong F neighbour: through its strong C neighbours */
            double den = 0;
            for (int64_t l = A->rowptr[j]; l < A->rowptr[j + 1]; l++)
              if (A->colidx[l] != j && cnum[A->colidx[l]] >= 0) den += fabs(A->val[l]);
            if (den <= 0) continue;
            for (int64_t l = A->rowptr[j]; l < A->rowptr[j + 1]; l++) {
              const int32_t c = A->colidx[l] != j ? cnum[A->colidx[l]] : -1;
              if (c < 0) continue;
              if (mark[c] != i) { mark[c] = i; cols[m++] = c; w[c] = 0; }
              w[c] += fabs(A->val[k]) * fabs(A->val[l]) / den;
            }
          }
        }
      }
      if (pass == 1) {
        double sum = 0;
        for (int32_t a = 0; a < m; a++) sum += w[cols[a]];
        tr_sort_row(cols, NULL, m);
        for (int32_t a = 0; a < m; a++) {
          P->colidx[q + a] = cols[a];
          P->val[q + a] = w[cols[a]] / sum;
        }
        P->rowptr[i + 1] = q + m;
      }
      for (int32_t a = 0; a < m; a++) mark[cols[a]] = -1;
      q += m;
    }
    if (pass == 0 && (err = tilerap_csr_create(n, nc, q, &P))) goto done;
  }
  *Pout = P;
  P = NULL;
done:
  tilerap_csr_destroy(&P);
  free(dense); free(state); free(lambda); free(cnum); free(mark); free(cols); free(w);
  free(sp); free(sj); free(tp); free(tj);
  return err;
}
