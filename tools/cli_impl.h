/* The `ctensor` command's subcommands. Each takes the arguments after its name (argv[0] is
 * the subcommand's name), prints to stdout (a JSON object with --json), and returns the
 * process exit status. */
#ifndef CT_CLI_IMPL_H
#define CT_CLI_IMPL_H

int ct_cli_devices(int argc, char **argv);
int ct_cli_doctor(int argc, char **argv);
int ct_cli_bench(int argc, char **argv);

#endif
