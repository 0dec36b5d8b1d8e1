/* The `ctensor` command: `ctensor devices`, `ctensor doctor`, `ctensor bench`, `ctensor train`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
 * starts itself again. */
static void prefer_passive_waiting(char **argv) {
    if (getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv); /* on failure, carry on with the policy in force */
}

int main(int argc, char **argv) {
    prefer_passive_waiting(argv);
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
