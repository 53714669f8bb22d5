/* Engine selection: AUTO picks CUDA when compiled in and a GPU is visible. */
#include "tile_internal.h"
#include "engine_cuda.h"
#include "tuning.h"
#include <stdlib.h>
#include <strings.h>

void tilerap_options_default(tilerap_options *opt)
{
  if (!opt) return;
  opt->engine = TILERAP_ENGINE_AUTO;
  opt->dense_threshold = 192;
  opt->stream = NULL;
  opt->tc_threshold = TILERAP_TC_AUTO; /* tr_tc_threshold_resolve */
  opt->precision = TILERAP_PRECISION_FP64;
  opt->cpu_kernel = TILERAP_CPU_KERNEL_AUTO;
  opt->plan_values = 0;
}

const char *tilerap_precision_name(tilerap_precision p)
{
  switch (p) {
  case TILERAP_PRECISION_FP64: return "fp64";
  case TILERAP_PRECISION_TF32: return "tf32";
  case TILERAP_PRECISION_BF16: return "bf16";
  case TILERAP_PRECISION_FP16: return "fp16";
  }
  return "unknown";
}

int tilerap_precision_parse(const char *name, tilerap_precision *prec)
{
  if (!name || !prec) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_precision_parse: NULL argument");
  static const tilerap_precision all[] = {TILERAP_PRECISION_FP64, TILERAP_PRECISION_TF32, TILERAP_PRECISION_BF16,
                                          TILERAP_PRECISION_FP16};
  for (int i = 0; i < 4; i++)
    if (!strcasecmp(name, tilerap_precision_name(all[i]))) { *prec = all[i]; return TILERAP_SUCCESS; }
  return tilerap_set_error(TILERAP_ERR_INVALID, "unknown precision '%s' (expected fp64, tf32, bf16 or fp16)", name);
}

const char *tilerap_engine_name(tilerap_engine e)
{
  switch (e) {
  case TILERAP_ENGINE_AUTO: return "auto";
  case TILERAP_ENGINE_CPU: return "cpu";
  case TILERAP_ENGINE_CUDA: return "cuda";
  }
  return "unknown";
}

int tilerap_engine_parse(const char *name, tilerap_engine *engine)
{
  if (!name || !engine) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_engine_parse: NULL argument");
  if (!strcasecmp(name, "auto")) *engine = TILERAP_ENGINE_AUTO;
  else if (!strcasecmp(name, "cpu")) *engine = TILERAP_ENGINE_CPU;
  else if (!strcasecmp(name, "cuda")) *engine = TILERAP_ENGINE_CUDA;
  else return tilerap_set_error(TILERAP_ERR_INVALID, "unknown engine '%s' (expected auto, cpu or cuda)", name);
  return TILERAP_SUCCESS;
}

const char *tilerap_path_name(tilerap_path path)
{
  return path == TILERAP_PATH_TILES ? "tiles" : path == TILERAP_PATH_CSR ? "csr" : "unknown";
}

const char *tilerap_cpu_kernel_name(tilerap_cpu_kernel k)
{
  switch (k) {
  case TILERAP_CPU_KERNEL_AUTO: return "auto";
  case TILERAP_CPU_KERNEL_TILES: return "tiles";
  case TILERAP_CPU_KERNEL_RECORDED: return "recorded";
  }
  return "unknown";
}

int tilerap_cpu_kernel_parse(const char *name, tilerap_cpu_kernel *kernel)
{
  if (!name || !kernel) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_cpu_kernel_parse: NULL argument");
  if (!strcasecmp(name, "auto")) *kernel = TILERAP_CPU_KERNEL_AUTO;
  else if (!strcasecmp(name, "tiles")) *kernel = TILERAP_CPU_KERNEL_TILES;
  else if (!strcasecmp(name, "recorded")) *kernel = TILERAP_CPU_KERNEL_RECORDED;
  else return tilerap_set_error(TILERAP_ERR_INVALID, "unknown CPU kernel '%s' (expected auto, tiles or recorded)", name);
  return TILERAP_SUCCESS;
}

int tilerap_engine_available(tilerap_engine e)
{
  switch (e) {
  case TILERAP_ENGINE_CPU: return 1;
  case TILERAP_ENGINE_CUDA:
#ifdef TILERAP_HAVE_CUDA
    return tr_cuda_device_count() > 0;
#else
    return 0;
#endif
  case TILERAP_ENGINE_AUTO: return 1;
  }
  return 0;
}

/* the tuning table's engine (TILERAP_ENGINE) for an AUTO request */
static tilerap_engine tr_engine_knob(void)
{
  static const tilerap_engine by_index[] = {TILERAP_ENGINE_AUTO, TILERAP_ENGINE_CPU, TILERAP_ENGINE_CUDA};
  return by_index[tr_knob_int(TR_KNOB_ENGINE)];
}

static int tr_engine_valid(tilerap_engine e)
{
  return e == TILERAP_ENGINE_AUTO || e == TILERAP_ENGINE_CPU || e == TILERAP_ENGINE_CUDA;
}

/* An invalid TILERAP_ENGINE counts as unset here (this call cannot fail);
 * every plan entry point reports it (tr_options_check). */
tilerap_engine tilerap_engine_resolve(tilerap_engine requested)
{
  if (requested == TILERAP_ENGINE_AUTO) requested = tr_engine_knob();
  if (requested == TILERAP_ENGINE_AUTO)
    return tilerap_engine_available(TILERAP_ENGINE_CUDA) ? TILERAP_ENGINE_CUDA : TILERAP_ENGINE_CPU;
  return requested;
}

/* Why there is no device, for the messages below. */
static const char *tr_no_device_reason(void)
{
#ifdef TILERAP_HAVE_CUDA
  return "no GPU visible";
#else
  return "tilerap was built without CUDA";
#endif
}

/* after tr_options_check, which reports a bad tuning value */
static int tr_engine_resolve(tilerap_engine requested, tilerap_engine *engine)
{
  if (!tr_engine_valid(requested)) return tilerap_set_error(TILERAP_ERR_INVALID, "unknown engine %d", (int)requested);
  *engine = tilerap_engine_resolve(requested);
  if (!tilerap_engine_available(*engine))
    return tilerap_set_error(TILERAP_ERR_ENGINE, "engine '%s' is not available (%s)", tilerap_engine_name(*engine),
                             tr_no_device_reason());
  return TILERAP_SUCCESS;
}

int tr_check_memtype(tilerap_memtype mem, const char *who)
{
  if (mem != TILERAP_MEM_HOST && mem != TILERAP_MEM_DEVICE)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: memory type %d is neither host (0) nor device (1)", who, (int)mem);
  return TILERAP_SUCCESS;
}

int tr_options_check(const tilerap_options *o, const char *who)
{
  int err = tr_tuning_check();
  if (err) return err;
  if (!tr_engine_valid(o->engine))
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: unknown engine %d (auto 0, cpu 1, cuda 2)", who, (int)o->engine);
  if (o->dense_threshold < 0 || o->dense_threshold > 256)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: dense_threshold %d outside [0,256]", who, o->dense_threshold);
  if (o->tc_threshold > 4096 && o->tc_threshold != TILERAP_TC_AUTO)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: tc_threshold %d above 4096 (negative: tensor cores off; TILERAP_TC_AUTO: the plan's choice)", who,
                             o->tc_threshold);
  if ((unsigned)o->precision > (unsigned)TILERAP_PRECISION_FP16)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: unknown precision %d (fp64 0, tf32 1, bf16 2, fp16 3)", who,
                             (int)o->precision);
  if ((unsigned)o->cpu_kernel > (unsigned)TILERAP_CPU_KERNEL_RECORDED)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: unknown cpu_kernel %d (auto 0, tiles 1, recorded 2)", who,
                             (int)o->cpu_kernel);
  if ((unsigned)o->plan_values > 1u)
    return tilerap_set_error(TILERAP_ERR_INVALID, "%s: plan_values is %d (0 or 1)", who, o->plan_values);
  return TILERAP_SUCCESS;
}

int tr_plan_engine(const tilerap_options *o, const tilerap_tile_matrix *A, const char *who, tilerap_engine *engine)
{
  const int err = tr_options_check(o, who);
  /* device matrices can only be multiplied where they are */
  return err ? err : tr_engine_resolve(A->memtype == TILERAP_MEM_DEVICE ? TILERAP_ENGINE_CUDA : o->engine, engine);
}

/* ---------------------------------------------------------------- devices */
int tilerap_device_count(void)
{
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_device_count();
#else
  return 0;
#endif
}

int tilerap_set_device(int dev)
{
  int n = tilerap_device_count();
  if (n <= 0) return tilerap_set_error(TILERAP_ERR_ENGINE, "tilerap_set_device(%d): no CUDA device (%s)", dev, tr_no_device_reason());
  if (dev < 0 || dev >= n)
    return tilerap_set_error(TILERAP_ERR_RANGE, "tilerap_set_device(%d): device outside 0..%d", dev, n - 1);
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_set_device(dev);
#else
  return TILERAP_ERR_ENGINE; /* not reached: no devices */
#endif
}

int tilerap_get_device(int *dev)
{
  if (!dev) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_get_device: NULL argument");
  *dev = -1;
  if (tilerap_device_count() <= 0)
    return tilerap_set_error(TILERAP_ERR_ENGINE, "tilerap_get_device: no CUDA device (%s)", tr_no_device_reason());
#ifdef TILERAP_HAVE_CUDA
  return tr_cuda_get_device(dev);
#else
  return TILERAP_ERR_ENGINE;
#endif
}
