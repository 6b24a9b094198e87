/* cli/cli.h — the ratiolab command line. Only cli/ prints, parses argv and exits.
 *
 * Every cli/cmd_<name>.c defines `const struct cli_cmd cli_cmd_<name>`; the Makefile lists them
 * in build/gen/commands.h, so adding a command is adding a file. */
#ifndef RL_CLI_CLI_H
#define RL_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "common/rl.h"
#include "plan/plan.h"

struct cli_cmd {
    const char *name;                  /* subcommand */
    const char *summary;               /* one line for `ratiolab --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand; returns the exit code */
};

/* ---- options ------------------------------------------------------------------------------------ */
struct cli_opt {
    const char *name;      /* long name without "--" */
    const char *metavar;   /* NULL: a flag without value */
    const char *help;      /* one line */
    int id;                /* passed to the handler */
};
/* Handler: value is NULL for flags. Returns 0 or an RL_E* code with *e filled. */
typedef int cli_opt_fn(void *ctx, int id, const char *value, struct rl_err *e);

struct cli_optset {
    const char *title;           /* section heading in --help */
    const struct cli_opt *opts;  /* terminated by {NULL} */
    cli_opt_fn *fn;
    void *ctx;
};

#define CLI_MAX_POS 64
struct cli_rest {
    int n_pos;                  /* positional arguments */
    char *pos[CLI_MAX_POS];
    int n_after;                /* arguments after "--" */
    char **after;
};

#define CLI_HELP 1   /* cli_parse saw -h/--help */
#define CLI_VERSION 2   /* cli_parse saw --version */
#define RL_VERSION_STRING "0.1.0"   /* printed by --version, on every command */

/* Parses --name value, --name=value and flags; "--" ends options. Returns 0, CLI_HELP, or an
 * RL_E* code with a message naming the option. */
int cli_parse(int argc, char **argv, const struct cli_optset *sets, int n_sets,
              struct cli_rest *rest, struct rl_err *e);
void cli_help(FILE *f, const char *usage, const char *description, const struct cli_optset *sets,
              int n_sets);
/* cli_command_parse's "options parsed, the command goes on": never an exit code (0..3) nor an
 * RL_E* value. */
#define CLI_GO_ON 1000
/* The whole option step of a command: parses, prints --help or --version (exit 0), reports a bad
 * option (exit 2). Returns CLI_GO_ON to go on, with the positional arguments in *rest; any other
 * value is the exit code. */
int cli_command_parse_rest(const char *cmd, int argc, char **argv, const char *usage, const char *description,
                           const struct cli_optset *sets, int n_sets, struct cli_rest *rest);
/* The same for a command without positional arguments (one is reported as exit 2). */
int cli_command_parse(const char *cmd, int argc, char **argv, const char *usage, const char *description,
                      const struct cli_optset *sets, int n_sets);
/* Prints "ratiolab <cmd>: <msg>" to stderr and returns the exit code for e->code. */
int cli_fail(const char *cmd, const struct rl_err *e);

/* ---- the setup every planning command shares (model, layout, DeepSpeed config) ------------ */
struct cli_setup {
    const char *model;             /* --model NAME|FILE */
    const char *megatron_args;     /* --megatron-args "..." */
    const char *megatron_args_file;/* --megatron-args-file FILE */
    const char *ds_config;         /* --ds-config FILE ("-": standard input) */
    const char *catalog;           /* --catalog DIR */
    struct plan_layout layout;     /* --tp --pp --dp --gpus --nodes --gpus-per-node */
    int pp_stage;                  /* --pp-stage */
    double ratio;                  /* --ratio */
    bool ratio_set;
    enum plan_policy policy;       /* --policy */
    enum plan_ledger_kind ledger;  /* --ledger */
    struct rl_version ds_version;  /* --deepspeed-version */
    bool ds_version_set;
    int64_t sub_group_size;        /* --sub-group-size */
    bool sub_group_size_set;
    enum plan_group_rule groups;   /* --param-groups */
    enum plan_group_rule megatron_rule; /* --megatron-version, as a param-group rule */
    bool megatron_rule_set;
    bool megatron_split_qkv;            /* --megatron-version dated in the GQA query/key_value split */
    int64_t seq_len;               /* --seq-len */
    int64_t micro_batch;           /* --micro-batch */
    enum plan_dtype dtype;         /* --dtype */
    bool dtype_set;
    bool verbose;                  /* --verbose */
    bool report_hazards;           /* the command reports DeepSpeed hazards itself (check, plan) */
};
void cli_setup_init(struct cli_setup *s);
extern const struct cli_opt cli_setup_opts[];
int cli_setup_opt(void *ctx, int id, const char *value, struct rl_err *e);

/* What the setup resolves to. */
struct cli_ctx {
    struct plan_model model;
    struct plan_zero zero;
    struct plan_layout layout;
    struct plan_options popt;
    const char *catalog;           /* directory */
    bool checkpoint_activations;   /* the launch line's --checkpoint-activations (for the simulator) */
    char model_desc[160];          /* for headings, e.g. "gpt-2.7b (Megatron GPT), TP 8" */
    char *ds_text;                 /* the DeepSpeed config as read (judged and fixed from this text) */
    char notes[8][200];            /* things the user should know (ignored flags, defaults) */
    int n_notes;
};
int cli_setup_resolve(const struct cli_setup *s, struct cli_ctx *c, struct rl_err *e);
/* Builds the plan for one ratio (the context's ratio when ratio < 0). */
int cli_ctx_plan(const struct cli_ctx *c, double ratio, struct plan *p, struct rl_err *e);
void cli_ctx_free(struct cli_ctx *c);

/* Human formatting helpers. */
const char *cli_gib(char *buf, size_t n, int64_t bytes);   /* "12.34" (GiB, 2 decimals) */

#endif
