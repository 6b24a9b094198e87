/* tests/check_hw.c — the hardware profile's one schema (hw/hw.h): every key of the table written
 * through the writer and read back through the reader (round trip), the writer refusing what the
 * table does not have, and calibrate's profiles parsed key by key against the table. In process,
 * no measuring (cheap). */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/baseline.h"
#include "calib/calib.h"
#include "hw/hw.h"
#include "sim/hw.h"
#include "tests/util.h"

/* The value the round trip writes for row i: inside the row's range, different for every row (so
 * two rows that fill one field would show), whole for counts and bytes. */
static double row_value(size_t i)
{
    const struct hw_key *k = &hw_keys[i];
    double v = k->lo + (k->hi - k->lo) * (double)(i + 1) / (double)(hw_n_keys + 3);
    return k->kind == 'd' ? v : floor(v);
}

/* Every key of the table, written through hw_put/hw_put_at/hw_put_str/hw_put_list onto an empty
 * profile (one socket, one switch, the GPUs 0..2), closed (which reads it back) and parsed: every
 * field holds what was written, at 17 significant digits exactly. */
START_TEST(every_key_round_trips)
{
    struct hw_writer w;
    struct rl_err e = {0};
    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    const int gpus[3] = {0, 1, 2};
    for (size_t i = 0; i < hw_n_keys; i++) {
        const struct hw_key *k = &hw_keys[i];
        if (k->kind == 's') {
            char s[32];
            snprintf(s, sizeof s, "text of row %zu", i);
            hw_put_str(&w, k->path, s);
            continue;
        }
        if (k->array)
            hw_put_list(&w, k->path, 0, gpus, 3);
        else if (strstr(k->path, "[]"))
            hw_put_at(&w, k->path, 0, strcmp(k->path, "node.pcie_switches[].socket") == 0 ? 0 : row_value(i));
        else
            hw_put(&w, k->path, strcmp(k->path, "node.gpus") == 0 ? 3 : row_value(i));
        hw_source(&w, k->path, "made up by tests/check_hw.c");
    }
    char *text = NULL;
    ck_assert_msg(hw_writer_close(&w, 17, &text, &e) == 0, "%s", e.msg);
    struct hw_profile hw;
    ck_assert_msg(hw_parse(&hw, text, "round.json", NULL, &e) == 0, "%s", e.msg);
    for (size_t i = 0; i < hw_n_keys; i++) {
        const struct hw_key *k = &hw_keys[i];
        if (k->off == HW_NO_FIELD)
            continue;
        const char *p = (const char *)&hw + k->off;
        double want = strcmp(k->path, "node.gpus") == 0 ? 3 : row_value(i);
        switch (k->kind) {
        case 's': {
            char s[32];
            snprintf(s, sizeof s, "text of row %zu", i);
            ck_assert_msg(strcmp(p, s) == 0, "%s: '%s', wrote '%s'", k->path, p, s);
            break;
        }
        case 'i': ck_assert_msg(*(const int *)p == (int)want, "%s: %d, wrote %.0f", k->path, *(const int *)p, want); break;
        case 'b':
            ck_assert_msg(*(const int64_t *)p == (int64_t)want, "%s: %lld, wrote %.0f", k->path,
                          (long long)*(const int64_t *)p, want);
            break;
        default: ck_assert_msg(*(const double *)p == want, "%s: %.17g, wrote %.17g", k->path, *(const double *)p, want);
        }
    }
    /* The fields named by hand (not through the table's offsets), so a row pointing at the wrong
     * field shows too; the rows are found by path. */
    const struct {
        const char *path;   /* the key */
        double got;         /* its field, named */
    } named[] = {
        {"gpu.hbm_gbps", hw.hbm_gbps},
        {"gpu.tensor_efficiency", hw.tensor_efficiency},
        {"gpu.memory_bytes", (double)hw.gpu_mem_bytes},
        {"collectives.reduce_scatter_busbw_gbps", hw.reduce_scatter_busbw_gbps},
        {"latency_us.collective_inter", hw.lat_coll_inter_us},
        {"cpu_adam.torch_elements_per_s_per_core", hw.torch_adam_elems_per_core},
        {"host.fault_us_per_2m_page", hw.host_fault_us_per_2m_page},
        {"node.os_reserve_bytes", (double)hw.os_reserve_bytes},
        {"node.sockets[].dram_gbps", hw.socket[0].dram_gbps},
        {"node.pcie_switches[].uplink_gbps", hw.sw[0].uplink_gbps},
    };
    for (size_t n = 0; n < sizeof named / sizeof named[0]; n++) {
        const struct hw_key *k = hw_key_find(named[n].path);
        ck_assert_msg(k, "%s: not in the table", named[n].path);
        ck_assert_msg(named[n].got == row_value((size_t)(k - hw_keys)), "%s: %.17g, wrote %.17g", named[n].path,
                      named[n].got, row_value((size_t)(k - hw_keys)));
    }
    ck_assert_int_eq(hw.gpus, 3);
    ck_assert_int_eq(hw.sw[0].n_gpus, 3);
    ck_assert_int_eq(hw.gpu_switch[2], 0);
    free(text);
}
END_TEST

/* A profile of the required keys only (written from the table's 'r' rows): every optional key
 * takes the default sim/README.md documents, written here by hand, and the defaulted list names
 * exactly the optional figures the prediction draws on (the first-touch mode through the resolve
 * step). */
START_TEST(optional_keys_take_their_defaults)
{
    struct hw_writer w;
    struct rl_err e = {0};
    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    const int gpus[1] = {0};
    for (size_t i = 0; i < hw_n_keys; i++) {
        const struct hw_key *k = &hw_keys[i];
        if (k->need != 'r')
            continue;
        if (k->kind == 's')
            hw_put_str(&w, k->path, "x");
        else if (k->array)
            hw_put_list(&w, k->path, 0, gpus, 1);
        else if (strstr(k->path, "[]"))
            hw_put_at(&w, k->path, 0, strcmp(k->path, "node.pcie_switches[].socket") == 0 ? 0 : k->lo);
        else
            hw_put(&w, k->path, strcmp(k->path, "cpu_adam.elements_per_s_per_core") == 0 ? 6e8 : k->lo);
        if (k->kind != 's')
            hw_source(&w, k->path, "made up by tests/check_hw.c");
    }
    char *text = NULL;
    ck_assert_msg(hw_writer_close(&w, 17, &text, &e) == 0, "%s", e.msg);
    struct hw_profile hw;
    ck_assert_msg(sim_hw_parse(&hw, text, "required.json", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(hw.nccl_comm_bytes, 2 * 16 * 4 * 1048576);
    ck_assert_int_eq(hw.host_baseline_bytes, INT64_C(4) * 1073741824);
    ck_assert_int_eq(hw.os_reserve_bytes, INT64_C(8) * 1073741824);
    ck_assert_int_eq(hw.bf16_tensor_cores, 1);
    ck_assert_double_eq(hw.torch_adam_elems_per_core, 1e8);   /* a sixth of 6e8 */
    ck_assert_double_eq(hw.host_cast_elems_per_thread, 1e9);
    ck_assert_double_eq(hw.host_zero3_us_fwd, 330);   /* DeepSpeed 0.18.9 on the development VM */
    ck_assert_double_eq(hw.host_zero3_us_bwd, 424);
    ck_assert_double_eq(hw.host_zero3_part_us_fwd, 36);
    ck_assert_double_eq(hw.host_zero3_part_us_bwd, 14);
    ck_assert_double_eq(hw.host_fault_gbps_per_socket, 0);
    ck_assert_double_eq(hw.host_memcpy_gbps_per_thread, 0);
    ck_assert_int_eq(hw.gpu_emulated, 0);
    ck_assert_double_eq(hw.gemm_efficiency, 0);
    ck_assert_str_eq(hw.cpu_model, "");
    ck_assert_str_eq(hw.host_thp_mode, "madvise");
    ck_assert_int_eq(hw.host_page_bytes, 4096);
    ck_assert_double_eq_tol(hw.host_fault_gbps_per_thread, 2.1, 1e-12);   /* 4096 B per 4096 / 2.1 us */
    /* The figures noted as defaulted, by hand (sim/README.md: a default is said; a model that is
       off at 0 and the first-touch figures the resolve step does not use are not: 4 KiB pages here,
       so not the 2 MiB figure), as a set. */
    const char *noted[] = {"node.host_baseline_bytes_per_rank", "node.os_reserve_bytes", "gpu.bf16_tensor_cores",
                           "gpu.nccl_bytes_per_communicator", "cpu_adam.torch_elements_per_s_per_core",
                           "host.fault_gbps_per_thread", "host.fault_gbps_per_socket", "host.memcpy_gbps_per_thread",
                           "host.cast_elements_per_s_per_thread", "host.zero3_us_per_module_forward",
                           "host.zero3_us_per_module_backward", "host.zero3_partitioned_us_per_module_forward",
                           "host.zero3_partitioned_us_per_module_backward", "host.thp_mode",
                           "host.fault_us_per_4k_page"};
    char list[sizeof hw.defaulted + 2];
    snprintf(list, sizeof list, ",%s,", hw.defaulted);
    int count = 1;
    for (const char *c = hw.defaulted; *c; c++)
        count += *c == ',';
    for (size_t n = 0; n < sizeof noted / sizeof noted[0]; n++) {
        char at[160];
        snprintf(at, sizeof at, ",%s,", noted[n]);
        ck_assert_msg(strstr(list, at), "%s: defaulted, not noted (%s)", noted[n], hw.defaulted);
    }
    ck_assert_msg(count == (int)(sizeof noted / sizeof noted[0]), "noted: %s", hw.defaulted);
    free(text);
}
END_TEST

/* The writer goes through the table: a key it lacks, a number written as text, a source for no
 * number are errors (the first one kept, naming the key); a number outside its key's range is
 * written at the bound (an efficiency is a fraction: at most 1; a GPU has at least 1e9 bytes). */
START_TEST(writer_keeps_to_the_table)
{
    struct hw_writer w;
    struct rl_err e = {0};
    char *text = NULL;
    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    hw_put(&w, "gpu.hbm_gbs", 900);
    hw_put(&w, "gpu.model", 1);
    ck_assert_int_eq(hw_writer_close(&w, 6, &text, &e), RL_EINVAL);
    ck_assert_ptr_null(text);
    ck_assert_msg(strstr(e.msg, "gpu.hbm_gbs") && strstr(e.msg, "not a key"), "%s", e.msg);

    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    hw_put(&w, "gpu.model", 1);
    ck_assert_int_eq(hw_writer_close(&w, 6, &text, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "gpu.model") && strstr(e.msg, "string"), "%s", e.msg);

    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    hw_source(&w, "gpu.modle", "x");
    ck_assert_int_eq(hw_writer_close(&w, 6, &text, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "sources: gpu.modle"), "%s", e.msg);

    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    hw_put(&w, "gpu.hbm_gbps", NAN);
    ck_assert_int_eq(hw_writer_close(&w, 6, &text, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "gpu.hbm_gbps") && strstr(e.msg, "finite"), "%s", e.msg);

    /* a profile that lacks required keys is refused at close: the reader's message */
    ck_assert_int_eq(hw_writer_open(&w, NULL, &e), 0);
    hw_put_str(&w, "name", "n");
    ck_assert_int_eq(hw_writer_close(&w, 6, &text, &e), RL_EINVAL);
    ck_assert_msg(strstr(e.msg, "reader refuses") && strstr(e.msg, "missing"), "%s", e.msg);

    /* clamping: over a base profile, whose other keys stay as they were */
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", tu_catalog());
    char *base = tu_read(path, NULL);
    ck_assert_int_eq(hw_writer_open(&w, base, &e), 0);
    hw_put(&w, "gpu.hbm_efficiency", 7);
    hw_put(&w, "gpu.memory_bytes", 12345);
    ck_assert_msg(hw_writer_close(&w, 15, &text, &e) == 0, "%s", e.msg);
    struct hw_profile hw, was;
    ck_assert_msg(sim_hw_parse(&hw, text, "clamped.json", &e) == 0, "%s", e.msg);
    ck_assert_msg(sim_hw_parse(&was, base, "base.json", &e) == 0, "%s", e.msg);
    ck_assert_double_eq(hw.hbm_efficiency, 1);
    ck_assert_int_eq(hw.gpu_mem_bytes, 1000000000);
    ck_assert_double_eq(hw.hbm_gbps, was.hbm_gbps);
    ck_assert_double_eq(hw.tensor_efficiency, was.tensor_efficiency);
    free(text);
    free(base);
}
END_TEST

/* Walks a profile: every number's path (indices as "[]") is a row of the table, inside its range,
 * with a source; with `kinds`, written as the row's kind (an integer for counts and bytes, a real
 * for rates: what the writer makes; a hand-written profile, or a base calibrate amends, may write a
 * rate as 900). */
static void check_against_table(json_t *v, const char *norm, const char *exact, json_t *sources, const char *what,
                                bool kinds)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c) {
            if (!*norm && strcmp(k, "sources") == 0)
                continue;
            char n2[256], e2[256];
            snprintf(n2, sizeof n2, "%s%s%s", norm, *norm ? "." : "", k);
            snprintf(e2, sizeof e2, "%s%s%s", exact, *exact ? "." : "", k);
            check_against_table(c, n2, e2, sources, what, kinds);
        }
        return;
    }
    const struct hw_key *row = hw_key_find(norm);
    if (json_is_array(v)) {
        size_t i;
        json_t *c;
        char n2[256];
        snprintf(n2, sizeof n2, "%s[]", norm);
        json_array_foreach(v, i, c) {
            char e2[256];
            snprintf(e2, sizeof e2, "%s[%zu]", exact, i);
            check_against_table(c, row && row->array ? norm : n2, e2, sources, what, kinds);
        }
        return;
    }
    ck_assert_msg(row, "%s: %s: not a key of the table", what, exact);
    if (row->kind == 's') {
        ck_assert_msg(json_is_string(v), "%s: %s: not a string", what, exact);
        return;
    }
    ck_assert_msg(json_is_number(v), "%s: %s: not a number", what, exact);
    ck_assert_msg(!kinds || (row->kind == 'd' ? json_is_real(v) : json_is_integer(v)), "%s: %s: written as %s, the table has '%c'",
                  what, exact, json_is_real(v) ? "a real" : "an integer", row->kind);
    double x = json_number_value(v);
    ck_assert_msg(x >= row->lo && x <= row->hi, "%s: %s: %g outside [%g, %g]", what, exact, x, row->lo, row->hi);
    ck_assert_msg(json_object_get(sources, norm) || json_object_get(sources, exact), "%s: %s: no source", what, exact);
}

static struct calib_figure fig(double m)
{
    return (struct calib_figure){.median = m, .min = m * 0.9, .max = m * 1.1, .repeats = 9, .best = m * 1.05};
}

/* A made-up machine: 4 cores, 2 emulated devices, the host costs and (run) one rank of a run. */
static void made_up(struct calib *c, bool run)
{
    memset(c, 0, sizeof *c);
    snprintf(c->host, sizeof c->host, "h");
    snprintf(c->date, sizeof c->date, "d");
    snprintf(c->cpu_model, sizeof c->cpu_model, "cpu");
    snprintf(c->isa, sizeof c->isa, "avx2");
    c->cores = 4;
    c->host_mem_bytes = INT64_C(16) << 30;
    c->n_threads = 2;
    for (int t = 0; t < 2; t++) {
        c->dram_gbps[t] = fig(10 + t);
        c->adam_elems_per_s[t] = fig(1e8 * (t + 1));
    }
    c->copy_gbps = fig(7);
    c->copy_all_gbps = fig(12);
    c->device_threads = 2;
    c->devices = 2;
    c->device_adam_elems_per_s = fig(2e8);
    c->gemm_flops = fig(5e10);
    c->launch_us = fig(3);
    c->host_costs.measured = true;
    c->host_costs.n_threads = 2;
    snprintf(c->host_costs.thp, sizeof c->host_costs.thp, "madvise");
    for (int t = 0; t < 2; t++) {
        c->host_costs.fault_gbps[t] = fig(2 + t);
        c->host_costs.memcpy_gbps[t] = fig(8);
        c->host_costs.cast_elems_per_s[t] = fig(1e9);
    }
    if (!run)
        return;
    c->have_run = true;
    c->run_ranks = 2;
    c->run_gemm_flop = 1e11;
    c->run_gemm_flops = fig(4e10);
    c->run_device_adam_numel = 1 << 20;
    /* 1e7 elements/s x 30 B = 0.3 GB/s: below gpu.hbm_gbps's 1 GB/s floor, which the writer keeps */
    c->run_device_adam_elems_per_s = fig(1e7);
    c->run_copy_bytes = 1 << 20;
    c->run_copy_gbps = fig(6);
    c->run_triad_bytes = 1 << 26;
    c->run_mem_gbps = fig(15);
    c->run_grad_elements = 1 << 20;
    c->run_grad_elems_per_s = fig(2e9);
}

/* calibrate's three profiles (the emulated device, with and without one rank of a run; a GPU
 * profile over hgx-h200; the host baseline over dgx1-v100) parsed key by key against the table,
 * and each loads as the simulator loads it. The slow run's memory rate (0.3 GB/s) is written at
 * the key's floor, 1 GB/s: calib/ once clamped it at 0.01 by a bound of its own, and wrote a
 * profile the reader refused. */
START_TEST(calibrate_writes_through_the_table)
{
    struct rl_err e = {0};
    struct hw_profile hw;
    char *out = NULL;
    for (int run = 0; run < 2; run++) {
        struct calib c;
        made_up(&c, run);
        ck_assert_msg(calib_profile(&c, "cal", &out, &e) == 0, "%s", e.msg);
        json_t *j = json_loads(out, 0, NULL);
        ck_assert_ptr_nonnull(j);
        check_against_table(j, "", "", json_object_get(j, "sources"), run ? "calibrate (run)" : "calibrate", true);
        ck_assert_msg(sim_hw_parse(&hw, out, "cal.json", &e) == 0, "%s", e.msg);
        ck_assert_int_eq(hw.gpu_emulated, 1);
        if (run)
            ck_assert_double_eq(hw.hbm_gbps, 1);
        json_decref(j);
        free(out);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/hgx-h200.json", tu_catalog());
    char *base = tu_read(path, NULL);
    struct calib c;
    made_up(&c, false);
    struct calib_gpu g;
    memset(&g, 0, sizeof g);
    g.n_gpus = 1;
    snprintf(g.model, sizeof g.model, "H200");
    g.memory_bytes = INT64_C(150) << 30;
    g.h2d_pinned_gbps[0] = g.d2h_pinned_gbps[0] = g.h2d_pageable_gbps[0] = g.d2h_pageable_gbps[0] = fig(50);
    g.h2d_all_gbps = fig(50);
    g.d2d_gbps = fig(4000);
    g.adam_elems_per_s = fig(1e11);
    ck_assert_msg(calib_gpu_profile(&c, &g, base, "gpu", &out, &e) == 0, "%s", e.msg);
    json_t *j = json_loads(out, 0, NULL);
    check_against_table(j, "", "", json_object_get(j, "sources"), "calibrate --backend cuda", false);
    ck_assert_msg(sim_hw_parse(&hw, out, "gpu.json", &e) == 0, "%s", e.msg);
    ck_assert_double_eq(hw.hbm_gbps, 4000);
    json_decref(j);
    free(out);
    free(base);

    snprintf(path, sizeof path, "%s/hardware/dgx1-v100.json", tu_catalog());
    base = tu_read(path, NULL);
    struct calib_baseline b = {.bytes_per_rank = INT64_C(5) << 30};
    ck_assert_msg(calib_baseline_profile(base, "bl", &b, "src", &out, &e) == 0, "%s", e.msg);
    j = json_loads(out, 0, NULL);
    check_against_table(j, "", "", json_object_get(j, "sources"), "calibrate --host-baseline-from", false);
    ck_assert_msg(sim_hw_parse(&hw, out, "bl.json", &e) == 0, "%s", e.msg);
    ck_assert_int_eq(hw.host_baseline_bytes, INT64_C(5) << 30);
    json_decref(j);
    free(out);
    free(base);
}
END_TEST

/* Profile value at a dotted path ("node.sockets.0.dram_gbps": a number index is an array member). */
static double at_path(json_t *j, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *save = NULL, *p = strtok_r(buf, ".", &save); p && j; p = strtok_r(NULL, ".", &save))
        j = json_is_array(j) ? json_array_get(j, (size_t)atoi(p)) : json_object_get(j, p);
    ck_assert_msg(json_is_number(j), "%s: no number", path);
    return json_number_value(j);
}
/* The profile's figure at `path` is `want` (the writer keeps 6 significant digits). */
static void ck_figure(json_t *j, const char *path, double want)
{
    double got = at_path(j, path);
    ck_assert_msg(fabs(got - want) <= 1e-5 * fabs(want), "%s: %.9g, want %.9g", path, got, want);
}
/* The source of `key` is `want` exactly. */
static void ck_source(json_t *j, const char *key, const char *want)
{
    const char *got = json_string_value(json_object_get(json_object_get(j, "sources"), key));
    ck_assert_msg(got && strcmp(got, want) == 0, "%s: [%s]\nwant [%s]", key, got ? got : "(none)", want);
}

/* calibrate's derived figures, each worked out by hand from made-up measurements, with a source
 * sentence each: the emulated device's best triad (2 of 3 threads), its Adam over the triad, the
 * collectives estimated without mpirun; a run's collectives by alpha-beta (one at the 10 % floor)
 * and its uplink as 4 ranks' copies; a GPU profile's uplink over the 2 of hgx-h200's 4 switches
 * that GPUs 0-2 sit behind, the slowest GPU's copy, Adam over D2D, bf16 GEMM over the base's peak
 * (989 TFLOP/s) and the triad over its 2 sockets. */
START_TEST(calibrate_figures_by_hand)
{
    struct rl_err e = {0};
    char *out = NULL;
    static struct calib c;
    made_up(&c, false);
    c.n_threads = 3;
    c.dram_array_bytes = 64 << 20;
    c.dram_gbps[0] = fig(10), c.dram_gbps[1] = fig(14), c.dram_gbps[2] = fig(12);
    c.device_adam_elems_per_s = fig(2.1e8);
    ck_assert_msg(calib_profile(&c, "cal", &out, &e) == 0, "%s", e.msg);
    json_t *j = json_loads(out, 0, NULL);
    ck_figure(j, "node.sockets.0.dram_gbps", 14);
    ck_figure(j, "gpu.hbm_gbps", 14);
    ck_figure(j, "gpu.hbm_efficiency", 2.1e8 * 30 / 14e9);   /* 0.45 */
    ck_figure(j, "gpu.memory_bytes", 8.0 * (1 << 30));      /* 16 GiB over 2 devices */
    ck_figure(j, "collectives.allgather_busbw_gbps", 3.5);  /* half the 7 GB/s copy */
    ck_source(j, "node.sockets[].dram_gbps", "measured by ratiolab calibrate on h, d: STREAM-style triad a = b + 3c "
              "over 3 x 64 MiB float arrays, 12 B per element, OpenMP static chunks; best over thread counts (2 "
              "threads: median 14.00 GB/s, spread 12.60..15.40, 9 repeats); GB/s by threads: 1: 10.0, 2: 14.0, "
              "3: 12.0");
    ck_source(j, "collectives.allgather_busbw_gbps", "measured by ratiolab calibrate on h, d: not measured (not run "
              "under mpirun): estimated as half the one-thread copy bandwidth (7.00 GB/s; shared-memory MPI copies "
              "through a buffer; unverified)");
    json_decref(j);
    free(out);

    made_up(&c, true);
    c.run_ranks = 4;
    c.have_mpi = true;
    c.collective_latency_us = fig(10);
    c.run_allgather_bytes = 1 << 20;         /* 110 us - 10 us latency: 3 x 1 MiB of bus bytes in 100 us */
    c.run_allgather_us = fig(110);
    c.run_reduce_scatter_bytes = 65536;      /* 11 us - 10 us is below 10 % of 11 us: 1.1 us taken */
    c.run_reduce_scatter_us = fig(11);
    ck_assert_msg(calib_profile(&c, "cal", &out, &e) == 0, "%s", e.msg);
    j = json_loads(out, 0, NULL);
    ck_figure(j, "collectives.allgather_busbw_gbps", 3.0 * 1048576 / 100e-6 * 1e-9);   /* 31.46 */
    ck_figure(j, "collectives.reduce_scatter_busbw_gbps", 3.0 * 65536 / 1.1e-6 * 1e-9);   /* 178.7 */
    ck_figure(j, "collectives.allreduce_busbw_gbps", 3.0 * 65536 / 1.1e-6 * 1e-9);
    ck_figure(j, "node.pcie_switches.0.uplink_gbps", 4 * 6);
    ck_source(j, "collectives.allgather_busbw_gbps", "measured by ratiolab calibrate on h, d: MPI_Allgather of "
              "1048576 bytes per rank on 4 ranks, every rank at once under the validated run's mpirun, the slowest "
              "rank's time per repeat: us median 110, spread 99..121, 9 repeats; bus bytes 3145728 over the time "
              "beyond the 10.00 us latency");
    json_decref(j);
    free(out);

    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/hgx-h200.json", tu_catalog());
    char *base = tu_read(path, NULL);
    made_up(&c, false);
    c.dram_gbps[1] = fig(14);
    static struct calib_gpu g;
    memset(&g, 0, sizeof g);
    g.n_gpus = 3;
    g.copy_bytes = 256 << 20;
    const double h2d[3] = {50, 45, 52};
    for (int d = 0; d < 3; d++)
        g.h2d_pinned_gbps[d] = fig(h2d[d]), g.d2h_pinned_gbps[d] = g.h2d_pageable_gbps[d] = fig(40),
        g.d2h_pageable_gbps[d] = fig(40);
    g.h2d_all_gbps = fig(120);
    g.d2d_gbps = fig(4000);
    g.adam_numel = 1 << 28;
    g.adam_elems_per_s = fig(1e11);
    g.have_gemm = true;
    g.bf16_flops = fig(494.5e12);
    ck_assert_msg(calib_gpu_profile(&c, &g, base, "gpu", &out, &e) == 0, "%s", e.msg);
    j = json_loads(out, 0, NULL);
    for (int i = 0; i < 4; i++) {
        char p[64];
        snprintf(p, sizeof p, "node.pcie_switches.%d.uplink_gbps", i);
        ck_figure(j, p, 120.0 / 2);
    }
    ck_source(j, "node.pcie_switches[].uplink_gbps", "measured by ratiolab calibrate on h, d: all 3 GPUs at once, "
              "pinned H2D of 256 MiB each: sum 120.00 GB/s (108.00..132.00), divided over the 2 switches of the "
              "profile's 4 those GPUs sit behind");
    ck_figure(j, "gpu.h2d_pinned_gbps", 45);
    ck_figure(j, "gpu.hbm_efficiency", 1e11 * 28 / 4000e9);   /* 0.7 */
    ck_source(j, "gpu.hbm_efficiency", "measured by ratiolab calibrate on h, d: kernels/ CUDA Adam on GPU 0, "
              "268435456 elements, fp32 gradient: 1e+11 elements/s (9e+10..1.1e+11) x 28 B over the D2D bandwidth");
    ck_figure(j, "gpu.tensor_efficiency", 494.5 / 989);      /* 0.5 */
    ck_figure(j, "node.sockets.0.dram_gbps", 14.0 / 2);
    ck_figure(j, "node.sockets.1.dram_gbps", 14.0 / 2);
    json_decref(j);
    free(out);
    free(base);
}
END_TEST

/* Every catalog profile, parsed against the table as calibrate's are: the catalog and the writer
 * keep to one schema. */
START_TEST(catalog_profiles_keep_to_the_table)
{
    char **names;
    int n;
    struct rl_err e = {0};
    ck_assert_int_eq(sim_hw_list(tu_catalog(), &names, &n, &e), 0);
    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/hardware/%s.json", tu_catalog(), names[i]);
        json_t *j = json_load_file(path, 0, NULL);
        ck_assert_msg(j, "%s", path);
        check_against_table(j, "", "", json_object_get(j, "sources"), names[i], false);
        json_decref(j);
        free(names[i]);
    }
    free(names);
}
END_TEST

Suite *hw_suite(void)
{
    Suite *s = suite_create("hw");
    TCase *c = tcase_create("schema");
    tcase_add_test(c, every_key_round_trips);
    tcase_add_test(c, optional_keys_take_their_defaults);
    tcase_add_test(c, writer_keeps_to_the_table);
    tcase_add_test(c, calibrate_writes_through_the_table);
    tcase_add_test(c, calibrate_figures_by_hand);
    tcase_add_test(c, catalog_profiles_keep_to_the_table);
    suite_add_tcase(s, c);
    return s;
}
