/* `ctensor bench`: how long matmul, add, sum and conv2d take on each device present at sizes from
 * tiny to large, on the GPU with and without the copies in and out, what host<->device copies
 * cost, and from which size the GPU wins. This file parses the options, checks them before
 * anything is measured (a bad one costs no minute of benchmarking), and runs the plan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_impl.h"
#include "cli_impl.h"

typedef struct bench_options {
    bool quick, json, has_device;
    int logical_cpus;
    ct_device device;
    const char *device_text, *csv_path, *plot_path;
    FILE *csv;
} bench_options;

static void usage(FILE *out) {
    fprintf(out,
            "usage: ctensor bench [--device D] [--logical-cpus N] [--quick] [--csv FILE]\n"
            "                     [--plot FILE] [--json]\n"
            "\n"
            "Times f32 matmul (n x n, n = 16..4096), elementwise add and sum (2^6..2^26\n"
            "elements) and conv2d (a 1 x 16 x H x W image, H = W = 2..2048, so 2^6..2^26\n"
            "elements in even powers; 3 x 3 kernel to 16 channels, padding 1, no bias) on\n"
            "every device present: cpu:0, the logical CPU devices of --logical-cpus, and each\n"
            "cuda:N, where it is timed with the data already on the GPU and again with the\n"
            "copies in (ct_to) and out (ct_copy_to_host). On CUDA devices it also times\n"
            "host<->device copies from 4 KiB to 1 GiB, both ways, from and into pageable host\n"
            "memory (staged by ctensor through its own pinned buffers) and pinned host memory\n"
            "(ct_pin_memory: one direct DMA). Prints a table and, per op, the size from which\n"
            "the GPU beats the CPU. Takes under a minute; --quick a few seconds.\n"
            "\n"
            "  --device D   only D (\"cpu\", \"cuda:1\", ...; cpu:0 is kept as the baseline)\n"
            "  --logical-cpus N  split the CPU into N logical devices (2..16) first; cpu:1 and\n"
            "               up are measured as a GPU is, copies included (same cores: they\n"
            "               show what the copies cost, not a faster device)\n"
            "  --quick      fewer and smaller sizes, shorter timing\n"
            "  --csv FILE   every measurement: device,op,size,seconds,with_copies (size: n for\n"
            "               matmul, elements for add and sum, the input's elements 16 x H x W\n"
            "               for conv2d, bytes for copy_h2d, copy_d2h, copy_h2d_pinned,\n"
            "               copy_d2h_pinned)\n"
            "  --plot FILE  a chart (.svg or .png) drawn with gnuplot (package gnuplot-nox)\n"
            "  --json       a JSON object instead of the table\n"
            "\n" CT_CLI_EXIT_STATUS_HELP);
}

/* One line on stderr, exit status 2: for every bad option. */
static int bad_option(const char *what, const char *detail) {
    return ct_cli_usage_error("%s%s", what, detail ? detail : "");
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int check_logical_cpus(bench_options *o, const char *text) {
    char *end;
    long n = strtol(text, &end, 10);
    if (*end || end == text || n < 2 || n > CT_MAX_LOGICAL_DEVICES)
        return bad_option("--logical-cpus: expected a count from 2 to 16, not: ", text);
    o->logical_cpus = (int)n;
    return 0;
}

/* After every option is read, so --device may name a logical device of --logical-cpus. */
static int setup_devices(bench_options *o) {
    if (o->logical_cpus &&
        ct_configure_logical_devices(CT_DEVICE_CPU, 0, o->logical_cpus, NULL) != CT_OK)
        return bad_option("--logical-cpus: ", ct_last_error());
    if (!o->device_text) return 0;
    if (ct_device_parse(o->device_text, &o->device) != CT_OK || ct_device_check(o->device) != CT_OK)
        return bad_option("--device: ", ct_last_error());
    o->has_device = true;
    return 0;
}

/* The chart's file must be .svg or .png, writable, and gnuplot must be there to draw it. */
static int check_plot(const char *path) {
    if (!has_suffix(path, ".svg") && !has_suffix(path, ".png"))
        return bad_option("--plot: the file name must end in .svg or .png, not: ", path);
    if (!bench_have_gnuplot())
        return bad_option("--plot needs gnuplot, which is not on PATH: install the Debian "
                          "package gnuplot-nox (apt-get install gnuplot-nox, or make deps)",
                          NULL);
    FILE *f = fopen(path, "w");
    if (!f) {
        return ct_cli_usage_error("--plot: cannot write %s: %s", path, strerror(errno));
    }
    fclose(f);
    return 0;
}

/* The options, each given once: the flags first, then those that take a value. */
static const char *const options[] = {"--quick", "--json",         "--device",
                                      "--csv",   "--logical-cpus", "--plot"};
#define OPTION_COUNT (sizeof options / sizeof options[0])
#define FIRST_WITH_VALUE 2

static int parse_options(bench_options *o, int argc, char **argv) {
    bool given[OPTION_COUNT] = {false};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        size_t k = 0;
        while (k < OPTION_COUNT && strcmp(a, options[k])) k++;
        if (k == OPTION_COUNT) return bad_option("unknown option (see ctensor bench --help): ", a);
        if (given[k])
            return ct_cli_usage_error("%s is given twice: give it once (see ctensor bench --help)",
                                      a);
        given[k] = true;
        bool takes_value = k >= FIRST_WITH_VALUE;
        if (takes_value && i + 1 >= argc) return bad_option(a, " needs a value");
        if (takes_value && !argv[i + 1][0])
            return ct_cli_usage_error("%s is empty: give it a value (see ctensor bench --help)", a);
        int status = 0;
        if (!strcmp(a, "--quick")) {
            o->quick = true;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--device")) {
            o->device_text = argv[++i];
        } else if (!strcmp(a, "--logical-cpus")) {
            status = check_logical_cpus(o, argv[++i]);
        } else if (!strcmp(a, "--csv")) {
            o->csv_path = argv[++i];
        } else {
            o->plot_path = argv[++i];
            status = check_plot(o->plot_path);
        }
        if (status) return status;
    }
    int status = setup_devices(o);
    if (status) return status;
    if (o->csv_path && !(o->csv = fopen(o->csv_path, "w"))) {
        return ct_cli_usage_error("--csv: cannot write %s: %s", o->csv_path, strerror(errno));
    }
    return 0;
}

/* The devices to measure, cpu:0 first (every crossover is against it). */
static void choose_devices(bench_results *r, const bench_options *o) {
    r->devices[r->device_count++] = CT_CPU;
    if (o->has_device) {
        if (!ct_device_equal(o->device, CT_CPU)) r->devices[r->device_count++] = o->device;
    } else {
        ct_device devices[2 * CT_MAX_LOGICAL_DEVICES];
        int count = ct_cli_list_devices(devices, 2 * CT_MAX_LOGICAL_DEVICES, false);
        for (int i = 0; i < count && i < 2 * CT_MAX_LOGICAL_DEVICES; i++)
            if (bench_is_compared(devices[i])) r->devices[r->device_count++] = devices[i];
    }
    for (int i = 0; i < r->device_count; i++)
        if (!ct_device_is_host(r->devices[i])) r->has_cuda = true;
    if (!r->has_cuda) {
        const char *why = ct_cuda_unavailable_reason();
        snprintf(r->gpu_absent, sizeof r->gpu_absent, "%s",
                 ct_cuda_is_available() ? "not asked for (--device)"
                 : why[0]               ? why
                                        : "no CUDA device");
    }
}

/* The table or the JSON object; with --json after a failed measurement, the error object
 * (ct_cli_end) instead: stdout holds one JSON object either way. */
static bool write_outputs(const bench_results *r, const bench_options *o, bool measured) {
    bool ok = measured;
    if (!o->json) {
        bench_print_table(r, stdout);
    } else if (measured) {
        bench_print_json(r, stdout);
        ct_cli_result_printed();
    }
    if (o->csv) {
        bool written = bench_write_csv(r, o->csv);
        if (fclose(o->csv) != 0 || !written) {
            ct_cli_fail("--csv: writing %s failed", o->csv_path);
            ok = false;
        }
    }
    if (o->plot_path) ok = bench_plot(r, o->plot_path) && ok;
    return ok;
}

int ct_cli_bench(int argc, char **argv) {
    bench_options o = {0};
    int status = parse_options(&o, argc, argv);
    if (status) {
        if (o.csv) fclose(o.csv);
        return status < 0 ? 0 : status;
    }
    bench_results r = {0};
    bench_plan plan = {o.quick ? 0.01 : 0.3, o.quick, isatty(STDERR_FILENO) != 0};
    choose_devices(&r, &o);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    bool ok = true;
    for (int i = 0; i < r.device_count; i++)
        ok = bench_device(&r, &plan, r.devices[i], bench_is_compared(r.devices[i])) && ok;
    clock_gettime(CLOCK_MONOTONIC, &end);
    r.wall_seconds =
        (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
    ok = write_outputs(&r, &o, ok);
    free(r.items);
    return ok ? 0 : 1;
}

bool bench_add(bench_results *r, bench_measurement m) {
    if (r->count == r->capacity) {
        int capacity = r->capacity ? 2 * r->capacity : 64;
        bench_measurement *items = realloc(r->items, (size_t)capacity * sizeof *items);
        if (!items) {
            ct_cli_fail("out of memory for the results");
            return false;
        }
        r->items = items;
        r->capacity = capacity;
    }
    r->items[r->count++] = m;
    return true;
}

bool bench_is_compared(ct_device device) { return !ct_device_equal(device, CT_CPU); }

const char *bench_op_name(bench_op op) {
    static const char *const names[BENCH_OP_COUNT] = {
        [BENCH_MATMUL] = "matmul",
        [BENCH_ADD] = "add",
        [BENCH_SUM] = "sum",
        [BENCH_CONV2D] = "conv2d",
        [BENCH_COPY_H2D] = "copy_h2d",
        [BENCH_COPY_D2H] = "copy_d2h",
        [BENCH_COPY_H2D_PINNED] = "copy_h2d_pinned",
        [BENCH_COPY_D2H_PINNED] = "copy_d2h_pinned",
    };
    return op < BENCH_OP_COUNT ? names[op] : "?";
}

const char *bench_size_unit(bench_op op) {
    if (op == BENCH_MATMUL) return "n (n x n matrices)";
    if (op == BENCH_CONV2D)
        return "elements (f32) of the 1 x 16 x H x W input, H = W; 3 x 3 kernel to 16 "
               "channels, padding 1";
    return bench_is_copy(op) ? "bytes" : "elements (f32)";
}
