// SPDX-License-Identifier: Apache-2.0
// Per-run state directories and run.json (see runs.hpp). Every name below the
// state home is opened relative to its parent's descriptor with O_NOFOLLOW: a run
// of an earlier sandbox (direct mode with `-C ~`) may have planted links there,
// and agentjail must not write, read or delete through them.
#include "workspace/runs.hpp"

#include "plan/plan.hpp"
#include "util/strings.hpp"
#include "sys/state_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <ctime>

namespace agentjail::workspace {

namespace {

Error sys_error(int err, const std::string& what) { return util::errno_error(ErrorKind::setup, err, what); }

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



Result<RunDir> create_run(const std::string& root, const std::string& given_id) {
    auto r = open_root(root, true);
    if (!r) return std::move(r).error();
    if (!given_id.empty() && !sys::valid_run_id(given_id))
        return bad("'" + util::printable(given_id) + "' is not a run id");
    for (int attempt = 0; attempt < 16; ++attempt) {
        std::string id = given_id.empty() ? sys::new_run_id() : given_id;
        if (!given_id.empty() && attempt > 0)
            return Error(ErrorKind::setup, EEXIST, "run directory " + root + "/" + id + " exists already");
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
    if (!sys::valid_run_id(id))
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


Result<RunDir> create_planned_run(const plan::Plan& plan) {
    if (plan.run_id.empty() || plan.run_dir.empty())
        return Error(ErrorKind::internal, EINVAL, "the plan names no run directory");
    const std::string root = plan.run_dir.substr(0, plan.run_dir.rfind('/'));
    auto dir = create_run(root, plan.run_id);
    if (!dir) return dir;
    // The kernel's name for what was made must be the plan's: the layers and the
    // clone are mounted by that path. A link planted on the way since the plan was
    // made would show here.
    char buf[PATH_MAX];
    const std::string proc = "/proc/self/fd/" + std::to_string(dir->fd.get());
    ssize_t n = ::readlink(proc.c_str(), buf, sizeof buf - 1);
    if (n < 0) {
        int err = errno;
        (void)remove_run(root, plan.run_id);
        return sys_error(err, "run directory " + dir->path);
    }
    const std::string real(buf, static_cast<size_t>(n));
    if (real != plan.run_dir) {
        (void)remove_run(root, plan.run_id);
        return Error(ErrorKind::setup, EXDEV,
                     "run directory: the plan named " + plan.run_dir + " but it is " + real +
                         " (a link changed under the state directory since the plan was made): refused");
    }
    dir->path = real;
    // The plan as it runs, beside the run's record: what `explain` would print for it.
    if (auto w = sys::replace_file_at(dir->fd.get(), "plan.json", plan::to_json(plan) + "\n", 0600,
                                      "run plan " + real + "/plan.json");
        !w) {
        (void)remove_run(root, plan.run_id);
        return std::move(w).error();
    }
    return dir;
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
        if (sys::valid_run_id(e->d_name)) ids.emplace_back(e->d_name);
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
