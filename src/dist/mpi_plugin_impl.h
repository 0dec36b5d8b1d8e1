/* The contract between the core and the MPI plugin (libctensor_mpi.so), which alone links
 * Open MPI: a table of non-blocking calls on host buffers over MPI_COMM_WORLD. The core
 * (comm_mpi.c) polls their requests against each collective's deadline; the plugin never
 * blocks except in init and finalize.
 *
 * Every call returns 0 or an MPI error code, with MPI's message written into err. */
#ifndef CT_MPI_PLUGIN_IMPL_H
#define CT_MPI_PLUGIN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CT_MPI_PLUGIN_ABI_VERSION 1
/* The entry, `const void *ct_mpi_plugin_entry(void)`, gives the plugin's ct_mpi_api. */
#define CT_MPI_PLUGIN_ENTRY "ct_mpi_plugin_entry"

/* Element types and reductions of the calls. */
#define CT_MPI_REQUEST_BYTES 64

typedef enum { CT_MPI_F32, CT_MPI_F64, CT_MPI_I32, CT_MPI_I64, CT_MPI_BYTE } ct_mpi_type;

typedef struct ct_mpi_api {
    int abi_version;
    /* MPI_Init_thread (serialized) and the world's rank and size; the library's version. */
    int (*init)(int *rank, int *size, char *version, size_t version_size, char *err,
                size_t err_size);
    /* Post a collective on count elements (at most INT_MAX); `request` is storage of
     * CT_MPI_REQUEST_BYTES the core owns, and with the buffers it must stay valid until test
     * says the request ended: after a timeout the core leaks them rather than free them under
     * a collective MPI may still complete. */
    int (*iallreduce_sum)(void *buf, int64_t count, ct_mpi_type type, void *request, char *err,
                          size_t err_size);
    int (*ibcast)(void *buf, int64_t count, ct_mpi_type type, int root, void *request, char *err,
                  size_t err_size);
    int (*iallgather)(const void *send, void *recv, int64_t count, ct_mpi_type type, void *request,
                      char *err, size_t err_size);
    /* *done = 1 once the request ended. */
    int (*test)(void *request, int *done, char *err, size_t err_size);
    void (*finalize)(void);
} ct_mpi_api;

#ifdef __cplusplus
}
#endif
#endif
