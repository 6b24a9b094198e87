/* cli/validate_exec.c — see validate_exec.h. */
#include <stdlib.h>
#include <string.h>

#include "cli/validate_exec.h"

enum { X_RATIOS = 100, X_RANKS, X_BACKEND, X_CALIBRATE, X_STEPS, X_OUT, X_GATE_TIME, X_MEM_TOL, X_SCALE };

const struct cli_opt cli_validate_exec_opts[] = {
    {"ratios", "LIST", "ratios to run, e.g. 0,0.3,0.5,1 or 0:1:0.25", X_RATIOS},
    {"ranks", "N", "MPI ranks of each executor run (mpirun is started when not already under it)", X_RANKS},
    {"backend", "B", "executor backend: cpu (emulated device, default) or cuda", X_BACKEND},
    {"calibrate", NULL, "measure this machine first (ratiolab calibrate) and predict with that profile", X_CALIBRATE},
    {"steps", "K", "optimizer steps per run (default 3; the first is not timed)", X_STEPS},
    {"out", "DIR", "where report.md, report.json and the traces go", X_OUT},
    {"gate-time", "PCT", "fail when the step MAPE over the ratios exceeds PCT (default: reported only)", X_GATE_TIME},
    {"mem-tolerance", "PCT", "allowed RSS/pinned/device difference from prediction + baseline (default 10)", X_MEM_TOL},
    {"scale", "F", "shrink the model for the executor (0 < F <= 1, default 1)", X_SCALE},
    {NULL, NULL, NULL, 0},
};

void cli_validate_exec_init(struct cli_validate_exec *x)
{
    memset(x, 0, sizeof *x);
    x->backend = "cpu";
    x->steps = 3;
    x->gate_time_pct = -1;
    x->mem_tol_pct = 10;
    x->scale = 1;
}

int cli_validate_exec_opt(struct cli_validate_exec *x, int id, const char *v, struct rl_err *e)
{
    x->given = true;
    switch (id) {
    case X_RATIOS: x->ratios = v; return 0;
    case X_RANKS: return rl_parse_int("--ranks", v, 1, 4096, &x->ranks, e);
    case X_BACKEND:
        if (!rl_streq(v, "cpu") && !rl_streq(v, "cuda"))
            return rl_errf(e, RL_EINVAL, "--backend: '%s' is not allowed; allowed: cpu, cuda", v);
        x->backend = v;
        return 0;
    case X_CALIBRATE: x->calibrate = true; return 0;
    case X_STEPS: return rl_parse_int("--steps", v, 2, 100000, &x->steps, e);
    case X_OUT: x->out = v; return 0;
    case X_GATE_TIME: return rl_parse_double("--gate-time", v, 0, 1e6, &x->gate_time_pct, e);
    case X_MEM_TOL: return rl_parse_double("--mem-tolerance", v, 0, 1e6, &x->mem_tol_pct, e);
    case X_SCALE: return rl_parse_double("--scale", v, 1e-9, 1, &x->scale, e);
    }
    return rl_errf(e, RL_EINTERNAL, "option id %d not handled", id);
}

bool cli_validate_exec_given(const struct cli_validate_exec *x) { return x->given; }

int cli_validate_exec_run(struct cli_validate_exec *x, struct cli_setup *s, struct cli_sim *sim, bool json)
{
    (void)s;
    (void)sim;
    (void)json;
    struct rl_err e = {0};
    if (!x->ratios || !x->out) {
        rl_errf(&e, RL_EINVAL, "give --deepspeed-log FILE, or --ratios LIST and --out DIR (see --help)");
        return cli_fail("validate", &e);
    }
    rl_errf(&e, RL_EENV, "validate --ratios: the executor (ratiolab run) is not part of this build");
    return cli_fail("validate", &e);
}
