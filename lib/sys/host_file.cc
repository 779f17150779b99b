// SPDX-License-Identifier: Apache-2.0
// Opening host files for writing without following links, blocking on FIFOs or
// landing inside the sandbox's writable roots (see host_file.hpp for the rules).
#include "sys/host_file.hpp"

#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace agentjail::sys {

namespace {

constexpr const char* where_instead =
    "put it outside every path the sandbox can write (e.g. under ~/.local/state/agentjail/)";

Error refuse(const std::string& what, const std::string& path, int err, const std::string& why) {
    return Error(ErrorKind::invalid_input, err, what + " " + util::printable(path) + ": " + why);
}

Error failed(const std::string& what, const std::string& path, int err) {
    if (err == ELOOP)
        return refuse(
            what, path, err,
            "a component of the path is a symbolic link, which agentjail never follows for a file "
            "it writes (the sandbox or another user could point it at any of your files); give the "
            "path without links");
    if (err == ENXIO) return refuse(what, path, err, "is a FIFO or a socket, not a regular file");
    return refuse(what, path, err, util::errno_text(err));
}

// The directory part and the last component of an absolute path; "" name when
// the path ends in '/', ".", "..".
std::pair<std::string, std::string> split(const std::string& path) {
    size_t slash = path.rfind('/');
    std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    std::string name = path.substr(slash + 1);
    if (name == "." || name == "..") name.clear();
    return {dir, name};
}

// Opens an absolute directory as O_PATH without following any symbolic link:
// openat2(RESOLVE_NO_SYMLINKS), or, where the kernel (before 5.6) or a container's
// filter refuses openat2, one O_NOFOLLOW step per component. Returns fd or -errno.
int open_dir_nofollow(const std::string& dir) {
    int fd = sys::openat2(AT_FDCWD, dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC,
                          RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd != -ENOSYS && fd != -EPERM) return fd;
    UniqueFd cur(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!cur) return -errno;
    size_t i = 0;
    while (i < dir.size()) {
        size_t j = dir.find('/', i);
        if (j == std::string::npos) j = dir.size();
        std::string comp = dir.substr(i, j - i);
        i = j + 1;
        if (comp.empty() || comp == ".") continue;
        // ".." is the real parent here: nothing was followed to get where we are.
        int next = ::openat(cur.get(), comp.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int err = errno;
            struct stat st {};
            // O_PATH|O_NOFOLLOW opens a link as itself and O_DIRECTORY then says
            // ENOTDIR: name it for what it is.
            if (err == ENOTDIR &&
                ::fstatat(cur.get(), comp.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                err = ELOOP;
            return -err;
        }
        cur.reset(next);
    }
    return cur.release();
}

// The identity of each sandbox-writable root, read once per check (not once per
// level of the walk below).
struct RootId {
    dev_t dev;
    ino_t ino;
    const WritableRoot* root;
};

std::vector<RootId> root_ids(const HostFileRules& rules) {
    std::vector<RootId> ids;
    for (const auto& r : rules.sandbox_writable) {
        struct stat rs {};
        if (::stat(r.path.c_str(), &rs) == 0) ids.push_back({rs.st_dev, rs.st_ino, &r});
    }
    return ids;
}

// The sandbox-writable root `fd` (a directory or the file itself) is, or nullptr.
const WritableRoot* writable_root_of(int fd, const std::vector<RootId>& ids) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return nullptr;
    for (const auto& id : ids)
        if (id.dev == st.st_dev && id.ino == st.st_ino) return id.root;
    return nullptr;
}

// Refuses a directory that is, or lies below, a sandbox-writable root. By identity:
// the walk goes up through "..", so a second name for the workspace (another bind
// of it, a path with different spelling) is caught as well as the first.
Result<void> check_outside(int dirfd, const std::string& path, const HostFileRules& rules,
                           const std::string& what) {
    if (rules.allow_in_sandbox || rules.sandbox_writable.empty()) return {};
    const auto ids = root_ids(rules);
    UniqueFd cur(::fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
    if (!cur) return failed(what, path, errno);
    for (int depth = 0; depth < 4096; ++depth) {
        if (const WritableRoot* r = writable_root_of(cur.get(), ids))
            return refuse(what, path, EPERM,
                          "is inside " + util::printable(r->path) +
                              ", which the sandbox can write (" + util::printable(r->why) +
                              "), so the sandbox could replace it or plant a link " +
                              "there for a later run; " + where_instead +
                              ", or set [log] allow_in_sandbox = true in the policy");
        UniqueFd up(::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!up) return failed(what, path, errno);
        struct stat a {
        }, b{};
        if (::fstat(cur.get(), &a) != 0 || ::fstat(up.get(), &b) != 0)
            return failed(what, path, errno);
        if (a.st_dev == b.st_dev && a.st_ino == b.st_ino) return {};  // reached "/"
        cur = std::move(up);
    }
    return refuse(what, path, ELOOP, "too deep a directory");
}

// The checks on an opened (or found) target: a regular file, one link, not a root.
Result<void> check_target(const struct stat& st, int fd, const std::string& path,
                          const HostFileRules& rules, const std::string& what) {
    if (S_ISLNK(st.st_mode)) return failed(what, path, ELOOP);
    if (!S_ISREG(st.st_mode))
        return refuse(what, path, EINVAL,
                      S_ISDIR(st.st_mode) ? "is a directory"
                                          : "is not a regular file (a FIFO, a device or a socket)");
    if (!rules.allow_in_sandbox && st.st_nlink > 1)
        return refuse(what, path, EMLINK,
                      "has other hard links, one of which the sandbox may be able to write; " +
                          std::string(where_instead));
    if (fd >= 0 && !rules.allow_in_sandbox)
        if (const WritableRoot* r = writable_root_of(fd, root_ids(rules)))
            return refuse(what, path, EPERM,
                          "is bound into the sandbox read-write (" + util::printable(r->why) +
                              "); " + where_instead);
    return {};
}

Result<std::pair<UniqueFd, std::string>> open_parent(const std::string& path,
                                                     const HostFileRules& rules,
                                                     const std::string& what) {
    if (path.empty() || path[0] != '/') return refuse(what, path, EINVAL, "not an absolute path");
    auto [dir, name] = split(path);
    if (name.empty()) return refuse(what, path, EISDIR, "names a directory, not a file");
    int d = open_dir_nofollow(dir);
    if (d < 0) return failed(what, path, -d);
    UniqueFd dirfd(d);
    if (auto r = check_outside(dirfd.get(), path, rules, what); !r) return std::move(r).error();
    return std::make_pair(std::move(dirfd), name);
}

std::string random_name(const std::string& base) {
    unsigned char raw[12];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = ::getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    static const char hex[] = "0123456789abcdef";
    std::string out = "." + base + ".tmp-";
    for (unsigned char c : raw) {
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    return out;
}

}  // namespace

Result<UniqueFd> open_host_file(const std::string& path, HostWrite mode, const HostFileRules& rules,
                                const std::string& what) {
    auto parent = open_parent(path, rules, what);
    if (!parent) return std::move(parent).error();
    auto& [dirfd, name] = *parent;
    // O_NONBLOCK: a FIFO put at the name opens at once (ENXIO without a reader)
    // instead of hanging the launch, and is then refused below. No O_TRUNC: the
    // file is emptied only once it is known to be ours to empty.
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (mode == HostWrite::append) flags |= O_APPEND;
    UniqueFd fd(::openat(dirfd.get(), name.c_str(), flags, 0600));
    if (!fd) return failed(what, path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return failed(what, path, errno);
    if (auto r = check_target(st, fd.get(), path, rules, what); !r) return std::move(r).error();
    if (mode == HostWrite::truncate && ::ftruncate(fd.get(), 0) != 0)
        return failed(what, path, errno);
    return fd;
}

Result<void> check_host_file(const std::string& path, const HostFileRules& rules,
                             const std::string& what) {
    auto parent = open_parent(path, rules, what);
    if (!parent) return std::move(parent).error();
    auto& [dirfd, name] = *parent;
    struct stat st {};
    if (::fstatat(dirfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return {};
        return failed(what, path, errno);
    }
    if (S_ISREG(st.st_mode)) {
        UniqueFd fd(::openat(dirfd.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
        if (!fd) return failed(what, path, errno);
        return check_target(st, fd.get(), path, rules, what);
    }
    return check_target(st, -1, path, rules, what);
}

namespace {

// What is at the name of a file replace_host_file will rename over. In a folder the
// sandbox could write (allowed: the result record, written once the sandbox is gone),
// a link, FIFO or socket there is what it planted, and the rename replaces it;
// elsewhere it is the user's, and refused as always.
Result<void> check_replaced(int dirfd, const std::string& name, const std::string& path,
                            const HostFileRules& rules, const std::string& what) {
    struct stat at {};
    if (::fstatat(dirfd, name.c_str(), &at, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? Result<void>{} : failed(what, path, errno);
    const bool planted = rules.allow_in_sandbox && !S_ISREG(at.st_mode) && !S_ISDIR(at.st_mode) &&
                         writable_root_of(dirfd, root_ids(rules)) != nullptr;
    if (planted) return {};
    return check_host_file(path, rules, what);
}

}  // namespace

Result<void> check_replaceable_host_file(const std::string& path, const HostFileRules& rules,
                                         const std::string& what) {
    auto parent = open_parent(path, rules, what);
    if (!parent) return std::move(parent).error();
    return check_replaced(parent->first.get(), parent->second, path, rules, what);
}

Result<void> replace_host_file(const std::string& path, const std::string& text,
                               const HostFileRules& rules, const std::string& what) {
    auto parent = open_parent(path, rules, what);
    if (!parent) return std::move(parent).error();
    // (Named members, not a structured binding: lambdas below use them, which
    // C++20 allows but clang before 16 does not.)
    auto& dirfd = parent->first;
    auto& name = parent->second;
    if (auto r = check_replaced(dirfd.get(), name, path, rules, what); !r) return r;
    // A name nobody can guess, made exclusively: a link or file planted at a
    // predictable temporary name (the old "FILE.tmp.PID") is never written through.
    // Mode 0600, like the logs: the record holds the command line, paths and refused
    // hosts, which are the caller's alone (CVE-2026-46406 was a world-readable one).
    std::string tmp;
    UniqueFd fd;
    for (int attempt = 0; attempt < 8 && !fd; ++attempt) {
        tmp = random_name(name);
        fd.reset(::openat(dirfd.get(), tmp.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600));
        if (!fd && errno != EEXIST) break;
    }
    if (!fd) return failed(what, path, errno);
    auto drop = [&](int err) {
        ::unlinkat(dirfd.get(), tmp.c_str(), 0);
        return failed(what, path, err);
    };
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(fd.get(), text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return drop(n < 0 ? errno : EIO);
        off += static_cast<size_t>(n);
    }
    if (::close(fd.release()) != 0) return drop(errno);
    // rename() replaces the name itself: a link put there since the check is
    // replaced, never followed.
    if (::renameat(dirfd.get(), tmp.c_str(), dirfd.get(), name.c_str()) != 0) return drop(errno);
    return {};
}

Result<HostLog> HostLog::open(const std::string& path, HostWrite mode, const HostFileRules& rules,
                              const std::string& what) {
    HostLog log;
    log.path_ = path;
    log.what_ = what;
    auto direct = open_host_file(path, mode, rules, what);
    if (direct) {
        log.fd_ = std::move(*direct);
        return log;
    }
    // Refused only for where it lies (inside a folder the sandbox writes, or a file
    // bound into it, or one with other links): kept aside when it can be replaced at
    // the end.
    const int code = direct.error().code();
    if (rules.allow_in_sandbox || (code != EPERM && code != EMLINK)) return std::move(direct).error();
    log.rules_ = rules;
    log.rules_.allow_in_sandbox = true;
    auto parent = open_parent(path, log.rules_, what);
    if (!parent) return std::move(parent).error();
    if (auto r = check_replaced(parent->first.get(), parent->second, path, log.rules_, what); !r)
        return std::move(r).error();
    log.fd_.reset(::memfd_create("agentjail-log", MFD_CLOEXEC));
    if (!log.fd_) return failed(what, path, errno);
    // An append log starts with what the file holds now, before the sandbox exists:
    // what the sandbox writes at the name during the run is replaced at the end.
    if (mode == HostWrite::append) {
        UniqueFd old(::openat(parent->first.get(), parent->second.c_str(),
                              O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
        struct stat st {};
        if (old && ::fstat(old.get(), &st) == 0 && S_ISREG(st.st_mode)) {
            if (st.st_size > (off_t{1} << 30))
                return refuse(what, path, EFBIG,
                              "is over 1 GiB, too large to keep aside during the run; start another log");
            for (off_t left = st.st_size; left > 0;) {
                ssize_t n = ::sendfile(log.fd_.get(), old.get(), nullptr, static_cast<size_t>(left));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) return failed(what, path, errno);
                if (n == 0) break;
                left -= n;
            }
            char last = '\n';
            if (st.st_size > 0 && ::pread(log.fd_.get(), &last, 1, st.st_size - 1) == 1 && last != '\n')
                if (::write(log.fd_.get(), "\n", 1) != 1) return failed(what, path, errno);
        }
    }
    log.aside_ = true;
    return log;
}

Result<void> HostLog::put_in_place() {
    if (!aside_ || !fd_) return {};
    aside_ = false;
    UniqueFd fd = std::move(fd_);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return failed(what_, path_, errno);
    std::string text(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        ssize_t n = ::pread(fd.get(), text.data() + got, text.size() - got, static_cast<off_t>(got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    return replace_host_file(path_, text, rules_, what_);
}

std::string read_small_file(const std::string& path, base::wstring& out, std::size_t max) {
    const std::string limit = max % (1 << 20) == 0 ? std::to_string(max >> 20) + " MiB" : std::to_string(max) + " bytes";
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd) return path + ": " + util::errno_text(errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return path + ": " + util::errno_text(errno);
    if (!S_ISREG(st.st_mode)) return path + ": not a regular file";
    if (static_cast<std::size_t>(st.st_size) > max) return path + ": larger than " + limit;
    out.reserve(static_cast<std::size_t>(st.st_size) + 1);
    char buf[4096];
    std::string why;
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            why = path + ": " + util::errno_text(errno);
            break;
        }
        if (n == 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > max) {
            why = path + ": larger than " + limit;
            break;
        }
    }
    base::wipe(buf, sizeof buf);
    return why;
}

}  // namespace agentjail::sys
