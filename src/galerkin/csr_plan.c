/* Plans on host CSR operands (tilerap_csr_plan_*): the CPU engine's
 * products for callers whose matrices are CSR already (PETSc's AIJ
 * types).  Row by row with a dense accumulator per thread, the kernels of
 * the CSR path (csr_cpu.c), straight on the caller's arrays: no tile
 * form, so no conversion in either direction and no tile pairs.  A
 * product made once (GAMG's prolongator smoothing, every first setup)
 * costs a CSR→tile conversion of each operand and C's way back on the
 * tile path, more than the product itself on the CPU (BENCHMARKS.md §6).
 *
 * The plan keeps only what numeric runs need beyond the operands: the
 * transposed structure of A (A^T B) or P (P^T A P) with each entry's
 * position in the operand's values, AP (structure and values) and C's
 * structure.  Numeric runs take the operands' arrays again (they may have
 * moved), check them against the plan and allocate nothing. */
#include <stdlib.h>
#include <string.h>

#include "csr_fingerprint.h"
#include "csr_plan.h"
#include "spgemm_cpu.h"
#include "tile_internal.h"
#include "tuning.h"

struct tilerap_csr_plan_s {
  tilerap_csr_kind kind;
  int32_t am, an, bm, bn;        /* operands' shapes ...            */
  int64_t annz, bnnz;            /* ... sizes ...                   */
  uint64_t afp, bfp;             /* ... and structure fingerprints */
  int64_t *trp, *tvidx;          /* A^T (A^T B) or P^T (P^T A P): rows, */
  int32_t *tcol;                 /* columns, operand's value positions  */
  tr_cpu_csr_product *x;         /* A B, A^T B, or AP                */
  tr_cpu_csr_product *c;         /* P^T A P: P^T (AP)                */
  double *apval;                 /* P^T A P: AP's values             */
  tr_cpu_ptap_walk *walk;        /* P^T A P without AP (then no x, c, apval, trp) */
  int64_t *crp;                  /* ... and C's structure           */
  int32_t *ccol;
  int64_t cnnz, macs;
};

const char *tilerap_csr_kind_name(tilerap_csr_kind kind)
{
  switch (kind) {
  case TILERAP_CSR_AB: return "AB";
  case TILERAP_CSR_ATB: return "AtB";
  case TILERAP_CSR_PTAP: return "PtAP";
  }
  return "unknown";
}

/* A hash of the operand's structure (every column index and row pointer
 * with its position, so a row's columns in another order change it too: the
 * plan's transposes map value positions).  The plan keeps its operands'
 * (checked at creation); a numeric run's operand with the same hash is the
 * checked one but for a chance of about 2^-64. */
static uint64_t tr_csr_structure_hash(const tilerap_csr *X)
{
  return tr_csr_hash(X->m, X->rowptr, X->colidx) + tr_fp_sizes(X->m, X->nnz);
}

static int tr_csr_checked(const tilerap_csr *X) { return tilerap_csr_check(X->m, X->n, X->rowptr, X->colidx); }

static int tr_csr_operand_ok(const tilerap_csr *X, int values)
{
  if (!X || X->m < 0 || X->n < 0 || !X->rowptr || (X->nnz > 0 && !X->colidx)) return 0;
  if (X->rowptr[0] != 0 || X->rowptr[X->m] != X->nnz) return 0;
  return !values || X->nnz == 0 || X->val;
}

void tilerap_csr_plan_destroy(tilerap_csr_plan *plan)
{
  if (!plan || !*plan) return;
  tilerap_csr_plan X = *plan;
  tr_cpu_csr_product_destroy(X->x);
  tr_cpu_csr_product_destroy(X->c);
  tr_cpu_ptap_walk_destroy(X->walk);
  free(X->crp); free(X->ccol);
  free(X->trp); free(X->tcol); free(X->tvidx); free(X->apval);
  free(X);
  *plan = NULL;
}

/* the product built in one pass where tr_cpu_csr_product_one_pass says
 * so (*built: its columns and values then come from
 * tr_cpu_csr_product_take), else counted (then filled) */
static int tr_csr_product_make(int32_t m, int32_t n, const int64_t *arp, const int32_t *acol, const int64_t *brp,
                               const int32_t *bcol, const double *aval, const int64_t *avidx, const double *bval,
                               const int64_t *bvidx, int sorted, tr_cpu_csr_product **P, int64_t *cnnz,
                               int64_t *macs, int *built)
{
  int64_t entries;
  *built = tr_cpu_csr_product_one_pass(m, n, arp, acol, brp, bcol, &entries);
  if (*built) {
    const int err =
        tr_cpu_csr_product_build(m, n, arp, acol, brp, bcol, aval, avidx, bval, bvidx, sorted, entries, P, cnnz, macs);
    if (err || *P) return err;
    *built = 0; /* the estimate was short for a thread's rows */
  }
  return tr_cpu_csr_product_create(m, n, arp, acol, brp, bcol, P, cnnz, macs);
}

/* the plan and C; structure_only: the operands' values are not read and C
 * gets none (val NULL) */
static int tr_csr_plan_make(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B, tilerap_csr_plan *plan,
                            tilerap_csr **C, int structure_only)
{
  if (!plan || !C) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_plan_create: NULL output");
  *plan = NULL;
  *C = NULL;
  if (kind != TILERAP_CSR_AB && kind != TILERAP_CSR_ATB && kind != TILERAP_CSR_PTAP)
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_csr_plan_create: unknown product kind %d", (int)kind);
  if (!A || !B) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_plan_create: an operand is NULL");
  int err = tr_tuning_check(); /* a bad knob fails every plan creation */
  if (err) return err;
  if (!tr_csr_operand_ok(A, 0) || !tr_csr_operand_ok(B, 0))
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_csr_plan_create: an operand is not a CSR matrix (NULL arrays, or rowptr not from 0 to nnz)");
  if ((err = tr_csr_checked(A)) || (err = tr_csr_checked(B))) return err;
  const uint64_t afp = tr_csr_structure_hash(A), bfp = tr_csr_structure_hash(B);
  const int values = !structure_only && A->val && B->val;
  int32_t cm, cn;
  if (kind == TILERAP_CSR_AB) {
    if (A->n != B->m) return tilerap_set_error(TILERAP_ERR_SIZE, "tilerap_csr_plan_create: A*B with A %d x %d and B %d x %d", A->m, A->n, B->m, B->n);
    cm = A->m; cn = B->n;
  } else if (kind == TILERAP_CSR_ATB) {
    if (A->m != B->m) return tilerap_set_error(TILERAP_ERR_SIZE, "tilerap_csr_plan_create: A^T*B with A %d x %d and B %d x %d", A->m, A->n, B->m, B->n);
    cm = A->n; cn = B->n;
  } else {
    if (A->m != A->n || B->m != A->n)
      return tilerap_set_error(TILERAP_ERR_SIZE, "tilerap_csr_plan_create: P^T*A*P with A %d x %d and P %d x %d", A->m, A->n, B->m, B->n);
    cm = B->n; cn = B->n;
  }

  tilerap_csr_plan X = tilerap_host_calloc(1, sizeof *X);
  if (!X) return TILERAP_ERR_NOMEM;
  X->kind = kind;
  X->am = A->m; X->an = A->n; X->annz = A->nnz;
  X->bm = B->m; X->bn = B->n; X->bnnz = B->nnz;
  X->afp = afp; X->bfp = bfp;
  int64_t cnnz = 0, macs = 0, macs2 = 0;
  tilerap_csr *Cm = NULL;
  const tr_cpu_csr_product *last = NULL;

  const double *aval = values ? A->val : NULL, *bval = values ? B->val : NULL;
  int built[2] = {0, 0};
  if (kind == TILERAP_CSR_AB) {
    err = tr_csr_product_make(cm, cn, A->rowptr, A->colidx, B->rowptr, B->colidx, aval, NULL, bval, NULL, 1, &X->x,
                              &cnnz, &macs, &built[0]);
    last = X->x;
  } else if (kind == TILERAP_CSR_ATB) {
    err = tr_cpu_csr_transpose(A->m, A->n, A->rowptr, A->colidx, &X->trp, &X->tcol, &X->tvidx);
    if (!err)
      err = tr_csr_product_make(cm, cn, X->trp, X->tcol, B->rowptr, B->colidx, aval, X->tvidx, bval, NULL, 1, &X->x,
                                &cnnz, &macs, &built[0]);
    last = X->x;
  } else {
    /* P^T A P without AP (the walk) unless TILERAP_CSR_PTAP=ap: memory
     * near PETSc's MatPtAP, re-runs slower than the two passes (per core
     * at PETSc's speed or below on meshes and grids) */
    if (tr_knob_int(TR_KNOB_CSR_PTAP) == TR_CSR_PTAP_WALK) err = tr_cpu_ptap_walk_new(A, B, &X->walk);
    if (!err && X->walk) {
      err = tr_cpu_ptap_walk_first(X->walk, A, B, values, &Cm, &macs);
      if (!err && !(X->crp = tilerap_host_alloc((size_t)cm + 1, sizeof *X->crp))) err = TILERAP_ERR_NOMEM;
      if (!err && !(X->ccol = tilerap_host_alloc((size_t)Cm->nnz + 1, sizeof *X->ccol))) err = TILERAP_ERR_NOMEM;
      if (err) {
        tilerap_csr_destroy(&Cm);
        tilerap_csr_plan_destroy(&X);
        return err;
      }
      memcpy(X->crp, Cm->rowptr, ((size_t)cm + 1) * sizeof *X->crp);
      memcpy(X->ccol, Cm->colidx, (size_t)Cm->nnz * sizeof *X->ccol);
      if (structure_only) { /* as on the two passes' route: C without values */
        free(Cm->val);
        Cm->val = NULL;
      }
      X->cnnz = Cm->nnz;
      X->macs = macs;
      *plan = X;
      *C = Cm;
      return TILERAP_SUCCESS;
    }
    if (!err) err = tr_cpu_csr_transpose(B->m, B->n, B->rowptr, B->colidx, &X->trp, &X->tcol, &X->tvidx);
  }
  if (!err && kind == TILERAP_CSR_PTAP) {
    int64_t apnnz = 0;
    /* AP is an intermediate: its rows need no order */
    err = tr_csr_product_make(A->m, B->n, A->rowptr, A->colidx, B->rowptr, B->colidx, aval, NULL, bval, NULL, 0,
                              &X->x, &apnnz, &macs, &built[0]);
    if (!err && built[0]) { /* AP's values: the pass's buffer */
      err = tr_cpu_csr_product_take(X->x, &X->apval);
    } else if (!err) {
      if (!(X->apval = tilerap_host_alloc((size_t)apnnz + 1, sizeof(double)))) err = TILERAP_ERR_NOMEM;
      else err = tr_cpu_csr_product_fill(X->x, aval, NULL, bval, NULL, values ? X->apval : NULL, 0);
    }
    if (!err)
      err = tr_csr_product_make(cm, cn, X->trp, X->tcol, tr_cpu_csr_product_rowptr(X->x),
                                tr_cpu_csr_product_colidx(X->x), bval, X->tvidx, values ? X->apval : NULL, NULL, 1,
                                &X->c, &cnnz, &macs2, &built[1]);
    last = X->c;
  }
  if (!err) err = tilerap_csr_create(cm, cn, cnnz, &Cm);
  if (!err) { /* C's columns, and its values (every one) or zeros */
    double *cval = values ? Cm->val : NULL;
    tr_cpu_csr_product *p = (tr_cpu_csr_product *)last;
    const int b = kind == TILERAP_CSR_PTAP ? built[1] : built[0];
    if (b) { /* C's values: the pass's buffer (none made for the structure alone) */
      double *val = NULL;
      if (!(err = tr_cpu_csr_product_take(p, structure_only ? NULL : &val)) && !structure_only) {
        free(Cm->val);
        Cm->val = val;
      }
    } else if (kind == TILERAP_CSR_AB) err = tr_cpu_csr_product_fill(p, aval, NULL, bval, NULL, cval, 1);
    else if (kind == TILERAP_CSR_ATB) err = tr_cpu_csr_product_fill(p, aval, X->tvidx, bval, NULL, cval, 1);
    else err = tr_cpu_csr_product_fill(p, bval, X->tvidx, values ? X->apval : NULL, NULL, cval, 1);
    if (structure_only) {
      free(Cm->val);
      Cm->val = NULL;
    } else if (!values && cnnz && !b) memset(Cm->val, 0, (size_t)cnnz * sizeof(double)); /* take's are zero already */
  }
  if (err) {
    tilerap_csr_destroy(&Cm);
    tilerap_csr_plan_destroy(&X);
    return err;
  }
  memcpy(Cm->rowptr, tr_cpu_csr_product_rowptr(last), ((size_t)cm + 1) * sizeof(int64_t));
  memcpy(Cm->colidx, tr_cpu_csr_product_colidx(last), (size_t)cnnz * sizeof(int32_t));
  X->cnnz = cnnz;
  X->macs = macs + macs2;
  *plan = X;
  *C = Cm;
  return TILERAP_SUCCESS;
}

int tilerap_csr_plan_create(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B, tilerap_csr_plan *plan,
                            tilerap_csr **C)
{
  return tr_csr_plan_make(kind, A, B, plan, C, 0);
}

int tr_csr_plan_create_structure(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B,
                                 tilerap_csr_plan *plan, tilerap_csr **C)
{
  return tr_csr_plan_make(kind, A, B, plan, C, 1);
}

int tilerap_csr_plan_numeric(tilerap_csr_plan X, const tilerap_csr *A, const tilerap_csr *B, double *cval)
{
  if (!X || (!cval && X->cnnz > 0)) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_plan_numeric: NULL plan or C values");
  if (!A || !B) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_plan_numeric: an operand is NULL");
  if (!tr_csr_operand_ok(A, 1) || !tr_csr_operand_ok(B, 1))
    return tilerap_set_error(TILERAP_ERR_INVALID, "tilerap_csr_plan_numeric: an operand is not a CSR matrix with values");
  int err;
  if (A->m != X->am || A->n != X->an || A->nnz != X->annz || B->m != X->bm || B->n != X->bn || B->nnz != X->bnnz)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "tilerap_csr_plan_numeric: the operands' shapes or sizes are not the plan's (%s plan for %d x %d and %d x %d): make a new plan",
                   tilerap_csr_kind_name(X->kind), X->am, X->an, X->bm, X->bn);
  const int adiff = tr_csr_structure_hash(A) != X->afp, bdiff = tr_csr_structure_hash(B) != X->bfp;
  /* another structure: an invalid operand named as the checks name it */
  if ((adiff && (err = tr_csr_checked(A))) || (bdiff && (err = tr_csr_checked(B)))) return err;
  if (adiff || bdiff)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE, "tilerap_csr_plan_numeric: the operands' structure is not the plan's (%s plan for %d x %d and %d x %d): make a new plan",
                   tilerap_csr_kind_name(X->kind), X->am, X->an, X->bm, X->bn);
  if (X->kind == TILERAP_CSR_AB) {
    tr_cpu_csr_product_bind(X->x, A->rowptr, A->colidx, B->rowptr, B->colidx);
    return tr_cpu_csr_product_numeric(X->x, A->val, NULL, B->val, NULL, cval, NULL);
  }
  if (X->kind == TILERAP_CSR_ATB) {
    tr_cpu_csr_product_bind(X->x, X->trp, X->tcol, B->rowptr, B->colidx);
    return tr_cpu_csr_product_numeric(X->x, A->val, X->tvidx, B->val, NULL, cval, NULL);
  }
  if (X->walk) return tr_cpu_ptap_walk_numeric(X->walk, A, B, X->crp, X->ccol, cval);
  tr_cpu_csr_product_bind(X->x, A->rowptr, A->colidx, B->rowptr, B->colidx);
  err = tr_cpu_csr_product_numeric(X->x, A->val, NULL, B->val, NULL, X->apval, NULL);
  if (!err) err = tr_cpu_csr_product_numeric(X->c, B->val, X->tvidx, X->apval, NULL, cval, NULL);
  return err;
}

int tilerap_csr_plan_info(tilerap_csr_plan X, int64_t *c_nnz, int64_t *flops)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_plan_info: NULL plan");
  if (c_nnz) *c_nnz = X->cnnz;
  if (flops) *flops = 2 * X->macs;
  return TILERAP_SUCCESS;
}

int tilerap_csr_plan_memory(tilerap_csr_plan X, int64_t *bytes, int *keeps_intermediate)
{
  if (!X) return tilerap_set_error(TILERAP_ERR_NULL, "tilerap_csr_plan_memory: NULL plan");
  /* the transposed operand's view (A^T B: A's; two passes: P's), with positions */
  const int at = X->kind == TILERAP_CSR_ATB;
  const int64_t view = X->trp ? ((at ? X->an : X->bn) + 2) * 8 + (at ? X->annz : X->bnnz) * (4 + 8) : 0;
  const int64_t apnnz = X->apval ? tr_cpu_csr_product_rowptr(X->x)[X->am] : 0;
  if (bytes)
    *bytes = (int64_t)sizeof *X + view + apnnz * 8 + tr_cpu_csr_product_bytes(X->x) + tr_cpu_csr_product_bytes(X->c) +
             tr_cpu_ptap_walk_bytes(X->walk) + (X->crp ? ((int64_t)X->bn + 1) * 8 + X->cnnz * 4 : 0);
  if (keeps_intermediate) *keeps_intermediate = X->kind == TILERAP_CSR_PTAP && !X->walk;
  return TILERAP_SUCCESS;
}
