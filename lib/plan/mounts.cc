// SPDX-License-Identifier: Apache-2.0
// The mount list of a Plan: the mounts the policy asks for (binds, tmpfs, /proc and
// its hardening, a minimal /dev, the workspace) and the order of the Builder's steps;
// mounts_resolve.cc turns them into the final list.
#include "plan/mounts_builder.hpp"

#include "util/strings.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <iterator>

namespace agentjail::plan::detail {

namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;
constexpr std::uint64_t kGiB = 1024ull * kMiB;
constexpr std::uint64_t kHomeSize = 256 * kMiB;
constexpr std::uint64_t kTmpfsSize = 1 * kGiB;
constexpr std::uint64_t kDevSize = 1 * kMiB;
constexpr std::uint64_t kShmSize = 64 * kMiB;

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
std::vector<std::string> root_only_proc_files(const HostView& view) {
    std::vector<std::string> out;
    std::vector<std::pair<std::string, int>> dirs{{"/proc", 0}};
    while (!dirs.empty()) {
        auto [dir, depth] = dirs.back();
        dirs.pop_back();
        for (const auto& entry : view.list(dir)) {
            const char* name = entry.c_str();
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
            if (view.lstat(path, st) != 0) continue;
            if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
            if ((st.st_mode & S_IROTH) == 0)
                out.push_back(path);
            else if (S_ISDIR(st.st_mode) && depth == 0)
                dirs.emplace_back(path, depth + 1);
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

Result<void> Builder::run() {
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

void Builder::add(MountOp op, bool derived, bool workspace) {
    entries_.push_back({std::move(op), derived, workspace});
}

// Paths the command can write on the host: a symlink below one of them may
// have been planted by an earlier run (THREATS FS-04), so a source reached
// through such a link is never followed.
// A writable "/" (an explicit -C / as root) makes the check moot and would
// refuse /bin -> usr/bin, so it is left out.
void Builder::writable_roots() {
    if (!ctx_.workspace.empty() && policy_.workspace.value == policy::WorkspaceAccess::rw)
        writable_.push_back(ctx_.workspace);
    for (const auto& rule : policy_.rw) {
        auto src = expand(rule.src, ctx_, rule.origin);
        if (!src) continue;  // reported when the rule itself is planned
        if (auto c = ctx_.view->canonical(*src)) writable_.push_back(*c);
    }
    std::erase(writable_, std::string("/"));
}

void Builder::home() {
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

Result<void> Builder::tmpfs_rules() {
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

void Builder::proc_and_dev() {
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
        if (ctx_.view->lstat(node, st) != 0 || !S_ISCHR(st.st_mode)) {
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
void Builder::proc_hardening(const std::string& why) {
    for (const char* path : kProcReadOnly) {
        struct stat st {};
        if (ctx_.view->lstat(path, st) != 0 || S_ISLNK(st.st_mode)) continue;
        MountOp op;
        op.kind = MountKind::readonly;
        op.dst = path;
        op.read_only = true;
        op.is_dir = S_ISDIR(st.st_mode);
        op.why = why;
        add(std::move(op));
    }
    std::vector<std::string> masked(std::begin(kProcMasked), std::end(kProcMasked));
    for (auto& p : root_only_proc_files(*ctx_.view)) masked.push_back(std::move(p));
    for (const auto& path : masked) {
        if (std::any_of(std::begin(kProcReadOnly), std::end(kProcReadOnly),
                        [&](const char* ro) { return util::path_within(path, ro); }))
            continue;  // read-only already; a mask under it could not be mounted
        if (std::any_of(proc_masks_.begin(), proc_masks_.end(),
                        [&](const MountOp& m) { return m.dst == path; }))
            continue;
        struct stat st {};
        if (ctx_.view->lstat(path, st) != 0 || S_ISLNK(st.st_mode)) continue;
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

Result<void> Builder::missing(const policy::MountRule& rule, const std::string& src, int err) {
    const std::string why = describe(rule.origin);
    if (err != ENOENT && err != ENOTDIR)
        return invalid(why, "cannot resolve " + src + ": " + util::errno_text(err), err);
    if (rule.optional) {
        plan_.notes.push_back("skipped " + src + " (missing, optional: " + why + ")");
        return {};
    }
    return invalid(why, src + " does not exist", ENOENT);
}

Result<void> Builder::mount_rule(const policy::MountRule& rule, bool read_only) {
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
    if (ctx_.view->lstat(*src, lst) != 0) return missing(rule, *src, errno);
    auto canon = ctx_.view->canonical(*src);
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
    if (ctx_.view->stat(*canon, st) != 0) return missing(rule, *src, errno);
    const bool is_dir = S_ISDIR(st.st_mode);

    if (dst == *src && S_ISLNK(lst.st_mode)) {
        // Merged-/usr systems: /bin -> usr/bin. Recreate the link inside and
        // show its target at the target's own path, so both spellings work.
        auto text = ctx_.view->readlink(*src);
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

void Builder::workspace() {
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

Result<void> build_mounts(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan) {
    Builder b(policy, ctx, plan);
    return b.run();
}

}  // namespace agentjail::plan::detail
