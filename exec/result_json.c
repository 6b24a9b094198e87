/* exec/result_json.c — the run record written and read through one key table per struct (see
 * result_json.h). */
#include <stddef.h>   /* offsetof */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/result_json.h"
#include "plan/plan_json.h"

/* One JSON key of a struct: its field's offset and width. A memory reading (NULLABLE) is written
 * as null when negative and read back as -1 from null. */
enum key_kind { K_I64, K_INT, K_BOOL, K_NULLABLE };
struct key {
    const char *name;      /* JSON key */
    size_t off;            /* offsetof the field */
    enum key_kind kind;    /* its C type and null convention */
};

/* The result's own fields, in the documented order (docs/json-run.md). backend and digest are
 * text and written beside the table. */
static const struct key result_keys[] = {
    {"world", offsetof(struct ex_result, world), K_INT},
    {"total_numel", offsetof(struct ex_result, total_numel), K_I64},
    {"iterations", offsetof(struct ex_result, iterations), K_I64},
    {"adam_step", offsetof(struct ex_result, adam_step), K_I64},
    {"skipped_steps", offsetof(struct ex_result, skipped), K_I64},
    {"ledger_ok", offsetof(struct ex_result, ledger_ok), K_BOOL},
    {"prefetch_depth", offsetof(struct ex_result, prefetch_depth), K_I64},
    {"gather_buffers", offsetof(struct ex_result, gather_buffers), K_INT},
};

/* A rank's scalar fields. */
static const struct key rank_keys[] = {
    {"rank", offsetof(struct ex_rank_result, rank), K_INT},
    {"step_ns", offsetof(struct ex_rank_result, step_ns), K_I64},
    {"per_rank_numel", offsetof(struct ex_rank_result, per_rank_numel), K_I64},
    {"host_placed_numel", offsetof(struct ex_rank_result, host_placed_numel), K_I64},
    {"ledger_device_bytes", offsetof(struct ex_rank_result, ledger_device_bytes), K_I64},
    {"ledger_host_bytes", offsetof(struct ex_rank_result, ledger_host_bytes), K_I64},
    {"bytes_moved", offsetof(struct ex_rank_result, bytes_moved), K_I64},
};

/* A rank's memory readings ("memory"). */
static const struct key mem_keys[] = {
    {"rss_bytes", offsetof(struct ex_mem, rss_bytes), K_NULLABLE},
    {"peak_rss_bytes", offsetof(struct ex_mem, peak_rss_bytes), K_NULLABLE},
    {"locked_bytes", offsetof(struct ex_mem, locked_bytes), K_NULLABLE},
    {"pinned_bytes", offsetof(struct ex_mem, pinned_bytes), K_NULLABLE},
    {"device_used_bytes", offsetof(struct ex_mem, device_used_bytes), K_NULLABLE},
    {"device_capacity_bytes", offsetof(struct ex_mem, device_capacity_bytes), K_NULLABLE},
    {"gpu_process_bytes", offsetof(struct ex_mem, gpu_process_bytes), K_NULLABLE},
};

/* A phase's figures ("phases.<name>"); overlapped_ns (busy - exposed) is written, not read. */
static const struct key phase_keys[] = {
    {"busy_ns", offsetof(struct ex_phase_stat, busy_ns), K_I64},
    {"exposed_ns", offsetof(struct ex_phase_stat, exposed_ns), K_I64},
    {"bytes", offsetof(struct ex_phase_stat, bytes), K_I64},
};

static void put_keys(json_t *o, const void *base, const struct key *k, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)base + k[i].off;
        int64_t v = 0;
        bool b = false;
        switch (k[i].kind) {
        case K_I64: case K_NULLABLE: memcpy(&v, p, sizeof v); break;
        case K_INT: { int x; memcpy(&x, p, sizeof x); v = x; break; }
        case K_BOOL: memcpy(&b, p, sizeof b); break;
        }
        json_object_set_new(o, k[i].name, k[i].kind == K_BOOL ? json_boolean(b)
                                          : k[i].kind == K_NULLABLE && v < 0 ? json_null() : json_integer(v));
    }
}

static int get_keys(const json_t *o, void *base, const struct key *k, size_t n, const char *where,
                    struct rl_err *e)
{
    for (size_t i = 0; i < n; i++) {
        char *p = (char *)base + k[i].off;
        json_t *j = json_object_get(o, k[i].name);
        int64_t v = k[i].kind == K_NULLABLE ? -1 : 0;
        if (k[i].kind == K_BOOL) {
            if (j && !json_is_boolean(j))
                return rl_errf(e, RL_EINVAL, "run record: %s%s: not true or false", where, k[i].name);
            bool b = json_is_true(j);
            memcpy(p, &b, sizeof b);
            continue;
        }
        if (json_is_integer(j))
            v = json_integer_value(j);
        else if (j && !(json_is_null(j) && k[i].kind == K_NULLABLE))
            return rl_errf(e, RL_EINVAL, "run record: %s%s: not an integer%s", where, k[i].name,
                           k[i].kind == K_NULLABLE ? " or null" : "");
        if (k[i].kind == K_INT) {
            if (v < INT32_MIN || v > INT32_MAX)
                return rl_errf(e, RL_EINVAL, "run record: %s%s: %lld is out of range", where, k[i].name,
                               (long long)v);
            int x = (int)v;
            memcpy(p, &x, sizeof x);
        } else {
            memcpy(p, &v, sizeof v);
        }
    }
    return 0;
}

int64_t ex_rank_idle_ns(const struct ex_rank_result *x)
{
    int64_t s = 0;
    for (int i = 0; i < STEP_PH_COUNT; i++)
        s += x->phase[i].exposed_ns;
    return x->step_ns > s ? x->step_ns - s : 0;
}

static json_t *phases_json(const struct ex_rank_result *x)
{
    json_t *ph = json_object();
    for (int i = 0; i < STEP_PH_COUNT; i++) {
        json_t *o = json_object();
        put_keys(o, &x->phase[i], phase_keys, 2);
        json_object_set_new(o, "overlapped_ns", json_integer(x->phase[i].busy_ns - x->phase[i].exposed_ns));
        put_keys(o, &x->phase[i], phase_keys + 2, RL_COUNT(phase_keys) - 2);
        json_object_set_new(ph, step_phase_name(i), o);
    }
    return ph;
}

static json_t *rank_json(const struct ex_rank_result *x)
{
    json_t *o = json_object();
    put_keys(o, x, rank_keys, 2);
    json_object_set_new(o, "phases", phases_json(x));
    json_object_set_new(o, "idle_ns", json_integer(ex_rank_idle_ns(x)));
    put_keys(o, x, rank_keys + 2, RL_COUNT(rank_keys) - 2);
    json_t *bufs = json_array();
    for (int i = 0; i < x->n_bufs; i++) {
        json_t *b = json_object();
        json_object_set_new(b, "name", json_string(x->bufs[i].name));
        json_object_set_new(b, "device", json_string(plan_device_name(x->bufs[i].device)));
        json_object_set_new(b, "bytes", json_integer(x->bufs[i].bytes));
        json_object_set_new(b, "ledger_bytes", x->bufs[i].ledger_bytes < 0 ? json_null()
                                                                            : json_integer(x->bufs[i].ledger_bytes));
        json_array_append_new(bufs, b);
    }
    json_object_set_new(o, "buffers", bufs);
    json_t *m = json_object();
    put_keys(m, &x->mem, mem_keys, RL_COUNT(mem_keys));
    json_object_set_new(o, "memory", m);
    return o;
}

void ex_result_json_put(json_t *o, const struct ex_result *r)
{
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", r->digest);
    json_object_set_new(o, "backend", json_string(ex_backend_name(r->backend)));
    put_keys(o, r, result_keys, RL_COUNT(result_keys));
    json_object_set_new(o, "digest", json_string(hex));
    json_object_set_new(o, "deepspeed_version", r->ds_step ? json_string(RL_VERSION_S(r->ds_version)) : json_null());
    /* The critical rank's figures, the ones a reader of one run looks at first. */
    const struct ex_rank_result *cr = &r->ranks[r->critical_rank];
    json_t *m = json_object();
    json_object_set_new(m, "step_ns", json_integer(cr->step_ns));
    json_object_set_new(m, "critical_rank", json_integer(r->critical_rank));
    json_object_set_new(m, "phases", phases_json(cr));
    json_object_set_new(m, "idle_ns", json_integer(ex_rank_idle_ns(cr)));
    json_t *g = json_object();
    json_object_set_new(g, "ledger_bytes", json_integer(cr->ledger_device_bytes));
    json_object_set_new(g, "used_bytes", cr->mem.device_used_bytes < 0 ? json_null()
                                                                        : json_integer(cr->mem.device_used_bytes));
    json_object_set_new(m, "gpu_memory_per_rank", g);
    json_t *h = json_object();
    json_object_set_new(h, "rank_bytes", json_integer(cr->ledger_host_bytes));
    json_object_set_new(h, "rss_bytes", cr->mem.rss_bytes < 0 ? json_null() : json_integer(cr->mem.rss_bytes));
    json_object_set_new(m, "host_memory", h);
    json_object_set_new(o, "measurement", m);
    json_t *ranks = json_array();
    for (int q = 0; q < r->world; q++)
        json_array_append_new(ranks, rank_json(&r->ranks[q]));
    json_object_set_new(o, "ranks", ranks);
}

static int rank_from_json(const json_t *q, struct ex_rank_result *x, int k, struct rl_err *e)
{
    char where[48];
    snprintf(where, sizeof where, "ranks[%d].", k);
    RL_TRY(get_keys(q, x, rank_keys, RL_COUNT(rank_keys), where, e));
    const json_t *ph = json_object_get(q, "phases");
    for (int i = 0; i < STEP_PH_COUNT; i++) {
        char w2[96];
        snprintf(w2, sizeof w2, "%sphases.%s.", where, step_phase_name(i));
        RL_TRY(get_keys(json_object_get(ph, step_phase_name(i)), &x->phase[i], phase_keys, RL_COUNT(phase_keys),
                        w2, e));
    }
    const json_t *mem = json_object_get(q, "memory");
    snprintf(where, sizeof where, "ranks[%d].memory.", k);
    RL_TRY(get_keys(mem, &x->mem, mem_keys, RL_COUNT(mem_keys), where, e));
    const json_t *bufs = json_object_get(q, "buffers");
    if (json_array_size(bufs) > EX_MAX_BUFS)
        return rl_errf(e, RL_EINVAL, "run record: ranks[%d].buffers: %zu buffers; at most %d", k,
                       json_array_size(bufs), EX_MAX_BUFS);
    x->n_bufs = (int)json_array_size(bufs);
    for (int b = 0; b < x->n_bufs; b++) {
        const json_t *bb = json_array_get(bufs, (size_t)b);
        struct ex_buf_report *br = &x->bufs[b];
        const char *name = json_string_value(json_object_get(bb, "name"));
        const char *dev = json_string_value(json_object_get(bb, "device"));
        snprintf(br->name, sizeof br->name, "%s", name ? name : "");
        int d = 0;
        while (d < PLAN_DEVICE_COUNT && !(dev && strcmp(dev, plan_device_name((enum plan_device)d)) == 0))
            d++;
        if (d == PLAN_DEVICE_COUNT)
            return rl_errf(e, RL_EINVAL, "run record: ranks[%d].buffers[%d].device: '%s' is not a device", k, b,
                           dev ? dev : "");
        br->device = (enum plan_device)d;
        br->bytes = json_integer_value(json_object_get(bb, "bytes"));
        const json_t *lb = json_object_get(bb, "ledger_bytes");
        br->ledger_bytes = json_is_integer(lb) ? json_integer_value(lb) : -1;
    }
    return 0;
}

int ex_result_from_json(const char *text, struct ex_result *r, struct rl_err *e)
{
    memset(r, 0, sizeof *r);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!json_is_object(j)) {
        json_decref(j);
        return rl_errf(e, RL_EINVAL, "run record: not a JSON object (line %d: %s)", je.line, je.text);
    }
    int rc = get_keys(j, r, result_keys, RL_COUNT(result_keys), "", e);
    const char *be = json_string_value(json_object_get(j, "backend"));
    if (!rc && be && ex_backend_parse(be, &r->backend, e))
        rc = rl_err_prefix(e, "run record");
    const char *dg = json_string_value(json_object_get(j, "digest"));
    if (!rc && dg)
        r->digest = (uint32_t)strtoul(dg, NULL, 16);
    const json_t *dv = json_object_get(j, "deepspeed_version");   /* absent or null: no DeepSpeed step */
    if (!rc && dv && !json_is_null(dv)) {
        if (!json_is_string(dv))
            rc = rl_errf(e, RL_EINVAL, "run record: deepspeed_version: not a version text or null");
        else if (rl_parse_version("run record: deepspeed_version", json_string_value(dv), &r->ds_version, e))
            rc = RL_EINVAL;
        else
            r->ds_step = true;
    }
    const json_t *m = json_object_get(j, "measurement");
    r->critical_rank = (int)json_integer_value(json_object_get(m, "critical_rank"));
    const json_t *rk = json_object_get(j, "ranks");
    size_t n = json_array_size(rk);
    if (!rc && n > EX_MAX_WORLD)
        rc = rl_errf(e, RL_EINVAL, "run record: ranks: %zu ranks; at most %d", n, EX_MAX_WORLD);
    if (!rc && n && !(r->ranks = calloc(n, sizeof *r->ranks)))
        rc = rl_errf(e, RL_ENOMEM, "out of host memory");
    for (size_t k = 0; !rc && k < n; k++)
        rc = rank_from_json(json_array_get(rk, k), &r->ranks[k], (int)k, e);
    if (!rc && n && (r->critical_rank < 0 || (size_t)r->critical_rank >= n))
        rc = rl_errf(e, RL_EINVAL, "run record: measurement.critical_rank: %d; allowed: 0 to %zu", r->critical_rank,
                     n - 1);
    if (!rc && n)
        r->world = (int)n;
    json_decref(j);
    if (rc)
        ex_result_free(r);
    return rc;
}

json_t *ex_run_json(const char *model_desc, double scale, const struct ex_opts *o, const struct plan *p,
                    const struct ex_result *r)
{
    const struct ex_rank_result *cr = &r->ranks[r->critical_rank];
    json_t *j = json_object();
    json_object_set_new(j, "model", json_string(model_desc));
    json_object_set_new(j, "scale", json_real(scale));
    json_object_set_new(j, "schedule", json_string(step_schedule_name(o->schedule)));
    json_object_set_new(j, "compute", json_string(o->compute == EX_COMPUTE_GEMM ? "gemm" : "none"));
    json_object_set_new(j, "comm_dtype", json_string(kern_dtype_name(o->comm_dtype)));
    json_object_set_new(j, "policy", json_string(plan_policy_name(p->policy)));
    plan_json_ratio(j, p);
    json_object_set_new(j, "measured_ratio", json_real(cr->per_rank_numel ? (double)cr->host_placed_numel /
                                                                             (double)cr->per_rank_numel : 0.0));
    json_object_set_new(j, "per_rank_numel", json_integer(p->per_rank_numel));
    json_object_set_new(j, "cpu_numel", json_integer(p->cpu_numel));
    ex_result_json_put(j, r);
    return j;
}
