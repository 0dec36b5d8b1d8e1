/* What the readers and the checkpoint writer do with a user's filesystem: a FIFO given as any
 * input is refused at once (never waited on: each test runs under an alarm, so a regression
 * fails here instead of hanging CI); a device, FIFO or folder given as the file to save is
 * left alone; a symbolic link is written through; the temporary files of writers that were
 * killed are swept by the next save, and only those (a file whose writer is alive, or of
 * another name, stays); and saves killed at random moments leave a valid file and, after the
 * next save, no temporary; and a full disk or a read error at each I/O call in turn (the
 * seam of data/io_fault_impl.h) is a clear error that loses nothing and leaves nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ct_test.h"
#include "data/io_fault_impl.h"
#include "safetensors_test.h"

/* A reader that blocks is a failure, said as such, not a hung test program. */
static void hung(int sig) {
    (void)sig;
    static const char msg[] = "FAIL test_data_files: a call blocked for 10 s (on a FIFO?)\n";
    ssize_t n = write(STDOUT_FILENO, msg, sizeof msg - 1);
    (void)n;
    _exit(1);
}

static void arm_alarm(void) {
    signal(SIGALRM, hung);
    alarm(10);
}

static bool is_kind(const char *path, unsigned kind) {
    struct stat st;
    return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == kind;
}

/* A state dict of one f32 tensor of n values, all v. */
static ct_state_dict *one_tensor(int64_t n, double v) {
    ct_state_dict *sd = ct_state_dict_new();
    ct_tensor *t = ct_full(1, &n, v, CT_F32, CT_CPU);
    bool ok = sd && t && ct_state_dict_set(sd, "w", t) == CT_OK;
    ct_release(t);
    if (!ok) ct_state_dict_free(sd);
    return ok ? sd : NULL;
}

/* The first value of "w" in the file at path, or NAN when it does not load. */
static double first_value(const char *path) {
    ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
    const ct_tensor *t = sd ? ct_state_dict_get(sd, "w") : NULL;
    ct_tensor *first = t ? ct_slice(t, 0, 0, 1, 1) : NULL;
    double v = NAN;
    if (!first || ct_item(first, &v) != CT_OK) v = NAN;
    ct_release(first);
    ct_state_dict_free(sd);
    ct_clear_error();
    return v;
}

/* Entries of dir whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return n;
}

/* The reader failed with CT_ERR_IO naming path and saying it is a pipe. */
static bool refused_as_pipe(bool failed, const char *what, const char *path) {
    bool ok = failed && ct_last_status() == CT_ERR_IO && strstr(ct_last_error(), path) &&
              strstr(ct_last_error(), "a pipe (FIFO)");
    if (!ok)
        ct_test_fail(__FILE__, __LINE__, "%s of a FIFO: expected CT_ERR_IO naming it, got %s: %s",
                     what, ct_status_name(ct_last_status()), ct_last_error());
    ct_clear_error();
    return ok;
}

TEST(test_data_files_fifo_is_refused_by_every_reader) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *fifo = st_path(dir, "input", 0);
    CHECK(mkfifo(fifo, 0600) == 0);
    arm_alarm();
    ct_tensor *t = ct_read_idx(fifo);
    bool ok = refused_as_pipe(!t, "ct_read_idx", fifo);
    ok = ok && refused_as_pipe(!(t = ct_read_npy(fifo)), "ct_read_npy", fifo);
    ct_tensor *features = NULL, *labels = NULL;
    ok = ok &&
         refused_as_pipe(ct_read_csv(fifo, NULL, &features, &labels) != CT_OK, "ct_read_csv", fifo);
    ct_state_dict *sd = ct_safetensors_load(fifo, CT_CPU);
    ok = ok && refused_as_pipe(!sd, "ct_safetensors_load", fifo);
    /* A FIFO as a member of an MNIST folder. */
    const char *member = st_path(dir, "train-images-idx3-ubyte", 1);
    CHECK(mkfifo(member, 0600) == 0);
    ct_mnist mnist;
    ok =
        ok && refused_as_pipe(ct_load_mnist_dir(dir, &mnist) != CT_OK, "ct_load_mnist_dir", member);
    alarm(0);
    ct_release(t);
    ct_release(features);
    ct_release(labels);
    ct_state_dict_free(sd);
    st_remove_dir(dir);
    CHECK(ok);
}

/* A member that cannot be looked up for a reason other than absence says that reason. */
TEST(test_data_files_mnist_member_error_is_not_called_missing) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *loop = st_path(dir, "train-images-idx3-ubyte", 0);
    CHECK(symlink("train-images-idx3-ubyte", loop) == 0);
    ct_mnist mnist;
    ct_status status = ct_load_mnist_dir(dir, &mnist);
    bool ok = status == CT_ERR_IO && strstr(ct_last_error(), "symbolic links") &&
              !strstr(ct_last_error(), "not found");
    if (!ok) printf("    got %s: %s\n", ct_status_name(status), ct_last_error());
    ct_clear_error();
    st_remove_dir(dir);
    CHECK(ok);
}

/* The path to save to is a FIFO, a folder, a link to a device, a link to nothing: each refused
 * before anything is written, and left as it was. */
TEST(test_data_files_save_refuses_what_is_not_a_regular_file) {
    char dir[256];
    CHECK(st_make_dir(dir));
    ct_state_dict *sd = one_tensor(4, 1.5);
    CHECK_NOT_NULL(sd);
    const char *fifo = st_path(dir, "fifo.safetensors", 0);
    const char *folder = st_path(dir, "folder.safetensors", 1);
    const char *to_device = st_path(dir, "null.safetensors", 2);
    const char *dangling = st_path(dir, "dangling.safetensors", 3);
    bool made = mkfifo(fifo, 0600) == 0 && mkdir(folder, 0700) == 0 &&
                symlink("/dev/null", to_device) == 0 && symlink("nowhere", dangling) == 0;
    arm_alarm();
    const struct {
        const char *path, *needle;
        unsigned kind;
    } cases[] = {{fifo, "is a pipe (FIFO), not a regular file", S_IFIFO},
                 {folder, "is a folder, not a regular file", S_IFDIR},
                 {to_device, "is a symbolic link to a character device", S_IFLNK},
                 {dangling, "a symbolic link to a file that does not exist", S_IFLNK}};
    bool ok = made;
    for (size_t i = 0; ok && i < sizeof cases / sizeof cases[0]; i++) {
        ct_status status = ct_safetensors_save(cases[i].path, sd);
        ok = status == CT_ERR_IO && strstr(ct_last_error(), cases[i].needle) &&
             is_kind(cases[i].path, cases[i].kind);
        if (!ok)
            printf("    %s: got %s: %s\n", cases[i].path, ct_status_name(status), ct_last_error());
        ct_clear_error();
    }
    alarm(0);
    ok = ok && is_kind("/dev/null", S_IFCHR) && st_count_entries(dir) == 4;
    ct_state_dict_free(sd);
    rmdir(folder);
    st_remove_dir(dir);
    CHECK(ok);
}

/* A symbolic link is written through: its target gets the new file, the link stays. */
TEST(test_data_files_save_writes_through_a_symlink) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *target = st_path(dir, "run3.safetensors", 0);
    const char *link = st_path(dir, "latest.safetensors", 1);
    ct_state_dict *first = one_tensor(4, 1.0), *second = one_tensor(4, 2.0);
    bool ok = first && second && ct_safetensors_save(target, first) == CT_OK &&
              symlink("run3.safetensors", link) == 0 && ct_safetensors_save(link, second) == CT_OK;
    ok = ok && is_kind(link, S_IFLNK) && is_kind(target, S_IFREG) && first_value(target) == 2.0 &&
         st_count_entries(dir) == 2;
    if (!ok)
        printf("    link %d, target %d, value %g, %d entries\n", is_kind(link, S_IFLNK),
               is_kind(target, S_IFREG), first_value(target), st_count_entries(dir));
    ct_state_dict_free(first);
    ct_state_dict_free(second);
    st_remove_dir(dir);
    CHECK(ok);
}

/* A pid that no process has: a child that has exited and been reaped. */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid(pid, NULL, 0);
    return pid;
}

/* A child that holds an exclusive lock on path until *release is closed; its pid. */
static pid_t hold_lock(const char *path, int *release) {
    int ready[2], stop[2];
    if (pipe(ready) != 0 || pipe(stop) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(stop[1]);
        close(ready[0]);
        int fd = open(path, O_RDONLY);
        char byte = fd >= 0 && flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        ssize_t n = write(ready[1], &byte, 1);
        n += read(stop[0], &byte, 1); /* until the parent closes its end */
        _exit(n > 0 ? 0 : 1);
    }
    char byte = 'n';
    bool locked = pid > 0 && read(ready[0], &byte, 1) == 1 && byte == 'y';
    close(ready[0]);
    close(ready[1]);
    close(stop[0]);
    *release = stop[1];
    return locked ? pid : -1;
}

TEST(test_data_files_save_sweeps_only_stale_temporaries) {
    char dir[256], name[128];
    CHECK(st_make_dir(dir));
    pid_t gone = dead_pid();
    CHECK(gone > 0);
    /* Left by a killed writer: removed. */
    snprintf(name, sizeof name, "ck.safetensors.tmp.%ld.3", (long)gone);
    char stale[512];
    snprintf(stale, sizeof stale, "%s", st_path(dir, name, 0));
    /* Locked by a live writer under a pid that is dead here (another pid namespace sharing
     * the folder): kept, as is everything not of the pattern. */
    snprintf(name, sizeof name, "ck.safetensors.tmp.%ld.4", (long)gone);
    char locked[512];
    snprintf(locked, sizeof locked, "%s", st_path(dir, name, 1));
    const char *keep[] = {"ck.safetensors.tmp.x.1", "ck.safetensors.tmp.%ld.",
                          "ck.safetensors.tmp.%ld.1.bak", "other.safetensors.tmp.%ld.1"};
    bool ok = st_write_bytes(stale, "x", 1) && st_write_bytes(locked, "y", 1);
    for (size_t i = 0; ok && i < sizeof keep / sizeof keep[0]; i++) {
        snprintf(name, sizeof name, keep[i], (long)gone);
        ok = st_write_bytes(st_path(dir, name, 2), "z", 1);
    }
    int release = -1;
    pid_t holder = ok ? hold_lock(locked, &release) : -1;
    /* And one of the pattern named after that live holder, not locked at all: its pid is
     * alive, so it may be a writer that has not taken its lock yet. */
    snprintf(name, sizeof name, "ck.safetensors.tmp.%ld.0", (long)holder);
    ok = ok && holder > 0 && st_write_bytes(st_path(dir, name, 3), "w", 1);
    int before = st_count_entries(dir);
    ct_state_dict *sd = one_tensor(4, 3.0);
    ok = ok && sd && ct_safetensors_save(st_path(dir, "ck.safetensors", 0), sd) == CT_OK;
    bool stale_gone = access(stale, F_OK) != 0;
    int after = st_count_entries(dir);
    if (release >= 0) close(release);
    if (holder > 0) waitpid(holder, NULL, 0);
    ct_state_dict_free(sd);
    st_remove_dir(dir);
    CHECK(ok);
    if (!stale_gone || after != before) /* one stale file out, the checkpoint in */
        ct_test_fail(__FILE__, __LINE__, "stale file %s, %d entries before the save, %d after",
                     stale_gone ? "removed" : "kept", before, after);
}

/* Saves killed at random moments: the checkpoint is always whole, and after the next save no
 * temporary file is left. */
TEST(test_data_files_killed_saves_leave_no_temporary) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "ck.safetensors", 0);
    ct_state_dict *sd[2] = {one_tensor(1 << 21, 1.0), one_tensor(1 << 21, 2.0)};
    CHECK(sd[0] && sd[1] && ct_safetensors_save(path, sd[0]) == CT_OK);
    unsigned seed = (unsigned)time(NULL);
    int left_before = 0, bad = 0, leftover = 0;
    for (int trial = 0; trial < 20; trial++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0;; i++) ct_safetensors_save(path, sd[i % 2]);
        }
        CHECK(pid > 0);
        struct timespec pause = {0, (long)(rand_r(&seed) % 60) * 1000000L};
        nanosleep(&pause, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        double v = first_value(path);
        bad += v != 1.0 && v != 2.0;
        left_before += count_prefixed(dir, "ck.safetensors.tmp.");
        if (ct_safetensors_save(path, sd[trial % 2]) != CT_OK) bad++;
        leftover += count_prefixed(dir, "ck.safetensors.tmp.");
    }
    printf("    20 kills: %d temporary file(s) left at a kill, %d after the next save\n",
           left_before, leftover);
    ct_state_dict_free(sd[0]);
    ct_state_dict_free(sd[1]);
    st_remove_dir(dir);
    CHECK(bad == 0);
    CHECK(leftover == 0);
}

/* ENOSPC at each I/O call of a save in turn: the save fails with the system's reason, the
 * file it was to replace still holds the old values, and no temporary file is left; past
 * the last call the save goes through. */
TEST(test_data_files_full_disk_at_every_write_keeps_the_old_file) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "ck.safetensors", 0);
    ct_state_dict *old = one_tensor(1000, 1.0), *new = one_tensor(1000, 2.0);
    CHECK(old && new &&ct_safetensors_save(path, old) == CT_OK);
    bool ok = true;
    int n = 1;
    for (; ok && n < 100; n++) {
        ct__io_fail_after(n, ENOSPC);
        ct_status status = ct_safetensors_save(path, new);
        ct__io_fail_after(0, 0);
        if (status == CT_OK) break;
        ok = status == CT_ERR_IO && strstr(ct_last_error(), strerror(ENOSPC)) &&
             first_value(path) == 1.0 && st_count_entries(dir) == 1;
        if (!ok)
            printf("    fault at I/O call %d: %s: %s\n", n, ct_status_name(status),
                   ct_last_error());
        ct_clear_error();
    }
    ok = ok && n > 2 && n < 100 && first_value(path) == 2.0;
    ct_state_dict_free(old);
    ct_state_dict_free(new);
    st_remove_dir(dir);
    CHECK(ok);
}

/* EIO at each read of a load in turn (safetensors, and the readers' shared byte source): a
 * clear CT_ERR_IO, nothing leaked (the runner checks), and past the last read it loads. */
TEST(test_data_files_read_error_at_every_read) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "ck.safetensors", 0);
    const char *csv = st_path(dir, "data.csv", 1);
    ct_state_dict *sd = one_tensor(10, 3.0);
    CHECK(sd && ct_safetensors_save(path, sd) == CT_OK);
    ct_state_dict_free(sd);
    CHECK(st_write_bytes(csv, "1,2,0\n3,4,1\n", 12));
    bool ok = true;
    int loaded_at = 0, read_at = 0;
    for (int n = 1; ok && n < 50 && !(loaded_at && read_at); n++) {
        ct__io_fail_after(n, EIO);
        ct_state_dict *back = loaded_at ? NULL : ct_safetensors_load(path, CT_CPU);
        bool load_failed = !loaded_at && !back;
        ok = !load_failed ||
             (ct_last_status() == CT_ERR_IO && strstr(ct_last_error(), strerror(EIO)));
        if (back || loaded_at) loaded_at = loaded_at ? loaded_at : n;
        ct_state_dict_free(back);
        ct_clear_error();
        ct__io_fail_after(read_at ? 0 : n, EIO);
        ct_tensor *x = NULL, *y = NULL;
        ct_status status = read_at ? CT_OK : ct_read_csv(csv, NULL, &x, &y);
        ok =
            ok && (status == CT_OK || (status == CT_ERR_IO && strstr(ct_last_error(), "data.csv")));
        if (status == CT_OK && !read_at) read_at = n;
        ct_release(x);
        ct_release(y);
        ct__io_fail_after(0, 0);
        if (!ok) printf("    fault at read %d: %s\n", n, ct_last_error());
        ct_clear_error();
    }
    st_remove_dir(dir);
    CHECK(ok);
    CHECK(loaded_at > 1 && read_at > 1);
}
