/* text.c — the helpers plumb.h shares with its clients: the monotonic clock, UTF-8 character
 * lengths, JSON string escaping and JSON kind names. Not a JSON library: jansson is that. */
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "core.h"

uint64_t pl_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double pl_clock_s(void)
{
    return 1e-9 * (double)pl_clock_ns();
}

size_t pl_utf8_lead(unsigned c, unsigned *lo, unsigned *hi)
{
    *lo = 0x80; /* the allowed range of the second byte */
    *hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return 2;
    if (c >= 0xE0 && c <= 0xEF) {
        if (c == 0xE0)
            *lo = 0xA0; /* no overlongs */
        else if (c == 0xED)
            *hi = 0x9F; /* no surrogates */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (c == 0xF0)
            *lo = 0x90;
        else if (c == 0xF4)
            *hi = 0x8F; /* nothing above U+10FFFF */
        return 4;
    }
    return 0;
}

size_t pl_utf8_char(const unsigned char *p, size_t n)
{
    if (n == 0) return 0;
    unsigned lo, hi;
    const size_t len = pl_utf8_lead(p[0], &lo, &hi);
    if (len <= 1) return len;
    if (n < len) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return len;
}

/* Appends len bytes to buf[0..cap) at *at, keeping room for the NUL; counts them all. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t len)
{
    if (*at < cap) {
        const size_t room = cap - 1 - *at;
        memcpy(buf + *at, s, len < room ? len : room);
    }
    *at += len;
}

size_t pl_json_escape(char *buf, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t at = 0;
    for (size_t i = 0; i < n;) {
        const unsigned c = u[i];
        if (c >= 0x80) {
            const size_t len = pl_utf8_char(u + i, n - i);
            if (len == 0) {
                put(buf, cap, &at, "\\ufffd", 6);
                i++;
            } else {
                put(buf, cap, &at, s + i, len);
                i += len;
            }
            continue;
        }
        const char *e = NULL;
        switch (c) {
        case '"':
            e = "\\\"";
            break;
        case '\\':
            e = "\\\\";
            break;
        case '\b':
            e = "\\b";
            break;
        case '\f':
            e = "\\f";
            break;
        case '\n':
            e = "\\n";
            break;
        case '\r':
            e = "\\r";
            break;
        case '\t':
            e = "\\t";
            break;
        default:
            break;
        }
        if (e) {
            put(buf, cap, &at, e, 2);
        } else if (c < 0x20 || c == 0x7F) {
            const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(buf, cap, &at, esc, 6);
        } else {
            put(buf, cap, &at, s + i, 1);
        }
        i++;
    }
    if (cap > 0) buf[at < cap ? at : cap - 1] = '\0';
    return at;
}

const char *pl_json_kind(const struct json_t *v)
{
    if (!v) return "a JSON value";
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "a JSON value";
}
