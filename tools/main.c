/* main.c — the `plumb` command: a table of subcommands and a dispatcher. Each command
 * lives in its own cmd_<name>.c; adding one is one line in `commands` below. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_serve_exec(int argc, char **argv);

static const cli_command commands[] = {
    {"inspect", cmd_inspect, "show a GGUF file's header, metadata and tensors"},
    {"kernels", cmd_kernels, "list the kernel sets, what this CPU runs, and the fallbacks"},
    {"tokenize", cmd_tokenize, "print the token ids and pieces of a text"},
    {"logits", cmd_logits, "write a text's logits to a file; compare two such files (KLD, top-1)"},
    {"perplexity", cmd_perplexity,
     "perplexity of a text in windows (llama-perplexity); KLD vs a base"},
    {"run", cmd_run, "evaluate a prompt and generate tokens, with timings"},
    {"chat", cmd_chat, "chat with a model: one message per line, reusing the prefix cache"},
    {"serve", cmd_serve_exec, "serve the model over HTTP with OpenAI's API (chat, completions)"},
    {"bench", cmd_bench, "measure prefill and decode speed against the machine's limits"},
    {"mkmodel", cmd_mkmodel, "write a synthetic model (real shapes, random weights)"},
    {"quantize", cmd_quantize, "convert a model's weights to another type (llama.cpp mixes)"},
    {"convert", cmd_convert, "convert a Hugging Face model directory (safetensors) to GGUF"},
    {"version", cmd_version, "print the version"},
    {"help", cmd_help, "show the help of a command"},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: plumb [-h | --help] [--version] <command> [<args>]\n"
            "\n"
            "plumb %s: CPU LLM inference with proven kernels.\n"
            "\n"
            "commands:\n",
            pl_version());
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
    fputs("\n"
          "options:\n"
          "  -h, --help     show this help\n"
          "  --version      print the version\n"
          "\n"
          "Run 'plumb <command> --help' for the options of a command.\n"
          "Exit status: 0 success, 1 failure (the message says why), 2 bad command line.\n",
          out);
}

/* `plumb serve ARGS` is `plumb-serve ARGS`, the program installed beside this one
 * (serve_main.c says why it is separate). argv ends with NULL, as main's does. */
static int cmd_serve_exec(int argc, char **argv)
{
    (void)argc;
    char path[PATH_MAX];
    const char name[] = "plumb-serve";
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n > 0) path[n] = '\0';
    char *slash = n > 0 ? strrchr(path, '/') : NULL;
    if (!slash || (size_t)(slash + 1 - path) + sizeof name > sizeof path)
        return cli_errorf("cannot find this program's directory (/proc/self/exe)");
    memcpy(slash + 1, name, sizeof name);
    fflush(NULL);
    argv[0] = (char *)name;
    execv(path, argv);
    return cli_errorf("cannot run %s: %s (plumb-serve is built and installed beside plumb)", path,
                      strerror(errno));
}

static const cli_command *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

/* Edit distance with a small cap, for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 32 || lb > 32) return 99;
    size_t row[33];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int unknown_command(const char *name)
{
    fprintf(stderr, "plumb: error: unknown command '%s'", name);
    const char *best = NULL;
    size_t best_d = 3; /* suggest only close matches */
    for (int i = 0; i < N_COMMANDS; i++) {
        size_t d = edit_distance(name, commands[i].name);
        if (d < best_d) {
            best_d = d;
            best = commands[i].name;
        }
    }
    if (best) fprintf(stderr, " (did you mean '%s'?)", best);
    fputs("\nsee `plumb --help`\n", stderr);
    return CLI_EXIT_USAGE;
}

static void version_usage(FILE *out)
{
    fputs("usage: plumb version\n"
          "\n"
          "Prints the version of plumb (the command and the library it was built with).\n",
          out);
}

static int print_version(void)
{
    printf("plumb %s (commit %s)\n", pl_version(), PLUMB_GIT_COMMIT);
#if defined(__clang__)
    printf("built with clang %d.%d.%d\n", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
    printf("built with gcc %d.%d.%d\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#endif
    return CLI_EXIT_OK;
}

static int cmd_version(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "version", version_usage);
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        if (k == CLI_ARG_POSITIONAL) return cli_usage_error(&a, "unexpected argument '%s'", a.arg);
        if (cli_is_help(&a)) return cli_help(&a);
        return cli_unknown_option(&a);
    }
    return print_version();
}

static void help_usage(FILE *out)
{
    fputs("usage: plumb help [<command>]\n"
          "\n"
          "Shows the list of commands, or the help of one command (same as\n"
          "'plumb <command> --help').\n",
          out);
}

static int cmd_help(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "help", help_usage);
    const char *topic = NULL;
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        if (k == CLI_ARG_POSITIONAL) {
            if (topic) return cli_usage_error(&a, "unexpected argument '%s'", a.arg);
            topic = a.arg;
            continue;
        }
        if (cli_is_help(&a)) return cli_help(&a);
        return cli_unknown_option(&a);
    }
    if (!topic) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    const cli_command *c = find_command(topic);
    if (!c) return unknown_command(topic);
    char name[64], help[] = "--help";
    snprintf(name, sizeof name, "%s", c->name);
    char *sub_argv[] = {name, help, NULL};
    return c->run(2, sub_argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("plumb: error: no command given\nsee `plumb --help`\n", stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "-h") == 0 || strcmp(first, "--help") == 0)
        return cli_finish(cmd_help(1, argv + 1));
    if (strcmp(first, "--version") == 0) return cli_finish(print_version());
    if (first[0] == '-') {
        fprintf(stderr, "plumb: error: unknown option '%s'\nsee `plumb --help`\n", first);
        return CLI_EXIT_USAGE;
    }
    const cli_command *c = find_command(first);
    if (!c) return unknown_command(first);
    cli_set_command(c->name);
    return cli_finish(c->run(argc - 1, argv + 1));
}
