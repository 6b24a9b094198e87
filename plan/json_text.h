/* plan/json_text.h — the text of a DeepSpeed config as DeepSpeed's reader (hjson) takes it, for
 * jansson.
 *
 * DeepSpeed reads a config file with hjson (runtime/config.py `hjson.load`), which takes comments
 * (`//`, `#`, `/ * ... * /`) and trailing commas besides JSON. plan_json_relax blanks them: each
 * comment and each trailing comma becomes spaces (newlines stay), so the result has the same
 * length and every offset in it is an offset in the original text: a reader parses the blanked
 * copy, and `check --fix-to` finds a member's offsets in it and splices the user's own text,
 * comments included. The rest of hjson (quoteless keys and strings, ''' multi-line strings,
 * single-quoted strings, members separated by a newline alone) is not read: the readers refuse
 * it naming the construct (plan_json_relax for the quoted ones, the config reader for the
 * quoteless ones). Pure text: no jansson. */
#ifndef RL_PLAN_JSON_TEXT_H
#define RL_PLAN_JSON_TEXT_H

#include <stddef.h>

#include "common/rl.h"

/* *out: a malloc'd copy of text with comments and trailing commas blanked (same length). Returns 0,
 * RL_EINVAL naming the line and the construct (an unterminated block comment, a single-quoted
 * or ''' multi-line string), or RL_ENOMEM. *out is NULL on error. *blanked (when not NULL): how
 * many comments and trailing commas were blanked. O(length). */
int plan_json_relax(const char *text, char **out, int *blanked, struct rl_err *e);

#endif
