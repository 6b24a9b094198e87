/* tests/check_groups.c — param groups a user builds (plan/groups.h: the group file, a probe's
 * recorded names), and what `validate --probe` does with real runs of them: three groups, gradient
 * accumulation 2, and two runs' audits at different ratios side by side.
 *
 * Expected values come from real DeepSpeed 0.19.8 (tests/deepspeed/cells/, tests/deepspeed/audit/:
 * scripts/ds_oracle.py cells on the CPU accelerator): the parameter names of each param group and
 * every sub-group's size are what DeepSpeed's ZeRO-3 optimizer held, the full fp32 digests are
 * DeepSpeed's own; the small group-file cases are worked by hand on gpt2-tiny's 28 tensors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

#include "plan/groups.h"
#include "plan/plan.h"
#include "tests/util.h"
#include "validation/audit.h"
#include "validation/probe.h"

/* tu_src_path's buffers rotate (four): paths kept across calls are copied. */
static const char *gpt2_tiny(void)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s", tu_src_path("tests/deepspeed/models/gpt2-tiny.json"));
    return path;
}

static void load_tiny(struct plan_model *m)
{
    struct plan_model_opts o = {.tp = 1, .pp = 1};
    struct rl_err e = {0};
    ck_assert_msg(plan_model_load(m, tu_catalog(), gpt2_tiny(), &o, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(m->n_tensors, 28);   /* 2 embeddings, 12 per block x 2, ln_f weight and bias (lm_head tied) */
}

/* Applies text as a group file to gpt2-tiny: 0, or the error's code with its message in msg. */
static int apply_text(const char *text, struct plan_model *m, char *msg, size_t n)
{
    struct plan_group_spec gs;
    struct rl_err e = {0};
    int rc = plan_group_spec_parse(text, strlen(text), "g.txt", &gs, &e);
    if (!rc) {
        rc = plan_model_group_spec(m, &gs, &e);
        plan_group_spec_free(&gs);
    }
    snprintf(msg, n, "%s", rc ? e.msg : "");
    return rc;
}

static int group_of(const struct plan_model *m, const char *name)
{
    for (int t = 0; t < m->n_tensors; t++)
        if (strcmp(m->tensors[t].name, name) == 0)
            return m->tensors[t].group;
    ck_abort_msg("no tensor %s", name);
    return -1;
}

START_TEST(group_file_is_the_runs_grouping)
{
    /* tests/deepspeed/groups/three.groups, written for scripts/ds_oracle.py's "three" layout, gives
     * every tensor the param group DeepSpeed held it in (the probe's param_groups names), and the
     * plan's sub-groups are DeepSpeed's, size for size. */
    struct plan_model m;
    load_tiny(&m);
    struct plan_group_spec gs;
    struct rl_err e = {0};
    ck_assert_msg(plan_group_spec_read(tu_src_path("tests/deepspeed/groups/three.groups"), &gs, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(gs.n_groups, 3);
    ck_assert_int_eq(gs.rest_group, 1);
    ck_assert_str_eq(gs.label[2], "mlp_lr");
    ck_assert_msg(plan_model_group_spec(&m, &gs, &e) == 0, "%s", e.msg);
    plan_group_spec_free(&gs);
    ck_assert_int_eq(m.n_groups, 3);
    ck_assert_int_eq(m.group_rule, PLAN_GROUPS_LIST);

    struct val_probe pr;
    ck_assert_msg(val_probe_read(tu_src_path("tests/deepspeed/cells/0.19.8-np1-three.probe.json"), &pr, &e) == 0,
                  "%s", e.msg);
    ck_assert_int_eq(pr.groups.n_groups, 3);
    int named = 0;
    for (int k = 0; k < pr.groups.n_pat; k++, named++)
        ck_assert_msg(group_of(&m, pr.groups.pat[k].text) == pr.groups.pat[k].group, "%s: file group %d, DeepSpeed's %d",
                      pr.groups.pat[k].text, group_of(&m, pr.groups.pat[k].text), pr.groups.pat[k].group);
    ck_assert_int_eq(named, m.n_tensors);

    struct plan_zero z = tu_zero_cpu_offload(0.5, pr.config.sub_group_size);
    z.ds_version = pr.config.version;
    struct plan_layout l = {.tp = 1, .pp = 1, .dp = 1};
    struct plan p;
    ck_assert_msg(plan_build(&p, &m, &l, &z, NULL, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(p.n_subgroups, pr.n_sub);
    for (int i = 0; i < pr.n_sub; i++) {
        ck_assert_int_eq(p.subgroups[i].numel, pr.sub[i].numel);
        ck_assert_int_eq(p.subgroups[i].group, pr.sub[i].param_group);
    }
    plan_free(&p);
    val_probe_free(&pr);
    plan_model_free(&m);
}
END_TEST

START_TEST(hf_rule_is_deepspeeds_grouping)
{
    /* The accumulation cell ran HF Trainer's two groups: the plan's hf-two rule puts every tensor in
     * the group DeepSpeed held it in (the probe's names, DeepSpeed's packing order). */
    struct plan_model m;
    load_tiny(&m);
    plan_model_group(&m, PLAN_GROUPS_HF_TWO, false);
    int rule[64];
    for (int t = 0; t < m.n_tensors; t++)
        rule[t] = m.tensors[t].group;
    struct val_probe pr;
    struct rl_err e = {0};
    ck_assert_msg(val_probe_read(tu_src_path("tests/deepspeed/cells/0.19.8-np1-gas2.probe.json"), &pr, &e) == 0, "%s",
                  e.msg);
    ck_assert_int_eq(pr.groups.n_groups, 2);
    ck_assert_int_eq(pr.groups.n_pat, m.n_tensors);
    ck_assert_msg(plan_model_group_spec(&m, &pr.groups, &e) == 0, "%s", e.msg);
    for (int t = 0; t < m.n_tensors; t++)
        ck_assert_msg(m.tensors[t].group == rule[t], "%s: DeepSpeed's group %d, hf-two's %d", m.tensors[t].name,
                      m.tensors[t].group, rule[t]);
    val_probe_free(&pr);
    plan_model_free(&m);
}
END_TEST

START_TEST(recorded_order_is_packed)
{
    /* A probe lists each group's names in the order DeepSpeed packed them; a group built out of
     * module order (here group 0 of gpt2-tiny's hf-two grouping reversed, worked by hand) is
     * packed in that order, and a group file (unordered) keeps module order. */
    struct plan_model m;
    load_tiny(&m);
    plan_model_group(&m, PLAN_GROUPS_HF_TWO, false);
    struct plan_group_spec gs;
    plan_group_spec_init(&gs, "--probe p.json");
    gs.ordered = true;
    struct rl_err e = {0};
    int n0 = 0;
    for (int t = m.n_tensors - 1; t >= 0; t--)
        if (m.tensors[t].group == 0) {
            ck_assert_int_eq(plan_group_spec_add_name(&gs, 0, m.tensors[t].name, &e), 0);
            n0++;
        }
    for (int t = 0; t < m.n_tensors; t++)
        if (m.tensors[t].group == 1)
            ck_assert_int_eq(plan_group_spec_add_name(&gs, 1, m.tensors[t].name, &e), 0);
    ck_assert_msg(plan_model_group_spec(&m, &gs, &e) == 0, "%s", e.msg);
    struct plan_zero z = tu_zero_cpu_offload(0.5, 1000000000);
    struct plan_layout l = {.tp = 1, .pp = 1, .dp = 1};
    struct plan p;
    ck_assert_msg(plan_build(&p, &m, &l, &z, NULL, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(n0, 10);   /* wte, wpe, and per block c_attn, attn c_proj, c_fc, mlp c_proj weights */
    for (int i = 0; i < n0; i++)
        ck_assert_str_eq(m.tensors[p.order[i]].name, gs.pat[i].text);
    ck_assert_str_eq(m.tensors[p.order[0]].name, "transformer.h.1.mlp.c_proj.weight");
    ck_assert_str_eq(m.tensors[p.order[n0]].name, "transformer.h.0.ln_1.weight");   /* group 1: module order */
    plan_free(&p);
    gs.ordered = false;
    ck_assert_int_eq(plan_model_group_spec(&m, &gs, &e), 0);
    ck_assert_int_eq(plan_build(&p, &m, &l, &z, NULL, &e), 0);
    ck_assert_str_eq(m.tensors[p.order[0]].name, "transformer.wte.weight");
    plan_free(&p);
    plan_group_spec_free(&gs);
    plan_model_free(&m);
}
END_TEST

START_TEST(recorded_order_on_a_real_run)
{
    /* DeepSpeed 0.19.8 packed a group built out of module order (the 1-D parameters, then wpe,
     * then wte; sub_group_size 4096) as 5888 + 32768 elements: the plan from the probe's ordered
     * names gives DeepSpeed's ten sub-groups, module order (the same groups unordered) does not. */
    struct val_probe pr;
    struct rl_err e = {0};
    ck_assert_msg(val_probe_read(tu_src_path("tests/deepspeed/cells/0.19.8-np1-reordered.probe.json"), &pr, &e) == 0,
                  "%s", e.msg);
    ck_assert_int_eq(pr.n_sub, 10);
    ck_assert_int_eq(pr.sub[0].numel, 5888);
    ck_assert_int_eq(pr.sub[1].numel, 32768);
    for (int ordered = 1; ordered >= 0; ordered--) {
        struct plan_model m;
        load_tiny(&m);
        pr.groups.ordered = ordered;
        ck_assert_msg(plan_model_group_spec(&m, &pr.groups, &e) == 0, "%s", e.msg);
        struct plan_zero z = tu_zero_cpu_offload(0.5, pr.config.sub_group_size);
        z.ds_version = pr.config.version;
        struct plan_layout l = {.tp = 1, .pp = 1, .dp = 1};
        struct plan p;
        ck_assert_msg(plan_build(&p, &m, &l, &z, NULL, &e) == 0, "%s", e.msg);
        bool same = p.n_subgroups == pr.n_sub;
        for (int i = 0; same && i < pr.n_sub; i++)
            same = p.subgroups[i].numel == pr.sub[i].numel && p.subgroups[i].group == pr.sub[i].param_group;
        ck_assert_msg(same == (ordered == 1), "ordered %d: the plan's sub-groups %s DeepSpeed's (first %lld)", ordered,
                      same ? "equal" : "differ from", (long long)p.subgroups[0].numel);
        plan_free(&p);
        plan_model_free(&m);
    }
    val_probe_free(&pr);
}
END_TEST

START_TEST(group_file_rules)
{
    struct plan_model m;
    load_tiny(&m);
    char msg[RL_ERR_MSG_MAX];
    /* An exact name beats a pattern; '*' takes the rest; CRLF and comments are fine. */
    ck_assert_msg(apply_text("# two groups\r\nemb: transformer.wte.weight\r\nrest: *  # the others\r\n"
                             "b: transformer.h.?.*.bias\r\n", &m, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(m.n_groups, 3);
    ck_assert_int_eq(group_of(&m, "transformer.wte.weight"), 0);
    ck_assert_int_eq(group_of(&m, "transformer.wpe.weight"), 1);
    ck_assert_int_eq(group_of(&m, "transformer.h.1.mlp.c_fc.bias"), 2);
    ck_assert_int_eq(group_of(&m, "transformer.ln_f.bias"), 1);   /* not transformer.h.N */
    /* An exact name in one group and a pattern of another: the name wins. */
    ck_assert_msg(apply_text("*.bias\ntransformer.h.0.ln_1.bias *.weight\n", &m, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(group_of(&m, "transformer.h.0.ln_1.bias"), 1);
    ck_assert_int_eq(group_of(&m, "transformer.h.1.ln_1.bias"), 0);

    static const struct {
        const char *text;     /* the file */
        const char *needle;   /* in its one-line error */
    } bad[] = {
        {"*.weight\n*ln_*\n", "'transformer.h.0.ln_1.weight' is matched by group 0 (line 1) ('*.weight') and by group 1 "
                              "(line 2) ('*ln_*')"},
        {"*.weight\n", "parameter 'transformer.h.0.ln_1.bias' of model gpt2-tiny.json is in no group"},
        {"a: *\nb: *\n", "line 2: a second '*' group (line 1 has one)"},
        {"a: * *.bias\n", "line 1: '*' (every parameter no other group names) stands alone"},
        {"*\nlm_head.weight\n", "group 1 (line 2) names 'lm_head.weight', which model gpt2-tiny.json does not have"},
        {"*\nx: *.nothing\n", "group 1 ('x', line 2) takes no parameter"},
        {"a.b: *\n", "label 'a.b': byte '.' is not allowed"},
        {"a:\n*\n", "line 1: group 'a' lists no parameter name or pattern"},
        {": *\n", "line 1: an empty label"},
        {"*\nx *.bi\xc3\xa4s\n", "line 2: byte 0xc3 at column 7"},
        {"# nothing\n\n", "no group; a line per param group"},
        {"*\nw: transformer.wte.weight transformer:x\n", "line 2: 'transformer:x': a label"},
        {"*\ntransformer.wte.weight\ntransformer.wte.weight *.bias\n",
         "'transformer.wte.weight' is named by group 1 (line 2) and by group 2 (line 3)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int groups_before = m.n_groups;
        ck_assert_msg(apply_text(bad[i].text, &m, msg, sizeof msg) == RL_EINVAL, "case %zu accepted", i);
        ck_assert_msg(strstr(msg, bad[i].needle), "case %zu: '%s' lacks '%s'", i, msg, bad[i].needle);
        ck_assert_msg(strstr(msg, "g.txt"), "case %zu: '%s' does not name the file", i, msg);
        ck_assert_ptr_null(strchr(msg, '\n'));
        ck_assert_int_eq(m.n_groups, groups_before);   /* the model is left as it was */
    }
    /* The bounds: PLAN_MAX_GROUPS groups and a name of PLAN_NAME_MAX - 1 bytes are the most. */
    size_t cap = (size_t)(PLAN_MAX_GROUPS + 2) * 16 + 4 * PLAN_NAME_MAX;
    char *big = calloc(1, cap);
    for (int g = 0; g <= PLAN_MAX_GROUPS; g++)
        snprintf(big + strlen(big), cap - strlen(big), "g%d: x%d\n", g, g);
    ck_assert_int_eq(apply_text(big, &m, msg, sizeof msg), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "line 65: a group beyond the 64th"));
    memset(big, 'a', PLAN_NAME_MAX);
    big[PLAN_NAME_MAX] = '\0';
    ck_assert_int_eq(apply_text(big, &m, msg, sizeof msg), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "a name or pattern of 128 bytes; allowed 1..127"));
    free(big);
    plan_model_free(&m);
}
END_TEST

START_TEST(group_file_on_the_command_line)
{
    /* plan --param-groups FILE: the file's groups in the header; a bad file or a name that is
     * neither a rule nor a file is one line and exit 2. */
    struct tu_run r;
    tu_ratiolab(&r, "plan --model %s --gpus 1 --tp 1 --ratio 0.5 --sub-group-size 32768 --param-groups %s", gpt2_tiny(),
                tu_src_path("tests/deepspeed/groups/three.groups"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "in 3 param groups (listed in "));
    ck_assert_ptr_nonnull(strstr(r.out, "5 sub-groups"));
    tu_run_free(&r);
    tu_write("bad.groups", "decay: *\nno_decay: *\n");
    tu_ratiolab(&r, "plan --model %s --gpus 1 --tp 1 --param-groups bad.groups", gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--param-groups: bad.groups: line 2: a second '*' group"));
    ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
    tu_run_free(&r);
    tu_ratiolab(&r, "plan --model %s --gpus 1 --tp 1 --param-groups hff", gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "'hff' is neither a rule (auto, megatron"));
    ck_assert_ptr_nonnull(strstr(r.err, "nor a group file"));
    tu_run_free(&r);
}
END_TEST

START_TEST(validate_three_groups)
{
    /* The recorded three-group cell (1 and 2 ranks): the layout comes from the probe, and every
     * check passes; a --param-groups that groups otherwise is refused naming both counts; the same
     * probe without its names fails the sub-groups check, saying the run had 3 groups. */
    struct tu_run r;
    for (int n = 1; n <= 2; n++) {   /* at 2 ranks with the same grouping as a file too */
        tu_ratiolab(&r, "validate --probe %s --model %s%s%s",
                    tu_src_path(n == 1 ? "tests/deepspeed/cells/0.19.8-np1-three.probe.json"
                                       : "tests/deepspeed/cells/0.19.8-np2-three.probe.json"), gpt2_tiny(),
                    n == 1 ? "" : " --param-groups ", n == 1 ? "" : tu_src_path("tests/deepspeed/groups/three.groups"));
        ck_assert_msg(r.status == 0, "%d ranks: exit %d: %s%s", n, r.status, r.out, r.err);
        ck_assert_ptr_nonnull(strstr(r.out, "groups     3 param groups, as the probe recorded them"));
        ck_assert_ptr_nonnull(strstr(r.out, "2: 4 parameters, 65536 elements, lr 0.0005, weight decay 0.01"));
        ck_assert_ptr_nonnull(strstr(r.out, "subgroups      PASS  5 sub-groups"));
        tu_run_free(&r);
    }
    char p1[4200];
    snprintf(p1, sizeof p1, "%s", tu_src_path("tests/deepspeed/cells/0.19.8-np1-three.probe.json"));
    tu_ratiolab(&r, "validate --probe %s --model %s --param-groups hf", p1, gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--param-groups hf-two: 2 param groups, the run's probe records 3"));
    tu_run_free(&r);
    /* Without the names (a probe from before they were recorded). */
    json_error_t je;
    json_t *doc = json_load_file(p1, 0, &je);
    ck_assert_ptr_nonnull(doc);
    json_object_del(doc, "param_groups");
    ck_assert_int_eq(json_dump_file(doc, tu_path("old.json"), 0), 0);
    json_decref(doc);
    tu_ratiolab(&r, "validate --probe old.json --model %s --param-groups hf", gpt2_tiny());
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "subgroups      FAIL  sub-group 1: DeepSpeed 5888 elements in param group 0"));
    ck_assert_ptr_nonnull(strstr(r.out, "(the run has 3 param groups, the plan 2:"));
    tu_run_free(&r);
}
END_TEST

START_TEST(validate_accumulation)
{
    /* Accumulation 2: 3 optimizer steps of 2 micro-steps, the prediction is predict's with
     * --grad-accum 2 (not 1) for the same run, and a --grad-accum that says otherwise is refused. */
    char pj[4200];
    snprintf(pj, sizeof pj, "%s", tu_src_path("tests/deepspeed/cells/0.19.8-np1-gas2.probe.json"));
    struct tu_run r;
    tu_ratiolab(&r, "validate --probe %s --model %s --report acc.json", pj, gpt2_tiny());
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "steps      3 optimizer steps of 2 micro-steps each (gradient_accumulation_steps "
                                        "2: 6 engine.step() calls, micro-batch 1)"));
    tu_run_free(&r);
    char *doc = tu_slurp("acc.json");
    json_error_t je;
    json_t *v = json_loads(doc, 0, &je);
    ck_assert_ptr_nonnull(v);
    long long got = json_integer_value(json_object_get(v, "predicted_step_ns"));
    ck_assert_int_eq(json_integer_value(json_object_get(v, "gradient_accumulation_steps")), 2);
    json_decref(v);
    free(doc);
    /* predict's step for the same run with its accumulation (a 1-micro-batch step, what the probe
     * mode predicted before, is 1136977 ns here: shorter) */
    json_t *p = tu_ratiolab_json("predict --json --model %s --gpus 1 --tp 1 --deepspeed-version 0.19.8 --ratio 0.5 "
                                 "--sub-group-size 67584 --dtype bf16 --param-groups hf --micro-batch 1 --grad-accum 2",
                                 gpt2_tiny());
    long long want = json_integer_value(json_object_get(json_object_get(p, "prediction"), "step_ns"));
    json_decref(p);
    ck_assert_int_gt(want, 0);
    ck_assert_int_eq(got, want);
    tu_ratiolab(&r, "validate --probe %s --model %s --grad-accum 1", pj, gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--grad-accum: 1; the run (--probe) took 2 micro-steps per optimizer step"));
    tu_run_free(&r);
    /* The reader: more optimizer steps than the micro-steps allow is refused, naming both. */
    size_t len;
    char *text = tu_read(pj, &len);
    ck_assert_ptr_nonnull(text);
    char *at = strstr(text, "\"micro_steps\": 6");
    ck_assert_ptr_nonnull(at);
    at[15] = '5';
    struct val_probe pr;
    struct rl_err e = {0};
    ck_assert_int_eq(val_probe_parse(text, len, "p.json", &pr, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "micro_steps 5, optimizer_steps 3"));
    free(text);
}
END_TEST

/* validate --probe A --audit a --against-probe B --against-audit b [--report F]: stdout, exit. */
static void against(struct tu_run *r, const char *a, const char *b, const char *more)
{
    const char *d = tu_src();
    tu_ratiolab(r, "validate --probe %s/tests/deepspeed/audit/0.19.8-np1-%s.probe.json --audit "
                "%s/tests/deepspeed/audit/0.19.8-np1-%s.rla --against-probe %s/tests/deepspeed/audit/0.19.8-np1-%s.probe.json "
                "--against-audit %s/tests/deepspeed/audit/0.19.8-np1-%s.rla --model %s %s", d, a, d, a, d, b, d, b,
                gpt2_tiny(), more);
}

static const char *full_digest(const char *cell, char *out, size_t n)
{
    char rel[120];
    snprintf(rel, sizeof rel, "tests/deepspeed/audit/0.19.8-np1-%s.probe.json", cell);
    json_error_t je;
    json_t *d = json_load_file(tu_src_path(rel), 0, &je);
    ck_assert_ptr_nonnull(d);
    snprintf(out, n, "%s", json_string_value(json_object_get(json_object_get(d, "oracle"), "fp32_full_sha256")));
    json_decref(d);
    return out;
}

START_TEST(digests_explained)
{
    /* Three pairs of recorded runs of one cell, whose full fp32 digests (DeepSpeed's own) say
     * whether they differ: split 0.5 / 0.8 (sub-group 0 moves from torch AdamW to DeepSpeedCPUAdam),
     * stock 0.5 / 1 (every sub-group on DeepSpeedCPUAdam in both: the RNG), split 0.8 / stock 0.5
     * (every sub-group on the CPU in both, same digest). */
    char d1[80], d2[80];
    struct tu_run r;
    ck_assert_str_ne(full_digest("split-r0.5", d1, sizeof d1), full_digest("split-r0.8", d2, sizeof d2));
    against(&r, "split-r0.5", "split-r0.8", "--report rep.json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "rank 0 sub-group 0 (group 0, elements 0..95 of 69632): torch_adamw here, "
                                        "ds_cpu_adam there, exact in both"));
    ck_assert_ptr_nonnull(strstr(r.out, "sub-group 1 (group 0, elements 0..95 of 65536): ds_cpu_adam in both"));
    ck_assert_ptr_nonnull(strstr(r.out, "  explained  the ratio moved sub-groups between the optimizers (192 of 576"));
    ck_assert_ptr_null(strstr(r.out, "  note "));
    tu_run_free(&r);
    char *rep = tu_slurp("rep.json");
    json_error_t je;
    json_t *j = json_loads(rep, 0, &je);
    ck_assert_ptr_nonnull(j);
    json_t *x = json_object_get(j, "digest_explanation");
    ck_assert_str_eq(json_string_value(json_object_get(x, "verdict")), "optimizers");
    ck_assert_int_eq(json_array_size(json_object_get(x, "records")), 6);
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(j, "audit"), "sub_groups")), 6);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "PASS");
    json_decref(j);
    free(rep);

    ck_assert_str_ne(full_digest("stock-r0.5", d1, sizeof d1), full_digest("stock-r1", d2, sizeof d2));
    against(&r, "stock-r0.5", "stock-r1", "");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "  inputs     every sub-group was stepped by the same optimizer in both runs"));
    ck_assert_ptr_nonnull(strstr(r.out, "  note       one run has ratio 1, the other below 1"));
    tu_run_free(&r);

    /* The report through a symbolic link: the link stays, its target is replaced whole. */
    ck_assert_str_eq(full_digest("split-r0.8", d1, sizeof d1), full_digest("stock-r0.5", d2, sizeof d2));
    tu_write("target.json", "kept until replaced\n");
    ck_assert_int_eq(symlink("target.json", tu_path("link.json")), 0);
    against(&r, "split-r0.8", "stock-r0.5", "--report link.json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "  identical  the two runs' fp32 masters after step 3 are the same bits in all 576"));
    tu_run_free(&r);
    struct stat st;
    ck_assert_int_eq(lstat(tu_path("link.json"), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    rep = tu_slurp("target.json");
    ck_assert_ptr_nonnull(strstr(rep, "\"verdict\": \"identical\""));
    free(rep);

    /* Not one cell: the three-group run against a two-group one is refused (exit 2). */
    tu_ratiolab(&r, "validate --probe %s/tests/deepspeed/audit/0.19.8-np1-split-r0.5.probe.json --audit "
                "%s/tests/deepspeed/audit/0.19.8-np1-split-r0.5.rla --against-probe "
                "%s/tests/deepspeed/cells/0.19.8-np1-three.probe.json --against-audit "
                "%s/tests/deepspeed/cells/0.19.8-np1-three.rla --model %s", tu_src(), tu_src(), tu_src(), tu_src(),
                gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "not the same cell at another ratio"));
    tu_run_free(&r);
    /* A report into a folder that does not exist: exit 2 before any output. */
    against(&r, "split-r0.5", "split-r0.8", "--report nodir/rep.json");
    ck_assert_int_eq(r.status, 2);
    ck_assert_str_eq(r.out, "");
    tu_run_free(&r);
}
END_TEST

START_TEST(compare_names_what_is_not_exact)
{
    /* In process: the recorded split 0.5 audit against itself is identical; with one element of
     * the other copy's update changed it is "not exact" (its replay differs), and with another
     * sub-group size the pair is refused. */
    struct val_audit a, b;
    struct rl_err e = {0};
    const char *path = tu_src_path("tests/deepspeed/audit/0.19.8-np1-split-r0.5.rla");
    ck_assert_int_eq(val_audit_read(path, &a, &e), 0);
    ck_assert_int_eq(val_audit_read(path, &b, &e), 0);
    struct val_audit_finding *fa = calloc((size_t)a.n, sizeof *fa), *fb = calloc((size_t)b.n, sizeof *fb);
    ck_assert_int_eq(val_audit_replay(&a, fa, &e), 0);
    ck_assert_int_eq(val_audit_replay(&b, fb, &e), 0);
    struct val_audit_pair *pairs;
    enum val_audit_why why;
    ck_assert_int_eq(val_audit_compare(&a, fa, &b, fb, &pairs, &why, &e), 0);
    ck_assert_int_eq(why, VAL_WHY_IDENTICAL);
    free(pairs);
    float *after = (float *)b.rec[3].param_after;
    after[7] = nextafterf(after[7], INFINITY);
    ck_assert_int_eq(val_audit_replay(&b, fb, &e), 0);
    ck_assert_int_eq(val_audit_compare(&a, fa, &b, fb, &pairs, &why, &e), 0);
    ck_assert_int_eq(why, VAL_WHY_NOT_EXACT);
    ck_assert(!pairs[3].exact_b && pairs[3].exact_a);
    ck_assert_int_eq(pairs[3].n_diff_after, 1);
    ck_assert_int_eq(pairs[3].max_ulps_after, 1);
    ck_assert_int_eq(pairs[2].n_diff_after, 0);
    free(pairs);
    b.rec[1].numel--;
    ck_assert_int_eq(val_audit_compare(&a, fa, &b, fb, &pairs, &why, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "holds another size there: not two runs of one cell"));
    ck_assert_ptr_null(pairs);
    free(fa);
    free(fb);
    val_audit_free(&a);
    val_audit_free(&b);
}
END_TEST

Suite *groups_suite(void)
{
    Suite *s = suite_create("groups");
    TCase *tc = tcase_create("groups");
    tcase_add_test(tc, group_file_is_the_runs_grouping);
    tcase_add_test(tc, hf_rule_is_deepspeeds_grouping);
    tcase_add_test(tc, recorded_order_is_packed);
    tcase_add_test(tc, recorded_order_on_a_real_run);
    tcase_add_test(tc, group_file_rules);
    tcase_add_test(tc, group_file_on_the_command_line);
    tcase_add_test(tc, validate_three_groups);
    tcase_add_test(tc, validate_accumulation);
    tcase_add_test(tc, digests_explained);
    tcase_add_test(tc, compare_names_what_is_not_exact);
    suite_add_tcase(s, tc);
    return s;
}
