// SPDX-License-Identifier: Apache-2.0
// Unit tests of the result record (status precedence, exit statuses, the JSON
// fields and units) and of the pure parts of lib/cgroup (mountinfo and
// /proc/self/cgroup of hybrid, pure v2 and namespaced hosts; flat-keyed files; names).
#include "cgroup/cgroup.hpp"
#include "cgroup/internal.hpp"
#include "base/version.hpp"
#include "run/record.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>

namespace {

using agentjail::RunResult;
using agentjail::run::classify;
using agentjail::run::exit_status;
using agentjail::run::Status;
using json = nlohmann::json;

RunResult exited(int code) {
    RunResult r;
    r.exited = true;
    r.exit_code = code;
    return r;
}

RunResult signalled(int sig) {
    RunResult r;
    r.exited = false;
    r.term_signal = sig;
    return r;
}

TEST(LimitsRecord, StatusOfPlainEnds) {
    EXPECT_EQ(classify(exited(0)).status, Status::ok);
    EXPECT_EQ(classify(exited(3)).status, Status::re);
    EXPECT_EQ(classify(signalled(11)).status, Status::sg);
    EXPECT_NE(classify(signalled(11)).message.find("SIGSEGV"), std::string::npos);
    EXPECT_EQ(exit_status(exited(3)), 3);
    EXPECT_EQ(exit_status(signalled(11)), 139);
}

// agentjail's own failure during the run (issue 13: an exception on the supervisor's
// or the relay's thread) is XX and 125, whatever signal ended the command.
TEST(LimitsRecord, AnInternalErrorIsXxAndExits125) {
    RunResult r = signalled(9);
    r.timed_out = true;  // the internal error explains the end, not the clock
    r.internal_error = "the supervisor failed (bad_alloc) and stopped the sandbox";
    auto o = classify(r);
    EXPECT_EQ(o.status, Status::xx);
    EXPECT_EQ(o.reason, "internal error");
    EXPECT_NE(o.message.find("the supervisor failed (bad_alloc)"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("SIGKILL"), std::string::npos) << o.message;
    EXPECT_EQ(exit_status(r), 125);
    // Control: without it the same end is a timeout.
    r.internal_error.clear();
    EXPECT_EQ(classify(r).status, Status::to);
}

TEST(LimitsRecord, TimeoutWinsAndExits124) {
    auto r = signalled(15);
    r.timed_out = true;
    r.oom_kill_count = 1;  // even with an OOM kill on the way
    r.limits.timeout_s = 2;
    r.limits.kill_grace_s = 5;
    EXPECT_EQ(classify(r).status, Status::to);
    EXPECT_EQ(exit_status(r), 124);
    EXPECT_NE(classify(r).message.find("2s"), std::string::npos) << classify(r).message;
    // A command that catches SIGTERM and exits 0 still timed out.
    auto caught = exited(0);
    caught.timed_out = true;
    EXPECT_EQ(exit_status(caught), 124);
}

TEST(LimitsRecord, OomKillIsMlAnd137) {
    auto r = signalled(9);
    r.oom_kill_count = 1;
    r.limits.memory_bytes = 64ull << 20;
    EXPECT_EQ(classify(r).status, Status::ml);
    EXPECT_EQ(exit_status(r), 137);
    EXPECT_NE(classify(r).message.find("64M"), std::string::npos);
    // A shell whose child was OOM-killed exits 1 itself: still ML, still 137.
    auto sh = exited(1);
    sh.oom_kill_count = 2;
    EXPECT_EQ(classify(sh).status, Status::ml);
    EXPECT_EQ(exit_status(sh), 137);
    // A command that succeeded despite an OOM kill of a helper is OK, exit 0.
    auto ok = exited(0);
    ok.oom_kill_count = 1;
    EXPECT_EQ(classify(ok).status, Status::ok);
    EXPECT_EQ(exit_status(ok), 0);
}

TEST(LimitsRecord, RefusedForkIsPlWhenTheCommandFailed) {
    auto r = exited(2);
    r.pids_max_hits = 5;
    r.limits.pids = 32;
    EXPECT_EQ(classify(r).status, Status::pl);
    EXPECT_EQ(exit_status(r), 2);  // the command's own
    auto ok = exited(0);
    ok.pids_max_hits = 5;
    EXPECT_EQ(classify(ok).status, Status::ok);
    // ML comes before PL.
    auto both = signalled(9);
    both.pids_max_hits = 1;
    both.oom_kill_count = 1;
    EXPECT_EQ(classify(both).status, Status::ml);
}

TEST(LimitsRecord, JsonHasEveryFieldWithUnits) {
    auto r = exited(0);
    r.wall_time_s = 1.25;
    r.cpu_user_s = 0.5;
    r.cpu_system_s = 0.25;
    r.memory_peak_bytes = 123456;
    r.pids_peak = 7;
    r.cpu_throttled_us = 999;
    r.cpu_nr_throttled = 3;
    r.seccomp_denials = 4;
    r.cgroup = "v1";
    r.layers = {"user-ns", "cgroup-v1"};
    r.limits.memory_bytes = 1ull << 30;
    r.limits.pids = 100;
    auto start = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123LL));
    auto j = json::parse(agentjail::run::record_json(r, start));
    EXPECT_EQ(j["schema_version"], 1);
    EXPECT_EQ(j["status"], "OK");
    EXPECT_EQ(j["exit_code"], 0);
    EXPECT_TRUE(j["signal"].is_null());
    EXPECT_DOUBLE_EQ(j["wall_time_s"].get<double>(), 1.25);
    EXPECT_DOUBLE_EQ(j["cpu_user_s"].get<double>(), 0.5);
    EXPECT_DOUBLE_EQ(j["cpu_system_s"].get<double>(), 0.25);
    EXPECT_EQ(j["memory_peak_bytes"], 123456);
    EXPECT_EQ(j["oom_kill_count"], 0);
    EXPECT_EQ(j["pids_peak"], 7);
    EXPECT_EQ(j["cpu_throttled_us"], 999);
    EXPECT_EQ(j["cpu_nr_throttled"], 3);
    EXPECT_EQ(j["limits"]["memory_bytes"], 1ull << 30);
    EXPECT_EQ(j["limits"]["swap_bytes"], 0);  // with memory: 0 is "no swap", not "none"
    EXPECT_TRUE(j["limits"]["cpus"].is_null());
    EXPECT_EQ(j["limits"]["pids"], 100);
    EXPECT_TRUE(j["limits"]["timeout_s"].is_null());
    EXPECT_EQ(j["layers"]["cgroup"], "v1");
    EXPECT_EQ(j["layers"]["active"].size(), 2u);
    EXPECT_EQ(j["denials"]["network"], 0);
    EXPECT_EQ(j["denials"]["syscalls"], 4);
    EXPECT_EQ(j["start_time"], "2023-11-14T22:13:20.123Z");
    EXPECT_EQ(j["agentjail_version"], agentjail::version());
    for (const char* k : {"reason", "message"}) EXPECT_TRUE(j[k].is_string()) << k;
    // One line for --json.
    auto line = agentjail::run::record_json(r, start, -1);
    EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(LimitsRecord, SaysHowTheCgroupWasHad) {
    auto r = exited(0);
    auto start = std::chrono::system_clock::now();
    auto none = json::parse(agentjail::run::record_json(r, start));
    EXPECT_TRUE(none["layers"]["cgroup_via"].is_null());
    EXPECT_TRUE(none["layers"]["cgroup_unit"].is_null());
    r.cgroup = "v2-delegated";
    r.cgroup_via = "systemd-scope";
    r.cgroup_unit = "agentjail-42-0a1b2c3d4e5f.scope";
    auto j = json::parse(agentjail::run::record_json(r, start));
    EXPECT_EQ(j["layers"]["cgroup"], "v2-delegated");  // unchanged: the kind of cgroup
    EXPECT_EQ(j["layers"]["cgroup_via"], "systemd-scope");
    EXPECT_EQ(j["layers"]["cgroup_unit"], "agentjail-42-0a1b2c3d4e5f.scope");
    agentjail::Error e(agentjail::ErrorKind::unsupported, 1, "no cgroup");
    auto x = json::parse(agentjail::run::error_record_json(e, start, 0, std::nullopt));
    EXPECT_TRUE(x["layers"].contains("cgroup_via"));
    EXPECT_TRUE(x["layers"]["cgroup_via"].is_null());
}

TEST(LimitsRecord, ViaNamesAreStable) {
    EXPECT_STREQ(agentjail::cgroup::via_name(agentjail::cgroup::Via::root_slice), "agentjail.slice");
    EXPECT_STREQ(agentjail::cgroup::via_name(agentjail::cgroup::Via::own_cgroup), "own-cgroup");
    EXPECT_STREQ(agentjail::cgroup::via_name(agentjail::cgroup::Via::parent_cgroup), "parent-cgroup");
    EXPECT_STREQ(agentjail::cgroup::via_name(agentjail::cgroup::Via::systemd_scope), "systemd-scope");
}

TEST(LimitsRecord, SignalledRunHasNullExitCode) {
    auto j = json::parse(agentjail::run::record_json(signalled(9), std::chrono::system_clock::now()));
    EXPECT_TRUE(j["exit_code"].is_null());
    EXPECT_EQ(j["signal"], 9);
    EXPECT_EQ(j["status"], "SG");
    EXPECT_EQ(j["exit_status"], 137);
}

TEST(LimitsRecord, ErrorRecordIsXxAndStaysValidJson) {
    agentjail::Error e(agentjail::ErrorKind::unsupported, 1, "no cgroup: \"quoted\" \xff bad byte");
    agentjail::RunLimits l;
    l.pids = 10;
    auto j = json::parse(agentjail::run::error_record_json(e, std::chrono::system_clock::now(), 0.5, l));
    EXPECT_EQ(j["status"], "XX");
    EXPECT_EQ(j["exit_status"], 125);
    EXPECT_NE(j["message"].get<std::string>().find("\"quoted\""), std::string::npos);
    EXPECT_EQ(j["limits"]["pids"], 10);
    EXPECT_EQ(j["layers"]["cgroup"], "none");
    auto nolimits = json::parse(
        agentjail::run::error_record_json(e, std::chrono::system_clock::now(), 0, std::nullopt));
    EXPECT_TRUE(nolimits["limits"].is_null());
}

// ---- lib/cgroup, pure parts ----

namespace cg = agentjail::cgroup;

const char* hybrid_mountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
const char* hybrid_cgroup =
    "9:name=systemd:/\n8:pids:/\n4:memory:/job/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n";

TEST(CgroupHost, HybridHost) {
    auto h = cg::parse_host(hybrid_mountinfo, hybrid_cgroup);
    ASSERT_TRUE(h.v2);
    EXPECT_EQ(h.v2->mount, "/sys/fs/cgroup/unified");
    EXPECT_EQ(h.v2->self_dir(), "/sys/fs/cgroup/unified");
    const auto* mem = h.v1_for("memory");
    ASSERT_NE(mem, nullptr);
    EXPECT_EQ(mem->self_dir(), "/sys/fs/cgroup/memory/job/abc");
    ASSERT_NE(h.v1_for("pids"), nullptr);
    EXPECT_EQ(h.v1_for("pids")->self_dir(), "/sys/fs/cgroup/pids");
    EXPECT_EQ(h.v1_for("freezer"), nullptr);
    EXPECT_EQ(h.v1_for("name=systemd") != nullptr, true);
}

TEST(CgroupHost, CoMountedCpuCpuacctAndPureV2) {
    auto h = cg::parse_host(
        "30 20 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n", "3:cpu,cpuacct:/a\n");
    ASSERT_NE(h.v1_for("cpuacct"), nullptr);
    EXPECT_EQ(h.v1_for("cpu"), h.v1_for("cpuacct"));
    EXPECT_EQ(h.v1_for("cpu")->self_dir(), "/sys/fs/cgroup/cpu,cpuacct/a");
    EXPECT_FALSE(h.v2);

    auto v2 = cg::parse_host("27 22 0:24 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
                             "0::/user.slice/user-1000.slice/session-2.scope\n");
    ASSERT_TRUE(v2.v2);
    EXPECT_TRUE(v2.v1.empty());
    EXPECT_EQ(v2.v2->self_dir(), "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
}

TEST(CgroupHost, MountOfASubtreeAndEscapedPaths) {
    // A container: the mount shows /docker/x at its top, and we are in /docker/x/app.
    auto h = cg::parse_host("50 40 0:30 /docker/x /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/docker/x/app\n");
    ASSERT_TRUE(h.v2);
    EXPECT_EQ(h.v2->self_dir(), "/sys/fs/cgroup/app");
    // Our cgroup outside the mounted subtree: not reachable.
    auto out = cg::parse_host("50 40 0:30 /docker/x /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "0::/other\n");
    ASSERT_TRUE(out.v2);
    EXPECT_EQ(out.v2->self_dir(), "");
    auto esc = cg::parse_host("50 40 0:30 / /mnt/cg\\040x rw - cgroup2 cgroup2 rw\n", "0::/\n");
    ASSERT_TRUE(esc.v2);
    EXPECT_EQ(esc.v2->mount, "/mnt/cg x");
}

TEST(CgroupFiles, FlatKeyedAndSingleValues) {
    namespace d = agentjail::cgroup::detail;
    const char* events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
    EXPECT_EQ(d::flat_value(events, "oom_kill"), std::optional<std::uint64_t>(1));
    EXPECT_EQ(d::flat_value(events, "max"), std::optional<std::uint64_t>(12));
    EXPECT_EQ(d::flat_value(events, "oom"), std::optional<std::uint64_t>(1));  // not oom_kill's line
    EXPECT_FALSE(d::flat_value(events, "missing"));
    EXPECT_EQ(d::single_value("67108864\n"), std::optional<std::uint64_t>(67108864));
    EXPECT_FALSE(d::single_value("max\n"));
    EXPECT_EQ(d::words("cpu io  memory\npids\n"), (std::vector<std::string>{"cpu", "io", "memory", "pids"}));
}

TEST(CgroupNames, OnlyOurNamesHaveAnOwner) {
    EXPECT_EQ(cg::owner_of("agentjail-1234-1"), 1234);
    EXPECT_EQ(cg::owner_of("agentjail-1234-self"), 1234);
    EXPECT_EQ(cg::owner_of(agentjail::cgroup::detail::next_name()), getpid());
    for (const char* n : {"agentjail", "agentjail-", "agentjail-12", "agentjail-12-", "agentjail-x-1",
                          "agentjail-0-1", "agentjail.slice", "user.slice", "agentjail-12-A", "agentjail-1-2/x"})
        EXPECT_EQ(cg::owner_of(n), -1) << n;
}

}  // namespace
