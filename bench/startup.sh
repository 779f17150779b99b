#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Startup cost of a sandbox: one hyperfine run of /bin/true plain, under unshare,
# bubblewrap, firejail (when installed) and agentjail (minimal and default policies),
# then the medians and the ratios against plain and against bubblewrap.
#
# Usage: bench/startup.sh [--runs N] [--warmup N] [--out DIR]
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
# Results (hyperfine JSON and Markdown, and summary.txt) go to --out, by default a
# new directory under /tmp, printed at the end.
set -euo pipefail

bench=startup.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs=200
warmup=20

while (($# > 0)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 10; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need hyperfine bwrap unshare python3
open_out

# The default policy binds the current directory as the workspace and refuses the
# home directory, so measure from an empty scratch workspace (also keeps the
# workspace's own size out of the figures).
enter_work
trap 'rm -rf -- "$work"' EXIT
add plain "/bin/true"
add unshare "unshare --user --map-current-user --mount --pid --fork --net --ipc --uts /bin/true"
add bwrap "bwrap --unshare-all --die-with-parent --ro-bind / / --proc /proc --dev /dev /bin/true"
if command -v firejail >/dev/null; then
    add firejail "firejail --quiet --noprofile /bin/true"
fi
add agentjail-minimal "$aj --policy minimal -- /bin/true"
add agentjail-default "$aj -- /bin/true"

args=()
for i in "${!names[@]}"; do
    args+=(-n "${names[$i]}" "${cmds[$i]}")
done

say "hyperfine: ${#names[@]} commands, $warmup warmup runs and $runs runs each, from $work"
hyperfine -N --style basic --warmup "$warmup" --runs "$runs" \
    --export-json "$out/startup.json" --export-markdown "$out/startup.md" "${args[@]}"

python3 - "$out/startup.json" "$runs" >"$out/summary.txt" <<'EOF'
import json, os, platform, sys

results = json.load(open(sys.argv[1]))["results"]
by = {r["command"]: r for r in results}
ms = lambda r: r["median"] * 1000.0
plain = by.get("plain")
bwrap = by.get("bwrap")
cpu = ""
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
print(f"host: Linux {platform.release()}, {os.cpu_count()} CPUs ({cpu}), {sys.argv[2]} runs each")
print(f"{'command':<20} {'median ms':>10} {'mean ms':>9} {'stddev':>8} {'x plain':>8} {'x bwrap':>8}")
for r in results:
    vs_plain = f"{ms(r) / ms(plain):.1f}" if plain else "-"
    vs_bwrap = f"{ms(r) / ms(bwrap):.2f}" if bwrap else "-"
    print(f"{r['command']:<20} {ms(r):>10.2f} {r['mean'] * 1000:>9.2f} {r['stddev'] * 1000:>8.2f}"
          f" {vs_plain:>8} {vs_bwrap:>8}")
EOF
echo
cat "$out/summary.txt"
say "results in $out (startup.json, startup.md, summary.txt)"
