/* Step 2 (CPU): per candidate C tile, the row masks are the OR of B's row
 * masks selected by A's entries (mask_C[r] |= mask_B[k] for every stored
 * (r,k) of A(I,k)).  Popcounts give every tile's size; candidates whose
 * masks are all zero (A's columns miss B's rows) are dropped here, so C
 * stores no empty tile.  C is then allocated exactly.  The same walk
 * records, per pair, the A entries that meet a non-empty B row (the
 * "hits"), so the numeric phase skips every entry that yields nothing. */
#include "spgemm_cpu.h"

/* Masks of one pair OR-ed into m[16]; writes the hits (entry positions
 * inside A's tile whose B row is non-empty) and returns their number.
 * Only (r,k) with k in B's row-occupancy mask are visited. */
static inline int tr_pair_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int64_t a, int64_t b,
                                uint16_t m[16], uint8_t *hits, int64_t *flops)
{
  const uint16_t *ma = A->row_mask + 16 * a, *mb = B->row_mask + 16 * b;
  const uint8_t *arp = A->row_ptr + 16 * a;
  unsigned occ = 0;
  for (int k = 0; k < 16; k++) occ |= (unsigned)(mb[k] != 0) << k;
  int nh = 0;
  for (int r = 0; r < 16; r++) {
    unsigned full = ma[r], bits = full & occ;
    while (bits) {
      int k = __builtin_ctz(bits);
      bits &= bits - 1;
      m[r] |= mb[k];
      *flops += 2 * tr_popcount16(mb[k]);
      hits[nh++] = (uint8_t)(arp[r] + tr_popcount16(full & ((1u << k) - 1u)));
    }
  }
  return nh;
}

int tr_cpu_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                       const int32_t *cand_col, tr_pairs *pairs, tilerap_tile_matrix **Cout, int64_t *flops_out)
{
  const int64_t ncand = pairs->num_tiles, npairs = pairs->pair_ptr[ncand];
  const int32_t TR = A->tile_rows;
  uint16_t *mask = tilerap_host_alloc(16 * (size_t)ncand, sizeof(uint16_t));
  int32_t *cnt = tilerap_host_alloc((size_t)ncand, sizeof(int32_t));
  int64_t *kept_ptr = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *nnz_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int err = TILERAP_SUCCESS;
  tilerap_tile_matrix *C = NULL;
  if (!mask || !cnt || !kept_ptr || !nnz_row) { err = TILERAP_ERR_NOMEM; goto done; }
  pairs->hit_off = tilerap_host_alloc((size_t)npairs + 1, sizeof(int64_t));
  pairs->hit_cnt = tilerap_host_alloc((size_t)npairs + 1, sizeof(uint16_t));
  if (!pairs->hit_off || !pairs->hit_cnt) { err = TILERAP_ERR_NOMEM; goto done; }
  int64_t *ub = pairs->hit_off;
  ub[0] = 0;
  for (int64_t p = 0; p < npairs; p++) ub[p + 1] = ub[p] + (A->tile_off[pairs->pair_a[p] + 1] - A->tile_off[pairs->pair_a[p]]);
  pairs->hits = tilerap_host_alloc((size_t)ub[npairs], sizeof(uint8_t));
  if (!pairs->hits) { err = TILERAP_ERR_NOMEM; goto done; }

  int64_t flops = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : flops) if (TR > TR_OMP_MIN_ITEMS / 16)
  for (int32_t I = 0; I < TR; I++) {
    int64_t kt = 0, kn = 0;
    for (int64_t t = cand_ptr[I]; t < cand_ptr[I + 1]; t++) {
      uint16_t m[16] = {0};
      int64_t f = 0;
      for (int64_t p = pairs->pair_ptr[t]; p < pairs->pair_ptr[t + 1]; p++)
        pairs->hit_cnt[p] = (uint16_t)tr_pair_masks(A, B, pairs->pair_a[p], pairs->pair_b[p], m, pairs->hits + ub[p], &f);
      int c = 0;
      for (int r = 0; r < 16; r++) { mask[16 * t + r] = m[r]; c += tr_popcount16(m[r]); }
      cnt[t] = c;
      if (c) { kt++; kn += c; flops += f; }
    }
    kept_ptr[I + 1] = kt; nnz_row[I + 1] = kn;
  }
  for (int32_t I = 0; I < TR; I++) { kept_ptr[I + 1] += kept_ptr[I]; nnz_row[I + 1] += nnz_row[I]; }

  err = tilerap_tile_create(A->m, B->n, kept_ptr[TR], nnz_row[TR], TILERAP_MEM_HOST, &C);
  if (err) goto done;
  memcpy(C->tile_ptr, kept_ptr, ((size_t)TR + 1) * sizeof(int64_t));
#pragma omp parallel for schedule(dynamic, 64) if (TR > TR_OMP_MIN_ITEMS / 16)
  for (int32_t I = 0; I < TR; I++) {
    int64_t u = kept_ptr[I], off = nnz_row[I];
    for (int64_t t = cand_ptr[I]; t < cand_ptr[I + 1]; t++) {
      if (!cnt[t]) continue;
      C->tile_col[u] = cand_col[t];
      C->tile_off[u] = off;
      int rp = 0;
      for (int r = 0; r < 16; r++) {
        unsigned m = mask[16 * t + r];
        C->row_mask[16 * u + r] = (uint16_t)m;
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
      pairs->pair_ptr[u++] = w;
      if (w != s) {
        memmove(pairs->pair_a + w, pairs->pair_a + s, (size_t)(e - s) * sizeof(int32_t));
        memmove(pairs->pair_b + w, pairs->pair_b + s, (size_t)(e - s) * sizeof(int32_t));
        memmove(pairs->hit_off + w, pairs->hit_off + s, (size_t)(e - s) * sizeof(int64_t));
        memmove(pairs->hit_cnt + w, pairs->hit_cnt + s, (size_t)(e - s) * sizeof(uint16_t));
      }
      w += e - s;
    }
    pairs->pair_ptr[u] = w;
    pairs->num_tiles = u;
  }
  *Cout = C;
  C = NULL;
  *flops_out = flops;
done:
  tilerap_tile_destroy(&C);
  free(mask); free(cnt); free(kept_ptr); free(nnz_row);
  return err;
}
