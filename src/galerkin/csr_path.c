/* The CSR path of the plans: products whose operands' tiles hold too few
 * entries for the tile steps to pay.  The tile steps cost per pair of
 * tiles; in an unordered mesh or a random or power-law graph most tiles
 * hold one or two entries, so there are nearly as many tile pairs as
 * multiply-adds, each far dearer than one.  This path multiplies row by
 * row over CSR views of the tiles (each entry's column and the position
 * of its value in the tile matrix, made once per plan), so it costs per
 * multiply-add whatever the order.  Inputs and C stay tile matrices:
 * products read the tiles' own values and write C's in place through a
 * position map, so numeric runs move no value twice and allocate nothing.
 *
 * A*B: views of A and B, one product.  A^T*B: a transposed view of A.
 * P^T A P: views of A, P and P^T; AP in CSR (its own values), then
 * C = P^T (AP).  The engine's kernels: csr_cpu.c, csr_cuda_*.cu. */
#include "csr_path.h"
#include "engine_cuda.h"
#include "spgemm_cpu.h"
#include "tuning.h"

typedef struct {
  int64_t *rp, *vidx;
  int32_t *col;
} tr_csr_view_arrays;

/* one product X = op(A) * B of CSR views */
typedef struct {
  tr_cpu_csr_product *cpu;
#ifdef TILERAP_HAVE_CUDA
  tr_cuda_csr_product *cuda;
#endif
} tr_product;

struct tr_csr_path {
  tilerap_engine engine;
  void *stream;
  int galerkin;             /* P^T A P: va = A, vb = P, vt = P^T */
  tr_csr_view_arrays va, vb, vt;
  tr_product ab, c;         /* A*B (or AP); the Galerkin plan's C = P^T (AP) */
  double *apval;            /* AP's values (Galerkin) */
  double *bval;             /* B's (P's) values in its view's order, or NULL */
  int64_t *cpos;            /* C's sorted CSR entry -> C's tile position */
  int64_t macs_ab, macs_c;
};

double tr_tile_fill(const tilerap_tile_matrix *T)
{
  return T->num_tiles > 0 ? (double)T->nnz / (double)T->num_tiles : 0.0;
}

/* auto: the CSR path when a tile pair would carry fewer than
 * TILERAP_CSR_MACS_PER_PAIR multiply-adds.  Tiles whose entries fall at
 * random give a pair about fill(A) * fill(B) / 16 of them (16 inner
 * indices per tile); clustered entries give more, so this errs towards
 * the tiles where locality exists.  A dense row is not a reason: sending
 * such an A here (a test of its longest tile row) did not pay when
 * measured (BENCHMARKS.md, the irregular set).
 * The CPU engine's tile kernel also walks each of A's entries in every
 * pair, which its B tile rows mostly miss when B's tiles are sparse:
 * about pairs * fill(A) steps against the multiply-adds, i.e. 16 / fill(B)
 * steps per multiply-add; below TR_CPU_TILES_MIN_B_FILL entries per tile
 * of B the CPU engine takes the CSR path as well. */
#define TR_CPU_TILES_MIN_B_FILL 8.0
int tr_csr_path_choose(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, tilerap_engine engine)
{
  const int knob = tr_knob_int(TR_KNOB_PATH); /* 0 auto, 1 tiles, 2 csr */
  if (knob) return knob == 2;
  if (!A->nnz || !B->nnz) return 0;
  if (engine == TILERAP_ENGINE_CPU && tr_tile_fill(B) < TR_CPU_TILES_MIN_B_FILL) return 1;
  return tr_tile_fill(A) * tr_tile_fill(B) / 16.0 < tr_knob(TR_KNOB_CSR_MACS_PER_PAIR);
}

/* TILERAP_TC_AUTO: the tensor-core threshold of a product of A and B.  On
 * the H100, pairs of 256-511 multiply-adds ran faster on tensor cores in
 * products whose pairs are dense on average (classical coarse levels, a
 * pair of fill(A) * fill(B) / 16 = 260 and more: up to 2.6x faster than
 * with 512), and slower in products of sparser pairs (elasticity's and a
 * 125-point stencil's fine levels, 60-100: 25 % slower than without tensor
 * cores), where the hit kernel's shared accumulator takes them as well;
 * 512 was never slower than no tensor cores (BENCHMARKS.md section 5). */
#define TR_TC_DENSE_PAIR 150.0
int tr_tc_threshold_resolve(int tc_threshold, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B)
{
  if (tc_threshold != TILERAP_TC_AUTO) return tc_threshold;
  return tr_tile_fill(A) * tr_tile_fill(B) / 16.0 >= TR_TC_DENSE_PAIR ? 256 : 512;
}

static void tr_free_engine(tilerap_engine e, void *p)
{
  if (!p) return;
#ifdef TILERAP_HAVE_CUDA
  if (e == TILERAP_ENGINE_CUDA) { tr_cuda_free(p); return; }
#endif
  (void)e;
  free(p);
}

static void tr_view_free(tilerap_engine e, tr_csr_view_arrays *v)
{
  tr_free_engine(e, v->rp); tr_free_engine(e, v->col); tr_free_engine(e, v->vidx);
  memset(v, 0, sizeof *v);
}

static int tr_view_make(tr_csr_path *X, const tilerap_tile_matrix *T, int transpose, tr_csr_view_arrays *v)
{
#ifdef TILERAP_HAVE_CUDA
  if (X->engine == TILERAP_ENGINE_CUDA) return tr_cuda_csr_view(T, transpose, X->stream, &v->rp, &v->col, &v->vidx);
#endif
  return tr_cpu_csr_view(T, transpose, &v->rp, &v->col, &v->vidx);
}

static void tr_product_free(tr_product *p)
{
  tr_cpu_csr_product_destroy(p->cpu);
  p->cpu = NULL;
#ifdef TILERAP_HAVE_CUDA
  tr_cuda_csr_product_destroy(p->cuda);
  p->cuda = NULL;
#endif
}

static int tr_product_make(tr_csr_path *X, int32_t m, int32_t n, const int64_t *arp, const int32_t *acol,
                           int64_t annz, const int64_t *brp, const int32_t *bcol, tr_product *p, int64_t *cnnz,
                           int64_t *macs)
{
#ifdef TILERAP_HAVE_CUDA
  if (X->engine == TILERAP_ENGINE_CUDA)
    return tr_cuda_csr_product_create(m, n, arp, acol, annz, brp, bcol, X->stream, &p->cuda, cnnz, macs);
#endif
  (void)annz;
  return tr_cpu_csr_product_create(m, n, arp, acol, brp, bcol, &p->cpu, cnnz, macs);
}

static const int64_t *tr_product_rowptr(const tr_product *p)
{
#ifdef TILERAP_HAVE_CUDA
  if (p->cuda) return tr_cuda_csr_product_rowptr(p->cuda);
#endif
  return tr_cpu_csr_product_rowptr(p->cpu);
}
static const int32_t *tr_product_colidx(const tr_product *p)
{
#ifdef TILERAP_HAVE_CUDA
  if (p->cuda) return tr_cuda_csr_product_colidx(p->cuda);
#endif
  return tr_cpu_csr_product_colidx(p->cpu);
}
/* sorted: rows in column order (C, which becomes tiles, and a product
 * with a record); AP, which only feeds the next product, keeps the hash's
 * order otherwise */
static int tr_product_fill(tr_product *p, const double *aval, const int64_t *avidx, const double *bval,
                           const int64_t *bvidx, double *cval, int sorted)
{
#ifdef TILERAP_HAVE_CUDA
  if (p->cuda) return tr_cuda_csr_product_fill(p->cuda, aval, avidx, bval, bvidx, cval, sorted);
#endif
  return tr_cpu_csr_product_fill(p->cpu, aval, avidx, bval, bvidx, cval, sorted);
}
static int tr_product_numeric(tr_product *p, const double *aval, const int64_t *avidx, const double *bval,
                              const int64_t *bvidx, double *cval, const int64_t *cvidx)
{
#ifdef TILERAP_HAVE_CUDA
  if (p->cuda) return tr_cuda_csr_product_numeric(p->cuda, aval, avidx, bval, bvidx, cval, cvidx);
#endif
  return tr_cpu_csr_product_numeric(p->cpu, aval, avidx, bval, bvidx, cval, cvidx);
}

static int tr_alloc_engine(tr_csr_path *X, size_t bytes, void **p)
{
#ifdef TILERAP_HAVE_CUDA
  if (X->engine == TILERAP_ENGINE_CUDA) return tr_cuda_malloc(bytes, p);
#endif
  *p = tilerap_host_alloc(bytes ? bytes : 1, 1);
  return *p ? TILERAP_SUCCESS : TILERAP_ERR_NOMEM;
}

/* C (m x n) as a tile matrix from the last product's sorted CSR and its
 * values cval (NULL: zeros), and C's position map */
static int tr_make_c(tr_csr_path *X, int32_t m, int32_t n, const double *cval, tilerap_tile_matrix **C)
{
  const int64_t *rp = tr_product_rowptr(&X->c);
  const int32_t *col = tr_product_colidx(&X->c);
  int err;
#ifdef TILERAP_HAVE_CUDA
  if (X->engine == TILERAP_ENGINE_CUDA) {
    if ((err = tr_cuda_tile_from_own_csr(m, n, rp, col, cval, X->stream, C))) return err;
    return tr_cuda_csr_positions(*C, rp, col, X->stream, &X->cpos);
  }
#endif
  if ((err = tilerap_tile_from_csr(m, n, rp, col, cval, C))) return err;
  int64_t *vrp = NULL;
  int32_t *vcol = NULL;
  if ((err = tr_cpu_csr_view(*C, 0, &vrp, &vcol, &X->cpos))) return err;
  free(vrp); free(vcol); /* the view of C is C's sorted CSR: its positions are the map */
  return TILERAP_SUCCESS;
}

void tr_csr_path_destroy(tr_csr_path **px)
{
  if (!px || !*px) return;
  tr_csr_path *X = *px;
  tr_product_free(&X->ab); tr_product_free(&X->c);
  tr_view_free(X->engine, &X->va); tr_view_free(X->engine, &X->vb); tr_view_free(X->engine, &X->vt);
  tr_free_engine(X->engine, X->apval);
  tr_free_engine(X->engine, X->bval);
  tr_free_engine(X->engine, X->cpos);
  free(X);
  *px = NULL;
}

static void tr_info(const tr_csr_path *X, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                    const tilerap_tile_matrix *C, int64_t macs, tilerap_spgemm_info *info)
{
  memset(info, 0, sizeof *info);
  info->engine = X->engine;
  info->path = TILERAP_PATH_CSR;
  info->a_fill = tr_tile_fill(A);
  info->b_fill = B ? tr_tile_fill(B) : 0.0; /* P^T (AP): AP has no tiles */
  if (C) { info->c_tiles = info->c_tiles_step1 = C->num_tiles; info->c_nnz = C->nnz; }
  info->flops = 2 * macs;
}

static tr_csr_path *tr_path_new(tilerap_engine engine, void *stream)
{
  tr_csr_path *X = tilerap_host_calloc(1, sizeof *X);
  if (X) { X->engine = engine; X->stream = stream; }
  return X;
}

/* the last product (X->c, cnnz entries, m x n) filled, sorted, and made C's
 * tiles; with values, C's values too (else zeros until the first numeric
 * run) */
static int tr_finish_c(tr_csr_path *X, const double *aval, const int64_t *avidx, const double *bval,
                       const int64_t *bvidx, int32_t m, int32_t n, int64_t cnnz, int values, tilerap_tile_matrix **C)
{
  double *cval = NULL;
  int err = values ? tr_alloc_engine(X, (size_t)cnnz * sizeof(double), (void **)&cval) : TILERAP_SUCCESS;
  if (!err) err = tr_product_fill(&X->c, aval, avidx, bval, bvidx, cval, 1);
  if (!err) err = tr_make_c(X, m, n, cval, C);
  tr_free_engine(X->engine, cval);
  return err;
}

/* Each entry of B is read once per A entry that reaches its row: through
 * the view that is a gather from the tile order for every read.  Where B's
 * entries are read at least twice on average, numeric runs gather B's
 * values into the view's order once (a buffer made here) and the product
 * reads each B row contiguously. */
static int tr_keep_b_values(tr_csr_path *X, const tilerap_tile_matrix *B, int64_t macs)
{
  if (!B->nnz || macs < 2 * B->nnz) return TILERAP_SUCCESS;
  return tr_alloc_engine(X, (size_t)B->nnz * sizeof(double), (void **)&X->bval);
}

/* B's values for a numeric run: *bv, *bvidx as the product reads them */
static int tr_b_values(tr_csr_path *X, const tilerap_tile_matrix *B, const double **bv, const int64_t **bvidx)
{
  *bv = B->val;
  *bvidx = X->vb.vidx;
  if (!X->bval) return TILERAP_SUCCESS;
#ifdef TILERAP_HAVE_CUDA
  if (X->engine == TILERAP_ENGINE_CUDA) {
    int err = tr_cuda_gather_values(B->val, X->vb.vidx, B->nnz, X->bval, X->stream);
    if (err) return err;
  } else
#endif
  {
    const double *src = B->val;
    const int64_t *perm = X->vb.vidx;
    double *dst = X->bval;
    const int64_t n = B->nnz; /* the plan's B: its structure was checked */
#pragma omp parallel for schedule(static)
    for (int64_t q = 0; q < n; q++) dst[q] = src[perm[q]];
  }
  *bv = X->bval;
  *bvidx = NULL;
  return TILERAP_SUCCESS;
}

/* CUDA re-runs from a record of each C entry's products (a gather per
 * entry: csr_cuda_product.cu) where that pays (tr_csr_record_pays: few
 * products per entry, or narrow rows, where the hash runs' tables and
 * atomics cost more than the products); the record's memory (8 bytes per
 * multiply-add) stayed below cuSPARSE's own on every product measured
 * (BENCHMARKS.md section 9).  *kept: 1 when
 * kept, and then the product's rows must be filled in column
 * order; without device memory for it, the table runs.  Only plans run
 * again keep one (not the one-shot products') */
static int tr_keep_record(tr_plan_runs runs, tr_product *p, int64_t macs, int64_t cnnz, int64_t rows, int64_t annz,
                          int64_t bnnz, int *kept)
{
  int k = 0, err = TILERAP_SUCCESS;
#ifdef TILERAP_HAVE_CUDA
  if (runs == TR_RUNS_REPEATED && p->cuda && tr_csr_record_pays(macs, cnnz, rows)) {
    err = tr_cuda_csr_product_keep_record(p->cuda, annz, bnnz, &k);
    if (err == TILERAP_ERR_DEVICE_NOMEM) err = TILERAP_SUCCESS;
  }
#else
  (void)runs; (void)p; (void)macs; (void)cnnz; (void)rows; (void)annz; (void)bnnz;
#endif
  *kept = k;
  return err;
}

/* A*B (at = 0) or A^T*B (at = 1) on the engine's memory */
int tr_csr_path_create(const tilerap_tile_matrix *A, int at, const tilerap_tile_matrix *B, tilerap_engine engine,
                       void *stream, int values, tr_plan_runs runs, tr_csr_path **out, tilerap_tile_matrix **C,
                       tilerap_spgemm_info *info)
{
  *out = NULL; *C = NULL;
  tr_csr_path *X = tr_path_new(engine, stream);
  if (!X) return TILERAP_ERR_NOMEM;
  const int32_t m = at ? A->n : A->m;
  int64_t cnnz = 0;
  int err, c_kept = 0;
  if ((err = tr_view_make(X, A, at, &X->va)) || (err = tr_view_make(X, B, 0, &X->vb)) ||
      (err = tr_product_make(X, m, B->n, X->va.rp, X->va.col, A->nnz, X->vb.rp, X->vb.col, &X->c, &cnnz, &X->macs_c)) ||
      (err = tr_keep_record(runs, &X->c, X->macs_c, cnnz, m, A->nnz, B->nnz, &c_kept)) ||
      (err = tr_finish_c(X, A->val, X->va.vidx, B->val, X->vb.vidx, m, B->n, cnnz, values, C)) ||
      (err = tr_keep_b_values(X, B, X->macs_c))) {
    tilerap_tile_destroy(C);
    tr_csr_path_destroy(&X);
    return err;
  }
  if (info) {
    tr_info(X, A, B, *C, X->macs_c, info);
    info->recorded = c_kept ? X->macs_c : 0;
  }
  *out = X;
  return TILERAP_SUCCESS;
}

int tr_csr_path_ptap_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, tilerap_engine engine,
                            void *stream, int values, tr_plan_runs runs, tr_csr_path **out, tilerap_tile_matrix **C,
                            tilerap_spgemm_info *ap_info, tilerap_spgemm_info *c_info)
{
  *out = NULL; *C = NULL;
  tr_csr_path *X = tr_path_new(engine, stream);
  if (!X) return TILERAP_ERR_NOMEM;
  X->galerkin = 1;
  int64_t apnnz = 0, cnnz = 0;
  int err, ap_sorted = 0, c_kept = 0;
  if ((err = tr_view_make(X, A, 0, &X->va)) || (err = tr_view_make(X, P, 0, &X->vb)) ||
      (err = tr_view_make(X, P, 1, &X->vt)) ||
      (err = tr_product_make(X, A->m, P->n, X->va.rp, X->va.col, A->nnz, X->vb.rp, X->vb.col, &X->ab, &apnnz,
                             &X->macs_ab)) ||
      (err = tr_keep_record(runs, &X->ab, X->macs_ab, apnnz, A->m, A->nnz, P->nnz, &ap_sorted)) ||
      (err = tr_alloc_engine(X, (size_t)apnnz * sizeof(double), (void **)&X->apval)) ||
      (err = tr_product_fill(&X->ab, A->val, X->va.vidx, P->val, X->vb.vidx, X->apval, ap_sorted)) ||
      (err = tr_product_make(X, P->n, P->n, X->vt.rp, X->vt.col, P->nnz, tr_product_rowptr(&X->ab),
                             tr_product_colidx(&X->ab), &X->c, &cnnz, &X->macs_c)) ||
      (err = tr_keep_record(runs, &X->c, X->macs_c, cnnz, P->n, P->nnz, apnnz, &c_kept)) ||
      (err = tr_finish_c(X, P->val, X->vt.vidx, X->apval, NULL, P->n, P->n, cnnz, values, C)) ||
      (err = tr_keep_b_values(X, P, X->macs_ab))) {
    tilerap_tile_destroy(C);
    tr_csr_path_destroy(&X);
    return err;
  }
  if (ap_info) {
    tr_info(X, A, P, NULL, X->macs_ab, ap_info);
    ap_info->c_nnz = apnnz;
    ap_info->recorded = ap_sorted ? X->macs_ab : 0;
  }
  if (c_info) {
    tr_info(X, P, NULL, *C, X->macs_c, c_info);
    c_info->recorded = c_kept ? X->macs_c : 0;
  }
  *out = X;
  return TILERAP_SUCCESS;
}

/* numeric run on the operands (the plan's structures, checked by the
 * caller): C = op(A)*B, or P^T A P with B = P */
int tr_csr_path_numeric(tr_csr_path *X, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                        tilerap_tile_matrix *C)
{
  const double *bv;
  const int64_t *bvidx;
  int err = tr_b_values(X, B, &bv, &bvidx);
  if (err) return err;
  if (!X->galerkin) return tr_product_numeric(&X->c, A->val, X->va.vidx, bv, bvidx, C->val, X->cpos);
  if ((err = tr_product_numeric(&X->ab, A->val, X->va.vidx, bv, bvidx, X->apval, NULL))) return err;
  return tr_product_numeric(&X->c, B->val, X->vt.vidx, X->apval, NULL, C->val, X->cpos);
}
