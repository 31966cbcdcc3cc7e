/* chat_ops.h — the chat prefix cache's property, as a driver over bytes: a byte string decodes
 * to a sequence of session operations, and the invariants are checked after every one. Shared by
 * the seeded property test (conformance/test_chat_cache.c) and the AFL++ harness (fuzz_chat). */
#ifndef PLUMB_CHAT_OPS_H
#define PLUMB_CHAT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "plumb.h"

/* The model the operations run on (it needs a tokenizer and a ChatML-style template that
 * writes message content verbatim); byte_level: 1 when its tokenizer is byte-level BPE, so
 * every text round-trips and "history text == conversation + delivered text" is checked
 * exactly. */
typedef struct chat_ops_model {
    const pl_model *m;
    int byte_level;
    int n_threads; /* of the sessions under test (the oracle session uses 1) */
    /* 1: the session under test runs its forward through a pl_forward_hook that relays to a
     * second session of the same params (chat_ops_relay); 2: the same relay with the planted
     * fault CHAT_RELAY_NO_TRUNCATE, which the invariants must catch. The oracle is plain. */
    int hook;
} chat_ops_model;

/* ---- a pl_forward_hook that relays to a second, plain session (the CPU forward through the
 * hook seam: its logits must be the plain session's bit for bit) ---- */
enum {
    CHAT_RELAY_NO_TRUNCATE = 1u, /* planted: truncate returns PL_OK and drops nothing */
    CHAT_RELAY_NO_POS_CHECK = 2u /* eval does not check pos0 against what the relay holds */
};
typedef struct chat_ops_relay {
    pl_session *inner;
    unsigned faults;
    /* > 0: the fail_eval-th eval call (counting from 1) fails with PL_ERR_IO; the same for
     * truncate. fail_status: that call's status instead (0: PL_ERR_IO); fail_msg: its message
     * ("" leaves err empty). */
    int64_t fail_eval, fail_truncate, n_eval, n_truncate;
    pl_status fail_status;
    const char *fail_msg;
    int64_t V;
    float *rows; /* scratch for logits rows [out0, n) when 0 < out0 < n - 1 */
    int64_t rows_cap;
} chat_ops_relay;
/* r->inner: a new plain session with sp's params (sp->forward ignored); *hook: the relay's
 * pl_forward_hook, named "relay". PL_OK or the session's error. */
pl_status chat_ops_relay_init(chat_ops_relay *r, pl_forward_hook *hook, const pl_model *m,
                              const pl_session_params *sp, pl_error *err);
void chat_ops_relay_free(chat_ops_relay *r);

/* Input layout: byte 0 the session configuration (context or sliding window, sinks, chunk,
 * KV type), then operations, each an opcode byte and its arguments (see chat_ops.c):
 * turn, edit an earlier byte, truncate, reset, raw pl_chat, overflow, pl_generate,
 * allocation failure during a turn, cancelled turn, pl_generate with raw (often invalid)
 * parameters. After every operation: (1) the history
 * text equals pl_detokenize(ids, SPECIAL | STRIP_PREFIX) and the KV cache holds exactly those
 * ids, (2) the next-token logits equal, bit for bit, those of a fresh session that evaluates
 * the ids; per turn, the path taken is the one the rules predict and nothing is lost on an
 * overflow. At the end both sessions generate on and must agree.
 * Returns 0 when everything held, else 1 with the reason (operation index included) in why. */
int chat_ops_run(const chat_ops_model *cm, const uint8_t *data, size_t size, char *why,
                 size_t why_cap);

/* runs random operation sequences: each of size 64..700 (from range(rng, 64, 700)) and bytes
 * from u64(rng) (the tests pass their tu_rng). Returns how many failed; stops at the first when
 * stop is set. The first failure's run index, size and reason go to *run, *size and why. */
int chat_ops_random(const chat_ops_model *cm, void *rng, int64_t (*range)(void *, int64_t, int64_t),
                    uint64_t (*u64)(void *), int runs, int stop, int *run, size_t *size, char *why,
                    size_t why_cap);

/* How many operations the last chat_ops_run executed (for test logs), and how many library
 * allocations its allocation-failure operations made fail. */
int chat_ops_last_count(void);
uint64_t chat_ops_alloc_failures(void);

#endif
