/* tests/check_replay.c — the replay kernels (kernels/adam_replay.h) and the audit file's reader
 * and verdict (validation/audit.h).
 *
 * Expected values come from two places ratiolab did not compute: single elements worked by hand
 * (dyadic values, every operation exact, or one rounding worked out bit by bit), and
 * tests/deepspeed/replay/ops-<release>.rla, the state around step 3 that the real
 * DeepSpeedCPUAdam op and torch.optim.AdamW produced on fixed data (scripts/replay_record.py,
 * run in the DeepSpeed 0.14.1 and 0.19.8 venvs). Reordering, fusing or splitting any operation of
 * a replay kernel changes some of those bits (tests/mutants/replay-*.mut). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <zlib.h>

#include "kernels/adam_replay.h"
#include "sim/hw.h"
#include "tests/util.h"
#include "plan/inputs.h"
#include "validation/audit.h"
#include "validation/probe_json.h"
#include "validation/probe_run.h"

static struct kern_replay_hparams hand_hp(void)
{
    /* Dyadic hyperparameters: 1 - beta, beta^1, 1 / sqrt(1 - beta2) are all exact. */
    struct kern_replay_hparams h = {.lr = 0.5, .beta1 = 0.5, .beta2 = 0.75, .eps = 1.0,
                                    .weight_decay = 0.0, .adamw_mode = true,
                                    .bias_correction = true, .step = 1, .simd_width = 8,
                                    .tail_fma = true};
    return h;
}

/* One element at index `at` of an n-element step (n 1: the scalar tail; n 8: the vector body). */
static void ds_one(const struct kern_replay_hparams *h, int n, float p0, float m0, float v0,
                   float g0, float *p, float *m, float *v)
{
    float pa[8], ma[8], va[8], ga[8];
    for (int i = 0; i < 8; i++)
        pa[i] = p0, ma[i] = m0, va[i] = v0, ga[i] = g0;
    struct rl_err e = {0};
    ck_assert_int_eq(kern_replay_step(KERN_REPLAY_DS_CPU_ADAM, h, pa, ma, va, ga, n, &e), 0);
    *p = pa[0], *m = ma[0], *v = va[0];
}

START_TEST(ds_hand_exact)
{
    /* p 1, m 0, v 0, g 1, step 1: bc1 = 1 - 0.5 = 0.5, bc2 = 1 / sqrt(1 - 0.75) = 2, step_size
     * = -0.5 / 0.5 = -1. m = 0.5 * 1 = 0.5, v = 0.25 * 1 = 0.25, denom = sqrt(0.25) * 2 + 1 = 2,
     * update 0.25. AdamW wd 0.5: p = 1 + (-0.5 * 0.5) * 1 = 0.75, then 0.75 - 0.25 = 0.5. */
    for (int n = 1; n <= 8; n += 7) {
        struct kern_replay_hparams h = hand_hp();
        float p, m, v;
        ds_one(&h, n, 1, 0, 0, 1, &p, &m, &v);
        ck_assert_float_eq(m, 0.5f);
        ck_assert_float_eq(v, 0.25f);
        ck_assert_float_eq(p, 0.75f);   /* no decay: 1 - 0.25 */
        h.weight_decay = 0.5;
        ds_one(&h, n, 1, 0, 0, 1, &p, &m, &v);
        ck_assert_float_eq(p, 0.5f);
        /* Adam (L2) wd 0.5, eps 0.5: g = 1 * 0.5 + 1 = 1.5, m = 0.75, v = 0.25 * 2.25 = 0.5625,
         * denom = 0.75 * 2 + 0.5 = 2, update 0.375, p = 1 - 0.375 = 0.625. */
        h.adamw_mode = false;
        h.eps = 0.5;
        ds_one(&h, n, 1, 0, 0, 1, &p, &m, &v);
        ck_assert_float_eq(m, 0.75f);
        ck_assert_float_eq(v, 0.5625f);
        ck_assert_float_eq(p, 0.625f);
    }
}
END_TEST

START_TEST(ds_tail_fuses_the_other_product)
{
    /* beta1 0.75 (1 - beta1 = 0.25), m0 = 1 + 2^-23, g = -1.5.
     * Body: m0 * 0.75 = 0.75 + 1.5 * 2^-24 exactly, a tie between 0.75 + 2^-24 (odd) and
     * 0.75 + 2^-23 (even): 0.75 + 2^-23. fma(g, 0.25, that) = -0.375 + 0.75 + 2^-23 = 0.375 +
     * 2^-23, exact.
     * Tail with FMA: fma(m0, 0.75, g * 0.25 = -0.375) = 0.375 + 3 * 2^-25 exactly (ulp 2^-25 in
     * [0.25, 0.5)): one quarter of an ulp at 2^-23 apart from the body's.
     * Tail without FMA: the body's roundings, 0.375 + 2^-23. */
    struct kern_replay_hparams h = hand_hp();
    h.beta1 = 0.75;
    float m0 = 1.0f + 0x1p-23f, p, m, v;
    ds_one(&h, 8, 1, m0, 0, -1.5f, &p, &m, &v);
    ck_assert_float_eq(m, 0.375f + 0x1p-23f);
    ds_one(&h, 1, 1, m0, 0, -1.5f, &p, &m, &v);
    ck_assert_float_eq(m, 0.375f + 3 * 0x1p-25f);
    h.tail_fma = false;
    ds_one(&h, 1, 1, m0, 0, -1.5f, &p, &m, &v);
    ck_assert_float_eq(m, 0.375f + 0x1p-23f);
}
END_TEST

START_TEST(torch_hand_exact)
{
    /* beta1 = beta2 = 0.75, lr 0.5, wd 0.5, eps 1, step 1, p 1, m 0, v 0, g 1:
     * p *= 1 - 0.25 -> 0.75; m = lerp(0, 1, 0.25) = 0.25; v = 0 + 0.25 * 1 * 1 = 0.25;
     * bc1 = bc2 = 0.25, sqrt(bc2) = 0.5, step size 0.5 / 0.25 = 2; denom = 0.5 / 0.5 + 1 = 2;
     * p = 0.75 + (-2 * 0.25) / 2 = 0.5. Both paths; foreach with wd 0 skips the decay. */
    for (int opt = KERN_REPLAY_TORCH_ADAMW; opt <= KERN_REPLAY_TORCH_ADAMW_FOREACH; opt++) {
        struct kern_replay_hparams h = {.lr = 0.5, .beta1 = 0.75, .beta2 = 0.75, .eps = 1.0,
                                        .weight_decay = 0.5, .adamw_mode = true,
                                        .bias_correction = true, .step = 1};
        float p = 1, m = 0, v = 0, g = 1;
        struct rl_err e = {0};
        ck_assert_int_eq(kern_replay_step(opt, &h, &p, &m, &v, &g, 1, &e), 0);
        ck_assert_float_eq(m, 0.25f);
        ck_assert_float_eq(v, 0.25f);
        ck_assert_float_eq(p, 0.5f);
        h.weight_decay = 0;   /* p = 1 - 0.25 = 0.75 */
        p = 1, m = 0, v = 0;
        ck_assert_int_eq(kern_replay_step(opt, &h, &p, &m, &v, &g, 1, &e), 0);
        ck_assert_float_eq(p, 0.75f);
    }
}
END_TEST

START_TEST(replay_refuses_bad_hparams)
{
    struct kern_replay_hparams h = hand_hp();
    float x = 0;
    struct rl_err e = {0};
    h.step = 0;
    ck_assert_int_eq(kern_replay_step(1, &h, &x, &x, &x, &x, 1, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "step: 0"));
    h = hand_hp();
    h.simd_width = 5;
    ck_assert_int_eq(kern_replay_step(1, &h, &x, &x, &x, &x, 1, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "simd_width: 5"));
    h = hand_hp();
    ck_assert_int_eq(kern_replay_step(9, &h, &x, &x, &x, &x, 1, &e), RL_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "optimizer: 9"));
}
END_TEST

static void read_fixture(const char *name, struct val_audit *a)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/deepspeed/replay/%s", tu_src(), name);
    struct rl_err e = {0};
    ck_assert_msg(val_audit_read(path, a, &e) == 0, "%s", e.msg);
}

/* Every record of a recorded file replays bit for bit and passes the formula check. */
static void all_identical(const char *name, int want_records, int want_simd, bool want_fma)
{
    struct val_audit a;
    read_fixture(name, &a);
    ck_assert_int_eq(a.n, want_records);
    struct val_audit_finding *f = calloc((size_t)a.n, sizeof *f);
    struct rl_err e = {0};
    ck_assert_int_eq(val_audit_replay(&a, f, &e), 0);
    int ds = 0, torch = 0;
    for (int i = 0; i < a.n; i++) {
        const struct val_audit_rec *r = &a.rec[i];
        ck_assert_msg(f[i].status == VAL_AUDIT_IDENTICAL, "%s record %d (%s, %lld elements): %s, "
                      "%lld differ, max %lld ulps: %s", name, i,
                      kern_replay_opt_name(r->optimizer), (long long)r->numel,
                      val_audit_status_name(f[i].status), (long long)f[i].n_diff,
                      (long long)f[i].max_ulps, f[i].cause);
        ck_assert_msg(f[i].formula_ok, "%s record %d: formula ratio %g", name, i, f[i].formula_max);
        if (r->optimizer == KERN_REPLAY_DS_CPU_ADAM) {
            ds++;
            ck_assert_int_eq(r->simd_width, want_simd);
            ck_assert_int_eq(r->tail_fma, want_fma);
            ck_assert_int_eq(f[i].n_sqrt_faithful, 0);
        } else {
            torch++;
            /* torch's sqrt is faithful: a handful of elements, never most of them */
            ck_assert_int_le(f[i].n_sqrt_faithful, r->numel / 16);
        }
    }
    ck_assert_int_eq(ds, 8);
    ck_assert_int_eq(torch, 4);
    free(f);
    val_audit_free(&a);
}

START_TEST(recorded_0_19_8_bit_identical)
{
    all_identical("ops-0.19.8.rla", 12, 8, true);   /* AVX2 body, FMA tail (-march=native) */
}
END_TEST

START_TEST(recorded_0_14_1_bit_identical)
{
    all_identical("ops-0.14.1.rla", 12, 0, false);  /* scalar build, no -march: no FMA */
}
END_TEST

/* Rewrites record i's "after" arrays with a replay of `opt` under hyperparameters *k (twice:
 * two updates), as a wrong optimizer step would have left them. */
static void make_wrong(struct val_audit *a, int i, int opt, struct kern_replay_hparams k, bool twice)
{
    struct val_audit_rec *r = &a->rec[i];
    float *p = (float *)r->param_after, *m = (float *)r->exp_avg_after;
    float *v = (float *)r->exp_avg_sq_after;
    memcpy(p, r->param_before, (size_t)r->numel * 4);
    memcpy(m, r->exp_avg_before, (size_t)r->numel * 4);
    memcpy(v, r->exp_avg_sq_before, (size_t)r->numel * 4);
    struct rl_err e = {0};
    ck_assert_int_eq(kern_replay_step(opt, &k, p, m, v, r->grad, r->numel, &e), 0);
    if (twice) {
        k.step++;
        ck_assert_int_eq(kern_replay_step(opt, &k, p, m, v, r->grad, r->numel, &e), 0);
    }
}

static struct kern_replay_hparams held_of(const struct val_audit_rec *r)
{
    struct kern_replay_hparams k = {.lr = r->held.lr, .beta1 = r->held.beta1,
                                    .beta2 = r->held.beta2, .eps = r->held.eps,
                                    .weight_decay = r->held.weight_decay,
                                    .adamw_mode = r->adamw_mode,
                                    .bias_correction = r->bias_correction, .step = r->step,
                                    .simd_width = r->simd_width, .tail_fma = r->tail_fma};
    return k;
}

START_TEST(wrong_updates_are_named)
{
    struct val_audit a;
    read_fixture("ops-0.19.8.rla", &a);
    ck_assert_int_ge(a.n, 6);
    /* record 4: DeepSpeedCPUAdam, 261 elements; record 0: torch AdamW */
    struct kern_replay_hparams k = held_of(&a.rec[4]);
    k.lr = 2e-3;                                   /* lr doubled inside the step */
    make_wrong(&a, 4, KERN_REPLAY_DS_CPU_ADAM, k, false);
    k = held_of(&a.rec[5]);
    k.step = 4;                                    /* a step count one ahead */
    make_wrong(&a, 5, KERN_REPLAY_DS_CPU_ADAM, k, false);
    k = held_of(&a.rec[6]);
    k.step = 2;                                    /* two updates: steps 2 and 3 */
    make_wrong(&a, 6, KERN_REPLAY_DS_CPU_ADAM, k, true);
    struct val_audit_rec *r7 = &a.rec[7];          /* skipped: after = before */
    memcpy((float *)r7->param_after, r7->param_before, (size_t)r7->numel * 4);
    memcpy((float *)r7->exp_avg_after, r7->exp_avg_before, (size_t)r7->numel * 4);
    memcpy((float *)r7->exp_avg_sq_after, r7->exp_avg_sq_before, (size_t)r7->numel * 4);
    make_wrong(&a, 0, KERN_REPLAY_DS_CPU_ADAM, held_of(&a.rec[0]), false);   /* other optimizer */
    a.rec[1].held.lr = 5e-4;                       /* held differs from the group's, bits are the group's */
    struct val_audit_finding *f = calloc((size_t)a.n, sizeof *f);
    struct rl_err e = {0};
    ck_assert_int_eq(val_audit_replay(&a, f, &e), 0);
    ck_assert_int_eq(f[4].status, VAL_AUDIT_DIFFERS);
    ck_assert_int_gt(f[4].n_diff, 200);
    ck_assert_msg(strstr(f[4].cause, "lr = 0.002's bit for bit"), "%s", f[4].cause);
    ck_assert(!f[4].formula_ok);
    ck_assert_msg(strstr(f[5].cause, "step count: the bits are step 4's"), "%s", f[5].cause);
    ck_assert_msg(strstr(f[6].cause, "doubled update"), "%s", f[6].cause);
    ck_assert_msg(strstr(f[7].cause, "skipped update"), "%s", f[7].cause);
    ck_assert_msg(strstr(f[0].cause, "optimizer: the bits are ds_cpu_adam's"), "%s", f[0].cause);
    ck_assert_int_eq(f[1].status, VAL_AUDIT_DIFFERS);
    ck_assert_msg(strstr(f[1].cause, "held lr = 0.0005"), "%s", f[1].cause);
    ck_assert_int_eq(f[2].status, VAL_AUDIT_IDENTICAL);   /* untouched */
    ck_assert_str_eq(f[2].cause, "");
    free(f);
    val_audit_free(&a);
}
END_TEST

/* ---- the reader ------------------------------------------------------------------------- */

static uint8_t *fixture_bytes(size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/deepspeed/replay/ops-0.19.8.rla", tu_src());
    return (uint8_t *)tu_read(path, len);
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void recrc(uint8_t *b, size_t len)
{
    put32(b + 20, (uint32_t)crc32(crc32(0L, Z_NULL, 0), b + 32, (uInt)(len - 32)));
}

static void expect_refused(const uint8_t *b, size_t len, const char *needle)
{
    struct val_audit a;
    struct rl_err e = {0};
    ck_assert_int_eq(val_audit_parse(b, len, &a, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, needle), "want \"%s\" in \"%s\"", needle, e.msg);
    ck_assert_ptr_null(a.rec);
    ck_assert_ptr_null(a.data);
}

START_TEST(reader_refuses_bad_files)
{
    size_t len;
    uint8_t *b = fixture_bytes(&len);
    uint8_t *c = malloc(len);
    expect_refused(b, 10, "shorter than the 32-byte header");
    memcpy(c, b, len), c[0] = 'X';
    expect_refused(c, len, "magic");
    memcpy(c, b, len), put32(c + 8, 2);
    expect_refused(c, len, "version 2");
    memcpy(c, b, len), c[len - 1] ^= 1;
    expect_refused(c, len, "crc32");
    expect_refused(b, len - 4, "body_bytes");
    memcpy(c, b, len), put32(c + 16, 13), recrc(c, len);     /* one record more than there are */
    expect_refused(c, len, "record 12");
    memcpy(c, b, len), put32(c + 16, 11), recrc(c, len);     /* one fewer: bytes left over */
    expect_refused(c, len, "after the last of 11 records");
    memcpy(c, b, len), put32(c + 32 + 40, 0), put32(c + 32 + 44, 1), recrc(c, len);   /* numel 2^32 */
    expect_refused(c, len, "numel 4294967296");
    memcpy(c, b, len), put32(c + 32 + 4, 7), recrc(c, len);
    expect_refused(c, len, "optimizer 7");
    memcpy(c, b, len), put32(c + 32 + 28, 8), recrc(c, len);
    expect_refused(c, len, "flags 0x8");
    struct val_audit a;
    struct rl_err e = {0};
    ck_assert_int_eq(val_audit_parse(b, len, &a, &e), 0);   /* the untouched file parses */
    ck_assert_int_eq(a.n, 12);
    val_audit_free(&a);
    free(c);
    free(b);
}
END_TEST

/* The recorded cells (tests/deepspeed/audit/, README there): real DeepSpeed ZeRO-3 runs in split
 * mode, audited at step 3 by the probe and trimmed by scripts/audit_trim.py. Every sub-group of
 * every cell replays bit for bit, except in the cells whose name says "wronglr": there the
 * backup optimizer (torch AdamW) stepped param group 0 with twice its lr inside its step
 * (scripts/ds_oracle.py wrong_lr_hook), and in "wronglrcpu" DeepSpeedCPUAdam did so for group 1:
 * exactly those records must be named with that lr. */
START_TEST(recorded_cells)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/deepspeed/audit", tu_src());
    DIR *d = opendir(dir);
    ck_assert_msg(d, "%s: cannot open", dir);
    int files = 0, ds = 0, torch = 0, wrong = 0, ranks1 = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".rla") != 0)
            continue;
        files++;
        struct val_audit a;
        char name[1100];
        snprintf(name, sizeof name, "../audit/%s", de->d_name);
        read_fixture(name, &a);
        /* "wronglrcpu": DeepSpeedCPUAdam (own optimizer) stepped group 1 with twice its lr;
         * "wronglr": the backup torch AdamW stepped group 0 so. */
        bool wrongcpu = strstr(de->d_name, "wronglrcpu") != NULL;
        bool wronglr = !wrongcpu && strstr(de->d_name, "wronglr") != NULL;
        struct val_audit_finding *f = calloc((size_t)a.n, sizeof *f);
        struct rl_err e = {0};
        ck_assert_int_eq(val_audit_replay(&a, f, &e), 0);
        for (int i = 0; i < a.n; i++) {
            const struct val_audit_rec *r = &a.rec[i];
            bool hooked = (wronglr && r->optimizer_object == 1 && r->param_group == 0) ||
                          (wrongcpu && r->optimizer_object == 0 && r->param_group == 1);
            ranks1 += r->rank == 1;
            if (hooked) {
                wrong++;
                ck_assert_msg(f[i].status == VAL_AUDIT_DIFFERS && !f[i].formula_ok, "%s record %d",
                              de->d_name, i);
                ck_assert_msg(strstr(f[i].cause, "lr = 0.002's bit for bit"), "%s record %d: %s",
                              de->d_name, i, f[i].cause);
                continue;
            }
            ck_assert_msg(f[i].status == VAL_AUDIT_IDENTICAL && f[i].formula_ok && !f[i].hp_mismatch,
                          "%s record %d (rank %u sub-group %u, %s): %s, %lld differ, max %lld ulps, "
                          "formula %g: %s", de->d_name, i, r->rank, r->sub_group,
                          kern_replay_opt_name(r->optimizer), val_audit_status_name(f[i].status),
                          (long long)f[i].n_diff, (long long)f[i].max_ulps, f[i].formula_max,
                          f[i].cause);
            /* the other placement's optimizer leaves other bits from the same state (the
             * ratio's digest changes): somewhere, never beyond the record */
            ck_assert_int_gt(f[i].other_n_diff, 0);
            ck_assert_int_le(f[i].other_n_diff, r->numel);
            if (r->optimizer == KERN_REPLAY_DS_CPU_ADAM)
                ds++;
            else
                torch++;
        }
        free(f);
        val_audit_free(&a);
    }
    closedir(d);
    /* not vacuous: both optimizers, both ranks of a 2-rank cell, the wrong cell's records */
    ck_assert_int_ge(files, 3);
    ck_assert_int_gt(ds, 0);
    ck_assert_int_gt(torch, 0);
    ck_assert_int_gt(wrong, 0);
    ck_assert_int_gt(ranks1, 0);
}
END_TEST

/* The audits of every short-set cell of every launch of `make ds-oracle` (tests/deepspeed/audit/cells/
 * <release>-np<N>/<cell>.rla, every rank's records in one file, each sub-group trimmed to its
 * first and last 4 elements): each record replays bit for bit, except what the cell was made to
 * show, named from the cell's id (scripts/ds_oracle_cells.py):
 * - "-wronglr": the backup optimizer stepped group 0 with twice its lr; "-wronglrcpu":
 *   DeepSpeedCPUAdam stepped group 1 so: those records differ, with the lr named as the cause;
 * - "-skip2": sub-group 2 was not stepped at step 3: its record is a skipped update;
 * DeepSpeedCPUAdam's bias corrections as the release's IncrementStep makes them (0.14-0.18 recompute
 * std::pow for every CPU sub-group of a step after the first: val_audit_set_release).
 * - a split-mode schedule cell ("-split-...-sched-") and the Trainer cell: the backup optimizer's
 *   group-0 sub-groups are bit-identical to the lr it held, which is not its param group's (the
 *   scheduler-lr hazard); every other record matches its group. */
START_TEST(recorded_oracle_cells)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/deepspeed/audit/cells", tu_src());
    DIR *d = opendir(dir);
    ck_assert_msg(d, "%s: cannot open", dir);
    int launches = 0, files = 0, ds = 0, torch = 0, wrong = 0, stale = 0, skipped = 0, ranks = 0;
    struct dirent *ld;
    while ((ld = readdir(d))) {
        if (ld->d_name[0] == '.')
            continue;
        char sub[1300];
        snprintf(sub, sizeof sub, "%s/%s", dir, ld->d_name);
        DIR *c = opendir(sub);
        if (!c)
            continue;
        launches++;
        struct dirent *de;
        while ((de = readdir(c))) {
            size_t l = strlen(de->d_name);
            if (l < 5 || strcmp(de->d_name + l - 4, ".rla") != 0)
                continue;
            files++;
            char path[1600];
            snprintf(path, sizeof path, "%s/%s", sub, de->d_name);
            struct val_audit a;
            struct rl_err e = {0};
            ck_assert_msg(val_audit_read(path, &a, &e) == 0, "%s", e.msg);
            /* The release, from the launch's folder ("0.17.6-np2"): its IncrementStep. */
            char ver[64];
            snprintf(ver, sizeof ver, "%s", ld->d_name);
            char *dash = strchr(ver, '-');
            if (dash)
                *dash = 0;
            struct rl_version v;
            ck_assert_msg(rl_parse_version("launch", ver, &v, &e) == 0, "%s", e.msg);
            ck_assert_int_eq(val_audit_set_release(&a, v, &e), 0);
            const char *n = de->d_name;
            bool wrongcpu = strstr(n, "-wronglrcpu") != NULL;
            bool wronglr = !wrongcpu && strstr(n, "-wronglr") != NULL;
            bool skip = strstr(n, "-skip2") != NULL;
            bool sched = (strstr(n, "-split-") && strstr(n, "-sched-")) || strstr(n, "-trainer-");
            struct val_audit_finding *f = calloc((size_t)a.n, sizeof *f);
            ck_assert_int_eq(val_audit_replay(&a, f, &e), 0);
            for (int i = 0; i < a.n; i++) {
                const struct val_audit_rec *r = &a.rec[i];
                ranks |= 1 << (r->rank < 8 ? r->rank : 7);
                bool backup0 = r->optimizer_object == 1 && r->param_group == 0;
                if ((wronglr && backup0) || (wrongcpu && r->optimizer_object == 0 && r->param_group == 1)) {
                    wrong++;
                    ck_assert_msg(f[i].status == VAL_AUDIT_DIFFERS && strstr(f[i].cause, "lr = 0.002's bit for bit"),
                                  "%s/%s record %d: %s", ld->d_name, n, i, f[i].cause);
                    continue;
                }
                if (skip && r->sub_group == 2) {
                    skipped++;
                    ck_assert_msg(f[i].status == VAL_AUDIT_DIFFERS && strstr(f[i].cause, "skipped update"),
                                  "%s/%s record %d: %s", ld->d_name, n, i, f[i].cause);
                    continue;
                }
                ck_assert_msg(f[i].status == VAL_AUDIT_IDENTICAL && f[i].formula_ok,
                              "%s/%s record %d (rank %u sub-group %u, %s): %s, %lld differ, max %lld ulps: %s",
                              ld->d_name, n, i, r->rank, r->sub_group, kern_replay_opt_name(r->optimizer),
                              val_audit_status_name(f[i].status), (long long)f[i].n_diff, (long long)f[i].max_ulps,
                              f[i].cause);
                ck_assert_msg(f[i].hp_mismatch == (sched && backup0), "%s/%s record %d (rank %u sub-group %u): "
                              "held lr %g, its group's %g", ld->d_name, n, i, r->rank, r->sub_group, r->held.lr,
                              r->group.lr);
                stale += f[i].hp_mismatch;
                if (r->optimizer == KERN_REPLAY_DS_CPU_ADAM)
                    ds++;
                else
                    torch++;
            }
            free(f);
            val_audit_free(&a);
        }
        closedir(c);
    }
    closedir(d);
    /* not vacuous: six releases at 1-3 ranks, both optimizers, every kind of finding */
    ck_assert_int_ge(launches, 18);
    ck_assert_int_gt(files, 18);
    ck_assert_int_gt(ds, 0);
    ck_assert_int_gt(torch, 0);
    ck_assert_int_gt(wrong, 0);
    ck_assert_int_gt(skipped, 0);
    ck_assert_int_gt(stale, 0);
    ck_assert_int_eq(ranks & 7, 7);
}
END_TEST

START_TEST(slice_keeps_the_tail_boundary)
{
    /* The hand case of ds_tail_fuses_the_other_product, as one element of a 9-element call on
     * an 8-wide build: element 0 takes the body, element 8 the tail. */
    struct kern_replay_hparams h = hand_hp();
    h.beta1 = 0.75;
    h.subgroup_numel = 9;
    float p = 1, m = 1.0f + 0x1p-23f, v = 0, g = -1.5f;
    struct rl_err e = {0};
    ck_assert_int_eq(kern_replay_step(KERN_REPLAY_DS_CPU_ADAM, &h, &p, &m, &v, &g, 1, &e), 0);
    ck_assert_float_eq(m, 0.375f + 0x1p-23f);
    h.first_element = 8;
    p = 1, m = 1.0f + 0x1p-23f, v = 0;
    ck_assert_int_eq(kern_replay_step(KERN_REPLAY_DS_CPU_ADAM, &h, &p, &m, &v, &g, 1, &e), 0);
    ck_assert_float_eq(m, 0.375f + 3 * 0x1p-25f);
    h.first_element = 9;   /* past the end */
    ck_assert_int_eq(kern_replay_step(KERN_REPLAY_DS_CPU_ADAM, &h, &p, &m, &v, &g, 1, &e), RL_EINVAL);
}
END_TEST

START_TEST(validate_audit_needs_probe)
{
    struct tu_run r;
    tu_ratiolab(&r, "validate --audit x.rla");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "--audit: x.rla needs --probe"));
    tu_run_free(&r);
}
END_TEST

START_TEST(validate_probe_with_audit)
{
    /* The 1-rank 0.19.8 cells' probe documents and their trimmed audit files: the text report
     * has one line per record, the wrong cell's verdict is FAIL (exit 1) with its cause. */
    const char *src = tu_src();
    struct tu_run r;
    tu_ratiolab(&r, "validate --probe %s/tests/deepspeed/audit/0.19.8-np1-audit.probe.json --model "
                "%s/tests/deepspeed/models/gpt2-tiny.json --param-groups hf --audit "
                "%s/tests/deepspeed/audit/0.19.8-np1-audit.rla", src, src, src);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "6 sub-groups, each replayed"));
    ck_assert_ptr_nonnull(strstr(r.out, "ds_cpu_adam, own optimizer, 96 elements, step 3): bit-identical"));
    ck_assert_ptr_nonnull(strstr(r.out, "verdict    PASS (the audit: 0 of 6"));
    tu_run_free(&r);
    tu_ratiolab(&r, "validate --probe %s/tests/deepspeed/audit/0.19.8-np1-wronglr.probe.json --model "
                "%s/tests/deepspeed/models/gpt2-tiny.json --param-groups hf --audit "
                "%s/tests/deepspeed/audit/0.19.8-np1-wronglr.rla --json", src, src, src);
    ck_assert_msg(r.status == 1, "exit %d: %s", r.status, r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    ck_assert_msg(j, "%s", je.text);
    ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), "FAIL");
    json_t *sg = json_object_get(json_object_get(j, "audit"), "sub_groups");
    ck_assert_int_eq(json_array_size(sg), 6);
    int differs = 0;
    for (size_t i = 0; i < json_array_size(sg); i++) {
        json_t *x = json_array_get(sg, i);
        const char *st = json_string_value(json_object_get(x, "status"));
        if (strcmp(st, "differs") == 0) {
            differs++;
            ck_assert_str_eq(json_string_value(json_object_get(x, "optimizer_object")), "backup");
            ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(x, "cause")),
                                         "lr = 0.002's bit for bit"));
        }
    }
    ck_assert_int_eq(differs, 2);   /* the backup sub-group's two trimmed records */
    json_decref(j);
    tu_run_free(&r);
}
END_TEST

/* validation/probe_run.h in process: the ranks read, the audit replayed, and each error with the
 * step that gave it and the field (not the flag) it names, which cli/validate_probe.c maps. */
START_TEST(probe_run_names_the_step)
{
    char probe[1024], audit[1024], other[1024], model[1024];
    snprintf(probe, sizeof probe, "%s/tests/deepspeed/audit/0.19.8-np1-audit.probe.json", tu_src());
    snprintf(audit, sizeof audit, "%s/tests/deepspeed/audit/0.19.8-np1-audit.rla", tu_src());
    snprintf(other, sizeof other, "%s/tests/deepspeed/cells/0.19.8-np2-three.probe.rank1.json", tu_src());
    snprintf(model, sizeof model, "%s/tests/deepspeed/models/gpt2-tiny.json", tu_src());
    struct rl_err e = {0};
    struct val_probe_run run;
    memset(&run, 0, sizeof run);
    /* Rank 1's file is not where a run starts. */
    ck_assert_int_eq(val_probe_run_read(other, &run, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, ": rank: 1; allowed: 0"), "%s", e.msg);
    val_probe_run_free(&run);
    ck_assert_msg(val_probe_run_read(probe, &run, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(run.n, 1);
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.model = model;
    in.catalog = tu_catalog();
    in.layout.dp = run.prs[0].dp;
    if (run.prs[0].groups.n_groups > 0)
        in.group_spec = &run.prs[0].groups;
    struct plan_setup c;
    struct plan p;
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s", e.msg);
    ck_assert_msg(val_facts_apply(&run.prs[0].config, run.prs[0].dp, "probe", &in, &c, &e) == 0, "%s", e.msg);
    ck_assert_msg(plan_setup_plan(&c, -1, &p, &e) == 0, "%s", e.msg);
    struct val_probe_opts o = {.tol_bytes = RL_GIB, .tol_time_pct = 10, .predicted_step_ns = 0};
    /* A probe where the audit belongs: val_audit_read's message, field "audit". */
    struct val_probe_run_files f = {.probe_name = "PROBE", .audit = probe};
    ck_assert_int_eq(val_probe_run_judge(&run, &p, &o, &f, &e), RL_EINVAL);
    ck_assert_int_eq(run.failed, VAL_RUN_AUDIT_READ);
    ck_assert_msg(strstr(e.msg, "audit: magic is not") && !strstr(e.msg, "--"), "%s", e.msg);
    /* Another run that is rank 1's file: the other probe's field, and this probe by the caller's word. */
    struct val_probe_run again;
    memset(&again, 0, sizeof again);
    ck_assert_msg(val_probe_run_read(probe, &again, &e) == 0, "%s", e.msg);
    f = (struct val_probe_run_files){.probe_name = "PROBE", .audit = audit, .against_probe = other,
                                     .against_audit = audit};
    ck_assert_int_eq(val_probe_run_judge(&again, &p, &o, &f, &e), RL_EINVAL);
    ck_assert_int_eq(again.failed, VAL_RUN_AGAINST);
    ck_assert_msg(strncmp(e.msg, "against_probe ", 14) == 0 &&
                  strstr(e.msg, "rank 1; allowed: 0 (rank 0's file, as PROBE)"), "%s", e.msg);
    /* The audit alone replays: one finding per record, none of them a difference for this run. */
    struct val_probe_run ok;
    memset(&ok, 0, sizeof ok);
    ck_assert_msg(val_probe_run_read(probe, &ok, &e) == 0, "%s", e.msg);
    f = (struct val_probe_run_files){.probe_name = "PROBE", .audit = audit};
    ck_assert_msg(val_probe_run_judge(&ok, &p, &o, &f, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(ok.failed, VAL_RUN_OK);
    ck_assert_int_gt(ok.au.n, 0);
    ck_assert_ptr_nonnull(ok.af);
    ck_assert_ptr_null(ok.pairs);
    val_probe_run_free(&ok);
    ck_assert_ptr_null(ok.prs);
    val_probe_run_free(&again);
    val_probe_run_free(&run);
    plan_free(&p);
    plan_setup_free(&c);
}
END_TEST

/* Two recorded runs of one cell (tests/deepspeed/audit/0.19.8-np1-<kind>-r<ratio>), judged in
 * process and paired: the sums val_probe_run_why_totals gives, each against a second count (the
 * audit's own records, each looked up in the other run's audit by its place, not through the
 * pairing), and val_probe_run_json's document of the same run. */
static void judge_pair(const char *kind, const char *ra, const char *rb, struct val_probe_run *run, struct plan_setup *c,
                       struct plan *p)
{
    char pa[1024], aa[1024], pb[1024], ab[1024], model[1024];
    const char *dir = "tests/deepspeed/audit/0.19.8-np1";
    snprintf(pa, sizeof pa, "%s/%s-%s-r%s.probe.json", tu_src(), dir, kind, ra);
    snprintf(aa, sizeof aa, "%s/%s-%s-r%s.rla", tu_src(), dir, kind, ra);
    snprintf(pb, sizeof pb, "%s/%s-%s-r%s.probe.json", tu_src(), dir, kind, rb);
    snprintf(ab, sizeof ab, "%s/%s-%s-r%s.rla", tu_src(), dir, kind, rb);
    snprintf(model, sizeof model, "%s/tests/deepspeed/models/gpt2-tiny.json", tu_src());
    struct rl_err e = {0};
    memset(run, 0, sizeof *run);
    ck_assert_msg(val_probe_run_read(pa, run, &e) == 0, "%s", e.msg);
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.model = model;
    in.catalog = tu_catalog();
    in.layout.dp = run->prs[0].dp;
    if (run->prs[0].groups.n_groups > 0)
        in.group_spec = &run->prs[0].groups;
    ck_assert_msg(plan_inputs_resolve(&in, c, &e) == 0, "%s", e.msg);
    ck_assert_msg(val_facts_apply(&run->prs[0].config, run->prs[0].dp, "probe", &in, c, &e) == 0, "%s", e.msg);
    ck_assert_msg(plan_setup_plan(c, -1, p, &e) == 0, "%s", e.msg);
    struct val_probe_opts o = {.tol_bytes = RL_GIB, .tol_time_pct = 10, .predicted_step_ns = 0};
    struct val_probe_run_files f = {.probe_name = "PROBE", .audit = strdup(aa), .against_probe = strdup(pb),
                                    .against_audit = strdup(ab)};
    ck_assert_msg(val_probe_run_judge(run, p, &o, &f, &e) == 0, "%s", e.msg);
    ck_assert_ptr_nonnull(run->pairs);
    free((char *)f.audit);
    free((char *)f.against_probe);
    free((char *)f.against_audit);
}

START_TEST(probe_run_sums_and_documents_two_runs)
{
    struct val_probe_run run;
    struct plan_setup c;
    struct plan p;
    judge_pair("split", "0.5", "0.8", &run, &c, &p);
    ck_assert_int_eq(run.why, VAL_WHY_OPTIMIZERS);
    struct val_probe_why_totals t;
    val_probe_run_why_totals(&run, &t);
    int64_t numel = 0, moved = 0, moved_diff = 0;
    for (int i = 0; i < run.au.n; i++) {
        const struct val_audit_rec *x = &run.au.rec[i];
        numel += x->numel;
        for (int j = 0; j < run.bu.n; j++) {
            const struct val_audit_rec *y = &run.bu.rec[j];
            if (y->rank == x->rank && y->sub_group == x->sub_group && y->first_element == x->first_element &&
                y->optimizer != x->optimizer) {
                moved += x->numel;
                for (int64_t k = 0; k < x->numel; k++)   /* the fp32 masters after the step, bit by bit */
                    moved_diff += memcmp(&x->param_after[k], &y->param_after[k], sizeof(float)) != 0;
            }
        }
    }
    ck_assert_int_eq(t.step, run.au.rec[0].step);
    ck_assert_int_eq(t.numel, numel);
    ck_assert_int_gt(moved, 0);   /* the ratio moved some sub-groups between the optimizers */
    ck_assert_int_lt(moved, numel);
    ck_assert_int_eq(t.moved_numel, moved);
    ck_assert_int_le(t.moved_n_diff_after, t.n_diff_after);
    ck_assert_int_gt(moved_diff, 0);
    ck_assert_int_eq(t.moved_n_diff_after, moved_diff);
    ck_assert(t.moved_max_abs <= t.max_abs_after);
    ck_assert(fabs(val_probe_ratio(&run.prs[0]) - 0.5) < 1e-12 && fabs(val_probe_ratio(&run.pb) - 0.8) < 1e-12);
    ck_assert(!val_probe_rng_shift(&run.prs[0], &run.pb));   /* both below 1: both drew */

    /* The document: what was given, and the same records the sums are over. */
    struct val_probe_run_files f = {.audit = "A.rla", .against_probe = "B.json", .against_audit = "B.rla"};
    struct val_probe_json_in ji = {.probe = "P.json", .model_desc = "M", .hw_name = "H", .p = &p,
                                   .predicted_step_ns = 1234, .grad_accum = 2, .f = &f};
    json_t *j = val_probe_run_json(&run, &ji);
    ck_assert_ptr_nonnull(j);
    ck_assert_ptr_null(json_object_get(j, "schema_version"));   /* cli/ puts it first */
    ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "ratiolab-validate-probe");
    ck_assert_str_eq(json_string_value(json_object_get(j, "probe")), "P.json");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "predicted_step_ns")), 1234);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "gradient_accumulation_steps")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "audit"), "file")), "A.rla");
    ck_assert_int_eq(json_array_size(json_object_get(json_object_get(j, "audit"), "sub_groups")), run.au.n);
    json_t *why = json_object_get(j, "digest_explanation");
    ck_assert_str_eq(json_string_value(json_object_get(why, "against_audit")), "B.rla");
    ck_assert_str_eq(json_string_value(json_object_get(why, "verdict")), "optimizers");
    json_t *recs = json_object_get(why, "records");
    ck_assert_int_eq(json_array_size(recs), run.au.n);
    int64_t after = 0;
    for (size_t i = 0; i < json_array_size(recs); i++)
        after += json_integer_value(json_object_get(json_array_get(recs, i), "n_diff_after"));
    ck_assert_int_eq(t.n_diff_after, after);
    json_decref(j);
    val_probe_run_free(&run);
    plan_free(&p);
    plan_setup_free(&c);

    /* Ratio 0.5 against 1: no sub-group moved, DeepSpeed drew its random number in one run only. */
    judge_pair("stock", "0.5", "1", &run, &c, &p);
    ck_assert_int_eq(run.why, VAL_WHY_INPUTS);
    val_probe_run_why_totals(&run, &t);
    ck_assert_int_eq(t.moved_numel, 0);
    ck_assert_int_gt(t.n_diff_grad, 0);
    ck_assert(val_probe_rng_shift(&run.prs[0], &run.pb));
    val_probe_run_free(&run);
    plan_free(&p);
    plan_setup_free(&c);
}
END_TEST

static int plan_load_hw(void *ctx, const struct plan_setup *c, struct hw_profile *hw, struct rl_err *e)
{
    (void)ctx;
    return sim_hw_load(hw, c->catalog, "hgx-h200", e);
}

/* A JSON file's integer at key, or the size of the array there (a second reading of the probe,
 * beside val_probe_read's). */
static long long json_file_int(const char *path, const char *key)
{
    json_t *j = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(j);
    json_t *v = json_object_get(j, key);
    long long n = json_is_array(v) ? (long long)json_array_size(v) : (long long)json_integer_value(v);
    json_decref(j);
    return n;
}

/* validation/probe_run.h's plan of the run: the run's accumulation, micro-batch and param groups
 * taken, the user's other values refused with the step and the field (cli/validate_probe.c maps
 * the flags). */
START_TEST(probe_run_plan_takes_the_runs_step)
{
    char gas[1024], three[1024], model[1024];
    snprintf(gas, sizeof gas, "%s/tests/deepspeed/cells/0.19.8-np1-gas2.probe.json", tu_src());
    snprintf(three, sizeof three, "%s/tests/deepspeed/cells/0.19.8-np1-three.probe.json", tu_src());
    snprintf(model, sizeof model, "%s/tests/deepspeed/models/gpt2-tiny.json", tu_src());
    struct rl_err e = {0};
    struct val_probe_run run;
    memset(&run, 0, sizeof run);
    ck_assert_msg(val_probe_run_read(gas, &run, &e) == 0, "%s", e.msg);
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.model = model;
    in.catalog = tu_catalog();
    struct sim_train t;
    sim_train_defaults(&t);
    struct val_probe_plan_in pi = {.in = &in, .what = "PROBE", .train = &t, .resolve = plan_inputs_resolve,
                                   .load_hw = plan_load_hw};
    struct val_probe_plan pl;
    memset(&pl, 0, sizeof pl);
    ck_assert_msg(val_probe_run_plan(&run.prs[0], &pi, &pl, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(pl.failed, VAL_PLAN_OK);
    ck_assert_int_eq(pl.train.grad_accum, json_file_int(gas, "gradient_accumulation_steps"));   /* 2 */
    ck_assert_int_eq(pl.train.micro_batch, json_file_int(gas, "micro_batch_size"));
    ck_assert_int_eq(pl.p.layout.dp, json_file_int(gas, "dp_world_size"));
    ck_assert_int_gt(pl.sr.step_ns, 0);
    ck_assert_str_eq(pl.hw.name, "hgx-h200");
    val_probe_plan_free(&pl);
    t.grad_accum = 3;   /* not the run's */
    ck_assert_int_eq(val_probe_run_plan(&run.prs[0], &pi, &pl, &e), RL_EINVAL);
    ck_assert_int_eq(pl.failed, VAL_PLAN_ACCUM);
    const char *accum = "grad_accum: 3; the run (probe) took 2 micro-steps";
    ck_assert_msg(strncmp(e.msg, accum, strlen(accum)) == 0 && !strstr(e.msg, "--"), "%s", e.msg);
    val_probe_plan_free(&pl);
    val_probe_run_free(&run);

    /* The run recorded three param groups; the HF Trainer's rule makes two. */
    ck_assert_msg(val_probe_run_read(three, &run, &e) == 0, "%s", e.msg);
    t.grad_accum = 0;
    in.groups = PLAN_GROUPS_HF_TWO;
    ck_assert_int_eq(val_probe_run_plan(&run.prs[0], &pi, &pl, &e), RL_EINVAL);
    ck_assert_int_eq(pl.failed, VAL_PLAN_GROUPS);
    char want[128];
    snprintf(want, sizeof want, "param_groups hf-two: 2 param groups, the run's probe records %lld (",
             json_file_int(three, "param_groups"));
    ck_assert_msg(strncmp(e.msg, want, strlen(want)) == 0 && !strstr(e.msg, "--"), "%s", e.msg);
    val_probe_plan_free(&pl);
    in.groups = PLAN_GROUPS_AUTO;   /* the probe's are taken */
    ck_assert_msg(val_probe_run_plan(&run.prs[0], &pi, &pl, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(pl.p.n_groups, json_file_int(three, "param_groups"));
    val_probe_plan_free(&pl);
    val_probe_run_free(&run);
}
END_TEST

Suite *replay_suite(void)
{
    Suite *s = suite_create("replay");
    TCase *tc = tcase_create("replay");
    tcase_add_test(tc, ds_hand_exact);
    tcase_add_test(tc, ds_tail_fuses_the_other_product);
    tcase_add_test(tc, torch_hand_exact);
    tcase_add_test(tc, replay_refuses_bad_hparams);
    tcase_add_test(tc, recorded_0_19_8_bit_identical);
    tcase_add_test(tc, recorded_0_14_1_bit_identical);
    tcase_add_test(tc, wrong_updates_are_named);
    tcase_add_test(tc, reader_refuses_bad_files);
    tcase_add_test(tc, recorded_cells);
    tcase_add_test(tc, recorded_oracle_cells);
    tcase_add_test(tc, slice_keeps_the_tail_boundary);
    tcase_add_test(tc, validate_audit_needs_probe);
    tcase_add_test(tc, validate_probe_with_audit);
    tcase_add_test(tc, probe_run_names_the_step);
    tcase_add_test(tc, probe_run_sums_and_documents_two_runs);
    tcase_add_test(tc, probe_run_plan_takes_the_runs_step);
    suite_add_tcase(s, tc);
    return s;
}
