/* BoomerAMG re-setup when only A's values change (TileRAP_HypreSetReuse,
 * TILERAP_HYPRE_REUSE).  hypre_BoomerAMGSetup is interposed: after a full
 * setup the hook records every level's Galerkin product (level_recipe.c);
 * a later setup on a matrix of the same pattern keeps coarsening and P,
 * recomputes each coarse operator in place from the kept plans, and
 * refreshes the value-dependent setup data with hypre's own routines, as
 * hypre_BoomerAMGSetup computes them: l1 norms, Chebyshev coefficients,
 * relaxation weights asked for as 0, the coarsest level's Gaussian
 * elimination.  Settings whose setup data it does not refresh (complex
 * smoothers, non-Galerkin or filtered coarse operators, AIR, additive
 * cycles, block matrices, device matrices without the CUDA engine) always
 * get a full setup, counted with their reason. */
#include "hook_internal.h"
#include "level_recipe.h"
#include "tuning.h"
#include "tilerap_csr_layouts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef HYPRE_Int (*tr_amg_setup_fn)(void *, hypre_ParCSRMatrix *, hypre_ParVector *, hypre_ParVector *);
typedef HYPRE_Int (*tr_amg_destroy_fn)(void *);

/* A's pattern at the full setup: the re-setup's precondition, compared
 * entry by entry (host), or by structure fingerprints (device). */
typedef struct {
  HYPRE_BigInt global_rows, first_row;
  HYPRE_Int n, nnz_d, nnz_o, ncol_o;
  HYPRE_Int *di, *dj, *oi, *oj;
  HYPRE_BigInt *cmap;
  /* device memory: a fingerprint of the diag and offd blocks' structures
   * computed on the GPU instead of a host copy (cmap is kept either way) */
  int dev;
  uint64_t fp;
} tr_pattern;

/* The settings that shape the hierarchy or its smoothers, as at the full
 * setup: a re-setup keeps that hierarchy, so one changed since (a fuzzing
 * pass: the relax type made CG-smoothed, Schwarz set, MaxLevels lowered)
 * takes a full setup instead; the smoother left unrefreshed crashed the
 * solve. */
#define TR_SETTINGS_INT 20
#define TR_SETTINGS_REAL 4
typedef struct {
  HYPRE_Int i[TR_SETTINGS_INT];
  HYPRE_Real r[TR_SETTINGS_REAL];
} tr_settings;

typedef struct tr_amg_state {
  void *amg;
  tr_settings settings; /* at the full setup the levels were kept from */
  int max_reuses;      /* TileRAP_HypreSetReuse; TR_REUSE_ENV: the environment's */
  int reuses;          /* re-setups since the last full setup */
  int kept;            /* the recipes below are valid */
  int why_not;         /* full-setup reason while !kept (after a full setup) */
  int num_levels;
  hypre_ParCSRMatrix **A, **P; /* the hierarchy recorded (pointers) */
  tr_level_recipe **lv;
  tr_pattern fine;
  int nweights;
  HYPRE_Real *want_weight, *want_omega; /* relaxation weights asked for */
  HYPRE_Real *got_weight, *got_omega;   /* ... and as the setup left them */
  struct tr_amg_state *next;
} tr_amg_state;

#define TR_REUSE_ENV (-2)

static tr_amg_state *g_states;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static tr_amg_state *find_state(void *amg, int create)
{
  pthread_mutex_lock(&g_lock);
  tr_amg_state *s = g_states;
  while (s && s->amg != amg) s = s->next;
  if (!s && create && (s = calloc(1, sizeof *s))) {
    s->amg = amg;
    s->max_reuses = TR_REUSE_ENV;
    s->next = g_states;
    g_states = s;
  }
  pthread_mutex_unlock(&g_lock);
  return s;
}

static void pattern_free(tr_pattern *p)
{
  free(p->di); free(p->dj); free(p->oi); free(p->oj); free(p->cmap);
  memset(p, 0, sizeof *p);
}

static void drop_hierarchy(tr_amg_state *s)
{
  for (int l = 0; s->lv && l < s->num_levels - 1; l++) tr_level_recipe_free(&s->lv[l]);
  free(s->lv); free(s->A); free(s->P);
  s->lv = NULL; s->A = s->P = NULL;
  s->num_levels = 0;
  s->kept = 0;
  pattern_free(&s->fine);
}

static void forget_state(void *amg)
{
  pthread_mutex_lock(&g_lock);
  tr_amg_state **pp = &g_states;
  while (*pp && (*pp)->amg != amg) pp = &(*pp)->next;
  tr_amg_state *s = *pp;
  if (s) *pp = s->next;
  pthread_mutex_unlock(&g_lock);
  if (!s) return;
  drop_hierarchy(s);
  free(s->want_weight); free(s->want_omega); free(s->got_weight); free(s->got_omega);
  free(s);
}

int TileRAP_HypreSetReuse(void *solver, int max_reuses)
{
  if (!solver || max_reuses < -1) {
    tr_hypre_note("TileRAP_HypreSetReuse: %s", !solver ? "no solver" : "max_reuses below -1");
    return TILERAP_ERR_INVALID;
  }
  tr_amg_state *s = find_state(solver, 1);
  if (!s) return TILERAP_ERR_NOMEM;
  s->max_reuses = max_reuses;
  s->reuses = 0;
  if (max_reuses == 0) drop_hierarchy(s);
  return TILERAP_SUCCESS;
}

static int reuse_setting(const tr_amg_state *s)
{
  return s && s->max_reuses != TR_REUSE_ENV ? s->max_reuses : tr_knob_int(TR_KNOB_HYPRE_REUSE);
}

/* ---- A's pattern ---------------------------------------------------- */

static void *dup_bytes(const void *p, size_t n)
{
  void *q = malloc(n ? n : 1);
  if (q && n) memcpy(q, p, n);
  return q;
}

/* Structure-only fingerprint of a device matrix, entries in their order
 * (the recipes keep the slots of the record): diag and offd blocks; the
 * offd column map (host memory) is compared by the caller. */
static int device_fingerprint(hypre_ParCSRMatrix *A, uint64_t *fp)
{
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  if (sizeof(HYPRE_Int) != sizeof(int32_t)) return 1;
  uint64_t fo = 0;
  int err = tilerap_csr_fingerprint_i32((int32_t)hypre_CSRMatrixNumRows(Ad), (const int32_t *)hypre_CSRMatrixI(Ad),
                                        (const int32_t *)hypre_CSRMatrixJ(Ad), NULL, 1, TILERAP_MEM_DEVICE, fp);
  if (!err && hypre_CSRMatrixNumNonzeros(Ao) && hypre_CSRMatrixI(Ao))
    err = tilerap_csr_fingerprint_i32((int32_t)hypre_CSRMatrixNumRows(Ao), (const int32_t *)hypre_CSRMatrixI(Ao),
                                      (const int32_t *)hypre_CSRMatrixJ(Ao), NULL, 1, TILERAP_MEM_DEVICE, &fo);
  if (err) tr_hypre_note("re-setup: fingerprint of A on the device: %s", tilerap_last_error());
  *fp = *fp * 0x9e3779b97f4a7c15ULL + fo;
  return err != 0;
}

static int pattern_save(tr_pattern *p, hypre_ParCSRMatrix *A)
{
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  p->dev = tr_hypre_on_device(A);
  p->global_rows = hypre_ParCSRMatrixGlobalNumRows(A);
  p->first_row = hypre_ParCSRMatrixFirstRowIndex(A);
  p->n = hypre_CSRMatrixNumRows(Ad);
  p->nnz_d = hypre_CSRMatrixNumNonzeros(Ad);
  p->nnz_o = hypre_CSRMatrixNumNonzeros(Ao);
  p->ncol_o = hypre_CSRMatrixNumCols(Ao);
  p->cmap = dup_bytes(hypre_ParCSRMatrixColMapOffd(A), (size_t)p->ncol_o * sizeof(HYPRE_BigInt));
  if (p->dev) return !p->cmap || device_fingerprint(A, &p->fp);
  const size_t ni = ((size_t)p->n + 1) * sizeof(HYPRE_Int);
  p->di = dup_bytes(hypre_CSRMatrixI(Ad), ni);
  p->dj = dup_bytes(hypre_CSRMatrixJ(Ad), (size_t)p->nnz_d * sizeof(HYPRE_Int));
  p->oi = hypre_CSRMatrixI(Ao) ? dup_bytes(hypre_CSRMatrixI(Ao), ni) : NULL;
  p->oj = dup_bytes(hypre_CSRMatrixJ(Ao), (size_t)p->nnz_o * sizeof(HYPRE_Int));
  return !p->di || !p->dj || (hypre_CSRMatrixI(Ao) && !p->oi) || !p->oj || !p->cmap;
}

static int same_bytes(const void *a, const void *b, size_t n)
{
  return n == 0 || (a && b && !memcmp(a, b, n));
}

static int pattern_same(const tr_pattern *p, hypre_ParCSRMatrix *A)
{
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  if (p->global_rows != hypre_ParCSRMatrixGlobalNumRows(A) || p->first_row != hypre_ParCSRMatrixFirstRowIndex(A) ||
      p->n != hypre_CSRMatrixNumRows(Ad) || p->nnz_d != hypre_CSRMatrixNumNonzeros(Ad) ||
      p->nnz_o != hypre_CSRMatrixNumNonzeros(Ao) || p->ncol_o != hypre_CSRMatrixNumCols(Ao) ||
      hypre_CSRMatrixNumCols(Ad) != hypre_ParCSRMatrixNumCols(A) || p->dev != tr_hypre_on_device(A))
    return 0;
  if (p->dev) {
    uint64_t fp = 0;
    return same_bytes(p->cmap, hypre_ParCSRMatrixColMapOffd(A), (size_t)p->ncol_o * sizeof(HYPRE_BigInt)) &&
           !device_fingerprint(A, &fp) && fp == p->fp;
  }
  if (!p->oi != !hypre_CSRMatrixI(Ao)) return 0;
  const size_t ni = ((size_t)p->n + 1) * sizeof(HYPRE_Int);
  return same_bytes(p->di, hypre_CSRMatrixI(Ad), ni) &&
         same_bytes(p->dj, hypre_CSRMatrixJ(Ad), (size_t)p->nnz_d * sizeof(HYPRE_Int)) &&
         (!p->oi || same_bytes(p->oi, hypre_CSRMatrixI(Ao), ni)) &&
         same_bytes(p->oj, hypre_CSRMatrixJ(Ao), (size_t)p->nnz_o * sizeof(HYPRE_Int)) &&
         same_bytes(p->cmap, hypre_ParCSRMatrixColMapOffd(A), (size_t)p->ncol_o * sizeof(HYPRE_BigInt));
}

/* ---- settings whose setup data the re-setup refreshes ----------------- */

static int smoother_kept(HYPRE_Int t)
{
  /* Jacobi, the Gauss-Seidel family, l1 variants, Chebyshev */
  return t == 0 || t == 3 || t == 4 || t == 6 || t == 7 || t == 8 || t == 13 || t == 14 || t == 16 || t == 18;
}

static int gauss_elim(HYPRE_Int t)
{
#ifdef hypre_ParAMGDataAWork
  if (t == 19 || t == 98 || t == 198) return 1;
#endif
  return t == 9 || t == 99 || t == 199;
}

static void settings_get(hypre_ParAMGData *amg, tr_settings *t)
{
  const HYPRE_Int *grt = hypre_ParAMGDataGridRelaxType(amg);
  const HYPRE_Int v[TR_SETTINGS_INT] = {
      hypre_ParAMGDataMaxLevels(amg), hypre_ParAMGDataCoarsenType(amg), hypre_ParAMGDataInterpType(amg),
      hypre_ParAMGDataPMaxElmts(amg), hypre_ParAMGDataAggNumLevels(amg), hypre_ParAMGDataAggInterpType(amg),
      hypre_ParAMGDataAggPMaxElmts(amg), hypre_ParAMGDataNumFunctions(amg), hypre_ParAMGDataNodal(amg),
      hypre_ParAMGDataMaxCoarseSize(amg), hypre_ParAMGDataMinCoarseSize(amg), hypre_ParAMGDataMeasureType(amg),
      hypre_ParAMGDataRelaxOrder(amg), hypre_ParAMGDataNumPaths(amg), hypre_ParAMGDataKeepTranspose(amg),
      hypre_ParAMGDataModularizedMatMat(amg), grt ? grt[0] : -1, grt ? grt[1] : -1, grt ? grt[2] : -1,
      grt ? grt[3] : -1};
  memcpy(t->i, v, sizeof v);
  t->r[0] = hypre_ParAMGDataStrongThreshold(amg);
  t->r[1] = hypre_ParAMGDataMaxRowSum(amg);
  t->r[2] = hypre_ParAMGDataTruncFactor(amg);
  t->r[3] = hypre_ParAMGDataAggTruncFactor(amg);
}

static int settings_same(const tr_amg_state *s, hypre_ParAMGData *amg)
{
  tr_settings now;
  settings_get(amg, &now);
  return !memcmp(now.i, s->settings.i, sizeof now.i) && !memcmp(now.r, s->settings.r, sizeof now.r);
}

/* -1 if the re-setup refreshes every setup datum of this solver, else the
 * full-setup reason. */
static int unsupported(hypre_ParAMGData *amg, hypre_ParCSRMatrix *A)
{
  if (!TILERAP_HYPRE_SCALAR_OK || sizeof(HYPRE_Int) != sizeof(int32_t)) return TILERAP_HYPRE_SETUP_OPTIONS;
  if (tr_hypre_on_device(A)) { /* device memory: the CUDA engine */
    if (!TR_HYPRE_DEVICE || tilerap_engine_resolve(TILERAP_ENGINE_AUTO) != TILERAP_ENGINE_CUDA)
      return TILERAP_HYPRE_SETUP_DEVICE;
  }
  const HYPRE_Int *grt = hypre_ParAMGDataGridRelaxType(amg);
  if (!grt || hypre_ParAMGDataBlockMode(amg) || hypre_ParAMGDataSmoothNumLevels(amg) > 0 ||
      hypre_ParAMGDataRestriction(amg) || hypre_ParAMGDataADropTol(amg) > 0.0 ||
      hypre_ParAMGDataCoarseSolver(amg) || hypre_ParAMGDataAdditive(amg) >= 0 ||
      hypre_ParAMGDataMultAdditive(amg) >= 0 || hypre_ParAMGDataSimple(amg) >= 0 ||
      hypre_ParAMGDataNonGalerkinTol(amg) > 0.0)
    return TILERAP_HYPRE_SETUP_OPTIONS;
  const HYPRE_Real *ngt = hypre_ParAMGDataNonGalerkTol(amg);
  for (HYPRE_Int l = 0; ngt && l < hypre_ParAMGDataNonGalerkNumTol(amg); l++)
    if (ngt[l] > 0.0) return TILERAP_HYPRE_SETUP_OPTIONS;
#ifdef hypre_ParAMGDataFilterFunctions
  if (hypre_ParAMGDataFilterFunctions(amg)) return TILERAP_HYPRE_SETUP_OPTIONS;
#endif
  for (int c = 0; c < 3; c++)
    if (!smoother_kept(grt[c])) return TILERAP_HYPRE_SETUP_OPTIONS;
  if (!smoother_kept(grt[3]) && !gauss_elim(grt[3])) return TILERAP_HYPRE_SETUP_OPTIONS;
  return -1;
}

/* ---- the value-dependent setup data, as hypre_BoomerAMGSetup makes them */

/* always: hypre's second pass (relax type 7) keeps a vector even where a
 * rank has no rows; its first pass keeps none there. */
static void set_l1_norms(hypre_ParAMGData *amg, int j, HYPRE_Int option, int use_cf, int always)
{
  hypre_Vector **l1 = hypre_ParAMGDataL1Norms(amg);
  hypre_ParCSRMatrix *Aj = hypre_ParAMGDataAArray(amg)[j];
  HYPRE_Real *data = NULL;
  HYPRE_Int *cf = use_cf && hypre_ParAMGDataCFMarkerArray(amg)[j]
                    ? hypre_IntArrayData(hypre_ParAMGDataCFMarkerArray(amg)[j]) : NULL;
  hypre_ParCSRComputeL1Norms(Aj, option, cf, &data);
  if (l1[j]) hypre_SeqVectorDestroy(l1[j]);
  l1[j] = NULL;
  if (!data && !always) return; /* no rows here: hypre keeps no vector either */
  l1[j] = hypre_SeqVectorCreate(hypre_ParCSRMatrixNumRows(Aj));
  hypre_VectorData(l1[j]) = data;
  hypre_SeqVectorInitialize_v2(l1[j], hypre_ParCSRMatrixMemoryLocation(Aj));
}

static void set_chebyshev(hypre_ParAMGData *amg, int j)
{
  hypre_ParCSRMatrix *Aj = hypre_ParAMGDataAArray(amg)[j];
  const HYPRE_Int scale = hypre_ParAMGDataChebyScale(amg), eig_est = hypre_ParAMGDataChebyEigEst(amg);
  HYPRE_Real max_eig = 0.0, min_eig = 0.0;
  if (eig_est) hypre_ParCSRMaxEigEstimateCG(Aj, scale, eig_est, &max_eig, &min_eig);
  else hypre_ParCSRMaxEigEstimate(Aj, scale, &max_eig, &min_eig);
  hypre_ParAMGDataMaxEigEst(amg)[j] = max_eig;
  hypre_ParAMGDataMinEigEst(amg)[j] = min_eig;
  hypre_Vector **ds = hypre_ParAMGDataChebyDS(amg);
  HYPRE_Real **coefs = hypre_ParAMGDataChebyCoefs(amg);
  hypre_TFree(coefs[j], HYPRE_MEMORY_HOST);
  if (ds[j]) hypre_SeqVectorDestroy(ds[j]);
  ds[j] = hypre_SeqVectorCreate(hypre_ParCSRMatrixNumRows(Aj));
  hypre_VectorVectorStride(ds[j]) = hypre_ParCSRMatrixNumRows(Aj);
  hypre_VectorIndexStride(ds[j]) = 1;
  hypre_VectorMemoryLocation(ds[j]) = hypre_ParCSRMatrixMemoryLocation(Aj);
  hypre_ParCSRRelax_Cheby_Setup(Aj, max_eig, min_eig, hypre_ParAMGDataChebyFraction(amg),
                                hypre_ParAMGDataChebyOrder(amg), scale, hypre_ParAMGDataChebyVariant(amg),
                                &coefs[j], &hypre_VectorData(ds[j]));
}

/* The coarsest level's dense system, freed as hypre frees it and set up again. */
static void set_gauss_elim(hypre_ParAMGData *amg, int level)
{
#ifdef hypre_ParAMGDataGEMemoryLocation
  const HYPRE_MemoryLocation ge = hypre_ParAMGDataGEMemoryLocation(amg);
#else
  const HYPRE_MemoryLocation ge = HYPRE_MEMORY_HOST;
#endif
#ifdef hypre_ParAMGDataAPiv
#if defined(HYPRE_USING_MAGMA)
  hypre_TFree(hypre_ParAMGDataAPiv(amg), HYPRE_MEMORY_HOST);
#else
  hypre_TFree(hypre_ParAMGDataAPiv(amg), ge);
#endif
#endif
#ifdef hypre_ParAMGDataAWork
  hypre_TFree(hypre_ParAMGDataAWork(amg), ge);
#endif
#ifdef hypre_ParAMGDataUVec
  hypre_TFree(hypre_ParAMGDataUVec(amg), ge);
#endif
#ifdef hypre_ParAMGDataAInv
  hypre_TFree(hypre_ParAMGDataAInv(amg), HYPRE_MEMORY_HOST);
#endif
  hypre_TFree(hypre_ParAMGDataAMat(amg), ge);
  hypre_TFree(hypre_ParAMGDataBVec(amg), ge);
  hypre_TFree(hypre_ParAMGDataCommInfo(amg), HYPRE_MEMORY_HOST);
  MPI_Comm nc = hypre_ParAMGDataNewComm(amg);
  if (nc != hypre_MPI_COMM_NULL) {
    hypre_MPI_Comm_free(&nc);
    hypre_ParAMGDataNewComm(amg) = hypre_MPI_COMM_NULL;
  }
  hypre_GaussElimSetup(amg, level, hypre_ParAMGDataGridRelaxType(amg)[3]);
}

static void refresh_smoothers(hypre_ParAMGData *amg, tr_amg_state *s, int ge)
{
  const int L = hypre_ParAMGDataNumLevels(amg);
  const HYPRE_Int *grt = hypre_ParAMGDataGridRelaxType(amg);
  const int order = hypre_ParAMGDataRelaxOrder(amg) != 0;
  HYPRE_Real *w = hypre_ParAMGDataRelaxWeight(amg), *om = hypre_ParAMGDataOmega(amg);
#define TR_ANY12(t) (grt[1] == (t) || grt[2] == (t))
  for (int j = 0; j < L; j++) {
    const int coarsest = j == L - 1;
    /* l1 norms: the last rule that applies wins, as in hypre's setup */
    HYPRE_Int opt = -1;
    int cf = 0;
    if (!coarsest && (TR_ANY12(8) || TR_ANY12(13) || TR_ANY12(14))) { opt = 4; cf = order; }
    else if (coarsest && (grt[3] == 8 || grt[3] == 13 || grt[3] == 14)) { opt = 4; cf = 0; }
    if (!coarsest && TR_ANY12(18)) { opt = 1; cf = order; }
    else if (coarsest && grt[3] == 18) { opt = 1; cf = 0; }
    int always = 0;
    if (TR_ANY12(7) || (coarsest && grt[3] == 7)) { opt = 5; cf = 0; always = 1; }
    if (opt >= 0 && hypre_ParAMGDataL1Norms(amg)) set_l1_norms(amg, j, opt, cf, always);
    if ((TR_ANY12(16) || (coarsest && grt[3] == 16)) && hypre_ParAMGDataChebyCoefs(amg)) set_chebyshev(amg, j);
    if (j < s->nweights) {
      /* a weight the user changed since the setup is a new request */
      if (w && w[j] != s->got_weight[j]) s->want_weight[j] = w[j];
      if (om && om[j] != s->got_omega[j]) s->want_omega[j] = om[j];
      if (w) w[j] = s->want_weight[j];
      if (om) om[j] = s->want_omega[j];
      if (w && w[j] == 0.0) {
        hypre_ParCSRMatrixScaledNorm(hypre_ParAMGDataAArray(amg)[j], &w[j]);
        if (w[j] != 0.0) w[j] = 4.0 / 3.0 / w[j];
      }
      if (w) s->got_weight[j] = w[j];
      if (om) s->got_omega[j] = om[j];
    }
  }
#undef TR_ANY12
  if (ge) set_gauss_elim(amg, L - 1);
}

/* ---- full setup, record, re-setup ----------------------------------- */

static tr_amg_setup_fn original_setup(void)
{
  static tr_amg_setup_fn fn;
  if (!fn) fn = (tr_amg_setup_fn)tr_hypre_next_symbol("hypre_BoomerAMGSetup");
  return fn;
}

/* The weights asked for, before hypre's setup replaces the ones set to 0. */
static int save_weights(tr_amg_state *s, hypre_ParAMGData *amg, int after)
{
  const int n = hypre_ParAMGDataMaxLevels(amg);
  const HYPRE_Real *w = hypre_ParAMGDataRelaxWeight(amg), *om = hypre_ParAMGDataOmega(amg);
  if (!after) {
    free(s->want_weight); free(s->want_omega); free(s->got_weight); free(s->got_omega);
    s->want_weight = calloc((size_t)n + 1, sizeof(HYPRE_Real));
    s->want_omega = calloc((size_t)n + 1, sizeof(HYPRE_Real));
    s->got_weight = calloc((size_t)n + 1, sizeof(HYPRE_Real));
    s->got_omega = calloc((size_t)n + 1, sizeof(HYPRE_Real));
    s->nweights = 0;
    if (!s->want_weight || !s->want_omega || !s->got_weight || !s->got_omega) return 1;
  }
  for (int j = 0; j < n; j++) {
    HYPRE_Real *ww = after ? s->got_weight : s->want_weight, *wo = after ? s->got_omega : s->want_omega;
    ww[j] = w ? w[j] : 1.0;
    wo[j] = om ? om[j] : 1.0;
    /* CG-estimated weights (negative) are not refreshed */
    if (!after && (ww[j] < 0.0 || wo[j] < 0.0)) return 1;
  }
  s->nweights = n;
  return 0;
}

static void count_collective(MPI_Comm comm, int *failed)
{
  int np = 1, any = 0;
  MPI_Comm_size(comm, &np);
  if (np > 1) {
    MPI_Allreduce(failed, &any, 1, MPI_INT, MPI_MAX, comm);
    *failed = any;
  }
}

/* After a full setup: every level's recipe (collective); the reason if not. */
static int record(tr_amg_state *s, hypre_ParAMGData *amg, hypre_ParCSRMatrix *A)
{
  const int L = hypre_ParAMGDataNumLevels(amg);
  hypre_ParCSRMatrix **Aa = hypre_ParAMGDataAArray(amg), **Pa = hypre_ParAMGDataPArray(amg);
  MPI_Comm comm = hypre_ParCSRMatrixComm(A);
  int failed = !Aa || Aa[0] != A || L < 1 || (L > 1 && !Pa);
  count_collective(comm, &failed);
  if (failed) return TILERAP_HYPRE_SETUP_OPTIONS;
  s->num_levels = L;
  s->A = calloc((size_t)L, sizeof *s->A);
  s->P = calloc((size_t)L, sizeof *s->P);
  s->lv = calloc((size_t)L, sizeof *s->lv);
  failed = !s->A || !s->P || !s->lv || pattern_save(&s->fine, A) || tr_hypre_select_device(comm, tr_hypre_on_device(A));
  count_collective(comm, &failed);
  if (failed) return TILERAP_HYPRE_SETUP_LEVELS;
  tilerap_options opt;
  tilerap_options_default(&opt);
  if (tr_hypre_on_device(A)) opt.engine = TILERAP_ENGINE_CUDA;
  for (int l = 0; l < L; l++) { s->A[l] = Aa[l]; s->P[l] = l < L - 1 ? Pa[l] : NULL; }
  for (int l = 0; l < L - 1; l++) {
    const char *why = NULL;
    failed = tr_hypre_on_device(Pa[l]) != tr_hypre_on_device(A) || tr_hypre_on_device(Aa[l + 1]) != tr_hypre_on_device(A);
    count_collective(comm, &failed);
    if (failed) return TILERAP_HYPRE_SETUP_DEVICE;
    if (tr_level_recipe_record(Aa[l], Pa[l], Aa[l + 1], &opt, &s->lv[l], &why)) {
      tr_hypre_note("re-setup: level %d not kept: %s", l, why ? why : "?");
      return TILERAP_HYPRE_SETUP_LEVELS;
    }
  }
  s->kept = 1;
  return -1;
}

/* The solver still holds the levels recorded (A: the new fine matrix, which
 * may be another object than the recorded one, e.g. PETSc's PCHYPRE makes a
 * new hypre matrix when its own changed; its pattern is checked apart). */
static int hierarchy_intact(const tr_amg_state *s, hypre_ParAMGData *amg, hypre_ParCSRMatrix *A)
{
  if (hypre_ParAMGDataNumLevels(amg) != s->num_levels || !hypre_ParAMGDataAArray(amg)) return 0;
  for (int l = 1; l < s->num_levels; l++)
    if (hypre_ParAMGDataAArray(amg)[l] != s->A[l] || hypre_ParAMGDataPArray(amg)[l - 1] != s->P[l - 1] ||
        !tr_level_recipe_matches(s->lv[l - 1], l == 1 ? A : s->A[l - 1], s->A[l]))
      return 0;
  return 1;
}

/* The kept hierarchy for new values of A (collective); 0, or 1. */
static int resetup(tr_amg_state *s, hypre_ParAMGData *amg, hypre_ParCSRMatrix *A, hypre_ParVector *f,
                   hypre_ParVector *u)
{
  hypre_ParCSRMatrix **Aa = hypre_ParAMGDataAArray(amg);
  Aa[0] = A;
  s->A[0] = A;
  hypre_ParAMGDataFArray(amg)[0] = f;
  hypre_ParAMGDataUArray(amg)[0] = u;
  int failed = 0;
  for (int l = 0; l < s->num_levels - 1; l++) {
    const int err = tr_level_recipe_run(s->lv[l], Aa[l], Aa[l + 1]);
    if (err) tr_hypre_note("re-setup: level %d: %s", l, tilerap_last_error());
    failed |= err != 0;
  }
  count_collective(hypre_ParCSRMatrixComm(A), &failed);
  if (failed) return 1;
  /* Gaussian elimination was set up on the coarsest level (ranks without
   * rows have no dense matrix but take part) */
  int ge = gauss_elim(hypre_ParAMGDataGridRelaxType(amg)[3]) && hypre_ParAMGDataAMat(amg) != NULL;
  count_collective(hypre_ParCSRMatrixComm(A), &ge);
  refresh_smoothers(amg, s, ge);
  return 0;
}

HYPRE_Int hypre_BoomerAMGSetup(void *amg_vdata, hypre_ParCSRMatrix *A, hypre_ParVector *f, hypre_ParVector *u)
{
  hypre_ParAMGData *amg = (hypre_ParAMGData *)amg_vdata;
  tr_amg_state *s = amg ? find_state(amg, 0) : NULL;
  const int setting = reuse_setting(s);
  if (!amg || !A || setting == 0 || !tr_hypre_enabled()) {
    if (s) drop_hierarchy(s);
    return original_setup()(amg_vdata, A, f, u);
  }
  if (!s && !(s = find_state(amg, 1))) return original_setup()(amg_vdata, A, f, u);
  const double t0 = tr_hypre_wtime();
  /* the decision is collective: the pattern may differ on one rank only */
  int reason = !s->kept ? (s->why_not >= 0 ? s->why_not : TILERAP_HYPRE_SETUP_NEW)
               : (setting > 0 && s->reuses >= setting) ? TILERAP_HYPRE_SETUP_PERIOD
               : !settings_same(s, amg) || unsupported(amg, A) >= 0 ? TILERAP_HYPRE_SETUP_OPTIONS
               : !pattern_same(&s->fine, A) ? TILERAP_HYPRE_SETUP_PATTERN
               : !hierarchy_intact(s, amg, A) ? TILERAP_HYPRE_SETUP_NEW
               : -1;
  int np = 1;
  MPI_Comm comm = hypre_ParCSRMatrixComm(A);
  MPI_Comm_size(comm, &np);
  if (np > 1) {
    int r = reason, any = 0;
    MPI_Allreduce(&r, &any, 1, MPI_INT, MPI_MAX, comm);
    reason = any;
  }
  if (reason < 0) {
    if (!resetup(s, amg, A, f, u)) {
      s->reuses++;
      tr_hypre_count_setup(-1, tr_hypre_wtime() - t0);
      if (tr_hypre_verbose() >= 2)
        fprintf(stderr, "tilerap_hypre: BoomerAMG solver %p: re-setup %d from the kept hierarchy, %d levels, %.4f s\n",
                amg_vdata, s->reuses, s->num_levels, tr_hypre_wtime() - t0);
      return hypre_error_flag;
    }
    reason = TILERAP_HYPRE_SETUP_LEVELS;
  }
  /* full setup: hypre's own, then the levels recorded for the next one */
  drop_hierarchy(s);
  s->reuses = 0;
  const int weights_bad = save_weights(s, amg, 0);
  /* hypre's error flag accumulates (a solve that did not converge sets
   * it): only an error of this setup keeps the levels from being kept */
  const HYPRE_Int before = hypre_error_flag;
  hypre_error_flag = 0;
  const HYPRE_Int ierr = original_setup()(amg_vdata, A, f, u);
  int why = ierr ? TILERAP_HYPRE_SETUP_LEVELS : unsupported(amg, A);
  hypre_error_flag |= before;
  if (why < 0 && weights_bad) why = TILERAP_HYPRE_SETUP_OPTIONS;
  if (np > 1) {
    int any = why;
    MPI_Allreduce(&why, &any, 1, MPI_INT, MPI_MAX, comm);
    why = any;
  }
  if (why < 0) {
    save_weights(s, amg, 1);
    settings_get(amg, &s->settings);
    why = record(s, amg, A);
  }
  if (why >= 0) drop_hierarchy(s);
  if (why >= 0 && why != s->why_not && tr_hypre_verbose())
    tr_hypre_note("BoomerAMG setup of solver %p: the next setups are full ones too (%s)", amg_vdata,
                  why == TILERAP_HYPRE_SETUP_OPTIONS ? "a setting whose setup data a re-setup does not refresh"
                  : why == TILERAP_HYPRE_SETUP_DEVICE ? "device memory without the CUDA engine"
                                                      : "a level could not be kept");
  s->why_not = why;
  tr_hypre_count_setup(reason, tr_hypre_wtime() - t0);
  if (tr_hypre_verbose() >= 2)
    fprintf(stderr, "tilerap_hypre: BoomerAMG solver %p: full setup (reason %d), %s, %.4f s\n", amg_vdata, reason,
            why < 0 ? "levels kept for re-setups" : "levels not kept", tr_hypre_wtime() - t0);
  return hypre_error_flag;
}

HYPRE_Int hypre_BoomerAMGDestroy(void *data)
{
  static tr_amg_destroy_fn fn;
  if (!fn) fn = (tr_amg_destroy_fn)tr_hypre_next_symbol("hypre_BoomerAMGDestroy");
  if (data) forget_state(data);
  return fn(data);
}
