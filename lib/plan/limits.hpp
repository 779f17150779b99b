// SPDX-License-Identifier: Apache-2.0
// Resource limits as plain data (what [limits] and the flags ask for); their values'
// parsers are base/units.hpp. No system calls.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "base/units.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace agentjail::limits {

// The limits in force for one run, resolved from the policy and the flags. An empty
// optional is "no limit". Everything here is enforced either by the cgroup (memory,
// swap, cpus, pids) or by rlimits in the command (cpu_time, nofile, fsize, core) or
// by the supervisor's wall clock (timeout, kill_grace).
struct Settings {
    std::optional<std::uint64_t> memory_bytes;  // memory.max / memory.limit_in_bytes
    // memory.swap.max / memsw - memory. Only meaningful with a memory limit; the
    // default there is 0 (no swap), so that a memory limit cannot be dodged by swapping.
    std::optional<std::uint64_t> swap_bytes;
    std::optional<double> cpus;  // cpu.max quota/period, e.g. 1.5
    std::optional<std::uint64_t> pids;

    std::optional<double> timeout_s;   // wall clock
    double kill_grace_s = 5;           // SIGTERM, then SIGKILL after this
    std::optional<double> cpu_time_s;  // RLIMIT_CPU (a backstop: per process)
    std::optional<std::uint64_t> nofile;
    std::optional<std::uint64_t> fsize_bytes;  // RLIMIT_FSIZE (SIGXFSZ / EFBIG)
    std::optional<std::uint64_t> tmpfs_bytes;  // default size of tmpfs mounts without one

    // Run without a cgroup (rlimits only) when none can be made, instead of refusing.
    bool allow_degraded = false;

    // Where the group goes (not a policy key: the caller of the run says).
    CgroupPlacement placement = CgroupPlacement::automatic;
    std::string parent;  // under: a cgroup path, as /proc/self/cgroup shows it

    // True when a limit needs a cgroup (memory, swap, cpus or pids).
    bool needs_cgroup() const { return memory_bytes || cpus || pids; }
};

// The default cpu.max period (100 ms, the kernel's default); the quota is cpus * period.
inline constexpr std::uint64_t cpu_period_us = 100000;

}  // namespace agentjail::limits
