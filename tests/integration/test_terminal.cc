// SPDX-License-Identifier: Apache-2.0
// The pty relay and the stdio pipes as a user meets them, driven through a real
// interactive bash on a pty: window size, ^C, ^Z and fg, the terminal restored on
// every exit path, the output filter, and stdio order and offsets without a tty.
#include "common.hpp"
#include "pty_shell.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

using namespace ajit;

namespace {

std::string q(const std::string& s) { return ajtest::shell_quote(s); }

std::string aj(const ajtest::Jail& jail, const std::vector<std::string>& flags = {}) {
    std::string o = q(ajtest::agentjail_bin());
    for (const auto& w : jail.base()) o += " " + q(w);
    for (const auto& w : flags) o += " " + q(w);
    return o;
}

// Sends sig to the agentjail process whose command line holds marker; how many got it.
int signal_agentjail(const std::string& marker, int sig) {
    int sent = 0;
    for (int pid : ajtest::pids_with_marker(marker)) {
        std::string comm =
            ajtest::trim(ajtest::read_file("/proc/" + std::to_string(pid) + "/comm"));
        if (comm == "agentjail" && kill(pid, sig) == 0) ++sent;
    }
    return sent;
}

class Terminal : public Sandbox {
protected:
    void SetUp() override {
        sh = std::make_unique<ajtest::PtyShell>(30, 100, jail.home(), jail.ws());
        ASSERT_TRUE(sh->ok()) << sh->output();
        before = sh->stty_g();
        ASSERT_FALSE(before.empty());
    }
    // The terminal is exactly as it was before the test's runs.
    void expect_restored(const char* when) {
        EXPECT_EQ(sh->stty_g(), before) << "terminal not restored " << when;
    }
    std::unique_ptr<ajtest::PtyShell> sh;
    std::string before;
};

}  // namespace

TEST_F(Terminal, WindowSizeAtStartAndOnEveryResize) {
    std::string out = sh->run(aj(jail) + " -- stty size");
    EXPECT_EQ(out, "30 100\n");
    sh->mark();
    sh->type(aj(jail) +
             " -- sh -c 'trap \"echo size=\\$(stty size)\" WINCH; echo armed; i=0; while [ $i -lt "
             "100 ]; do sleep 0.1; "
             "i=$((i+1)); done'\n");
    ASSERT_TRUE(sh->wait_for("armed\r\n")) << sh->output();
    sh->resize(40, 120);
    EXPECT_TRUE(sh->wait_for("size=40 120")) << sh->output();
    sh->resize(20, 60);
    EXPECT_TRUE(sh->wait_for("size=20 60")) << sh->output();
    sh->mark();
    sh->type("\x03");
    // Keys typed before the shell's prompt is back would still go to the sandbox.
    ASSERT_TRUE(sh->wait_for("$ ")) << sh->output();
    EXPECT_EQ(sh->run("echo back"), "back\n") << sh->output();
    sh->resize(30, 100);
    expect_restored("after resizes");
}

// (exec: a shell that waits for a child it has yet to fork defers a ^C to the
// child's end, with or without agentjail.)
TEST_F(Terminal, CtrlCReachesTheCommandAndExitStatusFollows) {
    sh->mark();
    sh->type(aj(jail) +
             " -- sh -c 'echo started; exec sleep 30; echo not-inter\"\"rupted'; echo rc=$?\n");
    ASSERT_TRUE(sh->wait_for("started\r\n")) << sh->output();
    sh->type("\x03");
    EXPECT_TRUE(sh->wait_for("rc=130")) << sh->output();
    EXPECT_FALSE(ajtest::contains(sh->output(), "not-interrupted")) << sh->output();
    expect_restored("after ^C");
}

// ^Z stops the command and agentjail with it, like any job: the shell says
// "Stopped" and gets its prompt back with the terminal as it was; fg resumes both.
TEST_F(Terminal, CtrlZSuspendsTheWholeJobAndFgResumesIt) {
    sh->mark();
    sh->type(aj(jail) + " -- sh -c 'echo started; read x; echo got=$x'\n");
    ASSERT_TRUE(sh->wait_for("started\r\n")) << sh->output();
    sh->type("\x1a");
    ASSERT_TRUE(sh->wait_for("Stopped")) << sh->output();
    expect_restored("while the job is stopped");
    sh->mark();
    sh->type("fg\n");
    ASSERT_TRUE(sh->wait_for("agentjail")) << sh->output();
    ajtest::sleep_ms(300);
    sh->type("hello\n");
    // Then agentjail ends and the shell prompts again.
    ASSERT_TRUE(sh->wait_for("got=hello\r\n$ ")) << sh->output();
    // A stopped job ends the shell's command list: fg's status is the job's.
    EXPECT_EQ(sh->run("echo rc=$?"), "rc=0\n") << sh->output();
    expect_restored("after fg and exit");
}

// Job control inside: an interactive shell in the sandbox stops and resumes its own
// jobs; agentjail stays in the foreground.
TEST_F(Terminal, JobControlInsideWorksAsOutside) {
    sh->mark();
    sh->type(aj(jail) + " -- bash --norc --noprofile -i\n");
    // Typed ahead: the inner shell reads it once it is up.
    sh->type("PS1='in''> '\n");
    ASSERT_TRUE(sh->wait_for("in> ")) << sh->output();
    sh->type("sleep 30\n");
    ajtest::sleep_ms(300);
    sh->type("\x1a");
    ASSERT_TRUE(sh->wait_for("Stopped")) << sh->output();
    sh->mark();
    sh->type("jobs; kill -9 %1; sleep 0.3; jobs >/dev/null; echo inner-$((1+1)); exit\n");
    EXPECT_TRUE(sh->wait_for("inner-2\r\nexit\r\n$ ")) << sh->output();
    EXPECT_TRUE(ajtest::contains(sh->output(), "Stopped")) << sh->output();
    expect_restored("after an inner shell");
}

TEST_F(Terminal, RestoredAfterTheCommandDiesOfASignal) {
    (void)sh->run(aj(jail) + " -- sh -c 'stty raw -echo; kill -KILL $$'; echo rc=$?");
    expect_restored("after SIGKILL of the command");
}

TEST_F(Terminal, RestoredAfterTheWallClock) {
    std::string out = sh->run(aj(jail, {"-t", "1", "--kill-grace", "1"}) +
                              " -- sh -c 'stty raw; sleep 10'; echo rc=$?");
    EXPECT_TRUE(ajtest::contains(out, "rc=124")) << out;
    expect_restored("after a timeout");
}

// agentjail killed by SIGTERM or SIGHUP from outside: it passes the signal on, the
// command ends, the terminal comes back.
TEST_F(Terminal, RestoredWhenAgentjailIsSentSigtermOrSighup) {
    for (int sig : {SIGTERM, SIGHUP}) {
        std::string marker = unique_name("aj-term-");
        sh->mark();
        sh->type(aj(jail) + " -- sh -c ': " + marker + "; echo started; sleep 30'; echo rc=$?\n");
        ASSERT_TRUE(sh->wait_for("started\r\n")) << sh->output();
        EXPECT_GE(signal_agentjail(marker, sig), 1) << "no agentjail found for " << marker;
        EXPECT_TRUE(sh->wait_for("rc=" + std::to_string(128 + sig))) << sh->output();
        expect_restored(sig == SIGTERM ? "after SIGTERM" : "after SIGHUP");
    }
}

// The output filter drops OSC 52 (clipboard), file:// links, DCS strings and title
// reports; text, colours and web links pass. Control: --tty-raw passes them all.
TEST_F(Terminal, OutputFilterDropsSequencesThatActOnTheUsersMachine) {
    std::string printf_arg =
        "A\\033]52;c;SGVsbG8=\\007B\\033]8;;file:///etc/"
        "passwd\\033\\\\L\\033]8;;\\033\\\\C\\033P+q544e\\033\\\\D"
        "\\033[21tE\\033[31mred\\033[0m\\033]8;;https://example.com/"
        "\\033\\\\W\\033]8;;\\033\\\\Z\\n";
    // What run() returns is what the command printed, not the echo of the typed line.
    std::string out = sh->run(aj(jail) + " -- printf '" + printf_arg + "'");
    EXPECT_FALSE(ajtest::contains(out, "]52;")) << out;
    EXPECT_FALSE(ajtest::contains(out, "file:///")) << out;
    EXPECT_FALSE(ajtest::contains(out, "\x1bP+q")) << out;
    EXPECT_FALSE(ajtest::contains(out, "\x1b[21t")) << out;
    EXPECT_TRUE(ajtest::contains(out, "AB")) << out;
    EXPECT_TRUE(ajtest::contains(out, "\x1b[31mred")) << out;
    EXPECT_TRUE(ajtest::contains(out, "\x1b]8;;https://example.com/")) << out;

    std::string raw = sh->run(aj(jail) + " --tty-raw -- printf '" + printf_arg + "'");
    EXPECT_TRUE(ajtest::contains(raw, "]52;c;SGVsbG8=")) << "control: --tty-raw dropped OSC 52\n"
                                                         << raw;
    EXPECT_TRUE(ajtest::contains(raw, "file:///etc/passwd")) << raw;
    (void)sh->run("printf '\\033c'; true");  // reset whatever the raw run set
}

// Issue 26: the C1 forms pass no more than the 7-bit ones: OSC 52 and a file://
// link through U+009D, DECRQSS through U+0090 and the title report through U+009B
// (each as UTF-8, which terminals that honour C1 act on), and a raw 0x9d after ESC (.
// Control: --tty-raw passes them, so the probe shows the command wrote them.
TEST_F(Terminal, OutputFilterDropsTheC1FormsToo) {
    std::string printf_arg =
        "A\\302\\23552;c;SGVsbG8=\\007B\\302\\2358;;file:///etc/passwd\\302\\234L\\302\\2358;;\\302\\234C"
        "\\302\\220$qm\\302\\234D\\302\\23321tE\\033(\\23552;c;SGVsbG8=\\007F\\302\\23331mred\\033[0mZ\\n";
    std::string out = sh->run(aj(jail) + " -- printf '" + printf_arg + "'");
    // Neither form of OSC 52 (after the raw 0x9d is dropped, what followed it is text).
    EXPECT_FALSE(ajtest::contains(out, "\x1b]52")) << out;
    EXPECT_FALSE(ajtest::contains(out, "A52;c;")) << out;
    EXPECT_FALSE(ajtest::contains(out, "file:///")) << out;
    EXPECT_FALSE(ajtest::contains(out, "$qm")) << out;
    EXPECT_FALSE(ajtest::contains(out, "21t")) << out;
    EXPECT_FALSE(ajtest::contains(out, "\xc2\x9d")) << out;
    EXPECT_FALSE(ajtest::contains(out, "\x9d")) << out;
    EXPECT_TRUE(ajtest::contains(out, "AB")) << out;
    // Colours through U+009B pass, as the 7-bit CSI.
    EXPECT_TRUE(ajtest::contains(out, "\x1b[31mred")) << out;

    std::string raw = sh->run(aj(jail) + " --tty-raw -- printf '" + printf_arg + "'");
    EXPECT_TRUE(ajtest::contains(raw, "\xc2\x9d" "52;c;SGVsbG8=")) << "control: --tty-raw dropped it\n" << raw;
    EXPECT_TRUE(ajtest::contains(raw, "file:///etc/passwd")) << raw;
    (void)sh->run("printf '\\033c'; true");  // reset whatever the raw run set
}

// Issue 26: pipes carry data and are not filtered by default (control: OSC 52 and a
// raw C1 byte reach the pipe unchanged); --tty-filter always filters them too, for
// `agentjail ... | tee log` on a terminal, stdout and stderr alike.
TEST_F(Sandbox, TtyFilterAlwaysFiltersThePipesToo) {
    const std::string printf_arg =
        "A\\033]52;c;SGVsbG8=\\007B\\302\\23552;c;SGVsbG8=\\007C\\033]8;;file:///etc/passwd\\033\\\\D"
        "\\033[31mred\\033[0m\\n";
    auto cmd = [&](const std::string& flags) {
        return aj(jail) + " " + flags + " -- sh -c " + q("printf '" + printf_arg + "'; printf '" + printf_arg + "' >&2");
    };
    auto plain = ajtest::run({"/bin/sh", "-c", cmd("")}, {"HOME=" + jail.home()});
    EXPECT_EQ(plain.status, 0) << describe(plain);
    EXPECT_TRUE(ajtest::contains(plain.out, "\x1b]52;c;SGVsbG8=")) << "control: the pipe was changed\n" << describe(plain);
    EXPECT_TRUE(ajtest::contains(plain.err, "\xc2\x9d" "52;c;")) << describe(plain);

    auto filtered = ajtest::run({"/bin/sh", "-c", cmd("--tty-filter always")}, {"HOME=" + jail.home()});
    EXPECT_EQ(filtered.status, 0) << describe(filtered);
    for (const std::string* s : {&filtered.out, &filtered.err}) {
        EXPECT_FALSE(ajtest::contains(*s, "52;c;")) << describe(filtered);
        EXPECT_FALSE(ajtest::contains(*s, "file:///")) << describe(filtered);
        EXPECT_TRUE(ajtest::contains(*s, "ABCD\x1b[31mred\x1b[0m\n")) << describe(filtered);
    }

    auto bad = ajtest::run({"/bin/sh", "-c", cmd("--tty-filter sometimes")}, {"HOME=" + jail.home()});
    EXPECT_EQ(bad.status, 125) << describe(bad);
    EXPECT_TRUE(ajtest::contains(bad.err, "--tty-filter sometimes: expected terminal, always or never")) << describe(bad);
    auto both = ajtest::run({"/bin/sh", "-c", cmd("--tty-filter always --tty-raw")}, {"HOME=" + jail.home()});
    EXPECT_EQ(both.status, 125) << describe(both);
}

// Without a terminal: stdout and stderr sent to one place keep their order exactly,
// and the exit status is the command's.
TEST_F(Sandbox, PipesKeepOrderAndStatus) {
    auto r = ajtest::run(
        {"/bin/sh", "-c",
         q(ajtest::agentjail_bin()) + " -C " + q(jail.ws()) +
             " -- sh -c 'for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done; exit 7' 2>&1"},
        {"HOME=" + jail.home()});
    EXPECT_EQ(r.status, 7) << describe(r);
    EXPECT_EQ(r.out, "out1\nerr1\nout2\nerr2\nout3\nerr3\nout4\nerr4\nout5\nerr5\n") << describe(r);
}

// A regular-file stdin is read from the caller's offset and left just past what the
// command read: a `while read` loop around agentjail sees every line.
TEST_F(Sandbox, StdinFileOffsetIsWhatTheCommandConsumed) {
    ajtest::TempDir d("aj-stdin");
    std::string f = d.write("lines", "a\nb\nc\n");
    std::string script = "while read l; do " + q(ajtest::agentjail_bin()) + " -C " + q(jail.ws()) +
                         " -- true; echo \"$l\"; done < " + q(f) + "; " +
                         q(ajtest::agentjail_bin()) + " -C " + q(jail.ws()) +
                         " -- sh -c 'read x; echo first=$x; cat' < " + q(f);
    auto r = ajtest::run({"/bin/sh", "-c", script}, {"HOME=" + jail.home()});
    EXPECT_EQ(r.out, "a\nb\nc\nfirst=a\nb\nc\n") << describe(r);
}

// A reader that goes away early ends only the command's writes (EPIPE/SIGPIPE), as in
// any pipeline; agentjail itself reports the command's status.
TEST_F(Sandbox, EarlyClosedReaderEndsTheCommandNotAgentjail) {
    auto r = ajtest::run({"/bin/sh", "-c",
                          "{ " + q(ajtest::agentjail_bin()) + " -C " + q(jail.ws()) +
                              " -- sh -c 'yes; echo yes-ended=$? >&2'; echo agentjail=$? >&2; } | "
                              "head -c 3"},
                         {"HOME=" + jail.home()});
    EXPECT_EQ(r.out, "y\ny") << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "yes-ended=141")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "agentjail=0")) << describe(r);
    EXPECT_FALSE(r.timed_out) << describe(r);
}

// A reader that stays but stops reading (a pager left open, a full pipe) holds up
// only the command's output, never the run: the wall clock still ends it, on time,
// because the relay waits for room on the run's loop instead of blocking it. The
// control: the same command, read, runs until its own end.
TEST_F(Sandbox, AReaderThatStopsReadingDoesNotHoldUpTheWallClock) {
    const std::string fifo = jail.home() + "/wedge.fifo";
    ::unlink(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto script = [&](const std::string& reader) {
        return "exec 3<>" + q(fifo) + "; " + reader + aj(jail, {"-t", "2s"}) +
               " -- sh -c 'yes | head -c 50000000; echo wrote-all >&2' > " + q(fifo) + "; echo agentjail=$? >&2";
    };
    // Control: read, the command writes all of it well within its time.
    auto read_run = ajtest::run({"/bin/sh", "-c", "cat " + q(fifo) + " > /dev/null & " + script("")},
                                {"HOME=" + jail.home()});
    EXPECT_TRUE(ajtest::contains(read_run.err, "wrote-all")) << describe(read_run);
    EXPECT_TRUE(ajtest::contains(read_run.err, "agentjail=0")) << describe(read_run);
    // Never read: the pipe fills, the command blocks on its writes, the clock ends it.
    auto start = std::chrono::steady_clock::now();
    auto r = ajtest::run({"/bin/sh", "-c", script("")}, {"HOME=" + jail.home()});
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(r.timed_out) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.err, "wrote-all")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "agentjail=124")) << describe(r);
    EXPECT_LT(took, 15.0) << describe(r);
    ::unlink(fifo.c_str());
}

// SIGTSTP sent to agentjail (kill -TSTP, or ^Z where it has no pty) stops the command
// and agentjail as one job; fg brings both back.
TEST_F(Terminal, SigtstpToAgentjailStopsTheJobAndFgResumesIt) {
    std::string marker = unique_name("aj-tstp-");
    sh->mark();
    sh->type(aj(jail) + " -- sh -c ': " + marker + "; echo started; read x; echo got=$x'\n");
    ASSERT_TRUE(sh->wait_for("started\r\n")) << sh->output();
    ASSERT_GE(signal_agentjail(marker, SIGTSTP), 1);
    ASSERT_TRUE(sh->wait_for("Stopped")) << sh->output();
    expect_restored("while stopped by SIGTSTP");
    sh->type("fg\n");
    ajtest::sleep_ms(300);
    sh->type("again\n");
    ASSERT_TRUE(sh->wait_for("got=again\r\n$ ")) << sh->output();
    expect_restored("after fg");
}

// ^Z stops every process of the sandbox, not only the command's job: a daemon that
// left its group and session (setsid) makes no progress while the job is stopped.
// What the host changes meanwhile (git config replaces .git/config, sed -i replaces
// .env) is covered again before anything inside runs after fg: the daemon, which
// tries all the time, never writes the protected config nor reads the hidden secret.
// The guard that covers a replaced name again is the mounts view's (the default view
// has no window to cover: Escape.VIEW01, VIEW12).
TEST_F(Terminal, CtrlZStopsEveryProcessAndFgComesAfterTheHostsChanges) {
    ajtest::RunOptions ho;
    ho.cwd = jail.ws();
    ASSERT_EQ(ajtest::run_with({"git", "init", "-q", "."}, ho).status, 0);
    const std::string fresh = jail.new_canary();
    const std::string marker = unique_name("aj-tstp-daemon-");
    const std::string beats = jail.ws() + "/beats", seen = jail.ws() + "/seen", cfg = jail.ws() + "/.git/config";
    const std::string loop = jail.ws_dir().write(
        marker + ".sh",
        "while :; do echo b >> beats; echo '[core] planted = 1' >> .git/config 2>/dev/null; "
        "cat .env >> seen 2>/dev/null; sleep 0.02; done\n");
    auto count = [&] { return ajtest::lines(ajtest::read_file(beats)).size(); };
    auto grows = [&] {
        size_t first = count();
        for (int i = 0; i < 100; ++i) {
            ajtest::sleep_ms(20);
            if (count() >= first + 3) return true;
        }
        return false;
    };
    sh->mark();
    sh->type(aj(jail, {"--view", "mounts"}) + " -- sh -c '( setsid sh " + loop +
             " </dev/null >/dev/null 2>&1 & ); echo started; read x; echo got=$x'\n");
    ASSERT_TRUE(sh->wait_for("started\r\n")) << sh->output();
    ASSERT_TRUE(grows()) << "the daemon never ran: the probe proves nothing";
    sh->type("\x1a");
    ASSERT_TRUE(sh->wait_for("Stopped")) << sh->output();
    expect_restored("while the job is stopped");
    ajtest::sleep_ms(200);
    const size_t stopped_at = count();
    struct stat old_cfg {};
    ASSERT_EQ(::stat(cfg.c_str(), &old_cfg), 0);
    ASSERT_EQ(ajtest::run_with({"git", "config", "core.fsmonitor", "false"}, ho).status, 0);
    ASSERT_EQ(ajtest::run_with({"sed", "-i", "s/^API_KEY=.*/API_KEY=" + fresh + "/", ".env"}, ho).status, 0);
    struct stat new_cfg {};
    ASSERT_EQ(::stat(cfg.c_str(), &new_cfg), 0);
    ASSERT_NE(old_cfg.st_ino, new_cfg.st_ino) << "git did not replace the file: the test proves nothing";
    ajtest::sleep_ms(1000);
    EXPECT_EQ(count(), stopped_at) << "a process inside ran while the job was stopped";
    sh->mark();
    sh->type("fg\n");
    ASSERT_TRUE(sh->wait_for("agentjail")) << sh->output();
    EXPECT_TRUE(grows()) << "the daemon did not go on after fg";
    ajtest::sleep_ms(300);
    EXPECT_FALSE(ajtest::contains(ajtest::read_file(cfg), "planted")) << ajtest::read_file(cfg);
    EXPECT_FALSE(ajtest::contains(ajtest::read_file(seen), fresh));
    // Control: the host's changes are really there to be had.
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(cfg), "fsmonitor"));
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(jail.ws() + "/.env"), fresh));
    sh->type("bye\n");
    ASSERT_TRUE(sh->wait_for("got=bye\r\n")) << sh->output();
    // After the lines that say which guarded names the host replaced.
    ASSERT_TRUE(sh->wait_for("re-applied")) << sh->output();
    ASSERT_TRUE(sh->wait_for("\n$ ")) << sh->output();
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 2000)) << "the daemon outlived the run";
    for (int pid : ajtest::pids_with_marker(marker)) kill(pid, SIGKILL);
    expect_restored("after fg and exit");
}

// A reader of agentjail's stderr that went away before the record is written costs
// the record, not the command's exit status (no SIGPIPE death, 141).
TEST_F(Sandbox, RecordToAClosedReaderKeepsTheExitStatus) {
    ajtest::TempDir d("aj-rc");
    std::string rc = d.path() + "/rc";
    std::string script = "{ " + q(ajtest::agentjail_bin()) + " -C " + q(jail.ws()) +
                         " --json -- sh -c 'echo a; sleep 0.5; exit 3'; echo $? > " + q(rc) +
                         "; } 2>&1 | head -c 1";
    auto r = ajtest::run({"/bin/sh", "-c", script}, {"HOME=" + jail.home()});
    EXPECT_EQ(r.out, "a") << describe(r);
    EXPECT_EQ(ajtest::trim(ajtest::read_file(rc)), "3") << describe(r);
}
