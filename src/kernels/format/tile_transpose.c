/* Transpose in tile form: tile (I,J) becomes tile (J,I) and each tile is
 * transposed locally (masks as a 16x16 bit matrix, entries re-sorted by
 * new row).  The value permutation lets a plan refresh T^T's values from
 * T's with one gather, without redoing any of this. */
#include "tile_internal.h"
#include "engine_cuda.h"

int tilerap_tile_transpose(const tilerap_tile_matrix *T, tilerap_tile_matrix **Tt_out, int64_t **perm_out)
{
  if (!Tt_out) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_tile_transpose: NULL output");
  *Tt_out = NULL;
  if (perm_out) *perm_out = NULL;
  if (!T) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_tile_transpose: NULL matrix");
  if (T->memtype == TILERAP_MEM_DEVICE) {
#ifdef TILERAP_HAVE_CUDA
    return tr_cuda_tile_transpose(T, Tt_out, perm_out, NULL);
#else
    return tilerap_set_error(TILERAP_ERR_ENGINE, "device matrices need a CUDA build of tilerap");
#endif
  }
  tilerap_tile_matrix *Tt = NULL;
  int err = tilerap_tile_create(T->n, T->m, T->num_tiles, T->nnz, TILERAP_MEM_HOST, &Tt);
  if (err) return err;
  int64_t *where = tilerap_host_alloc((size_t)T->num_tiles, sizeof(int64_t)); /* tile t -> tile of Tt */
  int64_t *cursor = tilerap_host_calloc((size_t)Tt->tile_rows + 1, sizeof(int64_t));
  int64_t *perm = perm_out ? tilerap_host_alloc((size_t)T->nnz, sizeof(int64_t)) : NULL;
  if (!where || !cursor || (perm_out && !perm)) { err = TILERAP_ERR_NOMEM; goto fail; }

  memset(Tt->tile_ptr, 0, ((size_t)Tt->tile_rows + 1) * sizeof(int64_t));
  for (int64_t t = 0; t < T->num_tiles; t++) Tt->tile_ptr[T->tile_col[t] + 1]++;
  for (int32_t J = 0; J < Tt->tile_rows; J++) Tt->tile_ptr[J + 1] += Tt->tile_ptr[J];
  memcpy(cursor, Tt->tile_ptr, (size_t)Tt->tile_rows * sizeof(int64_t));
  /* tile rows of T in ascending order keep Tt's tile columns ascending */
  for (int32_t I = 0; I < T->tile_rows; I++)
    for (int64_t t = T->tile_ptr[I]; t < T->tile_ptr[I + 1]; t++) {
      int64_t u = cursor[T->tile_col[t]]++;
      where[t] = u;
      Tt->tile_col[u] = I;
    }
  for (int64_t t = 0; t < T->num_tiles; t++) Tt->tile_off[where[t] + 1] = T->tile_off[t + 1] - T->tile_off[t];
  Tt->tile_off[0] = 0;
  for (int64_t u = 0; u < Tt->num_tiles; u++) Tt->tile_off[u + 1] += Tt->tile_off[u];

#pragma omp parallel for schedule(static) if (T->num_tiles > TR_OMP_MIN_ITEMS)
  for (int64_t t = 0; t < T->num_tiles; t++) {
    int64_t u = where[t];
    const uint16_t *m = T->row_mask + 16 * t;
    uint16_t *mt = Tt->row_mask + 16 * u;
    for (int c = 0; c < 16; c++) mt[c] = 0;
    for (int r = 0; r < 16; r++) {
      unsigned bits = m[r];
      while (bits) {
        int c = __builtin_ctz(bits);
        bits &= bits - 1;
        mt[c] |= (uint16_t)(1u << r);
      }
    }
    uint8_t next[16];
    int acc = 0;
    for (int c = 0; c < 16; c++) { Tt->row_ptr[16 * u + c] = (uint8_t)acc; next[c] = (uint8_t)acc; acc += tr_popcount16(mt[c]); }
    int64_t src = T->tile_off[t], dst = Tt->tile_off[u];
    int len = (int)(T->tile_off[t + 1] - src);
    for (int e = 0; e < len; e++) { /* old rows ascending -> new columns ascending */
      uint8_t x = T->idx[src + e];
      int r = x >> 4, c = x & 15;
      int q = next[c]++;
      Tt->idx[dst + q] = (uint8_t)((c << 4) | r);
      Tt->val[dst + q] = T->val[src + e];
      if (perm) perm[dst + q] = src + e;
    }
  }
  free(where); free(cursor);
  *Tt_out = Tt;
  if (perm_out) *perm_out = perm;
  return TILERAP_SUCCESS;
fail:
  free(where); free(cursor); free(perm);
  tilerap_tile_destroy(&Tt);
  return err;
}
