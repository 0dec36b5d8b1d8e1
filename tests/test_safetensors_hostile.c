/* Hostile safetensors files: each damaged or malicious file must end in CT_ERR_FORMAT with a
 * message that names the file and the problem, never a crash, a leak or a huge allocation.
 * A table of hand-made headers, truncation at every byte, bad header sizes, and a fuzz loop of
 * random damage to a valid file (run under AddressSanitizer by `make sanitize`). Valid but
 * unusual headers (escapes, whitespace, empty dicts) must load. */
#include <stdint.h>

#include "ct_ref.h"
#include "safetensors_test.h"

/* The last call failed with CT_ERR_FORMAT, naming path and needle; clears the error. */
static bool format_error_names(const char *path, const char *needle) {
    bool ok = ct_last_status() == CT_ERR_FORMAT && strstr(ct_last_error(), path) &&
              strstr(ct_last_error(), needle);
    if (!ok)
        printf("    expected CT_ERR_FORMAT naming \"%s\", got %s: %s\n", needle,
               ct_status_name(ct_last_status()), ct_last_error());
    ct_clear_error();
    return ok;
}

typedef struct hostile_case {
    const char *json;
    size_t buffer; /* bytes after the header */
    const char *needle;
} hostile_case;

#define F32x2(offsets) "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" offsets "}"
#define ONE "{\"a\":" F32x2("[0,8]")

static const hostile_case cases[] = {
    /* offsets and sizes */
    {"{\"a\":" F32x2("[0,100]") "}", 8, "[0, 100] past the end of the 8-byte buffer"},
    {"{\"a\":" F32x2("[8,0]") "}", 8, "reversed data_offsets [8, 0]"},
    {"{\"a\":" F32x2("[0,8]") ",\"b\":" F32x2("[4,12]") "}", 12, "overlap"},
    {"{\"a\":" F32x2("[0,8]") ",\"b\":" F32x2("[0,8]") "}", 8, "overlap"},
    {"{\"a\":" F32x2("[0,8]") ",\"b\":" F32x2("[12,20]") "}", 20, "belong to no tensor"},
    {"{\"a\":" F32x2("[4,12]") "}", 12, "bytes [0, 4) of the buffer belong to no tensor"},
    {ONE "}", 12, "4 bytes of trailing data after the last tensor"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "hold 8 bytes"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,4294967296],"
     "\"data_offsets\":[0,0]}}",
     0, "more elements than fit in 64 bits"},
    {"{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,0]}}", 0,
     "larger than 2^64 bytes"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"
     "\"data_offsets\":[0,4]}}",
     4, "shape has more than 16 entries (ctensor supports at most that many dimensions)"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,4]}}", 4,
     "above 2^63 - 1"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "has 1 data_offsets"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
     "data_offsets has more than 2 entries"},
    /* dtypes */
    {"{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "dtype \"F8_E4M3\", which ctensor does not support"},
    {"{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "does not support"},
    {"{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "expected a dtype"},
    /* JSON syntax */
    {"", 0, "expected '{' at the start of the header, found the end of the header"},
    {"[]", 0, "expected '{' at the start"},
    {"{\"a", 0, "unterminated string (a tensor name)"},
    {"{\"a\\\"}", 0, "unterminated string"},
    {ONE, 8, "expected ',' or '}' in the header object, found the end"},
    {"{\"a\" " F32x2("[0,8]") "}", 8, "expected ':' after a tensor name"},
    {ONE ",}", 8, "expected a tensor name (a string), found '}'"},
    {"{\"a\":" F32x2("[0,8]") "} x", 8, "trailing data after the header's JSON object: 'x'"},
    {"{}{}", 0, "trailing data"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,],\"data_offsets\":[0,8]}}", 8,
     "expected a non-negative integer in shape, found ']'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2 2],\"data_offsets\":[0,8]}}", 8,
     "expected ',' or ']' in shape, found '2'"},
    {"{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 0,
     "expected '{' to open a tensor entry, found '['"},
    {"{\"a\":{\"dtype\":{\"dtype\":{\"dtype\":{\"dtype\":{}}}}}}", 0, "expected a dtype"},
    {"{\"__metadata__\":{\"k\":{\"k\":{\"k\":{\"k\":\"v\"}}}}}", 0,
     "metadata value of \"k\" must be a string"},
    {"{\"__metadata__\":[\"k\",\"v\"]}", 0, "expected '{' to open \"__metadata__\""},
    /* fields */
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 0, "tensor \"a\" has no \"data_offsets\" field"},
    {"{\"a\":{}}", 0, "tensor \"a\" has no \"dtype\" field"},
    {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "duplicate field \"dtype\""},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", 4,
     "unknown field \"extra\""},
    /* numbers */
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
     "negative number in shape"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4,
     "negative number in data_offsets"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}}", 1,
     "does not fit in 64 bits"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999999]}}", 1,
     "does not fit in 64 bits"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}", 1,
     "fraction or exponent"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1e0],\"data_offsets\":[0,1]}}", 1,
     "fraction or exponent"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[01],\"data_offsets\":[0,1]}}", 1, "leading zero"},
    {"{\"a\":{\"dtype\":\"U8\",\"shape\":[\"1\"],\"data_offsets\":[0,1]}}", 1,
     "expected a non-negative integer in shape, found '\"'"},
    /* duplicates */
    {"{\"a\":" F32x2("[0,8]") ",\"a\":" F32x2("[8,16]") "}", 16, "duplicate tensor name \"a\""},
    {"{\"a\":" F32x2("[0,8]") ",\"\\u0061\":" F32x2("[8,16]") "}", 16,
     "duplicate tensor name \"a\""},
    {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "duplicate metadata key \"k\""},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate \"__metadata__\""},
    /* strings: escapes and UTF-8 */
    {"{\"\xff\":" F32x2("[0,8]") "}", 8, "invalid UTF-8 in a string"},
    {"{\"\xc0\x80\":" F32x2("[0,8]") "}", 8, "invalid UTF-8"},
    {"{\"\xed\xa0\x80\":" F32x2("[0,8]") "}", 8, "invalid UTF-8"},
    {"{\"\xe2\x82\":" F32x2("[0,8]") "}", 8, "invalid UTF-8"},
    {"{\"\xf4\x90\x80\x80\":" F32x2("[0,8]") "}", 8, "invalid UTF-8"},
    {"{\"__metadata__\":{\"k\":\"v\x80\"}}", 0, "invalid UTF-8"},
    {"{\"\\ud800\":" F32x2("[0,8]") "}", 8, "unpaired high surrogate \\ud800"},
    {"{\"\\udc00\":" F32x2("[0,8]") "}", 8, "unpaired low surrogate \\udc00"},
    {"{\"\\ud800\\u0041\":" F32x2("[0,8]") "}", 8, "followed by \\u0041"},
    {"{\"\\u00\":" F32x2("[0,8]") "}", 8, "truncated \\u escape"},
    {"{\"\\u12G4\":" F32x2("[0,8]") "}", 8, "invalid hex digit"},
    {"{\"\\x41\":" F32x2("[0,8]") "}", 8, "invalid escape '\\' then 'x'"},
    {"{\"a\\u0000b\":" F32x2("[0,8]") "}", 8, "\\u0000 in a string"},
    {"{\"a\nb\":" F32x2("[0,8]") "}", 8, "raw control character 0x0a"},
};

TEST(test_safetensors_hostile_table) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "hostile.safetensors", 0);
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t size = strlen(cases[i].json);
        if (!st_write_file(path, cases[i].json, size, cases[i].buffer)) failures++;
        ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
        if (sd || !format_error_names(path, cases[i].needle)) {
            printf("    case %zu: %s\n", i, cases[i].json);
            failures++;
        }
        ct_state_dict_free(sd);
    }
    st_remove_dir(dir);
    CHECK(failures == 0);
}

/* NUL padding where the format pads with spaces. */
TEST(test_safetensors_hostile_nul_padding) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "nul.safetensors", 0);
    bool written = st_write_file(path, "{}\0\0\0\0\0\0", 8, 0);
    ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
    bool ok = !sd && format_error_names(path, "trailing data after the header's JSON object: "
                                              "byte 0x00, at byte 10");
    ct_state_dict_free(sd);
    st_remove_dir(dir);
    CHECK(written && ok);
}

/* The header size: too small a file, above the limit, past the end of the file. */
TEST(test_safetensors_hostile_header_size) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "size.safetensors", 0);
    static const struct {
        unsigned char bytes[16];
        size_t n;
        const char *needle;
    } files[] = {
        {{0}, 0, "the file is 0 bytes; a safetensors file starts with an 8-byte header size"},
        {{2, 0, 0}, 3, "the file is 3 bytes"},
        {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'}, 10, "above the 100 MB limit"},
        {{0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'}, 10, "100000001 (bytes 0-7) is above"},
        {{0, 0, 0, 0, 0, 0, 0, 0x80, '{', '}'}, 10, "above the 100 MB limit"},
        {{3, 0, 0, 0, 0, 0, 0, 0, '{', '}'}, 10, "header size 3 (bytes 0-7) runs past the end"},
        {{16, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}, 16, "runs past"},
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (!st_write_bytes(path, files[i].bytes, files[i].n)) failures++;
        ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
        if (sd || !format_error_names(path, files[i].needle)) failures++;
        ct_state_dict_free(sd);
    }
    st_remove_dir(dir);
    CHECK(failures == 0);
}

/* Valid if unusual: whitespace between tokens, escapes that spell the same names, surrogate
 * pairs, empty metadata, zero-size tensors anywhere, a header of just "{}". */
TEST(test_safetensors_unusual_but_valid_headers) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "valid.safetensors", 0);
    const char *json = " \t\r\n{ \"\\u00e9\\ud83d\\ude00\\n\\/\" : { \"shape\" : [ 2 ] , "
                       "\"data_offsets\" : [ 0 , 8 ] , \"dtype\" : \"I32\" } , \"__metadata__\" : "
                       "{ } , \"z\" : {\"dtype\":\"BOOL\",\"shape\":[0],\"data_offsets\":[0,0]},"
                       "\"e\":{\"dtype\":\"F64\",\"shape\":[3,0],\"data_offsets\":[8,8]}}   ";
    bool written = st_write_file(path, json, strlen(json), 8);
    ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
    bool ok = sd && ct_state_dict_size(sd) == 3 && ct_state_dict_metadata_size(sd) == 0 &&
              !strcmp(ct_state_dict_name_at(sd, 0), "\xc3\xa9\xf0\x9f\x98\x80\n/") &&
              ct_numel(ct_state_dict_get(sd, "z")) == 0 &&
              ct_dtype_of(ct_state_dict_get(sd, "e")) == CT_F64;
    ct_state_dict_free(sd);
    written = written && st_write_file(path, "{}", 2, 0);
    sd = ct_safetensors_load(path, CT_CPU);
    ok = ok && sd && ct_state_dict_size(sd) == 0;
    ct_state_dict_free(sd);
    st_remove_dir(dir);
    CHECK(written && ok);
}

/* A valid file with several tensors and metadata, as bytes (malloc'd) for damaging. */
static unsigned char *valid_file(const char *path, size_t *n) {
    ct_state_dict *sd = ct_state_dict_new();
    int64_t shape[2] = {2, 3};
    double values[6] = {1, -2, 3.5, 0, 7, -8};
    bool ok = sd && ct_state_dict_set_metadata(sd, "format", "pt") == CT_OK;
    for (int dt = 0; dt < CT_DTYPE_COUNT && ok; dt++) {
        if (dt == CT_C128) continue; /* the format has no complex128 */
        char name[16];
        snprintf(name, sizeof name, "t%d", dt);
        ct_tensor *t = ref_tensor(values, 2 - dt % 3 / 2, shape, (ct_dtype)dt, CT_CPU);
        ok = t && ct_state_dict_set(sd, name, t) == CT_OK;
        ct_release(t);
    }
    ok = ok && ct_safetensors_save(path, sd) == CT_OK;
    ct_state_dict_free(sd);
    return ok ? st_read_bytes(path, n) : NULL;
}

/* Truncated at every byte, the file is refused as malformed. */
TEST(test_safetensors_hostile_truncated_everywhere) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "cut.safetensors", 0);
    size_t n = 0;
    unsigned char *bytes = valid_file(path, &n);
    int failures = bytes ? 0 : 1;
    for (size_t len = 0; bytes && len < n; len++) {
        if (!st_write_bytes(path, bytes, len)) failures++;
        ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
        if (sd || !format_error_names(path, "")) {
            printf("    truncated to %zu of %zu bytes\n", len, n);
            failures++;
        }
        ct_state_dict_free(sd);
    }
    free(bytes);
    st_remove_dir(dir);
    CHECK(failures == 0);
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Damage copy (n bytes of it, header_end the end of the header) in place: a few bit flips or
 * JSON-significant bytes, mostly in the header; sometimes a truncation. Returns the new size. */
static size_t damage(unsigned char *copy, size_t n, size_t header_end, uint64_t *rng) {
    static const unsigned char tokens[] = "\"\\{}[],:0123456789-.eE \xff\x80\x00";
    int edits = 1 + (int)(splitmix(rng) % 4);
    for (int e = 0; e < edits; e++) {
        uint64_t r = splitmix(rng);
        size_t at = (size_t)(r % 10 < 8 ? (r >> 8) % header_end : (r >> 8) % n);
        if ((r >> 4) % 2)
            copy[at] ^= (unsigned char)(1u << ((r >> 40) % 8));
        else
            copy[at] = tokens[(r >> 40) % (sizeof tokens - 1)];
    }
    uint64_t r = splitmix(rng);
    return r % 5 == 0 ? (size_t)((r >> 8) % n) : n;
}

/* 2000 random damages of a valid file: every load ends in success or CT_ERR_FORMAT. */
TEST(test_safetensors_hostile_fuzz) {
    char dir[256];
    CHECK(st_make_dir(dir));
    const char *path = st_path(dir, "fuzz.safetensors", 0);
    size_t n = 0;
    unsigned char *bytes = valid_file(path, &n), *copy = bytes ? malloc(n) : NULL;
    int failures = copy ? 0 : 1, loaded = 0;
    uint64_t rng = 20261130;
    for (int iter = 0; copy && iter < 2000; iter++) {
        memcpy(copy, bytes, n);
        size_t header_end = 8 + (size_t)(bytes[0] | bytes[1] << 8);
        size_t len = damage(copy, n, header_end, &rng);
        if (!st_write_bytes(path, copy, len)) failures++;
        ct_state_dict *sd = ct_safetensors_load(path, CT_CPU);
        if (sd)
            loaded++;
        else if (!format_error_names(path, "")) {
            printf("    iteration %d\n", iter);
            failures++;
        }
        ct_state_dict_free(sd);
    }
    free(bytes);
    free(copy);
    st_remove_dir(dir);
    CHECK(failures == 0);
    CHECK(loaded < 2000); /* the damage did reach the checks */
}
