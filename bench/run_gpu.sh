#!/bin/sh
# The GPU benchmark: ctensor (bench_gpu) beside PyTorch (bench/peer_torch_gpu.py) on the same
# GPU in one run. Prints one table with ratios and the issue's targets, and writes it, with
# the card, the driver and the date, to bench/results/gpu-latest.md (or $2 when given).
#
# Usage: bench/run_gpu.sh [BUILD_DIR] [OUTPUT.md] [--quick]
# Without a CUDA device it prints bench_gpu's one line ("no CUDA device: ...") and exits 0.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=build
output="$here/results/gpu-latest.md"
case "${1:-}" in --*|"") ;; *) build=$1; shift ;; esac
case "${1:-}" in --*|"") ;; *) output=$1; shift ;; esac
python=${PYTHON:-python3}
bench_gpu="$build/bench/bench_gpu"
if [ ! -x "$bench_gpu" ]; then
    echo "run_gpu.sh: $bench_gpu not found; build with the CUDA plugin (-DCT_CUDA=ON)" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bench_gpu" "$@" > "$work/ctensor.tsv"
if grep -q "^no CUDA device" "$work/ctensor.tsv"; then
    cat "$work/ctensor.tsv"
    exit 0
fi
"$python" "$here/peer_torch_gpu.py" "$@" > "$work/torch.tsv" || true

card=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
footer="GPU: ${card:-unknown (nvidia-smi not found)}. PyTorch: $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo 'not installed').
Run: bench/run_gpu.sh $build $* on $(date -u '+%Y-%m-%d %H:%M UTC')."
mkdir -p "$(dirname "$output")"
"$python" - "$work/ctensor.tsv" "$work/torch.tsv" "$footer" > "$output" <<'EOF'
import sys

rows, units, order = {}, {}, []
for path in sys.argv[1:3]:
    for line in open(path):
        bench, impl, unit, value, note = (line.rstrip("\n").split("\t") + [""])[:5]
        if bench not in rows:
            rows[bench], units[bench] = {}, unit
            order.append(bench)
        rows[bench][impl] = (None if value == "n/a" else float(value), note)

def value(bench, impl):
    cell = rows.get(bench, {}).get(impl)
    return cell[0] if cell else None

def shown(cell):
    if cell is None:
        return ""
    v, note = cell
    text = f"n/a ({note})" if v is None else f"{v:.4g}"
    return text + (f" ({note})" if v is not None and "us per copy" in note else "")

def target(bench):
    """The issue's targets, where this row is one."""
    ours = value(bench, "ctensor")
    if bench.startswith("matmul bf16 8192"):
        theirs = value(bench, "torch")
        if ours is None or theirs is None:
            return ">= 0.9x PyTorch: not measured"
        return f">= 0.9x PyTorch: {'met' if ours >= 0.9 * theirs else 'NOT met'}"
    if bench.startswith("add f32"):
        copy = value(bench.replace("add", "clone (device-to-device copy)"), "ctensor")
        if ours is None or copy is None:
            return ">= 0.8x device copy: not measured"
        return f">= 0.8x device copy ({ours / copy:.2f}x): {'met' if ours >= 0.8 * copy else 'NOT met'}"
    if bench.startswith("h2d pinned") and ("GiB" in bench or (
            "MiB" in bench and int(bench.split()[2]) >= 64)):
        pinned, pageable = value(bench, "torch"), value(bench.replace("pinned", "pageable"), "torch")
        if pinned is None or pageable is None:
            return ""
        return f"PyTorch pinned / pageable: {pinned / pageable:.2f}x (target >= 2x)"
    return ""

print("| benchmark | unit | ctensor | PyTorch | ctensor / PyTorch | target |")
print("|---|---|---|---|---|---|")
for bench in order:
    r = rows[bench]
    ours, theirs = value(bench, "ctensor"), value(bench, "torch")
    ratio = f"{ours / theirs:.2f}x" if ours is not None and theirs else ""
    print(f"| {bench} | {units[bench]} | {shown(r.get('ctensor'))} | {shown(r.get('torch'))} "
          f"| {ratio} | {target(bench)} |")
print()
print("ctensor has no public pinned host memory: its h2d rows copy from pageable memory")
print("through ctensor's own pinned staging buffers; PyTorch's pinned rows copy from")
print("pin_memory() tensors. Bandwidths count bytes read and written for the device ops.")
print(sys.argv[3])
EOF
cat "$output"
