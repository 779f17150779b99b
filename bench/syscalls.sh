#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Syscall cost under each sandbox's seccomp filter, side by side in one run: ns per
# call of getppid (allowed whatever the arguments) and ioctl(FIONREAD) on a pipe
# (argument-filtered: TIOCSTI is refused), and of a whole loopback connect, TCP and
# Unix (socket, connect, accept, close: agentjail's socket gate makes the connect in
# its supervisor), and of fcntl(F_SETFL) on a socket (the gate makes that too), plain, under agentjail's minimal (no
# filter), default and strict policies, and under bubblewrap without a filter, with
# an allow-all filter (the floor: what any filter costs) and with an equivalent
# libseccomp filter (bench/bwrap_filter.c).
#
# Usage: bench/syscalls.sh [--rounds N] [--iterations N] [--out DIR]
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
# Every mode runs once per round, interleaved, so a burst of other load hits all of
# them alike; the table shows, per mode, the best round (min) and the median round.
set -euo pipefail

bench=syscalls.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
rounds=7
iterations=1000000

while (($# > 0)); do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --iterations) iterations=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 14; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need cc bwrap python3
open_out

# The default policy binds the current directory as the workspace: run from an empty
# scratch directory that also holds the probe, so every sandbox can see it.
enter_work
trap 'rm -rf -- "$work"' EXIT

cc -O2 -static -o "$work/syscalls" "$repo/bench/syscalls.c"
cc -O2 -o "$work/bwrap_filter" "$repo/bench/bwrap_filter.c" -lseccomp
"$work/bwrap_filter" >"$work/filter.bpf"
"$work/bwrap_filter" --allow-all >"$work/floor.bpf"

bw=(bwrap --unshare-all --die-with-parent --ro-bind / / --proc /proc --dev /dev)
probe=("$work/syscalls" "$iterations" 5)
names=(plain agentjail-minimal agentjail-default agentjail-strict bwrap bwrap-allow-all bwrap-seccomp)
run_mode() {
    case "$1" in
        plain) "${probe[@]}" ;;
        agentjail-minimal) "$aj" --policy minimal --ro "$work" -- "${probe[@]}" ;;
        agentjail-default) "$aj" -- "${probe[@]}" ;;
        agentjail-strict) "$aj" --policy strict -- "${probe[@]}" ;;
        bwrap) "${bw[@]}" "${probe[@]}" ;;
        bwrap-allow-all) "${bw[@]}" --seccomp 3 "${probe[@]}" 3<"$work/floor.bpf" ;;
        bwrap-seccomp) "${bw[@]}" --seccomp 3 "${probe[@]}" 3<"$work/filter.bpf" ;;
    esac
}

# Every mode must work before it is timed; one that fails is left out, loudly.
modes=()
for m in "${names[@]}"; do
    if run_mode "$m" >"$out/$m.check" 2>"$out/$m.err"; then
        modes+=("$m")
    else
        say "skipping $m: it failed: $(head -c 300 "$out/$m.err")"
    fi
done

say "${#modes[@]} modes, $rounds rounds of $iterations calls x 5 repeats each, from $work"
: >"$out/raw.txt"
for ((r = 1; r <= rounds; r++)); do
    for m in "${modes[@]}"; do
        run_mode "$m" 2>>"$out/$m.err" | sed "s/^/$m /" >>"$out/raw.txt"
    done
done

python3 - "$out/raw.txt" "$rounds" "$iterations" >"$out/summary.txt" <<'PY'
import os, platform, statistics, sys
from collections import defaultdict

rows = defaultdict(lambda: defaultdict(list))  # mode -> call -> [min of each round]
refused = defaultdict(dict)
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 3 and f[2] == "refused":
        refused[f[0]][f[1]] = " ".join(f[3:])
        continue
    if len(f) != 4:
        continue
    mode, call, _median, best = f[0], f[1], float(f[2]), float(f[3])
    if mode not in order:
        order.append(mode)
    rows[mode][call].append(best)

cpu = ""
try:
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            cpu = l.split(":", 1)[1].strip()
            break
except OSError:
    pass
print(f"host: Linux {platform.release()}, {os.cpu_count()} CPUs ({cpu}); "
      f"{sys.argv[2]} rounds x {sys.argv[3]} calls; ns per call, min / median of rounds")
calls = ["getppid", "ioctl_fionread", "connect_tcp", "connect_unix", "fcntl_setfl"]
base = {c: min(rows["plain"][c]) if rows["plain"][c] else None for c in calls}
ref = {c: min(rows["agentjail-minimal"][c]) if rows["agentjail-minimal"][c] else None for c in calls}
hdr = f"{'mode':<20}" + "".join(f"{c + ' min':>20}{'median':>9}{'vs nofilter':>13}" for c in calls)
print(hdr)
for m in order + [m for m in refused if m not in order]:
    line = f"{m:<20}"
    for c in calls:
        v = rows[m][c]
        if not v:
            line += f"{refused[m].get(c, 'n/a'):>42}"
            continue
        lo, med = min(v), statistics.median(v)
        # agentjail modes against minimal (same sandbox, no filter), others against plain
        b = ref[c] if m.startswith("agentjail") else (min(rows["bwrap"][c]) if m.startswith("bwrap-") and rows["bwrap"][c] else base[c])
        rel = f"{(lo / b - 1) * 100:+.1f}%" if b else "-"
        line += f"{lo:>20.1f}{med:>9.1f}{rel:>13}"
    print(line)
PY
echo
cat "$out/summary.txt"
say "results in $out (raw.txt, summary.txt, *.err)"
