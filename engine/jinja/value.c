/* value.c — the bottom of the Jinja engine: the arena, errors and the step count, the values a
 * render computes with and how Python shows them (str() and repr() of lists and dicts, float
 * repr, json.dumps as transformers' tojson calls it), equality, ordering, iteration. All memory
 * comes from the arena. Not the evaluator (eval.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "jinja/jinja_int.h"

/* ---- arena --------------------------------------------------------------------------------- */
struct jarena_chunk {
    jarena_chunk *next;
    size_t size, used;
    max_align_t data[];
};

void *ja_alloc(jarena *a, jfail *f, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (n == 0) n = sizeof(max_align_t);
    jarena_chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 60000 ? n : 60000;
        if (a->limit && (a->used > a->limit || size > a->limit - a->used))
            jfail_at(f, PL_ERR_LIMIT, 0, 0,
                     "the render needs more than %zu bytes of memory "
                     "(limit max_memory)",
                     a->limit);
        c = pl_malloc(sizeof *c + size);
        if (!c) jfail_at(f, PL_ERR_NOMEM, 0, 0, "out of memory (%zu bytes)", size);
        c->size = size, c->used = 0, c->next = a->head;
        a->head = c;
        a->used += size;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

void ja_free_all(jarena *a)
{
    jarena_chunk *c = a->head;
    while (c) {
        jarena_chunk *next = c->next;
        pl_free(c);
        c = next;
    }
    a->head = NULL, a->used = 0;
}

/* ---- errors and the step count: every file of the engine raises through these -------------- */
_Noreturn void jfail_at(jfail *f, pl_status code, uint32_t line, uint32_t col, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line == 0) line = f->line, col = f->col;
    f->code = pl_fail(f->err, code, "template line %u, column %u: %s", (unsigned)line,
                      (unsigned)col, msg);
    longjmp(f->jb, 1);
}

_Noreturn void jerr(jctx *c, const jnode *at, pl_status code, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jfail_at(&c->fail, code, at ? at->line : 0, at ? at->col : 0, "%s", msg);
}

_Noreturn void jstep_limit(jctx *c, const jnode *at)
{
    jerr(c, at, PL_ERR_LIMIT, "more than %llu steps (limit max_steps)",
         (unsigned long long)c->lim->max_steps);
}

/* ---- UTF-8 ------------------------------------------------------------------------------ */
static size_t utf8_char(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80) return 1;
    size_t len;
    uint32_t min;
    if ((p[0] & 0xE0) == 0xC0)
        len = 2, min = 0x80;
    else if ((p[0] & 0xF0) == 0xE0)
        len = 3, min = 0x800;
    else if ((p[0] & 0xF8) == 0xF0)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len) return 0;
    uint32_t cp = p[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

size_t jutf8_valid_prefix(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t l = utf8_char((const unsigned char *)s + i, n - i);
        if (!l) return i;
        i += l;
    }
    return n;
}

size_t jutf8_count(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* ---- constructors ------------------------------------------------------------------------- */
const jstr *jstr_new(jarena *a, jfail *f, const char *s, size_t n)
{
    if (n > SIZE_MAX / 2) jfail_at(f, PL_ERR_LIMIT, 0, 0, "string too long");
    jstr *r = ja_alloc(a, f, sizeof *r + n + 1);
    r->len = n;
    if (n) memcpy(r->s, s, n);
    r->s[n] = 0;
    return r;
}

const jstr *jstr_concat(jctx *c, const jstr *a, const jstr *b)
{
    size_t n;
    if (!pl_add_size(a->len, b->len, &n) || n > SIZE_MAX / 2)
        jerr(c, NULL, PL_ERR_LIMIT, "string too long");
    jstr *r = ja_alloc(&c->arena, &c->fail, sizeof *r + n + 1);
    r->len = n;
    memcpy(r->s, a->s, a->len);
    memcpy(r->s + a->len, b->s, b->len);
    r->s[n] = 0;
    return r;
}

void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n)
{
    if (n > b->cap - b->n) {
        size_t need;
        if (!pl_add_size(b->n, n, &need) || need > SIZE_MAX / 4)
            jerr(c, NULL, PL_ERR_LIMIT, "string too long");
        size_t cap = b->cap ? b->cap : 64;
        while (cap < need) cap *= 2;
        char *p = ja_alloc(&c->arena, &c->fail, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p, b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}

void jbuf_putc(jctx *c, jbuf *b, char ch)
{
    jbuf_put(c, b, &ch, 1);
}

const jstr *jbuf_str(jctx *c, jbuf *b)
{
    return jstr_new(&c->arena, &c->fail, b->p ? b->p : "", b->n);
}

jlist *jlist_new(jctx *c, size_t cap)
{
    jlist *l = ja_alloc(&c->arena, &c->fail, sizeof *l);
    l->n = 0, l->cap = cap;
    if (cap > SIZE_MAX / sizeof(jv) / 2) jerr(c, NULL, PL_ERR_LIMIT, "list too long");
    l->v = cap ? ja_alloc(&c->arena, &c->fail, cap * sizeof(jv)) : NULL;
    return l;
}

void jlist_push(jctx *c, jlist *l, jv v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof(jv) / 2) jerr(c, NULL, PL_ERR_LIMIT, "list too long");
        jv *nv = ja_alloc(&c->arena, &c->fail, cap * sizeof(jv));
        if (l->n) memcpy(nv, l->v, l->n * sizeof(jv));
        l->v = nv, l->cap = cap;
    }
    l->v[l->n++] = v;
}

jdict *jdict_new(jctx *c, size_t cap)
{
    jdict *d = ja_alloc(&c->arena, &c->fail, sizeof *d);
    d->n = 0, d->cap = cap;
    if (cap > SIZE_MAX / sizeof(jv) / 4) jerr(c, NULL, PL_ERR_LIMIT, "dict too large");
    d->k = cap ? ja_alloc(&c->arena, &c->fail, cap * sizeof(jv)) : NULL;
    d->v = cap ? ja_alloc(&c->arena, &c->fail, cap * sizeof(jv)) : NULL;
    return d;
}

static jv *dict_slot(const jdict *d, jv k)
{
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->k[i], k)) return &d->v[i];
    return NULL;
}

void jdict_set(jctx *c, jdict *d, jv k, jv v)
{
    jv *slot = dict_slot(d, k);
    if (slot) {
        *slot = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        if (cap > SIZE_MAX / sizeof(jv) / 4) jerr(c, NULL, PL_ERR_LIMIT, "dict too large");
        jv *nk = ja_alloc(&c->arena, &c->fail, cap * sizeof(jv));
        jv *nv = ja_alloc(&c->arena, &c->fail, cap * sizeof(jv));
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof(jv));
            memcpy(nv, d->v, d->n * sizeof(jv));
        }
        d->k = nk, d->v = nv, d->cap = cap;
    }
    d->k[d->n] = k, d->v[d->n] = v;
    d->n++;
}

const jv *jdict_get(const jdict *d, jv k)
{
    return dict_slot(d, k);
}

const jv *jdict_get_str(const jdict *d, const char *k, size_t n)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == JV_STR && d->k[i].u.s->len == n && !memcmp(d->k[i].u.s->s, k, n))
            return &d->v[i];
    return NULL;
}

jv jv_str(const jstr *s)
{
    jv v = {.t = JV_STR};
    v.u.s = s;
    return v;
}
jv jv_int(int64_t i)
{
    jv v = {.t = JV_INT};
    v.u.i = i;
    return v;
}
jv jv_bool(int b)
{
    jv v = {.t = JV_BOOL};
    v.u.i = b != 0;
    return v;
}
jv jv_none(void)
{
    jv v = {.t = JV_NONE};
    return v;
}
jv jv_undef(const jstr *why)
{
    jv v = {.t = JV_UNDEF};
    v.u.s = why;
    return v;
}
jv jv_cstr(jctx *c, const char *s)
{
    return jv_str(jstr_new(&c->arena, &c->fail, s, strlen(s)));
}

jv jv_from_json(jctx *c, const json_t *j, int depth)
{
    if (depth > 200) jerr(c, NULL, PL_ERR_LIMIT, "the context nests deeper than 200 levels");
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        jdict *d = jdict_new(c, json_object_size(j));
        const char *k;
        json_t *v;
        /* keys are unique in a JSON object as jansson holds it: append without a lookup */
        json_object_foreach((json_t *)j, k, v)
        {
            d->k[d->n] = jv_str(jstr_new(&c->arena, &c->fail, k, strlen(k)));
            d->v[d->n] = jv_from_json(c, v, depth + 1);
            d->n++;
        }
        jv r = {.t = JV_DICT};
        r.u.d = d;
        return r;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        jlist *l = jlist_new(c, n);
        for (size_t i = 0; i < n; i++)
            l->v[l->n++] = jv_from_json(c, json_array_get(j, i), depth + 1);
        jv r = {.t = JV_LIST};
        r.u.l = l;
        return r;
    }
    case JSON_STRING:
        return jv_str(jstr_new(&c->arena, &c->fail, json_string_value(j), json_string_length(j)));
    case JSON_INTEGER:
        return jv_int((int64_t)json_integer_value(j));
    case JSON_REAL: {
        jv r = {.t = JV_FLOAT};
        r.u.f = json_real_value(j);
        return r;
    }
    case JSON_TRUE:
        return jv_bool(1);
    case JSON_FALSE:
        return jv_bool(0);
    default:
        return jv_none();
    }
}

/* ---- truth, equality, order ------------------------------------------------------------- */
int jv_truthy(jv v)
{
    switch (v.t) {
    case JV_UNDEF:
    case JV_NONE:
        return 0;
    case JV_BOOL:
    case JV_INT:
        return v.u.i != 0;
    case JV_FLOAT:
        return v.u.f != 0.0;
    case JV_STR:
        return v.u.s->len != 0;
    case JV_LIST:
        return v.u.l->n != 0;
    case JV_DICT:
        return v.u.d->n != 0;
    default:
        return 1;
    }
}

static int is_num(jv v)
{
    return v.t == JV_BOOL || v.t == JV_INT || v.t == JV_FLOAT;
}

/* Values a render builds may nest without bound ({% set ns.x = [ns.x] %} in a loop): past this
 * depth, lists and dicts compare by identity (equality) or fail (order), never the C stack. */
#define MAX_VALUE_DEPTH 200

static int equal_at(jv a, jv b, int depth)
{
    if (is_num(a) && is_num(b)) {
        if (a.t == JV_FLOAT || b.t == JV_FLOAT) {
            double x = a.t == JV_FLOAT ? a.u.f : (double)a.u.i;
            double y = b.t == JV_FLOAT ? b.u.f : (double)b.u.i;
            return x == y;
        }
        return a.u.i == b.u.i;
    }
    if (a.t != b.t) return 0;
    if ((a.t == JV_LIST || a.t == JV_DICT) && depth > MAX_VALUE_DEPTH)
        return a.t == JV_LIST ? a.u.l == b.u.l && a.tuple == b.tuple : a.u.d == b.u.d;
    switch (a.t) {
    case JV_UNDEF:
    case JV_NONE:
        return 1;
    case JV_STR:
        return a.u.s->len == b.u.s->len && !memcmp(a.u.s->s, b.u.s->s, a.u.s->len);
    case JV_LIST:
        if (a.tuple != b.tuple || a.u.l->n != b.u.l->n) return 0;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!equal_at(a.u.l->v[i], b.u.l->v[i], depth + 1)) return 0;
        return 1;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n) return 0;
        for (size_t i = 0; i < a.u.d->n; i++) {
            const jv *o = jdict_get(b.u.d, a.u.d->k[i]);
            if (!o || !equal_at(a.u.d->v[i], *o, depth + 1)) return 0;
        }
        return 1;
    case JV_NS:
        return a.u.d == b.u.d;
    case JV_MACRO:
    case JV_CALLER:
        return a.u.mac.m == b.u.mac.m && a.u.mac.frame == b.u.mac.frame;
    case JV_LOOP:
        return a.u.loop == b.u.loop;
    case JV_FUNC:
        return a.fn == b.fn;
    case JV_METHOD:
        return a.fn == b.fn && a.u.self == b.u.self;
    default:
        return 0;
    }
}

int jv_equal(jv a, jv b)
{
    return equal_at(a, b, 0);
}

static int compare_at(jctx *c, const jnode *at, jv a, jv b, int depth)
{
    if (is_num(a) && is_num(b)) {
        if (a.t == JV_FLOAT || b.t == JV_FLOAT) {
            double x = a.t == JV_FLOAT ? a.u.f : (double)a.u.i;
            double y = b.t == JV_FLOAT ? b.u.f : (double)b.u.i;
            return x < y ? -1 : x > y ? 1 : 0; /* NaN compares as neither */
        }
        return a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
    }
    if (a.t == JV_STR && b.t == JV_STR) {
        /* UTF-8 byte order is code point order */
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int r = memcmp(a.u.s->s, b.u.s->s, n);
        if (r) return r < 0 ? -1 : 1;
        return a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len;
    }
    if (a.t == JV_LIST && b.t == JV_LIST && a.tuple == b.tuple) {
        if (depth > MAX_VALUE_DEPTH)
            jerr(c, at, PL_ERR_LIMIT, "comparing lists nested deeper than %d levels",
                 MAX_VALUE_DEPTH);
        size_t n = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < n; i++) {
            if (jv_equal(a.u.l->v[i], b.u.l->v[i])) continue;
            return compare_at(c, at, a.u.l->v[i], b.u.l->v[i], depth + 1);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    jerr(c, at, PL_ERR_INVALID_ARG, "'<' not supported between instances of '%s' and '%s'",
         jv_type_name(a), jv_type_name(b));
}

int jv_compare(jctx *c, const jnode *at, jv a, jv b)
{
    return compare_at(c, at, a, b, 0);
}

const char *jv_type_name(jv v)
{
    switch (v.t) {
    case JV_UNDEF:
        return "Undefined";
    case JV_NONE:
        return "NoneType";
    case JV_BOOL:
        return "bool";
    case JV_INT:
        return "int";
    case JV_FLOAT:
        return "float";
    case JV_STR:
        return "str";
    case JV_LIST:
        return v.tuple ? "tuple" : "list";
    case JV_DICT:
        return "dict";
    case JV_NS:
        return "Namespace";
    case JV_MACRO:
        return "Macro";
    case JV_LOOP:
        return "LoopContext";
    default:
        return "function";
    }
}

/* ---- printing ---------------------------------------------------------------------------- */

/* Python's repr(float): the shortest digits that round-trip, exponent form outside
 * [1e-4, 1e16) */
void jfloat_repr(char *buf, size_t cap, double f)
{
    if (isnan(f)) {
        snprintf(buf, cap, "nan");
        return;
    }
    if (isinf(f)) {
        snprintf(buf, cap, f < 0 ? "-inf" : "inf");
        return;
    }
    char digits[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(digits, sizeof digits, "%.*e", prec - 1, f);
        if (strtod(digits, NULL) == f) break;
    }
    /* digits: [-]d.ddde[+-]XX */
    char mant[24];
    size_t nm = 0;
    const char *q = digits;
    int neg = 0;
    if (*q == '-') neg = 1, q++;
    for (; *q && *q != 'e'; q++)
        if (*q != '.') mant[nm++] = *q;
    mant[nm] = 0;
    int exp10 = atoi(q + 1);
    while (nm > 1 && mant[nm - 1] == '0') mant[--nm] = 0;
    char *o = buf;
    size_t left = cap;
#define OUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(o, left, __VA_ARGS__);                                                   \
        if (w_ < 0 || (size_t)w_ >= left) return;                                                  \
        o += w_, left -= (size_t)w_;                                                               \
    } while (0)
    if (neg) OUT("-");
    if (exp10 < -4 || exp10 >= 16) {
        OUT("%c", mant[0]);
        if (nm > 1) OUT(".%s", mant + 1);
        OUT("e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    } else if (exp10 < 0) {
        OUT("0.");
        for (int i = 0; i < -exp10 - 1; i++) OUT("0");
        OUT("%s", mant);
    } else {
        for (int i = 0; i <= exp10; i++) OUT("%c", i < (int)nm ? mant[i] : '0');
        OUT(".");
        if ((int)nm > exp10 + 1)
            OUT("%s", mant + exp10 + 1);
        else
            OUT("0");
    }
#undef OUT
}

static void put_int(jctx *c, jbuf *b, int64_t i)
{
    char t[32];
    int n = snprintf(t, sizeof t, "%lld", (long long)i);
    jbuf_put(c, b, t, (size_t)n);
}

/* Python's str.isprintable() for one code point */
static int cp_printable(int32_t cp)
{
    if (cp == ' ') return 1;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return 0;
    default:
        return 1;
    }
}

static void repr_str(jctx *c, jbuf *b, const jstr *s)
{
    int has_sq = memchr(s->s, '\'', s->len) != NULL, has_dq = memchr(s->s, '"', s->len) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jbuf_putc(c, b, q);
    size_t i = 0;
    while (i < s->len) {
        unsigned char ch = (unsigned char)s->s[i];
        char t[16];
        if (ch < 0x80) {
            if (ch == (unsigned char)q || ch == '\\') {
                jbuf_putc(c, b, '\\');
                jbuf_putc(c, b, (char)ch);
            } else if (ch == '\n') {
                jbuf_put(c, b, "\\n", 2);
            } else if (ch == '\r') {
                jbuf_put(c, b, "\\r", 2);
            } else if (ch == '\t') {
                jbuf_put(c, b, "\\t", 2);
            } else if (ch < 0x20 || ch == 0x7f) {
                snprintf(t, sizeof t, "\\x%02x", ch);
                jbuf_put(c, b, t, 4);
            } else {
                jbuf_putc(c, b, (char)ch);
            }
            i++;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s->s + i,
                                              (utf8proc_ssize_t)(s->len - i), &cp);
        if (l <= 0) l = 1, cp = 0xFFFD;
        if (cp_printable(cp)) {
            jbuf_put(c, b, s->s + i, (size_t)l);
        } else {
            int w = cp < 0x100     ? snprintf(t, sizeof t, "\\x%02x", (unsigned)cp)
                    : cp < 0x10000 ? snprintf(t, sizeof t, "\\u%04x", (unsigned)cp)
                                   : snprintf(t, sizeof t, "\\U%08x", (unsigned)cp);
            jbuf_put(c, b, t, (size_t)w);
        }
        i += (size_t)l;
    }
    jbuf_putc(c, b, q);
}

static void print_to(jctx *c, jbuf *b, jv v, int repr, int depth)
{
    if (depth > 200) jerr(c, NULL, PL_ERR_LIMIT, "a value nests deeper than 200 levels");
    char t[40];
    switch (v.t) {
    case JV_UNDEF:
        return;
    case JV_NONE:
        jbuf_put(c, b, "None", 4);
        return;
    case JV_BOOL:
        v.u.i ? jbuf_put(c, b, "True", 4) : jbuf_put(c, b, "False", 5);
        return;
    case JV_INT:
        put_int(c, b, v.u.i);
        return;
    case JV_FLOAT:
        jfloat_repr(t, sizeof t, v.u.f);
        jbuf_put(c, b, t, strlen(t));
        return;
    case JV_STR:
        if (repr)
            repr_str(c, b, v.u.s);
        else
            jbuf_put(c, b, v.u.s->s, v.u.s->len);
        return;
    case JV_LIST:
        jbuf_putc(c, b, v.tuple ? '(' : '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jbuf_put(c, b, ", ", 2);
            print_to(c, b, v.u.l->v[i], 1, depth + 1);
        }
        if (v.tuple && v.u.l->n == 1) jbuf_putc(c, b, ',');
        jbuf_putc(c, b, v.tuple ? ')' : ']');
        return;
    case JV_DICT:
        jbuf_putc(c, b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jbuf_put(c, b, ", ", 2);
            print_to(c, b, v.u.d->k[i], 1, depth + 1);
            jbuf_put(c, b, ": ", 2);
            print_to(c, b, v.u.d->v[i], 1, depth + 1);
        }
        jbuf_putc(c, b, '}');
        return;
    case JV_NS: {
        jbuf_put(c, b, "<Namespace {", 12);
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jbuf_put(c, b, ", ", 2);
            print_to(c, b, v.u.d->k[i], 1, depth + 1);
            jbuf_put(c, b, ": ", 2);
            print_to(c, b, v.u.d->v[i], 1, depth + 1);
        }
        jbuf_put(c, b, "}>", 2);
        return;
    }
    case JV_MACRO:
        jbuf_put(c, b, "<Macro>", 7);
        return;
    case JV_LOOP:
        jbuf_put(c, b, "<LoopContext>", 13);
        return;
    default:
        jbuf_put(c, b, "<function>", 10);
        return;
    }
}

void jv_str_to(jctx *c, jbuf *b, jv v)
{
    print_to(c, b, v, 0, 0);
}
void jv_repr_to(jctx *c, jbuf *b, jv v)
{
    print_to(c, b, v, 1, 0);
}

const jstr *jv_to_str(jctx *c, jv v)
{
    if (v.t == JV_STR) return v.u.s;
    jbuf b = {0};
    jv_str_to(c, &b, v);
    return jbuf_str(c, &b);
}

/* ---- json.dumps ---------------------------------------------------------------------------- */
static void json_str(jctx *c, jbuf *b, const char *s, size_t n)
{
    jbuf_putc(c, b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        jbuf_put(c, b, s + run, i - run);
        run = i + 1;
        char t[8];
        switch (ch) {
        case '"':
            jbuf_put(c, b, "\\\"", 2);
            break;
        case '\\':
            jbuf_put(c, b, "\\\\", 2);
            break;
        case '\n':
            jbuf_put(c, b, "\\n", 2);
            break;
        case '\r':
            jbuf_put(c, b, "\\r", 2);
            break;
        case '\t':
            jbuf_put(c, b, "\\t", 2);
            break;
        case '\b':
            jbuf_put(c, b, "\\b", 2);
            break;
        case '\f':
            jbuf_put(c, b, "\\f", 2);
            break;
        default:
            snprintf(t, sizeof t, "\\u%04x", ch);
            jbuf_put(c, b, t, 6);
        }
    }
    jbuf_put(c, b, s + run, n - run);
    jbuf_putc(c, b, '"');
}

static void json_newline(jctx *c, jbuf *b, const char *indent, size_t indent_len, int level)
{
    jbuf_putc(c, b, '\n');
    for (int i = 0; i < level; i++) jbuf_put(c, b, indent, indent_len);
}

static int key_cmp(const void *x, const void *y)
{
    const jstr *a = *(const jstr *const *)x, *b = *(const jstr *const *)y;
    size_t n = a->len < b->len ? a->len : b->len;
    int r = memcmp(a->s, b->s, n);
    return r ? r : (a->len > b->len) - (a->len < b->len);
}

/* a dict key as json.dumps writes it: str as is, int/float/bool/None converted */
static const jstr *json_key(jctx *c, const jnode *at, jv k)
{
    char t[40];
    switch (k.t) {
    case JV_STR:
        return k.u.s;
    case JV_INT:
        snprintf(t, sizeof t, "%lld", (long long)k.u.i);
        break;
    case JV_BOOL:
        snprintf(t, sizeof t, "%s", k.u.i ? "true" : "false");
        break;
    case JV_NONE:
        snprintf(t, sizeof t, "null");
        break;
    case JV_FLOAT:
        jfloat_repr(t, sizeof t, k.u.f);
        break;
    default:
        jerr(c, at, PL_ERR_INVALID_ARG, "keys must be str, int, float, bool or None, not %s",
             jv_type_name(k));
    }
    return jstr_new(&c->arena, &c->fail, t, strlen(t));
}

void jv_json_to(jctx *c, const jnode *at, jbuf *b, jv v, const char *indent, size_t indent_len,
                int use_indent, const char *item_sep, const char *key_sep, int sort_keys, int depth)
{
    if (depth > 200) jerr(c, at, PL_ERR_LIMIT, "tojson: a value nests deeper than 200 levels");
    jstep(c, at);
    char t[40];
    switch (v.t) {
    case JV_NONE:
        jbuf_put(c, b, "null", 4);
        return;
    case JV_BOOL:
        v.u.i ? jbuf_put(c, b, "true", 4) : jbuf_put(c, b, "false", 5);
        return;
    case JV_INT:
        put_int(c, b, v.u.i);
        return;
    case JV_FLOAT:
        if (isnan(v.u.f))
            snprintf(t, sizeof t, "NaN");
        else if (isinf(v.u.f))
            snprintf(t, sizeof t, v.u.f < 0 ? "-Infinity" : "Infinity");
        else
            jfloat_repr(t, sizeof t, v.u.f);
        jbuf_put(c, b, t, strlen(t));
        return;
    case JV_STR:
        json_str(c, b, v.u.s->s, v.u.s->len);
        return;
    case JV_LIST:
        if (!v.u.l->n) {
            jbuf_put(c, b, "[]", 2);
            return;
        }
        jbuf_putc(c, b, '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jbuf_put(c, b, item_sep, strlen(item_sep));
            if (use_indent) json_newline(c, b, indent, indent_len, depth + 1);
            jv_json_to(c, at, b, v.u.l->v[i], indent, indent_len, use_indent, item_sep, key_sep,
                       sort_keys, depth + 1);
        }
        if (use_indent) json_newline(c, b, indent, indent_len, depth);
        jbuf_putc(c, b, ']');
        return;
    case JV_DICT: {
        jdict *d = v.u.d;
        if (!d->n) {
            jbuf_put(c, b, "{}", 2);
            return;
        }
        const jstr **keys = ja_alloc(&c->arena, &c->fail, d->n * sizeof *keys);
        size_t *order = ja_alloc(&c->arena, &c->fail, d->n * sizeof *order);
        for (size_t i = 0; i < d->n; i++) keys[i] = json_key(c, at, d->k[i]), order[i] = i;
        if (sort_keys) {
            /* sort (key, index) pairs: the stable order of equal keys is the insertion order */
            const jstr **pairs = ja_alloc(&c->arena, &c->fail, d->n * 2 * sizeof *pairs);
            for (size_t i = 0; i < d->n; i++) {
                if (d->k[i].t != JV_STR)
                    jerr(c, at, PL_ERR_UNSUPPORTED, "tojson(sort_keys=true) with non-string keys");
                pairs[i] = keys[i];
            }
            qsort(pairs, d->n, sizeof *pairs, key_cmp);
            for (size_t i = 0; i < d->n; i++)
                for (size_t k = 0; k < d->n; k++)
                    if (keys[k] == pairs[i]) order[i] = k;
        }
        jbuf_putc(c, b, '{');
        for (size_t i = 0; i < d->n; i++) {
            size_t k = order[i];
            if (i) jbuf_put(c, b, item_sep, strlen(item_sep));
            if (use_indent) json_newline(c, b, indent, indent_len, depth + 1);
            json_str(c, b, keys[k]->s, keys[k]->len);
            jbuf_put(c, b, key_sep, strlen(key_sep));
            jv_json_to(c, at, b, d->v[k], indent, indent_len, use_indent, item_sep, key_sep,
                       sort_keys, depth + 1);
        }
        if (use_indent) json_newline(c, b, indent, indent_len, depth);
        jbuf_putc(c, b, '}');
        return;
    }
    default:
        jerr(c, at, PL_ERR_INVALID_ARG, "Object of type %s is not JSON serializable",
             jv_type_name(v));
    }
}

/* ---- iteration -------------------------------------------------------------------------- */
/* byte offsets of each code point of s (n + 1 entries) */
size_t *jstr_offsets(jctx *c, const jstr *s, size_t *n_cp)
{
    size_t n = jutf8_count(s->s, s->len), k = 0;
    size_t *off = ja_alloc(&c->arena, &c->fail, (n + 1) * sizeof *off);
    for (size_t i = 0; i < s->len; i++)
        if (((unsigned char)s->s[i] & 0xC0) != 0x80) off[k++] = i;
    off[k] = s->len;
    *n_cp = n;
    return off;
}

jlist *jiter(jctx *c, const jnode *at, jv v)
{
    switch (v.t) {
    case JV_UNDEF:
        return jlist_new(c, 0);
    case JV_LIST:
        return v.u.l;
    case JV_DICT:
    case JV_NS: {
        jlist *l = jlist_new(c, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) l->v[l->n++] = v.u.d->k[i];
        return l;
    }
    case JV_STR: {
        size_t n;
        size_t *off = jstr_offsets(c, v.u.s, &n);
        jlist *l = jlist_new(c, n);
        for (size_t i = 0; i < n; i++)
            l->v[l->n++] =
                jv_str(jstr_new(&c->arena, &c->fail, v.u.s->s + off[i], off[i + 1] - off[i]));
        return l;
    }
    default:
        jerr(c, at, PL_ERR_INVALID_ARG, "'%s' object is not iterable", jv_type_name(v));
    }
}
