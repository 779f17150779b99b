// SPDX-License-Identifier: Apache-2.0
// The Plan as text and as JSON, for `agentjail explain`: the same facts launch
// will act on, with secret-looking environment values shown as <set>.
#include "plan/internal.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace agentjail::plan {

namespace {

// Shown as <set> even when the policy forgot to deny them: explain output ends
// up in bug reports and terminals that are recorded.
constexpr const char* kSecretPatterns[] = {
    "*_KEY",      "*_KEYS",   "*KEY_*",       "*APIKEY*",     "*TOKEN*",       "*SECRET*",
    "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*", "*_PAT",         "*_AUTH",
    "*AUTH_*",    "*COOKIE*", "*PRIVATE*",    "*SESSION*",    "SSH_AUTH_SOCK", "*_DSN",
};

// Case-insensitive, like the deny list itself: github_token is as secret as GITHUB_TOKEN.
bool is_secret(const Plan& plan, const std::string& name) {
    for (const char* p : kSecretPatterns)
        if (util::glob_match_icase(p, name)) return true;
    return std::any_of(plan.env_redact.begin(), plan.env_redact.end(),
                       [&](const std::string& p) { return util::glob_match_icase(p, name); });
}

std::pair<std::string, std::string> split_env(const std::string& kv) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) return {kv, ""};
    return {kv.substr(0, eq), kv.substr(eq + 1)};
}

std::string shown_value(const Plan& plan, const std::string& kv) {
    auto [name, value] = split_env(kv);
    return is_secret(plan, name) ? std::string("<set>") : value;
}

const char* action_name(const HostAction& a) {
    switch (a.kind) {
    case HostAction::Kind::state_dir: return "state_dir";
    case HostAction::Kind::mount_point: return "mount_point";
    case HostAction::Kind::file: return "file";
    case HostAction::Kind::placeholder_key: return "placeholder_key";
    }
    return "?";
}

// One line of what a run makes on the host first; a file's text (and the key's
// bytes) are never shown.
std::string action_line(const HostAction& a) {
    std::string what;
    switch (a.kind) {
    case HostAction::Kind::state_dir: what = "dir   "; break;
    case HostAction::Kind::mount_point: what = a.is_dir ? "dir   " : "empty "; break;
    case HostAction::Kind::file: what = "file  "; break;
    case HostAction::Kind::placeholder_key: what = "key   "; break;
    }
    return "  " + what + a.path + (a.why.empty() ? "" : "  (" + a.why + ")");
}

std::vector<std::string> namespace_names(std::uint64_t flags) {
    std::vector<std::string> out;
    const std::pair<std::uint64_t, const char*> all[] = {
        {CLONE_NEWUSER, "user"},     {CLONE_NEWNS, "mount"}, {CLONE_NEWPID, "pid"},
        {CLONE_NEWNET, "net"},       {CLONE_NEWIPC, "ipc"},  {CLONE_NEWUTS, "uts"},
        {CLONE_NEWCGROUP, "cgroup"},
    };
    for (const auto& [flag, name] : all)
        if ((flags & flag) != 0) out.emplace_back(name);
    return out;
}

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-+./:=@%,") == std::string::npos)
        return s;
    std::string out = "'";
    for (char c : s) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    return out + "'";
}

std::string human_size(std::uint64_t n) {
    const std::pair<std::uint64_t, const char*> units[] = {
        {1ull << 30, "G"}, {1ull << 20, "M"}, {1ull << 10, "k"}};
    for (const auto& [unit, suffix] : units)
        if (n >= unit && n % unit == 0) return std::to_string(n / unit) + suffix;
    return std::to_string(n);
}

// The first candidate that the sandbox will show as an executable file: looked
// up on the host through the bind that shows it.
std::optional<std::string> resolved_command(const Plan& plan) {
    for (const auto& c : plan.exec_candidates) {
        const HostView host_view;
        auto inside = detail::resolve_inside(plan.mounts, c, host_view);
        if (!inside) continue;
        auto host = detail::host_path(plan.mounts, *inside);
        if (!host) continue;
        if (host_view.executable_file(*host)) return c;
    }
    return std::nullopt;
}

std::string mount_line(const MountOp& op) {
    std::string access = op.read_only ? "ro" : "rw";
    std::string kind = detail::kind_name(op.kind);
    std::string detail;
    switch (op.kind) {
    case MountKind::bind: detail = "<- " + op.src; break;
    case MountKind::view:
        detail = "<- " + op.src + " (served by agentjail: " + std::to_string(op.view_rules->hide.size()) +
                 " hide and " + std::to_string(op.view_rules->protect.size()) + " protect patterns judged per name)";
        break;
    case MountKind::overlay:
        detail = "<- " + op.src + " (lower; writes go to " +
                 (op.upper.empty() ? std::string("the run's upper layer") : op.upper) + ")";
        break;
    case MountKind::symlink:
        access = "";
        detail = "-> " + op.src;
        break;
    case MountKind::tmpfs:
        detail = fmt::format("size={} mode={:04o}", human_size(op.size_bytes), op.mode);
        break;
    case MountKind::mask_dir:
        access = "mask";
        kind = "dir";
        break;
    case MountKind::mask_file:
        access = op.text.empty() ? "mask" : "view";
        kind = "file";
        if (!op.text.empty()) detail = "(its keys, each value a placeholder)";
        break;
    case MountKind::proc:
    case MountKind::devpts:
    case MountKind::readonly: break;
    }
    std::string line = fmt::format("  {:<4} {:<8} {:<28} {:<24}", access, kind, op.dst, detail);
    if (!op.why.empty()) line += " " + op.why;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
}

// What the workspace rules did: every hidden or protected name in a bound host
// directory (with the rule that matched it), the placeholders to be made, the
// hard-link names added, and how many directories are locked against renaming.
std::string workspace_text(const Plan& plan) {
    if (plan.workspace.empty()) return {};
    std::string out = std::string("\nworkspace rules (") + policy::workspace_mode_name(plan.workspace_mode) + " mode):\n";
    if (plan.guards.empty() && plan.view_guards.empty())
        out += "  (nothing hidden or protected in a bound directory)\n";
    if (!plan.view_guards.empty())
        out += "  below the workspace, judged by the view at each lookup (these were found at start; a name\n"
               "  the host makes during the run is judged by the same patterns):\n";
    // view: judged by the view, which makes no placeholder for an absent name.
    auto guard_line = [&](const Guard& g, bool view) {
        const bool made = g.placeholder && !view;
        std::string what = g.kind == Guard::Kind::hidden ? "hidden" : made ? "placeholder" : "protected";
        std::string line = fmt::format("  {:<12} {}{}", what, g.inside, g.is_dir ? "/" : "");
        if (g.placeholder && view)
            line += " (absent: cannot be made inside)";
        else if (made)
            line += g.is_dir    ? " (empty directory made for the run)"
                    : g.socket ? " (socket file with no listener made for the run)"
                               : " (empty file made for the run)";
        if (g.host != g.inside) line += " <- " + g.host;
        line += "  " + g.pattern;
        if (!g.link_of.empty()) line += ", hard link of " + g.link_of;
        out += line + "\n";
    };
    for (const auto& g : plan.view_guards) guard_line(g, true);
    for (const auto& g : plan.guards) guard_line(g, false);
    int locks = 0;
    for (const auto& op : plan.mounts)
        if (op.kind == MountKind::bind && !op.read_only && op.src == op.dst && op.dst != plan.workspace &&
            util::path_within(op.dst, plan.workspace))
            ++locks;
    if (locks > 0)
        out += fmt::format("  rename-locked: {} director{} above these names (read-write binds over themselves)\n",
                           locks, locks == 1 ? "y" : "ies");
    return out;
}

}  // namespace

std::string to_text(const Plan& plan) {
    std::string out;
    auto row = [&out](const char* key, const std::string& value) {
        out += fmt::format("{:<11}{}\n", key, value);
    };
    std::string layers;
    for (const auto& l : plan.layers) layers += (layers.empty() ? "" : " -> ") + l;
    row("policy", plan.policy_name + (layers.empty() ? "" : "  (layers: " + layers + ")"));
    if (!plan.policy_chosen_by.empty())
        row("", "chosen by " + plan.policy_chosen_by +
                    (util::starts_with(plan.policy_chosen_by, "the command's name")
                         ? " (--policy default turns the agent preset off)"
                         : " (--policy NAME chooses another)"));
    if (!plan.agent.empty()) row("agent", plan.agent);
    if (!plan.state_dir.empty()) row("state", plan.state_dir + "  (kept between runs, read-write inside)");
    if (!plan.git_identity.empty()) row("git", plan.git_identity + "  (user.name and user.email only)");

    std::string cmd;
    for (const auto& a : plan.argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
    row("command", cmd);
    if (auto found = resolved_command(plan)) {
        row("resolves", *found);
    } else {
        std::string tried;
        for (const auto& c : plan.exec_candidates) tried += (tried.empty() ? "" : ", ") + c;
        row("resolves", "(not found in the sandbox; tried " + tried + ")");
    }

    std::string ns;
    for (const auto& n : namespace_names(plan.clone_flags)) ns += (ns.empty() ? "" : " ") + n;
    row("namespaces", ns);
    auto map_text = [](std::string m) {
        while (!m.empty() && m.back() == '\n') m.pop_back();
        return m;
    };
    row("uid_map", map_text(plan.uid_map));
    row("gid_map", map_text(plan.gid_map));
    row("workspace", plan.workspace.empty() ? "(none)" : plan.workspace);
    row("home", plan.home);
    row("cwd", plan.cwd);
    row("hostname", plan.hostname.empty() ? "(the host's: no uts namespace)" : plan.hostname);
    row("lifetime", plan.die_with_parent ? "dies with agentjail" : "may outlive agentjail");
    row("limits", detail::limits_summary(plan));

    if (!plan.host_actions.empty()) {
        out += "\nmade on the host before the sandbox:\n";
        for (const auto& a : plan.host_actions) out += action_line(a) + "\n";
    }

    out += "\nmounts (in order):\n";
    for (const auto& op : plan.mounts) out += mount_line(op) + "\n";

    out += "\nenvironment:\n";
    for (const auto& kv : plan.env)
        out += "  " + split_env(kv).first + "=" + shown_value(plan, kv) + "\n";

    if (plan.seccomp) {
        out += "\nsystem calls (seccomp):\n" + plan.seccomp->to_text();
        if (!plan.seccomp_log.empty()) out += "  log        " + plan.seccomp_log + "\n";
        out += "  sockets    Unix sockets reachable: those listening inside";
        for (const auto& s : plan.sockets) out += ", " + s;
        out += "\n";
    } else {
        out += "\nsystem calls (seccomp): no filter (the policy has no [seccomp] section)\n";
    }

    out += detail::landlock_text(plan);
    out += workspace_text(plan);
    out += detail::network_text(plan);

    if (!plan.notes.empty()) {
        out += "\nnotes:\n";
        for (const auto& n : plan.notes) out += "  " + n + "\n";
    }
    if (!plan.warnings.empty()) {
        out += "\nwarnings:\n";
        for (const auto& w : plan.warnings) out += "  " + w + "\n";
    }
    return out;
}

std::string to_json(const Plan& plan) {
    using json = nlohmann::ordered_json;
    json j;
    j["policy"] = plan.policy_name;
    j["layers"] = plan.layers;
    if (!plan.policy_chosen_by.empty()) j["policy_chosen_by"] = plan.policy_chosen_by;
    if (!plan.agent.empty() || !plan.state_dir.empty())
        j["agent"] = {{"name", plan.agent}, {"state_dir", plan.state_dir}, {"git_identity", plan.git_identity}};
    if (!plan.host_actions.empty()) {
        json actions = json::array();
        for (const auto& a : plan.host_actions) {
            json o = {{"kind", action_name(a)}, {"path", a.path}};
            if (a.kind == HostAction::Kind::mount_point) o["is_dir"] = a.is_dir;
            o["why"] = a.why;
            actions.push_back(std::move(o));
        }
        j["host_actions"] = std::move(actions);
    }
    j["argv"] = plan.argv;
    j["exec_candidates"] = plan.exec_candidates;
    json env = json::object();
    for (const auto& kv : plan.env) env[split_env(kv).first] = shown_value(plan, kv);
    j["env"] = std::move(env);
    j["uid"] = plan.uid;
    j["gid"] = plan.gid;
    j["uid_map"] = plan.uid_map;
    j["gid_map"] = plan.gid_map;
    j["namespaces"] = namespace_names(plan.clone_flags);
    j["hostname"] = plan.hostname;
    j["workspace"] = plan.workspace;
    j["home"] = plan.home;
    j["cwd"] = plan.cwd;
    j["die_with_parent"] = plan.die_with_parent;
    {
        const auto& l = plan.limits;
        auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
        j["limits"] = {{"memory_bytes", opt(l.memory_bytes)}, {"swap_bytes", opt(l.swap_bytes)},
                       {"cpus", opt(l.cpus)},                 {"pids", opt(l.pids)},
                       {"timeout_s", opt(l.timeout_s)},       {"kill_grace_s", l.kill_grace_s},
                       {"cpu_time_s", opt(l.cpu_time_s)},     {"nofile", opt(l.nofile)},
                       {"fsize_bytes", opt(l.fsize_bytes)},   {"allow_degraded", l.allow_degraded}};
        json rl = json::array();
        for (const auto& r : plan.rlimits)
            rl.push_back({{"resource", detail::rlimit_name(r.resource)}, {"soft", r.soft}, {"hard", r.hard}, {"why", r.why}});
        j["rlimits"] = std::move(rl);
    }
    {
        const auto& l = plan.landlock;
        json rules = json::array();
        for (const auto& r : l.rules)
            rules.push_back({{"path", r.path}, {"access", detail::landlock_rights(r.access)}, {"why", r.why}});
        j["landlock"] = {{"mode", policy::landlock_mode_name(l.mode)},
                         {"origin", l.origin},
                         {"abi", l.abi},
                         {"applied", l.apply},
                         {"missing", l.missing.empty() ? json(nullptr) : json(l.missing)},
                         {"rules", std::move(rules)},
                         {"probe", l.probe_path.empty() ? json(nullptr) : json(l.probe_path)}};
    }
    json mounts = json::array();
    for (const auto& op : plan.mounts) {
        json m;
        m["kind"] = detail::kind_name(op.kind);
        m["src"] = op.src;
        m["dst"] = op.dst;
        m["read_only"] = op.read_only;
        m["is_dir"] = op.is_dir;
        m["size_bytes"] = op.size_bytes;
        m["mode"] = op.mode;
        m["why"] = op.why;
        if (op.placeholder) m["placeholder"] = true;
        // A .env's view: what the file shows inside (keys and placeholders only).
        if (!op.text.empty()) m["text"] = op.text;
        if (op.kind == MountKind::overlay) {
            m["upper"] = op.upper;
            m["work"] = op.work;
        }
        mounts.push_back(std::move(m));
    }
    j["mounts"] = std::move(mounts);
    j["workspace_mode"] = policy::workspace_mode_name(plan.workspace_mode);
    // Clone and overlay modes: the run's id and state directory. `explain` shows the
    // id this plan took; every run takes a fresh one.
    j["run_id"] = plan.run_id.empty() ? json(nullptr) : json(plan.run_id);
    j["run_dir"] = plan.run_dir.empty() ? json(nullptr) : json(plan.run_dir);
    json guards = json::array();
    auto guard_json = [&](const Guard& g, bool view) {
        json o;
        o["kind"] = g.kind == Guard::Kind::hidden ? "hidden" : "protected";
        // Judged by the view at each lookup: nothing is watched or made for it.
        o["by_view"] = view;
        o["host"] = g.host;
        o["inside"] = g.inside;
        o["is_dir"] = g.is_dir;
        o["dev"] = static_cast<std::uint64_t>(g.dev);
        o["ino"] = static_cast<std::uint64_t>(g.ino);
        o["placeholder"] = g.placeholder && !view;
        if (g.placeholder && !view && !g.is_dir) o["placeholder_socket"] = g.socket;
        o["pattern"] = g.pattern;
        o["why"] = g.why;
        if (!g.link_of.empty()) o["hard_link_of"] = g.link_of;
        guards.push_back(std::move(o));
    };
    for (const auto& g : plan.guards) guard_json(g, false);
    for (const auto& g : plan.view_guards) guard_json(g, true);
    j["guards"] = std::move(guards);
    if (plan.seccomp) {
        // The program's own JSON, embedded; a parse failure (a bug) leaves null.
        j["seccomp"] = json::parse(seccomp::to_json(*plan.seccomp), nullptr, false);
        if (j["seccomp"].is_discarded()) j["seccomp"] = nullptr;
        if (!plan.seccomp_log.empty()) j["seccomp"]["log"] = plan.seccomp_log;
        j["seccomp"]["sockets"] = plan.sockets;
    } else {
        j["seccomp"] = nullptr;
    }
    j["network"] = json::parse(detail::network_json(plan), nullptr, false);
    j["notes"] = plan.notes;
    j["warnings"] = plan.warnings;
    // Paths and values need not be UTF-8: replace bad bytes instead of throwing
    // (no exception leaves the library).
    return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace agentjail::plan
