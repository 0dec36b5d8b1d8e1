/* `ctensor doctor`'s checks of each CUDA device: its architecture against the build's (native
 * code, PTX through the driver's JIT, or neither), a small elementwise kernel and a cuBLAS
 * matmul run on it and compared with the CPU's results, and whether NVML reads how busy it
 * is (which `ctensor train` reports, to tell a GPU that waits for the host). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_impl.h"
#include "gpu_usage.h"

/* Whether a list such as "80,90" covers compute capability cc (major*10 + minor): native
 * code needs the same major and a minor no higher; PTX an architecture no higher. */
static bool arch_covers(const char *list, int cc, bool ptx) {
    const char *s = list;
    while (*s) {
        char *end;
        long arch = strtol(s, &end, 10);
        if (end == s) break;
        if (ptx ? arch <= cc : (arch / 10 == cc / 10 && arch % 10 <= cc % 10)) return true;
        s = *end == ',' ? end + 1 : end;
    }
    return false;
}

/* False when the build has no code the device can run. */
static bool check_arch(doctor_report *r, const ct_cuda_build_info *info,
                       const ct_device_properties *p, const char *dev) {
    char name[48], fix[128];
    int cc = p->compute_capability_major * 10 + p->compute_capability_minor;
    snprintf(name, sizeof name, "%s architecture", dev);
    snprintf(fix, sizeof fix, "rebuild with %d-real added to -DCT_CUDA_ARCHITECTURES", cc);
    if (!info->real_archs[0] && !info->ptx_archs[0]) {
        doctor_add(r, name, CHECK_PASS, DOCTOR_OK, NULL,
                   "%s, compute capability %d.%d; the build's architectures are not known "
                   "(native or all)",
                   p->name, p->compute_capability_major, p->compute_capability_minor);
        return true;
    }
    if (arch_covers(info->real_archs, cc, false)) {
        doctor_add(r, name, CHECK_PASS, DOCTOR_OK, NULL,
                   "%s, compute capability %d.%d: native code (build: sm_%s, PTX %s)", p->name,
                   p->compute_capability_major, p->compute_capability_minor, info->real_archs,
                   info->ptx_archs[0] ? info->ptx_archs : "none");
        return true;
    }
    if (arch_covers(info->ptx_archs, cc, true)) {
        doctor_add(r, name, CHECK_WARN, DOCTOR_OK, fix,
                   "%s, compute capability %d.%d: PTX JIT (compute_%s), the first launch of "
                   "each kernel is slow",
                   p->name, p->compute_capability_major, p->compute_capability_minor,
                   info->ptx_archs);
        return true;
    }
    doctor_add(r, name, CHECK_FAIL, DOCTOR_NO_GPU, fix,
               "%s, compute capability %d.%d: neither native code (sm_%s) nor PTX "
               "(compute_%s) in the build can run on it",
               p->name, p->compute_capability_major, p->compute_capability_minor, info->real_archs,
               info->ptx_archs[0] ? info->ptx_archs : "none");
    return false;
}

#define TEST_N 64 /* the matmul is TEST_N x TEST_N; the elementwise add has TEST_N^2 values */

/* max |x - y| over two float32 tensors of TEST_N^2 values, INFINITY when either cannot
 * be read (a failed op gives NULL). */
static double max_difference(const ct_tensor *x, const ct_tensor *y) {
    static float a[TEST_N * TEST_N], b[TEST_N * TEST_N];
    if (!x || !y || ct_copy_to_host(x, a, sizeof a) != CT_OK ||
        ct_copy_to_host(y, b, sizeof b) != CT_OK)
        return INFINITY;
    double worst = 0.0;
    for (int i = 0; i < TEST_N * TEST_N; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst;
}

/* ct_add and ct_matmul of random values in [0, 1) on the device and on the CPU. The matmul
 * sums TEST_N products near 1/4 in f32: a summation order of its own gives differences
 * near 1e-5; the tolerance also admits TF32 (2^-11 relative, ct_set_matmul_precision). */
static void self_test(doctor_report *r, ct_device device, const char *dev) {
    const int64_t shape[2] = {TEST_N, TEST_N};
    char name[48];
    ct_clear_error();
    ct_tensor *a = ct_rand(2, shape, CT_F32, CT_CPU), *b = ct_rand(2, shape, CT_F32, CT_CPU);
    ct_tensor *ga = ct_to(a, device), *gb = ct_to(b, device);
    ct_tensor *sum = ct_add(a, b), *gsum = ct_add(ga, gb);
    ct_tensor *product = ct_matmul(a, b), *gproduct = ct_matmul(ga, gb);
    double add_diff = max_difference(sum, gsum), matmul_diff = max_difference(product, gproduct);
    const char *error = ct_last_status() != CT_OK ? ct_last_error() : "";
    snprintf(name, sizeof name, "%s self-test", dev);
    if (add_diff <= 1e-6 && matmul_diff <= 1e-2)
        doctor_add(r, name, CHECK_PASS, DOCTOR_OK, NULL,
                   "ct_add and ct_matmul (%dx%d) match the CPU: max abs difference %.3g and "
                   "%.3g",
                   TEST_N, TEST_N, add_diff, matmul_diff);
    else
        doctor_add(r, name, CHECK_FAIL, DOCTOR_BROKEN,
                   "run tools/gpu-check.sh and report its output; use the CPU meanwhile",
                   "results differ from the CPU's: ct_add by %g, ct_matmul by %g %s", add_diff,
                   matmul_diff, error);
    ct_tensor *all[] = {a, b, ga, gb, sum, gsum, product, gproduct};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ct_release(all[i]);
}

/* NVML's figures of the device now. Never a failure: without NVML the GPU works as well, but
 * `ctensor train` cannot say whether it kept the GPU busy. */
static void check_usage(doctor_report *r, ct_device device, const char *dev) {
    char name[48], text[128];
    gpu_usage u;
    snprintf(name, sizeof name, "%s usage", dev);
    if (gpu_usage_read(gpu_usage_find(device), &u)) {
        doctor_add(r, name, CHECK_PASS, DOCTOR_OK, NULL,
                   "%s now (NVML); `ctensor train` reports the GPU's mean utilisation and warns "
                   "when the GPU was idle most of the run (the input pipeline or the host holds "
                   "it up)",
                   gpu_usage_text(&u, text, sizeof text));
        return;
    }
    const char *reason = gpu_usage_unavailable_reason();
    doctor_add(r, name, CHECK_SKIP, DOCTOR_OK, NULL,
               "not read: %s; `ctensor train` cannot tell whether the GPU was busy (nvidia-smi "
               "shows its utilisation while training runs)",
               reason[0] ? reason : "NVML does not know this device (a MIG instance?)");
}

void doctor_check_gpus(doctor_report *r, const ct_cuda_build_info *info) {
    if (!ct_cuda_is_available()) {
        doctor_add(r, "GPU architecture and self-test", CHECK_SKIP, DOCTOR_OK, NULL,
                   "not run: no usable CUDA device");
        return;
    }
    ct_device gpus[64];
    int count = ct_cli_list_devices(gpus, 64, true);
    for (int i = 0; i < count && i < 64; i++) {
        ct_device device = gpus[i];
        ct_device_properties p;
        char dev[32];
        ct_device_str(device, dev, sizeof dev);
        if (ct_device_info(device, &p) != CT_OK) {
            doctor_add(r, dev, CHECK_FAIL, DOCTOR_NO_GPU, "see nvidia-smi for the device's state",
                       "its properties cannot be read: %s", ct_last_error());
            continue;
        }
        if (check_arch(r, info, &p, dev)) {
            self_test(r, device, dev);
            check_usage(r, device, dev);
        } else
            doctor_add(r, dev, CHECK_SKIP, DOCTOR_OK, NULL,
                       "self-test not run: the build cannot run on this device");
    }
}
