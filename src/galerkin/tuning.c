/* The tuning table: every knob's name, kind, default and range, the one
 * place where the environment is read, and tilerap_tuning_set. */
#include "tile_internal.h"
#include "tuning.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <strings.h>

typedef enum { TR_FLAG, TR_INT, TR_REAL, TR_CHOICE } tr_knob_kind;

typedef struct {
  const char *name; /* environment variable */
  tr_knob_kind kind;
  const char *choices; /* TR_CHOICE: '|'-separated; def: the default's index */
  double def, lo, hi;  /* the default (a choice's index), the others' range */
} tr_knob_def;

/* in the order of tr_knob_id */
static const tr_knob_def tr_knobs[TR_KNOB_COUNT] = {
  {"TILERAP_ENGINE", TR_CHOICE, "auto|cpu|cuda", 0, 0, 0},
  {"TILERAP_CPU_KERNEL", TR_CHOICE, "auto|tiles|recorded", 0, 0, 0},
  {"TILERAP_DEVICE", TR_INT, NULL, -1, -1, 1 << 30},
  {"TILERAP_PINNED", TR_FLAG, NULL, 1, 0, 1},
  {"TILERAP_PINNED_CHUNK", TR_INT, NULL, 8 << 20, 4096, 1 << 30},
  {"TILERAP_COPY_THREADS", TR_INT, NULL, TR_HOST_COPY_THREADS, 1, 64},
  {"TILERAP_TRACE", TR_FLAG, NULL, 0, 0, 1},
  {"TILERAP_HYPRE", TR_FLAG, NULL, 1, 0, 1},
  {"TILERAP_HYPRE_VERBOSE", TR_INT, NULL, 0, 0, 9},
  {"TILERAP_HYPRE_ORDER", TR_CHOICE, "hypre|sorted", 0, 0, 0},
  {"TILERAP_HYPRE_REUSE", TR_INT, NULL, 0, -1, 1 << 30},
  {"TILERAP_PATH", TR_CHOICE, "auto|tiles|csr", 0, 0, 0},
  {"TILERAP_CSR_PTAP", TR_CHOICE, "ap|walk", 1, 0, 0},
  {"TILERAP_STEP1_SORT", TR_CHOICE, "auto|radix|rows|compact", 0, 0, 0},
  {"TILERAP_ROWS_MAX", TR_INT, NULL, 1 << 18, 0, 1e15},
  {"TILERAP_MASKS_LANES", TR_CHOICE, "auto|8|16", 0, 0, 0},
  {"TILERAP_CUDA_HITS", TR_CHOICE, "auto|plan", 0, 0, 0},
  {"TILERAP_CUDA_WALK_MAX", TR_REAL, NULL, 32, 0, 1e300},
  {"TILERAP_CUDA_WALK_MEAN", TR_REAL, NULL, 16, 0, 1e300},
  {"TILERAP_TRANSPOSE_SORT", TR_FLAG, NULL, 0, 0, 1},
  {"TILERAP_PTAP", TR_CHOICE, "auto|first|scatter", 0, 0, 0},
  {"TILERAP_PTAP_KERNEL", TR_CHOICE, "auto|rows|scatter", 0, 0, 0},
  {"TILERAP_PTAP_SCATTER_MACS", TR_REAL, NULL, 8e6, 0, 1e300},
  {"TILERAP_PTAP_GATHER", TR_FLAG, NULL, 0, 0, 1},
  {"TILERAP_ROWS_GROUP", TR_CHOICE, "auto|1|8", 0, 0, 0},
  {"TILERAP_CSR_MACS_PER_PAIR", TR_REAL, NULL, 2, 0, 1e300},
  {"TILERAP_CSR_RECORD_MACS", TR_REAL, NULL, 32, 0, 1e300},
  {"TILERAP_CUDA_LOWPREC_REUSE", TR_REAL, NULL, 8, 0, 1e300},
  {"TILERAP_CONVERT", TR_CHOICE, "auto|merge|sort", 0, 0, 0},
  {"TILERAP_HYPRE_TEST_REFUSE_RANK", TR_INT, NULL, -1, -1, 1 << 30},
  {"TILERAP_HYPRE_TEST_PARALLEL", TR_FLAG, NULL, 0, 0, 1},
  {"TILERAP_HYPRE_TEST_ORDER_THREAD", TR_FLAG, NULL, 0, 0, 1},
};

/* Narrow rows: a row's hash table then has few slots for its products,
 * whose shared-memory fp64 adds (compare-and-swap loops) wait on one
 * another; a gather per C entry has no such wait.  Wide rows spread their
 * adds, and there the hash tables read B's rows in order while a record
 * reads two scattered values per product.  Beyond TR_RECORD_NARROW_MACS
 * the record's few heavy entries leave the GPU idle.  Measured level by
 * level: design.md, "Recorded re-runs". */
int tr_csr_record_pays(int64_t macs, int64_t cnnz, int64_t rows)
{
  const double k = tr_knob(TR_KNOB_CSR_RECORD_MACS);
  if (cnnz <= 0) return 0;
  if ((double)macs <= k * (double)cnnz) return 1;
  return k > 0 && macs <= (int64_t)TR_RECORD_NARROW_MACS * cnnz && rows > 0 &&
         cnnz <= (int64_t)TR_RECORD_NARROW_LEN * rows;
}

/* Dense operands (classical AMG's coarse levels) make tile pairs of many
 * multiply-adds, which the tiles' tensor cores take faster than hash
 * rows; sparse tiles make the conversions and the pairs a loss. */
int tr_dcsr_tiles_pay(double a_fill, double p_fill)
{
  return a_fill > 0 && p_fill > 0 && a_fill * p_fill / 16 >= TR_DCSR_TILE_MACS_PER_PAIR;
}

static double tr_values[TR_KNOB_COUNT];
static double tr_env[TR_KNOB_COUNT]; /* what the environment said (or the default) */
static int tr_bad = -1;           /* first knob whose environment value was refused */
static char tr_bad_value[64];
static pthread_once_t tr_once = PTHREAD_ONCE_INIT;

/* s as knob d's value into *v; 0 if s is not one */
static int tr_parse(const tr_knob_def *d, const char *s, double *v)
{
  if (d->kind == TR_CHOICE) {
    int i = 0;
    for (const char *c = d->choices; *c; i++) {
      const size_t len = strcspn(c, "|");
      if (strlen(s) == len && !strncasecmp(s, c, len)) { *v = i; return 1; }
      c += len + (c[len] == '|');
    }
    return 0;
  }
  if (d->kind == TR_FLAG || d->kind == TR_INT) {
    static const char *const off[] = {"no", "off", "false"}, *const on[] = {"yes", "on", "true"};
    for (int i = 0; i < 3; i++) {
      if (!strcasecmp(s, off[i])) { *v = 0; return d->lo <= 0; }
      if (!strcasecmp(s, on[i])) { *v = 1; return d->hi >= 1; }
    }
  }
  char *end;
  errno = 0;
  const double x = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(x) || x < d->lo || x > d->hi) return 0;
  if (d->kind != TR_REAL && x != floor(x)) return 0;
  *v = x;
  return 1;
}

static void tr_read_environment(void)
{
  for (int k = 0; k < TR_KNOB_COUNT; k++) {
    const tr_knob_def *d = &tr_knobs[k];
    double v = d->def; /* a choice's default is its index */
    const char *s = getenv(d->name);
    if (s && *s && !tr_parse(d, s, &v)) {
      v = d->def; /* the default, and the error kept for the message */
      if (tr_bad < 0) {
        tr_bad = k;
        snprintf(tr_bad_value, sizeof tr_bad_value, "%s", s);
      }
    }
    tr_values[k] = tr_env[k] = v;
  }
}

/* what a knob takes, for messages */
static void tr_expected(const tr_knob_def *d, char *buf, size_t len)
{
  if (d->kind == TR_CHOICE) snprintf(buf, len, "one of %s", d->choices);
  else if (d->kind == TR_FLAG) snprintf(buf, len, "0 or 1");
  else if (d->kind == TR_INT && d->hi >= 1e15) snprintf(buf, len, "an integer >= %.0f", d->lo);
  else if (d->kind == TR_INT) snprintf(buf, len, "an integer in [%.0f, %.0f]", d->lo, d->hi);
  else if (d->hi >= 1e15) snprintf(buf, len, "a number >= %g", d->lo);
  else snprintf(buf, len, "a number in [%g, %g]", d->lo, d->hi);
}

int tr_tuning_check(void)
{
  pthread_once(&tr_once, tr_read_environment);
  if (tr_bad < 0) return TILERAP_SUCCESS;
  char want[96];
  tr_expected(&tr_knobs[tr_bad], want, sizeof want);
  return tilerap_set_error(TILERAP_ERR_INVALID, "%s=\"%s\": expected %s", tr_knobs[tr_bad].name, tr_bad_value, want);
}

double tr_knob(tr_knob_id k)
{
  pthread_once(&tr_once, tr_read_environment);
  return tr_values[k];
}

void tr_knob_text(tr_knob_id k, char *buf, size_t len)
{
  const tr_knob_def *d = &tr_knobs[k];
  const double v = tr_knob(k);
  if (d->kind != TR_CHOICE) {
    snprintf(buf, len, "%.17g", v);
    return;
  }
  const char *c = d->choices;
  for (int i = 0; i < (int)v && strchr(c, '|'); i++) c = strchr(c, '|') + 1;
  snprintf(buf, len, "%.*s", (int)strcspn(c, "|"), c);
}

int tilerap_tuning_set(const char *name, const char *value)
{
  if (!name) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_tuning_set: NULL name");
  pthread_once(&tr_once, tr_read_environment);
  for (int k = 0; k < TR_KNOB_COUNT; k++) {
    const tr_knob_def *d = &tr_knobs[k];
    if (strcmp(name, d->name)) continue;
    if (!value) { /* back to the environment's value (or the default) */
      tr_values[k] = tr_env[k];
      return TILERAP_SUCCESS;
    }
    double v;
    if (!tr_parse(d, value, &v)) {
      char want[96];
      tr_expected(d, want, sizeof want);
      return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_tuning_set: %s=\"%s\": expected %s", name, value, want);
    }
    tr_values[k] = v;
    if (tr_bad == k) tr_bad = -1;
    return TILERAP_SUCCESS;
  }
  return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_tuning_set: no knob named %s (doc/tuning.md lists them)", name);
}
