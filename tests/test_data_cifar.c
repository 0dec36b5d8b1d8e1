/* The CIFAR-10 reader (ct_read_cifar10): folders of files in CIFAR-10's binary format written
 * here (plain and gzipped), read back value by value; and hostile folders (a missing file, a
 * truncated one, an empty one, a label above 9, a folder in a file's place), each of which must
 * fail with the file's name and the problem, leave both outputs NULL and keep no memory. */
#include <sys/stat.h>
#include <unistd.h>

#include "ct_test.h"
#include "data_test_files.h"

enum { RECORD = 3073, PIXELS = 3072 };

/* The label and pixel k of record r of file `file` (0..4 the training files, 5 the test one). */
static unsigned label_of(int file, int r) { return (unsigned)(file * 7 + r * 3) % 10; }
static unsigned pixel_of(int file, int r, int k) {
    return (unsigned)(file * 31 + r * 17 + k) % 251;
}

/* `records` records of file `file` in CIFAR-10's format, into bytes (at least records * 3073). */
static size_t make_records(int file, int records, unsigned char *bytes) {
    for (int r = 0; r < records; r++) {
        unsigned char *at = bytes + (size_t)r * RECORD;
        at[0] = (unsigned char)label_of(file, r);
        for (int k = 0; k < PIXELS; k++) at[1 + k] = (unsigned char)pixel_of(file, r, k);
    }
    return (size_t)records * RECORD;
}

static const char *file_name(int file) {
    static const char *names[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                   "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
    return names[file];
}

/* The test folder (tmp_path's), each file with counts[file] records; file `gzipped` (or -1)
 * written through gzip. */
static const char *write_folder(const int counts[6], int gzipped) {
    static unsigned char bytes[4 * RECORD];
    for (int file = 0; file < 6; file++) {
        size_t n = make_records(file, counts[file], bytes);
        const char *path = tmp_path(file_name(file));
        bool ok = file == gzipped ? write_gzip(path, bytes, n) : write_file(path, bytes, n);
        if (!ok) return NULL;
    }
    static char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("x"));
    *strrchr(dir, '/') = '\0';
    return dir;
}

/* images and labels hold the records of files [first, last], in order. */
static bool check_split(const ct_tensor *images, const ct_tensor *labels, const int counts[6],
                        int first, int last) {
    int64_t n = 0;
    for (int f = first; f <= last; f++) n += counts[f];
    if (ct_dtype_of(images) != CT_U8 || ct_ndim(images) != 4 || ct_size(images, 0) != n ||
        ct_size(images, 1) != 3 || ct_size(images, 2) != 32 || ct_size(images, 3) != 32 ||
        ct_dtype_of(labels) != CT_I64 || ct_ndim(labels) != 1 || ct_size(labels, 0) != n)
        return false;
    static uint8_t x[16 * PIXELS];
    int64_t y[16];
    if (n > 16 || ct_copy_to_host(images, x, (size_t)n * PIXELS) != CT_OK ||
        ct_copy_to_host(labels, y, sizeof(int64_t) * (size_t)n) != CT_OK)
        return false;
    int64_t i = 0;
    for (int f = first; f <= last; f++)
        for (int r = 0; r < counts[f]; r++, i++) {
            if (y[i] != label_of(f, r)) return false;
            for (int k = 0; k < PIXELS; k++)
                if (x[i * PIXELS + k] != pixel_of(f, r, k)) return false;
        }
    return true;
}

TEST(test_data_cifar10_reads_both_splits) {
    const int counts[6] = {2, 3, 1, 2, 2, 3};
    for (int gzipped = -1; gzipped < 6; gzipped += 3) { /* none, data_batch_3, test_batch */
        const char *dir = write_folder(counts, gzipped);
        CHECK_NOT_NULL(dir);
        ct_tensor *images = NULL, *labels = NULL;
        CHECK_OK(ct_read_cifar10(dir, true, &images, &labels));
        CHECK(check_split(images, labels, counts, 0, 4));
        ct_release(images);
        ct_release(labels);
        CHECK_OK(ct_read_cifar10(dir, false, &images, &labels));
        CHECK(check_split(images, labels, counts, 5, 5));
        ct_release(images);
        ct_release(labels);
    }
}

/* ct_read_cifar10(dir, train) fails with status, a message naming the file `file` and
 * holding needle, NULL outputs and no memory kept. */
static bool fails_naming(const char *dir, bool train, ct_status status, int file,
                         const char *needle) {
    ct_memory_statistics before, after;
    if (ct_memory_stats(CT_CPU, &before) != CT_OK) return false;
    ct_tensor *images = (ct_tensor *)1, *labels = (ct_tensor *)1;
    ct_status got = ct_read_cifar10(dir, train, &images, &labels);
    bool ok = got == status && images == NULL && labels == NULL &&
              strstr(ct_last_error(), file_name(file)) && strstr(ct_last_error(), needle) &&
              ct_memory_stats(CT_CPU, &after) == CT_OK && after.allocated == before.allocated;
    if (!ok)
        printf("    expected %s naming %s and \"%s\", got %s: %s\n", ct_status_name(status),
               file_name(file), needle, ct_status_name(got), ct_last_error());
    ct_clear_error();
    return ok;
}

TEST(test_data_cifar10_hostile_folders) {
    const int counts[6] = {1, 2, 1, 1, 1, 2};
    static unsigned char bytes[2 * RECORD];
    const char *dir = write_folder(counts, -1);
    CHECK_NOT_NULL(dir);
    /* A missing file: named, with what the folder should hold. */
    CHECK(remove(tmp_path("data_batch_4.bin")) == 0);
    CHECK(fails_naming(dir, true, CT_ERR_IO, 3, "not found: a CIFAR-10 folder holds"));
    CHECK(write_file(tmp_path("data_batch_4.bin"), bytes, make_records(3, 1, bytes)));
    /* Truncated: the last record cut short, at several places, plain and gzipped. */
    size_t whole = make_records(5, 2, bytes);
    for (size_t cut = 1; cut < RECORD; cut += 1000) {
        CHECK(write_file(tmp_path("test_batch.bin"), bytes, whole - cut));
        CHECK(fails_naming(dir, false, CT_ERR_FORMAT, 5, "truncated or not CIFAR-10"));
        CHECK(write_gzip(tmp_path("test_batch.bin"), bytes, whole - cut));
        CHECK(fails_naming(dir, false, CT_ERR_FORMAT, 5, "byte 3073 of the uncompressed data"));
    }
    /* More bytes than whole records: not a multiple of 3073 either. */
    CHECK(write_file(tmp_path("test_batch.bin"), bytes, RECORD + 5));
    CHECK(fails_naming(dir, false, CT_ERR_FORMAT, 5, "the last record has 5 bytes"));
    /* Empty. */
    CHECK(write_file(tmp_path("test_batch.bin"), bytes, 0));
    CHECK(fails_naming(dir, false, CT_ERR_FORMAT, 5, "empty"));
    CHECK(write_file(tmp_path("test_batch.bin"), bytes, whole));
    /* A label above 9, in the second record of the second file: its byte offset is named. */
    make_records(1, 2, bytes);
    bytes[RECORD] = 10;
    CHECK(write_file(tmp_path("data_batch_2.bin"), bytes, 2 * RECORD));
    CHECK(fails_naming(dir, true, CT_ERR_FORMAT, 1, "byte 3073: label 10 of record 1 is outside"));
    bytes[RECORD] = 255;
    CHECK(write_file(tmp_path("data_batch_2.bin"), bytes, 2 * RECORD));
    CHECK(fails_naming(dir, true, CT_ERR_FORMAT, 1, "label 255 of record 1"));
    /* The test split does not read the training files. */
    ct_tensor *images = NULL, *labels = NULL;
    CHECK_OK(ct_read_cifar10(dir, false, &images, &labels));
    CHECK(ct_size(images, 0) == 2);
    ct_release(images);
    ct_release(labels);
    /* A folder where a file should be. */
    CHECK(remove(tmp_path("data_batch_2.bin")) == 0);
    CHECK(mkdir(tmp_path("data_batch_2.bin"), 0700) == 0);
    CHECK(fails_naming(dir, true, CT_ERR_IO, 1, "is a folder"));
    CHECK(rmdir(tmp_path("data_batch_2.bin")) == 0);
    /* No such folder. */
    CHECK(fails_naming("/nonexistent-cifar-folder", true, CT_ERR_IO, 0, "not found"));
}

TEST(test_data_cifar10_argument_errors) {
    ct_tensor *images = NULL, *labels = NULL;
    CHECK(ct_read_cifar10(NULL, true, &images, &labels) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "dir is NULL");
    CHECK(images == NULL && labels == NULL);
    CHECK(ct_read_cifar10("/tmp", true, NULL, &labels) == CT_ERR_INVALID_ARG);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "must not be NULL");
}
