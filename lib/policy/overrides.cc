// SPDX-License-Identifier: Apache-2.0
// Overrides: the changes CLI flags and the APIs make to a loaded Policy, and
// the env-file reader behind --env-file. validate() checks their values.
#include "policy/internal.hpp"
#include "util/strings.hpp"

namespace agentjail::policy {

void add_ro(Policy& p, std::string src, std::string dst, Origin origin) {
    p.ro.push_back({std::move(src), std::move(dst), false, std::move(origin)});
}

void add_rw(Policy& p, std::string src, std::string dst, Origin origin) {
    p.rw.push_back({std::move(src), std::move(dst), false, std::move(origin)});
}

void add_socket(Policy& p, std::string path, Origin origin) {
    p.sockets.push_back({std::move(path), std::move(origin)});
}

void add_hide(Policy& p, std::string pattern, Origin origin) {
    p.hide.push_back({std::move(pattern), std::move(origin)});
}

void set_workspace(Policy& p, std::string dir, Origin origin) {
    p.workspace_path = Located<std::string>{std::move(dir), std::move(origin)};
    // Named by the caller: the only way a workspace may be / or the home directory
    // (the hidden paths stay hidden all the same).
    p.workspace_explicit = true;
}

void set_commit_uncommitted(Policy& p, bool commit, Origin origin) {
    p.workspace_commit_uncommitted = Located<bool>{commit, std::move(origin)};
}

void set_hostname(Policy& p, std::string name, Origin origin) {
    p.hostname = Located<std::string>{std::move(name), std::move(origin)};
}

void set_cwd(Policy& p, std::string dir, Origin origin) { p.cwd = Located<std::string>{std::move(dir), std::move(origin)}; }

void set_net_log(Policy& p, std::string path, Origin origin) {
    p.network.log = Located<std::string>{std::move(path), std::move(origin)};
}

void set_seccomp_log(Policy& p, std::string path, Origin origin) {
    p.seccomp.log = Located<std::string>{std::move(path), std::move(origin)};
}

Result<void> set_workspace_mode(Policy& p, const std::string& mode, Origin origin) {
    WorkspaceMode m;
    if (mode == "direct")
        m = WorkspaceMode::direct;
    else if (mode == "clone")
        m = WorkspaceMode::clone;
    else if (mode == "overlay")
        m = WorkspaceMode::overlay;
    else
        return detail::error_at(origin, "expected \"direct\", \"clone\" or \"overlay\", got \"" +
                                            mode + "\"");
    p.workspace_mode = Located<WorkspaceMode>{m, std::move(origin)};
    return {};
}

const char* workspace_mode_name(WorkspaceMode m) {
    switch (m) {
        case WorkspaceMode::direct: return "direct";
        case WorkspaceMode::clone: return "clone";
        case WorkspaceMode::overlay: return "overlay";
    }
    return "direct";
}

Result<void> set_workspace_view(Policy& p, const std::string& view, Origin origin) {
    for (const auto v : {WorkspaceView::mounts, WorkspaceView::fuse}) {
        if (view != workspace_view_name(v)) continue;
        p.workspace_view = Located<WorkspaceView>{v, std::move(origin)};
        return {};
    }
    return detail::error_at(origin, "expected \"mounts\" or \"fuse\", got \"" + view + "\"");
}

const char* workspace_view_name(WorkspaceView v) { return v == WorkspaceView::fuse ? "fuse" : "mounts"; }

Result<void> set_landlock_mode(Policy& p, const std::string& mode, Origin origin) {
    for (const auto m : {LandlockMode::best_effort, LandlockMode::required, LandlockMode::off}) {
        if (mode != landlock_mode_name(m)) continue;
        p.landlock = Located<LandlockMode>{m, std::move(origin)};
        return {};
    }
    return detail::error_at(origin, "expected \"best-effort\", \"required\" or \"off\", got \"" + mode + "\"");
}

const char* landlock_mode_name(LandlockMode m) {
    switch (m) {
        case LandlockMode::best_effort: return "best-effort";
        case LandlockMode::required: return "required";
        case LandlockMode::off: return "off";
    }
    return "best-effort";
}

Result<void> add_protect(Policy& p, const std::string& pattern, Origin origin) {
    std::string problem = detail::check_protect_pattern(pattern);
    if (!problem.empty()) return detail::error_at(origin, problem);
    p.protect.push_back({pattern, std::move(origin)});
    return {};
}

Result<void> remove_protect(Policy& p, const std::string& pattern, Origin origin) {
    std::string problem = detail::check_protect_pattern(pattern);
    if (!problem.empty()) return detail::error_at(origin, problem);
    ProtectRule u{pattern, std::move(origin)};
    u.matched = std::erase_if(p.protect, [&](const ProtectRule& r) { return r.pattern == pattern; }) != 0;
    if (!u.matched)
        return detail::error_at(u.origin, "'" + pattern +
                                              "' is not a protected path of this policy "
                                              "(explain lists them)");
    p.unprotect.push_back(std::move(u));
    return {};
}

void add_tmpfs(Policy& p, std::string path, std::uint64_t size, Origin origin) {
    // `--tmpfs /tmp:1G` on a policy that already has /tmp resizes it: the flag
    // is the only way to change a size a base layer chose. (Two tmpfs on one
    // path inside policy files are an error in validate().)
    std::string key = util::normalize_path(path);
    for (auto& t : p.tmpfs) {
        if (t.path == path || (!key.empty() && util::normalize_path(t.path) == key)) {
            t.size_bytes = size;
            t.origin = std::move(origin);
            return;
        }
    }
    p.tmpfs.push_back({std::move(path), size, std::move(origin)});
}

void set_env(Policy& p, std::string name, std::string value, Origin origin) {
    for (auto& e : p.env_set) {
        if (e.name == name) {
            e.value = std::move(value);
            e.origin = std::move(origin);
            return;
        }
    }
    p.env_set.push_back({std::move(name), std::move(value), std::move(origin)});
}

void pass_env(Policy& p, std::string name, Origin origin) {
    // An exact name in the allowlist beats every deny pattern: `-e GITHUB_TOKEN`
    // is the user saying, by name, that this secret may pass.
    p.env_allow.push_back({std::move(name), std::move(origin)});
}

Result<void> load_env_file(Policy& p, const std::string& path) {
    auto r = detail::read_small_file(path);
    if (r.err != 0)
        return Error{ErrorKind::invalid_input, r.err, "cannot read env file '" + path + "': " + r.why};

    // Collected first and applied at the end, so a bad line leaves p unchanged.
    std::vector<EnvSet> vars;
    size_t pos = 0;
    int line_no = 0;
    while (pos < r.text.size()) {
        size_t nl = r.text.find('\n', pos);
        if (nl == std::string::npos) nl = r.text.size();
        std::string line = r.text.substr(pos, nl - pos);
        pos = nl + 1;
        ++line_no;
        auto fail = [&](const std::string& msg) {
            return Error{ErrorKind::invalid_input, 0,
                         path + ":" + std::to_string(line_no) + ": " + msg};
        };
        if (!line.empty() && line.back() == '\r') line.pop_back();
        size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        line.erase(0, start);
        if (util::starts_with(line, "export ")) line.erase(0, line.find_first_not_of(' ', 7));
        size_t eq = line.find('=');
        if (eq == std::string::npos) return fail("expected NAME=VALUE, got '" + line + "'");
        std::string name = line.substr(0, eq);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
        std::string value = line.substr(eq + 1);
        std::string problem = detail::check_env_name(name);
        if (!problem.empty()) return fail(problem);
        if (value.find('\0') != std::string::npos)
            return fail("a value may not contain a NUL character");
        // Matching outer quotes are dropped, as shells and dotenv files write them;
        // nothing inside is interpreted (no escapes, no $expansion).
        if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
            value.back() == value.front())
            value = value.substr(1, value.size() - 2);
        vars.push_back({std::move(name), std::move(value), Origin{path, line_no, 1, {}}});
        vars.back().origin.key = vars.back().name;
    }
    for (auto& v : vars) set_env(p, std::move(v.name), std::move(v.value), std::move(v.origin));
    return {};
}

}  // namespace agentjail::policy
