/* C = A*B with the CUDA engine against the CPU engine (identical tile
 * structure, plan info, values within 1e-14) and the Gustavson reference:
 * odd and rectangular sizes, empty rows and tiles, dense tiles, both
 * accumulators (and both in one numeric chunk), tiles heavier than a
 * chunk, host-resident and device-resident interfaces, reuse with
 * new values (outputs poisoned with NaN before every numeric run). */
#include "test_gpu_common.h"

static void check_product(const tilerap_csr *A, const tilerap_csr *B, int thr, const char *what)
{
  tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B);
  tilerap_options oc = gpu_opts(TILERAP_ENGINE_CPU, thr), og = gpu_opts(TILERAP_ENGINE_CUDA, thr);
  tilerap_spgemm_plan pc = NULL, ph = NULL, pd = NULL;
  tilerap_tile_matrix *Cc = NULL, *Ch = NULL, *dC = NULL, *Cd = NULL;
  tilerap_tile_matrix *dA = gpu_to_device(hA), *dB = gpu_to_device(hB);
  tilerap_csr *R = ref_spgemm(A, B);
  int err = tilerap_spgemm_plan_create(hA, hB, &oc, &pc, &Cc);
  if (!err) err = tilerap_spgemm_numeric(pc, hA, hB, Cc);
  if (!tap_ok(!err, "%s [thr %d]: CPU engine", what, thr)) goto out;

  /* host-resident CUDA */
  err = tilerap_spgemm_plan_create(hA, hB, &og, &ph, &Ch);
  if (!err) { gpu_poison(Ch); err = tilerap_spgemm_numeric(ph, hA, hB, Ch); }
  if (tap_ok(!err, "%s [thr %d]: CUDA host-resident plan+numeric (%s)", what, thr, err ? tilerap_last_error() : "ok")) {
    tap_ok(tilerap_tile_check(Ch) == 0, "%s [thr %d]: CUDA C consistent", what, thr);
    tap_ok(gpu_same_tiles(Ch, Cc), "%s [thr %d]: CUDA structure identical to CPU's (%lld tiles)", what, thr,
           (long long)Cc->num_tiles);
    double e1 = gpu_relerr(Ch, Cc), e2 = gpu_vs_ref(Ch, R);
    tap_ok(e1 <= 1e-14 && e2 <= 1e-14, "%s [thr %d]: values vs CPU %.2e, vs reference %.2e", what, thr, e1, e2);
    tilerap_spgemm_info ic, ig;
    tilerap_spgemm_plan_info(pc, &ic);
    tilerap_spgemm_plan_info(ph, &ig);
    /* the engines may choose different paths (the CPU engine takes the
     * CSR path on sparser B): pair counts exist on the tile path only */
    const int same_path = ic.path == ig.path;
    tap_ok(ig.engine == TILERAP_ENGINE_CUDA && ic.c_tiles == ig.c_tiles && ic.c_nnz == ig.c_nnz && ic.flops == ig.flops &&
               (!same_path || (ic.c_tiles_step1 == ig.c_tiles_step1 && ic.pairs == ig.pairs &&
                               ic.dense_tiles == ig.dense_tiles)),
           "%s [thr %d]: plan info equal (paths %s/%s, tiles %lld/%lld, pairs %lld/%lld, flops %lld/%lld, dense %lld/%lld)",
           what, thr, tilerap_path_name(ig.path), tilerap_path_name(ic.path), (long long)ig.c_tiles,
           (long long)ic.c_tiles, (long long)ig.pairs, (long long)ic.pairs, (long long)ig.flops, (long long)ic.flops,
           (long long)ig.dense_tiles, (long long)ic.dense_tiles);
    /* a plan's first run walks the pairs in the CPU engine's order, the
     * same bits, when its lanes' walks are short (at most 32 multiply-adds
     * a lane and at most 16 pairs + multiply-adds / 16 a tile on average)
     * and no tensor-core pairs make it take hits now (the tile path: the
     * CSR path sums with atomics) */
    if (ig.path == TILERAP_PATH_TILES && ig.tc_pairs == 0 && ig.c_tiles > 0 && ig.flops <= 2 * 16 * 32 * ig.c_tiles &&
        (double)ig.pairs + (double)ig.flops / 32.0 <= 16.0 * (double)ig.c_tiles && !getenv("TILERAP_CUDA_HITS") &&
        !getenv("TILERAP_CUDA_WALK_MAX") && !getenv("TILERAP_CUDA_WALK_MEAN"))
      tap_ok(e1 == 0.0, "%s [thr %d]: first run (pair walk) equals the CPU engine bit for bit (relerr %.2e)", what, thr, e1);
  }

  /* device-resident CUDA */
  err = tilerap_spgemm_plan_create(dA, dB, &og, &pd, &dC);
  if (!err) { gpu_poison(dC); err = tilerap_spgemm_numeric(pd, dA, dB, dC); }
  if (tap_ok(!err && dC->memtype == TILERAP_MEM_DEVICE, "%s [thr %d]: CUDA device-resident plan+numeric (%s)", what,
             thr, err ? tilerap_last_error() : "ok")) {
    Cd = gpu_to_host(dC);
    tap_ok(gpu_same_tiles(Cd, Cc) && gpu_relerr(Cd, Cc) <= 1e-14, "%s [thr %d]: device-resident equals CPU (relerr %.2e)",
           what, thr, gpu_relerr(Cd, Cc));
    tilerap_tile_destroy(&Cd);
  }

  /* reuse: new values, numeric only, both interfaces */
  {
    uint64_t seed = 99 + (uint64_t)thr;
    tilerap_csr *A2 = ref_copy(A), *B2 = ref_copy(B);
    ref_randomize_values(A2, &seed);
    ref_randomize_values(B2, &seed);
    tilerap_tile_update_values_from_csr(hA, A2->rowptr, A2->val);
    tilerap_tile_update_values_from_csr(hB, B2->rowptr, B2->val);
    tilerap_csr *R2 = ref_spgemm(A2, B2);
    tilerap_spgemm_numeric(pc, hA, hB, Cc);
    for (int rep = 0; rep < 2; rep++) { /* twice: re-runs must not accumulate */
      if (ph) {
        gpu_poison(Ch);
        err = tilerap_spgemm_numeric(ph, hA, hB, Ch);
        double e1 = err ? INFINITY : gpu_relerr(Ch, Cc), e2 = err ? INFINITY : gpu_vs_ref(Ch, R2);
        tap_ok(e1 <= 1e-14 && e2 <= 1e-14, "%s [thr %d]: host-resident reuse %d (vs CPU %.2e, vs ref %.2e)", what, thr,
               rep, e1, e2);
      }
      if (pd) {
        tilerap_tile_copy_values(hA, dA);
        tilerap_tile_copy_values(hB, dB);
        gpu_poison(dC);
        err = tilerap_spgemm_numeric(pd, dA, dB, dC);
        Cd = err ? NULL : gpu_to_host(dC);
        double e1 = Cd ? gpu_relerr(Cd, Cc) : INFINITY;
        tap_ok(e1 <= 1e-14, "%s [thr %d]: device-resident reuse %d (vs CPU %.2e)", what, thr, rep, e1);
        tilerap_tile_destroy(&Cd);
      }
    }
    tilerap_csr_destroy(&A2); tilerap_csr_destroy(&B2); tilerap_csr_destroy(&R2);
  }
out:
  tilerap_spgemm_plan_destroy(&pc); tilerap_spgemm_plan_destroy(&ph); tilerap_spgemm_plan_destroy(&pd);
  tilerap_tile_destroy(&Cc); tilerap_tile_destroy(&Ch); tilerap_tile_destroy(&dC);
  tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB); tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dB);
  tilerap_csr_destroy(&R);
}

/* A (m x k, annz entries) and B (k x n, bnnz) to fill in; on failure a
 * failed check names what, and both are NULL */
static int alloc_operands(int32_t m, int32_t k, int64_t annz, int32_t n, int64_t bnnz, tilerap_csr **A,
                          tilerap_csr **B, const char *what)
{
  *A = *B = NULL;
  if (tilerap_csr_create(m, k, annz, A) == 0 && tilerap_csr_create(k, n, bnnz, B) == 0) return 1;
  tap_ok(0, "%s: allocation", what);
  tilerap_csr_destroy(A);
  tilerap_csr_destroy(B);
  return 0;
}

/* Many pairs per C tile: long inner dimension, so single tiles carry more
 * hits than a numeric chunk's target work (one tile alone in its chunk,
 * many rounds of the block over its hits), next to light tiles. */
static void check_heavy(uint64_t *seed)
{
  tilerap_csr *A = ref_random(40, 2000, 0.05, 0, seed), *B = ref_random(2000, 40, 0.05, 0, seed);
  check_product(A, B, 192, "long inner dimension (heavy tiles)");
  check_product(A, B, 0, "long inner dimension (heavy tiles)");
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  A = ref_random(64, 12000, 0.2, 0, seed);
  B = ref_random(12000, 300, 0.01, 0, seed);
  check_product(A, B, 24, "very long inner dimension (tiles of 10^4 hits)");
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
}

/* A's 200 tiles all in tile column 0, which is B's one long tile row
 * (50 tiles) among 99 rows of one tile: 10000 pairs, far above what
 * the small row path of step 1 expects from the counts (about 4 times
 * the mean pairs of an A tile), so the plan is redone after a read-back
 * of the pair count (the counted row path; with TILERAP_ROWS_MAX=0 the
 * radix sort). */
static void check_skewed(void)
{
  tilerap_csr *A, *B;
  const int32_t m = 16 * 200, k = 16 * 100, n = 16 * 50;
  if (!alloc_operands(m, k, m, n, 16 * 50 + 99, &A, &B, "skewed product")) return;
  for (int32_t i = 0; i < m; i++) {
    A->rowptr[i + 1] = i + 1;
    A->colidx[i] = i % 16;
    A->val[i] = 1.0 + (i % 7);
  }
  int64_t q = 0;
  for (int32_t i = 0; i < k; i++) {
    if (i < 16)
      for (int32_t j = 0; j < 50; j++) { B->colidx[q] = 16 * j + i; B->val[q++] = 0.5 + j - i; }
    else if (i % 16 == 0) { B->colidx[q] = 0; B->val[q++] = -2.0; }
    B->rowptr[i + 1] = q;
  }
  B->nnz = q;
  check_product(A, B, 192, "skewed B tile rows (pairs above the row path's bound)");
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
}

/* Step 1's row sort (spgemm_cuda_step1_compact.cu) on tile rows of chosen
 * pair counts: none, A tiles whose B rows are all empty, the register
 * sizes' edges (32, 33, 64, 65, 128 pairs), rows over 128 pairs (the
 * block kernel, sized by the longest row: most pairs 300, 800 or 1900),
 * and rows of more than 32 A tiles (the pair's tile found by a search of
 * the pair offsets, not the lanes), empty B tile rows among them.
 * Neighbouring B tile rows share tile columns, so candidates have
 * several pairs.  Checked with the row sort forced and with the radix
 * path forced (identical plans: check_product compares the candidate
 * counts with the CPU engine's). */
static void check_row_sort(int most)
{
  enum { NR = 12, KT = 128, NTC = 4096 };
  /* per A tile row: A tiles, pairs (over its tiles with a non-empty B row) */
  const int want[NR][2] = {{0, 0},  {3, 0},   {1, 32},   {2, 33},  {3, 64},   {4, 65},
                           {5, 128}, {6, 129}, {40, 100}, {36, 40}, {7, most}, {10, most / 2}};
  int len[KT] = {0};   /* B tile row lengths */
  int32_t acol[NR][40]; /* tile columns of A's tiles: every tile its own B tile row */
  int kt = 0;
  for (int I = 0; I < NR; I++) {
    const int nt = want[I][0], np = want[I][1];
    int ne = 0; /* tiles with a non-empty B row: all but every third of row 8 */
    for (int t = 0; t < nt; t++) {
      acol[I][t] = kt;
      len[kt++] = 0;
      ne += np > 0 && !(I == 8 && t % 3 == 1);
    }
    for (int t = 0, first = 1; t < nt; t++)
      if (np > 0 && !(I == 8 && t % 3 == 1)) {
        len[acol[I][t]] = np / ne + (first ? np % ne : 0);
        first = 0;
      }
  }
  const int32_t m = 16 * NR, k = 16 * KT, n = 16 * NTC;
  int64_t annz = 0, bnnz = 0;
  for (int I = 0; I < NR; I++) annz += want[I][0];
  for (int r = 0; r < KT; r++) bnnz += 16 * (int64_t)len[r];
  tilerap_csr *A, *B;
  if (kt > KT) {
    tap_ok(0, "row sort products: %d B tile rows (at most %d)", kt, KT);
    return;
  }
  if (!alloc_operands(m, k, annz, n, bnnz, &A, &B, "row sort products")) return;
  /* A: tile t of tile row I holds one entry, in row 16 I + t % 16 (tile
   * columns ascend with t, so each row's columns ascend) */
  int64_t q = 0;
  for (int32_t i = 0; i < m; i++) {
    const int I = i / 16, r = i % 16;
    for (int t = r; t < want[I][0]; t += 16) {
      A->colidx[q] = 16 * acol[I][t] + (t * 7 + r) % 16;
      A->val[q++] = 1.0 + 0.25 * (double)((i + t) % 5);
    }
    A->rowptr[i + 1] = q;
  }
  /* B: tile row r's tiles at tile columns (3 r + 2 j) mod NTC, j < len[r]
   * (rows r and r + 2 share columns), an entry on every row of each */
  q = 0;
  for (int32_t i = 0; i < k; i++) {
    const int r = i / 16;
    const int64_t q0 = q;
    for (int j = 0; j < len[r]; j++) {
      B->colidx[q] = 16 * ((3 * r + 2 * j) % NTC) + (i + j) % 16;
      B->val[q++] = 0.5 - 0.125 * (double)((i + 3 * j) % 7);
    }
    ref_sort_columns(B->colidx + q0, B->val + q0, q - q0); /* the tile columns wrap */
    B->rowptr[i + 1] = q;
  }
  if (!tap_ok(tilerap_csr_check(m, k, A->rowptr, A->colidx) == 0 && tilerap_csr_check(k, n, B->rowptr, B->colidx) == 0 &&
                  A->rowptr[m] == annz && B->rowptr[k] == bnnz,
              "row sort products (longest row %d pairs): operands well formed", most)) {
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
    return;
  }
  char label[96];
  gpu_knob_set("TILERAP_STEP1_SORT", "compact");
  snprintf(label, sizeof label, "row sort (longest row %d pairs)", most);
  check_product(A, B, 192, label);
  gpu_knob_set("TILERAP_STEP1_SORT", "radix");
  snprintf(label, sizeof label, "row sort's products on the radix path (longest row %d pairs)", most);
  check_product(A, B, 192, label);
  gpu_knob_set("TILERAP_STEP1_SORT", NULL);
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
}

/* A tile row of n0 + 10 pairs meeting B's tile rows 0 (n0 tiles, at tile
 * columns stride * j) and 1 (10 tiles, five of them in row 0's columns).
 * The row sort's block kernel keys a pair by its column's offset from the
 * row's least column and its number (QB bits: 10 up to 1024 pairs, 11 up
 * to 2048), in 32 bits where they fit:
 *   n0 = 1100, stride 2000: a span of 2.2 M tile columns (22 bits) and
 *     11 bits of pair number do not fit: the bitonic sort of 64-bit keys;
 *   n0 = 990, stride 2200: 22 + 10 bits, exactly 32: the radix sort's
 *     widest keys. */
static void check_row_sort_wide(int n0, int stride)
{
  const int32_t m = 16, k = 32, nt = stride * (n0 - 1) + 1, n = 16 * nt;
  tilerap_csr *A, *B;
  if (!alloc_operands(m, k, 2 * m, n, 16 * (int64_t)n0 + 16 * 10, &A, &B, "wide row sort")) return;
  for (int32_t i = 0; i < m; i++) {
    A->colidx[2 * i] = i;
    A->colidx[2 * i + 1] = 16 + i;
    A->val[2 * i] = 1.0 + 0.5 * i;
    A->val[2 * i + 1] = -0.25 * (i + 1);
    A->rowptr[i + 1] = 2 * (i + 1);
  }
  int64_t q = 0;
  for (int32_t i = 0; i < k; i++) {
    if (i < 16)
      for (int j = 0; j < n0; j++) { B->colidx[q] = 16 * (stride * j) + (i + j) % 16; B->val[q++] = 0.5 + (j % 9); }
    else
      for (int j = 0; j < 10; j++) { B->colidx[q] = 16 * (j < 5 ? 400000 * j : 1000 * j + 7) + (i % 16); B->val[q++] = 1.5 - j; }
    B->rowptr[i + 1] = q;
  }
  /* row 1: tile columns 0, 400000, ..., 1600000 (shared with row 0) and 5007 .. 9007, sorted */
  for (int32_t i = 16; i < k; i++)
    ref_sort_columns(B->colidx + B->rowptr[i], B->val + B->rowptr[i], B->rowptr[i + 1] - B->rowptr[i]);
  char label[96];
  snprintf(label, sizeof label, "row sort: %d pairs over %.1f M tile columns", n0 + 10, nt / 1e6);
  if (tap_ok(tilerap_csr_check(k, n, B->rowptr, B->colidx) == 0, "%s: B well formed", label)) {
    gpu_knob_set("TILERAP_STEP1_SORT", "compact");
    check_product(A, B, 192, label);
    gpu_knob_set("TILERAP_STEP1_SORT", NULL);
  }
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
}

/* 6.3e5 candidate tiles (900 tile rows, 40 A tiles and 40 B tiles a
 * row, one entry each, 1600 pairs a tile row): step 2's scan of its
 * records has 616 spans of 1024, more than its 256 threads, so the one block that scans
 * the spans' sums goes round several times; step 1 sorts each tile row
 * of 1600 pairs in a block of the row sort. */
static void check_many_candidates(uint64_t *seed)
{
  const int32_t T = 900, per = 40, nn = 16 * T;
  tilerap_csr *A, *B;
  if (!alloc_operands(nn, nn, (int64_t)T * per, nn, (int64_t)16 * T * per, &A, &B, "many candidates")) return;
  /* A: row 16 I + (j % 16) holds tile row I's j-th tile, at a column in
   * tile column (I * 7 + j * 23) % T (distinct for j < 40: 23 j mod 900) */
  int64_t q = 0;
  for (int32_t i = 0; i < nn; i++) {
    const int32_t I = i / 16, r = i % 16;
    const int64_t q0 = q;
    for (int j = r; j < per; j += 16) {
      A->colidx[q] = 16 * ((I * 7 + j * 23) % T) + (int32_t)(ref_rand01(seed) * 16.0) % 16;
      A->val[q++] = 1.0 + (double)((i + j) % 11) / 8.0;
    }
    ref_sort_columns(A->colidx + q0, A->val + q0, q - q0);
    A->rowptr[i + 1] = q;
  }
  A->nnz = q;
  /* B: every row of tile row K holds one entry in each of the tile row's
   * 40 tiles, at tile columns (K * 13 + j * 29) % T */
  q = 0;
  for (int32_t i = 0; i < nn; i++) {
    const int32_t K = i / 16;
    const int64_t q0 = q;
    for (int j = 0; j < per; j++) {
      B->colidx[q] = 16 * ((K * 13 + j * 29) % T) + (i + j) % 16;
      B->val[q++] = 0.5 - (double)((i * 3 + j) % 7) / 4.0;
    }
    ref_sort_columns(B->colidx + q0, B->val + q0, q - q0);
    B->rowptr[i + 1] = q;
  }
  B->nnz = q;
  if (tap_ok(tilerap_csr_check(nn, nn, A->rowptr, A->colidx) == 0 && tilerap_csr_check(nn, nn, B->rowptr, B->colidx) == 0,
             "many candidates: operands well formed"))
    check_product(A, B, 192, "14400^2 * 14400^2, 6.3e5 candidate tiles");
  tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
}

/* a model operator on n^d points and its smoothed-aggregation prolongator */
/* B (k x n) with every 100th row about 600 entries long (a hub) and
 * about 5 entries elsewhere */
static tilerap_csr *hub_rows(int32_t k, int32_t n, uint64_t *seed)
{
  tilerap_csr *S = ref_random(k, n, 5.0 / n, 0, seed), *H = ref_random(k, n, 600.0 / n, 0, seed), *B = NULL;
  int64_t nnz = 0;
  for (int32_t i = 0; i < k; i++) nnz += i % 100 ? S->rowptr[i + 1] - S->rowptr[i] : H->rowptr[i + 1] - H->rowptr[i];
  if (tilerap_csr_create(k, n, nnz, &B) == 0) {
    int64_t q = 0;
    for (int32_t i = 0; i < k; i++) {
      const tilerap_csr *X = i % 100 ? S : H;
      for (int64_t e = X->rowptr[i]; e < X->rowptr[i + 1]; e++) { B->colidx[q] = X->colidx[e]; B->val[q++] = X->val[e]; }
      B->rowptr[i + 1] = q;
    }
  }
  tilerap_csr_destroy(&S); tilerap_csr_destroy(&H);
  return B;
}

/* CSR-path rows of C with thousands of columns (the dense-accumulator
 * rows): 40 rows of A with about 1500 entries each, so C's rows hold
 * thousands of products.  B 2000 wide keeps the accumulator in shared
 * memory in every mode, 40000 wide only the count's bitmap (values in
 * global memory).  B rows of about 5 entries (8 lanes an A entry), 40 (a
 * warp), and short rows among hubs of 600 (hubs dealt over the block).
 * Also a plan that makes its values (plan_values), against the reference. */
static void check_dense_rows(uint64_t *seed)
{
  static const struct { int32_t n; double per_row; const char *what; } cases[] = {
    {2000, 5, "2000 wide, B rows of 5"}, {2000, 40, "2000 wide, B rows of 40"},
    {2000, -1, "2000 wide, hub B rows"}, {40000, 5, "40000 wide, B rows of 5"},
  };
  gpu_knob_set("TILERAP_PATH", "csr");
  for (int w = 0; w < 4; w++) {
    char what[128];
    const int32_t n = cases[w].n;
    tilerap_csr *A = ref_random(40, 3000, 0.5, 0, seed);
    tilerap_csr *B = cases[w].per_row > 0 ? ref_random(3000, n, cases[w].per_row / n, 0, seed) : hub_rows(3000, n, seed);
    snprintf(what, sizeof what, "CSR path, C rows of thousands of columns, %s", cases[w].what);
    if (!tap_ok(A && B, "%s: operands", what)) { tilerap_csr_destroy(&A); tilerap_csr_destroy(&B); continue; }
    check_product(A, B, 192, what);
    {
      tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B);
      tilerap_tile_matrix *dA = gpu_to_device(hA), *dB = gpu_to_device(hB), *dC = NULL, *Cd = NULL;
      tilerap_options o = gpu_opts(TILERAP_ENGINE_CUDA, 192);
      tilerap_spgemm_plan p = NULL;
      tilerap_spgemm_info info;
      tilerap_csr *R = ref_spgemm(A, B);
      o.plan_values = 1;
      int err = tilerap_spgemm_plan_create(dA, dB, &o, &p, &dC);
      if (!err) err = tilerap_spgemm_plan_info(p, &info);
      if (!err) Cd = gpu_to_host(dC);
      double e = Cd ? gpu_vs_ref(Cd, R) : INFINITY;
      tap_ok(!err && info.path == TILERAP_PATH_CSR && e <= 1e-14, "%s: plan_values (path %s, vs ref %.2e)", what,
             err ? "-" : tilerap_path_name(info.path), e);
      tilerap_spgemm_plan_destroy(&p);
      tilerap_tile_destroy(&Cd); tilerap_tile_destroy(&dC); tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dB);
      tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB);
      tilerap_csr_destroy(&R);
    }
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  gpu_knob_set("TILERAP_PATH", NULL);
}

/* Which CSR-path products re-run from a record (tr_csr_record_pays): few
 * products per C entry, or up to 1024 in rows of at most 128 entries on
 * average; wide rows and heavier entries keep the hash runs.  Each
 * product's values are checked over its re-runs (check_product: the
 * second run makes the record, the third reads it). */
static void check_record_choice(uint64_t *seed)
{
  static const struct { int32_t m, k, n; double da, db; int rec; const char *what; } cases[] = {
    {300, 4000, 4000, 0.0005, 0.0005, 1, "about 2 products per entry"},
    {200, 300, 16, 0.4, 1.0, 1, "rows of 16 entries of 120 products"},
    {40, 3000, 400, 0.5, 0.1, 0, "rows of 400 entries of 150 products"},
    {60, 3000, 1, 0.9, 1.0, 0, "one column, 2700 products an entry"},
  };
  gpu_knob_set("TILERAP_PATH", "csr");
  for (int w = 0; w < 4; w++) {
    char what[128];
    snprintf(what, sizeof what, "CSR path record choice, %s", cases[w].what);
    tilerap_csr *A = ref_random(cases[w].m, cases[w].k, cases[w].da, 0, seed);
    tilerap_csr *B = ref_random(cases[w].k, cases[w].n, cases[w].db, 0, seed);
    if (!tap_ok(A && B, "%s: operands", what)) { tilerap_csr_destroy(&A); tilerap_csr_destroy(&B); continue; }
    check_product(A, B, 192, what);
    tilerap_tile_matrix *hA = ref_csr_to_tile(A), *hB = ref_csr_to_tile(B);
    tilerap_tile_matrix *dA = gpu_to_device(hA), *dB = gpu_to_device(hB), *dC = NULL;
    tilerap_options o = gpu_opts(TILERAP_ENGINE_CUDA, 192);
    tilerap_spgemm_plan p = NULL;
    tilerap_spgemm_info info;
    int err = tilerap_spgemm_plan_create(dA, dB, &o, &p, &dC);
    if (!err) err = tilerap_spgemm_plan_info(p, &info);
    const double per_entry = err || !info.c_nnz ? 0 : info.flops / 2.0 / (double)info.c_nnz;
    const double row_len = err || !cases[w].m ? 0 : (double)info.c_nnz / cases[w].m;
    tap_ok(!err && info.path == TILERAP_PATH_CSR && info.recorded == (cases[w].rec ? info.flops / 2 : 0),
           "%s: %s (%.0f products an entry, rows of %.0f; %lld recorded of %lld)", what,
           cases[w].rec ? "recorded" : "hash re-runs", per_entry, row_len, err ? -1LL : (long long)info.recorded,
           err ? -1LL : (long long)(info.flops / 2));
    tilerap_spgemm_plan_destroy(&p);
    tilerap_tile_destroy(&dC); tilerap_tile_destroy(&dA); tilerap_tile_destroy(&dB);
    tilerap_tile_destroy(&hA); tilerap_tile_destroy(&hB);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  gpu_knob_set("TILERAP_PATH", NULL);
}

static void model_ap(tilerap_stencil st, int32_t n, tilerap_csr **A, tilerap_csr **P)
{
  int32_t dims[3], cd[3];
  int nd;
  tilerap_model_poisson(st, n, A, dims, &nd);
  tilerap_model_prolongator(*A, nd, dims, 2.0 / 3.0, P, cd);
}

int main(int argc, char **argv)
{
  gpu_skip_without_device();
  int quick = argc > 1 && !strcmp(argv[1], "--quick"); /* sanitizer runs */
  uint64_t seed = 2025;
  struct { int32_t m, k, n; double da, db; int empty; const char *name; } cases[] = {
      {0, 0, 0, 0, 0, 0, "0x0 * 0x0"},
      {1, 1, 1, 1, 1, 0, "1x1 * 1x1"},
      {17, 33, 9, 0.3, 0.3, 0, "17x33 * 33x9"},
      {40, 40, 40, 0.0, 0.5, 0, "empty * random"},
      {64, 64, 64, 1.0, 1.0, 0, "dense tiles"},
      {100, 37, 250, 0.05, 0.05, 4, "rectangular with empty rows"},
      {300, 300, 300, 0.01, 0.01, 0, "sparse 300^2 (empty tiles dropped)"},
      {129, 65, 31, 0.2, 0.6, 3, "mixed densities"},
      {513, 257, 129, 0.004, 0.02, 0, "very sparse odd sizes"},
      {1000, 777, 1500, 0.003, 0.004, 7, "1000x777 * 777x1500"},
      {3001, 3001, 3001, 0.0007, 0.0007, 0, "3001^2 (many candidates)"},
  };
  int ncases = (int)(sizeof cases / sizeof cases[0]);
  if (quick) ncases = 9;
  /* 0: every tile dense; 24: dense and sparse tiles side by side in the
   * numeric chunks; 192: default; 256: every tile sparse */
  int thresholds[] = {0, 24, 192, 256}, nthr = quick ? 3 : 4;
  for (int c = 0; c < ncases; c++) {
    tilerap_csr *A = ref_random(cases[c].m, cases[c].k, cases[c].da, cases[c].empty, &seed);
    tilerap_csr *B = ref_random(cases[c].k, cases[c].n, cases[c].db, 0, &seed);
    for (int t = 0; t < nthr; t++) check_product(A, B, thresholds[t], cases[c].name);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  check_heavy(&seed);
  check_dense_rows(&seed);
  if (!getenv("TILERAP_CSR_RECORD_MACS")) check_record_choice(&seed);
  check_skewed();
  check_row_sort(300);
  if (!quick) {
    check_row_sort(800);
    check_row_sort(1900);
    check_row_sort_wide(1100, 2000);
    check_row_sort_wide(990, 2200);
    check_many_candidates(&seed);
  }
  /* C with more than 2^32 possible tiles (70000 x 70000 tile grid): step 1
   * sorts its pairs on 64-bit tile numbers */
  if (!quick) {
    tilerap_csr *A = ref_random(16 * 70000, 40, 2e-4, 0, &seed), *B = ref_random(40, 16 * 70000, 2e-4, 0, &seed);
    check_product(A, B, 192, "1120000 x 40 * 40 x 1120000 (64-bit tile keys)");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  /* 40000 A tiles along one long inner dimension: step 1 takes the radix
   * path (about 3.7e5 pairs, above the row path's limit), and the 40 C
   * tiles of about 9000 pairs each the block-per-candidate masks kernel */
  if (!quick) {
    tilerap_csr *A = ref_random(64, 160000, 0.05, 0, &seed), *B = ref_random(160000, 160, 0.01, 0, &seed);
    check_product(A, B, 192, "64 x 160000 * 160000 x 160 (radix path, long pair lists)");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&B);
  }
  /* a level-0 sized A*P: the sorted path with its candidate count read
   * back and about 5 pairs per candidate, whose masks take 8-lane groups
   * (k_masks8); the same with the 16-lane kernel forced */
  if (!quick) {
    tilerap_csr *A = NULL, *P = NULL;
    model_ap(TILERAP_P3D7, 64, &A, &P);
    gpu_knob_set("TILERAP_MASKS_LANES", NULL);
    check_product(A, P, 192, "p3d7 64^3: A*P (8-lane masks)");
    gpu_knob_set("TILERAP_MASKS_LANES", "16");
    check_product(A, P, 192, "p3d7 64^3: A*P (16-lane masks forced)");
    gpu_knob_set("TILERAP_MASKS_LANES", NULL);
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  }
  /* a model operator times its prolongator */
  if (!quick) {
    tilerap_csr *A = NULL, *P = NULL;
    model_ap(TILERAP_P3D27, 20, &A, &P);
    check_product(A, P, 192, "p3d27 20^3: A*P");
    tilerap_csr_destroy(&A); tilerap_csr_destroy(&P);
  }
  return tap_done();
}
