#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the libFuzzer targets of fuzz/ for a bounded time each, from their corpora
# in fuzz/corpus/ (read only: what a run finds new stays in a scratch copy), a few
# at a time. A crash, leak or broken invariant fails the run and is kept under
# $AGENTJAIL_FUZZ_OUT (default: the build dir's fuzz-findings/) with the line to
# add it to the corpus, where the replay test (ctest -R fuzz_corpus) keeps it.
#
# Usage: scripts/fuzz.sh [--time SECONDS] [--jobs N] [--build DIR] [TARGET...]
#   --time   seconds per target (default 60)
#   --jobs   targets at once (default: the number of CPUs)
#   --build  a build configured with -DAGENTJAIL_FUZZ=ON (default: build-fuzz, made
#            here with clang-14 when missing)
# Ends with one line per target: "fuzz: TARGET: N executions in S s, corpus A -> B
# inputs, ok" (or the finding), then "fuzz: T targets, E executions, F failed".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd -P)
time_each=60 jobs=$(nproc) build=build-fuzz
targets=()
say() { printf 'fuzz: %s\n' "$*" >&2; }
while (($#)); do
    case "$1" in
        --time) time_each=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        -h|--help) sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) say "unknown option $1 (see --help)"; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[[ "$build" == /* ]] || build=$root/$build
if [[ ! -f "$build/CMakeCache.txt" ]]; then
    command -v clang++-14 >/dev/null || { say "clang++-14 is missing: apt-get install clang-14 (scripts/setup.sh installs it)"; exit 2; }
    say "configuring $build with clang-14 and -DAGENTJAIL_FUZZ=ON"
    CC=clang-14 CXX=clang++-14 AGENTJAIL_BUILD_DIR=$build scripts/build.sh -DAGENTJAIL_FUZZ=ON >/dev/null
fi
if ! grep -q '^AGENTJAIL_FUZZ:BOOL=ON$' "$build/CMakeCache.txt"; then
    say "$build is not a fuzz build: configure it with -DAGENTJAIL_FUZZ=ON (clang)"
    exit 2
fi
# The targets this build makes (fuzz/CMakeLists.txt leaves out one whose library is
# missing, and says so when it configures).
[[ -f "$build/fuzz/targets.txt" ]] || { say "$build/fuzz/targets.txt is missing: configure $build again"; exit 2; }
mapfile -t built < <(grep -v '^$' "$build/fuzz/targets.txt")
if ((${#targets[@]} == 0)); then
    targets=("${built[@]}")
fi
for t in "${targets[@]}"; do
    printf '%s\n' "${built[@]}" | grep -qx -- "$t" ||
        { say "$build makes no target $t (it makes: ${built[*]}); see its cmake output"; exit 2; }
done
ninja -C "$build" "${targets[@]/#/aj_fuzz_}" >/dev/null

out=${AGENTJAIL_FUZZ_OUT:-$build/fuzz-findings}
mkdir -p "$out"
scratch=$(mktemp -d /tmp/agentjail-fuzz.XXXXXX)
trap 'rm -rf -- "$scratch"' EXIT
# Relative paths an input names resolve in an empty directory of its own.
mkdir "$scratch/cwd"

run_one() {
    local t=$1 bin=$build/fuzz/fuzz_$t
    local corpus=$scratch/corpus-$t log=$scratch/$t.log
    mkdir -p "$corpus"
    cp -r "$root/fuzz/corpus/$t/." "$corpus/"
    local before rc=0
    before=$(find "$corpus" -type f | wc -l)
    # detect_leaks: a leak is a finding too. rss_limit: a runaway input (a policy
    # that makes a huge plan) is reported as such instead of swapping the machine.
    (cd "$scratch/cwd" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$bin" -max_total_time="$time_each" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -print_final_stats=1 -artifact_prefix="$out/$t-" "$corpus" "$root/fuzz/corpus/$t" >"$log" 2>&1) || rc=$?
    local execs after
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    after=$(find "$corpus" -type f | wc -l)
    if ((rc == 0)); then
        printf '%s %s %s %s ok\n' "$t" "${execs:-0}" "$before" "$after"
    else
        local art
        art=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
        {
            echo "=== fuzz_$t (exit $rc): the last lines of its log"
            tail -40 "$log"
            [[ -z "$art" ]] || echo "fuzz: keep it as a regression: cp $art fuzz/corpus/$t/"
        } >&2
        printf '%s %s %s %s failed\n' "$t" "${execs:-0}" "$before" "$after"
    fi
}

say "${#targets[@]} targets, ${time_each}s each, $jobs at a time"
results=$scratch/results
: >"$results"
running=0
for t in "${targets[@]}"; do
    [[ -d fuzz/corpus/$t ]] || { say "no corpus for $t (fuzz/corpus/$t)"; exit 2; }
    run_one "$t" >>"$results" &
    running=$((running + 1))
    if ((running >= jobs)); then
        wait -n || true
        running=$((running - 1))
    fi
done
wait
total=0 failed=0
while read -r t execs before after verdict; do
    say "$t: $execs executions in ${time_each} s, corpus $before -> $after inputs, $verdict"
    total=$((total + execs))
    [[ "$verdict" == ok ]] || failed=$((failed + 1))
done < <(sort "$results")
say "${#targets[@]} targets, $total executions, $failed failed"
((failed == 0))
