// SPDX-License-Identifier: Apache-2.0
// Placeholders for guarded names that do not exist: created and removed on the host
// through fds, never through a name a sandbox of an earlier run could have turned
// into a link (THREATS FS-04).
#include "guard/placeholder.hpp"

#include "plan/staged_name.hpp"

#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace agentjail::guard {

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

}  // namespace

// The parents of the names, each reached from its root without following links:
// a borrowed fd, or -errno. One pass over a run's placeholders (they mostly lie in
// the workspace root) opens the root once and a parent again only when it changes;
// two descriptors at most, held for the pass only, never across the run.
class Parents {
public:
    int open(const std::string& root, const Split& s) {
        if (root != root_) {
            int r = sys::openat2(AT_FDCWD, root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                                 RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
            if (r < 0) return r;
            root_ = root;
            rootfd_.reset(r);
            parent_.clear();
            parentfd_.reset();
        }
        if (s.parent == ".") return rootfd_.get();
        if (s.parent != parent_ || !parentfd_) {
            int r = sys::openat2(rootfd_.get(), s.parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, kBeneath);
            if (r < 0) return r;
            parent_ = s.parent;
            parentfd_.reset(r);
        }
        return parentfd_.get();
    }

    // The pass's first socket placeholder, which the others are hard links of: one
    // inode made (and freed) a run instead of one a name, each of which costs an
    // allocation on the host's filesystem.
    struct Socket {
        sys::UniqueFd dir;  // its directory, held: the name is looked up in it alone
        std::string name;
        dev_t dev = 0;
        ino_t ino = 0;
    };
    const Socket* socket() const { return socket_.dir ? &socket_ : nullptr; }
    void keep_socket(int parent, const std::string& name, const struct stat& st) {
        socket_.dir.reset(::fcntl(parent, F_DUPFD_CLOEXEC, 0));
        socket_.name = name;
        socket_.dev = st.st_dev;
        socket_.ino = st.st_ino;
    }

private:
    std::string root_, parent_;
    sys::UniqueFd rootfd_, parentfd_;
    Socket socket_;
};

namespace {

// True when what now stands at host is the placeholder another run made for the
// same name: an empty directory of mode 0755, or a socket or empty file of mode 0444, owned
// by this user and reached without following a link. Sandboxes started at once in
// one workspace (a Slurm array, srun -n N, a CI matrix) plan the same placeholders;
// the one that comes second guards the first one's as an existing name, as its plan
// would have done had it looked a moment later. Anything else there (a link, a file
// with content) still fails the launch.
bool another_runs_placeholder(Parents& parents, const std::string& root, const std::string& host, bool is_dir) {
    Split s;
    if (!split(root, host, s)) return false;
    int parent = parents.open(root, s);
    if (parent < 0) return false;
    struct stat st {};
    if (::fstatat(parent, s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return false;
    if (st.st_uid != ::geteuid()) return false;
    if (is_dir) {
        // Any content: placeholders of other runs may have been made inside it, and
        // the whole directory is bound read-only, so nothing can be added below.
        return S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755;
    }
    return (S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)) && (st.st_mode & 07777) == 0444 && st.st_size == 0;
}

// Links name in parent to the pass's socket placeholder, never over anything there,
// and only as that same inode: the socket's name is looked up in its held directory
// alone (no path to redirect), and what the new name is afterwards is checked (had
// its name been swapped meanwhile, the link is undone). false: none made (no socket
// yet, another filesystem, a refusal): the caller makes one of its own.
bool linked_socket(Parents& parents, int parent, const std::string& name, struct stat& st) {
    const Parents::Socket* sock = parents.socket();
    if (sock == nullptr) return false;
    if (::linkat(sock->dir.get(), sock->name.c_str(), parent, name.c_str(), 0) != 0) return false;
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_dev == sock->dev && st.st_ino == sock->ino)
        return true;
    (void)::unlinkat(parent, name.c_str(), 0);
    return false;
}

// Makes `at` (host itself, or its staged name beside it) for the placeholder of host.
Result<Placeholder> make_at(Parents& parents, const std::string& root, const std::string& host,
                            const std::string& at, bool is_dir, bool socket) {
    Split s;
    if (!split(root, at, s)) return placeholder_error(EINVAL, host, "not beneath " + root);
    const int parent = parents.open(root, s);
    if (parent < 0) return placeholder_error(-parent, host, "opening its parent directory without following links");
    Placeholder p;
    p.host = host;
    p.is_dir = is_dir;
    const bool sock = !is_dir && socket;
    const mode_t mode = is_dir ? 0755 : 0444;
    sys::UniqueFd fd;
    struct stat st {};
    if (sock && linked_socket(parents, parent, s.name, st)) {
        // Another name of the pass's socket (its mode is the one checked when made).
    } else if (is_dir || sock) {
        // mknod never follows a link at the name and fails on anything there (as O_EXCL).
        if (is_dir ? ::mkdirat(parent, s.name.c_str(), mode) < 0
                   : ::mknodat(parent, s.name.c_str(), S_IFSOCK | mode, 0) < 0)
            return placeholder_error(errno, host, is_dir ? "mkdir" : "mknod (a socket file)");
        const int rm = is_dir ? AT_REMOVEDIR : 0;
        if (::fstatat(parent, s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            (is_dir ? !S_ISDIR(st.st_mode) : !S_ISSOCK(st.st_mode))) {
            int e = errno != 0 ? errno : EEXIST;
            (void)::unlinkat(parent, s.name.c_str(), rm);
            return placeholder_error(e, host, "look at what was created");
        }
        // The caller's umask took bits the docs promise: the directory made is put
        // right through its own fd (never through a name that could be a link now).
        if ((st.st_mode & 07777) != mode) {
            // A socket cannot be opened: an O_PATH fd of it, changed through
            // /proc/self/fd (fchmod refuses O_PATH), which follows no name.
            fd.reset(::openat(parent, s.name.c_str(),
                              (is_dir ? O_RDONLY | O_DIRECTORY : O_PATH) | O_NOFOLLOW | O_CLOEXEC));
            struct stat now {};
            if (!fd || ::fstat(fd.get(), &now) < 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev ||
                (is_dir ? ::fchmod(fd.get(), mode)
                        : ::chmod(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), mode)) < 0) {
                int e = errno != 0 ? errno : EEXIST;
                (void)::unlinkat(parent, s.name.c_str(), rm);
                return placeholder_error(e, host, "set the mode of what was created");
            }
        }
        if (sock && !parents.socket()) parents.keep_socket(parent, s.name, st);
    } else {
        // O_EXCL: never an existing file, and never through a link at the name.
        fd.reset(::openat(parent, s.name.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
        if (!fd) return placeholder_error(errno, host, "create");
        if (::fstat(fd.get(), &st) < 0) return placeholder_error(errno, host, "open what was created");
        if ((st.st_mode & 07777) != mode) (void)::fchmod(fd.get(), mode);
    }
    p.dev = st.st_dev;
    p.ino = st.st_ino;
    return p;
}

// What is at `at` now: ENOENT, or a kept reason, or "" with st filled.
enum class Found { gone, kept, there };
Found look(Parents& parents, const std::string& root, const std::string& at, Split& s, int& parent,
           struct stat& st, std::string& why) {
    if (!split(root, at, s)) {
        why = "not beneath " + root;
        return Found::kept;
    }
    parent = parents.open(root, s);
    if (parent < 0) {
        // A parent that is gone took the name with it.
        if (parent == -ENOENT) return Found::gone;
        why = "its parent directory cannot be opened without following links: " +
              util::errno_text(-parent);
        return Found::kept;
    }
    if (::fstatat(parent, s.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return Found::there;
    if (errno == ENOENT) return Found::gone;
    why = "stat: " + util::errno_text(errno);
    return Found::kept;
}

// Removes the empty file or directory at s.name in parent.
std::string remove_empty(int parent, const Split& s, const struct stat& st, bool is_dir) {
    if (is_dir) {
        if (::unlinkat(parent, s.name.c_str(), AT_REMOVEDIR) < 0)
            return errno == ENOTEMPTY || errno == EEXIST ? "not empty" : "rmdir: " + util::errno_text(errno);
        return {};
    }
    if (st.st_size != 0) return "not empty";
    if (::unlinkat(parent, s.name.c_str(), 0) < 0) return "unlink: " + util::errno_text(errno);
    return {};
}

std::string remove_one(Parents& parents, const Placeholder& p, const std::string& root) {
    // At its name, or (a launch killed before it renamed it) at its staged one: the
    // same inode either way, so another file at either name is never taken.
    std::string first_why;
    for (const std::string* at : {&p.host, &p.staged}) {
        if (at->empty()) continue;
        Split s;
        int parent = -1;
        struct stat st {};
        std::string why;
        Found f = look(parents, root, *at, s, parent, st, why);
        if (f == Found::gone) continue;
        if (f == Found::kept) {
            if (first_why.empty()) first_why = why;
            continue;
        }
        if (st.st_dev != p.dev || st.st_ino != p.ino) {
            if (at == &p.host && first_why.empty())
                first_why = "replaced by another file during the run";
            continue;
        }
        return remove_empty(parent, s, st, p.is_dir);
    }
    return first_why;
}

}  // namespace

Result<Placeholder> create_placeholder(const std::string& root, const std::string& host,
                                       bool is_dir, bool socket) {
    Parents parents;
    return make_at(parents, root, host, host, is_dir, socket);
}

std::string remove_placeholder(const Placeholder& p, const std::string& root) {
    Parents parents;
    return remove_one(parents, p, root);
}

std::string remove_staged(const std::string& root, const std::string& staged, bool is_dir) {
    Parents parents;
    Split s;
    int parent = -1;
    struct stat st {};
    std::string why;
    Found f = look(parents, root, staged, s, parent, st, why);
    if (f != Found::there) return why;
    // The name is the run's own; still, only what that run would have made is taken.
    if (st.st_uid != ::geteuid() ||
        (is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode) && !S_ISSOCK(st.st_mode)))
        return "not a placeholder of agentjail's";
    return remove_empty(parent, s, st, is_dir);
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

Result<std::vector<WantedPlaceholder>> wanted_placeholders(const plan::Plan& plan,
                                                           const std::string& tag) {
    std::vector<WantedPlaceholder> out;
    for (const auto& g : plan.guards) {
        bool want = g.placeholder;
        if (!want && g.kind == plan::Guard::Kind::protected_ro) {
            struct stat st {};
            want = ::lstat(g.host.c_str(), &st) != 0 && errno == ENOENT;
        }
        if (!want) continue;
        const std::string root = guard_root(plan, g.host);
        if (root.empty()) return placeholder_error(EINVAL, g.host, "it lies in no directory the sandbox binds");
        auto want_at = [&](const std::string& host, bool is_dir, bool socket) {
            if (std::any_of(out.begin(), out.end(), [&](const WantedPlaceholder& o) { return o.host == host; }))
                return;
            WantedPlaceholder w;
            w.root = root;
            w.host = host;
            w.is_dir = is_dir;
            w.socket = socket;
            w.staged = host.substr(0, host.rfind('/')) + "/" + plan::staged_name(tag, out.size());
            out.push_back(std::move(w));
        };
        // Its directory was there when the plan looked and is gone now (another run's
        // placeholder directory, removed at that run's end): made again as a
        // placeholder directory of this run, shallowest first, so the name has one.
        std::vector<std::string> missing;
        for (std::string dir = g.host.substr(0, g.host.rfind('/'));
             dir.size() > root.size() && util::path_within(dir, root); dir = dir.substr(0, dir.rfind('/'))) {
            struct stat st {};
            if (::lstat(dir.c_str(), &st) == 0 || errno != ENOENT) break;
            missing.push_back(dir);
        }
        for (auto it = missing.rbegin(); it != missing.rend(); ++it) want_at(*it, true, false);
        want_at(g.host, g.is_dir, g.socket);
    }
    return out;
}

std::vector<std::string> guard_roots(const plan::Plan& plan) {
    std::vector<std::string> out;
    for (const auto& g : plan.guards) {
        // Where placeholders can be: protected names (a hidden one that is gone is
        // simply not masked).
        if (!g.placeholder && g.kind != plan::Guard::Kind::protected_ro) continue;
        std::string r = guard_root(plan, g.host);
        if (!r.empty() && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(std::move(r));
    }
    return out;
}

Result<void> Placeholders::make(Parents& parents, const WantedPlaceholder& w) {
    auto p = make_at(parents, w.root, w.host, w.staged, w.is_dir, w.socket);
    if (!p) return std::move(p).error();  // the destructor removes those made so far
    p->staged = w.staged;
    adopt(std::move(*p), w.root);
    return {};
}

Result<Placeholders> Placeholders::stage(const std::vector<WantedPlaceholder>& wanted) {
    Placeholders out;
    Parents parents;
    for (const auto& w : wanted) {
        const std::string dir = w.host.substr(0, w.host.rfind('/'));
        // Only a directory this run also wants can be missing for a reason of ours:
        // the list first, the host only then (the launch path stays one lstat lighter
        // per placeholder).
        struct stat st {};
        const bool dir_waits = std::any_of(wanted.begin(), wanted.end(),
                                           [&](const WantedPlaceholder& o) { return o.is_dir && o.host == dir; }) &&
                               ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT;
        if (dir_waits) {
            out.waiting_.push_back(w);
            continue;
        }
        if (auto r = out.make(parents, w); !r) return std::move(r).error();
    }
    return out;
}

Result<std::size_t> Placeholders::stage_next() {
    std::vector<WantedPlaceholder> still;
    std::size_t made = 0;
    Parents parents;
    for (const auto& w : waiting_) {
        const std::string dir = w.host.substr(0, w.host.rfind('/'));
        const bool placed = std::any_of(items_.begin(), items_.end(), [&](const Placeholder& p) {
            return p.is_dir && p.host == dir && p.staged.empty();
        });
        if (!placed) {
            still.push_back(w);
            continue;
        }
        if (auto r = make(parents, w); !r) return std::move(r).error();
        ++made;
    }
    // A directory that never came (another run's in its place, ours removed): what
    // waited for it is made in that one, whose name now exists.
    if (made == 0 && !still.empty()) {
        for (const auto& w : still)
            if (auto r = make(parents, w); !r) return std::move(r).error();
        made = still.size();
        still.clear();
    }
    waiting_ = std::move(still);
    return made;
}

Result<bool> Placeholders::commit() {
    bool changed = false;
    Parents parents;
    for (size_t i = 0; i < items_.size(); ++i) {
        Placeholder& p = items_[i];
        if (p.staged.empty()) continue;
        Split from, to;
        if (!split(roots_[i], p.staged, from) || !split(roots_[i], p.host, to) ||
            from.parent != to.parent)
            return placeholder_error(EINVAL, p.host, "its staged name is not beside it");
        const int parent = parents.open(roots_[i], to);
        if (parent < 0)
            return placeholder_error(-parent, p.host,
                                     "opening its parent directory without following links");
        // Never over a name that exists (as O_EXCL was): one made meanwhile is an error.
        if (::renameat2(parent, from.name.c_str(), parent, to.name.c_str(),
                        RENAME_NOREPLACE) == 0) {
            p.staged.clear();
            continue;
        }
        // Another run's placeholder at the name (sandboxes started at once in one
        // workspace): guarded as it stands and left to that run; ours goes.
        if (errno == EEXIST && another_runs_placeholder(parents, roots_[i], p.host, p.is_dir)) {
            (void)::unlinkat(parent, from.name.c_str(), p.is_dir ? AT_REMOVEDIR : 0);
            items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
            roots_.erase(roots_.begin() + static_cast<std::ptrdiff_t>(i));
            --i;
            continue;
        }
        if (errno != EINVAL) return placeholder_error(errno, p.host, "rename into place");
        // No RENAME_NOREPLACE here (some network file systems): a file gets a second
        // link (which never replaces either), a directory is made anew at its name.
        if (!p.is_dir) {
            if (::linkat(parent, from.name.c_str(), parent, to.name.c_str(), 0) < 0)
                return placeholder_error(errno, p.host, "link into place");
            (void)::unlinkat(parent, from.name.c_str(), 0);
            p.staged.clear();
            continue;
        }
        auto made = make_at(parents, roots_[i], p.host, p.host, true, false);
        if (!made) return std::move(made).error();
        (void)::unlinkat(parent, from.name.c_str(), AT_REMOVEDIR);
        p.dev = made->dev;
        p.ino = made->ino;
        p.staged.clear();
        changed = true;
    }
    return changed;
}

Placeholders& Placeholders::operator=(Placeholders&& o) noexcept {
    if (this != &o) {
        std::vector<std::string> a, b, c;
        finish(a, b, c);
        items_ = std::move(o.items_);
        roots_ = std::move(o.roots_);
        waiting_ = std::move(o.waiting_);
        o.items_.clear();
        o.roots_.clear();
        o.waiting_.clear();
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

void Placeholders::absorb(Placeholders&& other) {
    for (size_t i = 0; i < other.items_.size(); ++i) adopt(std::move(other.items_[i]), std::move(other.roots_[i]));
    other.items_.clear();
    other.roots_.clear();
}

void Placeholders::finish(std::vector<std::string>& made, std::vector<std::string>& removed,
                          std::vector<std::string>& kept) {
    // Newest first: a placeholder made inside another is gone before its parent.
    for (const auto& it : items_) made.push_back(it.host);
    Parents parents;
    for (size_t i = items_.size(); i-- > 0;) {
        std::string why = remove_one(parents, items_[i], roots_[i]);
        if (why.empty())
            removed.push_back(items_[i].host);
        else
            kept.push_back(items_[i].host + ": " + why);
    }
    items_.clear();
    roots_.clear();
}

}  // namespace agentjail::guard
