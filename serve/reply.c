/* reply.c — the JSON the server sends back: whole responses, SSE chunks, and the UTF-8
 * cleaning that keeps them valid JSON. Not the HTTP layer (server.c sends them). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* Length of the valid UTF-8 sequence at s[0..n), 0 when there is none (overlong forms,
 * surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned min, cp;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

char *sv_utf8_clean(const char *s, size_t n, size_t *out_len)
{
    /* Each bad byte becomes 3 bytes (U+FFFD). */
    if (n > (SIZE_MAX - 1) / 3) return NULL;
    char *out = malloc(3 * n + 1);
    if (!out) return NULL;
    size_t o = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    out[o] = 0;
    if (out_len) *out_len = o;
    return out;
}

static json_t *usage_json(const sv_result *r)
{
    return json_pack("{s:I,s:I,s:I,s:{s:I}}", "prompt_tokens", (json_int_t)r->prompt_tokens,
                     "completion_tokens", (json_int_t)r->completion_tokens, "total_tokens",
                     (json_int_t)(r->prompt_tokens + r->completion_tokens), "prompt_tokens_details",
                     "cached_tokens", (json_int_t)r->cached_tokens);
}

static json_t *plumb_json(const sv_result *r)
{
    /* milliseconds to the microsecond: what a timing means, not 17 digits of noise */
    return json_pack("{s:i,s:s,s:I,s:I,s:f,s:f}", "slot", r->slot, "cache_path",
                     r->cache_path ? r->cache_path : "none", "reused_tokens", (json_int_t)r->reused,
                     "prefilled_tokens", (json_int_t)r->prefilled, "ttft_ms",
                     round(r->ttft_ms * 1e3) / 1e3, "total_ms", round(r->total_ms * 1e3) / 1e3);
}

static json_t *text_json(const char *text, size_t len)
{
    size_t n;
    char *c = sv_utf8_clean(text ? text : "", text ? len : 0, &n);
    json_t *s = c ? json_stringn(c, n) : NULL;
    free(c);
    return s;
}

static char *dump(json_t *o)
{
    /* 15 significant digits: a rounded value (a timing) prints as it was rounded */
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(o);
    return s;
}

char *sv_response_json(sv_endpoint ep, const char *alias, const sv_result *r, const char *text,
                       size_t len)
{
    json_t *t = text_json(text, len), *choice;
    if (!t) return NULL;
    if (ep == SV_EP_CHAT)
        choice = json_pack("{s:i,s:{s:s,s:o},s:s}", "index", 0, "message", "role", "assistant",
                           "content", t, "finish_reason", r->finish);
    else
        choice = json_pack("{s:i,s:o,s:s,s:n}", "index", 0, "text", t, "finish_reason", r->finish,
                           "logprobs");
    return dump(json_pack("{s:s,s:s,s:I,s:s,s:[o],s:o,s:o}", "id", r->id, "object",
                          ep == SV_EP_CHAT ? "chat.completion" : "text_completion", "created",
                          (json_int_t)r->created, "model", alias, "choices", choice, "usage",
                          usage_json(r), "plumb", plumb_json(r)));
}

char *sv_chunk_event(sv_endpoint ep, const char *alias, const sv_result *r, int kind,
                     const char *text, size_t len)
{
    int chat = ep == SV_EP_CHAT;
    json_t *o = json_pack("{s:s,s:s,s:I,s:s}", "id", r->id, "object",
                          chat ? "chat.completion.chunk" : "text_completion", "created",
                          (json_int_t)r->created, "model", alias);
    if (!o) return NULL;
    json_t *choices = json_array(), *c = NULL;
    json_object_set_new(o, "choices", choices);
    if (kind == 0 || kind == 1) {
        json_t *t = kind == 0 ? json_string("") : text_json(text, len);
        if (chat)
            c = kind == 0 ? json_pack("{s:i,s:{s:s,s:o},s:n}", "index", 0, "delta", "role",
                                      "assistant", "content", t, "finish_reason")
                          : json_pack("{s:i,s:{s:o},s:n}", "index", 0, "delta", "content", t,
                                      "finish_reason");
        else
            c = json_pack("{s:i,s:o,s:n,s:n}", "index", 0, "text", t, "finish_reason", "logprobs");
    } else if (kind == 2) {
        if (chat)
            c = json_pack("{s:i,s:{},s:s}", "index", 0, "delta", "finish_reason", r->finish);
        else
            c = json_pack("{s:i,s:s,s:s,s:n}", "index", 0, "text", "", "finish_reason", r->finish,
                          "logprobs");
        json_object_set_new(o, "plumb", plumb_json(r));
    } else {
        json_object_set_new(o, "usage", usage_json(r));
    }
    if (kind != 3 && (!c || json_array_append_new(choices, c))) {
        json_decref(o);
        return NULL;
    }
    char *j = dump(o);
    if (!j) return NULL;
    size_t n = strlen(j);
    char *ev = malloc(n + 9);
    if (ev) {
        memcpy(ev, "data: ", 6);
        memcpy(ev + 6, j, n);
        memcpy(ev + 6 + n, "\n\n", 3);
    }
    free(j);
    return ev;
}
