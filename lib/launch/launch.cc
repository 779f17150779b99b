// SPDX-License-Identifier: Apache-2.0
// The parent side of a launch: prepares the child's memory, clones with every
// namespace, writes the id maps, releases the child, and turns a failure report
// into an Error naming the step, the mount and the policy line.
#include "launch/launch.hpp"

#include "launch/child.hpp"
#include "launch/supervisor.hpp"
#include "plan/limits.hpp"
#include "sys/confinement.hpp"
#include "sys/host_file.hpp"
#include "sys/syscalls.hpp"
#include "util/fault.hpp"
#include "util/strings.hpp"
#include "launch/view_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

namespace agentjail::launch {

namespace {


int read_cap_last() {
    std::ifstream f("/proc/sys/kernel/cap_last_cap");
    int v = 0;
    if (f >> v && v > 0 && v < 64) return v;
    return 63;  // PR_CAPBSET_DROP answers EINVAL past the last one; that is tolerated
}

// This process's /proc/self/oom_score_adj (0 when it cannot be read).
int own_oom_score_adj() {
    char text[16] = {};
    sys::UniqueFd fd(::open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC));
    if (!fd || ::read(fd.get(), text, sizeof text - 1) <= 0) return 0;
    return std::atoi(text);
}

Result<void> write_file(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return util::errno_error(ErrorKind::setup, errno, "open " + path);
    ssize_t n = ::write(fd, text.data(), text.size());
    int e = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size()))
        return util::errno_error(ErrorKind::setup, n < 0 ? e : EIO, "write " + path);
    return {};
}

// Overlay mode cannot work here: say why and what to do instead.
std::string overlay_hint(Stage stage, int err, const std::string& upper) {
    const std::string instead = "; overlay mode needs overlayfs mountable by an unprivileged user namespace "
                                "(Linux 5.11 or newer, overlayfs built in or loaded with `modprobe overlay`): "
                                "use such a kernel, or --workspace-mode clone";
    if (stage == Stage::overlay_open) {
        if (err == ENODEV) return "; this kernel has no overlayfs" + instead;
        return "; the kernel does not let this user namespace mount an overlayfs" + instead;
    }
    if (stage == Stage::overlay_layers)
        return "; this kernel's overlayfs refused a layer or the userxattr option (older than Linux 5.11?)" +
               instead;
    (void)err;
    return "; the upper layer " + upper +
           " must be on a filesystem with user.* extended attributes and whiteouts (ext4, xfs, btrfs; "
           "tmpfs from Linux 6.6): set XDG_STATE_HOME to a directory on one" + instead;
}

// Explains a failure report from the child in terms of the plan.
Error explain_report(const Report& r, const plan::Plan& plan) {
    auto stage = static_cast<Stage>(r.stage);
    int err = r.err;
    if (stage == Stage::exec) {
        std::string cmd = plan.argv.empty() ? std::string("?") : plan.argv[0];
        if (err == ENOENT) {
            std::string where = cmd.find('/') != std::string::npos ? std::string() : " (searched the sandbox's PATH)";
            return Error(ErrorKind::command_not_found, err, cmd + ": command not found in the sandbox" + where)
                .at(ErrorStage::exec, stage_name(stage));
        }
        return Error(ErrorKind::command_not_executable, err, cmd + ": cannot execute: " + util::errno_text(err))
            .at(ErrorStage::exec, stage_name(stage));
    }
    if (stage == Stage::landlock_probe) {
        const std::string probe = plan.landlock.probe_what();
        const std::string why =
            r.index == 0 ? "the kernel let the command make " + probe +
                               " after the restriction: the rules are not in force"
                         : "making " + probe + " was refused with " + util::errno_name(err) +
                               " where Landlock refuses with EACCES: that it holds could not be shown";
        return Error(ErrorKind::setup, err == 0 ? EPERM : err,
                     "setup failed while " + std::string(stage_name(stage)) + ": " + why +
                         " (--landlock off runs without it; docs/landlock.md)")
            .at(ErrorStage::sandbox, stage_name(stage));
    }
    if (stage == Stage::landlock || stage == Stage::landlock_rule) {
        std::string what = std::string("setup failed while ") + stage_name(stage);
        if (stage == Stage::landlock_rule && r.index >= 0 && static_cast<size_t>(r.index) < plan.landlock.rules.size())
            what += " for " + plan.landlock.rules[static_cast<size_t>(r.index)].path;
        return Error(ErrorKind::setup, err,
                     what + ": " + util::errno_text(err) + " (" + plan.landlock.origin +
                         "; --landlock off runs without it)")
            .at(ErrorStage::sandbox, stage_name(stage));
    }
    std::string what = std::string("setup failed while ") + stage_name(stage);
    if (r.index >= 0 && static_cast<size_t>(r.index) < plan.mounts.size()) {
        const auto& op = plan.mounts[static_cast<size_t>(r.index)];
        what += " " + op.dst;
        if (!op.src.empty() && (op.kind == plan::MountKind::bind || op.kind == plan::MountKind::overlay))
            what += " (from " + op.src + ")";
        if (!op.why.empty()) what += " [" + op.why + "]";
    }
    std::string hint;
    if (stage == Stage::mount_fs && err == EPERM)
        hint = "; the kernel refused a new mount here (a /proc or /sys partly hidden on the host, "
               "as in some containers, prevents a fresh procfs)";
    if (stage == Stage::overlay_open || stage == Stage::overlay_layers ||
        stage == Stage::overlay_create)
        hint = overlay_hint(stage, err, r.index >= 0 && static_cast<size_t>(r.index) < plan.mounts.size()
                                            ? plan.mounts[static_cast<size_t>(r.index)].upper
                                            : std::string());
    if (stage == Stage::seccomp && err == EBUSY)
        hint = "; agentjail was started under a seccomp filter that has a notification listener already (WSL2's "
               "init installs one, as does a sandbox with a supervisor), and the kernel allows one per chain of "
               "filters: agentjail needs its own for the socket gate and the log of refusals. Run it outside that "
               "sandbox (docs/environments.md)";
    if (stage == Stage::view_open || stage == Stage::view_mount)
        hint = "; the workspace's view needs /dev/fuse and a kernel that lets a user namespace mount FUSE "
               "(in a container, pass the device: --device /dev/fuse); --view mounts guards the workspace "
               "without it (docs/workspace.md)";
    if (stage == Stage::clone_tree && err == ELOOP)
        hint = "; a path component became a symlink after planning, refusing to follow it";
    if (stage == Stage::clone_tree && err == EMFILE) {
        struct rlimit nofile {};
        (void)::getrlimit(RLIMIT_NOFILE, &nofile);
        hint = "; the sandbox holds a few descriptors while it builds its root, one bind at a time, but "
               "the hard limit of " + std::to_string(nofile.rlim_max) +
               " open files (ulimit -Hn) was reached: raise it";
    }
    return Error(ErrorKind::setup, err, what + ": " + util::errno_text(err) + hint)
        .at(ErrorStage::sandbox, stage_name(stage));
}

// Builds the child's memory while we may still allocate.
void prepare(ChildSpec& s, const plan::Plan& plan, const Stdio& stdio) {
    s.root = prepare_root(plan);
    s.hostname = plan.hostname.c_str();
    s.hostname_len = plan.hostname.size();
    s.set_hostname = (plan.clone_flags & CLONE_NEWUTS) != 0 && !plan.hostname.empty();
    s.loopback = (plan.clone_flags & CLONE_NEWNET) != 0;
    // The socket gate asks the sandbox's own network namespace which Unix sockets
    // listen inside; with the host's network, it has none to ask.
    s.diag = s.loopback && plan.seccomp && plan.seccomp->needs_listener();
    s.root_fd = plan.seccomp && !plan.sockets.empty();
    s.cwd = plan.cwd.empty() ? "/" : plan.cwd.c_str();
    for (const auto& a : plan.argv) s.argv.push_back(const_cast<char*>(a.c_str()));
    s.argv.push_back(nullptr);
    for (const auto& e : plan.env) s.envp.push_back(const_cast<char*>(e.c_str()));
    s.envp.push_back(nullptr);
    for (const auto& c : plan.exec_candidates) s.candidates.push_back(c.c_str());
    s.cap_last = read_cap_last();
    s.set_ids = plan.set_ids;
    s.uid = plan.uid;
    s.gid = plan.gid;
    s.pass_fds = plan.pass_fds.data();
    s.n_pass_fds = plan.pass_fds.size();
    s.limit_userns = !plan.allow_nested_userns;
    s.broadcast_sig = SIGRTMIN + 2;
    s.freeze_sig = SIGRTMIN + 4;
    s.thaw_sig = SIGRTMIN + 5;
    s.sync_sig = SIGRTMIN + 6;
    s.proxy_port = plan.proxy_port;
    if (plan.net) {
        for (const auto& g : plan.net->gateways) {
            if (!g.listener) continue;
            sockaddr_storage ss{};
            if (g.address.v6) {
                auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
                a->sin6_family = AF_INET6;
                a->sin6_port = htons(g.port);
                std::memcpy(&a->sin6_addr, g.address.bytes.data(), 16);
            } else {
                auto* a = reinterpret_cast<sockaddr_in*>(&ss);
                a->sin_family = AF_INET;
                a->sin_port = htons(g.port);
                std::memcpy(&a->sin_addr, g.address.bytes.data(), 4);
            }
            s.gateway_listen.push_back(ss);
        }
    }
    for (const auto& r : plan.rlimits) {
        ChildSpec::Limit l{};
        l.resource = r.resource;
        l.value.rlim_cur = r.soft;
        l.value.rlim_max = r.hard;
        s.rlimits.push_back(l);
    }
    // The sandbox raises its descriptor limit to build the root (rootfs.cc): the
    // command gets this process's own back, unless the plan sets one.
    if (std::none_of(s.rlimits.begin(), s.rlimits.end(), [](const ChildSpec::Limit& l) { return l.resource == RLIMIT_NOFILE; })) {
        ChildSpec::Limit l{};
        l.resource = RLIMIT_NOFILE;
        if (::getrlimit64(RLIMIT_NOFILE, &l.value) == 0) s.rlimits.push_back(l);
    }
    if (plan.seccomp) {
        const auto& bpf = plan.seccomp->bpf();
        s.filter = bpf.data();
        s.filter_len = static_cast<unsigned short>(bpf.size());
        s.want_listener = plan.seccomp->needs_listener();
    }
    if (plan.landlock.apply) {
        s.landlock_fs = plan.landlock.handled_fs;
        s.landlock_scoped = plan.landlock.scoped;
        for (const auto& r : plan.landlock.rules) s.landlock_rules.push_back({r.path.c_str(), r.access});
        if (!plan.landlock.probe_path.empty()) s.landlock_probe = plan.landlock.probe_path.c_str();
        s.landlock_probe_type = plan.landlock.probe_fifo ? S_IFIFO : S_IFCHR;
        s.landlock_required = plan.landlock.mode == policy::LandlockMode::required;
    }
    s.stdio[0] = stdio.in;
    s.stdio[1] = stdio.out;
    s.stdio[2] = stdio.err;
    s.pty = stdio.pty;
    if (stdio.pty_termios != nullptr) {
        s.set_termios = true;
        s.pty_termios = *stdio.pty_termios;
    }
    if (stdio.pty_winsize != nullptr) {
        s.set_winsize = true;
        s.pty_winsize = *stdio.pty_winsize;
    }
    s.close_fds = stdio.close_in_child.data();
    s.n_close_fds = stdio.close_in_child.size();
}

// What refused the namespaces, and the fix where agentjail runs (a container's
// seccomp profile is not an old kernel, and a container cannot set a sysctl).
Error clone_error(int err) {
    if (err == ENOSYS || err == EPERM || err == ENOSPC || err == EUSERS || err == EINVAL) {
        const auto r = sys::namespace_refusal(sys::confinement(), err);
        return Error(ErrorKind::unsupported, err, r.why + " (" + util::errno_name(err) + "); " + r.fix);
    }
    return util::errno_error(ErrorKind::setup, err, "clone3");
}

// The command's stdin, stdout and stderr (the caller's own, or the ones it gave)
// must be open descriptors: a closed one would be the number the next file opened
// in the sandbox gets, so that a command's output meant for the terminal lands in
// it. (A pty of the sandbox's own gives all three.)
Result<void> check_stdio(const Stdio& stdio) {
    if (stdio.pty) return {};
    static const char* const names[] = {"stdin", "stdout", "stderr"};
    const int given[] = {stdio.in, stdio.out, stdio.err};
    for (int i = 0; i < 3; ++i) {
        int fd = given[i] >= 0 ? given[i] : i;
        if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        return Error(ErrorKind::invalid_input, EBADF,
                     std::string("the command's ") + names[i] + " (fd " + std::to_string(fd) +
                         ") is closed: give it an open descriptor (/dev/null if it needs none)");
    }
    return {};
}

}  // namespace

Result<Process> spawn(const plan::Plan& plan, const Stdio& stdio, boost::asio::io_context& loop,
                      const Hooks& hooks) {
    if (plan.argv.empty() || plan.exec_candidates.empty())
        return Error(ErrorKind::invalid_input, EINVAL, "no command given");
    if (auto ok = check_stdio(stdio); !ok) return std::move(ok).error();

    ChildSpec spec;
    prepare(spec, plan, stdio);

    if (plan.seccomp && plan.seccomp->bpf().size() > BPF_MAXINSNS)
        return Error(ErrorKind::invalid_input, E2BIG, "the seccomp program is too long (" +
                                                         std::to_string(plan.seccomp->bpf().size()) + " instructions)");
    sys::UniqueFd log;
    if (plan.seccomp && hooks.seccomp_log >= 0) {
        log.reset(::fcntl(hooks.seccomp_log, F_DUPFD_CLOEXEC, 3));
        if (!log) return util::errno_error(ErrorKind::setup, errno, "seccomp log");
    } else if (!plan.seccomp_log.empty()) {
        // Never through a link, a FIFO or the sandbox's own files (sys/host_file.hpp).
        auto f = sys::open_host_file(plan.seccomp_log, sys::HostWrite::truncate, plan.host_files,
                                     "seccomp log");
        if (!f) return std::move(f).error();
        log = std::move(*f);
    }

    int go[2], errp[2], status[2];
    // A socket, not a pipe, so a write to a child that already died is EPIPE and
    // never a SIGPIPE in the caller's process (MSG_NOSIGNAL).
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0)
        return util::errno_error(ErrorKind::setup, errno, "socketpair");
    sys::UniqueFd go_r(go[0]), go_w(go[1]);
    // A datagram socket, not a pipe: the command passes the seccomp listener over it.
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, errp) < 0)
        return util::errno_error(ErrorKind::setup, errno, "socketpair");
    sys::UniqueFd err_r(errp[0]), err_w(errp[1]);
    if (::pipe2(status, O_CLOEXEC) < 0) return util::errno_error(ErrorKind::setup, errno, "pipe");
    sys::UniqueFd status_r(status[0]), status_w(status[1]);
    // Job control news from the init: both ends non-blocking (the init drops a record
    // rather than stall when nobody reads; the reader polls).
    int events[2];
    if (::pipe2(events, O_CLOEXEC | O_NONBLOCK) < 0) return util::errno_error(ErrorKind::setup, errno, "pipe");
    sys::UniqueFd events_r(events[0]), events_w(events[1]);
    spec.events_fd = events_w.get();
    // Freeze notes from the init to the supervisor: non-blocking on the init's side
    // (one byte per freeze; a full pipe only means notes are already waiting).
    int freeze[2];
    if (::pipe2(freeze, O_CLOEXEC) < 0) return util::errno_error(ErrorKind::setup, errno, "pipe");
    sys::UniqueFd freeze_r(freeze[0]), freeze_w(freeze[1]);
    if (::fcntl(freeze_w.get(), F_SETFL, O_NONBLOCK) < 0) return util::errno_error(ErrorKind::setup, errno, "fcntl");
    spec.freeze_fd = freeze_w.get();
    // The init watches this process's state (a SIGSTOP of agentjail cannot be caught):
    // our own stat, opened here, on the host's /proc, before any namespace is new.
    sys::UniqueFd self_stat(::open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
    if (!self_stat) return util::errno_error(ErrorKind::setup, errno, "opening /proc/self/stat");
    spec.launcher_stat_fd = self_stat.get();
    spec.go_fd = go_r.get();
    spec.wait_before_fork = static_cast<bool>(hooks.before_fork);
    spec.err_fd = err_w.get();
    spec.root.report_fd = spec.err_fd;
    // The workspace's view is served from the directory as it is now: opened before
    // the sandbox exists, so a rename on the host meanwhile changes nothing.
    sys::UniqueFd view_root;
    // The socket gate's way below the view (socket_gate.hpp), only where there is a
    // gate: a copy of the view's root, and the sandbox's user namespace (after clone).
    const bool gated = plan.seccomp && plan.seccomp->needs_listener();
    sys::UniqueFd gate_view_host;
    std::shared_ptr<const view::Rules> view_rules;
    for (const auto& m : plan.mounts)
        if (m.kind == plan::MountKind::view) {
            view_root.reset(::open(m.src.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (!view_root) return util::errno_error(ErrorKind::setup, errno, "opening the workspace " + m.src + " for its view");
            if (gated) gate_view_host.reset(::fcntl(view_root.get(), F_DUPFD_CLOEXEC, 0));
            view_rules = m.view_rules;
        }
    spec.status_fd = status_w.get();
    // Published ports: the init makes sockets in the sandbox's network namespace on
    // request over this pair (net/publish.hpp says why).
    sys::UniqueFd pub_r, pub_w;
    if (!plan.publish.empty()) {
        int pub[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pub) < 0)
            return util::errno_error(ErrorKind::setup, errno, "socketpair");
        pub_r.reset(pub[0]);
        pub_w.reset(pub[1]);
        spec.publish_fd = pub_w.get();
        spec.publish_sig = SIGRTMIN + 3;
    }

    // The init dies with this process (not with this thread): it watches a pidfd of
    // the launching process, closed here after the clone.
    sys::UniqueFd launcher;
    if (plan.die_with_parent) {
        int fd = sys::pidfd_open(::getpid());
        if (fd < 0) return util::errno_error(ErrorKind::setup, -fd, "pidfd_open of agentjail itself");
        launcher.reset(fd);
        spec.launcher_pidfd = fd;
    }

    int pidfd = -1;
    sys::CloneArgs args{};
    args.flags = plan.clone_flags | CLONE_PIDFD;
    if (hooks.cgroup_fd >= 0) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = static_cast<std::uint64_t>(hooks.cgroup_fd);
    }
    args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
    // No exit signal: a host that reaps with waitpid(-1) cannot steal the init's
    // status; we wait on the pidfd with __WALL instead.
    args.exit_signal = 0;
    // The child starts with no handler of ours (CLONE_CLEAR_SIGHAND: a host's SIGTERM
    // or SIGCHLD handler never runs in it) and every signal blocked until it sets its
    // own mask: a signal that arrives between clone and that point stays pending
    // instead of running the host's code on a copy of the host's memory.
    if (fault::hit("launch.before-clone")) return Error(ErrorKind::setup, EIO, "an injected fault before clone");
    sigset_t all, saved;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &saved);
    args.flags |= CLONE_CLEAR_SIGHAND;
    spec.handlers_cleared = true;
    long pid = sys::clone3(&args);
    if (pid == -EINVAL) {
        // Linux older than 5.5: the child resets the handlers itself.
        args.flags &= ~static_cast<std::uint64_t>(CLONE_CLEAR_SIGHAND);
        spec.handlers_cleared = false;
        pid = sys::clone3(&args);
    }
    if (pid != 0) ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    if (pid == 0) {
        ::close(go_w.release());
        ::close(err_r.release());
        ::close(status_r.release());
        ::close(events_r.release());
        ::close(freeze_r.release());
        if (pub_r) ::close(pub_r.release());
        child_main(spec);
    }
    if (pid < 0) return clone_error(static_cast<int>(-pid));
    sys::UniqueFd pfd(pidfd);
    // (The child is not reaped before the run ends, so its number names it.)
    sys::UniqueFd sandbox_userns;
    if (gate_view_host)
        sandbox_userns.reset(::open(("/proc/" + std::to_string(pid) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    launcher.reset();
    go_r.reset();
    err_w.reset();
    status_w.reset();
    events_w.reset();
    freeze_w.reset();
    self_stat.reset();
    pub_w.reset();

    auto abort_child = [&](Error e) -> Result<Process> {
        sys::pidfd_send_signal(pfd.get(), SIGKILL);
        siginfo_t si;
        ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pfd.get()), &si, WEXITED | __WALL);
        return e;
    };
    if (fault::hit("launch.after-clone")) return abort_child(Error(ErrorKind::setup, EIO, "an injected fault after clone"));

    // Map our uid and gid to themselves and nothing else; setgroups stays denied
    // so groups cannot be dropped to get past a group-denied file (CAP-03). A root
    // launcher running the command as another identity maps that one instead and
    // leaves setgroups allowed: the child drops every group root had (gid 0 among
    // them), so the command holds none, and with none left there is nothing to drop.
    const std::string proc = "/proc/" + std::to_string(pid);
    if (auto r = write_file(proc + "/uid_map", plan.uid_map); !r) return abort_child(std::move(r).error());
    if (!plan.set_ids)
        if (auto r = write_file(proc + "/setgroups", "deny"); !r) return abort_child(std::move(r).error());
    if (auto r = write_file(proc + "/gid_map", plan.gid_map); !r) return abort_child(std::move(r).error());
    // The sandbox is what the OOM killer takes first, agentjail last: a launcher killed
    // in a cgroup it shares with its command (a run with no limits of its own, a Slurm
    // step) could neither kill what is left nor write the record. 500 above our own
    // score, at most 1000: raised only, which needs no privilege; every process
    // inside inherits it. Best effort: without it the scores are only equal.
    (void)write_file(proc + "/oom_score_adj", std::to_string(std::min(own_oom_score_adj() + 500, 1000)));

    if (hooks.before_release)
        if (auto r = hooks.before_release(static_cast<pid_t>(pid)); !r) return abort_child(std::move(r).error());

    Process p(static_cast<pid_t>(pid), std::move(pfd), std::move(status_r), std::move(events_r));
    if (pub_r) p.set_publish_socket(std::move(pub_r));
    // From here a failed launch ends the same way: the sandbox killed, reaped
    // (the supervisor joined), the error returned.
    auto stop = [&p](Error e) -> Result<Process> {
        (void)p.kill(SIGKILL);
        (void)p.wait();
        return e;
    };
    if (::send(go_w.get(), "g", 1, MSG_NOSIGNAL) != 1)
        return util::errno_error(ErrorKind::setup, errno, "releasing the child");
    if (hooks.before_fork) {
        if (auto r = hooks.before_fork(static_cast<pid_t>(pid)); !r) return stop(std::move(r).error());
        // A child that already failed has closed its end: its report below says why.
        (void)::send(go_w.get(), "f", 1, MSG_NOSIGNAL);
    }
    go_w.reset();
    if (fault::hit("launch.after-release")) return stop(Error(ErrorKind::setup, EIO, "an injected fault after the child's release"));

    // The one supervisor of the run, started with the seccomp listener (when the
    // command passes one) or once the setup is done.
    sys::UniqueFd diag;  // the socket gate's, from the child (before its listener)
    sys::UniqueFd sandbox_root;  // likewise
    auto supervise = [&](sys::UniqueFd listener) {
        Supervisor::Config sc;
        sc.pidfd = p.pidfd();
        sc.listener = std::move(listener);
        sc.program = plan.seccomp;
        sc.log = std::move(log);
        sc.timeout_s = plan.timeout_s;
        sc.grace_s = plan.kill_grace_s;
        sc.broadcast_sig = spec.broadcast_sig;
        sc.freeze_sig = spec.freeze_sig;
        sc.thaw_sig = spec.thaw_sig;
        sc.sync_sig = spec.sync_sig;
        sc.freeze_notes = std::move(freeze_r);
        sc.on_kill = hooks.on_kill;
        sc.watch = hooks.watch;
        sc.freeze_group = hooks.freeze_group;
        sc.gate.allowed = plan.sockets;
        sc.gate.diag = std::move(diag);
        sc.gate.root = std::move(sandbox_root);
        sc.gate.userns = std::move(sandbox_userns);
        if (sc.gate.userns) {
            sc.gate.view_inside = view_rules->inside;
            sc.gate.view_host = std::move(gate_view_host);
        }
        p.supervise(std::make_unique<Supervisor>(std::move(sc), loop));
    };
    // EOF means every holder of the write end is gone: the init closed it after
    // forking, the command's copy closed at execve. A record means a step failed;
    // a listener record carries the seccomp notification fd.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(plan.setup_timeout_s);
    bool exec_next = false;  // the command said it is at its execve
    for (;;) {
        // A setup that never ends (a bind source on a stalled network filesystem, an
        // execve that blocks) must not hang the caller: the wait has a deadline.
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd pf{err_r.get(), POLLIN, 0};
        int pr = left.count() > 0 ? ::poll(&pf, 1, static_cast<int>(std::min<long long>(left.count(), 1LL << 30))) : 0;
        if (pr < 0 && errno == EINTR) continue;
        if (pr < 0) return stop(util::errno_error(ErrorKind::internal, errno, "waiting for the sandbox's setup"));
        if (pr == 0) {
            return stop(Error(ErrorKind::setup, ETIMEDOUT,
                         "the sandbox's setup did not finish within " + units::format_duration(plan.setup_timeout_s) +
                             " (a bind source on a stalled filesystem, or a command whose execve blocks?); "
                             "the sandbox was killed; limits.setup_timeout sets the wait"));
        }
        Report r{};
        iovec iov{&r, sizeof r};
        alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        ssize_t n = ::recvmsg(err_r.get(), &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (n != static_cast<ssize_t>(sizeof r)) continue;
        auto passed_fd = [&msg]() {
            sys::UniqueFd out;
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                    int fd = -1;
                    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
                    out.reset(fd);
                }
            }
            return out;
        };
        if (r.stage == static_cast<std::int32_t>(Stage::diag_fd)) {
            diag = passed_fd();
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::root_fd)) {
            sandbox_root = passed_fd();
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::view_fd)) {
            // Served at once: the sandbox's next step may look below the mount.
            auto server = view::Server::start(passed_fd(), std::move(view_root), view_rules);
            if (!server) {
                (void)p.kill(SIGKILL);
                (void)p.wait();
                return std::move(server).error();
            }
            p.set_view(std::move(*server));
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::proxy_fd)) {
            p.set_proxy_socket(passed_fd());
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::gateway_fd)) {
            p.add_gateway_socket(passed_fd());
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::pty_fd)) {
            p.set_pty_master(passed_fd());
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::landlock_unverified)) {
            p.add_degraded("landlock: applied, but not shown to hold: making " + plan.landlock.probe_what() +
                           " was refused with " + util::errno_name(r.err) +
                           " before Landlock could answer (a seccomp filter agentjail runs under?)");
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::exec_next)) {
            exec_next = true;
            continue;
        }
        if (r.stage == static_cast<std::int32_t>(Stage::listener)) {
            // From now on the command may block on a refused call until we answer:
            // start serving before waiting for its execve.
            supervise(passed_fd());
            continue;
        }
        Error e = explain_report(r, plan);
        if (r.stage != static_cast<std::int32_t>(Stage::exec)) (void)p.kill(SIGKILL);
        (void)p.wait();
        return e;
    }
    // The reports ended with no step's failure and no command at its execve: a process
    // of the setup died without a word (a crash, a kill from outside). That is the
    // setup's failure, not the command's exit status.
    if (!exec_next) {
        (void)p.kill(SIGKILL);
        auto ended = p.wait();
        std::string how = "it ended";
        if (ended && !ended->exited && ended->term_signal != 0)
            how = std::string("a process of it was killed by ") + util::signal_name(ended->term_signal);
        else if (ended && ended->exited && ended->exit_code != 0)
            how = "a process of it exited with status " + std::to_string(ended->exit_code);
        return Error(ErrorKind::setup, ECHILD,
                     "the sandbox's setup ended before the command started, without a report of why (" + how +
                         "): a crash or a kill from outside; nothing of it is left")
            .at(ErrorStage::sandbox, stage_name(Stage::exec_next));
    }
    // Always supervised: the wall clock, the kill grace of a stop, the freeze of a
    // stopped run and its thaw, the host watch.
    if (!p.supervised()) supervise({});
    if (hooks.setup_done) hooks.setup_done();
    return p;
}

}  // namespace agentjail::launch
