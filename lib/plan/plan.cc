// SPDX-License-Identifier: Apache-2.0
// plan::build(): host facts, the workspace decision, the cwd checks, ids and
// namespaces; the mount list and environment come from mounts.cc and env.cc.
#include "plan/internal.hpp"

#include "util/strings.hpp"
#include "sys/caller.hpp"
#include "sys/state_dir.hpp"

#include <pwd.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>


namespace agentjail::plan {

namespace {

Error invalid(const std::string& why, const std::string& message, int code = EINVAL) {
    return Error(ErrorKind::invalid_input, code, detail::with_origin(why, message));
}

// The workspace: -C DIR (or the API's) when given, else the current directory.
Result<std::string> decide_workspace(const policy::Policy& policy, const HostFacts& host,
                                     const detail::ExpandContext& ctx) {
    std::string why;
    std::string raw = host.cwd;
    if (policy.workspace_path) {
        why = detail::describe(policy.workspace_path->origin);
        raw = policy.workspace_path->value;
        // A relative -C DIR means what it means in the caller's shell.
        if (!raw.empty() && raw[0] != '/' && raw[0] != '~' && raw[0] != '{')
            raw = host.cwd + "/" + raw;
    }
    if (raw.empty()) return invalid(why, "the workspace directory is unknown");
    auto expanded = detail::expand(
        raw, ctx, policy.workspace_path ? policy.workspace_path->origin : policy::Origin{});
    if (!expanded) return std::move(expanded).error();
    // A link below the caller's current directory may have been planted by an earlier
    // run (it had that directory read-write): `-C build`, after `build` became a link
    // to ~, must not hand the home to the next run (THREATS FS-04).
    if (policy.workspace_path && !host.cwd.empty()) {
        for (size_t at = host.cwd.size() + 1; util::path_within(*expanded, host.cwd) && *expanded != host.cwd &&
                                              at <= expanded->size();
             ++at) {
            if (at != expanded->size() && (*expanded)[at] != '/') continue;
            std::string prefix = expanded->substr(0, at);
            struct stat st {};
            if (ctx.view->lstat(prefix, st) == 0 && S_ISLNK(st.st_mode))
                return invalid(why, "workspace " + *expanded + ": " + prefix +
                                        " is a symbolic link inside the current directory; a link inside "
                                        "the project could have been planted by an earlier run; name the "
                                        "real path");
        }
    }
    auto canon = ctx.view->canonical(*expanded);
    if (!canon) {
        int err = errno;
        if (err == ENOENT || err == ENOTDIR)
            return invalid(why, "workspace " + *expanded + " does not exist", ENOENT);
        return invalid(why, "workspace " + *expanded + ": " + util::errno_text(err), err);
    }
    if (!ctx.view->is_dir(*canon))
        return invalid(why, "workspace " + *canon + " is not a directory", ENOTDIR);

    // The workspace is bound read-write: `agentjail -- bash` typed in the home
    // directory must not hand the whole home (or /) to the command. Naming it
    // explicitly (-C) is the only way, and even then hide rules still apply.
    // Named explicitly, it is still refused when it only resolves there: only the
    // path as typed (lexically normalised, ~ expanded) being that directory counts
    // as naming it (`-C ~`, `-C /`).
    if (!policy.workspace_explicit || *expanded != *canon) {
        std::string what;
        if (*canon == "/")
            what = "the root directory";
        else if (!host.home.empty() && *canon == host.home)
            what = "the home directory";
        else if (!host.home.empty() && util::path_within(host.home, *canon))
            what = "a parent of the home directory " + host.home;
        if (!what.empty())
            return invalid(why, policy.workspace_explicit
                                    ? "workspace " + *expanded + " resolves to " + *canon + ", " + what +
                                          ": a workspace is a project, not a home; name it as itself (-C " +
                                          *canon + ") if that is really meant"
                                    : "workspace " + *canon + " is " + what +
                                          ": a workspace is a project, not a home; cd into the "
                                          "project or name it with -C DIR");
    }
    return *canon;
}

// Started in a subdirectory of a git repository without -C: the repository's top
// level, as git finds it (the nearest directory above holding a .git directory or
// file, on the same filesystem), when it is a project and not the home or above it;
// "" otherwise. git inside then finds its repository, and the command starts where
// the user is.
std::string repository_top(const std::string& dir, const HostFacts& host, const HostView& view) {
    struct stat here {};
    if (view.lstat(dir, here) != 0) return {};
    for (std::string d = dir;;) {
        struct stat git {};
        if (view.lstat(d + (d == "/" ? ".git" : "/.git"), git) == 0 && (S_ISDIR(git.st_mode) || S_ISREG(git.st_mode)))
            return d == dir || d == "/" || (!host.home.empty() && util::path_within(host.home, d)) ? std::string() : d;
        if (d == "/") return {};
        const std::string up = d.substr(0, std::max<size_t>(1, d.rfind('/')));
        struct stat st {};
        if (view.lstat(up, st) != 0 || st.st_dev != here.st_dev) return {};
        d = up;
    }
}

Result<std::string> decide_cwd(const policy::Policy& policy, const detail::ExpandContext& ctx,
                               const Plan& plan) {
    std::string why;
    std::string cwd = plan.workspace.empty() ? "/" : plan.workspace;
    if (!plan.started_in.empty()) cwd = plan.started_in;
    if (!policy.cwd.value.empty()) {
        why = detail::describe(policy.cwd.origin);
        auto expanded = detail::expand(policy.cwd.value, ctx, policy.cwd.origin);
        if (!expanded) return std::move(expanded).error();
        cwd = *expanded;
    }
    // CVE-2024-21626: a cwd through /proc/self/fd/N reaches whatever that fd is,
    // which may be a host directory; refused before anything is cloned. Resolved
    // as the sandbox will: /dev/fd links to /proc/self/fd, and a link in the
    // workspace may point anywhere.
    auto resolved = detail::resolve_inside(plan.mounts, cwd, *ctx.view);
    if (!resolved) return invalid(why, "cwd " + cwd + ": too many levels of symbolic links", ELOOP);
    for (const std::string& p : {cwd, *resolved}) {
        if (util::path_within(p, "/proc"))
            return invalid(why, "cwd " + cwd + (p == cwd ? "" : " (" + p + ")") +
                                    " is under /proc: refused (a cwd through /proc can reach "
                                    "host files, CVE-2024-21626)");
    }
    if (*resolved == "/") return cwd;
    auto top = detail::covering_op(plan.mounts, *resolved);
    if (!top) return invalid(why, "cwd " + cwd + " is outside every mount of the sandbox", ENOENT);
    const MountOp& op = plan.mounts[*top];
    if (op.kind == MountKind::mask_dir || op.kind == MountKind::mask_file)
        return invalid(why, "cwd " + cwd + " is hidden (" + op.why + ")", EACCES);
    if (op.kind == MountKind::bind) {
        auto host = detail::host_path(plan.mounts, *resolved);
        if (!host || !ctx.view->is_dir(*host))
            return invalid(why, "cwd " + cwd + " is not a directory in the sandbox", ENOENT);
    } else if (op.kind == MountKind::tmpfs && op.dst != *resolved) {
        // An empty tmpfs holds only the mount points the launcher creates in it.
        bool mount_point = false;
        for (const auto& m : plan.mounts)
            mount_point = mount_point || (m.dst != op.dst && util::path_within(m.dst, *resolved));
        if (!mount_point)
            return invalid(
                why,
                "cwd " + cwd + " does not exist in the sandbox (" + op.dst + " is an empty tmpfs)",
                ENOENT);
    } else if (op.kind != MountKind::tmpfs && op.dst != *resolved) {
        return invalid(why, "cwd " + cwd + " is not a directory in the sandbox", ENOENT);
    }
    return cwd;
}

}  // namespace

Result<Plan> build(const policy::Policy& policy, const std::vector<std::string>& argv,
                   const HostFacts& host) {
    Plan plan;
    plan.policy_name = policy.name;
    plan.layers = policy.layers;
    plan.policy_chosen_by = policy.chosen_by;
    if (argv.empty())
        return Error(ErrorKind::invalid_input, EINVAL,
                     "no command given (usage: agentjail [OPTIONS] -- COMMAND [ARGS...])");

    // What the run's host actions make, seen as made: the planner itself makes nothing
    // and reads the host only through this view.
    HostView view;
    detail::ExpandContext ctx;
    ctx.view = &view;
    ctx.home = host.home;
    ctx.tmp = "/tmp";
    if (auto t = detail::env_lookup(host.environ, "TMPDIR")) {
        std::string norm = util::normalize_path(*t);
        if (!norm.empty()) ctx.tmp = norm;
    }

    if (policy.workspace.value != policy::WorkspaceAccess::none) {
        auto ws = decide_workspace(policy, host, ctx);
        if (!ws) return std::move(ws).error();
        if (!policy.workspace_path) {
            if (auto top = repository_top(*ws, host, view); !top.empty()) {
                plan.started_in = *ws;
                plan.notes.push_back("workspace: " + top + ", the top of the git repository " + *ws +
                                     " lies in; the command starts in " + *ws + " (-C . makes that "
                                     "directory alone the workspace)");
                ws = top;
            }
        }
        ctx.workspace = *ws;
        plan.workspace = *ws;
    }
    if (policy.private_home.value && (host.home.empty() || host.home[0] != '/'))
        return invalid(detail::describe(policy.private_home.origin),
                       "a private home needs the home directory, which is unknown (set HOME)");
    plan.home = host.home;
    plan.workspace_mode = policy.workspace_mode.value;

    if (auto r = detail::plan_agent_state(policy, host, ctx, plan); !r) return std::move(r).error();
    // The placeholder key (placeholder.cc), when a secret needs it, before the mounts
    // are planned: hidden whatever binds its directory (`--rw ~/.local`), since it
    // lives only where no sandbox can write, but a later run may show it.
    detail::PlaceholderKey key;
    key.path = detail::placeholder_key_path(host);
    if (policy.network.mode.value == policy::NetMode::proxy && !policy.network.secrets.empty()) {
        key = detail::placeholder_key(host, view, plan);
        if (key.made_by_run) {
            view.will_make(key.path.substr(0, key.path.rfind('/')), true);
            view.will_make(key.path, false);
            plan.notes.push_back("secret placeholders: a run creates the key " + key.path);
        }
    }
    struct stat key_st {};
    const bool hide_key = !key.path.empty() && view.lstat(key.path, key_st) == 0;
    // The kept walks of workspaces: what a sandbox must not rewrite (a forged walk
    // would make the next plan miss a hidden name), hidden like the key.
    plan.kept_scan = detail::kept_scan_place(host, view, plan.workspace);
    const std::string scans_dir = plan.kept_scan.name.empty() ? std::string() : plan.kept_scan.base + "/agentjail/scans";
    const bool hide_scans = !scans_dir.empty() && view.lstat(scans_dir, key_st) == 0;
    // agentjail's configuration (config.toml, your policies, the secrets kept with
    // `agentjail secret set`): hidden whatever policy or flag binds the directory
    // above it, since a sandbox that wrote it would set the next run's defaults.
    std::string config_dir;
    if (auto xdg = detail::env_lookup(host.environ, "XDG_CONFIG_HOME"); xdg && !xdg->empty() && (*xdg)[0] == '/')
        config_dir = util::normalize_path(*xdg + "/agentjail");
    else if (!host.home.empty() && host.home[0] == '/')
        config_dir = util::normalize_path(host.home + "/.config/agentjail");
    const bool hide_config = !config_dir.empty() && view.lstat(config_dir, key_st) == 0;
    auto tools = detail::find_toolchains(policy, host, ctx, argv);
    plan.notes.insert(plan.notes.end(), tools.notes.begin(), tools.notes.end());
    if (!plan.state_dir.empty() || hide_key || hide_scans || hide_config || !tools.ro.empty()) {
        policy::Policy adjusted = policy;
        // The agent's state is read-write inside at its own path; what the preset
        // binds into it (the user's settings, read-only) lies deeper and so on top.
        if (!plan.state_dir.empty())
            adjusted.rw.insert(adjusted.rw.begin(),
                               policy::MountRule{"{state}", "", false, policy.agent.state.origin});
        adjusted.ro.insert(adjusted.ro.end(), tools.ro.begin(), tools.ro.end());
        if (hide_key)
            adjusted.hide.push_back(
                policy::HideRule{key.path, policy::Origin{"built-in", 0, 0, "the secret placeholders' key"}});
        if (hide_scans)
            adjusted.hide.push_back(
                policy::HideRule{scans_dir, policy::Origin{"built-in", 0, 0, "the workspace walks agentjail keeps"}});
        if (hide_config)
            adjusted.hide.push_back(policy::HideRule{
                config_dir, policy::Origin{"built-in", 0, 0, "agentjail's configuration, policies and kept secrets"}});
        if (auto r = detail::build_mounts(adjusted, ctx, plan); !r) return std::move(r).error();
    } else if (auto r = detail::build_mounts(policy, ctx, plan); !r) {
        return std::move(r).error();
    }

    auto cwd = decide_cwd(policy, ctx, plan);
    if (!cwd) return std::move(cwd).error();
    plan.cwd = *cwd;

    if (auto r = detail::build_env(policy, host, plan); !r) return std::move(r).error();
    std::vector<std::string> command = argv;
    if (auto r = detail::plan_agent_exec(policy, plan, command); !r) return std::move(r).error();
    detail::inside_path(policy, ctx, plan);
    if (auto r = detail::build_exec(command, plan); !r) return std::move(r).error();

    if (auto r = detail::build_limits(policy, host, plan); !r) return std::move(r).error();

    // The system-call filter, compiled here so that a bad [seccomp] rule fails before
    // anything is cloned; the child only loads the finished program.
    auto filter = seccomp::compile(policy.seccomp);
    if (!filter) return std::move(filter).error();
    plan.seccomp = std::move(*filter);
    // The second lock on nested user namespaces goes with the filter's: a policy
    // without [seccomp] (minimal) or one that opts into nested sandboxes keeps them.
    plan.allow_nested_userns = !policy.seccomp.present || policy.seccomp.nested.value;
    if (plan.seccomp && !policy.seccomp.log.value.empty()) {
        std::string raw = policy.seccomp.log.value;
        // A relative --seccomp-log FILE means what it means in the caller's shell.
        if (raw[0] != '/' && raw[0] != '~' && raw[0] != '{') raw = host.cwd + "/" + raw;
        auto log = detail::expand(raw, ctx, policy.seccomp.log.origin);
        if (!log) return std::move(log).error();
        plan.seccomp_log = *log;
    } else if (!policy.seccomp.log.value.empty()) {
        plan.notes.push_back("seccomp log " + policy.seccomp.log.value +
                             ": the policy has no [seccomp] section, so no call is filtered or logged");
    }

    for (const auto& s : policy.sockets) {
        auto path = detail::expand(s.path, ctx, s.origin);
        if (!path) return std::move(path).error();
        plan.sockets.push_back(*path);
    }
    if (!plan.seccomp)
        plan.notes.push_back("no [seccomp] section: the socket gate is off, so a Unix socket in a bound "
                             "directory can be connected to (docs/seccomp.md)");
    if (plan.seccomp && plan.seccomp->needs_listener() && host.seccomp_listener_taken) {
        // The kernel allows one listener per chain of filters, and one of the caller's
        // holds it: the same refusals, answered by the kernel (docs/environments.md).
        auto alone = seccomp::compile_without_listener(policy.seccomp);
        if (!alone) return std::move(alone).error();
        plan.seccomp = std::move(*alone);
        plan.seccomp_without_listener =
            "a seccomp filter agentjail was started under holds the one notification listener the kernel "
            "allows (WSL2's init does): refused calls are refused by the kernel and not logged, and every "
            "Unix socket but a connected pair is refused, since no socket gate can check where one connects";
        if (!plan.sockets.empty())
            plan.seccomp_without_listener += " (the allowed sockets too)";
        plan.warnings.push_back(plan.seccomp_without_listener + "; docs/environments.md");
    }

    plan.uid = host.uid;
    plan.gid = host.gid;
    plan.set_ids = host.run_as;
    plan.uid_map = std::to_string(host.uid) + " " + std::to_string(host.uid) + " 1\n";
    plan.gid_map = std::to_string(host.gid) + " " + std::to_string(host.gid) + " 1\n";

    std::uint64_t flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID;
    if (policy.ns_net.value) flags |= CLONE_NEWNET;
    if (policy.ns_ipc.value) flags |= CLONE_NEWIPC;
    if (policy.ns_uts.value) flags |= CLONE_NEWUTS;
    if (policy.ns_cgroup.value) flags |= CLONE_NEWCGROUP;
    plan.clone_flags = flags;
    // Without its own UTS namespace, setting a hostname would rename the host.
    if (policy.ns_uts.value) plan.hostname = policy.hostname.value;
    plan.die_with_parent = policy.die_with_parent.value;
    for (const auto& d : policy.env_deny) plan.env_redact.push_back(d.value);
    // Before the network: the proxy's log takes the same rules.
    for (const auto& m : plan.mounts)
        if (m.kind == MountKind::bind && !m.read_only)
            plan.host_files.sandbox_writable.push_back({m.src, m.why});
    if (auto r = detail::overlay_workspace(policy, plan); !r) return std::move(r).error();
    if (auto r = detail::run_state(host, view, plan); !r) return std::move(r).error();
    plan.host_files.allow_in_sandbox = policy.log_in_sandbox.value;
    plan.host_files.allow_origin = detail::describe(policy.log_in_sandbox.origin);
    if (auto r = detail::build_network(policy, host, ctx, key, plan); !r) return std::move(r).error();
    // Without the proxy the project's .env files still show their keys (placeholders
    // that nothing swaps back); with it build_network made them.
    if (!plan.net) detail::dotenv_views(ctx, key, plan, nullptr);
    if (auto r = detail::serve_workspace(policy, ctx, plan); !r) return std::move(r).error();
    // Last: its rules are the final tree's.
    if (auto r = detail::plan_landlock(policy, host, plan); !r) return std::move(r).error();
    return plan;
}

}  // namespace agentjail::plan
