// SPDX-License-Identifier: Apache-2.0
// The mount list of a Plan: binds, tmpfs, /proc, a minimal /dev, masks for hidden
// paths ("deny wins"), their order, and the checks that no mount point has to be
// created on the host.
#include "plan/internal.hpp"

#include "util/strings.hpp"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <iterator>
#include <map>

namespace agentjail::plan::detail {

namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;
constexpr std::uint64_t kGiB = 1024ull * kMiB;
constexpr std::uint64_t kHomeSize = 256 * kMiB;
constexpr std::uint64_t kTmpfsSize = 1 * kGiB;
constexpr std::uint64_t kDevSize = 1 * kMiB;
constexpr std::uint64_t kShmSize = 64 * kMiB;

struct Entry {
    MountOp op;
    // A bind added for the target of a symlinked source (/bin -> usr/bin): it may
    // be dropped when a same-path bind of the same access already shows it.
    bool derived = false;
    bool workspace = false;  // the workspace bind
    int protect = -1;        // index in findings_.protect of the read-only bind it is
};

Error invalid(const std::string& why, const std::string& message, int code = EINVAL) {
    return Error(ErrorKind::invalid_input, code, with_origin(why, message));
}

std::string label(const MountOp& op) {
    switch (op.kind) {
    case MountKind::bind: return std::string(op.read_only ? "ro" : "rw") + " bind " + op.dst;
    case MountKind::mask_dir:
    case MountKind::mask_file: return "mask " + op.dst;
    default: return std::string(kind_name(op.kind)) + " " + op.dst;
    }
}

std::string label_why(const MountOp& op) {
    return op.why.empty() ? label(op) : label(op) + " (" + op.why + ")";
}

bool same_op(const MountOp& a, const MountOp& b) {
    return a.kind == b.kind && a.src == b.src && a.dst == b.dst && a.read_only == b.read_only &&
           (a.kind != MountKind::tmpfs || (a.size_bytes == b.size_bytes && a.mode == b.mode));
}

// What kind of mount point an op needs: a directory, or a file.
bool needs_dir(const MountOp& op) {
    switch (op.kind) {
    case MountKind::bind:
    case MountKind::readonly: return op.is_dir;
    case MountKind::mask_file: return false;
    default: return true;
    }
}

std::optional<std::string> read_link(const std::string& path) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
}

// Kernel settings that stay visible but never writable (runc/Docker's readonlyPaths).
constexpr const char* kProcReadOnly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                         "/proc/sysrq-trigger"};
// Masked whoever runs: runc/Docker's maskedPaths (kernel memory, keys, timers and
// interrupt counts that time other users' keystrokes), and the root-only files
// that show the kernel's heap and page allocator to a heap-shaping exploit.
constexpr const char* kProcMasked[] = {
    "/proc/acpi",        "/proc/asound",        "/proc/interrupts",  "/proc/kcore",
    "/proc/keys",        "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi",
    "/proc/timer_list",  "/proc/timer_stats",   "/proc/slabinfo",    "/proc/pagetypeinfo",
    "/proc/vmallocinfo", "/proc/kpagecount",    "/proc/kpageflags",  "/proc/kpagecgroup",
    "/proc/kmsg",
};

bool all_digits(const char* s) {
    if (*s == '\0') return false;
    for (; *s != '\0'; ++s)
        if (*s < '0' || *s > '9') return false;
    return true;
}

// Kernel files and directories under /proc (outside the per-process directories,
// /proc/net and the read-only trees) that others cannot read: only root reads them outside,
// so they are masked for a root run too. Two levels deep (/proc/tty/driver).
std::vector<std::string> root_only_proc_files() {
    std::vector<std::string> out;
    std::vector<std::pair<std::string, int>> dirs{{"/proc", 0}};
    while (!dirs.empty()) {
        auto [dir, depth] = dirs.back();
        dirs.pop_back();
        DIR* d = ::opendir(dir.c_str());
        if (d == nullptr) continue;
        while (const dirent* e = ::readdir(d)) {
            const char* name = e->d_name;
            if (name[0] == '.' || (depth == 0 && all_digits(name))) continue;
            const std::string path = dir + "/" + name;
            // Per-process and per-namespace views, and the read-only trees (a mask
            // cannot be mounted inside those, and writes there are refused anyway).
            if (depth == 0 &&
                (path == "/proc/self" || path == "/proc/thread-self" || path == "/proc/net" ||
                 std::any_of(std::begin(kProcReadOnly), std::end(kProcReadOnly),
                             [&](const char* ro) { return path == ro; })))
                continue;
            struct stat st {};
            if (::lstat(path.c_str(), &st) != 0) continue;
            if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
            if ((st.st_mode & S_IROTH) == 0)
                out.push_back(path);
            else if (S_ISDIR(st.st_mode) && depth == 0)
                dirs.emplace_back(path, depth + 1);
        }
        ::closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
}

class Builder {
public:
    Builder(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan)
        : policy_(policy), ctx_(ctx), plan_(plan) {}

    Result<void> run() {
        writable_roots();
        home();
        if (auto r = tmpfs_rules(); !r) return r;
        proc_and_dev();
        for (const auto& rule : policy_.ro)
            if (auto r = mount_rule(rule, true); !r) return r;
        for (const auto& rule : policy_.rw)
            if (auto r = mount_rule(rule, false); !r) return r;
        workspace();

        replace_same_dst();
        drop_covered_derived();
        if (auto r = find_hidden(); !r) return r;
        if (auto r = drop_hidden_binds(); !r) return r;
        workspace_locks();
        sort_by_depth(entries_);
        std::vector<MountOp> masks = make_masks();
        drop_under_masks(masks);

        std::vector<MountOp> out;
        out.reserve(entries_.size() + masks.size());
        for (auto& e : entries_) {
            if (e.protect >= 0) protect_guard(findings_.protect[static_cast<size_t>(e.protect)], e.op);
            out.push_back(std::move(e.op));
        }
        for (auto& m : masks) out.push_back(std::move(m));
        if (auto r = check_mount_points(out); !r) return r;
        protected_guards(out);
        plan_.mounts = std::move(out);
        return {};
    }

private:
    // A read-only bind of a name over itself inside a writable bind (`--ro
    // {workspace}/.git/config`) is a protection of that name: the supervisor watches
    // it like a mask (the host replacing the name drops the bind).
    void protected_guards(const std::vector<MountOp>& ops) {
        for (size_t i = 0; i < ops.size(); ++i) {
            const MountOp& op = ops[i];
            if (op.kind != MountKind::bind || !op.read_only || op.src != op.dst) continue;
            auto slash = op.dst.rfind('/');
            auto parent = covering_op(ops, slash == 0 ? std::string("/") : op.dst.substr(0, slash));
            if (!parent || ops[*parent].kind != MountKind::bind || ops[*parent].read_only) continue;
            if (std::any_of(plan_.guards.begin(), plan_.guards.end(),
                            [&](const Guard& g) { return g.host == op.src; }))
                continue;
            Guard g;
            g.kind = Guard::Kind::protected_ro;
            g.host = op.src;
            g.inside = op.dst;
            g.is_dir = op.is_dir;
            struct stat st {};
            if (::lstat(g.host.c_str(), &st) == 0) {
                g.dev = st.st_dev;
                g.ino = st.st_ino;
            }
            g.why = op.why;
            plan_.guards.push_back(std::move(g));
        }
    }

    void add(MountOp op, bool derived = false, bool workspace = false) {
        entries_.push_back({std::move(op), derived, workspace});
    }

    // Paths the command can write on the host: a symlink below one of them may
    // have been planted by an earlier run (THREATS FS-04), so a source reached
    // through such a link is never followed.
    // A writable "/" (an explicit -C / as root) makes the check moot and would
    // refuse /bin -> usr/bin, so it is left out.
    void writable_roots() {
        if (!ctx_.workspace.empty() && policy_.workspace.value == policy::WorkspaceAccess::rw)
            writable_.push_back(ctx_.workspace);
        for (const auto& rule : policy_.rw) {
            auto src = expand(rule.src, ctx_, rule.origin);
            if (!src) continue;  // reported when the rule itself is planned
            if (auto c = canonical(*src)) writable_.push_back(*c);
        }
        std::erase(writable_, std::string("/"));
    }

    void home() {
        if (!policy_.private_home.value || plan_.home.empty()) return;
        MountOp op;
        op.kind = MountKind::tmpfs;
        op.dst = plan_.home;
        op.read_only = false;
        op.size_bytes = kHomeSize;
        op.mode = 0700;  // like a real home: nobody else's business
        op.why = describe(policy_.private_home.origin);
        add(std::move(op));
    }

    Result<void> tmpfs_rules() {
        for (const auto& rule : policy_.tmpfs) {
            auto path = expand(rule.path, ctx_, rule.origin);
            if (!path) return std::move(path).error();
            MountOp op;
            op.kind = MountKind::tmpfs;
            op.dst = *path;
            op.read_only = false;
            op.size_bytes = rule.size_bytes != 0 ? rule.size_bytes
                                                  : policy_.limits.tmpfs_size.value.value_or(kTmpfsSize);
            // Shared scratch directories keep their sticky, world-writable mode.
            op.mode = (*path == "/tmp" || *path == "/var/tmp") ? 01777 : 0755;
            op.why = describe(rule.origin);
            add(std::move(op));
        }
        return {};
    }

    void proc_and_dev() {
        if (policy_.proc.value) {
            MountOp op;
            op.kind = MountKind::proc;
            op.src = "proc";
            op.dst = "/proc";
            op.read_only = false;
            op.why = describe(policy_.proc.origin);
            add(op);
            proc_hardening(op.why);
        }
        if (!policy_.dev.value) return;
        const std::string why = describe(policy_.dev.origin);
        MountOp dev;
        dev.kind = MountKind::tmpfs;
        dev.dst = "/dev";
        dev.read_only = false;
        dev.size_bytes = kDevSize;
        dev.mode = 0755;
        dev.why = why;
        add(dev);
        // Only the harmless character devices: no disks, no /dev/mem, no host ptys.
        // Each is a read-only bind of the host's node: reads and writes go to the
        // driver as before, but chmod, chown, utimes and xattrs would change the
        // host's inode (root inside is uid 0 outside), and those need a writable mount.
        for (const char* node :
             {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}) {
            struct stat st {};
            if (::lstat(node, &st) != 0 || !S_ISCHR(st.st_mode)) {
                plan_.notes.push_back(std::string("skipped ") + node +
                                      " (not a character device on the host)");
                continue;
            }
            MountOp op;
            op.kind = MountKind::bind;
            op.src = node;
            op.dst = node;
            op.read_only = true;
            op.is_dir = false;
            op.why = why;
            add(std::move(op));
        }
        MountOp pts;
        pts.kind = MountKind::devpts;
        pts.src = "devpts";
        pts.dst = "/dev/pts";
        pts.read_only = false;
        pts.why = why;
        add(std::move(pts));
        const std::pair<const char*, const char*> links[] = {
            {"/dev/ptmx", "pts/ptmx"},          {"/dev/fd", "/proc/self/fd"},
            {"/dev/stdin", "/proc/self/fd/0"},  {"/dev/stdout", "/proc/self/fd/1"},
            {"/dev/stderr", "/proc/self/fd/2"},
        };
        for (const auto& [dst, target] : links) {
            MountOp op;
            op.kind = MountKind::symlink;
            op.src = target;
            op.dst = dst;
            op.why = why;
            add(std::move(op));
        }
        MountOp shm;
        shm.kind = MountKind::tmpfs;
        shm.dst = "/dev/shm";
        shm.read_only = false;
        shm.size_bytes = kShmSize;
        shm.mode = 01777;
        shm.why = why;
        add(std::move(shm));
    }

    // The sandbox's procfs still shows global kernel knobs: a caller who is
    // root outside is uid 0 inside, and DAC lets it write /proc/sys (a path in
    // kernel.core_pattern runs as host root) or /proc/sysrq-trigger. Those are
    // made read-only. Files that leak kernel memory layout, other users' keys or
    // timing side channels are masked: runc/Docker's list, plus every kernel file
    // that only root may read (slabinfo, pagetypeinfo, vmallocinfo, kpage*, kmsg,
    // ...): an ordinary user cannot read them, so a root run must not either.
    // Entries the kernel lacks (checked on the host's /proc, the same kernel) are
    // left out.
    void proc_hardening(const std::string& why) {
        for (const char* path : kProcReadOnly) {
            struct stat st {};
            if (::lstat(path, &st) != 0 || S_ISLNK(st.st_mode)) continue;
            MountOp op;
            op.kind = MountKind::readonly;
            op.dst = path;
            op.read_only = true;
            op.is_dir = S_ISDIR(st.st_mode);
            op.why = why;
            add(std::move(op));
        }
        std::vector<std::string> masked(std::begin(kProcMasked), std::end(kProcMasked));
        for (auto& p : root_only_proc_files()) masked.push_back(std::move(p));
        for (const auto& path : masked) {
            if (std::any_of(std::begin(kProcReadOnly), std::end(kProcReadOnly),
                            [&](const char* ro) { return util::path_within(path, ro); }))
                continue;  // read-only already; a mask under it could not be mounted
            if (std::any_of(proc_masks_.begin(), proc_masks_.end(),
                            [&](const MountOp& m) { return m.dst == path; }))
                continue;
            struct stat st {};
            if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
            MountOp op;
            op.kind = S_ISDIR(st.st_mode) ? MountKind::mask_dir : MountKind::mask_file;
            op.dst = path;
            op.read_only = true;
            op.is_dir = S_ISDIR(st.st_mode);
            op.mode = 0;
            op.why = why;
            proc_masks_.push_back(std::move(op));
        }
    }

    Result<void> missing(const policy::MountRule& rule, const std::string& src, int err) {
        const std::string why = describe(rule.origin);
        if (err != ENOENT && err != ENOTDIR)
            return invalid(why, "cannot resolve " + src + ": " + util::errno_text(err), err);
        if (rule.optional) {
            plan_.notes.push_back("skipped " + src + " (missing, optional: " + why + ")");
            return {};
        }
        return invalid(why, src + " does not exist", ENOENT);
    }

    Result<void> mount_rule(const policy::MountRule& rule, bool read_only) {
        const std::string why = describe(rule.origin);
        auto src = expand(rule.src, ctx_, rule.origin);
        if (!src) return std::move(src).error();
        std::string dst = *src;
        if (!rule.dst.empty()) {
            auto d = expand(rule.dst, ctx_, rule.origin);
            if (!d) return std::move(d).error();
            dst = *d;
        }
        struct stat lst {};
        if (::lstat(src->c_str(), &lst) != 0) return missing(rule, *src, errno);
        auto canon = canonical(*src);
        if (!canon) return missing(rule, *src, errno);  // a dangling link

        if (*canon != *src) {
            for (const auto& root : writable_) {
                if (util::path_within(*src, root) && *src != root)
                    return invalid(why, *src + " resolves through a symlink to " + *canon +
                                            " inside the writable " + root +
                                            ": refused (a link planted by an earlier run "
                                            "could redirect the mount)");
            }
        }
        struct stat st {};
        if (::stat(canon->c_str(), &st) != 0) return missing(rule, *src, errno);
        const bool is_dir = S_ISDIR(st.st_mode);

        if (dst == *src && S_ISLNK(lst.st_mode)) {
            // Merged-/usr systems: /bin -> usr/bin. Recreate the link inside and
            // show its target at the target's own path, so both spellings work.
            auto text = read_link(*src);
            if (!text) return missing(rule, *src, errno);
            MountOp link;
            link.kind = MountKind::symlink;
            link.src = *text;
            link.dst = *src;
            link.why = why;
            add(std::move(link));
            MountOp bind;
            bind.src = *canon;
            bind.dst = *canon;
            bind.read_only = read_only;
            bind.is_dir = is_dir;
            bind.why = why;
            add(std::move(bind), true);
            return {};
        }
        MountOp bind;
        bind.src = *canon;
        bind.dst = dst == *src ? *canon : dst;
        bind.read_only = read_only;
        bind.is_dir = is_dir;
        bind.why = why;
        add(std::move(bind));
        return {};
    }

    void workspace() {
        if (ctx_.workspace.empty()) return;
        MountOp op;
        op.src = ctx_.workspace;
        op.dst = ctx_.workspace;
        op.read_only = policy_.workspace.value == policy::WorkspaceAccess::ro;
        op.is_dir = true;
        op.why = policy_.workspace_path ? describe(policy_.workspace_path->origin)
                                        : describe(policy_.workspace.origin);
        if (op.why.empty()) op.why = "workspace";
        add(std::move(op), false, true);
    }

    // Exact duplicates go; a different op on the same dst replaces the earlier one
    // (the later layer, a flag or the workspace, is what the user asked for last).
    void replace_same_dst() {
        std::vector<Entry> out;
        for (auto& e : entries_) {
            auto it = std::find_if(out.begin(), out.end(),
                                   [&](const Entry& o) { return o.op.dst == e.op.dst; });
            if (it == out.end()) {
                out.push_back(std::move(e));
                continue;
            }
            if (same_op(it->op, e.op)) {
                it->derived = it->derived && e.derived;
                it->workspace = it->workspace || e.workspace;
                continue;
            }
            plan_.notes.push_back(label_why(e.op) + " replaces " + label_why(it->op));
            out.erase(it);
            out.push_back(std::move(e));
        }
        entries_ = std::move(out);
    }

    void drop_covered_derived() {
        std::vector<Entry> out;
        for (size_t i = 0; i < entries_.size(); ++i) {
            const Entry& d = entries_[i];
            bool covered = false;
            if (d.derived) {
                for (size_t j = 0; j < entries_.size() && !covered; ++j) {
                    const MountOp& b = entries_[j].op;
                    covered = j != i && b.kind == MountKind::bind && b.src == b.dst &&
                              b.read_only == d.op.read_only && b.dst != d.op.dst &&
                              util::path_within(d.op.dst, b.dst);
                }
            }
            if (!covered) out.push_back(d);
        }
        entries_ = std::move(out);
    }

    Result<void> find_hidden() {
        for (const auto& rule : policy_.hide) {
            // {workspace}/.env* hides nothing when no workspace is mounted.
            if (ctx_.workspace.empty() && uses_workspace(rule.pattern)) continue;
            if (uses_globstar(rule.pattern)) continue;  // workspace.cc: one scan for all of them
            auto pattern = expand_glob(rule.pattern, ctx_, rule.origin);
            if (!pattern) return std::move(pattern).error();
            glob_t g{};
            int rc = ::glob(pattern->c_str(), 0, nullptr, &g);
            if (rc == 0) {
                for (size_t i = 0; i < g.gl_pathc; ++i) {
                    // The canonical path is what a bind shows: hiding a symlink's
                    // name alone would leave its target readable (THREATS FS-04).
                    auto canon = canonical(g.gl_pathv[i]);
                    struct stat st {};
                    if (!canon || ::stat(canon->c_str(), &st) != 0) continue;
                    Hidden h;
                    h.path = *canon;
                    h.is_dir = S_ISDIR(st.st_mode);
                    h.pattern = rule.pattern;
                    h.why = describe(rule.origin);
                    h.dev = st.st_dev;
                    h.ino = st.st_ino;
                    h.nlink = st.st_nlink;
                    h.regular = S_ISREG(st.st_mode);
                    if (std::none_of(hidden_.begin(), hidden_.end(),
                                     [&](const Hidden& o) { return o.path == h.path; }))
                        hidden_.push_back(std::move(h));
                }
            }
            ::globfree(&g);
        }
        auto found = plan_workspace(policy_, ctx_, hidden_, plan_);
        if (!found) return std::move(found).error();
        findings_ = std::move(*found);
        return {};
    }

    Result<void> drop_hidden_binds() {
        std::vector<Entry> out;
        for (auto& e : entries_) {
            const Hidden* by = nullptr;
            if (e.op.kind == MountKind::bind) {
                for (const auto& h : hidden_) {
                    if (util::path_within(e.op.src, h.path)) {
                        by = &h;
                        break;
                    }
                }
            }
            if (by == nullptr) {
                out.push_back(std::move(e));
                continue;
            }
            // Deny wins even over the workspace; running without it would only
            // fail later and more obscurely.
            if (e.workspace)
                return invalid(by->why, "workspace " + e.op.src + " is hidden by " + by->pattern +
                                            ": a hidden path cannot be the workspace");
            plan_.notes.push_back("dropped " + label_why(e.op) + ": " + e.op.src +
                                  " is hidden by " + by->pattern +
                                  (by->why.empty() ? "" : " (" + by->why + ")"));
        }
        entries_ = std::move(out);
        return {};
    }

    // Direct mode: the rename locks (a read-write bind of each ancestor over itself)
    // and the protected paths, read-only wherever a writable bind shows them (a
    // --rw of a parent at another path must not lift the protection).
    void workspace_locks() {
        auto has_dst = [this](const std::string& dst) {
            return std::any_of(entries_.begin(), entries_.end(),
                               [&](const Entry& e) { return e.op.dst == dst; });
        };
        const std::string ws_why = "workspace: the directories above a hidden or protected name cannot be renamed";
        for (const auto& a : findings_.ancestors) {
            if (has_dst(a)) continue;  // a mount point already
            MountOp op;
            op.src = a;
            op.dst = a;
            op.read_only = false;
            op.is_dir = true;
            op.why = ws_why;
            op.lock_only = true;
            add(std::move(op));
        }
        std::vector<MountOp> ops;
        ops.reserve(entries_.size());
        for (const auto& e : entries_) ops.push_back(e.op);
        for (size_t k = 0; k < findings_.protect.size(); ++k) {
            const Protected& p = findings_.protect[k];
            for (size_t i = 0; i < ops.size(); ++i) {
                const MountOp& b = ops[i];
                if (b.kind != MountKind::bind || b.read_only || !util::path_within(p.path, b.src)) continue;
                const std::string dst = join(b.dst, relative_to(p.path, b.src));
                auto top = covering_op(ops, dst);
                if (!top || *top != i) continue;
                MountOp op;
                op.src = p.path;
                op.dst = dst;
                op.read_only = true;
                op.is_dir = p.is_dir;
                op.placeholder = p.placeholder;
                op.why = p.why.empty() ? "protected by " + p.pattern : p.why + " (protect " + p.pattern + ")";
                auto same = std::find_if(entries_.begin(), entries_.end(),
                                         [&](const Entry& e) { return e.op.dst == dst; });
                if (same != entries_.end()) {
                    // Protection wins over a read-write bind aimed at the same place.
                    if (same->op.kind == MountKind::bind && !same->op.read_only) {
                        plan_.notes.push_back(label_why(op) + " replaces " + label_why(same->op));
                        entries_.erase(same);
                    } else {
                        continue;  // read-only or something else is shown there already
                    }
                }
                add(std::move(op));
                entries_.back().protect = static_cast<int>(k);
            }
        }
    }

    void protect_guard(const Protected& p, const MountOp& op) {
        Guard g;
        g.kind = Guard::Kind::protected_ro;
        g.host = p.path;
        g.inside = op.dst;
        g.is_dir = p.is_dir;
        g.dev = p.dev;
        g.ino = p.ino;
        g.placeholder = p.placeholder;
        g.pattern = p.pattern;
        g.why = p.why;
        g.link_of = p.link_of;
        plan_.guards.push_back(std::move(g));
    }

    static void sort_by_depth(std::vector<Entry>& v) {
        std::stable_sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) {
            return depth(a.op.dst) < depth(b.op.dst);
        });
    }

    // A mask wherever a bind shows a hidden path: at the bind's dst plus the part
    // of the hidden path below the bind's src. Only where that bind is what the
    // sandbox shows there (a deeper tmpfs already hides it).
    std::vector<MountOp> make_masks() {
        std::vector<MountOp> ops;
        ops.reserve(entries_.size());
        for (const auto& e : entries_) ops.push_back(e.op);
        std::vector<MountOp> masks;
        if (std::any_of(ops.begin(), ops.end(), [](const MountOp& o) {
                return o.kind == MountKind::proc && o.dst == "/proc";
            }))
            masks = proc_masks_;
        // The hidden path each mask is for: a mask over a name in a host directory
        // is watched for the run (a Guard), since replacing the name drops the mount.
        std::map<std::string, const Hidden*> mask_src;
        for (const auto& h : hidden_) {
            for (size_t i = 0; i < ops.size(); ++i) {
                const MountOp& b = ops[i];
                if (b.kind != MountKind::bind || !util::path_within(h.path, b.src)) continue;
                std::string dst = join(b.dst, relative_to(h.path, b.src));
                auto top = covering_op(ops, dst);
                if (!top || *top != i) continue;
                MountOp m;
                m.kind = h.is_dir ? MountKind::mask_dir : MountKind::mask_file;
                m.dst = dst;
                m.read_only = true;
                m.is_dir = h.is_dir;
                m.mode = 0;
                m.why = h.why;
                mask_src.emplace(m.dst, &h);
                masks.push_back(std::move(m));
            }
        }
        std::stable_sort(masks.begin(), masks.end(), [](const MountOp& a, const MountOp& b) {
            return depth(a.dst) < depth(b.dst);
        });
        // A mask inside another mask (or the same one twice) adds nothing.
        std::vector<MountOp> out;
        for (auto& m : masks) {
            bool inside = std::any_of(out.begin(), out.end(), [&](const MountOp& o) {
                return util::path_within(m.dst, o.dst);
            });
            if (inside) continue;
            if (auto it = mask_src.find(m.dst); it != mask_src.end()) hidden_guard(*it->second, m);
            out.push_back(std::move(m));
        }
        return out;
    }

    void hidden_guard(const Hidden& h, const MountOp& mask) {
        Guard g;
        g.kind = Guard::Kind::hidden;
        g.host = h.path;
        g.inside = mask.dst;
        g.is_dir = h.is_dir;
        g.dev = h.dev;
        g.ino = h.ino;
        g.pattern = h.pattern;
        g.why = h.why;
        g.link_of = h.link_of;
        plan_.guards.push_back(std::move(g));
    }

    // Nothing is mounted under a mask: deny wins over an op aimed inside a hidden path.
    void drop_under_masks(const std::vector<MountOp>& masks) {
        std::vector<Entry> out;
        for (auto& e : entries_) {
            auto it = std::find_if(masks.begin(), masks.end(), [&](const MountOp& m) {
                return util::path_within(e.op.dst, m.dst);
            });
            if (it == masks.end()) {
                out.push_back(std::move(e));
                continue;
            }
            plan_.notes.push_back("dropped " + label_why(e.op) + ": " + it->dst + " is hidden" +
                                  (it->why.empty() ? "" : " (" + it->why + ")"));
        }
        entries_ = std::move(out);
    }

    // Every mount point must exist already unless a tmpfs (or the new root) holds
    // it: the launcher may create directories on its own tmpfs, never on the host.
    Result<void> check_mount_points(std::vector<MountOp>& ops) {
        for (size_t i = 0; i < ops.size(); ++i) {
            const MountOp& op = ops[i];
            std::optional<size_t> parent;
            for (size_t j = i; j-- > 0;) {
                if (ops[j].dst != op.dst && util::path_within(op.dst, ops[j].dst)) {
                    parent = j;
                    break;
                }
            }
            if (!parent) continue;  // on the new root, a tmpfs
            const MountOp& p = ops[*parent];
            ops[i].in_host_dir = p.kind == MountKind::bind || p.kind == MountKind::overlay ||
                                 p.kind == MountKind::proc;
            switch (p.kind) {
            case MountKind::tmpfs: continue;
            case MountKind::bind:
            case MountKind::overlay: break;  // the lower layer is what is there
            case MountKind::symlink:
                return invalid(op.why, "cannot mount " + op.dst + " under the symlink " + p.dst);
            case MountKind::proc:
                // Kernel files, the same on the host's /proc: only the hardening
                // ops go there, onto paths that exist.
                if (op.kind == MountKind::readonly || op.kind == MountKind::mask_dir ||
                    op.kind == MountKind::mask_file) {
                    struct stat st {};
                    if (::lstat(op.dst.c_str(), &st) == 0 && S_ISDIR(st.st_mode) == needs_dir(op))
                        continue;
                }
                return invalid(op.why, "cannot create mount point " + op.dst + " inside " + p.dst);
            case MountKind::devpts:
            case MountKind::readonly:
                return invalid(op.why, "cannot create mount point " + op.dst + " inside " + p.dst);
            case MountKind::mask_dir:
            case MountKind::mask_file:
                return invalid(op.why, "cannot mount " + op.dst + " under the hidden " + p.dst);
            }
            auto r = check_in_bind(op, p);
            if (!r) return std::move(r).error();
            if (*r != InBind::mount) {
                plan_.notes.push_back(*r == InBind::present
                                          ? "the bind of " + p.dst + " already has " + label(op)
                                          : label(op) + ": gone from the host since it was matched, "
                                                        "nothing to " + (op.lock_only ? "keep" : "hide"));
                ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(i));
                --i;
            }
        }
        return {};
    }

    // mount: op can be mounted; present: op is a symlink the host already has there;
    // gone: op masks a host name that was removed since a pattern matched it (a lock
    // file such as /etc/gshadow.lock, matched by gshadow*, lives for a moment).
    enum class InBind { mount, present, gone };
    Result<InBind> check_in_bind(const MountOp& op, const MountOp& bind) {
        const std::string rel = relative_to(op.dst, bind.dst);
        std::string host = bind.src;
        std::string inside = bind.dst;
        size_t i = 0;
        while (i < rel.size()) {
            size_t j = rel.find('/', i);
            if (j == std::string::npos) j = rel.size();
            const std::string part = rel.substr(i, j - i);
            i = j + 1;
            const bool last = i > rel.size();
            host = join(host, part);
            inside = join(inside, part);
            struct stat st {};
            if (::lstat(host.c_str(), &st) != 0) {
                // A placeholder is made by the launcher, in a directory checked here.
                if (last && op.placeholder && errno == ENOENT) return InBind::mount;
                if (last && errno == ENOENT &&
                    (op.kind == MountKind::mask_file || op.kind == MountKind::mask_dir))
                    return InBind::gone;
                if (errno == ENOENT && op.lock_only) return InBind::gone;
                return invalid(op.why, "cannot create mount point " + op.dst +
                                           " inside the bind of " + bind.dst +
                                           " (it does not exist there)");
            }
            if (S_ISLNK(st.st_mode)) {
                if (last && op.kind == MountKind::symlink) {
                    auto text = read_link(host);
                    if (text && *text == op.src) return InBind::present;
                    return invalid(op.why, "cannot create the symlink " + op.dst +
                                               " inside the bind of " + bind.dst +
                                               " (a different symlink is there)");
                }
                // Mounting there would follow a link someone may have planted on
                // the host: refuse rather than mount onto where it points.
                return invalid(op.why, "cannot mount over " + op.dst + ": " + inside +
                                           " is a symlink in the bind of " + bind.dst);
            }
            if (!last && !S_ISDIR(st.st_mode))
                return invalid(op.why, "cannot create mount point " + op.dst +
                                           " inside the bind of " + bind.dst + " (" + inside +
                                           " is not a directory there)");
            if (last) {
                if (op.kind == MountKind::symlink)
                    return invalid(op.why, "cannot create the symlink " + op.dst +
                                               " inside the bind of " + bind.dst +
                                               " (something else is there)");
                const bool dir = S_ISDIR(st.st_mode);
                if (dir != needs_dir(op))
                    return invalid(op.why, "cannot create mount point " + op.dst +
                                               " inside the bind of " + bind.dst + " (it is " +
                                               (dir ? "a directory" : "not a directory") +
                                               " there, the mount needs " +
                                               (needs_dir(op) ? "a directory" : "a file") + ")");
            }
        }
        return InBind::mount;
    }

    const policy::Policy& policy_;
    const ExpandContext& ctx_;
    Plan& plan_;
    std::vector<Entry> entries_;
    std::vector<Hidden> hidden_;
    WorkspaceFindings findings_;
    std::vector<MountOp> proc_masks_;
    std::vector<std::string> writable_;
};

}  // namespace

Result<void> build_mounts(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan) {
    Builder b(policy, ctx, plan);
    return b.run();
}

}  // namespace agentjail::plan::detail
