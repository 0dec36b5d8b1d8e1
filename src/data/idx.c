/* The IDX reader (the MNIST format): magic 00 00, a type byte, a dimension count, big-endian
 * u32 sizes, then big-endian data; plain or gzipped. i8 and i16 data widen to CT_I32, the
 * smallest signed ctensor type that holds them. */
#include <string.h>

#include "ctensor/data.h"
#include "data/data_file_impl.h"

#define FN "ct_read_idx"

typedef struct {
    unsigned char code;
    size_t width; /* bytes per element in the file */
    ct_dtype dtype;
    const char *name;
} idx_type;

static const idx_type idx_types[] = {
    {0x08, 1, CT_U8, "u8"},   {0x09, 1, CT_I32, "i8"},  {0x0B, 2, CT_I32, "i16"},
    {0x0C, 4, CT_I32, "i32"}, {0x0D, 4, CT_F32, "f32"}, {0x0E, 8, CT_F64, "f64"},
};

static uint32_t load_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The magic, type and sizes; fills type and shape. */
static ct_status read_header(ct__data_file *f, const idx_type **type, int *ndim, int64_t *shape) {
    unsigned char head[4], sizes[4 * CT_MAX_DIMS];
    if (ct__data_read_exact(f, head, 4, "the IDX magic") != CT_OK) return ct_last_status();
    if (head[0] != 0 || head[1] != 0)
        return ct__data_format_error(
            f, 0, "not an IDX file: it starts with %02x %02x, expected 00 00", head[0], head[1]);
    *type = NULL;
    for (size_t i = 0; i < sizeof idx_types / sizeof idx_types[0]; i++)
        if (idx_types[i].code == head[2]) *type = &idx_types[i];
    if (!*type)
        return ct__data_format_error(f, 2,
                                     "unknown IDX type byte 0x%02x (expected 0x08, 0x09, 0x0B, "
                                     "0x0C, 0x0D or 0x0E)",
                                     head[2]);
    if (head[3] > CT_MAX_DIMS)
        return ct__data_format_error(f, 3, "%d dimensions; ctensor supports at most %d", head[3],
                                     CT_MAX_DIMS);
    *ndim = head[3];
    if (ct__data_read_exact(f, sizes, 4 * (size_t)*ndim, "the IDX dimension sizes") != CT_OK)
        return ct_last_status();
    for (int i = 0; i < *ndim; i++) shape[i] = load_be32(sizes + 4 * i);
    return CT_OK;
}

/* Big-endian integers of 1 or 2 bytes, widened to i32. */
static void widen_to_i32(const unsigned char *src, int32_t *dst, int64_t n, size_t width) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = width == 1 ? (int8_t)src[i]
                            : (int16_t)(uint16_t)((unsigned)src[2 * i] << 8 | src[2 * i + 1]);
}

static ct_tensor *read_data(ct__data_file *f, const idx_type *type, int ndim,
                            const int64_t *shape) {
    if (type->width == ct_dtype_size(type->dtype)) {
        ct_tensor *t = ct__data_read_tensor(f, type->dtype, ndim, shape, "the IDX data");
        if (t && type->width > 1 && ct__data_host_little_endian())
            ct__data_swap_bytes(ct__data(t), (size_t)t->numel, type->width);
        return t;
    }
    /* i8 and i16: read the raw bytes, then widen into the result. */
    int64_t raw_shape[CT_MAX_DIMS];
    memcpy(raw_shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (ndim > 0 && type->width == 2 && raw_shape[ndim - 1] <= INT64_MAX / 2)
        raw_shape[ndim - 1] *= 2;
    else if (ndim > 0 && type->width == 2)
        return ct__data_format_error(f, f->offset, "the shape of the IDX data overflows"), NULL;
    int raw_ndim = ndim > 0 ? ndim : 1;
    if (ndim == 0) raw_shape[0] = (int64_t)type->width;
    ct_tensor *raw = ct__data_read_tensor(f, CT_U8, raw_ndim, raw_shape, "the IDX data");
    if (!raw) return NULL;
    ct_tensor *t = ct__host_tensor_new(type->dtype, ndim, shape);
    if (t)
        widen_to_i32((const unsigned char *)ct__data(raw), (int32_t *)ct__data(t), t->numel,
                     type->width);
    ct_release(raw);
    return t;
}

ct_tensor *ct_read_idx(const char *path) {
    ct__data_file f;
    if (ct__data_open(&f, FN, path) != CT_OK) return NULL;
    const idx_type *type = NULL;
    int ndim = 0;
    int64_t shape[CT_MAX_DIMS];
    ct_tensor *t = NULL;
    if (read_header(&f, &type, &ndim, shape) == CT_OK) t = read_data(&f, type, ndim, shape);
    if (t && ct__data_expect_end(&f) != CT_OK) {
        ct_release(t);
        t = NULL;
    }
    ct__data_close(&f);
    return t;
}
