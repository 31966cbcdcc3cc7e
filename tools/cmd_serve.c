/* cmd_serve.c — `plumb serve`: the command line of the OpenAI-compatible HTTP server; the
 * server itself is serve/ (plumb_serve). Parses options, loads the model, waits for a signal. */
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"

static void usage(FILE *out)
{
    fputs("usage: plumb serve -m FILE [options]\n"
          "\n"
          "Serves the model over HTTP with OpenAI's API: POST /v1/chat/completions and\n"
          "/v1/completions (streaming or not), GET (and HEAD) /v1/models, /health, /metrics\n"
          "(Prometheus) and /slots. Each of N slots is a session with its own prefix cache; a\n"
          "request goes to the idle slot whose whole cached text its prompt extends (the longest\n"
          "such), else to the least recently used idle slot, so each conversation keeps its fast\n"
          "path. Requests beyond the slots wait in a bounded queue; beyond it they get 503.\n"
          "By default one slot with every core: a request runs as fast as `plumb run`, and\n"
          "others wait for it; --slots N runs N at once, the cores shared among them.\n"
          "It listens before the model is loaded: /health answers 503 \"loading\" until the\n"
          "model is ready, then 200; one line on stdout says it is ready, one log line per\n"
          "request goes to stderr. SIGTERM drains: /health turns 503 \"draining\", new\n"
          "requests get 503 (with Retry-After), the ones accepted finish (within\n"
          "--drain-timeout), then it exits 0; SIGINT, or a second signal, stops at once\n"
          "(cancelling what runs). serve/deploy/ puts several behind HAProxy.\n"
          "GET / is the chat page (web/README.md): embedded in the\n"
          "binary; its in-browser engine (plumb-engine.mjs, *.wasm) comes from --web-dir.\n"
          "\n"
          "options:\n",
          out);
    cli_put_model_option(out);
    fputs(
        "  --host ADDR              address or name to listen on (default 127.0.0.1: this\n"
        "                           machine only; localhost is loopback; 0.0.0.0: everywhere)\n"
        "  --port N                 port (default 8080; 0: a free one)\n"
        "  --slots N                sessions, each with its prefix cache, that generate at\n"
        "                           once (default 1)\n"
        "  --queue N                requests that may wait for a slot (default 16)\n"
        "  --api-key KEY            require 'Authorization: Bearer KEY' (not on /health and\n"
        "                           /metrics)\n"
        "  --metrics-key KEY        require 'Authorization: Bearer KEY' on /metrics\n"
        "  --cors ORIGIN            answer browsers of ORIGIN ('*': any): Access-Control-Allow-\n"
        "                           Origin on every answer, OPTIONS preflights answered\n"
        "                           (default: no CORS headers)\n"
        "  --max-body BYTES         largest request body (default 1048576)\n"
        "  --timeout S              close a connection idle, or whose request is not whole, this "
        "long (default 30)\n"
        "  --drain-timeout S        on SIGTERM, how long the requests in flight may take to\n"
        "                           finish before they are cancelled (default 20: within the\n"
        "                           30 s an orchestrator such as Kubernetes waits before\n"
        "                           SIGKILL; 0: cancel at once)\n"
        "  --web-dir DIR            the wasm engine files the page loads (default: the\n"
        "                           installed ones, ../share/plumb/web from this program,\n"
        "                           when they are there; else `make wasm`'s build-wasm/web\n"
        "                           of the source tree plumb was built from, if it exists)\n"
        "  --no-model-file          do not offer the model's file at GET /model.gguf (the\n"
        "                           page's 'run it in this browser'; it needs the API key\n"
        "                           when one is set)\n"
        "  --alias NAME             model id in responses (default: the file's name without\n"
        "                           .gguf)\n"
        "  --max-tokens N           tokens per reply when a request gives no max_tokens\n"
        "                           (default 256)\n"
        "  --chat-template-file FILE\n"
        "                           chat template as Jinja source (default: the model's own\n"
        "                           tokenizer.chat_template, run by the Jinja engine)\n"
        "  --chat-template NAME     a built-in template instead: chatml, qwen2, qwen2.5,\n"
        "                           llama3, llama2, mistral (--template NAME: the same)\n"
        "  -t, --threads N          threads per slot (default: the physical cores, or\n"
        "                           PLUMB_THREADS, shared among the slots, at least 1 each:\n"
        "                           all of them with one slot)\n"
        "  -c, --ctx N              context window per slot in tokens (default min(train, 4096))\n"
        "  --sliding-window N       sliding window instead of a context window\n"
        "  --sinks N                attention sinks kept by the sliding window (default 4)\n"
        "  --chunk N                prefill chunk in tokens\n"
        "  --kv-type f16|f32        KV cache element type (default f16)\n"
        "  --kernels NAME           kernel set (default: PLUMB_KERNELS, else the best)\n"
        "  --no-repack              run every weight from the mapping (no repacked copies)\n"
        "  -h, --help               show this help\n"
        "\n"
        "Sampling (temperature, top_p, top_k, min_p, seed, stop, max_tokens) is per request.\n"
        "No TLS: put a TLS proxy in front to serve beyond this machine.\n",
        out);
}

typedef struct serve_opts {
    const char *model, *host, *api_key, *metrics_key, *cors, *alias, *web_dir;
    int no_model_file;
    cli_tmpl_opts tmpl;
    int64_t port, slots, queue, max_body, timeout, max_tokens, drain_timeout;
    int no_repack;
    cli_gen_opts g;
} serve_opts;

/* One option of the command line (cli_parse_options). */
static int option(cli_args *a, void *user)
{
    serve_opts *o = user;
    /* Sampling is the request's, not the server's. */
    if (cli_is(a, NULL, "--temp") || cli_is(a, NULL, "--top-k") || cli_is(a, NULL, "--top-p") ||
        cli_is(a, NULL, "--min-p") || cli_is(a, NULL, "--repeat-penalty") ||
        cli_is(a, "-s", "--seed"))
        return cli_usage_error(a,
                               "%s: sampling is set per request (temperature, top_p, "
                               "top_k, min_p, seed in the JSON body)",
                               a->arg);
    const char *v = cli_value_ahead(a);
    int rc = 0;
    if (cli_is(a, "-m", "--model"))
        o->model = v;
    else if (cli_is(a, NULL, "--host"))
        o->host = v;
    else if (cli_is(a, NULL, "--port"))
        rc = cli_parse_i64(a, v, 0, 65535, &o->port);
    else if (cli_is(a, NULL, "--slots"))
        rc = cli_parse_i64(a, v, 1, 256, &o->slots);
    else if (cli_is(a, NULL, "--queue"))
        rc = cli_parse_i64(a, v, 0, 4096, &o->queue);
    else if (cli_is(a, NULL, "--api-key"))
        o->api_key = v;
    else if (cli_is(a, NULL, "--metrics-key"))
        o->metrics_key = v;
    else if (cli_is(a, NULL, "--cors"))
        o->cors = v;
    else if (cli_is(a, NULL, "--max-body"))
        rc = cli_parse_i64(a, v, 1, INT32_MAX, &o->max_body);
    else if (cli_is(a, NULL, "--timeout"))
        rc = cli_parse_i64(a, v, 1, 86400, &o->timeout);
    else if (cli_is(a, NULL, "--drain-timeout"))
        rc = cli_parse_i64(a, v, 0, 86400, &o->drain_timeout);
    else if (cli_is(a, NULL, "--web-dir"))
        o->web_dir = v;
    else if (cli_is(a, NULL, "--alias"))
        o->alias = v;
    else if (cli_is(a, NULL, "--max-tokens"))
        rc = cli_parse_i64(a, v, 1, INT32_MAX, &o->max_tokens);
    else if (cli_tmpl_option(a, v, &o->tmpl, &rc))
        ;
    else if (cli_gen_option(a, v, &o->g, &rc))
        ;
    else
        return CLI_OPTION_UNKNOWN;
    return rc;
}

static int parse(int argc, char **argv, serve_opts *o)
{
    cli_args a;
    cli_args_init(&a, argc, argv, "serve", usage);
    const cli_flag flags[] = {{NULL, "--no-repack", &o->no_repack},
                              {NULL, "--no-model-file", &o->no_model_file},
                              {NULL, NULL, NULL}};
    int rc = cli_parse_options(&a, flags, option, o);
    if (rc) return rc;
    if (!o->model) return cli_usage_error(&a, "no model: give -m FILE");
    rc = cli_gen_check(&a, &o->g);
    if (rc) return rc;
    if (o->api_key && !o->api_key[0]) return cli_usage_error(&a, "--api-key: empty key");
    if (o->metrics_key && !o->metrics_key[0])
        return cli_usage_error(&a, "--metrics-key: empty key");
    /* The origin goes into a header as it is: one line of visible ASCII. */
    if (o->cors) {
        const unsigned char *c = (const unsigned char *)o->cors;
        while (*c > 0x20 && *c < 0x7f) c++;
        if (!o->cors[0] || *c)
            return cli_usage_error(&a,
                                   "--cors: '%s' is not an origin (e.g. https://example.com, or "
                                   "'*' for any)",
                                   o->cors);
    }
    struct stat st;
    if (o->web_dir && (stat(o->web_dir, &st) || !S_ISDIR(st.st_mode)))
        return cli_usage_error(&a, "--web-dir: '%s' is not a folder", o->web_dir);
    struct sockaddr_storage ss;
    char why[320];
    if (sv_resolve_host(o->host, (int)o->port, &ss, why, sizeof why))
        return cli_usage_error(&a, "--host: %s", why);
    return 0;
}

/* Threads per slot when -t is not given: the pool's default (PLUMB_THREADS, else the usable
 * physical cores, as hwloc counts them) shared among the slots, so that slots x threads stays
 * within the cores; at least 1. The count is what a session with n_threads 0 gets. */
static int default_threads(const pl_model *m, int64_t slots)
{
    pl_session_params sp = pl_session_default_params(m);
    sp.n_threads = 0;
    sp.context_window = 8; /* the probe needs no cache */
    sp.sliding_window = 0;
    sp.attention_sinks = 0;
    pl_session *s = NULL;
    pl_session_info si = {0};
    if (pl_session_new(&s, m, &sp, NULL) || pl_session_get_info(s, &si, NULL)) si.n_threads = 1;
    pl_session_free(s);
    int64_t n = si.n_threads / slots;
    return n < 1 ? 1 : (int)n;
}

static int has_engine(const char *dir)
{
    char path[PATH_MAX];
    struct stat st;
    return snprintf(path, sizeof path, "%s/plumb-engine.mjs", dir) < (int)sizeof path &&
           !stat(path, &st) && S_ISREG(st.st_mode);
}

/* --web-dir's default: the installed page beside this program (bin/../share/plumb/web) when it
 * holds the engine, else the source tree's build-wasm/web when it exists, else none. buf:
 * PATH_MAX bytes. */
static const char *default_web_dir(char *buf)
{
#ifdef PLUMB_WEB_DIR_FROM_BIN
    char exe[PATH_MAX], joined[2 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = 0, strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = 0;
        snprintf(joined, sizeof joined, "%s/%s", exe, PLUMB_WEB_DIR_FROM_BIN);
        if (realpath(joined, buf) && has_engine(buf)) return buf;
    }
#endif
#ifdef PLUMB_WEB_DIR_DEFAULT
    struct stat st;
    if (!stat(PLUMB_WEB_DIR_DEFAULT, &st) && S_ISDIR(st.st_mode)) return PLUMB_WEB_DIR_DEFAULT;
#endif
    (void)buf;
    return NULL;
}

/* The file's name without its folders and ".gguf": the default model id. */
static char *default_alias(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && strcmp(b + n - 5, ".gguf") == 0) n -= 5;
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, b, n);
        s[n] = 0;
    }
    return s;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* SIGTERM: refuse new requests (503, /health "draining") and wait, at most timeout_s, for those
 * in flight to finish; a second SIGTERM or a SIGINT ends the wait at once. */
static void drain(sv_server *srv, const sigset_t *sigs, int64_t timeout_s)
{
    sv_server_drain(srv);
    int n = sv_server_in_flight(srv);
    fprintf(stderr,
            "plumb serve: SIGTERM: draining (/health 503, new requests 503): %d request%s in "
            "flight, waiting up to %lld s (--drain-timeout)\n",
            n, n == 1 ? "" : "s", (long long)timeout_s);
    const double t0 = mono_s(), end = t0 + (double)timeout_s;
    const struct timespec tick = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};
    while ((n = sv_server_in_flight(srv)) > 0 && mono_s() < end) {
        int sig = sigtimedwait(sigs, NULL, &tick);
        if (sig > 0) {
            fprintf(stderr, "plumb serve: %s during the drain: stopping now\n",
                    sig == SIGINT ? "SIGINT" : "SIGTERM");
            return;
        }
    }
    if (n > 0)
        fprintf(stderr,
                "plumb serve: drain: %d request%s still in flight after %lld s: cancelling\n", n,
                n == 1 ? "" : "s", (long long)timeout_s);
    else
        fprintf(stderr, "plumb serve: drained in %.2f s\n", mono_s() - t0);
}

int cmd_serve(int argc, char **argv)
{
    serve_opts o = {.host = "127.0.0.1",
                    .port = 8080,
                    .slots = 1,
                    .queue = 16,
                    .max_body = 1 << 20,
                    .timeout = 30,
                    .max_tokens = 256,
                    .drain_timeout = 20,
                    .g = cli_gen_defaults()};
    int rc = parse(argc, argv, &o);
    if (rc) return rc >= 100 ? rc - 100 : rc;

    pl_error err;
    pl_status st;
    pl_model *m = NULL;
    sv_server *srv = NULL;
    char *alias = NULL;
    pl_chat_template *tmpl = NULL;
    char tmpl_desc[128] = "";

    /* The signals are taken by sigwait below: block them before any thread starts, so every
     * thread inherits the mask and none of them is interrupted. SIGPIPE: a client that went
     * away is an error on its socket, not the end of the server. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (!o.alias && !(alias = default_alias(o.model))) {
        rc = cli_errorf("out of memory");
        goto out;
    }
    /* Listening first, the model loaded after: a balancer (or an orchestrator) sees the
     * instance up and its /health 503 "loading" until the model is ready, rather than
     * connections refused that look like a dead one; a taken port fails before the load. */
    sv_config cfg = {
        .host = o.host,
        .cors = o.cors,
        .port = (int)o.port,
        .n_slots = (int)o.slots,
        .queue = (int)o.queue,
        .max_body = (size_t)o.max_body,
        .timeout_s = (unsigned)o.timeout,
        .api = {.alias = o.alias ? o.alias : alias,
                .api_key = o.api_key,
                .metrics_key = o.metrics_key,
                .max_tokens = o.max_tokens},
        .log = stderr,
        .web_dir = o.web_dir,
        .model_file = o.no_model_file ? NULL : o.model,
    };
    char web_dir[PATH_MAX];
    if (!cfg.web_dir) cfg.web_dir = default_web_dir(web_dir);
    if ((st = sv_server_start(&srv, NULL, &cfg, &err))) {
        rc = cli_fail(st, &err);
        goto out;
    }
    int v6 = strchr(o.host, ':') != NULL;
    fprintf(stderr,
            "plumb serve: on http://%s%s%s:%d, loading the model (/health: 503 until it "
            "is ready)\n",
            v6 ? "[" : "", o.host, v6 ? "]" : "", sv_server_port(srv));
    const pl_model_params mp = {.flags = o.no_repack ? PL_MODEL_NO_REPACK : 0u,
                                .kernels = o.g.kernels};
    if ((st = pl_model_load(&m, o.model, &mp, &err))) {
        rc = cli_fail(st, &err);
        goto out;
    }
    /* A model whose template does not compile still serves completions. */
    if ((rc = cli_tmpl_load(m, o.model, &o.tmpl, 0, &tmpl, tmpl_desc, sizeof tmpl_desc))) goto out;
    const int threads_given = o.g.threads != 0;
    if (!threads_given) o.g.threads = default_threads(m, o.slots);
    const pl_session_params sp = cli_gen_session(&o.g, m);
    if ((st = sv_server_attach(srv, m, tmpl, &sp, &err))) {
        rc = cli_fail(st, &err);
        goto out;
    }
    pl_session_info si = {0};
    pl_session_get_info(sv_slots_session(sv_server_slots(srv), 0), &si, NULL);
    /* What one request gets, and why: the line a user reads to know the server's speed. */
    const char *pool = getenv("PLUMB_THREADS") ? "PLUMB_THREADS" : "the physical cores";
    char why[128];
    if (threads_given)
        snprintf(why, sizeof why, "-t");
    else if (o.slots == 1)
        snprintf(why, sizeof why, "all of %s; --slots N serves N at once", pool);
    else
        snprintf(why, sizeof why, "%s shared among the slots", pool);
    fprintf(stderr,
            "plumb serve: model %s (id '%s', chat template %s), %lld slot%s of %lld tokens%s: a "
            "request gets %d thread%s (%s), kernels %s, queue %lld, max body %lld bytes, timeout "
            "%lld s%s%s%s%s\n",
            o.model, cfg.api.alias, tmpl_desc, (long long)o.slots, o.slots == 1 ? "" : "s",
            (long long)si.kv_capacity, o.g.window ? " (sliding window)" : "", si.n_threads,
            si.n_threads == 1 ? "" : "s", why, si.kernels, (long long)o.queue,
            (long long)o.max_body, (long long)o.timeout, o.api_key ? ", API key required" : "",
            o.metrics_key ? ", metrics key required" : "", o.cors ? ", CORS origin " : "",
            o.cors ? o.cors : "");
    printf("plumb serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", o.host, v6 ? "]" : "",
           sv_server_port(srv));
    fflush(stdout);
    fprintf(stderr, "plumb serve: the chat page is at /; its wasm engine %s%s\n",
            cfg.web_dir ? "files from " : "is absent (build it with `make wasm`, or --web-dir DIR)",
            cfg.web_dir ? cfg.web_dir : "");

    int sig = 0;
    sigwait(&sigs, &sig);
    if (sig == SIGTERM && o.drain_timeout > 0) drain(srv, &sigs, o.drain_timeout);
    fprintf(stderr, "plumb serve: %s: stopping (cancelling the generations running)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    sv_server_stop(srv);
    srv = NULL;
    fprintf(stderr, "plumb serve: stopped\n");
out:
    sv_server_stop(srv);
    free(alias);
    pl_chat_template_free(tmpl);
    pl_model_free(m);
    return cli_finish(rc);
}
