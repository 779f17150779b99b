// SPDX-License-Identifier: Apache-2.0
// Enforcer: the run's component for a plan's limits around one launch: makes the
// cgroup before clone (or degrades when the policy allows it), has the init cloned
// into it (or attaches it), kills what is in it beside the init, and after the wait
// fills the RunResult with the statistics, the limits and layers in force, and
// removes the cgroup.
#pragma once

#include "cgroup/cgroup.hpp"
#include "plan/plan.hpp"
#include "run/component.hpp"

#include <sys/resource.h>

#include <memory>
#include <string>
#include <vector>

namespace agentjail::run {

// The limits of a plan in the public form the result record reports.
RunLimits run_limits(const limits::Settings& s);

class Enforcer : public Component {
public:
    // The cgroup exists before clone, so the init is inside it from its first
    // instruction. Fails closed: a limit that needs a cgroup, no cgroup possible, and
    // no allow_degraded is an error (unsupported) saying what is missing.
    Result<void> prepare(const plan::Plan& plan, Spawn& spawn) override;
    // The baseline of the statistics without a cgroup.
    Result<void> after_clone(pid_t init) override;
    // cgroup v1, which cannot clone into a group: the init moves in here.
    Result<void> before_fork(pid_t init) override;
    // cgroup.kill reaches processes that escaped the pid namespace's reach.
    void kill() noexcept override;
    // After the init was reaped: statistics, cleanup, the record's fields. The
    // first to write the record's degraded list (it sets it; the others add).
    void finish(RunResult& r) override;
    // The group goes now (the sandbox, if any, was killed and reaped).
    void abandon() override { group_.reset(); }

private:
    // On the heap: the launch's hooks and the supervisor reach it until the Process
    // is gone (the run declares its components before the Process).
    std::unique_ptr<cgroup::Group> group_;
    RunLimits limits_;
    std::vector<std::string> layers_;
    std::vector<std::string> degraded_;
    rusage before_{};
};

}  // namespace agentjail::run
