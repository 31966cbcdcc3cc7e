/* builtins.c — what a template may call: jinja2's filters and tests, the globals transformers
 * adds (raise_exception, strftime_now) beside range/namespace/dict, and the Python methods
 * of str, dict and list that chat templates use (the immutable sandbox's safe ones only).
 * Not the evaluator (eval.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "jinja/jinja_int.h"

#define MAX_RANGE 100000 /* jinja2.sandbox.MAX_RANGE */

static int name_is(const char *s, size_t n, const char *lit)
{
    /* the first byte settles most comparisons before strlen */
    return n && s[0] == lit[0] && strlen(lit) == n && !memcmp(s, lit, n);
}
static int jname_is(const jstr *s, const char *lit)
{
    return name_is(s->s, s->len, lit);
}

/* ---- arguments ------------------------------------------------------------------------------ */
typedef struct argv_ {
    const jv *args;
    size_t n_args;
    const jstr *const *kw;
    size_t n_kw;
    int used_kw[16];
} argv_;

/* argument i (positional) or named `name`; NULL when absent */
static const jv *arg(argv_ *a, size_t i, const char *name)
{
    if (i < a->n_args) return &a->args[i];
    for (size_t k = 0; k < a->n_kw; k++)
        if (jname_is(a->kw[k], name)) {
            if (k < 16) a->used_kw[k] = 1;
            return &a->args[a->n_args + k];
        }
    return NULL;
}

static void args_done(jctx *c, const jnode *at, argv_ *a, size_t max_pos, const char *what)
{
    if (a->n_args > max_pos)
        jerr(c, at, PL_ERR_INVALID_ARG, "%s takes at most %zu positional argument(s), got %zu",
             what, max_pos, a->n_args);
    for (size_t k = 0; k < a->n_kw && k < 16; k++)
        if (!a->used_kw[k])
            jerr(c, at, PL_ERR_INVALID_ARG, "%s got an unexpected keyword argument '%.40s'", what,
                 a->kw[k]->s);
}

static const jstr *want_str(jctx *c, const jnode *at, const jv *v, const char *what)
{
    if (!v || v->t != JV_STR)
        jerr(c, at, PL_ERR_INVALID_ARG, "%s: expected a string, got %s", what,
             v ? jv_type_name(*v) : "nothing");
    return v->u.s;
}

static int64_t want_int(jctx *c, const jnode *at, const jv *v, const char *what)
{
    if (!v || (v->t != JV_INT && v->t != JV_BOOL))
        jerr(c, at, PL_ERR_INVALID_ARG, "%s: expected an integer, got %s", what,
             v ? jv_type_name(*v) : "nothing");
    return v->u.i;
}

static jv list_v(jlist *l)
{
    jv v = {.t = JV_LIST};
    v.u.l = l;
    return v;
}
static jv tuple2(jctx *c, jv a, jv b)
{
    jlist *l = jlist_new(c, 2);
    l->v[0] = a, l->v[1] = b, l->n = 2;
    jv v = list_v(l);
    v.tuple = 1;
    return v;
}
static jv fval(double f)
{
    jv v = {.t = JV_FLOAT};
    v.u.f = f;
    return v;
}
static jv str_v(jctx *c, const char *s, size_t n)
{
    return jv_str(jstr_new(&c->arena, &c->fail, s, n));
}

/* ---- Unicode helpers ------------------------------------------------------------------------ */
static int32_t next_cp(const char *s, size_t n, size_t *i)
{
    utf8proc_int32_t cp;
    utf8proc_ssize_t l =
        utf8proc_iterate((const utf8proc_uint8_t *)s + *i, (utf8proc_ssize_t)(n - *i), &cp);
    if (l <= 0) l = 1, cp = (unsigned char)s[*i];
    *i += (size_t)l;
    return cp;
}

static void put_cp(jctx *c, jbuf *b, int32_t cp)
{
    utf8proc_uint8_t t[4];
    utf8proc_ssize_t l = utf8proc_encode_char(cp, t);
    jbuf_put(c, b, (const char *)t, (size_t)l);
}

/* Python's str.isspace() for one code point */
static int py_space(int32_t cp)
{
    return (cp >= 9 && cp <= 13) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static int in_chars(int32_t cp, const jstr *chars)
{
    size_t i = 0;
    while (i < chars->len)
        if (next_cp(chars->s, chars->len, &i) == cp) return 1;
    return 0;
}

/* strip (which: 1 left, 2 right, 3 both) whitespace or the code points of chars */
static jv strip(jctx *c, const jstr *s, const jstr *chars, int which)
{
    size_t lo = 0, hi = s->len;
    if (which & 1)
        while (lo < hi) {
            size_t i = lo;
            int32_t cp = next_cp(s->s, hi, &i);
            if (chars ? !in_chars(cp, chars) : !py_space(cp)) break;
            lo = i;
        }
    if (which & 2)
        while (hi > lo) {
            size_t st = hi - 1;
            while (st > lo && ((unsigned char)s->s[st] & 0xC0) == 0x80) st--;
            size_t i = st;
            int32_t cp = next_cp(s->s, hi, &i);
            if (chars ? !in_chars(cp, chars) : !py_space(cp)) break;
            hi = st;
        }
    return str_v(c, s->s + lo, hi - lo);
}

static jv case_map(jctx *c, const jstr *s, int mode) /* 0 lower, 1 upper, 2 title, 3 capitalize */
{
    if (mode < 2) { /* an ASCII string maps byte for byte ("user"|lower on every message) */
        size_t k = 0;
        while (k < s->len && (unsigned char)s->s[k] < 0x80) k++;
        if (k == s->len) {
            jstr *r = (jstr *)jstr_new(&c->arena, &c->fail, s->s, s->len);
            for (size_t i = 0; i < r->len; i++) {
                char ch = r->s[i];
                if (mode ? (ch >= 'a' && ch <= 'z') : (ch >= 'A' && ch <= 'Z'))
                    r->s[i] = (char)(mode ? ch - 32 : ch + 32);
            }
            return jv_str(r);
        }
    }
    jbuf b = {0};
    size_t i = 0;
    int prev_cased = 0, first = 1;
    while (i < s->len) {
        unsigned char ch = (unsigned char)s->s[i];
        if (ch < 0x80 && mode < 2) { /* ASCII: no table needed */
            jbuf_putc(c, &b,
                      (char)(mode ? (ch >= 'a' && ch <= 'z' ? ch - 32 : ch)
                                  : (ch >= 'A' && ch <= 'Z' ? ch + 32 : ch)));
            i++;
            continue;
        }
        int32_t cp = next_cp(s->s, s->len, &i), r;
        switch (mode) {
        case 0:
            r = utf8proc_tolower(cp);
            break;
        case 1:
            r = utf8proc_toupper(cp);
            break;
        case 2:
            r = prev_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp);
            break;
        default:
            r = first ? utf8proc_totitle(cp) : utf8proc_tolower(cp);
            break;
        }
        const utf8proc_property_t *p = utf8proc_get_property(cp);
        int cat = p->category;
        prev_cased = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
                     cat == UTF8PROC_CATEGORY_LT;
        first = 0;
        put_cp(c, &b, r);
    }
    return jv_str(jbuf_str(c, &b));
}

/* jinja2's title filter (not str.title): the pieces between runs of [-\s({\[<] get their first
 * character upper-cased and the rest lower-cased, so "don't" stays "Don't" */
static jv title_filter(jctx *c, const jstr *s)
{
    jbuf b = {0};
    size_t i = 0;
    int at_start = 1;
    while (i < s->len) {
        int32_t cp = next_cp(s->s, s->len, &i);
        int sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || py_space(cp);
        put_cp(c, &b, sep ? cp : at_start ? utf8proc_toupper(cp) : utf8proc_tolower(cp));
        at_start = sep;
    }
    return jv_str(jbuf_str(c, &b));
}

static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn == 0) return h;
    for (size_t i = 0; i + nn <= hn; i++)
        if (!memcmp(h + i, n, nn)) return h + i;
    return NULL;
}

static const char *rfind_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
    if (nn > hn) return NULL;
    for (size_t i = hn - nn + 1; i-- > 0;)
        if (!memcmp(h + i, n, nn)) return h + i;
    return NULL;
}

static jv replace(jctx *c, const jnode *at, const jstr *s, const jstr *old, const jstr *new_,
                  int64_t count)
{
    jbuf b = {0};
    if (!old->len) {
        /* Python inserts new before every character and at the end */
        size_t i = 0;
        int64_t k = 0;
        while (i <= s->len) {
            if (count < 0 || k < count) jbuf_put(c, &b, new_->s, new_->len), k++;
            if (i == s->len) break;
            size_t st = i;
            next_cp(s->s, s->len, &i);
            jbuf_put(c, &b, s->s + st, i - st);
            jstep(c, at);
        }
        return jv_str(jbuf_str(c, &b));
    }
    size_t i = 0;
    int64_t k = 0;
    while (i < s->len && (count < 0 || k < count)) {
        const char *p = find_bytes(s->s + i, s->len - i, old->s, old->len);
        if (!p) break;
        size_t off = (size_t)(p - s->s);
        jbuf_put(c, &b, s->s + i, off - i);
        jbuf_put(c, &b, new_->s, new_->len);
        i = off + old->len;
        k++;
        jstep(c, at);
    }
    jbuf_put(c, &b, s->s + i, s->len - i);
    return jv_str(jbuf_str(c, &b));
}

static jv split(jctx *c, const jnode *at, const jstr *s, const jstr *sep, int64_t maxsplit,
                int right)
{
    jlist *l = jlist_new(c, 4);
    if (!sep) {
        /* runs of whitespace, empty strings dropped */
        size_t i = 0, n = s->len;
        if (!right) {
            while (i < n) {
                size_t j = i;
                while (j < n) {
                    size_t k = j;
                    if (!py_space(next_cp(s->s, n, &k))) break;
                    j = k;
                }
                i = j;
                if (i >= n) break;
                if (maxsplit >= 0 && (int64_t)l->n >= maxsplit) {
                    /* the rest, right-stripped */
                    jv rest = strip(c, jstr_new(&c->arena, &c->fail, s->s + i, n - i), NULL, 2);
                    jlist_push(c, l, rest);
                    break;
                }
                j = i;
                while (j < n) {
                    size_t k = j;
                    if (py_space(next_cp(s->s, n, &k))) break;
                    j = k;
                }
                jlist_push(c, l, str_v(c, s->s + i, j - i));
                i = j;
                jstep(c, at);
            }
            return list_v(l);
        }
        /* rsplit(None, maxsplit): from the right */
        jv whole = list_v(l);
        jv parts = split(c, at, s, NULL, -1, 0);
        jlist *pl = parts.u.l;
        if (maxsplit < 0 || (size_t)maxsplit >= pl->n) return parts;
        /* keep the last maxsplit words; the head is the original text up to them, stripped */
        size_t keep = (size_t)maxsplit, cut = s->len;
        for (size_t w = 0; w < keep; w++) {
            const jstr *word = pl->v[pl->n - 1 - w].u.s;
            const char *p = rfind_bytes(s->s, cut, word->s, word->len);
            cut = (size_t)(p - s->s);
        }
        jv head = strip(c, jstr_new(&c->arena, &c->fail, s->s, cut), NULL, 3);
        jlist_push(c, l, head);
        for (size_t w = pl->n - keep; w < pl->n; w++) jlist_push(c, l, pl->v[w]);
        return whole;
    }
    if (!sep->len) jerr(c, at, PL_ERR_INVALID_ARG, "empty separator");
    if (!right) {
        size_t i = 0;
        for (;;) {
            const char *p = maxsplit >= 0 && (int64_t)l->n >= maxsplit
                                ? NULL
                                : find_bytes(s->s + i, s->len - i, sep->s, sep->len);
            if (!p) {
                jlist_push(c, l, str_v(c, s->s + i, s->len - i));
                return list_v(l);
            }
            jlist_push(c, l, str_v(c, s->s + i, (size_t)(p - s->s) - i));
            i = (size_t)(p - s->s) + sep->len;
            jstep(c, at);
        }
    }
    /* rsplit with a separator: collect from the right, then reverse */
    jlist *r = jlist_new(c, 4);
    size_t end = s->len;
    for (;;) {
        const char *p = maxsplit >= 0 && (int64_t)r->n >= maxsplit
                            ? NULL
                            : rfind_bytes(s->s, end, sep->s, sep->len);
        if (!p) {
            jlist_push(c, r, str_v(c, s->s, end));
            break;
        }
        size_t off = (size_t)(p - s->s);
        jlist_push(c, r, str_v(c, s->s + off + sep->len, end - off - sep->len));
        end = off;
        jstep(c, at);
    }
    for (size_t i = r->n; i-- > 0;) jlist_push(c, l, r->v[i]);
    return list_v(l);
}

/* str.splitlines(): \n \r \r\n \v \f \x1c-\x1e \x85 U+2028 U+2029 end a line */
static jlist *splitlines(jctx *c, const jstr *s)
{
    jlist *l = jlist_new(c, 4);
    size_t i = 0, start = 0;
    while (i < s->len) {
        size_t st = i;
        int32_t cp = next_cp(s->s, s->len, &i);
        if (cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' || (cp >= 0x1c && cp <= 0x1e) ||
            cp == 0x85 || cp == 0x2028 || cp == 0x2029) {
            jlist_push(c, l, str_v(c, s->s + start, st - start));
            if (cp == '\r' && i < s->len && s->s[i] == '\n') i++;
            start = i;
        }
    }
    if (start < s->len) jlist_push(c, l, str_v(c, s->s + start, s->len - start));
    return l;
}

/* ---- globals -------------------------------------------------------------------------------- */
int jbuiltin_global(const char *name, size_t n)
{
    if (name_is(name, n, "range")) return JF_RANGE;
    if (name_is(name, n, "namespace")) return JF_NAMESPACE;
    if (name_is(name, n, "dict")) return JF_DICT;
    if (name_is(name, n, "raise_exception")) return JF_RAISE;
    if (name_is(name, n, "strftime_now")) return JF_STRFTIME;
    return -1;
}

static void dict_from_args(jctx *c, const jnode *at, jdict *d, const jv *args, size_t n_args,
                           const jstr *const *kw, size_t n_kw, const char *what)
{
    if (n_args > 1) jerr(c, at, PL_ERR_INVALID_ARG, "%s expected at most 1 argument", what);
    if (n_args == 1) {
        jv a = args[0];
        if (a.t == JV_DICT || a.t == JV_NS) {
            for (size_t i = 0; i < a.u.d->n; i++) jdict_set(c, d, a.u.d->k[i], a.u.d->v[i]);
        } else if (a.t == JV_LIST) {
            for (size_t i = 0; i < a.u.l->n; i++) {
                jv p = a.u.l->v[i];
                if (p.t != JV_LIST || p.u.l->n != 2)
                    jerr(c, at, PL_ERR_INVALID_ARG, "%s: sequence element %zu is not a pair", what,
                         i);
                jdict_set(c, d, p.u.l->v[0], p.u.l->v[1]);
            }
        } else {
            jerr(c, at, PL_ERR_INVALID_ARG, "'%s' object is not iterable", jv_type_name(a));
        }
    }
    for (size_t k = 0; k < n_kw; k++) jdict_set(c, d, jv_str(kw[k]), args[n_args + k]);
}

jv jbuiltin_call_global(jctx *c, const jnode *at, int fn, const jv *args, size_t n_args,
                        const jstr *const *kw, size_t n_kw)
{
    argv_ a = {.args = args, .n_args = n_args, .kw = kw, .n_kw = n_kw};
    switch (fn) {
    case JF_RANGE: {
        if (n_kw) jerr(c, at, PL_ERR_INVALID_ARG, "range() takes no keyword arguments");
        if (n_args < 1 || n_args > 3)
            jerr(c, at, PL_ERR_INVALID_ARG, "range expected 1 to 3 arguments, got %zu", n_args);
        int64_t lo = 0, hi, step = 1;
        if (n_args == 1) {
            hi = want_int(c, at, &args[0], "range");
        } else {
            lo = want_int(c, at, &args[0], "range");
            hi = want_int(c, at, &args[1], "range");
            if (n_args == 3) step = want_int(c, at, &args[2], "range");
        }
        if (step == 0) jerr(c, at, PL_ERR_INVALID_ARG, "range() arg 3 must not be zero");
        double count = step > 0 ? ((double)hi - (double)lo) / (double)step
                                : ((double)lo - (double)hi) / (double)-step;
        if (count > MAX_RANGE)
            jerr(c, at, PL_ERR_LIMIT,
                 "Range too big. The sandbox blocks ranges larger than "
                 "MAX_RANGE (%d).",
                 MAX_RANGE);
        jlist *l = jlist_new(c, count > 0 ? (size_t)ceil(count) : 0);
        for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) {
            jlist_push(c, l, jv_int(i));
            if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
        }
        return list_v(l);
    }
    case JF_NAMESPACE:
    case JF_DICT: {
        jdict *d = jdict_new(c, 4);
        dict_from_args(c, at, d, args, n_args, kw, n_kw, fn == JF_DICT ? "dict" : "namespace");
        jv v = {.t = fn == JF_DICT ? JV_DICT : JV_NS};
        v.u.d = d;
        return v;
    }
    case JF_RAISE: {
        const jv *m = arg(&a, 0, "message");
        args_done(c, at, &a, 1, "raise_exception");
        const jstr *s = m ? jv_to_str(c, *m) : jstr_new(&c->arena, &c->fail, "", 0);
        jerr(c, at, PL_ERR_INVALID_ARG, "raised: %.150s", s->s);
    }
    case JF_STRFTIME: {
        const jstr *f = want_str(c, at, arg(&a, 0, "format"), "strftime_now");
        args_done(c, at, &a, 1, "strftime_now");
        if (f->len > 256 || memchr(f->s, 0, f->len))
            jerr(c, at, PL_ERR_UNSUPPORTED,
                 "strftime_now: format longer than 256 bytes or "
                 "holding NUL");
        time_t t = (time_t)c->lim->now;
        struct tm tm;
        if (!gmtime_r(&t, &tm)) jerr(c, at, PL_ERR_INVALID_ARG, "strftime_now: bad clock");
        char buf[16384]; /* 256 bytes of conversions, each at most a few dozen bytes */
        size_t n = f->len ? strftime(buf, sizeof buf, f->s, &tm) : 0;
        return str_v(c, buf, n);
    }
    default:
        jerr(c, at, PL_ERR_INVALID_ARG, "not callable");
    }
}

/* ---- attributes and methods ----------------------------------------------------------------- */
enum {
    JM_ITEMS,
    JM_KEYS,
    JM_VALUES,
    JM_GET,
    JM_COPY,
    JM_STRIP,
    JM_LSTRIP,
    JM_RSTRIP,
    JM_SPLIT,
    JM_RSPLIT,
    JM_STARTSWITH,
    JM_ENDSWITH,
    JM_REPLACE,
    JM_UPPER,
    JM_LOWER,
    JM_TITLE,
    JM_CAPITALIZE,
    JM_FIND,
    JM_RFIND,
    JM_COUNT,
    JM_JOIN,
    JM_SPLITLINES,
    JM_ISDIGIT,
    JM_ISALPHA,
    JM_ISSPACE,
    JM_ISUPPER,
    JM_ISLOWER,
    JM_REMOVEPREFIX,
    JM_REMOVESUFFIX,
    JM_INDEX,
    JM_CYCLE,
};

static const struct {
    const char *name;
    int id;
    uint8_t on_str, on_dict, on_list, on_loop;
} methods[] = {
    {"items", JM_ITEMS, 0, 1, 0, 0},
    {"keys", JM_KEYS, 0, 1, 0, 0},
    {"values", JM_VALUES, 0, 1, 0, 0},
    {"get", JM_GET, 0, 1, 0, 0},
    {"copy", JM_COPY, 0, 1, 1, 0},
    {"strip", JM_STRIP, 1, 0, 0, 0},
    {"lstrip", JM_LSTRIP, 1, 0, 0, 0},
    {"rstrip", JM_RSTRIP, 1, 0, 0, 0},
    {"split", JM_SPLIT, 1, 0, 0, 0},
    {"rsplit", JM_RSPLIT, 1, 0, 0, 0},
    {"startswith", JM_STARTSWITH, 1, 0, 0, 0},
    {"endswith", JM_ENDSWITH, 1, 0, 0, 0},
    {"replace", JM_REPLACE, 1, 0, 0, 0},
    {"upper", JM_UPPER, 1, 0, 0, 0},
    {"lower", JM_LOWER, 1, 0, 0, 0},
    {"title", JM_TITLE, 1, 0, 0, 0},
    {"capitalize", JM_CAPITALIZE, 1, 0, 0, 0},
    {"find", JM_FIND, 1, 0, 0, 0},
    {"rfind", JM_RFIND, 1, 0, 0, 0},
    {"count", JM_COUNT, 1, 0, 1, 0},
    {"join", JM_JOIN, 1, 0, 0, 0},
    {"splitlines", JM_SPLITLINES, 1, 0, 0, 0},
    {"isdigit", JM_ISDIGIT, 1, 0, 0, 0},
    {"isalpha", JM_ISALPHA, 1, 0, 0, 0},
    {"isspace", JM_ISSPACE, 1, 0, 0, 0},
    {"isupper", JM_ISUPPER, 1, 0, 0, 0},
    {"islower", JM_ISLOWER, 1, 0, 0, 0},
    {"removeprefix", JM_REMOVEPREFIX, 1, 0, 0, 0},
    {"removesuffix", JM_REMOVESUFFIX, 1, 0, 0, 0},
    {"index", JM_INDEX, 0, 0, 1, 0},
    {"cycle", JM_CYCLE, 0, 0, 0, 1},
};

/* Python attributes the immutable sandbox refuses (mutating methods) */
static int unsafe_attr(jv obj, const char *name, size_t n)
{
    static const char *const dict_mut[] = {"pop", "popitem", "setdefault", "update", "clear"};
    static const char *const list_mut[] = {"append", "extend",  "insert", "pop",
                                           "remove", "reverse", "sort",   "clear"};
    if (n && name[0] == '_') return 1;
    if (obj.t == JV_DICT)
        for (size_t i = 0; i < sizeof dict_mut / sizeof *dict_mut; i++)
            if (name_is(name, n, dict_mut[i])) return 1;
    if (obj.t == JV_LIST && !obj.tuple)
        for (size_t i = 0; i < sizeof list_mut / sizeof *list_mut; i++)
            if (name_is(name, n, list_mut[i])) return 1;
    return 0;
}

/* a Python dict attribute of that name exists (a method, or a dunder) */
static int dict_attr(const char *name, size_t n)
{
    static const char *const attrs[] = {"items",  "keys",  "values",  "get",
                                        "copy",   "pop",   "popitem", "setdefault",
                                        "update", "clear", "fromkeys"};
    if (n && name[0] == '_') return 1;
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
        if (name_is(name, n, attrs[i])) return 1;
    return 0;
}

static jv undef_attr(jctx *c, jv obj, const char *name, size_t n, int unsafe)
{
    char msg[160];
    int w = unsafe
                ? snprintf(msg, sizeof msg, "access to attribute '%.*s' of '%s' object is unsafe.",
                           (int)(n > 60 ? 60 : n), name, jv_type_name(obj))
                : snprintf(msg, sizeof msg, "'%s object' has no attribute '%.*s'",
                           jv_type_name(obj), (int)(n > 60 ? 60 : n), name);
    if (w < 0) w = 0;
    if ((size_t)w >= sizeof msg) w = sizeof msg - 1;
    return jv_undef(jstr_new(&c->arena, &c->fail, msg, (size_t)w));
}

jv jbuiltin_attr(jctx *c, const jnode *at, jv obj, const char *name, size_t n)
{
    (void)at;
    if (obj.t == JV_LOOP) {
        jloop *l = obj.u.loop;
        int64_t i = (int64_t)l->index, len = (int64_t)l->items->n;
        if (name_is(name, n, "index")) return jv_int(i + 1);
        if (name_is(name, n, "index0")) return jv_int(i);
        if (name_is(name, n, "revindex")) return jv_int(len - i);
        if (name_is(name, n, "revindex0")) return jv_int(len - i - 1);
        if (name_is(name, n, "first")) return jv_bool(i == 0);
        if (name_is(name, n, "last")) return jv_bool(i == len - 1);
        if (name_is(name, n, "length")) return jv_int(len);
        if (name_is(name, n, "depth")) return jv_int(l->depth);
        if (name_is(name, n, "depth0")) return jv_int((int64_t)l->depth - 1);
        if (name_is(name, n, "previtem"))
            return i > 0 ? l->items->v[i - 1]
                         : jv_undef(jstr_new(&c->arena, &c->fail, "there is no previous item", 25));
        if (name_is(name, n, "nextitem"))
            return i + 1 < len
                       ? l->items->v[i + 1]
                       : jv_undef(jstr_new(&c->arena, &c->fail, "there is no next item", 21));
    }
    if ((obj.t == JV_DICT && !dict_attr(name, n)) || obj.t == JV_NS) {
        /* the common case (message.role): no attribute of dict has the name, so the item */
        const jv *v = jdict_get_str(obj.u.d, name, n);
        return v ? *v : undef_attr(c, obj, name, n, 0);
    }
    if (unsafe_attr(obj, name, n)) return undef_attr(c, obj, name, n, 1);
    for (size_t k = 0; k < sizeof methods / sizeof *methods; k++) {
        if (!name_is(name, n, methods[k].name)) continue;
        if ((obj.t == JV_STR && methods[k].on_str) || (obj.t == JV_DICT && methods[k].on_dict) ||
            (obj.t == JV_LIST && methods[k].on_list) || (obj.t == JV_LOOP && methods[k].on_loop)) {
            jv *self = ja_alloc(&c->arena, &c->fail, sizeof *self);
            *self = obj;
            jv m = {.t = JV_METHOD, .fn = methods[k].id};
            m.u.self = self;
            return m;
        }
    }
    if (obj.t == JV_DICT || obj.t == JV_NS) {
        const jv *v = jdict_get_str(obj.u.d, name, n);
        if (v) return *v;
    }
    return undef_attr(c, obj, name, n, 0);
}

static jv dict_view(jctx *c, jdict *d, int which) /* 0 items, 1 keys, 2 values */
{
    jlist *l = jlist_new(c, d->n);
    for (size_t i = 0; i < d->n; i++)
        l->v[l->n++] = which == 0 ? tuple2(c, d->k[i], d->v[i]) : which == 1 ? d->k[i] : d->v[i];
    return list_v(l);
}

static int affix(jctx *c, const jnode *at, const jstr *s, jv a, int end)
{
    if (a.t == JV_LIST && a.tuple) {
        for (size_t i = 0; i < a.u.l->n; i++)
            if (affix(c, at, s, a.u.l->v[i], end)) return 1;
        return 0;
    }
    const jstr *p = want_str(c, at, &a, end ? "endswith" : "startswith");
    if (p->len > s->len) return 0;
    return !memcmp(end ? s->s + s->len - p->len : s->s, p->s, p->len);
}

static jv str_join(jctx *c, const jnode *at, const jstr *sep, jv items)
{
    jlist *l = jiter(c, at, items);
    jbuf b = {0};
    for (size_t i = 0; i < l->n; i++) {
        if (i) jbuf_put(c, &b, sep->s, sep->len);
        jv_str_to(c, &b, l->v[i]);
        jstep(c, at);
    }
    return jv_str(jbuf_str(c, &b));
}

static int str_class(const jstr *s, int which)
{
    if (!s->len) return 0;
    size_t i = 0;
    int cased = 0;
    while (i < s->len) {
        int32_t cp = next_cp(s->s, s->len, &i);
        int cat = utf8proc_category(cp);
        switch (which) {
        case JM_ISDIGIT:
            if (cat != UTF8PROC_CATEGORY_ND && cat != UTF8PROC_CATEGORY_NO) return 0;
            break;
        case JM_ISALPHA:
            if (cat < UTF8PROC_CATEGORY_LU || cat > UTF8PROC_CATEGORY_LO) return 0;
            break;
        case JM_ISSPACE:
            if (!py_space(cp)) return 0;
            break;
        case JM_ISUPPER:
            if (cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) return 0;
            if (cat == UTF8PROC_CATEGORY_LU) cased = 1;
            break;
        default:
            if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT) return 0;
            if (cat == UTF8PROC_CATEGORY_LL) cased = 1;
            break;
        }
    }
    return which == JM_ISUPPER || which == JM_ISLOWER ? cased : 1;
}

jv jbuiltin_call_method(jctx *c, const jnode *at, jv m, const jv *args, size_t n_args,
                        const jstr *const *kw, size_t n_kw)
{
    jv self = *m.u.self;
    argv_ a = {.args = args, .n_args = n_args, .kw = kw, .n_kw = n_kw};
    const jv *a0 = arg(&a, 0, m.fn == JM_GET ? "key" : "x");
    const jv *a1 = arg(&a, 1, "y");
    const jv *none = NULL;
    switch (m.fn) {
    case JM_ITEMS:
        args_done(c, at, &a, 0, "items");
        return dict_view(c, self.u.d, 0);
    case JM_KEYS:
        args_done(c, at, &a, 0, "keys");
        return dict_view(c, self.u.d, 1);
    case JM_VALUES:
        args_done(c, at, &a, 0, "values");
        return dict_view(c, self.u.d, 2);
    case JM_GET: {
        a1 = arg(&a, 1, "default");
        if (!a0) jerr(c, at, PL_ERR_INVALID_ARG, "get expected at least 1 argument, got 0");
        args_done(c, at, &a, 2, "get");
        const jv *v = jdict_get(self.u.d, *a0);
        return v ? *v : a1 ? *a1 : jv_none();
    }
    case JM_COPY:
        args_done(c, at, &a, 0, "copy");
        return self;
    case JM_STRIP:
    case JM_LSTRIP:
    case JM_RSTRIP: {
        a0 = arg(&a, 0, "chars");
        args_done(c, at, &a, 1, "strip");
        const jstr *chars = a0 && a0->t != JV_NONE ? want_str(c, at, a0, "strip") : NULL;
        return strip(c, self.u.s, chars, m.fn == JM_STRIP ? 3 : m.fn == JM_LSTRIP ? 1 : 2);
    }
    case JM_SPLIT:
    case JM_RSPLIT: {
        a0 = arg(&a, 0, "sep");
        a1 = arg(&a, 1, "maxsplit");
        args_done(c, at, &a, 2, "split");
        const jstr *sep = a0 && a0->t != JV_NONE ? want_str(c, at, a0, "split") : NULL;
        int64_t maxsplit = a1 ? want_int(c, at, a1, "split") : -1;
        return split(c, at, self.u.s, sep, maxsplit, m.fn == JM_RSPLIT);
    }
    case JM_STARTSWITH:
    case JM_ENDSWITH:
        if (!a0) jerr(c, at, PL_ERR_INVALID_ARG, "startswith/endswith takes one argument");
        args_done(c, at, &a, 1, "startswith");
        return jv_bool(affix(c, at, self.u.s, *a0, m.fn == JM_ENDSWITH));
    case JM_REPLACE: {
        const jv *a2 = arg(&a, 2, "count");
        args_done(c, at, &a, 3, "replace");
        return replace(c, at, self.u.s, want_str(c, at, a0, "replace"),
                       want_str(c, at, a1, "replace"), a2 ? want_int(c, at, a2, "replace") : -1);
    }
    case JM_UPPER:
        args_done(c, at, &a, 0, "upper");
        return case_map(c, self.u.s, 1);
    case JM_LOWER:
        args_done(c, at, &a, 0, "lower");
        return case_map(c, self.u.s, 0);
    case JM_TITLE:
        args_done(c, at, &a, 0, "title");
        return case_map(c, self.u.s, 2);
    case JM_CAPITALIZE:
        args_done(c, at, &a, 0, "capitalize");
        return case_map(c, self.u.s, 3);
    case JM_FIND:
    case JM_RFIND: {
        args_done(c, at, &a, 1, "find");
        const jstr *n = want_str(c, at, a0, "find");
        const char *p = m.fn == JM_FIND ? find_bytes(self.u.s->s, self.u.s->len, n->s, n->len)
                                        : rfind_bytes(self.u.s->s, self.u.s->len, n->s, n->len);
        return jv_int(p ? (int64_t)jutf8_count(self.u.s->s, (size_t)(p - self.u.s->s)) : -1);
    }
    case JM_COUNT:
        args_done(c, at, &a, 1, "count");
        if (!a0) jerr(c, at, PL_ERR_INVALID_ARG, "count takes exactly one argument");
        if (self.t == JV_LIST) {
            int64_t k = 0;
            for (size_t i = 0; i < self.u.l->n; i++) k += jv_equal(self.u.l->v[i], *a0);
            return jv_int(k);
        } else {
            const jstr *n = want_str(c, at, a0, "count");
            if (!n->len) return jv_int((int64_t)jutf8_count(self.u.s->s, self.u.s->len) + 1);
            int64_t k = 0;
            size_t i = 0;
            const char *p;
            while ((p = find_bytes(self.u.s->s + i, self.u.s->len - i, n->s, n->len)))
                k++, i = (size_t)(p - self.u.s->s) + n->len;
            return jv_int(k);
        }
    case JM_JOIN:
        args_done(c, at, &a, 1, "join");
        if (!a0) jerr(c, at, PL_ERR_INVALID_ARG, "join takes exactly one argument");
        {
            jlist *l = jiter(c, at, *a0);
            for (size_t i = 0; i < l->n; i++)
                if (l->v[i].t != JV_STR)
                    jerr(c, at, PL_ERR_INVALID_ARG,
                         "sequence item %zu: expected str instance, "
                         "%s found",
                         i, jv_type_name(l->v[i]));
        }
        return str_join(c, at, self.u.s, *a0);
    case JM_SPLITLINES:
        args_done(c, at, &a, 0, "splitlines");
        return list_v(splitlines(c, self.u.s));
    case JM_ISDIGIT:
    case JM_ISALPHA:
    case JM_ISSPACE:
    case JM_ISUPPER:
    case JM_ISLOWER:
        args_done(c, at, &a, 0, "is*");
        return jv_bool(str_class(self.u.s, m.fn));
    case JM_REMOVEPREFIX:
    case JM_REMOVESUFFIX: {
        args_done(c, at, &a, 1, "removeprefix");
        const jstr *p = want_str(c, at, a0, "removeprefix");
        jv pv = jv_str(p);
        if (!affix(c, at, self.u.s, pv, m.fn == JM_REMOVESUFFIX)) return self;
        return m.fn == JM_REMOVEPREFIX ? str_v(c, self.u.s->s + p->len, self.u.s->len - p->len)
                                       : str_v(c, self.u.s->s, self.u.s->len - p->len);
    }
    case JM_INDEX:
        args_done(c, at, &a, 1, "index");
        if (!a0) jerr(c, at, PL_ERR_INVALID_ARG, "index takes one argument");
        for (size_t i = 0; i < self.u.l->n; i++)
            if (jv_equal(self.u.l->v[i], *a0)) return jv_int((int64_t)i);
        jerr(c, at, PL_ERR_INVALID_ARG, "value is not in list");
    case JM_CYCLE:
        if (n_kw || !n_args) jerr(c, at, PL_ERR_INVALID_ARG, "no items for cycling given");
        return args[self.u.loop->index % n_args];
    }
    (void)none;
    jerr(c, at, PL_ERR_INVALID_ARG, "not callable");
}

/* ---- tests ---------------------------------------------------------------------------------- */
static int is_callable(jv v)
{
    return v.t == JV_MACRO || v.t == JV_FUNC || v.t == JV_METHOD || v.t == JV_CALLER;
}

int jbuiltin_test(jctx *c, const jnode *at, const jstr *name, jv v, const jv *args, size_t n_args)
{
    const jv *a0 = n_args > 0 ? &args[0] : NULL;
#define T(lit) jname_is(name, lit)
#define NEED_ARG                                                                                   \
    do {                                                                                           \
        if (!a0) jerr(c, at, PL_ERR_INVALID_ARG, "test '%.40s' needs an argument", name->s);       \
    } while (0)
    if (T("defined")) return v.t != JV_UNDEF;
    if (T("undefined")) return v.t == JV_UNDEF;
    if (T("none")) return v.t == JV_NONE;
    if (T("boolean")) return v.t == JV_BOOL;
    if (T("false")) return v.t == JV_BOOL && !v.u.i;
    if (T("true")) return v.t == JV_BOOL && v.u.i;
    if (T("integer")) return v.t == JV_INT;
    if (T("float")) return v.t == JV_FLOAT;
    if (T("number")) return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
    if (T("string")) return v.t == JV_STR;
    if (T("mapping")) return v.t == JV_DICT;
    if (T("iterable")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    if (T("sequence")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    if (T("callable")) return is_callable(v) || v.t == JV_UNDEF; /* Undefined has __call__ */
    if (T("escaped")) return 0;
    if (T("sameas")) {
        NEED_ARG;
        if (v.t != a0->t) return 0;
        if (v.t == JV_NONE || v.t == JV_UNDEF) return 1;
        if (v.t == JV_BOOL || v.t == JV_INT)
            return v.u.i == a0->u.i && (v.t == JV_BOOL || (v.u.i >= -5 && v.u.i <= 256));
        if (v.t == JV_STR) return v.u.s == a0->u.s;
        if (v.t == JV_LIST) return v.u.l == a0->u.l;
        if (v.t == JV_DICT || v.t == JV_NS) return v.u.d == a0->u.d;
        return jv_equal(v, *a0);
    }
    if (T("eq") || T("equalto") || T("==")) {
        NEED_ARG;
        return jv_equal(v, *a0);
    }
    if (T("ne") || T("!=")) {
        NEED_ARG;
        return !jv_equal(v, *a0);
    }
    if (T("lt") || T("<") || T("le") || T("<=") || T("gt") || T(">") || T("ge") || T(">=")) {
        NEED_ARG;
        if (v.t == JV_UNDEF || a0->t == JV_UNDEF)
            jerr(c, at, PL_ERR_INVALID_ARG, "comparison with an undefined value");
        int r = jv_compare(c, at, v, *a0);
        if (T("lt") || T("<")) return r < 0;
        if (T("le") || T("<=")) return r <= 0;
        if (T("gt") || T(">")) return r > 0;
        return r >= 0;
    }
    if (T("in")) {
        NEED_ARG;
        jlist *l;
        if (a0->t == JV_STR) {
            if (v.t != JV_STR)
                jerr(c, at, PL_ERR_INVALID_ARG, "'in <string>' requires string as left operand");
            return find_bytes(a0->u.s->s, a0->u.s->len, v.u.s->s, v.u.s->len) != NULL;
        }
        if (a0->t == JV_DICT) return jdict_get(a0->u.d, v) != NULL;
        l = jiter(c, at, *a0);
        for (size_t i = 0; i < l->n; i++)
            if (jv_equal(l->v[i], v)) return 1;
        return 0;
    }
    if (T("odd") || T("even") || T("divisibleby")) {
        /* value % 2 == 1 as Python computes it, floats included */
        jv two = jv_int(2);
        const jv *d = T("divisibleby") ? a0 : &two;
        if (!d) jerr(c, at, PL_ERR_INVALID_ARG, "test 'divisibleby' needs an argument");
        int num_v = v.t == JV_INT || v.t == JV_BOOL || v.t == JV_FLOAT;
        int num_d = d->t == JV_INT || d->t == JV_BOOL || d->t == JV_FLOAT;
        if (!num_v || !num_d)
            jerr(c, at, PL_ERR_INVALID_ARG, "unsupported operand type(s) for %%: '%s' and '%s'",
                 jv_type_name(v), jv_type_name(*d));
        if (v.t != JV_FLOAT && d->t != JV_FLOAT) {
            if (d->u.i == 0) jerr(c, at, PL_ERR_INVALID_ARG, "integer division or modulo by zero");
            int64_t m = d->u.i == -1 ? 0 : v.u.i % d->u.i;
            if (m != 0 && ((m < 0) != (d->u.i < 0))) m += d->u.i;
            return T("even") ? m == 0 : T("odd") ? m == 1 : m == 0;
        }
        double x = v.t == JV_FLOAT ? v.u.f : (double)v.u.i;
        double y = d->t == JV_FLOAT ? d->u.f : (double)d->u.i;
        if (y == 0.0) jerr(c, at, PL_ERR_INVALID_ARG, "float modulo");
        double m = fmod(x, y);
        if (m != 0.0 && ((m < 0) != (y < 0))) m += y;
        return T("odd") ? m == 1.0 : m == 0.0;
    }
    if (T("lower") || T("upper")) {
        const jstr *s = jv_to_str(c, v);
        /* str.islower()/isupper() */
        return str_class(s, T("lower") ? JM_ISLOWER : JM_ISUPPER);
    }
#undef T
#undef NEED_ARG
    jerr(c, at, PL_ERR_UNSUPPORTED, "no test named '%.40s'", name->s);
}

/* ---- filters -------------------------------------------------------------------------------- */

/* environment.getattr with a dotted path ("a.b" or "0") as jinja2's attribute filters use */
static jv get_path(jctx *c, const jnode *at, jv obj, const jstr *path)
{
    size_t i = 0;
    while (i <= path->len) {
        size_t j = i;
        while (j < path->len && path->s[j] != '.') j++;
        const char *part = path->s + i;
        size_t n = j - i;
        if (obj.t == JV_UNDEF) return obj;
        int is_int = n > 0;
        int64_t k = 0;
        for (size_t q = 0; q < n; q++) {
            if (part[q] < '0' || part[q] > '9' || k > INT64_MAX / 10 - 1)
                is_int = 0;
            else
                k = k * 10 + (part[q] - '0');
        }
        if (is_int && obj.t == JV_LIST) {
            obj = k < (int64_t)obj.u.l->n ? obj.u.l->v[k] : jv_undef(NULL);
        } else if (obj.t == JV_DICT || obj.t == JV_NS) {
            const jv *v = jdict_get_str(obj.u.d, part, n);
            obj = v ? *v : jbuiltin_attr(c, at, obj, part, n);
        } else {
            obj = jbuiltin_attr(c, at, obj, part, n);
        }
        i = j + 1;
    }
    return obj;
}

static const jstr *soft_str(jctx *c, jv v)
{
    return jv_to_str(c, v);
}

/* case-insensitive sort key for strings as jinja2's ignore_case */
static jv sort_key(jctx *c, jv v, int case_sensitive)
{
    if (!case_sensitive && v.t == JV_STR) return case_map(c, v.u.s, 0);
    return v;
}

typedef struct sort_item {
    jv key, val;
    size_t idx;
} sort_item;

typedef struct sort_ctx {
    jctx *c;
    const jnode *at;
    int reverse;
} sort_ctx;

/* a stable merge sort with Python's ordering (qsort has no context and is not stable) */
static void merge_sort(sort_ctx *s, sort_item *v, sort_item *tmp, size_t n)
{
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(s, v, tmp, h);
    merge_sort(s, v + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int r = jv_compare(s->c, s->at, v[j].key, v[i].key);
        if (s->reverse) r = -r;
        if (r < 0)
            tmp[k++] = v[j++];
        else
            tmp[k++] = v[i++];
    }
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static jlist *sorted(jctx *c, const jnode *at, jlist *l, int reverse, int case_sensitive,
                     const jstr *attribute)
{
    sort_item *v = ja_alloc(&c->arena, &c->fail, (l->n + 1) * sizeof *v);
    sort_item *tmp = ja_alloc(&c->arena, &c->fail, (l->n + 1) * sizeof *tmp);
    for (size_t i = 0; i < l->n; i++) {
        jv k = attribute ? get_path(c, at, l->v[i], attribute) : l->v[i];
        v[i].key = sort_key(c, k, case_sensitive), v[i].val = l->v[i], v[i].idx = i;
    }
    sort_ctx s = {c, at, reverse};
    merge_sort(&s, v, tmp, l->n);
    jlist *r = jlist_new(c, l->n);
    for (size_t i = 0; i < l->n; i++) r->v[r->n++] = v[i].val;
    return r;
}

static jv html_escape(jctx *c, const jstr *s)
{
    jbuf b = {0};
    for (size_t i = 0; i < s->len; i++) {
        switch (s->s[i]) {
        case '&':
            jbuf_put(c, &b, "&amp;", 5);
            break;
        case '<':
            jbuf_put(c, &b, "&lt;", 4);
            break;
        case '>':
            jbuf_put(c, &b, "&gt;", 4);
            break;
        case '"':
            jbuf_put(c, &b, "&#34;", 5);
            break;
        case '\'':
            jbuf_put(c, &b, "&#39;", 5);
            break;
        default:
            jbuf_putc(c, &b, s->s[i]);
        }
    }
    return jv_str(jbuf_str(c, &b));
}

static jv indent(jctx *c, const jnode *at, const jstr *s, jv width, int first, int blank)
{
    jbuf ind = {0};
    if (width.t == JV_STR) {
        jbuf_put(c, &ind, width.u.s->s, width.u.s->len);
    } else {
        int64_t w = want_int(c, at, &width, "indent");
        if (w > 4096) jerr(c, at, PL_ERR_LIMIT, "indent wider than 4096");
        for (int64_t i = 0; i < w; i++) jbuf_putc(c, &ind, ' ');
    }
    /* s + "\n", split into lines */
    jbuf sb = {0};
    jbuf_put(c, &sb, s->s, s->len);
    jbuf_putc(c, &sb, '\n');
    jlist *lines = splitlines(c, jbuf_str(c, &sb));
    jbuf b = {0};
    if (first) jbuf_put(c, &b, ind.p, ind.n);
    for (size_t i = 0; i < lines->n; i++) {
        const jstr *line = lines->v[i].u.s;
        if (i) {
            jbuf_putc(c, &b, '\n');
            if (blank || line->len) jbuf_put(c, &b, ind.p, ind.n);
        }
        jbuf_put(c, &b, line->s, line->len);
        jstep(c, at);
    }
    return jv_str(jbuf_str(c, &b));
}

static jv to_int(jctx *c, jv v, jv def, int64_t base)
{
    switch (v.t) {
    case JV_INT:
    case JV_BOOL:
        return jv_int(v.u.i);
    case JV_FLOAT:
        if (!isfinite(v.u.f) || fabs(v.u.f) >= 9.2e18) return def;
        return jv_int((int64_t)v.u.f);
    case JV_STR: {
        /* int(s, base), else int(float(s)) */
        const jstr *t = strip(c, v.u.s, NULL, 3).u.s;
        char buf[64];
        if (t->len == 0 || t->len >= sizeof buf) return def;
        size_t k = 0;
        for (size_t i = 0; i < t->len; i++)
            if (t->s[i] != '_') buf[k++] = t->s[i];
        buf[k] = 0;
        char *end;
        long long r = strtoll(buf, &end, (int)base);
        if (*end == 0 && end != buf) return jv_int(r);
        double f = strtod(buf, &end);
        if (*end == 0 && end != buf && isfinite(f) && fabs(f) < 9.2e18) return jv_int((int64_t)f);
        return def;
    }
    default:
        return def;
    }
}

static jv to_float(jctx *c, jv v, jv def)
{
    switch (v.t) {
    case JV_INT:
    case JV_BOOL:
        return fval((double)v.u.i);
    case JV_FLOAT:
        return v;
    case JV_STR: {
        const jstr *t = strip(c, v.u.s, NULL, 3).u.s;
        char *end;
        if (!t->len) return def;
        double f = strtod(t->s, &end);
        return *end == 0 ? fval(f) : def;
    }
    default:
        return def;
    }
}

static int test_by_name(jctx *c, const jnode *at, jv v, const jv *targs, size_t n_targs)
{
    /* select/reject: first arg the test name, the rest its arguments; no test: truthiness */
    if (!n_targs) return jv_truthy(v);
    const jstr *tname = want_str(c, at, &targs[0], "select");
    return jbuiltin_test(c, at, tname, v, targs + 1, n_targs - 1);
}

jv jbuiltin_filter(jctx *c, const jnode *at, const jstr *name, jv v, const jv *args, size_t n_args,
                   const jstr *const *kw, size_t n_kw)
{
    argv_ a = {.args = args, .n_args = n_args, .kw = kw, .n_kw = n_kw};
    jstep(c, at);
#define F(lit) jname_is(name, lit)
    if (F("default") || F("d")) {
        const jv *def = arg(&a, 0, "default_value");
        const jv *boolean = arg(&a, 1, "boolean");
        args_done(c, at, &a, 2, "default");
        jv dv = def ? *def : str_v(c, "", 0);
        if (v.t == JV_UNDEF || (boolean && jv_truthy(*boolean) && !jv_truthy(v))) return dv;
        return v;
    }
    if (F("length") || F("count")) {
        args_done(c, at, &a, 0, "length");
        switch (v.t) {
        case JV_UNDEF:
            return jv_int(0);
        case JV_STR:
            return jv_int((int64_t)jutf8_count(v.u.s->s, v.u.s->len));
        case JV_LIST:
            return jv_int((int64_t)v.u.l->n);
        case JV_DICT:
        case JV_NS:
            return jv_int((int64_t)v.u.d->n);
        default:
            jerr(c, at, PL_ERR_INVALID_ARG, "object of type '%s' has no len()", jv_type_name(v));
        }
    }
    if (F("safe")) {
        args_done(c, at, &a, 0, "safe");
        return v.t == JV_STR ? v : jv_str(soft_str(c, v));
    }
    if (F("string")) {
        args_done(c, at, &a, 0, "string");
        return jv_str(soft_str(c, v));
    }
    if (F("escape") || F("e")) {
        args_done(c, at, &a, 0, "escape");
        return html_escape(c, soft_str(c, v));
    }
    if (F("trim")) {
        const jv *chars = arg(&a, 0, "chars");
        args_done(c, at, &a, 1, "trim");
        return strip(c, soft_str(c, v),
                     chars && chars->t != JV_NONE ? want_str(c, at, chars, "trim") : NULL, 3);
    }
    if (F("title")) {
        args_done(c, at, &a, 0, "title");
        return title_filter(c, soft_str(c, v));
    }
    if (F("lower") || F("upper") || F("capitalize")) {
        args_done(c, at, &a, 0, name->s);
        return case_map(c, soft_str(c, v), F("lower") ? 0 : F("upper") ? 1 : 3);
    }
    if (F("replace")) {
        const jv *old = arg(&a, 0, "old"), *new_ = arg(&a, 1, "new"), *count = arg(&a, 2, "count");
        args_done(c, at, &a, 3, "replace");
        return replace(c, at, soft_str(c, v), want_str(c, at, old, "replace"),
                       want_str(c, at, new_, "replace"),
                       count && count->t != JV_NONE ? want_int(c, at, count, "replace") : -1);
    }
    if (F("tojson")) {
        const jv *ensure_ascii = arg(&a, 0, "ensure_ascii"), *ind = arg(&a, 1, "indent");
        const jv *seps = arg(&a, 2, "separators"), *sort_keys = arg(&a, 3, "sort_keys");
        args_done(c, at, &a, 4, "tojson");
        if (ensure_ascii && jv_truthy(*ensure_ascii))
            jerr(c, at, PL_ERR_UNSUPPORTED, "tojson(ensure_ascii=true) is not supported");
        jbuf ib = {0};
        int use_indent = 0;
        if (ind && ind->t != JV_NONE) {
            use_indent = 1;
            if (ind->t == JV_STR) {
                jbuf_put(c, &ib, ind->u.s->s, ind->u.s->len);
            } else {
                int64_t w = want_int(c, at, ind, "tojson indent");
                if (w > 4096) jerr(c, at, PL_ERR_LIMIT, "tojson indent wider than 4096");
                for (int64_t i = 0; i < w; i++) jbuf_putc(c, &ib, ' ');
            }
        }
        const char *item_sep = use_indent ? "," : ", ", *key_sep = ": ";
        if (seps && seps->t != JV_NONE) {
            if (seps->t != JV_LIST || seps->u.l->n != 2 || seps->u.l->v[0].t != JV_STR ||
                seps->u.l->v[1].t != JV_STR)
                jerr(c, at, PL_ERR_INVALID_ARG, "tojson separators must be two strings");
            item_sep = seps->u.l->v[0].u.s->s, key_sep = seps->u.l->v[1].u.s->s;
        }
        jbuf b = {0};
        jv_json_to(c, at, &b, v, ib.p ? ib.p : "", ib.n, use_indent, item_sep, key_sep,
                   sort_keys && jv_truthy(*sort_keys), 0);
        return jv_str(jbuf_str(c, &b));
    }
    if (F("items")) {
        args_done(c, at, &a, 0, "items");
        if (v.t == JV_UNDEF) return list_v(jlist_new(c, 0));
        if (v.t != JV_DICT)
            jerr(c, at, PL_ERR_INVALID_ARG, "can only get item pairs from a mapping.");
        return dict_view(c, v.u.d, 0);
    }
    if (F("list")) {
        args_done(c, at, &a, 0, "list");
        jv r = list_v(jiter(c, at, v));
        return r;
    }
    if (F("first") || F("last")) {
        args_done(c, at, &a, 0, name->s);
        jlist *l = jiter(c, at, v);
        if (!l->n)
            return jv_undef(jstr_new(&c->arena, &c->fail,
                                     F("first") ? "No first item, sequence "
                                                  "was empty."
                                                : "No last item, sequence was empty.",
                                     F("first") ? 33 : 32));
        return F("first") ? l->v[0] : l->v[l->n - 1];
    }
    if (F("join")) {
        const jv *d = arg(&a, 0, "d"), *attribute = arg(&a, 1, "attribute");
        args_done(c, at, &a, 2, "join");
        jlist *l = jiter(c, at, v);
        if (attribute && attribute->t != JV_NONE) {
            jlist *m = jlist_new(c, l->n);
            for (size_t i = 0; i < l->n; i++)
                m->v[m->n++] = get_path(c, at, l->v[i], jv_to_str(c, *attribute));
            l = m;
        }
        return str_join(c, at, d ? soft_str(c, *d) : jstr_new(&c->arena, &c->fail, "", 0),
                        list_v(l));
    }
    if (F("map")) {
        /* jinja2's map and select family skip a falsy value (`if value:`) before iterating */
        jlist *l = jv_truthy(v) ? jiter(c, at, v) : jlist_new(c, 0), *r = jlist_new(c, l->n);
        const jv *attribute = NULL;
        for (size_t k = 0; k < n_kw; k++)
            if (jname_is(kw[k], "attribute")) attribute = &args[n_args + k];
        if (attribute) {
            const jv *def = NULL;
            for (size_t k = 0; k < n_kw; k++)
                if (jname_is(kw[k], "default")) def = &args[n_args + k];
            for (size_t i = 0; i < l->n; i++) {
                jv x = get_path(c, at, l->v[i], jv_to_str(c, *attribute));
                if (x.t == JV_UNDEF && def) x = *def;
                r->v[r->n++] = x;
            }
            return list_v(r);
        }
        if (!n_args) jerr(c, at, PL_ERR_INVALID_ARG, "map requires a filter argument");
        const jstr *fname = want_str(c, at, &args[0], "map");
        for (size_t i = 0; i < l->n; i++)
            r->v[r->n++] = jbuiltin_filter(c, at, fname, l->v[i], args + 1, n_args - 1, kw, n_kw);
        return list_v(r);
    }
    if (F("select") || F("reject") || F("selectattr") || F("rejectattr")) {
        if (n_kw) jerr(c, at, PL_ERR_INVALID_ARG, "%s takes no keyword arguments", name->s);
        int by_attr = F("selectattr") || F("rejectattr"), want = F("select") || F("selectattr");
        if (by_attr && !n_args)
            jerr(c, at, PL_ERR_INVALID_ARG, "missing parameter for attribute name");
        jlist *l = jv_truthy(v) ? jiter(c, at, v) : jlist_new(c, 0), *r = jlist_new(c, l->n);
        for (size_t i = 0; i < l->n; i++) {
            jv x = by_attr ? get_path(c, at, l->v[i], want_str(c, at, &args[0], name->s)) : l->v[i];
            int t = by_attr ? test_by_name(c, at, x, args + 1, n_args - 1)
                            : test_by_name(c, at, x, args, n_args);
            if (t == want) r->v[r->n++] = l->v[i];
        }
        return list_v(r);
    }
    if (F("reverse")) {
        args_done(c, at, &a, 0, "reverse");
        if (v.t == JV_STR) {
            size_t n = v.u.s->len;
            jbuf b = {0};
            size_t i = n;
            while (i > 0) {
                size_t st = i - 1;
                while (st > 0 && ((unsigned char)v.u.s->s[st] & 0xC0) == 0x80) st--;
                jbuf_put(c, &b, v.u.s->s + st, i - st);
                i = st;
            }
            return jv_str(jbuf_str(c, &b));
        }
        jlist *l = jiter(c, at, v), *r = jlist_new(c, l->n);
        for (size_t i = l->n; i-- > 0;) r->v[r->n++] = l->v[i];
        return list_v(r);
    }
    if (F("sort")) {
        const jv *rev = arg(&a, 0, "reverse"), *cs = arg(&a, 1, "case_sensitive");
        const jv *attribute = arg(&a, 2, "attribute");
        args_done(c, at, &a, 3, "sort");
        return list_v(
            sorted(c, at, jiter(c, at, v), rev && jv_truthy(*rev), cs && jv_truthy(*cs),
                   attribute && attribute->t != JV_NONE ? jv_to_str(c, *attribute) : NULL));
    }
    if (F("unique")) {
        const jv *cs = arg(&a, 0, "case_sensitive"), *attribute = arg(&a, 1, "attribute");
        args_done(c, at, &a, 2, "unique");
        jlist *l = jiter(c, at, v), *r = jlist_new(c, l->n), *seen = jlist_new(c, l->n);
        for (size_t i = 0; i < l->n; i++) {
            jv k = attribute ? get_path(c, at, l->v[i], jv_to_str(c, *attribute)) : l->v[i];
            k = sort_key(c, k, cs && jv_truthy(*cs));
            int dup = 0;
            for (size_t j = 0; j < seen->n && !dup; j++) dup = jv_equal(seen->v[j], k);
            jstep(c, at);
            if (!dup) seen->v[seen->n++] = k, r->v[r->n++] = l->v[i];
        }
        return list_v(r);
    }
    if (F("min") || F("max")) {
        const jv *cs = arg(&a, 0, "case_sensitive"), *attribute = arg(&a, 1, "attribute");
        args_done(c, at, &a, 2, name->s);
        jlist *l = jiter(c, at, v);
        if (!l->n)
            return jv_undef(
                jstr_new(&c->arena, &c->fail, "No aggregated item, sequence was empty.", 39));
        jlist *s =
            sorted(c, at, l, 0, cs && jv_truthy(*cs), attribute ? jv_to_str(c, *attribute) : NULL);
        return F("min") ? s->v[0] : s->v[s->n - 1];
    }
    if (F("sum")) {
        const jv *attribute = arg(&a, 0, "attribute"), *start = arg(&a, 1, "start");
        args_done(c, at, &a, 2, "sum");
        jlist *l = jiter(c, at, v);
        jv acc = start ? *start : jv_int(0);
        for (size_t i = 0; i < l->n; i++) {
            jv x = attribute && attribute->t != JV_NONE
                       ? get_path(c, at, l->v[i], jv_to_str(c, *attribute))
                       : l->v[i];
            if (acc.t == JV_FLOAT || x.t == JV_FLOAT) {
                if ((acc.t != JV_FLOAT && acc.t != JV_INT && acc.t != JV_BOOL) ||
                    (x.t != JV_FLOAT && x.t != JV_INT && x.t != JV_BOOL))
                    jerr(c, at, PL_ERR_INVALID_ARG, "unsupported operand type(s) for +");
                double f = (acc.t == JV_FLOAT ? acc.u.f : (double)acc.u.i) +
                           (x.t == JV_FLOAT ? x.u.f : (double)x.u.i);
                acc = fval(f);
            } else if ((acc.t == JV_INT || acc.t == JV_BOOL) && (x.t == JV_INT || x.t == JV_BOOL)) {
                int64_t r;
                if (__builtin_add_overflow(acc.u.i, x.u.i, &r))
                    jerr(c, at, PL_ERR_UNSUPPORTED,
                         "integer overflow (plumb's integers are 64-bit)");
                acc = jv_int(r);
            } else {
                jerr(c, at, PL_ERR_INVALID_ARG, "unsupported operand type(s) for +: '%s' and '%s'",
                     jv_type_name(acc), jv_type_name(x));
            }
        }
        return acc;
    }
    if (F("int")) {
        const jv *def = arg(&a, 0, "default"), *base = arg(&a, 1, "base");
        args_done(c, at, &a, 2, "int");
        int64_t b = base ? want_int(c, at, base, "int") : 10;
        if (v.t == JV_UNDEF) /* Undefined.__int__ raises */
            jerr(c, at, PL_ERR_INVALID_ARG, "%s", v.u.s ? v.u.s->s : "value is undefined");
        if (b != 0 && (b < 2 || b > 36))
            jerr(c, at, PL_ERR_INVALID_ARG,
                 "int() base must be >= 2 "
                 "and <= 36, or 0");
        return to_int(c, v, def ? *def : jv_int(0), b);
    }
    if (F("float")) {
        const jv *def = arg(&a, 0, "default");
        args_done(c, at, &a, 1, "float");
        if (v.t == JV_UNDEF) /* Undefined.__float__ raises */
            jerr(c, at, PL_ERR_INVALID_ARG, "%s", v.u.s ? v.u.s->s : "value is undefined");
        return to_float(c, v, def ? *def : fval(0.0));
    }
    if (F("abs")) {
        args_done(c, at, &a, 0, "abs");
        if (v.t == JV_INT || v.t == JV_BOOL) {
            if (v.u.i == INT64_MIN)
                jerr(c, at, PL_ERR_UNSUPPORTED, "integer overflow (plumb's integers are 64-bit)");
            return jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        }
        if (v.t == JV_FLOAT) return fval(fabs(v.u.f));
        jerr(c, at, PL_ERR_INVALID_ARG, "bad operand type for abs(): '%s'", jv_type_name(v));
    }
    if (F("round")) {
        const jv *prec = arg(&a, 0, "precision"), *method = arg(&a, 1, "method");
        args_done(c, at, &a, 2, "round");
        int64_t p = prec ? want_int(c, at, prec, "round") : 0;
        if (p < -300 || p > 300) jerr(c, at, PL_ERR_INVALID_ARG, "round: precision out of range");
        if (v.t != JV_INT && v.t != JV_FLOAT && v.t != JV_BOOL)
            jerr(c, at, PL_ERR_INVALID_ARG, "round needs a number, got %s", jv_type_name(v));
        const char *how = method ? want_str(c, at, method, "round")->s : "common";
        if (v.t != JV_FLOAT && !strcmp(how, "common") && p >= 0)
            return jv_int(v.u.i); /* round(int) */
        double x = v.t == JV_FLOAT ? v.u.f : (double)v.u.i, m = pow(10.0, (double)p);
        if (!strcmp(how, "common"))
            x = round(x * m) / m;
        else if (!strcmp(how, "floor"))
            x = floor(x * m) / m;
        else if (!strcmp(how, "ceil"))
            x = ceil(x * m) / m;
        else
            jerr(c, at, PL_ERR_INVALID_ARG, "method must be common, ceil or floor");
        return fval(x);
    }
    if (F("indent")) {
        const jv *width = arg(&a, 0, "width"), *first = arg(&a, 1, "first");
        const jv *blank = arg(&a, 2, "blank");
        args_done(c, at, &a, 3, "indent");
        if (v.t != JV_STR)
            jerr(c, at, PL_ERR_INVALID_ARG, "'%s' object has no attribute 'splitlines'",
                 jv_type_name(v));
        return indent(c, at, v.u.s, width ? *width : jv_int(4), first && jv_truthy(*first),
                      blank && jv_truthy(*blank));
    }
    if (F("wordcount")) {
        args_done(c, at, &a, 0, "wordcount");
        /* jinja2 counts matches of \w+: runs of letters, digits and '_' */
        const jstr *t = soft_str(c, v);
        int64_t words = 0;
        int in_word = 0;
        size_t i = 0;
        while (i < t->len) {
            int32_t cp = next_cp(t->s, t->len, &i);
            int cat = utf8proc_category(cp);
            int w = cp == '_' || (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
                    (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
            words += w && !in_word;
            in_word = w;
        }
        return jv_int(words);
    }
    if (F("attr")) {
        const jv *nm = arg(&a, 0, "name");
        args_done(c, at, &a, 1, "attr");
        const jstr *s = want_str(c, at, nm, "attr");
        if (v.t == JV_UNDEF) return v;
        /* attr() looks up attributes only, never items */
        if (v.t == JV_DICT) {
            jv r = jbuiltin_attr(c, at, v, s->s, s->len);
            return r.t == JV_METHOD ? r : undef_attr(c, v, s->s, s->len, 0);
        }
        return jbuiltin_attr(c, at, v, s->s, s->len);
    }
    if (F("dictsort")) {
        const jv *cs = arg(&a, 0, "case_sensitive"), *by = arg(&a, 1, "by");
        const jv *rev = arg(&a, 2, "reverse");
        args_done(c, at, &a, 3, "dictsort");
        if (v.t != JV_DICT) jerr(c, at, PL_ERR_INVALID_ARG, "dictsort needs a mapping");
        jv items = dict_view(c, v.u.d, 0);
        const char *b = by ? want_str(c, at, by, "dictsort")->s : "key";
        int pos = !strcmp(b, "key") ? 0 : !strcmp(b, "value") ? 1 : -1;
        if (pos < 0)
            jerr(c, at, PL_ERR_INVALID_ARG, "You can only sort by either \"key\" or \"value\"");
        return list_v(sorted(c, at, items.u.l, rev && jv_truthy(*rev), cs && jv_truthy(*cs),
                             jstr_new(&c->arena, &c->fail, pos ? "1" : "0", 1)));
    }
#undef F
    jerr(c, at, PL_ERR_UNSUPPORTED, "no filter named '%.40s'", name->s);
}
