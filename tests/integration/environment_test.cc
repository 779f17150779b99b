// SPDX-License-Identifier: Apache-2.0
// Integration: the command's environment is an allowlist; secrets pass only when
// named with -e; -e NAME=VALUE and --env-file set variables.
#include "common.hpp"

using ajit::describe;
using ajit::Sandbox;

namespace {
const char* const kSecretNames[] = {"FOO_TOKEN",      "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK",
                                    "GITHUB_TOKEN",   "OPENAI_API_KEY",        "ANTHROPIC_API_KEY",
                                    "NPM_TOKEN",      "DB_PASSWORD",           "MY_SECRET_THING",
                                    "DBUS_SESSION_BUS_ADDRESS"};

bool has_var(const std::string& env_out, const std::string& name) {
    for (const auto& l : ajtest::lines(env_out))
        if (l.rfind(name + "=", 0) == 0) return true;
    return false;
}
}  // namespace

TEST_F(Sandbox, SecretVariablesAbsentAndAllowlistApplies) {
    ajtest::RunOptions opts;
    for (const char* n : kSecretNames) opts.env.push_back(std::string(n) + "=" + jail.new_canary());
    opts.env.push_back("AJ_TEST_PLAIN_VAR=plain");
    opts.env.push_back("TERM=xterm-aj");
    opts.env.push_back("LANG=C.UTF-8");
    auto r = jail.sh("env; echo ---; tr '\\0' '\\n' < /proc/self/environ", {}, opts);
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* n : kSecretNames) EXPECT_FALSE(has_var(r.out, n)) << n << " passed into the sandbox";
    EXPECT_FALSE(has_var(r.out, "AJ_TEST_PLAIN_VAR")) << "a variable outside the allowlist passed";
    EXPECT_TRUE(has_var(r.out, "PATH")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "\nHOME=" + jail.home() + "\n")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "TERM=xterm-aj")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "LANG=C.UTF-8")) << r.out;
}

TEST_F(Sandbox, EnvFlagPassesNamedSecretAndSetsValues) {
    std::string token = ajtest::canary();  // meant to pass: not a swept canary
    ajtest::TempDir files("aj-envfile");
    std::string env_file = files.write("vars.env", "AJ_FROM_FILE=from-file\nAJ_SECOND=two words\n");
    ajtest::RunOptions opts;
    opts.env.push_back("FOO_TOKEN=" + token);
    opts.env.push_back("OTHER_TOKEN=" + jail.new_canary());
    auto r = jail.sh("env", {"-e", "FOO_TOKEN", "-e", "AJ_SET=bar", "--env", "AJ_SET2=baz=qux", "--env-file", env_file},
                     opts);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "FOO_TOKEN=" + token + "\n")) << "-e NAME did not pass the secret\n" << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "AJ_SET=bar\n")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "AJ_SET2=baz=qux\n")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "AJ_FROM_FILE=from-file\n")) << "--env-file\n" << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "AJ_SECOND=two words\n")) << "--env-file\n" << r.out;
    EXPECT_FALSE(has_var(r.out, "OTHER_TOKEN")) << "-e FOO_TOKEN let another secret through";
}
