/* One level of a kept BoomerAMG hierarchy, recomputed from new values of
 * its A (level_recipe.c; used by the re-setup, resetup.c). */
#ifndef TILERAP_HYPRE_LEVEL_RECIPE_H
#define TILERAP_HYPRE_LEVEL_RECIPE_H

#include "hook_internal.h"

#pragma GCC visibility push(hidden)

typedef struct tr_level_recipe tr_level_recipe;

/* Records how C (the coarse operator of A and P that the full setup made,
 * host memory) is recomputed from A's values.  Collective over A's
 * communicator; 0, or 1 on every rank with *why (a static message). */
int tr_level_recipe_record(hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, hypre_ParCSRMatrix *C,
                           const tilerap_options *opt, tr_level_recipe **r, const char **why);
/* 1 if A and C still have the block sizes and entry counts recorded. */
int tr_level_recipe_matches(const tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *C);
/* C's values (in place) = P^T A P for A's current values.  Collective;
 * a tilerap error code (C then holds zeros and the other ranks' parts). */
int tr_level_recipe_run(tr_level_recipe *r, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *C);
void tr_level_recipe_free(tr_level_recipe **r);

#pragma GCC visibility pop

#endif
