/* The I/O fault seam (io_fault_impl.h): a countdown to the call that fails. */
#include <errno.h>
#include <stdatomic.h>

#include "data/io_fault_impl.h"

static atomic_long countdown;
static atomic_int fault_errno;

void ct__io_fail_after(long n, int err) {
    atomic_store(&fault_errno, err);
    atomic_store(&countdown, n);
}

bool ct__io_fault(void) {
    long k = atomic_load_explicit(&countdown, memory_order_relaxed);
    if (k == 0) return false;
    if (atomic_fetch_sub(&countdown, 1) != 1) return false;
    errno = atomic_load(&fault_errno);
    return true;
}
