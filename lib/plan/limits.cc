// SPDX-License-Identifier: Apache-2.0
// The limits part of the plan: [limits] resolved into the cgroup settings, the
// rlimits the command gets before execve, and the wall clock.
#include "plan/internal.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>

namespace agentjail::plan::detail {

Result<void> build_limits(const policy::Policy& policy, const HostFacts& host, Plan& plan) {
    const auto& l = policy.limits;
    limits::Settings s;
    s.memory_bytes = l.memory.value;
    s.cpus = l.cpus.value;
    s.pids = l.pids.value;
    // swap = 0 without a memory limit is harmless (a base layer's "no swap" after
    // -m max); any other swap is counted on top of the memory limit, so needs one.
    if (l.swap.value && *l.swap.value > 0 && !l.memory.value)
        return Error(ErrorKind::invalid_input, EINVAL,
                     with_origin(describe(l.swap.origin),
                                 "a swap limit needs a memory limit (limits.memory or -m): swap is "
                                 "counted on top of it"));
    // With a memory limit, no swap unless asked: swapping would only stretch the limit.
    if (s.memory_bytes) s.swap_bytes = l.swap.value.value_or(0);
    s.timeout_s = l.timeout.value;
    s.kill_grace_s = l.kill_grace.value;
    s.cpu_time_s = l.cpu_time.value;
    s.nofile = l.nofile.value;
    s.fsize_bytes = l.fsize.value;
    s.tmpfs_bytes = l.tmpfs_size.value;
    s.allow_degraded = l.allow_degraded.value;
    plan.limits = s;

    plan.timeout_s = s.timeout_s.value_or(0);
    plan.kill_grace_s = s.kill_grace_s;
    plan.setup_timeout_s = l.setup_timeout.value;

    auto add = [&](int resource, std::uint64_t soft, std::uint64_t hard, const policy::Origin& o) {
        // A limit only ever lowers: where the caller's own hard limit is lower, that
        // one holds (raising it would fail with EPERM in the sandbox anyway).
        for (const auto& [res, max] : host.rlimit_hard)
            if (res == resource && max != RLIM_INFINITY) {
                hard = std::min(hard, max);
                soft = std::min(soft, hard);
            }
        for (auto& r : plan.rlimits)
            if (r.resource == resource) {
                r = Rlimit{resource, soft, hard, describe(o)};
                return;
            }
        plan.rlimits.push_back(Rlimit{resource, soft, hard, describe(o)});
    };
    // Core dumps off, always: a dump of an agent's memory is a file full of its
    // tokens, written where the command runs (and core_pattern may pipe it to a host
    // program).
    add(RLIMIT_CORE, 0, 0, policy::Origin{"built-in", 0, 0, "core dumps off"});
    if (s.nofile) add(RLIMIT_NOFILE, *s.nofile, *s.nofile, l.nofile.origin);
    // One file grows to fsize at most (EFBIG, SIGXFSZ): a backstop against filling
    // the disk through the workspace (RES-04); totals need a quota.
    if (s.fsize_bytes) add(RLIMIT_FSIZE, *s.fsize_bytes, *s.fsize_bytes, l.fsize.origin);
    if (s.cpu_time_s) {
        // SIGXCPU at the soft limit (catchable: a chance to clean up), SIGKILL 1 s later.
        auto soft = static_cast<std::uint64_t>(std::ceil(*s.cpu_time_s));
        add(RLIMIT_CPU, soft, soft + 1, l.cpu_time.origin);
    }
    return {};
}

std::string rlimit_name(int resource) {
    switch (resource) {
        case RLIMIT_CORE: return "RLIMIT_CORE";
        case RLIMIT_NOFILE: return "RLIMIT_NOFILE";
        case RLIMIT_FSIZE: return "RLIMIT_FSIZE";
        case RLIMIT_CPU: return "RLIMIT_CPU";
        case RLIMIT_NPROC: return "RLIMIT_NPROC";
        case RLIMIT_AS: return "RLIMIT_AS";
        case RLIMIT_STACK: return "RLIMIT_STACK";
        case RLIMIT_MEMLOCK: return "RLIMIT_MEMLOCK";
        default: return "RLIMIT_" + std::to_string(resource);
    }
}

std::string limits_summary(const Plan& plan) {
    const auto& l = plan.limits;
    std::string out;
    auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
    if (l.memory_bytes)
        add("memory " + units::format_size(*l.memory_bytes) +
            (l.swap_bytes.value_or(0) ? " + swap " + units::format_size(*l.swap_bytes) : " (no swap)"));
    if (l.cpus) add("cpus " + units::format_number(*l.cpus));
    if (l.pids) add("pids " + std::to_string(*l.pids));
    if (l.timeout_s)
        add("timeout " + units::format_duration(*l.timeout_s) + " (then SIGTERM, SIGKILL after " +
            units::format_duration(l.kill_grace_s) + ")");
    if (l.cpu_time_s) add("cpu time " + units::format_duration(*l.cpu_time_s));
    if (l.nofile) add("nofile " + std::to_string(*l.nofile));
    if (l.fsize_bytes) add("fsize " + units::format_size(*l.fsize_bytes));
    if (out.empty()) out = "none";
    if (l.needs_cgroup()) out += l.allow_degraded ? "; cgroup, or rlimits only if none can be made" : "; cgroup required";
    out += "; core dumps off";
    return out;
}

}  // namespace agentjail::plan::detail
