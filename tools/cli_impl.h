/* The `ctensor` command's subcommands. Each takes the arguments after its name (argv[0] is
 * the subcommand's name), prints to stdout (a JSON object with --json), and returns the
 * process exit status. */
#ifndef CT_CLI_IMPL_H
#define CT_CLI_IMPL_H

#include <stdbool.h>
#include <stdio.h>

#include <ctensor/ctensor.h>

int ct_cli_devices(int argc, char **argv);
int ct_cli_doctor(int argc, char **argv);
int ct_cli_bench(int argc, char **argv);
int ct_cli_train(int argc, char **argv);

/* Shared by devices and doctor (cli_common.c). */

/* Reads --json and --help; an unknown argument prints one line to stderr and gives 2.
 * Returns -1 to go on, else the exit status (0 after printing help). */
int ct_cli_parse_flags(int argc, char **argv, bool *json, const char *help);

/* Writes s as a JSON string literal, quotes included; NULL writes null. */
void ct_cli_json_string(FILE *out, const char *s);

typedef struct {
    int cores; /* online */
    bool avx2, avx512f, avx512_bf16, f16c, fma;
    char features[96]; /* "AVX2 F16C FMA", or "none of AVX2, AVX-512F, ..." */
} ct_cli_cpu;

typedef struct {
    char config[256]; /* openblas_get_config(), or why it is not known */
    int threads;      /* openblas_get_num_threads(); 0 when not OpenBLAS */
    int omp_threads;  /* the OpenMP threads ctensor's CPU kernels use */
} ct_cli_blas;

void ct_cli_cpu_info(ct_cli_cpu *out);
void ct_cli_blas_info(ct_cli_blas *out);

/* Every device present, of every type from the CPU up (the reverse of the order "auto" tries
 * them in): at most capacity of them into out; returns how many there are. With gpus_only,
 * only the devices whose memory is not the host's. */
int ct_cli_list_devices(ct_device *out, int capacity, bool gpus_only);

/* What bf16 is on this CPU, in words for `devices` and `doctor`: emulated, native and faster
 * than f32, or native and slower (with the measured rate against f32). */
void ct_cli_cpu_bf16(char *out, size_t size);

#endif
