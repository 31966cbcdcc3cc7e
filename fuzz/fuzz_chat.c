/* fuzz_chat.c — harness: the chat prefix-cache state machine. The input is decoded into a
 * sequence of session operations on the tiny model (conformance/chat_ops.c) with the cache's
 * invariants as the oracle after every one and a differential run against a fresh session at
 * the end. Not a parser fuzzer: the model and vocabulary are fixed.
 *
 * Input: byte 0 the session (bit 0 sliding window, bits 1-2 its size, bit 3 F32 KV, bits 4-7
 * chunk and sinks), then operations: an opcode byte (% 9: turn, edit, truncate, reset, raw
 * chat, overflow, generate, allocation failure, cancel) and its argument bytes (user text,
 * max tokens, stop strings, sampler mode and seed...). Oracles: chat_ops.h. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "chat_ops.h"
#include "fuzz.h"
#include "mkmodel.h"

#define MAX_INPUT 2048 /* longer inputs add time, not states */

static pl_model *model;

void fuzz_init(void)
{
    mk_config c;
    FUZZ_CHECK(mk_preset("tiny", &c) == 0, "no tiny preset");
    /* Smaller than the preset (the state machine, not the arithmetic, is under test): one
     * layer, grouped-query attention kept. */
    c.n_embd = 64;
    c.n_layer = 1;
    c.n_head = 2;
    c.n_head_kv = 1;
    c.head_dim = 32;
    c.n_ff = 64;
    c.vocab = DEMO_VOCAB_BPE;
    c.ftype = PL_FTYPE_Q8_0;
    c.n_threads = 1;
    c.seed = 7;
    char path[] = "/tmp/plumb-fuzz-chat-XXXXXX";
    int fd = mkstemp(path);
    FUZZ_CHECK(fd >= 0, "mkstemp");
    close(fd);
    pl_error e = {0};
    pl_status s = mk_write(&c, path, NULL, NULL, NULL, &e);
    if (!s) s = pl_model_load(&model, path, NULL, &e);
    remove(path);
    FUZZ_CHECK(s == PL_OK, "tiny model: %s", e.msg);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    if (size > MAX_INPUT) size = MAX_INPUT;
    chat_ops_model cm = {.m = model, .byte_level = 1, .n_threads = 1};
    char why[512];
    int bad = chat_ops_run(&cm, data, size, why, sizeof why);
    FUZZ_CHECK(!bad, "%s", why);
}
