/* sim/gemm.h — GEMM time per shape (sim/README.md "GEMM rate per shape"): cuBLAS-style tiling on
 * the GPU's SMs, split-K when the output tiles leave SMs idle, the output written to HBM, and a
 * fixed time per kernel; the large-GEMM efficiency and the fixed time come from a published table
 * of measured matmul rates. Used only when the profile gives gpu.gemm_efficiency. */
#ifndef RL_SIM_GEMM_H
#define RL_SIM_GEMM_H

#include <stdbool.h>

#include "sim/hw.h"

/* The CTA tile of the model (M x N outputs per tile). */
#define SIM_GEMM_TILE_M 128
#define SIM_GEMM_TILE_N 128
/* Split-K gives each split at least this many of K. */
#define SIM_GEMM_SPLIT_K_MIN 1024

/* True when the profile asks for the per-shape model (gpu.gemm_efficiency > 0, a real GPU). */
bool sim_gemm_model_on(const struct hw_profile *hw);
/* Seconds of `batch` independent m x n x k GEMMs (16-bit operands, one kernel): waves of 128 x 128
 * tiles over gpu.sms SMs (each tile 2 x 128 x 128 x k / s FLOPs at tensor_tflops x gemm_efficiency
 * / sms, s the split-K factor min(sms / tiles, k / 1024), at least 1), plus the output's (2 s - 1)
 * x 2 bytes per element at HBM when c_to_hbm (split-K partials written and read back), plus
 * gpu.gemm_fixed_us. */
double sim_gemm_time_s(const struct hw_profile *hw, double batch, double m, double n, double k, bool c_to_hbm);
/* Seconds of a memory-bound kernel pass over `bytes` of HBM traffic (hbm_gbps x hbm_efficiency). */
double sim_gemm_hbm_time_s(const struct hw_profile *hw, double bytes);

#endif
