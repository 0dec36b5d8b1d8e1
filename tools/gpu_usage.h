/* How busy a GPU is, for `ctensor devices`, `doctor` and `train`: its utilisation, the memory in
 * use on it (by every process) and its power draw, read through NVML (libnvidia-ml.so.1, part
 * of the NVIDIA driver) loaded at run time. Without NVML, or for a device NVML does not know,
 * nothing is read and nothing is said: these figures are never an error. The library does
 * not use NVML; only the command does. */
#ifndef CT_GPU_USAGE_H
#define CT_GPU_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ctensor/ctensor.h"

/* One reading of a GPU; each figure is there only when NVML gave it. */
typedef struct gpu_usage {
    bool has_utilization;
    unsigned
        utilization; /* percent of NVML's last sample period (1/6 s to 1 s) with a kernel running */
    bool has_memory;
    unsigned long long memory_used, memory_total; /* bytes of the whole GPU */
    bool has_power;
    double power_watts;
} gpu_usage;

/* Opaque: the NVML device of a ct device. */
typedef struct gpu_usage_gpu gpu_usage_gpu;

/* The NVML device that a CUDA device (logical devices: their physical one) is on, found by
 * its UUID, so that CUDA_VISIBLE_DEVICES's renumbering is followed; NULL for a CPU device,
 * without NVML, or for a GPU NVML does not know (a MIG instance). Leaves no ct error. */
gpu_usage_gpu *gpu_usage_find(ct_device device);
/* Reads the figures NVML gives now; false when it gives none. */
bool gpu_usage_read(gpu_usage_gpu *gpu, gpu_usage *out);
/* Why gpu_usage_find finds nothing ("" when NVML is loaded and initialised): for doctor. */
const char *gpu_usage_unavailable_reason(void);

/* The UUID of a CUDA device as NVML writes it, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
 * false when it is not known (gpu_usage_uuid.c). Leaves no ct error. */
bool gpu_usage_cuda_uuid(ct_device device, char *out, size_t size);

/* "35% busy, 12.3 of 140.0 GiB in use, 120 W": the figures a reading has; "" with none. */
const char *gpu_usage_text(const gpu_usage *u, char *buf, size_t size);
/* The reading as JSON members (", \"utilization_percent\": 35, ..."), null where not read. */
void gpu_usage_json(FILE *out, const gpu_usage *u);

/* A thread that reads a GPU every GPU_USAGE_INTERVAL seconds while training runs, for the
 * progress line (the latest reading) and the summary (the means). */
#define GPU_USAGE_INTERVAL 0.2
/* Seconds gpu_usage_sampler_stop waits for the thread (a reading takes milliseconds). */
#define GPU_USAGE_STOP_TIMEOUT 2.0
/* A run shorter than this many readings says nothing of idleness: too short to tell. */
#define GPU_USAGE_MIN_SAMPLES 5
/* Idle above this percent of the time (mean utilisation below 100 minus it): the warning. */
#define GPU_USAGE_IDLE_WARNING 50.0

typedef struct gpu_usage_summary {
    bool measured;           /* at least one reading */
    int samples;             /* readings of the utilisation */
    double mean_utilization; /* percent */
    bool has_power;
    double mean_power_watts;
    bool has_memory;
    unsigned long long peak_memory_used; /* bytes, the most any reading saw */
} gpu_usage_summary;

typedef struct gpu_usage_sampler gpu_usage_sampler;

/* Starts reading the GPU of device; NULL when there is nothing to read (see gpu_usage_find)
 * or the thread cannot start. */
gpu_usage_sampler *gpu_usage_sampler_start(ct_device device);
/* The latest reading; false before the first one (or a NULL sampler). */
bool gpu_usage_sampler_latest(gpu_usage_sampler *s, gpu_usage *out);
/* Stops the thread, fills out (measured false for a NULL sampler) and frees the sampler. A
 * thread stuck in a reading past GPU_USAGE_STOP_TIMEOUT is left running with the sampler
 * (leaked), a warning on stderr; out has the readings made before. */
void gpu_usage_sampler_stop(gpu_usage_sampler *s, gpu_usage_summary *out);

#endif
