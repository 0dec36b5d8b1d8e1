/* Helpers for the safetensors tests: a private temporary directory, paths in it, and whole
 * files written and read as bytes (to build and damage files by hand). */
#ifndef CT_SAFETENSORS_TEST_H
#define CT_SAFETENSORS_TEST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A new empty directory under $TMPDIR or /tmp, in buf (at least 256 bytes); false on failure. */
static inline bool st_make_dir(char *buf) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, 256, "%s/ct_safetensors_XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(buf) != NULL;
}

/* dir/name in a static buffer per slot (0..3), so a test can hold a few paths at once. */
static inline const char *st_path(const char *dir, const char *name, int slot) {
    static char paths[4][512];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", dir, name);
    return paths[slot];
}

/* Number of entries in dir other than . and .. (leftover temporary files show up here). */
static inline int st_count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

/* Remove dir and the files in it. */
static inline void st_remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char path[768];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static inline bool st_write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* The whole file (malloc'd, free()) and its size; NULL on failure. */
static inline unsigned char *st_read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        data = size >= 0 ? malloc((size_t)size + 1) : NULL;
        if (data &&
            (fseek(f, 0, SEEK_SET) != 0 || fread(data, 1, (size_t)size, f) != (size_t)size)) {
            free(data);
            data = NULL;
        }
        *n = data ? (size_t)size : 0;
    }
    fclose(f);
    return data;
}

/* A safetensors file made of a header size, the header text json and buffer_size zero bytes. */
static inline bool st_write_file(const char *path, const char *json, size_t json_size,
                                 size_t buffer_size) {
    size_t n = 8 + json_size + buffer_size;
    unsigned char *data = calloc(1, n);
    if (!data) return false;
    for (int i = 0; i < 8; i++) data[i] = (unsigned char)((uint64_t)json_size >> (8 * i));
    memcpy(data + 8, json, json_size);
    bool ok = st_write_bytes(path, data, n);
    free(data);
    return ok;
}

#endif
