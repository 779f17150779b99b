// SPDX-License-Identifier: Apache-2.0
// Real limits on this host (cgroup v2, or v1 where the host keeps memory, pids and
// cpu there), read back from the result record: memory bomb -> ML/137, fork bomb ->
// PL, --cpus throttling, wall clock -> 124 with nothing left, setsid children,
// RES-01/02/04/05/06 and PROC-06. Where no cgroup can be made (an ordinary user
// without a delegated subtree) the fail-closed refusal is what is tested instead.
#include "cgroup_support.hpp"
#include "common.hpp"
#include "record.hpp"

#include "cgroup/cgroup.hpp"
#include "cgroup/internal.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;
using ajit::describe;
using ajit::record_of;
using ajit::helper;


// Whether agentjail can make a cgroup for this caller, found by asking it; and the
// layer it picked ("v2", "v2-delegated", "v1") or the refusal's message.
struct CgroupMode {
    bool available = false;
    std::string layer;
    std::string refusal;
};

const CgroupMode& mode() {
    static const CgroupMode m = [] {
        const auto& p = ajit::cgroup_probe();
        CgroupMode c;
        c.available = p.ok;
        if (p.ok) c.layer = p.record["layers"]["cgroup"].get<std::string>();
        c.refusal = p.refusal;
        return c;
    }();
    return m;
}

#define NEED_CGROUP()                                                                             \
    do {                                                                                          \
        if (!mode().available)                                                                    \
            GTEST_SKIP() << "no cgroup can be made for uid " << getuid()                          \
                         << " here (the fail-closed refusal is tested by "                        \
                            "LimitsFailClosed.*): "                                                \
                         << mode().refusal;                                                       \
    } while (0)

// The cgroup directories named after agentjail pid `owner`, in every place agentjail
// puts them for this caller.
using ajit::groups_of;

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x + "\n";
    return s;
}

class Limits : public ajit::Sandbox {
protected:
    // agentjail <base> --json <flags> -- argv, as a Child (so its pid names its groups).
    ajtest::RunOutput run_child(const std::vector<std::string>& flags, const std::vector<std::string>& argv,
                                pid_t* pid = nullptr, int timeout_ms = 60000) {
        std::vector<std::string> args{ajtest::agentjail_bin()};
        for (const auto& a : jail.base()) args.push_back(a);
        args.push_back("--json");
        args.insert(args.end(), flags.begin(), flags.end());
        args.push_back("--");
        args.insert(args.end(), argv.begin(), argv.end());
        ajtest::RunOptions opts;
        opts.env.push_back("HOME=" + jail.home());
        opts.timeout_ms = timeout_ms;
        ajtest::Child c(args, opts);
        if (pid) *pid = c.pid();
        auto r = c.wait(timeout_ms);
        jail.record(r);
        last_pid_ = c.pid();
        return r;
    }
    void TearDown() override {
        if (last_pid_ > 0) {
            EXPECT_EQ(joined(groups_of(last_pid_)), "") << "cgroups left behind";
        }
        ajit::Sandbox::TearDown();
    }
    pid_t last_pid_ = -1;
};

// ---- fail closed ----

TEST(LimitsFailClosed, RefusesWithWhatIsMissingAndHowToFixIt) {
    if (mode().available) GTEST_SKIP() << "a cgroup (" << mode().layer << ") can be made here, nothing to refuse";
    auto r = ajtest::agentjail({"--policy", "minimal", "-m", "256M", "--", "/bin/true"});
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(ajtest::lines(r.err).size(), 1u) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "need a cgroup")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "systemd-run --user --scope -p Delegate=yes")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "allow_degraded")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "memory")) << r.err;
}

TEST(LimitsFailClosed, RefusalStillWritesAnXxRecord) {
    if (mode().available) GTEST_SKIP() << "a cgroup (" << mode().layer << ") can be made here, nothing to refuse";
    ajtest::TempDir t("aj-rec");
    std::string file = t.path() + "/result.json";
    auto r = ajtest::agentjail({"--policy", "minimal", "--result-file", file, "--pids", "10", "--", "/bin/true"});
    EXPECT_EQ(r.status, 125) << describe(r);
    auto j = json::parse(ajtest::read_file(file));
    EXPECT_EQ(j["status"], "XX");
    EXPECT_EQ(j["limits"]["pids"], 10);
    EXPECT_TRUE(ajtest::contains(j["message"].get<std::string>(), "need a cgroup"));
}

TEST(LimitsFailClosed, AllowDegradedRunsWithRlimitsOnlyAndSaysSo) {
    if (mode().available) GTEST_SKIP() << "a cgroup (" << mode().layer << ") can be made here, nothing degrades";
    auto r = ajtest::agentjail({"--policy", "minimal", "--allow-degraded", "--pids", "10", "--nofile", "64",
                                "--json", "--", "/bin/sh", "-c", "ulimit -n"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajtest::lines(r.out).front(), "64");
    auto j = record_of(r);
    EXPECT_EQ(j["layers"]["cgroup"], "none");
    ASSERT_FALSE(j["layers"]["degraded"].empty()) << r.out;
    EXPECT_TRUE(ajtest::contains(j["layers"]["degraded"][0].get<std::string>(), "cgroup"));
}

// ---- RES-02: memory ----

TEST_F(Limits, MemoryBombIsKilledAndReportedMl137) {
    NEED_CGROUP();
    auto r = run_child({"-m", "64M"}, {"tail", "/dev/zero"});
    EXPECT_EQ(r.status, 137) << describe(r);
    auto j = record_of(r);
    ASSERT_TRUE(j.is_object()) << describe(r);
    EXPECT_EQ(j["status"], "ML") << r.out;
    EXPECT_GE(j["oom_kill_count"].get<int>(), 1);
    // The peak is the limit's neighbourhood, not the host's memory.
    EXPECT_LE(j["memory_peak_bytes"].get<std::uint64_t>(), 72ull << 20);
    EXPECT_GE(j["memory_peak_bytes"].get<std::uint64_t>(), 32ull << 20);
    EXPECT_EQ(j["limits"]["memory_bytes"], 64ull << 20);
    EXPECT_EQ(j["limits"]["swap_bytes"], 0);
}

TEST_F(Limits, MemoryBombBehindAShellIsStillMl) {
    NEED_CGROUP();
    // v1 kills the biggest process, v2 (memory.oom.group) the whole sandbox: either way
    // the run is ML and exits 137.
    auto r = run_child({"-m", "48M"}, {"/bin/sh", "-c", helper("hog") + " mem 400 || exit $?; echo shell-went-on"});
    EXPECT_EQ(r.status, 137) << describe(r);
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "ML") << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "allocated=400")) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "shell-went-on")) << r.out;
}

TEST_F(Limits, MemoryUnderTheLimitIsFine) {
    NEED_CGROUP();
    auto r = run_child({"-m", "256M"}, {helper("hog"), "mem", "32"});
    EXPECT_EQ(r.status, 0) << describe(r);
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "OK");
    EXPECT_EQ(j["oom_kill_count"], 0);
    EXPECT_GE(j["memory_peak_bytes"].get<std::uint64_t>(), 32ull << 20);
}

// The run's components are prepared in one order, the cgroup first: a later one that
// fails (clone mode in a directory that is no repository) undoes the cgroup made
// before it, and leaves no run state (TearDown: no cgroup of the run is left).
TEST_F(Limits, AComponentThatFailsLaterUndoesTheCgroupMadeBeforeIt) {
    NEED_CGROUP();
    ajtest::TempDir state("aj-state");
    ASSERT_FALSE(ajtest::exists(jail.ws() + "/.git"));
    std::vector<std::string> args{ajtest::agentjail_bin()};
    for (const auto& a : jail.base()) args.push_back(a);
    for (const char* a : {"-m", "256M", "--workspace-mode", "clone", "--", "/bin/true"}) args.push_back(a);
    ajtest::RunOptions opts;
    opts.env = {"HOME=" + jail.home(), "XDG_STATE_HOME=" + state.path()};
    ajtest::Child c(args, opts);
    last_pid_ = c.pid();
    auto r = c.wait(60000);
    jail.record(r);
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "is not a git repository")) << describe(r);
    EXPECT_FALSE(ajtest::exists(state.path() + "/agentjail/runs")) << "run state kept for a refused run";
}

// ---- RES-01: processes ----

TEST_F(Limits, ForkBombStopsAtPidsMaxAndIsReportedPl) {
    NEED_CGROUP();
    auto r = run_child({"--pids", "32"}, {helper("hog"), "fork"});
    EXPECT_EQ(r.status, 3) << describe(r);  // the probe saw EAGAIN and failed
    EXPECT_TRUE(ajtest::contains(r.out, "errno=EAGAIN")) << r.out;
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "PL") << r.out;
    EXPECT_GT(j["pids_max_hits"].get<int>(), 0);
    EXPECT_LE(j["pids_peak"].get<int>(), 32);
    EXPECT_GE(j["pids_peak"].get<int>(), 16);
    // forked + init + hog = the limit.
    EXPECT_TRUE(ajtest::contains(r.out, "forked=30 ")) << r.out;
}

TEST_F(Limits, ThreadBombStopsAtPidsMaxToo) {
    NEED_CGROUP();
    auto r = run_child({"--pids", "24"}, {helper("hog"), "threads"});
    EXPECT_EQ(r.status, 3) << describe(r);
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "PL") << r.out;
    EXPECT_LE(j["pids_peak"].get<int>(), 24);
}

TEST_F(Limits, ShellForkBombFailsAtPidsMaxAndNothingSurvives) {
    NEED_CGROUP();
    std::string marker = ajit::unique_name("aj-bomb-");
    // The classic one, in sh syntax: each call pipes two more into the background.
    std::string bomb = jail.ws_dir().write(marker + ".sh", "b() { b | b & wait; }; b\nwait\n");
    auto r = run_child({"--pids", "16", "-t", "10s"}, {"/bin/sh", bomb});
    auto j = record_of(r);
    ASSERT_TRUE(j.is_object()) << describe(r);
    // A subshell gives up when its fork fails ("Cannot fork"); the top one may still
    // exit 0 (OK), fail (PL), or run into the wall clock (TO). What must hold: the
    // limit was reached and held, and nothing survives.
    EXPECT_TRUE(j["status"] == "PL" || j["status"] == "TO" || j["status"] == "OK") << r.out;
    EXPECT_LE(j["pids_peak"].get<int>(), 16);
    EXPECT_GT(j["pids_max_hits"].get<int>(), 0);
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 3000)) << "bomb processes survived";
}

TEST_F(Limits, EndlessForkBombKeepsTheHostResponsiveUntilTheTimeout) {
    NEED_CGROUP();
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    std::vector<std::string> args{ajtest::agentjail_bin()};
    for (const auto& a : jail.base()) args.push_back(a);
    for (const char* a : {"--json", "--pids", "64", "-t", "3s", "--kill-grace", "1s", "--"}) args.push_back(a);
    args.push_back(helper("hog"));
    args.push_back("forkloop");
    ajtest::Child c(args, opts);
    last_pid_ = c.pid();
    ajtest::sleep_ms(1500);
    // While every one of its 64 tasks keeps forking, the host still starts a process
    // at once (the harness's "true on the host during the bomb").
    auto t0 = std::chrono::steady_clock::now();
    auto t = ajtest::run({"/bin/true"});
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(t.status, 0);
    EXPECT_LT(took, 2.0) << "the host stalled while the fork bomb ran";
    EXPECT_TRUE(c.running()) << "the bomb ended before the timeout";
    auto r = c.wait(30000);
    jail.record(r);
    auto j = record_of(r);
    ASSERT_TRUE(j.is_object()) << describe(r);
    EXPECT_EQ(r.status, 124) << describe(r);
    EXPECT_EQ(j["status"], "TO") << r.out;
    EXPECT_LE(j["pids_peak"].get<int>(), 64);
    EXPECT_GT(j["pids_max_hits"].get<int>(), 0);
}

// ---- RES-05: CPU ----

TEST_F(Limits, CpusLimitThrottlesABusyLoop) {
    NEED_CGROUP();
    auto r = run_child({"--cpus", "0.2"}, {helper("hog"), "spin", "1.5"});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto j = record_of(r);
    double cpu = j["cpu_user_s"].get<double>() + j["cpu_system_s"].get<double>();
    double wall = j["wall_time_s"].get<double>();
    EXPECT_GT(j["cpu_nr_throttled"].get<int>(), 0) << r.out;
    EXPECT_GT(j["cpu_throttled_us"].get<std::uint64_t>(), 100000u) << r.out;
    // About a fifth of a CPU: wide bounds, the point is "well under the wall time".
    EXPECT_LT(cpu, 0.6 * wall) << r.out;
    EXPECT_GT(cpu, 0.05) << r.out;
    EXPECT_EQ(j["limits"]["cpus"], 0.2);
}

TEST_F(Limits, SpinOnEveryCpuStaysWithinTheQuota) {
    NEED_CGROUP();
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    auto r = run_child({"--cpus", "0.5"}, {helper("hog"), "spin", "1.5", std::to_string(n)});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto j = record_of(r);
    double cpu = j["cpu_user_s"].get<double>() + j["cpu_system_s"].get<double>();
    double wall = j["wall_time_s"].get<double>();
    // n spinners could use n * wall; the quota holds them to about half a CPU.
    EXPECT_LT(cpu, 0.8 * wall) << r.out;
    // Throttling shows once they reached the quota (on a loaded host they may not).
    if (cpu > 0.45 * wall) {
        EXPECT_GT(j["cpu_nr_throttled"].get<int>(), 0) << r.out;
    }
}

TEST_F(Limits, CpuTimeRlimitEndsAnInfiniteLoop) {
    // RLIMIT_CPU needs no cgroup.
    auto r = run_child({"--cpu-time", "1s"}, {helper("hog"), "spin", "30"});
    EXPECT_TRUE(r.status == 128 + SIGXCPU || r.status == 128 + SIGKILL) << describe(r);
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "SG") << r.out;
    EXPECT_LT(j["cpu_user_s"].get<double>() + j["cpu_system_s"].get<double>(), 5.0);
}

// ---- wall clock ----

TEST_F(Limits, TimeoutReturns124AndLeavesNothing) {
    std::string marker = ajit::unique_name("aj-to-");
    std::vector<std::string> flags{"-t", "2s"};
    // With a cgroup when one can be made: the groups must go too.
    if (mode().available) flags.insert(flags.end(), {"--pids", "50"});
    auto t0 = std::chrono::steady_clock::now();
    auto r = run_child(flags, {"/bin/sh", "-c", "exec sleep 60 # " + marker});
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.status, 124) << describe(r);
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "TO") << r.out;
    EXPECT_EQ(j["limits"]["timeout_s"], 2.0);
    // Within the grace period (5 s by default) and far from the 60 s of the command.
    EXPECT_LT(took, 20) << "the wall clock did not end the run";
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 2000)) << "a process outlived the timeout";
}

TEST_F(Limits, TimeoutReachesSetsidAndDoubleForkedChildren) {
    std::string marker = ajit::unique_name("aj-daemon-");
    std::string script = jail.ws_dir().write(marker + ".sh",
                                             "setsid sh -c 'sleep 61' &\n"
                                             "( ( sleep 62 & ) & )\n"
                                             "sh -c 'trap \"\" TERM; sleep 63' &\n"
                                             "sleep 64\n");
    std::vector<std::string> flags{"-t", "1s", "--kill-grace", "1s"};
    if (mode().available) flags.insert(flags.end(), {"--pids", "50"});
    auto r = run_child(flags, {"/bin/sh", script});
    EXPECT_EQ(r.status, 124) << describe(r);
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 3000)) << "a daemon survived the timeout";
    // The sleeps have no marker on their command line: none may run as children of
    // the script's session. Their host-side pids are gone with the pid namespace.
}

TEST_F(Limits, TermIgnoringCommandGetsSigkillAfterTheGrace) {
    auto r = run_child({"-t", "1s", "--kill-grace", "1s"}, {"/bin/sh", "-c", "trap '' TERM; sleep 30; sleep 30"});
    EXPECT_EQ(r.status, 124) << describe(r);
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "TO");
    EXPECT_EQ(j["signal"], SIGKILL) << r.out;
}

// ---- RES-04: files ----

TEST_F(Limits, FsizeStopsOneFileAtTheLimit) {
    auto r = run_child({"--fsize", "1M"}, {"/bin/sh", "-c", "head -c 3000000 /dev/zero > " + jail.ws() + "/big"});
    EXPECT_NE(r.status, 0) << describe(r);
    struct stat st {};
    ASSERT_EQ(stat((jail.ws() + "/big").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20);
    auto j = record_of(r);
    EXPECT_EQ(j["status"], "RE") << r.out;  // the shell reports head's SIGXFSZ
    EXPECT_EQ(j["exit_code"], 128 + SIGXFSZ) << r.out;
}

TEST_F(Limits, NofileAndNoCoreDumps) {
    auto r = run_child({"--nofile", "50"}, {"/bin/sh", "-c", "ulimit -n; ulimit -c"});
    ASSERT_EQ(r.status, 0) << describe(r);
    // stdout is the command's alone: --json writes the record on stderr.
    auto ls = ajtest::lines(r.out);
    ASSERT_EQ(ls.size(), 2u) << r.out;
    EXPECT_EQ(ls[0], "50");
    EXPECT_EQ(ls[1], "0");
}

// ---- RES-06: its own cgroup ----

TEST_F(Limits, CannotRaiseItsLimitsOrLeaveItsCgroup) {
    NEED_CGROUP();
    std::string script =
        "cat /proc/self/cgroup\n"
        "try() { if sh -c \"$1\" 2>/dev/null; then echo \"escaped: $1\"; else echo \"refused: $1\"; fi; }\n"
        "try 'echo max > /sys/fs/cgroup/memory.max'\n"
        "try 'echo max > /sys/fs/cgroup/pids.max'\n"
        "try 'echo max > /sys/fs/cgroup/memory/memory.limit_in_bytes'\n"
        "try 'echo $$ > /sys/fs/cgroup/../cgroup.procs'\n"
        "try 'mkdir /sys/fs/cgroup/x'\n"
        "try 'mkdir -p /tmp/m && mount -t cgroup -o rdma x /tmp/m'\n"
        "try 'mkdir -p /tmp/m2 && mount -t cgroup -o memory x /tmp/m2'\n"
        "try 'mkdir -p /tmp/m3 && mount -t cgroup2 x /tmp/m3'\n"
        // The limits still hold after all that.
        + helper("hog") + " fork; echo fork=$?\n";
    auto r = run_child({"-m", "64M", "--pids", "16"}, {"/bin/sh", "-c", script});
    auto j = record_of(r);
    EXPECT_FALSE(ajtest::contains(r.out, "escaped:")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "refused: mkdir -p /tmp/m && mount -t cgroup -o rdma")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "fork=3")) << r.out;
    EXPECT_GT(j["pids_max_hits"].get<int>(), 0) << r.out;
    EXPECT_LE(j["pids_peak"].get<int>(), 16) << r.out;
    // In its own cgroup namespace the sandbox sees itself at the root (v2); under v1 it
    // sees only the path below the caller's groups, never the host's tree.
    if (mode().layer != "v1") {
        EXPECT_TRUE(ajtest::contains(r.out, "0::/\n")) << r.out;
    }
}

// ---- PROC-06 and stale groups ----

TEST_F(Limits, KilledAgentjailLeavesAStaleGroupThatGcRemoves) {
    NEED_CGROUP();
    // Every run removes stale groups as it starts: a run of another test (ctest -j,
    // the soak's thousand) may take ours between our look and gc's. Then the look is
    // repeated with a new killed run; gc must be the one that removes them once.
    bool gc_removed = false;
    std::string last;
    for (int attempt = 0; attempt < 8 && !gc_removed && !HasFailure(); ++attempt) {
        std::string marker = ajit::unique_name("aj-stale-");
        std::string alive = jail.ws() + "/alive-" + std::to_string(attempt);
        std::string loop = jail.ws_dir().write(marker + ".sh", "while :; do echo t >> " + alive + "; sleep 0.2; done\n");
        ajtest::RunOptions opts;
        opts.env.push_back("HOME=" + jail.home());
        ajtest::Child c({ajtest::agentjail_bin(), "-C", jail.ws(), "--pids", "50", "--", "sh", loop}, opts);
        ASSERT_TRUE(ajtest::wait_for_file(alive, 10000)) << "command never started";
        auto groups = groups_of(c.pid());
        ASSERT_FALSE(groups.empty()) << "no cgroup named after agentjail " << c.pid();
        ASSERT_EQ(kill(c.pid(), SIGKILL), 0);
        EXPECT_EQ(c.wait_exit(10000), 128 + SIGKILL);
        EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 10000)) << "the sandbox outlived its supervisor";
        // agentjail died first, so its groups are still there (unless another run
        // took them already).
        auto still = groups_of(c.pid());
        auto gc = ajtest::agentjail({"gc"});
        EXPECT_EQ(gc.status, 0) << describe(gc);
        last = gc.out;
        if (joined(still) == joined(groups)) {
            int removed = 0;
            for (const auto& g : groups) removed += ajtest::contains(gc.out, "removed " + g) ? 1 : 0;
            gc_removed = removed > 0;
        }
        EXPECT_EQ(joined(groups_of(c.pid())), "") << "gc left them";
        jail.record(c.wait(1000));
    }
    EXPECT_TRUE(gc_removed) << "in 8 tries, gc never removed a stale group itself: " << last;
}

TEST_F(Limits, TheNextRunRemovesAStaleGroup) {
    NEED_CGROUP();
    std::string marker = ajit::unique_name("aj-stale2-");
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    ajtest::Child c({ajtest::agentjail_bin(), "-C", jail.ws(), "--pids", "50", "--", "sh", "-c",
                     "touch " + jail.ws() + "/started; exec sleep 60 # " + marker},
                    opts);
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/started", 10000));
    ASSERT_FALSE(groups_of(c.pid()).empty());
    ASSERT_EQ(kill(c.pid(), SIGKILL), 0);
    c.wait_exit(3000);
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 3000));
    auto r = run_child({"--pids", "50"}, {"/bin/true"});
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(joined(groups_of(c.pid())), "") << "the next run did not remove the stale group";
    jail.record(c.wait(1000));
}

// ---- the record on the command line ----

TEST_F(Limits, ResultFileAndJsonAgree) {
    ajtest::TempDir t("aj-rec");
    std::string file = t.path() + "/result.json";
    auto r = run_child({"--result-file", file}, {"/bin/sh", "-c", "echo out; exit 3"});
    EXPECT_EQ(r.status, 3) << describe(r);
    EXPECT_EQ(ajtest::lines(r.out).front(), "out");
    auto line = record_of(r);
    auto j = json::parse(ajtest::read_file(file));
    EXPECT_EQ(j["status"], "RE");
    EXPECT_EQ(j["exit_code"], 3);
    EXPECT_EQ(j, line);
    for (const char* k : {"schema_version", "status", "reason", "message", "exit_code", "signal", "wall_time_s",
                          "cpu_user_s", "cpu_system_s", "memory_peak_bytes", "oom_kill_count", "pids_peak",
                          "cpu_throttled_us", "limits", "layers", "denials", "start_time", "agentjail_version"})
        EXPECT_TRUE(j.contains(k)) << k;
    EXPECT_EQ(j["layers"]["cgroup"], "none");  // no cgroup limit asked for
}

TEST(LimitsRecordCli, BadPolicyGetsAnXxRecord) {
    ajtest::TempDir t("aj-rec");
    std::string file = t.path() + "/result.json";
    auto r = ajtest::agentjail({"--result-file", file, "--policy", t.path() + "/missing.toml", "--", "/bin/true"});
    EXPECT_EQ(r.status, 125) << describe(r);
    auto j = json::parse(ajtest::read_file(file));
    EXPECT_EQ(j["status"], "XX");
    EXPECT_EQ(j["exit_status"], 125);
    EXPECT_TRUE(j["exit_code"].is_null());
}

}  // namespace
