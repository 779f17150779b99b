// SPDX-License-Identifier: Apache-2.0
// `agentjail apply`: an overlay run's change set written into the workspace. Every
// path is opened beneath the workspace without following a link, so a link the
// workspace holds (or gained since the run) can never carry a write elsewhere.
#include "workspace/overlay.hpp"

#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"
#include "sys/state_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

namespace agentjail::workspace {

namespace {

// Beneath the directory, no link of any kind on the way.
constexpr std::uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

std::string why_errno(int err) {
    if (err == ELOOP || err == EXDEV)
        return "a component of the path is a symlink (or leaves the workspace): refused, not followed";
    return util::errno_text(err);
}

std::int64_t ns(const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

std::string parent_of(const std::string& p) {
    auto slash = p.rfind('/');
    return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

std::string name_of(const std::string& p) {
    auto slash = p.rfind('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

// A change set's path: relative, no empty, "." or ".." component.
bool well_formed(const std::string& p) {
    if (p.empty() || p[0] == '/' || p.back() == '/') return false;
    size_t i = 0;
    while (i <= p.size()) {
        size_t j = p.find('/', i);
        if (j == std::string::npos) j = p.size();
        std::string_view part(p.data() + i, j - i);
        if (part.empty() || part == "." || part == "..") return false;
        i = j + 1;
    }
    return true;
}

// The directory holding p, opened beneath root: -errno on failure.
int open_parent(int root, const std::string& p) {
    const std::string parent = parent_of(p);
    return sys::openat2(root, parent.empty() ? "." : parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, kBeneath);
}

// Count and newest ctime of everything below a directory (Stamp::tree_*).
void tree_stamp(int dirfd, std::uint64_t dev, std::uint64_t& count, std::int64_t& newest) {
    int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    DIR* d = ::fdopendir(fd);
    if (d == nullptr) {
        ::close(fd);
        return;
    }
    while (const dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        ++count;
        newest = std::max(newest, ns(st.st_ctim));
        if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
            int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                tree_stamp(sub, dev, count, newest);
                ::close(sub);
            }
        }
    }
    ::closedir(d);
}

// Setuid and setgid bits never come back from the sandbox.
mode_t safe_mode(unsigned m) { return static_cast<mode_t>(m & 01777); }

// Empty: the host's path is as it was when the run started; else why not.
std::string conflict(int ws, const LayerChange& c) {
    sys::UniqueFd parent(open_parent(ws, c.path));
    struct stat st {};
    bool exists = false;
    if (parent) {
        exists = ::fstatat(parent.get(), name_of(c.path).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    } else if (parent.get() != -ENOENT) {
        // A link in the way is reported when the change is made; nothing to compare.
        return {};
    }
    if (!c.base) return exists ? "created on the host since the run started" : std::string();
    const Stamp& b = *c.base;
    if (b == kChangedDuringRun) return "changed on the host during the run";
    if (!exists) return "deleted on the host since the run started";
    if (st.st_dev != b.dev || st.st_ino != b.ino || st.st_mode != b.mode)
        return "replaced on the host since the run started";
    if (S_ISDIR(st.st_mode)) {
        // A directory's own times move with its entries; only a deleted tree asks
        // whether anything in it changed.
        if (c.kind != LayerChange::Kind::deleted || c.type != LayerChange::Type::dir) return {};
        sys::UniqueFd d(::openat(parent.get(), name_of(c.path).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!d) return "cannot be read on the host: " + util::errno_text(errno);
        std::uint64_t count = 0;
        std::int64_t newest = 0;
        tree_stamp(d.get(), st.st_dev, count, newest);
        if (count != b.tree_count || newest != b.tree_ctime_ns) return "its contents changed on the host since the run started";
        return {};
    }
    if (static_cast<std::uint64_t>(st.st_size) != b.size || ns(st.st_mtim) != b.mtime_ns || ns(st.st_ctim) != b.ctime_ns)
        return "changed on the host since the run started";
    return {};
}

// Whether the workspace already shows what the change would make (an earlier
// apply that left other changes out, or the user made it by hand).
bool already_done(int ws, int upper, const LayerChange& c) {
    sys::UniqueFd parent(open_parent(ws, c.path));
    if (!parent) return false;
    const std::string name = name_of(c.path);
    struct stat st {};
    if (::fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT && c.kind == LayerChange::Kind::deleted;
    if (c.kind == LayerChange::Kind::deleted) return false;
    switch (c.type) {
    case LayerChange::Type::dir: return S_ISDIR(st.st_mode) && (st.st_mode & 07777) == safe_mode(c.mode);
    case LayerChange::Type::symlink: {
        if (!S_ISLNK(st.st_mode)) return false;
        char buf[PATH_MAX];
        ssize_t n = ::readlinkat(parent.get(), name.c_str(), buf, sizeof buf);
        return n >= 0 && std::string(buf, static_cast<size_t>(n)) == c.target;
    }
    case LayerChange::Type::file: {
        if (!S_ISREG(st.st_mode) || (st.st_mode & 07777) != safe_mode(c.mode)) return false;
        sys::UniqueFd a(sys::openat2(upper, c.path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, kBeneath));
        sys::UniqueFd b(::openat(parent.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
        if (!a || !b) return false;
        struct stat sa {};
        if (::fstat(a.get(), &sa) != 0 || sa.st_size != st.st_size) return false;
        std::vector<char> ba(1 << 16), bb(1 << 16);
        for (;;) {
            ssize_t na = ::read(a.get(), ba.data(), ba.size());
            ssize_t nb = ::read(b.get(), bb.data(), bb.size());
            if (na < 0 || nb < 0 || na != nb) return false;
            if (na == 0) return true;
            if (std::memcmp(ba.data(), bb.data(), static_cast<size_t>(na)) != 0) return false;
        }
    }
    case LayerChange::Type::other: return false;
    }
    return false;
}

std::string temp_name() {
    unsigned char b[8];
    if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b))
        for (auto& x : b) x = static_cast<unsigned char>(::rand());
    static const char hex[] = "0123456789abcdef";
    std::string s = ".agentjail-apply-";
    for (unsigned char x : b) {
        s += hex[x >> 4];
        s += hex[x & 15];
    }
    return s;
}

int write_file(int parent, int upper, const LayerChange& c) {
    sys::UniqueFd src(sys::openat2(upper, c.path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, kBeneath));
    if (!src) return src.get();
    struct stat st {};
    if (::fstat(src.get(), &st) != 0) return -errno;
    if (!S_ISREG(st.st_mode)) return -EINVAL;  // the upper layer changed under us
    const std::string tmp = temp_name();
    sys::UniqueFd dst(::openat(parent, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!dst) return -errno;
    int r = 0;
    std::vector<char> buf(1 << 16);
    for (;;) {
        ssize_t n = ::read(src.get(), buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            r = -errno;
            break;
        }
        if (n == 0) break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = ::write(dst.get(), buf.data() + off, static_cast<size_t>(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                r = w < 0 ? -errno : -EIO;
                break;
            }
            off += w;
        }
        if (r != 0) break;
    }
    if (r == 0 && ::fchmod(dst.get(), safe_mode(c.mode)) != 0) r = -errno;
    if (r == 0 && ::fsync(dst.get()) != 0) r = -errno;
    if (r == 0 && ::renameat(parent, tmp.c_str(), parent, name_of(c.path).c_str()) != 0) r = -errno;
    if (r != 0) ::unlinkat(parent, tmp.c_str(), 0);
    return r;
}

int write_symlink(int parent, const LayerChange& c) {
    const std::string tmp = temp_name();
    if (::symlinkat(c.target.c_str(), parent, tmp.c_str()) != 0) return -errno;
    if (::renameat(parent, tmp.c_str(), parent, name_of(c.path).c_str()) != 0) {
        int e = errno;
        ::unlinkat(parent, tmp.c_str(), 0);
        return -e;
    }
    return 0;
}

// chmod of exactly the inode opened (without following a link), through its
// /proc/self/fd name: an O_PATH descriptor takes no fchmod, and a mode-000 file
// cannot be opened for one.
int chmod_at(int parent, const std::string& name, unsigned mode, bool want_dir) {
    sys::UniqueFd fd(::openat(parent, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return -errno;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return -errno;
    if (S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode) != want_dir) return -ELOOP;
    const std::string proc = "/proc/self/fd/" + std::to_string(fd.get());
    return ::chmod(proc.c_str(), safe_mode(mode)) == 0 ? 0 : -errno;
}

int make_dir(int parent, const LayerChange& c) {
    const std::string name = name_of(c.path);
    if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) return -errno;
    return chmod_at(parent, name, c.mode, true);
}

int apply_one(int ws, int upper, const LayerChange& c) {
    sys::UniqueFd parent(open_parent(ws, c.path));
    if (!parent) return parent.get();
    const std::string name = name_of(c.path);
    switch (c.kind) {
    case LayerChange::Kind::deleted: {
        auto r = sys::remove_at(parent.get(), name, c.path);
        return r ? 0 : -(r.error().code() != 0 ? r.error().code() : EIO);
    }
    case LayerChange::Kind::mode: return chmod_at(parent.get(), name, c.mode, c.type == LayerChange::Type::dir);
    case LayerChange::Kind::added:
    case LayerChange::Kind::modified:
        switch (c.type) {
        case LayerChange::Type::dir: return make_dir(parent.get(), c);
        case LayerChange::Type::file: return write_file(parent.get(), upper, c);
        case LayerChange::Type::symlink: return write_symlink(parent.get(), c);
        case LayerChange::Type::other: return -EOPNOTSUPP;
        }
    }
    return -EINVAL;
}

bool under(const std::string& p, const std::string& dir) {
    return p.size() > dir.size() && p[dir.size()] == '/' && p.compare(0, dir.size(), dir) == 0;
}

}  // namespace

Result<ApplyOutcome> apply_changes(const std::string& workspace, const std::string& upper_dir,
                                   const std::vector<LayerChange>& changes, const ApplyOptions& opts) {
    // The workspace and the upper layer are canonical paths from the run's record:
    // a link met on the way to them now was put there since, so refuse it.
    sys::UniqueFd ws(sys::openat2(AT_FDCWD, workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                                  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!ws) return Error(ErrorKind::invalid_input, -ws.get(), "workspace " + workspace + ": " + why_errno(-ws.get()));
    sys::UniqueFd up(sys::openat2(AT_FDCWD, upper_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                                  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!up) return Error(ErrorKind::invalid_input, -up.get(), "upper layer " + upper_dir + ": " + why_errno(-up.get()));

    ApplyOutcome out;
    // First the verdicts, against the host as it is before anything is written (a
    // deletion applied first must not make its path's addition look new).
    std::vector<std::string> skip_why(changes.size());
    std::vector<bool> done(changes.size(), false);
    std::map<std::string, std::string> path_conflict;
    for (size_t i = 0; i < changes.size(); ++i)
        done[i] = well_formed(changes[i].path) && already_done(ws.get(), up.get(), changes[i]);
    // A deletion is done when what replaced it at its path is.
    for (size_t i = 0; i + 1 < changes.size(); ++i)
        if (changes[i].kind == LayerChange::Kind::deleted && changes[i + 1].path == changes[i].path && done[i + 1])
            done[i] = true;
    for (size_t i = 0; i < changes.size(); ++i) {
        const LayerChange& c = changes[i];
        if (done[i]) {
            skip_why[i] = "already so";
        } else if (!well_formed(c.path)) {
            skip_why[i] = "not a path inside the workspace";
        } else if (c.type == LayerChange::Type::other) {
            skip_why[i] = "not a file, directory or symlink: not applied";
        } else if (c.protected_path && !opts.allow_protected) {
            skip_why[i] = "protected (runs code on the host later): not applied without --protected";
        } else if (!opts.force) {
            // One verdict per path: a replacement is a deletion and an addition.
            auto it = path_conflict.find(c.path);
            if (it == path_conflict.end()) it = path_conflict.emplace(c.path, conflict(ws.get(), c)).first;
            if (!it->second.empty()) skip_why[i] = "conflict: " + it->second + " (--force applies it anyway)";
        }
    }
    // A deletion or a new directory skipped takes along what replaces it at its
    // path and everything below it (a mode change skipped leaves its tree alone).
    for (size_t i = 0; i < changes.size(); ++i) {
        if (skip_why[i].empty() || done[i] || !well_formed(changes[i].path)) continue;
        if (changes[i].kind == LayerChange::Kind::mode || changes[i].kind == LayerChange::Kind::modified) continue;
        for (size_t k = 0; k < changes.size(); ++k) {
            if (k == i || !skip_why[k].empty() || done[k]) continue;
            const bool same = changes[k].path == changes[i].path;
            if (same || under(changes[k].path, changes[i].path))
                skip_why[k] = "skipped with " + changes[i].path + " (" + skip_why[i] + ")";
        }
    }
    for (size_t i = 0; i < changes.size(); ++i) {
        if (done[i])
            out.applied.push_back({changes[i], skip_why[i]});
        else if (!skip_why[i].empty())
            out.skipped.push_back({changes[i], skip_why[i]});
    }

    // Deletions deepest first, then the rest parents first.
    std::vector<size_t> order;
    for (size_t i = 0; i < changes.size(); ++i)
        if (skip_why[i].empty() && changes[i].kind == LayerChange::Kind::deleted) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return changes[a].path > changes[b].path; });
    std::vector<size_t> rest;
    for (size_t i = 0; i < changes.size(); ++i)
        if (skip_why[i].empty() && changes[i].kind != LayerChange::Kind::deleted) rest.push_back(i);
    std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) { return changes[a].path < changes[b].path; });
    order.insert(order.end(), rest.begin(), rest.end());

    std::set<std::string> failed_dirs;
    for (size_t i : order) {
        const LayerChange& c = changes[i];
        auto below_failed = std::find_if(failed_dirs.begin(), failed_dirs.end(),
                                         [&](const std::string& d) { return under(c.path, d); });
        if (below_failed != failed_dirs.end()) {
            out.failed.push_back({c, "its directory " + *below_failed + " could not be made"});
            continue;
        }
        int r = apply_one(ws.get(), up.get(), c);
        if (r < 0) {
            out.failed.push_back({c, why_errno(-r)});
            if (c.type == LayerChange::Type::dir && c.kind != LayerChange::Kind::deleted) failed_dirs.insert(c.path);
            continue;
        }
        out.applied.push_back({c, {}});
    }
    return out;
}

}  // namespace agentjail::workspace
