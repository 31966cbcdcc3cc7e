/* template.h — built-in chat template renderers (internal): each reproduces one family's
 * template by hand, an explicit override of the model's own. Not the Jinja engine (engine/jinja).
 */
#ifndef PLUMB_TEMPLATE_H
#define PLUMB_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* The built-in names, for messages. */
#define PL_CHAT_BUILTIN_NAMES "chatml, qwen2, qwen2.5, llama3, llama2, mistral"

/* Renders msgs with the template called name (one of pl_chat_template_names()). bos/eos are the
 * texts the template's bos_token/eos_token stand for; NULL selects the family's usual text
 * ("<s>", "</s>", "<|begin_of_text|>"). Buffer contract as pl_chat_render. */
pl_status pl_chat_render_named(const char *name, const char *bos, size_t bos_len, const char *eos,
                               size_t eos_len, const pl_chat_message *msgs, size_t n,
                               int add_generation_prompt, char *buf, size_t cap, size_t *n_out,
                               pl_error *err);

/* FNV-1a 64 of n bytes: how template.c names the exact sources each built-in is proven on. */
uint64_t pl_chat_template_fnv(const char *p, size_t n);

#endif
