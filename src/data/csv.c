/* The numeric CSV reader: rows of numbers split by one delimiter, an optional header line,
 * an optional integer label column. The file is read whole, then parsed in one pass into
 * growing arrays, so the tensors are made only once every cell has been checked. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_locale_impl.h"
#include "ctensor/data.h"
#include "data/data_file_impl.h"

#define FN "ct_read_csv"

ct_csv_options ct_csv_options_default(void) {
    return (ct_csv_options){.delimiter = ',', .has_header = false, .label_column = -1};
}

typedef struct {
    ct__data_file *f;
    char delimiter;
    int label_option;
    long columns; /* cells per row, from the first data row; 0 before it */
    long label;   /* the label's column index, or -1 */
    size_t rows, cap;
    float *features;
    int64_t *labels;
} csv_state;

static ct_status cell_error(const csv_state *s, size_t line, long column, const char *fmt,
                            const char *cell, size_t n) {
    char problem[200];
    snprintf(problem, sizeof problem, fmt, n > 40 ? 40 : (int)n, cell);
    return ct__error(CT_ERR_FORMAT, FN ": %s: line %zu, column %ld: %s", s->f->path, line, column,
                     problem);
}

/* The number in cell[0, n), spaces around it allowed; false when it is not one. */
static bool parse_number(const char *cell, size_t n, double *out) {
    char buf[128];
    while (n > 0 && (*cell == ' ' || *cell == '\t')) cell++, n--;
    while (n > 0 && (cell[n - 1] == ' ' || cell[n - 1] == '\t')) n--;
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, cell, n);
    buf[n] = '\0';
    char *end;
    *out = ct__strtod_c(buf, &end);
    return end == buf + n;
}

/* Room for one more row (the first row fixes the column count). */
static ct_status grow(csv_state *s) {
    if (s->rows < s->cap) return CT_OK;
    size_t cap = s->cap ? s->cap * 2 : 64, width = (size_t)s->columns, bytes;
    if (ct__mul_overflow_size(cap, width * sizeof(float), &bytes))
        return ct__error(CT_ERR_OUT_OF_MEMORY, FN ": %s: too many cells", s->f->path);
    float *features = ct__realloc(s->features, bytes ? bytes : 1);
    if (features) s->features = features;
    int64_t *labels = features ? ct__realloc(s->labels, cap * sizeof(int64_t)) : NULL;
    if (!labels) return ct__error(CT_ERR_OUT_OF_MEMORY, FN ": out of host memory");
    s->labels = labels;
    s->cap = cap;
    return CT_OK;
}

static long count_cells(const char *line, size_t n, char delimiter) {
    long cells = 1;
    for (size_t i = 0; i < n; i++) cells += line[i] == delimiter;
    return cells;
}

/* The first data row fixes the column count and the label's index. */
static ct_status set_columns(csv_state *s, long cells, size_t line_no) {
    s->columns = cells;
    s->label = -1;
    if (s->label_option == CT_CSV_NO_LABEL) return grow(s);
    long label = s->label_option < 0 ? cells + s->label_option : s->label_option;
    if (label < 0 || label >= cells || cells < 2)
        return ct__error(CT_ERR_INVALID_ARG,
                         FN ": %s: label_column %d, but line %zu has %ld column(s); a label "
                            "column needs a row of at least 2 columns and an index in -%ld..%ld",
                         s->f->path, s->label_option, line_no, cells, cells, cells - 1);
    s->label = label;
    return grow(s);
}

static ct_status store_cell(csv_state *s, const char *cell, size_t n, size_t line_no, long col) {
    double v;
    if (!parse_number(cell, n, &v))
        return cell_error(s, line_no, col + 1, "expected a number, found \"%.*s\"", cell, n);
    size_t width = (size_t)(s->columns - (s->label >= 0));
    if (col == s->label) {
        if (!(v == floor(v)) || fabs(v) > 9007199254740992.0)
            return cell_error(s, line_no, col + 1, "a label must be an integer, found \"%.*s\"",
                              cell, n);
        s->labels[s->rows] = (int64_t)v;
    } else {
        if (isfinite(v) && fabs(v) > FLT_MAX)
            return cell_error(s, line_no, col + 1, "\"%.*s\" is outside the float32 range", cell,
                              n);
        long f = s->label >= 0 && col > s->label ? col - 1 : col;
        s->features[s->rows * width + (size_t)f] = (float)v;
    }
    return CT_OK;
}

static ct_status parse_row(csv_state *s, const char *line, size_t n, size_t line_no) {
    long cells = count_cells(line, n, s->delimiter);
    if (s->columns == 0 && set_columns(s, cells, line_no) != CT_OK) return ct_last_status();
    if (cells != s->columns)
        return ct__error(CT_ERR_FORMAT,
                         FN ": %s: line %zu, column %ld: the row has %ld cells, the first data "
                            "row %ld (ragged rows)",
                         s->f->path, line_no, (cells < s->columns ? cells : s->columns) + 1, cells,
                         s->columns);
    if (grow(s) != CT_OK) return ct_last_status();
    long col = 0;
    for (size_t start = 0, i = 0; i <= n; i++) {
        if (i < n && line[i] != s->delimiter) continue;
        if (store_cell(s, line + start, i - start, line_no, col++) != CT_OK)
            return ct_last_status();
        start = i + 1;
    }
    s->rows++;
    return CT_OK;
}

static ct_status parse_text(csv_state *s, const char *text, size_t size, bool header) {
    size_t line_no = 0, pos = 0;
    if (size >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) pos = 3; /* a UTF-8 byte order mark */
    while (pos < size) {
        const char *nl = memchr(text + pos, '\n', size - pos);
        size_t end = nl ? (size_t)(nl - text) : size, n = end - pos;
        line_no++;
        if (n > 0 && text[pos + n - 1] == '\r') n--;
        if (memchr(text + pos, '\0', n))
            return ct__error(CT_ERR_FORMAT, FN ": %s: line %zu: a NUL byte (not a text file)",
                             s->f->path, line_no);
        if (n > 0 && header) {
            header = false;
        } else if (n > 0 && parse_row(s, text + pos, n, line_no) != CT_OK) {
            return ct_last_status();
        }
        pos = end + 1;
    }
    if (s->rows == 0) return ct__error(CT_ERR_FORMAT, FN ": %s: no data rows", s->f->path);
    return CT_OK;
}

static ct_status make_tensors(const csv_state *s, ct_tensor **features, ct_tensor **labels) {
    int64_t shape[2] = {(int64_t)s->rows, s->columns - (s->label >= 0)};
    *features = ct_from_data(s->features, 2, shape, CT_F32, CT_CPU);
    if (!*features) return ct_last_status();
    if (s->label < 0) return CT_OK;
    *labels = ct_from_data(s->labels, 1, shape, CT_I64, CT_CPU);
    if (!*labels) {
        ct_release(*features);
        *features = NULL;
        return ct_last_status();
    }
    return CT_OK;
}

ct_status ct_read_csv(const char *path, const ct_csv_options *options, ct_tensor **features,
                      ct_tensor **labels) {
    ct_csv_options o = options ? *options : ct_csv_options_default();
    if (labels) *labels = NULL;
    if (!features) return ct__error(CT_ERR_INVALID_ARG, FN ": features is NULL");
    *features = NULL;
    if (!labels && o.label_column != CT_CSV_NO_LABEL)
        return ct__error(CT_ERR_INVALID_ARG,
                         FN ": labels is NULL but label_column is %d; pass a place for the "
                            "labels or set label_column to CT_CSV_NO_LABEL",
                         o.label_column);
    if (o.delimiter == '\n' || o.delimiter == '\r' || o.delimiter == '\0')
        return ct__error(CT_ERR_INVALID_ARG, FN ": the delimiter cannot be a line end or NUL");
    ct__data_file f;
    if (ct__data_open(&f, FN, path) != CT_OK) return ct_last_status();
    size_t size;
    char *text = ct__data_read_all(&f, &size);
    ct__data_close(&f);
    if (!text) return ct_last_status();
    csv_state s = {.f = &f, .delimiter = o.delimiter, .label_option = o.label_column};
    ct_status st = parse_text(&s, text, size, o.has_header);
    if (st == CT_OK) st = make_tensors(&s, features, labels);
    ct__free_mem(text);
    ct__free_mem(s.features);
    ct__free_mem(s.labels);
    return st;
}
