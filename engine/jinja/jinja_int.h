/* jinja_int.h — what the Jinja sources share: the arena, values, the AST and the render
 * state. Not an API: only the sources of engine/jinja include it (and white-box tests). */
#ifndef PLUMB_JINJA_INT_H
#define PLUMB_JINJA_INT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "jinja/jinja.h"

/* ---- arena: every node of a template and every value of a render lives in one ---------- */
typedef struct jarena_chunk jarena_chunk;
typedef struct jarena {
    jarena_chunk *head;
    size_t used, limit; /* bytes handed out (chunk granularity) and the cap (0: none) */
} jarena;

/* Errors unwind with longjmp to the one setjmp of compile or render; the arena owns all
 * memory, so nothing is left behind. */
typedef struct jfail {
    jmp_buf jb;
    pl_error *err;
    pl_status code;
    uint32_t line, col; /* where the render is: named by errors raised without a node */
} jfail;

void *ja_alloc(jarena *a, jfail *f, size_t n);
void ja_free_all(jarena *a);
_Noreturn void jfail_at(jfail *f, pl_status code, uint32_t line, uint32_t col, const char *fmt, ...)
    PL_PRINTF(5, 6);

/* ---- values ---------------------------------------------------------------------------- */
typedef enum {
    JV_UNDEF, /* s: the reason ("'x' is undefined"), or NULL */
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,
    JV_LIST, /* tuple when .tuple is set (printed with parentheses) */
    JV_DICT,
    JV_NS,     /* namespace(): a dict whose attributes `set ns.x = ...` may assign */
    JV_MACRO,  /* m: the macro, frame: where it was defined */
    JV_FUNC,   /* i: a global function (JF_*) */
    JV_METHOD, /* i: the method (JM_*), self: the object */
    JV_LOOP,   /* loop: the loop state of a for */
    JV_CALLER, /* m: the call block, frame: where it was called */
} jv_type;

typedef struct jstr {
    size_t len;
    char s[]; /* len bytes of UTF-8, then a NUL */
} jstr;

typedef struct jv jv;
typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jnode jnode;
typedef struct jframe jframe;
typedef struct jloop jloop;

struct jv {
    uint8_t t;
    uint8_t tuple;
    union {
        int64_t i;
        double f;
        const jstr *s;
        jlist *l;
        jdict *d;
        jloop *loop;
        struct {
            const jnode *m;
            jframe *frame;
        } mac;
        const jv *self;
    } u;
    int32_t fn; /* JV_FUNC / JV_METHOD: which */
};

struct jlist {
    size_t n, cap;
    jv *v;
};
struct jdict {
    size_t n, cap;
    jv *k, *v;
};

/* ---- the AST ------------------------------------------------------------------------- */
typedef enum {
    /* expressions */
    JN_CONST,   /* val */
    JN_NAME,    /* name */
    JN_LIST,    /* kids */
    JN_TUPLE,   /* kids */
    JN_DICT,    /* kids: key, value, key, value... */
    JN_ATTR,    /* a.name */
    JN_ITEM,    /* a[b] */
    JN_SLICE,   /* a[b:c:d], each of b c d may be NULL */
    JN_CALL,    /* a(kids; kw names in names) */
    JN_FILTER,  /* name: filter, a: operand (NULL in a filter block), kids: args */
    JN_TEST,    /* name: test, a: operand, kids: args; op 1: "is not" */
    JN_NOT,     /* a */
    JN_NEG,     /* a */
    JN_POS,     /* a */
    JN_BINOP,   /* op: JOP_*, a, b */
    JN_AND,     /* a, b */
    JN_OR,      /* a, b */
    JN_COMPARE, /* op: JOP_*, a, b */
    JN_CONCAT,  /* kids */
    JN_COND,    /* a if b else c (c may be NULL) */
    /* statements */
    JS_BODY,        /* kids */
    JS_TEXT,        /* name: the bytes */
    JS_OUTPUT,      /* a */
    JS_IF,          /* a: condition, b: then body, c: else body (an elif is an if in c) */
    JS_FOR,         /* a: target, b: iterable, c: filter, kids[0]: body, kids[1]: else */
    JS_SET,         /* a: target, b: value */
    JS_SETBLOCK,    /* a: target, b: body, c: filter (a JN_FILTER chain over NULL) */
    JS_MACRO,       /* name, kids: body; params in names, defaults in defs */
    JS_CALLBLOCK,   /* a: the call, b: body; params in names, defaults in defs */
    JS_FILTERBLOCK, /* a: filter chain, b: body */
    JS_BREAK,
    JS_CONTINUE,
} jnode_kind;

typedef enum {
    JOP_ADD,
    JOP_SUB,
    JOP_MUL,
    JOP_DIV,
    JOP_FLOORDIV,
    JOP_MOD,
    JOP_POW,
    JOP_EQ,
    JOP_NE,
    JOP_LT,
    JOP_LE,
    JOP_GT,
    JOP_GE,
    JOP_IN,
    JOP_NOTIN,
} jop;

struct jnode {
    uint8_t kind, op;
    uint32_t line, col;
    const jstr *name;
    jnode *a, *b, *c;
    jnode **kids;
    size_t n;
    const jstr **names; /* call keyword names (NULL for positional) / macro parameters */
    jnode **defs;       /* macro parameter defaults (NULL where none) */
    size_t n_names;
    jv val;
};

struct pl_jinja_template {
    jarena arena;
    jnode *root;
};

/* ---- lexer + parser (parse.c) ------------------------------------------------------------ */
jnode *jparse(jarena *a, jfail *f, const char *src, size_t len);

/* ---- values (value.c) ---------------------------------------------------------------------- */
typedef struct jbuf { /* a growing byte buffer in the arena */
    char *p;
    size_t n, cap;
} jbuf;

typedef struct jctx jctx;
const jstr *jstr_new(jarena *a, jfail *f, const char *s, size_t n);
const jstr *jstr_concat(jctx *c, const jstr *a, const jstr *b);
void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n);
void jbuf_putc(jctx *c, jbuf *b, char ch);
const jstr *jbuf_str(jctx *c, jbuf *b);
jlist *jlist_new(jctx *c, size_t cap);
void jlist_push(jctx *c, jlist *l, jv v);
jdict *jdict_new(jctx *c, size_t cap);
void jdict_set(jctx *c, jdict *d, jv k, jv v);
const jv *jdict_get(const jdict *d, jv k);
const jv *jdict_get_str(const jdict *d, const char *k, size_t n);
jv jv_str(const jstr *s);
jv jv_int(int64_t i);
jv jv_bool(int b);
jv jv_none(void);
jv jv_undef(const jstr *why);
jv jv_cstr(jctx *c, const char *s);
jv jv_from_json(jctx *c, const json_t *j, int depth);
int jv_truthy(jv v);
int jv_equal(jv a, jv b);
/* <0, 0, >0; fails (TypeError) for values Python does not order */
int jv_compare(jctx *c, const jnode *at, jv a, jv b);
/* str(v) as Python prints it (print form), repr(v) as inside a list */
void jv_str_to(jctx *c, jbuf *b, jv v);
void jv_repr_to(jctx *c, jbuf *b, jv v);
const jstr *jv_to_str(jctx *c, jv v);
/* json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) */
void jv_json_to(jctx *c, const jnode *at, jbuf *b, jv v, const char *indent, size_t indent_len,
                int use_indent, const char *item_sep, const char *key_sep, int sort_keys,
                int depth);
const char *jv_type_name(jv v);
void jfloat_repr(char *buf, size_t cap, double f);
size_t jutf8_count(const char *s, size_t n);
size_t jutf8_valid_prefix(const char *s, size_t n);

/* ---- render state (eval.c) and the builtins (builtins.c) ----------------------------------- */
typedef struct jvar {
    const jstr *name;
    jv val;
} jvar;

struct jframe {
    jframe *parent;
    jvar *vars;
    size_t n, cap;
};

struct jloop {
    jlist *items;
    size_t index; /* 0-based */
    uint32_t depth;
};

struct jctx {
    jarena arena;
    jfail fail;
    const pl_jinja_limits *lim;
    uint64_t steps, iterations;
    uint32_t depth;
    jframe *globals;
    jbuf *out;
    size_t out_total; /* bytes in the render's top-level output */
    int loop_signal;  /* 1 break, 2 continue */
};

_Noreturn void jerr(jctx *c, const jnode *at, pl_status code, const char *fmt, ...) PL_PRINTF(4, 5);

enum { /* global functions */
       JF_RANGE,
       JF_NAMESPACE,
       JF_DICT,
       JF_RAISE,
       JF_STRFTIME,
       JF_CALLER_UNUSED,
};
int jbuiltin_global(const char *name, size_t n);
jv jbuiltin_call_global(jctx *c, const jnode *at, int fn, const jv *args, size_t n_args,
                        const jstr *const *kw, size_t n_kw);
/* attribute lookup on a non-undefined value: a method, a dict item, a loop field; or an
 * undefined value when there is none (as jinja2's getattr) */
jv jbuiltin_attr(jctx *c, const jnode *at, jv obj, const char *name, size_t n);
jv jbuiltin_call_method(jctx *c, const jnode *at, jv m, const jv *args, size_t n_args,
                        const jstr *const *kw, size_t n_kw);
jv jbuiltin_filter(jctx *c, const jnode *at, const jstr *name, jv v, const jv *args, size_t n_args,
                   const jstr *const *kw, size_t n_kw);
int jbuiltin_test(jctx *c, const jnode *at, const jstr *name, jv v, const jv *args, size_t n_args);
/* byte offsets of each code point of s (*n_cp + 1 entries, the last s->len) */
size_t *jstr_offsets(jctx *c, const jstr *s, size_t *n_cp);
/* the items of an iterable (list, tuple, dict keys, string characters); fails otherwise */
jlist *jiter(jctx *c, const jnode *at, jv v);
_Noreturn void jstep_limit(jctx *c, const jnode *at);
/* one step of the budget, at node `at` (named by errors raised without a node); inline: every
 * node evaluated takes one */
static inline void jstep(jctx *c, const jnode *at)
{
    if (at) c->fail.line = at->line, c->fail.col = at->col;
    if (++c->steps > c->lim->max_steps) jstep_limit(c, at);
}

#endif
