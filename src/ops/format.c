/* Printing tensors: ct_format and ct_print.
 *
 * The layout is PyTorch's repr (itself NumPy's array repr with another prefix), so what a
 * user sees reads like what they know:
 *
 *     tensor([[ 1.5000,  2.0000],
 *             [-3.2500,  4.0000]], dtype=float32, device=cpu:0)
 *
 * - Every element of a tensor is printed at one width (right-aligned), so columns line up.
 * - Floats: 4 decimals (PyTorch's default precision; NumPy's is 8), fixed-point; scientific
 *   notation (1.0000e-05) when the nonzero finite magnitudes call for it: max/min > 1e3,
 *   max >= 1e8 or min < 1e-4. When every finite value is a whole number the values print
 *   as "3." (PyTorch's int mode), and go scientific only for max/min > 1e3 or max >= 1e8.
 *   NaN and infinities print as nan, inf and -inf.
 * - Complex numbers print as PyTorch and NumPy do, the real part, the imaginary part with its
 *   sign, then j: 1.5000+2.0000j, 1.-0.j, nan+infj; one style (from both parts' magnitudes)
 *   serves every element.
 * - Integers print plainly, bools as True and False.
 * - Past 1000 elements the output is summarised: the first and last 3 entries of each axis
 *   longer than 6, with "..." between. Widths and notation are then decided on the shown
 *   entries only.
 * - Rows longer than 80 columns wrap; slices of a 3-D tensor are separated by a blank line
 *   (one more per extra axis).
 * - dtype and device are always shown (unlike PyTorch, which hides the defaults), and an
 *   empty tensor shows its size unless it is 1-D: tensor([], size=(0, 3), ...).
 *
 * Reading the elements is an implicit transfer from a device (the transfer guard applies).
 * Only one host copy is made; all formatting runs on it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/c_locale_impl.h"
#include "core/transfer_impl.h"
#include "ops/op_impl.h"

#define PRINT_PRECISION 4    /* decimals of fixed and scientific notation */
#define PRINT_LINEWIDTH 80   /* columns before a row wraps */
#define PRINT_THRESHOLD 1000 /* more elements than this are summarised */
#define PRINT_EDGEITEMS 3    /* entries shown at each end of a summarised axis */
#define PRINT_PREFIX "tensor("
#define VALUE_CAPACITY 64 /* longest element text: fixed-point values stay below 1e8 */

/* A growing string; after an allocation failure every append is a no-op. */
typedef struct text {
    char *data;
    size_t len, cap;
    bool failed;
} text;

static void text_put(text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) cap *= 2;
        char *grown = ct__realloc(t->data, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void text_str(text *t, const char *s) { text_put(t, s, strlen(s)); }

static void text_repeat(text *t, char c, int64_t n) {
    for (int64_t i = 0; i < n; i++) text_put(t, &c, 1);
}

/* Columns of the last line so far. */
static size_t text_line_len(const text *t) {
    if (t->failed || !t->data) return 0;
    const char *newline = strrchr(t->data, '\n');
    return newline ? t->len - (size_t)(newline + 1 - t->data) : t->len;
}

typedef enum value_style {
    STYLE_PLAIN, /* integers and bools */
    STYLE_FIXED, /* 1.5000 */
    STYLE_WHOLE, /* 3. */
    STYLE_SCI,   /* 1.5000e+09 */
} value_style;

typedef struct printer {
    const char *data; /* a contiguous host copy of the elements */
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    int64_t strides[CT_MAX_DIMS]; /* C order, in elements */
    bool summarize;
    value_style style;
    int width; /* of every element */
    text out;
} printer;

/* The index after i along an axis of n entries, skipping the middle of a summarised axis. */
static int64_t next_index(const printer *p, int64_t n, int64_t i) {
    if (p->summarize && n > 2 * PRINT_EDGEITEMS && i + 1 == PRINT_EDGEITEMS)
        return n - PRINT_EDGEITEMS;
    return i + 1;
}

static ct_complex128 element(const printer *p, int64_t index) {
    return ct__load_c128(p->data + index * (int64_t)ct__dtype_size(p->dtype), p->dtype);
}

static int format_float(const printer *p, double v, char *buf) {
    if (isnan(v)) return snprintf(buf, VALUE_CAPACITY, "nan"); /* never "-nan" */
    if (isinf(v)) return snprintf(buf, VALUE_CAPACITY, "%s", v < 0 ? "-inf" : "inf");
    switch (p->style) {
    case STYLE_SCI: return ct__snprintf_c(buf, VALUE_CAPACITY, "%.*e", PRINT_PRECISION, v);
    case STYLE_WHOLE: return ct__snprintf_c(buf, VALUE_CAPACITY, "%.0f.", v);
    default: return ct__snprintf_c(buf, VALUE_CAPACITY, "%.*f", PRINT_PRECISION, v);
    }
}

/* A complex number as re+imj (the imaginary part's sign always shown, nan as +nan). */
static int format_complex(const printer *p, ct_complex128 z, char *buf) {
    char re[VALUE_CAPACITY], im[VALUE_CAPACITY];
    format_float(p, z.re, re);
    format_float(p, isnan(z.im) ? z.im : fabs(z.im), im);
    bool minus = !isnan(z.im) && signbit(z.im);
    return snprintf(buf, VALUE_CAPACITY, "%s%c%sj", re, minus ? '-' : '+', im);
}

/* Write element `index` in the printer's style into buf; returns its length. */
static int format_value(const printer *p, int64_t index, char *buf) {
    const char *e = p->data + index * (int64_t)ct__dtype_size(p->dtype);
    int n;
    if (ct__is_complex(p->dtype))
        n = format_complex(p, ct__load_c128(e, p->dtype), buf);
    else if (p->dtype == CT_BOOL)
        n = snprintf(buf, VALUE_CAPACITY, "%s", *(const uint8_t *)e ? "True" : "False");
    else if (p->dtype == CT_U64)
        n = snprintf(buf, VALUE_CAPACITY, "%llu", (unsigned long long)*(const uint64_t *)e);
    else if (!ct__is_float(p->dtype))
        n = snprintf(buf, VALUE_CAPACITY, "%lld", (long long)ct__load_i64(e, p->dtype));
    else
        n = format_float(p, ct__load_f64(e, p->dtype), buf);
    return n < VALUE_CAPACITY ? n : VALUE_CAPACITY - 1;
}

typedef void (*visit_fn)(printer *p, int64_t index, void *ctx);

/* Call fn on every element that will be shown (all of them unless summarised). */
static void visit_shown(printer *p, int depth, int64_t base, visit_fn fn, void *ctx) {
    if (depth == p->ndim) {
        fn(p, base, ctx);
        return;
    }
    int64_t n = p->shape[depth];
    for (int64_t i = 0; i < n; i = next_index(p, n, i))
        visit_shown(p, depth + 1, base + i * p->strides[depth], fn, ctx);
}

/* What decides a float style: the range of the nonzero finite magnitudes shown, and whether
 * all of them are whole numbers. */
typedef struct float_range {
    bool any;
    bool whole;
    double min_abs, max_abs;
} float_range;

static void range_add(float_range *r, double v) {
    if (!isfinite(v) || v == 0.0) return;
    double a = fabs(v);
    if (!r->any || a < r->min_abs) r->min_abs = a;
    if (!r->any || a > r->max_abs) r->max_abs = a;
    if (v != ceil(v)) r->whole = false;
    r->any = true;
}

/* A complex element counts with both parts. */
static void visit_range(printer *p, int64_t index, void *ctx) {
    ct_complex128 z = element(p, index);
    range_add(ctx, z.re);
    if (ct__is_complex(p->dtype)) range_add(ctx, z.im);
}

static void visit_width(printer *p, int64_t index, void *ctx) {
    (void)ctx;
    char buf[VALUE_CAPACITY];
    int n = format_value(p, index, buf);
    if (n > p->width) p->width = n;
}

/* Choose the style from the shown elements (PyTorch's _Formatter), then the common width. */
static void choose_style(printer *p) {
    p->style = STYLE_PLAIN;
    if (ct__is_float(p->dtype) || ct__is_complex(p->dtype)) {
        float_range r = {false, true, 0.0, 0.0};
        visit_shown(p, 0, 0, visit_range, &r);
        bool wide = r.any && (r.max_abs / r.min_abs > 1e3 || r.max_abs >= 1e8);
        if (!r.any || r.whole)
            p->style = wide ? STYLE_SCI : STYLE_WHOLE;
        else
            p->style = (wide || r.min_abs < 1e-4) ? STYLE_SCI : STYLE_FIXED;
    }
    p->width = 1;
    visit_shown(p, 0, 0, visit_width, NULL);
}

static void put_value(printer *p, int64_t index) {
    char buf[VALUE_CAPACITY];
    int n = format_value(p, index, buf);
    text_repeat(&p->out, ' ', p->width - n);
    text_put(&p->out, buf, (size_t)n);
}

/* The separator before an entry of a row: ", ", or a wrap once a line holds per_line. */
static void put_row_separator(printer *p, int *on_line, int per_line, int indent) {
    if (*on_line == per_line) {
        text_str(&p->out, ",\n");
        text_repeat(&p->out, ' ', indent + 1);
        *on_line = 0;
    } else if (*on_line > 0) {
        text_str(&p->out, ", ");
    }
    (*on_line)++;
}

/* The last axis: entries separated by ", ", wrapped to fit the line width. */
static void put_row(printer *p, int64_t base, int indent) {
    int64_t n = p->shape[p->ndim - 1], stride = p->strides[p->ndim - 1];
    int per_line = (PRINT_LINEWIDTH - indent) / (p->width + 2);
    if (per_line < 1) per_line = 1;
    int on_line = 0;
    text_str(&p->out, "[");
    for (int64_t i = 0; i < n;) {
        int64_t next = next_index(p, n, i);
        put_row_separator(p, &on_line, per_line, indent);
        put_value(p, base + i * stride);
        if (next != i + 1) {
            put_row_separator(p, &on_line, per_line, indent);
            text_str(&p->out, " ...");
        }
        i = next;
    }
    text_str(&p->out, "]");
}

/* Between slices of axis depth: a comma, one newline per remaining axis, the indent. */
static void put_slice_separator(printer *p, int depth, int indent) {
    text_str(&p->out, ",");
    text_repeat(&p->out, '\n', p->ndim - depth - 1);
    text_repeat(&p->out, ' ', indent + 1);
}

/* The sub-tensor at `base` from axis depth on, its '[' at column indent. */
static void put_tensor(printer *p, int depth, int64_t base, int indent) {
    if (depth == p->ndim - 1) {
        put_row(p, base, indent);
        return;
    }
    int64_t n = p->shape[depth];
    text_str(&p->out, "[");
    for (int64_t i = 0; i < n;) {
        int64_t next = next_index(p, n, i);
        if (i > 0) put_slice_separator(p, depth, indent);
        put_tensor(p, depth + 1, base + i * p->strides[depth], indent + 1);
        if (next != i + 1) {
            put_slice_separator(p, depth, indent);
            text_str(&p->out, "...");
        }
        i = next;
    }
    text_str(&p->out, "]");
}

/* ", suffix" on the current line when it (and a closing parenthesis) fits in the line
 * width, else on a new line. */
static void put_suffix(printer *p, const char *suffix) {
    size_t indent = strlen(PRINT_PREFIX);
    if (text_line_len(&p->out) + 2 + strlen(suffix) + 1 > PRINT_LINEWIDTH) {
        text_str(&p->out, ",\n");
        text_repeat(&p->out, ' ', (int64_t)indent);
    } else {
        text_str(&p->out, ", ");
    }
    text_str(&p->out, suffix);
}

static void put_suffixes(printer *p, const ct_tensor *t) {
    char suffix[64 + 24 * CT_MAX_DIMS];
    if (t->numel == 0 && t->ndim != 1) {
        size_t used = (size_t)snprintf(suffix, sizeof suffix, "size=(");
        for (int d = 0; d < t->ndim; d++)
            used += (size_t)snprintf(suffix + used, sizeof suffix - used, d ? ", %lld" : "%lld",
                                     (long long)t->shape[d]);
        snprintf(suffix + used, sizeof suffix - used, ")");
        put_suffix(p, suffix);
    }
    snprintf(suffix, sizeof suffix, "dtype=%s", ct_dtype_name(t->dtype));
    put_suffix(p, suffix);
    char device[32];
    snprintf(suffix, sizeof suffix, "device=%s",
             ct_device_str(t->storage->device, device, sizeof device));
    put_suffix(p, suffix);
    text_str(&p->out, ")");
}

/* A contiguous host copy of t's elements (ct__malloc'd), read as an implicit transfer. */
static char *host_copy(const ct_tensor *t) {
    size_t bytes = (size_t)t->numel * ct__dtype_size(t->dtype);
    char *host = ct__malloc(bytes);
    if (!host)
        return ct__fail(CT_ERR_OUT_OF_MEMORY,
                        "ct_format: cannot allocate %zu bytes of host memory for the tensor's "
                        "elements; free memory or print a slice",
                        bytes);
    ct_tensor *src = ct_contiguous(t);
    if (!src || ct__transfer(NULL, host, &src->storage->device, ct__data(src), bytes, true,
                             "ct_format") != CT_OK) {
        ct__free_mem(host);
        host = NULL;
    }
    ct_release(src);
    return host;
}

static void put_body(printer *p, int64_t numel) {
    if (numel == 0)
        text_str(&p->out, "[]");
    else if (p->ndim == 0)
        put_value(p, 0);
    else
        put_tensor(p, 0, 0, (int)strlen(PRINT_PREFIX));
}

char *ct_format(const ct_tensor *t) {
    if (!t) return ct__null_arg("ct_format", 1);
    printer p;
    memset(&p, 0, sizeof p);
    p.dtype = t->dtype;
    p.ndim = t->ndim;
    memcpy(p.shape, t->shape, sizeof p.shape);
    ct__contiguous_strides(t->ndim, t->shape, p.strides);
    p.summarize = t->numel > PRINT_THRESHOLD;
    char *host = NULL;
    if (t->numel > 0) {
        host = host_copy(t);
        if (!host) return NULL;
        p.data = host;
        choose_style(&p);
    }
    text_str(&p.out, PRINT_PREFIX);
    put_body(&p, t->numel);
    put_suffixes(&p, t);
    ct__free_mem(host);
    if (p.out.failed) {
        ct__free_mem(p.out.data);
        return ct__fail(CT_ERR_OUT_OF_MEMORY,
                        "ct_format: out of host memory while building the string (%zu bytes "
                        "so far); free memory and retry",
                        p.out.len);
    }
    return p.out.data;
}

ct_status ct_print(const ct_tensor *t) {
    if (!t) {
        ct__null_arg("ct_print", 1);
        return ct_last_status();
    }
    char *s = ct_format(t);
    if (!s) return ct_last_status();
    bool written = puts(s) >= 0 && fflush(stdout) == 0;
    ct_free(s);
    if (!written) return ct__error(CT_ERR_IO, "ct_print: writing to stdout failed");
    return CT_OK;
}
