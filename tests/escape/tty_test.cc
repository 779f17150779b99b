// SPDX-License-Identifier: Apache-2.0
// Escape tests, the caller's session and terminal (TTY-01, TTY-03 and the session
// attacks of issue 9): signals to process groups, stops that would freeze the
// supervisor, keystroke injection, terminal modes left behind, and stdio files
// reopened through /proc with more access than the caller gave.
#include "common.hpp"
#include "pty_shell.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace ajesc;

namespace {

std::string q(const std::string& s) { return ajtest::shell_quote(s); }

std::string join_q(const std::vector<std::string>& v) {
    std::string o;
    for (const auto& w : v) o += (o.empty() ? "" : " ") + q(w);
    return o;
}

// agentjail with the jail's base flags, as one shell word list.
std::string aj(const ajtest::Jail& jail, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> v{ajtest::agentjail_bin()};
    auto b = jail.base();
    v.insert(v.end(), b.begin(), b.end());
    v.insert(v.end(), flags.begin(), flags.end());
    return join_q(v);
}

// A shell script in a process group of its own (setsid), as a non-interactive
// shell runs a pipeline: agentjail shares that group with the script and its
// background canary.
ajtest::RunOutput in_own_group(const ajtest::Jail& jail, const std::string& script,
                               int timeout_ms = 30000) {
    ajtest::RunOptions o;
    o.env = {"HOME=" + jail.home()};
    o.timeout_ms = timeout_ms;
    return ajtest::run_with({"setsid", "-w", "/bin/sh", "-c", script}, o);
}

struct Shell {
    ajtest::Jail& jail;
    ajtest::PtyShell sh;
    explicit Shell(ajtest::Jail& j, unsigned short rows = 30, unsigned short cols = 100)
        : jail(j), sh(rows, cols, j.home(), j.ws()) {}
};

}  // namespace

// kill(0, SIGKILL) inside reaches the sandbox's own process group only: agentjail,
// the calling script and its other children live on. Control: the same call from a
// process of the script's group kills the script and its background canary.
TEST_F(Escape, SESSION01_KillZeroReachesNothingOutside) {
    const std::string probe =
        "sleep 30 & c=$!; %RUN% sh -c 'kill -KILL 0'; echo rc=$?; "
        "if kill -0 $c 2>/dev/null; then echo canary=alive; kill $c; else echo canary=dead; fi";
    std::string script = probe;
    script.replace(script.find("%RUN%"), 5, aj(jail) + " --");
    auto r = in_own_group(jail, script);
    EXPECT_EQ(field(r.out, "rc"), "137") << describe(r);
    EXPECT_EQ(field(r.out, "canary"), "alive") << describe(r);

    std::string control = probe;
    control.replace(control.find("%RUN%"), 5, "");
    auto c = in_own_group(jail, control);
    EXPECT_EQ(field(c.out, "canary"), "<missing>") << "control: kill(0) did not reach the script\n"
                                                   << describe(c);
    EXPECT_EQ(c.status, 128 + SIGKILL) << describe(c);
}

// kill(0, SIGSTOP) from the command, with a helper that left its group beforehand
// and keeps working: agentjail is not stopped, so its wall clock ends the run and
// the helper never gets to write its marker. Control: under a plain supervisor in
// the same process group (a shell), the stop freezes the supervisor itself.
TEST_F(Escape, SESSION02_StopZeroCannotFreezeTheSupervisor) {
    std::string marker = jail.ws() + "/survived";
    std::string inner =
        "(setsid sh -c 'sleep 4; echo x > " + marker + "' &) ; kill -STOP 0; sleep 10";
    std::string script =
        aj(jail, {"-t", "1", "--kill-grace", "1"}) + " -- sh -c " + q(inner) + "; echo rc=$?";
    auto r = in_own_group(jail, script, 20000);
    EXPECT_FALSE(r.timed_out) << "agentjail was frozen\n" << describe(r);
    EXPECT_EQ(field(r.out, "rc"), "124") << describe(r);
    ajtest::sleep_ms(4500);
    EXPECT_FALSE(ajtest::exists(marker)) << "a sandbox process outlived the wall clock";

    // Control: a shell supervising `kill -STOP 0` in its own group stops with it.
    ajtest::TempDir d("aj-stopctl");
    ajtest::RunOptions o;
    ajtest::Child child({"setsid", "/bin/sh", "-c", "sh -c 'kill -STOP 0'; echo supervisor-ran"},
                        o);
    char state = '\0';
    for (int i = 0; i < 100; ++i) {
        auto pids = ajtest::pids_with_marker("supervisor-ran");
        for (int p : pids) state = process_state(p);
        if (state == 'T') break;
        ajtest::sleep_ms(20);
    }
    EXPECT_EQ(state, 'T') << "control: the stop did not reach the supervising shell";
    for (int p : ajtest::pids_with_marker("supervisor-ran")) kill(-p, SIGKILL), kill(p, SIGKILL);
}

// TTY-01 under --policy minimal (no seccomp filter): TIOCSTI succeeds, but on the
// sandbox's own pty, so the line never reaches the user's shell. Control: the same
// probe run by the shell itself gets its line run.
TEST_F(Escape, TTY01_InjectionLandsInTheSandboxsOwnPty) {
    Shell s(jail);
    ASSERT_TRUE(s.sh.ok()) << s.sh.output();
    std::string marker = jail.ws() + "/pwned";
    std::string line = "touch " + marker + "|";
    std::string out = s.sh.run(aj(jail, {"--policy", "minimal"}) + " -- " + q(helper("ttyinject")) +
                               " " + q(line));
    EXPECT_TRUE(ajtest::contains(out, "tiocsti=OK")) << "the probe could not even inject inside:\n"
                                                     << out;
    // Whatever was queued on the user's terminal would run now.
    (void)s.sh.run("sleep 0.5; true");
    EXPECT_FALSE(ajtest::exists(marker)) << "the injected line ran in the user's shell";
    EXPECT_FALSE(ajtest::contains(out, "tioclinux=OK")) << out;

    std::string control = jail.ws() + "/control";
    (void)s.sh.run(q(helper("ttyinject")) + " " + q("touch " + control + "|"));
    (void)s.sh.run("sleep 0.5; true");
    EXPECT_TRUE(ajtest::exists(control))
        << "control: TIOCSTI on the user's terminal did not inject\n"
        << s.sh.output();
}

// The default policy still refuses TIOCSTI, on its own pty too.
TEST_F(Escape, TTY01_DefaultPolicyStillRefusesTiocsti) {
    Shell s(jail);
    ASSERT_TRUE(s.sh.ok()) << s.sh.output();
    std::string out = s.sh.run(aj(jail) + " -- " + q(helper("ttyinject")) + " x");
    EXPECT_TRUE(ajtest::contains(out, "tiocsti=EPERM")) << out;
    // Control: minimal lets the same call through (on the sandbox's pty).
    std::string c =
        s.sh.run(aj(jail, {"--policy", "minimal"}) + " -- " + q(helper("ttyinject")) + " x");
    EXPECT_TRUE(ajtest::contains(c, "tiocsti=OK")) << c;
}

// `stty -echo raw` inside changes the sandbox's pty only: the user's terminal is
// exactly as before (stty -g). Control: the same stty run by the shell changes it.
TEST_F(Escape, TTY03_TerminalModesSetInsideStayInside) {
    Shell s(jail);
    ASSERT_TRUE(s.sh.ok()) << s.sh.output();
    std::string before = s.sh.stty_g();
    ASSERT_FALSE(before.empty());
    (void)s.sh.run(aj(jail) + " -- sh -c 'stty -echo -icanon -isig; stty raw; stty cols 3 rows 2'");
    EXPECT_EQ(s.sh.stty_g(), before) << "terminal modes leaked out of the sandbox";
    EXPECT_EQ(s.sh.run("stty size"), "30 100\n");

    (void)s.sh.run("stty -echoctl");
    std::string changed = s.sh.stty_g();
    EXPECT_NE(changed, before) << "control: stty did not change the terminal";
    (void)s.sh.run("stty " + before);
}

// TTY-03: interactive, fd 0 is a pty of the sandbox's own devpts: `tty` names a path
// that exists inside, /dev/pts holds only it and ptmx, and the command leads no
// session of the caller's. Control: the shell's own tty is a /dev/pts path of the host
// that does not exist inside.
TEST_F(Escape, TTY03_APtyOfItsOwn) {
    Shell s(jail);
    ASSERT_TRUE(s.sh.ok()) << s.sh.output();
    std::string host_tty = ajtest::trim(s.sh.run("tty"));
    ASSERT_EQ(host_tty.rfind("/dev/pts/", 0), 0u) << host_tty;
    std::string host_pts = ajtest::trim(s.sh.run("stat -c %d /dev/pts"));
    std::string out =
        s.sh.run(aj(jail) +
                 " -- sh -c 'echo tty=$(tty); t=$(tty); test -c $t && echo exists=yes; "
                 "echo ptsdev=$(stat -c %d /dev/pts); "
                 "echo pts=$(ls /dev/pts | tr \"\\n\" \" \"); echo host=$(test -e " +
                 host_tty + " && echo visible || echo absent); echo sid=$(ps -o sid= -p $$)'");
    EXPECT_EQ(field(out, "tty").rfind("/dev/pts/", 0), 0u) << out;
    EXPECT_EQ(field(out, "exists"), "yes") << out;
    EXPECT_EQ(ajtest::trim(field(out, "pts")), "0 ptmx") << out;
    EXPECT_EQ(ajtest::trim(field(out, "sid")), "1")
        << "the command is not in the sandbox's own session\n"
        << out;
    // Its own devpts instance, by identity (the names alone match when the harness's
    // pty is /dev/pts/0 too); control: the host's is another superblock.
    ASSERT_FALSE(host_pts.empty());
    EXPECT_NE(field(out, "ptsdev"), host_pts) << "the host's devpts is mounted inside\n" << out;
    if (host_tty != "/dev/pts/0") {
        EXPECT_EQ(field(out, "host"), "absent") << out;
    }
}

// Non-interactive, the command has no terminal at all: /dev/tty is ENXIO.
TEST_F(Escape, TTY03_NoControllingTerminalWithoutATty) {
    auto r = jail.sh(
        "if (exec 3<>/dev/tty) 2>/dev/null; then echo devtty=open; else echo devtty=none; fi; "
        "tty >/dev/null && echo tty=yes || echo tty=no");
    EXPECT_EQ(field(r.out, "devtty"), "none") << describe(r);
    EXPECT_EQ(field(r.out, "tty"), "no") << describe(r);
}

// A write-only stdout file (a log holding a secret) cannot be read back through
// /proc/self/fd/1: the command holds a pipe, not the file. Control: the same reopen
// on the host reads the file.
TEST_F(Escape, STDIO01_WriteOnlyStdoutCannotBeReadBack) {
    std::string secret = jail.new_canary();
    ajtest::TempDir d("aj-stdout");
    std::string log = d.write("out.log", secret + "\n");
    // A pipeline, so the shell's own fd 1 is still the file while cat reads it
    // (dash applies a simple command's redirections in the shell itself).
    std::string probe = "timeout 1 cat /proc/$$/fd/1 | cat >&2; echo done >&2";
    std::string script = aj(jail) + " -- sh -c " + q(probe) + " >> " + q(log);
    auto r = in_own_group(jail, script);
    jail.record(r);
    EXPECT_FALSE(ajtest::contains(r.err, secret)) << "the sandbox read its write-only stdout\n"
                                                  << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "done")) << describe(r);

    auto c = in_own_group(jail, "sh -c " + q(probe) + " >> " + q(log));
    EXPECT_TRUE(ajtest::contains(c.err, secret)) << "control: the reopen did not read the file\n"
                                                 << describe(c);
}

// A read-only stdin file cannot be overwritten through /proc/self/fd/0. Control: on
// the host, the same reopen for writing truncates it.
TEST_F(Escape, STDIO02_ReadOnlyStdinCannotBeOverwritten) {
    ajtest::TempDir d("aj-stdin");
    std::string input = d.write("input.txt", "original\n");
    std::string probe = "echo PWNED > /proc/$$/fd/0; echo tried";
    auto r = in_own_group(jail, aj(jail) + " -- sh -c " + q(probe) + " < " + q(input));
    EXPECT_TRUE(ajtest::contains(r.out, "tried")) << describe(r);
    EXPECT_EQ(ajtest::read_file(input), "original\n") << "the sandbox wrote its read-only stdin";

    auto c = in_own_group(jail, "sh -c " + q(probe) + " < " + q(input));
    EXPECT_EQ(ajtest::read_file(input), "PWNED\n") << "control: the reopen did not write the file\n"
                                                   << describe(c);
}

// The same for a write-only stderr file: reading it back through /proc/PID/fd/2
// gives nothing of it. Control on the host.
TEST_F(Escape, STDIO03_WriteOnlyStderrCannotBeReadBack) {
    std::string secret = jail.new_canary();
    ajtest::TempDir d("aj-stderr");
    std::string log = d.write("err.log", secret + "\n");
    std::string probe = "timeout 1 cat /proc/$$/fd/2; echo done";
    auto r = in_own_group(jail, aj(jail) + " -- sh -c " + q(probe) + " 2>> " + q(log));
    jail.record(r);
    EXPECT_FALSE(ajtest::contains(r.out, secret)) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "done")) << describe(r);
    auto c = in_own_group(jail, "sh -c " + q(probe) + " 2>> " + q(log));
    EXPECT_TRUE(ajtest::contains(c.out, secret)) << "control\n" << describe(c);
}

// On a pty too: a command that stops itself (no ^Z from the user) does not stop
// agentjail, whose wall clock ends the run; the user's shell never reports a stopped
// job. Control: the user's own ^Z does stop the job.
TEST_F(Escape, SESSION03_SelfStopOnAPtyDoesNotSuspendAgentjail) {
    Shell s(jail);
    ASSERT_TRUE(s.sh.ok()) << s.sh.output();
    std::string out = s.sh.run(aj(jail, {"-t", "1", "--kill-grace", "1"}) +
                               " -- sh -c 'kill -STOP $$; echo not-reached'; echo rc=$?");
    EXPECT_TRUE(ajtest::contains(out, "rc=124")) << out;
    EXPECT_FALSE(ajtest::contains(s.sh.output(), "Stopped")) << s.sh.output();

    // The control is tried up to three times: as an unprivileged user under load the
    // user's ^Z is now and then not followed by agentjail stopping (about 1 in 8
    // runs; an open bug, in the closing note of issue 11). A missed one is said, its
    // run killed by the workspace path it carries, and tried again.
    bool stopped = false;
    for (int attempt = 1; attempt <= 3 && !stopped; ++attempt) {
        s.sh.mark();
        s.sh.type(aj(jail) + " -- sh -c 'echo started; sleep 30'\n");
        ASSERT_TRUE(s.sh.wait_for("started\r\n")) << s.sh.output();
        s.sh.type("\x1a");
        stopped = s.sh.wait_for("Stopped", 5000);
        if (!stopped) {
            std::cout << "[   NOTE   ] control attempt " << attempt << ": ^Z did not stop the job; again\n";
            kill_marked(jail.ws());
            ASSERT_TRUE(s.sh.wait_for("$ ")) << s.sh.output();
        }
    }
    EXPECT_TRUE(stopped) << "control: the user's ^Z did not stop the job\n" << s.sh.output();
    s.sh.type("kill -9 %1\n");
}
