/* tests/check_common.c — checked parsing, versions and atomic output files (common/). */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/rl.h"
#include "tests/util.h"

START_TEST(parse_bytes_units)
{
    int64_t b;
    struct rl_err e = {0};
    ck_assert_int_eq(rl_parse_bytes("gpu-mem", "16GiB", &b, &e), 0);
    ck_assert_int_eq(b, 17179869184LL);
    ck_assert_int_eq(rl_parse_bytes("gpu-mem", "80GB", &b, &e), 0);
    ck_assert_int_eq(b, 80000000000LL);
    ck_assert_int_eq(rl_parse_bytes("x", "1e9B", &b, &e), 0);
    ck_assert_int_eq(b, 1000000000LL);
    ck_assert_int_eq(rl_parse_bytes("x", "16G", &b, &e), 0);   /* listed as accepted */
    ck_assert_int_eq(b, 17179869184LL);
    /* a bare number is 80 bytes to one reader and 80 GiB to another: refused, forms listed */
    ck_assert_int_eq(rl_parse_bytes("--gpu-mem", "80", &b, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "no unit"));
    ck_assert_ptr_nonnull(strstr(e.msg, "16G"));
    ck_assert_int_eq(rl_parse_bytes_min("--gpu-mem", "-0GiB", 1, &b, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_bytes_min("--gpu-mem", "1e-400GiB", 1, &b, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_bytes_min("--gpu-mem", "0GiB", 1, &b, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_bytes("gpu-mem", "16 parsecs", &b, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "gpu-mem"));
    ck_assert_int_eq(rl_parse_bytes("gpu-mem", "1e30GiB", &b, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_bytes("gpu-mem", "-1GiB", &b, &e), RL_EINVAL);
}
END_TEST

START_TEST(parse_double_rejects_nan_and_range)
{
    double v;
    struct rl_err e = {0};
    ck_assert_int_eq(rl_parse_double("ratio", "nan", 0, 1, &v, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "ratio"));
    ck_assert_int_eq(rl_parse_double("ratio", "inf", 0, 1, &v, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_double("ratio", "1.5", 0, 1, &v, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "1.5 is outside [0, 1]"));
    ck_assert_int_eq(rl_parse_double("ratio", "0.3x", 0, 1, &v, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_double("ratio", "0.25", 0, 1, &v, &e), 0);
    ck_assert(v == 0.25);
}
END_TEST

START_TEST(ratio_list_gives_typed_doubles)
{
    double *v;
    size_t n;
    struct rl_err e = {0};
    ck_assert_int_eq(rl_parse_ratio_list("ratios", "0:1:0.1", 0, 1, &v, &n, &e), 0);
    ck_assert_uint_eq(n, 11);
    /* A range whose colons lie past 127 bytes is read whole (a truncated copy lost them and the
     * split dereferenced NULL: fuzz finding): leading zeros, so 0000...0.2:0.6:0.2 is 0.2, 0.4, 0.6. */
    {
        char longer[400];
        memset(longer, '0', 200);
        snprintf(longer + 200, sizeof longer - 200, ".2:0.6:0.2");
        double *w;
        size_t m;
        ck_assert_int_eq(rl_parse_ratio_list("ratios", longer, 0, 1, &w, &m, &e), 0);
        ck_assert_uint_eq(m, 3);
        ck_assert(w[0] == 0.2 && w[1] == 0.4 && w[2] == 0.6);
        free(w);
    }
    ck_assert(v[3] == 0.3);   /* not 0.30000000000000004 */
    ck_assert(v[7] == 0.7);
    ck_assert(v[10] == 1.0);
    free(v);
    ck_assert_int_eq(rl_parse_ratio_list("ratios", "0.1,0.5", 0, 1, &v, &n, &e), 0);
    ck_assert_uint_eq(n, 2);
    free(v);
    ck_assert_int_eq(rl_parse_ratio_list("ratios", "0:2:0.1", 0, 1, &v, &n, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_ratio_list("ratios", "0:1:0", 0, 1, &v, &n, &e), RL_EINVAL);
    ck_assert_int_eq(rl_parse_ratio_list("ratios", "0:1", 0, 1, &v, &n, &e), RL_EINVAL);
}
END_TEST

START_TEST(versions_compare)
{
    struct rl_version a, b;
    ck_assert_int_eq(rl_parse_version("v", "0.12.4", &a, NULL), 0);
    ck_assert_int_eq(rl_parse_version("v", "0.18", &b, NULL), 0);
    ck_assert_int_lt(rl_version_cmp(a, b), 0);
    ck_assert_int_eq(rl_parse_version("v", "0.x", &a, NULL), RL_EINVAL);
    ck_assert_int_eq(rl_parse_version("v", "1.2.3.4", &a, NULL), RL_EINVAL);
}
END_TEST

START_TEST(outfile_is_atomic)
{
    struct rl_outfile o;
    struct rl_err e = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/atomic.txt", tu_tmpdir());
    int before = tu_count_files();
    ck_assert_int_eq(rl_outfile_open(&o, path, &e), 0);
    fputs("partial", o.fp);
    ck_assert(!tu_exists(path));
    rl_outfile_abort(&o);
    ck_assert(!tu_exists(path));
    ck_assert_int_eq(tu_count_files(), before);
    ck_assert_int_eq(rl_outfile_open(&o, path, &e), 0);
    fputs("whole", o.fp);
    ck_assert_int_eq(rl_outfile_commit(&o, &e), 0);
    char *s;
    ck_assert_int_eq(rl_read_file(path, &s, NULL, &e), 0);
    ck_assert_str_eq(s, "whole");
    free(s);
    ck_assert_int_eq(tu_count_files(), before + 1);
    ck_assert_int_eq(rl_outfile_open(&o, "/nonexistent-dir/x", &e), RL_EIO);
}
END_TEST

START_TEST(exit_codes_follow_table)
{
    ck_assert_int_eq(rl_exit_code(RL_OK), 0);
    ck_assert_int_eq(rl_exit_code(RL_ECHECK), 1);
    ck_assert_int_eq(rl_exit_code(RL_EINVAL), 2);
    ck_assert_int_eq(rl_exit_code(RL_EENV), 3);
}
END_TEST

START_TEST(every_size_unit_by_its_definition)
{
    /* IEC units are powers of 1024, SI units powers of 1000; the bare K/M/G/T letters are IEC
     * (as in `free -h` and DeepSpeed's memory logs). */
    static const struct { const char *text; int64_t bytes; } u[] = {
        {"3B", 3},
        {"3KiB", 3 * 1024LL},                {"3MiB", 3 * 1024LL * 1024},
        {"3GiB", 3 * 1024LL * 1024 * 1024}, {"3TiB", 3 * 1024LL * 1024 * 1024 * 1024},
        {"3kB", 3000},     {"3KB", 3000}, {"3MB", 3000000}, {"3GB", 3000000000LL}, {"3TB", 3000000000000LL},
        {"3K", 3 * 1024LL}, {"3M", 3 * 1024LL * 1024}, {"3G", 3 * 1024LL * 1024 * 1024},
        {"3T", 3 * 1024LL * 1024 * 1024 * 1024}, {"1.5GiB", 3 * 512LL * 1024 * 1024},
    };
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
        int64_t b = -1;
        struct rl_err e = {0};
        ck_assert_msg(rl_parse_bytes("size", u[i].text, &b, &e) == 0, "%s: %s", u[i].text, e.msg);
        ck_assert_msg(b == u[i].bytes, "%s: %lld bytes, want %lld", u[i].text, (long long)b, (long long)u[i].bytes);
    }
    /* a bare number has no unit by definition: refused (issue 10, item 15), never read as bytes */
    int64_t b = -1;
    struct rl_err e = {0};
    ck_assert_int_eq(rl_parse_bytes("size", "3", &b, &e), RL_EINVAL);
    ck_assert_int_eq(b, -1);
}
END_TEST

/* rl_grow: the capacity doubles from `first` until it holds what is needed, the elements kept;
 * a need the capacity already holds does nothing; an impossible one is RL_ENOMEM with the array
 * and its capacity untouched. */
START_TEST(grow_doubles_and_keeps_the_array_on_failure)
{
    int64_t *v = NULL;
    int cap = 0;
    ck_assert_int_eq(rl_grow(&v, &cap, sizeof *v, 1, 4), 0);
    ck_assert_int_eq(cap, 4);
    for (int i = 0; i < 4; i++)
        v[i] = 1000 + i;
    ck_assert_int_eq(rl_grow(&v, &cap, sizeof *v, 4, 4), 0);
    ck_assert_int_eq(cap, 4);
    ck_assert_int_eq(rl_grow(&v, &cap, sizeof *v, 9, 4), 0);   /* 4 -> 8 -> 16 */
    ck_assert_int_eq(cap, 16);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(v[i], 1000 + i);
    v[15] = 7;
    int64_t *before = v;
    ck_assert_int_eq(rl_grow(&v, &cap, sizeof *v, INT_MAX, 4), RL_ENOMEM);   /* 2^31 elements: past int */
    ck_assert_ptr_eq(v, before);
    ck_assert_int_eq(cap, 16);
    ck_assert_int_eq(v[15], 7);
    free(v);
}
END_TEST

/* The build refuses a printf-like call whose format is not a literal (issue 35, item 1): each of
 * common/'s printf-like functions called with user text as its format, compiled with the
 * project's own C flags ($RATIOLAB_CFLAGS, from the Makefile), fails with the format warning made
 * an error; the same call with "%s" compiles (so the failure is the format, not the setup). */
START_TEST(non_literal_format_does_not_build)
{
    const char *flags = getenv("RATIOLAB_CFLAGS");
    ck_assert_msg(flags && strstr(flags, "-Werror"), "RATIOLAB_CFLAGS not set (run through make test-run)");
    static const struct {
        const char *call;   /* the body of int k(struct rl_err *e, const char *user) */
        bool builds;        /* expected */
    } cases[] = {
        {"return rl_err_prefix(e, \"%s\", user);", true},
        {"return rl_err_prefix(e, user);", false},
        {"return rl_errf(e, RL_EINVAL, user);", false},
        {"return rl_errf(e, RL_EINVAL, user, 1);", false},
        {"int first = 0; return rl_err_first(&first, e, RL_EINVAL, user);", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[512];
        snprintf(src, sizeof src, "#include \"common/rl.h\"\nint k(struct rl_err *e, const char *user);\n"
                 "int k(struct rl_err *e, const char *user) { %s }\n", cases[i].call);
        const char *path = tu_write("fmt.c", src);
        struct tu_run r;
        tu_sh(&r, "cd '%s' && cc %s -fsyntax-only '%s'", tu_src(), flags, path);
        if (cases[i].builds)
            ck_assert_msg(r.status == 0, "%s: exit %d: %s", cases[i].call, r.status, r.err);
        else
            ck_assert_msg(r.status != 0 && strstr(r.err, "format not a string literal") && strstr(r.err, "error"),
                          "%s: exit %d: %s", cases[i].call, r.status, r.err);
        tu_run_free(&r);
    }
}
END_TEST

Suite *common_suite(void)
{
    Suite *s = suite_create("common");
    TCase *tc = tcase_create("parsing");
    tcase_add_test(tc, parse_bytes_units);
    tcase_add_test(tc, every_size_unit_by_its_definition);
    tcase_add_test(tc, parse_double_rejects_nan_and_range);
    tcase_add_test(tc, ratio_list_gives_typed_doubles);
    tcase_add_test(tc, versions_compare);
    tcase_add_test(tc, exit_codes_follow_table);
    tcase_add_test(tc, grow_doubles_and_keeps_the_array_on_failure);
    suite_add_tcase(s, tc);
    TCase *io = tcase_create("files");
    tcase_add_test(io, outfile_is_atomic);
    if (tu_have_program("cc"))
        tcase_add_test(io, non_literal_format_does_not_build);
    else
        tu_skip("common: non_literal_format_does_not_build", "no C compiler (cc not on PATH)");
    suite_add_tcase(s, io);
    return s;
}
