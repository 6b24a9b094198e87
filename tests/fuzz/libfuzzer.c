/* tests/fuzz/libfuzzer.c — the libFuzzer entry point of one target, chosen at compile time with
 * -DRL_FUZZ_TARGET=<name> (see `make fuzz`). */
#include <stdio.h>
#include <stdlib.h>

#include "tests/fuzz_targets.h"

#define RL__STR2(x) #x
#define RL__STR(x) RL__STR2(x)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct rl_fuzz_target *t;
    if (!t && !(t = rl_fuzz_find(RL__STR(RL_FUZZ_TARGET)))) {
        fprintf(stderr, "no fuzz target '%s'\n", RL__STR(RL_FUZZ_TARGET));
        abort();
    }
    t->run(data, size);
    return 0;
}
