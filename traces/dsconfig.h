/* traces/dsconfig.h — the configuration a DeepSpeed run printed in its log, so a log can be checked
 * against the config it is validated with (and a config given by nobody can be taken from it).
 *
 * DeepSpeed logs, on rank 0, at engine start (runtime/engine.py, runtime/config.py print):
 *   [time] [INFO] [logging.py:N:log_dist] [Rank 0] DeepSpeed info: version=0.14.1, git-hash=...
 *   [time] [INFO] [config.py:N:print] DeepSpeedEngine configuration:
 *   [time] [INFO] [config.py:N:print]   bfloat16_enabled ............. True
 *   [time] [INFO] [config.py:N:print]   zero_config .................. stage=3 ... reduce_bucket_size=500000000
 *       ... sub_group_size=1000 ... offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu',
 *       ... pin_memory=True, ..., ratio=0.3) ...
 * and, at import, `[real_accelerator.py:N:get_accelerator] Setting ds_accelerator to cpu (override)`
 * (0.19 writes the bf16 flag as `bfloat16_config ... enabled=True ...` and the device as
 * `device=<OffloadDeviceEnum.cpu: 'cpu'>`). The zero_config line is the repr of DeepSpeed's
 * pydantic model: `name=value` pairs separated by spaces, nested models in parentheses with
 * `, ` between pairs. Only the first engine configuration of a log is read. */
#ifndef RL_TRACES_DSCONFIG_H
#define RL_TRACES_DSCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/rl.h"

struct trace_ds_config {
    bool have_version;             /* a "DeepSpeed info: version=" line was found */
    struct rl_version version;     /* its version */
    int version_line;              /* 1-based line, 0 when absent */
    bool have_zero;                /* a "zero_config ...." line was found */
    int zero_line;                 /* 1-based line, 0 when absent */
    int stage;                     /* zero_config stage=, -1 when absent */
    int64_t sub_group_size;        /* sub_group_size=, -1 when absent */
    int64_t reduce_bucket_size;    /* reduce_bucket_size=, -1 when absent */
    int64_t prefetch_bucket_size;  /* prefetch_bucket_size= (stage3_prefetch_bucket_size), -1 when absent */
    char offload_device[16];       /* offload_optimizer's device ("cpu", "nvme", "none"); "none" when
                                      offload_optimizer=None; "" when absent */
    bool have_ratio;               /* offload_optimizer's ratio= was found */
    double ratio;                  /* that ratio */
    int pin_memory;                /* offload_optimizer's pin_memory: 1, 0, -1 when absent */
    char dtype[8];                 /* "bf16", "fp16", "fp32" from the engine's flags, "" when absent */
    int64_t world_size;            /* world_size ...., -1 when absent */
    char accelerator[16];          /* "Setting ds_accelerator to cpu (...)": the accelerator, "" when absent */
};

/* Reads the configuration lines of a DeepSpeed log (plain or gzip). A log without any of them
 * gives have_version and have_zero false (not an error). A zero_config line whose known fields
 * do not parse is RL_EINVAL naming the file, line and field. O(log size). */
int trace_ds_config_read(const char *path, struct trace_ds_config *c, struct rl_err *e);
/* The same on text in memory (len bytes); path names it in errors. */
int trace_ds_config_parse(const char *text, size_t len, const char *path, struct trace_ds_config *c,
                          struct rl_err *e);

/* One run of a log: a log may hold several, appended one after the other (a script rerun with
 * `>>`). A run starts at its engine's "DeepSpeed info: version=" line, or at a zero_config line
 * when the run before already printed one (a log without version lines); the text before the
 * first start belongs to the first run. A stretch holding neither line (a rank's late import
 * printing the accelerator line again) stays in the run before it. */
struct trace_ds_run {
    size_t offset;                 /* its first byte in the log's text */
    size_t len;                    /* its bytes */
    int first_line;                /* the 1-based line it starts at */
};
/* Splits text (len bytes) into runs; *runs is malloc'd (at least one entry: the whole text). O(len). */
int trace_ds_split_runs(const char *text, size_t len, const char *path, struct trace_ds_run **runs, int *n,
                        struct rl_err *e);
/* True when two runs' configurations are one: the same version, zero config, dtype, world size and
 * accelerator (the lines they were read from aside). */
bool trace_ds_config_same(const struct trace_ds_config *a, const struct trace_ds_config *b);

#endif
