// SPDX-License-Identifier: Apache-2.0
// plan::HostView: the host's answers, with the names the run's host actions make
// answered as they will be.
#include "plan/host_view.hpp"

#include "plan/plan.hpp"
#include "sys/caller.hpp"
#include "sys/confinement.hpp"

#include "sys/fd.hpp"
#include "sys/host_file.hpp"
#include "sys/state_dir.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <dirent.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <glob.h>
#include <linux/openat2.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include <cerrno>
#include <climits>
#include <cstdlib>

extern char** environ;

namespace agentjail::plan {

namespace {

std::string parent_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

std::string name_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

void fake_stat(bool is_dir, struct stat& st) {
    st = {};
    st.st_mode = is_dir ? (S_IFDIR | 0700) : (S_IFREG | 0600);
    st.st_uid = ::geteuid();
    st.st_gid = ::getegid();
    st.st_nlink = is_dir ? 2 : 1;
}

}  // namespace

void HostView::will_make(const std::string& path, bool is_dir) {
    if (const Made* m = find(path)) {
        made_[static_cast<std::size_t>(m - made_.data())].is_dir = is_dir;
        return;
    }
    // The parent as it will be (made by an earlier action, or the host's own, its
    // existing part followed as the user set it up), then this name: the action
    // makes it without following a link.
    std::string rest;
    const std::string parent = parent_of(path);
    std::string canon_parent;
    if (const Made* up = above(parent, rest))
        canon_parent = up->canonical + rest;
    else
        canon_parent = sys::resolve_existing(parent);
    made_.push_back(Made{path, canon_parent == "/" ? "/" + name_of(path) : canon_parent + "/" + name_of(path), is_dir});
}

const HostView::Made* HostView::find(const std::string& path) const {
    for (const auto& m : made_)
        if (m.path == path || m.canonical == path) return &m;
    return nullptr;
}

const HostView::Made* HostView::above(const std::string& path, std::string& rest) const {
    const Made* best = nullptr;
    size_t best_len = 0;
    for (const auto& m : made_)
        for (const std::string* name : {&m.path, &m.canonical})
            if (util::path_within(path, *name) && name->size() >= best_len) {
                best = &m;
                best_len = name->size();
                rest = path.substr(name->size());
            }
    return best;
}

bool HostView::makes(const std::string& path) const { return find(path) != nullptr; }

int HostView::lstat(const std::string& path, struct stat& st) const {
    if (const Made* m = find(path)) {
        fake_stat(m->is_dir, st);
        return 0;
    }
    return ::lstat(path.c_str(), &st);
}

int HostView::stat(const std::string& path, struct stat& st) const {
    if (const Made* m = find(path)) {
        fake_stat(m->is_dir, st);
        return 0;
    }
    if (::stat(path.c_str(), &st) == 0) return 0;
    // Below a directory an action makes, through its canonical name.
    std::string rest;
    if (const Made* up = above(path, rest); up != nullptr && !rest.empty())
        return ::stat((up->canonical + rest).c_str(), &st);
    return -1;
}

std::optional<std::string> HostView::canonical(const std::string& path) const {
    if (const Made* m = find(path)) return m->canonical;
    std::string rest;
    // Below a name an action makes: what the host has there is reached through it
    // as it will be (a link planted at the name is replaced, not followed).
    if (const Made* up = above(path, rest)) {
        const std::string below = up->canonical + rest;
        char buf[PATH_MAX];
        if (::realpath(below.c_str(), buf) == nullptr) return std::nullopt;
        return std::string(buf);
    }
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return std::nullopt;
    return std::string(buf);
}

std::optional<std::string> HostView::readlink(const std::string& path) const {
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
}

bool HostView::is_dir(const std::string& path) const {
    struct stat st {};
    return stat(path, st) == 0 && S_ISDIR(st.st_mode);
}

bool HostView::executable_file(const std::string& path) const {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

const HostView::Listing& HostView::listing(const std::string& dir) const {
    auto [it, fresh] = listings_.try_emplace(dir);
    if (!fresh) return it->second;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
        it->second.error = errno;
        return it->second;
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") names.push_back(std::move(name));
    }
    ::closedir(d);
    it->second.names = std::move(names);
    return it->second;
}

bool HostView::entry_inodes_exact(const std::string& path) const {
    struct statfs fs {};
    if (::statfs(path.c_str(), &fs) != 0) return false;
    // f_type's width differs between ABIs: compared as unsigned 32-bit values.
    const auto t = static_cast<std::uint32_t>(fs.f_type);
    for (std::uint32_t ok : {static_cast<std::uint32_t>(EXT4_SUPER_MAGIC), static_cast<std::uint32_t>(XFS_SUPER_MAGIC),
                             static_cast<std::uint32_t>(BTRFS_SUPER_MAGIC), static_cast<std::uint32_t>(TMPFS_MAGIC),
                             static_cast<std::uint32_t>(F2FS_SUPER_MAGIC), 0x2fc12fc1u /* zfs */})
        if (t == ok) return true;
    return false;
}

std::vector<std::string> HostView::list(const std::string& dir) const {
    const Listing& l = listing(dir);
    return l.names ? *l.names : std::vector<std::string>{};
}

namespace {

// glob(3) reads directories through these (GLOB_ALTDIRFUNC), from the view's
// listings: the view of the call in progress on this thread.
struct GlobDir {
    const std::vector<std::string>* names;
    std::size_t next = 0;
    dirent entry{};
};
thread_local const std::function<const std::vector<std::string>*(const char*)>* glob_lister = nullptr;

void* glob_opendir(const char* dir) {
    const std::vector<std::string>* names = (*glob_lister)(dir);
    return names == nullptr ? nullptr : new GlobDir{names};
}

dirent* glob_readdir(void* handle) {
    auto* d = static_cast<GlobDir*>(handle);
    while (d->next < d->names->size()) {
        const std::string& name = (*d->names)[d->next++];
        if (name.size() >= sizeof d->entry.d_name) continue;  // no such name on Linux
        d->entry.d_ino = 1;  // glob skips entries whose inode number is 0
        d->entry.d_type = DT_UNKNOWN;
        name.copy(d->entry.d_name, name.size());
        d->entry.d_name[name.size()] = '\0';
        return &d->entry;
    }
    return nullptr;
}

void glob_closedir(void* handle) { delete static_cast<GlobDir*>(handle); }

int glob_lstat(const char* path, struct stat* st) { return ::lstat(path, st); }
int glob_stat(const char* path, struct stat* st) { return ::stat(path, st); }

}  // namespace

std::vector<std::string> HostView::glob(const std::string& pattern) const {
    const std::function<const std::vector<std::string>*(const char*)> lister =
        [this](const char* dir) -> const std::vector<std::string>* {
        const Listing& l = listing(*dir == '\0' ? std::string(".") : std::string(dir));
        if (!l.names) errno = l.error;
        return l.names ? &*l.names : nullptr;
    };
    glob_lister = &lister;
    std::vector<std::string> out;
    glob_t g{};
    g.gl_opendir = glob_opendir;
    g.gl_readdir = glob_readdir;
    g.gl_closedir = glob_closedir;
    g.gl_lstat = glob_lstat;
    g.gl_stat = glob_stat;
    if (::glob(pattern.c_str(), GLOB_ALTDIRFUNC, nullptr, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    glob_lister = nullptr;
    return out;
}

std::optional<std::string> HostView::read_beneath(const std::string& root, const std::string& rel,
                                                  std::size_t max) const {
    sys::UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) return std::nullopt;
    sys::UniqueFd fd(sys::openat2(dir.get(), rel.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
                                  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!fd) {
        fd.release();
        return std::nullopt;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) > max)
        return std::nullopt;
    std::string out(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < out.size()) {
        ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    out.resize(got);
    return out;
}

std::optional<std::string> HostView::read_head(const std::string& path, std::size_t max) const {
    sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    std::string out(max, '\0');
    ssize_t n = ::read(fd.get(), out.data(), max);
    if (n < 0) return std::nullopt;
    out.resize(static_cast<size_t>(n));
    return out;
}

std::optional<std::string> HostView::read_text(const std::string& path, std::size_t max) const {
    base::wstring text;
    if (!sys::read_small_file(path, text, max).empty()) return std::nullopt;
    return std::string(text.data(), text.size());
}

Result<sys::Scan> HostView::scan(const std::string& root, const sys::ScanOptions& options) const {
    return sys::scan(root, options);
}

Result<void> HostView::stat_entry(const sys::Scan& scan, sys::ScanEntry& entry) const {
    return sys::stat_entry(scan, entry);
}

std::string HostView::resolve_existing(const std::string& path) const { return sys::resolve_existing(path); }

namespace {

// <base>/agentjail/<dirs...>/<name> (host_view.hpp, read_state_file): `exact`, of
// `size` bytes; else of at most `size`.
HostView::StateFile read_own_state(const std::string& base, const std::vector<std::string>& dirs, const std::string& name,
                                   std::size_t size, bool exact, std::string& out) {
    using StateFile = HostView::StateFile;
    std::string dir = base;
    for (const auto& d : dirs) dir += "/" + d;
    auto d = sys::open_own_state_dir(base, dirs, sys::StateDir::existing);
    if (!d) {
        if (d.error().code() == ENOENT) return {true, {}};
        return {false, dir + ": " + d.error().message()};
    }
    auto refused = [&](const std::string& why) { return StateFile{false, dir + "/" + name + ": " + why}; };
    sys::UniqueFd fd(::openat(d->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    if (!fd) return errno == ENOENT ? StateFile{true, {}} : refused(util::errno_text(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return refused(util::errno_text(errno));
    if (!S_ISREG(st.st_mode)) return refused("not a regular file");
    if (st.st_uid != ::geteuid()) return refused("belongs to uid " + std::to_string(st.st_uid) + ", not to you");
    if ((st.st_mode & 077) != 0) return refused("readable or writable by others (it must be mode 0600)");
    // A hard link planted elsewhere would be another name for it.
    if (st.st_nlink != 1) return refused("has other hard links");
    if (exact ? st.st_size != static_cast<off_t>(size) : st.st_size > static_cast<off_t>(size))
        return refused((exact ? "not " : "more than ") + std::to_string(size) + " bytes");
    const auto want = static_cast<std::size_t>(st.st_size);
    base::wstring buf;
    buf.resize(want);
    std::size_t got = 0;
    while (got < want) {
        ssize_t n = ::read(fd.get(), buf.data() + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return refused("short read");
        got += static_cast<std::size_t>(n);
    }
    out.assign(buf.data(), want);
    base::wipe(buf.data(), buf.size());
    return {};
}

}  // namespace

HostView::StateFile HostView::read_state_file(const std::string& base, const char* name, std::size_t size,
                                              std::string& out) const {
    return read_own_state(base, {"agentjail"}, name, size, true, out);
}

HostView::StateFile HostView::read_state_file_in(const std::string& base, const std::string& dir,
                                                 const std::string& name, std::size_t max, std::string& out) const {
    return read_own_state(base, {"agentjail", dir}, name, max, false, out);
}

net::SourceProbe HostView::probe_secret(const net::SourceSpec& spec, const std::string& secret_name,
                                        const std::vector<std::string>& environ,
                                        const std::string& expires) const {
    auto read = [](const std::string& path, base::wstring& out) { return sys::read_small_file(path, out); };
    return net::find_source(spec, secret_name, net::environ_lines(environ), read, expires);
}

// The host's facts: who calls, from where, with what (plan.hpp, HostFacts).

namespace {

// A home directory: canonical where it exists, else as named (normalised).
std::string canonical_home(const std::string& home) {
    if (home.empty()) return home;
    auto canon = HostView().canonical(home);
    return canon ? *canon : util::normalize_path(home);
}

}  // namespace

Result<void> HostFacts::run_as_identity(uid_t new_uid, gid_t new_gid, const std::string& new_home) {
    if (new_uid == uid && new_gid == gid && new_home.empty()) return {};
    // Mapping another uid or gid into the sandbox's user namespace, and dropping the
    // supplementary groups there, is the privilege of root in the caller's namespace.
    if (::getuid() != 0 && (new_uid != ::getuid() || new_gid != ::getgid()))
        return Error(ErrorKind::invalid_input, EPERM,
                     "run as uid " + std::to_string(new_uid) + " gid " + std::to_string(new_gid) +
                         ": only root may run the command as another identity (this process is uid " +
                         std::to_string(::getuid()) + ")");
    if (new_uid == static_cast<uid_t>(-1) || new_gid == static_cast<gid_t>(-1))
        return Error(ErrorKind::invalid_input, EINVAL, "run as: uid and gid must both be given");
    auto [name, dir] = sys::passwd_of(new_uid);
    if (new_uid != uid) {
        user = name.empty() ? std::to_string(new_uid) : name;
        home = canonical_home(dir);
    }
    if (!new_home.empty()) {
        if (new_home[0] != '/')
            return Error(ErrorKind::invalid_input, EINVAL, "home '" + new_home + "' is not an absolute path");
        home = canonical_home(new_home);
    }
    run_as = new_uid != ::getuid() || new_gid != ::getgid();
    uid = new_uid;
    gid = new_gid;
    return {};
}

Result<HostFacts> HostFacts::current() {
    HostFacts h;
    h.uid = ::getuid();
    h.gid = ::getgid();

    const std::string pw_name = sys::passwd_of(h.uid).first;
    const char* env_user = ::getenv("USER");
    h.user = !pw_name.empty() ? pw_name : (env_user != nullptr ? env_user : "");
    // One rule for the caller's home and directory, the CLI's flags and the plan alike.
    h.home = sys::caller_home();
    auto cwd = sys::caller_cwd();
    if (!cwd) return std::move(cwd).error();
    h.cwd = *cwd;

    for (char** e = ::environ; e != nullptr && *e != nullptr; ++e) h.environ.emplace_back(*e);
    h.landlock_abi = sys::landlock_abi();
    h.seccomp_listener_taken = sys::seccomp_listener_taken();
    for (int res : {RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_CPU}) {
        struct rlimit rl {};
        if (::getrlimit(res, &rl) == 0) h.rlimit_hard.emplace_back(res, static_cast<std::uint64_t>(rl.rlim_max));
    }
    return h;
}

}  // namespace agentjail::plan
