// SPDX-License-Identifier: Apache-2.0
// One walk of a host directory tree (the workspace) at plan time, for `**`
// patterns, nested git repositories and hard links, and after the run for what the
// run left; never follows a symlink. It keeps only the names asked for, and reads
// only the directories changed since an earlier walk it is given.
#pragma once

#include "base/error.hpp"

#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::sys {

enum class EntryType : std::uint8_t { file, dir, symlink, other };

// An entry holds its own name and its directory's index, not its whole path: a tree
// of deep paths costs the bytes of its names, not of every path spelled out (a
// workspace a run filled with deep hard links made the paths alone a gigabyte).
struct ScanEntry {
    static constexpr std::uint32_t kTop = UINT32_MAX;  // parent of the root's entries
    std::string name;                                  // ".env"
    std::uint32_t parent = kTop;                       // its directory's index in Scan::entries
    EntryType type = EntryType::other;
    ino_t ino = 0;  // from the directory entry; see Scan::with_stat
    // Filled by a stat of the entry when the scan was asked for it (ScanOptions::stat)
    // or later by stat_entry(); 0 otherwise.
    mode_t mode = 0;
    dev_t dev = 0;
    nlink_t nlink = 0;
    // A directory's ctime (ns) read just before its entries were listed; 0 for what
    // the walk did not open. What a later scan compares (ScanOptions::before).
    std::int64_t ctime_ns = 0;
};

struct ScanOptions {
    // lstat every entry (mode, dev, exact ino, nlink). Off: the walk reads directory
    // entries only, which is what `**` matching and repository discovery need.
    bool stat = false;
    // Git's object store, refs and logs are skipped: large, and nothing in them is a
    // name a rule hides or protects (a secret committed to history is out of reach of
    // any mount anyway, THREATS SEC-03).
    bool skip_git_internals = true;
    // A bound on the entries the walk keeps (see `names`); more is an error (fail
    // closed: a partial walk would miss hidden files).
    std::size_t max_entries = 2'000'000;
    // And on the bytes of the names kept (a run can fill the workspace with names of
    // 255 bytes: 2,000,000 of them would be half a gigabyte of agentjail's memory).
    std::size_t max_name_bytes = 64u << 20;
    // Directories deeper than this are listed in Scan::too_deep, not descended into:
    // the walk holds a descriptor per level, which must stay well inside a process's
    // usual limit of 1024.
    std::size_t max_depth = 256;
    // An earlier scan of the same root (the plan's, for the check after the run; the
    // last run's, kept in agentjail's state, for the plan): a directory that is the
    // same one (device and inode), whose ctime is the one the earlier scan read
    // before listing it, and was then before that scan began (Scan::taken: no change
    // can have come later in the same clock tick) is not read again; its entries are
    // taken from the earlier scan. A change to a directory's entries sets its ctime
    // to the time of the change, which no program can choose. Its subdirectories
    // are still visited, each the same way. Ignored with `stat`.
    const struct Scan* before = nullptr;
    // Which files, links and others to keep: those whose name could end one of these
    // segment patterns (base::SegmentPrefilter: ".env*", "config", "*.pem"), and
    // "HEAD" (a git directory is told by it); one ending in "/" names directories
    // below which every entry is kept (".vscode/"). Directories are always kept.
    // Empty: every entry. The plan's rules and the check after the run name only a few
    // names: a walk that keeps those alone costs the project's directories, not its
    // files. An earlier scan is reused only when it kept the same names.
    std::vector<std::string> names{};
};

struct Scan {
    std::string root;  // as given, absolute
    dev_t root_dev = 0;
    ino_t root_ino = 0;
    std::vector<ScanEntry> entries;  // depth first, parents before children
    std::vector<std::string> skipped;  // directories not descended into (rel), for explain
    std::vector<std::string> too_deep;  // directories below ScanOptions::max_depth (rel)
    // When the walk began, by the clock that stamps inodes (CLOCK_REALTIME_COARSE):
    // a directory whose ctime is before it was not changed during the walk.
    struct timespec taken {};
    std::int64_t root_ctime_ns = 0;  // as ScanEntry::ctime_ns, for the root
    std::size_t reused = 0;  // directories whose entries came from ScanOptions::before
    std::size_t listed = 0;  // directories whose entries were read
    std::vector<std::string> names;  // ScanOptions::names it kept
    std::size_t left_out = 0;  // entries listed and not kept (ScanOptions::names)

    // The entry's path relative to the root, "packages/api/.env" (built from its
    // directories: O(depth)).
    std::string rel(const ScanEntry& e) const;
    // Its directory's, "packages/api" ("" at the root).
    std::string dir_of(const ScanEntry& e) const;
};

// Walks root (a directory, not a symlink). Every directory is opened relative to
// its parent's descriptor with O_NOFOLLOW|O_DIRECTORY, so a link planted by an
// earlier run cannot lead the walk out of the tree. Unreadable directories are
// listed but not descended into (noted in `skipped`).
Result<Scan> scan(const std::string& root, const ScanOptions& options = {});

// A scan as bytes for agentjail's state (the workspace's walk kept from one run to
// the next), and back. decode() checks what the walk guarantees (parents before
// their entries, each directory's entries together, names that are names, the
// bounds of `options`) and refuses anything else; a scan with skipped or too deep
// directories is not kept (encode gives "").
std::string encode(const Scan& scan);
Result<Scan> decode(std::string_view bytes, const ScanOptions& options = {});

// lstat of one entry, reached from the root without following any symlink
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS); fills mode, dev, ino, nlink.
Result<void> stat_entry(const Scan& scan, ScanEntry& entry);

}  // namespace agentjail::sys
