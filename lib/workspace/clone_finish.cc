// SPDX-License-Identifier: Apache-2.0
// Clone mode (clone.hpp), after the run. The sandbox wrote only its clone; everything
// agentjail now does with the clone on the host treats it as hostile: its .git is
// walked without following links before git touches it, what the sandbox put in
// hooks, config, info/ and alternates is recorded and removed, the index it wrote is
// thrown away, and git runs with the fixed settings of git.hpp, so nothing from the
// clone executes on the host. The user's repository only receives objects (checked
// by fsck) and one new branch.
#include "workspace/clone.hpp"

#include "workspace/audit.hpp"
#include "workspace/clone_internal.hpp"
#include "sys/dir.hpp"

#include "sys/syscalls.hpp"
#include "util/strings.hpp"
#include "workspace/git.hpp"
#include "workspace/report.hpp"
#include "sys/state_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>

namespace agentjail::workspace {

using namespace detail;  // clone_internal.hpp

// What the sandbox did to the clone's .git, walked without following anything.
struct CloneRun::Audit {
    std::vector<Flag> flags;
    std::string refused;  // non-empty: git must not touch this .git
    std::vector<std::string> remove;  // paths relative to .git to delete
};

namespace {

// "a.b.c=value" lines of `git config --list -z` (key\nvalue\0).
std::map<std::string, std::vector<std::string>> parse_config_list(const std::string& out) {
    std::map<std::string, std::vector<std::string>> m;
    for (const auto& e : split_nul(out)) {
        if (e.empty()) continue;
        auto nl = e.find('\n');
        std::string key = e.substr(0, nl);
        std::string val = nl == std::string::npos ? "" : e.substr(nl + 1);
        for (char& c : key)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        m[key].push_back(val);
    }
    return m;
}

void walk_git(int dirfd, const std::string& rel, int depth, std::vector<Flag>& flags, std::string& refused,
              std::vector<std::string>& remove) {
    if (!refused.empty()) return;
    if (depth > 64) {
        refused = ".git is nested deeper than git would make it (" + util::printable(rel) + ")";
        return;
    }
    auto listed = sys::dir_names(dirfd);
    if (!listed) {
        refused = "cannot read .git/" + util::printable(rel);
        return;
    }
    std::vector<std::string> names = std::move(*listed);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
        std::string path = rel.empty() ? n : rel + "/" + n;
        std::string shown = ".git/" + path;
        struct stat st {};
        if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISLNK(st.st_mode)) {
            refused = "the sandbox put a symbolic link at " + util::printable(shown) +
                      ": git on the host would follow it";
            return;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            refused = "the sandbox put a special file (FIFO, socket or device) at " + util::printable(shown);
            return;
        }
        bool top = rel.empty();
        if (top && (n == "commondir" || n == "gitdir")) {
            refused = "the sandbox wrote " + util::printable(shown) +
                      ", which would point git on the host at another repository";
            return;
        }
        if (top && n == "hooks") {
            remove.push_back(path);
            // One flag per hook file, below.
        }
        if (top && (n == "info" || n == "config.worktree" || n == "worktrees" || n == "modules")) remove.push_back(path);
        if (path == "objects/info/alternates" || path == "objects/info/http-alternates") {
            flags.push_back({"git", shown, "the sandbox added object alternates: git would read objects from "
                                           "another directory (removed)"});
            remove.push_back(path);
        }
        if (S_ISREG(st.st_mode)) {
            if (util::starts_with(path, "hooks/"))
                flags.push_back({"git", shown, "the sandbox planted a git hook (removed; it never ran on the host)"});
            else if (util::starts_with(path, "info/"))
                flags.push_back({"git", shown, path == "info/attributes"
                                                   ? "the sandbox wrote attributes (filters, diff drivers) for "
                                                     "the repository (removed)"
                                                   : "the sandbox wrote into .git/info (removed)"});
            else if (path == "config.worktree" ||
                     ((util::starts_with(path, "modules/") || util::starts_with(path, "worktrees/")) &&
                      (base_name(path) == "config" || base_name(path) == "config.worktree" ||
                       path.find("/hooks/") != std::string::npos)))
                flags.push_back({"git", shown, "the sandbox wrote configuration or hooks of a submodule or "
                                               "worktree (removed)"});
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = ::openat(dirfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                refused = "cannot open " + util::printable(shown);
                return;
            }
            sys::UniqueFd s(sub);
            walk_git(s.get(), path, depth + 1, flags, refused, remove);
            if (!refused.empty()) return;
        }
    }
}

// The clone's work tree before git on the host reads it: a nested repository's
// .git (its HEAD, refs and config would be read by `git add`, a FIFO there would
// hang it, a link would lead out) and special files (git stores none) are removed.
void sanitize_tree(int dirfd, const std::string& rel, int depth, std::vector<Flag>& flags) {
    if (depth > 256) return;
    auto names = sys::dir_names(dirfd);
    if (!names) return;
    for (const auto& n : *names) {
        std::string path = rel.empty() ? n : rel + "/" + n;
        if (rel.empty() && n == ".git") continue;
        struct stat st {};
        if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        std::string lower = n;
        for (char& c : lower)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (lower == ".git") {
            flags.push_back({"git", path, "a nested repository's .git: not carried back (its files are, as plain files)"});
            (void)sys::remove_at(dirfd, n, path);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub = ::openat(dirfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) continue;
            sys::UniqueFd s(sub);
            sanitize_tree(s.get(), path, depth + 1, flags);
        } else if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
            ::unlinkat(dirfd, n.c_str(), 0);
        }
    }
}

}  // namespace

WorkspaceOutcome CloneRun::finish() {
    finished_ = true;
    WorkspaceOutcome out;
    out.mode = "clone";
    out.run_id = run_.id;
    out.state_dir = run_.path;
    Report rep;
    rep.mode = "clone";
    rep.run_id = run_.id;
    rep.base = base_;
    auto done = [&](const std::string& status, const std::string& message) {
        out.status = status;
        out.message = message;
        out.flags = rep.flags.size();
        out.report_text = to_text(rep);
        out.report_json = to_json(rep);
        write_state(status, message, out.report_json, rep.flags.size(), true);
        return out;
    };
    auto fail = [&](const std::string& message) {
        rep.refused = message;
        return done("failed", message);
    };

    // 1. The clone's .git as the sandbox left it: a real directory without links
    //    or special files, before git reads a byte of it.
    sys::UniqueFd clonefd(::openat(run_.fd.get(), "clone", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!clonefd) return fail("the clone directory " + clone_ + " is gone");
    struct stat st {};
    if (::fstatat(clonefd.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
        rep.refused = "the clone's .git is no longer a directory (removed, or replaced by a link or a file); "
                      "nothing was fetched. The clone is kept in " + clone_;
        return done("refused", rep.refused);
    }
    sys::UniqueFd gitfd(::openat(clonefd.get(), ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!gitfd) return fail("cannot open the clone's .git");
    Audit audit;
    walk_git(gitfd.get(), "", 0, audit.flags, audit.refused, audit.remove);
    if (!audit.refused.empty()) {
        rep.flags = audit.flags;
        rep.refused = audit.refused + "; nothing was fetched. The clone is kept in " + clone_ +
                      " (do not run git in it; agentjail discard " + run_.id + " removes it)";
        return done("refused", rep.refused);
    }
    // 2. Config: what the sandbox changed, key by key, then ours again.
    Git clone;
    clone.git_dir = clone_ + "/.git";
    clone.work_tree = clone_;
    clone.safe_dirs = {clone_};
    auto cfg = read_small(gitfd.get(), "config");
    if (!cfg || *cfg != neutral_config_) {
        std::map<std::string, std::vector<std::string>> before, after;
        Git plain;
        plain.git_dir = clone.git_dir;
        // Parsed by git from a copy outside the clone (--no-includes: an include
        // could name any file), only read, never obeyed.
        std::string copy = run_.path + "/config.seen";
        if (cfg && replace_at(run_.fd.get(), "config.seen", *cfg, 0600)) {
            auto l = run_git(plain, {"config", "--no-includes", "--file", copy, "--list", "-z"});
            if (l && l->status == 0) after = parse_config_list(l->out);
            ::unlinkat(run_.fd.get(), "config.seen", 0);
        }
        (void)replace_at(run_.fd.get(), "config.ours", neutral_config_, 0600);
        if (auto l = run_git(plain, {"config", "--file", run_.path + "/config.ours", "--list", "-z"});
            l && l->status == 0)
            before = parse_config_list(l->out);
        ::unlinkat(run_.fd.get(), "config.ours", 0);
        bool any = false;
        for (const auto& [k, v] : after) {
            auto it = before.find(k);
            if (it != before.end() && it->second == v) continue;
            any = true;
            std::string val = v.empty() ? "" : v.back();
            rep.flags.push_back({"git", ".git/config",
                                 "the sandbox set " + util::printable(k) + " = " + util::printable(val) +
                                     (!executable_config_entry(k, val).empty() ? ": git runs commands from this key" : "") +
                                     " (reverted; it never took effect on the host)"});
        }
        for (const auto& [k, v] : before)
            if (!after.count(k)) {
                any = true;
                rep.flags.push_back({"git", ".git/config",
                                     "the sandbox removed " + util::printable(k) + " (restored)"});
            }
        if (!any)
            rep.flags.push_back({"git", ".git/config", "the sandbox rewrote the configuration (restored)"});
        if (auto r = replace_at(gitfd.get(), "config", neutral_config_); !r)
            return fail(r.error().message());
    }
    for (auto& f : audit.flags) rep.flags.push_back(std::move(f));
    for (const auto& path : audit.remove)
        if (auto r = sys::remove_at(gitfd.get(), path, clone_ + "/.git/" + path); !r) return fail(r.error().message());

    sanitize_tree(clonefd.get(), "", 0, rep.flags);

    // 3. The work tree as one commit, from an index of our own (the sandbox's index
    //    file is input git would parse; it goes).
    ::unlinkat(gitfd.get(), "index", 0);
    std::string head;
    if (auto r = run_git(clone, {"rev-parse", "-q", "--verify", "HEAD^{commit}"}); r && r->status == 0)
        head = trim_nl(r->out);
    if (opt_.commit_uncommitted) {
        // Our index of the work tree as copied in (never in the sandbox's reach):
        // git hashes again only what changed since. Without it, one from HEAD.
        Git work = clone;
        work.index_file = run_.path + "/start.index";
        struct stat ist {};
        if (::fstatat(run_.fd.get(), "start.index", &ist, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(ist.st_mode)) {
            ::unlinkat(run_.fd.get(), "start.index", 0);
            if (!head.empty())
                if (auto r = git_ok(work, {"read-tree", head}, "reading the clone's HEAD"); !r)
                    return fail(r.error().message());
        } else if (!head.empty() && !hidden_.empty()) {
            // Hidden paths are never taken from the work tree: they stay as the
            // agent's HEAD has them.
            std::vector<std::string> reset = {"reset", "-q", head, "--"};
            for (const auto& h : hidden_) reset.push_back(":(literal)" + h);
            (void)run_git(work, reset);
        }
        std::vector<std::string> add = {"add", "-A", "--", "."};
        for (const auto& h : hidden_) add.push_back(":(exclude,literal)" + h);
        if (auto r = git_ok(work, add, "adding the uncommitted work"); !r) return fail(r.error().message());
        auto tree = git_ok(work, {"write-tree"}, "the uncommitted work");
        if (!tree) return fail(tree.error().message());
        std::string head_tree;
        if (!head.empty())
            if (auto t = run_git(clone, {"rev-parse", head + "^{tree}"}); t && t->status == 0) head_tree = trim_nl(t->out);
        if (trim_nl(*tree) != head_tree) {
            Git commit = clone;
            commit.env = {"GIT_AUTHOR_NAME=agentjail", "GIT_AUTHOR_EMAIL=agentjail@localhost",
                          "GIT_COMMITTER_NAME=agentjail", "GIT_COMMITTER_EMAIL=agentjail@localhost"};
            std::string msg = "agentjail: uncommitted work of run " + run_.id +
                              "\n\nThe work tree as the sandbox left it, committed on the host by agentjail.\n";
            std::vector<std::string> args = {"commit-tree", trim_nl(*tree), "-F", "-"};
            if (!head.empty()) args = {"commit-tree", trim_nl(*tree), "-p", head, "-F", "-"};
            auto c = git_ok(commit, args, "committing the uncommitted work", &msg);
            if (!c) return fail(c.error().message());
            head = trim_nl(*c);
            rep.notes.push_back("the uncommitted work is the commit " + head.substr(0, 12) + " (author agentjail)");
        }
    } else {
        rep.notes.push_back("uncommitted work was not carried back (as asked); it is in " + clone_);
    }
    if (head.empty()) {
        rep.notes.push_back("the clone has no commit: no branch made");
        return done("no-changes", "the clone has no commit");
    }
    if (!start_tree_.empty()) {
        std::string base_tree;
        if (!base_.empty())
            if (auto t = run_git(clone, {"rev-parse", base_ + "^{tree}"}); t && t->status == 0) base_tree = trim_nl(t->out);
        if (base_tree != start_tree_)
            rep.notes.push_back("your own uncommitted changes from before the run are in the branch too; the "
                                "list below is what changed during the run");
    }

    // 4. The report: commits since the start and the changes against the start.
    {
        std::vector<std::string> args = {"log", "-z", "--reverse", "--format=%H%x1f%an <%ae>%x1f%s", head};
        if (!base_.empty()) args.push_back("^" + base_);
        if (auto r = run_git(clone, args); r && r->status == 0)
            for (const auto& e : split_nul(r->out)) {
                std::string line = e;
                while (!line.empty() && line.front() == '\n') line.erase(0, 1);
                if (line.empty()) continue;
                auto a = line.find('\x1f'), b = line.find('\x1f', a + 1);
                if (a == std::string::npos || b == std::string::npos) continue;
                rep.commits.push_back({line.substr(0, a), line.substr(b + 1), line.substr(a + 1, b - a - 1)});
            }
        std::string from = !start_tree_.empty() ? start_tree_ : base_;
        if (from.empty()) {
            std::string empty;
            auto e = git_ok(clone, {"hash-object", "-t", "tree", "--stdin"}, "the empty tree", &empty);
            if (e) from = trim_nl(*e);
        }
        auto diff = run_git(clone, {"diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-abbrev", from, head});
        if (diff && diff->status == 0) {
            auto parts = split_nul(diff->out);
            for (size_t i = 0; i + 1 < parts.size(); i += 2) {
                const std::string& meta = parts[i];  // ":old new oldsha newsha S"
                if (meta.size() < 2 || meta[0] != ':') {
                    --i;  // keep in step should git print something else
                    continue;
                }
                char om[8] = {}, nm[8] = {}, os[72] = {}, ns[72] = {}, kind = 'M';
                if (std::sscanf(meta.c_str(), ":%7s %7s %71s %71s %c", om, nm, os, ns, &kind) != 5) continue;
                Change c;
                c.path = parts[i + 1];
                c.old_mode = parse_mode(om);
                c.new_mode = parse_mode(nm);
                c.kind = kind == 'A' ? ChangeKind::added : kind == 'D' ? ChangeKind::deleted
                         : kind == 'T' ? ChangeKind::type_changed : ChangeKind::modified;
                std::string sha = ns;
                if (c.new_mode == kModeLink)
                    if (auto t = run_git(clone, {"cat-file", "blob", sha}); t && t->status == 0) c.link_target = t->out;
                if (c.new_mode == kModeFile || c.new_mode == kModeExec)
                    c.read_new = [clone, sha](std::size_t limit) -> std::optional<std::string> {
                        auto t = run_git(clone, {"cat-file", "blob", sha});
                        if (!t || t->status != 0) return std::nullopt;
                        if (t->out.size() > limit) t->out.resize(limit);
                        return std::move(t->out);
                    };
                rep.changes.push_back(std::move(c));
            }
        }
        auto found = classify(rep.changes);
        rep.flags.insert(rep.flags.end(), found.begin(), found.end());
        for (auto& c : rep.changes) c.read_new = nullptr;
    }

    // 5. Into the user's repository: objects checked by fsck, one new branch, no
    //    hook of theirs (reference-transaction) or ours run, nothing checked out.
    if (auto r = git_ok(clone, {"update-ref", "refs/agentjail/result", head}, "marking the result"); !r)
        return fail(r.error().message());
    Git user;
    user.git_dir = user_git_;
    user.safe_dirs = {user_git_, workspace_, clone_, clone_ + "/.git"};
    std::string branch = "agentjail/" + run_.id;
    auto f = git_ok(user,
                    {"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules",
                     "--no-auto-maintenance", "--", clone_ + "/.git",
                     "refs/agentjail/result:refs/heads/" + branch},
                    "fetching the work into " + util::printable(workspace_));
    if (!f) return fail(f.error().message());
    rep.branch = branch;
    rep.head = head;
    out.branch = branch;
    return done("ok", "");
}

}  // namespace agentjail::workspace
