// SPDX-License-Identifier: Apache-2.0
// Clone and overlay modes' part of the plan: the workspace's bind turned into an
// overlay whose lower layer is the workspace (so nothing the sandbox writes reaches
// it), or bound from the run's clone; and where the run's state lies. Decided here,
// so that `explain` and `-v` show the plan that runs.
#include "plan/internal.hpp"

#include "sys/state_dir.hpp"
#include "util/strings.hpp"

#include <algorithm>
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

Result<void> run_state(const HostFacts& host, const HostView& view, Plan& plan) {
    if (plan.workspace_mode == policy::WorkspaceMode::direct) return {};
    plan.run_id = host.run_id.empty() ? sys::new_run_id() : host.run_id;
    if (!sys::valid_run_id(plan.run_id))
        return Error(ErrorKind::internal, EINVAL, "'" + util::printable(plan.run_id) + "' is not a run id");
    // The state home is the user's layout and is followed as they set it up; the
    // "agentjail/runs" below it is agentjail's own and never a link: resolved here, a
    // link planted there by an earlier run (direct mode with -C ~) would carry the
    // run's layers and clone wherever it points, and the launch, which opens those
    // names without following links, would find the plan's name to be the real one.
    plan.run_dir = view.resolve_existing(sys::state_home(host.environ, host.home)) +
                   "/agentjail/runs/" + plan.run_id;
    plan.notes.push_back("the run's state: " + plan.run_dir + " (each run takes a fresh id; `agentjail runs` lists them)");
    if (plan.workspace_mode == policy::WorkspaceMode::overlay) {
        // The upper layer inside the lower one would show the sandbox its own layer
        // (and overlayfs refuses overlapping layers anyway).
        if (util::path_within(plan.run_dir, plan.workspace))
            return Error(ErrorKind::invalid_input, EINVAL,
                         "overlay mode: the run's state directory " + plan.run_dir + " is inside the workspace " +
                             plan.workspace + "; set XDG_STATE_HOME to a directory outside it");
        for (auto& op : plan.mounts)
            if (op.kind == MountKind::overlay && op.src == plan.workspace) {
                op.upper = plan.run_dir + "/upper";
                op.work = plan.run_dir + "/work";
            }
        return {};
    }
    // Clone mode: the sandbox sees the clone at the workspace's own path; the user's
    // directory is not mounted, so the guards of its names have nothing to guard.
    const std::string clone = plan.run_dir + "/clone";
    for (auto& m : plan.mounts)
        if (m.kind == MountKind::bind && m.dst == plan.workspace && m.src == plan.workspace) m.src = clone;
    for (auto& w : plan.host_files.sandbox_writable)
        if (w.path == plan.workspace) {
            w.path = clone;
            w.why = "the clone of the workspace";
        }
    plan.guards.erase(std::remove_if(plan.guards.begin(), plan.guards.end(),
                                     [&](const Guard& g) { return util::path_within(g.host, plan.workspace); }),
                      plan.guards.end());
    return {};
}

}  // namespace agentjail::plan::detail
