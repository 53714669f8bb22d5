/* What the A*B, A^T*B and P^T*A*P plans share: the options checked and
 * the engine resolved once, the structures of the operands and of C that
 * numeric runs are checked against, and, for host matrices on the CUDA
 * engine, device mirrors of both operands and of C that live as long as
 * the plan (a re-run then moves values only). */
#ifndef TILERAP_PLAN_CORE_H
#define TILERAP_PLAN_CORE_H
#include "tile_internal.h"

typedef struct {
  tilerap_engine engine;
  void *stream;
  tr_structure sx, sy, sc;            /* the operands' and C's structures */
  tilerap_tile_matrix *dx, *dy, *dc;  /* device mirrors (host matrices, CUDA engine) */
} tr_plan_core;

/* *o = opt (or the defaults) checked, with o->engine the engine X's
 * memory and the request resolve to; core->engine and core->stream set */
int tr_plan_core_begin(tr_plan_core *core, const tilerap_options *opt, const tilerap_tile_matrix *X, const char *who,
                       tilerap_options *o);
/* the matrices a plan's work reads: X and Y, or device mirrors of them
 * (made here) when host matrices meet the CUDA engine */
int tr_plan_core_mirror(tr_plan_core *core, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y,
                        const tilerap_tile_matrix **wX, const tilerap_tile_matrix **wY);
/* hands the work's C (*wC, taken) to the caller: as it is, or a host copy
 * while the plan keeps the device C */
int tr_plan_core_hand_out(tr_plan_core *core, tilerap_tile_matrix **wC, tilerap_tile_matrix **C);
/* records X's, Y's and C's structures (plans the caller re-runs) */
int tr_plan_core_record(tr_plan_core *core, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y,
                        const tilerap_tile_matrix *C);
/* a numeric run's start: the structures checked (names: "A", "B" ...),
 * values moved to the mirrors, and the matrices the work reads and writes */
int tr_plan_core_numeric_in(tr_plan_core *core, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y,
                            tilerap_tile_matrix *C, const char *who, const char *xname, const char *yname,
                            const tilerap_tile_matrix **wX, const tilerap_tile_matrix **wY, tilerap_tile_matrix **wC);
/* a numeric run's end: C's values back from its mirror */
int tr_plan_core_numeric_out(const tr_plan_core *core, const tilerap_tile_matrix *wC, tilerap_tile_matrix *C);
void tr_plan_core_release(tr_plan_core *core);
/* the options of a one-shot product (tilerap_spgemm, tilerap_atb,
 * tilerap_ptap): opt (or the defaults) checked, plan and values together */
int tr_one_shot_options(const tilerap_options *opt, const char *who, tilerap_options *o);

#endif
