// SPDX-License-Identifier: Apache-2.0
// Escape tests of the unix socket gate: a listening unix socket made on the host (in
// the workspace, in a --ro or --rw bound directory) is out of reach from inside,
// whatever path leads to it (symlink, relative path, /proc magic link, hard link, an
// O_PATH descriptor) and whatever the socket type; --allow-socket and [filesystem]
// sockets open exactly the sockets they name; unix datagram sockets are refused
// outright; the connect race of the SYS-07 class (the address or the descriptor
// changed between the supervisor's check and the kernel's use) reaches nothing; and
// what the gate must leave alone still works (listeners made inside, TCP, --net
// host). One attack per test, each with a positive control: the same probe on the
// host (ajtest::run_with) reaches the same listener, which counts what arrives.
#include "common.hpp"
#include "thread_server.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace ajesc;

namespace {

// A unix socket of the host's, bound at path by this (the test) process, mode 0777
// so that only the gate can refuse a connect. Stream and seqpacket sockets listen
// and echo what each connection sends; a datagram socket records what arrives.
// connections() counts accepted connections (datagrams for SOCK_DGRAM). The file is
// removed at the end.
class HostSocket {
public:
    explicit HostSocket(std::string path, int type = SOCK_STREAM)
        : path_(std::move(path)), type_(type) {
        ::unlink(path_.c_str());
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        if (path_.size() >= sizeof a.sun_path) {
            error_ = "path too long for sun_path: " + path_;
            return;
        }
        std::memcpy(a.sun_path, path_.c_str(), path_.size());
        fd_ = ::socket(AF_UNIX, type_ | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 ||
            ::chmod(path_.c_str(), 0777) < 0 || (type_ != SOCK_DGRAM && ::listen(fd_, 512) < 0) ||
            ::pipe2(stop_, O_CLOEXEC) < 0) {
            error_ = "host socket " + path_ + ": " + std::strerror(errno);
            return;
        }
        thread_ = std::thread([this] { loop(); });
    }
    ~HostSocket() {
        if (thread_.joinable()) {
            (void)!::write(stop_[1], "x", 1);
            thread_.join();
        }
        for (int fd : {fd_, stop_[0], stop_[1]})
            if (fd >= 0) ::close(fd);
        ::unlink(path_.c_str());
    }
    HostSocket(const HostSocket&) = delete;
    HostSocket& operator=(const HostSocket&) = delete;

    bool ok() const { return error_.empty(); }
    const std::string& error() const { return error_; }
    const std::string& path() const { return path_; }
    int connections() const { return count_.load(); }
    // Everything received, one line per read or datagram.
    std::string received() const {
        std::lock_guard<std::mutex> g(mu_);
        return received_;
    }

private:
    void note(const char* buf, ssize_t n) {
        std::lock_guard<std::mutex> g(mu_);
        received_.append(buf, static_cast<size_t>(n));
        received_ += '\n';
    }
    void loop() {
        std::vector<int> conns;
        for (;;) {
            std::vector<pollfd> p{{stop_[0], POLLIN, 0}, {fd_, POLLIN, 0}};
            for (int c : conns) p.push_back({c, POLLIN, 0});
            if (::poll(p.data(), p.size(), -1) < 0 && errno != EINTR) break;
            if (p[0].revents != 0) break;
            char buf[512];
            std::vector<int> still_open;
            for (size_t i = 2; i < p.size(); ++i) {
                int c = p[i].fd;
                if (p[i].revents == 0) {
                    still_open.push_back(c);
                    continue;
                }
                ssize_t n = ::read(c, buf, sizeof buf);
                if (n > 0) {
                    note(buf, n);
                    (void)!::write(c, buf, static_cast<size_t>(n));
                    still_open.push_back(c);
                } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                    still_open.push_back(c);
                } else {
                    ::close(c);
                }
            }
            if (p[1].revents & POLLIN) {
                if (type_ == SOCK_DGRAM) {
                    ssize_t n;
                    while ((n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT)) >= 0) {
                        ++count_;
                        note(buf, n);
                    }
                } else {
                    int c;
                    while ((c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >=
                           0) {
                        ++count_;
                        still_open.push_back(c);
                    }
                }
            }
            conns.swap(still_open);
        }
        for (int c : conns) ::close(c);
    }

    std::string path_;
    int type_;
    int fd_ = -1;
    int stop_[2] = {-1, -1};
    std::string error_;
    std::atomic<int> count_{0};
    mutable std::mutex mu_;
    std::string received_;
    std::thread thread_;
};

std::string probe() { return helper("unixsock"); }

// The probe on the host, as the test's user: the positive control.
ajtest::RunOutput on_host(const std::vector<std::string>& args, const std::string& cwd = {}) {
    ajtest::RunOptions o;
    o.timeout_ms = 20000;
    o.cwd = cwd;
    std::vector<std::string> argv{probe()};
    argv.insert(argv.end(), args.begin(), args.end());
    return ajtest::run_with(argv, o);
}

// The probe inside a default sandbox (jail.base() plus flags), recorded for the sweep.
ajtest::RunOutput inside(ajtest::Jail& jail, const std::vector<std::string>& args,
                         const std::vector<std::string>& flags = {}) {
    std::vector<std::string> a = cat(jail.base(), flags);
    a.push_back("--");
    a.push_back(probe());
    a.insert(a.end(), args.begin(), args.end());
    return jail.run(a);
}

// Lets a host listener's thread catch up with what a finished run sent.
void settle() { ajtest::sleep_ms(200); }

// Every label inside was refused with EACCES, and the host's listener saw nothing.
void expect_refused(const ajtest::RunOutput& r, const HostSocket& host, std::initializer_list<const char*> labels,
                    const char* how) {
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* l : labels) EXPECT_EQ(field(r.out, l), "EACCES") << l << "\n" << describe(r);
    settle();
    EXPECT_EQ(host.connections(), 0) << "the host's listener was reached " << how << "\n" << describe(r);
}

// The positive control on the host: every label connected, and the listener saw
// `total` connections in all.
void expect_control(const ajtest::RunOutput& c, const HostSocket& host, std::initializer_list<const char*> labels,
                    int total) {
    for (const char* l : labels) EXPECT_EQ(field(c.out, l), "OK") << "control on the host: " << l << "\n" << describe(c);
    EXPECT_EQ(host.connections(), total);
}

// The common shape of the SOCK01-SOCK03 tests: the host socket at sock is refused
// from inside (EACCES, nothing arrives); the same probe on the host connects and its
// message comes back.
void expect_refused_then_control(ajtest::Jail& jail, const std::string& sock,
                                 const std::vector<std::string>& flags) {
    HostSocket host(sock);
    ASSERT_TRUE(host.ok()) << host.error();
    expect_refused(inside(jail, {"connect", "in", sock}, flags), host, {"in"}, "from inside");
    auto c = on_host({"connect", "ctl", sock});
    expect_control(c, host, {"ctl"}, 1);
    EXPECT_EQ(field(c.out, "ctl.echo"), "ping-ctl") << describe(c);
}

// ---- 1. host listeners are out of reach ------------------------------------------

// A listener the host made in the workspace (an editor's or language server's
// socket, a docker.sock copied in): connect() fails with EACCES.
TEST_F(Escape, SOCK01_HostSocketInWorkspaceIsRefused) {
    expect_refused_then_control(jail, jail.ws() + "/host.sock", {});
}

// The same in a directory bound read-only: a read-only mount does not stop a unix
// connect (the kernel checks write permission on the socket inode, not on the mount).
TEST_F(Escape, SOCK02_HostSocketInReadOnlyBoundDirIsRefused) {
    ajtest::TempDir dir("aj-sock-ro");
    expect_refused_then_control(jail, dir.path() + "/host.sock", {"--ro", dir.path()});
}

TEST_F(Escape, SOCK03_HostSocketInReadWriteBoundDirIsRefused) {
    ajtest::TempDir dir("aj-sock-rw");
    expect_refused_then_control(jail, dir.path() + "/host.sock", {"--rw", dir.path()});
}

// The agent makes its own symbolic links to the host's socket (absolute and relative,
// in the workspace and in its private /tmp) and connects to the links: the gate
// judges the socket the path resolves to, not the name it was given. Control: the
// links the sandbox left in the workspace lead to the socket on the host.
TEST_F(Escape, SOCK04_SymlinkToHostSocketIsRefused) {
    const std::string ws = jail.ws();
    HostSocket host(ws + "/host.sock");
    ASSERT_TRUE(host.ok()) << host.error();
    std::string script = "ln -s " + host.path() + " " + ws + "/abs.link && ln -s host.sock " + ws +
                         "/rel.link && ln -s " + host.path() + " /tmp/tmp.link && echo links=ok; " +
                         probe() + " connect abs " + ws + "/abs.link connect rel " + ws +
                         "/rel.link connect tmp /tmp/tmp.link";
    auto r = jail.sh(script);
    ASSERT_EQ(field(r.out, "links"), "ok") << describe(r);
    expect_refused(r, host, {"abs", "rel", "tmp"}, "through a link");
    expect_control(on_host({"connect", "abs", ws + "/abs.link", "connect", "rel", ws + "/rel.link"}), host,
                   {"abs", "rel"}, 2);
}

// connect("host.sock") relative to the working directory (the workspace), and
// through a subdirectory and "..": the gate resolves relative paths as the caller
// would. Control: the same relative paths from the same directory on the host.
TEST_F(Escape, SOCK05_RelativePathToHostSocketIsRefused) {
    const std::string ws = jail.ws();
    HostSocket host(ws + "/host.sock");
    ASSERT_TRUE(host.ok()) << host.error();
    jail.ws_dir().mkdir("sub");
    std::string script = "cd " + ws + " && " + probe() +
                         " connect rel host.sock connect dot ./host.sock connect up "
                         "sub/../host.sock && cd sub && " +
                         probe() + " connect parent ../host.sock";
    expect_refused(jail.sh(script), host, {"rel", "dot", "up", "parent"}, "by a relative path");
    expect_control(on_host({"connect", "rel", "host.sock", "connect", "up", "sub/../host.sock"}, ws), host,
                   {"rel", "up"}, 2);
}

// Paths through /proc's magic links, which the kernel follows without a string
// path: /proc/self/cwd, /proc/self/root, /proc/PID/cwd of the shell, an open
// directory's /proc/self/fd/N, and an O_PATH descriptor of the socket itself
// (connect to /proc/self/fd/N). Control: the same script on the host.
TEST_F(Escape, SOCK06_ProcMagicLinksToHostSocketAreRefused) {
    const std::string ws = jail.ws();
    HostSocket host(ws + "/host.sock");
    ASSERT_TRUE(host.ok()) << host.error();
    std::string script = "cd " + ws + " && exec 7<" + ws + " && " + probe() +
                         " connect cwd /proc/self/cwd/host.sock connect root /proc/self/root" +
                         host.path() +
                         " connect shell /proc/$$/cwd/host.sock connect dirfd "
                         "/proc/self/fd/7/host.sock viafd opath " +
                         host.path();
    expect_refused(jail.sh(script), host, {"cwd", "root", "shell", "dirfd", "opath"}, "through /proc");
    expect_control(jail.host_sh(script), host, {"cwd", "root", "shell", "dirfd", "opath"}, 5);
}

// A hard link the agent makes to the host's socket file (same inode, a name of its
// own choosing). Control: the link it left connects on the host.
TEST_F(Escape, SOCK07_HardLinkToHostSocketIsRefused) {
    const std::string ws = jail.ws();
    HostSocket host(ws + "/host.sock");
    ASSERT_TRUE(host.ok()) << host.error();
    std::string script = "if ln " + host.path() + " " + ws +
                         "/hard.sock 2>&1; then echo link=ok; " + probe() + " connect hard " + ws +
                         "/hard.sock; else echo link=fail; fi";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    settle();
    EXPECT_EQ(host.connections(), 0) << "the host's listener was reached through a hard link\n"
                                     << describe(r);
    if (field(r.out, "link") != "ok")
        GTEST_SKIP() << "the sandbox could not hard-link the socket (" << ajtest::trim(r.out)
                     << "): nothing to connect through";
    EXPECT_EQ(field(r.out, "hard"), "EACCES") << describe(r);
    expect_control(on_host({"connect", "hard", ws + "/hard.sock"}), host, {"hard"}, 1);
}

// SOCK_SEQPACKET (what some daemons listen with) goes through the same gate.
TEST_F(Escape, SOCK08_HostSeqpacketSocketIsRefused) {
    HostSocket host(jail.ws() + "/seq.sock", SOCK_SEQPACKET);
    ASSERT_TRUE(host.ok()) << host.error();
    expect_refused(inside(jail, {"seqpacket", "in", host.path()}), host, {"in"}, "with a seqpacket socket");
    auto c = on_host({"seqpacket", "ctl", host.path()});
    expect_control(c, host, {"ctl"}, 1);
    EXPECT_EQ(field(c.out, "ctl.echo"), "ping-ctl") << describe(c);
}

// ---- 2. the sockets a policy names ------------------------------------------------

// Two host sockets side by side, one of them permitted by flags: that one connects
// and data goes both ways; its neighbour stays refused and sees nothing.
void expect_only_allowed(ajtest::Jail& jail, const std::vector<std::string>& flags,
                         const HostSocket& allowed, const HostSocket& other) {
    auto r = inside(jail, {"connect", "allowed", allowed.path(), "connect", "other", other.path()},
                    flags);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "allowed"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "allowed.echo"), "ping-allowed") << describe(r);
    EXPECT_EQ(field(r.out, "other"), "EACCES") << describe(r);
    settle();
    EXPECT_EQ(allowed.connections(), 1) << describe(r);
    EXPECT_TRUE(ajtest::contains(allowed.received(), "ping-allowed")) << allowed.received();
    EXPECT_EQ(other.connections(), 0) << "the socket beside the allowed one was reached\n"
                                      << describe(r);
    // Control: the refused one is a working listener.
    auto c = on_host({"connect", "ctl", other.path()});
    EXPECT_EQ(field(c.out, "ctl"), "OK") << "control on the host\n" << describe(c);
    EXPECT_EQ(other.connections(), 1);
}

TEST_F(Escape, SOCK09_AllowSocketFlagOpensExactlyThatSocket) {
    HostSocket allowed(jail.ws() + "/allowed.sock");
    HostSocket other(jail.ws() + "/other.sock");
    ASSERT_TRUE(allowed.ok() && other.ok()) << allowed.error() << other.error();
    expect_only_allowed(jail, {"--allow-socket", allowed.path()}, allowed, other);
}

TEST_F(Escape, SOCK10_PolicySocketsListOpensExactlyThatSocket) {
    ajtest::TempDir pol("aj-sock-pol");
    HostSocket allowed(jail.ws() + "/allowed.sock");
    HostSocket other(jail.ws() + "/other.sock");
    ASSERT_TRUE(allowed.ok() && other.ok()) << allowed.error() << other.error();
    std::string file =
        pol.write("sockets.toml",
                  "extends = \"default\"\n[filesystem]\nsockets = [\"" + allowed.path() + "\"]\n");
    expect_only_allowed(jail, {"-p", file}, allowed, other);
}

// ---- 3. listeners made inside stay usable -----------------------------------------

// A listener in the sandbox's private /tmp, a client in another process: connects,
// and the message comes back.
TEST_F(Escape, SOCK11_ListenerInPrivateTmpIsReachable) {
    auto r = inside(jail, {"listen", "tmp", "/tmp/inside.sock"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "tmp.connect"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "tmp.echo"), "there") << describe(r);
    EXPECT_EQ(field(r.out, "tmp"), "OK") << describe(r);
}

// The same in the workspace (a dev server's socket in the project), by absolute path
// and by a relative one from the working directory.
TEST_F(Escape, SOCK12_ListenerInWorkspaceIsReachable) {
    auto r = jail.sh("cd " + jail.ws() + " && " + probe() + " listen abs " + jail.ws() +
                     "/inside.sock listen rel inside-rel.sock");
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* l : {"abs", "rel"}) {
        EXPECT_EQ(field(r.out, std::string(l) + ".connect"), "OK") << l << "\n" << describe(r);
        EXPECT_EQ(field(r.out, std::string(l) + ".echo"), "there") << l << "\n" << describe(r);
        EXPECT_EQ(field(r.out, l), "OK") << l << "\n" << describe(r);
    }
}

// An abstract socket (no file; the name lives in the network namespace, the
// sandbox's own in the default network mode).
TEST_F(Escape, SOCK13_AbstractListenerIsReachable) {
    auto r = inside(jail, {"listen", "abstract", "@" + unique_name("ajsock")});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "abstract.connect"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "abstract.echo"), "there") << describe(r);
    EXPECT_EQ(field(r.out, "abstract"), "OK") << describe(r);
}

// The path forms of SOCK06 (/proc/self/cwd, /proc/self/root, /proc/PID/cwd, an open
// directory's /proc/self/fd/N, an O_PATH descriptor of the socket) to a listener
// made inside, in the workspace, by a client in another process: they connect. This
// is what tells, in SOCK06, a gate that refuses the host's socket from one that
// cannot follow the path at all. Control: the same script on the host.
TEST_F(Escape, SOCK20_ProcMagicLinksToInsideListenerWork) {
    const std::string ws = jail.ws();
    const std::string sock = ws + "/inside.sock";
    std::string script = "cd " + ws + " && exec 7<" + ws + " && " + probe() + " listenvia cwd " +
                         sock + " /proc/self/cwd/inside.sock listenvia root " + sock +
                         " /proc/self/root" + sock + " listenvia shell " + sock +
                         " /proc/$$/cwd/inside.sock listenvia dirfd " + sock +
                         " /proc/self/fd/7/inside.sock listenvia opath " + sock + " opath:" + sock;
    const std::vector<const char*> labels = {"cwd", "root", "shell", "dirfd", "opath"};
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    auto c = jail.host_sh(script);
    for (const char* l : labels) {
        const std::string s(l);
        EXPECT_EQ(field(r.out, s + ".connect"), "OK") << l << "\n" << describe(r);
        EXPECT_EQ(field(r.out, s + ".echo"), "there") << l << "\n" << describe(r);
        EXPECT_EQ(field(r.out, s), "OK") << l << "\n" << describe(r);
        EXPECT_EQ(field(c.out, s), "OK") << "control on the host: " << l << "\n" << describe(c);
    }
}

// ---- 4. unix datagram sockets ----------------------------------------------------

// socket(AF_UNIX, SOCK_DGRAM) in its spellings, and socketpair of datagram sockets:
// EACCES. Controls: stream sockets and a stream socketpair (with data) still work
// inside, and every one of the calls works on the host.
TEST_F(Escape, SOCK14_UnixDatagramSocketsAreRefused) {
    const std::vector<std::string> args = {
        "socket", "dgram",          "dgram",          "socket", "dgram_cloexec", "dgram_cloexec",
        "socket", "dgram_nonblock", "dgram_nonblock", "pair",   "pair_dgram",    "dgram",
        "socket", "stream",         "stream",         "pair",   "pair_stream",   "stream",
        "pair",   "pair_seqpacket", "seqpacket",      "socket", "raw",           "raw",
        "socket", "raw_cloexec",    "raw_cloexec",    "pair",   "pair_raw",      "raw"};
    auto r = inside(jail, args);
    ASSERT_EQ(r.status, 0) << describe(r);
    // SOCK_RAW too: AF_UNIX makes it a datagram socket (attack review, session 17).
    for (const char* l : {"dgram", "dgram_cloexec", "dgram_nonblock", "pair_dgram", "raw", "raw_cloexec", "pair_raw"})
        EXPECT_EQ(field(r.out, l), "EACCES") << l << "\n" << describe(r);
    EXPECT_EQ(field(r.out, "stream"), "OK") << "control\n" << describe(r);
    EXPECT_EQ(field(r.out, "pair_stream"), "OK") << "control\n" << describe(r);
    EXPECT_EQ(field(r.out, "pair_stream.echo"), "there") << "control\n" << describe(r);
    EXPECT_EQ(field(r.out, "pair_seqpacket"), "OK") << "control\n" << describe(r);
    auto c = on_host(args);
    for (const char* l : {"dgram", "dgram_cloexec", "dgram_nonblock", "pair_dgram"})
        EXPECT_EQ(field(c.out, l), "OK") << "control on the host: " << l << "\n" << describe(c);
}

// A datagram sent to the host's datagram socket in the workspace (a syslog-style
// receiver): it does not arrive. Control: from the host it does.
TEST_F(Escape, SOCK15_DatagramToHostSocketDoesNotArrive) {
    HostSocket host(jail.ws() + "/log.sock", SOCK_DGRAM);
    ASSERT_TRUE(host.ok()) << host.error();
    auto r = inside(jail, {"dgram", "in", host.path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_NE(field(r.out, "in"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "in"), "EACCES") << describe(r);
    settle();
    EXPECT_EQ(host.connections(), 0) << "a datagram from inside arrived: " << host.received();
    auto c = on_host({"dgram", "ctl", host.path()});
    EXPECT_EQ(field(c.out, "ctl"), "OK") << "control on the host\n" << describe(c);
    settle();
    EXPECT_EQ(host.connections(), 1);
    EXPECT_TRUE(ajtest::contains(host.received(), "dgram-ctl")) << host.received();
}

// ---- 5. the race ------------------------------------------------------------------

// SYS-07's class: a check made on what the supervisor reads (the sockaddr in the
// caller's memory, the kind of socket behind the descriptor) and a connect the kernel
// then makes with what is there a moment later. The racer flips the descriptor (dup2
// of a unix socket over it) and rewrites the address to the host's socket while two
// threads connect in a loop, once with a TCP decoy (a listener of its own on
// 127.0.0.1 inside) and once with a permitted unix decoy (its own listener in /tmp).
// The host's listener must see nothing. Controls: inside, the decoys were reached
// (the race ran through allowed connects); on the host the same racer reaches the
// host's listener.
TEST_F(Escape, SOCK16_ConnectRaceCannotReachHostSocket) {
    HostSocket host(jail.ws() + "/host.sock");
    ASSERT_TRUE(host.ok()) << host.error();
    auto r = inside(jail, {"race", "inet", host.path(), "inet", "1000", "race", "unix", host.path(),
                           "/tmp/decoy.sock", "1000"});
    ASSERT_EQ(r.status, 0) << describe(r);
    settle();
    EXPECT_EQ(host.connections(), 0) << "the race reached the host's listener\n" << describe(r);
    for (const char* l : {"inet", "unix"}) {
        const std::string s(l);
        EXPECT_EQ(field(r.out, s + ".decoy"), "OK") << describe(r);
        EXPECT_EQ(field(r.out, s + ".host"), "0") << describe(r);
        EXPECT_GT(std::atol(field(r.out, s + ".attempts").c_str()), 100) << describe(r);
        EXPECT_GT(std::atol(field(r.out, s + ".decoy_hits").c_str()), 0)
            << "control: no connect to the decoy succeeded, so the race never ran through "
               "an allowed connect\n"
            << describe(r);
    }
    ajtest::TempDir d("aj-sock-race");
    auto c = on_host({"race", "inet", host.path(), "inet", "500", "race", "unix", host.path(),
                      d.path() + "/decoy.sock", "500"});
    EXPECT_EQ(c.status, 0) << describe(c);
    settle();
    EXPECT_GT(host.connections(), 0)
        << "control: the racer on the host never reached the listener\n"
        << describe(c);
}

// ---- 6. TCP is not the gate's business -------------------------------------------

// A listener inside on 127.0.0.1 and a connect to it, blocking and non-blocking (0 or
// EINPROGRESS, then poll and SO_ERROR 0), with data both ways.
TEST_F(Escape, SOCK17_TcpLoopbackInsideStillWorks) {
    auto r = inside(jail, {"tcp", "block", "block", "tcp", "nonblock", "nonblock"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "block.connect"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "block"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "block.echo"), "there") << describe(r);
    const std::string nb = field(r.out, "nonblock.connect");
    EXPECT_TRUE(nb == "OK" || nb == "EINPROGRESS") << describe(r);
    if (nb == "EINPROGRESS") {
        EXPECT_EQ(field(r.out, "nonblock.so_error"), "OK") << describe(r);
    }
    EXPECT_EQ(field(r.out, "nonblock"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "nonblock.echo"), "there") << describe(r);
}

// --net host: the host's TCP listener on 127.0.0.1 is reachable (a connect the
// supervisor may make on the sandbox's behalf still works, data both ways), while
// the host's unix socket in the workspace stays refused. Control: the unix socket
// connects from the host.
TEST_F(Escape, SOCK18_NetHostReachesHostTcpButNotHostUnixSocket) {
    ajtest::ThreadServer::Options so;
    so.what = "echo server";
    ajtest::ThreadServer tcp(so, [](int fd, SSL*) {
        char buf[256];
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) <= 0) return;
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) (void)!::write(fd, buf, static_cast<size_t>(n));
    });
    HostSocket host(jail.ws() + "/host.sock");
    ASSERT_TRUE(host.ok()) << host.error();
    auto r = inside(
        jail,
        {"tcpto", "tcp", "127.0.0.1", std::to_string(tcp.port()), "connect", "unix", host.path()},
        {"--net", "host"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "tcp"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "tcp.echo"), "ping-tcp") << describe(r);
    EXPECT_EQ(tcp.connections(), 1);
    EXPECT_EQ(field(r.out, "unix"), "EACCES") << describe(r);
    settle();
    EXPECT_EQ(host.connections(), 0) << "the host's unix listener was reached under --net host\n"
                                     << describe(r);
    auto c = on_host({"connect", "ctl", host.path()});
    EXPECT_EQ(field(c.out, "ctl"), "OK") << "control on the host\n" << describe(c);
    EXPECT_EQ(host.connections(), 1);
}

// ---- 7. the refusal is recorded -------------------------------------------------

// --seccomp-log (a file outside the workspace): the refused connect is a JSON line
// naming connect and EACCES. Control: without a refusal there is no such line (a
// run that only connects over TCP inside).
TEST_F(Escape, SOCK19_RefusedConnectIsLogged) {
    HostSocket host(jail.ws() + "/host.sock");
    ASSERT_TRUE(host.ok()) << host.error();
    ajtest::TempDir logs("aj-sock-log");
    const std::string log = logs.path() + "/denials.jsonl";
    auto r = inside(jail, {"connect", "in", host.path()}, {"--seccomp-log", log});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "in"), "EACCES") << describe(r);
    ASSERT_TRUE(ajtest::exists(log)) << "no log was written\n" << describe(r);
    const std::string text = ajtest::read_file(log);
    int found = 0;
    for (const auto& l : ajtest::lines(text)) {
        auto j = nlohmann::json::parse(l, nullptr, false);
        EXPECT_FALSE(j.is_discarded()) << "not JSON: " << l;
        if (ajtest::contains(l, "connect") && ajtest::contains(l, "EACCES")) ++found;
    }
    EXPECT_GE(found, 1) << "no line names connect and EACCES:\n" << text;

    const std::string log2 = logs.path() + "/quiet.jsonl";
    auto q = inside(jail, {"tcp", "t", "block"}, {"--seccomp-log", log2});
    ASSERT_EQ(q.status, 0) << describe(q);
    EXPECT_EQ(field(q.out, "t"), "OK") << describe(q);
    const std::string quiet = ajtest::exists(log2) ? ajtest::read_file(log2) : "";
    for (const auto& l : ajtest::lines(quiet))
        EXPECT_FALSE(ajtest::contains(l, "connect") && ajtest::contains(l, "EACCES"))
            << "a permitted connect was logged as refused: " << l;
}

}  // namespace

// The supervisor makes the connect on the sandbox's own socket, after setting it
// non-blocking: a thread inside clearing O_NONBLOCK in the moment between would have
// it connect blocking, and a listener inside whose backlog is full and that never
// accepts would then hold the run's loop for good (no --timeout, nothing else
// answered; attack review, session 17). Passing fcntl(F_SETFL) and ioctl(FIONBIO)
// through the supervisor with CONTINUE was not enough: such a call runs when its
// thread is next scheduled, which under load was after the supervisor had gone on to
// the connect (a hang in a whole-suite run). The supervisor now makes those calls
// itself, between its own. Three ways to clear the flag: fcntl, ioctl, and fcntl on
// a second descriptor number for the same socket. Every connect is answered (EAGAIN)
// and the run ends. Control: on the host, a blocking connect to that listener waits
// (the probe is stopped by `timeout`).
TEST_F(Escape, SOCK21_ClearingONonblockDuringTheConnectCannotBlockTheSupervisor) {
    for (const std::string how : {"fcntl", "ioctl", "dup"}) {
        ajtest::RunOptions o;
        o.timeout_ms = 60000;
        std::vector<std::string> a = cat(jail.base(), {"-t", "40s", "--kill-grace", "1s", "--", probe(),
                                                        "blockrace", "race", "/tmp/full.sock", how});
        auto r = jail.run(a, o);
        EXPECT_EQ(r.status, 0) << how << ": the run did not end by itself\n" << describe(r);
        EXPECT_EQ(field(r.out, "race"), "OK") << how << "\n" << describe(r);
    }
    ajtest::TempDir d("aj-blockrace");
    auto c = ajtest::run({"timeout", "3", probe(), "blockrace", "race", d.path() + "/full.sock", "fcntl"});
    EXPECT_EQ(c.status, 124) << "control: a blocking connect to the full listener did not wait\n" << describe(c);
}

// What fcntl(F_SETFL) and ioctl(FIONBIO) answer when the supervisor makes them (the
// socket gate) is what the kernel answers without a filter (minimal): the flags set
// and read back on a socket, a pipe and a file, EBADF for a number not open and for
// an O_PATH descriptor, EFAULT for FIONBIO's unreadable address, and O_NOATIME, which
// needs the file's owner (the supervisor's rights must not stand in for the caller's).
TEST_F(Escape, SOCK24_TheGatesFcntlAndIoctlAnswerAsTheKernelDoes) {
    const std::string script =
        "cd /tmp && python3 -c \"\n"
        "import ctypes, fcntl, os, socket\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(label, f):\n"
        "    try:\n"
        "        print(label + '=' + str(f()))\n"
        "    except OSError as e:\n"
        "        print(label + '=errno' + str(e.errno))\n"
        "def ioc(fd, arg):\n"
        "    r = libc.ioctl(fd, 0x5421, arg)\n"
        "    return r if r == 0 else 'errno' + str(ctypes.get_errno())\n"
        "s = socket.socket(); r, w = os.pipe(); f = os.open('/tmp/gate-file', os.O_WRONLY | os.O_CREAT, 0o600)\n"
        "for name, fd in (('sock', s.fileno()), ('pipe', r), ('file', f)):\n"
        "    call(name + '.set', lambda: fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK | os.O_APPEND))\n"
        "    call(name + '.got', lambda: fcntl.fcntl(fd, fcntl.F_GETFL) & (os.O_NONBLOCK | os.O_APPEND))\n"
        "    on = ctypes.c_int(0)\n"
        "    call(name + '.fionbio', lambda: ioc(fd, ctypes.byref(on)))\n"
        "    call(name + '.after', lambda: fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK)\n"
        "call('badfd', lambda: fcntl.fcntl(1000, fcntl.F_SETFL, 0))\n"
        "call('badfd.ioctl', lambda: ioc(1000, ctypes.byref(ctypes.c_int(1))))\n"
        "p = os.open('/tmp', os.O_PATH)\n"
        "call('opath', lambda: fcntl.fcntl(p, fcntl.F_SETFL, os.O_NONBLOCK))\n"
        "call('fault', lambda: ioc(s.fileno(), 16))\n"
        "mine = os.open('/tmp/gate-file', os.O_RDONLY)\n"
        "call('noatime.mine', lambda: fcntl.fcntl(mine, fcntl.F_SETFL, os.O_NOATIME))\n"
        "theirs = os.open('/etc/passwd', os.O_RDONLY)\n"
        "call('noatime.theirs', lambda: fcntl.fcntl(theirs, fcntl.F_SETFL, os.O_NOATIME))\n"
        "\"";
    auto gated = jail.sh(script);
    ASSERT_EQ(gated.status, 0) << describe(gated);
    auto plain = jail.sh(script, {"-p", "minimal", "--rw", jail.ws()});
    ASSERT_EQ(plain.status, 0) << describe(plain);
    const std::vector<std::string> labels = {
        "sock.set", "sock.got", "sock.fionbio", "sock.after", "pipe.set", "pipe.got", "pipe.fionbio", "pipe.after",
        "file.set", "file.got", "file.fionbio", "file.after", "badfd", "badfd.ioctl", "opath", "fault",
        "noatime.mine", "noatime.theirs"};
    for (const auto& l : labels) {
        EXPECT_FALSE(field(plain.out, l).empty()) << l << " not printed\n" << describe(plain);
        EXPECT_EQ(field(gated.out, l), field(plain.out, l)) << l << "\n" << describe(gated) << describe(plain);
    }
    // Controls: the calls did something, and failed where they should.
    EXPECT_EQ(field(plain.out, "sock.got"), std::to_string(O_NONBLOCK | O_APPEND)) << describe(plain);
    EXPECT_EQ(field(plain.out, "sock.after"), "0") << describe(plain);
    EXPECT_EQ(field(plain.out, "badfd"), "errno" + std::to_string(EBADF)) << describe(plain);
    EXPECT_EQ(field(plain.out, "fault"), "errno" + std::to_string(EFAULT)) << describe(plain);
    EXPECT_EQ(field(plain.out, "noatime.mine"), "0") << describe(plain);
}

// With nested_sandboxes, a process inside may make a mount namespace of its own and
// mount another socket over an allowed path there. The allowed path is resolved in
// the sandbox's root as agentjail built it, so the socket behind the mount is what it
// is: refused (attack review, session 17). Control: without the mount, the allowed
// socket is reached through the same path.
TEST_F(Escape, SOCK22_AnAllowedPathMountedOverInANestedNamespaceIsRefused) {
    ajtest::TempDir ro("aj-sock-ro");
    ajtest::TempDir pol("aj-sock-pol");
    HostSocket allowed(ro.path() + "/pg.sock");
    HostSocket other(jail.ws() + "/other.sock");
    ASSERT_TRUE(allowed.ok() && other.ok()) << allowed.error() << other.error();
    std::string file = pol.write("nested.toml", "extends = \"default\"\n[filesystem]\nro = [\"" + ro.path() +
                                                    "\"]\nsockets = [\"" + allowed.path() +
                                                    "\"]\n[seccomp]\nnested_sandboxes = true\n");
    // unshare(CLONE_NEWUSER | CLONE_NEWNS), then a bind mount (full capabilities in
    // the new user namespace, no id map needed), then the probe in that namespace.
    auto probe_in_ns = "python3 -c \"\nimport ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                       "if libc.unshare(0x10000000 | 0x00020000) != 0 or libc.mount(b'" + other.path() + "', b'" +
                       allowed.path() + "', None, 4096, None) != 0:\n    print('unshare-failed', ctypes.get_errno())\n"
                       "    sys.exit(0)\nos.execv('" + probe() + "', ['unixsock', 'connect', 'over', '" + allowed.path() +
                       "'])\n\"";
    auto r = jail.sh(probe() + " connect plain " + allowed.path() + "; " + probe_in_ns, {"-p", file});
    ASSERT_EQ(r.status, 0) << describe(r);
    if (ajtest::contains(r.out, "unshare-failed"))
        GTEST_SKIP() << "unshare -Urm with a bind mount does not work inside here: " << describe(r);
    settle();
    EXPECT_EQ(field(r.out, "plain"), "OK") << "control: the allowed socket\n" << describe(r);
    EXPECT_EQ(field(r.out, "over"), "EACCES") << describe(r);
    EXPECT_EQ(other.connections(), 0) << "the socket mounted over the allowed path was reached";
    EXPECT_GE(allowed.connections(), 1) << "control: the allowed socket saw no connection";
}

// A listener made in `dir`, its socket file chmod-ed to 0 and to 0777, and a connect
// to each: prints mode0= and mode777= (OK or the errno's name).
static std::string socket_mode_script(const std::string& dir) {
    return "cd " + dir + " && python3 -c \"\n"
           "import socket, os\n"
           "for mode in (0, 0o777):\n"
           "    p = 'perm-%o.sock' % mode\n"
           "    l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1); os.chmod(p, mode)\n"
           "    c = socket.socket(socket.AF_UNIX)\n"
           "    try:\n"
           "        c.connect(p); print('mode%o=OK' % mode)\n"
           "    except OSError as e:\n"
           "        print('mode%o=%s' % (mode, 'EACCES' if e.errno == 13 else e.errno))\n"
           "    os.unlink(p)\n"
           "\"";
}

// The caller's own permissions on the socket file hold as the kernel checks them: the
// supervisor's connect must not lend it its own (as root it would pass every mode).
// The gate's answer equals what the same probe gets with no gate at all (minimal has
// no filter), for a listener inside whose file has mode 0 and one with mode 0777.
TEST_F(Escape, SOCK23_TheCallersPermissionOnTheSocketFileHolds) {
    const std::string script = socket_mode_script("/tmp");
    auto gated = jail.sh(script);
    ASSERT_EQ(gated.status, 0) << describe(gated);
    auto plain = jail.sh(script, {"-p", "minimal", "--rw", jail.ws()});
    ASSERT_EQ(plain.status, 0) << describe(plain);
    for (const char* m : {"mode0", "mode777"})
        EXPECT_EQ(field(gated.out, m), field(plain.out, m)) << m << "\n" << describe(gated) << describe(plain);
    EXPECT_EQ(field(plain.out, "mode777"), "OK") << "control\n" << describe(plain);
}

// SOCK25 (issue 29, item 6): under a filter that holds the one seccomp listener the
// kernel allows per chain (WSL2's init; tests/helpers/containerlike --listener), there
// is no socket gate to check where a Unix socket connects. The run goes on with the
// filter that needs none: a Unix socket cannot even be made (EACCES), so the host's
// socket in the workspace, allowed or not, stays out of reach; a connected pair still
// works, and the policy's other refusals still hold. Controls: the host's socket
// answers the same probe on the host, and without that filter the socket is made.
TEST_F(Escape, SOCK25_WithoutAListenerNoUnixSocketCanBeMade) {
    const std::string sock = jail.ws() + "/host.sock";
    HostSocket host(sock);
    ASSERT_TRUE(host.ok()) << host.error();
    std::vector<std::string> argv{helper("containerlike"), "--listener", ajtest::agentjail_bin()};
    for (const auto& a : cat(jail.base(), {"--allow-socket", sock, "--", "/bin/sh", "-c"}))
        argv.push_back(a);
    const std::string script = probe() + " connect host " + sock + " socket made stream pair pair stream; " +
                               helper("trysys") + " userns_selfmap >/dev/null; echo userns=$?";
    argv.push_back(script);
    ajtest::RunOptions o;
    o.env = {"HOME=" + jail.home()};
    o.timeout_ms = 30000;
    auto r = ajtest::run_with(argv, o);
    jail.record(r);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "host"), "EACCES") << describe(r);
    EXPECT_EQ(field(r.out, "made"), "EACCES") << describe(r);
    EXPECT_EQ(field(r.out, "pair"), "OK") << describe(r);
    EXPECT_NE(field(r.out, "userns"), "0") << "a refusal of the policy no longer holds\n" << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "(the allowed sockets too)")) << describe(r);
    settle();
    EXPECT_EQ(host.connections(), 0) << describe(r);
    auto c = on_host({"connect", "ctl", sock});
    expect_control(c, host, {"ctl"}, 1);
    auto plain = inside(jail, {"socket", "made", "stream"});
    ASSERT_EQ(plain.status, 0) << describe(plain);
    EXPECT_EQ(field(plain.out, "made"), "OK") << "control: with its own listener the sandbox makes one\n"
                                               << describe(plain);
}

// SOCK26 (issue 25, item 6, under --view fuse): the project served through the view,
// a FUSE mount the kernel lets no process outside the sandbox's user namespace into.
// The gate still checks every connect below it (from a helper inside that namespace):
// the host's socket the policy does not name is refused and recorded; the one it names
// connects to the host's listener, by its path and through an O_PATH descriptor; a
// listener made inside, in the project, is reached by another process. Controls: the
// refused socket answers on the host; the allowed one is the same kind of listener.
TEST_F(Escape, SOCK26_SocketsInTheProjectThroughTheView) {
    HostSocket allowed(jail.ws() + "/allowed.sock");
    HostSocket other(jail.ws() + "/other.sock");
    ASSERT_TRUE(allowed.ok() && other.ok()) << allowed.error() << other.error();
    const std::string sock = jail.ws() + "/inside.sock";
    auto r = inside(jail,
                    {"connect", "allowed", allowed.path(), "viafd", "viafd", allowed.path(), "connect",
                     "other", other.path(), "listenvia", "inside", sock, sock},
                    {"--view", "fuse", "--allow-socket", allowed.path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "allowed"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "allowed.echo"), "ping-allowed") << describe(r);
    EXPECT_EQ(field(r.out, "viafd"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "other"), "EACCES") << describe(r);
    EXPECT_EQ(field(r.out, "inside.connect"), "OK") << describe(r);
    EXPECT_EQ(field(r.out, "inside.echo"), "there") << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "socket " + other.path() + ": no process inside listens on it"))
        << "the refusal is not in the summary\n" << describe(r);
    settle();
    EXPECT_EQ(allowed.connections(), 2) << describe(r);
    EXPECT_EQ(other.connections(), 0) << "the socket the policy does not name was reached\n" << describe(r);
    auto c = on_host({"connect", "ctl", other.path()});
    expect_control(c, other, {"ctl"}, 1);
}

// SOCK27: SOCK23 in the project under --view fuse, where the gate's checks run in a
// helper that holds every capability of the sandbox's user namespace: the caller's own
// right to the socket file still decides (mode 0 refused, 0777 connects), as without
// the gate. Control: the same script under the minimal policy, where the kernel alone
// decides.
TEST_F(Escape, SOCK27_TheCallersPermissionHoldsBelowTheView) {
    const std::string ws = jail.ws();
    const std::string script = socket_mode_script(ws);
    auto gated = jail.sh(script, {"--view", "fuse"});
    ASSERT_EQ(gated.status, 0) << describe(gated);
    auto plain = jail.sh(script, {"-p", "minimal", "--rw", ws});
    ASSERT_EQ(plain.status, 0) << describe(plain);
    EXPECT_EQ(field(gated.out, "mode0"), "EACCES") << describe(gated);
    EXPECT_EQ(field(gated.out, "mode777"), "OK") << describe(gated);
    for (const char* m : {"mode0", "mode777"})
        EXPECT_EQ(field(gated.out, m), field(plain.out, m)) << m << "\n" << describe(gated) << describe(plain);
    EXPECT_EQ(field(plain.out, "mode777"), "OK") << "control\n" << describe(plain);
}
