/* tests/check_fuzz.c — replays every saved fuzz input (tests/fuzz/regressions/<target>/: inputs
 * that once crashed or misbehaved; tests/fuzz/seeds/<target>/) through the same entry points
 * `make fuzz` drives (tests/fuzz_targets.c). No fuzzing here: a crash or a sanitizer report in
 * the ASan + UBSan run fails the test. The expected messages of the regression inputs are
 * asserted where the bug was (check_badinput.c). */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rl.h"
#include "tests/fuzz_targets.h"
#include "tests/util.h"

/* Runs every file of <src>/tests/fuzz/<kind>/<target>/ through the target; returns the count. */
static int replay_dir(const char *kind, const struct rl_fuzz_target *t)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", tu_src(), kind, t->name);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        char *data;
        size_t len;
        struct rl_err e = {0};
        ck_assert_msg(rl_read_bytes(path, &data, &len, &e) == 0, "%s", e.msg);
        t->run((const uint8_t *)data, len);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

START_TEST(regression_inputs_replay)
{
    int total = 0;
    for (int i = 0; i < rl_fuzz_n_targets; i++)
        total += replay_dir("regressions", &rl_fuzz_targets[i]);
    ck_assert_int_ge(total, 10);   /* the inputs of issue 10 at least */
}
END_TEST

START_TEST(seed_inputs_replay)
{
    int total = 0;
    for (int i = 0; i < rl_fuzz_n_targets; i++)
        total += replay_dir("seeds", &rl_fuzz_targets[i]);
    ck_assert_int_ge(total, 3);
}
END_TEST

START_TEST(every_target_takes_empty_and_binary_input)
{
    static const uint8_t junk[] = {0x1f, 0x8b, 0, 0xff, '{', '[', '"', '\\', 0x80};
    for (int i = 0; i < rl_fuzz_n_targets; i++) {
        rl_fuzz_targets[i].run((const uint8_t *)"", 0);
        rl_fuzz_targets[i].run(junk, sizeof junk);
    }
}
END_TEST

Suite *fuzz_suite(void)
{
    Suite *s = suite_create("fuzz");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, regression_inputs_replay);
    tcase_add_test(tc, seed_inputs_replay);
    tcase_add_test(tc, every_target_takes_empty_and_binary_input);
    suite_add_tcase(s, tc);
    return s;
}
