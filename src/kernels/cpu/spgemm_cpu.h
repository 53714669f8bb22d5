/* CPU engine of the tiled SpGEMM (C + OpenMP): the three steps and the
 * plan data they share.  Not installed. */
#ifndef TILERAP_SPGEMM_CPU_H
#define TILERAP_SPGEMM_CPU_H
#include "tile_internal.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* OpenMP's team size and thread number (1 and 0 without OpenMP) */
static inline int tr_cpu_threads(void)
{
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
static inline int tr_cpu_thread(void)
{
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}
/* per-thread arrays' stride (elements): n and a cache line apart, so two
 * threads never write one line (a one-column product had both threads'
 * marks and sums on the same line) */
static inline size_t tr_cpu_stride(int64_t n) { return ((size_t)(n > 0 ? n : 1) + 15) / 16 * 16 + 16; }

/* Summation order, the same in every CPU kernel (so that they agree bit
 * for bit, and with PETSc's AIJ products): the products of a C entry
 * are added one after the other in the walk's order: pairs by ascending
 * k, each pair's A entries in storage order, each one's B row in order.
 *
 * Pairing lists: C tile t is the sum over p in [pair_ptr[t], pair_ptr[t+1])
 * of A tile pair_a[p] times B tile pair_b[p] (ordered by ascending k).
 * Nothing finer is stored: the numeric phase walks every entry (r,k) of
 * A's tile and B's row k through B's row pointers (an empty row is an
 * empty loop).  Per-pair "hit" lists of the A entries that meet a
 * non-empty B row were measured (interleaved A/B runs, 3D Poisson SA
 * hierarchies) to make numeric re-runs no faster, while building them
 * cost step 2 about a third of its time and the plan ~30% of its fresh
 * memory (int64 offset + upper-bound byte slots per pair). */
typedef struct {
  int a_transposed;   /* A enters as A^T: entry (r,k) of A^T's tile is entry (k,r) of A's */
  int64_t num_tiles;  /* C tiles the lists index */
  int64_t *pair_ptr;  /* [num_tiles+1] */
  int32_t *pair_a;    /* [pairs] */
  int32_t *pair_b;    /* [pairs] */
  /* RECORDED kernel (NULL with the tile kernel): the scalar products of
   * C tile t are rec[rec_tile_ptr[t] .. rec_tile_ptr[t+1]-1], pair after
   * pair, rec_len[p] of them for pair p; each record is (A entry) |
   * (B entry) << 8 | (C entry) << 16, positions inside the pair's A, B
   * and C tiles.  Step 2 puts each candidate tile's count in
   * rec_tile_ptr[t+1] (one array per C tile: per-pair counts would be
   * as long as the pair lists, and their first touch in the plan costs
   * page faults); the recording run fills rec and rec_len. */
  int64_t *rec_tile_ptr; /* [num_tiles+1] */
  uint16_t *rec_len;     /* [pairs]: at most 16^3 products per pair */
  uint32_t *rec;         /* [rec_tile_ptr[num_tiles]] */
  int recorded;          /* rec holds the products */
} tr_pairs;

void tr_pairs_free(tr_pairs *P);

/* Popcount of a 16-bit mask: the popcnt instruction in a variant compiled
 * for it (hw = 1; x86 only, chosen at run time), the byte table elsewhere. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define TR_HAVE_POPCNT_VARIANT 1
#endif
/* Pairs ahead whose tiles the numeric runs (replay and recording) prefetch:
 * a C tile's pairs name tiles all over A and B, and without it every pair
 * starts with two cache misses (p3d7 101^3 level-0 re-run: 63 -> 54 ms;
 * 8 or 32 pairs ahead, or a second cache line, gained less). */
#define TR_PAIR_PREFETCH 16

static inline __attribute__((always_inline)) int tr_pop16(unsigned m, const int hw)
{
  return hw ? __builtin_popcount(m) : tr_popcount16(m);
}

/* Step 1: candidate tile structure of C = A*B from the tile graphs, with
 * the pairing list of every candidate tile.  Fills tile_ptr[A->tile_rows+1],
 * *tile_col (allocated) and *pairs. */
int tr_cpu_step1_structure(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, int64_t *tile_ptr,
                           int32_t **tile_col, tr_pairs *pairs);

/* Step 2: row masks of every candidate tile (OR of B's row masks selected
 * by A's entries), popcounts, dropping of empty candidates, exact
 * allocation of C and its row pointers / packed indices.  Compacts
 * *pairs to the kept tiles.  *flops receives 2 x multiply-adds; with
 * pairs->rec_tile_ptr set, rec_tile_ptr[t+1] receives kept tile t's. */
int tr_cpu_step2_masks(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                       const int32_t *cand_col, tr_pairs *pairs, tilerap_tile_matrix **C, int64_t *flops);

/* Second half of step 2, shared with the fused walk: from the candidate
 * tiles' masks (*maskp, 16 per candidate), sizes cnt and per-tile-row
 * counts kept_ptr[I+1] (kept tiles) and nnz_row[I+1] (entries), both
 * turned into prefix sums here: allocates C exactly, writes its tiles'
 * columns and offsets, and drops the pairs of empty candidates.  Row
 * pointers and packed indices: made here from the masks (rowpp NULL), or
 * the caller's (*rowpp, 16 per candidate; the caller writes C's idx).
 * When no candidate is dropped, *maskp and *rowpp become C's arrays and
 * are set to NULL.  Values are not written. */
int tr_cpu_step2_build(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                       const int32_t *cand_col, tr_pairs *pairs, uint16_t **maskp, uint8_t **rowpp,
                       const int32_t *cnt, int64_t *kept_ptr, int64_t *nnz_row, tilerap_tile_matrix **C);

/* Steps 2 and 3 in one walk, for a plan whose first product is wanted at
 * once: every pair's masks and its products (into a dense 16x16
 * accumulator, in the summation order above) in the same pass, then the
 * exact allocation; the values wait in per-thread buffers meanwhile.
 * Same outputs as tr_cpu_step2_masks, plus C's values. */
int tr_cpu_step23_fused(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const int64_t *cand_ptr,
                        const int32_t *cand_col, tr_pairs *pairs, tilerap_tile_matrix **C, int64_t *flops);

/* Step 3: numeric values of C (sparse accumulator for tiles with at most
 * dense_threshold entries, dense 16x16 accumulator above).  No allocation. */
void tr_cpu_step3_numeric(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                          int dense_threshold, tilerap_tile_matrix *C);
/* Step 3, RECORDED kernel, recording run: the tile walk computes C and
 * writes every pair's products into pairs->rec and their count into
 * rec_len (sized by the plan: rec_tile_ptr holds the prefix sums of step
 * 2's counts), in the tile kernel's order.  Later runs: tr_cpu_step3_recorded computes C from the
 * records.  Neither allocates. */
void tr_cpu_step3_record(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                         tilerap_tile_matrix *C);
void tr_cpu_step3_recorded(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tr_pairs *pairs,
                           tilerap_tile_matrix *C);
/* C = A^T * B on the CPU engine without forming A^T: step 1 runs on the
 * tile structure of A^T (built here, dropped after planning), the pairs
 * then point at A's own tiles, and steps 2-3 read A's entries with row
 * and column swapped.  tilerap_spgemm_numeric(plan, A, B, C) takes A
 * itself.  Used by the CPU PtAP plan (P^T (AP) without a P^T copy). */
/* exported for the tests */
TILERAP_EXPORT int tr_cpu_spgemm_plan_create_atb(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                                                 const tilerap_options *opt, tilerap_spgemm_plan *plan,
                                                 tilerap_tile_matrix **C);

/* The CSR path (csr_cpu.c): a CSR view of T (transpose: of T^T) with
 * each entry's value position in T; sorted rows. */
int tr_cpu_csr_view(const tilerap_tile_matrix *T, int transpose, int64_t **rp, int32_t **col, int64_t **vidx);
/* Gustavson's product C = A*B on CSR views: create counts C's rows
 * (C is m x n), fill writes C's columns (sorted in each row, or in no
 * order: an intermediate product) and values into cval (NULL: none),
 * numeric writes values at cval[cvidx[p]].  Values of an operand are
 * val[vidx[e]] (vidx NULL: val[e]).  The arrays passed to create must
 * outlive the product. */
typedef struct tr_cpu_csr_product tr_cpu_csr_product;
int tr_cpu_csr_product_create(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                              const int32_t *bcol, tr_cpu_csr_product **P, int64_t *cnnz, int64_t *macs);
/* create and fill in one pass (values too where aval and bval are given;
 * entries: C's estimated size; *P NULL where several threads found the
 * estimate short: count first then): C's columns and values wait in
 * buffers until take makes them C's columns and the new array *val (the
 * caller frees it; zeros where built without values) */
int tr_cpu_csr_product_build(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                             const int32_t *bcol, const double *aval, const int64_t *avidx, const double *bval,
                             const int64_t *bvidx, int sorted, int64_t entries, tr_cpu_csr_product **P,
                             int64_t *cnnz, int64_t *macs);
int tr_cpu_csr_product_take(tr_cpu_csr_product *P, double **val); /* val NULL: no values array */
/* whether C = A*B is better built in one pass (its entries sum many
 * products each), and C's entries estimated */
int tr_cpu_csr_product_one_pass(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                                const int32_t *bcol, int64_t *entries);
const int64_t *tr_cpu_csr_product_rowptr(const tr_cpu_csr_product *P);
const int32_t *tr_cpu_csr_product_colidx(const tr_cpu_csr_product *P);
/* n distinct columns ascending (quicksort down to runs of 24, then
 * insertion: qsort's comparison calls cost more than AMG rows' products) */
void tr_cpu_sort_i32(int32_t *v, int64_t n);
/* the bytes P holds (C's structure, the per-thread accumulators, a one-pass buffer not yet taken) */
int64_t tr_cpu_csr_product_bytes(const tr_cpu_csr_product *P);
int tr_cpu_csr_product_fill(tr_cpu_csr_product *P, const double *aval, const int64_t *avidx, const double *bval,
                            const int64_t *bvidx, double *cval, int sorted);
int tr_cpu_csr_product_numeric(tr_cpu_csr_product *P, const double *aval, const int64_t *avidx, const double *bval,
                               const int64_t *bvidx, double *cval, const int64_t *cvidx);
void tr_cpu_csr_product_destroy(tr_cpu_csr_product *P);
/* operands' arrays again (same structure, e.g. a caller's arrays that
 * moved between numeric runs) */
void tr_cpu_csr_product_bind(tr_cpu_csr_product *P, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                             const int32_t *bcol);
/* T = A^T of an m x n CSR A (rows sorted), vidx: A's entry of each of T's
 * (tvidx NULL: none made) */
int tr_cpu_csr_transpose(int32_t m, int32_t n, const int64_t *rp, const int32_t *col, int64_t **trp,
                         int32_t **tcol, int64_t **tvidx);
/* P^T A P without AP (csr_cpu_ptap_walk.c): P^T's view and per-thread
 * scratch for A (nf x nf) and P (nf x nc); the first product (C's rows
 * sorted; zeros unless values); numeric runs on C's structure (no
 * allocation) */
typedef struct tr_cpu_ptap_walk tr_cpu_ptap_walk;
int tr_cpu_ptap_walk_new(const tilerap_csr *A, const tilerap_csr *P, tr_cpu_ptap_walk **W);
int tr_cpu_ptap_walk_first(tr_cpu_ptap_walk *W, const tilerap_csr *A, const tilerap_csr *P, int values,
                           tilerap_csr **C, int64_t *macs);
int tr_cpu_ptap_walk_numeric(tr_cpu_ptap_walk *W, const tilerap_csr *A, const tilerap_csr *P, const int64_t *crp,
                             const int32_t *ccol, double *cval);
void tr_cpu_ptap_walk_destroy(tr_cpu_ptap_walk *W);
int64_t tr_cpu_ptap_walk_bytes(const tr_cpu_ptap_walk *W);
/* tilerap_csr_graph_i32 (graph_cpu.c), arguments other than the arrays checked */
int tr_cpu_csr_graph(int32_t m, int32_t bs, const int32_t *rp, const int32_t *col, const double *val,
                     unsigned flags, tilerap_csr **G);

#endif
