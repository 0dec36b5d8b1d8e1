/* libctensor_mpi.so: the only code that links Open MPI. It starts MPI and posts
 * non-blocking collectives on MPI_COMM_WORLD for the core's MPI engine (comm_mpi.c), which
 * polls them against its deadlines. Errors return (MPI_ERRORS_RETURN) with MPI's message,
 * so that a lost peer is a CT_ERR_COMM in the core rather than an abort here. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>

#include "dist/mpi_plugin_impl.h"

_Static_assert(sizeof(MPI_Request) <= CT_MPI_REQUEST_BYTES, "MPI_Request does not fit");

static int report(int rc, const char *call, char *err, size_t err_size) {
    if (rc == MPI_SUCCESS) return 0;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) snprintf(text, sizeof text, "?");
    snprintf(err, err_size, "%s failed: %s", call, text);
    return rc ? rc : 1;
}

static MPI_Datatype mpi_type(ct_mpi_type type) {
    switch (type) {
    case CT_MPI_F32: return MPI_FLOAT;
    case CT_MPI_F64: return MPI_DOUBLE;
    case CT_MPI_I32: return MPI_INT32_T;
    case CT_MPI_I64: return MPI_INT64_T;
    case CT_MPI_BYTE: return MPI_BYTE;
    }
    return MPI_BYTE;
}

static int too_many(int64_t count, char *err, size_t err_size) {
    if (count <= INT_MAX) return 0;
    snprintf(err, err_size, "%lld elements are more than one MPI call takes (%d)", (long long)count,
             INT_MAX);
    return 1;
}

static int plugin_init(int *rank, int *size, char *version, size_t version_size, char *err,
                       size_t err_size) {
    int provided = 0, rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) return report(rc, "MPI_Init_thread", err, err_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_size(MPI_COMM_WORLD, size);
    int length = 0;
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    if (MPI_Get_library_version(text, &length) == MPI_SUCCESS)
        snprintf(version, version_size, "%.*s",
                 length > 0 && text[length - 1] == '\n' ? length - 1 : length, text);
    return report(rc, "MPI_Comm_rank", err, err_size);
}

static int plugin_iallreduce_sum(void *buf, int64_t count, ct_mpi_type type, void *request,
                                 char *err, size_t err_size) {
    if (too_many(count, err, err_size)) return 1;
    return report(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(type), MPI_SUM,
                                 MPI_COMM_WORLD, request),
                  "MPI_Iallreduce", err, err_size);
}

static int plugin_ibcast(void *buf, int64_t count, ct_mpi_type type, int root, void *request,
                         char *err, size_t err_size) {
    if (too_many(count, err, err_size)) return 1;
    return report(MPI_Ibcast(buf, (int)count, mpi_type(type), root, MPI_COMM_WORLD, request),
                  "MPI_Ibcast", err, err_size);
}

static int plugin_iallgather(const void *send, void *recv, int64_t count, ct_mpi_type type,
                             void *request, char *err, size_t err_size) {
    if (too_many(count, err, err_size)) return 1;
    return report(MPI_Iallgather(send, (int)count, mpi_type(type), recv, (int)count, mpi_type(type),
                                 MPI_COMM_WORLD, request),
                  "MPI_Iallgather", err, err_size);
}

static int plugin_test(void *request, int *done, char *err, size_t err_size) {
    *done = 0;
    return report(MPI_Test(request, done, MPI_STATUS_IGNORE), "MPI_Test", err, err_size);
}

static void plugin_finalize(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

static const ct_mpi_api api = {
    CT_MPI_PLUGIN_ABI_VERSION, plugin_init, plugin_iallreduce_sum, plugin_ibcast,
    plugin_iallgather,         plugin_test, plugin_finalize};

__attribute__((visibility("default"))) const void *ct_mpi_plugin_entry(void) { return &api; }
