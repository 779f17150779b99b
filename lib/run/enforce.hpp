// SPDX-License-Identifier: Apache-2.0
// Enforcer: the run-time side of a plan's limits around one launch: makes the
// cgroup before clone (or degrades when the policy allows it), hands launch the
// hooks that enter and kill it, and after the wait fills the RunResult with the
// statistics, the limits and layers in force, and removes the cgroup.
#pragma once

#include "cgroup/cgroup.hpp"
#include "launch/launch.hpp"
#include "plan/plan.hpp"

#include <sys/resource.h>

#include <memory>
#include <string>
#include <vector>

namespace agentjail::run {

// The limits of a plan in the public form the result record reports.
RunLimits run_limits(const limits::Settings& s);

class Enforcer {
public:
    // Fails closed: a limit that needs a cgroup, no cgroup possible, and no
    // allow_degraded is an error (unsupported) saying what is missing.
    static Result<Enforcer> prepare(const plan::Plan& plan);

    Enforcer(Enforcer&&) noexcept = default;
    Enforcer& operator=(Enforcer&&) noexcept = default;
    ~Enforcer() = default;  // the group, if any, removes itself

    // For launch::spawn. The hooks point at the group, which lives on the heap and
    // must outlive the launched Process (declare the Enforcer before it).
    launch::Hooks hooks() const;
    // After the init was reaped: statistics, cleanup, the record's fields.
    void finish(RunResult& r);

    const cgroup::Group* group() const { return group_.get(); }

private:
    Enforcer() = default;
    std::unique_ptr<cgroup::Group> group_;
    RunLimits limits_;
    std::vector<std::string> layers_;
    std::vector<std::string> degraded_;
    rusage before_{};
};

}  // namespace agentjail::run
