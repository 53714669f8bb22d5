/* One Galerkin product C = RT^T A P of the hook, stage by stage.
 *
 * Each rank forms, in local numbering,
 *   A_loc  = [A_diag | A_offd]                 (nA x (nA + nAo))
 *   P_full = [P_diag P_offd ; P_ext]           ((nA + nAo) x (ncP + nQ))
 *   R_loc  = [RT_diag | RT_offd]               (nA x (ncR + nRo))
 * where P_ext holds the rows of P owned elsewhere that A_offd touches and
 * Q is the union of P's offd columns and P_ext's off-rank columns.  Tile
 * products give C_all = R_loc^T (A_loc P_full): its first ncR rows are this
 * rank's rows of C, the other nRo rows go to the ranks owning RT's offd
 * columns and are added in there while C is split into diag/offd blocks.
 *
 * The stages, by file:
 *   galerkin.c      the sequence, the collective decisions, the report line
 *   exchange.c      the MPI side: P_ext and Q, rows of C sent and received
 *   local_product.c the tilerap calls: operands to tiles (host or device),
 *                   products, C back in one of its forms
 *   kept_operand.c  the previous product kept on the device as the next A
 *   row_order.c     hypre's order of the entries in a row (its pass, ahead
 *                   on a thread of its own or after assembly)
 *   assembly.c      hypre's ParCSR C: diag/offd, col_map_offd, comm package
 * A stage that cannot go on sets failed and reason; the local stages then
 * stop, and every rank decides together whether to forward. */
#ifndef TILERAP_HYPRE_GALERKIN_STAGES_H
#define TILERAP_HYPRE_GALERKIN_STAGES_H

#include "hook_internal.h"

#include <mpi.h>
#include <pthread.h>

#pragma GCC visibility push(hidden)

/* The product kept on the device for the next level (kept_operand.c). */
typedef struct {
  tilerap_tile_matrix *C; /* device tiles */
  int32_t *ci, *cj;       /* device row pointers and columns, hypre's order */
  const HYPRE_Int *hi, *hj;
  const HYPRE_Complex *ha; /* hypre's arrays holding the same */
  HYPRE_Int m, nnz;
  uint64_t fp;
} tr_kept;

/* The fingerprint of a kept candidate, computed on a thread of its own. */
typedef struct {
  const tr_kept *k;
  uint64_t fp;
  int err;
  double seconds;
} tr_kept_check;

/* hypre's row order computed ahead of C (row_order.c). */
typedef struct {
  HYPRE_Int ncR, ncP, nAc;
  int square, nthreads;
  hypre_CSRMatrix *Pd, *Ad;
  int64_t *ptr;     /* [ncR+1] */
  HYPRE_Int *col;   /* columns of every row, hypre's order */
  int ok;
  double seconds;   /* wall time of the pass */
} tr_trav;

typedef struct {
  /* the call */
  hypre_ParCSRMatrix *RT, *A, *P;
  HYPRE_Int keepT;
  int order_hypre; /* asked for by the caller and TILERAP_HYPRE_ORDER */
  tr_kept *kept_in, *kept_out;
  MPI_Comm comm;
  int nprocs, rank;
  hypre_CSRMatrix *RTd, *RTo, *Ad, *Ao, *Pd, *Po;
  HYPRE_Int nA, nAc, nAo;  /* local fine rows, columns, A's offd columns */
  HYPRE_Int ncR, nRo;      /* local coarse rows of C, RT's offd columns */
  HYPRE_Int ncP, nPo;      /* local coarse columns, P's offd columns */
  HYPRE_BigInt firstP, lastP;
  int square;   /* diagonal first (and present) in every row */
  int galerkin; /* RT is P and A's local block square: one Galerkin plan */

  /* which way C is made (galerkin.c, choose_paths) */
  tilerap_options opt;
  int dev;         /* CUDA engine */
  int direct;      /* hypre's diag blocks become tiles on the device */
  int straight_ok; /* C can go straight into hypre's diag arrays */
  int devorder;    /* and in hypre's order, made on the device; C kept */
  int fast_order;  /* hypre's order computed ahead of C on the host */
  int host_order;  /* CPU engine, one rank: C made in hypre's order (host_order_product.c) */

  /* exchange.c: remote rows of P, Q */
  hypre_ParCSRCommPkg *pkgRT;
  hypre_CSRMatrix *Pext;
  HYPRE_Int ext_nnz, nQ;
  HYPRE_BigInt *colQ;
  int32_t *mapPQ, *pext_col;
  int64_t *rrow; /* row of C_all holding the contributions to RT offd column k */

  /* local_product.c */
  tilerap_tile_matrix *Aloc, *Pfull, *Rloc, *Rt, *AP, *Call;
  tilerap_csr *Acsr, *Pcsr; /* the CPU engine's Galerkin operands (no tiles) */
  tilerap_tile_matrix *dA, *dP, *dR, *dC;
  int32_t *d_ai, *d_aj, *d_pi, *d_pj; /* A's and P's structures as hypre stores them */
  tilerap_csr *C;
  int64_t c_nnz;
  int straight; /* C is in s_di/s_dj/s_da: hypre's diag arrays, no offd */
  HYPRE_Int *s_di, *s_dj;
  HYPRE_Complex *s_da;
  int ordered; /* C is in hypre's order already (made so on the device or by host_order) */
  double t_dev_order; /* the device order's part of the download */

  /* kept_operand.c: the kept A in use until its check is in */
  int speculative, check_on;
  pthread_t check_th;
  tr_kept_check check;

  /* row_order.c: the order computed ahead */
  tr_trav trav;
  pthread_t trav_th;
  int trav_on;

  /* exchange.c: rows received; assembly.c: C's offd columns */
  hypre_CSRMatrix *C_int, *C_ext;
  HYPRE_Int next, next_nnz;
  const HYPRE_BigInt *ext_bj;
  const HYPRE_Int *ext_i;
  const HYPRE_Complex *ext_a;
  HYPRE_Int *ext_ptr, *ext_rows, *ext_loc; /* received rows by the row they add to */
  HYPRE_BigInt *colC;
  HYPRE_Int nC;
  HYPRE_Int *mapQC;

  int failed, reason;
  double tp, ph_local[TR_PH_N];
  tilerap_path path;           /* the Galerkin product's path (verbose report) */
  double a_fill, p_fill;       /* ... and what it was chosen by */
} tr_galerkin;

/* ---- galerkin.c */
/* Time since the last mark to phase ph (process total and this product). */
void tr_galerkin_phase(tr_galerkin *g, int ph);
/* A tilerap call failed: noted, reason ENGINE; returns 1. */
int tr_galerkin_engine_failed(tr_galerkin *g, int err);
static inline int tr_galerkin_refuse(tr_galerkin *g, int reason)
{
  g->failed = 1;
  g->reason = reason;
  return 1;
}

/* ---- exchange.c */
/* P_ext, Q and the local column maps; 0, or 1 with g->reason. */
int tr_exchange_p_rows(tr_galerkin *g);
/* Rows of C owned elsewhere sent to their owners, theirs received. */
void tr_exchange_c_rows(tr_galerkin *g);
/* Received rows by the local row they add to (needs C's offd columns). */
void tr_exchange_index_received(tr_galerkin *g);

/* ---- local_product.c */
/* Local blocks as tiles where the engine wants them; 0, or 1. */
int tr_local_operands(tr_galerkin *g);
/* The tile products and C back (g->C, or g->s_* when straight); 0, or 1. */
int tr_local_product(tr_galerkin *g);
void tr_local_free_tiles(tr_galerkin *g);
void tr_local_free(tr_galerkin *g);

/* ---- kept_operand.c */
/* Takes the kept product for this call (none: zeroed). */
void tr_kept_begin(tr_kept *in);
/* After the call: in freed, out kept for the next call if ok, else freed. */
void tr_kept_end(tr_kept *in, tr_kept *out, int ok);
/* A is the kept product's arrays: its device tiles become dA and a thread
 * checks the fingerprint (1).  Otherwise the kept product is freed (0). */
int tr_kept_take(tr_galerkin *g);
/* Waits for the check; 1 (counted as kept) if A was the kept product. */
int tr_kept_resolve(tr_galerkin *g);
/* Waits for the check without counting (a failed call). */
void tr_kept_join(tr_galerkin *g);
/* C (g->dC) and its device structure in hypre's order kept for the next call. */
void tr_kept_store(tr_galerkin *g, int32_t *d_ci, int32_t *d_cj, uint64_t fp);

/* ---- row_order.c */
/* Columns of M as lists of rows (ascending), with the entries' positions
 * when pos is not NULL; 0, or 1 out of memory (the arrays are the caller's
 * to free either way). */
int tr_columns_as_rows(hypre_CSRMatrix *M, HYPRE_Int ncols, int nthreads, HYPRE_Int **ptr, HYPRE_Int **rows,
                       HYPRE_Int **pos);
/* The order computed ahead, on its own thread when the engine works meanwhile. */
void tr_order_ahead_start(tr_galerkin *g);
void tr_order_ahead_join(tr_galerkin *g);
/* Rows sent to other ranks, rewritten in the order their owner walks them. */
void tr_order_send_rows(const tr_galerkin *g, const HYPRE_Int *ii, HYPRE_BigInt *bj, HYPRE_Complex *da);
/* The rows of assembled C in hypre's order (when asked for). */
void tr_order_rows(tr_galerkin *g, hypre_ParCSRMatrix *RAP);
void tr_order_free(tr_galerkin *g);

/* ---- host_order_product.c */
/* C = P^T A P on the CPU straight into hypre's diag arrays (g->s_*), rows
 * in hypre's order; 0, or 1 (g->failed set). */
int tr_host_order_product(tr_galerkin *g);

/* ---- assembly.c */
/* C's offd columns: the used Q columns and the received off-rank ones. */
void tr_assembly_offd_columns(tr_galerkin *g);
/* hypre's C from g->C (or the straight arrays) and the received rows. */
hypre_ParCSRMatrix *tr_assembly_blocks(tr_galerkin *g);
/* col_map_offd, comm package, the transposes kept on RT. */
void tr_assembly_finish(tr_galerkin *g, hypre_ParCSRMatrix *RAP);
void tr_assembly_free(tr_galerkin *g);

#pragma GCC visibility pop

#endif
