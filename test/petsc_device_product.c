/* MATSEQTILE in a PETSc built with CUDA, run on a GPU: the tile type is
 * AIJCUSPARSE underneath, its products read the operands' device CSR and
 * write C's device CSR.  Checked against PETSc's SeqAIJ products of host
 * copies (AIJCUSPARSE's own reported alongside) on a grid operator and an irregular one (random
 * columns, a dense row, an empty row) with tall-skinny and rectangular
 * operands: same structure, values to 1e-12; C's host copy is not made by
 * the product and PETSc logs no device-to-host copy during a numeric run;
 * re-runs after new device values, changed patterns, mixed operand types,
 * MatDuplicate, MatBindToCPU, MatMult on the device, and GAMG with the
 * same iterations as AIJCUSPARSE.  Elsewhere (no CUDA in PETSc, PETSc
 * older than 3.25, no GPU) the program reports a skip. */
#include <petsc/private/matimpl.h>
#include <petscksp.h>
#include "tilerap_petsc.h"
#include "tilerap_device.h"
#include "petsc_testutil.h"

#if !TU_DEVICE_TYPES
int main(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  printf("1..0 # SKIP PETSc without CUDA or older than 3.25: the tile types are host AIJ\n");
  return 0;
}
#else

  #define TOL 1e-12

/* 2-D 5-point Laplacian on an nx x ny grid, of type `type`. */
static PetscErrorCode grid_mat(MatType type, PetscInt nx, PetscInt ny, Mat *A)
{
  PetscInt n = nx * ny;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_SELF, A));
  PetscCall(MatSetSizes(*A, n, n, n, n));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 5, NULL));
  for (PetscInt j = 0; j < ny; j++)
    for (PetscInt i = 0; i < nx; i++) {
      PetscInt r = j * nx + i;
      PetscCall(MatSetValue(*A, r, r, 4.0, INSERT_VALUES));
      if (i > 0) PetscCall(MatSetValue(*A, r, r - 1, -1.0, INSERT_VALUES));
      if (i + 1 < nx) PetscCall(MatSetValue(*A, r, r + 1, -1.0, INSERT_VALUES));
      if (j > 0) PetscCall(MatSetValue(*A, r, r - nx, -1.0, INSERT_VALUES));
      if (j + 1 < ny) PetscCall(MatSetValue(*A, r, r + nx, -1.0, INSERT_VALUES));
    }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* n x n: random columns (about 7 a row) and the diagonal, row `dense` full,
 * row `empty` without entries. */
static PetscErrorCode irregular_mat(MatType type, PetscInt n, PetscInt dense, PetscInt empty, unsigned long long seed, Mat *A)
{
  unsigned long long s = seed;
  PetscInt          *nnz;

  PetscFunctionBeginUser;
  PetscCall(PetscMalloc1(n, &nnz));
  for (PetscInt i = 0; i < n; i++) nnz[i] = i == dense ? n : 8;
  PetscCall(MatCreate(PETSC_COMM_SELF, A));
  PetscCall(MatSetSizes(*A, n, n, n, n));
  PetscCall(MatSetType(*A, type));
  PetscCall(MatSeqAIJSetPreallocation(*A, 0, nnz));
  PetscCall(PetscFree(nnz));
  for (PetscInt i = 0; i < n; i++) {
    if (i == empty) continue;
    if (i == dense) {
      for (PetscInt j = 0; j < n; j++) PetscCall(MatSetValue(*A, i, j, 2.0 * tu_rand(&s) - 1.0, INSERT_VALUES));
      continue;
    }
    for (PetscInt k = 0; k < 7; k++) {
      PetscInt j = (PetscInt)(tu_rand(&s) * n);
      PetscCall(MatSetValue(*A, i, PetscMin(j, n - 1), 2.0 * tu_rand(&s) - 1.0, INSERT_VALUES));
    }
    PetscCall(MatSetValue(*A, i, i, 8.0, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* n x nc prolongator-like: row i has 1 to 3 entries near column i*nc/n,
 * every 11th row empty. */
static PetscErrorCode tall_mat(MatType type, PetscInt n, PetscInt nc, unsigned long long seed, Mat *P)
{
  unsigned long long s = seed;

  PetscFunctionBeginUser;
  PetscCall(MatCreate(PETSC_COMM_SELF, P));
  PetscCall(MatSetSizes(*P, n, nc, n, nc));
  PetscCall(MatSetType(*P, type));
  PetscCall(MatSeqAIJSetPreallocation(*P, 3, NULL));
  for (PetscInt i = 0; i < n; i++) {
    PetscInt c = (i * nc) / n, len = 1 + (PetscInt)(3 * tu_rand(&s));
    if (i % 11 == 5) continue;
    for (PetscInt k = 0; k < len; k++) PetscCall(MatSetValue(*P, i, PetscMin(c + k, nc - 1), 0.25 + tu_rand(&s), INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*P, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*P, MAT_FINAL_ASSEMBLY));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode to_tile(Mat X, Mat *T)
{
  PetscFunctionBeginUser;
  PetscCall(MatConvert(X, MATSEQTILE, MAT_INITIAL_MATRIX, T));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode product(Mat X, Mat Y, MatProductType type, MatReuse reuse, Mat *C)
{
  PetscFunctionBeginUser;
  if (type == MATPRODUCT_PtAP) PetscCall(MatPtAP(X, Y, reuse, PETSC_DETERMINE, C));
  else if (type == MATPRODUCT_AtB) PetscCall(MatTransposeMatMult(X, Y, reuse, PETSC_DETERMINE, C));
  else PetscCall(MatMatMult(X, Y, reuse, PETSC_DETERMINE, C));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* X against Xref: same structure, values to TOL. */
static PetscErrorCode values_ok(Mat X, Mat Xref, const char *what)
{
  PetscBool same;
  PetscReal err;

  PetscFunctionBeginUser;
  PetscCall(tu_compare(X, Xref, &same, &err));
  tap_ok(same && err <= TOL, "%s: same structure as the reference %d, rel. error %.2e", what, (int)same, (double)err);
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* C (tile) against Cref: type, device residency (the product left only
 * the device copy valid), structure and values. */
static PetscErrorCode check(Mat C, Mat Cref, const char *what)
{
  PetscBool        istile;
  PetscOffloadMask mask = C->offloadmask;

  PetscFunctionBeginUser;
  PetscCall(PetscObjectTypeCompare((PetscObject)C, MATSEQAIJTILE, &istile));
  tap_ok(istile && mask == PETSC_OFFLOAD_GPU, "%s: C is %s with only its device copy valid (offload mask %d)", what, ((PetscObject)C)->type_name, (int)mask);
  PetscCall(values_ok(C, Cref, what));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The "tilerap path" line of C's -mat_view ::ascii_info into buf. */
static PetscErrorCode path_of(Mat C, char *buf, size_t len)
{
  char all[8192];

  PetscFunctionBeginUser;
  PetscCall(tu_view_info(C, "petsc_device_product.view.out", all, sizeof all));
  {
    const char *p = strstr(all, "tilerap path ");
    size_t      k = 0;
    for (; p && p[k] && p[k] != '\n' && k + 1 < len; k++) buf[k] = p[k];
    buf[k] = 0;
  }
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* The route the products take now: the device CSR products on
 * AIJCUSPARSE's arrays (default), or the tile plans (-mat_tile_path tiles,
 * set as the TILERAP_PATH knob here). */
static PetscBool tile_route = PETSC_FALSE;

static PetscErrorCode plans_now(PetscInt *n)
{
  PetscFunctionBeginUser;
  PetscCall(tu_event_count("TileRAPPlan", n));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* One product of tile operands X, Y against PETSc's SeqAIJ product of host
 * copies of Xc, Yc: first time, then a numeric re-run after new values of
 * X on the device (MatScale), with no plan and no device-to-host copy.
 * AIJCUSPARSE's own product of Xc, Yc is reported alongside (diagnostic):
 * its A^T*B re-run does not see new values of A in PETSc 3.25. */
static PetscErrorCode one_product(Mat X, Mat Y, Mat Xc, Mat Yc, MatProductType type, const char *name)
{
  Mat            C, Cref, Ccu, Xh, Yh;
  char           what[160];
  PetscInt       p0, p1;
  PetscLogDouble g0, g1;

  PetscFunctionBeginUser;
  PetscCall(MatConvert(Xc, MATSEQAIJ, MAT_INITIAL_MATRIX, &Xh));
  PetscCall(MatConvert(Yc, MATSEQAIJ, MAT_INITIAL_MATRIX, &Yh));
  PetscCall(product(Xh, Yh, type, MAT_INITIAL_MATRIX, &Cref));
  PetscCall(product(Xc, Yc, type, MAT_INITIAL_MATRIX, &Ccu));
  PetscCall(product(X, Y, type, MAT_INITIAL_MATRIX, &C));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s %s first (%s route)", name, MatProductTypes[type], tile_route ? "tile" : "device CSR"));
  PetscCall(check(C, Cref, what));
  {
    char path[512];
    PetscCall(path_of(C, path, sizeof path));
    tap_ok(strstr(path, tile_route ? "entries per tile" : "tilerap path device-csr") != NULL, "%s: C's view names the route: %s", what, path);
  }
  {
    PetscBool same;
    PetscReal err;
    PetscCall(tu_compare(Ccu, Cref, &same, &err));
    tap_diag("%s: AIJCUSPARSE's product against SeqAIJ's: same structure %d, rel. error %.2e", what, (int)same, (double)err);
  }

  PetscCall(MatScale(X, 0.5));
  PetscCall(MatScale(Xc, 0.5));
  PetscCall(MatScale(Xh, 0.5));
  PetscCall(MatScale(Y, 2.0)); /* both operands' new values are read */
  PetscCall(MatScale(Yc, 2.0));
  PetscCall(MatScale(Yh, 2.0));
  PetscCall(product(Xh, Yh, type, MAT_REUSE_MATRIX, &Cref));
  PetscCall(product(Xc, Yc, type, MAT_REUSE_MATRIX, &Ccu));
  PetscCall(plans_now(&p0));
  g0 = petsc_gtoc_ct;
  PetscCall(product(X, Y, type, MAT_REUSE_MATRIX, &C));
  g1 = petsc_gtoc_ct;
  PetscCall(plans_now(&p1));
  PetscCall(PetscSNPrintf(what, sizeof what, "%s %s re-run after new device values (%s route)", name, MatProductTypes[type], tile_route ? "tile" : "device CSR"));
  tap_ok(p1 == p0 && g1 == g0, "%s: numeric only (plans +%d), device-to-host copies logged +%g", what, (int)(p1 - p0), (double)(g1 - g0));
  PetscCall(check(C, Cref, what));
  {
    PetscBool same;
    PetscReal err;
    PetscCall(tu_compare(Ccu, Cref, &same, &err));
    tap_diag("%s: AIJCUSPARSE's product against SeqAIJ's: same structure %d, rel. error %.2e", what, (int)same, (double)err);
  }
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&Cref));
  PetscCall(MatDestroy(&Ccu));
  PetscCall(MatDestroy(&Xh));
  PetscCall(MatDestroy(&Yh));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode products_of(Mat Ac, Mat Pc, Mat Bc, const char *name)
{
  Mat A, P, B;

  PetscFunctionBeginUser;
  PetscCall(to_tile(Ac, &A));
  PetscCall(to_tile(Pc, &P));
  PetscCall(to_tile(Bc, &B));
  PetscCall(one_product(A, P, Ac, Pc, MATPRODUCT_PtAP, name));
  PetscCall(one_product(A, B, Ac, Bc, MATPRODUCT_AB, name));
  PetscCall(one_product(P, A, Pc, Ac, MATPRODUCT_AtB, name));
  PetscCall(MatDestroy(&A));
  PetscCall(MatDestroy(&P));
  PetscCall(MatDestroy(&B));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* Mixed operands, MatMult, MatDuplicate, MatBindToCPU and a changed pattern. */
static PetscErrorCode more_checks(void)
{
  Mat       Ac, Pc, A, P, C, Cref, D;
  Vec       x, y, yref;
  PetscReal nrm, nref;
  PetscBool istile, iscuda;
  PetscInt  p0, p1;
  VecType   vt;

  PetscFunctionBeginUser;
  PetscCall(grid_mat(MATSEQAIJCUSPARSE, 33, 29, &Ac));
  PetscCall(tall_mat(MATSEQAIJCUSPARSE, 33 * 29, 250, 7, &Pc));
  PetscCall(to_tile(Ac, &A));
  PetscCall(MatPtAP(Ac, Pc, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cref));

  /* the tile type is a device type: its vectors are CUDA vectors */
  PetscCall(MatCreateVecs(A, &x, NULL));
  PetscCall(VecGetType(x, &vt));
  PetscCall(PetscStrcmp(vt, VECSEQCUDA, &iscuda));
  tap_ok(iscuda, "MatCreateVecs of a seqtile gives %s (seqcuda expected)", vt);
  PetscCall(VecDestroy(&x));

  /* tile A with an AIJCUSPARSE P */
  PetscCall(MatPtAP(A, Pc, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(check(C, Cref, "PtAP tile A, aijcusparse P"));

  /* MatMult with C on the device */
  PetscCall(MatCreateVecs(C, &x, &y));
  PetscCall(VecDuplicate(y, &yref));
  PetscCall(VecSetRandom(x, NULL));
  PetscCall(MatMult(C, x, y));
  PetscCall(MatMult(Cref, x, yref));
  PetscCall(VecAXPY(y, -1.0, yref));
  PetscCall(VecNorm(y, NORM_2, &nrm));
  PetscCall(VecNorm(yref, NORM_2, &nref));
  tap_ok(nrm <= TOL * nref, "MatMult of the tile C on CUDA vectors: rel. difference %.2e", (double)(nrm / nref));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(VecDestroy(&yref));
  PetscCall(MatDestroy(&C));

  /* a P that asks for its explicit transpose (as GAMG's do) gets its
   * transposed view in the product's setup (AIJCUSPARSE's PtAP forms its
   * explicit transpose there): no cuSPARSE transpose then or in the
   * restriction after it, which multiplies right */
  {
    Mat       Pt;
    PetscInt  g0, g1, g2;
    PetscReal e, r;
    PetscCall(to_tile(Pc, &Pt));
    PetscCall(MatSetOption(Pt, MAT_FORM_EXPLICIT_TRANSPOSE, PETSC_TRUE));
    PetscCall(tu_event_count("MatCUSPARSGenT", &g0));
    PetscCall(MatPtAP(A, Pt, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &C));
    PetscCall(tu_event_count("MatCUSPARSGenT", &g1));
    PetscCall(check(C, Cref, "PtAP tile A, tile P asking for its transpose"));
    PetscCall(MatCreateVecs(Pt, &x, &y));
    PetscCall(VecDuplicate(x, &yref));
    PetscCall(VecSetRandom(y, NULL));
    PetscCall(MatMultTranspose(Pt, y, x));
    PetscCall(tu_event_count("MatCUSPARSGenT", &g2));
    PetscCall(MatMultTranspose(Pc, y, yref));
    PetscCall(VecAXPY(x, -1.0, yref));
    PetscCall(VecNorm(x, NORM_2, &e));
    PetscCall(VecNorm(yref, NORM_2, &r));
    tap_ok(g1 == g0 && g2 == g1 && e <= TOL * r, "P's transpose for the restriction: no cuSPARSE transpose in PtAP's setup (+%d) or in the restriction after (+%d), P^T y rel. difference %.2e", (int)(g1 - g0), (int)(g2 - g1), (double)(e / r));
    /* MatMultTransposeAdd (z apart and z = y), new values, a new
     * structure, bound to the CPU and back: each against AIJCUSPARSE's */
    {
      Mat Pr; /* the reference, changed alike (Pc stays for the checks below) */
      PetscCall(MatDuplicate(Pc, MAT_COPY_VALUES, &Pr));
      for (int k = 0; k < 5; k++) {
        Vec       z, w;
        PetscReal ea, eb, ra, rb;
        for (int q = 0; q < 2 && (k == 1 || k == 2); q++) { /* the tile P and the reference alike */
          Mat M = q ? Pr : Pt;
          if (k == 1) PetscCall(MatScale(M, 1.5));
          else { /* a new entry (row 5 has none): a new nonzerostate, a new view */
            PetscCall(MatSetOption(M, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
            PetscCall(MatSetValue(M, 5, 0, 2.5, INSERT_VALUES));
            PetscCall(MatAssemblyBegin(M, MAT_FINAL_ASSEMBLY));
            PetscCall(MatAssemblyEnd(M, MAT_FINAL_ASSEMBLY));
          }
        }
        if (k == 3) PetscCall(MatBindToCPU(Pt, PETSC_TRUE));
        else if (k == 4) PetscCall(MatBindToCPU(Pt, PETSC_FALSE));
        PetscCall(VecDuplicate(x, &z));
        PetscCall(VecDuplicate(x, &w));
        PetscCall(VecSetRandom(y, NULL));
        PetscCall(VecSetRandom(z, NULL));
        PetscCall(MatMultTransposeAdd(Pt, y, z, x)); /* x = P^T y + z */
        PetscCall(MatMultTranspose(Pr, y, yref));   /* the reference: P^T y, then + z */
        PetscCall(VecAXPY(yref, 1.0, z));
        PetscCall(VecAXPY(x, -1.0, yref));
        PetscCall(VecNorm(x, NORM_2, &ea));
        PetscCall(VecNorm(yref, NORM_2, &ra));
        PetscCall(VecCopy(z, w));
        PetscCall(MatMultTransposeAdd(Pt, y, w, w)); /* w = P^T y + w, against P^T y + z above */
        PetscCall(VecAXPY(w, -1.0, yref));
        PetscCall(VecNorm(w, NORM_2, &eb));
        rb = ra;
        {
          static const char *const when[] = {"as made", "after MatScale", "after a new entry", "bound to the CPU", "released again"};
          tap_ok(ea <= TOL * ra && eb <= TOL * rb, "MatMultTransposeAdd of a tile P %s: P^T y + z rel. difference %.2e, in place %.2e", when[k], (double)(ea / ra), (double)(eb / rb));
        }
        PetscCall(VecDestroy(&z));
        PetscCall(VecDestroy(&w));
      }
      PetscCall(MatDestroy(&Pr));
    }
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&y));
    PetscCall(VecDestroy(&yref));
    PetscCall(MatDestroy(&C));
    PetscCall(MatDestroy(&Pt));
  }

  /* MatDuplicate keeps the tile type, and its products */
  PetscCall(MatDuplicate(A, MAT_COPY_VALUES, &D));
  PetscCall(PetscObjectTypeCompare((PetscObject)D, MATSEQAIJTILE, &istile));
  tap_ok(istile, "MatDuplicate of a seqtile is %s", ((PetscObject)D)->type_name);
  PetscCall(to_tile(Pc, &P));
  PetscCall(MatPtAP(D, P, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(check(C, Cref, "PtAP of a duplicated seqtile"));
  PetscCall(MatDestroy(&C));
  PetscCall(MatDestroy(&D));

  /* bound to the CPU: host arrays, still the tile engine, still right; released: the device again */
  PetscCall(MatBindToCPU(A, PETSC_TRUE));
  PetscCall(plans_now(&p0));
  PetscCall(MatPtAP(A, P, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(plans_now(&p1));
  tap_ok(p1 == p0 + 1, "PtAP with A bound to the CPU: a tile plan (+%d)", (int)(p1 - p0));
  PetscCall(values_ok(C, Cref, "PtAP with A bound to the CPU"));
  PetscCall(MatDestroy(&C));
  PetscCall(MatBindToCPU(A, PETSC_FALSE));
  PetscCall(MatPtAP(A, P, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(check(C, Cref, "PtAP after MatBindToCPU(A, false)"));

  /* C bound to the CPU between runs: the re-run writes C's host values, and
   * C released computes with them on the device */
  {
    Mat Ah, Ph, Ch;
    PetscCall(MatBindToCPU(C, PETSC_TRUE));
    PetscCall(MatScale(A, 2.0));
    PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, PETSC_DETERMINE, &C));
    PetscCall(MatConvert(A, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ah));
    PetscCall(MatConvert(P, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ph));
    PetscCall(MatPtAP(Ah, Ph, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Ch));
    PetscCall(values_ok(C, Ch, "PtAP re-run into a C bound to the CPU"));
    PetscCall(MatBindToCPU(C, PETSC_FALSE));
    PetscCall(MatCreateVecs(C, &x, &y));
    PetscCall(VecDuplicate(y, &yref));
    PetscCall(VecSetRandom(x, NULL));
    PetscCall(MatMult(C, x, y));
    {
      Vec xh, yh;
      const PetscScalar *xa;
      PetscCall(MatCreateVecs(Ch, &xh, &yh));
      PetscCall(VecGetArrayRead(x, &xa));
      PetscCall(VecPlaceArray(xh, xa));
      PetscCall(MatMult(Ch, xh, yh));
      PetscCall(VecResetArray(xh));
      PetscCall(VecRestoreArrayRead(x, &xa));
      {
        const PetscScalar *ya, *yb;
        PetscInt           n;
        PetscReal          d = 0, r = 0;
        PetscCall(VecGetLocalSize(y, &n));
        PetscCall(VecGetArrayRead(y, &ya));
        PetscCall(VecGetArrayRead(yh, &yb));
        for (PetscInt i = 0; i < n; i++) {
          d = PetscMax(d, PetscAbsScalar(ya[i] - yb[i]));
          r = PetscMax(r, PetscAbsScalar(yb[i]));
        }
        PetscCall(VecRestoreArrayRead(y, &ya));
        PetscCall(VecRestoreArrayRead(yh, &yb));
        tap_ok(d <= TOL * r, "MatMult on the device after C was bound and released: max difference %.2e of %.2e", (double)d, (double)r);
      }
      PetscCall(VecDestroy(&xh));
      PetscCall(VecDestroy(&yh));
    }
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&y));
    PetscCall(VecDestroy(&yref));

    /* SeqAIJ's converters: values as they are now on the device */
    {
      Mat Cb, Cba;
      PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, PETSC_DETERMINE, &C));
      PetscCall(MatConvert(C, MATSEQBAIJ, MAT_INITIAL_MATRIX, &Cb));
      PetscCall(MatConvert(Cb, MATSEQAIJ, MAT_INITIAL_MATRIX, &Cba));
      PetscCall(values_ok(Cba, Ch, "MatConvert of a device tile C to seqbaij"));
      PetscCall(MatDestroy(&Cb));
      PetscCall(MatDestroy(&Cba));
    }

    /* a product the tile engine leaves to SeqAIJ (A*B^T), re-run after new device values */
    {
      Mat Ct, Cth, Ah2;
      PetscCall(MatMatTransposeMult(A, A, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Ct));
      PetscCall(MatScale(A, 0.5));
      PetscCall(MatMatTransposeMult(A, A, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Ct));
      PetscCall(MatConvert(A, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ah2));
      PetscCall(MatMatTransposeMult(Ah2, Ah2, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cth));
      PetscCall(values_ok(Ct, Cth, "A*B^T (SeqAIJ's) re-run after new device values of A"));
      PetscCall(MatDestroy(&Ct));
      PetscCall(MatDestroy(&Cth));
      PetscCall(MatDestroy(&Ah2));
    }
    PetscCall(MatDestroy(&Ah));
    PetscCall(MatDestroy(&Ph));
    PetscCall(MatDestroy(&Ch));
  }

  /* a new nonzero in A: the re-run plans again and is right */
  PetscCall(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatSetOption(Ac, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
  PetscCall(MatSetValue(A, 0, 33 * 29 - 1, 0.5, INSERT_VALUES));
  PetscCall(MatSetValue(Ac, 0, 33 * 29 - 1, 0.5, INSERT_VALUES));
  PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyBegin(Ac, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(Ac, MAT_FINAL_ASSEMBLY));
  PetscCall(MatDestroy(&Cref));
  PetscCall(MatPtAP(Ac, Pc, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cref));
  PetscCall(plans_now(&p0));
  PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(plans_now(&p1));
  tap_ok(p1 == p0 + 1, "PtAP MAT_REUSE_MATRIX after a new nonzero in A: planned again (plans +%d)", (int)(p1 - p0));
  PetscCall(values_ok(C, Cref, "PtAP after a new nonzero in A"));
  PetscCall(tu_destroy_mats(6, (Mat *[]){&C, &Cref, &A, &P, &Ac, &Pc}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

/* GAMG on the device: iterations of seqtile equal those of aijcusparse. */
/* Where the device CSR route goes: a row of 40009 entries stays on it (its
 * products split over many blocks); an operand bound to the CPU between
 * runs makes the re-run plan again on the host arrays. */
static PetscErrorCode route_checks(void)
{
  Mat              Ac, Pc, A, P, C, Ah, Ph, Cref;
  PetscInt         p0, p1;
  PetscObjectState nzs;
  char             path[512];

  PetscFunctionBeginUser;
  PetscCall(irregular_mat(MATSEQAIJCUSPARSE, 40009, 123, 7, 21, &Ac));
  PetscCall(tall_mat(MATSEQAIJCUSPARSE, 40009, 1511, 5, &Pc));
  PetscCall(to_tile(Ac, &A));
  PetscCall(to_tile(Pc, &P));
  PetscCall(MatConvert(Ac, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ah));
  PetscCall(MatConvert(Pc, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ph));
  PetscCall(MatPtAP(Ah, Ph, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cref));
  PetscCall(MatPtAP(A, P, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(check(C, Cref, "PtAP, A with a row of 40009 entries"));
  PetscCall(path_of(C, path, sizeof path));
  tap_ok(strstr(path, "device-csr") != NULL, "a row of 40009 entries: the device CSR route (%s)", path);
  PetscCall(MatScale(A, 2.0));
  PetscCall(MatScale(Ah, 2.0));
  PetscCall(MatPtAP(Ah, Ph, MAT_REUSE_MATRIX, PETSC_DETERMINE, &Cref));
  for (int run = 0; run < 2; run++) { /* the numeric runs' hash, then the record */
    PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, PETSC_DETERMINE, &C));
    PetscCall(check(C, Cref, run ? "PtAP re-run 2, a row of 40009 entries" : "PtAP re-run 1, a row of 40009 entries"));
  }
  PetscCall(tu_destroy_mats(8, (Mat *[]){&C, &Cref, &A, &P, &Ah, &Ph, &Ac, &Pc}));

  PetscCall(grid_mat(MATSEQAIJCUSPARSE, 31, 27, &Ac));
  PetscCall(tall_mat(MATSEQAIJCUSPARSE, 31 * 27, 211, 8, &Pc));
  PetscCall(to_tile(Ac, &A));
  PetscCall(to_tile(Pc, &P));
  PetscCall(MatPtAP(A, P, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(path_of(C, path, sizeof path));
  tap_ok(strstr(path, "device-csr") != NULL, "PtAP of device operands: the device CSR route (%s)", path);
  PetscCall(MatBindToCPU(A, PETSC_TRUE));
  PetscCall(MatScale(A, 3.0));
  PetscCall(plans_now(&p0));
  nzs = C->nonzerostate;
  PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(plans_now(&p1));
  tap_ok(C->nonzerostate == nzs, "PtAP planned again for unchanged patterns keeps C's structure (nonzerostate %d -> %d)", (int)nzs, (int)C->nonzerostate);
  PetscCall(MatConvert(A, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ah));
  PetscCall(MatConvert(P, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ph));
  PetscCall(MatPtAP(Ah, Ph, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cref));
  tap_ok(p1 == p0 + 1, "PtAP re-run with A bound to the CPU since: planned again (+%d)", (int)(p1 - p0));
  PetscCall(values_ok(C, Cref, "PtAP re-run with A bound to the CPU since"));
  PetscCall(path_of(C, path, sizeof path));
  tap_ok(strstr(path, "entries per tile") != NULL, "... on the tile route (%s)", path);
  /* released, new values on the device; the reference from A's values as
   * they are then (AIJCUSPARSE does not mark values written while bound to
   * the CPU as newer than its device copy: they are not A's after release) */
  PetscCall(MatBindToCPU(A, PETSC_FALSE));
  PetscCall(MatScale(A, 0.5));
  PetscCall(MatDestroy(&Ah));
  PetscCall(MatDestroy(&Cref));
  PetscCall(MatConvert(A, MATSEQAIJ, MAT_INITIAL_MATRIX, &Ah));
  PetscCall(MatPtAP(Ah, Ph, MAT_INITIAL_MATRIX, PETSC_DETERMINE, &Cref));
  PetscCall(MatPtAP(A, P, MAT_REUSE_MATRIX, PETSC_DETERMINE, &C));
  PetscCall(check(C, Cref, "PtAP re-run with A released to the device"));
  PetscCall(tu_destroy_mats(8, (Mat *[]){&C, &Cref, &A, &P, &Ah, &Ph, &Ac, &Pc}));
  PetscFunctionReturn(PETSC_SUCCESS);
}

static PetscErrorCode gamg_iterations(MatType type, PetscInt *its, PetscReal *rnorm, PetscInt *plans)
{
  Mat      A;
  KSP      ksp;
  PC       pc;
  Vec      x, b;
  PetscInt p0, p1;

  PetscFunctionBeginUser;
  PetscCall(grid_mat(type, 97, 89, &A));
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecSet(b, 1.0));
  PetscCall(KSPCreate(PETSC_COMM_SELF, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCGAMG));
  PetscCall(KSPSetTolerances(ksp, 1e-10, PETSC_DEFAULT, PETSC_DEFAULT, 200));
  PetscCall(plans_now(&p0));
  PetscCall(KSPSolve(ksp, b, x));
  PetscCall(plans_now(&p1));
  PetscCall(KSPGetIterationNumber(ksp, its));
  PetscCall(KSPGetResidualNorm(ksp, rnorm));
  *plans = p1 - p0;
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&b));
  PetscCall(MatDestroy(&A));
  PetscFunctionReturn(PETSC_SUCCESS);
}

int main(int argc, char **argv)
{
  Mat       Ac, Pc, Bc;
  PetscInt  its_ref, its, plans_ref, plans;
  PetscReal r_ref, r;

  PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
  if (tilerap_device_count() < 1) {
    printf("1..0 # SKIP no GPU visible\n");
    PetscCall(PetscFinalize());
    return 0;
  }
  PetscCall(TileRAPInitializePackage());
  PetscCall(PetscLogDefaultBegin());
  PetscCall(PetscOptionsSetValue(NULL, "-mat_tile_engine", "cuda"));

  /* the AIJCUSPARSE device copy written on the device keeps the tile's plan:
   * each operand's values change on the device between runs */
  PetscCall(grid_mat(MATSEQAIJCUSPARSE, 41, 37, &Ac));
  PetscCall(tall_mat(MATSEQAIJCUSPARSE, 41 * 37, 389, 3, &Pc));
  PetscCall(tu_random_mat(PETSC_COMM_SELF, MATSEQAIJCUSPARSE, 41 * 37, 61, 3, PETSC_FALSE, 1, 1, 11, &Bc));
  PetscCall(products_of(Ac, Pc, Bc, "grid 41x37"));
  tile_route = PETSC_TRUE;
  tap_ok(tilerap_tuning_set("TILERAP_PATH", "tiles") == TILERAP_SUCCESS, "TILERAP_PATH=tiles: the tile plans");
  PetscCall(products_of(Ac, Pc, Bc, "grid 41x37"));
  tap_ok(tilerap_tuning_set("TILERAP_PATH", "auto") == TILERAP_SUCCESS, "TILERAP_PATH=auto again");
  tile_route = PETSC_FALSE;
  PetscCall(MatDestroy(&Ac));
  PetscCall(MatDestroy(&Pc));
  PetscCall(MatDestroy(&Bc));

  PetscCall(irregular_mat(MATSEQAIJCUSPARSE, 1003, 17, 3, 5, &Ac));
  PetscCall(tall_mat(MATSEQAIJCUSPARSE, 1003, 97, 9, &Pc));
  PetscCall(tu_random_mat(PETSC_COMM_SELF, MATSEQAIJCUSPARSE, 1003, 1, 2, PETSC_FALSE, 1, 1, 13, &Bc));
  PetscCall(products_of(Ac, Pc, Bc, "irregular 1003 (dense row, empty row), P 1003x97, B 1003x1"));
  tile_route = PETSC_TRUE;
  tap_ok(tilerap_tuning_set("TILERAP_PATH", "tiles") == TILERAP_SUCCESS, "TILERAP_PATH=tiles: the tile plans");
  PetscCall(products_of(Ac, Pc, Bc, "irregular 1003 (dense row, empty row), P 1003x97, B 1003x1"));
  tap_ok(tilerap_tuning_set("TILERAP_PATH", "auto") == TILERAP_SUCCESS, "TILERAP_PATH=auto again");
  tile_route = PETSC_FALSE;
  PetscCall(MatDestroy(&Ac));
  PetscCall(MatDestroy(&Pc));
  PetscCall(MatDestroy(&Bc));

  PetscCall(more_checks());
  PetscCall(route_checks());

  PetscCall(gamg_iterations(MATSEQAIJCUSPARSE, &its_ref, &r_ref, &plans_ref));
  PetscCall(gamg_iterations(MATSEQTILE, &its, &r, &plans));
  tap_ok(its == its_ref && plans > 0, "GAMG-CG 97x89: %d iterations with seqtile (%d tile plans), %d with aijcusparse", (int)its, (int)plans, (int)its_ref);
  tap_ok(PetscAbsReal(r - r_ref) <= 1e-6 * r_ref, "GAMG-CG residual norms %.6e (seqtile) and %.6e (aijcusparse)", (double)r, (double)r_ref);

  PetscCall(PetscFinalize());
  return tap_done();
}
#endif
