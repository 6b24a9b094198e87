/* plan/json_edit.h — edits of a JSON document's text that keep everything else byte for byte, so
 * that `check --fix-to` writes a config whose diff is the fix alone. jansson parses and writes
 * whole documents (its output is reformatted); these functions find a member by its key path in
 * the text itself and splice.
 *
 * The scanner follows RFC 8259 (strings with escapes, numbers, literals, nesting) on the text with
 * its comments and trailing commas blanked (plan/json_text.h: the same offsets), and splices the
 * text as written, so a commented config keeps its comments; a key on the
 * path is compared with the member's key as written between its quotes (the keys DeepSpeed uses
 * need no escapes). Cost: O(length of the text) per edit. */
#ifndef RL_PLAN_JSON_EDIT_H
#define RL_PLAN_JSON_EDIT_H

#include "common/rl.h"

/* Sets the member at path[0..n) to value (JSON text, written as given) in *text (malloc'd; replaced
 * by a new malloc'd text). An existing member's value is replaced in place; a missing one is
 * appended to the deepest object on the path that exists, wrapped in objects for the keys that
 * are missing, after its last member, with that member's indentation. RL_EINVAL when the text is
 * not JSON or a key on the path names something other than an object. */
int plan_json_text_set(char **text, const char *const *path, int n, const char *value, struct rl_err *e);

/* Removes the member at path[0..n) and the comma that separated it; nothing when it is absent. */
int plan_json_text_del(char **text, const char *const *path, int n, struct rl_err *e);

#endif
