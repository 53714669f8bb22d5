/* MATSEQTILE: a MATSEQAIJ that keeps a tilerap tile copy of itself for the
 * matrix products.  Built the way PETSc's device AIJ types are: a SeqAIJ is
 * created and converted in place (type name changed, a few ops replaced,
 * functions composed), so every AIJ operation keeps working on the AIJ
 * arrays, which stay the reference copy.
 *
 * The tile copy is brought in sync lazily, when a product needs it:
 * nothing when the AIJ object state is unchanged, a values-only refresh
 * when the nonzero pattern (nonzerostate) is unchanged, a rebuild
 * otherwise.  Matrices produced by our products get their tile copy from
 * the plan and are marked in sync, so the next level starts from it. */
#include "mat_seqtile_impl.h"
#include "tile_mpi_device.h"
#include <limits.h>

TileAIJOps tile_aij_ops;

/* ---------------------------------------------------------------- errors */
PetscErrorCode TileCheckError_Private(MPI_Comm comm, int err, const char *what)
{
  PetscErrorCode perr;

  PetscFunctionBegin;
  if (err == TILERAP_SUCCESS) PetscFunctionReturn(PETSC_SUCCESS);
  switch (err) {
  case TILERAP_ERR_NOMEM:
  case TILERAP_ERR_DEVICE_NOMEM: perr = PETSC_ERR_MEM; break;
  case TILERAP_ERR_SIZE: perr = PETSC_ERR_ARG_SIZ; break;
  case TILERAP_ERR_ENGINE: perr = PETSC_ERR_SUP; break;
  case TILERAP_ERR_NULL: perr = PETSC_ERR_ARG_NULL; break;
  case TILERAP_ERR_RANGE:
  case TILERAP_ERR_OVERFLOW: perr = PETSC_ERR_ARG_OUTOFRANGE; break;
  default: perr = PETSC_ERR_LIB;
  }
  SETERRQ(comm, perr, "tilerap: %s: %s [%s]", tilerap_error_string(err), tilerap_last_error(), what);
}

PetscErrorCode TileIsSeqTile(Mat X, PetscBool *flg)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectTypeCompare((PetscObject)X, MATSEQAIJTILE, flg));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- tile copy sync */
PetscErrorCode TileCacheReset(TileCache *c)
{
  PetscFunctionBegin;
  tilerap_tile_destroy(&c->T);
  tilerap_tile_destroy(&c->D);
  c->Dvalid = PETSC_FALSE;
  c->gen++;
  c->id = 0;
  c->state = 0;
  c->nzstate = 0;
  c->state_plus_one = PETSC_FALSE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileCacheMarkInSync(Mat X, TileCache *c, PetscBool by_product_numeric)
{
  PetscFunctionBegin;
  PetscCall(PetscObjectStateGet((PetscObject)X, &c->state));
  PetscCall(PetscObjectGetId((PetscObject)X, &c->id));
  c->nzstate = X->nonzerostate;
  c->state_plus_one = by_product_numeric;
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Builds T from X's CSR (host arrays): a host tile matrix, or with device
 * set a device one built on the device (the CUDA engine's operands). */
static PetscErrorCode TileBuildFromAIJ(Mat X, const PetscInt *ai, const PetscInt *aj, const PetscScalar *aa, PetscBool device, tilerap_tile_matrix **T)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)X);
  PetscInt m, n;

  PetscFunctionBegin;
  PetscCall(MatGetSize(X, &m, &n));
  PetscCheck(m <= PETSC_MAX_INT && m < INT32_MAX && n < INT32_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE, "tile matrices index rows/columns with 32 bits");
#if defined(PETSC_USE_64BIT_INDICES)
  {
    int32_t *cols;
    PetscInt nz = ai[m];
    PetscCall(PetscMalloc1(nz, &cols));
    for (PetscInt k = 0; k < nz; k++) cols[k] = (int32_t)aj[k];
    PetscErrorCode ierr = device ? TileCheckError_Private(comm, tilerap_tile_from_csr_device((int32_t)m, (int32_t)n, (const int64_t *)ai, cols, (const double *)aa, TILERAP_MEM_HOST, T), "tilerap_tile_from_csr_device")
                                 : TileCheckError_Private(comm, tilerap_tile_from_csr((int32_t)m, (int32_t)n, (const int64_t *)ai, cols, (const double *)aa, T), "tilerap_tile_from_csr");
    PetscCall(PetscFree(cols));
    PetscCall(ierr);
  }
#else
  if (device) TileCall(comm, tilerap_tile_from_csr_device_i32((int32_t)m, (int32_t)n, (const int32_t *)ai, (const int32_t *)aj, (const double *)aa, TILERAP_MEM_HOST, T));
  else TileCall(comm, tilerap_tile_from_csr_i32((int32_t)m, (int32_t)n, (const int32_t *)ai, (const int32_t *)aj, (const double *)aa, T));
#endif
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Whether c reflects X's current values (its object, pattern and state). */
static PetscBool TileCacheUpToDate(Mat X, TileCache *c, PetscObjectId id, PetscObjectState st)
{
  return (PetscBool)(c->id == id && c->nzstate == X->nonzerostate && (st == c->state || (c->state_plus_one && st == c->state + 1)));
}

/* Shared start of the cache syncs: X must be assembled real AIJ; its state,
 * id and whether c reflects them. */
static PetscErrorCode TileCacheBegin(Mat X, TileCache *c, PetscObjectState *st, PetscObjectId *id, PetscBool *uptodate)
{
  MPI_Comm comm = PetscObjectComm((PetscObject)X);

  PetscFunctionBegin;
  PetscCheck(TILE_SCALAR_OK, comm, PETSC_ERR_SUP, "tile matrices need real double PetscScalar");
  PetscCheck(X->assembled, comm, PETSC_ERR_ARG_WRONGSTATE, "Matrix must be assembled before its tile form is used");
  PetscCall(PetscObjectStateGet((PetscObject)X, st));
  PetscCall(PetscObjectGetId((PetscObject)X, id));
  *uptodate = TileCacheUpToDate(X, c, *id, *st);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* X's host CSR arrays for a conversion; starts the TileRAPConvert event. */
static PetscErrorCode TileCacheHostCSR(Mat X, const PetscInt **ai, const PetscInt **aj, PetscScalar **aa)
{
  PetscMemType mtype;

  PetscFunctionBegin;
  PetscCall(MatSeqAIJGetCSRAndMemType(X, ai, aj, aa, &mtype));
  PetscCheck(PetscMemTypeHost(mtype), PetscObjectComm((PetscObject)X), PETSC_ERR_SUP, "AIJ arrays must live in host memory");
  PetscCall(PetscLogEventBegin(TILE_Convert, X, 0, 0, 0));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* c now reflects X at state st. */
static void TileCacheCurrent(Mat X, TileCache *c, PetscObjectState st, PetscObjectId id)
{
  c->state          = st;
  c->id             = id;
  c->nzstate        = X->nonzerostate;
  c->state_plus_one = PETSC_FALSE;
}

PetscErrorCode TileCacheSync(Mat X, TileCache *c)
{
  MPI_Comm          comm = PetscObjectComm((PetscObject)X);
  PetscObjectState  st;
  PetscObjectId     id;
  const PetscInt   *ai, *aj;
  PetscScalar      *aa;
  PetscBool         uptodate, same_nz;

  PetscFunctionBegin;
  PetscCall(TileCacheBegin(X, c, &st, &id, &uptodate));
  same_nz = (PetscBool)(c->id == id && c->nzstate == X->nonzerostate);
  if (c->T && uptodate) {
    TileCacheCurrent(X, c, st, id);
    c->stats.reuses++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(TileCacheHostCSR(X, &ai, &aj, &aa));
  if (c->T && same_nz) {
#if defined(PETSC_USE_64BIT_INDICES)
    TileCall(comm, tilerap_tile_update_values_from_csr(c->T, (const int64_t *)ai, (const double *)aa));
#else
    TileCall(comm, tilerap_tile_update_values_from_csr_i32(c->T, (const int32_t *)ai, (const double *)aa));
#endif
    c->stats.value_refreshes++;
  } else {
    tilerap_tile_destroy(&c->T);
    PetscCall(TileBuildFromAIJ(X, ai, aj, aa, PETSC_FALSE, &c->T));
    /* a device mirror built on the device from this very pattern keeps its
     * generation (the structures agree): plans made on it stay valid */
    if (!(same_nz && c->D && c->Dgen == c->gen)) c->gen++;
    c->stats.rebuilds++;
  }
  if (!uptodate) c->Dvalid = PETSC_FALSE; /* host values changed: the device mirror is stale */
  PetscCall(PetscLogEventEnd(TILE_Convert, X, 0, 0, 0));
  TileCacheCurrent(X, c, st, id);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Device mirror for the CUDA engine, converted on the device straight from
 * X's AIJ arrays (no host tile copy, so TileRAPConvert covers the CSR
 * upload and the conversion): reused when in sync, values refreshed in
 * place when only values changed, rebuilt when the pattern changed. */
PetscErrorCode TileCacheSyncDevice(Mat X, TileCache *c)
{
  MPI_Comm          comm = PetscObjectComm((PetscObject)X);
  PetscObjectState  st;
  PetscObjectId     id;
  const PetscInt   *ai, *aj;
  PetscScalar      *aa;
  PetscBool         uptodate, same_struct;

  PetscFunctionBegin;
  PetscCall(TileCacheBegin(X, c, &st, &id, &uptodate));
  same_struct = (PetscBool)(c->D && c->Dgen == c->gen && c->id == id && c->nzstate == X->nonzerostate);
  if (same_struct && c->Dvalid && uptodate) {
    TileCacheCurrent(X, c, st, id);
    c->stats.reuses++;
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(TileCacheHostCSR(X, &ai, &aj, &aa));
  if (same_struct) {
    TileCall(comm, tilerap_tile_update_values_from_csr_device(c->D, (const double *)aa, TILERAP_MEM_HOST));
    c->stats.value_refreshes++;
  } else {
    tilerap_tile_destroy(&c->D);
    PetscCall(TileBuildFromAIJ(X, ai, aj, aa, PETSC_TRUE, &c->D));
    if (!(c->T && c->id == id && c->nzstate == X->nonzerostate)) c->gen++; /* else: T's pattern, same generation */
    c->Dgen = c->gen;
    c->stats.rebuilds++;
  }
  PetscCall(PetscLogEventEnd(TILE_Convert, X, 0, 0, 0));
  if (!uptodate) tilerap_tile_destroy(&c->T); /* a host copy is stale: rebuilt on demand */
  c->Dvalid         = PETSC_TRUE;
  TileCacheCurrent(X, c, st, id);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- options */

static PetscErrorCode TileCheckEngine(MPI_Comm comm, tilerap_engine e)
{
  PetscFunctionBegin;
  PetscCheck(e != TILERAP_ENGINE_CUDA || tilerap_engine_available(e), comm, PETSC_ERR_SUP,
             "-mat_tile_engine cuda: tilerap was built without CUDA or no GPU is visible");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Reads the -mat_tile_ options into v (values are checked after the
 * options block so that a bad value leaves nothing behind). */
PetscErrorCode TileOptionsItems(TileOptionItems PetscOptionsObject, const tilerap_options *opt, TileOptionValues *v)
{
  PetscFunctionBegin;
  PetscCall(PetscOptionsString("-mat_tile_engine", "tilerap engine of the matrix products: auto, cpu, cuda", "MatSeqTile", tilerap_engine_name(opt->engine), v->engine, sizeof v->engine, &v->engine_set));
  v->thr = opt->dense_threshold;
  PetscCall(PetscOptionsInt("-mat_tile_dense_threshold", "C tiles with more entries use the dense accumulator (0..256)", "MatSeqTile", v->thr, &v->thr, &v->thr_set));
  v->tc = opt->tc_threshold;
  PetscCall(PetscOptionsInt("-mat_tile_tc_threshold", "CUDA engine: tile pairs with at least this many multiply-adds (0..4096) use tensor cores; negative: off", "MatSeqTile", v->tc, &v->tc, &v->tc_set));
  PetscCall(PetscOptionsString("-mat_tile_precision", "operands of tensor-core tile products: fp64, tf32, bf16, fp16", "MatSeqTile", tilerap_precision_name(opt->precision), v->precision, sizeof v->precision, &v->precision_set));
  PetscCall(PetscOptionsString("-mat_tile_cpu_kernel", "CPU engine's numeric kernel: auto, tiles, recorded (records every product on a re-run: faster re-runs, 4 bytes per multiply-add)", "MatSeqTile", tilerap_cpu_kernel_name(opt->cpu_kernel), v->cpu_kernel, sizeof v->cpu_kernel, &v->cpu_kernel_set));
  v->device = -1;
  PetscCall(PetscOptionsInt("-mat_tile_device", "CUDA device of this process (default for mpitile: node-local rank mod device count)", "MatSeqTile", v->device, &v->device, &v->device_set));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Process-wide device state: the device -mat_tile_device asked for, and the
 * one MATMPITILE settled on (a process never changes device under its
 * device matrices and plans). */
static int tile_device_requested = -1, tile_device_chosen = -1;

PetscErrorCode TileOptionsApply(MPI_Comm comm, tilerap_options *opt, const TileOptionValues *v)
{
  PetscFunctionBegin;
  if (v->engine_set) {
    tilerap_engine e;
    PetscCheck(tilerap_engine_parse(v->engine, &e) == TILERAP_SUCCESS, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_engine %s: expected auto, cpu or cuda", v->engine);
    PetscCall(TileCheckEngine(comm, e));
    opt->engine = e;
  }
  if (v->thr_set) {
    PetscCheck(v->thr >= 0 && v->thr <= TILERAP_TILE * TILERAP_TILE, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_dense_threshold %" PetscInt_FMT ": expected 0..256", v->thr);
    opt->dense_threshold = (int)v->thr;
  }
  if (v->tc_set) {
    PetscCheck(v->tc <= TILERAP_TILE * TILERAP_TILE * TILERAP_TILE, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_tc_threshold %" PetscInt_FMT ": expected at most 4096 (negative: off)", v->tc);
    opt->tc_threshold = v->tc < 0 ? -1 : (int)v->tc;
  }
  if (v->precision_set) {
    tilerap_precision p;
    PetscCheck(tilerap_precision_parse(v->precision, &p) == TILERAP_SUCCESS, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_precision %s: expected fp64, tf32, bf16 or fp16", v->precision);
    opt->precision = p;
  }
  if (v->cpu_kernel_set) {
    tilerap_cpu_kernel k;
    PetscCheck(tilerap_cpu_kernel_parse(v->cpu_kernel, &k) == TILERAP_SUCCESS, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_cpu_kernel %s: expected auto, tiles or recorded", v->cpu_kernel);
    opt->cpu_kernel = k;
  }
  if (v->device_set) {
    PetscCheck(v->device >= 0 && v->device <= INT_MAX, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_device %" PetscInt_FMT ": expected a device number >= 0", v->device);
    int err = tilerap_set_device((int)v->device);
    PetscCheck(!err, comm, err == TILERAP_ERR_ENGINE ? PETSC_ERR_SUP : PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_device %" PetscInt_FMT ": %s", v->device, tilerap_last_error());
    tile_device_requested = (int)v->device;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Creates the CUDA context of the current device once per process when
 * the CUDA engine is active (cudaSetDevice initialises it), at matrix
 * creation as PETSc's own device types do at initialisation, so the
 * ~0.1 s it takes is not charged to the first product. */
static PetscErrorCode TileDeviceWarmUp(const tilerap_options *opt)
{
  static PetscBool warm = PETSC_FALSE;
  int              dev;

  PetscFunctionBegin;
  if (warm || tilerap_engine_resolve(opt->engine) != TILERAP_ENGINE_CUDA) PetscFunctionReturn(PETSC_SUCCESS);
  if (!tilerap_get_device(&dev) && !tilerap_set_device(dev)) warm = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileDeviceSelect(MPI_Comm comm, const tilerap_options *opt)
{
  int active, err, before;

  PetscFunctionBegin;
  /* -mat_tile_engine cpu is the same on every rank: no collective needed */
  if (opt->engine == TILERAP_ENGINE_CPU) PetscFunctionReturn(PETSC_SUCCESS);
  active = tilerap_engine_resolve(opt->engine) == TILERAP_ENGINE_CUDA;
  before = tile_device_chosen;
  err    = tr_mpi_choose_device(comm, active, tile_device_requested, &tile_device_chosen);
  PetscCheck(!err, PETSC_COMM_SELF, PETSC_ERR_LIB, "tilerap: cannot make the CUDA device of this rank current: %s", tilerap_last_error());
  if (tile_device_chosen != before)
    PetscCall(PetscInfo(NULL, "tilerap: CUDA device %d of %d for this rank (%s)\n", tile_device_chosen, tilerap_device_count(), tile_device_requested >= 0 ? "-mat_tile_device" : "node-local rank mod device count"));
  if (active) PetscCall(TileDeviceWarmUp(opt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Options when a tile matrix is created (so -help lists them in any program). */
PetscErrorCode TileOptionsFromDatabase(Mat B, tilerap_options *opt)
{
  TileOptionValues v;

  PetscFunctionBegin;
  PetscOptionsBegin(PetscObjectComm((PetscObject)B), ((PetscObject)B)->prefix, "TileRAP matrix (seqtile) options", "Mat");
  PetscCall(TileOptionsItems(PetscOptionsObject, opt, &v));
  PetscOptionsEnd();
  PetscCall(TileOptionsApply(PetscObjectComm((PetscObject)B), opt, &v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The -mat_tile_ options as a section of A's MatSetFromOptions. */
PetscErrorCode TileOptionsSection(Mat A, TileOptionItems PetscOptionsObject, const char *title, tilerap_options *opt)
{
  TileOptionValues v;

  PetscFunctionBegin;
  PetscOptionsHeadBegin(PetscOptionsObject, title);
  PetscCall(TileOptionsItems(PetscOptionsObject, opt, &v));
  PetscOptionsHeadEnd();
  PetscCall(TileOptionsApply(PetscObjectComm((PetscObject)A), opt, &v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatSetFromOptions_SeqTile(Mat A, TileOptionItems PetscOptionsObject)
{
  Mat_SeqTile *t = (Mat_SeqTile *)A->spptr;

  PetscFunctionBegin;
  if (tile_aij_ops.setfromoptions) PetscCall(tile_aij_ops.setfromoptions(A, PetscOptionsObject));
  PetscCall(TileOptionsSection(A, PetscOptionsObject, "TileRAP matrix (seqtile) options", &t->opt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- view */
static PetscErrorCode MatView_SeqTile(Mat A, PetscViewer viewer)
{
  PetscBool         iascii;
  PetscViewerFormat format;

  PetscFunctionBegin;
  PetscCall(tile_aij_ops.view(A, viewer));
  PetscCall(PetscObjectTypeCompare((PetscObject)viewer, PETSCVIEWERASCII, &iascii));
  if (!iascii) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(PetscViewerGetFormat(viewer, &format));
  if (format != PETSC_VIEWER_ASCII_INFO && format != PETSC_VIEWER_ASCII_INFO_DETAIL) PetscFunctionReturn(PETSC_SUCCESS);
  if (!A->assembled || !TILE_SCALAR_OK) {
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap: tile form not built (matrix not assembled or not real double)\n"));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  {
    Mat_SeqTile               *t = (Mat_SeqTile *)A->spptr;
    const tilerap_tile_matrix *T;
    tilerap_engine             e = tilerap_engine_resolve(t->opt.engine);

    PetscCall(TileCacheSync(A, &t->cache));
    T = t->cache.T;
    PetscCall(PetscViewerASCIIPrintf(viewer, "tilerap: %" PetscInt64_FMT " tiles of 16x16 (%d x %d tile grid), %" PetscInt64_FMT " entries, %.2f mean entries per tile, engine %s (requested %s), dense threshold %d, tensor-core threshold %d (%s), CPU kernel %s\n",
                                     (PetscInt64)T->num_tiles, T->tile_rows, T->tile_cols, (PetscInt64)T->nnz, T->num_tiles ? (double)T->nnz / (double)T->num_tiles : 0.0,
                                     tilerap_engine_name(e), tilerap_engine_name(t->opt.engine), t->opt.dense_threshold, t->opt.tc_threshold, tilerap_precision_name(t->opt.precision), tilerap_cpu_kernel_name(t->opt.cpu_kernel)));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- composed functions */
/* AIJ implementations composed on SeqAIJ objects under names that carry
 * the type name "seqaij"; the same functions are composed under the
 * "seqaijtile" spelling so conversions and products with other types keep
 * their AIJ implementation. */
static const char *const tile_alias_pairs[][2] = {
  {"MatConvert_seqaij_seqdense_C", "MatConvert_seqaijtile_seqdense_C"},
  {"MatConvert_seqaij_seqbaij_C", "MatConvert_seqaijtile_seqbaij_C"},
  {"MatConvert_seqaij_seqsbaij_C", "MatConvert_seqaijtile_seqsbaij_C"},
  {"MatConvert_seqaij_seqsell_C", "MatConvert_seqaijtile_seqsell_C"},
  {"MatConvert_seqaij_is_C", "MatConvert_seqaijtile_is_C"},
  {"MatConvert_seqaij_hypre_C", "MatConvert_seqaijtile_hypre_C"},
  {"MatConvert_seqaij_seqaijperm_C", "MatConvert_seqaijtile_seqaijperm_C"},
  {"MatConvert_seqaij_seqaijsell_C", "MatConvert_seqaijtile_seqaijsell_C"},
  {"MatConvert_seqaij_seqaijcrl_C", "MatConvert_seqaijtile_seqaijcrl_C"},
  {"MatProductSetFromOptions_seqaij_seqdense_C", "MatProductSetFromOptions_seqaijtile_seqdense_C"},
  {"MatProductSetFromOptions_seqdense_seqaij_C", "MatProductSetFromOptions_seqdense_seqaijtile_C"},
  {"MatProductSetFromOptions_seqaij_seqmaij_C", "MatProductSetFromOptions_seqaijtile_seqmaij_C"},
  {"MatProductSetFromOptions_seqaij_hypre_C", "MatProductSetFromOptions_seqaijtile_hypre_C"},
};
#define TILE_NALIAS (sizeof(tile_alias_pairs) / sizeof(tile_alias_pairs[0]))

static PetscErrorCode MatConvert_SeqTile_SeqAIJ(Mat, MatType, MatReuse, Mat *);

/* Our own composed functions (removed again when converting back). */
static const char *const tile_own_names[] = {
  "MatConvert_seqaijtile_seqaij_C",
  "MatConvert_seqaij_seqtile_C",
  "MatConvert_seqaij_seqaijtile_C",
  "MatProductSetFromOptions_seqaijtile_seqaij_C",
  "MatProductSetFromOptions_seqaij_seqaijtile_C",
  "MatProductSetFromOptions_anytype_C",
};
#define TILE_NOWN (sizeof(tile_own_names) / sizeof(tile_own_names[0]))

/* Every other product with a tile operand: PETSc's dispatch
 * (MatProductSetFromOptions_Private) has queried
 * MatProductSetFromOptions_<A>_<B>[_<C>]_C under the name "seqaijtile", which
 * nothing outside this library composes (e.g. MatProductSetFromOptions_seqaij_seqmaij_C
 * lives on MAIJ objects, _is_seqaij_C on MATIS ones), then the anytype
 * function, which is this one.  Here the dispatch continues the way it would
 * for SeqAIJ operands:
 *  - all operands seqaij or seqaijtile (triple products with mixed types):
 *    SeqAIJ would have matched its own setfromoptions on every operand;
 *  - else the implementation composed under the seqaij spelling of the name,
 *    queried on A, B, C in order;
 *  - else the other operands' anytype functions, in order.
 * Without a symbolic phase set here PETSc goes on with its dense-column and
 * "Unsafe" triple-product fallbacks, as for SeqAIJ. */
static PetscErrorCode MatProductSetFromOptions_SeqTile_Anytype(Mat C)
{
  Mat_Product *product = C->product;
  Mat          X[3];
  PetscInt     nx;
  PetscBool    allaij = PETSC_TRUE;
  char         name[256];
  PetscErrorCode (*f)(Mat) = NULL;

  PetscFunctionBegin;
  MatCheckProduct(C, 1);
  X[0] = product->A;
  X[1] = product->B;
  X[2] = product->C;
  nx   = product->type == MATPRODUCT_ABC ? 3 : 2;
  for (PetscInt k = 0; k < nx; k++) {
    PetscBool istile, isaij;
    PetscCheck(X[k], PetscObjectComm((PetscObject)C), PETSC_ERR_PLIB, "Missing operand %" PetscInt_FMT " of the product", k);
    PetscCall(TileIsSeqTile(X[k], &istile));
    PetscCall(PetscObjectTypeCompare((PetscObject)X[k], MATSEQAIJ, &isaij));
    if (!istile && !isaij) allaij = PETSC_FALSE;
  }
  if (allaij) {
    PetscCall(MatProductSetFromOptions_SeqTile(C));
    PetscFunctionReturn(PETSC_SUCCESS);
  }
  PetscCall(PetscStrncpy(name, "MatProductSetFromOptions", sizeof name));
  for (PetscInt k = 0; k < nx; k++) {
    PetscBool istile;
    PetscCall(TileIsSeqTile(X[k], &istile));
    PetscCall(PetscStrlcat(name, "_", sizeof name));
    PetscCall(PetscStrlcat(name, istile ? MATSEQAIJ : ((PetscObject)X[k])->type_name, sizeof name));
  }
  PetscCall(PetscStrlcat(name, "_C", sizeof name));
  for (PetscInt k = 0; k < nx && !f; k++) PetscCall(PetscObjectQueryFunction((PetscObject)X[k], name, &f));
  PetscCall(PetscInfo(C, "tilerap: %s with a tile operand: %s %s\n", MatProductTypes[product->type], name, f ? "found" : "not found"));
  if (f) PetscCall((*f)(C));
  for (PetscInt k = 0; k < nx && !C->ops->productsymbolic; k++) {
    f = NULL;
    PetscCall(PetscObjectQueryFunction((PetscObject)X[k], "MatProductSetFromOptions_anytype_C", &f));
    if (f && f != MatProductSetFromOptions_SeqTile_Anytype) {
      PetscCall((*f)(C));
      break;
    }
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The aliased implementations, looked up once on a SeqAIJ (B itself, still
 * plain) and on a SeqDense (products with dense matrices are composed on the
 * dense side).  Function addresses stay valid for the life of the process. */
static void (*tile_alias_fn[TILE_NALIAS])(void);
static PetscBool tile_alias_looked_up = PETSC_FALSE;

static PetscErrorCode TileAliasLookup(Mat aij)
{
  Mat dense;

  PetscFunctionBegin;
  if (tile_alias_looked_up) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCall(MatCreate(PETSC_COMM_SELF, &dense));
  PetscCall(MatSetSizes(dense, 1, 1, 1, 1));
  PetscCall(MatSetType(dense, MATSEQDENSE));
  for (size_t k = 0; k < TILE_NALIAS; k++) {
    void (*f)(void) = NULL;
    PetscCall(PetscObjectQueryFunction((PetscObject)aij, tile_alias_pairs[k][0], &f));
    if (!f) PetscCall(PetscObjectQueryFunction((PetscObject)dense, tile_alias_pairs[k][0], &f));
    tile_alias_fn[k] = f;
  }
  PetscCall(MatDestroy(&dense));
  tile_alias_looked_up = PETSC_TRUE;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileCompose(Mat B)
{
  PetscObject o = (PetscObject)B;

  PetscFunctionBegin;
  PetscCall(TileAliasLookup(B));
  for (size_t k = 0; k < TILE_NALIAS; k++)
    if (tile_alias_fn[k]) PetscCall(PetscObjectComposeFunction(o, tile_alias_pairs[k][1], tile_alias_fn[k]));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[0], MatConvert_SeqTile_SeqAIJ));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[1], MatConvert_SeqAIJ_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[2], MatConvert_SeqAIJ_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[3], MatProductSetFromOptions_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[4], MatProductSetFromOptions_SeqTile));
  PetscCall(PetscObjectComposeFunction(o, tile_own_names[5], MatProductSetFromOptions_SeqTile_Anytype));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Removes the tile data and our composed functions; ops back to SeqAIJ. */
static PetscErrorCode TileStrip(Mat B)
{
  Mat_SeqTile *t = (Mat_SeqTile *)B->spptr;

  PetscFunctionBegin;
  if (t) {
    PetscCall(TileCacheReset(&t->cache));
    PetscCall(PetscFree(B->spptr));
  }
  for (size_t k = 0; k < TILE_NALIAS; k++) PetscCall(PetscObjectComposeFunction((PetscObject)B, tile_alias_pairs[k][1], NULL));
  for (size_t k = 0; k < TILE_NOWN; k++) PetscCall(PetscObjectComposeFunction((PetscObject)B, tile_own_names[k], NULL));
  B->ops->destroy               = tile_aij_ops.destroy;
  B->ops->view                  = tile_aij_ops.view;
  B->ops->setfromoptions        = tile_aij_ops.setfromoptions;
  B->ops->productsetfromoptions = tile_aij_ops.productsetfromoptions;
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatDestroy_SeqTile(Mat A)
{
  PetscFunctionBegin;
  PetscCall(TileStrip(A));
  PetscCall((*A->ops->destroy)(A)); /* SeqAIJ's, restored by TileStrip */
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* ---------------------------------------------------------------- conversions */
/* MatConvert's target: with MAT_REUSE_MATRIX, A's values copied into *newmat
 * and nothing else to do (*copied); else *newmat is A's copy or A itself. */
PetscErrorCode TileConvertTarget(Mat A, MatReuse reuse, Mat *newmat, PetscBool *copied)
{
  PetscFunctionBegin;
  *copied = (PetscBool)(reuse == MAT_REUSE_MATRIX);
  if (*copied) PetscCall(MatCopy(A, *newmat, SAME_NONZERO_PATTERN));
  else if (reuse == MAT_INITIAL_MATRIX) PetscCall(MatDuplicate(A, MAT_COPY_VALUES, newmat));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatConvert_SeqAIJ_SeqTile(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat          B;
  Mat_SeqTile    *t;
  PetscBool       istile, copied;
  tilerap_options opt;

  PetscFunctionBegin;
  PetscCall(TileConvertTarget(A, reuse, newmat, &copied));
  if (copied) PetscFunctionReturn(PETSC_SUCCESS);
  B = *newmat;
  PetscCall(TileIsSeqTile(B, &istile));
  if (istile) PetscFunctionReturn(PETSC_SUCCESS);
  PetscCheck(!B->spptr, PetscObjectComm((PetscObject)B), PETSC_ERR_SUP, "cannot convert a %s that carries implementation data to %s", ((PetscObject)B)->type_name, MATSEQTILE);
  if (!tile_aij_ops.saved) { /* B is a plain SeqAIJ here: remember the implementations we replace */
    tile_aij_ops.destroy               = B->ops->destroy;
    tile_aij_ops.view                  = B->ops->view;
    tile_aij_ops.setfromoptions        = B->ops->setfromoptions;
    tile_aij_ops.productsetfromoptions = B->ops->productsetfromoptions;
    tile_aij_ops.saved                 = PETSC_TRUE;
  }
  tilerap_options_default(&opt);
  PetscCall(TileOptionsFromDatabase(B, &opt));
  { /* in parallel runs MATMPITILE picks the device first (TileDeviceSelect) */
    PetscMPIInt size;
    PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
    if (size == 1) PetscCall(TileDeviceWarmUp(&opt));
  }
  PetscCall(PetscNew(&t));
  t->opt = opt;
  B->spptr                      = t;
  B->ops->destroy               = MatDestroy_SeqTile;
  B->ops->view                  = MatView_SeqTile;
  B->ops->setfromoptions        = MatSetFromOptions_SeqTile;
  B->ops->productsetfromoptions = MatProductSetFromOptions_SeqTile;
  PetscCall(TileCompose(B));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATSEQAIJTILE));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode MatConvert_SeqTile_SeqAIJ(Mat A, MatType type, MatReuse reuse, Mat *newmat)
{
  Mat       B;
  PetscBool copied;

  PetscFunctionBegin;
  PetscCall(TileConvertTarget(A, reuse, newmat, &copied));
  if (copied) PetscFunctionReturn(PETSC_SUCCESS);
  B = *newmat;
  PetscCall(TileStrip(B));
  PetscCall(PetscObjectChangeTypeName((PetscObject)B, MATSEQAIJ));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreate_SeqTile(Mat B)
{
  PetscFunctionBegin;
  PetscCall(MatCreate_SeqAIJ(B));
  PetscCall(MatConvert_SeqAIJ_SeqTile(B, MATSEQTILE, MAT_INPLACE_MATRIX, &B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatCreateSeqTile(MPI_Comm comm, PetscInt m, PetscInt n, PetscInt nz, const PetscInt nnz[], Mat *A)
{
  PetscFunctionBegin;
  PetscCall(TileRAPInitializePackage());
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, m, n, m, n));
  PetscCall(MatSetType(*A, MATSEQTILE));
  PetscCall(MatSeqAIJSetPreallocation(*A, nz, nnz));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqTileGetTileMatrix(Mat A, const tilerap_tile_matrix **T)
{
  PetscBool istile;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  TileAssertPointer(T, 2);
  PetscCall(TileIsSeqTile(A, &istile));
  PetscCheck(istile, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not %s", ((PetscObject)A)->type_name, MATSEQTILE);
  PetscCall(TileCacheSync(A, &((Mat_SeqTile *)A->spptr)->cache));
  *T = ((Mat_SeqTile *)A->spptr)->cache.T;
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode MatSeqTileGetSyncStats(Mat A, MatSeqTileSyncStats *s)
{
  PetscBool istile;

  PetscFunctionBegin;
  PetscValidHeaderSpecific(A, MAT_CLASSID, 1);
  PetscCall(TileIsSeqTile(A, &istile));
  PetscCheck(istile, PetscObjectComm((PetscObject)A), PETSC_ERR_ARG_WRONG, "Matrix of type %s is not %s", ((PetscObject)A)->type_name, MATSEQTILE);
  *s = ((Mat_SeqTile *)A->spptr)->cache.stats;
  PetscFunctionReturn(PETSC_SUCCESS);
}
