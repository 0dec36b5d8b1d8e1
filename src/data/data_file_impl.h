/* The byte source the data readers share: a file opened plain or, when it starts with the
 * gzip magic, through zlib; reads that track the byte offset (of the decompressed stream) for
 * error messages; and payload reads that check a declared size against the file before
 * allocating anything.
 *
 * Error messages read "<function>: <path>: byte <offset>: <problem>". */
#ifndef CT_DATA_FILE_IMPL_H
#define CT_DATA_FILE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"

typedef struct ct__data_file {
    const char *fn;   /* the public function, for messages */
    const char *path; /* as given, for messages */
    FILE *plain;      /* set for a plain file */
    void *gz;         /* a gzFile, set for a gzip file */
    uint64_t size;    /* the file's size on disk (compressed, for gzip) */
    uint64_t offset;  /* bytes consumed so far (of the decompressed stream, for gzip) */
} ct__data_file;

/* Open path for reading as a regular file without ever blocking (a FIFO, a device, a socket
 * or a folder is CT_ERR_IO naming the path and what it is); the descriptor, with *size the
 * file's size, or -1 with the error set. */
int ct__open_regular(const char *fn, const char *path, uint64_t *size);
/* What a file of this st_mode is, for messages: "a pipe (FIFO)", "a folder", ... */
const char *ct__file_kind(unsigned mode);

/* Open path for fn. CT_ERR_IO with the path and strerror when it cannot be opened. */
ct_status ct__data_open(ct__data_file *f, const char *fn, const char *path);
void ct__data_close(ct__data_file *f);

/* CT_ERR_FORMAT "<fn>: <path>: byte <offset>: <message>". */
ct_status ct__data_format_error(const ct__data_file *f, uint64_t offset, const char *fmt, ...)
    CT_PRINTF_(3, 4);

/* Up to n bytes into dst; *got says how many (fewer only at the end of the data).
 * CT_ERR_FORMAT for corrupt gzip data, CT_ERR_IO for a read error. */
ct_status ct__data_read_some(ct__data_file *f, void *dst, size_t n, size_t *got);

/* Exactly n bytes of `what` (e.g. "the header"); CT_ERR_FORMAT when the file ends first. */
ct_status ct__data_read_exact(ct__data_file *f, void *dst, size_t n, const char *what);

/* CT_ERR_FORMAT when bytes after the data remain. */
ct_status ct__data_expect_end(ct__data_file *f);

/* A new contiguous CPU tensor filled with the next numel * element-size bytes, as they lie
 * in the file (the caller fixes the byte order). The size is checked before allocating: for
 * a plain file against the bytes that remain, for gzip against the largest size deflate can
 * expand the file to, and then the data is read in growing steps, so a header that lies
 * fails when the data ends, having allocated no more than about twice what was there. */
ct_tensor *ct__data_read_tensor(ct__data_file *f, ct_dtype dtype, int ndim, const int64_t *shape,
                                const char *what);

/* Read the whole remaining file into a new buffer (ct__free_mem), NUL-terminated; *size is
 * its length without the NUL. */
char *ct__data_read_all(ct__data_file *f, size_t *size);

/* Reverse the bytes of each of count elements of width bytes (2, 4 or 8). */
void ct__data_swap_bytes(void *data, size_t count, size_t width);

/* Whether this machine stores numbers little-endian. */
static inline bool ct__data_host_little_endian(void) {
    return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
}

#endif
