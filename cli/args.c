/* cli/args.c — option parsing and help for every subcommand. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const struct cli_opt *find(const struct cli_optset *sets, int n_sets, const char *name,
                                  size_t len, int *set)
{
    for (int s = 0; s < n_sets; s++)
        for (const struct cli_opt *o = sets[s].opts; o && o->name; o++)
            if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) {
                *set = s;
                return o;
            }
    return NULL;
}

int cli_parse(int argc, char **argv, const struct cli_optset *sets, int n_sets,
              struct cli_rest *rest, struct rl_err *e)
{
    memset(rest, 0, sizeof *rest);
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            rest->after = argv + i + 1;
            rest->n_after = argc - i - 1;
            return 0;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return CLI_HELP;
        if (strcmp(a, "--version") == 0)
            return CLI_VERSION;
        if (strncmp(a, "--", 2) != 0 || a[2] == 0) {
            if (a[0] == '-' && a[1] != 0 && !(a[1] >= '0' && a[1] <= '9'))
                return rl_errf(e, RL_EINVAL, "unknown option '%s' (see --help)", a);
            if (rest->n_pos >= CLI_MAX_POS)
                return rl_errf(e, RL_EINVAL, "too many arguments (at most %d)", CLI_MAX_POS);
            rest->pos[rest->n_pos++] = a;
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int set = 0;
        const struct cli_opt *o = find(sets, n_sets, name, len, &set);
        if (!o) {
            const char *names[256];
            int n = 0;
            for (int k = 0; k < n_sets; k++)
                for (const struct cli_opt *q = sets[k].opts; q && q->name && n < 256; q++)
                    names[n++] = q->name;
            char word[64];
            snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), name);
            const char *near = rl_nearest(word, names, n);
            if (near)
                return rl_errf(e, RL_EINVAL, "unknown option '--%.*s'; did you mean --%s? (see --help)", (int)len, name,
                               near);
            return rl_errf(e, RL_EINVAL, "unknown option '--%.*s' (see --help)", (int)len, name);
        }
        const char *value = NULL;
        if (o->metavar && o->metavar[0] == '[') {   /* optional value */
            if (eq)
                value = eq + 1;
            else if (i + 1 < argc && (strcmp(argv[i + 1], "-") == 0 || argv[i + 1][0] != '-'))
                value = argv[++i];
        } else if (o->metavar) {
            if (eq)
                value = eq + 1;
            else if (i + 1 < argc)
                value = argv[++i];
            else
                return rl_errf(e, RL_EINVAL, "option --%s needs a value (%s)", o->name, o->metavar);
        } else if (eq) {
            return rl_errf(e, RL_EINVAL, "option --%s takes no value (got '%s')", o->name, eq + 1);
        }
        int rc = sets[set].fn(sets[set].ctx, o->id, value, e);
        if (rc)
            return rc;
    }
    return 0;
}

void cli_help(FILE *f, const char *usage, const char *description, const struct cli_optset *sets,
              int n_sets)
{
    fprintf(f, "usage: %s\n\n%s\n", usage, description);
    for (int s = 0; s < n_sets; s++) {
        fprintf(f, "\n%s:\n", sets[s].title);
        for (const struct cli_opt *o = sets[s].opts; o && o->name; o++) {
            char left[64];
            snprintf(left, sizeof left, "--%s%s%s", o->name, o->metavar ? " " : "",
                     o->metavar ? o->metavar : "");
            if (strlen(left) > 26)
                fprintf(f, "  %s\n  %-26s %s\n", left, "", o->help);
            else
                fprintf(f, "  %-26s %s\n", left, o->help);
        }
    }
    fprintf(f, "  %-26s %s\n", "-h, --help", "this help");
    fprintf(f, "  %-26s %s\n", "--version", "print the ratiolab version");
}

int cli_fail(const char *cmd, const struct rl_err *e)
{
    fprintf(stderr, "ratiolab %s: %s\n", cmd, e->msg[0] ? e->msg : rl_strerror(e->code));
    return rl_exit_code(e->code ? e->code : RL_EINTERNAL);
}

static bool word_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'; }

int cli_err_word(struct rl_err *e, const char *field, const char *flag)
{
    const size_t len = strlen(field);
    char out[RL_ERR_MSG_MAX];
    size_t o = 0;
    for (size_t i = 0; e->msg[i] && o + 1 < sizeof out;) {
        if (strncmp(e->msg + i, field, len) == 0 && (i == 0 || !word_char(e->msg[i - 1])) &&
            !word_char(e->msg[i + len])) {
            int w = snprintf(out + o, sizeof out - o, "%s", flag);
            o = o + (size_t)w < sizeof out ? o + (size_t)w : sizeof out - 1;
            i += len;
        } else {
            out[o++] = e->msg[i++];
        }
    }
    out[o] = 0;
    snprintf(e->msg, sizeof e->msg, "%s", out);
    return e->code;
}

int cli_err_flag(struct rl_err *e, const char *field, const char *flag)
{
    size_t len = strlen(field);
    for (char *at = e->msg; at; at = strstr(at, ": ")) {
        if (at != e->msg)
            at += 2;
        if (strncmp(at, field, len) == 0 && (at[len] == ':' || at[len] == ' ')) {
            char rest[RL_ERR_MSG_MAX];
            snprintf(rest, sizeof rest, "%s", at + len);
            snprintf(at, sizeof e->msg - (size_t)(at - e->msg), "%s%s", flag, rest);
            break;
        }
    }
    return e->code;
}

const char *cli_data(const char *s)
{
    static char slot[CLI_DATA_SLOTS][CLI_DATA_BYTES];
    static unsigned next;
    return rl_text_data(slot[next++ % CLI_DATA_SLOTS], CLI_DATA_BYTES, s);
}

const char *cli_gib(char *buf, size_t n, int64_t bytes)
{
    snprintf(buf, n, "%.2f", (double)bytes / RL_GIB);
    return buf;
}

int cli_command_parse_rest(const char *cmd, int argc, char **argv, const char *usage, const char *description,
                           const struct cli_optset *sets, int n_sets, struct cli_rest *rest)
{
    struct rl_err e = {0};
    int rc = cli_parse(argc, argv, sets, n_sets, rest, &e);
    if (rc == CLI_HELP) {
        cli_help(stdout, usage, description, sets, n_sets);
        return 0;
    }
    if (rc == CLI_VERSION) {
        printf("ratiolab %s\n", RL_VERSION_STRING);
        return 0;
    }
    if (rc)
        return cli_fail(cmd, &e);
    return CLI_GO_ON;
}

int cli_command_parse(const char *cmd, int argc, char **argv, const char *usage, const char *description,
                      const struct cli_optset *sets, int n_sets)
{
    struct cli_rest rest;
    int rc = cli_command_parse_rest(cmd, argc, argv, usage, description, sets, n_sets, &rest);
    if (rc != CLI_GO_ON)
        return rc;
    if (rest.n_pos || rest.n_after) {
        struct rl_err e = {0};
        rl_errf(&e, RL_EINVAL, "unexpected argument '%s'", rest.n_pos ? rest.pos[0] : "--");
        return cli_fail(cmd, &e);
    }
    return CLI_GO_ON;
}
