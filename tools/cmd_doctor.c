/* PLACEHOLDER until `ctensor doctor` lands: replace this whole file. */
#include <stdio.h>

#include "cli_impl.h"

int ct_cli_doctor(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ctensor doctor: not implemented yet\n");
    return 2;
}
