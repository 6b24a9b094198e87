/* plan/plan.h — the single truth that sim/, exec/, validation/ and cli/ share.
 *
 * A `plan_model` is the ordered list of parameter tensors of one pipeline stage on one tensor-
 * parallel rank. A `plan_zero` is what a DeepSpeed config says. A `plan_layout` is the parallel
 * layout. plan_build() resolves the three into a `plan`: per-rank ZeRO-3 partitions, param
 * groups, sub-groups, the CPU/GPU placement under a policy, the honored ratio and the memory
 * ledger. A plan is pure data, computed once and shared read-only.
 *
 * DeepSpeed facts modelled here are listed in plan/README.md with the source they come from. */
#ifndef RL_PLAN_PLAN_H
#define RL_PLAN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"

/* ---- dtypes ----------------------------------------------------------------------------------- */
/* Model element types. kernels/adam.h numbers the same types differently (enum kern_dtype, whose
 * 0 is "no copy"); exec/dtype.h maps one to the other. */
enum plan_dtype { PLAN_FP32, PLAN_FP16, PLAN_BF16 };
#define PLAN_DTYPE_COUNT (PLAN_BF16 + 1)
int plan_dtype_bytes(enum plan_dtype t);
const char *plan_dtype_name(enum plan_dtype t);

/* ---- model -------------------------------------------------------------------------------------- */
#define PLAN_NAME_MAX 128
#define PLAN_MAX_RANK_NUMEL (INT64_C(1) << 56)   /* elements per rank whose byte counts cannot overflow */
#define PLAN_MAX_GROUPS 64

/* How tensor parallelism splits a tensor (Megatron); HF models are never split (tp = 1). */
enum plan_tp_split {
    PLAN_TP_REPLICATED,   /* every TP rank holds the whole tensor (norms, row-parallel bias) */
    PLAN_TP_COLUMN,       /* output dim split (QKV, MLP up: weight and bias) */
    PLAN_TP_ROW,          /* input dim split (attention out, MLP down: weight only) */
    PLAN_TP_VOCAB,        /* vocabulary dim split (word embeddings, untied output layer) */
};
const char *plan_tp_split_name(enum plan_tp_split s);

/* Tensor flags used by the param-group rules. */
#define PLAN_TF_BIAS 0x1u        /* name ends in ".bias" */
#define PLAN_TF_LAYERNORM 0x2u   /* parameter of a LayerNorm module */
#define PLAN_TF_RMSNORM 0x4u     /* parameter of an RMSNorm module */
#define PLAN_TF_EMBEDDING 0x8u   /* word/position embedding or tied output */

struct plan_tensor {
    char name[PLAN_NAME_MAX];    /* framework name, e.g. "language_model.encoder.layers.0.mlp..." */
    int ndim;                    /* 1..4 */
    int64_t shape[4];            /* on this TP rank */
    int64_t numel;               /* product of shape */
    enum plan_tp_split tp;       /* how TP splits it */
    unsigned flags;              /* PLAN_TF_* */
    int layer;                   /* transformer block index, -1 outside the blocks */
    int group;                   /* param group index, set by plan_model_group() */
    int pack_key;                /* 0: packed in module order within its group; k > 0: packed k-th
                                    (a probe's names, in the order DeepSpeed packed them) */
};

enum plan_arch_kind {
    PLAN_ARCH_MEGATRON_GPT,
    PLAN_ARCH_HF_GPT2,
    PLAN_ARCH_HF_T5,
    PLAN_ARCH_HF_LLAMA,
    PLAN_ARCH_HF_OPT,
};
const char *plan_arch_name(enum plan_arch_kind k);

/* How a layer's attention keeps what its backward needs (the simulator's activation memory). */
/* Where a model's training sequence length comes from. A Hugging Face config.json states the
 * context the model supports (max_position_embeddings: 131072 for Llama-3.1 and Qwen2.5), not the
 * length anyone trains at: above PLAN_SEQ_LEN_DEFAULT it is capped there, and the headers say so. */
#define PLAN_SEQ_LEN_DEFAULT 8192
enum plan_seq_origin {
    PLAN_SEQ_UNKNOWN = 0,        /* a hand-built arch */
    PLAN_SEQ_GIVEN,              /* the seq_len option */
    PLAN_SEQ_PRESET,             /* a catalog preset's seq_len_default */
    PLAN_SEQ_CONFIG,             /* the config's own key (seq_key), at or below the default */
    PLAN_SEQ_LAUNCH,             /* a Megatron launch line's sequence length */
    PLAN_SEQ_CAPPED,             /* the config's key (seq_key = seq_config) above PLAN_SEQ_LEN_DEFAULT */
};

enum plan_attention {
    PLAN_ATTN_DEFAULT,        /* not said: the model's (struct plan_arch); materialized when that is unset too */
    PLAN_ATTN_MATERIALIZED,   /* attention scores, softmax and dropout mask stored as s x s per head
                                 (Megatron's CoreAttention, transformers' "eager") */
    PLAN_ATTN_FLASH,          /* fused kernels (FlashAttention, PyTorch SDPA): no s x s matrix, the
                                 softmax's fp32 log-sum-exp per row kept instead */
};
const char *plan_attention_name(enum plan_attention a);   /* "flash", "materialized", "default" */
/* "flash" or "materialized"; RL_EINVAL naming `flag`, the value and the allowed ones otherwise. */
int plan_attention_parse(const char *flag, const char *s, enum plan_attention *out, struct rl_err *e);

/* Shape facts the simulator needs for compute and activation estimates. */
struct plan_arch {
    enum plan_arch_kind kind;
    int layers;                  /* transformer blocks in the whole model (T5: encoder + decoder) */
    int layers_here;             /* blocks on this pipeline stage */
    int64_t hidden;              /* model width */
    int64_t ffn_hidden;          /* MLP inner width */
    int64_t heads;               /* attention heads */
    int64_t kv_heads;            /* key/value heads (GQA), == heads without GQA */
    int64_t vocab;               /* vocabulary as configured */
    int64_t vocab_padded;        /* after Megatron's padding to a multiple of divisor x TP */
    int64_t seq_len;             /* training sequence length */
    int64_t max_pos;             /* learned position table rows (0 with rotary / relative) */
    bool swiglu;                 /* gated MLP (LLaMA, --swiglu) */
    bool rotary;                 /* rotary position embeddings applied to q and k in every layer */
    bool tied_embeddings;        /* output layer shares the word embeddings */
    int tp;                      /* tensor-parallel degree the tensor list was built for */
    int pp;                      /* pipeline-parallel degree */
    int pp_stage;                /* which stage this tensor list is */
    int64_t head_dim;            /* per-head width; heads x head_dim may differ from hidden (T5) */
    enum plan_attention attention;   /* the framework's default attention (plan_attention_origin says
                                        why); PLAN_ATTN_DEFAULT in a hand-built arch */
    enum plan_seq_origin seq_origin; /* where seq_len comes from (PLAN_SEQ_UNKNOWN in a hand-built arch) */
    const char *seq_key;             /* the config key it was read from (a string literal), or NULL */
    int64_t seq_config;              /* that key's value when PLAN_SEQ_CAPPED lowered it, else 0 */
    bool dropout_known;              /* the two probabilities below are the model's (a hand-built arch:
                                        not known, the simulator assumes Megatron's defaults) */
    double attention_dropout;        /* dropout on the attention probabilities in training */
    double hidden_dropout;           /* dropout before each residual add in training */
    bool has_torch_dtype;            /* an HF config.json states the checkpoint's precision */
    enum plan_dtype torch_dtype;     /* its torch_dtype (bfloat16, float16, float32) when it does */
};
/* Why the model's attention is what it is (the framework's default and its source), for reports. */
const char *plan_attention_origin(const struct plan_arch *a);

/* Param-group rules (plan/README.md, "Model tensor lists": param groups). */
enum plan_group_rule {
    PLAN_GROUPS_AUTO,            /* choose from the front end and the DeepSpeed config */
    PLAN_GROUPS_MEGATRON,        /* since mid-2023: no-decay = ".bias" or 1-D */
    PLAN_GROUPS_MEGATRON_OLD,    /* before: no-decay = LayerNorm params and biases */
    PLAN_GROUPS_HF_TWO,          /* HF Trainer's own optimizer: decay, then bias + norm weights */
    PLAN_GROUPS_FLAT,            /* one group in module order (HF with an "optimizer" block) */
    PLAN_GROUPS_LIST,            /* listed by name: a group file or a probe's names (plan/groups.h);
                                    not a rule plan_group_rule_parse accepts */
};
#define PLAN_GROUP_RULE_COUNT (PLAN_GROUPS_LIST + 1)
const char *plan_group_rule_name(enum plan_group_rule r);
int plan_group_rule_parse(const char *s, enum plan_group_rule *r, struct rl_err *e);

struct plan_model {
    char name[64];               /* preset name or file name */
    struct plan_arch arch;
    struct plan_tensor *tensors; /* module order: ZeRO-3 packs sub-groups in this order */
    int n_tensors;
    int cap_tensors;             /* allocated entries */
    int n_groups;                /* after plan_model_group(): 1 or 2; a group list: 1..PLAN_MAX_GROUPS */
    enum plan_group_rule group_rule;   /* the rule applied */
    char group_source[96];       /* with PLAN_GROUPS_LIST: the group file or probe listing them */
    int64_t total_numel;         /* sum of numel over tensors (this stage, this TP rank) */
};

/* Megatron GPT generator input (also filled from a --megatron-args line). */
struct plan_megatron_cfg {
    int num_layers;
    int64_t hidden, ffn_hidden;  /* ffn_hidden 0 -> 4 x hidden */
    int64_t heads, kv_heads;     /* kv_heads 0 -> heads */
    int64_t vocab;               /* unpadded */
    int64_t vocab_divisor;       /* --make-vocab-size-divisible-by, default 128 */
    int64_t seq_len, max_pos;    /* max_pos 0 -> seq_len */
    bool swiglu, rmsnorm, no_bias, untie, rotary;
    bool flash_attn;             /* --use-flash-attn (-v1, -v2, -triton): fused attention kernels */
    double attention_dropout;    /* --attention-dropout, default 0.1 (Megatron's) */
    double hidden_dropout;       /* --hidden-dropout, default 0.1 (Megatron's) */
    int tp, pp, pp_stage;
};
void plan_megatron_defaults(struct plan_megatron_cfg *c);
int plan_model_megatron(struct plan_model *m, const struct plan_megatron_cfg *c, struct rl_err *e);
/* Megatron-DeepSpeed from 2023-07-22 (GQA support) until 2023-11-21 (fused again): with fewer
 * key-value heads than heads, self-attention registers `query` ([h] x h) and `key_value`
 * ([2 kv_heads head_dim] x h) instead of `query_key_value`: 7 tensors per layer instead of 6
 * (without biases), the same elements. Rewrites a Megatron model in place; other models and
 * models without GQA are left as they are. */
int plan_model_megatron_split_qkv(struct plan_model *m, struct rl_err *e);

/* Loads a preset name from <catalog>/models/<name>.json, or a path to a preset file or a HF
 * config.json (model_type gpt2, t5, llama, opt). tp/pp/pp_stage apply to Megatron presets; HF
 * models require tp == 1. seq_len 0 keeps the model's default. */
struct plan_model_opts {
    int tp, pp, pp_stage;
    int64_t seq_len;
};
int plan_model_load(struct plan_model *m, const char *catalog_dir, const char *name_or_path,
                    const struct plan_model_opts *o, struct rl_err *e);
/* plan_model_load on the text of a config already read; path names it in errors and its last
 * component becomes the model's name. */
int plan_model_parse(struct plan_model *m, const char *text, const char *path,
                     const struct plan_model_opts *o, struct rl_err *e);
/* Names of the presets in <catalog>/models, sorted; free with free() on each and the array. */
int plan_model_list(const char *catalog_dir, char ***names, int *n, struct rl_err *e);

/* Assigns tensor.group under a rule; PLAN_GROUPS_AUTO picks MEGATRON for Megatron models,
 * FLAT for HF models when has_optimizer_block, else HF_TWO. Empty groups are dropped so groups
 * are numbered 0..n_groups-1 in order. */
void plan_model_group(struct plan_model *m, enum plan_group_rule rule, bool has_optimizer_block);

int plan_model_add(struct plan_model *m, const char *name, int ndim, const int64_t *shape,
                   enum plan_tp_split tp, unsigned flags, int layer, struct rl_err *e);
void plan_model_free(struct plan_model *m);

/* ---- DeepSpeed config ------------------------------------------------------------------------ */
enum plan_offload { PLAN_OFFLOAD_NONE, PLAN_OFFLOAD_CPU, PLAN_OFFLOAD_NVME };
/* The device as a DeepSpeed config names it: "none", "cpu" or "nvme" (what offload_*.device reads). */
const char *plan_offload_name(enum plan_offload o);

/* Where a value came from, for reporting ("auto" resolved to a default is said so). */
enum plan_src { PLAN_SRC_DEFAULT, PLAN_SRC_CONFIG, PLAN_SRC_AUTO, PLAN_SRC_CLI, PLAN_SRC_MODEL };

/* DeepSpeed's defaults (deepspeed/runtime/zero/config.py, offload_config.py): plan_zero_defaults
 * sets them, and a model that meets an unset value (0) falls back to them. */
#define PLAN_DS_SUB_GROUP_SIZE INT64_C(1000000000)      /* sub_group_size, elements */
#define PLAN_DS_REDUCE_BUCKET_SIZE INT64_C(500000000)   /* reduce_bucket_size, elements */
#define PLAN_DS_PREFETCH_BUCKET_SIZE INT64_C(50000000)  /* stage3_prefetch_bucket_size, elements */
#define PLAN_DS_MAX_LIVE_PARAMETERS INT64_C(1000000000) /* stage3_max_live_parameters, elements */
#define PLAN_DS_PARAM_PERSISTENCE_THRESHOLD INT64_C(100000) /* stage3_param_persistence_threshold, elements */
#define PLAN_DS_OFFLOAD_RATIO 1.0                       /* offload_optimizer.ratio */

struct plan_zero {
    int stage;                       /* zero_optimization.stage */
    enum plan_offload offload;       /* offload_optimizer.device */
    bool pin_memory;                 /* offload_optimizer.pin_memory as DeepSpeed reads it: the config's
                                        value, else the release's default once the version is known
                                        (plan_zero_resolve_pin) */
    enum plan_offload offload_param; /* offload_param.device (ZeRO-Infinity: the 16-bit parameter
                                        partitions on the host between uses) */
    bool offload_param_pin;          /* offload_param.pin_memory as the config gives it (DeepSpeed
                                        pins the flat partition buffer whatever it says: the ledger;
                                        unset: the release's default, plan_zero_param_pin) */
    double ratio;                    /* offload_optimizer.ratio in [0, 1] */
    int64_t sub_group_size;          /* elements, default 1e9 */
    int64_t reduce_bucket_size;      /* elements, default 5e8 */
    int64_t prefetch_bucket_size;    /* stage3_prefetch_bucket_size, elements, default 5e7 */
    int64_t max_live_parameters;     /* stage3_max_live_parameters, default 1e9 */
    int64_t param_persistence_threshold; /* stage3_param_persistence_threshold, elements, default 1e5
                                        (read and reported; the ledger does not model persistence) */
    enum plan_dtype dtype;           /* model dtype: bf16 / fp16 when enabled, else fp32 */
    bool fp16_auto, bf16_auto;       /* fp16.enabled / bf16.enabled is "auto" (the HF Trainer fills it
                                        from its --fp16 / --bf16: plan_zero_resolve_hf_dtype) */
    bool has_optimizer_block;        /* an "optimizer" block is present (HF: one flat group) */
    char optimizer_type[32];         /* its "type", "" when absent */
    bool torch_adam;                 /* optimizer.params.torch_adam (torch Adam instead of DeepSpeed's) */
    bool has_scheduler_block;        /* a "scheduler" block is present (DeepSpeed's lr scheduler) */
    bool client_scheduler;           /* the run's lr schedule is the client's: a config with "auto"
                                        values (the HF Trainer's template: the Trainer passes its own
                                        scheduler when there is no block) or a Megatron-DeepSpeed
                                        launch (Megatron steps its own OptimizerParamScheduler) */
    char scheduler_type[32];         /* its "type", "" when absent */
    int64_t micro_batch;             /* train_micro_batch_size_per_gpu, default 1 */
    int64_t grad_accum;              /* gradient_accumulation_steps, default 1 */
    int64_t train_batch;             /* train_batch_size, 0 when unset */
    struct rl_version ds_version;    /* DeepSpeed whose rules apply (plan/ds_rules.h), default PLAN_DS_DEFAULT_VERSION */
    /* provenance of the fields above, for the report */
    enum plan_src src_ratio, src_sub_group_size, src_reduce_bucket_size, src_prefetch_bucket_size,
        src_max_live_parameters, src_dtype, src_micro_batch, src_grad_accum, src_train_batch,
        src_offload_param_pin, src_pin_memory, src_param_persistence_threshold;
    char notes[12][200];             /* "auto" resolutions and ignored settings, for the report */
    int n_notes;
};
void plan_zero_defaults(struct plan_zero *z);
/* offload_param.pin_memory as DeepSpeed reads it: the config's value, else the default of the
 * release z->ds_version (false before 0.19.5, true from it: plan/ds_rules.h offload_pin_default). */
bool plan_zero_param_pin(const struct plan_zero *z);
/* offload_optimizer.pin_memory left unset by the config takes the default of the release
 * z->ds_version (plan/ds_rules.h offload_pin_default: false before 0.19.5, true from it). Call it
 * whenever ds_version changes; a value the config gave stays. */
void plan_zero_resolve_pin(struct plan_zero *z);
/* Reads a DeepSpeed JSON file. Errors name the JSON path, the value and what is allowed; an
 * unreplaced template placeholder (CONFIG_BATCH_SIZE, LOG_INTERVAL) is named as such. */
int plan_zero_load(struct plan_zero *z, const char *path, struct rl_err *e);
/* Same, from text already in memory (`what` names it in errors), as the default release reads it. */
int plan_zero_parse(struct plan_zero *z, const char *text, const char *what, struct rl_err *e);
/* Same, as release v reads it (z->ds_version = v): the text as hjson takes it (comments and
 * trailing commas, plan/json_text.h); values coerced as the release's pydantic models coerce them
 * ("0.3" for a ratio, "1000" for a size, "true" for a flag: pydantic 1 before 0.15.0, 2 from it);
 * "auto" in zero_optimization dropped to the default (noted); an unknown key in a block the
 * release validates strictly refused with the nearest known key (plan/ds_keys.h), one DeepSpeed
 * ignores noted when it is close to a known one. */
int plan_zero_parse_release(struct plan_zero *z, const char *text, const char *what, struct rl_version v,
                            struct rl_err *e);
/* The HF Trainer's integration fills three "auto" keys from the model's hidden size before
 * DeepSpeed reads the config (transformers integrations/deepspeed.py trainer_config_finalize):
 * reduce_bucket_size = hidden^2 and, at stage 3, stage3_prefetch_bucket_size = int(0.9 hidden^2)
 * and stage3_param_persistence_threshold = 10 hidden. Each of them the config set to "auto"
 * takes that value, and its note says so and from what; DeepSpeed's own default otherwise. */
void plan_zero_resolve_hf_auto(struct plan_zero *z, int64_t hidden);
/* The precision the HF Trainer gives DeepSpeed when it runs with `trainer` (its --bf16 / --fp16,
 * or PLAN_FP32 for neither): a block whose "enabled" is "auto" is enabled when it is the
 * Trainer's, disabled otherwise (trainer_config_process fill_match), so a config with only an
 * "auto" fp16 block trains in fp32 under --bf16. A precision the config set stays. */
void plan_zero_resolve_hf_dtype(struct plan_zero *z, enum plan_dtype trainer);
/* Cross-field checks (offload device none with a ratio, batch sizes, ...). A ratio with stage < 3
 * or device "nvme" parses: plan/ds_hazards.h names what DeepSpeed does with it. */
int plan_zero_validate(const struct plan_zero *z, struct rl_err *e);
/* DeepSpeed's batch rule for dp_ranks data-parallel ranks: the accumulation from train_batch_size
 * and the micro-batch when the config leaves it out; RL_EINVAL when the three disagree or the
 * quotient is not whole (plan/zero_config.c). */
int plan_zero_resolve_batch(struct plan_zero *z, int dp_ranks, struct rl_err *e);

/* ---- layout ------------------------------------------------------------------------------------ */
struct plan_layout {
    int world;          /* total ranks = tp * pp * dp */
    int tp, pp, dp;     /* parallel degrees */
    int nodes;          /* nodes */
    int gpus_per_node;  /* ranks per node */
    int rank;           /* global rank this plan describes (0 by default) */
};
/* Fills what is missing: given any of (tp, pp, dp, nodes x gpus_per_node) derives the rest;
 * fields <= 0 are unknown. Errors when they do not multiply up. */
int plan_layout_resolve(struct plan_layout *l, struct rl_err *e);

/* ---- placement -------------------------------------------------------------------------------- */
enum plan_policy {
    PLAN_POLICY_AUTO,     /* from zero.ds_version */
    PLAN_POLICY_DS012,    /* sub-group i on CPU iff i < floor(ratio * N)         (releases: ds_rules.c) */
    PLAN_POLICY_DS018,    /* sub-group i on CPU iff i >= floor((1 - ratio) * N)  (releases: ds_rules.c) */
    PLAN_POLICY_EXACT,    /* element granularity: CPU share = ratio x per-rank elements */
};
#define PLAN_POLICY_COUNT (PLAN_POLICY_EXACT + 1)
const char *plan_policy_name(enum plan_policy p);
int plan_policy_parse(const char *s, enum plan_policy *p, struct rl_err *e);
/* "auto, deepspeed-0.12, ...": every policy name, for messages and help texts. */
void plan_policy_names(char *buf, size_t n);
struct plan;
/* The plan's placement rule as a sentence, from the policy's row (plan.c) with this plan's numbers
 * and, for a DeepSpeed rule, the releases it holds for (ds_rules.c): "DeepSpeed 0.12-0.17 puts
 * sub-group i on the CPU iff i < floor(ratio x N) = floor(0.3 x 10) = 3". */
void plan_rule_sentence(const struct plan *p, char *buf, size_t n);
/* The DeepSpeed rule that applies to a version (plan_ds_rules_for); RL_EINVAL before the first
 * release with offload_optimizer.ratio (plan_ds_version_check). */
int plan_policy_for_version(struct rl_version v, enum plan_policy *p, struct rl_err *e);

/* Alignment of the exact policy's CPU share, in elements: the CPU share is the first
 * round(ratio x P / granule) x granule elements of the rank's flat partition (P itself when
 * ratio == 1), so |honored - ratio| <= granule / (2 P). */
#define PLAN_EXACT_GRANULE 256

enum plan_device { PLAN_DEV_GPU, PLAN_DEV_CPU_PINNED, PLAN_DEV_CPU_PAGEABLE };
#define PLAN_DEVICE_COUNT (PLAN_DEV_CPU_PAGEABLE + 1)
const char *plan_device_name(enum plan_device d);

/* Ledgers: which buffers exist and when. */
enum plan_ledger_kind {
    PLAN_LEDGER_AUTO,     /* from zero.ds_version */
    PLAN_LEDGER_DS012,    /* DeepSpeed with the zero-gradient step at init: Adam states at init */
    PLAN_LEDGER_DS013,    /* DeepSpeed without it: Adam states at the first real step
                             (which releases: plan/ds_rules.c) */
    PLAN_LEDGER_EXEC,     /* ratiolab's executor (exec/), the buffers it allocates */
};
#define PLAN_LEDGER_COUNT (PLAN_LEDGER_EXEC + 1)
const char *plan_ledger_name(enum plan_ledger_kind k);
/* Parses a ledger name; RL_EINVAL naming `ledger`, the value and the allowed names otherwise. */
int plan_ledger_parse(const char *s, enum plan_ledger_kind *k, struct rl_err *e);
/* "auto, deepspeed-0.12, ...": every ledger name, for messages and help texts. */
void plan_ledger_names(char *buf, size_t n);

enum plan_stage {
    PLAN_STAGE_FP16_PARTITIONS,   /* after_fp16_partitions */
    PLAN_STAGE_FP32_PARTITIONS,   /* after_fp32_partitions */
    PLAN_STAGE_OPTIMIZER_STATES,  /* after_optimizer_states */
    PLAN_STAGE_ZERO_OPTIMIZER,    /* after_zero_optimizer */
    PLAN_STAGE_FIRST_STEP,        /* after_first_step (Adam states of PLAN_LEDGER_DS013) */
    PLAN_STAGE_COUNT
};
const char *plan_stage_name(enum plan_stage s);

struct plan_buffer {
    char name[48];               /* e.g. "fp32_master_cpu" */
    enum plan_device device;
    enum plan_dtype dtype;
    int64_t numel;               /* elements */
    int64_t bytes;               /* exact */
    enum plan_stage stage;       /* allocated at */
};

struct plan_stage_total {
    int64_t gpu_bytes;           /* cumulative GPU bytes at the end of this stage */
    int64_t cpu_bytes;           /* cumulative host bytes (pinned + pageable) */
    int64_t cpu_pinned_bytes;    /* of which pinned */
};

struct plan_subgroup {
    int index;                   /* global index, over groups in order */
    int group;                   /* param group */
    int first;                   /* first position in plan->order (flat partition order) */
    int n_tensors;               /* tensors in it: plan->order[first .. first + n_tensors) */
    int64_t offset;              /* first element in the rank's flat partition */
    int64_t numel;               /* per-rank elements */
    int64_t cpu_numel;           /* of which updated on the CPU: 0, numel, or a split (exact) */
};

struct plan_options {
    enum plan_policy policy;       /* AUTO: from zero->ds_version */
    enum plan_ledger_kind ledger;  /* AUTO: from zero->ds_version */
    int64_t exec_chunk_numel;      /* executor CPU pipeline chunk, elements (default 4 Mi) */
};

struct plan {
    const struct plan_model *model;  /* not owned */
    struct plan_layout layout;
    struct plan_zero zero;
    enum plan_policy policy;         /* resolved */
    enum plan_ledger_kind ledger_kind; /* resolved */
    int64_t *part_numel;             /* per tensor (model order): ceil(numel / dp) */
    int *order;                      /* tensor indices in flat-partition order: group 0 in module
                                        order, then group 1, ...; sub-groups are runs of it */
    int n_groups;
    int64_t group_numel[PLAN_MAX_GROUPS];   /* per-rank elements per param group */
    struct plan_subgroup *subgroups;
    int n_subgroups;
    int64_t per_rank_numel;          /* P: elements of the rank's partition (padded) */
    int64_t cpu_numel;               /* elements updated on the CPU */
    int64_t gpu_numel;               /* elements updated on the GPU */
    double requested_ratio;
    double honored_ratio;            /* cpu_numel / per_rank_numel (0 when empty) */
    int cpu_subgroups;               /* sub-groups with any element on the CPU */
    struct plan_buffer *buffers;
    int n_buffers;
    struct plan_stage_total stages[PLAN_STAGE_COUNT];
    int64_t exec_chunk_numel;
};

int plan_build(struct plan *p, const struct plan_model *m, const struct plan_layout *l,
               const struct plan_zero *z, const struct plan_options *o, struct rl_err *e);
/* Divides the element-count settings by F for a model shrunk F times (sub_group_size,
 * reduce_bucket_size, stage3_prefetch_bucket_size and, when not NULL, a pipeline chunk), each
 * ceil(v / F) and at least 1, so the sub-group packing rule sees the same proportions. */
void plan_scale_zero(struct plan_zero *z, int64_t *chunk_numel, double F);
/* Elements of the executor's reduce-scatter bucket: reduce_bucket_size, but no more than the
 * gradients of one step (the rank's partition x the DP degree). */
int64_t plan_exec_bucket_numel(const struct plan *p);
void plan_free(struct plan *p);

/* Peak per-rank memory of the model states from the ledger (the last stage). */
int64_t plan_peak_gpu_bytes(const struct plan *p);
int64_t plan_peak_cpu_bytes(const struct plan *p);

/* The one default tolerance of an honored ratio (plan's warning, check's verdict and fix, tune's
 * search): one default, so the fix check advises is one plan does not warn about. */
#define PLAN_RATIO_TOLERANCE 0.01
/* The one "honored within tolerance" test, |honored - requested| <= tol, that every judgement of
 * an honored ratio uses (check, plan's warning, tune, validate, the sub_group_size search). */
bool plan_ratio_within(double honored, double requested, double tol);
/* plan_ratio_within for a built plan's honored and requested ratios. */
bool plan_honors(const struct plan *p, double tol);

/* The largest sub_group_size (a round number where one exists) for which the honored ratio is
 * within `tol` of the requested one under the plan's DeepSpeed policy; 0 when none is (e.g. a
 * single tensor larger than the whole CPU share). Leaves *p unchanged. */
int64_t plan_max_honoring_sub_group_size(const struct plan *p, double tol);

/* The same for several DeepSpeed versions at once: the largest sub_group_size (a round number
 * where one exists) honored within tol under the plan's policy and under each of policies[0..n)
 * (the other versions' placement rules; the same model, layout and ratio); 0 when none is.
 * Cost: up to ~256 x log(top) placements per policy. */
int64_t plan_max_honoring_sub_group_size_under(const struct plan *p, const enum plan_policy *policies, int n,
                                               double tol);
/* Whether sub_group_size sgs honors the plan's requested ratio within tol under the plan's policy
 * and each of policies[0..n). */
bool plan_honors_under(const struct plan *p, int64_t sgs, const enum plan_policy *policies, int n, double tol);

/* The sub_group_size whose honored ratio is closest to the requested one (the largest of equals),
 * on the same grid as above; *honored receives that ratio. */
int64_t plan_closest_sub_group_size(const struct plan *p, double *honored);

/* Number of sub-groups and the honored ratio for a sub_group_size without building a ledger.
 * Allocates nothing and always returns 0. O(tensors). */
int plan_honored_for(const struct plan *p, int64_t sub_group_size, double ratio, double *honored,
                     int *n_subgroups);

/* When |honored - requested| > tol: why (the sub-group count, its sub_group_size, the placement
 * rule's sentence) and the fix (the largest sub_group_size that honors the ratio within tol, or the
 * closest one when none does) as sentences into buf; returns 1. Returns 0 and an empty buf when the
 * ratio is honored. */
int plan_honor_advice(const struct plan *p, double tol, char *buf, size_t n);

#endif
