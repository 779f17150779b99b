// SPDX-License-Identifier: Apache-2.0
// Per-run state directories and run.json (see runs.hpp). Every name below the
// state home is opened relative to its parent's descriptor with O_NOFOLLOW: a run
// of an earlier sandbox (direct mode with `-C ~`) may have planted links there,
// and agentjail must not write, read or delete through them.
#include "workspace/runs.hpp"

#include "util/strings.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>

namespace agentjail::workspace {

namespace {

Error sys_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, what + ": " + util::errno_text(err));
}

Error bad(const std::string& what, int err = EINVAL) {
    return Error(ErrorKind::invalid_input, err, what);
}

constexpr const char* kRecordName = "run.json";

// Opens (creating, 0700) the directory `name` under `parent` without following a
// link; it must be the caller's own and closed to others, so nobody else can swap
// what lies below it.
Result<sys::UniqueFd> own_dir_at(int parent, const std::string& name, const std::string& path) {
    if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST)
        return sys_error(errno, "state directory " + path);
    int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP || err == ENOTDIR)
            return bad("state directory " + path + " is not a directory (a link or a file): refused", err);
        return sys_error(err, "state directory " + path);
    }
    sys::UniqueFd d(fd);
    struct stat st {};
    if (::fstat(d.get(), &st) != 0) return sys_error(errno, "state directory " + path);
    if (st.st_uid != ::geteuid())
        return bad("state directory " + path + " belongs to uid " + std::to_string(st.st_uid) +
                       ", not to you: refused", EPERM);
    if ((st.st_mode & 022) != 0)
        return bad("state directory " + path + " is writable by others: refused (chmod go-w it)", EPERM);
    return d;
}

// Opens the state home (root without its "agentjail/runs" tail): the part that
// exists is the user's own layout and is followed as they set it up; what is
// missing is created 0700, one component at a time, never through a link.
Result<sys::UniqueFd> open_base(const std::string& base) {
    std::string path = util::normalize_path(base);
    if (path.empty()) return bad("state directory " + base + " is not an absolute path");
    std::vector<std::string> missing;
    std::string cur = path;
    int fd = -1;
    for (;;) {
        fd = ::open(cur.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) break;
        if (errno != ENOENT || cur == "/") return sys_error(errno, "state directory " + cur);
        auto slash = cur.rfind('/');
        missing.push_back(cur.substr(slash + 1));
        cur = slash == 0 ? "/" : cur.substr(0, slash);
    }
    sys::UniqueFd d(fd);
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

}  // namespace

Result<sys::UniqueFd> open_own_state_dir(const std::string& base, const std::vector<std::string>& names);

namespace {

// Opens root (".../agentjail/runs"), creating it when `create`.
Result<sys::UniqueFd> open_root(const std::string& root, bool create) {
    std::string path = util::normalize_path(root);
    if (path.empty()) return bad("runs directory " + root + " is not an absolute path");
    const std::string tail = "/agentjail/runs";
    std::string base = path;
    std::vector<std::string> own;
    if (path.size() > tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0) {
        base = path.substr(0, path.size() - tail.size());
        if (base.empty()) base = "/";
        own = {"agentjail", "runs"};
    }
    if (!create) {
        // Nothing is made when only reading: a missing root is "no runs".
        int fd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return sys_error(errno, "state directory " + base);
        sys::UniqueFd d(fd);
        std::string cur = base;
        for (const auto& name : own) {
            cur += "/" + name;
            struct stat st {};
            if (::fstatat(d.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
                return sys_error(errno, "state directory " + cur);
            auto next = own_dir_at(d.get(), name, cur);
            if (!next) return next;
            d = std::move(*next);
        }
        return d;
    }
    return open_own_state_dir(base, own);
}

Result<std::string> read_at(int dirfd, const char* name, const std::string& what) {
    int fd = ::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sys_error(errno, what);
    sys::UniqueFd f(fd);
    struct stat st {};
    if (::fstat(f.get(), &st) != 0) return sys_error(errno, what);
    if (!S_ISREG(st.st_mode)) return bad(what + ": not a regular file");
    if (st.st_size > (16 << 20)) return bad(what + ": larger than 16 MiB");
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(f.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return sys_error(errno, what);
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
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

std::string runs_root(const std::vector<std::string>& environ, const std::string& home) {
    return util::normalize_path(state_home(environ, home) + "/agentjail/runs");
}

Result<sys::UniqueFd> open_own_state_dir(const std::string& base, const std::vector<std::string>& names) {
    auto d = open_base(base);
    if (!d) return d;
    std::string cur = util::normalize_path(base);
    for (const auto& name : names) {
        cur += "/" + name;
        auto next = own_dir_at(d->get(), name, cur);
        if (!next) return next;
        *d = std::move(*next);
    }
    return d;
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

Result<RunDir> create_run(const std::string& root) {
    auto r = open_root(root, true);
    if (!r) return std::move(r).error();
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::string id = new_run_id();
        if (::mkdirat(r->get(), id.c_str(), 0700) != 0) {
            if (errno == EEXIST) continue;
            return sys_error(errno, "run directory " + root + "/" + id);
        }
        int fd = ::openat(r->get(), id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return sys_error(errno, "run directory " + root + "/" + id);
        return RunDir{id, util::normalize_path(root) + "/" + id, sys::UniqueFd(fd)};
    }
    return Error(ErrorKind::setup, EEXIST, "run directory under " + root + ": no free run id");
}

Result<RunDir> open_run(const std::string& root, const std::string& id) {
    if (!valid_run_id(id))
        return bad("'" + util::printable(id) +
                   "' is not a run id (they look like 20261202-011500-ab12cd; `agentjail runs` lists them)");
    auto r = open_root(root, false);
    if (!r) {
        if (r.error().code() == ENOENT) return bad("no run " + id + " (`agentjail runs` lists them)", ENOENT);
        return std::move(r).error();
    }
    int fd = ::openat(r->get(), id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT) return bad("no run " + id + " (`agentjail runs` lists them)", ENOENT);
        if (err == ELOOP || err == ENOTDIR) return bad("run " + id + ": not a directory: refused", err);
        return sys_error(err, "run " + id);
    }
    return RunDir{id, util::normalize_path(root) + "/" + id, sys::UniqueFd(fd)};
}

std::string record_to_json(const RunRecord& rec, int indent) {
    nlohmann::ordered_json j;
    j["id"] = rec.id;
    j["mode"] = rec.mode;
    j["workspace"] = rec.workspace;
    j["repo"] = rec.repo;
    j["branch"] = rec.branch;
    j["base"] = rec.base;
    j["started"] = rec.started;
    j["ended"] = rec.ended;
    j["status"] = rec.status;
    j["message"] = rec.message;
    j["flags"] = rec.flags;
    if (!rec.report_json.empty()) {
        auto rep = nlohmann::ordered_json::parse(rec.report_json, nullptr, false);
        j["report"] = rep.is_discarded() ? nlohmann::ordered_json(rec.report_json) : rep;
    } else {
        j["report"] = nullptr;
    }
    // Paths may hold any byte: replaced, not thrown on, so a record is always written.
    return j.dump(indent, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

Result<RunRecord> record_from_json(const std::string& text, const std::string& what) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return bad(what + ": not a JSON object");
    RunRecord rec;
    auto str = [&](const char* key, std::string& out) {
        auto it = j.find(key);
        if (it != j.end() && it->is_string()) out = it->get<std::string>();
    };
    str("id", rec.id);
    str("mode", rec.mode);
    str("workspace", rec.workspace);
    str("repo", rec.repo);
    str("branch", rec.branch);
    str("base", rec.base);
    str("started", rec.started);
    str("ended", rec.ended);
    str("status", rec.status);
    str("message", rec.message);
    if (auto it = j.find("flags"); it != j.end() && it->is_number_unsigned())
        rec.flags = it->get<std::size_t>();
    if (auto it = j.find("report"); it != j.end() && it->is_object()) rec.report_json = it->dump();
    return rec;
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
    sys::UniqueFd f(fd);
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

Result<void> write_record(const RunDir& dir, const RunRecord& rec) {
    return replace_file_at(dir.fd.get(), kRecordName, record_to_json(rec) + "\n", 0600,
                           "run record " + dir.path + "/" + kRecordName);
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
    sys::UniqueFd s(sub);
    (void)::fchmod(s.get(), 0700);
    if (auto r = remove_tree_at(s.get(), what); !r) return r;
    s.reset();
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return sys_error(errno, what);
    return {};
}

Result<RunRecord> load_run(const std::string& root, const std::string& id) {
    auto d = open_run(root, id);
    if (!d) return std::move(d).error();
    auto text = read_at(d->fd.get(), kRecordName, "run " + id + ": " + kRecordName);
    if (!text) return std::move(text).error();
    auto rec = record_from_json(*text, "run " + id + ": " + kRecordName);
    if (!rec) return rec;
    // The directory's name is the id: a record that claims another is not trusted for it.
    rec->id = id;
    rec->dir = d->path;
    return rec;
}

Result<std::vector<RunRecord>> list_runs(const std::string& root) {
    std::vector<RunRecord> out;
    auto r = open_root(root, false);
    if (!r) {
        if (r.error().code() == ENOENT) return out;
        return std::move(r).error();
    }
    int dfd = ::dup(r->get());
    if (dfd < 0) return sys_error(errno, "runs directory " + root);
    DIR* dir = ::fdopendir(dfd);
    if (!dir) {
        int err = errno;
        ::close(dfd);
        return sys_error(err, "runs directory " + root);
    }
    std::vector<std::string> ids;
    while (dirent* e = ::readdir(dir))
        if (valid_run_id(e->d_name)) ids.emplace_back(e->d_name);
    ::closedir(dir);
    std::sort(ids.begin(), ids.end());
    for (const auto& id : ids) {
        auto rec = load_run(root, id);
        if (rec) {
            out.push_back(std::move(*rec));
        } else {
            RunRecord bad_rec;
            bad_rec.id = id;
            bad_rec.status = "unreadable";
            bad_rec.message = rec.error().message();
            bad_rec.dir = util::normalize_path(root) + "/" + id;
            out.push_back(std::move(bad_rec));
        }
    }
    return out;
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
            sys::UniqueFd s(sub);
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

Result<void> remove_run(const std::string& root, const std::string& id) {
    auto d = open_run(root, id);
    if (!d) return std::move(d).error();
    (void)::fchmod(d->fd.get(), 0700);
    if (auto r = remove_tree_at(d->fd.get(), d->path); !r) return r;
    auto parent = open_root(root, false);
    if (!parent) return std::move(parent).error();
    if (::unlinkat(parent->get(), id.c_str(), AT_REMOVEDIR) != 0)
        return sys_error(errno, "run directory " + d->path);
    return {};
}

}  // namespace agentjail::workspace
