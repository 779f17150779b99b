// SPDX-License-Identifier: Apache-2.0
// Bad input, table-driven (issue 13): malformed, huge, deeply nested and cyclic
// policies, control characters and bytes that are not UTF-8 in names, flags with
// bad values, workspaces that are no directory, closed stdin/stdout/stderr. Each
// row runs the real command and must end with exit status 125 and exactly one line
// on stderr that names the problem (escaped: no control character reaches the
// terminal), and leave nothing behind: the workspace and TMPDIR as they were, no
// process of the run alive.
#include "common.hpp"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>

namespace ajit {
namespace {

struct BadInput {
    const char* name;
    // Files to make in the workspace before the run (it is also the cwd).
    std::function<void(const ajtest::TempDir&)> setup;
    std::vector<std::string> args;
    const char* needle;     // must appear in the line
    const char* shell = nullptr;  // run through sh -c with this redirection instead
    bool stderr_seen = true;      // false: stderr itself is closed, only the status says it
    bool needs_unprivileged = false;
};

void write(const ajtest::TempDir& d, const std::string& rel, const std::string& text) { d.write(rel, text); }

using ajtest::dir_entries;

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// A row whose policy file p.toml holds `text`, run with -p ./p.toml.
BadInput policy_row(const char* name, std::string text, const char* needle) {
    return {name, [text = std::move(text)](const ajtest::TempDir& d) { d.write("p.toml", text); },
            {"run", "-p", "./p.toml", "--", "true"}, needle};
}

const std::vector<BadInput>& table() {
    static const std::vector<BadInput> rows = {
        policy_row("MalformedToml", "[limits\n", "p.toml:1:"),
        policy_row("NestedTooDeep", "a = " + std::string(5000, '[') + std::string(5000, ']') + "\n",
                   "maximum nested value depth"),
        policy_row("HugePolicy", "description = \"" + std::string(3 << 20, 'x') + "\"\n", "larger than 1 MiB"),
        {"ExtendsCycle",
         [](auto& d) {
             write(d, "a.toml", "extends = \"./b.toml\"\n");
             write(d, "b.toml", "extends = \"./a.toml\"\n");
         },
         {"run", "-p", "./a.toml", "--", "true"}, "extends cycle"},
        {"ExtendsItself", [](auto& d) { write(d, "a.toml", "extends = \"./a.toml\"\n"); },
         {"run", "-p", "./a.toml", "--", "true"}, "extends cycle"},
        {"ExtendsADevice", [](auto& d) { write(d, "a.toml", "extends = \"/dev/zero\"\n"); },
         {"run", "-p", "./a.toml", "--", "true"}, "not a regular file"},
        {"PolicyIsADirectory", [](auto& d) { d.mkdir("dir.toml"); }, {"run", "-p", "./dir.toml", "--", "true"},
         "dir.toml"},
        policy_row("PolicyNotUtf8", "description = \"\xff\xfe\"\n", "p.toml:1:"),
        policy_row("EscapeInAKey", "[environment]\nset = { \"A\\u001b]0;owned\\u0007\" = \"x\" }\n",
                   "A\\x1b]0;owned\\x07"),
        policy_row("NulInAKey", "[environment]\nset = { \"N\\u0000X\" = \"x\" }\n", "N\\x00X"),
        // toml++ 3.3 reaches undefined behaviour on some of these (fuzz_policy).
        policy_row("NonAsciiOutsideAString", "description = \"ok\"\nk\xd2\x91 = 1\n",
                   "p.toml:2:2: a character beyond ASCII outside a string"),
        // A quote where no string may start ("-'") is no string to toml++ either.
        policy_row("NonAsciiAfterAStrayQuote", "description = -'x\xd2\x91\n",
                   "p.toml:1:18: a character beyond ASCII outside a string"),
        policy_row("UnknownKey", "[limits]\nmemroy = \"1G\"\n", "p.toml:2:1: limits.memroy"),
        policy_row("WrongType", "[limits]\npids = \"many\"\n", "p.toml:2:"),
        {"CheckEscapesTheFileName", [](auto& d) { write(d, "p\x1b[2J.toml", "[limits\n"); },
         {"check", "./p\x1b[2J.toml"}, "p\\x1b[2J.toml"},
        {"MissingPolicy", nullptr, {"run", "-p", "./nope.toml", "--", "true"}, "nope.toml"},
        {"PolicyWithoutValue", nullptr, {"run", "-p"}, "--policy"},
        {"MemoryNotASize", nullptr, {"run", "-m", "lots", "--", "true"}, "--memory: bad size 'lots'"},
        {"MemoryZero", nullptr, {"run", "-m", "0", "--", "true"}, "--memory"},
        {"MemoryWithNewline", nullptr, {"run", "-m", "1G\nagentjail: fake", "--", "true"}, "1G\\x0aagentjail"},
        {"PidsOverflow", nullptr, {"run", "--pids", "99999999999999999999", "--", "true"}, "--pids"},
        {"PidsZero", nullptr, {"run", "--pids", "0", "--", "true"}, "--pids"},
        {"CpusNan", nullptr, {"run", "--cpus", "nan", "--", "true"}, "--cpus"},
        {"CpusZero", nullptr, {"run", "--cpus", "0", "--", "true"}, "--cpus"},
        {"TimeoutNegative", nullptr, {"run", "--timeout", "-5", "--", "true"}, "--timeout"},
        {"TmpfsSizeZero", nullptr, {"run", "--tmpfs", "/x:0", "--", "true"}, "--tmpfs"},
        {"TmpfsBadSize", nullptr, {"run", "--tmpfs", "/x:huge", "--", "true"}, "--tmpfs"},
        {"RoEmpty", nullptr, {"run", "--ro", "", "--", "true"}, "--ro"},
        {"NetModeUnknown", nullptr, {"run", "--net", "bogus", "--", "true"}, "--net"},
        {"HostWithSpace", nullptr, {"run", "--net", "proxy", "--allow-host", "a b", "--", "true"}, "--allow-host"},
        {"EnvWithoutName", nullptr, {"run", "--env", "=x", "--", "true"}, "--env"},
        {"UnknownFlag", nullptr, {"run", "--frobnicate", "--", "true"}, "--frobnicate"},
        {"EscapeInAFlag", nullptr, {"run", "--\x1b[31mred", "--", "true"}, "--\\x1b[31mred"},
        {"NoCommand", nullptr, {"run", "--"}, "no command given"},
        {"WorkspaceIsAFile", [](auto& d) { write(d, "afile", "x"); }, {"run", "-C", "./afile", "--", "true"},
         "is not a directory"},
        {"WorkspaceIsAFifo", [](auto& d) { ASSERT_EQ(::mkfifo((d.path() + "/fifo").c_str(), 0600), 0); },
         {"run", "-C", "./fifo", "--", "true"}, "is not a directory"},
        {"WorkspaceIsADanglingLink",
         [](auto& d) { ASSERT_EQ(::symlink("/nonexistent/agentjail", (d.path() + "/link").c_str()), 0); },
         {"run", "-C", "./link", "--", "true"}, "link"},
        {"WorkspaceMissing", nullptr, {"run", "-C", "./nothing-here", "--", "true"}, "nothing-here"},
        {"StdinClosed", nullptr, {"run", "--", "true"}, "stdin (fd 0) is closed", "<&-"},
        {"StdoutClosed", nullptr, {"run", "--", "true"}, "stdout (fd 1) is closed", ">&-"},
        {"StderrClosed", nullptr, {"run", "--", "true"}, "", "2>&-", false},
        {"UnreadablePolicy",
         [](auto& d) {
             std::string p = d.write("p.toml", "[limits]\npids = 10\n");
             ASSERT_EQ(::chmod(p.c_str(), 0), 0);
         },
         {"run", "-p", "./p.toml", "--", "true"}, "p.toml", nullptr, true, true},
    };
    return rows;
}

class BadInputTest : public ::testing::TestWithParam<size_t> {};

TEST_P(BadInputTest, RefusedWithOneLineAndNothingLeft) {
    const BadInput& row = table()[GetParam()];
    if (row.needs_unprivileged && ::geteuid() == 0)
        GTEST_SKIP() << "root reads a file of mode 0000 anyway; this row runs in the unprivileged pass";
    ajtest::TempDir ws("aj-badin");
    ajtest::TempDir tmp("aj-badin-tmp");
    if (row.setup) row.setup(ws);
    if (HasFatalFailure()) return;
    const auto before = dir_entries(ws.path());
    const std::string marker = unique_name("ajbadinput");

    ajtest::RunOptions opts;
    opts.cwd = ws.path();
    opts.env = {"TMPDIR=" + tmp.path(), "AJ_TEST_MARKER=" + marker};
    opts.timeout_ms = 20000;
    std::vector<std::string> args = row.args;
    ajtest::RunOutput r;
    if (row.shell != nullptr) {
        std::string cmd = "exec " + shell_quote(ajtest::agentjail_bin());
        for (const auto& a : args) cmd += " " + shell_quote(a);
        // The marker rides on the command line, where pids_with_marker looks.
        cmd += " " + std::string(row.shell) + " # " + marker;
        r = ajtest::run_with({"/bin/sh", "-c", cmd}, opts);
    } else {
        r = ajtest::agentjail_with(args, opts);
    }
    ASSERT_FALSE(r.timed_out) << describe(r);
    EXPECT_EQ(r.status, 125) << describe(r);
    if (row.stderr_seen) {
        ASSERT_FALSE(r.err.empty()) << describe(r);
        EXPECT_EQ(r.err.back(), '\n') << describe(r);
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << describe(r);
        for (size_t i = 0; i + 1 < r.err.size(); ++i) {
            auto c = static_cast<unsigned char>(r.err[i]);
            EXPECT_FALSE(c < 0x20 || c == 0x7f) << "control byte " << int(c) << " at " << i << ": " << describe(r);
        }
        EXPECT_TRUE(ajtest::contains(r.err, row.needle)) << "expected '" << row.needle << "': " << describe(r);
    } else {
        EXPECT_EQ(r.err, "") << describe(r);
    }
    // Nothing half-built left: no placeholder or state in the workspace, nothing in
    // TMPDIR, no process.
    EXPECT_EQ(dir_entries(ws.path()), before) << "the workspace changed";
    EXPECT_TRUE(dir_entries(tmp.path()).empty()) << "TMPDIR is not empty";
    EXPECT_TRUE(ajtest::wait_no_pids_with_marker(marker, 2000)) << "a process of the run is still alive";
}

std::string row_name(const ::testing::TestParamInfo<size_t>& info) { return table()[info.param].name; }

INSTANTIATE_TEST_SUITE_P(Table, BadInputTest, ::testing::Range<size_t>(0, table().size()), row_name);

// The positive control: the same harness, a good policy from the same kind of file
// and the same flags' good values, runs the command (exit 0) and leaves the
// workspace as it was. Without it a harness that always saw 125 would prove nothing.
TEST(BadInputControl, GoodInputRunsThroughTheSameHarness) {
    ajtest::TempDir ws("aj-badin");
    ajtest::TempDir tmp("aj-badin-tmp");
    ws.write("p.toml", "extends = \"default\"\n[environment]\nset = { A = \"b\" }\n");
    const auto before = dir_entries(ws.path());
    ajtest::RunOptions opts;
    opts.cwd = ws.path();
    opts.env = {"TMPDIR=" + tmp.path()};
    auto r = ajtest::agentjail_with({"run", "-p", "./p.toml", "--timeout", "30s", "--tmpfs", "/x:1M", "--", "true"}, opts);
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(dir_entries(ws.path()), before) << "the workspace changed";
    EXPECT_TRUE(dir_entries(tmp.path()).empty()) << "TMPDIR is not empty";
}

// A closed stdio is refused before anything else is read, the result record's
// flags too: a run that asked for a record still gets its XX record, saying why (as
// for any other refusal before the command runs). The control: the same command with
// stdout open writes a record of a run that ran.
TEST(BadInputRecord, ClosedStdioStillWritesTheXxRecord) {
    ajtest::TempDir t("aj-badin-rec");
    ajtest::RunOptions opts;
    opts.cwd = t.path();
    opts.env = {"TMPDIR=" + t.path()};
    opts.timeout_ms = 20000;
    const std::string cmd = "exec " + shell_quote(ajtest::agentjail_bin()) +
                            " run --policy minimal --result-file ./rec.json -- /bin/true";
    auto ok = ajtest::run_with({"/bin/sh", "-c", cmd}, opts);
    ASSERT_EQ(ok.status, 0) << describe(ok);
    auto j = nlohmann::json::parse(ajtest::read_file(t.path() + "/rec.json"));
    EXPECT_EQ(j["exit_code"], 0) << j.dump();
    ASSERT_EQ(::unlink((t.path() + "/rec.json").c_str()), 0);

    for (const char* redir : {">&-", "<&-", "2>&-"}) {
        auto r = ajtest::run_with({"/bin/sh", "-c", cmd + " " + redir}, opts);
        EXPECT_EQ(r.status, 125) << redir << ": " << describe(r);
        const std::string rec = ajtest::read_file(t.path() + "/rec.json");
        ASSERT_FALSE(rec.empty()) << redir << ": no record written";
        auto x = nlohmann::json::parse(rec);
        EXPECT_EQ(x["status"], "XX") << x.dump();
        EXPECT_TRUE(ajtest::contains(x["message"].get<std::string>(), "is closed")) << x.dump();
        ASSERT_EQ(::unlink((t.path() + "/rec.json").c_str()), 0);
    }
}

}  // namespace
}  // namespace ajit
