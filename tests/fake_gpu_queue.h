/* The fake GPU's streams (fake_gpu_queue.c): one in-order queue of work per device, run by
 * a worker thread of its own, as a CUDA stream's work runs on the GPU while the host goes on.
 *
 * The worker runs the queue as late as a stream may: only what a synchronising call waits
 * for, what a query flushed, or everything once the queue is full (as a driver that batches
 * launches submits them). So a read of device memory, a write of a host buffer that queued
 * work still reads, or a free of one, without the synchronisation CUDA needs, finds the
 * work not done, every time; and the order of the work, hence every result, is that of the
 * calls, as with one stream. A work item that fails makes the device's error sticky: it is
 * returned by every later call on the device (the items queued after it are dropped), as
 * CUDA reports an asynchronous error, naming the item. */
#ifndef FAKE_GPU_QUEUE_H
#define FAKE_GPU_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/plugin_impl.h"

#define FAKE_GPU_DEVICES 1

/* Run on the worker: CT_OK, or a failure with its message written into message. */
typedef ct_status (*fake_work_fn)(void *payload, char *message, size_t size);

void fake_queue_init(const ct__plugin_host *host);

/* The host services fake_queue_init was given. */
const ct__plugin_host *fake_queue_host(void);

/* Queue work named `name` (a kernel's name, for the error message) after what is queued, and
 * return before it runs. payload (from malloc) passes to the queue, which frees it once the
 * work ran; `bytes` is the host memory it holds, counted against the queue's bound. *seq
 * (may be NULL) gets the work's number. Fails with the sticky error (payload freed). */
ct_status fake_queue_submit(int device, const char *name, fake_work_fn run, void *payload,
                            size_t bytes, uint64_t *seq);

/* Queue work after what is queued and wait for it, as a kernel that reads a result back:
 * its own status (a failure's message recorded on the calling thread), or the sticky error,
 * or the deadline's error (the work then never runs). payload stays the caller's. */
ct_status fake_queue_run(int device, const char *name, fake_work_fn run, void *payload);

/* Wait until work up to number seq (fake_queue_drain: all the queued work) has run: CT_OK,
 * or the sticky error, recorded on the calling thread. Every wait of this file is the device
 * wait (backend/device_wait_impl.h, as the CUDA plugin's): past CT_DEVICE_TIMEOUT (a stream
 * a test stalled with ct_fake_gpu_stall) it fails with CT_ERR_BACKEND naming what it waited
 * for, and the work stays queued. */
ct_status fake_queue_wait(int device, uint64_t seq);
ct_status fake_queue_drain(int device);

/* Whether work up to number seq (UINT64_MAX: all the queued work) has run, a sticky error
 * counting as done (nothing more will run), with no error recorded: with wait, after waiting
 * for it up to the deadline; without, a query, which flushes the queued work to the worker
 * without waiting. */
bool fake_queue_done(int device, uint64_t seq, bool wait);

#endif
