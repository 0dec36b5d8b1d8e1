/* The test runner (see ct_test.h). Usage: test_program [substring] runs the tests whose
 * names contain the substring. */
#include <stdarg.h>
#include <stdlib.h>

#include "core/tensor_impl.h"
#include "ct_test.h"

#define MAX_TESTS 1024

typedef struct {
    const char *name;
    ct_test_fn fn;
    ct_device_test_fn device_fn;
} test_case;

static test_case tests[MAX_TESTS];
static int test_count;
static bool current_failed, current_skipped;
static char skip_reason[512];

void ct_test_register(const char *name, ct_test_fn fn, ct_device_test_fn device_fn) {
    if (test_count < MAX_TESTS) tests[test_count++] = (test_case){name, fn, device_fn};
}

void ct_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("    %s:%d: ", file, line);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    current_failed = true;
}

bool ct_test_failed(void) { return current_failed; }

void ct_test_skip(const char *reason) {
    current_skipped = true;
    snprintf(skip_reason, sizeof skip_reason, "%s", reason);
}

void ct_test_record_warning(ct_log_level level, const char *message, void *warnings) {
    ct_test_warnings *w = warnings;
    if (level != CT_LOG_WARNING) return;
    w->count++;
    snprintf(w->last, sizeof w->last, "%s", message);
}

/* Run one test body and check what it left behind. Returns 0 pass, 1 fail, 2 skip. */
static int run_one(const test_case *t, const ct_device *device, const char *label) {
    current_failed = current_skipped = false;
    ct_clear_error();
    long live_before = ct__live_tensors();
    if (device)
        t->device_fn(*device);
    else
        t->fn();
    while (ct_scope_depth() > 0) {
        ct_scope_end();
        if (!current_failed) ct_test_fail(__FILE__, __LINE__, "the test left a scope open");
    }
    long leaked = ct__live_tensors() - live_before;
    if (leaked != 0 && !current_failed)
        ct_test_fail(__FILE__, __LINE__, "%ld tensor(s) leaked", leaked);
    if (current_skipped && !current_failed) {
        printf("SKIP %s: %s\n", label, skip_reason);
        return 2;
    }
    printf("%s %s\n", current_failed ? "FAIL" : "PASS", label);
    fflush(stdout);
    return current_failed ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    int counts[3] = {0, 0, 0};
    char label[256];
    if (!ct_cuda_is_available())
        printf("CUDA unavailable, CUDA cases are skipped: %s\n", ct_cuda_unavailable_reason());
    for (int i = 0; i < test_count; i++) {
        const test_case *t = &tests[i];
        if (filter && !strstr(t->name, filter)) continue;
        if (!t->device_fn) {
            counts[run_one(t, NULL, t->name)]++;
            continue;
        }
        snprintf(label, sizeof label, "%s[cpu]", t->name);
        counts[run_one(t, &CT_CPU, label)]++;
        int cuda = ct_device_count(CT_DEVICE_CUDA);
        if (cuda == 0) {
            printf("SKIP %s[cuda]: no CUDA device (see the reason above)\n", t->name);
            counts[2]++;
        }
        for (int d = 0; d < cuda; d++) {
            snprintf(label, sizeof label, "%s[cuda:%d]", t->name, d);
            counts[run_one(t, &(ct_device){CT_DEVICE_CUDA, d}, label)]++;
        }
    }
    printf("%d passed, %d failed, %d skipped\n", counts[0], counts[1], counts[2]);
    return counts[1] ? 1 : 0;
}
