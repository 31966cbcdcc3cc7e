/* chat_template.h — what chat.c shares with chat_template.c: rendering a conversation held as a
 * jansson object. Internal; the public calls are in plumb.h. */
#ifndef PLUMB_CHAT_TEMPLATE_H
#define PLUMB_CHAT_TEMPLATE_H

#include <jansson.h>

#include "core/core.h"

/* Parses a conversation (an object with a "messages" array); *out is a new reference. */
pl_status pl_chat_parse_conversation(const char *json, size_t len, json_t **out, pl_error *err);
/* Renders n messages of role and content (bytes that are not UTF-8 kept as they are) with t, or
 * the model's template when t is NULL. *out is pl_malloc'd and NUL-terminated. */
pl_status pl_chat_render_messages(const pl_model *m, const pl_chat_template *t,
                                  const pl_chat_message *msgs, size_t n, int add_gen, char **out,
                                  size_t *out_len, pl_error *err);
/* Renders ctx (modified: add_generation_prompt, bos_token, eos_token, tools, documents set) with
 * t, or the model's template when t is NULL. *out is pl_malloc'd and NUL-terminated. */
pl_status pl_chat_render_ctx(const pl_model *m, const pl_chat_template *t, json_t *ctx, int add_gen,
                             char **out, size_t *out_len, pl_error *err);

#endif
