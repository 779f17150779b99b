// SPDX-License-Identifier: Apache-2.0
// What a run came to, as plain data: the result (exit, signal, limits, counters,
// layers), what it did with the workspace, where its cgroup went. Filled by the run's
// components, read by the record and the APIs. No system call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace agentjail {

// Where a run's cgroup goes, when a limit needs one (docs/embedding.md).
enum class CgroupPlacement {
    // The CLI's routes: as root under agentjail.slice at the top of a v2 hierarchy; as
    // a user the caller's delegated cgroup (moving the caller into a leaf of it to
    // pass controllers down), its delegated parent, or a systemd user scope.
    automatic,
    // Below the caller's own cgroup, never moving the caller: a scheduler's accounting
    // and limits keep seeing the job. The C API's default.
    caller,
    // Below SpawnOptions::cgroup_parent, never moving the caller.
    under,
};

// The resource limits a run had (0: none), as the result record reports them.
struct RunLimits {
    std::uint64_t memory_bytes = 0;
    std::uint64_t swap_bytes = 0;  // with a memory limit: 0 means no swap at all
    double cpus = 0;
    std::uint64_t pids = 0;
    double timeout_s = 0;
    double kill_grace_s = 0;
    double cpu_time_s = 0;  // RLIMIT_CPU
    std::uint64_t nofile = 0;
    std::uint64_t fsize_bytes = 0;
};

// Something the sandbox tried and was refused (or that failed for it), told apart by
// kind and what, counted: the summary after the run, the record's "refusals" and
// `agentjail log` (README.md, "What was refused").
struct Refusal {
    std::string kind;   // "network", "syscall", "socket"
    std::string what;   // "evil.example:443", "mount", "/run/docker.sock"
    std::string why;    // the reason as the proxy or the filter gave it
    std::string allow;  // what would allow it ("--allow-host evil.example"); "" when nothing should
    std::uint64_t count = 0;
    // The same as a policy line, for `agentjail learn`: the key ("network.allow",
    // "filesystem.sockets", "seccomp.nested_sandboxes") and its value as TOML
    // ("\"evil.example\"", "{ host = ..., methods = [...] }", "true"); "" when none.
    std::string key;
    std::string value;
};

// A bounded tally of refusals: distinct ones kept in the order first seen, the rest
// only counted, so a flood costs a counter and never memory.
class RefusalTally {
public:
    static constexpr std::size_t kMax = 32;
    void add(std::string kind, std::string what, std::string why, std::string allow, std::string key = {},
             std::string value = {}) {
        for (auto& r : list_)
            if (r.kind == kind && r.what == what && r.why == why) {
                ++r.count;
                return;
            }
        if (list_.size() >= kMax) {
            ++more_;
            return;
        }
        list_.push_back({std::move(kind), std::move(what), std::move(why), std::move(allow), 1, std::move(key),
                         std::move(value)});
    }
    const std::vector<Refusal>& list() const { return list_; }
    std::uint64_t more() const { return more_; }

private:
    std::vector<Refusal> list_;
    std::uint64_t more_ = 0;  // refusals of kinds beyond kMax
};

// What a run did with the workspace (docs/workspace.md).
struct WorkspaceFinding {
    std::string path;    // relative to the workspace
    std::string what;    // e.g. "git config written during the run sets core.fsmonitor"
    std::string action;  // e.g. "renamed to config.agentjail-quarantined, mode 000", "flagged"
};
// Direct mode: each time the host replaced a hidden or protected name during the run
// and the supervisor put the mask or the read-only bind back.
struct WorkspaceReapplied {
    std::string name;    // the host path
    std::string why;     // what the host did: "replaced", "created", "removed", "moved away"
    std::string action;  // "mask" or "read-only bind" re-applied
    std::string when;    // ISO 8601 UTC, when the host change was noticed
    double window_ms = 0;  // from noticing the change to the protection being back
};
struct WorkspaceOutcome {
    std::string mode = "direct";  // "direct", "clone" or "overlay"
    // Clone and overlay modes: where the agent's work is, and the risky-change report.
    std::string run_id;     // "20261202-011500-ab12cd"
    std::string state_dir;  // the run's directory on the host
    std::string branch;     // clone: "agentjail/<run-id>" in the user's repository
    // As in run.json: "ok", "no-changes", "refused" (the sandbox tampered with what
    // agentjail needs; nothing came back), "failed" (agentjail could not finish).
    std::string status;
    std::string message;      // why, when status is not "ok"
    std::size_t flags = 0;    // changes that can run code later (the report's flags)
    std::string report_text;  // for people, every name escaped
    std::string report_json;  // a JSON object (docs/workspace.md)
    // Direct mode: the placeholders made for protected names that did not exist,
    // the guards re-applied after a host-side change (or why the run was stopped when
    // one could not be), and what the check after the run found and did.
    std::vector<std::string> placeholders_made;     // host paths created empty for the run
    std::vector<std::string> placeholders_removed;  // ... and removed after it
    std::vector<std::string> placeholders_kept;     // ... kept (filled in, or not ours), with why
    std::vector<WorkspaceReapplied> reapplied;      // the first 64
    std::uint64_t reapplied_count = 0;              // all of them
    std::string stopped;  // non-empty: a protection could not be re-applied and the run was stopped
    std::vector<WorkspaceFinding> audit;
};

struct RunResult {
    bool exited = false;     // true: exit_code is valid; false: killed by term_signal
    int exit_code = 0;
    int term_signal = 0;
    double wall_time_s = 0;
    bool timed_out = false;             // the wall-clock limit ended the run
    // The run was asked to end (Sandbox::stop: a signal to agentjail) with this
    // signal, and whether what was inside had to be killed after the kill grace.
    int stop_signal = 0;
    bool stop_killed = false;
    std::uint64_t seccomp_denials = 0;  // calls refused or recorded by the filter
    // Resource use, from the sandbox's cgroup (0 where it was not measured; without a
    // cgroup the cpu times and the peak come from getrusage of the reaped children).
    std::uint64_t memory_peak_bytes = 0;
    std::uint64_t oom_kill_count = 0;  // processes the OOM killer ended inside the sandbox
    std::uint64_t pids_peak = 0;
    std::uint64_t pids_max_hits = 0;  // forks refused at the pids limit
    double cpu_user_s = 0;
    double cpu_system_s = 0;
    std::uint64_t cpu_throttled_us = 0;  // time held back by the cpus limit
    std::uint64_t cpu_nr_throttled = 0;  // periods in which it was
    std::string cgroup = "none";         // "v2", "v2-delegated", "v1" or "none"
    std::vector<std::string> layers;     // isolation layers in force ("user-ns", "rlimits"...)
    std::vector<std::string> degraded;   // layers asked for but not in force, with why
    RunLimits limits;
    // Connections through the network proxy: refused (403, SOCKS5 refusal, over the
    // connection limit, malformed) and allowed, as in the --net-log lines.
    std::uint64_t network_denials = 0;
    std::uint64_t network_allowed = 0;
    // What was refused, by kind and target (the proxy's and the filter's), the first
    // RefusalTally::kMax distinct ones; refusals_more counts the others.
    std::vector<Refusal> refusals;
    std::uint64_t refusals_more = 0;
    // Where the cgroup's parent came from: "agentjail.slice" (root), "own-cgroup",
    // "parent-cgroup", "systemd-scope" (a transient scope of the user's systemd
    // manager, named in cgroup_unit); empty without a cgroup.
    std::string cgroup_via;
    std::string cgroup_unit;
    WorkspaceOutcome workspace;
    // Non-empty: agentjail's own work during the run failed (an exception on the
    // supervisor's or the relay's thread) and the sandbox was stopped; the record's
    // status is XX and the CLI exits 125. The caller's process is never terminated.
    std::string internal_error;
};

}  // namespace agentjail
