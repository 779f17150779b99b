// SPDX-License-Identifier: Apache-2.0
// Escape tests, processes: host processes invisible (PROC-01), unsignalable (PROC-02),
// and nothing outlives the command (PROC-05).
#include "common.hpp"

#include "sys/syscalls.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace ajesc;

namespace {
// A host process whose cmdline carries marker: sh looping over short sleeps, so a
// SIGKILL of sh leaves nothing behind for long.
struct HostCanary {
    ajtest::TempDir dir{"aj-hostcanary"};
    std::string marker = unique_name("aj-hostcanary-");
    std::unique_ptr<ajtest::Child> child;
    HostCanary() {
        std::string script = dir.write(marker + ".sh", "while :; do sleep 0.2; done\n");
        child = std::make_unique<ajtest::Child>(std::vector<std::string>{"/bin/sh", script});
        for (int i = 0; i < 100 && ajtest::pids_with_marker(marker).empty(); ++i) ajtest::sleep_ms(10);
    }
    pid_t pid() const { return child->pid(); }
};

const char* const kNamespaces[] = {"pid", "mnt", "net", "ipc", "uts", "user", "cgroup"};
}  // namespace

// PROC-01: only sandbox processes are listed in /proc, the host canary's cmdline is
// nowhere, and every namespace differs from the host's.
// (sandbox-runtime integration.test.ts "should isolate PID namespace".)
TEST_F(Escape, PROC01_HostProcessesInvisible) {
    HostCanary canary;
    std::string script = "n=0; for p in /proc/[0-9]*; do n=$((n+1)); tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done;"
                         " echo count=$n;";
    for (const char* ns : kNamespaces) script += std::string(" echo ns_") + ns + "=$(readlink /proc/self/ns/" + ns + ");";
    script += " ps -e 2>/dev/null; true";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, canary.marker)) << "host process visible:\n" << r.out;
    EXPECT_LE(std::atoi(field(r.out, "count").c_str()), 8) << r.out;
    for (const char* ns : kNamespaces) {
        std::string host = host_link(std::string("/proc/self/ns/") + ns);
        std::string inside = field(r.out, std::string("ns_") + ns);
        EXPECT_FALSE(inside.empty() || inside == "<missing>") << ns << "\n" << r.out;
        EXPECT_NE(inside, host) << "the " << ns << " namespace is the host's";
    }
    // Positive control: the same listing on the host shows the canary.
    auto c = jail.host_sh(script);
    EXPECT_TRUE(ajtest::contains(c.out, canary.marker)) << "control: the probe misses host processes";
    EXPECT_TRUE(alive_and_running(canary.pid()));
}

// PROC-02: host pids are unreachable (ESRCH) for kill and pidfd_open; kill -9 -1 inside
// reaches only sandbox processes; the host canary survives. The killall probe refuses
// to run unless it is in a pid namespace other than the host's, so a broken sandbox can
// never make this test kill the host.
TEST_F(Escape, PROC02_SignalsCannotReachHostProcesses) {
    HostCanary canary;
    std::string H = std::to_string(canary.pid());
    ASSERT_GT(canary.pid(), 50) << "host pid too small to tell apart from sandbox pids";
    std::string t = helper("trysys");
    std::string host_pidns = host_link("/proc/self/ns/pid");
    ASSERT_FALSE(host_pidns.empty());
    // The shell execs the killall probe last: kill(-1) spares only init and the caller,
    // so the background victim must die and the host canary must not.
    auto r = jail.sh(t + " kill " + H + " 0 >/dev/null; echo k0=$?; " + t + " kill " + H + " 19 >/dev/null; echo stop=$?; " +
                     t + " kill " + H + " 9 >/dev/null; echo k9=$?; " + t + " pidfd_open " + H +
                     " >/dev/null; echo pidfd=$?; sleep 5 & exec " + t + " killall " + host_pidns + " 9 $!");
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(std::atoi(field(r.out, "k0").c_str()), ESRCH) << r.out;
    EXPECT_EQ(std::atoi(field(r.out, "stop").c_str()), ESRCH) << r.out;
    EXPECT_EQ(std::atoi(field(r.out, "k9").c_str()), ESRCH) << r.out;
    int pidfd = std::atoi(field(r.out, "pidfd").c_str());
    EXPECT_TRUE(pidfd == ESRCH || pidfd == EPERM || pidfd == ENOSYS) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "refusing")) << "the sandbox shares the host pid namespace\n" << r.out;
    ajtest::sleep_ms(50);
    EXPECT_TRUE(alive_and_running(canary.pid())) << "the host canary was killed or stopped";

    // Positive controls: inside, kill -1 did reach the sandbox victim; from the host the
    // same probe reaches the canary (signal 0).
    EXPECT_EQ(field(r.out, "victim"), "dead") << "control: kill -1 reached nothing\n" << r.out;
    auto c = jail.host_sh(t + " kill " + H + " 0");
    EXPECT_EQ(c.status, 0) << describe(c);
    EXPECT_TRUE(alive_and_running(canary.pid()));
}

// PROC-05: daemons (setsid + double fork), nohup'd jobs and processes ignoring SIGTERM
// and SIGHUP are all gone once the command exits; their files stop growing.
// (sandbox-runtime "should terminate background processes when sandbox exits".)
TEST_F(Escape, PROC05_NoProcessSurvivesTheCommand) {
    std::string marker = unique_name("aj-proc05-");
    std::string sleep_marker = "987." + std::to_string(100000 + std::rand() % 800000);
    std::string ws = jail.ws(), alive = ws + "/alive";
    std::string daemon = jail.ws_dir().write(marker + "-daemon.sh",
                                             "trap '' TERM HUP INT; while :; do date +%s%N >> " + alive + "; sleep 0.2; done\n");
    std::string stubborn = jail.ws_dir().write(marker + "-stubborn.sh", "trap '' TERM HUP INT; while :; do sleep 0.2; done\n");
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    ajtest::Child aj({ajtest::agentjail_bin(), "-C", ws, "--", "sh", "-c",
                      "( setsid sh " + daemon + " </dev/null >/dev/null 2>&1 & ); "
                      "nohup sleep " + sleep_marker + " </dev/null >/dev/null 2>&1 & "
                      "sh " + stubborn + " </dev/null >/dev/null 2>&1 & "
                      "sleep 0.3; : > " + ws + "/ready; sleep 0.2; exit 0"},
                     opts);
    ASSERT_TRUE(ajtest::wait_for_file(ws + "/ready", 5000));
    // Positive control: while the command lives, the host sees every resident process.
    EXPECT_FALSE(ajtest::pids_with_marker(marker + "-daemon").empty()) << "control: daemon not found";
    EXPECT_FALSE(ajtest::pids_with_marker(marker + "-stubborn").empty()) << "control: stubborn not found";
    EXPECT_FALSE(ajtest::pids_with_marker(sleep_marker).empty()) << "control: nohup sleep not found";
    auto r = aj.wait(5000);
    jail.record(r);
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(r.timed_out) << "agentjail did not return after the command exited";
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 2000)) << "a daemon survived the command";
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(sleep_marker, 500)) << "nohup sleep survived the command";
    ajtest::sleep_ms(100);
    struct stat a{}, b{};
    stat(alive.c_str(), &a);
    ajtest::sleep_ms(600);
    stat(alive.c_str(), &b);
    EXPECT_EQ(a.st_size, b.st_size) << "the daemon is still writing";
    EXPECT_GT(a.st_size, 0) << "control: the daemon never wrote";
    kill_marked(marker);
    kill_marked(sleep_marker);
}

// PROC-06, the supervisor stopped: the freeze of a stopped run is asked of the init
// from outside only (agentjail's signals read ssi_pid 0 in the sandbox's pid
// namespace). The sandbox sending the freeze request (and the thaw) to its own init
// does not stop its processes: a daemon in a session of its own keeps beating.
// Control: the beats are counted before, so a probe that never ran cannot pass.
// Without Landlock the signals reach the init, which ignores them; with Landlock
// ABI 6 the kernel refuses them first (EPERM: the init is outside the command's
// domain, docs/landlock.md). Both are run.
TEST_F(Escape, PROC06_TheSandboxCannotFreezeItselfThroughItsInit) {
    const bool scoped = agentjail::sys::landlock_abi() >= 6;
    const std::string freeze = std::to_string(SIGRTMIN + 4), thaw = std::to_string(SIGRTMIN + 5);
    const std::string beats = jail.ws() + "/beats";
    std::string script =
        "trap '' " + freeze + " " + thaw + "; ( setsid sh -c 'while :; do echo b >> beats; sleep 0.02; done' "
        "</dev/null >/dev/null 2>&1 & ); sleep 0.5; echo before=$(wc -l < beats); kill -" + freeze +
        " 1; echo freeze-rc=$?; sleep 0.5; a=$(wc -l < beats); sleep 0.5; echo gap=$(( $(wc -l < beats) - a )); kill -" +
        thaw + " 1; echo thaw-rc=$?";
    for (const bool landlock : {false, true}) {
        SCOPED_TRACE(landlock ? "default" : "--landlock off");
        ::unlink(beats.c_str());
        auto r = jail.sh(script, landlock ? std::vector<std::string>{} : std::vector<std::string>{"--landlock", "off"});
        ASSERT_EQ(r.status, 0) << describe(r);
        EXPECT_GE(std::atoi(field(r.out, "before").c_str()), 3) << "control: the daemon never beat\n" << describe(r);
        // The signal reached the init (pid 1 has a handler for every signal), or
        // Landlock's scope refused it...
        EXPECT_EQ(field(r.out, "freeze-rc"), landlock && scoped ? "1" : "0") << describe(r);
        // ...and froze nothing: half a second brings several beats.
        EXPECT_GE(std::atoi(field(r.out, "gap").c_str()), 3) << "the sandbox froze itself\n" << describe(r);
    }
}
