/* The GPU's readings during `ctensor train`: a thread reads it every GPU_USAGE_INTERVAL
 * seconds, keeps the latest reading for the progress line, and sums for the summary's means.
 * Stopping wakes the thread at once; its wait has the interval as deadline. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "gpu_usage.h"

struct gpu_usage_sampler {
    gpu_usage_gpu *gpu;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
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

static void *run(void *arg) {
    gpu_usage_sampler *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        long ns = deadline.tv_nsec + (long)(GPU_USAGE_INTERVAL * 1e9);
        deadline.tv_sec += ns / 1000000000L, deadline.tv_nsec = ns % 1000000000L;
        while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &deadline) == 0) {
        }
        if (s->stop) break;
        pthread_mutex_unlock(&s->lock);
        gpu_usage u;
        bool read = gpu_usage_read(s->gpu, &u);
        pthread_mutex_lock(&s->lock);
        if (read) add_reading(s, &u);
    }
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
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    *out = s->sums;
    if (out->samples) out->mean_utilization /= out->samples;
    out->has_power = s->power_samples > 0;
    out->measured = out->samples > 0 || out->has_power || out->has_memory;
    if (s->power_samples) out->mean_power_watts /= s->power_samples;
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
