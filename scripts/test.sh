#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The one test command: installs what is missing, builds once, runs every CTest tier
# as the caller and, when the caller is root, the integration and escape tiers again
# as a throwaway unprivileged user; ends with "N passed, N failed, N skipped".
#
# Usage: scripts/test.sh [extra ctest arguments, given to both passes]
#   AGENTJAIL_BUILD_DIR       build directory (default: build, inside the repository)
#   AGENTJAIL_SKIP_SETUP=1    do not run scripts/setup.sh
#   AGENTJAIL_SKIP_BUILD=1    test the existing build as it is
#   AGENTJAIL_TEST_JOBS       tests run in parallel (default: 2)
#   AGENTJAIL_TEST_TIMEOUT    seconds per test that sets no TIMEOUT itself (default: 120)
#   AGENTJAIL_UNPRIVILEGED=0  skip the unprivileged pass even as root
#   AGENTJAIL_VM=0            skip the vm tier (the cgroup v2 tests in a QEMU guest)
#   AGENTJAIL_VM_PARALLEL=1   run the vm tier beside the two passes instead of after them
#   AGENTJAIL_SLURM=0         skip the slurm tier (a throwaway Slurm cluster, pass 1 only)
#   AGENTJAIL_SANITIZE_TIER=0 skip the sanitizer and fuzz tier
#   AGENTJAIL_FUZZ_TIME       seconds per fuzz target in that tier (default: 30)
#
# The sanitizer and fuzz tier (when no extra ctest arguments are given) comes last: a
# second build with clang, ASan and UBSan (-DAGENTJAIL_FUZZ=ON: the same build makes
# the libFuzzer targets), in which the unit and integration tiers run again as the
# caller, and then scripts/fuzz.sh runs every fuzz target from its corpus for
# AGENTJAIL_FUZZ_TIME seconds, two at a time.
#
# The slurm tier (one CTest test, slurm.spank, about two minutes, RUN_SERIAL: alone, as
# its useradd and its daemons would disturb the tests beside it) runs in pass 1 only:
# as root it starts munged, slurmctld and three slurmd of its own and submits the jobs
# as a user it creates; the unprivileged pass could not start daemons.
#
# The vm tier (one CTest test, vm.cgroup2, minutes long) runs on its own after both
# passes when no extra ctest arguments are given (with them, inside pass 1 if they
# select it). Not beside them by default: its two emulated CPUs keep both cores busy,
# which starves the host's timing-sensitive tests (a busy loop under --cpus 0.2 that
# must be throttled, 2 s ceilings), while the overlap saves only the passes' ~1-2 min.
#
# After both passes the escape tier's results are compared test by test: a test that
# passes as the user must pass as root too (a root run is no weaker than a user run),
# and any other difference in outcome (failed, skipped, missing) between the two is a
# failure of its own, listed by name.
#
# Why two passes: a sandbox built by root (who holds every capability in the initial
# user namespace) and one built by an ordinary user go through different kernel
# checks, and agentjail must hold up in both. The unprivileged pass runs as a user
# created for this run only (useradd --system, home and TMPDIR in a scratch dir);
# a trap deletes the user, kills what it left running (by pid) and removes the
# scratch dir, also on failure or Ctrl-C. That user needs read access to the source
# and build trees and nothing else: ctest writes its logs into a scratch test
# directory that includes the real one, and the tests write only under TMPDIR.
# When the checkout lives below a directory other users cannot enter (a 0700 home),
# that pass runs in a private mount namespace in which a tmpfs over the closed
# directory re-exposes just the checkout at the same path (the test binaries have
# absolute paths compiled in, so the tree cannot simply be copied elsewhere); the
# host's permissions are never changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd -P)

build=${AGENTJAIL_BUILD_DIR:-build}
[[ "$build" == /* ]] || build=$root/$build
jobs=${AGENTJAIL_TEST_JOBS:-2}
timeout=${AGENTJAIL_TEST_TIMEOUT:-120}
unpriv_labels='integration|escape'

say() { printf 'test.sh: %s\n' "$*" >&2; }

if [[ "${AGENTJAIL_SKIP_SETUP:-0}" != 1 ]]; then
    scripts/setup.sh || { say "setup failed, no tests run"; exit 1; }
fi
if [[ "${AGENTJAIL_SKIP_BUILD:-0}" != 1 ]]; then
    scripts/build.sh || { say "build failed, no tests run"; exit 1; }
fi
build=$(cd "$build" && pwd -P)

scratch=$(mktemp -d /tmp/agentjail-test.XXXXXX)
chmod 0755 "$scratch"
user=""

# Deletes the throwaway user, first killing (by pid) whatever still runs as it: a
# test that leaked a process (the very thing PROC-05 tests for) must not keep it alive.
remove_user() {
    [[ -n "$user" ]] && id -u "$user" >/dev/null 2>&1 || return 0
    local -a pids
    # Zombies are already dead (their new parent reaps them in its own time): skip them.
    read -ra pids <<<"$(ps -o pid=,stat= -u "$user" 2>/dev/null | awk '$2 !~ /^Z/ { printf "%s ", $1 }')"
    if ((${#pids[@]} > 0)); then
        # Worth a look: a sandbox's process outliving its test is a bug somewhere.
        say "killing processes left by $user:"
        ps -o pid=,ppid=,stat=,args= -p "$(IFS=,; echo "${pids[*]}")" 2>/dev/null | sed 's/^/    /' >&2 || true
        kill -KILL "${pids[@]}" 2>/dev/null || true
        sleep 0.2
    fi
    userdel "$user" >/dev/null 2>&1 || userdel -f "$user" || say "could not delete user $user"
    user=""
}

# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [[ -z "${vm_child:-}" ]] || kill -TERM -- "-$vm_child" 2>/dev/null || true
    remove_user
    rm -rf -- "$scratch" || say "could not remove $scratch"
    exit "$rc"
}
# Runs a ctest in its own process group in the background, so that a signal to this
# script is handled at once and reaches the tests too (ctest leaves its running tests
# behind when it gets SIGTERM).
child="" vm_child=""
run_child() {
    setsid "$@" &
    child=$!
    local rc=0
    wait "$child" || rc=$?
    child=""
    return "$rc"
}
# shellcheck disable=SC2317 # invoked by the trap
on_signal() {
    say "interrupted, stopping the tests"
    if [[ -n "$vm_child" ]]; then
        kill -TERM -- "-$vm_child" 2>/dev/null || kill -TERM "$vm_child" 2>/dev/null || true
        wait "$vm_child" 2>/dev/null || true
    fi
    if [[ -n "$child" ]]; then
        kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    exit "$1"
}
trap cleanup EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

ctest_args=(--output-on-failure --no-tests=error --timeout "$timeout" -j "$jobs")

# Counts a CTest JUnit file as "passed failed skipped". CTest writes status="notrun"
# both for a GTEST_SKIP() (message SKIP_REGULAR_EXPRESSION_MATCHED) or a test that
# exited with its SKIP_RETURN_CODE (message SKIP_RETURN_CODE=N: the vm tier where no
# QEMU is installed) and for a test whose binary is missing; only the first two are
# skips, the last is a failure.
count_junit() {
    [[ -f "$1" ]] || {
        echo "0 0 0"
        return
    }
    awk '
        function flush() { if (pending) failed++; pending = 0 }
        /<testcase / {
            flush()
            if ($0 ~ /status="run"/) passed++
            else if ($0 ~ /status="disabled"/) skipped++
            else if ($0 ~ /status="notrun"/) pending = 1
            else failed++
        }
        /<skipped message="(SKIP_REGULAR_EXPRESSION_MATCHED|SKIP_RETURN_CODE=[0-9]+)"/ { if (pending) { skipped++; pending = 0 } }
        /<\/testcase>/ { flush() }
        END { flush(); printf "%d %d %d\n", passed, failed, skipped }
    ' "$1"
}

total_passed=0 total_failed=0 total_skipped=0 status=0
# Prints why each test that exited with its SKIP_RETURN_CODE skipped (the first lines
# of its output): ctest --output-on-failure shows a skipped test's output nowhere.
show_skip_reasons() {
    [[ -f "$1" ]] || return 0
    awk '
        /<testcase / { match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7); skip = 0; n = 0 }
        /<skipped message="SKIP_RETURN_CODE=/ { skip = 1 }
        /<system-out>/ { out = skip }
        out && n < 6 { line = $0; sub(/.*<system-out>/, "", line); sub(/<\/system-out>.*/, "", line)
            if (line != "") { printf "test.sh: skipped %s: %s\n", name, line; n++ } }
        /<\/system-out>/ { out = 0 }
    ' "$1" | sed 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&amp;/\&/g' >&2
}

# Adds one pass's results to the totals: record NAME RC JUNIT.
record() {
    local name=$1 rc=$2 p f s
    read -r p f s < <(count_junit "$3")
    if ((rc != 0 && f == 0)); then
        # ctest failed without a failing test to show for it (no tests found, a
        # crash, an unreadable tree): count the pass itself as one failure.
        say "$name: ctest exited with status $rc"
        f=1
    fi
    say "$name: $p passed, $f failed, $s skipped"
    total_passed=$((total_passed + p))
    total_failed=$((total_failed + f))
    total_skipped=$((total_skipped + s))
    ((rc == 0 && f == 0)) || status=1
}

# The vm tier as a ctest of its own (see the head of this file); pass 1 leaves it out.
pass1_args=() vm_tier=0
excluded=()
if (($# == 0)) && [[ "${AGENTJAIL_VM:-1}" != 0 ]] &&
    ctest --test-dir "$build" -N -L '^vm$' 2>/dev/null | grep -q '^Total Tests: [1-9]'; then
    vm_tier=1
    excluded+=(vm)
fi
[[ "${AGENTJAIL_SLURM:-1}" != 0 ]] || excluded+=(slurm)
if ((${#excluded[@]} > 0)); then
    pass1_args=(-LE "^($(IFS='|'; echo "${excluded[*]}"))$")
fi
start_vm_tier() {
    vm_start=$SECONDS
    # A test directory of its own that includes the real one: two ctests writing the
    # build tree's Testing/ at once would mix their logs.
    mkdir "$scratch/vm"
    esc=${build//\\/\\\\}
    esc=${esc//\"/\\\"}
    printf 'subdirs("%s")\n' "${esc//\$/\\\$}" >"$scratch/vm/CTestTestfile.cmake"
    setsid ctest --test-dir "$scratch/vm" -L '^vm$' --output-on-failure --no-tests=error \
        --output-junit "$scratch/vm.xml" >"$scratch/vm.log" 2>&1 </dev/null &
    vm_child=$!
}
if ((vm_tier)) && [[ "${AGENTJAIL_VM_PARALLEL:-0}" == 1 ]]; then
    say "vm tier: started in the background; its output follows the passes"
    start_vm_tier
fi

# Pass 1: every tier, as whoever runs this script.
me=$(id -un)
say "pass 1: all tiers as $me (uid $EUID)"
start=$SECONDS
rc=0
run_child ctest --test-dir "$build" "${ctest_args[@]}" --output-junit "$scratch/pass1.xml" "${pass1_args[@]}" "$@" || rc=$?
say "pass 1 took $((SECONDS - start))s"
show_skip_reasons "$scratch/pass1.xml"
record "pass 1 ($me)" "$rc" "$scratch/pass1.xml"

# Prints the first directory from / down to $1 that $user cannot enter, if any.
first_closed_dir() {
    local p="" part
    local -a parts
    IFS=/ read -ra parts <<<"${1#/}"
    for part in "${parts[@]}"; do
        [[ -n "$part" ]] || continue
        p+=/$part
        if ! runuser -u "$user" -- test -x "$p" 2>/dev/null; then
            printf '%s\n' "$p"
            return
        fi
    done
}

run_unprivileged_pass() {
    user=ajtest-$$
    while id -u "$user" >/dev/null 2>&1; do user=ajtest-$$-$RANDOM; done
    # A real shell: the git-over-SSH test logs this user in to a throwaway sshd on
    # loopback, and sshd runs every session through the login shell.
    useradd --system --user-group --no-create-home --home-dir "$scratch/home" \
        --shell /bin/sh "$user"
    install -d -o "$user" -g "$user" -m 0700 "$scratch/home" "$scratch/tmp" "$scratch/ctest"
    # A test directory of the user's own that includes the real one: ctest insists on
    # writing Testing/Temporary/ under the directory it is pointed at.
    local esc=${build//\\/\\\\}
    esc=${esc//\"/\\\"}
    esc=${esc//\$/\\\$}
    printf 'subdirs("%s")\n' "$esc" >"$scratch/ctest/CTestTestfile.cmake"
    chown "$user:$user" "$scratch/ctest/CTestTestfile.cmake"

    local -a view=()
    local closed
    closed=$(first_closed_dir "$root")
    if [[ -n "$closed" ]]; then
        case "$build/" in
            "$root"/*) ;;
            *)
                say "pass 2: $build is outside $root and $closed is closed to other users;"
                say "  use the default build dir or make the path traversable (chmod o+x)"
                return 3
                ;;
        esac
        if [[ "$closed" == "$root" ]]; then
            say "pass 2: the checkout $root itself is closed to other users (mode $(stat -c %a "$root"));"
            say "  clone it with umask 022 or run chmod o+rx on it"
            return 3
        fi
        say "pass 2: $closed is closed to $user; exposing only $root in a private mount namespace"
        mkdir "$scratch/view"
        # Inside the new namespace: park the checkout, cover the closed directory
        # with a world-traversable tmpfs, recreate the path, put the checkout back.
        # shellcheck disable=SC2016 # expanded by the inner bash
        view=(unshare --mount --propagation private -- bash -c '
            set -euo pipefail
            closed=$1 path=$2 stash=$3
            shift 3
            mount --rbind "$path" "$stash"
            mount -t tmpfs -o mode=0755,size=1m agentjail-test-view "$closed"
            (umask 022 && mkdir -p "$path")
            mount --rbind "$stash" "$path"
            exec "$@"
        ' bash "$closed" "$root" "$scratch/view")
    fi

    local -a envv=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        HOME="$scratch/home" TMPDIR="$scratch/tmp" USER="$user" LOGNAME="$user"
        LANG=C.UTF-8 TERM="${TERM:-dumb}")
    [[ -z "${CI:-}" ]] || envv+=(CI="$CI")
    # The user must be able to read the trees it tests; say so plainly if not, then
    # run ctest (the arguments before "--" are files to check).
    # shellcheck disable=SC2016 # expanded by the inner sh
    local check='while [ "$1" != -- ]; do
            test -r "$1" || { echo "test.sh: pass 2: $1 is not readable by $(id -un); build with umask 022" >&2; exit 3; }
            shift
        done
        shift
        exec "$@"'
    # Leave the checkout: a cwd below a closed directory is no place for that user.
    cd "$scratch"
    local rc=0
    run_child "${view[@]}" runuser -u "$user" -- env -i "${envv[@]}" sh -c "$check" sh \
        "$root/CMakeLists.txt" "$build/CTestTestfile.cmake" "$build/bin/agentjail" -- \
        ctest --test-dir "$scratch/ctest" -L "$unpriv_labels" "${ctest_args[@]}" \
        --output-junit "$scratch/ctest/pass2.xml" "$@" || rc=$?
    cd "$root"
    return "$rc"
}

if ((EUID == 0)) && [[ "${AGENTJAIL_UNPRIVILEGED:-1}" != 0 ]]; then
    say "pass 2: tiers '$unpriv_labels' again as an unprivileged user"
    start=$SECONDS
    rc=0
    run_unprivileged_pass "$@" || rc=$?
    say "pass 2 took $((SECONDS - start))s"
    name="pass 2 (${user:-unprivileged})"
    remove_user
    record "$name" "$rc" "$scratch/ctest/pass2.xml"
elif ((EUID != 0)); then
    say "not root: pass 1 was the unprivileged run; run as root to test both"
fi

if ((vm_tier)) && [[ -z "$vm_child" ]]; then
    say "vm tier: the cgroup v2 tests in a QEMU guest (one boot; minutes)"
    start_vm_tier
fi
if [[ -n "$vm_child" ]]; then
    rc=0
    wait "$vm_child" || rc=$?
    vm_child=""
    cat "$scratch/vm.log"
    say "vm tier took $((SECONDS - vm_start))s"
    show_skip_reasons "$scratch/vm.xml"
    # What ran in the guest, also when it passed (ctest shows its output only on failure).
    if [[ -f "$scratch/vm.xml" ]]; then
        sed -n 's/^vm: \(FAIL\|SKIP\) /test.sh: in the guest: \1 /p; s/^vm: \([0-9]* passed, .*\)/test.sh: in the guest, \1/p' \
            "$scratch/vm.xml" | sed 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&amp;/\&/g' >&2
        sed -n 's/^run-in-vm: \(guest done in .*\)/test.sh: \1/p' "$scratch/vm.xml" >&2
    fi
    record "vm tier (QEMU guest)" "$rc" "$scratch/vm.xml"
fi

# The sanitizer and fuzz tier (see the head of this file).
if (($# == 0)) && [[ "${AGENTJAIL_SANITIZE_TIER:-1}" != 0 ]]; then
    san_build=$root/build-san
    say "sanitizer tier: building $san_build with clang-14, ASan, UBSan and libFuzzer"
    start=$SECONDS
    rc=0
    # -O1 and line tables only: what the sanitizers' reports need, at half the build
    # time of -O2 -g; NDEBUG as the shipped build has it (toml++'s own debug asserts
    # would stop the fuzzers on inputs the release parser refuses with a message).
    CC=clang-14 CXX=clang++-14 AGENTJAIL_BUILD_DIR=build-san scripts/build.sh -DAGENTJAIL_FUZZ=ON \
        "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" >"$scratch/san-build.log" 2>&1 || rc=$?
    say "sanitizer tier: build took $((SECONDS - start))s"
    if ((rc != 0)); then
        tail -40 "$scratch/san-build.log" >&2
        say "sanitizer tier: the build failed"
        record "sanitizer tier (ASan+UBSan)" 1 /dev/null
    else
        start=$SECONDS
        rc=0
        # halt_on_error: a UBSan finding fails its test instead of scrolling past.
        # A shorter soak under ASan, which runs each sandbox several times slower.
        AJ_SOAK_RUNS=300 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
            run_child ctest --test-dir "$san_build" "${ctest_args[@]}" -L '^(unit|integration)$' \
            --output-junit "$scratch/san.xml" || rc=$?
        say "sanitizer tier: tests took $((SECONDS - start))s"
        show_skip_reasons "$scratch/san.xml"
        record "sanitizer tier (ASan+UBSan, $me)" "$rc" "$scratch/san.xml"
        start=$SECONDS
        rc=0
        AGENTJAIL_FUZZ_OUT=$scratch/fuzz-findings run_child scripts/fuzz.sh --build "$san_build" \
            --time "${AGENTJAIL_FUZZ_TIME:-30}" --jobs 2 || rc=$?
        say "fuzz tier took $((SECONDS - start))s"
        if ((rc != 0)); then
            say "fuzz tier: a target failed (its input and log are above)"
            total_failed=$((total_failed + 1))
            status=1
        fi
    fi
fi

# Each test of a CTest JUnit file as "NAME OUTCOME" (passed, failed, skipped, disabled),
# read the way count_junit counts them.
junit_outcomes() {
    [[ -f "$1" ]] || return 0
    awk '
        function flush() { if (pending) print name, "failed"; pending = 0 }
        /<testcase / {
            flush()
            match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7)
            if ($0 ~ /status="run"/) print name, "passed"
            else if ($0 ~ /status="disabled"/) print name, "disabled"
            else if ($0 ~ /status="notrun"/) pending = 1
            else print name, "failed"
        }
        /<skipped message="(SKIP_REGULAR_EXPRESSION_MATCHED|SKIP_RETURN_CODE=[0-9]+)"/ { if (pending) { print name, "skipped"; pending = 0 } }
        /<\/testcase>/ { flush() }
        END { flush() }
    ' "$1"
}

# A root run must be no weaker than a user run: the escape tier's outcome of every
# test, as root (pass 1) and as the user (pass 2), must be the same. Differences are
# listed by name and each counts as one failure.
compare_root_and_user() {
    local escape diffs n line
    escape=$(ctest --test-dir "$build" -N -L '^escape$' 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *//p')
    if [[ -z "$escape" ]]; then
        say "root vs user: no escape tests listed, nothing to compare"
        return
    fi
    diffs=$(awk '
        FNR == 1 { f++ }
        f == 1 { escape[$1] = 1; next }
        !($1 in escape) { next }
        f == 2 { root[$1] = $2; seen[$1] = 1; next }
        f == 3 { user[$1] = $2; seen[$1] = 1 }
        END {
            for (t in seen) {
                r = (t in root) ? root[t] : "not run"
                u = (t in user) ? user[t] : "not run"
                if (r != u) printf "%s: as root %s, as the user %s\n", t, r, u
            }
        }
    ' <(printf '%s\n' "$escape") <(junit_outcomes "$scratch/pass1.xml") \
        <(junit_outcomes "$scratch/ctest/pass2.xml") | sort)
    if [[ -z "$diffs" ]]; then
        n=$(junit_outcomes "$scratch/pass1.xml" | awk 'NR == FNR { e[$1] = 1; next } $1 in e' \
            <(printf '%s\n' "$escape") - | wc -l)
        say "root vs user: the escape tier agrees on all $n tests"
        return
    fi
    n=$(wc -l <<<"$diffs")
    say "root vs user: $n escape tests differ between the root and the unprivileged pass:"
    while IFS= read -r line; do say "  $line"; done <<<"$diffs"
    total_failed=$((total_failed + n))
    status=1
}
if ((EUID == 0)) && [[ -f "$scratch/pass1.xml" && -f "$scratch/ctest/pass2.xml" ]]; then
    compare_root_and_user
fi

# What CI reports beyond the totals (issue 13): the attacks tried and refused, each
# with the positive control its test asserts first, and the soak's counts; the fuzz
# tier printed its targets' executions above.
report() {
    local xml=$1 who=$2 n ok
    [[ -f "$xml" ]] || return 0
    n=$(junit_outcomes "$xml" | awk 'NR == FNR { e[$1] = 1; next } $1 in e' \
        <(ctest --test-dir "$build" -N -L '^escape$' 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *//p') - | wc -l)
    ok=$(junit_outcomes "$xml" | awk 'NR == FNR { e[$1] = 1; next } ($1 in e) && $2 == "passed"' \
        <(ctest --test-dir "$build" -N -L '^escape$' 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *//p') - | wc -l)
    ((n == 0)) || say "report ($who): $n attacks tried, $ok refused with their positive controls passed"
    sed -n 's/^\(soak: .*\)$/\1/p' "$xml" | sed 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&amp;/\&/g' |
        sed "s/^/test.sh: report ($who): /" >&2
}
report "$scratch/pass1.xml" "$me"
report "$scratch/ctest/pass2.xml" "unprivileged"
report "$scratch/san.xml" "ASan+UBSan"

echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
exit "$status"
