/* Loading a plugin: one sequence for the CUDA backend and the MPI and NCCL engines
 * (plugin_load_impl.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/plugin_load_impl.h"

bool ct__plugin_path_beside_library(const char *file, char *path, size_t size) {
    Dl_info info;
    snprintf(path, size, "%s", file);
    if (!dladdr((void *)ct__plugin_path_beside_library, &info) || !info.dli_fname) return false;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return false;
    snprintf(path, size, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, file);
    return true;
}

void *ct__plugin_dlopen(const char *path, int flags, char *error, size_t size) {
    void *handle = dlopen(path, RTLD_NOW | flags);
    if (!handle) {
        const char *text = dlerror();
        snprintf(error, size, "%s", text ? text : "unknown error");
    }
    return handle;
}

/* Close a plugin a step refused. */
static bool refuse(ct__plugin *p) {
    dlclose(p->handle);
    p->handle = NULL;
    return false;
}

bool ct__plugin_find_entry(ct__plugin *p, const char *entry) {
    dlerror(); /* clear, so that what follows is this lookup's */
    p->entry = dlsym(p->handle, entry);
    if (p->entry) return true;
    snprintf(p->error, sizeof p->error,
             "%s %s is not a plugin of this ctensor (no %s symbol); rebuild it with this "
             "library",
             p->what, p->path, entry);
    return refuse(p);
}

bool ct__plugin_open(ct__plugin *p, const char *env_var, const char *file, int flags,
                     const char *entry, const char *hint) {
    const char *env = getenv(env_var);
    if (env && *env)
        snprintf(p->path, sizeof p->path, "%s", env);
    else
        ct__plugin_path_beside_library(file, p->path, sizeof p->path);
    char why[1024];
    p->handle = ct__plugin_dlopen(p->path, flags, why, sizeof why);
    if (!p->handle) {
        snprintf(p->error, sizeof p->error, "%s %s could not be loaded (%s); %s", p->what, p->path,
                 why, hint);
        return false;
    }
    return ct__plugin_find_entry(p, entry);
}

bool ct__plugin_check_abi(ct__plugin *p, int found, int expected) {
    if (found == expected) return true;
    if (found < 0)
        snprintf(p->error, sizeof p->error,
                 "%s %s gave no API table (this ctensor expects ABI version %d); rebuild it "
                 "with this library",
                 p->what, p->path, expected);
    else
        snprintf(p->error, sizeof p->error,
                 "%s %s has ABI version %d, this ctensor expects %d; rebuild it with this "
                 "library",
                 p->what, p->path, found, expected);
    return refuse(p);
}
