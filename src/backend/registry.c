/* The backend registry: the table of device types, the only place that knows which exist.
 * Each type is one row: its name, whether its memory is the host's, the backend that serves
 * it (built in, or a plugin loaded with dlopen on first use, so that one build runs on
 * machines with and without a GPU, driver or CUDA runtime) and its probe. The rest of the
 * library asks the table (core/device_impl.h, and the public queries of ctensor/device.h).
 *
 * A plugin (backend/plugin_impl.h) is loaded by the one plugin loader
 * (backend/plugin_load_impl.h): its entry gives a ct__device_plugin_api, whose start takes
 * the core's host services and returns the plugin's ct__backend_table or NULL with a reason.
 *
 * The CUDA plugin links the CUDA runtime, cuBLAS, cuDNN and NCCL: loading it takes time and
 * resident memory (docs/PERFORMANCE.md) which a CPU-only machine should not pay to learn that
 * it has no GPU. So a row's probe (for CUDA: does the driver load) runs first, and a plugin
 * found beside this library is loaded only when the probe passes; when it fails the probe's
 * reason is the type's. The plugin's build facts (ct_cuda_get_build_info, for the doctor)
 * still load it. A plugin named by its environment variable is always loaded: it may need no
 * driver (the tests' fake GPUs). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "backend/cuda_driver_impl.h"
#include "backend/plugin_impl.h"
#include "backend/plugin_load_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"

/* A device type. */
typedef struct device_row {
    const char *name;  /* "cuda": ct_device_str's word and ct_device_parse's */
    const char *alias; /* another word ct_device_parse takes ("gpu"), or NULL */
    const char *title; /* in messages: "CUDA is unavailable" */
    int preference;    /* "auto" takes the present type of the highest */
    bool host_memory;  /* its tensors live in host memory */
    bool pins;         /* its backend allocates pinned host memory, which batches bound for it
                          are assembled in */
    const ct__backend_table *(*built_in)(void); /* NULL: a plugin serves it */
    const ct__plugin_kind *plugin;
    /* Whether the plugin can work here, cheaply and before loading it; false with the
     * reason. NULL: no probe. */
    bool (*probe)(char *reason, size_t size);
} device_row;

static const ct__plugin_kind cuda_plugin = {
    .what = "the CUDA plugin",
    .file = "libctensor_cuda.so",
    .env_var = "CT_CUDA_PLUGIN",
    .flags = RTLD_LOCAL,
    .entry = CT_CUDA_PLUGIN_ENTRY,
    .abi_version = CT_PLUGIN_ABI_VERSION,
    .hint = "build with -DCT_CUDA=ON or set CT_CUDA_PLUGIN to its path",
};

static const device_row rows[CT__DEVICE_TYPES] = {
    [CT_DEVICE_CPU] = {.name = "cpu",
                       .title = "the CPU",
                       .preference = 0,
                       .host_memory = true,
                       .built_in = ct__cpu_backend},
    [CT_DEVICE_CUDA] = {.name = "cuda",
                        .alias = "gpu",
                        .title = "CUDA",
                        .preference = 1,
                        .pins = true,
                        .plugin = &cuda_plugin,
                        .probe = ct__cuda_driver_present},
};

/* What discovery found of a type: its backend, or why there is none. */
typedef struct row_state {
    atomic_bool discovered;
    const ct__backend_table *backend;
    char reason[4160];        /* a plugin's error and a probe's reason */
    bool plugin_skipped;      /* the probe gave the reason without loading the plugin */
    bool build_read;          /* build has been filled */
    ct_cuda_build_info build; /* what the plugin said of itself, and its path */
} row_state;

static row_state states[CT__DEVICE_TYPES];
static pthread_mutex_t discovery_lock = PTHREAD_MUTEX_INITIALIZER;

static ct_status host_set_error(ct_status status, const char *message) {
    return ct__error(status, "%s", message);
}

static void host_log(ct_log_level level, const char *message) { ct__log(level, "%s", message); }

static const ct__plugin_host plugin_host = {host_set_error, host_log, ct__cuda_driver_present};

bool ct__device_type_known(ct_device_type type) {
    return (unsigned)type < CT__DEVICE_TYPES && rows[type].name;
}

/* The plugin's own account of its build, which it gives without a driver. */
static void read_build_info(row_state *s, const ct__plugin *p) {
    const ct__device_plugin_api *api = p->api;
    s->build.plugin_loaded = true;
    snprintf(s->build.plugin_path, sizeof s->build.plugin_path, "%s", p->path);
    if (api->build_info) api->build_info(&s->build);
    s->build_read = true;
}

/* A plugin beside this library whose probe fails would say only what the probe says: say it
 * without loading the plugin. */
static bool plugin_needless(const device_row *row, row_state *s) {
    char path[sizeof s->build.plugin_path];
    if (!row->probe || ct__plugin_locate(row->plugin, path, sizeof path) != CT_PLUGIN_BESIDE ||
        row->probe(s->reason, sizeof s->reason)) {
        s->reason[0] = '\0';
        return false;
    }
    snprintf(s->build.plugin_path, sizeof s->build.plugin_path, "%s", path);
    return true;
}

static void discover(const device_row *row, row_state *s) {
    if (row->built_in) {
        s->backend = row->built_in();
        return;
    }
    if ((s->plugin_skipped = plugin_needless(row, s))) return;
    ct__plugin p;
    if (!ct__plugin_load(row->plugin, &p)) {
        char path[sizeof p.path], probed[1024];
        bool named = ct__plugin_locate(row->plugin, path, sizeof path) == CT_PLUGIN_NAMED;
        bool unprobed = named || !row->probe || row->probe(probed, sizeof probed);
        snprintf(s->reason, sizeof s->reason, "%s%s%s", p.error, unprobed ? "" : "; also ",
                 unprobed ? "" : probed);
        snprintf(s->build.plugin_path, sizeof s->build.plugin_path, "%s", p.path);
        s->build_read = true;
        return;
    }
    const ct__device_plugin_api *api = p.api;
    s->backend = api->start(&plugin_host, s->reason, sizeof s->reason);
    read_build_info(s, &p);
    if (s->backend && s->backend->device_count() == 0) {
        s->backend = NULL;
        if (!s->reason[0]) snprintf(s->reason, sizeof s->reason, "no %s device found", row->name);
    }
}

/* The type's discovery, done once (type known). */
static row_state *discovered(ct_device_type type) {
    row_state *s = &states[type];
    if (atomic_load_explicit(&s->discovered, memory_order_acquire)) return s;
    pthread_mutex_lock(&discovery_lock);
    if (!atomic_load_explicit(&s->discovered, memory_order_relaxed)) {
        discover(&rows[type], s);
        atomic_store_explicit(&s->discovered, true, memory_order_release);
    }
    pthread_mutex_unlock(&discovery_lock);
    return s;
}

const ct__backend_table *_Atomic ct__found_backends[CT__DEVICE_TYPES];

const ct__backend_table *ct__backend_find(ct_device_type type) {
    if (!ct__device_type_known(type))
        return ct__fail(CT_ERR_INVALID_ARG, "invalid device type %d", (int)type);
    row_state *s = discovered(type);
    if (s->backend) {
        atomic_store_explicit(&ct__found_backends[type], s->backend, memory_order_release);
        return s->backend;
    }
    return ct__fail(CT_ERR_DEVICE_UNAVAILABLE, "%s is unavailable: %s", rows[type].title,
                    s->reason);
}

int ct__physical_device_count(ct_device_type type) {
    if (!ct__device_type_known(type)) return 0;
    row_state *s = discovered(type);
    return s->backend ? s->backend->device_count() : 0;
}

bool ct__physical_device_present(ct_device_type type, int index, char *reason, size_t size) {
    if (!ct__device_type_known(type)) {
        snprintf(reason, size, "invalid device type %d", (int)type);
        return false;
    }
    row_state *s = discovered(type);
    if (!s->backend) {
        snprintf(reason, size, "%s", s->reason);
        return false;
    }
    int count = s->backend->device_count();
    if (index < count) return true;
    snprintf(reason, size, "%s:%d does not exist; %d physical %s device%s present", rows[type].name,
             index, count, rows[type].name, count == 1 ? " is" : "s are");
    return false;
}

const char *ct__device_type_alias(ct_device_type type) {
    return ct__device_type_known(type) ? rows[type].alias : NULL;
}

bool ct__device_type_pins(ct_device_type type) {
    return ct__device_type_known(type) && rows[type].pins;
}

bool ct__pinning_device_type(ct_device_type *out) {
    for (int t = 0; t < CT__DEVICE_TYPES; t++)
        if (ct__device_type_pins((ct_device_type)t)) {
            *out = (ct_device_type)t;
            return true;
        }
    return false;
}

const char *ct__device_type_unavailable_reason(ct_device_type type) {
    if (!ct__device_type_known(type)) return "not a device type";
    row_state *s = discovered(type);
    return s->backend ? "" : s->reason;
}

const char *ct_device_type_name(ct_device_type type) {
    return ct__device_type_known(type) ? rows[type].name : NULL;
}

bool ct_device_is_host(ct_device device) {
    return ct__device_type_known(device.type) && rows[device.type].host_memory;
}

int ct_device_types(ct_device_type *out, int capacity) {
    ct_device_type order[CT__DEVICE_TYPES];
    int n = 0;
    for (int t = 0; t < CT__DEVICE_TYPES; t++) {
        if (!ct__device_type_known((ct_device_type)t)) continue;
        int at = n++; /* insertion by preference, highest first */
        for (; at > 0 && rows[order[at - 1]].preference < rows[t].preference; at--)
            order[at] = order[at - 1];
        order[at] = (ct_device_type)t;
    }
    for (int i = 0; out && i < n && i < capacity; i++) out[i] = order[i];
    return n;
}

bool ct_cuda_is_available(void) { return discovered(CT_DEVICE_CUDA)->backend != NULL; }

const char *ct_cuda_unavailable_reason(void) {
    return ct__device_type_unavailable_reason(CT_DEVICE_CUDA);
}

ct_status ct_cuda_get_build_info(ct_cuda_build_info *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "ct_cuda_get_build_info: out is NULL");
    row_state *s = discovered(CT_DEVICE_CUDA);
    pthread_mutex_lock(&discovery_lock);
    /* The plugin that discovery skipped is loaded now (its start is not called: it would
     * fail with the reason already given). */
    if (s->plugin_skipped && !s->build_read) {
        ct__plugin p;
        if (ct__plugin_load(rows[CT_DEVICE_CUDA].plugin, &p)) {
            read_build_info(s, &p);
        } else {
            snprintf(s->reason, sizeof s->reason, "%s", p.error);
            s->build_read = true;
        }
    }
    *out = s->build;
    pthread_mutex_unlock(&discovery_lock);
    return CT_OK;
}
