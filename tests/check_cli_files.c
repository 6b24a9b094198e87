/* tests/check_cli_files.c — output files: --out holds exactly what stdout would have shown (text
 * and JSON) and nothing is printed meanwhile; a file that cannot be created is bad input (exit
 * 2, the path named, no file left behind), never an environment error (exit 3). */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/rl.h"
#include "tests/util.h"

START_TEST(out_file_equals_stdout_bytes)
{
    static const char *const forms[] = {"plan --json", "plan", "plan --ds-config r.json --model gpt2 --json"};
    tu_write("r.json", "{\"zero_optimization\":{\"stage\":3,\"offload_optimizer\":{\"device\":\"cpu\",\"ratio\":0.5}},"
                       "\"fp16\":{\"enabled\":true}}");
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        struct tu_run a, b;
        tu_ratiolab(&a, "%s", forms[i]);
        tu_ratiolab(&b, "%s --out o.txt", forms[i]);
        ck_assert_msg(b.status == a.status, "%s: exit %d with --out, %d without: %s", forms[i], b.status, a.status, b.err);
        ck_assert_msg(strlen(a.out) > 100, "%s: %zu bytes on stdout", forms[i], strlen(a.out));
        ck_assert_msg(b.out[0] == 0, "%s --out printed %zu bytes", forms[i], strlen(b.out));
        char *f = tu_slurp("o.txt");
        ck_assert_msg(strcmp(f, a.out) == 0, "%s: --out file differs from stdout", forms[i]);
        if (strstr(forms[i], "--json")) {
            json_error_t je;
            json_t *o = json_loads(f, 0, &je);
            ck_assert_msg(o != NULL, "%s: not JSON: %s", forms[i], je.text);
            ck_assert_str_eq(json_string_value(json_object_get(o, "model")), i == 0 ? "gpt-2.7b" : "gpt2");
            json_decref(o);
        }
        free(f);
        tu_run_free(&a);
        tu_run_free(&b);
    }
}
END_TEST

START_TEST(uncreatable_output_exits_2)
{
    int before = tu_count_files();
    static const char *const cmds[] = {"predict --trace no/such/dir/t.json", "plan --json --out no/such/dir/p.json",
                                       "predict --trace no/such/dir/t.json.gz"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        struct tu_run r;
        tu_ratiolab(&r, "%s", cmds[i]);
        ck_assert_msg(r.status == 2, "%s: exit %d (want 2): %s", cmds[i], r.status, r.err);
        ck_assert_msg(strstr(r.err, "no/such/dir/") != NULL, "%s: the path is not named: %s", cmds[i], r.err);
        ck_assert_msg(strchr(r.err, '\n') == strrchr(r.err, '\n'), "%s: more than one line: %s", cmds[i], r.err);
        tu_run_free(&r);
    }
    ck_assert_int_eq(tu_count_files(), before);
}
END_TEST

Suite *cli_files_suite(void)
{
    Suite *s = suite_create("cli_files");
    TCase *tc = tcase_create("files");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, out_file_equals_stdout_bytes);
    tcase_add_test(tc, uncreatable_output_exits_2);
    suite_add_tcase(s, tc);
    return s;
}
