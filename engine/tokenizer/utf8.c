/* utf8.c — strict UTF-8 prefixes and decoding, shared by the encoder, the pre-tokenizers, the
 * streaming decoder and the chat templates. Not a normalizer: bytes are checked, never changed.
 * The character length itself is pl_utf8_char (core/text.c, plumb.h). */
#include "utf8.h"

#include "core/core.h"

int pl_utf8_incomplete(const unsigned char *p, size_t n)
{
    if (n == 0) return 0;
    unsigned lo, hi;
    const size_t len = pl_utf8_lead(p[0], &lo, &hi);
    if (len <= 1 || n >= len) return 0;
    if (n >= 2 && (p[1] < lo || p[1] > hi)) return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return 1;
}

uint32_t pl_utf8_cp(const unsigned char *p, size_t len)
{
    switch (len) {
    case 1:
        return p[0];
    case 2:
        return ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3:
        return ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    default:
        return ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
               ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    }
}
