/* State dicts and safetensors files: the map (order, replacement, references, lookups at
 * scale, errors), round trips of every dtype and shape on every device, the layout the writer
 * chooses, atomic writes (failed saves leave the old file and no temporary), and interop with
 * the Python package both ways (tests/safetensors_interop.py, run with the interpreter that
 * `make deps` sets up in .venv). Hostile files: test_safetensors_hostile.c. */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "core/error_impl.h"
#include "ct_ref.h"
#include "safetensors_test.h"

#ifndef CT_SOURCE_DIR
#error "tests/CMakeLists.txt defines CT_SOURCE_DIR for this test"
#endif

/* Element i of the tensors shared with the Python script: exact in every dtype. */
static double formula(ct_dtype dtype, int64_t i) {
    switch (dtype) {
    case CT_BOOL: return i % 3 == 0;
    case CT_U8:
    case CT_U16:
    case CT_U32:
    case CT_U64: return (double)((i * 37) % 256);
    case CT_I8:
    case CT_I16:
    case CT_I32:
    case CT_I64: return (double)(i * 7 - 20);
    default: return (double)i * 0.25 - 3.0;
    }
}

static ct_tensor *formula_tensor(ct_dtype dtype, int ndim, const int64_t *shape, ct_device dev) {
    int64_t n = ref_numel(ndim, shape);
    double *values = malloc((size_t)(n ? n : 1) * sizeof *values);
    if (!values) return NULL;
    for (int64_t i = 0; i < n; i++) values[i] = formula(dtype, i);
    ct_tensor *t = ref_tensor(values, ndim, shape, dtype, dev);
    free(values);
    return t;
}

/* t holds formula(dtype, i) with the given dtype and shape. */
static bool formula_matches(const ct_tensor *t, ct_dtype dtype, int ndim, const int64_t *shape) {
    if (!t || ct_dtype_of(t) != dtype || ct_ndim(t) != ndim) return false;
    if (ndim && memcmp(ct_shape(t), shape, (size_t)ndim * sizeof *shape) != 0) return false;
    double *values = ref_read(t);
    bool ok = values != NULL;
    for (int64_t i = 0; ok && i < ct_numel(t); i++) ok = values[i] == formula(dtype, i);
    free(values);
    return ok;
}

/* a and b have the same dtype, shape and bytes (C order). */
static bool same_tensor(const ct_tensor *a, const ct_tensor *b) {
    if (!a || !b || ct_dtype_of(a) != ct_dtype_of(b) || ct_ndim(a) != ct_ndim(b)) return false;
    if (ct_ndim(a) && memcmp(ct_shape(a), ct_shape(b), (size_t)ct_ndim(a) * sizeof(int64_t)))
        return false;
    size_t bytes = (size_t)ct_numel(a) * ct_dtype_size(ct_dtype_of(a));
    char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    bool ok = x && y && ct_copy_to_host(a, x, bytes) == CT_OK &&
              ct_copy_to_host(b, y, bytes) == CT_OK && memcmp(x, y, bytes) == 0;
    free(x);
    free(y);
    return ok;
}

/* ---- the map ---- */

TEST(test_safetensors_state_dict_order_replace_and_references) {
    ct_state_dict *sd = ct_state_dict_new();
    CHECK_NOT_NULL(sd);
    ct_tensor *a = ct_scalar(1, CT_F32, CT_CPU), *b = ct_scalar(2, CT_F32, CT_CPU);
    ct_tensor *c = ct_scalar(3, CT_F32, CT_CPU);
    bool ok = a && b && c && ct_state_dict_set(sd, "b", a) == CT_OK &&
              ct_state_dict_set(sd, "a", b) == CT_OK && ct_state_dict_set(sd, "b", c) == CT_OK;
    ct_release(a); /* the dict's reference keeps a alive until "b" is replaced */
    ct_release(b);
    ct_release(c);
    ok = ok && ct_state_dict_size(sd) == 2 && !strcmp(ct_state_dict_name_at(sd, 0), "b") &&
         !strcmp(ct_state_dict_name_at(sd, 1), "a") && ct_state_dict_get(sd, "b") == c &&
         ct_state_dict_tensor_at(sd, 0) == c && ct_state_dict_tensor_at(sd, 1) == b;
    double v = 0;
    ok = ok && ct_item(ct_state_dict_get(sd, "a"), &v) == CT_OK && v == 2;
    ct_state_dict_free(sd);
    CHECK(ok);
    ct_state_dict_free(NULL);
}

TEST(test_safetensors_state_dict_errors_name_the_problem) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_tensor *t = ct_scalar(1, CT_I32, CT_CPU);
    CHECK(sd && t);
    CHECK(ct_state_dict_get(sd, "missing.weight") == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "no tensor named \"missing.weight\"");
    CHECK(ct_state_dict_name_at(sd, 0) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index 0 is out of range [0, 0)");
    CHECK(ct_state_dict_tensor_at(sd, -1) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_state_dict_tensor_at: index -1");
    CHECK(ct_state_dict_set(sd, "__metadata__", t) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "reserved");
    CHECK(ct_state_dict_set(sd, "bad\xff", t) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "not valid UTF-8");
    CHECK(ct_state_dict_set(sd, "x", NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "the tensor for \"x\" is NULL");
    CHECK(ct_state_dict_set(NULL, "x", t) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "the state dict is NULL");
    CHECK(ct_state_dict_set_metadata(sd, "k", "\xc0\x80") == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "the value is not valid UTF-8");
    CHECK(ct_state_dict_set_metadata(sd, NULL, "v") == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "key is NULL");
    CHECK(ct_safetensors_save(NULL, sd) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "path is NULL");
    CHECK(ct_safetensors_load(NULL, CT_CPU) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "path is NULL");
    CHECK(ct_state_dict_size(sd) == 0 && ct_state_dict_size(NULL) == 0);
    ct_release(t);
    ct_state_dict_free(sd);
}

TEST(test_safetensors_state_dict_metadata) {
    ct_state_dict *sd = ct_state_dict_new();
    CHECK_NOT_NULL(sd);
    bool ok = ct_state_dict_set_metadata(sd, "format", "pt") == CT_OK &&
              ct_state_dict_set_metadata(sd, "epoch", "3") == CT_OK &&
              ct_state_dict_set_metadata(sd, "format", "ct") == CT_OK;
    ok = ok && !strcmp(ct_state_dict_get_metadata(sd, "format"), "ct") &&
         !strcmp(ct_state_dict_get_metadata(sd, "epoch"), "3") &&
         ct_state_dict_get_metadata(sd, "absent") == NULL && ct_last_status() == CT_OK &&
         ct_state_dict_metadata_size(sd) == 2 &&
         !strcmp(ct_state_dict_metadata_key_at(sd, 0), "format") &&
         ct_state_dict_metadata_key_at(sd, 2) == NULL;
    ct_state_dict_free(sd);
    CHECK(ok);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "index 2 is out of range [0, 2)");
}

/* 20000 names: set and look each up; quadratic lookups would take minutes here. */
TEST(test_safetensors_state_dict_many_names) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_tensor *t = ct_scalar(0, CT_F32, CT_CPU);
    CHECK(sd && t);
    enum { N = 20000 };
    char name[32];
    bool ok = true;
    for (int i = 0; i < N && ok; i++) {
        snprintf(name, sizeof name, "layer%d.weight", i);
        ok = ct_state_dict_set(sd, name, t) == CT_OK;
    }
    for (int i = 0; i < N && ok; i++) {
        snprintf(name, sizeof name, "layer%d.weight", i);
        ok = ct_state_dict_get(sd, name) == t && !strcmp(ct_state_dict_name_at(sd, i), name);
    }
    ok = ok && ct_state_dict_size(sd) == N;
    ct_state_dict_free(sd);
    ct_release(t);
    CHECK(ok);
}

/* Every allocation of set and set_metadata can fail without leaking or half-adding. */
TEST(test_safetensors_state_dict_out_of_memory) {
    ct_tensor *t = ct_scalar(0, CT_F32, CT_CPU);
    CHECK_NOT_NULL(t);
    for (long n = 1; n < 200; n++) {
        ct_state_dict *sd = ct_state_dict_new();
        CHECK_NOT_NULL(sd);
        ct__malloc_fail_after(n, 0);
        ct_status s = CT_OK;
        char name[16];
        for (int i = 0; i < 12 && s == CT_OK; i++) {
            snprintf(name, sizeof name, "t%d", i);
            s = ct_state_dict_set(sd, name, t);
            if (s == CT_OK) s = ct_state_dict_set_metadata(sd, name, "v");
        }
        ct__malloc_fail_after(0, 0);
        int size = ct_state_dict_size(sd);
        bool consistent = size == 0 || ct_state_dict_get(sd, ct_state_dict_name_at(sd, size - 1));
        ct_state_dict_free(sd);
        CHECK(consistent);
        if (s == CT_OK) break;
        CHECK(s == CT_ERR_OUT_OF_MEMORY);
        ct_clear_error();
    }
    ct_release(t);
}

/* ---- round trips ---- */

/* One tensor of each dtype with random values, a 0-d, an empty, a rank-8 and a non-contiguous
 * view, names that need escaping, and metadata. */
static ct_state_dict *sample_dict(ct_device device) {
    ct_state_dict *sd = ct_state_dict_new();
    if (!sd) return NULL;
    static const char
        *const names[CT_DTYPE_COUNT] = {"w.f32", "w.f64",  "w.f16", "w.bf16", "w.i32", "w.i64",
                                        "w.u8",  "w.bool", "w.i8",  "w.i16",  "w.u16", "w.u32",
                                        "w.u64", "w.c64",  NULL /* no complex128 in the format */};
    int64_t shape[2] = {3, 5};
    double values[15];
    bool ok = true;
    for (int dt = 0; dt < CT_DTYPE_COUNT && ok; dt++) {
        if (!names[dt]) continue;
        ref_random(values, 15, 100 + (uint64_t)dt, -100, 100);
        for (int i = 0; i < 15; i++)
            values[i] = dt == CT_BOOL ? (double)(values[i] > 0) : ref_round(values[i], dt);
        ct_tensor *t = ref_tensor(values, 2, shape, (ct_dtype)dt, device);
        ok = t && ct_state_dict_set(sd, names[dt], t) == CT_OK;
        ct_release(t);
    }
    int64_t empty[2] = {0, 3}, rank8[8] = {1, 2, 1, 2, 1, 2, 1, 2};
    ct_tensor *extra[4] = {ct_scalar(-2.5, CT_F64, device), ct_zeros(2, empty, CT_F32, device),
                           formula_tensor(CT_I64, 8, rank8, device),
                           ref_tensor_strided(values, 2, shape, CT_F32, device)};
    const char *extra_names[4] = {"scalar", "empty", "rank8", "quote\"back\\slash\n\xc3\xa9"};
    for (int i = 0; i < 4; i++) {
        ok = ok && extra[i] && ct_state_dict_set(sd, extra_names[i], extra[i]) == CT_OK;
        ct_release(extra[i]);
    }
    ok = ok && ct_state_dict_set_metadata(sd, "format", "pt") == CT_OK &&
         ct_state_dict_set_metadata(sd, "n\"ote\t", "h\xc3\xa9llo \xf0\x9f\x98\x80") == CT_OK;
    if (!ok) {
        ct_state_dict_free(sd);
        return NULL;
    }
    return sd;
}

/* Every name of a has the same tensor in b, and the metadata agree. */
static bool same_dict(const ct_state_dict *a, const ct_state_dict *b) {
    if (ct_state_dict_size(a) != ct_state_dict_size(b)) return false;
    for (int i = 0; i < ct_state_dict_size(a); i++) {
        const char *name = ct_state_dict_name_at(a, i);
        if (!same_tensor(ct_state_dict_tensor_at(a, i), ct_state_dict_get(b, name))) return false;
    }
    if (ct_state_dict_metadata_size(a) != ct_state_dict_metadata_size(b)) return false;
    for (int i = 0; i < ct_state_dict_metadata_size(a); i++) {
        const char *key = ct_state_dict_metadata_key_at(a, i);
        const char *value = ct_state_dict_get_metadata(b, key);
        if (!value || strcmp(value, ct_state_dict_get_metadata(a, key))) return false;
    }
    return true;
}

DEVICE_TEST(test_safetensors_round_trip_every_dtype_and_shape) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "model.safetensors", 0);
    ct_state_dict *sd = sample_dict(device);
    CHECK_NOT_NULL(sd);
    ct_transfer_stats_reset();
    ct_status s = ct_safetensors_save(path, sd);
    ct_transfer_statistics stats;
    ct_transfer_stats(&stats);
    ct_state_dict *back = s == CT_OK ? ct_safetensors_load(path, device) : NULL;
    bool ok = back && same_dict(sd, back) && same_dict(back, sd);
    for (int i = 0; ok && i < ct_state_dict_size(back); i++)
        ok = ct_device_equal(ct_device_of(ct_state_dict_tensor_at(back, i)), device);
    /* a device's tensors reach the file through explicit device-to-host copies */
    bool counted = device.type == CT_DEVICE_CPU || (stats.counters[CT_TRANSFER_D2H][0].count > 0 &&
                                                    stats.counters[CT_TRANSFER_D2H][1].count == 0);
    ct_state_dict_free(sd);
    ct_state_dict_free(back);
    st_remove_dir(dir);
    CHECK_OK(s);
    CHECK(ok);
    CHECK(counted);
}

/* The layout is the Python package's: larger elements first, then names in byte order; the
 * header is padded with spaces to a multiple of 8 and begins the buffer 8-aligned. */
TEST(test_safetensors_layout_order_and_padding) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "layout.safetensors", 0);
    ct_state_dict *sd = sample_dict(CT_CPU);
    CHECK_NOT_NULL(sd);
    ct_status s = ct_safetensors_save(path, sd);
    ct_state_dict_free(sd);
    size_t n = 0;
    unsigned char *bytes = s == CT_OK ? st_read_bytes(path, &n) : NULL;
    ct_state_dict *back = bytes ? ct_safetensors_load(path, CT_CPU) : NULL;
    st_remove_dir(dir);
    CHECK_OK(s);
    uint64_t header = 0;
    for (int i = 7; bytes && i >= 0; i--) header = header << 8 | bytes[i];
    bool ok = back && n > 8 && header % 8 == 0 && header <= n - 8 && bytes[8] == '{';
    for (uint64_t i = header; ok && i > 0 && bytes[8 + i - 1] != '}'; i--)
        ok = bytes[8 + i - 1] == ' ';
    /* the loaded dict keeps the header's order, which is the buffer's order */
    static const char *const order[] = {"rank8", "scalar", "w.c64", "w.f64",
                                        "w.i64", "w.u64",  "empty", "quote\"back\\slash\n\xc3\xa9",
                                        "w.f32", "w.i32",  "w.u32", "w.bf16",
                                        "w.f16", "w.i16",  "w.u16", "w.bool",
                                        "w.i8",  "w.u8"};
    ok = ok && ct_state_dict_size(back) == 18;
    for (int i = 0; ok && i < 18; i++) ok = !strcmp(ct_state_dict_name_at(back, i), order[i]);
    free(bytes);
    ct_state_dict_free(back);
    CHECK(ok);
}

TEST(test_safetensors_empty_dict_round_trip) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "empty.safetensors", 0);
    ct_state_dict *sd = ct_state_dict_new();
    CHECK_NOT_NULL(sd);
    ct_status s = ct_safetensors_save(path, sd);
    ct_state_dict_free(sd);
    size_t n = 0;
    unsigned char *bytes = st_read_bytes(path, &n);
    ct_state_dict *back = ct_safetensors_load(path, CT_CPU);
    st_remove_dir(dir);
    bool ok = bytes && n == 16 && !memcmp(bytes + 8, "{}      ", 8);
    free(bytes);
    CHECK_OK(s);
    CHECK(back && ct_state_dict_size(back) == 0 && ct_state_dict_metadata_size(back) == 0);
    ct_state_dict_free(back);
    CHECK(ok);
}

/* ---- atomic writes ---- */

TEST(test_safetensors_save_into_missing_directory_leaves_nothing) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "absent/model.safetensors", 0);
    ct_state_dict *sd = sample_dict(CT_CPU);
    CHECK_NOT_NULL(sd);
    ct_status s = ct_safetensors_save(path, sd);
    ct_state_dict_free(sd);
    int left = st_count_entries(dir);
    st_remove_dir(dir);
    CHECK(s == CT_ERR_IO);
    CHECK(left == 0);
    CHECK_ERROR(CT_ERR_IO, "absent/model.safetensors.tmp");
}

TEST(test_safetensors_load_missing_file_or_directory) {
    char dir[256];
    CHECK(st_make_dir(dir));
    ct_state_dict *missing = ct_safetensors_load(st_path(dir, "none.safetensors", 0), CT_CPU);
    ct_status s1 = ct_last_status();
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ct_last_error());
    ct_clear_error();
    ct_state_dict *directory = ct_safetensors_load(dir, CT_CPU);
    st_remove_dir(dir);
    CHECK(!missing && s1 == CT_ERR_IO && strstr(msg, "none.safetensors") &&
          strstr(msg, strerror(ENOENT)));
    CHECK(!directory);
    CHECK_ERROR(CT_ERR_IO, "is a folder, not a regular file");
}

/* A big dict for overwriting a small file; b is non-contiguous so the save stages it. */
static ct_state_dict *big_dict(void) {
    ct_state_dict *sd = ct_state_dict_new();
    int64_t shape[2] = {256, 512};
    ct_tensor *a = ct_ones(2, shape, CT_F32, CT_CPU);
    ct_tensor *b = a ? ct_transpose(a, 0, 1) : NULL;
    bool ok =
        sd && b && ct_state_dict_set(sd, "a", a) == CT_OK && ct_state_dict_set(sd, "b", b) == CT_OK;
    ct_release(a);
    ct_release(b);
    if (!ok) ct_state_dict_free(sd);
    return ok ? sd : NULL;
}

/* The file at path is still the one small_dict wrote, and dir holds nothing else. */
static bool old_file_intact(const char *dir, const char *path, const ct_state_dict *small) {
    ct_state_dict *back = ct_safetensors_load(path, CT_CPU);
    bool ok = back && same_dict(small, back) && st_count_entries(dir) == 1;
    ct_state_dict_free(back);
    return ok;
}

TEST(test_safetensors_overwrite_replaces_whole_file) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "model.safetensors", 0);
    ct_state_dict *small = sample_dict(CT_CPU), *big = big_dict();
    bool ok = small && big && ct_safetensors_save(path, big) == CT_OK &&
              ct_safetensors_save(path, small) == CT_OK && old_file_intact(dir, path, small);
    ct_state_dict_free(small);
    ct_state_dict_free(big);
    st_remove_dir(dir);
    CHECK(ok);
}

/* A write error (the file size limit: EFBIG) while writing the new file keeps the old one. */
TEST(test_safetensors_failed_write_keeps_old_file) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "model.safetensors", 0);
    ct_state_dict *small = sample_dict(CT_CPU), *big = big_dict();
    CHECK(small && big && ct_safetensors_save(path, small) == CT_OK);
    struct rlimit old_limit, limit;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    limit = old_limit;
    limit.rlim_cur = 64 * 1024;
    ct_status s = setrlimit(RLIMIT_FSIZE, &limit) == 0 ? ct_safetensors_save(path, big) : CT_OK;
    setrlimit(RLIMIT_FSIZE, &old_limit);
    signal(SIGXFSZ, old_handler);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ct_last_error());
    ct_clear_error();
    bool intact = old_file_intact(dir, path, small);
    ct_state_dict_free(small);
    ct_state_dict_free(big);
    st_remove_dir(dir);
    CHECK(s == CT_ERR_IO && strstr(msg, "cannot write") && strstr(msg, strerror(EFBIG)));
    CHECK(intact);
}

/* Each host allocation of a save can fail: the old file stays, no temporary is left. */
TEST(test_safetensors_save_out_of_memory_keeps_old_file) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "model.safetensors", 0);
    ct_state_dict *small = sample_dict(CT_CPU), *big = big_dict();
    CHECK(small && big && ct_safetensors_save(path, small) == CT_OK);
    ct_status s = CT_ERR_OUT_OF_MEMORY;
    bool ok = true;
    for (long n = 1; n < 50 && s != CT_OK && ok; n++) {
        ct__malloc_fail_after(n, 0);
        s = ct_safetensors_save(path, big);
        ct__malloc_fail_after(0, 0);
        ok = s == CT_OK || (s == CT_ERR_OUT_OF_MEMORY && old_file_intact(dir, path, small));
        ct_clear_error();
    }
    ct_state_dict *back = ct_safetensors_load(path, CT_CPU);
    bool replaced = back && same_dict(big, back);
    ct_state_dict_free(back);
    ct_state_dict_free(small);
    ct_state_dict_free(big);
    st_remove_dir(dir);
    CHECK(ok);
    CHECK(s == CT_OK && replaced);
}

/* ---- Python interop ---- */

typedef struct named_shape {
    const char *name;
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
} named_shape;

/* tests/safetensors_interop.py holds the same tables. */
static const named_shape from_c[] = {
    {"f64", CT_F64, 1, {4}},       {"f32", CT_F32, 2, {2, 3}},
    {"f16", CT_F16, 2, {3, 2}},    {"i64", CT_I64, 1, {5}},
    {"i32", CT_I32, 3, {2, 2, 2}}, {"u8", CT_U8, 1, {7}},
    {"bool", CT_BOOL, 2, {3, 3}},  {"scalar", CT_F32, 0, {0}},
    {"empty", CT_F32, 2, {0, 4}},  {"rank8", CT_I32, 8, {1, 2, 1, 2, 1, 2, 1, 2}},
    {"i8", CT_I8, 1, {6}},         {"i16", CT_I16, 2, {2, 3}},
    {"u16", CT_U16, 1, {9}},       {"u32", CT_U32, 2, {3, 2}},
    {"u64", CT_U64, 1, {5}},
};
static const named_shape from_python[] = {
    {"py.f64", CT_F64, 2, {3, 1}}, {"py.f32", CT_F32, 1, {5}},    {"py.f16", CT_F16, 2, {2, 2}},
    {"py.i64", CT_I64, 2, {2, 3}}, {"py.i32", CT_I32, 1, {4}},    {"py.u8", CT_U8, 2, {2, 5}},
    {"py.bool", CT_BOOL, 1, {6}},  {"py.scalar", CT_I64, 0, {0}}, {"py.empty", CT_F64, 2, {3, 0}},
    {"py.i8", CT_I8, 1, {5}},      {"py.i16", CT_I16, 1, {3}},    {"py.u16", CT_U16, 2, {2, 2}},
    {"py.u32", CT_U32, 1, {7}},    {"py.u64", CT_U64, 2, {1, 3}},
};
static const named_shape bf16_from_c = {"bf16", CT_BF16, 2, {3, 3}};
static const named_shape bf16_from_python = {"py.bf16", CT_BF16, 2, {2, 3}};

static ct_status save_table(const char *path, const named_shape *table, int n, bool metadata) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_status s = sd ? CT_OK : ct_last_status();
    for (int i = 0; i < n && s == CT_OK; i++) {
        ct_tensor *t = formula_tensor(table[i].dtype, table[i].ndim, table[i].shape, CT_CPU);
        s = t ? ct_state_dict_set(sd, table[i].name, t) : ct_last_status();
        ct_release(t);
    }
    if (s == CT_OK && metadata) s = ct_state_dict_set_metadata(sd, "format", "ct");
    if (s == CT_OK && metadata)
        s = ct_state_dict_set_metadata(sd, "note",
                                       "h\xc3\xa9llo \"quoted\" \\ \xe2\x82\xac "
                                       "\xf0\x9f\x98\x80");
    if (s == CT_OK) s = ct_safetensors_save(path, sd);
    ct_state_dict_free(sd);
    return s;
}

/* The file at path holds exactly the table's tensors (formula values). */
static bool check_table(const char *path, const named_shape *table, int n, ct_state_dict **out) {
    ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
    bool ok = sd && ct_state_dict_size(sd) == n;
    for (int i = 0; ok && i < n; i++)
        ok = formula_matches(ct_state_dict_get(sd, table[i].name), table[i].dtype, table[i].ndim,
                             table[i].shape);
    *out = sd;
    return ok;
}

TEST(test_safetensors_python_interop_both_ways) {
    const char *python = CT_SOURCE_DIR "/.venv/bin/python3";
    if (access(python, X_OK) != 0) {
        ct_test_fail(__FILE__, __LINE__,
                     "%s is missing: run `make deps` (it sets up .venv with "
                     "the safetensors package for this test)",
                     python);
        return;
    }
    char dir[256], command[2048];
    CHECK(st_make_dir(dir));
    CHECK_OK(save_table(st_path(dir, "from_c.safetensors", 0), from_c,
                        (int)(sizeof from_c / sizeof from_c[0]), true));
    CHECK_OK(save_table(st_path(dir, "from_c_bf16.safetensors", 0), &bf16_from_c, 1, false));
    snprintf(command, sizeof command, "'%s' '%s/tests/safetensors_interop.py' '%s'", python,
             CT_SOURCE_DIR, dir);
    fflush(stdout);
    int rc = system(command);
    ct_state_dict *a = NULL, *b = NULL;
    bool ok_a = rc == 0 && check_table(st_path(dir, "from_python.safetensors", 0), from_python,
                                       (int)(sizeof from_python / sizeof from_python[0]), &a);
    bool ok_b = rc == 0 && check_table(st_path(dir, "from_python_bf16.safetensors", 0),
                                       &bf16_from_python, 1, &b);
    const char *writer = ct_state_dict_get_metadata(a, "writer");
    const char *unicode = ct_state_dict_get_metadata(a, "unicode");
    bool meta = writer && unicode && !strcmp(writer, "numpy") &&
                !strcmp(unicode, "\xc3\xbc"
                                 "ber \xf0\x9f\x9a\x80");
    ct_state_dict_free(a);
    ct_state_dict_free(b);
    st_remove_dir(dir);
    if (rc != 0) {
        ct_test_fail(__FILE__, __LINE__,
                     "%s failed (status %d; output above); if safetensors "
                     "cannot be imported, run `make deps`",
                     command, rc);
        return;
    }
    CHECK(ok_a && ok_b);
    CHECK(meta);
}
