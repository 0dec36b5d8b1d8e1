/* CIFAR-10's binary distribution (the folder cifar-10-batches-bin of cifar-10-binary.tar.gz):
 * files of 3073-byte records, a label byte then 32x32 R, G and B planes, read into u8 images
 * (N, 3, 32, 32) and i64 labels (N). Each file is read whole (plain or gzipped) and checked
 * before the tensors are made; nothing is kept on failure. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "ctensor/data.h"
#include "data/data_file_impl.h"

#define FN "ct_read_cifar10"
#define CIFAR_SIDE 32
#define CIFAR_CHANNELS 3
#define CIFAR_PIXELS (CIFAR_CHANNELS * CIFAR_SIDE * CIFAR_SIDE) /* 3072 */
#define CIFAR_RECORD (1 + CIFAR_PIXELS)                         /* 3073 */
#define CIFAR_CLASSES 10
#define CIFAR_TRAIN_FILES 5
#define CIFAR_HINT                                                                                 \
    "a CIFAR-10 folder holds data_batch_1.bin to data_batch_5.bin and test_batch.bin (the "        \
    "binary version, cifar-10-binary.tar.gz, unpacked: cifar-10-batches-bin)"

typedef struct cifar_file {
    char path[PATH_MAX];
    char *bytes; /* the whole file (ct__free_mem) */
    size_t size;
} cifar_file;

/* Read and check one file: a whole number (at least one) of records, labels in 0..9. */
static ct_status read_file(const char *dir, const char *name, cifar_file *out) {
    int n = snprintf(out->path, sizeof out->path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof out->path)
        return ct__error(CT_ERR_INVALID_ARG, "%s: the folder name %s is too long", FN, dir);
    struct stat st;
    if (stat(out->path, &st) != 0 && errno == ENOENT)
        return ct__error(CT_ERR_IO, "%s: %s not found: %s", FN, out->path, CIFAR_HINT);
    ct__data_file f;
    if (ct__data_open(&f, FN, out->path) != CT_OK) return ct_last_status();
    out->bytes = ct__data_read_all(&f, &out->size);
    ct_status status = out->bytes ? CT_OK : ct_last_status();
    if (status == CT_OK && out->size == 0)
        status = ct__data_format_error(&f, 0, "empty: a CIFAR-10 file holds records of %d bytes",
                                       CIFAR_RECORD);
    if (status == CT_OK && out->size % CIFAR_RECORD != 0)
        status = ct__data_format_error(
            &f, out->size - out->size % CIFAR_RECORD,
            "truncated or not CIFAR-10: its %zu bytes are not a whole number of %d-byte records "
            "(a label byte, then 3072 bytes of R, G and B planes); the last record has %zu bytes",
            out->size, CIFAR_RECORD, out->size % CIFAR_RECORD);
    for (size_t r = 0; status == CT_OK && r < out->size / CIFAR_RECORD; r++) {
        unsigned label = (unsigned char)out->bytes[r * CIFAR_RECORD];
        if (label >= CIFAR_CLASSES)
            status = ct__data_format_error(&f, r * CIFAR_RECORD,
                                           "label %u of record %zu is outside 0..%d", label, r,
                                           CIFAR_CLASSES - 1);
    }
    ct__data_close(&f);
    return status;
}

/* The records of files[0..count) into images and labels, in file order. */
static ct_status assemble(const cifar_file *files, int count, ct_tensor **images,
                          ct_tensor **labels) {
    int64_t total = 0;
    for (int i = 0; i < count; i++) total += (int64_t)(files[i].size / CIFAR_RECORD);
    *images =
        ct_empty(4, (int64_t[]){total, CIFAR_CHANNELS, CIFAR_SIDE, CIFAR_SIDE}, CT_U8, CT_CPU);
    *labels = *images ? ct_empty(1, &total, CT_I64, CT_CPU) : NULL;
    if (!*labels) return ct_last_status();
    uint8_t *x = (uint8_t *)ct__data(*images);
    int64_t *y = (int64_t *)ct__data(*labels);
    for (int i = 0; i < count; i++)
        for (size_t r = 0; r < files[i].size / CIFAR_RECORD; r++, x += CIFAR_PIXELS) {
            const unsigned char *record = (const unsigned char *)files[i].bytes + r * CIFAR_RECORD;
            *y++ = record[0];
            memcpy(x, record + 1, CIFAR_PIXELS);
        }
    return CT_OK;
}

ct_status ct_read_cifar10(const char *dir, bool train, ct_tensor **images, ct_tensor **labels) {
    if (!images || !labels)
        return ct__error(CT_ERR_INVALID_ARG, "%s: images and labels must not be NULL", FN);
    *images = *labels = NULL;
    if (!dir) return ct__error(CT_ERR_INVALID_ARG, "%s: dir is NULL", FN);
    cifar_file files[CIFAR_TRAIN_FILES] = {0};
    int count = train ? CIFAR_TRAIN_FILES : 1;
    ct_status status = CT_OK;
    for (int i = 0; i < count && status == CT_OK; i++) {
        char name[32] = "test_batch.bin";
        if (train) snprintf(name, sizeof name, "data_batch_%d.bin", i + 1);
        status = read_file(dir, name, &files[i]);
    }
    if (status == CT_OK) status = assemble(files, count, images, labels);
    for (int i = 0; i < count; i++) ct__free_mem(files[i].bytes);
    if (status != CT_OK) {
        ct_release(*images);
        ct_release(*labels);
        *images = *labels = NULL;
    }
    return status;
}
