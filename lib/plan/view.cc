// SPDX-License-Identifier: Apache-2.0
// [workspace] view = "fuse": the plan's workspace served by launch/view_server. What the
// mounts would have done below the workspace (masks over hidden names, read-only binds
// over protected ones, placeholders for missing ones, the rename locks, the guards the
// supervisor watches) becomes the view's rules, judged per name when the sandbox asks,
// and the patterns themselves travel along, so a name the host makes during the run is
// judged as well as one the plan found.
#include "plan/internal.hpp"

#include "util/strings.hpp"
#include "plan/view_rules.hpp"

#include <algorithm>

namespace agentjail::plan::detail {

Result<void> serve_workspace(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan) {
    if (policy.workspace_view.value != policy::WorkspaceView::fuse) return {};
    const std::string why = describe(policy.workspace_view.origin);
    if (plan.workspace.empty() || plan.workspace_mode != policy::WorkspaceMode::direct ||
        policy.workspace.value != policy::WorkspaceAccess::rw) {
        // The default says nothing where it does not apply (clone, overlay, read-only);
        // a view asked for by name does.
        const auto& o = policy.workspace_view.origin;
        if (!o.file.empty() && o.file != "built-in default")
            plan.notes.push_back("workspace view fuse (" + why + "): only a writable workspace in direct mode is served");
        return {};
    }
    const std::string& ws = plan.workspace;
    auto is_workspace = [&](const MountOp& m) {
        return m.kind == MountKind::bind && !m.read_only && m.dst == ws && m.src == ctx.workspace;
    };
    if (std::none_of(plan.mounts.begin(), plan.mounts.end(), is_workspace)) return {};

    auto rules = std::make_shared<view::Rules>();
    // The policy's hide patterns that reach into the workspace, relative to it.
    for (const auto& h : policy.hide) {
        if (!uses_globstar(h.pattern)) continue;
        auto split = split_rule(h.pattern, ctx, h.origin);
        if (!split) return std::move(split).error();
        if (util::path_within(split->base, ws)) {
            rules->hide.emplace_back(join(relative_to(split->base, ws), split->rest));
        } else if (util::path_within(ws, split->base) && util::starts_with(split->rest, "**/")) {
            // Above the workspace, "**/NAME" reaches every depth of it too.
            rules->hide.emplace_back(split->rest);
        }
    }
    for (const auto& r : policy.protect) {
        auto rel = protect_rel(r.pattern, r.origin);
        if (!rel) return std::move(rel).error();
        rules->protect.emplace_back(*rel);
        // git takes a lock file beside each file it rewrites and renames it over the
        // file: the lock is the file's future content.
        if (!rel->ends_with("/")) rules->protect.emplace_back(*rel + ".lock");
    }
    rules->inside = ws;
    rules->uid = plan.uid;  // Plan::uid_map maps this one id to itself
    rules->gid = plan.gid;

    // What the mounts below the workspace did, the view does.
    std::vector<MountOp> kept;
    kept.reserve(plan.mounts.size());
    std::size_t taken = 0;
    for (auto& m : plan.mounts) {
        if (is_workspace(m)) {
            m.kind = MountKind::view;
            m.view_rules = rules;
        }
        if (!util::path_within(m.dst, ws) || m.dst == ws) {
            kept.push_back(std::move(m));
            continue;
        }
        const std::string rel = relative_to(m.dst, ws);
        if (m.kind == MountKind::mask_dir || (m.kind == MountKind::mask_file && m.text.empty())) {
            rules->hide_exact.insert(rel);
        } else if (m.kind == MountKind::mask_file) {
            rules->files[rel] = m.text;
        } else if (m.kind == MountKind::bind && m.lock_only) {
            // A rename lock: the view refuses to move a folder holding a rule's name.
        } else if (m.kind == MountKind::bind && m.read_only && m.src == m.dst) {
            rules->protect_exact.insert(rel);
        } else {
            kept.push_back(std::move(m));
            continue;
        }
        ++taken;
    }
    plan.mounts = std::move(kept);
    // The guards below the workspace: the view judges those names at every lookup, so
    // nothing is watched, and no placeholder is made.
    std::erase_if(plan.guards, [&](Guard& g) {
        if (!util::path_within(g.host, ctx.workspace)) return false;
        if (g.kind == Guard::Kind::hidden && (g.dev != 0 || g.ino != 0)) rules->hide_inodes.insert({g.dev, g.ino});
        plan.view_guards.push_back(std::move(g));
        return true;
    });
    plan.notes.push_back("workspace: served through FUSE by agentjail (" + why + "): " + std::to_string(taken) +
                         " mounts below it are rules of the view instead; nothing is made in the project");
    return {};
}

}  // namespace agentjail::plan::detail
