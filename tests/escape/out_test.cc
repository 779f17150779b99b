// SPDX-License-Identifier: Apache-2.0
// Escape tests of the files agentjail writes on the host (issue 9, section 2; OUT-*):
// the logs and the result file are never opened through a link the sandbox
// planted, never hang on a FIFO, are refused inside the sandbox's writable paths,
// carry what the sandbox sent only escaped, stay bounded under a flood, and the
// --json record cannot be forged by the command. Each attack has a positive control.
#include "common.hpp"
#include "net_support.hpp"

#include "../integration/record.hpp"
#include "../integration/seccomp_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

using namespace ajesc;

namespace {

constexpr const char* kVictimText = "# the user's shell startup file\nexport PATH=/usr/bin:/bin\n";

// A policy on top of default that lets logs and the result file lie in the workspace.
std::string opt_in_policy(const ajtest::TempDir& dir) {
    return dir.write("opt-in.toml", "extends = \"default\"\n[log]\nallow_in_sandbox = true\n");
}

// The user's ~/.bashrc in the fake home, holding kVictimText: what a planted link aims at.
std::string plant_victim(const ajtest::Jail& jail) {
    std::string victim = jail.home() + "/.bashrc";
    auto r =
        ajtest::run({"/bin/sh", "-c", "printf '%s' \"$1\" > \"$2\"", "sh", kVictimText, victim});
    return r.status == 0 ? victim : std::string();
}

std::vector<std::string> probe_three() { return {"--", ajtest::helper("sysprobe"), "three"}; }

std::vector<std::string> dir_names(const std::string& dir) {
    auto r = ajtest::run({"/bin/ls", "-A", dir});
    return ajtest::lines(r.out);
}

}  // namespace

// OUT-01: a run plants a link at the log path in the workspace, pointing at the
// user's ~/.bashrc; the next run that logs there (even with the opt-in that lets a
// log lie in the workspace) must refuse with 125 and leave the victim byte-identical.
// Control: a plain path beside it is created and gets one line per refused call.
TEST_F(Escape, OUT01_LogPathLinkedToAVictimIsRefused) {
    ajtest::TempDir cfg("aj-out01");
    std::string victim = plant_victim(jail);
    ASSERT_FALSE(victim.empty());
    std::string log = jail.ws() + "/agentjail.log";
    auto plant = jail.sh("ln -s '" + victim + "' '" + log + "' && echo planted");
    ASSERT_EQ(ajtest::trim(plant.out), "planted") << describe(plant);
    for (const char* flag : {"--seccomp-log", "--net-log"}) {
        auto r =
            jail.run(cat(cat(jail.base(), {"-p", opt_in_policy(cfg), flag, log, "--net", "proxy"}),
                         probe_three()));
        EXPECT_EQ(r.status, 125) << flag << "\n" << describe(r);
        EXPECT_TRUE(ajtest::contains(r.err, "symbolic link")) << describe(r);
        EXPECT_EQ(ajtest::read_file(victim), kVictimText)
            << flag << " wrote through the planted link";
    }
    // Control: the same run with a plain name writes the log.
    std::string plain = jail.ws() + "/plain.log";
    auto c = jail.run(
        cat(cat(jail.base(), {"-p", opt_in_policy(cfg), "--seccomp-log", plain}), probe_three()));
    ASSERT_EQ(c.status, 0) << describe(c);
    std::string err;
    EXPECT_EQ(ajsc::parse_denials(ajtest::read_file(plain), &err).size(), 3u) << err;
}

// OUT-02: a link in a parent component (the workspace's logs/ replaced by a link
// to the home directory) is refused as well: nothing on the path is followed.
// Control: the real directory behind it works.
TEST_F(Escape, OUT02_LinkInAParentComponentIsRefused) {
    ajtest::TempDir cfg("aj-out02");
    std::string victim = plant_victim(jail);
    ASSERT_FALSE(victim.empty());
    auto plant = jail.sh("ln -s '" + jail.home() + "' '" + jail.ws() + "/logs' && echo planted");
    ASSERT_EQ(ajtest::trim(plant.out), "planted") << describe(plant);
    auto r = jail.run(cat(
        cat(jail.base(), {"-p", opt_in_policy(cfg), "--seccomp-log", jail.ws() + "/logs/.bashrc"}),
        probe_three()));
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "symbolic link")) << describe(r);
    EXPECT_EQ(ajtest::read_file(victim), kVictimText);
    // Control: the same file name through the real directory is written.
    ajtest::TempDir logs("aj-out02-logs");
    auto c =
        jail.run(cat(cat(jail.base(), {"--seccomp-log", logs.path() + "/.bashrc"}), probe_three()));
    ASSERT_EQ(c.status, 0) << describe(c);
    EXPECT_NE(ajtest::read_file(logs.path() + "/.bashrc"), "");
}

// OUT-03: a FIFO at the log path (which nobody reads) must not hang the launch:
// refused at once, exit 125. Control: a regular file at the same path is written.
TEST_F(Escape, OUT03_FifoAtTheLogPathDoesNotHang) {
    ajtest::TempDir logs("aj-out03");
    std::string path = logs.path() + "/seccomp.log";
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    ajtest::RunOptions o;
    o.timeout_ms = 60000;  // a hang shows as timed_out, not as a slow pass
    for (const char* flag : {"--seccomp-log", "--net-log"}) {
        auto r = jail.run(cat(cat(jail.base(), {flag, path, "--net", "proxy"}), probe_three()), o);
        EXPECT_FALSE(r.timed_out) << flag << ": the launch hung on the FIFO";
        EXPECT_EQ(r.status, 125) << flag << "\n" << describe(r);
        EXPECT_TRUE(ajtest::contains(r.err, "FIFO")) << describe(r);
    }
    // --result-file at a FIFO: refused before the run, not written into.
    auto rf = jail.run(cat(jail.base(), {"--result-file", path, "--", "/bin/true"}), o);
    EXPECT_FALSE(rf.timed_out);
    EXPECT_EQ(rf.status, 125) << describe(rf);
    // Control: a regular file there.
    ASSERT_EQ(::unlink(path.c_str()), 0);
    auto c = jail.run(cat(cat(jail.base(), {"--seccomp-log", path}), probe_three()), o);
    ASSERT_EQ(c.status, 0) << describe(c);
    std::string err;
    EXPECT_EQ(ajsc::parse_denials(ajtest::read_file(path), &err).size(), 3u) << err;
}

// OUT-04: the result file's temporary name is not predictable and never written
// through: links to a victim planted at every name the old code would have used
// (FILE.tmp.PID for the pids around the next one) stay untouched, the record lands
// in FILE, and nothing is left behind. Control: agentjail's pid was among the
// planted names, so the old code would have written the victim.
TEST_F(Escape, OUT04_ResultFileTemporaryNameIsNotFollowed) {
    ajtest::TempDir out("aj-out04");
    std::string victim = out.write("victim", kVictimText);
    std::string file = out.path() + "/result.json";
    long last = std::atol(ajtest::read_file("/proc/sys/kernel/ns_last_pid").c_str());
    if (last <= 0)
        GTEST_SKIP() << "cannot read /proc/sys/kernel/ns_last_pid to aim the planted links";
    for (long pid = last + 1; pid <= last + 400; ++pid)
        ASSERT_EQ(::symlink(victim.c_str(), (file + ".tmp." + std::to_string(pid)).c_str()), 0);
    std::vector<std::string> args{ajtest::agentjail_bin()};
    for (const auto& a : cat(jail.base(), {"--result-file", file, "--", "/bin/true"}))
        args.push_back(a);
    ajtest::RunOptions o;
    o.env.push_back("HOME=" + jail.home());
    ajtest::Child child(args, o);
    pid_t pid = child.pid();
    auto r = child.wait(60000);
    jail.record(r);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajtest::read_file(victim), kVictimText) << "the record went through a planted link";
    auto rec = nlohmann::json::parse(ajtest::read_file(file), nullptr, false);
    ASSERT_TRUE(rec.is_object()) << ajtest::read_file(file);
    EXPECT_EQ(rec["status"], "OK");
    EXPECT_EQ(dir_names(out.path()).size(), 400u + 2u) << "a temporary file was left behind";
    // Control: the planted names covered this run's pid.
    if (pid > last && pid <= last + 400) {
        struct stat st {};
        EXPECT_EQ(::lstat((file + ".tmp." + std::to_string(pid)).c_str(), &st), 0);
        EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the planted link at the old name is gone";
    } else {
        GTEST_SKIP() << "other processes took the pids meant for agentjail (" << pid << " not in "
                     << last + 1 << ".." << last + 400
                     << "): the control cannot show the old name was covered";
    }
}

// OUT-05: a log inside the workspace (which the sandbox writes, during the run) is
// never written while the sandbox runs: the sandbox sees no line of this run there,
// and what it does at the name (a forged line, a link to the user's ~/.bashrc) is
// replaced once it is gone, never written through. The network log keeps the lines
// it held when the run began. Control: with the policy's opt-in the log is written
// as the run goes, and the same probe reads this run's line and forges one.
TEST_F(Escape, OUT05_ALogInsideTheWorkspaceIsWrittenOnlyOnceTheSandboxIsGone) {
    ajtest::TempDir cfg("aj-out05");
    const std::string victim = plant_victim(jail);
    ASSERT_FALSE(victim.empty());
    struct Case {
        const char* flag;
        const char* line;   // what this run's refusal puts in the log
        bool earlier;       // an append log: the line already there stays
    };
    for (const Case& c : {Case{"--seccomp-log", "\"unshare\"", false}, Case{"--net-log", "\"deny\"", true}}) {
        SCOPED_TRACE(c.flag);
        const std::string name = std::string("out-") + (c.flag + 2) + ".jsonl";
        const std::string path = jail.ws() + "/" + name;
        jail.ws_dir().write(name, "{\"earlier\":1}\n");
        // Refused: a namespace (the seccomp log) and a host (the network log); then
        // the log is read, a line forged into it, and the name turned into a link to
        // the victim, which the end must not write through.
        const std::string probe = "unshare -U true 2>/dev/null; curl -s -m 5 -o /dev/null http://refused.test/; "
                                  "sleep 0.3; echo \"seen=$(grep -c -e unshare -e deny " + name + ")\"; "
                                  "echo '{\"forged\":1}' >> " + name + " && echo forged; "
                                  "rm -f " + name + " && ln -s '" + victim + "' " + name + " && echo linked";
        auto r = jail.sh(probe, {c.flag, path, "--net", "proxy"});
        EXPECT_EQ(r.status, 0) << describe(r);
        EXPECT_EQ(field(r.out, "seen"), "0") << describe(r);
        EXPECT_TRUE(ajtest::contains(r.out, "linked")) << describe(r);
        struct stat st {};
        ASSERT_EQ(::lstat(path.c_str(), &st), 0);
        EXPECT_TRUE(S_ISREG(st.st_mode)) << "the link the sandbox left is still there";
        EXPECT_EQ((st.st_mode & 0777), 0600u);
        const std::string text = ajtest::read_file(path);
        EXPECT_TRUE(ajtest::contains(text, c.line)) << text;
        EXPECT_FALSE(ajtest::contains(text, "forged")) << text;
        EXPECT_EQ(ajtest::contains(text, "earlier"), c.earlier) << text;
        EXPECT_EQ(ajtest::read_file(victim), kVictimText);
        // Control: opted in, the log is written during the run, where the same probe
        // reads this run's line and forges one (the link then stays: no rename).
        jail.ws_dir().write(name, "");
        auto ok = jail.sh(probe, {"-p", opt_in_policy(cfg), c.flag, path, "--net", "proxy"});
        EXPECT_EQ(ok.status, 0) << describe(ok);
        EXPECT_NE(field(ok.out, "seen"), "0") << describe(ok);
        ::unlink(path.c_str());
        EXPECT_EQ(ajtest::read_file(victim).substr(0, std::string(kVictimText).size()), kVictimText);
        plant_victim(jail);
    }
}

// OUT-06: a refused host name spelled as shell code, or with ESC, BEL and a
// newline in it (SOCKS5 names are length-prefixed bytes, so any byte gets through
// to the proxy), appears in the network log only escaped: no shell metacharacter
// or control character in the line, so even a shell that runs the log file runs
// nothing. Control: the names did reach the log's "host" field (decoded, they hold
// the payload), and the same line written raw runs the payload when sourced.
TEST_F(Escape, OUT06_RefusedHostNameIsInertInTheLog) {
    ajtest::TempDir scratch("aj-out06");
    const std::string payload = "$(touch ran)";
    const std::string esc_name = "a\x1b]0;pwned\x07\nb";
    // One SOCKS5 exchange (greeting + CONNECT by name), every byte as \xHH for printf.
    auto socks = [](const std::string& name) {
        return hex_escaped(std::string("\x05\x01\x00\x05\x01\x00\x03", 7) + static_cast<char>(name.size()) +
                           name + std::string("\x01\xbb", 2));
    };
    std::string script =
        "s() { exec 3<>/dev/tcp/127.0.0.1/3128 && printf \"$1\" >&3 && timeout 5 cat <&3 "
        ">/dev/null; exec 3<&-; }; "
        "s '" +
        socks(payload) + "'; s '" + socks(esc_name) +
        "'; "
        "printf 'GET http://x.test/`id`;|&<> HTTP/1.1\\r\\nHost: x.test\\r\\n\\r\\n' "
        ">/dev/tcp/127.0.0.1/3128; "
        "echo done";
    std::string log = scratch.path() + "/net.jsonl";
    auto r = jail.run(
        cat(jail.base(), {"--net", "proxy", "--net-log", log, "--", "/bin/bash", "-c", script}));
    ASSERT_EQ(r.status, 0) << describe(r);
    std::string text = ajtest::read_file(log);
    ASSERT_FALSE(text.empty()) << describe(r);
    bool payload_logged = false, esc_logged = false;
    for (const auto& l : ajtest::lines(text)) {
        for (char c : std::string("$`;|&<>'()!"))
            EXPECT_EQ(l.find(c), std::string::npos) << "raw '" << c << "' in a log line: " << l;
        for (char c : l)
            EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 &&
                        static_cast<unsigned char>(c) < 0x7f)
                << "a control or non-ASCII byte in a log line: " << l;
        auto j = nlohmann::json::parse(l);
        std::string host = j.value("host", "");
        payload_logged = payload_logged || host == payload;
        esc_logged = esc_logged || host == esc_name;
    }
    // Sourced as shell code (a log that landed in ~/.bashrc): nothing runs.
    std::string marker = scratch.path() + "/ran";
    auto source = [&](const std::string& file) {
        ajtest::run({"/bin/sh", "-c", "cd \"$1\" && . \"$2\" >/dev/null 2>&1; true", "sh",
                     scratch.path(), file});
    };
    source(log);
    EXPECT_FALSE(ajtest::exists(marker)) << "sourcing the log ran the sandbox's payload";
    // Controls: the sandbox's names are in the log (decoded), and raw they would run.
    EXPECT_TRUE(payload_logged) << "the $(...) host is not in the log:\n" << text;
    EXPECT_TRUE(esc_logged) << "the ESC host is not in the log:\n" << text;
    source(scratch.write("raw.sh", "{\"host\":\"" + payload + "\"}\n"));
    EXPECT_TRUE(ajtest::exists(marker)) << "control: the raw line does not run the payload";
}

// OUT-07: --json cannot be forged by the command: one that prints the delimiter and
// a fake record (exit 0) with no final newline, on stdout and on stderr, and exits
// 3, still leaves the real record (exit 3) as what the documented reader finds;
// --json-fd N carries exactly the real record. Control: the fake was printed, and
// the old reader (the last line of stdout) takes it for a record.
TEST_F(Escape, OUT07_ForgedRecordIsNotAccepted) {
    std::string fake =
        "--- agentjail result ---\\n{\"schema_version\":1,\"status\":\"OK\",\"exit_code\":0,"
        "\"exit_status\":0}";
    std::string script = "printf 'out\\n" + fake + "'; printf 'err\\n" + fake + "' >&2; exit 3";
    ajtest::TempDir scratch("aj-out07");
    std::string fd_file = scratch.path() + "/record.json";
    int fd = ::open(fd_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ajtest::RunOptions o;
    o.leak_fds.push_back({fd, 7});
    auto r =
        jail.run(cat(jail.base(), {"--json", "--json-fd", "7", "--", "/bin/sh", "-c", script}), o);
    ::close(fd);
    ASSERT_EQ(r.status, 3) << describe(r);
    auto rec = ajit::record_in(r.err);
    ASSERT_TRUE(rec.is_object()) << describe(r);
    EXPECT_EQ(rec["exit_code"], 3) << "the reader took the command's forged record\n"
                                   << describe(r);
    EXPECT_EQ(rec["status"], "RE");
    auto lines = ajtest::lines(ajtest::read_file(fd_file));
    ASSERT_EQ(lines.size(), 1u) << ajtest::read_file(fd_file);
    EXPECT_EQ(nlohmann::json::parse(lines[0]), rec);
    // Controls: the forgery is in the output, and a last-line-of-stdout reader falls for it.
    EXPECT_TRUE(ajtest::contains(r.err, "\"exit_code\":0")) << describe(r);
    auto old = nlohmann::json::parse(ajtest::lines(r.out).back(), nullptr, false);
    ASSERT_TRUE(old.is_object()) << describe(r);
    EXPECT_EQ(old["exit_code"], 0);
}

// OUT-08: a flood of refused system calls writes a bounded seccomp log (a few lines
// of each kind and a summary with the count of the rest), while the result record
// counts every one. Control: the probe did make them all (its own count), and the
// log does have lines of both kinds.
TEST_F(Escape, OUT08_FloodOfRefusedCallsLeavesABoundedLog) {
    ajtest::TempDir out("aj-out08");
    std::string log = out.path() + "/seccomp.jsonl";
    std::string result = out.path() + "/result.json";
    const long n = 20000;
    ajtest::RunOptions o;
    o.timeout_ms = 120000;
    auto r = jail.run(cat(jail.base(), {"--seccomp-log", log, "--result-file", result, "--",
                                        ajtest::helper("sysprobe"), "flood", std::to_string(n)}),
                      o);
    ASSERT_EQ(r.status, 0) << describe(r);
    ASSERT_EQ(ajit::field(r.out, "refused"), std::to_string(2 * n)) << describe(r);
    auto rec = nlohmann::json::parse(ajtest::read_file(result));
    EXPECT_EQ(rec["denials"]["syscalls"], 2 * n) << "the total is not exact";
    auto lines = ajtest::lines(ajtest::read_file(log));
    EXPECT_LE(lines.size(), 60u) << "the log is not bounded";
    std::uint64_t written = 0, summarised = 0;
    std::set<std::string> kinds;
    for (const auto& l : lines) {
        auto j = nlohmann::json::parse(l);
        kinds.insert(j.value("syscall", ""));
        if (j.contains("more_like_this"))
            summarised += j["more_like_this"].get<std::uint64_t>();
        else
            ++written;
    }
    EXPECT_EQ(written + summarised, static_cast<std::uint64_t>(2 * n))
        << "lines and summaries do not add up";
    EXPECT_TRUE(kinds.count("ptrace") && kinds.count("bpf")) << ajtest::read_file(log);
}

// OUT-09: a flood of refused connections writes a bounded network log with a
// summary, while the record's network denials count every one. Control: every
// attempt got its 403 answer.
TEST_F(Escape, OUT09_FloodOfRefusedConnectionsLeavesABoundedLog) {
    ajtest::TempDir out("aj-out09");
    std::string log = out.path() + "/net.jsonl";
    std::string result = out.path() + "/result.json";
    const int n = 300;
    std::string script =
        "ok=0; for i in $(seq " + std::to_string(n) +
        "); do exec 3<>/dev/tcp/127.0.0.1/3128 || continue; "
        "printf 'CONNECT flood.test:443 HTTP/1.1\\r\\n\\r\\n' >&3; "
        "read -r l <&3; case $l in *403*) ok=$((ok+1));; esac; exec 3<&-; done; echo ok=$ok";
    ajtest::RunOptions o;
    o.timeout_ms = 120000;
    auto r = jail.run(cat(jail.base(), {"--net", "proxy", "--net-log", log, "--result-file", result,
                                        "--", "/bin/bash", "-c", script}),
                      o);
    ASSERT_EQ(r.status, 0) << describe(r);
    ASSERT_EQ(ajit::field(r.out, "ok"), std::to_string(n)) << describe(r);
    auto rec = nlohmann::json::parse(ajtest::read_file(result));
    EXPECT_EQ(rec["denials"]["network"], n);
    auto lines = ajtest::lines(ajtest::read_file(log));
    EXPECT_LE(lines.size(), 30u) << "the log is not bounded";
    std::uint64_t written = 0, summarised = 0;
    for (const auto& l : lines) {
        auto j = nlohmann::json::parse(l);
        if (j.value("host", "") != "flood.test") continue;
        if (j.contains("more_like_this"))
            summarised += j["more_like_this"].get<std::uint64_t>();
        else
            ++written;
    }
    EXPECT_GE(written, 1u);
    EXPECT_EQ(written + summarised, static_cast<std::uint64_t>(n)) << ajtest::read_file(log);
}

// OUT-10: CI's `--result-file result.json` in the checkout (issue 27, item 7). The
// record is written after every process of the sandbox is gone, under a fresh name
// renamed over the path: a fake record the command wrote there is replaced by the
// real one (its exit status), and a link it planted at the name is replaced, never
// written through (the file it points at is unchanged). Control: the command did
// write its fake and plant its link (both seen inside before it exited).
TEST_F(Escape, OUT10_AResultFileInTheWorkspaceCannotBeForgedOrRedirected) {
    ajtest::TempDir outside("aj-out08");
    const std::string target = outside.write("bashrc", "original\n");
    const std::string rec = jail.ws() + "/result.json";
    auto fake = jail.run(cat(jail.base(), {"--result-file", rec, "--", "/bin/sh", "-c",
                                           "echo '{\"status\":\"OK\",\"exit_code\":0}' > result.json; "
                                           "cat result.json; exit 3"}));
    EXPECT_EQ(fake.status, 3) << describe(fake);
    EXPECT_TRUE(ajtest::contains(fake.out, "\"exit_code\":0")) << "control: the fake was not written\n" << describe(fake);
    auto j = nlohmann::json::parse(ajtest::read_file(rec), nullptr, false);
    ASSERT_TRUE(j.is_object()) << ajtest::read_file(rec);
    EXPECT_EQ(j.value("exit_code", -1), 3) << ajtest::read_file(rec);

    ::unlink(rec.c_str());
    auto link = jail.run(cat(cat(jail.base(), {"--ro", outside.path()}),
                             {"--result-file", rec, "--", "/bin/sh", "-c",
                              "ln -s " + target + " result.json && readlink result.json"}));
    EXPECT_EQ(link.status, 0) << describe(link);
    EXPECT_TRUE(ajtest::contains(link.out, target)) << "control: the link was not planted\n" << describe(link);
    EXPECT_EQ(ajtest::read_file(target), "original\n") << "the record was written through the planted link";
    struct stat st {};
    ASSERT_EQ(::lstat(rec.c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode)) << "the planted link is still there";
    auto k = nlohmann::json::parse(ajtest::read_file(rec), nullptr, false);
    EXPECT_TRUE(k.is_object() && k.value("exit_code", -1) == 0) << ajtest::read_file(rec);
}
