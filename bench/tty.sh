#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the stdio relay costs (issue 9): (1) a large `cat` to a terminal, timed inside
# a pane of a private tmux server, direct, under agentjail (pty relay with the output
# filter, with --tty-raw, and --no-tty: pipes to the terminal) and under bubblewrap
# (the terminal itself, no relay); (2) the same file, read PASSES times, without a
# terminal: `> /dev/null` and `| wc -c` (the pipe relay), direct and under agentjail;
# (3) the keystroke round trip: bench/ptyrt.c writes one byte to a pty and times its
# echo from bench/ttyecho.c, direct, under agentjail (both output modes) and bwrap.
#
# Usage: bench/tty.sh [--rounds N] [--size BYTES] [--passes N] [--keys N] [--out DIR]
#   --rounds N   interleaved rounds of sections 1 and 2 (5); the median is reported
#   --size BYTES the text file (256 MiB of base64 lines)
#   --passes N   how many times section 2 reads the file per run (4)
#   --keys N     timed round trips per mode in section 3 (1000, after 100 untimed)
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
# Results (raw times and summary.txt) go to --out, by default a new directory under
# /tmp, printed at the end.
set -euo pipefail

bench=tty.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
rounds=5
size=$((256 << 20))
passes=4
keys=1000

while (($# > 0)); do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --passes) passes=$2; shift 2 ;;
        --keys) keys=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 18; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need cc tmux python3 base64
open_out

# The default policy binds the current directory as the workspace: the file and the
# helpers live in a scratch directory, so every sandbox sees them at the same path.
enter_work
sock=agentjail-bench-$$
sock_path=""
cleanup() {
    tmux -L "$sock" kill-server 2>/dev/null || true
    # tmux leaves its socket behind when the server ends with its last pane.
    [[ -z "$sock_path" ]] || rm -f -- "$sock_path"
    rm -rf -- "$work"
}
trap cleanup EXIT

cc -O2 -o "$work/ptyrt" "$repo/bench/ptyrt.c" -lutil
cc -O2 -o "$work/ttyecho" "$repo/bench/ttyecho.c"
# Printable text in 76-column lines, as a log or a build's output is (random, so the
# terminal cannot take shortcuts on repeated lines).
head -c $((size * 3 / 4)) /dev/urandom | base64 >"$work/big.txt"
size=$(stat -c %s "$work/big.txt")
cat "$work/big.txt" >/dev/null  # in the page cache before the first timed read

bwrap_cmd=""
if command -v bwrap >/dev/null; then
    bwrap_cmd="bwrap --unshare-all --die-with-parent --ro-bind / / --proc /proc --dev /dev"
    $bwrap_cmd /bin/true 2>"$out/bwrap.err" || { say "bwrap cannot run here, its rows are left out: $(head -c 300 "$out/bwrap.err")"; bwrap_cmd=""; }
else
    say "bwrap is not installed (scripts/setup.sh): its rows are left out"
fi

# Section 1: the terminal is a tmux pane; the driver runs in it and times each
# command there, so tmux's parsing of the output is part of every mode alike.
tty_modes=(direct agentjail agentjail-tty-raw agentjail-no-tty)
[[ -z "$bwrap_cmd" ]] || tty_modes+=(bwrap)
cat >"$work/drive.sh" <<EOF
cd "$work"
run() {
    case \$1 in
        direct) cat big.txt ;;
        agentjail) "$aj" -- cat big.txt ;;
        agentjail-tty-raw) "$aj" --tty-raw -- cat big.txt ;;
        agentjail-no-tty) "$aj" --no-tty -- cat big.txt ;;
        bwrap) $bwrap_cmd cat big.txt ;;
    esac
}
for round in \$(seq $rounds); do
    for mode in ${tty_modes[*]}; do
        t0=\$(date +%s.%N)
        run \$mode 2>>"$out/tty.err" || echo "\$mode failed: \$?" >>"$out/tty.err"
        t1=\$(date +%s.%N)
        echo "tty \$mode \$t0 \$t1" >>"$out/times.txt"
    done
done
tmux -L "$sock" wait-for -S done
EOF
: >"$out/times.txt"
: >"$out/tty.err"
say "section 1: $((size >> 20)) MiB to a tmux pane, ${#tty_modes[@]} modes, $rounds rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
tmux -L "$sock" -f /dev/null new-session -d -s bench -x 200 -y 50 "bash $work/drive.sh"
sock_path=$(tmux -L "$sock" display-message -p '#{socket_path}')
timeout $((rounds * ${#tty_modes[@]} * 120 + 60)) tmux -L "$sock" wait-for "done" ||
    { say "the tmux driver did not finish: $(tail -n3 "$out/tty.err")"; exit 1; }
tmux -L "$sock" kill-server 2>/dev/null || true
[[ ! -s "$out/tty.err" ]] || say "errors inside the pane: $(head -c 400 "$out/tty.err")"

# Section 2: no terminal anywhere (stdin from /dev/null, stderr to a file), so
# agentjail gives the command pipes and relays them.
files=()
for _ in $(seq "$passes"); do files+=(big.txt); done
pipe_modes=(direct-null agentjail-null direct-wc agentjail-wc agentjail-true)
say "section 2: $((size * passes >> 20)) MiB per run without a terminal, $rounds rounds"
for _ in $(seq "$rounds"); do
    for mode in "${pipe_modes[@]}"; do
        t0=$(date +%s.%N)
        case $mode in
            direct-null) cat "${files[@]}" >/dev/null ;;
            agentjail-null) "$aj" -- cat "${files[@]}" >/dev/null ;;
            direct-wc) cat "${files[@]}" | wc -c >"$out/wc.txt" ;;
            agentjail-wc) "$aj" -- cat "${files[@]}" | wc -c >"$out/wc.txt" ;;
            agentjail-true) "$aj" -- /bin/true ;;
        esac </dev/null 2>>"$out/pipe.err"
        t1=$(date +%s.%N)
        echo "pipe $mode $t0 $t1" >>"$out/times.txt"
        if [[ $mode == *-wc && $(cat "$out/wc.txt") != $((size * passes)) ]]; then
            say "$mode counted $(cat "$out/wc.txt") bytes, not $((size * passes))"
            exit 1
        fi
    done
done

# Section 3: ptyrt is the terminal; the command under it echoes each byte.
key_modes=(direct agentjail agentjail-tty-raw)
[[ -z "$bwrap_cmd" ]] || key_modes+=(bwrap)
say "section 3: $keys keystroke round trips per mode"
: >"$out/keys.txt"
for mode in "${key_modes[@]}"; do
    case $mode in
        direct) cmd=(./ttyecho) ;;
        agentjail) cmd=("$aj" -- ./ttyecho) ;;
        agentjail-tty-raw) cmd=("$aj" --tty-raw -- ./ttyecho) ;;
        bwrap) read -r -a cmd <<<"$bwrap_cmd ./ttyecho" ;;
    esac
    if r=$(./ptyrt "$keys" 100 "${cmd[@]}" </dev/null 2>>"$out/keys.err"); then
        echo "$mode $r" >>"$out/keys.txt"
    else
        say "skipping $mode in section 3: $(tail -n1 "$out/keys.err")"
    fi
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$out" "$size" "$passes" "$rounds" "$load_before" "$load_after" <<'EOF' | tee "$out/summary.txt"
import os, platform, statistics, sys

out, size, passes, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cpu = ""
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
print(f"host: Linux {platform.release()}, {os.cpu_count()} CPUs ({cpu}), {rounds} rounds; "
      f"load average before {sys.argv[5]}, after {sys.argv[6]}")
times = {}
for line in open(f"{out}/times.txt"):
    sec, mode, t0, t1 = line.split()
    times.setdefault((sec, mode), []).append(float(t1) - float(t0))
med = lambda sec, mode: statistics.median(times[(sec, mode)])
mib = 1 << 20

print(f"\n1. {size / mib:.0f} MiB of text to a tmux pane (median wall time inside the pane)")
print(f"{'mode':<20} {'median s':>9} {'best s':>8} {'MiB/s':>7} {'x direct':>9}")
d = med("tty", "direct")
for (sec, mode), v in times.items():
    if sec != "tty":
        continue
    m = statistics.median(v)
    print(f"{mode:<20} {m:>9.3f} {min(v):>8.3f} {size / mib / m:>7.1f} {d / m:>9.2f}")

print(f"\n2. {size * passes / mib:.0f} MiB without a terminal (median wall time; 'net' takes off "
      "the median start of `agentjail -- /bin/true`)")
print(f"{'mode':<20} {'median s':>9} {'MiB/s':>8} {'net MiB/s':>10} {'x direct':>9}")
start = med("pipe", "agentjail-true")
for kind in ("null", "wc"):
    d = med("pipe", f"direct-{kind}")
    for mode in (f"direct-{kind}", f"agentjail-{kind}"):
        m = med("pipe", mode)
        net = m - start if mode.startswith("agentjail") else m
        print(f"{mode:<20} {m:>9.3f} {size * passes / mib / m:>8.0f} "
              f"{size * passes / mib / net:>10.0f} {d / net:>9.2f}")
print(f"{'agentjail-true':<20} {start:>9.3f}")

print("\n3. keystroke round trip (microseconds)")
print(f"{'mode':<20} {'median':>8} {'p99':>8} {'mean':>8} {'max':>8} {'added (median)':>15}")
rows = [l.split() for l in open(f"{out}/keys.txt")]
base = next((float(r[2]) for r in rows if r[0] == "direct"), None)
for mode, n, m, p99, mean, mx in rows:
    added = f"{float(m) - base:+.1f}" if base is not None else "-"
    print(f"{mode:<20} {float(m):>8.1f} {float(p99):>8.1f} {float(mean):>8.1f} {float(mx):>8.1f} {added:>15}")
EOF
say "results in $out (times.txt, keys.txt, summary.txt)"
