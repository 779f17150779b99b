// SPDX-License-Identifier: Apache-2.0
// The socket gate's supervisor side: see socket_gate.hpp.
#include "launch/socket_gate.hpp"

#include "sys/syscalls.hpp"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <sstream>

namespace agentjail::launch {

namespace {

// Connects waiting on the run's loop at once; beyond, a connect that would wait is
// answered EAGAIN (the supervisor's descriptors are outside the run's limits).
constexpr size_t max_pending = 256;

void send_answer(int listener, std::uint64_t id, int error) {
    seccomp_notif_resp resp{};
    resp.id = id;
    resp.error = error;
    resp.val = 0;
    (void)::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

bool id_valid(int listener, std::uint64_t id) {
    return ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

// What the gate reads of a thread's /proc/TID/status (ids as this process sees them).
struct Status {
    long tgid = -1, fsuid = -1, fsgid = -1;
    std::vector<long> groups;
    unsigned long long cap_eff = 0;
};

Status read_status(pid_t tid) {
    Status s;
    std::ifstream status("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        std::istringstream in(line.substr(line.find(':') + 1));
        long a = -1, b = -1, c = -1, d = -1;
        if (line.rfind("Tgid:", 0) == 0) in >> s.tgid;
        if (line.rfind("Uid:", 0) == 0 && (in >> a >> b >> c >> d)) s.fsuid = d;
        if (line.rfind("Gid:", 0) == 0 && (in >> a >> b >> c >> d)) s.fsgid = d;
        if (line.rfind("Groups:", 0) == 0)
            for (long g; in >> g;) s.groups.push_back(g);
        if (line.rfind("CapEff:", 0) == 0) in >> std::hex >> s.cap_eff;
    }
    return s;
}

// A pidfd on the thread that made the call (PIDFD_THREAD), or before Linux 6.9 on its
// process: descriptors belong to the process unless it was made without CLONE_FILES.
int open_pidfd(pid_t tid) {
    int fd = sys::pidfd_open(tid, PIDFD_THREAD);
    if (fd >= 0) return fd;
    const long tgid = read_status(tid).tgid;
    return tgid > 0 ? sys::pidfd_open(static_cast<pid_t>(tgid)) : -1;
}

// Below a directory of the caller's, without links: ".." or a link out of it is
// refused (-EXDEV): the supervisor cannot resolve it the way the kernel would for the
// caller without the caller's root as its own.
int beneath(int dir, const std::string& rest) {
    if (rest.empty()) return static_cast<int>(::fcntl(dir, F_DUPFD_CLOEXEC, 0));
    int fd = sys::openat2(dir, rest.c_str(), O_PATH | O_CLOEXEC,
                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    return fd == -ELOOP ? -EXDEV : fd;
}

// /proc/PID/{fd/N,cwd,root}/REST (PID: self, thread-self or a number in the caller's
// pid namespace): a process's descriptors and directories (a way around sun_path's
// 108 bytes), the links followed by the kernel for the supervisor (which may look
// at every process inside); only when the caller's /proc is a procfs. -ENOSYS: not
// such a path; -EXDEV: one the gate refuses.
int through_proc(int root, pid_t tid, const std::string& path) {
    if (path.rfind("/proc/", 0) != 0) return -ENOSYS;
    const size_t slash = path.find('/', 6);
    if (slash == std::string::npos) return -ENOSYS;
    const std::string who = path.substr(6, slash - 6);
    std::string rest = path.substr(slash + 1);
    const bool own = who == "self" || who == "thread-self";
    if (!own && (who.empty() || who.find_first_not_of("0123456789") != std::string::npos)) return -ENOSYS;
    struct statfs fs{};
    sys::UniqueFd proc(sys::openat2(root, "/proc", O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS));
    if (!proc.valid() || ::fstatfs(proc.get(), &fs) < 0 || fs.f_type != PROC_SUPER_MAGIC) return -ENOSYS;
    // The caller is known by its pid here; another process by its pid in the caller's
    // /proc (so, in the caller's pid namespace).
    sys::UniqueFd pdir(own ? ::open(("/proc/" + std::to_string(tid)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)
                           : ::openat(proc.get(), who.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!pdir.valid()) return -ENOENT;
    auto cut = [&rest](size_t n) {
        std::string head = rest.substr(0, n);
        rest = n < rest.size() ? rest.substr(n + 1) : std::string();
        return head;
    };
    std::string link;
    if (rest.rfind("fd/", 0) == 0) {
        const size_t end = rest.find('/', 3);
        const std::string num = rest.substr(3, end == std::string::npos ? std::string::npos : end - 3);
        if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) return -EXDEV;
        link = "fd/" + num;
        cut(end == std::string::npos ? rest.size() : end);
    } else {
        const size_t end = rest.find('/');
        link = cut(end == std::string::npos ? rest.size() : end);
        if (link != "cwd" && link != "root") return -EXDEV;
    }
    // The magic link followed by the kernel to what that process holds.
    sys::UniqueFd base(::openat(pdir.get(), link.c_str(), O_PATH | O_CLOEXEC));
    // EACCES: what it holds is below the view, which only the sandbox's user
    // namespace may look at (SocketGate::in_view()).
    if (!base.valid()) return errno == ENOENT ? -ENOENT : errno == EACCES ? -EACCES : -EXDEV;
    if (link == "root" && !rest.empty())
        return sys::openat2(base.get(), rest.c_str(), O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    return beneath(base.get(), rest);
}

// A Unix socket's file, resolved as the caller would see it: an absolute path in its
// root (links followed, inside that root), a relative one below its working
// directory (beneath()), a process's /proc links (through_proc()).
// -errno on failure; -EXDEV for a path the gate refuses.
int resolve(int root, int cwd, pid_t tid, const std::string& path) {
    if (path.empty()) return -ENOENT;
    if (path[0] != '/') return beneath(cwd, path);
    if (int fd = through_proc(root, tid, path); fd != -ENOSYS) return fd;
    int fd = sys::openat2(root, path.c_str(), O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    return fd == -ELOOP && path.rfind("/proc/", 0) == 0 ? -EXDEV : fd;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Whether the caller may write the socket file, as the kernel checks it for a
// connect (the supervisor's own check is its own: as root it would pass every
// mode): its filesystem ids and groups from /proc, mode bits only (no ACLs), and
// CAP_DAC_OVERRIDE where the caller kept it. Asked only when agentjail is root.
bool caller_may_write(pid_t tid, const struct stat& st) {
    const Status s = read_status(tid);
    if (s.fsuid < 0 || s.fsgid < 0) return false;
    if (s.cap_eff & (1ull << 1 /* CAP_DAC_OVERRIDE */)) return true;
    if (static_cast<uid_t>(s.fsuid) == st.st_uid) return (st.st_mode & S_IWUSR) != 0;
    const bool group = static_cast<gid_t>(s.fsgid) == st.st_gid ||
                       std::find(s.groups.begin(), s.groups.end(), static_cast<long>(st.st_gid)) != s.groups.end();
    return (st.st_mode & (group ? S_IWGRP : S_IWOTH)) != 0;
}

// Whether the caller owns the file (its filesystem uid as this process sees it): what
// the kernel asks before O_NOATIME, which the supervisor's own rights must not lend.
// CAP_FOWNER of the caller's is not counted: refused where the kernel might allow,
// never the other way.
bool caller_owns(pid_t tid, int fd) {
    struct stat st{};
    const Status s = read_status(tid);
    return ::fstat(fd, &st) == 0 && s.fsuid >= 0 && static_cast<uid_t>(s.fsuid) == st.st_uid;
}

// What the gate takes from the caller, once: a descriptor of its own (pidfd_getfd)
// or bytes of its memory, each trusted only while the notification, still alive
// afterwards, proves the pid named the caller throughout. gone: the caller is gone,
// nobody to answer; error: 0, or the -errno to answer.
struct Taken {
    sys::UniqueFd fd;
    int error = 0;
    bool gone = false;
};

Taken take_fd(int listener, const seccomp_notif& req, int fdnum) {
    Taken t;
    sys::UniqueFd pidfd(open_pidfd(static_cast<pid_t>(req.pid)));
    if (!id_valid(listener, req.id)) {
        t.gone = true;
    } else if (!pidfd.valid()) {
        t.error = -EPERM;
    } else if (const int got = sys::pidfd_getfd(pidfd.get(), fdnum); got < 0) {
        t.error = got;
    } else {
        t.fd.reset(got);
    }
    return t;
}

Taken read_caller(int listener, const seccomp_notif& req, std::uint64_t addr, void* buf, size_t len) {
    Taken t;
    iovec local{buf, len};
    iovec remote{reinterpret_cast<void*>(addr), len};
    const bool read = ::process_vm_readv(static_cast<pid_t>(req.pid), &local, 1, &remote, 1, 0) ==
                      static_cast<ssize_t>(len);
    if (!id_valid(listener, req.id))
        t.gone = true;
    else if (!read)
        t.error = -EFAULT;
    return t;
}

}  // namespace

SocketGate::Outcome SocketGate::make(int listener, const seccomp_notif& req) {
    if (req.data.nr == SYS_connect) return connect(listener, req);
    set_mode(listener, req);
    return {};
}

// fcntl(fd, F_SETFL, flags) or ioctl(fd, FIONBIO, &on), made on the caller's own file
// description (pidfd_getfd), with the caller's errors: EBADF for a number it does not
// have (or an O_PATH descriptor), EFAULT for an address it cannot read.
void SocketGate::set_mode(int listener, const seccomp_notif& req) {
    const int fdnum = static_cast<int>(req.data.args[0] & 0xffffffffu);
    const auto cmd = static_cast<unsigned>(req.data.args[1] & 0xffffffffu);
    const bool setfl = req.data.nr == SYS_fcntl && cmd == F_SETFL;
    if (!setfl && !(req.data.nr == SYS_ioctl && cmd == FIONBIO)) return send_answer(listener, req.id, -EPERM);
    Taken taken = take_fd(listener, req, fdnum);
    if (taken.gone) return;
    if (taken.error != 0) return send_answer(listener, req.id, taken.error);
    const sys::UniqueFd file = std::move(taken.fd);
    if (setfl) {
        const auto want = static_cast<unsigned>(req.data.args[2] & 0xffffffffu);
        const int now = ::fcntl(file.get(), F_GETFL);
        if (now < 0) return send_answer(listener, req.id, -errno);
        if ((want & O_NOATIME) != 0 && (now & O_NOATIME) == 0 && !caller_owns(static_cast<pid_t>(req.pid), file.get()))
            return send_answer(listener, req.id, -EPERM);
        return send_answer(listener, req.id, ::fcntl(file.get(), F_SETFL, want) < 0 ? -errno : 0);
    }
    int on = 0;
    const Taken read = read_caller(listener, req, req.data.args[2], &on, sizeof on);
    if (read.gone) return;
    if (read.error != 0) return send_answer(listener, req.id, read.error);
    send_answer(listener, req.id, ::ioctl(file.get(), FIONBIO, &on) < 0 ? -errno : 0);
}

SocketGate::Outcome SocketGate::connect(int listener, const seccomp_notif& req) {
    Outcome out;
    auto answer = [&](int error) {
        send_answer(listener, req.id, error);
        return out;
    };
    auto refuse = [&](std::string path, std::string why) {
        out.refused = true;
        out.path = std::move(path);
        out.why = std::move(why);
        return answer(-EACCES);
    };
    // The registers, as the kernel captured them: connect(int, addr, socklen_t).
    const int fdnum = static_cast<int>(req.data.args[0] & 0xffffffffu);
    const std::uint64_t addr = req.data.args[1];
    const int len = static_cast<int>(req.data.args[2] & 0xffffffffu);

    // The caller, its socket and its address, each taken once. The notification
    // still alive afterwards proves the pid named the caller throughout.
    const std::string proc = "/proc/" + std::to_string(req.pid);
    // The kernel's order of errors: the descriptor, the address, the socket.
    Taken taken = take_fd(listener, req, fdnum);
    if (taken.gone) return out;
    if (taken.error != 0) return answer(taken.error);
    sys::UniqueFd sock = std::move(taken.fd);
    if (len < 0 || static_cast<size_t>(len) > sizeof(sockaddr_storage)) return answer(-EINVAL);
    sockaddr_storage sa{};
    if (len > 0) {
        const Taken read = read_caller(listener, req, addr, &sa, static_cast<size_t>(len));
        if (read.gone) return out;
        if (read.error != 0) return answer(read.error);
    }
    int domain = 0;
    socklen_t dl = sizeof domain;
    if (::getsockopt(sock.get(), SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0) return answer(-ENOTSOCK);

    sys::UniqueFd target;
    socklen_t use_len = static_cast<socklen_t>(len);
    constexpr size_t path_at = offsetof(sockaddr_un, sun_path);
    if (domain == AF_UNIX && static_cast<size_t>(len) > sizeof(sockaddr_un)) return answer(-EINVAL);
    if (domain == AF_UNIX && sa.ss_family == AF_UNIX && static_cast<size_t>(len) > path_at) {
        auto* un = reinterpret_cast<sockaddr_un*>(&sa);
        const size_t room = std::min(static_cast<size_t>(len) - path_at, sizeof un->sun_path);
        if (un->sun_path[0] == '\0') {
            // An abstract name lives in the socket's network namespace: the
            // sandbox's own, unless it shares the host's.
            if (!c_.diag.valid())
                return refuse("@" + std::string(un->sun_path + 1, room - 1),
                              "an abstract Unix socket with the host's network (--net host) is the host's");
        } else {
            const std::string path(un->sun_path, strnlen(un->sun_path, room));
            // The caller's root and working directory, while it is still the caller.
            sys::UniqueFd root(::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
            sys::UniqueFd cwd(::open((proc + "/cwd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
            if (!id_valid(listener, req.id)) return out;
            if (!root.valid() || !cwd.valid()) return answer(-EPERM);
            UnixAnswer a = unix_target(listener, req, resolve(root.get(), cwd.get(), static_cast<pid_t>(req.pid), path),
                                       target, ::geteuid() == 0);
            // Below the workspace's view (a FUSE mount of the sandbox's user namespace,
            // which the kernel lets no process outside it into, to look up or stat):
            // the same, from a helper inside that namespace.
            // (Not when the file was reached and the caller's own right refused it.)
            if (a.error == -EACCES && !target.valid() && c_.userns.valid())
                a = in_view(listener, req, sock.get(), root.get(), cwd.get(), path);
            if (a.gone) return out;
            if (a.refused) return refuse(path, a.why);
            if (a.error != 0) return answer(a.error);
            if (!target.valid()) {
                // The helper connected it (a listener bound inside, to the view's file),
                // or it is a socket the policy names, connected here through the host's.
                if (a.which < 0) return answer(0);
                const int fd = host_socket(a.which, a.ino);
                if (fd < 0) return answer(fd);
                target.reset(fd);
            }
            // The file resolved above, and nothing the caller can change since.
            sockaddr_un via{};
            via.sun_family = AF_UNIX;
            std::snprintf(via.sun_path, sizeof via.sun_path, "/proc/self/fd/%d", target.get());
            std::memcpy(&sa, &via, sizeof via);
            use_len = static_cast<socklen_t>(path_at + std::strlen(via.sun_path) + 1);
        }
    }

    // Made here, never waited for here: a connect that must wait (TCP) does so on
    // the run's loop while the caller stays in its call.
    const int flags = ::fcntl(sock.get(), F_GETFL);
    const bool blocking = flags >= 0 && (flags & O_NONBLOCK) == 0;
    if (blocking) (void)::fcntl(sock.get(), F_SETFL, flags | O_NONBLOCK);
    int r = ::connect(sock.get(), reinterpret_cast<const sockaddr*>(&sa), use_len);
    const int e = r < 0 ? errno : 0;
    if (blocking) (void)::fcntl(sock.get(), F_SETFL, flags);
    if (r == 0) return answer(0);
    if (blocking && (e == EINPROGRESS || e == EALREADY)) {
        if (pending_.size() >= max_pending) return answer(-EAGAIN);
        pending_.push_back(Pending{req.id, std::move(sock)});
        return out;
    }
    return answer(-e);
}

// The Unix socket file the caller named (fd: resolve()'s result for it), checked:
// held in target when it may be connected to.
SocketGate::UnixAnswer SocketGate::unix_target(int listener, const seccomp_notif& req, int fd, sys::UniqueFd& target,
                                               bool privileged) {
    UnixAnswer a;
    if (fd == -EXDEV) {
        a.refused = true;
        a.why = "a relative path that leaves its directory or passes a link, or a /proc link other than the "
                "caller's own (give the socket's absolute path)";
        return a;
    }
    if (fd < 0) {
        a.error = fd;
        return a;
    }
    target.reset(fd);
    struct stat st{};
    if (::fstat(target.get(), &st) < 0) {
        a.error = -errno;
        target.reset();
        return a;
    }
    if (!S_ISSOCK(st.st_mode)) {
        a.error = -ECONNREFUSED;  // what the kernel says
        return a;
    }
    if (!allowed(st, a.why, &a.which)) {
        a.refused = true;
        return a;
    }
    a.ino = st.st_ino;
    if (privileged && !caller_may_write(static_cast<pid_t>(req.pid), st)) {
        a.error = -EACCES;
        return a;
    }
    // /proc/PID/... above was looked up by number: the caller is still the caller.
    a.gone = !id_valid(listener, req.id);
    return a;
}

// A connect to a path below the view, made by a copy of this process that has
// joined the sandbox's user namespace (and nothing else of it): the same checks as
// unix_target(), then the connect, through the caller's socket. Only its answer
// comes back. The copy is single-threaded, cannot be traced (not dumpable, and not
// in the sandbox's process namespace), and is waited for with a time limit.
SocketGate::UnixAnswer SocketGate::in_view(int listener, const seccomp_notif& req, int sock, int root, int cwd,
                                           const std::string& path) {
    struct Wire {
        std::int32_t error;
        std::int32_t refused;
        std::int32_t gone;
        std::int32_t which;
        std::uint64_t ino;
        char why[480];
    };
    UnixAnswer a;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) {
        a.error = -EAGAIN;
        return a;
    }
    sys::UniqueFd rd(p[0]), wr(p[1]);
    const pid_t pid = ::fork();
    if (pid < 0) {
        a.error = -EAGAIN;
        return a;
    }
    if (pid == 0) {
        rd.reset();
        Wire w{};
        (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        if (::setns(c_.userns.get(), CLONE_NEWUSER) != 0) {
            w.error = -EACCES;
        } else {
            sys::UniqueFd target;
            const int fd = resolve(root, cwd, static_cast<pid_t>(req.pid), path);
            // Every capability in the sandbox's user namespace is this copy's now: the
            // caller's own right to the socket file is what counts.
            const UnixAnswer u = unix_target(listener, req, fd, target, true);
            w.error = u.error;
            w.refused = u.refused;
            w.gone = u.gone;
            w.which = u.which;
            w.ino = u.ino;
            std::snprintf(w.why, sizeof w.why, "%s", u.why.c_str());
            // A socket the policy names is the host's: its listener is bound to the
            // host's file, not the view's, so this process connects it (host_socket()).
            // One bound inside is bound to the view's file, connected from here.
            if (u.error == 0 && !u.refused && !u.gone && u.which < 0) {
                sockaddr_un via{};
                via.sun_family = AF_UNIX;
                std::snprintf(via.sun_path, sizeof via.sun_path, "/proc/self/fd/%d", target.get());
                const int flags = ::fcntl(sock, F_GETFL);
                const bool blocking = flags >= 0 && (flags & O_NONBLOCK) == 0;
                if (blocking) (void)::fcntl(sock, F_SETFL, flags | O_NONBLOCK);
                const socklen_t len =
                    static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + std::strlen(via.sun_path) + 1);
                w.error = ::connect(sock, reinterpret_cast<const sockaddr*>(&via), len) == 0 ? 0 : -errno;
                if (blocking) (void)::fcntl(sock, F_SETFL, flags);
            }
        }
        (void)::write(wr.get(), &w, sizeof w);
        ::_exit(0);
    }
    wr.reset();
    Wire w{};
    w.error = -EAGAIN;
    pollfd pf{rd.get(), POLLIN, 0};
    // A Unix connect does not wait (a full backlog is EAGAIN); the time limit is for
    // a helper stuck on the way (a hung file system below the view).
    if (::poll(&pf, 1, 5000) == 1) {
        if (::read(rd.get(), &w, sizeof w) != static_cast<ssize_t>(sizeof w)) w.error = -EAGAIN;
    }
    (void)::kill(pid, SIGKILL);
    int st = 0;
    (void)::waitpid(pid, &st, 0);
    w.why[sizeof w.why - 1] = '\0';
    a.error = w.error;
    a.refused = w.refused != 0;
    a.gone = w.gone != 0;
    a.which = w.which;
    a.ino = w.ino;
    a.why = w.why;
    return a;
}

// An allowed socket below the view, on the host: the policy's path taken below the
// workspace's host directory, without links, and only if it is the file the caller
// reached through the view (the view shows the host's inode numbers).
int SocketGate::host_socket(int which, std::uint64_t ino) {
    if (which < 0 || static_cast<size_t>(which) >= c_.allowed.size() || !c_.view_host.valid()) return -EACCES;
    const std::string& inside = c_.allowed[static_cast<size_t>(which)];
    const std::string& top = c_.view_inside;
    if (inside.size() <= top.size() + 1 || inside.compare(0, top.size(), top) != 0 || inside[top.size()] != '/')
        return -EACCES;
    const int fd = sys::openat2(c_.view_host.get(), inside.c_str() + top.size() + 1, O_PATH | O_CLOEXEC,
                                RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd < 0) return fd;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != ino) {
        ::close(fd);
        return -ECONNREFUSED;
    }
    return fd;
}

bool SocketGate::allowed(const struct stat& target, std::string& why, int* which) {
    std::string linked;
    if (which != nullptr) *which = -1;
    for (const auto& a : c_.allowed) {
        if (!c_.root.valid()) break;
        sys::UniqueFd fd(sys::openat2(c_.root.get(), a.c_str(), O_PATH | O_CLOEXEC,
                                      RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
        if (!fd.valid()) {
            if (errno == ELOOP) linked = a;
            continue;
        }
        struct stat st{};
        if (::fstat(fd.get(), &st) == 0 && same_file(st, target)) {
            if (which != nullptr) *which = static_cast<int>(&a - c_.allowed.data());
            return true;
        }
    }
    if (c_.diag.valid() && listening_inside(target)) return true;
    why = c_.diag.valid() ? "no process inside listens on it, and the policy does not name it ([filesystem] sockets, --allow-socket)"
                          : "with the host's network (--net host) only the sockets the policy names are reachable "
                            "([filesystem] sockets, --allow-socket)";
    if (!linked.empty()) why += "; the allowed path " + linked + " passes a link inside (name the socket's real path)";
    return false;
}

// Whether a listening Unix socket of the sandbox's network namespace is bound to
// `target`: the kernel's own list (sock_diag, UDIAG_SHOW_VFS), read whole each time.
bool SocketGate::listening_inside(const struct stat& target) const {
    struct {
        nlmsghdr nlh;
        unix_diag_req req;
    } msg{};
    msg.nlh.nlmsg_len = sizeof msg;
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.req.sdiag_family = AF_UNIX;
    msg.req.udiag_states = 1u << TCP_LISTEN;
    msg.req.udiag_show = UDIAG_SHOW_VFS;
    if (::send(c_.diag.get(), &msg, sizeof msg, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof msg)) return false;
    bool found = false;
    alignas(nlmsghdr) char buf[16384];
    for (;;) {
        ssize_t n = ::recv(c_.diag.get(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return found;
        // Walked by hand: the kernel's NLMSG_ and RTA_ macros cast the C way.
        const auto size = static_cast<size_t>(n);
        for (size_t off = 0; off + sizeof(nlmsghdr) <= size;) {
            nlmsghdr h{};
            std::memcpy(&h, buf + off, sizeof h);
            if (h.nlmsg_len < sizeof h || off + h.nlmsg_len > size) break;
            if (h.nlmsg_type == NLMSG_DONE || h.nlmsg_type == NLMSG_ERROR) return found;
            const size_t body = off + NLMSG_HDRLEN;
            const size_t end = off + h.nlmsg_len;
            off += NLMSG_ALIGN(h.nlmsg_len);
            if (h.nlmsg_type != SOCK_DIAG_BY_FAMILY || body + sizeof(unix_diag_msg) > end) continue;
            for (size_t at = body + NLMSG_ALIGN(sizeof(unix_diag_msg)); at + sizeof(rtattr) <= end;) {
                rtattr a{};
                std::memcpy(&a, buf + at, sizeof a);
                if (a.rta_len < sizeof a || at + a.rta_len > end) break;
                if (a.rta_type == UNIX_DIAG_VFS && a.rta_len >= RTA_LENGTH(sizeof(unix_diag_vfs))) {
                    unix_diag_vfs v{};
                    std::memcpy(&v, buf + at + RTA_LENGTH(0), sizeof v);
                    // The kernel's own dev_t (major << 20 | minor), not stat's encoding.
                    if (v.udiag_vfs_ino == target.st_ino && (v.udiag_vfs_dev >> 20) == major(target.st_dev) &&
                        (v.udiag_vfs_dev & 0xfffff) == minor(target.st_dev))
                        found = true;
                }
                at += RTA_ALIGN(a.rta_len);
            }
        }
    }
}

void SocketGate::add_wait_fds(std::vector<pollfd>& fds) const {
    for (const auto& p : pending_) fds.push_back(pollfd{p.sock.get(), POLLOUT, 0});
}

void SocketGate::finish(int listener, const pollfd* ready, size_t n) {
    std::vector<Pending> left;
    for (size_t i = 0; i < pending_.size(); ++i) {
        Pending& p = pending_[i];
        const short rev = i < n ? ready[i].revents : 0;
        if (rev & (POLLOUT | POLLERR | POLLHUP)) {
            int err = 0;
            socklen_t el = sizeof err;
            if (::getsockopt(p.sock.get(), SOL_SOCKET, SO_ERROR, &err, &el) < 0) err = errno;
            send_answer(listener, p.id, -err);
            continue;
        }
        // A caller interrupted by a signal, or gone: its call is over (a restarted
        // connect comes as a new notification and finds EALREADY).
        if (!id_valid(listener, p.id)) continue;
        left.push_back(std::move(p));
    }
    pending_ = std::move(left);
}

}  // namespace agentjail::launch
