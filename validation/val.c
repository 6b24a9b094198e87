/* validation/val.c — verdict names and small statistics shared by the checks. */
#include <stdlib.h>
#include <string.h>

#include "validation/val.h"

const char *val_status_name(enum val_status s)
{
    switch (s) {
    case VAL_PASS: return "PASS";
    case VAL_FAIL: return "FAIL";
    case VAL_INFO: return "info";
    }
    return "?";
}

