/* MatCreateGraph of a seqtile (GAMG's strength graph, made by the engine
 * with PETSc 3.18, unfiltered, and from 3.25 on) against AIJ's own on the same matrix, bit for bit:
 * unsymmetric random matrices (the graph symmetrized), a symmetric one
 * marked so (no transpose), scaled or not, filtered or not, block size 3
 * with dense and with sparse blocks, an empty row and a zero diagonal.
 * The graph must be a tile matrix of A's type with block size 1 and the
 * symmetry flags AIJ's would have; with the engine's route the
 * TileRAPGraph event counts each graph (petsc_gamg checks that GAMG
 * then makes AIJ's hierarchy). */
#include "petsc_testutil.h"
#include "tap.h"
#include "tilerap_petsc.h"
#include <petscksp.h>
#include <string.h>

static PetscErrorCode graph_of(Mat A, PetscBool sym, PetscBool scale, PetscReal filter, Mat *G)
{
  PetscFunctionBeginUser;
#if PETSC_VERSION_LT(3, 20, 0)
  PetscCall(MatCreateGraph(A, sym, scale, filter, G));
#else
  PetscCall(MatCreateGraph(A, sym, scale, filter, 0, NULL, G));
#endif
  PetscFunctionReturn(0);
}

/* same rows, columns and value bits */
static PetscErrorCode same_bits(Mat X, Mat Y, PetscBool *same)
{
  const PetscInt    *xi, *xj, *yi, *yj;
  const PetscScalar *xa, *ya;
  PetscInt           m, ym;

  PetscFunctionBeginUser;
  PetscCall(MatGetSize(X, &m, NULL));
  PetscCall(MatGetSize(Y, &ym, NULL));
  *same = (PetscBool)(m == ym);
  if (!*same) PetscFunctionReturn(0);
  PetscCall(tu_host_csr(X, &xi, &xj, &xa));
  PetscCall(tu_host_csr(Y, &yi, &yj, &ya));
  *same = (PetscBool)(!memcmp(xi, yi, (size_t)(m + 1) * sizeof *xi) && !memcmp(xj, yj, (size_t)xi[m] * sizeof *xj) && !memcmp(xa, ya, (size_t)xi[m] * sizeof *xa));
  PetscCall(tu_host_csr_end(X, &xi, &xj, &xa));
  PetscCall(tu_host_csr_end(Y, &yi, &yj, &ya));
  PetscFunctionReturn(0);
}

static PetscErrorCode compare(Mat A, Mat Aaij, const char *name)
{
  const PetscReal filters[] = {-1.0, 0.0, 0.05};

  PetscFunctionBeginUser;
  for (int s = 0; s < 2; s++)
    for (int c = 0; c < 2; c++)
      for (int f = 0; f < 3; f++) {
        Mat       G, Gref;
        PetscBool same = PETSC_FALSE, istype, set1, sym1, set2, sym2;
        PetscInt  rbs, cbs, before = 0, after = 0;
        MatType   at, gt;

        PetscCall(tu_event_count("TileRAPGraph", &before));
        PetscCall(graph_of(A, (PetscBool)s, (PetscBool)c, filters[f], &G));
        PetscCall(tu_event_count("TileRAPGraph", &after));
        PetscCall(graph_of(Aaij, (PetscBool)s, (PetscBool)c, filters[f], &Gref));
        PetscCall(same_bits(G, Gref, &same));
        tap_ok(same, "%s sym %d scale %d filter %g: graph equals AIJ's bit for bit", name, s, c, (double)filters[f]);
        PetscCall(MatGetType(A, &at));
        PetscCall(MatGetType(G, &gt));
        istype = (PetscBool)!strcmp(at, gt);
        PetscCall(MatGetBlockSizes(G, &rbs, &cbs));
        PetscCall(MatIsSymmetricKnown(G, &set1, &sym1));
        PetscCall(MatIsSymmetricKnown(Gref, &set2, &sym2));
        tap_ok((G == A || istype) && rbs == 1 && cbs == 1 && set1 == set2 && (!set1 || sym1 == sym2), "%s sym %d scale %d filter %g: graph of type %s, block size 1, symmetry flags as AIJ's", name, s, c, (double)filters[f], gt);
#if !PETSC_VERSION_LT(3, 25, 0) || (PETSC_VERSION_LT(3, 19, 0) && !PETSC_VERSION_LT(3, 18, 0))
        {
          PetscInt        bs;
          const PetscBool engine = (PetscBool)(PETSC_VERSION_LT(3, 19, 0) ? f == 0 : PETSC_TRUE); /* 3.18: unfiltered only */
          PetscCall(MatGetBlockSize(A, &bs));
          if (engine && (s || c || f || bs > 1)) tap_ok(after == before + 1, "%s sym %d scale %d filter %g: made by the engine (TileRAPGraph +%d)", name, s, c, (double)filters[f], (int)(after - before));
        }
#endif
        PetscCall(MatDestroy(&G));
        PetscCall(MatDestroy(&Gref));
      }
  PetscFunctionReturn(0);
}

/* both types from one random pattern: dense bs x bs blocks when dense */
static PetscErrorCode blocked(MPI_Comm comm, MatType type, PetscInt nb, PetscInt bs, PetscBool dense, unsigned long long seed, Mat *A)
{
  unsigned long long s = seed;
  PetscScalar        v[64 * 64];

  PetscFunctionBeginUser;
  PetscCall(MatCreate(comm, A));
  PetscCall(MatSetSizes(*A, nb * bs, nb * bs, nb * bs, nb * bs));
  PetscCall(MatSetBlockSize(*A, bs));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 6 * bs, NULL));
  for (PetscInt bi = 0; bi < nb; bi++)
    for (int k = 0; k < 5; k++) {
      PetscInt J = k == 0 ? bi : (PetscInt)(tu_rand(&s) * nb);
      if (J >= nb) J = nb - 1;
      for (PetscInt q = 0; q < bs * bs; q++) v[q] = 2.0 * tu_rand(&s) - 1.0 + (k == 0 && q % (bs + 1) == 0 ? 8.0 : 0.0);
      if (dense) PetscCall(MatSetValuesBlocked(*A, 1, &bi, 1, &J, v, INSERT_VALUES));
      else {
        PetscInt i = bi * bs + (PetscInt)(tu_rand(&s) * bs), j = J * bs + (PetscInt)(tu_rand(&s) * bs);
        PetscCall(MatSetValue(*A, i, j, v[0], INSERT_VALUES));
        if (k == 0)
          for (PetscInt d = 0; d < bs; d++) PetscCall(MatSetValue(*A, bi * bs + d, bi * bs + d, 8.0, INSERT_VALUES));
      }
    }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(0);
}

int main(int argc, char **argv)
{
  MPI_Comm comm;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  comm = PETSC_COMM_SELF;
  PetscCall(PetscLogDefaultBegin());
  PetscCall(TileRAPInitializePackage());
  {
    Mat A, Aaij;
    PetscCall(tu_random_mat(comm, MATSEQTILE, 333, 333, 7, PETSC_TRUE, 1, 1, 11, &A));
    PetscCall(tu_random_mat(comm, MATSEQAIJ, 333, 333, 7, PETSC_TRUE, 1, 1, 11, &Aaij));
    PetscCall(compare(A, Aaij, "random 333 unsymmetric"));
    /* a symmetric matrix, marked so: AIJ skips the transpose */
    {
      Mat S, Saij;
      PetscCall(MatTranspose(Aaij, MAT_INITIAL_MATRIX, &Saij));
      PetscCall(MatAXPY(Saij, 1.0, Aaij, DIFFERENT_NONZERO_PATTERN));
      PetscCall(MatConvert(Saij, MATSEQTILE, MAT_INITIAL_MATRIX, &S));
      PetscCall(MatSetOption(S, MAT_SYMMETRIC, PETSC_TRUE));
      PetscCall(MatSetOption(Saij, MAT_SYMMETRIC, PETSC_TRUE));
      PetscCall(compare(S, Saij, "symmetric 333 marked"));
      PetscCall(MatDestroy(&S));
      PetscCall(MatDestroy(&Saij));
    }
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&Aaij));
  }
  {
    /* an empty row (7), a zero diagonal (3), no diagonal (5), stored zeros */
    Mat         A, Aaij;
    PetscInt    n = 9;
    MatType     types[2] = {MATSEQTILE, MATSEQAIJ};
    Mat        *out[2]   = {&A, &Aaij};
    for (int t = 0; t < 2; t++) {
      Mat X;
      PetscCall(MatCreate(comm, &X));
      PetscCall(MatSetSizes(X, n, n, n, n));
      PetscCall(MatSetType(X, types[t]));
      PetscCall(MatSeqAIJSetPreallocation(X, 4, NULL));
      for (PetscInt i = 0; i < n; i++) {
        if (i == 7) continue;
        if (i != 5) PetscCall(MatSetValue(X, i, i, i == 3 ? 0.0 : 2.0 + i, INSERT_VALUES));
        PetscCall(MatSetValue(X, i, (i + 2) % n, -1.0 - 0.1 * i, INSERT_VALUES));
        if (i % 3 == 0) PetscCall(MatSetValue(X, i, (i + 4) % n, 0.0, INSERT_VALUES));
      }
      PetscCall(MatAssemblyBegin(X, MAT_FINAL_ASSEMBLY));
      PetscCall(MatAssemblyEnd(X, MAT_FINAL_ASSEMBLY));
      *out[t] = X;
    }
    PetscCall(compare(A, Aaij, "9x9 empty row, zero and missing diagonal"));
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&Aaij));
  }
  for (int dense = 1; dense >= 0; dense--) {
    Mat A, Aaij;
    PetscCall(blocked(comm, MATSEQTILE, 101, 3, (PetscBool)dense, 21, &A));
    PetscCall(blocked(comm, MATSEQAIJ, 101, 3, (PetscBool)dense, 21, &Aaij));
    PetscCall(compare(A, Aaij, dense ? "bs 3 dense blocks" : "bs 3 sparse blocks"));
    PetscCall(MatDestroy(&A));
    PetscCall(MatDestroy(&Aaij));
  }
  PetscCall(PetscFinalize());
  return tap_done();
}
