/* `ctensor bench --plot FILE`: the chart, drawn by gnuplot through a pipe. One panel per op
 * (and one for the host<->device copies when a GPU was measured), time per call against
 * size on log-log axes, one line per device, dashed with the copies (in the copies panel: from or
 * into pinned memory). The terminal follows the file's extension: svg, or pngcairo for .png. The
 * data goes inline as gnuplot data blocks, so no temporary file is left behind. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_impl.h"
#include "bench_impl.h"

bool bench_have_gnuplot(void) {
    const char *path = getenv("PATH");
    if (!path) return false;
    char dir[4096];
    while (*path) {
        size_t n = strcspn(path, ":");
        snprintf(dir, sizeof dir, "%.*s/gnuplot", (int)(n ? n : 1), n ? path : ".");
        if (access(dir, X_OK) == 0) return true;
        path += n + (path[n] == ':');
    }
    return false;
}

/* A gnuplot double-quoted string: backslashes and quotes escaped. */
static void quoted(FILE *gp, const char *s) {
    fputc('"', gp);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', gp);
        if (*s != '\n') fputc(*s, gp);
    }
    fputc('"', gp);
}

/* Series `series` of a panel: device d's measurements of op with or without the copies. */
typedef struct series {
    bench_op op;
    ct_device device;
    bool with_copies;
    int color;
} series;

static int series_points(const bench_results *r, const series *s, FILE *gp) {
    int n = 0;
    for (int i = 0; i < r->count; i++) {
        const bench_measurement *m = &r->items[i];
        if (m->op != s->op || !ct_device_equal(m->device, s->device) ||
            m->with_copies != s->with_copies)
            continue;
        if (gp) fprintf(gp, "%lld %.9g\n", (long long)m->size, m->seconds);
        n++;
    }
    return n;
}

/* Series per device and panel at most: a compute op without and with the copies, or the
 * four copies (to and from the device, pageable and pinned). */
#define SERIES_PER_DEVICE 4

/* The series of panel p (0..3: the compute ops; 4: the copies); returns how many. A copy's
 * colour tells its device and direction; pinned copies are dashed (plot_panel). */
static int panel_series(const bench_results *r, int p, series *out) {
    int n = 0;
    for (int d = 0; d < r->device_count; d++) {
        ct_device dev = r->devices[d];
        for (int k = 0; k < (p < BENCH_COMPUTE_OPS ? 2 : SERIES_PER_DEVICE); k++) {
            series s = {p < BENCH_COMPUTE_OPS ? (bench_op)p : (bench_op)(BENCH_COPY_H2D + k), dev,
                        p < BENCH_COMPUTE_OPS ? k == 1 : true, d + 1};
            if (p == BENCH_COMPUTE_OPS) s.color = 2 * d + k % 2 + 1;
            if (series_points(r, &s, NULL) > 0) out[n++] = s;
        }
    }
    return n;
}

static bool is_pinned_copy(bench_op op) {
    return op == BENCH_COPY_H2D_PINNED || op == BENCH_COPY_D2H_PINNED;
}

static void series_title(const series *s, FILE *gp) {
    char name[32], title[96];
    ct_device_str(s->device, name, sizeof name);
    if (bench_is_copy(s->op))
        snprintf(title, sizeof title, "%s %s, %s", name,
                 s->op == BENCH_COPY_H2D || s->op == BENCH_COPY_H2D_PINNED ? "host to device"
                                                                           : "device to host",
                 is_pinned_copy(s->op) ? "pinned" : "pageable");
    else if (bench_is_compared(s->device))
        snprintf(title, sizeof title, "%s %s", name,
                 s->with_copies ? "with copies in and out" : "data on the device");
    else
        snprintf(title, sizeof title, "%s", name);
    quoted(gp, title);
}

static void panel_axes(int p, FILE *gp) {
    static const char *const titles[] = {
        "matmul, n x n by n x n", "elementwise add", "sum of all elements",
        "conv2d 3x3, 16 to 16 channels, padding 1", "host <-> device copies"};
    fprintf(gp, "set title ");
    quoted(gp, titles[p]);
    fprintf(gp, " noenhanced\n");
    if (p == BENCH_MATMUL) {
        fprintf(gp, "set xlabel \"n (matrix side)\"\nset format x \"%%g\"\n");
    } else if (p == BENCH_CONV2D) {
        fprintf(gp, "set xlabel \"input elements (f32, 1 x 16 x H x W, H = W)\"\n"
                    "set format x \"2^{%%L}\"\n");
    } else if (p < BENCH_COMPUTE_OPS) {
        fprintf(gp, "set xlabel \"elements (f32)\"\nset format x \"2^{%%L}\"\n");
    } else {
        fprintf(gp, "set xlabel \"bytes copied (pageable host memory, and pinned: dashed)\"\n"
                    "set xtics (\"4 KiB\" 4096, \"64 KiB\" 65536, \"1 MiB\" 1048576, "
                    "\"16 MiB\" 16777216, \"256 MiB\" 268435456, \"1 GiB\" 1073741824)\n");
    }
}

static void plot_panel(const bench_results *r, int p, FILE *gp) {
    series s[SERIES_PER_DEVICE * (1 + 2 * CT_MAX_LOGICAL_DEVICES)];
    int n = panel_series(r, p, s);
    fprintf(gp, "set xtics autofreq\n");
    panel_axes(p, gp);
    fprintf(gp, "plot ");
    for (int i = 0; i < n; i++) {
        fprintf(gp, "%s$p%d_%d with linespoints lw 2 pt 7 ps 0.6 lc %d dt %d title ",
                i ? ", \\\n     " : "", p, i, s[i].color,
                (p < BENCH_COMPUTE_OPS ? s[i].with_copies : is_pinned_copy(s[i].op)) ? 2 : 1);
        series_title(&s[i], gp);
    }
    if (n == 0) fprintf(gp, "NaN notitle");
    fprintf(gp, "\n");
}

static void write_data_blocks(const bench_results *r, int panels, FILE *gp) {
    series s[SERIES_PER_DEVICE * (1 + 2 * CT_MAX_LOGICAL_DEVICES)];
    for (int p = 0; p < panels; p++) {
        int n = panel_series(r, p, s);
        for (int i = 0; i < n; i++) {
            fprintf(gp, "$p%d_%d << EOD\n", p, i);
            series_points(r, &s[i], gp);
            fprintf(gp, "EOD\n");
        }
    }
}

static void write_script(const bench_results *r, const char *path, FILE *gp) {
    bool png = strlen(path) >= 4 && strcmp(path + strlen(path) - 4, ".png") == 0;
    /* The compute ops, then the copies when a GPU was measured: 2 x 2 or 2 x 3 panels. */
    int panels = BENCH_COMPUTE_OPS + (r->has_cuda ? 1 : 0), columns = (panels + 1) / 2;
    int width = columns == 3 ? 1650 : 1300, height = 1000;
    fprintf(gp,
            "set encoding utf8\nset terminal %s size %d,%d font \"sans,%d\" background "
            "\"white\"\nset output ",
            png ? "pngcairo" : "svg", width, height, png ? 11 : 13);
    quoted(gp, path);
    fprintf(gp, "\n");
    write_data_blocks(r, panels, gp);
    ct_device_properties cpu;
    char title[1024], when[32];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%d", gmtime(&now));
    bool named = ct_device_info(CT_CPU, &cpu) == CT_OK;
    /* The reason's first clause ("no NVIDIA driver"); the table gives it whole. */
    int reason = (int)strcspn(r->gpu_absent, ":;(");
    snprintf(title, sizeof title,
             "ctensor bench %s: f32, time per call (lower is better); %s%s%.*s", when,
             named ? cpu.name : "", r->has_cuda ? "" : "; no GPU: ", reason, r->gpu_absent);
    fprintf(gp, "set multiplot layout 2,%d title ", columns);
    quoted(gp, title);
    fprintf(gp, " noenhanced\nset logscale xy 2\nset grid xtics ytics mytics\nset key top left "
                "box opaque\nset ylabel \"time per call\"\nset ytics (\"1 ns\" 1e-9, \"10 ns\" "
                "1e-8, \"100 ns\" 1e-7, \"1 µs\" 1e-6, \"10 µs\" 1e-5, \"100 µs\" 1e-4, \"1 ms\" "
                "1e-3, \"10 ms\" 1e-2, \"100 ms\" 0.1, \"1 s\" 1, \"10 s\" 10, \"100 s\" 100)\n");
    for (int p = 0; p < panels; p++) plot_panel(r, p, gp);
    fprintf(gp, "unset multiplot\nset output\n");
}

/* Seconds gnuplot may take to draw: timeout(1) ends it then, so pclose's wait ends. */
#define GNUPLOT_TIMEOUT 120

bool bench_plot(const bench_results *r, const char *path) {
    /* A gnuplot that stops reading must give its error, not kill this process with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    char command[64];
    snprintf(command, sizeof command, "timeout %d gnuplot", GNUPLOT_TIMEOUT);
    FILE *gp = popen(command, "w");
    if (!gp) {
        ct_cli_fail("--plot: cannot run gnuplot (Debian package gnuplot-nox)");
        return false;
    }
    write_script(r, path, gp);
    int status = pclose(gp);
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 124) {
        ct_cli_fail("--plot: gnuplot did not finish drawing %s within %d s; stopped", path,
                    GNUPLOT_TIMEOUT);
        return false;
    }
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        ct_cli_fail("--plot: gnuplot failed drawing %s (see its messages "
                    "above)",
                    path);
        return false;
    }
    return true;
}
