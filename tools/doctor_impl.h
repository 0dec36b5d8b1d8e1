/* `ctensor doctor`'s report: a list of checks, each passed, failed, a warning or skipped,
 * with a detail and, for what failed, the fix; and the exit status they add up to. */
#ifndef CT_DOCTOR_IMPL_H
#define CT_DOCTOR_IMPL_H

#include "cli_impl.h"
#include "ctensor/ctensor.h"

typedef enum { CHECK_PASS, CHECK_FAIL, CHECK_WARN, CHECK_SKIP } check_state;

/* Exit statuses: every device usable; the GPU not (the CPU is used); a broken install. */
enum { DOCTOR_OK = 0, DOCTOR_NO_GPU = 1, DOCTOR_BROKEN = 2 };

typedef struct {
    char name[48];
    check_state state;
    char detail[1536];
    char fix[512];
} doctor_check;

#define DOCTOR_MAX_CHECKS 64

typedef struct {
    doctor_check checks[DOCTOR_MAX_CHECKS];
    int count;
    int status;     /* the worst DOCTOR_* so far */
    char why[1536]; /* the first reason for a status above DOCTOR_OK */
    int driver;     /* CUDA version the driver supports, 0 none */
    char log[1024]; /* the library's warnings and notes during the checks, "; "-separated */
} doctor_report;

/* Adds a check; a failure raises the report's status to fail_status. fix may be NULL. */
void doctor_add(doctor_report *r, const char *name, check_state state, int fail_status,
                const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Each CUDA device's architecture and self-test (doctor_gpu.c). */
void doctor_check_gpus(doctor_report *r, const ct_cuda_build_info *info);

/* The checks of the host side (doctor_host.c): memory limits, the CPU self-test, the CPU's
 * features, BLAS and threads. */
void doctor_check_memory(doctor_report *r);
void doctor_check_cpu(doctor_report *r);
/* The BLAS check (doctor_blas.c), given openblas_get_config's text; and the hidden
 * `doctor --sgemm-probe` it runs in a copy of the program: prints "FAMILY GFLOPS". */
void doctor_check_blas(doctor_report *r, const char *config);
int doctor_sgemm_probe(void);

#endif
