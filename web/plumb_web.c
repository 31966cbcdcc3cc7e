/* plumb_web.c — the C side of the browser engine module (web/plumb-engine.mjs): flat calls over
 * plumb.h that JS reaches with ccall. Not a second engine API: each call is plumb.h's own. */
#include <emscripten.h>
#include <jansson.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plumb.h"
#include "registry.h"

/* Every call below that can fail returns pl_status and fills the pl_error JS allocated once
 * (pw_error_size bytes); JS throws Error(pw_error_msg(err)). Strings that JS must read and
 * free (JSON) are malloc'd; JS frees them with free(). 64-bit values cross as doubles. */
EMSCRIPTEN_KEEPALIVE size_t pw_error_size(void)
{
    return sizeof(pl_error);
}
EMSCRIPTEN_KEEPALIVE const char *pw_error_msg(const pl_error *e)
{
    return e->msg;
}

static pl_status fail(pl_error *err, pl_status code, const char *msg)
{
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return code;
}

/* The webgpu backend's forward (web/gpu-worker.js, through plumb-engine.mjs's channel): evaluates
 * n ids at positions [pos0, pos0 + n) in the GPU Worker and, when logits is non-zero, writes the
 * rows of tokens [out0, n) there (n - out0 <= the channel's rows); truncate keeps the first n
 * positions. Both block this thread (Atomics.wait) until the GPU Worker answers: only the threads
 * variants, in a cross-origin isolated page, have the SharedArrayBuffer this needs. They return 0,
 * or a pl_status with its reason written into msg (cap bytes, NUL-terminated). */
EM_JS(int, pw_js_gpu_eval,
      (int id, const int32_t *ids, int n, double pos0, float *logits, int out0, char *msg, int cap),
      {
          return Module["plumbGpuEval"](id, ids >>> 0, n, pos0, logits >>> 0, out0, msg >>> 0, cap);
      });
EM_JS(int, pw_js_gpu_truncate, (int id, double n, char *msg, int cap),
      { return Module["plumbGpuTruncate"](id, n, msg >>> 0, cap); });

/* Streams one piece of text to the JS chat whose id is given; nonzero cancels. */
EM_JS(int, pw_js_on_text, (int id, const char *text, size_t len),
      { return Module["plumbOnText"](id, text >>> 0, len >>> 0); });

/* The compiled kernel sets and whether this engine runs each: [{"name", "supported"}]. */
EMSCRIPTEN_KEEPALIVE char *pw_kernel_sets_json(void)
{
    json_t *a = json_array();
    for (int i = 0; a && i < pl_kernel_set_count(); i++) {
        const struct pl_kernels *k = pl_kernel_set(i);
        json_array_append_new(a, json_pack("{s:s, s:b}", "name", k->name, "supported",
                                           k->supported ? k->supported() : 1));
    }
    char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return s;
}

/* data: size bytes the caller wrote into the heap; they must outlive the model. kernels NULL
 * or "": the best set this engine runs. */
EMSCRIPTEN_KEEPALIVE pl_status pw_model_load(pl_model **out, const void *data, double size,
                                             const char *kernels, pl_error *err)
{
    pl_model_params mp = {0};
    mp.kernels = kernels && *kernels ? kernels : NULL;
    return pl_model_load_memory(out, data, (size_t)size, &mp, err);
}

EMSCRIPTEN_KEEPALIVE void pw_model_free(pl_model *m)
{
    pl_model_free(m);
}

/* {arch, nParams, nCtxTrain, vocab, chatTemplate ("ok" or the compile error), kernels, bytes} */
EMSCRIPTEN_KEEPALIVE char *pw_model_info_json(const pl_model *m, double file_bytes, pl_error *err)
{
    pl_model_info info;
    if (pl_model_get_info(m, &info, err) != PL_OK) return NULL;
    pl_error terr;
    const char *tmpl = "ok";
    pl_status ts = pl_model_chat_template(m, NULL, NULL, &terr);
    if (ts != PL_OK) tmpl = terr.msg;
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:s, s:s, s:f, s:f, s:f}", "arch", info.arch,
                          "nParams", (double)info.n_params, "nCtxTrain", (double)info.n_ctx_train,
                          "vocab", (double)info.n_vocab, "chatTemplate", tmpl, "kernels",
                          info.kernels, "bytes", file_bytes, "weightBytes",
                          (double)info.weight_bytes, "repackBytes", (double)info.repack_bytes);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) fail(err, PL_ERR_NOMEM, "model info: out of memory");
    return s;
}

/* The logits of the last position of tokens (n ids; or of prompt, tokenized with the model's
 * BOS as `plumb logits -p` does, when tokens is NULL) from a fresh session of exactly that
 * many positions (as `plumb logits --last`): out gets n_vocab floats. */
EMSCRIPTEN_KEEPALIVE pl_status pw_logits(const pl_model *m, const char *prompt,
                                         const int32_t *tokens, int n, const char *kernels,
                                         int threads, float *out, pl_error *err)
{
    int32_t *ids = NULL;
    size_t need = 0;
    pl_status st = PL_OK;
    if (!tokens) {
        size_t len = strlen(prompt);
        st = pl_tokenize(m, prompt, len, PL_TOKENIZE_ADD_BOS, NULL, 0, &need, err);
        if (st && st != PL_ERR_BUFFER_TOO_SMALL) return st;
        if (!(ids = malloc((need ? need : 1) * sizeof *ids)))
            return fail(err, PL_ERR_NOMEM, "logits: out of memory for the tokens");
        if ((st = pl_tokenize(m, prompt, len, PL_TOKENIZE_ADD_BOS, ids, need, &need, err))) {
            free(ids);
            return st;
        }
        tokens = ids;
        n = (int)need;
    }
    if (n <= 0) {
        free(ids);
        return fail(err, PL_ERR_INVALID_ARG, "logits: the text is empty (no tokens)");
    }
    pl_session_params sp = pl_session_default_params(m);
    sp.context_window = n;
    sp.n_threads = threads;
    sp.kernels = kernels && *kernels ? kernels : NULL;
    pl_session *s = NULL;
    st = pl_session_new(&s, m, &sp, err);
    if (st == PL_OK) st = pl_session_eval(s, tokens, n, out, 0, err);
    pl_session_free(s);
    free(ids);
    return st;
}

/* ---- chat: a session, its sampler and the conversation, rendered by the model's template ---- */

typedef struct pw_chat {
    const pl_model *m;
    pl_session *s;
    pl_sampler *smp;
    /* The conversation, the system message first when given. Contents are the bytes as typed or
     * generated (a reply cut inside a character is not UTF-8): pl_chat_messages_with takes them
     * as they are, where a JSON conversation could not hold them. */
    pl_chat_message *msgs;
    size_t n_msgs, cap_msgs;
    size_t keep; /* messages reset keeps (the system message) */
    int id;      /* the JS chat this is (pw_js_on_text) */
    char *reply; /* the text delivered this turn */
    size_t reply_len, reply_cap;
    int reply_oom, streaming;
    /* The webgpu backend: > 0 when the session's forward is the GPU Worker; the most ids and
     * logits rows one channel call carries. */
    int64_t gpu_ids, gpu_rows, n_vocab;
    int64_t window, sinks; /* the session's sliding window and sinks (0: a context window) */
} pw_chat;

/* The pl_forward_hook of a webgpu chat: the session's steps cut to what the channel carries (a
 * token's row does not depend on how the steps are cut: each of the GPU's kernels computes a
 * token's row on its own, kernels/webgpu/README.md). */
static pl_status gpu_eval(void *user, const int32_t *ids, int64_t n, int64_t pos0, float *logits,
                          int64_t out0, pl_error *err)
{
    const pw_chat *c = user;
    if (!logits) out0 = n;
    for (int64_t i = 0; i < n;) {
        /* ids before out0 go in calls of gpu_ids with no logits; from out0 on, gpu_rows a call */
        int64_t len = i < out0 ? out0 - i : c->gpu_rows;
        if (len > c->gpu_ids) len = c->gpu_ids;
        if (len > n - i) len = n - i;
        float *dst = i < out0 ? NULL : logits + (i - out0) * c->n_vocab;
        err->msg[0] = '\0';
        int st = pw_js_gpu_eval(c->id, ids + i, (int)len, (double)(pos0 + i), dst,
                                dst ? 0 : (int)len, err->msg, (int)sizeof err->msg);
        if (st != 0) return (pl_status)st;
        i += len;
    }
    return PL_OK;
}

static pl_status gpu_truncate(void *user, int64_t n, pl_error *err)
{
    const pw_chat *c = user;
    err->msg[0] = '\0';
    return (pl_status)pw_js_gpu_truncate(c->id, (double)n, err->msg, (int)sizeof err->msg);
}

/* Appends a message whose content is a copy of text[0..len); 1 when out of memory. */
static int push_msg(pw_chat *c, const char *role, const char *text, size_t len)
{
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? 2 * c->cap_msgs : 8;
        pl_chat_message *m = realloc(c->msgs, cap * sizeof *m);
        if (!m) return 1;
        c->msgs = m;
        c->cap_msgs = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return 1;
    memcpy(copy, text, len);
    copy[len] = '\0';
    c->msgs[c->n_msgs].role = role;
    c->msgs[c->n_msgs].content = copy;
    c->n_msgs++;
    return 0;
}

/* Drops the messages from the n-th on. */
static void pop_msgs(pw_chat *c, size_t n)
{
    while (c->n_msgs > n) free((char *)c->msgs[--c->n_msgs].content);
}

EMSCRIPTEN_KEEPALIVE void pw_chat_free(pw_chat *c)
{
    if (!c) return;
    pl_sampler_free(c->smp);
    pl_session_free(c->s);
    for (size_t i = 0; i < c->n_msgs; i++) free((char *)c->msgs[i].content);
    free(c->msgs);
    free(c->reply);
    free(c);
}

/* window > 0: a sliding window of that many tokens with sinks; else a context window of n_ctx
 * (0: the engine's default). The engine validates the combination (PL_ERR_CONFIG, its words).
 * seed < 0: the engine's default seed. gpu_ids > 0: the webgpu backend, the session's forward
 * in the GPU Worker (gpu_eval), whose channel carries gpu_ids ids and gpu_rows rows of logits a
 * call; a context window or a sliding window with sinks (llama.mjs's cache keeps the session's
 * slots: pw_chat_info_json says which). */
EMSCRIPTEN_KEEPALIVE pl_status pw_chat_new(pw_chat **out, const pl_model *m, int id,
                                           const char *system, double n_ctx, double window,
                                           double sinks, int threads, const char *kernels,
                                           double temp, int top_k, double top_p, double min_p,
                                           double seed, int streaming, int gpu_ids, int gpu_rows,
                                           pl_error *err)
{
    if (gpu_ids > 0 && gpu_rows < 1)
        return fail(err, PL_ERR_INVALID_ARG, "chat: the GPU channel carries no logits row");
    *out = NULL;
    pw_chat *c = calloc(1, sizeof *c);
    if (!c) return fail(err, PL_ERR_NOMEM, "chat: out of memory");
    c->m = m;
    c->id = id;
    c->streaming = streaming;
    pl_session_params sp = pl_session_default_params(m);
    if (window > 0 || sinks > 0) {
        sp.context_window = n_ctx > 0 ? (int64_t)n_ctx : 0;
        sp.sliding_window = (int64_t)window;
        sp.attention_sinks = (int64_t)sinks;
        c->window = sp.sliding_window;
        c->sinks = sp.attention_sinks;
    } else if (n_ctx != 0) {
        sp.context_window = (int64_t)n_ctx;
    }
    sp.n_threads = threads;
    sp.kernels = kernels && *kernels ? kernels : NULL;
    pl_sampler_params pp = pl_sampler_default_params();
    pp.temperature = (float)temp;
    pp.top_k = top_k;
    pp.top_p = (float)top_p;
    pp.min_p = (float)min_p;
    if (seed >= 0) pp.seed = (uint64_t)seed;
    pp.kernels = sp.kernels;
    pl_forward_hook hook = {
        .eval = gpu_eval, .truncate = gpu_truncate, .user = c, .name = "webgpu"};
    if (gpu_ids > 0) {
        c->gpu_ids = gpu_ids;
        c->gpu_rows = gpu_rows;
        pl_model_info mi;
        if (pl_model_get_info(m, &mi, err) != PL_OK) {
            pw_chat_free(c);
            return err->code;
        }
        c->n_vocab = mi.n_vocab; /* the rows of logits the session asks for */
        sp.forward = &hook;
    }
    pl_status st = pl_session_new(&c->s, m, &sp, err);
    if (st == PL_OK) st = pl_sampler_new(&c->smp, m, &pp, err);
    if (st == PL_OK && system) {
        if (push_msg(c, "system", system, strlen(system)))
            st = fail(err, PL_ERR_NOMEM, "chat: out of memory");
        c->keep = 1;
    }
    if (st != PL_OK) {
        pw_chat_free(c);
        return st;
    }
    *out = c;
    return PL_OK;
}

/* Forgets the conversation (the system message stays) and the session's cache. */
EMSCRIPTEN_KEEPALIVE void pw_chat_reset(pw_chat *c)
{
    if (!c) return;
    pop_msgs(c, c->keep);
    pl_chat_reset(c->s);
}

static int on_text(void *user, const char *text, size_t len)
{
    pw_chat *c = user;
    if (c->reply_len + len + 1 > c->reply_cap) {
        size_t cap = (c->reply_len + len + 1) * 2;
        char *r = realloc(c->reply, cap);
        if (!r) {
            c->reply_oom = 1;
            return 1; /* cancel: the reply could not be kept */
        }
        c->reply = r;
        c->reply_cap = cap;
    }
    memcpy(c->reply + c->reply_len, text, len);
    c->reply_len += len;
    c->reply[c->reply_len] = '\0';
    return c->streaming ? pw_js_on_text(c->id, text, len) : 0;
}

static const char *finish_str(pl_stop_reason r)
{
    switch (r) {
    case PL_STOP_EOG:
    case PL_STOP_STRING:
        return "stop";
    case PL_STOP_MAX_TOKENS:
        return "length";
    case PL_STOP_CANCELLED:
        return "cancel";
    case PL_STOP_CONTEXT_FULL:
        return "context_full";
    default:
        return "none";
    }
}

static double per_s(double n, double ms)
{
    return ms > 0 ? n * 1000.0 / ms : 0;
}

/* One turn: the user's message is added, the conversation rendered by the model's template and
 * run through pl_chat (the prefix cache), the reply streamed and added. *stats_json (malloc'd):
 * {path, reused, prefilled, generated, ttftMs, prefillTokS, decodeTokS, finish, totalMs}
 * (decodeTokS: generated - 1 tokens over the generated evaluations after the first draw); the
 * reply's bytes are pw_chat_reply / pw_chat_reply_len (JSON could not carry a reply that is not
 * UTF-8). A prompt the context window cannot hold is finish "context_full" with the session and
 * the conversation as before the call; other errors are returned with the same guarantee. */
EMSCRIPTEN_KEEPALIVE pl_status pw_chat_turn(pw_chat *c, const char *user, double max_tokens,
                                            int ignore_eog, char **stats_json, pl_error *err)
{
    *stats_json = NULL;
    size_t n_before = c->n_msgs;
    if (push_msg(c, "user", user, strlen(user)))
        return fail(err, PL_ERR_NOMEM, "chat: out of memory");
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = max_tokens >= 1 ? (int64_t)max_tokens : gp.max_tokens;
    gp.ignore_eog = ignore_eog != 0; /* llama.cpp's ignore_eos: timing runs decode to max_tokens */
    c->reply_len = 0;
    c->reply_oom = 0;
    pl_chat_stats cs;
    memset(&cs, 0, sizeof cs);
    pl_status st =
        pl_chat_messages_with(c->s, NULL, c->msgs, c->n_msgs, c->smp, &gp, on_text, c, &cs, err);
    int prompt_full = st == PL_ERR_CONTEXT_FULL;
    if (st != PL_OK && !prompt_full) {
        pop_msgs(c, n_before);
        return st;
    }
    if (prompt_full) {
        pop_msgs(c, n_before);
        cs.gen.stop = PL_STOP_CONTEXT_FULL;
        c->reply_len = 0;
    } else if (c->reply_oom || push_msg(c, "assistant", c->reply ? c->reply : "", c->reply_len)) {
        /* The session holds a reply the conversation cannot: start the next turn over. */
        pop_msgs(c, n_before);
        pl_chat_reset(c->s);
        c->reply_len = 0;
        return fail(err, PL_ERR_NOMEM, "chat: out of memory for the reply");
    }
    json_t *o = json_pack(
        "{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:f}", "path",
        prompt_full ? "none" : pl_chat_path_str(cs.path), "reused", (double)cs.n_reused,
        "prefilled", (double)cs.n_prefilled, "generated", (double)cs.n_generated, "ttftMs",
        cs.gen.ttft_ms, "prefillTokS", per_s((double)cs.n_prefilled, cs.gen.prefill_ms),
        "decodeTokS", cs.gen.decode_tps, "finish", finish_str(cs.gen.stop), "totalMs", cs.total_ms);
    *stats_json = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return *stats_json ? PL_OK : fail(err, PL_ERR_NOMEM, "chat: out of memory for the stats");
}

/* The chat's session: its kernel set ("webgpu" for the GPU backend), KV capacity (the context
 * the GPU Worker's cache must hold) and sliding window with its sinks (0, 0: a context window):
 * {kernels, capacity, window, sinks}. */
EMSCRIPTEN_KEEPALIVE char *pw_chat_info_json(const pw_chat *c, pl_error *err)
{
    pl_session_info si;
    if (pl_session_get_info(c->s, &si, err) != PL_OK) return NULL;
    json_t *o =
        json_pack("{s:s, s:f, s:f, s:f}", "kernels", si.kernels, "capacity", (double)si.kv_capacity,
                  "window", (double)c->window, "sinks", (double)c->sinks);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s) fail(err, PL_ERR_NOMEM, "chat info: out of memory");
    return s;
}

/* The last turn's reply: its bytes (not always UTF-8) and their count. */
EMSCRIPTEN_KEEPALIVE const char *pw_chat_reply(const pw_chat *c)
{
    return c->reply ? c->reply : "";
}
EMSCRIPTEN_KEEPALIVE double pw_chat_reply_len(const pw_chat *c)
{
    return (double)c->reply_len;
}

/* Bytes malloc holds now (in use), for eng.memory(). */
EMSCRIPTEN_KEEPALIVE double pw_heap_in_use(void)
{
    struct mallinfo mi = mallinfo();
    return (double)(size_t)mi.uordblks;
}
