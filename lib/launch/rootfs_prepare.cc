// SPDX-License-Identifier: Apache-2.0
// Parent side of the root build: flattens a Plan's mount list into ChildMounts
// with every flag decided and every string owned, before clone.
#include "launch/rootfs.hpp"

#include "sys/syscalls.hpp"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cstdio>

namespace agentjail::launch {

namespace {
std::string tmpfs_data(std::uint64_t size, unsigned mode) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "mode=%04o", mode);
    std::string d = buf;
    if (size != 0) d += ",size=" + std::to_string(size);
    return d;
}
}  // namespace

RootPlan prepare_root(const plan::Plan& plan) {
    RootPlan rp;
    // Pointers into storage must stay valid: reserve so the vector never reallocates.
    rp.storage.reserve(plan.mounts.size() * 4 + 1);
    auto keep = [&rp](std::string s) -> const char* {
        rp.storage.push_back(std::move(s));
        return rp.storage.back().c_str();
    };
    rp.root_data = keep(tmpfs_data(16u << 20, 0755));
    rp.mounts.reserve(plan.mounts.size());
    for (const auto& op : plan.mounts) {
        ChildMount m;
        m.kind = op.kind;
        m.is_dir = op.is_dir;
        m.no_create = op.in_host_dir;
        m.may_vanish = op.in_host_dir && !op.placeholder &&
                       (op.kind == plan::MountKind::mask_file || op.kind == plan::MountKind::mask_dir ||
                        op.lock_only);
        std::string rel = op.dst.size() > 1 ? op.dst.substr(1) : std::string();
        m.rel = keep(std::move(rel));
        switch (op.kind) {
            case plan::MountKind::bind:
                m.src = keep(op.src);
                m.attr = MOUNT_ATTR_NOSUID;
                if (op.read_only) m.attr |= MOUNT_ATTR_RDONLY;
                // Device binds (/dev/null, ...) must keep device access; nothing else may
                // open device nodes, whatever the host mount allowed.
                if (op.is_dir || op.dst.rfind("/dev/", 0) != 0) m.attr |= MOUNT_ATTR_NODEV;
                break;
            case plan::MountKind::overlay:
                m.src = keep(op.src);
                m.upper = keep(op.upper);
                m.work = keep(op.work);
                // The workspace's bind has no device nodes nor setuid programs either.
                m.attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
                if (op.read_only) m.attr |= MOUNT_ATTR_RDONLY;
                break;
            case plan::MountKind::tmpfs:
                m.flags = MS_NOSUID | MS_NODEV | (op.read_only ? MS_RDONLY : 0);
                m.data = keep(tmpfs_data(op.size_bytes, op.mode));
                break;
            case plan::MountKind::proc:
                m.flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
                break;
            case plan::MountKind::devpts:
                m.flags = MS_NOSUID | MS_NOEXEC;
                m.data = keep("newinstance,ptmxmode=0666,mode=0620");
                break;
            case plan::MountKind::symlink:
                m.src = keep(op.src);
                break;
            case plan::MountKind::mask_dir:
                m.flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
                m.data = keep("mode=0000,size=4k,nr_inodes=2");
                break;
            case plan::MountKind::mask_file:
                if (!op.text.empty()) {
                    m.text = keep(op.text);
                    m.text_len = op.text.size();
                }
                break;
            case plan::MountKind::readonly:
                break;
            case plan::MountKind::view: {
                // The child adds fd=N, the /dev/fuse descriptor it opens. Ids are the
                // sandbox's own; allow_other lets every process of the sandbox's user
                // namespace in (the kernel admits no one outside it). rootmode is the
                // root's mode until the kernel's first answer for it (with owner uid 0
                // of the sandbox's namespace), and that answer is dropped when a change
                // the server reports (the host making a name in the workspace) crosses
                // it: with no permission bits there, a run's first chdir into its
                // workspace failed with EACCES (`SharedWorkspace.RunsStartInAPrivate...`,
                // and 1 of 20 Slurm array tasks writing their output beside it). The
                // bits are what the run's identity has on the workspace itself, for
                // every class: no more than it will have once the kernel knows.
                struct stat ws {};
                unsigned bits = 0;
                if (::stat(op.src.c_str(), &ws) == 0) {
                    const unsigned eff = ws.st_uid == plan.uid   ? (ws.st_mode >> 6) & 7
                                         : ws.st_gid == plan.gid ? (ws.st_mode >> 3) & 7
                                                                 : ws.st_mode & 7;
                    bits = (eff << 6) | (eff << 3) | eff;
                }
                char rootmode[16];
                std::snprintf(rootmode, sizeof rootmode, "%o", S_IFDIR | bits);
                m.flags = MS_NOSUID | MS_NODEV;
                m.data = keep(std::string("rootmode=") + rootmode + ",user_id=" + std::to_string(plan.uid) +
                              ",group_id=" + std::to_string(plan.gid) + ",default_permissions,allow_other,fd=");
                break;
            }
        }
        rp.mounts.push_back(m);
    }
    return rp;
}

const char* stage_name(Stage s) {
    switch (s) {
        case Stage::none: return "none";
        case Stage::wait_parent: return "waiting for the parent";
        case Stage::mount_private: return "making mounts private";
        case Stage::open_source: return "opening a bind source";
        case Stage::clone_tree: return "cloning a bind source";
        case Stage::set_attr: return "setting mount flags";
        case Stage::staging_root: return "mounting the new root";
        case Stage::mount_point: return "creating a mount point";
        case Stage::attach: return "attaching a bind";
        case Stage::mount_fs: return "mounting";
        case Stage::make_symlink: return "creating a symlink";
        case Stage::mask: return "masking a hidden path";
        case Stage::root_readonly: return "making the root read-only";
        case Stage::pivot_root: return "pivot_root";
        case Stage::detach_old_root: return "detaching the old root";
        case Stage::hostname: return "setting the hostname";
        case Stage::loopback: return "bringing up loopback";
        case Stage::chdir: return "entering the working directory";
        case Stage::fork_command: return "starting the command";
        case Stage::securebits: return "locking securebits";
        case Stage::drop_bounding: return "dropping the capability bounding set";
        case Stage::clear_ambient: return "clearing ambient capabilities";
        case Stage::drop_caps: return "dropping capabilities";
        case Stage::no_new_privs: return "setting no_new_privs";
        case Stage::close_fds: return "closing inherited descriptors";
        case Stage::stdio: return "setting up stdin/stdout/stderr";
        case Stage::signals: return "resetting signals";
        case Stage::exec: return "executing the command";
        case Stage::rlimits: return "setting resource limits";
        case Stage::seccomp: return "loading the seccomp filter";
        case Stage::landlock: return "applying Landlock";
        case Stage::landlock_rule: return "adding a Landlock rule";
        case Stage::landlock_probe: return "proving Landlock is enforced";
        case Stage::landlock_unverified: return "proving Landlock is enforced (not shown)";
        case Stage::userns_limit: return "disabling nested user namespaces";
        case Stage::listener: return "passing the seccomp listener";
        case Stage::proxy_socket: return "opening the proxy's socket inside the sandbox";
        case Stage::proxy_fd: return "passing the proxy's socket";
        case Stage::diag_socket: return "opening the socket gate's sock_diag socket inside the sandbox";
        case Stage::diag_fd: return "passing the socket gate's sock_diag socket";
        case Stage::root_fd: return "passing the sandbox's root to the socket gate";
        case Stage::view_open: return "opening /dev/fuse for the workspace's view";
        case Stage::view_mount: return "mounting the workspace's view (FUSE)";
        case Stage::view_fd: return "passing the view's FUSE descriptor";
        case Stage::exec_next: return "starting the command";
        case Stage::new_session: return "starting the sandbox's own session";
        case Stage::pty_open: return "opening a pty in the sandbox's /dev/pts";
        case Stage::pty_setup: return "setting up the sandbox's pty";
        case Stage::pty_fd: return "passing the sandbox's pty";
        case Stage::pty_foreground: return "making the command the pty's foreground job";
        case Stage::overlay_open: return "opening an overlayfs for the workspace";
        case Stage::overlay_layers: return "giving the workspace's overlay its layers";
        case Stage::overlay_create: return "creating the workspace's overlay";
        case Stage::gateway_socket: return "opening a model gateway's listener inside the sandbox";
        case Stage::set_ids: return "taking the run's uid and gid";
        case Stage::pass_fds: return "passing the caller's descriptors";
        case Stage::gateway_fd: return "passing a model gateway's listener";
        case Stage::publish_fd: return "setting up published ports";
    }
    return "unknown stage";
}

}  // namespace agentjail::launch
