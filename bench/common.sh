#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What every bench/ script shares, sourced after it set `bench` (its own name, for
# messages): the repository, the agentjail binary (AGENTJAIL_BIN, or the build dir's),
# messages, tool checks, the output directory and the scratch workspace the default
# policy binds (an empty directory, never the home).

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
aj=${AGENTJAIL_BIN:-$repo/${AGENTJAIL_BUILD_DIR:-build}/bin/agentjail}
out=""

say() { printf '%s: %s\n' "${bench:?set bench before sourcing common.sh}" "$*" >&2; }

# usage FIRST LAST: prints the script's own head comment, lines FIRST to LAST.
usage() { sed -n "$1,$2s/^# \\{0,1\\}//p" "$0"; }

# need TOOL...: every tool on PATH, and agentjail built; aj becomes absolute.
need() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { say "$tool is missing: run scripts/setup.sh --bench"; exit 1; }
    done
    [[ -x "$aj" ]] || { say "$aj is missing: run scripts/build.sh"; exit 1; }
    aj=$(cd "$(dirname "$aj")" && pwd -P)/$(basename "$aj")
}

# open_out: the results directory, --out's or a fresh one under /tmp; out absolute.
open_out() {
    [[ -n "$out" ]] || out=$(mktemp -d /tmp/agentjail-bench.XXXXXX)
    mkdir -p "$out"
    out=$(cd "$out" && pwd -P)
}

# enter_work: a fresh scratch directory, made the current one; the caller removes it
# (its EXIT trap), since some scripts have servers to stop there too.
enter_work() {
    work=$(mktemp -d /tmp/agentjail-bench-ws.XXXXXX)
    cd "$work"
}

# add NAME CMD: keeps a hyperfine command only if it works once first (a sandbox that
# fails fast is not fast); a failing one is skipped with its error.
names=() cmds=()
add() {
    local name=$1 cmd=$2
    # shellcheck disable=SC2086 # the command is split into words, as hyperfine -N does
    if ! $cmd >/dev/null 2>"$out/$name.err"; then
        say "skipping $name: \`$cmd\` failed: $(head -c 400 "$out/$name.err")"
        return
    fi
    names+=("$name")
    cmds+=("$cmd")
}
