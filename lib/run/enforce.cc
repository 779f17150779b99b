// SPDX-License-Identifier: Apache-2.0
// The Enforcer: cgroup creation or the degraded fallback, its part in the launch, and
// the statistics that go into RunResult (getrusage of the reaped children when there
// is no cgroup to ask).
#include "run/enforce.hpp"

#include "util/fault.hpp"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>

namespace agentjail::run {

RunLimits run_limits(const limits::Settings& s) {
    RunLimits l;
    l.memory_bytes = s.memory_bytes.value_or(0);
    l.swap_bytes = s.swap_bytes.value_or(0);
    l.cpus = s.cpus.value_or(0);
    l.pids = s.pids.value_or(0);
    l.timeout_s = s.timeout_s.value_or(0);
    l.kill_grace_s = s.kill_grace_s;
    l.cpu_time_s = s.cpu_time_s.value_or(0);
    l.nofile = s.nofile.value_or(0);
    l.fsize_bytes = s.fsize_bytes.value_or(0);
    return l;
}

Result<void> Enforcer::prepare(const plan::Plan& plan, Spawn& spawn) {
    limits_ = run_limits(plan.limits);
    static const std::pair<std::uint64_t, const char*> ns[] = {
        {CLONE_NEWUSER, "user-ns"}, {CLONE_NEWNS, "mount-ns"}, {CLONE_NEWPID, "pid-ns"},
        {CLONE_NEWNET, "net-ns"},   {CLONE_NEWIPC, "ipc-ns"},  {CLONE_NEWUTS, "uts-ns"},
        {CLONE_NEWCGROUP, "cgroup-ns"}};
    for (const auto& [flag, name] : ns)
        if (plan.clone_flags & flag) layers_.emplace_back(name);
    if (!plan.rlimits.empty()) layers_.emplace_back("rlimits");
    if (plan.seccomp) layers_.emplace_back("seccomp");
    if (!plan.seccomp_without_listener.empty())
        degraded_.push_back("seccomp-listener: " + plan.seccomp_without_listener);
    if (plan.landlock.apply)
        layers_.emplace_back("landlock");
    else if (!plan.landlock.missing.empty())
        degraded_.push_back("landlock: " + plan.landlock.missing);
    if (plan.timeout_s > 0) layers_.emplace_back("wall-clock");

    if (plan.limits.needs_cgroup()) {
        auto g = cgroup::create(plan.limits);
        if (g) {
            group_ = std::move(*g);
            layers_.emplace_back(std::string("cgroup-") + cgroup::kind_name(group_->kind()));
            for (auto& n : group_->notes()) degraded_.push_back(n);
        } else if (plan.limits.allow_degraded) {
            // The policy chose to run anyway: say so in the result, loudly.
            degraded_.push_back("cgroup: " + g.error().message());
        } else {
            return std::move(g).error();
        }
    }
    // The layer that is not there: said beside the others that are missing.
    if (plan.net_mode == policy::NetMode::host)
        degraded_.push_back(
            "net-ns: the sandbox shares the host's network ([network] mode = \"host\")");
    if (group_) {
        spawn.cgroup_fd = group_->clone_fd();
        if (spawn.cgroup_fd < 0) spawn.before_fork = true;
        // While a guarded name's protection is put back (guard/watch.cc).
        spawn.freeze_fd = group_->freezer_fd();
        // The user's stop, where the group offers it (cgroup.hpp says which).
        if (group_->freezes_for_stop()) {
            cgroup::Group* g = group_.get();
            spawn.freeze_group = [g](bool on, int timeout_ms) { return g->freeze_and_wait(on, timeout_ms); };
        }
    }
    return {};
}

Result<void> Enforcer::after_clone(pid_t) {
    // Once the init exists: children reaped before it (clone mode's git) are not the
    // sandbox's.
    ::getrusage(RUSAGE_CHILDREN, &before_);
    return {};
}

Result<void> Enforcer::before_fork(pid_t init) {
    if (!group_ || group_->clone_fd() >= 0) return {};
    return group_->attach(init);
}

void Enforcer::kill() noexcept {
    if (group_) group_->kill_all();
}

namespace {
double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; }
}  // namespace

void Enforcer::finish(RunResult& r) {
    r.limits = limits_;
    r.layers = layers_;
    // The launch's own notes (the sandbox's, during its setup) come after these.
    r.degraded.insert(r.degraded.begin(), degraded_.begin(), degraded_.end());
    if (group_) {
        (void)fault::hit("cgroup.stats");
        cgroup::Stats s = group_->stats();
        r.cgroup = cgroup::kind_name(group_->kind());
        r.cgroup_via = cgroup::via_name(group_->via());
        r.cgroup_unit = group_->unit();
        r.memory_peak_bytes = s.memory_peak_bytes;
        r.oom_kill_count = s.oom_kill_count;
        r.pids_peak = s.pids_peak;
        r.pids_max_hits = s.pids_max_hits;
        r.cpu_user_s = s.cpu_user_s;
        r.cpu_system_s = s.cpu_system_s;
        r.cpu_throttled_us = s.cpu_throttled_us;
        r.cpu_nr_throttled = s.cpu_nr_throttled;
        if (auto rm = group_->remove(); !rm) r.degraded.push_back("cgroup cleanup: " + rm.error().message());
        group_.reset();
        return;
    }
    // No cgroup: the children we reaped since the clone (the init, and through it
    // everything it reaped). In a host with other children this over-counts; the
    // cgroup numbers are the exact ones.
    rusage after{};
    ::getrusage(RUSAGE_CHILDREN, &after);
    r.cgroup = "none";
    r.cpu_user_s = std::max(0.0, seconds(after.ru_utime) - seconds(before_.ru_utime));
    r.cpu_system_s = std::max(0.0, seconds(after.ru_stime) - seconds(before_.ru_stime));
    r.memory_peak_bytes = static_cast<std::uint64_t>(after.ru_maxrss) * 1024;  // the largest one
}

}  // namespace agentjail::run
