/* tests/check_plot_figures.c — what a reviewer checks on every figure, for every kind at both widths
 * (rendered to PNG by the binary and gnuplot): nothing runs off the page (the rendered PNG's
 * outermost pixels are all background, so no key, label or title is clipped), every key is placed
 * inside the page, and no two series in a key look alike (the same colour with the same marker,
 * dash and fill). The key lies inside a panel's plot area, not in a strip under the panels (or the
 * figure names its series by direct labels and has no key): the figure is drawn a second time
 * without its key, and the two PNGs may differ only inside the key's box (so the key draws nowhere
 * else), where the drawing without the key holds no data, label or line (only background, grid
 * and shading, and for the monitor its grey mark lines, which the key's white box hides). Also the
 * figures' own promises: the time figure's default key is the phase groups (at most 6 coloured
 * bands plus idle), the timeline's key lists only categories drawn. About 9 s. */
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

/* Whether pixel (x, y) may lie under a key: background, the light grid (#e0e0e0) and the shading
 * of ratios that do not fit (#ececec): every channel at least 0xd8. With grey_refs, also neutral
 * grey (the monitor's mark lines, references the key's white box may hide). */
static bool under_key_ok(const struct png *p, unsigned x, unsigned y, bool grey_refs)
{
    const unsigned char *q = p->px + ((size_t)y * p->w + x) * p->ch;
    if (q[0] >= 0xd8 && q[1] >= 0xd8 && q[2] >= 0xd8)
        return true;
    return grey_refs && abs(q[0] - q[1]) <= 6 && abs(q[1] - q[2]) <= 6 && q[0] >= 0x40;
}

/* A box in screen fractions (gnuplot's, y up) as pixel bounds of p (y down), grown by pad pixels. */
struct pxbox {
    int x0, y0, x1, y1;
};
static struct pxbox px_of(const struct png *p, const double b[4], int pad)
{
    struct pxbox r = {(int)(b[0] * p->w) - pad, (int)((1 - b[3]) * p->h) - pad, (int)(b[2] * p->w + 0.999) + pad,
                      (int)((1 - b[1]) * p->h + 0.999) + pad};
    return r;
}

static bool in_px(const struct pxbox *b, unsigned x, unsigned y)
{
    return (int)x >= b->x0 && (int)x <= b->x1 && (int)y >= b->y0 && (int)y <= b->y1;
}

/* The key's place: the box after "box (screen)" on the comment line starting with marker. */
static bool box_after(const char *gp, const char *marker, double b[4])
{
    const char *m = strstr(gp, marker);
    const char *at = m ? strstr(m, "box (screen) ") : NULL;
    const char *eol = m ? strchr(m, '\n') : NULL;
    return at && eol && at < eol && sscanf(at, "box (screen) %lf %lf %lf %lf", &b[0], &b[1], &b[2], &b[3]) == 4;
}

/* Whether box b lies inside the plot area of a panel: the margins set before the key (each panel
 * sets lmargin, rmargin, tmargin, bmargin at screen positions). */
static bool inside_a_panel(const char *gp, const char *key_at, const double b[4])
{
    for (const char *p = gp; (p = strstr(p, "set lmargin at screen ")) && p < key_at; p++) {
        double l, r, t, bo;
        if (sscanf(p, "set lmargin at screen %lf\nset rmargin at screen %lf\nset tmargin at screen %lf\n"
                      "set bmargin at screen %lf", &l, &r, &t, &bo) != 4)
            continue;
        if (b[0] >= l - 1e-4 && b[2] <= r + 1e-4 && b[1] >= bo - 1e-4 && b[3] <= t + 1e-4)
            return true;
    }
    return false;
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
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"   /* figs[]'s literals, at most one %s each */
        snprintf(args, sizeof args, figs[_i].args, golden);
#pragma GCC diagnostic pop
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
        /* Every key placed inside the page; no two series in the keys look alike. */
        char gp_name[96];
        snprintf(gp_name, sizeof gp_name, "%s.gp", stem);
        char *gp = tu_slurp(gp_name);
        /* The key inside a panel's plot area, over no data, and drawn only inside its box; or no
         * key at all where direct labels name every series. */
        const char *key_at = strstr(gp, "\n# the key");
        ck_assert_msg(key_at, "%s: no key section", gp_name);
        if (strncmp(key_at, "\n# the key: none", 16) == 0) {
            ck_assert_msg(strstr(gp, "# direct labels") && strstr(gp, "set label 2"), "%s: no key and no direct labels",
                          gp_name);
        } else {
            double kb[4];
            ck_assert_msg(strncmp(key_at, "\n# the key, inside the plot area", 32) == 0, "%s: the key is not inside the "
                          "plot area: %.60s", gp_name, key_at + 1);
            ck_assert_msg(box_after(key_at, "# the key", kb), "%s: the key's box is not stated", gp_name);
            ck_assert_msg(inside_a_panel(gp, key_at, kb), "%s: the key's box %g %g %g %g lies in no panel's plot area",
                          gp_name, kb[0], kb[1], kb[2], kb[3]);
            /* The same figure without its key (the script up to the key, then the end of the multiplot). */
            char nokey_gp[96], nokey_png[96];
            snprintf(nokey_gp, sizeof nokey_gp, "%s-nokey.gp", stem);
            snprintf(nokey_png, sizeof nokey_png, "%s-nokey.png", stem);
            char *cut = malloc((size_t)(key_at - gp) + 32);
            snprintf(cut, (size_t)(key_at - gp) + 32, "%.*s\nunset multiplot\n", (int)(key_at - gp), gp);
            tu_write(nokey_gp, cut);
            free(cut);
            tu_sh(&r, "gnuplot -e \"outfile='%s'\" %s", nokey_png, nokey_gp);
            ck_assert_msg(r.status == 0, "%s: gnuplot: %s", nokey_gp, r.err);
            tu_run_free(&r);
            struct png q;
            ck_assert_msg(png_load(tu_path(nokey_png), &q) && q.w == p.w && q.h == p.h, "%s: not the same size", nokey_png);
            /* Other things drawn after the key (the monitor's list of marks) state their boxes too. */
            double ob[4] = {0, 0, 0, 0};
            bool other = box_after(key_at + 1, "# the marks' texts", ob);
            struct pxbox kin = px_of(&p, kb, 0), kout = px_of(&p, kb, 2), oout = px_of(&p, ob, 2);
            bool grey_refs = strncmp(figs[_i].name, "monitor", 7) == 0;
            int outside = 0, under = 0;
            unsigned ox = 0, oy = 0, ux = 0, uy = 0;
            for (unsigned y = 0; y < p.h; y++)
                for (unsigned x = 0; x < p.w; x++) {
                    size_t o = ((size_t)y * p.w + x) * p.ch;
                    if (memcmp(p.px + o, q.px + o, 3) != 0 && !in_px(&kout, x, y) && !(other && in_px(&oout, x, y)) &&
                        !outside++)
                        ox = x, oy = y;
                    if (in_px(&kin, x, y) && !under_key_ok(&q, x, y, grey_refs) && !under++)
                        ux = x, uy = y;
                }
            ck_assert_msg(outside == 0, "%s: the key draws %d pixels outside its box (first at %u, %u)", png_name, outside,
                          ox, oy);
            ck_assert_msg(under == 0, "%s: the key covers %d pixels of data (first at %u, %u of %s)", png_name, under, ux,
                          uy, nokey_png);
            free(q.px);
        }
        free(p.px);
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

/* The timeline names the categories drawn, no more: by its key or by direct labels on the spans. */
START_TEST(timeline_key_lists_only_what_is_drawn)
{
    struct tu_run r;
    tu_ratiolab(&r, "plot timeline --in '%s' --pids 100 --out t.png", gold("trace-predicted.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    char *g = tu_slurp("t.gp");
    struct look l[64];
    char titles[64][96];
    int n = key_looks(g, l, titles, 64), named = 0;
    for (int k = 0; k < n; k++) {   /* the socket's process holds CPU Adam spans only */
        ck_assert_str_eq(titles[k], "\"cpu_adam\"");
        named++;
    }
    for (const char *p = g; (p = strstr(p, "\nset label 2")); p++) {
        char name[96] = "";
        ck_assert_int_eq(sscanf(p + 1, "set label %*d \"%95[^\"]\"", name), 1);
        ck_assert_msg(strcmp(name, "cpu_adam") == 0, "a direct label names %s", name);
        named++;
    }
    ck_assert_int_ge(named, 1);
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
