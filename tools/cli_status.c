/* How every `ctensor` command ends: its error lines, the JSON error object of --json, and the
 * check that what it wrote to stdout arrived (cli_impl.h). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "cli_impl.h"

#define SUBJECTS_MAX 32

static struct {
    pthread_mutex_t lock;
    const char *command; /* "train", or NULL before a subcommand is known */
    bool json;
    bool result_printed;
    char first[2048]; /* the first error line, without the "ctensor CMD: " prefix */
    bool has_first;
    ct_status first_status;
    char subjects[SUBJECTS_MAX][128]; /* what each error line reported was about */
    int subject_count;
} state = {.lock = PTHREAD_MUTEX_INITIALIZER};

void ct_cli_begin(const char *command, int argc, char **argv) {
    state.command = command;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--json") == 0) state.json = true;
}

void ct_cli_result_printed(void) { state.result_printed = true; }

/* Whether a line about subject was reported already; records it when not. */
static bool seen(const char *subject, size_t length) {
    if (length >= sizeof state.subjects[0]) length = sizeof state.subjects[0] - 1;
    for (int i = 0; i < state.subject_count; i++)
        if (strlen(state.subjects[i]) == length && memcmp(state.subjects[i], subject, length) == 0)
            return true;
    if (state.subject_count < SUBJECTS_MAX) {
        memcpy(state.subjects[state.subject_count], subject, length);
        state.subjects[state.subject_count++][length] = '\0';
    }
    return false;
}

static void report(ct_status status, const char *fmt, va_list ap) {
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    const char *colon = strstr(line, ": ");
    pthread_mutex_lock(&state.lock);
    if (!seen(line, colon ? (size_t)(colon - line) : strlen(line))) {
        if (state.command)
            fprintf(stderr, "ctensor %s: %s\n", state.command, line);
        else
            fprintf(stderr, "ctensor: %s\n", line);
        if (!state.has_first) {
            snprintf(state.first, sizeof state.first, "%s", line);
            state.has_first = true;
            state.first_status = status;
        }
    }
    pthread_mutex_unlock(&state.lock);
}

int ct_cli_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report(CT_OK, fmt, ap);
    va_end(ap);
    return CT_CLI_USAGE;
}

int ct_cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report(ct_last_status(), fmt, ap);
    va_end(ap);
    return CT_CLI_FAILED;
}

int ct_cli_end(int rc) {
    if (state.json && rc != CT_CLI_OK && !state.result_printed) {
        const char *class = rc == CT_CLI_USAGE ? "usage" : rc > 128 ? "interrupted" : "failed";
        printf("{\"error\": ");
        ct_cli_json_string(stdout, state.has_first ? state.first
                                                   : "the command failed; its standard error "
                                                     "says why");
        printf(", \"status\": \"%s\", \"exit_code\": %d, \"library_status\": ", class, rc);
        ct_cli_json_string(stdout, state.has_first && state.first_status != CT_OK
                                       ? ct_status_name(state.first_status)
                                       : NULL);
        printf("}\n");
    }
    /* A full disk or a closed pipe on stdout is an error, not a silent success. */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ctensor%s%s: writing the output failed: %s\n", state.command ? " " : "",
                state.command ? state.command : "", errno ? strerror(errno) : "write error");
        return rc != CT_CLI_OK ? rc : CT_CLI_FAILED;
    }
    return rc;
}
