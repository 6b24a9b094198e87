/* sim/gemm.h — GEMM time per shape (sim/README.md "GEMM rate per shape"): cuBLAS-style tiling on
 * the GPU's SMs, split-K when the output tiles leave SMs idle, the output written to HBM, and a
 * fixed time per kernel; the large-GEMM efficiency and the fixed time come from a published table
 * of measured matmul rates. Used only when the profile gives gpu.gemm_efficiency. */
#ifndef RL_SIM_GEMM_H
#define RL_SIM_GEMM_H

#include <stdbool.h>

#include "plan/plan.h"
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
/* HBM bytes of one transformer layer's memory-bound kernels in a forward on one TP rank:
 * the kernels the framework's code launches around the GEMMs, each reading its inputs and writing
 * its output once at 16 bits unless said (sim/README.md, "GEMM rate per shape"). Per token, in
 * units of the rank's hidden width h' = h / t: norms 4 each when fused (Megatron on CUDA: apex;
 * transformers' LayerNorm) and 36 each when not (transformers' LlamaRMSNorm and T5LayerNorm: the
 * cast to fp32 6, pow 8, mean 4, the rsqrt product 8, the cast back 6, the weight product 4); two
 * residual adds 6 each, 7 with the hidden dropout's 1-byte mask; the MLP activation 4 f' / h'
 * (GeLU: f' in, f' out) or 10 f' / h' (SwiGLU: silu of one half, its product with the other);
 * rotary embeddings 20 per rotated element of q and k (the cos product 4, rotate_half's negation
 * 2 and cat 4, the sin product 4, the sum 6), k rotated after the GQA repeat in Megatron-DeepSpeed
 * and before it in transformers; the GQA repeat of k and v 2 (2 + 2 kv / heads); Megatron's
 * split of q out of the fused QKV 4 and its context permute 4 (materialized) or rearranges of q, k,
 * v and the context 16 (flash); transformers' context transpose 4. Per score (a' s^2 b) with
 * materialized attention: Megatron's fused masked softmax 4, transformers' mask add, fp32 softmax
 * and cast 16, plus 5 with the attention dropout (in, mask, out). A dropout of probability 0 costs
 * nothing: PyTorch returns its input (aten/src/ATen/native/Dropout.cpp, _dropout_impl). A
 * hand-built arch (dropout_known false) is taken with both dropouts on. */
double sim_layer_elementwise_bytes(const struct plan_arch *a, double s, double b, bool materialized);
/* Seconds of a memory-bound kernel pass over `bytes` of HBM traffic (hbm_gbps x hbm_efficiency). */
double sim_gemm_hbm_time_s(const struct hw_profile *hw, double bytes);

#endif
