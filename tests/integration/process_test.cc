// SPDX-License-Identifier: Apache-2.0
// Integration: exit statuses, signal forwarding, and the lifetime of everything the
// command starts (background jobs, daemons, a killed supervisor), plus a pty.
#include "common.hpp"

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
