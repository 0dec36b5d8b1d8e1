/* The I/O fault seam of the readers and the safetensors writer, as ct__malloc is the
 * allocation seam: every read, write and sync of a data file asks ct__io_fault() first, so a
 * test can make the Nth one fail with a chosen errno (EIO, ENOSPC, ...) and check that the
 * error is clear and nothing is lost or left behind. */
#ifndef CT_IO_FAULT_IMPL_H
#define CT_IO_FAULT_IMPL_H

#include <stdbool.h>

/* Make the nth I/O call from now fail with errno err (n >= 1); n = 0 switches injection off.
 * For tests. */
void ct__io_fail_after(long n, int err);

/* Whether this I/O call is to fail: true with errno set when it is the one chosen. */
bool ct__io_fault(void);

#endif
