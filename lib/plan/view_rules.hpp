// SPDX-License-Identifier: Apache-2.0
// What the workspace's view (lib/launch/view_server.hpp) decides for each name it serves:
// plain data the plan fills (lib/plan/view.cc) and a pure judgement, no system call.
#pragma once

#include "base/pattern.hpp"

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentjail::view {

// One line of a user namespace's map: ids [inside, inside + count) are outside's.
struct IdRange {
    std::uint32_t inside = 0;
    std::uint32_t outside = 0;
    std::uint32_t count = 0;
};

// Parses "/proc/PID/uid_map" text ("inside outside count" lines).
std::vector<IdRange> parse_id_map(std::string_view text);

// What the view decides for the names it serves. Paths are relative to the view's
// root ("src/main.c"; "" is the root), patterns as base::Pattern takes them.
struct Rules {
    // Hidden: looked up as absent, left out of listings. A file the run made is never
    // hidden (it holds nothing of the host's).
    std::vector<base::Pattern> hide;
    std::set<std::string> hide_exact;
    std::set<std::pair<dev_t, ino_t>> hide_inodes;  // hard links of hidden files, by inode
    // Protected: read-only where it exists (a .git directory never is, whatever
    // matches it: its files are protected each by their own pattern) (no write, truncate, chmod, rename, unlink,
    // hard link), and what lies below a protected directory; the name cannot be made in
    // a directory the run did not make. A file or directory the run made is not
    // protected (git init, then git config, in a new repository): the check after the
    // run reads those (workspace/audit.cc).
    std::vector<base::Pattern> protect;
    std::set<std::string> protect_exact;
    // Files shown with this text instead of what the host has (a project's .env with
    // each value a placeholder): read-only, mode 0444.
    std::map<std::string, std::string> files;
    // The sandbox's user namespace's maps: a host owner outside them is shown as the
    // overflow id (65534), as the kernel shows it for a bind.
    std::vector<IdRange> uid_map;
    std::vector<IdRange> gid_map;
    // How long the kernel may keep a name's answer and a file's attributes before it
    // asks again (a change the host makes shows inside after at most this long).
    double cache_s = 1.0;
    // The view's root as the sandbox sees it (the refusals name paths inside).
    std::string inside;

    // Each pattern's last segment as a quick test (base::SegmentPrefilter), made by
    // prepare() once the patterns are in: a lookup tries a pattern only when its name
    // could end it.
    std::vector<base::SegmentPrefilter> hide_last;
    std::vector<base::SegmentPrefilter> protect_last;
    void prepare();

    enum class Verdict { plain, hidden, protect };
    Verdict judge(std::string_view rel, bool is_dir) const;
    // Each side alone: a name may be both (".envrc" under "**/.env*" and
    // "**/.envrc"), and making one is refused for its protection.
    bool hides(std::string_view rel, bool is_dir) const;
    bool protects(std::string_view rel, bool is_dir) const;
};

}  // namespace agentjail::view
