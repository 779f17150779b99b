// SPDX-License-Identifier: Apache-2.0
// Unit tests of the limit flags on the command line, seen through `explain --json`
// (which plans but never clones): values with units, "max", errors, the help.
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;

json explain(const std::vector<std::string>& flags, const std::string& policy = "minimal") {
    std::vector<std::string> args{"explain", "--json", "--policy", policy};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/true"});
    auto r = ajtest::agentjail(args);
    EXPECT_EQ(r.status, 0) << r.err;
    try {
        return json::parse(r.out);
    } catch (const std::exception&) {
        return json();
    }
}

TEST(LimitsCli, FlagsBecomeTheLimitsOfThePlan) {
    auto j = explain({"-m", "2G", "--cpus", "1.5", "--pids", "256", "-t", "30m", "--kill-grace", "2s",
                      "--nofile", "128", "--fsize", "1G", "--cpu-time", "90s", "--swap", "512M"});
    auto l = j["limits"];
    EXPECT_EQ(l["memory_bytes"], 2ull << 30);
    EXPECT_EQ(l["swap_bytes"], 512ull << 20);
    EXPECT_EQ(l["cpus"], 1.5);
    EXPECT_EQ(l["pids"], 256);
    EXPECT_EQ(l["timeout_s"], 1800.0);
    EXPECT_EQ(l["kill_grace_s"], 2.0);
    EXPECT_EQ(l["nofile"], 128);
    EXPECT_EQ(l["cpu_time_s"], 90.0);
    bool nofile = false;
    for (const auto& r : j["rlimits"])
        if (r["resource"] == "RLIMIT_NOFILE") {
            nofile = true;
            EXPECT_EQ(r["hard"], 128);
            EXPECT_EQ(r["why"], "command line (--nofile)");
        }
    EXPECT_TRUE(nofile) << j["rlimits"].dump();
}

TEST(LimitsCli, MaxLiftsAPolicyLimit) {
    // A workspace of its own: a shared one such as /tmp changes under the plan.
    ajtest::TempDir ws("aj-limitscli");
    auto j = explain({"-C", ws.path(), "-m", "max", "--pids", "10"}, "ci");
    EXPECT_TRUE(j["limits"]["memory_bytes"].is_null());
    EXPECT_EQ(j["limits"]["pids"], 10);
    EXPECT_EQ(j["limits"]["cpus"], 2.0);  // still the ci policy's
}

TEST(LimitsCli, BadValuesAreOneLineErrorsNamingTheFlag) {
    for (auto [flag, value, needle] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"-m", "lots", "--memory: bad size 'lots'"},
             {"--cpus", "0", "--cpus: bad CPU count '0'"},
             {"--pids", "-1", "--pids: bad count '-1'"},
             {"-t", "soon", "--timeout: bad duration 'soon'"},
             {"--swap", "1G", "needs a memory limit"}}) {
        auto r = ajtest::agentjail({"explain", "--policy", "minimal", flag, value, "--", "/bin/true"});
        EXPECT_EQ(r.status, 125) << flag << " " << value << "\n" << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
        EXPECT_EQ(ajtest::lines(r.err).size(), 1u) << r.err;
    }
}

TEST(LimitsCli, HelpListsLimitsRecordAndExitStatuses) {
    auto r = ajtest::agentjail({"--help"});
    EXPECT_EQ(r.status, 0);
    for (const char* s : {"--memory", "--cpus", "--pids", "--timeout", "--result-file", "--json", "124", "137",
                          "agentjail gc"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s;
    auto gc = ajtest::agentjail({"gc", "--help"});
    EXPECT_EQ(gc.status, 0);
    EXPECT_NE(gc.out.find("stale"), std::string::npos) << gc.out;
    auto bad = ajtest::agentjail({"gc", "extra"});
    EXPECT_EQ(bad.status, 125);
}

TEST(LimitsCli, ExplainTextShowsTheLimits) {
    auto r = ajtest::agentjail({"explain", "--policy", "minimal", "-m", "1G", "--pids", "64", "--", "/bin/true"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("memory 1G (no swap), pids 64"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cgroup required"), std::string::npos) << r.out;
}

}  // namespace
