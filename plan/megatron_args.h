/* plan/megatron_args.h — a Megatron-DeepSpeed launch line (--megatron-args "..." or a file) read
 * into the model shape and the layout it implies.
 *
 * Tokenization is the part of POSIX shell word splitting that a pasted launch line needs:
 *  - words are split at blanks and newlines; a word starting with '#' starts a comment;
 *  - backslash-newline (also backslash-CR-LF) is a line continuation and is accepted; a backslash
 *    followed by blanks before the line end is an error (the shell would end the command there);
 *    any other backslash quotes the next character, as in the shell;
 *  - single and double quotes are handled as the shell handles them (quotes removed, blanks kept
 *    inside); an unterminated quote is an error naming the argument; a quoted word that starts
 *    with "--" and holds blanks (several arguments quoted as one) is an error;
 *  - nothing is expanded: a `$VAR`, `${VAR}`, `$(...)` or backquote in the value of a flag that
 *    shapes the model or layout, or in place of arguments, is an error naming the flag.
 * Flags are matched with '_' and '-' treated alike, in "--flag value" and "--flag=value" forms; the
 * last occurrence wins (argparse). Flags that do not shape the parameter list or the layout are
 * ignored and listed in `ignored` (an unknown flag takes the next word as its value unless that
 * word starts with "--"). */
#ifndef RL_PLAN_MEGATRON_ARGS_H
#define RL_PLAN_MEGATRON_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rl.h"
#include "plan/plan.h"

struct plan_megatron_launch {
    struct plan_megatron_cfg model;   /* shape, TP, PP (pp_stage 0) */
    int64_t micro_batch, global_batch;/* --micro-batch-size, --global-batch-size; 0 when not given */
    enum plan_dtype dtype;            /* --bf16 / --fp16, else fp32 */
    bool dtype_set;                   /* --bf16 or --fp16 was given */
    bool checkpoint_activations;      /* --checkpoint-activations, --recompute-activations, or
                                         --recompute-granularity full */
    int zero_stage;                   /* --zero-stage, -1 when not given */
    bool cpu_optimizer;               /* --cpu-optimizer */
    bool no_pipeline_parallel;        /* --no-pipeline-parallel (pp must be 1) */
    bool tp_set, pp_set;              /* the line gave the TP / PP size (else model.tp/pp are 1) */
    char ds_config[1024];             /* --deepspeed_config path as given, "" when absent */
    char ignored[4096];               /* ignored flags and words, space separated, for --verbose */
};

/* Parses a launch line. Errors (RL_EINVAL) name the argument, its value and what is allowed:
 * missing required flags (--num-layers, --hidden-size, --num-attention-heads, --seq-length),
 * unexpanded variables, bad numbers, unknown vocabulary size, shapes Megatron would reject
 * (checked by building the stage-0 tensor list). Without --ffn-hidden-size the MLP width is
 * Megatron's default: 4 x hidden, or int(8 hidden / 3 / 64) x 64 with --swiglu. */
int plan_megatron_args_parse(const char *line, struct plan_megatron_launch *out, struct rl_err *e);
/* Same, from a file (errors are prefixed with the path). */
int plan_megatron_args_load(const char *path, struct plan_megatron_launch *out, struct rl_err *e);

/* --megatron-version: which Megatron-DeepSpeed param-group rule applies. Accepts "new" / "old",
 * the rule names "megatron" / "megatron-old", or a checkout date YYYY-MM or YYYY-MM-DD: before
 * PLAN_MEGATRON_RULE_DATE the old rule (_get_params_for_weight_decay_optimization), from it on the
 * new one (get_param_groups). */
#define PLAN_MEGATRON_RULE_DATE "2023-07-01"
/* Checkouts dated from PLAN_MEGATRON_GQA_SPLIT_FROM up to (not including) PLAN_MEGATRON_GQA_SPLIT_UNTIL
 * register self-attention's query and key_value as separate parameters when the key-value heads
 * are fewer than the heads (GQA support, then fused again). True for such a --megatron-version
 * date (YYYY-MM-DD or YYYY-MM, taken as its first day); false for "new", "old" and other dates. */
#define PLAN_MEGATRON_GQA_SPLIT_FROM "2023-07-22"
#define PLAN_MEGATRON_GQA_SPLIT_UNTIL "2023-11-21"
bool plan_megatron_version_splits_qkv(const char *s);
int plan_megatron_version_rule(const char *s, enum plan_group_rule *r, struct rl_err *e);

#endif
