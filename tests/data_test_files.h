/* Helpers for the data reader tests: build files byte by byte (big- or little-endian values,
 * NPY preambles), write them plain or gzipped (through zlib's gzopen/gzwrite) in a temporary
 * folder removed at exit, and check readers' failures. */
#ifndef CT_DATA_TEST_FILES_H
#define CT_DATA_TEST_FILES_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ct_test.h"

typedef struct {
    unsigned char data[16384];
    size_t n;
} byte_buf;

static inline void buf_u8(byte_buf *b, unsigned v) {
    if (b->n < sizeof b->data) b->data[b->n++] = (unsigned char)v;
}

static inline void buf_bytes(byte_buf *b, const void *p, size_t n) {
    for (size_t i = 0; i < n; i++) buf_u8(b, ((const unsigned char *)p)[i]);
}

/* The low `width` bytes of v, most significant first when big, else least first. */
static inline void buf_int(byte_buf *b, uint64_t v, int width, bool big) {
    for (int i = 0; i < width; i++) buf_u8(b, (unsigned)(v >> (8 * (big ? width - 1 - i : i))));
}

static inline void buf_be(byte_buf *b, uint64_t v, int width) { buf_int(b, v, width, true); }

static inline void buf_float(byte_buf *b, double v, ct_dtype dtype, bool big) {
    if (dtype == CT_F64) {
        uint64_t u;
        memcpy(&u, &v, 8);
        buf_int(b, u, 8, big);
    } else if (dtype == CT_F32) {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        buf_int(b, u, 4, big);
    } else {
        buf_int(b, ct_f32_to_f16((float)v), 2, big);
    }
}

/* v stored as dtype. */
static inline void buf_value(byte_buf *b, double v, ct_dtype dtype, bool big) {
    if (ct_dtype_is_floating(dtype))
        buf_float(b, v, dtype, big);
    else
        buf_int(b, v >= 0x1p63 ? (uint64_t)v : (uint64_t)(int64_t)v, (int)ct_dtype_size(dtype),
                big);
}

/* "\x93NUMPY", the version, the header length and the header; padded (as numpy does) with
 * spaces and a newline to a multiple of 64 bytes when pad is set. */
static inline void npy_preamble(byte_buf *b, int version, const char *dict, bool pad) {
    size_t prefix = version == 1 ? 10 : 12, len = strlen(dict);
    size_t total = pad ? (prefix + len + 1 + 63) / 64 * 64 - prefix : len;
    buf_bytes(b, "\x93NUMPY", 6);
    buf_u8(b, (unsigned)version);
    buf_u8(b, 0);
    buf_int(b, total, version == 1 ? 2 : 4, false);
    buf_bytes(b, dict, len);
    for (size_t i = len; pad && i + 1 < total; i++) buf_u8(b, ' ');
    if (pad) buf_u8(b, '\n');
}

static char test_dir_[64];

static inline void remove_test_dir_(void) {
    DIR *d = opendir(test_dir_);
    char path[512];
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", test_dir_, e->d_name);
        remove(path);
    }
    if (d) closedir(d);
    remove(test_dir_);
}

/* dir/name in a fresh temporary folder; the result lives until eight more calls. */
static inline const char *tmp_path(const char *name) {
    static char paths[8][512];
    static int next;
    if (!test_dir_[0]) {
        snprintf(test_dir_, sizeof test_dir_, "/tmp/ct_data_test_XXXXXX");
        if (!mkdtemp(test_dir_)) return "/nonexistent-temporary-folder/x";
        atexit(remove_test_dir_);
    }
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", test_dir_, name);
    return p;
}

static inline bool write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static inline bool write_gzip(const char *path, const void *data, size_t n) {
    gzFile gz = gzopen(path, "wb");
    if (!gz) return false;
    bool ok = n == 0 || gzwrite(gz, data, (unsigned)n) == (int)n;
    return gzclose(gz) == Z_OK && ok;
}

/* data gzipped, as bytes. */
static inline bool gzip_bytes(const void *data, size_t n, byte_buf *out) {
    const char *path = tmp_path("scratch.gz");
    if (!write_gzip(path, data, n)) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    out->n = fread(out->data, 1, sizeof out->data, f);
    fclose(f);
    return out->n > 0 && out->n < sizeof out->data;
}

/* The first n values of t, as doubles. */
static inline bool tensor_values(const ct_tensor *t, double *out, int64_t n) {
    ct_tensor *wide = ct_cast(t, CT_F64);
    bool ok = wide && ct_numel(wide) == n &&
              ct_copy_to_host(wide, out, sizeof(double) * (size_t)n) == CT_OK;
    ct_release(wide);
    return ok;
}

/* The reader failed with CT_ERR_FORMAT and a message holding path and needle; clears it. */
static inline bool check_format_error(bool failed, const char *path, const char *needle) {
    bool ok = failed && ct_last_status() == CT_ERR_FORMAT && strstr(ct_last_error(), path) &&
              strstr(ct_last_error(), needle);
    if (!ok)
        printf("    expected CT_ERR_FORMAT naming %s and \"%s\", got %s: %s\n", path, needle,
               failed ? ct_status_name(ct_last_status()) : "success", ct_last_error());
    ct_clear_error();
    return ok;
}

/* A file cut to n bytes failed with CT_ERR_FORMAT naming the file and a byte offset. */
static inline bool expect_format_error(bool failed, const char *path, size_t n) {
    if (check_format_error(failed, path, ": byte ")) return true;
    printf("    (the file cut to %zu bytes)\n", n);
    return false;
}

#endif
