/* Progress lines for the native CLI's long steps: once a step has run for
 * 2 s, "wasmq: WHAT (N s)" on stderr, again every 2 s until it ends - also
 * when stderr is not a terminal (logs, CI). A watcher thread prints them, so
 * a step that is one long call into the core is covered too. */
#ifndef WQ_CLI_PROGRESS_H
#define WQ_CLI_PROGRESS_H

/* Starts a step (the text is copied; printf-style). Ends the previous one. */
void wq_cli_step(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Changes the current step's text (e.g. "calibrating 5/16"), keeping its clock. */
void wq_cli_step_update(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Ends the current step: no more lines for it. */
void wq_cli_step_end(void);

/* Milliseconds on the monotonic clock (timings and time limits). */
double wq_cli_now_ms(void);

#endif
