/* The safetensors header parser: a strict JSON parser for exactly the header's schema, an
 * object of tensor entries ({"dtype": string, "shape": [uint...], "data_offsets": [uint,
 * uint]}) and one optional "__metadata__" object of strings. Being schema-directed it never
 * recurses and holds no generic values, so deep nesting or an unexpected value type ends in a
 * CT_ERR_FORMAT at the byte where it starts. Input is hostile: every read is bounded by the
 * header size, every string is checked UTF-8 (escapes included), every integer for overflow,
 * and allocations are sized by the (already bounded) header, never by a number in it. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype_impl.h"
#include "core/error_impl.h"
#include "core/utf8_impl.h"
#include "data/safetensors_impl.h"

typedef struct parser {
    const char *file;
    const unsigned char *s;
    size_t n, pos;
} parser;

/* Record a CT_ERR_FORMAT about header offset pos; returns the status. */
static ct_status fail_at(const parser *p, size_t pos, const char *fmt, ...) CT_PRINTF_(3, 4);
static ct_status fail_at(const parser *p, size_t pos, const char *fmt, ...) {
    char what[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ct__error(CT_ERR_FORMAT, "ct_safetensors_load: %s: %s, at byte %zu (in the JSON header)",
                     p->file, what, pos + 8);
}

static ct_status out_of_memory(const parser *p) {
    return ct__error(CT_ERR_OUT_OF_MEMORY,
                     "ct_safetensors_load: %s: out of host memory for the "
                     "header",
                     p->file);
}

/* The next non-whitespace byte (not consumed), or -1 at the end. */
static int peek(parser *p) {
    while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
                             p->s[p->pos] == '\r'))
        p->pos++;
    return p->pos < p->n ? p->s[p->pos] : -1;
}

/* What the byte c is, for messages. */
static const char *describe(int c, char buf[24]) {
    if (c < 0) return "the end of the header";
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, 24, "'%c'", c);
    else
        snprintf(buf, 24, "byte 0x%02x", (unsigned)c);
    return buf;
}

static ct_status expect(parser *p, char c, const char *context) {
    int got = peek(p);
    char buf[24];
    if (got != c)
        return fail_at(p, p->pos, "expected '%c' %s, found %s", c, context, describe(got, buf));
    p->pos++;
    return CT_OK;
}

/* After an item of a list: true at the closing byte (consumed), false at ',' (consumed). */
static ct_status next_item(parser *p, char close, const char *context, bool *done) {
    int c = peek(p);
    char buf[24];
    if (c != ',' && c != close)
        return fail_at(p, p->pos, "expected ',' or '%c' %s, found %s", close, context,
                       describe(c, buf));
    p->pos++;
    *done = c == close;
    return CT_OK;
}

static int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The 4 hex digits of a \u escape whose 'u' is at pos - 1, before end. */
static ct_status hex4(const parser *p, size_t pos, size_t end, unsigned *out) {
    if (pos + 4 > end) return fail_at(p, pos, "truncated \\u escape in a string");
    unsigned v = 0;
    for (size_t i = pos; i < pos + 4; i++) {
        int d = hex_value(p->s[i]);
        if (d < 0) return fail_at(p, i, "invalid hex digit in a \\u escape");
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return CT_OK;
}

static size_t encode_utf8(unsigned cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A \u escape at p->pos (the backslash), with a surrogate pair taken whole. */
static ct_status decode_unicode(parser *p, size_t end, char *buf, size_t *len) {
    size_t at = p->pos;
    unsigned cp = 0;
    if (hex4(p, at + 2, end, &cp) != CT_OK) return ct_last_status();
    p->pos = at + 6;
    if (cp >= 0xdc00 && cp <= 0xdfff) return fail_at(p, at, "unpaired low surrogate \\u%04x", cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        unsigned low = 0;
        if (p->pos + 2 > end || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
            return fail_at(p, at, "unpaired high surrogate \\u%04x", cp);
        if (hex4(p, p->pos + 2, end, &low) != CT_OK) return ct_last_status();
        if (low < 0xdc00 || low > 0xdfff)
            return fail_at(p, at, "high surrogate \\u%04x followed by \\u%04x", cp, low);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        p->pos += 6;
    }
    if (cp == 0) return fail_at(p, at, "\\u0000 in a string (names and metadata are C strings)");
    *len += encode_utf8(cp, buf + *len);
    return CT_OK;
}

/* An escape at p->pos (the backslash; a byte follows before end, see parse_string). */
static ct_status decode_escape(parser *p, size_t end, char *buf, size_t *len) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    unsigned char c = p->s[p->pos + 1];
    if (c == 'u') return decode_unicode(p, end, buf, len);
    const char *hit = c ? strchr(from, c) : NULL;
    char cbuf[24];
    if (!hit) return fail_at(p, p->pos, "invalid escape '\\' then %s", describe(c, cbuf));
    buf[(*len)++] = to[hit - from];
    p->pos += 2;
    return CT_OK;
}

/* Decode the string body [p->pos, end) into buf. */
static ct_status decode_string(parser *p, size_t end, char *buf, size_t *len) {
    while (p->pos < end) {
        unsigned char c = p->s[p->pos];
        if (c == '\\') {
            if (decode_escape(p, end, buf, len) != CT_OK) return ct_last_status();
        } else if (c < 0x20) {
            return fail_at(p, p->pos, "raw control character 0x%02x in a string", c);
        } else {
            size_t k = ct__utf8_sequence(p->s + p->pos, end - p->pos);
            if (k == 0) return fail_at(p, p->pos, "invalid UTF-8 in a string");
            memcpy(buf + *len, p->s + p->pos, k);
            *len += k;
            p->pos += k;
        }
    }
    return CT_OK;
}

/* A string (what says which, for messages) as a new NUL-terminated buffer in *out. */
static ct_status parse_string(parser *p, const char *what, char **out) {
    *out = NULL;
    char cbuf[24];
    int c = peek(p);
    if (c != '"')
        return fail_at(p, p->pos, "expected %s (a string), found %s", what, describe(c, cbuf));
    size_t start = p->pos++;
    /* Find the closing quote first (a backslash always takes the byte after it), so the
     * buffer is sized by the header, never by what the string claims. */
    size_t end = p->pos;
    while (end < p->n && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    if (end >= p->n) return fail_at(p, start, "unterminated string (%s)", what);
    char *buf = ct__malloc(end - p->pos + 1);
    if (!buf) return out_of_memory(p);
    size_t len = 0;
    if (decode_string(p, end, buf, &len) != CT_OK) {
        ct__free_mem(buf);
        return ct_last_status();
    }
    buf[len] = '\0';
    p->pos = end + 1;
    *out = buf;
    return CT_OK;
}

/* A non-negative integer that fits in 64 bits (JSON syntax: no leading zeros, no fraction). */
static ct_status parse_uint(parser *p, const char *what, uint64_t *out) {
    char cbuf[24];
    int c = peek(p);
    if (c == '-') return fail_at(p, p->pos, "negative number in %s", what);
    if (c < '0' || c > '9')
        return fail_at(p, p->pos, "expected a non-negative integer in %s, found %s", what,
                       describe(c, cbuf));
    size_t at = p->pos;
    uint64_t v = 0;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        unsigned d = p->s[p->pos] - '0';
        if (v > (UINT64_MAX - d) / 10)
            return fail_at(p, at, "number in %s does not fit in 64 bits", what);
        v = v * 10 + d;
        p->pos++;
    }
    if (p->s[at] == '0' && p->pos - at > 1) return fail_at(p, at, "leading zero in %s", what);
    if (p->pos < p->n && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
        return fail_at(p, at, "%s must hold integers, found a fraction or exponent", what);
    *out = v;
    return CT_OK;
}

/* An array of at most max integers; `why` (a clause after the count) says where max comes
 * from, in the message for a longer one. */
static ct_status parse_uint_array(parser *p, const char *what, uint64_t *values, int max,
                                  const char *why, int *count) {
    if (expect(p, '[', what) != CT_OK) return ct_last_status();
    *count = 0;
    if (peek(p) == ']') {
        p->pos++;
        return CT_OK;
    }
    char context[32];
    snprintf(context, sizeof context, "in %s", what);
    for (bool done = false; !done;) {
        if (*count == max)
            return fail_at(p, p->pos, "%s has more than %d entries%s", what, max, why);
        if (parse_uint(p, what, &values[(*count)++]) != CT_OK) return ct_last_status();
        if (next_item(p, ']', context, &done) != CT_OK) return ct_last_status();
    }
    return CT_OK;
}

static ct_status parse_dtype(parser *p, ct__st_entry *e) {
    size_t at = p->pos;
    char *name;
    if (parse_string(p, "a dtype", &name) != CT_OK) return ct_last_status();
    for (int d = 0; d < CT_DTYPE_COUNT; d++)
        if (ct__dtype_safetensors((ct_dtype)d) &&
            strcmp(name, ct__dtype_safetensors((ct_dtype)d)) == 0) {
            e->dtype = (ct_dtype)d;
            ct__free_mem(name);
            return CT_OK;
        }
    fail_at(p, at,
            "tensor \"%.64s\" has dtype \"%.16s\", which ctensor does not support (F64, "
            "F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, C64)",
            e->name, name);
    ct__free_mem(name);
    return CT_ERR_FORMAT;
}

static ct_status parse_shape(parser *p, ct__st_entry *e) {
    uint64_t dims[CT_MAX_DIMS];
    size_t at = p->pos;
    if (parse_uint_array(p, "shape", dims, CT_MAX_DIMS,
                         " (ctensor supports at most that many dimensions)", &e->ndim) != CT_OK)
        return ct_last_status();
    for (int i = 0; i < e->ndim; i++) {
        if (dims[i] > (uint64_t)INT64_MAX)
            return fail_at(p, at, "tensor \"%.64s\" has dimension %d of size %llu, above 2^63 - 1",
                           e->name, i, (unsigned long long)dims[i]);
        e->shape[i] = (int64_t)dims[i];
    }
    return CT_OK;
}

static ct_status parse_offsets(parser *p, ct__st_entry *e) {
    uint64_t offsets[2];
    int count;
    size_t at = p->pos;
    if (parse_uint_array(p, "data_offsets", offsets, 2, "", &count) != CT_OK)
        return ct_last_status();
    if (count != 2)
        return fail_at(p, at, "tensor \"%.64s\" has %d data_offsets; expected [begin, end]",
                       e->name, count);
    e->begin = offsets[0];
    e->end = offsets[1];
    return CT_OK;
}

/* One field "key": value of a tensor entry; seen[] marks dtype, shape, data_offsets. */
static ct_status parse_field(parser *p, ct__st_entry *e, bool seen[3]) {
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    size_t at = p->pos;
    char *key;
    if (parse_string(p, "a field name", &key) != CT_OK) return ct_last_status();
    int field = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(key, fields[i]) == 0) field = i;
    if (field < 0) {
        fail_at(p, at,
                "unknown field \"%.32s\" in tensor \"%.64s\" (expected dtype, shape, "
                "data_offsets)",
                key, e->name);
        ct__free_mem(key);
        return CT_ERR_FORMAT;
    }
    ct__free_mem(key);
    if (seen[field])
        return fail_at(p, at, "duplicate field \"%s\" in tensor \"%.64s\"", fields[field], e->name);
    seen[field] = true;
    if (expect(p, ':', "after a field name") != CT_OK) return ct_last_status();
    if (field == 0) return parse_dtype(p, e);
    if (field == 1) return parse_shape(p, e);
    return parse_offsets(p, e);
}

static ct_status parse_tensor_info(parser *p, ct__st_entry *e) {
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    if (expect(p, '{', "to open a tensor entry") != CT_OK) return ct_last_status();
    bool seen[3] = {false, false, false};
    if (peek(p) == '}')
        p->pos++;
    else
        for (bool done = false; !done;) {
            if (parse_field(p, e, seen) != CT_OK) return ct_last_status();
            if (next_item(p, '}', "in a tensor entry", &done) != CT_OK) return ct_last_status();
        }
    for (int i = 0; i < 3; i++)
        if (!seen[i])
            return fail_at(p, e->at, "tensor \"%.64s\" has no \"%s\" field", e->name, fields[i]);
    return CT_OK;
}

/* Make room for one more element in an array of elem bytes. */
static bool grow(void **items, size_t *capacity, size_t count, size_t elem) {
    if (count < *capacity) return true;
    size_t next = *capacity ? *capacity * 2 : 16;
    void *grown = ct__realloc(*items, next * elem);
    if (!grown) return false;
    *items = grown;
    *capacity = next;
    return true;
}

static ct_status parse_metadata_pair(parser *p, ct__st_header *h) {
    size_t at = p->pos;
    char *key, *value;
    if (parse_string(p, "a metadata key", &key) != CT_OK) return ct_last_status();
    if (expect(p, ':', "after a metadata key") != CT_OK) {
        ct__free_mem(key);
        return CT_ERR_FORMAT;
    }
    if (peek(p) != '"') {
        fail_at(p, p->pos, "metadata value of \"%.64s\" must be a string", key);
        ct__free_mem(key);
        return CT_ERR_FORMAT;
    }
    if (parse_string(p, "a metadata value", &value) != CT_OK) {
        ct__free_mem(key);
        return ct_last_status();
    }
    if (!grow((void **)&h->meta, &h->meta_capacity, h->meta_count, sizeof *h->meta)) {
        ct__free_mem(key);
        ct__free_mem(value);
        return out_of_memory(p);
    }
    h->meta[h->meta_count++] = (ct__st_pair){key, value, at};
    return CT_OK;
}

static ct_status parse_metadata(parser *p, ct__st_header *h) {
    if (expect(p, '{', "to open \"__metadata__\" (an object of strings)") != CT_OK)
        return ct_last_status();
    if (peek(p) == '}') {
        p->pos++;
        return CT_OK;
    }
    for (bool done = false; !done;) {
        if (parse_metadata_pair(p, h) != CT_OK) return ct_last_status();
        if (next_item(p, '}', "in \"__metadata__\"", &done) != CT_OK) return ct_last_status();
    }
    return CT_OK;
}

/* One top-level "name": {...} or "__metadata__": {...}. */
static ct_status parse_member(parser *p, ct__st_header *h, bool *seen_metadata) {
    size_t at = p->pos;
    char *name;
    if (parse_string(p, "a tensor name", &name) != CT_OK) return ct_last_status();
    if (strcmp(name, "__metadata__") == 0) {
        ct__free_mem(name);
        if (*seen_metadata) return fail_at(p, at, "duplicate \"__metadata__\"");
        *seen_metadata = true;
        if (expect(p, ':', "after \"__metadata__\"") != CT_OK) return ct_last_status();
        return parse_metadata(p, h);
    }
    if (!grow((void **)&h->entries, &h->capacity, h->count, sizeof *h->entries)) {
        ct__free_mem(name);
        return out_of_memory(p);
    }
    ct__st_entry *e = &h->entries[h->count++];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->at = at;
    if (expect(p, ':', "after a tensor name") != CT_OK) return ct_last_status();
    return parse_tensor_info(p, e);
}

/* qsort comparator over pointers to items that start with their name. */
static int compare_names(const void *a, const void *b) {
    const char *item_a = *(const char *const *)a, *item_b = *(const char *const *)b;
    return strcmp(*(char *const *)item_a, *(char *const *)item_b);
}

/* Fails on the first name that occurs twice among count items of stride bytes at base, each
 * with its name (a char *) first and its header offset (a size_t) at at_offset. Sorts pointers
 * to the items, so O(n log n). */
static ct_status check_unique(const parser *p, const void *base, size_t count, size_t stride,
                              size_t at_offset, const char *what) {
    if (count < 2) return CT_OK;
    const char **sorted = ct__malloc(count * sizeof *sorted);
    if (!sorted) return out_of_memory(p);
    for (size_t i = 0; i < count; i++) sorted[i] = (const char *)base + i * stride;
    qsort(sorted, count, sizeof *sorted, compare_names);
    ct_status status = CT_OK;
    for (size_t i = 1; i < count && status == CT_OK; i++) {
        const char *a = sorted[i - 1], *b = sorted[i];
        if (strcmp(*(char *const *)a, *(char *const *)b) != 0) continue;
        size_t at_a, at_b; /* report the later of the two, where a reader would look */
        memcpy(&at_a, a + at_offset, sizeof at_a);
        memcpy(&at_b, b + at_offset, sizeof at_b);
        status = fail_at(p, at_a > at_b ? at_a : at_b, "duplicate %s \"%.64s\"", what,
                         *(char *const *)b);
    }
    ct__free_mem(sorted);
    return status;
}

ct_status ct__st_parse_header(const char *file, const char *json, size_t size, ct__st_header *out) {
    parser p = {file, (const unsigned char *)json, size, 0};
    bool seen_metadata = false;
    if (expect(&p, '{', "at the start of the header") != CT_OK) return ct_last_status();
    if (peek(&p) == '}')
        p.pos++;
    else
        for (bool done = false; !done;) {
            if (parse_member(&p, out, &seen_metadata) != CT_OK) return ct_last_status();
            if (next_item(&p, '}', "in the header object", &done) != CT_OK) return ct_last_status();
        }
    char cbuf[24];
    if (peek(&p) >= 0)
        return fail_at(&p, p.pos, "trailing data after the header's JSON object: %s",
                       describe(p.s[p.pos], cbuf));
    if (check_unique(&p, out->entries, out->count, sizeof *out->entries, offsetof(ct__st_entry, at),
                     "tensor name") != CT_OK)
        return ct_last_status();
    return check_unique(&p, out->meta, out->meta_count, sizeof *out->meta,
                        offsetof(ct__st_pair, at), "metadata key");
}

void ct__st_header_free(ct__st_header *h) {
    for (size_t i = 0; i < h->count; i++) ct__free_mem(h->entries[i].name);
    for (size_t i = 0; i < h->meta_count; i++) {
        ct__free_mem(h->meta[i].key);
        ct__free_mem(h->meta[i].value);
    }
    ct__free_mem(h->entries);
    ct__free_mem(h->meta);
    memset(h, 0, sizeof *h);
}
