/* Products of device CSR operands with 32-bit indices (tilerap_device.h):
 * the CSR path's products (csr_cuda_product.cu) on the caller's arrays,
 * C into the caller's arrays.  No tile form, so neither the conversion of
 * the operands nor C's way back, and none of the tile copies' memory.
 *
 * A*B: one product over A and B as they are.  A^T*B: over a transposed
 * view of A (columns and each entry's position in A's values).  P^T A P:
 * A P first (its structure and values kept here), then P^T (A P) over the
 * transposed view of P, whose values the caller may take as P's stored
 * transpose (hypre keeps one for its restriction).  Numeric runs repeat
 * the products' value passes on the plan's structures: no allocation, no
 * wait for the device.
 *
 * A P^T A P whose operands fill their 16 x 16 tiles densely (classical
 * AMG's coarse levels: rows of hundreds of entries) goes over tiles
 * instead: A and P converted, a tile plan, C written back; numeric runs
 * move values through slot maps made once (tr_dcsr_tiles_pay, measured:
 * design.md, "Dense products over tiles"). */
#include "tile_internal.h"
#include "tilerap_device.h"
#include "tuning.h"
#ifdef TILERAP_HAVE_CUDA
#include "engine_cuda.h"
#endif
#include <stdlib.h>
#include <string.h>

struct tilerap_csr_device_product_s {
  tilerap_csr_kind kind;
  unsigned flags;
  int filled;
  tilerap_csr_device_i32 a, b;    /* the operands given to create */
  int32_t cm, cn;
  int64_t annz, bnnz, cnnz, macs, a_longest;
#ifdef TILERAP_HAVE_CUDA
  int64_t *arp, *brp;             /* 64-bit row pointers */
  int64_t *trp, *tvidx;           /* transposed operand: A^T or P^T */
  int32_t *tcol;
  int32_t tm;                     /* its rows */
  int64_t tnnz;
  tr_cuda_csr_product *ap, *c;    /* P^T A P: A P and P^T (A P); else c */
  double *apval;
  int64_t *cpos;                  /* C's sorted entry -> its place in the caller's layout, or NULL */
  int ap_recorded;                /* A P's rows filled sorted for its record */
  int tiled;                      /* P^T A P over tiles */
  double a_fill, b_fill;          /* entries per stored tile (0: not measured) */
  tilerap_tile_matrix *ta, *tb, *tc;
  tilerap_ptap_plan plan;
  int64_t *aslot, *bslot, *cslot; /* the caller's entries of A, P, C -> tile values */
#endif
};

static int tr_check_operand(const char *name, const tilerap_csr_device_i32 *X)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "%s is NULL", name);
  if (X->m < 0 || X->n < 0) return tilerap_set_error(TILERAP_ERR_SIZE, "%s is %d x %d", name, X->m, X->n);
  if (!X->rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "%s's row pointers are NULL", name);
  return TILERAP_SUCCESS;
}

static int tr_check_shapes(tilerap_csr_kind kind, const tilerap_csr_device_i32 *A, const tilerap_csr_device_i32 *B)
{
  switch (kind) {
  case TILERAP_CSR_AB:
    if (A->n != B->m) return tilerap_set_error(TILERAP_ERR_SIZE, "A*B: A is %d x %d, B %d x %d", A->m, A->n, B->m, B->n);
    return TILERAP_SUCCESS;
  case TILERAP_CSR_ATB:
    if (A->m != B->m) return tilerap_set_error(TILERAP_ERR_SIZE, "A^T*B: A is %d x %d, B %d x %d", A->m, A->n, B->m, B->n);
    return TILERAP_SUCCESS;
  case TILERAP_CSR_PTAP:
    if (A->m != A->n || A->n != B->m)
      return tilerap_set_error(TILERAP_ERR_SIZE, "P^T*A*P: A is %d x %d, P %d x %d", A->m, A->n, B->m, B->n);
    return TILERAP_SUCCESS;
  }
  return tilerap_set_error(TILERAP_ERR_INVALID, "unknown product kind %d", (int)kind);
}

void tilerap_csr_device_product_destroy(tilerap_csr_device_product *px)
{
  if (!px || !*px) return;
#ifdef TILERAP_HAVE_CUDA
  tilerap_csr_device_product X = *px;
  tr_cuda_csr_product_destroy(X->ap);
  tr_cuda_csr_product_destroy(X->c);
  tr_cuda_free(X->arp); tr_cuda_free(X->brp);
  tr_cuda_free(X->trp); tr_cuda_free(X->tcol); tr_cuda_free(X->tvidx);
  tr_cuda_free(X->apval);
  tr_cuda_free(X->cpos);
  tilerap_ptap_plan_destroy(&X->plan);
  tilerap_tile_destroy(&X->ta); tilerap_tile_destroy(&X->tb); tilerap_tile_destroy(&X->tc);
  tr_cuda_free(X->aslot); tr_cuda_free(X->bslot); tr_cuda_free(X->cslot);
#endif
  free(*px);
  *px = NULL;
}

#ifdef TILERAP_HAVE_CUDA
/* Numeric runs from a record of each C entry's products where that pays
 * (tr_csr_record_pays), as the tile plans' CSR path does (csr_path.c);
 * without device memory for it, the hash runs. */
static int tr_keep_record(tr_cuda_csr_product *p, int64_t macs, int64_t cnnz, int64_t rows, int64_t annz,
                          int64_t bnnz, int *kept)
{
  *kept = 0;
  if (!tr_csr_record_pays(macs, cnnz, rows)) return TILERAP_SUCCESS;
  const int err = tr_cuda_csr_product_keep_record(p, annz, bnnz, kept);
  return err == TILERAP_ERR_DEVICE_NOMEM ? TILERAP_SUCCESS : err;
}

/* P^T A P over tiles or over CSR rows: TILERAP_PATH, and under "auto"
 * the operands' measured entries per tile, for products kept for numeric
 * runs: over tiles a first product costs more (the conversions, the tile
 * plan) and re-runs less (design.md, "Dense products over tiles") */
static int tr_choose_tiles(tilerap_csr_device_product X, const tr_dcsr_op *ops)
{
  const int path = tr_knob_int(TR_KNOB_PATH); /* 0 auto, 1 tiles, 2 csr */
  double fill[2] = {0, 0};
  X->tiled = path == 1 && X->annz > 0 && X->bnnz > 0; /* an empty operand: nothing to convert */
  if (path != 0 || X->annz <= 0 || X->bnnz <= 0 || !(X->flags & TILERAP_CSR_REUSE)) return TILERAP_SUCCESS;
  const int err = tr_cuda_dcsr_fills(ops, 2, fill);
  if (err) return err;
  X->a_fill = fill[0];
  X->b_fill = fill[1];
  X->tiled = tr_dcsr_tiles_pay(X->a_fill, X->b_fill);
  return TILERAP_SUCCESS;
}

/* A and P as tiles, the plan, C's tiles and first values, and for numeric
 * runs the slots of A's and P's entries.  TILERAP_ERR_UNSORTED: a row
 * repeats a column (the tiles take none; the CSR rows sum them). */
static int tr_tiles_create(tilerap_csr_device_product X, const tilerap_csr_device_i32 *A,
                           const tilerap_csr_device_i32 *P)
{
  tilerap_options opt;
  tilerap_options_default(&opt);
  opt.engine = TILERAP_ENGINE_CUDA;
  opt.plan_values = 1; /* C's first values made by the plan */
  tilerap_ptap_info info;
  int err;
  if ((err = tilerap_tile_from_unsorted_csr_device_i32(A->m, A->n, A->rowptr, A->colidx, A->val, TILERAP_MEM_DEVICE,
                                                       &X->ta)) ||
      (err = tilerap_tile_from_unsorted_csr_device_i32(P->m, P->n, P->rowptr, P->colidx, P->val, TILERAP_MEM_DEVICE,
                                                       &X->tb)) ||
      (err = tilerap_ptap_plan_create(X->ta, X->tb, &opt, &X->plan, &X->tc)) ||
      (err = tilerap_ptap_plan_info(X->plan, &info)))
    return err;
  X->cnnz = X->tc->nnz;
  X->macs = (info.ap.flops + info.ptap.flops) / 2;
  if (!(X->flags & TILERAP_CSR_REUSE)) return TILERAP_SUCCESS;
  if ((err = tr_cuda_malloc((size_t)X->annz * sizeof(int64_t), (void **)&X->aslot)) ||
      (err = tr_cuda_malloc((size_t)X->bnnz * sizeof(int64_t), (void **)&X->bslot)) ||
      (err = tr_cuda_tile_slots(X->ta, A->m, A->rowptr, A->colidx, X->annz, X->aslot)))
    return err;
  return tr_cuda_tile_slots(X->tb, P->m, P->rowptr, P->colidx, X->bnnz, X->bslot);
}

static void tr_tiles_drop(tilerap_csr_device_product X)
{
  tilerap_ptap_plan_destroy(&X->plan);
  tilerap_tile_destroy(&X->ta); tilerap_tile_destroy(&X->tb); tilerap_tile_destroy(&X->tc);
  tr_cuda_free(X->aslot); tr_cuda_free(X->bslot);
  X->aslot = X->bslot = NULL;
  X->tiled = 0;
  X->cnnz = X->macs = 0;
  X->a_fill = X->b_fill = 0; /* the path reports no fills: not "too sparse" */
}
#endif

int tilerap_csr_device_product_create_i32(tilerap_csr_kind kind, const tilerap_csr_device_i32 *A,
                                          const tilerap_csr_device_i32 *B, unsigned flags,
                                          tilerap_csr_device_product *out, int64_t *c_nnz)
{
  int err;
  if (!out) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_create_i32: no product to return");
  *out = NULL;
  if ((err = tr_check_operand("A", A)) || (err = tr_check_operand("B", B)) || (err = tr_check_shapes(kind, A, B)))
    return err;
  if (flags & ~TILERAP_CSR_REUSE) return tilerap_set_error(TILERAP_ERR_INVALID, "unknown create flags 0x%x", flags);
  const int32_t cm = kind == TILERAP_CSR_AB ? A->m : kind == TILERAP_CSR_ATB ? A->n : B->n, cn = B->n;
#ifndef TILERAP_HAVE_CUDA
  (void)c_nnz; (void)cm; (void)cn;
  return tilerap_set_error(TILERAP_ERR_ENGINE, "device CSR products need the CUDA engine (built without CUDA)");
#else
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA))
    return tilerap_set_error(TILERAP_ERR_ENGINE, "device CSR products need the CUDA engine and a visible GPU");
  tilerap_csr_device_product X = tilerap_host_calloc(1, sizeof *X);
  if (!X) return TILERAP_ERR_NOMEM;
  X->kind = kind; X->flags = flags; X->a = *A; X->b = *B; X->cm = cm; X->cn = cn;
  int64_t apnnz = 0, macs_ap = 0;
  tr_dcsr_op ops[2] = {{"A", A->m, A->n, A->rowptr, A->colidx, 0, 0, NULL},
                       {"B", B->m, B->n, B->rowptr, B->colidx, 0, 0, NULL}};
  if ((err = tr_cuda_dcsr_operands(ops, 2))) goto fail;
  X->annz = ops[0].nnz; X->arp = ops[0].rp64; X->a_longest = ops[0].longest;
  X->bnnz = ops[1].nnz; X->brp = ops[1].rp64;
  if (kind == TILERAP_CSR_AB) {
    err = tr_cuda_csr_product_create(cm, cn, X->arp, A->colidx, X->annz, X->brp, B->colidx, NULL, &X->c, &X->cnnz,
                                     &X->macs);
  } else if (kind == TILERAP_CSR_ATB) {
    X->tm = A->n; X->tnnz = X->annz;
    if (!(err = tr_cuda_dcsr_transpose(A->m, A->n, X->arp, A->colidx, X->annz, &X->trp, &X->tcol, &X->tvidx)))
      err = tr_cuda_csr_product_create(cm, cn, X->trp, X->tcol, X->annz, X->brp, B->colidx, NULL, &X->c, &X->cnnz,
                                       &X->macs);
  } else {
    X->tm = B->n; X->tnnz = X->bnnz;
    if ((err = tr_cuda_dcsr_transpose(B->m, B->n, X->brp, B->colidx, X->bnnz, &X->trp, &X->tcol, &X->tvidx)) ||
        (err = tr_choose_tiles(X, ops)))
      goto fail;
    /* a row repeating a column (the tiles take none), or under "auto" no
     * device memory for the tiles: the CSR rows, which need less */
    if (X->tiled && (err = tr_tiles_create(X, A, B)) &&
        (err == TILERAP_ERR_UNSORTED || (err == TILERAP_ERR_DEVICE_NOMEM && tr_knob_int(TR_KNOB_PATH) == 0)))
      tr_tiles_drop(X);
    else if (X->tiled && err) goto fail;
    if (X->tiled) goto made;
    if ((err = tr_cuda_csr_product_create(A->m, B->n, X->arp, A->colidx, X->annz, X->brp, B->colidx, NULL, &X->ap,
                                          &apnnz, &macs_ap)) ||
        ((flags & TILERAP_CSR_REUSE) &&
         (err = tr_keep_record(X->ap, macs_ap, apnnz, A->m, X->annz, X->bnnz, &X->ap_recorded))) ||
        (err = tr_cuda_malloc((size_t)(apnnz ? apnnz : 1) * sizeof(double), (void **)&X->apval)) ||
        (err = tr_cuda_csr_product_fill(X->ap, A->val, NULL, B->val, NULL, X->apval, X->ap_recorded)) ||
        (err = tr_cuda_csr_product_create(cm, cn, X->trp, X->tcol, X->bnnz, tr_cuda_csr_product_rowptr(X->ap),
                                          tr_cuda_csr_product_colidx(X->ap), NULL, &X->c, &X->cnnz, &X->macs)))
      goto fail;
    X->macs += macs_ap;
  }
  int c_recorded = 0; /* C is always filled sorted */
  if (!err && (flags & TILERAP_CSR_REUSE))
    err = tr_keep_record(X->c, X->macs - macs_ap, X->cnnz, cm, kind == TILERAP_CSR_PTAP ? X->bnnz : X->annz,
                         kind == TILERAP_CSR_PTAP ? apnnz : X->bnnz, &c_recorded);
  if (err) goto fail;
made:
  if (X->cnnz > INT32_MAX) {
    err = tilerap_set_error(TILERAP_ERR_OVERFLOW, "C has %lld entries: beyond 32-bit row pointers", (long long)X->cnnz);
    goto fail;
  }
  if (c_nnz) *c_nnz = X->cnnz;
  *out = X;
  return TILERAP_SUCCESS;
fail:
  tilerap_csr_device_product_destroy(&X);
  return err;
#endif
}

#ifdef TILERAP_HAVE_CUDA
/* the operands of the product that makes C, as it reads them: A (or its
 * transposed view) and B, or for P^T A P the view of P and A P */
static void tr_c_operands(const tilerap_csr_device_product X, const double *aval, const double *bval,
                          const double **l, const int64_t **lidx, const double **r)
{
  *l = X->kind == TILERAP_CSR_PTAP ? bval : aval;
  *lidx = X->kind == TILERAP_CSR_AB ? NULL : X->tvidx;
  *r = X->kind == TILERAP_CSR_PTAP ? X->apval : bval;
}
#endif

#ifdef TILERAP_HAVE_CUDA
/* C's tiles into the caller's arrays; for numeric runs the slot of each of
 * its entries, whichever layout they were written in */
static int tr_tiles_fill(tilerap_csr_device_product X, int diag_first, int32_t *rp, int32_t *col, double *val)
{
  if (diag_first && X->cnnz == 0 && X->cm > 0) /* as the CSR rows report it, before anything is written */
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "diagonal first: C has no entries, row 0 no diagonal");
  if (X->cnnz == 0) diag_first = 0; /* no rows, or no entries: the layouts agree */
  int err = diag_first ? tilerap_tile_to_csr_device_diag_first_i32(X->tc, rp, col, val, TILERAP_MEM_DEVICE)
                       : tilerap_tile_to_csr_device_i32(X->tc, rp, col, val, TILERAP_MEM_DEVICE);
  tr_cuda_free(X->cslot);
  X->cslot = NULL;
  if (!err && (X->flags & TILERAP_CSR_REUSE) && X->cnnz > 0 &&
      !(err = tr_cuda_malloc((size_t)X->cnnz * sizeof(int64_t), (void **)&X->cslot)))
    err = tr_cuda_tile_slots(X->tc, X->cm, rp, col, X->cnnz, X->cslot);
  if (!err) err = tr_cuda_wait("device CSR product over tiles"); /* C complete on return */
  if (!err) X->filled = 1;
  return err;
}
#endif

static int tr_same_operand(const tilerap_csr_device_i32 *X, const tilerap_csr_device_i32 *Y)
{
  return X && X->m == Y->m && X->n == Y->n && X->rowptr == Y->rowptr && X->colidx == Y->colidx && X->val == Y->val;
}

int tilerap_csr_device_product_fill_i32(tilerap_csr_device_product X, const tilerap_csr_device_i32 *A,
                                        const tilerap_csr_device_i32 *B, unsigned flags, int32_t *c_rowptr,
                                        int32_t *c_colidx, double *c_val)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_fill_i32: product is NULL");
  if (X->filled) return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_csr_device_product_fill_i32: C already filled");
  if (!A || !B) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_fill_i32: an operand is NULL");
  if (!tr_same_operand(A, &X->a) || !tr_same_operand(B, &X->b))
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "tilerap_csr_device_product_fill_i32: operands other than the "
                                                    "product's (arrays or shapes differ from those given to create)");
  if (!c_rowptr || (X->cnnz > 0 && !c_colidx))
    return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_fill_i32: C's arrays are NULL");
  if (flags & ~TILERAP_CSR_DIAG_FIRST) return tilerap_set_error(TILERAP_ERR_INVALID, "unknown flags 0x%x", flags);
  if ((flags & TILERAP_CSR_DIAG_FIRST) && X->cm != X->cn)
    return tilerap_set_error(TILERAP_ERR_SIZE, "diagonal first: C is %d x %d, not square", X->cm, X->cn);
#ifndef TILERAP_HAVE_CUDA
  (void)c_val;
  return TILERAP_ERR_ENGINE;
#else
  const int diag_first = (flags & TILERAP_CSR_DIAG_FIRST) != 0;
  if (X->tiled) return tr_tiles_fill(X, diag_first, c_rowptr, c_colidx, c_val);
  /* operands without values give zeros (the kernels read NULL values as 0) */
  const int values = c_val != NULL;
  double *cv = NULL;
  int err = TILERAP_SUCCESS;
  /* sorted values go straight to c_val unless they move to put the diagonal first */
  if (values) {
    if (!diag_first) cv = c_val;
    else if ((err = tr_cuda_malloc((size_t)(X->cnnz ? X->cnnz : 1) * sizeof(double), (void **)&cv))) return err;
  }
  const double *l, *r;
  const int64_t *lidx;
  tr_c_operands(X, X->a.val, X->b.val, &l, &lidx, &r);
  err = tr_cuda_csr_product_fill(X->c, l, lidx, r, NULL, cv, 1);
  /* numeric runs write through the map where the layout moved entries */
  if (!err && diag_first && (X->flags & TILERAP_CSR_REUSE) && !X->cpos)
    err = tr_cuda_malloc((size_t)(X->cnnz ? X->cnnz : 1) * sizeof(int64_t), (void **)&X->cpos);
  if (!err)
    err = tr_cuda_dcsr_write(X->cm, X->cnnz, tr_cuda_csr_product_rowptr(X->c), tr_cuda_csr_product_colidx(X->c), cv,
                             diag_first, c_rowptr, c_colidx, values ? c_val : NULL, diag_first ? X->cpos : NULL);
  if (err || !diag_first) { tr_cuda_free(X->cpos); X->cpos = NULL; } /* no map unless this fill wrote through it */
  if (cv != c_val) tr_cuda_free(cv);
  if (!err) X->filled = 1;
  return err;
#endif
}

int tilerap_csr_device_product_numeric_i32(tilerap_csr_device_product X, const tilerap_csr_device_i32 *A,
                                           const tilerap_csr_device_i32 *B, double *c_val)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_numeric_i32: product is NULL");
  if (!(X->flags & TILERAP_CSR_REUSE))
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_csr_device_product_numeric_i32: created without "
                                                  "TILERAP_CSR_REUSE");
  if (!X->filled)
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_csr_device_product_numeric_i32: C not filled yet");
  if (!A || !B || A->m != X->a.m || A->n != X->a.n || A->rowptr != X->a.rowptr || A->colidx != X->a.colidx ||
      B->m != X->b.m || B->n != X->b.n || B->rowptr != X->b.rowptr || B->colidx != X->b.colidx)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "tilerap_csr_device_product_numeric_i32: operands other than the "
                                                    "product's (structure arrays or shapes differ)");
  if (X->cnnz > 0 && !c_val)
    return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_numeric_i32: c_val is NULL");
  /* an operand without entries may have no value array (PETSc's empty blocks) */
  if ((!A->val && X->annz > 0) || (!B->val && X->bnnz > 0))
    return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_numeric_i32: an operand has no values");
  X->a.val = A->val; /* the transposed operand's values come from the latest run's arrays */
  X->b.val = B->val;
#ifndef TILERAP_HAVE_CUDA
  return TILERAP_ERR_ENGINE;
#else
  int err;
  if (X->tiled) {
    if ((err = tr_cuda_scatter_values(A->val, X->aslot, X->annz, X->ta->val)) ||
        (err = tr_cuda_scatter_values(B->val, X->bslot, X->bnnz, X->tb->val)) ||
        (err = tilerap_ptap_numeric(X->plan, X->ta, X->tb, X->tc)))
      return err;
    return X->cnnz > 0 ? tr_cuda_gather_values(X->tc->val, X->cslot, X->cnnz, c_val, NULL) : TILERAP_SUCCESS;
  }
  if (X->kind == TILERAP_CSR_PTAP &&
      (err = tr_cuda_csr_product_numeric(X->ap, A->val, NULL, B->val, NULL, X->apval, NULL)))
    return err;
  const double *l, *r;
  const int64_t *lidx;
  tr_c_operands(X, A->val, B->val, &l, &lidx, &r);
  return tr_cuda_csr_product_numeric(X->c, l, lidx, r, NULL, c_val, X->cpos);
#endif
}

int tilerap_csr_device_product_transpose_i32(tilerap_csr_device_product X, int32_t *rowptr, int32_t *colidx,
                                             double *val)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_transpose_i32: product is NULL");
  if (X->kind == TILERAP_CSR_AB)
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_csr_device_product_transpose_i32: A*B keeps no transpose");
  if (!rowptr) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_transpose_i32: rowptr is NULL");
#ifndef TILERAP_HAVE_CUDA
  (void)colidx; (void)val;
  return TILERAP_ERR_ENGINE;
#else
  if (X->tnnz > 0 && !colidx)
    return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_transpose_i32: colidx is NULL");
  const double *src = X->kind == TILERAP_CSR_ATB ? X->a.val : X->b.val;
  return tr_cuda_dcsr_view_write(X->tm, X->tnnz, X->trp, X->tcol, X->tvidx, src, rowptr, colidx, val);
#endif
}

int tilerap_csr_device_product_info(tilerap_csr_device_product X, int32_t *c_m, int32_t *c_n, int64_t *c_nnz,
                                    int64_t *flops, int64_t *a_longest_row)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_info: product is NULL");
  if (c_m) *c_m = X->cm;
  if (c_n) *c_n = X->cn;
  if (c_nnz) *c_nnz = X->cnnz;
  if (flops) *flops = 2 * X->macs;
  if (a_longest_row) *a_longest_row = X->a_longest;
  return TILERAP_SUCCESS;
}

int tilerap_csr_device_product_record_info(tilerap_csr_device_product X, int64_t *recorded_macs,
                                           int64_t *record_bytes)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_record_info: product is NULL");
  int64_t macs = 0, bytes = 0;
#ifdef TILERAP_HAVE_CUDA
  for (int k = 0; k < 2; k++) { /* A P (P^T A P), then C */
    const tr_cuda_csr_product *p = k ? X->c : X->ap;
    int64_t b = 0;
    if (p) macs += tr_cuda_csr_product_recorded(p, &b);
    bytes += b;
  }
#endif
  if (recorded_macs) *recorded_macs = macs;
  if (record_bytes) *record_bytes = bytes;
  return TILERAP_SUCCESS;
}

int tilerap_csr_device_product_path(tilerap_csr_device_product X, tilerap_path *path, double *a_fill, double *b_fill)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_product_path: product is NULL");
  int tiled = 0;
  double af = 0, bf = 0;
#ifdef TILERAP_HAVE_CUDA
  tiled = X->tiled; af = X->a_fill; bf = X->b_fill;
#endif
  if (path) *path = tiled ? TILERAP_PATH_TILES : TILERAP_PATH_CSR;
  if (a_fill) *a_fill = af;
  if (b_fill) *b_fill = bf;
  return TILERAP_SUCCESS;
}

/* "auto" is the CSR path for every pattern: since its rows of many
 * products are split over many blocks (csr_cuda_product.cu), the grid with
 * one dense row of 490000 entries, which took the tile path before, is
 * faster here too (hypre hook: 3.96 against 6.35 ms; BENCHMARKS.md 3b). */
int tilerap_csr_device_path_i32(tilerap_csr_kind kind, const tilerap_csr_device_i32 *A,
                                const tilerap_csr_device_i32 *B, tilerap_path *path, int64_t *a_longest_row)
{
  int err;
  if (!path) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_device_path_i32: path is NULL");
  if ((err = tr_check_operand("A", A)) || (err = tr_check_operand("B", B)) || (err = tr_check_shapes(kind, A, B)))
    return err;
#ifndef TILERAP_HAVE_CUDA
  (void)a_longest_row;
  return tilerap_set_error(TILERAP_ERR_ENGINE, "device CSR products need the CUDA engine (built without CUDA)");
#else
  if (!tilerap_engine_available(TILERAP_ENGINE_CUDA))
    return tilerap_set_error(TILERAP_ERR_ENGINE, "device CSR products need the CUDA engine and a visible GPU");
  *path = tr_knob_int(TR_KNOB_PATH) == 1 ? TILERAP_PATH_TILES : TILERAP_PATH_CSR; /* 0 auto, 1 tiles, 2 csr */
  if (a_longest_row && (err = tr_cuda_csr_longest_row_i32(A->m, A->rowptr, a_longest_row))) return err;
  return TILERAP_SUCCESS;
#endif
}
