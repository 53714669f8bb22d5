/* CPU engine of the tiled SpGEMM (C + OpenMP): the three steps and the
 * plan data they share.  Not installed. */
#ifndef TILERAP_SPGEMM_CPU_H
#define TILERAP_SPGEMM_CPU_H
#include "tile_internal.h"

/* Pairing lists: C tile t is the sum over p in [pair_ptr[t], pair_ptr[t+1])
 * of A tile pair_a[p] times B tile pair_b[p] (ordered by ascending k). */
/* Hits (built in step 2): for pair p, hits[hit_off[p] .. +hit_cnt[p]) are
 * the entries of A's tile (positions inside the tile) whose column k meets
 * a non-empty row k of B's tile; only these produce products, so step 3
 * visits nothing else.  Each pair's slot is sized by its A tile's entry
 * count, so the hits are written once, in place, without a compaction. */
typedef struct {
  int64_t num_tiles;  /* C tiles the lists index */
  int64_t *pair_ptr;  /* [num_tiles+1] */
  int32_t *pair_a;    /* [pairs] */
  int32_t *pair_b;    /* [pairs] */
  int64_t *hit_off;   /* [pairs] (after step 2) */
  uint16_t *hit_cnt;  /* [pairs] */
  uint8_t *hits;
} tr_pairs;

void tr_pairs_free(tr_pairs *P);

/* Step 1: candidate tile structure of C = A*B from the tile graphs, with
 * the pairing list of every candidate tile.  Fills tile_ptr[A->tile_rows+1],
 * *tile_col (allocated) and *pairs. */
int tr_cpu_step1_structure(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int64_t *tile_ptr,
                           int32_t **tile_col, tr_pairs *pairs);

/* Step 2: row masks of every candidate tile (OR of B's row masks selected
 * by A's entries), popcounts, dropping of empty candidates, exact
 * allocation of C and its row pointers / packed indices.  Compacts
 * *pairs to the kept tiles.  *flops receives 2 x multiply-adds. */
int tr_cpu_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                       const int32_t *cand_col, tr_pairs *pairs, tilerap_tile_matrix **C, int64_t *flops);

/* Step 3: numeric values of C (sparse accumulator for tiles with at most
 * dense_threshold entries, dense 16x16 accumulator above).  No allocation. */
void tr_cpu_step3_numeric(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                          int dense_threshold, tilerap_tile_matrix *C);
#endif
