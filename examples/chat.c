/* chat.c — the smallest chat loop on libplumb: each stdin line is a user turn, the reply streams
 * to stdout. The session's prefix cache does the reuse; this file only keeps the message list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plumb.h>

/* The reply as delivered to the callback: exactly the text the session now holds after the
 * prompt, so sending it back as the assistant message lets the next turn take the fast path. */
typedef struct reply {
    char *text;
    size_t len, cap;
} reply;

static int on_text(void *user, const char *text, size_t len)
{
    reply *r = user;
    if (r->len + len + 1 > r->cap) {
        size_t cap = 2 * (r->len + len + 1);
        char *p = realloc(r->text, cap);
        if (!p) return 1; /* cancel: the session stays consistent with what was delivered */
        r->text = p;
        r->cap = cap;
    }
    memcpy(r->text + r->len, text, len);
    r->len += len;
    r->text[r->len] = '\0';
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

static char *copy_str(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

/* msgs[0..*n) own their content; roles are literals. */
static void clear_messages(pl_chat_message *msgs, size_t *n)
{
    for (size_t i = 0; i < *n; i++) free((char *)msgs[i].content);
    *n = 0;
}

int main(int argc, char **argv)
{
    long max_tokens = 256;
    char *end = NULL;
    if (argc == 3) max_tokens = strtol(argv[2], &end, 10);
    if (argc < 2 || argc > 3 || (end && (*end != '\0' || end == argv[2])) || max_tokens < 1) {
        fprintf(stderr, "usage: chat MODEL.gguf [max_tokens per reply (default 256)] < lines\n");
        return 2;
    }

    pl_error err = {PL_OK, ""};
    pl_model *model = NULL;
    pl_session *s = NULL; /* the KV cache and the history it holds */
    pl_sampler *sampler = NULL;
    pl_status st = pl_model_load(&model, argv[1], NULL, &err);
    if (st == PL_OK) {
        pl_session_params sp = pl_session_default_params(model);
        st = pl_session_new(&s, model, &sp, &err);
    }
    if (st == PL_OK) {
        pl_sampler_params smp = pl_sampler_default_params();
        st = pl_sampler_new(&sampler, model, &smp, &err);
    }
    pl_gen_params gp = pl_gen_default_params();
    gp.max_tokens = max_tokens;

    pl_chat_message *msgs = NULL; /* the whole conversation, rendered again every turn */
    size_t n_msgs = 0, cap_msgs = 0;
    char line[4096]; /* a longer line is read as several turns */
    for (int turn = 1; st == PL_OK && fgets(line, sizeof line, stdin); turn++) {
        line[strcspn(line, "\n")] = '\0';
        if (n_msgs + 2 > cap_msgs) {
            size_t cap = cap_msgs ? 2 * cap_msgs : 16;
            pl_chat_message *p = realloc(msgs, cap * sizeof *p);
            if (!p) {
                st = PL_ERR_NOMEM;
                snprintf(err.msg, sizeof err.msg, "%zu messages", cap);
                break;
            }
            msgs = p;
            cap_msgs = cap;
        }
        msgs[n_msgs].role = "user";
        if (!(msgs[n_msgs].content = copy_str(line, strlen(line)))) {
            st = PL_ERR_NOMEM;
            snprintf(err.msg, sizeof err.msg, "a user line of %zu bytes", strlen(line));
            break;
        }
        n_msgs++;

        reply r = {copy_str("", 0), 0, 1};
        if (!r.text) {
            st = PL_ERR_NOMEM;
            snprintf(err.msg, sizeof err.msg, "an empty reply");
            break;
        }
        pl_chat_stats cs = {0};
        st = pl_chat_messages(s, NULL, msgs, n_msgs, sampler, &gp, on_text, &r, &cs, &err);
        if (st == PL_ERR_CONTEXT_FULL && n_msgs > 1) {
            /* The session is as it was before the call: start a new conversation with this line. */
            fprintf(stderr, "[context full (%s): conversation reset]\n", err.msg);
            pl_chat_reset(s);
            pl_chat_message user = msgs[--n_msgs];
            clear_messages(msgs, &n_msgs);
            msgs[n_msgs++] = user;
            st = pl_chat_messages(s, NULL, msgs, n_msgs, sampler, &gp, on_text, &r, &cs, &err);
        }
        if (st != PL_OK) {
            free(r.text);
            break;
        }
        msgs[n_msgs].role = "assistant";
        msgs[n_msgs++].content = r.text;
        fputs("\n", stdout);
        fflush(stdout); /* the reply's end before the turn's line on stderr */
        fprintf(stderr,
                "[turn %d: %s, reused %lld, prefilled %lld, generated %lld tokens; stop: %s]\n",
                turn, pl_chat_path_str(cs.path), (long long)cs.n_reused, (long long)cs.n_prefilled,
                (long long)cs.n_generated, pl_stop_reason_str(cs.gen.stop));
    }

    if (st != PL_OK) fprintf(stderr, "chat: %s: %s\n", pl_status_str(st), err.msg);
    clear_messages(msgs, &n_msgs);
    free(msgs);
    pl_sampler_free(sampler);
    pl_session_free(s);
    pl_model_free(model);
    return st == PL_OK ? 0 : 1;
}
