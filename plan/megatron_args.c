/* plan/megatron_args.c — see megatron_args.h for the tokenization rules.
 *
 * Two passes: the line is split into words (O(length)), then the words are matched against the
 * table of flags that shape the model or the layout (O(words x flags), both small). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron_args.h"
#include "plan/model_impl.h"

/* One word of the line after quote removal. */
struct word {
    char *s;          /* text without quotes (owned) */
    bool expands;     /* held an unquoted or double-quoted $ or a backquote: an unexpanded variable */
    bool quoted;      /* any part was quoted */
};

struct words {
    struct word *v;   /* words in line order */
    int n, cap;       /* used and allocated entries */
};

static void words_free(struct words *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->v[i].s);
    free(w->v);
    memset(w, 0, sizeof *w);
}

/* Growable text buffer for the word being built. */
struct buf {
    char *s;
    size_t n, cap;
};

static int buf_put(struct buf *b, char c, struct rl_err *e)
{
    if (b->n + 2 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        char *s = realloc(b->s, cap);
        if (!s)
            return rl_errf(e, RL_ENOMEM, "out of memory");
        b->s = s;
        b->cap = cap;
    }
    b->s[b->n++] = c;
    b->s[b->n] = 0;
    return 0;
}

/* Makes sure the word exists even when empty ('' or ""). */
static int buf_touch(struct buf *b, struct rl_err *e)
{
    if (b->s)
        return 0;
    int rc = buf_put(b, 'x', e);
    if (rc == 0) {
        b->n = 0;
        b->s[0] = 0;
    }
    return rc;
}

/* The last complete word, for error messages ("after '--num-layers'"). */
static const char *last_word(const struct words *w)
{
    return w->n ? w->v[w->n - 1].s : "(start of line)";
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A '$' that the shell would expand: $NAME, ${...}, $(...), $1, $@, $*, $#, $?. */
static bool dollar_expands(const char *p)
{
    char c = p[1];
    return c == '{' || c == '(' || c == '_' || c == '@' || c == '*' || c == '#' || c == '?' ||
           (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int split(const char *line, struct words *w, struct rl_err *e)
{
    const char *p = line;
    for (;;) {
        while (*p && is_blank(*p))
            p++;
        if (!*p)
            return 0;
        if (*p == '#') {   /* comment to the end of the line */
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (*p == '\\' && (p[1] == '\n' || (p[1] == '\r' && p[2] == '\n') || p[1] == 0)) {
            p += p[1] == '\r' ? 3 : p[1] ? 2 : 1;   /* continuation between words */
            continue;
        }
        struct buf b = {0};
        struct word wd = {0};
        int rc = 0;
        while (*p && !is_blank(*p) && rc == 0) {
            if (*p == '\\') {
                const char *q = p + 1;
                while (*q == ' ' || *q == '\t')
                    q++;
                if (q > p + 1 && (*q == '\n' || *q == '\r' || *q == 0)) {
                    rc = rl_errf(e, RL_EINVAL, "a backslash followed by blanks at "
                                 "the end of a line, after '%s': remove the blanks after the "
                                 "backslash (the shell would end the command there)",
                                 b.s ? b.s : last_word(w));
                    break;
                }
                if (p[1] == '\n') {
                    p += 2;
                    continue;
                }
                if (p[1] == '\r' && p[2] == '\n') {
                    p += 3;
                    continue;
                }
                if (p[1] == 0) {
                    p++;
                    continue;
                }
                rc = buf_put(&b, p[1], e);
                wd.quoted = true;
                p += 2;
            } else if (*p == '\'') {
                const char *end = strchr(p + 1, '\'');
                if (!end) {
                    rc = rl_errf(e, RL_EINVAL, "unterminated single quote in the "
                                 "argument after '%s' (\"%.40s\"); close the quote",
                                 last_word(w), p);
                    break;
                }
                for (const char *q = p + 1; q < end && rc == 0; q++)
                    rc = buf_put(&b, *q, e);
                wd.quoted = true;
                if (rc == 0)
                    rc = buf_touch(&b, e);   /* '' is an empty word */
                p = end + 1;
            } else if (*p == '"') {
                const char *q = p + 1;
                while (*q && *q != '"' && rc == 0) {
                    if (*q == '\\' && (q[1] == '"' || q[1] == '\\' || q[1] == '$' || q[1] == '`')) {
                        rc = buf_put(&b, q[1], e);
                        q += 2;
                    } else if (*q == '\\' && q[1] == '\n') {
                        q += 2;
                    } else {
                        if ((*q == '$' && dollar_expands(q)) || *q == '`')
                            wd.expands = true;
                        rc = buf_put(&b, *q, e);
                        q++;
                    }
                }
                if (rc)
                    break;
                if (*q != '"') {
                    rc = rl_errf(e, RL_EINVAL, "unterminated double quote in the "
                                 "argument after '%s' (%.40s); close the quote", last_word(w), p);
                    break;
                }
                wd.quoted = true;
                rc = buf_touch(&b, e);
                p = q + 1;
            } else {
                if ((*p == '$' && dollar_expands(p)) || *p == '`')
                    wd.expands = true;
                rc = buf_put(&b, *p, e);
                p++;
            }
        }
        if (rc == 0 && rl_grow(&w->v, &w->cap, sizeof *w->v, w->n + 1, 64))
            rc = rl_errf(e, RL_ENOMEM, "out of memory");
        if (rc) {
            free(b.s);
            return rc;
        }
        wd.s = b.s;
        w->v[w->n++] = wd;
    }
}

/* ---- flags -------------------------------------------------------------------------------------- */

enum flag_id {
    F_NUM_LAYERS, F_HIDDEN, F_FFN, F_HEADS, F_KV_HEADS, F_QUERY_GROUPS, F_NORMALIZATION,
    F_POS_TYPE, F_MAX_POS, F_SEQ, F_VOCAB_DIV, F_VOCAB_SIZE, F_VOCAB_FILE, F_TOKENIZER,
    F_TP, F_MP, F_PP, F_MICRO, F_BATCH, F_GLOBAL, F_ZERO, F_DS_CONFIG, F_RECOMPUTE_GRAN,
    /* flags without a value */
    F_SWIGLU, F_NO_BIAS, F_UNTIE, F_ROTARY, F_NO_POS, F_NO_PP, F_BF16, F_FP16, F_CKPT, F_RECOMPUTE,
    F_CPU_OPT, F_FLASH_ATTN, F_ATTN_DROPOUT, F_HIDDEN_DROPOUT,
};

struct flag {
    const char *name;   /* with '-' separators, without the leading "--" */
    enum flag_id id;
    bool value;         /* takes a value */
};

static const struct flag flags[] = {
    {"num-layers", F_NUM_LAYERS, true},
    {"hidden-size", F_HIDDEN, true},
    {"ffn-hidden-size", F_FFN, true},
    {"num-attention-heads", F_HEADS, true},
    {"num-key-value-heads", F_KV_HEADS, true},
    {"num-query-groups", F_QUERY_GROUPS, true},
    {"normalization", F_NORMALIZATION, true},
    {"position-embedding-type", F_POS_TYPE, true},
    {"max-position-embeddings", F_MAX_POS, true},
    {"seq-length", F_SEQ, true},
    {"make-vocab-size-divisible-by", F_VOCAB_DIV, true},
    {"vocab-size", F_VOCAB_SIZE, true},
    {"vocab-file", F_VOCAB_FILE, true},
    {"tokenizer-type", F_TOKENIZER, true},
    {"tensor-model-parallel-size", F_TP, true},
    {"model-parallel-size", F_MP, true},
    {"pipeline-model-parallel-size", F_PP, true},
    {"micro-batch-size", F_MICRO, true},
    {"batch-size", F_BATCH, true},
    {"global-batch-size", F_GLOBAL, true},
    {"zero-stage", F_ZERO, true},
    {"deepspeed-config", F_DS_CONFIG, true},
    {"recompute-granularity", F_RECOMPUTE_GRAN, true},
    {"swiglu", F_SWIGLU, false},
    {"disable-bias-linear", F_NO_BIAS, false},
    {"untie-embeddings-and-output-weights", F_UNTIE, false},
    {"use-rotary-position-embeddings", F_ROTARY, false},
    {"no-position-embedding", F_NO_POS, false},
    {"no-pipeline-parallel", F_NO_PP, false},
    {"bf16", F_BF16, false},
    {"fp16", F_FP16, false},
    {"checkpoint-activations", F_CKPT, false},
    {"recompute-activations", F_RECOMPUTE, false},
    {"cpu-optimizer", F_CPU_OPT, false},
    {"attention-dropout", F_ATTN_DROPOUT, true},
    {"hidden-dropout", F_HIDDEN_DROPOUT, true},
    {"use-flash-attn", F_FLASH_ATTN, false},          /* Megatron-DeepSpeed: alias of -v1 */
    {"use-flash-attn-v1", F_FLASH_ATTN, false},
    {"use-flash-attn-v2", F_FLASH_ATTN, false},
    {"use-flash-attn-triton", F_FLASH_ATTN, false},
};

/* Compares a flag name with '_' and '-' alike; `n` is the length of `s`. */
static bool flag_eq(const char *s, size_t n, const char *name)
{
    if (strlen(name) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i] == '_' ? '-' : s[i];
        if (c != name[i])
            return false;
    }
    return true;
}

/* A flag Megatron-DeepSpeed's parser declares (megatron_flags_table.h, generated from
 * megatron/arguments.py and DeepSpeed's add_config_arguments). */
struct known_flag {
    const char *name;   /* without the leading "--" */
    bool value;         /* takes a value (not a store_true / store_false action) */
};

#include "plan/megatron_flags_table.h"
#define X(n, v) {n, v},
static const struct known_flag known_flags[] = {PLAN_MEGATRON_FLAGS};
#undef X

/* The known flag `s` (n characters, '_' and '-' alike), or NULL. O(flags). */
static const struct known_flag *known_flag(const char *s, size_t n)
{
    for (size_t k = 0; k < RL_COUNT(known_flags); k++) {
        char norm[96];
        snprintf(norm, sizeof norm, "%s", known_flags[k].name);
        for (char *c = norm; *c; c++)
            *c = *c == '_' ? '-' : *c;
        if (flag_eq(s, n, norm))
            return &known_flags[k];
    }
    return NULL;
}

/* RL_EINVAL for a flag no Megatron-DeepSpeed parser knows, with the nearest flag read or known. */
static int unknown_flag(const char *s, size_t n, struct rl_err *e)
{
    static const char *cands[RL_COUNT(flags) + RL_COUNT(known_flags)];
    size_t k = 0;
    for (size_t i = 0; i < RL_COUNT(flags); i++)
        cands[k++] = flags[i].name;
    for (size_t i = 0; i < RL_COUNT(known_flags); i++)
        cands[k++] = known_flags[i].name;
    char word[128];
    snprintf(word, sizeof word, "%.*s", (int)(n < 120 ? n : 120), s);
    const char *near = rl_nearest(word, cands, (int)k);
    char hint[160] = "";
    if (near)
        snprintf(hint, sizeof hint, "; did you mean --%s?", near);
    return rl_errf(e, RL_EINVAL, "--%s: not a Megatron-DeepSpeed flag (its parser stops on it: unrecognized "
                   "arguments)%s", word, hint);
}

static void note_ignored(struct plan_megatron_launch *o, const char *s)
{
    size_t used = strlen(o->ignored);
    size_t len = strlen(s);
    if (used + len + 2 >= sizeof o->ignored)
        return;   /* the list is for reading; a very long line keeps its first entries */
    if (used)
        o->ignored[used++] = ' ';
    memcpy(o->ignored + used, s, len + 1);
}

/* What the parse has seen besides the launch fields. */
struct seen {
    bool layers, hidden, heads, seq, vocab_size;   /* required flags seen */
    const char *vocab_file;      /* value of --vocab-file, NULL when absent */
    bool vocab_file_expands;     /* it was an unexpanded variable */
    const char *tokenizer;       /* value of --tokenizer-type */
};

static int int_value(const char *flag, const char *v, int64_t min, int64_t max, int64_t *out,
                     struct rl_err *e)
{
    char field[96];
    snprintf(field, sizeof field, "--%s", flag);
    return rl_parse_i64(field, v, min, max, out, e);
}

static int apply(const struct flag *f, const char *v, struct plan_megatron_launch *o,
                 struct seen *s, struct rl_err *e)
{
    struct plan_megatron_cfg *c = &o->model;
    int64_t x = 0;
    int rc = 0;
    switch (f->id) {
    case F_NUM_LAYERS:
        rc = int_value(f->name, v, 1, PLAN__MAX_LAYERS, &x, e);
        c->num_layers = (int)x;
        s->layers = true;
        break;
    case F_HIDDEN:
        rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->hidden, e);
        s->hidden = true;
        break;
    case F_FFN: rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->ffn_hidden, e); break;
    case F_HEADS:
        rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->heads, e);
        s->heads = true;
        break;
    case F_KV_HEADS:
    case F_QUERY_GROUPS: rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->kv_heads, e); break;
    case F_NORMALIZATION:
        if (rl_streq(v, "rmsnorm") || rl_streq(v, "RMSNorm"))
            c->rmsnorm = true;
        else if (rl_streq(v, "layernorm") || rl_streq(v, "LayerNorm"))
            c->rmsnorm = false;
        else
            rc = rl_errf(e, RL_EINVAL, "--normalization: '%s'; allowed: layernorm, rmsnorm", v);
        break;
    case F_POS_TYPE:
        if (rl_streq(v, "rope"))
            c->rotary = true;
        else if (rl_streq(v, "learned_absolute"))
            c->rotary = false;
        else
            rc = rl_errf(e, RL_EINVAL, "--position-embedding-type: '%s'; allowed: learned_absolute, "
                         "rope", v);
        break;
    case F_MAX_POS: rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->max_pos, e); break;
    case F_SEQ:
        rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->seq_len, e);
        s->seq = true;
        break;
    case F_VOCAB_DIV: rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->vocab_divisor, e); break;
    case F_VOCAB_SIZE:
        rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &c->vocab, e);
        s->vocab_size = true;
        break;
    case F_VOCAB_FILE: s->vocab_file = v; break;
    case F_TOKENIZER: s->tokenizer = v; break;
    case F_TP:
    case F_MP:
        rc = int_value(f->name, v, 1, 1 << 20, &x, e);
        c->tp = (int)x;
        o->tp_set = true;
        break;
    case F_PP:
        rc = int_value(f->name, v, 1, 1 << 20, &x, e);
        c->pp = (int)x;
        o->pp_set = true;
        break;
    case F_MICRO:
    case F_BATCH: rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &o->micro_batch, e); break;
    case F_GLOBAL: rc = int_value(f->name, v, 1, PLAN__MAX_DIM, &o->global_batch, e); break;
    case F_ZERO:
        rc = int_value(f->name, v, 0, 3, &x, e);
        o->zero_stage = (int)x;
        break;
    case F_DS_CONFIG:
        if (strlen(v) >= sizeof o->ds_config)
            rc = rl_errf(e, RL_EINVAL, "--deepspeed_config: path longer than %zu characters",
                         sizeof o->ds_config - 1);
        else
            snprintf(o->ds_config, sizeof o->ds_config, "%s", v);
        break;
    case F_RECOMPUTE_GRAN:
        if (rl_streq(v, "full"))
            o->checkpoint_activations = true;
        else if (!rl_streq(v, "selective"))
            rc = rl_errf(e, RL_EINVAL, "--recompute-granularity: '%s'; allowed: full, selective", v);
        break;
    case F_SWIGLU: c->swiglu = true; break;
    case F_NO_BIAS: c->no_bias = true; break;
    case F_UNTIE: c->untie = true; break;
    case F_ROTARY:
    case F_NO_POS: c->rotary = true; break;
    case F_NO_PP: o->no_pipeline_parallel = true; break;
    case F_BF16:
    case F_FP16:
        if (o->dtype_set && o->dtype != (f->id == F_BF16 ? PLAN_BF16 : PLAN_FP16))
            return rl_errf(e, RL_EINVAL, "--%s: both --bf16 and --fp16 are given; allowed: one of "
                           "them", f->name);
        o->dtype = f->id == F_BF16 ? PLAN_BF16 : PLAN_FP16;
        o->dtype_set = true;
        break;
    case F_CKPT:
    case F_RECOMPUTE: o->checkpoint_activations = true; break;
    case F_CPU_OPT: o->cpu_optimizer = true; break;
    case F_FLASH_ATTN: c->flash_attn = true; break;
    case F_ATTN_DROPOUT: rc = rl_parse_double("--attention-dropout", v, 0, 1, &c->attention_dropout, e); break;
    case F_HIDDEN_DROPOUT: rc = rl_parse_double("--hidden-dropout", v, 0, 1, &c->hidden_dropout, e); break;
    }
    return rc;
}

/* True for a word that is only a variable reference ($NAME, ${NAME}, $@, $*): in place of
 * arguments it would expand to flags we cannot see. */
static bool whole_var(const char *t)
{
    if (t[0] != '$')
        return false;
    if ((t[1] == '@' || t[1] == '*') && t[2] == 0)
        return true;
    const char *p = t + 1;
    bool brace = *p == '{';
    p += brace;
    if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
        return false;
    while (*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
        p++;
    if (brace && *p++ != '}')
        return false;
    return *p == 0;
}

/* The error for an unexpanded variable in the value of a flag. */
static int var_error(const char *flag, const char *v, struct rl_err *e)
{
    return rl_errf(e, RL_EINVAL, "--%s: '%s' is an unexpanded shell variable; give the value it "
                   "stands for (e.g. copy the line the launcher printed, or run the script with "
                   "`bash -x`)", flag, v);
}

static int resolve(struct plan_megatron_launch *o, const struct seen *s, struct rl_err *e)
{
    struct plan_megatron_cfg *c = &o->model;
    static const struct { const char *flag; size_t off; } req[] = {
        {"--num-layers", offsetof(struct seen, layers)},
        {"--hidden-size", offsetof(struct seen, hidden)},
        {"--num-attention-heads", offsetof(struct seen, heads)},
        {"--seq-length", offsetof(struct seen, seq)},
    };
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (!*(const bool *)((const char *)s + req[i].off))
            return rl_errf(e, RL_EINVAL, "%s: missing from the Megatron arguments; it is required "
                           "(Megatron requires it too)", req[i].flag);
    if (!s->vocab_size) {
        /* Megatron takes the vocabulary from the tokenizer; the GPT-2 BPE one (the default with
         * --vocab-file and --merge-file) has 50257 entries. */
        if (s->tokenizer && !rl_streq(s->tokenizer, "GPT2BPETokenizer"))
            return rl_errf(e, RL_EINVAL, "--tokenizer-type: '%s' has a vocabulary size only the "
                           "tokenizer knows; add --vocab-size N", s->tokenizer);
        if (!s->vocab_file && !s->tokenizer)
            return rl_errf(e, RL_EINVAL, "--vocab-size: missing, and no --vocab-file names a GPT-2 "
                           "vocabulary; add --vocab-size N (50257 for GPT-2 BPE)");
        if (s->vocab_file_expands && !s->tokenizer)
            return rl_errf(e, RL_EINVAL, "--vocab-file: '%s' is an unexpanded shell variable and "
                           "no --vocab-size is given; give the file name or --vocab-size N",
                           s->vocab_file);
        c->vocab = 50257;
    }
    if (c->ffn_hidden == 0)
        c->ffn_hidden = plan__megatron_default_ffn(c->hidden, c->swiglu);
    if (o->no_pipeline_parallel && c->pp != 1)
        return rl_errf(e, RL_EINVAL, "--pipeline-model-parallel-size: %d with --no-pipeline-parallel;"
                       " allowed: 1 (Megatron-DeepSpeed asserts it)", c->pp);
    if (o->zero_stage >= 2 && c->pp > 1)
        return rl_errf(e, RL_EINVAL, "--zero-stage: %d with --pipeline-model-parallel-size %d; "
                       "allowed: stage 0 or 1 with pipeline parallelism (DeepSpeed's pipeline "
                       "engine rejects ZeRO-2 and ZeRO-3), or add --no-pipeline-parallel with "
                       "pipeline size 1", o->zero_stage, c->pp);
    if (o->micro_batch && o->global_batch && o->global_batch % o->micro_batch)
        return rl_errf(e, RL_EINVAL, "--global-batch-size: %lld is not a multiple of "
                       "--micro-batch-size %lld", (long long)o->global_batch,
                       (long long)o->micro_batch);
    /* Shape checks as Megatron does them: build the stage-0 list once and drop it. */
    struct plan_model m;
    int rc = plan_model_megatron(&m, c, e);
    if (rc == 0)
        plan_model_free(&m);
    return rc;
}

int plan_megatron_args_parse(const char *line, struct plan_megatron_launch *out, struct rl_err *e)
{
    memset(out, 0, sizeof *out);
    plan_megatron_defaults(&out->model);
    out->dtype = PLAN_FP32;
    out->zero_stage = -1;
    if (!line)
        line = "";
    struct words w = {0};
    int rc = split(line, &w, e);
    struct seen s = {0};
    /* Flags before the training script (the first word ending in ".py") are the launcher's
     * (deepspeed --num_gpus, torchrun --nproc_per_node): ignored, not Megatron's to refuse. */
    int script = -1;
    for (int i = 0; i < w.n && script < 0; i++) {
        size_t l = strlen(w.v[i].s);
        if (l > 3 && !strcmp(w.v[i].s + l - 3, ".py") && strncmp(w.v[i].s, "--", 2) != 0)
            script = i;
    }
    for (int i = 0; rc == 0 && i < w.n; i++) {
        const struct word *wd = &w.v[i];
        const char *t = wd->s;
        if (i < script) {
            note_ignored(out, t);
            continue;
        }
        if (strncmp(t, "--", 2) != 0 || t[2] == 0) {
            if (wd->expands && whole_var(t))
                rc = rl_errf(e, RL_EINVAL, "'%s' is an unexpanded shell variable "
                             "in place of arguments (after '%s'); paste the expanded line (e.g. "
                             "from `bash -x` or the launcher's log)", t, i ? w.v[i - 1].s : "start");
            else
                note_ignored(out, t);
            continue;
        }
        if (wd->quoted && strpbrk(t, " \t\n")) {
            rc = rl_errf(e, RL_EINVAL, "'%.60s' holds several arguments in one "
                         "quoted word; remove the quotes around them", t);
            break;
        }
        const char *name = t + 2;
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const struct flag *f = NULL;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0] && !f; k++)
            if (flag_eq(name, n, flags[k].name))
                f = &flags[k];
        if (!f) {
            const struct known_flag *kf = known_flag(name, n);
            if (!kf) {   /* Megatron's argparse stops on it: "unrecognized arguments" */
                rc = unknown_flag(name, n, e);
                break;
            }
            /* Known to Megatron, not read here: ignored, with its value when it takes one. */
            char fl[128];
            snprintf(fl, sizeof fl, "--%.*s", (int)(n < 120 ? n : 120), name);
            note_ignored(out, fl);
            if (kf->value && !eq && i + 1 < w.n && strncmp(w.v[i + 1].s, "--", 2) != 0)
                i++;
            continue;
        }
        const char *v = NULL;
        bool v_expands = false;
        if (f->value) {
            if (eq) {
                v = eq + 1;
                v_expands = wd->expands;
            } else if (i + 1 < w.n && strncmp(w.v[i + 1].s, "--", 2) != 0) {
                v = w.v[i + 1].s;
                v_expands = w.v[i + 1].expands;
                i++;
            } else {
                rc = rl_errf(e, RL_EINVAL, "--%s: missing value%s", f->name,
                             i + 1 < w.n ? " (the next word is a flag)" : " at the end of the line");
                break;
            }
            if (v_expands) {
                if (f->id == F_VOCAB_FILE) {
                    s.vocab_file = v;
                    s.vocab_file_expands = true;
                    continue;
                }
                rc = var_error(f->name, v, e);
                break;
            }
        } else if (eq) {
            rc = rl_errf(e, RL_EINVAL, "--%s: takes no value (got '%s')", f->name, eq + 1);
            break;
        }
        rc = apply(f, v, out, &s, e);
    }
    if (rc == 0)
        rc = resolve(out, &s, e);
    words_free(&w);
    return rc;
}

int plan_megatron_args_load(const char *path, struct plan_megatron_launch *out, struct rl_err *e)
{
    char *text;
    int rc = rl_read_file(path, &text, NULL, e);
    if (rc) {
        memset(out, 0, sizeof *out);
        return rl_err_prefix(e, "--megatron-args-file");
    }
    rc = plan_megatron_args_parse(text, out, e);
    free(text);
    if (rc)
        rl_err_prefix(e, "%s", path);
    return rc;
}

int plan_megatron_version_rule(const char *s, enum plan_group_rule *r, struct rl_err *e)
{
    if (rl_streq(s, "new") || rl_streq(s, "megatron")) {
        *r = PLAN_GROUPS_MEGATRON;
        return 0;
    }
    if (rl_streq(s, "old") || rl_streq(s, "megatron-old")) {
        *r = PLAN_GROUPS_MEGATRON_OLD;
        return 0;
    }
    int y = 0, m = 0, d = 1, used = 0;
    bool ok = s && ((sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &used) == 3 && s[used] == 0) ||
                    (used = 0, d = 1, sscanf(s, "%4d-%2d%n", &y, &m, &used) == 2 && s[used] == 0));
    if (!ok || y < 2019 || y > 2100 || m < 1 || m > 12 || d < 1 || d > 31)
        return rl_errf(e, RL_EINVAL, "megatron-version: '%s'; allowed: new, old, or the date of "
                       "the Megatron-DeepSpeed checkout as YYYY-MM or YYYY-MM-DD (before %s: the "
                       "old grouping rule)", s ? s : "", PLAN_MEGATRON_RULE_DATE);
    char iso[16];
    snprintf(iso, sizeof iso, "%04d-%02d-%02d", y, m, d);
    *r = strcmp(iso, PLAN_MEGATRON_RULE_DATE) < 0 ? PLAN_GROUPS_MEGATRON_OLD : PLAN_GROUPS_MEGATRON;
    return 0;
}

bool plan_megatron_version_splits_qkv(const char *s)
{
    int y = 0, m = 0, d = 1, used = 0;
    bool ok = s && ((sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &used) == 3 && s[used] == 0) ||
                    (used = 0, d = 1, sscanf(s, "%4d-%2d%n", &y, &m, &used) == 2 && s[used] == 0));
    if (!ok || m < 1 || m > 12 || d < 1 || d > 31)
        return false;
    char iso[16];
    snprintf(iso, sizeof iso, "%04d-%02d-%02d", y, m, d);
    return strcmp(iso, PLAN_MEGATRON_GQA_SPLIT_FROM) >= 0 && strcmp(iso, PLAN_MEGATRON_GQA_SPLIT_UNTIL) < 0;
}
