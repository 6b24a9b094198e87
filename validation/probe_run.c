/* validation/probe_run.c — `validate --probe`'s analysis: the ranks read, judged against one plan,
 * the hparams records, the audit replayed and paired with another run's (validation/probe_run.h). */
#include "validation/probe_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int val_probe_run_read(const char *path, struct val_probe_run *r, struct rl_err *e)
{
    struct val_probe first;
    int rc = val_probe_read(path, &first, e);
    if (rc)
        return rc;
    int n = first.world_size;
    if (first.rank != 0) {
        char r0[4200];
        snprintf(r0, sizeof r0, "%s", path);
        val_probe_free(&first);
        return rl_errf(e, RL_EINVAL, "%s: rank: %d; allowed: 0 (give rank 0's file: the files of ranks 1..%d are "
                       "found beside it, named <stem>.rank<R>.json)", r0, first.rank, n - 1);
    }
    struct val_probe *prs = calloc((size_t)n, sizeof *prs);
    char **paths = calloc((size_t)n, sizeof *paths);
    if (!prs || !paths) {
        free(prs);
        free(paths);
        val_probe_free(&first);
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    }
    prs[0] = first;
    paths[0] = strdup(path);
    r->prs = prs;
    r->paths = paths;
    r->n = n;
    if (!paths[0])
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    for (int i = 1; i < n; i++) {
        char rp[4200];
        if ((rc = val_probe_rank_path(path, i, rp, sizeof rp, e)))
            return rc;
        if (!(paths[i] = strdup(rp)))
            return rl_errf(e, RL_ENOMEM, "validate: out of memory");
        struct rl_err re = {0};
        if ((rc = val_probe_read(rp, &prs[i], &re))) {
            if (rc == RL_ENOENT || strstr(re.msg, "No such file"))
                return rl_errf(e, RL_EINVAL, "%s: rank %d of the run's %d: its file %s is missing (ratiolab_probe "
                               "writes one per rank beside rank 0's; copy every rank's file together)", path, i, n, rp);
            *e = re;
            return rc;
        }
        if ((rc = val_probe_same_run(&prs[0], &prs[i], rp, i, e)))
            return rc;
    }
    return 0;
}

/* Reads and replays one audit file with DeepSpeed's release (for its IncrementStep,
 * val_audit_set_release); *named says whether the error names the file as the field "audit"
 * (val_audit_read's messages, and running out of memory for its findings). */
static int read_replay(const char *path, struct rl_version release, struct val_audit *a, struct val_audit_finding **f,
                       bool *named, struct rl_err *e)
{
    int rc = val_audit_read(path, a, e);
    *named = rc != 0;
    if (rc)
        return rc;
    RL_TRY(val_audit_set_release(a, release, e));
    *named = true;
    if (!(*f = calloc(a->n ? (size_t)a->n : 1, sizeof **f)))
        return rl_errf(e, RL_ENOMEM, "audit: out of memory");
    *named = false;
    return val_audit_replay(a, *f, e);
}

/* Whether b (read from b_path) is the same cell as a (named a_name) at another ratio: the same
 * DeepSpeed, ranks, sub_group_size and sub-groups (sizes and param groups). RL_EINVAL naming what
 * differs. */
static int same_cell(const struct val_probe *a, const char *a_name, const struct val_probe *b, const char *b_path,
                     struct rl_err *e)
{
    const char *pre = "against_probe";
    if (b->rank != 0)
        return rl_errf(e, RL_EINVAL, "%s %s: rank %d; allowed: 0 (rank 0's file, as %s)", pre, b_path, b->rank,
                       a_name);
    if (strcmp(a->ds_version_text, b->ds_version_text) != 0 || a->world_size != b->world_size || a->dp != b->dp ||
        a->config.sub_group_size != b->config.sub_group_size || a->n_sub != b->n_sub)
        return rl_errf(e, RL_EINVAL, "%s %s: DeepSpeed %s, world %d, sub_group_size %lld, %d sub-groups; %s: %s, "
                       "%d, %lld, %d: not the same cell at another ratio", pre, b_path, b->ds_version_text,
                       b->world_size, (long long)b->config.sub_group_size, b->n_sub, a_name, a->ds_version_text,
                       a->world_size, (long long)a->config.sub_group_size, a->n_sub);
    for (int i = 0; i < a->n_sub; i++)
        if (a->sub[i].numel != b->sub[i].numel || a->sub[i].param_group != b->sub[i].param_group)
            return rl_errf(e, RL_EINVAL, "%s %s: sub-group %d holds %lld elements of param group %d, %s's %lld of "
                           "group %d: not the same cell", pre, b_path, i, (long long)b->sub[i].numel,
                           b->sub[i].param_group, a_name, (long long)a->sub[i].numel, a->sub[i].param_group);
    return 0;
}

/* Every rank's hyperparameter record (validation/hparams.h) into r->hp: rank 0's judgement, or
 * the first rank's that fails. */
static int judge_hparams(struct val_probe_run *r, struct rl_err *e)
{
    for (int i = 0; i < r->n; i++) {
        struct val_hparams h;
        struct val_hparams_result hr;
        int rc;
        if ((rc = val_hparams_read(r->paths[i], &h, e)) || (rc = val_hparams_check(&r->prs[i], &h, &hr, e))) {
            val_hparams_free(&h);
            return rc;
        }
        val_hparams_free(&h);
        if (i == 0 || (hr.status == VAL_FAIL && r->hp.status != VAL_FAIL)) {
            if (i > 0)
                snprintf(hr.detail + strlen(hr.detail), sizeof hr.detail - strlen(hr.detail), " (rank %d)",
                         r->prs[i].rank);
            val_hparams_result_free(&r->hp);
            r->hp = hr;
        } else {
            val_hparams_result_free(&hr);
        }
    }
    return 0;
}

/* The grouping the user gave (a rule or a group file) against the probe's recorded one: RL_EINVAL
 * saying both group counts and the first parameter they place apart. Nothing given: 0 (the probe's
 * is taken). */
static int check_groups(const struct val_probe_plan_in *pi, const struct plan_inputs *in, const struct val_probe *pr,
                        struct rl_err *e)
{
    if (in->groups == PLAN_GROUPS_AUTO && !in->groups_file)
        return 0;
    struct plan_setup mine, run;
    memset(&mine, 0, sizeof mine);
    memset(&run, 0, sizeof run);
    struct plan_inputs rin = *in;
    rin.group_spec = &pr->groups;
    int rc = pi->resolve(in, &mine, e);
    if (!rc && (rc = pi->resolve(&rin, &run, e)) == 0) {
        const struct plan_model *a = &mine.model, *b = &run.model;
        int t = 0;
        while (t < a->n_tensors && t < b->n_tensors && a->tensors[t].group == b->tensors[t].group)
            t++;
        char given[200];
        snprintf(given, sizeof given, "%s", in->groups_file ? in->groups_file : plan_group_rule_name(in->groups));
        if (a->n_groups != b->n_groups || t < a->n_tensors)
            rc = rl_errf(e, RL_EINVAL, "param_groups %s: %d param group%s, the run's probe records %d (%s: "
                         "group %d there, group %d in the run); leave param_groups out to take the probe's",
                         given, a->n_groups, a->n_groups == 1 ? "" : "s", b->n_groups,
                         t < a->n_tensors ? a->tensors[t].name : "every parameter",
                         t < a->n_tensors ? a->tensors[t].group : 0, t < b->n_tensors ? b->tensors[t].group : 0);
    }
    plan_setup_free(&mine);
    plan_setup_free(&run);
    return rc;
}

/* The run's gradient accumulation and micro-batch from the probe: the step predict models is the
 * step the run made (an optimizer step of grad_accum micro-steps). A grad_accum, micro_batch or
 * DeepSpeed config that says otherwise is RL_EINVAL. */
static int probe_accumulation(const struct val_probe *pr, const struct plan_setup *c, struct sim_train *t,
                              struct rl_err *e)
{
    if (t->grad_accum > 0 && t->grad_accum != pr->grad_accum)
        return rl_errf(e, RL_EINVAL, "grad_accum: %lld; the run (probe) took %d micro-step%s per optimizer step "
                       "(gradient_accumulation_steps); give the run's or none", (long long)t->grad_accum,
                       pr->grad_accum, pr->grad_accum == 1 ? "" : "s");
    if (t->grad_accum <= 0 && c->zero.src_grad_accum == PLAN_SRC_CONFIG && c->zero.grad_accum != pr->grad_accum)
        return rl_errf(e, RL_EINVAL, "ds_config: gradient_accumulation_steps: %lld; the run (probe) used %d; give "
                       "the run's own config", (long long)c->zero.grad_accum, pr->grad_accum);
    t->grad_accum = pr->grad_accum;
    if (pr->micro_batch > 0) {
        if (t->micro_batch > 0 && t->micro_batch != pr->micro_batch)
            return rl_errf(e, RL_EINVAL, "micro_batch: %lld; the run (probe) used %lld; give the run's or none",
                           (long long)t->micro_batch, (long long)pr->micro_batch);
        if (t->micro_batch <= 0 && (c->zero.src_micro_batch == PLAN_SRC_CONFIG || c->zero.src_micro_batch == PLAN_SRC_CLI) &&
            c->zero.micro_batch != pr->micro_batch)
            return rl_errf(e, RL_EINVAL, "micro_batch: %lld (%s); the run (probe) used %lld; give the run's or none",
                           (long long)c->zero.micro_batch, c->zero.src_micro_batch == PLAN_SRC_CONFIG ? "ds_config"
                           : "micro_batch", (long long)pr->micro_batch);
        t->micro_batch = pr->micro_batch;
    }
    return 0;
}

int val_probe_run_plan(const struct val_probe *pr, const struct val_probe_plan_in *pi, struct val_probe_plan *pl,
                       struct rl_err *e)
{
    struct plan_inputs in = *pi->in;
    if (in.layout.dp <= 0 && in.layout.world <= 0 && in.layout.nodes <= 0)
        in.layout.dp = pr->dp;
    int rc;
    pl->failed = VAL_PLAN_GROUPS;
    if (pr->groups.n_groups > 0) {
        if ((rc = check_groups(pi, &in, pr, e)))
            return rc;
        in.group_spec = &pr->groups;
    }
    pl->train = *pi->train;
    pl->failed = VAL_PLAN_OTHER;
    if ((rc = pi->resolve(&in, &pl->c, e)) || (rc = val_facts_apply(&pr->config, pr->dp, pi->what, pi->in, &pl->c, e)))
        return rc;
    pl->failed = VAL_PLAN_ACCUM;
    if ((rc = probe_accumulation(pr, &pl->c, &pl->train, e)))
        return rc;
    pl->failed = VAL_PLAN_OTHER;
    if ((rc = pi->load_hw(pi->ctx, &pl->c, &pl->hw, e)) || (rc = plan_setup_plan(&pl->c, -1, &pl->p, e)) ||
        (rc = sim_step_run(&pl->p, &pl->hw, &pl->train, NULL, &pl->sr, e)))
        return rc;
    pl->failed = VAL_PLAN_OK;
    return 0;
}

void val_probe_plan_free(struct val_probe_plan *pl)
{
    plan_free(&pl->p);
    plan_setup_free(&pl->c);
    memset(pl, 0, sizeof *pl);
}

int val_probe_run_judge(struct val_probe_run *r, const struct plan *p, const struct val_probe_opts *o,
                        const struct val_probe_run_files *f, struct rl_err *e)
{
    r->failed = VAL_RUN_OK;
    if (!(r->rs = calloc((size_t)r->n, sizeof *r->rs)))
        return rl_errf(e, RL_ENOMEM, "validate: out of memory");
    /* Every rank against the same plan: ZeRO-3 pads each parameter's partition to one size, so
     * every rank holds the same sub-groups; each rank's own placement, memory and steps. */
    enum val_status overall = VAL_PASS;
    for (int i = 0; i < r->n; i++) {
        val_probe_compare(p, &r->prs[i], o, &r->rs[i]);
        if (r->rs[i].overall == VAL_FAIL)
            overall = VAL_FAIL;
    }
    r->digest = val_probe_ranks_digest(r->prs, r->n, r->digest_detail, sizeof r->digest_detail);
    if (r->digest == VAL_FAIL)
        overall = VAL_FAIL;
    int rc = judge_hparams(r, e);
    if (rc) {
        r->failed = VAL_RUN_HPARAMS;
        return rc;
    }
    if (r->hp.status == VAL_FAIL)
        overall = VAL_FAIL;
    r->r0 = r->rs[0];
    r->r0.overall = overall;
    r->audit_bad = 0;
    bool named = false;
    if (f->audit) {
        if ((rc = read_replay(f->audit, r->prs[0].config.version, &r->au, &r->af, &named, e))) {
            r->failed = named ? VAL_RUN_AUDIT_READ : VAL_RUN_AUDIT;
            return rc;
        }
        for (int i = 0; i < r->au.n; i++)
            r->audit_bad += r->af[i].status != VAL_AUDIT_IDENTICAL || !r->af[i].formula_ok || r->af[i].hp_mismatch;
    }
    if (f->against_probe) {
        r->failed = VAL_RUN_AGAINST;
        if ((rc = val_probe_read(f->against_probe, &r->pb, e)) ||
            (rc = same_cell(&r->prs[0], f->probe_name, &r->pb, f->against_probe, e)))
            return rc;
        if ((rc = read_replay(f->against_audit, r->pb.config.version, &r->bu, &r->bf, &named, e))) {
            if (named)
                r->failed = VAL_RUN_AGAINST_AUDIT_READ;
            return rc;
        }
        if ((rc = val_audit_compare(&r->au, r->af, &r->bu, r->bf, &r->pairs, &r->why, e)))
            return rc;
        r->failed = VAL_RUN_OK;
        if (r->why == VAL_WHY_NOT_EXACT)
            r->audit_bad++;
    }
    r->pass = overall == VAL_PASS && !r->audit_bad;
    return 0;
}

void val_probe_run_why_totals(const struct val_probe_run *r, struct val_probe_why_totals *t)
{
    memset(t, 0, sizeof *t);
    t->step = r->au.n ? r->au.rec[0].step : 0;
    for (int i = 0; r->pairs && i < r->au.n; i++) {
        const struct val_audit_pair *q = &r->pairs[i];
        const struct val_audit_finding *f = &r->af[q->a];
        t->numel += q->numel;
        t->n_diff_after += q->n_diff_after;
        t->n_diff_grad += q->n_diff_grad;
        if (q->max_abs_after > t->max_abs_after)
            t->max_abs_after = q->max_abs_after;
        if (q->same_optimizer)
            continue;
        if (q->max_abs_after > t->moved_max_abs)
            t->moved_max_abs = q->max_abs_after;
        t->moved_numel += q->numel;
        t->moved_n_diff_after += q->n_diff_after;
        if (q->max_ulps_after > t->moved_max_ulps)
            t->moved_max_ulps = q->max_ulps_after;
        if (f->other_n_diff > 0)
            t->other_n_diff += f->other_n_diff;
        if (f->other_max_ulps > t->other_max_ulps)
            t->other_max_ulps = f->other_max_ulps;
    }
}

void val_probe_run_free(struct val_probe_run *r)
{
    val_hparams_result_free(&r->hp);
    free(r->af);
    free(r->bf);
    free(r->pairs);
    val_audit_free(&r->au);
    val_audit_free(&r->bu);
    val_probe_free(&r->pb);
    for (int i = 0; r->prs && i < r->n; i++)
        val_probe_free(&r->prs[i]);
    for (int i = 0; r->paths && i < r->n; i++)
        free(r->paths[i]);
    free(r->prs);
    free(r->paths);
    free(r->rs);
    memset(r, 0, sizeof *r);
}
