/* The -mat_tile_ options of MATSEQTILE and MATMPITILE: read when a tile
 * matrix is created (so -help lists them in any program) and again by its
 * MatSetFromOptions; the CUDA device of the process (-mat_tile_device, or
 * one GPU per rank for mpitile).
 *
 * Two kinds of options: the per-matrix ones (engine, thresholds, precision,
 * CPU kernel) go into the matrix's tilerap_options; the tuning knobs of the
 * core (doc/tuning.md: TILERAP_PINNED, TILERAP_PINNED_CHUNK,
 * TILERAP_COPY_THREADS, TILERAP_TRACE) are process-wide and handed to
 * tilerap_tuning_set, which checks them. */
#include "mat_seqtile_impl.h"
#if TILE_DEVICE_AIJ
  #include <petscdevice.h>
#endif
#include "tile_mpi_device.h"
#include "tuning.h"
#include <limits.h>

/* Values of the -mat_tile_ options as read inside an open options block
 * (TileOptionsRead), checked and applied after it (TileOptionsApply). */
#define TILE_NTUNING 7
typedef struct {
  char      engine[16], precision[16];
  PetscInt  thr, device;
  char      tc[32]; /* -mat_tile_tc_threshold: auto or a number */
  char      cpu_kernel[16];
  PetscBool engine_set, thr_set, tc_set, precision_set, device_set, cpu_kernel_set;
  char      tuning[TILE_NTUNING][32];
  PetscBool tuning_set[TILE_NTUNING];
} TileOptionValues;

PetscErrorCode TileTcThresholdName(int tc_threshold, char *buf, size_t len)
{
  PetscFunctionBegin;
  if (tc_threshold == TILERAP_TC_AUTO) PetscCall(PetscStrncpy(buf, "auto", len));
  else PetscCall(PetscSNPrintf(buf, len, "%d", tc_threshold < 0 ? -1 : tc_threshold));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode TileCheckEngine(MPI_Comm comm, tilerap_engine e)
{
  PetscFunctionBegin;
  PetscCheck(e != TILERAP_ENGINE_CUDA || tilerap_engine_available(e), comm, PETSC_ERR_SUP,
             "-mat_tile_engine cuda: tilerap was built without CUDA or no GPU is visible");
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The core's tuning knobs exposed as options, in the order of
 * TileOptionValues.tuning. */
static const struct {
  const char *option, *knob, *help;
  tr_knob_id  id;
  PetscBool   flag; /* given without a value: on, as a PETSc boolean */
} tile_tuning_options[TILE_NTUNING] = {
  {"-mat_tile_pinned", "TILERAP_PINNED", "CUDA engine: host<->device copies of 256 KB or more through a ring of pinned staging chunks; 0: plain cudaMemcpyAsync (TILERAP_PINNED; process-wide)", TR_KNOB_PINNED, PETSC_TRUE},
  {"-mat_tile_pinned_chunk", "TILERAP_PINNED_CHUNK", "CUDA engine: bytes of a pinned staging chunk, 4096..2^30, taken when the staging ring is made at the first large copy (TILERAP_PINNED_CHUNK; process-wide)", TR_KNOB_PINNED_CHUNK, PETSC_FALSE},
  {"-mat_tile_copy_threads", "TILERAP_COPY_THREADS", "threads of large host copies (staging included), 1..64 (TILERAP_COPY_THREADS; process-wide)", TR_KNOB_COPY_THREADS, PETSC_FALSE},
  {"-mat_tile_trace", "TILERAP_TRACE", "CUDA engine: host timestamps of plan creation on stderr (TILERAP_TRACE; process-wide, taken at each plan creation)", TR_KNOB_TRACE, PETSC_TRUE},
  {"-mat_tile_lowprec_reuse", "TILERAP_CUDA_LOWPREC_REUSE", "CUDA engine: a plan takes the low precision of -mat_tile_precision where its tensor-core pairs reuse each converted tile at least this often (default 8, where it was measured to pay; 0: always, for accuracy studies) (TILERAP_CUDA_LOWPREC_REUSE; process-wide, taken at each plan creation)", TR_KNOB_CUDA_LOWPREC_REUSE, PETSC_FALSE},
  {"-mat_tile_path", "TILERAP_PATH", "how products multiply: auto (by the operands' entries per tile; operands with a device CSR, AIJCUSPARSE underneath: row by row on it), tiles, or csr (row by row over CSR views: unordered meshes, random and power-law graphs) (TILERAP_PATH; process-wide, taken at each plan creation)", TR_KNOB_PATH, PETSC_FALSE},
  {"-mat_tile_csr_ptap", "TILERAP_CSR_PTAP", "CPU engine, MatPtAP on the AIJ arrays: walk (default: no A*P kept, memory near PETSc's) or ap (A*P kept: re-runs up to 2x faster on block and high-order operators, 1.2-14x PETSc's memory) (TILERAP_CSR_PTAP; process-wide, taken at each product's symbolic phase)", TR_KNOB_CSR_PTAP, PETSC_FALSE},
};

/* Reads the -mat_tile_ options into v (values are checked after the
 * options block so that a bad value leaves nothing behind). */
static PetscErrorCode TileOptionsRead(TileOptionItems PetscOptionsObject, const tilerap_options *opt, TileOptionValues *v)
{
  PetscFunctionBegin;
  PetscCall(PetscOptionsString("-mat_tile_engine", "tilerap engine of the matrix products: auto, cpu, cuda", "MatSeqTile", tilerap_engine_name(opt->engine), v->engine, sizeof v->engine, &v->engine_set));
  v->thr = opt->dense_threshold;
  PetscCall(PetscOptionsInt("-mat_tile_dense_threshold", "C tiles with more entries use the dense accumulator (0..256)", "MatSeqTile", v->thr, &v->thr, &v->thr_set));
  {
    char now[32];
    PetscCall(TileTcThresholdName(opt->tc_threshold, now, sizeof now));
    PetscCall(PetscOptionsString("-mat_tile_tc_threshold", "CUDA engine: tile pairs with at least this many multiply-adds (0..4096) use tensor cores; negative: off; auto: 256 or 512 by the operands' entries per tile", "MatSeqTile", now, v->tc, sizeof v->tc, &v->tc_set));
  }
  PetscCall(PetscOptionsString("-mat_tile_precision", "operands of tensor-core tile products: fp64, tf32, bf16, fp16", "MatSeqTile", tilerap_precision_name(opt->precision), v->precision, sizeof v->precision, &v->precision_set));
  PetscCall(PetscOptionsString("-mat_tile_cpu_kernel", "CPU engine's numeric kernel: auto, tiles, recorded (records every product on a re-run: faster re-runs, 4 bytes per multiply-add)", "MatSeqTile", tilerap_cpu_kernel_name(opt->cpu_kernel), v->cpu_kernel, sizeof v->cpu_kernel, &v->cpu_kernel_set));
  v->device = -1;
  PetscCall(PetscOptionsInt("-mat_tile_device", "CUDA device of this process (default for mpitile: node-local rank mod device count)", "MatSeqTile", v->device, &v->device, &v->device_set));
  for (int k = 0; k < TILE_NTUNING; k++) {
    char now[32];
    tr_knob_text(tile_tuning_options[k].id, now, sizeof now);
    PetscCall(PetscOptionsString(tile_tuning_options[k].option, tile_tuning_options[k].help, "MatSeqTile", now, v->tuning[k], sizeof v->tuning[k], &v->tuning_set[k]));
    if (v->tuning_set[k] && tile_tuning_options[k].flag && !v->tuning[k][0]) PetscCall(PetscStrncpy(v->tuning[k], "1", sizeof v->tuning[k]));
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Process-wide device state: the device -mat_tile_device asked for, and the
 * one MATMPITILE settled on (a process never changes device under its
 * device matrices and plans). */
static int tile_device_requested = -1, tile_device_chosen = -1;

/* Checks the values read by TileOptionsRead and applies them: to *opt,
 * the tuning knobs to the process (tilerap_tuning_set); -mat_tile_device
 * makes that CUDA device current at once. */
static PetscErrorCode TileOptionsApply(MPI_Comm comm, tilerap_options *opt, const TileOptionValues *v)
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
    PetscBool is_auto;
    PetscCall(PetscStrcasecmp(v->tc, "auto", &is_auto));
    if (is_auto) opt->tc_threshold = TILERAP_TC_AUTO;
    else {
      char *end = NULL;
      long  n   = strtol(v->tc, &end, 10);
      PetscCheck(v->tc[0] && end && !*end && n <= TILERAP_TILE * TILERAP_TILE * TILERAP_TILE, comm, PETSC_ERR_ARG_OUTOFRANGE, "-mat_tile_tc_threshold %s: expected auto or a number of at most 4096 (negative: off)", v->tc);
      opt->tc_threshold = n < 0 ? -1 : (int)n;
    }
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
  for (int k = 0; k < TILE_NTUNING; k++)
    if (v->tuning_set[k]) PetscCall(TileCheckError_Private(comm, tilerap_tuning_set(tile_tuning_options[k].knob, v->tuning[k]), tile_tuning_options[k].option));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Creates the CUDA context of the current device once per process when
 * the CUDA engine is active (cudaSetDevice initialises it), at matrix
 * creation as PETSc's own device types do at initialisation, so the
 * ~0.1 s it takes is not charged to the first product. */
PetscErrorCode TileDeviceWarmUp(const tilerap_options *opt)
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
  int active, err, before, requested = tile_device_requested;

  PetscFunctionBegin;
  /* -mat_tile_engine cpu is the same on every rank: no collective needed */
  if (opt->engine == TILERAP_ENGINE_CPU) PetscFunctionReturn(PETSC_SUCCESS);
  active = tilerap_engine_resolve(opt->engine) == TILERAP_ENGINE_CUDA;
#if TILE_DEVICE_AIJ
  { /* the matrices live on PETSc's device: the engine works there */
    PetscMPIInt bad = 0, anybad; /* collective: every rank returns the error */
    PetscInt    id  = -1;
    if (active) {
      PetscDeviceContext dctx;
      PetscDevice        dev;
      PetscCall(PetscDeviceInitialize(PETSC_DEVICE_CUDA));
      PetscCall(PetscDeviceContextGetCurrentContext(&dctx));
      PetscCall(PetscDeviceContextGetDevice(dctx, &dev));
      PetscCall(PetscDeviceGetDeviceId(dev, &id));
      bad = requested >= 0 && requested != (int)id;
    }
    PetscCallMPI(MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, comm));
    PetscCheck(!anybad, comm, PETSC_ERR_ARG_INCOMP, "-mat_tile_device %d differs from PETSc's CUDA device on some rank (this rank's: %" PetscInt_FMT "; choose it with -device_select)", requested, id);
    if (active) requested = (int)id;
  }
#endif
  before = tile_device_chosen;
  err    = tr_mpi_choose_device(comm, active, requested, &tile_device_chosen);
  PetscCheck(!err, PETSC_COMM_SELF, PETSC_ERR_LIB, "tilerap: cannot make the CUDA device of this rank current: %s", tilerap_last_error());
  if (tile_device_chosen != before)
    PetscCall(PetscInfo(NULL, "tilerap: CUDA device %d of %d for this rank (%s)\n", tile_device_chosen, tilerap_device_count(), requested >= 0 ? (TILE_DEVICE_AIJ ? "PETSc's device" : "-mat_tile_device") : "node-local rank mod device count"));
  if (active) PetscCall(TileDeviceWarmUp(opt));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Options when a tile matrix is created (so -help lists them in any program). */
PetscErrorCode TileOptionsFromDatabase(Mat B, tilerap_options *opt)
{
  TileOptionValues v;

  PetscFunctionBegin;
  PetscOptionsBegin(PetscObjectComm((PetscObject)B), ((PetscObject)B)->prefix, "TileRAP matrix (seqtile) options", "Mat");
  PetscCall(TileOptionsRead(PetscOptionsObject, opt, &v));
  PetscOptionsEnd();
  PetscCall(TileOptionsApply(PetscObjectComm((PetscObject)B), opt, &v));
  PetscFunctionReturn(PETSC_SUCCESS);
}

PetscErrorCode TileSetFromOptions(Mat A, TileOptionItems PetscOptionsObject, PetscErrorCode (*base)(Mat, TileOptionItems), MatType type, tilerap_options *opt)
{
  TileOptionValues v;
  char             title[64];

  PetscFunctionBegin;
  if (base) PetscCall((*base)(A, PetscOptionsObject));
  PetscCall(PetscSNPrintf(title, sizeof title, "TileRAP matrix (%s) options", type));
  PetscOptionsHeadBegin(PetscOptionsObject, title);
  PetscCall(TileOptionsRead(PetscOptionsObject, opt, &v));
  PetscOptionsHeadEnd();
  PetscCall(TileOptionsApply(PetscObjectComm((PetscObject)A), opt, &v));
  PetscFunctionReturn(PETSC_SUCCESS);
}
