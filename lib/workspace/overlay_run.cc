// SPDX-License-Identifier: Apache-2.0
// An overlay run's life on the host: the state directory and its layers before
// the launch, the change set, report and record after it, and `agentjail apply`.
#include "workspace/overlay_run.hpp"

#include "base/time.hpp"

#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"
#include "sys/state_dir.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>

namespace agentjail::workspace {

namespace {

constexpr const char* kChanges = "changes.json";

Error io_error(int err, const std::string& what) {
    return Error(ErrorKind::setup, err, what + ": " + util::errno_text(err));
}

// The path the kernel has for an open directory: free of links, whatever the
// state home's own path went through (the child opens the layers refusing links).
Result<std::string> real_path(int fd, const std::string& what) {
    char buf[PATH_MAX];
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = ::readlink(proc.c_str(), buf, sizeof buf - 1);
    if (n < 0) return io_error(errno, what);
    return std::string(buf, static_cast<size_t>(n));
}

// A subdirectory of the run's directory, never through a link.
Result<sys::UniqueFd> sub_dir(int dirfd, const char* name, bool create) {
    if (create && ::mkdirat(dirfd, name, 0700) != 0) return io_error(errno, name);
    sys::UniqueFd fd(sys::openat2(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC,
                                  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!fd) return io_error(-fd.get(), name);
    return fd;
}

// Written under a fresh name and renamed over `name`: never half a file, never through a link.
Result<void> write_at(int dirfd, const std::string& name, const std::string& text) {
    const std::string tmp = "." + name + ".tmp." + std::to_string(::getpid());
    (void)::unlinkat(dirfd, tmp.c_str(), 0);
    sys::UniqueFd fd(::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) return io_error(errno, name);
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(fd.get(), text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            ::unlinkat(dirfd, tmp.c_str(), 0);
            return io_error(e, name);
        }
        off += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0 || ::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
        int e = errno;
        ::unlinkat(dirfd, tmp.c_str(), 0);
        return io_error(e, name);
    }
    return {};
}

Result<std::string> read_at(int dirfd, const std::string& name) {
    sys::UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return io_error(errno, name);
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return io_error(errno, name);
        if (n == 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

// overlayfs's work directory holds a mode-000 directory of its own: opened as
// O_PATH (no permission needed), made 0700 through its /proc name, then emptied.
void remove_work_dir(int run_fd) {
    sys::UniqueFd work(sys::openat2(run_fd, "work", O_PATH | O_DIRECTORY | O_CLOEXEC,
                                    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!work) return;
    sys::UniqueFd inner(sys::openat2(work.get(), "work", O_PATH | O_DIRECTORY | O_CLOEXEC,
                                     RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (inner) {
        const std::string proc = "/proc/self/fd/" + std::to_string(inner.get());
        (void)::chmod(proc.c_str(), 0700);
        sys::UniqueFd rd(::openat(work.get(), "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (rd) (void)sys::remove_tree_at(rd.get(), "work/work");
        inner.reset();
        (void)::unlinkat(work.get(), "work", AT_REMOVEDIR);
    }
    sys::UniqueFd rd(::openat(run_fd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (rd) (void)sys::remove_tree_at(rd.get(), "work");
    rd.reset();
    work.reset();
    (void)::unlinkat(run_fd, "work", AT_REMOVEDIR);
}

unsigned git_mode(LayerChange::Type type, unsigned perms) {
    switch (type) {
    case LayerChange::Type::file: return (perms & 0111) != 0 ? kModeExec : kModeFile;
    case LayerChange::Type::dir: return kModeDir;
    case LayerChange::Type::symlink: return kModeLink;
    case LayerChange::Type::other: return 0;
    }
    return 0;
}

unsigned git_mode_of(unsigned st_mode) {
    if (S_ISREG(st_mode)) return git_mode(LayerChange::Type::file, st_mode & 07777);
    if (S_ISDIR(st_mode)) return kModeDir;
    if (S_ISLNK(st_mode)) return kModeLink;
    return 0;
}

}  // namespace

std::vector<std::string> protect_patterns(const policy::Policy& policy) {
    std::vector<std::string> out;
    for (const auto& r : policy.protect) out.push_back(r.pattern);
    if (out.empty()) out = default_protected();
    std::erase_if(out, [&](const std::string& p) {
        return std::any_of(policy.unprotect.begin(), policy.unprotect.end(),
                           [&](const policy::ProtectRule& u) { return u.pattern == p; });
    });
    return out;
}

Result<std::unique_ptr<OverlayRun>> OverlayRun::start(const plan::Plan& plan, std::vector<std::string> protect) {
    const plan::MountOp* op = nullptr;
    for (const auto& m : plan.mounts)
        if (m.kind == plan::MountKind::overlay && m.src == plan.workspace) op = &m;
    if (op == nullptr || op->upper != plan.run_dir + "/upper" || op->work != plan.run_dir + "/work")
        return Error(ErrorKind::internal, EINVAL, "overlay mode: the plan has no overlay of the workspace in its run");

    auto dir = create_planned_run(plan);
    if (!dir) return std::move(dir).error();
    std::unique_ptr<OverlayRun> run(new OverlayRun);
    run->root_ = plan.run_dir.substr(0, plan.run_dir.rfind('/'));
    run->dir_ = std::move(*dir);
    run->workspace_ = plan.workspace;
    run->protect_ = std::move(protect);
    auto fail = [&](Error e) -> Result<std::unique_ptr<OverlayRun>> {
        (void)remove_run(run->root_, run->dir_.id);
        return e;
    };
    auto upper = sub_dir(run->dir_.fd.get(), "upper", true);
    if (!upper) return fail(std::move(upper).error().wrap("run directory " + plan.run_dir));
    auto work = sub_dir(run->dir_.fd.get(), "work", true);
    if (!work) return fail(std::move(work).error().wrap("run directory " + plan.run_dir));
    run->upper_ = op->upper;

    run->since_ = run_start(plan.workspace);

    RunRecord& rec = run->rec_;
    rec.id = run->dir_.id;
    rec.mode = "overlay";
    rec.workspace = plan.workspace;
    rec.started = base::iso8601_now();
    rec.status = "running";
    if (auto r = write_record(run->dir_, rec); !r) return fail(std::move(r).error());
    return run;
}

void OverlayRun::finish(WorkspaceOutcome& out) {
    out.mode = "overlay";
    out.run_id = dir_.id;
    out.state_dir = dir_.path;
    remove_work_dir(dir_.fd.get());
    rec_.ended = base::iso8601_now();
    auto changes = collect_changes(upper_, workspace_, since_, protect_);
    if (!changes) {
        rec_.status = "failed";
        rec_.message = changes.error().message();
    } else if (auto w = write_at(dir_.fd.get(), kChanges, changes_to_json(*changes)); !w) {
        rec_.status = "failed";
        rec_.message = w.error().message();
    } else {
        Report rep = overlay_report(dir_.id, *changes, upper_);
        rec_.status = changes->empty() ? "no-changes" : "ok";
        rec_.report_json = to_json(rep, -1);
        rec_.flags = rep.flags.size();
        out.report_text = to_text(rep);
        out.report_json = rec_.report_json;
    }
    if (auto w = write_record(dir_, rec_); !w && rec_.status != "failed") {
        rec_.status = "failed";
        rec_.message = w.error().message();
    }
    out.status = rec_.status;
    out.message = rec_.message;
    out.flags = rec_.flags;
    if (rec_.status == "failed")
        out.report_text = "agentjail: overlay run " + dir_.id + ": " + util::printable(rec_.message) +
                          " (the upper layer is kept in " + util::printable(dir_.path) + ")\n";
}

void OverlayRun::abandon() {
    dir_.fd.reset();
    (void)remove_run(root_, dir_.id);
}

Report overlay_report(const std::string& run_id, const std::vector<LayerChange>& changes, const std::string& upper_dir) {
    Report rep;
    rep.mode = "overlay";
    rep.run_id = run_id;
    size_t protected_count = 0, unsupported = 0;
    for (size_t i = 0; i < changes.size(); ++i) {
        const LayerChange& c = changes[i];
        if (c.protected_path) ++protected_count;
        if (c.type == LayerChange::Type::other && c.kind != LayerChange::Kind::deleted) ++unsupported;
        Change r;
        r.path = c.path;
        const unsigned new_mode = git_mode(c.type, c.mode);
        const unsigned old_mode = c.base ? git_mode_of(c.base->mode) : 0;
        switch (c.kind) {
        case LayerChange::Kind::added:
            r.kind = ChangeKind::added;
            r.new_mode = new_mode;
            break;
        case LayerChange::Kind::deleted:
            // A deletion followed by what replaced it is one change of type.
            if (i + 1 < changes.size() && changes[i + 1].path == c.path &&
                changes[i + 1].kind == LayerChange::Kind::added)
                continue;
            r.kind = ChangeKind::deleted;
            r.old_mode = new_mode;
            break;
        case LayerChange::Kind::modified:
        case LayerChange::Kind::mode:
            r.kind = ChangeKind::modified;
            r.old_mode = old_mode != 0 ? old_mode : new_mode;
            r.new_mode = new_mode;
            break;
        }
        if (c.kind == LayerChange::Kind::added && i > 0 && changes[i - 1].path == c.path &&
            changes[i - 1].kind == LayerChange::Kind::deleted) {
            r.kind = ChangeKind::type_changed;
            r.old_mode = git_mode(changes[i - 1].type, changes[i - 1].mode);
        }
        if (c.type == LayerChange::Type::symlink) r.link_target = c.target;
        if (c.type == LayerChange::Type::file && c.kind != LayerChange::Kind::deleted) {
            // The new content, read from the upper layer without following links.
            r.read_new = [upper_dir, path = c.path](std::size_t limit) -> std::optional<std::string> {
                sys::UniqueFd up(::open(upper_dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                if (!up) return std::nullopt;
                sys::UniqueFd fd(sys::openat2(up.get(), path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                                              RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
                if (!fd) return std::nullopt;
                std::string s(limit, '\0');
                size_t got = 0;
                while (got < limit) {
                    ssize_t n = ::read(fd.get(), s.data() + got, limit - got);
                    if (n < 0 && errno == EINTR) continue;
                    if (n <= 0) break;
                    got += static_cast<size_t>(n);
                }
                s.resize(got);
                return s;
            };
        }
        rep.changes.push_back(std::move(r));
    }
    rep.flags = classify(rep.changes);
    if (protected_count > 0)
        rep.notes.push_back(std::to_string(protected_count) +
                            " change(s) to protected paths (git hooks and config, editor and agent settings): "
                            "`agentjail apply` leaves them out unless given --protected");
    if (unsupported > 0)
        rep.notes.push_back(std::to_string(unsupported) +
                            " special file(s) (FIFOs, sockets, devices) are listed but never applied");
    if (!changes.empty())
        rep.notes.push_back("nothing was written to the workspace: `agentjail apply " + run_id +
                            "` applies these changes, `agentjail discard " + run_id + "` drops them");
    return rep;
}

Result<AppliedRun> apply_run(const std::string& runs_root, const std::string& id, const ApplyOptions& opts) {
    auto rec = load_run(runs_root, id);
    if (!rec) return std::move(rec).error();
    if (rec->mode != "overlay")
        return Error(ErrorKind::invalid_input, EINVAL,
                     "run " + id + " is a " + rec->mode + " run: only overlay runs are applied (a clone run's work is the branch " +
                         rec->branch + ")");
    if (rec->status == "applied")
        return Error(ErrorKind::invalid_input, EALREADY, "run " + id + " was applied already");
    if (rec->status == "running")
        return Error(ErrorKind::invalid_input, EBUSY, "run " + id + " has not ended (or agentjail died during it)");
    auto dir = open_run(runs_root, id);
    if (!dir) return std::move(dir).error();
    auto text = read_at(dir->fd.get(), kChanges);
    if (!text) return std::move(text).error().wrap("run " + id);
    auto changes = changes_from_json(*text, "run " + id + " " + kChanges);
    if (!changes) return std::move(changes).error();
    auto upper = sub_dir(dir->fd.get(), "upper", false);
    if (!upper) return std::move(upper).error().wrap("run " + id);
    auto upper_path = real_path(upper->get(), "run " + id + " upper layer");
    if (!upper_path) return std::move(upper_path).error();
    auto outcome = apply_changes(rec->workspace, *upper_path, *changes, opts);
    if (!outcome) return std::move(outcome).error().wrap("run " + id);
    AppliedRun a{std::move(*rec), std::move(*outcome)};
    if (a.outcome.skipped.empty() && a.outcome.failed.empty()) {
        a.record.status = "applied";
        a.record.message.clear();
    } else {
        // Still "ok": what was left can be applied later (--protected, --force) or discarded.
        a.record.message = std::to_string(a.outcome.applied.size()) + " applied, " +
                           std::to_string(a.outcome.skipped.size()) + " skipped, " +
                           std::to_string(a.outcome.failed.size()) + " failed at " + base::iso8601_now();
        if (a.outcome.applied.empty() && a.outcome.failed.empty()) a.record.message += " (nothing written)";
    }
    if (auto w = write_record(*dir, a.record); !w) return std::move(w).error();
    return a;
}

std::string apply_text(const AppliedRun& a) {
    std::string s;
    auto line = [&s](const char* what, const ApplyOutcome::Item& it) {
        s += std::string("  ") + what + " " + layer_kind_name(it.change.kind) + " " +
             layer_type_name(it.change.type) + " " + util::printable(it.change.path);
        if (!it.why.empty()) s += ": " + util::printable(it.why);
        s += "\n";
    };
    s += "agentjail: run " + a.record.id + " into " + util::printable(a.record.workspace) + ": " +
         std::to_string(a.outcome.applied.size()) + " applied, " + std::to_string(a.outcome.skipped.size()) +
         " skipped, " + std::to_string(a.outcome.failed.size()) + " failed\n";
    for (const auto& it : a.outcome.applied) line("applied", it);
    for (const auto& it : a.outcome.skipped) line("skipped", it);
    for (const auto& it : a.outcome.failed) line("FAILED ", it);
    return s;
}

std::string apply_json(const AppliedRun& a, int indent) {
    using json = nlohmann::ordered_json;
    auto items = [](const std::vector<ApplyOutcome::Item>& v) {
        json arr = json::array();
        for (const auto& it : v) {
            json j{{"path", it.change.path},
                   {"kind", layer_kind_name(it.change.kind)},
                   {"type", layer_type_name(it.change.type)}};
            if (!it.why.empty()) j["why"] = it.why;
            arr.push_back(std::move(j));
        }
        return arr;
    };
    json j;
    j["run_id"] = a.record.id;
    j["workspace"] = a.record.workspace;
    j["status"] = a.record.status;
    j["applied"] = items(a.outcome.applied);
    j["skipped"] = items(a.outcome.skipped);
    j["failed"] = items(a.outcome.failed);
    return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace agentjail::workspace
