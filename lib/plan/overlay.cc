// SPDX-License-Identifier: Apache-2.0
// Overlay mode's part of the plan: the workspace's bind turned into an overlay
// whose lower layer is the workspace, so nothing the sandbox writes reaches it.
#include "plan/internal.hpp"

#include <cerrno>

namespace agentjail::plan::detail {

Result<void> overlay_workspace(const policy::Policy& policy, Plan& plan) {
    plan.workspace_mode = policy.workspace_mode.value;
    if (plan.workspace_mode != policy::WorkspaceMode::overlay) return {};
    const std::string why = describe(policy.workspace_mode.origin);
    if (plan.workspace.empty())
        return Error(ErrorKind::invalid_input, EINVAL,
                     with_origin(why, "workspace mode overlay needs a workspace (workspace = \"none\")"));
    if (policy.workspace.value != policy::WorkspaceAccess::rw)
        return Error(ErrorKind::invalid_input, EINVAL,
                     with_origin(why, "workspace mode overlay needs a writable workspace (its writes go to "
                                      "the overlay's upper layer); workspace = \"ro\" with mode \"direct\" "
                                      "already keeps it unchanged"));
    // The same op, the same place in the order: the masks over hidden paths and
    // every bind below the workspace were planned against it and go on top of the
    // overlay as they would on the bind. The host-file rules (plan.cc) were taken
    // before, from the bind; the sandbox cannot write the workspace any more, but
    // keeping it among them is the cautious side.
    for (auto& op : plan.mounts) {
        if (op.kind != MountKind::bind || op.src != plan.workspace || op.dst != plan.workspace) continue;
        op.kind = MountKind::overlay;
        op.read_only = false;
        op.why = op.why.empty() ? why : op.why + ", " + why;
        return {};
    }
    // The workspace itself is not mounted (a policy replaced its bind): the overlay
    // would have nothing to cover.
    return Error(ErrorKind::invalid_input, EINVAL,
                 with_origin(why, "workspace mode overlay: the plan has no bind of the workspace " + plan.workspace +
                                      " to turn into an overlay"));
}

}  // namespace agentjail::plan::detail
