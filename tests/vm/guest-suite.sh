#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The cgroup v2 test group, run once inside the test guest as root (see run-in-vm.sh):
# smoke checks of the guest and of agentjail, then the project's cgroup tests as root
# and again as an unprivileged user in a delegated subtree, then Slurm on cgroup v2
# (guest-slurm.sh); ends with
# "vm: N passed, N failed, N skipped" and status 1 when anything failed.
#
# Usage (in the guest): guest-suite.sh BUILD_DIR
#   AGENTJAIL_VM_TESTS      ctest -R regex of the tests to run (default below)
#   AGENTJAIL_VM_LABELS     ctest -L regex they must match too (default integration|escape:
#                           the unit tests need no cgroup and are run on the host)
#   AGENTJAIL_VM_TEST_TIMEOUT  seconds per test (default 300: programs start ~100x
#                           slower under TCG than on the host)
set -uo pipefail
build=${1:?usage: guest-suite.sh BUILD_DIR}
bin=$build/bin/agentjail
# The tests that need real cgroup v2 controllers: the limits tests (issue 4).
tests_re=${AGENTJAIL_VM_TESTS:-'^(Limits|Cgroup|Rlimit|Timeout|ResultRecord|Result)[A-Za-z0-9_]*\.'}
labels_re=${AGENTJAIL_VM_LABELS:-'^(integration|escape)$'}
per_test=${AGENTJAIL_VM_TEST_TIMEOUT:-300}
as_user=${AJVM_AS_USER:?not in the test guest (no AJVM_AS_USER)}
user_manager=${AJVM_USER_MANAGER:?not in the test guest (no AJVM_USER_MANAGER)}
# The tests of the systemd-scope route: run once, under a real `systemd --user`
# (guest-user-manager.sh), not in the root and delegated-user passes (they would skip).
manager_re='^LimitsSystemdScope'
cg=/sys/fs/cgroup

passed=0 failed=0 skipped=0
results=()
# result STATUS NAME [DETAIL]: one line per check, collected for the summary.
result() {
    local status=$1 name=$2 detail=${3:-}
    case "$status" in
        PASS) passed=$((passed + 1)) ;;
        FAIL) failed=$((failed + 1)) ;;
        SKIP) skipped=$((skipped + 1)) ;;
    esac
    results+=("$(printf '%-4s %s%s' "$status" "$name" "${detail:+  ($detail)}")")
    printf 'vm: %-4s %s%s\n' "$status" "$name" "${detail:+  ($detail)}"
}
section() { printf '\nvm: ---- %s (guest uptime %ss)\n' "$*" "$(cut -d' ' -f1 /proc/uptime)"; }

section "guest"
echo "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo)"
echo "cgroup2 controllers enabled at the root: $(cat $cg/cgroup.subtree_control)"
missing=""
for c in memory pids cpu; do
    grep -qw "$c" $cg/cgroup.subtree_control || missing+=" $c"
done
if [[ -z "$missing" ]]; then
    result PASS guest.cgroup2-controllers
else
    result FAIL guest.cgroup2-controllers "not enabled:$missing"
fi

# ---- Smoke: agentjail itself, as root and as the delegated user ------------------------

section "agentjail smoke"
# run_smoke NAME EXPECTED_UID WRAPPER...: agentjail runs `id` and prints its cgroup, in a
# fresh workspace below TMPDIR (the default policy binds the current directory).
run_smoke() {
    local name=$1 want=$2
    shift 2
    local out rc=0
    # shellcheck disable=SC2016 # expanded by the inner shell
    out=$("$@" bash -c 'ws=$(mktemp -d "${TMPDIR:-/tmp}/aj-smoke.XXXXXX") && cd "$ws" &&
        "$0" -- sh -c "id; cat /proc/self/cgroup"; rc=$?; cd / && rm -rf "$ws"; exit $rc' "$bin" 2>&1) || rc=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    if ((rc != 0)); then
        result FAIL "$name" "exit status $rc"
    elif ! grep -q "^uid=$want(" <<<"$out"; then
        result FAIL "$name" "no uid=$want in the output"
    else
        result PASS "$name"
    fi
}
if [[ -x "$bin" ]]; then
    run_smoke smoke.agentjail-root 0
    run_smoke smoke.agentjail-user "$(id -u "${AJVM_USER:-nobody}")" "$as_user"
else
    result FAIL smoke.agentjail "no $bin: build first"
fi

# limits_smoke NAME SCOPE WRAPPER...: agentjail -m 32M on a memory hog must end in an
# OOM kill: status 137 and a result record saying ML. With SCOPE=scope agentjail starts
# alone in a fresh child of the delegated subtree, as `systemd-run --user --scope -p
# Delegate=yes` would start it (a cgroup it may hand controllers down from must hold
# no other process).
limits_smoke() {
    local name=$1 scope=$2
    shift 2
    local out rc=0
    # shellcheck disable=SC2016 # expanded by the inner shell
    out=$("$@" bash -c 'bin=$1 scope=$2
        ws=$(mktemp -d "${TMPDIR:-/tmp}/aj-smoke.XXXXXX") && cd "$ws" || exit 125
        # The record outside the workspace: agentjail refuses a file the sandbox can write.
        rd=$(mktemp -d "${TMPDIR:-/tmp}/aj-smoke-record.XXXXXX") || exit 125
        sh -c '\''if [ "$1" = scope ]; then d=$AJVM_DELEGATED/smoke-scope.$$; mkdir "$d" && echo $$ >"$d/cgroup.procs" || exit 125; fi
            shift; exec "$@"'\'' sh "$scope" "$bin" -m 32M --result-file "$rd/result.json" -- tail /dev/zero
        rc=$?
        echo "exit status $rc"
        grep -E "\"(status|message|cgroup|memory_peak_bytes|oom_kill_count)\":" "$rd/result.json" 2>/dev/null || echo "no result file"
        cd / && rm -rf "$ws" "$rd"
        if [ "$scope" = scope ]; then
            find "$AJVM_DELEGATED" -mindepth 1 -depth -type d -path "*/smoke-scope.*" -exec rmdir {} + 2>/dev/null
        fi
        exit $rc' bash "$bin" "$scope" 2>&1) || rc=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    local status
    status=$(sed -n 's/.*"status": *"\([A-Z]*\)".*/\1/p' <<<"$out" | head -n 1)
    if ((rc == 137)) && [[ "$status" == ML ]]; then
        result PASS "$name"
    else
        result FAIL "$name" "expected exit 137 and status ML, got exit $rc and status ${status:-none}"
    fi
}
if [[ -x "$bin" ]]; then
    limits_smoke smoke.agentjail-memory-root none
    limits_smoke smoke.agentjail-memory-user-scope scope "$as_user"
fi

# ---- Smoke: the kernel's own limits, without agentjail ------------------------------------

section "cgroup v2 smoke"
# oom_check NAME PARENT: in a new child of PARENT with memory.max 32M and no swap, a
# memory hog (tail keeps a line that never ends) must be killed and counted in
# memory.events; pids.max 3 must stop a process at its third child.
# Runs as whoever calls it: as root, and as the user in the subtree delegated to it.
cat >/tmp/vm-cg-check.sh <<'EOF'
set -u
name=$1 parent=$2
g=$parent/vm-smoke.$$
mkdir "$g" || { echo "FAIL $name.memory cannot create $g"; exit 1; }
echo 32M >"$g/memory.max" && echo 0 >"$g/memory.swap.max" || { echo "FAIL $name.memory cannot set memory.max"; rmdir "$g"; exit 1; }
sh -c 'echo $$ >"$1/cgroup.procs" && exec tail /dev/zero' sh "$g" >/dev/null 2>&1
rc=$?
kills=$(awk '$1 == "oom_kill" { print $2 }' "$g/memory.events")
peak=$(cat "$g/memory.peak" 2>/dev/null || echo n/a)
if [ "$rc" = 137 ] && [ "${kills:-0}" -ge 1 ]; then
    echo "PASS $name.memory oom_kill $kills, status $rc, memory.peak $peak"
else
    echo "FAIL $name.memory expected status 137 and oom_kill >= 1, got status $rc, oom_kill ${kills:-none}"
fi
rmdir "$g"
mkdir "$g" && echo 3 >"$g/pids.max" || { echo "FAIL $name.pids cannot set pids.max"; exit 1; }
# perl, not a shell: dash and busybox sh exit at a failed fork, bash retries it.
out=$(perl -e 'my $f; open($f, ">", "$ARGV[0]/cgroup.procs") or exit 1; print $f "$$\n"; close($f) or exit 1;
    my ($n, @kids) = (0);
    for (1 .. 6) { my $p = fork; next unless defined $p; if ($p == 0) { sleep 5; exit 0 } $n++; push @kids, $p }
    kill 9, @kids; waitpid($_, 0) for @kids; print "$n\n"' "$g" 2>/dev/null)
maxev=$(awk '$1 == "max" { print $2 }' "$g/pids.events")
# perl itself is one of the 3: two children start, the other four forks fail.
if [ "$out" = 2 ] && [ "${maxev:-0}" -ge 1 ]; then
    echo "PASS $name.pids 2 of 6 forks succeeded, pids.events max $maxev"
else
    echo "FAIL $name.pids expected 2 of 6 forks and pids.events max >= 1, got ${out:-none} and ${maxev:-none}"
fi
for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$g" 2>/dev/null && break; sleep 0.2; done
EOF
while read -r st name detail; do
    result "$st" "$name" "$detail"
done < <(sh /tmp/vm-cg-check.sh cgroup2-root $cg
    # shellcheck disable=SC2016 # expanded by the user's shell
    "$as_user" sh -c 'sh /tmp/vm-cg-check.sh cgroup2-user "$AJVM_DELEGATED"')

# ---- The project's cgroup tests --------------------------------------------------------

# run_ctest WHO WRAPPER...: runs the selected tests from a test directory of WHO's
# own in /tmp (ctest writes Testing/ below the directory it is pointed at, and the
# build tree on the share is neither the user's nor to be touched by the guest).
test_dir() {
    local dir esc=${build//\\/\\\\}
    dir=$(mktemp -d "/tmp/vm-ctest-$1.XXXXXX") && chmod 0777 "$dir"
    esc=${esc//\"/\\\"}
    printf 'subdirs("%s")\n' "${esc//\$/\\\$}" >"$dir/CTestTestfile.cmake"
    echo "$dir"
}
run_ctest() {
    local who=$1
    shift
    local dir
    dir=$(test_dir "$who")
    section "cgroup tests as $who"
    local rc=0 exclude=()
    [[ -z "${ctest_exclude-$manager_re}" ]] || exclude=(-E "${ctest_exclude-$manager_re}")
    "$@" ctest --test-dir "$dir" -R "${ctest_re:-$tests_re}" -L "$labels_re" "${exclude[@]}" --timeout "$per_test" \
        --output-on-failure --output-junit "$dir/junit.xml" --no-tests=ignore || rc=$?
    if [[ ! -s "$dir/junit.xml" ]]; then
        result FAIL "ctest-$who" "ctest exited $rc and wrote no results"
        return
    fi
    # One line per test: STATUS NAME [message]. A GTEST_SKIP shows as notrun with the
    # skip-regex message; notrun for any other reason (a missing binary) is a failure.
    while read -r st name detail; do
        result "$st" "$who:$name" "$detail"
    done < <(awk '
        function flush() {
            if ((st == "SKIP" || st == "FAIL") && why != "") msg = why
            if (name != "") print st, name, msg
            name = ""
        }
        /<testcase / {
            flush()
            match($0, /name="[^"]*"/); name = substr($0, RSTART + 6, RLENGTH - 7)
            msg = ""; why = ""; grab = 0
            if ($0 ~ /status="run"/) st = "PASS"
            else if ($0 ~ /status="disabled"/) st = "SKIP"
            else st = "FAIL"
            if ($0 ~ /status="notrun"/) notrun = 1; else notrun = 0
            if ($0 ~ /\/>[ \t]*$/) flush()
        }
        /<skipped / && notrun { st = "SKIP"; if (match($0, /message="[^"]*"/)) msg = substr($0, RSTART + 9, RLENGTH - 10) }
        /<failure / { st = "FAIL"; if (match($0, /message="[^"]*"/)) msg = substr($0, RSTART + 9, RLENGTH - 10) }
        # A GTEST_SKIP() prints "FILE:LINE: Skipped", then its message; a failed
        # expectation "FILE:LINE: Failure", then what was expected: the first one shown.
        grab { why = where $0; grab = 0 }
        why == "" && /: (Skipped|Failure)$/ { grab = 1; where = ""; if (match($0, /[^\/]+:[0-9]+: /)) where = substr($0, RSTART, RLENGTH) }
        /<\/testcase>/ { flush() }
        END { flush() }' "$dir/junit.xml" | sed 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&apos;/'"'"'/g; s/&amp;/\&/g')
    rm -rf "$dir"
}
probe=$(test_dir probe)
count=$(ctest --test-dir "$probe" -N -R "$tests_re" -L "$labels_re" 2>/dev/null | awk '/^Total Tests:/ { print $3 }')
rm -rf "$probe"
if [[ "${count:-0}" == 0 ]]; then
    section "cgroup tests"
    result SKIP cgroup-tests "no test in this build matches $tests_re with a label matching $labels_re"
else
    run_ctest root
    run_ctest user "$as_user"
fi

# ---- The systemd route: a real user manager, a caller whose cgroup is not delegated ----

# Those of the selected tests (AGENTJAIL_VM_TESTS) that belong to this route.
probe=$(test_dir probe)
manager_count=$(ctest --test-dir "$probe" -N -R "$tests_re" -L "$labels_re" 2>/dev/null |
    sed -n 's/^ *Test *#[0-9]*: *//p' | grep -cE "$manager_re")
rm -rf "$probe"
if [[ "${count:-0}" == 0 ]]; then
    :
elif [[ "${manager_count:-0}" == 0 ]]; then
    section "systemd user manager"
    result SKIP systemd-scope "no test in this build matches $manager_re with a label matching $labels_re"
elif [[ ! -x /usr/lib/systemd/systemd ]]; then
    section "systemd user manager"
    result SKIP systemd-scope "no /usr/lib/systemd/systemd on the host, whose /usr the guest shares (package systemd)"
else
    ctest_re=$manager_re ctest_exclude="" run_ctest user-manager "$user_manager"
fi

# ---- Slurm on cgroup v2: OUT_OF_MEMORY and ML at once ------------------------------------

# A throwaway Slurm with cgroup/v2 (guest-slurm.sh): a task past its --mem is reported
# OUT_OF_MEMORY by Slurm and ML by agentjail's record, which the hybrid host's slurm
# tier cannot show. AGENTJAIL_VM_SLURM=0 leaves it out.
section "slurm (cgroup/v2)"
if [[ "${AGENTJAIL_VM_SLURM:-1}" == 0 ]]; then
    result SKIP slurm "AGENTJAIL_VM_SLURM=0"
else
    slurm_checks=0
    while read -r st name detail; do
        case "$st" in
            PASS | FAIL | SKIP) result "$st" "$name" "$detail" && slurm_checks=$((slurm_checks + 1)) ;;
            EXIT) ((detail == 0 && slurm_checks > 0)) || result FAIL slurm.exit "guest-slurm.sh exited $detail after $slurm_checks checks" ;;
            *) echo "    $st $name $detail" ;;
        esac
    done < <("$(dirname "${BASH_SOURCE[0]}")/guest-slurm.sh" "$build" 2>&1; echo "EXIT slurm $?")
fi

# ---- What the runs left behind ---------------------------------------------------------

section "leftovers"
# Every cgroup a run creates must be gone after it (the delegated subtree is checked
# and removed by guest-as-user.sh); a parent group agentjail keeps may stay, empty.
left=$(cd $cg && find . -mindepth 1 -type d ! -path ./init.scope | sed 's|^\./||' | sort)
live=""
for d in $left; do
    grep -q '^populated 1' "$cg/$d/cgroup.events" && live+=" $d"
done
[[ -z "$left" ]] || echo "cgroups left at the root: $(echo $left)"
if [[ -n "$live" ]]; then
    result FAIL leftovers.no-live-processes "processes still running in:$live"
else
    result PASS leftovers.no-live-processes
fi

section "summary"
printf '  %s\n' "${results[@]}"
echo "vm: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
