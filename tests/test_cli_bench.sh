#!/bin/sh
# `ctensor bench` end to end: a --quick run with --csv and --plot (the CSV's rows, the chart,
# the table's conv2d section and statement about absent GPUs), --json, and the bad options
# (one line on stderr, exit status 2). Prints PASS/FAIL/SKIP per case and the closing line
# "N passed, N failed, N skipped" that tools/run-tests.sh sums.
#
# Usage: test_cli_bench.sh CTENSOR_BINARY WORK_DIR
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
cli=$1
work=$2
mkdir -p "$work" || exit 1
rm -f "$work"/*

fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

have_gnuplot=no
command -v gnuplot >/dev/null 2>&1 && have_gnuplot=yes

# The main run: with the chart when gnuplot is there.
if [ $have_gnuplot = yes ]; then
    "$cli" bench --quick --csv "$work/bench.csv" --plot "$work/bench.svg" >"$work/out" 2>"$work/err"
else
    "$cli" bench --quick --csv "$work/bench.csv" >"$work/out" 2>"$work/err"
fi
status=$?
if [ $status -eq 0 ]; then pass test_cli_bench_quick_run; else
    fail test_cli_bench_quick_run "exit status $status: $(cat "$work/err")"; fi

# Header, then device,op,size,seconds,with_copies rows with sane values.
csv_check() {
    awk -F, '
        NR == 1 { if ($0 != "device,op,size,seconds,with_copies") { print "bad header: " $0; bad = 1 }; next }
        NF != 5 { print "row " NR " has " NF " fields: " $0; bad = 1; next }
        $2 !~ /^(matmul|add|sum|conv2d|copy_h2d|copy_d2h|copy_h2d_pinned|copy_d2h_pinned)$/ { print "row " NR ": unknown op " $2; bad = 1 }
        $3 !~ /^[0-9]+$/ || $3 + 0 <= 0 { print "row " NR ": bad size " $3; bad = 1 }
        !($4 + 0 > 0 && $4 + 0 < 1000) { print "row " NR ": bad seconds " $4; bad = 1 }
        $5 !~ /^[01]$/ { print "row " NR ": bad with_copies " $5; bad = 1 }
        $1 == "cpu:0" && $5 == 0 { cpu[$2 "," $3] = 1 }
        END {
            for (n = 16; n <= 256; n *= 2) if (!(("matmul," n) in cpu)) { print "no cpu:0 matmul n=" n; bad = 1 }
            for (e = 6; e <= 20; e += 2) {
                s = 2 ^ e
                if (!(("add," s) in cpu)) { print "no cpu:0 add at " s; bad = 1 }
                if (!(("sum," s) in cpu)) { print "no cpu:0 sum at " s; bad = 1 }
            }
            # conv2d: 16 x H x W input elements, H = W = 2, 8, 32, 128.
            for (e = 6; e <= 18; e += 4) if (!(("conv2d," 2 ^ e) in cpu)) { print "no cpu:0 conv2d at " 2 ^ e; bad = 1 }
            exit bad
        }' "$work/bench.csv"
}
if [ ! -s "$work/bench.csv" ]; then fail test_cli_bench_csv_rows "no CSV written"
elif why=$(csv_check); then pass test_cli_bench_csv_rows
else fail test_cli_bench_csv_rows "$why"; fi

# Without a CUDA device measured, the table says the GPU columns are absent and why; with
# one, the CSV has its rows with the copies. conv2d has its table and its crossover line, and
# nothing says it is not available.
if grep -q '^cuda:[0-9]*,.*,1$' "$work/bench.csv"; then
    pass test_cli_bench_gpu_columns
elif grep -q '^GPU columns absent: no CUDA device measured: .' "$work/out" &&
    grep -q '^  matmul  no GPU measured$' "$work/out"; then
    pass test_cli_bench_gpu_columns
else
    fail test_cli_bench_gpu_columns "neither CUDA rows nor the absent-GPU statement"
fi
# The copies from and into pinned memory: rows for each CUDA device, or, without one, the
# table's statement that the pinned columns are absent and why.
if grep -q '^cuda:[0-9]*,copy_h2d_pinned,' "$work/bench.csv" &&
    grep -q '^cuda:[0-9]*,copy_d2h_pinned,' "$work/bench.csv" &&
    grep -q 'to device pinned' "$work/out"; then
    pass test_cli_bench_pinned_columns
elif ! grep -q '^cuda:' "$work/bench.csv" &&
    grep -q '^pinned copy columns absent: pinned host memory and the copies from it need a CUDA device$' "$work/out" &&
    grep -q '^host<->device copies, pageable and pinned: not measured (no GPU: .' "$work/out" &&
    ! grep -q '_pinned,' "$work/bench.csv"; then
    pass test_cli_bench_pinned_columns
else
    fail test_cli_bench_pinned_columns "neither pinned copy rows nor the absent-pinned statement"
fi
if grep -q '^conv2d (size: elements (f32) of the 1 x 16 x H x W input' "$work/out" &&
    [ "$(sed -n '/^conv2d (size:/,/^$/p' "$work/out" | grep -c '^  2^[0-9]* ')" -eq 4 ] &&
    grep -q '^where the GPU (or logical device) starts to win' "$work/out" &&
    grep -q '^  conv2d  ' "$work/out" && ! grep -q -i 'not available\|no convolution' "$work/out"; then
    pass test_cli_bench_conv2d_and_crossover
else
    fail test_cli_bench_conv2d_and_crossover "table lacks the conv2d rows or the crossover section"
fi

# Logical CPU devices are measured as a GPU is: with the copies, and compared with cpu:0.
"$cli" bench --quick --logical-cpus 2 --csv "$work/logical.csv" >"$work/out2" 2>"$work/err"
status=$?
if [ $status -ne 0 ]; then
    fail test_cli_bench_logical_cpus "exit status $status: $(cat "$work/err")"
elif [ "$(grep -c '^cpu:1,\(matmul\|add\|sum\|conv2d\),[0-9]*,[0-9.e+-]*,1$' "$work/logical.csv")" -ne 25 ] ||
    [ "$(grep -c '^  [a-z0-9]* *cpu:1: data on the device: .*; with the copies: ' "$work/out2")" -ne 4 ]; then
    fail test_cli_bench_logical_cpus "cpu:1 lacks its 25 rows with copies or its crossover lines"
else
    pass test_cli_bench_logical_cpus
fi

# The chart: an SVG of some substance naming the panels and the CPU's line.
if [ $have_gnuplot = no ]; then
    skip test_cli_bench_plot_svg "gnuplot is not installed (Debian package gnuplot-nox)"
elif [ "$(wc -c <"$work/bench.svg" 2>/dev/null || echo 0)" -gt 10000 ] &&
    grep -q '<svg' "$work/bench.svg" && grep -q 'elementwise add' "$work/bench.svg" &&
    grep -q 'conv2d 3x3' "$work/bench.svg" &&
    grep -q 'cpu:0' "$work/bench.svg"; then
    pass test_cli_bench_plot_svg
else
    fail test_cli_bench_plot_svg "$work/bench.svg missing, small, or without the panels"
fi

# --json: one object with the measurements (checked with Python's json when it is there).
if ! command -v python3 >/dev/null 2>&1; then
    skip test_cli_bench_json "python3 is not installed to parse the JSON"
elif "$cli" bench --quick --device cpu --json 2>"$work/err" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ops = {m["op"] for m in d["measurements"] if m["device"] == "cpu:0"}
assert ops == {"matmul", "add", "sum", "conv2d"}, ops
conv = sorted(m["size"] for m in d["measurements"] if m["op"] == "conv2d" and m["device"] == "cpu:0")
assert conv == [2**6, 2**10, 2**14, 2**18], conv
assert d["gpu_absent"] and "unavailable" not in d, d.keys()
assert d["pinned_absent"], d.keys()
' 2>>"$work/err"; then
    pass test_cli_bench_json
else
    fail test_cli_bench_json "$(tail -n 3 "$work/err")"
fi

# A bad option: exit status 2 and exactly one line on stderr containing $2.
expect_error() {
    name=$1 needle=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    status=$?
    lines=$(wc -l <"$work/err")
    if [ $status -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "$needle" "$work/err"; then
        pass "$name"
    else
        fail "$name" "exit $status, $lines lines on stderr: $(cat "$work/err")"
    fi
}
expect_error test_cli_bench_unknown_option "--bogus" "$cli" bench --bogus
expect_error test_cli_bench_bad_device "bogus" "$cli" bench --device bogus
expect_error test_cli_bench_bad_logical_cpus "from 2 to 16" "$cli" bench --logical-cpus 99
expect_error test_cli_bench_missing_value "needs a value" "$cli" bench --csv
expect_error test_cli_bench_unwritable_csv "cannot write" \
    "$cli" bench --quick --csv "$work/no-such-dir/bench.csv"
expect_error test_cli_bench_plot_extension ".svg or .png" "$cli" bench --plot "$work/bench.txt"
expect_error test_cli_bench_plot_without_gnuplot "gnuplot-nox" \
    env PATH=/nonexistent "$cli" bench --quick --plot "$work/bench2.svg"
if ! grep -q '^cuda:' "$work/bench.csv"; then
    expect_error test_cli_bench_absent_gpu_device "cuda" "$cli" bench --device cuda:0
else
    skip test_cli_bench_absent_gpu_device "a CUDA device is present"
fi

if "$cli" bench --help | grep -q '^usage: ctensor bench'; then pass test_cli_bench_help; else
    fail test_cli_bench_help "--help printed no usage"; fi

finish
