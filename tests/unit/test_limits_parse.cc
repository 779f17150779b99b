// SPDX-License-Identifier: Apache-2.0
// Unit tests of the limit value parsers (sizes, durations, CPU counts) and of the
// [limits] section: TOML values, errors with file:line:col, layers, "max", flags.
#include "plan/limits.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <string>

namespace {

using agentjail::units::parse_cpus;
using agentjail::units::parse_count;
using agentjail::units::parse_duration;
using agentjail::units::parse_size;
namespace policy = agentjail::policy;

TEST(LimitsParse, SizesWithUnits) {
    EXPECT_EQ(*parse_size("4096"), 4096u);
    EXPECT_EQ(*parse_size("100k"), 100u * 1024);
    EXPECT_EQ(*parse_size("512M"), 512ull << 20);
    EXPECT_EQ(*parse_size("512m"), 512ull << 20);
    EXPECT_EQ(*parse_size("512MB"), 512ull << 20);
    EXPECT_EQ(*parse_size("2GiB"), 2ull << 30);
    EXPECT_EQ(*parse_size("2G"), 2ull << 30);
    EXPECT_EQ(*parse_size("1.5G"), 3ull << 29);
    EXPECT_EQ(*parse_size("1T"), 1ull << 40);
    EXPECT_EQ(*parse_size("0"), 0u);
}

TEST(LimitsParse, BadSizesSayWhatIsAccepted) {
    for (const char* s : {"", "G", "-1G", "2X", "1e9", "0x10", "1.5", "2 G", "inf", "12GG", "9999999T"}) {
        auto r = parse_size(s);
        ASSERT_FALSE(r) << s;
        EXPECT_NE(r.error().message().find("bad size '" + std::string(s) + "'"), std::string::npos)
            << r.error().message();
    }
    EXPECT_NE(parse_size("2X").error().message().find("512M"), std::string::npos);
}

TEST(LimitsParse, Durations) {
    EXPECT_DOUBLE_EQ(*parse_duration("90"), 90);
    EXPECT_DOUBLE_EQ(*parse_duration("90s"), 90);
    EXPECT_DOUBLE_EQ(*parse_duration("30m"), 1800);
    EXPECT_DOUBLE_EQ(*parse_duration("1h"), 3600);
    EXPECT_DOUBLE_EQ(*parse_duration("1h30m"), 5400);
    EXPECT_DOUBLE_EQ(*parse_duration("500ms"), 0.5);
    EXPECT_DOUBLE_EQ(*parse_duration("1.5s"), 1.5);
    EXPECT_DOUBLE_EQ(*parse_duration("2d"), 172800);
    for (const char* s : {"", "s", "1x", "1h30", "-5s", "1 h", "m30"}) EXPECT_FALSE(parse_duration(s)) << s;
}

TEST(LimitsParse, CpusAndCounts) {
    EXPECT_DOUBLE_EQ(*parse_cpus("1.5"), 1.5);
    EXPECT_DOUBLE_EQ(*parse_cpus("0.2"), 0.2);
    EXPECT_DOUBLE_EQ(*parse_cpus("4"), 4);
    for (const char* s : {"0", "0.001", "-1", "2000", "1.5x", ""}) EXPECT_FALSE(parse_cpus(s)) << s;
    EXPECT_EQ(*parse_count("256"), 256u);
    for (const char* s : {"0", "-1", "1.5", "", "12a"}) EXPECT_FALSE(parse_count(s)) << s;
}

TEST(LimitsParse, HumanForms) {
    using agentjail::units::format_duration;
    using agentjail::units::format_size;
    EXPECT_EQ(format_size(2ull << 30), "2G");
    EXPECT_EQ(format_size(512ull << 20), "512M");
    EXPECT_EQ(format_size(1000), "1000");
    EXPECT_EQ(format_size(1500000), "1500000");
    EXPECT_EQ(format_duration(1800), "30m");
    EXPECT_EQ(format_duration(7200), "2h");
    EXPECT_EQ(format_duration(1.5), "1.5s");
}

// ---- [limits] in policy files ----

policy::Policy load(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    EXPECT_TRUE(r) << (r ? "" : r.error().message());
    return r ? *r : policy::Policy{};
}

std::string load_error(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    EXPECT_FALSE(r) << "loaded, but expected an error:\n" << text;
    return r ? std::string() : r.error().message();
}

TEST(LimitsPolicy, EveryKeyWithUnits) {
    auto p = load(R"([limits]
memory = "2G"
swap = "256M"
cpus = 1.5
pids = 256
timeout = "30m"
cpu_time = 600
nofile = 1024
fsize = "1G"
tmpfs_size = "128M"
kill_grace = "2s"
allow_degraded = true
)");
    EXPECT_EQ(p.limits.memory.value, std::optional<std::uint64_t>(2ull << 30));
    EXPECT_EQ(p.limits.swap.value, std::optional<std::uint64_t>(256ull << 20));
    EXPECT_EQ(p.limits.cpus.value, std::optional<double>(1.5));
    EXPECT_EQ(p.limits.pids.value, std::optional<std::uint64_t>(256));
    EXPECT_EQ(p.limits.timeout.value, std::optional<double>(1800));
    EXPECT_EQ(p.limits.cpu_time.value, std::optional<double>(600));
    EXPECT_EQ(p.limits.nofile.value, std::optional<std::uint64_t>(1024));
    EXPECT_EQ(p.limits.fsize.value, std::optional<std::uint64_t>(1ull << 30));
    EXPECT_EQ(p.limits.tmpfs_size.value, std::optional<std::uint64_t>(128ull << 20));
    EXPECT_DOUBLE_EQ(p.limits.kill_grace.value, 2);
    EXPECT_TRUE(p.limits.allow_degraded.value);
    EXPECT_EQ(p.limits.memory.origin.describe(), "t.toml:2:10 (limits.memory)");
}

TEST(LimitsPolicy, DefaultsAreNoLimits) {
    auto p = load("[limits]\n");
    EXPECT_FALSE(p.limits.memory.value);
    EXPECT_FALSE(p.limits.pids.value);
    EXPECT_FALSE(p.limits.timeout.value);
    EXPECT_DOUBLE_EQ(p.limits.kill_grace.value, 5);
    EXPECT_FALSE(p.limits.allow_degraded.value);
    EXPECT_EQ(p.limits.memory.origin.file, "built-in default");
}

TEST(LimitsPolicy, ErrorsPointAtTheValue) {
    EXPECT_EQ(load_error("[limits]\nmemory = \"2X\"\n").substr(0, 33), "t.toml:2:10: limits.memory: bad s");
    EXPECT_NE(load_error("[limits]\ntimeout = \"soon\"\n").find("t.toml:2:11: limits.timeout: bad duration 'soon'"),
              std::string::npos);
    EXPECT_NE(load_error("[limits]\ncpus = 0\n").find("limits.cpus: bad CPU count '0'"), std::string::npos);
    EXPECT_NE(load_error("[limits]\npids = -3\n").find("t.toml:2:8: limits.pids"), std::string::npos);
    EXPECT_NE(load_error("[limits]\nallow_degraded = \"yes\"\n").find("expected true or false"), std::string::npos);
    EXPECT_NE(load_error("[limits]\nmemory = true\n").find("limits.memory: expected a string"), std::string::npos);
    EXPECT_NE(load_error("[limits]\nmemroy = \"1G\"\n").find("unknown key; did you mean 'memory'?"),
              std::string::npos);
    EXPECT_NE(load_error("[limits]\nkill_grace = \"1h\"\n").find("at most 10m"), std::string::npos);
    EXPECT_NE(load_error("[limits]\nmemory = \"0\"\n").find("more than 0"), std::string::npos);
}

TEST(LimitsPolicy, LaterLayerWinsAndMaxLiftsALimit) {
    // The built-in ci policy sets caps; a layer over it lifts one and changes another.
    auto p = load("extends = \"ci\"\n[limits]\nmemory = \"max\"\npids = 64\n");
    EXPECT_FALSE(p.limits.memory.value);
    EXPECT_EQ(p.limits.memory.origin.describe(), "t.toml:3:10 (limits.memory)");
    EXPECT_EQ(p.limits.pids.value, std::optional<std::uint64_t>(64));
    EXPECT_EQ(p.limits.cpus.value, std::optional<double>(2));  // from ci.toml
    EXPECT_EQ(p.limits.cpus.origin.file, "ci.toml");
}

TEST(LimitsPolicy, CiPolicyHasCaps) {
    auto p = policy::load("ci");
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_TRUE(p->limits.memory.value);
    EXPECT_TRUE(p->limits.pids.value);
    EXPECT_TRUE(p->limits.timeout.value);
    EXPECT_FALSE(p->limits.allow_degraded.value);  // CI fails closed
}

TEST(LimitsPolicy, SetLimitIsWhatFlagsUse) {
    policy::Policy p;
    policy::Origin flag{"command line", 0, 0, "--memory"};
    ASSERT_TRUE(policy::set_limit(p, "memory", "1G", flag));
    EXPECT_EQ(p.limits.memory.value, std::optional<std::uint64_t>(1ull << 30));
    auto bad = policy::set_limit(p, "memory", "lots", flag);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message().substr(0, 36), "command line: --memory: bad size 'lo");
    EXPECT_FALSE(policy::set_limit(p, "nosuch", "1", flag));
}

// ---- the plan ----

agentjail::plan::HostFacts host() {
    agentjail::plan::HostFacts h;
    h.uid = 1000;
    h.gid = 1000;
    h.home = "/nonexistent-home";
    h.cwd = "/";
    return h;
}

agentjail::plan::Plan plan_of(const std::string& limits, agentjail::plan::HostFacts h = host()) {
    auto p = policy::load_text("extends = \"minimal\"\n[limits]\n" + limits, "t.toml");
    EXPECT_TRUE(p) << p.error().message();
    auto plan = agentjail::plan::build(*p, {"/usr/bin/true"}, h);
    EXPECT_TRUE(plan) << plan.error().message();
    return plan ? *plan : agentjail::plan::Plan{};
}

const agentjail::plan::Rlimit* find_rlimit(const agentjail::plan::Plan& p, int res) {
    for (const auto& r : p.rlimits)
        if (r.resource == res) return &r;
    return nullptr;
}

TEST(LimitsPlan, RlimitsTimeoutAndCgroupSettings) {
    auto p = plan_of("memory = \"1G\"\npids = 100\ncpus = 0.5\ntimeout = \"2s\"\nkill_grace = \"1s\"\n"
                     "nofile = 256\nfsize = \"10M\"\ncpu_time = \"1.5s\"\n");
    EXPECT_DOUBLE_EQ(p.timeout_s, 2);
    EXPECT_DOUBLE_EQ(p.kill_grace_s, 1);
    EXPECT_EQ(p.limits.memory_bytes, std::optional<std::uint64_t>(1ull << 30));
    EXPECT_EQ(p.limits.swap_bytes, std::optional<std::uint64_t>(0));  // no swap by default
    EXPECT_TRUE(p.limits.needs_cgroup());
    auto* nofile = find_rlimit(p, RLIMIT_NOFILE);
    ASSERT_NE(nofile, nullptr);
    EXPECT_EQ(nofile->soft, 256u);
    EXPECT_EQ(nofile->why, "t.toml:8:10 (limits.nofile)");
    auto* fsize = find_rlimit(p, RLIMIT_FSIZE);
    ASSERT_NE(fsize, nullptr);
    EXPECT_EQ(fsize->hard, 10ull << 20);
    auto* cpu = find_rlimit(p, RLIMIT_CPU);
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->soft, 2u);  // rounded up
    EXPECT_EQ(cpu->hard, 3u);
    auto* core = find_rlimit(p, RLIMIT_CORE);
    ASSERT_NE(core, nullptr);
    EXPECT_EQ(core->hard, 0u);
}

TEST(LimitsPlan, CoreDumpsOffEvenWithoutLimits) {
    auto p = plan_of("");
    EXPECT_FALSE(p.limits.needs_cgroup());
    EXPECT_DOUBLE_EQ(p.timeout_s, 0);
    auto* core = find_rlimit(p, RLIMIT_CORE);
    ASSERT_NE(core, nullptr);
    EXPECT_EQ(core->soft, 0u);
}

TEST(LimitsPlan, NeverAboveTheCallersHardLimit) {
    auto h = host();
    h.rlimit_hard = {{RLIMIT_NOFILE, 100}};
    auto p = plan_of("nofile = 4096\n", h);
    auto* nofile = find_rlimit(p, RLIMIT_NOFILE);
    ASSERT_NE(nofile, nullptr);
    EXPECT_EQ(nofile->hard, 100u);
    EXPECT_EQ(nofile->soft, 100u);
}

TEST(LimitsPlan, SwapNeedsMemory) {
    auto p = policy::load_text("extends = \"minimal\"\n[limits]\nswap = \"1G\"\n", "t.toml");
    ASSERT_TRUE(p);
    auto plan = agentjail::plan::build(*p, {"/usr/bin/true"}, host());
    ASSERT_FALSE(plan);
    EXPECT_NE(plan.error().message().find("t.toml:3:8 (limits.swap)"), std::string::npos) << plan.error().message();
    EXPECT_NE(plan.error().message().find("needs a memory limit"), std::string::npos);
}

TEST(LimitsPlan, TmpfsSizeIsTheDefaultForTmpfsWithoutOne) {
    auto p = plan_of("tmpfs_size = \"64M\"\n");
    bool found = false;
    for (const auto& m : p.mounts)
        if (m.kind == agentjail::plan::MountKind::tmpfs && m.dst == "/tmp") {
            found = true;
            EXPECT_EQ(m.size_bytes, 64ull << 20);
        }
    EXPECT_TRUE(found);
}

}  // namespace
