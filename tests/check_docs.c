/* tests/check_docs.c — the man page and bash completion generated from the --help texts
 * (scripts/gen-docs.sh): every subcommand is there, with options it is known to take, and after
 * an option the values its help lists (or the catalog's names). Every --json output starts with
 * "schema_version": 1 and prints reals as the shortest text that reads back. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
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
    /* Options each command is documented to take (docs/inputs.md), in that command's list. */
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

/* Values listed only in the help prose are offered too: --policy and --attention (a|b|c or prose,
 * as their --help writes them), --schedule, and the catalog's names after --hw and --model. */
START_TEST(completion_offers_the_values_the_help_lists)
{
    static const struct {
        const char *words, *want;
    } cases[] = {
        {"predict --policy \"\"", "auto deepspeed-0.12 deepspeed-0.18 exact"},
        {"sweep --attention \"\"", "flash materialized"},
        {"tune --attention m", "materialized"},
        {"predict --schedule \"\"", "deepspeed overlap"},
        {"check --param-groups megatron", "megatron megatron-old"},
        {"predict --hw dgx1", "dgx1-v100"},
        {"tune --model llama2-1", "llama2-13b"},
    };
    struct tu_run r;
    tu_sh(&r, "%s/scripts/gen-docs.sh completion %s > c.bash", tu_src(), tu_bin());
    ck_assert_msg(r.status == 0, "gen-docs.sh: exit %d: %s", r.status, r.err);
    tu_run_free(&r);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tu_sh(&r, "bash -c '. ./c.bash && COMP_WORDS=(ratiolab %s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
                  "_ratiolab; echo \"${COMPREPLY[*]}\"'", cases[i].words);
        ck_assert_msg(r.status == 0, "%s: exit %d: %s", cases[i].words, r.status, r.err);
        char want[256];
        snprintf(want, sizeof want, "%s\n", cases[i].want);
        ck_assert_msg(strcmp(r.out, want) == 0, "%s: offered '%s', expected '%s'", cases[i].words, r.out, cases[i].want);
        tu_run_free(&r);
    }
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

/* Every --json output, one command each (run, validate and trace diff with the small inputs their
 * own suites use). */
static const char *const json_commands[] = {
    "plan --json",
    "plan --ratios 0:1:0.5 --json",
    "echo '{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":0.3}}}' > c.json && %s check --ds-config c.json --model gpt-2.7b --json",
    "predict --ratio 0.3 --json",
    "sweep --ratios 0:1:0.1 --json",
    "tune --gpu-mem 16GiB --json",
    "catalog --json",
    "run --scale 10000 --sub-group-size 1e8 --warmup 0 --json",
    "%s predict --ratio 0.5 --trace p.json.gz > /dev/null && %s trace diff p.json.gz p.json.gz --json",
};

START_TEST(every_json_output_has_schema_version_1)
{
    const char *cmd = json_commands[_i];
    struct tu_run r;
    if (strstr(cmd, "%s")) { /* a shell line: the binary goes wherever %s is */
        char line[2048];
        size_t n = 0;
        for (const char *c = cmd; *c && n + 1 < sizeof line; c++) {
            if (c[0] == '%' && c[1] == 's') {
                n += (size_t)snprintf(line + n, sizeof line - n, "%s", tu_bin());
                c++;
            } else {
                line[n++] = *c;
            }
        }
        line[n < sizeof line ? n : sizeof line - 1] = 0;
        tu_sh(&r, "%s", line);
    } else {
        tu_ratiolab(&r, "%s", cmd);
    }
    ck_assert_msg(r.status == 0 || r.status == 1, "%s: exit %d: %s", cmd, r.status, r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_msg(j != NULL, "%s: not JSON: %s", cmd, je.text);
    ck_assert_msg(json_integer_value(json_object_get(j, "schema_version")) == 1, "%s: no schema_version 1", cmd);
    /* It is the first key, so a reader sees it before anything else. */
    const char *first = "{\n  \"schema_version\": 1,";
    ck_assert_msg(strncmp(r.out, first, strlen(first)) == 0, "%s: starts '%.40s'", cmd, r.out);
    json_decref(j);
    tu_run_free(&r);
}
END_TEST

/* A sweep's requested ratios are 0, 0.1, ..., 1: their text is that, not %.17g's
 * 0.29999999999999999, and every real in the output reads back to itself at full precision. */
START_TEST(sweep_json_reals_are_shortest)
{
    struct tu_run r;
    tu_ratiolab(&r, "sweep --ratios 0:1:0.1 --json");
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\"requested_ratio\":0.3,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"requested_ratio\":0.7,"));
    ck_assert_ptr_null(strstr(r.out, "0.29999999999999999"));
    ck_assert_ptr_null(strstr(r.out, "9999999999"));
    ck_assert_ptr_null(strstr(r.out, "0000000001"));
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *rows = json_object_get(j, "rows");
    ck_assert_int_eq((int)json_array_size(rows), 11);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        double v = json_real_value(json_object_get(json_array_get(rows, i), "requested_ratio"));
        ck_assert_msg(v == (double)i / 10, "row %zu: %.17g", i, v);
    }
    json_decref(j);
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
    tcase_add_test(t, completion_offers_the_values_the_help_lists);
    tcase_add_test(t, man_page_has_a_section_per_command);
    suite_add_tcase(s, t);
    TCase *j = tcase_create("json");
    tcase_set_timeout(j, 120);
    tcase_add_loop_test(j, every_json_output_has_schema_version_1, 0,
                        (int)(sizeof json_commands / sizeof json_commands[0]));
    tcase_add_test(j, sweep_json_reals_are_shortest);
    suite_add_tcase(s, j);
    return s;
}
