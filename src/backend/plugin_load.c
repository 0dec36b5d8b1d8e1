/* The one plugin loader: the CUDA backend's, the MPI engine's and the NCCL engine's
 * (plugin_load_impl.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

ct__plugin_place ct__plugin_locate(const ct__plugin_kind *kind, char *path, size_t size) {
    const char *env = getenv(kind->env_var);
    if (env && *env) {
        snprintf(path, size, "%s", env);
        return CT_PLUGIN_NAMED;
    }
    if (ct__plugin_path_beside_library(kind->file, path, size) && access(path, F_OK) == 0)
        return CT_PLUGIN_BESIDE;
    snprintf(path, size, "%s", kind->file);
    return CT_PLUGIN_SEARCH;
}

/* dlopen(path, RTLD_NOW | flags); NULL with dlerror's text (which names the file missing:
 * the plugin or a library it needs) in error. */
static void *open_library(const char *path, int flags, char *error, size_t size) {
    void *handle = dlopen(path, RTLD_NOW | flags);
    if (!handle) {
        const char *text = dlerror();
        snprintf(error, size, "%s", text ? text : "unknown error");
    }
    return handle;
}

/* Opens the plugin where ct__plugin_locate says; NULL with p->error. */
static void *open_plugin(const ct__plugin_kind *kind, ct__plugin *p) {
    char why[1024], beside[1024];
    ct__plugin_place place = ct__plugin_locate(kind, p->path, sizeof p->path);
    void *handle = open_library(p->path, kind->flags, why, sizeof why);
    if (handle) return handle;
    if (place == CT_PLUGIN_NAMED) {
        snprintf(p->error, sizeof p->error,
                 "%s=\"%s\" names %s, which cannot be loaded (%s); point it at the %s of this "
                 "build, or unset it",
                 kind->env_var, p->path, kind->what, why, kind->file);
        return NULL;
    }
    /* dlerror names the plugin when it is not found, else what the plugin lacks. */
    char own[256];
    snprintf(own, sizeof own, "%s:", kind->file);
    if (place == CT_PLUGIN_BESIDE || !strstr(why, own)) {
        snprintf(p->error, sizeof p->error,
                 "%s %s%s could not be loaded: %s; install what it names (the libraries the "
                 "plugin was built with) or add their folder to LD_LIBRARY_PATH",
                 kind->what, p->path,
                 place == CT_PLUGIN_SEARCH ? " (found on the loader's search path)" : "", why);
        return NULL;
    }
    bool known = ct__plugin_path_beside_library(kind->file, beside, sizeof beside);
    snprintf(p->error, sizeof p->error,
             "%s %s was not built or not found (tried %s%sthe loader's search path: %s); %s",
             kind->what, kind->file, known ? beside : "", known ? " and " : "", why, kind->hint);
    if (known) snprintf(p->path, sizeof p->path, "%s", beside);
    return NULL;
}

/* Close a plugin a step refused; false. */
static bool refuse(ct__plugin *p) {
    dlclose(p->handle);
    p->handle = NULL;
    p->api = NULL;
    return false;
}

bool ct__plugin_load(const ct__plugin_kind *kind, ct__plugin *p) {
    p->error[0] = '\0';
    p->api = NULL;
    if (!(p->handle = open_plugin(kind, p))) return false;
    dlerror(); /* clear, so that what follows is this lookup's */
    const void *(*entry)(void);
    *(void **)&entry = dlsym(p->handle, kind->entry);
    if (!entry) {
        snprintf(p->error, sizeof p->error,
                 "%s %s is not a plugin of this ctensor (no %s symbol); rebuild it with this "
                 "library",
                 kind->what, p->path, kind->entry);
        return refuse(p);
    }
    Dl_info where; /* the file the loader chose, where it searched */
    if (dladdr(*(void **)&entry, &where) && where.dli_fname)
        snprintf(p->path, sizeof p->path, "%s", where.dli_fname);
    p->api = entry();
    /* Every plugin's table begins with its int abi_version. */
    int found = p->api ? *(const int *)p->api : -1;
    if (found == kind->abi_version) return true;
    if (found < 0)
        snprintf(p->error, sizeof p->error,
                 "%s %s gave no API table (this ctensor expects ABI version %d); rebuild it "
                 "with this library",
                 kind->what, p->path, kind->abi_version);
    else
        snprintf(p->error, sizeof p->error,
                 "%s %s has ABI version %d, this ctensor expects %d; rebuild it with this "
                 "library",
                 kind->what, p->path, found, kind->abi_version);
    return refuse(p);
}
