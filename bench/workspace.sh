#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the size of the project costs a run: `true` in a git repository of 100,
# 10,000 and 100,000 files (sizes with --sizes), under agentjail's default policy in
# direct, overlay and clone mode, and under bubblewrap with the project bound
# read-write (its cost does not depend on the project), side by side in one
# hyperfine run per size; direct mode once through its view (the default) and once
# guarded by mounts (--view mounts), each also with `git status` as the work. The start (the plan's walk for the `**` rules, the binds)
# and the end (direct mode's check after the run, overlay's change set, clone's
# fetch) are both in the time.
#
# Usage: bench/workspace.sh [--runs N] [--warmup N] [--sizes "100 10000 100000"] [--out DIR]
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
# Results (hyperfine JSON and Markdown per size, summary.txt) go to --out, by default
# a new directory under /tmp, printed at the end.
set -euo pipefail

bench=workspace.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs=10
warmup=2
sizes="100 10000 100000"

while (($# > 0)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 14; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need hyperfine git python3 bwrap
open_out
enter_work
trap 'rm -rf -- "$work"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export XDG_STATE_HOME=$work/state
# The built-in default policy, not a user's own ~/.config/agentjail.
export XDG_CONFIG_HOME=$work/config
mkdir -p "$XDG_CONFIG_HOME"

# A repository of N files, 100 to a directory, in one commit (fast-import).
make_repo() {
    local dir=$1 files=$2
    git init -q -b main "$dir"
    python3 - "$files" <<'PY' | git -C "$dir" fast-import --quiet
import sys
files = int(sys.argv[1])
out = sys.stdout.buffer
for i in range(files):
    data = b"file %d\n" % i
    out.write(b"blob\nmark :%d\ndata %d\n%s\n" % (i + 1, len(data), data))
out.write(b"commit refs/heads/main\ncommitter bench <b@x> 1700000000 +0000\ndata 4\nbase\n")
for i in range(files):
    out.write(b"M 100644 :%d d%04d/f%06d.txt\n" % (i + 1, i // 100, i))
out.write(b"\n")
PY
    git -C "$dir" checkout -q -f main
}

# Each run's state (overlay layers, clone's branch) goes between runs; the rest of
# the state directory stays, as it does for a user (no first-run cost in the times).
cat >"$work/reset.sh" <<SCRIPT
rm -rf "$work/state/agentjail/runs"
for r in "$work"/repo-*; do
    for b in \$(git -C "\$r" for-each-ref --format='%(refname)' refs/heads/agentjail/); do
        git -C "\$r" update-ref -d "\$b"
    done
    git -C "\$r" worktree prune
done
SCRIPT

: >"$out/summary.txt"
for n in $sizes; do
    repo_dir=$work/repo-$n
    say "making a repository of $n files"
    make_repo "$repo_dir" "$n"
    names=() cmds=()
    add "direct-$n" "$aj -C $repo_dir -- /bin/true"
    add "mounts-$n" "$aj -C $repo_dir --view mounts -- /bin/true"
    # What the view costs the work itself: every lookup and stat of a first git status
    # is a round trip to agentjail's FUSE server; a second one in the same run finds
    # the kernel's caches (kept while the server watches the folders for the host's
    # changes).
    add "direct+status-$n" "$aj -C $repo_dir -- git status --porcelain"
    add "mounts+status-$n" "$aj -C $repo_dir --view mounts -- git status --porcelain"
    # (The two statuses in one script kept in .git, where git status does not look.)
    printf 'git status --porcelain\ngit status --porcelain\n' >"$repo_dir/.git/bench-status2.sh"
    add "direct+status2-$n" "$aj -C $repo_dir -- sh .git/bench-status2.sh"
    add "mounts+status2-$n" "$aj -C $repo_dir --view mounts -- sh .git/bench-status2.sh"
    add "overlay-$n" "$aj -C $repo_dir --workspace-mode overlay -- /bin/true"
    add "clone-$n" "$aj -C $repo_dir --workspace-mode clone -- /bin/true"
    add "bwrap-$n" "bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind $repo_dir $repo_dir --unshare-all --die-with-parent -- /bin/true"
    sh "$work/reset.sh"
    args=()
    for i in "${!names[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
    hyperfine -N --runs "$runs" --warmup "$warmup" --prepare "sh $work/reset.sh" \
        --export-json "$out/workspace-$n.json" --export-markdown "$out/workspace-$n.md" "${args[@]}" >&2
    python3 - "$out/workspace-$n.json" "$n" >>"$out/summary.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print("%s files, mean ms: " % sys.argv[2] +
      ", ".join("%s %.1f ± %.1f" % (x["command"].rsplit("-", 1)[0], x["mean"] * 1000, x["stddev"] * 1000) for x in r))
PY
    rm -rf "$repo_dir"
done
cat "$out/summary.txt"
say "results in $out"
