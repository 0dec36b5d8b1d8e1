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
int ct_cli_generate(int argc, char **argv);

/* How a command ends (cli_status.c). The exit statuses are the same for every command (doctor
 * adds its own 1 and 2 for what it found: its --help says): */
enum { CT_CLI_OK = 0, CT_CLI_FAILED = 1, CT_CLI_USAGE = 2 };
/* ... and every --help ends with them. */
#define CT_CLI_EXIT_STATUS_HELP                                                                    \
    "exit status: 0 done; 1 the run failed (out of memory, a device or its library, a write\n"     \
    "that did not complete, or writing the output); 2 a usage error: an unknown, repeated or\n"    \
    "empty option, a bad value, a device that is not present, or a file named on the command\n"    \
    "line that is missing, unreadable, malformed or cannot be written; 128+N stopped by\n"         \
    "signal N (130 SIGINT, 143 SIGTERM), after printing what was done\n"

/* Before anything else: the subcommand's name for the error lines, and whether argv asks for
 * --json (then a failure also prints {"error", "status", "exit_code", "library_status"} on
 * stdout: "status" is "usage", "failed" or "interrupted"; "library_status" the ct_status name
 * of the library's failure, or null). */
void ct_cli_begin(const char *command, int argc, char **argv);
/* One error line on stderr, "ctensor CMD: " and the message; the first becomes the JSON error.
 * A line about a subject (the text before its first ": ") already reported is not printed
 * again: the replicas of --devices that fail alike say it once. Thread-safe. ct_cli_fail
 * takes the thread's ct_last_status(). Return CT_CLI_USAGE and CT_CLI_FAILED. */
int ct_cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ct_cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The command printed its JSON result: a failure after it adds no error object. */
void ct_cli_result_printed(void);
/* At exit: the JSON error object when one is due, then stdout flushed; a write error there
 * (a full disk, a closed pipe) is a line on stderr and status 1. Returns the exit status. */
int ct_cli_end(int rc);
/* A whole decimal integer in [lo, hi] (an option's value); false for anything else. */
bool ct_cli_parse_int(const char *text, int64_t lo, int64_t hi, int64_t *out);

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
