/* campaign/calib_out.h — what `ratiolab calibrate` writes that needs more than calib/ may include:
 * a profile written where --out says once it loads as `--hw FILE` will load it (sim/hw.h's
 * reader), and `calibrate --host-baseline-from RUN.csv`'s profile, whose per-rank host baseline
 * comes from a `ratiolab monitor --csv` file (validation/'s reader) of a real run of a resolved
 * setup (calib/baseline.h computes it). Never prints; errors name the field (`hw`, `name`,
 * `output`, `monitor_csv`) for the caller to put its flags in place of. */
#ifndef RL_CAMPAIGN_CALIB_OUT_H
#define RL_CAMPAIGN_CALIB_OUT_H

#include <stdint.h>

#include "calib/baseline.h"
#include "common/rl.h"
#include "plan/inputs.h"

/* Parses text as a profile (sim_hw_parse, `what` = out: the check that it loads as it will be
 * used), then writes it and a newline to out atomically (rl_outfile); nothing is written on an
 * error. A text that does not load is an error beginning "calibrate: the written profile does not
 * load". */
int camp_profile_write(const char *text, const char *out, struct rl_err *e);

/* `calibrate --host-baseline-from`: the run and the profile to write over. */
struct camp_baseline_request {
    const char *csv;                    /* the monitor CSV of the run */
    const struct plan_setup *setup;     /* the run's model, layout and DeepSpeed config, resolved */
    const char *hw;                     /* the profile written over: a catalog name or a file */
    const char *name;                   /* the written profile's name; NULL: <the hw profile's name>-baseline */
    const char *out;                    /* its file; NULL: <name>.json */
};
/* What was written, for the caller's lines. */
struct camp_baseline {
    struct calib_baseline b;            /* the baseline and the rank it came from */
    int64_t tensor_bytes;               /* the host tensors per rank the run's ledger holds (subtracted) */
    char what[400];                     /* the run as the profile's source names it (model, offload, ratio) */
    char hw_name[128];                  /* the name of the profile written over */
    int64_t hw_baseline_bytes;          /* that profile's node.host_baseline_bytes_per_rank */
    char out[4096];                     /* the file written */
};
/* Loads the hw profile (field "hw"), checks the name (printable, "name") and the output path
 * ("output") before reading anything else, reads the CSV (validation/monitor_csv.c, "monitor_csv"),
 * takes the setup's host tensors per rank off each rank's peak (calib_baseline_of: a run whose
 * processes carry no rank counts its largest process) and writes the hw profile with the
 * baseline and its source (camp_profile_write). Nothing is written on an error. */
int camp_host_baseline(const struct camp_baseline_request *q, struct camp_baseline *r, struct rl_err *e);

#endif
