/* progress.h — progress on stderr for long commands (mkmodel, quantize, perplexity): a bar
 * redrawn in place when stderr is a terminal, else a plain line every PROGRESS_LINE_S seconds
 * (a log or a pipe sees that the command is alive and how far it is); Ctrl-C turned into a clean
 * cancellation. Tools only. */
#ifndef PLUMB_TOOLS_PROGRESS_H
#define PLUMB_TOOLS_PROGRESS_H

#include <stdint.h>

typedef struct progress_bar {
    const char *label; /* "quantize" */
    int tty;           /* stderr is a terminal: draw */
    int drawn;         /* something is on the line */
    int last_permille;
    double t0;
    double every;     /* not a terminal: seconds between lines */
    double next_line; /* when the next line is due */
} progress_bar;

/* Not a terminal: the first line after this many seconds, then one as often
 * (PLUMB_PROGRESS_LINE_S in the environment overrides: the tests' short runs). */
#define PROGRESS_LINE_S 5.0

/* Starts the clock and, until progress_bar_finish, makes SIGINT request cancellation
 * (progress_bar_cb then returns nonzero, so the library stops and removes its output). */
void progress_bar_init(progress_bar *p, const char *label);
/* A pl_progress_fn: user is the progress_bar. */
int progress_bar_cb(void *user, uint64_t done, uint64_t total);
/* The same with a note after the percentage ("[12/40] ppl 23.41"), redrawn at every call. */
int progress_bar_update(progress_bar *p, uint64_t done, uint64_t total, const char *note);
/* Ends the bar's line and restores SIGINT. Returns 1 if Ctrl-C was pressed. */
int progress_bar_finish(progress_bar *p);

#endif
