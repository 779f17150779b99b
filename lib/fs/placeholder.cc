// SPDX-License-Identifier: Apache-2.0
// Placeholders for guarded names that do not exist: created and removed on the host
// through fds, never through a name a sandbox of an earlier run could have turned
// into a link (THREATS FS-04).
#include "fs/placeholder.hpp"

#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace agentjail::fs {

namespace {

constexpr std::uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

Error placeholder_error(int err, const std::string& host, const std::string& what) {
    return Error(ErrorKind::setup, err,
                 "placeholder " + host + ": " + what + ": " + util::errno_text(err) +
                     " (a protected name that does not exist is created empty for the run, so the "
                     "sandbox cannot create it; agentjail will not run without it)");
}

struct Split {
    std::string parent;  // relative to root, "." for root itself
    std::string name;
};

bool split(const std::string& root, const std::string& host, Split& out) {
    if (root.empty() || host == root || !util::path_within(host, root)) return false;
    std::string rel = root == "/" ? host.substr(1) : host.substr(root.size() + 1);
    auto slash = rel.rfind('/');
    out.parent = slash == std::string::npos ? "." : rel.substr(0, slash);
    out.name = slash == std::string::npos ? rel : rel.substr(slash + 1);
    return !out.name.empty() && out.name != "." && out.name != "..";
}

// The parent of the name, reached from root without following links.
int open_parent(const std::string& root, const Split& s) {
    int r = sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                         RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (r < 0) return r;
    sys::UniqueFd rootfd(r);
    return sys::openat2(rootfd.get(), s.parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, kBeneath);
}

// True when what now stands at host is the placeholder another run made for the
// same name: an empty directory of mode 0755, or an empty file of mode 0444, owned
// by this user and reached without following a link. Sandboxes started at once in
// one workspace (a Slurm array, srun -n N, a CI matrix) plan the same placeholders;
// the one that comes second guards the first one's as an existing name, as its plan
// would have done had it looked a moment later. Anything else there (a link, a file
// with content) still fails the launch.
bool another_runs_placeholder(const std::string& root, const std::string& host, bool is_dir) {
    Split s;
    if (!split(root, host, s)) return false;
    int pfd = open_parent(root, s);
    if (pfd < 0) return false;
    sys::UniqueFd parent(pfd);
    struct stat st {};
    if (::fstatat(parent.get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return false;
    if (st.st_uid != ::geteuid()) return false;
    if (is_dir) {
        // nlink 2: no subdirectory; the listing is checked by the run that made it.
        return S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755 && st.st_nlink == 2;
    }
    return S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0444 && st.st_size == 0;
}

}  // namespace

Result<Placeholder> create_placeholder(const std::string& root, const std::string& host, bool is_dir) {
    Split s;
    if (!split(root, host, s)) return placeholder_error(EINVAL, host, "not beneath " + root);
    int pfd = open_parent(root, s);
    if (pfd < 0) return placeholder_error(-pfd, host, "opening its parent directory without following links");
    sys::UniqueFd parent(pfd);
    Placeholder p;
    p.host = host;
    p.is_dir = is_dir;
    sys::UniqueFd fd;
    if (is_dir) {
        if (::mkdirat(parent.get(), s.name.c_str(), 0755) < 0) return placeholder_error(errno, host, "mkdir");
        fd.reset(::openat(parent.get(), s.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    } else {
        // O_EXCL: never an existing file, and never through a link at the name.
        fd.reset(::openat(parent.get(), s.name.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          0444));
        if (!fd) return placeholder_error(errno, host, "create");
    }
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) < 0) {
        int e = errno;
        if (is_dir) (void)::unlinkat(parent.get(), s.name.c_str(), AT_REMOVEDIR);
        return placeholder_error(e, host, "open what was created");
    }
    // The caller's umask must not change the mode the docs promise.
    (void)::fchmod(fd.get(), is_dir ? 0755 : 0444);
    p.dev = st.st_dev;
    p.ino = st.st_ino;
    return p;
}

std::string remove_placeholder(const Placeholder& p, const std::string& root) {
    Split s;
    if (!split(root, p.host, s)) return "not beneath " + root;
    int pfd = open_parent(root, s);
    if (pfd < 0) return "its parent directory cannot be opened without following links: " + util::errno_text(-pfd);
    sys::UniqueFd parent(pfd);
    struct stat st {};
    if (::fstatat(parent.get(), s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? std::string() : "stat: " + util::errno_text(errno);
    if (st.st_dev != p.dev || st.st_ino != p.ino) return "replaced by another file during the run";
    if (p.is_dir) {
        if (::unlinkat(parent.get(), s.name.c_str(), AT_REMOVEDIR) < 0)
            return errno == ENOTEMPTY || errno == EEXIST ? "not empty" : "rmdir: " + util::errno_text(errno);
        return {};
    }
    if (st.st_size != 0) return "not empty";
    if (::unlinkat(parent.get(), s.name.c_str(), 0) < 0) return "unlink: " + util::errno_text(errno);
    return {};
}

std::string guard_root(const plan::Plan& plan, const std::string& host) {
    if (!plan.workspace.empty() && host != plan.workspace && util::path_within(host, plan.workspace))
        return plan.workspace;
    std::string best;
    for (const auto& m : plan.mounts) {
        if (m.kind != plan::MountKind::bind || !m.is_dir || m.src == host) continue;
        if (util::path_within(host, m.src) && m.src.size() > best.size()) best = m.src;
    }
    return best;
}

Result<Placeholders> Placeholders::create(const plan::Plan& plan) {
    Placeholders out;
    for (const auto& g : plan.guards) {
        if (!g.placeholder) continue;
        std::string root = guard_root(plan, g.host);
        if (root.empty()) return placeholder_error(EINVAL, g.host, "it lies in no directory the sandbox binds");
        auto p = create_placeholder(root, g.host, g.is_dir);
        // Another run's: guarded as it stands, and left to that run to remove.
        if (!p && p.error().code() == EEXIST && another_runs_placeholder(root, g.host, g.is_dir))
            continue;
        if (!p) return std::move(p).error();  // `out` removes those made so far
        out.adopt(std::move(*p), std::move(root));
    }
    return out;
}

Placeholders& Placeholders::operator=(Placeholders&& o) noexcept {
    if (this != &o) {
        std::vector<std::string> a, b, c;
        finish(a, b, c);
        items_ = std::move(o.items_);
        roots_ = std::move(o.roots_);
        o.items_.clear();
        o.roots_.clear();
    }
    return *this;
}

Placeholders::~Placeholders() {
    std::vector<std::string> a, b, c;
    finish(a, b, c);
}

void Placeholders::adopt(Placeholder p, std::string root) {
    items_.push_back(std::move(p));
    roots_.push_back(std::move(root));
}

void Placeholders::finish(std::vector<std::string>& made, std::vector<std::string>& removed,
                          std::vector<std::string>& kept) {
    // Newest first: a placeholder made inside another is gone before its parent.
    for (const auto& it : items_) made.push_back(it.host);
    for (size_t i = items_.size(); i-- > 0;) {
        std::string why = remove_placeholder(items_[i], roots_[i]);
        if (why.empty())
            removed.push_back(items_[i].host);
        else
            kept.push_back(items_[i].host + ": " + why);
    }
    items_.clear();
    roots_.clear();
}

}  // namespace agentjail::fs
