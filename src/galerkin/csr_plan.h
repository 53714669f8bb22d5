/* Internal entry points of the host CSR plans (csr_plan.c) beyond the
 * public tilerap_csr_plan_*. */
#ifndef TILERAP_CSR_PLAN_H
#define TILERAP_CSR_PLAN_H
#include "tilerap.h"

/* tilerap_csr_plan_create for C's structure alone: the operands' values
 * are not read and C comes back without values (C->val NULL), for callers
 * that take the structure only (PETSc's symbolic phase of a MatProduct
 * API product); numeric runs of the plan are as after the public call */
int tr_csr_plan_create_structure(tilerap_csr_kind kind, const tilerap_csr *A, const tilerap_csr *B,
                                 tilerap_csr_plan *plan, tilerap_csr **C);
#endif
