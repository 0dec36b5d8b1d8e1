/* libctensor_nccl.so: the NCCL engine's device side. It finds libnccl.so.2 at run time
 * (dlopen, so that the build needs only NCCL's header and a machine without NCCL still loads
 * the core), makes non-blocking communicators (ncclConfig_t.blocking = 0, so that no NCCL
 * call waits for a lost peer), and queues each collective on the communicator's own
 * non-blocking CUDA stream followed by an event the core polls. It links the CUDA runtime
 * statically, as the CUDA plugin does, and so needs only the driver at run time. */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/nccl_plugin_impl.h"

_Static_assert(sizeof(ncclUniqueId) == CT_NCCL_ID_BYTES, "ncclUniqueId changed size");

/* NCCL's calls, resolved from libnccl.so.2. */
static struct {
    __typeof__(ncclGetVersion) *get_version;
    __typeof__(ncclGetUniqueId) *get_unique_id;
    __typeof__(ncclCommInitRankConfig) *init_rank_config;
    __typeof__(ncclCommGetAsyncError) *async_error;
    __typeof__(ncclAllReduce) *all_reduce;
    __typeof__(ncclBroadcast) *broadcast;
    __typeof__(ncclAllGather) *all_gather;
    __typeof__(ncclCommAbort) *abort;
    __typeof__(ncclCommFinalize) *finalize;
    __typeof__(ncclCommDestroy) *destroy;
    __typeof__(ncclGetErrorString) *error_string;
    __typeof__(ncclGetLastError) *last_error;
} nccl;

typedef struct plugin_comm {
    ncclComm_t comm;
    cudaStream_t stream;
    int device;
} plugin_comm;

static int nccl_report(ncclResult_t rc, const char *call, ncclComm_t comm, char *err,
                       size_t err_size) {
    if (rc == ncclSuccess || rc == ncclInProgress) return 0;
    const char *detail = nccl.last_error ? nccl.last_error(comm) : "";
    snprintf(err, err_size, "%s failed: %s%s%s", call, nccl.error_string(rc),
             detail && *detail ? ": " : "", detail ? detail : "");
    return 1;
}

static int cuda_report(cudaError_t rc, const char *call, char *err, size_t err_size) {
    if (rc == cudaSuccess) return 0;
    snprintf(err, err_size, "%s failed: %s (%s)", call, cudaGetErrorString(rc),
             cudaGetErrorName(rc));
    return 1;
}

static int resolve(void *lib, const char *name, void **out, char *err, size_t err_size) {
    *out = dlsym(lib, name);
    if (*out) return 0;
    snprintf(err, err_size, "libnccl.so.2 has no %s: NCCL 2.14 or newer is needed", name);
    return 1;
}

static int plugin_load(char *version, size_t version_size, char *err, size_t err_size) {
    static void *lib;
    if (!lib) {
        void *handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            snprintf(err, err_size,
                     "libnccl.so.2 could not be loaded (%s); install NCCL (it comes with the "
                     "CUDA toolkit's libnccl2 package) or add its folder to LD_LIBRARY_PATH",
                     dlerror());
            return 1;
        }
        struct {
            const char *name;
            void **slot;
        } calls[] = {
            {"ncclGetVersion", (void **)&nccl.get_version},
            {"ncclGetUniqueId", (void **)&nccl.get_unique_id},
            {"ncclCommInitRankConfig", (void **)&nccl.init_rank_config},
            {"ncclCommGetAsyncError", (void **)&nccl.async_error},
            {"ncclAllReduce", (void **)&nccl.all_reduce},
            {"ncclBroadcast", (void **)&nccl.broadcast},
            {"ncclAllGather", (void **)&nccl.all_gather},
            {"ncclCommAbort", (void **)&nccl.abort},
            {"ncclCommFinalize", (void **)&nccl.finalize},
            {"ncclCommDestroy", (void **)&nccl.destroy},
            {"ncclGetErrorString", (void **)&nccl.error_string},
        };
        for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
            if (resolve(handle, calls[i].name, calls[i].slot, err, err_size)) {
                dlclose(handle);
                return 1;
            }
        *(void **)&nccl.last_error = dlsym(handle, "ncclGetLastError"); /* optional */
        lib = handle;
    }
    int v = 0;
    if (nccl_report(nccl.get_version(&v), "ncclGetVersion", NULL, err, err_size)) return 1;
    /* NCCL_VERSION(x, y, z) is x * 10000 + y * 100 + z since 2.9. */
    snprintf(version, version_size, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    return 0;
}

static int plugin_unique_id(void *id, char *err, size_t err_size) {
    return nccl_report(nccl.get_unique_id((ncclUniqueId *)id), "ncclGetUniqueId", NULL, err,
                       err_size);
}

static int plugin_comm_init(const void *id, int rank, int size, int device, void **out, char *err,
                            size_t err_size) {
    plugin_comm *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_size, "out of host memory");
        return 1;
    }
    c->device = device;
    if (cuda_report(cudaSetDevice(device), "cudaSetDevice", err, err_size) ||
        cuda_report(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
                    "cudaStreamCreateWithFlags", err, err_size)) {
        free(c);
        return 1;
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclUniqueId uid;
    memcpy(&uid, id, sizeof uid);
    if (nccl_report(nccl.init_rank_config(&c->comm, size, uid, rank, &config),
                    "ncclCommInitRankConfig", NULL, err, err_size)) {
        cudaStreamDestroy(c->stream);
        free(c);
        return 1;
    }
    *out = c;
    return 0;
}

static int plugin_state(void *comm, char *err, size_t err_size) {
    plugin_comm *c = comm;
    ncclResult_t async = ncclSuccess;
    ncclResult_t rc = nccl.async_error(c->comm, &async);
    if (rc == ncclSuccess) rc = async;
    if (rc == ncclInProgress) return CT_NCCL_IN_PROGRESS;
    return nccl_report(rc, "NCCL (ncclCommGetAsyncError)", c->comm, err, err_size) ? CT_NCCL_FAILED
                                                                                   : CT_NCCL_READY;
}

static ncclDataType_t nccl_type(ct_nccl_type type) {
    switch (type) {
    case CT_NCCL_F32: return ncclFloat32;
    case CT_NCCL_F64: return ncclFloat64;
    case CT_NCCL_I32: return ncclInt32;
    case CT_NCCL_I64: return ncclInt64;
    }
    return ncclFloat32;
}

static int plugin_all_reduce(void *comm, void *buf, int64_t count, ct_nccl_type type,
                             ct_nccl_reduce op, char *err, size_t err_size) {
    plugin_comm *c = comm;
    if (cuda_report(cudaSetDevice(c->device), "cudaSetDevice", err, err_size)) return 1;
    return nccl_report(nccl.all_reduce(buf, buf, (size_t)count, nccl_type(type),
                                       op == CT_NCCL_AVG ? ncclAvg : ncclSum, c->comm, c->stream),
                       "ncclAllReduce", c->comm, err, err_size);
}

static int plugin_broadcast(void *comm, void *buf, int64_t count, ct_nccl_type type, int root,
                            char *err, size_t err_size) {
    plugin_comm *c = comm;
    if (cuda_report(cudaSetDevice(c->device), "cudaSetDevice", err, err_size)) return 1;
    return nccl_report(
        nccl.broadcast(buf, buf, (size_t)count, nccl_type(type), root, c->comm, c->stream),
        "ncclBroadcast", c->comm, err, err_size);
}

static int plugin_all_gather(void *comm, const void *send, void *recv, int64_t count,
                             ct_nccl_type type, char *err, size_t err_size) {
    plugin_comm *c = comm;
    if (cuda_report(cudaSetDevice(c->device), "cudaSetDevice", err, err_size)) return 1;
    return nccl_report(
        nccl.all_gather(send, recv, (size_t)count, nccl_type(type), c->comm, c->stream),
        "ncclAllGather", c->comm, err, err_size);
}

static int plugin_record(void *comm, void **event, char *err, size_t err_size) {
    plugin_comm *c = comm;
    cudaEvent_t e;
    if (cuda_report(cudaSetDevice(c->device), "cudaSetDevice", err, err_size) ||
        cuda_report(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate", err,
                    err_size))
        return 1;
    if (cuda_report(cudaEventRecord(e, c->stream), "cudaEventRecord", err, err_size)) {
        cudaEventDestroy(e);
        return 1;
    }
    *event = e;
    return 0;
}

static int plugin_query(void *event, char *err, size_t err_size) {
    cudaError_t rc = cudaEventQuery((cudaEvent_t)event);
    if (rc == cudaErrorNotReady) return 0;
    return cuda_report(rc, "cudaEventQuery", err, err_size) ? -1 : 1;
}

static void plugin_event_free(void *event) { cudaEventDestroy((cudaEvent_t)event); }

static void plugin_abort(void *comm) {
    plugin_comm *c = comm;
    nccl.abort(c->comm);
    cudaStreamDestroy(c->stream);
    free(c);
}

static int plugin_finalize(void *comm, char *err, size_t err_size) {
    plugin_comm *c = comm;
    return nccl_report(nccl.finalize(c->comm), "ncclCommFinalize", c->comm, err, err_size);
}

/* No wait here: the core calls it once finalize ended, and cudaStreamDestroy returns at once
 * (the stream's resources are released when its work, all ended, has). */
static void plugin_destroy(void *comm) {
    plugin_comm *c = comm;
    nccl.destroy(c->comm);
    cudaStreamDestroy(c->stream);
    free(c);
}

static const ct_nccl_api api = {.abi_version = CT_NCCL_PLUGIN_ABI_VERSION,
                                .load = plugin_load,
                                .unique_id = plugin_unique_id,
                                .comm_init = plugin_comm_init,
                                .state = plugin_state,
                                .all_reduce = plugin_all_reduce,
                                .broadcast = plugin_broadcast,
                                .all_gather = plugin_all_gather,
                                .record = plugin_record,
                                .query = plugin_query,
                                .event_free = plugin_event_free,
                                .abort = plugin_abort,
                                .finalize = plugin_finalize,
                                .destroy = plugin_destroy};

__attribute__((visibility("default"))) const void *ct_nccl_plugin_entry(void) { return &api; }
