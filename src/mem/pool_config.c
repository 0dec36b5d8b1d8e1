/* The pools' table and configuration: the environment (CT_MEMORY_LIMIT, CT_MEMORY_GROWTH,
 * read once on the first use of any pool), limits, growth, and giving the cache back. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_locale_impl.h"
#include "core/device_impl.h"
#include "core/error_impl.h"
#include "mem/pinned_impl.h"
#include "mem/pool_state_impl.h"

ct__pool ct__pools[CT_DEVICE_SLOTS];
atomic_bool ct__pools_ready;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
/* CT_MEMORY_LIMIT's limits by device slot (0: none named), kept for logical devices made
 * later by ct_configure_logical_devices. */
static size_t env_limits[CT_DEVICE_SLOTS];

/* ---- CT_MEMORY_LIMIT ---- */

static const struct {
    const char *name;
    double bytes;
} units[] = {{"", 1},
             {"B", 1},
             {"KB", 1e3},
             {"MB", 1e6},
             {"GB", 1e9},
             {"TB", 1e12},
             {"KiB", 1024.0},
             {"MiB", 1048576.0},
             {"GiB", 1073741824.0},
             {"TiB", 1099511627776.0}};

/* A size such as "8GiB", "1.5 GB" or "4096"; false when malformed or too large. */
static bool parse_size(const char *text, size_t *out) {
    if (!isdigit((unsigned char)*text) && *text != '.') return false;
    char *end;
    double value = ct__strtod_c(text, &end);
    while (*end == ' ') end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].name) != 0) continue;
        double bytes = value * units[i].bytes;
        if (!isfinite(bytes) || bytes < 0 || bytes >= 18446744073709551616.0) return false;
        *out = (size_t)bytes;
        return true;
    }
    return false;
}

/* One "device=size" item (trimmed); false when malformed. */
static bool parse_item(const char *item, size_t *limits, size_t count) {
    const char *eq = strchr(item, '=');
    if (!eq || eq == item || (size_t)(eq - item) >= 32) return false;
    char name[32];
    memcpy(name, item, (size_t)(eq - item));
    name[eq - item] = '\0';
    size_t len = strlen(name);
    while (len && name[len - 1] == ' ') name[--len] = '\0';
    ct_device device;
    if (strcasecmp(name, "auto") == 0 || ct_device_parse(name, &device) != CT_OK) return false;
    const char *value = eq + 1;
    while (*value == ' ') value++;
    size_t bytes;
    /* 0 would read as "no limit" (the pools' unset value): refused, not obeyed backwards. */
    if (!parse_size(value, &bytes) || bytes == 0 || (size_t)ct__device_slot(device) >= count)
        return false;
    limits[ct__device_slot(device)] = bytes;
    return true;
}

ct_status ct__parse_memory_limits(const char *text, size_t *limits, size_t count) {
    char item[128], bad[128] = "";
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        size_t n = strcspn(p, ",");
        size_t kept = n < sizeof item ? n : sizeof item - 1;
        memcpy(item, p, kept);
        item[kept] = '\0';
        while (kept && item[kept - 1] == ' ') item[--kept] = '\0';
        if ((n >= sizeof item || !parse_item(item, limits, count)) && !bad[0])
            snprintf(bad, sizeof bad, "%s", item);
        p += n;
    }
    if (!bad[0]) return CT_OK;
    return ct__error(CT_ERR_INVALID_ARG,
                     "CT_MEMORY_LIMIT: cannot read \"%s\"; expected DEVICE=SIZE items separated "
                     "by commas, SIZE above 0 with a unit of B, KB, MB, GB, TB, KiB, MiB, GiB or "
                     "TiB, e.g. \"cuda:0=8GiB,cpu=2GiB\" (leave a device out for no limit); "
                     "that part is ignored",
                     bad);
}

ct_status ct__parse_memory_growth(const char *text, bool *grow) {
    if (!strcasecmp(text, "false") || !strcmp(text, "0") || !strcasecmp(text, "true") ||
        !strcmp(text, "1")) {
        *grow = !strcasecmp(text, "true") || !strcmp(text, "1");
        return CT_OK;
    }
    return ct__error(CT_ERR_INVALID_ARG,
                     "CT_MEMORY_GROWTH: cannot read \"%.64s\"; expected true or false (1 or 0); "
                     "it is ignored and pools grow on demand",
                     text);
}

/* Report a malformed variable: the status of this thread and a warning through the log. */
static void report_env_error(void) { ct__log(CT_LOG_WARNING, "%s", ct_last_error()); }

static void read_env(void) {
    const char *text = getenv("CT_MEMORY_LIMIT");
    if (text) {
        if (ct__parse_memory_limits(text, env_limits, CT_DEVICE_SLOTS) != CT_OK) report_env_error();
        for (int i = 0; i < CT_DEVICE_SLOTS; i++)
            if (env_limits[i]) ct__pools[i].stats.limit = env_limits[i];
    }
    const char *growth = getenv("CT_MEMORY_GROWTH");
    bool grow;
    if (growth && ct__parse_memory_growth(growth, &grow) != CT_OK)
        report_env_error();
    else if (growth && !grow)
        for (int i = 0; i < CT_DEVICE_SLOTS; i++) ct__pools[i].no_growth = true;
}

ct__pool *ct__pool_of_slow(ct_device device) {
    pthread_once(&env_once, read_env);
    atomic_store_explicit(&ct__pools_ready, true, memory_order_release);
    return &ct__pools[ct__device_slot(device)];
}

size_t ct__env_memory_limit(ct_device device) {
    pthread_once(&env_once, read_env);
    size_t own = env_limits[ct__device_slot(device)];
    return own ? own : env_limits[ct__device_slot((ct_device){device.type, 0})];
}

/* ---- the public controls ---- */

/* The device's validity, with op's name in front of the message. */
static ct_status check_device(const char *op, ct_device device) {
    if (ct_device_check(device) != CT_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ct_last_error());
        return ct__error(ct_last_status(), "%s: %s", op, message);
    }
    return CT_OK;
}

static ct_status checked_pool(const char *op, ct_device device, const ct__backend_table **backend,
                              ct__pool **pool) {
    if (check_device(op, device) != CT_OK) return ct_last_status();
    *backend = ct__backend(device.type);
    if (!*backend) return ct_last_status();
    *pool = ct__pool_of(device);
    return CT_OK;
}

ct_status ct_empty_cache(ct_device device) {
    const ct__backend_table *backend = NULL;
    ct__pool *pool = NULL;
    if (checked_pool("ct_empty_cache", device, &backend, &pool) != CT_OK) return ct_last_status();
    ct__pool_lock(pool);
    ct__pool_release_cache(pool, backend);
    ct__pool_unlock(pool);
    ct__pinned_empty_cache(); /* pinned host memory serves the CPU and every GPU alike */
    return CT_OK;
}

ct_status ct_set_memory_limit(ct_device device, size_t bytes) {
    const ct__backend_table *backend = NULL;
    ct__pool *pool = NULL;
    if (checked_pool("ct_set_memory_limit", device, &backend, &pool) != CT_OK)
        return ct_last_status();
    ct__pool_lock(pool);
    if (bytes && pool->stats.allocated > bytes) {
        size_t allocated = pool->stats.allocated;
        ct__pool_unlock(pool);
        return ct__error(CT_ERR_STATE,
                         "ct_set_memory_limit: %zu bytes are allocated already, more than the "
                         "limit of %zu; free tensors first or choose a larger limit",
                         allocated, bytes);
    }
    pool->stats.limit = bytes;
    if (!bytes) pool->no_growth = false; /* nothing to reserve: growth is back on */
    /* Cached segments beyond the new limit go back; live ones stay until freed. */
    if (bytes && pool->stats.reserved > bytes) ct__pool_release_cache(pool, backend);
    ct__pool_unlock(pool);
    return CT_OK;
}

ct_status ct_set_memory_growth(ct_device device, bool grow) {
    const ct__backend_table *backend = NULL;
    ct__pool *pool = NULL;
    if (checked_pool("ct_set_memory_growth", device, &backend, &pool) != CT_OK)
        return ct_last_status();
    char name[32];
    ct_device_str(device, name, sizeof name);
    ct__pool_lock(pool);
    size_t limit = pool->stats.limit;
    if (!grow && !limit) {
        ct__pool_unlock(pool);
        return ct__error(CT_ERR_STATE,
                         "ct_set_memory_growth: %s has no memory limit, so there is nothing to "
                         "reserve up front; set one first with ct_set_memory_limit (or "
                         "ct_configure_logical_devices)",
                         name);
    }
    pool->no_growth = !grow;
    const char *why = NULL;
    size_t room = 0;
    if (!grow) {
        ct__pool_release_cache(pool, backend); /* one segment for all the room */
        room = pool->stats.reserved < limit ? limit - pool->stats.reserved : 0;
        if (room &&
            ct__pool_new_segment(pool, device, backend, room, CT_BLOCK_LARGE, &why) != CT_OK)
            pool->no_growth = false;
        else
            why = NULL;
    }
    ct__pool_unlock(pool);
    if (why)
        return ct__error(CT_ERR_OUT_OF_MEMORY,
                         "ct_set_memory_growth: cannot reserve %zu bytes on %s (%s); growth "
                         "stays on: lower the limit with ct_set_memory_limit or free memory on "
                         "the device",
                         room, name, why);
    return CT_OK;
}
