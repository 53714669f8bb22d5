/* The row-wise steps of the strength graph (tilerap_csr_graph_i32),
 * shared by the CPU engine (graph_cpu.c) and the device (graph_cuda.cu) so
 * that both sum in the same order and give the same graph bit for bit. */
#ifndef TILERAP_GRAPH_ROWS_H
#define TILERAP_GRAPH_ROWS_H
#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define TR_GR_HD __host__ __device__ __forceinline__
#else
#define TR_GR_HD static inline
#endif

/* Block row I of the collapse: the bs (<= 64) scalar rows merged by block
 * column, each block's |a| summed row by row, columns ascending within a
 * row (PETSc's order).  Returns the number of block columns; writes them
 * when scol is given. */
TR_GR_HD int64_t tr_graph_collapse_row(int64_t I, int32_t bs, const int32_t *rp, const int32_t *col, const double *val,
                                       int32_t *scol, double *sval)
{
  int32_t p[64], e[64];
  int64_t n = 0;
  for (int32_t r = 0; r < bs; r++) {
    p[r] = rp[I * bs + r];
    e[r] = rp[I * bs + r + 1];
  }
  for (;;) {
    int32_t J = INT32_MAX; /* the first block column left in any of the rows */
    for (int32_t r = 0; r < bs; r++)
      if (p[r] < e[r] && col[p[r]] / bs < J) J = col[p[r]] / bs;
    if (J == INT32_MAX) break;
    const int32_t lim = (J + 1) * bs; /* no row has columns left below J * bs */
    double s = 0;
    for (int32_t r = 0; r < bs; r++)
      for (; p[r] < e[r] && col[p[r]] < lim; p[r]++) s += fabs(val[p[r]]);
    if (scol) {
      scol[n] = J;
      sval[n] = s;
    }
    n++;
  }
  return n;
}

/* Row i of G + G^T from row i of G (gc, gv: ng entries) and of G^T (tc,
 * tv: nt), both ascending: the union, G's value plus G^T's where both
 * hold the column.  Counts, and writes when oc is given. */
TR_GR_HD int64_t tr_graph_union_row(const int32_t *gc, const double *gv, int64_t ng, const int32_t *tc,
                                    const double *tv, int64_t nt, int32_t *oc, double *ov)
{
  int64_t a = 0, b = 0, n = 0;
  while (a < ng || b < nt) {
    int32_t c;
    double v;
    if (b == nt || (a < ng && gc[a] < tc[b])) {
      c = gc[a];
      v = gv[a++];
    } else if (a == ng || tc[b] < gc[a]) {
      c = tc[b];
      v = tv[b++];
    } else {
      c = gc[a];
      v = gv[a++] + tv[b++];
    }
    if (oc) {
      oc[n] = c;
      ov[n] = v;
    }
    n++;
  }
  return n;
}

/* D(i) = sqrt(|1 / g|) for the diagonal entry g, 0 where g is 0 or not
 * stored (PETSc: a reciprocal that keeps 0, then sqrt of the absolute value) */
TR_GR_HD double tr_graph_scaling(double g) { return g != 0 ? sqrt(fabs(1.0 / g)) : 0; }
#endif
