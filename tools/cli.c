/* cli.c — helpers shared by the plumb subcommands: argv parsing, error messages, and
 * escaping of untrusted bytes (keys, names, strings from files) for terminals and JSON. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- argument parsing -------------------------------------------------------------- */

void cli_args_init(cli_args *a, int argc, char **argv, const char *cmd, void (*usage)(FILE *))
{
    memset(a, 0, sizeof *a);
    a->argc = argc;
    a->argv = argv;
    a->cmd = cmd;
    a->usage = usage;
}

int cli_next(cli_args *a)
{
    for (;;) {
        a->inline_value = NULL;
        if (a->i + 1 >= a->argc) return CLI_ARG_END;
        a->arg = a->argv[++a->i];
        if (a->options_done) return CLI_ARG_POSITIONAL;
        if (strcmp(a->arg, "--") == 0) {
            a->options_done = 1;
            continue;
        }
        return a->arg[0] == '-' && a->arg[1] != '\0' ? CLI_ARG_OPTION : CLI_ARG_POSITIONAL;
    }
}

int cli_is(cli_args *a, const char *short_name, const char *long_name)
{
    if (short_name && strcmp(a->arg, short_name) == 0) return 1;
    if (!long_name) return 0;
    size_t n = strlen(long_name);
    if (strncmp(a->arg, long_name, n) != 0) return 0;
    if (a->arg[n] == '\0') return 1;
    if (a->arg[n] == '=') {
        a->inline_value = a->arg + n + 1;
        return 1;
    }
    return 0;
}

const char *cli_value_ahead(cli_args *a)
{
    int inline_value = a->inline_value || (strncmp(a->arg, "--", 2) == 0 && strchr(a->arg, '='));
    if (inline_value || a->i + 1 < a->argc) return cli_value(a);
    /* Whether the option exists is decided after this: say "unknown option" for a typo. */
    a->value_missing = 1;
    return "";
}

const char *cli_value(cli_args *a)
{
    if (a->inline_value) return a->inline_value;
    /* "--name=VALUE" asked for before cli_is matched it (commands that take the value first). */
    const char *eq = strncmp(a->arg, "--", 2) == 0 ? strchr(a->arg, '=') : NULL;
    if (eq) return a->inline_value = eq + 1;
    if (a->i + 1 < a->argc) return a->argv[++a->i];
    cli_usage_error(a, "option '%s' needs a value", a->arg);
    return NULL;
}

int cli_reject_value(cli_args *a)
{
    if (!a->inline_value) return 0;
    cli_usage_error(a, "option '%.*s' takes no value", (int)(a->inline_value - 1 - a->arg), a->arg);
    return 1;
}

int cli_is_help(cli_args *a)
{
    return strcmp(a->arg, "-h") == 0 || strcmp(a->arg, "--help") == 0;
}

int cli_help(const cli_args *a)
{
    a->usage(stdout);
    return CLI_EXIT_OK;
}

int cli_text_option(cli_args *a, const char *v, cli_text_opts *t, int *rc)
{
    if (cli_is(a, "-p", "--prompt"))
        t->prompt = v;
    else if (cli_is(a, "-f", "--file"))
        t->file = v;
    else if (cli_is(a, NULL, "--tokens")) {
        free(t->tokens);
        t->tokens = NULL;
        if ((t->n_tokens = cli_parse_tokens(a, v, &t->tokens)) < 0) *rc = CLI_EXIT_USAGE;
    } else
        return 0;
    return 1;
}

int cli_text_sources(const cli_text_opts *t)
{
    return !!t->prompt + !!t->file + !!t->tokens;
}

int cli_engine_option(cli_args *a, const char *v, cli_engine_opts *e, int *rc)
{
    if (cli_is(a, "-t", "--threads"))
        *rc = cli_parse_i64(a, v, 1, 4096, &e->threads);
    else if (cli_is(a, NULL, "--kv-type"))
        *rc = cli_parse_kv(a, v, &e->kv);
    else if (cli_is(a, NULL, "--kernels"))
        *rc = cli_parse_kernels(a, v, &e->kernels);
    else
        return 0;
    return 1;
}

int cli_parse_options(cli_args *a, const cli_flag *flags, cli_option_fn option, void *user)
{
    for (int k; (k = cli_next(a)) != CLI_ARG_END;) {
        if (k == CLI_ARG_POSITIONAL) return cli_usage_error(a, "unexpected argument '%s'", a->arg);
        if (cli_is_help(a)) return cli_help(a) + CLI_HELP_SHOWN;
        const cli_flag *f = flags;
        while (f && f->flag && !cli_is(a, f->short_name, f->long_name)) f++;
        if (f && f->flag) {
            if (cli_reject_value(a)) return CLI_EXIT_USAGE;
            *f->flag = 1;
            continue;
        }
        int rc = option(a, user);
        if (rc == CLI_OPTION_UNKNOWN) return cli_unknown_option(a);
        if (rc || (rc = cli_value_given(a))) return rc;
    }
    return 0;
}

/* The command the messages name ("plumb run: error: ..."); main sets it before dispatch. The
 * tools' one piece of process state: a message printed deep in a helper still names it. */
static const char *cli_cmd_name;

void cli_set_command(const char *name)
{
    cli_cmd_name = name;
}

static void put_prefix(void)
{
    fflush(stdout);
    if (cli_cmd_name)
        fprintf(stderr, "plumb %s: error: ", cli_cmd_name);
    else
        fputs("plumb: error: ", stderr);
}

static int usage_error(const cli_args *a, const char *fmt, va_list ap)
{
    fflush(stdout);
    fprintf(stderr, "plumb %s: error: ", a->cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nsee `plumb %s --help`\n", a->cmd);
    return CLI_EXIT_USAGE;
}

static int usage_errorf(const cli_args *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = usage_error(a, fmt, ap);
    va_end(ap);
    return rc;
}

int cli_usage_error(const cli_args *a, const char *fmt, ...)
{
    /* A known option at the end of the line without its value (cli_value_ahead): whatever its
     * parser found wrong with "", the error is the missing value. */
    if (a->value_missing) return usage_errorf(a, "option '%s' needs a value", a->arg);
    va_list ap;
    va_start(ap, fmt);
    int rc = usage_error(a, fmt, ap);
    va_end(ap);
    return rc;
}

int cli_value_given(const cli_args *a)
{
    return a->value_missing ? usage_errorf(a, "option '%s' needs a value", a->arg) : 0;
}

int cli_unknown_option(const cli_args *a)
{
    return usage_errorf(a, "unknown option '%s'", a->arg);
}

/* ---- errors ------------------------------------------------------------------------ */

const char *cli_status_words(pl_status st)
{
    switch (st) {
    case PL_OK:
        return "no error";
    case PL_ERR_INVALID_ARG:
        return "invalid argument";
    case PL_ERR_NOMEM:
        return "out of memory";
    case PL_ERR_IO:
        return "cannot read or write a file";
    case PL_ERR_FORMAT:
        return "not a valid file";
    case PL_ERR_UNSUPPORTED:
        return "not supported";
    case PL_ERR_NOT_FOUND:
        return "not found";
    case PL_ERR_TYPE:
        return "of the wrong type";
    case PL_ERR_LIMIT:
        return "over a limit";
    case PL_ERR_CONFIG:
        return "inconsistent settings";
    case PL_ERR_CONTEXT_FULL:
        return "the context is full";
    case PL_ERR_CANCELLED:
        return "cancelled";
    case PL_ERR_BUFFER_TOO_SMALL:
        return "a buffer is too small";
    }
    return "unknown error";
}

int cli_fail(pl_status st, const pl_error *err)
{
    put_prefix();
    fprintf(stderr, "%s\n", err && err->msg[0] ? err->msg : cli_status_words(st));
    return CLI_EXIT_FAIL;
}

int cli_errorf(const char *fmt, ...)
{
    va_list ap;
    put_prefix();
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

void cli_warnf(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    if (cli_cmd_name)
        fprintf(stderr, "plumb %s: warning: ", cli_cmd_name);
    else
        fputs("plumb: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_check_output(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return cli_errorf("cannot write '%s': it is a directory", path);
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (access(dir, W_OK | X_OK) != 0)
        return cli_errorf("cannot write '%s': %s (the folder '%s')", path, strerror(errno), dir);
    return 0;
}

int cli_check_input(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return cli_errorf("cannot read '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return cli_errorf("cannot read '%s': it is a directory", path);
    if (access(path, R_OK) != 0) return cli_errorf("cannot read '%s': %s", path, strerror(errno));
    return 0;
}

int cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0) return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cli_finish(int rc)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        put_prefix();
        fprintf(stderr, "cannot write the output: %s\n", e ? strerror(e) : "write error");
        return rc == CLI_EXIT_OK ? CLI_EXIT_FAIL : rc;
    }
    return rc;
}

/* ---- text -------------------------------------------------------------------------- */

size_t cli_utf8_prefix(const char *s, size_t n, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t l = pl_utf8_char(u + i, n - i);
        if (l == 0) l = 1; /* an invalid byte stands alone */
        if (i + l > max) break;
        i += l;
    }
    return i;
}

/* C1 controls (U+0080..U+009F) are valid UTF-8 but terminals act on some of them. */
static int is_c1_control(const unsigned char *s, size_t len)
{
    return len == 2 && s[0] == 0xC2 && s[1] < 0xA0;
}

/* Writes (f != NULL) or measures one escaped unit starting at s[0]; returns the bytes
 * of s consumed and adds the printed width to *width. */
static size_t escape_one(FILE *f, const unsigned char *s, size_t n, size_t *width)
{
    unsigned c = s[0];
    char buf[16];
    const char *out = NULL;
    if (c < 0x80) {
        switch (c) {
        case '\\':
            out = "\\\\";
            break;
        case '"':
            out = "\\\"";
            break;
        case '\n':
            out = "\\n";
            break;
        case '\t':
            out = "\\t";
            break;
        case '\r':
            out = "\\r";
            break;
        default:
            if (c < 0x20 || c == 0x7F) {
                snprintf(buf, sizeof buf, "\\x%02x", c);
                out = buf;
            } else {
                if (f) fputc((int)c, f);
                *width += 1;
                return 1;
            }
        }
        if (f) fputs(out, f);
        *width += strlen(out);
        return 1;
    }
    size_t len = pl_utf8_char(s, n);
    if (len == 0) {
        snprintf(buf, sizeof buf, "\\x%02x", c);
        if (f) fputs(buf, f);
        *width += 4;
        return 1;
    }
    if (is_c1_control(s, len)) {
        snprintf(buf, sizeof buf, "\\u%04x", (unsigned)(((s[0] & 0x1F) << 6) | (s[1] & 0x3F)));
        if (f) fputs(buf, f);
        *width += 6;
        return len;
    }
    if (f) fwrite(s, 1, len, f);
    *width += 1;
    return len;
}

void cli_put_escaped(FILE *f, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t width = 0;
    for (size_t i = 0; i < n;) i += escape_one(f, u + i, n - i, &width);
}

size_t cli_escaped_width(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t width = 0;
    for (size_t i = 0; i < n;) i += escape_one(NULL, u + i, n - i, &width);
    return width;
}

void cli_put_json_string(FILE *f, const char *s, size_t n)
{
    /* One character (or stray byte) at a time: its escape is at most 6 bytes. */
    const unsigned char *u = (const unsigned char *)s;
    char e[8];
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        size_t len = pl_utf8_char(u + i, n - i);
        if (len == 0) len = 1;
        fwrite(e, 1, pl_json_escape(e, sizeof e, s + i, len), f);
        i += len;
    }
    fputc('"', f);
}

void cli_format_size(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, "%.2f %s", v, units[u]);
}

static int format_special(char *buf, size_t cap, double v)
{
    if (isnan(v)) {
        snprintf(buf, cap, "nan");
        return 1;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v < 0 ? "-inf" : "inf");
        return 1;
    }
    return 0;
}

/* %g switches to an exponent once it exceeds the precision: the shortest form of 10000 is
 * "1e+04". Whole numbers below 1e16 read better written out, at the same precision. */
static void prefer_plain(char *buf, size_t cap, int p, double v)
{
    const char *e = strchr(buf, 'e');
    if (!e) return;
    int x = atoi(e + 1);
    if (x >= p && x < 16) snprintf(buf, cap, "%.*g", x + 1, v);
}

void cli_format_f32(char *buf, size_t cap, float v)
{
    if (format_special(buf, cap, (double)v)) return;
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, cap, "%.*g", p, (double)v);
        if (strtof(buf, NULL) == v) {
            prefer_plain(buf, cap, p, (double)v);
            return;
        }
    }
}

void cli_format_f64(char *buf, size_t cap, double v)
{
    if (format_special(buf, cap, v)) return;
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v) {
            prefer_plain(buf, cap, p, v);
            return;
        }
    }
}

/* "in [1, 4096]", "at least 0", "at most 1": the range a value must lie in, in words. */
static void range_words(char *buf, size_t cap, double lo, double hi, int integer)
{
    char l[32], h[32];
    snprintf(l, sizeof l, integer ? "%.0f" : "%g", lo);
    snprintf(h, sizeof h, integer ? "%.0f" : "%g", hi);
    if (isinf(lo) && isinf(hi))
        snprintf(buf, cap, "finite");
    else if (isinf(hi) || (integer && hi >= 9.2e18))
        snprintf(buf, cap, "at least %s", l);
    else if (isinf(lo))
        snprintf(buf, cap, "at most %s", h);
    else
        snprintf(buf, cap, "in [%s, %s]", l, h);
}

int cli_parse_i64(const cli_args *a, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end) return cli_usage_error(a, "%s: '%s' is not an integer", a->arg, v);
    if (errno || x < lo || x > hi) {
        char r[80];
        range_words(r, sizeof r, (double)lo, (double)hi, 1);
        return cli_usage_error(a, "%s: %s is out of range: it must be %s", a->arg, v, r);
    }
    *out = x;
    return 0;
}

int cli_parse_f64(const cli_args *a, const char *v, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || isnan(x))
        return cli_usage_error(a, "%s: '%s' is not a number", a->arg, v);
    if (!isfinite(x)) return cli_usage_error(a, "%s: '%s' is not a finite number", a->arg, v);
    if (!(x >= lo && x <= hi)) {
        char r[80];
        range_words(r, sizeof r, lo, hi, 0);
        return cli_usage_error(a, "%s: %s is out of range: it must be %s", a->arg, v, r);
    }
    *out = x;
    return 0;
}

int cli_parse_kv(const cli_args *a, const char *v, const char **out)
{
    if (strcmp(v, "f16") && strcmp(v, "f32"))
        return cli_usage_error(a, "--kv-type: '%s' is not f16 or f32", v);
    *out = v;
    return 0;
}

int cli_parse_kernels(const cli_args *a, const char *v, const char **out)
{
    pl_error err;
    /* A name no set has is a bad value (2); a set this CPU cannot run fails at run time (1). */
    if (!*v) return cli_usage_error(a, "%s needs a set name", a->arg);
    if (pl_kernel_set_check(v, &err) == PL_ERR_NOT_FOUND)
        return cli_usage_error(a, "%s: %s", a->arg, err.msg);
    *out = v;
    return 0;
}

int cli_parse_f32(const cli_args *a, const char *v, double lo, double hi, float *out)
{
    double x = 0.0;
    int rc = cli_parse_f64(a, v, lo, hi, &x);
    if (!rc) *out = (float)x;
    return rc;
}

int64_t cli_parse_tokens(const cli_args *a, const char *v, int32_t **out)
{
    int64_t n = 1;
    for (const char *p = v; *p; p++) n += *p == ',';
    int32_t *t = malloc((size_t)n * sizeof *t);
    if (!t) return cli_errorf("out of memory"), -1;
    int64_t k = 0;
    for (const char *p = v; *p;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (errno || end == p || x < 0 || x > INT32_MAX || (*end && *end != ',')) {
            free(t);
            cli_usage_error(a, "%s: '%s' is not a comma-separated list of token ids", a->arg, v);
            return -1;
        }
        t[k++] = (int32_t)x;
        p = *end ? end + 1 : end;
    }
    *out = t;
    return k;
}

/* ---- options shared by run and chat ---- */

cli_gen_opts cli_gen_defaults(void)
{
    cli_gen_opts o = {.sp = pl_sampler_default_params(), .sinks = -1, .seed = -1};
    o.repeat_last_n = o.sp.penalty_last_n;
    return o;
}

int cli_gen_check(cli_args *a, const cli_gen_opts *o)
{
    if (o->ctx && o->window)
        return cli_usage_error(a, "give either -c N or --sliding-window N, not both");
    if (o->sinks >= 0 && !o->window) return cli_usage_error(a, "--sinks needs --sliding-window");
    if (o->window && o->sinks >= o->window)
        return cli_usage_error(a, "--sinks %lld must be less than --sliding-window %lld",
                               (long long)o->sinks, (long long)o->window);
    return 0;
}

/* A float option in [lo, hi] (both finite); strictly above lo when open_lo. */
static int parse_range_f32(cli_args *a, const char *v, double lo, int open_lo, double hi,
                           float *out)
{
    double x = 0;
    int rc = cli_parse_f64(a, v, lo, hi, &x);
    if (rc) return rc;
    if (open_lo && x <= lo)
        return cli_usage_error(a, "%s: %s is out of range: it must be greater than %g", a->arg, v,
                               lo);
    *out = (float)x;
    return 0;
}

int cli_gen_option(cli_args *a, const char *v, cli_gen_opts *o, int *rc)
{
    int64_t x = 0;
    if (cli_is(a, NULL, "--temp"))
        *rc = parse_range_f32(a, v, 0, 0, INFINITY, &o->sp.temperature);
    else if (cli_is(a, NULL, "--top-k")) {
        *rc = cli_parse_i64(a, v, 0, INT32_MAX, &x);
        o->sp.top_k = (int32_t)x;
    } else if (cli_is(a, NULL, "--top-p"))
        *rc = parse_range_f32(a, v, 0, 0, 1, &o->sp.top_p);
    else if (cli_is(a, NULL, "--min-p"))
        *rc = parse_range_f32(a, v, 0, 0, 1, &o->sp.min_p);
    else if (cli_is(a, NULL, "--repeat-penalty"))
        *rc = parse_range_f32(a, v, 0, 1, INFINITY, &o->sp.repeat_penalty);
    else if (cli_is(a, NULL, "--presence-penalty"))
        *rc = parse_range_f32(a, v, -INFINITY, 0, INFINITY, &o->sp.presence_penalty);
    else if (cli_is(a, NULL, "--frequency-penalty"))
        *rc = parse_range_f32(a, v, -INFINITY, 0, INFINITY, &o->sp.freq_penalty);
    else if (cli_is(a, NULL, "--repeat-last-n"))
        *rc = cli_parse_i64(a, v, -1, INT32_MAX, &o->repeat_last_n);
    else if (cli_is(a, "-s", "--seed"))
        *rc = cli_parse_i64(a, v, -1, INT64_MAX, &o->seed);
    else if (cli_is(a, "-t", "--threads"))
        *rc = cli_parse_i64(a, v, 1, 4096, &o->threads);
    else if (cli_is(a, "-c", "--ctx"))
        *rc = cli_parse_i64(a, v, 1, INT32_MAX / 2, &o->ctx);
    else if (cli_is(a, NULL, "--sliding-window"))
        *rc = cli_parse_i64(a, v, 1, INT32_MAX / 4, &o->window);
    else if (cli_is(a, NULL, "--sinks"))
        *rc = cli_parse_i64(a, v, 0, INT32_MAX / 4, &o->sinks);
    else if (cli_is(a, NULL, "--chunk"))
        *rc = cli_parse_i64(a, v, 1, 4096, &o->chunk);
    else if (cli_is(a, NULL, "--kv-type"))
        *rc = cli_parse_kv(a, v, &o->kv);
    else if (cli_is(a, NULL, "--kernels"))
        *rc = cli_parse_kernels(a, v, &o->kernels);
    else if (cli_is(a, NULL, "--stop") || cli_is(a, "-r", "--reverse-prompt")) {
        if (o->n_stops == PL_GEN_MAX_STOP)
            *rc = cli_usage_error(a, "at most %d stop strings", PL_GEN_MAX_STOP);
        else if (!v[0] || strlen(v) > PL_GEN_MAX_STOP_LEN)
            *rc = cli_usage_error(a, "%s: a stop string is 1 to %d bytes", a->arg,
                                  PL_GEN_MAX_STOP_LEN);
        else
            o->stops[o->n_stops++] = v;
    } else
        return 0;
    return 1;
}

uint64_t cli_random_seed(void)
{
    uint64_t x = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&x, sizeof x, 1, f) != 1) x = 0;
        fclose(f);
    }
    if (!x) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
    }
    return x & (uint64_t)INT64_MAX; /* -s takes it back */
}

pl_sampler_params cli_gen_sampler(cli_gen_opts *o, int64_t ctx)
{
    pl_sampler_params sp = o->sp;
    if (o->seed < 0) o->seed = (int64_t)cli_random_seed();
    sp.seed = (uint64_t)o->seed;
    int64_t n = o->repeat_last_n < 0 ? ctx : o->repeat_last_n;
    sp.penalty_last_n = (int32_t)(n > INT32_MAX ? INT32_MAX : n);
    return sp;
}

void cli_gen_warn_ctx(const cli_gen_opts *o, const pl_model *m)
{
    pl_model_info info;
    if (pl_model_get_info(m, &info, NULL) != PL_OK || info.n_ctx_train <= 0) return;
    int64_t want = o->ctx ? o->ctx : o->window;
    if (want > info.n_ctx_train)
        cli_warnf("%s %lld is beyond the model's training context of %lld tokens: expect worse "
                  "output past %lld",
                  o->ctx ? "-c" : "--sliding-window", (long long)want, (long long)info.n_ctx_train,
                  (long long)info.n_ctx_train);
}

pl_session_params cli_gen_session(const cli_gen_opts *o, const pl_model *m)
{
    pl_session_params sp = pl_session_default_params(m);
    sp.n_threads = (int)o->threads;
    if (o->ctx) sp.context_window = o->ctx;
    if (o->window) {
        sp.context_window = 0;
        sp.sliding_window = o->window;
        sp.attention_sinks = o->sinks >= 0 ? o->sinks : (o->window > 4 ? 4 : 0);
    } else if (o->sinks >= 0) {
        sp.attention_sinks = o->sinks;
    }
    if (o->chunk) sp.prefill_chunk = o->chunk;
    if (o->kv) sp.kv_type = strcmp(o->kv, "f32") == 0 ? PL_TYPE_F32 : PL_TYPE_F16;
    sp.kernels = o->kernels;
    return sp;
}

/* ---- usage text ---- */

void cli_put_wrapped(FILE *out, int indent, int width, const char *text)
{
    int col = 0;
    for (const char *w = text; *w;) {
        while (*w == ' ') w++;
        if (!*w) break;
        int len = (int)strcspn(w, " ");
        if (col > 0 && col + 1 + len > width) {
            fputc('\n', out);
            col = 0;
        }
        if (col == 0)
            col = fprintf(out, "%*s%.*s", indent, "", len, w);
        else
            col += fprintf(out, " %.*s", len, w);
        w += len;
    }
    fputc('\n', out);
}

void cli_put_model_option(FILE *out)
{
    fputs("  -m, --model FILE         GGUF model of one of these architectures:\n", out);
    cli_put_wrapped(out, 27, 88, pl_arch_list());
}

/* ---- chat templates ---- */

int cli_tmpl_option(cli_args *a, const char *v, cli_tmpl_opts *t, int *rc)
{
    *rc = 0;
    if (cli_is(a, NULL, "--chat-template-file")) {
        t->file = v;
        return 1;
    }
    if (!cli_is(a, NULL, "--chat-template") && !cli_is(a, NULL, "--template")) return 0;
    const char *const *names = pl_chat_template_names();
    size_t i = 0;
    while (names[i] && strcmp(names[i], v)) i++;
    if (!names[i]) {
        char known[256] = "";
        for (size_t j = 0; names[j]; j++) {
            size_t l = strlen(known);
            snprintf(known + l, sizeof known - l, "%s%s", j ? ", " : "", names[j]);
        }
        *rc = cli_usage_error(a,
                              "%s: unknown built-in template '%s' (known: %s; the model's own "
                              "template is the default, --chat-template-file FILE takes any)",
                              a->arg, v, known);
        return 1;
    }
    t->name = names[i];
    return 1;
}

/* The whole file in a malloc'd buffer; NULL after printing why. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_errorf("cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += k;
        if (n == cap) {
            char *p = cap < ((size_t)64 << 20) ? realloc(buf, cap *= 2) : NULL;
            if (!p) free(buf);
            buf = p;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        cli_errorf("cannot read '%s': %s", path, bad ? "read error" : "too large (64 MiB)");
        return NULL;
    }
    *len = n;
    return buf;
}

int cli_tmpl_load(const pl_model *m, const char *path, const cli_tmpl_opts *t, int required,
                  pl_chat_template **out, char *desc, size_t desc_cap)
{
    pl_error err;
    *out = NULL;
    if (t->file) {
        size_t len = 0;
        char *src = read_all(t->file, &len);
        if (!src) return CLI_EXIT_FAIL;
        pl_status st = pl_chat_template_compile(out, src, len, &err);
        free(src);
        if (st) return cli_errorf("%s: %s", t->file, err.msg);
        snprintf(desc, desc_cap, "file %s", t->file);
    } else if (t->name) {
        pl_status st = pl_chat_template_builtin(out, t->name, &err);
        if (st) return cli_fail(st, &err);
        snprintf(desc, desc_cap, "built-in %s", t->name);
    } else {
        size_t len = 0;
        pl_status st = pl_model_chat_template(m, NULL, &len, &err);
        if (st) {
            snprintf(desc, desc_cap, "none");
            if (required)
                return cli_errorf("%s: %s; give --chat-template-file FILE or --chat-template "
                                  "NAME",
                                  path, err.msg);
            cli_warnf("%s: %s; chat requests fail until a template is given "
                      "(--chat-template-file FILE); completions work",
                      path, err.msg);
            return 0;
        }
        snprintf(desc, desc_cap, "model's own (%zu bytes of Jinja)", len);
    }
    return 0;
}
