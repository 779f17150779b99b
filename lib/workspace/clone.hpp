// SPDX-License-Identifier: Apache-2.0
// Clone mode: before the run, a private clone of the workspace's repository in
// the run's state directory, bound where the workspace is; after it, an audit of
// what the sandbox did to the clone's .git, its work committed and fetched into
// the user's repository as the branch agentjail/<run-id>, and the report.
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"

#include "plan/plan.hpp"
#include "workspace/runs.hpp"

#include <memory>
#include <string>
#include <vector>

namespace agentjail::workspace {

struct Git;

struct CloneOptions {
    bool commit_uncommitted = true;  // the work tree's changes as one extra commit
};

class CloneRun {
public:
    // Makes the clone of plan.workspace's repository (which must be its top level)
    // where the plan binds the workspace from (plan.run_dir/clone). Refused, with a
    // message saying to use overlay mode, when the workspace is not a git repository.
    static Result<std::unique_ptr<CloneRun>> prepare(const plan::Plan& plan, const CloneOptions& opt);

    // The sandbox ran (spawn succeeded): from now on the run's state is kept.
    void launched() { launched_ = true; }

    // After the sandbox ended and nothing of it is left: audit, restore, commit,
    // fetch, report. Never fails: the outcome's status says what happened.
    WorkspaceOutcome finish();

    const std::string& id() const { return run_.id; }
    const std::string& clone_dir() const { return clone_; }

    // Not launched: the state is removed. Launched but never finished (a sandbox
    // dropped without wait()): run.json says so, the clone stays for the user.
    ~CloneRun();
    CloneRun(const CloneRun&) = delete;
    CloneRun& operator=(const CloneRun&) = delete;

private:
    // The work tree as the user's is (clone.cc).
    Result<void> fill_work_tree(const Git& user, const Git& clone, int wsfd, int clonefd);
    CloneRun() = default;
    struct Audit;
    void write_state(const std::string& status, const std::string& message, const std::string& report_json,
                     std::size_t flags, bool ended);

    RunDir run_;
    std::string root_;
    RunRecord rec_;
    CloneOptions opt_;
    std::string workspace_;   // the user's workspace = repository top level
    std::string user_git_;    // the user's common git dir (fetched into)
    std::string clone_;       // <run>/clone
    std::string base_;        // the commit the run started from ("" unborn)
    std::string head_ref_;    // refs/heads/<branch> or "" (detached)
    std::string start_tree_;  // the work tree as copied in, as a tree
    std::string neutral_config_;
    std::vector<std::string> hidden_;  // hidden paths, relative to the workspace
    bool sha256_ = false;
    bool launched_ = false;
    bool finished_ = false;
};

// The text of the .git/config agentjail writes into a clone: nothing that runs.
std::string neutral_git_config(bool sha256);

}  // namespace agentjail::workspace
