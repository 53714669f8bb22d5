/* The product kept on the GPU for the next level (one rank, CUDA engine,
 * hypre's order).  BoomerAMG's next Galerkin product takes the C just
 * returned as its A: its tiles and its structure in hypre's stored order
 * stay on the device, with the arrays handed to hypre and a content
 * fingerprint of them (positions within rows included).  The next call
 * uses them only if A's diag block is those very arrays and their
 * fingerprint, recomputed on the host, is unchanged; anything else frees
 * them and uploads A as usual. */
#include "galerkin_stages.h"

#include <stdlib.h>
#include <string.h>

static tr_kept g_kept;
static pthread_mutex_t g_kept_lock = PTHREAD_MUTEX_INITIALIZER; /* setups on several threads */

static void tr_kept_free(tr_kept *k)
{
  tilerap_tile_destroy(&k->C);
  tilerap_device_free(k->ci);
  tilerap_device_free(k->cj);
  memset(k, 0, sizeof *k);
}

void tr_hypre_drop_kept(void)
{
  pthread_mutex_lock(&g_kept_lock);
  tr_kept k = g_kept;
  memset(&g_kept, 0, sizeof g_kept);
  pthread_mutex_unlock(&g_kept_lock);
  tr_kept_free(&k);
}

void tr_kept_begin(tr_kept *in)
{
  pthread_mutex_lock(&g_kept_lock);
  *in = g_kept;
  memset(&g_kept, 0, sizeof g_kept);
  pthread_mutex_unlock(&g_kept_lock);
}

void tr_kept_end(tr_kept *in, tr_kept *out, int ok)
{
  static int at_exit = 0;
  tr_kept_free(in); /* whatever this call did not take over */
  if (!ok) tr_kept_free(out);
  else if (out->C) {
    /* after the first product is kept, so after CUDA set up its own exit
     * handler: this one runs first, with the device still there */
    if (!at_exit) at_exit = atexit(tr_hypre_drop_kept) == 0;
    pthread_mutex_lock(&g_kept_lock);
    tr_kept old = g_kept; /* another thread's, if setups run concurrently */
    g_kept = *out;
    pthread_mutex_unlock(&g_kept_lock);
    tr_kept_free(&old);
  }
}

/* Ad is made of the kept product's arrays (same pointers and sizes): a
 * candidate, to be proven unchanged by its fingerprint. */
static int tr_kept_candidate(const tr_kept *k, hypre_CSRMatrix *Ad)
{
  return k->C && hypre_CSRMatrixNumRows(Ad) == k->m && hypre_CSRMatrixNumCols(Ad) == k->m &&
         hypre_CSRMatrixI(Ad) == k->hi && hypre_CSRMatrixJ(Ad) == k->hj && hypre_CSRMatrixData(Ad) == k->ha &&
         hypre_CSRMatrixI(Ad)[k->m] == k->nnz;
}

/* The host fingerprint of a candidate runs on a thread of its own while
 * the device computes with the kept tiles (speculatively: a changed A
 * throws that work away and starts again from an upload). */
static void *tr_kept_check_thread(void *arg)
{
  tr_kept_check *c = (tr_kept_check *)arg;
  const double t0 = tr_hypre_wtime();
#ifdef _OPENMP
  /* off the cores of this call's thread and of the staging copies, which
   * upload P meanwhile (sharing every core slowed the copies down, as it
   * did with the row-order pass) */
  const int maxt = omp_get_max_threads();
  omp_set_num_threads(maxt - 5 >= maxt / 2 ? maxt - 5 : (maxt / 2 > 0 ? maxt / 2 : 1));
#endif
  c->err = tilerap_csr_fingerprint_i32((int32_t)c->k->m, (const int32_t *)c->k->hi, (const int32_t *)c->k->hj,
                                       c->k->ha, 1, TILERAP_MEM_HOST, &c->fp);
#ifdef _OPENMP
  omp_set_num_threads(maxt); /* this may be the caller's thread (no thread could be made) */
#endif
  c->seconds = tr_hypre_wtime() - t0;
  return NULL;
}

int tr_kept_take(tr_galerkin *g)
{
  tr_kept *k = g->kept_in;
  if (!tr_kept_candidate(k, g->Ad)) {
    tr_kept_free(k); /* not needed: its device memory goes back first */
    return 0;
  }
  /* its tiles are still on the device: used at once, while a thread
   * proves A unchanged */
  g->check.k = k;
  if (pthread_create(&g->check_th, NULL, tr_kept_check_thread, &g->check) == 0) g->check_on = 1;
  else tr_kept_check_thread(&g->check);
  g->dA = k->C; g->d_ai = k->ci; g->d_aj = k->cj;
  k->C = NULL; k->ci = k->cj = NULL;
  g->speculative = 1;
  return 1;
}

void tr_kept_join(tr_galerkin *g)
{
  if (g->check_on) pthread_join(g->check_th, NULL);
  g->check_on = 0;
}

int tr_kept_resolve(tr_galerkin *g)
{
  g->speculative = 0;
  tr_kept_join(g);
  const int same = !g->check.err && g->check.fp == g->check.k->fp;
  tr_hypre_count_kept(same ? 1 : -1);
  return same;
}

void tr_kept_store(tr_galerkin *g, int32_t *d_ci, int32_t *d_cj, uint64_t fp)
{
  tr_kept *k = g->kept_out;
  k->C = g->dC; k->ci = d_ci; k->cj = d_cj;
  k->hi = g->s_di; k->hj = g->s_dj; k->ha = g->s_da;
  k->m = g->ncR; k->nnz = (HYPRE_Int)g->dC->nnz; k->fp = fp;
  g->dC = NULL; /* now kept_out's; freed if the call fails after all */
}
