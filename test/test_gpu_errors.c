/* Error paths of the CUDA engine: device matrices where host ones are
 * needed, mixed memories, structure mismatches, a device allocation that
 * cannot succeed (TILERAP_ERR_DEVICE_NOMEM naming the size, nothing left
 * allocated), and that the engine keeps working afterwards. */
#include "test_gpu_common.h"

int main(void)
{
  gpu_skip_without_device();
  uint64_t seed = 11;
  tilerap_csr *a = ref_random(40, 40, 0.1, 0, &seed);
  tilerap_tile_matrix *hA = ref_csr_to_tile(a), *dA = gpu_to_device(hA), *C = NULL, *T = NULL;
  tilerap_options oc = gpu_opts(TILERAP_ENGINE_CPU, 192), og = gpu_opts(TILERAP_ENGINE_CUDA, 192);
  tilerap_spgemm_plan plan = NULL;
  tilerap_ptap_plan g = NULL;

  tap_ok(tilerap_engine_resolve(TILERAP_ENGINE_CUDA) == TILERAP_ENGINE_CUDA && tilerap_engine_available(TILERAP_ENGINE_CUDA),
         "CUDA engine available");
  EXPECT(tilerap_spgemm_plan_create(hA, dA, &oc, &plan, &C), TILERAP_ERR_MEMTYPE, "A on the host, B on the device");
  tap_ok(plan == NULL && C == NULL, "no plan or C left behind");
  EXPECT(tilerap_ptap_plan_create(dA, hA, &og, &g, &C), TILERAP_ERR_MEMTYPE, "PtAP with A on the device, P on the host");
  EXPECT(tilerap_tile_check(dA), TILERAP_ERR_MEMTYPE, "consistency check of a device matrix");
  int64_t rp[41];
  EXPECT(tilerap_tile_to_csr(dA, rp, NULL, NULL), TILERAP_ERR_MEMTYPE, "CSR conversion of a device matrix");

  /* device matrices with a CPU-engine request run where they live (CUDA) */
  EXPECT(tilerap_spgemm_plan_create(dA, dA, &oc, &plan, &C), TILERAP_SUCCESS, "device A*A with a CPU-engine request");
  tilerap_spgemm_info info;
  tilerap_spgemm_plan_info(plan, &info);
  tap_ok(info.engine == TILERAP_ENGINE_CUDA && C && C->memtype == TILERAP_MEM_DEVICE, "... runs on the CUDA engine");
  /* numeric with host operands on a device plan, and with a wrong C */
  EXPECT(tilerap_spgemm_numeric(plan, hA, hA, C), TILERAP_ERR_MEMTYPE, "device plan, host operands, device C");
  tilerap_csr *b = ref_random(40, 40, 0.3, 0, &seed);
  tilerap_tile_matrix *hB = ref_csr_to_tile(b), *dB = gpu_to_device(hB);
  EXPECT(tilerap_spgemm_numeric(plan, dA, dB, C), TILERAP_ERR_STRUCTURE, "numeric with another B");
  EXPECT(tilerap_spgemm_numeric(plan, dA, dA, C), TILERAP_SUCCESS, "numeric with the plan's operands");
  tilerap_spgemm_plan_destroy(&plan);
  tilerap_tile_destroy(&C);

  /* a device allocation far beyond the card */
  int err = tilerap_tile_create(INT32_MAX, INT32_MAX, 1000000000LL, 256000000000LL, TILERAP_MEM_DEVICE, &T);
  tap_ok(err == TILERAP_ERR_DEVICE_NOMEM && T == NULL && strstr(tilerap_last_error(), "bytes"),
         "2.3 TB device matrix -> DEVICE_NOMEM, size in message (%d: %s)", err, tilerap_last_error());
  tilerap_tile_destroy(&T);
  /* and the engine still works */
  tilerap_tile_matrix *Cg = NULL, *Cc = NULL;
  err = tilerap_spgemm(hA, hB, &og, &Cg);
  tilerap_spgemm(hA, hB, &oc, &Cc);
  tap_ok(!err && gpu_same_tiles(Cg, Cc) && gpu_relerr(Cg, Cc) <= 1e-14, "CUDA product after the failed allocation");
  tilerap_tile_destroy(&Cg); tilerap_tile_destroy(&Cc);

  tilerap_tile_destroy(&hA); tilerap_tile_destroy(&dA); tilerap_tile_destroy(&hB); tilerap_tile_destroy(&dB);
  tilerap_csr_destroy(&a); tilerap_csr_destroy(&b);
  return tap_done();
}
