/* Step 2 (CPU): per candidate C tile, the row masks are the OR of B's row
 * masks selected by A's entries (mask_C[r] |= mask_B[k] for every stored
 * (r,k) of A(I,k)).  Popcounts give every tile's size; candidates whose
 * masks are all zero (A's columns miss B's rows) are dropped here, so C
 * stores no empty tile.  C is then allocated exactly. */
#include "spgemm_cpu.h"

int tr_cpu_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                       const int32_t *cand_col, tr_pairs *pairs, tilerap_tile_matrix **Cout, int64_t *flops_out)
{
  const int64_t ncand = pairs->num_tiles;
  const int32_t TR = A->tile_rows;
  uint16_t *mask = tilerap_host_alloc(16 * (size_t)ncand, sizeof(uint16_t));
  int32_t *cnt = tilerap_host_alloc((size_t)ncand, sizeof(int32_t));
  int64_t *kept_ptr = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *nnz_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int64_t *pairs_row = tilerap_host_calloc((size_t)TR + 1, sizeof(int64_t));
  int err = TILERAP_SUCCESS;
  tilerap_tile_matrix *C = NULL;
  tr_pairs kept = {0};
  if (!mask || !cnt || !kept_ptr || !nnz_row || !pairs_row) { err = TILERAP_ERR_NOMEM; goto done; }

  int64_t flops = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : flops)
  for (int32_t I = 0; I < TR; I++) {
    int64_t kt = 0, kn = 0, kp = 0;
    for (int64_t t = cand_ptr[I]; t < cand_ptr[I + 1]; t++) {
      uint16_t m[16] = {0};
      for (int64_t p = pairs->pair_ptr[t]; p < pairs->pair_ptr[t + 1]; p++) {
        const uint16_t *ma = A->row_mask + 16 * (int64_t)pairs->pair_a[p];
        const uint16_t *mb = B->row_mask + 16 * (int64_t)pairs->pair_b[p];
        for (int r = 0; r < 16; r++) {
          unsigned bits = ma[r];
          while (bits) {
            int k = __builtin_ctz(bits);
            bits &= bits - 1;
            m[r] |= mb[k];
            flops += 2 * tr_popcount16(mb[k]);
          }
        }
      }
      int c = 0;
      for (int r = 0; r < 16; r++) { mask[16 * t + r] = m[r]; c += tr_popcount16(m[r]); }
      cnt[t] = c;
      if (c) { kt++; kn += c; kp += pairs->pair_ptr[t + 1] - pairs->pair_ptr[t]; }
    }
    kept_ptr[I + 1] = kt; nnz_row[I + 1] = kn; pairs_row[I + 1] = kp;
  }
  for (int32_t I = 0; I < TR; I++) {
    kept_ptr[I + 1] += kept_ptr[I]; nnz_row[I + 1] += nnz_row[I]; pairs_row[I + 1] += pairs_row[I];
  }

  err = tilerap_tile_create(A->m, B->n, kept_ptr[TR], nnz_row[TR], TILERAP_MEM_HOST, &C);
  if (err) goto done;
  kept.num_tiles = C->num_tiles;
  kept.pair_ptr = tilerap_host_alloc((size_t)C->num_tiles + 1, sizeof(int64_t));
  kept.pair_a = tilerap_host_alloc((size_t)pairs_row[TR], sizeof(int32_t));
  kept.pair_b = tilerap_host_alloc((size_t)pairs_row[TR], sizeof(int32_t));
  if (!kept.pair_ptr || !kept.pair_a || !kept.pair_b) { err = TILERAP_ERR_NOMEM; goto done; }
  memcpy(C->tile_ptr, kept_ptr, ((size_t)TR + 1) * sizeof(int64_t));

#pragma omp parallel for schedule(dynamic, 64)
  for (int32_t I = 0; I < TR; I++) {
    int64_t u = kept_ptr[I], off = nnz_row[I], pp = pairs_row[I];
    for (int64_t t = cand_ptr[I]; t < cand_ptr[I + 1]; t++) {
      if (!cnt[t]) continue;
      C->tile_col[u] = cand_col[t];
      C->tile_off[u] = off;
      kept.pair_ptr[u] = pp;
      for (int64_t p = pairs->pair_ptr[t]; p < pairs->pair_ptr[t + 1]; p++, pp++) {
        kept.pair_a[pp] = pairs->pair_a[p];
        kept.pair_b[pp] = pairs->pair_b[p];
      }
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
  kept.pair_ptr[C->num_tiles] = pairs_row[TR];
  tr_pairs_free(pairs);
  *pairs = kept;
  memset(&kept, 0, sizeof kept);
  *Cout = C;
  C = NULL;
  *flops_out = flops;
done:
  tr_pairs_free(&kept);
  tilerap_tile_destroy(&C);
  free(mask); free(cnt); free(kept_ptr); free(nnz_row); free(pairs_row);
  return err;
}
