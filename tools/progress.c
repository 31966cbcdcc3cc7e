/* progress.c — the terminal progress bar, the plain lines when stderr is not a terminal, and the
 * SIGINT-to-cancel bridge of progress.h. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "plumb.h"
#include "progress.h"

static volatile sig_atomic_t interrupted;
static struct sigaction old_int;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

void progress_bar_init(progress_bar *p, const char *label)
{
    p->label = label;
    p->tty = isatty(fileno(stderr));
    p->drawn = 0;
    p->last_permille = -1;
    p->t0 = pl_clock_s();
    p->every = PROGRESS_LINE_S;
    const char *every = getenv("PLUMB_PROGRESS_LINE_S");
    if (every && *every) {
        char *end;
        const double v = strtod(every, &end);
        if (!*end && v > 0 && v < 3600) p->every = v;
    }
    p->next_line = p->t0 + p->every;
    interrupted = 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
}

int progress_bar_cb(void *user, uint64_t done, uint64_t total)
{
    return progress_bar_update(user, done, total, NULL);
}

int progress_bar_update(progress_bar *p, uint64_t done, uint64_t total, const char *note)
{
    if (interrupted) return 1;
    if (total == 0) return 0;
    int permille = (int)(done >= total ? 1000 : (double)done * 1000.0 / (double)total);
    if (!p->tty) {
        /* One line every PROGRESS_LINE_S seconds (none for a command that ends sooner). */
        const double now = pl_clock_s(), el = now - p->t0;
        if (now < p->next_line || permille >= 1000) return 0;
        p->next_line = now + p->every;
        fprintf(stderr, "%s: %.1f%%%s%s after %.0f s", p->label, permille / 10.0, note ? ", " : "",
                note ? note : "", el);
        if (permille > 0) fprintf(stderr, ", ~%.0f s left", el * (1000 - permille) / permille);
        fputc('\n', stderr);
        fflush(stderr);
        return 0;
    }
    if (permille == p->last_permille && !note) return 0;
    p->last_permille = permille;
    enum { WIDTH = 30 };
    char bar[WIDTH + 1];
    int fill = permille * WIDTH / 1000;
    for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = 0;
    double el = pl_clock_s() - p->t0;
    fprintf(stderr, "\r%s [%s] %5.1f%%%s%s  %.1f s", p->label, bar, permille / 10.0,
            note ? "  " : "", note ? note : "", el);
    if (permille > 0 && permille < 1000)
        fprintf(stderr, ", ~%.0f s left ", el * (1000 - permille) / permille);
    else
        fputs("           ", stderr);
    fflush(stderr);
    p->drawn = 1;
    return 0;
}

int progress_bar_finish(progress_bar *p)
{
    if (p->drawn) fputc('\n', stderr);
    p->drawn = 0;
    sigaction(SIGINT, &old_int, NULL);
    return interrupted != 0;
}
