/* tests/check_plots.c — `ratiolab plot` (plots/): the .dat and .gp of every kind against goldens
 * (tests/golden/plots/, from committed inputs), the numbers in the .dat against the inputs read
 * independently, determinism, bad input (exit 2, no files), no gnuplot (exit 3, data and script
 * still written) and, when gnuplot is installed, a render of every kind checked as a valid PDF,
 * SVG or PNG of plausible size, with no gnuplot warning about the script. Set RL_UPDATE_GOLDEN=1
 * to rewrite the goldens (then look at the figures and the diff). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/rl.h"
#include "plots/plot.h"
#include "tests/util.h"

static const char *gold(const char *name)
{
    static char p[8][1024];
    static int slot;
    char *s = p[slot++ % 8];
    snprintf(s, 1024, "%s/tests/golden/plots/%s", tu_src(), name);
    return s;
}

/* One golden figure: the options and the inputs (names under tests/golden/plots/). */
struct gcase {
    const char *name;           /* golden base name: NAME.dat, NAME.gp */
    enum plot_kind kind;        /* kind */
    const char *ext;            /* figure extension */
    const char *in[6];          /* inputs, NULL-terminated */
    enum plot_width width;      /* --width */
    const char *title;          /* --title */
    int64_t gpu_mem;            /* --gpu-mem */
    const char *marks;          /* --marks */
    const char *pids;           /* --pids */
    enum plot_scaling_y y;      /* --y */
};

static const struct gcase cases[] = {
    {"memory", PLOT_MEMORY, ".pdf", {"sweep-ds012.json", "sweep-exact.json"}, PLOT_SINGLE, NULL, 0, NULL, NULL, 0},
    {"time", PLOT_TIME, ".png", {"sweep-ds012.json", "sweep-overlap.json"}, PLOT_DOUBLE, "gpt-2.7b, 8 x V100",
     12LL << 30, NULL, NULL, 0},
    {"timeline", PLOT_TIMELINE, ".svg", {"trace-predicted.json", "trace-measured.json"}, PLOT_DOUBLE, NULL, 0,
     NULL, NULL, 0},
    {"timeline-pids", PLOT_TIMELINE, ".pdf", {"trace-predicted.json"}, PLOT_SINGLE, NULL, 0, NULL, "100", 0},
    {"parity", PLOT_PARITY, ".pdf", {"validate-report.json"}, PLOT_SINGLE, NULL, 0, NULL, NULL, 0},
    {"scaling", PLOT_SCALING, ".png",
     {"sweep-ds012.json", "sweep-ds012-16gpus.json", "sweep-overlap.json", "sweep-overlap-16gpus.json"},
     PLOT_SINGLE, NULL, 0, NULL, NULL, PLOT_Y_TOKENS},
    {"monitor", PLOT_MONITOR, ".pdf", {"monitor.csv"}, PLOT_DOUBLE, NULL, 0, "monitor-trace.json", NULL, 0},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static void case_opts(const struct gcase *c, struct plot_opts *o, const char *out)
{
    plot_opts_init(o);
    o->kind = c->kind;
    o->version = "0.1.0";
    for (int i = 0; c->in[i]; i++)
        o->in[o->n_in++] = gold(c->in[i]);
    o->out = out;
    o->width = c->width;
    o->title = c->title;
    o->gpu_mem_bytes = c->gpu_mem;
    o->marks = c->marks ? gold(c->marks) : NULL;
    o->pids = c->pids;
    o->scaling_y = c->y;
}

/* Writes case c into the scratch folder; returns the paths of its .dat and .gp. */
static void write_case(const struct gcase *c, struct plot_files *files)
{
    char out[256];
    snprintf(out, sizeof out, "%s%s", c->name, c->ext);
    struct plot_opts o;
    case_opts(c, &o, tu_path(out));
    struct rl_err e = {0};
    ck_assert_msg(plot_write(&o, files, &e) == 0, "%s: %s", c->name, e.msg);
}

static void compare_golden(const char *got_path, const char *golden_name)
{
    size_t n_got = 0, n_want = 0;
    char *got = tu_read(got_path, &n_got);
    ck_assert_ptr_nonnull(got);
    if (getenv("RL_UPDATE_GOLDEN")) {
        FILE *f = fopen(gold(golden_name), "wb");
        ck_assert_ptr_nonnull(f);
        fwrite(got, 1, n_got, f);
        fclose(f);
    }
    char *want = tu_read(gold(golden_name), &n_want);
    ck_assert_msg(want, "missing golden %s (RL_UPDATE_GOLDEN=1 writes it)", gold(golden_name));
    if (n_got != n_want || memcmp(got, want, n_got) != 0) {
        size_t i = 0;
        int line = 1;
        while (i < n_got && i < n_want && got[i] == want[i])
            line += got[i++] == '\n';
        ck_abort_msg("%s differs from %s at line %d (RL_UPDATE_GOLDEN=1 rewrites it; diff the two)", got_path,
                     gold(golden_name), line);
    }
    free(got);
    free(want);
}

START_TEST(dat_and_gp_match_goldens)
{
    const struct gcase *c = &cases[_i];
    struct plot_files f;
    write_case(c, &f);
    char name[128];
    snprintf(name, sizeof name, "%s.dat", c->name);
    compare_golden(f.dat, name);
    snprintf(name, sizeof name, "%s.gp", c->name);
    compare_golden(f.gp, name);
}
END_TEST

START_TEST(same_inputs_give_same_bytes)
{
    const struct gcase *c = &cases[_i];
    struct plot_files f;
    write_case(c, &f);
    size_t n1 = 0, n2 = 0, m1 = 0, m2 = 0;
    char *d1 = tu_read(f.dat, &n1), *g1 = tu_read(f.gp, &m1);
    write_case(c, &f);
    char *d2 = tu_read(f.dat, &n2), *g2 = tu_read(f.gp, &m2);
    ck_assert(d1 && d2 && g1 && g2);
    ck_assert_msg(n1 == n2 && memcmp(d1, d2, n1) == 0, "%s.dat differs between two runs", c->name);
    ck_assert_msg(m1 == m2 && memcmp(g1, g2, m1) == 0, "%s.gp differs between two runs", c->name);
    free(d1);
    free(d2);
    free(g1);
    free(g2);
}
END_TEST

/* The data rows of block `index` of a .dat: lines that are neither comments nor blank. */
static int block_rows(const char *dat, int index, double rows[][16], int max_rows, int *n_cols)
{
    int block = 0, n = 0, blank = 0;
    const char *p = dat;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len == 0) {
            if (++blank == 2)
                block++;
        } else {
            blank = 0;
            if (*p != '#' && block == index && n < max_rows) {
                char line[512];
                snprintf(line, sizeof line, "%.*s", (int)len, p);
                int k = 0;
                for (char *save = NULL, *t = strtok_r(line, "\t", &save); t && k < 16; t = strtok_r(NULL, "\t", &save))
                    rows[n][k++] = *t == '?' ? NAN : strtod(t, NULL);
                *n_cols = k;
                n++;
            }
        }
        p = nl ? nl + 1 : p + len;
    }
    return n;
}

/* The memory figure's numbers are the sweep's: honored ratio and GPU memory per rank in GiB. */
START_TEST(memory_dat_holds_the_sweep)
{
    struct plot_files f;
    write_case(&cases[0], &f);
    char *dat = tu_read(f.dat, NULL);
    json_t *j = json_load_file(gold("sweep-ds012.json"), 0, NULL);
    ck_assert(dat && j);
    double rows[32][16];
    int cols = 0;
    int n = block_rows(dat, 0, rows, 32, &cols);
    json_t *jr = json_object_get(j, "rows");
    ck_assert_int_eq(n, (int)json_array_size(jr));
    ck_assert_int_eq(cols, 6);   /* ..., fits, next_requested_ratio (where a staircase tread ends) */
    for (int i = 0; i < n; i++) {
        json_t *r = json_array_get(jr, (size_t)i);
        double honored = json_real_value(json_object_get(r, "honored_ratio"));
        json_t *gm = json_object_get(json_object_get(r, "prediction"), "gpu_memory_per_rank");
        double gib = (double)json_integer_value(json_object_get(gm, "total_bytes")) / 1073741824.0;
        ck_assert_double_eq_tol(rows[i][1], honored, 1e-6);
        ck_assert_double_eq_tol(rows[i][2], gib, 1e-4);
    }
    json_decref(j);
    free(dat);
}
END_TEST

/* DeepSpeed's policies honor a ratio in whole sub-groups, so their honored ratio and memory are
 * piecewise constant and drawn as treads (no risers); exact moves with the request and is drawn as lines. The
 * inputs say which policy each sweep used: deepspeed-0.12 (index 0), exact (index 1). */
START_TEST(memory_staircases_are_drawn_as_steps)
{
    struct plot_files f;
    write_case(&cases[0], &f);
    char *gp = tu_read(f.gp, NULL);
    ck_assert_ptr_nonnull(gp);
    static const char *const want[] = {
        "datafile index 0 using 1:2:($6-$1):(0) with vectors nohead ", "datafile index 1 using 1:2 with lines ",
        "datafile index 0 using 1:3:($6-$1):(0) with vectors nohead ",
        "datafile index 0 using 1:4:($6-$1):(0) with vectors nohead ",
        "datafile index 1 using 1:3 with lines ", "datafile index 1 using 1:4 with lines ",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(gp, want[i]), "memory.gp lacks \"%s\"", want[i]);
    free(gp);
}
END_TEST

/* The stacked bands of the time figure reach exactly the step time of each ratio, and the
 * marked ratio is the fastest whose GPU memory fits 12 GiB. */
START_TEST(time_bands_stack_to_the_step_time)
{
    struct plot_files f;
    write_case(&cases[1], &f);
    char *dat = tu_read(f.dat, NULL);
    json_t *j = json_load_file(gold("sweep-ds012.json"), 0, NULL);
    ck_assert(dat && j);
    double rows[32][16];
    int cols = 0;
    int n = block_rows(dat, 0, rows, 32, &cols);
    json_t *jr = json_object_get(j, "rows");
    ck_assert_int_eq(n, (int)json_array_size(jr));
    int best = -1;
    double best_s = INFINITY;
    for (int i = 0; i < n; i++) {
        json_t *pr = json_object_get(json_array_get(jr, (size_t)i), "prediction");
        double step_s = (double)json_integer_value(json_object_get(pr, "step_ns")) * 1e-9;
        ck_assert_double_eq_tol(rows[i][2], step_s, 1e-6);
        ck_assert_double_eq_tol(rows[i][cols - 1], step_s, 2e-6);   /* the top band: idle included */
        for (int k = 5; k < cols; k++)
            ck_assert(rows[i][k] >= rows[i][k - 1] - 1e-9);       /* cumulative */
        json_t *gm = json_object_get(pr, "gpu_memory_per_rank");
        bool fits = json_integer_value(json_object_get(gm, "total_bytes")) <= (12LL << 30) &&
                    json_is_true(json_object_get(json_object_get(pr, "host_memory"), "fits"));
        ck_assert_int_eq((int)rows[i][3], fits);
        if (fits && step_s < best_s) {
            best_s = step_s;
            best = i;
        }
    }
    char want[128];
    if (best < 0)
        snprintf(want, sizeof want, "# sweep-ds012.json: none fits");
    else
        snprintf(want, sizeof want, "# sweep-ds012.json: requested %.4f, step %.6f s", rows[best][0], best_s);
    ck_assert_msg(strstr(dat, want), "summary line '%s' missing", want);
    json_decref(j);
    free(dat);
}
END_TEST

/* Every span of positive length is in the timeline once (the zero-length one is not). */
START_TEST(timeline_keeps_every_span)
{
    struct plot_files f;
    write_case(&cases[2], &f);
    char *dat = tu_read(f.dat, NULL);
    ck_assert_ptr_nonnull(dat);
    int spans = 0;
    for (const char *p = dat; (p = strchr(p, '\n')); p++)
        if (p[1] >= '0' && p[1] <= '9' && strchr(p + 1, '.') && strchr(p + 1, '.') < strchr(p + 1, '\n'))
            spans++;
    /* trace-predicted.json: 6 spans of positive length; trace-measured.json: 5. */
    ck_assert_int_eq(spans, 11);
    ck_assert_ptr_nonnull(strstr(dat, "rank 0 CPU Adam"));
    ck_assert_ptr_nonnull(strstr(dat, "GPU 0 D2H"));
    free(dat);
}
END_TEST

/* The parity figure's steps are the report's, in ms. */
START_TEST(parity_dat_holds_the_report)
{
    struct plot_files f;
    write_case(&cases[4], &f);
    char *dat = tu_read(f.dat, NULL);
    ck_assert_ptr_nonnull(dat);
    double rows[8][16];
    int cols = 0;
    ck_assert_int_eq(block_rows(dat, 0, rows, 8, &cols), 3);
    const double pred_ms[3] = {120, 180, 240}, meas_ms[3] = {126, 171, 262};
    for (int i = 0; i < 3; i++) {
        ck_assert_double_eq_tol(rows[i][1], pred_ms[i], 1e-9);
        ck_assert_double_eq_tol(rows[i][2], meas_ms[i], 1e-9);
    }
    /* cpu_adam is zero at ratio 0: two points, not three (log axes). */
    ck_assert_ptr_nonnull(strstr(dat, "phase cpu_adam, exposed time"));   /* exposed by default */
    free(dat);
}
END_TEST

/* Log ticks: 1, 2 and 5 x 10^k labelled over a few decades; over more than three, the 2s and 5s
 * are unlabelled minor ticks (their labels ran into each other at 500 1000 2000). */
START_TEST(parity_ticks_thin_out_over_many_decades)
{
    char *text = tu_read(gold("validate-report.json"), NULL);
    ck_assert_ptr_nonnull(text);
    json_t *j = json_loads(text, 0, NULL);
    free(text);
    ck_assert_ptr_nonnull(j);
    json_t *fwd = json_object_get(json_object_get(json_object_get(json_object_get(
        json_array_get(json_object_get(j, "rows"), 0), "measured"), "phases"), "forward"), "busy_ns");
    ck_assert_ptr_nonnull(fwd);
    json_integer_set(fwd, 30000);   /* 0.03 ms against a 262 ms step: four decades and more */
    ck_assert_int_eq(json_dump_file(j, tu_path("wide.json"), 0), 0);
    json_decref(j);
    struct tu_run r;
    tu_ratiolab(&r, "plot parity --phase-time busy --in wide.json --out wide.svg");
    ck_assert_msg(r.status == 0 || r.status == 3, "exit %d: %s", r.status, r.err);   /* 3: no gnuplot */
    tu_run_free(&r);
    char *gp = tu_slurp("wide.gp");
    ck_assert_ptr_nonnull(strstr(gp, "'1' 1, '' 2 1, '' 5 1, '10' 10"));
    ck_assert_ptr_null(strstr(gp, "'200' 200"));
    free(gp);
    text = tu_read(gold("parity.gp"), NULL);   /* the golden case spans under three decades */
    ck_assert_ptr_nonnull(text);
    ck_assert_ptr_null(strstr(text, "'' 2 1"));
    free(text);
}
END_TEST

START_TEST(bad_input_exits_2_without_files)
{
    static const struct {
        const char *args;     /* after `plot` */
        const char *expect;   /* in stderr */
    } bad[] = {
        {"histogram --in x.json --out f.pdf", "KIND: 'histogram' is not a plot kind"},
        {"memory --in %s --out f.jpg", "--out: 'f.jpg' has no figure extension"},
        {"memory --in %s", "--out: missing"},
        {"memory --out f.pdf", "--in: missing"},
        {"memory --in nothere.json --out f.pdf", "nothere.json"},
        {"time --in %s --out f.pdf --width triple", "--width: 'triple'"},
        {"parity --in %s --out f.pdf", "field 'kind'"},
        {"time --in sweep.csv --out f.pdf", "plot time needs `ratiolab sweep --json`"},
        {"timeline --in %s --out f.pdf", "traceEvents"},
        {"monitor --in %s --out f.pdf", "not a monitor CSV"},
        {"scaling --in %s --out f.pdf --ratio 0.3", "--ratio: 0.3 is not among the ratios"},
    };
    tu_write("sweep.csv", "requested_ratio,honored_ratio,gpu_bytes,gpu_gib,host_node_bytes,host_node_gib,step_s,fits\n"
                          "0.0000,0.000000,100,0.00,100,0.00,0.300000,yes\n");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = tu_count_files();
        char args[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"   /* bad[]'s literals above, at most one %s each */
        snprintf(args, sizeof args, bad[i].args, gold("sweep-ds012.json"));
#pragma GCC diagnostic pop
        struct tu_run r;
        tu_ratiolab(&r, "plot %s", args);
        ck_assert_msg(r.status == 2, "plot %s: exit %d, expected 2 (stderr: %s)", args, r.status, r.err);
        ck_assert_msg(strstr(r.err, bad[i].expect), "plot %s: stderr '%s' lacks '%s'", args, r.err, bad[i].expect);
        ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "plot %s: not one line: %s", args, r.err);
        ck_assert_int_eq(tu_count_files(), before);
        tu_run_free(&r);
    }
}
END_TEST

START_TEST(without_gnuplot_writes_data_and_script_exit_3)
{
    struct tu_run r;
    tu_sh(&r, "PATH=/nonexistent '%s' plot memory --in '%s' --out nognu.png", tu_bin(), gold("sweep-ds012.json"));
    ck_assert_msg(r.status == 3, "exit %d, expected 3 (%s)", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "apt-get install gnuplot"));
    ck_assert(tu_exists(tu_path("nognu.dat")));
    ck_assert(tu_exists(tu_path("nognu.gp")));
    ck_assert(!tu_exists(tu_path("nognu.png")));
    tu_run_free(&r);
}
END_TEST

START_TEST(help_lists_every_kind)
{
    struct tu_run r;
    tu_ratiolab(&r, "plot --help");
    ck_assert_int_eq(r.status, 0);
    const char *kinds[] = {"memory", "time", "timeline", "parity", "scaling", "monitor"};
    for (int i = 0; i < 6; i++)
        ck_assert_msg(strstr(r.out, kinds[i]), "--help lacks %s", kinds[i]);
    tu_run_free(&r);
}
END_TEST

/* Renders every case through the binary and gnuplot and checks the file's format and size. */
START_TEST(every_kind_renders)
{
    const struct gcase *c = &cases[_i];
    static const char *const exts[3] = {".pdf", ".svg", ".png"};
    for (int x = 0; x < 3; x++) {
        char out[128], args[2048] = "";
        snprintf(out, sizeof out, "render-%s%s", c->name, exts[x]);
        for (int i = 0; c->in[i]; i++)
            snprintf(args + strlen(args), sizeof args - strlen(args), " --in '%s'", gold(c->in[i]));
        if (c->width == PLOT_DOUBLE)
            strcat(args, " --width double");
        if (c->marks)
            snprintf(args + strlen(args), sizeof args - strlen(args), " --marks '%s'", gold(c->marks));
        if (c->pids)
            snprintf(args + strlen(args), sizeof args - strlen(args), " --pids %s", c->pids);
        if (c->y == PLOT_Y_TOKENS)
            strcat(args, " --y tokens");
        if (c->gpu_mem)
            strcat(args, " --gpu-mem 12GiB");
        struct tu_run r;
        tu_ratiolab(&r, "plot %s%s --out %s", plot_kind_name(c->kind), args, out);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", out, r.status, r.err);
        tu_run_free(&r);
        size_t n = 0;
        char *b = tu_read(tu_path(out), &n);
        ck_assert_msg(b, "%s not written", out);
        ck_assert_msg(n > 4000 && n < 4000000, "%s: %zu bytes, expected 4 kB to 4 MB", out, n);
        if (x == 0) {
            ck_assert_msg(memcmp(b, "%PDF-", 5) == 0, "%s: no %%PDF- header", out);
            ck_assert_msg(strstr(b + n - 32 > b ? b + n - 32 : b, "%%EOF"), "%s: no %%%%EOF trailer", out);
            if (!getenv("SOURCE_DATE_EPOCH"))   /* cairo's drawing time, replaced by the epoch */
                ck_assert_msg(memmem(b, n, "/CreationDate (D:19700101000000", 31), "%s: not the fixed date", out);
        } else if (x == 1) {
            ck_assert_msg(strstr(b, "<svg") && strstr(b, "</svg>"), "%s: not a complete SVG", out);
        } else {
            static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
            ck_assert_msg(memcmp(b, sig, 8) == 0 && memcmp(b + 12, "IHDR", 4) == 0, "%s: not a PNG", out);
            unsigned w = (unsigned)(unsigned char)b[16] << 24 | (unsigned)(unsigned char)b[17] << 16 |
                         (unsigned)(unsigned char)b[18] << 8 | (unsigned char)b[19];
            ck_assert_int_eq(w, c->width == PLOT_DOUBLE ? 1400 : 700);   /* 7 in / 3.5 in at 200 dpi */
            ck_assert_msg(n < 12 || memcmp(b + n - 8, "IEND", 4) == 0, "%s: no IEND chunk", out);
        }
        free(b);
        /* gnuplot has nothing to warn about in the script (empty blocks, undefined values). */
        char stem[128];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(out) - strlen(exts[x])), out);
        struct tu_run w;
        tu_sh(&w, "gnuplot -e \"outfile='warn-check%s'\" %s.gp 2>&1", exts[x], stem);
        ck_assert_msg(w.status == 0 && w.out[0] == 0, "%s.gp: gnuplot says: %s", stem, w.out);
        tu_run_free(&w);
        /* No temporary file is left beside the figure. */
        struct tu_run l;
        tu_sh(&l, "ls | grep -c '\\.tmp\\.' || true");
        ck_assert_msg(atoi(l.out) == 0, "temporary files left: %s", l.out);
        tu_run_free(&l);
    }
}
END_TEST

/* The PDF date stamp: cairo's drawing time becomes SOURCE_DATE_EPOCH or the epoch, in place. */
START_TEST(pdf_date_is_stable)
{
    static const char pdf[] = "%PDF-1.5\n<< /Producer (cairo)\n   /CreationDate (D:20261130172129Z)\n>>\n%%EOF\n";
    char *b;
    size_t n;
    struct rl_err e = {0};
    unsetenv("SOURCE_DATE_EPOCH");
    tu_write("stamp.pdf", pdf);
    ck_assert_int_eq(plot_pdf_stable_date(tu_path("stamp.pdf"), &e), 0);
    b = tu_read(tu_path("stamp.pdf"), &n);
    ck_assert_uint_eq(n, strlen(pdf));
    ck_assert_ptr_nonnull(strstr(b, "/CreationDate (D:19700101000000Z)\n>>"));
    free(b);
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);   /* 2023-11-14 22:13:20 UTC */
    ck_assert_int_eq(plot_pdf_stable_date(tu_path("stamp.pdf"), &e), 0);
    b = tu_read(tu_path("stamp.pdf"), &n);
    ck_assert_ptr_nonnull(strstr(b, "/CreationDate (D:20231114221320Z)"));
    free(b);
    setenv("SOURCE_DATE_EPOCH", "yesterday", 1);
    ck_assert_int_eq(plot_pdf_stable_date(tu_path("stamp.pdf"), &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "SOURCE_DATE_EPOCH"));
    unsetenv("SOURCE_DATE_EPOCH");
    static const char plain[] = "%PDF-1.5\n<< /Producer (other) >>\n%%EOF\n";
    tu_write("nostamp.pdf", plain);
    ck_assert_int_eq(plot_pdf_stable_date(tu_path("nostamp.pdf"), &e), 0);
    b = tu_read(tu_path("nostamp.pdf"), &n);
    ck_assert_str_eq(b, plain);
    free(b);
}
END_TEST

static bool have_gnuplot(void)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        const char *c = strchr(path, ':');
        size_t len = c ? (size_t)(c - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)len, path);
        if (len && access(buf, X_OK) == 0)
            return true;
        path = c ? c + 1 : NULL;
    }
    return false;
}

/* A sweep names the DeepSpeed release whose rules applied and the offload device (JSON and CSV
 * alike); the time figure's panel titles carry the version, scaling's ratio-0 label the device. */
START_TEST(sweep_version_and_offload_reach_the_figures)
{
    struct tu_run r;
    tu_ratiolab(&r, "sweep --ratios 0,1 --json --out s.json && %s sweep --ratios 0,1 --csv --out s.csv", tu_bin());
    ck_assert_msg(r.status == 0, "sweep: %s", r.err);
    tu_run_free(&r);
    json_t *o = json_load_file(tu_path("s.json"), 0, NULL);
    ck_assert_ptr_nonnull(o);
    const char *ver = json_string_value(json_object_get(o, "deepspeed_version"));
    const char *dev = json_string_value(json_object_get(o, "offload_optimizer"));
    ck_assert_ptr_nonnull(ver);
    ck_assert_ptr_nonnull(dev);
    int a, b, c;
    ck_assert_int_eq(sscanf(ver, "%d.%d.%d", &a, &b, &c), 3);
    ck_assert_msg(strcmp(dev, "cpu") == 0 || strcmp(dev, "nvme") == 0 || strcmp(dev, "none") == 0, "device %s", dev);
    char *csv = tu_slurp("s.csv"), want[96];
    snprintf(want, sizeof want, "\n# deepspeed_version: %s\n# offload_optimizer: %s\n", ver, dev);
    ck_assert_msg(strstr(csv, want), "the CSV header lacks '%s'", want);
    free(csv);
    /* exit 3 without gnuplot: the script is written all the same */
    tu_ratiolab(&r, "plot time --in s.json --gpu-mem 16GiB --out t.svg; test -s t.gp && "
                "%s plot scaling --in s.json --x gpus --ratio 0 --out c.svg; test -s c.gp && "
                "%s plot memory --in s.csv --out m.svg; test -s m.gp", tu_bin(), tu_bin());
    ck_assert_msg(r.status == 0, "plot: %s", r.err);
    tu_run_free(&r);
    char *t = tu_slurp("t.gp"), *cd = tu_slurp("c.dat"), *md = tu_slurp("m.dat");
    snprintf(want, sizeof want, "(DeepSpeed %s)\n", ver);   /* read back from the CSV's header */
    ck_assert_msg(strstr(md, want), "no '%s' in m.dat", want);
    free(md);
    snprintf(want, sizeof want, "set title \"policy deepspeed-0.12\" . ");   /* its parts joined in gnuplot */
    ck_assert_msg(strstr(t, want), "no panel title '%s' in t.gp", want);
    snprintf(want, sizeof want, " . \"DeepSpeed %s\" . ", ver);
    ck_assert_msg(strstr(t, want), "the panel title lacks '%s' in t.gp", want);
    snprintf(want, sizeof want, "r=0, %s offload on", dev);
    if (strcmp(dev, "none") == 0)
        snprintf(want, sizeof want, "r=0, offload off");
    ck_assert_msg(strstr(cd, want), "no label '%s' in c.dat", want);
    free(t);
    free(cd);
    json_decref(o);
}
END_TEST

/* The text of every line of gp that starts with prefix, after the prefix (up to n lines). */
static int lines_after(const char *gp, const char *prefix, char out[][512], int n)
{
    int k = 0;
    size_t pl = strlen(prefix);
    for (const char *p = gp; *p && k < n;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len >= pl && strncmp(p, prefix, pl) == 0)
            snprintf(out[k++], 512, "%.*s", (int)(len - pl), p + pl);
        p += len + (nl != NULL);
    }
    return k;
}

/* Two sweeps alike but for the hardware profile: the time panels' titles and the memory key's
 * entries name the profile (what each sweep's JSON says it ran on) and nothing the two share
 * (policy, DeepSpeed version, schedule); the time figure's shading names no one profile's GPU
 * memory. */
START_TEST(two_hardware_profiles_are_told_apart)
{
    static const char *const hw[2] = {"dgx-a100-80g", "dgx-a100-40g"};
    struct tu_run r;
    tu_ratiolab(&r, "sweep --hw %s --ratios 0,0.5,1 --json --out h0.json && %s sweep --hw %s --ratios 0,0.5,1 "
                "--json --out h1.json", hw[0], tu_bin(), hw[1]);
    ck_assert_msg(r.status == 0, "sweep: %s", r.err);
    tu_run_free(&r);
    char quoted[2][96];
    json_int_t cap[2];
    for (int i = 0; i < 2; i++) {
        char name[16];
        snprintf(name, sizeof name, "h%d.json", i);
        json_t *o = json_load_file(tu_path(name), 0, NULL);
        ck_assert_ptr_nonnull(o);
        ck_assert_str_eq(json_string_value(json_object_get(o, "hardware")), hw[i]);
        snprintf(quoted[i], sizeof quoted[i], "\"%s\"", hw[i]);
        json_t *g = json_object_get(json_object_get(json_array_get(json_object_get(o, "rows"), 0), "prediction"),
                                    "gpu_memory_per_rank");
        cap[i] = json_integer_value(json_object_get(g, "capacity_bytes"));
        json_decref(o);
    }
    ck_assert_msg(cap[0] > 0 && cap[1] > 0 && cap[0] != cap[1], "GPU capacities %lld and %lld", (long long)cap[0],
                  (long long)cap[1]);
    for (int kind = 0; kind < 2; kind++) {
        struct plot_opts o;
        plot_opts_init(&o);
        o.kind = kind ? PLOT_MEMORY : PLOT_TIME;
        o.version = "0.1.0";
        o.in[o.n_in++] = tu_path("h0.json");
        o.in[o.n_in++] = tu_path("h1.json");
        o.out = tu_path(kind ? "hw-memory.png" : "hw-time.png");
        struct plot_files files;
        struct rl_err e = {0};
        ck_assert_msg(plot_write(&o, &files, &e) == 0, "%s", e.msg);
        size_t n = 0;
        char *gp = tu_read(files.gp, &n), got[4][512];
        ck_assert_ptr_nonnull(gp);
        int m = kind ? lines_after(gp, "plot NaN with linespoints lt ", got, 4) : lines_after(gp, "set title ", got, 4);
        ck_assert_msg(m == 2, "%s: %d panel titles or key entries, want 2", files.gp, m);
        ck_assert_msg(strcmp(got[0], got[1]) != 0, "%s: both name '%s'", files.gp, got[0]);
        for (int i = 0; i < 2; i++) {
            ck_assert_msg(strstr(got[i], quoted[i]), "%s: '%s' does not name %s", files.gp, got[i], hw[i]);
            ck_assert_msg(!strstr(got[i], quoted[1 - i]), "%s: '%s' names %s", files.gp, got[i], hw[1 - i]);
            ck_assert_msg(!strstr(got[i], "policy") && !strstr(got[i], "DeepSpeed"),
                          "%s: '%s' names what the sweeps share", files.gp, got[i]);
        }
        /* The profiles' GPU memories differ: the time figure's shading names neither. */
        ck_assert_msg(kind || !strstr(gp, "title \"over "), "%s: the shading names one GPU memory", files.gp);
        free(gp);
    }
}
END_TEST

Suite *plots_suite(void)
{
    Suite *s = suite_create("plots");
    TCase *tc = tcase_create("plots");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, dat_and_gp_match_goldens, 0, N_CASES);
    tcase_add_loop_test(tc, same_inputs_give_same_bytes, 0, N_CASES);
    tcase_add_test(tc, memory_dat_holds_the_sweep);
    tcase_add_test(tc, memory_staircases_are_drawn_as_steps);
    tcase_add_test(tc, time_bands_stack_to_the_step_time);
    tcase_add_test(tc, timeline_keeps_every_span);
    tcase_add_test(tc, parity_dat_holds_the_report);
    tcase_add_test(tc, parity_ticks_thin_out_over_many_decades);
    tcase_add_test(tc, bad_input_exits_2_without_files);
    tcase_add_test(tc, without_gnuplot_writes_data_and_script_exit_3);
    tcase_add_test(tc, help_lists_every_kind);
    tcase_add_test(tc, pdf_date_is_stable);
    tcase_add_test(tc, sweep_version_and_offload_reach_the_figures);
    tcase_add_test(tc, two_hardware_profiles_are_told_apart);
    if (have_gnuplot())
        tcase_add_loop_test(tc, every_kind_renders, 0, N_CASES);
    else
        tu_skip("plots: every_kind_renders", "gnuplot not installed (apt-get install gnuplot-nox)");
    suite_add_tcase(s, tc);
    return s;
}
