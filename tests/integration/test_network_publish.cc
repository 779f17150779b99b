// SPDX-License-Identifier: Apache-2.0
// Published ports (docs/network.md "Publishing a port"): a server the command starts
// in the background inside answers on the host's 127.0.0.1:HOSTPORT while the
// command runs, and nothing listens there once it ends or without --publish; a host
// port in use and host mode are refused before the command starts.
#include "common.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

using ajit::describe;

namespace {

// A port of the host's loopback that was free a moment ago.
std::uint16_t free_port() { return static_cast<std::uint16_t>(ajtest::free_port()); }

bool can_connect(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

class NetworkPublish : public ajit::Sandbox {
protected:
    void SetUp() override {
        if (!ajtest::exists("/usr/bin/python3"))
            GTEST_SKIP() << "no /usr/bin/python3 on this host (the server inside)";
        jail.ws_dir().write("index.html", "published-ok\n");
    }

    // The command: a server on 127.0.0.1:PORT inside, in the background (a
    // long-running helper), while the command itself waits for done.flag.
    static std::string server_script(std::uint16_t port) {
        return "/usr/bin/python3 -m http.server " + std::to_string(port) +
               " --bind 127.0.0.1 >/dev/null 2>&1 & "
               "for i in $(seq 300); do [ -e done.flag ] && break; sleep 0.1; done; echo finished";
    }

    std::unique_ptr<ajtest::Child> start(const std::vector<std::string>& flags,
                                         const std::string& script) {
        std::vector<std::string> argv = {ajtest::agentjail_bin()};
        for (const auto& a : jail.base()) argv.push_back(a);
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.insert(argv.end(), {"--", "/bin/bash", "-c", script});
        ajtest::RunOptions o;
        o.env = {"HOME=" + jail.home()};
        o.cwd = jail.ws();
        return std::make_unique<ajtest::Child>(argv, o);
    }

    // curl on the host until it answers (the server inside takes a moment to start).
    ajtest::RunOutput fetch(std::uint16_t port) {
        ajtest::RunOutput r;
        for (int i = 0; i < 100; ++i) {
            r = jail.host_sh("curl -sS --max-time 2 http://127.0.0.1:" + std::to_string(port) +
                             "/index.html");
            if (r.status == 0) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return r;
    }
};

// --publish 8000:HOSTPORT: the host reaches the server inside while the command runs;
// when the run ends the host port is closed.
TEST_F(NetworkPublish, AServerInsideAnswersOnTheHostWhileTheCommandRuns) {
    std::uint16_t hp = free_port();
    auto child = start({"--publish", "8000:" + std::to_string(hp)}, server_script(8000));
    auto r = fetch(hp);
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajtest::trim(r.out), "published-ok") << describe(r);
    jail.ws_dir().write("done.flag", "");
    auto out = child->wait(30000);
    EXPECT_EQ(out.status, 0) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "finished")) << describe(out);
    EXPECT_FALSE(can_connect(hp)) << "the published listener outlived the run";
}

// The same with [network] publish in a policy, and in proxy mode.
TEST_F(NetworkPublish, ThePolicyKeyPublishesInProxyModeToo) {
    std::uint16_t hp = free_port();
    ajtest::TempDir scratch{"aj-pub"};
    std::string pol = scratch.write(
        "publish.toml", "extends = \"default\"\n[network]\nmode = \"proxy\"\npublish = [\"8001:" +
                            std::to_string(hp) + "\"]\n");
    auto child = start({"-p", pol}, server_script(8001));
    auto r = fetch(hp);
    EXPECT_EQ(ajtest::trim(r.out), "published-ok") << describe(r);
    jail.ws_dir().write("done.flag", "");
    EXPECT_EQ(child->wait(30000).status, 0);
    EXPECT_FALSE(can_connect(hp));
}

// Without --publish the same server is on the sandbox's loopback only: nothing
// listens on the host at its port while it runs (the control above shows the probe
// works when something does).
TEST_F(NetworkPublish, NoPublishNothingListensOnTheHost) {
    std::uint16_t port = free_port();
    std::string p = std::to_string(port);
    // The server answers inside (up.flag says so) while the host probes its port.
    auto child = start(
        {},
        "/usr/bin/python3 -m http.server " + p +
            " --bind 127.0.0.1 >/dev/null 2>&1 & "
            "for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:" +
            p +
            "/ && { touch up.flag; break; }; sleep 0.1; done; "
            "for i in $(seq 300); do [ -e done.flag ] && break; sleep 0.1; done; echo finished");
    for (int i = 0; i < 100 && !ajtest::exists(jail.ws() + "/up.flag"); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(ajtest::exists(jail.ws() + "/up.flag"))
        << "the server inside never answered inside";
    bool reached = false;
    for (int i = 0; i < 20; ++i) {
        reached = reached || can_connect(port);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    jail.ws_dir().write("done.flag", "");
    auto out = child->wait(30000);
    EXPECT_EQ(out.status, 0) << describe(out);
    EXPECT_FALSE(reached) << "something listened on the host's 127.0.0.1:" << port;
}

// A host port in use, and host mode (no namespace to publish from): exit 125 before
// the command starts, with one line that says why.
TEST_F(NetworkPublish, AHostPortInUseOrHostModeIsRefusedBeforeTheCommandStarts) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd, 1), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    std::string busy = std::to_string(ntohs(a.sin_port));
    auto r = jail.sh("echo ran", {"--publish", "3000:" + busy});
    ::close(fd);
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "ran")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "127.0.0.1:" + busy + ": something already listens there"))
        << describe(r);
    EXPECT_EQ(ajtest::lines(ajtest::trim(r.err)).size(), 1u) << describe(r);
    auto h = jail.sh("echo ran", {"--net", "host", "--publish", "3000"});
    EXPECT_EQ(h.status, 125) << describe(h);
    EXPECT_TRUE(ajtest::contains(h.err, "publish needs a network namespace")) << describe(h);
    auto bad = jail.sh("echo ran", {"--publish", "70000"});
    EXPECT_EQ(bad.status, 125) << describe(bad);
    EXPECT_TRUE(ajtest::contains(bad.err, "expected PORT or PORT:HOSTPORT")) << describe(bad);
}

}  // namespace
