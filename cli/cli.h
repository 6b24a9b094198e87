/* cli/cli.h — the ratiolab command line. Only cli/ prints, parses argv and exits.
 *
 * Every cli/cmd_<name>.c defines `const struct cli_cmd cli_cmd_<name>`; the Makefile lists them
 * in build/gen/commands.h, so adding a command is adding a file. */
#ifndef RL_CLI_CLI_H
#define RL_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "common/rl.h"
#include "plan/inputs.h"
#include "plan/plan.h"

struct cli_cmd {
    const char *name;                  /* subcommand */
    const char *summary;               /* one line for `ratiolab --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand; returns the exit code */
};

/* ---- options ------------------------------------------------------------------------------------ */
struct cli_opt {
    const char *name;      /* long name without "--" */
    const char *metavar;   /* NULL: a flag without value; "[X]": an optional value, given with '='
                              or as the next argument when that is "-" or does not start with '-' */
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
/* Puts the flag the user typed in place of the field a library message is about: the first
 * "field: " or "field ..." at the start of e->msg or after a ": " (the context rl_err_prefix adds)
 * becomes "flag: " or "flag ..."; a message that does not name field is left alone. Returns
 * e->code, so `return cli_err_flag(e, "policy", "--policy")` forwards the error. */
int cli_err_flag(struct rl_err *e, const char *field, const char *flag);
/* Puts `flag` in place of every whole-word `field` anywhere in e->msg (a word: not preceded or
 * followed by a letter, digit, '_' or '-'), for the fields a library names inside its prose
 * ("(after scale)"). Returns e->code. */
int cli_err_word(struct rl_err *e, const char *field, const char *flag);

/* Puts the flags of `run` in place of the fields the executor's messages name (backend, pp,
 * dtype, steps/warmup, comm_dtype, scale, seed, save_dir, load_dir). Returns e->code. */
int cli_run_err(struct rl_err *e);

/* ---- the setup every planning command shares (model, layout, DeepSpeed config) ------------
 * The flags fill a struct plan_inputs (plan_inputs_init first); plan/inputs.c resolves it. */
extern const struct cli_opt cli_setup_opts[];
/* Writes the help lines of cli_setup_opts that are generated from plan/'s tables (--policy,
 * --ledger, --deepspeed-version); main() calls it once before any command. */
void cli_setup_help_init(void);
int cli_setup_opt(void *ctx, int id, const char *value, struct rl_err *e);
/* plan_inputs_resolve, with the fields its messages and notes name renamed to the flags typed. */
int cli_setup_resolve(const struct plan_inputs *s, struct plan_setup *c, struct rl_err *e);
/* "seq 8192 (from ...)": the training sequence length and where it comes from, for every
 * command's header. Returns buf. */
const char *cli_seq_text(const struct plan_setup *c, char *buf, size_t n);
/* Where the planned dtype came from, for reports: "the DeepSpeed config", "the model's
 * torch_dtype", "--dtype or the Megatron arguments", ... */
const char *cli_dtype_source(const struct plan_setup *c);
/* The header's model line: the model description and cli_seq_text, e.g.
 * "llama3.1-8b (hf-llama), TP 1, ...; seq 8192 (from the preset's seq_len_default)". Returns buf. */
const char *cli_model_head(const struct plan_setup *c, char *buf, size_t n);

/* Human formatting helpers. */
const char *cli_gib(char *buf, size_t n, int64_t bytes);   /* "12.34" (GiB, 2 decimals) */
/* A string from an input, for a printf argument of a report line: rl_text_data into one of
 * CLI_DATA_SLOTS buffers used in turn (so one printf may take that many), each CLI_DATA_BYTES long.
 * Every string a report prints that a file, log or path supplied goes through it. */
#define CLI_DATA_SLOTS 16
#define CLI_DATA_BYTES 4096
const char *cli_data(const char *s);

#endif
