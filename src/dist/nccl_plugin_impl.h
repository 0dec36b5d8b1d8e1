/* The contract between the core and the NCCL plugin (libctensor_nccl.so), which alone talks
 * to NCCL and the CUDA runtime for collectives: it loads libnccl.so.2 with dlopen at run
 * time, makes non-blocking NCCL communicators, and queues collectives on device buffers on
 * a stream of its own per communicator, each followed by an event. The core (comm_nccl.c)
 * polls the events and the communicator's asynchronous error against each collective's
 * deadline and aborts the communicator when one passes; the plugin never blocks.
 *
 * Every call that can fail returns 0, or non-zero with the reason (NCCL's or CUDA's message
 * and the call that failed) written into err. A test (tests/fake_nccl_plugin.c) provides the
 * same table over host memory, so that the core's side runs without a GPU. */
#ifndef CT_NCCL_PLUGIN_IMPL_H
#define CT_NCCL_PLUGIN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CT_NCCL_PLUGIN_ABI_VERSION 2
/* The entry, `const void *ct_nccl_plugin_entry(void)`, gives the plugin's ct_nccl_api. */
#define CT_NCCL_PLUGIN_ENTRY "ct_nccl_plugin_entry"
#define CT_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */

typedef enum { CT_NCCL_F32, CT_NCCL_F64, CT_NCCL_I32, CT_NCCL_I64 } ct_nccl_type;
typedef enum { CT_NCCL_SUM, CT_NCCL_AVG } ct_nccl_reduce;

/* What a poll of an asynchronous state found. */
#define CT_NCCL_READY 0
#define CT_NCCL_IN_PROGRESS 1
#define CT_NCCL_FAILED 2

typedef struct ct_nccl_api {
    int abi_version;
    /* Load NCCL (once); its version ("2.28.3") into version. */
    int (*load)(char *version, size_t version_size, char *err, size_t err_size);
    /* ncclGetUniqueId into id (CT_NCCL_ID_BYTES). */
    int (*unique_id)(void *id, char *err, size_t err_size);
    /* Begin rank `rank` of `size` of the communicator `id` on CUDA device `device`,
     * non-blocking: *comm is set at once and is ready once state says so. */
    int (*comm_init)(const void *id, int rank, int size, int device, void **comm, char *err,
                     size_t err_size);
    /* The communicator's asynchronous state (ncclCommGetAsyncError): CT_NCCL_READY,
     * CT_NCCL_IN_PROGRESS, or CT_NCCL_FAILED with the reason in err. */
    int (*state)(void *comm, char *err, size_t err_size);
    /* Queue a collective on the communicator's stream, in place on count elements of the
     * device buffer buf (all-gather: send into recv, size * count elements). A return of 0
     * may leave the queueing in progress (state says when it ended). */
    int (*all_reduce)(void *comm, void *buf, int64_t count, ct_nccl_type type, ct_nccl_reduce op,
                      char *err, size_t err_size);
    int (*broadcast)(void *comm, void *buf, int64_t count, ct_nccl_type type, int root, char *err,
                     size_t err_size);
    int (*all_gather)(void *comm, const void *send, void *recv, int64_t count, ct_nccl_type type,
                      char *err, size_t err_size);
    /* An event after the work queued so far on the communicator's stream: *event set. */
    int (*record)(void *comm, void **event, char *err, size_t err_size);
    /* Whether the work before event ended: 1 yes, 0 not yet, -1 failed (err set). */
    int (*query)(void *event, char *err, size_t err_size);
    void (*event_free)(void *event);
    /* ncclCommAbort: ends the communicator at once, whatever is in flight. */
    void (*abort)(void *comm);
    /* ncclCommFinalize, non-blocking: flushes the work issued and leaves the communicator
     * in progress until it is globally quiescent, when state says CT_NCCL_READY. */
    int (*finalize)(void *comm, char *err, size_t err_size);
    /* ncclCommDestroy once finalize ended (it then frees local resources without blocking),
     * and the stream, whose work has ended. */
    void (*destroy)(void *comm);
} ct_nccl_api;

#ifdef __cplusplus
}
#endif
#endif
