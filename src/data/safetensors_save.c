/* Writing safetensors files: the layout (the Python package's order: larger elements first,
 * then by name, so every tensor is aligned to its element size within the 8-aligned buffer),
 * the JSON header, and an atomic replace of the target (atomic_file.c: a locked temporary
 * file beside it is written, synced and renamed over it). Readers of the target see the old
 * file or the new one, never a part; a failure leaves the old file and no temporary. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/dtype_impl.h"
#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "data/atomic_file_impl.h"
#include "data/io_fault_impl.h"
#include "data/safetensors_impl.h"

/* A growing string; `failed` is sticky, so a sequence of appends is checked once. */
typedef struct text {
    char *s;
    size_t len, cap;
    bool failed;
} text;

static void text_add(text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) cap *= 2;
        char *grown = ct__realloc(t->s, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void text_str(text *t, const char *s) { text_add(t, s, strlen(s)); }

static void text_u64(text *t, uint64_t v) {
    char buf[24];
    text_add(t, buf, (size_t)snprintf(buf, sizeof buf, "%llu", (unsigned long long)v));
}

/* s as a JSON string: quotes, backslashes and control characters escaped; the rest is UTF-8
 * already (ct_state_dict_set and ct_state_dict_set_metadata check it). */
static void text_json_string(text *t, const char *s) {
    text_add(t, "\"", 1);
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            char escaped[2] = {'\\', (char)c};
            text_add(t, escaped, 2);
        } else if (c < 0x20) {
            char escaped[8];
            text_add(t, escaped, (size_t)snprintf(escaped, sizeof escaped, "\\u%04x", c));
        } else {
            text_add(t, p, 1);
        }
    }
    text_add(t, "\"", 1);
}

typedef struct item {
    const char *name;
    const ct_tensor *t;
    uint64_t begin, end;
} item;

static int compare_items(const void *a, const void *b) {
    const item *x = a, *y = b;
    size_t sx = ct_dtype_size(ct_dtype_of(x->t)), sy = ct_dtype_size(ct_dtype_of(y->t));
    if (sx != sy) return sx > sy ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The tensors in file order with their byte ranges (*out: count items, ct__free_mem it). */
static ct_status layout(const ct_state_dict *sd, item **out, size_t *count) {
    size_t n = (size_t)ct_state_dict_size(sd);
    item *items = ct__malloc((n ? n : 1) * sizeof *items);
    if (!items) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_safetensors_save: out of host memory");
    for (size_t i = 0; i < n; i++) {
        items[i] =
            (item){ct_state_dict_name_at(sd, (int)i), ct_state_dict_tensor_at(sd, (int)i), 0, 0};
        ct_dtype dtype = ct_dtype_of(items[i].t);
        if (!ct__dtype_safetensors(dtype)) {
            ct__free_mem(items);
            return ct__error(CT_ERR_UNSUPPORTED,
                             "ct_safetensors_save: tensor \"%.64s\" is %s, which the "
                             "safetensors format has no dtype for; save it as two float64 "
                             "tensors (ct_real, ct_imag) or ct_cast it to complex64",
                             items[i].name, ct_dtype_name(dtype));
        }
    }
    qsort(items, n, sizeof *items, compare_items);
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)ct_numel(items[i].t) * ct_dtype_size(ct_dtype_of(items[i].t));
        items[i].begin = offset;
        if (__builtin_add_overflow(offset, bytes, &offset)) {
            ct__free_mem(items);
            return ct__error(CT_ERR_INVALID_ARG, "ct_safetensors_save: the tensors hold more "
                                                 "than 2^64 bytes");
        }
        items[i].end = offset;
    }
    *out = items;
    *count = n;
    return CT_OK;
}

static void header_entry(text *h, const item *it) {
    text_json_string(h, it->name);
    text_str(h, ":{\"dtype\":\"");
    text_str(h, ct__dtype_safetensors(ct_dtype_of(it->t)));
    text_str(h, "\",\"shape\":[");
    for (int d = 0; d < ct_ndim(it->t); d++) {
        if (d) text_str(h, ",");
        text_u64(h, (uint64_t)ct_shape(it->t)[d]);
    }
    text_str(h, "],\"data_offsets\":[");
    text_u64(h, it->begin);
    text_str(h, ",");
    text_u64(h, it->end);
    text_str(h, "]}");
}

/* The 8-byte size prefix and the JSON header, padded with spaces to a multiple of 8. */
static ct_status build_header(const ct_state_dict *sd, const item *items, size_t n, text *h) {
    text_add(h, "\0\0\0\0\0\0\0\0{", 9);
    int meta = ct_state_dict_metadata_size(sd);
    if (meta > 0) {
        text_str(h, "\"__metadata__\":{");
        for (int i = 0; i < meta; i++) {
            const char *key = ct_state_dict_metadata_key_at(sd, i);
            if (i) text_str(h, ",");
            text_json_string(h, key);
            text_str(h, ":");
            text_json_string(h, ct_state_dict_get_metadata(sd, key));
        }
        text_str(h, n ? "}," : "}");
    }
    for (size_t i = 0; i < n; i++) {
        if (i) text_str(h, ",");
        header_entry(h, &items[i]);
    }
    text_str(h, "}");
    while (!h->failed && h->len % 8 != 0) text_str(h, " ");
    if (h->failed)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_safetensors_save: out of host memory");
    uint64_t size = h->len - 8;
    for (int i = 0; i < 8; i++) h->s[i] = (char)(size >> (8 * i));
    return CT_OK;
}

static ct_status io_error(const char *what, const char *path) {
    return ct__error(CT_ERR_IO, "ct_safetensors_save: cannot %s %s: %s", what, path,
                     strerror(errno));
}

static ct_status write_bytes(ct__atomic_file *w, const void *data, size_t n) {
    errno = 0;
    if (n && (ct__io_fault() || fwrite(data, 1, n, w->f) != n))
        return io_error("write", w->tmp ? w->tmp : w->target);
    return CT_OK;
}

/* One tensor's bytes in C order: straight from host memory when it is contiguous there, else
 * through ct_copy_to_host (an explicit transfer for a device tensor) into *staging. */
static ct_status write_tensor(ct__atomic_file *w, const item *it, void **staging,
                              size_t *staging_size) {
    size_t bytes = (size_t)(it->end - it->begin);
    if (bytes == 0) return CT_OK;
    if (ct_device_of(it->t).type == CT_DEVICE_CPU && ct_is_contiguous(it->t))
        return write_bytes(w, ct__data(it->t), bytes);
    if (bytes > *staging_size) {
        ct__free_mem(*staging);
        *staging_size = 0;
        *staging = ct__malloc(bytes);
        if (!*staging)
            return ct__error(CT_ERR_OUT_OF_MEMORY,
                             "ct_safetensors_save: out of host memory for "
                             "tensor \"%s\" (%zu bytes)",
                             it->name, bytes);
        *staging_size = bytes;
    }
    if (ct_copy_to_host(it->t, *staging, bytes) != CT_OK) return ct_last_status();
    return write_bytes(w, *staging, bytes);
}

static ct_status write_file(ct__atomic_file *w, const char *path, const text *header,
                            const item *items, size_t n) {
    if (ct__atomic_open(w, "ct_safetensors_save", path) != CT_OK) return ct_last_status();
    ct_status status = write_bytes(w, header->s, header->len);
    void *staging = NULL;
    size_t staging_size = 0;
    for (size_t i = 0; i < n && status == CT_OK; i++)
        status = write_tensor(w, &items[i], &staging, &staging_size);
    ct__free_mem(staging);
    if (status == CT_OK) status = ct__atomic_commit(w);
    return status;
}

ct_status ct_safetensors_save(const char *path, const ct_state_dict *sd) {
    if (!path || !sd)
        return ct__error(CT_ERR_INVALID_ARG, "ct_safetensors_save: %s is NULL",
                         path ? "the state dict" : "path");
    item *items = NULL;
    size_t n = 0;
    text header = {0};
    ct__atomic_file w = {0};
    ct_status status = layout(sd, &items, &n);
    if (status == CT_OK) status = build_header(sd, items, n, &header);
    if (status == CT_OK) status = write_file(&w, path, &header, items, n);
    ct__atomic_close(&w);
    ct__free_mem(header.s);
    ct__free_mem(items);
    return status;
}
