/* progress.c — the terminal progress bar and the SIGINT-to-cancel bridge of progress.h.
 * Not a logger: with stderr redirected it prints nothing. */
#include <signal.h>
#include <stdio.h>
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
    if (!p->tty || total == 0) return 0;
    int permille = (int)(done >= total ? 1000 : (double)done * 1000.0 / (double)total);
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
