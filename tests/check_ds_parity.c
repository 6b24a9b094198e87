/* tests/check_ds_parity.c — ratiolab reads a DeepSpeed config as DeepSpeed does (the config-parity
 * corpus), and the readers of items 1-4 of issue 38 by hand.
 *
 * tests/deepspeed/parity/corpus.tsv lists the corpus (scripts/ds_parity_corpus.py); each
 * observed-<release>.tsv holds what that release's own config classes made of every config
 * (scripts/ds_parity.py, `make ds-parity`): accepted or refused, and the values that shape a plan.
 * Here ratiolab reads every config as that release (plan_zero_parse_release; in `hf` rows, the HF
 * Trainer's "auto" filled from the row's hidden size and precision flag), and each verdict and
 * value must equal DeepSpeed's, except the rows of differences.tsv, each a deliberate difference
 * with its reason, which must still differ (a listed difference that went away fails too). No
 * Python and no DeepSpeed are needed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "plan/ds_fix.h"
#include "plan/ds_hazards.h"
#include "plan/ds_keys.h"
#include "plan/json_edit.h"
#include "plan/json_text.h"
#include "plan/plan.h"
#include "tests/util.h"

/* The recorded releases. */
static const char *const releases[] = {"0.14.1", "0.19.8"};

/* The observed columns after id and verdict, in observed-*.tsv order. */
enum { C_STAGE, C_DEVICE, C_RATIO, C_PIN, C_SGS, C_RBS, C_PBS, C_PPT, C_MLP, C_DTYPE, C_PDEV, C_PPIN, C_MICRO, C_GA, N_COLS };
static const char *const col_names[N_COLS] = {
    "stage", "device", "ratio", "pin_memory", "sub_group_size", "reduce_bucket_size", "prefetch_bucket_size",
    "param_persistence_threshold", "max_live_parameters", "dtype", "param_device", "param_pin_memory", "micro_batch",
    "grad_accum",
};

/* <RATIOLAB_SRC>/tests/deepspeed/parity/<name> (one of 4 static buffers used in turn). */
static const char *parity_path(const char *name)
{
    static char buf[4][512];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/tests/deepspeed/parity/%s", tu_src(), name);
    return b;
}

/* Splits a tab-separated line in place into at most max fields; returns how many. */
static int split_tabs(char *line, char **f, int max)
{
    int n = 0;
    line[strcspn(line, "\n")] = 0;
    for (char *p = line; n < max;) {
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t)
            break;
        *t = 0;
        p = t + 1;
    }
    return n;
}

/* ratiolab's reading of one corpus config as release v, in the observed columns; returns whether
 * it is accepted (err: why not). */
static bool ratiolab_reads(const char *file, const char *mode, int64_t hidden, const char *flag, struct rl_version v,
                           char cols[N_COLS][32], char *err, size_t errn)
{
    char *text = tu_read(parity_path(file), NULL);
    ck_assert_msg(text, "%s: unreadable", file);
    struct plan_zero z;
    struct rl_err e = {0};
    int rc = plan_zero_parse_release(&z, text, file, v, &e);
    free(text);
    if (rc) {
        snprintf(err, errn, "%s", e.msg);
        return false;
    }
    if (!strcmp(mode, "hf")) {   /* the Trainer: precision from its flag, buckets from the model */
        plan_zero_resolve_hf_auto(&z, hidden);
        plan_zero_resolve_hf_dtype(&z, !strcmp(flag, "bf16") ? PLAN_BF16 : !strcmp(flag, "fp16") ? PLAN_FP16 : PLAN_FP32);
    }
    plan_zero_resolve_pin(&z);
    if (plan_zero_resolve_batch(&z, 1, &e)) {   /* one rank, as DeepSpeedConfig without a process group */
        snprintf(err, errn, "%s", e.msg);
        return false;
    }
    const struct plan_hazard *hz[PLAN_HAZARDS_MAX];
    int n = plan_ds_hazards(&z, hz, PLAN_HAZARDS_MAX);
    for (int i = 0; i < n; i++)
        if (!strcmp(hz[i]->id, "stage-assert")) {   /* offload_ratio_check, at config time */
            snprintf(err, errn, "hazard stage-assert");
            return false;
        }
    static const char *const dev[] = {[PLAN_OFFLOAD_NONE] = "none", [PLAN_OFFLOAD_CPU] = "cpu",
                                      [PLAN_OFFLOAD_NVME] = "nvme"};
    snprintf(cols[C_STAGE], 32, "%d", z.stage);
    snprintf(cols[C_DEVICE], 32, "%s", dev[z.offload]);
    snprintf(cols[C_RATIO], 32, "%.17g", z.ratio);
    snprintf(cols[C_PIN], 32, "%d", z.pin_memory);
    snprintf(cols[C_SGS], 32, "%lld", (long long)z.sub_group_size);
    snprintf(cols[C_RBS], 32, "%lld", (long long)z.reduce_bucket_size);
    snprintf(cols[C_PBS], 32, "%lld", (long long)z.prefetch_bucket_size);
    snprintf(cols[C_PPT], 32, "%lld", (long long)z.param_persistence_threshold);
    snprintf(cols[C_MLP], 32, "%lld", (long long)z.max_live_parameters);
    snprintf(cols[C_DTYPE], 32, "%s", z.dtype == PLAN_BF16 ? "bf16" : z.dtype == PLAN_FP16 ? "fp16" : "fp32");
    snprintf(cols[C_PDEV], 32, "%s", dev[z.offload_param]);
    snprintf(cols[C_PPIN], 32, "%d", plan_zero_param_pin(&z));
    snprintf(cols[C_MICRO], 32, "%lld", (long long)z.micro_batch);
    snprintf(cols[C_GA], 32, "%lld", (long long)z.grad_accum);
    return true;
}

/* The first place ratiolab and the observation differ ("" when they agree): "verdict" or a column. */
static void compare(char **obs, bool ok, char cols[N_COLS][32], char *what, size_t n)
{
    what[0] = 0;
    bool ds_ok = !strcmp(obs[1], "accept");
    if (ds_ok != ok) {
        snprintf(what, n, "verdict");
        return;
    }
    for (int c = 0; ok && c < N_COLS; c++) {
        bool same = !strcmp(obs[2 + c], cols[c]);
        if (c == C_RATIO)
            same = strtod(obs[2 + c], NULL) == strtod(cols[c], NULL);
        if (!same) {
            snprintf(what, n, "%s", col_names[c]);
            return;
        }
    }
}

/* One deliberate difference: a corpus id, the release it holds for ("*": both), the first field
 * that differs, and the reason. */
struct difference {
    char id[8];          /* the corpus id */
    char release[16];    /* "0.14.1", "0.19.8" or "*" */
    char field[32];      /* "verdict" or a column */
    bool seen;           /* it was found differing */
};

START_TEST(corpus_agrees_with_every_recorded_release)
{
    static struct difference diffs[128];
    int n_diffs = 0;
    char *dt = tu_read(parity_path("differences.tsv"), NULL);
    ck_assert_msg(dt, "tests/deepspeed/parity/differences.tsv: unreadable");
    for (char *line = strtok(dt, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        char copy[512], *f[4];
        snprintf(copy, sizeof copy, "%s", line);
        ck_assert_msg(split_tabs(copy, f, 4) == 4 && n_diffs < 128, "differences.tsv: bad line %s", line);
        struct difference *d = &diffs[n_diffs++];
        snprintf(d->id, sizeof d->id, "%s", f[0]);
        snprintf(d->release, sizeof d->release, "%s", f[1]);
        snprintf(d->field, sizeof d->field, "%s", f[2]);
    }
    free(dt);
    char *corpus = tu_read(parity_path("corpus.tsv"), NULL);
    ck_assert_msg(corpus, "tests/deepspeed/parity/corpus.tsv: unreadable");
    int rows = 0, agree = 0, accepted = 0, refused = 0, failures = 0;
    static char report[65536];
    report[0] = 0;
    for (size_t r = 0; r < RL_COUNT(releases); r++) {
        char obs_path[96];
        snprintf(obs_path, sizeof obs_path, "observed-%s.tsv", releases[r]);
        char *obs_text = tu_read(parity_path(obs_path), NULL);
        ck_assert_msg(obs_text, "%s: unreadable", obs_path);
        struct rl_version v;
        ck_assert_int_eq(rl_parse_version("release", releases[r], &v, NULL), 0);
        char *cp = strdup(corpus), *save_c = NULL, *save_o = NULL;
        char *cl = strtok_r(cp, "\n", &save_c), *ol = strtok_r(obs_text, "\n", &save_o);
        for (; cl && cl[0] == '#'; cl = strtok_r(NULL, "\n", &save_c))
            ;
        for (; ol && ol[0] == '#'; ol = strtok_r(NULL, "\n", &save_o))
            ;
        for (; cl; cl = strtok_r(NULL, "\n", &save_c), ol = strtok_r(NULL, "\n", &save_o)) {
            char *c[6], *o[16];
            ck_assert_msg(split_tabs(cl, c, 6) == 6, "corpus.tsv: bad line");
            ck_assert_msg(ol && split_tabs(ol, o, 16) == 16 && !strcmp(o[0], c[0]), "%s: no line for id %s", obs_path,
                          c[0]);
            char cols[N_COLS][32], err[RL_ERR_MSG_MAX], what[32];
            bool ok = ratiolab_reads(c[1], c[2], atoll(c[3]), c[4], v, cols, err, sizeof err);
            compare(o, ok, cols, what, sizeof what);
            rows++;
            accepted += ok;
            refused += !ok;
            struct difference *d = NULL;
            for (int i = 0; i < n_diffs && !d; i++)
                if (!strcmp(diffs[i].id, c[0]) && (!strcmp(diffs[i].release, "*") || !strcmp(diffs[i].release, releases[r])))
                    d = &diffs[i];
            if (!what[0] && !d) {
                agree++;
                continue;
            }
            if (d && !strcmp(d->field, what)) {
                d->seen = true;
                continue;
            }
            failures++;
            size_t used = strlen(report);
            if (used < sizeof report - 1200)
            {
                int col = -1;
                for (int k = 0; k < N_COLS; k++)
                    if (!strcmp(what, col_names[k]))
                        col = k;
                snprintf(report + used, sizeof report - used, "\n  %s %s (%s): %s differs (DeepSpeed %s %s %s; ratiolab %s %s)%s",
                         releases[r], c[0], c[1], what[0] ? what : "nothing", o[1], col >= 0 ? o[2 + col] : "", o[15],
                         ok ? "accepts" : "refuses:", ok ? (col >= 0 ? cols[col] : "") : err,
                         d ? " [listed as a different field]" : "");
            }
        }
        ck_assert_msg(!ol, "%s: more lines than the corpus", obs_path);
        free(cp);
        free(obs_text);
    }
    free(corpus);
    for (int i = 0; i < n_diffs; i++)
        if (!diffs[i].seen) {
            failures++;
            size_t used = strlen(report);
            snprintf(report + used, sizeof report - used, "\n  %s %s: listed in differences.tsv, not found", diffs[i].id,
                     diffs[i].release);
        }
    printf("ds_parity: %d readings (%d configs x %zu releases), %d agree, %d deliberate differences; ratiolab "
           "accepted %d, refused %d\n", rows, rows / (int)RL_COUNT(releases), RL_COUNT(releases), agree, n_diffs, accepted,
           refused);
    ck_assert_msg(rows >= 400, "only %d readings", rows);
    if (failures)
        printf("ds_parity: disagreements with DeepSpeed:%s\n", report);
    ck_assert_msg(failures == 0, "%d disagreements with DeepSpeed (listed above)", failures);
}
END_TEST


/* ---- items 1-4 of issue 38, by hand ---- */

static const struct rl_version v0124 = {0, 12, 4}, v0141 = {0, 14, 1}, v0198 = {0, 19, 8};

/* Parses text as release v; returns the code, the message in e. */
static int parse_as(struct plan_zero *z, const char *text, struct rl_version v, struct rl_err *e)
{
    memset(e, 0, sizeof *e);
    return plan_zero_parse_release(z, text, "cfg.json", v, e);
}

/* Whether one of z's notes holds needle. */
static bool has_note(const struct plan_zero *z, const char *needle)
{
    for (int i = 0; i < z->n_notes; i++)
        if (strstr(z->notes[i], needle))
            return true;
    return false;
}

START_TEST(misspelled_key_refused_where_deepspeed_forbids_it)
{
    struct plan_zero z;
    struct rl_err e;
    const char *ratoi = "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", \"ratoi\": 0.3}}}";
    /* offload_config.py's models forbid extra fields in every release (config_utils.py extra="forbid"). */
    const struct rl_version vs[] = {v0124, v0141, v0198};
    for (size_t i = 0; i < RL_COUNT(vs); i++) {
        ck_assert_int_eq(parse_as(&z, ratoi, vs[i], &e), RL_EINVAL);
        ck_assert_msg(strstr(e.msg, "zero_optimization.offload_optimizer.ratoi: unknown key") &&
                      strstr(e.msg, "did you mean \"ratio\"?"), "%s", e.msg);
    }
    /* "auto" is dropped before validation, whatever the key (DeepSpeedConfigModel.__init__). */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\", \"ratoi\": \"auto\"}}}",
                              v0198, &e), 0);
    /* The same level too high, and in the zero block. */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": 3, \"ratio\": 0.3}}", v0124, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "zero_optimization.ratio: unknown key"), "%s", e.msg);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stag\": 3}}", v0124, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "did you mean \"stage\"?"), "%s", e.msg);
    /* fp16 became a pydantic model in 0.17.1 (precision_config.py): a note before, refused after. */
    const char *enabeld = "{\"fp16\": {\"enabeld\": true}}";
    ck_assert_int_eq(parse_as(&z, enabeld, v0141, &e), 0);
    ck_assert_msg(has_note(&z, "fp16.enabeld: not a key DeepSpeed reads there (ignored); did you mean \"enabled\"?"),
                  "%s", z.notes[0]);
    ck_assert_int_eq(z.dtype, PLAN_FP32);
    ck_assert_int_eq(parse_as(&z, enabeld, v0198, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "fp16.enabeld: unknown key; DeepSpeed 0.19.8 refuses"), "%s", e.msg);
    /* A key one release has and the other has not: MiCS left in 0.19.8, super_offload came in 0.18.0. */
    const char *mics = "{\"zero_optimization\": {\"stage\": 3, \"mics_shard_size\": 2}}";
    ck_assert_int_eq(parse_as(&z, mics, v0141, &e), 0);
    ck_assert_int_eq(parse_as(&z, mics, v0198, &e), RL_EINVAL);
    const char *sup = "{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\", \"super_offload\": false}}}";
    ck_assert_int_eq(parse_as(&z, sup, v0141, &e), RL_EINVAL);
    ck_assert_int_eq(parse_as(&z, sup, v0198, &e), 0);
    /* The top level ignores unknown keys: a note when one is close to a key DeepSpeed reads. */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimisation\": {\"stage\": 3}, \"my_note\": 1}", v0198, &e), 0);
    ck_assert(has_note(&z, "zero_optimisation: not a key DeepSpeed reads (ignored); did you mean \"zero_optimization\"?"));
    ck_assert(!has_note(&z, "my_note"));
    ck_assert_int_eq(z.stage, 0);
}
END_TEST

START_TEST(misspelled_key_fails_check_with_exit_2)
{
    /* The issue's CI gate: `check` on the misspelled ratio passed as ratio 1.0. */
    tu_write("ratoi.json", "{\"train_micro_batch_size_per_gpu\": 1, \"zero_optimization\": {\"stage\": 3, "
                           "\"offload_optimizer\": {\"device\": \"cpu\", \"ratoi\": 0.3}}, \"fp16\": {\"enabled\": true}}");
    struct tu_run r;
    tu_ratiolab(&r, "check --model gpt-2.7b --tp 8 --ds-config ratoi.json");
    ck_assert_msg(r.status == 2 && strstr(r.err, "did you mean \"ratio\"?"), "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(comments_and_trailing_commas_read_as_hjson_does)
{
    struct plan_zero plain, commented;
    struct rl_err e;
    ck_assert_int_eq(parse_as(&plain, "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", "
                                      "\"ratio\": 0.3}}, \"fp16\": {\"enabled\": true}}", v0124, &e), 0);
    const char *text = "// DeepSpeed config: the word after // is no placeholder\n"
                       "{\n"
                       "  # ZeRO-3\n"
                       "  \"zero_optimization\": {\n"
                       "    \"stage\": 3, /* the \"stage\" key, {braces} */\n"
                       "    \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.3,},  // trailing comma\n"
                       "  },\n"
                       "  \"fp16\": {\"enabled\": true},\n"
                       "}\n";
    ck_assert_msg(parse_as(&commented, text, v0124, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(commented.stage, 3);
    ck_assert_int_eq(commented.offload, PLAN_OFFLOAD_CPU);
    ck_assert(commented.ratio == plain.ratio && commented.dtype == PLAN_FP16);
    /* The blanked text keeps every offset. */
    char *relaxed;
    int n;
    ck_assert_int_eq(plan_json_relax(text, &relaxed, &n, &e), 0);
    ck_assert_uint_eq(strlen(relaxed), strlen(text));
    ck_assert_int_eq(n, 7);   /* 4 comments, 3 trailing commas */
    free(relaxed);
    /* A string holds // and # as text. */
    ck_assert_int_eq(parse_as(&commented, "{\"optimizer\": {\"type\": \"Adam//W#\"}}", v0124, &e), 0);
    ck_assert_str_eq(commented.optimizer_type, "Adam//W#");
    /* The rest of hjson, refused by name. */
    ck_assert_int_eq(parse_as(&commented, "{\"a\": 'x'}", v0124, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "single-quoted string"), "%s", e.msg);
    ck_assert_int_eq(parse_as(&commented, "{\n stage: 3\n}", v0124, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "the key stage is not quoted"), "%s", e.msg);
    ck_assert_int_eq(parse_as(&commented, "{\n \"a\": 1\n \"b\": 2\n}", v0124, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "line 3: a member without the comma before it"), "%s", e.msg);
    ck_assert_int_eq(parse_as(&commented, "{/* open\n \"a\": 1}", v0124, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "line 1: a /* comment that is never closed"), "%s", e.msg);
}
END_TEST

START_TEST(fix_keeps_the_users_comments)
{
    const char *text = "{\n"
                       "  // the 14B run\n"
                       "  \"zero_optimization\": {\n"
                       "    \"stage\": 3, # three\n"
                       "    \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.3,},\n"
                       "  },\n"
                       "}\n";
    struct plan_hazard_set hz = {0};
    char *out = NULL;
    struct rl_err e = {0};
    ck_assert_msg(plan_fix_text(text, &hz, 100000000, 0.25, &out, &e) == 0, "%s", e.msg);
    ck_assert_str_eq(out, "{\n"
                          "  // the 14B run\n"
                          "  \"zero_optimization\": {\n"
                          "    \"stage\": 3, # three\n"
                          "    \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.25,},\n"
                          "    \"sub_group_size\": 100000000,\n"
                          "  },\n"
                          "}\n");
    free(out);
}
END_TEST

START_TEST(numeric_strings_coerced_as_the_release_coerces_them)
{
    struct plan_zero z;
    struct rl_err e;
    /* float("0.3") (pydantic 1) and pydantic 2's float parsing: the same double as 0.3. */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", "
                                  "\"ratio\": \"0.3\"}}}", v0124, &e), 0);
    ck_assert(z.ratio == 0.3 && z.src_ratio == PLAN_SRC_CONFIG);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", "
                                  "\"ratio\": \" 1e-1 \"}}}", v0198, &e), 0);
    ck_assert(z.ratio == 0.1);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\", "
                                  "\"ratio\": \"half\"}}}", v0198, &e), RL_EINVAL);
    /* int("100_000_000") in both; "100000000.0" only in pydantic 2; 1.5e8 + 0.5 truncated by pydantic 1's int(). */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"sub_group_size\": \"100_000_000\"}}", v0141, &e), 0);
    ck_assert_int_eq(z.sub_group_size, 100000000);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"sub_group_size\": \"100000000.0\"}}", v0141, &e), RL_EINVAL);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"sub_group_size\": \"100000000.0\"}}", v0198, &e), 0);
    ck_assert_int_eq(z.sub_group_size, 100000000);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"sub_group_size\": 150000000.5}}", v0141, &e), 0);
    ck_assert_int_eq(z.sub_group_size, 150000000);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"sub_group_size\": 150000000.5}}", v0198, &e), RL_EINVAL);
    /* The stage is an enum: pydantic 1 looks "3" up as a string (no member), pydantic 2 parses it. */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": \"3\"}}", v0141, &e), RL_EINVAL);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": \"3\"}}", v0198, &e), 0);
    ck_assert_int_eq(z.stage, 3);
    /* Booleans: "yes", "off", 1 and 0 as pydantic's bool takes them; "maybe" refused. */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\", "
                                  "\"pin_memory\": \"yes\"}}}", v0124, &e), 0);
    ck_assert(z.pin_memory && z.src_pin_memory == PLAN_SRC_CONFIG);
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"offload_optimizer\": {\"device\": \"cpu\", "
                                  "\"pin_memory\": 0}}}", v0198, &e), 0);
    ck_assert(!z.pin_memory);
    /* fp16.enabled before 0.17.1 is read with dict.get: the string "false" is a true value there. */
    ck_assert_int_eq(parse_as(&z, "{\"fp16\": {\"enabled\": \"false\"}}", v0141, &e), 0);
    ck_assert_int_eq(z.dtype, PLAN_FP16);
    ck_assert(has_note(&z, "Python truth"));
    ck_assert_int_eq(parse_as(&z, "{\"fp16\": {\"enabled\": \"false\"}}", v0198, &e), 0);
    ck_assert_int_eq(z.dtype, PLAN_FP32);
}
END_TEST

START_TEST(hf_auto_buckets_resolved_from_the_model)
{
    struct plan_zero z;
    struct rl_err e;
    const char *cfg = "{\"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": \"auto\", "
                      "\"stage3_prefetch_bucket_size\": \"auto\", \"stage3_param_persistence_threshold\": \"auto\"}}";
    ck_assert_int_eq(parse_as(&z, cfg, v0198, &e), 0);
    ck_assert_int_eq(z.reduce_bucket_size, 500000000);   /* DeepSpeed's own defaults until the model is known */
    plan_zero_resolve_hf_auto(&z, 5120);                 /* Qwen2.5-14B's hidden_size */
    ck_assert_int_eq(z.reduce_bucket_size, 26214400);            /* 5120^2 */
    ck_assert_int_eq(z.prefetch_bucket_size, 23592960);          /* int(0.9 x 26214400) */
    ck_assert_int_eq(z.param_persistence_threshold, 51200);      /* 10 x 5120 */
    ck_assert(has_note(&z, "zero_optimization.reduce_bucket_size: \"auto\" resolved to 26214400 = hidden_size x "
                           "hidden_size (hidden_size 5120)"));
    /* Below stage 3 the integration fills the reduce bucket only (is_zero3()). */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": 2, \"reduce_bucket_size\": \"auto\", "
                                  "\"stage3_prefetch_bucket_size\": \"auto\"}}", v0198, &e), 0);
    plan_zero_resolve_hf_auto(&z, 5120);
    ck_assert_int_eq(z.reduce_bucket_size, 26214400);
    ck_assert_int_eq(z.prefetch_bucket_size, 50000000);
    /* A value the config gives stays. */
    ck_assert_int_eq(parse_as(&z, "{\"zero_optimization\": {\"stage\": 3, \"reduce_bucket_size\": 1000}}", v0198, &e), 0);
    plan_zero_resolve_hf_auto(&z, 5120);
    ck_assert_int_eq(z.reduce_bucket_size, 1000);
}
END_TEST

Suite *TU_SUITE(void)
{
    Suite *s = suite_create("ds_parity");
    TCase *t = tcase_create("corpus");
    tcase_add_test(t, corpus_agrees_with_every_recorded_release);
    suite_add_tcase(s, t);
    t = tcase_create("reading");
    tcase_add_test(t, misspelled_key_refused_where_deepspeed_forbids_it);
    tcase_add_test(t, misspelled_key_fails_check_with_exit_2);
    tcase_add_test(t, comments_and_trailing_commas_read_as_hjson_does);
    tcase_add_test(t, fix_keeps_the_users_comments);
    tcase_add_test(t, numeric_strings_coerced_as_the_release_coerces_them);
    tcase_add_test(t, hf_auto_buckets_resolved_from_the_model);
    suite_add_tcase(s, t);
    return s;
}
