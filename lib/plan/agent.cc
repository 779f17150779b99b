// SPDX-License-Identifier: Apache-2.0
// [agent] in the plan (docs/agents.md): the agent's persistent state directory,
// the mount points of what is bound into it, the git identity and the agent's own
// arguments. The state directory is agentjail's, under $XDG_STATE_HOME/agentjail/,
// and the sandbox writes it: everything in it is treated as planted. The plan only
// lists what a run makes there (HostAction); lib/run makes it, every name opened
// relative to its parent without following a link, a link or a wrong kind of file
// found there replaced.
#include "plan/internal.hpp"

#include "util/strings.hpp"
#include "sys/state_dir.hpp"

#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <cstdio>
#include <sstream>

namespace agentjail::plan::detail {

namespace {

// The part of a rule's path below "{state}/", or nullopt when it is not there.
std::optional<std::string> below_state(const std::string& raw) {
    const std::string prefix = "{state}/";
    if (!util::starts_with(raw, prefix)) return std::nullopt;
    std::string rel = util::normalize_path("/" + raw.substr(prefix.size()));
    if (rel.size() <= 1) return std::nullopt;
    return rel.substr(1);
}

// A git config value as git reads it back: quoted, with \ and " escaped.
std::string git_quote(const std::string& v) {
    std::string out = "\"";
    for (char c : v) {
        if (c == '\\' || c == '"') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string trim(std::string s) {
    size_t b = s.find_first_not_of(" \t\r");
    size_t e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// user.name and user.email from one git config file's [user] section: the common
// layout only (no include, no continuation lines); a later file's value wins.
void read_identity(const HostView& view, const std::string& file, std::string& name, std::string& email) {
    auto text = view.read_text(file);
    if (!text) return;
    std::istringstream in(*text);
    std::string line;
    bool in_user = false;
    while (std::getline(in, line)) {
        line = trim(line);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line[0] == '[') {
            auto close = line.find(']');
            std::string section = trim(line.substr(1, close == std::string::npos ? std::string::npos : close - 1));
            for (auto& c : section) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            in_user = section == "user";
            continue;
        }
        if (!in_user) continue;
        auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        std::string key = trim(line.substr(0, eq));
        for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = trim(line.substr(eq + 1));
        // A trailing comment outside quotes, then the quotes themselves.
        std::string out;
        bool quoted = false;
        for (size_t i = 0; i < value.size(); ++i) {
            char c = value[i];
            if (c == '"') {
                quoted = !quoted;
            } else if (c == '\\' && i + 1 < value.size()) {
                out += value[++i];
            } else if ((c == '#' || c == ';') && !quoted) {
                break;
            } else {
                out += c;
            }
        }
        out = trim(out);
        if (key == "name") name = out;
        if (key == "email") email = out;
    }
}

bool printable(const std::string& s) {
    for (unsigned char c : s)
        if (c < 0x20 || c == 0x7f) return false;
    return true;
}

constexpr const char* kGitConfigName = "agentjail-gitconfig";

// Only user.name and user.email: the rest of the user's git config (credential
// helpers, url rewrites with tokens, aliases that run programs, signing keys) stays
// outside. Written as the sandbox's global config file, in the state directory,
// rather than as GIT_AUTHOR_* variables, so a repository's own identity still wins.
void git_identity(const HostFacts& host, const HostView& view, Plan& plan) {
    std::string name, email;
    std::string xdg = env_lookup(host.environ, "XDG_CONFIG_HOME").value_or("");
    if (xdg.empty() || xdg[0] != '/') xdg = host.home + "/.config";
    read_identity(view, xdg + "/git/config", name, email);
    read_identity(view, host.home + "/.gitconfig", name, email);
    if (!printable(name)) name.clear();
    if (!printable(email)) email.clear();
    if (name.empty() && email.empty()) {
        plan.notes.push_back(
            "git identity: no user.name or user.email in ~/.gitconfig or ~/.config/git/config; commits "
            "inside need them (git config --global user.name ..., or -e GIT_AUTHOR_NAME=...)");
        return;
    }
    std::string text = "# Written by agentjail for each run: only the caller's git identity.\n[user]\n";
    if (!name.empty()) text += "\tname = " + git_quote(name) + "\n";
    if (!email.empty()) text += "\temail = " + git_quote(email) + "\n";
    plan.git_identity = name + (email.empty() ? "" : " <" + email + ">");
    HostAction a;
    a.kind = HostAction::Kind::file;
    a.path = plan.state_dir + "/" + kGitConfigName;
    a.text = std::move(text);
    a.why = "the git identity given to the agent (" + plan.git_identity + ")";
    plan.host_actions.push_back(std::move(a));
    plan.notes.push_back("git identity: a run writes it to " + plan.state_dir + "/" + kGitConfigName);
}

}  // namespace

std::string project_key(const std::string& workspace) {
    if (workspace.empty()) return "no-workspace";
    // The project's name, readable in a listing, then a digest of its whole path: two
    // projects of one name are two states.
    std::string shown;
    for (char c : util::base_name(workspace)) {
        if (shown.size() == 32) break;
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                           c == '-' || c == '_' || (c == '.' && !shown.empty());
        shown += plain ? c : '_';
    }
    if (shown.empty()) shown = "root";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(workspace.data(), workspace.size(), md, &len, EVP_sha256(), nullptr) != 1) len = 0;
    return shown + "-" + util::hex(md, std::min(len, 6u));
}

Result<void> plan_agent_state(const policy::Policy& policy, const HostFacts& host, ExpandContext& ctx, Plan& plan) {
    plan.agent = policy.agent.name.value;
    if (policy.agent.state.value.empty()) {
        if (policy.agent.git_identity.value)
            plan.notes.push_back("git identity: the policy has no [agent] state to keep it in; none given");
        return {};
    }
    // Made by root in another user's home, the directory and its files would be
    // root's (and root would be writing where that user can plant links).
    if (host.run_as)
        return Error(ErrorKind::invalid_input, EINVAL,
                     with_origin(describe(policy.agent.state.origin),
                                 "an agent's state directory is not made for a run as another uid (" +
                                     std::to_string(host.uid) + "); use a policy without [agent] state"));
    if (host.home.empty() || host.home[0] != '/')
        return Error(ErrorKind::invalid_input, EINVAL,
                     with_origin(describe(policy.agent.state.origin),
                                 "the agent's state directory needs the home directory, which is unknown (set HOME "
                                 "or XDG_STATE_HOME)"));
    const std::string base = sys::state_home(host.environ, host.home);
    const std::string name = policy.agent.state.value;
    // One state per agent and project: what a run writes there (a hook in the agent's
    // settings, an MCP server) is seen by that project's next runs, never by another
    // project's (issue 25).
    const std::string agent_dir = util::normalize_path(base + "/agentjail/" + name);
    plan.state_dir = agent_dir + "/" + project_key(plan.workspace);
    if (!plan.workspace.empty() &&
        (util::path_within(agent_dir, plan.workspace) || util::path_within(plan.workspace, agent_dir)))
        return Error(ErrorKind::invalid_input, EINVAL,
                     with_origin(describe(policy.agent.state.origin),
                                 "the agent's state directory " + agent_dir + " and the workspace " +
                                     plan.workspace + " overlap; set XDG_STATE_HOME to a directory outside it"));
    ctx.state = plan.state_dir;
    {
        struct stat st {};
        if (ctx.view->lstat(plan.state_dir, st) != 0)
            plan.notes.push_back("agent state: a run creates " + plan.state_dir +
                                 " and binds it read-write at the same path");
    }
    HostAction dir;
    dir.kind = HostAction::Kind::state_dir;
    dir.path = plan.state_dir;
    dir.base = base;
    dir.is_dir = true;
    dir.why = "the agent's state, kept between runs";
    plan.host_actions.push_back(std::move(dir));
    ctx.view->will_make(util::normalize_path(base + "/agentjail"), true);
    ctx.view->will_make(agent_dir, true);
    ctx.view->will_make(plan.state_dir, true);

    // `rel` below the state directory made by the run: each directory on the way,
    // then the name itself (a directory or an empty file), seen as made by the view.
    auto make_below_state = [&](const std::string& rel, bool is_dir, const std::string& why) {
        std::string path = plan.state_dir;
        for (size_t at = 0; at < rel.size();) {
            size_t slash = rel.find('/', at);
            if (slash == std::string::npos) slash = rel.size();
            path += "/" + rel.substr(at, slash - at);
            at = slash + 1;
            ctx.view->will_make(path, at > rel.size() ? is_dir : true);
        }
        HostAction mp;
        mp.kind = HostAction::Kind::mount_point;
        mp.path = path;
        mp.is_dir = is_dir;
        mp.why = why;
        plan.host_actions.push_back(std::move(mp));
    };
    // Binds aimed into the state directory (the user's own settings, read-only
    // inside) need their mount points there; a hidden name there (a credentials
    // file the agent would write) is made empty so the mask covers it before the
    // agent can create it.
    auto prepare = [&](const std::string& raw_dst, const std::string& raw_src, const policy::Origin& origin,
                       bool hide) -> Result<void> {
        auto rel = below_state(raw_dst);
        if (!rel) return {};
        bool is_dir = false;
        if (!hide) {
            auto src = expand(raw_src, ctx, origin);
            if (!src) return std::move(src).error();
            struct stat st {};
            if (ctx.view->stat(*src, st) != 0) return {};  // missing: build_mounts skips or refuses it
            is_dir = S_ISDIR(st.st_mode);
        } else if (rel->find_first_of("*?[") != std::string::npos) {
            return {};
        }
        make_below_state(*rel, is_dir, describe(origin));
        return {};
    };
    for (const auto* rules : {&policy.ro, &policy.rw})
        for (const auto& m : *rules)
            if (auto r = prepare(m.dst.empty() ? m.src : m.dst, m.src, m.origin, false); !r) return r;
    // A directory of the state bound read-write elsewhere (a package manager's cache
    // kept for this agent and project, {state}/cache/npm at ~/.npm) is made when
    // missing, like a mount point.
    for (const auto& m : policy.rw) {
        auto rel = below_state(m.src);
        if (rel && !m.dst.empty() && !below_state(m.dst)) make_below_state(*rel, true, describe(m.origin));
    }
    for (const auto& h : policy.hide)
        if (auto r = prepare(h.pattern, h.pattern, h.origin, true); !r) return r;
    if (policy.agent.git_identity.value) git_identity(host, *ctx.view, plan);
    return {};
}

Result<void> plan_agent_exec(const policy::Policy& policy, Plan& plan,
                             std::vector<std::string>& argv) {
    for (const auto& n : policy.agent.notes) plan.notes.push_back(n.value);
    for (const auto& n : policy.network.notes) plan.notes.push_back(n);

    if (!plan.git_identity.empty() &&
        std::none_of(plan.env.begin(), plan.env.end(),
                     [](const std::string& kv) { return util::starts_with(kv, "GIT_CONFIG_GLOBAL="); })) {
        plan.env.push_back("GIT_CONFIG_GLOBAL=" + plan.state_dir + "/" + kGitConfigName);
        std::sort(plan.env.begin(), plan.env.end());
    }

    if (!policy.agent.args.empty() && !argv.empty()) {
        std::string_view base = util::base_name(argv[0]);
        bool ours = std::any_of(policy.agent.commands.begin(), policy.agent.commands.end(),
                                [&](const auto& c) { return c.value == base; });
        if (ours) {
            std::vector<std::string> out{argv[0]};
            for (const auto& a : policy.agent.args) out.push_back(a.value);
            out.insert(out.end(), argv.begin() + 1, argv.end());
            argv = std::move(out);
        }
    }
    return {};
}

}  // namespace agentjail::plan::detail
