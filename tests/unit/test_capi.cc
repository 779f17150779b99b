// SPDX-License-Identifier: Apache-2.0
// Unit tests of the C API's error paths (no sandbox is started): bad names and
// arguments give the right AJ_E* code and a message, out-parameters stay NULL,
// NULL is accepted wherever the header says so. Plus the C example's errors.
#include <agentjail/agentjail.h>

#include "capi/handles.hpp"
#include "capi_handles.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace {

using ajtest::capi::Err;
using ajtest::capi::Pol;

TEST(CApi, Version) {
    EXPECT_STREQ(aj_version_string(), AGENTJAIL_VERSION);
    int major = -1, minor = -1, patch = -1;
    EXPECT_EQ(aj_version(&major, &minor, &patch), AJ_OK);
    EXPECT_EQ(std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch),
              AGENTJAIL_VERSION);
    EXPECT_EQ(aj_version(nullptr, nullptr, nullptr), AJ_OK);
}

TEST(CApi, RunOptionsInitMatchesTheMacro) {
    aj_run_options macro = AJ_RUN_OPTIONS_INIT;
    aj_run_options fn;
    std::memset(&fn, 0x5a, sizeof fn);
    ASSERT_EQ(aj_run_options_init(&fn, AJ_RUN_OPTIONS_VERSION), AJ_OK);
    EXPECT_EQ(fn.version, static_cast<unsigned>(AJ_RUN_OPTIONS_VERSION));
    EXPECT_EQ(fn.stdin_fd, macro.stdin_fd);
    EXPECT_EQ(fn.stdout_fd, macro.stdout_fd);
    EXPECT_EQ(fn.stderr_fd, macro.stderr_fd);
    EXPECT_EQ(fn.terminal, macro.terminal);
    EXPECT_EQ(fn.tty_raw, macro.tty_raw);
    EXPECT_EQ(fn.filter_pipes, 0);
    EXPECT_EQ(fn.filter_pipes, macro.filter_pipes);
    EXPECT_EQ(aj_run_options_init(nullptr, AJ_RUN_OPTIONS_VERSION), AJ_EINVAL);
    EXPECT_EQ(aj_run_options_init(&fn, 0), AJ_EINVAL);
    EXPECT_EQ(aj_run_options_init(&fn, AJ_RUN_OPTIONS_VERSION + 1), AJ_EINVAL);
}

// A caller built against version 1 owns only version 1's bytes: nothing past them
// is written.
TEST(CApi, RunOptionsInitWritesOnlyTheGivenVersionsFields) {
    aj_run_options o;
    std::memset(&o, 0x5a, sizeof o);
    ASSERT_EQ(aj_run_options_init(&o, 1), AJ_OK);
    EXPECT_EQ(o.version, 1u);
    EXPECT_EQ(o.stderr_fd, -1);
    const unsigned char* tail = reinterpret_cast<const unsigned char*>(&o.terminal);
    EXPECT_EQ(tail[0], 0x5a);
    // Version 3 ends before filter_pipes (version 4).
    std::memset(&o, 0x5a, sizeof o);
    ASSERT_EQ(aj_run_options_init(&o, 3), AJ_OK);
    EXPECT_EQ(o.log_payload, nullptr);
    EXPECT_EQ(reinterpret_cast<const unsigned char*>(&o.filter_pipes)[0], 0x5a);
}

TEST(CApi, ErrorsCarryErrnoAndStage) {
    Pol pol;
    Err err;
    EXPECT_EQ(aj_policy_load(&pol.p, "no-such-policy", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_POLICY);
    EXPECT_STREQ(aj_stage_name(aj_error_stage(err.e)), "policy");
    EXPECT_STREQ(aj_error_step(err.e), "");
    EXPECT_EQ(aj_policy_load(nullptr, "minimal", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_NONE);
    EXPECT_EQ(aj_error_errno(err.e), EINVAL);
    ajtest::TempDir d("aj-capi");
    std::string unreadable = d.path() + "/dir.toml";
    ASSERT_EQ(::mkdir(unreadable.c_str(), 0700), 0);
    EXPECT_EQ(aj_policy_load(&pol.p, unreadable.c_str(), err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_error_errno(err.e), EISDIR) << err.message();
    EXPECT_EQ(aj_error_errno(nullptr), 0);
    EXPECT_EQ(aj_error_stage(nullptr), AJ_STAGE_NONE);
    EXPECT_STREQ(aj_error_step(nullptr), "");
    EXPECT_STREQ(aj_stage_name(AJ_STAGE_SANDBOX), "sandbox");
}

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

// aj_result_exit_status is the CLI's rule (run::exit_status), read through the
// handle: each outcome of the record maps to the status the CLI exits with, and each
// case differs from what the command's own exit code or signal would give.
TEST(CApi, ResultExitStatusIsTheClisRule) {
    auto status = [](auto&& setup) {
        aj_result res{};
        setup(res.result);
        return aj_result_exit_status(&res);
    };
    EXPECT_EQ(status([](agentjail::RunResult& r) { r.exited = true, r.exit_code = 3; }), 3);
    EXPECT_EQ(status([](agentjail::RunResult& r) { r.exited = true, r.exit_code = 0; }), 0);
    EXPECT_EQ(status([](agentjail::RunResult& r) { r.exited = false, r.term_signal = 11; }), 139);
    // TO: the policy's timeout, even when the command caught SIGTERM and exited 0.
    EXPECT_EQ(status([](agentjail::RunResult& r) {
                  r.exited = true, r.exit_code = 0, r.timed_out = true;
              }),
              124);
    // ML: an OOM kill counted in the run's cgroup, the command ended by it or failing.
    EXPECT_EQ(status([](agentjail::RunResult& r) {
                  r.exited = false, r.term_signal = 9, r.oom_kill_count = 1;
              }),
              137);
    EXPECT_EQ(status([](agentjail::RunResult& r) {
                  r.exited = true, r.exit_code = 1, r.oom_kill_count = 1;
              }),
              137);
    // A command that succeeded although a helper was OOM-killed: its own 0.
    EXPECT_EQ(status([](agentjail::RunResult& r) {
                  r.exited = true, r.exit_code = 0, r.oom_kill_count = 1;
              }),
              0);
    // TO over ML.
    EXPECT_EQ(status([](agentjail::RunResult& r) {
                  r.exited = false, r.term_signal = 9, r.oom_kill_count = 1, r.timed_out = true;
              }),
              124);
    // XX: agentjail's own supervision failed; 125 whatever ended the command.
    EXPECT_EQ(status([](agentjail::RunResult& r) {
                  r.exited = false, r.term_signal = 9, r.internal_error = "the supervisor failed";
              }),
              125);
    // No result is agentjail's failure, never a success.
    EXPECT_EQ(aj_result_exit_status(nullptr), 125);
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

TEST(CApi, PolicyFromTextAndTheNewOverrides) {
    Pol pol;
    Err err;
    EXPECT_EQ(aj_policy_load_text(&pol.p, "[process]\nhostnam = 1\n", "job.toml", err.out()), AJ_EINVAL);
    EXPECT_EQ(pol.p, nullptr);
    EXPECT_EQ(err.message().rfind("job.toml:2:", 0), 0u) << err.message();
    EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_POLICY);
    EXPECT_EQ(aj_policy_load_text(&pol.p, nullptr, nullptr, err.out()), AJ_EINVAL);
    ASSERT_EQ(aj_policy_load_text(&pol.p, "extends = \"default\"\n", nullptr, err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_clear_env(pol.p, err.out()), AJ_OK);
    EXPECT_EQ(aj_policy_set_net_mode(pol.p, "proxy", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_allow_host(pol.p, "*.npmjs.org", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_deny_host(pol.p, "gist.github.com", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_add_protect(pol.p, "deploy/", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_net_log(pol.p, "~/net.jsonl", err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_policy_set_seccomp_log(pol.p, "/var/log/x.log", err.out()), AJ_OK) << err.message();
    // The bad ones, each with the policy's words.
    EXPECT_EQ(aj_policy_set_net_mode(pol.p, "bridge", err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("bridge"), std::string::npos) << err.message();
    EXPECT_EQ(aj_policy_net_preset(pol.p, "no-such-preset", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_add_secret(pol.p, "no equals sign", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_set_net_log(pol.p, "relative.jsonl", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_remove_protect(pol.p, "never/protected/", err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_allow_host(pol.p, nullptr, err.out()), AJ_EINVAL);
    EXPECT_EQ(aj_policy_clear_env(nullptr, err.out()), AJ_EINVAL);
}

TEST(CApi, RunOptionsOfVersion3AreChecked) {
    Pol pol;
    Err err;
    ASSERT_EQ(aj_policy_load(&pol.p, "minimal", err.out()), AJ_OK);
    aj_sandbox* sb = nullptr;
    const char* argv[] = {"true", nullptr};
    aj_run_options o;
    ASSERT_EQ(aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION), AJ_OK);
    o.cgroup = 9;
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &o, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("cgroup"), std::string::npos) << err.message();
    ASSERT_EQ(aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION), AJ_OK);
    o.uid = -5;
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &o, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("uid"), std::string::npos) << err.message();
    ASSERT_EQ(aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION), AJ_OK);
    o.uid = 1000;  // without a gid
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &o, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("both"), std::string::npos) << err.message();
    EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_PLAN);
    ASSERT_EQ(aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION), AJ_OK);
    o.n_pass_fds = 1;
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &o, err.out()), AJ_EINVAL);
    ASSERT_EQ(aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION), AJ_OK);
    o.uid = ::getuid();
    o.gid = ::getgid();
    o.cgroup = AJ_CGROUP_UNDER;
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &o, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("cgroup parent"), std::string::npos) << err.message();
    o.cgroup = AJ_CGROUP_CALLER;
    o.result_path = "relative.json";
    EXPECT_EQ(aj_spawn(&sb, pol.p, argv, &o, err.out()), AJ_EINVAL);
    EXPECT_NE(err.message().find("absolute"), std::string::npos) << err.message();
    EXPECT_EQ(sb, nullptr);
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
