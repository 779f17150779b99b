// SPDX-License-Identifier: Apache-2.0
// Path handling for the planner: placeholder expansion, canonicalisation, and
// resolving an inside path through the planned mounts the way the sandbox will.
#include "plan/internal.hpp"

#include "util/strings.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <deque>

namespace agentjail::plan::detail {

namespace {

Error bad_path(const policy::Origin& origin, const std::string& message) {
    return Error(ErrorKind::invalid_input, EINVAL, with_origin(describe(origin), message));
}

// Replaces a leading placeholder (the whole string, or followed by '/').
bool take_prefix(const std::string& raw, const std::string& prefix, std::string& rest) {
    if (raw == prefix) {
        rest.clear();
        return true;
    }
    if (raw.size() > prefix.size() && util::starts_with(raw, prefix) && raw[prefix.size()] == '/') {
        rest = raw.substr(prefix.size());
        return true;
    }
    return false;
}

// Splits raw into the substituted placeholder value and the rest after it.
Result<std::pair<std::string, std::string>> split_placeholder(const std::string& raw,
                                                              const ExpandContext& ctx,
                                                              const policy::Origin& origin) {
    std::string rest;
    if (take_prefix(raw, "~", rest)) {
        if (ctx.home.empty() || ctx.home[0] != '/')
            return bad_path(origin, "cannot expand " + raw + ": the home directory is unknown");
        return std::pair{ctx.home, rest};
    }
    if (!raw.empty() && raw[0] == '~')
        // ~user would look up another account's home: never what a policy means here.
        return bad_path(origin, "path " + raw + ": only ~ and ~/... are supported, not ~user");
    if (take_prefix(raw, "{workspace}", rest)) {
        if (ctx.workspace.empty())
            return bad_path(origin, "path " + raw + " uses {workspace}, but there is no workspace");
        return std::pair{ctx.workspace, rest};
    }
    if (take_prefix(raw, "{tmp}", rest)) return std::pair{ctx.tmp, rest};
    if (take_prefix(raw, "{state}", rest)) {
        if (ctx.state.empty())
            return bad_path(origin, "path " + raw + " uses {state}, but the policy has no [agent] state");
        return std::pair{ctx.state, rest};
    }
    return std::pair{std::string(), raw};
}

std::string glob_escape(const std::string& s, bool keep_wildcards) {
    std::string out;
    for (char c : s) {
        bool wildcard = c == '*' || c == '?';
        if ((wildcard && !keep_wildcards) || c == '[' || c == ']' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

std::string describe(const policy::Origin& origin) {
    if (origin.file.empty() && origin.key.empty()) return {};
    return origin.describe();
}

std::string with_origin(const std::string& why, const std::string& message) {
    return why.empty() ? message : why + ": " + message;
}

bool uses_workspace(const std::string& raw) { return raw.find("{workspace}") != std::string::npos; }

Result<std::string> expand(const std::string& raw, const ExpandContext& ctx,
                           const policy::Origin& origin) {
    auto parts = split_placeholder(raw, ctx, origin);
    if (!parts) return std::move(parts).error();
    std::string norm = util::normalize_path(parts->first + parts->second);
    if (norm.empty()) return bad_path(origin, "path " + raw + " is not absolute");
    return norm;
}

Result<std::string> expand_glob(const std::string& raw, const ExpandContext& ctx,
                                const policy::Origin& origin) {
    auto parts = split_placeholder(raw, ctx, origin);
    if (!parts) return std::move(parts).error();
    std::string pattern = glob_escape(parts->first, false) + glob_escape(parts->second, true);
    std::string norm = util::normalize_path(pattern);
    if (norm.empty()) return bad_path(origin, "path " + raw + " is not absolute");
    return norm;
}

std::optional<std::string> env_lookup(const std::vector<std::string>& env,
                                      const std::string& name) {
    for (const auto& kv : env) {
        if (kv.size() > name.size() && kv[name.size()] == '=' && util::starts_with(kv, name))
            return kv.substr(name.size() + 1);
    }
    return std::nullopt;
}

int depth(const std::string& path) {
    int n = 0;
    bool in_part = false;
    for (char c : path) {
        if (c == '/') {
            in_part = false;
        } else if (!in_part) {
            in_part = true;
            ++n;
        }
    }
    return n;
}

std::string relative_to(const std::string& path, const std::string& dir) {
    if (path.size() <= dir.size()) return {};
    if (dir == "/") return path.substr(1);
    return path.substr(dir.size() + 1);
}

std::string join(const std::string& dir, const std::string& rel) {
    if (rel.empty()) return dir;
    if (dir.empty() || dir.back() == '/') return dir + rel;
    return dir + "/" + rel;
}

std::optional<size_t> covering_op(const std::vector<MountOp>& mounts, const std::string& path) {
    for (size_t i = mounts.size(); i-- > 0;) {
        if (util::path_within(path, mounts[i].dst)) return i;
    }
    return std::nullopt;
}

std::optional<std::string> host_path(const std::vector<MountOp>& mounts, const std::string& path) {
    auto i = covering_op(mounts, path);
    // An overlay shows its lower layer until the sandbox writes: the same answer.
    if (!i || (mounts[*i].kind != MountKind::bind && mounts[*i].kind != MountKind::overlay))
        return std::nullopt;
    return join(mounts[*i].src, relative_to(path, mounts[*i].dst));
}

std::optional<std::string> resolve_inside(const std::vector<MountOp>& mounts, const std::string& path,
                                          const HostView& view) {
    std::deque<std::string> todo;
    auto push_parts = [&todo](const std::string& p) {
        std::deque<std::string> parts;
        size_t i = 0;
        while (i < p.size()) {
            while (i < p.size() && p[i] == '/') ++i;
            size_t j = i;
            while (j < p.size() && p[j] != '/') ++j;
            if (j > i) parts.push_back(p.substr(i, j - i));
            i = j;
        }
        todo.insert(todo.begin(), parts.begin(), parts.end());
    };
    push_parts(path);
    std::string cur = "/";
    int hops = 0;
    while (!todo.empty()) {
        std::string part = todo.front();
        todo.pop_front();
        if (part == ".") continue;
        if (part == "..") {
            auto slash = cur.rfind('/');
            cur = slash == 0 ? "/" : cur.substr(0, slash);
            continue;
        }
        std::string next = join(cur, part);
        std::optional<std::string> link;
        if (auto i = covering_op(mounts, next)) {
            const MountOp& op = mounts[*i];
            if (op.kind == MountKind::symlink && op.dst == next) {
                link = op.src;
            } else if (op.kind == MountKind::bind || op.kind == MountKind::overlay) {
                std::string host = join(op.src, relative_to(next, op.dst));
                if (auto text = view.readlink(host); text && !text->empty()) link = std::move(text);
            }
        }
        if (link) {
            if (++hops > 40) return std::nullopt;
            if (!link->empty() && (*link)[0] == '/') cur = "/";
            push_parts(*link);
            continue;
        }
        cur = next;
    }
    return cur;
}

const char* kind_name(MountKind kind) {
    switch (kind) {
    case MountKind::bind: return "bind";
    case MountKind::tmpfs: return "tmpfs";
    case MountKind::proc: return "proc";
    case MountKind::devpts: return "devpts";
    case MountKind::symlink: return "symlink";
    case MountKind::mask_dir: return "mask_dir";
    case MountKind::mask_file: return "mask_file";
    case MountKind::readonly: return "readonly";
    case MountKind::overlay: return "overlay";
    case MountKind::view: return "view";
    }
    return "unknown";
}

}  // namespace agentjail::plan::detail
