// SPDX-License-Identifier: Apache-2.0
// What the workspace's view (lib/launch/view_server.hpp) decides for each name it serves:
// plain data the plan fills (lib/plan/view.cc) and a pure judgement, no system call.
#pragma once

#include "base/pattern.hpp"

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentjail::view {

// git takes a folder for a repository only when it holds a HEAD. A HEAD the run makes
// where the host has none (a new repository: `git init`, `git clone`, a bare one) is
// kept on the host under this name until the check after the run has read the
// repository (workspace/audit.cc puts it back): meanwhile no git on the host (an
// editor's, a shell prompt's) takes the folder for a repository and runs the run's
// config, hooks or fsmonitor. Inside, the sandbox sees it as HEAD.
inline constexpr char kHeldHead[] = "HEAD.held-by-agentjail";

// The names the check after the run tells git's files by (a git directory by its HEAD
// and config, commondir or objects; a .git file or link by its name): a walk of the
// workspace keeps these whatever the rules name (sys::ScanOptions::names).
inline constexpr const char* kGitNames[] = {".git", "HEAD", kHeldHead, "config", "commondir"};

// The name a walk keeps for a pattern's sake (sys::ScanOptions::names): its last part,
// with "/" for a folder pattern whose contents are wanted too (`contents`); none when
// its last part is "**", which any name could end.
inline std::optional<std::string> walk_name(const base::Pattern& p, bool contents) {
    if (p.empty() || p.last() == "**") return std::nullopt;
    return p.dir_only() && contents ? p.last() + "/" : p.last();
}

// A pattern with the quick test of its last segment (base::SegmentPrefilter): a lookup
// tries the whole pattern only when the name could end it.
struct Rule {
    explicit Rule(std::string_view text);
    base::Pattern pattern;
    base::SegmentPrefilter last;
    bool any_last;  // the last segment is "**": every name could end it
};

// What the view decides for the names it serves. Paths are relative to the view's
// root ("src/main.c"; "" is the root), patterns as base::Pattern takes them.
struct Rules {
    // Hidden: looked up as absent, left out of listings. A file the run made is never
    // hidden (it holds nothing of the host's).
    std::vector<Rule> hide;
    std::set<std::string> hide_exact;
    std::set<std::pair<dev_t, ino_t>> hide_inodes;  // hard links of hidden files, by inode
    // Protected: read-only where it exists (no write, truncate, chmod, rename, unlink,
    // hard link), and so is what lies below a protected directory; the name cannot be
    // made in a directory the run did not make. A .git directory is never protected
    // whole, whatever matches it: its files are, each by its own pattern. A file or
    // directory the run made is not protected (git init, then git config, in a new
    // repository): the check after the run reads those (workspace/audit.cc).
    std::vector<Rule> protect;
    std::set<std::string> protect_exact;
    // Files shown with this text instead of what the host has (a project's .env with
    // each value a placeholder): read-only, mode 0444.
    std::map<std::string, std::string> files;
    // The one uid and gid the sandbox's user namespace maps (Plan::uid_map, the same
    // number inside and out): a host owner other than these is shown as the overflow
    // id (65534), as the kernel shows it through a bind.
    uid_t uid = 0;
    gid_t gid = 0;
    // The view's root as the sandbox sees it (the refusals name paths inside).
    std::string inside;

    enum class Verdict { plain, hidden, protect };
    Verdict judge(std::string_view rel, bool is_dir) const;
    // Each side alone: a name may be both (".envrc" under "**/.env*" and
    // "**/.envrc"), and making one is refused for its protection.
    bool hides(std::string_view rel, bool is_dir) const;
    bool protects(std::string_view rel, bool is_dir) const;
};

}  // namespace agentjail::view
