// SPDX-License-Identifier: Apache-2.0
// Overlay mode on the host side: the lower layer's state when a run starts, the
// change set read from the upper layer when it ends, and applying that change set
// to the workspace without following any link (docs/workspace.md, "Overlay mode").
#pragma once

#include "base/error.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <time.h>

namespace agentjail::workspace {

// What a file was, enough to tell that it changed since: a host-side edit, an
// editor's save by rename (a new inode), a chmod (ctime) all show.
struct Stamp {
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    unsigned mode = 0;  // st_mode, type bits included
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    // Directories: how many entries are below it and the newest ctime among them
    // (a deleted tree conflicts when anything in it changed).
    std::uint64_t tree_count = 0;
    std::int64_t tree_ctime_ns = 0;
    bool operator==(const Stamp&) const = default;
};

// A base for a path the host changed during the run: what it was at the start is not
// known, and `apply` reports it as a conflict.
inline constexpr Stamp kChangedDuringRun{};

// Paths (relative, "a/b") with their stamps: a deleted tree as the host has it.
// Directories on other filesystems are not entered (the overlay's lower layer does
// not show what is mounted inside it either).
using Snapshot = std::map<std::string, Stamp>;

// When a run in `workspace` starts, by the clock that stamps inodes (earlier by the
// file system's granularity where it stamps whole seconds): what collect_changes()
// takes. A file system whose clock is another machine's (NFS, SMB) and lags this
// one's hides a host change made in the lag from it.
struct timespec run_start(const std::string& workspace);

struct LayerChange {
    enum class Kind { added, modified, deleted, mode };
    enum class Type { file, dir, symlink, other };
    Kind kind = Kind::added;
    Type type = Type::file;
    std::string path;    // relative to the workspace, no leading '/'
    unsigned mode = 0;   // permission bits of what the run left (file, dir)
    std::uint64_t size = 0;
    std::string target;  // symlink: its text
    // A path the workspace protects (or a directory holding one, deleted): not
    // applied without ApplyOptions::allow_protected.
    bool protected_path = false;
    // The lower file when the run started; none: the path did not exist then.
    std::optional<Stamp> base;
};

const char* layer_kind_name(LayerChange::Kind k);
const char* layer_type_name(LayerChange::Type t);

// The change set: what the upper layer (upper_dir, on the host) holds against the
// workspace, with each path's stamp from `start`. A file that was only copied up
// (opened for writing, same bytes and mode) is no change. Deletions are the
// layer's whiteouts (character devices 0/0) and the entries of an opaque directory
// that it no longer has. Ordered by path; for one path a deletion comes first.
// `protect`: patterns (relative, `**` allowed) marking protected_path. Each change's
// base is what the host has at its path now when nothing there (nor, for a name the
// host does not have, in the folder it would be in) changed since `since`
// (run_start()), kChangedDuringRun otherwise: found from the change set alone, with
// no walk of the workspace at the start.
Result<std::vector<LayerChange>> collect_changes(const std::string& upper_dir, const std::string& workspace,
                                            const struct timespec& since, const std::vector<std::string>& protect);

// The workspace paths that run code on the host later and are protected in direct
// mode: git's hooks and config, editor and agent settings, agentjail's policy files.
// The default policy's protect list (policies/default.toml), for a policy without one.
// (Its "**/.git" entry, for a .git file, is left to the git checks: is_protected.)
const std::vector<std::string>& default_protected();

// Whether `path` (relative) is, or lies under, a path matching one of `patterns`
// (relative globs: `*`, `?`, `[...]` within a component, `**` for any number of them).
bool is_protected(const std::string& path, const std::vector<std::string>& patterns);

// The change set as JSON (an array) and back, for the run's state directory.
std::string changes_to_json(const std::vector<LayerChange>& changes, int indent = 2);
Result<std::vector<LayerChange>> changes_from_json(const std::string& text, const std::string& what);

struct ApplyOptions {
    bool allow_protected = false;  // apply protected paths too
    bool force = false;            // apply over a host-side change made since the run started
};

struct ApplyOutcome {
    struct Item {
        LayerChange change;
        std::string why;  // skipped or failed: why
    };
    std::vector<Item> applied;
    std::vector<Item> skipped;  // protected, conflicting, unsupported
    std::vector<Item> failed;   // refused by the filesystem (a link in the way, ...)
};

// Applies the change set to the workspace. Every path is opened beneath the
// workspace without following a link (a link the workspace gained meanwhile makes
// that change fail, never redirects it); files are written under a fresh name in
// their directory and renamed over theirs; links are made as links; the new
// content comes from upper_dir, opened the same way.
Result<ApplyOutcome> apply_changes(const std::string& workspace, const std::string& upper_dir,
                                   const std::vector<LayerChange>& changes, const ApplyOptions& opts);

}  // namespace agentjail::workspace
