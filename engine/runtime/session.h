/* session.h — what generation and the chat cache (generate.c, chat.c) need of a session beyond
 * the public API. Not public; the session itself lives in forward.c. */
#ifndef PLUMB_SESSION_H
#define PLUMB_SESSION_H

#include "history.h"
#include "model.h"

const pl_model *pl_session_model(const pl_session *s);
const pl_history *pl_session_hist(const pl_session *s);
/* PL_OK when n more tokens fit after the first keep held ones (PL_ERR_CONTEXT_FULL
 * otherwise); and whether the cache can be truncated to keep (PL_ERR_INVALID_ARG when a
 * sliding window evicted what that needs). Change nothing. */
pl_status pl_session_check_room(const pl_session *s, int64_t keep, int64_t n, pl_error *err);
pl_status pl_session_check_truncate(const pl_session *s, int64_t keep, pl_error *err);

/* Validates generation parameters (generate.c); pl_chat calls it before it changes anything. */
pl_status pl_gen_check(const pl_gen_params *p, pl_error *err);

#endif
