// SPDX-License-Identifier: Apache-2.0
// The plan's host actions, made where the sandbox of an earlier run may have
// planted links: the agent's state directory is written by the sandbox, so every
// name agentjail makes or writes there is opened relative to its parent without
// following a link, and a link or a wrong kind of file found there is replaced.
#include "run/host_actions.hpp"

#include "base/pattern.hpp"
#include "plan/plan.hpp"
#include "sys/fd.hpp"
#include "sys/scan.hpp"
#include "sys/state_dir.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <optional>
#include <string>
#include <vector>

namespace agentjail::run {

namespace {

Error setup_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, what + ": " + util::errno_text(err));
}

// The names of `path` below `base` ("a/b/c" -> {"a", "b", "c"}); nullopt when it
// is not below it.
std::optional<std::vector<std::string>> names_below(const std::string& path, const std::string& base) {
    if (!util::path_within(path, base) || path == base) return std::nullopt;
    std::vector<std::string> out;
    for (std::string_view n : base::split_path(std::string_view(path).substr(base.size()))) {
        if (n == "." || n == "..") return std::nullopt;
        out.emplace_back(n);
    }
    return out;
}

// Makes `name` under dirfd the kind wanted (an empty directory or an empty file)
// when it is missing, a link, or another kind of file the sandbox left there:
// whatever is in the way goes (sys::remove_at: never through a link).
Result<void> ensure_entry(int dirfd, const std::string& name, bool want_dir, const std::string& path) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) return {};
        if (auto r = sys::remove_at(dirfd, name, "agent state " + path); !r) return r;
    } else if (errno != ENOENT) {
        return setup_error(errno, "agent state " + path);
    }
    if (want_dir) {
        if (::mkdirat(dirfd, name.c_str(), 0700) != 0 && errno != EEXIST)
            return setup_error(errno, "agent state " + path);
        return {};
    }
    int fd = ::openat(dirfd, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return setup_error(errno, "agent state " + path);
    if (fd >= 0) ::close(fd);
    return {};
}

// The mount point `names` below the state directory: each directory on the way,
// then the last name as a directory or an empty file.
Result<void> mount_point(int state_fd, const std::string& state_dir, const std::vector<std::string>& names,
                         bool is_dir) {
    sys::UniqueFd dir(::fcntl(state_fd, F_DUPFD_CLOEXEC, 0));
    if (!dir) return setup_error(errno, "agent state " + state_dir);
    std::string path = state_dir;
    for (size_t i = 0; i < names.size(); ++i) {
        path += "/" + names[i];
        const bool last = i + 1 == names.size();
        if (auto r = ensure_entry(dir.get(), names[i], last ? is_dir : true, path); !r) return r;
        if (last) break;
        int next = ::openat(dir.get(), names[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) return setup_error(errno, "agent state " + path);
        dir.reset(next);
    }
    return {};
}

// A file of the state directory replaced by its text; a directory the sandbox put
// at the name would make the rename fail: it goes.
Result<void> write_file(int state_fd, const std::string& name, const std::string& text, const std::string& path) {
    struct stat st {};
    if (::fstatat(state_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
        if (auto r = sys::remove_at(state_fd, name, "agent state " + path); !r) return r;
    return sys::replace_file_at(state_fd, name.c_str(), text, 0600, "agent state " + path);
}

// The placeholder key: written under a fresh name (O_EXCL, O_NOFOLLOW), then
// linked to its name, which fails if another agentjail made it first (that one
// stays, and serves the runs after this one).
Result<void> make_key(const plan::HostAction& a) {
    const std::string dir_path = a.path.substr(0, a.path.rfind('/'));
    auto names = names_below(dir_path, util::normalize_path(a.base));
    if (!names) return Error(ErrorKind::internal, EINVAL, "placeholder key " + a.path + ": not in the state home");
    auto dir = sys::open_own_state_dir(a.base, *names);
    if (!dir) return std::move(dir).error();
    const std::string name = a.path.substr(a.path.rfind('/') + 1);
    unsigned char rnd[8];
    if (::getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd))
        return setup_error(errno, "placeholder key " + a.path);
    std::string tmp = name + ".new-";
    static const char hex[] = "0123456789abcdef";
    for (unsigned char c : rnd) {
        tmp += hex[c >> 4];
        tmp += hex[c & 15];
    }
    sys::UniqueFd fd(::openat(dir->get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return setup_error(errno, "placeholder key " + a.path);
    int err = 0;
    size_t put = 0;
    while (put < a.text.size() && err == 0) {
        ssize_t n = ::write(fd.get(), a.text.data() + put, a.text.size() - put);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) err = n < 0 ? errno : EIO;
        else put += static_cast<size_t>(n);
    }
    if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
    if (err == 0 && ::linkat(dir->get(), tmp.c_str(), dir->get(), name.c_str(), 0) != 0 && errno != EEXIST)
        err = errno;
    (void)::unlinkat(dir->get(), tmp.c_str(), 0);
    if (err != 0) return setup_error(err, "placeholder key " + a.path);
    return {};
}

}  // namespace

Result<void> carry_out(plan::Plan& plan, std::vector<std::string>& warnings) {
    using Kind = plan::HostAction::Kind;
    sys::UniqueFd state;
    std::string state_path;
    for (auto& a : plan.host_actions) {
        switch (a.kind) {
        case Kind::state_dir: {
            auto names = names_below(a.path, util::normalize_path(a.base));
            if (!names) return Error(ErrorKind::internal, EINVAL, "agent state " + a.path + ": not in the state home");
            auto dir = sys::open_own_state_dir(a.base, *names);
            if (!dir) return std::move(dir).error();
            state = std::move(*dir);
            state_path = a.path;
            break;
        }
        case Kind::mount_point:
        case Kind::file: {
            auto names = state ? names_below(a.path, state_path) : std::nullopt;
            if (!names || (a.kind == Kind::file && names->size() != 1))
                return Error(ErrorKind::internal, EINVAL, "agent state " + a.path + ": not in the state directory");
            auto r = a.kind == Kind::file ? write_file(state.get(), names->front(), a.text, a.path)
                                          : mount_point(state.get(), state_path, *names, a.is_dir);
            if (!r) return r;
            break;
        }
        case Kind::placeholder_key: {
            auto r = make_key(a);
            OPENSSL_cleanse(a.text.data(), a.text.size());
            a.text.clear();
            if (!r)
                warnings.push_back(r.error().message() +
                                   "; the secret placeholders of this run will differ in the next one");
            break;
        }
        }
    }
    return {};
}

namespace {

// The kept walks past `keep`, the oldest (by mtime) first, go.
void prune_walks(int dirfd, std::size_t keep) {
    sys::UniqueFd list(::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!list) return;
    DIR* d = ::fdopendir(list.release());
    if (d == nullptr) return;
    std::vector<std::pair<struct timespec, std::string>> files;
    while (dirent* e = ::readdir(d)) {
        struct stat st {};
        if (e->d_name[0] == '.' || ::fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        files.emplace_back(st.st_mtim, e->d_name);
    }
    ::closedir(d);
    if (files.size() <= keep) return;
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
        return a.first.tv_sec != b.first.tv_sec ? a.first.tv_sec < b.first.tv_sec : a.first.tv_nsec < b.first.tv_nsec;
    });
    for (std::size_t i = 0; i + keep < files.size(); ++i) (void)::unlinkat(dirfd, files[i].second.c_str(), 0);
}

}  // namespace

KeptWalkOf::KeptWalkOf(const plan::Plan& plan)
    : kept(plan.kept_scan), workspace(plan.workspace), plan_walk(plan.workspace_scan) {}

Result<void> keep_walk(const KeptWalkOf& of, const sys::Scan& walk) {
    const plan::Plan::KeptScan& k = of.kept;
    if (k.name.empty() || walk.root != of.workspace) return {};
    // The directories read again, this run's placeholders' among them: a few are
    // read again by the next run too, cheaper than writing the whole walk each time.
    const bool from_kept = of.plan_walk && of.plan_walk->reused > 0;
    const std::size_t again = walk.listed + (of.plan_walk ? of.plan_walk->listed : 0);
    if (from_kept && again * 32 <= walk.listed + walk.reused) return {};
    const std::string bytes = sys::encode(walk);
    if (bytes.empty()) return {};
    auto dir = sys::open_own_state_dir(k.base, {"agentjail", "scans"});
    if (!dir) return std::move(dir).error();
    struct stat st {};
    const bool fresh = ::fstatat(dir->get(), k.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0;
    if (auto r = sys::replace_file_at(dir->get(), k.name.c_str(), bytes, 0600, "the workspace's kept walk"); !r)
        return r;
    // A workspace's first walk kept: the oldest others may go.
    if (fresh) prune_walks(dir->get(), 64);
    return {};
}

}  // namespace agentjail::run
