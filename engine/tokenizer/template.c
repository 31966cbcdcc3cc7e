/* template.c — the built-in chat template renderers (ChatML/Qwen2/Qwen2.5, Llama 3, Llama 2,
 * Mistral v1), explicit overrides of the model's own template, and the exact sources they are
 * proven on. Not the Jinja engine (engine/jinja), which renders the model's template by default.
 *
 * Each renderer transcribes its model's template; where a template trims (Jinja |trim,
 * Python str.strip) the trim uses Python's whitespace, and where it raises an exception the
 * render fails with PL_ERR_INVALID_ARG and the template's own message.
 */
#include <string.h>

#include "template.h"
#include "utf8.h"

enum tmpl { T_CHATML, T_QWEN2, T_QWEN25, T_LLAMA3, T_LLAMA2, T_MISTRAL, T_COUNT };

static const char *const names[T_COUNT + 1] = {
    [T_CHATML] = "chatml", [T_QWEN2] = "qwen2",     [T_QWEN25] = "qwen2.5", [T_LLAMA3] = "llama3",
    [T_LLAMA2] = "llama2", [T_MISTRAL] = "mistral", [T_COUNT] = NULL,
};

#define KNOWN PL_CHAT_BUILTIN_NAMES

#define QWEN2_SYSTEM  "You are a helpful assistant."
#define QWEN25_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

const char *const *pl_chat_template_names(void)
{
    return names;
}

static int find_name(const char *name, size_t len)
{
    for (int i = 0; i < T_COUNT; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) return i;
    return -1;
}

/* The template sources each built-in is proven to render byte for byte (conformance/test_chat.c,
 * built_ins_render_their_templates_byte_for_byte), as length and FNV-1a 64 of the exact bytes:
 * detection never guesses from markers, so a look-alike template runs on the Jinja engine. */
static const struct {
    int tmpl;
    size_t len;
    uint64_t fnv;
    const char *what;
} proven[] = {
    {T_CHATML, 199, 0xa41d6bae9b9141bcull, "ChatML (OpenHermes 2.5's tokenizer_config.json)"},
    {T_QWEN2, 333, 0x75e88977b2787cd7ull, "Qwen2 Instruct"},
    {T_QWEN25, 2558, 0xefc577352ade125dull, "Qwen2.5 Instruct (corpus qwen2.5.jinja)"},
    {T_LLAMA3, 393, 0x32844fd43eab01d2ull, "Llama 3 Instruct"},
    {T_LLAMA3, 389, 0x0e60067a5537498eull, "Llama 3.1 as @lenml ships it (llama-3.1-lenml.jinja)"},
    {T_LLAMA2, 815, 0xf344eecf1bd3a427ull, "Llama 2 chat"},
    {T_MISTRAL, 926, 0x51a7257be7ddae05ull, "Mistral 7B Instruct v0.1"},
};

uint64_t pl_chat_template_fnv(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

pl_status pl_chat_template_detect(const char *tmpl, size_t len, const char **name, pl_error *err)
{
    if (!name) return pl_fail(err, PL_ERR_INVALID_ARG, "name is NULL");
    *name = NULL;
    if (!tmpl && len > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "tmpl is NULL");
    if (tmpl) {
        uint64_t h = pl_chat_template_fnv(tmpl, len);
        for (size_t i = 0; i < sizeof proven / sizeof proven[0]; i++)
            if (proven[i].len == len && proven[i].fnv == h) {
                *name = names[proven[i].tmpl];
                return pl_ok(err);
            }
    }
    return pl_fail(err, PL_ERR_NOT_FOUND,
                   "no built-in renders this template byte for byte (the built-ins " KNOWN
                   " match only the exact sources they are proven on); the Jinja engine runs it");
}

/* ---- rendering ---- */

struct out {
    char *buf;
    size_t cap, n;
};

static void add(struct out *o, const char *p, size_t n)
{
    if (o->n < o->cap) memcpy(o->buf + o->n, p, n <= o->cap - o->n ? n : o->cap - o->n);
    o->n += n;
}

static void adds(struct out *o, const char *s)
{
    add(o, s, strlen(s));
}

/* Python's str.isspace() code points (what Jinja's trim and str.strip() remove). */
static int py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Length of the leading whitespace characters of s[0..n). */
static size_t lspace(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = pl_utf8_char(p + i, n - i);
        if (k == 0 || !py_space(pl_utf8_cp(p + i, k))) break;
        i += k;
    }
    return i;
}

/* Length of s[0..n) without its trailing whitespace characters. */
static size_t rstrip_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    while (n > 0) {
        size_t start = n - 1; /* the last character starts at most 3 bytes back */
        while (start > 0 && n - start < 4 && (p[start] & 0xC0) == 0x80) start--;
        size_t k = pl_utf8_char(p + start, n - start);
        if (k != n - start || !py_space(pl_utf8_cp(p + start, k))) break;
        n = start;
    }
    return n;
}

static void add_stripped(struct out *o, const char *s)
{
    size_t n = strlen(s), a = lspace(s, n);
    add(o, s + a, rstrip_len(s + a, n - a));
}

struct conv {
    const pl_chat_message *msgs;
    size_t n;
    const char *bos, *eos;
    size_t bos_len, eos_len;
    int add_gen;
    pl_error *err;
};

static int role_is(const pl_chat_message *m, const char *role)
{
    return strcmp(m->role, role) == 0;
}

static void render_chatml(struct out *o, const struct conv *c, const char *default_system)
{
    if (default_system && c->n > 0 && !role_is(&c->msgs[0], "system")) {
        adds(o, "<|im_start|>system\n");
        adds(o, default_system);
        adds(o, "<|im_end|>\n");
    }
    for (size_t i = 0; i < c->n; i++) {
        adds(o, "<|im_start|>");
        adds(o, c->msgs[i].role);
        adds(o, "\n");
        adds(o, c->msgs[i].content);
        adds(o, "<|im_end|>\n");
    }
    if (c->add_gen) adds(o, "<|im_start|>assistant\n");
}

static pl_status render_qwen25(struct out *o, const struct conv *c)
{
    if (c->n == 0)
        return pl_fail(c->err, PL_ERR_INVALID_ARG,
                       "qwen2.5: the template reads messages[0] and needs at least one message");
    for (size_t i = 0; i < c->n; i++)
        if (!role_is(&c->msgs[i], "system") && !role_is(&c->msgs[i], "user") &&
            !role_is(&c->msgs[i], "assistant"))
            return pl_fail(c->err, PL_ERR_UNSUPPORTED,
                           "qwen2.5: message %zu has role '%s'; the built-in renderer supports "
                           "system, user and assistant (not tool calls)",
                           i, c->msgs[i].role);
    render_chatml(o, c, QWEN25_SYSTEM);
    return PL_OK;
}

/* Meta-Llama-3-8B-Instruct: bos once, each message's content trimmed. */
static void render_llama3(struct out *o, const struct conv *c)
{
    for (size_t i = 0; i < c->n; i++) {
        if (i == 0) add(o, c->bos, c->bos_len);
        adds(o, "<|start_header_id|>");
        adds(o, c->msgs[i].role);
        adds(o, "<|end_header_id|>\n\n");
        add_stripped(o, c->msgs[i].content);
        adds(o, "<|eot_id|>");
    }
    if (c->add_gen) adds(o, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Llama-2-chat: an optional first system message goes inside the first user turn; every user
 * turn starts with bos; roles must alternate user/assistant. */
static pl_status render_llama2(struct out *o, const struct conv *c)
{
    if (c->n == 0)
        return pl_fail(c->err, PL_ERR_INVALID_ARG,
                       "llama2: the template reads messages[0] and needs at least one message");
    size_t first = c->n > 0 && role_is(&c->msgs[0], "system") ? 1 : 0;
    for (size_t k = first; k < c->n; k++) {
        size_t idx = k - first;
        const pl_chat_message *m = &c->msgs[k];
        if (role_is(m, "user") != (idx % 2 == 0))
            return pl_fail(c->err, PL_ERR_INVALID_ARG,
                           "llama2: Conversation roles must alternate "
                           "user/assistant/user/assistant/... (message %zu has role '%s')",
                           k, m->role);
        int is_user = role_is(m, "user");
        if (!is_user && !role_is(m, "assistant")) continue; /* the template emits nothing */
        if (is_user) {
            add(o, c->bos, c->bos_len);
            adds(o, "[INST] ");
        } else {
            adds(o, " ");
        }
        if (idx == 0 && first) {
            /* content = '<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content, then .strip():
             * only the end can be stripped, and it reaches into the block when the user text
             * is all whitespace. */
            const char *u = m->content;
            size_t un = strlen(u), keep = rstrip_len(u, un);
            adds(o, "<<SYS>>\n");
            adds(o, c->msgs[0].content);
            if (keep > 0) {
                adds(o, "\n<</SYS>>\n\n");
                add(o, u, keep);
            } else {
                adds(o, "\n<</SYS>>");
            }
        } else {
            add_stripped(o, m->content);
        }
        if (is_user) {
            adds(o, " [/INST]");
        } else {
            adds(o, " ");
            add(o, c->eos, c->eos_len);
        }
    }
    return PL_OK;
}

/* Mistral-7B-Instruct v0.1/v0.2 and Mixtral-8x7B-Instruct v0.1 ("v1" tokenizer). */
static pl_status render_mistral(struct out *o, const struct conv *c)
{
    if (c->n == 0)
        return pl_fail(c->err, PL_ERR_INVALID_ARG,
                       "mistral: the template reads messages[0] and needs at least one message");
    size_t first = c->n > 0 && role_is(&c->msgs[0], "system") ? 1 : 0;
    add(o, c->bos, c->bos_len);
    for (size_t k = first; k < c->n; k++) {
        size_t idx = k - first;
        const pl_chat_message *m = &c->msgs[k];
        if (role_is(m, "user") != (idx % 2 == 0))
            return pl_fail(c->err, PL_ERR_INVALID_ARG,
                           "mistral: After the optional system message, conversation roles must "
                           "alternate user/assistant/user/assistant/... (message %zu has role "
                           "'%s')",
                           k, m->role);
        if (role_is(m, "user")) {
            adds(o, " [INST] ");
            if (idx == 0 && first) {
                adds(o, c->msgs[0].content);
                adds(o, "\n\n");
            }
            adds(o, m->content);
            adds(o, " [/INST]");
        } else if (role_is(m, "assistant")) {
            adds(o, " ");
            adds(o, m->content);
            add(o, c->eos, c->eos_len);
        } else {
            return pl_fail(c->err, PL_ERR_INVALID_ARG,
                           "mistral: Only user and assistant roles are supported, with the "
                           "exception of an initial optional system message! (message %zu has "
                           "role '%s')",
                           k, m->role);
        }
    }
    return PL_OK;
}

pl_status pl_chat_render_named(const char *name, const char *bos, size_t bos_len, const char *eos,
                               size_t eos_len, const pl_chat_message *msgs, size_t n,
                               int add_generation_prompt, char *buf, size_t cap, size_t *n_out,
                               pl_error *err)
{
    if (n_out) *n_out = 0;
    if (!name || !n_out) return pl_fail(err, PL_ERR_INVALID_ARG, "name or n_out is NULL");
    if (!msgs && n > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "msgs is NULL");
    if (!buf && cap > 0) return pl_fail(err, PL_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    int k = find_name(name, strlen(name));
    if (k < 0)
        return pl_fail(err, PL_ERR_NOT_FOUND, "unknown chat template '%s' (known: " KNOWN ")",
                       name);
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role || !msgs[i].content)
            return pl_fail(err, PL_ERR_INVALID_ARG, "message %zu has a NULL %s", i,
                           msgs[i].role ? "content" : "role");
    struct conv c = {msgs, n, bos, eos, bos_len, eos_len, add_generation_prompt != 0, err};
    if (!c.bos) {
        c.bos = k == T_LLAMA3 ? "<|begin_of_text|>" : "<s>";
        c.bos_len = strlen(c.bos);
    }
    if (!c.eos) {
        c.eos = k == T_LLAMA3 ? "<|end_of_text|>" : "</s>";
        c.eos_len = strlen(c.eos);
    }
    struct out o = {buf, cap, 0};
    pl_status s = PL_OK;
    switch ((enum tmpl)k) {
    case T_CHATML:
        render_chatml(&o, &c, NULL);
        break;
    case T_QWEN2:
        render_chatml(&o, &c, QWEN2_SYSTEM);
        break;
    case T_QWEN25:
        s = render_qwen25(&o, &c);
        break;
    case T_LLAMA3:
        render_llama3(&o, &c);
        break;
    case T_LLAMA2:
        s = render_llama2(&o, &c);
        break;
    case T_MISTRAL:
        s = render_mistral(&o, &c);
        break;
    case T_COUNT:
        break;
    }
    if (s) return s;
    *n_out = o.n;
    if (o.n > cap)
        return pl_fail(err, PL_ERR_BUFFER_TOO_SMALL,
                       "the prompt needs %zu bytes but the output buffer holds %zu", o.n, cap);
    return pl_ok(err);
}
