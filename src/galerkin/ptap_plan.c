/* Galerkin plans C = P^T (A P).  CPU engine: C = P^T (AP) is planned as
 * an A^T*B product that reads P's own tiles transposed, so no copy of P^T
 * (and no value permutation, no refresh) exists.  CUDA engine: AP is a
 * planned product and so is P^T * AP (P^T built once in tile form with
 * a value permutation), for AP's and C's structures.  Values:
 *   - the first time, by kernels that read A's and P's own tiles: no
 *     walk of AP's pair lists, no P^T values and no hit records, which
 *     the planned P^T * AP would have to write before its first run (the
 *     smallest levels keep AP's walk).  Large halves by row products
 *     (ptap_cuda_rows.cu: a tile row of AP or C summed in shared memory;
 *     P^T's structure takes P's values through the transpose's
 *     permutation), the others by scatters (ptap_cuda_scatter*.cu: one
 *     global atomic per multiply-add, spread over every tile), chosen by
 *     size (TILERAP_PTAP_KERNEL, below);
 *   - on re-runs, AP by its plan's hit records (its first numeric run
 *     makes them); C by the same kernel as its first values for small
 *     products (launches and short chunks bound the planned product
 *     there; that plan then holds C's structure only), by the planned
 *     P^T * AP's hit records for large ones (the hits index P's own
 *     values through the transpose's permutation; P^T's values are
 *     refreshed by a gather only where tensor-core pairs read P^T's
 *     tiles, or with TILERAP_PTAP_GATHER=1).
 * The tuning table's TILERAP_PTAP forces one way for tests: "first" (those
 * kernels the first time only) or "scatter" (every run); "auto" (default)
 * chooses by an estimate of AP's multiply-adds (TILERAP_PTAP_SCATTER_MACS).
 * C is an ordinary tile matrix, so it is the next level's A as it
 * stands.  With the CUDA engine and host matrices, everything (P^T, AP,
 * plans) lives on the device and only A's and P's values go up and C's
 * values come down on re-runs. */
#include "tile_internal.h"
#include "engine_cuda.h"
#include "spgemm_cpu.h"
#include "csr_path.h"
#include "plan_core.h"
#include "tuning.h"
#include <stdio.h>

struct tilerap_ptap_plan_s {
  tr_plan_core core;        /* engine, recorded structures, device mirrors of A, P and C */
  tilerap_tile_matrix *Pt;  /* P^T, in the engine's memory (CUDA engine only) */
  int64_t *perm;            /* Pt->val[q] = P->val[perm[q]], same memory */
  tilerap_tile_matrix *AP;  /* intermediate, engine's memory */
  tilerap_spgemm_plan ap_plan, c_plan; /* structure only where a first-value kernel makes every run's values */
  tr_csr_path *csr;         /* the CSR path (csr_path.c) instead of all of the above */
#ifdef TILERAP_HAVE_CUDA
  int mode;                 /* TR_PTAP_* (CUDA engine) */
  int ap_scatter;           /* AP's first values (all, with SCATTER_ALL) by a first-value kernel, not its plan */
  int p_direct;             /* C's plan reads P's values through perm: no P^T values, no gather */
  int ap_rows, c_rows;      /* each half's kernel: the row product (ptap_cuda_rows.cu), else the scatter */
  int ap_group, c_group;    /* the row products' lanes per tile row */
  tr_cuda_scatter *scatter; /* the scatters' state (a half by scatter) */
#endif
  int64_t runs;             /* C's values made so far (plan with values included) */
  tilerap_ptap_info info;
};

static void tr_free_in(int64_t *p, tilerap_memtype mem)
{
  if (!p) return;
  if (mem == TILERAP_MEM_HOST) free(p);
#ifdef TILERAP_HAVE_CUDA
  else tr_cuda_free(p);
#endif
}

void tilerap_ptap_plan_destroy(tilerap_ptap_plan *plan)
{
  if (!plan || !*plan) return;
  tilerap_ptap_plan G = *plan;
  tilerap_spgemm_plan_destroy(&G->ap_plan);
  tilerap_spgemm_plan_destroy(&G->c_plan);
  tr_csr_path_destroy(&G->csr);
#ifdef TILERAP_HAVE_CUDA
  tr_cuda_scatter_destroy(G->scatter);
#endif
  if (G->Pt) tr_free_in(G->perm, G->Pt->memtype);
  tilerap_tile_destroy(&G->Pt);
  tilerap_tile_destroy(&G->AP);
  tr_plan_core_release(&G->core);
  free(G);
  *plan = NULL;
}

static int tr_ptap_check(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, const char *who)
{
  if (!A || !P) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL matrix", who);
  if (A->m != A->n) return tilerap_set_error(TILERAP_ERR_SIZE, "%s: A must be square (is %d x %d)", who, A->m, A->n);
  if (P->m != A->n)
    return tilerap_set_error(TILERAP_ERR_SIZE, "%s: P has %d rows, A is %d x %d", who, P->m, A->m, A->n);
  if (A->memtype != P->memtype) return tilerap_set_error(TILERAP_ERR_MEMTYPE, "%s: A and P live in different memories", who);
  return TILERAP_SUCCESS;
}

#ifdef TILERAP_HAVE_CUDA
/* Refreshes Pt's values from P's through the permutation (a gather). */
static int tr_refresh_pt(tilerap_ptap_plan G, const tilerap_tile_matrix *P)
{
  return tr_cuda_gather_values(P->val, G->perm, G->Pt->nnz, G->Pt->val, G->core.stream);
}

/* How the CUDA engine makes C's values (TILERAP_PTAP) */
#define TR_PTAP_SCATTER_FIRST 1 /* "first": both first-value kernels the first time, then the planned products */
#define TR_PTAP_SCATTER_ALL 2   /* "scatter": the kernels every run; the plans for structure only */
#define TR_PTAP_AUTO 3          /* "auto" (default): SCATTER_C or SCATTER_FIRST by AP's size */
#define TR_PTAP_SCATTER_C 4     /* (auto) both kernels the first time, then AP planned and C by its kernel */
/* auto: C by its kernel on every run up to TILERAP_PTAP_SCATTER_MACS
 * multiply-adds of AP (about the second product's, which the scatter pays
 * in global atomics; default 8e6); above it, re-runs of the planned
 * P^T * AP's hit records are faster.  AP's own re-runs always use its hit
 * records: its scatter was slower on re-runs at every size measured.
 * H100: the C scatter won at AP <= 8e6 multiply-adds (101^3 level 1),
 * lost from 1.2e7 up (p2d5 level 0). */
/* AP's first values by its scatter from this many multiply-adds on (below,
 * auto leaves them to the plan's walk, one kernel: the scatter's extra
 * launches cost more than they save on the smallest levels) */
#define TR_PTAP_AP_SCATTER_MACS 1e6
static int tr_ptap_cuda_mode(void)
{
  static const int by_index[] = {TR_PTAP_AUTO, TR_PTAP_SCATTER_FIRST, TR_PTAP_SCATTER_ALL};
  return by_index[tr_knob_int(TR_KNOB_PTAP)];
}
/* AP's multiply-adds estimated before any plan exists: nnz(A) times P's
 * mean row length (within 1 % on the model problems' level 0) */
static double tr_ptap_ap_macs(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P)
{
  return P->m > 0 ? (double)A->nnz * ((double)P->nnz / (double)P->m) : 0.0;
}
/* TILERAP_PTAP_KERNEL: which kernel makes each half's values that no
 * planned product makes (first values; C's in the small products'
 * re-runs; all with TILERAP_PTAP=scatter): "rows" (a tile row of the
 * output summed in shared memory, ptap_cuda_rows.cu), "scatter" (one
 * global atomic per multiply-add, ptap_cuda_scatter*.cu) or "auto"
 * (default): rows for a half of at least TR_PTAP_ROWS_ITEMS items (X's
 * entries times Z's tiles per tile row) whose shape suits them
 * (tr_cuda_rows_choose: not too few rows, not too long), the scatter
 * otherwise.  H100 (ncu with warm caches): rows won on the fine levels'
 * AP (p3d7 101^3: 292 against 410 us; 200^3: 2346 against 2690 us) and C
 * at 101^3 (271 against 297 us), tied on C at 200^3, lost on small
 * products (level-1 C of 108 tile rows: 99 against 29 us; level-1 AP of
 * 3e6 items: 79 against 54 us). */
#define TR_PTAP_ROWS_ITEMS 8e6
#define TR_KERNEL_AUTO 0
#define TR_KERNEL_ROWS 1
#define TR_KERNEL_SCATTER 2
/* *use: whether Y = X * Z's values come from the row product (*group: its lanes per row) */
static int tr_ptap_use_rows(int kernel, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Z, void *stream,
                            int *group, int *use)
{
  *use = 0;
  if (kernel == TR_KERNEL_SCATTER) return TILERAP_SUCCESS;
  return tr_cuda_rows_choose(X, Z, kernel == TR_KERNEL_ROWS ? -1.0 : TR_PTAP_ROWS_ITEMS, stream, group, use);
}
/* AP's values by the first-value kernels */
static int tr_ptap_kernel_ap(tilerap_ptap_plan G, const tilerap_tile_matrix *A, const tilerap_tile_matrix *P)
{
  if (G->ap_rows) return tr_cuda_rows_product(A, A->val, NULL, P, G->AP, G->ap_group, G->core.stream);
  return tr_cuda_scatter_ap(G->scatter, A, P, G->AP);
}
/* C's values by the first-value kernels: the rows of P^T's structure take
 * P's values through the transpose's permutation */
static int tr_ptap_kernel_c(tilerap_ptap_plan G, const tilerap_tile_matrix *P, tilerap_tile_matrix *C)
{
  if (G->c_rows) return tr_cuda_rows_product(G->Pt, P->val, G->perm, G->AP, C, G->c_group, G->core.stream);
  return tr_cuda_scatter_run(G->scatter, P, G->AP, C);
}
static int tr_ptap_auto_mode(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P)
{
  return tr_ptap_ap_macs(A, P) <= tr_knob(TR_KNOB_PTAP_SCATTER_MACS) ? TR_PTAP_SCATTER_C : TR_PTAP_SCATTER_FIRST;
}
#endif

/* runs: TR_RUNS_ONCE for a plan that serves one numeric run (tilerap_ptap),
 * else TR_RUNS_REPEATED */
static int tr_ptap_plan_new(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, const tilerap_options *opt,
                            tr_plan_runs runs, tilerap_ptap_plan *plan, tilerap_tile_matrix **C)
{
  static const char who[] = "tilerap_ptap_plan_create";
  if (!plan || !C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL output", who);
  *plan = NULL; *C = NULL;
  int err = tr_ptap_check(A, P, who);
  if (err) return err;
  tilerap_ptap_plan G = tilerap_host_calloc(1, sizeof *G);
  if (!G) return TILERAP_ERR_NOMEM;
  tilerap_options o;
  const tilerap_tile_matrix *wA, *wP;
  tilerap_tile_matrix *wC = NULL;
  if ((err = tr_plan_core_begin(&G->core, opt, A, who, &o)) || (err = tr_plan_core_mirror(&G->core, A, P, &wA, &wP)))
    goto fail;
  const tilerap_engine engine = o.engine;
  if (tr_csr_path_choose(wA, wP, engine)) {
    if ((err = tr_csr_path_ptap_create(wA, wP, engine, o.stream, o.plan_values, runs, &G->csr, &wC, &G->info.ap,
                                       &G->info.ptap)))
      goto fail;
    if (o.plan_values) G->runs = 1;
  } else if (engine == TILERAP_ENGINE_CPU) {
    if ((err = tr_spgemm_plan_tiles(wA, wP, &o, TR_RUNS_REPEATED, &G->ap_plan, &G->AP))) goto fail;
    if ((err = tr_cpu_spgemm_plan_create_atb(wP, G->AP, &o, &G->c_plan, &wC))) goto fail;
  } else {
#ifdef TILERAP_HAVE_CUDA
    const int kernel = tr_knob_int(TR_KNOB_PTAP_KERNEL); /* TR_KERNEL_*: the knob's index */
    G->mode = tr_ptap_cuda_mode();
    /* a one-shot product has no re-runs for hit records to serve */
    if (runs == TR_RUNS_ONCE) G->mode = TR_PTAP_SCATTER_ALL;
    if (G->mode == TR_PTAP_AUTO) G->mode = tr_ptap_auto_mode(wA, wP);
    if ((err = tilerap_tile_transpose(wP, &G->Pt, &G->perm))) goto fail;
    {
      /* both plans without values (the first-value kernels make the first
       * ones): structure only where those kernels make every run's values,
       * otherwise deferred (hits made by the plan's first numeric run) */
      tilerap_options os = o;
      os.plan_values = 0;
      G->ap_scatter = G->mode != TR_PTAP_SCATTER_C || tr_ptap_ap_macs(wA, wP) >= TR_PTAP_AP_SCATTER_MACS;
      const tr_plan_runs apruns = G->mode == TR_PTAP_SCATTER_ALL ? TR_RUNS_NEVER
                                  : G->ap_scatter                ? TR_RUNS_AFTER_FIRST
                                                                 : TR_RUNS_REPEATED;
      const tr_plan_runs cruns = G->mode == TR_PTAP_SCATTER_FIRST ? TR_RUNS_AFTER_FIRST : TR_RUNS_NEVER;
      if ((err = tr_spgemm_plan_tiles(wA, wP, &os, apruns, &G->ap_plan, &G->AP))) goto fail;
      if ((err = tr_spgemm_plan_tiles(G->Pt, G->AP, &os, cruns, &G->c_plan, &wC))) goto fail;
      if (G->ap_scatter && (err = tr_ptap_use_rows(kernel, wA, wP, o.stream, &G->ap_group, &G->ap_rows))) goto fail;
      if ((err = tr_ptap_use_rows(kernel, G->Pt, G->AP, o.stream, &G->c_group, &G->c_rows))) goto fail;
      if (cruns == TR_RUNS_NEVER && !G->c_rows) { /* P^T was needed for C's structure only */
        tr_free_in(G->perm, G->Pt->memtype);
        G->perm = NULL;
        tilerap_tile_destroy(&G->Pt);
      } else if (cruns == TR_RUNS_AFTER_FIRST && !tr_knob_int(TR_KNOB_PTAP_GATHER)) {
        /* C's hit records take P's value indices (through perm) when they
         * are made, so re-runs read P itself: no gather of P^T's values
         * (unless tensor-core pairs, which read P^T's tiles, keep them) */
        if ((err = tr_spgemm_plan_read_a_through(G->c_plan, G->perm, &G->p_direct))) goto fail;
      }
      if ((!G->c_rows || (G->ap_scatter && !G->ap_rows)) &&
          (err = tr_cuda_scatter_create(G->ap_scatter && !G->ap_rows ? wA : NULL, G->AP, o.stream, &G->scatter)))
        goto fail;
      if (o.plan_values) {
        if (G->ap_scatter) err = tr_ptap_kernel_ap(G, wA, wP);
        else err = tr_spgemm_run(G->ap_plan, wA, wP, G->AP);
        if (err || (err = tr_ptap_kernel_c(G, wP, wC))) goto fail;
        G->runs = 1;
      }
    }
#else
    (void)runs;
    err = tilerap_set_error(TILERAP_ERR_ENGINE, "built without CUDA");
    goto fail;
#endif
  }
  if ((err = tr_plan_core_hand_out(&G->core, &wC, C))) goto fail;
  /* a one-shot plan is never re-run: nothing to check later */
  if (runs != TR_RUNS_ONCE && (err = tr_plan_core_record(&G->core, A, P, *C))) goto fail;
  G->info.engine = engine;
  if (!G->csr) {
    tilerap_spgemm_plan_info(G->ap_plan, &G->info.ap);
    tilerap_spgemm_plan_info(G->c_plan, &G->info.ptap);
  }
  *plan = G;
  return TILERAP_SUCCESS;
fail:
  tilerap_tile_destroy(&wC);
  tilerap_tile_destroy(C);
  tilerap_ptap_plan_destroy(&G);
  return err;
}

int tilerap_ptap_plan_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, const tilerap_options *opt,
                             tilerap_ptap_plan *plan, tilerap_tile_matrix **C)
{
  return tr_ptap_plan_new(A, P, opt, TR_RUNS_REPEATED, plan, C);
}

int tilerap_ptap_numeric(tilerap_ptap_plan G, const tilerap_tile_matrix *A, const tilerap_tile_matrix *P,
                         tilerap_tile_matrix *C)
{
  static const char who[] = "tilerap_ptap_numeric";
  if (!G || !C) return tilerap_set_error(TILERAP_ERR_NULL, "%s: NULL plan or C", who);
  const tilerap_tile_matrix *wA, *wP;
  tilerap_tile_matrix *wC;
  int err = tr_ptap_check(A, P, who);
  if (err || (err = tr_plan_core_numeric_in(&G->core, A, P, C, who, "A", "P", &wA, &wP, &wC))) return err;
  if (G->csr) {
    if ((err = tr_csr_path_numeric(G->csr, wA, wP, wC))) return err;
    G->runs++;
    return tr_plan_core_numeric_out(&G->core, wC, C);
  }
#ifdef TILERAP_HAVE_CUDA
  int ap_scatter = 0, c_scatter = 0; /* which halves by the first-value kernels this run */
  if (G->core.engine == TILERAP_ENGINE_CUDA) {
    c_scatter = G->runs == 0 || G->mode == TR_PTAP_SCATTER_ALL || G->mode == TR_PTAP_SCATTER_C;
    ap_scatter = G->ap_scatter && (G->runs == 0 || G->mode == TR_PTAP_SCATTER_ALL);
  }
  if (ap_scatter) err = tr_ptap_kernel_ap(G, wA, wP);
  else
#endif
  err = tr_spgemm_run(G->ap_plan, wA, wP, G->AP);
  if (err) return err;
#ifdef TILERAP_HAVE_CUDA
  if (c_scatter) err = tr_ptap_kernel_c(G, wP, wC);
  else
#endif
  {
#ifdef TILERAP_HAVE_CUDA
    if (G->p_direct) { /* P^T's structure with P's values: the hits index them */
      tilerap_tile_matrix ptv = *G->Pt;
      ptv.val = wP->val;
      err = tr_spgemm_run(G->c_plan, &ptv, G->AP, wC);
    } else if (G->Pt) {
      if ((err = tr_refresh_pt(G, wP))) return err;
      err = tr_spgemm_run(G->c_plan, G->Pt, G->AP, wC);
    } else
#endif
      err = tr_spgemm_run(G->c_plan, wP, G->AP, wC); /* CPU: the A^T*B plan takes P itself */
  }
  if (err) return err;
  G->runs++;
  return tr_plan_core_numeric_out(&G->core, wC, C);
}

int tilerap_ptap_plan_info(tilerap_ptap_plan plan, tilerap_ptap_info *info)
{
  if (!plan || !info) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_ptap_plan_info: NULL argument");
  *info = plan->info;
  int err = TILERAP_SUCCESS; /* the fallbacks of the last run */
  if (plan->ap_plan && info->ap.lowprec_pairs > 0) err = tilerap_spgemm_plan_info(plan->ap_plan, &info->ap);
  if (!err && plan->c_plan && info->ptap.lowprec_pairs > 0) err = tilerap_spgemm_plan_info(plan->c_plan, &info->ptap);
  return err;
}

int tilerap_ptap_path(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, const tilerap_options *opt,
                      tilerap_path *path, double *a_fill, double *p_fill)
{
  tilerap_options defaults;
  if (!opt) { tilerap_options_default(&defaults); opt = &defaults; }
  tilerap_engine engine;
  int err = tr_ptap_check(A, P, "tilerap_ptap_path");
  if (err || (err = tr_plan_engine(opt, A, "tilerap_ptap_path", &engine))) return err;
  if (path) *path = tr_csr_path_choose(A, P, engine) ? TILERAP_PATH_CSR : TILERAP_PATH_TILES;
  if (a_fill) *a_fill = tr_tile_fill(A);
  if (p_fill) *p_fill = tr_tile_fill(P);
  return TILERAP_SUCCESS;
}

int tilerap_ptap(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, const tilerap_options *opt,
                 tilerap_tile_matrix **C)
{
  tilerap_ptap_plan G = NULL;
  tilerap_options o;
  int err = tr_one_shot_options(opt, "tilerap_ptap", &o);
  if (!err) err = tr_ptap_plan_new(A, P, &o, TR_RUNS_ONCE, &G, C);
  tilerap_ptap_plan_destroy(&G);
  return err;
}
