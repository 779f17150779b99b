// SPDX-License-Identifier: Apache-2.0
// agentjail's own state under the caller's state home ($XDG_STATE_HOME or
// ~/.local/state): directories opened and made one component at a time, never
// through a link; files replaced by rename; trees removed without following links.
// A sandbox run in direct mode with `-C ~` may have planted links there, and
// agentjail must not write, read or delete through them.
#include "sys/state_dir.hpp"

#include "util/strings.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <utility>

namespace agentjail::sys {

namespace {

Error sys_error(int err, const std::string& what) { return util::errno_error(ErrorKind::setup, err, what); }

Error bad(const std::string& what, int err = EINVAL) {
    return Error(ErrorKind::invalid_input, err, what);
}

// Opens (creating, 0700) the directory `name` under `parent` without following a
// link; it must be the caller's own and closed to others, so nobody else can swap
// what lies below it.
}  // namespace

Result<UniqueFd> own_dir_at(int parent, const std::string& name, const std::string& path, StateDir how) {
    if (how == StateDir::create && ::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST)
        return sys_error(errno, "state directory " + path);
    int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP || err == ENOTDIR)
            return bad("state directory " + path + " is not a directory (a link or a file): refused", err);
        return sys_error(err, "state directory " + path);
    }
    UniqueFd d(fd);
    struct stat st {};
    if (::fstat(d.get(), &st) != 0) return sys_error(errno, "state directory " + path);
    if (st.st_uid != ::geteuid())
        return bad("state directory " + path + " belongs to uid " + std::to_string(st.st_uid) +
                       ", not to you: refused", EPERM);
    if ((st.st_mode & 022) != 0)
        return bad("state directory " + path + " is writable by others: refused (chmod go-w it)", EPERM);
    return d;
}

namespace {

// Opens the state home (root without its "agentjail/runs" tail): the part that
// exists is the user's own layout and is followed as they set it up; what is
// missing is created 0700, one component at a time, never through a link.
Result<UniqueFd> open_base(const std::string& base, StateDir how) {
    std::string path = util::normalize_path(base);
    if (path.empty()) return bad("state directory " + base + " is not an absolute path");
    std::vector<std::string> missing;
    std::string cur = path;
    int fd = -1;
    for (;;) {
        fd = ::open(cur.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) break;
        if (errno != ENOENT || cur == "/" || how == StateDir::existing)
            return sys_error(errno, "state directory " + cur);
        auto slash = cur.rfind('/');
        missing.push_back(cur.substr(slash + 1));
        cur = slash == 0 ? "/" : cur.substr(0, slash);
    }
    UniqueFd d(fd);
    std::reverse(missing.begin(), missing.end());
    for (const auto& name : missing) {
        cur = cur == "/" ? "/" + name : cur + "/" + name;
        if (::mkdirat(d.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
            return sys_error(errno, "state directory " + cur);
        int nfd = ::openat(d.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0) return sys_error(errno, "state directory " + cur);
        d.reset(nfd);
    }
    return d;
}

std::string env_value(const std::vector<std::string>& environ, const std::string& name) {
    for (const auto& e : environ)
        if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
            return e.substr(name.size() + 1);
    return {};
}

}  // namespace

std::string state_home(const std::vector<std::string>& environ, const std::string& home) {
    // The XDG base directory spec: a relative value is invalid and ignored.
    std::string state = env_value(environ, "XDG_STATE_HOME");
    if (state.empty() || state[0] != '/') state = home + "/.local/state";
    return util::normalize_path(state);
}

Result<UniqueFd> open_own_state_dir(const std::string& base, const std::vector<std::string>& names,
                                    StateDir how) {
    auto d = open_base(base, how);
    if (!d) return d;
    std::string cur = util::normalize_path(base);
    for (const auto& name : names) {
        cur += "/" + name;
        auto next = own_dir_at(d->get(), name, cur, how);
        if (!next) return next;
        *d = std::move(*next);
    }
    return d;
}

Result<void> replace_file_at(int dirfd, const char* name, std::string_view text, unsigned mode,
                             const std::string& what) {
    unsigned char rnd[6] = {};
    (void)::getrandom(rnd, sizeof rnd, 0);
    char tmp[64];
    std::snprintf(tmp, sizeof tmp, ".aj-tmp-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3],
                  rnd[4], rnd[5]);
    int fd = ::openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) return sys_error(errno, what);
    UniqueFd f(fd);
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(f.get(), text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            ::unlinkat(dirfd, tmp, 0);
            return sys_error(err, what);
        }
        off += static_cast<size_t>(n);
    }
    f.reset();
    if (::renameat(dirfd, tmp, dirfd, name) != 0) {
        int err = errno;
        ::unlinkat(dirfd, tmp, 0);
        return sys_error(err, what);
    }
    return {};
}

Result<void> remove_at(int dirfd, const std::string& name, const std::string& what) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return {};
        return sys_error(errno, what);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) return sys_error(errno, what);
        return {};
    }
    int sub = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return sys_error(errno, what);
    UniqueFd s(sub);
    (void)::fchmod(s.get(), 0700);
    if (auto r = remove_tree_at(s.get(), what); !r) return r;
    s.reset();
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return sys_error(errno, what);
    return {};
}

Result<void> remove_tree_at(int dirfd, const std::string& what) {
    int dfd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return sys_error(errno, what);
    DIR* dir = ::fdopendir(dfd);
    if (!dir) {
        int err = errno;
        ::close(dfd);
        return sys_error(err, what);
    }
    std::vector<std::pair<std::string, bool>> entries;
    while (dirent* e = ::readdir(dir)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        entries.emplace_back(name, e->d_type == DT_DIR);
    }
    ::closedir(dir);
    for (const auto& [name, hint_dir] : entries) {
        bool is_dir = hint_dir;
        if (!hint_dir) {
            struct stat st {};
            if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) is_dir = S_ISDIR(st.st_mode);
        }
        if (is_dir) {
            // A directory the sandbox made mode 000 (or overlayfs's work/work) cannot
            // be opened for reading by its unprivileged owner: opened as O_PATH (no
            // permission needed, no link followed) and made 0700 through its
            // /proc/self/fd name, which names exactly that inode.
            if (int p = ::openat(dirfd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); p >= 0) {
                (void)::chmod(("/proc/self/fd/" + std::to_string(p)).c_str(), 0700);
                ::close(p);
            }
            int sub = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                // Replaced by something else meanwhile: remove whatever it is now.
                if (::unlinkat(dirfd, name.c_str(), 0) == 0) continue;
                return sys_error(errno, what + "/" + name);
            }
            UniqueFd s(sub);
            // A directory the sandbox made read-only (chmod 500) must still empty.
            (void)::fchmod(s.get(), 0700);
            if (auto r = remove_tree_at(s.get(), what + "/" + name); !r) return r;
            s.reset();
            if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
                return sys_error(errno, what + "/" + name);
        } else if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) {
            return sys_error(errno, what + "/" + name);
        }
    }
    return {};
}

std::string runs_root(const std::vector<std::string>& environ, const std::string& home) {
    return util::normalize_path(state_home(environ, home) + "/agentjail/runs");
}


std::string new_run_id(long long now) {
    std::time_t t = now ? static_cast<std::time_t>(now) : std::time(nullptr);
    std::tm tm {};
    ::gmtime_r(&t, &tm);
    char when[32];
    std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", &tm);
    unsigned char rnd[3] = {0, 0, 0};
    ssize_t got = ::getrandom(rnd, sizeof rnd, 0);
    if (got != static_cast<ssize_t>(sizeof rnd)) {
        // getrandom cannot fail for 3 bytes once the pool is ready; a clock-based
        // fallback still gives distinct ids (create_run retries on a clash).
        struct timespec ts {};
        ::clock_gettime(CLOCK_MONOTONIC, &ts);
        unsigned long v = static_cast<unsigned long>(ts.tv_nsec) ^ static_cast<unsigned long>(::getpid());
        rnd[0] = v & 0xff;
        rnd[1] = (v >> 8) & 0xff;
        rnd[2] = (v >> 16) & 0xff;
    }
    char out[48];
    std::snprintf(out, sizeof out, "%s-%02x%02x%02x", when, rnd[0], rnd[1], rnd[2]);
    return out;
}


bool valid_run_id(const std::string& id) {
    // YYYYMMDD-HHMMSS-xxxxxx
    if (id.size() != 22) return false;
    for (size_t i = 0; i < id.size(); ++i) {
        char c = id[i];
        if (i == 8 || i == 15) {
            if (c != '-') return false;
        } else if (i < 15) {
            if (c < '0' || c > '9') return false;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}


std::string resolve_existing(const std::string& path) {
    std::string cur = util::normalize_path(path);
    std::string rest;
    while (!cur.empty()) {
        if (char* real = ::realpath(cur.c_str(), nullptr)) {
            std::string out = real;
            ::free(real);
            if (rest.empty()) return out;
            return out == "/" ? rest : out + rest;
        }
        if (cur == "/") break;
        const auto slash = cur.rfind('/');
        rest = cur.substr(slash) + rest;
        cur = slash == 0 ? "/" : cur.substr(0, slash);
    }
    return util::normalize_path(path);
}

}  // namespace agentjail::sys
