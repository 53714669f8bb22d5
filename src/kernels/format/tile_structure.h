/* Structure hash of a tile matrix, shared by the host (tile_structure.c)
 * and device (tile_cuda_structure.cu) versions so that both give the same
 * two words.  Each word is the wrapping sum of a per-element hash over the
 * tile-row pointers and the tiles (column, entry offset and the 16 row
 * masks, with the element's position), so any split of the work gives the
 * same sum and two structures that differ anywhere differ in both words
 * except with probability about 2^-128. */
#ifndef TILERAP_TILE_STRUCTURE_H
#define TILERAP_TILE_STRUCTURE_H
#include "csr_fingerprint.h" /* tr_fp_mix, TR_FP_HD */

/* the two words' seeds */
#define TR_SH_SEED0 0x243f6a8885a308d3ull
#define TR_SH_SEED1 0x13198a2e03707344ull

TR_FP_HD uint64_t tr_sh_tile_ptr(uint64_t seed, int64_t I, int64_t next)
{
  return tr_fp_mix(tr_fp_mix(seed ^ 0xa4093822299f31d0ull ^ (uint64_t)I) + (uint64_t)next);
}

/* masks: the tile's 16 row masks as four 64-bit words */
TR_FP_HD uint64_t tr_sh_tile(uint64_t seed, int64_t t, int32_t col, int64_t off, const uint64_t masks[4])
{
  uint64_t x = tr_fp_mix(seed ^ (uint64_t)t);
  x = tr_fp_mix(x ^ ((uint64_t)(uint32_t)col << 32));
  x = tr_fp_mix(x + (uint64_t)off);
  for (int j = 0; j < 4; j++) x = tr_fp_mix(x ^ masks[j]);
  return x;
}

TR_FP_HD uint64_t tr_sh_sizes(uint64_t seed, int32_t m, int32_t n, int64_t num_tiles, int64_t nnz)
{
  uint64_t x = tr_fp_mix(seed ^ ((uint64_t)(uint32_t)m << 32) ^ (uint32_t)n);
  x = tr_fp_mix(x + (uint64_t)num_tiles);
  return tr_fp_mix(x ^ (uint64_t)nnz);
}
#endif
