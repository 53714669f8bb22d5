/* Structure identity of tile matrices.  Every matrix tilerap builds gets a
 * fresh structure_id (copies keep their source's); a plan records its
 * operands' ids and structure hashes, and a numeric call compares ids
 * first, so a re-run with the plan's own matrices costs one comparison per
 * operand.  A matrix with another id (a new conversion of the same
 * pattern, another object, a hand-built one) is hashed and accepted only
 * when its hash is the plan's: then its id is remembered, so the next run
 * with it is again one comparison. */
#include "tile_internal.h"
#include "engine_cuda.h"
#include "tile_structure.h"

static uint64_t tr_last_structure_id;

uint64_t tr_structure_id_new(void)
{
  return __atomic_add_fetch(&tr_last_structure_id, 1, __ATOMIC_RELAXED);
}

void tilerap_tile_structure_changed(tilerap_tile_matrix *T)
{
  if (T) T->structure_id = tr_structure_id_new();
}

/* the sums over tile-row pointers and tiles, without the sizes term */
static void tr_structure_sums_host(const tilerap_tile_matrix *T, uint64_t h[2])
{
  uint64_t s0 = 0, s1 = 0;
  const int64_t tr = T->tile_rows, nt = T->num_tiles;
#pragma omp parallel for schedule(static) reduction(+ : s0, s1) if (tr > 64 * TR_OMP_MIN_ITEMS)
  for (int64_t I = 0; I <= tr; I++) {
    s0 += tr_sh_tile_ptr(TR_SH_SEED0, I, T->tile_ptr[I]);
    s1 += tr_sh_tile_ptr(TR_SH_SEED1, I, T->tile_ptr[I]);
  }
#pragma omp parallel for schedule(static) reduction(+ : s0, s1) if (nt > 16 * TR_OMP_MIN_ITEMS)
  for (int64_t t = 0; t < nt; t++) {
    uint64_t w[4];
    memcpy(w, T->row_mask + 16 * t, sizeof w);
    s0 += tr_sh_tile(TR_SH_SEED0, t, T->tile_col[t], T->tile_off[t + 1], w);
    s1 += tr_sh_tile(TR_SH_SEED1, t, T->tile_col[t], T->tile_off[t + 1], w);
  }
  h[0] = s0;
  h[1] = s1;
}

static void tr_add_sizes(const tr_structure *s, uint64_t h[2])
{
  h[0] += tr_sh_sizes(TR_SH_SEED0, s->m, s->n, s->num_tiles, s->nnz);
  h[1] += tr_sh_sizes(TR_SH_SEED1, s->m, s->n, s->num_tiles, s->nnz);
}

static int tr_arrays_present(const tilerap_tile_matrix *T)
{
  if (!T->tile_ptr || (T->num_tiles && (!T->tile_col || !T->tile_off || !T->row_mask)))
    return tilerap_set_error(TILERAP_ERR_NULL, "tile matrix arrays missing");
  return TILERAP_SUCCESS;
}

static void tr_structure_sizes(const tilerap_tile_matrix *T, tr_structure *s)
{
  memset(s, 0, sizeof *s);
  s->m = T->m; s->n = T->n;
  s->num_tiles = T->num_tiles; s->nnz = T->nnz;
  s->memtype = T->memtype;
  s->id = T->structure_id;
}

int tr_structure_record(int n, const tilerap_tile_matrix *const *T, tr_structure *const *s)
{
  const tilerap_tile_matrix *dev[3];
  tr_structure *ds[3];
  int nd = 0, err;
  for (int i = 0; i < n; i++) {
    tr_structure_sizes(T[i], s[i]);
    if ((err = tr_arrays_present(T[i]))) return err;
    if (T[i]->memtype == TILERAP_MEM_HOST) {
      tr_structure_sums_host(T[i], s[i]->hash);
      tr_add_sizes(s[i], s[i]->hash);
      s[i]->hashed = 1;
    } else if (nd < 3) {
      dev[nd] = T[i];
      ds[nd++] = s[i];
    }
  }
  if (!nd) return TILERAP_SUCCESS;
#ifdef TILERAP_HAVE_CUDA
  void *words = NULL;
  int nwords = 0;
  if ((err = tr_cuda_structure_hash_start(nd, dev, &words, &nwords))) return err;
  for (int i = 0; i < nd; i++) { /* read back only when a check needs them */
    ds[i]->dev_hash = (char *)words + (size_t)i * (size_t)nwords * sizeof(uint64_t);
    ds[i]->dev_words = nwords;
    ds[i]->dev_owner = i == 0;
  }
  return TILERAP_SUCCESS;
#else
  (void)dev; (void)ds;
  return tilerap_set_error(TILERAP_ERR_ENGINE, "device matrices need a CUDA build of tilerap");
#endif
}

/* the recorded hash of a device operand, read back the first time it is needed */
static int tr_structure_hashed(tr_structure *s)
{
  if (s->hashed) return TILERAP_SUCCESS;
#ifdef TILERAP_HAVE_CUDA
  const int err = tr_cuda_structure_hash_read(s->dev_hash, s->dev_words, s->hash);
  if (err) return err;
  tr_add_sizes(s, s->hash);
  s->hashed = 1;
  return TILERAP_SUCCESS;
#else
  return tilerap_set_error(TILERAP_ERR_ENGINE, "device matrices need a CUDA build of tilerap");
#endif
}

void tr_structure_release(tr_structure *s)
{
#ifdef TILERAP_HAVE_CUDA
  if (s->dev_hash && s->dev_owner) tr_cuda_free(s->dev_hash); /* stream-ordered: no wait */
#endif
  s->dev_hash = NULL;
}

int tr_structure_check(tr_structure *s, const tilerap_tile_matrix *T, const char *who, const char *name)
{
  if (T->m != s->m || T->n != s->n || T->num_tiles != s->num_tiles || T->nnz != s->nnz)
    return tilerap_set_error(TILERAP_ERR_STRUCTURE,
                             "%s: %s is %d x %d with %lld tiles and %lld entries; the plan's is %d x %d with %lld and %lld",
                             who, name, T->m, T->n, (long long)T->num_tiles, (long long)T->nnz, s->m, s->n,
                             (long long)s->num_tiles, (long long)s->nnz);
  if (T->memtype != s->memtype)
    return tilerap_set_error(TILERAP_ERR_MEMTYPE, "%s: %s lives in %s memory, the plan's in %s memory", who, name,
                             T->memtype == TILERAP_MEM_HOST ? "host" : "device", s->memtype == TILERAP_MEM_HOST ? "host" : "device");
  if (T->structure_id && T->structure_id == s->id) return TILERAP_SUCCESS;
  int err = tr_structure_hashed(s);
  if (err) return err;
  tr_structure t, *tp = &t;
  err = tr_structure_record(1, &T, &tp);
  if (!err) err = tr_structure_hashed(&t);
  tr_structure_release(&t);
  if (err) return err;
  if (t.hash[0] != s->hash[0] || t.hash[1] != s->hash[1])
    return tilerap_set_error(TILERAP_ERR_STRUCTURE,
                             "%s: %s has the plan's sizes but another nonzero pattern (make a new plan for it)", who, name);
  s->id = T->structure_id;
  return TILERAP_SUCCESS;
}
