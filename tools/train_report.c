/* What `ctensor train` prints: a progress bar on a terminal, a line per epoch, and the
 * summary as text or one JSON object. */
#include <stdio.h>

#include "cli_impl.h"
#include "train_impl.h"

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

static size_t memory_in_use(ct_device device) {
    ct_memory_statistics stats;
    return ct_memory_stats(device, &stats) == CT_OK ? stats.allocated : 0;
}

void train_progress(const train_options *o, int epoch, int64_t step, int64_t steps, double loss,
                    double accuracy, double samples_per_second, double eta_seconds) {
    if (!o->progress) return;
    enum { WIDTH = 24 };
    char bar[WIDTH + 1];
    int filled = steps ? (int)(WIDTH * step / steps) : WIDTH;
    for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
    bar[WIDTH] = '\0';
    int eta = (int)(eta_seconds + 0.5);
    printf("\repoch %d/%d [%s] %lld/%lld loss %.4f acc %5.1f%% %7.0f samples/s ETA %d:%02d "
           "mem %.1f MiB ",
           epoch, o->epochs, bar, (long long)step, (long long)steps, loss, 100 * accuracy,
           samples_per_second, eta / 60, eta % 60, mib(memory_in_use(o->device)));
    fflush(stdout);
}

void train_epoch_line(const train_options *o, int epoch, double loss, double accuracy,
                      double test_accuracy, double seconds, double samples_per_second) {
    if (o->json) return;
    if (o->progress) printf("\r\033[K");
    printf("epoch %d/%d  loss %.4f  train acc %.2f%%  test acc %.2f%%  %.1f s  %.0f samples/s\n",
           epoch, o->epochs, loss, 100 * accuracy, 100 * test_accuracy, seconds,
           samples_per_second);
    fflush(stdout);
}

static void print_text(const train_summary *s) {
    const ct_transfer_statistics *t = &s->transfers;
    printf("\nsummary\n");
    printf("  model         %s, %lld parameters, %s, batch %lld\n", s->model,
           (long long)s->parameters, s->optimizer, (long long)s->batch_size);
    printf("  device        %s\n", s->device);
    printf("  test accuracy %.2f%% (%lld samples)\n", 100 * s->test_accuracy,
           (long long)s->test_samples);
    printf("  training      %d %s of %lld samples in %.1f s: %.0f samples/s\n", s->epochs_run,
           s->epochs_run == 1 ? "epoch" : "epochs", (long long)s->train_samples, s->seconds,
           s->samples_per_second);
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
    train_dist_print_text(s);
}

static void print_json(const train_summary *s) {
    const ct_transfer_statistics *t = &s->transfers;
    printf("{\"model\": ");
    ct_cli_json_string(stdout, s->model);
    printf(", \"optimizer\": ");
    ct_cli_json_string(stdout, s->optimizer);
    printf(", \"device\": ");
    ct_cli_json_string(stdout, s->device);
    printf(", \"parameters\": %lld, \"batch_size\": %lld, \"epochs\": %d, \"train_samples\": %lld, "
           "\"test_samples\": %lld, \"seconds\": %.3f, \"samples_per_second\": %.1f, "
           "\"data_wait_seconds\": %.3f, \"final_loss\": %.6f, \"train_accuracy\": %.6f, "
           "\"test_accuracy\": %.6f, \"peak_memory_bytes\": %zu",
           (long long)s->parameters, (long long)s->batch_size, s->epochs_run,
           (long long)s->train_samples, (long long)s->test_samples, s->seconds,
           s->samples_per_second, s->data_seconds, s->final_loss, s->train_accuracy,
           s->test_accuracy, s->peak_memory);
    const char *names[3] = {"host_to_device", "device_to_host", "device_to_device"};
    printf(", \"transfers\": {");
    for (int d = 0; d < 3; d++)
        printf("%s\"%s\": {\"count\": %llu, \"bytes\": %llu}", d ? ", " : "", names[d],
               (unsigned long long)(t->counters[d][0].count + t->counters[d][1].count),
               (unsigned long long)(t->counters[d][0].bytes + t->counters[d][1].bytes));
    printf("}");
    train_dist_print_json(s);
    printf("}\n");
}

void train_print_summary(const train_options *o, const train_summary *s) {
    if (o->json)
        print_json(s);
    else
        print_text(s);
    fflush(stdout);
}
