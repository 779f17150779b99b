// SPDX-License-Identifier: Apache-2.0
// The walker of a plan's workspace rules, private to lib/plan: its state and its
// steps, the workspace scans, `**` hides, hard links and ancestors (workspace.cc) and
// the protected paths of direct mode (workspace_protect.cc).
#pragma once

#include "plan/internal.hpp"

#include "base/pattern.hpp"
#include "sys/scan.hpp"

#include <sys/stat.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::plan::detail {

// The last component of a workspace-relative path (workspace.cc).
std::string base_name(std::string_view rel);

class WorkspaceRules {
public:
    WorkspaceRules(const policy::Policy& policy, const ExpandContext& ctx, std::vector<Hidden>& hidden,
                   Plan& plan)
        : policy_(policy), ctx_(ctx), hidden_(hidden), plan_(plan),
          direct_(policy.workspace_mode.value == policy::WorkspaceMode::direct) {}

    Result<WorkspaceFindings> run();

private:
    // The workspace scans, `**` hides, hard links and ancestors (workspace.cc).
    Result<const sys::Scan*> scan_of(const std::string& root);
    Result<const sys::Scan*> ws_scan();
    // The names the workspace's walk keeps (sys::ScanOptions::names): what a rule's
    // last part could be, and git's (view::kGitNames); empty when a rule ends in **.
    std::vector<std::string> ws_names() const;
    // The workspace's walk with every file, for the other names of a hard link.
    Result<const sys::Scan*> ws_scan_whole();
    // The last run's walk of the workspace (Plan::kept_scan), when one is kept and
    // can be used.
    std::optional<sys::Scan> kept_walk();
    std::vector<const sys::ScanEntry*> matches(const sys::Scan& s, const base::Pattern& p);
    Result<void> add_hidden(const std::string& path, const std::string& pattern, const std::string& why,
                            const std::string& link_of = {});
    Result<void> globstar_hides();
    Result<std::vector<std::string>> other_names(dev_t dev, ino_t ino, nlink_t nlink, const std::string& self);
    Result<void> hard_links();
    Result<std::vector<Hidden>> linked_in_hidden_dirs(dev_t ws_dev);
    void ancestors();

    // The protected paths of direct mode (workspace_protect.cc).
    struct ProtectRule {
        std::string raw;
        std::string rel;
        base::Pattern pattern;
        std::string why;
        bool placeholder = true;  // policy::ProtectRule::placeholder
    };
    Result<void> collect_protect_rules();
    bool need_scan_for_protect() const;
    void add_protected(Protected p);
    Result<void> protect_literal(const std::string& root, const std::string& rel, const ProtectRule& rule,
                                 const std::string& pattern_text);
    void add_existing(const std::string& path, const struct stat& st, const std::string& pattern,
                      const std::string& why, const std::string& link_of = {});
    static std::optional<std::string> literal_below_globstar(const base::Pattern& p);
    Result<void> protect();
    Result<void> hooks_paths(const std::vector<std::string>& repo_roots);

    const policy::Policy& policy_;
    const ExpandContext& ctx_;
    std::vector<Hidden>& hidden_;
    Plan& plan_;
    const bool direct_;
    std::vector<ProtectRule> rules_;
    std::map<std::string, sys::Scan> scans_;
    std::optional<sys::Scan> whole_;  // ws_scan_whole()'s
    std::vector<size_t> linked_protect_;
    WorkspaceFindings out_;
};

}  // namespace agentjail::plan::detail
