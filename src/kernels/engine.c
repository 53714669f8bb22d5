/* Engine selection: AUTO picks CUDA when compiled in and a GPU is visible. */
#include "tile_internal.h"
#include "engine_cuda.h"
#include <stdlib.h>
#include <strings.h>

void tilerap_options_default(tilerap_options *opt)
{
  if (!opt) return;
  opt->engine = TILERAP_ENGINE_AUTO;
  opt->dense_threshold = 192;
  opt->stream = NULL;
  opt->tc_threshold = 256; /* measured on the H100: BENCHMARKS.md section 5 */
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

tilerap_engine tilerap_engine_resolve(tilerap_engine requested)
{
  if (requested == TILERAP_ENGINE_AUTO) {
    const char *env = getenv("TILERAP_ENGINE");
    tilerap_engine e;
    if (env && *env && tilerap_engine_parse(env, &e) == TILERAP_SUCCESS) requested = e;
  }
  if (requested == TILERAP_ENGINE_AUTO)
    return tilerap_engine_available(TILERAP_ENGINE_CUDA) ? TILERAP_ENGINE_CUDA : TILERAP_ENGINE_CPU;
  return requested;
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

/* Why there is no device, for the messages below. */
static const char *tr_no_device_reason(void)
{
#ifdef TILERAP_HAVE_CUDA
  return "no GPU visible";
#else
  return "tilerap was built without CUDA";
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
