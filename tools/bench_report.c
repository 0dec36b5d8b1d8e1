/* `ctensor bench`: the results as a table (one per op, a column per device and, on a GPU,
 * one with the copies), the size from which each GPU wins, the host<->device copies (pageable and
 * pinned), and the same as CSV and JSON. */
#include <math.h>
#include <string.h>

#include "bench_impl.h"

/* Seconds per call of one measurement, or NAN when it was not made. */
static double lookup(const bench_results *r, bench_op op, ct_device device, bool with_copies,
                     int64_t size) {
    for (int i = 0; i < r->count; i++) {
        const bench_measurement *m = &r->items[i];
        if (m->op == op && ct_device_equal(m->device, device) && m->with_copies == with_copies &&
            m->size == size)
            return m->seconds;
    }
    return NAN;
}

/* The distinct sizes measured for op, ascending (measurements are made in ascending order
 * for each device, and cpu:0 is measured at every size). Returns how many. */
static int sizes_of(const bench_results *r, bench_op op, int64_t *sizes, int max) {
    int n = 0;
    for (int i = 0; i < r->count && n < max; i++) {
        const bench_measurement *m = &r->items[i];
        bool seen = false;
        for (int j = 0; j < n; j++) seen = seen || sizes[j] == m->size;
        if (m->op == op && !seen) sizes[n++] = m->size;
    }
    return n;
}

int64_t bench_crossover(const bench_results *r, bench_op op, ct_device device, bool with_copies) {
    int64_t sizes[64];
    int n = sizes_of(r, op, sizes, 64);
    int64_t from = 0;
    for (int i = n - 1; i >= 0; i--) {
        double cpu = lookup(r, op, CT_CPU, false, sizes[i]);
        double other = lookup(r, op, device, with_copies, sizes[i]);
        if (!(other < cpu)) break; /* NAN (not measured) counts as not winning */
        from = sizes[i];
    }
    return from;
}

static const char *format_seconds(double s, char *buf, size_t size) {
    if (isnan(s))
        snprintf(buf, size, "-");
    else if (s < 1e-6)
        snprintf(buf, size, "%.0f ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(buf, size, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, size, "%.2f ms", s * 1e3);
    else
        snprintf(buf, size, "%.2f s", s);
    return buf;
}

static const char *format_size(bench_op op, int64_t size, char *buf, size_t n) {
    int e = 0;
    while (((int64_t)1 << e) < size) e++;
    if (op == BENCH_MATMUL)
        snprintf(buf, n, "n=%lld", (long long)size);
    else if (bench_is_copy(op))
        snprintf(buf, n,
                 size >= (1 << 30)   ? "%lld GiB"
                 : size >= (1 << 20) ? "%lld MiB"
                                     : "%lld KiB",
                 (long long)(size >> (size >= (1 << 30)   ? 30
                                      : size >= (1 << 20) ? 20
                                                          : 10)));
    else
        snprintf(buf, n, "2^%d", e);
    return buf;
}

static void print_op_table(const bench_results *r, bench_op op, FILE *out) {
    char name[32], cell[32];
    fprintf(out, "\n%s (size: %s; seconds per call)\n  %-10s", bench_op_name(op),
            bench_size_unit(op), "size");
    for (int d = 0; d < r->device_count; d++) {
        fprintf(out, " %14s", ct_device_str(r->devices[d], name, sizeof name));
        if (bench_is_compared(r->devices[d])) fprintf(out, " %8s+copies", name);
    }
    fprintf(out, "\n");
    int64_t sizes[64];
    int n = sizes_of(r, op, sizes, 64);
    for (int i = 0; i < n; i++) {
        fprintf(out, "  %-10s", format_size(op, sizes[i], cell, sizeof cell));
        for (int d = 0; d < r->device_count; d++) {
            ct_device dev = r->devices[d];
            fprintf(out, " %14s",
                    format_seconds(lookup(r, op, dev, false, sizes[i]), cell, sizeof cell));
            if (bench_is_compared(dev))
                fprintf(out, " %15s",
                        format_seconds(lookup(r, op, dev, true, sizes[i]), cell, sizeof cell));
        }
        fprintf(out, "\n");
    }
}

static void print_crossover_line(const bench_results *r, bench_op op, ct_device dev, FILE *out) {
    char name[32], without[48], with[48];
    int64_t a = bench_crossover(r, op, dev, false), b = bench_crossover(r, op, dev, true);
    if (a)
        snprintf(without, sizeof without, "from %s", format_size(op, a, name, sizeof name));
    else
        snprintf(without, sizeof without, "never in the measured range");
    if (b)
        snprintf(with, sizeof with, "from %s", format_size(op, b, name, sizeof name));
    else
        snprintf(with, sizeof with, "never in the measured range");
    fprintf(out, "  %-7s %s: data on the device: %s; with the copies: %s\n", bench_op_name(op),
            ct_device_str(dev, name, sizeof name), without, with);
}

static void print_crossovers(const bench_results *r, FILE *out) {
    bool compared = false;
    for (int d = 0; d < r->device_count; d++)
        compared = compared || bench_is_compared(r->devices[d]);
    fprintf(out,
            "\nwhere the GPU (or logical device) starts to win against cpu:0, staying ahead at "
            "every larger size measured:\n");
    for (int op = 0; op < BENCH_COMPUTE_OPS; op++) {
        if (!compared) fprintf(out, "  %-7s no GPU measured\n", bench_op_name((bench_op)op));
        for (int d = 0; d < r->device_count; d++)
            if (bench_is_compared(r->devices[d]))
                print_crossover_line(r, (bench_op)op, r->devices[d], out);
    }
}

/* "1.23 ms  4.56" (seconds per copy and GB/s), or "-" twice when not measured. */
static void print_copy_cell(double seconds, int64_t bytes, FILE *out) {
    char cell[32];
    fprintf(out, " %10s %7.2f", format_seconds(seconds, cell, sizeof cell),
            (double)bytes / seconds / 1e9);
}

static void print_device_copies(const bench_results *r, ct_device dev, FILE *out) {
    static const bench_op columns[4] = {BENCH_COPY_H2D, BENCH_COPY_H2D_PINNED, BENCH_COPY_D2H,
                                        BENCH_COPY_D2H_PINNED};
    char name[32], size[32];
    fprintf(out,
            "\nhost<->device copies, %s (pageable: ctensor stages host-to-device copies through "
            "its own pinned buffers; pinned: ct_pin_memory, one direct DMA)\n  %-10s %18s %18s "
            "%18s %18s\n  %-10s",
            ct_device_str(dev, name, sizeof name), "size", "to device pageable", "to device pinned",
            "to host pageable", "to host pinned", "");
    for (int k = 0; k < 4; k++) fprintf(out, " %10s %7s", "time", "GB/s");
    fprintf(out, "\n");
    int64_t sizes[64];
    int n = sizes_of(r, BENCH_COPY_H2D, sizes, 64);
    for (int i = 0; i < n; i++) {
        fprintf(out, "  %-10s", format_size(BENCH_COPY_H2D, sizes[i], size, sizeof size));
        for (int k = 0; k < 4; k++)
            print_copy_cell(lookup(r, columns[k], dev, true, sizes[i]), sizes[i], out);
        fprintf(out, "\n");
    }
    if (r->pinned_absent[0]) fprintf(out, "  pinned columns absent: %s\n", r->pinned_absent);
    fprintf(out, "  latency (the smallest copy) and bandwidth (the largest) are its first "
                 "and last rows\n");
}

static void print_copies(const bench_results *r, FILE *out) {
    if (!r->has_cuda) {
        fprintf(out, "\nhost<->device copies, pageable and pinned: not measured (no GPU: %s)\n",
                r->gpu_absent);
        return;
    }
    for (int d = 0; d < r->device_count; d++)
        if (!ct_device_is_host(r->devices[d])) print_device_copies(r, r->devices[d], out);
}

void bench_print_table(const bench_results *r, FILE *out) {
    char name[32];
    fprintf(out, "ctensor bench (ctensor %s): f32, the median over timed batches; devices:",
            ct_version());
    for (int d = 0; d < r->device_count; d++)
        fprintf(out, " %s", ct_device_str(r->devices[d], name, sizeof name));
    fprintf(out, "\n");
    if (!r->has_cuda)
        fprintf(out,
                "GPU columns absent: no CUDA device measured: %s\n"
                "pinned copy columns absent: pinned host memory and the copies from it need a "
                "CUDA device\n",
                r->gpu_absent);
    for (int op = 0; op < BENCH_COMPUTE_OPS; op++) print_op_table(r, (bench_op)op, out);
    print_copies(r, out);
    print_crossovers(r, out);
    fprintf(out, "\nmeasured in %.1f s\n", r->wall_seconds);
}

bool bench_write_csv(const bench_results *r, FILE *file) {
    char name[32];
    fprintf(file, "device,op,size,seconds,with_copies\n");
    for (int i = 0; i < r->count; i++) {
        const bench_measurement *m = &r->items[i];
        fprintf(file, "%s,%s,%lld,%.9g,%d\n", ct_device_str(m->device, name, sizeof name),
                bench_op_name(m->op), (long long)m->size, m->seconds, m->with_copies ? 1 : 0);
    }
    return !ferror(file);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void json_string(const char *s, FILE *out) {
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* "key": size, or null for 0 (the GPU never won). */
static void json_size(FILE *out, const char *key, int64_t size) {
    if (size)
        fprintf(out, "\"%s\": %lld", key, (long long)size);
    else
        fprintf(out, "\"%s\": null", key);
}

static void json_crossovers(const bench_results *r, FILE *out) {
    char name[32];
    bool first = true;
    fprintf(out, "  \"crossover\": [");
    for (int op = 0; op < BENCH_COMPUTE_OPS; op++)
        for (int d = 0; d < r->device_count; d++) {
            ct_device dev = r->devices[d];
            if (!bench_is_compared(dev)) continue;
            int64_t a = bench_crossover(r, (bench_op)op, dev, false);
            int64_t b = bench_crossover(r, (bench_op)op, dev, true);
            fprintf(out, "%s\n    {\"op\": \"%s\", \"device\": \"%s\", ", first ? "" : ",",
                    bench_op_name((bench_op)op), ct_device_str(dev, name, sizeof name));
            json_size(out, "from_size", a);
            fprintf(out, ", ");
            json_size(out, "from_size_with_copies", b);
            fprintf(out, "}");
            first = false;
        }
    fprintf(out, "%s],\n", first ? "" : "\n  ");
}

void bench_print_json(const bench_results *r, FILE *out) {
    char name[32];
    fprintf(out, "{\n  \"version\": \"%s\",\n  \"dtype\": \"f32\",\n  \"devices\": [",
            ct_version());
    for (int d = 0; d < r->device_count; d++)
        fprintf(out, "%s\"%s\"", d ? ", " : "", ct_device_str(r->devices[d], name, sizeof name));
    fprintf(out, "],\n  \"gpu_absent\": ");
    if (r->has_cuda)
        fprintf(out, "null");
    else
        json_string(r->gpu_absent, out);
    fprintf(out, ",\n  \"pinned_absent\": ");
    if (r->has_cuda && !r->pinned_absent[0])
        fprintf(out, "null");
    else
        json_string(r->has_cuda ? r->pinned_absent : "pinned host memory needs a CUDA device", out);
    fprintf(out, ",\n  \"measurements\": [");
    for (int i = 0; i < r->count; i++) {
        const bench_measurement *m = &r->items[i];
        fprintf(out,
                "%s\n    {\"device\": \"%s\", \"op\": \"%s\", \"size\": %lld, \"seconds\": %.9g, "
                "\"with_copies\": %s}",
                i ? "," : "", ct_device_str(m->device, name, sizeof name), bench_op_name(m->op),
                (long long)m->size, m->seconds, m->with_copies ? "true" : "false");
    }
    fprintf(out, "%s],\n", r->count ? "\n  " : "");
    json_crossovers(r, out);
    fprintf(out, "  \"wall_seconds\": %.3f\n}\n", r->wall_seconds);
}
