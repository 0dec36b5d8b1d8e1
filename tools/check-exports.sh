#!/bin/sh
# The export list is the API: the names libctensor.so exports (nm -D) must be exactly the
# functions the public headers declare with CT_API (read after the preprocessor, so the
# declarations op_list.h generates count). Prints every extra or missing name and exits 1
# when there is one.
#
# Usage: tools/check-exports.sh LIBCTENSOR_SO [CC]        (run by ctest as test_exported_symbols)
set -eu
lib=$1
cc=${2:-cc}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Names that begin with an underscore belong to the implementation (the sanitizers' runtime
# hooks in a CT_SANITIZE build, for one) and are left out.
nm -D --defined-only "$lib" | awk '{ print $3 }' | sed 's/@.*//' | grep -v '^_' | sort -u \
    > "$work/exported"
printf '#include <ctensor/ctensor.h>\n' |
    "$cc" -E -P -I"$here/include" -x c - > "$work/headers.i"
# Each declaration (text between semicolons and braces) that carries the visibility
# attribute declares the identifier right before its first parenthesis after the attribute.
tr '\n' ' ' < "$work/headers.i" | tr ';{}' '\n\n\n' |
    sed -n 's/.*visibility *( *"default" *) *) *)\(.*\)/\1/p' |
    sed 's/(.*//' | awk '{ print $NF }' | tr -d '*' | sort -u > "$work/declared"

extra=$(comm -23 "$work/exported" "$work/declared")
missing=$(comm -13 "$work/exported" "$work/declared")
status=0
if [ -n "$extra" ]; then
    echo "check-exports: $lib exports names no public header declares (make them static or ct__):"
    echo "$extra" | sed 's/^/  /'
    status=1
fi
if [ -n "$missing" ]; then
    echo "check-exports: the public headers declare names $lib does not export:"
    echo "$missing" | sed 's/^/  /'
    status=1
fi
if [ "$status" -eq 0 ]; then
    echo "check-exports: $(wc -l < "$work/exported") exported names, each declared by a public header"
fi
exit "$status"
