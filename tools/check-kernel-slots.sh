#!/bin/sh
# A kernel slot is a row of src/backend/kernel_slots.h plus its function in every backend: a
# required row added without them must not build, and the build's message must name the
# row. This copies the table, adds one required row (new_slot) and nothing else, and builds
# each backend's table against it: the CPU's (libctensor), the fake GPU's (its plugin over
# the library) and, in a build with the CUDA plugin, CUDA's. Only the file that holds the
# table is compiled again; it is linked, as the build links it (--no-undefined), with the
# build's other objects of that library. Each link must fail naming the backend's function
# for the row (ct__cpu_new_slot, ct_cuda_new_slot); with the unchanged table it must pass. In
# the CUDA build, nvcc's front end (--cuda: no device code) also compiles a .cu file against
# the new row, whose declaration is generated in cuda_impl.h.
#
# Usage: tools/check-kernel-slots.sh ENV_FILE   (ctest: test_kernel_slot_rows; the file,
# written by tests/CMakeLists.txt, sets CC, CFLAGS, the object lists and the libraries)
set -eu
. "$1"
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tools/check_row_lib.sh"
make_trees backend "$here/src/backend/kernel_slots.h"
awk '{ print }
     /^#define CT_KERNEL_SLOTS\(X\)/ {
         print "    X(new_slot, REQUIRED, QUEUED, ct_status, (int device, const ct__ew_args *args), \\"
         print "      (device, args)) \\" }' \
    "$here/src/backend/kernel_slots.h" > "$work/bad/backend/kernel_slots.h"
grep -q 'X(new_slot, REQUIRED' "$work/bad/backend/kernel_slots.h"

# link TABLE TABLE_SOURCE OTHER_OBJECTS LIBS [compiler flags]: compile the table's file
# against -ITABLE (the good or bad copy), then link it with the others into a shared object.
link() {
    table=$1 source=$2 objects=$3 libs=$4
    shift 4
    # shellcheck disable=SC2086
    "$CC" -std=c11 -D_GNU_SOURCE -fPIC -c -I"$table" "$@" $CFLAGS -o "$work/table.o" \
        "$here/$source" 2> "$work/err" &&
        "$CC" -shared -Wl,--no-undefined -o "$work/out.so" "$work/table.o" $objects $libs \
            2> "$work/err"
}
others() { # the objects of a list but the one compiled from $1
    for o in $2; do case $o in */"$(basename "$1")".o) ;; *) printf '%s ' "$o" ;; esac; done
}

status=0
check() { # what source objects libs name [compiler flags]
    what=$1 source=$2 objects=$(others "$2" "$3") libs=$4 name=$5
    shift 5
    check_row check-kernel-slots "$what" "$name" link "$source" "$objects" "$libs" "$@"
}

check "the CPU backend (libctensor)" src/backend/cpu/cpu_backend.c "$CPU_OBJECTS" "$CPU_LIBS" \
    ct__cpu_new_slot
check "the fake GPU (its plugin)" tests/fake_gpu_kernels.c "$FAKE_OBJECTS" \
    "$STATIC_LIBRARY $CPU_LIBS" ct__cpu_new_slot -DCT_FAKE_GPU_KERNELS -I"$here/tests"
if [ -n "${CUDA_OBJECTS:-}" ]; then
    check "the CUDA plugin" src/backend/cuda/cuda_device.c "$CUDA_OBJECTS" "$CUDA_LIBS" \
        ct_cuda_new_slot $CUDA_CFLAGS
    # shellcheck disable=SC2086
    if ! "$NVCC" -x cu -std=c++17 --cuda -o /dev/null -I"$work/bad" $CFLAGS $CUDA_CFLAGS \
        "$here/src/backend/cuda/cuda_unary.cu" > "$work/err" 2>&1; then
        echo "check-kernel-slots: nvcc's front end does not compile cuda_unary.cu with the row:"
        cat "$work/err"
        status=1
    else
        echo "check-kernel-slots: nvcc's front end compiles cuda_unary.cu with the new row"
    fi
else
    echo "check-kernel-slots: the CUDA plugin is not checked: this build has none"
fi
exit "$status"
