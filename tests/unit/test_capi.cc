// SPDX-License-Identifier: Apache-2.0
// Unit tests of the C API's error paths (no sandbox is started): bad names and
// arguments give the right AJ_E* code and a message, out-parameters stay NULL,
// NULL is accepted wherever the header says so. Plus the C example's errors.
#include <agentjail/agentjail.h>

#include "test_support.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

// Owns an aj_error for the length of one assertion block.
struct Err {
    aj_error* e = nullptr;
    ~Err() { aj_error_free(e); }
    aj_error** out() {
        aj_error_free(e);
        e = nullptr;
        return &e;
    }
    std::string message() const { return aj_error_message(e); }
    int code() const { return aj_error_code(e); }
};

struct Pol {
    aj_policy* p = nullptr;
    ~Pol() { aj_policy_free(p); }
};

TEST(CApi, Version) { EXPECT_STREQ(aj_version(), AGENTJAIL_VERSION); }

TEST(CApi, UnknownPolicyIsEinvalWithTheName) {
    Pol pol;
    Err err;
    EXPECT_EQ(aj_policy_load(&pol.p, "no-such-policy", err.out()), AJ_EINVAL);
    EXPECT_EQ(pol.p, nullptr);
    ASSERT_NE(err.e, nullptr);
    EXPECT_EQ(err.code(), AJ_EINVAL);
    EXPECT_NE(err.message().find("no-such-policy"), std::string::npos) << err.message();
}

TEST(CApi, BadPolicyFileGivesFileLineColumn) {
    ajtest::TempDir d("aj-capi");
    std::string path = d.write("bad.toml", "extends = \"minimal\"\n[filesystem]\nro = [42]\n");
    Pol pol;
    Err err;
    EXPECT_EQ(aj_policy_load(&pol.p, path.c_str(), err.out()), AJ_EINVAL);
    EXPECT_EQ(pol.p, nullptr);
    EXPECT_EQ(err.message().rfind(path + ":3:", 0), 0u) << err.message();
}

TEST(CApi, ErrIsOptionalAndClearedOnSuccess) {
    Pol pol;
    EXPECT_EQ(aj_policy_load(&pol.p, "no-such-policy", nullptr), AJ_EINVAL);
    Err err;
    ASSERT_EQ(aj_policy_load(&pol.p, "minimal", err.out()), AJ_OK) << err.message();
    EXPECT_NE(pol.p, nullptr);
    EXPECT_EQ(err.e, nullptr);
}

TEST(CApi, NullArgumentsAreEinval) {
    Err err;
    EXPECT_EQ(aj_policy_load(nullptr, "minimal", err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("out"), std::string::npos) << err.message();
    Pol pol;
    EXPECT_EQ(aj_policy_load(&pol.p, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_add_ro(nullptr, "/usr", nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_add_hide(nullptr, "/x", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_env(nullptr, "A", "b", err.out()), AJ_EINVAL);
    ASSERT_EQ(aj_policy_load(&pol.p, "minimal", err.out()), AJ_OK);
    EXPECT_EQ(aj_policy_add_ro(pol.p, nullptr, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_env(pol.p, "A", nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_sandbox_kill(nullptr, 15, err.out()), AJ_EINVAL);
    aj_result* res = reinterpret_cast<aj_result*>(1);
    EXPECT_EQ(aj_sandbox_wait(&res, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(res, nullptr);
}

TEST(CApi, BadOverridesAreEinval) {
    Pol pol;
    Err err;
    ASSERT_EQ(aj_policy_load(&pol.p, "minimal", err.out()), AJ_OK);
    EXPECT_EQ(aj_policy_add_ro(pol.p, "relative", nullptr, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("relative"), std::string::npos) << err.message();
    EXPECT_EQ(aj_policy_add_rw(pol.p, "/usr", "inside", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_add_tmpfs(pol.p, "", 0, err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_env(pol.p, "1BAD", "x", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_pass_env(pol.p, "A-B", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_workspace(pol.p, "ws", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_hostname(pol.p, "", err.out()), AJ_EINVAL);
    // And the good ones.
    EXPECT_EQ(aj_policy_add_ro(pol.p, "/usr/share", "/data", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_add_hide(pol.p, "~/.ssh", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_add_tmpfs(pol.p, "/scratch", 1 << 20, err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_env(pol.p, "FOO", "bar", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_pass_env(pol.p, "GITHUB_TOKEN", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_hostname(pol.p, "box", err.out()), AJ_OK) << err.message();
}

TEST(CApi, LimitsUseThePolicyFilesSpellingAndMessages) {
    Pol pol;
    Err err;
    ASSERT_EQ(aj_policy_load(&pol.p, "minimal", err.out()), AJ_OK);
    EXPECT_EQ(aj_policy_set_limit(pol.p, "memory", "2G", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_limit(pol.p, "cpus", "1.5", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_limit(pol.p, "timeout", "30m", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_limit(pol.p, "pids", "max", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_limit(pol.p, "allow_degraded", "true", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_limit(pol.p, "memroy", "2G", err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("did you mean 'memory'"), std::string::npos) << err.message();
    EXPECT_EQ(aj_policy_set_limit(pol.p, "memory", "2 gigs", err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("set_limit memory"), std::string::npos) << err.message();
    EXPECT_EQ(aj_policy_set_limit(pol.p, "timeout", "", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_limit(pol.p, nullptr, "1", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_limit(nullptr, "pids", "1", err.out()), AJ_EINVAL);
}

TEST(CApi, ResultAccessorsRefuseNullAndUnknownStats) {
    Err err;
    uint64_t v = 7;
    EXPECT_EQ(aj_result_stat(&v, nullptr, AJ_STAT_PIDS_PEAK, err.out()), AJ_EINVAL);
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(aj_result_stat(nullptr, nullptr, AJ_STAT_PIDS_PEAK, err.out()), AJ_EINVAL);
    char* json = reinterpret_cast<char*>(1);
    EXPECT_EQ(aj_result_json(&json, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(json, nullptr);
    EXPECT_EQ(aj_result_timed_out(nullptr), 0);
    aj_string_free(nullptr);
}

TEST(CApi, SpawnRefusesBadArgumentsBeforeCloning) {
    Pol pol;
    Err err;
    ASSERT_EQ(aj_policy_load(&pol.p, "minimal", err.out()), AJ_OK);
    aj_sandbox* sb = reinterpret_cast<aj_sandbox*>(1);
    const char* none[] = {nullptr};
    EXPECT_EQ(aj_spawn(&sb, pol.p, none, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(sb, nullptr);
    EXPECT_EQ(aj_spawn(&sb, pol.p, nullptr, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_spawn(&sb, nullptr, none, nullptr, err.out()), AJ_EINVAL);
    const char* argv[] = {"true", nullptr};
    aj_run_options future = AJ_RUN_OPTIONS_INIT;
    future.version = AJ_RUN_OPTIONS_VERSION + 1;
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &future, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("version"), std::string::npos) << err.message();
    aj_run_options zero = AJ_RUN_OPTIONS_INIT;
    zero.version = 0;
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &zero, err.out()), AJ_EINVAL);
    EXPECT_EQ(sb, nullptr);
    aj_run_options bad_terminal = AJ_RUN_OPTIONS_INIT;
    bad_terminal.terminal = 7;
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &bad_terminal, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("terminal"), std::string::npos) << err.message();
    EXPECT_EQ(sb, nullptr);
}

TEST(CApi, SpawnReportsAnOverrideThatBreaksValidation) {
    Pol pol;
    Err err;
    ASSERT_EQ(aj_policy_load(&pol.p, "minimal", err.out()), AJ_OK);
    ASSERT_EQ(aj_policy_set_hostname(pol.p, "not a hostname", err.out()), AJ_OK);
    aj_sandbox* sb = nullptr;
    const char* argv[] = {"true", nullptr};
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(sb, nullptr);
    EXPECT_NE(err.message().find("hostname"), std::string::npos) << err.message();
}

TEST(CApi, NullHandlesAreHarmless) {
    aj_policy_free(nullptr);
    aj_sandbox_free(nullptr);
    aj_result_free(nullptr);
    aj_error_free(nullptr);
    EXPECT_STREQ(aj_error_message(nullptr), "");
    EXPECT_EQ(aj_error_code(nullptr), AJ_OK);
    EXPECT_EQ(aj_sandbox_pid(nullptr), -1);
    EXPECT_EQ(aj_sandbox_pidfd(nullptr), -1);
    EXPECT_EQ(aj_result_exited(nullptr), 0);
    EXPECT_EQ(aj_result_signal(nullptr), 0);
    EXPECT_EQ(aj_result_wall_time(nullptr), 0.0);
}

TEST(CApi, ExampleReportsABadPolicyName) {
    auto r = ajtest::run({AJ_EXAMPLE_C, "--policy", "no-such-policy", "--", "true"});
    EXPECT_EQ(r.status, 125) << r.err;
    EXPECT_NE(r.err.find("aj_example_run: unknown policy 'no-such-policy'"), std::string::npos)
        << r.err;
    auto u = ajtest::run({AJ_EXAMPLE_C});
    EXPECT_EQ(u.status, 125) << u.err;
    EXPECT_NE(u.err.find("usage"), std::string::npos) << u.err;
}

}  // namespace
