// SPDX-License-Identifier: Apache-2.0
// Merging: the built-in defaults, then each layer of the extends chain base
// first (lists accumulate, scalars set by a later layer win, env set last-wins).
#include "policy/internal.hpp"

namespace agentjail::policy::detail {
namespace {

template <class T>
void append(std::vector<T>& to, const std::vector<T>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

template <class T>
void override_with(Located<T>& to, const std::optional<Located<T>>& from) {
    if (from) to = *from;
}

}  // namespace

Policy default_policy() {
    // The values of policy.hpp, with origins that say where they came from, so
    // `explain` never shows an empty origin for a value no file set.
    Policy p;
    auto def = [](const char* key) { return Origin{"built-in default", 0, 0, key}; };
    p.workspace.origin = def("filesystem.workspace");
    p.private_home.origin = def("filesystem.home");
    p.proc.origin = def("filesystem.proc");
    p.dev.origin = def("filesystem.dev");
    p.path_tools.origin = def("filesystem.path_tools");
    p.workspace_mode.origin = def("workspace.mode");
    p.workspace_view.origin = def("workspace.view");
    p.hostname.origin = def("process.hostname");
    p.cwd.origin = def("process.cwd");
    p.die_with_parent.origin = def("process.die_with_parent");
    p.allow_root.origin = def("process.allow_root");
    p.ns_net.origin = def("namespaces.net");
    p.ns_ipc.origin = def("namespaces.ipc");
    p.ns_uts.origin = def("namespaces.uts");
    p.ns_cgroup.origin = def("namespaces.cgroup");
    p.seccomp.default_action.origin = def("seccomp.default");
    p.seccomp.nested.origin = def("seccomp.nested_sandboxes");
    p.seccomp.log.origin = def("seccomp.log");
    p.log_in_sandbox.origin = def("log.allow_in_sandbox");
    p.landlock.origin = def("isolation.landlock");
    p.limits.memory.origin = def("limits.memory");
    p.limits.swap.origin = def("limits.swap");
    p.limits.cpus.origin = def("limits.cpus");
    p.limits.pids.origin = def("limits.pids");
    p.limits.timeout.origin = def("limits.timeout");
    p.limits.cpu_time.origin = def("limits.cpu_time");
    p.limits.nofile.origin = def("limits.nofile");
    p.limits.fsize.origin = def("limits.fsize");
    p.limits.tmpfs_size.origin = def("limits.tmpfs_size");
    p.limits.kill_grace.origin = def("limits.kill_grace");
    p.limits.setup_timeout.origin = def("limits.setup_timeout");
    p.limits.allow_degraded.origin = def("limits.allow_degraded");
    return p;
}

void apply_layer(Policy& p, const Layer& l) {
    if (l.description) p.description = l.description->value;

    append(p.ro, l.ro);
    append(p.rw, l.rw);
    append(p.tmpfs, l.tmpfs);
    append(p.hide, l.hide);
    append(p.sockets, l.sockets);
    override_with(p.workspace, l.workspace);
    override_with(p.private_home, l.private_home);
    override_with(p.proc, l.proc);
    override_with(p.dev, l.dev);
    override_with(p.path_tools, l.path_tools);

    override_with(p.workspace_mode, l.workspace_mode);
    override_with(p.workspace_view, l.workspace_view);
    append(p.protect, l.protect);
    // unprotect takes an entry out of what the layers below protect (by the pattern
    // as written); an entry no layer below has is refused by validate().
    for (auto u : l.unprotect) {
        u.matched = std::erase_if(p.protect, [&](const ProtectRule& r) {
                        return r.pattern == u.pattern;
                    }) != 0;
        p.unprotect.push_back(std::move(u));
    }

    append(p.env_allow, l.env_allow);
    append(p.env_deny, l.env_deny);
    for (const auto& e : l.env_set) set_env(p, e.name, e.value, e.origin);
    append(p.env_path, l.env_path);

    override_with(p.hostname, l.hostname);
    override_with(p.cwd, l.cwd);
    override_with(p.die_with_parent, l.die_with_parent);
    override_with(p.allow_root, l.allow_root);

    override_with(p.ns_net, l.ns_net);
    override_with(p.ns_ipc, l.ns_ipc);
    override_with(p.ns_uts, l.ns_uts);
    override_with(p.ns_cgroup, l.ns_cgroup);

    // Checked by the parser already; a later layer's key wins.
    for (const auto& s : l.limits) (void)set_limit(p, s.key, s.value, s.origin);

    p.seccomp.present = p.seccomp.present || l.has_seccomp;
    override_with(p.seccomp.default_action, l.seccomp_default);
    override_with(p.seccomp.nested, l.seccomp_nested);
    override_with(p.seccomp.log, l.seccomp_log);
    override_with(p.log_in_sandbox, l.log_in_sandbox);
    override_with(p.landlock, l.landlock);
    apply_network(p, l);

    override_with(p.agent.name, l.agent_name);
    if (l.agent_commands) p.agent.commands = *l.agent_commands;
    override_with(p.agent.state, l.agent_state);
    override_with(p.agent.git_identity, l.agent_git_identity);
    if (l.agent_args) p.agent.args = *l.agent_args;
    append(p.agent.notes, l.agent_notes);
    for (auto rule : l.seccomp_rules) {
        rule.declared_default = p.seccomp.default_action;  // this layer's default already applied
        p.seccomp.rules.push_back(std::move(rule));
    }
}

}  // namespace agentjail::policy::detail
