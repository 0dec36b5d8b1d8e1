/* State dicts: an ordered name -> tensor map and an ordered key -> string metadata map, each
 * an array in insertion order plus an open-addressing hash index over it, so that building or
 * loading a dict of n entries costs O(n), not O(n^2). */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "core/error_impl.h"
#include "core/tensor_impl.h"
#include "core/utf8_impl.h"

/* Keys in insertion order, values beside them, and a hash index: slots[] holds entry index
 * + 1 (0 = empty), with at most half the slots used so probes stay short. */
typedef struct ordered_map {
    char **keys;
    void **values;
    int count, capacity;
    int *slots;
    size_t slot_count; /* a power of two, or 0 */
} ordered_map;

struct ct_state_dict {
    ordered_map tensors;  /* values: ct_tensor *, one reference each */
    ordered_map metadata; /* values: char *, owned */
};

/* FNV-1a: short keys, no adversary worth a keyed hash (a hostile file gets rejected on its
 * first duplicate, and a dict holds a few thousand names at most). */
static uint64_t hash_key(const char *key) {
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

static int map_find(const ordered_map *m, const char *key) {
    if (m->slot_count == 0) return -1;
    size_t mask = m->slot_count - 1;
    for (size_t i = (size_t)hash_key(key) & mask;; i = (i + 1) & mask) {
        int slot = m->slots[i];
        if (slot == 0) return -1;
        if (strcmp(m->keys[slot - 1], key) == 0) return slot - 1;
    }
}

static void map_place(ordered_map *m, int index) {
    size_t mask = m->slot_count - 1;
    size_t i = (size_t)hash_key(m->keys[index]) & mask;
    while (m->slots[i] != 0) i = (i + 1) & mask;
    m->slots[i] = index + 1;
}

/* Room for one more entry: grows the arrays and rebuilds the index as needed. */
static bool map_reserve(ordered_map *m) {
    if (m->count == INT_MAX / 4) return false;
    if (m->count == m->capacity) {
        int capacity = m->capacity ? m->capacity * 2 : 8;
        char **keys = ct__realloc(m->keys, (size_t)capacity * sizeof *keys);
        if (!keys) return false;
        m->keys = keys;
        void **values = ct__realloc(m->values, (size_t)capacity * sizeof *values);
        if (!values) return false;
        m->values = values;
        m->capacity = capacity;
    }
    if ((size_t)(m->count + 1) * 2 <= m->slot_count) return true;
    size_t slot_count = m->slot_count ? m->slot_count * 2 : 16;
    int *slots = ct__calloc(slot_count, sizeof *slots);
    if (!slots) return false;
    ct__free_mem(m->slots);
    m->slots = slots;
    m->slot_count = slot_count;
    for (int i = 0; i < m->count; i++) map_place(m, i);
    return true;
}

static char *copy_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = ct__malloc(n);
    if (copy) memcpy(copy, s, n);
    return copy;
}

/* Append key (copied) with value; false when out of memory (nothing changed). */
static bool map_append(ordered_map *m, const char *key, void *value) {
    char *copy = copy_string(key);
    if (!copy || !map_reserve(m)) {
        ct__free_mem(copy);
        return false;
    }
    m->keys[m->count] = copy;
    m->values[m->count] = value;
    map_place(m, m->count++);
    return true;
}

static void map_free(ordered_map *m) {
    for (int i = 0; i < m->count; i++) ct__free_mem(m->keys[i]);
    ct__free_mem(m->keys);
    ct__free_mem(m->values);
    ct__free_mem(m->slots);
}

ct_state_dict *ct_state_dict_new(void) {
    ct_state_dict *sd = ct__calloc(1, sizeof *sd);
    if (!sd) return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_state_dict_new: out of host memory");
    return sd;
}

void ct_state_dict_free(ct_state_dict *sd) {
    if (!sd) return;
    for (int i = 0; i < sd->tensors.count; i++) ct__tensor_drop(sd->tensors.values[i]);
    for (int i = 0; i < sd->metadata.count; i++) ct__free_mem(sd->metadata.values[i]);
    map_free(&sd->tensors);
    map_free(&sd->metadata);
    ct__free_mem(sd);
}

ct_status ct_state_dict_set(ct_state_dict *sd, const char *name, const ct_tensor *t) {
    if (!sd || !name)
        return ct__error(CT_ERR_INVALID_ARG, "ct_state_dict_set: %s is NULL",
                         sd ? "name" : "the state dict");
    if (!t) {
        if (ct_last_status() == CT_OK)
            ct__error(CT_ERR_INVALID_ARG, "ct_state_dict_set: the tensor for \"%s\" is NULL",
                      ct__utf8_valid(name) ? name : "(not UTF-8)");
        return ct_last_status();
    }
    if (!ct__utf8_valid(name))
        return ct__error(CT_ERR_INVALID_ARG, "ct_state_dict_set: the name is not valid UTF-8; "
                                             "safetensors names are UTF-8 strings");
    if (strcmp(name, "__metadata__") == 0)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_state_dict_set: \"__metadata__\" is reserved by the safetensors "
                         "format; use ct_state_dict_set_metadata or another name");
    ct_tensor *ref = (ct_tensor *)t;
    int i = map_find(&sd->tensors, name);
    if (i >= 0) {
        ct_retain(ref);
        ct__tensor_drop(sd->tensors.values[i]);
        sd->tensors.values[i] = ref;
        return CT_OK;
    }
    if (!map_append(&sd->tensors, name, ref))
        return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_state_dict_set: out of host memory");
    ct_retain(ref);
    return CT_OK;
}

ct_tensor *ct_state_dict_get(const ct_state_dict *sd, const char *name) {
    if (!sd || !name)
        return ct__fail(CT_ERR_INVALID_ARG, "ct_state_dict_get: %s is NULL",
                        sd ? "name" : "the state dict");
    int i = map_find(&sd->tensors, name);
    if (i < 0)
        return ct__fail(CT_ERR_INVALID_ARG,
                        "ct_state_dict_get: no tensor named \"%s\" among the %d in the state "
                        "dict; list them with ct_state_dict_name_at",
                        name, sd->tensors.count);
    return sd->tensors.values[i];
}

int ct_state_dict_size(const ct_state_dict *sd) { return sd ? sd->tensors.count : 0; }

/* Checks an entry index; false with CT_ERR_INVALID_ARG naming the function. */
static bool check_index(const char *fn, const ct_state_dict *sd, const ordered_map *m, int i) {
    if (!sd) {
        ct__error(CT_ERR_INVALID_ARG, "%s: the state dict is NULL", fn);
        return false;
    }
    if (i < 0 || i >= m->count) {
        ct__error(CT_ERR_INVALID_ARG, "%s: index %d is out of range [0, %d)", fn, i, m->count);
        return false;
    }
    return true;
}

const char *ct_state_dict_name_at(const ct_state_dict *sd, int i) {
    if (!check_index("ct_state_dict_name_at", sd, sd ? &sd->tensors : NULL, i)) return NULL;
    return sd->tensors.keys[i];
}

ct_tensor *ct_state_dict_tensor_at(const ct_state_dict *sd, int i) {
    if (!check_index("ct_state_dict_tensor_at", sd, sd ? &sd->tensors : NULL, i)) return NULL;
    return sd->tensors.values[i];
}

ct_status ct_state_dict_set_metadata(ct_state_dict *sd, const char *key, const char *value) {
    if (!sd || !key || !value)
        return ct__error(CT_ERR_INVALID_ARG, "ct_state_dict_set_metadata: %s is NULL",
                         !sd    ? "the state dict"
                         : !key ? "key"
                                : "value");
    if (!ct__utf8_valid(key) || !ct__utf8_valid(value))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_state_dict_set_metadata: the %s is not valid UTF-8; safetensors "
                         "metadata are UTF-8 strings",
                         ct__utf8_valid(key) ? "value" : "key");
    char *copy = copy_string(value);
    if (!copy) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_state_dict_set_metadata: out of memory");
    int i = map_find(&sd->metadata, key);
    if (i >= 0) {
        ct__free_mem(sd->metadata.values[i]);
        sd->metadata.values[i] = copy;
        return CT_OK;
    }
    if (!map_append(&sd->metadata, key, copy)) {
        ct__free_mem(copy);
        return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_state_dict_set_metadata: out of memory");
    }
    return CT_OK;
}

const char *ct_state_dict_get_metadata(const ct_state_dict *sd, const char *key) {
    if (!sd || !key) return NULL;
    int i = map_find(&sd->metadata, key);
    return i < 0 ? NULL : sd->metadata.values[i];
}

int ct_state_dict_metadata_size(const ct_state_dict *sd) { return sd ? sd->metadata.count : 0; }

const char *ct_state_dict_metadata_key_at(const ct_state_dict *sd, int i) {
    if (!check_index("ct_state_dict_metadata_key_at", sd, sd ? &sd->metadata : NULL, i))
        return NULL;
    return sd->metadata.keys[i];
}
