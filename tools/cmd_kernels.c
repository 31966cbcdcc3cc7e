/* cmd_kernels.c — `plumb kernels`: the compiled kernel sets, which this CPU runs, the one
 * chosen, and every fallback to ref. Reads kernels/registry.h (the one tool allowed to). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "registry.h"

static void usage(FILE *out)
{
    fputs("usage: plumb kernels [options]\n"
          "\n"
          "Lists the kernel sets compiled into plumb (best first), whether this CPU can run\n"
          "each, the set that is chosen, and for every kernel family (and weight type)\n"
          "whether the chosen set provides it or falls back to the reference set 'ref'.\n"
          "\n"
          "The set is the best one this CPU supports, unless the environment variable\n"
          "PLUMB_KERNELS=<name> or --kernels <name> (also --set <name>) names one.\n"
          "\n"
          "options:\n"
          "  --kernels NAME, --set NAME\n"
          "                 report on the set NAME instead (overrides PLUMB_KERNELS), as\n"
          "                 --kernels NAME of run, chat, bench, perplexity would use it\n"
          "  --json         print the same information as one JSON object\n"
          "  -h, --help     show this help\n"
          "\n"
          "Exit status: 0 success, 1 the set cannot be used here (unknown, or not supported\n"
          "by this CPU), 2 bad command line.\n",
          out);
}

/* The registry's report says which source chose the set; for a name given on this command
 * line it says PLUMB_KERNELS (the registry knows no command line): name the option instead. */
typedef struct report_out {
    FILE *f;
    const char *option; /* "--kernels" or "--set"; NULL: as the registry says */
} report_out;

static void write_stdout(void *user, const char *text, size_t len)
{
    const report_out *o = user;
    static const char env[] = "(by name, PLUMB_KERNELS)";
    const char *at = NULL;
    for (size_t i = 0; o->option && !at && i + sizeof env - 1 <= len; i++)
        if (memcmp(text + i, env, sizeof env - 1) == 0) at = text + i;
    if (!at) {
        fwrite(text, 1, len, o->f);
        return;
    }
    fwrite(text, 1, (size_t)(at - text), o->f);
    fprintf(o->f, "(by name, %s)", o->option);
    size_t done = (size_t)(at - text) + sizeof env - 1;
    fwrite(at + sizeof env - 1, 1, len - done, o->f);
}

static int is_fallback(const pl_kernel_table *t, int family, int type)
{
    for (int i = 0; i < t->n_fallbacks; i++)
        if (t->fallbacks[i].family == family && t->fallbacks[i].type == type) return 1;
    return 0;
}

static void put_json_name(FILE *f, const char *s)
{
    cli_put_json_string(f, s, strlen(s));
}

static void print_json(FILE *f, const pl_kernel_table *t)
{
    fputs("{\n  \"sets\": [", f);
    for (int i = 0; i < pl_kernel_set_count(); i++) {
        const struct pl_kernels *s = pl_kernel_set(i);
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        put_json_name(f, s->name);
        fprintf(f, ", \"supported\": %s, \"chosen\": %s}", s->supported() ? "true" : "false",
                t->set == s ? "true" : "false");
    }
    fputs("\n  ],\n  \"chosen\": ", f);
    put_json_name(f, t->k.name);
    fprintf(f, ",\n  \"chosen_by\": \"%s\",\n", t->by_name ? "name" : "cpu");

    /* Who provides each kernel: the chosen set itself, or ref. */
    fputs("  \"providers\": {", f);
    for (int fam = 0; fam < pl_kernel_family_count(); fam++) {
        fprintf(f, "%s\n    \"%s\": ", fam ? "," : "", pl_kernel_family_name(fam));
        if (!pl_kernel_family_at(fam)->per_type) {
            put_json_name(f, is_fallback(t, fam, -1) ? "ref" : t->k.name);
            continue;
        }
        fputc('{', f);
        int first = 1;
        for (int ty = 0; ty < PL_TYPE_COUNT; ty++) {
            if (!pl_type_supported((uint32_t)ty)) continue;
            fprintf(f, "%s\"%s\": ", first ? "" : ", ", pl_type_name((uint32_t)ty));
            put_json_name(f, is_fallback(t, fam, ty) ? "ref" : t->k.name);
            first = 0;
        }
        fputc('}', f);
    }
    fputs("\n  },\n  \"fallbacks\": [", f);
    for (int i = 0; i < t->n_fallbacks; i++) {
        const pl_kernel_fallback *fb = &t->fallbacks[i];
        fprintf(f, "%s\n    {\"family\": \"%s\", \"type\": ", i ? "," : "",
                pl_kernel_family_name(fb->family));
        if (fb->type >= 0)
            fprintf(f, "\"%s\"}", pl_type_name((uint32_t)fb->type));
        else
            fputs("null}", f);
    }
    fputs(t->n_fallbacks ? "\n  ]\n}\n" : "]\n}\n", f);
}

int cmd_kernels(int argc, char **argv)
{
    int json = 0;
    const char *set_name = NULL, *set_option = NULL;
    cli_args a;
    cli_args_init(&a, argc, argv, "kernels", usage);
    for (int k; (k = cli_next(&a)) != CLI_ARG_END;) {
        if (k == CLI_ARG_POSITIONAL) return cli_usage_error(&a, "unexpected argument '%s'", a.arg);
        if (cli_is_help(&a)) return cli_help(&a);
        if (cli_is(&a, NULL, "--json")) {
            if (cli_reject_value(&a)) return CLI_EXIT_USAGE;
            json = 1;
        } else if (cli_is(&a, NULL, "--set") || cli_is(&a, NULL, "--kernels")) {
            set_option = cli_is(&a, NULL, "--set") ? "--set" : "--kernels";
            if (!(set_name = cli_value(&a))) return CLI_EXIT_USAGE;
            if (!*set_name) return cli_usage_error(&a, "%s needs a set name", set_option);
            if (!pl_kernel_set_find(set_name)) /* a name no set has: a bad value (2); a set
                                                  this CPU cannot run fails at run time (1) */
                return cli_usage_error(&a, "%s '%.64s': no kernel set has that name", set_option,
                                       set_name);
        } else {
            return cli_unknown_option(&a);
        }
    }

    /* The table is ~2 KB of function pointers plus the fallback list: fine on the heap. */
    pl_kernel_table *t = malloc(sizeof *t);
    if (!t) return cli_errorf("out of memory");
    pl_error err;
    memset(&err, 0, sizeof err);
    pl_status st = set_name ? pl_kernels_init(t, set_name, &err) : pl_kernels_init_env(t, &err);
    if (st != PL_OK) {
        free(t);
        return cli_fail(st, &err);
    }
    if (json)
        print_json(stdout, t);
    else
        pl_kernels_report(t, write_stdout, &(report_out){stdout, set_option});
    free(t);
    return CLI_EXIT_OK;
}
