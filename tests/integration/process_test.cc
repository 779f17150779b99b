// SPDX-License-Identifier: Apache-2.0
// Integration: exit statuses, signal forwarding, and the lifetime of everything the
// command starts (background jobs, daemons, a killed supervisor), plus a pty.
#include "common.hpp"
#include "pty_shell.hpp"
#include "record.hpp"

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

using ajit::describe;
using ajit::Sandbox;

namespace {
std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

off_t file_size(const std::string& p) {
    struct stat st{};
    return stat(p.c_str(), &st) == 0 ? st.st_size : -1;
}

void kill_marked(const std::string& marker) {
    // Clean-up after a failure: these processes were started by this test.
    for (int pid : ajtest::pids_with_marker(marker)) kill(pid, SIGKILL);
}
}  // namespace

TEST_F(Sandbox, ExitStatusIsTheCommands) {
    auto ok = jail.run(with(jail.base(), {"--", "true"}));
    EXPECT_EQ(ok.status, 0) << describe(ok);
    auto three = jail.run(with(jail.base(), {"--", "sh", "-c", "exit 3"}));
    EXPECT_EQ(three.status, 3) << describe(three);
    auto sig = jail.run(with(jail.base(), {"--", "sh", "-c", "kill -TERM $$"}));
    EXPECT_EQ(sig.status, 128 + SIGTERM) << describe(sig);
    auto run_verb = jail.run(with({"run"}, with(jail.base(), {"--", "sh", "-c", "exit 4"})));
    EXPECT_EQ(run_verb.status, 4) << "`agentjail run` differs from the bare form\n" << describe(run_verb);
}

TEST_F(Sandbox, AgentjailFailuresExit125WithOneLineMessage) {
    struct Case {
        const char* what;
        std::vector<std::string> args;
    } cases[] = {
        {"bad policy name", with({"-p", "aj-no-such-policy"}, with(jail.base(), {"--", "true"}))},
        {"bad flag", with({"--aj-no-such-flag"}, with(jail.base(), {"--", "true"}))},
        {"--ro of a missing path", with(jail.base(), {"--ro", jail.ws() + "/aj-missing-dir", "--", "true"})},
    };
    for (const auto& c : cases) {
        auto r = jail.run(c.args);
        EXPECT_EQ(r.status, 125) << c.what << "\n" << describe(r);
        EXPECT_EQ(r.err.rfind("agentjail: ", 0), 0u) << c.what << ": stderr must start with 'agentjail: '\n" << r.err;
        EXPECT_FALSE(ajtest::trim(r.err).empty()) << c.what;
        EXPECT_EQ(ajtest::trim(r.err).find('\n'), std::string::npos) << c.what << ": more than one line\n" << r.err;
    }
}

TEST_F(Sandbox, NotExecutableIs126AndNotFoundIs127) {
    std::string script = jail.ws_dir().write("notexec.sh", "#!/bin/sh\necho ran\n", 0644);
    auto r126 = jail.run(with(jail.base(), {"--", script}));
    EXPECT_EQ(r126.status, 126) << describe(r126);
    EXPECT_FALSE(ajtest::contains(r126.out, "ran"));
    auto r127 = jail.run(with(jail.base(), {"--", "aj-no-such-command-xyz"}));
    EXPECT_EQ(r127.status, 127) << describe(r127);
    auto abs127 = jail.run(with(jail.base(), {"--", jail.ws() + "/aj-missing-binary"}));
    EXPECT_EQ(abs127.status, 127) << describe(abs127);
}

TEST_F(Sandbox, SignalsToAgentjailAreForwardedToTheCommand) {
    std::string ws = jail.ws();
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
        std::string name = sig == SIGTERM ? "TERM" : sig == SIGINT ? "INT" : "HUP";
        std::string ready = ws + "/ready-" + name, trapped = ws + "/trapped-" + name;
        ajtest::Child c({ajtest::agentjail_bin(), "-C", ws, "--", "sh", "-c",
                         "trap 'echo got-" + name + " > " + trapped + "; exit 42' " + name + "; : > " + ready +
                             "; while :; do sleep 0.05; done"},
                        opts);
        ASSERT_TRUE(ajtest::wait_for_file(ready, 5000)) << "command never started";
        ASSERT_EQ(kill(c.pid(), sig), 0);
        auto r = c.wait(5000);
        jail.record(r);
        EXPECT_FALSE(r.timed_out) << "agentjail did not end after SIG" << name << "\n" << describe(r);
        EXPECT_TRUE(r.status == 42 || r.status == 128 + sig) << "SIG" << name << "\n" << describe(r);
        EXPECT_EQ(ajtest::read_file(trapped), "got-" + name + "\n") << "the command never saw SIG" << name;
    }
}

TEST_F(Sandbox, NoProcessSurvivesTheCommand) {
    std::string marker = ajit::unique_name("aj-bg-");
    std::string script = jail.ws_dir().write(marker + ".sh", "while :; do sleep 0.2; done\n");
    auto r = jail.sh("sh " + script + " >/dev/null 2>&1 & sleep 0.1; echo started", {},
                     [] { ajtest::RunOptions o; o.timeout_ms = 5000; return o; }());
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(r.timed_out) << "agentjail waited for (or leaked) the background job";
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 2000)) << "a background job outlived the command";
    kill_marked(marker);
}

TEST_F(Sandbox, DaemonisedChildIsKilledWhenTheCommandExits) {
    std::string marker = ajit::unique_name("aj-daemon-");
    std::string alive = jail.ws() + "/alive";
    std::string daemon = jail.ws_dir().write(marker + ".sh", "while :; do date +%s%N >> " + alive + "; sleep 0.2; done\n");
    ajtest::RunOptions o;
    o.timeout_ms = 5000;
    // setsid + the subshell's fork: the daemon is reparented to init and in its own session.
    auto r = jail.sh("( setsid sh " + daemon + " </dev/null >/dev/null 2>&1 & ); sleep 0.5; exit 0", {}, o);
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(r.timed_out);
    // Positive control: the daemon really ran (and wrote) while the command lived.
    EXPECT_GE(ajtest::lines(ajtest::read_file(alive)).size(), 2u) << "the daemon never ran";
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 2000)) << "the daemon survived the command";
    ajtest::sleep_ms(100);
    off_t before = file_size(alive);
    ajtest::sleep_ms(600);
    EXPECT_EQ(file_size(alive), before) << "the daemon is still writing";
    kill_marked(marker);
}

TEST_F(Sandbox, SandboxDiesWithAKilledAgentjail) {
    std::string marker = ajit::unique_name("aj-orphan-");
    std::string alive = jail.ws() + "/alive";
    std::string loop = jail.ws_dir().write(marker + ".sh", "while :; do echo t >> " + alive + "; sleep 0.2; done\n");
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    ajtest::Child c({ajtest::agentjail_bin(), "-C", jail.ws(), "--", "sh", loop}, opts);
    ASSERT_TRUE(ajtest::wait_for_file(alive, 5000)) << "command never started";
    ASSERT_EQ(kill(c.pid(), SIGKILL), 0);
    EXPECT_EQ(c.wait_exit(2000), 128 + SIGKILL);
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 2000)) << "the sandbox outlived its supervisor";
    ajtest::sleep_ms(100);
    off_t before = file_size(alive);
    ajtest::sleep_ms(600);
    EXPECT_EQ(file_size(alive), before) << "the sandbox is still writing";
    kill_marked(marker);
    jail.record(c.wait(1000));
}

TEST_F(Sandbox, InteractiveCommandGetsATerminal) {
    int master = -1;
    std::string ws = jail.ws(), home = jail.home();
    pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
    ASSERT_GE(pid, 0) << "forkpty: " << std::strerror(errno);
    if (pid == 0) {
        setenv("HOME", home.c_str(), 1);
        std::string bin = ajtest::agentjail_bin();
        execl(bin.c_str(), bin.c_str(), "-C", ws.c_str(), "--", "sh", "-c",
              "test -t 0 && test -t 1 && echo tty-yes || echo tty-no", static_cast<char*>(nullptr));
        _exit(127);
    }
    std::string out;
    char buf[4096];
    for (int waited = 0; waited < 10000;) {
        pollfd p{master, POLLIN, 0};
        int n = poll(&p, 1, 100);
        if (n == 0) {
            waited += 100;
            continue;
        }
        ssize_t got = read(master, buf, sizeof buf);
        if (got <= 0) break;  // EIO once the slave side is closed
        out.append(buf, static_cast<size_t>(got));
    }
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    close(master);
    ajtest::RunOutput r;
    r.out = out;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    jail.record(r);
    EXPECT_TRUE(ajtest::contains(out, "tty-yes")) << describe(r);
    EXPECT_EQ(r.status, 0) << describe(r);
}

namespace {
// A sandboxed command that beats (appends a line to `beats` in the workspace every
// 20 ms) from a process that left the command's group and session (setsid), and
// ignores SIGTERM everywhere; the command itself waits, ignoring SIGTERM too.
struct Beating {
    std::string marker, beats, ready;
    std::unique_ptr<ajtest::Child> child;
};

Beating start_beating(ajtest::Jail& jail, const std::vector<std::string>& flags) {
    Beating b;
    b.marker = ajit::unique_name("aj-beat-");
    b.beats = jail.ws() + "/beats";
    b.ready = jail.ws() + "/ready";
    std::string loop = jail.ws_dir().write(
        b.marker + ".sh", "trap '' TERM HUP INT; while :; do echo b >> " + b.beats + "; sleep 0.02; done\n");
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    std::vector<std::string> argv = {ajtest::agentjail_bin(), "-C", jail.ws(), "--json"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "sh", "-c",
                             "trap '' TERM HUP INT; ( setsid sh " + loop + " </dev/null >/dev/null 2>&1 & ); : > " +
                                 b.ready + "; while :; do sleep 0.05; done"});
    b.child = std::make_unique<ajtest::Child>(argv, opts);
    return b;
}

size_t beats(const Beating& b) { return ajtest::lines(ajtest::read_file(b.beats)).size(); }

// The beats grow (the probe could make progress): the positive control.
bool beating(const Beating& b) {
    size_t before = beats(b);
    for (int i = 0; i < 100; ++i) {
        ajtest::sleep_ms(20);
        if (beats(b) >= before + 3) return true;
    }
    return false;
}
}  // namespace

// Under memory pressure the OOM killer takes the sandbox's processes before
// agentjail, which must outlive them to kill what is left and write the record (a
// Slurm step or a run without limits shares one cgroup): 500 above agentjail's own
// score, raised only. The shell's own score, set first, is the control: agentjail
// keeps it.
TEST_F(Sandbox, TheOomKillerTakesTheSandboxBeforeAgentjail) {
    auto r = ajtest::run({"/bin/sh", "-c",
                          "echo 100 > /proc/self/oom_score_adj && " + ajtest::shell_quote(ajtest::agentjail_bin()) +
                              " -C " + ajtest::shell_quote(jail.ws()) +
                              " -- sh -c 'echo inside=$(cat /proc/self/oom_score_adj)'; "
                              "echo outside=$(cat /proc/self/oom_score_adj)"},
                         {"HOME=" + jail.home()});
    EXPECT_TRUE(ajtest::contains(r.out, "inside=600\n")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "outside=100\n")) << describe(r);
}

// SIGTERM to agentjail with a command (and a daemon) that ignore it: passed on, and
// once the kill grace has passed everything inside is killed; agentjail exits 143
// and the record says it was stopped and had to kill.
TEST_F(Sandbox, SigtermEndsACommandThatIgnoresItAfterTheKillGrace) {
    Beating b = start_beating(jail, {"--kill-grace", "1s"});
    ASSERT_TRUE(ajtest::wait_for_file(b.ready, 10000)) << "command never started";
    ASSERT_TRUE(beating(b)) << "the daemon never beat: the probe proves nothing";
    ASSERT_EQ(kill(b.child->pid(), SIGTERM), 0);
    ajtest::sleep_ms(300);
    // Control: the SIGTERM was ignored inside, so only the grace can end the run.
    EXPECT_TRUE(beating(b)) << "the daemon stopped at SIGTERM: the test proves nothing";
    // The grace is 1s; a run that ignored it would go on for ever.
    int status = b.child->wait_exit(15000);
    auto r = b.child->wait(2000);
    jail.record(r);
    EXPECT_EQ(status, 128 + SIGTERM) << describe(r);
    auto rec = ajit::record_of(r);
    ASSERT_TRUE(rec.is_object()) << describe(r);
    EXPECT_EQ(rec["status"], "SG") << describe(r);
    EXPECT_EQ(rec["reason"], "stopped") << describe(r);
    EXPECT_EQ(rec["exit_status"], 128 + SIGTERM) << describe(r);
    EXPECT_EQ(rec["stop"]["signal"], "SIGTERM") << describe(r);
    EXPECT_EQ(rec["stop"]["killed"], true) << describe(r);
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(b.marker, 2000)) << "the daemon outlived the run";
    size_t after = beats(b);
    ajtest::sleep_ms(300);
    EXPECT_EQ(beats(b), after) << "something inside still beats";
    kill_marked(b.marker);
}

// A second ending signal does not wait for the grace (here a minute): at once.
TEST_F(Sandbox, ASecondSignalEndsTheRunAtOnce) {
    Beating b = start_beating(jail, {"--kill-grace", "60s"});
    ASSERT_TRUE(ajtest::wait_for_file(b.ready, 10000)) << "command never started";
    ASSERT_TRUE(beating(b)) << "the daemon never beat";
    ASSERT_EQ(kill(b.child->pid(), SIGHUP), 0);
    ajtest::sleep_ms(300);
    EXPECT_TRUE(beating(b)) << "the daemon stopped at SIGHUP: the test proves nothing";
    ASSERT_EQ(kill(b.child->pid(), SIGTERM), 0);
    // Far less than the grace: only the second signal can have ended it.
    int status = b.child->wait_exit(20000);
    auto r = b.child->wait(2000);
    jail.record(r);
    // The first signal is the one the run was stopped with.
    EXPECT_EQ(status, 128 + SIGHUP) << describe(r);
    auto rec = ajit::record_of(r);
    ASSERT_TRUE(rec.is_object()) << describe(r);
    EXPECT_EQ(rec["stop"]["signal"], "SIGHUP") << describe(r);
    EXPECT_EQ(rec["stop"]["killed"], true) << describe(r);
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(b.marker, 2000)) << "the daemon outlived the run";
    kill_marked(b.marker);
}

// A command that ends on SIGTERM within the grace: nothing is killed, and the exit
// status is still the signal's (as a shell reports a job it ended).
TEST_F(Sandbox, ACommandThatEndsWithinTheGraceIsNotKilled) {
    std::string ready = jail.ws() + "/ready";
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    ajtest::Child c({ajtest::agentjail_bin(), "-C", jail.ws(), "--json", "--kill-grace", "30s", "--", "sh", "-c",
                     "trap 'exit 0' TERM; : > " + ready + "; while :; do sleep 0.05; done"},
                    opts);
    ASSERT_TRUE(ajtest::wait_for_file(ready, 10000)) << "command never started";
    ASSERT_EQ(kill(c.pid(), SIGTERM), 0);
    auto r = c.wait(20000);
    jail.record(r);
    EXPECT_EQ(r.status, 128 + SIGTERM) << describe(r);
    auto rec = ajit::record_of(r);
    ASSERT_TRUE(rec.is_object()) << describe(r);
    EXPECT_EQ(rec["exit_code"], 0) << describe(r);  // the command's own, kept
    EXPECT_EQ(rec["stop"]["killed"], false) << describe(r);
}

// A SIGSTOP of agentjail (which it cannot catch): the init sees it stopped and stops
// every process inside, a daemon in a session of its own included; SIGCONT lets them
// go on.
TEST_F(Sandbox, SigstopOfAgentjailStopsEveryProcessInside) {
    Beating b = start_beating(jail, {});
    ASSERT_TRUE(ajtest::wait_for_file(b.ready, 10000)) << "command never started";
    ASSERT_TRUE(beating(b)) << "the daemon never beat: the probe proves nothing";
    ASSERT_EQ(kill(b.child->pid(), SIGSTOP), 0);
    // The init looks every 50 ms; a beat under way may still land.
    ajtest::sleep_ms(300);
    size_t stopped_at = beats(b);
    ajtest::sleep_ms(1000);
    EXPECT_EQ(beats(b), stopped_at) << "a process inside ran while agentjail was stopped";
    ASSERT_EQ(kill(b.child->pid(), SIGCONT), 0);
    EXPECT_TRUE(beating(b)) << "the sandbox did not go on after SIGCONT";
    ASSERT_EQ(kill(b.child->pid(), SIGKILL), 0);
    jail.record(b.child->wait(5000));
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(b.marker, 2000));
    kill_marked(b.marker);
}

// agentjail's threads during a run with a terminal, the proxy and a published port:
// two, the caller's and the run's one event loop, which the supervisor, the stdio
// relay, the proxy and the published ports all wait on (issue 24: there were five).
TEST_F(Sandbox, ATerminalTheProxyAndPublishedPortsShareTheRunsOneLoop) {
    // agentjail's threads once the command runs on a terminal of the test's own (the
    // command marks it ready only when its stdout is a terminal: the relay's pty).
    auto threads_during = [&](const std::vector<std::string>& flags) {
        const std::string ready = jail.ws() + "/ready";
        ::unlink(ready.c_str());
        std::vector<std::string> argv = {ajtest::agentjail_bin(), "-C", jail.ws()};
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.insert(argv.end(), {"--", "sh", "-c", "test -t 1 && : > " + ready + "; sleep 5"});
        std::vector<char*> args;
        for (auto& a : argv) args.push_back(a.data());
        args.push_back(nullptr);
        const std::string home = jail.home();
        int master = -1;
        pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
        if (pid < 0) return size_t{0};
        if (pid == 0) {
            setenv("HOME", home.c_str(), 1);
            execv(args[0], args.data());
            _exit(127);
        }
        size_t n = 0;
        char buf[4096];
        for (int waited = 0; waited < 10000 && !ajtest::exists(ready); waited += 50) {
            pollfd p{master, POLLIN, 0};
            if (poll(&p, 1, 50) > 0 && read(master, buf, sizeof buf) <= 0) break;
        }
        if (ajtest::exists(ready)) {
            ajtest::sleep_ms(300);
            n = ajtest::dir_entries("/proc/" + std::to_string(pid) + "/task").size();
        }
        (void)kill(pid, SIGKILL);
        int st = 0;
        (void)waitpid(pid, &st, 0);
        close(master);
        return n;
    };
    // Through the mounts view: the default view's server answers the kernel on
    // threads of its own (docs/workspace.md), which this count is not about.
    const size_t plain = threads_during({"--view", "mounts"});
    const size_t served = threads_during({"--view", "mounts", "--allow-host", "example.test", "--publish",
                                          std::to_string(ajtest::free_port())});
    // Control: the count reads agentjail's own threads, once the command ran on the
    // terminal (a run has more than one thread: the loop).
    ASSERT_GE(plain, 2u) << "the command never started on a terminal, or the count reads nothing";
    EXPECT_EQ(plain, 2u) << "a run with a terminal: " << plain << " threads";
    EXPECT_EQ(served, 2u) << "with a terminal, the proxy and a published port: " << served << " threads";
}
