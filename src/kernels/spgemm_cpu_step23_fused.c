/* Steps 2 and 3 fused (CPU), for plans created together with their first
 * product.  Step 2 and the numeric walk visit the same pairs and the same
 * A entries; done apart, each pays for fetching the pairs' tiles.  Here one
 * walk per candidate tile ORs the row masks and adds the products into a
 * dense 16x16 accumulator (C's structure is not known yet), then packs the
 * tile's values in mask order (which is C's entry order) into a per-thread
 * buffer.  After the exact allocation the buffers are copied into C; a
 * single thread's buffer is C's value array already and is adopted.
 * Products are added in the order of every other CPU kernel, so C is the
 * same bit for bit. */
#include "spgemm_cpu.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define TR_PF_DIST 16 /* pairs ahead whose B tiles are prefetched */

/* Per-thread value buffer (grows by doubling; realloc of large blocks
 * remaps pages instead of copying them). */
typedef struct {
  double *v;
  int64_t len, cap;
  int failed;
} tr_valbuf;

static inline int tr_valbuf_reserve(tr_valbuf *vb, int64_t more)
{
  if (vb->len + more <= vb->cap) return 0;
  int64_t cap = vb->cap ? 2 * vb->cap : 1 << 16;
  while (cap < vb->len + more) cap *= 2;
  double *v = realloc(vb->v, (size_t)cap * sizeof(double));
  if (!v) return vb->failed = 1;
  vb->v = v;
  vb->cap = cap;
  return 0;
}

/* One pair: masks OR-ed into m[16], products added into acc.  Returns the
 * pair's multiply-adds. */
static inline __attribute__((always_inline)) int64_t tr_pair_fused(const tilerap_tile_matrix *A,
                                                                   const tilerap_tile_matrix *B, int64_t a, int64_t b,
                                                                   uint16_t m[16], double *acc, const int at,
                                                                   const int hw)
{
  const uint16_t *mb = B->row_mask + 16 * b;
  const uint8_t *brp = B->row_ptr + 16 * b;
  const int64_t ao = A->tile_off[a], bo = B->tile_off[b];
  const uint8_t *ai = A->idx + ao, *bi = B->idx + bo;
  const double *av = A->val + ao, *bv = B->val + bo;
  const int na = (int)(A->tile_off[a + 1] - ao), blen = (int)(B->tile_off[b + 1] - bo);
  int64_t f = 0;
  for (int e = 0; e < na; e++) {
    const unsigned id = at ? (unsigned)((ai[e] & 15u) << 4 | ai[e] >> 4) : ai[e], k = id & 15u, mk = mb[k];
    m[id >> 4] |= (uint16_t)mk;
    f += tr_pop16(mk, hw);
    const double x = av[e];
    double *ar = acc + 16 * (id >> 4);
    const int fe = k < 15 ? brp[k + 1] : blen;
    for (int g = brp[k]; g < fe; g++) ar[bi[g] & 15] += x * bv[g];
  }
  return f;
}

/* Tile row I: masks, sizes and packed values of its candidate tiles.
 * Returns the kept tiles' flops (2 x multiply-adds). */
static inline __attribute__((always_inline)) int64_t tr_fused_row(const tilerap_tile_matrix *A,
                                                                  const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                                                                  tr_pairs *pairs, int32_t I, uint16_t *mask,
                                                                  int32_t *cnt, int64_t *kept_ptr, int64_t *nnz_row,
                                                                  double *acc, tr_valbuf *vb, const int hw)
{
  const int64_t np_all = pairs->pair_ptr[pairs->num_tiles];
  const int at = pairs->a_transposed;
  int64_t kt = 0, kn = 0, flops = 0;
  for (int64_t t = cand_ptr[I]; t < cand_ptr[I + 1]; t++) {
    uint16_t m[16] = {0};
    int64_t f = 0;
    for (int64_t p = pairs->pair_ptr[t]; p < pairs->pair_ptr[t + 1]; p++) {
      if (p + TR_PF_DIST < np_all) {
        const int64_t bq = pairs->pair_b[p + TR_PF_DIST];
        __builtin_prefetch(B->row_mask + 16 * bq);
        __builtin_prefetch(B->row_ptr + 16 * bq);
        __builtin_prefetch(A->idx + A->tile_off[pairs->pair_a[p + TR_PF_DIST / 2]]);
      }
      f += at ? tr_pair_fused(A, B, pairs->pair_a[p], pairs->pair_b[p], m, acc, 1, hw)
              : tr_pair_fused(A, B, pairs->pair_a[p], pairs->pair_b[p], m, acc, 0, hw);
    }
    if (pairs->rec_tile_ptr) pairs->rec_tile_ptr[t + 1] = f;
    /* pack in C's entry order (rows, then columns ascending) and clear
     * exactly the touched entries: every product lands on a mask bit */
    double *out = vb->v + vb->len;
    int c = 0;
    for (int q = 0; q < 4; q++) { /* four rows per 64-bit word: 4 loop exits per tile instead of 16 */
      uint64_t w = 0;
      for (int i = 0; i < 4; i++) {
        mask[16 * t + 4 * q + i] = m[4 * q + i];
        w |= (uint64_t)m[4 * q + i] << (16 * i);
      }
      while (w) {
        const int j = 64 * q + __builtin_ctzll(w);
        w &= w - 1;
        out[c++] = acc[j];
        acc[j] = 0.0;
      }
    }
    cnt[t] = c;
    vb->len += c;
    if (c) { kt++; kn += c; flops += 2 * f; }
  }
  kept_ptr[I + 1] = kt; nnz_row[I + 1] = kn;
  return flops;
}

static int64_t tr_fused_row_sw(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                               tr_pairs *pairs, int32_t I, uint16_t *mask, int32_t *cnt, int64_t *kept_ptr,
                               int64_t *nnz_row, double *acc, tr_valbuf *vb)
{
  return tr_fused_row(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row, acc, vb, 0);
}

#ifdef TR_HAVE_POPCNT_VARIANT
__attribute__((target("popcnt"))) static int64_t tr_fused_row_hw(const tilerap_tile_matrix *A,
                                                                 const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                                                                 tr_pairs *pairs, int32_t I, uint16_t *mask,
                                                                 int32_t *cnt, int64_t *kept_ptr, int64_t *nnz_row,
                                                                 double *acc, tr_valbuf *vb)
{
  return tr_fused_row(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row, acc, vb, 1);
}
#endif

int tr_cpu_step23_fused(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                        const int32_t *cand_col, tr_pairs *pairs, tilerap_tile_matrix **Cout, int64_t *flops_out)
{
  const int64_t ncand = pairs->num_tiles;
  const int32_t TR = A->tile_rows;
  const int par = TR > TR_OMP_MIN_ITEMS / 16;
#ifdef _OPENMP
  const int nth = par ? omp_get_max_threads() : 1;
#else
  const int nth = 1;
#endif
  uint16_t *mask = tilerap_host_alloc(16 * (size_t)ncand, sizeof(uint16_t));
  int32_t *cnt = tilerap_host_alloc((size_t)ncand, sizeof(int32_t));
  int64_t *kept_ptr = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *nnz_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *row_src = tilerap_host_alloc((size_t)TR + 1, sizeof(int64_t)); /* buffer offset of each tile row */
  int32_t *row_thr = tilerap_host_alloc((size_t)TR + 1, sizeof(int32_t));  /* and the thread that holds it */
  tr_valbuf *vb = tilerap_host_calloc((size_t)nth, sizeof(tr_valbuf));
  tilerap_tile_matrix *C = NULL;
  int err = TILERAP_SUCCESS, others = 0; /* a thread other than 0 filled rows */
  if (!mask || !cnt || !kept_ptr || !nnz_row || !row_src || !row_thr || !vb) {
    err = TILERAP_ERR_NOMEM;
    goto done;
  }
  int64_t flops = 0;
#ifdef TR_HAVE_POPCNT_VARIANT
  const int hw = __builtin_cpu_supports("popcnt");
#endif
#pragma omp parallel reduction(+ : flops) reduction(| : others) if (par)
  {
#ifdef _OPENMP
    const int th = omp_get_thread_num();
#else
    const int th = 0;
#endif
    tr_valbuf *mine = vb + th;
    double acc[256];
    for (int e = 0; e < 256; e++) acc[e] = 0.0;
#pragma omp for schedule(dynamic, 64)
    for (int32_t I = 0; I < TR; I++) {
      const int64_t nt = cand_ptr[I + 1] - cand_ptr[I];
      others |= nt && th;
      if (mine->failed || tr_valbuf_reserve(mine, 256 * nt)) continue;
      row_src[I] = mine->len;
      row_thr[I] = th;
#ifdef TR_HAVE_POPCNT_VARIANT
      if (hw) { flops += tr_fused_row_hw(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row, acc, mine); continue; }
#endif
      flops += tr_fused_row_sw(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row, acc, mine);
    }
  }
  for (int i = 0; i < nth; i++)
    if (vb[i].failed) { err = tilerap_set_error(TILERAP_ERR_NOMEM, "CPU plan: no memory for the first product's values"); goto done; }

  if ((err = tr_cpu_step2_build(A, B, cand_ptr, cand_col, pairs, &mask, cnt, kept_ptr, nnz_row, &C))) goto done;
  /* nnz_row holds prefix sums now: tile row I's values go to nnz_row[I] */
  if (!others && C->nnz) { /* thread 0 alone, rows in order: its buffer is C's value array */
    free(C->val);
    double *v = realloc(vb[0].v, (size_t)C->nnz * sizeof(double));
    C->val = v ? v : vb[0].v;
    vb[0].v = NULL;
  } else {
#pragma omp parallel for schedule(dynamic, 64) if (par)
    for (int32_t I = 0; I < TR; I++) {
      const int64_t n = nnz_row[I + 1] - nnz_row[I];
      if (n) memcpy(C->val + nnz_row[I], vb[row_thr[I]].v + row_src[I], (size_t)n * sizeof(double));
    }
  }
  *Cout = C;
  C = NULL;
  *flops_out = flops;
done:
  tilerap_tile_destroy(&C);
  if (vb)
    for (int i = 0; i < nth; i++) free(vb[i].v);
  free(vb); free(mask); free(cnt); free(kept_ptr); free(nnz_row); free(row_src); free(row_thr);
  return err;
}
