/* tests/check_deepspeed.c — the plan against what real DeepSpeed did (the oracle), and the probe
 * and log-configuration readers of `validate --probe` / `validate --deepspeed-log`.
 *
 * tests/deepspeed/observed/<launch>.jsonl hold what `make ds-oracle` recorded: one ratiolab-probe
 * document per matrix cell (docs/json-probe.md), read by ratiolab_probe from live DeepSpeed
 * engines on the CPU accelerator (tests/deepspeed/README.md). ratiolab computed none of it: the
 * sub-group sizes, param groups and the sub-groups DeepSpeed assigned to "cpu" are DeepSpeed's.
 * Every cell is planned here from the same model config, param-group layout and ZeRO settings and
 * judged with val_probe_compare; every sub-group, placement, ratio and ledger check must pass.
 * No Python and no DeepSpeed are needed. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "plan/inputs.h"
#include "traces/dsconfig.h"
#include "tests/util.h"
#include "validation/ds_runs.h"
#include "validation/hparams.h"
#include "validation/probe.h"

/* What the oracle checks saw, to show they were not vacuous. */
struct seen {
    int cells;          /* probe lines judged */
    int split_old;      /* split-mode cells under the 0.12 rule with some but not every sub-group offloaded */
    int split_new;      /* the same under the 0.18 rule */
    int stock;          /* stock-mode cells */
    int rule_differs;   /* split cells where the other rule would have placed differently */
    int named;          /* cells whose probe named each group's parameters, held to the rule's grouping */
    int hp_cells;       /* cells whose hyperparameter record was judged */
    int hp_stale;       /* sub-groups found stepped with a stale lr (the scheduler-lr hazard) */
    int hp_wrong;       /* sub-groups of the deliberately wrong cells found */
    int edge_018;       /* 0.18-rule split cells at ratio 0.8 with N a multiple of 5 sub-groups */
    char releases[8][16]; /* the DeepSpeed releases seen */
    int n_releases;
    int worlds;         /* bit w: a cell of world size w seen */
};

/* The finding validation/hparams.c must make for sub-group g of a cell, from what the cell was
 * (its `oracle` block, written by the harness) and DeepSpeed's source: a schedule (DeepSpeed's
 * or a client one, the Trainer's included) moves the lr of the engine's param groups, which are
 * DeepSpeedCPUAdam's, while the backup optimizer's group 0 is a dict copied at initialisation
 * (stage3.py: `torch.optim.AdamW([backup_gpu_param], lr=self.optimizer.param_groups[0]["lr"],
 * ...)`; groups 1+ are added as the CPU optimizer's own dicts): so exactly the backup-optimizer
 * sub-groups of group 0 are stepped with the initial lr, 1e-3 (the cells' optimizer block and the
 * Trainer's learning_rate): the finding shows from the first step at which DeepSpeed's group 0
 * held another lr (`first_moved`, read from the record's engine side: step 1 where the schedule
 * sets its start at construction, step 2 for DeepSpeed 0.14.1's WarmupLR, which sets it at its
 * first step). */
static int first_moved;

static enum val_hp_kind hp_expected(json_t *o, const struct val_probe_subgroup *g, int *step)
{
    const char *sched = json_string_value(json_object_get(o, "scheduler"));
    const char *wrong = json_string_value(json_object_get(o, "wrong"));
    bool backup = strcmp(g->optimizer, "backup_optimizer") == 0;
    *step = 1;
    if (wrong && strstr(wrong, "backup optimizer, group 0"))
        return backup && g->param_group == 0 ? VAL_HP_HELD_OTHER : VAL_HP_OK;
    if (wrong && strstr(wrong, "cpu optimizer, group 1"))
        return !backup && g->param_group == 1 ? VAL_HP_HELD_OTHER : VAL_HP_OK;
    if (wrong && strstr(wrong, "skipped sub-group 2 at step 3")) {
        *step = 3;
        return g->index == 2 ? VAL_HP_NOT_STEPPED : VAL_HP_OK;
    }
    ck_assert_msg(!wrong, "unknown wrong cell: %s", wrong);
    if (sched && backup && g->param_group == 0 && first_moved > 0) {
        *step = first_moved;
        return VAL_HP_HELD_OTHER;
    }
    return VAL_HP_OK;
}

static void judge_hparams(const char *file, int line_no, const char *line, json_t *o, const struct val_probe *pr,
                          struct seen *seen)
{
    struct val_hparams h;
    struct rl_err e = {0};
    ck_assert_msg(val_hparams_parse(line, strlen(line), file, &h, &e) == 0, "%s:%d: %s", file, line_no, e.msg);
    if (!h.present) {
        val_hparams_free(&h);
        return;
    }
    struct val_hparams_result r;
    ck_assert_int_eq(val_hparams_check(pr, &h, &r, &e), 0);
    const char *cell = json_string_value(json_object_get(o, "cell"));
    first_moved = 0;
    for (int k = 0; k < h.n_steps && !first_moved && h.n_groups > 0; k++)
        if (h.engine[(size_t)k * (size_t)h.n_groups].lr != 1e-3)
            first_moved = k + 1;
    int bad = 0;
    for (int i = 0; i < pr->n_sub; i++) {
        int step;
        enum val_hp_kind want = hp_expected(o, &pr->sub[i], &step);
        ck_assert_msg(r.sub[i].kind == want, "%s (%s line %d, DeepSpeed %s): sub-group %d: hparams finding %s, "
                      "expected %s (%s)", cell, file, line_no, pr->ds_version_text, i, val_hp_kind_name(r.sub[i].kind),
                      val_hp_kind_name(want), r.detail);
        if (want == VAL_HP_OK)
            continue;
        bad++;
        ck_assert_int_eq(r.sub[i].step, step);
        if (want == VAL_HP_HELD_OTHER)
            ck_assert_str_eq(r.sub[i].field, "lr");
        if (json_string_value(json_object_get(o, "wrong")))
            seen->hp_wrong++;
        else
            seen->hp_stale++;
    }
    ck_assert_int_eq(r.status, bad ? VAL_FAIL : VAL_PASS);
    seen->hp_cells++;
    val_hparams_result_free(&r);
    val_hparams_free(&h);
}

static void judge(const char *file, int line_no, const char *line, struct seen *seen)
{
    json_error_t je;
    json_t *root = json_loads(line, 0, &je);
    ck_assert_msg(root, "%s:%d: %s", file, line_no, je.text);
    const char *kind = json_string_value(json_object_get(root, "kind"));
    if (!kind || strcmp(kind, "ratiolab-probe") != 0) {   /* the header line */
        json_decref(root);
        return;
    }
    json_t *o = json_object_get(root, "oracle");
    const char *model = json_string_value(json_object_get(o, "model"));
    const char *groups = json_string_value(json_object_get(o, "param_groups"));
    const char *mode = json_string_value(json_object_get(o, "mode"));
    const char *cell = json_string_value(json_object_get(o, "cell"));
    ck_assert_msg(model && groups && mode && cell, "%s:%d: oracle.{model,param_groups,mode,cell} missing", file, line_no);

    struct val_probe pr;
    struct rl_err e = {0};
    ck_assert_msg(val_probe_parse(line, strlen(line), file, &pr, &e) == 0, "%s:%d: %s", file, line_no, e.msg);

    char mpath[1024];
    snprintf(mpath, sizeof mpath, "%s/tests/deepspeed/models/%s", tu_src(), model);
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.model = mpath;
    in.catalog = tu_catalog();
    /* A layout the plan has a rule for is planned by the rule; a grouping of the user's own
     * ("three") by the names the probe recorded, as validate --probe does. */
    if (plan_group_rule_parse(groups, &in.groups, NULL) != 0) {
        ck_assert_msg(pr.groups.n_groups > 0, "%s: layout '%s' is not a rule and the probe names no groups", cell, groups);
        in.group_spec = &pr.groups;
    }
    struct plan_setup c;
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s: %s", cell, e.msg);
    if (!in.group_spec && pr.groups.n_groups > 0) {
        /* The rule's grouping, tensor by tensor, is the one DeepSpeed held (the probe's names). */
        int *rule = malloc((size_t)c.model.n_tensors * sizeof *rule);
        ck_assert_ptr_nonnull(rule);
        for (int t = 0; t < c.model.n_tensors; t++)
            rule[t] = c.model.tensors[t].group;
        int n_rule = c.model.n_groups;
        ck_assert_msg(plan_model_group_spec(&c.model, &pr.groups, &e) == 0, "%s: %s", cell, e.msg);
        ck_assert_msg(c.model.n_groups == n_rule, "%s: rule %s gives %d groups, DeepSpeed held %d", cell, groups, n_rule,
                      c.model.n_groups);
        for (int t = 0; t < c.model.n_tensors; t++)
            ck_assert_msg(rule[t] == c.model.tensors[t].group, "%s: %s: rule %s puts it in group %d, DeepSpeed held it in %d",
                          cell, c.model.tensors[t].name, groups, rule[t], c.model.tensors[t].group);
        free(rule);
        seen->named++;
    }
    ck_assert_msg(val_facts_apply(&pr.config, pr.dp, cell, &in, &c, &e) == 0, "%s: %s", cell, e.msg);
    struct plan p;
    ck_assert_msg(plan_setup_plan(&c, -1, &p, &e) == 0, "%s: %s", cell, e.msg);
    struct val_probe_opts opt = {.tol_bytes = 0, .tol_time_pct = 10, .predicted_step_ns = 0};
    struct val_probe_result r;
    val_probe_compare(&p, &pr, &opt, &r);
    for (int k = VAL_PROBE_SUBGROUPS; k <= VAL_PROBE_LEDGER; k++)
        ck_assert_msg(r.checks[k].status != VAL_FAIL, "%s (%s line %d, DeepSpeed %s): %s: %s", cell, file, line_no,
                      pr.ds_version_text, r.checks[k].name, r.checks[k].detail);
    seen->cells++;
    judge_hparams(file, line_no, line, o, &pr, seen);
    int k;
    for (k = 0; k < seen->n_releases && strcmp(seen->releases[k], pr.ds_version_text) != 0; k++)
        ;
    if (k == seen->n_releases && k < 8)
        snprintf(seen->releases[seen->n_releases++], sizeof seen->releases[0], "%s", pr.ds_version_text);
    if (pr.world_size < 31)
        seen->worlds |= 1 << pr.world_size;
    /* The 0.18 rule's floating-point edge: 1 - 0.8 is 0.19999999999999996 in double, so for N a
     * multiple of 5, int((1 - 0.8) x N) is N/5 - 1, not N/5 (N = 5: 0, every sub-group on the CPU;
     * N = 20: 3, 17 of 20). */
    if (p.policy == PLAN_POLICY_DS018 && p.n_subgroups % 5 == 0 && pr.config.ratio == 0.8 && strcmp(mode, "split") == 0) {
        ck_assert_int_eq(p.cpu_subgroups, p.n_subgroups - (p.n_subgroups / 5 - 1));
        seen->edge_018++;
    }
    if (strcmp(mode, "stock") == 0) {
        seen->stock++;
        ck_assert_msg(val_probe_stock_cpu(&pr), "%s: a stock-mode cell whose accelerator is '%s'", cell, pr.accelerator);
    } else if (p.cpu_subgroups > 0 && p.cpu_subgroups < p.n_subgroups) {
        if (p.policy == PLAN_POLICY_DS012)
            seen->split_old++;
        else
            seen->split_new++;
        /* Would the other rule have told these sub-groups apart? (First vs last.) */
        seen->rule_differs += p.subgroups[0].cpu_numel > 0 ? p.subgroups[p.n_subgroups - 1].cpu_numel == 0
                                                           : p.subgroups[p.n_subgroups - 1].cpu_numel > 0;
    }
    plan_free(&p);
    plan_setup_free(&c);
    val_probe_free(&pr);
    json_decref(root);
}

START_TEST(observed_placements_equal_the_plan)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/deepspeed/observed", tu_src());
    DIR *d = opendir(dir);
    ck_assert_msg(d, "%s: cannot open", dir);
    struct seen seen = {0};
    int files = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 7 || strcmp(de->d_name + l - 6, ".jsonl") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        char *text = tu_read(path, NULL);
        ck_assert_msg(text, "%s: cannot read", path);
        files++;
        int line_no = 0;
        for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl)
                *nl = 0;
            line_no++;
            if (*line)
                judge(de->d_name, line_no, line, &seen);
        }
        free(text);
    }
    closedir(d);
    /* Not vacuous: both rules, split cells that tell the rules apart, and the stock mode. */
    ck_assert_int_ge(files, 2);
    ck_assert_int_gt(seen.split_old, 0);
    ck_assert_int_gt(seen.split_new, 0);
    ck_assert_int_gt(seen.rule_differs, 0);
    ck_assert_int_gt(seen.stock, 0);
    /* Every pinned release, 1 to 3 ranks, the 0.18 rule's floating-point edge, and the
     * hyperparameter record: the stale lr of the schedules and the wrong cells found. */
    static const char *const want[] = {"0.14.1", "0.15.4", "0.16.9", "0.17.6", "0.18.9", "0.19.8"};
    for (size_t i = 0; i < RL_COUNT(want); i++) {
        int k;
        for (k = 0; k < seen.n_releases && strcmp(seen.releases[k], want[i]) != 0; k++)
            ;
        ck_assert_msg(k < seen.n_releases, "no recorded cell of DeepSpeed %s", want[i]);
    }
    ck_assert_int_eq(seen.worlds & 0xe, 0xe);
    ck_assert_int_gt(seen.edge_018, 0);
    ck_assert_int_gt(seen.hp_cells, 0);
    ck_assert_int_gt(seen.hp_stale, 0);
    ck_assert_int_gt(seen.hp_wrong, 0);
}
END_TEST

/* ---- the hyperparameter record (validation/hparams.h), by hand ------------------------------------ */

/* A probe's "hparams" with two steps (the engine's group 0 lr 1e-3 then 5e-4; group 1 at 2e-3 both
 * times) and one update per sub-group and step as `ups` lists them: "step sub opt group lr opt_step"
 * (opt: o = DeepSpeed's own optimizer, b = the backup), separated by ';'. */
static char *hp_doc(const char *ups)
{
    static char buf[8192];
    size_t o = (size_t)snprintf(buf, sizeof buf, "{\"hparams\":{\"engine\":["
                                "[{\"lr\":0.001,\"beta1\":0.9,\"beta2\":0.999,\"eps\":1e-8,\"weight_decay\":0.01},"
                                "{\"lr\":0.002,\"beta1\":0.9,\"beta2\":0.999,\"eps\":1e-8,\"weight_decay\":0}],"
                                "[{\"lr\":0.0005,\"beta1\":0.9,\"beta2\":0.999,\"eps\":1e-8,\"weight_decay\":0.01},"
                                "{\"lr\":0.002,\"beta1\":0.9,\"beta2\":0.999,\"eps\":1e-8,\"weight_decay\":0}]],"
                                "\"updates\":[");
    const char *p = ups;
    for (int k = 0; *p; k++) {
        int step, sg, grp, os;
        char opt;
        double lr;
        int used = 0;
        ck_assert_int_eq(sscanf(p, " %d %d %c %d %lf %d%n", &step, &sg, &opt, &grp, &lr, &os, &used), 6);
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s{\"step\":%d,\"sub_group\":%d,\"optimizer\":\"%s\","
                              "\"param_group\":%d,\"lr\":%.17g,\"beta1\":0.9,\"beta2\":0.999,\"eps\":1e-8,"
                              "\"weight_decay\":%g,\"opt_step\":%d}", k ? "," : "", step, sg,
                              opt == 'b' ? "backup_optimizer" : "optimizer", grp, lr, grp == 0 ? 0.01 : 0.0, os);
        p += used;
        while (*p == ';' || *p == ' ')
            p++;
    }
    snprintf(buf + o, sizeof buf - o, "]}}");
    return buf;
}

static void hp_run(const char *ups, struct val_hparams_result *r)
{
    static struct val_probe_subgroup sub[3] = {{.index = 0, .param_group = 0, .optimizer = "backup_optimizer"},
                                               {.index = 1, .param_group = 0, .optimizer = "optimizer"},
                                               {.index = 2, .param_group = 1, .optimizer = "optimizer"}};
    struct val_probe pr = {.sub = sub, .n_sub = 3};
    struct val_hparams h;
    struct rl_err e = {0};
    const char *d = hp_doc(ups);
    ck_assert_msg(val_hparams_parse(d, strlen(d), "p.json", &h, &e) == 0, "%s", e.msg);
    ck_assert(h.present);
    ck_assert_int_eq(val_hparams_check(&pr, &h, r, &e), 0);
    val_hparams_free(&h);
}

#define HP_GOOD1 "1 0 b 0 0.001 1; 1 1 o 0 0.001 1; 1 2 o 1 0.002 1; "

START_TEST(hparams_findings_by_hand)
{
    struct val_hparams_result r;
    hp_run(HP_GOOD1 "2 0 b 0 0.0005 2; 2 1 o 0 0.0005 2; 2 2 o 1 0.002 2", &r);
    ck_assert_int_eq(r.status, VAL_PASS);
    ck_assert(r.lr_changed);
    ck_assert_ptr_nonnull(strstr(r.detail, "3 sub-groups x 2 optimizer steps"));
    val_hparams_result_free(&r);
    /* The backup optimizer kept lr 1e-3 at step 2 (the scheduler-lr hazard). */
    hp_run(HP_GOOD1 "2 0 b 0 0.001 2; 2 1 o 0 0.0005 2; 2 2 o 1 0.002 2", &r);
    ck_assert_int_eq(r.status, VAL_FAIL);
    ck_assert_int_eq(r.n_bad, 1);
    ck_assert_int_eq(r.sub[0].kind, VAL_HP_HELD_OTHER);
    ck_assert_int_eq(r.sub[0].step, 2);
    ck_assert_str_eq(r.sub[0].field, "lr");
    ck_assert(r.sub[0].held == 0.001 && r.sub[0].current == 0.0005);
    ck_assert_ptr_nonnull(strstr(r.detail, "sub-group 0 (param group 0, backup_optimizer ?): step 2: lr 0.001 held, "
                                           "its param group's 0.0005"));
    val_hparams_result_free(&r);
    /* Sub-group 1 not stepped at step 2; sub-group 2 stepped twice at step 2. */
    hp_run(HP_GOOD1 "2 0 b 0 0.0005 2; 2 2 o 1 0.002 2; 2 2 o 1 0.002 3", &r);
    ck_assert_int_eq(r.n_bad, 2);
    ck_assert_int_eq(r.sub[1].kind, VAL_HP_NOT_STEPPED);
    ck_assert_int_eq(r.sub[1].step, 2);
    ck_assert_int_eq(r.sub[2].kind, VAL_HP_STEPPED_TWICE);
    val_hparams_result_free(&r);
    /* A step count off by one; an update by the optimizer that does not hold the sub-group's state. */
    hp_run(HP_GOOD1 "2 0 b 0 0.0005 2; 2 1 b 0 0.0005 2; 2 2 o 1 0.002 3", &r);
    ck_assert_int_eq(r.sub[1].kind, VAL_HP_OTHER_OPTIMIZER);
    ck_assert_int_eq(r.sub[2].kind, VAL_HP_STEP_COUNT);
    ck_assert(r.sub[2].held == 3 && r.sub[2].current == 2);
    ck_assert_int_eq(r.sub[0].kind, VAL_HP_OK);
    val_hparams_result_free(&r);
}
END_TEST

START_TEST(hparams_bad_input)
{
    static const struct {
        const char *doc, *msg;
    } bad[] = {
        {"{\"hparams\":[]}", "p.json: hparams: not an object"},
        {"{\"hparams\":{\"engine\":[],\"updates\":[{\"step\":1,\"optimizer\":\"gpu\"}]}}",
         "p.json: hparams.updates[0].optimizer: gpu; allowed: \"optimizer\" or \"backup_optimizer\""},
        {"{\"hparams\":{\"engine\":[],\"updates\":[{\"step\":0,\"optimizer\":\"optimizer\"}]}}",
         "p.json: hparams.updates[0].step: out of range or not an integer; allowed: an integer 1..100000"},
        {"{\"hparams\":{\"engine\":[[{\"lr\":\"x\"}]],\"updates\":[]}}",
         "p.json: hparams.engine[0][0].lr: not a finite number; allowed: a finite number"},
    };
    for (size_t i = 0; i < RL_COUNT(bad); i++) {
        struct val_hparams h;
        struct rl_err e = {0};
        ck_assert_int_eq(val_hparams_parse(bad[i].doc, strlen(bad[i].doc), "p.json", &h, &e), RL_EINVAL);
        ck_assert_str_eq(e.msg, bad[i].msg);
        ck_assert_ptr_null(h.engine);
    }
    struct val_hparams h;
    struct rl_err e = {0};
    ck_assert_int_eq(val_hparams_parse("{}", 2, "p.json", &h, &e), 0);
    ck_assert(!h.present);
}
END_TEST

/* ---- validate --probe and the readers -------------------------------------------------------------- */

static const char *example(const char *name)
{
    static char buf[4][1024];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 1024, "%s/tests/deepspeed/example/%s", tu_src(), name);
    return b;
}

static const char *gpt2_tiny(void)
{
    static char b[1024];
    snprintf(b, sizeof b, "%s/tests/deepspeed/models/gpt2-tiny.json", tu_src());
    return b;
}

START_TEST(shipped_probe_passes_with_caveat)
{
    struct tu_run r;
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups hf", example("probe.json"),
                gpt2_tiny());
    ck_assert_msg(r.status == 0, "exit %d\n%s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "placement      PASS"));
    ck_assert_ptr_nonnull(strstr(r.out, "memory_ledger  PASS"));
    ck_assert_ptr_nonnull(strstr(r.out, "CPU accelerator: device memory and step time cannot be held"));
    ck_assert_ptr_nonnull(strstr(r.out, "digest     DeepSpeed's fp32 master after step 3"));
    tu_run_free(&r);
}
END_TEST

START_TEST(probe_contradicting_config_refused)
{
    struct tu_run r;
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups hf --ratio 0.25", example("probe.json"),
                gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "zero_optimization.offload_optimizer.ratio: the run used"));
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups hf --deepspeed-version 0.12.4",
                example("probe.json"), gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "deepspeed_version: the run used"));
    tu_run_free(&r);
}
END_TEST

START_TEST(probe_wrong_groups_fail)
{
    /* The same run judged with the flat layout. The probe names each group's parameters, so a
     * --param-groups that groups otherwise is refused before any check, naming both counts. */
    struct tu_run r;
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat", example("probe.json"),
                gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--param-groups flat: 1 param group, the run's probe records 2"), "%s", r.err);
    tu_run_free(&r);
    /* A probe written before the names were recorded: the plan's sub-groups are not DeepSpeed's. */
    json_error_t je;
    json_t *doc = json_load_file(example("probe.json"), 0, &je);
    ck_assert_msg(doc, "%s", je.text);
    ck_assert_int_eq(json_object_del(doc, "param_groups"), 0);
    ck_assert_int_eq(json_dump_file(doc, tu_path("nonames.json"), 0), 0);
    json_decref(doc);
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat", tu_path("nonames.json"), gpt2_tiny());
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "subgroups      FAIL"));
    tu_run_free(&r);
}
END_TEST

/* A GPU run's probe, written to the documented schema (docs/json-probe.md): two ranks on CUDA,
 * DeepSpeed 0.19.8, ratio 0.5, GPT-2 tiny in one flat group, sub_group_size 9000: per rank 68480
 * elements in 5 sub-groups (the token embedding alone is 16384 per rank), the last 5 - floor(0.5 x
 * 5) = 3 offloaded under the 0.18 rule; device memory after init as given. dev1: the device
 * DeepSpeed assigned sub-group 1 ("cuda" as the rule says, "cpu" to break it). */
static const char *gpu_probe(long long after_init, const char *dev1)
{
    static char buf[8192];
    char subs[4096] = "";
    static const long long numel[5] = {16384, 10400, 16608, 16672, 8416};
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        const char *dev = i >= 2 ? "cpu" : i == 1 ? dev1 : "cuda";
        bool cpu = strcmp(dev, "cpu") == 0;
        n += (size_t)snprintf(subs + n, sizeof subs - n,
                              "%s{\"index\":%d,\"param_group\":0,\"numel\":%lld,\"assigned_device\":\"%s\","
                              "\"fp32_device\":\"%s\",\"fp32_bytes\":%lld,\"grad_device\":null,\"grad_bytes\":0,"
                              "\"model_partition_bytes\":%lld,\"optimizer\":\"%s\",\"optimizer_class\":\"%s\","
                              "\"state_device\":\"%s\",\"state_bytes\":%lld}",
                              i ? "," : "", i, numel[i], dev, cpu ? "cpu" : "cuda:0", 4 * numel[i], 2 * numel[i],
                              cpu ? "optimizer" : "backup_optimizer", cpu ? "DeepSpeedCPUAdam" : "AdamW",
                              cpu ? "cpu" : "cuda:0", 8 * numel[i]);
    }
    snprintf(buf, sizeof buf,
             "{\"schema_version\":1,\"kind\":\"ratiolab-probe\",\"rank\":0,\"world_size\":2,\"dp_world_size\":2,"
             "\"deepspeed_version\":\"0.19.8\",\"torch_version\":\"2.5.1+cu124\",\"python_version\":\"3.11.7\","
             "\"accelerator\":{\"name\":\"cuda\",\"device_name\":\"cuda\",\"communication_backend\":\"nccl\"},"
             "\"zero\":{\"stage\":3,\"sub_group_size\":9000,\"reduce_bucket_size\":500000000,"
             "\"stage3_prefetch_bucket_size\":50000000,"
             "\"offload_optimizer\":{\"device\":\"cpu\",\"pin_memory\":true,\"ratio\":0.5}},\"dtype\":\"bf16\","
             "\"wall_clock_breakdown\":false,"
             "\"memory\":{\"device_source\":\"torch.cuda.memory_allocated\",\"device_after_init_bytes\":%lld,"
             "\"device_peak_per_step_bytes\":[1100000000,1100000000],\"host_rss_after_init_bytes\":3000000000,"
             "\"host_rss_bytes\":3100000000,\"host_peak_rss_bytes\":3200000000,\"host_locked_bytes\":0,"
             "\"host_pinned_bytes\":0},"
             "\"steps\":[{\"step\":1,\"wall_ns\":90000000,\"device_peak_bytes\":1100000000},"
             "{\"step\":2,\"wall_ns\":300000000,\"device_peak_bytes\":1100000000}],\"steps_dropped\":0,"
             "\"probe_overhead_ns\":40000,\"step_wall_ns_total\":390000000,"
             "\"placement\":{\"optimizer_class\":\"DeepSpeedCPUAdam\",\"backup_optimizer_class\":\"AdamW\","
             "\"partial_offload\":0.5,\"subgroups\":[%s]},"
             "\"digest\":{\"step\":2,\"algorithm\":\"sha256-fp32-master-partitions\",\"sha256\":\"%064d\","
             "\"subgroups\":[],\"took_ns\":1000}}",
             after_init, subs, 0);
    return buf;
}

/* Writes a 2-rank fixture as validate --probe reads a run: rank 0's document under name
 * ("gpu.json") and rank 1's beside it ("gpu.rank1.json", the same document with rank 1), as
 * probe/ratiolab_probe.py names them. Returns rank 0's path. */
static const char *write_ranks(const char *name, const char *text)
{
    const char *p = tu_write(name, text);
    char r1name[256];
    const char *dot = strrchr(name, '.');
    snprintf(r1name, sizeof r1name, "%.*s.rank1%s", (int)(dot - name), name, dot);
    json_t *j = json_loads(text, 0, NULL);
    if (!j) {   /* not a document (a bad-input case): rank 1's file is the same bytes */
        tu_write(r1name, text);
        return p;
    }
    json_object_set_new(j, "rank", json_integer(1));
    char *r1 = json_dumps(j, JSON_COMPACT);
    tu_write(r1name, r1);
    free(r1);
    json_decref(j);
    return p;
}

/* The ledger's GPU bytes after the ZeRO optimizer for the fixture's run, from the plan. */
static long long fixture_ledger(void)
{
    json_t *j = tu_ratiolab_json("plan --model '%s' --param-groups flat --gpus 2 --tp 1 --deepspeed-version 0.19.8 "
                                 "--ratio 0.5 --sub-group-size 9000 --dtype bf16 --json", gpt2_tiny());
    json_t *st = json_object_get(j, "stages");
    long long b = -1;
    for (size_t i = 0; i < json_array_size(st); i++) {
        json_t *s = json_array_get(st, i);
        if (strcmp(json_string_value(json_object_get(s, "name")), "after_zero_optimizer") == 0)
            b = json_integer_value(json_object_get(s, "gpu_bytes"));
    }
    json_decref(j);
    ck_assert_int_gt(b, 0);
    return b;
}

START_TEST(gpu_probe_fixture)
{
    long long led = fixture_ledger();
    const char *ok = write_ranks("gpu.json", gpu_probe(led, "cuda"));
    struct tu_run r;
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat --hw hgx-h200", ok, gpt2_tiny());
    ck_assert_msg(strstr(r.out, "subgroups      PASS") && strstr(r.out, "placement      PASS") &&
                  strstr(r.out, "memory_ledger  PASS") && strstr(r.out, "device_memory  PASS"), "%s%s", r.out, r.err);
    ck_assert_ptr_null(strstr(r.out, "CPU accelerator:"));
    /* On a GPU the step is gated: the fixture's 300 ms is far from predict's step for a 137 k model. */
    ck_assert_msg(strstr(r.out, "step_time      FAIL"), "%s", r.out);
    tu_run_free(&r);
    /* 1 GiB more on the device than the ledger: the device check fails. */
    const char *big = write_ranks("gpu-big.json", gpu_probe(led + (1LL << 30), "cuda"));
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat --hw hgx-h200", big, gpt2_tiny());
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "device_memory  FAIL"));
    tu_run_free(&r);
    /* Sub-group 1 offloaded by DeepSpeed while the 0.18 rule keeps it on the GPU: placement fails. */
    const char *moved = write_ranks("gpu-moved.json", gpu_probe(led, "cpu"));
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat --hw hgx-h200", moved, gpt2_tiny());
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "placement      FAIL"));
    ck_assert_ptr_nonnull(strstr(r.out, "honored_ratio  FAIL"));
    tu_run_free(&r);
}
END_TEST

/* DeepSpeed's wall-clock-breakdown timers as the probe records them per step (steps[].timers_ms):
 * validate --probe shows each one's median over the steps after the first (the first holds
 * warm-up), and refuses a timers_ms that is not an object of non-negative numbers. */
START_TEST(probe_timers_shown)
{
    json_t *doc = json_loads(gpu_probe(fixture_ledger(), "cuda"), 0, NULL);
    ck_assert_ptr_nonnull(doc);
    json_t *steps = json_object_get(doc, "steps");
    json_object_set_new(json_array_get(steps, 0), "timers_ms", json_pack("{s:f,s:f}", "fwd", 50.0, "step", 9.0));
    json_object_set_new(json_array_get(steps, 1), "timers_ms", json_pack("{s:f,s:f}", "fwd", 10.5, "step", 3.25));
    char *text = json_dumps(doc, 0);
    const char *f = write_ranks("timers.json", text);
    free(text);
    struct tu_run r;   /* exit 1: the fixture's step fails predict on a GPU (gpu_probe_fixture) */
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat --hw hgx-h200 --json", f, gpt2_tiny());
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_msg(j, "%s%s", r.out, r.err);
    json_t *tm = json_object_get(j, "timers_median_ms");
    ck_assert_double_eq_tol(json_number_value(json_object_get(tm, "fwd")), 10.5, 1e-9);
    ck_assert_double_eq_tol(json_number_value(json_object_get(tm, "step")), 3.25, 1e-9);
    json_decref(j);
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat --hw hgx-h200", f, gpt2_tiny());
    ck_assert_msg(strstr(r.out, "timers     DeepSpeed's wall-clock breakdown") && strstr(r.out, "fwd 10.50, step 3.25"),
                  "%s", r.out);
    tu_run_free(&r);
    json_object_set_new(json_array_get(steps, 1), "timers_ms", json_string("fast"));
    text = json_dumps(doc, 0);
    f = write_ranks("timers-bad.json", text);
    free(text);
    tu_ratiolab(&r, "validate --probe '%s' --model '%s' --param-groups flat --hw hgx-h200", f, gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "steps[1].timers_ms: not an object"), "%s", r.err);
    tu_run_free(&r);
    json_decref(doc);
}
END_TEST

START_TEST(probe_bad_input)
{
    static const struct {
        const char *text;   /* the file */
        const char *msg;    /* part of the one-line error */
    } cases[] = {
        {"[]", "not a JSON object"},
        {"{\"schema_version\":2,\"kind\":\"ratiolab-probe\"}", "schema_version: 2; allowed: 1"},
        {"{\"schema_version\":1,\"kind\":\"other\"}", "kind: 'other'"},
        {"{\"schema_version\":1,\"kind\":\"ratiolab-probe\",\"world_size\":0}", "world_size: 0"},
        {"{\"schema_version\":1,\"kind\":\"ratiolab-probe\",\"world_size\":1,\"deepspeed_version\":\"0.19.8\","
         "\"accelerator\":{\"name\":\"cuda\"},\"zero\":{\"stage\":3}}", "placement.subgroups: missing"},
        {"{\"schema_version\":1,\"kind\":\"ratiolab-probe\",\"world_size\":1,\"deepspeed_version\":\"0.19.8\","
         "\"accelerator\":{\"name\":\"cuda\"},\"zero\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\","
         "\"ratio\":1.5}}}", "ratio: not a number in [0, 1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *f = tu_write("bad.json", cases[i].text);
        struct tu_run r;
        tu_ratiolab(&r, "validate --probe '%s' --model '%s'", f, gpt2_tiny());
        ck_assert_msg(r.status == 2 && strstr(r.err, cases[i].msg) && !strchr(strchr(r.err, '\n') + 1, '\n'),
                      "case %zu: exit %d, stderr %s", i, r.status, r.err);
        tu_run_free(&r);
    }
}
END_TEST

START_TEST(log_config_read)
{
    struct trace_ds_config c;
    struct rl_err e = {0};
    ck_assert_int_eq(trace_ds_config_read(example("deepspeed-0.14.1.log"), &c, &e), 0);
    ck_assert(c.have_version && c.have_zero);
    ck_assert_int_eq(c.version.major, 0);
    ck_assert_int_eq(c.version.minor, 14);
    ck_assert_int_eq(c.version.patch, 1);
    ck_assert_int_eq(c.stage, 3);
    ck_assert_str_eq(c.offload_device, "cpu");
    ck_assert(c.have_ratio);
    ck_assert_double_eq(c.ratio, 0.5);
    ck_assert_int_gt(c.sub_group_size, 0);
    ck_assert_int_eq(c.reduce_bucket_size, 500000000);
    ck_assert_str_eq(c.dtype, "bf16");
    ck_assert_int_eq(trace_ds_config_read(example("deepspeed-0.19.8.log"), &c, &e), 0);
    ck_assert_int_eq(c.version.minor, 19);
    ck_assert_str_eq(c.offload_device, "cpu");
    ck_assert_double_eq(c.ratio, 0.5);
    /* The repr's nesting: a ratio inside offload_param must not be taken for the optimizer's. */
    const char *t = "[2026-01-01 00:00:00,000] [INFO] [config.py:1:print]   zero_config .................. stage=3 "
                    "offload_param=DeepSpeedZeroOffloadParamConfig(device='none', ratio=0.9) sub_group_size=77 "
                    "offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu', pin_memory=False, "
                    "sub_group_size=5, ratio=0.25) reduce_bucket_size=100\n";
    ck_assert_int_eq(trace_ds_config_parse(t, strlen(t), "t.log", &c, &e), 0);
    ck_assert_double_eq(c.ratio, 0.25);
    ck_assert_int_eq(c.sub_group_size, 77);
    ck_assert_int_eq(c.reduce_bucket_size, 100);
    ck_assert_int_eq(c.pin_memory, 0);
    const char *badt = "[x] [INFO] [config.py:1:print]   zero_config ..... stage=3 sub_group_size=1e9x\n";
    ck_assert_int_eq(trace_ds_config_parse(badt, strlen(badt), "b.log", &c, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "b.log:1: zero_config sub_group_size"));
}
END_TEST

START_TEST(log_contradicting_config_refused)
{
    /* The shipped 0.14.1 log is of a ratio-0.5 run; a ratio-0.8 config is refused, exit 2. */
    const char *cfg = tu_write("ds08.json", "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":"
                                            "{\"device\":\"cpu\",\"ratio\":0.8}}}");
    struct tu_run r;
    tu_ratiolab(&r, "validate --deepspeed-log '%s' --model '%s' --param-groups hf --gpus 1 --tp 1 --ds-config '%s'",
                example("deepspeed-0.14.1.log"), gpt2_tiny(), cfg);
    ck_assert_msg(r.status == 2, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "offload_optimizer.ratio: the run used 0.5"));
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --deepspeed-log '%s' --model '%s' --param-groups hf --gpus 1 --tp 1 --ratio 0.3",
                example("deepspeed-0.14.1.log"), gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    tu_run_free(&r);
}
END_TEST

START_TEST(log_cpu_accelerator_not_gated)
{
    /* The run's own settings are taken from the log (ratio 0.5, its sub_group_size, 0.14.1); the
     * CPU accelerator's MA is its RSS: shown, not gated, while the sub-group count N is. */
    struct tu_run r;
    tu_ratiolab(&r, "validate --deepspeed-log '%s' --model '%s' --param-groups hf --gpus 1 --tp 1",
                example("deepspeed-0.14.1.log"), gpt2_tiny());
    ck_assert_msg(r.status == 0, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "DeepSpeed  0.14.1 rules"));
    ck_assert_ptr_nonnull(strstr(r.out, "6 vs 6  PASS"));
    ck_assert_ptr_nonnull(strstr(r.out, "its MA is the process RSS"));
    tu_run_free(&r);
    /* Judged against another model the sub-group count differs: N is still gated. */
    tu_ratiolab(&r, "validate --deepspeed-log '%s' --model '%s/tests/deepspeed/models/llama-tiny.json' "
                "--param-groups hf --gpus 1 --tp 1", example("deepspeed-0.14.1.log"), tu_src());
    ck_assert_msg(r.status == 1, "exit %d: %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(log_019_points_to_probe)
{
    struct tu_run r;
    tu_ratiolab(&r, "validate --deepspeed-log '%s' --model '%s' --param-groups hf --gpus 1 --tp 1",
                example("deepspeed-0.19.8.log"), gpt2_tiny());
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "the stages are not in the log") && strstr(r.err, "validate --probe"), "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* A probe's file name is data, never a printf format (issue 35, item 1): a release that is not
 * X.Y.Z reaches the message that names the file, and names made of conversions crashed validate
 * (%s...), printed addresses (%p) or wrote memory (%n). Each must give the one-line exit-2 error
 * with the name as it is. In-process too: the parser's message starts with the literal path. */
START_TEST(probe_file_name_is_not_a_format)
{
    char *good = tu_read(example("probe.json"), NULL);
    ck_assert_ptr_nonnull(good);
    char *at = strstr(good, "\"0.19.8\"");
    ck_assert_ptr_nonnull(at);
    memcpy(at, "\"0.19.x\"", 8);   /* not X.Y.Z */
    static const char *const names[] = {"%s%s%s%s%s%s%s%s%s%s%s%s.json", "%n%n.json", "%p.%p.%p.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *f = tu_write(names[i], good);
        struct val_probe pr;
        struct rl_err e = {0};
        ck_assert_int_eq(val_probe_parse(good, strlen(good), f, &pr, &e), RL_EINVAL);
        ck_assert_msg(strncmp(e.msg, f, strlen(f)) == 0 && strstr(e.msg, "deepspeed_version"), "%s: %s", names[i],
                      e.msg);
        struct tu_run r;
        tu_ratiolab(&r, "validate --probe '%s' --model '%s'", names[i], gpt2_tiny());
        ck_assert_msg(r.status == 2, "%s: exit %d: %s", names[i], r.status, r.err);
        char want[512];
        snprintf(want, sizeof want, "%s: deepspeed_version", names[i]);
        ck_assert_msg(strstr(r.err, want) && strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "%s: %s", names[i],
                      r.err);
        tu_run_free(&r);
    }
    free(good);
}
END_TEST

/* The logs' runs grouped (validation/ds_runs.c, in process): one log given twice is one
 * configuration, so one group of both runs named by path and first line; beside the same run at
 * another ratio each is its own group, whose facts contradict a ratio the user gave (named by its
 * log and line) or agree; a log of iteration times only cannot be placed among differing runs,
 * and the messages name the field, not the flag. */
START_TEST(log_runs_are_grouped_by_configuration)
{
    const char *a = example("deepspeed-0.14.1.log");
    char *text = NULL;
    size_t len = 0;
    struct rl_err e = {0};
    ck_assert_int_eq(rl_read_file(a, &text, &len, &e), 0);
    char *q;
    if ((q = strstr(text, "ratio=0.5")))   /* the same run at ratio 0.3 */
        q[8] = '3';
    if ((q = strstr(text, "\"ratio\": 0.5")))
        q[11] = '3';
    char r3[1024], iters[1024];
    snprintf(r3, sizeof r3, "%s", tu_write("r3.log", text));
    snprintf(iters, sizeof iters, "%s", tu_write("iters.log", "elapsed time per iteration (ms): 12.5\n"));
    static struct val_ds_group g[4];
    int n = 0;
    bool differ = true;
    struct val_ds_runs runs;
    const char *same[] = {a, a};
    ck_assert_msg(val_ds_runs_read(&runs, same, 2, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(runs.n, 2);
    ck_assert_int_eq(val_ds_runs_group(&runs, g, 4, &n, &differ, &e), 0);
    ck_assert(!differ);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(g[0].n, 2);
    char want[2200];
    snprintf(want, sizeof want, "%s:1, %s:1", a, a);
    ck_assert_str_eq(g[0].name, want);
    val_ds_runs_free(&runs);
    const char *two[] = {a, r3};
    ck_assert_msg(val_ds_runs_read(&runs, two, 2, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(val_ds_runs_group(&runs, g, 4, &n, &differ, &e), 0);
    ck_assert(differ);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(val_ds_group_file(&runs, &g[1], 0), 1);
    /* The second run's facts against a ratio the user gave: named by its log and line, as data. */
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.model = gpt2_tiny();
    in.catalog = tu_catalog();
    in.ratio = 0.5;
    in.ratio_set = true;
    struct plan_setup c;
    struct trace_ds_config logged;
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(val_ds_group_facts(&runs, &g[1], &in, &c, &logged, &e), RL_EINVAL);
    snprintf(want, sizeof want, "deepspeed_log %s (the run from line 1): zero_optimization.offload_optimizer.ratio: "
             "the run used 0.3, the command line says 0.5; give the run's own config (or none: the run's values are "
             "taken)", r3);
    ck_assert_str_eq(e.msg, want);
    plan_setup_free(&c);
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s", e.msg);
    ck_assert_msg(val_ds_group_facts(&runs, &g[0], &in, &c, &logged, &e) == 0, "%s", e.msg);   /* 0.5: agrees */
    ck_assert(logged.have_version && logged.have_ratio && logged.ratio == 0.5);
    plan_setup_free(&c);
    val_ds_runs_free(&runs);
    const char *three[] = {a, r3, iters};
    ck_assert_msg(val_ds_runs_read(&runs, three, 3, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(val_ds_runs_group(&runs, g, 4, &n, &differ, &e), RL_EINVAL);
    ck_assert_msg(strncmp(e.msg, "deepspeed_log ", 14) == 0 && strstr(e.msg, "holds iteration times but no DeepSpeed "
                  "configuration") && !strstr(e.msg, "--"), "%s", e.msg);
    val_ds_runs_free(&runs);
    free(text);
}
END_TEST

Suite *TU_SUITE(void)
{
    Suite *s = suite_create("deepspeed");
    TCase *t = tcase_create("oracle");
    /* 807 recorded cells, each planned and judged: about 3.5 s on the loaded 2-core machine. */
    tcase_set_timeout(t, 60);
    tcase_add_test(t, observed_placements_equal_the_plan);
    suite_add_tcase(s, t);
    t = tcase_create("probe");
    tcase_add_test(t, shipped_probe_passes_with_caveat);
    tcase_add_test(t, probe_contradicting_config_refused);
    tcase_add_test(t, probe_wrong_groups_fail);
    tcase_add_test(t, gpu_probe_fixture);
    tcase_add_test(t, probe_timers_shown);
    tcase_add_test(t, probe_bad_input);
    tcase_add_test(t, probe_file_name_is_not_a_format);
    tcase_add_test(t, hparams_findings_by_hand);
    tcase_add_test(t, hparams_bad_input);
    suite_add_tcase(s, t);
    t = tcase_create("log_config");
    tcase_add_test(t, log_config_read);
    tcase_add_test(t, log_contradicting_config_refused);
    tcase_add_test(t, log_cpu_accelerator_not_gated);
    tcase_add_test(t, log_019_points_to_probe);
    tcase_add_test(t, log_runs_are_grouped_by_configuration);
    suite_add_tcase(s, t);
    return s;
}
