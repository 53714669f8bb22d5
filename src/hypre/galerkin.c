/* C = RT^T A P for hypre ParCSR matrices with the tile engine: one
 * product as a sequence of stages (galerkin_stages.h says which file holds
 * which).
 *
 * Forwarding is decided collectively: before any communication (cheap
 * checks) and again after the local tile products, so that either every
 * rank computes or every rank calls hypre's own function. */
#include "galerkin_stages.h"
#include "tuning.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int on_host(hypre_ParCSRMatrix *M)
{
  return hypre_GetActualMemLocation(hypre_ParCSRMatrixMemoryLocation(M)) == hypre_MEMORY_HOST;
}

/* Local checks that need no communication; -1 when the rank can compute. */
static int local_precheck(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, int rank)
{
  if (!TILERAP_HYPRE_SCALAR_OK) return TILERAP_HYPRE_FWD_SCALAR;
  if (!RT || !A || !P) return TILERAP_HYPRE_FWD_SHAPE;
  if (!on_host(RT) || !on_host(A) || !on_host(P)) return TILERAP_HYPRE_FWD_DEVICE;
  hypre_CSRMatrix *RTd = hypre_ParCSRMatrixDiag(RT), *RTo = hypre_ParCSRMatrixOffd(RT);
  hypre_CSRMatrix *Ad = hypre_ParCSRMatrixDiag(A), *Ao = hypre_ParCSRMatrixOffd(A);
  hypre_CSRMatrix *Pd = hypre_ParCSRMatrixDiag(P), *Po = hypre_ParCSRMatrixOffd(P);
  if (hypre_ParCSRMatrixGlobalNumRows(RT) != hypre_ParCSRMatrixGlobalNumRows(A) ||
      hypre_ParCSRMatrixGlobalNumCols(A) != hypre_ParCSRMatrixGlobalNumRows(P) ||
      hypre_CSRMatrixNumRows(RTd) != hypre_CSRMatrixNumRows(Ad) ||
      hypre_CSRMatrixNumCols(Ad) != hypre_CSRMatrixNumRows(Pd) ||
      hypre_CSRMatrixNumRows(Ao) != hypre_CSRMatrixNumRows(Ad) ||
      hypre_CSRMatrixNumRows(Po) != hypre_CSRMatrixNumRows(Pd) ||
      hypre_CSRMatrixNumRows(RTo) != hypre_CSRMatrixNumRows(RTd))
    return TILERAP_HYPRE_FWD_SHAPE;
  if ((int64_t)hypre_CSRMatrixNumCols(Ad) + hypre_CSRMatrixNumCols(Ao) > INT32_MAX ||
      (int64_t)hypre_CSRMatrixNumCols(RTd) + hypre_CSRMatrixNumCols(RTo) > INT32_MAX ||
      (int64_t)hypre_CSRMatrixNumCols(Pd) + hypre_CSRMatrixNumCols(Po) > INT32_MAX)
    return TILERAP_HYPRE_FWD_SIZE;
  if (rank == tr_hypre_test_refuse_rank()) return TILERAP_HYPRE_FWD_TEST;
  return -1;
}

/* Collective: 1 if any rank reports failure. */
static int any_failed(MPI_Comm comm, int nprocs, int failed)
{
  if (nprocs == 1) return failed;
  int g = 0;
  MPI_Allreduce(&failed, &g, 1, MPI_INT, MPI_MAX, comm);
  return g;
}

static int same_csr(hypre_CSRMatrix *X, hypre_CSRMatrix *Y)
{
  HYPRE_Int m = hypre_CSRMatrixNumRows(X), nz = hypre_CSRMatrixNumNonzeros(X);
  if (m != hypre_CSRMatrixNumRows(Y) || hypre_CSRMatrixNumCols(X) != hypre_CSRMatrixNumCols(Y) ||
      nz != hypre_CSRMatrixNumNonzeros(Y))
    return 0;
  if (!hypre_CSRMatrixI(X) || !hypre_CSRMatrixI(Y)) return hypre_CSRMatrixI(X) == hypre_CSRMatrixI(Y);
  if (memcmp(hypre_CSRMatrixI(X), hypre_CSRMatrixI(Y), ((size_t)m + 1) * sizeof(HYPRE_Int))) return 0;
  nz = hypre_CSRMatrixI(X)[m];
  if (nz == 0) return 1;
  return !memcmp(hypre_CSRMatrixJ(X), hypre_CSRMatrixJ(Y), (size_t)nz * sizeof(HYPRE_Int)) &&
         !memcmp(hypre_CSRMatrixData(X), hypre_CSRMatrixData(Y), (size_t)nz * sizeof(HYPRE_Complex));
}

/* RT is P (BoomerAMG's Galerkin case: the same object, or equal blocks and
 * column maps), so that C = P^T A P can run as one Galerkin plan. */
static int rt_is_p(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *P)
{
  if (RT == P) return 1;
  if (hypre_ParCSRMatrixGlobalNumRows(RT) != hypre_ParCSRMatrixGlobalNumRows(P) ||
      hypre_ParCSRMatrixGlobalNumCols(RT) != hypre_ParCSRMatrixGlobalNumCols(P) ||
      hypre_ParCSRMatrixFirstColDiag(RT) != hypre_ParCSRMatrixFirstColDiag(P))
    return 0;
  hypre_CSRMatrix *RTo = hypre_ParCSRMatrixOffd(RT), *Po = hypre_ParCSRMatrixOffd(P);
  if (!same_csr(hypre_ParCSRMatrixDiag(RT), hypre_ParCSRMatrixDiag(P)) || !same_csr(RTo, Po)) return 0;
  HYPRE_Int no = hypre_CSRMatrixNumCols(Po);
  return no == 0 || !memcmp(hypre_ParCSRMatrixColMapOffd(RT), hypre_ParCSRMatrixColMapOffd(P),
                            (size_t)no * sizeof(HYPRE_BigInt));
}

/* Below this many rows, parallel regions cost more than they save. */

void tr_galerkin_phase(tr_galerkin *g, int ph)
{
  const double t = tr_hypre_wtime();
  tr_hypre_add_phase(ph, t - g->tp);
  g->ph_local[ph] += t - g->tp;
  g->tp = t;
}

int tr_galerkin_engine_failed(tr_galerkin *g, int err)
{
  tr_hypre_note("rank %d: tilerap error %d (%s): %s", g->rank, err, tilerap_error_string(err), tilerap_last_error());
  return tr_galerkin_refuse(g, TILERAP_HYPRE_FWD_ENGINE);
}

/* Collective checks before any work; 0, or 1 + reason. */
static int entry_checks(tr_galerkin *g, int local_refusal)
{
  const int reason = local_refusal >= 0 ? local_refusal : local_precheck(g->RT, g->A, g->P, g->rank);
  if (any_failed(g->comm, g->nprocs, reason >= 0))
    return 1 + (reason >= 0 ? reason : TILERAP_HYPRE_FWD_PEER);
  /* one GPU per rank, before anything reaches a device */
  const int failed = tr_hypre_select_device(g->comm, tr_hypre_on_device(g->A)) != 0;
  if (any_failed(g->comm, g->nprocs, failed))
    return 1 + (failed ? TILERAP_HYPRE_FWD_ENGINE : TILERAP_HYPRE_FWD_PEER);
  return 0;
}

static void read_blocks(tr_galerkin *g, int force_diagonal)
{
  g->RTd = hypre_ParCSRMatrixDiag(g->RT); g->RTo = hypre_ParCSRMatrixOffd(g->RT);
  g->Ad = hypre_ParCSRMatrixDiag(g->A); g->Ao = hypre_ParCSRMatrixOffd(g->A);
  g->Pd = hypre_ParCSRMatrixDiag(g->P); g->Po = hypre_ParCSRMatrixOffd(g->P);
  g->nA = hypre_CSRMatrixNumRows(g->Ad);
  g->nAc = hypre_CSRMatrixNumCols(g->Ad);
  g->nAo = hypre_CSRMatrixNumCols(g->Ao);
  g->ncR = hypre_CSRMatrixNumCols(g->RTd);
  g->nRo = hypre_CSRMatrixNumCols(g->RTo);
  g->ncP = hypre_CSRMatrixNumCols(g->Pd);
  g->nPo = hypre_CSRMatrixNumCols(g->Po);
  g->firstP = hypre_ParCSRMatrixFirstColDiag(g->P);
  g->lastP = g->firstP + g->ncP - 1;
  g->square = force_diagonal && g->ncR == g->ncP &&
              hypre_ParCSRMatrixGlobalNumCols(g->RT) == hypre_ParCSRMatrixGlobalNumCols(g->P);
  /* One Galerkin plan P_full^T A_sq P_full when RT is P and A's local block
   * is square (A_sq: A_loc with empty rows for the P_ext rows). */
  g->galerkin = g->nA == g->nAc && rt_is_p(g->RT, g->P);
}

/* Which of the ways to make C this product takes (after P_ext and Q). */
static void choose_paths(tr_galerkin *g)
{
  tilerap_options_default(&g->opt);
  g->dev = tilerap_engine_resolve(g->opt.engine) == TILERAP_ENGINE_CUDA;
  /* one block each (one rank, or no off-rank couplings) and RT = P */
  const int local_only = g->galerkin && g->nAo == 0 && g->nQ == 0 && !g->Pext && hypre_CSRMatrixI(g->Ad) &&
                         hypre_CSRMatrixI(g->Pd);
  g->direct = g->dev && local_only && sizeof(HYPRE_Int) == sizeof(int32_t);
  g->straight_ok = g->direct && g->nprocs == 1 && g->square;
  /* one rank, square: hypre's row order made on the device from A's and
   * P's stored structures (tilerap_ptap_csr_encounter_order_device_i32),
   * and C kept there for the next level */
  g->devorder = g->straight_ok && g->order_hypre;
  /* the CPU engine, one rank, square: C made in hypre's order straight
   * into hypre's arrays (TILERAP_PATH=tiles keeps the tile route) */
  g->host_order = !g->dev && local_only && g->nprocs == 1 && g->square && g->order_hypre &&
                  tr_knob_int(TR_KNOB_PATH) != 1;
  /* otherwise hypre's row order ahead of C (one rank, RT = P): on a thread
   * of its own with the CUDA engine, so that it overlaps the device work */
  g->fast_order = !g->devorder && !g->host_order && g->order_hypre && g->nprocs == 1 && local_only;
}

/* The local stages; 0, or 1 with g->failed and g->reason set. */
static int local_stages(tr_galerkin *g)
{
  if (tr_exchange_p_rows(g)) return 1;
  choose_paths(g);
  if (g->fast_order) tr_order_ahead_start(g);
  return tr_local_operands(g) || tr_local_product(g);
}

/* verbose 2: one line per product, where its time went */
static void report(const tr_galerkin *g)
{
  const double *ph = g->ph_local;
  char fills[80] = "host CSR plan";
  if (g->host_order) snprintf(fills, sizeof fills, "host product in hypre's order");
  else if (g->a_fill >= 0) snprintf(fills, sizeof fills, "entries per tile: A %.2f, P %.2f", g->a_fill, g->p_fill);
  fprintf(stderr,
          "tilerap_hypre rank %d: product %d x %d (A %lld entries, P %lld, C %lld): in %.4f, up %.4f, engine %.4f, "
          "down %.4f, out %.4f, order wait %.4f (pass %.4f), comm %.4f s; kept-A check %.4f (overlapped), device order %.4f s; "
          "path %s (%s)\n",
          g->rank, (int)g->ncR, (int)g->ncP, (long long)hypre_CSRMatrixNumNonzeros(g->Ad),
          (long long)hypre_CSRMatrixNumNonzeros(g->Pd), (long long)g->c_nnz, ph[TR_PH_IN], ph[TR_PH_UPLOAD],
          ph[TR_PH_ENGINE], ph[TR_PH_DOWNLOAD], ph[TR_PH_OUT], ph[TR_PH_ORDER], ph[TR_PH_TRAV], ph[TR_PH_COMM],
          g->check.seconds, g->t_dev_order, g->galerkin ? tilerap_path_name(g->path) : "tiles or csr per half",
          fills);
}

/* Every rank computed C: rows exchanged, hypre's C assembled and ordered. */
static hypre_ParCSRMatrix *assemble(tr_galerkin *g)
{
  tr_local_free_tiles(g);
  tr_exchange_c_rows(g);
  tr_assembly_offd_columns(g);
  tr_exchange_index_received(g);
  hypre_ParCSRMatrix *RAP = tr_assembly_blocks(g);
  tr_galerkin_phase(g, TR_PH_OUT);
  tr_order_rows(g, RAP);
  tr_galerkin_phase(g, TR_PH_ORDER);
  tr_assembly_finish(g, RAP);
  tr_galerkin_phase(g, TR_PH_OUT);
  if (tr_hypre_verbose() >= 2) report(g);
  return RAP;
}

static void free_stages(tr_galerkin *g)
{
  tr_local_free(g);
  tr_order_free(g);
  tr_assembly_free(g);
  if (g->Pext) hypre_CSRMatrixDestroy(g->Pext);
  if (g->C_int) hypre_CSRMatrixDestroy(g->C_int);
  if (g->C_ext) hypre_CSRMatrixDestroy(g->C_ext);
  free(g->colQ);
  hypre_TFree(g->ext_loc, HYPRE_MEMORY_HOST);
  hypre_TFree(g->ext_ptr, HYPRE_MEMORY_HOST);
  hypre_TFree(g->ext_rows, HYPRE_MEMORY_HOST);
  free(g->mapPQ);
  free(g->pext_col);
  free(g->rrow);
}

static int galerkin_run(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, HYPRE_Int keepT,
                        int force_diagonal, int order_hypre, int local_refusal, tr_kept *kept_in, tr_kept *kept_out,
                        hypre_ParCSRMatrix **RAP_out)
{
  *RAP_out = NULL;
  if (!A) return 1 + TILERAP_HYPRE_FWD_SHAPE;
  tr_galerkin g;
  memset(&g, 0, sizeof g);
  g.tp = tr_hypre_wtime();
  g.RT = RT; g.A = A; g.P = P; g.keepT = keepT;
  /* the tuning table's TILERAP_HYPRE_ORDER: hypre (default) or sorted */
  g.order_hypre = order_hypre && tr_knob_int(TR_KNOB_HYPRE_ORDER) == 0;
  g.kept_in = kept_in; g.kept_out = kept_out;
  g.comm = hypre_ParCSRMatrixComm(A);
  MPI_Comm_size(g.comm, &g.nprocs);
  MPI_Comm_rank(g.comm, &g.rank);
  int result = entry_checks(&g, local_refusal);
  if (result) return result;
  read_blocks(&g, force_diagonal);

  local_stages(&g);
  tr_kept_join(&g); /* a failed call still waits for the check thread */
  tr_order_ahead_join(&g); /* every path passes here: the thread never outlives the call */
  /* collective decision after the local work */
  tr_galerkin_phase(&g, TR_PH_OUT);
  if (any_failed(g.comm, g.nprocs, g.failed)) result = 1 + (g.failed ? g.reason : TILERAP_HYPRE_FWD_PEER);
  else *RAP_out = assemble(&g);
  free_stages(&g);
  return result;
}

int tr_hypre_galerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                      HYPRE_Int keepT, int force_diagonal, int order_hypre, int local_refusal,
                      hypre_ParCSRMatrix **RAP_out)
{
  tr_kept in, out;
  tr_kept_begin(&in);
  memset(&out, 0, sizeof out);
  const int r = galerkin_run(RT, A, P, keepT, force_diagonal, order_hypre, local_refusal, &in, &out, RAP_out);
  tr_kept_end(&in, &out, r == 0);
  return r;
}

int TileRAP_HypreGalerkin(hypre_ParCSRMatrix *RT, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                          HYPRE_Int keepT, int force_diagonal, hypre_ParCSRMatrix **RAP)
{
  return tr_hypre_galerkin(RT, A, P, keepT, force_diagonal, 1, -1, RAP);
}
