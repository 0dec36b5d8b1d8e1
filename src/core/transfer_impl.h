/* Transfer accounting and the guard (core/transfer.c) and the one function every copy
 * between host and devices goes through (backend/transfer_copy.c). */
#ifndef CT_TRANSFER_IMPL_H
#define CT_TRANSFER_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "ctensor/ctensor.h"

/* Apply the guard to a transfer and count it. CT_ERR_TRANSFER_GUARD (with a message naming
 * `what`) when the guard refuses; nothing is counted then except the refusal. */
ct_status ct__transfer_account(ct_transfer_direction direction, size_t bytes, bool implicit,
                               const char *what);

/* A kernel on `device` that reads a result back to the host and waits for the device: the
 * verdict of its check of the operands (bad targets or indices) or a value the call returns.
 * An implicit device-to-host transfer of `bytes`, counted and guarded before the launch, so
 * that a refusal changes nothing; CT_OK without counting on the CPU, whose kernels need no
 * transfer. `what` names the call and what it reads. */
ct_status ct__transfer_account_readback(ct_device device, size_t bytes, const char *what);

/* Copy size bytes between two places, each either host memory (a NULL device pointer:
 * `dst_device`/`src_device` NULL) or a device. Counts the transfer and applies the guard
 * when it is one (host to a non-CPU device, device to host, or two different devices);
 * copies between host memory and a CPU device are plain memcpy. `what` names the
 * operation for guard messages. */
ct_status ct__transfer(const ct_device *dst_device, void *dst, const ct_device *src_device,
                       const void *src, size_t size, bool implicit, const char *what);

#endif
