// SPDX-License-Identifier: Apache-2.0
// One overlay run from start to end on the host: its state directory with the
// upper layer, the moment it started, and at the end the change set (each change's
// base read from the host then), its risky-change report and run.json; later
// `agentjail apply RUN`.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"

#include "plan/plan.hpp"
#include "policy/policy.hpp"
#include "workspace/overlay.hpp"
#include "workspace/report.hpp"
#include "workspace/runs.hpp"

#include <memory>
#include <string>
#include <vector>

namespace agentjail::workspace {

// The patterns an overlay run marks protected: the policy's [workspace] protect
// (the built-in list when it has none), less its unprotect entries.
std::vector<std::string> protect_patterns(const policy::Policy& policy);

class OverlayRun {
public:
    // Makes the run's directory the plan names (plan.run_dir, with upper/ and work/,
    // where the plan's overlay op points) and notes when the run starts (a host file
    // changed after it is a conflict at apply time; nothing of the workspace is read
    // here). Nothing exists yet for the sandbox: a failure here leaves no run behind.
    static Result<std::unique_ptr<OverlayRun>> start(const plan::Plan& plan, std::vector<std::string> protect);

    // After the sandbox is gone: reads the change set from the upper layer, writes
    // it (changes.json) and run.json, and fills `out` with the report. The upper
    // layer stays for `agentjail apply`; the work directory goes.
    void finish(WorkspaceOutcome& out);

    // The launch failed: the run's directory goes (nothing ran in it).
    void abandon();

    const std::string& id() const { return dir_.id; }
    const std::string& root() const { return root_; }

private:
    OverlayRun() = default;
    std::string root_;
    RunDir dir_;
    std::string workspace_;
    std::string upper_;
    struct timespec since_ {};  // run_start(), before the sandbox exists
    std::vector<std::string> protect_;
    RunRecord rec_;
};

// The risky-change report of a change set (upper_dir: where new content is read).
Report overlay_report(const std::string& run_id, const std::vector<LayerChange>& changes, const std::string& upper_dir);

struct AppliedRun {
    RunRecord record;
    ApplyOutcome outcome;
};

// `agentjail apply RUN`: loads the run's change set and applies it to its
// workspace; the record's status becomes "applied" (or says what was left).
Result<AppliedRun> apply_run(const std::string& runs_root, const std::string& id, const ApplyOptions& opts);

// What apply did, for people (names escaped), and as a JSON object.
std::string apply_text(const AppliedRun& a);
std::string apply_json(const AppliedRun& a, int indent = 2);

}  // namespace agentjail::workspace
