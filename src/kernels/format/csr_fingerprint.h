/* Per-entry hash of the CSR content fingerprint, shared by the host
 * (csr_fingerprint.c) and device (csr_cuda_fingerprint.cu) versions so
 * that both give the same number.  A fingerprint is the wrapping sum of
 * these over the entries (order-free), plus a hash of the sizes. */
#ifndef TILERAP_CSR_FINGERPRINT_H
#define TILERAP_CSR_FINGERPRINT_H
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define TR_FP_HD __host__ __device__ __forceinline__
#else
#define TR_FP_HD static inline
#endif

/* splitmix64's finaliser: every input bit reaches every output bit */
TR_FP_HD uint64_t tr_fp_mix(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/* slot: 0 (order-free), or the entry's position in its row + 1 */
TR_FP_HD uint64_t tr_fp_entry(int32_t row, int32_t col, uint64_t value_bits, int64_t slot)
{
  const uint64_t at = slot ? tr_fp_mix((uint64_t)slot * 0x9e3779b97f4a7c15ull) : 0;
  return tr_fp_mix(tr_fp_mix(((uint64_t)(uint32_t)row << 32) | (uint32_t)col) ^ value_bits ^ at);
}

TR_FP_HD uint64_t tr_fp_sizes(int32_t m, int64_t nnz)
{
  return tr_fp_mix(0x6a09e667f3bcc909ull ^ ((uint64_t)(uint32_t)m << 32) ^ tr_fp_mix((uint64_t)nnz));
}
#endif
