/* The NPY reader: format versions 1.0, 2.0 and 3.0, the plain numeric dtypes in either byte
 * order, C and Fortran order. The header is a Python dict literal, parsed strictly by the
 * small parser below: exactly the keys 'descr', 'fortran_order' and 'shape', as numpy writes
 * them. */
#include <string.h>

#include "core/dtype_impl.h"
#include "ctensor/data.h"
#include "data/data_file_impl.h"

#define FN "ct_read_npy"
/* numpy's own reader refuses headers above 10000 bytes by default; leave room above that. */
#define CT_NPY_MAX_HEADER (1u << 20)

typedef struct {
    ct__data_file *f;
    const char *text;
    size_t pos, len;
    uint64_t base; /* the header's byte offset in the file */
    /* results */
    ct_dtype dtype;
    bool big_endian, fortran;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
} npy_parser;

static ct_status parse_error(npy_parser *p, const char *what) {
    return ct__data_format_error(p->f, p->base + p->pos, "bad NPY header: %s", what);
}

static void skip_space(npy_parser *p) {
    while (p->pos < p->len && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t')) p->pos++;
}

/* Skip spaces, then the character c. */
static bool accept(npy_parser *p, char c) {
    skip_space(p);
    if (p->pos < p->len && p->text[p->pos] == c) {
        p->pos++;
        return true;
    }
    return false;
}

/* A quoted string without escapes; *start and *n give its contents. */
static ct_status parse_string(npy_parser *p, const char **start, size_t *n) {
    skip_space(p);
    char quote = p->pos < p->len ? p->text[p->pos] : 0;
    if (quote != '\'' && quote != '"') return parse_error(p, "expected a quoted string");
    size_t begin = ++p->pos;
    while (p->pos < p->len && p->text[p->pos] != quote && p->text[p->pos] != '\n') {
        if (p->text[p->pos] == '\\') return parse_error(p, "escapes are not allowed in strings");
        p->pos++;
    }
    if (p->pos >= p->len || p->text[p->pos] != quote) return parse_error(p, "unterminated string");
    *start = p->text + begin;
    *n = p->pos - begin;
    p->pos++;
    return CT_OK;
}

static ct_status parse_descr(npy_parser *p) {
    const char *s;
    size_t n;
    size_t at = p->pos;
    if (parse_string(p, &s, &n) != CT_OK) return ct_last_status();
    for (int d = 0; n == 3 && d < CT_DTYPE_COUNT; d++) {
        /* the dtype's typestr, "<f8"; kind and size must match, the byte order is s[0] */
        const char *code = ct__dtype_numpy((ct_dtype)d);
        if (!code || memcmp(s + 1, code + 1, 2) != 0) continue;
        bool one_byte = code[0] == '|';
        if (s[0] == '<' || s[0] == '>' || (s[0] == '|' && one_byte)) {
            p->dtype = (ct_dtype)d;
            p->big_endian = s[0] == '>';
            return CT_OK;
        }
    }
    p->pos = at;
    char msg[160];
    snprintf(msg, sizeof msg,
             "unsupported descr '%.*s' (expected one of <f8 <f4 <f2 <i8 <i4 <i2 |i1 <u8 <u4 "
             "<u2 |u1 |b1 or the big-endian >f8 ... >u2)",
             n > 40 ? 40 : (int)n, s);
    return parse_error(p, msg);
}

static ct_status parse_bool(npy_parser *p) {
    skip_space(p);
    const char *rest = p->text + p->pos;
    size_t left = p->len - p->pos;
    if (left >= 4 && memcmp(rest, "True", 4) == 0) {
        p->fortran = true;
        p->pos += 4;
    } else if (left >= 5 && memcmp(rest, "False", 5) == 0) {
        p->fortran = false;
        p->pos += 5;
    } else {
        return parse_error(p, "fortran_order must be True or False");
    }
    return CT_OK;
}

static ct_status parse_int(npy_parser *p, int64_t *out) {
    skip_space(p);
    int64_t v = 0;
    size_t begin = p->pos;
    while (p->pos < p->len && p->text[p->pos] >= '0' && p->text[p->pos] <= '9') {
        if (v > (INT64_MAX - 9) / 10) return parse_error(p, "a shape size is too large");
        v = v * 10 + (p->text[p->pos++] - '0');
    }
    if (p->pos == begin) return parse_error(p, "expected a non-negative integer in the shape");
    if (p->pos < p->len && p->text[p->pos] == 'L') p->pos++; /* Python 2's long suffix */
    *out = v;
    return CT_OK;
}

/* A Python tuple of non-negative integers: (), (3,), (3, 4) or (3, 4,). */
static ct_status parse_shape(npy_parser *p) {
    if (!accept(p, '(')) return parse_error(p, "shape must be a tuple");
    p->ndim = 0;
    bool comma = false;
    while (!accept(p, ')')) {
        if (p->ndim == CT_MAX_DIMS)
            return ct__data_format_error(p->f, p->base + p->pos,
                                         "bad NPY header: more than %d dimensions (ctensor "
                                         "supports at most %d)",
                                         CT_MAX_DIMS, CT_MAX_DIMS);
        if (p->ndim > 0 && !comma) return parse_error(p, "expected ',' or ')' in the shape");
        if (parse_int(p, &p->shape[p->ndim]) != CT_OK) return ct_last_status();
        p->ndim++;
        comma = accept(p, ',');
    }
    if (p->ndim == 1 && !comma) return parse_error(p, "a one-element shape needs a comma: (n,)");
    return CT_OK;
}

/* One "'key': value" item; seen marks the keys read so far (bit per key). */
static ct_status parse_item(npy_parser *p, unsigned *seen) {
    static const char *const keys[] = {"descr", "fortran_order", "shape"};
    const char *key;
    size_t n, at = p->pos;
    if (parse_string(p, &key, &n) != CT_OK) return ct_last_status();
    int k = -1;
    for (int i = 0; i < 3; i++)
        if (strlen(keys[i]) == n && memcmp(key, keys[i], n) == 0) k = i;
    if (k < 0 || (*seen & (1u << k))) {
        p->pos = at;
        return parse_error(p, k < 0 ? "unknown key (expected descr, fortran_order, shape)"
                                    : "a key appears twice");
    }
    *seen |= 1u << k;
    if (!accept(p, ':')) return parse_error(p, "expected ':' after a key");
    if (k == 0) return parse_descr(p);
    if (k == 1) return parse_bool(p);
    return parse_shape(p);
}

/* {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } then spaces and '\n'. */
static ct_status parse_header(npy_parser *p) {
    unsigned seen = 0;
    if (!accept(p, '{')) return parse_error(p, "expected '{'");
    bool comma = true;
    while (!accept(p, '}')) {
        if (!comma) return parse_error(p, "expected ',' or '}'");
        if (parse_item(p, &seen) != CT_OK) return ct_last_status();
        comma = accept(p, ',');
    }
    if (seen != 7u) return parse_error(p, "the dict lacks one of descr, fortran_order, shape");
    skip_space(p);
    if (p->pos + 1 != p->len || p->text[p->pos] != '\n')
        return parse_error(p, "expected only spaces and a final newline after the dict");
    return CT_OK;
}

/* The magic, version and header length; then the header, parsed into p. */
static ct_status read_header(ct__data_file *f, npy_parser *p) {
    unsigned char pre[12];
    if (ct__data_read_exact(f, pre, 10, "the NPY preamble") != CT_OK) return ct_last_status();
    if (memcmp(pre, "\x93NUMPY", 6) != 0)
        return ct__data_format_error(f, 0, "not an NPY file: the magic \\x93NUMPY is missing");
    if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0)
        return ct__data_format_error(f, 6, "NPY format version %d.%d (expected 1.0, 2.0, 3.0)",
                                     pre[6], pre[7]);
    uint32_t len = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    if (pre[6] > 1) {
        if (ct__data_read_exact(f, pre + 10, 2, "the NPY header length") != CT_OK)
            return ct_last_status();
        len |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    }
    if (len > CT_NPY_MAX_HEADER)
        return ct__data_format_error(f, 8, "an NPY header of %u bytes (at most %u allowed)", len,
                                     CT_NPY_MAX_HEADER);
    char *text = ct__malloc(len + 1u);
    if (!text) return ct__error(CT_ERR_OUT_OF_MEMORY, FN ": out of host memory for a header");
    *p = (npy_parser){.f = f, .text = text, .len = len, .base = f->offset};
    ct_status st = ct__data_read_exact(f, text, len, "the NPY header");
    if (st == CT_OK) st = parse_header(p);
    ct__free_mem(text);
    p->text = NULL;
    return st;
}

/* Fortran-order data is C-order data of the reversed shape: read it so, then transpose. */
static ct_tensor *read_fortran(ct__data_file *f, const npy_parser *p) {
    int64_t reversed[CT_MAX_DIMS];
    int perm[CT_MAX_DIMS];
    for (int i = 0; i < p->ndim; i++) {
        reversed[i] = p->shape[p->ndim - 1 - i];
        perm[i] = p->ndim - 1 - i;
    }
    ct_tensor *raw = ct__data_read_tensor(f, p->dtype, p->ndim, reversed, "the NPY data");
    ct_tensor *view = ct_permute(raw, p->ndim, perm);
    ct_tensor *t = ct_contiguous(view);
    ct_release(view);
    ct_release(raw);
    return t;
}

static ct_tensor *read_data(ct__data_file *f, const npy_parser *p) {
    /* Byte swaps and bool fixes act element by element, so they may follow the transpose. */
    ct_tensor *t = p->fortran && p->ndim > 1
                       ? read_fortran(f, p)
                       : ct__data_read_tensor(f, p->dtype, p->ndim, p->shape, "the NPY data");
    if (!t) return NULL;
    size_t width = ct_dtype_size(p->dtype);
    if (width > 1 && p->big_endian == ct__data_host_little_endian())
        ct__data_swap_bytes(ct__data(t), (size_t)t->numel, width);
    if (p->dtype == CT_BOOL) {
        /* ctensor's bools are 0 or 1; numpy writes those, but a hand-made file may not. */
        unsigned char *b = (unsigned char *)ct__data(t);
        for (int64_t i = 0; i < t->numel; i++) b[i] = b[i] != 0;
    }
    return t;
}

ct_tensor *ct_read_npy(const char *path) {
    ct__data_file f;
    if (ct__data_open(&f, FN, path) != CT_OK) return NULL;
    npy_parser p;
    ct_tensor *t = NULL;
    if (read_header(&f, &p) == CT_OK) t = read_data(&f, &p);
    if (t && ct__data_expect_end(&f) != CT_OK) {
        ct_release(t);
        t = NULL;
    }
    ct__data_close(&f);
    return t;
}
