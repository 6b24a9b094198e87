/* tests/check_plot_figures.c — what a reviewer checks on every figure, for every kind at both widths
 * (rendered to PNG by the binary and gnuplot): nothing runs off the page (the rendered PNG's
 * outermost pixels are all background, so no key, label or title is clipped), every key is placed
 * inside the page, and no two series in a key look alike (the same colour with the same marker,
 * dash and fill). Also the figures' own promises: the time figure's default key is the phase groups
 * (at most 6 coloured bands plus idle), the timeline's key lists only categories drawn. About 4 s. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/util.h"

static const char *gold(const char *name)
{
    static char p[8][1024];
    static int slot;
    char *s = p[slot++ % 8];
    snprintf(s, 1024, "%s/tests/golden/plots/%s", tu_src(), name);
    return s;
}

/* One figure per kind, from the committed inputs. */
static const struct {
    const char *name;   /* figure stem */
    const char *args;   /* after `plot`, with %s for the golden folder (as many as used) */
} figs[] = {
    {"memory", "memory --in %1$s/sweep-ds012.json --in %1$s/sweep-exact.json"},
    {"time", "time --in %1$s/sweep-ds012.json --in %1$s/sweep-overlap.json --gpu-mem 12GiB --speedup no-offload"},
    {"timeline", "timeline --in %1$s/trace-predicted.json --in %1$s/trace-measured.json"},
    {"parity", "parity --in %1$s/validate-report.json"},
    {"scaling", "scaling --in %1$s/sweep-ds012.json --in %1$s/sweep-ds012-16gpus.json --in %1$s/sweep-overlap.json "
                "--in %1$s/sweep-overlap-16gpus.json --y tokens"},
    {"monitor", "monitor --in %1$s/monitor.csv --marks %1$s/monitor-trace.json"},
    {"monitor-long-mark", "monitor --in %1$s/monitor.csv --marks long-marks.json"},   /* written by the test */
};
#define N_FIGS ((int)(sizeof figs / sizeof figs[0]))

/* ---- a PNG reader for 8-bit RGB / RGBA, non-interlaced (what pngcairo writes) ---------------- */
struct png {
    unsigned w, h, ch;      /* size and channels (3 or 4) */
    unsigned char *px;      /* h rows of w * ch bytes */
};

static unsigned be32(const unsigned char *b) { return (unsigned)b[0] << 24 | (unsigned)b[1] << 16 | (unsigned)b[2] << 8 | b[3]; }

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static bool png_load(const char *path, struct png *p)
{
    size_t n = 0;
    unsigned char *b = (unsigned char *)tu_read(path, &n);
    if (!b || n < 33 || memcmp(b + 12, "IHDR", 4) != 0)
        return free(b), false;
    p->w = be32(b + 16);
    p->h = be32(b + 20);
    int ctype = b[25];
    if (b[24] != 8 || (ctype != 2 && ctype != 6) || b[28] != 0)
        return free(b), false;
    p->ch = ctype == 6 ? 4 : 3;
    size_t zcap = n, zn = 0;
    unsigned char *z = malloc(zcap);
    for (size_t off = 8; off + 12 <= n;) {
        unsigned len = be32(b + off);
        if (memcmp(b + off + 4, "IDAT", 4) == 0) {
            memcpy(z + zn, b + off + 8, len);
            zn += len;
        }
        off += 12 + (size_t)len;
    }
    size_t stride = (size_t)p->w * p->ch, raw_n = (stride + 1) * p->h;
    unsigned char *raw = malloc(raw_n);
    uLongf got = (uLongf)raw_n;
    bool ok = uncompress(raw, &got, z, (uLong)zn) == Z_OK && got == raw_n;
    free(z);
    free(b);
    p->px = malloc(stride * p->h);
    for (unsigned y = 0; ok && y < p->h; y++) {
        const unsigned char *in = raw + y * (stride + 1) + 1;
        unsigned char *out = p->px + y * stride, *up = y ? out - stride : NULL;
        int filter = in[-1];
        for (size_t x = 0; x < stride; x++) {
            int a = x >= p->ch ? out[x - p->ch] : 0, u = up ? up[x] : 0, c = up && x >= p->ch ? up[x - p->ch] : 0;
            int v = in[x];
            v += filter == 1 ? a : filter == 2 ? u : filter == 3 ? (a + u) / 2 : filter == 4 ? paeth(a, u, c) : 0;
            out[x] = (unsigned char)v;
        }
    }
    free(raw);
    if (!ok)
        free(p->px);
    return ok;
}

/* Whether pixel (x, y) is background (white; a transparent pixel counts as background). */
static bool blank(const struct png *p, unsigned x, unsigned y)
{
    const unsigned char *q = p->px + ((size_t)y * p->w + x) * p->ch;
    return (p->ch == 4 && q[3] == 0) || (q[0] > 245 && q[1] > 245 && q[2] > 245);
}

/* ---- the script's keys ---------------------------------------------------------------------------- */
/* The look of one series in a key: what it is drawn with, its colour, dash, marker and fill. */
struct look {
    char with[24], color[24], dash[8], point[8], fill[24];
};

static void word_after(const char *s, const char *key, char *out, size_t n, const char *dflt)
{
    const char *p = strstr(s, key);
    if (!p) {
        snprintf(out, n, "%s", dflt);
        return;
    }
    p += strlen(key);
    size_t k = 0;
    while (*p && *p != ' ' && *p != ',' && k + 1 < n)
        out[k++] = *p++;
    out[k] = 0;
}

static void look_of(const char *clause, struct look *l)
{
    word_after(clause, "with ", l->with, sizeof l->with, "?");
    char lt[8];
    word_after(clause, " lt ", lt, sizeof lt, "");
    if (strstr(clause, "rgb '"))
        word_after(strstr(clause, "rgb '") - 3, "rgb ", l->color, sizeof l->color, "?");
    else
        snprintf(l->color, sizeof l->color, "lt%s", lt);
    word_after(clause, " dt ", l->dash, sizeof l->dash, "1");
    bool marks = strcmp(l->with, "points") == 0 || strcmp(l->with, "linespoints") == 0;
    word_after(clause, " pt ", l->point, sizeof l->point, marks ? lt : "-");
    word_after(clause, "fs ", l->fill, sizeof l->fill, "-");
    if (strcmp(l->fill, "pattern") == 0)
        word_after(clause, "fs pattern ", l->fill, sizeof l->fill, "?");
}

/* Every clause with a title, across the script: its look and title. Returns the count. */
static int key_looks(const char *gp, struct look *l, char titles[][96], int max)
{
    int n = 0;
    const char *p = gp;
    while ((p = strstr(p, " title ")) && n < max) {
        /* the clause starts after the previous ", \" or "plot " */
        const char *start = p;
        while (start > gp && !(start[-1] == '\n' && (strncmp(start, "plot ", 5) == 0 || strncmp(start, "     ", 5) == 0)))
            start--;
        char clause[512];
        snprintf(clause, sizeof clause, "%.*s", (int)(p - start), start);
        look_of(clause, &l[n]);
        const char *t = p + 7;   /* a quoted title: up to its closing quote */
        const char *close = (*t == '"' || *t == '\'') ? strchr(t + 1, *t) : NULL;
        snprintf(titles[n], 96, "%.*s", close ? (int)(close + 1 - t) : (int)strcspn(t, "\n"), t);
        n++;
        p += 7;
    }
    return n;
}

START_TEST(every_figure_fits_its_page_and_its_keys_tell_series_apart)
{
    /* A mark as long as an executor's log line (a key entry wider than a single column). */
    char *marks = tu_read(gold("monitor-trace.json"), NULL);
    ck_assert_ptr_nonnull(marks);
    char *at = strstr(marks, "After creating fp16 partitions: 1");
    ck_assert_ptr_nonnull(at);
    size_t n0 = (size_t)(at - marks);
    char *long_marks = malloc(strlen(marks) + 200);
    snprintf(long_marks, strlen(marks) + 200, "%.*sAfter creating fp16 partitions and the optimizer's host buffers "
             "on every rank: 1%s", (int)n0, marks, at + strlen("After creating fp16 partitions: 1"));
    tu_write("long-marks.json", long_marks);
    free(long_marks);
    free(marks);
    for (int wdt = 0; wdt < 2; wdt++) {
        char stem[64], args[2048];
        snprintf(stem, sizeof stem, "%s-%s", figs[_i].name, wdt ? "double" : "single");
        char golden[1024];
        snprintf(golden, sizeof golden, "%s/tests/golden/plots", tu_src());
        snprintf(args, sizeof args, figs[_i].args, golden);
        struct tu_run r;
        tu_ratiolab(&r, "plot %s --width %s --out %s.png", args, wdt ? "double" : "single", stem);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", stem, r.status, r.err);
        tu_run_free(&r);
        /* Nothing runs off the page: the outermost 2 pixels all round are background. */
        char png_name[96];
        snprintf(png_name, sizeof png_name, "%s.png", stem);
        struct png p;
        ck_assert_msg(png_load(tu_path(png_name), &p), "%s: not a PNG this reader takes", png_name);
        ck_assert_uint_eq(p.w, wdt ? 1400 : 700);
        for (unsigned x = 0; x < p.w; x++)
            for (unsigned e = 0; e < 2; e++)
                ck_assert_msg(blank(&p, x, e) && blank(&p, x, p.h - 1 - e), "%s: drawn at the top or bottom edge "
                              "(x %u): something is clipped", png_name, x);
        for (unsigned y = 0; y < p.h; y++)
            for (unsigned e = 0; e < 2; e++)
                ck_assert_msg(blank(&p, e, y) && blank(&p, p.w - 1 - e, y), "%s: drawn at the left or right edge "
                              "(y %u): something is clipped", png_name, y);
        free(p.px);
        /* Every key placed inside the page; no two series in the keys look alike. */
        char gp_name[96];
        snprintf(gp_name, sizeof gp_name, "%s.gp", stem);
        char *gp = tu_slurp(gp_name);
        for (const char *k = gp; (k = strstr(k, "set key at screen "));) {
            double x, y;
            ck_assert_int_eq(sscanf(k, "set key at screen %lf, screen %lf", &x, &y), 2);
            ck_assert_msg(x >= 0 && x < 1 && y > 0 && y <= 1, "%s: a key at screen %g, %g", gp_name, x, y);
            k++;
        }
        struct look l[64];
        char titles[64][96];
        int n = key_looks(gp, l, titles, 64);
        ck_assert_msg(n > 0, "%s: no key", gp_name);
        for (int a = 0; a < n; a++)
            for (int b = a + 1; b < n; b++)
                ck_assert_msg(strcmp(titles[a], titles[b]) == 0 ||   /* one series drawn and keyed */
                                  strcmp(l[a].with, l[b].with) || strcmp(l[a].color, l[b].color) ||
                                  strcmp(l[a].dash, l[b].dash) || strcmp(l[a].point, l[b].point) ||
                                  strcmp(l[a].fill, l[b].fill),
                              "%s: %s and %s look alike (%s, colour %s, dash %s, point %s, fill %s)", gp_name, titles[a],
                              titles[b], l[a].with, l[a].color, l[a].dash, l[a].point, l[a].fill);
        free(gp);
    }
}
END_TEST

/* The time figure's key is the phase groups by default; --phases all lists phases. */
START_TEST(time_key_is_the_phase_groups)
{
    struct tu_run r;
    tu_ratiolab(&r, "plot time --in '%s' --out g.png && %s plot time --phases all --in '%s' --out a.png",
                gold("sweep-ds012.json"), tu_bin(), gold("sweep-ds012.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    char *g = tu_slurp("g.gp"), *a = tu_slurp("a.gp");
    struct look l[64];
    char titles[64][96];
    int ng = key_looks(g, l, titles, 64), na = key_looks(a, l, titles, 64);
    /* groups: at most compute, collectives, PCIe, GPU opt, CPU opt, casts, bubble + idle, shading, baseline */
    ck_assert_msg(ng <= 10, "%d key entries by default", ng);
    ck_assert_ptr_nonnull(strstr(g, "title \"compute\""));
    ck_assert_ptr_null(strstr(g, "title \"forward\""));
    ck_assert_ptr_nonnull(strstr(a, "title \"forward\""));
    ck_assert_int_gt(na, ng);
    free(g);
    free(a);
}
END_TEST

/* The timeline's key lists the categories drawn, no more. */
START_TEST(timeline_key_lists_only_what_is_drawn)
{
    struct tu_run r;
    tu_ratiolab(&r, "plot timeline --in '%s' --pids 100 --out t.png", gold("trace-predicted.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    char *g = tu_slurp("t.gp");
    struct look l[64];
    char titles[64][96];
    int n = key_looks(g, l, titles, 64);
    ck_assert_int_eq(n, 1);   /* the socket's process holds CPU Adam spans only */
    ck_assert_str_eq(titles[0], "\"cpu_adam\"");
    free(g);
}
END_TEST

Suite *plot_figures_suite(void)
{
    Suite *s = suite_create("plot_figures");
    TCase *tc = tcase_create("plot_figures");
    tcase_set_timeout(tc, 60);
    if (tu_have_program("gnuplot")) {
        tcase_add_loop_test(tc, every_figure_fits_its_page_and_its_keys_tell_series_apart, 0, N_FIGS);
        tcase_add_test(tc, time_key_is_the_phase_groups);
        tcase_add_test(tc, timeline_key_lists_only_what_is_drawn);
    } else {
        tu_skip_runs("plot_figures: every_figure_fits_its_page_and_its_keys_tell_series_apart", N_FIGS,
                     "no gnuplot on PATH");
        tu_skip("plot_figures: time_key_is_the_phase_groups", "no gnuplot on PATH");
        tu_skip("plot_figures: timeline_key_lists_only_what_is_drawn", "no gnuplot on PATH");
    }
    suite_add_tcase(s, tc);
    return s;
}
