/* MATMPITILE on any number of ranks (TAP, run by test/petsc_mpi.sh with
 * mpiexec -n 1, 2, 4):
 *   - the type: names, root names, seqtile blocks after every MPIAIJ
 *     preallocation entry point, conversions, duplicate, submatrix;
 *   - random rectangular distributed products AB and PtAP with
 *     (mpitile, mpiaij), (mpiaij, mpitile), (mpitile, mpitile) against MPIAIJ's
 *     own product: same structure, relative error <= 1e-14, C of type
 *     mpiaijtile, local products planned by the tile engine on every rank;
 *   - MAT_REUSE_MATRIX after new values: numeric phases only (no plan), same
 *     result as MPIAIJ's reuse;
 *   - MAT_REUSE_MATRIX after MatZeroRows on A, after new entries in A or P,
 *     with other operand objects of the same pattern (MatProductReplaceMats):
 *     planned again, same values as MPIAIJ's fresh product;
 *   - AtB (MatTransposeMatMult) on the tile engine; products with mpidense
 *     or MPIMAIJ operands, R*A*P (ABC), C with MAT_FORCE_DIAGONAL_ENTRIES
 *     and products with an algorithm picked in the options (hypre) the
 *     MPIAIJ way, same values as MPIAIJ;
 *   - -mat_tile_mpi_products aij and auto (MPIAIJ's own algorithms on
 *     several ranks with the CPU engine); every other check runs with tile.
 * Every check is collective: a rank's failure fails the check everywhere. */
#include "tilerap_petsc.h"
#include "petsc_testutil.h"

/* The plain operand of mixed products: where mpitile is a device type (a
 * PETSc built with CUDA, 3.25 on) the device AIJ, as PETSc's own device
 * types mix (a host MPIAIJ operand sends a product to MPIAIJ there). */
#if TU_DEVICE_TYPES
  #define PLAIN_MPI MATMPIAIJCUSPARSE
#else
  #define PLAIN_MPI MATMPIAIJ
#endif

/* local size of a global size n on this rank: uneven on purpose */
static PetscInt local_size(PetscInt n, PetscMPIInt rank, PetscMPIInt size)
{
  PetscInt base = n / size, extra = n % size, sz = base + (rank < extra ? 1 : 0);
  if (size > 1) { /* shift some rows from odd to even ranks */
    PetscInt shift = base / 3;
    if (rank % 2 == 0 && rank + 1 < size) sz += shift;
    if (rank % 2 == 1) sz -= shift;
  }
  return sz;
}

/* M x N matrix with local sizes m x n; entries depend only on the global
 * row and seed (the same matrix on any number of ranks). */
static PetscErrorCode random_mpi_mat(MatType type, PetscInt M, PetscInt N, PetscInt m, PetscInt n, PetscInt per_row, PetscBool diag, unsigned long long seed, Mat *A)
{
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, m, n, M, N));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, per_row + 1, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, per_row + 1, NULL, per_row + 1, NULL));
  PetscCall(MatGetOwnershipRange(*A, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    unsigned long long s = seed * 1000003ULL + (unsigned long long)i * 7919ULL;
    for (PetscInt k = 0; k < per_row; k++) {
      PetscInt    j = (PetscInt)(tu_rand(&s) * N);
      PetscScalar v = 2.0 * tu_rand(&s) - 1.0;
      if (j >= N) j = N - 1;
      /* some entries near the diagonal block, some far: both blocks used */
      if (k % 2 == 0) j = PetscMin(N - 1, (i * N) / M + (j % 7));
      PetscCall(MatSetValue(*A, i, j, v, INSERT_VALUES));
    }
    if (diag && i < N) PetscCall(MatSetValue(*A, i, i, 4.0 + tu_rand(&s), INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* New values, same pattern: every stored entry scaled by a row-dependent factor, plus a shift of the diagonal. */
static PetscErrorCode new_values(Mat A, PetscReal f)
{
  Vec l;

  PetscFunctionBeginUser;
  PetscCall(MatCreateVecs(A, NULL, &l));
  {
    PetscInt     rstart, rend;
    PetscScalar *a;
    PetscCall(VecGetOwnershipRange(l, &rstart, &rend));
    PetscCall(VecGetArray(l, &a));
    for (PetscInt i = rstart; i < rend; i++) a[i - rstart] = f + 0.01 * (PetscReal)(i % 13);
    PetscCall(VecRestoreArray(l, &a));
  }
  PetscCall(MatDiagonalScale(A, l, NULL)); /* MPIAIJ scales the blocks through their ops directly */
  PetscCall(VecDestroy(&l));
  PetscFunctionReturn(0);
}

/* The product through its MatXxx call (MatMatMult, MatTransposeMatMult, MatPtAP). */
static PetscErrorCode api_product(MatProductType type, Mat A, Mat B, MatReuse reuse, Mat *C)
{
  PetscFunctionBeginUser;
  if (type == MATPRODUCT_PtAP) PetscCall(MatPtAP(A, B, reuse, 2.0, C));
  else if (type == MATPRODUCT_AtB) PetscCall(MatTransposeMatMult(A, B, reuse, 2.0, C));
  else PetscCall(MatMatMult(A, B, reuse, 2.0, C));
  PetscFunctionReturn(0);
}

/* ||X - Y||_F / ||Y||_F for any two matrices of the same size (patterns may
 * differ: a product planned again has the new pattern, MPIAIJ's reuse
 * keeps the old one). */
static PetscErrorCode value_diff(Mat X, Mat Y, PetscReal *rel)
{
  Mat       Xa, Ya;
  PetscReal nd, ny;

  PetscFunctionBeginUser;
  PetscCall(MatConvert(X, MATAIJ, MAT_INITIAL_MATRIX, &Xa));
  PetscCall(MatConvert(Y, MATAIJ, MAT_INITIAL_MATRIX, &Ya));
  PetscCall(MatAXPY(Xa, -1.0, Ya, DIFFERENT_NONZERO_PATTERN));
  PetscCall(MatNorm(Xa, NORM_FROBENIUS, &nd));
  PetscCall(MatNorm(Ya, NORM_FROBENIUS, &ny));
  *rel = ny > 0 ? nd / ny : nd;
  PetscCall(MatDestroy(&Xa));
  PetscCall(MatDestroy(&Ya));
  PetscFunctionReturn(0);
}

static PetscErrorCode all_ranks(PetscBool mine, PetscBool *all)
{
  PetscFunctionBeginUser;
  PetscCall(MPIU_Allreduce(&mine, all, 1, TILE_TEST_MPI_BOOL, MPI_LAND, PETSC_COMM_WORLD));
  PetscFunctionReturn(0);
}

static PetscErrorCode blocks_are_tile(Mat A, PetscBool *all)
{
  Mat             Ad, Ao;
  const PetscInt *garray;
  PetscBool       t1 = PETSC_FALSE, t2 = PETSC_FALSE;

  PetscFunctionBeginUser;
  PetscCall(MatMPIAIJGetSeqAIJ(A, &Ad, &Ao, &garray));
  if (Ad) PetscCall(PetscObjectTypeCompare((PetscObject)Ad, MATSEQAIJTILE, &t1));
  if (Ao) PetscCall(PetscObjectTypeCompare((PetscObject)Ao, MATSEQAIJTILE, &t2));
  PetscCall(all_ranks((PetscBool)(t1 && t2), all));
  PetscFunctionReturn(0);
}

static PetscErrorCode is_type(Mat A, MatType t, PetscBool *all)
{
  PetscBool flg;

  PetscFunctionBeginUser;
  PetscCall(PetscObjectTypeCompare((PetscObject)A, t, &flg));
  PetscCall(all_ranks(flg, all));
  PetscFunctionReturn(0);
}

static PetscErrorCode test_type(PetscMPIInt size)
{
  Mat       A, B, S;
  PetscBool ok, ok2;
  IS        is;
  PetscInt  rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(random_mpi_mat(MATMPITILE, 60, 60, PETSC_DECIDE, PETSC_DECIDE, 4, PETSC_TRUE, 1, &A));
  PetscCall(is_type(A, MATMPIAIJTILE, &ok));
  PetscCall(tu_ok(ok, "type: MatSetType(mpitile) gives objects of type %s", MATMPIAIJTILE));
  PetscCall(blocks_are_tile(A, &ok));
  PetscCall(tu_ok(ok, "type: MatMPIAIJSetPreallocation leaves seqtile diagonal and off-diagonal blocks"));
  {
    PetscBool base;
    PetscCall(PetscObjectBaseTypeCompare((PetscObject)A, MATMPIAIJ, &base));
    PetscCall(tu_ok(base, "type: recognised as MPIAIJ by prefix (PetscObjectBaseTypeCompare)"));
  }
  PetscCall(MatCreate(PETSC_COMM_WORLD, &B));
  PetscCall(MatSetSizes(B, PETSC_DECIDE, PETSC_DECIDE, 10, 10));
  PetscCall(MatSetType(B, MATTILE));
  PetscCall(is_type(B, size > 1 ? MATMPIAIJTILE : MATSEQAIJTILE, &ok));
  PetscCall(tu_ok(ok, "type: root name '%s' resolves to %s on %d rank(s)", MATTILE, size > 1 ? MATMPIAIJTILE : MATSEQAIJTILE, (int)size));
  PetscCall(MatDestroy(&B));

  PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &B));
  PetscCall(is_type(B, MATMPIAIJTILE, &ok));
  PetscCall(blocks_are_tile(B, &ok2));
  PetscCall(tu_ok(ok && ok2, "type: MatDuplicate keeps mpiaijtile and seqtile blocks"));
  PetscCall(MatDestroy(&B));

  PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &B));
  PetscCall(is_type(B, MATMPIAIJ, &ok));
  {
    Mat             Bd, Bo;
    const PetscInt *g;
    PetscBool       p1, p2;
    PetscCall(MatMPIAIJGetSeqAIJ(B, &Bd, &Bo, &g));
    PetscCall(PetscObjectTypeCompare((PetscObject)Bd, MATSEQAIJ, &p1));
    PetscCall(PetscObjectTypeCompare((PetscObject)Bo, MATSEQAIJ, &p2));
    PetscCall(all_ranks((PetscBool)(p1 && p2), &ok2));
  }
  PetscCall(tu_ok(ok && ok2, "type: MatConvert to mpiaij gives plain mpiaij with seqaij blocks"));
  {
    Mat       C;
    PetscReal err;
    PetscBool same;
    PetscCall(MatConvert(B, MATMPITILE, MAT_INITIAL_MATRIX, &C));
    PetscCall(is_type(C, MATMPIAIJTILE, &ok));
    PetscCall(blocks_are_tile(C, &ok2));
    PetscCall(tu_mpi_compare(C, A, &same, &err));
    PetscCall(tu_ok(ok && ok2 && same && err == 0, "type: MatConvert mpiaij -> mpitile and back is exact with seqtile blocks"));
    PetscCall(MatDestroy(&C));
  }
  PetscCall(MatDestroy(&B));

  /* MatCreateSubMatrix (GAMG's repartitioning and process reduction) */
  PetscCall(MatGetOwnershipRange(A, &rstart, &rend));
  PetscCall(ISCreateStride(PETSC_COMM_WORLD, (rend - rstart) / 2, rstart, 2, &is));
  PetscCall(MatCreateSubMatrix(A, is, is, MAT_INITIAL_MATRIX, &S));
  PetscCall(is_type(S, MATMPIAIJTILE, &ok));
  PetscCall(blocks_are_tile(S, &ok2));
  PetscCall(tu_ok(ok && ok2, "type: MatCreateSubMatrix gives mpiaijtile with seqtile blocks"));
  PetscCall(MatDestroy(&S));
  PetscCall(ISDestroy(&is));

  /* COO preallocation (the products' assembly) */
  {
    PetscInt     n = rend - rstart, *ci, *cj;
    PetscScalar *cv;
    Mat          C;
    PetscCall(PetscMalloc3(2 * n, &ci, 2 * n, &cj, 2 * n, &cv));
    for (PetscInt k = 0; k < n; k++) {
      ci[2 * k]     = rstart + k;
      cj[2 * k]     = rstart + k;
      ci[2 * k + 1] = rstart + k;
      cj[2 * k + 1] = (rstart + k + 29) % 60;
      cv[2 * k]     = 1.0;
      cv[2 * k + 1] = -0.5;
    }
    PetscCall(MatCreate(PETSC_COMM_WORLD, &C));
    PetscCall(MatSetSizes(C, n, n, 60, 60));
    PetscCall(MatSetType(C, MATMPITILE));
    PetscCall(MatSetPreallocationCOO(C, 2 * n, ci, cj));
    PetscCall(MatSetValuesCOO(C, cv, INSERT_VALUES));
    PetscCall(blocks_are_tile(C, &ok));
    PetscCall(tu_ok(ok, "type: MatSetPreallocationCOO leaves seqtile blocks"));
    PetscCall(MatDestroy(&C));
    PetscCall(PetscFree3(ci, cj, cv));
  }
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(0);
}

typedef struct {
  const char    *name;
  MatProductType type;
  MatType        ta, tb;
  PetscInt       M, K, N; /* AB: A M x K, B K x N; PtAP: A K x K, P K x N */
} Case;

static PetscErrorCode run_case(const Case *c, PetscMPIInt rank, PetscMPIInt size, PetscBool api)
{
  Mat       A, B, Aa, Ba, C, Cref;
  PetscInt  ma, ka, nb, p0 = 0, p1 = 0, n0 = 0, n1 = 0, p2 = 0, n2 = 0, f0 = 0, f1 = 0;
  PetscBool same, ok, planned;
  PetscReal err;
  char      name[128];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(name, sizeof name, "%s %s (%s, %s) %" PetscInt_FMT "x%" PetscInt_FMT "x%" PetscInt_FMT "%s", c->name, MatProductTypes[c->type], c->ta, c->tb, c->M, c->K, c->N,
                          api ? "" : " via MatProductCreate"));
  ka = local_size(c->K, rank, size);
  nb = local_size(c->N, (size - 1 - rank), size); /* another layout for the columns */
  if (c->type == MATPRODUCT_PtAP) {
    PetscCall(random_mpi_mat(c->ta, c->K, c->K, ka, ka, 6, PETSC_TRUE, 11, &A));
    PetscCall(random_mpi_mat(c->tb, c->K, c->N, ka, nb, 3, PETSC_FALSE, 12, &B));
  } else if (c->type == MATPRODUCT_AtB) { /* A K x M, B K x N */
    ma = local_size(c->M, rank, size);
    PetscCall(random_mpi_mat(c->ta, c->K, c->M, ka, ma, 5, PETSC_FALSE, 31, &A));
    PetscCall(random_mpi_mat(c->tb, c->K, c->N, ka, nb, 4, PETSC_FALSE, 32, &B));
  } else {
    ma = local_size(c->M, rank, size);
    PetscCall(random_mpi_mat(c->ta, c->M, c->K, ma, ka, 5, PETSC_FALSE, 21, &A));
    PetscCall(random_mpi_mat(c->tb, c->K, c->N, ka, nb, 4, PETSC_FALSE, 22, &B));
  }
  PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &Aa));
  PetscCall(MatConvert(B, MATMPIAIJ, MAT_INITIAL_MATRIX, &Ba));

  PetscCall(MatSeqTileGetProductFallbacks(&f0));
  PetscCall(tu_event_count("TileRAPPlan", &p0));
  PetscCall(tu_event_count("TileRAPNumeric", &n0));
  if (api) PetscCall(api_product(c->type, A, B, MAT_INITIAL_MATRIX, &C));
  else {
    PetscCall(MatProductCreate(A, B, NULL, &C));
    PetscCall(MatProductSetType(C, c->type));
    PetscCall(MatProductSetFromOptions(C));
    PetscCall(MatProductSymbolic(C));
    PetscCall(MatProductNumeric(C));
  }
  PetscCall(tu_event_count("TileRAPPlan", &p1));
  PetscCall(tu_event_count("TileRAPNumeric", &n1));
  PetscCall(api_product(c->type, Aa, Ba, MAT_INITIAL_MATRIX, &Cref));
  PetscCall(tu_mpi_compare(C, Cref, &same, &err));
  PetscCall(tu_ok(same && err <= 1e-14, "%s: MPIAIJ structure, rel. error %.2e", name, (double)err));
  PetscCall(is_type(C, MATMPIAIJTILE, &ok));
  PetscCall(blocks_are_tile(C, &planned));
  PetscCall(tu_ok(ok && planned, "%s: C is mpiaijtile with seqtile blocks", name));
  /* local AB/PtAP products on every rank: A_diag's always, A_off's where it has columns */
  PetscCall(all_ranks((PetscBool)(p1 - p0 >= 1 && n1 - n0 >= 1), &planned));
  PetscCall(tu_ok(planned, "%s: local products by the tile engine on every rank (this rank: %d plans, %d numeric)", name, (int)(p1 - p0), (int)(n1 - n0)));
  PetscCall(MatSeqTileGetProductFallbacks(&f1));
  PetscCall(all_ranks((PetscBool)(f1 == f0), &ok));
  PetscCall(tu_ok(ok, "%s: no local product went to the AIJ implementation on any rank (this rank: %d)", name, (int)(f1 - f0)));

  /* reuse with new values */
  PetscCall(new_values(A, 1.5));
  PetscCall(new_values(Aa, 1.5));
  PetscCall(new_values(B, -0.75));
  PetscCall(new_values(Ba, -0.75));
  PetscCall(tu_event_count("TileRAPPlan", &p1));
  PetscCall(tu_event_count("TileRAPNumeric", &n1));
  if (api) PetscCall(api_product(c->type, A, B, MAT_REUSE_MATRIX, &C));
  else PetscCall(MatProductNumeric(C));
  PetscCall(tu_event_count("TileRAPPlan", &p2));
  PetscCall(tu_event_count("TileRAPNumeric", &n2));
  PetscCall(api_product(c->type, Aa, Ba, MAT_REUSE_MATRIX, &Cref));
  PetscCall(tu_mpi_compare(C, Cref, &same, &err));
  PetscCall(tu_ok(same && err <= 1e-14, "%s: reuse after new values, rel. error %.2e", name, (double)err));
  PetscCall(all_ranks((PetscBool)(p2 == p1 && n2 - n1 == n1 - n0), &ok));
  PetscCall(tu_ok(ok, "%s: reuse runs the local numeric phases only (this rank: %d plans, %d numeric, first time %d numeric)", name, (int)(p2 - p1), (int)(n2 - n1), (int)(n1 - n0)));
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&Cref));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&Aa));
  PetscCall(MatDestroy(&Ba));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------- reuse after changes */
typedef enum {
  CH_ZERO_ROWS,     /* MatZeroRows on A (pattern shrinks) */
  CH_NEW_A,         /* new entries in A after assembly */
  CH_NEW_B,         /* new entries in B (P) after assembly */
  CH_OTHER_OBJECTS, /* MAT_REUSE_MATRIX with other objects, same pattern */
  CH_SWAP           /* AB: C = A*B, then B*A into C (same pattern, ex250) */
} Change;
static const char *const change_names[] = {"MatZeroRows on A", "new entries in A", "new entries in B", "other operand objects", "operands swapped"};

/* Rows i % 5 == 0 zeroed (diagonal diag where A is square), same rows on any number of ranks. */
static PetscErrorCode zero_rows(Mat X, PetscScalar diag)
{
  PetscInt rstart, rend, n = 0, *rows;

  PetscFunctionBeginUser;
  PetscCall(MatGetOwnershipRange(X, &rstart, &rend));
  PetscCall(PetscMalloc1(rend - rstart + 1, &rows));
  for (PetscInt i = rstart; i < rend; i++)
    if (i % 5 == 0) rows[n++] = i;
  PetscCall(MatZeroRows(X, n, rows, diag, NULL, NULL));
  PetscCall(PetscFree(rows));
  PetscFunctionReturn(0);
}

/* New entries after assembly, near the diagonal block and far from it
 * (new off-diagonal columns disassemble MPIAIJ's off-diagonal block). */
static PetscErrorCode add_entries(Mat X)
{
  PetscInt rstart, rend, N;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(X, NULL, &N));
  PetscCall(MatGetOwnershipRange(X, &rstart, &rend));
  PetscCall(MatSetOption(X, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  for (PetscInt i = rstart; i < rend; i++) {
    if (i % 3) continue;
    PetscCall(MatSetValue(X, i, (i * 7 + 3) % N, 0.25, ADD_VALUES));
    PetscCall(MatSetValue(X, i, (i + N / 2) % N, -0.5, ADD_VALUES));
  }
  PetscCall(MatAssemblyBegin(X, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(X, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

static PetscErrorCode dup_new_values(Mat X, PetscReal f, Mat *Y)
{
  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(X, MAT_COPY_VALUES, Y));
  PetscCall(new_values(*Y, f));
  PetscFunctionReturn(0);
}

/* The product on fresh copies of the operands: PETSc 3.18's MPIAIJ on one
 * rank computes B*A wrongly for operands that were in an A*B product before
 * (mat/tests/ex250's sequence), so the references start from objects
 * without a product history. */
static PetscErrorCode fresh_product(MatProductType type, Mat X, Mat Y, Mat *C)
{
  Mat Xc, Yc;

  PetscFunctionBeginUser;
  PetscCall(MatDuplicate(X, MAT_COPY_VALUES, &Xc));
  PetscCall(MatDuplicate(Y, MAT_COPY_VALUES, &Yc));
  PetscCall(api_product(type, Xc, Yc, MAT_INITIAL_MATRIX, C));
  PetscCall(MatDestroy(&Xc));
  PetscCall(MatDestroy(&Yc));
  PetscFunctionReturn(0);
}

static PetscErrorCode run_change(Change ch, MatProductType type, MatType ta, MatType tb, PetscMPIInt rank, PetscMPIInt size)
{
  const PetscInt K = 180, N = 47, S = 120;
  Mat            A, B, Aa, Ba, X = NULL, Y = NULL, Xa = NULL, Ya = NULL, C, Cref, Cfresh;
  PetscInt       p0 = 0, p1 = 0, p2 = 0, n1 = 0, n2 = 0;
  PetscReal      err, err_ref = 0; /* 0 where MPIAIJ's reuse is not compared */
  PetscBool      ok, ok2;
  char           name[160];

  PetscFunctionBeginUser;
  PetscCall(PetscSNPrintf(name, sizeof name, "%s (%s, %s), reuse after %s", MatProductTypes[type], ta, tb, change_names[ch]));
  if (type == MATPRODUCT_PtAP) {
    PetscInt ka = local_size(K, rank, size), nb = local_size(N, size - 1 - rank, size);
    PetscCall(random_mpi_mat(ta, K, K, ka, ka, 6, PETSC_TRUE, 41, &A));
    PetscCall(random_mpi_mat(tb, K, N, ka, nb, 3, PETSC_FALSE, 42, &B));
  } else { /* square, both with the same layout: swapped operands fit */
    PetscInt ks = local_size(S, rank, size);
    PetscCall(random_mpi_mat(ta, S, S, ks, ks, 5, PETSC_TRUE, 43, &A));
    if (ch == CH_SWAP) { /* B: A's pattern, other values, B's type */
      Mat T;
      PetscCall(dup_new_values(A, 0.7, &T));
      PetscCall(MatConvert(T, tb, MAT_INITIAL_MATRIX, &B));
      PetscCall(MatDestroy(&T));
    } else PetscCall(random_mpi_mat(tb, S, S, ks, ks, 4, PETSC_FALSE, 44, &B));
  }
  PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &Aa));
  PetscCall(MatConvert(B, MATMPIAIJ, MAT_INITIAL_MATRIX, &Ba));
  PetscCall(api_product(type, A, B, MAT_INITIAL_MATRIX, &C));
  PetscCall(api_product(type, Aa, Ba, MAT_INITIAL_MATRIX, &Cref));

  switch (ch) {
  case CH_ZERO_ROWS:
    PetscCall(zero_rows(A, 3.0));
    PetscCall(zero_rows(Aa, 3.0));
    break;
  case CH_NEW_A:
    PetscCall(add_entries(A));
    PetscCall(add_entries(Aa));
    break;
  case CH_NEW_B:
    PetscCall(add_entries(B));
    PetscCall(add_entries(Ba));
    break;
  case CH_OTHER_OBJECTS:
    PetscCall(dup_new_values(A, 1.3, &X));
    PetscCall(dup_new_values(B, 0.6, &Y));
    PetscCall(dup_new_values(Aa, 1.3, &Xa));
    PetscCall(dup_new_values(Ba, 0.6, &Ya));
    break;
  case CH_SWAP:
    break;
  }
  if (ch == CH_SWAP) { /* B*A */
    X  = B;
    Y  = A;
    Xa = Ba;
    Ya = Aa;
    PetscCall(PetscObjectReference((PetscObject)X));
    PetscCall(PetscObjectReference((PetscObject)Y));
    PetscCall(PetscObjectReference((PetscObject)Xa));
    PetscCall(PetscObjectReference((PetscObject)Ya));
  } else if (!X) {
    X  = A;
    Y  = B;
    Xa = Aa;
    Ya = Ba;
    PetscCall(PetscObjectReference((PetscObject)X));
    PetscCall(PetscObjectReference((PetscObject)Y));
    PetscCall(PetscObjectReference((PetscObject)Xa));
    PetscCall(PetscObjectReference((PetscObject)Ya));
  }

  PetscCall(tu_event_count("TileRAPPlan", &p0));
  PetscCall(api_product(type, X, Y, MAT_REUSE_MATRIX, &C));
  PetscCall(tu_event_count("TileRAPPlan", &p1));
  PetscCall(fresh_product(type, Xa, Ya, &Cfresh));
  PetscCall(value_diff(C, Cfresh, &err));
  /* MPIAIJ's own reuse where it accepts the change (it refuses other P
   * objects and changed P patterns; on one rank, PETSc 3.18's MPIAIJ B*A
   * into A*B's C overwrites B's values) */
  if (ch == CH_ZERO_ROWS || (ch == CH_SWAP && size > 1)) {
    PetscCall(api_product(type, Xa, Ya, MAT_REUSE_MATRIX, &Cref));
    PetscCall(value_diff(C, Cref, &err_ref));
  }
  PetscCall(tu_ok(err <= 1e-12 && err_ref <= 1e-12, "%s: rel. difference to MPIAIJ's product %.2e, to MPIAIJ's reuse %.2e", name, (double)err, (double)err_ref));
  PetscCall(is_type(C, MATMPIAIJTILE, &ok));
  PetscCall(blocks_are_tile(C, &ok2));
  PetscCall(all_ranks((PetscBool)(p1 - p0 >= 1), &ok2));
  PetscCall(tu_ok(ok && ok2, "%s: planned again on every rank (this rank: %d plans), C mpiaijtile", name, (int)(p1 - p0)));

  /* the new plan is reused: values only */
  PetscCall(new_values(X, 0.9));
  PetscCall(new_values(Xa, 0.9));
  PetscCall(tu_event_count("TileRAPNumeric", &n1));
  PetscCall(api_product(type, X, Y, MAT_REUSE_MATRIX, &C));
  PetscCall(tu_event_count("TileRAPPlan", &p2));
  PetscCall(tu_event_count("TileRAPNumeric", &n2));
  PetscCall(MatDestroy(&Cfresh));
  PetscCall(fresh_product(type, Xa, Ya, &Cfresh));
  PetscCall(value_diff(C, Cfresh, &err));
  PetscCall(all_ranks((PetscBool)(p2 == p1 && n2 > n1), &ok));
  PetscCall(tu_ok(err <= 1e-12 && ok, "%s, then new values: rel. difference %.2e, numeric phases only (this rank: %d plans, %d numeric)", name, (double)err, (int)(p2 - p1), (int)(n2 - n1)));

  PetscCall(MatDestroy(&Cfresh));
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&Cref));
  PetscCall(MatDestroy(&X));
  PetscCall(MatDestroy(&Y));
  PetscCall(MatDestroy(&Xa));
  PetscCall(MatDestroy(&Ya));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&B));
  PetscCall(MatDestroy(&Aa));
  PetscCall(MatDestroy(&Ba));
  PetscFunctionReturn(0);
}

/* ---------------------------------------------------------------- dense operands */
static PetscErrorCode random_dense(PetscInt M, PetscInt N, PetscInt m, PetscInt n, unsigned long long seed, Mat *D)
{
  PetscInt rstart, rend;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_WORLD, D));
  PetscCall(MatSetSizes(*D, m, n, M, N));
  PetscCall(MatSetType(*D, MATMPIDENSE)); /* on one rank as well: the products of mpidense with MPIAIJ */
  PetscCall(MatSetUp(*D));
  PetscCall(MatGetOwnershipRange(*D, &rstart, &rend));
  for (PetscInt i = rstart; i < rend; i++) {
    unsigned long long s = seed * 1000003ULL + (unsigned long long)i * 7919ULL;
    for (PetscInt j = 0; j < N; j++) PetscCall(MatSetValue(*D, i, j, 2.0 * tu_rand(&s) - 1.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*D, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*D, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

/* Products with an mpidense operand are MPIAIJ's (dense x AIJ, AIJ x dense,
 * PtAP with a dense A as in PETSc's mat/tests/ex93): same values, reuse too. */
static PetscErrorCode test_dense(PetscMPIInt rank, PetscMPIInt size)
{
  const PetscInt K = 90, M = 23, N = 7;
  PetscInt       ka = local_size(K, rank, size), ma = local_size(M, rank, size), nb = local_size(N, size - 1 - rank, size);
  Mat            A, Aa, P, Pa, D1, D2, Ad, C, Cref;
  PetscReal      err, err2;

  PetscFunctionBeginUser;
  PetscCall(random_mpi_mat(MATMPITILE, K, K, ka, ka, 5, PETSC_TRUE, 51, &A));
  PetscCall(random_mpi_mat(MATMPITILE, K, N, ka, nb, 3, PETSC_FALSE, 52, &P));
  PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &Aa));
  PetscCall(MatConvert(P, MATMPIAIJ, MAT_INITIAL_MATRIX, &Pa));
  PetscCall(random_dense(M, K, ma, ka, 53, &D1)); /* M x K: D1 * A */
  PetscCall(random_dense(K, N, ka, nb, 54, &D2)); /* K x N: A * D2, A^T * D2 */

  /* dense x tile */
  PetscCall(MatMatMult(D1, A, MAT_INITIAL_MATRIX, 2.0, &C));
  PetscCall(MatMatMult(D1, Aa, MAT_INITIAL_MATRIX, 2.0, &Cref));
  PetscCall(value_diff(C, Cref, &err));
  PetscCall(new_values(A, 1.25));
  PetscCall(new_values(Aa, 1.25));
  PetscCall(MatMatMult(D1, A, MAT_REUSE_MATRIX, 2.0, &C));
  PetscCall(MatMatMult(D1, Aa, MAT_REUSE_MATRIX, 2.0, &Cref));
  PetscCall(value_diff(C, Cref, &err2));
  PetscCall(tu_ok(err <= 1e-12 && err2 <= 1e-12, "AB (mpidense, mpitile): rel. difference to MPIAIJ %.2e, after reuse %.2e", (double)err, (double)err2));
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&Cref));

  /* tile x dense, tile^T x dense */
  for (int t = 0; t < 2; t++) {
    MatProductType type = t ? MATPRODUCT_AtB : MATPRODUCT_AB;
    PetscCall(api_product(type, A, D2, MAT_INITIAL_MATRIX, &C));
    PetscCall(api_product(type, Aa, D2, MAT_INITIAL_MATRIX, &Cref));
    PetscCall(value_diff(C, Cref, &err));
    PetscCall(MatScale(D2, -0.5));
    PetscCall(api_product(type, A, D2, MAT_REUSE_MATRIX, &C));
    PetscCall(api_product(type, Aa, D2, MAT_REUSE_MATRIX, &Cref));
    PetscCall(value_diff(C, Cref, &err2));
    PetscCall(tu_ok(err <= 1e-12 && err2 <= 1e-12, "%s (mpitile, mpidense): rel. difference to MPIAIJ %.2e, after reuse %.2e", MatProductTypes[type], (double)err, (double)err2));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
  }

  /* PtAP with a dense A and a tile P (on one rank MPIAIJ P refuses it too:
   * its A*P has no seqdense x mpiaij product) */
  PetscCall(MatConvert(Aa, MATMPIDENSE, MAT_INITIAL_MATRIX, &Ad));
  if (size > 1) {
    PetscCall(MatPtAP(Ad, Pa, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(MatPtAP(Ad, P, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(value_diff(C, Cref, &err));
    PetscCall(tu_ok(err <= 1e-12, "PtAP (mpidense, mpitile): rel. difference to MPIAIJ %.2e", (double)err));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
  }

  PetscCall(MatDestroy(&Ad));
  PetscCall(MatDestroy(&D1));
  PetscCall(MatDestroy(&D2));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Aa));
  PetscCall(MatDestroy(&P));
  PetscCall(MatDestroy(&Pa));
  PetscFunctionReturn(0);
}

/* -mat_tile_mpi_products: aij sends (mpitile, mpitile) products to MPIAIJ's
 * own algorithms (host MPIAIJ: no COO assembly of C, not the backend;
 * MPIAIJCUSPARSE: its backend; local products SeqAIJ's either way: no tile
 * plan; MPIAIJ's values, reuse included); auto does so
 * only on several ranks with the CPU engine (in a host PETSc), else it is
 * tile.  The other checks of this program run
 * with tile. */
static PetscErrorCode test_products_choice(PetscMPIInt rank, PetscMPIInt size)
{
  const char *const choice[] = {"aij", "auto"};
  const PetscInt    K = 120, N = 37;
  PetscInt          ka = local_size(K, rank, size), nb = local_size(N, size - 1 - rank, size);

  PetscFunctionBeginUser;
  for (int c = 0; c < 2; c++) {
    const PetscBool want_tile = (PetscBool)(c == 1 && (TU_DEVICE_TYPES || size == 1 || tilerap_engine_resolve(TILERAP_ENGINE_AUTO) == TILERAP_ENGINE_CUDA));
    Mat             A, P, Aa, Pa, C, Cref;
    PetscInt        p0 = 0, p1 = 0, c0 = 0, c1 = 0;
    PetscReal       err, err2;
    PetscBool       ok;
    PetscCall(PetscOptionsSetValue(NULL, "-mat_tile_mpi_products", choice[c]));
    PetscCall(random_mpi_mat(MATMPITILE, K, K, ka, ka, 5, PETSC_TRUE, 71, &A));
    PetscCall(random_mpi_mat(MATMPITILE, K, N, ka, nb, 3, PETSC_FALSE, 72, &P));
    PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &Aa));
    PetscCall(MatConvert(P, MATMPIAIJ, MAT_INITIAL_MATRIX, &Pa));
    PetscCall(tu_event_count("TileRAPPlan", &p0));
    PetscCall(tu_event_count("MatSetPreallCOO", &c0));
    PetscCall(api_product(MATPRODUCT_PtAP, A, P, MAT_INITIAL_MATRIX, &C));
    PetscCall(tu_event_count("MatSetPreallCOO", &c1));
    PetscCall(api_product(MATPRODUCT_PtAP, Aa, Pa, MAT_INITIAL_MATRIX, &Cref));
    PetscCall(value_diff(C, Cref, &err));
    PetscCall(new_values(A, 1.5));
    PetscCall(new_values(Aa, 1.5));
    PetscCall(api_product(MATPRODUCT_PtAP, A, P, MAT_REUSE_MATRIX, &C));
    PetscCall(api_product(MATPRODUCT_PtAP, Aa, Pa, MAT_REUSE_MATRIX, &Cref));
    PetscCall(tu_event_count("TileRAPPlan", &p1));
    PetscCall(value_diff(C, Cref, &err2));
    /* the tile path is PETSc's backend algorithm, which assembles C by COO;
     * so is MPIAIJCUSPARSE's own (a PETSc built with CUDA), whose local
     * products are then SeqAIJ's (no tile plan) */
    PetscCall(all_ranks((PetscBool)(want_tile ? c1 > c0 : (TU_DEVICE_TYPES ? c1 > c0 : c1 == c0) && p1 == p0), &ok));
    PetscCall(tu_ok((PetscBool)(ok && err <= 1e-12 && err2 <= 1e-12),
                    "PtAP (mpitile, mpitile) with -mat_tile_mpi_products %s on %d rank(s): %s (this rank: %d COO assemblies, %d tile plans of local products), rel. difference %.2e, after reuse %.2e",
                    choice[c], (int)size, want_tile ? "the backend algorithm" : "MPIAIJ's own algorithm", (int)(c1 - c0), (int)(p1 - p0), (double)err, (double)err2));
    PetscCall(tu_destroy_mats(6, (Mat *[]){&C, &Cref, &A, &P, &Aa, &Pa}));
  }
  PetscCall(PetscOptionsSetValue(NULL, "-mat_tile_mpi_products", "tile"));
  PetscFunctionReturn(0);
}

/* An algorithm picked in the options database (here hypre's) goes the
 * MPIAIJ way: no tile plan, same values as MPIAIJ, reuse included. */
static PetscErrorCode test_via_options(PetscMPIInt rank, PetscMPIInt size)
{
#if defined(PETSC_HAVE_HYPRE)
  const struct {
    const char    *option;
    MatProductType type;
  } via[] = {
    {"-matmatmult_via", MATPRODUCT_AB  },
    {"-matptap_via",    MATPRODUCT_PtAP},
  };
  const PetscInt K = 110, N = 31;
  PetscInt       ka = local_size(K, rank, size), nb = local_size(N, size - 1 - rank, size);

  PetscFunctionBeginUser;
  for (size_t v = 0; v < sizeof via / sizeof via[0]; v++) {
    Mat       A, B, Aa, Ba, C, Cref;
    PetscInt  p0 = 0, p1 = 0;
    PetscReal err, err2;
    PetscBool ok;
    PetscCall(random_mpi_mat(MATMPITILE, K, K, ka, ka, 5, PETSC_TRUE, 61, &A));
    PetscCall(random_mpi_mat(MATMPITILE, K, via[v].type == MATPRODUCT_PtAP ? N : K, ka, via[v].type == MATPRODUCT_PtAP ? nb : ka, 3, PETSC_FALSE, 62, &B));
    PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &Aa));
    PetscCall(MatConvert(B, MATMPIAIJ, MAT_INITIAL_MATRIX, &Ba));
    PetscCall(PetscOptionsSetValue(NULL, via[v].option, "hypre"));
    PetscCall(tu_event_count("TileRAPPlan", &p0));
    PetscCall(api_product(via[v].type, A, B, MAT_INITIAL_MATRIX, &C));
    PetscCall(api_product(via[v].type, Aa, Ba, MAT_INITIAL_MATRIX, &Cref));
    PetscCall(value_diff(C, Cref, &err));
    PetscCall(new_values(A, 1.5));
    PetscCall(new_values(Aa, 1.5));
    PetscCall(api_product(via[v].type, A, B, MAT_REUSE_MATRIX, &C));
    PetscCall(api_product(via[v].type, Aa, Ba, MAT_REUSE_MATRIX, &Cref));
    PetscCall(tu_event_count("TileRAPPlan", &p1));
    PetscCall(value_diff(C, Cref, &err2));
    PetscCall(PetscOptionsClearValue(NULL, via[v].option));
    PetscCall(all_ranks((PetscBool)(p1 == p0), &ok));
    PetscCall(tu_ok(err <= 1e-12 && err2 <= 1e-12 && ok, "%s (mpitile, mpitile) with %s hypre: MPIAIJ's way (this rank: %d tile plans), rel. difference %.2e, after reuse %.2e", MatProductTypes[via[v].type], via[v].option,
                    (int)(p1 - p0), (double)err, (double)err2));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&B));
    PetscCall(MatDestroy(&Aa));
    PetscCall(MatDestroy(&Ba));
  }
  PetscFunctionReturn(0);
#else
  PetscFunctionBeginUser;
  tu_diag("PETSc without hypre: -matmatmult_via hypre not tested");
  PetscFunctionReturn(0);
#endif
}

/* C viewed while the product runs (-mat_view at the assembly inside the
 * numeric phase, as in PETSc's tutorials run with -mat_view ::ascii_info)
 * and after it: the product's view must find its own data. */
static PetscErrorCode test_view_during_product(PetscMPIInt rank, PetscMPIInt size)
{
  const PetscInt K = 130, N = 37;
  PetscInt       ka = local_size(K, rank, size), nb = local_size(N, size - 1 - rank, size);
  Mat            A, P, Aa, Pa, C, Cref;
  PetscViewer    v;
  PetscReal      err;

  PetscFunctionBeginUser;
  PetscCall(random_mpi_mat(MATMPITILE, K, K, ka, ka, 5, PETSC_TRUE, 71, &A));
  PetscCall(random_mpi_mat(MATMPITILE, K, N, ka, nb, 3, PETSC_FALSE, 72, &P));
  PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &Aa));
  PetscCall(MatConvert(P, MATMPIAIJ, MAT_INITIAL_MATRIX, &Pa));
  PetscCall(PetscOptionsSetValue(NULL, "-mat_view", "ascii:/dev/null:ascii_info"));
  PetscCall(MatPtAP(A, P, MAT_INITIAL_MATRIX, 2.0, &C));
  PetscCall(new_values(A, 1.1));
  PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, 2.0, &C));
  PetscCall(PetscOptionsClearValue(NULL, "-mat_view"));
  PetscCall(PetscViewerASCIIOpen(PETSC_COMM_WORLD, "/dev/null", &v));
  PetscCall(PetscViewerPushFormat(v, PETSC_VIEWER_ASCII_INFO));
  PetscCall(MatView(C, v));
  PetscCall(PetscViewerPopFormat(v));
  PetscCall(PetscViewerDestroy(&v));
  PetscCall(new_values(Aa, 1.1));
  PetscCall(fresh_product(MATPRODUCT_PtAP, Aa, Pa, &Cref));
  PetscCall(value_diff(C, Cref, &err));
  PetscCall(tu_ok(err <= 1e-12, "PtAP (mpitile, mpitile) with -mat_view ascii_info inside the product and MatView after: rel. difference to MPIAIJ %.2e", (double)err));
  PetscCall(tu_destroy_mats(6, (Mat *[]){&C, &Cref, &A, &P, &Aa, &Pa}));
  PetscFunctionReturn(0);
}

/* Products the MPIAIJ implementation does with a tile operand: R*A*P
 * (MatMatMatMult, ABC), PtAP with an MPIMAIJ P, and AB/AtB with
 * MAT_FORCE_DIAGONAL_ENTRIES on C (MPIAIJ's C holds the diagonal). */
static PetscErrorCode test_mpiaij_way(PetscMPIInt rank, PetscMPIInt size)
{
  const PetscInt K = 120, N = 29;
  PetscInt       ka = local_size(K, rank, size), nb = local_size(N, size - 1 - rank, size);
  Mat            A, Aa, P, R, C, Cref;
  PetscReal      err, err2;
  PetscBool      same;

  PetscFunctionBeginUser;
  PetscCall(random_mpi_mat(MATMPITILE, K, K, ka, ka, 5, PETSC_TRUE, 81, &A));
  PetscCall(MatConvert(A, MATMPIAIJ, MAT_INITIAL_MATRIX, &Aa));
  PetscCall(random_mpi_mat(MATMPIAIJ, K, N, ka, nb, 3, PETSC_FALSE, 82, &P));
  PetscCall(MatTranspose(P, MAT_INITIAL_MATRIX, &R));

  /* R * A * P, A tile in the middle (PETSc's mat/tests/ex111) */
  PetscCall(MatMatMatMult(R, A, P, MAT_INITIAL_MATRIX, 2.0, &C));
  PetscCall(MatMatMatMult(R, Aa, P, MAT_INITIAL_MATRIX, 2.0, &Cref));
  PetscCall(value_diff(C, Cref, &err));
  PetscCall(new_values(A, 1.2));
  PetscCall(new_values(Aa, 1.2));
  PetscCall(MatMatMatMult(R, A, P, MAT_REUSE_MATRIX, 2.0, &C));
  PetscCall(MatMatMatMult(R, Aa, P, MAT_REUSE_MATRIX, 2.0, &Cref));
  PetscCall(value_diff(C, Cref, &err2));
  PetscCall(tu_ok(err <= 1e-12 && err2 <= 1e-12, "ABC (mpiaij, mpitile, mpiaij) by MatMatMatMult: rel. difference to MPIAIJ %.2e, after reuse %.2e", (double)err, (double)err2));
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&Cref));

  /* PtAP with an MPIMAIJ P (PETSc's mat/tests/ex89); a one-rank MAIJ is SeqMAIJ, which MPIAIJ A refuses as well */
  if (size > 1) {
    Mat A2, A2a, Pm;
    PetscCall(random_mpi_mat(MATMPITILE, 2 * K, 2 * K, 2 * ka, 2 * ka, 6, PETSC_TRUE, 83, &A2));
    PetscCall(MatConvert(A2, MATMPIAIJ, MAT_INITIAL_MATRIX, &A2a));
    PetscCall(MatCreateMAIJ(P, 2, &Pm));
    PetscCall(MatPtAP(A2, Pm, MAT_INITIAL_MATRIX, 2.0, &C));
    PetscCall(MatPtAP(A2a, Pm, MAT_INITIAL_MATRIX, 2.0, &Cref));
    PetscCall(value_diff(C, Cref, &err));
    PetscCall(tu_ok(err <= 1e-12, "PtAP (mpitile, mpimaij): rel. difference to MPIAIJ %.2e", (double)err));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Cref));
    PetscCall(MatDestroy(&Pm));
    PetscCall(MatDestroy(&A2));
    PetscCall(MatDestroy(&A2a));
  }

  /* MAT_FORCE_DIAGONAL_ENTRIES (PETSc's mat/tests/ex81): operands without a full diagonal */
  for (int t = 0; t < 2; t++) {
    MatProductType type = t ? MATPRODUCT_AtB : MATPRODUCT_AB;
    Mat            B, Ba, X[2];
    PetscCall(random_mpi_mat(MATMPITILE, K, K, ka, ka, 2, PETSC_FALSE, 84, &B));
    PetscCall(MatConvert(B, MATMPIAIJ, MAT_INITIAL_MATRIX, &Ba));
    for (int k = 0; k < 2; k++) {
      Mat            Y = k ? Ba : B;
      PetscErrorCode ierr;
      PetscCall(MatProductCreate(Y, Y, NULL, &X[k]));
      PetscCall(MatProductSetType(X[k], type));
      PetscCall(MatSetOption(X[k], MAT_FORCE_DIAGONAL_ENTRIES, PETSC_TRUE));
      PetscCall(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
      ierr = MatProductSetFromOptions(X[k]);
      PetscCall(PetscPopErrorHandler());
#if TU_DEVICE_TYPES
      if (!k) { /* the device type refuses it (MPIAIJCUSPARSE would drop the diagonal) */
        PetscCall(tu_ok(ierr == PETSC_ERR_SUP, "%s (mpitile, mpitile) with MAT_FORCE_DIAGONAL_ENTRIES on the device: refused with PETSC_ERR_SUP (%d)", MatProductTypes[type], (int)ierr));
        continue;
      }
#endif
      PetscCall(ierr);
      PetscCall(MatProductSymbolic(X[k]));
      PetscCall(MatProductNumeric(X[k]));
    }
#if !TU_DEVICE_TYPES
    PetscCall(tu_mpi_compare(X[0], X[1], &same, &err));
    PetscCall(tu_ok(same && err <= 1e-12, "%s (mpitile, mpitile) with MAT_FORCE_DIAGONAL_ENTRIES: MPIAIJ's structure (diagonal included) %d, rel. error %.2e", MatProductTypes[type], (int)same, (double)err));
#else
    (void)same;
#endif
    PetscCall(MatDestroy(&X[0]));
    PetscCall(MatDestroy(&X[1]));
    PetscCall(MatDestroy(&B));
    PetscCall(MatDestroy(&Ba));
  }

  PetscCall(MatDestroy(&R));
  PetscCall(MatDestroy(&P));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&Aa));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  PetscMPIInt rank, size;
  const Case  cases[] = {
    {"square",  MATPRODUCT_AB,   MATMPITILE, PLAIN_MPI,  150, 150, 150},
    {"rect",    MATPRODUCT_AB,   MATMPITILE, MATMPITILE, 97,  173, 61 },
    {"rect",    MATPRODUCT_AB,   PLAIN_MPI,  MATMPITILE, 130, 77,  201},
    {"galerkin", MATPRODUCT_PtAP, MATMPITILE, PLAIN_MPI,  0,   240, 57 },
    {"galerkin", MATPRODUCT_PtAP, MATMPITILE, MATMPITILE, 0,   311, 83 },
    {"galerkin", MATPRODUCT_PtAP, PLAIN_MPI,  MATMPITILE, 0,   263, 71 },
    {"transpose", MATPRODUCT_AtB, MATMPITILE, MATMPITILE, 67,  191, 53 },
    {"transpose", MATPRODUCT_AtB, MATMPITILE, PLAIN_MPI,  88,  140, 45 },
    {"transpose", MATPRODUCT_AtB, PLAIN_MPI,  MATMPITILE, 59,  177, 90 },
    {"wide",     MATPRODUCT_AtB, MATMPITILE, MATMPITILE, 40,  150, 100003}, /* MPIAIJ's default turns "scalable" */
  };
  const MatType pairs[][2] = {
    {MATMPITILE, MATMPITILE},
    {MATMPITILE, PLAIN_MPI},
    {PLAIN_MPI,  MATMPITILE},
  };

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscLogDefaultBegin());
  PetscCall(TileRAPInitializePackage());
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  tu_diag("%d rank(s)", (int)size);
  /* the tile path on any number of ranks and engines (test_products_choice
   * checks the automatic choice) */
  PetscCall(PetscOptionsSetValue(NULL, "-mat_tile_mpi_products", "tile"));
  PetscCall(test_type(size));
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) PetscCall(run_case(&cases[k], rank, size, PETSC_TRUE));
  PetscCall(run_case(&cases[4], rank, size, PETSC_FALSE));
  PetscCall(run_case(&cases[1], rank, size, PETSC_FALSE));
  PetscCall(run_case(&cases[6], rank, size, PETSC_FALSE));
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
    for (int ch = CH_ZERO_ROWS; ch <= CH_OTHER_OBJECTS; ch++) {
      PetscCall(run_change((Change)ch, MATPRODUCT_PtAP, pairs[k][0], pairs[k][1], rank, size));
      PetscCall(run_change((Change)ch, MATPRODUCT_AB, pairs[k][0], pairs[k][1], rank, size));
    }
    PetscCall(run_change(CH_SWAP, MATPRODUCT_AB, pairs[k][0], pairs[k][1], rank, size));
  }
  PetscCall(test_dense(rank, size));
  PetscCall(test_via_options(rank, size));
  PetscCall(test_view_during_product(rank, size));
  PetscCall(test_mpiaij_way(rank, size));
  PetscCall(test_products_choice(rank, size));
  {
    int rc = rank == 0 ? tap_done() : (tap_failed ? 1 : 0);
    PetscCall(PetscFinalize());
    return rc;
  }
}
