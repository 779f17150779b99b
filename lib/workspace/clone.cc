// SPDX-License-Identifier: Apache-2.0
// Clone mode (clone.hpp), before the run: the clone of the user's repository, made
// where the plan binds the workspace from, with a neutral config and a copy of the
// work tree; what the sandbox does to it is audited after the run (clone_finish.cc),
// where everything agentjail does with the clone on the host treats it as hostile.
#include "workspace/clone.hpp"

#include "workspace/clone_internal.hpp"

#include "base/time.hpp"

#include "sys/syscalls.hpp"
#include "util/strings.hpp"
#include "workspace/git.hpp"
#include "sys/state_dir.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>

namespace agentjail::workspace {

using namespace detail;  // clone_internal.hpp

namespace {

constexpr std::uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

Error setup_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, "clone mode: " + what + ": " + util::errno_text(err));
}

Error refuse(const std::string& what) { return Error(ErrorKind::invalid_input, EINVAL, "clone mode: " + what); }

}  // namespace

namespace detail {

std::string trim_nl(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

Result<std::string> read_small(int dirfd, const char* name, size_t limit) {
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

Result<void> replace_at(int dirfd, const char* name, const std::string& text, unsigned mode) {
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

std::string base_name(const std::string& rel) {
    auto s = rel.rfind('/');
    return s == std::string::npos ? rel : rel.substr(s + 1);
}

}  // namespace detail

namespace {

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

bool is_hidden(const std::vector<std::string>& hidden, const std::string& rel) {
    return std::any_of(hidden.begin(), hidden.end(), [&](const std::string& h) { return util::path_within(rel, h); });
}

}  // namespace

// The clone's work tree as the user's is now, for what it costs to change, not to
// copy: what HEAD has is checked out by git from the clone's objects (one pack, read
// in order, and the index gets each file's stat data, so nothing is hashed again);
// then only what the user's git lists as changed, deleted, untracked or staged (from
// its index and that index's stat data), what git would not check out as the
// user has it (a path with a filter, ident, eol or working-tree-encoding attribute:
// an LFS file, CRLF endings), and what came out another size than the user's copy
// (a global core.autocrlf agentjail's git does not read) is copied from the user's.
// Hidden paths are neither checked out nor copied.
Result<void> CloneRun::fill_work_tree(const Git& user, const Git& clone, int wsfd, int clonefd) {
    std::vector<std::string> tracked;
    if (!base_.empty()) {
        auto listed = git_ok(clone, {"ls-files", "-z", "--cached"}, "listing HEAD's files");
        if (!listed) return std::move(listed).error();
        for (auto& rel : detail::split_nul(*listed))
            if (!rel.empty() && !is_hidden(hidden_, rel)) tracked.push_back(std::move(rel));
    }
    std::set<std::string> copy;
    if (!tracked.empty()) {
        std::string paths;
        for (const auto& rel : tracked) paths += rel + '\0';
        auto attrs = git_ok(clone, {"check-attr", "-z", "--cached", "--stdin", "filter", "ident", "eol",
                                    "working-tree-encoding"},
                            "reading HEAD's attributes", &paths);
        if (!attrs) return std::move(attrs).error();
        const auto fields = detail::split_nul(*attrs);  // path, attribute, value, ...
        for (size_t i = 0; i + 2 < fields.size(); i += 3)
            if (fields[i + 2] != "unspecified" && fields[i + 2] != "unset") copy.insert(fields[i]);
        std::string out;
        for (const auto& rel : tracked)
            if (!copy.count(rel)) out += rel + '\0';
        // -u: the index gets the stat data of each file written.
        if (auto r = git_ok(clone, {"checkout-index", "-f", "-u", "-z", "--stdin"}, "checking out HEAD", &out); !r)
            return std::move(r).error();
        for (const auto& rel : tracked) {
            if (copy.count(rel)) continue;
            // Only compared (a link on the way leads the user's stat astray, and then
            // the copy, which never follows one, decides).
            struct stat mine {}, theirs {};
            if (::fstatat(clonefd, rel.c_str(), &mine, AT_SYMLINK_NOFOLLOW) != 0 ||
                ::fstatat(wsfd, rel.c_str(), &theirs, AT_SYMLINK_NOFOLLOW) != 0 || mine.st_size != theirs.st_size ||
                (mine.st_mode & S_IFMT) != (theirs.st_mode & S_IFMT))
                copy.insert(rel);
        }
    }
    auto changed = git_ok(user, {"ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard"},
                          "listing the work tree's changes");
    if (!changed) return std::move(changed).error();
    // And what the user staged (their index against HEAD, or all of it before the
    // first commit): a file added and not changed since is none of the above.
    auto staged = base_.empty()
                      ? git_ok(user, {"ls-files", "-z", "--cached"}, "listing the staged files")
                      : git_ok(user, {"diff-index", "--cached", "--name-only", "--no-renames", "-z", base_},
                               "listing the staged changes");
    if (!staged) return std::move(staged).error();
    for (const std::string* list : {&*changed, &*staged})
        for (auto& rel : detail::split_nul(*list))
            if (!rel.empty() && !is_hidden(hidden_, rel)) copy.insert(std::move(rel));
    // What HEAD's checkout left at those paths goes first (and the folders that
    // leaves empty): the user's copy replaces it, or its absence does.
    for (const auto& rel : copy) {
        for (std::string at = rel; !at.empty();) {
            const std::string up = parent_of(at);
            sys::UniqueFd dir(sys::openat2(clonefd, up.empty() ? "." : up.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                                           kBeneath));
            if (!dir) break;
            const std::string name = detail::base_name(at);
            if (::unlinkat(dir.get(), name.c_str(), at == rel ? 0 : AT_REMOVEDIR) != 0 && at != rel) break;
            at = up;
        }
    }
    for (const auto& rel : copy)
        if (auto r = copy_entry(wsfd, clonefd, rel); !r) return std::move(r).error();
    return {};
}

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
    if (auto r = run->fill_work_tree(user, clone, wsfd.get(), clonefd.get()); !r) return std::move(r).error();
    // Started in a subdirectory with nothing git lists (empty, or ignored files
    // only): made in the clone too, so the command starts there as in the others.
    if (!plan.started_in.empty() && util::path_within(plan.started_in, ws) && plan.started_in != ws)
        if (auto r = make_parents(clonefd.get(), plan.started_in.substr(ws.size() + 1) + "/"); !r)
            return std::move(r).error();
    // The starting point of the report: the copied work tree as a tree, hashed into
    // the clone with an index of our own (outside what the sandbox sees).
    // It starts as the clone's index, which the checkout gave every file's stat data:
    // only what was copied in is hashed.
    Git start = clone;
    start.index_file = run->run_.path + "/start.index";
    if (!run->base_.empty()) {
        auto idx = read_small(gitfd.get(), "index", 1u << 30);
        if (!idx || !sys::replace_file_at(run->run_.fd.get(), "start.index", *idx, 0600, "clone mode: start.index"))
            if (auto r = git_ok(start, {"read-tree", "HEAD"}, "the starting tree"); !r) return std::move(r).error();
    }
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

}  // namespace agentjail::workspace
