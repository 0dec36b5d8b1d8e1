/* `ctensor devices`: every physical and logical device with its memory and capability, the
 * CPU's SIMD features and BLAS, and the device "auto" picks; why CUDA is absent if it is. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli_impl.h"
#include "ctensor/ctensor.h"
#include "gpu_usage.h"

static const char devices_help[] =
    "usage: ctensor devices [--json]\n\n"
    "Lists the physical and logical devices: name, type, index, total and free memory, the\n"
    "memory limit, compute capability and multiprocessors (GPU), cores, SIMD features and\n"
    "BLAS (CPU), and the device \"auto\" picks. Without a usable GPU it says why.\n"
    "Each GPU's utilisation, memory in use and power now, where NVML (libnvidia-ml.so.1,\n"
    "part of the NVIDIA driver) can read them.\n"
    "\n"
    "  --json   one JSON object instead of the table\n"
    "  --help   this text\n\n" CT_CLI_EXIT_STATUS_HELP
    "(1 here: a device's properties cannot be read; it is listed with the reason)\n";

/* "12.3 GiB", or "-" for 0 (unknown or no limit). */
static const char *bytes_text(size_t bytes, char *buf, size_t size) {
    if (bytes == 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.1f GiB", (double)bytes / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

static void print_row(const ct_device_properties *p) {
    char dev[32], total[32], free_text[32], limit[32], cc[16];
    ct_device_str(p->device, dev, sizeof dev);
    bool gpu = !ct_device_is_host(p->device);
    if (gpu)
        snprintf(cc, sizeof cc, "%d.%d", p->compute_capability_major, p->compute_capability_minor);
    else
        snprintf(cc, sizeof cc, "-");
    printf("%-8s %-4s %5d %-8s %-36.36s %10s %10s %10s %4s %5d\n", dev,
           ct_device_type_name(p->device.type), p->device.index,
           p->is_logical ? "logical" : "physical", p->name,
           bytes_text(p->memory_total, total, sizeof total),
           bytes_text(p->memory_free, free_text, sizeof free_text),
           bytes_text(p->memory_limit, limit, sizeof limit), cc, p->multiprocessors);
}

static void json_row(const ct_device_properties *p, const ct_cli_cpu *cpu, const ct_cli_blas *blas,
                     bool first) {
    char dev[32];
    printf("%s\n    {\"device\": ", first ? "" : ",");
    ct_cli_json_string(stdout, ct_device_str(p->device, dev, sizeof dev));
    printf(", \"type\": \"%s\", \"index\": %d, \"physical_index\": %d, \"logical\": %s, "
           "\"name\": ",
           ct_device_type_name(p->device.type), p->device.index, p->physical_index,
           p->is_logical ? "true" : "false");
    ct_cli_json_string(stdout, p->name);
    printf(", \"memory_total\": %zu, \"memory_free\": %zu, \"memory_limit\": %zu", p->memory_total,
           p->memory_free, p->memory_limit);
    if (!ct_device_is_host(p->device)) {
        gpu_usage u;
        printf(", \"compute_capability\": \"%d.%d\", \"multiprocessors\": %d, \"usage\": ",
               p->compute_capability_major, p->compute_capability_minor, p->multiprocessors);
        if (gpu_usage_read(gpu_usage_find(p->device), &u)) {
            printf("{\"source\": \"nvml\"");
            gpu_usage_json(stdout, &u);
            printf("}}");
        } else {
            printf("null}");
        }
        return;
    }
    printf(", \"cores\": %d, \"simd\": {\"avx2\": %s, \"avx512f\": %s, \"avx512_bf16\": %s, "
           "\"f16c\": %s, \"fma\": %s}, \"native_bf16\": %s, \"bf16_speedup\": %.2f, "
           "\"fast_bf16\": %s, \"blas\": ",
           cpu->cores, cpu->avx2 ? "true" : "false", cpu->avx512f ? "true" : "false",
           cpu->avx512_bf16 ? "true" : "false", cpu->f16c ? "true" : "false",
           cpu->fma ? "true" : "false", ct_cpu_has_native_bf16() ? "true" : "false",
           ct_cpu_bf16_speedup(), ct_cpu_has_fast_bf16() ? "true" : "false");
    ct_cli_json_string(stdout, blas->config);
    printf(", \"blas_threads\": %d, \"openmp_threads\": %d, \"kernels\": ", blas->threads,
           blas->omp_threads);
    ct_cli_json_string(stdout, ct_cpu_kernels());
    printf("}");
}

/* Every device of every type, the table's rows or the JSON array's entries; 1 when a
 * device's properties could not be read. */
static int list_devices(bool json, const ct_cli_cpu *cpu, const ct_cli_blas *blas) {
    ct_device devices[128];
    int count = ct_cli_list_devices(devices, 128, false), status = 0;
    for (int i = 0; i < count && i < 128; i++) {
        ct_device_properties p;
        char dev[32];
        /* A device whose properties cannot be read is still listed, with the reason. */
        if (ct_device_info(devices[i], &p) != CT_OK) {
            ct_device_str(devices[i], dev, sizeof dev);
            if (json) {
                printf("%s\n    {\"device\": \"%s\", \"error\": ", i ? "," : "", dev);
                ct_cli_json_string(stdout, ct_last_error());
                printf("}");
            } else {
                printf("%-8s %s\n", dev, ct_last_error());
            }
            status = 1;
        } else if (json)
            json_row(&p, cpu, blas, i == 0);
        else
            print_row(&p);
    }
    return status;
}

/* A line for each physical GPU NVML reads: "GPU 0 now: 35% busy, ...". */
static void print_usage_lines(void) {
    bool printed[64] = {false};
    ct_device gpus[64];
    int count = ct_cli_list_devices(gpus, 64, true);
    for (int i = 0; i < count && i < 64; i++) {
        ct_device device = gpus[i];
        ct_device_properties p;
        gpu_usage u;
        char text[128];
        if (ct_device_info(device, &p) != CT_OK) {
            ct_clear_error();
            continue;
        }
        if (p.physical_index < 0 || p.physical_index >= 64 || printed[p.physical_index]) continue;
        printed[p.physical_index] = true;
        if (gpu_usage_read(gpu_usage_find(device), &u))
            printf("GPU %d now: %s (NVML)\n", p.physical_index,
                   gpu_usage_text(&u, text, sizeof text));
    }
}

int ct_cli_devices(int argc, char **argv) {
    bool json;
    int status = ct_cli_parse_flags(argc, argv, &json, devices_help);
    if (status >= 0) return status;
    ct_cli_cpu cpu;
    ct_cli_blas blas;
    ct_cli_cpu_info(&cpu);
    ct_cli_blas_info(&blas);
    ct_device chosen = CT_CPU;
    char picked[32];
    if (ct_device_parse("auto", &chosen) != CT_OK) chosen = CT_CPU;
    ct_device_str(chosen, picked, sizeof picked);
    if (json)
        printf("{\"devices\": [");
    else
        printf("%-8s %-4s %5s %-8s %-36s %10s %10s %10s %4s %5s\n", "DEVICE", "TYPE", "INDEX",
               "KIND", "NAME", "TOTAL", "FREE", "LIMIT", "CC", "SM/CORES");
    status = list_devices(json, &cpu, &blas);
    if (!json) print_usage_lines();
    const char *reason = ct_cuda_unavailable_reason();
    if (json) {
        printf("\n  ],\n  \"auto\": \"%s\",\n  \"cuda_available\": %s,\n  "
               "\"cuda_unavailable_reason\": ",
               picked, reason[0] ? "false" : "true");
        ct_cli_json_string(stdout, reason[0] ? reason : NULL);
        printf("\n}\n");
        ct_cli_result_printed();
        return status;
    }
    printf("\nCPU: %d cores, SIMD %s; BLAS %s (%d threads); %d OpenMP threads\n", cpu.cores,
           cpu.features, blas.config, blas.threads, blas.omp_threads);
    printf("CPU kernels: %s\n", ct_cpu_kernels());
    char bf16[256];
    ct_cli_cpu_bf16(bf16, sizeof bf16);
    printf("CPU bf16: %s\n", bf16);
    if (reason[0]) printf("CUDA: unavailable: %s\n", reason);
    printf("auto picks %s\n", picked);
    return status;
}
