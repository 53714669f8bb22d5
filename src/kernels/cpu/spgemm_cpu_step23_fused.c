/* Steps 2 and 3 fused (CPU), for plans created together with their first
 * product.  Step 2 and the numeric walk visit the same pairs and the same
 * A entries; done apart, each pays for fetching the pairs' tiles.  Here one
 * walk per candidate tile ORs the row masks and adds the products into a
 * dense 16x16 accumulator (C's structure is not known yet), then packs the
 * tile's values and packed indices in mask order (which is C's entry
 * order) into a per-thread buffer, and its row pointers into a per-
 * candidate array.  After the exact allocation the buffers are copied into
 * C; a single thread's buffers are C's value and index arrays already and
 * are adopted (so are the masks and row pointers when no candidate is
 * dropped).
 * Products are added in the order of every other CPU kernel, so C is the
 * same bit for bit. */
#include "spgemm_cpu.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define TR_PF_DIST 16 /* pairs ahead whose B tiles are prefetched */

/* Per-thread buffer of packed tiles: values and their packed (row, col)
 * bytes, which are C's idx as they stand (packing visits the entries in
 * C's order anyway; a second pass over the masks in step 2's build cost
 * a sixth of the AP walk at 101^3).  Grows by doubling; realloc of large
 * blocks remaps pages instead of copying them. */
typedef struct {
  double *v;
  uint8_t *ix;
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
  uint8_t *ix = realloc(vb->ix, (size_t)cap);
  if (!ix) return vb->failed = 1;
  vb->ix = ix;
  vb->cap = cap;
  return 0;
}

/* Adopts buf (bytes long once shrunk) in place of one of C's arrays, old,
 * which is freed. */
static void *tr_adopt(void *old, void *buf, size_t bytes)
{
  free(old);
  void *p = realloc(buf, bytes);
  return p ? p : buf;
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
  const int na = (int)(A->tile_off[a + 1] - ao);
  int64_t f = 0;
  for (int e = 0; e < na; e++) {
    const unsigned id = at ? (unsigned)((ai[e] & 15u) << 4 | ai[e] >> 4) : ai[e], k = id & 15u, mk = mb[k];
    m[id >> 4] |= (uint16_t)mk;
    /* an empty B row ends the visit here, on the branch the row's loop
     * would take anyway; B's row k holds popcount(mask) entries: no
     * second row pointer to load, no special case for the last row */
    if (!mk) continue;
    const int fs = brp[k], fe = fs + tr_pop16(mk, hw);
    f += fe - fs;
    const double x = av[e];
    double *ar = acc + 16 * (id >> 4);
    int g = fs;
    do ar[bi[g] & 15] += x * bv[g];
    while (++g < fe);
  }
  return f;
}

/* Tile row I: masks, sizes and packed values of its candidate tiles.
 * Returns the kept tiles' flops (2 x multiply-adds). */
static inline __attribute__((always_inline)) int64_t tr_fused_row(const tilerap_tile_matrix *A,
                                                                  const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                                                                  tr_pairs *pairs, int32_t I, uint16_t *mask,
                                                                  uint8_t *rowp, int32_t *cnt, int64_t *kept_ptr, int64_t *nnz_row,
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
        /* A^T * B: the pairs' A tiles lie in different tile rows of A, so
         * fetch them ahead too; A * B pairs reuse a tile row's few A tiles
         * (the extra dependent load cost the AP walk ~5 ms at 101^3) */
        if (at) __builtin_prefetch(A->idx + A->tile_off[pairs->pair_a[p + TR_PF_DIST / 2]]);
      }
      f += at ? tr_pair_fused(A, B, pairs->pair_a[p], pairs->pair_b[p], m, acc, 1, hw)
              : tr_pair_fused(A, B, pairs->pair_a[p], pairs->pair_b[p], m, acc, 0, hw);
    }
    if (pairs->rec_tile_ptr) pairs->rec_tile_ptr[t + 1] = f;
    /* pack in C's entry order (rows, then columns ascending) and clear
     * exactly the touched entries: every product lands on a mask bit */
    double *out = vb->v + vb->len;
    uint8_t *oix = vb->ix + vb->len;
    int c = 0;
    for (int q = 0; q < 4; q++) { /* four rows per 64-bit word: 4 loop exits per tile instead of 16 */
      uint64_t w = 0;
      int run = c;
      for (int i = 0; i < 4; i++) {
        const unsigned mr = m[4 * q + i];
        mask[16 * t + 4 * q + i] = (uint16_t)mr;
        rowp[16 * t + 4 * q + i] = (uint8_t)run;
        run += tr_pop16(mr, hw);
        w |= (uint64_t)mr << (16 * i);
      }
      while (w) {
        const int j = 64 * q + __builtin_ctzll(w);
        w &= w - 1;
        oix[c] = (uint8_t)j; /* (row << 4) | col */
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
                               tr_pairs *pairs, int32_t I, uint16_t *mask, uint8_t *rowp, int32_t *cnt, int64_t *kept_ptr,
                               int64_t *nnz_row, double *acc, tr_valbuf *vb)
{
  return tr_fused_row(A, B, cand_ptr, pairs, I, mask, rowp, cnt, kept_ptr, nnz_row, acc, vb, 0);
}

#ifdef TR_HAVE_POPCNT_VARIANT
__attribute__((target("popcnt"))) static int64_t tr_fused_row_hw(const tilerap_tile_matrix *A,
                                                                 const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                                                                 tr_pairs *pairs, int32_t I, uint16_t *mask,
                                                                 uint8_t *rowp, int32_t *cnt, int64_t *kept_ptr, int64_t *nnz_row,
                                                                 double *acc, tr_valbuf *vb)
{
  return tr_fused_row(A, B, cand_ptr, pairs, I, mask, rowp, cnt, kept_ptr, nnz_row, acc, vb, 1);
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
  uint8_t *rowp = tilerap_host_alloc(16 * (size_t)ncand, 1);
  int32_t *cnt = tilerap_host_alloc((size_t)ncand, sizeof(int32_t));
  int64_t *kept_ptr = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *nnz_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *row_src = tilerap_host_alloc((size_t)TR + 1, sizeof(int64_t)); /* buffer offset of each tile row */
  int32_t *row_thr = tilerap_host_alloc((size_t)TR + 1, sizeof(int32_t));  /* and the thread that holds it */
  tr_valbuf *vb = tilerap_host_calloc((size_t)nth, sizeof(tr_valbuf));
  tilerap_tile_matrix *C = NULL;
  int err = TILERAP_SUCCESS, others = 0; /* a thread other than 0 filled rows */
  if (!mask || !rowp || !cnt || !kept_ptr || !nnz_row || !row_src || !row_thr || !vb) {
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
      if (hw) { flops += tr_fused_row_hw(A, B, cand_ptr, pairs, I, mask, rowp, cnt, kept_ptr, nnz_row, acc, mine); continue; }
#endif
      flops += tr_fused_row_sw(A, B, cand_ptr, pairs, I, mask, rowp, cnt, kept_ptr, nnz_row, acc, mine);
    }
  }
  for (int i = 0; i < nth; i++)
    if (vb[i].failed) { err = tilerap_set_error(TILERAP_ERR_NOMEM, "CPU plan: no memory for the first product's values"); goto done; }

  if ((err = tr_cpu_step2_build(A, B, cand_ptr, cand_col, pairs, &mask, &rowp, cnt, kept_ptr, nnz_row, &C))) goto done;
  /* nnz_row holds prefix sums now: tile row I's values go to nnz_row[I] */
  if (!others && C->nnz) { /* thread 0 alone, rows in order: its buffers are C's arrays */
    C->val = tr_adopt(C->val, vb[0].v, (size_t)C->nnz * sizeof(double));
    C->idx = tr_adopt(C->idx, vb[0].ix, (size_t)C->nnz);
    vb[0].v = NULL; vb[0].ix = NULL;
  } else {
#pragma omp parallel for schedule(dynamic, 64) if (par)
    for (int32_t I = 0; I < TR; I++) {
      const int64_t n = nnz_row[I + 1] - nnz_row[I];
      if (!n) continue;
      const tr_valbuf *src = vb + row_thr[I];
      memcpy(C->val + nnz_row[I], src->v + row_src[I], (size_t)n * sizeof(double));
      memcpy(C->idx + nnz_row[I], src->ix + row_src[I], (size_t)n);
    }
  }
  *Cout = C;
  C = NULL;
  *flops_out = flops;
done:
  tilerap_tile_destroy(&C);
  if (vb)
    for (int i = 0; i < nth; i++) { free(vb[i].v); free(vb[i].ix); }
  free(vb); free(mask); free(rowp); free(cnt); free(kept_ptr); free(nnz_row); free(row_src); free(row_thr);
  return err;
}
