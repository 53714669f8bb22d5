/* Matrix Market files for the benchmarks: coordinate real / integer /
 * pattern, general / symmetric / skew-symmetric.  Anything else (array
 * format, complex, hermitian, compressed files, malformed lines) is refused
 * with a message that names the file and line. */
#ifndef TILERAP_BENCH_MTX_H
#define TILERAP_BENCH_MTX_H
#include "tilerap.h"
#include <stddef.h>

/* Reads path into a new CSR (columns sorted, duplicates summed, symmetric
 * halves mirrored, pattern entries 1.0).  Returns 0, or -1 with a message
 * in err[errlen]. */
int bench_mtx_read(const char *path, tilerap_csr **A, char *err, size_t errlen);
/* Writes A as "coordinate real general" (values with 17 digits). */
int bench_mtx_write(const char *path, const tilerap_csr *A, const char *comment, char *err, size_t errlen);
#endif
