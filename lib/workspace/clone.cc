// SPDX-License-Identifier: Apache-2.0
// Clone mode (clone.hpp). The sandbox writes only its clone; everything agentjail
// later does with the clone on the host treats it as hostile: its .git is walked
// without following links before git touches it, what the sandbox put in hooks,
// config, info/ and alternates is recorded and removed, the index it wrote is
// thrown away, and git runs with the fixed settings of git.hpp, so nothing from
// the clone executes on the host. The user's repository only receives objects
// (checked by fsck) and one new branch.
#include "workspace/clone.hpp"

#include "workspace/audit.hpp"

#include "base/time.hpp"

#include "sys/syscalls.hpp"
#include "util/strings.hpp"
#include "workspace/git.hpp"
#include "workspace/report.hpp"
#include "sys/state_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

namespace agentjail::workspace {

namespace {

constexpr std::uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

Error setup_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, "clone mode: " + what + ": " + util::errno_text(err));
}

Error refuse(const std::string& what) { return Error(ErrorKind::invalid_input, EINVAL, "clone mode: " + what); }


std::string trim_nl(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

Result<std::string> read_small(int dirfd, const char* name, size_t limit = 1 << 20) {
    int fd = ::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return setup_error(errno, name);
    sys::UniqueFd f(fd);
    struct stat st {};
    if (::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode)) return setup_error(EINVAL, name);
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(f.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
        if (out.size() > limit) break;
    }
    return out;
}

Result<void> replace_at(int dirfd, const char* name, const std::string& text, unsigned mode = 0644) {
    return sys::replace_file_at(dirfd, name, text, mode, std::string("clone mode: ") + name);
}

std::vector<std::string> split_nul(const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find('\0', i);
        if (j == std::string::npos) j = s.size();
        out.push_back(s.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

// Makes the directories of rel (all but its last component) under root, never
// through a link, and returns the parent's descriptor.
Result<sys::UniqueFd> make_parents(int root, const std::string& rel) {
    int cur = ::dup(root);
    if (cur < 0) return setup_error(errno, rel);
    sys::UniqueFd d(cur);
    size_t i = 0;
    for (;;) {
        size_t j = rel.find('/', i);
        if (j == std::string::npos) break;
        std::string comp = rel.substr(i, j - i);
        i = j + 1;
        if (comp.empty()) continue;
        if (::mkdirat(d.get(), comp.c_str(), 0755) != 0 && errno != EEXIST) return setup_error(errno, rel);
        int n = ::openat(d.get(), comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (n < 0) return setup_error(errno, rel);
        d.reset(n);
    }
    return d;
}

std::string base_name(const std::string& rel) {
    auto s = rel.rfind('/');
    return s == std::string::npos ? rel : rel.substr(s + 1);
}

std::string parent_of(const std::string& rel) {
    auto s = rel.rfind('/');
    return s == std::string::npos ? "" : rel.substr(0, s);
}

// Copies one entry of the user's work tree (src root fd) into the clone (dst root
// fd): regular files with their permission bits, links as links (never followed),
// directories (a submodule's place) as empty directories; anything else is skipped.
Result<void> copy_entry(int src_root, int dst_root, const std::string& rel) {
    std::string parent = parent_of(rel);
    int sp = sys::openat2(src_root, parent.empty() ? "." : parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, kBeneath);
    if (sp < 0) return {};  // gone, or under a link: nothing git would see there
    sys::UniqueFd sparent(sp);
    std::string name = base_name(rel);
    struct stat st {};
    if (::fstatat(sparent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};  // deleted: stays deleted
    auto dp = make_parents(dst_root, rel);
    if (!dp) return std::move(dp).error();
    if (S_ISLNK(st.st_mode)) {
        std::string target(static_cast<size_t>(st.st_size) + 256, '\0');
        ssize_t n = ::readlinkat(sparent.get(), name.c_str(), target.data(), target.size());
        if (n < 0) return {};
        target.resize(static_cast<size_t>(n));
        if (::symlinkat(target.c_str(), dp->get(), name.c_str()) != 0 && errno != EEXIST)
            return setup_error(errno, "copy " + util::printable(rel));
        return {};
    }
    if (S_ISDIR(st.st_mode)) {
        if (::mkdirat(dp->get(), name.c_str(), 0755) != 0 && errno != EEXIST)
            return setup_error(errno, "copy " + util::printable(rel));
        return {};
    }
    if (!S_ISREG(st.st_mode)) return {};
    int in = ::openat(sparent.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0) return {};
    sys::UniqueFd src(in);
    int out = ::openat(dp->get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       st.st_mode & 0777);
    if (out < 0) return setup_error(errno, "copy " + util::printable(rel));
    sys::UniqueFd dst(out);
    off_t left = st.st_size;
    while (left > 0) {
        ssize_t n = ::copy_file_range(src.get(), nullptr, dst.get(), nullptr, static_cast<size_t>(left), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // shrank meanwhile, or copy_file_range unsupported: fall back below
        left -= n;
    }
    if (left > 0) {
        char buf[65536];
        for (;;) {
            ssize_t n = ::read(src.get(), buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            if (::write(dst.get(), buf, static_cast<size_t>(n)) != n)
                return setup_error(errno, "copy " + util::printable(rel));
        }
    }
    (void)::fchmod(dst.get(), st.st_mode & 0777);
    return {};
}

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

}  // namespace

std::string neutral_git_config(bool sha256) {
    // Only what a non-bare repository needs; no remote (the clone has no way out
    // anyway), no identity, no filter, nothing that names a program.
    std::string s = "[core]\n\trepositoryformatversion = " + std::string(sha256 ? "1" : "0") +
                    "\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
    if (sha256) s += "[extensions]\n\tobjectformat = sha256\n";
    return s;
}

Result<std::unique_ptr<CloneRun>> CloneRun::prepare(const plan::Plan& plan, const CloneOptions& opt) {
    const std::string ws = plan.workspace;
    if (ws.empty()) return refuse("there is no workspace to clone (clone mode needs one)");
    // The repository: the workspace's own .git (a directory, or a file naming the
    // git dir of a worktree or submodule). Found here rather than by git's
    // discovery, which would also accept a parent directory's repository.
    sys::UniqueFd wsfd(::open(ws.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!wsfd) return setup_error(errno, "workspace " + ws);
    std::string git_dir;
    struct stat st {};
    if (::fstatat(wsfd.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        git_dir = ws + "/.git";
    } else if (::fstatat(wsfd.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        auto text = read_small(wsfd.get(), ".git", 4096);
        if (!text || !util::starts_with(*text, "gitdir: "))
            return refuse(ws + "/.git is a file but not a gitdir link");
        std::string d = trim_nl(text->substr(8));
        git_dir = d.size() && d[0] == '/' ? d : ws + "/" + d;
    } else {
        std::string up = ws;
        while (up.size() > 1) {
            up = up.substr(0, std::max<size_t>(up.rfind('/'), 1));
            if (::lstat((up + "/.git").c_str(), &st) == 0)
                return refuse("the workspace " + util::printable(ws) + " is inside the git repository " +
                              util::printable(up) + ": clone mode clones a whole repository; run it from its top "
                              "level (-C " + util::printable(up) + ")");
        }
        return refuse("the workspace " + util::printable(ws) +
                      " is not a git repository: clone mode needs one (git init it), or use "
                      "--workspace-mode overlay");
    }
    Git user;
    user.git_dir = git_dir;
    user.work_tree = ws;
    user.safe_dirs = {ws, git_dir};
    auto common = git_ok(user, {"rev-parse", "--git-common-dir"}, "reading the repository");
    if (!common) return std::move(common).error();
    std::string common_dir = trim_nl(*common);
    if (!common_dir.empty() && common_dir[0] != '/') common_dir = git_dir + "/" + common_dir;
    common_dir = util::normalize_path(common_dir);

    auto run = std::unique_ptr<CloneRun>(new CloneRun());
    run->opt_ = opt;
    run->root_ = plan.run_dir.substr(0, plan.run_dir.rfind('/'));
    run->workspace_ = ws;
    run->user_git_ = common_dir;
    auto fmt = run_git(user, {"rev-parse", "--show-object-format"});
    run->sha256_ = fmt && fmt->status == 0 && trim_nl(fmt->out) == "sha256";
    if (auto r = run_git(user, {"symbolic-ref", "-q", "HEAD"}); r && r->status == 0)
        run->head_ref_ = trim_nl(r->out);
    if (auto r = run_git(user, {"rev-parse", "-q", "--verify", "HEAD^{commit}"}); r && r->status == 0)
        run->base_ = trim_nl(r->out);
    // Hidden paths under the workspace (the plan masks them): not copied in, and
    // never carried back by the commit of uncommitted work.
    for (const auto& m : plan.mounts)
        if ((m.kind == plan::MountKind::mask_file || m.kind == plan::MountKind::mask_dir) &&
            m.dst != ws && util::path_within(m.dst, ws))
            run->hidden_.push_back(m.dst.substr(ws.size() + 1));

    auto rd = create_planned_run(plan);
    if (!rd) return std::move(rd).error();
    run->run_ = std::move(*rd);
    run->clone_ = plan.run_dir + "/clone";
    run->rec_.id = run->run_.id;
    run->rec_.mode = "clone";
    run->rec_.workspace = ws;
    run->rec_.repo = common_dir;
    run->rec_.branch = "agentjail/" + run->run_.id;
    run->rec_.base = run->base_;
    run->rec_.started = base::iso8601_now();
    run->rec_.status = "preparing";
    if (auto r = write_record(run->run_, run->rec_); !r) return std::move(r).error();

    // An empty template: no sample hooks, no info/exclude, nothing copied from
    // /usr/share/git-core/templates or init.templateDir.
    if (::mkdirat(run->run_.fd.get(), "template", 0700) != 0) return setup_error(errno, "template directory");
    Git fresh;
    fresh.git_dir = run->clone_ + "/.git";
    fresh.safe_dirs = {common_dir, run->clone_};
    // --bare: every branch and tag as the same refs; --no-hardlinks: the clone's
    // objects are copies, so whatever the sandbox does to them never reaches the
    // user's object files.
    if (auto r = git_ok(fresh,
                        {"clone", "-q", "--bare", "--no-hardlinks", "--template=" + run->run_.path + "/template",
                         "--", common_dir, run->clone_ + "/.git"},
                        "cloning " + util::printable(ws));
        !r)
        return std::move(r).error();
    sys::UniqueFd clonefd(::openat(run->run_.fd.get(), "clone", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!clonefd) return setup_error(errno, "clone directory");
    sys::UniqueFd gitfd(::openat(clonefd.get(), ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!gitfd) return setup_error(errno, "clone's .git");
    run->neutral_config_ = neutral_git_config(run->sha256_);
    if (auto r = replace_at(gitfd.get(), "config", run->neutral_config_); !r) return std::move(r).error();
    Git clone;
    clone.git_dir = run->clone_ + "/.git";
    clone.work_tree = run->clone_;
    clone.safe_dirs = {run->clone_};
    // Objects borrowed from the user's alternates would be out of the sandbox's
    // reach: copy them in and drop the link.
    if (::faccessat(gitfd.get(), "objects/info/alternates", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        if (auto r = git_ok(clone, {"repack", "-a", "-d", "-q"}, "copying borrowed objects"); !r)
            return std::move(r).error();
        ::unlinkat(gitfd.get(), "objects/info/alternates", 0);
    }
    // HEAD where the user's is: their branch (or commit, detached).
    if (!run->head_ref_.empty()) {
        if (auto r = git_ok(clone, {"symbolic-ref", "HEAD", run->head_ref_}, "setting HEAD"); !r)
            return std::move(r).error();
    } else if (!run->base_.empty()) {
        if (auto r = git_ok(clone, {"update-ref", "--no-deref", "HEAD", run->base_}, "setting HEAD"); !r)
            return std::move(r).error();
    }
    if (!run->base_.empty())
        if (auto r = git_ok(clone, {"read-tree", "HEAD"}, "the clone's index"); !r) return std::move(r).error();

    // The work tree as it is now: tracked and untracked files that are not ignored.
    auto files = git_ok(user, {"ls-files", "-z", "--cached", "--others", "--exclude-standard"}, "listing the work tree");
    if (!files) return std::move(files).error();
    std::set<std::string> seen;
    for (auto& rel : split_nul(*files)) {
        if (rel.empty() || !seen.insert(rel).second) continue;
        bool hidden = false;
        for (const auto& h : run->hidden_)
            if (rel == h || util::starts_with(rel, h + "/")) hidden = true;
        if (hidden) continue;
        if (auto r = copy_entry(wsfd.get(), clonefd.get(), rel); !r) return std::move(r).error();
    }
    // The starting point of the report: the copied work tree as a tree, hashed into
    // the clone with an index of our own (outside what the sandbox sees).
    Git start = clone;
    start.index_file = run->run_.path + "/start.index";
    if (!run->base_.empty())
        if (auto r = git_ok(start, {"read-tree", "HEAD"}, "the starting tree"); !r) return std::move(r).error();
    std::vector<std::string> add = {"add", "-A", "--", "."};
    for (const auto& h : run->hidden_) add.push_back(":(exclude,literal)" + h);
    if (auto r = git_ok(start, add, "the starting tree"); !r) return std::move(r).error();
    auto tree = git_ok(start, {"write-tree"}, "the starting tree");
    if (!tree) return std::move(tree).error();
    run->start_tree_ = trim_nl(*tree);
    // The clone's own index: the same entries, reset to HEAD, so the stat data of
    // every file the copy left as it is in HEAD is already there and the agent's
    // first `git status` does not hash the whole tree again. start.index stays
    // (outside the sandbox's reach) for the commit of its work after the run.
    if (!run->base_.empty()) {
        auto idx = read_small(run->run_.fd.get(), "start.index", 1u << 30);
        if (idx && replace_at(gitfd.get(), "index", *idx, 0644))
            (void)run_git(clone, {"reset", "-q", "--no-refresh"});
    }

    run->rec_.status = "running";
    if (auto r = write_record(run->run_, run->rec_); !r) return std::move(r).error();
    return run;
}

void CloneRun::write_state(const std::string& status, const std::string& message, const std::string& report_json,
                           std::size_t flags, bool ended) {
    rec_.status = status;
    rec_.message = message;
    rec_.report_json = report_json;
    rec_.flags = flags;
    if (ended) rec_.ended = base::iso8601_now();
    (void)write_record(run_, rec_);
}

CloneRun::~CloneRun() {
    if (!run_.fd) return;
    if (!launched_) {
        // Nothing ran: nothing of the run is worth keeping.
        run_.fd.reset();
        (void)remove_run(root_, run_.id);
    } else if (!finished_) {
        write_state("failed", "the sandbox was dropped before it was waited for; the clone is kept in " + clone_,
                    "", 0, true);
    }
}

// What the sandbox did to the clone's .git, walked without following anything.
struct CloneRun::Audit {
    std::vector<Flag> flags;
    std::string refused;  // non-empty: git must not touch this .git
    std::vector<std::string> remove;  // paths relative to .git to delete
};

namespace {

void walk_git(int dirfd, const std::string& rel, int depth, std::vector<Flag>& flags, std::string& refused,
              std::vector<std::string>& remove) {
    if (!refused.empty()) return;
    if (depth > 64) {
        refused = ".git is nested deeper than git would make it (" + util::printable(rel) + ")";
        return;
    }
    int dfd = ::dup(dirfd);
    DIR* d = dfd < 0 ? nullptr : ::fdopendir(dfd);
    if (!d) {
        if (dfd >= 0) ::close(dfd);
        refused = "cannot read .git/" + util::printable(rel);
        return;
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
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
    int dfd = ::dup(dirfd);
    DIR* d = dfd < 0 ? nullptr : ::fdopendir(dfd);
    if (!d) {
        if (dfd >= 0) ::close(dfd);
        return;
    }
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    for (const auto& n : names) {
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
