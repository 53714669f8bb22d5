/* Products of a CUDA build of hypre, on device memory.
 *
 * The product multiplies hypre's device CSR arrays as they are (the device
 * CSR products of tilerap_device.h; device tiles made in place from them
 * where a row of A is too long for that path), and C goes into arrays from
 * hypre's own device allocator
 * (hypre frees them) in the layout its device setup relies on: diagonal
 * first when asked for, offd empty on one rank.  Nothing goes through the
 * host.  The engine works on the legacy default stream; hypre's compute
 * stream is a blocking stream, so each side's work is ordered after the
 * other's without explicit events.
 *
 * Two entry points reach this file:
 *   tr_hypre_device_rapkt  one rank: C = R^T A P as one Galerkin plan when
 *                          R is P (BoomerAMG), else R^T (A P)
 *   hypre_CSRMatrixTripleMultiplyDevice  the local product inside hypre's
 *                          own multi-rank device RAPKT, which keeps the
 *                          exchanges of remote rows of P and of C's rows */
#include "hook_internal.h"
#include "tuning.h"

#include <stdio.h>
#include <string.h>

static int location_on_device(HYPRE_MemoryLocation location)
{
  const hypre_MemoryLocation loc = hypre_GetActualMemLocation(location);
  return loc == hypre_MEMORY_DEVICE || loc == hypre_MEMORY_UNIFIED;
}

int tr_hypre_on_device(hypre_ParCSRMatrix *M)
{
  return location_on_device(hypre_ParCSRMatrixMemoryLocation(M));
}

#if TR_HYPRE_DEVICE && TILERAP_HYPRE_SCALAR_OK

/* Phase clock of one product.  With a verbose report the GPU is drained
 * at each mark, so that each phase holds its own device time. */
typedef struct {
  double t, ph[TR_PH_N];
  int sync;
} tr_clock;

static void clock_start(tr_clock *c)
{
  memset(c, 0, sizeof *c);
  c->sync = tr_hypre_verbose() > 0;
  c->t = tr_hypre_wtime();
}

static void clock_mark(tr_clock *c, int ph)
{
  if (c->sync) hypre_SyncDevice();
  const double t = tr_hypre_wtime();
  c->ph[ph] += t - c->t;
  tr_hypre_add_phase(ph, t - c->t);
  c->t = t;
}

/* The CUDA engine takes hypre's device arrays (32-bit indices) unless the
 * CPU engine is named: on BoomerAMG's operators its products beat hypre's
 * default in CUDA builds (cuSPARSE's SpGEMM) on every operator measured,
 * and hypre's native device SpGEMM on most (BENCHMARKS.md 3b). */
static int device_refusal(void)
{
  if (!tr_hypre_enabled()) return TILERAP_HYPRE_FWD_DISABLED;
  if (sizeof(HYPRE_Int) != sizeof(int32_t)) return TILERAP_HYPRE_FWD_SIZE;
  const int named = tr_knob_int(TR_KNOB_ENGINE); /* 0 auto, 1 cpu, 2 cuda */
  if (named == 1 || !tilerap_engine_available(TILERAP_ENGINE_CUDA)) return TILERAP_HYPRE_FWD_DEVICE;
  if (tr_hypre_device_mismatch()) return TILERAP_HYPRE_FWD_ENGINE;
  return -1;
}

static int fail(int err, const char *what)
{
  tr_hypre_note("%s: tilerap error %d (%s): %s", what, err, tilerap_error_string(err), tilerap_last_error());
  return 1 + TILERAP_HYPRE_FWD_ENGINE;
}

/* Values present wherever entries are. */
static int csr_usable(hypre_CSRMatrix *M)
{
  if (!hypre_CSRMatrixI(M)) return 0;
  if (hypre_CSRMatrixNumNonzeros(M) > 0 && (!hypre_CSRMatrixJ(M) || !hypre_CSRMatrixData(M))) return 0;
  return 1;
}

/* A device CSR block of hypre as device tiles (rows in any order). */
static int csr_tiles(hypre_CSRMatrix *M, tilerap_tile_matrix **T)
{
  return tilerap_tile_from_unsorted_csr_device_i32((int32_t)hypre_CSRMatrixNumRows(M), (int32_t)hypre_CSRMatrixNumCols(M),
                                                   (const int32_t *)hypre_CSRMatrixI(M),
                                                   (const int32_t *)hypre_CSRMatrixJ(M), hypre_CSRMatrixData(M),
                                                   TILERAP_MEM_DEVICE, T);
}

/* An m x n device CSR of hypre's, arrays from hypre's allocator. */
static hypre_CSRMatrix *new_device_csr(HYPRE_Int m, HYPRE_Int n, HYPRE_Int nnz)
{
  hypre_CSRMatrix *M = hypre_CSRMatrixCreate(m, n, nnz);
  hypre_CSRMatrixInitialize_v2(M, 0, HYPRE_MEMORY_DEVICE);
  return M;
}

/* A sorted device CSR with rows whose diagonal entry is missing in
 * hypre's layout: the diagonal added as an explicit zero, then moved
 * first (hypre's own helpers do this rare case). */
static hypre_CSRMatrix *diag_first_missing(hypre_CSRMatrix *M)
{
  if (hypre_CSRMatrixCheckForMissingDiagonal(M)) {
    hypre_CSRMatrix *zero = hypre_CSRMatrixIdentityDevice(hypre_CSRMatrixNumRows(M), 0.0);
    hypre_CSRMatrix *sum = hypre_CSRMatrixAddDevice(1.0, M, 1.0, zero);
    hypre_CSRMatrixDestroy(zero);
    hypre_CSRMatrixDestroy(M);
    M = sum;
  }
  hypre_CSRMatrixMoveDiagFirstDevice(M);
  return M;
}

/* C's tiles as hypre's device CSR; diag_first: diagonal first, the rest
 * ascending, a missing diagonal added as an explicit zero (hypre's own
 * helpers do that rare case).  NULL on failure (noted). */
static hypre_CSRMatrix *tiles_to_hypre(const tilerap_tile_matrix *T, int diag_first)
{
  if (T->nnz > INT32_MAX) {
    tr_hypre_note("C has %lld entries: beyond hypre's 32-bit row pointers", (long long)T->nnz);
    return NULL;
  }
  hypre_CSRMatrix *M = new_device_csr(T->m, T->n, (HYPRE_Int)T->nnz);
  int32_t *i = (int32_t *)hypre_CSRMatrixI(M), *j = (int32_t *)hypre_CSRMatrixJ(M);
  double *a = hypre_CSRMatrixData(M);
  int err = TILERAP_ERR_STRUCTURE;
  if (diag_first && T->nnz > 0) err = tilerap_tile_to_csr_device_diag_first_i32(T, i, j, a, TILERAP_MEM_DEVICE);
  if (err == TILERAP_ERR_STRUCTURE) {
    err = tilerap_tile_to_csr_device_i32(T, i, j, a, TILERAP_MEM_DEVICE);
    if (!err && diag_first) M = diag_first_missing(M);
  }
  if (err) {
    fail(err, "C to hypre's device CSR");
    hypre_CSRMatrixDestroy(M);
    return NULL;
  }
  return M;
}

/* hypre's ParCSR C of one rank around its diag block. */
static hypre_ParCSRMatrix *one_rank_parcsr(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                                           hypre_CSRMatrix *C_diag)
{
  hypre_ParCSRMatrix *C = hypre_ParCSRMatrixCreate(hypre_ParCSRMatrixComm(A), hypre_ParCSRMatrixGlobalNumCols(R),
                                                   hypre_ParCSRMatrixGlobalNumCols(P), hypre_ParCSRMatrixColStarts(R),
                                                   hypre_ParCSRMatrixColStarts(P), 0,
                                                   hypre_CSRMatrixNumNonzeros(C_diag), 0);
  hypre_CSRMatrixDestroy(hypre_ParCSRMatrixDiag(C));
  hypre_ParCSRMatrixDiag(C) = C_diag;
  hypre_CSRMatrixDestroy(hypre_ParCSRMatrixOffd(C));
  hypre_ParCSRMatrixOffd(C) = new_device_csr(hypre_CSRMatrixNumRows(C_diag), 0, 0);
  /* what hypre's RAPKT dispatcher does after its device product */
  hypre_CSRMatrixSetRownnz(hypre_ParCSRMatrixDiag(C));
  hypre_CSRMatrixSetRownnz(hypre_ParCSRMatrixOffd(C));
  return C;
}

/* path: the Galerkin plan's path and the fills it chose by (a_fill < 0:
 * two binary products, each choosing its own). */
static void report(const char *what, const tr_clock *c, const tilerap_tile_matrix *A, const tilerap_tile_matrix *P,
                   const tilerap_tile_matrix *C, const char *path, double a_fill, double p_fill)
{
  if (tr_hypre_verbose() < 2) return;
  char fills[64] = "";
  if (a_fill >= 0) snprintf(fills, sizeof fills, " (entries per tile: A %.2f, P %.2f)", a_fill, p_fill);
  fprintf(stderr,
          "tilerap_hypre: %s on device memory: %d x %d (A %lld entries, P %lld, C %lld): to tiles %.4f, engine %.4f, "
          "to hypre %.4f, transpose kept %.4f s; path %s%s\n",
          what, C ? (int)C->m : 0, C ? (int)C->n : 0, A ? (long long)A->nnz : 0LL, P ? (long long)P->nnz : 0LL,
          C ? (long long)C->nnz : 0LL, c->ph[TR_PH_IN], c->ph[TR_PH_ENGINE], c->ph[TR_PH_OUT], c->ph[TR_PH_TRANSPOSE],
          path, fills);
}

static tilerap_csr_device_i32 csr_operand(hypre_CSRMatrix *M)
{
  tilerap_csr_device_i32 v = {(int32_t)hypre_CSRMatrixNumRows(M), (int32_t)hypre_CSRMatrixNumCols(M),
                              (const int32_t *)hypre_CSRMatrixI(M), (const int32_t *)hypre_CSRMatrixJ(M),
                              hypre_CSRMatrixData(M)};
  return v;
}

/* *xy = x y into arrays of tilerap's pool (an intermediate product, freed
 * with pool_free; on failure nothing is held). */
static int pool_product(const tilerap_csr_device_i32 *x, const tilerap_csr_device_i32 *y, tilerap_csr_device_i32 *xy)
{
  tilerap_csr_device_product X = NULL;
  int64_t nnz = 0;
  int32_t *rp = NULL, *col = NULL;
  double *val = NULL;
  int err = tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, x, y, 0, &X, &nnz);
  if (!err) err = tilerap_device_malloc(((size_t)x->m + 1) * sizeof(int32_t), (void **)&rp);
  if (!err) err = tilerap_device_malloc((size_t)(nnz ? nnz : 1) * sizeof(int32_t), (void **)&col);
  if (!err) err = tilerap_device_malloc((size_t)(nnz ? nnz : 1) * sizeof(double), (void **)&val);
  if (!err) err = tilerap_csr_device_product_fill_i32(X, x, y, 0, rp, col, val);
  tilerap_csr_device_product_destroy(&X);
  if (err) { tilerap_device_free(rp); tilerap_device_free(col); tilerap_device_free(val); rp = col = NULL; val = NULL; }
  const tilerap_csr_device_i32 out = {x->m, y->n, rp, col, val};
  *xy = out;
  return err;
}

static void pool_free(tilerap_csr_device_i32 *xy)
{
  tilerap_device_free((void *)xy->rowptr); tilerap_device_free((void *)xy->colidx); tilerap_device_free((void *)xy->val);
  xy->rowptr = xy->colidx = NULL;
  xy->val = NULL;
}

/* C = R^T A P on the CSR path, straight from hypre's device arrays into
 * new ones from hypre's allocator: one P^T A P product when R is P, else
 * A P into arrays of tilerap's pool and R^T (A P).  *RdT: R's transpose
 * as the product made it (values and all), when asked for.  0, or an
 * error (noted). */
static int csr_route_rap(hypre_CSRMatrix *Rd, hypre_CSRMatrix *Ad, hypre_CSRMatrix *Pd, int diag_first,
                         hypre_CSRMatrix **C_diag, hypre_CSRMatrix **RdT)
{
  const tilerap_csr_device_i32 r = csr_operand(Rd), a = csr_operand(Ad), p = csr_operand(Pd);
  tilerap_csr_device_product X = NULL;
  int64_t cnnz = 0;
  hypre_CSRMatrix *M = NULL, *T = NULL;
  tilerap_csr_device_i32 ap = {a.m, p.n, NULL, NULL, NULL};
  int err;
  if (Rd == Pd) {
    err = tilerap_csr_device_product_create_i32(TILERAP_CSR_PTAP, &a, &p, 0, &X, &cnnz);
  } else {
    err = pool_product(&a, &p, &ap);
    if (!err) err = tilerap_csr_device_product_create_i32(TILERAP_CSR_ATB, &r, &ap, 0, &X, &cnnz);
  }
  const tilerap_csr_device_i32 *left = Rd == Pd ? &a : &r, *right = Rd == Pd ? &p : &ap;
  if (!err) {
    M = new_device_csr(r.n, p.n, (HYPRE_Int)cnnz);
    int32_t *i = (int32_t *)hypre_CSRMatrixI(M), *j = (int32_t *)hypre_CSRMatrixJ(M);
    err = tilerap_csr_device_product_fill_i32(X, left, right, diag_first ? TILERAP_CSR_DIAG_FIRST : 0, i, j,
                                              hypre_CSRMatrixData(M));
    if (err == TILERAP_ERR_STRUCTURE && diag_first) {
      err = tilerap_csr_device_product_fill_i32(X, left, right, 0, i, j, hypre_CSRMatrixData(M));
      if (!err) M = diag_first_missing(M);
    }
  }
  if (!err && RdT) {
    T = new_device_csr(r.n, r.m, hypre_CSRMatrixNumNonzeros(Rd));
    err = tilerap_csr_device_product_transpose_i32(X, (int32_t *)hypre_CSRMatrixI(T), (int32_t *)hypre_CSRMatrixJ(T),
                                                   hypre_CSRMatrixData(T));
  }
  tilerap_csr_device_product_destroy(&X);
  pool_free(&ap);
  if (err) {
    hypre_CSRMatrixDestroy(M);
    hypre_CSRMatrixDestroy(T);
    return fail(err, "device CSR Galerkin product");
  }
  *C_diag = M;
  if (RdT) *RdT = T;
  return 0;
}

/* One rank, the CSR path: C and, when hypre keeps one, R's transpose
 * from the same product (hypre's own RAPKT makes it too). */
static int rapkt_csr_route(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P, HYPRE_Int keep_transpose,
                           HYPRE_Int has_diagonal, int64_t a_longest, tr_clock *c, hypre_ParCSRMatrix **C_out)
{
  hypre_CSRMatrix *Rd = hypre_ParCSRMatrixDiag(R), *Ad = hypre_ParCSRMatrixDiag(A), *Pd = hypre_ParCSRMatrixDiag(P);
  hypre_CSRMatrix *C_diag = NULL, *RdT = NULL;
  const int want_t = keep_transpose && !hypre_ParCSRMatrixDiagT(R);
  clock_mark(c, TR_PH_IN);
  int rc = csr_route_rap(R == P ? Pd : Rd, Ad, Pd, has_diagonal != 0, &C_diag, want_t ? &RdT : NULL);
  clock_mark(c, TR_PH_ENGINE);
  if (rc) return rc;
  *C_out = one_rank_parcsr(R, A, P, C_diag);
  if (want_t) hypre_ParCSRMatrixDiagT(R) = RdT;
  hypre_SyncDevice(); /* C complete before hypre reads it from the host side */
  clock_mark(c, TR_PH_OUT);
  if (tr_hypre_verbose() >= 2)
    fprintf(stderr,
            "tilerap_hypre: %s on device memory: %d x %d (A %lld entries, P %lld, C %lld): engine %.4f s%s, "
            "to hypre %.4f s; path device csr (longest row of A %lld)\n",
            R == P ? "P^T A P" : "R^T A P", (int)hypre_CSRMatrixNumRows(C_diag), (int)hypre_CSRMatrixNumCols(C_diag),
            (long long)hypre_CSRMatrixNumNonzeros(Ad), (long long)hypre_CSRMatrixNumNonzeros(Pd),
            (long long)hypre_CSRMatrixNumNonzeros(C_diag), c->ph[TR_PH_ENGINE],
            want_t ? " (R's transpose kept from it)" : "", c->ph[TR_PH_OUT],
            (long long)a_longest);
  return 0;
}

int tr_hypre_device_rapkt(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                          HYPRE_Int keep_transpose, HYPRE_Int has_diagonal, hypre_ParCSRMatrix **C_out)
{
  *C_out = NULL;
  int reason = device_refusal();
  if (reason >= 0) return 1 + reason;
  if (!tr_hypre_on_device(R) || !tr_hypre_on_device(A) || !tr_hypre_on_device(P)) return 1 + TILERAP_HYPRE_FWD_DEVICE;
  int nprocs = 1;
  MPI_Comm_size(hypre_ParCSRMatrixComm(A), &nprocs);
  if (nprocs > 1) return 1 + TILERAP_HYPRE_FWD_DELEGATED;
  hypre_CSRMatrix *Rd = hypre_ParCSRMatrixDiag(R), *Ad = hypre_ParCSRMatrixDiag(A), *Pd = hypre_ParCSRMatrixDiag(P);
  const HYPRE_Int n = hypre_CSRMatrixNumRows(Ad), ncR = hypre_CSRMatrixNumCols(Rd), ncP = hypre_CSRMatrixNumCols(Pd);
  if (hypre_CSRMatrixNumCols(Ad) != n || hypre_CSRMatrixNumRows(Pd) != n || hypre_CSRMatrixNumRows(Rd) != n ||
      (has_diagonal && ncR != ncP))
    return 1 + TILERAP_HYPRE_FWD_SHAPE;
  if (!csr_usable(Rd) || !csr_usable(Ad) || !csr_usable(Pd)) return 1 + TILERAP_HYPRE_FWD_SHAPE;

  tr_clock c;
  clock_start(&c);
  const int galerkin = R == P;
  {
    const tilerap_csr_device_i32 a = csr_operand(Ad), p = csr_operand(Pd);
    tilerap_path route = TILERAP_PATH_TILES;
    int64_t longest = -1; /* read for the verbose report only: a wait */
    int err = tilerap_csr_device_path_i32(TILERAP_CSR_PTAP, &a, &p, &route, tr_hypre_verbose() >= 2 ? &longest : NULL);
    if (err) return fail(err, "device Galerkin product");
    if (route == TILERAP_PATH_CSR) return rapkt_csr_route(R, A, P, keep_transpose, has_diagonal, longest, &c, C_out);
  }
  tilerap_options opt;
  tilerap_options_default(&opt);
  tilerap_tile_matrix *tA = NULL, *tP = NULL, *tR = NULL, *tRt = NULL, *tAP = NULL, *tC = NULL;
  tilerap_path path = TILERAP_PATH_TILES;
  double a_fill = -1, p_fill = -1;
  int err = csr_tiles(Ad, &tA);
  if (!err) err = csr_tiles(Pd, &tP);
  if (!err && !galerkin) err = csr_tiles(Rd, &tR);
  clock_mark(&c, TR_PH_IN);
  if (!err && galerkin) {
    err = tilerap_ptap_path(tA, tP, &opt, &path, &a_fill, &p_fill);
    if (!err) err = tilerap_ptap(tA, tP, &opt, &tC);
  } else if (!err) {
    err = tilerap_tile_transpose(tR, &tRt, NULL);
    if (!err) err = tilerap_spgemm(tA, tP, &opt, &tAP);
    if (!err) err = tilerap_spgemm(tRt, tAP, &opt, &tC);
  }
  tilerap_tile_destroy(&tR);
  tilerap_tile_destroy(&tRt);
  tilerap_tile_destroy(&tAP);
  clock_mark(&c, TR_PH_ENGINE);
  int rc = 0;
  hypre_CSRMatrix *C_diag = NULL;
  if (err) rc = fail(err, "device Galerkin product");
  else if (!(C_diag = tiles_to_hypre(tC, has_diagonal != 0))) rc = 1 + TILERAP_HYPRE_FWD_ENGINE;
  clock_mark(&c, TR_PH_OUT);
  if (!rc) {
    *C_out = one_rank_parcsr(R, A, P, C_diag);
    /* hypre's restriction (MatvecT) uses R's stored transpose when there */
    if (keep_transpose && !hypre_ParCSRMatrixDiagT(R)) {
      hypre_CSRMatrix *RdT = NULL;
      hypre_CSRMatrixTransposeDevice(Rd, &RdT, 1);
      hypre_ParCSRMatrixDiagT(R) = RdT;
    }
    hypre_SyncDevice(); /* C complete before hypre reads it from the host side */
    clock_mark(&c, TR_PH_TRANSPOSE);
    report(galerkin ? "P^T A P" : "R^T A P", &c, tA, tP, tC, galerkin ? tilerap_path_name(path) : "R^T (A P)", a_fill,
           p_fill);
  }
  tilerap_tile_destroy(&tA);
  tilerap_tile_destroy(&tP);
  tilerap_tile_destroy(&tC);
  return rc;
}

typedef hypre_CSRMatrix *(*tr_triple_fn)(hypre_CSRMatrix *, hypre_CSRMatrix *, hypre_CSRMatrix *);

static tr_triple_fn original_triple(void)
{
  static tr_triple_fn fn;
  if (!fn) fn = (tr_triple_fn)tr_hypre_next_symbol("hypre_CSRMatrixTripleMultiplyDevice");
  return fn;
}

/* C = X (Y Z) on the CSR path: Y Z into arrays of tilerap's pool, C into
 * new ones from hypre's allocator, rows sorted (what hypre's own triple
 * product gives).  0, or an error (noted). */
static int csr_route_triple(hypre_CSRMatrix *X, hypre_CSRMatrix *Y, hypre_CSRMatrix *Z, hypre_CSRMatrix **out)
{
  const tilerap_csr_device_i32 x = csr_operand(X), y = csr_operand(Y), z = csr_operand(Z);
  tilerap_csr_device_product Cp = NULL;
  int64_t cnnz = 0;
  hypre_CSRMatrix *M = NULL;
  tilerap_csr_device_i32 yz;
  int err = pool_product(&y, &z, &yz);
  if (!err) err = tilerap_csr_device_product_create_i32(TILERAP_CSR_AB, &x, &yz, 0, &Cp, &cnnz);
  if (!err) {
    M = new_device_csr(x.m, z.n, (HYPRE_Int)cnnz);
    err = tilerap_csr_device_product_fill_i32(Cp, &x, &yz, 0, (int32_t *)hypre_CSRMatrixI(M),
                                              (int32_t *)hypre_CSRMatrixJ(M), hypre_CSRMatrixData(M));
  }
  tilerap_csr_device_product_destroy(&Cp);
  pool_free(&yz);
  if (err) {
    hypre_CSRMatrixDestroy(M);
    return fail(err, "device CSR triple product");
  }
  *out = M;
  return 0;
}

/* X Y Z on the GPU; 0 with *out, or 1 + reason. */
static int triple(hypre_CSRMatrix *X, hypre_CSRMatrix *Y, hypre_CSRMatrix *Z, hypre_CSRMatrix **out)
{
  *out = NULL;
  int reason = device_refusal();
  if (reason >= 0) return 1 + reason;
  if (!X || !Y || !Z || hypre_CSRMatrixNumCols(X) != hypre_CSRMatrixNumRows(Y) ||
      hypre_CSRMatrixNumCols(Y) != hypre_CSRMatrixNumRows(Z) || !csr_usable(X) || !csr_usable(Y) || !csr_usable(Z))
    return 1 + TILERAP_HYPRE_FWD_SHAPE;
  if (!location_on_device(hypre_CSRMatrixMemoryLocation(X)) || !location_on_device(hypre_CSRMatrixMemoryLocation(Y)) ||
      !location_on_device(hypre_CSRMatrixMemoryLocation(Z)))
    return 1 + TILERAP_HYPRE_FWD_DEVICE;
  tr_clock c;
  clock_start(&c);
  {
    const tilerap_csr_device_i32 y = csr_operand(Y), z = csr_operand(Z);
    tilerap_path route = TILERAP_PATH_TILES;
    int64_t longest = -1;
    const int err =
        tilerap_csr_device_path_i32(TILERAP_CSR_AB, &y, &z, &route, tr_hypre_verbose() >= 2 ? &longest : NULL);
    if (err) return fail(err, "device triple product");
    if (route == TILERAP_PATH_CSR) {
      clock_mark(&c, TR_PH_IN);
      const int rc = csr_route_triple(X, Y, Z, out);
      clock_mark(&c, TR_PH_ENGINE);
      if (!rc && tr_hypre_verbose() >= 2)
        fprintf(stderr, "tilerap_hypre: triple product on device memory: %d x %d (C %lld entries): engine %.4f s; path "
                        "device csr (longest row of Y %lld)\n",
                (int)hypre_CSRMatrixNumRows(*out), (int)hypre_CSRMatrixNumCols(*out),
                (long long)hypre_CSRMatrixNumNonzeros(*out), c.ph[TR_PH_ENGINE], (long long)longest);
      return rc;
    }
  }
  tilerap_options opt;
  tilerap_options_default(&opt);
  tilerap_tile_matrix *tX = NULL, *tY = NULL, *tZ = NULL, *tYZ = NULL, *tC = NULL;
  int err = csr_tiles(X, &tX);
  if (!err) err = csr_tiles(Y, &tY);
  if (!err) err = csr_tiles(Z, &tZ);
  clock_mark(&c, TR_PH_IN);
  if (!err) err = tilerap_spgemm(tY, tZ, &opt, &tYZ);
  if (!err) err = tilerap_spgemm(tX, tYZ, &opt, &tC);
  clock_mark(&c, TR_PH_ENGINE);
  int rc = 0;
  if (err) rc = fail(err, "device triple product");
  else if (!(*out = tiles_to_hypre(tC, 0))) rc = 1 + TILERAP_HYPRE_FWD_ENGINE;
  else hypre_SyncDevice();
  clock_mark(&c, TR_PH_OUT);
  if (!rc) report("triple product", &c, tY, tZ, tC, "X (Y Z)", -1, -1);
  tilerap_tile_destroy(&tX);
  tilerap_tile_destroy(&tY);
  tilerap_tile_destroy(&tZ);
  tilerap_tile_destroy(&tYZ);
  tilerap_tile_destroy(&tC);
  return rc;
}

/* Interposed: the local product of hypre's device RAPKT on several ranks
 * (Rbar^T Abar Pbar), and of any other caller of this device helper. */
hypre_CSRMatrix *hypre_CSRMatrixTripleMultiplyDevice(hypre_CSRMatrix *A, hypre_CSRMatrix *B, hypre_CSRMatrix *C)
{
  const int ep = TILERAP_HYPRE_EP_TRIPLE_DEVICE;
  double t0 = tr_hypre_wtime();
  hypre_CSRMatrix *ABC = NULL;
  int rc = triple(A, B, C, &ABC);
  if (rc == 0) {
    tr_hypre_count_computed(ep, tr_hypre_wtime() - t0);
    return ABC;
  }
  t0 = tr_hypre_wtime();
  ABC = original_triple()(A, B, C);
  tr_hypre_count_forwarded(ep, rc - 1, tr_hypre_wtime() - t0);
  return ABC;
}

#else /* no device path in this build */

int tr_hypre_device_rapkt(hypre_ParCSRMatrix *R, hypre_ParCSRMatrix *A, hypre_ParCSRMatrix *P,
                          HYPRE_Int keep_transpose, HYPRE_Int has_diagonal, hypre_ParCSRMatrix **C)
{
  (void)R; (void)A; (void)P; (void)keep_transpose; (void)has_diagonal;
  *C = NULL;
  return 1 + TILERAP_HYPRE_FWD_DEVICE;
}

#endif
