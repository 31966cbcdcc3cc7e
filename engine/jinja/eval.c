/* eval.c — renders a compiled template: statements, expressions, scopes (a frame per loop
 * iteration and macro call, as jinja2 scopes them), undefined values as jinja2's default
 * Undefined, every step counted against the limits. Not the builtins (builtins.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jinja/jinja_int.h"

static void enter(jctx *c, const jnode *at)
{
    if (++c->depth > c->lim->max_depth)
        jerr(c, at, PL_ERR_LIMIT, "nesting deeper than %u (limit max_depth)",
             (unsigned)c->lim->max_depth);
}

/* ---- scopes ----------------------------------------------------------------------------- */
static jframe *frame_new(jctx *c, jframe *parent)
{
    jframe *f = ja_alloc(&c->arena, &c->fail, sizeof *f);
    memset(f, 0, sizeof *f);
    f->parent = parent;
    return f;
}

static jv *frame_find(jframe *f, const char *name, size_t n)
{
    for (; f; f = f->parent)
        for (size_t i = f->n; i-- > 0;)
            if (f->vars[i].name->len == n && !memcmp(f->vars[i].name->s, name, n))
                return &f->vars[i].val;
    return NULL;
}

static void frame_set(jctx *c, jframe *f, const jstr *name, jv v)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->vars[i].name->len == name->len && !memcmp(f->vars[i].name->s, name->s, name->len)) {
            f->vars[i].val = v;
            return;
        }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 4;
        jvar *nv = ja_alloc(&c->arena, &c->fail, cap * sizeof *nv);
        if (f->n) memcpy(nv, f->vars, f->n * sizeof *nv);
        f->vars = nv, f->cap = cap;
    }
    f->vars[f->n].name = name, f->vars[f->n].val = v;
    f->n++;
}

typedef struct scope {
    jframe *frame;
} scope;

static jv undef_msg(jctx *c, const char *fmt, ...) PL_PRINTF(2, 3);
static jv undef_msg(jctx *c, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
    return jv_undef(jstr_new(&c->arena, &c->fail, msg, (size_t)n));
}

/* ---- output ------------------------------------------------------------------------------ */
static void emit(jctx *c, const jnode *at, const char *s, size_t n)
{
    if (n > c->lim->max_output || c->out->n > c->lim->max_output - n)
        jerr(c, at, PL_ERR_LIMIT, "output longer than %zu bytes (limit max_output)",
             c->lim->max_output);
    jbuf_put(c, c->out, s, n);
}

static void emit_value(jctx *c, const jnode *at, jv v)
{
    if (v.t == JV_STR) {
        emit(c, at, v.u.s->s, v.u.s->len);
        return;
    }
    jbuf b = {0};
    jv_str_to(c, &b, v);
    emit(c, at, b.p, b.n);
}

/* ---- evaluation -------------------------------------------------------------------------- */
static void exec(jctx *c, const jnode *n);
static jv eval_in(jctx *c, const jnode *n);

struct exec_ctx { /* jctx extended with the current frame: the first member is the jctx */
    jctx c;
    jframe *frame;
};

static int64_t as_int_arith(jctx *c, const jnode *at, jv v)
{
    (void)c, (void)at;
    return v.u.i;
}

static int num(jv v)
{
    return v.t == JV_INT || v.t == JV_BOOL || v.t == JV_FLOAT;
}
static double as_f(jv v)
{
    return v.t == JV_FLOAT ? v.u.f : (double)v.u.i;
}

_Noreturn static void overflow(jctx *c, const jnode *at)
{
    jerr(c, at, PL_ERR_UNSUPPORTED, "integer overflow (plumb's integers are 64-bit)");
}

static jv fval(double f)
{
    jv v = {.t = JV_FLOAT};
    v.u.f = f;
    return v;
}

static const char *op_text(int op)
{
    static const char *const t[] = {
        "+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">=", "in", "not in"};
    return op >= 0 && op < (int)(sizeof t / sizeof t[0]) ? t[op] : "?";
}

static void undef_check(jctx *c, const jnode *at, jv v)
{
    if (v.t == JV_UNDEF)
        jerr(c, at, PL_ERR_INVALID_ARG, "%s", v.u.s ? v.u.s->s : "value is undefined");
}

/* s * k and l * k: the repeated value must fit the memory limit before it is built; an empty
 * s or l repeats to empty whatever k is (k is no loop bound then: nothing charges the budget) */
static jv repeat(jctx *c, const jnode *at, jv seq, int64_t k)
{
    size_t unit = seq.t == JV_STR ? seq.u.s->len : seq.u.l->n * sizeof(jv);
    if (k < 0 || unit == 0) k = 0;
    uint64_t total;
    if (!pl_mul_u64(unit, (uint64_t)k, &total) || total > c->lim->max_memory)
        jerr(c, at, PL_ERR_LIMIT, "repetition builds more than %zu bytes (limit max_memory)",
             c->lim->max_memory);
    if (seq.t == JV_STR) {
        jbuf b = {0};
        for (int64_t i = 0; i < k; i++) jbuf_put(c, &b, seq.u.s->s, seq.u.s->len);
        return jv_str(jbuf_str(c, &b));
    }
    jlist *l = jlist_new(c, seq.u.l->n * (size_t)k);
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq.u.l->n; j++) l->v[l->n++] = seq.u.l->v[j];
    jv r = seq;
    r.u.l = l;
    return r;
}

static jv binop(jctx *c, const jnode *at, int op, jv a, jv b)
{
    undef_check(c, at, a);
    undef_check(c, at, b);
    int ints = (a.t == JV_INT || a.t == JV_BOOL) && (b.t == JV_INT || b.t == JV_BOOL);
    int64_t r;
    switch (op) {
    case JOP_ADD:
        if (ints) {
            if (__builtin_add_overflow(a.u.i, b.u.i, &r)) overflow(c, at);
            return jv_int(r);
        }
        if (num(a) && num(b)) return fval(as_f(a) + as_f(b));
        if (a.t == JV_STR && b.t == JV_STR) return jv_str(jstr_concat(c, a.u.s, b.u.s));
        if (a.t == JV_LIST && b.t == JV_LIST && a.tuple == b.tuple) {
            jlist *l = jlist_new(c, a.u.l->n + b.u.l->n);
            for (size_t i = 0; i < a.u.l->n; i++) l->v[l->n++] = a.u.l->v[i];
            for (size_t i = 0; i < b.u.l->n; i++) l->v[l->n++] = b.u.l->v[i];
            jv v = a;
            v.u.l = l;
            return v;
        }
        break;
    case JOP_SUB:
        if (ints) {
            if (__builtin_sub_overflow(a.u.i, b.u.i, &r)) overflow(c, at);
            return jv_int(r);
        }
        if (num(a) && num(b)) return fval(as_f(a) - as_f(b));
        break;
    case JOP_MUL:
        if (ints) {
            if (__builtin_mul_overflow(a.u.i, b.u.i, &r)) overflow(c, at);
            return jv_int(r);
        }
        if (num(a) && num(b)) return fval(as_f(a) * as_f(b));
        if ((a.t == JV_STR || a.t == JV_LIST) && (b.t == JV_INT || b.t == JV_BOOL))
            return repeat(c, at, a, b.u.i);
        if ((b.t == JV_STR || b.t == JV_LIST) && (a.t == JV_INT || a.t == JV_BOOL))
            return repeat(c, at, b, a.u.i);
        break;
    case JOP_DIV:
        if (num(a) && num(b)) {
            if (as_f(b) == 0.0) jerr(c, at, PL_ERR_INVALID_ARG, "division by zero");
            return fval(as_f(a) / as_f(b));
        }
        break;
    case JOP_FLOORDIV:
    case JOP_MOD:
        if (ints) {
            int64_t x = as_int_arith(c, at, a), y = b.u.i;
            if (y == 0) jerr(c, at, PL_ERR_INVALID_ARG, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) overflow(c, at);
            int64_t q = x / y, m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) q--, m += y;
            return jv_int(op == JOP_FLOORDIV ? q : m);
        }
        if (num(a) && num(b)) {
            double x = as_f(a), y = as_f(b);
            if (y == 0.0) jerr(c, at, PL_ERR_INVALID_ARG, "float division by zero");
            double m = fmod(x, y);
            if (m != 0.0 && ((m < 0) != (y < 0))) m += y;
            if (op == JOP_MOD) return fval(m);
            return fval(floor((x - m) / y + 0.0) == (x - m) / y ? (x - m) / y : floor(x / y));
        }
        if (op == JOP_MOD && a.t == JV_STR)
            jerr(c, at, PL_ERR_UNSUPPORTED, "string formatting with '%%' is not supported");
        break;
    case JOP_POW:
        if (ints && b.u.i >= 0) {
            int64_t base = a.u.i, e = b.u.i, acc = 1;
            while (e > 0) {
                if (e & 1)
                    if (__builtin_mul_overflow(acc, base, &acc)) overflow(c, at);
                e >>= 1;
                if (e && __builtin_mul_overflow(base, base, &base)) overflow(c, at);
            }
            return jv_int(acc);
        }
        if (num(a) && num(b)) {
            if (as_f(a) == 0.0 && as_f(b) < 0)
                jerr(c, at, PL_ERR_INVALID_ARG, "0.0 cannot be raised to a negative power");
            return fval(pow(as_f(a), as_f(b)));
        }
        break;
    }
    jerr(c, at, PL_ERR_INVALID_ARG, "unsupported operand type(s) for %s: '%s' and '%s'",
         op_text(op), jv_type_name(a), jv_type_name(b));
}

static int contains(jctx *c, const jnode *at, jv hay, jv needle)
{
    switch (hay.t) {
    case JV_UNDEF:
        return 0;
    case JV_STR:
        if (needle.t != JV_STR)
            jerr(c, at, PL_ERR_INVALID_ARG, "'in <string>' requires string as left operand, not %s",
                 jv_type_name(needle));
        if (!needle.u.s->len) return 1;
        for (size_t i = 0; i + needle.u.s->len <= hay.u.s->len; i++)
            if (!memcmp(hay.u.s->s + i, needle.u.s->s, needle.u.s->len)) return 1;
        return 0;
    case JV_LIST:
        for (size_t i = 0; i < hay.u.l->n; i++)
            if (jv_equal(hay.u.l->v[i], needle)) return 1;
        return 0;
    case JV_DICT:
    case JV_NS:
        return jdict_get(hay.u.d, needle) != NULL;
    default:
        jerr(c, at, PL_ERR_INVALID_ARG, "argument of type '%s' is not iterable", jv_type_name(hay));
    }
}

static int compare(jctx *c, const jnode *at, int op, jv a, jv b)
{
    switch (op) {
    case JOP_EQ:
        return jv_equal(a, b);
    case JOP_NE:
        return !jv_equal(a, b);
    case JOP_IN:
        return contains(c, at, b, a);
    case JOP_NOTIN:
        return !contains(c, at, b, a);
    default:
        break;
    }
    undef_check(c, at, a);
    undef_check(c, at, b);
    if (!((num(a) && num(b)) || (a.t == b.t && (a.t == JV_STR || a.t == JV_LIST))))
        jerr(c, at, PL_ERR_INVALID_ARG, "'%s' not supported between instances of '%s' and '%s'",
             op_text(op), jv_type_name(a), jv_type_name(b));
    if (num(a) && num(b) && (a.t == JV_FLOAT || b.t == JV_FLOAT) &&
        (isnan(as_f(a)) || isnan(as_f(b))))
        return 0;
    int r = jv_compare(c, at, a, b);
    switch (op) {
    case JOP_LT:
        return r < 0;
    case JOP_LE:
        return r <= 0;
    case JOP_GT:
        return r > 0;
    default:
        return r >= 0;
    }
}

/* Python slicing (start, stop, step with negatives and clamping) of n elements */
static size_t slice_indices(jctx *c, const jnode *at, jv s0, jv s1, jv s2, size_t n, int64_t *start,
                            int64_t *step)
{
    int64_t len = (int64_t)n, st = 1;
    if (s2.t != JV_NONE && s2.t != JV_UNDEF) {
        if (s2.t != JV_INT && s2.t != JV_BOOL)
            jerr(c, at, PL_ERR_INVALID_ARG, "slice indices must be integers or None");
        st = s2.u.i;
        if (st == 0) jerr(c, at, PL_ERR_INVALID_ARG, "slice step cannot be zero");
    }
    int64_t lo, hi;
    for (int k = 0; k < 2; k++) {
        jv v = k ? s1 : s0;
        int64_t def = k ? (st > 0 ? len : -1) : (st > 0 ? 0 : len - 1), x;
        if (v.t == JV_NONE || v.t == JV_UNDEF) {
            x = def;
        } else {
            if (v.t != JV_INT && v.t != JV_BOOL)
                jerr(c, at, PL_ERR_INVALID_ARG, "slice indices must be integers or None");
            x = v.u.i;
            if (x < 0) {
                x += len;
                if (x < 0) x = st > 0 ? 0 : -1;
            } else if (x >= len) {
                x = st > 0 ? len : len - 1;
            }
        }
        if (k)
            hi = x;
        else
            lo = x;
    }
    *start = lo, *step = st;
    if (st > 0) return hi > lo ? (size_t)((hi - lo + st - 1) / st) : 0;
    return lo > hi ? (size_t)((lo - hi - st - 1) / -st) : 0;
}

static jv do_slice(jctx *c, const jnode *at, jv obj, jv s0, jv s1, jv s2)
{
    int64_t start, step;
    if (obj.t == JV_LIST) {
        size_t m = slice_indices(c, at, s0, s1, s2, obj.u.l->n, &start, &step);
        jlist *l = jlist_new(c, m);
        for (size_t i = 0; i < m; i++) l->v[l->n++] = obj.u.l->v[start + (int64_t)i * step];
        jv r = obj;
        r.u.l = l;
        return r;
    }
    if (obj.t == JV_STR) {
        size_t n;
        size_t *off = jstr_offsets(c, obj.u.s, &n);
        size_t m = slice_indices(c, at, s0, s1, s2, n, &start, &step);
        jbuf b = {0};
        for (size_t i = 0; i < m; i++) {
            int64_t k = start + (int64_t)i * step;
            jbuf_put(c, &b, obj.u.s->s + off[k], off[k + 1] - off[k]);
        }
        return jv_str(jbuf_str(c, &b));
    }
    undef_check(c, at, obj);
    /* jinja2 compiles a slice to Python's own subscript (no environment.getitem) */
    jerr(c, at, PL_ERR_INVALID_ARG, "'%s' object is not subscriptable", jv_type_name(obj));
}

static jv get_item(jctx *c, const jnode *at, jv obj, jv key)
{
    undef_check(c, at, obj);
    if (obj.t == JV_DICT || obj.t == JV_NS) {
        const jv *v = jdict_get(obj.u.d, key);
        if (v) return *v;
        if (key.t == JV_STR) return jbuiltin_attr(c, at, obj, key.u.s->s, key.u.s->len);
        jbuf b = {0};
        jv_repr_to(c, &b, key);
        jbuf_putc(c, &b, 0);
        return undef_msg(c, "'dict object' has no attribute %.80s", b.p);
    }
    if ((obj.t == JV_LIST || obj.t == JV_STR) && (key.t == JV_INT || key.t == JV_BOOL)) {
        int64_t i = key.u.i;
        if (obj.t == JV_LIST) {
            int64_t n = (int64_t)obj.u.l->n;
            if (i < 0) i += n;
            if (i < 0 || i >= n)
                return undef_msg(c, "%s object has no element %lld", obj.tuple ? "tuple" : "list",
                                 (long long)key.u.i);
            return obj.u.l->v[i];
        }
        size_t n;
        size_t *off = jstr_offsets(c, obj.u.s, &n);
        if (i < 0) i += (int64_t)n;
        if (i < 0 || i >= (int64_t)n)
            return undef_msg(c, "str object has no element %lld", (long long)key.u.i);
        return jv_str(jstr_new(&c->arena, &c->fail, obj.u.s->s + off[i], off[i + 1] - off[i]));
    }
    if (key.t == JV_STR) return jbuiltin_attr(c, at, obj, key.u.s->s, key.u.s->len);
    return undef_msg(c, "'%s object' has no attribute", jv_type_name(obj));
}

/* a call's arguments, evaluated: positional first, then keywords, in order */
typedef struct {
    jv *v;
    size_t n;
    const jstr **kw;
    size_t n_kw;
} jargs;

static jargs eval_args(jctx *c, const jnode *n)
{
    jargs r = {0};
    r.v = n->n ? ja_alloc(&c->arena, &c->fail, n->n * sizeof *r.v) : NULL;
    r.kw = n->n ? ja_alloc(&c->arena, &c->fail, n->n * sizeof *r.kw) : NULL;
    for (size_t i = 0; i < n->n; i++)
        if (!n->names || !n->names[i]) r.v[r.n++] = eval_in(c, n->kids[i]);
    for (size_t i = 0; i < n->n; i++)
        if (n->names && n->names[i]) {
            r.v[r.n + r.n_kw] = eval_in(c, n->kids[i]);
            r.kw[r.n_kw++] = n->names[i];
        }
    return r;
}

static jv render_body(jctx *c, const jnode *body, jframe *frame)
{
    struct exec_ctx *x = (struct exec_ctx *)c;
    jbuf *saved_out = c->out;
    jframe *saved = x->frame;
    jbuf b = {0};
    c->out = &b;
    x->frame = frame;
    exec(c, body);
    x->frame = saved;
    c->out = saved_out;
    return jv_str(jbuf_str(c, &b));
}

static jv call_macro(jctx *c, const jnode *at, jv fn, const jv *args, size_t n_args,
                     const jstr *const *kw, size_t n_kw, jv caller)
{
    const jnode *m = fn.u.mac.m;
    const char *mname = m->kind == JS_MACRO ? m->name->s : "caller";
    enter(c, at);
    jframe *f = frame_new(c, fn.u.mac.frame);
    if (n_args > m->n_names)
        jerr(c, at, PL_ERR_INVALID_ARG, "macro '%.40s' takes not more than %zu argument(s)", mname,
             m->n_names);
    for (size_t i = 0; i < m->n_names; i++) {
        jv v;
        int have = 0;
        if (i < n_args) v = args[i], have = 1;
        for (size_t k = 0; k < n_kw; k++)
            if (kw[k]->len == m->names[i]->len && !memcmp(kw[k]->s, m->names[i]->s, kw[k]->len)) {
                if (have)
                    jerr(c, at, PL_ERR_INVALID_ARG,
                         "macro '%.40s' got multiple values for "
                         "argument '%.40s'",
                         mname, kw[k]->s);
                v = args[n_args + k], have = 1;
            }
        if (!have) {
            if (m->defs[i]) {
                struct exec_ctx *x = (struct exec_ctx *)c;
                jframe *saved = x->frame;
                x->frame = f;
                v = eval_in(c, m->defs[i]);
                x->frame = saved;
            } else {
                v = undef_msg(c, "parameter '%.40s' was not provided", m->names[i]->s);
            }
        }
        frame_set(c, f, m->names[i], v);
    }
    for (size_t k = 0; k < n_kw; k++) {
        int known = 0;
        for (size_t i = 0; i < m->n_names; i++)
            if (kw[k]->len == m->names[i]->len && !memcmp(kw[k]->s, m->names[i]->s, kw[k]->len))
                known = 1;
        if (!known)
            jerr(c, at, PL_ERR_INVALID_ARG, "macro '%.40s' takes no keyword argument '%.40s'",
                 mname, kw[k]->s);
    }
    if (caller.t == JV_CALLER) {
        frame_set(c, f, jstr_new(&c->arena, &c->fail, "caller", 6), caller);
    }
    jv r = render_body(c, m->kind == JS_MACRO ? m->a : m->b, f);
    c->depth--;
    return r;
}

static jv jcall_value(jctx *c, const jnode *at, jv fn, const jv *args, size_t n_args,
                      const jstr *const *kw, size_t n_kw)
{
    jv none = jv_none();
    switch (fn.t) {
    case JV_MACRO:
    case JV_CALLER:
        return call_macro(c, at, fn, args, n_args, kw, n_kw, none);
    case JV_FUNC:
        return jbuiltin_call_global(c, at, fn.fn, args, n_args, kw, n_kw);
    case JV_METHOD:
        return jbuiltin_call_method(c, at, fn, args, n_args, kw, n_kw);
    case JV_UNDEF:
        undef_check(c, at, fn);
        break;
    default:
        break;
    }
    jerr(c, at, PL_ERR_INVALID_ARG, "'%s' object is not callable", jv_type_name(fn));
}

/* a filter applied to v (n->a, its operand, already evaluated) */
static jv apply_filter(jctx *c, const jnode *n, jv v)
{
    jargs a = eval_args(c, n);
    return jbuiltin_filter(c, n, n->name, v, a.v, a.n, a.kw, a.n_kw);
}

/* the filters of a {% filter %} or {% set x | f %} chain, whose innermost operand is NULL */
static jv eval_filter_chain(jctx *c, const jnode *n, jv input)
{
    return apply_filter(c, n, n->a ? eval_filter_chain(c, n->a, input) : input);
}

static jv eval_in(jctx *c, const jnode *n)
{
    struct exec_ctx *x = (struct exec_ctx *)c;
    jstep(c, n);
    enter(c, n);
    jv r;
    switch (n->kind) {
    case JN_CONST:
        r = n->val;
        break;
    case JN_NAME: {
        const jv *v = frame_find(x->frame, n->name->s, n->name->len);
        if (v) {
            r = *v;
            break;
        }
        int g = jbuiltin_global(n->name->s, n->name->len);
        if (g >= 0) {
            r = (jv){.t = JV_FUNC, .fn = g};
            break;
        }
        r = undef_msg(c, "'%.60s' is undefined", n->name->s);
        break;
    }
    case JN_LIST:
    case JN_TUPLE: {
        jlist *l = jlist_new(c, n->n);
        for (size_t i = 0; i < n->n; i++) l->v[l->n++] = eval_in(c, n->kids[i]);
        r = (jv){.t = JV_LIST, .tuple = n->kind == JN_TUPLE};
        r.u.l = l;
        break;
    }
    case JN_DICT: {
        jdict *d = jdict_new(c, n->n / 2);
        for (size_t i = 0; i + 1 < n->n; i += 2) {
            jv k = eval_in(c, n->kids[i]);
            if (k.t == JV_LIST && !k.tuple)
                jerr(c, n->kids[i], PL_ERR_INVALID_ARG, "unhashable type: 'list'");
            if (k.t == JV_DICT) jerr(c, n->kids[i], PL_ERR_INVALID_ARG, "unhashable type: 'dict'");
            jdict_set(c, d, k, eval_in(c, n->kids[i + 1]));
        }
        r = (jv){.t = JV_DICT};
        r.u.d = d;
        break;
    }
    case JN_ATTR: {
        jv o = eval_in(c, n->a);
        undef_check(c, n, o);
        r = jbuiltin_attr(c, n, o, n->name->s, n->name->len);
        break;
    }
    case JN_ITEM: {
        jv o = eval_in(c, n->a);
        r = get_item(c, n, o, eval_in(c, n->b));
        break;
    }
    case JN_SLICE: {
        jv o = eval_in(c, n->a);
        jv none = jv_none();
        jv s0 = n->b ? eval_in(c, n->b) : none, s1 = n->c ? eval_in(c, n->c) : none;
        jv s2 = n->kids[0] ? eval_in(c, n->kids[0]) : none;
        r = do_slice(c, n, o, s0, s1, s2);
        break;
    }
    case JN_CALL: {
        jv fn = eval_in(c, n->a);
        jargs a = eval_args(c, n);
        r = jcall_value(c, n, fn, a.v, a.n, a.kw, a.n_kw);
        break;
    }
    case JN_FILTER:
        r = apply_filter(c, n, eval_in(c, n->a));
        break;
    case JN_TEST: {
        jv v = eval_in(c, n->a);
        jargs a = eval_args(c, n);
        int t = jbuiltin_test(c, n, n->name, v, a.v, a.n);
        r = jv_bool(n->op ? !t : t);
        break;
    }
    case JN_NOT:
        r = jv_bool(!jv_truthy(eval_in(c, n->a)));
        break;
    case JN_NEG:
    case JN_POS: {
        jv v = eval_in(c, n->a);
        undef_check(c, n, v);
        if (v.t == JV_INT || v.t == JV_BOOL) {
            if (n->kind == JN_NEG && v.u.i == INT64_MIN) overflow(c, n);
            r = jv_int(n->kind == JN_NEG ? -v.u.i : v.u.i);
        } else if (v.t == JV_FLOAT) {
            r = fval(n->kind == JN_NEG ? -v.u.f : v.u.f);
        } else {
            jerr(c, n, PL_ERR_INVALID_ARG, "bad operand type for unary %s: '%s'",
                 n->kind == JN_NEG ? "-" : "+", jv_type_name(v));
        }
        break;
    }
    case JN_BINOP: {
        jv a = eval_in(c, n->a);
        r = binop(c, n, n->op, a, eval_in(c, n->b));
        break;
    }
    case JN_AND: {
        jv a = eval_in(c, n->a);
        r = jv_truthy(a) ? eval_in(c, n->b) : a;
        break;
    }
    case JN_OR: {
        jv a = eval_in(c, n->a);
        r = jv_truthy(a) ? a : eval_in(c, n->b);
        break;
    }
    case JN_COMPARE: {
        jv a = eval_in(c, n->a);
        r = jv_bool(compare(c, n, n->op, a, eval_in(c, n->b)));
        break;
    }
    case JN_CONCAT: {
        jbuf b = {0};
        for (size_t i = 0; i < n->n; i++) jv_str_to(c, &b, eval_in(c, n->kids[i]));
        r = jv_str(jbuf_str(c, &b));
        break;
    }
    case JN_COND:
        if (jv_truthy(eval_in(c, n->b)))
            r = eval_in(c, n->a);
        else if (n->c)
            r = eval_in(c, n->c);
        else
            r = undef_msg(c, "the inline if-expression evaluated to false and no else section "
                             "was defined");
        break;
    default:
        jerr(c, n, PL_ERR_INVALID_ARG, "not an expression");
    }
    c->depth--;
    return r;
}

/* ---- statements ---------------------------------------------------------------------------- */
static void assign(jctx *c, const jnode *target, jv v, jframe *f)
{
    if (target->kind == JN_NAME) {
        frame_set(c, f, target->name, v);
        return;
    }
    if (target->kind == JN_ATTR) {
        const jv *ns = frame_find(f, target->a->name->s, target->a->name->len);
        if (!ns || ns->t != JV_NS)
            jerr(c, target, PL_ERR_INVALID_ARG, "cannot assign attribute on non-namespace object");
        jdict_set(c, ns->u.d, jv_str(target->name), v);
        return;
    }
    /* a tuple of names */
    if (v.t == JV_DICT || v.t == JV_STR) {
        jlist *l = jiter(c, target, v);
        v = (jv){.t = JV_LIST};
        v.u.l = l;
    }
    if (v.t != JV_LIST)
        jerr(c, target, PL_ERR_INVALID_ARG, "cannot unpack non-iterable %s object",
             jv_type_name(v));
    if (v.u.l->n != target->n)
        jerr(c, target, PL_ERR_INVALID_ARG, "%s values to unpack (expected %zu, got %zu)",
             v.u.l->n > target->n ? "too many" : "not enough", target->n, v.u.l->n);
    for (size_t i = 0; i < target->n; i++) assign(c, target->kids[i], v.u.l->v[i], f);
}

static void exec_for(jctx *c, const jnode *n)
{
    struct exec_ctx *x = (struct exec_ctx *)c;
    jframe *outer = x->frame;
    jv seq = eval_in(c, n->b);
    jlist *items = jiter(c, n->b, seq);
    if (n->c) { /* for x in y if cond: the loop sees only the items that pass */
        jlist *kept = jlist_new(c, items->n);
        for (size_t i = 0; i < items->n; i++) {
            jframe *f = frame_new(c, outer);
            assign(c, n->a, items->v[i], f);
            x->frame = f;
            int keep = jv_truthy(eval_in(c, n->c));
            x->frame = outer;
            if (keep) kept->v[kept->n++] = items->v[i];
        }
        items = kept;
    }
    jloop *loop = ja_alloc(&c->arena, &c->fail, sizeof *loop);
    loop->items = items;
    const jv *parent_loop = frame_find(outer, "loop", 4);
    loop->depth = parent_loop && parent_loop->t == JV_LOOP ? parent_loop->u.loop->depth + 1 : 1;
    jv lv = {.t = JV_LOOP};
    lv.u.loop = loop;
    static const char loop_name_s[] = "loop";
    const jstr *loop_name = jstr_new(&c->arena, &c->fail, loop_name_s, 4);
    enter(c, n);
    for (size_t i = 0; i < items->n; i++) {
        if (++c->iterations > c->lim->max_iterations)
            jerr(c, n, PL_ERR_LIMIT, "more than %llu loop iterations (limit max_iterations)",
                 (unsigned long long)c->lim->max_iterations);
        loop->index = i;
        jframe *f = frame_new(c, outer);
        frame_set(c, f, loop_name, lv);
        assign(c, n->a, items->v[i], f);
        x->frame = f;
        exec(c, n->kids[0]);
        x->frame = outer;
        if (c->loop_signal == 1) {
            c->loop_signal = 0;
            break;
        }
        c->loop_signal = 0;
    }
    c->depth--;
    if (!items->n && n->kids[1]) exec(c, n->kids[1]);
}

static void exec(jctx *c, const jnode *n)
{
    struct exec_ctx *x = (struct exec_ctx *)c;
    jstep(c, n);
    switch (n->kind) {
    case JS_BODY:
        enter(c, n);
        for (size_t i = 0; i < n->n && !c->loop_signal; i++) exec(c, n->kids[i]);
        c->depth--;
        return;
    case JS_TEXT:
        emit(c, n, n->name->s, n->name->len);
        return;
    case JS_OUTPUT:
        emit_value(c, n, eval_in(c, n->a));
        return;
    case JS_IF:
        if (jv_truthy(eval_in(c, n->a)))
            exec(c, n->b);
        else if (n->c)
            exec(c, n->c);
        return;
    case JS_FOR:
        exec_for(c, n);
        return;
    case JS_SET:
        assign(c, n->a, eval_in(c, n->b), x->frame);
        return;
    case JS_SETBLOCK: {
        jv v = render_body(c, n->b, x->frame);
        if (n->c) v = eval_filter_chain(c, n->c, v);
        assign(c, n->a, v, x->frame);
        return;
    }
    case JS_MACRO: {
        jv m = {.t = JV_MACRO};
        m.u.mac.m = n, m.u.mac.frame = x->frame;
        frame_set(c, x->frame, n->name, m);
        return;
    }
    case JS_CALLBLOCK: {
        const jnode *call = n->a;
        jv fn = eval_in(c, call->a);
        jargs a = eval_args(c, call);
        jv caller = {.t = JV_CALLER};
        caller.u.mac.m = n, caller.u.mac.frame = x->frame;
        if (fn.t != JV_MACRO) {
            undef_check(c, call, fn);
            jerr(c, call, PL_ERR_INVALID_ARG, "{%% call %%} needs a macro, not '%s'",
                 jv_type_name(fn));
        }
        emit_value(c, n, call_macro(c, call, fn, a.v, a.n, a.kw, a.n_kw, caller));
        return;
    }
    case JS_FILTERBLOCK: {
        jv v = render_body(c, n->b, x->frame);
        emit_value(c, n, eval_filter_chain(c, n->a, v));
        return;
    }
    case JS_BREAK:
        c->loop_signal = 1;
        return;
    case JS_CONTINUE:
        c->loop_signal = 2;
        return;
    default:
        emit_value(c, n, eval_in(c, n));
    }
}

/* ---- entry points ---------------------------------------------------------------------------- */
pl_status pl_jinja_compile(const char *src, size_t len, pl_jinja_template **out, pl_error *err)
{
    if (out) *out = NULL;
    if (!out || (!src && len)) return pl_fail(err, PL_ERR_INVALID_ARG, "jinja: NULL argument");
    pl_jinja_template *t = pl_calloc(1, sizeof *t);
    if (!t) return pl_fail(err, PL_ERR_NOMEM, "jinja: out of memory");
    jfail f = {.err = err};
    if (setjmp(f.jb)) {
        ja_free_all(&t->arena);
        pl_free(t);
        return f.code;
    }
    t->root = jparse(&t->arena, &f, src ? src : "", len);
    *out = t;
    return pl_ok(err);
}

void pl_jinja_free(pl_jinja_template *t)
{
    if (!t) return;
    ja_free_all(&t->arena);
    pl_free(t);
}

pl_status pl_jinja_render(const pl_jinja_template *t, const json_t *context,
                          const pl_jinja_limits *lim, char **out, size_t *out_len, pl_error *err)
{
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!t || !out) return pl_fail(err, PL_ERR_INVALID_ARG, "jinja: NULL argument");
    if (context && !json_is_object(context))
        return pl_fail(err, PL_ERR_INVALID_ARG, "jinja: the context must be a JSON object");
    pl_jinja_limits L = lim ? *lim : (pl_jinja_limits){0};
    if (!L.max_steps) L.max_steps = PL_JINJA_DEFAULT_STEPS;
    if (!L.max_depth) L.max_depth = PL_JINJA_DEFAULT_DEPTH;
    if (!L.max_iterations) L.max_iterations = PL_JINJA_DEFAULT_ITERATIONS;
    if (!L.max_output) L.max_output = PL_JINJA_DEFAULT_OUTPUT;
    if (!L.max_memory) L.max_memory = PL_JINJA_DEFAULT_MEMORY;
    if (!L.has_now) L.now = (int64_t)time(NULL), L.has_now = 1;
    struct exec_ctx x;
    memset(&x, 0, sizeof x);
    jctx *c = &x.c;
    c->lim = &L;
    c->fail.err = err;
    c->arena.limit = L.max_memory;
    jbuf top = {0};
    c->out = &top;
    if (setjmp(c->fail.jb)) {
        ja_free_all(&c->arena);
        return c->fail.code;
    }
    c->globals = frame_new(c, NULL);
    if (context) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)context, k, v)
        {
            frame_set(c, c->globals, jstr_new(&c->arena, &c->fail, k, strlen(k)),
                      jv_from_json(c, v, 0));
        }
    }
    x.frame = frame_new(c, c->globals);
    exec(c, t->root);
    char *r = pl_malloc(top.n + 1);
    if (!r) jerr(c, NULL, PL_ERR_NOMEM, "out of memory (%zu bytes of output)", top.n + 1);
    if (top.n) memcpy(r, top.p, top.n);
    r[top.n] = 0;
    *out = r;
    if (out_len) *out_len = top.n;
    ja_free_all(&c->arena);
    return pl_ok(err);
}
