/* The data readers' byte source (data_file_impl.h): plain or gzip files, offsets for error
 * messages, and payload reads sized against the file before they allocate. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data_file_impl.h"
#include "data/io_fault_impl.h"

/* Deflate expands at most about 1032:1, so a gzip file of n bytes cannot hold more than
 * this many times n bytes of data (plus a little for tiny files). */
#define CT_GZIP_MAX_RATIO 1032u
#define CT_GZIP_SLACK 4096u
/* gzread takes an unsigned count: read in steps no larger than this. */
#define CT_GZIP_STEP (1u << 30)
#define CT_GROW_START ((size_t)1 << 20)

static ct_status io_error(const char *fn, const char *path, const char *what, int err) {
    char buf[256];
    const char *reason = strerror_r(err, buf, sizeof buf);
    return ct__error(CT_ERR_IO, "%s: cannot %s %s: %s", fn, what, path, reason);
}

ct_status ct__data_format_error(const ct__data_file *f, uint64_t offset, const char *fmt, ...) {
    char problem[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    /* In a gzipped file the offset counts the uncompressed bytes: say so, or the user looks
     * for it in the compressed file. */
    return ct__error(CT_ERR_FORMAT, "%s: %s: byte %llu%s: %s", f->fn, f->path,
                     (unsigned long long)offset, f->gz ? " of the uncompressed data" : "", problem);
}

const char *ct__file_kind(unsigned mode) {
    return S_ISDIR(mode)    ? "a folder"
           : S_ISFIFO(mode) ? "a pipe (FIFO)"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISLNK(mode)  ? "a symbolic link"
                            : "not a regular file";
}

/* O_NONBLOCK makes open(2) return at once on a FIFO with no writer (it would wait for one);
 * on a regular file it does nothing, and it is cleared once fstat has said what the file is. */
int ct__open_regular(const char *fn, const char *path, uint64_t *size) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return io_error(fn, path, "open", errno), -1;
    struct stat st;
    int err = fstat(fd, &st) != 0 ? errno : 0;
    if (!err && S_ISREG(st.st_mode) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        err = errno;
    if (err || !S_ISREG(st.st_mode)) {
        close(fd);
        if (err) return io_error(fn, path, "read", err), -1;
        ct__error(CT_ERR_IO, "%s: %s is %s, not a regular file; give the path of a file", fn, path,
                  ct__file_kind(st.st_mode));
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Open as a plain file, find its size, and switch to zlib when it starts with 1f 8b (on the
 * same descriptor, so the file checked is the file read). */
ct_status ct__data_open(ct__data_file *f, const char *fn, const char *path) {
    *f = (ct__data_file){.fn = fn, .path = path};
    if (!path) return ct__error(CT_ERR_INVALID_ARG, "%s: path is NULL", fn);
    int fd = ct__open_regular(fn, path, &f->size);
    if (fd < 0) return ct_last_status();
    unsigned char magic[2];
    ssize_t got = read(fd, magic, 2);
    bool gzipped = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (got < 0 || lseek(fd, 0, SEEK_SET) != 0) {
        int err = errno;
        close(fd);
        return io_error(fn, path, "read", err);
    }
    if (!gzipped) {
        f->plain = fdopen(fd, "rb");
        if (f->plain) return CT_OK;
        int err = errno;
        close(fd);
        return io_error(fn, path, "open", err);
    }
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        return io_error(fn, path, "open", ENOMEM);
    }
    gzbuffer(gz, 1u << 17);
    f->gz = gz;
    return CT_OK;
}

void ct__data_close(ct__data_file *f) {
    if (f->plain) fclose(f->plain);
    if (f->gz) gzclose_r((gzFile)f->gz);
    f->plain = NULL;
    f->gz = NULL;
}

/* zlib's message for the file's last error, without the "PATH: " it starts with (the
 * error names the file already). */
static const char *gzip_message(const ct__data_file *f, int *code) {
    const char *msg = gzerror((gzFile)f->gz, code);
    size_t len = strlen(f->path);
    if (strncmp(msg, f->path, len) == 0 && strncmp(msg + len, ": ", 2) == 0) msg += len + 2;
    return msg;
}

static ct_status read_gzip(ct__data_file *f, void *dst, size_t n, size_t *got) {
    size_t done = 0;
    while (done < n) {
        size_t step = n - done < CT_GZIP_STEP ? n - done : CT_GZIP_STEP;
        int r = gzread((gzFile)f->gz, (char *)dst + done, (unsigned)step);
        if (r < 0) {
            int code;
            const char *msg = gzip_message(f, &code);
            if (code == Z_ERRNO) return io_error(f->fn, f->path, "read", errno);
            return ct__data_format_error(f, f->offset + done, "corrupt gzip data (%s)", msg);
        }
        if (r == 0) {
            /* zlib reports a stream cut short as a clean end with Z_BUF_ERROR. */
            int code;
            const char *msg = gzip_message(f, &code);
            if (code == Z_BUF_ERROR)
                return ct__data_format_error(f, f->offset + done, "the gzip data is cut short (%s)",
                                             msg);
            break;
        }
        done += (size_t)r;
    }
    *got = done;
    return CT_OK;
}

ct_status ct__data_read_some(ct__data_file *f, void *dst, size_t n, size_t *got) {
    *got = 0;
    if (n == 0) return CT_OK;
    if (ct__io_fault()) return io_error(f->fn, f->path, "read", errno);
    if (f->gz) {
        if (read_gzip(f, dst, n, got) != CT_OK) return ct_last_status();
    } else {
        *got = fread(dst, 1, n, f->plain);
        if (*got < n && ferror(f->plain)) return io_error(f->fn, f->path, "read", errno);
    }
    f->offset += *got;
    return CT_OK;
}

ct_status ct__data_read_exact(ct__data_file *f, void *dst, size_t n, const char *what) {
    uint64_t start = f->offset;
    size_t got;
    if (ct__data_read_some(f, dst, n, &got) != CT_OK) return ct_last_status();
    if (got < n)
        return ct__data_format_error(
            f, start + got, "the file ends inside %s (%zu of its %zu bytes present)", what, got, n);
    return CT_OK;
}

ct_status ct__data_expect_end(ct__data_file *f) {
    unsigned char byte;
    uint64_t at = f->offset;
    size_t got;
    if (ct__data_read_some(f, &byte, 1, &got) != CT_OK) return ct_last_status();
    if (got != 0) {
        uint64_t extra = f->gz ? 0 : f->size - at;
        if (extra)
            return ct__data_format_error(f, at, "%llu unexpected bytes after the data",
                                         (unsigned long long)extra);
        return ct__data_format_error(f, at, "unexpected bytes after the data");
    }
    return CT_OK;
}

/* Check that `need` more bytes can be in the file, before anything is allocated. */
static ct_status check_room(ct__data_file *f, uint64_t need, const char *what) {
    if (f->plain) {
        uint64_t left = f->size > f->offset ? f->size - f->offset : 0;
        if (need > left)
            return ct__data_format_error(f, f->offset,
                                         "%s needs %llu bytes but only %llu remain in the file",
                                         what, (unsigned long long)need, (unsigned long long)left);
        return CT_OK;
    }
    uint64_t most = f->size > (UINT64_MAX - CT_GZIP_SLACK) / CT_GZIP_MAX_RATIO
                        ? UINT64_MAX
                        : f->size * CT_GZIP_MAX_RATIO + CT_GZIP_SLACK;
    if (need > most || f->offset > most - need)
        return ct__data_format_error(f, f->offset,
                                     "%s needs %llu bytes, more than a gzip file of %llu bytes "
                                     "can hold",
                                     what, (unsigned long long)need, (unsigned long long)f->size);
    return CT_OK;
}

/* gzip: the data's length is unknown until it is read, so grow a buffer as it arrives. */
static void *read_growing(ct__data_file *f, size_t need, const char *what) {
    size_t cap = need < CT_GROW_START ? need : CT_GROW_START, have = 0;
    uint64_t start = f->offset;
    char *buf = ct__malloc(cap ? cap : 1);
    for (;;) {
        if (!buf)
            return ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory reading %s of %s", f->fn,
                            what, f->path);
        size_t got;
        if (ct__data_read_some(f, buf + have, cap - have, &got) != CT_OK) break;
        have += got;
        if (have == need) return buf;
        if (have < cap) {
            ct__data_format_error(f, start + have,
                                  "the file ends inside %s (%zu of its %zu bytes present)", what,
                                  have, need);
            break;
        }
        size_t next = cap > need / 2 ? need : cap * 2;
        char *grown = ct__realloc(buf, next);
        if (!grown) ct__free_mem(buf);
        buf = grown;
        cap = next;
    }
    ct__free_mem(buf);
    return NULL;
}

ct_tensor *ct__data_read_tensor(ct__data_file *f, ct_dtype dtype, int ndim, const int64_t *shape,
                                const char *what) {
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || ct__mul_overflow_i64(numel, shape[i], &numel))
            return ct__data_format_error(f, f->offset, "the shape of %s overflows", what), NULL;
    if (ct__shape_extent(ndim, shape) < 0)
        return ct__data_format_error(f, f->offset,
                                     "the shape of %s has sizes that multiply past 2^59 (a "
                                     "size of 0 aside)",
                                     what),
               NULL;
    size_t bytes;
    if (ct__mul_overflow_size((size_t)numel, ct__dtype_size(dtype), &bytes))
        return ct__data_format_error(f, f->offset, "the size of %s overflows", what), NULL;
    if (check_room(f, bytes, what) != CT_OK) return NULL;
    if (f->plain) {
        ct_tensor *t = ct__host_tensor_new(dtype, ndim, shape);
        if (!t) return NULL;
        if (ct__data_read_exact(f, ct__data(t), bytes, what) != CT_OK) {
            ct_release(t);
            return NULL;
        }
        return t;
    }
    void *buf = read_growing(f, bytes, what);
    if (!buf) return NULL;
    ct_tensor *t = ct__host_tensor_new(dtype, ndim, shape);
    if (t && bytes) memcpy(ct__data(t), buf, bytes);
    ct__free_mem(buf);
    return t;
}

char *ct__data_read_all(ct__data_file *f, size_t *size) {
    size_t cap = 4096, have = 0;
    if (f->plain && f->size > f->offset && f->size - f->offset + 2 > cap)
        cap = (size_t)(f->size - f->offset) + 2;
    char *buf = ct__malloc(cap);
    while (buf) {
        size_t got;
        if (ct__data_read_some(f, buf + have, cap - 1 - have, &got) != CT_OK) {
            ct__free_mem(buf);
            return NULL;
        }
        have += got;
        if (have < cap - 1) {
            buf[have] = '\0';
            *size = have;
            return buf;
        }
        char *grown = cap > SIZE_MAX / 2 ? NULL : ct__realloc(buf, cap * 2);
        if (!grown) ct__free_mem(buf);
        buf = grown;
        cap *= 2;
    }
    return ct__fail(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory reading %s", f->fn, f->path);
}

void ct__data_swap_bytes(void *data, size_t count, size_t width) {
    unsigned char *p = data;
    for (size_t i = 0; i < count; i++, p += width)
        for (size_t a = 0, b = width - 1; a < b; a++, b--) {
            unsigned char tmp = p[a];
            p[a] = p[b];
            p[b] = tmp;
        }
}
