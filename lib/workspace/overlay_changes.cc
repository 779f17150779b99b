// SPDX-License-Identifier: Apache-2.0
// Overlay mode's change set: the workspace's stamps when the run starts, and what
// the upper layer holds against the workspace when it ends (new and modified
// files, whiteouts, opaque directories, links, modes), as data and as JSON.
#include "workspace/overlay.hpp"

#include "policy/policy.hpp"
#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <fnmatch.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

namespace agentjail::workspace {

namespace {

Error io_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, what + ": " + util::errno_text(err));
}

std::string join(const std::string& rel, const std::string& name) { return rel.empty() ? name : rel + "/" + name; }

std::int64_t ns(const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

Stamp stamp_of(const struct stat& st) {
    Stamp s;
    s.dev = st.st_dev;
    s.ino = st.st_ino;
    s.mode = st.st_mode;
    s.size = static_cast<std::uint64_t>(st.st_size);
    s.mtime_ns = ns(st.st_mtim);
    s.ctime_ns = ns(st.st_ctim);
    return s;
}

// The names in a directory (not . and ..), sorted. fd stays the caller's.
Result<std::vector<std::string>> names_in(int fd, const std::string& what) {
    int dup = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dup < 0) return io_error(errno, what);
    DIR* d = ::fdopendir(dup);
    if (d == nullptr) {
        int e = errno;
        ::close(dup);
        return io_error(e, what);
    }
    std::vector<std::string> out;
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        out.emplace_back(e->d_name);
    }
    int e = errno;
    ::closedir(d);
    if (e != 0) return io_error(e, what);
    std::sort(out.begin(), out.end());
    return out;
}

// A directory below fd, never through a link.
int open_dir_at(int fd, const std::string& name) {
    int d = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d >= 0 || errno != EACCES) return d;
    // A directory the agent made unreadable (chmod 000) in its own upper layer: the
    // owner gives itself r-x, through an O_PATH fd of exactly that directory (no name
    // is looked up twice). The mode stays so: the walk below looks names up in it,
    // and the change set already holds the mode the agent set.
    int path = ::openat(fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (path < 0) return -1;
    struct stat st {};
    char proc[64];
    std::snprintf(proc, sizeof proc, "/proc/self/fd/%d", path);
    if (::fstat(path, &st) != 0 || st.st_uid != ::geteuid() || ::chmod(proc, (st.st_mode & 07777) | 0500) != 0) {
        ::close(path);
        errno = EACCES;
        return -1;
    }
    d = ::openat(path, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int saved = errno;
    ::close(path);
    errno = saved;
    return d;
}

// Walks a tree of the workspace (a deleted directory, for its base); returns the
// directory's (count, newest ctime).
struct Walker {
    Snapshot& out;
    std::uint64_t root_dev = 0;

    Result<std::pair<std::uint64_t, std::int64_t>> dir(int fd, const std::string& rel) {
        auto names = names_in(fd, rel.empty() ? "workspace" : rel);
        if (!names) return std::move(names).error();
        std::uint64_t count = 0;
        std::int64_t newest = 0;
        for (const auto& name : *names) {
            struct stat st {};
            if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                if (errno == ENOENT) continue;  // gone meanwhile
                return io_error(errno, join(rel, name));
            }
            const std::string p = join(rel, name);
            Stamp s = stamp_of(st);
            if (S_ISDIR(st.st_mode) && st.st_dev == root_dev) {
                int sub = open_dir_at(fd, name);
                if (sub >= 0) {
                    auto r = dir(sub, p);
                    ::close(sub);
                    if (!r) return std::move(r).error();
                    s.tree_count = r->first;
                    s.tree_ctime_ns = r->second;
                } else if (errno != EACCES && errno != ENOENT) {
                    return io_error(errno, p);
                }
            }
            count += 1 + s.tree_count;
            newest = std::max({newest, s.ctime_ns, s.tree_ctime_ns});
            out.emplace(p, s);
        }
        return std::pair{count, newest};
    }
};

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0); }

// overlayfs marks a directory whose lower contents it hides ("rm -rf d; mkdir d")
// opaque; in a user namespace in user.overlay.opaque (userxattr), else trusted.*.
bool is_opaque(int dirfd) {
    char v[4] = {};
    for (const char* name : {"user.overlay.opaque", "trusted.overlay.opaque"}) {
        ssize_t n = ::fgetxattr(dirfd, name, v, sizeof v);
        if (n == 1 && v[0] == 'y') return true;
    }
    return false;
}

LayerChange::Type type_of(mode_t m) {
    if (S_ISREG(m)) return LayerChange::Type::file;
    if (S_ISDIR(m)) return LayerChange::Type::dir;
    if (S_ISLNK(m)) return LayerChange::Type::symlink;
    return LayerChange::Type::other;
}

Result<std::string> read_link_at(int fd, const std::string& name) {
    char buf[PATH_MAX];
    ssize_t n = ::readlinkat(fd, name.c_str(), buf, sizeof buf);
    if (n < 0) return io_error(errno, name);
    return std::string(buf, static_cast<size_t>(n));
}

// Whether two regular files (names in their directories) hold the same bytes.
Result<bool> same_bytes(int dir_a, int dir_b, const std::string& name, std::uint64_t size, const std::string& what) {
    sys::UniqueFd a(::openat(dir_a, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!a) return io_error(errno, what);
    sys::UniqueFd b(::openat(dir_b, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!b) return io_error(errno, what);
    std::vector<char> ba(1 << 16), bb(1 << 16);
    std::uint64_t left = size;
    while (left > 0) {
        size_t want = static_cast<size_t>(std::min<std::uint64_t>(left, ba.size()));
        ssize_t na = ::pread(a.get(), ba.data(), want, static_cast<off_t>(size - left));
        ssize_t nb = ::pread(b.get(), bb.data(), want, static_cast<off_t>(size - left));
        if (na < 0 || nb < 0) return io_error(errno, what);
        if (na != nb || na == 0) return false;  // one is shorter than its stat said: changed
        if (std::memcmp(ba.data(), bb.data(), static_cast<size_t>(na)) != 0) return false;
        left -= static_cast<std::uint64_t>(na);
    }
    return true;
}

class Collector {
public:
    // root: the workspace; since: when the run started (the coarse clock that stamps
    // inodes: a change made after that reading has a ctime at or after it).
    Collector(int root, const struct timespec& since, const std::vector<std::string>& protect)
        : root_(root), since_ns_(ns(since)), protect_(protect) {}

    // ufd: the upper layer's directory; lfd: the workspace's (-1: none there);
    // opaque: the lower directory's own entries are hidden (all that is not in the
    // upper one is deleted).
    Result<void> dir(const std::string& rel, int ufd, int lfd, bool opaque) {
        auto names = names_in(ufd, "upper layer " + (rel.empty() ? std::string(".") : rel));
        if (!names) return std::move(names).error();
        for (const auto& name : *names) {
            const std::string p = join(rel, name);
            struct stat ust {};
            if (::fstatat(ufd, name.c_str(), &ust, AT_SYMLINK_NOFOLLOW) != 0) return io_error(errno, "upper layer " + p);
            struct stat lst {};
            const bool lower = lfd >= 0 && ::fstatat(lfd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0;
            if (is_whiteout(ust)) {
                if (lower) add(LayerChange::Kind::deleted, type_of(lst.st_mode), p, lst);
                continue;
            }
            const unsigned perms = ust.st_mode & 07777;
            if (S_ISDIR(ust.st_mode)) {
                sys::UniqueFd u(open_dir_at(ufd, name));
                if (!u) return io_error(errno, "upper layer " + p);
                const bool child_opaque = opaque || is_opaque(u.get());
                if (lower && S_ISDIR(lst.st_mode)) {
                    if ((lst.st_mode & 07777) != perms) add(LayerChange::Kind::mode, LayerChange::Type::dir, p, ust);
                    sys::UniqueFd l(open_dir_at(lfd, name));
                    if (!l) return io_error(errno, p);
                    if (auto r = dir(p, u.get(), l.get(), child_opaque); !r) return r;
                } else {
                    if (lower) add(LayerChange::Kind::deleted, type_of(lst.st_mode), p, lst);
                    add(LayerChange::Kind::added, LayerChange::Type::dir, p, ust);
                    if (auto r = dir(p, u.get(), -1, false); !r) return r;
                }
                continue;
            }
            if (S_ISREG(ust.st_mode)) {
                if (lower && S_ISREG(lst.st_mode)) {
                    bool same = lst.st_size == ust.st_size;
                    if (same) {
                        auto r = same_bytes(ufd, lfd, name, static_cast<std::uint64_t>(ust.st_size), p);
                        if (!r) return std::move(r).error();
                        same = *r;
                    }
                    if (!same)
                        add(LayerChange::Kind::modified, LayerChange::Type::file, p, ust);
                    else if ((lst.st_mode & 07777) != perms)
                        add(LayerChange::Kind::mode, LayerChange::Type::file, p, ust);
                    // else: only copied up (opened for writing, chowned to itself): no change
                    continue;
                }
                if (lower) add(LayerChange::Kind::deleted, type_of(lst.st_mode), p, lst);
                add(LayerChange::Kind::added, LayerChange::Type::file, p, ust);
                continue;
            }
            if (S_ISLNK(ust.st_mode)) {
                auto target = read_link_at(ufd, name);
                if (!target) return std::move(target).error();
                if (lower && S_ISLNK(lst.st_mode)) {
                    auto old = read_link_at(lfd, name);
                    if (!old) return std::move(old).error();
                    if (*old != *target) add(LayerChange::Kind::modified, LayerChange::Type::symlink, p, ust, *target);
                    continue;
                }
                if (lower) add(LayerChange::Kind::deleted, type_of(lst.st_mode), p, lst);
                add(LayerChange::Kind::added, LayerChange::Type::symlink, p, ust, *target);
                continue;
            }
            // A FIFO, a socket, a device: listed, never applied.
            if (lower) add(LayerChange::Kind::deleted, type_of(lst.st_mode), p, lst);
            add(LayerChange::Kind::added, LayerChange::Type::other, p, ust);
        }
        if (opaque && lfd >= 0) {
            auto lower_names = names_in(lfd, rel.empty() ? "workspace" : rel);
            if (!lower_names) return std::move(lower_names).error();
            for (const auto& name : *lower_names) {
                if (std::binary_search(names->begin(), names->end(), name)) continue;
                struct stat lst {};
                if (::fstatat(lfd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0) continue;
                add(LayerChange::Kind::deleted, type_of(lst.st_mode), join(rel, name), lst);
            }
        }
        return {};
    }

    std::vector<LayerChange> take() {
        // By path, a deletion before what replaced it at the same path.
        std::stable_sort(out_.begin(), out_.end(), [](const LayerChange& a, const LayerChange& b) {
            if (a.path != b.path) return a.path < b.path;
            return a.kind == LayerChange::Kind::deleted && b.kind != LayerChange::Kind::deleted;
        });
        return std::move(out_);
    }

private:
    void add(LayerChange::Kind kind, LayerChange::Type type, const std::string& path, const struct stat& st,
             std::string target = {}) {
        LayerChange c;
        c.kind = kind;
        c.type = type;
        c.path = path;
        c.mode = st.st_mode & 07777;
        c.size = type == LayerChange::Type::file ? static_cast<std::uint64_t>(st.st_size) : 0;
        c.target = std::move(target);
        Snapshot tree;  // a deleted directory's, as the host has it now
        c.base = base_of(path, kind == LayerChange::Kind::deleted && type == LayerChange::Type::dir, tree);
        c.protected_path = is_protected(path, protect_) || git_redirect(c);
        if (!c.protected_path) {
            // Deleting a tree deletes what it holds: protected if anything in it is.
            for (const auto& [rel, stamp] : tree) {
                if (is_protected(rel, protect_) || (rel.ends_with("/.git") && !S_ISDIR(stamp.mode))) {
                    c.protected_path = true;
                    break;
                }
            }
        }
        out_.push_back(std::move(c));
    }

    // What `path` was on the host when the run started, read now: the sandbox never
    // wrote the host's files (they are the overlay's lower layer), so one whose ctime
    // is before the run's start is as it was then (no program can set a ctime), and a
    // name absent now was absent then if the nearest folder above it is that old (a
    // name removed sets its folder's ctime). Otherwise the host changed it, or the
    // folder it would be in, during the run: the base is kChangedDuringRun, which
    // `apply` reports as a conflict (a file the run made in a folder the host changed
    // too, since whether the host deleted one of that name cannot be told). What
    // this costs is the change set's, not the workspace's: no walk at the start.
    // A deleted directory (`whole`): the tree below it too, listed into `tree`.
    std::optional<Stamp> base_of(const std::string& path, bool whole, Snapshot& tree) {
        sys::UniqueFd fd(beneath(path, O_PATH));
        struct stat st {};
        if (!fd || ::fstat(fd.get(), &st) != 0) {
            // Absent: as old as the nearest folder above it that is there.
            for (std::string up = path; !up.empty();) {
                const auto slash = up.rfind('/');
                up = slash == std::string::npos ? std::string() : up.substr(0, slash);
                sys::UniqueFd d(beneath(up.empty() ? "." : up, O_PATH | O_DIRECTORY));
                struct stat dst {};
                if (!d || ::fstat(d.get(), &dst) != 0) continue;
                return ns(dst.st_ctim) < since_ns_ ? std::nullopt : std::optional<Stamp>(kChangedDuringRun);
            }
            return kChangedDuringRun;
        }
        Stamp s = stamp_of(st);
        if (S_ISDIR(st.st_mode)) {
            // A folder the host changed (its mode, its entries) during the run is one
            // whose mode the run's change would overwrite; a deleted tree is compared
            // whole, and then nothing in it may be newer than the start.
            if (!whole) return s.ctime_ns >= since_ns_ ? kChangedDuringRun : s;
            sys::UniqueFd d(beneath(path, O_RDONLY | O_DIRECTORY));
            if (!d) return kChangedDuringRun;
            Walker w{tree, st.st_dev};
            auto r = w.dir(d.get(), path);
            if (!r) return kChangedDuringRun;
            s.tree_count = r->first;
            s.tree_ctime_ns = r->second;
            if (s.ctime_ns >= since_ns_ || s.tree_ctime_ns >= since_ns_) return kChangedDuringRun;
            return s;
        }
        if (s.ctime_ns >= since_ns_) return kChangedDuringRun;
        return s;
    }

    // `rel` opened below the workspace, never through a link.
    int beneath(const std::string& rel, int flags) const {
        return sys::openat2(root_, rel.c_str(), flags | O_NOFOLLOW | O_CLOEXEC,
                            RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    }

    // A `.git` that is not a directory is git's redirect to a repository elsewhere
    // (worktrees, submodules): planting or changing one points git anywhere.
    static bool git_redirect(const LayerChange& c) {
        const bool named_git = c.path == ".git" || c.path.ends_with("/.git");
        return named_git && c.type != LayerChange::Type::dir;
    }

    int root_;
    std::int64_t since_ns_;
    const std::vector<std::string>& protect_;
    std::vector<LayerChange> out_;
};

// fnmatch(3) on one component; `**` is handled by the caller.
bool match_parts(const std::vector<std::string>& pat, size_t pi, const std::vector<std::string>& path, size_t xi) {
    if (pi == pat.size()) return xi == path.size();
    if (pat[pi] == "**") {
        for (size_t k = xi; k <= path.size(); ++k)
            if (match_parts(pat, pi + 1, path, k)) return true;
        return false;
    }
    if (xi == path.size()) return false;
    if (::fnmatch(pat[pi].c_str(), path[xi].c_str(), 0) != 0) return false;
    return match_parts(pat, pi + 1, path, xi + 1);
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i <= s.size()) {
        size_t j = s.find('/', i);
        if (j == std::string::npos) j = s.size();
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

}  // namespace

const char* layer_kind_name(LayerChange::Kind k) {
    switch (k) {
    case LayerChange::Kind::added: return "added";
    case LayerChange::Kind::modified: return "modified";
    case LayerChange::Kind::deleted: return "deleted";
    case LayerChange::Kind::mode: return "mode";
    }
    return "unknown";
}

const char* layer_type_name(LayerChange::Type t) {
    switch (t) {
    case LayerChange::Type::file: return "file";
    case LayerChange::Type::dir: return "dir";
    case LayerChange::Type::symlink: return "symlink";
    case LayerChange::Type::other: return "other";
    }
    return "unknown";
}

struct timespec run_start(const std::string& workspace) {
    struct timespec t {};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &t);
    // A file system that stamps whole seconds (ext4 with small inodes, FAT) would
    // truncate a change made just after the start to before it: there, a change up
    // to two seconds before the start counts as during the run. Told by the
    // workspace's own times (whole seconds both: one in a billion otherwise).
    struct stat st {};
    if (::stat(workspace.c_str(), &st) == 0 && st.st_ctim.tv_nsec == 0 && st.st_mtim.tv_nsec == 0) t.tv_sec -= 2;
    return t;
}

Result<std::vector<LayerChange>> collect_changes(const std::string& upper_dir, const std::string& workspace,
                                            const struct timespec& since, const std::vector<std::string>& protect) {
    sys::UniqueFd u(::open(upper_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!u) return io_error(errno, "upper layer " + upper_dir);
    sys::UniqueFd l(::open(workspace.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!l) return io_error(errno, "workspace " + workspace);
    Collector c(l.get(), since, protect);
    if (auto r = c.dir("", u.get(), l.get(), false); !r) return std::move(r).error().wrap("change set");
    return c.take();
}

const std::vector<std::string>& default_protected() {
    // The default policy's [workspace] protect list, the one list of what runs on the
    // host later (policies/default.toml says why for each); a built-in policy that
    // does not load is a build's bug, which its unit tests catch.
    static const std::vector<std::string> list = [] {
        std::vector<std::string> out;
        if (auto p = policy::load("default"))
            for (const auto& r : p->protect) out.push_back(r.pattern);
        return out;
    }();
    return list;
}

bool is_protected(const std::string& path, const std::vector<std::string>& patterns) {
    const std::vector<std::string> parts = split(path);
    for (std::string pat : patterns) {
        if (util::starts_with(pat, "{workspace}/")) pat = pat.substr(12);
        const std::vector<std::string> pp = split(pat);
        // A pattern naming .git itself is for a .git *file* (a gitdir pointer), which
        // the callers' git checks take (git_redirect, the audit's pointer check): as a
        // cover of everything below, it would take the whole .git directory, which is
        // never protected whole (objects, refs and the index stay the agent's).
        if (pp.empty() || pp.back() == ".git") continue;
        // The path or any of its ancestors: a protected directory covers what is in it.
        for (size_t n = 1; n <= parts.size(); ++n) {
            std::vector<std::string> head(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(n));
            if (match_parts(pp, 0, head, 0)) return true;
        }
    }
    return false;
}

std::string changes_to_json(const std::vector<LayerChange>& changes, int indent) {
    using json = nlohmann::ordered_json;
    json arr = json::array();
    for (const auto& c : changes) {
        json j;
        j["path"] = c.path;
        j["kind"] = layer_kind_name(c.kind);
        j["type"] = layer_type_name(c.type);
        j["mode"] = c.mode;
        j["size"] = c.size;
        if (c.type == LayerChange::Type::symlink) j["target"] = c.target;
        j["protected"] = c.protected_path;
        if (c.base) {
            const Stamp& s = *c.base;
            j["base"] = {{"dev", s.dev},           {"ino", s.ino},           {"mode", s.mode},
                         {"size", s.size},         {"mtime_ns", s.mtime_ns}, {"ctime_ns", s.ctime_ns},
                         {"tree_count", s.tree_count}, {"tree_ctime_ns", s.tree_ctime_ns}};
        } else {
            j["base"] = nullptr;
        }
        arr.push_back(std::move(j));
    }
    // Names need not be UTF-8: bad bytes replaced rather than thrown on.
    return arr.dump(indent, ' ', false, json::error_handler_t::replace);
}

Result<std::vector<LayerChange>> changes_from_json(const std::string& text, const std::string& what) {
    using json = nlohmann::json;
    json arr = json::parse(text, nullptr, false);
    if (arr.is_discarded() || !arr.is_array())
        return Error(ErrorKind::invalid_input, EINVAL, what + ": not a change set (a JSON array)");
    std::vector<LayerChange> out;
    try {
        for (const auto& j : arr) {
            LayerChange c;
            c.path = j.at("path").get<std::string>();
            const std::string kind = j.at("kind").get<std::string>();
            const std::string type = j.at("type").get<std::string>();
            bool ok_kind = false, ok_type = false;
            for (auto k : {LayerChange::Kind::added, LayerChange::Kind::modified, LayerChange::Kind::deleted, LayerChange::Kind::mode})
                if (kind == layer_kind_name(k)) c.kind = k, ok_kind = true;
            for (auto t : {LayerChange::Type::file, LayerChange::Type::dir, LayerChange::Type::symlink, LayerChange::Type::other})
                if (type == layer_type_name(t)) c.type = t, ok_type = true;
            if (!ok_kind || !ok_type)
                return Error(ErrorKind::invalid_input, EINVAL, what + ": bad kind or type at " + c.path);
            c.mode = j.at("mode").get<unsigned>();
            c.size = j.at("size").get<std::uint64_t>();
            if (j.contains("target")) c.target = j.at("target").get<std::string>();
            c.protected_path = j.at("protected").get<bool>();
            if (!j.at("base").is_null()) {
                const auto& b = j.at("base");
                Stamp s;
                s.dev = b.at("dev").get<std::uint64_t>();
                s.ino = b.at("ino").get<std::uint64_t>();
                s.mode = b.at("mode").get<unsigned>();
                s.size = b.at("size").get<std::uint64_t>();
                s.mtime_ns = b.at("mtime_ns").get<std::int64_t>();
                s.ctime_ns = b.at("ctime_ns").get<std::int64_t>();
                s.tree_count = b.at("tree_count").get<std::uint64_t>();
                s.tree_ctime_ns = b.at("tree_ctime_ns").get<std::int64_t>();
                c.base = s;
            }
            out.push_back(std::move(c));
        }
    } catch (const std::exception& e) {
        // No exception leaves the module: a malformed file is an input error.
        return Error(ErrorKind::invalid_input, EINVAL, what + ": " + e.what());
    }
    return out;
}

}  // namespace agentjail::workspace
