// SPDX-License-Identifier: Apache-2.0
// The protected paths of direct mode (workspace_rules.hpp): git metadata, the hooks
// that core.hooksPath names, agent and editor configuration, each bound read-only,
// with placeholders for the missing ones.
#include "plan/staged_name.hpp"
#include "plan/workspace_rules.hpp"

#include "util/strings.hpp"
#include "base/pattern.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>

namespace agentjail::plan::detail {

namespace {

using sys::EntryType;
using base::Pattern;
using sys::Scan;

// Git refuses to work with an empty one of these (an empty `.git` file, `commondir`
// or `gitdir` is a fatal error), so a missing one cannot get a placeholder.
bool no_placeholder(const std::string& name) {
    return name == ".git" || name == "commondir" || name == "gitdir";
}

struct Stat {
    bool exists = false;
    struct stat st {};
};

Stat lstat_path(const HostView& view, const std::string& path) {
    Stat s;
    s.exists = view.lstat(path, s.st) == 0;
    return s;
}

std::string lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

std::string trim(std::string_view s) {
    size_t a = 0, b = s.size();
    while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r')) ++a;
    while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r')) --b;
    return std::string(s.substr(a, b - a));
}

// core.hooksPath from a git config file's text, read here (git is never run at plan
// time: it would read the very config this guards against). The last one wins, as
// in git; "" when unset. Includes are not followed.
std::string hooks_path_in(const std::string& text) {
    std::string section, found;
    size_t i = 0;
    while (i < text.size()) {
        size_t eol = text.find('\n', i);
        if (eol == std::string::npos) eol = text.size();
        std::string_view line(text.data() + i, eol - i);
        i = eol + 1;
        std::string l = trim(line);
        if (l.empty() || l[0] == '#' || l[0] == ';') continue;
        if (l[0] == '[') {
            auto close = l.find(']');
            if (close == std::string::npos) continue;
            std::string name = trim(std::string_view(l).substr(1, close - 1));
            auto sp = name.find_first_of(" \t\"");
            section = lower(sp == std::string::npos ? name : name.substr(0, sp)) +
                      (sp == std::string::npos ? "" : "\"sub");
            l = trim(std::string_view(l).substr(close + 1));
            if (l.empty()) continue;
        }
        if (section != "core") continue;
        auto eq = l.find('=');
        if (eq == std::string::npos) continue;
        if (lower(trim(std::string_view(l).substr(0, eq))) != "hookspath") continue;
        std::string raw = trim(std::string_view(l).substr(eq + 1));
        std::string value;
        bool quoted = false;
        for (size_t k = 0; k < raw.size(); ++k) {
            char c = raw[k];
            if (c == '"') {
                quoted = !quoted;
            } else if (c == '\\' && k + 1 < raw.size()) {
                char n = raw[++k];
                value += n == 't' ? '\t' : n == 'n' ? '\n' : n;
            } else if (!quoted && (c == '#' || c == ';')) {
                break;
            } else {
                value += c;
            }
        }
        found = trim(value);
    }
    return found;
}

// Whether rel's last segment lies below a .git directory (an earlier one is .git).
bool below_git_dir(const std::string& rel) {
    auto segs = base::split_path(rel);
    if (segs.empty()) return false;
    return std::find(segs.begin(), segs.end() - 1, ".git") != segs.end() - 1;
}

}  // namespace

// A [workspace] protect pattern as a workspace-relative pattern ("{workspace}/x" is "x").
Result<std::string> protect_rel(const std::string& raw, const policy::Origin& origin) {
    std::string rel = raw;
    if (rel == "{workspace}" || util::starts_with(rel, "{workspace}/")) rel = rel.substr(11);
    while (!rel.empty() && rel[0] == '/') rel.erase(0, 1);
    if (raw.empty() || raw[0] == '/' || raw[0] == '~' || rel.empty())
        return invalid(describe(origin), "protect pattern " + raw +
                                             " must name a path inside the workspace, relative to it "
                                             "(\".git/hooks\", \"**/.gitattributes\")");
    for (auto s : base::split_path(rel))
        if (s == "..") return invalid(describe(origin), "protect pattern " + raw + ": '..' is not allowed");
    return rel;
}


// policy.protect is what is left after every layer's unprotect (lib/policy/merge.cc).
Result<void> WorkspaceRules::collect_protect_rules() {
    for (const auto& r : policy_.protect) {
        auto rel = protect_rel(r.pattern, r.origin);
        if (!rel) return std::move(rel).error();
        rules_.push_back({r.pattern, *rel, Pattern(*rel), describe(r.origin), r.placeholder});
    }
    return {};
}

bool WorkspaceRules::need_scan_for_protect() const {
    return std::any_of(rules_.begin(), rules_.end(),
                       [](const ProtectRule& r) { return r.pattern.has_wildcards(); });
}

void WorkspaceRules::add_protected(Protected p) {
    if (!p.is_dir && util::path_within(p.path, ctx_.workspace) && p.path != ctx_.workspace)
        p.socket = !below_git_dir(p.path.substr(ctx_.workspace == "/" ? 1 : ctx_.workspace.size() + 1));
    auto it = std::find_if(out_.protect.begin(), out_.protect.end(),
                           [&](const Protected& o) { return o.path == p.path; });
    if (it != out_.protect.end()) return;
    out_.protect.push_back(std::move(p));
}

// A literal workspace-relative path: protected as it is, or its first missing
// component gets a placeholder. Every component is checked without following
// links: a link planted by an earlier run is refused, not bound through.
Result<void> WorkspaceRules::protect_literal(const std::string& root, const std::string& rel, const ProtectRule& rule,
                                             const std::string& pattern_text) {
    auto segs = base::split_path(rel);
    std::string path = root;
    for (size_t i = 0; i < segs.size(); ++i) {
        const std::string name(segs[i]);
        path = join(path, name);
        const bool last = i + 1 == segs.size();
        Stat s = lstat_path(*ctx_.view, path);
        if (!s.exists) {
            if (errno != ENOENT) return {};
            // Missing and without a placeholder: the check after the run flags one
            // the run makes (workspace/audit.cc).
            if (no_placeholder(name) || !rule.placeholder) return {};
            Protected p;
            p.path = path;
            // A directory for a directory's name (or one with names below it); for a
            // file's name (.envrc, .mcp.json) a socket file outside a git directory
            // and an empty file in one (Guard::socket, set by add_protected).
            p.is_dir = !last || rule.pattern.dir_only();
            p.placeholder = true;
            p.pattern = pattern_text;
            p.why = rule.why;
            add_protected(std::move(p));
            return {};
        }
        if (S_ISLNK(s.st.st_mode))
            return invalid(rule.why, "cannot protect " + join(root, rel) + ": " + path +
                                         " is a symlink (a link planted by an earlier run would "
                                         "redirect the read-only bind); remove it, or unprotect " +
                                         rule.raw);
        if (!last && !S_ISDIR(s.st.st_mode)) return {};  // e.g. .git is a file: no .git/hooks here
        if (last) {
            if (rule.pattern.dir_only() && !S_ISDIR(s.st.st_mode)) return {};
            if (S_ISDIR(s.st.st_mode) && name == ".git") return {};  // see protect()
            add_existing(path, s.st, pattern_text, rule.why);
        }
    }
    return {};
}

void WorkspaceRules::add_existing(const std::string& path, const struct stat& st, const std::string& pattern,
                                  const std::string& why, const std::string& link_of) {
    Protected p;
    p.path = path;
    p.is_dir = S_ISDIR(st.st_mode);
    p.dev = st.st_dev;
    p.ino = st.st_ino;
    p.pattern = pattern;
    p.why = why;
    p.link_of = link_of;
    add_protected(std::move(p));
    if (S_ISREG(st.st_mode) && st.st_nlink > 1) linked_protect_.push_back(out_.protect.size() - 1);
}

// "**/a/b" with a, b literal: the part after the leading "**/".
std::optional<std::string> WorkspaceRules::literal_below_globstar(const Pattern& p) {
    const auto& segs = p.segments();
    if (segs.size() < 2 || segs[0] != "**") return std::nullopt;
    std::string rel;
    for (size_t i = 1; i < segs.size(); ++i) {
        if (segs[i] == "**" || base::has_wildcard(segs[i])) return std::nullopt;
        rel += (rel.empty() ? "" : "/") + segs[i];
    }
    return rel;
}

Result<void> WorkspaceRules::protect() {
    const std::string& ws = ctx_.workspace;
    const Scan* s = nullptr;
    if (need_scan_for_protect()) {
        auto r = ws_scan();
        if (!r) return std::move(r).error();
        s = *r;
    }
    // Repository roots: the workspace, and every directory with a .git (a
    // nested repository, a submodule's or a worktree's checkout).
    std::vector<std::string> repo_roots{""};
    if (s != nullptr) {
        for (const auto& e : s->entries) {
            if (e.name != ".git" || e.parent == sys::ScanEntry::kTop) continue;
            if (e.type != EntryType::dir && e.type != EntryType::file) continue;
            repo_roots.push_back(s->dir_of(e));
        }
    }
    for (const auto& rule : rules_) {
        if (!rule.pattern.has_wildcards()) {
            if (auto r = protect_literal(ws, rule.rel, rule, rule.raw); !r) return r;
            continue;
        }
        for (const auto* e : matches(*s, rule.pattern)) {
            // A .git directory is where commits go: a pattern naming `.git` protects a
            // .git file (a gitdir redirect) only.
            if (e->type == EntryType::dir && e->name == ".git") continue;
            // Another run's placeholder under its staged name, a moment before it is
            // renamed into place (guard/placeholder.hpp): no name anything reads.
            if (is_staged_name(e->name)) continue;
            const std::string path = join(ws, s->rel(*e));
            if (e->type == EntryType::symlink)
                return invalid(rule.why, "cannot protect " + path +
                                             ": it is a symlink (a link planted by an earlier run "
                                             "would redirect the read-only bind); remove it, or "
                                             "unprotect " + rule.raw);
            Stat st = lstat_path(*ctx_.view, path);
            if (!st.exists || S_ISLNK(st.st.st_mode)) continue;
            add_existing(path, st.st, rule.raw, rule.why);
        }
        // Placeholders for "**/name": at the workspace root, and for git's own names
        // (.git/..., .gitattributes, .gitmodules: read per repository) at each
        // repository's root too. Editors and agents read their configuration in the
        // folder the user opens, the workspace; a placeholder at every repository
        // root would litter the tree for little.
        if (auto lit = literal_below_globstar(rule.pattern)) {
            const bool per_repo = util::starts_with(*lit, ".git");
            for (const auto& root : repo_roots) {
                if (!root.empty() && !per_repo) break;
                if (auto r = protect_literal(join(ws, root), *lit, rule, rule.raw); !r) return r;
            }
        }
    }
    return hooks_paths(repo_roots);
}

// core.hooksPath names where git looks for hooks instead of .git/hooks (husky,
// lefthook and pre-commit managers set it): inside the workspace, it is
// protected like .git/hooks, by the same rule.
Result<void> WorkspaceRules::hooks_paths(const std::vector<std::string>& repo_roots) {
    const ProtectRule* hooks_rule = nullptr;
    for (const auto& r : rules_) {
        const auto& segs = r.pattern.segments();
        if (segs.size() >= 2 && segs[segs.size() - 2] == ".git" && segs.back() == "hooks") hooks_rule = &r;
    }
    if (hooks_rule == nullptr) return {};
    const std::string& ws = ctx_.workspace;
    for (const auto& root : repo_roots) {
        const std::string dotgit = join(root, ".git");
        Stat st = lstat_path(*ctx_.view, join(ws, dotgit));
        if (!st.exists) continue;
        std::string gitdir = dotgit;  // relative to the workspace
        if (S_ISREG(st.st.st_mode)) {
            auto text = ctx_.view->read_beneath(ws, dotgit);
            if (!text || !util::starts_with(*text, "gitdir:")) continue;
            std::string target = trim(std::string_view(*text).substr(7));
            while (!target.empty() && target.back() == '\n') target.pop_back();
            std::string abs = target[0] == '/' ? util::normalize_path(target)
                                               : util::normalize_path(join(join(ws, root), target));
            if (abs.empty() || !util::path_within(abs, ws) || abs == ws) continue;
            gitdir = relative_to(abs, ws);
        } else if (!S_ISDIR(st.st.st_mode)) {
            continue;
        }
        std::vector<std::string> configs{join(gitdir, "config"), join(gitdir, "config.worktree")};
        if (auto common = ctx_.view->read_beneath(ws, join(gitdir, "commondir"))) {
            std::string c = trim(*common);
            while (!c.empty() && c.back() == '\n') c.pop_back();
            std::string abs = !c.empty() && c[0] == '/' ? util::normalize_path(c)
                                                        : util::normalize_path(join(join(ws, gitdir), c));
            if (!abs.empty() && util::path_within(abs, ws) && abs != ws)
                configs.insert(configs.begin(), join(relative_to(abs, ws), "config"));
        }
        std::string hooks;
        std::string from;
        for (const auto& cfg : configs) {
            auto text = ctx_.view->read_beneath(ws, cfg);
            if (!text) continue;
            std::string h = hooks_path_in(*text);
            if (!h.empty()) {
                hooks = h;
                from = cfg;
            }
        }
        if (hooks.empty()) continue;
        std::string abs;
        if (hooks == "~" || util::starts_with(hooks, "~/"))
            abs = util::normalize_path(ctx_.home + hooks.substr(1));
        else if (hooks[0] == '/')
            abs = util::normalize_path(hooks);
        else
            abs = util::normalize_path(join(join(ws, root), hooks));  // relative to the work tree
        if (abs.empty() || !util::path_within(abs, ws) || abs == ws) continue;
        ProtectRule dir_rule{hooks_rule->raw, relative_to(abs, ws), Pattern(relative_to(abs, ws) + "/"),
                             hooks_rule->why};
        if (auto r = protect_literal(ws, dir_rule.rel, dir_rule,
                                     "core.hooksPath in " + join(ws, from) + " (" + hooks_rule->raw + ")");
            !r)
            return r;
    }
    return {};
}

}  // namespace agentjail::plan::detail
