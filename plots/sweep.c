/* plots/sweep.c — what the figures drawn from sweeps share: reading them, the .dat header from
 * their metadata, which rows fit, the fastest that fits. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plots/plot_impl.h"

bool plot__is_staircase(const char *policy)
{
    return strncmp(policy, "deepspeed", 9) == 0;
}

/* Reads every input as a sweep; on error frees what was read. */
int plot__read_sweeps(struct plot__fig *f, struct plot__sweep *s, struct rl_err *e)
{
    for (int i = 0; i < f->o->n_in; i++) {
        int rc = plot__sweep_read(f->o->in[i], &s[i], e);
        if (rc) {
            for (int k = 0; k < i; k++)
                plot__sweep_free(&s[k]);
            return rc;
        }
    }
    return 0;
}

void plot__free_sweeps(struct plot__sweep *s, int n)
{
    for (int i = 0; i < n; i++)
        plot__sweep_free(&s[i]);
}

/* "a, b" from the distinct values of a field over the sweeps. */
static void join_distinct(char *buf, size_t n, const struct plot__sweep *s, int ns, size_t field_off)
{
    buf[0] = 0;
    for (int i = 0; i < ns; i++) {
        const char *v = (const char *)&s[i] + field_off;
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen |= strcmp(v, (const char *)&s[k] + field_off) == 0;
        if (!seen)
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? ", " : "", v);
    }
}

void plot__sweep_meta(struct plot__fig *f, const struct plot__sweep *s, int ns)
{
    char model[512], hw[256], pol[256], sch[256], mb[64] = "";
    join_distinct(model, sizeof model, s, ns, offsetof(struct plot__sweep, model));
    join_distinct(hw, sizeof hw, s, ns, offsetof(struct plot__sweep, hardware));
    join_distinct(pol, sizeof pol, s, ns, offsetof(struct plot__sweep, policy));
    join_distinct(sch, sizeof sch, s, ns, offsetof(struct plot__sweep, schedule));
    /* The DeepSpeed releases whose rules applied, after the policies ("not recorded" for a sweep
     * without the field). */
    char ver[128] = "";
    bool unknown = false;
    for (int i = 0; i < ns; i++) {
        unknown |= !s[i].ds_version[0];
        if (s[i].ds_version[0] && !strstr(ver, s[i].ds_version))
            snprintf(ver + strlen(ver), sizeof ver - strlen(ver), "%s%s", ver[0] ? ", " : "", s[i].ds_version);
    }
    if (ver[0])
        snprintf(pol + strlen(pol), sizeof pol - strlen(pol), " (DeepSpeed %s%s)", ver, unknown ? ", not recorded" : "");
    for (int i = 0; i < ns; i++) {
        if (!s[i].micro_batch)
            continue;
        char one[24];
        snprintf(one, sizeof one, "%" PRId64, s[i].micro_batch);
        if (!strstr(mb, one))   /* distinct values; good enough for a header */
            snprintf(mb + strlen(mb), sizeof mb - strlen(mb), "%s%s", mb[0] ? ", " : "", one);
        if (s[i].seq_len && i == 0)
            snprintf(mb + strlen(mb), sizeof mb - strlen(mb), " (sequence %" PRId64 ")", s[i].seq_len);
    }
    struct plot__meta m = {model, hw, pol, sch, mb[0] ? mb : NULL, NULL};
    plot__dat_header(f, &m);
}

/* Sweep s's value of attribute a, as compared between sweeps (the raw field). */
static const char *attr_value(const struct plot__sweep *s, enum plot__attr a)
{
    switch (a) {
    case PLOT__ATTR_HARDWARE: return s->hardware;
    case PLOT__ATTR_MODEL: return s->model;
    case PLOT__ATTR_POLICY: return s->policy;
    case PLOT__ATTR_VERSION: return s->ds_version;
    default: return s->schedule;
    }
}

unsigned plot__sweep_differ(const struct plot__sweep *s, int ns)
{
    unsigned mask = 0;
    for (int a = 0; a < PLOT__ATTR_COUNT; a++)
        for (int i = 1; i < ns; i++)
            if (strcmp(attr_value(&s[i], (enum plot__attr)a), attr_value(&s[0], (enum plot__attr)a)) != 0)
                mask |= PLOT__ATTR_BIT(a);
    return mask;
}

int plot__sweep_parts(const struct plot__sweep *s, unsigned mask, char part[][PLOT__PART_MAX], const char *field[])
{
    static const char *const fields[PLOT__ATTR_COUNT] = {"hardware", "model", "policy", "deepspeed_version",
                                                         "schedule"};
    int n = 0;
    for (int a = 0; a < PLOT__ATTR_COUNT; a++) {
        if (!(mask & PLOT__ATTR_BIT(a)))
            continue;
        char *p = part[n];
        field[n++] = fields[a];
        if (a == PLOT__ATTR_POLICY)
            snprintf(p, PLOT__PART_MAX, "policy %s", s->policy);
        else if (a == PLOT__ATTR_VERSION)
            snprintf(p, PLOT__PART_MAX, "DeepSpeed %s", s->ds_version[0] ? s->ds_version : "version not recorded");
        else if (a == PLOT__ATTR_SCHEDULE)
            snprintf(p, PLOT__PART_MAX, "%s", strncmp(s->schedule, "deepspeed", 9) == 0 ? "DeepSpeed's sequential step"
                                              : strcmp(s->schedule, "overlap") == 0 ? "overlapped step (ratiolab)"
                                                                                     : s->schedule);
        else
            snprintf(p, PLOT__PART_MAX, "%s", attr_value(s, (enum plot__attr)a));
    }
    if (n == 0) {
        field[n] = "in";
        snprintf(part[n++], PLOT__PART_MAX, "%s", s->name);
    }
    return n;
}

/* Does row w fit: the sweep's own verdict, or GPU memory within --gpu-mem (host as the sweep says). */
bool plot__row_fits(const struct plot__fig *f, const struct plot__sweep_row *w)
{
    if (f->o->gpu_mem_bytes > 0)
        return w->gpu_bytes <= f->o->gpu_mem_bytes && w->fits_host;
    return w->fits_gpu && w->fits_host;
}

/* The fastest row that fits (ties: the smaller ratio, i.e. the first); -1 when none fits. */
int plot__best_fit(const struct plot__fig *f, const struct plot__sweep *s)
{
    int best = -1;
    for (int i = 0; i < s->n_rows; i++)
        if (plot__row_fits(f, &s->rows[i]) && (best < 0 || s->rows[i].step_ns < s->rows[best].step_ns))
            best = i;
    return best;
}

void plot__gib_label(char *buf, size_t n, int64_t bytes)
{
    double g = PLOT__GIB(bytes);
    if (fabs(g - llround(g)) < 0.005)
        snprintf(buf, n, "%.0f GiB", g);
    else
        snprintf(buf, n, "%.2f GiB", g);
}

