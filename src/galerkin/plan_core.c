/* The part every plan shares (plan_core.h). */
#include "plan_core.h"

int tr_plan_core_begin(tr_plan_core *core, const tilerap_options *opt, const tilerap_tile_matrix *X, const char *who,
                       tilerap_options *o)
{
  if (opt) *o = *opt;
  else tilerap_options_default(o);
  int err = tr_plan_engine(o, X, who, &o->engine);
  if (err) return err;
  core->engine = o->engine;
  core->stream = o->stream;
  return TILERAP_SUCCESS;
}

int tr_plan_core_mirror(tr_plan_core *core, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y,
                        const tilerap_tile_matrix **wX, const tilerap_tile_matrix **wY)
{
  *wX = X; *wY = Y;
  if (core->engine != TILERAP_ENGINE_CUDA || X->memtype != TILERAP_MEM_HOST) return TILERAP_SUCCESS;
  int err;
  if ((err = tilerap_tile_copy(X, TILERAP_MEM_DEVICE, &core->dx)) || (err = tilerap_tile_copy(Y, TILERAP_MEM_DEVICE, &core->dy)))
    return err;
  *wX = core->dx; *wY = core->dy;
  return TILERAP_SUCCESS;
}

int tr_plan_core_hand_out(tr_plan_core *core, tilerap_tile_matrix **wC, tilerap_tile_matrix **C)
{
  if (!core->dx) { *C = *wC; *wC = NULL; return TILERAP_SUCCESS; }
  core->dc = *wC;
  *wC = NULL;
  return tilerap_tile_copy(core->dc, TILERAP_MEM_HOST, C);
}

int tr_plan_core_record(tr_plan_core *core, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y,
                        const tilerap_tile_matrix *C)
{
  return tr_structure_record3(X, Y, C, &core->sx, &core->sy, &core->sc);
}

int tr_plan_core_numeric_in(tr_plan_core *core, const tilerap_tile_matrix *X, const tilerap_tile_matrix *Y,
                            tilerap_tile_matrix *C, const char *who, const char *xname, const char *yname,
                            const tilerap_tile_matrix **wX, const tilerap_tile_matrix **wY, tilerap_tile_matrix **wC)
{
  int err;
  const tilerap_tile_matrix *M[3] = {X, Y, C};
  const char *name[3] = {xname, yname, "C"};
  for (int k = 0; k < 3; k++) { /* a hand-made matrix without its arrays: an error, not a crash */
    if (!M[k]) return tilerap_set_error(TILERAP_ERR_NULL, "%s: %s is NULL", who, name[k]);
    if (!M[k]->tile_ptr || (M[k]->num_tiles > 0 && (!M[k]->tile_col || !M[k]->tile_off || !M[k]->row_ptr ||
                                                     !M[k]->row_mask || !M[k]->val)))
      return tilerap_set_error(TILERAP_ERR_NULL, "%s: %s's arrays (values or structure) are missing", who, name[k]);
  }
  if ((err = tr_structure_check(&core->sx, X, who, xname)) || (err = tr_structure_check(&core->sy, Y, who, yname)) ||
      (err = tr_structure_check(&core->sc, C, who, "C")))
    return err;
  *wX = X; *wY = Y; *wC = C;
  if (!core->dx) return TILERAP_SUCCESS;
  if ((err = tr_tile_copy_values(X, core->dx)) || (err = tr_tile_copy_values(Y, core->dy))) return err;
  *wX = core->dx; *wY = core->dy; *wC = core->dc;
  return TILERAP_SUCCESS;
}

int tr_plan_core_numeric_out(const tr_plan_core *core, const tilerap_tile_matrix *wC, tilerap_tile_matrix *C)
{
  return wC != C ? tr_tile_copy_values(wC, C) : TILERAP_SUCCESS;
}

void tr_plan_core_release(tr_plan_core *core)
{
  tr_structure_release(&core->sx); tr_structure_release(&core->sy); tr_structure_release(&core->sc);
  tilerap_tile_destroy(&core->dx); tilerap_tile_destroy(&core->dy); tilerap_tile_destroy(&core->dc);
}

int tr_one_shot_options(const tilerap_options *opt, const char *who, tilerap_options *o)
{
  if (opt) *o = *opt;
  else tilerap_options_default(o);
  int err = tr_options_check(o, who); /* before plan_values is set */
  o->plan_values = 1;
  return err;
}
