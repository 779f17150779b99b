// SPDX-License-Identifier: Apache-2.0
// The command's side of the init's fork: reset signals, wire stdio, close inherited
// descriptors, execve. Capabilities and no_new_privs are the init's step before the
// fork (drop_privileges in child.cc), inherited here.
#include "launch/command.hpp"

#include "sys/landlock.hpp"
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
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agentjail::launch {

namespace {
[[noreturn]] void fail(const ChildSpec& s, Stage stage, int err, int index = -1) {
    report(s.err_fd, stage, err, index);
    ::_exit(125);
}

namespace ll = sys::landlock;

// A rule for a descriptor the caller passed (pass_fds) that is a file or a device:
// reopened by name (/proc/self/fd/N) it is the caller's file, which lies outside
// every rule of the tree; it gets what its open mode already gives, no more. (The
// command's stdio are the relay's pipes, which Landlock does not govern, or the
// sandbox's pty, under /dev/pts's rule.)
int add_descriptor_rule(int ruleset, int fd, std::uint64_t handled) {
    struct stat st {};
    if (::fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) return 0;
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_PATH) != 0) return 0;
    std::uint64_t access = S_ISCHR(st.st_mode) ? ll::kIoctlDev : 0;
    if ((fl & O_ACCMODE) != O_WRONLY) access |= ll::kReadFile;
    if ((fl & O_ACCMODE) != O_RDONLY) access |= ll::kWriteFile | ll::kTruncate;
    access &= handled;
    if (access == 0) return 0;
    const int r = ll::add_path_rule(ruleset, fd, access);
    // A descriptor Landlock cannot name (an internal mount's file) needs no rule.
    return r == -EBADFD ? 0 : r;
}

// The command's Landlock domain (plan.landlock), then the probe that proves it holds
// (plan::Landlock::probe_path): a FIFO in /dev, which the command's uid owns and the
// rules keep free of new names, or a character device in a world-writable tmpfs
// (granted nowhere; without Landlock the missing CAP_MKNOD refuses it with EPERM).
// Landlock answers EACCES; a probe that is made means the rules are not in force.
void apply_landlock(const ChildSpec& s) {
    if (fault::hit("command.landlock")) fail(s, Stage::landlock, EOPNOTSUPP);
    const ll::RulesetAttr attr{s.landlock_fs, 0, s.landlock_scoped};
    const int rs = ll::create_ruleset(attr);
    if (rs < 0) fail(s, Stage::landlock, -rs);
    for (size_t i = 0; i < s.landlock_rules.size(); ++i) {
        const auto& rule = s.landlock_rules[i];
        const int fd = ::open(rule.path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
        // A mount the launcher skipped (its name gone from the host): nothing to grant.
        if (fd < 0 && errno == ENOENT) continue;
        if (fd < 0) fail(s, Stage::landlock_rule, errno, static_cast<int>(i));
        std::uint64_t access = rule.access;
        struct stat st {};
        if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= ll::kFileOnly;
        const int r = ll::add_path_rule(rs, fd, access);
        ::close(fd);
        if (r < 0) fail(s, Stage::landlock_rule, -r, static_cast<int>(i));
    }
    for (size_t i = 0; i < s.n_pass_fds; ++i)
        if (int r = add_descriptor_rule(rs, s.pass_fds[i], s.landlock_fs); r < 0) fail(s, Stage::landlock, -r);
    // The fault stands for a layer that is silently off: the probe must see it.
    if (!fault::hit("command.landlock-restrict")) {
        const int r = ll::restrict_self(rs);
        if (r < 0) fail(s, Stage::landlock, -r);
    }
    ::close(rs);
    if (s.landlock_probe == nullptr) return;
    const dev_t dev = s.landlock_probe_type == S_IFCHR ? makedev(1, 3) : 0;
    // The fault stands for a filter above agentjail that refuses mknod first.
    int e = EPERM;
    if (!fault::hit("command.landlock-probe")) {
        if (::mknodat(AT_FDCWD, s.landlock_probe, s.landlock_probe_type | 0600, dev) == 0) {
            ::unlinkat(AT_FDCWD, s.landlock_probe, 0);
            fail(s, Stage::landlock_probe, 0, 0);
        }
        e = errno;
    }
    if (e == EACCES) return;
    // Refused before Landlock could answer (a seccomp filter agentjail runs under that
    // refuses mknod: systemd's PrivateDevices): the rules are on, but not shown to hold.
    if (s.landlock_required) fail(s, Stage::landlock_probe, e, 1);
    report(s.err_fd, Stage::landlock_unverified, e, 0);
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

    if (s.landlock_fs != 0) apply_landlock(s);

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
    // What follows is execve: from here a death is the command's, not the setup's.
    report(s.err_fd, Stage::exec_next, 0, -1);
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
