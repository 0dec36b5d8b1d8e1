"""The `ctensor` command of a `pip install`: the C program installed inside the package
(ctensor/bin/ctensor, which finds libctensor beside it through its run path), run in place of
this interpreter with the same arguments, so that its exit status, signals and output are the
command's own."""

import os
import sys


def main():
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ctensor")
    if not os.access(program, os.X_OK):
        sys.exit(f"ctensor: {program} is missing: this ctensor package was not installed with "
                 "`pip install .`, which puts the command there")
    os.execv(program, [program] + sys.argv[1:])
