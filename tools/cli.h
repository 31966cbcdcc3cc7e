/* cli.h — what the plumb command's subcommands share: the command table entry, argument
 * parsing, error reporting, escaping for terminals and JSON. Tools only; not the library. */
#ifndef PLUMB_TOOLS_CLI_H
#define PLUMB_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plumb.h"

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* Exit codes of every command: success, a failure while doing the work (the library's
 * error, a write error), a command line that makes no sense (usage printed); and the shell's
 * 128 + SIGINT for work that Ctrl-C ended early, after its report. */
enum { CLI_EXIT_OK = 0, CLI_EXIT_FAIL = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_INTERRUPTED = 130 };

/* One subcommand. argv[0] is the command's name; the return value is the exit code. */
typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help; /* one line, shown by `plumb --help` */
} cli_command;

/* The subcommands, one file each (cmd_<name>.c). */
int cmd_inspect(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_mkmodel(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* ---- argument parsing -------------------------------------------------------------
 * A loop over argv[1..argc) for one command:
 *     cli_args a;
 *     cli_args_init(&a, argc, argv, "inspect", usage);
 *     for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
 *         if (k == CLI_ARG_POSITIONAL) { ...a.arg...; continue; }
 *         if (cli_is_help(&a)) return cli_help(&a);
 *         if (cli_is(&a, NULL, "--json")) { json = 1; continue; }
 *         if (cli_is(&a, "-t", "--threads")) { if (!(v = cli_value(&a))) return CLI_EXIT_USAGE; }
 *         return cli_unknown_option(&a);
 *     }
 * Options may come before or after positionals; "--" ends options; "-" is positional. */
enum { CLI_ARG_END = 0, CLI_ARG_OPTION = 1, CLI_ARG_POSITIONAL = 2 };

typedef struct cli_args {
    int argc;
    char **argv;
    int i;                    /* index of the current argument */
    const char *cmd;          /* "inspect": messages say "plumb inspect ..." */
    void (*usage)(FILE *out); /* prints the command's full usage */
    const char *arg;          /* the current argument */
    const char *inline_value; /* VALUE of "--name=VALUE", else NULL */
    int options_done;         /* set after "--" */
    int value_missing;        /* cli_value_ahead found no value: the line ended */
} cli_args;

void cli_args_init(cli_args *a, int argc, char **argv, const char *cmd, void (*usage)(FILE *));
int cli_next(cli_args *a);
/* 1 if the current option is short_name ("-t") or long_name ("--threads", also matching
 * "--threads=VALUE"); either may be NULL. */
int cli_is(cli_args *a, const char *short_name, const char *long_name);
/* The current option's value ("--name=VALUE" or the next argument). NULL when missing,
 * after printing the usage error. */
const char *cli_value(cli_args *a);
/* For a command that takes the value before it matches the option (its flags matched first):
 * the value, or "" with a->value_missing set when the line ends there, so that a mistyped
 * last option is still reported as unknown by cli_unknown_option. Every usage error after
 * that says the option needs a value; cli_value_given, after the option matched, says so for
 * the options that took "" without complaint: 0, or CLI_EXIT_USAGE after the message. */
const char *cli_value_ahead(cli_args *a);
int cli_value_given(const cli_args *a);
/* An option that takes no value but was given one ("--json=1"): 1 after printing the
 * usage error, else 0. */
int cli_reject_value(cli_args *a);
int cli_is_help(cli_args *a);    /* -h or --help */
int cli_help(const cli_args *a); /* prints the usage to stdout; returns CLI_EXIT_OK */

/* "plumb CMD: error: <message>" and "see `plumb CMD --help`" on stderr; returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const cli_args *a, const char *fmt, ...) CLI_PRINTF(2, 3);
int cli_unknown_option(const cli_args *a);

/* Option values, for the current option (messages name it): 0 on success, otherwise the
 * usage error was printed and CLI_EXIT_USAGE is returned. Numbers must lie in [lo, hi]. */
int cli_parse_i64(const cli_args *a, const char *v, int64_t lo, int64_t hi, int64_t *out);
int cli_parse_f64(const cli_args *a, const char *v, double lo, double hi, double *out);
int cli_parse_f32(const cli_args *a, const char *v, double lo, double hi, float *out);
/* --kv-type: v is "f16" or "f32" (*out = v), else a usage error. */
int cli_parse_kv(const cli_args *a, const char *v, const char **out);
/* --kernels: v names a compiled kernel set (*out = v), else a usage error. */
int cli_parse_kernels(const cli_args *a, const char *v, const char **out);
/* "1,2,3" -> a malloc'd array of token ids; the count, or -1 after a usage error. */
int64_t cli_parse_tokens(const cli_args *a, const char *v, int32_t **out);

/* The options loop of a command that takes no positional argument, one for all of them:
 *     cli_args a;
 *     cli_args_init(&a, argc, argv, "run", usage);
 *     const cli_flag flags[] = {{"-v", "--verbose", &o->verbose}, {NULL, NULL, NULL}};
 *     int rc = cli_parse_options(&a, flags, option, o);
 * A positional is "unexpected argument"; -h/--help prints the usage (returns CLI_HELP_SHOWN:
 * the command exits 0); a flag of flags[] (NULL-terminated; may be NULL) is set to 1 and refuses
 * a value; any other option goes to option(a, user), which takes its value (cli_value_ahead, or
 * first a check of its own) and returns 0, an exit code after a usage error, or
 * CLI_OPTION_UNKNOWN ("unknown option"); then a missing value is said (cli_value_given).
 * Returns 0 when the whole line was read, else the exit code (+ 100 for help). */
enum { CLI_OPTION_UNKNOWN = -1, CLI_HELP_SHOWN = CLI_EXIT_OK + 100 };
typedef struct cli_flag {
    const char *short_name, *long_name;
    int *flag;
} cli_flag;
typedef int (*cli_option_fn)(cli_args *a, void *user);
int cli_parse_options(cli_args *a, const cli_flag *flags, cli_option_fn option, void *user);

/* ---- errors ---------------------------------------------------------------------- */
/* Every message of a command starts "plumb CMD: error: " (main sets CMD before dispatch;
 * "plumb: error: " before that). */
void cli_set_command(const char *name);
/* A status in words ("cannot read or write a file"), for a library error without a message. */
const char *cli_status_words(pl_status st);
/* "plumb CMD: error: <message>" (the status in words when there is none) on stderr; returns
 * CLI_EXIT_FAIL. */
int cli_fail(pl_status st, const pl_error *err);
/* "plumb CMD: error: <formatted>" on stderr; returns CLI_EXIT_FAIL. */
int cli_errorf(const char *fmt, ...) CLI_PRINTF(1, 2);
/* "plumb CMD: warning: <formatted>" on stderr. */
void cli_warnf(const char *fmt, ...) CLI_PRINTF(1, 2);
/* "" for 1, "s" otherwise: "%lld token%s". */
static inline const char *cli_s(int64_t n)
{
    return n == 1 ? "" : "s";
}
/* Paths the user typed, checked before the long work so that a message names them (not an
 * internal OUT.tmp): 0, or CLI_EXIT_FAIL after the message. An output's folder must be
 * writable and the output not a directory; an input must be a readable file. */
int cli_check_output(const char *path);
int cli_check_input(const char *path);
/* 1 if a and b name the same file (the same string, or the same device and inode). */
int cli_same_file(const char *a, const char *b);
/* Flushes stdout; a write error (full disk, closed pipe) turns rc into CLI_EXIT_FAIL. */
int cli_finish(int rc);

/* ---- text ------------------------------------------------------------------------ */
/* (The length of a UTF-8 character is the library's pl_utf8_char.) */
/* The longest prefix of s[0..n) of at most max bytes that does not split a UTF-8
 * sequence. */
size_t cli_utf8_prefix(const char *s, size_t n, size_t max);
/* For terminals: valid UTF-8 is kept; \\, \", \n, \t, \r are escaped; other control
 * bytes, DEL and bytes of invalid UTF-8 become \xNN. cli_escaped_width counts the
 * code points that cli_put_escaped would print (for column alignment). */
void cli_put_escaped(FILE *f, const char *s, size_t n);
size_t cli_escaped_width(const char *s, size_t n);
/* The options `plumb run` and `plumb chat` share: sampling (--temp --top-k --top-p --min-p
 * --repeat-penalty --presence-penalty --frequency-penalty --repeat-last-n -s), stop strings
 * (--stop, -r/--reverse-prompt) and the session (-t -c --sliding-window --sinks --chunk
 * --kv-type --kernels). sinks is -1 until given; seed -1 is a random seed, drawn by
 * cli_gen_sampler; repeat_last_n -1 is the context size. */
typedef struct cli_gen_opts {
    pl_sampler_params sp;
    int64_t seed, repeat_last_n;
    int64_t threads, ctx, window, sinks, chunk;
    const char *kv, *kernels;
    const char *stops[PL_GEN_MAX_STOP];
    size_t n_stops;
} cli_gen_opts;
cli_gen_opts cli_gen_defaults(void);
/* 1 if a's current option is one of them: its value v is parsed into o and *rc set (0, or
 * the exit code of a usage error); 0 if it is not one of them. */
int cli_gen_option(cli_args *a, const char *v, cli_gen_opts *o, int *rc);
/* After the options: usage errors for the combinations that cannot go together (-c with
 * --sliding-window, --sinks without it or not below it). Returns 0 or the exit code. */
int cli_gen_check(cli_args *a, const cli_gen_opts *o);
/* The sampler parameters for a session of ctx tokens: a random seed drawn into o->seed when
 * it is -1 (so that it can be printed), --repeat-last-n -1 resolved to ctx. */
pl_sampler_params cli_gen_sampler(cli_gen_opts *o, int64_t ctx);
uint64_t cli_random_seed(void);
/* Warns when -c (or --sliding-window) is beyond the model's training context. */
void cli_gen_warn_ctx(const cli_gen_opts *o, const pl_model *m);
/* m's default session parameters with these options applied. */
pl_session_params cli_gen_session(const cli_gen_opts *o, const pl_model *m);

/* The chat template options of chat and serve: --chat-template NAME (a built-in; --template is
 * the older spelling) and --chat-template-file FILE (Jinja source, as llama-server takes it). */
typedef struct cli_tmpl_opts {
    const char *name, *file;
} cli_tmpl_opts;
/* 1 if a's current option is one of them (*rc as cli_gen_option), else 0. */
int cli_tmpl_option(cli_args *a, const char *v, cli_tmpl_opts *t, int *rc);
/* The text a command evaluates: -p/--prompt TEXT, -f/--file FILE or --tokens LIST (run,
 * logits). tokens is malloc'd (the command frees it). */
typedef struct cli_text_opts {
    const char *prompt, *file;
    int32_t *tokens;
    int64_t n_tokens;
} cli_text_opts;
/* 1 if a's current option is one of them (*rc as cli_gen_option), else 0. */
int cli_text_option(cli_args *a, const char *v, cli_text_opts *t, int *rc);
/* How many of the three were given (a command wants exactly one). */
int cli_text_sources(const cli_text_opts *t);

/* How a command that evaluates without generating runs: -t/--threads N, --kv-type f16|f32,
 * --kernels SET (logits, perplexity). */
typedef struct cli_engine_opts {
    int64_t threads;
    const char *kv, *kernels;
} cli_engine_opts;
/* 1 if a's current option is one of them (*rc as cli_gen_option), else 0. */
int cli_engine_option(cli_args *a, const char *v, cli_engine_opts *e, int *rc);

/* The template the options choose, for model m (loaded from path): *out NULL means the model's
 * own. Prints one line on stderr saying which template renders the chats, or why the model's
 * does not compile (then *out is NULL and, when required, the exit code is returned). desc gets
 * a short description ("model's own (N bytes of Jinja)", "built-in chatml", "file FILE"). Returns 0
 * or an exit code. */
int cli_tmpl_load(const pl_model *m, const char *path, const cli_tmpl_opts *t, int required,
                  pl_chat_template **out, char *desc, size_t desc_cap);

/* Words of text (split at spaces) on lines of at most width columns, each line starting with
 * indent spaces, the last ending with "\n". For lists that come from the library. */
void cli_put_wrapped(FILE *out, int indent, int width, const char *text);
/* The "-m, --model FILE" line of the usage of run, chat and serve: the architectures plumb
 * runs, from the library's table (pl_arch_list). */
void cli_put_model_option(FILE *out);

/* A JSON string literal, quotes included: pl_json_escape's escapes (control characters
 * escaped, invalid UTF-8 replaced by \ufffd, one per bad byte), so the output is always valid
 * JSON. */
void cli_put_json_string(FILE *f, const char *s, size_t n);

/* "512 B", "1.50 KiB", "3.25 GiB". */
void cli_format_size(char *buf, size_t cap, uint64_t bytes);
/* Shortest decimal that reads back as exactly v ("0.1", "1e-05", "nan", "-inf"). */
void cli_format_f32(char *buf, size_t cap, float v);
void cli_format_f64(char *buf, size_t cap, double v);

#endif
