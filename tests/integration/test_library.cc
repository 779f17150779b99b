// SPDX-License-Identifier: Apache-2.0
// The library embedded in a host process: spawn through the C++ API with
// redirected stdio, signals, destruction and multi-threaded hosts.
#include "api/api.hpp"

#include "test_support.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace {

using agentjail::Policy;
using agentjail::Sandbox;

using ajtest::Pipe;

Policy policy_in(const ajtest::TempDir& ws) {
    auto p = Policy::load("default");
    EXPECT_TRUE(p) << p.error().message();
    EXPECT_TRUE(p->set_workspace(ws.path()));
    return std::move(p).value();
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

[[maybe_unused]] bool wait_gone(pid_t pid, int timeout_ms) {
    for (int i = 0; i < timeout_ms / 10; ++i) {
        if (!alive(pid)) return true;
        ajtest::sleep_ms(10);
    }
    return !alive(pid);
}

TEST(Library, SpawnWithRedirectedStdout) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    Pipe out;
    agentjail::SpawnOptions o;
    o.stdout_fd = out.w;
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "echo hello from $(hostname); exit 7"}, o);
    ASSERT_TRUE(sb) << sb.error().message();
    out.close_write();
    EXPECT_EQ(out.read_all(), "hello from agentjail\n");
    auto r = sb->wait();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->exited);
    EXPECT_EQ(r->exit_code, 7);
    // A second wait answers the same, and kill after exit is refused, not sent to a reused pid.
    auto again = sb->wait();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->exit_code, 7);
    EXPECT_FALSE(sb->kill(SIGTERM));
}

TEST(Library, KillReachesTheCommandThroughTheInit) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    Pipe out;
    agentjail::SpawnOptions o;
    o.stdout_fd = out.w;
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "trap 'echo got-usr1; exit 3' USR1; echo ready; while :; do sleep 0.05; done"}, o);
    ASSERT_TRUE(sb) << sb.error().message();
    out.close_write();
    char buf[6] = {};
    ASSERT_EQ(read(out.r, buf, 6), 6);
    ASSERT_TRUE(sb->kill(SIGUSR1));
    EXPECT_EQ(out.read_all(), "got-usr1\n");
    auto r = sb->wait();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->exited);
    EXPECT_EQ(r->exit_code, 3);
}

TEST(Library, CommandKilledBySignalIsReportedAsSignal) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "kill -KILL $$"});
    ASSERT_TRUE(sb) << sb.error().message();
    auto r = sb->wait();
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->exited);
    EXPECT_EQ(r->term_signal, SIGKILL);
}

TEST(Library, DestroyingTheSandboxKillsEverythingInIt) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    pid_t init = -1;
    {
        auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30 & sleep 30"});
        ASSERT_TRUE(sb) << sb.error().message();
        init = sb->pid();
        ASSERT_GT(init, 0);
        EXPECT_TRUE(alive(init));  // control: the probe sees a running sandbox
    }
    EXPECT_FALSE(alive(init));
}

TEST(Library, SetupErrorsComeBackAsErrorsNotChildExits) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    auto sb = Sandbox::spawn(p, {"/no/such/command"});
    ASSERT_FALSE(sb);
    EXPECT_EQ(sb.error().kind(), agentjail::ErrorKind::command_not_found);
    ws.write("script", "#!/bin/sh\nexit 0\n", 0644);
    auto sb2 = Sandbox::spawn(p, {ws.path() + "/script"});
    ASSERT_FALSE(sb2);
    EXPECT_EQ(sb2.error().kind(), agentjail::ErrorKind::command_not_executable);
    // Control: the same script made executable runs.
    chmod((ws.path() + "/script").c_str(), 0755);
    auto sb3 = Sandbox::spawn(p, {ws.path() + "/script"});
    ASSERT_TRUE(sb3) << sb3.error().message();
    auto r = sb3->wait();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 0);
}

// SYS-05's host side: launching from a process with many busy threads works, and
// every sandbox gets its own init.
TEST(Library, SpawnFromAMultiThreadedHost) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (int i = 0; i < 8; ++i)
        busy.emplace_back([&stop] {
            while (!stop.load()) {
                std::vector<int> v(1000, 1);  // keeps malloc's locks busy across our clone
                (void)v;
            }
        });
    int ok = 0;
    for (int i = 0; i < 5; ++i) {
        auto sb = Sandbox::spawn(p, {"/bin/true"});
        if (!sb) {
            ADD_FAILURE() << sb.error().message();
            break;
        }
        auto r = sb->wait();
        if (r && r->exited && r->exit_code == 0) ++ok;
    }
    stop = true;
    for (auto& t : busy) t.join();
    EXPECT_EQ(ok, 5);
}

// PROC-06's thread case (a sandbox outlives its launching thread, dies with its
// launching process) is in test_launch_hygiene.cc.

// Launched from a thread that stays alive, a sandbox keeps running until it is told
// to stop.
TEST(Library, SandboxFromALiveThreadKeepsRunning) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30"});
    ASSERT_TRUE(sb) << sb.error().message();
    ajtest::sleep_ms(200);
    EXPECT_TRUE(alive(sb->pid()));
    ASSERT_TRUE(sb->kill(SIGTERM));
    auto r = sb->wait();
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->exited);
    EXPECT_EQ(r->term_signal, SIGTERM);
}

}  // namespace

// The network proxy's plumbing: a socket opened inside the sandbox's network
// namespace and served from outside. A client inside reaches it on loopback;
// the listening side lives in our process.
#include "guarded_launch.hpp"
#include "launch/launch.hpp"
#include "run/loop.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"

#include <sys/socket.h>

namespace {

TEST(Library, ProxySocketIsServedFromOutsideTheSandbox) {
    ajtest::TempDir ws;
    auto pol = agentjail::policy::load("default");
    ASSERT_TRUE(pol) << pol.error().message();
    pol->workspace_path = agentjail::policy::Located<std::string>{ws.path(), {}};
    pol->workspace_explicit = true;
    auto host = agentjail::plan::HostFacts::current();
    ASSERT_TRUE(host);
    auto plan = agentjail::plan::build(
        *pol, {"/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/3128; echo hello >&3; read -r reply <&3; echo \"$reply\""},
        *host);
    ASSERT_TRUE(plan) << plan.error().message();
    plan->proxy_port = 3128;
    Pipe out;
    agentjail::launch::Stdio stdio;
    stdio.out = out.w;
    agentjail::run::Loop loop;  // what the supervisor waits on; outlives the Process
    loop.start();
    ajtest::GuardedLaunch proc;  // the launch with the guard a run has (its placeholders)
    auto started = proc.spawn(*plan, stdio, loop.io());
    ASSERT_TRUE(started) << started.error().message();
    out.close_write();
    agentjail::sys::UniqueFd lsock = proc.process().take_proxy_socket();
    ASSERT_TRUE(lsock.valid());
    pollfd pfd{lsock.get(), POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 10000), 1);
    int c = accept4(lsock.get(), nullptr, nullptr, SOCK_CLOEXEC);
    ASSERT_GE(c, 0);
    char buf[16] = {};
    ASSERT_EQ(read(c, buf, 6), 6);
    EXPECT_EQ(std::string(buf, 6), "hello\n");
    ASSERT_EQ(write(c, "world\n", 6), 6);
    close(c);
    EXPECT_EQ(out.read_all(), "world\n");
    auto r = proc.wait();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 0);
}

// Control: without a proxy socket, the same client finds nothing listening inside.
TEST(Library, WithoutAProxySocketLoopbackHasNoListener) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    Pipe out;
    agentjail::SpawnOptions o;
    o.stdout_fd = out.w;
    auto sb = Sandbox::spawn(p, {"/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/3128 && echo connected || echo refused"}, o);
    ASSERT_TRUE(sb) << sb.error().message();
    out.close_write();
    EXPECT_EQ(out.read_all(), "refused\n");
    (void)sb->wait();
}

}  // namespace
