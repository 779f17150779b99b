// SPDX-License-Identifier: Apache-2.0
// Private to lib/cgroup: file access to cgroupfs, the parsers of its flat-keyed
// files, group names, and the entry points of the v2 and v1 drivers and of gc.
#pragma once

#include "cgroup/cgroup.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::cgroup::detail {

inline bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

// "a, b, c", for messages that list controllers.
inline std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

// ---- files (cgroup.cc) ----
std::optional<std::string> read_text(const std::string& path);
// Writes text in one write(2), as cgroupfs wants; the error names the file.
Result<void> write_text(const std::string& path, const std::string& text);
bool exists(const std::string& path);
// access(W_OK) on the directory and on each named file inside it.
bool writable(const std::string& dir, const std::vector<std::string>& files);
// The pids listed in a cgroup.procs file (empty when unreadable).
std::vector<pid_t> read_procs(const std::string& dir);
// Sleeps ms milliseconds.
void pause_ms(int ms);

// ---- parsers (stats.cc), pure ----
// The value of `key` in a "key value" per line file (memory.events, cpu.stat...).
std::optional<std::uint64_t> flat_value(std::string_view text, std::string_view key);
// A single number; "max" reads as nullopt.
std::optional<std::uint64_t> single_value(std::string_view text);
// The words of a space-separated list (cgroup.controllers, cgroup.subtree_control).
std::vector<std::string> words(std::string_view text);
// Reads dir/file and applies flat_value / single_value (0 when missing).
std::uint64_t read_flat(const std::string& dir, const char* file, const char* key);
std::uint64_t read_single(const std::string& dir, const char* file);

// ---- names (cgroup.cc) ----
// "agentjail-<our pid>-<n>", n counting up in this process.
std::string next_name();
// The leaf a delegated v2 caller moves itself into: "agentjail-<our pid>-self".
std::string self_leaf_name();

// The controllers the settings need ("memory", "cpu", "pids").
std::vector<std::string> required_controllers(const limits::Settings& s);

// ---- placement (cgroup.cc) ----
// CgroupPlacement::caller and ::under: the directory of h the run's group goes
// below (never made, enabled or entered by us), or "" with why_not set.
std::string placed_parent(const Hierarchy& h, const limits::Settings& s, std::string& why_not);

// ---- drivers ----
// Each returns a group, or nullptr with why_not set when it cannot serve this host or
// caller (so the next driver is tried), or an Error once it has started and failed.
Result<std::unique_ptr<Group>> create_v2(const Host& host, const limits::Settings& s,
                                         std::string& why_not);
Result<std::unique_ptr<Group>> create_v1(const Host& host, const limits::Settings& s,
                                         std::string& why_not);

// Holds up the parent of a run's group for as long as the group lives (the systemd
// scope's placeholder process). release() is called once the group is removed.
class Anchor {
public:
    virtual ~Anchor() = default;
    virtual Result<void> release() = 0;
    // True when this process may not clone into the group (CLONE_INTO_CGROUP needs
    // write access to the common ancestor's cgroup.procs) and attach() must move the
    // init instead.
    virtual bool needs_attach() const { return false; }
    // Moves pid into the group, the child `sub` of the anchored parent.
    virtual Result<void> attach(pid_t, const std::string& /*sub*/) { return {}; }
};
// Makes the run's group in parent (whose cgroup.subtree_control already passes the
// controllers) with the settings' limits (v2.cc).
Result<std::unique_ptr<Group>> make_v2_group(Kind kind, const std::string& parent, const limits::Settings& s,
                                             Via via, std::string unit = {},
                                             std::unique_ptr<Anchor> anchor = nullptr);
// Asks the caller's systemd user manager for a transient scope with Delegate=yes and
// makes the run's group below it; want: the controllers to enable there
// (systemd.cc). nullptr with why_not when no manager can be reached or it refused.
Result<std::unique_ptr<Group>> create_systemd_scope(const Hierarchy& h, const limits::Settings& s,
                                                    const std::vector<std::string>& want, std::string& why_not);

// ---- stale groups (gc.cc) ----
// Removes the stale agentjail groups directly under dir.
void gc_dir(const std::string& dir, bool v2, GcResult& out);
// The directories create() would put groups in for this caller.
std::vector<std::pair<std::string, bool>> gc_locations(const Host& host);
// The v2 parent used when running as root.
inline constexpr const char* v2_root_parent = "agentjail.slice";

}  // namespace agentjail::cgroup::detail
