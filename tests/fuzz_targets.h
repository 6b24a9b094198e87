/* tests/fuzz_targets.h — one entry point per parser, fed arbitrary bytes: by libFuzzer in
 * `make fuzz` (tests/fuzz/libfuzzer.c) and by `make test`, which replays every saved input under
 * tests/fuzz/regressions/<target>/ (tests/check_fuzz.c). A target returns normally for any input;
 * a crash, a sanitizer report or a leak is the finding. */
#ifndef RL_TESTS_FUZZ_TARGETS_H
#define RL_TESTS_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

struct rl_fuzz_target {
    const char *name;                              /* folder name under tests/fuzz/ */
    const char *what;                              /* the parser, for reports */
    void (*run)(const uint8_t *data, size_t size); /* parses data as that input */
};

extern const struct rl_fuzz_target rl_fuzz_targets[];
extern const int rl_fuzz_n_targets;
const struct rl_fuzz_target *rl_fuzz_find(const char *name);

#endif
