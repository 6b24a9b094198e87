/* tests/check_layers.c — scripts/check-layers.sh: the layering the module READMEs state holds in
 * the tree, and a forbidden include in a scratch tree is caught (file, line, what is allowed);
 * scripts/check-calls.sh: no two files of the built tree call each other, and a pair that does is
 * caught. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "tests/util.h"

START_TEST(tree_follows_its_readmes)
{
    struct tu_run r;
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' '%s'", tu_src(), tu_src());
    ck_assert_msg(r.status == 0, "check-layers failed on the tree (exit %d):\n%s%s", r.status, r.out, r.err);
    tu_run_free(&r);
}
END_TEST

/* A plan/ file that includes sim/ (plan may include common/ only): exit 1 naming the file, the
 * line and the include; the allowed includes of the same tree pass. */
START_TEST(forbidden_include_is_caught)
{
    struct tu_run r;
    tu_sh(&r, "mkdir -p lay/plan lay/sim && printf 'May include `common/` and jansson.\\n' > lay/plan/README.md && "
              "printf 'Pure.\\nMay include `plan/`, `common/`.\\n' > lay/sim/README.md && "
              "printf '#include \"common/rl.h\"\\n#include \"plan/plan.h\"\\n' > lay/plan/ok.c && "
              "printf '#include \"plan/plan.h\"\\n' > lay/sim/ok.c");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay", tu_src());
    ck_assert_msg(r.status == 0, "allowed includes refused: %s%s", r.out, r.err);
    tu_run_free(&r);

    tu_sh(&r, "printf '\\n#include \"sim/step.h\"\\n' >> lay/plan/ok.c");
    tu_run_free(&r);
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay", tu_src());
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "plan/ok.c:4: includes sim/"));
    ck_assert_ptr_nonnull(strstr(r.out, "plan/README.md"));
    tu_run_free(&r);
}
END_TEST

/* Another module's private header (`*_impl.h`) is refused even where the module itself may be
 * included; the module's own files may include it. */
START_TEST(private_header_of_another_module_is_caught)
{
    struct tu_run r;
    tu_sh(&r, "mkdir -p lay3/plan lay3/sim && printf 'May include `common/`.\\n' > lay3/plan/README.md && "
              "printf 'May include `plan/`.\\n' > lay3/sim/README.md && "
              "printf '#include \"plan/model_impl.h\"\\n' > lay3/plan/a.c && "
              "printf '#include \"plan/plan.h\"\\n#include \"plan/model_impl.h\"\\n' > lay3/sim/b.c");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay3", tu_src());
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.out, "sim/b.c:2: includes a private header of plan/"));
    ck_assert_ptr_null(strstr(r.out, "plan/a.c"));
    ck_assert_ptr_null(strstr(r.out, "sim/b.c:1"));
    tu_run_free(&r);
}
END_TEST

/* A module README without a "May include" sentence is an error of its own (exit 2), not a pass. */
START_TEST(readme_without_the_rule_is_refused)
{
    struct tu_run r;
    tu_sh(&r, "mkdir -p lay2/plan && printf 'No rule here.\\n' > lay2/plan/README.md && "
              "printf '#include \"plan/plan.h\"\\n' > lay2/plan/a.c");
    tu_run_free(&r);
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay2", tu_src());
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "plan/README.md"));
    tu_run_free(&r);
}
END_TEST

/* A library message that names a command-line flag is refused (the library names the field,
 * cli/ puts back the flag); a Megatron launch line's own argument names are allowed. */
START_TEST(library_message_naming_a_flag_is_caught)
{
    struct tu_run r;
    tu_sh(&r, "mkdir -p lay4/plan && printf 'May include `common/`.\\n' > lay4/plan/README.md && "
              "printf 'int f(struct rl_err *e) { return rl_errf(e, 1, \"policy: bad\"); }\\n' > lay4/plan/ok.c && "
              "printf 'int g(struct rl_err *e) { return rl_errf(e, 1, \"--hidden-size: odd\"); }\\n' "
              "> lay4/plan/megatron_args.c && "
              "printf 'int h(struct rl_err *e) { return rl_errf(e, 1, \"--%%s (Megatron arguments) differ\"); }\\n' "
              ">> lay4/plan/ok.c");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay4", tu_src());
    ck_assert_msg(r.status == 0, "allowed messages refused: %s%s", r.out, r.err);
    tu_run_free(&r);
    tu_sh(&r, "printf 'int k(struct rl_err *e) { return rl_err_prefix(e, \"--policy\"); }\\n' >> lay4/plan/ok.c");
    tu_run_free(&r);
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay4", tu_src());
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.out, "plan/ok.c:3: a library message names a flag"), "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* Anywhere in the message: a flag in the middle of the text or on a continuation line is refused;
 * a quoted ratiolab command line (the name of another command's output format) is not. */
START_TEST(flag_inside_a_library_message_is_caught)
{
    struct tu_run r;
    tu_sh(&r, "mkdir -p lay5/sim && printf 'May include `common/`.\\n' > lay5/sim/README.md");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    tu_write("lay5/sim/ok.c", "int f(struct rl_err *e)\n{\n    return rl_errf(e, 1, \"%s: not a sweep (expected \"\n"
                              "                   \"`ratiolab sweep --json`)\", \"x\");\n}\n");
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay5", tu_src());
    ck_assert_msg(r.status == 0, "a quoted ratiolab command refused: %s%s", r.out, r.err);
    tu_run_free(&r);
    tu_write("lay5/sim/mid.c", "int g(struct rl_err *e)\n{\n    return rl_errf(e, 1, \"activations: seq_len %d gives \"\n"
                               "                   \"too much; allowed: a smaller --seq-len\", 4);\n}\n");
    tu_sh(&r, "bash '%s/scripts/check-layers.sh' lay5", tu_src());
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.out, "sim/mid.c:3: a library message names a flag"), "%s", r.out);
    ck_assert_msg(!strstr(r.out, "sim/ok.c"), "%s", r.out);
    tu_run_free(&r);
}
END_TEST

/* No two files of the build call each other, directly or around a loop (the objects' symbol
 * tables; tests/ may reach anywhere and is left out). */
START_TEST(no_two_files_call_each_other)
{
    struct tu_run r;
    tu_sh(&r, "bash '%s/scripts/check-calls.sh' --src '%s' '%s/obj' tests/", tu_src(), tu_src(), tu_build());
    ck_assert_msg(r.status == 0, "check-calls (exit %d):\n%s%s", r.status, r.out, r.err);
    tu_run_free(&r);
}
END_TEST

/* Three files a -> b -> c -> a: each is named with the file it calls and the symbol; a file
 * outside the loop is not. */
START_TEST(files_calling_around_a_loop_are_caught)
{
    struct tu_run r;
    tu_sh(&r, "mkdir -p calls/m && cd calls/m && "
              "printf 'int b(void);\nint a(void) { return b(); }\n' > a.c && "
              "printf 'int c(void);\nint b(void) { return c(); }\n' > b.c && "
              "printf 'int a(void);\nint c(void) { return a(); }\n' > c.c && "
              "printf 'int a(void);\nint d(void) { return a(); }\n' > d.c && "
              "for f in a b c d; do cc -c $f.c -o $f.o || exit 9; done");
    ck_assert_msg(r.status == 0, "cannot build the scratch objects: %s", r.err);
    tu_run_free(&r);
    tu_sh(&r, "bash '%s/scripts/check-calls.sh' calls", tu_src());
    ck_assert_msg(r.status == 1, "exit %d: %s%s", r.status, r.out, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "m/a calls m/b (b), which calls back into m/a"));
    ck_assert_ptr_nonnull(strstr(r.out, "m/c calls m/a (a), which calls back into m/c"));
    ck_assert_ptr_null(strstr(r.out, "m/d calls"));
    tu_run_free(&r);
    tu_sh(&r, "rm calls/m/c.o && bash '%s/scripts/check-calls.sh' calls", tu_src());
    ck_assert_msg(r.status == 0, "no loop left, exit %d: %s", r.status, r.out);
    tu_run_free(&r);
}
END_TEST

/* A version is printed by one formatter (rl_version_str, RL_VERSION_S): no file of a module (a
 * folder with a README.md, tests/ left out: tests may spell a version to check the formatter)
 * writes the "%d.%d.%d" of a struct rl_version by hand. */
START_TEST(version_printed_by_one_formatter)
{
    struct tu_run r;
    tu_sh(&r, "cd '%s' && for d in */; do [ -f \"$d/README.md\" ] && [ \"$d\" != tests/ ] && echo \"$d\"; done | "
              "xargs grep -rlF --include='*.c' --include='*.h' --include='*.cu' '%%d.%%d.%%d' | "
              "grep -v -x 'common/rl.c' || true", tu_src());
    ck_assert_int_eq(r.status, 0);
    ck_assert_msg(r.out[0] == '\0', "versions printed by hand in:\n%s", r.out);
    tu_run_free(&r);
}
END_TEST

Suite *layers_suite(void)
{
    Suite *s = suite_create("layers");
    TCase *tc = tcase_create("layers");
    tcase_set_timeout(tc, 120);   /* a shell script over the whole tree: seconds, more under load */
    tcase_add_test(tc, tree_follows_its_readmes);
    tcase_add_test(tc, no_two_files_call_each_other);
    tcase_add_test(tc, files_calling_around_a_loop_are_caught);
    tcase_add_test(tc, forbidden_include_is_caught);
    tcase_add_test(tc, readme_without_the_rule_is_refused);
    tcase_add_test(tc, private_header_of_another_module_is_caught);
    tcase_add_test(tc, library_message_naming_a_flag_is_caught);
    tcase_add_test(tc, flag_inside_a_library_message_is_caught);
    tcase_add_test(tc, version_printed_by_one_formatter);
    suite_add_tcase(s, tc);
    return s;
}
