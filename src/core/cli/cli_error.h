/* How the native CLI's commands report a failed call into the core. */
#ifndef WQ_CLI_CLI_ERROR_H
#define WQ_CLI_CLI_ERROR_H

#include "../ir/status.h"

/* "wasmq: WHAT: message (node 'X') [WQ_ERR_...]" on stderr (main.c). */
void wq_cli_print_error(const char *what, const wq_error *err);

#endif
