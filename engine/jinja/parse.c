/* parse.c — template source to AST: the lexer (jinja2's, as transformers configures it:
 * trim_blocks, lstrip_blocks, newlines normalized, one trailing newline dropped) and a
 * recursive-descent parser of jinja2's grammar. Not the evaluator (eval.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja_int.h"

#define MAX_PARSE_DEPTH 200 /* nesting of expressions and blocks: the C stack stays small */
#define PL_STR_(x)      #x
#define PL_STR(x)       PL_STR_(x)

typedef enum {
    T_DATA,
    T_VAR_BEGIN,
    T_VAR_END,
    T_BLOCK_BEGIN,
    T_BLOCK_END,
    T_NAME,
    T_STRING,
    T_INT,
    T_FLOAT,
    T_OP, /* op: the operator's text (1 or 2 bytes) */
    T_EOF,
} tok_type;

typedef struct tok {
    uint8_t type;
    char op[3];
    uint32_t line, col;
    const jstr *s; /* DATA, NAME, STRING (unescaped) */
    int64_t i;
    double f;
} tok;

typedef struct parser {
    size_t pos_off; /* pos_of's cursor: tokens come in order, so positions are found in O(n) */
    uint32_t pos_line, pos_col;
    jarena *a;
    jfail *f;
    const char *src; /* normalized source */
    size_t len;
    tok *toks;
    size_t n, cap, pos;
    int depth;
} parser;

/* ---- lexer ------------------------------------------------------------------------------ */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static int is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static void pos_of(parser *p, size_t off, uint32_t *line, uint32_t *col)
{
    if (off < p->pos_off || p->pos_line == 0) p->pos_off = 0, p->pos_line = 1, p->pos_col = 1;
    for (size_t i = p->pos_off; i < off && i < p->len; i++) {
        if (p->src[i] == '\n')
            p->pos_line++, p->pos_col = 1;
        else if (((unsigned char)p->src[i] & 0xC0) != 0x80)
            p->pos_col++;
    }
    p->pos_off = off;
    *line = p->pos_line;
    *col = p->pos_col;
}

_Noreturn static void lex_fail(parser *p, size_t off, pl_status code, const char *what)
{
    uint32_t line, col;
    pos_of(p, off, &line, &col);
    jfail_at(p->f, code, line, col, "%s", what);
}

static tok *push_tok(parser *p, tok_type type, size_t off)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        tok *t = ja_alloc(p->a, p->f, cap * sizeof *t);
        if (p->n) memcpy(t, p->toks, p->n * sizeof *t);
        p->toks = t, p->cap = cap;
    }
    tok *t = &p->toks[p->n++];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    pos_of(p, off, &t->line, &t->col);
    return t;
}

static void push_data(parser *p, size_t off, const char *s, size_t n)
{
    if (!n) return;
    tok *t = push_tok(p, T_DATA, off);
    t->s = jstr_new(p->a, p->f, s, n);
}

static size_t rstrip_len(const char *s, size_t n)
{
    while (n && is_space(s[n - 1])) n--;
    return n;
}

/* The text before a tag, with the tag's whitespace control: '-' strips all of its trailing
 * whitespace; otherwise lstrip_blocks (not for {{) strips spaces between a line start and
 * the tag. */
static void emit_text(parser *p, size_t off, size_t n, char sign, int lstrip, int line_starting)
{
    const char *s = p->src + off;
    if (sign == '-') {
        n = rstrip_len(s, n);
    } else if (sign != '+' && lstrip) {
        size_t l = n;
        while (l && s[l - 1] != '\n') l--;
        if ((l > 0 || line_starting) && l < n) {
            size_t k = l;
            while (k < n && is_space(s[k])) k++;
            if (k == n) n = l;
        }
    }
    push_data(p, off, s, n);
}

static int starts(const parser *p, size_t i, const char *lit)
{
    size_t k = strlen(lit);
    return i + k <= p->len && memcmp(p->src + i, lit, k) == 0;
}

/* {% raw %} at i (with its strip sign)? Sets *end past the tag. */
static int raw_begin(const parser *p, size_t i, size_t *end)
{
    size_t j = i + 2;
    if (j < p->len && (p->src[j] == '-' || p->src[j] == '+')) j++;
    while (j < p->len && is_space(p->src[j])) j++;
    if (!starts(p, j, "raw")) return 0;
    j += 3;
    while (j < p->len && is_space(p->src[j])) j++;
    if (starts(p, j, "-%}")) {
        j += 3;
        while (j < p->len && is_space(p->src[j])) j++;
    } else if (starts(p, j, "%}")) {
        j += 2;
    } else {
        return 0;
    }
    *end = j;
    return 1;
}

/* {% endraw %} at i? Sets *sign and *end (past trailing whitespace control). */
static int raw_end(const parser *p, size_t i, char *sign, size_t *end)
{
    if (!starts(p, i, "{%")) return 0;
    size_t j = i + 2;
    *sign = 0;
    if (j < p->len && (p->src[j] == '-' || p->src[j] == '+')) *sign = p->src[j++];
    while (j < p->len && is_space(p->src[j])) j++;
    if (!starts(p, j, "endraw")) return 0;
    j += 6;
    while (j < p->len && is_space(p->src[j])) j++;
    if (starts(p, j, "+%}")) {
        j += 3;
    } else if (starts(p, j, "-%}")) {
        j += 3;
        while (j < p->len && is_space(p->src[j])) j++;
    } else if (starts(p, j, "%}")) {
        j += 2;
        if (j < p->len && p->src[j] == '\n') j++;
    } else {
        return 0;
    }
    *end = j;
    return 1;
}

static uint32_t hex_val(char c)
{
    if (c >= '0' && c <= '9') return (uint32_t)(c - '0');
    if (c >= 'a' && c <= 'f') return (uint32_t)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (uint32_t)(c - 'A' + 10);
    return 99;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A string literal's body as Python's unicode-escape decodes it (unknown escapes kept). */
static const jstr *unescape(parser *p, size_t off, const char *s, size_t n)
{
    char *o = ja_alloc(p->a, p->f, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 == n) {
            o[k++] = s[i];
            continue;
        }
        char e = s[++i];
        switch (e) {
        case '\n':
            break;
        case '\\':
            o[k++] = '\\';
            break;
        case '\'':
            o[k++] = '\'';
            break;
        case '"':
            o[k++] = '"';
            break;
        case 'a':
            o[k++] = '\a';
            break;
        case 'b':
            o[k++] = '\b';
            break;
        case 'f':
            o[k++] = '\f';
            break;
        case 'n':
            o[k++] = '\n';
            break;
        case 'r':
            o[k++] = '\r';
            break;
        case 't':
            o[k++] = '\t';
            break;
        case 'v':
            o[k++] = '\v';
            break;
        case 'x':
        case 'u':
        case 'U': {
            size_t w = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            if (i + w >= n)
                lex_fail(p, off + i, PL_ERR_FORMAT, "truncated \\x/\\u escape in a string");
            for (size_t d = 1; d <= w; d++) {
                uint32_t h = hex_val(s[i + d]);
                if (h > 15) lex_fail(p, off + i, PL_ERR_FORMAT, "bad \\x/\\u escape in a string");
                cp = cp * 16 + h;
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                lex_fail(p, off + i, PL_ERR_UNSUPPORTED,
                         "escape names a surrogate or a code point past U+10FFFF");
            i += w;
            k += put_utf8(o + k, cp);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = 0;
                size_t d = 0;
                while (d < 3 && i + d < n && s[i + d] >= '0' && s[i + d] <= '7')
                    cp = cp * 8 + (uint32_t)(s[i + d] - '0'), d++;
                i += d - 1;
                k += put_utf8(o + k, cp);
            } else {
                o[k++] = '\\';
                o[k++] = e;
            }
        }
    }
    return jstr_new(p->a, p->f, o, k);
}

/* The end of a tag at i ('%}' or '}}', with '-' stripping the whitespace after it, and for
 * blocks '+' keeping the newline trim_blocks would eat): pushes its token and returns the
 * offset after it, or 0 when i is not at one. */
static size_t tag_end(parser *p, size_t i, int is_block, int *line_starting)
{
    const char *close = is_block ? "%}" : "}}";
    tok_type type = is_block ? T_BLOCK_END : T_VAR_END;
    if (p->src[i] == '-' && starts(p, i + 1, close)) {
        push_tok(p, type, i);
        i += 3;
        while (i < p->len && is_space(p->src[i])) i++;
        *line_starting = p->src[i - 1] == '\n';
        return i;
    }
    if (is_block && p->src[i] == '+' && starts(p, i + 1, close)) {
        push_tok(p, type, i);
        *line_starting = 0;
        return i + 3;
    }
    if (!starts(p, i, close)) return 0;
    push_tok(p, type, i);
    i += 2;
    *line_starting = 0;
    if (is_block && i < p->len && p->src[i] == '\n') i++, *line_starting = 1;
    return i;
}

/* Tokens of one {{ }} or {% %} tag from i; returns the offset after its end. */
static size_t lex_tag(parser *p, size_t i, int is_block, int *line_starting)
{
    int depth = 0;
    char stack[MAX_PARSE_DEPTH];
    for (;;) {
        if (i >= p->len)
            lex_fail(p, i, PL_ERR_FORMAT,
                     is_block ? "unexpected end of template: "
                                "a '{%' tag is not closed"
                              : "unexpected end of template: "
                                "a '{{' tag is not closed");
        size_t end;
        if (depth == 0 && (end = tag_end(p, i, is_block, line_starting))) return end;
        char c = p->src[i];
        if (is_space(c)) {
            i++;
            continue;
        }
        size_t start = i;
        if (is_digit(c)) {
            /* (\d+_)*\d+ then optionally .digits and/or e[+-]digits: a float */
            char num[64];
            size_t k = 0, j = i;
            int is_float = 0;
            while (j < p->len && (is_digit(p->src[j]) || (p->src[j] == '_' && j + 1 < p->len &&
                                                          is_digit(p->src[j + 1])))) {
                if (p->src[j] != '_' && k < sizeof num - 1) num[k++] = p->src[j];
                j++;
            }
            if (j + 1 < p->len && p->src[j] == '.' && is_digit(p->src[j + 1])) {
                is_float = 1;
                num[k < sizeof num - 1 ? k++ : k] = '.';
                j++;
                while (j < p->len && (is_digit(p->src[j]) || (p->src[j] == '_' && j + 1 < p->len &&
                                                              is_digit(p->src[j + 1])))) {
                    if (p->src[j] != '_' && k < sizeof num - 1) num[k++] = p->src[j];
                    j++;
                }
            }
            if (j < p->len && (p->src[j] == 'e' || p->src[j] == 'E')) {
                size_t e = j + 1;
                if (e < p->len && (p->src[e] == '+' || p->src[e] == '-')) e++;
                if (e < p->len && is_digit(p->src[e])) {
                    is_float = 1;
                    if (k < sizeof num - 1) num[k++] = 'e';
                    for (size_t q = j + 1; q < e; q++)
                        if (k < sizeof num - 1) num[k++] = p->src[q];
                    j = e;
                    while (j < p->len && is_digit(p->src[j]))
                        if (k < sizeof num - 1)
                            num[k++] = p->src[j++];
                        else
                            j++;
                }
            }
            num[k] = 0;
            if (k >= sizeof num - 1) lex_fail(p, start, PL_ERR_LIMIT, "number literal too long");
            tok *t = push_tok(p, is_float ? T_FLOAT : T_INT, start);
            if (is_float) {
                t->f = strtod(num, NULL);
            } else {
                uint64_t v = 0;
                for (size_t q = 0; q < k; q++) {
                    uint64_t d = (uint64_t)(num[q] - '0');
                    if (v > ((uint64_t)INT64_MAX - d) / 10)
                        lex_fail(p, start, PL_ERR_UNSUPPORTED,
                                 "integer literal past 64 bits (plumb's integers are 64-bit)");
                    v = v * 10 + d;
                }
                t->i = (int64_t)v;
            }
            i = j;
            continue;
        }
        if (is_name_start(c)) {
            size_t j = i;
            while (j < p->len && (is_name_start(p->src[j]) || is_digit(p->src[j]))) j++;
            tok *t = push_tok(p, T_NAME, start);
            t->s = jstr_new(p->a, p->f, p->src + i, j - i);
            i = j;
            continue;
        }
        if (c == '\'' || c == '"') {
            size_t j = i + 1;
            while (j < p->len && p->src[j] != c) j += p->src[j] == '\\' ? 2 : 1;
            if (j >= p->len) lex_fail(p, start, PL_ERR_FORMAT, "unterminated string literal");
            tok *t = push_tok(p, T_STRING, start);
            t->s = unescape(p, i + 1, p->src + i + 1, j - i - 1);
            i = j + 1;
            continue;
        }
        static const char *const ops2[] = {"//", "**", "==", "!=", ">=", "<="};
        tok *t = NULL;
        for (size_t q = 0; q < sizeof ops2 / sizeof ops2[0]; q++)
            if (starts(p, i, ops2[q])) {
                t = push_tok(p, T_OP, start);
                memcpy(t->op, ops2[q], 2);
                i += 2;
                break;
            }
        if (t) continue;
        if (!strchr("+-/*%~[](){}<>=.:|,;", c) || c == 0) {
            char what[64];
            snprintf(what, sizeof what, "unexpected character '%c' in a tag",
                     (unsigned char)c >= 0x20 && (unsigned char)c < 0x7f ? c : '?');
            lex_fail(p, i, PL_ERR_FORMAT, what);
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth == (int)sizeof stack)
                lex_fail(p, i, PL_ERR_LIMIT,
                         "brackets: nesting deeper than " PL_STR(MAX_PARSE_DEPTH) " levels");
            stack[depth++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0 || stack[depth - 1] != c) {
                char what[48];
                snprintf(what, sizeof what, "unexpected '%c'", c);
                lex_fail(p, i, PL_ERR_FORMAT, what);
            }
            depth--;
        }
        t = push_tok(p, T_OP, start);
        t->op[0] = c;
        i++;
    }
}

static void lex(parser *p)
{
    size_t i = 0;
    int line_starting = 1;
    while (i < p->len) {
        /* the next {{, {% or {# */
        size_t j = i;
        while (j + 1 < p->len &&
               !(p->src[j] == '{' &&
                 (p->src[j + 1] == '{' || p->src[j + 1] == '%' || p->src[j + 1] == '#')))
            j++;
        if (j + 1 >= p->len) {
            push_data(p, i, p->src + i, p->len - i);
            break;
        }
        char kind = p->src[j + 1];
        char sign =
            j + 2 < p->len && (p->src[j + 2] == '-' || p->src[j + 2] == '+') ? p->src[j + 2] : 0;
        emit_text(p, i, j - i, sign, kind != '{', line_starting);
        size_t after;
        if (kind == '%' && raw_begin(p, j, &after)) {
            /* the raw body up to {% endraw %} */
            size_t k = after;
            char esign = 0;
            size_t end = 0;
            while (k < p->len && !raw_end(p, k, &esign, &end)) k++;
            if (k >= p->len) lex_fail(p, j, PL_ERR_FORMAT, "'{% raw %}' without '{% endraw %}'");
            emit_text(p, after, k - after, esign, 1, after > 0 && p->src[after - 1] == '\n');
            line_starting = end > 0 && p->src[end - 1] == '\n';
            i = end;
            continue;
        }
        if (kind == '#') {
            size_t k = j + 2;
            while (k + 1 < p->len && !(p->src[k] == '#' && p->src[k + 1] == '}')) k++;
            if (k + 1 >= p->len) lex_fail(p, j, PL_ERR_FORMAT, "unterminated comment '{#'");
            size_t body = j + 2 + (sign ? 1 : 0);
            char csign = k > body ? p->src[k - 1] : 0;
            i = k + 2;
            if (csign == '-') {
                while (i < p->len && is_space(p->src[i])) i++;
            } else if (csign != '+') {
                if (i < p->len && p->src[i] == '\n') i++;
            }
            line_starting = i > 0 && p->src[i - 1] == '\n';
            continue;
        }
        push_tok(p, kind == '%' ? T_BLOCK_BEGIN : T_VAR_BEGIN, j);
        i = lex_tag(p, j + 2 + (sign ? 1 : 0), kind == '%', &line_starting);
    }
    push_tok(p, T_EOF, p->len);
}

/* ---- parser ----------------------------------------------------------------------------- */

static tok *cur(parser *p)
{
    return &p->toks[p->pos];
}
static tok *peek(parser *p, size_t k)
{
    size_t i = p->pos + k < p->n ? p->pos + k : p->n - 1;
    return &p->toks[i];
}
static void adv(parser *p)
{
    if (p->pos + 1 < p->n) p->pos++;
}

static const char *tok_desc(const tok *t, char *buf, size_t cap)
{
    switch (t->type) {
    case T_DATA:
        return "template data";
    case T_VAR_BEGIN:
        return "'{{'";
    case T_VAR_END:
        return "'}}'";
    case T_BLOCK_BEGIN:
        return "'{%'";
    case T_BLOCK_END:
        return "'%}'";
    case T_NAME:
        snprintf(buf, cap, "'%.40s'", t->s->s);
        return buf;
    case T_STRING:
        return "a string";
    case T_INT:
        return "an integer";
    case T_FLOAT:
        return "a float";
    case T_OP:
        snprintf(buf, cap, "'%s'", t->op);
        return buf;
    default:
        return "end of template";
    }
}

_Noreturn static void syntax(parser *p, const tok *t, const char *fmt, ...) PL_PRINTF(3, 4);
_Noreturn static void syntax(parser *p, const tok *t, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jfail_at(p->f, PL_ERR_FORMAT, t->line, t->col, "%s", msg);
}

static int is_op(const tok *t, const char *op)
{
    return t->type == T_OP && strcmp(t->op, op) == 0;
}
static int is_name(const tok *t, const char *name)
{
    return t->type == T_NAME && strcmp(t->s->s, name) == 0;
}

static void expect_op(parser *p, const char *op)
{
    char b[64];
    if (!is_op(cur(p), op)) syntax(p, cur(p), "expected '%s', got %s", op, tok_desc(cur(p), b, 64));
    adv(p);
}
static void expect_type(parser *p, tok_type type, const char *what)
{
    char b[64];
    if (cur(p)->type != type)
        syntax(p, cur(p), "expected %s, got %s", what, tok_desc(cur(p), b, 64));
    adv(p);
}
static const jstr *expect_name(parser *p)
{
    char b[64];
    if (cur(p)->type != T_NAME)
        syntax(p, cur(p), "expected a name, got %s", tok_desc(cur(p), b, 64));
    const jstr *s = cur(p)->s;
    adv(p);
    return s;
}

static jnode *node(parser *p, jnode_kind kind, const tok *at)
{
    jnode *n = ja_alloc(p->a, p->f, sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->line = at->line, n->col = at->col;
    return n;
}

typedef struct nvec {
    jnode **v;
    const jstr **names;
    jnode **defs;
    size_t n, cap;
} nvec;

static void nvec_push(parser *p, nvec *v, jnode *n, const jstr *name, jnode *def)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        jnode **nv = ja_alloc(p->a, p->f, cap * sizeof *nv);
        const jstr **nn = ja_alloc(p->a, p->f, cap * sizeof *nn);
        jnode **nd = ja_alloc(p->a, p->f, cap * sizeof *nd);
        if (v->n) {
            memcpy(nv, v->v, v->n * sizeof *nv);
            memcpy(nn, v->names, v->n * sizeof *nn);
            memcpy(nd, v->defs, v->n * sizeof *nd);
        }
        v->v = nv, v->names = nn, v->defs = nd, v->cap = cap;
    }
    v->v[v->n] = n, v->names[v->n] = name, v->defs[v->n] = def;
    v->n++;
}

static void enter(parser *p)
{
    if (++p->depth > MAX_PARSE_DEPTH)
        jfail_at(p->f, PL_ERR_LIMIT, cur(p)->line, cur(p)->col, "nesting deeper than %d levels",
                 MAX_PARSE_DEPTH);
}

static jnode *parse_expression(parser *p, int with_condexpr);
static jnode *parse_tuple(parser *p, int with_condexpr, int explicit_parens);
static jnode *parse_unary(parser *p, int with_filter);
static jnode *parse_primary(parser *p);
static jnode *parse_postfix(parser *p, jnode *n);

/* (args) after a callable: positional and name=value arguments */
static void parse_call_args(parser *p, jnode *call)
{
    nvec v = {0};
    expect_op(p, "(");
    while (!is_op(cur(p), ")")) {
        if (v.n) expect_op(p, ",");
        if (is_op(cur(p), ")")) break;
        if (cur(p)->type == T_NAME && is_op(peek(p, 1), "=")) {
            const jstr *k = cur(p)->s;
            adv(p), adv(p);
            nvec_push(p, &v, parse_expression(p, 1), k, NULL);
        } else {
            if (v.n && v.names[v.n - 1])
                syntax(p, cur(p), "a positional argument follows a keyword argument");
            nvec_push(p, &v, parse_expression(p, 1), NULL, NULL);
        }
    }
    adv(p);
    call->kids = v.v, call->n = v.n, call->names = v.names, call->n_names = v.n;
}

static jnode *parse_filter(parser *p, jnode *operand)
{
    tok *at = cur(p);
    jnode *f = node(p, JN_FILTER, at);
    f->name = expect_name(p);
    f->a = operand;
    if (is_op(cur(p), "(")) parse_call_args(p, f);
    return f;
}

static jnode *parse_filter_expr(parser *p, jnode *n)
{
    for (;;) {
        tok *t = cur(p);
        if (is_op(t, "|")) {
            adv(p);
            n = parse_filter(p, n);
        } else if (is_name(t, "is")) {
            adv(p);
            jnode *tn = node(p, JN_TEST, t);
            if (is_name(cur(p), "not")) adv(p), tn->op = 1;
            tn->name = expect_name(p);
            tn->a = n;
            tok *c = cur(p);
            if (is_op(c, "(")) {
                parse_call_args(p, tn);
            } else if ((c->type == T_NAME || c->type == T_STRING || c->type == T_INT ||
                        c->type == T_FLOAT || is_op(c, "[") || is_op(c, "{")) &&
                       !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
                /* one argument without parentheses: `is sameas false`, `is equalto 'x'` */
                if (is_name(c, "is")) syntax(p, c, "you cannot chain multiple tests with is");
                jnode *arg = parse_postfix(p, parse_primary(p));
                tn->kids = ja_alloc(p->a, p->f, sizeof *tn->kids);
                tn->kids[0] = arg, tn->n = 1;
                tn->names = ja_alloc(p->a, p->f, sizeof *tn->names);
                tn->names[0] = NULL, tn->n_names = 1;
            }
            n = tn;
        } else if (is_op(t, "(")) {
            jnode *c = node(p, JN_CALL, t);
            c->a = n;
            c->line = n->line, c->col = n->col;
            parse_call_args(p, c);
            n = c;
        } else {
            return n;
        }
    }
}

static jnode *parse_subscript(parser *p, jnode *obj, tok *at)
{
    /* after '[': an index or a slice */
    jnode *parts[3] = {0};
    int k = 0, is_slice = 0;
    for (;;) {
        if (is_op(cur(p), ":")) {
            is_slice = 1;
            if (++k > 2) syntax(p, cur(p), "too many ':' in a slice");
            adv(p);
            continue;
        }
        if (is_op(cur(p), "]")) break;
        if (parts[k]) syntax(p, cur(p), "expected ']' or ':'");
        parts[k] = parse_expression(p, 1);
    }
    adv(p);
    jnode *n;
    if (is_slice) {
        n = node(p, JN_SLICE, at);
        n->a = obj, n->b = parts[0], n->c = parts[1];
        n->kids = ja_alloc(p->a, p->f, sizeof *n->kids);
        n->kids[0] = parts[2], n->n = 1;
    } else {
        if (!parts[0]) syntax(p, at, "expected an index inside '[]'");
        n = node(p, JN_ITEM, at);
        n->a = obj, n->b = parts[0];
    }
    return n;
}

static jnode *parse_postfix(parser *p, jnode *n)
{
    for (;;) {
        tok *t = cur(p);
        if (is_op(t, ".")) {
            adv(p);
            tok *a = cur(p);
            if (a->type == T_NAME) {
                jnode *g = node(p, JN_ATTR, t);
                g->a = n, g->name = a->s;
                adv(p);
                n = g;
            } else if (a->type == T_INT) {
                jnode *g = node(p, JN_ITEM, t);
                g->a = n;
                g->b = node(p, JN_CONST, a);
                g->b->val = jv_int(a->i);
                adv(p);
                n = g;
            } else {
                syntax(p, a, "expected a name after '.'");
            }
        } else if (is_op(t, "[")) {
            adv(p);
            n = parse_subscript(p, n, t);
        } else if (is_op(t, "(")) {
            jnode *c = node(p, JN_CALL, t);
            c->a = n;
            c->line = n->line, c->col = n->col;
            parse_call_args(p, c);
            n = c;
        } else {
            return n;
        }
    }
}

static jnode *parse_primary(parser *p)
{
    tok *t = cur(p);
    char b[64];
    jnode *n;
    switch (t->type) {
    case T_NAME: {
        const char *s = t->s->s;
        n = node(p, JN_CONST, t);
        if (!strcmp(s, "true") || !strcmp(s, "True"))
            n->val = jv_bool(1);
        else if (!strcmp(s, "false") || !strcmp(s, "False"))
            n->val = jv_bool(0);
        else if (!strcmp(s, "none") || !strcmp(s, "None"))
            n->val = jv_none();
        else
            n->kind = JN_NAME, n->name = t->s;
        adv(p);
        break;
    }
    case T_STRING: {
        /* adjacent literals concatenate */
        n = node(p, JN_CONST, t);
        const jstr *s = t->s;
        adv(p);
        while (cur(p)->type == T_STRING) {
            const jstr *s2 = cur(p)->s;
            char *buf = ja_alloc(p->a, p->f, s->len + s2->len + 1);
            memcpy(buf, s->s, s->len);
            memcpy(buf + s->len, s2->s, s2->len);
            s = jstr_new(p->a, p->f, buf, s->len + s2->len);
            adv(p);
        }
        n->val = jv_str(s);
        break;
    }
    case T_INT:
        n = node(p, JN_CONST, t);
        n->val = jv_int(t->i);
        adv(p);
        break;
    case T_FLOAT:
        n = node(p, JN_CONST, t);
        n->val.t = JV_FLOAT, n->val.u.f = t->f;
        adv(p);
        break;
    case T_OP:
        if (is_op(t, "(")) {
            adv(p);
            n = parse_tuple(p, 1, 1);
            expect_op(p, ")");
            break;
        }
        if (is_op(t, "[")) {
            adv(p);
            nvec v = {0};
            while (!is_op(cur(p), "]")) {
                if (v.n) expect_op(p, ",");
                if (is_op(cur(p), "]")) break;
                nvec_push(p, &v, parse_expression(p, 1), NULL, NULL);
            }
            adv(p);
            n = node(p, JN_LIST, t);
            n->kids = v.v, n->n = v.n;
            break;
        }
        if (is_op(t, "{")) {
            adv(p);
            nvec v = {0};
            while (!is_op(cur(p), "}")) {
                if (v.n) expect_op(p, ",");
                if (is_op(cur(p), "}")) break;
                nvec_push(p, &v, parse_expression(p, 1), NULL, NULL);
                expect_op(p, ":");
                nvec_push(p, &v, parse_expression(p, 1), NULL, NULL);
            }
            adv(p);
            n = node(p, JN_DICT, t);
            n->kids = v.v, n->n = v.n;
            break;
        }
        /* fallthrough */
    default:
        syntax(p, t, "unexpected %s", tok_desc(t, b, sizeof b));
    }
    p->depth--;
    return n;
}

static jnode *parse_unary(parser *p, int with_filter)
{
    tok *t = cur(p);
    jnode *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        enter(p);
        adv(p);
        n = node(p, t->op[0] == '-' ? JN_NEG : JN_POS, t);
        n->a = parse_unary(p, 0);
        p->depth--;
    } else {
        n = parse_primary(p);
    }
    n = parse_postfix(p, n);
    if (with_filter) n = parse_filter_expr(p, n);
    return n;
}

static jnode *binop(parser *p, const tok *at, jop op, jnode *a, jnode *b)
{
    jnode *n = node(p, JN_BINOP, at);
    n->op = (uint8_t)op, n->a = a, n->b = b;
    return n;
}

static jnode *parse_pow(parser *p)
{
    jnode *n = parse_unary(p, 1);
    while (is_op(cur(p), "**")) {
        tok *t = cur(p);
        adv(p);
        n = binop(p, t, JOP_POW, n, parse_unary(p, 1));
    }
    return n;
}

typedef struct op_text {
    const char *text;
    jop op;
} op_text;

/* the operator of table (n entries) that t is; 0 when none */
static int match_op(const tok *t, const op_text *table, size_t n, jop *op)
{
    for (size_t i = 0; i < n; i++)
        if (is_op(t, table[i].text)) {
            *op = table[i].op;
            return 1;
        }
    return 0;
}

static jnode *parse_math2(parser *p)
{
    static const op_text ops[] = {
        {"*", JOP_MUL}, {"/", JOP_DIV}, {"//", JOP_FLOORDIV}, {"%", JOP_MOD}};
    jnode *n = parse_pow(p);
    for (;;) {
        tok *t = cur(p);
        jop op;
        if (!match_op(t, ops, sizeof ops / sizeof *ops, &op)) return n;
        adv(p);
        n = binop(p, t, op, n, parse_pow(p));
    }
}

static jnode *parse_concat(parser *p)
{
    tok *t = cur(p);
    jnode *first = parse_math2(p);
    if (!is_op(cur(p), "~")) return first;
    nvec v = {0};
    nvec_push(p, &v, first, NULL, NULL);
    while (is_op(cur(p), "~")) {
        adv(p);
        nvec_push(p, &v, parse_math2(p), NULL, NULL);
    }
    jnode *n = node(p, JN_CONCAT, t);
    n->kids = v.v, n->n = v.n;
    return n;
}

static jnode *parse_math1(parser *p)
{
    jnode *n = parse_concat(p);
    for (;;) {
        tok *t = cur(p);
        if (!is_op(t, "+") && !is_op(t, "-")) return n;
        adv(p);
        n = binop(p, t, t->op[0] == '+' ? JOP_ADD : JOP_SUB, n, parse_concat(p));
    }
}

static jnode *parse_compare(parser *p)
{
    static const op_text ops[] = {{"==", JOP_EQ}, {"!=", JOP_NE}, {"<", JOP_LT},
                                  {"<=", JOP_LE}, {">", JOP_GT},  {">=", JOP_GE}};
    jnode *left = parse_math1(p), *result = NULL;
    for (;;) {
        tok *t = cur(p);
        jop op;
        if (match_op(t, ops, sizeof ops / sizeof *ops, &op))
            ;
        else if (is_name(t, "in"))
            op = JOP_IN;
        else if (is_name(t, "not") && is_name(peek(p, 1), "in"))
            op = JOP_NOTIN, adv(p);
        else
            return result ? result : left;
        adv(p);
        jnode *right = parse_math1(p);
        jnode *c = node(p, JN_COMPARE, t);
        c->op = (uint8_t)op, c->a = left, c->b = right;
        /* a < b < c is (a < b) and (b < c), as Python chains */
        if (result) {
            jnode *both = node(p, JN_AND, t);
            both->a = result, both->b = c;
            result = both;
        } else {
            result = c;
        }
        left = right;
    }
}

static jnode *parse_not(parser *p)
{
    tok *t = cur(p);
    if (is_name(t, "not")) {
        enter(p);
        adv(p);
        jnode *n = node(p, JN_NOT, t);
        n->a = parse_not(p);
        p->depth--;
        return n;
    }
    return parse_compare(p);
}

/* `a and b` (is_or 0) over not-expressions, `a or b` (is_or 1) over and-expressions */
static jnode *parse_logic(parser *p, int is_or)
{
    jnode *n = is_or ? parse_logic(p, 0) : parse_not(p);
    while (is_name(cur(p), is_or ? "or" : "and")) {
        tok *t = cur(p);
        adv(p);
        jnode *x = node(p, is_or ? JN_OR : JN_AND, t);
        x->a = n, x->b = is_or ? parse_logic(p, 0) : parse_not(p);
        n = x;
    }
    return n;
}

static jnode *parse_expression(parser *p, int with_condexpr)
{
    enter(p);
    jnode *n = parse_logic(p, 1);
    while (with_condexpr && is_name(cur(p), "if")) {
        tok *t = cur(p);
        adv(p);
        jnode *c = node(p, JN_COND, t);
        c->a = n;
        c->b = parse_logic(p, 1);
        if (is_name(cur(p), "else")) {
            adv(p);
            c->c = parse_expression(p, 1);
        }
        n = c;
    }
    p->depth--;
    return n;
}

static int tuple_end(parser *p)
{
    tok *t = cur(p);
    return t->type == T_VAR_END || t->type == T_BLOCK_END || t->type == T_EOF || is_op(t, ")") ||
           is_name(t, "recursive") || is_name(t, "if") || is_name(t, "in") || is_op(t, "=");
}

static jnode *parse_tuple(parser *p, int with_condexpr, int explicit_parens)
{
    tok *t = cur(p);
    nvec v = {0};
    int comma = 0;
    for (;;) {
        if (v.n) {
            if (!is_op(cur(p), ",")) break;
            adv(p);
            comma = 1;
        }
        if (tuple_end(p) && (v.n || explicit_parens)) break;
        nvec_push(p, &v, parse_expression(p, with_condexpr), NULL, NULL);
    }
    if (!comma && v.n == 1) return v.v[0];
    if (!explicit_parens && v.n == 0) syntax(p, t, "expected an expression");
    jnode *n = node(p, JN_TUPLE, t);
    n->kids = v.v, n->n = v.n;
    return n;
}

/* A for/set target: a name, a tuple of names, or (set) ns.attr */
static jnode *parse_target(parser *p, int with_namespace)
{
    tok *t = cur(p);
    if (with_namespace && t->type == T_NAME && is_op(peek(p, 1), ".")) {
        jnode *n = node(p, JN_ATTR, t);
        n->a = node(p, JN_NAME, t);
        n->a->name = t->s;
        adv(p), adv(p);
        n->name = expect_name(p);
        return n;
    }
    nvec v = {0};
    int comma = 0, paren = 0;
    if (is_op(t, "(")) paren = 1, adv(p);
    for (;;) {
        tok *nt = cur(p);
        jnode *n = node(p, JN_NAME, nt);
        n->name = expect_name(p);
        nvec_push(p, &v, n, NULL, NULL);
        if (!is_op(cur(p), ",")) break;
        adv(p);
        comma = 1;
        if (paren && is_op(cur(p), ")")) break;
    }
    if (paren) expect_op(p, ")");
    if (!comma && !paren && v.n == 1) return v.v[0];
    jnode *n = node(p, JN_TUPLE, t);
    n->kids = v.v, n->n = v.n;
    return n;
}

static jnode *parse_body(parser *p, const char *const *ends, const jstr **which);

static void end_block(parser *p)
{
    expect_type(p, T_BLOCK_END, "'%}'");
}

/* the body up to one of ends; *which gets the end tag's name and its tag is consumed up to
 * the name (the caller closes it) */
static jnode *body_until(parser *p, const char *const *ends, const jstr **which, const tok *start,
                         const char *stmt)
{
    jnode *b = parse_body(p, ends, which);
    if (!*which)
        syntax(p, start, "'%s' is never closed (expected '%s' before the end of the template)",
               stmt, ends[0]);
    return b;
}

/* '%}', the body up to {% end %}, and that tag's '%}': the blocks with one end and no else */
static jnode *block_body(parser *p, const char *end, const tok *start, const char *stmt)
{
    const char *const ends[] = {end, NULL};
    const jstr *which;
    end_block(p);
    jnode *b = body_until(p, ends, &which, start, stmt);
    end_block(p);
    return b;
}

static void parse_params(parser *p, jnode *n)
{
    nvec v = {0};
    expect_op(p, "(");
    while (!is_op(cur(p), ")")) {
        if (v.n) expect_op(p, ",");
        if (is_op(cur(p), ")")) break;
        const jstr *name = expect_name(p);
        jnode *def = NULL;
        if (is_op(cur(p), "=")) {
            adv(p);
            def = parse_expression(p, 1);
        } else if (v.n && v.defs[v.n - 1]) {
            syntax(p, cur(p), "a parameter without a default follows one with a default");
        }
        nvec_push(p, &v, NULL, name, def);
    }
    adv(p);
    n->names = v.names, n->defs = v.defs, n->n_names = v.n;
}

static jnode *parse_statement(parser *p)
{
    tok *begin = cur(p); /* the '{%' */
    adv(p);
    tok *t = cur(p);
    char b[64];
    if (t->type != T_NAME) syntax(p, t, "expected a tag name, got %s", tok_desc(t, b, sizeof b));
    const char *kw = t->s->s;
    const jstr *which = NULL;
    enter(p);
    jnode *n;
    adv(p);
    if (!strcmp(kw, "if")) {
        n = node(p, JS_IF, t);
        n->a = parse_tuple(p, 0, 0);
        end_block(p);
        static const char *const ends[] = {"endif", "elif", "else", NULL};
        jnode *cur_if = n;
        for (;;) {
            cur_if->b = body_until(p, ends, &which, t, "if");
            if (!strcmp(which->s, "elif")) {
                jnode *e = node(p, JS_IF, cur(p));
                e->a = parse_tuple(p, 0, 0);
                end_block(p);
                cur_if->c = e;
                cur_if = e;
                continue;
            }
            if (!strcmp(which->s, "else")) {
                end_block(p);
                static const char *const ends2[] = {"endif", NULL};
                cur_if->c = body_until(p, ends2, &which, t, "if");
            }
            end_block(p);
            break;
        }
    } else if (!strcmp(kw, "for")) {
        n = node(p, JS_FOR, t);
        n->a = parse_target(p, 0);
        if (!is_name(cur(p), "in")) syntax(p, cur(p), "expected 'in' in a for loop");
        adv(p);
        n->b = parse_tuple(p, 0, 0);
        if (is_name(cur(p), "if")) {
            adv(p);
            n->c = parse_expression(p, 1);
        }
        if (is_name(cur(p), "recursive"))
            syntax(p, cur(p), "recursive for loops are not supported");
        end_block(p);
        n->kids = ja_alloc(p->a, p->f, 2 * sizeof *n->kids);
        n->n = 2;
        static const char *const ends[] = {"endfor", "else", NULL};
        n->kids[0] = body_until(p, ends, &which, t, "for");
        n->kids[1] = NULL;
        if (!strcmp(which->s, "else")) {
            end_block(p);
            static const char *const ends2[] = {"endfor", NULL};
            n->kids[1] = body_until(p, ends2, &which, t, "for");
        }
        end_block(p);
    } else if (!strcmp(kw, "set")) {
        jnode *target = parse_target(p, 1);
        if (is_op(cur(p), "=")) {
            adv(p);
            n = node(p, JS_SET, t);
            n->a = target;
            n->b = parse_tuple(p, 1, 0);
            end_block(p);
        } else {
            n = node(p, JS_SETBLOCK, t);
            n->a = target;
            if (target->kind == JN_TUPLE) syntax(p, t, "a block set assigns one name");
            while (is_op(cur(p), "|")) {
                adv(p);
                n->c = parse_filter(p, n->c);
            }
            n->b = block_body(p, "endset", t, "set");
        }
    } else if (!strcmp(kw, "macro")) {
        n = node(p, JS_MACRO, t);
        n->name = expect_name(p);
        parse_params(p, n);
        end_block(p);
        static const char *const ends[] = {"endmacro", NULL};
        n->a = body_until(p, ends, &which, t, "macro");
        if (cur(p)->type == T_NAME) adv(p); /* {% endmacro name %} */
        end_block(p);
    } else if (!strcmp(kw, "call")) {
        n = node(p, JS_CALLBLOCK, t);
        if (is_op(cur(p), "(")) parse_params(p, n);
        n->a = parse_expression(p, 1);
        if (n->a->kind != JN_CALL) syntax(p, t, "expected a call after 'call'");
        n->b = block_body(p, "endcall", t, "call");
    } else if (!strcmp(kw, "filter")) {
        n = node(p, JS_FILTERBLOCK, t);
        n->a = parse_filter(p, NULL);
        while (is_op(cur(p), "|")) {
            adv(p);
            n->a = parse_filter(p, n->a);
        }
        n->b = block_body(p, "endfilter", t, "filter");
    } else if (!strcmp(kw, "generation")) {
        /* transformers' AssistantTracker: the body renders as is */
        n = block_body(p, "endgeneration", t, "generation");
    } else if (!strcmp(kw, "break") || !strcmp(kw, "continue")) {
        n = node(p, kw[0] == 'b' ? JS_BREAK : JS_CONTINUE, t);
        end_block(p);
    } else {
        syntax(p, t, "unknown tag '%.40s'", kw);
    }
    (void)begin;
    p->depth--;
    return n;
}

static jnode *parse_body(parser *p, const char *const *ends, const jstr **which)
{
    tok *start = cur(p);
    nvec v = {0};
    *which = NULL;
    enter(p);
    for (;;) {
        tok *t = cur(p);
        if (t->type == T_EOF) break;
        if (t->type == T_DATA) {
            jnode *n = node(p, JS_TEXT, t);
            n->name = t->s;
            nvec_push(p, &v, n, NULL, NULL);
            adv(p);
        } else if (t->type == T_VAR_BEGIN) {
            adv(p);
            jnode *n = node(p, JS_OUTPUT, cur(p));
            n->a = parse_tuple(p, 1, 0);
            expect_type(p, T_VAR_END, "'}}'");
            nvec_push(p, &v, n, NULL, NULL);
        } else if (t->type == T_BLOCK_BEGIN) {
            tok *name = peek(p, 1);
            int is_end = 0;
            for (size_t k = 0; ends && ends[k]; k++)
                if (name->type == T_NAME && !strcmp(name->s->s, ends[k])) is_end = 1;
            if (is_end) {
                *which = name->s;
                adv(p), adv(p);
                break;
            }
            if (name->type == T_NAME &&
                (!strncmp(name->s->s, "end", 3) || !strcmp(name->s->s, "elif") ||
                 !strcmp(name->s->s, "else")))
                syntax(p, name, "unexpected '%.40s'%s", name->s->s,
                       ends ? "" : " (no block is open)");
            nvec_push(p, &v, parse_statement(p), NULL, NULL);
        } else {
            char b[64];
            syntax(p, t, "unexpected %s", tok_desc(t, b, sizeof b));
        }
    }
    p->depth--;
    jnode *body = node(p, JS_BODY, start);
    body->kids = v.v, body->n = v.n;
    return body;
}

/* break/continue only inside a loop (jinja2 rejects them at compile time) */
static const jnode *find_bad_loop_control(const jnode *n, int in_loop)
{
    if (!n) return NULL;
    if ((n->kind == JS_BREAK || n->kind == JS_CONTINUE) && !in_loop) return n;
    if (n->kind == JS_FOR) {
        const jnode *b = find_bad_loop_control(n->kids[0], 1);
        return b ? b : find_bad_loop_control(n->kids[1], in_loop);
    }
    if (n->kind == JS_BODY) {
        for (size_t i = 0; i < n->n; i++) {
            const jnode *b = find_bad_loop_control(n->kids[i], in_loop);
            if (b) return b;
        }
        return NULL;
    }
    if (n->kind == JS_MACRO) return find_bad_loop_control(n->a, 0);
    if (n->kind == JS_CALLBLOCK) return find_bad_loop_control(n->b, 0);
    if (n->kind == JS_IF) {
        const jnode *b = find_bad_loop_control(n->b, in_loop);
        return b ? b : find_bad_loop_control(n->c, in_loop);
    }
    if (n->kind == JS_SETBLOCK || n->kind == JS_FILTERBLOCK)
        return find_bad_loop_control(n->b, in_loop);
    return NULL;
}

jnode *jparse(jarena *a, jfail *f, const char *src, size_t len)
{
    parser p = {.a = a, .f = f};
    /* jinja2 reads str: bad UTF-8 never reaches it */
    size_t bad = jutf8_valid_prefix(src, len);
    if (bad != len) {
        p.src = src, p.len = len;
        lex_fail(&p, bad, PL_ERR_FORMAT, "the template is not valid UTF-8");
    }
    /* \r\n and \r become \n; one trailing newline is dropped (keep_trailing_newline=False) */
    char *s = ja_alloc(a, f, len + 1);
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[k++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            s[k++] = src[i];
        }
    }
    if (k && s[k - 1] == '\n') k--;
    s[k] = 0;
    p.src = s, p.len = k;
    lex(&p);
    const jstr *which;
    jnode *root = parse_body(&p, NULL, &which);
    const jnode *badc = find_bad_loop_control(root, 0);
    if (badc)
        jfail_at(f, PL_ERR_FORMAT, badc->line, badc->col, "'%s' outside of a loop",
                 badc->kind == JS_BREAK ? "break" : "continue");
    return root;
}
