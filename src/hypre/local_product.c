/* The local product: the tilerap calls of a Galerkin product.
 *
 * Operands (tr_local_operands), one of three ways:
 *   devorder  hypre's diag blocks of A and P uploaded as they are (their
 *             structures stay on the device for hypre's order), A perhaps
 *             the previous product still there (kept_operand.c);
 *   direct    the same blocks become tiles on the device (CUDA engine, one
 *             block each, RT = P);
 *   otherwise the blocks are stitched into host tiles (local_blocks.c) and
 *             uploaded for the CUDA engine; the CPU engine's Galerkin
 *             products stitch them into sorted CSR instead, for one CSR
 *             plan (host_csr_route), except on one rank with C square
 *             and hypre's order, where C is made from the blocks as they
 *             are (host_order_product.c).
 * Products: one Galerkin plan when RT is P, else R^T (A P).  C comes back
 * (tr_local_product) as host CSR, or, one rank and square, straight into
 * hypre's diag arrays: in hypre's order made on the device (devorder) or
 * sorted with the diagonal first. */
#include "galerkin_stages.h"
#include "tuning.h"

#include <stdlib.h>

static tr_block block_of(hypre_CSRMatrix *M, const int32_t *map, int32_t offset)
{
  tr_block b = {hypre_CSRMatrixI(M), hypre_CSRMatrixJ(M), NULL, hypre_CSRMatrixData(M), map, offset};
  return b;
}

static int has_entries(hypre_CSRMatrix *M)
{
  return hypre_CSRMatrixI(M) && hypre_CSRMatrixNumNonzeros(M) > 0;
}

/* A hypre diag block's arrays to the device as they are (rows in hypre's
 * order), and its tiles made there; the values are dropped afterwards. */
static int upload_block(hypre_CSRMatrix *M, int32_t ncols, int32_t **di, int32_t **dj, tilerap_tile_matrix **T)
{
  const int32_t m = (int32_t)hypre_CSRMatrixNumRows(M);
  const int32_t *mi = (const int32_t *)hypre_CSRMatrixI(M), *mj = (const int32_t *)hypre_CSRMatrixJ(M);
  const size_t nnz = (size_t)mi[m];
  double *da = NULL;
  /* one element at least: an empty block still gets non-NULL arrays */
  int err = tilerap_device_malloc(((size_t)m + 1) * sizeof(int32_t), (void **)di);
  if (!err) err = tilerap_device_malloc((nnz + 1) * sizeof(int32_t), (void **)dj);
  if (!err) err = tilerap_device_malloc((nnz + 1) * sizeof(double), (void **)&da);
  if (!err) err = tilerap_memcpy(*di, TILERAP_MEM_DEVICE, mi, TILERAP_MEM_HOST, ((size_t)m + 1) * sizeof(int32_t));
  if (!err) err = tilerap_memcpy(*dj, TILERAP_MEM_DEVICE, mj, TILERAP_MEM_HOST, nnz * sizeof(int32_t));
  if (!err) err = tilerap_memcpy(da, TILERAP_MEM_DEVICE, hypre_CSRMatrixData(M), TILERAP_MEM_HOST, nnz * sizeof(double));
  if (!err) err = tilerap_tile_from_unsorted_csr_device_i32(m, ncols, *di, *dj, da, TILERAP_MEM_DEVICE, T);
  tilerap_device_free(da);
  return err;
}

static int upload_a(tr_galerkin *g)
{
  return upload_block(g->Ad, (int32_t)g->nAc, &g->d_ai, &g->d_aj, &g->dA);
}

/* A hypre diag block as device tiles, rows sorted there. */
static int direct_tiles(hypre_CSRMatrix *M, int32_t m, int32_t n, tilerap_tile_matrix **T)
{
  return tilerap_tile_from_unsorted_csr_device_i32(m, n, (const int32_t *)hypre_CSRMatrixI(M),
                                                   (const int32_t *)hypre_CSRMatrixJ(M), hypre_CSRMatrixData(M),
                                                   TILERAP_MEM_HOST, T);
}

/* The CPU engine's Galerkin products (TILERAP_PATH not "tiles") take
 * A_loc and P_full as sorted CSR and one CSR plan, as the PETSc types'
 * CPU route does: no tile form either way. */
static int host_csr_route(const tr_galerkin *g) { return !g->dev && g->galerkin && tr_knob_int(TR_KNOB_PATH) != 1; }

/* A_loc, P_full and (not Galerkin) R_loc stitched into host tiles, or
 * A_loc and P_full into host CSR (host_csr_route). */
static int host_operands(tr_galerkin *g)
{
  const HYPRE_Int nA = g->nA, nAc = g->nAc, nAo = g->nAo, ncP = g->ncP;
  const int csr = host_csr_route(g);
  int err;
  {
    tr_segment s = {0, (int32_t)nA, 1, {block_of(g->Ad, NULL, 0)}};
    if (nAo > 0 && has_entries(g->Ao)) s.b[s.nblocks++] = block_of(g->Ao, NULL, (int32_t)nAc);
    /* Galerkin: A square, with empty rows for the P_ext rows */
    int32_t rows = g->galerkin ? (int32_t)(nAc + nAo) : (int32_t)nA;
    if ((err = csr ? tr_csr_from_segments(rows, (int32_t)(nAc + nAo), 1, &s, &g->Acsr)
                   : tr_tiles_from_segments(rows, (int32_t)(nAc + nAo), 1, &s, &g->Aloc)))
      return err;
  }
  {
    tr_segment s[2] = {{0, (int32_t)nAc, 1, {block_of(g->Pd, NULL, 0)}}, {0}};
    int nseg = 1;
    if (g->nPo > 0 && has_entries(g->Po)) s[0].b[s[0].nblocks++] = block_of(g->Po, g->mapPQ, (int32_t)ncP);
    if (g->Pext && nAo > 0) {
      tr_block b = {hypre_CSRMatrixI(g->Pext), NULL, g->pext_col, hypre_CSRMatrixData(g->Pext), NULL, 0};
      s[1].row0 = (int32_t)nAc; s[1].nrows = (int32_t)nAo; s[1].nblocks = 1; s[1].b[0] = b;
      nseg = 2;
    }
    if ((err = csr ? tr_csr_from_segments((int32_t)(nAc + nAo), (int32_t)(ncP + g->nQ), nseg, s, &g->Pcsr)
                   : tr_tiles_from_segments((int32_t)(nAc + nAo), (int32_t)(ncP + g->nQ), nseg, s, &g->Pfull)))
      return err;
  }
  if (!g->galerkin) {
    tr_segment s = {0, (int32_t)nA, 1, {block_of(g->RTd, NULL, 0)}};
    if (g->nRo > 0 && has_entries(g->RTo)) s.b[s.nblocks++] = block_of(g->RTo, NULL, (int32_t)g->ncR);
    if ((err = tr_tiles_from_segments((int32_t)nA, (int32_t)(g->ncR + g->nRo), 1, &s, &g->Rloc))) return err;
  }
  tr_galerkin_phase(g, TR_PH_IN);
  if (g->dev) {
    if ((err = tilerap_tile_copy(g->Aloc, TILERAP_MEM_DEVICE, &g->dA))) return err;
    if ((err = tilerap_tile_copy(g->Pfull, TILERAP_MEM_DEVICE, &g->dP))) return err;
    if (g->Rloc && (err = tilerap_tile_copy(g->Rloc, TILERAP_MEM_DEVICE, &g->dR))) return err;
    tr_galerkin_phase(g, TR_PH_UPLOAD);
  }
  return TILERAP_SUCCESS;
}

int tr_local_operands(tr_galerkin *g)
{
  int err;
  if (g->host_order) return 0; /* hypre's blocks as they are */
  if (g->devorder) {
    if (!tr_kept_take(g) && (err = upload_a(g))) return tr_galerkin_engine_failed(g, err);
    if ((err = upload_block(g->Pd, (int32_t)g->ncP, &g->d_pi, &g->d_pj, &g->dP)))
      return tr_galerkin_engine_failed(g, err);
    tr_galerkin_phase(g, TR_PH_UPLOAD);
  } else if (g->direct) {
    if ((err = direct_tiles(g->Ad, (int32_t)g->nA, (int32_t)g->nAc, &g->dA)) ||
        (err = direct_tiles(g->Pd, (int32_t)g->nAc, (int32_t)g->ncP, &g->dP)))
      return tr_galerkin_engine_failed(g, err);
    tr_galerkin_phase(g, TR_PH_UPLOAD);
  } else if ((err = host_operands(g)))
    return tr_galerkin_engine_failed(g, err);
  return 0;
}

static void free_straight(tr_galerkin *g)
{
  hypre_TFree(g->s_di, HYPRE_MEMORY_HOST); hypre_TFree(g->s_dj, HYPRE_MEMORY_HOST); hypre_TFree(g->s_da, HYPRE_MEMORY_HOST);
  g->s_di = g->s_dj = NULL; g->s_da = NULL;
}

/* C in hypre's order, made on the device; C and that order stay there for
 * the next level.  *stale: A was a kept product that hypre has changed
 * (nothing downloaded). */
static int download_hypre_order(tr_galerkin *g, int *stale)
{
  const size_t nz = (size_t)g->dC->nnz;
  const HYPRE_Int ncR = g->ncR;
  int32_t *d_ci = NULL, *d_cj = NULL;
  double *d_ca = NULL;
  int64_t unreached = 0;
  uint64_t fp = 0;
  int err = tilerap_device_malloc(((size_t)ncR + 1) * sizeof(int32_t), (void **)&d_ci);
  if (!err) err = tilerap_device_malloc((nz + 1) * sizeof(int32_t), (void **)&d_cj);
  if (!err) err = tilerap_device_malloc((nz + 1) * sizeof(double), (void **)&d_ca);
  if (!err)
    err = tilerap_ptap_csr_encounter_order_device_i32(g->dC, (int32_t)g->nA, g->d_ai, g->d_aj, g->d_pi, g->d_pj, 1,
                                                      d_ci, d_cj, d_ca, &unreached);
  if (!err) err = tilerap_csr_fingerprint_i32((int32_t)ncR, d_ci, d_cj, d_ca, 1, TILERAP_MEM_DEVICE, &fp);
  g->t_dev_order = tr_hypre_wtime() - g->tp;
  if (g->speculative && !tr_kept_resolve(g)) { /* was A the kept product after all? */
    tilerap_device_free(d_ci); tilerap_device_free(d_cj); tilerap_device_free(d_ca);
    *stale = 1;
    return err;
  }
  if (!err) err = tilerap_memcpy(g->s_di, TILERAP_MEM_HOST, d_ci, TILERAP_MEM_DEVICE, ((size_t)ncR + 1) * sizeof(int32_t));
  if (!err) err = tilerap_memcpy(g->s_dj, TILERAP_MEM_HOST, d_cj, TILERAP_MEM_DEVICE, nz * sizeof(int32_t));
  if (!err) err = tilerap_memcpy(g->s_da, TILERAP_MEM_HOST, d_ca, TILERAP_MEM_DEVICE, nz * sizeof(double));
  tilerap_device_free(d_ca);
  if (!err) {
    if (unreached) /* not expected: C is the product of these structures */
      tr_hypre_note("rank %d: %lld entries of C outside the product walk (kept ascending)", g->rank,
                    (long long)unreached);
    tr_kept_store(g, d_ci, d_cj, fp);
    g->ordered = 1;
  } else {
    tilerap_device_free(d_ci);
    tilerap_device_free(d_cj);
  }
  return err;
}

/* One rank, square: C is hypre's diag block as it stands (diagonal first),
 * made on the device and written into hypre's own arrays.  A row without
 * a diagonal (hypre then adds an explicit zero) leaves g->straight unset:
 * the assembly does it.  0, or 1 failed; *stale as above. */
static int download_straight(tr_galerkin *g, int *stale)
{
  const int64_t nnz = g->dC->nnz;
  int err;
  g->s_di = hypre_TAlloc(HYPRE_Int, g->ncR + 1, HYPRE_MEMORY_HOST);
  g->s_dj = hypre_TAlloc(HYPRE_Int, nnz > 0 ? nnz : 1, HYPRE_MEMORY_HOST);
  g->s_da = hypre_TAlloc(HYPRE_Complex, nnz > 0 ? nnz : 1, HYPRE_MEMORY_HOST);
  if (!g->s_di || !g->s_dj || !g->s_da) err = TILERAP_ERR_NOMEM;
  else if (g->devorder) {
    err = download_hypre_order(g, stale);
    if (*stale) return 0;
  } else
    err = tilerap_tile_to_csr_device_diag_first_i32(g->dC, (int32_t *)g->s_di, (int32_t *)g->s_dj, g->s_da,
                                                    TILERAP_MEM_HOST);
  if (!err) {
    g->straight = 1;
    return 0;
  }
  free_straight(g);
  return err == TILERAP_ERR_STRUCTURE ? 0 : tr_galerkin_engine_failed(g, err);
}

/* Products and C back.  CUDA engine: operands went up once, AP stays on
 * the device, only C comes down. */
static int products(tr_galerkin *g, int *stale)
{
  const int dev = g->dev;
  const tilerap_tile_matrix *wA = dev ? g->dA : g->Aloc, *wP = dev ? g->dP : g->Pfull, *wR = dev ? g->dR : g->Rloc;
  tilerap_tile_matrix **wC = dev ? &g->dC : &g->Call;
  int err;
  if (g->host_order) {
    g->path = TILERAP_PATH_CSR;
    g->a_fill = g->p_fill = -1;
    if (tr_host_order_product(g)) return 1;
    tr_galerkin_phase(g, TR_PH_ENGINE);
    return 0;
  }
  if (g->Acsr) { /* host_csr_route: C made as CSR */
    tilerap_csr_plan plan = NULL;
    g->path = TILERAP_PATH_CSR;
    g->a_fill = g->p_fill = -1;
    err = tilerap_csr_plan_create(TILERAP_CSR_PTAP, g->Acsr, g->Pcsr, &plan, &g->C);
    tilerap_csr_plan_destroy(&plan);
    if (err) return tr_galerkin_engine_failed(g, err);
    tr_galerkin_phase(g, TR_PH_ENGINE); /* (no kept A on the CPU: nothing speculative) */
    g->c_nnz = g->C->rowptr[g->C->m];
    return 0;
  }
  if (g->galerkin) {
    if ((err = tilerap_ptap_path(wA, wP, &g->opt, &g->path, &g->a_fill, &g->p_fill)) ||
        (err = tilerap_ptap(wA, wP, &g->opt, wC)))
      return tr_galerkin_engine_failed(g, err);
  } else if ((err = tilerap_tile_transpose(wR, &g->Rt, NULL)) || (err = tilerap_spgemm(wA, wP, &g->opt, &g->AP)) ||
             (err = tilerap_spgemm(g->Rt, g->AP, &g->opt, wC)))
    return tr_galerkin_engine_failed(g, err);
  tr_galerkin_phase(g, TR_PH_ENGINE);
  if (dev && g->straight_ok && g->dC->nnz <= INT32_MAX) {
    if (download_straight(g, stale)) return 1;
    if (*stale) return 0;
  }
  /* not resolved on the straight path: before C is used */
  if (g->speculative && !tr_kept_resolve(g)) {
    *stale = 1;
    return 0;
  }
  if (dev && !g->straight) { /* CSR made on the device, written straight into host arrays */
    if ((err = tilerap_csr_create(g->dC->m, g->dC->n, g->dC->nnz, &g->C)) ||
        (err = tilerap_tile_to_csr_device(g->dC, g->C->rowptr, g->C->colidx, g->C->val, TILERAP_MEM_HOST)))
      return tr_galerkin_engine_failed(g, err);
  } else if (!dev && (err = tilerap_tile_to_csr_alloc(g->Call, &g->C)))
    return tr_galerkin_engine_failed(g, err);
  if (dev) {
    g->c_nnz = g->straight ? (int64_t)g->s_di[g->ncR] : g->dC->nnz;
    tr_galerkin_phase(g, TR_PH_DOWNLOAD);
  } else
    g->c_nnz = g->C->rowptr[g->C->m];
  return 0;
}

int tr_local_product(tr_galerkin *g)
{
  int stale = 0;
  if (products(g, &stale)) return 1;
  if (!stale) return 0;
  /* C came from a kept A that hypre has changed: A uploaded, products
   * again (once: the check is resolved by now) */
  tr_hypre_note("rank %d: the previous product was changed before its next use; uploaded again", g->rank);
  free_straight(g);
  tilerap_tile_destroy(&g->dC); tilerap_tile_destroy(&g->dA);
  tilerap_device_free(g->d_ai); tilerap_device_free(g->d_aj);
  g->d_ai = g->d_aj = NULL;
  int err = upload_a(g);
  if (err) return tr_galerkin_engine_failed(g, err);
  tr_galerkin_phase(g, TR_PH_UPLOAD);
  stale = 0; /* the check is resolved: this pass cannot be stale */
  return products(g, &stale);
}

void tr_local_free_tiles(tr_galerkin *g)
{
  tilerap_tile_destroy(&g->Aloc); tilerap_tile_destroy(&g->Pfull); tilerap_tile_destroy(&g->Rloc);
  tilerap_csr_destroy(&g->Acsr); tilerap_csr_destroy(&g->Pcsr);
  tilerap_tile_destroy(&g->Rt); tilerap_tile_destroy(&g->AP); tilerap_tile_destroy(&g->Call);
  tilerap_tile_destroy(&g->dA); tilerap_tile_destroy(&g->dP); tilerap_tile_destroy(&g->dR);
  tilerap_tile_destroy(&g->dC);
}

void tr_local_free(tr_galerkin *g)
{
  tr_local_free_tiles(g);
  tilerap_csr_destroy(&g->C);
  free_straight(g);
  tilerap_device_free(g->d_ai); tilerap_device_free(g->d_aj);
  tilerap_device_free(g->d_pi); tilerap_device_free(g->d_pj);
}
