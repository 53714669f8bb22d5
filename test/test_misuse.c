/* Misuse of the core API, found by construction rather than by example:
 * random operands of several kinds (random sparse, power-law rows, a dense
 * row and column, empty rows, 3x3 blocks; odd sizes; rectangular and
 * tall-skinny P), and for each one operands that keep every count of the
 * plan's (rows, columns, tiles, entries) but move one entry inside its
 * tile.  Every numeric phase (A*B, A^T*B, P^T*A*P; each engine present)
 * must refuse them with TILERAP_ERR_STRUCTURE and leave C as it was, and
 * must accept the same structure from another conversion.  Values
 * refreshes get corrupted row pointers and must leave the matrix as it
 * was; every plan entry point gets the same option checks; unknown
 * environment values are errors; a matrix of INT_MAX rows converts. */
#define _GNU_SOURCE /* memfd_create */
#include "ref_gustavson.h"
#include "tilerap_csr_layouts.h"
#include "tilerap_device.h"
#include "tap.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t g_seed = 20261126;

static int32_t rnd(int32_t n) { return (int32_t)(ref_rand01(&g_seed) * n) % (n > 0 ? n : 1); }

/* ---------------------------------------------------------------- operands */
/* CSR from a row-major 0/1 pattern (values random). */
static tilerap_csr *from_pattern(int32_t m, int32_t n, const unsigned char *pat)
{
  int64_t nnz = 0;
  for (int64_t k = 0; k < (int64_t)m * n; k++) nnz += pat[k];
  tilerap_csr *A = NULL;
  if (tilerap_csr_create(m, n, nnz, &A)) abort();
  int64_t q = 0;
  for (int32_t i = 0; i < m; i++) {
    for (int32_t j = 0; j < n; j++)
      if (pat[(int64_t)i * n + j]) { A->colidx[q] = j; A->val[q++] = 2.0 * ref_rand01(&g_seed) - 1.0; }
    A->rowptr[i + 1] = q;
  }
  return A;
}

enum { K_RANDOM, K_POWER, K_DENSE_ROW, K_EMPTY_ROWS, K_BLOCKS, K_KINDS };
static const char *const kind_name[K_KINDS] = {"random", "power-law rows", "dense row and column", "empty rows",
                                               "3x3 blocks"};

static tilerap_csr *gen_square(int kind, int32_t n)
{
  unsigned char *pat = calloc((size_t)n * n, 1);
  if (!pat) abort();
  for (int32_t i = 0; i < n; i++) {
    pat[(int64_t)i * n + i] = kind != K_EMPTY_ROWS || i % 3;
    int deg = kind == K_POWER ? 1 + (int)(40.0 / pow(1.0 + rnd(n), 0.9)) : 4;
    if (kind == K_EMPTY_ROWS && i % 3 == 0) deg = 0;
    for (int d = 0; d < deg; d++) {
      const int32_t j = rnd(n);
      pat[(int64_t)i * n + j] = pat[(int64_t)j * n + i] = 1;
    }
    if (kind == K_BLOCKS)
      for (int32_t a = 0; a < 3; a++)
        for (int32_t b = 0; b < 3; b++)
          if (3 * (i / 3) + a < n && 3 * (i / 3) + b < n) pat[(int64_t)(3 * (i / 3) + a) * n + 3 * (i / 3) + b] = 1;
  }
  if (kind == K_DENSE_ROW)
    for (int32_t j = 0; j < n; j++) pat[j] = pat[(int64_t)j * n] = 1;
  tilerap_csr *A = from_pattern(n, n, pat);
  free(pat);
  return A;
}

/* interpolation-like: 1-3 entries a row, some rows empty */
static tilerap_csr *gen_p(int32_t n, int32_t nc)
{
  unsigned char *pat = calloc((size_t)n * nc, 1);
  if (!pat) abort();
  for (int32_t i = 0; i < n; i++) {
    if (rnd(7) == 0) continue;
    pat[(int64_t)i * nc + (int32_t)((int64_t)i * nc / n)] = 1;
    for (int d = rnd(3); d > 0; d--) pat[(int64_t)i * nc + rnd(nc)] = 1;
  }
  tilerap_csr *P = from_pattern(n, nc, pat);
  free(pat);
  return P;
}

static int has_entry(const tilerap_csr *A, int32_t i, int32_t j)
{
  for (int64_t p = A->rowptr[i]; p < A->rowptr[i + 1]; p++)
    if (A->colidx[p] == j) return 1;
  return 0;
}

/* A copy of A with one entry moved to a free place of its own 16x16 tile:
 * rows, columns, tiles and entries all as A's, the pattern not.  NULL when
 * every tile is full. */
static tilerap_csr *moved_entry(const tilerap_csr *A)
{
  for (int attempt = 0; attempt < 200 && A->nnz > 0; attempt++) {
    const int64_t p = rnd((int32_t)A->nnz);
    int32_t i = 0;
    while (A->rowptr[i + 1] <= p) i++;
    const int32_t j = A->colidx[p];
    const int32_t i2 = 16 * (i / 16) + rnd(16), j2 = 16 * (j / 16) + rnd(16);
    if (i2 >= A->m || j2 >= A->n || has_entry(A, i2, j2)) continue;
    tilerap_csr *B = NULL;
    if (tilerap_csr_create(A->m, A->n, A->nnz, &B)) abort();
    int64_t q = 0;
    for (int32_t r = 0; r < A->m; r++) {
      int inserted = r != i2;
      for (int64_t s = A->rowptr[r]; s < A->rowptr[r + 1]; s++) {
        if (r == i && A->colidx[s] == j) continue;
        if (!inserted && A->colidx[s] > j2) { B->colidx[q] = j2; B->val[q++] = 0.5; inserted = 1; }
        B->colidx[q] = A->colidx[s]; B->val[q++] = A->val[s];
      }
      if (!inserted) { B->colidx[q] = j2; B->val[q++] = 0.5; }
      B->rowptr[r + 1] = q;
    }
    return B;
  }
  return NULL;
}

/* ---------------------------------------------------------------- engines */
typedef struct {
  const char *name;
  tilerap_engine engine;
  tilerap_memtype mem; /* where the operands live */
} engine_cfg;

static tilerap_tile_matrix *to_mem(const tilerap_csr *A, tilerap_memtype mem)
{
  tilerap_tile_matrix *T = ref_csr_to_tile(A), *D = NULL;
  if (mem == TILERAP_MEM_HOST) return T;
  if (tilerap_tile_copy(T, mem, &D)) abort();
  tilerap_tile_destroy(&T);
  return D;
}

/* C's values on the host (malloc'ed), whatever memory C lives in */
static double *values_of(const tilerap_tile_matrix *C)
{
  double *v = malloc(((size_t)C->nnz + 1) * sizeof *v);
  if (!v) abort();
  if (C->memtype == TILERAP_MEM_HOST) memcpy(v, C->val, (size_t)C->nnz * sizeof *v);
  else if (tilerap_memcpy(v, TILERAP_MEM_HOST, C->val, C->memtype, (size_t)C->nnz * sizeof *v)) abort();
  return v;
}

static int values_equal(const tilerap_tile_matrix *C, const double *before)
{
  double *now = values_of(C);
  const int same = !memcmp(now, before, (size_t)C->nnz * sizeof *now);
  free(now);
  return same;
}

static tilerap_csr *csr_of(const tilerap_tile_matrix *C)
{
  tilerap_tile_matrix *H = NULL;
  if (C->memtype == TILERAP_MEM_HOST) return ref_tile_to_csr(C);
  if (tilerap_tile_copy(C, TILERAP_MEM_HOST, &H)) abort();
  tilerap_csr *R = ref_tile_to_csr(H);
  tilerap_tile_destroy(&H);
  return R;
}

static double err_against(const tilerap_tile_matrix *C, const tilerap_csr *R)
{
  tilerap_csr *X = csr_of(C);
  const double e = ref_same_structure(X, R) ? ref_relerr(X, R) : INFINITY;
  tilerap_csr_destroy(&X);
  return e;
}

/* ---------------------------------------------------------------- one product kind */
enum { PROD_AB, PROD_ATB, PROD_PTAP };
static const char *const prod_name[] = {"A*B", "A^T*B", "P^T*A*P"};

typedef struct {
  int kind;
  void *plan;
} any_plan;

static int plan_create(int kind, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y, const tilerap_options *o,
                       any_plan *p, tilerap_tile_matrix **C)
{
  p->kind = kind;
  switch (kind) {
  case PROD_AB: return tilerap_spgemm_plan_create(X, Y, o, (tilerap_spgemm_plan *)&p->plan, C);
  case PROD_ATB: return tilerap_atb_plan_create(X, Y, o, (tilerap_atb_plan *)&p->plan, C);
  default: return tilerap_ptap_plan_create(X, Y, o, (tilerap_ptap_plan *)&p->plan, C);
  }
}
static int numeric(any_plan *p, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y, tilerap_tile_matrix *C)
{
  switch (p->kind) {
  case PROD_AB: return tilerap_spgemm_numeric((tilerap_spgemm_plan)p->plan, X, Y, C);
  case PROD_ATB: return tilerap_atb_numeric((tilerap_atb_plan)p->plan, X, Y, C);
  default: return tilerap_ptap_numeric((tilerap_ptap_plan)p->plan, X, Y, C);
  }
}
static void plan_destroy(any_plan *p)
{
  switch (p->kind) {
  case PROD_AB: tilerap_spgemm_plan_destroy((tilerap_spgemm_plan *)&p->plan); break;
  case PROD_ATB: tilerap_atb_plan_destroy((tilerap_atb_plan *)&p->plan); break;
  default: tilerap_ptap_plan_destroy((tilerap_ptap_plan *)&p->plan); break;
  }
}
static tilerap_csr *reference(int kind, const tilerap_csr *X, const tilerap_csr *Y)
{
  if (kind == PROD_AB) return ref_spgemm(X, Y);
  if (kind == PROD_PTAP) return ref_ptap(X, Y);
  tilerap_csr *Xt = ref_transpose(X), *R = ref_spgemm(Xt, Y);
  tilerap_csr_destroy(&Xt);
  return R;
}

/* The plan's operands X, Y (CSR x, y), then: each operand and C with one
 * entry moved (refused, C untouched), the same structures from new
 * conversions with new values (accepted, right), the plan's own operands
 * again (right), a hand-built copy with no id (accepted), and X changed in
 * place with tilerap_tile_structure_changed (refused). */
static void check_product(const engine_cfg *ec, int kind, const tilerap_csr *x, const tilerap_csr *y, const char *what)
{
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = ec->engine;
  tilerap_tile_matrix *X = to_mem(x, ec->mem), *Y = to_mem(y, ec->mem), *C = NULL;
  any_plan p = {0, NULL};
  int err = plan_create(kind, X, Y, &o, &p, &C);
  if (!err) err = numeric(&p, X, Y, C);
  tilerap_csr *R = reference(kind, x, y);
  if (!tap_ok(!err && err_against(C, R) <= 1e-14, "%s %s %s: plan + numeric equals the reference (%s)", ec->name,
              prod_name[kind], what, err ? tilerap_last_error() : "ok"))
    goto out;
  double *before = values_of(C);
  /* operands and C of the plan's counts, another pattern */
  tilerap_csr *mx = moved_entry(x), *my = moved_entry(y), *c = csr_of(C), *mc = moved_entry(c);
  const tilerap_csr *moved[3] = {mx, my, mc};
  static const char *const role[3] = {"first operand", "second operand", "C"};
  for (int r = 0; r < 3; r++) {
    if (!moved[r]) continue;
    tilerap_tile_matrix *M = to_mem(moved[r], ec->mem);
    double *mbefore = r == 2 ? values_of(M) : NULL;
    err = r == 0 ? numeric(&p, M, Y, C) : r == 1 ? numeric(&p, X, M, C) : numeric(&p, X, Y, M);
    const int untouched = r == 2 ? values_equal(M, mbefore) : values_equal(C, before);
    tap_ok(err == TILERAP_ERR_STRUCTURE && untouched, "%s %s %s: %s with one entry moved in its tile refused (%s), %s",
           ec->name, prod_name[kind], what, role[r], err ? tilerap_last_error() : "accepted",
           untouched ? "nothing written" : "OUTPUT WRITTEN");
    free(mbefore);
    tilerap_tile_destroy(&M);
  }
  /* the same structures from new conversions, new values: accepted */
  tilerap_csr *x2 = ref_copy(x), *y2 = ref_copy(y);
  ref_randomize_values(x2, &g_seed);
  ref_randomize_values(y2, &g_seed);
  tilerap_tile_matrix *X2 = to_mem(x2, ec->mem), *Y2 = to_mem(y2, ec->mem);
  tilerap_csr *R2 = reference(kind, x2, y2);
  err = numeric(&p, X2, Y2, C);
  double e2 = err ? INFINITY : err_against(C, R2);
  err = err ? err : numeric(&p, X, Y, C);
  double e1 = err ? INFINITY : err_against(C, R);
  err = err ? err : numeric(&p, X2, Y2, C); /* the new ids are remembered, the old still right */
  double e3 = err ? INFINITY : err_against(C, R2);
  tap_ok(!err && e1 <= 1e-14 && e2 <= 1e-14 && e3 <= 1e-14,
         "%s %s %s: same structures from new conversions accepted, alternating with the plan's own (%.1e %.1e %.1e)",
         ec->name, prod_name[kind], what, e2, e1, e3);
  if (ec->mem == TILERAP_MEM_HOST) {
    /* a hand-built struct (no id) over the same arrays: hashed, accepted */
    tilerap_tile_matrix hand = *X2;
    hand.structure_id = 0;
    err = numeric(&p, &hand, Y2, C);
    tap_ok(!err && err_against(C, R2) <= 1e-14, "%s %s %s: hand-built operand without an id accepted (%s)", ec->name,
           prod_name[kind], what, err ? tilerap_last_error() : "ok");
    /* X2's structure changed in place to mx's, and said so: refused */
    if (mx) {
      tilerap_tile_matrix *MX = to_mem(mx, TILERAP_MEM_HOST);
      memcpy(X2->row_mask, MX->row_mask, 16 * (size_t)MX->num_tiles * sizeof *MX->row_mask);
      memcpy(X2->row_ptr, MX->row_ptr, 16 * (size_t)MX->num_tiles);
      memcpy(X2->idx, MX->idx, (size_t)MX->nnz);
      memcpy(X2->tile_off, MX->tile_off, ((size_t)MX->num_tiles + 1) * sizeof *MX->tile_off);
      tilerap_tile_structure_changed(X2);
      double *b2 = values_of(C);
      err = numeric(&p, X2, Y2, C);
      tap_ok(err == TILERAP_ERR_STRUCTURE && values_equal(C, b2),
             "%s %s %s: first operand changed in place (tilerap_tile_structure_changed) refused", ec->name,
             prod_name[kind], what);
      free(b2);
      tilerap_tile_destroy(&MX);
    }
  }
  tilerap_tile_destroy(&X2); tilerap_tile_destroy(&Y2);
  tilerap_csr_destroy(&x2); tilerap_csr_destroy(&y2); tilerap_csr_destroy(&R2);
  tilerap_csr_destroy(&mx); tilerap_csr_destroy(&my); tilerap_csr_destroy(&c); tilerap_csr_destroy(&mc);
  free(before);
out:
  plan_destroy(&p);
  tilerap_csr_destroy(&R);
  tilerap_tile_destroy(&X); tilerap_tile_destroy(&Y); tilerap_tile_destroy(&C);
}

/* ---------------------------------------------------------------- values refresh */
static void check_values_refresh(const tilerap_csr *A, const char *what)
{
  tilerap_tile_matrix *T = ref_csr_to_tile(A);
  const int32_t m = A->m;
  int64_t *rp = malloc(((size_t)m + 1) * sizeof *rp);
  int32_t *rp32 = malloc(((size_t)m + 1) * sizeof *rp32);
  double *val = malloc(((size_t)A->nnz + 1) * sizeof *val), *before = values_of(T);
  for (int64_t q = 0; q < A->nnz; q++) val[q] = 1e6 + (double)q;
  static const char *const how[] = {"two row pointers swapped", "a row pointer far beyond nnz",
                                    "rowptr[0] = 1", "one entry moved to the next row", "last row pointer short"};
  for (int c = 0; c < 5; c++) {
    memcpy(rp, A->rowptr, ((size_t)m + 1) * sizeof *rp);
    int32_t i = 1 + rnd(m > 2 ? m - 2 : 1);
    if (c == 0 && m > 3) { while (rp[i] == rp[i + 1] && i < m - 1) i++; int64_t t = rp[i]; rp[i] = rp[i + 1]; rp[i + 1] = t; }
    if (c == 1) rp[i] = 100000 + A->nnz;
    if (c == 2) rp[0] = 1;
    if (c == 3) { int32_t r = 0; while (r < m - 1 && rp[r + 1] - rp[r] == 0) r++; if (r < m - 1) rp[r + 1]--; }
    if (c == 4) rp[m]--;
    if (!memcmp(rp, A->rowptr, ((size_t)m + 1) * sizeof *rp)) continue; /* nothing to corrupt here */
    for (int32_t r = 0; r <= m; r++) rp32[r] = (int32_t)rp[r];
    const int e64 = tilerap_tile_update_values_from_csr(T, rp, val);
    const int same64 = values_equal(T, before);
    const int e32 = tilerap_tile_update_values_from_csr_i32(T, rp32, val);
    tap_ok(e64 && e32 && same64 && values_equal(T, before), "values refresh %s, %s: refused (%s), matrix untouched", what,
           how[c], tilerap_last_error());
  }
  tap_ok(!tilerap_tile_update_values_from_csr(T, A->rowptr, val) && !values_equal(T, before),
         "values refresh %s: the true row pointers still work", what);
  free(rp); free(rp32); free(val); free(before);
  tilerap_tile_destroy(&T);
}

/* ---------------------------------------------------------------- options */
static void check_options(void)
{
  tilerap_csr *a = gen_square(K_RANDOM, 40), *p = gen_p(40, 9);
  tilerap_tile_matrix *A = ref_csr_to_tile(a), *P = ref_csr_to_tile(p), *C = NULL;
  static const char *const field[] = {"engine", "dense_threshold", "dense_threshold", "tc_threshold", "precision",
                                      "cpu_kernel", "plan_values"};
  for (int kind = PROD_AB; kind <= PROD_PTAP; kind++)
    for (int f = 0; f < 7; f++) {
      tilerap_options o;
      tilerap_options_default(&o);
      o.engine = TILERAP_ENGINE_CPU;
      switch (f) {
      case 0: o.engine = (tilerap_engine)7; break;
      case 1: o.dense_threshold = -1; break;
      case 2: o.dense_threshold = 257; break;
      case 3: o.tc_threshold = 4097; break;
      case 4: o.precision = (tilerap_precision)9; break;
      case 5: o.cpu_kernel = (tilerap_cpu_kernel)5; break;
      case 6: o.plan_values = 2; break;
      }
      any_plan pl = {0, NULL};
      const int err = plan_create(kind, kind == PROD_AB ? A : kind == PROD_ATB ? P : A, kind == PROD_AB ? A : kind == PROD_ATB ? A : P,
                                  &o, &pl, &C);
      tap_ok(err == TILERAP_ERR_INVALID && strstr(tilerap_last_error(), field[f]) && !pl.plan && !C,
             "%s plan refuses a bad %s (%s)", prod_name[kind], field[f], tilerap_last_error());
      plan_destroy(&pl);
      tilerap_tile_destroy(&C);
      /* the one-shot products check the caller's options too */
      const int e1 = kind == PROD_AB ? tilerap_spgemm(A, A, &o, &C) : kind == PROD_ATB ? tilerap_atb(P, A, &o, &C)
                                                                                   : tilerap_ptap(A, P, &o, &C);
      tap_ok(e1 == TILERAP_ERR_INVALID && strstr(tilerap_last_error(), field[f]) && !C,
             "one-shot %s refuses a bad %s (%s)", prod_name[kind], field[f], tilerap_last_error());
      tilerap_tile_destroy(&C);
    }
  /* tuning knobs: bad values and names refused where they are set */
  static const char *const knob[] = {"TILERAP_ENGINE", "TILERAP_CPU_KERNEL", "TILERAP_PINNED_CHUNK", "TILERAP_NO_SUCH_KNOB"};
  static const char *const bad[] = {"gpu", "fast", "12", "1"};
  for (int v = 0; v < 4; v++) {
    const int err = tilerap_tuning_set(knob[v], bad[v]);
    tap_ok(err == TILERAP_ERR_INVALID && strstr(tilerap_last_error(), knob[v]), "tilerap_tuning_set(%s, %s) refused (%s)",
           knob[v], bad[v], tilerap_last_error());
  }
  tilerap_tile_destroy(&A); tilerap_tile_destroy(&P);
  tilerap_csr_destroy(&a); tilerap_csr_destroy(&p);
}

/* The environment is read once, at first use: a bad value there makes
 * every plan entry point fail naming the variable.  Checked in a child of
 * this program started with the value (--env-child VAR). */
static int env_child(const char *var)
{
  tilerap_csr *a = gen_square(K_RANDOM, 40), *p = gen_p(40, 9);
  tilerap_tile_matrix *A = ref_csr_to_tile(a), *P = ref_csr_to_tile(p), *C = NULL;
  int failures = 0;
  for (int kind = PROD_AB; kind <= PROD_PTAP; kind++) {
    tilerap_options o;
    tilerap_options_default(&o); /* AUTO engine and kernel: the environment decides */
    any_plan pl = {0, NULL};
    const int err = plan_create(kind, kind == PROD_ATB ? P : A, kind == PROD_PTAP ? P : A, &o, &pl, &C);
    if (err != TILERAP_ERR_INVALID || !strstr(tilerap_last_error(), var)) failures++;
    else printf("# %s plan: %s\n", prod_name[kind], tilerap_last_error());
    plan_destroy(&pl);
    tilerap_tile_destroy(&C);
  }
  /* the CSR plans (the PETSc types' CPU route) too */
  for (int kind = TILERAP_CSR_AB; kind <= TILERAP_CSR_PTAP; kind++) {
    tilerap_csr_plan cp = NULL;
    tilerap_csr *cc = NULL;
    const int err = tilerap_csr_plan_create((tilerap_csr_kind)kind, kind == TILERAP_CSR_ATB ? p : a,
                                            kind == TILERAP_CSR_PTAP ? p : a, &cp, &cc);
    if (err != TILERAP_ERR_INVALID || !strstr(tilerap_last_error(), var) || cp || cc) failures++;
    else printf("# CSR %s plan: %s\n", tilerap_csr_kind_name((tilerap_csr_kind)kind), tilerap_last_error());
    tilerap_csr_plan_destroy(&cp);
    tilerap_csr_destroy(&cc);
  }
  tilerap_tile_destroy(&A); tilerap_tile_destroy(&P);
  tilerap_csr_destroy(&a); tilerap_csr_destroy(&p);
  return failures ? 1 : 0;
}

static void check_env_value(const char *var, const char *value)
{
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    setenv(var, value, 1);
    execl("/proc/self/exe", "test_misuse", "--env-child", var, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  const int waited = pid > 0 && waitpid(pid, &status, 0) == pid;
  tap_ok(waited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "%s=%s in the environment: every plan entry point refuses it, naming the variable", var, value);
}

static void check_environment(void)
{
  check_env_value("TILERAP_ENGINE", "gpu");
  check_env_value("TILERAP_CPU_KERNEL", "fast");
  check_env_value("TILERAP_PTAP_SCATTER_MACS", "many");
}

static void check_memtype(void)
{
  tilerap_tile_matrix *T = NULL;
  const int err = tilerap_tile_create(4, 4, 1, 1, (tilerap_memtype)7, &T);
  tap_ok(err == TILERAP_ERR_INVALID && !T && strstr(tilerap_last_error(), "memory type 7"),
         "tilerap_tile_create with memory type 7 refused (%s)", tilerap_last_error());
}

/* tilerap_device_memory: an error without a GPU; with one, a device
 * matrix shows in what is in use and in the peak, its free in the former
 * only, and a reset brings the peak down to what is in use */
static void check_device_memory(void)
{
  size_t use0 = 0, peak0 = 0, use1 = 0, peak1 = 0, use2 = 0, peak2 = 0, peak3 = 0;
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
    const int e1 = tilerap_device_memory(&use0, &peak0), e2 = tilerap_device_memory_reset_peak();
    tap_ok(e1 == TILERAP_ERR_ENGINE && e2 == TILERAP_ERR_ENGINE, "tilerap_device_memory without a GPU: %s",
           tilerap_last_error());
    return;
  }
  tilerap_tile_matrix *T = NULL;
  const size_t bytes = (size_t)1 << 24;
  int err = tilerap_device_memory_reset_peak() || tilerap_device_memory(&use0, &peak0) ||
            tilerap_tile_create(16 * 128, 16 * 64, 8192, (int64_t)(bytes / 8), TILERAP_MEM_DEVICE, &T) ||
            tilerap_device_memory(&use1, &peak1);
  tilerap_tile_destroy(&T);
  err = err || tilerap_device_memory(&use2, &peak2) || tilerap_device_memory_reset_peak() ||
        tilerap_device_memory(NULL, &peak3);
  tap_ok(!err && peak0 == use0 && use1 >= use0 + bytes && peak1 >= use1 && use2 == use0 && peak2 == peak1 &&
             peak3 == use2,
         "tilerap_device_memory: in use %zu -> %zu -> %zu, peak %zu -> %zu -> %zu, after a reset %zu", use0, use1, use2,
         peak0, peak2, peak2, peak3);
}

/* ---------------------------------------------------------------- sizes */
/* INT_MAX rows, one entry in the last row: the last tile row ends past
 * 2^31 - 1, which 32-bit row arithmetic overflowed.  The 8 GiB of row
 * pointers are one 2 MiB block of zeros mapped again and again (no memory
 * behind them), then a private block for the tail that holds the last. */
#define ZERO_BLOCK ((size_t)2 << 20)
static int32_t *zero_row_pointers(size_t bytes)
{
  const size_t blocks = (bytes + ZERO_BLOCK - 1) / ZERO_BLOCK;
  const int fd = memfd_create("tilerap-zeros", 0);
  if (fd < 0 || ftruncate(fd, (off_t)ZERO_BLOCK)) return NULL;
  char *base = mmap(NULL, blocks * ZERO_BLOCK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  int ok = base != MAP_FAILED;
  for (size_t b = 0; ok && b + 1 < blocks; b++)
    ok = mmap(base + b * ZERO_BLOCK, ZERO_BLOCK, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
  if (ok) ok = mmap(base + (blocks - 1) * ZERO_BLOCK, ZERO_BLOCK, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
  close(fd);
  if (!ok && base != MAP_FAILED) munmap(base, blocks * ZERO_BLOCK);
  return ok ? (int32_t *)base : NULL;
}

static void check_int_max_rows(void)
{
#if defined(__SANITIZE_ADDRESS__)
  tap_diag("INT_MAX rows: not under AddressSanitizer (minutes of work on 2^31 rows); the plain build runs it");
  return;
#endif
  const int32_t m = INT32_MAX, n = 16;
  const size_t bytes = ((size_t)m + 1) * sizeof(int32_t);
  int32_t col = 3;
  double v = 2.5;
  int32_t *rp = zero_row_pointers(bytes);
  if (!rp) { tap_diag("no 8 GiB of address space for INT_MAX row pointers: check skipped"); return; }
  rp[m] = 1;
  tilerap_tile_matrix *T = NULL;
  const int err = tilerap_tile_from_csr_i32(m, n, rp, &col, &v, &T);
  const int ok = !err && T->nnz == 1 && T->num_tiles == 1 && T->tile_ptr[T->tile_rows - 1] == 0 &&
                 T->tile_ptr[T->tile_rows] == 1 && T->row_mask[(m - 1) & 15] == 1u << col && T->val[0] == v;
  tap_ok(ok, "INT_MAX x 16 with one entry in the last row converts (%s)", err ? tilerap_last_error() : "ok");
  tilerap_tile_destroy(&T);
  munmap(rp, (bytes + ZERO_BLOCK - 1) / ZERO_BLOCK * ZERO_BLOCK);
}

/* --quick (the sanitizer runs): three trials, no INT_MAX matrix */
int main(int argc, char **argv)
{
  if (argc > 2 && !strcmp(argv[1], "--env-child")) return env_child(argv[2]);
  const int quick = argc > 1 && !strcmp(argv[1], "--quick");
  engine_cfg engines[3] = {{"cpu", TILERAP_ENGINE_CPU, TILERAP_MEM_HOST}};
  int ne = 1;
  if (tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
    engines[ne++] = (engine_cfg){"cuda/host", TILERAP_ENGINE_CUDA, TILERAP_MEM_HOST};
    engines[ne++] = (engine_cfg){"cuda/device", TILERAP_ENGINE_CUDA, TILERAP_MEM_DEVICE};
  } else tap_diag("no CUDA engine or no GPU: the CPU engine only");
  for (int trial = 0; trial < (quick ? 3 : 15); trial++) {
    const int kind = trial % K_KINDS;
    const int32_t n = 17 + rnd(150), nc = trial % 4 == 3 ? 1 + rnd(3) : 1 + rnd(n / 2);
    tilerap_csr *A = gen_square(kind, n), *P = gen_p(n, nc), *Q = gen_p(n, 1 + rnd(40));
    char what[96];
    snprintf(what, sizeof what, "%s %dx%d, P %dx%d", kind_name[kind], n, n, n, nc);
    for (int e = 0; e < ne; e++) {
      check_product(&engines[e], PROD_PTAP, A, P, what);
      check_product(&engines[e], PROD_AB, A, P, what);
      check_product(&engines[e], PROD_ATB, P, Q, what);
    }
    check_values_refresh(A, what);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P); tilerap_csr_destroy(&Q);
  }
  check_options();
  check_environment();
  check_memtype();
  check_device_memory();
  if (!quick) check_int_max_rows();
  return tap_done();
}
