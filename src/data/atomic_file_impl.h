/* Replacing a file atomically: the new contents go to a temporary file beside the target,
 * which is flushed, synced and renamed over it, then the folder is synced. Readers of the
 * target see the old file or the new one, never a part.
 *
 * The target: a path that does not exist yet, or a regular file. A symbolic link is written
 * through: the file it points to (at the end of the chain) is replaced and the link kept. A
 * device, a FIFO, a socket, a folder, or a link to one of those or to nothing, is refused with
 * CT_ERR_IO before anything is written.
 *
 * The temporary file: unnamed (O_TMPFILE) where the file system allows it, and linked to its
 * name "<target>.tmp.<pid>.<n>" only once it is complete and synced, just before the rename,
 * so a process killed while writing leaves nothing behind. Elsewhere it is named from the
 * start. Either way its writer holds an exclusive flock(2) on it until it is renamed, and
 * every open sweeps the folder of "<target>.tmp.<digits>.<digits>" files whose lock it can
 * take (their writer is gone: the kernel drops a lock when its process dies, whatever pid
 * the process had or has been reused for) and whose pid is not alive here. Files of any other
 * name, and files another live process is writing, are never touched. */
#ifndef CT_ATOMIC_FILE_IMPL_H
#define CT_ATOMIC_FILE_IMPL_H

#include <stdbool.h>
#include <stdio.h>

#include "ctensor/ctensor.h"

typedef struct ct__atomic_file {
    const char *fn; /* the public function, for messages */
    char *target;   /* the regular file replaced: the path given, symbolic links resolved */
    char *dir;      /* the folder holding target */
    char *tmp;      /* the temporary file's name, once it has one */
    bool unnamed;   /* the temporary is an O_TMPFILE not linked to tmp yet */
    FILE *f;        /* the temporary file, open for writing */
} ct__atomic_file;

/* Check path (see above), sweep the stale temporaries of earlier writers, and open a new
 * temporary file (a->f) for fn. CT_ERR_IO naming the path and what is wrong; call
 * ct__atomic_close after a failure too. */
ct_status ct__atomic_open(ct__atomic_file *a, const char *fn, const char *path);

/* Flush and sync a->f, give it its name, rename it over the target and sync the folder. */
ct_status ct__atomic_commit(ct__atomic_file *a);

/* Close what is open and remove the temporary file unless it was committed. */
void ct__atomic_close(ct__atomic_file *a);

/* Remove the stale temporary files of target (described above) from its folder; how many
 * were removed. Called by ct__atomic_open; for tests. */
int ct__atomic_sweep(const char *target);

#endif
