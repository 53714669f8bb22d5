/* TAP checks of the hypre tests on any number of ranks: a check passes
 * when it holds on every rank, rank 0 prints it (tap.h). */
#ifndef TILERAP_TEST_HYPRE_TAP_H
#define TILERAP_TEST_HYPRE_TAP_H

#include "hypre_test_util.h"
#include "tap.h"

#include <stdio.h>

static int g_rank, g_np;
static MPI_Comm g_comm;

#define OK(cond, ...) ok_all((cond), __VA_ARGS__)
static void ok_all(int cond, const char *fmt, ...)
{
  int g = th_all(g_comm, cond);
  if (g_rank == 0) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    tap_ok(g, "[np=%d] %s", g_np, buf);
  } else if (!g) {
    tap_failed++;
  }
}

#define DIAG(...) do { if (g_rank == 0) tap_diag(__VA_ARGS__); } while (0)

/* MPI up, the ranks known (main's first step). */
static void th_tap_init(int *argc, char ***argv)
{
  MPI_Init(argc, argv);
  g_comm = MPI_COMM_WORLD;
  MPI_Comm_rank(g_comm, &g_rank);
  MPI_Comm_size(g_comm, &g_np);
}

/* The plan on rank 0, MPI down; main's exit status (any rank's failure). */
static int th_tap_finish(void)
{
  int failed = tap_failed, gfailed = 0;
  MPI_Allreduce(&failed, &gfailed, 1, MPI_INT, MPI_MAX, g_comm);
  int rc = 0;
  if (g_rank == 0) rc = tap_done();
  MPI_Finalize();
  return g_rank == 0 ? rc : (gfailed ? 1 : 0);
}

/* A setup and solve with the hook on and fresh counters (read into *st);
 * checked: the hierarchy has at least 3 levels (*L). */
static inline HYPRE_Solver th_hook_on_run(th_problem *pb, th_amg_opts o, const char *tag, TileRAP_HypreStats *st, int *iters,
                                   double *setup_s, int *L)
{
  TileRAP_HypreEnable(1);
  TileRAP_HypreResetStats();
  HYPRE_Solver s = th_amg_run(pb, o, iters, setup_s);
  TileRAP_HypreGetStats(st);
  *L = th_num_levels(s);
  OK(*L >= 3, "%s: hierarchy has %d levels", tag, *L);
  return s;
}

#endif
