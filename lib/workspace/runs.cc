// SPDX-License-Identifier: Apache-2.0
// Per-run state directories and run.json (see runs.hpp). Every name below the
// state home is opened relative to its parent's descriptor with O_NOFOLLOW: a run
// of an earlier sandbox (direct mode with `-C ~`) may have planted links there,
// and agentjail must not write, read or delete through them.
#include "workspace/runs.hpp"

#include "util/strings.hpp"
#include "sys/state_dir.hpp"

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



}  // namespace

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
            auto next = sys::own_dir_at(d.get(), name, cur);
            if (!next) return next;
            d = std::move(*next);
        }
        return d;
    }
    return sys::open_own_state_dir(base, own);
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


}  // namespace


std::string runs_root(const std::vector<std::string>& environ, const std::string& home) {
    return util::normalize_path(sys::state_home(environ, home) + "/agentjail/runs");
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


Result<void> write_record(const RunDir& dir, const RunRecord& rec) {
    return sys::replace_file_at(dir.fd.get(), kRecordName, record_to_json(rec) + "\n", 0600,
                           "run record " + dir.path + "/" + kRecordName);
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


Result<void> remove_run(const std::string& root, const std::string& id) {
    auto d = open_run(root, id);
    if (!d) return std::move(d).error();
    (void)::fchmod(d->fd.get(), 0700);
    if (auto r = sys::remove_tree_at(d->fd.get(), d->path); !r) return r;
    auto parent = open_root(root, false);
    if (!parent) return std::move(parent).error();
    if (::unlinkat(parent->get(), id.c_str(), AT_REMOVEDIR) != 0)
        return sys_error(errno, "run directory " + d->path);
    return {};
}

}  // namespace agentjail::workspace
