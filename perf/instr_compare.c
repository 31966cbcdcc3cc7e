/* instr_compare.c — reads perf_instr.sh's JSON: checks one file's shape (--check), or compares a
 * baseline with a candidate row by row (key: set + name) and flags rows whose instruction count
 * rose or fell by more than a threshold (and, since counts are exact, marks every row that moved
 * at all as "changed"). Not a timing comparison.
 *
 * Run: ./instr_compare --check FILE.json                 exit 0 well-formed, 1 not
 *      ./instr_compare BASE.json CAND.json [--threshold PCT]   (default 1)
 *      exit 0: no row rose beyond PCT; 1: a REGRESSION; 2: could not compare */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* Loads path and checks every field a report carries; prints why not to stderr. */
static json_t *load_checked(const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        fprintf(stderr, "%s:%d:%d: %s\n", path, je.line, je.column, je.text);
        return NULL;
    }
    static const char *const strs[] = {"schema", "date", "commit", "tool", "valgrind", "compiler"};
    const char *why = NULL;
    for (size_t i = 0; i < sizeof strs / sizeof strs[0] && !why; i++)
        if (!json_is_string(json_object_get(root, strs[i]))) why = strs[i];
    json_t *machine = json_object_get(root, "machine");
    json_t *rows = json_object_get(root, "rows");
    if (!why && strcmp(json_string_value(json_object_get(root, "schema")), "plumb-perf-instr/1"))
        why = "schema (not plumb-perf-instr/1)";
    if (!why && !json_is_boolean(json_object_get(root, "dirty"))) why = "dirty";
    if (!why && !(json_is_object(machine) && json_is_string(json_object_get(machine, "cpu"))))
        why = "machine.cpu";
    if (!why && !json_is_array(json_object_get(root, "sets"))) why = "sets";
    if (!why && !json_is_array(json_object_get(root, "tokens"))) why = "tokens";
    if (!why && !json_is_integer(json_object_get(root, "seconds"))) why = "seconds";
    if (!why && !(json_is_array(rows) && json_array_size(rows) > 0)) why = "rows (none)";
    size_t i;
    json_t *r;
    if (!why) json_array_foreach(rows, i, r)
        {
            json_t *ins = json_object_get(r, "instructions");
            const char *unit = json_string_value(json_object_get(r, "unit"));
            if (!json_is_string(json_object_get(r, "name")) ||
                !json_is_string(json_object_get(r, "set")) || !unit ||
                (strcmp(unit, "per token") && strcmp(unit, "per call") &&
                 strcmp(unit, "per run")) ||
                !json_is_integer(ins) || json_integer_value(ins) <= 0) {
                fprintf(stderr,
                        "%s: rows[%zu]: needs name, set, unit (per token/call/run) and "
                        "instructions > 0\n",
                        path, i);
                json_decref(root);
                return NULL;
            }
        }
    if (why) {
        fprintf(stderr, "%s: missing or wrong field: %s\n", path, why);
        json_decref(root);
        return NULL;
    }
    return root;
}

static json_t *find_row(json_t *rows, const char *set, const char *name)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        if (!strcmp(json_string_value(json_object_get(r, "set")), set) &&
            !strcmp(json_string_value(json_object_get(r, "name")), name))
            return r;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--check")) {
        json_t *j = load_checked(argv[2]);
        if (!j) return 1;
        printf("%s: well-formed, %zu rows\n", argv[2], json_array_size(json_object_get(j, "rows")));
        json_decref(j);
        return 0;
    }
    double thr = 1.0;
    if (argc == 5 && !strcmp(argv[3], "--threshold")) {
        char *end;
        thr = strtod(argv[4], &end);
        if (*end || !(thr >= 0)) {
            fprintf(stderr, "instr_compare: bad threshold '%s'\n", argv[4]);
            return 2;
        }
    } else if (argc != 3) {
        fprintf(stderr, "usage: instr_compare --check FILE.json\n"
                        "       instr_compare BASE.json CAND.json [--threshold PCT]\n");
        return 2;
    }
    json_t *a = load_checked(argv[1]), *b = load_checked(argv[2]);
    if (!a || !b) {
        json_decref(a);
        json_decref(b);
        return 2;
    }
    printf("baseline  %.12s%s (%s)\ncandidate %.12s%s (%s)\nthreshold %.2f%%\n\n",
           json_string_value(json_object_get(a, "commit")),
           json_is_true(json_object_get(a, "dirty")) ? "+" : "", argv[1],
           json_string_value(json_object_get(b, "commit")),
           json_is_true(json_object_get(b, "dirty")) ? "+" : "", argv[2], thr);
    if (strcmp(json_string_value(json_object_get(a, "valgrind")),
               json_string_value(json_object_get(b, "valgrind"))) ||
        strcmp(json_string_value(json_object_get(a, "compiler")),
               json_string_value(json_object_get(b, "compiler"))))
        printf("note: valgrind or compiler differ between the two files\n\n");
    printf("| %-30s | %-5s | %-9s | %15s | %15s | %8s | %-10s |\n", "row", "set", "unit",
           "baseline", "candidate", "delta", "verdict");
    printf("|--------------------------------|-------|-----------|----------------:|"
           "----------------:|---------:|------------|\n");
    int regressions = 0, improved = 0, missing = 0;
    size_t i;
    json_t *rb;
    json_array_foreach(json_object_get(b, "rows"), i, rb)
    {
        const char *set = json_string_value(json_object_get(rb, "set"));
        const char *name = json_string_value(json_object_get(rb, "name"));
        json_t *ra = find_row(json_object_get(a, "rows"), set, name);
        double vb = (double)json_integer_value(json_object_get(rb, "instructions"));
        const char *unit = json_string_value(json_object_get(rb, "unit"));
        if (!ra) {
            printf("| %-30s | %-5s | %-9s | %15s | %15.0f | %8s | %-10s |\n", name, set, unit, "-",
                   vb, "", "new");
            continue;
        }
        double va = (double)json_integer_value(json_object_get(ra, "instructions"));
        double d = 100.0 * (vb - va) / va;
        /* Counts are exact: any difference is a real change, flagged or not. */
        const char *verdict = va == vb ? "same" : "changed";
        if (d > thr) {
            verdict = "REGRESSION";
            regressions++;
        } else if (d < -thr) {
            verdict = "fewer";
            improved++;
        }
        printf("| %-30s | %-5s | %-9s | %15.0f | %15.0f | %+7.2f%% | %-10s |\n", name, set, unit,
               va, vb, d, verdict);
    }
    json_t *ra;
    json_array_foreach(json_object_get(a, "rows"), i, ra)
    {
        const char *set = json_string_value(json_object_get(ra, "set"));
        const char *name = json_string_value(json_object_get(ra, "name"));
        if (!find_row(json_object_get(b, "rows"), set, name)) {
            printf("| %-30s | %-5s | %-9s | %15lld | %15s | %8s | %-10s |\n", name, set,
                   json_string_value(json_object_get(ra, "unit")),
                   (long long)json_integer_value(json_object_get(ra, "instructions")), "-", "",
                   "gone");
            missing++;
        }
    }
    printf("\n%d REGRESSION, %d fewer, %d gone (threshold %.2f%%)\n", regressions, improved,
           missing, thr);
    json_decref(a);
    json_decref(b);
    return regressions ? 1 : 0;
}
