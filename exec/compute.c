/* exec/compute.c — what `--compute gemm` runs per block: GEMMs whose FLOPs are the ones the
 * simulator charges for that block (sim/step.c, the blocks' fwd_flops), so measured and
 * predicted compute time count the same work:
 *   a transformer layer   2 x tokens x (its parameters) + 4 x micro_batch x seq^2 x heads/TP x head_dim
 *   after the layers      2 x tokens x hidden x vocab/TP (the logits)
 *   before the layers     0 (the embedding is a lookup)
 * forward once; backward twice, three times for a layer with activation checkpointing. */
#include "exec/exec.h"

int ex_model_blocks(const struct plan_model *m, int *first)
{
    int n = 0;
    for (int t = 0; t < m->n_tensors; t++)
        if (t == 0 || m->tensors[t].layer != m->tensors[t - 1].layer)
            first[n++] = t;
    first[n] = m->n_tensors;
    return n;
}

/* A layer block holds transformer-block tensors; the others are before or after the layers. */
static bool is_layer(const struct plan_model *m, const int *first, int b)
{
    return m->tensors[first[b]].layer >= 0;
}

static bool after_layers(const struct plan_model *m, const int *first, int b)
{
    for (int c = 0; c < b; c++)
        if (is_layer(m, first, c))
            return true;
    return false;
}

static int put(struct ex_gemm *out, int n, int max, int64_t gm, int64_t gn, int64_t gk, int64_t count)
{
    if (n < max)
        out[n] = (struct ex_gemm){.m = gm, .n = gn, .k = gk, .count = count};
    return n + 1;
}

int ex_block_gemms(const struct plan_model *m, const int *first, int nblocks, int b, int64_t micro_batch,
                   int64_t seq, struct ex_gemm *out, int max)
{
    const struct plan_arch *a = &m->arch;
    const int64_t tp = a->tp > 0 ? a->tp : 1;
    const int64_t tokens = micro_batch * seq;
    int n = 0;
    bool logits = !is_layer(m, first, b) && after_layers(m, first, b);
    if (is_layer(m, first, b)) {
        /* A GEMM per weight on the block's tokens: 2-D weights as they are (tokens x out x in),
         * anything else (biases, norms) as a rank-1 GEMM, 2 FLOPs per token and element, the
         * simulator's charge for every parameter. */
        for (int t = first[b]; t < first[b + 1]; t++) {
            const struct plan_tensor *x = &m->tensors[t];
            if (x->ndim == 2)
                n = put(out, n, max, tokens, x->shape[0], x->shape[1], 1);
            else
                n = put(out, n, max, tokens, x->numel, 1, 1);
        }
        /* Attention scores and values per sequence and local head: Q K^T (seq x seq over
         * head_dim), then scores V (seq x head_dim over seq). */
        int64_t heads = a->heads > 0 ? a->heads : 1;
        int64_t hd = a->head_dim > 0 ? a->head_dim : a->hidden / heads;
        int64_t local = heads / tp > 0 ? heads / tp : 1;
        if (hd > 0) {
            n = put(out, n, max, seq, seq, hd, micro_batch * local);
            n = put(out, n, max, seq, hd, seq, micro_batch * local);
        }
        /* No block after the layers: the logits go with the last layer (the totals still agree). */
        logits = b == nblocks - 1;
    }
    if (logits) {
        int64_t vocab = a->vocab_padded > 0 ? a->vocab_padded : a->vocab;
        if (vocab > 0 && a->hidden > 0)
            n = put(out, n, max, tokens, vocab / tp, a->hidden, 1);
    }
    return n;
}

int ex_block_backward_passes(const struct plan_model *m, const int *first, int b, bool checkpoint_activations)
{
    return checkpoint_activations && is_layer(m, first, b) ? 3 : 2;
}

int64_t ex_gemm_flops(const struct ex_gemm *g, int n)
{
    int64_t f = 0;
    for (int i = 0; i < n; i++)
        f += 2 * g[i].m * g[i].n * g[i].k * g[i].count;
    return f;
}
