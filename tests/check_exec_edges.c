/* tests/check_exec_edges.c — the executor where its outputs are easy to get subtly wrong:
 * checkpoints (a save after a step that --inject-nan skipped continues exactly as the straight
 * run; a folder whose rank files come from two saves is refused), the bytes it reports per phase
 * (each equal to the closed form of the schedule over the plan's per-rank partition, on every
 * rank of a two-rank run, both schedules), and the prefetched all-gather's buffer slots (an
 * internal invariant no output shows: asserted in builds without NDEBUG, and shown to fire for a
 * slot taken modulo the depth instead of depth + 1). */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_impl.h"
#include "plan/inputs.h"   /* the matrix's setup */
#include "tests/util.h"

/* gpt-2.7b (TP 8 shard) shrunk 10000 x, as tests/check_exec.c runs it. */
/* One process (no mpirun: also leak-checked under ASan); its digest. */
static void run_one(const char *args, char out[9])
{
    struct tu_run r;
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --hash %s", args);
    ck_assert_msg(r.status == 0, "run %s failed (%d): %s", args, r.status, r.err);
    ck_assert_msg(strlen(tu_digest_of(r.out, out)) == 8, "no digest in: %s", r.out);
    tu_run_free(&r);
}

/* ---- checkpoints --------------------------------------------------------------------------- */

/* Step 2 of 4 holds a NaN and is skipped: 4 iterations, 3 Adam steps. Saved after iteration 2
 * (1 Adam step) and continued for 2 more, the state must be the straight run's bit for bit; a
 * loader that took Adam's step count from the iteration count would bias-correct with step 3 and
 * 4 instead of 2 and 3. */
START_TEST(checkpoint_after_a_skipped_step_continues_exactly)
{
    char straight[9], first[9], cont[9], no_nan[9];
    run_one("--ratio 0.5 --steps 4 --inject-nan 2", straight);
    run_one("--ratio 0.5 --steps 2 --inject-nan 2 --save ck", first);
    struct tu_run r;
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --ratio 0.2 --steps 2 --load ck --json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_msg(j, "not JSON: %s", r.out);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "iterations")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "adam_step")), 3);
    snprintf(cont, sizeof cont, "%s", json_string_value(json_object_get(j, "digest")));
    json_decref(j);
    tu_run_free(&r);
    ck_assert_str_eq(cont, straight);
    ck_assert_str_ne(first, straight);
    /* The skipped step made a difference: 3 steps without a NaN are another state. */
    run_one("--ratio 0.5 --steps 4", no_nan);
    ck_assert_str_ne(no_nan, straight);
}
END_TEST

/* Saves of the same world and seed that differ only in the iteration count (a: iteration 1; b: a
 * continued by a step that --inject-nan skipped, so iteration 2 with the same Adam step), or only
 * in the Adam step (b; c: two steps, none skipped). A checkpoint whose rank 1 file comes from the
 * other save is refused, naming the file, and nothing runs: a copy of b with a's or c's rank 1
 * file in its generation, and a folder without a manifest (read as flat rank files) holding b's
 * rank 0 and a's rank 1. Each save alone loads. */
START_TEST(checkpoint_from_two_saves_is_refused)
{
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --ratio 0.5 --steps 1 --save a >/dev/null && "
              TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --ratio 0.5 --steps 1 --load a --inject-nan 2 --save b >/dev/null && "
              TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --ratio 0.5 --steps 2 --save c >/dev/null && "
              "cp -r b iter && cp a/gen-*/rank-00001.rlck iter/gen-*/ && "
              "cp -r b adam && cp c/gen-*/rank-00001.rlck adam/gen-*/ && "
              "mkdir flat && cp b/gen-*/rank-00000.rlck a/gen-*/rank-00001.rlck flat/",
          tu_bin(), tu_bin(), tu_bin());
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    static const char *const dirs[] = {"iter", "adam", "flat"};
    for (int i = 0; i < 3; i++) {
        tu_ratiolab(&r, "run " TU_EXEC_SMALL " --load %s --hash", dirs[i]);
        ck_assert_msg(r.status == 2, "%s: status %d: %s%s", dirs[i], r.status, r.out, r.err);
        ck_assert_msg(strstr(r.err, "rank-00001.rlck") && strstr(r.err, "another save"), "%s: %s", dirs[i], r.err);
        ck_assert_msg(!strstr(r.out, "digest"), "a refused load printed a digest: %s", r.out);
        tu_run_free(&r);
    }
    char d[9];
    run_one("--load a --steps 1", d);
    run_one("--load b --steps 1", d);
    run_one("--load c --steps 1", d);
}
END_TEST

/* ---- reported bytes ----------------------------------------------------------------------- */

static int64_t phase_bytes(json_t *rank, const char *phase)
{
    json_t *p = json_object_get(json_object_get(rank, "phases"), phase);
    ck_assert_msg(p, "no phase %s", phase);
    return json_integer_value(json_object_get(p, "bytes"));
}

/* Every phase's bytes on every rank of a two-rank run, from the rank's partition (P elements, Pc
 * of them on the host, Pg = P - Pc on the device; the plan's numbers, which the ledger tests tie
 * to the plan), the world size W, the model dtype's 2 bytes and the fp32 reduce-scatter:
 *   both schedules: all-gather 2 P x 2 x W (every block gathered for forward and for backward,
 *     W ranks' partitions each), reduce-scatter of P x 4 x W;
 *   overlap (exec/README.md): device share delivered D2D (8 B/element), host share D2H in fp32
 *     (4), overflow check of the fp32 gradients (4 P), Adam 28 + 2 B/element each side, the
 *     host share's 16-bit copy H2D (2 Pc);
 *   deepspeed-0.12: the sums narrowed (6 P), D2H and H2D of the 16-bit flat buffer (2 P each),
 *     the host share D2H again into pageable memory (2 Pc), widened (6 P), overflow check of
 *     the 16-bit buffer (2 P), unscale (8 P), Adam 28 B/element, cast (6 P), H2D of the host
 *     share (2 Pc). */
static void check_bytes(const char *schedule)
{
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --ratio 0.5 --steps 1 --schedule %s --json", tu_bin(), schedule);
    ck_assert_msg(r.status == 0, "%s", r.err);
    json_t *j = json_loads(r.out, 0, NULL);
    ck_assert_msg(j, "not JSON: %s", r.out);
    const int64_t W = json_integer_value(json_object_get(j, "world"));
    ck_assert_int_eq(W, 2);
    json_t *ranks = json_object_get(j, "ranks");
    ck_assert_int_eq(json_array_size(ranks), 2);
    const bool ds = strcmp(schedule, "deepspeed-0.12") == 0;
    for (size_t k = 0; k < 2; k++) {
        json_t *x = json_array_get(ranks, k);
        const int64_t P = json_integer_value(json_object_get(x, "per_rank_numel"));
        const int64_t Pc = json_integer_value(json_object_get(x, "host_placed_numel"));
        const int64_t Pg = P - Pc;
        ck_assert_int_eq(P, json_integer_value(json_object_get(j, "per_rank_numel")));
        ck_assert_int_eq(Pc, json_integer_value(json_object_get(j, "cpu_numel")));
        ck_assert(Pc > 0 && Pg > 0);
        /* The partition covers the model: ceil per tensor, so at least total / W, padding aside. */
        ck_assert_int_ge(P * W, json_integer_value(json_object_get(j, "total_numel")));
        static const char *const names[] = {"allgather", "reduce_scatter", "grad_d2h", "grad_h2d", "grad_cast",
                                            "overflow_check", "unscale", "gpu_adam", "cpu_adam", "param_cast",
                                            "param_h2d", "forward", "backward", "tp_allreduce", "grad_norm",
                                            "pipeline_bubble"};
        const int64_t want_overlap[] = {2 * P * 2 * W, P * 4 * W + Pg * 8, Pc * 4, 0, 0,
                                        P * 4, 0, Pg * 30, Pc * 30, 0,
                                        Pc * 2, 0, 0, 0, 0, 0};
        const int64_t want_ds[] = {2 * P * 2 * W, P * 4 * W + P * 6, P * 2 + Pc * 2, P * 2, P * 6,
                                   P * 2, P * 8, Pg * 28, Pc * 28, P * 6,
                                   Pc * 2, 0, 0, 0, 0, 0};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            const int64_t want = ds ? want_ds[i] : want_overlap[i];
            ck_assert_msg(phase_bytes(x, names[i]) == want, "%s rank %zu %s: %lld bytes, want %lld", schedule, k,
                          names[i], (long long)phase_bytes(x, names[i]), (long long)want);
        }
    }
    json_decref(j);
    tu_run_free(&r);
}

START_TEST(reported_bytes_equal_the_schedule_over_the_plan)
{
    check_bytes("overlap");
    check_bytes("deepspeed-0.12");
}
END_TEST

/* ---- the prefetched all-gather's buffer slots ------------------------------------------------ */

/* A backend whose copies and all-gathers do nothing (one rank): only the slot bookkeeping of
 * ex__gather_for runs. */
static int stub_copy(struct ex_dev *d, void *dst, const void *src, int64_t bytes, enum ex_copy_dir dir,
                     enum ex_stream s, struct rl_err *e)
{
    (void)d, (void)dst, (void)src, (void)bytes, (void)dir, (void)s, (void)e;
    return 0;
}
static int stub_ag_start(struct ex_dev *d, void *buf, int64_t bytes, uint64_t *req, struct rl_err *e)
{
    (void)d, (void)buf, (void)bytes, (void)e;
    *req = 1;
    return 0;
}
static int stub_ag_wait(struct ex_dev *d, uint64_t req, struct rl_err *e)
{
    (void)d, (void)req, (void)e;
    return 0;
}

enum { GB = 6 };   /* blocks of the stub run, one element each */

/* Both passes of a GB-block run with prefetch depth 2 and `buffers` gather buffers. */
static void gather_passes(int buffers)
{
    static const struct ex_backend be = {.name = "stub", .copy = stub_copy, .allgather_start = stub_ag_start,
                                         .allgather_wait = stub_ag_wait};
    struct ex_opts o;
    ex_opts_default(&o);
    struct ex_tmap tm[GB];
    int blocks[GB + 1];
    struct ex_gather ag[GB];
    uint16_t param16[GB], gathered[GB * 4];
    memset(tm, 0, sizeof tm);
    memset(ag, 0, sizeof ag);
    for (int b = 0; b <= GB; b++)
        blocks[b] = b;
    for (int t = 0; t < GB; t++)
        tm[t] = (struct ex_tmap){.n = 1, .s = 1, .goff = t, .foff = t, .real = 1, .layer = t};
    struct ex_run r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.be = &be;
    r.W = 1;
    r.mdb = 2;
    r.T = GB;
    r.tm = tm;
    r.nblocks = GB;
    r.blocks = blocks;
    r.param16 = param16;
    r.gathered = gathered;
    r.gathered_bytes = 2;
    r.prefetch_depth = 2;
    r.gather_buffers = buffers;
    r.ag = ag;
    struct rl_err e = {0};
    for (int pass = 0; pass < 2; pass++) {
        int next = 0;
        for (int i = 0; i < GB; i++)
            ck_assert_msg(ex__gather_for(&r, pass == 0, i, &next, &e) == 0, "%s", e.msg);
        ck_assert_int_eq(next, GB);
    }
    for (int b = 0; b < GB; b++)
        ck_assert(!ag[b].started);
    free(r.spans);
}

/* depth + 1 buffers: every started gather finds its buffer free. */
START_TEST(gather_slots_depth_plus_one_hold)
{
    gather_passes(3);
}
END_TEST

/* depth buffers (the slot modulo the depth): position 2 is started into block 0's buffer while
 * block 0's gather is still unwaited, and the assertion stops the process (SIGABRT). */
START_TEST(gather_slot_modulo_depth_fires_the_assertion)
{
    gather_passes(2);
}
END_TEST

/* ---- the runs of one launch ---------------------------------------------------------------------- */

struct matrix_seen {
    double ratio[8];               /* each run's requested ratio, in order */
    enum step_schedule schedule[8];/* its schedule */
    uint32_t digest[8];            /* its digest */
    int n;                         /* runs seen */
};
static void note_run(void *ctx, const struct plan *p, const struct ex_opts *o, const struct ex_result *r)
{
    struct matrix_seen *m = ctx;
    if (m->n < 8) {
        m->ratio[m->n] = p->requested_ratio;
        m->schedule[m->n] = o->schedule;
        m->digest[m->n++] = r->digest;
    }
}

/* ex_run_matrix on one rank, in process: ratio, then policy, then schedule, each run handed over
 * in that order, and every digest the scalar reference's (the digest depends on no ratio,
 * policy or schedule: exec/README.md). */
START_TEST(matrix_runs_in_order_and_every_digest_is_the_reference)
{
    struct rl_err e = {0};
    struct ex_comm comm;
    ck_assert_msg(ex_comm_init(&comm, &e) == 0 && comm.size == 1, "%s", e.msg);
    char model[1024];
    snprintf(model, sizeof model, "%s/tests/deepspeed/models/gpt2-tiny.json", tu_src());
    struct plan_inputs in;
    plan_inputs_init(&in);
    in.model = model;
    in.catalog = tu_catalog();
    in.layout.tp = 1;
    in.layout.dp = 1;
    struct plan_setup c;
    ck_assert_msg(plan_inputs_resolve(&in, &c, &e) == 0, "%s", e.msg);
    struct plan_model scaled;
    memset(&scaled, 0, sizeof scaled);
    ck_assert_msg(ex_scale_model(&c.model, 10, &scaled, &e) == 0, "%s", e.msg);
    struct ex_opts o;
    ex_opts_default(&o);
    o.steps = 1;
    const double ratios[] = {0, 0.5};
    const enum plan_policy pols[] = {PLAN_POLICY_EXACT};
    const enum step_schedule schs[] = {STEP_SCHED_OVERLAP, STEP_SCHED_DS012};
    const struct ex_matrix m = {.setup = &c, .scaled = &scaled, .scale = 10, .ratios = ratios, .n_ratios = 2,
                                .policies = pols, .n_policies = 1, .schedules = schs, .n_schedules = 2};
    struct matrix_seen seen = {0};
    ck_assert_msg(ex_run_matrix(&m, &o, &comm, note_run, &seen, &e) == 0, "%s", e.msg);
    struct ex_opts ro = o;
    ro.ref_dtype = c.zero.dtype;
    uint32_t ref = 0;
    int64_t steps = 0;
    ck_assert_msg(ex_reference(&scaled, &ro, ro.warmup + ro.steps, &ref, &steps, &e) == 0, "%s", e.msg);
    ck_assert_int_eq(seen.n, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert(seen.ratio[i] == ratios[i / 2]);
        ck_assert_int_eq(seen.schedule[i], schs[i % 2]);
        ck_assert_msg(seen.digest[i] == ref, "run %d: digest %08x, reference %08x", i, seen.digest[i], ref);
    }
    plan_model_free(&scaled);
    plan_setup_free(&c);
    ex_comm_finalize(&comm);
}
END_TEST

Suite *exec_edges_suite(void)
{
    Suite *s = suite_create("exec_edges");
    TCase *t = tcase_create("exec_edges");
    tcase_set_timeout(t, 240);
    tcase_add_test(t, checkpoint_after_a_skipped_step_continues_exactly);
    tcase_add_test(t, checkpoint_from_two_saves_is_refused);
    tcase_add_test(t, reported_bytes_equal_the_schedule_over_the_plan);
    tcase_add_test(t, gather_slots_depth_plus_one_hold);
    tcase_add_test(t, matrix_runs_in_order_and_every_digest_is_the_reference);
#ifdef NDEBUG
    tu_skip("exec_edges: gather_slot_modulo_depth_fires_the_assertion", "built with NDEBUG (no assertions)");
#else
    tcase_add_test_raise_signal(t, gather_slot_modulo_depth_fires_the_assertion, SIGABRT);
#endif
    suite_add_tcase(s, t);
    return s;
}
