/* Strength graphs for aggregation AMG (tilerap_csr_graph_i32 and its
 * device form): argument checks and the engine's kernels (graph_cpu.c,
 * graph_cuda.cu). */
#include "engine_cuda.h"
#include "spgemm_cpu.h"
#include "tile_internal.h"

static int tr_graph_args(int32_t m, int32_t bs, const int32_t *rowptr, unsigned flags)
{
  if (!rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "graph: NULL row pointers");
  if (m < 0 || bs < 1 || bs > 64 || m % bs)
    return tilerap_set_error(TILERAP_ERR_SIZE, "graph: %d rows in blocks of %d (1..64 dividing the rows)", m, bs);
  if (flags & ~(unsigned)(TILERAP_GRAPH_ABS | TILERAP_GRAPH_SYMMETRIZE | TILERAP_GRAPH_SCALE))
    return tilerap_set_error(TILERAP_ERR_INVALID, "graph: unknown flags 0x%x", flags);
  return TILERAP_SUCCESS;
}

int tilerap_csr_graph_i32(int32_t m, int32_t bs, const int32_t *rowptr, const int32_t *colidx, const double *val,
                          unsigned flags, tilerap_csr **G)
{
  if (!G) return tilerap_set_error(TILERAP_ERR_NULL, "graph: NULL output");
  *G = NULL;
  int err = tr_graph_args(m, bs, rowptr, flags);
  if (err) return err;
  if (rowptr[m] > 0 && (!colidx || !val)) return tilerap_set_error(TILERAP_ERR_NULL, "graph: NULL columns or values");
  return tr_cpu_csr_graph(m, bs, rowptr, colidx, val, flags, G);
}

int tilerap_csr_graph_device_i32(int32_t m, int32_t bs, const int32_t *rowptr, const int32_t *colidx,
                                 const double *val, unsigned flags, int32_t **g_rowptr, int32_t **g_colidx,
                                 double **g_val, int64_t *g_nnz)
{
  if (!g_rowptr || !g_colidx || !g_val || !g_nnz) return tilerap_set_error(TILERAP_ERR_NULL, "graph: NULL output");
  *g_rowptr = NULL;
  *g_colidx = NULL;
  *g_val = NULL;
  *g_nnz = 0;
  int err = tr_graph_args(m, bs, rowptr, flags);
  if (!err) err = tr_require_cuda("graph");
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA /* colidx and val may be NULL without entries: checked there */
  return tr_cuda_csr_graph(m, bs, rowptr, colidx, val, flags, g_rowptr, g_colidx, g_val, g_nnz);
#else
  return TILERAP_ERR_ENGINE;
#endif
}
