// SPDX-License-Identifier: Apache-2.0
// The plan's host actions (plan.hpp, HostAction) carried out: what a run makes on
// the host before the sandbox (the agent's state directory and its mount points, the
// git identity file, the placeholder key). The planner only lists them.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"

#include <string>
#include <vector>

#include "plan/plan.hpp"

#include <memory>

namespace agentjail::run {

// In order; the first that fails ends it with its error (what was made stays: each
// is made again, or checked, by the next run). A placeholder key that cannot be
// made is no error: this run's placeholders (from the plan's key) still work, only
// the next run's differ; `warnings` gets why. The key's bytes are wiped from the
// plan once written.
Result<void> carry_out(plan::Plan& plan, std::vector<std::string>& warnings);

// The workspace's walk kept for the next run's plan (Plan::kept_scan), once nothing
// of the sandbox is left: written under a fresh name and renamed over the last one.
// Nothing is written when the plan keeps none, when the walk started from the kept
// one and read few directories again (up to 1 in 32: the next run reads those again,
// cheaper than a whole walk written at every run), or when it cannot be kept whole
// (skipped directories). The oldest go past 64 kept walks.
struct KeptWalkOf {
    KeptWalkOf() = default;
    explicit KeptWalkOf(const plan::Plan& plan);  // what keep_walk needs of it
    plan::Plan::KeptScan kept;
    std::string workspace;
    std::shared_ptr<const sys::Scan> plan_walk;
};
Result<void> keep_walk(const KeptWalkOf& of, const sys::Scan& walk);

}  // namespace agentjail::run
