/* Shared helpers of the GPU tests: skip without a device, engine options,
 * exact structural comparison of tile matrices (every array of the
 * format) and value errors. */
#ifndef TILERAP_TEST_GPU_COMMON_H
#define TILERAP_TEST_GPU_COMMON_H
#include "ref_gustavson.h"
#include "tilerap_csr_layouts.h"
#include "tap.h"
#include "tilerap_model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The call returns `code` (message: the library's last error). */
#define EXPECT(call, code, what)                                                                               \
  do {                                                                                                         \
    int e_ = (call);                                                                                           \
    tap_ok(e_ == (code), "%s -> %s (got %d: %s)", what, tilerap_error_string(code), e_, tilerap_last_error()); \
  } while (0)

static inline void gpu_skip_without_device(void)
{
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA)) {
    printf("1..0 # SKIP no CUDA engine or no GPU\n");
    exit(0);
  }
}

static inline tilerap_options gpu_opts(tilerap_engine e, int threshold)
{
  tilerap_options o;
  tilerap_options_default(&o);
  o.engine = e;
  o.dense_threshold = threshold;
  return o;
}

/* Host copy of any tile matrix (aborts on error: tests only). */
static inline tilerap_tile_matrix *gpu_to_host(const tilerap_tile_matrix *T)
{
  tilerap_tile_matrix *H = NULL;
  if (tilerap_tile_copy(T, TILERAP_MEM_HOST, &H)) { fprintf(stderr, "copy to host: %s\n", tilerap_last_error()); abort(); }
  return H;
}
static inline tilerap_tile_matrix *gpu_to_device(const tilerap_tile_matrix *T)
{
  tilerap_tile_matrix *D = NULL;
  if (tilerap_tile_copy(T, TILERAP_MEM_DEVICE, &D)) { fprintf(stderr, "copy to device: %s\n", tilerap_last_error()); abort(); }
  return D;
}

/* 1 if X and Y (host) have the same tile structure, array by array. */
static inline int gpu_same_tiles(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y)
{
  if (X->m != Y->m || X->n != Y->n || X->num_tiles != Y->num_tiles || X->nnz != Y->nnz) return 0;
  size_t nt = (size_t)X->num_tiles;
  return !memcmp(X->tile_ptr, Y->tile_ptr, ((size_t)X->tile_rows + 1) * sizeof(int64_t)) &&
         (!nt || !memcmp(X->tile_col, Y->tile_col, nt * sizeof(int32_t))) &&
         !memcmp(X->tile_off, Y->tile_off, (nt + 1) * sizeof(int64_t)) &&
         (!nt || !memcmp(X->row_ptr, Y->row_ptr, 16 * nt)) &&
         (!nt || !memcmp(X->row_mask, Y->row_mask, 16 * nt * sizeof(uint16_t))) &&
         (!X->nnz || !memcmp(X->idx, Y->idx, (size_t)X->nnz));
}

/* ||X-Y||_F / ||Y||_F over the values of identically structured tiles;
 * NaN anywhere (an unwritten entry) gives infinity. */
static inline double gpu_relerr(const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y)
{
  double d = 0, y = 0;
  for (int64_t q = 0; q < X->nnz; q++) {
    if (isnan(X->val[q]) || isnan(Y->val[q])) return INFINITY;
    d += (X->val[q] - Y->val[q]) * (X->val[q] - Y->val[q]);
    y += Y->val[q] * Y->val[q];
  }
  return y > 0 ? sqrt(d / y) : sqrt(d);
}

/* relerr of a host tile matrix against a CSR reference (inf if structure differs) */
static inline double gpu_vs_ref(const tilerap_tile_matrix *T, const tilerap_csr *R)
{
  tilerap_csr *C = ref_tile_to_csr(T);
  double e = ref_same_structure(C, R) ? ref_relerr(C, R) : INFINITY;
  tilerap_csr_destroy(&C);
  return e;
}

/* Fills the values of any tile matrix with NaN (every entry must be rewritten). */
/* Sets a tuning knob (tilerap_tuning_set) for a part of a test; value
 * NULL: back to the environment's value or the default.  Aborts on a bad
 * name or value: the tests name only knobs that exist. */
static inline void gpu_knob_set(const char *name, const char *value)
{
  if (tilerap_tuning_set(name, value)) {
    fprintf(stderr, "gpu_knob_set: %s\n", tilerap_last_error());
    abort();
  }
}

static inline void gpu_poison(tilerap_tile_matrix *T)
{
  tilerap_tile_matrix *H = T->memtype == TILERAP_MEM_HOST ? T : gpu_to_host(T);
  for (int64_t q = 0; q < H->nnz; q++) H->val[q] = NAN;
  if (H != T) {
    tilerap_tile_copy_values(H, T);
    tilerap_tile_destroy(&H);
  }
}
#endif
