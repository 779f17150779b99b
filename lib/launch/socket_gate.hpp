// SPDX-License-Identifier: Apache-2.0
// The socket gate's supervisor side (docs/seccomp.md, "The socket gate"): every
// connect() inside is notified, and the supervisor makes it itself on the sandbox's
// socket (pidfd_getfd), from the address it copied once, so nothing the sandbox
// changes afterwards (the address in memory, the descriptor behind the number:
// THREATS.md SYS-07) reaches the kernel. A Unix socket's path is resolved in the
// caller's own root and connected through the descriptor of what was resolved; it
// is refused with EACCES unless a process inside listens on it (the sandbox's own
// network namespace, asked through sock_diag) or the policy names it
// ([filesystem] sockets, --allow-socket). A connect that takes time (TCP) waits on
// the run's loop, not in the supervisor: the caller's notification is answered
// when the socket is writable.
#pragma once

#include "sys/fd.hpp"

#include <sys/stat.h>

#include <linux/seccomp.h>
#include <poll.h>

#include <cstdint>
#include <string>
#include <vector>

namespace agentjail::launch {

class SocketGate {
public:
    struct Config {
        // Paths inside the sandbox whose sockets may be connected to ([filesystem]
        // sockets): resolved in the caller's root at each connect, without links.
        std::vector<std::string> allowed;
        // A NETLINK_SOCK_DIAG socket made in the sandbox's network namespace; invalid
        // when the sandbox has none of its own (--net host): then only `allowed`.
        sys::UniqueFd diag;
        // The sandbox's root as agentjail built it (from the child): `allowed` is
        // resolved in it, never in the caller's root (a nested sandbox could mount
        // another socket over an allowed path in a namespace of its own).
        sys::UniqueFd root;
        // The sandbox's user namespace, when the workspace is served through the view
        // (a FUSE mount the kernel lets no process outside that namespace into): a
        // path below it is resolved and connected from a helper that joined it.
        sys::UniqueFd userns;
        // The view's path inside and its host directory: an allowed socket below it
        // is connected through the host's file (host_socket()).
        std::string view_inside;
        sys::UniqueFd view_host;
    };

    // What the supervisor records of one connect (answered by the gate, now or,
    // when it must wait, by a later finish()).
    struct Outcome {
        bool refused = false;  // the gate refused it with EACCES
        std::string path;      // the Unix path asked for, when refused
        std::string why;       // why it was refused
    };

    explicit SocketGate(Config c) : c_(std::move(c)) {}

    // One notified call of the gate's, made here and answered on `listener`: a
    // connect (unless it must wait), or fcntl(F_SETFL) or ioctl(FIONBIO), which are
    // made here too, on the caller's file description, so that they fall between the
    // supervisor's own calls and never between its setting a socket non-blocking and
    // its connect (let through with CONTINUE, one would run whenever its thread is
    // next scheduled: SOCK21).
    Outcome make(int listener, const seccomp_notif& req);

    // The descriptors of pending connects, to wait for (POLLOUT), in order.
    void add_wait_fds(std::vector<pollfd>& fds) const;
    bool has_pending() const { return !pending_.empty(); }
    // After a wait: `ready` are the revents of the descriptors add_wait_fds() added,
    // in the same order. Answers those that completed and drops those whose caller is
    // gone.
    void finish(int listener, const pollfd* ready, size_t n);

private:
    Outcome connect(int listener, const seccomp_notif& req);
    void set_mode(int listener, const seccomp_notif& req);
    struct Pending {
        std::uint64_t id;
        sys::UniqueFd sock;
    };
    struct UnixAnswer {
        int error = 0;         // -errno to answer, 0 when connectable
        bool refused = false;  // refused by the gate, for the record (why)
        bool gone = false;     // the caller is gone: nobody to answer
        int which = -1;        // the allowed path it is (Config::allowed), -1: listened to inside
        std::uint64_t ino = 0;
        std::string why;
    };
    // privileged: this process could connect where the caller may not (root, or the
    // helper inside the sandbox's user namespace): the caller's right is checked.
    UnixAnswer unix_target(int listener, const seccomp_notif& req, int fd, sys::UniqueFd& target, bool privileged);
    UnixAnswer in_view(int listener, const seccomp_notif& req, int sock, int root, int cwd, const std::string& path);
    bool allowed(const struct stat& target, std::string& why, int* which = nullptr);
    int host_socket(int which, std::uint64_t ino);
    bool listening_inside(const struct stat& target) const;

    Config c_;
    std::vector<Pending> pending_;
};

}  // namespace agentjail::launch
