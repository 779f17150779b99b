// SPDX-License-Identifier: Apache-2.0
// validate(): the checks that need the whole merged policy (duplicates, fields
// that depend on each other) and the re-check of values that overrides added.
#include "policy/internal.hpp"
#include "util/strings.hpp"

namespace agentjail::policy {
namespace {

bool has_root(std::string_view s, std::string_view root) {
    return s.substr(0, root.size()) == root && (s.size() == root.size() || s[root.size()] == '/');
}

// Spellings of one path compare equal: "/tmp/", "/tmp//" and "/tmp" are one mount point.
std::string path_key(const std::string& path) {
    if (!path.empty() && path[0] == '/') return util::normalize_path(path);
    std::string s = path;
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

Result<void> check(const Origin& o, std::string problem) {
    if (problem.empty()) return {};
    return detail::error_at(o, problem);
}

Result<void> check_mounts(const std::vector<MountRule>& rules) {
    for (const auto& r : rules) {
        if (auto ok = check(r.origin, detail::check_path(r.src)); !ok) return ok;
        if (!r.dst.empty())
            if (auto ok = check(r.origin, detail::check_path(r.dst)); !ok) return ok;
    }
    return {};
}

}  // namespace

Result<void> validate(const Policy& p) {
    // The parser checked every value it read, but the overrides (CLI flags, the
    // APIs) add values unchecked, so each value is checked again here.
    if (auto ok = check_mounts(p.ro); !ok) return ok;
    if (auto ok = check_mounts(p.rw); !ok) return ok;

    for (size_t i = 0; i < p.tmpfs.size(); ++i) {
        const auto& t = p.tmpfs[i];
        if (auto ok = check(t.origin, detail::check_path(t.path)); !ok) return ok;
        // Two tmpfs on one path: the second would silently hide the first (and its
        // size), which is never what the policy author meant.
        for (size_t j = 0; j < i; ++j)
            if (path_key(p.tmpfs[j].path) == path_key(t.path))
                return detail::error_at(t.origin, "duplicate tmpfs path '" + t.path +
                                                      "' (already at " +
                                                      p.tmpfs[j].origin.describe() + ")");
    }

    for (const auto& h : p.hide) {
        if (auto ok = check(h.origin, detail::check_path(h.pattern)); !ok) return ok;
        if (path_key(h.pattern) == "/")
            return detail::error_at(h.origin, "cannot hide '/' (the whole sandbox would be empty)");
    }

    for (const auto& s : p.sockets) {
        if (auto ok = check(s.origin, detail::check_path(s.path)); !ok) return ok;
        if (s.path.find_first_of("*?[") != std::string::npos)
            return detail::error_at(s.origin, "a socket is named by its path, without wildcards");
    }

    for (const auto& a : p.env_allow)
        if (auto ok = check(a.origin, detail::check_env_pattern(a.value)); !ok) return ok;
    for (const auto& d : p.env_deny)
        if (auto ok = check(d.origin, detail::check_env_pattern(d.value)); !ok) return ok;
    for (const auto& s : p.env_set) {
        if (auto ok = check(s.origin, detail::check_env_name(s.name)); !ok) return ok;
        if (s.value.find('\0') != std::string::npos)
            return detail::error_at(s.origin, "a value may not contain a NUL character");
    }

    if (auto ok = check(p.hostname.origin, detail::check_hostname(p.hostname.value)); !ok)
        return ok;
    if (!p.cwd.value.empty()) {
        if (auto ok = check(p.cwd.origin, detail::check_path(p.cwd.value)); !ok) return ok;
        // Without a workspace there is nothing at {workspace} inside the sandbox.
        if (has_root(p.cwd.value, "{workspace}") && p.workspace.value == WorkspaceAccess::none)
            return detail::error_at(p.cwd.origin,
                                    "'" + p.cwd.value + "' uses {workspace}, but " +
                                        p.workspace.origin.describe() +
                                        " sets workspace = \"none\"");
    }

    for (const auto& r : p.protect)
        if (auto ok = check(r.origin, detail::check_protect_pattern(r.pattern)); !ok) return ok;
    for (const auto& u : p.unprotect) {
        if (auto ok = check(u.origin, detail::check_protect_pattern(u.pattern)); !ok) return ok;
        // A typo here would leave the path protected while the author believes
        // otherwise: name the entries that can be taken out.
        if (!u.matched)
            return detail::error_at(u.origin, "'" + u.pattern +
                                                  "' is not protected by any policy this one "
                                                  "extends (explain lists the protected paths)");
    }
    if (p.workspace_mode.value != WorkspaceMode::direct &&
        p.workspace.value != WorkspaceAccess::rw)
        return detail::error_at(
            p.workspace_mode.origin,
            std::string("workspace mode \"") +
                (p.workspace_mode.value == WorkspaceMode::clone ? "clone" : "overlay") +
                "\" needs a read-write workspace, but " + p.workspace.origin.describe() +
                " sets workspace = \"" + (p.workspace.value == WorkspaceAccess::ro ? "ro" : "none") +
                "\"");

    if (p.workspace_path && p.workspace_path->value.empty())
        return detail::error_at(p.workspace_path->origin, "expected a directory, got an empty string");
    return {};
}

}  // namespace agentjail::policy
