/* safetensors internals shared by the header parser, the loader and the saver: the parsed
 * header and the dtype names of the format. */
#ifndef CT_SAFETENSORS_IMPL_H
#define CT_SAFETENSORS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "ctensor/ctensor.h"

/* The largest header accepted, as the Python package (100 MB): the header is read whole. */
#define CT_ST_MAX_HEADER ((uint64_t)100000000)

/* One tensor's header entry, as parsed: the strings are UTF-8 without NUL bytes. */
typedef struct ct__st_entry {
    char *name;
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    uint64_t begin, end; /* data_offsets, relative to the start of the byte buffer */
    size_t at;           /* header offset of the entry's name, for messages */
} ct__st_entry;

/* One "__metadata__" pair. */
typedef struct ct__st_pair {
    char *key, *value;
    size_t at; /* header offset of the key */
} ct__st_pair;

typedef struct ct__st_header {
    ct__st_entry *entries; /* in header order */
    size_t count, capacity;
    ct__st_pair *meta; /* in header order */
    size_t meta_count, meta_capacity;
} ct__st_header;

/* Parse the JSON header (size bytes at json, not NUL-terminated) of file into out (zeroed by
 * the caller; free with ct__st_header_free, also after a failure). Checks the syntax strictly
 * and the schema: fields, dtypes, ranks, integers, duplicates. Not checked here: the shapes
 * against the offsets, and the offsets against the buffer (the loader does that).
 * CT_ERR_FORMAT naming file and the byte offset in the file; CT_ERR_OUT_OF_MEMORY. */
ct_status ct__st_parse_header(const char *file, const char *json, size_t size, ct__st_header *out);
void ct__st_header_free(ct__st_header *h);

#endif
