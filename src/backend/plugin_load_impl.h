/* Loading a plugin (libctensor_cuda.so, libctensor_mpi.so, libctensor_nccl.so): one loader,
 * each plugin a row (ct__plugin_kind) passed to it. The loader finds the library, opens it,
 * calls its entry and checks the ABI version of the table the entry gives; each failure is
 * told with which plugin, which path, what the loader said, and which ABI version was found
 * against the one this library expects. Core-only (the plugins cannot call it).
 *
 * Where a plugin is looked for: the path its environment variable names, when set, and no
 * other (a plugin the user named is not replaced silently by another); else the file beside
 * this library (plugins are built and installed there); else the file on the loader's search
 * path (LD_LIBRARY_PATH, the cache).
 *
 * A plugin's entry is `const void *ENTRY(void)`, returning its API table (or NULL), whose
 * first member is `int abi_version`. */
#ifndef CT_PLUGIN_LOAD_IMPL_H
#define CT_PLUGIN_LOAD_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/* A plugin: its row. */
typedef struct ct__plugin_kind {
    const char *what;    /* names it in messages: "the CUDA plugin" */
    const char *file;    /* its library: "libctensor_cuda.so" */
    const char *env_var; /* names its path, when set: "CT_CUDA_PLUGIN" */
    int flags;           /* RTLD_LOCAL, or RTLD_GLOBAL where its libraries need that */
    const char *entry;   /* the entry symbol */
    int abi_version;     /* the version its API table must have */
    const char *hint;    /* what to do when it is not found: "build with ... or set ..." */
} ct__plugin_kind;

/* Where the loader looks for a plugin. */
typedef enum ct__plugin_place {
    CT_PLUGIN_NAMED,  /* the environment variable names the path */
    CT_PLUGIN_BESIDE, /* the file exists beside this library */
    CT_PLUGIN_SEARCH, /* neither: the loader's search path */
} ct__plugin_place;

/* A plugin loaded, or why not. */
typedef struct ct__plugin {
    char path[1024];  /* the library loaded, or the path tried when none loaded */
    void *handle;     /* dlopen's; NULL when loading failed */
    const void *api;  /* the entry's table, of the expected ABI version; NULL when loading failed */
    char error[3072]; /* why loading failed, a whole sentence */
} ct__plugin;

/* Where kind's plugin is (the rules above), its path into path (the bare file name for the
 * loader's search path). */
ct__plugin_place ct__plugin_locate(const ct__plugin_kind *kind, char *path, size_t size);

/* Find, open, enter and check kind's plugin: true with p->handle and p->api; false with
 * p->error, p->path the path tried, and nothing left open. */
bool ct__plugin_load(const ct__plugin_kind *kind, ct__plugin *p);

/* The path of `file` in the folder of the library holding this code; false, with `file` alone
 * in path, when that folder is unknown. */
bool ct__plugin_path_beside_library(const char *file, char *path, size_t size);

#endif
