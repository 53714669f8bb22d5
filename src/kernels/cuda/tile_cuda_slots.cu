/* CUDA engine: where a caller's CSR entries sit in a tile matrix's value
 * array, and value moves by such maps.  They let a caller keep its own
 * layout (hypre's diag-first rows) and refresh a tile matrix's values, or
 * its own from a product's, with one pass each: the BoomerAMG re-setup of
 * the hypre hook. */
#include "spgemm_cuda.cuh"

/* slot[k] for entry k of row i: tile of the tile row by binary search over
 * tile columns, then the entries before it in the tile row's mask. */
static __global__ void k_tile_slots(int32_t m, const int32_t *__restrict__ rowptr, const int32_t *__restrict__ colidx,
                                    const int64_t *__restrict__ tile_ptr, const int32_t *__restrict__ tile_col,
                                    const int64_t *__restrict__ tile_off, const uint8_t *__restrict__ row_ptr,
                                    const uint16_t *__restrict__ row_mask, int32_t n, int64_t *__restrict__ slot)
{
  const int64_t nnz = rowptr[m];
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x) {
    /* the row of entry k: last i with rowptr[i] <= k (empty rows skipped) */
    int32_t lo = 0, hi = m - 1;
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo + 1) / 2;
      if (rowptr[mid] <= k) lo = mid;
      else hi = mid - 1;
    }
    const int32_t i = lo, c = colidx[k];
    int64_t s = -1;
    if (c >= 0 && c < n) {
      int64_t a = tile_ptr[i >> 4], b = tile_ptr[(i >> 4) + 1] - 1;
      const int32_t tc = c >> 4;
      while (a <= b) {
        const int64_t mid = a + (b - a) / 2;
        const int32_t t = tile_col[mid];
        if (t < tc) a = mid + 1;
        else if (t > tc) b = mid - 1;
        else {
          const int64_t r = 16 * mid + (i & 15);
          const unsigned mask = row_mask[r], bit = 1u << (c & 15);
          if (mask & bit) s = tile_off[mid] + row_ptr[r] + __popc(mask & (bit - 1));
          break;
        }
      }
    }
    slot[k] = s;
  }
}

extern "C" int tr_cuda_tile_slots(const tilerap_tile_matrix *T, int32_t m, const int32_t *rowptr,
                                  const int32_t *colidx, int64_t nnz, int64_t *slot)
{
  if (nnz <= 0) return TILERAP_SUCCESS;
  int64_t blocks = (nnz + 255) / 256;
  if (blocks > 65536) blocks = 65536;
  k_tile_slots<<<(unsigned)blocks, 256>>>(m, rowptr, colidx, T->tile_ptr, T->tile_col, T->tile_off, T->row_ptr,
                                          T->row_mask, T->n, slot);
  return tr_cuda_check_launch("tile slots");
}

/* dst[map[q]] = src[q] (ADD: += atomically, targets may repeat) where map[q] >= 0 */
template <bool ADD>
static __global__ void k_scatter(const double *__restrict__ src, const int64_t *__restrict__ map, int64_t n,
                                 double *__restrict__ dst)
{
  for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < n; q += (int64_t)gridDim.x * blockDim.x) {
    const int64_t m = map[q];
    if (m < 0) continue;
    if (ADD) atomicAdd(dst + m, src[q]);
    else dst[m] = src[q];
  }
}

static int scatter(const double *src, const int64_t *map, int64_t n, double *dst, bool add)
{
  if (n <= 0) return TILERAP_SUCCESS;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65536) blocks = 65536;
  if (add) k_scatter<true><<<(unsigned)blocks, 256>>>(src, map, n, dst);
  else k_scatter<false><<<(unsigned)blocks, 256>>>(src, map, n, dst);
  return tr_cuda_check_launch(add ? "value scatter-add" : "value scatter");
}

extern "C" int tr_cuda_scatter_values(const double *src, const int64_t *map, int64_t n, double *dst)
{
  return scatter(src, map, n, dst, false);
}

extern "C" int tr_cuda_scatter_add_values(const double *src, const int64_t *map, int64_t n, double *dst)
{
  return scatter(src, map, n, dst, true);
}
