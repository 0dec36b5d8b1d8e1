/* Tests of the CSV reader and the MNIST-layout datasets: files written here read back value
 * by value, each malformed variant failing with its status, file, line and column (or byte);
 * and the real Fashion-MNIST when Debian's dataset-fashion-mnist is installed. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "ct_test.h"
#include "data_test_files.h"
#include "mem/pool_impl.h"

/* ---------------------------------------------------------------- CSV ---- */

static bool write_text(const char *path, const char *text) {
    return write_file(path, text, strlen(text));
}

/* features and labels hold exactly the expected values. */
static bool csv_matches(ct_tensor *features, ct_tensor *labels, int64_t rows, int64_t cols,
                        const float *x, const int64_t *y) {
    if (!features || ct_dtype_of(features) != CT_F32 || ct_ndim(features) != 2 ||
        ct_shape(features)[0] != rows || ct_shape(features)[1] != cols)
        return false;
    float got[64];
    if (ct_copy_to_host(features, got, sizeof got) != CT_OK) return false;
    for (int64_t i = 0; i < rows * cols; i++)
        if (got[i] != x[i]) return false;
    if (!y) return labels == NULL;
    int64_t gl[16];
    if (!labels || ct_dtype_of(labels) != CT_I64 || ct_ndim(labels) != 1 ||
        ct_shape(labels)[0] != rows || ct_copy_to_host(labels, gl, sizeof gl) != CT_OK)
        return false;
    for (int64_t i = 0; i < rows; i++)
        if (gl[i] != y[i]) return false;
    return true;
}

static const struct {
    const char *name, *text;
    char delimiter;
    bool header;
    int label;
    int64_t rows, cols;
    float x[12];
    int64_t y[4];
    bool has_y;
} csv_cases[] = {
    {"label last", "1,2,3\n4,5,6\n", ',', false, -1, 2, 2, {1, 2, 4, 5}, {3, 6}, true},
    {"label first, header, CRLF",
     "y,a,b\r\n7,0.5,-1e3\r\n8,2.25,+4\r\n",
     ',',
     true,
     0,
     2,
     2,
     {0.5f, -1e3f, 2.25f, 4},
     {7, 8},
     true},
    {"label middle, spaces, blank lines",
     "\n 1 ; -2 ; 3.5\n\n4;5;6\n\n",
     ';',
     false,
     1,
     2,
     2,
     {1, 3.5f, 4, 6},
     {-2, 5},
     true},
    {"no label, no final newline",
     "1\t2\t3\n4\t5\t6",
     '\t',
     false,
     CT_CSV_NO_LABEL,
     2,
     3,
     {1, 2, 3, 4, 5, 6},
     {0},
     false},
    {"label as 3.0, byte order mark",
     "\xEF\xBB\xBF"
     "1,3.0\n2,-0\n",
     ',',
     false,
     -1,
     2,
     1,
     {1, 2},
     {3, 0},
     true},
};

TEST(test_data_csv_variants) {
    const char *path = tmp_path("v.csv");
    for (size_t i = 0; i < sizeof csv_cases / sizeof csv_cases[0]; i++) {
        CHECK(write_text(path, csv_cases[i].text));
        ct_csv_options o = ct_csv_options_default();
        o.delimiter = csv_cases[i].delimiter;
        o.has_header = csv_cases[i].header;
        o.label_column = csv_cases[i].label;
        ct_tensor *x = NULL, *y = NULL;
        ct_status st = ct_read_csv(path, &o, &x, &y);
        bool ok =
            st == CT_OK && csv_matches(x, y, csv_cases[i].rows, csv_cases[i].cols, csv_cases[i].x,
                                       csv_cases[i].has_y ? csv_cases[i].y : NULL);
        ct_release(x);
        ct_release(y);
        if (!ok)
            ct_test_fail(__FILE__, __LINE__, "case \"%s\": %s", csv_cases[i].name, ct_last_error());
    }
}

TEST(test_data_csv_defaults_and_gzip) {
    CHECK(ct_csv_options_default().delimiter == ',');
    CHECK(ct_csv_options_default().label_column == -1);
    CHECK(!ct_csv_options_default().has_header);
    const char *text = "0.25,1\n0.5,0\n0.75,1\n";
    const char *path = tmp_path("d.csv.gz");
    CHECK(write_gzip(path, text, strlen(text)));
    ct_tensor *x = NULL, *y = NULL;
    CHECK_OK(ct_read_csv(path, NULL, &x, &y));
    bool ok = csv_matches(x, y, 3, 1, (float[]){0.25f, 0.5f, 0.75f}, (int64_t[]){1, 0, 1});
    ct_release(x);
    ct_release(y);
    CHECK(ok);
    /* Without a label column, labels may be NULL. */
    ct_csv_options o = ct_csv_options_default();
    o.label_column = CT_CSV_NO_LABEL;
    CHECK_OK(ct_read_csv(path, &o, &x, NULL));
    CHECK(ct_shape(x)[1] == 2);
    ct_release(x);
}

/* Malformed CSV files: the status and what the message says (line and column from 1). */
static const struct {
    const char *text, *needle;
    ct_status status;
    int label;
} bad_csv[] = {
    {"1,2,3\n4,5\n", "line 2, column 3: the row has 2 cells, the first data row 3", CT_ERR_FORMAT,
     -1},
    {"1,2\n3,4\n5,6,7\n", "line 3, column 3: the row has 3 cells", CT_ERR_FORMAT, -1},
    {"1,2,3\n4,abc,6\n", "line 2, column 2: expected a number, found \"abc\"", CT_ERR_FORMAT, -1},
    {"1,2,3\n4,,6\n", "line 2, column 2: expected a number, found \"\"", CT_ERR_FORMAT, -1},
    {"1,2,3\n4,5,6x\n", "line 2, column 3", CT_ERR_FORMAT, 0},
    {"1,2,3.5\n", "line 1, column 3: a label must be an integer, found \"3.5\"", CT_ERR_FORMAT, -1},
    {"1,2,1e300\n", "line 1, column 3: \"1e300\" is outside the float32 range", CT_ERR_FORMAT, 0},
    {"1,\"2\",3\n", "line 1, column 2", CT_ERR_FORMAT, -1},
    {"", "no data rows", CT_ERR_FORMAT, -1},
    {"\n\r\n\n", "no data rows", CT_ERR_FORMAT, -1},
    {"1,2\n3\0,4\n", "line 2: a NUL byte", CT_ERR_FORMAT, -1},
    {"1,2,3\n", "label_column 3, but line 1 has 3 column(s)", CT_ERR_INVALID_ARG, 3},
    {"1,2,3\n", "label_column -4", CT_ERR_INVALID_ARG, -4},
    {"1\n2\n", "a label column needs a row of at least 2 columns", CT_ERR_INVALID_ARG, -1},
};

TEST(test_data_csv_malformed) {
    const char *path = tmp_path("bad.csv");
    for (size_t i = 0; i < sizeof bad_csv / sizeof bad_csv[0]; i++) {
        /* The NUL case has a byte beyond strlen: write its full length. */
        size_t n = strlen(bad_csv[i].text);
        if (strstr(bad_csv[i].needle, "NUL")) n = 9;
        CHECK(write_file(path, bad_csv[i].text, n));
        ct_csv_options o = ct_csv_options_default();
        o.label_column = bad_csv[i].label;
        ct_tensor *x = (ct_tensor *)&o, *y = (ct_tensor *)&o; /* must come back NULL */
        ct_status st = ct_read_csv(path, &o, &x, &y);
        bool ok = st == bad_csv[i].status && ct_last_status() == st && !x && !y &&
                  strstr(ct_last_error(), "ct_read_csv: ") && strstr(ct_last_error(), "bad.csv") &&
                  strstr(ct_last_error(), bad_csv[i].needle);
        if (!ok)
            ct_test_fail(__FILE__, __LINE__, "case %zu: expected %s with \"%s\", got %s: %s", i,
                         ct_status_name(bad_csv[i].status), bad_csv[i].needle, ct_status_name(st),
                         ct_last_error());
        ct_clear_error();
    }
}

TEST(test_data_csv_argument_errors) {
    ct_tensor *x, *y;
    CHECK(ct_read_csv(tmp_path("missing.csv"), NULL, &x, &y) == CT_ERR_IO);
    CHECK_ERROR(CT_ERR_IO, "ct_read_csv: cannot open /");
    CHECK(x == NULL && y == NULL);
    const char *path = tmp_path("ok.csv");
    CHECK(write_text(path, "1,2\n"));
    CHECK(ct_read_csv(path, NULL, &x, NULL) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "labels is NULL but label_column is -1");
    CHECK(ct_read_csv(path, NULL, NULL, &y) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "features is NULL");
    ct_csv_options o = ct_csv_options_default();
    o.delimiter = '\n';
    CHECK(ct_read_csv(path, &o, &x, &y) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "delimiter");
}

/* ------------------------------------------------------------ datasets ---- */

/* An IDX file of u8 values: images (n, rows, cols) when rows > 0, else labels (n). */
static bool write_idx_u8(const char *path, bool gz, uint32_t n, uint32_t rows, uint32_t cols,
                         unsigned seed) {
    byte_buf b = {0};
    buf_bytes(&b, rows ? "\0\0\x08\x03" : "\0\0\x08\x01", 4);
    buf_be(&b, n, 4);
    if (rows) buf_be(&b, rows, 4), buf_be(&b, cols, 4);
    uint32_t count = rows ? n * rows * cols : n;
    for (uint32_t k = 0; k < count; k++) buf_u8(&b, rows ? (k * 31 + seed) % 256 : (k + seed) % 10);
    return gz ? write_gzip(path, b.data, b.n) : write_file(path, b.data, b.n);
}

/* A folder in the MNIST layout: train 5 images and test 3, of 4x3 pixels. Train files are
 * gzipped, test files plain, as folders in the wild mix them. */
static bool write_mnist_dir(const char *dir) {
    char p[640];
    mkdir(dir, 0700);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", dir);
    bool ok = write_idx_u8(p, true, 5, 4, 3, 1);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", dir);
    ok = ok && write_idx_u8(p, true, 5, 0, 0, 2);
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
    ok = ok && write_idx_u8(p, false, 3, 4, 3, 3);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
    return ok && write_idx_u8(p, false, 3, 0, 0, 4);
}

static void remove_mnist_dir(const char *dir) {
    static const char *const names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    char p[640];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        remove(p);
    }
    remove(dir);
}

TEST(test_data_mnist_dir_loads_both_splits) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("mnist"));
    CHECK(write_mnist_dir(dir));
    ct_mnist m;
    ct_status st = ct_load_mnist_dir(dir, &m);
    remove_mnist_dir(dir);
    CHECK_OK(st);
    bool ok = ct_ndim(m.train_images) == 3 && ct_shape(m.train_images)[0] == 5 &&
              ct_shape(m.train_images)[1] == 4 && ct_shape(m.train_images)[2] == 3 &&
              ct_dtype_of(m.train_images) == CT_U8 && ct_dtype_of(m.train_labels) == CT_I64 &&
              ct_shape(m.test_images)[0] == 3 && ct_numel(m.test_labels) == 3;
    uint8_t px[60];
    int64_t train_labels[5], test_labels[3];
    ok = ok && ct_copy_to_host(m.train_images, px, 60) == CT_OK &&
         ct_copy_to_host(m.train_labels, train_labels, sizeof train_labels) == CT_OK &&
         ct_copy_to_host(m.test_labels, test_labels, sizeof test_labels) == CT_OK;
    for (int k = 0; ok && k < 60; k++) ok = px[k] == (k * 31 + 1) % 256;
    for (int k = 0; ok && k < 5; k++) ok = train_labels[k] == (k + 2) % 10;
    for (int k = 0; ok && k < 3; k++) ok = test_labels[k] == (k + 4) % 10;
    ct_mnist_release(&m);
    CHECK(ok);
    CHECK(m.train_images == NULL && m.test_labels == NULL);
    ct_mnist_release(NULL);
}

/* Replace one file of a valid folder, load it, and check the failure. */
static bool mnist_failure(const char *name, bool rows, uint32_t n, unsigned seed, int label,
                          ct_status status, const char *needle) {
    char dir[512], p[640];
    snprintf(dir, sizeof dir, "%s", tmp_path("bad-mnist"));
    if (!write_mnist_dir(dir)) return false;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (n == 0)
        remove(p);
    else if (label >= 0) {
        byte_buf b = {0};
        buf_bytes(&b, "\0\0\x08\x01\0\0\0\x03", 8);
        buf_bytes(&b, (unsigned char[]){1, (unsigned char)label, 2}, 3);
        write_file(p, b.data, b.n);
    } else {
        write_idx_u8(p, false, n, rows ? 4 : 0, 3, seed);
    }
    ct_mnist m = {(ct_tensor *)p, NULL, NULL, NULL};
    ct_status st = ct_load_mnist_dir(dir, &m);
    remove_mnist_dir(dir);
    bool ok = st == status && m.train_images == NULL && m.test_labels == NULL &&
              strstr(ct_last_error(), "ct_load_mnist_dir: ") && strstr(ct_last_error(), needle);
    if (!ok)
        printf("    %s: expected %s with \"%s\", got %s: %s\n", name, ct_status_name(status),
               needle, ct_status_name(st), ct_last_error());
    ct_clear_error();
    return ok;
}

TEST(test_data_mnist_dir_errors) {
    CHECK(mnist_failure("t10k-labels-idx1-ubyte", false, 3, 0, 12, CT_ERR_FORMAT,
                        "t10k-labels-idx1-ubyte: byte 9: label 12 of image 1 is outside 0..9"));
    CHECK(mnist_failure("t10k-labels-idx1-ubyte", false, 4, 0, -1, CT_ERR_FORMAT,
                        "holds 3 images but"));
    CHECK(mnist_failure("t10k-labels-idx1-ubyte", false, 4, 0, -1, CT_ERR_FORMAT,
                        "t10k-labels-idx1-ubyte holds 4 labels"));
    CHECK(mnist_failure("t10k-images-idx3-ubyte", false, 3, 0, -1, CT_ERR_FORMAT,
                        "expected u8 images (N, H, W), found uint8 with 1 dimension(s)"));
    CHECK(mnist_failure("train-images-idx3-ubyte.gz", false, 0, 0, -1, CT_ERR_IO,
                        "train-images-idx3-ubyte not found (nor train-images-idx3-ubyte.gz)"));
    /* A corrupt file keeps the reader's message, after the dataset function's name. */
    char dir[512], p[640];
    snprintf(dir, sizeof dir, "%s", tmp_path("cut-mnist"));
    CHECK(write_mnist_dir(dir));
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
    CHECK(write_file(p, "\0\0\x08\x03\0\0\0\x03", 8));
    ct_mnist m;
    ct_status st = ct_load_mnist_dir(dir, &m);
    remove_mnist_dir(dir);
    CHECK(st == CT_ERR_FORMAT);
    CHECK_ERROR(CT_ERR_FORMAT, "ct_load_mnist_dir: ct_read_idx: ");
    CHECK(ct_load_mnist_dir(NULL, &m) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "dir is NULL");
}

TEST(test_data_fashion_mnist_missing_names_the_package) {
    const char *old = getenv("CT_FASHION_MNIST_DIR");
    char saved[512] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("CT_FASHION_MNIST_DIR", "/nonexistent/fashion-mnist", 1);
    ct_mnist m;
    ct_status st = ct_load_fashion_mnist(&m);
    if (old)
        setenv("CT_FASHION_MNIST_DIR", saved, 1);
    else
        unsetenv("CT_FASHION_MNIST_DIR");
    CHECK(st == CT_ERR_IO && m.train_images == NULL);
    CHECK_ERROR(CT_ERR_IO, "install the Debian package dataset-fashion-mnist (make deps)");
}

/* The real data set, when installed: 60000 + 10000 images of 28x28, labels 0..9, 6000 (and
 * 1000) of each class, and the first training labels (9 0 0 3, as Python's gzip and numpy
 * read them). */
TEST(test_data_fashion_mnist_real) {
    struct stat st;
    if (!getenv("CT_FASHION_MNIST_DIR") && stat(CT_FASHION_MNIST_DIR, &st) != 0) {
        ct_test_skip("Fashion-MNIST is not installed: the Debian package dataset-fashion-mnist "
                     "(make deps) puts it in " CT_FASHION_MNIST_DIR);
        return;
    }
    ct_mnist m;
    CHECK_OK(ct_load_fashion_mnist(&m));
    bool ok = ct_ndim(m.train_images) == 3 && ct_shape(m.train_images)[0] == 60000 &&
              ct_shape(m.train_images)[1] == 28 && ct_shape(m.train_images)[2] == 28 &&
              ct_dtype_of(m.train_images) == CT_U8 && ct_numel(m.train_labels) == 60000 &&
              ct_shape(m.test_images)[0] == 10000 && ct_numel(m.test_labels) == 10000;
    int64_t *labels = malloc(sizeof(int64_t) * 60000);
    ok = ok && labels && ct_copy_to_host(m.train_labels, labels, sizeof(int64_t) * 60000) == CT_OK;
    int64_t counts[10] = {0};
    for (int i = 0; ok && i < 60000; i++)
        ok = labels[i] >= 0 && labels[i] <= 9 && ++counts[labels[i]];
    for (int c = 0; ok && c < 10; c++) ok = counts[c] == 6000;
    ok = ok && labels[0] == 9 && labels[1] == 0 && labels[2] == 0 && labels[3] == 3;
    free(labels);
    ct_mnist_release(&m);
    CHECK(ok);
}

/* ------------------------------------------------- allocation failures ---- */

static const char *fault_dir;

/* Every reader and the loader, on small files; CT_OK or the first failure's status. */
static ct_status fault_workload(void) {
    char p[640];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", fault_dir);
    ct_tensor *t = ct_read_idx(p);
    if (!t) return ct_last_status();
    ct_release(t);
    snprintf(p, sizeof p, "%s/f.npy", fault_dir);
    t = ct_read_npy(p);
    if (!t) return ct_last_status();
    ct_release(t);
    snprintf(p, sizeof p, "%s/c.csv", fault_dir);
    ct_tensor *x, *y;
    if (ct_read_csv(p, NULL, &x, &y) != CT_OK) return ct_last_status();
    ct_loader *l = ct_loader_new(x, y, &(ct_loader_options){.batch_size = 2, .shuffle = true});
    ct_release(x);
    ct_release(y);
    ct_status st = l ? ct_loader_start_epoch(l, 1) : ct_last_status();
    ct_tensor *bx = NULL, *by = NULL;
    if (st == CT_OK) st = ct_loader_next(l, &bx, &by);
    ct_release(bx);
    ct_release(by);
    ct_loader_free(l);
    if (st != CT_OK) return st;
    ct_mnist m;
    st = ct_load_mnist_dir(fault_dir, &m);
    ct_mnist_release(&m);
    return st;
}

/* Make the nth host allocation fail (or the nth pool segment, when raw is set), for every n
 * the workload reaches: each run ends in success or CT_ERR_OUT_OF_MEMORY, leaking nothing. */
TEST(test_data_readers_allocation_failures) {
    char dir[512], p[640];
    snprintf(dir, sizeof dir, "%s", tmp_path("faults"));
    CHECK(write_mnist_dir(dir));
    byte_buf b = {0};
    npy_preamble(&b, 1, "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }", true);
    for (int i = 0; i < 6; i++) buf_float(&b, i, CT_F32, true);
    snprintf(p, sizeof p, "%s/f.npy", dir);
    CHECK(write_file(p, b.data, b.n));
    snprintf(p, sizeof p, "%s/c.csv", dir);
    CHECK(write_text(p, "1,2,0\n3,4,1\n5,6,1\n"));
    fault_dir = dir;
    CHECK_OK(fault_workload());
    long live = ct__live_tensors();
    int failures = 0;
    for (int raw = 0; raw < 2; raw++)
        for (long n = 1; n <= 80; n++) {
            ct_empty_cache(CT_CPU);
            if (raw)
                ct__pool_fail_raw_after(n, 0);
            else
                ct__malloc_fail_after(n, 0);
            ct_status st = fault_workload();
            ct__malloc_fail_after(0, 0);
            ct__pool_fail_raw_after(0, 0);
            failures += st != CT_OK;
            if ((st != CT_OK && st != CT_ERR_OUT_OF_MEMORY) || ct__live_tensors() != live)
                ct_test_fail(__FILE__, __LINE__, "%s allocation %ld: %s: %s (%ld tensors leaked)",
                             raw ? "pool" : "host", n, ct_status_name(st), ct_last_error(),
                             ct__live_tensors() - live);
            ct_clear_error();
        }
    snprintf(p, sizeof p, "%s/f.npy", dir);
    remove(p);
    snprintf(p, sizeof p, "%s/c.csv", dir);
    remove(p);
    remove_mnist_dir(dir);
    CHECK(failures > 20); /* the injected failures did reach the readers */
}
