#!/bin/sh
# Layers point down only (DESIGN.md, "Layers"): a file in one folder of src/ includes headers of
# its own folder and of the folders below it, never of one above. The order is DESIGN.md's:
#     core < mem < backend < ops < autograd < nn < optim < data < dist
# (backend/cpu and backend/cuda are the backend layer; ctensor/ is the public API, open to all).
# Every #include "layer/..." line of src/ is checked. The includes listed in `known` point up
# today and wait for their fix; the check fails on any other upward include, and on a known
# one that is gone (so that the list only shrinks).
#
# Usage: tools/check-layers.sh [SOURCE_ROOT]        (ctest: test_layers_point_down)
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
order="core mem backend ops autograd nn optim data dist"
# file: the upward header it includes
known="src/core/tensor.c: mem/pinned_impl.h
src/core/tensor.c: mem/pool_impl.h
src/mem/pinned_impl.h: backend/backend_impl.h
src/mem/pool_state_impl.h: backend/backend_impl.h
src/ops/conv.c: autograd/tape_impl.h
src/ops/grad_impl.h: autograd/tape_impl.h
src/ops/linear.c: autograd/tape_impl.h
src/ops/nn_impl.h: autograd/tape_impl.h
src/ops/pool.c: autograd/tape_impl.h"

rank() {
    i=0
    for layer in $order; do
        [ "$layer" = "$1" ] && { echo "$i"; return; }
        i=$((i + 1))
    done
    echo -1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: > "$work/up"
cd "$root"
for layer in $order; do
    own=$(rank "$layer")
    grep -rHE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "src/$layer" \
        --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' --include='*.cpp' |
        sed -E 's/^([^:]+):[^"]*"([^"]+)".*/\1 \2/' |
        while read -r file header; do
            target=$(rank "${header%%/*}")
            if [ "$target" -gt "$own" ]; then echo "$file: $header"; fi
        done >> "$work/up"
done
sort -u "$work/up" -o "$work/up"
printf '%s\n' "$known" | sort -u > "$work/known"
status=0
new=$(comm -23 "$work/up" "$work/known")
gone=$(comm -13 "$work/up" "$work/known")
if [ -n "$new" ]; then
    echo "check-layers: a lower layer includes a higher one ($order):"
    echo "$new" | sed 's/^/  /'
    status=1
fi
if [ -n "$gone" ]; then
    echo "check-layers: these upward includes are gone; remove them from tools/check-layers.sh's list:"
    echo "$gone" | sed 's/^/  /'
    status=1
fi
if [ "$status" -eq 0 ]; then
    echo "check-layers: every include points down, but the $(wc -l < "$work/known") listed here"
fi
exit "$status"
