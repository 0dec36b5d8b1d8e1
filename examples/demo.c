/* The device story in one run: which devices exist (and why CUDA is not usable when it is
 * not), a small computation placed on the best device present, and what it cost in
 * transfers and memory. `make demo` runs this. */
#include <stdio.h>

#include "ctensor/ctensor.h"

static void list_devices(void) {
    printf("ctensor %s\n\ndevices:\n", ct_version());
    for (int type = CT_DEVICE_CPU; type <= CT_DEVICE_CUDA; type++) {
        for (int i = 0; i < ct_device_count((ct_device_type)type); i++) {
            ct_device_properties p;
            if (ct_device_info((ct_device){(ct_device_type)type, i}, &p) != CT_OK) continue;
            char name[32];
            printf("  %-8s %s, %.1f GiB memory (%.1f GiB free), %d %s\n",
                   ct_device_str(p.device, name, sizeof name), p.name,
                   p.memory_total / 1073741824.0, p.memory_free / 1073741824.0, p.multiprocessors,
                   type == CT_DEVICE_CUDA ? "multiprocessors" : "cores");
        }
    }
    if (!ct_cuda_is_available()) printf("  (no GPU: %s)\n", ct_cuda_unavailable_reason());
}

/* A two-layer forward pass on `device`: relu(x @ w1) @ w2, reduced to its mean. */
static int compute(ct_device device) {
    int64_t batch = 256, features = 512, hidden = 1024, classes = 10;
    ct_manual_seed(42);
    ct_scope_begin();
    ct_tensor *x = ct_randn(2, (int64_t[]){batch, features}, CT_F32, device);
    ct_tensor *w1 =
        ct_mul_scalar(ct_randn(2, (int64_t[]){features, hidden}, CT_F32, device), 0.044);
    ct_tensor *w2 = ct_mul_scalar(ct_randn(2, (int64_t[]){hidden, classes}, CT_F32, device), 0.031);
    ct_tensor *logits = ct_matmul(ct_relu(ct_matmul(x, w1)), w2);
    ct_tensor *per_class = ct_mean(logits, 1, (int[]){0}, false);
    double mean = 0.0;
    ct_status status = ct_item(ct_mean(logits, 0, NULL, false), &mean);
    if (!per_class || status != CT_OK) {
        fprintf(stderr, "demo failed: %s: %s\n", ct_status_name(ct_last_status()), ct_last_error());
        ct_scope_end();
        return 1;
    }
    char name[32];
    printf("\nforward pass relu(x @ w1) @ w2 with x (%lld, %lld) on %s:\n", (long long)batch,
           (long long)features, ct_device_str(ct_device_of(logits), name, sizeof name));
    printf("mean logit per class = ");
    ct_print(per_class);
    printf("mean logit = %.6f\n", mean);
    ct_scope_end();
    return 0;
}

static void report_counters(ct_device device) {
    ct_transfer_statistics t;
    ct_transfer_stats(&t);
    static const char *const directions[3] = {"host->device", "device->host", "device->device"};
    printf("\ntransfers (explicit / implicit):\n");
    for (int d = 0; d < 3; d++)
        printf(
            "  %-15s %llu / %llu copies, %llu / %llu bytes\n", directions[d],
            (unsigned long long)t.counters[d][0].count, (unsigned long long)t.counters[d][1].count,
            (unsigned long long)t.counters[d][0].bytes, (unsigned long long)t.counters[d][1].bytes);
    ct_memory_statistics m;
    char name[32];
    if (ct_memory_stats(device, &m) == CT_OK)
        printf("memory on %s: %.2f MiB allocated, %.2f MiB peak, %.2f MiB reserved, "
               "%llu allocations (%llu from the cache)\n",
               ct_device_str(device, name, sizeof name), m.allocated / 1048576.0,
               m.peak_allocated / 1048576.0, m.reserved / 1048576.0,
               (unsigned long long)m.alloc_count, (unsigned long long)m.cache_hits);
}

int main(void) {
    list_devices();
    ct_device device;
    if (ct_device_parse("auto", &device) != CT_OK) return 1;
    char name[32];
    printf("\nbest device present (\"auto\"): %s\n", ct_device_str(device, name, sizeof name));
    int status = compute(device);
    report_counters(device);
    return status;
}
