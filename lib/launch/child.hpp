// SPDX-License-Identifier: Apache-2.0
// What the child needs after clone, prepared by the parent: the flattened root
// plan, C arrays for argv/envp/candidates, the pipes, and an empty capability set.
#pragma once

#include "launch/rootfs.hpp"

#include <linux/filter.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace agentjail::launch {

// The record a failing child writes to the error pipe (one write, < PIPE_BUF).
struct Report {
    std::int32_t stage;
    std::int32_t err;
    std::int32_t index;
};

struct ChildSpec {
    RootPlan root;
    const char* hostname = nullptr;
    size_t hostname_len = 0;
    bool set_hostname = false;
    bool loopback = false;
    // The socket gate's sock_diag socket, made in the new network namespace and
    // passed out (Stage::diag_fd): which Unix sockets listen inside.
    bool diag = false;
    // The sandbox's root, passed out once built (Stage::root_fd): the socket gate
    // resolves the policy's allowed sockets in it (a descriptor: the init, later not
    // dumpable, cannot be reached through /proc by an unprivileged supervisor).
    bool root_fd = false;
    const char* cwd = "/";
    std::vector<char*> argv;  // NULL-terminated
    std::vector<char*> envp;  // NULL-terminated
    std::vector<const char*> candidates;
    int cap_last = 40;
    // A root launcher runs the command as uid/gid (plan.set_ids): the child takes them
    // first thing, keeping its capabilities in the new namespace for the root's build.
    bool set_ids = false;
    uid_t uid = 0;
    gid_t gid = 0;
    // The caller's descriptors the command keeps at their numbers.
    const int* pass_fds = nullptr;
    size_t n_pass_fds = 0;
    // Die with the launcher: a pidfd of the launching process (not of the thread
    // that cloned: PR_SET_PDEATHSIG would follow that thread and kill a sandbox
    // started from a short-lived worker thread). The init polls it and exits when
    // the whole launcher is gone. -1: the sandbox may outlive the launcher.
    int launcher_pidfd = -1;
    // The kernel reset every signal handler at clone (CLONE_CLEAR_SIGHAND); false on
    // kernels older than 5.5, where the child resets them itself.
    bool handlers_cleared = false;
    bool limit_userns = true;  // write user.max_user_namespaces = 0 in our namespace
    int broadcast_sig = 0;     // from outside: the init sends SIGTERM to every process
    // The user's stop of agentjail stops the whole sandbox (docs/usage.md, "Stopping
    // and signals"): from outside, freeze_sig asks the init to stop every process of
    // the pid namespace (SIGSTOP to all) and thaw_sig to continue them. The init also
    // freezes on its own when it sees the launcher stopped (launcher_stat_fd, the
    // launcher's /proc/PID/stat opened before clone: a SIGSTOP cannot be caught, so
    // agentjail could not ask). Either way it writes one byte on freeze_fd
    // (FreezeNote), and stays frozen until thaw_sig: the launcher first re-checks its
    // guarded names, then thaws. The signals are always set (launch.cc); -1: no fd.
    int freeze_sig = 0;
    int thaw_sig = 0;
    // From outside: the init answers with a freeze note (FreezeNote, freeze_asked)
    // once every signal sent to it before was passed on, and stops nothing: the
    // launcher then freezes the sandbox's cgroup (a stop the command's job was sent
    // just before has reached it, and cannot arrive after the thaw instead).
    int sync_sig = 0;
    int freeze_fd = -1;
    int launcher_stat_fd = -1;
    std::uint16_t proxy_port = 0;  // >0: listen on 127.0.0.1:port, pass the socket out
    // Model gateways on loopback: listen at each address inside too and pass each
    // socket out (Stage::gateway_fd), in this order (net::Settings::gateways).
    std::vector<sockaddr_storage> gateway_listen;
    // Published ports (net/publish.hpp): the init's end of the control pair, and the
    // signal the kernel raises when it is readable (F_SETSIG). -1: none.
    int publish_fd = -1;
    int publish_sig = 0;

    struct Limit {
        int resource;
        struct rlimit64 value;
    };
    std::vector<Limit> rlimits;

    // The seccomp program (null: none) and whether to ask for a notification listener,
    // which the command passes back over err_fd before execve.
    const sock_filter* filter = nullptr;
    unsigned short filter_len = 0;
    bool want_listener = false;

    // Landlock (plan.landlock), applied by the command after its rlimits and before
    // the filter: the rules by path inside, plus one per passed descriptor that is a
    // file (reopened through /proc/self/fd it is the host's file, outside every rule),
    // with what its open mode gives. landlock_fs 0: none.
    struct LandlockRule {
        const char* path;
        std::uint64_t access;
    };
    std::vector<LandlockRule> landlock_rules;
    std::uint64_t landlock_fs = 0;
    std::uint64_t landlock_scoped = 0;
    const char* landlock_probe = nullptr;
    mode_t landlock_probe_type = S_IFCHR;  // S_IFIFO or S_IFCHR (plan::Landlock::probe_fifo)
    // Required: a probe that cannot tell fails the launch; else it is said
    // (Stage::landlock_unverified) and the command goes on.
    bool landlock_required = false;

    int go_fd = -1;      // read end: one byte once the id maps are written
    // A second byte on go_fd before the init forks the command: the launcher's
    // before_fork hook (the cgroup v1 attach) ran while the root was being built.
    bool wait_before_fork = false;
    int err_fd = -1;     // a SOCK_SEQPACKET end, close-on-exec: a Report on failure, the listener
    int status_fd = -1;  // write end: the command's wait status, from the init
    int stdio[3] = {-1, -1, -1};

    // A pty of the sandbox's own, opened by the init from the sandbox's devpts: the
    // master goes to the relay (Stage::pty_fd), the slave becomes the session's
    // controlling terminal and the command's 0/1/2 where stdio[i] is -1.
    bool pty = false;
    bool set_termios = false;
    termios pty_termios{};
    bool set_winsize = false;
    winsize pty_winsize{};
    int pty_slave = -1;  // set by the init
    // Where the init tells the launcher that the command stopped or went on (job
    // control): non-blocking, records dropped when nobody reads.
    int events_fd = -1;
    // The relay's own descriptors (and any other of the launcher's the child must not
    // hold: a reader of a pipe the command writes, a writer of its stdin).
    const int* close_fds = nullptr;
    size_t n_close_fds = 0;
};

// What the init writes on freeze_fd: it froze because the launcher asked, or
// because it saw the launcher stopped.
enum FreezeNote : char { freeze_asked = 'A', freeze_saw_stop = 'S' };

// What the init writes on events_fd.
struct JobEvent {
    enum Kind : std::int32_t { stopped = 1, continued = 2 };
    std::int32_t kind;
    std::int32_t sig;  // the stop signal
};

// The child's whole life: setup, then init of the pid namespace. Never returns.
[[noreturn]] void child_main(ChildSpec& spec);

}  // namespace agentjail::launch
