/* plan/groups.c — param-group files and recorded group names (plan/groups.h, docs/inputs.md). */
#include <fnmatch.h>   /* fnmatch: the shell's wildcard matching, POSIX */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/groups.h"

void plan_group_spec_init(struct plan_group_spec *s, const char *source)
{
    memset(s, 0, sizeof *s);
    snprintf(s->source, sizeof s->source, "%s", source ? source : "");
    s->rest_group = -1;
}

void plan_group_spec_free(struct plan_group_spec *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_pat; i++)
        free(s->pat[i].text);
    free(s->pat);
    s->pat = NULL;
    s->n_pat = s->cap_pat = 0;
}

static int add_pattern(struct plan_group_spec *s, int g, const char *text, size_t n, int line, struct rl_err *e)
{
    char at[24] = "";   /* ": line N" for a file; a probe's names have no line */
    if (line > 0)
        snprintf(at, sizeof at, ": line %d", line);
    if (s->n_pat >= PLAN_GROUP_MAX_PATTERNS)
        return rl_errf(e, RL_EINVAL, "%s%s: more than %d names and patterns", s->source, at, PLAN_GROUP_MAX_PATTERNS);
    if (n == 0 || n >= PLAN_NAME_MAX)
        return rl_errf(e, RL_EINVAL, "%s%s: a name or pattern of %zu bytes; allowed 1..%d", s->source, at, n,
                       PLAN_NAME_MAX - 1);
    if (rl_grow(&s->pat, &s->cap_pat, sizeof *s->pat, s->n_pat + 1, 16))
        return rl_errf(e, RL_ENOMEM, "%s: out of memory for %d patterns", s->source, s->n_pat + 1);
    char *t = malloc(n + 1);
    if (!t)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory", s->source);
    memcpy(t, text, n);
    t[n] = '\0';
    s->pat[s->n_pat++] = (struct plan_group_pattern){
        .text = t, .group = g, .line = line, .glob = strpbrk(t, "*?[") != NULL};
    return 0;
}

/* Starts group n_groups on `line`, with label (lab bytes, 0 for none). */
static int new_group(struct plan_group_spec *s, const char *lab, size_t n, int line, struct rl_err *e)
{
    if (s->n_groups >= PLAN_MAX_GROUPS)
        return rl_errf(e, RL_EINVAL, "%s: line %d: a group beyond the %dth; allowed at most %d param groups",
                       s->source, line, PLAN_MAX_GROUPS, PLAN_MAX_GROUPS);
    if (n >= PLAN_GROUP_LABEL_MAX)
        return rl_errf(e, RL_EINVAL, "%s: line %d: label '%.*s...' of %zu bytes; allowed at most %d", s->source,
                       line, 20, lab, n, PLAN_GROUP_LABEL_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if (!(lab[i] == '_' || lab[i] == '-' || (lab[i] >= '0' && lab[i] <= '9') || (lab[i] >= 'a' && lab[i] <= 'z') ||
              (lab[i] >= 'A' && lab[i] <= 'Z')))
            return rl_errf(e, RL_EINVAL, "%s: line %d: label '%.*s': byte '%c' is not allowed; a label is letters, "
                           "digits, '_' and '-', then ':'", s->source, line, (int)n, lab, lab[i]);
    int g = s->n_groups++;
    memcpy(s->label[g], lab, n);
    s->label[g][n] = '\0';
    s->line[g] = line;
    return 0;
}

/* One line (without its newline, comment stripped): `[label:] token ...`. */
static int parse_line(struct plan_group_spec *s, const char *p, const char *end, int line, struct rl_err *e)
{
    int g = -1, n_tok = 0, star = 0;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (p == end)
            break;
        const char *t = p;
        while (p < end && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - t);
        if (g < 0 && t[n - 1] == ':') {   /* the label, first on its line */
            if (n == 1)
                return rl_errf(e, RL_EINVAL, "%s: line %d: an empty label (':'); give letters before it or none",
                               s->source, line);
            RL_TRY(new_group(s, t, n - 1, line, e));
            g = s->n_groups - 1;
            continue;
        }
        if (g < 0) {
            RL_TRY(new_group(s, "", 0, line, e));
            g = s->n_groups - 1;
        }
        if (memchr(t, ':', n))
            return rl_errf(e, RL_EINVAL, "%s: line %d: '%.*s': a label (ending in ':') comes first on its line, "
                           "and a parameter name has no ':'", s->source, line, (int)(n > 60 ? 60 : n), t);
        star += n == 1 && t[0] == '*';
        RL_TRY(add_pattern(s, g, t, n, line, e));
        n_tok++;
    }
    if (g < 0)
        return 0;   /* blank or comment only */
    if (n_tok == 0)
        return rl_errf(e, RL_EINVAL, "%s: line %d: group '%s' lists no parameter name or pattern", s->source, line,
                       s->label[g]);
    if (star && n_tok > 1)
        return rl_errf(e, RL_EINVAL, "%s: line %d: '*' (every parameter no other group names) stands alone on its "
                       "line; this one has %d more", s->source, line, n_tok - 1);
    if (star) {
        if (s->rest_group >= 0)
            return rl_errf(e, RL_EINVAL, "%s: line %d: a second '*' group (line %d has one); allowed: one",
                           s->source, line, s->line[s->rest_group]);
        s->rest_group = g;
    }
    return 0;
}

int plan_group_spec_parse(const char *text, size_t len, const char *path, struct plan_group_spec *s,
                          struct rl_err *e)
{
    plan_group_spec_init(s, path);
    if (len > PLAN_GROUP_FILE_MAX_BYTES)
        return rl_errf(e, RL_EINVAL, "%s: %zu bytes; a group file holds at most %d", s->source, len,
                       PLAN_GROUP_FILE_MAX_BYTES);
    const char *p = text, *end = text + len;
    int line = 1, rc = 0;
    while (p < end && !rc) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *ce = le;
        for (const char *q = p; q < le; q++) {
            unsigned char c = (unsigned char)*q;
            if (c == '#' && ce == le)
                ce = q;
            if (c == '\r' && q + 1 == le)
                continue;
            if (ce == le && c != '\t' && (c < 0x20 || c > 0x7e)) {
                rc = rl_errf(e, RL_EINVAL, "%s: line %d: byte 0x%02x at column %d; allowed: printable ASCII, tabs "
                             "and '#' comments", s->source, line, c, (int)(q - p) + 1);
                break;
            }
        }
        if (!rc && ce > p && ce[-1] == '\r')
            ce--;
        if (!rc)
            rc = parse_line(s, p, ce, line, e);
        p = nl ? nl + 1 : end;
        line++;
    }
    if (!rc && s->n_groups == 0)
        rc = rl_errf(e, RL_EINVAL, "%s: no group; a line per param group, in the optimizer's order, e.g. "
                     "'no_decay: *.bias *norm*' then 'decay: *'", s->source);
    if (rc)
        plan_group_spec_free(s);
    return rc;
}

int plan_group_spec_read(const char *path, struct plan_group_spec *s, struct rl_err *e)
{
    char *text = NULL;
    size_t len = 0;
    plan_group_spec_init(s, path);
    int rc = rl_read_file(path, &text, &len, e);
    if (rc)
        return rc;
    rc = plan_group_spec_parse(text, len, path, s, e);
    free(text);
    return rc;
}

int plan_group_spec_add_name(struct plan_group_spec *s, int g, const char *name, struct rl_err *e)
{
    if (g < 0 || g >= PLAN_MAX_GROUPS)
        return rl_errf(e, RL_EINVAL, "%s: param group %d; allowed 0..%d", s->source, g, PLAN_MAX_GROUPS - 1);
    while (s->n_groups <= g) {
        s->label[s->n_groups][0] = '\0';
        s->line[s->n_groups++] = 0;
    }
    RL_TRY(add_pattern(s, g, name, strlen(name), 0, e));
    s->pat[s->n_pat - 1].glob = false;   /* a recorded name is the parameter's, whatever its bytes */
    return 0;
}

/* "group 2 ('mlp', line 3)", "group 2 (line 3)" or "group 2" into buf. */
static const char *group_desc(const struct plan_group_spec *s, int g, char *buf, size_t n)
{
    if (s->label[g][0] && s->line[g] > 0)
        snprintf(buf, n, "group %d ('%s', line %d)", g, s->label[g], s->line[g]);
    else if (s->line[g] > 0)
        snprintf(buf, n, "group %d (line %d)", g, s->line[g]);
    else
        snprintf(buf, n, "group %d", g);
    return buf;
}

int plan_model_group_spec(struct plan_model *m, const struct plan_group_spec *s, struct rl_err *e)
{
    if (s->n_groups < 1 || s->n_groups > PLAN_MAX_GROUPS)
        return rl_errf(e, RL_EINVAL, "%s: %d param groups; allowed 1..%d", s->source, s->n_groups, PLAN_MAX_GROUPS);
    int *grp = malloc((size_t)(m->n_tensors > 0 ? m->n_tensors : 1) * sizeof *grp);
    int count[PLAN_MAX_GROUPS] = {0};
    char a[80], b[80];
    if (!grp)
        return rl_errf(e, RL_ENOMEM, "%s: out of memory for %d tensors", s->source, m->n_tensors);
    int rc = 0;
    /* Exact names first: each must be a tensor of the model, in one group. */
    for (int t = 0; t < m->n_tensors; t++)
        grp[t] = -1;
    for (int k = 0; k < s->n_pat && !rc; k++) {
        const struct plan_group_pattern *q = &s->pat[k];
        if (q->glob || (q->text[0] == '*' && q->text[1] == '\0'))
            continue;
        int t = 0;
        while (t < m->n_tensors && strcmp(m->tensors[t].name, q->text) != 0)
            t++;
        if (t == m->n_tensors)
            rc = rl_errf(e, RL_EINVAL, "%s: %s names '%s', which model %s does not have (its parameters are "
                         "named as named_parameters() names them, shared ones once)", s->source,
                         group_desc(s, q->group, a, sizeof a), q->text, m->name);
        else if (grp[t] >= 0 && grp[t] != q->group)
            rc = rl_errf(e, RL_EINVAL, "%s: '%s' is named by %s and by %s; a parameter belongs to one group",
                         s->source, q->text, group_desc(s, grp[t], a, sizeof a), group_desc(s, q->group, b, sizeof b));
        else
            grp[t] = q->group;
    }
    /* Then patterns, for the tensors no name took: exactly one group's patterns may match. */
    for (int t = 0; t < m->n_tensors && !rc; t++) {
        if (grp[t] >= 0)
            continue;
        int first = -1;
        for (int k = 0; k < s->n_pat && !rc; k++) {
            const struct plan_group_pattern *q = &s->pat[k];
            if (!q->glob || q->group == s->rest_group || fnmatch(q->text, m->tensors[t].name, 0) != 0)
                continue;
            if (grp[t] >= 0 && grp[t] != q->group)
                rc = rl_errf(e, RL_EINVAL, "%s: '%s' is matched by %s ('%s') and by %s ('%s'); a parameter belongs "
                             "to one group (name it exactly in the one it belongs to)", s->source, m->tensors[t].name,
                             group_desc(s, grp[t], a, sizeof a), s->pat[first].text,
                             group_desc(s, q->group, b, sizeof b), q->text);
            else if (grp[t] < 0) {
                grp[t] = q->group;
                first = k;
            }
        }
        if (!rc && grp[t] < 0) {
            if (s->rest_group >= 0)
                grp[t] = s->rest_group;
            else
                rc = rl_errf(e, RL_EINVAL, "%s: parameter '%s' of model %s is in no group; name it, or end with a "
                             "line '*' for every parameter no other group names", s->source, m->tensors[t].name,
                             m->name);
        }
    }
    for (int t = 0; t < m->n_tensors && !rc; t++)
        count[grp[t]]++;
    for (int g = 0; g < s->n_groups && !rc; g++)
        if (count[g] == 0)
            rc = rl_errf(e, RL_EINVAL, "%s: %s takes no parameter of model %s (an empty param group has no "
                         "sub-group)", s->source, group_desc(s, g, a, sizeof a), m->name);
    if (!rc) {
        int seen[PLAN_MAX_GROUPS] = {0};
        for (int t = 0; t < m->n_tensors; t++) {
            m->tensors[t].group = grp[t];
            m->tensors[t].pack_key = 0;
        }
        /* The recorded order: the k-th name of a group is packed k-th. */
        for (int k = 0; s->ordered && k < s->n_pat; k++) {
            const struct plan_group_pattern *q = &s->pat[k];
            for (int t = 0; !q->glob && t < m->n_tensors; t++)
                if (grp[t] == q->group && strcmp(m->tensors[t].name, q->text) == 0) {
                    m->tensors[t].pack_key = ++seen[q->group];
                    break;
                }
        }
        m->n_groups = s->n_groups;
        m->group_rule = PLAN_GROUPS_LIST;
        snprintf(m->group_source, sizeof m->group_source, "%s", s->source);
    }
    free(grp);
    return rc;
}
