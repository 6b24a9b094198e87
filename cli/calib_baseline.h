/* cli/calib_baseline.h — `ratiolab calibrate --host-baseline-from RUN.csv` (cli/calib_baseline.c). */
#ifndef RL_CLI_CALIB_BASELINE_H
#define RL_CLI_CALIB_BASELINE_H

#include <stdbool.h>

/* argv (a calibrate command line) asks for --host-baseline-from. */
bool cli_calib_baseline_asked(int argc, char **argv);
/* The whole command: parses argv, writes the profile, prints; returns the exit code. */
int cli_calib_baseline(int argc, char **argv);

#endif
