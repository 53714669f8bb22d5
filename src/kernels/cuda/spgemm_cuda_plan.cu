/* CUDA SpGEMM plan: runs steps 1 and 2 on the plan's stream, keeps the
 * pair lists (first run: step 3 on the pairs), hit lists and chunks
 * (the second run fills the hits; later runs use them), and launches
 * step 3 on numeric calls.
 * Plan creation synchronises with the host only to read the totals that
 * size allocations (pair count; C's tile/entry/hit counts; for large
 * products also the candidate count).  Everything temporary is freed
 * stream-ordered; on any failure nothing is left allocated. */
#include "spgemm_cuda.cuh"
#include "tuning.h"
#include <stdlib.h>
#include <string.h>

/* the pair lists kept for the first run and the deferred hits */
static void tr_plan_free_pairs(tr_cuda_spgemm *P)
{
  tr_group_free(&P->lists, P->stream);
  tr_group_free(&P->kept, P->stream);
  P->pair_a = P->pair_b = P->cand_ptr = P->cand_tile = P->d_ncand = P->pair_cand = P->hloc = NULL;
  P->scan = NULL;
}

static void tr_plan_free(tr_cuda_spgemm *P)
{
  if (!P) return;
  tr_group_free(&P->arrays, P->stream);
  tr_cuda_lowprec_free(P);
  tr_plan_free_pairs(P);
  free(P);
}

extern "C" int tr_cuda_spgemm_plan(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                                   const tilerap_options *opt, tr_plan_runs runs, tr_cuda_spgemm **plan,
                                   tilerap_tile_matrix **C, tilerap_spgemm_info *info)
{
  *plan = NULL;
  *C = NULL;
  tr_trace_on = tr_knob_int(TR_KNOB_TRACE); /* a tilerap_tuning_set since load counts */
  if (A->memtype != TILERAP_MEM_DEVICE || B->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "CUDA SpGEMM plan: A and B must be device matrices");
  tr_cuda_spgemm *P = (tr_cuda_spgemm *)tilerap_host_calloc(1, sizeof *P);
  if (!P) return TILERAP_ERR_NOMEM;
  P->stream = opt ? (cudaStream_t)opt->stream : (cudaStream_t)0;
  P->nonblocking = tr_stream_nonblocking(P->stream);
  P->dense_threshold = opt ? opt->dense_threshold : 192;
  P->tc_threshold = opt ? opt->tc_threshold : -1;
  P->precision = opt ? (int)opt->precision : 0;
  P->one_shot = runs == TR_RUNS_ONCE || runs == TR_RUNS_NEVER;
  P->structure_only = runs == TR_RUNS_NEVER;
  P->defer_hits = runs == TR_RUNS_AFTER_FIRST;
  tr_tmp tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.s = P->stream;
  tr_cuda_cand cand;
  int64_t ncand = 0, pairs = 0, flops = 0, dense = 0, ntc = 0;
  /* the operands may have been written on the legacy stream (copies) */
  TR_MARK("plan start");
  int err = tr_order_after_legacy(P->stream);
  if (!err) err = tr_cuda_step1_structure(A, B, 0, &tmp, &cand);
  TR_MARK("step1");
  if (!err) err = tr_cuda_step2_masks(A, B, &cand, &tmp, P, C, &ncand, &pairs, &flops, &dense, &ntc);
  if (err == TR_STEP1_RETRY) { /* the small row path did not fit: count the pairs first */
    tr_tmp_free_all(&tmp);
    err = tr_cuda_step1_structure(A, B, 1, &tmp, &cand);
    if (!err) err = tr_cuda_step2_masks(A, B, &cand, &tmp, P, C, &ncand, &pairs, &flops, &dense, &ntc);
  }
  tr_tmp_free_all(&tmp);
  TR_MARK("step2");
  if (tr_trace_on) tr_trace_flush(err ? "plan (failed)" : "plan");
  if (!err) err = tr_order_legacy_after(P->stream);
  if (err) {
    if (*C) { tr_cuda_tile_free(*C); free(*C); *C = NULL; }
    tr_plan_free(P);
    return err;
  }
  /* TR_RUNS_AFTER_FIRST: C's first values were made elsewhere, so the first
   * numeric run counts as the second (hits, then the hit kernel) */
  if (P->defer_hits) P->runs = 1;
  info->c_tiles_step1 = ncand;
  info->pairs = pairs;
  info->flops = flops;
  info->dense_tiles = dense;
  info->tc_pairs = ntc;
  info->lowprec_pairs = P->precision != TILERAP_PRECISION_FP64 && P->ntc > 0 ? P->ntc : 0;
  info->lowprec_tiles = info->lowprec_pairs ? P->lp.na + P->lp.nb : 0;
  info->lowprec_fallbacks = 0;
  *plan = P;
  return TILERAP_SUCCESS;
}

extern "C" int tr_cuda_spgemm_numeric(tr_cuda_spgemm *P, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                                      tilerap_tile_matrix *C)
{
  if (!P) return tilerap_set_error(TILERAP_ERR_NULL, "CUDA SpGEMM numeric: NULL plan");
  if (A->memtype != TILERAP_MEM_DEVICE || B->memtype != TILERAP_MEM_DEVICE || C->memtype != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "CUDA SpGEMM numeric: A, B and C must be device matrices");
  /* C's structure must be the plan's (the public entry checks its
   * fingerprint): the second run builds the hit records from C's masks */
  if (C->num_tiles != P->c_tiles || C->nnz != P->c_nnz)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "CUDA SpGEMM numeric: C differs from the plan's");
  if (P->structure_only)
    return tilerap_set_error(TILERAP_ERR_INVALID, "CUDA SpGEMM numeric: the plan holds C's structure only");
  int err = P->nonblocking ? tr_order_after_legacy(P->stream) : TILERAP_SUCCESS;
  if (!err && P->pairs_walk && (P->runs == 0 || P->one_shot)) err = tr_cuda_step3_pairs(P, A, B, C);
  else {
    if (!err && P->pairs_walk) { /* second run: the hits, then the hit kernel from now on */
      err = tr_cuda_step2_fill_hits(P, A, B, C);
      if (!err) {
        P->pairs_walk = 0;
        /* the pair lists are done with; given back now only where that does
         * not wait for the device (pool frees are stream-ordered) */
        if (tr_dfree_is_async()) tr_plan_free_pairs(P);
      }
    }
    if (!err) err = tr_cuda_step3_numeric(P, A, B, C);
  }
  if (!err) P->runs++;
  if (!err && P->nonblocking) err = tr_order_legacy_after(P->stream);
  return err;
}

extern "C" int tr_cuda_spgemm_read_a_through(tr_cuda_spgemm *P, const int64_t *perm, int *taken)
{
  *taken = 0;
  if (!P) return tilerap_set_error(TILERAP_ERR_NULL, "CUDA SpGEMM plan: NULL plan");
  if (!P->defer_hits || P->runs != 1)
    return tilerap_set_error(TILERAP_ERR_INVALID,
                             "CUDA SpGEMM plan: only a deferred plan, before its first run, reads A through a permutation");
  if (P->ntc > 0) return TILERAP_SUCCESS; /* tensor-core pairs read A's tiles in place: A's own values */
  if (P->nhits == 0) { *taken = 1; return TILERAP_SUCCESS; } /* A is never read */
  if (!perm) return tilerap_set_error(TILERAP_ERR_NULL, "CUDA SpGEMM plan: NULL permutation");
  P->a_perm = perm; /* the hits, made by the first run, index through it */
  *taken = 1;
  return TILERAP_SUCCESS;
}

extern "C" void tr_cuda_spgemm_destroy(tr_cuda_spgemm *P)
{
  if (!P) return;
  /* frees are ordered on the plan's stream: kernels in flight finish first */
  tr_plan_free(P);
}

extern "C" int tr_cuda_spgemm_lowprec_fallbacks(const tr_cuda_spgemm *P, int64_t *n)
{
  *n = 0;
  if (!P || P->precision == TILERAP_PRECISION_FP64 || !P->lp.fallbacks || P->runs == 0) return TILERAP_SUCCESS;
  unsigned long long v = 0;
  const int err = tr_readback(&v, P->lp.fallbacks, sizeof v, P->stream, "low-precision fallbacks");
  if (!err) *n = (int64_t)v;
  return err;
}
