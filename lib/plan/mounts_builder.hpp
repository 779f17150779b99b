// SPDX-License-Identifier: Apache-2.0
// The builder of a Plan's mount list, private to lib/plan: its state and its steps,
// the mounts the policy asks for (mounts.cc) and how they are resolved into the
// final list (mounts_resolve.cc).
#pragma once

#include "plan/internal.hpp"

#include <optional>
#include <string>
#include <vector>

namespace agentjail::plan::detail {

class Builder {
public:
    Builder(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan)
        : policy_(policy), ctx_(ctx), plan_(plan) {}

    Result<void> run();

private:
    struct Entry {
        MountOp op;
        // A bind added for the target of a symlinked source (/bin -> usr/bin): it may
        // be dropped when a same-path bind of the same access already shows it.
        bool derived = false;
        bool workspace = false;  // the workspace bind
        int protect = -1;        // index in findings_.protect of the read-only bind it is
    };

    // The mounts the policy asks for (mounts.cc).
    void add(MountOp op, bool derived = false, bool workspace = false);
    void writable_roots();
    void home();
    Result<void> tmpfs_rules();
    void proc_and_dev();
    void proc_hardening(const std::string& why);
    Result<void> missing(const policy::MountRule& rule, const std::string& src, int err);
    Result<void> mount_rule(const policy::MountRule& rule, bool read_only);
    void workspace();

    // Resolving them into the final list (mounts_resolve.cc).
    void replace_same_dst();
    void drop_covered_derived();
    Result<void> find_hidden();
    Result<void> drop_hidden_binds();
    void workspace_locks();
    static void sort_by_depth(std::vector<Entry>& v);
    std::vector<MountOp> make_masks();
    void drop_under_masks(const std::vector<MountOp>& masks);
    Result<void> check_mount_points(std::vector<MountOp>& ops);
    // mount: op can be mounted; present: op is a symlink the host already has there;
    // gone: op masks a host name that was removed since a pattern matched it (a lock
    // file such as /etc/gshadow.lock, matched by gshadow*, lives for a moment).
    enum class InBind { mount, present, gone };
    Result<InBind> check_in_bind(const MountOp& op, const MountOp& bind);

    // The guards the supervisor watches for the run (mounts_resolve.cc).
    void protected_guards(const std::vector<MountOp>& ops);
    void protect_guard(const Protected& p, const MountOp& op);
    void hidden_guard(const Hidden& h, const MountOp& mask);

    const policy::Policy& policy_;
    const ExpandContext& ctx_;
    Plan& plan_;
    std::vector<Entry> entries_;
    std::vector<Hidden> hidden_;
    WorkspaceFindings findings_;
    std::vector<MountOp> proc_masks_;
    std::vector<std::string> writable_;
};

}  // namespace agentjail::plan::detail
