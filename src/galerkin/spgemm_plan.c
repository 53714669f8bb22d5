/* SpGEMM plans: engine-neutral front end of the three steps.  The plan
 * owns the pairing lists (CPU) or the device plan (CUDA); C belongs to
 * the caller.  With the CUDA engine and host matrices (host-resident
 * interface) the plan keeps device copies of A, B and C and moves only
 * values on numeric re-runs. */
#include "spgemm_cpu.h"
#include "engine_cuda.h"
#include "csr_path.h"
#include "plan_core.h"
#include "tuning.h"

struct tilerap_spgemm_plan_s {
  tr_plan_core core;  /* engine, recorded structures, device mirrors */
  int dense_threshold;
  tilerap_spgemm_info info;
  tr_pairs pairs; /* CPU engine (with the RECORDED kernel's records) */
  int record_first; /* RECORDED asked for: record on the first numeric run (AUTO: on the second) */
  int64_t cpu_runs; /* numeric runs so far */
  int at;         /* CPU engine: plan of A^T * B (tr_cpu_spgemm_plan_create_atb) */
  tr_csr_path *csr; /* the CSR path (csr_path.c) instead of the tile steps */
#ifdef TILERAP_HAVE_CUDA
  struct tr_cuda_spgemm *cuda;
#endif
};

static int tr_check_operands(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const char *who)
{
  if (!A || !B) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL matrix", who);
  if (A->n != B->m)
    return tilerap_set_error(TILERAP_ERR_SIZE, "%s: A is %d x %d, B is %d x %d: inner dimensions differ", who, A->m,
                             A->n, B->m, B->n);
  if (A->memtype != B->memtype) return tilerap_set_error(TILERAP_ERR_MEMTYPE, "%s: A and B live in different memories", who);
  if ((A->num_tiles && (!A->tile_col || !A->row_mask || !A->val)) || (B->num_tiles && (!B->tile_col || !B->row_mask || !B->val)) ||
      !A->tile_ptr || !B->tile_ptr)
    return tilerap_set_error(TILERAP_ERR_NULL, "%s: matrix arrays missing", who);
  return TILERAP_SUCCESS;
}

void tilerap_spgemm_plan_destroy(tilerap_spgemm_plan *plan)
{
  if (!plan || !*plan) return;
  tilerap_spgemm_plan P = *plan;
  tr_pairs_free(&P->pairs);
  tr_csr_path_destroy(&P->csr);
#ifdef TILERAP_HAVE_CUDA
  if (P->cuda) tr_cuda_spgemm_destroy(P->cuda);
#endif
  tr_plan_core_release(&P->core);
  free(P);
  *plan = NULL;
}

/* Tile structure of A^T (tile_ptr, tile_col) and, for each tile of A^T,
 * the A tile it transposes; tile columns come out ascending because A's
 * tile rows are visited in order. */
static int tr_transpose_tile_structure(const tilerap_tile_matrix *A, tilerap_tile_matrix *At, int32_t **src_out)
{
  memset(At, 0, sizeof *At);
  At->m = A->n; At->n = A->m;
  At->tile_rows = A->tile_cols; At->tile_cols = A->tile_rows;
  At->num_tiles = A->num_tiles; At->nnz = A->nnz;
  At->memtype = TILERAP_MEM_HOST;
  At->tile_ptr = tilerap_host_calloc((size_t)At->tile_rows + 1, sizeof(int64_t));
  At->tile_col = tilerap_host_alloc((size_t)A->num_tiles, sizeof(int32_t));
  int32_t *src = tilerap_host_alloc((size_t)A->num_tiles, sizeof(int32_t));
  int64_t *cursor = tilerap_host_alloc((size_t)At->tile_rows + 1, sizeof(int64_t));
  if (!At->tile_ptr || !At->tile_col || !src || !cursor) {
    free(At->tile_ptr); free(At->tile_col); free(src); free(cursor);
    return TILERAP_ERR_NOMEM;
  }
  for (int64_t t = 0; t < A->num_tiles; t++) At->tile_ptr[A->tile_col[t] + 1]++;
  for (int32_t J = 0; J < At->tile_rows; J++) At->tile_ptr[J + 1] += At->tile_ptr[J];
  memcpy(cursor, At->tile_ptr, ((size_t)At->tile_rows + 1) * sizeof(int64_t));
  for (int32_t I = 0; I < A->tile_rows; I++)
    for (int64_t t = A->tile_ptr[I]; t < A->tile_ptr[I + 1]; t++) {
      int64_t u = cursor[A->tile_col[t]]++;
      At->tile_col[u] = I;
      src[u] = (int32_t)t;
    }
  free(cursor);
  *src_out = src;
  return TILERAP_SUCCESS;
}

/* The CPU kernel an AUTO request means here: the tuning table's
 * (TILERAP_CPU_KERNEL; its index is the enum's value). */
static int tr_cpu_kernel_resolve(tilerap_cpu_kernel *k)
{
  int err = tr_tuning_check();
  if (!err && *k == TILERAP_CPU_KERNEL_AUTO) *k = (tilerap_cpu_kernel)tr_knob_int(TR_KNOB_CPU_KERNEL);
  return err;
}

/* Sizes and allocates the RECORDED kernel's records once C's structure
 * is known; a numeric run fills them (the memory stays untouched until
 * then).  Recording costs a run 20-40 % more than the tile kernel
 * (4 bytes written per multiply-add) and makes every later run 1.7-1.9x
 * faster, so AUTO records on a plan's second run: a plan used once (a
 * first product) pays nothing, and a plan that is re-run once is likely
 * to be re-run again (AMG re-setups, time steps).  RECORDED records on
 * the first run.  AUTO records only when the records take at most twice
 * the memory of the values of A, B and C (4 bytes per multiply-add, 8
 * per entry): true of the AMG products measured (3D 7- and 27-point, 2D
 * 5- and 9-point), false of dense-tile products, whose multiply-adds
 * outnumber their entries many times and which the tile kernel's dense
 * accumulator handles well.  An AUTO plan that cannot get the memory
 * keeps the tile kernel. */
static int tr_plan_record(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                          tilerap_cpu_kernel kernel, const tilerap_tile_matrix *C)
{
  tr_pairs *pp = &P->pairs;
  if (!pp->rec_tile_ptr) return TILERAP_SUCCESS;
  const int64_t nt = pp->num_tiles, np = pp->pair_ptr[nt];
  for (int64_t t = 0; t < nt; t++) pp->rec_tile_ptr[t + 1] += pp->rec_tile_ptr[t];
  const int64_t nrec = pp->rec_tile_ptr[nt];
  int record = kernel == TILERAP_CPU_KERNEL_RECORDED || nrec <= 4 * (A->nnz + B->nnz + C->nnz);
  if (record && (!(pp->rec = tilerap_host_alloc((size_t)nrec + 1, sizeof(uint32_t))) ||
                 !(pp->rec_len = tilerap_host_alloc((size_t)np + 1, sizeof(uint16_t))))) {
    if (kernel == TILERAP_CPU_KERNEL_RECORDED)
      return tilerap_set_error(TILERAP_ERR_NOMEM, "RECORDED CPU kernel: no memory for %lld product records (%.1f MB)",
                               (long long)nrec, 4e-6 * (double)nrec);
    record = 0;
  }
  if (!record) {
    free(pp->rec_tile_ptr); free(pp->rec); free(pp->rec_len);
    pp->rec_tile_ptr = NULL; pp->rec = NULL; pp->rec_len = NULL;
    return TILERAP_SUCCESS;
  }
  P->info.recorded = nrec;
  P->record_first = kernel == TILERAP_CPU_KERNEL_RECORDED;
  return TILERAP_SUCCESS;
}

/* Steps 1-2 on the CPU.  at: A enters transposed (A^T * B); step 1 then
 * runs on A^T's tile structure and its pairs are renamed to A's tiles.
 * values: C's values too, steps 2 and 3 in one walk (the plan's first run). */
static int tr_plan_cpu(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                       tilerap_cpu_kernel kernel, int values, tilerap_tile_matrix **C)
{
  int err = tr_cpu_kernel_resolve(&kernel);
  if (err) return err;
  if (A->memtype != TILERAP_MEM_HOST || B->memtype != TILERAP_MEM_HOST)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "the CPU engine needs host matrices (got device ones)");
  tilerap_tile_matrix At;
  const tilerap_tile_matrix *S = A; /* the structure step 1 multiplies */
  int32_t *src = NULL;
  if (P->at) {
    if ((err = tr_transpose_tile_structure(A, &At, &src))) return err;
    At.tile_off = A->tile_off; At.idx = A->idx; At.val = A->val; /* read through the renamed pairs */
    S = &At;
  }
  int64_t *cand_ptr = tilerap_host_alloc((size_t)S->tile_rows + 1, sizeof(int64_t));
  int32_t *cand_col = NULL;
  if (!cand_ptr) err = TILERAP_ERR_NOMEM;
  else err = tr_cpu_step1_structure(S, B, cand_ptr, &cand_col, &P->pairs);
  if (!err && kernel != TILERAP_CPU_KERNEL_TILES) { /* step 2 counts each pair's products here */
    P->pairs.rec_tile_ptr = tilerap_host_alloc((size_t)P->pairs.num_tiles + 1, sizeof(int64_t));
    if (P->pairs.rec_tile_ptr) P->pairs.rec_tile_ptr[0] = 0; /* step 2 writes every other entry */
    else if (kernel == TILERAP_CPU_KERNEL_RECORDED) err = TILERAP_ERR_NOMEM;
  }
  if (!err && P->at) {
    P->pairs.a_transposed = 1;
    const int64_t np = P->pairs.pair_ptr[P->pairs.num_tiles];
    int32_t *pa = P->pairs.pair_a;
#pragma omp parallel for schedule(static) if (np > 64 * TR_OMP_MIN_ITEMS)
    for (int64_t q = 0; q < np; q++) pa[q] = src[pa[q]];
  }
  if (P->at) { free(At.tile_ptr); free(At.tile_col); free(src); }
  if (!err) {
    P->info.c_tiles_step1 = P->pairs.num_tiles;
    if (values) err = tr_cpu_step23_fused(S, B, cand_ptr, cand_col, &P->pairs, C, &P->info.flops);
    else err = tr_cpu_step2_masks(S, B, cand_ptr, cand_col, &P->pairs, C, &P->info.flops);
    if (!err && values) P->cpu_runs = 1;
  }
  free(cand_ptr); free(cand_col);
  if (err) return err;
  P->info.pairs = P->pairs.pair_ptr[P->pairs.num_tiles];
  int64_t dense = 0;
  for (int64_t t = 0; t < (*C)->num_tiles; t++) dense += (*C)->tile_off[t + 1] - (*C)->tile_off[t] > P->dense_threshold;
  P->info.dense_tiles = dense;
  return tr_plan_record(P, A, B, kernel, *C);
}

int tr_cpu_spgemm_plan_create_atb(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                                  tilerap_spgemm_plan *plan, tilerap_tile_matrix **C)
{
  if (!plan || !C || !opt) return tilerap_set_error(TILERAP_ERR_NULL, "A^T*B plan: NULL output or options");
  *plan = NULL; *C = NULL;
  if (!A || !B || !A->tile_ptr || !B->tile_ptr) return tilerap_set_error(TILERAP_ERR_NULL, "A^T*B plan: NULL matrix");
  if (A->m != B->m)
    return tilerap_set_error(TILERAP_ERR_SIZE, "A^T*B plan: A is %d x %d, B is %d x %d: row counts differ", A->m, A->n,
                             B->m, B->n);
  int err = tr_options_check(opt, "A^T*B plan");
  if (err) return err;
  tilerap_spgemm_plan P = tilerap_host_calloc(1, sizeof *P);
  if (!P) return TILERAP_ERR_NOMEM;
  P->core.engine = TILERAP_ENGINE_CPU;
  P->at = 1;
  P->dense_threshold = opt->dense_threshold;
  P->info.engine = TILERAP_ENGINE_CPU;
  /* recorded as by tilerap_spgemm_plan_create (host hashes are cheap): the
   * tests run this plan through tilerap_spgemm_numeric */
  if ((err = tr_plan_cpu(P, A, B, opt->cpu_kernel, opt->plan_values, C)) ||
      (err = tr_plan_core_record(&P->core, A, B, *C))) {
    tilerap_spgemm_plan_destroy(&P);
    tilerap_tile_destroy(C);
    return err;
  }
  P->info.c_tiles = (*C)->num_tiles;
  P->info.c_nnz = (*C)->nnz;
  P->info.a_fill = tr_tile_fill(A);
  P->info.b_fill = tr_tile_fill(B);
  *plan = P;
  return TILERAP_SUCCESS;
}

/* A plan on the engine's matrices (device mirrors made by the core where
 * host matrices meet the CUDA engine); csr: the CSR path (csr_path.c)
 * instead of the tile steps */
static int tr_spgemm_plan_new(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                              tr_plan_runs runs, int csr_allowed, tilerap_spgemm_plan *plan, tilerap_tile_matrix **C)
{
  static const char who[] = "tilerap_spgemm_plan_create";
  if (!plan || !C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL output", who);
  *plan = NULL; *C = NULL;
  int err = tr_check_operands(A, B, who);
  if (err) return err;
  tilerap_spgemm_plan P = tilerap_host_calloc(1, sizeof *P);
  if (!P) return TILERAP_ERR_NOMEM;
  tilerap_options o;
  const tilerap_tile_matrix *wA, *wB;
  tilerap_tile_matrix *wC = NULL;
  if ((err = tr_plan_core_begin(&P->core, opt, A, who, &o)) || (err = tr_plan_core_mirror(&P->core, A, B, &wA, &wB)))
    goto fail;
  P->dense_threshold = o.dense_threshold;
  P->info.engine = o.engine;
  if (csr_allowed && tr_csr_path_choose(A, B, o.engine))
    err = tr_csr_path_create(wA, 0, wB, o.engine, o.stream, o.plan_values, runs, &P->csr, &wC, &P->info);
  else if (o.engine == TILERAP_ENGINE_CPU)
    err = tr_plan_cpu(P, wA, wB, o.cpu_kernel, o.plan_values, &wC);
  else {
#ifdef TILERAP_HAVE_CUDA
    o.tc_threshold = tr_tc_threshold_resolve(o.tc_threshold, wA, wB);
    if (!(err = tr_cuda_spgemm_plan(wA, wB, &o, runs, &P->cuda, &wC, &P->info)) && o.plan_values)
      err = tr_cuda_spgemm_numeric(P->cuda, wA, wB, wC);
#else
    (void)runs;
    err = tilerap_set_error(TILERAP_ERR_ENGINE, "built without CUDA");
#endif
  }
  if (err || (err = tr_plan_core_hand_out(&P->core, &wC, C))) goto fail;
  P->info.c_tiles = (*C)->num_tiles;
  P->info.c_nnz = (*C)->nnz;
  P->info.a_fill = tr_tile_fill(A);
  P->info.b_fill = tr_tile_fill(B);
  *plan = P;
  return TILERAP_SUCCESS;
fail:
  tilerap_tile_destroy(&wC);
  tilerap_tile_destroy(C);
  tilerap_spgemm_plan_destroy(&P);
  return err;
}

/* Only plans that the caller re-runs record their operands' structures:
 * the plans inside A^T B and P^T A P plans run through tr_spgemm_run on
 * operands their owner has checked. */
int tilerap_spgemm_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                               tilerap_spgemm_plan *plan, tilerap_tile_matrix **C)
{
  int err = tr_spgemm_plan_new(A, B, opt, TR_RUNS_REPEATED, 1, plan, C);
  if (!err && (err = tr_plan_core_record(&(*plan)->core, A, B, *C))) {
    tilerap_spgemm_plan_destroy(plan);
    tilerap_tile_destroy(C);
  }
  return err;
}

int tr_spgemm_plan_tiles(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                         tr_plan_runs runs, tilerap_spgemm_plan *plan, tilerap_tile_matrix **C)
{
  return tr_spgemm_plan_new(A, B, opt, runs, 0, plan, C);
}

static void tr_cpu_numeric(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                           tilerap_tile_matrix *C)
{
  if (P->pairs.rec && P->pairs.recorded) tr_cpu_step3_recorded(A, B, &P->pairs, C);
  else if (P->pairs.rec && (P->record_first || P->cpu_runs > 0)) {
    tr_cpu_step3_record(A, B, &P->pairs, C);
    P->pairs.recorded = 1;
  } else tr_cpu_step3_numeric(A, B, &P->pairs, P->dense_threshold, C);
  P->cpu_runs++;
}

int tilerap_spgemm_numeric(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                           tilerap_tile_matrix *C)
{
  static const char who[] = "tilerap_spgemm_numeric";
  if (!P || !C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL plan or C", who);
  int err = P->at ? (!A || !B ? tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL matrix", who) : TILERAP_SUCCESS)
                  : tr_check_operands(A, B, who);
  const tilerap_tile_matrix *wA, *wB;
  tilerap_tile_matrix *wC;
  if (err || (err = tr_plan_core_numeric_in(&P->core, A, B, C, who, "A", "B", &wA, &wB, &wC)) ||
      (err = tr_spgemm_run(P, wA, wB, wC)))
    return err;
  return tr_plan_core_numeric_out(&P->core, wC, C);
}

/* on the engine's matrices */
int tr_spgemm_run(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                  tilerap_tile_matrix *C)
{
  if (P->csr) return tr_csr_path_numeric(P->csr, A, B, C);
  if (P->core.engine == TILERAP_ENGINE_CPU) { /* an A^T*B plan takes A untransposed */
    tr_cpu_numeric(P, A, B, C);
    return TILERAP_SUCCESS;
  }
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_spgemm_numeric(P->cuda, A, B, C);
#else
  return tilerap_set_error(TILERAP_ERR_ENGINE, "built without CUDA");
#endif
}

int tr_spgemm_plan_read_a_through(tilerap_spgemm_plan plan, const int64_t *perm, int *taken)
{
  *taken = 0;
#ifdef TILERAP_HAVE_CUDA
  if (plan && plan->cuda && !plan->core.dx) return tr_cuda_spgemm_read_a_through(plan->cuda, perm, taken);
#endif
  (void)perm;
  return tilerap_set_error(TILERAP_ERR_INVALID, "reading A through a permutation: CUDA plans on device matrices only");
}

int tilerap_spgemm_plan_info(tilerap_spgemm_plan plan, tilerap_spgemm_info *info)
{
  if (!plan || !info) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_spgemm_plan_info: NULL argument");
  *info = plan->info;
#ifdef TILERAP_HAVE_CUDA
  if (plan->cuda && info->lowprec_pairs > 0)
    return tr_cuda_spgemm_lowprec_fallbacks(plan->cuda, &info->lowprec_fallbacks);
#endif
  return TILERAP_SUCCESS;
}

int tilerap_spgemm(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                   tilerap_tile_matrix **C)
{
  tilerap_spgemm_plan P = NULL;
  tilerap_options o;
  int err = tr_one_shot_options(opt, "tilerap_spgemm", &o);
  if (!err) err = tr_spgemm_plan_new(A, B, &o, TR_RUNS_ONCE, 1, &P, C);
  tilerap_spgemm_plan_destroy(&P);
  return err;
}
