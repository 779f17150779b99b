// SPDX-License-Identifier: Apache-2.0
// Unit tests of lib/doctor: the checks exist, say what they found, offer a fix
// for every problem, and agree with an independent probe of the same facility.
#include "doctor/doctor.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

namespace {

using agentjail::doctor::Check;

const Check* find(const std::vector<Check>& checks, const std::string& name) {
    for (const auto& c : checks)
        if (c.name == name) return &c;
    return nullptr;
}

TEST(Doctor, RunsEveryCheckOnceWithDetailsAndFixes) {
    auto checks = agentjail::doctor::run_checks();
    std::set<std::string> names;
    for (const auto& c : checks) {
        EXPECT_TRUE(names.insert(c.name).second) << "duplicate check " << c.name;
        EXPECT_FALSE(c.detail.empty()) << c.name;
        if (c.status != Check::Status::ok) {
            EXPECT_FALSE(c.fix.empty()) << c.name << ": " << c.detail;
        }
    }
    for (const char* n :
         {"user namespaces", "AppArmor userns restriction", "seccomp", "cgroup version",
          "cgroup delegation", "Landlock", "mount API", "pidfd_open"})
        EXPECT_TRUE(names.count(n)) << "missing check " << n;
}

TEST(Doctor, StatusLabels) {
    EXPECT_STREQ(agentjail::doctor::status_label(Check::Status::ok), "ok");
    EXPECT_STREQ(agentjail::doctor::status_label(Check::Status::warn), "warn");
    EXPECT_STREQ(agentjail::doctor::status_label(Check::Status::fail), "FAIL");
}

// The doctor's verdict on user namespaces matches what a plain unshare() in a
// child process of this test finds.
TEST(Doctor, UserNamespaceVerdictMatchesAnIndependentProbe) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(unshare(CLONE_NEWUSER) == 0 && unshare(CLONE_NEWNS) == 0 ? 0 : 1);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    bool works = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    auto checks = agentjail::doctor::run_checks();
    const Check* c = find(checks, "user namespaces");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->status == Check::Status::ok, works) << c->detail;
}

TEST(Doctor, PidfdVerdictMatchesAnIndependentProbe) {
    long fd = syscall(SYS_pidfd_open, getpid(), 0);
    bool works = fd >= 0;
    if (works) close(static_cast<int>(fd));
    auto checks = agentjail::doctor::run_checks();
    const Check* c = find(checks, "pidfd_open");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->status == Check::Status::ok, works) << c->detail;
}

}  // namespace

// The doctor's word on Landlock is what a run's plan does with it: ok where every
// run applies it (explain's "landlock": applied), a warning where runs go on without.
TEST(Doctor, LandlockVerdictIsWhatARunGets) {
    auto checks = agentjail::doctor::run_checks();
    const Check* c = find(checks, "Landlock");
    ASSERT_NE(c, nullptr);
    ajtest::TempDir ws("aj-doctor-ll");
    auto r = ajtest::agentjail({"explain", "--json", "-C", ws.path(), "--", "true"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out;
    EXPECT_EQ(c->status == Check::Status::ok, j["landlock"]["applied"].get<bool>()) << c->detail << "\n"
                                                                                   << j["landlock"].dump();
}
