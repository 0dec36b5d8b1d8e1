/* Replacing a file atomically through a locked temporary file beside it, and sweeping the
 * temporaries that killed writers left (atomic_file_impl.h has the contract). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error_impl.h"
#include "data/atomic_file_impl.h"
#include "data/data_file_impl.h"
#include "data/io_fault_impl.h"

#define CT_TEMP_ATTEMPTS 100

static ct_status io_error(const ct__atomic_file *a, const char *what, const char *path) {
    char buf[256];
    return ct__error(CT_ERR_IO, "%s: cannot %s %s: %s", a->fn, what, path,
                     strerror_r(errno, buf, sizeof buf));
}

static char *copy_string(const char *s, size_t len) {
    char *copy = ct__malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

static ct_status out_of_memory(const ct__atomic_file *a) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory", a->fn);
}

/* a->target: path itself when it is new or a regular file, the file at the end of its
 * chain of links when it is a symbolic link; anything else refused. */
static ct_status resolve_target(ct__atomic_file *a, const char *path) {
    struct stat st;
    char real[PATH_MAX];
    const char *target = path;
    bool exists = lstat(path, &st) == 0;
    if (!exists && errno != ENOENT) return io_error(a, "look up", path);
    if (exists && S_ISLNK(st.st_mode)) {
        if (!realpath(path, real) || stat(real, &st) != 0) {
            if (errno == ENOENT)
                return ct__error(CT_ERR_IO,
                                 "%s: %s is a symbolic link to a file that does not exist; "
                                 "create the file or give another path",
                                 a->fn, path);
            return io_error(a, "follow the symbolic link", path);
        }
        target = real;
    }
    if (exists && !S_ISREG(st.st_mode))
        return ct__error(CT_ERR_IO,
                         "%s: %s is %s%s, not a regular file: it is left as it is; give the "
                         "path of a file",
                         a->fn, path, target != path ? "a symbolic link to " : "",
                         ct__file_kind(st.st_mode));
    a->target = copy_string(target, strlen(target));
    if (!a->target) return out_of_memory(a);
    const char *slash = strrchr(a->target, '/');
    a->dir = !slash               ? copy_string(".", 1)
             : slash == a->target ? copy_string("/", 1)
                                  : copy_string(a->target, (size_t)(slash - a->target));
    return a->dir ? CT_OK : out_of_memory(a);
}

/* The pid in "<base>.tmp.<pid>.<n>", or 0 when name is not of that form. */
static long temp_pid(const char *name, const char *base, size_t base_len) {
    if (strncmp(name, base, base_len) != 0 || strncmp(name + base_len, ".tmp.", 5) != 0) return 0;
    const char *p = name + base_len + 5;
    long pid = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (pid > (long)INT_MAX / 10)
            return 0;
        else
            pid = pid * 10 + (*p - '0');
    if (*p != '.' || pid <= 0 || !p[1]) return 0;
    for (p++; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return pid;
}

/* Remove folder/name when it is a regular file whose lock can be taken (its writer is gone)
 * and still the file that was locked. */
static bool remove_stale(int dir_fd, const char *name) {
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat locked, now;
    bool removed =
        fstat(fd, &locked) == 0 && S_ISREG(locked.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        fstatat(dir_fd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == locked.st_ino &&
        now.st_dev == locked.st_dev && unlinkat(dir_fd, name, 0) == 0;
    close(fd);
    return removed;
}

int ct__atomic_sweep(const char *target) {
    const char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    char dir[PATH_MAX];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (snprintf(dir, sizeof dir, "%.*s", slash == target ? 1 : (int)(slash - target),
                      target) >= (int)sizeof dir)
        return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int removed = 0;
    size_t base_len = strlen(base);
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        long pid = temp_pid(e->d_name, base, base_len);
        /* A pid alive here may be the writer (the lock is taken just after the file is made):
         * leave its files. One reused by another process leaves them until it ends. */
        if (!pid || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM) continue;
        removed += remove_stale(dirfd(d), e->d_name);
    }
    closedir(d);
    return removed;
}

static ct_status set_name(ct__atomic_file *a) {
    static atomic_uint counter;
    size_t size = strlen(a->target) + 48;
    if (!a->tmp && !(a->tmp = ct__malloc(size))) return out_of_memory(a);
    snprintf(a->tmp, size, "%s.tmp.%ld.%u", a->target, (long)getpid(),
             atomic_fetch_add(&counter, 1));
    return CT_OK;
}

/* Lock a new temporary (taken at once unless a sweeper holds it, about to remove it); false
 * when it was swept or is being swept, so another name is needed. */
static bool lock_named(int fd, const char *name) {
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) return false;
    struct stat mine, now;
    return fstat(fd, &mine) == 0 && stat(name, &now) == 0 && mine.st_ino == now.st_ino &&
           mine.st_dev == now.st_dev;
}

/* A named temporary: made with O_EXCL, so two writers never share one. Mode 0666 less the
 * umask, as fopen gives. */
static int open_named(ct__atomic_file *a) {
    for (int attempt = 0; attempt < CT_TEMP_ATTEMPTS; attempt++) {
        if (set_name(a) != CT_OK) return -1;
        int fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return io_error(a, "create a temporary file", a->tmp), -1;
        if (lock_named(fd, a->tmp)) return fd;
        close(fd);
    }
    errno = EEXIST;
    return io_error(a, "create a temporary file", a->tmp), -1;
}

/* An unnamed temporary in the target's folder, where the file system has them and /proc
 * can give it a name later; else -1 (and a named one is made instead). */
static int open_unnamed(ct__atomic_file *a) {
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) != 0) return -1;
    int fd = open(a->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd >= 0) {
        flock(fd, LOCK_EX | LOCK_NB); /* nobody else can reach it: taken at once */
        a->unnamed = true;
    }
    return fd;
#else
    (void)a;
    return -1;
#endif
}

ct_status ct__atomic_open(ct__atomic_file *a, const char *fn, const char *path) {
    *a = (ct__atomic_file){.fn = fn};
    if (resolve_target(a, path) != CT_OK) return ct_last_status();
    ct__atomic_sweep(a->target);
    int fd = open_unnamed(a);
    if (fd < 0 && (fd = open_named(a)) < 0) return ct_last_status();
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        ct_status status = io_error(a, "open", a->tmp ? a->tmp : a->dir);
        close(fd);
        return status;
    }
    return CT_OK;
}

/* Link the unnamed temporary to a free name of the pattern, locked as it is. */
static ct_status link_unnamed(ct__atomic_file *a) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(a->f));
    for (int attempt = 0; attempt < CT_TEMP_ATTEMPTS; attempt++) {
        if (set_name(a) != CT_OK) return ct_last_status();
        if (linkat(AT_FDCWD, proc, AT_FDCWD, a->tmp, AT_SYMLINK_FOLLOW) == 0) {
            a->unnamed = false;
            return CT_OK;
        }
        if (errno != EEXIST) break;
    }
    ct_status status = io_error(a, "name the temporary file", a->tmp);
    ct__free_mem(a->tmp);
    a->tmp = NULL; /* not linked: nothing to remove */
    return status;
}

/* fsync the folder, so the rename itself survives a crash. */
static ct_status sync_directory(const ct__atomic_file *a) {
    ct_status status = CT_OK;
    int fd = open(a->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    /* Some file systems cannot sync a folder (EINVAL): the rename is done all the same. */
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL))
        status = io_error(a, "sync the folder", a->dir);
    if (fd >= 0) close(fd);
    return status;
}

ct_status ct__atomic_commit(ct__atomic_file *a) {
    const char *name = a->tmp ? a->tmp : "the temporary file";
    errno = 0;
    if (ct__io_fault() || fflush(a->f) != 0) return io_error(a, "write", name);
    if (ct__io_fault() || fsync(fileno(a->f)) != 0) return io_error(a, "sync", name);
    if (a->unnamed && link_unnamed(a) != CT_OK) return ct_last_status();
    if (rename(a->tmp, a->target) != 0) {
        char buf[256];
        return ct__error(CT_ERR_IO, "%s: cannot rename %s to %s: %s", a->fn, a->tmp, a->target,
                         strerror_r(errno, buf, sizeof buf));
    }
    ct__free_mem(a->tmp);
    a->tmp = NULL; /* renamed: nothing to remove */
    /* Closed (and unlocked) only now: the temporary was never named and unlocked at once. */
    FILE *f = a->f;
    a->f = NULL;
    if (fclose(f) != 0) return io_error(a, "close", a->target);
    return sync_directory(a);
}

void ct__atomic_close(ct__atomic_file *a) {
    if (a->tmp && !a->unnamed) unlink(a->tmp);
    if (a->f) fclose(a->f);
    ct__free_mem(a->tmp);
    ct__free_mem(a->target);
    ct__free_mem(a->dir);
    *a = (ct__atomic_file){0};
}
