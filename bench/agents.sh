#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real agent under the sandboxes: Claude Code's `claude --version` and a one-turn
# `claude -p` against the tests' stand-in model API (aj_model_standin, on the host's
# loopback), plain, under agentjail and under sandbox-runtime (srt), in one hyperfine run.
#
# Usage: bench/agents.sh [--runs N] [--warmup N] [--out DIR]
#   AGENTJAIL_BIN          the binary to measure (default: build/bin/agentjail)
#   AGENTJAIL_CLIENTS_DIR  where scripts/setup.sh put the clients (default: .clients)
# Needs scripts/build.sh (agentjail and build/tests/aj_model_standin) and scripts/setup.sh
# (the pinned clients; srt also needs socat and ripgrep: scripts/setup.sh --bench).
# Results (hyperfine JSON and Markdown, and summary.txt) go to --out, by default a new
# directory under /tmp, printed at the end.
set -euo pipefail

bench=agents.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs=10
warmup=2

while (($# > 0)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 13; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need hyperfine openssl python3
clients=${AGENTJAIL_CLIENTS_DIR:-$repo/.clients}
bin=$clients/node_modules/.bin
standin_bin=$repo/${AGENTJAIL_BUILD_DIR:-build}/tests/aj_model_standin
[[ -x "$bin/claude" ]] || { say "claude is missing in $clients: run scripts/setup.sh"; exit 1; }
[[ -x "$standin_bin" ]] || { say "$standin_bin is missing: run scripts/build.sh"; exit 1; }
open_out

# A scratch workspace, and in it the home, temp dir, certificate and policy of every
# run: nothing of the caller's own Claude Code state is read or written.
enter_work
pids=()
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf -- "$work"
}
trap cleanup EXIT
mkdir -p ws home tmp

# start_standin NAME [ARGS]: an aj_model_standin in the background; its port in $port.
start_standin() {
    local name=$1
    shift
    "$standin_bin" "$@" >"$work/$name.port" 2>"$out/$name.log" &
    pids+=($!)
    local i
    for i in $(seq 100); do
        [[ -s "$work/$name.port" ]] && break
        sleep 0.05
    done
    port=$(cat "$work/$name.port")
    [[ -n "$port" ]] || { say "the stand-in did not start: $(cat "$out/$name.log")"; exit 1; }
}

# Plain HTTP for plain claude and srt; HTTPS at a pinned name for agentjail's proxy,
# which puts a secret in over verified TLS only.
start_standin standin
http_port=$port
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=model.test \
    -addext subjectAltName=DNS:model.test -keyout "$work/model.key" -out "$work/model.crt" 2>/dev/null
start_standin standin-tls --tls "$work/model.crt" "$work/model.key"
tls_port=$port

# What every run gets (hyperfine passes its environment on): a key for the stand-in,
# Claude Code's switches (no start-up calls to api.anthropic.com, --dangerously-skip-
# permissions allowed as root), and a home and temp dir of the scratch directory's.
# Nothing of a Claude Code session the bench may be started from (its config dir, its
# credentials, its nesting marker) reaches the plain rows.
unset CLAUDE_CONFIG_DIR ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_OAUTH_TOKEN ANTHROPIC_MODEL CLAUDECODE \
    CLAUDE_CODE_ENTRYPOINT HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy
export HOME=$work/home TMPDIR=$work/tmp CLAUDE_CODE_TMPDIR=$work/tmp
export ANTHROPIC_API_KEY=sk-bench-standin ANTHROPIC_BASE_URL=http://127.0.0.1:$http_port
export IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
cd "$work/ws"

# agentjail: the clients' prefix read-only and on PATH; two network setups until the
# gateway for a loopback base URL lands: the host's network with the key inside
# (--net host: the sandbox's cost without the proxy), and the proxy with the key as a
# secret (the real key never inside) to the stand-in's HTTPS at a pinned name.
cat >"$work/secret.toml" <<EOF
extends = "default"

[network]
mode = "proxy"

[network.hosts]
"model.test" = "127.0.0.1"

[secrets]
ANTHROPIC_API_KEY = { source = "env:ANTHROPIC_API_KEY", hosts = ["model.test:$tls_port"] }
EOF
aj_common="$aj --ro $clients -e PATH=$bin:/usr/bin:/bin -e IS_SANDBOX -e CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"
aj_host="$aj_common --net host -e ANTHROPIC_API_KEY -e ANTHROPIC_BASE_URL"
aj_secret="env SSL_CERT_FILE=$work/model.crt $aj_common -p $work/secret.toml -e ANTHROPIC_BASE_URL=https://model.test:$tls_port"

# srt: the workspace, home and temp dir writable, the stand-in's origin allowed. srt
# reaches the network only through its proxy, and its NO_PROXY lists 127.0.0.1, so
# the command clears NO_PROXY for claude to go through the proxy to the stand-in.
cat >"$work/srt.json" <<EOF
{"network": {"allowedDomains": ["127.0.0.1:$http_port"], "deniedDomains": []},
 "filesystem": {"denyRead": [], "allowWrite": ["$work"], "denyWrite": []}}
EOF

# add_print NAME CMD: like add, and the run must have got the stand-in's answer (an
# agent that fails to reach its model fails slowly, after retries, or fast, with an error).
add_print() {
    local name=$1 cmd=$2 answer
    # shellcheck disable=SC2086 # split into words, as hyperfine -N does
    if ! answer=$($cmd 2>"$out/$name.err") || [[ "$answer" != *STANDIN-DONE* ]]; then
        say "skipping $name: \`$cmd\` did not get the stand-in's answer: $(printf '%s %s' "$answer" "$(head -c 400 "$out/$name.err")")"
        return
    fi
    names+=("$name")
    cmds+=("$cmd")
}

print="-p hi --dangerously-skip-permissions"
add plain-version "$bin/claude --version"
add agentjail-version "$aj_common -- claude --version"
# The sandbox's own start with the same flags, to tell it from the client's share.
add agentjail-true "$aj_common -- /bin/true"
add_print plain-print "$bin/claude $print"
add_print agentjail-host-print "$aj_host -- claude $print"
add_print agentjail-secret-print "$aj_secret -- claude $print"
# As a user types it: the claude preset (chosen by the command's name) makes the key a
# secret and ANTHROPIC_BASE_URL, on the host's loopback, its gateway.
add_print agentjail-preset-print "$aj --ro $clients -e PATH=$bin:/usr/bin:/bin -- claude $print"
srt=$bin/srt
if command -v socat >/dev/null && command -v rg >/dev/null; then
    # srt -c takes one shell command string: hyperfine -N cannot pass one with spaces,
    # so each srt row runs a two-line script.
    printf '#!/bin/sh\nexec %s --settings %s -c "%s --version"\n' "$srt" "$work/srt.json" "$bin/claude" >"$work/srt-version"
    printf '#!/bin/sh\nexec %s --settings %s -c "NO_PROXY= no_proxy= %s %s"\n' "$srt" "$work/srt.json" \
        "$bin/claude" "$print" >"$work/srt-print"
    chmod +x "$work/srt-version" "$work/srt-print"
    add srt-version "$work/srt-version"
    add_print srt-print "$work/srt-print"
else
    say "srt needs socat and ripgrep (scripts/setup.sh --bench): its rows are left out"
fi

args=()
for i in "${!names[@]}"; do
    args+=(-n "${names[$i]}" "${cmds[$i]}")
done

say "hyperfine: ${#names[@]} commands, $warmup warmup runs and $runs runs each, from $work/ws"
hyperfine -N --style basic --warmup "$warmup" --runs "$runs" \
    --export-json "$out/agents.json" --export-markdown "$out/agents.md" "${args[@]}"

python3 - "$out/agents.json" "$runs" >"$out/summary.txt" <<'EOF'
import json, os, platform, sys

results = json.load(open(sys.argv[1]))["results"]
by = {r["command"]: r for r in results}
ms = lambda r: r["median"] * 1000.0
cpu = ""
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
print(f"host: Linux {platform.release()}, {os.cpu_count()} CPUs ({cpu}), {sys.argv[2]} runs each")
print(f"{'command':<24} {'median ms':>10} {'min ms':>8} {'mean ms':>9} {'stddev':>8} {'user ms':>8} {'sys ms':>7}"
      f" {'+ms vs plain':>13}")
for r in results:
    kind = r["command"].rsplit("-", 1)[1]
    plain = by.get("plain-" + ("version" if kind == "true" else kind))
    added = f"{ms(r) - ms(plain):+.0f}" if plain and r is not plain else "-"
    print(f"{r['command']:<24} {ms(r):>10.1f} {r['min'] * 1000:>8.1f} {r['mean'] * 1000:>9.1f}"
          f" {(r['stddev'] or 0) * 1000:>8.1f} {r['user'] * 1000:>8.1f} {r['system'] * 1000:>7.1f} {added:>13}")
EOF
echo
cat "$out/summary.txt"
say "results in $out (agents.json, agents.md, summary.txt, the stand-ins' logs)"
