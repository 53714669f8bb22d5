/* State of the hypre hook: on/off switch (API and TILERAP_HYPRE), the
 * settings (TileRAP_HypreSet*: knobs of the tuning table), the counters
 * behind TILERAP_HYPRE_VERBOSE, and hypre's own entry points found with
 * dlsym(RTLD_NEXT) for forwarding. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "hook_internal.h"
#include "tuning.h"
#include "tile_mpi_device.h"
#include "tilerap_device.h"

#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_enabled = -1;          /* -1: not decided yet (environment) */
static int g_rank = -1;             /* MPI_COMM_WORLD rank seen at the first call */
static TileRAP_HypreStats g_stats;
#define TR_MAX_NOTES 8
static char g_notes[TR_MAX_NOTES][256];
static int g_nnotes = 0, g_notes_dropped = 0;
static double g_phase[TR_PH_N];
static const char *const g_phase_text[TR_PH_N] = {
  "stitch/convert in", "upload (+ tiles on the device)", "engine products", "download", "convert out/assemble",
  "hypre order", "communication", "[overlapped: row-order pass on its thread]",
  "transpose of R kept for hypre (device)"};

static const char *const g_reason_text[TILERAP_HYPRE_FWD_NREASONS] = {
  "hook disabled (TileRAP_HypreDisable or TILERAP_HYPRE=0)",
  "matrices in device memory that this build cannot take (hook built against a CPU hypre, or the CPU engine)",
  "hypre scalar type is not double",
  "incompatible dimensions (left to hypre's error handling)",
  "local size beyond 32-bit tile indices",
  "tilerap engine error",
  "another rank could not compute",
  "refused for testing (TILERAP_HYPRE_TEST_REFUSE_RANK)",
  "no GPU, CPU engine not asked for (slower than hypre's RAP; TILERAP_ENGINE=cpu forces it)",
  "device memory on several ranks: hypre's RAPKT exchanges, tilerap computes its local triple product",
  "(retired: device matrices left to hypre's own device RAP; no longer given)",
};
static const char *const g_setup_text[TILERAP_HYPRE_SETUP_NREASONS] = {
  "no kept hierarchy yet", "the re-setups allowed after a full setup were used up",
  "A's pattern changed", "a setting whose setup data a re-setup does not refresh",
  "device matrices without the CUDA engine", "a coarse operator could not be kept (note)"};
static const char *const g_entry_text[TILERAP_HYPRE_EP_N] = {
  "hypre_BoomerAMGBuildCoarseOperatorKT", "hypre_ParCSRMatrixRAPKT", "hypre_CSRMatrixTripleMultiplyDevice",
  "hypre_ParCSRMatMat", "hypre_ParCSRTMatMatKT"};

/* The level in force at exit decides (TileRAP_HypreSetVerbose may have
 * changed it); silent in processes that never reached a hooked call
 * (mpiexec under LD_PRELOAD). */
static void print_at_exit(void)
{
  long observed = 0;
  for (int e = 0; e < TILERAP_HYPRE_EP_N; e++) observed += g_stats.observed[e];
  for (int r = 0; r < TILERAP_HYPRE_SETUP_NREASONS; r++) observed += g_stats.setups_full[r];
  observed += g_stats.setups_reused;
  if (tr_hypre_verbose() && (TileRAP_HypreComputed() || TileRAP_HypreForwarded() || observed))
    TileRAP_HyprePrintStats(stderr);
}

__attribute__((constructor)) static void tr_hypre_init(void)
{
  atexit(print_at_exit);
}

/* read at every use: a knob lookup, and the setter takes effect at once */
int tr_hypre_verbose(void) { return tr_knob_int(TR_KNOB_HYPRE_VERBOSE); }

static int set_int_knob(const char *name, int value)
{
  char text[24];
  snprintf(text, sizeof text, "%d", value);
  return tilerap_tuning_set(name, text);
}

int TileRAP_HypreSetVerbose(int level) { return set_int_knob("TILERAP_HYPRE_VERBOSE", level); }
int TileRAP_HypreSetOrder(const char *order) { return tilerap_tuning_set("TILERAP_HYPRE_ORDER", order); }
int TileRAP_HypreSetDevice(int dev) { return set_int_knob("TILERAP_DEVICE", dev); }
int TileRAP_HypreSetEngine(const char *engine) { return tilerap_tuning_set("TILERAP_ENGINE", engine); }
int TileRAP_HypreSetPath(const char *path) { return tilerap_tuning_set("TILERAP_PATH", path); }

int tr_hypre_enabled(void)
{
  if (g_enabled < 0) g_enabled = tr_knob_int(TR_KNOB_HYPRE);
  if (g_rank < 0) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  }
  return g_enabled;
}

int TileRAP_HypreEnable(int on)
{
  int prev = tr_hypre_enabled();
  g_enabled = on ? 1 : 0;
  if (!on) tr_hypre_drop_kept();
  return prev;
}
int TileRAP_HypreDisable(void) { return TileRAP_HypreEnable(0); }
int TileRAP_HypreEnabled(void) { return tr_hypre_enabled(); }

int tr_hypre_refusal(void)
{
  if (!tr_hypre_enabled()) return TILERAP_HYPRE_FWD_DISABLED;
  /* the CPU engine only when asked for by name: on BoomerAMG's operators
   * it is slower than hypre's own RAP (BENCHMARKS.md, hypre section) */
  const int named_cpu = tr_knob_int(TR_KNOB_ENGINE) == 1; /* TILERAP_ENGINE=cpu */
  if (!named_cpu && tilerap_engine_resolve(TILERAP_ENGINE_AUTO) == TILERAP_ENGINE_CPU) return TILERAP_HYPRE_FWD_NOGPU;
  return -1;
}

int tr_hypre_test_refuse_rank(void)
{
  return tr_knob_int(TR_KNOB_HYPRE_TEST_REFUSE_RANK);
}

double tr_hypre_wtime(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tr_hypre_count_computed(int entry, double seconds)
{
  g_stats.computed[entry]++;
  g_stats.seconds_tilerap += seconds;
  g_stats.seconds_entry[entry] += seconds;
}

void tr_hypre_count_forwarded(int entry, int reason, double seconds)
{
  g_stats.forwarded[entry]++;
  if (reason >= 0 && reason < TILERAP_HYPRE_FWD_NREASONS) g_stats.reason[reason]++;
  g_stats.seconds_forwarded += seconds;
  g_stats.seconds_entry[entry] += seconds;
}

void tr_hypre_count_observed(int entry, double seconds)
{
  g_stats.observed[entry]++;
  g_stats.seconds_entry[entry] += seconds;
}

void tr_hypre_count_kept(int kept)
{
  if (kept > 0) g_stats.operand_kept++;
  else if (kept < 0) g_stats.operand_changed++;
}

void tr_hypre_count_setup(int reason, double seconds)
{
  if (reason < 0) {
    g_stats.setups_reused++;
    g_stats.seconds_setup_reused += seconds;
  } else if (reason < TILERAP_HYPRE_SETUP_NREASONS) {
    g_stats.setups_full[reason]++;
    g_stats.seconds_setup_full += seconds;
  }
}

void tr_hypre_add_phase(int phase, double seconds)
{
  if (phase >= 0 && phase < TR_PH_N) g_phase[phase] += seconds;
}

void tr_hypre_note(const char *fmt, ...)
{
  if (g_nnotes >= TR_MAX_NOTES) { g_notes_dropped++; return; }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_notes[g_nnotes++], sizeof g_notes[0], fmt, ap);
  va_end(ap);
}

static int g_device = -1; /* device chosen for this process (-1: none yet) */

int tr_hypre_device_mismatch(void)
{
  const int want = tr_knob_int(TR_KNOB_DEVICE);
  int cur = -1;
  if (want < 0 || (!tilerap_get_device(&cur) && cur == want)) return 0;
  tr_hypre_note("TILERAP_DEVICE=%d, but hypre's device matrices are on device %d, the current one (the application "
                "binds the GPU before HYPRE_Init)", want, cur);
  return 1;
}

int tr_hypre_select_device(MPI_Comm comm, int on_device)
{
  /* TILERAP_DEVICE (-1: one GPU per rank); a bad value in the tuning
   * table (this one or another) refuses, with its message */
  const int bad = tr_tuning_check() != TILERAP_SUCCESS;
  const int requested = bad ? -1 : tr_knob_int(TR_KNOB_DEVICE);
  if (on_device) {
    if (bad) tr_hypre_note("%s", tilerap_last_error());
    return bad || tr_hypre_device_mismatch();
  }
  /* a bad value still takes part in the collective, then refuses */
  int active = !bad && tilerap_engine_resolve(TILERAP_ENGINE_AUTO) == TILERAP_ENGINE_CUDA;
  /* the CPU engine ignores a device number */
  int err = tr_mpi_choose_device(comm, active, active ? requested : -1, &g_device);
  if (bad) {
    tr_hypre_note("%s", tilerap_last_error());
    return 1;
  }
  if (err) {
    tr_hypre_note("CUDA device %d: %s", requested, tilerap_last_error());
    return 1;
  }
  return 0;
}

void TileRAP_HypreGetStats(TileRAP_HypreStats *stats)
{
  if (stats) *stats = g_stats;
}

void TileRAP_HypreResetStats(void)
{
  memset(&g_stats, 0, sizeof g_stats);
  memset(g_phase, 0, sizeof g_phase);
  g_nnotes = g_notes_dropped = 0;
}

long TileRAP_HypreComputed(void)
{
  long s = 0;
  for (int e = 0; e < TILERAP_HYPRE_EP_N; e++) s += g_stats.computed[e];
  return s;
}

long TileRAP_HypreForwarded(void)
{
  long s = 0;
  for (int e = 0; e < TILERAP_HYPRE_EP_N; e++) s += g_stats.forwarded[e];
  return s;
}

const char *TileRAP_HypreReasonString(int reason)
{
  if (reason < 0 || reason >= TILERAP_HYPRE_FWD_NREASONS) return "unknown reason";
  return g_reason_text[reason];
}

void TileRAP_HyprePrintStats(void *stream)
{
  FILE *f = stream ? (FILE *)stream : stderr;
  char who[32] = "";
  if (g_rank >= 0) snprintf(who, sizeof who, " rank %d", g_rank);
  fprintf(f, "tilerap_hypre%s: %ld Galerkin products computed by tilerap (%.3f s), "
             "%ld forwarded to hypre (%.3f s)\n",
          who, TileRAP_HypreComputed(), g_stats.seconds_tilerap, TileRAP_HypreForwarded(),
          g_stats.seconds_forwarded);
  if (TileRAP_HypreComputed()) {
    fprintf(f, "tilerap_hypre%s:   time split:", who);
    for (int p = 0; p < TR_PH_N; p++) fprintf(f, "%s %s %.3f s", p ? "," : "", g_phase_text[p], g_phase[p]);
    fprintf(f, "\n");
  }
  if (g_stats.operand_kept || g_stats.operand_changed)
    fprintf(f, "tilerap_hypre%s:   A kept on the GPU from the previous product: %ld times (%ld times changed by hypre, uploaded)\n",
            who, g_stats.operand_kept, g_stats.operand_changed);
  for (int e = 0; e < TILERAP_HYPRE_EP_N; e++)
    if (g_stats.computed[e] || g_stats.forwarded[e])
      fprintf(f, "tilerap_hypre%s:   %s: %ld computed, %ld forwarded\n", who, g_entry_text[e],
              g_stats.computed[e], g_stats.forwarded[e]);
  for (int e = 0; e < TILERAP_HYPRE_EP_N; e++)
    if (g_stats.observed[e])
      fprintf(f, "tilerap_hypre%s:   %s: %ld calls observed, left to hypre (%.3f s)\n", who, g_entry_text[e],
              g_stats.observed[e], g_stats.seconds_entry[e]);
  for (int r = 0; r < TILERAP_HYPRE_FWD_NREASONS; r++)
    if (g_stats.reason[r])
      fprintf(f, "tilerap_hypre%s:   forwarded %ld x: %s\n", who, g_stats.reason[r], g_reason_text[r]);
  long full = 0;
  for (int r = 0; r < TILERAP_HYPRE_SETUP_NREASONS; r++) full += g_stats.setups_full[r];
  if (full || g_stats.setups_reused) {
    fprintf(f, "tilerap_hypre%s:   BoomerAMG setups with re-setup asked for: %ld re-setups from the kept hierarchy "
               "(%.3f s), %ld full (%.3f s)\n", who, g_stats.setups_reused, g_stats.seconds_setup_reused, full,
            g_stats.seconds_setup_full);
    for (int r = 0; r < TILERAP_HYPRE_SETUP_NREASONS; r++)
      if (g_stats.setups_full[r])
        fprintf(f, "tilerap_hypre%s:     full %ld x: %s\n", who, g_stats.setups_full[r], g_setup_text[r]);
  }
  for (int k = 0; k < g_nnotes; k++) fprintf(f, "tilerap_hypre%s:   note: %s\n", who, g_notes[k]);
  if (g_notes_dropped) fprintf(f, "tilerap_hypre%s:   (%d more notes)\n", who, g_notes_dropped);
  fflush(f);
}

void *tr_hypre_next_symbol(const char *name)
{
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) {
    fprintf(stderr, "tilerap_hypre: hypre's own %s not found after libtilerap_hypre in the "
                    "lookup order (%s); link libHYPRE after libtilerap_hypre\n", name, dlerror());
    abort();
  }
  return p;
}

tr_build_coarse_fn tr_hypre_original_build_coarse(void)
{
  static tr_build_coarse_fn fn;
  if (!fn) fn = (tr_build_coarse_fn)tr_hypre_next_symbol("hypre_BoomerAMGBuildCoarseOperatorKT");
  return fn;
}

tr_rapkt_fn tr_hypre_original_rapkt(void)
{
  static tr_rapkt_fn fn;
  if (!fn) fn = (tr_rapkt_fn)tr_hypre_next_symbol("hypre_ParCSRMatrixRAPKT");
  return fn;
}
