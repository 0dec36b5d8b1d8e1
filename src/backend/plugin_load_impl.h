/* Loading a plugin (libctensor_cuda.so, libctensor_mpi.so, libctensor_nccl.so): where it is
 * found, opening it, its entry symbol and the ABI version of the table its entry gives, each
 * failure told with which library, which path, what the loader said, and which ABI version
 * was found against which one this library expects. Core-only (the plugins cannot call it). */
#ifndef CT_PLUGIN_LOAD_IMPL_H
#define CT_PLUGIN_LOAD_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/* A plugin being loaded. `what` names it in messages ("the NCCL plugin"); error holds why
 * the last step failed, a whole sentence after `what`. */
typedef struct ct__plugin {
    const char *what;
    char path[1024]; /* the library tried */
    void *handle;    /* dlopen's; NULL until opened, and once a failed step closed it */
    void *entry;     /* the entry symbol's address */
    char error[3072];
} ct__plugin;

/* The path of `file` in the folder of the library holding this code (plugins are built and
 * installed beside it); false, with `file` alone in path, when that folder is unknown. */
bool ct__plugin_path_beside_library(const char *file, char *path, size_t size);

/* dlopen(path, RTLD_NOW | flags); NULL with dlerror's text (which names the file missing:
 * the plugin or a library it needs) in error. */
void *ct__plugin_dlopen(const char *path, int flags, char *error, size_t size);

/* The entry symbol of the opened plugin into p->entry; false (the plugin closed) when it has
 * none, so it is no plugin of this ctensor. */
bool ct__plugin_find_entry(ct__plugin *p, const char *entry);

/* Open the plugin named by the environment variable env_var when set, else `file` beside this
 * library, and find its entry; false with p->error saying why, `hint` (what to do) after a
 * library that does not load. */
bool ct__plugin_open(ct__plugin *p, const char *env_var, const char *file, int flags,
                     const char *entry, const char *hint);

/* Whether the ABI version of the table the entry gave (`found`; -1: it gave none) is
 * `expected`; if not the plugin is closed and p->error says both. */
bool ct__plugin_check_abi(ct__plugin *p, int found, int expected);

#endif
