/* What `ctensor train` prints: a progress bar on a terminal, a line per epoch, and the
 * summary as text or one JSON object. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_impl.h"
#include "train_impl.h"

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static size_t memory_in_use(ct_device device) {
    ct_memory_statistics stats;
    return ct_memory_stats(device, &stats) == CT_OK ? stats.allocated : 0;
}

/* A loss as text: four decimals, or "nan"/"inf" (printf's "-nan" says nothing of its cause;
 * the summary gives the hint). */
static const char *loss_text(double loss, char buf[32]) {
    if (isnan(loss)) return "nan";
    if (isinf(loss)) return loss > 0 ? "inf" : "-inf";
    snprintf(buf, 32, "%.4f", loss);
    return buf;
}

/* " gpu 87% 12.3/140.0 GiB 350 W": the figures of the reading there are, "" without one. */
static const char *gpu_progress_text(gpu_usage_sampler *gpu, char *buf, size_t size) {
    gpu_usage u;
    size_t used = 0;
    buf[0] = '\0';
    if (!gpu_usage_sampler_latest(gpu, &u)) return buf;
    used += (size_t)snprintf(buf, size, " gpu");
    if (u.has_utilization && used < size)
        used += (size_t)snprintf(buf + used, size - used, " %u%%", u.utilization);
    if (u.has_memory && used < size)
        used += (size_t)snprintf(buf + used, size - used, " %.1f/%.1f GiB",
                                 mib(u.memory_used) / 1024, mib(u.memory_total) / 1024);
    if (u.has_power && used < size) snprintf(buf + used, size - used, " %.0f W", u.power_watts);
    return buf;
}

void train_progress(const train_options *o, gpu_usage_sampler *gpu, int epoch, int64_t step,
                    int64_t steps, double loss, double accuracy, double samples_per_second,
                    double eta_seconds) {
    if (!o->progress) return;
    enum { WIDTH = 24 };
    char bar[WIDTH + 1];
    int filled = steps ? (int)(WIDTH * step / steps) : WIDTH;
    for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
    bar[WIDTH] = '\0';
    int eta = (int)(eta_seconds + 0.5);
    char buf[32], usage[64];
    printf("\repoch %d/%d [%s] %lld/%lld loss %s acc %5.1f%% %7.0f samples/s ETA %d:%02d "
           "mem %.1f MiB%s ",
           epoch, o->epochs, bar, (long long)step, (long long)steps, loss_text(loss, buf),
           100 * accuracy, samples_per_second, eta / 60, eta % 60, mib(memory_in_use(o->device)),
           gpu_progress_text(gpu, usage, sizeof usage));
    fflush(stdout);
}

void train_epoch_line(const train_options *o, int epoch, double loss, double accuracy,
                      double test_accuracy, double seconds, double samples_per_second) {
    if (o->json) return;
    if (o->progress) printf("\r\033[K");
    char buf[32];
    printf("epoch %d/%d  loss %s  train acc %.2f%%  test acc %.2f%%  %.1f s  %.0f samples/s\n",
           epoch, o->epochs, loss_text(loss, buf), 100 * accuracy, 100 * test_accuracy, seconds,
           samples_per_second);
    fflush(stdout);
}

/* The warning of a GPU idle most of the run, with what to try (the loop's wait for batches
 * says which side holds it up); "" when it was busy, or the run too short to tell. */
static const char *idle_warning(const train_options *o, const train_summary *s, char *buf,
                                size_t size) {
    const gpu_usage_summary *g = &s->gpu;
    buf[0] = '\0';
    double idle = 100 - g->mean_utilization;
    if (g->samples < GPU_USAGE_MIN_SAMPLES || idle <= GPU_USAGE_IDLE_WARNING) return buf;
    double waiting = s->seconds > 0 ? 100 * s->data_seconds / s->seconds : 0;
    if (waiting >= 20)
        snprintf(buf, size,
                 "the GPU was idle %.0f%% of the time: the input pipeline or the host holds it "
                 "up; the loop waited for batches %.0f%% of the time: try more --workers (this "
                 "run: %d)",
                 idle, waiting, o->workers);
    else
        snprintf(buf, size,
                 "the GPU was idle %.0f%% of the time: the input pipeline or the host holds it "
                 "up; the steps are too small to keep it busy: try a --batch-size above %s%lld",
                 idle, o->batch_size ? "this run's " : "the one auto picked, ",
                 (long long)s->batch_size);
    return buf;
}

static void print_gpu_text(const train_options *o, const train_summary *s) {
    const gpu_usage_summary *g = &s->gpu;
    char warning[512];
    if (!g->measured) return;
    printf("  GPU usage    ");
    if (g->samples)
        printf(" %.0f%% busy on average (%d readings)", g->mean_utilization, g->samples);
    if (g->has_power) printf("%s %.0f W on average", g->samples ? "," : "", g->mean_power_watts);
    if (g->has_memory)
        printf("%s %.1f GiB in use at most", g->samples || g->has_power ? "," : "",
               mib(g->peak_memory_used) / 1024);
    printf("\n");
    if (idle_warning(o, s, warning, sizeof warning)[0]) printf("  warning       %s\n", warning);
}

static void print_text(const train_options *o, const train_summary *s) {
    const ct_transfer_statistics *t = &s->transfers;
    printf("\nsummary\n");
    printf("  model         %s, %lld parameters, %s, batch %lld\n", s->model,
           (long long)s->parameters, s->optimizer, (long long)s->batch_size);
    printf("  device        %s\n", s->device);
    printf("  precision     %s", s->precision);
    if (s->skipped_steps)
        printf(", %lld steps skipped by the loss scaler", (long long)s->skipped_steps);
    printf("\n");
    printf("  algorithms    %s\n", s->deterministic
                                       ? "deterministic (the same seed gives the same weights)"
                                       : "nondeterministic (--nondeterministic)");
    if (s->tested)
        printf("  test accuracy %.2f%% (%lld samples)%s\n", 100 * s->test_accuracy,
               (long long)s->test_samples,
               s->epochs_run ? "" : ", of the model loaded from the checkpoint");
    else
        printf("  test accuracy not measured: no epoch ended\n");
    if (s->epochs_run) {
        char buf[32];
        printf("  final loss    %s", loss_text(s->final_loss, buf));
        if (!isfinite(s->final_loss))
            printf(": training diverged; try a lower --lr (this run: %g)%s", o->lr,
                   strcmp(s->precision, "f32") ? ", or --amp off" : "");
        printf("\n");
    }
    if (s->epochs_run)
        printf("  training      %d %s of %lld samples in %.1f s: %.0f samples/s\n", s->epochs_run,
               s->epochs_run == 1 ? "epoch" : "epochs", (long long)s->train_samples, s->seconds,
               s->samples_per_second);
    else
        printf("  training      none%s\n", s->interrupted_by ? ": interrupted in the first epoch"
                                                             : ": the checkpoint was at --epochs");
    printf("  data loading  %.2f s waiting for the next batch, %.1f%% of the training time\n",
           s->data_seconds, s->seconds > 0 ? 100 * s->data_seconds / s->seconds : 0.0);
    printf("  peak memory   %.1f MiB on %s\n", mib(s->peak_memory), s->device);
    printf("  transfers     host->device %llu (%.1f MiB), device->host %llu (%.1f MiB)\n",
           (unsigned long long)(t->counters[CT_TRANSFER_H2D][0].count +
                                t->counters[CT_TRANSFER_H2D][1].count),
           mib(t->counters[CT_TRANSFER_H2D][0].bytes + t->counters[CT_TRANSFER_H2D][1].bytes),
           (unsigned long long)(t->counters[CT_TRANSFER_D2H][0].count +
                                t->counters[CT_TRANSFER_D2H][1].count),
           mib(t->counters[CT_TRANSFER_D2H][0].bytes + t->counters[CT_TRANSFER_D2H][1].bytes));
    print_gpu_text(o, s);
    train_dist_print_text(s);
    train_profile_print_text(s);
}

/* JSON has no NaN or infinity: a diverged loss is null too (the text summary says nan). */
static void json_number(const char *name, double value, bool measured) {
    if (measured && isfinite(value))
        printf(", \"%s\": %.6f", name, value);
    else
        printf(", \"%s\": null", name);
}

/* "gpu_usage": the readings' means, or null when the GPU was not read. */
static void print_gpu_json(const train_options *o, const train_summary *s) {
    const gpu_usage_summary *g = &s->gpu;
    char warning[512];
    if (!g->measured) {
        printf(", \"gpu_usage\": null");
        return;
    }
    printf(", \"gpu_usage\": {\"samples\": %d", g->samples);
    json_number("mean_utilization_percent", g->mean_utilization, g->samples > 0);
    json_number("idle_percent", 100 - g->mean_utilization, g->samples > 0);
    json_number("mean_power_watts", g->mean_power_watts, g->has_power);
    if (g->has_memory)
        printf(", \"peak_memory_used\": %llu", g->peak_memory_used);
    else
        printf(", \"peak_memory_used\": null");
    printf(", \"warning\": ");
    idle_warning(o, s, warning, sizeof warning);
    ct_cli_json_string(stdout, warning[0] ? warning : NULL);
    printf("}");
}

static void print_json(const train_options *o, const train_summary *s) {
    const ct_transfer_statistics *t = &s->transfers;
    printf("{\"model\": ");
    ct_cli_json_string(stdout, s->model);
    printf(", \"optimizer\": ");
    ct_cli_json_string(stdout, s->optimizer);
    printf(", \"device\": ");
    ct_cli_json_string(stdout, s->device);
    printf(", \"precision\": ");
    ct_cli_json_string(stdout, s->precision);
    printf(", \"skipped_steps\": %lld", (long long)s->skipped_steps);
    printf(", \"deterministic\": %s", s->deterministic ? "true" : "false");
    printf(", \"parameters\": %lld, \"batch_size\": %lld, \"epochs\": %d, \"train_samples\": %lld, "
           "\"test_samples\": %lld, \"seconds\": %.3f, \"samples_per_second\": %.1f, "
           "\"data_wait_seconds\": %.3f",
           (long long)s->parameters, (long long)s->batch_size, s->epochs_run,
           (long long)s->train_samples, (long long)s->test_samples, s->seconds,
           s->samples_per_second, s->data_seconds);
    /* A figure that was not measured is null, never a zero. */
    json_number("final_loss", s->final_loss, s->epochs_run > 0);
    json_number("train_accuracy", s->train_accuracy, s->epochs_run > 0);
    json_number("test_accuracy", s->test_accuracy, s->tested);
    printf(
        ", \"resumed_from_epoch\": %d, \"interrupted_by_signal\": %d, \"peak_memory_bytes\": %zu",
        s->checkpoint_epoch, s->interrupted_by, s->peak_memory);
    const char *names[3] = {"host_to_device", "device_to_host", "device_to_device"};
    printf(", \"transfers\": {");
    for (int d = 0; d < 3; d++)
        printf("%s\"%s\": {\"count\": %llu, \"bytes\": %llu}", d ? ", " : "", names[d],
               (unsigned long long)(t->counters[d][0].count + t->counters[d][1].count),
               (unsigned long long)(t->counters[d][0].bytes + t->counters[d][1].bytes));
    printf("}");
    print_gpu_json(o, s);
    train_dist_print_json(s);
    train_profile_print_json(s);
    printf("}\n");
    ct_cli_result_printed();
}

void train_print_summary(const train_options *o, const train_summary *s) {
    if (o->json)
        print_json(o, s);
    else
        print_text(o, s);
    fflush(stdout);
}
