/* plots/kind_timeline.c — `ratiolab plot timeline`: a Gantt chart of one step from one or two traces.
 *
 * Three steps, as for every kind: gather (the traces read, the categories found, the .dat
 * written), place (the panels, each category's name on its spans, the key through plot.c's
 * placement) and emit (the gnuplot script). */
#include <jansson.h>   /* a metadata event's and a step span's args */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots/plot_impl.h"
#include "traces/layout.h"
#include "traces/trace.h"

/* ---- 3. timeline -------------------------------------------------------------------------------------
 * One row per track (process and thread of the trace) holding its spans, coloured by category
 * (the phase). Two traces are drawn one above the other on one time axis. */
#define TL_MAX_TRACKS 128
#define TL_MAX_CATS 24

struct tl_track {
    int pid, tid;        /* trace ids */
    char label[96];      /* y tick label */
};

struct tl_trace {
    struct trace_doc doc;                 /* the events */
    struct tl_track tracks[TL_MAX_TRACKS];/* sorted by (pid, tid) */
    int n_tracks;                         /* entries in tracks */
    int64_t t0_ns, t1_ns;                 /* first start and last end of a drawn span */
    bool windowed;                        /* the trace marks its steps: only w0..w1 is drawn */
    int64_t w0_ns, w1_ns;                 /* the step drawn (traces/layout.h trace_step_window) */
    char about[160];                      /* that step's ratio, schedule, policy ("" unknown) */
};

static bool pid_wanted(const char *pids, int pid)
{
    if (!pids)
        return true;
    for (const char *p = pids; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            return false;
        if (v == pid)
            return true;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return false;
    }
    return false;
}

/* Whether --pids names any rank's process (1..99). */
static bool pids_name_a_rank(const char *pids)
{
    for (int g = 0; pids && g < TRACE_PID_SOCKET(0) - 1; g++)
        if (pid_wanted(pids, TRACE_PID_RANK(g)))
            return true;
    return false;
}

/* A span (or a run of touching spans) of one category on one track, in ms. */
struct tl_span {
    double a, b;   /* start and end */
    int row;       /* track */
    int cat;       /* category */
};

static int cmp_span(const void *x, const void *y)
{
    const struct tl_span *p = x, *q = y;
    if (p->cat != q->cat)
        return p->cat - q->cat;
    if (p->row != q->row)
        return p->row - q->row;
    return (p->a > q->a) - (p->a < q->a);
}

/* Where a category's name is written in a panel. */
struct tl_name {
    bool on;       /* named in this panel */
    bool inside;   /* on its run (boxed), else beside it */
    double x;      /* anchor, ms */
    int row;       /* track */
    int just;      /* 0 centred on the run, < 0 left of x (after the run), > 0 right of x (before it) */
};

/* A track is drawn when its process is in --pids; a host socket's CPU Adam pool thread of rank g
 * (TRACE_TID_POOL(g)) only when rank g's process is too, if --pids names any rank, so the GPU
 * streams and the CPU threads drawn are those of the same ranks. */
static bool track_wanted(const char *pids, int pid, int tid)
{
    if (!pid_wanted(pids, pid))
        return false;
    if (pid >= TRACE_PID_SOCKET(0) && pid < TRACE_PID_LINKS && pids_name_a_rank(pids))
        return pid_wanted(pids, TRACE_PID_RANK(tid));
    return true;
}

static int check_pids(const char *pids, struct rl_err *e)
{
    if (!pids)
        return 0;
    const char *p = pids;
    for (;;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX || (*end && *end != ','))
            return rl_errf(e, RL_EINVAL, "pids: '%s'; expected trace process ids, e.g. 1,101", pids);
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* The "name" of a metadata event's args. */
static void meta_name(const struct trace_event *ev, char *buf, size_t n)
{
    buf[0] = 0;
    json_t *a = ev->args_json ? json_loads(ev->args_json, 0, NULL) : NULL;
    json_t *v = json_object_get(a, "name");
    if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    json_decref(a);
}

/* Removes every occurrence of `what` from s. */
static void strip_all(char *s, const char *what)
{
    size_t n = strlen(what);
    char *p;
    while ((p = strstr(s, what)))
        memmove(p, p + n, strlen(p + n) + 1);
}

static void track_label(const struct trace_doc *d, int pid, int tid, char *buf, size_t n)
{
    char proc[128] = "", thr[128] = "";
    for (int i = 0; i < d->n_events; i++) {
        const struct trace_event *ev = &d->events[i];
        if (ev->ph != 'M' || ev->pid != pid)
            continue;
        if (strcmp(ev->name, "process_name") == 0)
            meta_name(ev, proc, sizeof proc);
        else if (strcmp(ev->name, "thread_name") == 0 && ev->tid == tid)
            meta_name(ev, thr, sizeof thr);
    }
    /* Short forms: "GPU 0 (V100..., switch 0, socket 0)" -> "GPU 0", "copy engine D2H" -> "D2H". */
    char *paren = strstr(proc, " (");
    if (paren)
        *paren = 0;
    if (strncmp(proc, "host ", 5) == 0)
        memmove(proc, proc + 5, strlen(proc + 5) + 1);
    strip_all(thr, "copy engine ");
    strip_all(thr, "NCCL ");
    strip_all(thr, " stream");
    strip_all(thr, " pool");
    if (!proc[0])
        snprintf(proc, sizeof proc, "pid %d", pid);
    if (!thr[0])
        snprintf(thr, sizeof thr, "tid %d", tid);
    /* A per-rank thread of a shared process ("CPU Adam, rank 3" on a socket) is named by its rank. */
    char *r = strstr(thr, ", rank ");
    if (r) {
        *r = 0;
        snprintf(buf, n, "rank %s %s", r + 7, thr);
        return;
    }
    snprintf(buf, n, "%s %s", proc, thr);
}

static int cmp_track(const void *x, const void *y)
{
    const struct tl_track *a = x, *b = y;
    return a->pid != b->pid ? (a->pid < b->pid ? -1 : 1) : (a->tid > b->tid) - (a->tid < b->tid);
}

static const char *span_cat(const struct trace_event *ev)
{
    return ev->cat && *ev->cat ? ev->cat : ev->name;
}

/* A span the timeline draws: a phase's (or another category's) span of a wanted track, inside the
 * step drawn; step spans themselves are not drawn. */
static bool span_drawn(const struct plot__fig *f, const struct tl_trace *t, const struct trace_event *ev)
{
    if (ev->ph != 'X' || ev->dur_ns <= 0 || !track_wanted(f->o->pids, ev->pid, ev->tid))
        return false;
    if (ev->cat && strcmp(ev->cat, TRACE_CAT_STEP) == 0)
        return false;
    return !t->windowed || (ev->ts_ns >= t->w0_ns && ev->ts_ns < t->w1_ns);
}

/* "ratio 0.50 (honored 0.5006), schedule overlap, policy exact" from the step span's args. */
static void step_about(const struct tl_trace *t, char *buf, size_t n)
{
    buf[0] = 0;
    for (int i = 0; i < t->doc.n_events; i++) {
        const struct trace_event *ev = &t->doc.events[i];
        if (ev->ph != 'X' || !ev->cat || strcmp(ev->cat, TRACE_CAT_STEP) != 0 || ev->ts_ns != t->w0_ns)
            continue;
        json_t *a = ev->args_json ? json_loads(ev->args_json, 0, NULL) : NULL;
        json_t *rq = json_object_get(a, RL_KEY_REQUESTED_RATIO), *hn = json_object_get(a, RL_KEY_HONORED_RATIO);
        json_t *sc = json_object_get(a, "schedule"), *po = json_object_get(a, "policy");
        if (json_is_number(rq))
            snprintf(buf + strlen(buf), n - strlen(buf), "ratio %.2f", json_number_value(rq));
        if (json_is_number(hn))
            snprintf(buf + strlen(buf), n - strlen(buf), " (honored %.4f)", json_number_value(hn));
        if (json_is_string(sc))
            snprintf(buf + strlen(buf), n - strlen(buf), "%sschedule %s", buf[0] ? ", " : "", json_string_value(sc));
        if (json_is_string(po))
            snprintf(buf + strlen(buf), n - strlen(buf), "%spolicy %s", buf[0] ? ", " : "", json_string_value(po));
        json_decref(a);
        return;
    }
}

static int tl_read(const struct plot__fig *f, const char *path, struct tl_trace *t, struct rl_err *e)
{
    memset(t, 0, sizeof *t);
    int rc = trace_read(path, &t->doc, e);
    if (rc)
        return rc;
    t->windowed = trace_step_window(&t->doc, &t->w0_ns, &t->w1_ns) == 1;
    if (t->windowed)
        step_about(t, t->about, sizeof t->about);
    t->t0_ns = INT64_MAX;
    t->t1_ns = INT64_MIN;
    for (int i = 0; i < t->doc.n_events; i++) {
        const struct trace_event *ev = &t->doc.events[i];
        if (!span_drawn(f, t, ev))
            continue;
        int k = 0;
        while (k < t->n_tracks && (t->tracks[k].pid != ev->pid || t->tracks[k].tid != ev->tid))
            k++;
        if (k == t->n_tracks) {
            if (k == TL_MAX_TRACKS) {
                trace_doc_free(&t->doc);
                return rl_errf(e, RL_EINVAL, "%s: more than %d tracks with spans; choose processes with pids",
                               path, TL_MAX_TRACKS);
            }
            t->tracks[k].pid = ev->pid;
            t->tracks[k].tid = ev->tid;
            t->n_tracks++;
        }
        if (ev->ts_ns < t->t0_ns)
            t->t0_ns = ev->ts_ns;
        if (ev->ts_ns + ev->dur_ns > t->t1_ns)
            t->t1_ns = ev->ts_ns + ev->dur_ns;
    }
    if (!t->n_tracks) {
        trace_doc_free(&t->doc);
        return rl_errf(e, RL_EINVAL, "%s: no spans (\"ph\":\"X\")%s; a timeline needs a trace of a step "
                       "(ratiolab predict --trace, or the executor's)", path, f->o->pids ? " in the pids given" : "");
    }
    if (t->windowed)   /* the step's own start is time zero, as the simulator's step starts at 0 */
        t->t0_ns = t->w0_ns;
    qsort(t->tracks, (size_t)t->n_tracks, sizeof t->tracks[0], cmp_track);
    for (int k = 0; k < t->n_tracks; k++)
        track_label(&t->doc, t->tracks[k].pid, t->tracks[k].tid, t->tracks[k].label, sizeof t->tracks[k].label);
    return 0;
}

/* The figure between its steps: what gather found, then what place decided. */
struct tl_fig {
    struct tl_trace *t;                  /* the traces (two allocated) */
    int nt;                              /* traces read */
    char cats[TL_MAX_CATS][32];          /* the categories drawn: the phases in their order, then others */
    int n_cats;                          /* entries in cats */
    int n_spans[2][TL_MAX_CATS];         /* spans per trace and category (empty blocks are not plotted) */
    double span_ms;                      /* the longer step, ms */
    /* place */
    double row_in;                       /* a track's height, inches */
    bool shared_axis;                    /* the panels share one time axis */
    struct plot__grid g;                 /* the panels' margins and the figure's height */
    struct tl_name name[2][TL_MAX_CATS]; /* where each category is named in each panel */
    int keyed[TL_MAX_CATS];              /* the categories the key lists (unnamed in some panel) */
    int n_keyed;                         /* entries in keyed */
    struct plot__key key;                /* the key */
};

/* Whether cats already holds name. */
static bool have_cat(const struct tl_fig *c, const char *name)
{
    bool have = false;
    for (int k = 0; k < c->n_cats; k++)
        have |= strcmp(c->cats[k], name) == 0;
    return have;
}

/* Categories: the simulator's phases in their order, then others by first appearance. */
static int gather_cats(const struct plot__fig *f, struct tl_fig *c, struct rl_err *e)
{
    for (int q = 0; q < TRACE_N_PHASES; q++)
        for (int i = 0; i < c->nt && (size_t)c->n_cats < TL_MAX_CATS; i++) {
            bool used = false;
            for (int k = 0; k < c->t[i].doc.n_events && !used; k++) {
                const struct trace_event *ev = &c->t[i].doc.events[k];
                used = span_drawn(f, &c->t[i], ev) && strcmp(span_cat(ev), trace_phases[q].name) == 0;
            }
            if (used && !have_cat(c, trace_phases[q].name))
                snprintf(c->cats[c->n_cats++], sizeof c->cats[0], "%s", trace_phases[q].name);
        }
    for (int i = 0; i < c->nt; i++)
        for (int k = 0; k < c->t[i].doc.n_events; k++) {
            const struct trace_event *ev = &c->t[i].doc.events[k];
            if (!span_drawn(f, &c->t[i], ev) || have_cat(c, span_cat(ev)))
                continue;
            if (c->n_cats == TL_MAX_CATS)
                return rl_errf(e, RL_EINVAL, "%s: more than %d span categories", f->o->in[i], TL_MAX_CATS);
            snprintf(c->cats[c->n_cats++], sizeof c->cats[0], "%.31s", span_cat(ev));
        }
    return 0;
}

/* The row of the track an event is on. */
static int track_row(const struct tl_trace *t, const struct trace_event *ev)
{
    int row = 0;
    while (t->tracks[row].pid != ev->pid || t->tracks[row].tid != ev->tid)
        row++;
    return row;
}

/* Trace i's data blocks: its tracks, then its spans of each category. */
static void gather_blocks(struct plot__fig *f, struct tl_fig *c, int i)
{
    const struct tl_trace *t = &c->t[i];
    char what[512];
    snprintf(what, sizeof what, "%s: tracks (row, process id, thread id, label); times below are ms from the "
             "first span's start", plot__base(f->o->in[i]));
    plot__block(f, what);
    for (int k = 0; k < t->n_tracks; k++)
        fprintf(f->dat, "%d\t%d\t%d\t%s\n", k, t->tracks[k].pid, t->tracks[k].tid, t->tracks[k].label);
    c->span_ms = fmax(c->span_ms, (double)(t->t1_ns - t->t0_ns) * 1e-6);
    for (int q = 0; q < c->n_cats; q++) {
        snprintf(what, sizeof what, "%s: spans of %s (start_ms, end_ms, row)", plot__base(f->o->in[i]), c->cats[q]);
        plot__block(f, what);
        for (int k = 0; k < t->doc.n_events; k++) {
            const struct trace_event *ev = &t->doc.events[k];
            if (!span_drawn(f, t, ev) || strcmp(span_cat(ev), c->cats[q]) != 0)
                continue;
            fprintf(f->dat, "%.6f\t%.6f\t%d\n", (double)(ev->ts_ns - t->t0_ns) * 1e-6,
                    (double)(ev->ts_ns + ev->dur_ns - t->t0_ns) * 1e-6, track_row(t, ev));
            c->n_spans[i][q]++;
        }
        fputs("?\t?\t?\n", f->dat);   /* a block is never empty */
    }
}

/* Gather: the traces read, the categories found, the .dat written. On error nothing is held. */
static int gather(struct plot__fig *f, struct tl_fig *c, struct rl_err *e)
{
    c->nt = f->o->n_in;
    if (c->nt > 2)
        return rl_errf(e, RL_EINVAL, "in: %d traces; plot timeline draws one, or two (predicted, then measured)",
                       c->nt);
    int rc = check_pids(f->o->pids, e);
    if (rc)
        return rc;
    c->t = calloc(2, sizeof *c->t);
    if (!c->t)
        return rl_errf(e, RL_ENOMEM, "plot timeline: out of memory");
    for (int i = 0; i < c->nt; i++)
        if ((rc = tl_read(f, f->o->in[i], &c->t[i], e))) {
            c->nt = i;   /* those read are freed */
            return rc;
        }
    if ((rc = gather_cats(f, c, e)))
        return rc;
    /* The header names what each trace ran (a step span's args), so a figure without a title still
     * says its ratio and schedule. */
    int nt = c->nt;
    char about[2][200];
    for (int i = 0; i < 2; i++)
        snprintf(about[i], sizeof about[i], "%s%s",
                 nt > 1 && i < nt && c->t[i].about[0] ? (i ? "measured: " : "predicted: ") : "",
                 i < nt ? c->t[i].about : "");
    char run[420];
    snprintf(run, sizeof run, "%s%s%s", about[0], about[0][0] && about[1][0] ? "; " : "", about[1]);
    struct plot__meta m = {NULL, NULL, NULL, NULL, NULL, run[0] ? run : NULL};
    plot__dat_header(f, &m);
    for (int i = 0; i < nt; i++)
        if (c->t[i].windowed)
            fprintf(f->dat, "# %s: one step drawn, %.6f ms to %.6f ms of the trace (its first that is not a "
                            "warm-up)\n", plot__base(f->o->in[i]), (double)c->t[i].w0_ns * 1e-6,
                    (double)c->t[i].w1_ns * 1e-6);
    for (int i = 0; i < nt; i++)
        gather_blocks(f, c, i);
    return 0;
}

/* Names category q in panel i on run r (its widest): inside the run where the name fits, else just
 * beside it where nothing is drawn (a direct label, which then occupies its place). */
static void place_name(const struct tl_fig *c, struct plot__occ *occ, struct tl_name *nm, int q,
                       const struct tl_span *r)
{
    double tw = plot__text_w((int)strlen(c->cats[q]), 7), x0 = plot__occ_x(occ, r->a), x1 = plot__occ_x(occ, r->b);
    /* the text's height, about 0.3 of a track either side of its centre */
    double y0 = plot__occ_y(occ, r->row + 0.3), y1 = plot__occ_y(occ, r->row - 0.3);
    double *pa = occ->panel[occ->n_panels - 1];
    if (x1 - x0 >= tw + 0.12) {
        *nm = (struct tl_name){true, true, (r->a + r->b) / 2, r->row, 0};
    } else if (x1 + 0.06 + tw <= pa[2] && plot__occ_clear(occ, x1 + 0.035, y0, x1 + 0.06 + tw, y1)) {
        *nm = (struct tl_name){true, false, r->b, r->row, -1};   /* half a character after the run */
        plot__occ_box_in(occ, x1 + 0.035, y0, x1 + 0.06 + tw, y1);
    } else if (x0 - 0.06 - tw >= pa[0] && plot__occ_clear(occ, x0 - 0.06 - tw, y0, x0 - 0.035, y1)) {
        *nm = (struct tl_name){true, false, r->a, r->row, 1};
        plot__occ_box_in(occ, x0 - 0.06 - tw, y0, x0 - 0.035, y1);
    }
}

/* Panel i in occ (its plot area below *oy_in, which moves down past it): its spans, then each
 * category's name on its widest run of spans (spans of one track that touch). */
static void place_panel(const struct plot__fig *f, struct tl_fig *c, int i, struct plot__occ *occ, double *oy_in)
{
    const struct tl_trace *t = &c->t[i];
    const struct plot__grid *g = &c->g;
    double h = t->n_tracks * c->row_in, own = (double)(t->t1_ns - t->t0_ns) * 1e-6;
    double range = (c->shared_axis ? c->span_ms : own) * 1.01;
    plot__occ_panel(occ, g->left_in, *oy_in - g->top_in - h, plot__width_in(f) - g->right_in, *oy_in - g->top_in, 0,
                    range, t->n_tracks - 0.5, -0.5, false, false);
    *oy_in -= g->top_in + h + (i == c->nt - 1 || !c->shared_axis ? g->bottom_in : 0.12);
    int n_runs = 0;
    struct tl_span *runs = t->doc.n_events ? malloc((size_t)t->doc.n_events * sizeof *runs) : NULL;
    for (int k = 0; runs && k < t->doc.n_events; k++) {
        const struct trace_event *ev = &t->doc.events[k];
        if (!span_drawn(f, t, ev))
            continue;
        int row = track_row(t, ev), q = 0;
        while (q < c->n_cats && strcmp(c->cats[q], span_cat(ev)) != 0)
            q++;
        double a = (double)(ev->ts_ns - t->t0_ns) * 1e-6, z = (double)(ev->ts_ns + ev->dur_ns - t->t0_ns) * 1e-6;
        plot__occ_box(occ, a, row - 0.4, z, row + 0.4);
        runs[n_runs++] = (struct tl_span){a, z, row, q};
    }
    qsort(runs, (size_t)n_runs, sizeof *runs, cmp_span);
    struct tl_span widest[TL_MAX_CATS];
    memset(widest, 0, sizeof widest);
    for (int k = 0; k < n_runs;) {   /* merge the spans of a run, keep each category's widest */
        struct tl_span r = runs[k++];
        while (k < n_runs && runs[k].cat == r.cat && runs[k].row == r.row && runs[k].a <= r.b + range * 0.002)
            r.b = fmax(r.b, runs[k++].b);
        if (r.cat < c->n_cats && r.b - r.a > widest[r.cat].b - widest[r.cat].a)
            widest[r.cat] = r;
    }
    free(runs);
    for (int q = 0; q < c->n_cats; q++)
        if (c->n_spans[i][q])
            place_name(c, occ, &c->name[i][q], q, &widest[q]);
}

/* Place: the panels (rows of 0.13 in; panels share the time axis unless one step is more than twice
 * the other), each category named in each panel on its widest run, inside it where the name fits,
 * else beside it where nothing is drawn; the key lists the categories left unnamed in some panel.
 * It goes where no span or name lies; else in a strip under the panels. */
static void place(const struct plot__fig *f, struct tl_fig *c)
{
    const struct tl_trace *t = c->t;
    int nt = c->nt;
    size_t longest = 0;
    for (int i = 0; i < nt; i++)
        for (int k = 0; k < t[i].n_tracks; k++)
            longest = strlen(t[i].tracks[k].label) > longest ? strlen(t[i].tracks[k].label) : longest;
    c->row_in = 0.13;
    c->g = (struct plot__grid){1, 1, 0, 0.2 + 0.052 * (double)longest, 0.15, nt > 1 ? 0.22 : 0.08, 0.36,
                               f->o->title && *f->o->title ? 0.25 : 0, 0};
    double d0 = (double)(t[0].t1_ns - t[0].t0_ns), d1 = nt > 1 ? (double)(t[1].t1_ns - t[1].t0_ns) : d0;
    c->shared_axis = fmax(d0, d1) <= 2 * fmin(d0, d1);
    double body = 0;
    for (int i = 0; i < nt; i++)
        body += t[i].n_tracks * c->row_in + c->g.top_in + (i == nt - 1 || !c->shared_axis ? c->g.bottom_in : 0.12);
    c->g.height_in = body + c->g.title_in;
    struct plot__occ occ = {0};
    double oy = c->g.height_in - c->g.title_in;
    for (int i = 0; i < nt; i++)
        place_panel(f, c, i, &occ, &oy);
    for (int q = 0; q < c->n_cats; q++) {
        bool unnamed = false;
        for (int i = 0; i < nt; i++)
            unnamed |= c->n_spans[i][q] > 0 && !c->name[i][q].on;
        if (unnamed)
            c->keyed[c->n_keyed++] = q;
    }
    plot__key_init(&c->key, c->n_keyed);
    for (int k = 0; k < c->n_keyed; k++)
        plot__key_title(&c->key, k, c->cats[c->keyed[k]]);
    plot__key_settle(f, &c->g, &c->key, &occ);
    plot__occ_free(&occ);
}

/* Panel i: its margins (from *y_top_in, which moves down past it), title, time axis, tracks, the
 * categories' names and the spans. *b counts the data blocks. */
static void emit_panel(struct plot__fig *f, const struct tl_fig *c, int i, double *y_top_in, int *b)
{
    FILE *gp = f->gp;
    const struct tl_trace *t = &c->t[i];
    const struct plot__grid *g = &c->g;
    double h = t->n_tracks * c->row_in;
    bool last = i == c->nt - 1;
    fprintf(gp, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n", g->left_in / plot__width_in(f),
            1 - g->right_in / plot__width_in(f));
    fprintf(gp, "set tmargin at screen %.4f\nset bmargin at screen %.4f\n", (*y_top_in - g->top_in) / g->height_in,
            (*y_top_in - g->top_in - h) / g->height_in);
    *y_top_in -= g->top_in + h + (last || !c->shared_axis ? g->bottom_in : 0.12);
    if (c->nt > 1) {
        fprintf(gp, "set title '%s: ' . ", i == 0 ? "predicted" : "measured");
        plot__gp_str(f, "in", plot__base(f->o->in[i]));
        fputs("\n", gp);
    }
    if (!c->shared_axis) {
        double own = (double)(t->t1_ns - t->t0_ns) * 1e-6, tk = plot__tick(own, 6);
        fprintf(gp, "set xrange [0:%g]\nset xtics %g\nset xlabel 'time (ms), own axis' offset 0,0.9\n"
                    "set format x '%s'\n", own * 1.01, tk, plot__tick_format(tk));
    } else if (last) {
        fprintf(gp, "set xlabel 'time (ms)' offset 0,0.9\nset format x '%s'\n",
                plot__tick_format(plot__tick(c->span_ms, 6)));
    } else {
        fputs("unset xlabel\nset format x ''\n", gp);
    }
    fprintf(gp, "set yrange [%d.5:-0.5]\nset ytics (", t->n_tracks - 1);
    for (int k = 0; k < t->n_tracks; k++) {
        plot__gp_tic(f, "track", t->tracks[k].label);
        fprintf(gp, " %d%s", k, k + 1 < t->n_tracks ? ", " : ")\n");
    }
    (*b)++;   /* the track list block */
    fputs("unset label\n", gp);
    for (int q = 0; q < c->n_cats; q++) {
        const struct tl_name *nm = &c->name[i][q];
        if (!nm->on)
            continue;
        fprintf(gp, "set label %d ", 200 + q);
        plot__gp_str(f, "category", c->cats[q]);
        fprintf(gp, " at %.6f, %d %s %sfront font ',%.3g'%s\n", nm->x, nm->row,
                nm->just < 0 ? "left" : nm->just > 0 ? "right" : "center",
                nm->just < 0 ? "offset 0.5,0 " : nm->just > 0 ? "offset -0.5,0 " : "", plot__pt(f, 7),
                nm->inside ? " boxed" : "");
    }
    fputs("plot ", gp);
    bool first = true;
    for (int q = 0; q < c->n_cats; q++, (*b)++) {
        int pat;
        const char *col = plot__phase_color(c->cats[q], q, &pat);
        if (!c->n_spans[i][q])
            continue;
        fprintf(gp, "%sdatafile index %d using (($1+$2)/2):3:1:2:($3-0.4):($3+0.4) with boxxyerror fc rgb '%s' ",
                first ? "" : ", \\\n     ", *b, col);
        if (pat)
            fprintf(gp, "fs pattern %d border lc rgb '%s'", pat, col);   /* the outline keeps a narrow span visible */
        else
            fputs("fs solid 1.0", gp);
        first = false;
    }
    fputc('\n', gp);
}

/* Emit: the script, from what place decided. */
static void emit(struct plot__fig *f, const struct tl_fig *c)
{
    plot__gp_preamble(f, c->g.height_in);
    FILE *gp = f->gp;
    double tick = plot__tick(c->span_ms, 6);
    plot__multiplot(f);
    fputs("# direct labels: a category's name on its widest span of a panel where it fits\n"
          "set style textbox opaque fc rgb '#ffffff' noborder margins 0.5, 0.2\n", gp);
    fprintf(gp, "set style fill solid 1.0 noborder\nset xrange [0:%g]\nset xtics %g format '%s'\n"
                "unset grid\nset grid xtics lc rgb '#e0e0e0' lw 0.6\nunset key\nset ytics scale 0\n",
            c->span_ms * 1.01, tick, plot__tick_format(tick));
    /* Two steps share the time axis unless one is more than twice the other (a prediction at another
     * scale): then each panel gets its own axis, and says so. */
    if (!c->shared_axis)
        fputs("# the two steps differ by more than 2x: each panel has its own time axis\n", gp);
    double y_top = c->g.height_in - c->g.title_in;
    int b = 0;
    for (int i = 0; i < c->nt; i++)
        emit_panel(f, c, i, &y_top, &b);
    if (!c->key.n)
        fputs("# the key: none, every category drawn is named on its spans\n", gp);
    else
        plot__key_begin(f, &c->g, &c->key);
    for (int k = 0; k < c->key.n; k++) {
        int q = c->keyed[k], pat;
        const char *col = plot__phase_color(c->cats[q], q, &pat);
        plot__key_entry(f, &c->g, &c->key, k);
        if (pat)
            fprintf(gp, "NaN with boxes fc rgb '%s' fs pattern %d border lc rgb '%s' title ", col, pat, col);
        else
            fprintf(gp, "NaN with boxes fc rgb '%s' fs solid 1.0 title ", col);
        plot__gp_str(f, "category", c->cats[q]);
        fputc('\n', gp);
    }
    fputs("unset multiplot\n", gp);
}

int plot__timeline(struct plot__fig *f, struct rl_err *e)
{
    struct tl_fig *c = calloc(1, sizeof *c);
    if (!c)
        return rl_errf(e, RL_ENOMEM, "plot timeline: out of memory");
    int rc = gather(f, c, e);
    if (!rc) {
        place(f, c);
        emit(f, c);
    }
    for (int i = 0; c->t && i < c->nt; i++)
        trace_doc_free(&c->t[i].doc);
    free(c->t);
    free(c);
    return rc;
}
