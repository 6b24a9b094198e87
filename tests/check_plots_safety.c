/* tests/check_plots_safety.c — text never becomes gnuplot code. Every flag and input field whose
 * text reaches a figure's script is fed quotes, backslashes, newlines, system(...), backquotes,
 * @macros and $/% signs; the figure is drawn by the binary and gnuplot, and the test checks that
 * no command ran (no PWNED file appears), that printable text gives a figure (exit 0) and a
 * control character a one-line exit 2 with no file left. Also: an output that is a link to
 * /dev/null or to another folder, and a title that starts with a quote. About 60 gnuplot runs
 * (SVG, about 8 s). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* What an attacker puts in a name or a label. The first ones are printable (a figure must be
 * drawn, the text shown as it is); those with a control character must be refused. */
static const char *const payloads[] = {
    "a'.system('touch PWNED').'b\".system(\"touch PWNED\").\"c",
    "`touch PWNED` '`touch PWNED`' @outfile @datafile",
    "x\\'; system('touch PWNED'); y='\\",
    "'Twin-Flow' offload $HOME 50% \\",
    "a\n!touch PWNED\nb",
    "a\r!touch PWNED\t\x7f b",
};
#define N_PAYLOADS ((int)(sizeof payloads / sizeof payloads[0]))
#define N_PRINTABLE 4

/* Where text enters a figure: a flag, a file name, or a field of an input file. */
enum point {
    AT_OUT,              /* --out's stem */
    AT_TITLE,            /* --title */
    AT_IN_NAME,          /* the --in file's name (timeline titles its panels with it) */
    AT_MARKS_NAME,       /* the --marks file's name (it reaches only the .dat header) */
    AT_SWEEP_POLICY,     /* a sweep's "policy" (memory key, scaling key) */
    AT_SWEEP_SCHEDULE,   /* a sweep's "schedule" (time panel titles) */
    AT_SWEEP_MODEL,      /* a sweep's "model" */
    AT_TRACE_PROCESS,    /* a trace's process name (timeline tracks) */
    AT_TRACE_CAT,        /* a span's category (timeline key) */
    AT_REPORT_POLICY,    /* a validate report's policy */
    AT_MONITOR_COMM,     /* a monitor CSV's command name (monitor key) */
    AT_MARK_TEXT,        /* a monitor mark (monitor key) */
    N_POINTS
};
static const char *const point_names[N_POINTS] = {
    "--out", "--title", "--in name", "--marks name", "sweep policy", "sweep schedule", "sweep model",
    "trace process name", "trace category", "report policy", "monitor comm", "mark text"};

/* s as JSON string content. */
static void json_esc(char *out, size_t n, const char *s)
{
    size_t k = 0;
    for (; *s && k + 8 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            k += (size_t)snprintf(out + k, n - k, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            k += (size_t)snprintf(out + k, n - k, "\\u%04x", c);
        else
            out[k++] = (char)c;
    }
    out[k] = 0;
}

/* s as one single-quoted shell word (for names and flag values). */
static void sh_word(char *out, size_t n, const char *s)
{
    size_t k = 0;
    out[k++] = '\'';
    for (; *s && k + 6 < n; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *s;
        }
    }
    out[k++] = '\'';
    out[k] = 0;
}

/* The golden input with the first occurrence of `from` replaced by `to`, written to name. */
static const char *replaced(const char *golden, const char *from, const char *to, const char *name)
{
    char *b = tu_read(gold(golden), NULL);
    ck_assert_msg(b, "cannot read %s", golden);
    char *at = strstr(b, from);
    ck_assert_msg(at, "%s lacks '%s'", golden, from);
    size_t n = strlen(b) + strlen(to) + 1;
    char *o = malloc(n);
    snprintf(o, n, "%.*s%s%s", (int)(at - b), b, to, at + strlen(from));
    const char *p = tu_write(name, o);
    free(b);
    free(o);
    return p;
}

START_TEST(no_text_runs_as_gnuplot_code)
{
    const char *pay = payloads[_i];
    bool printable = _i < N_PRINTABLE;
    char word[1024], js[1024], inname[1024], args[8192];
    sh_word(word, sizeof word, pay);
    json_esc(js, sizeof js, pay);
    for (int at = 0; at < N_POINTS; at++) {
        const char *kind = "memory", *in = gold("sweep-exact.json");
        char extra[2048] = "", out[1024] = "'fig.svg'";
        switch (at) {
        case AT_OUT: {
            char stem[600];
            snprintf(stem, sizeof stem, "fig%s.svg", pay);
            sh_word(out, sizeof out, stem);
            break;
        }
        case AT_TITLE: snprintf(extra, sizeof extra, " --title %s", word); break;
        case AT_IN_NAME: {
            char name[600];
            snprintf(name, sizeof name, "in%s.json", pay);
            if (strchr(pay, '\n') || strchr(pay, '\r'))
                continue;   /* the shell copy below would split it; --out covers control characters */
            kind = "timeline";
            char src[1100];
            sh_word(inname, sizeof inname, name);
            snprintf(src, sizeof src, "'%s'", gold("trace-predicted.json"));
            struct tu_run c;
            tu_sh(&c, "cp %s %s", src, inname);
            ck_assert_int_eq(c.status, 0);
            tu_run_free(&c);
            in = NULL;
            snprintf(extra, sizeof extra, " --in %s --in '%s'", inname, gold("trace-measured.json"));
            break;
        }
        case AT_MARKS_NAME: {
            char name[600];
            if (strchr(pay, '\n') || strchr(pay, '\r'))
                continue;
            snprintf(name, sizeof name, "marks%s.json", pay);
            sh_word(inname, sizeof inname, name);
            struct tu_run c;
            tu_sh(&c, "cp '%s' %s", gold("monitor-trace.json"), inname);
            ck_assert_int_eq(c.status, 0);
            tu_run_free(&c);
            kind = "monitor";
            in = gold("monitor.csv");
            snprintf(extra, sizeof extra, " --marks %s", inname);
            break;
        }
        case AT_SWEEP_POLICY:
        case AT_SWEEP_SCHEDULE:
        case AT_SWEEP_MODEL: {
            static const char *const from[] = {"\"policy\": \"exact\"", "\"schedule\": \"deepspeed-0.12\"",
                                               "\"model\": \"gpt-2.7b"};
            static const char *const key[] = {"\"policy\": \"", "\"schedule\": \"", "\"model\": \""};
            char to[1200];
            int w = at - AT_SWEEP_POLICY;
            snprintf(to, sizeof to, "%s%s%s", key[w], js, w == 2 ? "" : "\"");
            kind = w == 1 ? "time" : "memory";
            in = replaced("sweep-exact.json", from[w], to, "hostile-sweep.json");
            if (w == 1)   /* two panels, so the schedule titles its panel */
                snprintf(extra, sizeof extra, " --in '%s'", gold("sweep-overlap.json"));
            break;
        }
        case AT_TRACE_PROCESS:
        case AT_TRACE_CAT: {
            char to[1200];
            bool proc = at == AT_TRACE_PROCESS;
            snprintf(to, sizeof to, proc ? "\"args\":{\"name\":\"%s\"}" : "\"cat\":\"%s\"", js);
            kind = "timeline";
            in = replaced("trace-measured.json", proc ? "\"args\":{\"name\":\"rank 0\"}" : "\"cat\":\"io\"", to,
                          "hostile-trace.json");
            break;
        }
        case AT_REPORT_POLICY: {
            char to[1200];
            snprintf(to, sizeof to, "\"policy\":\"%s\"", js);
            kind = "parity";
            in = replaced("validate-report.json", "\"policy\":\"exact\"", to, "hostile-report.json");
            break;
        }
        case AT_MONITOR_COMM: {
            if (strchr(pay, ',') || strchr(pay, '\n') || strchr(pay, '\r'))
                continue;   /* a CSV field holds neither */
            char to[1200];
            snprintf(to, sizeof to, ",%s,0,", pay);
            kind = "monitor";
            in = replaced("monitor.csv", ",python,0,", to, "hostile-monitor.csv");
            break;
        }
        case AT_MARK_TEXT: {
            char to[1200];
            snprintf(to, sizeof to, "\"name\":\"%s\"", js);
            kind = "monitor";
            in = gold("monitor.csv");
            const char *m = replaced("monitor-trace.json", "\"name\":\"[INFO] After creating fp16 partitions: 1\"",
                                     to, "hostile-marks.json");
            snprintf(extra, sizeof extra, " --marks '%s'", m);
            break;
        }
        }
        if (in)
            snprintf(args, sizeof args, "plot %s --in '%s'%s --out %s", kind, in, extra, out);
        else
            snprintf(args, sizeof args, "plot %s%s --out %s", kind, extra, out);
        int before = tu_count_files();
        struct tu_run r;
        tu_ratiolab(&r, "%s", args);
        ck_assert_msg(!tu_exists(tu_path("PWNED")), "payload %d at %s ran a command (exit %d): %s", _i,
                      point_names[at], r.status, r.err);
        if (at == AT_OUT || at == AT_TITLE || at == AT_IN_NAME) {
            /* Text from a flag or a file name: drawn as it is, or refused in one line. */
            if (printable) {
                ck_assert_msg(r.status == 0, "payload %d at %s: exit %d: %s", _i, point_names[at], r.status, r.err);
            } else {
                ck_assert_msg(r.status == 2, "payload %d at %s: exit %d, expected 2: %s", _i, point_names[at],
                              r.status, r.err);
                ck_assert_msg(strstr(r.err, "control character"), "payload %d at %s: %s", _i, point_names[at], r.err);
                ck_assert_msg(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "not one line: %s", r.err);
                ck_assert_int_eq(tu_count_files(), before);
            }
        } else {
            /* Text from an input file: a figure, or a refusal naming the field; never a crash. */
            ck_assert_msg(r.status == 0 || r.status == 2, "payload %d at %s: exit %d: %s", _i, point_names[at],
                          r.status, r.err);
            if (printable)
                ck_assert_msg(r.status == 0, "payload %d at %s: exit %d: %s", _i, point_names[at], r.status, r.err);
        }
        if (printable && at == AT_TITLE) {   /* the title is shown as it was given */
            char *svg = tu_slurp("fig.svg");
            const char *want = "&apos;Twin-Flow&apos; offload $HOME 50% \\";
            if (_i == 3)
                ck_assert_msg(strstr(svg, want) || strstr(svg, "'Twin-Flow' offload $HOME 50% \\"),
                              "the title is not drawn as given");
            free(svg);
        }
        tu_run_free(&r);
        struct tu_run c;   /* a clean folder for the next point */
        tu_sh(&c, "rm -f ./*");
        tu_run_free(&c);
    }
}
END_TEST

/* The quoting function itself: every byte gnuplot could read as syntax is escaped. */
START_TEST(quote_escapes_every_special_byte)
{
    char buf[256];
    FILE *m = fmemopen(buf, sizeof buf, "w");
    struct rl_err e = {0};
    ck_assert_int_eq(plot_gp_quote(m, "title", "a'b\"c\\d`e@f$g%h", &e), 0);
    fclose(m);
    ck_assert_str_eq(buf, "\"a\\047b\\042c\\134d\\140e\\100f\\044g\\045h\"");
    m = fmemopen(buf, sizeof buf, "w");
    ck_assert_int_eq(plot_gp_quote(m, "title", "ab\ncd", &e), RL_EINVAL);
    fclose(m);
    ck_assert_ptr_nonnull(strstr(e.msg, "title: a control character (0x0a) after 'ab'"));
}
END_TEST

/* An output that is a link: to /dev/null (written in place, the link kept) or into another folder
 * (the figure lands at the link's target). */
START_TEST(figure_through_a_link)
{
    struct tu_run r;
    tu_sh(&r, "ln -s /dev/null null.pdf && mkdir -p elsewhere && ln -s \"$PWD/elsewhere/x.png\" far.png");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    tu_ratiolab(&r, "plot memory --in '%s' --out null.pdf", gold("sweep-exact.json"));
    ck_assert_msg(r.status == 0, "/dev/null link: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    struct stat st;
    ck_assert(lstat(tu_path("null.pdf"), &st) == 0 && S_ISLNK(st.st_mode));
    tu_ratiolab(&r, "plot memory --in '%s' --out far.png", gold("sweep-exact.json"));
    ck_assert_msg(r.status == 0, "link into another folder: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    ck_assert(lstat(tu_path("far.png"), &st) == 0 && S_ISLNK(st.st_mode));
    ck_assert(stat(tu_path("elsewhere/x.png"), &st) == 0 && st.st_size > 4000);
    tu_sh(&r, "find . -name '*.tmp.*' | wc -l");
    ck_assert_msg(atoi(r.out) == 0, "temporary files left: %s", r.out);
    tu_run_free(&r);
}
END_TEST

Suite *plots_safety_suite(void)
{
    Suite *s = suite_create("plots_safety");
    TCase *tc = tcase_create("plots_safety");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, quote_escapes_every_special_byte);
    if (tu_have_program("gnuplot")) {
        tcase_add_loop_test(tc, no_text_runs_as_gnuplot_code, 0, N_PAYLOADS);
        tcase_add_test(tc, figure_through_a_link);
    } else {
        tu_skip_runs("plots_safety: no_text_runs_as_gnuplot_code", N_PAYLOADS, "no gnuplot on PATH");
        tu_skip("plots_safety: figure_through_a_link", "no gnuplot on PATH");
    }
    suite_add_tcase(s, tc);
    return s;
}
