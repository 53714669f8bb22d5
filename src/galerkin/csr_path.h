/* The CSR path of the plans (csr_path.c): row-wise products over CSR
 * views of tile matrices, for operands whose tiles are nearly empty. */
#ifndef TILERAP_CSR_PATH_H
#define TILERAP_CSR_PATH_H
#include "tile_internal.h"

typedef struct tr_csr_path tr_csr_path;

/* mean entries per stored tile (0 without tiles) */
double tr_tile_fill(const tilerap_tile_matrix *T);
/* 1: the product A*B (or P^T A P with B = P) on the engine takes the CSR
 * path (TILERAP_PATH, else the fills against TILERAP_CSR_MACS_PER_PAIR;
 * the CPU engine also where B's tiles are sparse) */
int tr_csr_path_choose(const tilerap_tile_matrix *A, const tilerap_tile_matrix *B, tilerap_engine engine);
/* the tensor-core threshold a tile product of A and B runs with: the
 * options' own, or for TILERAP_TC_AUTO the plan's choice by the operands'
 * tile fill */
int tr_tc_threshold_resolve(int tc_threshold, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B);
/* C = A*B (at = 0) or A^T*B (at = 1); operands in the engine's memory;
 * values: C's values now, else zeros until the first numeric run */
int tr_csr_path_create(const tilerap_tile_matrix *A, int at, const tilerap_tile_matrix *B, tilerap_engine engine,
                       void *stream, int values, tr_plan_runs runs, tr_csr_path **X, tilerap_tile_matrix **C,
                       tilerap_spgemm_info *info);
/* C = P^T A P */
int tr_csr_path_ptap_create(const tilerap_tile_matrix *A, const tilerap_tile_matrix *P, tilerap_engine engine,
                            void *stream, int values, tr_plan_runs runs, tr_csr_path **X, tilerap_tile_matrix **C,
                            tilerap_spgemm_info *ap_info, tilerap_spgemm_info *c_info);
/* numeric run (structures checked by the caller; B is P for P^T A P); no allocation */
int tr_csr_path_numeric(tr_csr_path *X, const tilerap_tile_matrix *A, const tilerap_tile_matrix *B,
                        tilerap_tile_matrix *C);
void tr_csr_path_destroy(tr_csr_path **X);
#endif
