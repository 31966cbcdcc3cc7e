/* spm_model.c — tokenizer.model (SentencePiece's ModelProto, protobuf wire format) read in C:
 * a tiny wire reader (varints, fixed32/64, length-delimited), the few fields plumb needs, and
 * the check of what plumb's encoder computes exactly (spm_model.h). Every length is checked
 * against the end of its own message before it is used; nothing is read past data + size. */
#include "spm_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plumb.h"
#include "tokenizer/tokenizer.h"

#define FILE_NAME "tokenizer.model"

/* Protobuf wire types. */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

/* A message being read: [p, end) within the file that starts at base. */
typedef struct rd {
    const uint8_t *p, *end, *base;
} rd;

typedef struct field {
    uint32_t num;        /* field number */
    int wt;              /* wire type */
    uint64_t v;          /* WT_VARINT, WT_I64, WT_I32: the value */
    const uint8_t *data; /* WT_LEN: the bytes */
    uint64_t len;
    size_t at; /* offset of the tag in the file */
} field;

static size_t off(const rd *r, const uint8_t *p)
{
    return (size_t)(p - r->base);
}

/* A varint of at most 10 bytes whose 10th byte holds only bit 63. */
static pl_status get_varint(rd *r, uint64_t *out, const char *what, pl_error *err)
{
    const uint8_t *start = r->p;
    uint64_t v = 0;
    for (int i = 0;; i++) {
        if (r->p >= r->end)
            return pl_fail(err, PL_ERR_FORMAT, FILE_NAME ": %s (a varint at byte %zu) is cut short",
                           what, off(r, start));
        const uint8_t b = *r->p++;
        if (i == 9 && b > 1) /* more bytes, or bits past 63 */
            return pl_fail(err, PL_ERR_FORMAT,
                           FILE_NAME ": %s (a varint at byte %zu) is over 64 bits", what,
                           off(r, start));
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return PL_OK;
        }
    }
}

/* The next field of the message: tag, then its value (a length-delimited value must lie inside
 * the message). Wire types 3 and 4 (groups, deprecated) and 6, 7 (none) are refused. */
static pl_status next_field(rd *r, field *f, const char *msg, pl_error *err)
{
    uint64_t tag;
    f->at = off(r, r->p);
    pl_status s = get_varint(r, &tag, "a field tag", err);
    if (s) return s;
    f->num = (uint32_t)(tag >> 3);
    f->wt = (int)(tag & 7);
    if (tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
        return pl_fail(err, PL_ERR_FORMAT,
                       FILE_NAME ": %s: field number %llu at byte %zu is not "
                                 "one protobuf allows (1..2^29-1)",
                       msg, (unsigned long long)(tag >> 3), f->at);
    switch (f->wt) {
    case WT_VARINT:
        return get_varint(r, &f->v, "a varint field", err);
    case WT_I64:
    case WT_I32: {
        const size_t n = f->wt == WT_I64 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n)
            return pl_fail(err, PL_ERR_FORMAT,
                           FILE_NAME ": %s: field %u at byte %zu needs %zu bytes, %zu are left",
                           msg, f->num, f->at, n, (size_t)(r->end - r->p));
        f->v = 0;
        for (size_t i = 0; i < n; i++) f->v |= (uint64_t)r->p[i] << (8 * i);
        r->p += n;
        return PL_OK;
    }
    case WT_LEN:
        if ((s = get_varint(r, &f->len, "a length", err))) return s;
        if (f->len > (uint64_t)(r->end - r->p))
            return pl_fail(err, PL_ERR_FORMAT,
                           FILE_NAME ": %s: field %u at byte %zu is %llu bytes long, past the end "
                                     "of its message (%zu bytes left)",
                           msg, f->num, f->at, (unsigned long long)f->len, (size_t)(r->end - r->p));
        f->data = r->p;
        r->p += f->len;
        return PL_OK;
    default:
        return pl_fail(err, PL_ERR_FORMAT,
                       FILE_NAME ": %s: field %u at byte %zu has wire type %d (%s), which "
                                 "sentencepiece's model does not use",
                       msg, f->num, f->at, f->wt,
                       f->wt == WT_SGROUP || f->wt == WT_EGROUP ? "a group" : "undefined");
    }
}

/* A known field must come with its own wire type (protobuf would take it as another field). */
static pl_status want_wt(const field *f, int wt, const char *msg, const char *name, pl_error *err)
{
    static const char *const names[] = {"varint",      "64-bit",    "length-delimited",
                                        "group start", "group end", "32-bit"};
    if (f->wt == wt) return PL_OK;
    return pl_fail(err, PL_ERR_FORMAT, FILE_NAME ": %s.%s (field %u at byte %zu) is %s, not %s",
                   msg, name, f->num, f->at, names[f->wt], names[wt]);
}

static rd sub(const rd *r, const field *f)
{
    return (rd){f->data, f->data + f->len, r->base};
}

/* int32 and enum fields: the low 32 bits of the varint, as protobuf takes them (a negative
 * int32 is written as ten bytes, sign-extended). */
static int32_t as_i32(uint64_t v)
{
    return (int32_t)(uint32_t)(v & 0xffffffffu);
}

static pl_status parse_piece(const rd *top, const field *pf, pl_spm_piece *pc, uint32_t index,
                             pl_error *err)
{
    rd r = sub(top, pf);
    field f;
    pl_status s;
    int has_text = 0;
    pc->score = 0;
    pc->type = PL_SPM_NORMAL;
    while (r.p < r.end) {
        if ((s = next_field(&r, &f, "pieces", err))) return s;
        if (f.num == 1) {
            if ((s = want_wt(&f, WT_LEN, "pieces", "piece", err))) return s;
            if (f.len > PL_TOK_MAX_TOKEN_BYTES)
                return pl_fail(err, PL_ERR_LIMIT,
                               FILE_NAME ": piece %u is %llu bytes, over PL_TOK_MAX_TOKEN_BYTES "
                                         "(%u)",
                               index, (unsigned long long)f.len, PL_TOK_MAX_TOKEN_BYTES);
            pc->text = (const char *)f.data;
            pc->len = (uint32_t)f.len;
            has_text = 1;
        } else if (f.num == 2) {
            if ((s = want_wt(&f, WT_I32, "pieces", "score", err))) return s;
            uint32_t bits = (uint32_t)f.v;
            memcpy(&pc->score, &bits, sizeof bits);
            if (!isfinite(pc->score))
                return pl_fail(err, PL_ERR_FORMAT, FILE_NAME ": piece %u has a score of %g", index,
                               (double)pc->score);
        } else if (f.num == 3) {
            if ((s = want_wt(&f, WT_VARINT, "pieces", "type", err))) return s;
            int32_t t = as_i32(f.v);
            if (t < PL_SPM_NORMAL || t > PL_SPM_BYTE || f.v > 0xffffffffu)
                return pl_fail(err, PL_ERR_FORMAT,
                               FILE_NAME ": piece %u has type %lld (sentencepiece's are 1..6: "
                                         "normal, unknown, control, user-defined, unused, byte)",
                               index, (long long)(int64_t)f.v);
            pc->type = t;
        }
    }
    if (!has_text || pc->len == 0)
        return pl_fail(err, PL_ERR_FORMAT, FILE_NAME ": piece %u has %s", index,
                       has_text ? "an empty text" : "no text");
    for (uint32_t i = 0; i < pc->len;) {
        size_t k = pl_utf8_char((const unsigned char *)pc->text + i, pc->len - i);
        if (!k)
            return pl_fail(err, PL_ERR_FORMAT,
                           FILE_NAME ": piece %u is not valid UTF-8 (byte %u of its text)", index,
                           i);
        i += (uint32_t)k;
    }
    return PL_OK;
}

static pl_status parse_trainer(pl_spm_model *m, const rd *top, const field *tf, pl_error *err)
{
    rd r = sub(top, tf);
    field f;
    pl_status s;
    while (r.p < r.end) {
        if ((s = next_field(&r, &f, "trainer_spec", err))) return s;
        static const struct {
            uint32_t num;
            const char *name;
        } ints[] = {{3, "model_type"},     {24, "treat_whitespace_as_suffix"},
                    {35, "byte_fallback"}, {40, "unk_id"},
                    {41, "bos_id"},        {42, "eos_id"},
                    {43, "pad_id"}};
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
            if (f.num != ints[i].num) continue;
            if ((s = want_wt(&f, WT_VARINT, "trainer_spec", ints[i].name, err))) return s;
            const int32_t v = as_i32(f.v);
            switch (f.num) {
            case 3:
                m->model_type = v;
                break;
            case 24:
                m->treat_whitespace_as_suffix = f.v != 0;
                break;
            case 35:
                m->byte_fallback = f.v != 0;
                break;
            case 40:
                m->unk_id = v;
                break;
            case 41:
                m->bos_id = v;
                break;
            case 42:
                m->eos_id = v;
                break;
            default:
                m->pad_id = v;
                break;
            }
        }
    }
    return PL_OK;
}

static pl_status parse_norm(pl_spm_norm *n, const rd *top, const field *nf, const char *msg,
                            pl_error *err)
{
    rd r = sub(top, nf);
    field f;
    pl_status s;
    n->present = 1;
    while (r.p < r.end) {
        if ((s = next_field(&r, &f, msg, err))) return s;
        switch (f.num) {
        case 1:
            if ((s = want_wt(&f, WT_LEN, msg, "name", err))) return s;
            n->name = (const char *)f.data;
            n->name_len = (uint32_t)f.len; /* the file is at most PL_SPM_MAX_FILE bytes */
            break;
        case 2:
            if ((s = want_wt(&f, WT_LEN, msg, "precompiled_charsmap", err))) return s;
            n->charsmap_len = (uint32_t)f.len;
            break;
        case 3:
            if ((s = want_wt(&f, WT_VARINT, msg, "add_dummy_prefix", err))) return s;
            n->add_dummy_prefix = f.v != 0;
            break;
        case 4:
            if ((s = want_wt(&f, WT_VARINT, msg, "remove_extra_whitespaces", err))) return s;
            n->remove_extra_whitespaces = f.v != 0;
            break;
        case 5:
            if ((s = want_wt(&f, WT_VARINT, msg, "escape_whitespaces", err))) return s;
            n->escape_whitespaces = f.v != 0;
            break;
        default:
            break;
        }
    }
    return PL_OK;
}

static void norm_defaults(pl_spm_norm *n)
{
    *n = (pl_spm_norm){
        .add_dummy_prefix = 1, .remove_extra_whitespaces = 1, .escape_whitespaces = 1};
}

pl_status pl_spm_model_parse(pl_spm_model *m, const void *data, size_t size, pl_error *err)
{
    if (!m || (!data && size)) return pl_fail(err, PL_ERR_INVALID_ARG, "m or data is NULL");
    memset(m, 0, sizeof *m);
    if (size > PL_SPM_MAX_FILE)
        return pl_fail(err, PL_ERR_LIMIT, FILE_NAME " is %zu bytes, over PL_SPM_MAX_FILE (%u)",
                       size, PL_SPM_MAX_FILE);
    m->model_type = PL_SPM_UNIGRAM;
    m->unk_id = 0;
    m->bos_id = 1;
    m->eos_id = 2;
    m->pad_id = -1;
    norm_defaults(&m->norm);
    norm_defaults(&m->denorm);
    const uint8_t *base = data ? data : (const uint8_t *)"";
    const rd top = {base, base + size, base};
    /* Pass 1: the message's structure, and the number of pieces. */
    rd r = top;
    field f;
    pl_status s;
    uint64_t n = 0;
    while (r.p < r.end) {
        if ((s = next_field(&r, &f, "ModelProto", err))) return s;
        if (f.num >= 1 && f.num <= 5 && f.num != 4 &&
            (s = want_wt(&f, WT_LEN, "ModelProto",
                         f.num == 1   ? "pieces"
                         : f.num == 2 ? "trainer_spec"
                         : f.num == 3 ? "normalizer_spec"
                                      : "denormalizer_spec",
                         err)))
            return s;
        if (f.num == 1 && ++n > PL_TOK_MAX_VOCAB)
            return pl_fail(err, PL_ERR_LIMIT,
                           FILE_NAME " has over %u pieces (PL_TOK_MAX_VOCAB, a GGUF vocabulary's "
                                     "limit)",
                           PL_TOK_MAX_VOCAB);
    }
    if (n == 0) return pl_fail(err, PL_ERR_FORMAT, FILE_NAME " has no pieces");
    if (!(m->pieces = pl_calloc((size_t)n, sizeof *m->pieces)))
        return pl_fail(err, PL_ERR_NOMEM, "no memory for %llu pieces", (unsigned long long)n);
    /* Pass 2: the fields. */
    r = top;
    s = PL_OK;
    while (r.p < r.end && !s) {
        if ((s = next_field(&r, &f, "ModelProto", err))) break;
        if (f.num == 1) { /* pass 1 counted them: n_pieces stays below n */
            s = parse_piece(&top, &f, &m->pieces[m->n_pieces], m->n_pieces, err);
            m->n_pieces++;
        } else if (f.num == 2)
            s = parse_trainer(m, &top, &f, err);
        else if (f.num == 3)
            s = parse_norm(&m->norm, &top, &f, "normalizer_spec", err);
        else if (f.num == 5)
            s = parse_norm(&m->denorm, &top, &f, "denormalizer_spec", err);
    }
    if (s) pl_spm_model_free(m);
    return s;
}

void pl_spm_model_free(pl_spm_model *m)
{
    if (!m) return;
    pl_free(m->pieces);
    m->pieces = NULL;
    m->n_pieces = 0;
}

/* "<0xXX>" with two upper-case hex digits (sentencepiece's ByteToPiece), -> XX; else -1. */
static int byte_piece(const pl_spm_piece *p)
{
    static const char hex[] = "0123456789ABCDEF";
    if (p->len != 6 || memcmp(p->text, "<0x", 3) != 0 || p->text[5] != '>') return -1;
    const char *hi = memchr(hex, p->text[3], 16), *lo = memchr(hex, p->text[4], 16);
    if (!hi || !lo) return -1;
    return (int)(hi - hex) * 16 + (int)(lo - hex);
}

static uint64_t fnv(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t k = 0; k < n; k++) h = (h ^ (unsigned char)p[k]) * 0x100000001b3ull;
    return h;
}

static pl_status check_unique(const pl_spm_model *m, const char *file, pl_error *err)
{
    uint64_t slots = 16;
    while (slots < 2 * (uint64_t)m->n_pieces) slots <<= 1;
    uint32_t *seen = pl_calloc((size_t)slots, sizeof *seen);
    if (!seen) return pl_fail(err, PL_ERR_NOMEM, "no memory to check %u pieces", m->n_pieces);
    pl_status s = PL_OK;
    for (uint32_t i = 0; i < m->n_pieces && !s; i++) {
        const pl_spm_piece *p = &m->pieces[i];
        uint64_t h = fnv(p->text, p->len) & (slots - 1);
        for (; seen[h]; h = (h + 1) & (slots - 1)) {
            const pl_spm_piece *q = &m->pieces[seen[h] - 1];
            if (q->len == p->len && memcmp(q->text, p->text, p->len) == 0) break;
        }
        if (seen[h])
            s = pl_fail(err, PL_ERR_FORMAT, "%s: pieces %u and %u are both '%.*s'", file,
                        seen[h] - 1, i, (int)(p->len < 40 ? p->len : 40), p->text);
        else
            seen[h] = i + 1;
    }
    pl_free(seen);
    return s;
}

/* 1 if p[0..n) is one character repeated (a run of spaces, newlines, tabs). */
static int one_char_run(const char *p, uint32_t n)
{
    size_t c = pl_utf8_char((const unsigned char *)p, n);
    if (!c || n % c) return 0;
    for (uint32_t k = c; k < n; k += (uint32_t)c)
        if (memcmp(p + k, p, c) != 0) return 0;
    return 1;
}

/* Two user-defined pieces where a proper suffix of one is a proper prefix of the other ("ab",
 * "bcd"): sentencepiece takes them leftmost-longest ("abcd" -> ab c d), plumb's splitter the
 * longest first (a bcd), as llama.cpp's does. Runs of one same character ("\n\n", "\n\n\n")
 * overlap but split alike either way (greedy from the left). PL_ERR_UNSUPPORTED naming a pair. */
static pl_status check_user_overlaps(const pl_spm_model *m, uint32_t n_user, const char *file,
                                     pl_error *err)
{
    uint32_t *ud = pl_malloc((size_t)n_user * sizeof *ud);
    uint32_t first[257] = {0}; /* by first byte: ud[first[b] .. first[b + 1]) */
    if (!ud) return pl_fail(err, PL_ERR_NOMEM, "no memory for %u user-defined pieces", n_user);
    for (uint32_t i = 0; i < m->n_pieces; i++)
        if (m->pieces[i].type == PL_SPM_USER_DEFINED)
            first[(unsigned char)m->pieces[i].text[0] + 1]++;
    for (int b = 0; b < 256; b++) first[b + 1] += first[b];
    uint32_t fill[256];
    memcpy(fill, first, sizeof fill);
    for (uint32_t i = 0; i < m->n_pieces; i++)
        if (m->pieces[i].type == PL_SPM_USER_DEFINED)
            ud[fill[(unsigned char)m->pieces[i].text[0]]++] = i;
    pl_status s = PL_OK;
    for (uint32_t x = 0; x < n_user && !s; x++) {
        const pl_spm_piece *a = &m->pieces[ud[x]];
        for (uint32_t k = 1; k < a->len && !s; k++) {
            const unsigned char c = (unsigned char)a->text[k];
            for (uint32_t y = first[c]; y < first[c + 1]; y++) {
                const pl_spm_piece *b = &m->pieces[ud[y]];
                const uint32_t l = a->len - k; /* the overlap */
                if (b == a || l >= b->len || memcmp(a->text + k, b->text, l) != 0) continue;
                /* two runs that overlap are runs of the same character (UTF-8: a
                 * continuation byte never equals a lead byte, so k is a boundary) */
                if (one_char_run(a->text, a->len) && one_char_run(b->text, b->len)) continue;
                s = pl_fail(err, PL_ERR_UNSUPPORTED,
                            "%s: user-defined pieces %u '%.*s' and %u '%.*s' overlap: "
                            "sentencepiece splits them leftmost-longest, plumb's splitter "
                            "longest first",
                            file, ud[x], (int)(a->len < 40 ? a->len : 40), a->text, ud[y],
                            (int)(b->len < 40 ? b->len : 40), b->text);
                break;
            }
        }
    }
    pl_free(ud);
    return s;
}

pl_status pl_spm_model_check(const pl_spm_model *m, const char *file, pl_error *err)
{
    static const char *const kinds[] = {"", "unigram", "BPE", "word", "char"};
    if (m->model_type == PL_SPM_UNIGRAM || m->model_type == PL_SPM_WORD ||
        m->model_type == PL_SPM_CHAR)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: a %s model (trainer_spec.model_type %d): plumb's SentencePiece "
                       "encoder merges pieces by score as sentencepiece's BPE model does, and "
                       "computes no other segmentation (a unigram model takes the one of highest "
                       "total score)",
                       file, kinds[m->model_type], m->model_type);
    if (m->model_type != PL_SPM_BPE)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: trainer_spec.model_type %d is not one of sentencepiece's (1 unigram, "
                       "2 BPE, 3 word, 4 char)",
                       file, m->model_type);
    const pl_spm_norm *n = &m->norm;
    if (n->charsmap_len)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: the normalizer '%.*s' (a precompiled_charsmap of %u bytes) is not "
                       "applied by plumb; only models whose normalizer maps nothing (identity) "
                       "are converted",
                       file, (int)(n->name_len < 64 ? n->name_len : 64), n->name ? n->name : "",
                       n->charsmap_len);
    if (n->remove_extra_whitespaces)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: normalizer_spec.remove_extra_whitespaces (leading, trailing and "
                       "repeated spaces dropped) is not done by llama.cpp's SentencePiece "
                       "encoder, nor by plumb's",
                       file);
    if (!n->escape_whitespaces)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: normalizer_spec.escape_whitespaces is false (spaces kept as they "
                       "are); plumb's SentencePiece encoder always writes them as U+2581",
                       file);
    if (m->treat_whitespace_as_suffix)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: trainer_spec.treat_whitespace_as_suffix (U+2581 ends a piece) is not "
                       "done by plumb's SentencePiece encoder (it puts it first)",
                       file);
    if (m->denorm.present && m->denorm.charsmap_len)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: a denormalizer (denormalizer_spec '%.*s', %u bytes of charsmap) is "
                       "not applied by plumb's decoder",
                       file, (int)(m->denorm.name_len < 64 ? m->denorm.name_len : 64),
                       m->denorm.name ? m->denorm.name : "", m->denorm.charsmap_len);
    uint32_t n_unk = 0, n_byte = 0, n_user = 0;
    for (uint32_t i = 0; i < m->n_pieces; i++) {
        const pl_spm_piece *p = &m->pieces[i];
        const int show = (int)(p->len < 40 ? p->len : 40);
        if (p->type == PL_SPM_UNKNOWN) n_unk++;
        if (p->type == PL_SPM_USER_DEFINED) {
            n_user++;
            for (uint32_t k = 0; k + 3 <= p->len; k++)
                if (memcmp(p->text + k, "\xe2\x96\x81", 3) == 0)
                    return pl_fail(err, PL_ERR_UNSUPPORTED,
                                   "%s: user-defined piece %u '%.*s' holds U+2581: sentencepiece "
                                   "finds it in the text after spaces became U+2581, plumb's "
                                   "splitter in the raw text (and its merges would not take it "
                                   "leftmost-longest)",
                                   file, i, show, p->text);
        }
        if (p->type == PL_SPM_UNUSED)
            return pl_fail(err, PL_ERR_UNSUPPORTED,
                           "%s: piece %u '%.*s' is typed unused, which sentencepiece's BPE "
                           "encoder splits back into pieces and plumb's does not",
                           file, i, show, p->text);
        if (p->type == PL_SPM_BYTE) {
            if (byte_piece(p) < 0)
                return pl_fail(err, PL_ERR_FORMAT,
                               "%s: piece %u '%.*s' is typed byte but is not <0xXX> (two "
                               "upper-case hex digits)",
                               file, i, show, p->text);
            n_byte++;
        }
    }
    if (n_unk != 1)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: %u pieces are typed unknown (sentencepiece needs exactly one)", file,
                       n_unk);
    if (m->byte_fallback && n_byte != 256)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: trainer_spec.byte_fallback is set but %u of the 256 <0xXX> byte "
                       "pieces are present",
                       file, n_byte);
    if (!m->byte_fallback && n_byte)
        return pl_fail(err, PL_ERR_FORMAT,
                       "%s: %u byte pieces, but trainer_spec.byte_fallback is not set", file,
                       n_byte);
    if (n_user && n->add_dummy_prefix)
        return pl_fail(err, PL_ERR_UNSUPPORTED,
                       "%s: user-defined pieces with normalizer_spec.add_dummy_prefix: "
                       "sentencepiece puts the dummy U+2581 only at the start of the text, "
                       "llama.cpp's and plumb's encoders also after each user-defined piece",
                       file);
    pl_status s;
    if (n_user > 1 && (s = check_user_overlaps(m, n_user, file, err))) return s;
    const int32_t ids[3] = {m->bos_id, m->eos_id, m->pad_id};
    static const char *const id_names[3] = {"bos_id", "eos_id", "pad_id"};
    for (int i = 0; i < 3; i++)
        if (ids[i] >= 0 && (uint32_t)ids[i] >= m->n_pieces)
            return pl_fail(err, PL_ERR_FORMAT, "%s: trainer_spec.%s %d is past the %u pieces", file,
                           id_names[i], ids[i], m->n_pieces);
    return check_unique(m, file, err);
}
