#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What limits cost at startup: one hyperfine run of `agentjail --policy minimal --
# /bin/true` without limits, with `-m 1G --pids 100` (a cgroup made, configured and
# removed: v2, or v1 on a hybrid host), and `systemd-run --scope` with the same
# properties where systemd runs (it says so when it does not); then the medians and
# what the limits add in milliseconds.
#
# Usage: bench/limits.sh [--runs N] [--warmup N] [--out DIR]
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
# Results (hyperfine JSON and Markdown, summary.txt) go to --out, by default a new
# directory under /tmp, printed at the end. Run as root (or in a delegated cgroup v2
# subtree): elsewhere agentjail refuses limits it cannot enforce, and says why.
set -euo pipefail

bench=limits.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs=200
warmup=20

while (($# > 0)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 13; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need hyperfine python3
open_out
enter_work
trap 'rm -rf -- "$work"' EXIT
add no-limits "$aj --policy minimal -- /bin/true"
add limits "$aj --policy minimal -m 1G --pids 100 -- /bin/true"
# Which cgroup the limits run got, for the summary.
layer=$("$aj" --policy minimal -m 1G --pids 100 --json -- /bin/true 2>/dev/null |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])["layers"]["cgroup"])' 2>/dev/null ||
    echo "none (refused)")

# systemd-run --scope: the same properties (MemoryMax, MemorySwapMax=0, TasksMax), a
# transient scope made over D-Bus by PID 1. Only where systemd is the running init.
systemd_note=""
state=$(systemctl is-system-running 2>/dev/null || true)
if ! command -v systemd-run >/dev/null; then
    systemd_note="systemd-run is not installed: no systemd comparison"
elif [[ ! -d /run/systemd/system ]] || [[ "$state" == offline || -z "$state" ]]; then
    systemd_note="systemd is not running here (PID 1 is $(ps -o comm= -p 1 2>/dev/null || echo '?'), systemctl says '${state:-nothing}'): no systemd-run --scope comparison"
else
    add systemd-run-scope "systemd-run --quiet --scope -p MemoryMax=1G -p MemorySwapMax=0 -p TasksMax=100 /bin/true"
fi
[[ -n "$systemd_note" ]] && say "$systemd_note"

args=()
for i in "${!names[@]}"; do
    args+=(-n "${names[$i]}" "${cmds[$i]}")
done
say "hyperfine: ${#names[@]} commands, $warmup warmup runs and $runs runs each; the limits run uses cgroup $layer"
hyperfine -N --style basic --warmup "$warmup" --runs "$runs" \
    --export-json "$out/limits.json" --export-markdown "$out/limits.md" "${args[@]}"

python3 - "$out/limits.json" "$runs" "$layer" "$systemd_note" >"$out/summary.txt" <<'EOF'
import json, os, platform, sys

results = json.load(open(sys.argv[1]))["results"]
by = {r["command"]: r for r in results}
ms = lambda r: r["median"] * 1000.0
base = by.get("no-limits")
print(f"host: Linux {platform.release()}, {os.cpu_count()} CPUs, {sys.argv[2]} runs each; limits via cgroup {sys.argv[3]}")
if sys.argv[4]:
    print(f"note: {sys.argv[4]}")
print(f"{'command':<20} {'median ms':>10} {'mean ms':>9} {'stddev':>8} {'+ms vs no-limits':>17}")
for r in results:
    extra = f"{ms(r) - ms(base):+.2f}" if base else "-"
    print(f"{r['command']:<20} {ms(r):>10.2f} {r['mean'] * 1000:>9.2f} {r['stddev'] * 1000:>8.2f} {extra:>17}")
if base and "limits" in by:
    add = ms(by["limits"]) - ms(base)
    print(f"limits add {add:.2f} ms to startup (aim: under 1 ms)")
EOF
echo
cat "$out/summary.txt"
say "results in $out (limits.json, limits.md, summary.txt)"
