// SPDX-License-Identifier: Apache-2.0
// The sandbox's cgroup: one group per run, made before clone, holding the memory,
// cpu and pids limits, read for statistics and removed after the run. cgroup v2
// where the host has the controllers there, v1 where it has them only in v1.
#pragma once

#include "plan/limits.hpp"

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::cgroup {

enum class Kind {
    v2,            // under agentjail.slice at the root of the v2 hierarchy (as root)
    v2_delegated,  // under the caller's own, delegated v2 cgroup (an ordinary user)
    v1,            // one group per v1 hierarchy (memory, pids, cpu, cpuacct, freezer)
};
// "v2", "v2-delegated", "v1".
const char* kind_name(Kind k);

// Where the group's parent came from.
enum class Via {
    root_slice,     // v2 as root: agentjail.slice at the top of the hierarchy
    own_cgroup,     // the caller's own (delegated) cgroup; v1: the caller's own groups
    parent_cgroup,  // the delegated parent of the caller's cgroup, beside it
    systemd_scope,  // a transient scope with Delegate=yes from the user's systemd manager
    given_cgroup,   // below the cgroup the caller named (CgroupPlacement::under)
};
// "agentjail.slice", "own-cgroup", "parent-cgroup", "systemd-scope", "given-cgroup".
const char* via_name(Via v);

// What the run used, read just before the group is removed. 0 when not available.
struct Stats {
    std::uint64_t memory_peak_bytes = 0;
    std::uint64_t oom_kill_count = 0;
    std::uint64_t pids_peak = 0;
    std::uint64_t pids_max_hits = 0;  // forks refused at pids.max
    double cpu_user_s = 0;
    double cpu_system_s = 0;
    std::uint64_t cpu_throttled_us = 0;
    std::uint64_t cpu_nr_throttled = 0;
};

// The cgroup layout of this host as seen by this process.
struct Hierarchy {
    std::string controllers;  // v1: "memory", "cpu,cpuacct", "name=systemd"...; v2: ""
    std::string mount;        // where it is mounted, e.g. /sys/fs/cgroup/memory
    std::string root;         // the cgroup the mount shows at its top (mountinfo field 4)
    std::string self;         // this process's cgroup in it (/proc/self/cgroup)
    // The directory of self: mount + (self relative to root); empty when self is not
    // below the mount's root (a bind of some other subtree).
    std::string self_dir() const;
    // The directory of another cgroup path of this hierarchy (same rules).
    std::string dir_of(const std::string& cgroup) const;
    bool has(const std::string& controller) const;  // v1: in the comma list
};
struct Host {
    std::vector<Hierarchy> v1;
    std::optional<Hierarchy> v2;
    // The v1 hierarchy holding controller, or nullptr.
    const Hierarchy* v1_for(const std::string& controller) const;
};
// Reads /proc/self/mountinfo and /proc/self/cgroup.
Result<Host> probe_host();
// The same from their texts (unit tests).
Host parse_host(const std::string& mountinfo, const std::string& proc_self_cgroup);

// A run's cgroup. Destroying it removes what is left (best effort; remove() says why
// it could not).
class Group {
public:
    virtual ~Group() = default;
    virtual Kind kind() const = 0;
    virtual Via via() const { return Via::own_cgroup; }
    // The systemd unit that holds the group (Via::systemd_scope), else empty.
    virtual std::string unit() const { return {}; }
    // v2: an O_DIRECTORY fd of the group, for CLONE_INTO_CGROUP; v1: -1.
    virtual int clone_fd() const { return -1; }
    // v1: moves pid (the init, before it runs anything) into every group.
    virtual Result<void> attach(pid_t pid) = 0;
    // Kills every process in the group, also those the pid namespace's init does not
    // reach (cgroup.kill; v1: freeze, SIGKILL each, thaw). Safe from any thread.
    virtual void kill_all() noexcept = 0;
    // Stops (true) or resumes (false) every process of the group, without waiting
    // for the freeze to complete; false when this group cannot. Safe from any thread.
    virtual bool freeze(bool) noexcept { return false; }
    // v2: stops (true) or resumes (false) every process of the group and waits up to
    // timeout_ms until the kernel says the group is so (cgroup.events "frozen").
    // false when this group cannot, or the kernel did not confirm in time (then the
    // group is left as the request made it). Safe from any thread.
    virtual bool freeze_and_wait(bool, int) noexcept { return false; }
    // Whether freeze_and_wait() is this group's to offer for the user's stop (v2; the
    // v1 freezer is the guard watch's helper's, which thaws it when done).
    virtual bool freezes_for_stop() const noexcept { return false; }
    // v1: a descriptor open for writing on the group's freezer.state ("FROZEN",
    // "THAWED"), for another process to freeze and thaw the group with (the guard
    // watch's helper, which thaws it also when agentjail is killed meanwhile); -1
    // when this group has no freezer. Owned by the group.
    virtual int freezer_fd() noexcept { return -1; }
    virtual Stats stats() const = 0;
    // Waits until the group is empty (killing what is left after a while), then
    // removes it. Call after the init was reaped.
    virtual Result<void> remove() = 0;
    // The directories made for this run.
    virtual std::vector<std::string> paths() const = 0;
    // Limits asked for that this host cannot enforce (e.g. swap without swap accounting).
    virtual std::vector<std::string> notes() const { return {}; }
};

// Makes the run's group with the settings' memory, swap, cpus and pids (only call
// when settings.needs_cgroup()). The error says what is missing and how to get it;
// its kind is unsupported. Removes stale groups of dead agentjails on the way.
Result<std::unique_ptr<Group>> create(const limits::Settings& settings);

// Removes groups left by agentjail processes that are gone (SIGKILLed before they
// could clean up), killing anything still inside them, in every place create() puts
// groups for this caller. Never touches a group whose name agentjail does not give.
struct GcResult {
    std::vector<std::string> removed;
    std::vector<std::string> failed;  // "path: why"
};
GcResult gc();

// "agentjail-<pid>-<n>": the pid of the agentjail that made it, or -1 when name is
// not one of ours.
pid_t owner_of(const std::string& name);

}  // namespace agentjail::cgroup
