/* tests/check_exec.c — `ratiolab run` on the cpu backend, ranks started with mpirun: one digest
 * for every ratio x policy x schedule x world size, equal to the single-process scalar
 * reference; checkpoints continued on another world size and ratio; the ledger per rank; NaN
 * steps; device memory too small; corrupt checkpoints; a failing rank; bad input. Every run
 * uses a tiny --scale so the suite stays within seconds per test. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include "exec/exec.h"
#include "exec/exec_impl.h"   /* struct ex_seg, ex__next_piece */
#include "exec/result_json.h"
#include "plan/inputs.h"   /* struct plan_setup: ex_launch_check */
#include "tests/util.h"
#include "traces/layout.h"
#include "traces/trace.h"

static void reference(const char *args, char out[9])
{
    struct tu_run r;
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " %s --reference", args);
    ck_assert_msg(r.status == 0, "reference failed: %s", r.err);
    tu_digest_of(r.out, out);
    ck_assert_msg(strlen(out) == 8, "no digest in: %s", r.out);
    tu_run_free(&r);
}

/* Runs `ratiolab run` on n ranks and returns its digest. */
static void run_ranks(int n, const char *args, char out[9])
{
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np %d '%s' run " TU_EXEC_SMALL " --hash %s", n, tu_bin(), args);
    ck_assert_msg(r.status == 0, "run on %d ranks (%s) failed (%d): %s", n, args, r.status, r.err);
    tu_digest_of(r.out, out);
    ck_assert_msg(strlen(out) == 8, "no digest in: %s", r.out);
    tu_run_free(&r);
}

/* ---- bitwise across ratios, policies, schedules and world sizes ----------------------------- */

START_TEST(digest_matrix_equals_reference)
{
    char ref[9];
    reference("--steps 3", ref);
    static const int worlds[] = {1, 2, 3};
    for (int w = 0; w < 3; w++) {
        struct tu_run r;
        tu_sh(&r, TU_MPIRUN " -np %d '%s' run " TU_EXEC_SMALL " --steps 3 --ratios 0,0.1,0.37,0.5,0.9,1 "
              "--policies exact,deepspeed-0.12 --schedules overlap,deepspeed-0.12", worlds[w], tu_bin());
        ck_assert_msg(r.status == 0, "world %d failed: %s", worlds[w], r.err);
        int lines = 0;
        for (char *save = NULL, *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            char d[9];
            int world = 0;
            const char *ws = strstr(l, " world ");
            ck_assert_msg(ws && sscanf(ws, " world %d", &world) == 1 && world == worlds[w], "line: %s", l);
            ck_assert_msg(strcmp(tu_digest_of(l, d), ref) == 0, "world %d: %s; the reference says %s", worlds[w], l, ref);
            lines++;
        }
        ck_assert_msg(lines == 24, "world %d: %d result lines, expected 6 ratios x 2 policies x 2 schedules",
                      worlds[w], lines);
        tu_run_free(&r);
    }
}
END_TEST

/* The digest changes when the data changes (so equal digests mean something). */
START_TEST(digest_depends_on_seed_and_steps)
{
    char a[9], b[9], c[9];
    reference("--steps 2", a);
    reference("--steps 3", b);
    reference("--steps 2 --seed 7", c);
    ck_assert_str_ne(a, b);
    ck_assert_str_ne(a, c);
}
END_TEST

/* The vectorised share generator gives, element for element, the defining formula: an integer
 * (u_q - u_{q+1}) of splitmix64 hashes reduced mod 255 by division, scaled with ldexpf. */
static uint64_t t_mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t t_u(uint64_t base, int64_t i, int q)
{
    uint64_t h = t_mix(base ^ ((uint64_t)i * 0x2545f4914f6cdd1dull) ^ ((uint64_t)(q + 1) << 40));
    return (int64_t)(h % 255u) - 127;
}

START_TEST(share_generator_matches_its_definition)
{
    enum { N = 4099 };   /* not a multiple of any vector width */
    static float got[N];
    static const int worlds[][2] = {{0, 1}, {0, 2}, {1, 2}, {2, 3}, {0, 5}, {4, 5}};
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++) {
        int q = worlds[w][0], W = worlds[w][1];
        uint64_t base = ex_synth_base(7, 3);
        int64_t g0 = INT64_C(123456789012) + (int64_t)w;
        ex_synth_shares(got, N, base, g0, q, W);
        for (int64_t j = 0; j < N; j++) {
            int64_t d = t_u(base, g0 + j, q) - (q + 1 < W ? t_u(base, g0 + j, q + 1) : 0);
            float want = ldexpf((float)d, -10);
            ck_assert_msg(memcmp(&got[j], &want, 4) == 0, "q %d W %d j %lld: %a, want %a", q, W, (long long)j,
                          (double)got[j], (double)want);
            ck_assert(memcmp(&got[j], &(float){ex_synth_share(base, g0 + j, q, W)}, 4) == 0);
        }
    }
    /* the shares of W ranks sum to the gradient */
    float s = 0;
    for (int q = 0; q < 3; q++)
        s += ex_synth_grad_share(7, 3, 99, q, 3);
    ck_assert(s == ex_synth_grad(7, 3, 99));
}
END_TEST

/* --comm-dtype: the reduce-scatter in the model dtype runs on both schedules. It is exact where
 * every partial sum the collective forms is a 16-bit value: one rank (no sum), two ranks in bf16
 * (the only sum is the gradient itself, <= 127 units), up to eight in fp16 (|sum| <= 8 x 254 <
 * 2^11); there the digest is the reference's. fp32, the default, is exact for every world size.
 * (gpt-2.7b's Megatron config is fp16.) */
START_TEST(comm_dtype_16bit_runs)
{
    char ref[9], ref_bf[9], d[9];
    reference("--steps 2", ref);
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 3 '%s' run " TU_EXEC_SMALL " --steps 2 --ratios 0.5 --schedules overlap,deepspeed-0.12 "
          "--comm-dtype fp16", tu_bin());
    ck_assert_msg(r.status == 0, "%s", r.err);
    int lines = 0;
    for (char *save = NULL, *l = strtok_r(r.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++)
        ck_assert_msg(strcmp(tu_digest_of(l, d), ref) == 0, "fp16 on 3 ranks: %s; the reference says %s", l, ref);
    ck_assert_int_eq(lines, 2);
    tu_run_free(&r);
    reference("--steps 2 --dtype bf16", ref_bf);
    ck_assert_str_ne(ref_bf, ref);   /* the 16-bit copy is in the digest */
    tu_sh(&r, TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --dtype bf16 --ratio 0.37 --steps 2 --comm-dtype bf16 --json", tu_bin());
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "\"comm_dtype\": \"bf16\""), "%s", r.out);
    const char *dg = strstr(r.out, "\"digest\": \"");
    ck_assert_msg(dg && sscanf(dg, "\"digest\": \"%8[0-9a-f]", d) == 1, "%s", r.out);
    ck_assert_str_eq(d, ref_bf);
    tu_run_free(&r);
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --steps 1 --comm-dtype fp16 --hash");
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "may differ from the fp32 reference"), "no warning: %s", r.out);
    tu_run_free(&r);
    /* a 16-bit type other than the model's, and an unknown type, are refused */
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --steps 1 --comm-dtype bf16");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--comm-dtype: bf16") && strstr(r.err, "fp16"), "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "run --backend cpu --comm-dtype fp8");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--comm-dtype") && strstr(r.err, "fp8") && strstr(r.err, "bf16"), "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* ---- checkpoints -------------------------------------------------------------------------------- */

START_TEST(checkpoint_continues_on_other_world_and_ratio)
{
    char straight[9], first[9], cont[9], ref[9];
    run_ranks(2, "--ratio 0.3 --policy exact --steps 4", straight);
    run_ranks(2, "--ratio 0.3 --policy exact --steps 2 --save ck", first);
    run_ranks(3, "--ratio 0.7 --policy exact --schedule deepspeed-0.12 --steps 2 --load ck", cont);
    reference("--steps 4", ref);
    ck_assert_str_eq(cont, straight);
    ck_assert_str_eq(straight, ref);
    ck_assert_str_ne(first, straight);
}
END_TEST

START_TEST(checkpoint_corrupt_or_truncated_is_refused)
{
    char d[9];
    run_ranks(2, "--ratio 0.5 --steps 1 --save ck", d);
    struct tu_run r;
    tu_sh(&r, "cp ck/gen-00000001/rank-00001.rlck saved && printf 'X' | dd of=ck/gen-00000001/rank-00001.rlck bs=1 seek=300 conv=notrunc 2>/dev/null");
    ck_assert_int_eq(r.status, 0);
    tu_run_free(&r);
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --load ck --hash");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "rank-00001.rlck") && strstr(r.err, "corrupt"), "%s", r.err);
    ck_assert_msg(!strstr(r.out, "digest"), "a refused load printed a digest: %s", r.out);
    tu_run_free(&r);
    tu_sh(&r, "cp saved ck/gen-00000001/rank-00001.rlck && cp ck/gen-00000001/rank-00000.rlck saved0 && truncate -s 1000 ck/gen-00000001/rank-00000.rlck");
    tu_run_free(&r);
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --load ck --save ck --hash");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "truncated"), "%s", r.err);
    tu_run_free(&r);
    /* Nothing was overwritten by the refused run (it also asked to --save there). */
    tu_sh(&r, "test $(stat -c %%s ck/gen-00000001/rank-00000.rlck) = 1000 && cmp saved ck/gen-00000001/rank-00001.rlck");
    ck_assert_msg(r.status == 0, "the checkpoint changed: %s", r.err);
    tu_run_free(&r);
    /* Not a regular file (a FIFO nobody writes to must not block; a link, here to a device, is
     * refused as a link before anything behind it is opened), or larger than any checkpoint of
     * this model can be (a sparse 64 GiB file: refused before it is read). */
    static const char *const bad[][2] = {
        {"rm -f ck/gen-00000001/rank-00000.rlck && mkfifo ck/gen-00000001/rank-00000.rlck", "a FIFO"},
        {"rm -f ck/gen-00000001/rank-00000.rlck && ln -s /dev/zero ck/gen-00000001/rank-00000.rlck", "a symbolic link"},
        {"rm -f ck/gen-00000001/rank-00000.rlck && truncate -s 64G ck/gen-00000001/rank-00000.rlck", "allowed: at most"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_sh(&r, "%s", bad[i][0]);
        ck_assert_msg(r.status == 0, "%s: %s", bad[i][0], r.err);
        tu_run_free(&r);
        tu_ratiolab(&r, "run " TU_EXEC_SMALL " --load ck --hash");
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "rank-00000.rlck") && strstr(r.err, bad[i][1]), "%s: %s", bad[i][1], r.err);
        tu_run_free(&r);
    }
}
END_TEST

/* ---- the ledger on every rank --------------------------------------------------------------- */

START_TEST(ledger_equals_plan_on_every_rank)
{
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 3 '%s' run " TU_EXEC_SMALL " --ratio 0.5 --policy exact --steps 1 --json", tu_bin());
    ck_assert_msg(r.status == 0, "%s", r.err);
    json_error_t je;
    json_t *o = json_loads(r.out, 0, &je);
    ck_assert_msg(o, "not JSON (%s): %s", je.text, r.out);
    ck_assert(json_is_true(json_object_get(o, "ledger_ok")));
    double honored = json_real_value(json_object_get(o, "honored_ratio"));
    json_int_t P = json_integer_value(json_object_get(o, "per_rank_numel"));
    json_int_t cpu = json_integer_value(json_object_get(o, "cpu_numel"));
    /* exact policy: within half a 256-element granule of the request */
    ck_assert_msg(fabs(honored - 0.5) <= 128.0 / (double)P, "honored %g", honored);
    json_t *ranks = json_object_get(o, "ranks");
    ck_assert_int_eq(json_array_size(ranks), 3);
    for (size_t q = 0; q < 3; q++) {
        json_t *x = json_array_get(ranks, q);
        ck_assert_int_eq(json_integer_value(json_object_get(x, "host_placed_numel")), cpu);
        ck_assert_int_eq(json_integer_value(json_object_get(x, "per_rank_numel")), P);
        json_t *bufs = json_object_get(x, "buffers");
        int64_t dev = 0, named = 0;
        for (size_t i = 0; i < json_array_size(bufs); i++) {
            json_t *b = json_array_get(bufs, i);
            json_t *lb = json_object_get(b, "ledger_bytes");
            if (json_is_null(lb))
                continue;   /* transient */
            named++;
            ck_assert_int_eq(json_integer_value(json_object_get(b, "bytes")), json_integer_value(lb));
            if (strcmp(json_string_value(json_object_get(b, "device")), "gpu") == 0)
                dev += json_integer_value(lb);
        }
        ck_assert_int_ge(named, 11);
        /* device bytes: 2 (16-bit) + 16 (master, grad, m, v) per device element + the bucket */
        int64_t bucket = 0;
        for (size_t i = 0; i < json_array_size(bufs); i++)
            if (strcmp(json_string_value(json_object_get(json_array_get(bufs, i), "name")), "reduce_scatter_bucket") == 0)
                bucket = json_integer_value(json_object_get(json_array_get(bufs, i), "bytes"));
        ck_assert_int_eq(dev, 2 * P + 16 * (P - cpu) + bucket);
        ck_assert_int_eq(json_integer_value(json_object_get(x, "ledger_device_bytes")), dev);
        json_t *mem = json_object_get(x, "memory");
        json_t *rss = json_object_get(mem, "rss_bytes");
        ck_assert_msg(json_is_null(rss) || json_integer_value(rss) > 0, "rss reported as 0");
        /* every reading is a number or null (unavailable), never a string */
        const char *key;
        json_t *val;
        json_object_foreach(mem, key, val)
            ck_assert_msg(json_is_integer(val) || json_is_null(val), "memory.%s is neither an integer nor null", key);
        /* the cpu backend has no NVML reading: null, not 0 */
        ck_assert_msg(json_is_null(json_object_get(mem, "gpu_process_bytes")), "gpu_process_bytes on the cpu backend");
    }
    /* the measurement has the simulator's phase names */
    json_t *ph = json_object_get(json_object_get(o, "measurement"), "phases");
    ck_assert(json_object_get(ph, "reduce_scatter") && json_object_get(ph, "cpu_adam") &&
              json_object_get(ph, "allgather") && json_object_get(ph, "param_h2d"));
    ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(o, "measurement"), "step_ns")), 0);
    json_t *um = json_object_get(json_object_get(json_object_get(o, "measurement"), "gpu_memory_per_rank"), "used_bytes");
    ck_assert_msg(json_is_integer(um) && json_integer_value(um) > 0, "measurement used_bytes");
    ck_assert_str_eq(json_string_value(json_object_get(o, "comm_dtype")), "fp32");
    json_decref(o);
    tu_run_free(&r);
}
END_TEST

/* ZeRO-3 prefetch: stage3_prefetch_bucket_size 1 (depth 1) and 1e9 (1e5 after --scale: depth
 * 14 over the largest block of 6,728 elements) change no bit on 1 and 2 ranks; the depth is
 * floor(bucket / largest block) (at least 1), the gather buffers depth + 1 of the largest
 * block, and the prefetched all-gathers run behind the compute (overlapped time > 0; gathered
 * only when needed, none would overlap: the spans are sequential on the calling thread). */
START_TEST(prefetch_changes_no_bit_and_overlaps)
{
    char ref[9];
    reference("--ratio 0.3 --steps 2", ref);
    static const char *const buckets[] = {"1", "1e9"};
    int64_t largest = 0;   /* elements of the largest block, from the one-rank gather buffers */
    for (int w = 1; w <= 2; w++)
        for (int i = 0; i < 2; i++) {
            char cfg[200];
            snprintf(cfg, sizeof cfg, "{\"zero_optimization\": {\"stage\": 3, \"stage3_prefetch_bucket_size\": "
                     "%s, \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.3}}, "
                     "\"fp16\": {\"enabled\": true}}", buckets[i]);
            tu_write("prefetch.json", cfg);
            struct tu_run r;
            tu_sh(&r, TU_MPIRUN " -np %d '%s' run " TU_EXEC_SMALL " --steps 2 --ds-config prefetch.json --json", w, tu_bin());
            ck_assert_msg(r.status == 0, "prefetch %s on %d ranks: %s", buckets[i], w, r.err);
            json_error_t je;
            json_t *o = json_loads(r.out, 0, &je);
            ck_assert_msg(o, "not JSON (%s): %s", je.text, r.out);
            ck_assert_msg(strcmp(json_string_value(json_object_get(o, "digest")), ref) == 0,
                          "prefetch %s on %d ranks: digest %s, reference %s", buckets[i], w,
                          json_string_value(json_object_get(o, "digest")), ref);
            json_int_t depth = json_integer_value(json_object_get(o, "prefetch_depth"));
            json_int_t nbuf = json_integer_value(json_object_get(o, "gather_buffers"));
            ck_assert_int_eq(nbuf, depth + 1);
            json_t *bufs = json_object_get(json_array_get(json_object_get(o, "ranks"), 0), "buffers");
            int64_t gathered = -1;
            for (size_t j = 0; j < json_array_size(bufs); j++)
                if (strcmp(json_string_value(json_object_get(json_array_get(bufs, j), "name")), "gathered_params") == 0)
                    gathered = json_integer_value(json_object_get(json_array_get(bufs, j), "bytes"));
            ck_assert_int_gt(gathered, 0);
            if (w == 1 && i == 0)
                largest = gathered / nbuf / 2;   /* one rank: a buffer is the largest block, 16-bit */
            /* W ranks: each buffer holds W partitions of ceil(n / W) elements per tensor */
            ck_assert_int_ge(gathered, nbuf * largest * 2);
            ck_assert_int_lt(gathered, nbuf * (largest + 64 * w) * 2);
            int64_t bucket = i == 0 ? 1 : 100000;   /* 1e9 / --scale 10000 */
            ck_assert_int_eq(depth, bucket / largest > 1 ? bucket / largest : 1);
            ck_assert_int_ge(depth, i == 0 ? 1 : 3);
            json_t *ag = json_object_get(json_object_get(json_object_get(o, "measurement"), "phases"), "allgather");
            ck_assert_msg(json_integer_value(json_object_get(ag, "overlapped_ns")) > 0,
                          "prefetch %s on %d ranks: no all-gather time behind the compute", buckets[i], w);
            json_decref(o);
            tu_run_free(&r);
        }
    ck_assert_int_eq(largest, 6728);
}
END_TEST

/* --compute gemm makes the time real and changes no bit. */
START_TEST(gemm_compute_changes_no_bit)
{
    char ref[9], d[9];
    reference("--steps 1", ref);
    struct tu_run r;
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --steps 1 --ratio 0.5 --compute gemm --seq-len 16 --checkpoint-activations --json");
    ck_assert_msg(r.status == 0, "%s", r.err);
    const char *dg = strstr(r.out, "\"digest\": \"");
    ck_assert_msg(dg && sscanf(dg, "\"digest\": \"%8[0-9a-f]", d) == 1, "%s", r.out);
    ck_assert_str_eq(d, ref);
    const char *fw = strstr(r.out, "\"forward\": {");
    long long busy = 0;
    ck_assert_msg(fw && sscanf(fw, "\"forward\": { \"busy_ns\": %lld", &busy) == 1, "%s", r.out);
    ck_assert_int_gt(busy, 0);
    tu_run_free(&r);
}
END_TEST

/* The FLOPs of --compute gemm per block equal the simulator's charge for the same model and
 * tokens: read from its trace (compute spans of rank 0, forward then backward), and from the
 * formula written out here: a layer 2 x tokens x its elements + 4 x b x s^2 x heads/TP x head_dim,
 * the logits 2 x tokens x hidden x vocab/TP; backward 2x (3x for a layer with checkpointing). */
static void sim_flops(const char *flags, int64_t *fwd, int *n_fwd, int64_t *bwd, int *n_bwd)
{
    struct tu_run r;
    tu_ratiolab(&r, "predict --model gpt-2.7b --tp 8 --dp 1 %s --trace sim.json", flags);
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    char path[4200];
    snprintf(path, sizeof path, "%s/sim.json", tu_tmpdir());
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(path, &d, &e) == 0, "%s", e.msg);
    *n_fwd = *n_bwd = 0;
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *x = &d.events[i];
        if (x->ph != 'X' || x->pid != TRACE_PID_RANK(0) || !x->cat || !x->args_json)
            continue;
        bool f = strcmp(x->cat, "forward") == 0, b = strcmp(x->cat, "backward") == 0;
        if (!f && !b)
            continue;
        json_t *a = json_loads(x->args_json, 0, NULL);
        json_t *fl = json_object_get(a, "flops");
        ck_assert_msg(json_is_integer(fl), "%s: %s", x->name, x->args_json);
        if (f && *n_fwd < 64)
            fwd[(*n_fwd)++] = json_integer_value(fl);
        if (b && *n_bwd < 64)
            bwd[(*n_bwd)++] = json_integer_value(fl);
        json_decref(a);
    }
    trace_doc_free(&d);
}

/* Above STEP_MAX_CHUNKS x STEP_CHUNK_DEFAULT_NUMEL CPU elements per rank (Llama-3.1-70B on DP 8 at
 * ratio 0.2 under DeepSpeed 0.18's rule: about 1.4 G elements over several sub-groups) the
 * executor's host pipeline runs the chunk list the simulator streams (plan/step.h), cut at the
 * host segments, and the ledger's staging buffers hold its largest chunk. Function level: the
 * segments are made from the plan as the executor makes them; nothing is allocated. */
START_TEST(host_chunks_equal_the_simulators_above_the_cap)
{
    char cat[4200];
    snprintf(cat, sizeof cat, "%s/catalog", tu_src());
    struct plan_model m;
    struct plan_model_opts mo = {.tp = 1, .pp = 1, .pp_stage = 0, .seq_len = 0};
    struct rl_err e = {0};
    ck_assert_msg(plan_model_load(&m, cat, "llama3.1-70b", &mo, &e) == 0, "%s", e.msg);
    plan_model_group(&m, PLAN_GROUPS_HF_TWO, false);
    struct plan_zero z;
    plan_zero_defaults(&z);
    z.offload = PLAN_OFFLOAD_CPU;
    z.ratio = 0.2;
    z.sub_group_size = 300000000;
    struct plan_layout l = {.tp = 1, .pp = 1, .dp = 8};
    struct plan_options po = {.policy = PLAN_POLICY_DS018, .ledger = PLAN_LEDGER_EXEC,
                              .exec_chunk_numel = STEP_CHUNK_DEFAULT_NUMEL};
    struct plan p;
    ck_assert_msg(plan_build(&p, &m, &l, &z, &po, &e) == 0, "%s", e.msg);
    const int64_t pc = p.cpu_numel;
    ck_assert_int_gt(pc, STEP_MAX_CHUNKS * STEP_CHUNK_DEFAULT_NUMEL);
    ck_assert_int_ge(p.cpu_subgroups, 3);
    /* the executor's segments (exec/run.c build_maps): per sub-group its host part, then its device part */
    struct ex_seg *seg = calloc((size_t)(2 * p.n_subgroups), sizeof *seg);
    int nseg = 0;
    int64_t coff = 0, goff = 0;
    for (int i = 0; i < p.n_subgroups; i++) {
        const struct plan_subgroup *sg = &p.subgroups[i];
        if (sg->cpu_numel > 0) {
            seg[nseg++] = (struct ex_seg){.flat = sg->offset, .numel = sg->cpu_numel, .off = coff, .cpu = true,
                                          .group = sg->group, .subgroup = i};
            coff += sg->cpu_numel;
        }
        if (sg->numel > sg->cpu_numel) {
            seg[nseg++] = (struct ex_seg){.flat = sg->offset + sg->cpu_numel, .numel = sg->numel - sg->cpu_numel,
                                          .off = goff, .cpu = false, .group = sg->group, .subgroup = i};
            goff += sg->numel - sg->cpu_numel;
        }
    }
    ck_assert_int_eq(coff, pc);
    /* the executor's chunk list, pieces merged per chunk, against the simulator's */
    const int64_t chunk = step_chunk_numel(pc, p.exec_chunk_numel), count = step_chunk_count(pc, p.exec_chunk_numel);
    ck_assert_int_le(count, STEP_MAX_CHUNKS);
    ck_assert_int_gt(chunk, STEP_CHUNK_DEFAULT_NUMEL);
    struct ex_piece it = {.seg = -1};
    int64_t k = 0, first = 0, numel = 0, pieces = 0, split = 0;
    while (ex__next_piece(seg, nseg, pc, chunk, &it)) {
        pieces++;
        ck_assert(seg[it.seg].cpu);
        ck_assert_int_ge(it.at, seg[it.seg].off);
        ck_assert_int_le(it.at + it.n, seg[it.seg].off + seg[it.seg].numel);
        ck_assert_int_eq(it.chunk, k);
        ck_assert_int_eq(it.at, first + numel);
        numel += it.n;
        if (!it.last) {
            split++;
            continue;
        }
        int64_t sim_first, sim_numel;
        step_chunk_range(pc, p.exec_chunk_numel, k, &sim_first, &sim_numel);
        ck_assert_int_eq(first, sim_first);
        ck_assert_int_eq(numel, sim_numel);
        k++;
        first += numel;
        numel = 0;
    }
    ck_assert_int_eq(k, count);
    ck_assert_int_eq(first, pc);
    ck_assert_int_gt(split, 0);   /* some chunks span two sub-groups */
    ck_assert_int_eq(pieces, count + split);
    /* the ledger's staging: two halves of the largest chunk */
    int64_t staging = -1;
    for (int i = 0; i < p.n_buffers; i++)
        if (!strcmp(p.buffers[i].name, "h2d_staging"))
            staging = p.buffers[i].numel;
    ck_assert_int_eq(staging, 2 * chunk);
    free(seg);
    plan_free(&p);
    plan_model_free(&m);
}
END_TEST

/* ---- the deepspeed schedule follows the release (plan/ds_rules.c) ------------------------------ */

/* One in-process run (one rank, cpu backend) of the deepspeed schedule for DeepSpeed `v`: gpt2 cut
 * by 1000, fp16, exact ratio 0.5, offload_optimizer.pin_memory left to the release's default. */
static void ds_run(struct rl_version v, const struct plan_model *m, struct plan *p, struct ex_result *res)
{
    struct rl_err e = {0};
    struct plan_zero z = tu_zero_cpu_offload(0.5, 20000);
    z.pin_memory = false;
    z.src_pin_memory = PLAN_SRC_DEFAULT;
    z.ds_version = v;
    plan_zero_resolve_pin(&z);
    int64_t chunk = STEP_CHUNK_DEFAULT_NUMEL;
    plan_scale_zero(&z, &chunk, 1000);
    struct plan_layout l = {.tp = 1, .pp = 1, .dp = 1};
    struct plan_options po = {.policy = PLAN_POLICY_EXACT, .ledger = PLAN_LEDGER_EXEC, .exec_chunk_numel = chunk};
    ck_assert_msg(plan_build(p, m, &l, &z, &po, &e) == 0, "%s", e.msg);
    struct ex_opts o;
    ex_opts_default(&o);
    o.schedule = STEP_SCHED_DS012;
    o.backend = EX_BACKEND_CPU;
    o.steps = 1;
    o.warmup = 0;
    struct ex_comm c;
    ck_assert_msg(ex_comm_init(&c, &e) == 0 && c.size == 1, "%s", e.msg);
    ck_assert_msg(ex_run(p, &o, &c, res, &e) == 0, "%s", e.msg);
}

/* Where a buffer of the run lives; -1 when the run has no such buffer. */
static int ds_buffer(const struct ex_result *res, const char *name)
{
    for (int i = 0; i < res->ranks[0].n_bufs; i++)
        if (!strcmp(res->ranks[0].bufs[i].name, name))
            return (int)res->ranks[0].bufs[i].device;
    return -1;
}

/* The executor runs the step of the plan's DeepSpeed release where the releases differ in what
 * they execute (docs/deepspeed-step.md section 4, plan/ds_rules.c's grad_copy and
 * offload_pin_default): the host share's gradient crosses as 16 bits and is cast on the host up
 * to 0.15.3, as fp32 upcast on the device from 0.15.4 (through a pinned staging buffer and a host
 * copy of 8 bytes per element in 0.15.4-0.16.2), and the flat buffer is pinned by default only from
 * 0.19.5. The bytes per phase are written out from the plan's element counts (P, host share Pc,
 * device share Pg, 2-byte fp16): the round trip through the flat buffer is P x 2 each way, the
 * device share's cast Pg x (2 + 4). The digest is one for all three, the scalar reference's, and the
 * result (and its JSON) names the release that ran. */
START_TEST(ds_step_follows_the_release)
{
    struct plan_model full, m;
    struct plan_model_opts mo = {.tp = 1, .pp = 1, .pp_stage = 0, .seq_len = 0};
    struct rl_err e = {0};
    ck_assert_msg(plan_model_load(&full, tu_catalog(), "gpt2", &mo, &e) == 0, "%s", e.msg);
    ck_assert_msg(ex_scale_model(&full, 1000, &m, &e) == 0, "%s", e.msg);
    plan_model_group(&m, PLAN_GROUPS_HF_TWO, false);
    static const struct {
        struct rl_version v;
        int d2h_host_bytes;       /* per host-share element, D2H */
        int cast_host_bytes;      /* per host-share element, the casts and the host copy */
        bool upcast, staging;     /* grad_upcast_gpu, pinned_grad_staging allocated */
        enum plan_device flat;    /* the flat buffer (pin_memory unset: the release's default) */
    } rel[] = {
        {{0, 12, 4}, 2, 6, false, false, PLAN_DEV_CPU_PAGEABLE},
        {{0, 15, 4}, 4, 6 + 8, true, true, PLAN_DEV_CPU_PAGEABLE},
        {{0, 19, 5}, 4, 6, true, false, PLAN_DEV_CPU_PINNED},
    };
    uint32_t digest[3];
    for (int i = 0; i < 3; i++) {
        struct plan p;
        struct ex_result res;
        ds_run(rel[i].v, &m, &p, &res);
        const int64_t P = p.per_rank_numel, Pc = p.cpu_numel, Pg = P - Pc;
        ck_assert_int_gt(Pc, 0);
        ck_assert_int_gt(Pg, 0);
        ck_assert(res.ds_step);
        ck_assert_int_eq(rl_version_cmp(res.ds_version, rel[i].v), 0);
        const struct ex_phase_stat *ph = res.ranks[0].phase;
        ck_assert_int_eq(ph[STEP_PH_GRAD_D2H].bytes, P * 2 + Pc * rel[i].d2h_host_bytes);
        ck_assert_int_eq(ph[STEP_PH_GRAD_H2D].bytes, P * 2);
        ck_assert_int_eq(ph[STEP_PH_GRAD_CAST].bytes, Pg * 6 + Pc * rel[i].cast_host_bytes);
        ck_assert_int_eq(ds_buffer(&res, "grad_upcast_gpu") >= 0, rel[i].upcast);
        ck_assert_int_eq(ds_buffer(&res, "pinned_grad_staging") >= 0, rel[i].staging);
        ck_assert_int_eq(ds_buffer(&res, "flat_grad_buffer"), rel[i].flat);
        digest[i] = res.digest;
        /* the run record names the release (and reads it back) */
        json_t *o = json_object();
        ex_result_json_put(o, &res);
        ck_assert_str_eq(json_string_value(json_object_get(o, "deepspeed_version")), RL_VERSION_S(rel[i].v));
        char *text = json_dumps(o, 0);
        struct ex_result back;
        ck_assert_msg(ex_result_from_json(text, &back, &e) == 0, "%s", e.msg);
        ck_assert(back.ds_step);
        ck_assert_int_eq(rl_version_cmp(back.ds_version, rel[i].v), 0);
        ex_result_free(&back);
        free(text);
        json_decref(o);
        ex_result_free(&res);
        plan_free(&p);
    }
    struct ex_opts o;
    ex_opts_default(&o);
    o.ref_dtype = PLAN_FP16;
    uint32_t ref;
    int64_t adam;
    ck_assert_msg(ex_reference(&m, &o, 1, &ref, &adam, &e) == 0, "%s", e.msg);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(digest[i] == ref, "DeepSpeed %s: digest %08x, reference %08x", RL_VERSION_S(rel[i].v), digest[i],
                      ref);
    plan_model_free(&m);
    plan_model_free(&full);
}
END_TEST

START_TEST(gemm_flops_equal_the_simulator)
{
    static const struct { int64_t b, s; bool ckpt; } cases[] = {{2, 64, false}, {1, 256, true}};
    char cat[4200];
    snprintf(cat, sizeof cat, "%s/catalog", tu_src());
    struct plan_model m;
    struct plan_model_opts mo = {.tp = 8, .pp = 1, .pp_stage = 0, .seq_len = 0};
    struct rl_err e = {0};
    ck_assert_msg(plan_model_load(&m, cat, "gpt-2.7b", &mo, &e) == 0, "%s", e.msg);
    int *first = calloc((size_t)m.n_tensors + 1, sizeof *first);
    int nb = ex_model_blocks(&m, first);
    ck_assert_int_ge(nb, 3);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t b = cases[c].b, s = cases[c].s, tokens = b * s;
        char flags[128];
        snprintf(flags, sizeof flags, "--micro-batch %lld --seq-len %lld%s", (long long)b, (long long)s,
                 cases[c].ckpt ? " --checkpoint-activations" : "");
        int64_t sf[64], sb[64];
        int nf = 0, nbw = 0;
        sim_flops(flags, sf, &nf, sb, &nbw);
        /* exec's figures, blocks with compute only (the embedding block has none in both) */
        int64_t ef[64], eb[64];
        int ne = 0;
        for (int k = 0; k < nb; k++) {
            struct ex_gemm g[64];
            int n = ex_block_gemms(&m, first, nb, k, b, s, g, 64);
            ck_assert_int_le(n, 64);
            int64_t f = ex_gemm_flops(g, n);
            /* the formula, independently */
            int64_t want = 0;
            if (m.tensors[first[k]].layer >= 0) {
                int64_t el = 0;
                for (int t = first[k]; t < first[k + 1]; t++)
                    el += m.tensors[t].numel;
                want = 2 * tokens * el + 4 * b * s * s * (m.arch.heads / 8) * (m.arch.hidden / m.arch.heads);
            } else if (k == nb - 1) {
                want = 2 * tokens * m.arch.hidden * m.arch.vocab_padded / 8;
            }
            ck_assert_msg(f == want, "block %d: exec %lld FLOPs, the formula %lld", k, (long long)f, (long long)want);
            if (f > 0 && ne < 64) {
                ef[ne] = f;
                eb[ne] = f * ex_block_backward_passes(&m, first, k, cases[c].ckpt);
                ne++;
            }
        }
        ck_assert_msg(ne == nf && ne == nbw, "%s: exec has %d compute blocks, the simulator %d forward and %d "
                      "backward", flags, ne, nf, nbw);
        for (int k = 0; k < ne; k++) {
            ck_assert_msg(ef[k] == sf[k], "%s: forward of block %d: exec %lld FLOPs, simulator %lld", flags, k,
                          (long long)ef[k], (long long)sf[k]);
            ck_assert_msg(eb[k] == sb[ne - 1 - k], "%s: backward of block %d: exec %lld FLOPs, simulator %lld",
                          flags, k, (long long)eb[k], (long long)sb[ne - 1 - k]);
        }
        /* printed for the record (micro-batch 2 x seq 64) */
        if (c == 0)
            fprintf(stderr, "gemm_flops_equal_the_simulator: layer block %lld FLOPs, logits %lld (both)\n",
                    (long long)ef[0], (long long)ef[ne - 1]);
    }
    free(first);
    plan_model_free(&m);
}
END_TEST

START_TEST(trace_has_a_process_per_rank)
{
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --ratio 0.5 --policy exact --steps 1 --trace t.json.gz", tu_bin());
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
    char path[4200];
    snprintf(path, sizeof path, "%s/t.json.gz", tu_tmpdir());
    struct trace_doc d;
    struct rl_err e = {0};
    ck_assert_msg(trace_read(path, &d, &e) == 0, "%s", e.msg);
    int rs[2] = {0, 0}, adam = 0, mem = 0;
    for (int i = 0; i < d.n_events; i++) {
        const struct trace_event *x = &d.events[i];
        for (int q = 0; q < 2; q++)
            rs[q] += x->ph == 'X' && x->pid == TRACE_PID_RANK(q) && strcmp(x->name, "reduce_scatter") == 0;
        adam += x->ph == 'X' && x->pid == TRACE_PID_SOCKET(0) && strcmp(x->name, "cpu_adam") == 0;
        mem += x->ph == 'C' && strcmp(x->name, TRACE_COUNTER_GPU_MEMORY) == 0;
    }
    ck_assert_msg(rs[0] > 0 && rs[1] > 0 && adam >= 2 && mem >= 2, "rs %d %d adam %d mem %d", rs[0], rs[1], adam, mem);
    trace_doc_free(&d);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

START_TEST(nan_step_is_skipped_without_state_change)
{
    char one[9], nan2[9];
    run_ranks(2, "--ratio 0.5 --steps 1", one);
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --ratio 0.5 --steps 2 --inject-nan 2 --hash", tu_bin());
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "skipped    1 step"), "%s", r.out);
    ck_assert_str_eq(tu_digest_of(r.out, nan2), one);
    tu_run_free(&r);
}
END_TEST

START_TEST(device_memory_too_small)
{
    struct tu_run r;
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --ratio 0.1 --policy exact --device-mem 3MB");
    ck_assert_int_eq(r.status, 3);
    long long need = 0, trans = 0, fr = 0;
    double fit = -1;
    const char *m = strstr(r.err, "needs ");
    ck_assert_msg(m && sscanf(m, "needs %lld bytes (+ %lld transient), %lld free (--device-mem); --ratio %lf fits",
                              &need, &trans, &fr, &fit) == 4, "%s", r.err);
    ck_assert_int_eq(fr, 3000000);
    ck_assert(need + trans > fr);
    ck_assert(fit > 0.1 && fit <= 1);
    tu_run_free(&r);
    /* and the ratio it names does fit */
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --ratio %.2f --policy exact --device-mem 3MB --steps 1", fit);
    ck_assert_msg(r.status == 0, "%s", r.err);
    tu_run_free(&r);
}
END_TEST

/* What a `ratiolab run --scale S` process adds to its RSS after the peak it reports at the end of
 * its steps: the lifetime peak (wait4's ru_maxrss) less that peak, bytes. */
static long long growth_after_peak(int scale)
{
    const char *out = tu_path("scratch.json");
    char sc[16];
    snprintf(sc, sizeof sc, "%d", scale);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_WRONLY);
        if (fd < 0 || nul < 0 || dup2(fd, 1) < 0 || dup2(nul, 2) < 0)
            _exit(126);
        execl(tu_bin(), tu_bin(), "run", "--backend", "cpu", "--model", "gpt2", "--scale", sc, "--ratio", "0",
              "--steps", "1", "--warmup", "0", "--json", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    ck_assert(wait4(pid, &st, 0, &ru) == pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "run --scale %d failed: status %d", scale, st);
    json_error_t je;
    json_t *j = json_load_file(out, 0, &je);
    ck_assert_msg(j, "%s: %s", out, je.text);
    json_int_t peak = json_integer_value(json_object_get(
        json_object_get(json_array_get(json_object_get(j, "ranks"), 0), "memory"), "peak_rss_bytes"));
    ck_assert_msg(peak > 0, "no ranks[0].memory.peak_rss_bytes");
    json_decref(j);
    return (long long)ru.ru_maxrss * 1024 - (long long)peak;
}

/* The host scratch of a run does not grow with the model: the largest tensor's initial state and
 * the final digest go through EX_HOST_CHUNK elements at a time. A scratch the size of the largest
 * tensor (14 bytes an element for the digest) showed on the cuda backend as host memory that the
 * one-row baseline run does not have. Checked as what the process adds after its measured peak at
 * two scales: halving --scale doubles the largest tensor (gpt2's embedding, 2.4 M elements per rank
 * at --scale 16: 34 MB more for a whole-tensor digest scratch), while a fixed scratch adds the same
 * at both. */
START_TEST(host_scratch_is_bounded_at_any_scale)
{
    long long small = growth_after_peak(32), large = growth_after_peak(16);
    ck_assert_msg(large - small < 8LL << 20, "the run's RSS after its measured peak grew %lld bytes at --scale 16 "
                  "and %lld at --scale 32: host scratch that scales with the largest tensor", large, small);
}
END_TEST

START_TEST(failing_rank_ends_every_rank)
{
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 3 '%s' run " TU_EXEC_SMALL " --steps 2 --fail-rank 1", tu_bin());
    ck_assert_msg(r.status != 0 && r.status != 124, "status %d (124: hung)", r.status);
    ck_assert_msg(strstr(r.err, "rank 1: failing on purpose"), "%s", r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(world_size_and_pipeline_refused)
{
    struct tu_run r;
    tu_sh(&r, TU_MPIRUN " -np 2 '%s' run " TU_EXEC_SMALL " --dp 3", tu_bin());
    ck_assert_int_ne(r.status, 0);
    ck_assert_msg(strstr(r.err, "3 data-parallel ranks") && strstr(r.err, "started 2"), "%s", r.err);
    tu_run_free(&r);
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --tp 1 --pp 2 --gpus 2");
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--pp") && strstr(r.err, "pipeline"), "%s", r.err);
    tu_run_free(&r);
}
END_TEST

START_TEST(bad_input_and_help)
{
    struct tu_run r;
    tu_ratiolab(&r, "run --help");
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, "--schedule") && strstr(r.out, "--hash"));
    tu_run_free(&r);
    tu_ratiolab(&r, "run --backend cpu --schedule fast");
    ck_assert_int_eq(r.status, 2);
    ck_assert(strstr(r.err, "--schedule") && strstr(r.err, "fast"));
    tu_run_free(&r);
    tu_ratiolab(&r, "run --backend cpu --scale 0.5");
    ck_assert_int_eq(r.status, 2);
    ck_assert(strstr(r.err, "--scale"));
    tu_run_free(&r);
    tu_ratiolab(&r, "run " TU_EXEC_SMALL " --load nowhere");
    ck_assert_int_eq(r.status, 2);
    ck_assert(strstr(r.err, "ratiolab run: --load: nowhere/rank-00000.rlck: cannot read it"));
    tu_run_free(&r);
    /* the library names its fields; cli/ puts the flags in their place */
    struct rl_err e = {0};
    enum ex_backend_kind bk;
    ck_assert_int_eq(ex_backend_parse("gpu", &bk, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "backend: 'gpu' is not a backend; allowed: auto, cpu, cuda");
    struct plan_model m = {0}, out;
    ck_assert_int_eq(ex_scale_model(&m, 0.5, &out, &e), RL_EINVAL);
    ck_assert_str_eq(e.msg, "scale: 0.5 is not allowed; allowed: a finite number >= 1");
}
END_TEST

/* run's library pieces in process: --fail-rank's spec (rank, phase, the fields its errors name),
 * the launch checks (a pipeline, a failing rank the launch lacks) and run --json's head: the
 * measured ratio is the critical rank's host-placed over its per-rank elements (3 / 12 = 0.25). */
START_TEST(fail_spec_launch_check_and_run_json)
{
    struct rl_err e = {0};
    int rank = -1;
    enum ex_fail_phase ph = EX_FAIL_PHASE_COUNT;
    ck_assert_int_eq(ex_fail_spec_parse("2", &rank, &ph, &e), 0);
    ck_assert(rank == 2 && ph == EX_FAIL_STEP);
    ck_assert_int_eq(ex_fail_spec_parse("1:save-write", &rank, &ph, &e), 0);
    ck_assert(rank == 1 && ph == EX_FAIL_SAVE_WRITE);
    ck_assert_int_eq(ex_fail_spec_parse("0:lunch", &rank, &ph, &e), RL_EINVAL);
    ck_assert_msg(strncmp(e.msg, "fail_phase: 'lunch'", 19) == 0, "%s", e.msg);
    ck_assert_int_eq(ex_fail_spec_parse("x", &rank, &ph, &e), RL_EINVAL);
    ck_assert_msg(strncmp(e.msg, "fail_rank: 'x'", 14) == 0, "%s", e.msg);
    ck_assert_int_eq(ex_fail_spec_parse("123456789012345678901234567890123:step", &rank, &ph, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "allowed: R or R:PHASE") != NULL, "%s", e.msg);

    static struct plan_setup c;
    c.layout.pp = 1;
    c.layout.dp = 2;
    struct ex_comm comm = {.rank = 0, .size = 2};
    struct ex_opts o;
    ex_opts_default(&o);
    o.fail_rank = 1;
    ck_assert_int_eq(ex_launch_check(&c, &o, &comm, &e), 0);
    o.fail_rank = 2;
    ck_assert_int_eq(ex_launch_check(&c, &o, &comm, &e), RL_EINVAL);
    ck_assert_msg(strcmp(e.msg, "fail_rank: 2; allowed: 0 to 1 (the ranks mpirun started)") == 0, "%s", e.msg);
    c.layout.pp = 2;
    ck_assert_int_eq(ex_launch_check(&c, &o, &comm, &e), RL_EINVAL);
    ck_assert_msg(strncmp(e.msg, "pp: 2; ", 7) == 0, "%s", e.msg);

    struct ex_rank_result ranks[2] = {{.rank = 0, .per_rank_numel = 12, .host_placed_numel = 6},
                                      {.rank = 1, .per_rank_numel = 12, .host_placed_numel = 3}};
    struct ex_result r = {.backend = EX_BACKEND_CPU, .world = 2, .critical_rank = 1, .ranks = ranks};
    static struct plan p;
    p.policy = PLAN_POLICY_EXACT;
    p.requested_ratio = 0.25;
    p.honored_ratio = 0.25;
    p.per_rank_numel = 12;
    p.cpu_numel = 3;
    o.schedule = STEP_SCHED_OVERLAP;
    json_t *j = ex_run_json("tiny", 4, &o, &p, &r);
    ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "tiny");
    ck_assert(json_real_value(json_object_get(j, "scale")) == 4);
    ck_assert(json_real_value(json_object_get(j, "measured_ratio")) == 0.25);
    ck_assert_str_eq(json_string_value(json_object_get(j, "policy")), "exact");
    ck_assert_str_eq(json_string_value(json_object_get(j, "compute")), "none");
    ck_assert_str_eq(json_string_value(json_object_get(j, "comm_dtype")), "fp32");
    ck_assert_int_eq(json_integer_value(json_object_get(j, "cpu_numel")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "world")), 2);   /* ex_result_json_put's, after */
    json_decref(j);

    /* A rank's idle time is its step less the phases' exposed (not busy) time: phases exposed
     * 3 + 4 + 2 ns of a 20 ns step leave 11 ns idle (busy 5 + 4 + 6 would leave 5); exposed time
     * past the step is clamped to 0 idle, not negative. */
    struct ex_rank_result x = {.step_ns = 20};
    x.phase[0] = (struct ex_phase_stat){.busy_ns = 5, .exposed_ns = 3};
    x.phase[1] = (struct ex_phase_stat){.busy_ns = 4, .exposed_ns = 4};
    x.phase[STEP_PH_COUNT - 1] = (struct ex_phase_stat){.busy_ns = 6, .exposed_ns = 2};
    ck_assert_int_eq(ex_rank_idle_ns(&x), 11);
    x.step_ns = 8;
    ck_assert_int_eq(ex_rank_idle_ns(&x), 0);
}
END_TEST

Suite *exec_suite(void)
{
    Suite *s = suite_create("exec");
    TCase *t = tcase_create("exec");
    tcase_set_timeout(t, 240);
    tcase_add_test(t, digest_matrix_equals_reference);
    tcase_add_test(t, digest_depends_on_seed_and_steps);
    tcase_add_test(t, share_generator_matches_its_definition);
    tcase_add_test(t, comm_dtype_16bit_runs);
    tcase_add_test(t, checkpoint_continues_on_other_world_and_ratio);
    tcase_add_test(t, checkpoint_corrupt_or_truncated_is_refused);
    tcase_add_test(t, ledger_equals_plan_on_every_rank);
    tcase_add_test(t, prefetch_changes_no_bit_and_overlaps);
    tcase_add_test(t, gemm_compute_changes_no_bit);
    tcase_add_test(t, gemm_flops_equal_the_simulator);
    tcase_add_test(t, host_chunks_equal_the_simulators_above_the_cap);
    tcase_add_test(t, ds_step_follows_the_release);
    tcase_add_test(t, trace_has_a_process_per_rank);
    tcase_add_test(t, nan_step_is_skipped_without_state_change);
    tcase_add_test(t, device_memory_too_small);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan poisons the shadow of every buffer freed at exit (an eighth of the state, after the
     * measured peak), so a sanitizer build's RSS growth follows the state whatever the scratch. */
    tu_skip("exec: host_scratch_is_bounded_at_any_scale", "sanitizer build (ASan's shadow poisoning at free "
            "grows RSS with the state)");
    (void)host_scratch_is_bounded_at_any_scale;
#else
    tcase_add_test(t, host_scratch_is_bounded_at_any_scale);
#endif
    tcase_add_test(t, failing_rank_ends_every_rank);
    tcase_add_test(t, world_size_and_pipeline_refused);
    tcase_add_test(t, bad_input_and_help);
    tcase_add_test(t, fail_spec_launch_check_and_run_json);
    suite_add_tcase(s, t);
    return s;
}
