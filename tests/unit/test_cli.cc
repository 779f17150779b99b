// SPDX-License-Identifier: Apache-2.0
// Unit tests of the agentjail command line that need no sandbox: help and version,
// usage errors (one line, status 125), flags turned into overrides (seen through
// `explain`, which plans but never clones), check, policies and doctor.
#include "doctor/doctor.hpp"
#include "policy/policy.hpp"

#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ajtest::RunOutput;

std::string show(const RunOutput& r) {
    return "status " + std::to_string(r.status) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

bool has(const std::string& text, const std::string& needle) {
    return text.find(needle) != std::string::npos;
}

std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// An agentjail error: status 125 and exactly one line "agentjail: ..." on stderr.
void expect_one_line_error(const RunOutput& r, const std::string& needle) {
    EXPECT_EQ(r.status, 125) << show(r);
    auto lines = split_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << show(r);
    EXPECT_EQ(lines[0].rfind("agentjail: ", 0), 0u) << show(r);
    EXPECT_TRUE(has(lines[0], needle)) << "expected '" << needle << "'\n" << show(r);
}

// The first line is the version alone (what scripts read); then the commit the build
// was made from (one this checkout has, when it is one), the kind of build, the
// libseccomp linked and the Landlock ABIs (issue 28, item 6).
TEST(Cli, VersionPrintsTheVersionTheCommitAndTheBuild) {
    auto r = ajtest::agentjail({"--version"});
    EXPECT_EQ(r.status, 0) << show(r);
    const auto lines = ajtest::lines(r.out);
    ASSERT_EQ(lines.size(), 5u) << show(r);
    EXPECT_EQ(lines[0], std::string("agentjail ") + AGENTJAIL_VERSION) << show(r);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[1], m, std::regex("commit: ([0-9a-f]{12})(-dirty)?"))) << show(r);
    if (ajtest::exists(std::string(AJ_SOURCE_DIR) + "/.git")) {
        auto known = ajtest::run({"git", "-C", AJ_SOURCE_DIR, "cat-file", "-e", m[1].str() + "^{commit}"});
        EXPECT_EQ(known.status, 0) << "not a commit of this checkout: " << lines[1];
    }
    EXPECT_TRUE(std::regex_match(lines[2], std::regex("build: [A-Za-z]+, (static \\(only libc is a shared library\\)|dynamic)")))
        << show(r);
    EXPECT_TRUE(std::regex_match(lines[3], std::regex("libseccomp: [0-9]+\\.[0-9]+\\.[0-9]+"))) << show(r);
    EXPECT_TRUE(std::regex_match(lines[4], std::regex("landlock: ABI [1-9] known; this kernel: (ABI [0-9]+|none)")))
        << show(r);
}

TEST(Cli, HelpNamesEveryFlagAndTheExamples) {
    for (const char* h : {"--help", "-h"}) {
        auto r = ajtest::agentjail({h});
        EXPECT_EQ(r.status, 0) << show(r);
        for (const char* flag :
             {"--policy", "-p [", "--workspace", "-C [", "--ro", "--rw", "--hide", "--tmpfs",
              "--env ", "-e [", "--env-file", "--hostname", "--cwd", "--verbose", "-v [", "--help"})
            EXPECT_TRUE(has(r.out, flag)) << h << " lacks " << flag << "\n" << r.out;
        for (const char* ex :
             {"agentjail -- claude", "agentjail --policy minimal -- /bin/true",
              "agentjail -C ~/project --ro ~/datasets --hide ~/project/secrets -e "
              "FOO=bar -- make test",
              "agentjail explain -- claude", "agentjail check my.toml", "agentjail doctor"})
            EXPECT_TRUE(has(r.out, ex)) << h << " lacks the example " << ex << "\n" << r.out;
        EXPECT_TRUE(r.err.empty()) << r.err;
    }
}

TEST(Cli, EverySubcommandHasItsOwnHelp) {
    auto run = ajtest::agentjail({"run", "--help"});
    EXPECT_EQ(run.status, 0) << show(run);
    EXPECT_TRUE(has(run.out, "--workspace")) << run.out;
    auto explain = ajtest::agentjail({"explain", "-h"});
    EXPECT_EQ(explain.status, 0) << show(explain);
    EXPECT_TRUE(has(explain.out, "--json")) << explain.out;
    EXPECT_TRUE(has(explain.out, "agentjail explain -- claude")) << explain.out;
    for (const char* verb : {"check", "doctor", "policies", "gc"}) {
        auto r = ajtest::agentjail({verb, "--help"});
        EXPECT_EQ(r.status, 0) << verb << "\n" << show(r);
        EXPECT_TRUE(has(r.out, std::string("agentjail ") + verb)) << r.out;
        EXPECT_TRUE(has(r.out, "Examples")) << r.out;
    }
    // run --json is the result record (test_limits_cli.cc); explain's --json is the plan.
    EXPECT_TRUE(has(run.out, "--result-file")) << run.out;
}

TEST(Cli, UsageErrorsAreOneLineAnd125) {
    expect_one_line_error(ajtest::agentjail({}), "no command given");
    expect_one_line_error(ajtest::agentjail({"--bogus", "true"}), "--bogus");
    expect_one_line_error(ajtest::agentjail({"run"}), "no command given");
    expect_one_line_error(ajtest::agentjail({"--policy"}), "policy");
    // No abbreviations: --pol is not --policy.
    expect_one_line_error(ajtest::agentjail({"--pol", "minimal", "--", "true"}), "--pol");
    // A scalar flag given twice is ambiguous: refused instead of silently picking one.
    expect_one_line_error(ajtest::agentjail({"explain", "-C", "/tmp", "-C", "/usr", "--", "true"}),
                          "workspace");
    expect_one_line_error(ajtest::agentjail({"explain", "-e", "1BAD=x", "--", "true"}), "1BAD");
    expect_one_line_error(ajtest::agentjail({"explain", "-e", "=x", "--", "true"}),
                          "variable name");
    expect_one_line_error(ajtest::agentjail({"explain", "--tmpfs", "/scratch:lots", "--", "true"}),
                          "lots");
    expect_one_line_error(ajtest::agentjail({"explain", "--hostname", "bad host", "--", "true"}),
                          "--hostname");
    expect_one_line_error(
        ajtest::agentjail({"explain", "--env-file", "/nonexistent/env", "--", "true"}),
        "/nonexistent/env");
    expect_one_line_error(ajtest::agentjail({"doctor", "extra"}), "extra");
    expect_one_line_error(ajtest::agentjail({"policies", "--bogus"}), "--bogus");
    expect_one_line_error(ajtest::agentjail({"check"}), "no FILE");
    // Every other subcommand's flags are the ones its help names (cli/verb_args.hpp).
    expect_one_line_error(ajtest::agentjail({"log", "--jsn"}), "did you mean --json?");
    expect_one_line_error(ajtest::agentjail({"doctor", "--json=yes"}), "--json takes no value");
    expect_one_line_error(ajtest::agentjail({"runs", "extra"}), "runs: takes no arguments, got 'extra'");
    expect_one_line_error(ajtest::agentjail({"trust", "-y", "--bogus"}), "unknown option '--bogus'");
    expect_one_line_error(ajtest::agentjail({"trust", "a.toml", "b.toml"}), "unexpected argument 'b.toml'");
    expect_one_line_error(ajtest::agentjail({"secret", "set", "NAME", "--host"}), "--host needs a value");
    expect_one_line_error(ajtest::agentjail({"secret", "list", "--host", "x.example"}),
                          "--host is for secret set");
    expect_one_line_error(ajtest::agentjail({"apply", "--forse", "20261206-231500-ab12cd"}),
                          "did you mean --force?");
    expect_one_line_error(ajtest::agentjail({"discard", "--json"}), "unknown option '--json'");
}

TEST(Cli, UnknownPolicyFailsBeforeAnythingRuns) {
    ajtest::TempDir d("aj-cli");
    std::string marker = d.path() + "/ran";
    // If the command ran, it would create the marker: the policy error must come first.
    auto r = ajtest::agentjail({"--policy", "no-such-policy", "--", "touch", marker});
    expect_one_line_error(r, "no-such-policy");
    EXPECT_FALSE(ajtest::exists(marker));
    auto e = ajtest::agentjail({"explain", "-p", "no-such-policy"});
    expect_one_line_error(e, "no-such-policy");
}

// explain --json, parsed; asserts the command line it got.
nlohmann::json explain_json(const std::vector<std::string>& args,
                            const std::vector<std::string>& env = {}, const std::string& cwd = {}) {
    std::vector<std::string> a{"explain", "--json"};
    a.insert(a.end(), args.begin(), args.end());
    auto r = ajtest::agentjail(a, env, cwd);
    EXPECT_EQ(r.status, 0) << show(r);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON\n" << show(r);
    return j;
}

TEST(Cli, TheFirstNonOptionWordEndsTheOptions) {
    auto j = explain_json({"-p", "minimal", "ls", "-l", "--ro", "/x", "-v"});
    ASSERT_TRUE(j.contains("argv")) << j.dump(2);
    EXPECT_EQ(j["argv"], nlohmann::json::array({"ls", "-l", "--ro", "/x", "-v"}));
    EXPECT_EQ(j["policy"], "minimal");
    auto k = explain_json({"-p", "minimal", "--", "-v", "x"});
    EXPECT_EQ(k["argv"], nlohmann::json::array({"-v", "x"}));
    // Options bundle and attach as getopt's do: -vpminimal is -v -p minimal.
    auto b = explain_json({"-vpminimal", "true"});
    EXPECT_EQ(b["policy"], "minimal");
    EXPECT_EQ(b["argv"], nlohmann::json::array({"true"}));
    // An attached value does not eat the next word.
    b = explain_json({"-vp", "minimal", "--hostname=box", "hostname", "--hostname"});
    EXPECT_EQ(b["hostname"], "box");
    EXPECT_EQ(b["argv"], nlohmann::json::array({"hostname", "--hostname"}));
    b = explain_json({"-vp", "minimal", "--hostname", "box", "true"});
    EXPECT_EQ(b["policy"], "minimal");
    EXPECT_EQ(b["argv"], nlohmann::json::array({"true"}));
}

TEST(Cli, ExplainWithoutCommandUsesTheShell) {
    auto j = explain_json({"-p", "minimal"}, {"SHELL=/bin/sh"});
    EXPECT_EQ(j["argv"], nlohmann::json::array({"/bin/sh"}));
}

// Every flag lands on the policy as an override with the "command line" origin,
// relative paths made absolute against the caller's cwd and ~ against $HOME.
TEST(Cli, FlagsBecomeOverridesWithResolvedPaths) {
    ajtest::TempDir d("aj-cli");
    std::string home = d.mkdir("home");
    d.mkdir("home/datasets");
    std::string ws = d.mkdir("ws");
    d.mkdir("ws/data");
    d.mkdir("ws/cache");
    std::string envfile = d.write("ws/vars.env", "FROM_FILE=1\n");
    std::vector<std::string> env{"HOME=" + home, "MY_TOKEN=t0ken"};
    auto r = ajtest::agentjail({"explain",
                                "-C",
                                ".",
                                "--ro",
                                "data",
                                "--ro",
                                "~/datasets:/datasets",
                                "--rw",
                                "./cache",
                                "--hide",
                                "secret*",
                                "--tmpfs",
                                "/scratch:64M",
                                "-e",
                                "FOO=bar",
                                "-e",
                                "MY_TOKEN",
                                "--env-file",
                                "vars.env",
                                "--hostname",
                                "box",
                                "--cwd",
                                ".",
                                "--",
                                "true"},
                               env, ws);
    ASSERT_EQ(r.status, 0) << show(r);
    for (const std::string& line : std::vector<std::string>{
             "--workspace " + ws, "--ro " + ws + "/data", "--ro " + home + "/datasets -> /datasets",
             "--rw " + ws + "/cache", "--hide " + ws + "/secret*",
             "--tmpfs /scratch (67108864 bytes)", "--env FOO=bar",
             "--env MY_TOKEN (passed from the caller)", "--hostname box", "--cwd " + ws})
        EXPECT_TRUE(has(r.out, "  " + line + "\n")) << "missing override '" << line << "'\n"
                                                    << r.out;

    // The same through the plan: what run would do.
    auto j = explain_json(
        {"-C", ".", "--ro", "data", "--ro", "~/datasets:/datasets", "-e", "FOO=bar", "-e",
         "MY_TOKEN", "--env-file", "vars.env", "--hostname", "box", "--", "true"},
        env, ws);
    EXPECT_EQ(j["workspace"], ws);
    EXPECT_EQ(j["hostname"], "box");
    // Below the workspace a read-only bind of itself is the view's protection (guards).
    std::string mounts = j["mounts"].dump() + j["guards"].dump();
    EXPECT_TRUE(has(mounts, "\"" + ws + "/data\"")) << mounts;
    EXPECT_TRUE(has(mounts, "\"/datasets\"")) << mounts;
    EXPECT_TRUE(has(mounts, "command line (--ro)")) << mounts;
    const auto& envs = j["env"];
    EXPECT_EQ(envs.value("FOO", ""), "bar") << envs.dump();
    EXPECT_EQ(envs.value("FROM_FILE", ""), "1") << envs.dump();
    // -e NAME lifts the secret filter for exactly that name.
    EXPECT_TRUE(envs.contains("MY_TOKEN")) << envs.dump();
}

// One size grammar (issue 13): --tmpfs PATH:SIZE takes what -m and the policy's
// sizes take, fractions and MiB spellings included, and refuses the same things.
TEST(Cli, TmpfsSizesAndMemorySizesShareOneGrammar) {
    for (const auto& [spelling, bytes] : std::vector<std::pair<std::string, std::string>>{
             {"1.5G", "1610612736"}, {"512MiB", "536870912"}, {"64MB", "67108864"}, {"100k", "102400"},
             {"4096", "4096"}}) {
        auto r = ajtest::agentjail({"explain", "--tmpfs", "/scratch:" + spelling, "-m", spelling, "--", "true"});
        ASSERT_EQ(r.status, 0) << spelling << "\n" << show(r);
        EXPECT_TRUE(has(r.out, "--tmpfs /scratch (" + bytes + " bytes)")) << spelling << "\n" << r.out;
    }
    for (const std::string bad : {"1.5X", "0.5", "-1M", "1e3", "9999999999999T", ""}) {
        expect_one_line_error(ajtest::agentjail({"explain", "--tmpfs", "/scratch:" + bad, "--", "true"}),
                              "--tmpfs");
        expect_one_line_error(ajtest::agentjail({"explain", "-m", bad, "--", "true"}), "");
    }
    expect_one_line_error(ajtest::agentjail({"explain", "--tmpfs", "/scratch:0", "--", "true"}), "0 bytes");
}

TEST(Cli, SecretsStayFilteredUnlessNamed) {
    ajtest::TempDir d("aj-cli");
    std::vector<std::string> env{"HOME=" + d.mkdir("home"), "OTHER_TOKEN=s3cret"};
    auto j = explain_json({"-C", d.mkdir("ws"), "--", "true"}, env);
    ASSERT_TRUE(j["env"].contains("PATH")) << j["env"].dump();
    EXPECT_FALSE(j["env"].contains("OTHER_TOKEN")) << j["env"].dump();
}

TEST(Cli, CheckReportsEachFile) {
    ajtest::TempDir d("aj-cli");
    std::string good = d.write("good.toml", "extends = \"minimal\"\n");
    std::string bad = d.write("bad.toml", "extends = \"minimal\"\nnot_a_key = 1\n");
    auto ok = ajtest::agentjail({"check", good});
    EXPECT_EQ(ok.status, 0) << show(ok);
    EXPECT_EQ(ok.out, good + ": ok\n");
    auto both = ajtest::agentjail({"check", good, bad, d.path() + "/missing.toml"});
    EXPECT_EQ(both.status, 125) << show(both);
    EXPECT_TRUE(has(both.out, good + ": ok")) << show(both);
    EXPECT_TRUE(has(both.err, bad + ":2:")) << show(both);
    EXPECT_TRUE(has(both.err, "missing.toml: ENOENT")) << show(both);
    // A bare word is a file here, not the built-in of that name.
    auto word = ajtest::agentjail({"check", "default"}, {}, d.path());
    EXPECT_EQ(word.status, 125) << show(word);
    // Relative to the cwd.
    auto rel = ajtest::agentjail({"check", "good.toml"}, {}, d.path());
    EXPECT_EQ(rel.status, 0) << show(rel);
    EXPECT_EQ(rel.out, "good.toml: ok\n");
}

TEST(Cli, PoliciesListsEveryBuiltinWithItsDescription) {
    auto r = ajtest::agentjail({"policies"});
    ASSERT_EQ(r.status, 0) << show(r);
    const auto& builtins = agentjail::policy::builtins();
    ASSERT_FALSE(builtins.empty());
    auto lines = split_lines(r.out);
    EXPECT_EQ(lines.size(), builtins.size()) << r.out;
    for (const auto& b : builtins) {
        bool found = false;
        for (const auto& l : lines)
            found = found || (l.rfind(b.name + " ", 0) == 0 && has(l, b.description));
        EXPECT_TRUE(found) << b.name << " missing\n" << r.out;
    }
}

TEST(Cli, DoctorPrintsEveryCheckAndExitsByFailures) {
    auto checks = agentjail::doctor::run_checks();
    auto r = ajtest::agentjail({"doctor"});
    bool any_fail = false;
    for (const auto& c : checks) {
        any_fail = any_fail || c.status == agentjail::doctor::Check::Status::fail;
        // Status can differ between two probes only if the host changed meanwhile;
        // the name must be there either way.
        EXPECT_TRUE(has(r.out, "  " + c.name + ": ")) << c.name << "\n" << show(r);
    }
    const auto all = split_lines(r.out);
    ASSERT_FALSE(all.empty()) << show(r);
    EXPECT_EQ(all[0].rfind("environment: ", 0), 0u) << "the first line says where agentjail runs\n" << show(r);
    for (const auto& l : std::vector<std::string>(all.begin() + 1, all.end())) {
        bool check_line =
            l.rfind("ok    ", 0) == 0 || l.rfind("warn  ", 0) == 0 || l.rfind("FAIL  ", 0) == 0;
        bool fix_line = l.rfind("      fix: ", 0) == 0;
        EXPECT_TRUE(check_line || fix_line) << "unexpected line '" << l << "'";
    }
    EXPECT_EQ(r.status, any_fail ? 1 : 0) << show(r);
}

}  // namespace
