/* cmd_inspect.c — `plumb inspect FILE.gguf [--json]`: the header, every metadata key and
 * every tensor of a GGUF file, through the public API only. It judges nothing: the reader does. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* What is shown unless --full: long strings and long arrays are cut (a vocabulary has
 * ~150k entries and a chat template several KB). */
enum {
    TEXT_STRING_MAX = 120,     /* bytes of a string value */
    TEXT_ELEM_STRING_MAX = 40, /* bytes of one string inside an array */
    ARRAY_INLINE_MAX = 8,      /* arrays up to this many elements are shown whole */
    ARRAY_PREVIEW = 4,         /* elements shown of longer arrays (text) */
    JSON_ARRAY_PREVIEW = 8,    /* elements listed of longer arrays (JSON) */
};

typedef struct inspect_opts {
    const char *path;
    int json;
    int full;       /* no truncation of strings and arrays */
    int no_tensors; /* skip the per-tensor table (totals are still shown) */
} inspect_opts;

/* Element counts and bytes per tensor type. */
typedef struct type_total {
    uint32_t type;
    uint64_t tensors, elements, bytes;
} type_total;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: plumb inspect [options] FILE.gguf   (or -m FILE.gguf)\n"
            "\n"
            "Prints a GGUF file's header, its metadata (every key, with type and value) and\n"
            "its tensors (name, type, shape, bytes, offset), with totals per tensor type;\n"
            "then the runtime: what plumb makes of the file when it loads it (architecture,\n"
            "shape, weight memory, repacked copies, the KV cache and scratch a default session\n"
            "needs), or why it would not run it.\n"
            "Strings longer than %d bytes and arrays of more than %d elements are cut short\n"
            "unless --full is given. Escapes: \\n \\t \\r \\\\ \\\", \\xNN for other control\n"
            "bytes and invalid UTF-8.\n"
            "\n"
            "options:\n"
            "  -m FILE        the file as an option, as the other model commands take it\n"
            "  --json         print the same information as one JSON object (the runtime in\n"
            "                 \"runtime\")\n"
            "  --full         show every array element and whole strings\n"
            "  --no-tensors   leave out the per-tensor table (totals are still printed)\n"
            "  -h, --help     show this help\n"
            "\n"
            "Exit status: 0 success, 1 the file could not be read (the message says why),\n"
            "2 bad command line.\n",
            TEXT_STRING_MAX, ARRAY_INLINE_MAX);
}

static const char *gguf_type_name(uint32_t t)
{
    const char *s = pl_gguf_type_name(t);
    return s ? s : "unknown";
}

static void tensor_type_name(char *buf, size_t cap, uint32_t t)
{
    const char *s = pl_type_name(t);
    if (s)
        snprintf(buf, cap, "%s", s);
    else
        snprintf(buf, cap, "type%" PRIu32, t);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t tensor_elements(const pl_tensor_info *t)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims && d < 4; d++) {
        uint64_t e = t->ne[d] > 0 ? (uint64_t)t->ne[d] : 0;
        if (__builtin_mul_overflow(n, e, &n)) return UINT64_MAX;
    }
    return n;
}

static void format_shape(char *buf, size_t cap, const pl_tensor_info *t)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && d < 4 && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

static int n_digits(uint64_t v)
{
    int d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* ---- values ------------------------------------------------------------------------ */

static void put_scalar(FILE *f, pl_gguf_type t, const pl_gguf_scalar *v, int json)
{
    char buf[64];
    switch (t) {
    case PL_GGUF_UINT8:
        fprintf(f, "%u", (unsigned)v->u8);
        return;
    case PL_GGUF_INT8:
        fprintf(f, "%d", (int)v->i8);
        return;
    case PL_GGUF_UINT16:
        fprintf(f, "%u", (unsigned)v->u16);
        return;
    case PL_GGUF_INT16:
        fprintf(f, "%d", (int)v->i16);
        return;
    case PL_GGUF_UINT32:
        fprintf(f, "%" PRIu32, v->u32);
        return;
    case PL_GGUF_INT32:
        fprintf(f, "%" PRId32, v->i32);
        return;
    case PL_GGUF_UINT64:
        fprintf(f, "%" PRIu64, v->u64);
        return;
    case PL_GGUF_INT64:
        fprintf(f, "%" PRId64, v->i64);
        return;
    case PL_GGUF_BOOL: {
        /* The reader stores the bool in the first byte or as an int: any set byte is true. */
        int set = 0;
        for (size_t k = 0; k < sizeof v->bytes; k++) set |= v->bytes[k] != 0;
        fputs(set ? "true" : "false", f);
        return;
    }
    case PL_GGUF_FLOAT32:
    case PL_GGUF_FLOAT64: {
        double d = t == PL_GGUF_FLOAT32 ? (double)v->f32 : v->f64;
        if (t == PL_GGUF_FLOAT32)
            cli_format_f32(buf, sizeof buf, v->f32);
        else
            cli_format_f64(buf, sizeof buf, v->f64);
        /* JSON has no NaN or infinity: those become strings. */
        if (json && !isfinite(d))
            fprintf(f, "\"%s\"", buf);
        else
            fputs(buf, f);
        return;
    }
    default:
        fputs(json ? "null" : "?", f);
        return;
    }
}

/* A string for humans, cut at max bytes (0: never) with a note of its length. */
static void put_text_string(FILE *f, pl_str s, size_t max)
{
    size_t shown = (size_t)s.len;
    if (max && s.len > max) shown = cli_utf8_prefix(s.ptr, (size_t)s.len, max);
    fputc('"', f);
    cli_put_escaped(f, s.ptr, shown);
    fputc('"', f);
    if (shown < s.len) fprintf(f, "... (%" PRIu64 " bytes)", s.len);
}

static pl_status put_array_elem(FILE *f, const pl_gguf_array *arr, uint64_t i,
                                const inspect_opts *o, pl_error *err)
{
    if (arr->type == PL_GGUF_STRING) {
        pl_str s;
        pl_status st = pl_gguf_array_string(arr, i, &s, err);
        if (st != PL_OK) return st;
        if (o->json)
            cli_put_json_string(f, s.ptr, (size_t)s.len);
        else
            put_text_string(f, s, o->full ? 0 : TEXT_ELEM_STRING_MAX);
        return PL_OK;
    }
    pl_gguf_scalar v;
    memset(&v, 0, sizeof v);
    pl_status st = pl_gguf_array_elem(arr, i, &v, err);
    if (st != PL_OK) return st;
    put_scalar(f, arr->type, &v, o->json);
    return PL_OK;
}

/* Text: short arrays whole, "[1, 2, 3]"; long ones "[string × 151936] "a", "b", ...". */
static pl_status put_text_array(FILE *f, const pl_gguf_array *arr, const inspect_opts *o,
                                pl_error *err)
{
    int whole = o->full || arr->count <= ARRAY_INLINE_MAX;
    uint64_t show = whole ? arr->count : ARRAY_PREVIEW;
    if (!whole) fprintf(f, "[%s × %" PRIu64 "] ", gguf_type_name(arr->type), arr->count);
    if (whole) fputc('[', f);
    for (uint64_t i = 0; i < show; i++) {
        if (i) fputs(", ", f);
        pl_status st = put_array_elem(f, arr, i, o, err);
        if (st != PL_OK) return st;
    }
    fputs(whole ? "]" : ", ...", f);
    return PL_OK;
}

static pl_status put_json_array(FILE *f, const pl_gguf_array *arr, const inspect_opts *o,
                                pl_error *err)
{
    uint64_t show = arr->count;
    if (!o->full && show > JSON_ARRAY_PREVIEW) show = JSON_ARRAY_PREVIEW;
    fprintf(f, "{\"type\": \"%s\", \"count\": %" PRIu64 ", \"values\": [",
            gguf_type_name(arr->type), arr->count);
    for (uint64_t i = 0; i < show; i++) {
        if (i) fputs(", ", f);
        pl_status st = put_array_elem(f, arr, i, o, err);
        if (st != PL_OK) return st;
    }
    fprintf(f, "], \"truncated\": %s}", show < arr->count ? "true" : "false");
    return PL_OK;
}

/* The value of key i, in the output's format. */
static pl_status put_value(FILE *f, const pl_gguf *g, uint64_t i, const inspect_opts *o,
                           pl_error *err)
{
    pl_gguf_type t = pl_gguf_kv_type(g, i);
    pl_status st;
    if (t == PL_GGUF_STRING) {
        pl_str s;
        if ((st = pl_gguf_kv_string(g, i, &s, err)) != PL_OK) return st;
        if (o->json)
            cli_put_json_string(f, s.ptr, (size_t)s.len);
        else
            put_text_string(f, s, o->full ? 0 : TEXT_STRING_MAX);
        return PL_OK;
    }
    if (t == PL_GGUF_ARRAY) {
        pl_gguf_array arr;
        if ((st = pl_gguf_kv_array(g, i, &arr, err)) != PL_OK) return st;
        return o->json ? put_json_array(f, &arr, o, err) : put_text_array(f, &arr, o, err);
    }
    pl_gguf_scalar v;
    memset(&v, 0, sizeof v);
    if ((st = pl_gguf_kv_scalar(g, i, t, &v, err)) != PL_OK) return st;
    put_scalar(f, t, &v, o->json);
    return PL_OK;
}

/* Type column of the metadata table: "uint32", "string", "[int32]" for arrays. */
static pl_status kv_type_label(char *buf, size_t cap, const pl_gguf *g, uint64_t i, pl_error *err)
{
    pl_gguf_type t = pl_gguf_kv_type(g, i);
    if (t != PL_GGUF_ARRAY) {
        snprintf(buf, cap, "%s", gguf_type_name(t));
        return PL_OK;
    }
    pl_gguf_array arr;
    pl_status st = pl_gguf_kv_array(g, i, &arr, err);
    if (st != PL_OK) return st;
    snprintf(buf, cap, "[%s]", gguf_type_name(arr.type));
    return PL_OK;
}

/* ---- totals by tensor type ----------------------------------------------------------- */

static int cmp_total(const void *pa, const void *pb)
{
    const type_total *a = pa, *b = pb;
    if (a->bytes != b->bytes) return a->bytes > b->bytes ? -1 : 1;
    return a->type < b->type ? -1 : a->type > b->type;
}

/* Fills totals (capacity n_tensors) sorted by bytes, descending; returns how many types. */
static pl_status collect_totals(const pl_gguf *g, type_total *totals, size_t *n_types,
                                type_total *all, pl_error *err)
{
    uint64_t n = pl_gguf_n_tensors(g);
    size_t k = 0;
    memset(all, 0, sizeof *all);
    for (uint64_t i = 0; i < n; i++) {
        pl_tensor_info t;
        pl_status st = pl_gguf_tensor(g, i, &t, err);
        if (st != PL_OK) return st;
        size_t j = 0;
        while (j < k && totals[j].type != t.type) j++;
        if (j == k) {
            memset(&totals[k], 0, sizeof totals[k]);
            totals[k++].type = t.type;
        }
        uint64_t el = tensor_elements(&t);
        totals[j].tensors++;
        totals[j].elements = sat_add(totals[j].elements, el);
        totals[j].bytes = sat_add(totals[j].bytes, t.n_bytes);
        all->tensors++;
        all->elements = sat_add(all->elements, el);
        all->bytes = sat_add(all->bytes, t.n_bytes);
    }
    qsort(totals, k, sizeof *totals, cmp_total);
    *n_types = k;
    return PL_OK;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* ---- text output ------------------------------------------------------------------- */

static pl_status print_text(FILE *f, const pl_gguf *g, const inspect_opts *o,
                            const type_total *totals, size_t n_types, const type_total *all,
                            pl_error *err)
{
    char size_buf[32], type_buf[40], shape_buf[128];
    uint64_t file_size = pl_gguf_size(g), data_off = pl_gguf_data_offset(g);
    uint64_t data_size = file_size > data_off ? file_size - data_off : 0;
    uint64_t n_kv = pl_gguf_n_kv(g), n_t = pl_gguf_n_tensors(g);
    pl_status st;

    fputs("file:         ", f);
    cli_put_escaped(f, o->path, strlen(o->path));
    cli_format_size(size_buf, sizeof size_buf, file_size);
    fprintf(f, "\nfile size:    %" PRIu64 " bytes (%s)\n", file_size, size_buf);
    fprintf(f, "gguf version: %" PRIu32 "\n", pl_gguf_version(g));
    fprintf(f, "alignment:    %" PRIu32 "\n", pl_gguf_alignment(g));
    fprintf(f, "n_kv:         %" PRIu64 "\n", n_kv);
    fprintf(f, "n_tensors:    %" PRIu64 "\n", n_t);
    fprintf(f, "data offset:  %" PRIu64 " (0x%" PRIx64 ")\n", data_off, data_off);
    cli_format_size(size_buf, sizeof size_buf, data_size);
    fprintf(f, "data size:    %" PRIu64 " bytes (%s)\n", data_size, size_buf);

    /* Metadata: "  #  type  key: value", keys padded so the values line up. */
    fprintf(f, "\nmetadata: %" PRIu64 " key/value pair%s\n", n_kv, n_kv == 1 ? "" : "s");
    size_t key_w = 0, type_w = 4;
    for (uint64_t i = 0; i < n_kv; i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        size_t w = cli_escaped_width(k.ptr, (size_t)k.len);
        if (w > key_w && w <= 48) key_w = w;
        if ((st = kv_type_label(type_buf, sizeof type_buf, g, i, err)) != PL_OK) return st;
        if (strlen(type_buf) > type_w) type_w = strlen(type_buf);
    }
    int idx_w = n_digits(n_kv ? n_kv - 1 : 0);
    for (uint64_t i = 0; i < n_kv; i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        if ((st = kv_type_label(type_buf, sizeof type_buf, g, i, err)) != PL_OK) return st;
        fprintf(f, "  %*" PRIu64 "  %-*s  ", idx_w, i, (int)type_w, type_buf);
        cli_put_escaped(f, k.ptr, (size_t)k.len);
        fputc(':', f);
        size_t w = cli_escaped_width(k.ptr, (size_t)k.len);
        for (size_t p = w; p < key_w; p++) fputc(' ', f);
        fputc(' ', f);
        if ((st = put_value(f, g, i, o, err)) != PL_OK) return st;
        fputc('\n', f);
    }

    if (!o->no_tensors) {
        /* First pass: column widths. */
        size_t name_w = 4, tname_w = 4, shape_w = 5;
        uint64_t max_bytes = 0, max_off = 0;
        for (uint64_t i = 0; i < n_t; i++) {
            pl_tensor_info t;
            if ((st = pl_gguf_tensor(g, i, &t, err)) != PL_OK) return st;
            size_t w = cli_escaped_width(t.name.ptr, (size_t)t.name.len);
            if (w > name_w && w <= 64) name_w = w;
            tensor_type_name(type_buf, sizeof type_buf, t.type);
            if (strlen(type_buf) > tname_w) tname_w = strlen(type_buf);
            format_shape(shape_buf, sizeof shape_buf, &t);
            if (strlen(shape_buf) > shape_w) shape_w = strlen(shape_buf);
            if (t.n_bytes > max_bytes) max_bytes = t.n_bytes;
            if (t.offset > max_off) max_off = t.offset;
        }
        int tidx_w = n_digits(n_t ? n_t - 1 : 0);
        int bytes_w = n_digits(max_bytes), off_w = n_digits(max_off);
        if (bytes_w < 5) bytes_w = 5;
        if (off_w < 6) off_w = 6;
        fprintf(f, "\ntensors: %" PRIu64 "\n", n_t);
        fprintf(f, "  %*s  %-*s  %-*s  %-*s  %*s  %*s\n", tidx_w, "#", (int)name_w, "name",
                (int)tname_w, "type", (int)shape_w, "shape", bytes_w, "bytes", off_w, "offset");
        for (uint64_t i = 0; i < n_t; i++) {
            pl_tensor_info t;
            if ((st = pl_gguf_tensor(g, i, &t, err)) != PL_OK) return st;
            fprintf(f, "  %*" PRIu64 "  ", tidx_w, i);
            cli_put_escaped(f, t.name.ptr, (size_t)t.name.len);
            size_t w = cli_escaped_width(t.name.ptr, (size_t)t.name.len);
            for (size_t p = w; p < name_w; p++) fputc(' ', f);
            tensor_type_name(type_buf, sizeof type_buf, t.type);
            format_shape(shape_buf, sizeof shape_buf, &t);
            fprintf(f, "  %-*s  %-*s  %*" PRIu64 "  %*" PRIu64 "\n", (int)tname_w, type_buf,
                    (int)shape_w, shape_buf, bytes_w, t.n_bytes, off_w, t.offset);
        }
    }

    fputs("\nby type:\n", f);
    int el_w = n_digits(all->elements), tb_w = n_digits(all->bytes), tc_w = n_digits(all->tensors);
    if (el_w < 8) el_w = 8;
    if (tb_w < 5) tb_w = 5;
    if (tc_w < 7) tc_w = 7;
    fprintf(f, "  %-6s  %*s  %*s  %*s  %10s  %6s\n", "type", tc_w, "tensors", el_w, "elements",
            tb_w, "bytes", "size", "% data");
    for (size_t j = 0; j < n_types; j++) {
        tensor_type_name(type_buf, sizeof type_buf, totals[j].type);
        cli_format_size(size_buf, sizeof size_buf, totals[j].bytes);
        fprintf(f, "  %-6s  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64 "  %10s  %5.1f%%\n", type_buf,
                tc_w, totals[j].tensors, el_w, totals[j].elements, tb_w, totals[j].bytes, size_buf,
                percent(totals[j].bytes, all->bytes));
    }
    cli_format_size(size_buf, sizeof size_buf, all->bytes);
    fprintf(f, "  %-6s  %*" PRIu64 "  %*" PRIu64 "  %*" PRIu64 "  %10s  %5.1f%%\n", "total", tc_w,
            all->tensors, el_w, all->elements, tb_w, all->bytes, size_buf,
            all->tensors ? 100.0 : 0.0);
    return PL_OK;
}

/* ---- JSON output ------------------------------------------------------------------- */

typedef struct runtime runtime; /* below: what the runtime makes of the file */
static void put_runtime_json(FILE *f, const runtime *rt);

static pl_status print_json(FILE *f, const pl_gguf *g, const inspect_opts *o,
                            const type_total *totals, size_t n_types, const type_total *all,
                            const runtime *rt, pl_error *err)
{
    char type_buf[40];
    uint64_t file_size = pl_gguf_size(g), data_off = pl_gguf_data_offset(g);
    uint64_t n_kv = pl_gguf_n_kv(g), n_t = pl_gguf_n_tensors(g);
    pl_status st;

    fputs("{\n  \"file\": ", f);
    cli_put_json_string(f, o->path, strlen(o->path));
    fprintf(f, ",\n  \"file_size\": %" PRIu64 ",\n", file_size);
    fprintf(f, "  \"version\": %" PRIu32 ",\n", pl_gguf_version(g));
    fprintf(f, "  \"alignment\": %" PRIu32 ",\n", pl_gguf_alignment(g));
    fprintf(f, "  \"n_kv\": %" PRIu64 ",\n", n_kv);
    fprintf(f, "  \"n_tensors\": %" PRIu64 ",\n", n_t);
    fprintf(f, "  \"data_offset\": %" PRIu64 ",\n", data_off);
    fprintf(f, "  \"data_size\": %" PRIu64 ",\n", file_size > data_off ? file_size - data_off : 0);

    fputs("  \"metadata\": [", f);
    for (uint64_t i = 0; i < n_kv; i++) {
        pl_str k = pl_gguf_kv_key(g, i);
        fputs(i ? ",\n    {\"key\": " : "\n    {\"key\": ", f);
        cli_put_json_string(f, k.ptr, (size_t)k.len);
        fprintf(f, ", \"type\": \"%s\", \"value\": ", gguf_type_name(pl_gguf_kv_type(g, i)));
        if ((st = put_value(f, g, i, o, err)) != PL_OK) return st;
        fputc('}', f);
    }
    fputs(n_kv ? "\n  ],\n" : "],\n", f);

    if (!o->no_tensors) fputs("  \"tensors\": [", f);
    for (uint64_t i = 0; i < n_t && !o->no_tensors; i++) {
        pl_tensor_info t;
        if ((st = pl_gguf_tensor(g, i, &t, err)) != PL_OK) return st;
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        cli_put_json_string(f, t.name.ptr, (size_t)t.name.len);
        tensor_type_name(type_buf, sizeof type_buf, t.type);
        fprintf(f, ", \"type\": \"%s\", \"type_id\": %" PRIu32 ", \"shape\": [", type_buf, t.type);
        for (uint32_t d = 0; d < t.n_dims && d < 4; d++)
            fprintf(f, "%s%" PRId64, d ? ", " : "", t.ne[d]);
        fprintf(f, "], \"elements\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"offset\": %" PRIu64 "}",
                tensor_elements(&t), t.n_bytes, t.offset);
    }
    if (!o->no_tensors) fputs(n_t ? "\n  ],\n" : "],\n", f);

    fputs("  \"by_type\": [", f);
    for (size_t j = 0; j < n_types; j++) {
        tensor_type_name(type_buf, sizeof type_buf, totals[j].type);
        fprintf(f,
                "%s\n    {\"type\": \"%s\", \"type_id\": %" PRIu32 ", \"tensors\": %" PRIu64
                ", \"elements\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"percent\": %.2f}",
                j ? "," : "", type_buf, totals[j].type, totals[j].tensors, totals[j].elements,
                totals[j].bytes, percent(totals[j].bytes, all->bytes));
    }
    fputs(n_types ? "\n  ],\n" : "],\n", f);
    fprintf(f,
            "  \"totals\": {\"tensors\": %" PRIu64 ", \"elements\": %" PRIu64
            ", \"bytes\": %" PRIu64 "},\n  \"runtime\": ",
            all->tensors, all->elements, all->bytes);
    put_runtime_json(f, rt);
    fputs("\n}\n", f);
    return PL_OK;
}

/* What the runtime makes of the file: the bound model, and the memory a default session
 * needs beyond the mapped weights (KV cache + scratch), or why the file does not run. */
struct runtime {
    pl_status st; /* PL_OK: the model loads */
    pl_error err;
    pl_model_info mi;
    pl_session_params p;
    pl_status est; /* the default session's estimate */
    pl_session_info si;
    pl_status tst; /* the chat template as compiled at load: PL_OK, NOT_FOUND, or why not */
    pl_error terr;
    size_t tlen;
};

static void runtime_probe(runtime *rt, const char *path)
{
    memset(rt, 0, sizeof *rt);
    pl_model *m = NULL;
    if ((rt->st = pl_model_load(&m, path, NULL, &rt->err)) != PL_OK) return;
    rt->p = pl_session_default_params(m);
    pl_model_get_info(m, &rt->mi, NULL);
    pl_error e;
    rt->est = pl_session_estimate(m, &rt->p, &rt->si, &e);
    rt->tst = pl_model_chat_template(m, NULL, &rt->tlen, &rt->terr);
    pl_model_free(m);
}

static const char *kv_type_name(pl_type t)
{
    return t == PL_TYPE_F32 ? "F32" : "F16";
}

static void print_runtime(FILE *f, const runtime *rt)
{
    fprintf(f, "\nruntime:\n");
    if (rt->st != PL_OK) {
        fprintf(f, "  not runnable: %s\n", rt->err.msg[0] ? rt->err.msg : cli_status_words(rt->st));
        return;
    }
    const pl_model_info *mi = &rt->mi;
    char w[32], kv[32], sc[32];
    cli_format_size(w, sizeof w, mi->weight_bytes);
    fprintf(f,
            "  %s: %lld layers, n_embd %lld, heads %lld/%lld, head_dim %lld, n_ff %lld, "
            "vocab %lld, %s embeddings\n",
            mi->arch, (long long)mi->n_layer, (long long)mi->n_embd, (long long)mi->n_head,
            (long long)mi->n_head_kv, (long long)mi->head_dim, (long long)mi->n_ff,
            (long long)mi->n_vocab, mi->tied_embeddings ? "tied" : "untied");
    fprintf(f, "  weights: %s in the mapping (%.1f M parameters)\n", w,
            (double)mi->n_params * 1e-6);
    if (mi->n_expert > 0) {
        char sb[32];
        cli_format_size(sb, sizeof sb, mi->step_weight_bytes);
        fprintf(f,
                "  mixture of experts: %lld of %lld experts per token, %.1f M active parameters, "
                "%s read per decoded token\n",
                (long long)mi->n_expert_used, (long long)mi->n_expert,
                (double)mi->n_active_params * 1e-6, sb);
    }
    if (mi->n_repacked > 0) {
        char rb[32];
        cli_format_size(rb, sizeof rb, mi->repack_bytes);
        fprintf(f,
                "  repacked for kernel set %s: %d matmul weights, %s of memory, %.0f ms at load "
                "(plumb run --no-repack runs them from the mapping)\n",
                mi->repack_set, mi->n_repacked, rb, mi->repack_ms);
    }
    if (rt->est == PL_OK) {
        cli_format_size(kv, sizeof kv, rt->si.kv_bytes);
        cli_format_size(sc, sizeof sc, rt->si.scratch_bytes);
        fprintf(f, "  default session (context %lld, %s KV, chunk %lld): KV cache %s, scratch %s\n",
                (long long)rt->p.context_window, kv_type_name(rt->p.kv_type),
                (long long)rt->p.prefill_chunk, kv, sc);
    }
    if (rt->tst == PL_OK)
        fprintf(f, "  chat template: %zu bytes of Jinja, compiled (the chat paths run it)\n",
                rt->tlen);
    else
        fprintf(f, "  chat template: %s\n", rt->terr.msg);
}

/* The same as one JSON value: {"runnable": false, "status", "error"} or the model's figures. */
static void put_runtime_json(FILE *f, const runtime *rt)
{
    if (rt->st != PL_OK) {
        fprintf(f, "{\"runnable\": false, \"status\": \"%s\", \"error\": ", pl_status_str(rt->st));
        const char *msg = rt->err.msg[0] ? rt->err.msg : cli_status_words(rt->st);
        cli_put_json_string(f, msg, strlen(msg));
        fputc('}', f);
        return;
    }
    const pl_model_info *mi = &rt->mi;
    fputs("{\"runnable\": true, \"arch\": ", f);
    cli_put_json_string(f, mi->arch, strlen(mi->arch));
    fprintf(f,
            ", \"n_layer\": %lld, \"n_embd\": %lld, \"n_head\": %lld, \"n_head_kv\": %lld, "
            "\"head_dim\": %lld, \"n_ff\": %lld, \"n_vocab\": %lld, \"tied_embeddings\": %s,\n"
            "    \"weight_bytes\": %" PRIu64 ", \"n_params\": %" PRIu64 ", \"n_expert\": %lld, "
            "\"n_expert_used\": %lld, \"n_active_params\": %" PRIu64
            ", \"step_weight_bytes\": %" PRIu64 ",\n    \"repack\": ",
            (long long)mi->n_layer, (long long)mi->n_embd, (long long)mi->n_head,
            (long long)mi->n_head_kv, (long long)mi->head_dim, (long long)mi->n_ff,
            (long long)mi->n_vocab, mi->tied_embeddings ? "true" : "false", mi->weight_bytes,
            mi->n_params, (long long)mi->n_expert, (long long)mi->n_expert_used,
            mi->n_active_params, mi->step_weight_bytes);
    if (mi->n_repacked > 0) {
        fputs("{\"kernel_set\": ", f);
        cli_put_json_string(f, mi->repack_set, strlen(mi->repack_set));
        fprintf(f, ", \"tensors\": %d, \"bytes\": %" PRIu64 ", \"ms\": %.3f}", mi->n_repacked,
                mi->repack_bytes, mi->repack_ms);
    } else {
        fputs("null", f);
    }
    fputs(",\n    \"chat_template\": ", f);
    if (rt->tst == PL_OK) {
        fprintf(f, "{\"compiles\": true, \"bytes\": %zu}", rt->tlen);
    } else {
        fprintf(f, "{\"compiles\": false, \"status\": \"%s\", \"error\": ", pl_status_str(rt->tst));
        cli_put_json_string(f, rt->terr.msg, strlen(rt->terr.msg));
        fputc('}', f);
    }
    fputs(",\n    \"default_session\": ", f);
    if (rt->est == PL_OK)
        fprintf(f,
                "{\"context\": %lld, \"kv_type\": \"%s\", \"chunk\": %lld, \"kv_bytes\": %" PRIu64
                ", \"scratch_bytes\": %" PRIu64 "}}",
                (long long)rt->p.context_window, kv_type_name(rt->p.kv_type),
                (long long)rt->p.prefill_chunk, rt->si.kv_bytes, rt->si.scratch_bytes);
    else
        fputs("null}", f);
}

/* ---- the command ------------------------------------------------------------------- */

int cmd_inspect(int argc, char **argv)
{
    inspect_opts o;
    memset(&o, 0, sizeof o);
    cli_args a;
    cli_args_init(&a, argc, argv, "inspect", usage);
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        if (k == CLI_ARG_POSITIONAL) {
            if (o.path) return cli_usage_error(&a, "one file at a time (got '%s' too)", a.arg);
            o.path = a.arg;
            continue;
        }
        if (cli_is_help(&a)) return cli_help(&a);
        if (cli_is(&a, "-m", "--model")) { /* as every other model command takes it */
            const char *v = cli_value(&a);
            if (!v) return CLI_EXIT_USAGE;
            if (o.path) return cli_usage_error(&a, "one file at a time (got '%s' too)", v);
            o.path = v;
            continue;
        }
        int *flag = cli_is(&a, NULL, "--json")         ? &o.json
                    : cli_is(&a, NULL, "--full")       ? &o.full
                    : cli_is(&a, NULL, "--no-tensors") ? &o.no_tensors
                                                       : NULL;
        if (!flag) return cli_unknown_option(&a);
        if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
        *flag = 1;
    }
    if (!o.path) return cli_usage_error(&a, "no file given");

    pl_error err;
    memset(&err, 0, sizeof err);
    pl_gguf *g = NULL;
    pl_status st = pl_gguf_open(&g, o.path, &err);
    if (st != PL_OK) return cli_fail(st, &err);

    uint64_t n_t = pl_gguf_n_tensors(g);
    type_total *totals = calloc(n_t ? (size_t)n_t : 1, sizeof *totals);
    if (!totals) {
        pl_gguf_free(g);
        return cli_errorf("out of memory (%" PRIu64 " tensors)", n_t);
    }
    size_t n_types = 0;
    type_total all;
    st = collect_totals(g, totals, &n_types, &all, &err);
    runtime rt;
    if (st == PL_OK) {
        runtime_probe(&rt, o.path);
        st = o.json ? print_json(stdout, g, &o, totals, n_types, &all, &rt, &err)
                    : print_text(stdout, g, &o, totals, n_types, &all, &err);
    }
    free(totals);
    pl_gguf_free(g);
    if (st == PL_OK && !o.json) print_runtime(stdout, &rt);
    return st == PL_OK ? CLI_EXIT_OK : cli_fail(st, &err);
}
