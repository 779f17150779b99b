// SPDX-License-Identifier: Apache-2.0
// The workspace rules of a plan (workspace_rules.hpp): `**` hide patterns, other
// hard-link names of hidden or protected files, and the ancestor directories that
// must not be renamed. One walk of the workspace, only when a rule needs it. The
// protected paths of direct mode are workspace_protect.cc's.
#include "plan/workspace_rules.hpp"

#include "plan/view_rules.hpp"

#include "util/strings.hpp"
#include "base/pattern.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

namespace agentjail::plan::detail {

namespace {

using sys::EntryType;
using base::Pattern;
using sys::Scan;

}  // namespace

// A rule split into the literal directory it starts at and the pattern below it.
Result<Split> split_rule(const std::string& raw, const ExpandContext& ctx, const policy::Origin& origin) {
    // The placeholder part is expanded as a path (its value is literal even if it
    // holds '*' or '['); the rest is the pattern.
    std::string head, tail = raw;
    for (const char* p : {"~", "{workspace}", "{tmp}"}) {
        std::string ps = p;
        if (raw == ps || util::starts_with(raw, ps + "/")) {
            head = ps;
            tail = raw.substr(ps.size());
            break;
        }
    }
    std::string base = "/";
    if (!head.empty()) {
        auto e = expand(head, ctx, origin);
        if (!e) return std::move(e).error();
        base = *e;
    } else if (raw.empty() || raw[0] != '/') {
        return invalid(describe(origin), "pattern " + raw + " is not absolute");
    }
    auto segs = base::split_path(tail);
    size_t i = 0;
    for (; i < segs.size(); ++i) {
        if (segs[i] == "..")
            return invalid(describe(origin), "pattern " + raw + ": '..' is not allowed in a pattern with **");
        if (segs[i] == "**" || base::has_wildcard(segs[i])) break;
        if (segs[i] == ".") continue;
        base = join(base, std::string(segs[i]));
    }
    std::string rest;
    for (; i < segs.size(); ++i) {
        if (segs[i] == "..")
            return invalid(describe(origin), "pattern " + raw + ": '..' is not allowed in a pattern with **");
        rest += (rest.empty() ? "" : "/") + std::string(segs[i]);
    }
    if (!tail.empty() && tail.back() == '/') rest += "/";
    return Split{base, rest};
}


std::string base_name(std::string_view rel) {
    auto slash = rel.rfind('/');
    return std::string(slash == std::string_view::npos ? rel : rel.substr(slash + 1));
}

Result<WorkspaceFindings> WorkspaceRules::run() {
    // Protection and rename locks are for a workspace the sandbox can write; in
    // clone and overlay mode the user's directory is not what it writes.
    const bool writable_direct = !ctx_.workspace.empty() && direct_ &&
                                 policy_.workspace.value == policy::WorkspaceAccess::rw;
    if (auto r = collect_protect_rules(); !r) return std::move(r).error();
    if (auto r = globstar_hides(); !r) return std::move(r).error();
    if (writable_direct)
        if (auto r = protect(); !r) return std::move(r).error();
    if (auto r = hard_links(); !r) return std::move(r).error();
    if (writable_direct) ancestors();
    // The walk is kept for the check after the run (sys::ScanOptions::before).
    if (auto it = scans_.find(ctx_.workspace); it != scans_.end())
        plan_.workspace_scan = std::make_shared<const sys::Scan>(std::move(it->second));
    return std::move(out_);
}

Result<const Scan*> WorkspaceRules::scan_of(const std::string& root) {
    auto it = scans_.find(root);
    if (it != scans_.end()) return &it->second;
    // The workspace's walk starts from the last run's, where one is kept: only the
    // directories changed since are read.
    std::optional<sys::Scan> kept;
    if (root == ctx_.workspace) kept = kept_walk();
    sys::ScanOptions options;
    if (kept) options.before = &*kept;
    if (root == ctx_.workspace) options.names = ws_names();
    auto s = ctx_.view->scan(root, options);
    if (!s) return std::move(s).error();
    if (s->reused > 0)
        plan_.notes.push_back("the workspace's walk read " + std::to_string(s->listed) + " of " +
                              std::to_string(s->listed + s->reused) +
                              " directories; the others are unchanged since the last run's walk");
    // The sandbox sees what lies deeper; the patterns with ** only do not look there
    // (the check after the run names each such directory for the user).
    for (const auto& rel : s->too_deep)
        plan_.notes.push_back("the ** patterns do not look below " + join(root, rel) + " (deeper than " +
                              std::to_string(sys::ScanOptions{}.max_depth) + " levels)");
    auto [pos, ok] = scans_.emplace(root, std::move(*s));
    (void)ok;
    return &pos->second;
}

std::vector<std::string> WorkspaceRules::ws_names() const {
    std::set<std::string> names(std::begin(view::kGitNames), std::end(view::kGitNames));
    // A directory a protect pattern names is checked after the run with all it holds.
    auto last_of = [&](const std::string& rest, bool contents) {
        auto name = view::walk_name(Pattern(rest), contents);
        if (name) names.insert(*name);
        return name.has_value();
    };
    for (const auto& rule : policy_.hide) {
        if (!uses_globstar(rule.pattern)) continue;
        auto split = split_rule(rule.pattern, ctx_, rule.origin);
        if (!split) continue;  // globstar_hides() says why
        if (!util::path_within(split->base, ctx_.workspace)) continue;
        if (!last_of(split->rest, false)) return {};
    }
    for (const auto& r : rules_)
        if (!last_of(r.rel, true)) return {};
    return {names.begin(), names.end()};
}

Result<const Scan*> WorkspaceRules::ws_scan_whole() {
    if (auto it = scans_.find(ctx_.workspace); it != scans_.end() && it->second.names.empty()) return &it->second;
    if (!whole_) {
        auto s = ctx_.view->scan(ctx_.workspace, sys::ScanOptions{});
        if (!s) return std::move(s).error();
        whole_ = std::move(*s);
    }
    return &*whole_;
}

std::optional<sys::Scan> WorkspaceRules::kept_walk() {
    const Plan::KeptScan& k = plan_.kept_scan;
    if (k.name.empty()) return std::nullopt;
    std::string bytes;
    const HostView::StateFile read = ctx_.view->read_state_file_in(k.base, "scans", k.name, kKeptScanMax, bytes);
    if (!read.why.empty()) {
        plan_.notes.push_back("the workspace is walked whole: the last run's walk is not used (" + read.why + ")");
        return std::nullopt;
    }
    if (read.missing || bytes.empty()) return std::nullopt;
    auto s = sys::decode(bytes);
    if (!s) {
        plan_.notes.push_back("the workspace is walked whole: " + s.error().message());
        return std::nullopt;
    }
    if (s->root != ctx_.workspace) return std::nullopt;  // another path with the same hash
    return std::move(*s);
}

Result<const Scan*> WorkspaceRules::ws_scan() { return scan_of(ctx_.workspace); }

// Matches pattern (relative to scan's root) against every entry; the last
// segment is compared first, which rules out nearly every entry cheaply.
std::vector<const sys::ScanEntry*> WorkspaceRules::matches(const Scan& s, const Pattern& p) {
    std::vector<const sys::ScanEntry*> out;
    if (p.empty()) return out;
    const std::string& last = p.last();
    const bool last_any = last == "**";
    const base::SegmentPrefilter quick(last);
    for (const auto& e : s.entries) {
        const bool is_dir = e.type == EntryType::dir;
        if (!last_any && (!quick.may_match(e.name) || !base::match_segment(last, e.name))) continue;
        if (p.match(s.rel(e), is_dir)) out.push_back(&e);
    }
    return out;
}

Result<void> WorkspaceRules::add_hidden(const std::string& path, const std::string& pattern, const std::string& why,
                                        const std::string& link_of) {
    auto canon = ctx_.view->canonical(path);
    struct stat st {};
    if (!canon || ctx_.view->stat(*canon, st) != 0) return {};
    if (std::any_of(hidden_.begin(), hidden_.end(), [&](const Hidden& h) { return h.path == *canon; }))
        return {};
    Hidden h;
    h.path = *canon;
    h.is_dir = S_ISDIR(st.st_mode);
    h.pattern = pattern;
    h.why = why;
    h.dev = st.st_dev;
    h.ino = st.st_ino;
    h.nlink = st.st_nlink;
    h.regular = S_ISREG(st.st_mode);
    h.link_of = link_of;
    hidden_.push_back(std::move(h));
    return {};
}

Result<void> WorkspaceRules::globstar_hides() {
    for (const auto& rule : policy_.hide) {
        if (!uses_globstar(rule.pattern)) continue;
        if (ctx_.workspace.empty() && uses_workspace(rule.pattern)) continue;
        auto split = split_rule(rule.pattern, ctx_, rule.origin);
        if (!split) return std::move(split).error();
        std::string root = split->base;
        std::string rest = split->rest;
        // Below the workspace: the one workspace scan serves every rule.
        if (!ctx_.workspace.empty() && util::path_within(root, ctx_.workspace)) {
            rest = join(relative_to(root, ctx_.workspace), rest);
            root = ctx_.workspace;
        }
        struct stat st {};
        if (ctx_.view->lstat(root, st) != 0 || !S_ISDIR(st.st_mode)) {
            plan_.notes.push_back("hide " + rule.pattern + " matched nothing (" + root + " is not a directory)");
            continue;
        }
        auto s = scan_of(root);
        if (!s) return std::move(s).error();
        Pattern p(rest);
        auto found = matches(**s, p);
        for (const auto* e : found)
            if (auto r = add_hidden(join(root, (*s)->rel(*e)), rule.pattern, describe(rule.origin)); !r) return r;
        plan_.notes.push_back("hide " + rule.pattern + " matched " + std::to_string(found.size()) +
                              (found.size() == 1 ? " path" : " paths"));
    }
    return {};
}

// --- hard links ---

// The other names of (dev, ino) in the workspace scan. The directory entry's inode
// number picks candidates and an lstat confirms each; when that finds too few (a
// filesystem whose d_ino differs from st_ino, like some overlayfs setups), every
// file is looked at.
Result<std::vector<std::string>> WorkspaceRules::other_names(dev_t dev, ino_t ino, nlink_t nlink, const std::string& self) {
    auto s = ws_scan_whole();
    if (!s) return std::move(s).error();
    const Scan& scan = **s;
    std::vector<std::string> out;
    auto check = [&](bool all) -> Result<void> {
        out.clear();
        for (const auto& e : scan.entries) {
            if (e.type == EntryType::dir || e.type == EntryType::symlink) continue;
            if (!all && e.ino != ino) continue;
            sys::ScanEntry copy = e;
            if (!ctx_.view->stat_entry(scan, copy)) continue;
            if (copy.dev != dev || copy.ino != ino) continue;
            std::string path = join(ctx_.workspace, scan.rel(e));
            if (path != self) out.push_back(path);
        }
        return {};
    };
    if (auto r = check(false); !r) return std::move(r).error();
    if (out.size() + 1 < nlink)
        if (auto r = check(true); !r) return std::move(r).error();
    return out;
}

// The files with other hard links in the hidden directories on the workspace's
// filesystem: the mask over the directory hides them there, but another name of one
// in the workspace (a key linked into the project as deploy_key) would show it.
// Where directory entries carry the inode numbers stat gives (HostView::entry_inodes_exact),
// and the plan walked the workspace already, a hidden directory is listed by names
// alone and only the files whose inode number is also a workspace file's are looked
// at (a stat each); elsewhere every file in it is (a ~/.azure or ~/.kube with
// thousands of cached files cost milliseconds a run).
Result<std::vector<Hidden>> WorkspaceRules::linked_in_hidden_dirs(dev_t ws_dev) {
    std::vector<Hidden> out;
    const size_t n = hidden_.size();
    // By names only when the workspace was walked whole anyway (a ** pattern keeping
    // every name): a walk made for this alone would cost more than it saves (a
    // workspace of "/"). The
    // directories looked at are on the workspace's device, so its filesystem is
    // theirs: asked once.
    std::optional<bool> by_name_here;
    std::optional<std::unordered_set<ino_t>> ws_inodes;  // the workspace's files', once
    for (size_t i = 0; i < n; ++i) {
        const Hidden& h = hidden_[i];
        if (!h.is_dir || h.dev != ws_dev) continue;
        if (!by_name_here)
            by_name_here = scans_.count(ctx_.workspace) != 0 && scans_.at(ctx_.workspace).names.empty() &&
                           ctx_.view->entry_inodes_exact(ctx_.workspace);
        const bool by_name = *by_name_here;
        if (by_name && !ws_inodes) {
            auto ws = ws_scan_whole();
            if (!ws) return std::move(ws).error();
            ws_inodes.emplace();
            for (const auto& e : (*ws)->entries)
                if (e.type == EntryType::file) ws_inodes->insert(e.ino);
        }
        sys::ScanOptions opt;
        opt.stat = !by_name;
        opt.skip_git_internals = false;
        auto inner = ctx_.view->scan(h.path, opt);
        if (!inner) continue;  // unreadable to the caller: so are its files, by any name
        for (auto e : inner->entries) {
            if (e.type != EntryType::file) continue;
            if (by_name) {
                if (ws_inodes->count(e.ino) == 0) continue;
                if (!ctx_.view->stat_entry(*inner, e)) continue;
            }
            if (e.nlink < 2 || e.dev != ws_dev) continue;
            Hidden f = h;
            f.path = join(h.path, inner->rel(e));
            f.is_dir = false;
            f.regular = true;
            f.dev = e.dev;
            f.ino = e.ino;
            f.nlink = e.nlink;
            out.push_back(std::move(f));
        }
    }
    return out;
}

Result<void> WorkspaceRules::hard_links() {
    const std::string& ws = ctx_.workspace;
    if (ws.empty()) return {};
    // The workspace's filesystem from a stat, not a walk: the walk is made only
    // when some hidden file has another name to look for.
    struct stat ws_st {};
    if (ctx_.view->stat(ws, ws_st) != 0) return {};
    // Copied: hidden_ grows below.
    std::vector<Hidden> files(hidden_.begin(), hidden_.end());
    const size_t own = files.size();
    auto in_dirs = linked_in_hidden_dirs(ws_st.st_dev);
    if (!in_dirs) return std::move(in_dirs).error();
    files.insert(files.end(), in_dirs->begin(), in_dirs->end());
    for (size_t i = 0; i < files.size(); ++i) {
        const Hidden& h = files[i];
        if (!h.regular || h.nlink < 2) continue;
        const bool inside = util::path_within(h.path, ws);
        if (!inside && h.dev != ws_st.st_dev) continue;
        auto names = other_names(h.dev, h.ino, h.nlink, h.path);
        if (!names) return std::move(names).error();
        // A file inside a hidden directory with another name outside the workspace is
        // not refused: the directory's mask hides it here, and nothing shows the
        // other name.
        if (inside && i < own && names->size() + 1 < h.nlink)
            return invalid(h.why, "hidden file " + h.path + " has " + std::to_string(h.nlink) +
                                      " hard links, and only " + std::to_string(names->size() + 1) +
                                      " of them are in the workspace: another name of it outside "
                                      "could show the secret; break the link (cp " + h.path +
                                      " x && mv x " + h.path + ") and run again",
                           EMLINK);
        for (const auto& other : *names) {
            plan_.notes.push_back("hidden " + other + ": a hard link of the hidden " + h.path + " (" +
                                  h.pattern + ")");
            if (auto r = add_hidden(other, h.pattern, h.why, h.path); !r) return r;
        }
    }
    for (size_t k = 0; k < linked_protect_.size(); ++k) {
        Protected p = out_.protect[linked_protect_[k]];
        struct stat st {};
        if (ctx_.view->lstat(p.path, st) != 0) continue;
        auto names = other_names(st.st_dev, st.st_ino, st.st_nlink, p.path);
        if (!names) return std::move(names).error();
        if (names->size() + 1 < st.st_nlink)
            return invalid(p.why, "protected file " + p.path + " has " + std::to_string(st.st_nlink) +
                                      " hard links, and only " + std::to_string(names->size() + 1) +
                                      " of them are in the workspace: writing another name of it "
                                      "would change it; break the link (cp " + p.path + " x && mv x " +
                                      p.path + ") and run again",
                           EMLINK);
        for (const auto& other : *names) {
            struct stat ost {};
            if (ctx_.view->lstat(other, ost) != 0) continue;
            plan_.notes.push_back("read-only " + other + ": a hard link of the protected " + p.path + " (" +
                                  p.pattern + ")");
            Protected q;
            q.path = other;
            q.is_dir = false;
            q.dev = ost.st_dev;
            q.ino = ost.st_ino;
            q.pattern = p.pattern;
            q.why = p.why;
            q.link_of = p.path;
            add_protected(std::move(q));
        }
    }
    return {};
}

// --- ancestors ---

// Every directory between the workspace root and a hidden or protected name
// becomes a mount point (a read-write bind over itself): the kernel refuses to
// rename a mount point (EBUSY), so `mv packages/api elsewhere` cannot move a
// hidden .env out from under the next run's rule.
void WorkspaceRules::ancestors() {
    const std::string& ws = ctx_.workspace;
    std::set<std::string> marked;  // hidden or protected: mount points already
    std::vector<std::string> names;
    for (const auto& h : hidden_)
        if (util::path_within(h.path, ws) && h.path != ws) {
            names.push_back(h.path);
            marked.insert(h.path);
        }
    for (const auto& p : out_.protect) {
        names.push_back(p.path);
        marked.insert(p.path);
    }
    std::set<std::string> dirs;
    for (const auto& n : names) {
        std::string d = n;
        for (;;) {
            auto slash = d.rfind('/');
            if (slash == std::string::npos || slash == 0) break;
            d = d.substr(0, slash);
            if (d == ws || !util::path_within(d, ws)) break;
            if (!dirs.insert(d).second) break;  // its own ancestors are in already
        }
    }
    for (const auto& d : dirs)
        if (marked.count(d) == 0) out_.ancestors.push_back(d);
    std::stable_sort(out_.ancestors.begin(), out_.ancestors.end(),
                     [](const std::string& a, const std::string& b) { return depth(a) < depth(b); });
}

bool uses_globstar(const std::string& raw) {
    for (auto s : base::split_path(raw))
        if (s == "**") return true;
    return false;
}

Result<WorkspaceFindings> plan_workspace(const policy::Policy& policy, const ExpandContext& ctx,
                                         std::vector<Hidden>& hidden, Plan& plan) {
    WorkspaceRules rules(policy, ctx, hidden, plan);
    return rules.run();
}

}  // namespace agentjail::plan::detail
