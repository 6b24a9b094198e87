/* exec/backends.c — the backends of this build in one array (see backend.h). */
#include <string.h>

#include "exec/backend.h"

const struct ex_backend *const ex_backends[] = {
    &ex_backend_cpu,
#ifdef RL_EX_CUDA
    &ex_backend_cuda,
#endif
};
const int ex_n_backends = (int)(sizeof ex_backends / sizeof ex_backends[0]);

const struct ex_backend *ex_backend_named(const char *name)
{
    for (int i = 0; name && i < ex_n_backends; i++)
        if (strcmp(ex_backends[i]->name, name) == 0)
            return ex_backends[i];
    return NULL;
}
