/* Reading safetensors files: the 8-byte header size, the header (parsed by safetensors_json.c),
 * the checks that tie shapes, offsets and the byte buffer together, then the tensors, each read
 * with fread into a host staging buffer and made with ct_from_data on the target device. The
 * file is hostile until checked: nothing is allocated from a number in it before that number is
 * bounded by the file's real size. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype_impl.h"
#include "core/error_impl.h"
#include "data/data_file_impl.h"
#include "data/io_fault_impl.h"
#include "data/safetensors_impl.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data are little-endian: this reader needs a little-endian host"
#endif

typedef struct reader {
    const char *path;
    FILE *f;
    uint64_t file_size, header_size, buffer_size;
} reader;

static ct_status format_error(const reader *r, const char *fmt, ...) CT_PRINTF_(2, 3);
static ct_status format_error(const reader *r, const char *fmt, ...) {
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ct__error(CT_ERR_FORMAT, "ct_safetensors_load: %s: %s", r->path, what);
}

/* CT_ERR_IO from errno; a short read at the end of the file has errno 0. */
static ct_status io_error(const reader *r, const char *what) {
    int err = errno;
    if (ferror(r->f) || err)
        return ct__error(CT_ERR_IO, "ct_safetensors_load: cannot %s %s: %s", what, r->path,
                         strerror(err));
    return ct__error(CT_ERR_IO,
                     "ct_safetensors_load: cannot %s %s: the file ended early (was it "
                     "changed while being read?)",
                     what, r->path);
}

/* The size prefix, checked against the limit and the file's size. */
static ct_status read_prefix(reader *r) {
    if (r->file_size < 8)
        return format_error(r,
                            "the file is %llu bytes; a safetensors file starts with an 8-byte "
                            "header size",
                            (unsigned long long)r->file_size);
    unsigned char prefix[8];
    errno = 0;
    if (ct__io_fault() || fread(prefix, 1, 8, r->f) != 8) return io_error(r, "read");
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | prefix[i];
    if (n > CT_ST_MAX_HEADER)
        return format_error(r,
                            "the header size %llu (bytes 0-7) is above the 100 MB limit; this "
                            "is not a safetensors file or it is damaged",
                            (unsigned long long)n);
    if (n > r->file_size - 8)
        return format_error(r,
                            "the header size %llu (bytes 0-7) runs past the end of the file "
                            "(%llu bytes): the file is truncated or not safetensors",
                            (unsigned long long)n, (unsigned long long)r->file_size);
    r->header_size = n;
    r->buffer_size = r->file_size - 8 - n;
    return CT_OK;
}

/* The header's bytes, in a new buffer (*json). */
static ct_status read_header(reader *r, char **json) {
    if (read_prefix(r) != CT_OK) return ct_last_status();
    *json = ct__malloc(r->header_size ? r->header_size : 1);
    if (!*json)
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "ct_safetensors_load: %s: out of host memory for "
                         "a %llu-byte header",
                         r->path, (unsigned long long)r->header_size);
    errno = 0;
    if (ct__io_fault() || fread(*json, 1, r->header_size, r->f) != r->header_size)
        return io_error(r, "read");
    return CT_OK;
}

/* Shape, dtype and byte range of one entry agree, and the range lies in the buffer. */
static ct_status check_entry(const reader *r, const ct__st_entry *e) {
    int64_t numel = 1;
    for (int i = 0; i < e->ndim; i++)
        if (ct__mul_overflow_i64(numel, e->shape[i], &numel))
            return format_error(r,
                                "the shape of tensor \"%.64s\" (at byte %zu) has more elements "
                                "than fit in 64 bits",
                                e->name, e->at + 8);
    uint64_t bytes;
    if (__builtin_mul_overflow((uint64_t)numel, (uint64_t)ct_dtype_size(e->dtype), &bytes))
        return format_error(r, "tensor \"%.64s\" (at byte %zu) is larger than 2^64 bytes", e->name,
                            e->at + 8);
    if (e->begin > e->end)
        return format_error(r,
                            "tensor \"%.64s\" (at byte %zu) has reversed data_offsets [%llu, "
                            "%llu]; expected [begin, end] with begin <= end",
                            e->name, e->at + 8, (unsigned long long)e->begin,
                            (unsigned long long)e->end);
    if (e->end > r->buffer_size)
        return format_error(r,
                            "tensor \"%.64s\" (at byte %zu) has data_offsets [%llu, %llu] "
                            "past the end of the %llu-byte buffer (the file is truncated or "
                            "damaged)",
                            e->name, e->at + 8, (unsigned long long)e->begin,
                            (unsigned long long)e->end, (unsigned long long)r->buffer_size);
    if (e->end - e->begin != bytes)
        return format_error(r,
                            "tensor \"%.64s\" (at byte %zu) has %lld %s elements (%llu bytes) "
                            "but data_offsets [%llu, %llu] hold %llu bytes",
                            e->name, e->at + 8, (long long)numel, ct__dtype_safetensors(e->dtype),
                            (unsigned long long)bytes, (unsigned long long)e->begin,
                            (unsigned long long)e->end, (unsigned long long)(e->end - e->begin));
    return CT_OK;
}

static int compare_ranges(const void *a, const void *b) {
    const ct__st_entry *x = *(const ct__st_entry *const *)a, *y = *(const ct__st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* The ranges tile the buffer exactly, as the format requires: no overlap, no hole, nothing
 * after the last tensor. */
static ct_status check_coverage(const reader *r, const ct__st_header *h) {
    const ct__st_entry **sorted = ct__malloc((h->count ? h->count : 1) * sizeof *sorted);
    if (!sorted)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_safetensors_load: %s: out of host memory",
                         r->path);
    for (size_t i = 0; i < h->count; i++) sorted[i] = &h->entries[i];
    qsort(sorted, h->count, sizeof *sorted, compare_ranges);
    uint64_t cursor = 0;
    const ct__st_entry *last = NULL;
    ct_status status = CT_OK;
    for (size_t i = 0; i < h->count && status == CT_OK; i++) {
        const ct__st_entry *e = sorted[i];
        if (e->begin < cursor)
            status = format_error(r,
                                  "tensor \"%.64s\" data_offsets [%llu, %llu] overlap those of "
                                  "tensor \"%.64s\", which end at %llu",
                                  e->name, (unsigned long long)e->begin, (unsigned long long)e->end,
                                  last->name, (unsigned long long)cursor);
        else if (e->begin > cursor)
            status =
                format_error(r,
                             "bytes [%llu, %llu) of the buffer belong to no tensor (a "
                             "hole before tensor \"%.64s\")",
                             (unsigned long long)cursor, (unsigned long long)e->begin, e->name);
        cursor = e->end;
        last = e;
    }
    ct__free_mem(sorted);
    if (status == CT_OK && cursor != r->buffer_size)
        status = format_error(r,
                              "%llu bytes of trailing data after the last tensor's data "
                              "(buffer bytes [%llu, %llu), file offset %llu)",
                              (unsigned long long)(r->buffer_size - cursor),
                              (unsigned long long)cursor, (unsigned long long)r->buffer_size,
                              (unsigned long long)(8 + r->header_size + cursor));
    return status;
}

static ct_status check_header(const reader *r, const ct__st_header *h) {
    for (size_t i = 0; i < h->count; i++)
        if (check_entry(r, &h->entries[i]) != CT_OK) return ct_last_status();
    return check_coverage(r, h);
}

/* Read each tensor's bytes and make it on device, in header order. */
static ct_status load_tensors(const reader *r, const ct__st_header *h, ct_device device,
                              ct_state_dict *sd) {
    uint64_t largest = 0; /* bounded by the buffer, so by the file's size */
    for (size_t i = 0; i < h->count; i++)
        if (h->entries[i].end - h->entries[i].begin > largest)
            largest = h->entries[i].end - h->entries[i].begin;
    void *staging = largest ? ct__malloc((size_t)largest) : NULL;
    if (largest && !staging)
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "ct_safetensors_load: %s: out of host memory for "
                         "a %llu-byte tensor",
                         r->path, (unsigned long long)largest);
    ct_status status = CT_OK;
    for (size_t i = 0; i < h->count && status == CT_OK; i++) {
        const ct__st_entry *e = &h->entries[i];
        size_t bytes = (size_t)(e->end - e->begin);
        errno = 0;
        if (bytes && (ct__io_fault() ||
                      fseeko(r->f, (off_t)(8 + r->header_size + e->begin), SEEK_SET) != 0 ||
                      fread(staging, 1, bytes, r->f) != bytes)) {
            status = io_error(r, "read");
            break;
        }
        ct_tensor *t = ct_from_data(staging, e->ndim, e->shape, e->dtype, device);
        if (!t) {
            status = ct_last_status();
            break;
        }
        status = ct_state_dict_set(sd, e->name, t);
        ct_release(t);
    }
    ct__free_mem(staging);
    return status;
}

static ct_status fill(const reader *r, const ct__st_header *h, ct_device device,
                      ct_state_dict *sd) {
    for (size_t i = 0; i < h->meta_count; i++)
        if (ct_state_dict_set_metadata(sd, h->meta[i].key, h->meta[i].value) != CT_OK)
            return ct_last_status();
    return load_tensors(r, h, device, sd);
}

ct_state_dict *ct_safetensors_load(const char *path, ct_device device) {
    if (!path) return ct__fail(CT_ERR_INVALID_ARG, "ct_safetensors_load: path is NULL");
    reader r = {.path = path};
    /* Opened without blocking (a FIFO would wait for a writer) and checked to be a regular
     * file, whose size bounds every number in the header. */
    int fd = ct__open_regular("ct_safetensors_load", path, &r.file_size);
    if (fd < 0) return NULL;
    r.f = fdopen(fd, "rb");
    if (!r.f) {
        ct__error(CT_ERR_IO, "ct_safetensors_load: cannot open %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    char *json = NULL;
    ct__st_header header = {0};
    ct_state_dict *sd = NULL;
    ct_status status = read_header(&r, &json);
    if (status == CT_OK) status = ct__st_parse_header(path, json, r.header_size, &header);
    ct__free_mem(json);
    if (status == CT_OK) status = check_header(&r, &header);
    if (status == CT_OK) {
        sd = ct_state_dict_new();
        status = sd ? fill(&r, &header, device, sd) : ct_last_status();
    }
    ct__st_header_free(&header);
    fclose(r.f);
    if (status == CT_OK) return sd;
    ct_state_dict_free(sd);
    return NULL;
}
