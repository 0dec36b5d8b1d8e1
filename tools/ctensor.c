/* The `ctensor` command: `ctensor devices`, `ctensor doctor`, `ctensor bench`, `ctensor train`,
 * `ctensor generate`. */
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
    {"generate", ct_cli_generate, "sample text from a trained GPT checkpoint"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: ctensor COMMAND [options]   (ctensor %s)\n\ncommands:\n", ct_version());
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nevery command takes --help, and --json for a machine-readable result\n"
                 "ctensor --version prints the version\n\n" CT_CLI_EXIT_STATUS_HELP);
}

/* After each parallel region libgomp's threads spin for about 300,000 rounds by default, and
 * a machine's other processes (a second job, MPI ranks) lose those cores: a step runs up to
 * twice as slow. Passive waiting (no spin) costs a futex wake per region instead, 50-70 us in
 * a virtual machine, and the MLP's step ran 1.3-2.7x slower than spinning on a quiet machine. A
 * short spin of CT_SPIN_ROUNDS kept most of the spin's gain on a quiet machine and lost nothing to
 * passive waiting beside a second job; longer spins lost (docs/PERFORMANCE.md, 2026-12-03).
 * libgomp reads its settings once, before main, so when the user has chosen neither a policy
 * nor a spin count the command sets the spin and starts itself again, but only when
 * /proc/self/exe is this program: under valgrind it is valgrind's tool, run as `ld.so
 * ctensor` the loader, and re-executing those would run them without their arguments. There
 * the command carries on with the settings in force. */
#define CT_SPIN_ROUNDS "5000"

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

static void prefer_short_spin(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || !exe_is_this_program()) return;
    setenv("GOMP_SPINCOUNT", CT_SPIN_ROUNDS, 1);
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
    prefer_short_spin(argv);
    cap_thread_count();
    if (argc < 2) {
        usage(stderr);
        return CT_CLI_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return ct_cli_end(CT_CLI_OK);
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("ctensor %s\n", ct_version());
        return ct_cli_end(CT_CLI_OK);
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0) {
            ct_cli_begin(subcommands[i].name, argc - 1, argv + 1);
            return ct_cli_end(subcommands[i].run(argc - 1, argv + 1));
        }
    ct_cli_usage_error("unknown command \"%s\" (ctensor --help lists them)", argv[1]);
    return CT_CLI_USAGE;
}
