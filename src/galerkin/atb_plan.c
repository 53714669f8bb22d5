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

struct tilerap_atb_plan_s {
  tilerap_engine engine;
  void *stream;
  tr_structure sa, sb, sc;   /* the operands' structures (tr_structure_check) */
  tilerap_spgemm_plan plan;  /* CPU: A^T*B plan on A; CUDA: At*B plan */
  tilerap_tile_matrix *At;   /* CUDA: A^T on the device */
  int64_t *perm;             /* At->val[q] = A->val[perm[q]], device memory */
  tilerap_tile_matrix *dA, *dB, *dC; /* host-resident use of the CUDA engine */
  tr_csr_path *csr;          /* the CSR path (csr_path.c): no A^T, no tile plan */
};

void tilerap_atb_plan_destroy(tilerap_atb_plan *plan)
{
  if (!plan || !*plan) return;
  tilerap_atb_plan G = *plan;
  tilerap_spgemm_plan_destroy(&G->plan);
  tr_csr_path_destroy(&G->csr);
  tr_structure_release(&G->sa); tr_structure_release(&G->sb); tr_structure_release(&G->sc);
#ifdef TILERAP_HAVE_CUDA
  if (G->perm) tr_cuda_free(G->perm);
#endif
  tilerap_tile_destroy(&G->At);
  tilerap_tile_destroy(&G->dA); tilerap_tile_destroy(&G->dB); tilerap_tile_destroy(&G->dC);
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

int tilerap_atb_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                            tilerap_atb_plan *plan, tilerap_tile_matrix **C)
{
  if (!plan || !C) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_atb_plan_create: NULL output");
  *plan = NULL; *C = NULL;
  int err = tr_atb_check(A, B, "tilerap_atb_plan_create");
  if (err) return err;
  tilerap_options o;
  if (opt) o = *opt;
  else tilerap_options_default(&o);
  tilerap_engine engine;
  if ((err = tr_plan_engine(&o, A, "tilerap_atb_plan_create", &engine))) return err;
  o.engine = engine;
  tilerap_atb_plan G = tilerap_host_calloc(1, sizeof *G);
  if (!G) return TILERAP_ERR_NOMEM;
  G->engine = engine;
  G->stream = o.stream;
  const int csr = tr_csr_path_choose(A, B, engine);
  if (engine == TILERAP_ENGINE_CPU) {
    err = csr ? tr_csr_path_create(A, 1, B, engine, NULL, o.plan_values, &G->csr, C, NULL)
              : tr_cpu_spgemm_plan_create_atb(A, B, &o, &G->plan, C);
  } else {
    const tilerap_tile_matrix *wA = A, *wB = B;
    tilerap_tile_matrix *wC = NULL;
    if (A->memtype == TILERAP_MEM_HOST) {
      if ((err = tilerap_tile_copy(A, TILERAP_MEM_DEVICE, &G->dA)) || (err = tilerap_tile_copy(B, TILERAP_MEM_DEVICE, &G->dB)))
        goto fail;
      wA = G->dA; wB = G->dB;
    }
    if (csr) {
      if ((err = tr_csr_path_create(wA, 1, wB, engine, o.stream, o.plan_values, &G->csr, &wC, NULL))) goto fail;
    } else {
      if ((err = tilerap_tile_transpose(wA, &G->At, &G->perm))) goto fail;
      if ((err = tr_spgemm_plan_create_mode(G->At, wB, &o, TR_PLAN_REUSE | TR_PLAN_TILES_ONLY, &G->plan, &wC))) goto fail;
    }
    if (A->memtype == TILERAP_MEM_HOST) { /* keep the device C, hand out a host copy */
      G->dC = wC;
      err = tilerap_tile_copy(G->dC, TILERAP_MEM_HOST, C);
    } else {
      *C = wC;
    }
  }
  if (err || (err = tr_structure_record3(A, B, *C, &G->sa, &G->sb, &G->sc))) goto fail;
  *plan = G;
  return TILERAP_SUCCESS;
fail:
  tilerap_tile_destroy(C);
  tilerap_atb_plan_destroy(&G);
  return err;
}

int tilerap_atb_numeric(tilerap_atb_plan G, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                        tilerap_tile_matrix *C)
{
  static const char who[] = "tilerap_atb_numeric";
  if (!G || !C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL plan or C", who);
  int err = tr_atb_check(A, B, who);
  if (err || (err = tr_structure_check(&G->sa, A, who, "A")) || (err = tr_structure_check(&G->sb, B, who, "B")) ||
      (err = tr_structure_check(&G->sc, C, who, "C")))
    return err;
  if (G->engine == TILERAP_ENGINE_CPU) return G->csr ? tr_csr_path_numeric(G->csr, A, B, C) : tr_spgemm_run(G->plan, A, B, C);
#ifdef TILERAP_HAVE_CUDA
  const tilerap_tile_matrix *wA = A, *wB = B;
  tilerap_tile_matrix *wC = C;
  if (G->dA) {
    if ((err = tr_tile_copy_values(A, G->dA)) || (err = tr_tile_copy_values(B, G->dB))) return err;
    wA = G->dA; wB = G->dB; wC = G->dC;
  }
  if (G->csr) err = tr_csr_path_numeric(G->csr, wA, wB, wC);
  else if (!(err = tr_cuda_gather_values(wA->val, G->perm, G->At->nnz, G->At->val, G->stream)))
    err = tr_spgemm_run(G->plan, G->At, wB, wC);
  if (err) return err;
  if (wC != C) return tr_tile_copy_values(wC, C);
  return TILERAP_SUCCESS;
#else
  return tilerap_set_error(TILERAP_ERR_ENGINE, "built without CUDA");
#endif
}

int tilerap_atb(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, const tilerap_options *opt,
                tilerap_tile_matrix **C)
{
  tilerap_atb_plan G = NULL;
  tilerap_options o;
  if (opt) o = *opt;
  else tilerap_options_default(&o);
  int err = tr_options_check(&o, "tilerap_atb"); /* before plan_values is set below */
  if (err) return err;
  o.plan_values = 1; /* plan and values together */
  err = tilerap_atb_plan_create(A, B, &o, &G, C);
  if (err) tilerap_tile_destroy(C);
  tilerap_atb_plan_destroy(&G);
  return err;
}
