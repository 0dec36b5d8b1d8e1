/* `ctensor train --profile`: the training loops' profile (ctensor/profile.h) summed over the
 * epochs, and its table in the summary, as text or JSON. Figures are per training step. */
#include <stdio.h>
#include <stdlib.h>

#include "cli_impl.h"
#include "train_impl.h"

void train_profile_add(ct_profile_stats *sum, const ct_profile_stats *epoch) {
    sum->seconds += epoch->seconds;
    sum->device_timed |= epoch->device_timed;
    for (int p = 0; p < CT_PROFILE_PHASES; p++) {
        sum->phase_seconds[p] += epoch->phase_seconds[p];
        for (int k = 0; k < CT_PROFILE_KINDS; k++) {
            ct_profile_entry *to = &sum->entries[p][k];
            const ct_profile_entry *from = &epoch->entries[p][k];
            to->calls += from->calls;
            to->host_seconds += from->host_seconds;
            to->device_seconds += from->device_seconds;
        }
    }
}

/* A kind's entries over every phase, or a phase's over every kind. */
static ct_profile_entry kind_total(const ct_profile_stats *p, int kind) {
    ct_profile_entry e = {0};
    for (int phase = 0; phase < CT_PROFILE_PHASES; phase++) {
        e.calls += p->entries[phase][kind].calls;
        e.host_seconds += p->entries[phase][kind].host_seconds;
        e.device_seconds += p->entries[phase][kind].device_seconds;
    }
    return e;
}

static ct_profile_entry phase_total(const ct_profile_stats *p, int phase) {
    ct_profile_entry e = {0};
    for (int kind = 0; kind < CT_PROFILE_KINDS; kind++) {
        e.calls += p->entries[phase][kind].calls;
        e.host_seconds += p->entries[phase][kind].host_seconds;
        e.device_seconds += p->entries[phase][kind].device_seconds;
    }
    return e;
}

/* The order phases are shown in: a step's. */
static const ct_profile_phase phase_order[CT_PROFILE_PHASES] = {
    CT_PROFILE_DATA, CT_PROFILE_FORWARD, CT_PROFILE_BACKWARD, CT_PROFILE_OPTIMIZER,
    CT_PROFILE_OTHER};

/* The kinds that ran, by device time, largest first (a stable insertion sort). */
static int kinds_by_time(const ct_profile_stats *p, int order[CT_PROFILE_KINDS]) {
    int n = 0;
    for (int k = 0; k < CT_PROFILE_KINDS; k++) {
        ct_profile_entry e = kind_total(p, k);
        if (!e.calls) continue;
        int at = n++;
        while (at > 0 && kind_total(p, order[at - 1]).device_seconds < e.device_seconds) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = k;
    }
    return n;
}

void train_profile_print_text(const train_summary *s) {
    if (!s->profiled) return;
    const ct_profile_stats *p = &s->profile;
    double steps = s->steps > 0 ? (double)s->steps : 1;
    double step_ms = 1e3 * p->seconds / steps;
    printf("\nprofile         %lld steps, %.2f s: %.3f ms a step; %s\n", (long long)s->steps,
           p->seconds, step_ms,
           p->device_timed ? "each device kernel waited for (device ms: until it ended)"
                           : "on the CPU (device ms = host ms)");
    printf("  %-18s %10s %7s %14s %14s %12s\n", "phase", "ms/step", "%", "kernels host",
           "kernels dev", "outside");
    for (int i = 0; i < CT_PROFILE_PHASES; i++) {
        ct_profile_phase phase = phase_order[i];
        ct_profile_entry e = phase_total(p, phase);
        double wall = p->phase_seconds[phase];
        double outside = wall - (p->device_timed ? e.device_seconds : e.host_seconds);
        printf("  %-18s %10.3f %6.1f%% %14.3f %14.3f %12.3f\n", ct_profile_phase_name(phase),
               1e3 * wall / steps, p->seconds > 0 ? 100 * wall / p->seconds : 0.0,
               1e3 * e.host_seconds / steps, 1e3 * e.device_seconds / steps,
               1e3 * (outside > 0 ? outside : 0) / steps);
    }
    printf("  %-18s %10s %7s %14s %14s\n", "kernel kind", "calls/step", "%", "host ms/step",
           "dev ms/step");
    int order[CT_PROFILE_KINDS];
    int n = kinds_by_time(p, order);
    for (int i = 0; i < n; i++) {
        ct_profile_entry e = kind_total(p, order[i]);
        printf("  %-18s %10.1f %6.1f%% %14.3f %14.3f\n", ct_profile_kind_name(order[i]),
               (double)e.calls / steps, p->seconds > 0 ? 100 * e.device_seconds / p->seconds : 0.0,
               1e3 * e.host_seconds / steps, 1e3 * e.device_seconds / steps);
    }
}

/* A name as a JSON key: spaces become underscores. */
static void json_key(const char *name) {
    putchar('"');
    for (const char *c = name; *c; c++) putchar(*c == ' ' ? '_' : *c);
    putchar('"');
}

static void json_entry(const ct_profile_entry *e) {
    printf("{\"calls\": %lld, \"host_seconds\": %.6f, \"device_seconds\": %.6f}",
           (long long)e->calls, e->host_seconds, e->device_seconds);
}

void train_profile_print_json(const train_summary *s) {
    if (!s->profiled) {
        printf(", \"profile\": null");
        return;
    }
    const ct_profile_stats *p = &s->profile;
    printf(", \"profile\": {\"steps\": %lld, \"seconds\": %.6f, \"device_timed\": %s",
           (long long)s->steps, p->seconds, p->device_timed ? "true" : "false");
    printf(", \"phases\": {");
    for (int i = 0; i < CT_PROFILE_PHASES; i++) {
        ct_profile_phase phase = phase_order[i];
        ct_profile_entry e = phase_total(p, phase);
        printf("%s", i ? ", " : "");
        json_key(ct_profile_phase_name(phase));
        printf(": {\"seconds\": %.6f, \"kernels\": ", p->phase_seconds[phase]);
        json_entry(&e);
        printf(", \"kinds\": {");
        for (int k = 0, first = 1; k < CT_PROFILE_KINDS; k++) {
            if (!p->entries[phase][k].calls) continue;
            printf("%s", first ? "" : ", ");
            first = 0;
            json_key(ct_profile_kind_name(k));
            printf(": ");
            json_entry(&p->entries[phase][k]);
        }
        printf("}}");
    }
    printf("}, \"kinds\": {");
    for (int k = 0; k < CT_PROFILE_KINDS; k++) {
        ct_profile_entry e = kind_total(p, k);
        printf("%s", k ? ", " : "");
        json_key(ct_profile_kind_name(k));
        printf(": ");
        json_entry(&e);
    }
    printf("}}");
}
