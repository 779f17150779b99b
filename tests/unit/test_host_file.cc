// SPDX-License-Identifier: Apache-2.0
// Unit tests of the files agentjail writes on the host: the safe open of
// lib/sys/host_file (links, FIFOs, hard links, the sandbox's writable roots, the
// result file's temporary name), the escaping of log lines and messages
// (lib/util/strings), and the log limiter (lib/util/log_limit).
#include "sys/host_file.hpp"
#include "util/log_limit.hpp"
#include "util/strings.hpp"

#include "test_support.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <string>
#include <vector>

namespace agentjail {
namespace {

using sys::HostFileRules;
using sys::HostWrite;

std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d))
            if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
                out.push_back(e->d_name);
        ::closedir(d);
    }
    return out;
}

// ---- escaping ----

TEST(HostFileEscape, PrintableEscapesControlsAndKeepsText) {
    EXPECT_EQ(util::printable("plain/path name-1.log"), "plain/path name-1.log");
    EXPECT_EQ(util::printable("a\x1b]52;c;aGk=\x07z"), "a\\x1b]52;c;aGk=\\x07z");
    EXPECT_EQ(util::printable("line\nfake"), "line\\x0afake");
    EXPECT_EQ(util::printable("del\x7f"), "del\\x7f");
    EXPECT_EQ(util::printable("back\\slash"), "back\\\\slash");
    // C1 as UTF-8 (U+009B, CSI) and as a raw byte; valid UTF-8 text is kept.
    EXPECT_EQ(util::printable("x\xc2\x9b"
                              "31m"),
              "x\\xc2\\x9b31m");
    EXPECT_EQ(util::printable("x\x9b"
                              "31m"),
              "x\\x9b31m");
    EXPECT_EQ(util::printable("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
    EXPECT_EQ(util::printable("one\ntwo\x1b", true), "one\ntwo\\x1b");
}

TEST(HostFileEscape, InertJsonHasNoShellMetacharactersInStrings) {
    nlohmann::ordered_json j;
    j["host"] = "$(touch /tmp/x)`id`;a|b&c<d>e'f\"g!h";
    j["path"] = std::string("/\x1b[2J\n\x7f\xc2\x9b");
    j["port"] = 80;
    std::string dumped = j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
    std::string line = util::inert_json(dumped);
    // Nothing a shell or a terminal acts on, anywhere in the line but its own quotes.
    for (char c : std::string("$`;|&<>'()!\x7f\x1b\n\r"))
        EXPECT_EQ(line.find(c), std::string::npos) << "raw '" << c << "' in " << line;
    for (char c : line)
        EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f);
    EXPECT_NE(line.find("\\u0024\\u0028touch"), std::string::npos) << line;
    // The same JSON value.
    EXPECT_EQ(nlohmann::ordered_json::parse(line), j);
    // Outside strings nothing changes.
    EXPECT_EQ(util::inert_json(R"({"a":[1,2,{"b":true}],"c":null})"),
              R"({"a":[1,2,{"b":true}],"c":null})");
    // A backslash escape stays one escape.
    EXPECT_EQ(util::inert_json(R"({"a":"x\\$"})"), R"({"a":"x\\\u0024"})");
}

// ---- the log limiter ----

TEST(HostFileLogLimit, FloodOfOneKindIsCountedNotWritten) {
    util::LogLimiter lim;
    const std::uint64_t per_kind = util::LogLimiter::Limits{}.per_kind;
    std::uint64_t written = 0;
    for (int i = 0; i < 100000; ++i) written += lim.admit("ptrace", i * 1e-6) ? 1 : 0;
    EXPECT_EQ(written, per_kind);
    EXPECT_EQ(lim.written(), per_kind);
    EXPECT_EQ(lim.dropped(), 100000u - per_kind);
    auto s = lim.drain(1.0);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].first, "ptrace");
    EXPECT_EQ(s[0].second, 100000u - per_kind);
    EXPECT_TRUE(lim.drain(2.0).empty()) << "counts are handed over once";
}

TEST(HostFileLogLimit, NewKindsEveryTimeStayBounded) {
    util::LogLimiter::Limits l;
    util::LogLimiter lim(l);
    std::uint64_t written = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) written += lim.admit("host-" + std::to_string(i), i * 1e-5) ? 1 : 0;
    // At most the burst plus the rate over the 2 s this took, and never past the cap.
    EXPECT_LE(written, static_cast<std::uint64_t>(l.burst + l.rate * 2 + 1));
    EXPECT_LE(written, l.max_lines);
    EXPECT_EQ(written + lim.dropped(), static_cast<std::uint64_t>(n));
    auto s = lim.drain(3.0);
    EXPECT_LE(s.size(), l.max_kinds) << "the table of kinds grew without bound";
    std::uint64_t counted = 0;
    for (auto& [k, c] : s) counted += c;
    EXPECT_EQ(counted, lim.dropped());
}

TEST(HostFileLogLimit, SummaryIsDueAfterTheInterval) {
    util::LogLimiter lim;
    const std::uint64_t per_kind = util::LogLimiter::Limits{}.per_kind;
    for (std::uint64_t i = 0; i < per_kind + 7; ++i) lim.admit("k", 0.0);
    EXPECT_FALSE(lim.summary_due(1.0));
    EXPECT_TRUE(lim.summary_due(11.0));
    EXPECT_EQ(lim.drain(11.0).at(0).second, 7u);
    EXPECT_FALSE(lim.summary_due(30.0)) << "nothing pending";
}

// ---- the safe open ----

class HostFile : public ::testing::Test {
protected:
    ajtest::TempDir dir{"aj-hostfile"};
    std::string victim = dir.write("victim", "precious\n");
    HostFileRules none;
};

TEST_F(HostFile, PlainPathIsCreatedAndWritten) {
    std::string p = dir.path() + "/a.log";
    auto fd = sys::open_host_file(p, HostWrite::append, none, "test log");
    ASSERT_TRUE(fd) << fd.error().message();
    ASSERT_EQ(::write(fd->get(), "x\n", 2), 2);
    EXPECT_EQ(ajtest::read_file(p), "x\n");
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    // Truncate mode empties an existing file of ours.
    auto again = sys::open_host_file(p, HostWrite::truncate, none, "test log");
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(ajtest::read_file(p), "");
}

TEST_F(HostFile, LinkAtTheNameIsRefusedAndTheVictimUntouched) {
    std::string p = dir.path() + "/link.log";
    ASSERT_EQ(::symlink(victim.c_str(), p.c_str()), 0);
    for (auto mode : {HostWrite::append, HostWrite::truncate}) {
        auto fd = sys::open_host_file(p, mode, none, "test log");
        ASSERT_FALSE(fd);
        EXPECT_EQ(fd.error().kind(), ErrorKind::invalid_input);
        EXPECT_TRUE(ajtest::contains(fd.error().message(), "symbolic link"))
            << fd.error().message();
    }
    EXPECT_EQ(ajtest::read_file(victim), "precious\n");
}

TEST_F(HostFile, LinkInAParentIsRefused) {
    std::string real = dir.mkdir("real");
    std::string alias = dir.path() + "/alias";
    ASSERT_EQ(::symlink(real.c_str(), alias.c_str()), 0);
    auto fd = sys::open_host_file(alias + "/x.log", HostWrite::append, none, "test log");
    ASSERT_FALSE(fd);
    EXPECT_TRUE(ajtest::contains(fd.error().message(), "symbolic link")) << fd.error().message();
    EXPECT_TRUE(names_in(real).empty());
    // Control: the real path works.
    EXPECT_TRUE(sys::open_host_file(real + "/x.log", HostWrite::append, none, "test log"));
}

TEST_F(HostFile, FifoDirectoryAndHardLinkAreRefused) {
    std::string fifo = dir.path() + "/fifo.log";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Without O_NONBLOCK this open would wait for a reader forever.
    auto f = sys::open_host_file(fifo, HostWrite::append, none, "test log");
    ASSERT_FALSE(f);
    EXPECT_TRUE(ajtest::contains(f.error().message(), "FIFO")) << f.error().message();
    auto d = sys::open_host_file(dir.mkdir("sub"), HostWrite::append, none, "test log");
    ASSERT_FALSE(d);
    std::string hard = dir.path() + "/hard.log";
    ASSERT_EQ(::link(victim.c_str(), hard.c_str()), 0);
    auto h = sys::open_host_file(hard, HostWrite::truncate, none, "test log");
    ASSERT_FALSE(h);
    EXPECT_TRUE(ajtest::contains(h.error().message(), "hard links")) << h.error().message();
    EXPECT_EQ(ajtest::read_file(victim), "precious\n");
}

TEST_F(HostFile, InsideAWritableRootIsRefusedByIdentity) {
    std::string ws = dir.mkdir("ws");
    dir.mkdir("ws/deep/er");
    // The root named through a link: a string prefix test on the log's path
    // would miss it, the device and inode do not.
    std::string ws_alias = dir.path() + "/ws-alias";
    ASSERT_EQ(::symlink(ws.c_str(), ws_alias.c_str()), 0);
    HostFileRules rules;
    rules.sandbox_writable.push_back({ws_alias, "workspace"});
    std::string p = ws + "/deep/er/x.log";
    auto fd = sys::open_host_file(p, HostWrite::append, rules, "test log");
    ASSERT_FALSE(fd);
    EXPECT_TRUE(ajtest::contains(fd.error().message(), "which the sandbox can write"))
        << fd.error().message();
    EXPECT_TRUE(ajtest::contains(fd.error().message(), "allow_in_sandbox")) << fd.error().message();
    EXPECT_FALSE(ajtest::exists(p)) << "refused, yet created";
    auto checked = sys::check_host_file(p, rules, "result file");
    EXPECT_FALSE(checked);
    // A file bound read-write on its own is a root too.
    HostFileRules file_rules;
    file_rules.sandbox_writable.push_back({victim, "filesystem.rw[0]"});
    EXPECT_FALSE(sys::open_host_file(victim, HostWrite::append, file_rules, "test log"));
    // Controls: outside the root, and inside it with the opt-in.
    EXPECT_TRUE(
        sys::open_host_file(dir.path() + "/outside.log", HostWrite::append, rules, "test log"));
    rules.allow_in_sandbox = true;
    EXPECT_TRUE(sys::open_host_file(p, HostWrite::append, rules, "test log"));
}

// A log inside a folder the sandbox writes is kept aside: nothing appears at the
// name while it is written, what is written there meanwhile is replaced at the end,
// an append log keeps what the file held at the start; a link there is replaced, its
// target untouched. Control: outside, the file itself is written as it goes.
TEST_F(HostFile, ALogInsideAWritableRootIsKeptAsideUntilTheEnd) {
    std::string ws = dir.mkdir("ws");
    HostFileRules rules;
    rules.sandbox_writable.push_back({ws, "workspace"});
    const std::string p = ws + "/net.jsonl";
    dir.write("ws/net.jsonl", "{\"earlier\":1}");
    auto log = sys::HostLog::open(p, HostWrite::append, rules, "test log");
    ASSERT_TRUE(log) << log.error().message();
    EXPECT_TRUE(log->kept_aside());
    ASSERT_EQ(::write(log->fd(), "{\"now\":1}\n", 10), 10);
    EXPECT_EQ(ajtest::read_file(p), "{\"earlier\":1}");  // nothing of this run yet
    ASSERT_EQ(::unlink(p.c_str()), 0);
    ASSERT_EQ(::symlink(victim.c_str(), p.c_str()), 0);  // what a sandbox could leave
    ASSERT_TRUE(log->put_in_place());
    EXPECT_EQ(ajtest::read_file(p), "{\"earlier\":1}\n{\"now\":1}\n");
    EXPECT_EQ(ajtest::read_file(victim), "precious\n");
    struct stat st {};
    ASSERT_EQ(::lstat(p.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    // A truncating log holds this run's lines only.
    auto trunc = sys::HostLog::open(p, HostWrite::truncate, rules, "test log");
    ASSERT_TRUE(trunc);
    ASSERT_EQ(::write(trunc->fd(), "x\n", 2), 2);
    ASSERT_TRUE(trunc->put_in_place());
    EXPECT_EQ(ajtest::read_file(p), "x\n");
    // A directory at the name cannot be replaced: refused at the start.
    dir.mkdir("ws/a-dir");
    EXPECT_FALSE(sys::HostLog::open(ws + "/a-dir", HostWrite::append, rules, "test log"));
    // Control: outside the root, the file itself, written as the run goes.
    auto out = sys::HostLog::open(dir.path() + "/outside.log", HostWrite::append, rules, "test log");
    ASSERT_TRUE(out);
    EXPECT_FALSE(out->kept_aside());
    ASSERT_EQ(::write(out->fd(), "y\n", 2), 2);
    EXPECT_EQ(ajtest::read_file(dir.path() + "/outside.log"), "y\n");
}

TEST_F(HostFile, ReplaceWritesAtomicallyUnderAnUnguessableName) {
    std::string p = dir.path() + "/result.json";
    // Links planted at every name the old code would have used (FILE.tmp.PID).
    for (int pid = getpid() - 50; pid < getpid() + 50; ++pid)
        (void)::symlink(victim.c_str(), (p + ".tmp." + std::to_string(pid)).c_str());
    auto before = names_in(dir.path()).size();
    ASSERT_TRUE(sys::replace_host_file(p, "{\"a\":1}\n", none, "result file"));
    EXPECT_EQ(ajtest::read_file(p), "{\"a\":1}\n");
    ASSERT_TRUE(sys::replace_host_file(p, "{\"a\":2}\n", none, "result file"));
    EXPECT_EQ(ajtest::read_file(p), "{\"a\":2}\n");
    EXPECT_EQ(ajtest::read_file(victim), "precious\n");
    EXPECT_EQ(names_in(dir.path()).size(), before + 1) << "a temporary file was left behind";
    // A link or a FIFO at the name itself is refused, not replaced or written through.
    std::string l = dir.path() + "/linked.json";
    ASSERT_EQ(::symlink(victim.c_str(), l.c_str()), 0);
    EXPECT_FALSE(sys::replace_host_file(l, "x", none, "result file"));
    std::string fifo = dir.path() + "/fifo.json";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_FALSE(sys::replace_host_file(fifo, "x", none, "result file"));
    EXPECT_EQ(ajtest::read_file(victim), "precious\n");
}

}  // namespace
}  // namespace agentjail
