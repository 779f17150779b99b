// SPDX-License-Identifier: Apache-2.0
// The command's side of the init's fork: reset signals, wire stdio, close inherited
// descriptors, execve. Capabilities and no_new_privs are the init's step before the
// fork (drop_privileges in child.cc), inherited here.
#include "launch/command.hpp"

#include "sys/syscalls.hpp"
#include "util/fault.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agentjail::launch {

namespace {
[[noreturn]] void fail(const ChildSpec& s, Stage stage, int err) {
    report(s.err_fd, stage, err, -1);
    ::_exit(125);
}

}  // namespace

void run_command(const ChildSpec& s, mode_t caller_umask) {
    // A process group of its own in the init's session; with a pty, the foreground
    // one. Done while every signal is still blocked (the init's mask): taking the
    // foreground from a background group raises SIGTTOU otherwise.
    if (::setpgid(0, 0) < 0) fail(s, Stage::new_session, errno);
    if (s.pty_slave >= 0) {
        pid_t me = ::getpid();
        if (::ioctl(s.pty_slave, TIOCSPGRP, &me) < 0) fail(s, Stage::pty_foreground, errno);
    }
    // Signals: default dispositions and an empty mask, whatever the launcher or the
    // init set (an ignored SIGPIPE or SIGINT would otherwise leak into the command).
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        ::sigaction(sig, &dfl, nullptr);
    }
    sigset_t none;
    ::sigemptyset(&none);
    if (::sigprocmask(SIG_SETMASK, &none, nullptr) < 0) fail(s, Stage::signals, errno);
    ::umask(caller_umask);

    for (int i = 0; i < 3; ++i) {
        int from = s.stdio[i] < 0 && s.pty_slave >= 0 ? s.pty_slave : s.stdio[i];
        if (from < 0 || from == i) continue;
        if (::dup2(from, i) < 0) fail(s, Stage::stdio, errno);
    }

    for (const auto& l : s.rlimits) {
        if (::syscall(SYS_prlimit64, 0, l.resource, &l.value, nullptr) < 0) fail(s, Stage::rlimits, errno);
    }

    // Capabilities and no_new_privs: dropped by the init before it forked us
    // (drop_privileges), so this process never held any.

    // Only 0, 1, 2 reach the command (FS-12): everything else, including whatever
    // the caller leaked to us and our own pipes, closes at execve.
    if (sys::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) fail(s, Stage::close_fds, errno);
    // ... but for those the caller named (checked open and >= 3 before clone).
    for (size_t i = 0; i < s.n_pass_fds; ++i)
        if (::fcntl(s.pass_fds[i], F_SETFD, 0) < 0) fail(s, Stage::pass_fds, errno);

    // The filter goes on last, so nothing above ran under it; from here to execve
    // only calls the compiler always allows (sendmsg, close, write, execve, exit).
    if (s.filter != nullptr) {
        sock_fprog prog{s.filter_len, const_cast<sock_filter*>(s.filter)};
        unsigned flags = s.want_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
        long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
        if (fd < 0) fail(s, Stage::seccomp, errno);
        if (s.want_listener) {
            int r = send_fd(s.err_fd, Stage::listener, static_cast<int>(fd));
            if (r < 0) fail(s, Stage::listener, -r);
            ::close(static_cast<int>(fd));
        }
    }

    if (fault::hit("command.before-exec")) fail(s, Stage::exec, EIO);
    int result = ENOENT;
    bool denied = false;
    for (const char* path : s.candidates) {
        ::execve(path, s.argv.data(), s.envp.data());
        int e = errno;
        if (e == EACCES) {
            denied = true;
        } else if (e != ENOENT && e != ENOTDIR) {
            result = e;
            break;
        }
    }
    if (result == ENOENT && denied) result = EACCES;
    report(s.err_fd, Stage::exec, result, -1);
    ::_exit(result == ENOENT ? 127 : 126);
}

}  // namespace agentjail::launch
