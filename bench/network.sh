#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The network proxy's cost, side by side in one run: throughput of one large download
# (default 1 GiB) and the time per new connection (sequential small requests, each on
# a fresh connection), from a loopback origin server (bench/netserve.c) outside the
# sandbox, for:
#   direct            curl on the host straight to the server (the ceiling)
#   splice-relay      curl on the host through bench/relay.c, a bare splice(2) relay
#                     with a blocking thread per direction: what the extra hops of
#                     any proxy cost on this machine, without a proxy's own work
#   agentjail         curl inside agentjail through its proxy's CONNECT tunnel
#                     (the name is pinned to the server with [network.hosts])
#   agentjail-http    the same through the proxy's plain-HTTP forwarding (no CONNECT)
#   srt               curl inside sandbox-runtime (srt, from npm) through its proxy's
#                     CONNECT tunnel (127.0.0.1:PORT allowed by IP literal)
# curl's own timers (-w) are used, so sandbox start-up is not counted.
#
# Usage: bench/network.sh [--rounds N] [--size BYTES] [--requests N] [--out DIR]
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
#   SRT_BIN              sandbox-runtime's CLI (default: srt in PATH; skipped if absent)
# Every mode runs once per round, interleaved, so a burst of other load hits all of
# them alike; the table shows, per mode, the best and the median round.
set -euo pipefail

bench=network.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
srt_bin=${SRT_BIN:-$(command -v srt || true)}
rounds=5
size=$((1 << 30))
requests=200

while (($# > 0)); do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --requests) requests=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 19; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need cc curl python3
open_out

# The default policy binds the current directory as the workspace: run from a
# scratch directory that holds the curl config files, so every sandbox sees them.
enter_work
server_pid=""
relay_pid=""
cleanup() {
    [[ -z "$server_pid" ]] || kill "$server_pid" 2>/dev/null || true
    [[ -z "$relay_pid" ]] || kill "$relay_pid" 2>/dev/null || true
    rm -rf -- "$work"
}
trap cleanup EXIT

cc -O2 -pthread -o "$work/netserve" "$repo/bench/netserve.c"
"$work/netserve" >"$work/port" &
server_pid=$!
for _ in $(seq 50); do [[ -s "$work/port" ]] && break; sleep 0.1; done
port=$(head -n1 "$work/port")
[[ -n "$port" ]] || { say "the origin server did not start"; exit 1; }

# A reference relay: a bare splice loop between two sockets, no policy, no parsing.
cc -O2 -pthread -o "$work/relay" "$repo/bench/relay.c"
"$work/relay" "$port" >"$work/relay_port" &
relay_pid=$!
for _ in $(seq 50); do [[ -s "$work/relay_port" ]] && break; sleep 0.1; done
relay_port=$(head -n1 "$work/relay_port")
[[ -n "$relay_port" ]] || { say "the splice relay did not start"; exit 1; }

cat >"$work/net.toml" <<EOF
extends = "default"

[network]
mode = "proxy"
allow = ["example.test:$port"]

[network.hosts]
"example.test" = "127.0.0.1"
EOF

srt_ok=0
if [[ -n "$srt_bin" ]]; then
    cat >"$work/srt.json" <<EOF
{"network": {"allowedDomains": ["127.0.0.1:$port"], "deniedDomains": []},
 "filesystem": {"denyRead": [], "allowWrite": ["$work"], "denyWrite": []}}
EOF
    if srt_err=$("$srt_bin" --settings "$work/srt.json" -c "curl -sS -m 10 -p --noproxy '' -o /dev/null http://127.0.0.1:$port/s" 2>&1); then
        srt_ok=1
    else
        say "srt cannot run here, its rows are left out: $(printf '%s' "$srt_err" | tail -n1)"
    fi
else
    say "srt is not installed (scripts/setup.sh --bench, or npm install -g @anthropic-ai/sandbox-runtime): its rows are left out"
fi

# curl config files: one URL per new connection (the server closes each one).
make_config() { # file url
    : >"$1"
    for _ in $(seq "$requests"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$2" >>"$1"; done
}
make_config "$work/direct.cfg" "http://127.0.0.1:$port/s"
make_config "$work/relay.cfg" "http://127.0.0.1:$relay_port/s"
make_config "$work/pinned.cfg" "http://example.test:$port/s"
make_config "$work/srt.cfg" "http://127.0.0.1:$port/s"

big_direct="http://127.0.0.1:$port/bytes/$size"
big_pinned="http://example.test:$port/bytes/$size"
curl_w=(-sS --max-time 600 -w '%{size_download} %{time_total}\n')

# run_mode MODE KIND: prints "bytes seconds" lines (one for thru, $requests for lat).
run_mode() {
    local mode=$1 kind=$2
    case $mode in
        direct)
            if [[ $kind == thru ]]; then curl "${curl_w[@]}" --noproxy '*' -o /dev/null "$big_direct"
            else curl "${curl_w[@]}" --noproxy '*' -K "$work/direct.cfg"; fi ;;
        splice-relay)
            if [[ $kind == thru ]]; then curl "${curl_w[@]}" --noproxy '*' -o /dev/null "http://127.0.0.1:$relay_port/bytes/$size"
            else curl "${curl_w[@]}" --noproxy '*' -K "$work/relay.cfg"; fi ;;
        agentjail)
            if [[ $kind == thru ]]; then "$aj" -p "$work/net.toml" -- curl "${curl_w[@]}" -p -o /dev/null "$big_pinned"
            else "$aj" -p "$work/net.toml" -- curl "${curl_w[@]}" -p -K "$work/pinned.cfg"; fi ;;
        agentjail-http)
            if [[ $kind == thru ]]; then "$aj" -p "$work/net.toml" -- curl "${curl_w[@]}" -o /dev/null "$big_pinned"
            else "$aj" -p "$work/net.toml" -- curl "${curl_w[@]}" -K "$work/pinned.cfg"; fi ;;
        srt)
            if [[ $kind == thru ]]; then
                "$srt_bin" --settings "$work/srt.json" -c "curl -sS --max-time 600 -w '%{size_download} %{time_total}\n' -p --noproxy '' -o /dev/null '$big_direct'"
            else
                "$srt_bin" --settings "$work/srt.json" -c "curl -sS --max-time 600 -w '%{size_download} %{time_total}\n' -p --noproxy '' -K '$work/srt.cfg'"
            fi ;;
    esac
}

modes=(direct splice-relay agentjail agentjail-http)
((srt_ok == 0)) || modes+=(srt)
say "origin on 127.0.0.1:$port; $rounds rounds of a $size-byte download and $requests new connections per mode"
for r in $(seq "$rounds"); do
    for m in "${modes[@]}"; do
        run_mode "$m" thru >"$out/$m.thru.$r" 2>"$out/$m.thru.$r.err" || say "$m round $r (download) failed: $(tail -n1 "$out/$m.thru.$r.err")"
        run_mode "$m" lat >"$out/$m.lat.$r" 2>"$out/$m.lat.$r.err" || say "$m round $r (connections) failed: $(tail -n1 "$out/$m.lat.$r.err")"
    done
    say "round $r done"
done

python3 - "$out" "$rounds" "$size" "$requests" "${modes[@]}" <<'EOF' | tee "$out/summary.txt"
import os, statistics, sys
out, rounds, size, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
modes = sys.argv[5:]
def rows(mode, kind):
    res = []
    for r in range(1, rounds + 1):
        p = os.path.join(out, f"{mode}.{kind}.{r}")
        lines = [l.split() for l in open(p).read().splitlines() if l.strip()] if os.path.exists(p) else []
        ok = [(int(float(a)), float(b)) for a, b in lines]
        if kind == "thru":
            if ok and ok[0][0] == size:
                res.append(size / ok[0][1] / 2**20)  # MiB/s
        else:
            if len(ok) == requests:
                res.append(sum(t for _, t in ok) / len(ok) * 1000)  # ms per connection
    return res
thru = {m: rows(m, "thru") for m in modes}
lat = {m: rows(m, "lat") for m in modes}
d_thru = statistics.median(thru["direct"]) if thru["direct"] else None
d_lat = statistics.median(lat["direct"]) if lat["direct"] else None
r_thru = statistics.median(thru["splice-relay"]) if thru.get("splice-relay") else None
print(f"download of {size} bytes (MiB/s) and {requests} sequential new connections (ms each), {rounds} rounds")
print(f"{'mode':<16}{'best MiB/s':>12}{'median':>10}{'% direct':>10}{'% relay':>9}{'best ms':>10}{'median':>9}{'added ms':>10}")
for m in modes:
    t, l = thru[m], lat[m]
    tb = f"{max(t):.0f}" if t else "-"
    tm = f"{statistics.median(t):.0f}" if t else "-"
    tp = f"{statistics.median(t) / d_thru * 100:.0f}%" if t and d_thru else "-"
    tr = f"{statistics.median(t) / r_thru * 100:.0f}%" if t and r_thru else "-"
    lb = f"{min(l):.3f}" if l else "-"
    lm = f"{statistics.median(l):.3f}" if l else "-"
    la = f"{statistics.median(l) - d_lat:+.3f}" if l and d_lat is not None else "-"
    print(f"{m:<16}{tb:>12}{tm:>10}{tp:>10}{tr:>9}{lb:>10}{lm:>9}{la:>10}")
EOF
say "raw figures in $out"
