// SPDX-License-Identifier: Apache-2.0
// Executes a Plan's mount list in the child: builds the new root on a tmpfs,
// pivots into it and detaches the old root. Runs between clone and execve, so
// everything here is raw system calls over memory prepared by the parent.
#pragma once

#include "plan/plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace agentjail::launch {

// One mount op, flattened for the child: C strings only, decided flags.
struct ChildMount {
    plan::MountKind kind = plan::MountKind::bind;
    const char* src = nullptr;   // host path (bind) or link text (symlink)
    const char* rel = nullptr;   // dst without its leading '/': "" is the root
    const char* data = nullptr;  // mount options for tmpfs / devpts / mask_dir
    const char* upper = nullptr; // overlay: the upper layer and its work directory (src: lower)
    const char* work = nullptr;
    const char* text = nullptr;  // mask_file: what the file shows (plan::MountOp::text); null: nothing
    std::size_t text_len = 0;
    unsigned long flags = 0;     // MS_* for the classic mounts
    std::uint64_t attr = 0;      // MOUNT_ATTR_* set on a bind's detached tree
    bool is_dir = true;
    // The mount point is a host name inside a bind (or the kernel's, in /proc): the
    // child opens it and never creates it, so a name that vanished since planning
    // is not made anew on the host (through a read-write bind) by the launcher.
    bool no_create = false;
    // A mask over a host file or directory (not a placeholder of ours) that may be
    // gone by the time the root is built (/etc/gshadow.lock, matched by gshadow*,
    // lives for a moment): then nothing is left to hide and the mask is skipped. The
    // same for a directory bound over itself only so it cannot be renamed (its source
    // gone too). Anything else whose mount point vanished fails the launch.
    bool may_vanish = false;
    int tree_fd = -1;            // the child fills this in (its own copy)
    bool gone = false;           // the child found its source gone (may_vanish)
};

// Why a step failed: the stage and the index of the mount op (or -1).
enum class Stage : int {
    none = 0,
    wait_parent,
    mount_private,
    open_source,
    clone_tree,
    set_attr,
    staging_root,
    mount_point,
    attach,
    mount_fs,
    make_symlink,
    mask,
    root_readonly,
    pivot_root,
    detach_old_root,
    hostname,
    loopback,
    chdir,
    fork_command,
    securebits,
    drop_bounding,
    clear_ambient,
    drop_caps,
    no_new_privs,
    close_fds,
    stdio,
    signals,
    exec,
    rlimits,
    seccomp,
    userns_limit,
    proxy_socket,
    new_session,
    pty_open,
    pty_setup,
    pty_foreground,
    overlay_open,    // fsopen("overlay"): no overlayfs for this user namespace
    overlay_layers,  // a layer or an option refused (userxattr: before Linux 5.11)
    overlay_create,  // the filesystem refused the layers together
    gateway_socket,  // a model gateway's listener inside (docs/network.md)
    set_ids,         // taking the run's uid and gid (a root launcher's run as another identity)
    pass_fds,        // keeping the caller's descriptors open for the command
    landlock,        // making or applying the Landlock ruleset
    landlock_rule,   // a rule of it (index: plan.landlock.rules)
    landlock_probe,  // the probe after it: index 0 made the node (not enforced), else the errno
    view_open,       // opening /dev/fuse for the workspace's view
    view_mount,      // mounting the view
    listener = 100,  // not a failure: the message carries the seccomp listener fd
    proxy_fd = 101,  // not a failure: the message carries the proxy's listening socket
    pty_fd = 102,    // not a failure: the message carries the sandbox's pty master
    gateway_fd = 103,  // not a failure: the message carries a gateway's listening socket
    publish_fd = 104,  // a socket for a published port (on the publish pair, not err_fd)
    diag_fd = 105,     // not a failure: the message carries the socket gate's sock_diag socket
    diag_socket = 106, // making that socket
    root_fd = 107,     // not a failure: the message carries the sandbox's root (O_PATH)
    landlock_unverified = 108,  // not a failure: Landlock's probe was answered with err, not EACCES
    view_fd = 109,     // not a failure: the message carries the view's /dev/fuse descriptor
    exec_next = 110,   // not a failure: the command's last step before execve; the end of
                       // the reports without it is a setup that died without saying why
};

const char* stage_name(Stage s);

struct Failure {
    Stage stage = Stage::none;
    int err = 0;
    int index = -1;
};

struct RootPlan {
    std::vector<ChildMount> mounts;
    const char* root_data = nullptr;  // tmpfs options of the new root
    const char* staging = "/tmp";     // where the new root is assembled before pivot
    // Where a view's /dev/fuse descriptor goes as soon as it is mounted (the parent's
    // report socket): the supervisor must serve it before anything looks below it.
    int report_fd = -1;
    std::vector<std::string> storage; // owns the strings the pointers above refer to
};

// Defined in child.cc: passes fd to the parent with a report of stage `what`.
int send_fd(int sock, Stage what, int fd);

// Parent side: flatten the plan's mounts (allocates; before clone).
RootPlan prepare_root(const plan::Plan& plan);

// Child side: no allocation. Returns 0, or -1 with *fail filled in. On success the
// process's root is the new root and its cwd is "/".
int build_root(RootPlan& rp, Failure* fail);

}  // namespace agentjail::launch
