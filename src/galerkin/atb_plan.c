/* Plans for C = A^T * B (A is m x k, B is m x n, C is k x n) without the
 * caller forming A^T: MatTransposeMatMult, and the P^T (AP) half of
 * distributed Galerkin products.  CPU engine: an A^T*B SpGEMM plan that
 * reads A's own tiles transposed (no copy of A^T).  CUDA engine: A^T is
 * built once on the device with a value permutation; the numeric phase
 * refreshes its values by a gather and runs the planned product.  With
 * host matrices and the CUDA engine, A, B, A^T and C live on the device
 * for the plan's lifetime and re-runs move values only. */
#include "tile_internal.h"
#include "engine_cuda.h"
#include "spgemm_cpu.h"
#include "csr_path.h"
#include "plan_core.h"

struct tilerap_atb_plan_s {
  tr_plan_core core;         /* engine, recorded structures, device mirrors */
  tilerap_spgemm_plan plan;  /* CPU: A^T*B plan on A; CUDA: At*B plan */
  tilerap_tile_matrix *At;   /* CUDA: A^T on the device */
  int64_t *perm;             /* At->val[q] = A->val[perm[q]], device memory */
  tr_csr_path *csr;          /* the CSR path (csr_path.c): no A^T, no tile plan */
  tilerap_spgemm_info info;  /* the CSR path's (the tile plans keep their own) */
};

void tilerap_atb_plan_destroy(tilerap_atb_plan *plan)
{
  if (!plan || !*plan) return;
  tilerap_atb_plan G = *plan;
  tilerap_spgemm_plan_destroy(&G->plan);
  tr_csr_path_destroy(&G->csr);
#ifdef TILERAP_HAVE_CUDA
  if (G->perm) tr_cuda_free(G->perm);
#endif
  tilerap_tile_destroy(&G->At);
  tr_plan_core_release(&G->core);
  free(G);
  *plan = NULL;
}

static int tr_atb_check(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const char *who)
{
  if (!A || !B || !A->tile_ptr || !B->tile_ptr) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL matrix", who);
  if (A->m != B->m)
    return tilerap_set_error(TILERAP_ERR_SIZE, "%s: A is %d x %d and B is %d x %d: A^T*B needs equal row counts", who,
                             A->m, A->n, B->m, B->n);
  if (A->memtype != B->memtype) return tilerap_set_error(TILERAP_ERR_MEMTYPE, "%s: A and B live in different memories", who);
  return TILERAP_SUCCESS;
}

/* runs: TR_RUNS_ONCE for the one-shot tilerap_atb, else TR_RUNS_REPEATED */
static int tr_atb_plan_new(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                           tr_plan_runs runs, tilerap_atb_plan *plan, tilerap_tile_matrix **C)
{
  static const char who[] = "tilerap_atb_plan_create";
  if (!plan || !C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL output", who);
  *plan = NULL; *C = NULL;
  int err = tr_atb_check(A, B, who);
  if (err) return err;
  tilerap_atb_plan G = tilerap_host_calloc(1, sizeof *G);
  if (!G) return TILERAP_ERR_NOMEM;
  tilerap_options o;
  const tilerap_tile_matrix *wA, *wB;
  tilerap_tile_matrix *wC = NULL;
  if ((err = tr_plan_core_begin(&G->core, opt, A, who, &o)) || (err = tr_plan_core_mirror(&G->core, A, B, &wA, &wB)))
    goto fail;
  if (tr_csr_path_choose(A, B, o.engine))
    err = tr_csr_path_create(wA, 1, wB, o.engine, o.stream, o.plan_values, runs, &G->csr, &wC, &G->info);
  else if (o.engine == TILERAP_ENGINE_CPU)
    err = tr_cpu_spgemm_plan_create_atb(wA, wB, &o, &G->plan, &wC);
  else if (!(err = tilerap_tile_transpose(wA, &G->At, &G->perm)))
    err = tr_spgemm_plan_tiles(G->At, wB, &o, TR_RUNS_REPEATED, &G->plan, &wC);
  if (err || (err = tr_plan_core_hand_out(&G->core, &wC, C)) || (err = tr_plan_core_record(&G->core, A, B, *C)))
    goto fail;
  *plan = G;
  return TILERAP_SUCCESS;
fail:
  tilerap_tile_destroy(&wC);
  tilerap_tile_destroy(C);
  tilerap_atb_plan_destroy(&G);
  return err;
}

int tilerap_atb_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                            tilerap_atb_plan *plan, tilerap_tile_matrix **C)
{
  return tr_atb_plan_new(A, B, opt, TR_RUNS_REPEATED, plan, C);
}

int tilerap_atb_numeric(tilerap_atb_plan G, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                        tilerap_tile_matrix *C)
{
  static const char who[] = "tilerap_atb_numeric";
  if (!G || !C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL plan or C", who);
  const tilerap_tile_matrix *wA, *wB;
  tilerap_tile_matrix *wC;
  int err = tr_atb_check(A, B, who);
  if (err || (err = tr_plan_core_numeric_in(&G->core, A, B, C, who, "A", "B", &wA, &wB, &wC))) return err;
  if (G->csr) err = tr_csr_path_numeric(G->csr, wA, wB, wC);
  else if (!G->At) err = tr_spgemm_run(G->plan, wA, wB, wC); /* CPU: the A^T*B plan reads A's tiles */
  else {
#ifdef TILERAP_HAVE_CUDA
    if (!(err = tr_cuda_gather_values(wA->val, G->perm, G->At->nnz, G->At->val, G->core.stream)))
      err = tr_spgemm_run(G->plan, G->At, wB, wC);
#endif
  }
  return err ? err : tr_plan_core_numeric_out(&G->core, wC, C);
}

int tilerap_atb_plan_info(tilerap_atb_plan G, tilerap_spgemm_info *info)
{
  if (!G || !info) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_atb_plan_info: NULL argument");
  if (G->plan) return tilerap_spgemm_plan_info(G->plan, info);
  *info = G->info;
  return TILERAP_SUCCESS;
}

int tilerap_atb(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                tilerap_tile_matrix **C)
{
  tilerap_atb_plan G = NULL;
  tilerap_options o;
  int err = tr_one_shot_options(opt, "tilerap_atb", &o);
  if (!err) err = tr_atb_plan_new(A, B, &o, TR_RUNS_ONCE, &G, C);
  tilerap_atb_plan_destroy(&G);
  return err;
}
