/* ctensor — data files and datasets: IDX (the MNIST format), NPY and numeric CSV readers, and
 * the MNIST-layout datasets (a folder of four IDX files; Fashion-MNIST from Debian's
 * dataset-fashion-mnist package).
 *
 * Every reader makes CPU tensors (new references, released by the caller). A file that is
 * corrupt, truncated or claims sizes it does not hold gives CT_ERR_FORMAT with the file's
 * path and the byte offset (or the line and column) of the problem; sizes are checked against
 * the file before anything is allocated. A file that cannot be opened gives CT_ERR_IO with the
 * path and the system's reason; so does a path that is not a regular file (a folder, a FIFO,
 * a device, a socket), refused at once: a reader never waits for a FIFO's writer. Any reader
 * accepts a gzip-compressed file (detected by its magic bytes) and reads it through zlib. Readers
 * are thread-safe (they share no state). */
#ifndef CTENSOR_DATA_H
#define CTENSOR_DATA_H

#include <limits.h>
#include <stdbool.h>

#include "ctensor/export.h"
#include "ctensor/status.h"
#include "ctensor/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An IDX file: magic 0x0000, a type byte, a dimension count, big-endian u32 sizes, then the
 * big-endian data. Types map to: 0x08 u8 -> CT_U8; 0x09 i8, 0x0B i16 and 0x0C i32 -> CT_I32
 * (ctensor's smallest signed integer type, which holds them exactly); 0x0D f32 -> CT_F32;
 * 0x0E f64 -> CT_F64. At most CT_MAX_DIMS dimensions. Bytes after the data are an error.
 * NULL on failure. */
CT_API ct_tensor *ct_read_idx(const char *path);

/* A NumPy .npy file, format versions 1.0, 2.0 and 3.0. dtypes (either byte order):
 * f8 -> CT_F64, f4 -> CT_F32, f2 -> CT_F16, i8 -> CT_I64, i4 -> CT_I32, i2 -> CT_I16,
 * i1 -> CT_I8, u8 -> CT_U64, u4 -> CT_U32, u2 -> CT_U16, u1 -> CT_U8, b1 -> CT_BOOL. fortran_order
 * True is converted to C order. The header dict must hold exactly the keys 'descr', 'fortran_order'
 * and 'shape'. NULL on failure. */
CT_API ct_tensor *ct_read_npy(const char *path);

/* No label column (ct_csv_options.label_column). */
#define CT_CSV_NO_LABEL INT_MIN

typedef struct ct_csv_options {
    char delimiter;   /* the cell separator; ',' by default */
    bool has_header;  /* skip the first non-empty line; false by default */
    int label_column; /* the label's column, from 0; negative counts from the end (-1: the
                       * last); CT_CSV_NO_LABEL for none. -1 by default. */
} ct_csv_options;

CT_API ct_csv_options ct_csv_options_default(void);

/* A numeric CSV: every row (empty lines are skipped; "\r\n" endings are fine) has the same
 * number of cells, each a number (spaces around it are ignored). features: a new f32 tensor
 * (N, F) of the non-label columns in order; labels: a new i64 tensor (N) of the label column,
 * whose cells must be integers. options NULL means ct_csv_options_default(). With
 * CT_CSV_NO_LABEL, labels may be NULL and *labels (if given) is set to NULL.
 * CT_ERR_FORMAT names the line and column (from 1) of a ragged row or a bad cell, or a file
 * without data rows; CT_ERR_INVALID_ARG a label column the rows do not have. On failure the
 * outputs are set to NULL. */
CT_API ct_status ct_read_csv(const char *path, const ct_csv_options *options, ct_tensor **features,
                             ct_tensor **labels);

/* A dataset in the MNIST layout: images (N, H, W) u8 and labels (N) i64 in 0..9, for the
 * training and the test split. */
typedef struct ct_mnist {
    ct_tensor *train_images;
    ct_tensor *train_labels;
    ct_tensor *test_images;
    ct_tensor *test_labels;
} ct_mnist;

/* Where Debian's dataset-fashion-mnist package installs its files. */
#define CT_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Load the four MNIST-named IDX files from dir: train-images-idx3-ubyte,
 * train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each plain or
 * with ".gz" added. CT_ERR_IO names a missing file; CT_ERR_FORMAT images that are not
 * (N, H, W) u8, labels that are not (N) u8 or lie outside 0..9, or image and label counts
 * that differ. On success *out holds four new references (ct_mnist_release); on failure
 * it holds NULLs. */
CT_API ct_status ct_load_mnist_dir(const char *dir, ct_mnist *out);

/* Fashion-MNIST from CT_FASHION_MNIST_DIR (the environment variable CT_FASHION_MNIST_DIR,
 * when set, names another folder). When the folder is missing: CT_ERR_IO with a message that
 * names the Debian package to install. */
CT_API ct_status ct_load_fashion_mnist(ct_mnist *out);

/* Release the four tensors and set them to NULL. NULL is ignored. */
CT_API void ct_mnist_release(ct_mnist *data);

/* CIFAR-10's binary version, unpacked (the folder cifar-10-batches-bin): the training split
 * (train: data_batch_1.bin to data_batch_5.bin, in that order) or the test split
 * (test_batch.bin) of dir. Each file is records of 3073 bytes: a label byte in 0..9, then the
 * 32x32 image's R, G and B planes, rows top to bottom. *images: a new (N, 3, 32, 32) u8
 * tensor; *labels: a new (N) i64 tensor. CT_ERR_IO names a missing file (and what the folder
 * should hold); CT_ERR_FORMAT names the file and the byte of an empty file, a size that is
 * not a whole number of records (a truncated file), or a label above 9. On failure both
 * outputs are NULL. */
CT_API ct_status ct_read_cifar10(const char *dir, bool train, ct_tensor **images,
                                 ct_tensor **labels);

#ifdef __cplusplus
}
#endif
#endif
