/* Tests of the IDX and NPY readers: files written here (plain and gzipped; every NPY dtype,
 * byte order, memory order and format version) and by numpy itself, read back and checked
 * value by value; and tables of truncated, corrupt and hostile files, each of which must fail
 * with CT_ERR_FORMAT and a message naming the file. CSV and the datasets are in
 * test_data_sets.c. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "ct_test.h"
#include "data_test_files.h"

/* ---------------------------------------------------------------- IDX ---- */

/* An IDX header: type code, ndim and the sizes. */
static void idx_header(byte_buf *b, int type, int ndim, const uint32_t *sizes) {
    buf_u8(b, 0);
    buf_u8(b, 0);
    buf_u8(b, (unsigned)type);
    buf_u8(b, (unsigned)ndim);
    for (int i = 0; i < ndim; i++) buf_be(b, sizes[i], 4);
}

TEST(test_data_idx_u8_plain_and_gzipped) {
    byte_buf b = {0};
    idx_header(&b, 0x08, 3, (uint32_t[]){2, 3, 4});
    for (unsigned k = 0; k < 24; k++) buf_u8(&b, k * 11 % 256);
    const char *paths[2] = {tmp_path("u8.idx"), tmp_path("u8.idx.gz")};
    CHECK(write_file(paths[0], b.data, b.n));
    CHECK(write_gzip(paths[1], b.data, b.n));
    for (int g = 0; g < 2; g++) {
        ct_tensor *t = ct_read_idx(paths[g]);
        CHECK_NOT_NULL(t);
        bool ok = ct_dtype_of(t) == CT_U8 && ct_ndim(t) == 3 && ct_shape(t)[0] == 2 &&
                  ct_shape(t)[1] == 3 && ct_shape(t)[2] == 4;
        uint8_t v[24];
        ok = ok && ct_copy_to_host(t, v, sizeof v) == CT_OK;
        for (unsigned k = 0; ok && k < 24; k++) ok = v[k] == k * 11 % 256;
        ct_release(t);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "%s read wrong", paths[g]);
    }
}

/* Each IDX type: values written big-endian, read back as the documented dtype. */
TEST(test_data_idx_every_type_big_endian) {
    static const struct {
        int code, width;
        ct_dtype dtype;
        bool is_float;
    } types[] = {{0x09, 1, CT_I32, false},
                 {0x0B, 2, CT_I32, false},
                 {0x0C, 4, CT_I32, false},
                 {0x0D, 4, CT_F32, true},
                 {0x0E, 8, CT_F64, true}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        byte_buf b = {0};
        idx_header(&b, types[i].code, 2, (uint32_t[]){3, 5});
        double expected[15];
        for (int k = 0; k < 15; k++) {
            double v = types[i].is_float ? k * 0.375 - 2.5 : (k - 7) * (types[i].width * 8 - 1);
            expected[k] = v;
            if (types[i].code == 0x0D)
                buf_float(&b, v, CT_F32, true);
            else if (types[i].code == 0x0E)
                buf_float(&b, v, CT_F64, true);
            else
                buf_be(&b, (uint64_t)(int64_t)v, types[i].width);
        }
        const char *path = tmp_path("typed.idx");
        CHECK(write_file(path, b.data, b.n));
        ct_tensor *t = ct_read_idx(path);
        CHECK_NOT_NULL(t);
        bool ok = ct_dtype_of(t) == types[i].dtype && ct_ndim(t) == 2 && ct_shape(t)[1] == 5;
        double got[15];
        ok = ok && tensor_values(t, got, 15);
        for (int k = 0; ok && k < 15; k++) ok = got[k] == expected[k];
        ct_release(t);
        if (!ok) ct_test_fail(__FILE__, __LINE__, "IDX type 0x%02x read wrong", types[i].code);
    }
}

TEST(test_data_idx_missing_file_is_io_error) {
    CHECK(ct_read_idx(tmp_path("no-such-file.idx")) == NULL);
    CHECK_ERROR(CT_ERR_IO, "no-such-file.idx: No such file or directory");
    CHECK(ct_read_idx(tmp_path("")) == NULL); /* the temporary folder itself */
    CHECK_ERROR(CT_ERR_IO, "is a folder, not a regular file");
    CHECK(ct_read_idx("/dev/null") == NULL); /* a device: no size to check claims against */
    CHECK_ERROR(CT_ERR_IO, "ct_read_idx: /dev/null is a character device, not a regular file");
    CHECK(ct_read_idx(NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "path is NULL");
}

/* Every proper prefix of a valid file (plain and gzipped) is a truncated file. */
TEST(test_data_idx_truncated_at_every_byte) {
    byte_buf b = {0};
    idx_header(&b, 0x0C, 2, (uint32_t[]){2, 3});
    for (int k = 0; k < 6; k++) buf_be(&b, (uint64_t)k, 4);
    const char *path = tmp_path("cut.idx");
    for (size_t n = 0; n < b.n; n++) {
        CHECK(write_file(path, b.data, n));
        CHECK(expect_format_error(ct_read_idx(path) == NULL, path, n));
    }
    byte_buf z;
    CHECK(gzip_bytes(b.data, b.n, &z));
    for (size_t n = 0; n < z.n; n++) {
        CHECK(write_file(path, z.data, n));
        CHECK(expect_format_error(ct_read_idx(path) == NULL, path, n));
    }
}

typedef struct {
    const char *name;
    byte_buf file;
    const char *needle; /* what the message must say besides the file name */
} hostile_case;

/* The hostile IDX table: each case must fail with CT_ERR_FORMAT, plain and gzipped. */
TEST(test_data_idx_hostile_files) {
    hostile_case cases[9] = {
        {.name = "bad magic", .needle = "not an IDX file"},
        {.name = "bad type", .needle = "unknown IDX type byte 0x0a"},
        {.name = "17 dimensions", .needle = "17 dimensions; ctensor supports at most 16"},
        {.name = "2^40 elements", .needle = "needs 1099511627776 bytes"},
        {.name = "shape overflow", .needle = "overflows"},
        {.name = "i16 shape overflow", .needle = "overflows"},
        {.name = "short data", .needle = "the IDX data"},
        {.name = "trailing bytes", .needle = "after the data"},
        {.name = "no elements, sizes past 2^59", .needle = "multiply past 2^59"}};
    buf_bytes(&cases[0].file, "\x01\x00\x08\x01\x00\x00\x00\x01\x07", 9);
    idx_header(&cases[1].file, 0x0A, 1, (uint32_t[]){1});
    idx_header(&cases[2].file, 0x08, 17,
               (uint32_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
    idx_header(&cases[3].file, 0x08, 2, (uint32_t[]){1u << 20, 1u << 20});
    uint32_t max8[8] = {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u};
    idx_header(&cases[4].file, 0x0E, 8, max8);
    idx_header(&cases[5].file, 0x0B, 3, (uint32_t[]){~0u, ~0u, ~0u});
    idx_header(&cases[6].file, 0x08, 2, (uint32_t[]){10, 10});
    buf_bytes(&cases[6].file, "0123456789", 10);
    idx_header(&cases[7].file, 0x08, 1, (uint32_t[]){2});
    buf_bytes(&cases[7].file, "abc", 3);
    idx_header(&cases[8].file, 0x0D, 3, (uint32_t[]){0, ~0u, ~0u});
    const char *path = tmp_path("hostile.idx");
    for (int i = 0; i < 9; i++) {
        byte_buf z;
        CHECK(gzip_bytes(cases[i].file.data, cases[i].file.n, &z));
        for (int g = 0; g < 2; g++) {
            const byte_buf *f = g ? &z : &cases[i].file;
            CHECK(write_file(path, f->data, f->n));
            bool failed = ct_read_idx(path) == NULL;
            /* gzip hides the file's real size: a huge claim fails on the deflate bound. */
            const char *needle = g && i == 3 ? "more than a gzip file" : cases[i].needle;
            if (!check_format_error(failed, path, needle))
                ct_test_fail(__FILE__, __LINE__, "case \"%s\"%s", cases[i].name,
                             g ? " (gzipped)" : "");
        }
    }
}

/* A gzip file whose header claims more than it holds, within what deflate could expand it
 * to: the data is read in steps and fails where it ends. */
TEST(test_data_idx_gzip_short_data_fails_where_it_ends) {
    byte_buf b = {0};
    idx_header(&b, 0x08, 2, (uint32_t[]){100, 100});
    for (int k = 0; k < 300; k++) buf_u8(&b, (unsigned)k % 7);
    const char *path = tmp_path("short.idx.gz");
    CHECK(write_gzip(path, b.data, b.n));
    CHECK(ct_read_idx(path) == NULL);
    CHECK_ERROR(CT_ERR_FORMAT, "short.idx.gz: byte 312 of the uncompressed data: the file ends "
                               "inside the IDX data (300 of its 10000");
}

TEST(test_data_idx_corrupt_gzip) {
    byte_buf b = {0};
    idx_header(&b, 0x08, 1, (uint32_t[]){200});
    for (int k = 0; k < 200; k++) buf_u8(&b, (unsigned)k);
    byte_buf z;
    CHECK(gzip_bytes(b.data, b.n, &z));
    for (size_t i = 12; i < z.n - 8; i++) z.data[i] ^= 0x5a; /* scramble the deflate stream */
    const char *path = tmp_path("corrupt.idx.gz");
    CHECK(write_file(path, z.data, z.n));
    CHECK(ct_read_idx(path) == NULL);
    CHECK(strstr(ct_last_error(), "corrupt.idx.gz: byte ") != NULL);
    const char *named = strstr(ct_last_error(), path); /* once: zlib's own "PATH: " is cut */
    CHECK(named && !strstr(named + strlen(path), path));
    CHECK_ERROR(CT_ERR_FORMAT, " of the uncompressed data: corrupt gzip data");
}

/* ---------------------------------------------------------------- NPY ---- */

static const struct {
    const char *code;
    ct_dtype dtype;
} npy_dtypes[] = {{"f8", CT_F64}, {"f4", CT_F32}, {"f2", CT_F16},  {"i8", CT_I64},
                  {"i4", CT_I32}, {"u1", CT_U8},  {"b1", CT_BOOL}, {"i2", CT_I16},
                  {"i1", CT_I8},  {"u8", CT_U64}, {"u4", CT_U32},  {"u2", CT_U16}};

/* The value of element k (C order) of the test arrays, exact in every dtype. */
static double npy_value(ct_dtype dtype, int64_t k) {
    switch (dtype) {
    case CT_BOOL: return k % 3 == 0;
    case CT_U8: return (double)(k * 37 % 256);
    case CT_I8: return (double)(k % 11 - 5) * 11;
    case CT_I16: return (double)(k % 11 - 5) * 3001;
    case CT_U16: return (double)(k * 4099 % 65536);
    case CT_U32: return (double)(k * 400009 % 4294967296LL);
    case CT_U64: return (double)(k % 4) * 0x1p62;
    case CT_I32: return (double)((k % 11 - 5) * 100003);
    case CT_I64: return (double)((k % 11 - 5) * 3000000007LL);
    default: return (double)k * 0.25 - 3.0;
    }
}

/* An .npy file of the test values: the given version, byte order and memory order. */
static void npy_file(byte_buf *b, int version, const char *descr, ct_dtype dtype, bool fortran,
                     int ndim, const int64_t *shape) {
    char dict[256], dims[128] = "";
    for (int i = 0; i < ndim; i++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%lld, ", (long long)shape[i]);
    if (ndim > 1) dims[strlen(dims) - 2] = '\0'; /* numpy writes (2, 3) but (2,) */
    if (ndim == 1) dims[strlen(dims) - 1] = '\0';
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr,
             fortran ? "True" : "False", dims);
    npy_preamble(b, version, dict, true);
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    bool big = descr[0] == '>';
    for (int64_t j = 0; j < numel; j++) {
        /* The j-th element stored: in Fortran order, the first index varies fastest. */
        int64_t k = 0, rest = j, stride = 1;
        if (fortran) {
            int64_t c_strides[CT_MAX_DIMS];
            for (int i = ndim - 1; i >= 0; i--) c_strides[i] = stride, stride *= shape[i];
            for (int i = 0; i < ndim; i++) k += (rest % shape[i]) * c_strides[i], rest /= shape[i];
        } else {
            k = j;
        }
        buf_value(b, npy_value(dtype, k), dtype, big);
    }
}

static bool check_npy_values(ct_tensor *t, ct_dtype dtype, int ndim, const int64_t *shape) {
    if (!t || ct_dtype_of(t) != dtype || ct_ndim(t) != ndim) return false;
    for (int i = 0; i < ndim; i++)
        if (ct_shape(t)[i] != shape[i]) return false;
    int64_t n = ct_numel(t);
    double *got = malloc(sizeof(double) * (size_t)(n ? n : 1));
    bool ok = got && tensor_values(t, got, n);
    for (int64_t k = 0; ok && k < n; k++) ok = got[k] == npy_value(dtype, k);
    free(got);
    return ok;
}

/* Every dtype x byte order x memory order x version, on shapes of rank 0 to 3. */
TEST(test_data_npy_every_dtype_order_and_version) {
    static const int64_t shapes[4][3] = {{0}, {5}, {3, 4}, {2, 3, 4}};
    const char *path = tmp_path("all.npy");
    int checked = 0;
    for (size_t d = 0; d < sizeof npy_dtypes / sizeof npy_dtypes[0]; d++)
        for (int order = 0; order < 3; order++)
            for (int fortran = 0; fortran < 2; fortran++)
                for (int version = 1; version <= 3; version++)
                    for (int ndim = 0; ndim < 4; ndim++) {
                        ct_dtype dtype = npy_dtypes[d].dtype;
                        if (order == 2 && npy_dtypes[d].code[1] != '1') continue;
                        char descr[8];
                        snprintf(descr, sizeof descr, "%c%s", "<>|"[order], npy_dtypes[d].code);
                        byte_buf b = {0};
                        npy_file(&b, version, descr, dtype, fortran, ndim, shapes[ndim]);
                        CHECK(write_file(path, b.data, b.n));
                        ct_tensor *t = ct_read_npy(path);
                        bool ok = check_npy_values(t, dtype, ndim, shapes[ndim]);
                        ct_release(t);
                        if (!ok)
                            ct_test_fail(__FILE__, __LINE__, "%s v%d %s rank %d read wrong: %s",
                                         descr, version, fortran ? "Fortran" : "C", ndim,
                                         ct_last_error());
                        checked++;
                    }
    CHECK(checked == (9 * 2 + 3 * 3) * 2 * 3 * 4);
}

TEST(test_data_npy_empty_and_gzipped) {
    byte_buf b = {0};
    npy_file(&b, 1, "<f4", CT_F32, false, 2, (int64_t[]){0, 3});
    const char *path = tmp_path("empty.npy");
    CHECK(write_file(path, b.data, b.n));
    ct_tensor *t = ct_read_npy(path);
    CHECK(check_npy_values(t, CT_F32, 2, (int64_t[]){0, 3}));
    ct_release(t);
    byte_buf c = {0};
    npy_file(&c, 2, ">i8", CT_I64, true, 2, (int64_t[]){4, 5});
    path = tmp_path("big.npy.gz");
    CHECK(write_gzip(path, c.data, c.n));
    t = ct_read_npy(path);
    CHECK(check_npy_values(t, CT_I64, 2, (int64_t[]){4, 5}));
    ct_release(t);
}

/* Non-zero bytes in a |b1 array read as true (ctensor's bools are 0 or 1). */
TEST(test_data_npy_bool_bytes_normalised) {
    byte_buf b = {0};
    npy_preamble(&b, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", true);
    buf_bytes(&b, "\x00\x02\xff", 3);
    const char *path = tmp_path("bool.npy");
    CHECK(write_file(path, b.data, b.n));
    ct_tensor *t = ct_read_npy(path);
    CHECK_NOT_NULL(t);
    uint8_t v[3];
    ct_status st = ct_copy_to_host(t, v, 3);
    ct_release(t);
    CHECK_OK(st);
    CHECK(v[0] == 0 && v[1] == 1 && v[2] == 1);
}

TEST(test_data_npy_truncated_at_every_byte) {
    byte_buf b = {0};
    npy_file(&b, 2, "<f8", CT_F64, true, 2, (int64_t[]){2, 3});
    const char *path = tmp_path("cut.npy");
    for (size_t n = 0; n < b.n; n++) {
        CHECK(write_file(path, b.data, n));
        CHECK(expect_format_error(ct_read_npy(path) == NULL, path, n));
    }
}

/* Header dicts that numpy would not write (or that lie), each with what the message says. */
static const struct {
    const char *dict, *needle;
} bad_dicts[] = {
    {"{'descr': '<f4', 'fortran_order': False}", "lacks one of"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (2,)}", "twice"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unknown key"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2)}", "needs a comma"},
    {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "True or False"},
    {"{'descr': '<f16', 'fortran_order': False, 'shape': (2,)}", "unsupported descr '<f16'"},
    {"{'descr': '<c32', 'fortran_order': False, 'shape': (2,)}", "unsupported descr '<c32'"},
    {"{'descr': '|f4', 'fortran_order': False, 'shape': (2,)}", "unsupported descr"},
    {"{'descr': '<V2', 'fortran_order': False, 'shape': (2,)}", "unsupported descr"},
    {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", "quoted string"},
    {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "unsupported descr '<f4, '"},
    {"{'descr': '<f4', 'fortran_order' False, 'shape': (2,)}", "expected ':'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}, ", "final newline"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'descr: 1}", "unterminated"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative integer"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')'"},
    {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)}",
     "more than 16 dimensions (ctensor supports at most 16)"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}",
     "overflows"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296)}",
     "multiply past 2^59"},
    {"{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576)}",
     "needs 4398046511104 bytes"},
    {"['descr', '<f4']", "expected '{'"},
    {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2,)}", "escapes"},
};

TEST(test_data_npy_bad_header_dicts) {
    const char *path = tmp_path("dict.npy");
    for (size_t i = 0; i < sizeof bad_dicts / sizeof bad_dicts[0]; i++) {
        byte_buf b = {0};
        npy_preamble(&b, 1 + (int)(i % 3), bad_dicts[i].dict, true);
        buf_bytes(&b, "\0\0\0\0\0\0\0\0", 8);
        CHECK(write_file(path, b.data, b.n));
        if (!check_format_error(ct_read_npy(path) == NULL, path, bad_dicts[i].needle))
            ct_test_fail(__FILE__, __LINE__, "dict %s", bad_dicts[i].dict);
    }
}

/* Damaged preambles and headers without the closing newline or with trailing text. */
TEST(test_data_npy_bad_preamble_and_padding) {
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
    const char *path = tmp_path("pre.npy");
    byte_buf b = {0};
    npy_preamble(&b, 1, dict, true);
    b.data[1] = 'M';
    CHECK(write_file(path, b.data, b.n));
    CHECK(check_format_error(ct_read_npy(path) == NULL, path, "magic"));
    b = (byte_buf){0};
    npy_preamble(&b, 4, dict, true);
    CHECK(write_file(path, b.data, b.n));
    CHECK(check_format_error(ct_read_npy(path) == NULL, path, "version 4.0"));
    b = (byte_buf){0};
    buf_bytes(&b, "\x93NUMPY\x02\x00\xff\xff\xff\xff{", 13);
    CHECK(write_file(path, b.data, b.n));
    CHECK(check_format_error(ct_read_npy(path) == NULL, path, "header of 4294967295 bytes"));
    b = (byte_buf){0};
    npy_preamble(&b, 1, dict, false); /* no newline at the end */
    buf_bytes(&b, "\0\0\0\0", 4);
    CHECK(write_file(path, b.data, b.n));
    CHECK(check_format_error(ct_read_npy(path) == NULL, path, "final newline"));
    b = (byte_buf){0};
    npy_preamble(&b, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x\n", false);
    buf_bytes(&b, "\0\0\0\0", 4);
    CHECK(write_file(path, b.data, b.n));
    CHECK(check_format_error(ct_read_npy(path) == NULL, path, "final newline"));
    b = (byte_buf){0};
    npy_preamble(&b, 1, dict, true);
    buf_bytes(&b, "\0\0\0\0\0", 5); /* one byte too many */
    CHECK(write_file(path, b.data, b.n));
    CHECK(check_format_error(ct_read_npy(path) == NULL, path, "1 unexpected bytes after"));
}

/* Files that numpy itself writes (np.save and np.lib.format.write_array for versions 2.0 and
 * 3.0) read back to the values the script put in. */
TEST(test_data_npy_written_by_numpy) {
    static const char script[] =
        "import sys, numpy as np\n"
        "from numpy.lib import format as fmt\n"
        "out = sys.argv[1]\n"
        "k = np.arange(24)\n"
        "vals = {'f8': k * 0.25 - 3, 'f4': k * 0.25 - 3, 'f2': k * 0.25 - 3,\n"
        "        'i8': (k % 11 - 5) * 3000000007, 'i4': (k % 11 - 5) * 100003,\n"
        "        'u1': k * 37 % 256, 'b1': k % 3 == 0, 'i2': (k % 11 - 5) * 3001,\n"
        "        'i1': (k % 11 - 5) * 11, 'u8': (k % 4).astype(np.uint64) << np.uint64(62),\n"
        "        'u4': k * 400009 % 4294967296, 'u2': k * 4099 % 65536}\n"
        "for code, v in vals.items():\n"
        "    for order in '<>':\n"
        "        a = v.astype(order + code if code not in ('u1', 'b1', 'i1') else code)\n"
        "        a = a.reshape(2, 3, 4)\n"
        "        for fortran in (0, 1):\n"
        "            b = np.asfortranarray(a) if fortran else a\n"
        "            for version in (1, 2, 3):\n"
        "                name = '%s/np_%s_%s_%d_%d.npy' % (out, code, 'lb'[order == '>'],\n"
        "                                                  fortran, version)\n"
        "                with open(name, 'wb') as f:\n"
        "                    if version == 1: np.save(f, b)\n"
        "                    else: fmt.write_array(f, b, version=(version, 0))\n";
    const char *python = CT_SOURCE_DIR "/.venv/bin/python3"; /* `make deps` makes it */
    char probe[sizeof CT_SOURCE_DIR + 64];
    snprintf(probe, sizeof probe, "'%s' -c 'import numpy' 2>/dev/null", python);
    if (access(python, X_OK) != 0 || system(probe)) {
        ct_test_fail(__FILE__, __LINE__, "this test needs %s with numpy: run `make deps`", python);
        return;
    }
    const char *script_path = tmp_path("write_npy.py");
    CHECK(write_file(script_path, script, sizeof script - 1));
    char command[512];
    snprintf(command, sizeof command, "'%s' %s %s", python, script_path, tmp_path(""));
    CHECK(system(command) == 0);
    int checked = 0;
    for (size_t d = 0; d < sizeof npy_dtypes / sizeof npy_dtypes[0]; d++)
        for (int big = 0; big < 2; big++)
            for (int fortran = 0; fortran < 2; fortran++)
                for (int version = 1; version <= 3; version++) {
                    char name[64];
                    snprintf(name, sizeof name, "np_%s_%c_%d_%d.npy", npy_dtypes[d].code, "lb"[big],
                             fortran, version);
                    const char *path = tmp_path(name);
                    ct_tensor *t = ct_read_npy(path);
                    bool ok = check_npy_values(t, npy_dtypes[d].dtype, 3, (int64_t[]){2, 3, 4});
                    ct_release(t);
                    remove(path);
                    if (!ok)
                        ct_test_fail(__FILE__, __LINE__, "numpy's %s read wrong: %s", name,
                                     ct_last_error());
                    checked++;
                }
    CHECK(checked == 12 * 2 * 2 * 3);
}
