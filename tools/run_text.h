/* run_text.h — the text side of `plumb run`: prompt tokenization and streaming output.
 * Not generation: cmd_run.c drives the session; this only turns tokens into text. */
#ifndef PLUMB_TOOLS_RUN_TEXT_H
#define PLUMB_TOOLS_RUN_TEXT_H

#include "plumb.h"

typedef struct run_text run_text;

/* special: control tokens print as their text (--special); otherwise they print nothing.
 * stops: the generated text ends before the first of them (--stop). */
pl_status run_text_new(run_text **out, const pl_model *m, int special, const char *const *stops,
                       size_t n_stops, pl_error *err);
void run_text_free(run_text *t);
/* Tokenizes text (adding BOS when the model asks for it) into a malloc'd array. */
pl_status run_text_tokenize(run_text *t, const char *text, int32_t **out, int64_t *n,
                            pl_error *err);
pl_status run_text_tokenize_file(run_text *t, const char *path, int32_t **out, int64_t *n,
                                 pl_error *err);
/* --chat: the prompt (text, or the file's bytes when path is set) as the user message after an
 * optional system message, rendered with tmpl (NULL: the model's template) and the assistant's
 * opening, then tokenized with its control tokens parsed and no BOS added (the template writes
 * it). */
pl_status run_text_tokenize_chat(run_text *t, const pl_chat_template *tmpl, const char *system,
                                 const char *text, const char *path, int32_t **out, int64_t *n,
                                 pl_error *err);
/* Prints the prompt (as text when there is a tokenizer, as ids otherwise). */
pl_status run_text_echo_prompt(run_text *t, const int32_t *tok, int64_t n, pl_error *err);
/* Prints one generated token as it comes (never half a UTF-8 character). */
pl_status run_text_emit(run_text *t, int32_t tok, pl_error *err);
/* 1 once a stop string appeared in the generated text (it was not printed). */
int run_text_stopped(const run_text *t);
/* 1 if tok ends generation (EOS/EOT). */
int run_text_is_eog(const run_text *t, int32_t tok);
/* Flushes what the streaming decoder holds back, and a final newline. */
void run_text_finish(run_text *t);

#endif
