/* Loaded among other threads, libctensor leaves OpenBLAS's kernel family as OpenBLAS chose it
 * (cpu_blas_core.c may write the environment only where no other thread can read it), and
 * ct_cpu_kernels names the variable that selects the processor's kernels. A constructor that
 * runs before libctensor's makes OpenBLAS take Prescott's kernels and starts a thread that
 * lives until the tests end (skipped by name where Prescott cannot be forced: see
 * force_prescott.h). Its own program: the thread must exist before the library loads. */
#include <pthread.h>
#include <string.h>

#include "ct_test.h"
#include "force_prescott.h"

char *openblas_get_corename(void);

static char forced_reason[160];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;
static bool released;
static pthread_t waiter;
static bool waiting;

static void *wait_for_release(void *unused) {
    (void)unused;
    pthread_mutex_lock(&lock);
    while (!released) pthread_cond_wait(&done, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

__attribute__((constructor(101))) static void force_among_threads(void) {
    force_prescott(forced_reason, sizeof forced_reason);
    waiting = pthread_create(&waiter, NULL, wait_for_release, NULL) == 0;
}

static void release(void) {
    pthread_mutex_lock(&lock);
    released = true;
    pthread_cond_signal(&done);
    pthread_mutex_unlock(&lock);
    if (waiting) pthread_join(waiter, NULL);
    waiting = false;
}

TEST(test_cpu_blas_threads_at_load_family_left_alone) {
    bool forced = !forced_reason[0], had_thread = waiting;
    char core[32];
    snprintf(core, sizeof core, "%s", openblas_get_corename());
    const char *line = ct_cpu_kernels();
    release();
    if (!forced) {
        ct_test_skip(forced_reason);
        return;
    }
    CHECK(had_thread);
    if (strcmp(core, "Prescott") != 0)
        ct_test_fail(__FILE__, __LINE__, "OpenBLAS runs %s's kernels: ctensor changed them", core);
    CHECK(strstr(line, "ctensor loaded among other threads and left it; OPENBLAS_CORETYPE="));
}
