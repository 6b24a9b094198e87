/* tests/check_docs.c — the man page and bash completion generated from the --help texts
 * (scripts/gen-docs.sh): every subcommand is there, with options it is known to take. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/util.h"

/* The subcommands, from the source tree (one cli/cmd_<name>.c each), not from the binary. */
static int source_commands(char names[][32], int max)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cli", tu_src());
    DIR *d = opendir(path);
    ck_assert_msg(d != NULL, "cannot open %s", path);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "cmd_", 4) != 0 || len < 7 || strcmp(de->d_name + len - 2, ".c") != 0)
            continue;
        ck_assert_int_lt(n, max);
        snprintf(names[n], 32, "%.*s", (int)(len - 6), de->d_name + 4);
        n++;
    }
    closedir(d);
    return n;
}

static void generate(struct tu_run *r, const char *mode)
{
    tu_sh(r, "%s/scripts/gen-docs.sh %s %s", tu_src(), mode, tu_bin());
    ck_assert_msg(r->status == 0, "gen-docs.sh %s: exit %d: %s", mode, r->status, r->err);
}

START_TEST(completion_lists_every_command_and_known_options)
{
    char names[64][32];
    int n = source_commands(names, 64);
    ck_assert_int_ge(n, 10);
    struct tu_run r;
    generate(&r, "completion");
    /* The first-word list: every command, each as a word. */
    const char *first = strstr(r.out, "compgen -W \"");
    ck_assert_ptr_nonnull(first);
    char words[1024];
    snprintf(words, sizeof words, " %.*s ", (int)strcspn(first + 12, "\""), first + 12);
    for (int i = 0; i < n; i++) {
        char word[40], label[40];
        snprintf(word, sizeof word, " %s ", names[i]);
        snprintf(label, sizeof label, "\n    %s)\n", names[i]);
        ck_assert_msg(strstr(words, word), "command %s not in the first-word list '%s'", names[i], words);
        ck_assert_msg(strstr(r.out, label), "no option list for command %s", names[i]);
    }
    /* Options each command is documented to take (README), in that command's list. */
    static const struct {
        const char *cmd, *opt;
    } known[] = {{"plan", "--ratio"}, {"plan", "--ds-config"}, {"sweep", "--ratios"}, {"predict", "--hw"},
                 {"tune", "--headroom"}, {"monitor", "--csv"}, {"catalog", "--json"}};
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        char label[40];
        snprintf(label, sizeof label, "\n    %s)\n        opts=\"", known[k].cmd);
        const char *at = strstr(r.out, label);
        ck_assert_msg(at, "no option list for %s", known[k].cmd);
        at += strlen(label);
        char opts[4096], word[64];
        snprintf(opts, sizeof opts, " %.*s ", (int)strcspn(at, "\""), at);
        snprintf(word, sizeof word, " %s ", known[k].opt);
        ck_assert_msg(strstr(opts, word), "%s: %s not in '%s'", known[k].cmd, known[k].opt, opts);
    }
    tu_run_free(&r);
}
END_TEST

START_TEST(completion_is_valid_bash_and_completes)
{
    struct tu_run r;
    tu_sh(&r, "%s/scripts/gen-docs.sh completion %s > c.bash && bash -c '. ./c.bash && "
              "COMP_WORDS=(ratiolab sw); COMP_CWORD=1; _ratiolab; echo \"${COMPREPLY[*]}\"; "
              "COMP_WORDS=(ratiolab sweep --rati); COMP_CWORD=2; _ratiolab; echo \"${COMPREPLY[*]}\"'",
          tu_src(), tu_bin());
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.out, "sweep\n--ratio --ratios\n");
    tu_run_free(&r);
}
END_TEST

START_TEST(man_page_has_a_section_per_command)
{
    char names[64][32];
    int n = source_commands(names, 64);
    struct tu_run r;
    generate(&r, "man");
    ck_assert_msg(strncmp(r.out, ".\\\"", 3) == 0 && strstr(r.out, "\n.TH RATIOLAB 1 "), "no .TH header");
    for (int i = 0; i < n; i++) {
        char head[64];
        int k = snprintf(head, sizeof head, "\n.SH \"RATIOLAB ");
        for (const char *c = names[i]; *c; c++)
            head[k++] = (*c >= 'a' && *c <= 'z') ? (char)(*c - 'a' + 'A') : *c;
        snprintf(head + k, sizeof head - (size_t)k, "\"\n");
        ck_assert_msg(strstr(r.out, head), "man page lacks the section %s", head + 1);
    }
    /* Options are printed with escaped hyphens, so they copy as ASCII. */
    ck_assert_ptr_nonnull(strstr(r.out, "\\-\\-ratio"));
    tu_run_free(&r);
}
END_TEST

Suite *docs_suite(void)
{
    Suite *s = suite_create("docs");
    TCase *t = tcase_create("generated");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, completion_lists_every_command_and_known_options);
    tcase_add_test(t, completion_is_valid_bash_and_completes);
    tcase_add_test(t, man_page_has_a_section_per_command);
    suite_add_tcase(s, t);
    return s;
}
