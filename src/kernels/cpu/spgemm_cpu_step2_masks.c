/* Step 2 (CPU): per candidate C tile, the row masks are the OR of B's row
 * masks selected by A's entries (mask_C[r] |= mask_B[k] for every stored
 * (r,k) of A(I,k)).  Popcounts give every tile's size; candidates whose
 * masks are all zero (A's columns miss B's rows) are dropped here, so C
 * stores no empty tile.  C is then allocated exactly. */
#include "spgemm_cpu.h"

#define TR_PF_DIST 16 /* pairs ahead whose B masks are prefetched */

/* Masks of one pair OR-ed into m[16], branch-free: every entry (r,k) of
 * A's tile ORs in B's row k (an empty row adds nothing).  Returns the
 * pair's multiply-adds. */
static inline __attribute__((always_inline)) int64_t tr_pair_masks(const tilerap_tile_matrix *A,
                                                                   const tilerap_tile_matrix *B, int64_t a, int64_t b,
                                                                   uint16_t m[16], const int at, const int hw)
{
  const uint16_t *mb = B->row_mask + 16 * b;
  const int64_t ao = A->tile_off[a];
  const uint8_t *ai = A->idx + ao;
  const int na = (int)(A->tile_off[a + 1] - ao);
  int64_t f = 0;
  for (int e = 0; e < na; e++) {
    const unsigned id = at ? (unsigned)((ai[e] & 15u) << 4 | ai[e] >> 4) : ai[e], mk = mb[id & 15u];
    m[id >> 4] |= (uint16_t)mk;
    f += tr_pop16(mk, hw);
  }
  return f;
}

/* Masks, counts and sizes of the candidate tiles of tile row I; returns
 * the kept tiles' flops (2 x multiply-adds). */
static inline __attribute__((always_inline)) int64_t tr_masks_row(const tilerap_tile_matrix *A,
                                                                  const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                                                                  tr_pairs *pairs, int32_t I, uint16_t *mask, int32_t *cnt,
                                                                  int64_t *kept_ptr, int64_t *nnz_row, const int hw)
{
  const int64_t np_all = pairs->pair_ptr[pairs->num_tiles];
  const int at = pairs->a_transposed;
  int64_t kt = 0, kn = 0, flops = 0;
  for (int64_t t = cand_ptr[I]; t < cand_ptr[I + 1]; t++) {
    uint16_t m[16] = {0};
    int64_t f = 0;
    for (int64_t p = pairs->pair_ptr[t]; p < pairs->pair_ptr[t + 1]; p++) {
      /* the pairs' B tiles lie far apart: fetching their masks (and the
       * A entries) ahead hides some misses (measured 1-2 % of a first
       * product at 101^3) */
      if (p + TR_PF_DIST < np_all) {
        __builtin_prefetch(B->row_mask + 16 * (int64_t)pairs->pair_b[p + TR_PF_DIST]);
        __builtin_prefetch(A->idx + A->tile_off[pairs->pair_a[p + TR_PF_DIST / 2]]);
      }
      f += at ? tr_pair_masks(A, B, pairs->pair_a[p], pairs->pair_b[p], m, 1, hw)
              : tr_pair_masks(A, B, pairs->pair_a[p], pairs->pair_b[p], m, 0, hw);
    }
    if (pairs->rec_tile_ptr) pairs->rec_tile_ptr[t + 1] = f; /* the RECORDED kernel's counts */
    int c = 0;
    for (int r = 0; r < 16; r++) { mask[16 * t + r] = m[r]; c += tr_pop16(m[r], hw); }
    cnt[t] = c;
    if (c) { kt++; kn += c; flops += 2 * f; }
  }
  kept_ptr[I + 1] = kt; nnz_row[I + 1] = kn;
  return flops;
}

static int64_t tr_masks_row_sw(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                               tr_pairs *pairs, int32_t I, uint16_t *mask, int32_t *cnt, int64_t *kept_ptr, int64_t *nnz_row)
{
  return tr_masks_row(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row, 0);
}

#ifdef TR_HAVE_POPCNT_VARIANT
/* x86-64's baseline has no popcnt; this variant runs where the CPU has it
 * (one instruction instead of two table loads per entry: measured 7-8 %
 * of a first product at 101^3) */
__attribute__((target("popcnt"))) static int64_t tr_masks_row_hw(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                                                                 const int64_t *cand_ptr, tr_pairs *pairs, int32_t I,
                                                                 uint16_t *mask, int32_t *cnt, int64_t *kept_ptr,
                                                                 int64_t *nnz_row)
{
  return tr_masks_row(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row, 1);
}
#endif

int tr_cpu_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                       const int32_t *cand_col, tr_pairs *pairs, tilerap_tile_matrix **Cout, int64_t *flops_out)
{
  const int64_t ncand = pairs->num_tiles;
  const int32_t TR = A->tile_rows;
  uint16_t *mask = tilerap_host_alloc(16 * (size_t)ncand, sizeof(uint16_t));
  int32_t *cnt = tilerap_host_alloc((size_t)ncand, sizeof(int32_t));
  int64_t *kept_ptr = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *nnz_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int err = TILERAP_SUCCESS;
  if (!mask || !cnt || !kept_ptr || !nnz_row) { err = TILERAP_ERR_NOMEM; goto done; }
  int64_t flops = 0;
#ifdef TR_HAVE_POPCNT_VARIANT
  const int hw = __builtin_cpu_supports("popcnt");
#endif
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : flops) if (TR > TR_OMP_MIN_ITEMS / 16)
  for (int32_t I = 0; I < TR; I++) {
#ifdef TR_HAVE_POPCNT_VARIANT
    if (hw) { flops += tr_masks_row_hw(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row); continue; }
#endif
    flops += tr_masks_row_sw(A, B, cand_ptr, pairs, I, mask, cnt, kept_ptr, nnz_row);
  }
  err = tr_cpu_step2_build(A, B, cand_ptr, cand_col, pairs, &mask, NULL, cnt, kept_ptr, nnz_row, Cout);
  *flops_out = flops;
done:
  free(mask); free(cnt); free(kept_ptr); free(nnz_row);
  return err;
}

int tr_cpu_step2_build(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                       const int32_t *cand_col, tr_pairs *pairs, uint16_t **maskp, uint8_t **rowpp,
                       const int32_t *cnt, int64_t *kept_ptr, int64_t *nnz_row, tilerap_tile_matrix **Cout)
{
  const int64_t ncand = pairs->num_tiles;
  const int32_t TR = A->tile_rows;
  tilerap_tile_matrix *C = NULL;
  for (int32_t I = 0; I < TR; I++) { kept_ptr[I + 1] += kept_ptr[I]; nnz_row[I + 1] += nnz_row[I]; }

  int err = tilerap_tile_create(A->m, B->n, kept_ptr[TR], nnz_row[TR], TILERAP_MEM_HOST, &C);
  if (err) return err;
  memcpy(C->tile_ptr, kept_ptr, ((size_t)TR + 1) * sizeof(int64_t));
  /* no candidate dropped (the rule on AMG products): the candidate masks
   * are C's masks as they stand; C's own array was never touched, so
   * swapping saves a copy and the page faults of a second array */
  const uint16_t *cmask = *maskp;
  const uint8_t *crowp = rowpp ? *rowpp : NULL;
  const int adopt = C->num_tiles == ncand;
  if (adopt) {
    free(C->row_mask);
    C->row_mask = *maskp;
    *maskp = NULL;
    cmask = C->row_mask;
    if (rowpp) { free(C->row_ptr); C->row_ptr = *rowpp; *rowpp = NULL; }
  }
#pragma omp parallel for schedule(dynamic, 64) if (TR > TR_OMP_MIN_ITEMS / 16)
  for (int32_t I = 0; I < TR; I++) {
    int64_t u = kept_ptr[I], off = nnz_row[I];
    for (int64_t t = cand_ptr[I]; t < cand_ptr[I + 1]; t++) {
      if (!cnt[t]) continue;
      C->tile_col[u] = cand_col[t];
      C->tile_off[u] = off;
      int rp = 0;
      if (crowp) { /* the walk's tiles: indices and row pointers are made */
        rp = cnt[t];
        if (!adopt) {
          memcpy(C->row_mask + 16 * u, cmask + 16 * t, 16 * sizeof(uint16_t));
          memcpy(C->row_ptr + 16 * u, crowp + 16 * t, 16);
        }
      } else
        for (int r = 0; r < 16; r++) {
          unsigned m = cmask[16 * t + r];
          C->row_mask[16 * u + r] = (uint16_t)m; /* u == t when cmask is C's */
          C->row_ptr[16 * u + r] = (uint8_t)rp;
          while (m) {
            int c = __builtin_ctz(m);
            m &= m - 1;
            C->idx[off + rp++] = (uint8_t)((r << 4) | c);
          }
        }
      off += rp;
      u++;
    }
  }
  C->tile_off[C->num_tiles] = C->nnz;

  /* drop the pairs of empty candidates, in place (destinations never pass
   * their sources); nothing to do in the common case of no empty tile */
  if (C->num_tiles < ncand) {
    int64_t u = 0, w = 0;
    for (int64_t t = 0; t < ncand; t++) {
      int64_t s = pairs->pair_ptr[t], e = pairs->pair_ptr[t + 1];
      if (!cnt[t]) continue;
      if (pairs->rec_tile_ptr) pairs->rec_tile_ptr[u + 1] = pairs->rec_tile_ptr[t + 1]; /* u <= t */
      pairs->pair_ptr[u++] = w;
      if (w != s) {
        memmove(pairs->pair_a + w, pairs->pair_a + s, (size_t)(e - s) * sizeof(int32_t));
        memmove(pairs->pair_b + w, pairs->pair_b + s, (size_t)(e - s) * sizeof(int32_t));
      }
      w += e - s;
    }
    pairs->pair_ptr[u] = w;
    pairs->num_tiles = u;
  }
  *Cout = C;
  return TILERAP_SUCCESS;
}
