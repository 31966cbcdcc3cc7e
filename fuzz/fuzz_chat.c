/* fuzz_chat.c — harness: the chat prefix-cache state machine. The input is decoded into a
 * sequence of session operations on the tiny model (conformance/chat_ops.c) with the cache's
 * invariants as the oracle after every one and a differential run against a fresh session at
 * the end. Not a parser fuzzer: the model and vocabulary are fixed.
 *
 * Input: byte 0 the session (bit 0 sliding window, bits 1-2 its size, bit 3 F32 KV, bits 4-7
 * chunk and sinks), then operations: an opcode byte (% 10: turn, edit, truncate, reset, raw
 * chat, overflow, generate, allocation failure, cancel, raw parameters) and its argument bytes
 * (user text, max tokens, stop strings, sampler mode and seed...). Oracles: chat_ops.h. */
#include <stdio.h>
#include <stdlib.h>

#include "chat_ops.h"
#include "fuzz.h"
#include "mkmodel.h"

#define MAX_INPUT 2048 /* longer inputs add time, not states */

static pl_model *model;

void fuzz_init(void)
{
    /* The state machine is under test, not the arithmetic (grouped-query attention kept). */
    pl_error e = {0};
    FUZZ_CHECK(mk_load_tiny(DEMO_VOCAB_BPE, PL_FTYPE_Q8_0, 1, &model, &e) == PL_OK,
               "tiny model: %s", e.msg);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) size = MAX_INPUT;
    chat_ops_model cm = {.m = model, .byte_level = 1, .n_threads = 1};
    char why[512];
    int bad = chat_ops_run(&cm, data, size, why, sizeof why);
    FUZZ_CHECK(!bad, "%s", why);
}
