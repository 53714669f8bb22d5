/* SpGEMM plans: engine-neutral front end of the three steps.  The plan
 * owns the pairing lists (CPU) or the device plan (CUDA); C belongs to
 * the caller.  With the CUDA engine and host matrices (host-resident
 * interface) the plan keeps device copies of A, B and C and moves only
 * values on numeric re-runs. */
#include "spgemm_cpu.h"
#include "engine_cuda.h"

struct tilerap_spgemm_plan_s {
  tilerap_engine engine;
  int dense_threshold;
  void *stream;
  tr_fingerprint fa, fb, fc;
  tilerap_spgemm_info info;
  tr_pairs pairs; /* CPU engine */
#ifdef TILERAP_HAVE_CUDA
  struct tr_cuda_spgemm *cuda;
  tilerap_tile_matrix *dA, *dB, *dC; /* device mirrors for host-resident use */
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
#ifdef TILERAP_HAVE_CUDA
  if (P->cuda) tr_cuda_spgemm_destroy(P->cuda);
  tilerap_tile_destroy(&P->dA); tilerap_tile_destroy(&P->dB); tilerap_tile_destroy(&P->dC);
#endif
  free(P);
  *plan = NULL;
}

static int tr_plan_cpu(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                       tilerap_tile_matrix **C)
{
  if (A->memtype != TILERAP_MEM_HOST)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "the CPU engine needs host matrices (got device ones)");
  int64_t *cand_ptr = tilerap_host_alloc((size_t)A->tile_rows + 1, sizeof(int64_t));
  int32_t *cand_col = NULL;
  if (!cand_ptr) return TILERAP_ERR_NOMEM;
  int err = tr_cpu_step1_structure(A, B, cand_ptr, &cand_col, &P->pairs);
  if (!err) {
    P->info.c_tiles_step1 = P->pairs.num_tiles;
    err = tr_cpu_step2_masks(A, B, cand_ptr, cand_col, &P->pairs, C, &P->info.flops);
  }
  free(cand_ptr); free(cand_col);
  if (err) return err;
  P->info.pairs = P->pairs.pair_ptr[P->pairs.num_tiles];
  int64_t dense = 0;
  for (int64_t t = 0; t < (*C)->num_tiles; t++) dense += (*C)->tile_off[t + 1] - (*C)->tile_off[t] > P->dense_threshold;
  P->info.dense_tiles = dense;
  return TILERAP_SUCCESS;
}

#ifdef TILERAP_HAVE_CUDA
static int tr_plan_cuda(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                        const tilerap_options *opt, tilerap_tile_matrix **C)
{
  int err;
  if (A->memtype == TILERAP_MEM_DEVICE) return tr_cuda_spgemm_plan(A, B, opt, &P->cuda, C, &P->info);
  /* host-resident interface: mirror on the device, bring C's structure back */
  if ((err = tilerap_tile_copy(A, TILERAP_MEM_DEVICE, &P->dA))) return err;
  if ((err = tilerap_tile_copy(B, TILERAP_MEM_DEVICE, &P->dB))) return err;
  if ((err = tr_cuda_spgemm_plan(P->dA, P->dB, opt, &P->cuda, &P->dC, &P->info))) return err;
  return tilerap_tile_copy(P->dC, TILERAP_MEM_HOST, C);
}
#endif

int tilerap_spgemm_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                               tilerap_spgemm_plan *plan, tilerap_tile_matrix **C)
{
  if (!plan || !C) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_spgemm_plan_create: NULL output");
  *plan = NULL; *C = NULL;
  int err = tr_check_operands(A, B, "tilerap_spgemm_plan_create");
  if (err) return err;
  tilerap_options defaults;
  if (!opt) { tilerap_options_default(&defaults); opt = &defaults; }
  if (opt->dense_threshold < 0 || opt->dense_threshold > 256)
    return tilerap_set_error(TILERAP_ERR_INVALID, "dense threshold %d outside [0,256]", opt->dense_threshold);
  tilerap_engine engine = tilerap_engine_resolve(opt->engine);
  /* device matrices can only be multiplied where they are */
  if (A->memtype == TILERAP_MEM_DEVICE) engine = TILERAP_ENGINE_CUDA;
  if (!tilerap_engine_available(engine))
    return tilerap_set_error(TILERAP_ERR_ENGINE, "engine '%s' is not available (built without CUDA or no GPU)",
                             tilerap_engine_name(engine));
  tilerap_spgemm_plan P = tilerap_host_calloc(1, sizeof *P);
  if (!P) return TILERAP_ERR_NOMEM;
  P->engine = engine;
  P->dense_threshold = opt->dense_threshold;
  P->stream = opt->stream;
  P->fa = tr_fingerprint_of(A);
  P->fb = tr_fingerprint_of(B);
  P->info.engine = engine;
  if (engine == TILERAP_ENGINE_CPU) err = tr_plan_cpu(P, A, B, C);
  else {
#ifdef TILERAP_HAVE_CUDA
    err = tr_plan_cuda(P, A, B, opt, C);
#else
    err = tilerap_set_error(TILERAP_ERR_ENGINE, "built without CUDA");
#endif
  }
  if (err) { tilerap_spgemm_plan_destroy(&P); tilerap_tile_destroy(C); return err; }
  P->fc = tr_fingerprint_of(*C);
  P->info.c_tiles = (*C)->num_tiles;
  P->info.c_nnz = (*C)->nnz;
  *plan = P;
  return TILERAP_SUCCESS;
}

int tilerap_spgemm_numeric(tilerap_spgemm_plan P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                           tilerap_tile_matrix *C)
{
  if (!P || !C) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_spgemm_numeric: NULL plan or C");
  int err = tr_check_operands(A, B, "tilerap_spgemm_numeric");
  if (err) return err;
  if (!tr_fingerprint_equal(P->fa, A) || !tr_fingerprint_equal(P->fb, B) || !tr_fingerprint_equal(P->fc, C))
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "tilerap_spgemm_numeric: A, B or C differ from the plan's structure");
  if (A->memtype != C->memtype) return tilerap_set_error(TILERAP_ERR_MEMTYPE, "tilerap_spgemm_numeric: C in another memory than A, B");
  if (P->engine == TILERAP_ENGINE_CPU) {
    tr_cpu_step3_numeric(A, B, &P->pairs, P->dense_threshold, C);
    return TILERAP_SUCCESS;
  }
#ifdef TILERAP_HAVE_CUDA
  if (A->memtype == TILERAP_MEM_DEVICE) return tr_cuda_spgemm_numeric(P->cuda, A, B, C);
  if ((err = tilerap_tile_copy_values(A, P->dA)) || (err = tilerap_tile_copy_values(B, P->dB)) ||
      (err = tr_cuda_spgemm_numeric(P->cuda, P->dA, P->dB, P->dC)))
    return err;
  return tilerap_tile_copy_values(P->dC, C);
#else
  return tilerap_set_error(TILERAP_ERR_ENGINE, "built without CUDA");
#endif
}

int tilerap_spgemm_plan_info(tilerap_spgemm_plan plan, tilerap_spgemm_info *info)
{
  if (!plan || !info) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_spgemm_plan_info: NULL argument");
  *info = plan->info;
  return TILERAP_SUCCESS;
}

int tilerap_spgemm(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                   tilerap_tile_matrix **C)
{
  tilerap_spgemm_plan P = NULL;
  int err = tilerap_spgemm_plan_create(A, B, opt, &P, C);
  if (!err) err = tilerap_spgemm_numeric(P, A, B, *C);
  if (err) tilerap_tile_destroy(C);
  tilerap_spgemm_plan_destroy(&P);
  return err;
}
