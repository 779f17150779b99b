// SPDX-License-Identifier: Apache-2.0
// Helpers of the clone-mode tests (integration and escape tiers): a real git
// repository in a Jail's workspace, host-side git, and a fingerprint of what must
// stay byte-for-byte the same in the user's repository (config, hooks, info,
// index, HEAD and the work tree).
#pragma once

#include "test_support.hpp"

#include <string>
#include <vector>

namespace ajtest {

// Host-side git in dir with a fixed identity and no global config; `git` args as one string.
inline RunOutput host_git(const std::string& dir, const std::string& args) {
    return run({"/bin/sh", "-c", "cd \"$0\" && exec git " + args, dir},
               {"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=User",
                "GIT_AUTHOR_EMAIL=user@example.invalid", "GIT_COMMITTER_NAME=User",
                "GIT_COMMITTER_EMAIL=user@example.invalid"});
}

// A repository in ws: two commits on main, a second branch and a tag, a user hook
// (pre-commit.sample-like, harmless), a key of the user's own in .git/config, then
// uncommitted and untracked work. Returns "" or what failed.
inline std::string make_user_repo(const std::string& ws) {
    const char* script =
        "set -e; cd \"$0\"; git init -q -b main .; git config aj.owner user-config-marker;"
        "echo one > tracked.txt; git add tracked.txt;"
        "git commit -qm 'user: one'; git tag v1; git branch side;"
        "echo two >> tracked.txt; git commit -qam 'user: two';"
        "printf '#!/bin/sh\\nexit 0\\n' > .git/hooks/pre-push; chmod +x .git/hooks/pre-push;"
        "echo user-dirty >> tracked.txt; echo user-untracked > user-untracked.txt";
    auto r = run({"/bin/sh", "-c", script, ws},
                 {"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=User",
                  "GIT_AUTHOR_EMAIL=user@example.invalid", "GIT_COMMITTER_NAME=User",
                  "GIT_COMMITTER_EMAIL=user@example.invalid"});
    return r.status == 0 ? "" : "making the repository failed: " + r.err;
}

// sha256 of every file that must not change: .git/config, HEAD, index, hooks/,
// info/, and the work tree (without .git), with modes and link targets.
inline std::string repo_fingerprint(const std::string& ws) {
    const char* script =
        "cd \"$0\" || exit 1;"
        "{ for f in .git/config .git/HEAD .git/index; do sha256sum \"$f\"; done;"
        "  find .git/hooks .git/info -print0 2>/dev/null | sort -z | xargs -0 -r stat -c '%n %a %F %s' ;"
        "  find .git/hooks .git/info -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum;"
        "  find . -path ./.git -prune -o -print0 | sort -z | xargs -0 -r stat -c '%n %a %F %s %N';"
        "  find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum; } 2>&1";
    return run({"/bin/sh", "-c", script, ws}).out;
}

// The branches agentjail made: "agentjail/<id>" each.
inline std::vector<std::string> agentjail_branches(const std::string& ws) {
    return lines(host_git(ws, "for-each-ref '--format=%(refname:short)' refs/heads/agentjail/").out);
}

}  // namespace ajtest
