/* sim/gemm.c — see sim/gemm.h. */
#include <math.h>

#include "sim/gemm.h"

bool sim_gemm_model_on(const struct hw_profile *hw)
{
    return hw->gemm_efficiency > 0 && hw->gpu_sms > 0 && !hw->gpu_emulated;
}

double sim_gemm_hbm_time_s(const struct hw_profile *hw, double bytes)
{
    return bytes / (hw->hbm_gbps * hw->hbm_efficiency * 1e9);
}

double sim_gemm_time_s(const struct hw_profile *hw, double batch, double m, double n, double k, bool c_to_hbm)
{
    if (batch <= 0 || m <= 0 || n <= 0 || k <= 0)
        return 0;
    double sms = hw->gpu_sms;
    double tiles = batch * ceil(m / SIM_GEMM_TILE_M) * ceil(n / SIM_GEMM_TILE_N);
    double split = floor(sms / tiles);
    double kmax = floor(k / SIM_GEMM_SPLIT_K_MIN);
    if (split > kmax)
        split = kmax;
    if (split < 1)
        split = 1;
    double waves = ceil(tiles * split / sms);
    double per_sm = hw->tensor_tflops * 1e12 * hw->gemm_efficiency / sms;   /* FLOP/s of one SM */
    double t = waves * (2.0 * SIM_GEMM_TILE_M * SIM_GEMM_TILE_N * (k / split)) / per_sm;
    if (c_to_hbm)
        t += sim_gemm_hbm_time_s(hw, batch * m * n * 2.0 * (2.0 * split - 1.0));
    return t + hw->gemm_fixed_us * 1e-6;
}
