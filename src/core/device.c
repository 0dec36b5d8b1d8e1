/* Devices: parsing, the thread-local placement stack, CT_DEVICE, soft placement and the
 * logical device table. Discovery of physical devices is the backend registry's. */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/device_impl.h"
#include "core/error_impl.h"

#define CT_PLACEMENT_STACK_DEPTH 64

static _Thread_local ct_device placement_stack[CT_PLACEMENT_STACK_DEPTH];
static _Thread_local int placement_depth;

/* Written under config_lock, read without it (atomics) on every tensor creation. */
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int logical_counts[CT__DEVICE_TYPES]; /* 0: not split (one per physical device) */

/* -1: read CT_SOFT_PLACEMENT on first use, which read_settings makes the first discovery of
 * devices at the latest. */
static atomic_int soft_placement = -1;

/* ---- parsing ---- */

static bool equals_ignore_case(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return false;
    return true;
}

/* Parses an optional ":N" suffix; true when the rest of the string is valid. */
static bool parse_index(const char *s, int *index) {
    if (*s == '\0') {
        *index = 0;
        return true;
    }
    if (*s != ':' || !isdigit((unsigned char)s[1])) return false;
    long v = 0;
    for (s++; isdigit((unsigned char)*s); s++) {
        v = v * 10 + (*s - '0');
        if (v >= CT_MAX_LOGICAL_DEVICES) return false;
    }
    if (*s != '\0') return false;
    *index = (int)v;
    return true;
}

static bool parse_kind(const char *s, const char *word, ct_device_type type, ct_device *out) {
    size_t n = strlen(word);
    if (strlen(s) < n || !equals_ignore_case(s, word, n)) return false;
    int index;
    if (!parse_index(s + n, &index)) return false;
    out->type = type;
    out->index = index;
    return true;
}

static ct_status parse_error(const char *text) {
    return ct__error(CT_ERR_INVALID_ARG,
                     "ct_device_parse: cannot parse device %s%s%s; expected one of \"cpu\", "
                     "\"cpu:N\", \"cuda\", \"cuda:N\", \"gpu:N\", \"/gpu:N\", "
                     "\"/device:GPU:N\", \"/cpu:0\" or \"auto\" (N below %d)",
                     text ? "\"" : "", text ? text : "NULL", text ? "\"" : "",
                     CT_MAX_LOGICAL_DEVICES);
}

ct_status ct_device_parse(const char *text, ct_device *out) {
    if (!out) return ct__error(CT_ERR_INVALID_ARG, "ct_device_parse: out must not be NULL");
    if (!text) return parse_error(text);
    const char *s = text;
    if (equals_ignore_case(s, "auto", 5)) {
        ct_device_type order[CT__DEVICE_TYPES];
        int n = ct_device_types(order, CT__DEVICE_TYPES);
        for (int i = 0; i < n; i++)
            if (ct__physical_device_count(order[i]) > 0) {
                *out = (ct_device){order[i], 0};
                return CT_OK;
            }
        *out = CT_CPU;
        return CT_OK;
    }
    if (strlen(s) >= 8 && equals_ignore_case(s, "/device:", 8))
        s += 8;
    else if (*s == '/')
        s += 1;
    ct_device_type types[CT__DEVICE_TYPES];
    int n = ct_device_types(types, CT__DEVICE_TYPES);
    for (int i = 0; i < n; i++) {
        const char *alias = ct__device_type_alias(types[i]);
        if (parse_kind(s, ct_device_type_name(types[i]), types[i], out) ||
            (alias && parse_kind(s, alias, types[i], out)))
            return CT_OK;
    }
    return parse_error(text);
}

const char *ct_device_str(ct_device device, char *buf, size_t size) {
    if (!buf || size == 0) return buf;
    const char *kind =
        ct__device_type_known(device.type) ? ct_device_type_name(device.type) : "default";
    if (device.type == CT_DEVICE_DEFAULT)
        snprintf(buf, size, "%s", kind);
    else
        snprintf(buf, size, "%s:%d", kind, device.index);
    return buf;
}

bool ct_device_equal(ct_device a, ct_device b) { return a.type == b.type && a.index == b.index; }

/* ---- logical devices ---- */

/* Physical devices of each type, plus one (0: not asked yet). A type's devices are discovered
 * once per process, and every op's device check asks: one load instead of the registry's. */
static atomic_int physical_counts_plus_one[CT__DEVICE_TYPES];

/* The settings read from the environment on first use, CT_SOFT_PLACEMENT and
 * CT_TRANSFER_GUARD, are read when devices are first discovered (the first tensor made, on
 * any device) too, so that garbage in them is warned about once even in a program that never
 * moves data or falls back from a device. */
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static void read_settings(void) {
    (void)ct_soft_placement();
    (void)ct_get_transfer_guard();
}

static int physical_count(ct_device_type type) {
    int n = atomic_load_explicit(&physical_counts_plus_one[type], memory_order_relaxed);
    if (n > 0) return n - 1;
    pthread_once(&settings_once, read_settings);
    n = ct__physical_device_count(type);
    atomic_store_explicit(&physical_counts_plus_one[type], n + 1, memory_order_relaxed);
    return n;
}

int ct__logical_count(ct_device_type type) {
    if (!ct__device_type_known(type)) return 0;
    int n = atomic_load(&logical_counts[type]);
    if (n > 0) return n;
    n = physical_count(type);
    return n < CT_MAX_LOGICAL_DEVICES ? n : CT_MAX_LOGICAL_DEVICES;
}

int ct__physical_index(ct_device device) {
    /* Only physical device 0 can be split. */
    return ct__device_is_split(device.type) ? 0 : device.index;
}

bool ct__device_is_split(ct_device_type type) {
    return ct__device_type_known(type) && atomic_load(&logical_counts[type]) > 0;
}

/* Implemented by the memory layer: bytes live on a logical device, and the limit
 * CT_MEMORY_LIMIT gives it. */
size_t ct__pool_live_bytes(ct_device device);
size_t ct__env_memory_limit(ct_device device);

ct_status ct_configure_logical_devices(ct_device_type type, int physical_index, int n,
                                       const size_t *memory_limits) {
    if (!ct__device_type_known(type))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_configure_logical_devices: invalid device type %d; ct_device_types "
                         "lists them",
                         (int)type);
    if (n < 1 || n > CT_MAX_LOGICAL_DEVICES)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_configure_logical_devices: asked for %d logical devices; give 1 to %d",
                         n, CT_MAX_LOGICAL_DEVICES);
    if (physical_index != 0)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_configure_logical_devices: only physical device 0 can be split, "
                         "got %d",
                         physical_index);
    char reason[1024];
    if (!ct__physical_device_present(type, 0, reason, sizeof reason))
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE, "ct_configure_logical_devices: %s", reason);
    int old = ct__logical_count(type);
    for (int i = 0; i < old; i++) {
        if (ct__pool_live_bytes((ct_device){type, i}) > 0)
            return ct__error(CT_ERR_STATE,
                             "ct_configure_logical_devices: %s:%d holds tensors already; "
                             "configure logical devices before the first tensor is made there",
                             ct_device_type_name(type), i);
    }
    pthread_mutex_lock(&config_lock);
    atomic_store(&logical_counts[type], n);
    pthread_mutex_unlock(&config_lock);
    /* The configured limits (else CT_MEMORY_LIMIT's) become the pools' limits, which
     * ct_set_memory_limit can change later. The pools hold nothing now, so setting a limit
     * cannot be refused. */
    for (int i = 0; i < n; i++) {
        ct_device device = {type, i};
        size_t limit = memory_limits ? memory_limits[i] : ct__env_memory_limit(device);
        if (ct_set_memory_limit(device, limit) != CT_OK) return ct_last_status();
    }
    return CT_OK;
}

int ct_device_count(ct_device_type type) { return ct__logical_count(type); }

ct_status ct_device_check(ct_device device) {
    if (!ct__device_type_known(device.type))
        return ct__error(CT_ERR_INVALID_ARG, "invalid device type %d; ct_device_types lists them",
                         (int)device.type);
    int count = ct__logical_count(device.type);
    if (device.index >= 0 && device.index < count)
        return CT_OK; /* the common case, without formatting anything */
    char name[32], reason[1024];
    ct_device_str(device, name, sizeof name);
    if (!ct__physical_device_present(device.type, 0, reason, sizeof reason))
        return ct__error(CT_ERR_DEVICE_UNAVAILABLE,
                         "device %s is unavailable: %s; use \"cpu\", or \"auto\" to take the best "
                         "device present, or enable soft placement",
                         name, reason);
    return ct__error(CT_ERR_DEVICE_UNAVAILABLE,
                     "device %s does not exist: there %s %d %s device%s (indices 0 to %d)", name,
                     count == 1 ? "is" : "are", count, ct_device_type_name(device.type),
                     count == 1 ? "" : "s", count - 1);
}

/* ---- placement ---- */

static pthread_once_t soft_placement_once = PTHREAD_ONCE_INIT;

/* CT_SOFT_PLACEMENT, once per process (garbage warned about once), unless
 * ct_set_soft_placement came first. */
static void read_soft_placement(void) {
    const char *env = getenv("CT_SOFT_PLACEMENT");
    bool on = env && (strcmp(env, "1") == 0 || strcasecmp(env, "true") == 0);
    if (env && *env && !on && strcmp(env, "0") && strcasecmp(env, "false"))
        ct__log(CT_LOG_WARNING,
                "CT_SOFT_PLACEMENT=\"%.64s\" is not a setting; expected 1 or true, 0 or "
                "false: soft placement stays off",
                env);
    int unread = -1;
    atomic_compare_exchange_strong(&soft_placement, &unread, on ? 1 : 0);
}

bool ct_soft_placement(void) {
    pthread_once(&soft_placement_once, read_soft_placement);
    return atomic_load(&soft_placement) == 1;
}

void ct_set_soft_placement(bool enabled) { atomic_store(&soft_placement, enabled ? 1 : 0); }

/* The device to use for `requested`, applying soft placement. A fallback leaves the
 * thread's earlier error as it was, so NULL propagation still reports the first failure. */
static ct_status place(const char *op, ct_device requested, ct_device *out) {
    ct_status earlier = ct_last_status();
    char earlier_message[2048];
    snprintf(earlier_message, sizeof earlier_message, "%s", ct_last_error());
    if (ct_device_check(requested) == CT_OK) {
        *out = requested;
        return CT_OK;
    }
    if (!ct_soft_placement()) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ct_last_error());
        return ct__error(ct_last_status(), "%s: %s", op, message);
    }
    ct__log(CT_LOG_WARNING, "%s: %s; soft placement puts the work on cpu:0 instead", op,
            ct_last_error());
    if (earlier == CT_OK)
        ct_clear_error();
    else
        ct__error(earlier, "%s", earlier_message);
    *out = CT_CPU;
    return CT_OK;
}

static ct_status environment_device(const char *op, ct_device *out) {
    const char *env = getenv("CT_DEVICE");
    if (!env || !*env) return ct_device_parse("auto", out);
    if (ct_device_parse(env, out) != CT_OK) {
        char message[2048];
        snprintf(message, sizeof message, "%s", ct_last_error());
        return ct__error(CT_ERR_INVALID_ARG,
                         "%s: the environment variable CT_DEVICE=\"%s\" is not a device (%s); "
                         "fix or unset it",
                         op, env, message);
    }
    return CT_OK;
}

ct_device ct_default_device(void) {
    if (placement_depth > 0) return placement_stack[placement_depth - 1];
    ct_device device;
    if (environment_device("ct_default_device", &device) != CT_OK) return CT_CPU;
    return device;
}

ct_status ct__resolve_device(const char *op, ct_device requested, ct_device *out) {
    if (requested.type != CT_DEVICE_DEFAULT) return place(op, requested, out);
    if (placement_depth > 0) {
        *out = placement_stack[placement_depth - 1];
        return CT_OK;
    }
    ct_device device;
    if (environment_device(op, &device) != CT_OK) return ct_last_status();
    return place(op, device, out);
}

ct_status ct_device_push(ct_device device) {
    if (placement_depth == CT_PLACEMENT_STACK_DEPTH)
        return ct__error(CT_ERR_STATE,
                         "ct_device_push: placement stack full (%d deep); "
                         "pop with ct_device_pop",
                         CT_PLACEMENT_STACK_DEPTH);
    ct_device placed;
    if (device.type == CT_DEVICE_DEFAULT) {
        if (ct__resolve_device("ct_device_push", device, &placed) != CT_OK) return ct_last_status();
    } else if (place("ct_device_push", device, &placed) != CT_OK) {
        return ct_last_status();
    }
    placement_stack[placement_depth++] = placed;
    return CT_OK;
}

ct_status ct_device_push_str(const char *text) {
    ct_device device;
    if (ct_device_parse(text, &device) != CT_OK) return ct_last_status();
    return ct_device_push(device);
}

ct_status ct_device_pop(void) {
    if (placement_depth == 0)
        return ct__error(CT_ERR_STATE, "ct_device_pop: the placement stack is empty; every "
                                       "ct_device_pop needs a ct_device_push before it");
    placement_depth--;
    return CT_OK;
}
