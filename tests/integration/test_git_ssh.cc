// SPDX-License-Identifier: Apache-2.0
// Git over SSH through the proxy's SOCKS5 side, as docs/network.md tells users to set
// it up: a throwaway sshd on the host's loopback stands in for a git host, the policy
// allows its name and port (pinned with [network.hosts]) and sets GIT_SSH_COMMAND with
// an OpenBSD-netcat ProxyCommand. A real `git clone ssh://` inside must work; the same
// clone without the ProxyCommand, or to a port the policy does not allow, must not
// reach sshd at all.
#include "common.hpp"
#include "net_support.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using ajit::describe;

namespace {


bool listening(int port) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = s >= 0 && ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (s >= 0) ::close(s);
    return ok;
}

std::string user_name() {
    auto r = ajtest::run({"id", "-un"});
    auto ls = ajtest::lines(r.out);
    return ls.empty() ? "" : ls.front();
}

class GitSsh : public ajit::Sandbox {
protected:
    void SetUp() override {
        for (const char* tool : {"/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen", "/usr/bin/git"})
            if (!ajtest::exists(tool))
                GTEST_SKIP() << tool << " is missing (scripts/setup.sh installs openssh-server, "
                                        "openssh-client and git)";
        // The ProxyCommand needs OpenBSD netcat's SOCKS5 client (-X 5); traditional
        // netcat has no -X.
        auto nc = ajtest::run({"/bin/sh", "-c", "nc -h 2>&1 | head -n1"});
        if (!ajtest::contains(nc.out, "OpenBSD netcat"))
            GTEST_SKIP() << "nc is not OpenBSD netcat (scripts/setup.sh installs netcat-openbsd): " << nc.out;
        user_ = user_name();
        ASSERT_FALSE(user_.empty());

        // sshd as root insists on its privilege-separation directory; made only when
        // missing (with a marker inside saying a test made it), and removed by the last
        // test to leave it. Tests run in parallel: each holds a shared lock on /run
        // while it uses the directory, and only the one that gets the exclusive lock at
        // TearDown removes it, so no other test's sshd loses it mid-run.
        if (geteuid() == 0) {
            run_lock_ = ::open("/run", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            ASSERT_GE(run_lock_, 0) << "open /run";
            ASSERT_EQ(::flock(run_lock_, LOCK_SH), 0) << "flock /run";
            if (!ajtest::exists("/run/sshd")) {
                ASSERT_TRUE(::mkdir("/run/sshd", 0755) == 0 || errno == EEXIST) << "mkdir /run/sshd";
                int m = ::open(kPrivsepMarker, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
                if (m >= 0) ::close(m);
            }
        }
        // Keys: the host's in scratch (outside every sandbox), the client's in the
        // workspace, where the command inside reads it.
        key_ = jail.ws() + "/id_git";
        auto k = ajtest::run({"/bin/sh", "-c",
                              "ssh-keygen -q -t ed25519 -N '' -f " + scratch_.path() +
                                  "/host_key && ssh-keygen -q -t ed25519 -N '' -C test -f " + key_ +
                                  " && cp " + key_ + ".pub " + scratch_.path() + "/authorized_keys"});
        ASSERT_EQ(k.status, 0) << describe(k);

        // The repository: one commit holding a marker.
        marker_ = ajit::unique_name("ssh-content-");
        repo_ = scratch_.path() + "/repo.git";
        std::string src = scratch_.path() + "/src";
        auto g = ajtest::run({"/bin/sh", "-c",
                              "set -e; git init -q -b main " + src + "; cd " + src + "; echo " + marker_ +
                                  " > README; git add README; git -c user.name=t -c user.email=t@t "
                                  "commit -qm init; git clone -q --bare " + src + " " + repo_});
        ASSERT_EQ(g.status, 0) << describe(g);

        port_ = ajtest::free_port();
        ASSERT_GT(port_, 0);
        std::string cfg = scratch_.write("sshd_config",
                                         "ListenAddress 127.0.0.1\n"
                                         "Port " + std::to_string(port_) + "\n"
                                         "HostKey " + scratch_.path() + "/host_key\n"
                                         "AuthorizedKeysFile " + scratch_.path() + "/authorized_keys\n"
                                         "StrictModes no\nUsePAM no\nPidFile none\n"
                                         "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                                         "LogLevel VERBOSE\n");
        ajtest::RunOptions o;
        sshd_ = std::make_unique<ajtest::Child>(
            std::vector<std::string>{"/usr/sbin/sshd", "-D", "-e", "-f", cfg, "-E", sshd_log()}, o);
        for (int i = 0; i < 100 && !listening(port_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ASSERT_TRUE(listening(port_)) << "sshd did not start: " << ajtest::read_file(sshd_log());
        baseline_ = sessions();  // the probes above connect but never log in
    }

    void TearDown() override {
        sshd_.reset();  // SIGKILLs and reaps sshd and nothing else
        if (run_lock_ >= 0) {
            if (::flock(run_lock_, LOCK_EX | LOCK_NB) == 0 && ::unlink(kPrivsepMarker) == 0) ::rmdir("/run/sshd");
            ::close(run_lock_);  // drops the lock
            run_lock_ = -1;
        }
        ajit::Sandbox::TearDown();
    }

    std::string sshd_log() const { return scratch_.path() + "/sshd.log"; }
    // Public-key logins sshd accepted so far.
    int sessions() const {
        std::string log = ajtest::read_file(sshd_log());
        int n = 0;
        for (size_t at = log.find("Accepted publickey"); at != std::string::npos;
             at = log.find("Accepted publickey", at + 1))
            ++n;
        return n;
    }

    std::string url() const {
        return "ssh://" + user_ + "@git.test:" + std::to_string(port_) + repo_;
    }

    // The documented setup: allow the git host's SSH port, point ssh at the proxy's
    // SOCKS5 side through nc. The key and the throwaway known_hosts are the test's.
    std::string policy(int allowed_port, bool proxy_command) {
        ajnet::NetPolicy p;
        p.allow = {"git.test:" + std::to_string(allowed_port)};
        p.hosts = {{"git.test", "127.0.0.1"}};
        std::string ssh = "ssh -i " + key_ + " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
                          " -o ConnectTimeout=10";
        if (proxy_command) ssh += " -o ProxyCommand='nc -X 5 -x 127.0.0.1:3128 %h %p'";
        p.extra = "\n[environment]\nset = { GIT_SSH_COMMAND = \"" + ssh + "\" }\n";
        return scratch_.write("git-ssh.toml", ajnet::toml(p));
    }

    ajtest::RunOutput clone_inside(const std::string& policy_file) {
        std::vector<std::string> args = jail.base();
        args.insert(args.end(), {"-p", policy_file, "--net-log", net_log(), "--", "/bin/sh", "-c",
                                 "git clone -q " + url() + " clone && cat clone/README"});
        ajtest::RunOptions o;
        o.timeout_ms = 60000;
        return jail.run(args, o);
    }
    std::string net_log() const { return scratch_.path() + "/net.jsonl"; }

    ajtest::TempDir scratch_{"aj-git-ssh"};
    std::unique_ptr<ajtest::Child> sshd_;
    std::string user_, key_, repo_, marker_;
    int port_ = -1;
    int baseline_ = 0;
    int run_lock_ = -1;  // the shared lock on /run while this test may use /run/sshd
    static constexpr const char* kPrivsepMarker = "/run/sshd/.made-by-agentjail-tests";
};

// Positive control first: the same clone from the host, straight to sshd, works; so a
// failure below is the sandbox's doing, not the server's.
TEST_F(GitSsh, ClonesThroughTheProxysSocks5Side) {
    ajtest::TempDir host_clone{"aj-git-ssh-host"};
    auto h = ajtest::run({"/bin/sh", "-c",
                          "GIT_SSH_COMMAND='ssh -i " + key_ +
                              " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null' git clone -q "
                              "ssh://" + user_ + "@127.0.0.1:" + std::to_string(port_) + repo_ + " " +
                              host_clone.path() + "/c && cat " + host_clone.path() + "/c/README"});
    ASSERT_EQ(h.status, 0) << describe(h) << ajtest::read_file(sshd_log());
    ASSERT_TRUE(ajtest::contains(h.out, marker_));
    int before = sessions();

    auto r = clone_inside(policy(port_, true));
    EXPECT_EQ(r.status, 0) << describe(r) << ajtest::read_file(sshd_log());
    EXPECT_TRUE(ajtest::contains(r.out, marker_)) << describe(r);
    EXPECT_EQ(sessions(), before + 1) << ajtest::read_file(sshd_log());
    auto allowed = ajnet::log_entries(ajnet::read_log(net_log()), "git.test", "allow");
    ASSERT_EQ(allowed.size(), 1u) << ajnet::dump(ajnet::read_log(net_log()));
    EXPECT_EQ(allowed[0]["method"], "SOCKS5");
    EXPECT_GT(allowed[0]["bytes_down"].get<std::uint64_t>(), 1000u) << allowed[0].dump();
}

// Without the ProxyCommand ssh connects directly, and the sandbox has no route: the
// clone fails and sshd never sees a login. (The pinned name does not help: the
// sandbox has no resolver and only loopback, where nothing of the host listens.)
TEST_F(GitSsh, WithoutTheProxyCommandSshHasNoWayOut) {
    auto r = clone_inside(policy(port_, false));
    EXPECT_NE(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, marker_)) << describe(r);
    EXPECT_EQ(sessions(), baseline_) << ajtest::read_file(sshd_log());
}

// A policy that allows another port of the same host: SOCKS5 refuses the connection,
// the log says so, and sshd never sees a login.
TEST_F(GitSsh, APortThePolicyDoesNotAllowIsRefused) {
    int other = port_ == 65535 ? port_ - 1 : port_ + 1;
    auto r = clone_inside(policy(other, true));
    EXPECT_NE(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, marker_)) << describe(r);
    EXPECT_EQ(sessions(), baseline_) << ajtest::read_file(sshd_log());
    auto log = ajnet::read_log(net_log());
    auto denied = ajnet::log_entries(log, "git.test", "deny");
    ASSERT_GE(denied.size(), 1u) << ajnet::dump(log);
    EXPECT_EQ(denied[0]["method"], "SOCKS5");
    EXPECT_EQ(ajnet::log_entries(log, "git.test", "allow").size(), 0u) << ajnet::dump(log);
}

}  // namespace
