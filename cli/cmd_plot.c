/* cli/cmd_plot.c — `ratiolab plot KIND --in DATA --out FILE`: figures for papers.
 *
 * plots/ writes FILE.dat and FILE.gp and draws the figure with gnuplot (plot_render: output to a
 * temporary name renamed into place, so a failed run leaves no figure); this command reports the
 * three files. Without gnuplot it still writes the data and the script, says how to install
 * gnuplot and exits 3. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "plots/plot.h"

#ifndef RL_VERSION_STRING
#define RL_VERSION_STRING "0.1.0"   /* as `ratiolab --version` prints it */
#endif

enum { P_IN = 1, P_OUT, P_WIDTH, P_TITLE, P_GPU_MEM, P_MARKS, P_PIDS, P_BAND, P_PHASE_TIME, P_X, P_Y, P_RATIO,
       P_PHASES, P_SPEEDUP };
static const struct cli_opt opts[] = {
    {"in", "FILE", "input (repeat for several): sweep --json/--csv, a trace, a validate report.json, "
                   "a monitor CSV", P_IN},
    {"out", "FILE", "the figure: .pdf or .svg (papers), .png (screens); FILE.dat and FILE.gp beside it", P_OUT},
    {"width", "W", "single (3.5 in, default) or double (7 in) column, 9 pt text", P_WIDTH},
    {"title", "TEXT", "a title over the figure (default none: papers caption figures)", P_TITLE},
    {"gpu-mem", "BYTES", "time, scaling: GPU memory to fit in, e.g. 16GiB (default: what the sweep says fits)",
     P_GPU_MEM},
    {"marks", "TRACE", "monitor: the monitor's trace (--out of ratiolab monitor); its --mark lines become "
                       "vertical lines", P_MARKS},
    {"pids", "P[,P...]", "timeline: trace process ids to draw (default all with spans); with rank processes "
                         "given, a host socket's CPU threads of those ranks only", P_PIDS},
    {"band", "PCT", "parity: error band, +-PCT percent around the identity (default 10)", P_BAND},
    {"phase-time", "T", "parity: per-phase time compared, exposed (default: what the step pays) or busy", P_PHASE_TIME},
    {"x", "X", "scaling: x axis, gpus (default) or params", P_X},
    {"y", "Y", "scaling: y axis, step (step time, default), tokens (tokens/s of all GPUs) or tokens-per-gpu", P_Y},
    {"ratio", "R", "scaling: the requested ratio shown (default: the fastest that fits)", P_RATIO},
    {"phases", "P", "time: groups (default: compute, collectives, PCIe copies, GPU and CPU optimizer, casts and "
                    "checks) or all (every phase)", P_PHASES},
    {"speedup", "REF", "time: a right axis of speedup over no-offload (ratio 0) or full-offload (ratio 1); "
                       "default none", P_SPEEDUP},
    {NULL, NULL, NULL, 0},
};

/* Fails with the flag in place of the field a plots/ message begins with. */
static int plot_fail(struct rl_err *e)
{
    static const char *const flags[][2] = {
        {"out", "--out"}, {"in", "--in"}, {"pids", "--pids"}, {"ratio", "--ratio"}, {"marks", "--marks"},
        {"title", "--title"},
    };
    for (size_t i = 0; i < RL_COUNT(flags); i++) {
        size_t n = strlen(flags[i][0]);
        if (strncmp(e->msg, flags[i][0], n) == 0 && (e->msg[n] == ':' || e->msg[n] == ' ')) {
            cli_err_flag(e, flags[i][0], flags[i][1]);
            break;
        }
    }
    cli_err_word(e, "pids", "--pids");   /* "choose processes with pids" */
    return cli_fail("plot", e);
}

static int on_opt(void *ctx, int id, const char *v, struct rl_err *e)
{
    struct plot_opts *o = ctx;
    switch (id) {
    case P_IN:
        if (o->n_in == PLOT_MAX_IN)
            return rl_errf(e, RL_EINVAL, "--in: more than %d inputs", PLOT_MAX_IN);
        o->in[o->n_in++] = v;
        return 0;
    case P_OUT: o->out = v; return 0;
    case P_WIDTH:
        if (rl_streq(v, "single"))
            o->width = PLOT_SINGLE;
        else if (rl_streq(v, "double"))
            o->width = PLOT_DOUBLE;
        else
            return rl_errf(e, RL_EINVAL, "--width: '%s'; allowed: single (3.5 in), double (7 in)", v);
        return 0;
    case P_TITLE: o->title = v; return 0;
    case P_GPU_MEM: {
        int rc = rl_parse_bytes("--gpu-mem", v, &o->gpu_mem_bytes, e);
        if (!rc && o->gpu_mem_bytes <= 0)
            rc = rl_errf(e, RL_EINVAL, "--gpu-mem: '%s'; expected a size > 0, e.g. 16GiB", v);
        return rc;
    }
    case P_MARKS: o->marks = v; return 0;
    case P_PIDS: o->pids = v; return 0;
    case P_BAND: return rl_parse_double("--band", v, 0, 100, &o->band_pct, e);
    case P_PHASE_TIME:
        if (rl_streq(v, "busy") || rl_streq(v, "exposed")) {
            o->phase_exposed = rl_streq(v, "exposed");
            return 0;
        }
        return rl_errf(e, RL_EINVAL, "--phase-time: '%s'; allowed: busy, exposed", v);
    case P_X:
        if (rl_streq(v, "gpus") || rl_streq(v, "params")) {
            o->scaling_x = rl_streq(v, "gpus") ? PLOT_X_GPUS : PLOT_X_PARAMS;
            return 0;
        }
        return rl_errf(e, RL_EINVAL, "--x: '%s'; allowed: gpus, params", v);
    case P_Y:
        if (rl_streq(v, "step") || rl_streq(v, "tokens") || rl_streq(v, "tokens-per-gpu")) {
            o->scaling_y = rl_streq(v, "step") ? PLOT_Y_STEP : rl_streq(v, "tokens") ? PLOT_Y_TOKENS : PLOT_Y_TOKENS_PER_GPU;
            return 0;
        }
        return rl_errf(e, RL_EINVAL, "--y: '%s'; allowed: step, tokens, tokens-per-gpu", v);
    case P_RATIO: return rl_parse_double("--ratio", v, 0, 1, &o->ratio, e);
    case P_PHASES:
        if (rl_streq(v, "groups") || rl_streq(v, "all")) {
            o->all_phases = rl_streq(v, "all");
            return 0;
        }
        return rl_errf(e, RL_EINVAL, "--phases: '%s'; allowed: groups, all", v);
    case P_SPEEDUP:
        if (rl_streq(v, "none") || rl_streq(v, "no-offload") || rl_streq(v, "full-offload")) {
            o->speedup = rl_streq(v, "none") ? PLOT_SPEEDUP_NONE
                         : rl_streq(v, "no-offload") ? PLOT_SPEEDUP_NO_OFFLOAD : PLOT_SPEEDUP_FULL_OFFLOAD;
            return 0;
        }
        return rl_errf(e, RL_EINVAL, "--speedup: '%s'; allowed: none, no-offload, full-offload", v);
    }
    return RL_EINTERNAL;
}

/* The help's description: what plot does, then every kind from plots/' table (name, then its
 * description's lines under one another). */
static void help_text(char *buf, size_t n)
{
    FILE *m = fmemopen(buf, n, "w");
    if (!m) {
        snprintf(buf, n, "Draws a figure for a paper from what ratiolab wrote, with gnuplot.");
        return;
    }
    fputs("Draws a figure for a paper from what ratiolab wrote (never re-runs a simulation), with gnuplot.\n"
          "Beside FILE it writes FILE.dat (the numbers, with model, hardware, policy, schedule,\n"
          "micro-batch and ratiolab version in its header) and FILE.gp (the gnuplot script that draws\n"
          "it: restyle and rerun with `gnuplot FILE.gp` in that folder). Colours: Okabe-Ito, with\n"
          "distinct dash and point types for grey print; a phase takes its group's colour.\n\n"
          "kinds:\n", m);
    for (int k = 0; k < PLOT_KIND_COUNT; k++) {
        fprintf(m, "  %-9s ", plot_kind_name((enum plot_kind)k));
        for (const char *d = plot_kind_description((enum plot_kind)k); *d; d++)
            if (*d == '\n')
                fputs("\n            ", m);   /* a later line, under the first */
            else
                fputc(*d, m);
        fputc('\n', m);
    }
    fputs("\nWithout gnuplot the .dat and .gp are written and the command exits 3.", m);
    fclose(m);
}

static int run(int argc, char **argv)
{
    struct plot_opts o;
    plot_opts_init(&o);
    o.version = RL_VERSION_STRING;
    struct cli_optset sets[] = {{"plot options", opts, on_opt, &o}};
    const char *usage = "ratiolab plot KIND --in DATA [--in DATA...] --out FILE.pdf|.svg|.png [--width single|double]";
    char desc[4096];
    help_text(desc, sizeof desc);
    struct cli_rest rest;
    struct rl_err e = {0};
    int rc = cli_command_parse_rest("plot", argc, argv, usage, desc, sets, 1, &rest);
    if (rc != CLI_GO_ON)
        return rc;
    if (rest.n_pos != 1 || rest.n_after) {
        char list[128];
        rl_errf(&e, RL_EINVAL, "KIND: %s; expected one of %s", rest.n_pos ? "more than one given" : "missing",
                plot_kind_list(list, sizeof list));
        return cli_fail("plot", &e);
    }
    enum plot_format fmt;
    if ((rc = plot_kind_parse(rest.pos[0], &o.kind, &e)))
        return cli_fail("plot", &e);
    if (!o.out) {
        rl_errf(&e, RL_EINVAL, "--out: missing; expected FILE.pdf, FILE.svg or FILE.png");
        return cli_fail("plot", &e);
    }
    if ((rc = plot_format_of(o.out, &fmt, &e)))
        return plot_fail(&e);
    if (o.n_in == 0) {
        rl_errf(&e, RL_EINVAL, "--in: missing; plot %s needs an input file", plot_kind_name(o.kind));
        return cli_fail("plot", &e);
    }
    struct plot_files files;
    if ((rc = plot_write(&o, &files, &e)))
        return plot_fail(&e);

    char gbuf[4096];
    const char *gnuplot = plot_find_gnuplot(gbuf, sizeof gbuf);
    if (!gnuplot) {
        char dir[1024];
        const char *gp_base;
        plot_split_dir(files.gp, dir, sizeof dir, &gp_base);
        fprintf(stderr, "ratiolab plot: gnuplot not found on PATH; wrote %s and %s. Install gnuplot "
                        "(Debian/Ubuntu: sudo apt-get install gnuplot-nox; macOS: brew install gnuplot), "
                        "then: cd %s && gnuplot %s\n", files.dat, files.gp, dir, gp_base);
        return 3;
    }
    if ((rc = plot_render(gnuplot, o.out, fmt, &files, &e)))
        return plot_fail(&e);
    printf("wrote %s (%s, %s column), %s, %s\n", o.out, fmt == PLOT_PDF ? "PDF" : fmt == PLOT_SVG ? "SVG" : "PNG",
           o.width == PLOT_DOUBLE ? "double" : "single", files.dat, files.gp);
    return 0;
}

const struct cli_cmd cli_cmd_plot = {"plot", "figures for papers from sweeps, traces, reports (gnuplot)", run};
