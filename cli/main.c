/* cli/main.c — `ratiolab <command> [options]`: dispatch to cli/cmd_*.c. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#define RL_CMD(n) extern const struct cli_cmd cli_cmd_##n;
#include "commands.h"
#undef RL_CMD

static const struct cli_cmd *const commands[] = {
#define RL_CMD(n) &cli_cmd_##n,
#include "commands.h"
#undef RL_CMD
};
static const int n_commands = (int)(sizeof commands / sizeof commands[0]);

static void usage(FILE *f)
{
    fprintf(f, "usage: ratiolab <command> [options]   (ratiolab <command> --help for each)\n\n"
               "Predicts, runs and checks ZeRO-3 training with partial optimizer offload\n"
               "(DeepSpeed ZeRO-Offload++ \"ratio\").\n\ncommands:\n");
    for (int i = 0; i < n_commands; i++)
        fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\nexit codes: 0 ok, 1 a check failed, 2 bad input or usage, 3 environment\n");
}

int main(int argc, char **argv)
{
    cli_setup_help_init();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ratiolab %s\n", RL_VERSION_STRING);
        return 0;
    }
    for (int i = 0; i < n_commands; i++)
        if (strcmp(argv[1], commands[i]->name) == 0)
            return commands[i]->run(argc - 1, argv + 1);
    fprintf(stderr, "ratiolab: unknown command '%s'; commands:", argv[1]);
    for (int i = 0; i < n_commands; i++)
        fprintf(stderr, " %s", commands[i]->name);
    fprintf(stderr, " (ratiolab --help)\n");
    return 2;
}
