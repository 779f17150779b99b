// SPDX-License-Identifier: Apache-2.0
// The plan's host actions (plan.hpp, HostAction) carried out: what a run makes on
// the host before the sandbox (the agent's state directory and its mount points, the
// git identity file, the placeholder key). The planner only lists them.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"

#include <string>
#include <vector>

namespace agentjail::plan {
struct Plan;
}

namespace agentjail::run {

// In order; the first that fails ends it with its error (what was made stays: each
// is made again, or checked, by the next run). A placeholder key that cannot be
// made is no error: this run's placeholders (from the plan's key) still work, only
// the next run's differ; `warnings` gets why. The key's bytes are wiped from the
// plan once written.
Result<void> carry_out(plan::Plan& plan, std::vector<std::string>& warnings);

}  // namespace agentjail::run
