/* traces/schema.h — one key table per file format that ratiolab writes and reads back beside its
 * traces: the monitor's CSV (`ratiolab monitor --csv`, written by monitor/, read by validation/,
 * calibrate --host-baseline-from and plots/), the sweep's CSV and JSON (`ratiolab sweep`, read by
 * plots/) and tune's JSON (`ratiolab tune --json`, read by the tests). A writer names each field
 * through its table and every reader finds it by the same name, so a column or key is added,
 * renamed or moved in one place. Also the one CSV splitter (RFC 4180 quoting) and the lookup of
 * columns by header name the readers share. Names only: no value is read or written here. */
#ifndef RL_TRACES_SCHEMA_H
#define RL_TRACES_SCHEMA_H

#include <stdio.h>

#include "common/rl.h"   /* RL_KEY_REQUESTED_RATIO, RL_KEY_HONORED_RATIO: the two ratio keys */

#define TRACE__ENUM(id, name) id,

/* ---- monitor --csv: one row per followed process per sample ----------------------------------- */
#define TRACE_MON_COLS(X)                                                                            \
    X(TRACE_MON_T_NS, "t_ns")               /* sample time since the monitor started, ns */          \
    X(TRACE_MON_TIME_UTC, "time_utc")       /* wall clock, ISO 8601 UTC with ms (empty: unknown) */  \
    X(TRACE_MON_PID, "pid")                                                                          \
    X(TRACE_MON_PPID, "ppid")                                                                        \
    X(TRACE_MON_COMM, "comm")               /* the only text column that may need quoting */         \
    X(TRACE_MON_RANK, "rank")               /* RANK or OMPI_COMM_WORLD_RANK, -1 none */              \
    X(TRACE_MON_RSS, "rss_bytes")                                                                    \
    X(TRACE_MON_ANON, "anon_bytes")                                                                  \
    X(TRACE_MON_FILE, "file_bytes")                                                                  \
    X(TRACE_MON_SHMEM, "shmem_bytes")                                                                \
    X(TRACE_MON_HWM, "hwm_bytes")           /* VmHWM, the peak resident set */                       \
    X(TRACE_MON_LOCKED, "locked_bytes")                                                              \
    X(TRACE_MON_PINNED, "pinned_bytes")                                                              \
    X(TRACE_MON_SWAP, "swap_bytes")                                                                  \
    X(TRACE_MON_GPU, "gpu_bytes")           /* empty: unknown (status says why) */                   \
    X(TRACE_MON_CPU, "cpu_percent")                                                                  \
    X(TRACE_MON_THREADS, "threads")                                                                  \
    X(TRACE_MON_SYSTEM_USED, "system_used_bytes") /* empty: unknown */                               \
    X(TRACE_MON_STATUS, "status")           /* "ok", or why a column is empty */
enum trace_mon_col { TRACE_MON_COLS(TRACE__ENUM) TRACE_MON_N };
extern const char *const trace_mon_cols[TRACE_MON_N];

/* ---- sweep --csv: comment lines "# key: value" naming what the rows are of, then one row per
 * ratio; the fixed columns below, then per phase of the step "<phase>_busy_s,<phase>_exposed_s"
 * (TRACE_SWEEP_PHASE_BUSY, _EXPOSED), then "idle_s" --------------------------------------------- */
#define TRACE_SWEEP_COLS(X)                                                                          \
    X(TRACE_SWEEP_REQUESTED, RL_KEY_REQUESTED_RATIO)                                                 \
    X(TRACE_SWEEP_HONORED, RL_KEY_HONORED_RATIO)                                                     \
    X(TRACE_SWEEP_GPU_BYTES, "gpu_bytes")   /* one rank's GPU memory */                              \
    X(TRACE_SWEEP_GPU_GIB, "gpu_gib")                                                                \
    X(TRACE_SWEEP_HOST_NODE_BYTES, "host_node_bytes")                                                \
    X(TRACE_SWEEP_HOST_NODE_GIB, "host_node_gib")                                                    \
    X(TRACE_SWEEP_STEP_S, "step_s")                                                                  \
    X(TRACE_SWEEP_FITS, "fits")             /* "yes" or "no" */                                      \
    X(TRACE_SWEEP_TOKENS, "tokens_per_s_per_gpu")
enum trace_sweep_col { TRACE_SWEEP_COLS(TRACE__ENUM) TRACE_SWEEP_N };
extern const char *const trace_sweep_cols[TRACE_SWEEP_N];
#define TRACE_SWEEP_PHASE_BUSY "%s_busy_s"       /* printf format of a phase's busy column */
#define TRACE_SWEEP_PHASE_EXPOSED "%s_exposed_s" /* and of its exposed column */
#define TRACE_SWEEP_IDLE "idle_s"                /* the last column */

/* ---- sweep --json: the top-level keys (after "schema_version"), then "rows", each row an object
 * of the row keys with the prediction (sim/step_json.c) under "prediction"; the CSV's comment keys
 * are the top-level keys of the same name ---------------------------------------------------------- */
#define TRACE_SWEEP_KEYS(X)                                                                          \
    X(TRACE_SWEEP_K_MODEL, "model")                                                                  \
    X(TRACE_SWEEP_K_HARDWARE, "hardware")                                                            \
    X(TRACE_SWEEP_K_SCHEDULE, "schedule")                                                            \
    X(TRACE_SWEEP_K_POLICY, "policy")                                                                \
    X(TRACE_SWEEP_K_DS_VERSION, "deepspeed_version")                                                 \
    X(TRACE_SWEEP_K_OFFLOAD, "offload_optimizer")                                                    \
    X(TRACE_SWEEP_K_ATTENTION, "attention")                                                          \
    X(TRACE_SWEEP_K_ATTENTION_ORIGIN, "attention_origin")                                            \
    X(TRACE_SWEEP_K_GPUS, "gpus")                                                                    \
    X(TRACE_SWEEP_K_TP, "tp")                                                                        \
    X(TRACE_SWEEP_K_PP, "pp")                                                                        \
    X(TRACE_SWEEP_K_RANK_NUMEL, "rank_numel")                                                        \
    X(TRACE_SWEEP_K_ROWS, "rows")                                                                    \
    X(TRACE_SWEEP_K_REQUESTED, RL_KEY_REQUESTED_RATIO) /* a row's */                                 \
    X(TRACE_SWEEP_K_HONORED, RL_KEY_HONORED_RATIO)                                                   \
    X(TRACE_SWEEP_K_CPU_NUMEL, "cpu_numel")                                                          \
    X(TRACE_SWEEP_K_PREDICTION, "prediction")                                                        \
    /* the CSV's comments only */                                                                    \
    X(TRACE_SWEEP_K_SEQ_LEN, "seq_len")                                                              \
    X(TRACE_SWEEP_K_MICRO_BATCH, "micro_batch")                                                      \
    X(TRACE_SWEEP_K_SETTINGS, "settings")
enum trace_sweep_key { TRACE_SWEEP_KEYS(TRACE__ENUM) TRACE_SWEEP_K_N };
extern const char *const trace_sweep_keys[TRACE_SWEEP_K_N];
/* The CSV's "# key: value" comments, as the sweep writes them: the sweep JSON's key of the same
 * fact for those both carry, so a reader takes the same name from either. */
#define TRACE_SWEEP_COMMENT "# %s: "

/* ---- tune --json: the top level (after "schema_version"), a choice ("answer", "best_with_offload",
 * "best_exact"), a class of candidates ("classes"), what would make it fit ("fits_with"); the
 * DeepSpeed config block ("deepspeed_config") is DeepSpeed's schema, not listed ----------------------- */
#define TRACE_TUNE_KEYS(X)                                                                           \
    X(TRACE_TUNE_MODEL, "model")                                                                     \
    X(TRACE_TUNE_SEQ_LEN, "seq_len")                                                                 \
    X(TRACE_TUNE_DTYPE, "dtype")                                                                     \
    X(TRACE_TUNE_DTYPE_ORIGIN, "dtype_origin")                                                       \
    X(TRACE_TUNE_HARDWARE, "hardware")                                                               \
    X(TRACE_TUNE_GPUS_PER_NODE, "gpus_per_node")                                                     \
    X(TRACE_TUNE_GPU_MEM_BYTES, "gpu_mem_bytes")                                                     \
    X(TRACE_TUNE_HEADROOM_BYTES, "headroom_bytes")                                                   \
    X(TRACE_TUNE_RESERVE, "reserve")                                                                 \
    X(TRACE_TUNE_SCHEDULE, "schedule")                                                               \
    X(TRACE_TUNE_POLICY, "policy")                                                                   \
    X(TRACE_TUNE_ATTENTION, "attention")                                                             \
    X(TRACE_TUNE_ATTENTION_ORIGIN, "attention_origin")                                               \
    X(TRACE_TUNE_CANDIDATES, "candidates")                                                           \
    X(TRACE_TUNE_SIMULATED, "simulated")                                                             \
    X(TRACE_TUNE_ANSWER, "answer")                                                                   \
    X(TRACE_TUNE_DS_CONFIG, "deepspeed_config")                                                      \
    X(TRACE_TUNE_BEST_WITH_OFFLOAD, "best_with_offload")                                             \
    X(TRACE_TUNE_BEST_EXACT, "best_exact")                                                           \
    X(TRACE_TUNE_UNHONORED, "unhonored_ratios")   /* not under the exact policy */                   \
    X(TRACE_TUNE_MIN_GPU_BYTES, "min_gpu_bytes")                                                     \
    X(TRACE_TUNE_HOST_MEM_BYTES, "host_mem_bytes")                                                   \
    X(TRACE_TUNE_CLASSES, "classes")                                                                 \
    X(TRACE_TUNE_PROFILES, "profiles")            /* --hw a,b: one object above per profile */       \
    /* a choice */                                                                                   \
    X(TRACE_TUNE_C_OFFLOAD, "offload")                                                               \
    X(TRACE_TUNE_C_REQUESTED, RL_KEY_REQUESTED_RATIO)                                                \
    X(TRACE_TUNE_C_HONORED, RL_KEY_HONORED_RATIO)                                                    \
    X(TRACE_TUNE_C_MICRO_BATCH, "micro_batch")                                                       \
    X(TRACE_TUNE_C_GRAD_ACCUM, "grad_accum")                                                         \
    X(TRACE_TUNE_C_CKPT, "checkpoint_activations")                                                   \
    X(TRACE_TUNE_C_SUB_GROUP_SIZE, "sub_group_size")                                                 \
    X(TRACE_TUNE_C_SUB_GROUPS, "sub_groups")                                                         \
    X(TRACE_TUNE_C_TOKENS_GPU, "tokens_per_s_per_gpu")                                               \
    X(TRACE_TUNE_C_TOKENS_NODE, "tokens_per_s_per_node")                                             \
    X(TRACE_TUNE_C_FREE_GPU_BYTES, "free_gpu_bytes")                                                 \
    X(TRACE_TUNE_C_HOST_NODE_BYTES, "host_node_bytes")                                               \
    X(TRACE_TUNE_C_HOST_TOTAL_NODE_BYTES, "host_total_node_bytes")                                   \
    X(TRACE_TUNE_C_PREDICTION, "prediction")                                                         \
    /* a class */                                                                                    \
    X(TRACE_TUNE_K_CLASS, "class")                                                                   \
    X(TRACE_TUNE_K_CANDIDATES, "candidates")                                                         \
    X(TRACE_TUNE_K_RATIO_MIN, "ratio_min")                                                           \
    X(TRACE_TUNE_K_RATIO_MAX, "ratio_max")                                                           \
    X(TRACE_TUNE_K_GPU_FIT, "gpu_fit")                                                               \
    X(TRACE_TUNE_K_HOST_FIT, "host_fit")                                                             \
    X(TRACE_TUNE_K_FIT, "fit")                                                                       \
    X(TRACE_TUNE_K_BINDS, "binds")                                                                   \
    X(TRACE_TUNE_K_MIN_GPU_BYTES, "min_gpu_bytes")                                                   \
    X(TRACE_TUNE_K_MIN_GPU_BYTES_HOST_FITS, "min_gpu_bytes_host_fits")                               \
    X(TRACE_TUNE_K_MIN_HOST_TOTAL, "min_host_total_node_bytes")                                      \
    X(TRACE_TUNE_K_MIN_HOST_TOTAL_GPU_FITS, "min_host_total_node_bytes_gpu_fits")                    \
    X(TRACE_TUNE_K_BEST_TOKENS, "best_tokens_per_s_per_gpu")                                         \
    X(TRACE_TUNE_K_FITS_WITH, "fits_with")                                                           \
    /* what would make a class fit */                                                                \
    X(TRACE_TUNE_F_GPU_MEM_BYTES, "gpu_mem_bytes")                                                   \
    X(TRACE_TUNE_F_HOST_MEM_BYTES, "host_mem_bytes")                                                 \
    X(TRACE_TUNE_F_BOTH, "gpu_and_host_mem")                                                         \
    X(TRACE_TUNE_F_GPUS, "gpus")                                                                     \
    X(TRACE_TUNE_F_DP, "dp")                                                                         \
    X(TRACE_TUNE_F_NODES, "nodes")
enum trace_tune_key { TRACE_TUNE_KEYS(TRACE__ENUM) TRACE_TUNE_N };
extern const char *const trace_tune_keys[TRACE_TUNE_N];
/* The object each key belongs to: 't' top level, 'c' a choice, 'k' a class, 'f' fits_with (its
 * "gpu_and_host_mem" object holds the 'f' keys gpu_mem_bytes and host_mem_bytes again). */
char trace_tune_key_object(enum trace_tune_key k);

/* ---- CSV ----------------------------------------------------------------------------------------- */
/* The header line of a table of n names: the names joined by commas, and a newline. */
void trace_csv_header(FILE *f, const char *const *names, int n);
/* One row of n cells, each quoted (RFC 4180: in double quotes, a quote doubled) when it holds a
 * comma, a quote or a line break; NULL cells are empty. Ends the line. */
void trace_csv_row(FILE *f, const char *const *cells, int n);
/* Splits one line in place into at most max fields (RFC 4180 quoting undone). Returns the fields,
 * or -1 when the line has more than max or a quoted field is not closed. */
int trace_csv_split(char *line, char **f, int max);
/* The index in the header fields hdr[0..nf) of each of n names, in col[]: -1 for one that is not
 * there. Returns the first name missing (NULL: none). */
const char *trace_csv_columns(char *const *hdr, int nf, const char *const *names, int n, int *col);

#endif
