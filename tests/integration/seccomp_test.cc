// SPDX-License-Identifier: Apache-2.0
// Integration: the seccomp denial log (--seccomp-log: one JSON line per refused call,
// naming the syscall and the policy rule) and the strict built-in policy (an
// allow-list over default-deny that still runs a shell).
#include "seccomp_support.hpp"

#include <sys/syscall.h>

#include <fstream>
#include <regex>

using ajit::describe;
using ajit::Sandbox;
using ajsc::Mode;
using ajsc::probe;
using ajsc::run_in;
using ajsc::value_or;

namespace {
// Line LINE of the built-in policy file named in a record's rule ("default.toml:12:3").
std::string policy_line(const std::string& rule, std::string* why) {
    std::smatch m;
    static const std::regex re(R"(^([a-z]+\.toml):([0-9]+):([0-9]+)$)");
    if (!std::regex_match(rule, m, re)) {
        *why = "not FILE.toml:LINE:COL";
        return "";
    }
    std::ifstream in(std::string(AJ_SOURCE_DIR) + "/policies/" + m[1].str());
    if (!in) {
        *why = "no such built-in policy file";
        return "";
    }
    int want = std::stoi(m[2].str()), n = 0;
    std::string l;
    while (std::getline(in, l))
        if (++n == want) return l;
    *why = "the file has only " + std::to_string(n) + " lines";
    return "";
}
// denials.syscalls of a --result-file record, -1 when it is not there.
long long syscall_denials(const std::string& path) {
    try {
        return nlohmann::json::parse(ajtest::read_file(path))
            .at("denials")
            .at("syscalls")
            .get<long long>();
    } catch (const std::exception&) {
        return -1;
    }
}
}  // namespace

// A probe that makes exactly three refused calls (ptrace, bpf, unshare), directly,
// writes exactly three records: each names its syscall, the x86-64 arch, its number
// and arguments, the action, and the rule as default.toml:LINE:COL pointing at a
// line of the policy that exists and at a rule explain lists for that syscall; the
// run's result record counts three denials.
TEST_F(Sandbox, SeccompLogHasOneRecordPerRefusedCall) {
    ajtest::TempDir out("aj-result");
    std::string result = out.path() + "/result.json";
    auto r = run_in(jail, Mode::default_policy, probe({"three"}), {"--result-file", result});
    ASSERT_EQ(r.run.status, 0) << ajsc::describe(r);
    // The run's result counts them too.
    EXPECT_EQ(syscall_denials(result), 3) << ajtest::read_file(result);
    EXPECT_EQ(value_or(r.res, "ptrace"), "EPERM") << r.run.out;
    EXPECT_EQ(value_or(r.res, "bpf"), "EPERM") << r.run.out;
    EXPECT_EQ(value_or(r.res, "unshare"), "EPERM") << r.run.out;
    ASSERT_EQ(r.log_error, "") << ajsc::describe(r);
    ASSERT_EQ(r.denials.size(), 3u) << ajsc::describe(r);
    const struct {
        const char* name;
        long nr;
        std::uint64_t arg0;
    } want[] = {{"ptrace", SYS_ptrace, 16 /* PTRACE_ATTACH */},
                {"bpf", SYS_bpf, 0xffffffffULL},
                {"unshare", SYS_unshare, 0x10000000 /* CLONE_NEWUSER */}};
    for (size_t i = 0; i < 3; ++i) {
        const auto& d = r.denials[i];
        EXPECT_EQ(d.syscall, want[i].name) << d.line;  // in the order they were made
        EXPECT_EQ(d.nr, want[i].nr) << d.line;
        EXPECT_EQ(d.arch, "x86_64") << d.line;
        EXPECT_EQ(d.action, "errno:EPERM") << d.line;
        ASSERT_EQ(d.args.size(), 6u) << d.line;
        // bpf(-1): the kernel passes the int command as the 64-bit register holds it.
        if (std::string(want[i].name) == "bpf") {
            EXPECT_EQ(d.args[0] & 0xffffffffULL, want[i].arg0) << d.line;
        } else {
            EXPECT_EQ(d.args[0], want[i].arg0) << d.line;
        }
        EXPECT_GT(d.pid, 0) << d.line;
        EXPECT_TRUE(std::regex_match(d.rule, std::regex(R"(^default\.toml:[0-9]+:[0-9]+$)")))
            << d.line;
        std::string why;
        std::string line = policy_line(d.rule, &why);
        EXPECT_NE(ajtest::trim(line), "") << d.rule << ": " << why << "\n" << d.line;
        EXPECT_NE(ajtest::trim(line).rfind('#', 0), 0u)
            << d.rule << " points at a comment: " << line;
        std::cout << "[   NOTE   ] " << d.syscall << " <- " << d.rule << ": " << ajtest::trim(line)
                  << "\n";
    }
    // The rule named is the one that covers the call, as explain lists the rules.
    auto e = jail.run({"explain", "--json", "-C", jail.ws(), "--", "true"});
    ASSERT_EQ(e.status, 0) << describe(e);
    nlohmann::json rules;
    try {
        rules = nlohmann::json::parse(e.out).at("seccomp").at("rules");
    } catch (const std::exception& ex) {
        FAIL() << "explain --json has no seccomp.rules: " << ex.what();
    }
    for (const auto& d : r.denials) {
        bool covered = false;
        for (const auto& rule : rules) {
            if (rule.value("where", std::string()) != d.rule || !rule.contains("syscalls"))
                continue;
            for (const auto& s : rule["syscalls"]) covered = covered || s == d.syscall;
            EXPECT_EQ(rule.value("why", std::string()), d.why) << d.line;
        }
        EXPECT_TRUE(covered) << d.rule << " is not a rule that lists " << d.syscall << "\n"
                             << e.out;
    }
}

// A run without any refused call writes the log file, empty; the filter's allowed
// path (an ordinary shell pipeline) never produces a record.
TEST_F(Sandbox, SeccompLogIsEmptyWithoutRefusals) {
    ajtest::TempDir out("aj-result");
    std::string result = out.path() + "/result.json";
    auto r =
        run_in(jail, Mode::default_policy, {"/bin/sh", "-c", "ls / | wc -l >/dev/null; echo done"},
               {"--result-file", result});
    ASSERT_EQ(r.run.status, 0) << ajsc::describe(r);
    EXPECT_EQ(syscall_denials(result), 0) << ajtest::read_file(result);
    EXPECT_EQ(ajtest::trim(r.run.out), "done");
    EXPECT_EQ(r.log_error, "") << ajsc::describe(r);
    EXPECT_EQ(r.log_text, "") << "records for a run that made no refused call";
    // Control: the same log file option with one refused call is not empty (the
    // emptiness above is not an unwritten log).
    auto c = run_in(jail, Mode::default_policy, probe({"call", "ptrace"}));
    EXPECT_EQ(value_or(c.res, "ptrace"), "EPERM") << c.run.out;
    EXPECT_EQ(c.denials.size(), 1u) << ajsc::describe(c);
}

// The log is opened by agentjail, outside the sandbox: the command cannot see or
// reach it, and a log path that cannot be created is agentjail's own error (125).
TEST_F(Sandbox, SeccompLogUnwritableIsAnError) {
    auto r = jail.run(
        {"-C", jail.ws(), "--seccomp-log", "/proc/aj-no-such-dir/log.jsonl", "--", "true"});
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(r.err.rfind("agentjail: ", 0), 0u) << r.err;
}

// strict: a shell and ls work under the allow-list; a call outside it (acct, and a
// number above any table) is refused with EPERM and logged.
TEST_F(Sandbox, StrictPolicyRunsAShellAndRefusesTheRest) {
    auto sh = run_in(jail, Mode::strict, {"/bin/sh", "-c", "ls / >/dev/null && echo ok"});
    EXPECT_EQ(sh.run.status, 0) << ajsc::describe(sh);
    EXPECT_EQ(ajtest::trim(sh.run.out), "ok") << ajsc::describe(sh);
    EXPECT_EQ(sh.log_text, "") << "strict refused something a shell needs:\n" << sh.log_text;

    auto r = run_in(jail, Mode::strict, probe({"call", "acct", "ptrace", "fork", "pthread"}));
    ASSERT_EQ(r.run.status, 0) << ajsc::describe(r);
    EXPECT_EQ(value_or(r.res, "acct"), "EPERM") << r.run.out;
    EXPECT_EQ(value_or(r.res, "ptrace"), "EPERM") << r.run.out;
    EXPECT_EQ(value_or(r.res, "fork"), "ok") << r.run.out;
    EXPECT_EQ(value_or(r.res, "pthread"), "ok") << r.run.out;
    EXPECT_TRUE(r.logged("acct")) << ajsc::describe(r);
    auto hi = run_in(jail, Mode::strict, probe({"sweep", "x86_64", "1000", "1000"}));
    EXPECT_EQ(ajsc::sweep_results(hi.run.out)[1000], "EPERM") << ajsc::describe(hi);

    // Control: the same number under default reaches the kernel (ENOSYS), so the
    // EPERM above is strict's default action.
    auto d = run_in(jail, Mode::default_policy, probe({"sweep", "x86_64", "1000", "1000"}));
    EXPECT_EQ(ajsc::sweep_results(d.run.out)[1000], "ENOSYS") << ajsc::describe(d);
    auto a = run_in(jail, Mode::minimal, probe({"call", "acct"}));
    EXPECT_NE(value_or(a.res, "acct"), "<missing>") << describe(a.run);
}
