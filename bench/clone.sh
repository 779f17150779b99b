#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Clone mode's added start and finish time: a repository of 10,000 files and 1,000
# commits, a command that changes 10 files, run in direct mode and in clone mode
# (the clone, the audit, the commit of the work and the fetch of agentjail/<id>),
# against the same done by hand with `git worktree add` + `git fetch`, side by side
# in one hyperfine run.
#
# Usage: bench/clone.sh [--runs N] [--warmup N] [--files N] [--commits N] [--out DIR]
#   AGENTJAIL_BIN        the binary to measure (default: build/bin/agentjail)
# Results (hyperfine JSON and Markdown, summary.txt) go to --out, by default a new
# directory under /tmp, printed at the end.
set -euo pipefail

bench=clone.sh
# shellcheck source=bench/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
runs=20
warmup=2
files=10000
commits=1000

while (($# > 0)); do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --files) files=$2; shift 2 ;;
        --commits) commits=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        -h | --help) usage 3 12; exit 0 ;;
        *) say "unknown argument: $1 (try --help)"; exit 2 ;;
    esac
done

need hyperfine git python3
open_out
enter_work
trap 'rm -rf -- "$work"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export XDG_STATE_HOME=$work/state

# The repository: $files files in 100 directories, then $commits commits each
# touching one file, made with fast-import (seconds, not minutes).
say "making a repository of $files files and $commits commits"
git init -q -b main "$work/repo"
python3 - "$files" "$commits" <<'PY' | git -C "$work/repo" fast-import --quiet
import sys
files, commits = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout.buffer
def blob(mark, data):
    out.write(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
def path(i):
    return b"d%02d/f%05d.txt" % (i % 100, i)
for i in range(files):
    blob(i + 1, b"file %d\n" % i * 8)
out.write(b"commit refs/heads/main\nmark :%d\ncommitter bench <b@x> 1700000000 +0000\ndata 4\nbase\n" % (files + 1))
for i in range(files):
    out.write(b"M 100644 :%d %s\n" % (i + 1, path(i)))
out.write(b"\n")
prev = files + 1
for c in range(1, commits):
    data = b"change %d\n" % c
    out.write(b"commit refs/heads/main\nmark :%d\ncommitter bench <b@x> %d +0000\ndata %d\ncommit %d\n"
              % (prev + 1, 1700000000 + c, len(b"commit %d" % c), c))
    out.write(b"from :%d\nM 100644 inline %s\ndata %d\n%s\n" % (prev, path(c % files), len(data), data))
    prev += 1
PY
git -C "$work/repo" checkout -q -f main
git -C "$work/repo" gc -q
say "$(git -C "$work/repo" ls-files | wc -l) files, $(git -C "$work/repo" rev-list --count HEAD) commits"

# The agent's work: 10 files changed, one committed, the rest left uncommitted.
agent='for i in 0 1 2 3 4 5 6 7 8 9; do echo agent >> d0$i/f0000$i.txt; done; git -c user.name=a -c user.email=a@x commit -qm agent d00/f00000.txt'
cat > "$work/by-hand.sh" <<SCRIPT
set -e
git -C "$work/repo" worktree add -q --detach "$work/wt" HEAD
cd "$work/wt"
$agent
git add -A && git commit -qm rest
git -C "$work/repo" fetch -q "$work/wt" HEAD:refs/heads/by-hand
SCRIPT
cat > "$work/reset.sh" <<SCRIPT
rm -rf "$work/state" "$work/wt"
git -C "$work/repo" worktree prune
for b in \$(git -C "$work/repo" for-each-ref --format='%(refname)' refs/heads/agentjail/ refs/heads/by-hand); do
    git -C "$work/repo" update-ref -d "\$b"
done
git -C "$work/repo" checkout -q -f main
git -C "$work/repo" clean -qfdx
SCRIPT

cd "$work/repo"
names=(direct clone by-hand)
cmds=("$aj -C $work/repo -- /bin/sh -c '$agent'"
      "$aj -C $work/repo --workspace-mode clone -- /bin/sh -c '$agent'"
      "/bin/sh $work/by-hand.sh")
for i in "${!names[@]}"; do
    sh "$work/reset.sh"
    if ! eval "${cmds[$i]}" >/dev/null 2>"$out/${names[$i]}.err"; then
        say "${names[$i]} failed: $(head -c 400 "$out/${names[$i]}.err")"
        exit 1
    fi
done
args=()
for i in "${!names[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
hyperfine --runs "$runs" --warmup "$warmup" --prepare "sh $work/reset.sh" \
    --export-json "$out/clone.json" --export-markdown "$out/clone.md" "${args[@]}" >&2

python3 - "$out/clone.json" > "$out/summary.txt" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
med = {k: v["median"] * 1000 for k, v in r.items()}
print("median ms: " + ", ".join("%s %.1f" % (k, v) for k, v in med.items()))
print("clone mode adds %.1f ms to a direct run; by hand (worktree add + fetch, no sandbox): %.1f ms"
      % (med["clone"] - med["direct"], med["by-hand"]))
PY
cat "$out/summary.txt"
say "results in $out"
