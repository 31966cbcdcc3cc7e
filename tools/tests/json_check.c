/* json_check.c — a strict RFC 8259 validator for the CLI tests: reads one JSON text from
 * stdin, exits 0 if it is valid (UTF-8 included), else 1 with the offset. Not a parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256

typedef struct json_in {
    const unsigned char *s;
    size_t n, i;
    const char *why;
} json_in;

static int bad(json_in *in, const char *why)
{
    if (!in->why) in->why = why;
    return 0;
}

static void skip_ws(json_in *in)
{
    while (in->i < in->n) {
        unsigned char c = in->s[in->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        in->i++;
    }
}

static int peek(const json_in *in)
{
    return in->i < in->n ? in->s[in->i] : -1;
}

static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Length of a valid UTF-8 sequence (2..4 bytes) at s, or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    return len;
}

static int string(json_in *in)
{
    in->i++; /* opening quote */
    while (in->i < in->n) {
        unsigned char c = in->s[in->i];
        if (c == '"') {
            in->i++;
            return 1;
        }
        if (c < 0x20) return bad(in, "raw control character in string");
        if (c == '\\') {
            if (in->i + 1 >= in->n) break;
            unsigned char e = in->s[in->i + 1];
            if (e == 'u') {
                if (in->i + 6 > in->n) break;
                for (size_t k = 2; k < 6; k++)
                    if (!is_hex(in->s[in->i + k])) return bad(in, "bad \\u escape");
                in->i += 6;
                continue;
            }
            if (!strchr("\"\\/bfnrt", e) || e == '\0') return bad(in, "bad escape");
            in->i += 2;
            continue;
        }
        if (c >= 0x80) {
            size_t l = utf8_len(in->s + in->i, in->n - in->i);
            if (!l) return bad(in, "invalid UTF-8 in string");
            in->i += l;
            continue;
        }
        in->i++;
    }
    return bad(in, "unterminated string");
}

static int number(json_in *in)
{
    if (peek(in) == '-') in->i++;
    if (peek(in) == '0') {
        in->i++;
    } else if (is_digit(peek(in))) {
        while (is_digit(peek(in))) in->i++;
    } else {
        return bad(in, "bad number");
    }
    if (peek(in) == '.') {
        in->i++;
        if (!is_digit(peek(in))) return bad(in, "bad fraction");
        while (is_digit(peek(in))) in->i++;
    }
    if (peek(in) == 'e' || peek(in) == 'E') {
        in->i++;
        if (peek(in) == '+' || peek(in) == '-') in->i++;
        if (!is_digit(peek(in))) return bad(in, "bad exponent");
        while (is_digit(peek(in))) in->i++;
    }
    return 1;
}

static int literal(json_in *in, const char *word)
{
    size_t l = strlen(word);
    if (in->n - in->i < l || memcmp(in->s + in->i, word, l) != 0) return bad(in, "bad literal");
    in->i += l;
    return 1;
}

static int value(json_in *in, int depth);

static int container(json_in *in, int depth, int is_object)
{
    const int close = is_object ? '}' : ']';
    if (depth > MAX_DEPTH) return bad(in, "nested too deep");
    in->i++;
    skip_ws(in);
    if (peek(in) == close) {
        in->i++;
        return 1;
    }
    for (;;) {
        skip_ws(in);
        if (is_object) {
            if (peek(in) != '"') return bad(in, "expected a key");
            if (!string(in)) return 0;
            skip_ws(in);
            if (peek(in) != ':') return bad(in, "expected ':'");
            in->i++;
        }
        if (!value(in, depth + 1)) return 0;
        skip_ws(in);
        if (peek(in) == ',') {
            in->i++;
            continue;
        }
        if (peek(in) == close) {
            in->i++;
            return 1;
        }
        return bad(in, is_object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int value(json_in *in, int depth)
{
    skip_ws(in);
    switch (peek(in)) {
    case '{':
        return container(in, depth, 1);
    case '[':
        return container(in, depth, 0);
    case '"':
        return string(in);
    case 't':
        return literal(in, "true");
    case 'f':
        return literal(in, "false");
    case 'n':
        return literal(in, "null");
    case -1:
        return bad(in, "unexpected end of input");
    default:
        return number(in);
    }
}

int main(void)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return 2;
    for (size_t got; (got = fread(buf + n, 1, cap - n, stdin)) > 0;) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb) return 2;
            buf = nb;
        }
    }
    json_in in = {buf, n, 0, NULL};
    int ok = value(&in, 0);
    if (ok) {
        skip_ws(&in);
        if (in.i != n) ok = bad(&in, "trailing characters after the value");
    }
    if (!ok) fprintf(stderr, "json_check: invalid JSON at byte %zu: %s\n", in.i, in.why);
    free(buf);
    return ok ? 0 : 1;
}
