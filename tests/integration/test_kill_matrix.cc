// SPDX-License-Identifier: Apache-2.0
// SIGKILL at every stage of the launch and the run (issue 13). A forked launcher
// (this test's child, the way an embedding program or the CLI is one) arms a
// fault point; either the process that reaches the point is SIGKILLed there (the
// launcher, the sandbox's child before it is the init, or the command before its
// execve), or the process is held there while the test SIGKILLs the launcher and
// then lets it go on. Afterwards: no process of the run survives (this test is a
// child subreaper, so any survivor would be its child), no host mount was added,
// the next run works, and once it has run the workspace and TMPDIR hold nothing
// more than before and no cgroup of the dead launcher is left (the next run removes
// stale ones, as `agentjail gc` does). Two variants: the limits (a supervisor and a
// cgroup) and the proxy with TLS interception (a per-run CA in TMPDIR). The run's
// later stages (fault::run_points: the proxy, the stdio relay, the guard watch, the
// end of the run) get the same checks, with the launcher, the init or the command
// SIGKILLed while the launcher is held at the point (KillRun below).
// The terminal after a SIGKILL of the command is tested in test_terminal.cc; a
// SIGKILLed agentjail cannot restore it (no process of its own is left to), which
// the shell's line editor does at its next prompt.
#include "cgroup_support.hpp"
#include "common.hpp"

#include "api/api.hpp"

#include "guard/leftovers.hpp"
#include "util/fault.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace {

namespace fault = agentjail::fault;
using ajtest::Pipe;

using ajtest::dir_entries;

size_t host_mounts() {
    std::ifstream f("/proc/self/mountinfo");
    size_t n = 0;
    for (std::string l; std::getline(f, l);) ++n;
    return n;
}

struct Variant {
    const char* name;
    const char* toml;
};

const Variant variants[] = {
    {"limits", "extends = \"default\"\n[limits]\npids = 64\ntimeout = \"60s\"\n"},
    {"proxy", "extends = \"default\"\n[network]\nmode = \"proxy\"\n"
              "allow = [{ host = \"example.com\", methods = [\"GET\"] }]\n"},
};

agentjail::Result<agentjail::Policy> policy_for(const Variant& v, const ajtest::TempDir& conf,
                                                 const ajtest::TempDir& ws) {
    auto p = agentjail::Policy::load(conf.write(std::string(v.name) + ".toml", v.toml));
    if (!p) return p;
    if (auto ok = p->set_workspace(ws.path()); !ok) return std::move(ok).error();
    return p;
}

// Reaps every child (the launcher and, as subreaper, any orphan of the run) until
// none is left or the deadline passes; returns how many were still running then.
int reap_all(int timeout_ms) {
    for (int waited = 0;; waited += 10) {
        int st;
        pid_t p;
        while ((p = ::waitpid(-1, &st, WNOHANG)) > 0) {
        }
        if (p < 0 && errno == ECHILD) return 0;
        if (waited >= timeout_ms) break;
        ajtest::sleep_ms(10);
    }
    int left = 0;
    for (pid_t p; (p = ::waitpid(-1, nullptr, WNOHANG)) >= 0;) {
        if (p == 0) {
            ++left;
            break;
        }
    }
    return left;
}

// This process's children (as subreaper: the run's orphans too), with where each waits.
std::string survivors() {
    std::string out;
    DIR* d = ::opendir("/proc/self/task");
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/children");
        for (pid_t p; f >> p;) {
            std::string dir = "/proc/" + std::to_string(p);
            std::string cmd = ajtest::read_file(dir + "/cmdline");
            for (char& c : cmd)
                if (c == '\0') c = ' ';
            out += "  pid " + std::to_string(p) + " waits in " + ajtest::read_file(dir + "/wchan") + ": " + cmd + "\n";
        }
    }
    ::closedir(d);
    return out;
}

class KillMatrix : public ::testing::TestWithParam<std::tuple<int, int, bool>> {
protected:
    void SetUp() override { ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }
    void TearDown() override {
        ::prctl(PR_SET_CHILD_SUBREAPER, 0);
        fault::disarm();
    }
};

// What a killed run must not leave: a process (this test is a subreaper, so any
// survivor is its child), a host mount, and, once the next run (from this process,
// with the same TMPDIR, workspace and state directory) has worked, anything in the
// workspace or TMPDIR or a cgroup of the killed launcher. Unsets TMPDIR and
// XDG_STATE_HOME.
using PolicyMaker = std::function<agentjail::Result<agentjail::Policy>()>;

// What the host had before the killed run, and the word its command line carries.
struct Before {
    std::set<std::string> ws;
    size_t mounts = host_mounts();
    std::string marker = ajit::unique_name("aj-kill-");
};

// Forks the launcher: it runs argv + the marker in a sandbox of policy() with point
// armed (its report on report, released by the test closing release), stdin and
// stdout on /dev/null, TMPDIR tmp. Only the test holds the release pipe's write end:
// a held process reads EOF when the test closes it, never waits on an end of its own.
pid_t fork_launcher(Pipe& report, Pipe& release, const ajtest::TempDir& tmp, const char* point,
                    fault::Action action, const PolicyMaker& policy, std::vector<std::string> argv,
                    const Before& before) {
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(release.w);
        ::close(report.r);
        // The relay copies the command's output somewhere that is not the test's log.
        int null = ::open("/dev/null", O_RDWR);
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::setenv("TMPDIR", tmp.path().c_str(), 1);
        auto p = policy();
        if (!p) ::_exit(3);
        fault::arm(point, action, report.w, release.r);
        argv.back() += "; echo " + before.marker;
        auto sb = agentjail::Sandbox::spawn(*p, argv);
        if (!sb) ::_exit(4);
        auto r = sb->wait();
        ::_exit(r ? 0 : 5);
    }
    ::close(report.w);
    report.w = -1;
    return pid;
}

void expect_nothing_left(const std::string& after, pid_t launcher, const Before& before,
                         const ajtest::TempDir& ws, const ajtest::TempDir& tmp,
                         const PolicyMaker& next_policy) {
    const std::string& marker = before.marker;
    EXPECT_EQ(reap_all(5000), 0) << "a process of the run is still alive after " << after << ":\n"
                                 << survivors();
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 1000)) << "the command survived " << after;
    EXPECT_EQ(host_mounts(), before.mounts) << "a host mount was left after " << after;

    ::setenv("TMPDIR", tmp.path().c_str(), 1);
    auto next_p = next_policy();
    ASSERT_TRUE(next_p) << next_p.error().message();
    {
        // In a scope of its own: the run's proxy (and its CA directory) ends with it.
        auto next = agentjail::Sandbox::spawn(*next_p, {"/bin/sh", "-c", "exit 3"});
        ::unsetenv("TMPDIR");
        ::unsetenv("XDG_STATE_HOME");
        ASSERT_TRUE(next) << "the next run failed after " << after << ": "
                          << next.error().message();
        auto r = next->wait();
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->exit_code, 3);
    }
    EXPECT_EQ(dir_entries(ws.path()), before.ws) << "the workspace keeps what the killed run made";
    std::string tmp_left;
    for (const auto& e : dir_entries(tmp.path())) tmp_left += e + " ";
    EXPECT_EQ(tmp_left, "") << "TMPDIR keeps what the killed run made";
    EXPECT_TRUE(ajit::groups_of(launcher).empty()) << "a cgroup of the killed launcher is left";
}

TEST_P(KillMatrix, NothingSurvivesAndTheNextRunWorks) {
    const auto [vi, pi, hold] = GetParam();
    const Variant& v = variants[vi];
    const char* point = fault::launch_points[pi];
    ajtest::TempDir ws("aj-killws"), tmp("aj-killtmp"), conf("aj-killconf"), state("aj-killstate");
    // The runs' journals (guard/leftovers.hpp) in a directory of this test's own.
    ::setenv("XDG_STATE_HOME", state.path().c_str(), 1);
    auto probe = policy_for(v, conf, ws);
    ASSERT_TRUE(probe) << probe.error().message();
    {
        // The variant must run here at all (cgroups for the limits): a run that cannot
        // start proves nothing about what a killed one leaves.
        auto sb = agentjail::Sandbox::spawn(*probe, {"/bin/true"});
        if (!sb) GTEST_SKIP() << v.name << " cannot run here: " << sb.error().message();
        (void)sb->wait();
    }
    const Before before{dir_entries(ws.path())};
    const PolicyMaker policy = [&] { return policy_for(v, conf, ws); };
    Pipe report(0), release(0);
    pid_t launcher =
        fork_launcher(report, release, tmp, point, hold ? fault::Action::hold : fault::Action::kill,
                      policy, {"/bin/sh", "-c", "sleep 30"}, before);
    ASSERT_GE(launcher, 0);
    if (hold) {
        // The process at the point says so; then its launcher dies, and it goes on.
        std::string line = report.line(10000);
        ASSERT_TRUE(ajtest::contains(line, point)) << "no report from " << point << ": '" << line << "'";
        ASSERT_EQ(::kill(launcher, SIGKILL), 0);
        ajtest::sleep_ms(50);
        release.close_write();
    } else {
        // The process at the point is SIGKILLed there; a launcher that goes on notices
        // (an init or command it loses) and ends, or is killed here after 3 s.
        ajtest::sleep_ms(300);
        if (::waitpid(launcher, nullptr, WNOHANG) == 0) {
            // Still running: its sandbox went on without the killed process or the
            // launcher waits on one that will not come. Either way: SIGKILL it too.
            ::kill(launcher, SIGKILL);
        }
    }
    expect_nothing_left(point, launcher, before, ws, tmp, policy);
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<int, int, bool>>& info) {
    const auto [vi, pi, hold] = info.param;
    std::string n = std::string(variants[vi].name) + "_" + fault::launch_points[pi] + (hold ? "_launcher" : "_there");
    for (char& c : n)
        if (c == '.' || c == '-') c = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(EveryStage, KillMatrix,
                         ::testing::Combine(::testing::Range(0, 2), ::testing::Range(0, fault::n_launch_points),
                                            ::testing::Bool()),
                         case_name);

// A sandbox that outlives its killed launcher (die_with_parent = false) still has
// its placeholders mounted: removing them on the host would detach those mounts
// inside and let it create the protected names. The sweep leaves them while the
// sandbox's init lives and removes them once it is gone; the removal is the control.
TEST(KillMatrixJournal, PlaceholdersOfALiveSandboxAreKept) {
    // As subreaper, as in the matrix: the outliving sandbox becomes this test's
    // child, which is the positive control of the matrix's survivor probe.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    ajtest::TempDir ws("aj-killws"), conf("aj-killconf"), state("aj-killstate");
    ::setenv("XDG_STATE_HOME", state.path().c_str(), 1);
    const auto before = dir_entries(ws.path());
    const std::string marker = ajit::unique_name("aj-keep-");
    const std::string started = ws.path() + "/started";
    pid_t launcher = ::fork();
    ASSERT_GE(launcher, 0);
    if (launcher == 0) {
        auto p = agentjail::Policy::load(
            conf.write("keep.toml", "extends = \"default\"\n[process]\ndie_with_parent = false\n"
                                  "[workspace]\nview = \"mounts\"\n"));  // placeholders are its
        if (!p || !p->set_workspace(ws.path())) ::_exit(3);
        auto sb = agentjail::Sandbox::spawn(*p, {"/bin/sh", "-c", "touch " + started + "; sleep 30; echo " + marker});
        if (!sb) ::_exit(4);
        for (int i = 0; i < 500 && !ajtest::exists(started); ++i) ajtest::sleep_ms(10);
        ::kill(::getpid(), SIGKILL);
    }
    int st = 0;
    ::waitpid(launcher, &st, 0);
    ASSERT_TRUE(WIFSIGNALED(st)) << "launcher status " << st;
    ASSERT_FALSE(ajtest::pids_with_marker(marker).empty()) << "the sandbox did not outlive its launcher";
    EXPECT_GT(reap_all(200), 0) << "the survivor probe does not see a sandbox that outlived its launcher";
    const auto during = dir_entries(ws.path());
    EXPECT_GT(during.size(), before.size() + 1) << "no placeholders to keep: the probe proves nothing";
    auto sweep = agentjail::guard::sweep_journals();
    EXPECT_TRUE(sweep.removed.empty()) << "removed " << sweep.removed.size() << " of a live sandbox's";
    EXPECT_EQ(dir_entries(ws.path()), during);
    for (int pid : ajtest::pids_with_marker(marker)) ::kill(pid, SIGKILL);
    ASSERT_TRUE(ajtest::wait_no_pids_with_marker(marker, 3000));
    EXPECT_EQ(reap_all(3000), 0) << survivors();
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
    // The init may take a moment to go after its last process: the sweep is retried.
    for (int i = 0; i < 100 && dir_entries(ws.path()).size() > before.size() + 1; ++i) {
        (void)agentjail::guard::sweep_journals();
        ajtest::sleep_ms(30);
    }
    auto after = dir_entries(ws.path());
    after.erase("started");
    EXPECT_EQ(after, before) << "the sweep did not remove them once the sandbox was gone";
    ::unsetenv("XDG_STATE_HOME");
}

// ---- the run's later stages -------------------------------------------------------
//
// Each point of fault::run_points is one of the launcher's threads while the command
// runs, or the launcher's end of the run. The launcher is held there (its report is
// the control that the run really reached the point), and then one process is
// SIGKILLed: the launcher, or (where they still run) the sandbox's init or its
// command, after which the launcher is let go on and must end the run by itself.

enum class Victim { launcher, init, command };

// What makes a run reach a point: its policy, its command, and what the host does.
struct Scenario {
    std::string toml;
    std::string script;        // run by /bin/bash -c, with the marker appended
    bool victims = true;       // the init and the command still run at the point
    bool touch_guard = false;  // the host replaces the workspace's .env until the point is hit
    // Where toml cannot run (no cgroup for an unprivileged user): the point is reached
    // without what toml adds (the guard watch's freeze), so it runs with this instead.
    std::string fallback;
};

// A listening socket on 127.0.0.1 that never accepts: the kernel completes the
// proxy's connection to it (the backlog), which is all a tunnel needs to start.
struct Upstream {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    std::uint16_t port = 0;
    Upstream() {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::listen(fd, 8) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            return;
        port = ntohs(a.sin_port);
    }
    ~Upstream() {
        if (fd >= 0) ::close(fd);
    }
};

std::optional<Scenario> scenario(const std::string& point, std::uint16_t upstream) {
    const std::string limits = "extends = \"default\"\n[limits]\npids = 64\ntimeout = \"60s\"\n";
    const std::string proxy =
        "extends = \"default\"\n[network]\nmode = \"proxy\"\nallow = [\"example.test:" +
        std::to_string(upstream) + "\"]\n[network.hosts]\n\"example.test\" = \"127.0.0.1\"\n";
    const std::string plain = "extends = \"default\"\n";
    const std::string connect = "exec 3<>/dev/tcp/127.0.0.1/3128 || exit 90; ";
    if (point == "proxy.after-accept")
        return Scenario{proxy, connect + "sleep 30", true, false, ""};
    if (point == "proxy.tunnel")
        return Scenario{proxy,
                        connect + "printf 'CONNECT example.test:" + std::to_string(upstream) +
                            " HTTP/1.1\\r\\n\\r\\n' >&3; sleep 30",
                        true, false, ""};
    if (point == "relay.copy") return Scenario{plain, "echo output; sleep 30", true, false, ""};
    // The guard that re-applies a mount the host replaced is the mounts view's.
    const std::string mounts = "\n[workspace]\nview = \"mounts\"\n";
    if (point == "guard.reapply" || point == "guard.frozen")
        return Scenario{limits + mounts, "sleep 30", true, true, plain + mounts};
    if (point == "run.before-cleanup") return Scenario{proxy, "true", false, false, ""};
    if (point == "cgroup.stats") return Scenario{limits, "true", false, false, ""};
    return std::nullopt;
}

// The children of a process (every thread's).
std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    const std::string task = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = ::opendir(task.c_str());
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(task + "/" + e->d_name + "/children");
        for (pid_t p; f >> p;) out.push_back(p);
    }
    ::closedir(d);
    return out;
}

class KillRun : public ::testing::TestWithParam<std::tuple<int, Victim>> {
protected:
    void SetUp() override { ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0); }
    void TearDown() override {
        ::prctl(PR_SET_CHILD_SUBREAPER, 0);
        fault::disarm();
        ::unsetenv("TMPDIR");
        ::unsetenv("XDG_STATE_HOME");
    }
};

TEST_P(KillRun, NothingSurvivesAndTheNextRunWorks) {
    const auto [pi, victim] = GetParam();
    const std::string point = fault::run_points[pi];
    Upstream upstream;
    ASSERT_NE(upstream.port, 0) << "no listening socket on 127.0.0.1";
    auto sc = scenario(point, upstream.port);
    ASSERT_TRUE(sc) << "no scenario reaches " << point << ": add one to scenario()";
    if (victim != Victim::launcher && !sc->victims)
        GTEST_SKIP() << "nothing of the sandbox runs at " << point;
    ajtest::TempDir ws("aj-killws"), tmp("aj-killtmp"), conf("aj-killconf"), state("aj-killstate");
    ::setenv("XDG_STATE_HOME", state.path().c_str(), 1);
    if (sc->touch_guard) ws.write(".env", "API_KEY=old\n");
    auto policy = [&]() -> agentjail::Result<agentjail::Policy> {
        auto p = agentjail::Policy::load(conf.write("run.toml", sc->toml));
        if (!p) return p;
        if (auto ok = p->set_workspace(ws.path()); !ok) return std::move(ok).error();
        return p;
    };
    for (;;) {
        auto probe = policy();
        ASSERT_TRUE(probe) << probe.error().message();
        auto sb = agentjail::Sandbox::spawn(*probe, {"/bin/true"});
        if (sb) {
            (void)sb->wait();
            break;
        }
        if (sc->fallback.empty())
            GTEST_SKIP() << point << "'s policy cannot run here: " << sb.error().message();
        std::cout << "[ note ] " << point
                  << " without what its policy adds, which cannot run here: "
                  << sb.error().message() << "\n";
        sc->toml = std::exchange(sc->fallback, std::string());
    }
    const Before before{dir_entries(ws.path())};
    Pipe report(0), release(0);
    pid_t launcher = fork_launcher(report, release, tmp, fault::run_points[pi], fault::Action::hold,
                                   policy, {"/bin/bash", "-c", sc->script}, before);
    ASSERT_GE(launcher, 0);
    std::string line;
    for (int waited = 0; waited < 15000 && line.empty(); waited += 100) {
        // A host editor's atomic save of a hidden name: the guard watch re-applies.
        if (sc->touch_guard) {
            ws.write(".env.swp", "API_KEY=new\n");
            ::rename((ws.path() + "/.env.swp").c_str(), (ws.path() + "/.env").c_str());
        }
        // Once something is there, the whole line (Pipe::line stops at its deadline).
        pollfd pf{report.r, POLLIN, 0};
        if (::poll(&pf, 1, 100) == 1) line = report.line(5000);
    }
    ASSERT_TRUE(ajtest::contains(line, point))
        << "the run never reached " << point << ": '" << line << "'";
    if (victim == Victim::launcher) {
        ASSERT_EQ(::kill(launcher, SIGKILL), 0);
    } else {
        // The launcher's children: the init, and the process held at the point when
        // that is not the launcher itself (the guard watch's helper); the init's only
        // child is the command.
        const pid_t held = std::atoi(line.substr(line.find(' ') + 1).c_str());
        auto inits = children_of(launcher);
        inits.erase(std::remove(inits.begin(), inits.end(), held), inits.end());
        ASSERT_EQ(inits.size(), 1u) << "the launcher's children at " << point;
        auto commands = children_of(inits[0]);
        ASSERT_EQ(commands.size(), 1u) << "the init's children at " << point;
        const pid_t target = victim == Victim::init ? inits[0] : commands[0];
        ASSERT_EQ(::kill(target, SIGKILL), 0);
    }
    ajtest::sleep_ms(50);
    release.close_write();
    if (victim != Victim::launcher) {
        // Let go on, the launcher ends the run by itself: wait() returns a result.
        int st = 0;
        pid_t got = 0;
        for (int waited = 0; waited < 15000 && (got = ::waitpid(launcher, &st, WNOHANG)) == 0;
             waited += 20)
            ajtest::sleep_ms(20);
        EXPECT_EQ(got, launcher) << "the launcher did not end its run after the kill at " << point;
        if (got == 0)
            ::kill(launcher, SIGKILL);
        else
            EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "launcher status " << st;
    }
    if (sc->touch_guard) {
        // What the host wrote stays the host's (not a leftover of the run).
        EXPECT_EQ(ajtest::read_file(ws.path() + "/.env"), "API_KEY=new\n");
    }
    expect_nothing_left(point, launcher, before, ws, tmp, policy);
}

std::string run_case_name(const ::testing::TestParamInfo<std::tuple<int, Victim>>& info) {
    const auto [pi, victim] = info.param;
    static const char* const who[] = {"launcher", "init", "command"};
    std::string n = std::string(fault::run_points[pi]) + "_" + who[static_cast<int>(victim)];
    for (char& c : n)
        if (c == '.' || c == '-') c = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(EveryStage, KillRun,
                         ::testing::Combine(::testing::Range(0, fault::n_run_points),
                                            ::testing::Values(Victim::launcher, Victim::init,
                                                              Victim::command)),
                         run_case_name);

// The window between making the placeholders and writing down what they are: a
// launcher killed there leaves them under the names of its own that its journal
// lists, and the sweep (the next run's, or `agentjail gc`) removes them. The
// control: the kill did leave them.
TEST(KillMatrixJournal, PlaceholdersOfALauncherKilledAsItMadeThemAreSwept) {
    ajtest::TempDir ws("aj-killws"), conf("aj-killconf"), state("aj-killstate");
    ::setenv("XDG_STATE_HOME", state.path().c_str(), 1);
    const auto before = dir_entries(ws.path());
    pid_t launcher = ::fork();
    ASSERT_GE(launcher, 0);
    if (launcher == 0) {
        // Placeholders are the mounts view's.
        auto p = agentjail::Policy::load(conf.write("ws.toml", "extends = \"default\"\n[workspace]\nview = \"mounts\"\n"));
        if (!p || !p->set_workspace(ws.path())) ::_exit(3);
        fault::arm("launch.placeholder-made", fault::Action::kill);
        (void)agentjail::Sandbox::spawn(*p, {"/bin/true"});
        ::_exit(4);
    }
    int st = 0;
    ASSERT_EQ(::waitpid(launcher, &st, 0), launcher);
    ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << "launcher status " << st;
    const auto left = dir_entries(ws.path());
    ASSERT_GT(left.size(), before.size())
        << "the kill left nothing: the sweep is not put to the test";
    auto sweep = agentjail::guard::sweep_journals();
    ::unsetenv("XDG_STATE_HOME");
    std::string kept;
    for (const auto& k : sweep.kept) kept += k + "\n";
    EXPECT_EQ(kept, "");
    EXPECT_EQ(sweep.removed.size(), left.size() - before.size());
    EXPECT_EQ(dir_entries(ws.path()), before) << "the sweep left what the killed launcher made";
    EXPECT_TRUE(dir_entries(state.path() + "/agentjail/leftovers").empty())
        << "its journal is left";
}

}  // namespace
