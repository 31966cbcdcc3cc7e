/* web.c — which files of the chat page `plumb serve` answers, and as what type: the embedded
 * page (web_assets.c) and the names allowed from --web-dir. Not the HTTP answer (server.c). */
#include <string.h>

#include "serve.h"

static const struct {
    const char *ext;
    const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".wasm", "application/wasm"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".png", "image/png"},
    {".svg", "image/svg+xml"},
    {".txt", "text/plain; charset=utf-8"},
    {".wgsl", "text/wgsl; charset=utf-8"}, /* the webgpu kernel set's shaders (--web-dir) */
};

const char *sv_web_type(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        size_t e = strlen(types[i].ext);
        if (n > e && strcmp(name + n - e, types[i].ext) == 0) return types[i].type;
    }
    return NULL;
}

int sv_web_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128 || name[0] == '.' || strstr(name, "..")) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return sv_web_type(name) != NULL;
}

const sv_asset *sv_web_embedded(const char *name)
{
    if (!name[0]) name = "index.html";
    for (const sv_asset *a = sv_web_assets; a->name; a++)
        if (strcmp(a->name, name) == 0) return a;
    return NULL;
}
