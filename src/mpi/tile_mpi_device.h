/* One GPU per MPI rank, for the MPI layers (MATMPITILE in src/mat_impl,
 * the hypre hook in src/hypre).  Header-only so that the core library stays
 * free of MPI; each layer keeps its own "chosen" state. */
#ifndef TILERAP_MPI_DEVICE_H
#define TILERAP_MPI_DEVICE_H
#include <mpi.h>
#include "tilerap.h"

/* Device of this rank.  requested >= 0 (an option) makes that device
 * current.  Otherwise, the first call with active != 0 (the CUDA engine
 * resolves to CUDA here) picks (node-local rank in comm) mod (device
 * count), the node-local rank from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED),
 * and records it in *chosen (-1 before); later calls keep it, so that the
 * device of a process never changes under its device matrices and plans.
 * Collective on comm: one Allreduce always, so that ranks that have chosen
 * and ranks that have not agree on whether the split runs.  Returns a
 * tilerap error code (tilerap_last_error() has the message). */
static inline int tr_mpi_choose_device(MPI_Comm comm, int active, int requested, int *chosen)
{
  int count = tilerap_device_count();
  int need = active && requested < 0 && *chosen < 0 && count > 0, any = 0, local = 0;
  (void)MPI_Allreduce(&need, &any, 1, MPI_INT, MPI_MAX, comm); /* (void): PETSc's logging wraps it in an expression */
  if (any) {
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
  }
  int dev = requested >= 0 ? requested : need ? local % count : -1;
  if (dev < 0) return TILERAP_SUCCESS;
  int err = tilerap_set_device(dev);
  if (!err) *chosen = dev;
  return err;
}
#endif
