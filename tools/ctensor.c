/* The `ctensor` command: `ctensor devices`, `ctensor doctor`, `ctensor bench`, `ctensor train`. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli_impl.h"
#include "ctensor/ctensor.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"devices", ct_cli_devices, "physical and logical devices, memory, capability"},
    {"doctor", ct_cli_doctor, "why the GPU is or is not usable, and what to do"},
    {"bench", ct_cli_bench, "CPU against GPU, transfer costs, where the GPU starts to win"},
    {"train", ct_cli_train, "train a model on a dataset on a device, with progress"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: ctensor COMMAND [options]   (ctensor %s)\n\ncommands:\n", ct_version());
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nevery command takes --help, and --json for a machine-readable result\n");
}

/* OpenMP's threads spin after each parallel region by default, and so do OpenBLAS's after
 * each GEMM: on a machine with few cores the two sets fight, and a training step runs
 * several times slower (measured: docs/PERFORMANCE.md). libgomp reads OMP_WAIT_POLICY once,
 * before main, so when the user has not chosen a policy the command sets passive waiting and
 * starts itself again, but only when /proc/self/exe is this program: under valgrind it is
 * valgrind's tool, run as `ld.so ctensor` the loader, and re-executing those would run them
 * without their arguments. There the command carries on with the policy in force. */
static bool exe_is_this_program(void) {
    struct stat exe;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps || stat("/proc/self/exe", &exe) != 0) {
        if (maps) fclose(maps);
        return false;
    }
    uintptr_t here = (uintptr_t)&exe_is_this_program;
    char line[512];
    bool same = false;
    while (fgets(line, sizeof line, maps)) {
        unsigned long long start, end, inode;
        unsigned major, minor;
        if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &start, &end, &major, &minor, &inode) ==
                5 &&
            here >= start && here < end) {
            same = inode == (unsigned long long)exe.st_ino && major == major(exe.st_dev) &&
                   minor == minor(exe.st_dev);
            break;
        }
    }
    fclose(maps);
    return same;
}

static void prefer_passive_waiting(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || !exe_is_this_program()) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv); /* on failure, carry on with the policy in force */
}

/* More threads than CT_THREADS_PER_CORE_MAX per processor never help, and libgomp crashes
 * trying to start 100000: such an OMP_NUM_THREADS is capped to the processors, with a
 * warning. */
#define CT_THREADS_PER_CORE_MAX 4

static void cap_thread_count(void) {
    const char *text = getenv("OMP_NUM_THREADS");
    if (!text) return;
    char *end;
    errno = 0;
    long asked = strtol(text, &end, 10);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (errno || end == text || (*end && *end != ',') || asked <= cores * CT_THREADS_PER_CORE_MAX)
        return;
    fprintf(stderr,
            "ctensor: warning: OMP_NUM_THREADS=%.40s asks for more than %d threads per "
            "processor (%ld here); using %ld\n",
            text, CT_THREADS_PER_CORE_MAX, cores, cores);
#ifdef _OPENMP
    omp_set_num_threads((int)cores);
#endif
}

int main(int argc, char **argv) {
    prefer_passive_waiting(argv);
    cap_thread_count();
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ctensor: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return 2;
}
