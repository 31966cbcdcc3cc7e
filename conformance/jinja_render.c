/* jinja_render.c — renders one template file with one JSON context file through plumb's Jinja
 * engine and writes the bytes to stdout (exit 1 and the error on stderr when it fails), for
 * tools/jinja_oracle/differential.py to compare with jinja2. A helper, not a test. */
#include <stdio.h>
#include <stdlib.h>

#include "jinja/jinja.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: jinja_render TEMPLATE.jinja CONTEXT.json\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    static char src[1 << 22];
    size_t len = fread(src, 1, sizeof src, f);
    fclose(f);
    json_t *ctx = json_load_file(argv[2], 0, NULL);
    pl_jinja_template *t = NULL;
    pl_error err = {0};
    pl_jinja_limits lim = {.now = 1721000000, .has_now = 1}; /* render.py's NOW */
    char *out = NULL;
    size_t n = 0;
    pl_status s = pl_jinja_compile(src, len, &t, &err);
    if (s == PL_OK) s = pl_jinja_render(t, ctx, &lim, &out, &n, &err);
    if (s == PL_OK)
        fwrite(out, 1, n, stdout);
    else
        fprintf(stderr, "%s\n", err.msg);
    free(out);
    pl_jinja_free(t);
    json_decref(ctx);
    return s == PL_OK ? 0 : 1;
}
