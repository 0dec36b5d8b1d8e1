#!/bin/sh
# Device types are the registry's rows (src/backend/registry.c). Outside src/backend/ code asks
# the table (ct_device_types, ct_device_type_name, ct_device_is_host; core/device_impl.h inside
# the library) and names CT_DEVICE_CUDA only to parse or print a device: the files listed below,
# each with what it parses or prints. And the NVIDIA driver is probed in one place
# (src/backend/cuda_driver.c, ct_cuda_get_driver_info). Names each file that breaks either
# rule and exits 1.
#
# Usage: tools/check-device-names.sh [ROOT]   (run by ctest as test_device_names)
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
allowed='python/src/interop.c DLPack device codes read and written
python/src/devices.c the names "cuda" and "gpu" parsed, and the ctensor.cuda namespace
python/src/amp.c autocast device_type "cuda" parsed
python/src/tensor.c Tensor.cuda(index), the device CUDA names'
sources="--include=*.c --include=*.h --include=*.cu --include=*.cuh"
status=0
# shellcheck disable=SC2086 # $sources is several options
for file in $(grep -rl $sources 'CT_DEVICE_CUDA' src tools python/src | grep -v '^src/backend/' | sort); do
    if ! printf '%s\n' "$allowed" | awk '{ print $1 }' | grep -qx "$file"; then
        echo "check-device-names: $file names CT_DEVICE_CUDA; ask the device table instead" \
            "(ct_device_types, ct_device_type_name, ct_device_is_host)"
        grep -n 'CT_DEVICE_CUDA' "$file" | sed 's/^/  /'
        status=1
    fi
done
# shellcheck disable=SC2086
probes=$(grep -rF $sources 'dlopen("libcuda.so.1"' src tools | wc -l)
if [ "$probes" -ne 1 ]; then
    echo "check-device-names: the NVIDIA driver is probed $probes times in src/ and tools/;" \
        "call ct_cuda_get_driver_info (src/backend/cuda_driver.c) instead"
    # shellcheck disable=SC2086
    grep -rnF $sources 'dlopen("libcuda.so.1"' src tools | sed 's/^/  /'
    status=1
fi
if [ "$status" -eq 0 ]; then
    echo "check-device-names: CT_DEVICE_CUDA only in src/backend/ and $(printf '%s\n' "$allowed" |
        wc -l) files that parse or print a device; one driver probe"
fi
exit "$status"
