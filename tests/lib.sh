# What the shell tests (tests/test_*.sh) share; each sources it: `. "$(dirname "$0")/lib.sh"`.
# Every case prints one line, "PASS NAME", "FAIL NAME: WHY" (followed by the last run's stdout
# and stderr as "    | " lines) or "SKIP NAME: WHY", and `finish` ends the script with the
# line "N passed, N failed, N skipped" that tools/run-tests.sh sums, exiting 0 only when no
# case failed. A script that runs its commands, reports a failure or checks a refusal
# otherwise defines its own run, fail or refused after sourcing this.
# Sets here (the tests' folder, absolute), python (the .venv's interpreter, which `make deps`
# makes; need_python checks it) and the counters passed, failed and skipped.

here=$(cd "$(dirname "$0")" && pwd)
python="$here/../.venv/bin/python3"
passed=0 failed=0 skipped=0

# need_python: a missing interpreter fails the whole script, named after it.
need_python() {
    if [ ! -x "$python" ]; then
        echo "FAIL $(basename "$0" .sh): $python is missing: run \`make deps\`"
        exit 1
    fi
}

# workdir DIR: DIR emptied (made if absent) as work, with out and err the files run writes.
workdir() {
    work=$1
    rm -rf "$work" && mkdir -p "$work"
    out="$work/out" err="$work/err"
}

# run ARGS...: runs ARGS with stdout in $out and stderr in $err; sets code.
run() {
    "$@" >"$out" 2>"$err"
    code=$?
}
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; sed 's/^/    | /' "$out" "$err"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }

# refused NAME TEXT ARGS...: exits non-zero (not a signal) with one line on stderr holding
# TEXT. A status above refused_max (default 125: 126 and up are a command not run or a
# signal) fails it.
refused() {
    name=$1 text=$2
    shift 2
    run "$@"
    if [ "$code" = 0 ] || [ "$code" -gt "${refused_max:-125}" ]; then fail "$name" "exit status $code"
    elif [ "$(wc -l <"$err")" != 1 ]; then fail "$name" "$(wc -l <"$err") lines on stderr, expected 1"
    elif ! grep -qF -- "$text" "$err"; then fail "$name" "no \"$text\" on stderr"
    else pass "$name"; fi
}

# holds NAME TEXT...: the last run exited 0 and its stdout holds every TEXT.
holds() {
    name=$1
    shift
    missing=""
    for text in "$@"; do
        grep -qF -- "$text" "$out" || missing="$missing \"$text\""
    done
    if [ "$code" = 0 ] && [ -z "$missing" ]; then pass "$name"
    else fail "$name" "exit $code, missing:$missing"; fi
}

# interrupt PATTERN LIMIT SIGNAL COMMAND...: runs COMMAND in the background (stdout to $out,
# stderr to $err), sends it SIGNAL once PATTERN is in $out (or after LIMIT/5 s) and sets $code
# to its exit status. A watchdog kills it after 120 s (not `timeout`, which would take the
# signal itself). $out is emptied first: the background job's redirection may come after the
# first look for PATTERN, which would then find an earlier test's line.
interrupt() {
    pattern=$1 limit=$2 signal=$3
    shift 3
    : >"$out"
    "$@" >"$out" 2>"$err" &
    pid=$!
    (i=0; while [ $i -lt 600 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.2; i=$((i + 1)); done
     kill -KILL "$pid" 2>/dev/null) &
    watchdog=$!
    waited=0
    until grep -q "$pattern" "$out" || [ "$waited" -ge "$limit" ]; do sleep 0.2; waited=$((waited + 1)); done
    sleep 0.3
    kill -"$signal" "$pid"
    wait "$pid"
    code=$?
    wait "$watchdog"
}


# finish: the closing line, then exits 0 when no case failed, else 1.
finish() {
    echo "$passed passed, $failed failed, $skipped skipped"
    [ "$failed" = 0 ]
    exit
}
