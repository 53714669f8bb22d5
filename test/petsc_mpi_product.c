/* MATMPITILE on any number of ranks (TAP, run by test/petsc_mpi.sh with
 * mpiexec -n 1, 2, 4):
 *   - the type: names, root names, seqtile blocks after every MPIAIJ
 *     preallocation entry point, conversions, duplicate, submatrix;
 *   - random rectangular distributed products AB and PtAP with
 *     (mpitile, mpiaij), (mpiaij, mpitile), (mpitile, mpitile) against MPIAIJ's
 *     own product: same structure, relative error <= 1e-14, C of type
 *     mpiaijtile, local products planned by the tile engine on every rank;
 *   - MAT_REUSE_MATRIX after new values: numeric phases only (no plan), same
 *     result as MPIAIJ's reuse.
 * Every check is collective: a rank's failure fails the check everywhere. */
#include "tilerap_petsc.h"
#include "petsc_testutil.h"

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

static PetscErrorCode all_ranks(PetscBool mine, PetscBool *all)
{
  PetscFunctionBeginUser;
  PetscCall(MPIU_Allreduce(&mine, all, 1, MPIU_BOOL, MPI_LAND, PETSC_COMM_WORLD));
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
  if (api) {
    if (c->type == MATPRODUCT_PtAP) PetscCall(MatPtAP(A, B, MAT_INITIAL_MATRIX, 2.0, &C));
    else PetscCall(MatMatMult(A, B, MAT_INITIAL_MATRIX, 2.0, &C));
  } else {
    PetscCall(MatProductCreate(A, B, NULL, &C));
    PetscCall(MatProductSetType(C, c->type));
    PetscCall(MatProductSetFromOptions(C));
    PetscCall(MatProductSymbolic(C));
    PetscCall(MatProductNumeric(C));
  }
  PetscCall(tu_event_count("TileRAPPlan", &p1));
  PetscCall(tu_event_count("TileRAPNumeric", &n1));
  if (c->type == MATPRODUCT_PtAP) PetscCall(MatPtAP(Aa, Ba, MAT_INITIAL_MATRIX, 2.0, &Cref));
  else PetscCall(MatMatMult(Aa, Ba, MAT_INITIAL_MATRIX, 2.0, &Cref));
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
  if (api) {
    if (c->type == MATPRODUCT_PtAP) PetscCall(MatPtAP(A, B, MAT_REUSE_MATRIX, 2.0, &C));
    else PetscCall(MatMatMult(A, B, MAT_REUSE_MATRIX, 2.0, &C));
  } else PetscCall(MatProductNumeric(C));
  PetscCall(tu_event_count("TileRAPPlan", &p2));
  PetscCall(tu_event_count("TileRAPNumeric", &n2));
  if (c->type == MATPRODUCT_PtAP) PetscCall(MatPtAP(Aa, Ba, MAT_REUSE_MATRIX, 2.0, &Cref));
  else PetscCall(MatMatMult(Aa, Ba, MAT_REUSE_MATRIX, 2.0, &Cref));
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

int main(int argc, char **argv)
{
  PetscMPIInt rank, size;
  const Case  cases[] = {
    {"square",  MATPRODUCT_AB,   MATMPITILE, MATMPIAIJ,  150, 150, 150},
    {"rect",    MATPRODUCT_AB,   MATMPITILE, MATMPITILE, 97,  173, 61 },
    {"rect",    MATPRODUCT_AB,   MATMPIAIJ,  MATMPITILE, 130, 77,  201},
    {"galerkin", MATPRODUCT_PtAP, MATMPITILE, MATMPIAIJ,  0,   240, 57 },
    {"galerkin", MATPRODUCT_PtAP, MATMPITILE, MATMPITILE, 0,   311, 83 },
  };

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  PetscCall(PetscLogDefaultBegin());
  PetscCall(TileRAPInitializePackage());
  PetscCallMPI(MPI_Comm_rank(PETSC_COMM_WORLD, &rank));
  PetscCallMPI(MPI_Comm_size(PETSC_COMM_WORLD, &size));
  tu_diag("%d rank(s)", (int)size);
  PetscCall(test_type(size));
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) PetscCall(run_case(&cases[k], rank, size, PETSC_TRUE));
  PetscCall(run_case(&cases[4], rank, size, PETSC_FALSE));
  PetscCall(run_case(&cases[1], rank, size, PETSC_FALSE));
  {
    int rc = rank == 0 ? tap_done() : (tap_failed ? 1 : 0);
    PetscCall(PetscFinalize());
    return rc;
  }
}
