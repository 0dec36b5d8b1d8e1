/* The GPU's readings during `ctensor train`: a thread reads it every GPU_USAGE_INTERVAL
 * seconds, keeps the latest reading for the progress line, and sums for the summary's means.
 * Stopping wakes the thread at once; its wait has the interval as deadline, and the stop's
 * wait for it GPU_USAGE_STOP_TIMEOUT (a reading stuck in NVML leaves the thread behind). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpu_usage.h"

struct gpu_usage_sampler {
    gpu_usage_gpu *gpu;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    bool ended; /* the thread is past its last use of the sampler */
    bool has_latest;
    gpu_usage latest;
    gpu_usage_summary sums; /* mean_* hold sums until the end */
    int power_samples;
};

static void add_reading(gpu_usage_sampler *s, const gpu_usage *u) {
    s->latest = *u;
    s->has_latest = true;
    gpu_usage_summary *m = &s->sums;
    if (u->has_utilization) m->samples++, m->mean_utilization += u->utilization;
    if (u->has_power) s->power_samples++, m->mean_power_watts += u->power_watts;
    if (u->has_memory && (!m->has_memory || u->memory_used > m->peak_memory_used))
        m->has_memory = true, m->peak_memory_used = u->memory_used;
}

/* The CLOCK_MONOTONIC time `seconds` from now, for the timed waits on `wake`. */
static struct timespec deadline_in(double seconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    long long ns = deadline.tv_nsec + (long long)((seconds - (long long)seconds) * 1e9);
    deadline.tv_sec += (time_t)seconds + (time_t)(ns / 1000000000LL);
    deadline.tv_nsec = (long)(ns % 1000000000LL);
    return deadline;
}

static void *run(void *arg) {
    gpu_usage_sampler *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        struct timespec deadline = deadline_in(GPU_USAGE_INTERVAL);
        while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &deadline) == 0) {
        }
        if (s->stop) break;
        pthread_mutex_unlock(&s->lock);
        gpu_usage u;
        bool read = gpu_usage_read(s->gpu, &u);
        pthread_mutex_lock(&s->lock);
        if (read) add_reading(s, &u);
    }
    s->ended = true;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

gpu_usage_sampler *gpu_usage_sampler_start(ct_device device) {
    gpu_usage_gpu *gpu = gpu_usage_find(device);
    gpu_usage_sampler *s = gpu ? calloc(1, sizeof *s) : NULL;
    if (!s) return NULL;
    s->gpu = gpu;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&s->lock, NULL);
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
    }
    return s;
}

bool gpu_usage_sampler_latest(gpu_usage_sampler *s, gpu_usage *out) {
    if (!s) return false;
    pthread_mutex_lock(&s->lock);
    bool has = s->has_latest;
    *out = s->latest;
    pthread_mutex_unlock(&s->lock);
    return has;
}

void gpu_usage_sampler_stop(gpu_usage_sampler *s, gpu_usage_summary *out) {
    *out = (gpu_usage_summary){0};
    if (!s) return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->wake);
    struct timespec deadline = deadline_in(GPU_USAGE_STOP_TIMEOUT);
    while (!s->ended && pthread_cond_timedwait(&s->wake, &s->lock, &deadline) == 0) {
    }
    bool ended = s->ended;
    *out = s->sums;
    int power_samples = s->power_samples;
    pthread_mutex_unlock(&s->lock);
    if (!ended) {
        /* The thread still reads into the sampler: it is left running, the sampler leaked. */
        pthread_detach(s->thread);
        fprintf(stderr,
                "ctensor: warning: the GPU usage sampler did not stop within %g s (a reading of "
                "the GPU through NVML is stuck); the summary has the readings made before\n",
                GPU_USAGE_STOP_TIMEOUT);
    } else {
        pthread_join(s->thread, NULL); /* past its last use of the sampler: ends at once */
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
    if (out->samples) out->mean_utilization /= out->samples;
    out->has_power = power_samples > 0;
    out->measured = out->samples > 0 || out->has_power || out->has_memory;
    if (power_samples) out->mean_power_watts /= power_samples;
}
