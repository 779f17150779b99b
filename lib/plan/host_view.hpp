// SPDX-License-Identifier: Apache-2.0
// The host as the planner sees it: the host's own answers, and what the run's host
// actions (plan.hpp, HostAction) will have made by the time the sandbox is built.
// The planner makes and writes nothing: lib/run carries the actions out before the
// launch and `explain` only shows them, so both see one plan. Nothing else in
// lib/plan reads the host: every question it asks of it is a method here
// (scripts/check_layers.sh holds lib/plan's other files to that).
#pragma once

#include "base/error.hpp"
#include "netrules/secret_value.hpp"
#include "sys/scan.hpp"

#include <sys/stat.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::plan {

class HostView {
public:
    // `path` (absolute, normalised) will be an empty directory (0700) or an empty
    // file (0600) of the caller's: a host action makes it, replacing what is in the
    // way. Its parent is on the host or was named here before.
    void will_make(const std::string& path, bool is_dir);
    // Whether a host action makes `path` (as named or canonical).
    bool makes(const std::string& path) const;

    // lstat(2)/stat(2): a name an action makes answers as what it will be (never a
    // link); 0, or -1 with errno set.
    int lstat(const std::string& path, struct stat& st) const;
    int stat(const std::string& path, struct stat& st) const;
    // realpath(3), with the names an action makes resolved as they will be (no link
    // below them); nullopt with errno set when the path cannot be resolved.
    std::optional<std::string> canonical(const std::string& path) const;

    // The host's own answers (a name an action makes is not among them: these are
    // asked of what the host already holds).
    // readlink(2); nullopt when `path` is not a link.
    std::optional<std::string> readlink(const std::string& path) const;
    // A directory (stat(2), links followed).
    bool is_dir(const std::string& path) const;
    // A regular file this process may execute (stat(2) and access(2)).
    bool executable_file(const std::string& path) const;
    // The names in a directory (not . or ..); empty when it cannot be read.
    std::vector<std::string> list(const std::string& dir) const;
    // glob(3), sorted; no match or an error: empty. A directory is read once per
    // view however many patterns cross it (the policies' hides name /tmp and
    // /run/user/* a dozen times each): one snapshot of each, one read.
    std::vector<std::string> glob(const std::string& pattern) const;
    // A regular file of at most `max` bytes, read without following a link at any
    // component below `root` and never blocking on a FIFO (THREATS FS-04).
    std::optional<std::string> read_beneath(const std::string& root, const std::string& rel,
                                            std::size_t max = 1 << 20) const;
    // The first `max` bytes of a regular file (links followed, never blocking on a
    // FIFO): a script's #! line. nullopt when it is no regular file or cannot be read.
    std::optional<std::string> read_head(const std::string& path, std::size_t max) const;
    // A small text file (links followed, as the user set them up): the user's own
    // configuration, never the workspace's.
    std::optional<std::string> read_text(const std::string& path, std::size_t max = 1 << 20) const;
    // Whether the filesystem `path` lies on gives each directory entry the inode number
    // stat(2) gives (ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs): a walk of names alone then
    // tells which names share an inode. false where it may not (overlayfs, FUSE, NFS,
    // anything else) or where it cannot be asked.
    bool entry_inodes_exact(const std::string& path) const;
    // The workspace walk (sys/scan.hpp) and an entry's stat.
    Result<sys::Scan> scan(const std::string& root, const sys::ScanOptions& options = {}) const;
    Result<void> stat_entry(const sys::Scan& scan, sys::ScanEntry& entry) const;
    // sys::resolve_existing: the existing part of `path` resolved, the rest appended.
    std::string resolve_existing(const std::string& path) const;
    // A file of `size` bytes named `name` in `base`/agentjail, opened without following
    // a link: the caller's own, closed to others, one link. `out` set when it is read;
    // `missing` when there is none (nor its directory); else `why` it cannot be used,
    // starting with the name that cannot be (the directory's or the file's).
    struct StateFile {
        bool missing = false;
        std::string why;
    };
    StateFile read_state_file(const std::string& base, const char* name, std::size_t size, std::string& out) const;
    // The same for a file of at most `max` bytes in `base`/agentjail/`dir`.
    StateFile read_state_file_in(const std::string& base, const std::string& dir, const std::string& name,
                                 std::size_t max, std::string& out) const;
    // Whether a secret's source holds a value now, the value not kept (the buffers
    // that held it wiped). `environ`: NAME=VALUE lines of the caller.
    net::SourceProbe probe_secret(const net::SourceSpec& spec, const std::string& secret_name,
                                  const std::vector<std::string>& environ, const std::string& expires) const;

private:
    struct Made {
        std::string path;       // as named
        std::string canonical;  // where it will be
        bool is_dir = false;
    };
    const Made* find(const std::string& path) const;
    // The nearest name an action makes at or above path (as named or canonical).
    const Made* above(const std::string& path, std::string& rest) const;
    std::vector<Made> made_;
    // Directories read so far: their names, or nullopt when they could not be read
    // (errno kept). Answers as the host did at the first read.
    struct Listing {
        std::optional<std::vector<std::string>> names;
        int error = 0;
    };
    const Listing& listing(const std::string& dir) const;
    mutable std::map<std::string, Listing> listings_;
};

}  // namespace agentjail::plan
