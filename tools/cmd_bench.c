/* PLACEHOLDER until `ctensor bench` lands: replace this whole file. */
#include <stdio.h>

#include "cli_impl.h"

int ct_cli_bench(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ctensor bench: not implemented yet\n");
    return 2;
}
