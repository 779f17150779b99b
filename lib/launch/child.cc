// SPDX-License-Identifier: Apache-2.0
// The child after clone: waits for its id maps, builds the root, then becomes the
// pid namespace's init, which starts the command and reports its status.
// Between clone and execve: raw system calls only, no allocation, no locks.
#include "launch/child.hpp"

#include "launch/command.hpp"
#include "sys/close_fds.hpp"
#include "sys/syscalls.hpp"
#include "util/fault.hpp"

#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <linux/netlink.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agentjail::launch {

void report(int fd, Stage stage, int err, int index) {
    Report r{static_cast<std::int32_t>(stage), err, index};
    ssize_t n;
    do {
        n = ::write(fd, &r, sizeof r);
    } while (n < 0 && errno == EINTR);
}

int send_fd(int sock, Stage what, int fd) {
    Report r{static_cast<std::int32_t>(what), 0, -1};
    iovec iov{&r, sizeof r};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    std::memset(control, 0, sizeof control);
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t n;
    do {
        n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : 0;
}

namespace {

void noop_handler(int) {}

// The proxy's socket is created here, in the sandbox's network namespace, so it
// stays bound to it; the supervisor accepts on it from the host's network.
int open_proxy_socket(std::uint16_t port) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(s, 256) < 0) {
        int e = errno;
        ::close(s);
        return -e;
    }
    return s;
}

// A model gateway's listener, at the gateway's own loopback address and port inside
// (so a client given ANTHROPIC_BASE_URL connects there as it would on the host).
int open_gateway_socket(const sockaddr_storage& a) {
    int s = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t len = a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (a.ss_family == AF_INET6) ::setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (::bind(s, reinterpret_cast<const sockaddr*>(&a), len) < 0 || ::listen(s, 256) < 0) {
        int e = errno;
        ::close(s);
        return -e;
    }
    return s;
}

int loopback_up() {
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    ifreq ifr;
    std::memset(&ifr, 0, sizeof ifr);
    std::memcpy(ifr.ifr_name, "lo", 3);
    int r = 0;
    if (::ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
        r = -errno;
    } else {
        ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
        if (::ioctl(s, SIOCSIFFLAGS, &ifr) < 0) r = -errno;
    }
    ::close(s);
    return r;
}

[[noreturn]] void fail(const ChildSpec& s, Stage stage, int err, int index = -1) {
    report(s.err_fd, stage, err, index);
    ::_exit(125);
}

// The sandbox's pty, from its own devpts (so `tty` inside names a path that exists
// there, and TIOCSTI or TIOCLINUX land in this pty, never in the user's terminal).
// TIOCGPTPEER opens the slave from the master without a path lookup. The init, as
// the session leader, takes the slave as its controlling terminal; the command's
// job is then a process group of this session whose parent (the init) is in it too,
// so ^Z stops it as in any shell (an orphaned group would ignore the stop).
void open_pty(ChildSpec& s) {
    int m = ::open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0) fail(s, Stage::pty_open, errno);
    int unlock = 0;
    if (::ioctl(m, TIOCSPTLCK, &unlock) < 0) fail(s, Stage::pty_open, errno);
    int sl = ::ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (sl < 0) fail(s, Stage::pty_open, errno);
    if (s.set_termios && ::ioctl(sl, TCSETS, &s.pty_termios) < 0) fail(s, Stage::pty_setup, errno);
    if (s.set_winsize && ::ioctl(sl, TIOCSWINSZ, &s.pty_winsize) < 0) fail(s, Stage::pty_setup, errno);
    if (::ioctl(sl, TIOCSCTTY, 0) < 0) fail(s, Stage::pty_setup, errno);
    int r = send_fd(s.err_fd, Stage::pty_fd, m);
    if (r < 0) fail(s, Stage::pty_fd, -r);
    ::close(m);  // the relay holds the master now
    s.pty_slave = sl;
}

// Signals a terminal sends to a whole job go to the command's process group; the
// others to the command alone, as before.
bool job_signal(int sig) {
    return sig == SIGINT || sig == SIGQUIT || sig == SIGTSTP || sig == SIGCONT || sig == SIGHUP ||
           sig == SIGWINCH || sig == SIGTTIN || sig == SIGTTOU;
}

void send_event(const ChildSpec& s, std::int32_t kind, std::int32_t sig) {
    if (s.events_fd < 0) return;
    JobEvent e{kind, sig};
    // Non-blocking: a launcher that never reads (a library host) only loses events;
    // the init never stalls on them.
    (void)!::write(s.events_fd, &e, sizeof e);
}

// Published ports: one unconnected TCP socket of the sandbox's network namespace
// for each request byte (6: IPv6, else IPv4), passed back in order; agentjail
// connects it to the published port. Drains every request: the signal that woke
// us may stand for several.
void serve_publish(const ChildSpec& s) {
    for (;;) {
        char req[16];
        ssize_t n = ::recv(s.publish_fd, req, sizeof req, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        int fd = ::socket(req[0] == 6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            report(s.publish_fd, Stage::publish_fd, errno, -1);
            continue;
        }
        (void)send_fd(s.publish_fd, Stage::publish_fd, fd);
        ::close(fd);
    }
}

// The launcher's scheduling state from its /proc/PID/stat ("T" stopped, "t" traced):
// true when it is stopped. The state follows the last ')' (the name may hold one).
bool launcher_stopped(int stat_fd) {
    char buf[512];
    ssize_t n = ::pread(stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    const char* close = nullptr;
    for (ssize_t i = 0; i < n; ++i)
        if (buf[i] == ')') close = buf + i;
    if (close == nullptr || close + 2 >= buf + n) return false;
    return close[2] == 'T' || close[2] == 't';
}

void note_freeze(const ChildSpec& s, FreezeNote note) {
    if (s.freeze_fd < 0) return;
    char c = note;
    (void)!::write(s.freeze_fd, &c, 1);
}

// How often the init looks at the launcher's state: a SIGSTOP of agentjail (which it
// cannot catch) stops the sandbox within this.
constexpr int launcher_watch_ms = 50;

// pid 1 of the sandbox: forwards signals sent from outside to the command, reaps
// orphans, and exits once the command has; the kernel then kills whatever is left
// in the pid namespace, so nothing survives the command (PROC-05). With
// die_with_parent it also exits when the launching process is gone (its pidfd
// turns readable), which takes the whole sandbox with it (PROC-06). While the
// launcher is stopped, so is every other process of the sandbox (ChildSpec::freeze_sig).
[[noreturn]] void init_loop(const ChildSpec& s, pid_t command, int sigfd) {
    bool frozen = false;
    int stat_fd = s.launcher_stat_fd;
    for (;;) {
        pollfd fds[2] = {{sigfd, POLLIN, 0}, {s.launcher_pidfd, POLLIN, 0}};
        const bool watch = stat_fd >= 0 && !frozen;
        int pr = ::poll(fds, s.launcher_pidfd >= 0 ? 2 : 1, watch ? launcher_watch_ms : -1);
        if (pr < 0) continue;
        if (fds[1].revents != 0) ::_exit(125);  // the launcher died
        if (watch && launcher_stopped(stat_fd)) {
            // Every process but this one, whatever group or session it made; a fork
            // under way gets the signal too (the kernel delays it to the new child).
            ::kill(-1, SIGSTOP);
            frozen = true;
            note_freeze(s, freeze_saw_stop);
        }
        if ((fds[0].revents & POLLIN) == 0) continue;
        signalfd_siginfo si;
        ssize_t rn = ::read(sigfd, &si, sizeof si);
        if (rn != static_cast<ssize_t>(sizeof si)) continue;
        const int sig = static_cast<int>(si.ssi_signo);
        if (sig == SIGCHLD) {
            for (;;) {
                int status = 0;
                pid_t p = ::waitpid(-1, &status, WNOHANG | __WALL | WUNTRACED | WCONTINUED);
                if (p <= 0) break;
                if (p == command && WIFSTOPPED(status)) {
                    send_event(s, JobEvent::stopped, WSTOPSIG(status));
                    continue;
                }
                if (p == command && WIFCONTINUED(status)) {
                    send_event(s, JobEvent::continued, 0);
                    continue;
                }
                if (WIFSTOPPED(status) || WIFCONTINUED(status)) continue;
                if (p == command) {
                    ssize_t n;
                    do {
                        n = ::write(s.status_fd, &status, sizeof status);
                    } while (n < 0 && errno == EINTR);
                    ::_exit(0);
                }
            }
            continue;
        }
        if (s.publish_fd >= 0 && (sig == s.publish_sig || sig == SIGIO)) {
            serve_publish(s);
            continue;
        }
        // Signals from the kernel (the pty's hangup as the session leader, SIGPIPE...)
        // are the init's own, not the launcher's to pass on.
        if (si.ssi_code == SI_KERNEL) continue;
        // The supervisor's requests come from outside our pid namespace (ssi_pid
        // reads 0); nothing inside can send them.
        const bool from_outside = si.ssi_pid == 0;
        // The wall clock ran out: SIGTERM to every process, daemons included.
        if (sig == s.broadcast_sig && from_outside) {
            ::kill(-1, SIGTERM);
            continue;
        }
        // Signals are read lowest number first: whatever the launcher sent before this
        // one (a stop for the command's job) has been passed on.
        if (sig == s.sync_sig && from_outside) {
            note_freeze(s, freeze_asked);
            continue;
        }
        if (sig == s.freeze_sig && from_outside) {
            if (!frozen) ::kill(-1, SIGSTOP);
            frozen = true;
            note_freeze(s, freeze_asked);
            continue;
        }
        if (sig == s.thaw_sig && from_outside) {
            if (frozen) ::kill(-1, SIGCONT);
            frozen = false;
            continue;
        }
        // Frozen, only the thaw continues the sandbox: a SIGCONT passed on now would
        // let the command run before the launcher re-checked what the host changed.
        if (frozen && sig == SIGCONT) continue;
        if (job_signal(sig) && ::kill(-command, sig) == 0) continue;
        ::kill(command, sig);
    }
}

// Before the init forks the command: locked securebits, an empty bounding, ambient,
// effective, permitted and inheritable set, no_new_privs. The command inherits all
// of it; the init keeps nothing it could lend.
void drop_privileges(const ChildSpec& s) {
    // Capabilities (CAP-01): lock the securebits so uid 0 gains nothing at execve,
    // empty the bounding set so nothing can come back, clear ambient, then empty
    // effective/permitted/inheritable with the raw capset (libcap's cap_set_proc
    // allocates and locks, which has no place after clone).
    const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                               SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                               SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0) fail(s, Stage::securebits, errno);
    for (int cap = 0; cap <= s.cap_last; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) fail(s, Stage::drop_bounding, errno);
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) fail(s, Stage::clear_ambient, errno);
    if (int r = sys::capset_empty(); r < 0) fail(s, Stage::drop_caps, -r);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) fail(s, Stage::no_new_privs, errno);
}

bool launcher_gone(const ChildSpec& s) {
    if (s.launcher_pidfd < 0) return false;
    pollfd pf{s.launcher_pidfd, POLLIN, 0};
    return ::poll(&pf, 1, 0) > 0;
}

}  // namespace

void child_main(ChildSpec& s) {
    // Every signal is blocked (the launcher's mask at clone) and, with
    // CLONE_CLEAR_SIGHAND, every handler is the default; on older kernels reset them
    // here, before anything could unblock one.
    if (!s.handlers_cleared) {
        struct sigaction dfl;
        std::memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; ++sig)
            if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
    }
    // A launcher that dies before releasing us is seen as EOF on the go pipe
    // (PROC-06); afterwards the init watches its pidfd.
    char go = 0;
    ssize_t n;
    do {
        n = ::read(s.go_fd, &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(125);
    if (!s.wait_before_fork) ::close(s.go_fd);
    // The relay's ends are the launcher's: holding a writer of the command's stdin
    // here would keep it from ever reading EOF.
    for (size_t i = 0; i < s.n_close_fds; ++i) ::close(s.close_fds[i]);

    // A session of the sandbox's own: no signal sent inside to a process group
    // (kill(0, ...), kill(-pgid, ...)) reaches the caller's shell or agentjail, and
    // nothing inside can take the caller's terminal or stop its job.
    if (::setsid() < 0) fail(s, Stage::new_session, errno);

    // A root launcher's run as another identity: no supplementary group, then the
    // gid and the uid, keeping every capability of this namespace (NO_SETUID_FIXUP)
    // for the root's build; drop_privileges below locks and empties them as always.
    // From here whatever the sandbox creates belongs to that uid, as it would to a
    // user who ran agentjail. Before PR_SET_DUMPABLE: a uid change resets it.
    if (s.set_ids) {
        if (int r = sys::setgroups_none(); r < 0) fail(s, Stage::set_ids, -r);
        if (int r = sys::setresgid(s.gid); r < 0) fail(s, Stage::set_ids, -r);
        if (::prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0) fail(s, Stage::set_ids, errno);
        if (int r = sys::setresuid(s.uid); r < 0) fail(s, Stage::set_ids, -r);
    }

    // The init is a copy of the launcher's memory (its environment, its secrets):
    // non-dumpable, so the command can neither ptrace it nor read /proc/1/mem or
    // /proc/1/environ (PROC-03). Only now: the parent needed /proc/PID to write maps.
    ::prctl(PR_SET_DUMPABLE, 0);

    // A second lock on nested user namespaces besides the filter (CAP-04): a limit of
    // zero in our own namespace, written while we still hold its capabilities and
    // while /proc/sys is still the host's writable view of our namespace's values.
    if (s.limit_userns) {
        int fd = ::open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || ::write(fd, "0", 1) != 1) fail(s, Stage::userns_limit, errno);
        ::close(fd);
    }

    const mode_t caller_umask = ::umask(022);
    if (fault::hit("child.before-root")) fail(s, Stage::mount_fs, EIO);
    Failure f;
    if (build_root(s.root, &f) < 0) fail(s, f.stage, f.err, f.index);
    if (s.set_hostname && ::sethostname(s.hostname, s.hostname_len) < 0) fail(s, Stage::hostname, errno);
    if (s.loopback) {
        int r = loopback_up();
        if (r < 0) fail(s, Stage::loopback, -r);
    }
    if (s.root_fd) {
        int rs = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rs < 0) fail(s, Stage::root_fd, errno);
        int r = send_fd(s.err_fd, Stage::root_fd, rs);
        if (r < 0) fail(s, Stage::root_fd, -r);
        ::close(rs);
    }
    if (s.diag) {
        int ds = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (ds < 0) fail(s, Stage::diag_socket, errno);
        int r = send_fd(s.err_fd, Stage::diag_fd, ds);
        if (r < 0) fail(s, Stage::diag_fd, -r);
        ::close(ds);
    }
    if (s.proxy_port != 0) {
        int ps = open_proxy_socket(s.proxy_port);
        if (ps < 0) fail(s, Stage::proxy_socket, -ps);
        int r = send_fd(s.err_fd, Stage::proxy_fd, ps);
        if (r < 0) fail(s, Stage::proxy_fd, -r);
        ::close(ps);  // neither the init nor the command keeps it
    }
    for (size_t i = 0; i < s.gateway_listen.size(); ++i) {
        int gs = open_gateway_socket(s.gateway_listen[i]);
        if (gs < 0) fail(s, Stage::gateway_socket, -gs, static_cast<int>(i));
        int r = send_fd(s.err_fd, Stage::gateway_fd, gs);
        if (r < 0) fail(s, Stage::gateway_fd, -r, static_cast<int>(i));
        ::close(gs);
    }
    if (s.publish_fd >= 0) {
        // Readiness of the control pair becomes a queued signal for this process,
        // which the init's sigwaitinfo() loop takes (SIGIO if the queue overflows).
        if (::fcntl(s.publish_fd, F_SETOWN, ::getpid()) < 0 || ::fcntl(s.publish_fd, F_SETSIG, s.publish_sig) < 0 ||
            ::fcntl(s.publish_fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0)
            fail(s, Stage::publish_fd, errno);
    }
    if (s.pty) open_pty(s);
    if (::chdir(s.cwd) < 0) fail(s, Stage::chdir, errno);

    // The launcher's before_fork (the cgroup v1 attach) must be done before any
    // process of the sandbox other than us exists: children inherit the groups.
    if (s.wait_before_fork) {
        do {
            n = ::read(s.go_fd, &go, 1);
        } while (n < 0 && errno == EINTR);
        if (n != 1) ::_exit(125);
        ::close(s.go_fd);
    }

    // Every signal is still blocked (the launcher's mask at clone), so none is lost
    // across the fork. Handlers go in because pid 1 only receives signals from
    // outside for which it has one; they are read from a signalfd, beside the
    // launcher's pidfd.
    sigset_t all;
    ::sigfillset(&all);
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = noop_handler;
    ::sigfillset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig == SIGKILL || sig == SIGSTOP) continue;
        ::sigaction(sig, &sa, nullptr);
    }
    int sigfd = ::signalfd(-1, &all, SFD_CLOEXEC);
    if (sigfd < 0) fail(s, Stage::signals, errno);

    // Nothing of the sandbox's runs yet: the init gives up every capability now and
    // the command inherits that state.
    drop_privileges(s);
    if (launcher_gone(s)) ::_exit(125);
    if (fault::hit("child.before-fork")) fail(s, Stage::fork_command, EIO);

    long pid = sys::raw_fork();
    if (pid < 0) fail(s, Stage::fork_command, static_cast<int>(-pid));
    if (pid == 0) {
        ::close(sigfd);
        run_command(s, caller_umask);
    }
    // The command has its stdio now; the init keeps only what it uses: the status
    // and job-event pipes, the publish pair, the launcher's pidfd and state, the
    // freeze notes and its signalfd.
    // Not the caller's 0, 1, 2 it was cloned with, not a pipe's writer (which would
    // delay the relay's EOF until the init exits), not the pty's slave.
    int keep[] = {s.status_fd, s.events_fd, s.publish_fd, s.launcher_pidfd, s.freeze_fd, s.launcher_stat_fd, sigfd};
    sys::close_all_but(keep, static_cast<int>(sizeof keep / sizeof keep[0]));
    init_loop(s, static_cast<pid_t>(pid), sigfd);
}

}  // namespace agentjail::launch
