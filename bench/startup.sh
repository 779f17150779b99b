#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Startup cost of a sandbox: one hyperfine run of /bin/true plain, under unshare,
# bubblewrap, firejail (when installed) and agentjail (minimal and default policies,
# default without Landlock, default with -m 1G --pids 100, default with --net proxy,
# and `agentjail --version`),
# then the medians, the ratios against plain and bubblewrap, the goals of issue 12
# met or not, and the supervisor's memory during a run (VmRSS, Pss, anonymous).
#
# Usage: bench/startup.sh [--runs N] [--warmup N] [--out DIR]
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
#   AGENTJAIL_BASELINE   another build's binary (an earlier commit's), measured in the
#                        same run as baseline-default and baseline-minimal, each right
#                        after the row it is compared with; the summary prints the
#                        differences ("is starting slower than before?")
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
add agentjail-version "$aj --version"
add agentjail-minimal "$aj --policy minimal -- /bin/true"
if [[ -n ${AGENTJAIL_BASELINE:-} ]]; then
    [[ -x $AGENTJAIL_BASELINE ]] || { say "AGENTJAIL_BASELINE: $AGENTJAIL_BASELINE is not an executable"; exit 2; }
    add baseline-minimal "$AGENTJAIL_BASELINE --policy minimal -- /bin/true"
fi
add agentjail-default "$aj -- /bin/true"
# Landlock's share of default (docs/landlock.md): the same run without it.
add agentjail-nolandlock "$aj --landlock off -- /bin/true"
if [[ -n ${AGENTJAIL_BASELINE:-} ]]; then
    add baseline-default "$AGENTJAIL_BASELINE -- /bin/true"
fi
# Limits need a cgroup: as root, or in a delegated cgroup v2 subtree; elsewhere the
# row is skipped with agentjail's refusal (add says so).
add agentjail-limits "$aj -m 1G --pids 100 -- /bin/true"
add agentjail-proxy "$aj --net proxy -- /bin/true"

args=()
for i in "${!names[@]}"; do
    args+=(-n "${names[$i]}" "${cmds[$i]}")
done

say "hyperfine: ${#names[@]} commands, $warmup warmup runs and $runs runs each, from $work"
hyperfine -N --style basic --warmup "$warmup" --runs "$runs" \
    --export-json "$out/startup.json" --export-markdown "$out/startup.md" "${args[@]}"

# The supervisor's memory: agentjail's own process while the command (sleep) runs,
# read from /proc after it has settled. VmRSS counts the binary's pages it touched
# (shared with every other agentjail through the page cache); Pss shares them out;
# the anonymous part is what each supervisor costs on its own.
memory() {
    local policy=$1 pid
    "$aj" --policy "$policy" -- sleep 1 &
    pid=$!
    sleep 0.5
    printf '%s' "$policy"
    awk '/^(Rss|Pss|Pss_Anon|Anonymous):/ {printf " %s=%s", $1, $2}' "/proc/$pid/smaps_rollup"
    awk '/^Threads:/ {printf " Threads:=%s", $2}' "/proc/$pid/status"
    echo
    wait "$pid"
}
{ memory minimal; memory default; } >"$out/memory.txt"

python3 - "$out/startup.json" "$runs" "$out/memory.txt" >"$out/summary.txt" <<'EOF'
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

# Issue 12's goals, each a ratio or a difference within this one run.
def goal(name, value, limit, unit):
    ok = "met" if value <= limit else "NOT met"
    print(f"  {name:<44} {value:>6.2f}{unit} (goal <= {limit}{unit}): {ok}")
print()
print("goals (issue 12):")
def ratio(a, b):
    return ms(by[a]) / ms(by[b]) if a in by and b in by else None
def added(a, b):
    return ms(by[a]) - ms(by[b]) if a in by and b in by else None
for name, v, limit, unit in (
        ("default / bwrap", ratio("agentjail-default", "bwrap"), 0.8, "x"),
        ("minimal / unshare", ratio("agentjail-minimal", "unshare"), 1.3, "x"),
        ("--version / /bin/true", ratio("agentjail-version", "plain"), 1.5, "x"),
        ("-m 1G --pids 100 added to default", added("agentjail-limits", "agentjail-default"), 1, " ms"),
        ("--net proxy added to default", added("agentjail-proxy", "agentjail-default"), 2, " ms")):
    if v is None:
        print(f"  {name:<44} not measured (a row was skipped)")
    else:
        goal(name, v, limit, unit)
if "baseline-default" in by:
    print()
    print("against the baseline build (AGENTJAIL_BASELINE), median ms:")
    for row in ("default", "minimal"):
        a, b = by.get("agentjail-" + row), by.get("baseline-" + row)
        if a and b:
            print(f"  {row:<8} baseline {ms(b):6.2f}  this build {ms(a):6.2f}  difference {ms(a) - ms(b):+6.2f}")
print()
print("supervisor memory during a run, kB (goal: resident <= 2048):")
for line in open(sys.argv[3]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    rss, pss, anon = (int(f.get(k, 0)) for k in ("Rss:", "Pss:", "Anonymous:"))
    print(f"  {line.split()[0]:<8} VmRSS {rss:>6}  Pss {pss:>6}  anonymous {anon:>6}"
          f"  threads {f.get('Threads:', '?')}")
EOF
echo
cat "$out/summary.txt"
say "results in $out (startup.json, startup.md, summary.txt)"
