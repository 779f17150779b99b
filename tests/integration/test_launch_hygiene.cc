// SPDX-License-Identifier: Apache-2.0
// The launch's own hygiene (issue 13), seen from a library host: what the child
// starts with (no host handler, every signal blocked), what the init keeps (no fd of
// the caller's, no capability), what it is tied to (the launching process, not the
// thread), how long the launcher waits for a setup, and that a failure on one of
// agentjail's own threads ends the run with a result instead of ending the host.
// Stages are reached with the test-only fault points (util/fault.hpp).
#include "api/api.hpp"

#include "test_support.hpp"
#include "sys/syscalls.hpp"
#include "util/fault.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using agentjail::Policy;
using agentjail::Sandbox;
namespace fault = agentjail::fault;

Policy policy_in(const ajtest::TempDir& ws, const std::string& name = "default") {
    auto p = Policy::load(name);
    EXPECT_TRUE(p) << p.error().message();
    EXPECT_TRUE(p->set_workspace(ws.path()));
    return std::move(p).value();
}

// "Name:\tvalue" of /proc/PID/status, or "" (readable even for a non-dumpable init).
std::string status_field(pid_t pid, const std::string& name) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    for (std::string l; std::getline(f, l);)
        if (l.rfind(name + ":", 0) == 0) return ajtest::trim(l.substr(name.size() + 1));
    return "";
}

// The children of this process's threads, from /proc (the clone of a hung spawn).
std::vector<pid_t> children_of_self() {
    std::vector<pid_t> out;
    DIR* d = ::opendir("/proc/self/task");
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/children");
        for (pid_t p; f >> p;) out.push_back(p);
    }
    ::closedir(d);
    return out;
}

using ajtest::Pipe;

void note_usr1(int) {}

class FaultArmed : public ::testing::Test {
protected:
    void TearDown() override { fault::disarm(); }
};

// A host handler must never run in the child: with signals blocked around clone3 and
// CLONE_CLEAR_SIGHAND, the child (held at its first setup step) has every signal
// blocked and none caught, while this process catches SIGUSR1.
TEST_F(FaultArmed, TheChildStartsWithNoHostHandlerAndEverySignalBlocked) {
    struct sigaction sa {};
    sa.sa_handler = note_usr1;
    struct sigaction old {};
    ASSERT_EQ(::sigaction(SIGUSR1, &sa, &old), 0);
    // Positive control: this process does catch SIGUSR1 (bit 10 of SigCgt).
    const std::string own = status_field(::getpid(), "SigCgt");
    ASSERT_NE(std::stoull(own, nullptr, 16) & (1ULL << (SIGUSR1 - 1)), 0u) << own;

    ajtest::TempDir ws;
    Policy p = policy_in(ws, "minimal");
    Pipe report;
    fault::arm("child.before-root", fault::Action::hang, report.w);
    std::optional<agentjail::Result<Sandbox>> spawned;
    const auto before = children_of_self();
    std::thread t([&] { spawned.emplace(Sandbox::spawn(p, {"/bin/true"})); });
    ASSERT_EQ(report.line(10000), "child.before-root 1") << "the child never reached its first step";
    pid_t child = -1;
    for (pid_t c : children_of_self())
        if (std::find(before.begin(), before.end(), c) == before.end()) child = c;
    ASSERT_GT(child, 0);
    EXPECT_EQ(std::stoull(status_field(child, "SigCgt"), nullptr, 16), 0u)
        << "the child has handlers installed: " << status_field(child, "SigCgt");
    // Every signal but SIGKILL and SIGSTOP (which cannot be blocked) and glibc's two
    // reserved real-time signals 32 and 33 (which its sigfillset leaves out) is blocked.
    const unsigned long long unblockable =
        (1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)) | (1ULL << 31) | (1ULL << 32);
    EXPECT_EQ(std::stoull(status_field(child, "SigBlk"), nullptr, 16) | unblockable, 0xffffffffffffffffull)
        << status_field(child, "SigBlk");
    ::kill(child, SIGKILL);
    t.join();
    ASSERT_TRUE(spawned.has_value());
    // A child killed during its setup reports nothing: the spawn sees the end of the
    // setup channel and the wait says SIGKILL.
    if (*spawned) {
        auto r = (*spawned)->wait();
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_FALSE(r->exited);
        EXPECT_EQ(r->term_signal, SIGKILL);
    }
    ::sigaction(SIGUSR1, &old, nullptr);
}

// The wait for the setup has a deadline (limits.setup_timeout): a setup that hangs
// is killed and the spawn fails with a message that says so, in about that time.
TEST_F(FaultArmed, AHungSetupEndsAtTheSetupTimeout) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws, "minimal");
    ASSERT_TRUE(p.set_limit("setup_timeout", "1s"));
    Pipe report;
    fault::arm("child.before-root", fault::Action::hang, report.w);
    auto t0 = std::chrono::steady_clock::now();
    auto sb = Sandbox::spawn(p, {"/bin/true"});
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(sb);
    EXPECT_NE(sb.error().message().find("did not finish within 1s"), std::string::npos) << sb.error().message();
    EXPECT_GE(took, 0.9);
    EXPECT_LT(took, 20.0);
    // Control: the same policy, not held, starts at once.
    fault::disarm();
    auto ok = Sandbox::spawn(p, {"/bin/true"});
    ASSERT_TRUE(ok) << ok.error().message();
    auto r = ok->wait();
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->exited);
    EXPECT_EQ(r->exit_code, 0);
}

// A process of the setup that dies without a report (a crash: here a trap in the
// sandbox's init before its root, in it before it forks the command, and in the
// command's process before its execve) is the setup's failure (exit 125 from the
// CLI), not a command's exit status (it was 132 for SIGILL, 139 for SIGSEGV). Control:
// a command that dies the same way after its execve is the command's.
TEST_F(FaultArmed, ASetupThatCrashesIsASetupFailureNotTheCommandsStatus) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws, "default");
    for (const char* point : {"child.before-root", "child.before-fork", "command.before-exec"}) {
        fault::arm(point, fault::Action::crash);
        auto sb = Sandbox::spawn(p, {"/bin/true"});
        fault::disarm();
        ASSERT_FALSE(sb) << point << ": the run went on";
        EXPECT_EQ(sb.error().kind(), agentjail::ErrorKind::setup) << point;
        EXPECT_NE(sb.error().message().find("the sandbox's setup ended before the command started"), std::string::npos)
            << point << ": " << sb.error().message();
    }
    auto ok = Sandbox::spawn(p, {"/bin/sh", "-c", "kill -ILL $$"});
    ASSERT_TRUE(ok) << ok.error().message();
    auto r = ok->wait();
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->exited);
    EXPECT_EQ(r->term_signal, SIGILL);
}

TEST(Hygiene, SetupTimeoutIsCheckedWhenSet) {
    auto p = Policy::load("minimal");
    ASSERT_TRUE(p);
    EXPECT_FALSE(p->set_limit("setup_timeout", "0s"));
    EXPECT_FALSE(p->set_limit("setup_timeout", "2h"));
    EXPECT_FALSE(p->set_limit("setup_timeout", "soon"));
    EXPECT_TRUE(p->set_limit("setup_timeout", "90s"));
}

// The init holds nothing of the caller's: a pipe this process leaked (no
// close-on-exec) reaches EOF as soon as we close our end, while the sandbox still
// runs. The command never had it either (FS-12).
TEST(Hygiene, TheInitKeepsNoneOfTheCallersDescriptors) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    Pipe leaked(0);  // inherited by every clone of this process
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30"});
    ASSERT_TRUE(sb) << sb.error().message();
    ajtest::sleep_ms(200);
    ASSERT_TRUE(::kill(sb->pid(), 0) == 0) << "the sandbox should still run";
    leaked.close_write();
    EXPECT_TRUE(leaked.eof_within(3000)) << "a process of the sandbox still holds the caller's pipe";
    // As root the init's descriptors can be listed: only its own few remain (the
    // status and job-event pipes, the launcher's pidfd and stat, the freeze notes,
    // its signalfd; no publish pair here).
    if (::geteuid() == 0) {
        int n = 0;
        std::string fds;
        if (DIR* d = ::opendir(("/proc/" + std::to_string(sb->pid()) + "/fd").c_str())) {
            while (dirent* e = ::readdir(d))
                if (e->d_name[0] != '.') {
                    ++n;
                    fds += std::string(e->d_name) + " ";
                }
            ::closedir(d);
        }
        EXPECT_LE(n, 6) << "the init holds " << fds;
    }
    ASSERT_TRUE(sb->kill(SIGKILL));
    (void)sb->wait();
}

// Control for the test above: a second holder of the pipe (the command, given it as
// its stdout) does keep it open, so the probe can see a holder.
TEST(Hygiene, APipeHeldByTheCommandStaysOpen) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    Pipe out;
    agentjail::SpawnOptions o;
    o.stdout_fd = out.w;
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30"}, o);
    ASSERT_TRUE(sb) << sb.error().message();
    out.close_write();
    EXPECT_FALSE(out.eof_within(500)) << "the command's stdout closed early";
    ASSERT_TRUE(sb->kill(SIGKILL));
    (void)sb->wait();
    EXPECT_TRUE(out.eof_within(3000));
}

// The init gives up every capability before the command starts, and keeps
// no_new_privs: the command, which could reach it as pid 1, finds nothing to borrow.
TEST(Hygiene, TheInitHoldsNoCapabilities) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30"});
    ASSERT_TRUE(sb) << sb.error().message();
    ajtest::sleep_ms(100);
    for (const char* f : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
        EXPECT_EQ(status_field(sb->pid(), f), "0000000000000000") << f;
    EXPECT_EQ(status_field(sb->pid(), "NoNewPrivs"), "1");
    // Control: this process's own bounding set is not empty, so the read is real.
    EXPECT_NE(status_field(::getpid(), "CapBnd"), "0000000000000000");
    ASSERT_TRUE(sb->kill(SIGKILL));
    (void)sb->wait();
}

// PROC-06, thread case: a sandbox started from a worker thread that ends lives on
// (an embedding program's thread pool must not kill its sandboxes), and it is
// still tied to the process: see the next test.
TEST(Hygiene, ASandboxOutlivesItsLaunchingThread) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    std::optional<Sandbox> sb;
    std::string error;
    std::thread t([&] {
        auto s = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 0.5; exit 7"});
        if (s)
            sb.emplace(std::move(s).value());
        else
            error = s.error().message();
    });
    t.join();
    ASSERT_TRUE(sb.has_value()) << error;
    auto r = sb->wait();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->exited) << "killed by " << r->term_signal;
    EXPECT_EQ(r->exit_code, 7);
}

// Runs a sandbox in a forked launcher that then exits without waiting; returns
// whether the sandbox's shell (found by the marker in its command line, which it
// keeps: it does not exec) is gone within 3 s.
bool sandbox_dies_with_launcher(const std::string& policy, const ajtest::TempDir& ws, const std::string& marker) {
    std::string started = ws.path() + "/started";
    pid_t launcher = ::fork();
    if (launcher == 0) {
        auto p = Policy::load(policy);
        if (!p || !p->set_workspace(ws.path())) ::_exit(3);
        auto sb = Sandbox::spawn(*p, {"/bin/sh", "-c", "touch " + started + "; sleep 30; echo " + marker});
        if (!sb) ::_exit(4);
        for (int i = 0; i < 500 && !ajtest::exists(started); ++i) ajtest::sleep_ms(10);
        ::_exit(0);  // no wait(), no destructor: the launcher is simply gone
    }
    int st = 0;
    ::waitpid(launcher, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "launcher status " << st;
    return ajtest::wait_no_pids_with_marker(marker, 3000);
}

TEST(Hygiene, ASandboxDiesWithItsLaunchingProcess) {
    ajtest::TempDir ws;
    std::string marker = "aj-diewith-" + ajtest::canary().substr(10);
    EXPECT_TRUE(sandbox_dies_with_launcher("default", ws, marker)) << "the sandbox outlived its launcher";
    // Control: with die_with_parent = false the same sandbox lives on.
    ajtest::TempDir pol;
    std::string file = pol.write("keep.toml", "extends = \"default\"\n[process]\ndie_with_parent = false\n");
    std::string marker2 = marker + "-kept";
    EXPECT_FALSE(sandbox_dies_with_launcher(file, ws, marker2)) << "the control died too: the probe cannot tell";
    for (int pid : ajtest::pids_with_marker(marker2)) ::kill(pid, SIGKILL);
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker2, 3000));
}

// An exception on the supervisor's thread ends the run (the sandbox is killed, the
// result says why) and never reaches std::terminate of this process.
TEST_F(FaultArmed, ASupervisorFailureEndsTheRunWithAResult) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    ASSERT_TRUE(p.set_limit("timeout", "60s"));  // a supervisor thread for this run
    fault::arm("supervisor.throw", fault::Action::fail);
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30"});
    ASSERT_TRUE(sb) << sb.error().message();
    auto r = sb->wait();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_NE(r->internal_error.find("the supervisor failed (an injected fault)"), std::string::npos)
        << r->internal_error;
    EXPECT_FALSE(r->exited);
    EXPECT_EQ(r->term_signal, SIGKILL);
    EXPECT_LT(r->wall_time_s, 20.0);
}

TEST_F(FaultArmed, ARelayFailureEndsTheRunWithAResult) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    fault::arm("relay.throw", fault::Action::fail);
    Pipe out;
    agentjail::SpawnOptions o;
    o.stdout_fd = out.w;
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30"}, o);
    ASSERT_TRUE(sb) << sb.error().message();
    auto r = sb->wait();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_NE(r->internal_error.find("relay failed (an injected fault)"), std::string::npos) << r->internal_error;
    EXPECT_EQ(r->term_signal, SIGKILL);
    EXPECT_LT(r->wall_time_s, 20.0);
}

// Every launch point made to fail: the spawn returns an error naming it (or, for the
// command's last step, a result), nothing of the sandbox survives, and the next
// spawn in the same process works.
TEST_F(FaultArmed, AFailureAtEveryLaunchPointLeavesNothingBehind) {
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    // The probes' positive control: a sandbox that does run is seen both ways, by
    // its command's marker and as a child (its init) of this process.
    const auto before = children_of_self();
    {
        std::string marker = "aj-fault-control-" + ajtest::canary().substr(10);
        auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30; echo " + marker});
        ASSERT_TRUE(sb) << sb.error().message();
        bool seen = false;
        for (int i = 0; i < 200 && !seen; ++i, ajtest::sleep_ms(10)) seen = !ajtest::pids_with_marker(marker).empty();
        EXPECT_TRUE(seen) << "the marker probe cannot see a running command";
        EXPECT_NE(children_of_self(), before) << "the child probe cannot see a running init";
        ASSERT_TRUE(sb->kill(SIGKILL));
        (void)sb->wait();
    }
    for (int i = 0; i < fault::n_launch_points; ++i) {
        const char* point = fault::launch_points[i];
        SCOPED_TRACE(point);
        std::string marker = std::string("aj-fault-") + point + "-" + ajtest::canary().substr(10);
        fault::arm(point, fault::Action::fail);
        auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "sleep 30; echo " + marker});
        if (sb) {
            (void)sb->wait();
            ADD_FAILURE() << "the spawn succeeded past a failing " << point;
        } else {
            EXPECT_FALSE(sb.error().message().empty());
        }
        EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 3000)) << "a process survived " << point;
        EXPECT_EQ(children_of_self(), before) << "an init survived " << point;
        fault::disarm();
        auto next = Sandbox::spawn(p, {"/bin/sh", "-c", "exit 3"});
        ASSERT_TRUE(next) << next.error().message();
        auto r = next->wait();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->exit_code, 3);
    }
}

}  // namespace

namespace {

// Landlock's own points (util/fault.hpp): a ruleset the kernel refuses, and a layer
// silently off (the restriction skipped). Either way the spawn fails and says why,
// nothing survives, and the next spawn works: the probe, not the ruleset's return
// value, is what tells an enforced layer from one that is not.
TEST_F(FaultArmed, ALandlockLayerThatDoesNotHoldStopsTheLaunch) {
    if (agentjail::sys::landlock_abi() < 2)
        GTEST_SKIP() << "this kernel has no Landlock ABI 2 (docs/landlock.md): the layer is not applied here";
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    const auto before = children_of_self();
    const std::pair<const char*, const char*> cases[] = {
        {"command.landlock", "applying Landlock"},
        {"command.landlock-restrict", "the rules are not in force"},
    };
    for (const auto& [point, says] : cases) {
        SCOPED_TRACE(point);
        std::string marker = std::string("aj-fault-") + point + "-" + ajtest::canary().substr(10);
        fault::arm(point, fault::Action::fail);
        auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "echo " + marker + "; sleep 30"});
        if (sb) {
            (void)sb->wait();
            ADD_FAILURE() << "the command ran though " << point << " was armed";
        } else {
            EXPECT_NE(sb.error().message().find(says), std::string::npos) << sb.error().message();
        }
        EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 3000)) << "a process survived " << point;
        EXPECT_EQ(children_of_self(), before) << "an init survived " << point;
        fault::disarm();
    }
    // The control: unarmed, the same policy runs, with the layer in force.
    auto next = Sandbox::spawn(p, {"/bin/sh", "-c", "exit 3"});
    ASSERT_TRUE(next) << next.error().message();
    auto r = next->wait();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->exit_code, 3);
    EXPECT_NE(std::find(r->layers.begin(), r->layers.end(), "landlock"), r->layers.end());
    EXPECT_TRUE(r->degraded.empty()) << r->degraded.front();
}

// A probe refused before Landlock could answer (a filter above agentjail that refuses
// mknod, as systemd's PrivateDevices does): a best-effort run goes on and says the
// layer was not shown to hold; a required one does not start.
TEST_F(FaultArmed, ALandlockProbeThatCannotTellIsSaid) {
    if (agentjail::sys::landlock_abi() < 2)
        GTEST_SKIP() << "this kernel has no Landlock ABI 2 (docs/landlock.md): the layer is not applied here";
    ajtest::TempDir ws;
    Policy p = policy_in(ws);
    fault::arm("command.landlock-probe", fault::Action::fail);
    auto sb = Sandbox::spawn(p, {"/bin/sh", "-c", "exit 4"});
    ASSERT_TRUE(sb) << sb.error().message();
    auto r = sb->wait();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->exit_code, 4);
    EXPECT_NE(std::find(r->layers.begin(), r->layers.end(), "landlock"), r->layers.end());
    ASSERT_FALSE(r->degraded.empty());
    EXPECT_NE(r->degraded.front().find("not shown to hold"), std::string::npos) << r->degraded.front();
    EXPECT_NE(r->degraded.front().find("EPERM"), std::string::npos) << r->degraded.front();
    ajtest::TempDir conf;
    auto required = Policy::load(conf.write("req.toml", "extends = \"default\"\n[isolation]\nlandlock = \"required\"\n"));
    ASSERT_TRUE(required) << required.error().message();
    ASSERT_TRUE(required->set_workspace(ws.path()));
    auto refused = Sandbox::spawn(*required, {"/bin/sh", "-c", "exit 4"});
    ASSERT_FALSE(refused) << "a required Landlock ran though its probe could not tell";
    EXPECT_NE(refused.error().message().find("could not be shown"), std::string::npos) << refused.error().message();
}

}  // namespace
