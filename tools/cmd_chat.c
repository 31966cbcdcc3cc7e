/* cmd_chat.c — `plumb chat`: a multi-turn chat REPL over one session and its prefix cache,
 * one user message per input line, with per-turn cache statistics. Not a server, no history file.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hold.h"

static void usage(FILE *out)
{
    fputs("usage: plumb chat -m FILE [options]\n"
          "\n"
          "Chats with the model: each line read from stdin is one user message. The whole\n"
          "conversation is rendered with the chat template each turn; the session's prefix\n"
          "cache re-uses what it already holds, so a turn prefills only its new tokens. The\n"
          "reply streams to stdout; after each turn one line on stderr gives the cache path\n"
          "(fast, partial, slow), the tokens reused, prefilled and generated, the time to the\n"
          "first token, the decode speed and why the reply stopped. With stdin not a\n"
          "terminal a summary table follows the last turn.\n"
          "\n"
          "options:\n",
          out);
    cli_put_model_option(out);
    fputs("  --system TEXT            system message (first in the conversation)\n"
          "  --chat-template-file FILE\n"
          "                           chat template as Jinja source (default: the model's own\n"
          "                           tokenizer.chat_template, run by the Jinja engine)\n"
          "  --chat-template NAME     a built-in template instead: chatml, qwen2, qwen2.5,\n"
          "                           llama3, llama2, mistral (--template NAME: the same)\n"
          "  -n, --n-predict N        most tokens per reply (default -1: until the model ends\n"
          "                           its turn or the context is full)\n"
          "  --ignore-eos             never draw an end-of-generation token (turns end at -n)\n"
          "  --special                print control tokens (<|im_end|>, ...) as their text\n"
          "  -r, --reverse-prompt S, --stop S\n"
          "                           end the reply before the text S; repeatable\n"
          "  --temp F                 temperature (default 0.8; 0: greedy)\n"
          "  --top-k N                top-k (default 40; 0: off)\n"
          "  --top-p F                top-p (default 0.95; 1: off)\n"
          "  --min-p F                min-p (default 0.05; 0: off)\n"
          "  --repeat-penalty F       repetition penalty (default 1.0: off)\n"
          "  --presence-penalty F     presence penalty (default 0: off)\n"
          "  --frequency-penalty F    frequency penalty (default 0: off)\n"
          "  --repeat-last-n N        tokens the penalties look back over (default 64; 0: off;\n"
          "                           -1: the context size)\n"
          "  -s, --seed N             sampler seed (default -1: a random seed, printed)\n"
          "  -t, --threads N          threads (default: PLUMB_THREADS, else physical cores)\n"
          "  -c, --ctx N              context window in tokens (default min(train, 4096))\n"
          "  --sliding-window N       sliding window instead of a context window\n"
          "  --sinks N                attention sinks kept by the sliding window (default 4)\n"
          "  --chunk N                prefill chunk in tokens (default 256)\n"
          "  --kv-type f16|f32        KV cache element type (default f16)\n"
          "  --kernels NAME           kernel set (default: PLUMB_KERNELS, else the best)\n"
          "  --no-repack              run every weight from the mapping (no repacked copies)\n"
          "  --no-cache               forget the cache before every turn (each turn is slow),\n"
          "                           to compare\n"
          "  --stats-json FILE        write every turn's statistics to FILE as JSON\n"
          "  -v, --verbose            also print the CPU topology and thread binding\n"
          "  -h, --help               show this help\n"
          "\n"
          "commands (a line that starts with '/'; '//' sends a message starting with '/'):\n"
          "  /reset                   forget the conversation (the system message stays)\n"
          "  /stats                   the session's totals and every turn so far\n"
          "  /save FILE               write the conversation to FILE as JSON\n"
          "  /quit                    end (as does end of input)\n"
          "\n"
          "When the context window is full, a terminal is asked whether to reset and go on;\n"
          "with stdin a pipe the conversation is reset (system message kept) and the message\n"
          "sent again, and stderr says so. Ctrl-C stops a reply; at the prompt it ends.\n",
          out);
}

typedef struct chat_opts {
    const char *model, *system, *stats_json;
    cli_tmpl_opts tmpl;
    int64_t n_predict;
    int ignore_eos, verbose, no_repack, no_cache, special;
    cli_gen_opts g;
} chat_opts;

/* One finished turn, as the per-turn line, the summary table and --stats-json show it. */
typedef struct chat_turn {
    int turn;
    pl_chat_stats st;
} chat_turn;

typedef struct chat {
    const chat_opts *o;
    char tmpl_name[128];    /* the template in use (for /save and the banner) */
    pl_chat_template *tmpl; /* NULL: the model's own */
    const pl_model *m;
    pl_session *s;
    pl_sampler *smp;
    int tty;               /* stdin is a terminal: prompts, questions, Ctrl-C */
    pl_chat_message *msgs; /* contents are malloc'd; roles are literals */
    size_t n_msgs, cap_msgs;
    chat_turn *turns;
    size_t n_turns, cap_turns;
    char *reply; /* the text delivered this turn */
    size_t reply_len, reply_cap;
    int reply_oom;
    int resets;  /* conversations reset because the context was full */
    int dropped; /* messages dropped: too long for even a new conversation */
    hold shown;  /* what is printed: control tokens' text dropped unless --special */
} chat;

/* Ctrl-C on a terminal: cancels the reply being generated, or ends the loop at the prompt. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* One option of the command line (cli_parse_options). */
static int option(cli_args *a, void *user)
{
    chat_opts *o = user;
    const char *v = cli_value_ahead(a);
    int rc = 0;
    if (cli_is(a, "-m", "--model"))
        o->model = v;
    else if (cli_is(a, NULL, "--system"))
        o->system = v;
    else if (cli_tmpl_option(a, v, &o->tmpl, &rc))
        ;
    else if (cli_is(a, "-n", "--n-predict"))
        rc = cli_parse_i64(a, v, -1, INT32_MAX, &o->n_predict);
    else if (cli_gen_option(a, v, &o->g, &rc))
        ;
    else if (cli_is(a, NULL, "--stats-json"))
        o->stats_json = v;
    else
        return CLI_OPTION_UNKNOWN;
    return rc;
}

static int parse(int argc, char **argv, chat_opts *o)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "chat", usage);
    const cli_flag flags[] = {
        {NULL, "--ignore-eos", &o->ignore_eos}, {"-v", "--verbose", &o->verbose},
        {NULL, "--no-repack", &o->no_repack},   {NULL, "--no-cache", &o->no_cache},
        {NULL, "--special", &o->special},       {NULL, NULL, NULL},
    };
    int rc = cli_parse_options(&a, flags, option, o);
    if (rc) return rc;
    if (!o->model) return cli_usage_error(&a, "no model: give -m FILE");
    rc = cli_gen_check(&a, &o->g);
    if (rc) return rc;
    return 0;
}

/* ---- the conversation ---------------------------------------------------------------- */

static int push_message(chat *c, const char *role, const char *text, size_t len)
{
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? 2 * c->cap_msgs : 16;
        pl_chat_message *m = realloc(c->msgs, cap * sizeof *m);
        if (!m) return -1;
        c->msgs = m;
        c->cap_msgs = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, text, len);
    copy[len] = 0;
    c->msgs[c->n_msgs++] = (pl_chat_message){.role = role, .content = copy};
    return 0;
}

static void pop_message(chat *c)
{
    free((char *)c->msgs[--c->n_msgs].content);
}

/* Forgets the conversation and the cache; the system message stays. */
static void reset_conversation(chat *c)
{
    size_t keep = c->o->system ? 1 : 0;
    while (c->n_msgs > keep) pop_message(c);
    pl_chat_reset(c->s);
}

static int on_text(void *user, const char *text, size_t len)
{
    chat *c = user;
    if (c->reply_len + len + 1 > c->reply_cap) {
        size_t cap = c->reply_cap ? c->reply_cap : 256;
        while (cap < c->reply_len + len + 1) cap *= 2;
        char *r = realloc(c->reply, cap);
        if (!r) {
            c->reply_oom = 1;
            return 1;
        }
        c->reply = r;
        c->reply_cap = cap;
    }
    memcpy(c->reply + c->reply_len, text, len);
    c->reply_len += len;
    c->reply[c->reply_len] = 0;
    if (hold_push(&c->shown, stdout, text, len) < 0) {
        c->reply_oom = 1;
        return 1;
    }
    fflush(stdout);
    return interrupted || ferror(stdout);
}

static int record_turn(chat *c, const pl_chat_stats *st)
{
    if (c->n_turns == c->cap_turns) {
        size_t cap = c->cap_turns ? 2 * c->cap_turns : 16;
        chat_turn *t = realloc(c->turns, cap * sizeof *t);
        if (!t) return -1;
        c->turns = t;
        c->cap_turns = cap;
    }
    c->turns[c->n_turns] = (chat_turn){.turn = (int)c->n_turns + 1, .st = *st};
    c->n_turns++;
    return 0;
}

/* ---- reports --------------------------------------------------------------------------- */

static void print_turn_line(const chat_turn *t)
{
    const pl_chat_stats *s = &t->st;
    fprintf(stderr,
            "turn %d: path %s, reused %lld, prefilled %lld, generated %lld, ttft %.2f ms, "
            "%.1f tok/s, stop %s\n",
            t->turn, pl_chat_path_str(s->path), (long long)s->n_reused, (long long)s->n_prefilled,
            (long long)s->n_generated, s->gen.ttft_ms, s->gen.decode_tps,
            pl_stop_reason_str(s->gen.stop));
}

static void print_table(const chat *c)
{
    fprintf(stderr, "| turn | path    | reused | prefilled | generated |  ttft ms | prefill ms |"
                    "   tok/s | stop         |\n"
                    "|-----:|---------|-------:|----------:|----------:|---------:|-----------:|"
                    "--------:|--------------|\n");
    for (size_t i = 0; i < c->n_turns; i++) {
        const pl_chat_stats *s = &c->turns[i].st;
        fprintf(stderr, "| %4d | %-7s | %6lld | %9lld | %9lld | %8.2f | %10.2f | %7.1f | %-12s |\n",
                c->turns[i].turn, pl_chat_path_str(s->path), (long long)s->n_reused,
                (long long)s->n_prefilled, (long long)s->n_generated, s->gen.ttft_ms,
                s->gen.prefill_ms, s->gen.decode_tps, pl_stop_reason_str(s->gen.stop));
    }
}

static void print_totals(const chat *c)
{
    int64_t reused = 0, prefilled = 0, generated = 0, paths[4] = {0};
    double ttft = 0, prefill_ms = 0, decode_ms = 0, decoded = 0;
    for (size_t i = 0; i < c->n_turns; i++) {
        const pl_chat_stats *s = &c->turns[i].st;
        reused += s->n_reused;
        prefilled += s->n_prefilled;
        generated += s->n_generated;
        if (s->path >= PL_CHAT_FAST && s->path <= PL_CHAT_SLOW) paths[s->path]++;
        ttft += s->gen.ttft_ms;
        prefill_ms += s->gen.prefill_ms;
        /* decode_tps counts the tokens after the first: weight the rates by their time. */
        if (s->gen.decode_tps > 0) {
            decode_ms += s->gen.decode_ms;
            decoded += s->gen.decode_tps * s->gen.decode_ms * 1e-3;
        }
    }
    pl_session_info si = {0};
    pl_session_get_info(c->s, &si, NULL);
    fprintf(stderr,
            "session: %zu turns (fast %lld, partial %lld, slow %lld), %d context resets; tokens "
            "reused %lld, prefilled %lld, generated %lld; ttft mean %.2f ms; prefill %.1f ms in "
            "all; decode %.1f tok/s; history %lld tokens (KV cache capacity %lld)\n",
            c->n_turns, (long long)paths[PL_CHAT_FAST], (long long)paths[PL_CHAT_PARTIAL],
            (long long)paths[PL_CHAT_SLOW], c->resets, (long long)reused, (long long)prefilled,
            (long long)generated, c->n_turns ? ttft / (double)c->n_turns : 0.0, prefill_ms,
            decode_ms > 0 ? decoded / (decode_ms * 1e-3) : 0.0, (long long)pl_session_n_past(c->s),
            (long long)si.kv_capacity);
}

static void put_json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.3f", v);
    else
        fputs("null", f);
}

/* 0, or -1 with errno set (a write error). */
static int write_stats_json(FILE *f, const chat *c)
{
    fputs("[", f);
    for (size_t i = 0; i < c->n_turns; i++) {
        const pl_chat_stats *s = &c->turns[i].st;
        fprintf(f,
                "%s\n  {\"turn\": %d, \"path\": \"%s\", \"reused\": %lld, \"prefilled\": %lld, "
                "\"generated\": %lld, \"ttft_ms\": ",
                i ? "," : "", c->turns[i].turn, pl_chat_path_str(s->path), (long long)s->n_reused,
                (long long)s->n_prefilled, (long long)s->n_generated);
        put_json_number(f, s->gen.ttft_ms);
        fputs(", \"prefill_ms\": ", f);
        put_json_number(f, s->gen.prefill_ms);
        fputs(", \"decode_tps\": ", f);
        put_json_number(f, s->gen.decode_tps);
        fprintf(f, ", \"stop\": \"%s\"}", pl_stop_reason_str(s->gen.stop));
    }
    fputs(c->n_turns ? "\n]\n" : "]\n", f);
    return fflush(f) || ferror(f) ? -1 : 0;
}

static void save_conversation(const chat *c, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "plumb chat: cannot save to '%s': %s\n", path, strerror(errno));
        return;
    }
    fputs("{\"template\": ", f);
    cli_put_json_string(f, c->tmpl_name, strlen(c->tmpl_name));
    fputs(", \"messages\": [", f);
    for (size_t i = 0; i < c->n_msgs; i++) {
        fputs(i ? ",\n  {\"role\": " : "\n  {\"role\": ", f);
        cli_put_json_string(f, c->msgs[i].role, strlen(c->msgs[i].role));
        fputs(", \"content\": ", f);
        cli_put_json_string(f, c->msgs[i].content, strlen(c->msgs[i].content));
        fputs("}", f);
    }
    fputs(c->n_msgs ? "\n]}\n" : "]}\n", f);
    int bad = fflush(f) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        fprintf(stderr, "plumb chat: cannot save to '%s': %s\n", path,
                e ? strerror(e) : "write error");
    else
        fprintf(stderr, "saved %zu messages to %s\n", c->n_msgs, path);
}

/* ---- the loop ------------------------------------------------------------------------ */

/* One line of stdin without its line end into *line (getline's buffer); -1 at end of input
 * or when Ctrl-C interrupted the read. */
static ssize_t read_line(char **line, size_t *cap)
{
    errno = 0;
    ssize_t n = getline(line, cap, stdin);
    if (n < 0) return -1;
    if (n > 0 && (*line)[n - 1] == '\n') (*line)[--n] = 0;
    if (n > 0 && (*line)[n - 1] == '\r') (*line)[--n] = 0;
    return n;
}

/* Asks the terminal a yes/no question; no unless the answer starts with y. */
static int ask_yes(const char *question)
{
    fprintf(stderr, "%s [y/N] ", question);
    fflush(stderr);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = read_line(&line, &cap);
    int yes = n > 0 && (line[0] == 'y' || line[0] == 'Y');
    free(line);
    if (n < 0) clearerr(stdin);
    return yes;
}

/* Renders the conversation and generates the reply. */
static pl_status generate_reply(chat *c, pl_chat_stats *st, pl_error *err)
{
    if (c->o->no_cache) pl_chat_reset(c->s);
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = c->o->n_predict < 0 ? INT32_MAX : c->o->n_predict;
    gp.ignore_eog = c->o->ignore_eos;
    gp.stops = c->o->g.stops;
    gp.n_stops = c->o->g.n_stops;
    c->reply_len = 0;
    c->reply_oom = 0;
    interrupted = 0;
    pl_status s =
        pl_chat_messages_with(c->s, c->tmpl, c->msgs, c->n_msgs, c->smp, &gp, on_text, c, st, err);
    hold_flush(&c->shown, stdout);
    return s;
}

/* msgs rendered with the chat's template and the assistant's opening (malloc'd), or NULL. */
static char *render(const chat *c, const pl_chat_message *msgs, size_t n, size_t *len)
{
    char *buf = NULL;
    *len = 0;
    if (pl_chat_render_with(c->m, c->tmpl, msgs, n, 1, NULL, 0, len, NULL) ==
            PL_ERR_BUFFER_TOO_SMALL &&
        (buf = malloc(*len + 1)) &&
        pl_chat_render_with(c->m, c->tmpl, msgs, n, 1, buf, *len + 1, len, NULL)) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* The tokens of the conversation [system, user text] with the assistant's opening, or -1
 * when that cannot be told (then a reset is tried anyway). */
static int64_t tokens_alone(const chat *c, const char *text)
{
    pl_chat_message msgs[2];
    size_t n = 0;
    if (c->o->system) msgs[n++] = c->msgs[0];
    msgs[n++] = (pl_chat_message){.role = "user", .content = text};
    size_t len = 0, n_ids = 0;
    int64_t count = -1;
    char *buf = NULL;
    int32_t *ids = NULL;
    if (!(buf = render(c, msgs, n, &len))) goto out;
    pl_tokenize(c->m, buf, len, PL_TOKENIZE_PARSE_SPECIAL, NULL, 0, &n_ids, NULL);
    if (!(ids = malloc((n_ids + 1) * sizeof *ids)) ||
        pl_tokenize(c->m, buf, len, PL_TOKENIZE_PARSE_SPECIAL, ids, n_ids + 1, &n_ids, NULL))
        goto out;
    count = (int64_t)n_ids;
out:
    free(buf);
    free(ids);
    return count;
}

/* The tokens of the whole conversation rendered with the assistant's opening, or -1. */
static int64_t tokens_conversation(const chat *c)
{
    size_t len = 0, n_ids = 0;
    int64_t count = -1;
    char *buf = NULL;
    if (!(buf = render(c, c->msgs, c->n_msgs, &len))) goto out;
    if (pl_tokenize(c->m, buf, len, PL_TOKENIZE_PARSE_SPECIAL, NULL, 0, &n_ids, NULL) == PL_OK ||
        n_ids > 0)
        count = (int64_t)n_ids;
out:
    free(buf);
    return count;
}

/* One user message: generate, and on a full context reset (ask on a terminal) and retry.
 * 0 when the loop goes on (also when the message was dropped), else the exit code. */
static int user_turn(chat *c, const char *text, size_t len)
{
    pl_error err;
    if (push_message(c, "user", text, len)) return cli_errorf("out of memory");
    size_t first = c->o->system ? 1 : 0;
    for (;;) {
        pl_chat_stats st;
        memset(&st, 0, sizeof st);
        pl_status s = generate_reply(c, &st, &err);
        if (s == PL_ERR_CONTEXT_FULL) {
            fflush(stdout);
            pl_session_info si = {0};
            pl_session_get_info(c->s, &si, NULL);
            int64_t n_conv = tokens_conversation(c);
            if (n_conv > 0)
                fprintf(stderr,
                        "plumb chat: the conversation is %lld token%s; the context (-c) is %lld\n",
                        (long long)n_conv, cli_s(n_conv), (long long)si.kv_capacity);
            else
                fprintf(stderr, "plumb chat: the context (-c %lld) is full (%s)\n",
                        (long long)si.kv_capacity, err.msg);
            int alone = c->n_msgs == first + 1;
            int64_t n_alone = alone ? -1 : tokens_alone(c, c->msgs[c->n_msgs - 1].content);
            if (alone || n_alone > si.kv_capacity) {
                fprintf(stderr,
                        "plumb chat: this message does not fit the context (-c %lld) even in a "
                        "new conversation; it was dropped%s (raise -c or send a shorter one)\n",
                        (long long)si.kv_capacity, alone ? "" : ", the conversation is kept");
                pop_message(c);
                c->dropped++;
                return 0;
            }
            if (c->tty && !ask_yes("reset the conversation and continue?")) {
                fprintf(stderr, "plumb chat: message dropped; the conversation is kept "
                                "(/reset starts over, /save FILE keeps it)\n");
                pop_message(c);
                return 0;
            }
            if (!c->tty)
                fprintf(stderr,
                        "plumb chat: resetting the conversation%s and sending the message "
                        "again\n",
                        c->o->system ? " (the system message is kept)" : "");
            /* Keep the user's message: it is the last one, moved after the system message. */
            pl_chat_message user = c->msgs[--c->n_msgs];
            reset_conversation(c);
            c->msgs[c->n_msgs++] = user;
            c->resets++;
            continue;
        }
        if (s) {
            if (c->reply_len) fputc('\n', stdout);
            return cli_fail(s, &err);
        }
        if (c->reply_oom) return cli_errorf("out of memory");
        fputc('\n', stdout);
        fflush(stdout);
        if (ferror(stdout)) return cli_finish(CLI_EXIT_OK);
        /* The reply as delivered is what the session now holds after the prompt. */
        if (push_message(c, "assistant", c->reply_len ? c->reply : "", c->reply_len) ||
            record_turn(c, &st))
            return cli_errorf("out of memory");
        print_turn_line(&c->turns[c->n_turns - 1]);
        if (st.gen.stop == PL_STOP_CONTEXT_FULL)
            fprintf(stderr,
                    "plumb chat: the context (-c %lld) is full: the reply was cut after %lld "
                    "token%s (the next message will need a reset; raise -c for more)\n",
                    (long long)pl_session_n_past(c->s), (long long)st.n_generated,
                    cli_s(st.n_generated));
        else if (st.gen.stop == PL_STOP_CANCELLED)
            fprintf(stderr, "plumb chat: reply stopped (Ctrl-C)\n");
        interrupted = 0;
        return 0;
    }
}

/* A line starting with '/': 1 to end the loop, 0 to go on. */
static int command(chat *c, char *line)
{
    char *arg = line + strcspn(line, " \t");
    if (*arg) *arg++ = 0;
    arg += strspn(arg, " \t");
    if (strcmp(line, "/quit") == 0 || strcmp(line, "/exit") == 0) return 1;
    if (strcmp(line, "/reset") == 0) {
        reset_conversation(c);
        fprintf(stderr, "conversation reset%s\n",
                c->o->system ? " (the system message is kept)" : "");
    } else if (strcmp(line, "/stats") == 0) {
        if (c->n_turns) print_table(c);
        print_totals(c);
    } else if (strcmp(line, "/save") == 0) {
        if (!*arg)
            fprintf(stderr, "plumb chat: usage: /save FILE\n");
        else
            save_conversation(c, arg);
    } else if (strcmp(line, "/help") == 0) {
        fprintf(stderr, "commands: /reset, /stats, /save FILE, /quit; '//' starts a message "
                        "with '/'\n");
    } else {
        fprintf(stderr,
                "plumb chat: unknown command '%s' (commands: /reset, /stats, /save FILE, "
                "/quit; '//' starts a message with '/')\n",
                line);
    }
    return 0;
}

static int loop(chat *c)
{
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    for (;;) {
        if (c->tty) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        interrupted = 0;
        ssize_t n = read_line(&line, &cap);
        if (n < 0) {
            if (c->tty) fputc('\n', stdout);
            break;
        }
        if (n == 0) continue;
        if (line[0] == '/' && line[1] != '/') {
            if (command(c, line)) break;
            continue;
        }
        const char *text = line[0] == '/' ? line + 1 : line;
        if ((rc = user_turn(c, text, (size_t)n - (size_t)(text - line)))) break;
    }
    free(line);
    return rc;
}

static void print_size(const char *label, uint64_t bytes)
{
    char b[32];
    cli_format_size(b, sizeof b, bytes);
    fprintf(stderr, "%s%s", label, b);
}

int cmd_chat(int argc, char **argv)
{
    chat_opts o = {.n_predict = -1, .g = cli_gen_defaults()};
    int rc = parse(argc, argv, &o);
    if (rc) return rc >= 100 ? rc - 100 : rc;

    chat c = {.o = &o, .tty = isatty(fileno(stdin))};
    pl_error err;
    pl_model *m = NULL;
    FILE *stats_f = NULL;
    pl_status st;
    struct sigaction old_int;
    int sig_set = 0;

    /* Open the statistics file first: a bad path fails before the model loads. */
    if (o.stats_json && !(stats_f = fopen(o.stats_json, "w"))) {
        rc = cli_errorf("cannot write '%s': %s", o.stats_json, strerror(errno));
        goto out;
    }
    const pl_model_params mp = {.flags = o.no_repack ? PL_MODEL_NO_REPACK : 0u,
                                .kernels = o.g.kernels};
    if ((st = pl_model_load(&m, o.model, &mp, &err))) goto fail;
    c.m = m;
    if ((rc = cli_tmpl_load(m, o.model, &o.tmpl, 1, &c.tmpl, c.tmpl_name, sizeof c.tmpl_name)))
        goto out;

    pl_session_params sp = cli_gen_session(&o.g, m);
    cli_gen_warn_ctx(&o.g, m);
    if ((st = pl_session_new(&c.s, m, &sp, &err))) goto fail;
    pl_model_info info;
    pl_model_get_info(m, &info, NULL);
    pl_session_info si;
    pl_session_get_info(c.s, &si, NULL);
    pl_sampler_params smp_params = cli_gen_sampler(&o.g, si.kv_capacity);
    if ((st = pl_sampler_new(&c.smp, m, &smp_params, &err))) goto fail;
    if ((o.special ? hold_init(&c.shown, HOLD_DROP, NULL, 0) : hold_init_control(&c.shown, m))) {
        rc = cli_errorf("out of memory");
        goto out;
    }
    fprintf(stderr, "model: %s, %lld layers, n_embd %lld, vocab %lld; ", info.arch,
            (long long)info.n_layer, (long long)info.n_embd, (long long)info.n_vocab);
    print_size("weights ", info.weight_bytes);
    print_size(", KV cache ", si.kv_bytes);
    fprintf(stderr, " (%lld tokens%s); %d threads, kernels %s; template %s%s\n",
            (long long)si.kv_capacity, o.g.window ? ", sliding window" : "", si.n_threads,
            si.kernels, c.tmpl_name, o.no_cache ? "; --no-cache: every turn starts over" : "");
    fprintf(stderr, "seed: %lld (-s %lld repeats this conversation)\n", (long long)o.g.seed,
            (long long)o.g.seed);
    if (o.verbose) {
        char report[4096];
        pl_session_threads_report(c.s, 0, report, sizeof report, NULL, NULL);
        fprintf(stderr, "%s", report);
    }
    if (c.tty) {
        fputs("type a message and press Enter; /reset, /stats, /save FILE, /quit (Ctrl-C stops "
              "a reply, Ctrl-D ends)\n",
              stderr);
        struct sigaction sa = {0};
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask); /* no SA_RESTART: Ctrl-C at the prompt ends the read */
        sigaction(SIGINT, &sa, &old_int);
        sig_set = 1;
    }

    if (o.system && push_message(&c, "system", o.system, strlen(o.system))) {
        rc = cli_errorf("out of memory");
        goto out;
    }
    rc = loop(&c);
    if (!c.tty && c.n_turns && !rc) {
        print_table(&c);
        print_totals(&c);
    }
    /* the conversation went on, but not every message was answered: a script must know */
    if (!rc && c.dropped)
        rc = cli_errorf("%d message%s dropped: too long for the context even in a new "
                        "conversation (raise -c)",
                        c.dropped, cli_s(c.dropped));
    goto out;
fail:
    rc = cli_fail(st, &err);
out:
    if (sig_set) sigaction(SIGINT, &old_int, NULL);
    if (stats_f) {
        int bad = write_stats_json(stats_f, &c);
        int e = errno;
        if (fclose(stats_f) != 0) bad = 1;
        if (bad && rc == CLI_EXIT_OK)
            rc = cli_errorf("cannot write '%s': %s", o.stats_json, e ? strerror(e) : "error");
    }
    while (c.n_msgs) pop_message(&c);
    free(c.msgs);
    free(c.turns);
    free(c.reply);
    hold_free(&c.shown);
    pl_sampler_free(c.smp);
    pl_session_free(c.s);
    pl_chat_template_free(c.tmpl);
    pl_model_free(m);
    return cli_finish(rc);
}
