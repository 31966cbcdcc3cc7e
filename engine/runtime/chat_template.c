/* chat_template.c — the chat paths' templates: the model's tokenizer.chat_template compiled at
 * load and rendered by the Jinja engine with transformers' variables, caller-chosen templates
 * (Jinja source or a built-in name), and the public render calls. Not the Jinja language
 * (engine/jinja) nor the built-in renderers (tokenizer/template.c). */
#include <jansson.h>
#include <string.h>

#include "jinja/jinja.h"
#include "model.h"
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

#include "chat_template.h"

struct pl_chat_template {
    pl_jinja_template *jinja; /* compiled source, or NULL for a built-in */
    const char *builtin;      /* one of pl_chat_template_names(), or NULL */
    char *src;                /* the Jinja source (a copy), or NULL for a built-in */
    size_t src_len;
};

/* ---- compiled at load ---- */

pl_status pl_model_compile_chat_template(pl_model *m, pl_error *err)
{
    m->chat_tmpl = NULL;
    m->chat_status = PL_ERR_NOT_FOUND;
    snprintf(m->chat_msg, sizeof m->chat_msg,
             "the model has no chat template (no tokenizer.chat_template key); pass one "
             "(--chat-template-file or a built-in name)");
    if (pl_gguf_find_key(m->gguf, "tokenizer.chat_template") < 0) return PL_OK;
    pl_str src;
    pl_error e = {0};
    pl_status s = pl_gguf_get_string(m->gguf, "tokenizer.chat_template", &src, &e);
    if (!s && src.len == 0) {
        snprintf(m->chat_msg, sizeof m->chat_msg,
                 "the model has no chat template (tokenizer.chat_template is empty); pass one "
                 "(--chat-template-file or a built-in name)");
        return PL_OK;
    }
    if (!s) s = pl_jinja_compile(src.ptr, (size_t)src.len, &m->chat_tmpl, &e);
    if (s == PL_ERR_NOMEM) return pl_fail(err, s, "compiling the chat template: %s", e.msg);
    m->chat_status = s;
    m->chat_msg[0] = 0;
    if (s) {
        /* The prefix and as much of the position and reason as fit. */
        static const char pre[] = "the model's chat template does not compile: ";
        memcpy(m->chat_msg, pre, sizeof pre);
        size_t room = sizeof m->chat_msg - sizeof pre;
        size_t n = strnlen(e.msg, room);
        memcpy(m->chat_msg + sizeof pre - 1, e.msg, n);
        m->chat_msg[sizeof pre - 1 + n] = 0;
    }
    return PL_OK;
}

void pl_model_free_chat_template(pl_model *m)
{
    pl_jinja_free(m->chat_tmpl);
    m->chat_tmpl = NULL;
}

pl_status pl_model_chat_template(const pl_model *m, const char **src, size_t *len, pl_error *err)
{
    if (src) *src = NULL;
    if (len) *len = 0;
    if (!m) return pl_fail(err, PL_ERR_INVALID_ARG, "model is NULL");
    if (m->chat_status) return pl_fail(err, m->chat_status, "%s", m->chat_msg);
    pl_str s = {NULL, 0};
    pl_gguf_get_string(m->gguf, "tokenizer.chat_template", &s, NULL);
    if (src) *src = s.ptr;
    if (len) *len = (size_t)s.len;
    return pl_ok(err);
}

/* ---- caller-chosen templates ---- */

pl_status pl_chat_template_compile(pl_chat_template **out, const char *src, size_t len,
                                   pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!src && len) return pl_fail(err, PL_ERR_INVALID_ARG, "src is NULL");
    pl_chat_template *t = pl_calloc(1, sizeof *t);
    if (!t || !(t->src = pl_malloc(len + 1))) {
        pl_free(t);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for a chat template");
    }
    if (len) memcpy(t->src, src, len);
    t->src[len] = 0;
    t->src_len = len;
    pl_error e = {0};
    pl_status s = pl_jinja_compile(src ? src : "", len, &t->jinja, &e);
    if (s) {
        pl_free(t->src);
        pl_free(t);
        return pl_fail(err, s, "the chat template does not compile: %s", e.msg);
    }
    *out = t;
    return pl_ok(err);
}

pl_status pl_chat_template_builtin(pl_chat_template **out, const char *name, pl_error *err)
{
    if (!out) return pl_fail(err, PL_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!name) return pl_fail(err, PL_ERR_INVALID_ARG, "name is NULL");
    const char *const *names = pl_chat_template_names();
    const char *found = NULL;
    for (size_t i = 0; names[i] && !found; i++)
        if (strcmp(names[i], name) == 0) found = names[i];
    if (!found)
        return pl_fail(err, PL_ERR_NOT_FOUND, "unknown chat template '%s' (built-in: %s)", name,
                       PL_CHAT_BUILTIN_NAMES);
    pl_chat_template *t = pl_calloc(1, sizeof *t);
    if (!t) return pl_fail(err, PL_ERR_NOMEM, "no memory for a chat template");
    t->builtin = found;
    *out = t;
    return pl_ok(err);
}

void pl_chat_template_free(pl_chat_template *t)
{
    if (!t) return;
    pl_jinja_free(t->jinja);
    pl_free(t->src);
    pl_free(t);
}

/* Whether needle (n bytes) occurs in hay (len bytes). */
static int has_bytes(const char *hay, size_t len, const char *needle, size_t n)
{
    for (size_t i = 0; n && i + n <= len; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, n) == 0) return 1;
    return 0;
}

int pl_chat_template_knows_role(const pl_model *m, const pl_chat_template *t, const char *role)
{
    if (!role || !role[0] || strlen(role) > 64) return 0;
    const char *src = NULL;
    size_t len = 0;
    if (t && t->builtin) return 0; /* none of the built-ins' families has such a role */
    if (t) {
        src = t->src;
        len = t->src_len;
    } else if (!m || pl_model_chat_template(m, &src, &len, NULL) != PL_OK) {
        return 0;
    }
    char lit[68];
    size_t n = strlen(role);
    for (int q = 0; q < 2; q++) {
        lit[0] = lit[n + 1] = q ? '"' : '\'';
        memcpy(lit + 1, role, n);
        if (has_bytes(src, len, lit, n + 2)) return 1;
    }
    return 0;
}

/* ---- rendering ---- */

static void token_text(const struct pl_tokenizer *t, int32_t id, const char **p, size_t *n)
{
    *p = NULL;
    *n = 0;
    if (!t || id < 0 || (uint32_t)id >= t->n_vocab) return;
    *p = t->arena + t->tok[id].text_off;
    *n = t->tok[id].text_len;
}

/* Sets key to the text of token id unless ctx has it ("" when the model has no such token). */
static pl_status put_token(json_t *ctx, const char *key, const struct pl_tokenizer *t, int32_t id,
                           pl_error *err)
{
    if (json_object_get(ctx, key)) return PL_OK;
    const char *p;
    size_t n;
    token_text(t, id, &p, &n);
    json_t *v = json_stringn(p ? p : "", n);
    if (!v) v = json_string(""); /* a token text that is not UTF-8 cannot reach a template */
    if (!v || json_object_set_new(ctx, key, v))
        return pl_fail(err, PL_ERR_NOMEM, "no memory for the template's %s", key);
    return PL_OK;
}

/* The built-in renderers take role and string content only. */
static pl_status builtin_messages(const json_t *ctx, const char *name, pl_chat_message **out,
                                  size_t *n_out, pl_error *err)
{
    *out = NULL;
    *n_out = 0;
    static const char *const unsupported[] = {"tools", "documents"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *v = json_object_get(ctx, unsupported[k]);
        if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0))
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "the built-in template '%s' renders role and content only, not %s "
                           "(the model's own template does)",
                           name, unsupported[k]);
    }
    const json_t *msgs = json_object_get(ctx, "messages");
    size_t n = json_array_size(msgs);
    pl_chat_message *m = pl_calloc(n ? n : 1, sizeof *m);
    if (!m) return pl_fail(err, PL_ERR_NOMEM, "no memory for %zu messages", n);
    for (size_t i = 0; i < n; i++) {
        const json_t *msg = json_array_get(msgs, i);
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)msg, key, v)
        {
            if (strcmp(key, "role") && strcmp(key, "content") && !json_is_null(v)) {
                pl_free(m);
                return pl_fail(err, PL_ERR_UNSUPPORTED,
                               "messages[%zu].%s: the built-in template '%s' renders role and "
                               "content only (the model's own template takes %s)",
                               i, key, name, key);
            }
        }
        const json_t *role = json_object_get(msg, "role"),
                     *content = json_object_get(msg, "content");
        if (!json_is_string(role) || !json_is_string(content)) {
            pl_free(m);
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "messages[%zu]: the built-in template '%s' needs a string role and a "
                           "string content",
                           i, name);
        }
        m[i].role = json_string_value(role);
        m[i].content = json_string_value(content);
    }
    *out = m;
    *n_out = n;
    return PL_OK;
}

static pl_status render_builtin(const pl_model *m, const char *name, const json_t *ctx, int add_gen,
                                char **out, size_t *out_len, pl_error *err)
{
    pl_chat_message *msgs;
    size_t n;
    pl_status s = builtin_messages(ctx, name, &msgs, &n, err);
    if (s) return s;
    const struct pl_tokenizer *t = m ? m->tok : NULL;
    const char *bos = NULL, *eos = NULL;
    size_t bos_len = 0, eos_len = 0;
    if (t) {
        token_text(t, t->bos, &bos, &bos_len);
        token_text(t, t->eos, &eos, &eos_len);
    }
    size_t need = 0;
    s = pl_chat_render_named(name, bos, bos_len, eos, eos_len, msgs, n, add_gen, NULL, 0, &need,
                             err);
    char *buf = NULL;
    if (s == PL_OK || s == PL_ERR_BUFFER_TOO_SMALL) {
        buf = pl_malloc(need + 1);
        s = buf ? pl_chat_render_named(name, bos, bos_len, eos, eos_len, msgs, n, add_gen, buf,
                                       need, &need, err)
                : pl_fail(err, PL_ERR_NOMEM, "no memory for a %zu-byte prompt", need);
    }
    pl_free(msgs);
    if (s) {
        pl_free(buf);
        return s;
    }
    buf[need] = 0;
    *out = buf;
    *out_len = need;
    return PL_OK;
}

pl_status pl_chat_render_ctx(const pl_model *m, const pl_chat_template *t, json_t *ctx, int add_gen,
                             char **out, size_t *out_len, pl_error *err)
{
    *out = NULL;
    *out_len = 0;
    if (!t && !m)
        return pl_fail(err, PL_ERR_INVALID_ARG, "rendering needs a chat template or a model");
    if (!json_is_array(json_object_get(ctx, "messages")))
        return pl_fail(err, PL_ERR_INVALID_ARG, "the conversation has no \"messages\" array");
    if (json_object_set_new(ctx, "add_generation_prompt", json_boolean(add_gen)))
        return pl_fail(err, PL_ERR_NOMEM, "no memory for the template's variables");
    if (t && t->builtin) return render_builtin(m, t->builtin, ctx, add_gen, out, out_len, err);
    const pl_jinja_template *jt = t ? t->jinja : NULL;
    if (!jt) {
        if (m->chat_status) return pl_fail(err, m->chat_status, "%s", m->chat_msg);
        jt = m->chat_tmpl;
    }
    const struct pl_tokenizer *tok = m ? m->tok : NULL;
    pl_status s;
    if ((s = put_token(ctx, "bos_token", tok, tok ? tok->bos : -1, err)) ||
        (s = put_token(ctx, "eos_token", tok, tok ? tok->eos : -1, err)))
        return s;
    static const char *const nulls[] = {"tools", "documents"};
    for (size_t k = 0; k < 2; k++)
        if (!json_object_get(ctx, nulls[k]) && json_object_set_new(ctx, nulls[k], json_null()))
            return pl_fail(err, PL_ERR_NOMEM, "no memory for the template's variables");
    pl_error e = {0};
    s = pl_jinja_render(jt, ctx, NULL, out, out_len, &e);
    if (s) return pl_fail(err, s, "%s chat template: %s", t ? "the given" : "the model's", e.msg);
    return pl_ok(err);
}

/* Copies a rendered prompt into the caller's buffer (pl_chat_render's contract). */
static pl_status deliver(char *text, size_t len, char *buf, size_t cap, size_t *n_out,
                         pl_error *err)
{
    *n_out = len;
    if (len > cap) {
        pl_free(text);
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "the prompt needs %zu bytes but the output buffer holds %zu", len, cap);
    }
    if (len) memcpy(buf, text, len);
    pl_free(text);
    return pl_ok(err);
}

static pl_status check_conversation(const json_t *ctx, pl_error *err)
{
    if (!json_is_object(ctx) || !json_is_array(json_object_get(ctx, "messages")))
        return pl_fail(err, PL_ERR_INVALID_ARG,
                       "the conversation JSON must be an object with a \"messages\" array");
    return PL_OK;
}

pl_status pl_chat_parse_conversation(const char *json, size_t len, json_t **out, pl_error *err)
{
    *out = NULL;
    if (!json) return pl_fail(err, PL_ERR_INVALID_ARG, "json is NULL");
    json_error_t je;
    json_t *ctx = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!ctx)
        return pl_fail(err, PL_ERR_INVALID_ARG, "the conversation JSON: line %d, column %d: %s",
                       je.line, je.column, je.text);
    pl_status s = check_conversation(ctx, err);
    if (s) {
        json_decref(ctx);
        return s;
    }
    *out = ctx;
    return PL_OK;
}

static pl_status check_out(char *buf, size_t cap, size_t *n_out, pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "n_out is NULL");
    if (!buf && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    return PL_OK;
}

/* Renders ctx (which the render extends with its variables, at the top level) and drops it. */
static pl_status render_and_drop(const pl_model *m, const pl_chat_template *t, json_t *ctx,
                                 int add_generation_prompt, char *buf, size_t cap, size_t *n_out,
                                 pl_error *err)
{
    char *text;
    size_t n;
    pl_status s = pl_chat_render_ctx(m, t, ctx, add_generation_prompt != 0, &text, &n, err);
    json_decref(ctx);
    if (s) return s;
    return deliver(text, n, buf, cap, n_out, err);
}

pl_status pl_chat_render_json(const pl_model *m, const pl_chat_template *t, const char *json,
                              size_t len, int add_generation_prompt, char *buf, size_t cap,
                              size_t *n_out, pl_error *err)
{
    pl_status s = check_out(buf, cap, n_out, err);
    if (s) return s;
    json_t *ctx;
    if ((s = pl_chat_parse_conversation(json, len, &ctx, err))) return s;
    return render_and_drop(m, t, ctx, add_generation_prompt, buf, cap, n_out, err);
}

pl_status pl_chat_render_jansson(const pl_model *m, const pl_chat_template *t,
                                 const struct json_t *conversation, int add_generation_prompt,
                                 char *buf, size_t cap, size_t *n_out, pl_error *err)
{
    pl_status s = check_out(buf, cap, n_out, err);
    if (s) return s;
    if (!conversation) return pl_fail(err, PL_ERR_INVALID_ARG, "conversation is NULL");
    if ((s = check_conversation(conversation, err))) return s;
    /* A shallow copy: the render adds its variables at the top level and reads the rest. */
    json_t *ctx = json_copy((json_t *)conversation);
    if (!ctx) return pl_fail(err, PL_ERR_NOMEM, "no memory for the template's variables");
    return render_and_drop(m, t, ctx, add_generation_prompt, buf, cap, n_out, err);
}

/* Bytes that are not UTF-8 (a model's raw output cut inside a character, say) cannot be Jinja
 * strings. As Python's surrogateescape does, each such byte b travels as one code point,
 * U+F0000 + b (Supplementary Private Use Area-A, 4 bytes: F3 B0 82|83 xx), and the rendered text
 * gets the byte back, so the prompt holds the message's bytes exactly and the prefix cache's fast
 * path still matches. A conversation with such bytes must not also hold U+F0080..U+F00FF. */
#define ESC_LEN 4

static json_t *text_value(const char *s, int *escaped)
{
    size_t n = strlen(s);
    json_t *v = json_stringn(s, n);
    if (v) return v;
    if (n > (SIZE_MAX - 1) / ESC_LEN) return NULL;
    char *fixed = pl_malloc(ESC_LEN * n + 1);
    if (!fixed) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = pl_utf8_char((const unsigned char *)s + i, n - i);
        if (k) {
            memcpy(fixed + o, s + i, k);
            o += k;
            i += k;
        } else {
            unsigned char b = (unsigned char)s[i++];
            fixed[o++] = (char)0xF3;
            fixed[o++] = (char)0xB0;
            fixed[o++] = (char)(0x80 | (b >> 6));
            fixed[o++] = (char)(0x80 | (b & 0x3F));
        }
    }
    v = json_stringn(fixed, o);
    pl_free(fixed);
    *escaped = 1;
    return v;
}

/* The inverse of text_value's escape over a rendered prompt, in place. */
static void unescape(char *t, size_t *len)
{
    size_t o = 0, n = *len;
    for (size_t i = 0; i < n;) {
        const unsigned char *p = (const unsigned char *)t + i;
        if (n - i >= ESC_LEN && p[0] == 0xF3 && p[1] == 0xB0 && (p[2] == 0x82 || p[2] == 0x83) &&
            (p[3] & 0xC0) == 0x80) {
            t[o++] = (char)(((p[2] & 0x3F) << 6) | (p[3] & 0x3F));
            i += ESC_LEN;
        } else {
            t[o++] = t[i++];
        }
    }
    t[o] = 0;
    *len = o;
}

static pl_status messages_ctx(const pl_chat_message *msgs, size_t n, json_t **out, int *escaped,
                              pl_error *err)
{
    *out = NULL;
    *escaped = 0;
    if (!msgs && n > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "msgs is NULL");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return pl_fail(err, PL_ERR_INVALID_ARG, "message %zu has a NULL %s", i,
                           msgs[i].role ? "content" : "role");
    json_t *ctx = json_object(), *arr = json_array();
    int bad = !ctx || !arr || json_object_set(ctx, "messages", arr);
    for (size_t i = 0; i < n && !bad; i++) {
        json_t *m = json_object();
        bad = !m || json_array_append_new(arr, m) ||
              json_object_set_new(m, "role", text_value(msgs[i].role, escaped)) ||
              json_object_set_new(m, "content", text_value(msgs[i].content, escaped));
    }
    json_decref(arr);
    if (bad) {
        json_decref(ctx);
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %zu messages", n);
    }
    *out = ctx;
    return PL_OK;
}

pl_status pl_chat_render_messages(const pl_model *m, const pl_chat_template *t,
                                  const pl_chat_message *msgs, size_t n, int add_gen, char **out,
                                  size_t *out_len, pl_error *err)
{
    json_t *ctx = NULL;
    int escaped = 0;
    pl_status s = messages_ctx(msgs, n, &ctx, &escaped, err);
    if (!s) s = pl_chat_render_ctx(m, t, ctx, add_gen, out, out_len, err);
    json_decref(ctx);
    if (!s && escaped) unescape(*out, out_len);
    return s;
}

pl_status pl_chat_render_with(const pl_model *m, const pl_chat_template *t,
                              const pl_chat_message *msgs, size_t n, int add_generation_prompt,
                              char *buf, size_t cap, size_t *n_out, pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "n_out is NULL");
    if (!buf && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    char *text;
    size_t len;
    pl_status s =
        pl_chat_render_messages(m, t, msgs, n, add_generation_prompt != 0, &text, &len, err);
    if (s) return s;
    return deliver(text, len, buf, cap, n_out, err);
}

pl_status pl_chat_render(const pl_model *m, const char *name, const pl_chat_message *msgs, size_t n,
                         int add_generation_prompt, char *buf, size_t cap, size_t *n_out,
                         pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!name && !m)
        return pl_fail(err, PL_ERR_INVALID_ARG, "pl_chat_render needs a template name or a model");
    pl_chat_template *t = NULL;
    pl_status s = name ? pl_chat_template_builtin(&t, name, err) : PL_OK;
    if (!s) s = pl_chat_render_with(m, t, msgs, n, add_generation_prompt, buf, cap, n_out, err);
    pl_chat_template_free(t);
    return s;
}
