/* PLACEHOLDER until `ctensor devices` lands: replace this whole file. */
#include <stdio.h>

#include "cli_impl.h"

int ct_cli_devices(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ctensor devices: not implemented yet\n");
    return 2;
}
