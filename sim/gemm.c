/* sim/gemm.c — see sim/gemm.h. */
#include <math.h>

#include "sim/gemm.h"

bool sim_gemm_model_on(const struct hw_profile *hw)
{
    return hw->gemm_efficiency > 0 && hw->gpu_sms > 0 && !hw->gpu_emulated;
}

double sim_layer_elementwise_bytes(const struct plan_arch *a, double s, double b, bool materialized)
{
    const double tp = a->tp > 0 ? a->tp : 1, heads = (double)(a->heads > 0 ? a->heads : 1);
    const double kv = (double)(a->kv_heads > 0 ? a->kv_heads : a->heads > 0 ? a->heads : 1);
    const double hl = (double)a->hidden / tp, fl = (double)(a->ffn_hidden > 0 ? a->ffn_hidden : 4 * a->hidden) / tp;
    const double al = heads / tp > 1 ? heads / tp : 1;
    const bool megatron = a->kind == PLAN_ARCH_MEGATRON_GPT;
    const bool fused_norm = a->kind != PLAN_ARCH_HF_LLAMA && a->kind != PLAN_ARCH_HF_T5;
    const bool attn_drop = !a->dropout_known || a->attention_dropout > 0, hid_drop = !a->dropout_known || a->hidden_dropout > 0;
    const bool gqa = kv < heads;
    double tok = 2.0 * (fused_norm ? 4.0 : 36.0) * hl;                 /* two norms */
    tok += 2.0 * (6.0 + (hid_drop ? 1.0 : 0.0)) * hl;                   /* two residual adds */
    tok += (a->swiglu ? 10.0 : 4.0) * fl;                               /* the MLP activation */
    if (gqa)
        tok += 2.0 * (2.0 + 2.0 * kv / heads) * hl;                     /* k and v repeated to every head */
    if (a->rotary)
        tok += 20.0 * (megatron || !gqa ? 2.0 * hl : hl * (1.0 + kv / heads));
    if (megatron)
        tok += 4.0 * hl + (materialized ? 4.0 : 16.0) * hl;             /* q's split; context permute or rearranges */
    else
        tok += 4.0 * hl;                                                /* the context transpose */
    double bytes = tok * s * b;
    if (materialized)
        bytes += al * s * s * b * ((megatron ? 4.0 : 16.0) + (attn_drop ? 5.0 : 0.0));
    return bytes;
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
