// SPDX-License-Identifier: Apache-2.0
// What was refused, said after the run and kept for `agentjail log` (issue 27, item
// 6): refused hosts, system calls and sockets, the limit that ended the run, each
// with what would allow it; the proxy's answers say what happened in a header too;
// names the sandbox chose reach the terminal escaped. Each with its control: a run
// that was refused nothing says nothing.
#include "common.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace ajit {
namespace {

class Refusals : public Sandbox {
protected:
    ajtest::RunOptions opts() const {
        ajtest::RunOptions o;
        o.unset_env = {"XDG_STATE_HOME"};  // the log goes to the fake home's state
        o.timeout_ms = 60000;
        return o;
    }
    ajtest::RunOutput sh(const std::string& script, std::vector<std::string> flags = {}) {
        std::vector<std::string> a = {"-C", jail.ws()};
        a.insert(a.end(), flags.begin(), flags.end());
        a.insert(a.end(), {"--", "/bin/sh", "-c", script});
        return jail.run(a, opts());
    }
    ajtest::RunOutput log(const std::vector<std::string>& args = {}) {
        std::vector<std::string> a = {"log"};
        a.insert(a.end(), args.begin(), args.end());
        return jail.run(a, opts());
    }
    std::string log_dir() const { return jail.home() + "/.local/state/agentjail/log"; }
};

// A Unix socket listening at `path` on the host (the test's own), or -errno.
int listen_at(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    sockaddr_un sa {};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof sa.sun_path) {
        ::close(fd);
        return -ENAMETOOLONG;
    }
    std::memcpy(sa.sun_path, path.c_str(), path.size());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(fd, 8) != 0) {
        int e = errno;
        ::close(fd);
        return -e;
    }
    return fd;
}

const char* kHeader = "refused or stopped during the run (`agentjail log` shows this again):";

TEST_F(Refusals, TheRunSaysWhatWasRefusedAndWhatWouldAllowIt) {
    auto r = sh("curl -s -o /dev/null https://refused.example/; curl -s -o /dev/null https://refused.example/; "
                "unshare -U true 2>/dev/null; echo done",
                {"--allow-host", "allowed.example"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, kHeader)) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "agentjail:   network refused.example:443 (2 times): refused.example is not "
                                        "in the allowlist"))
        << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "add --allow-host refused.example")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "agentjail:   syscall unshare: ")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "to allow it: [seccomp] nested_sandboxes = true")) << describe(r);

    // agentjail log shows the same lines again, and --list has the run.
    auto l = log();
    ASSERT_EQ(l.status, 0) << describe(l);
    EXPECT_TRUE(ajtest::contains(l.out, "  network refused.example:443 (2 times)")) << l.out;
    EXPECT_TRUE(ajtest::contains(l.out, "  syscall unshare: ")) << l.out;
    auto list = log({"--list"});
    ASSERT_EQ(list.status, 0) << describe(list);
    ASSERT_EQ(ajtest::lines(list.out).size(), 2u) << list.out;
    std::string id = words(ajtest::lines(list.out)[1])[0];
    auto by_id = log({id, "--json"});
    ASSERT_EQ(by_id.status, 0) << describe(by_id);
    EXPECT_TRUE(ajtest::contains(by_id.out, "\"allow\": \"--allow-host refused.example\"")) << by_id.out;
    struct stat st {};
    ASSERT_EQ(::stat(log_dir().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 077, 0u) << "the log is the user's alone";

    // -q says nothing, and the log still has it.
    auto q = sh("curl -s -o /dev/null https://refused.example/", {"-q", "--allow-host", "allowed.example"});
    EXPECT_FALSE(ajtest::contains(q.err, kHeader)) << describe(q);
    EXPECT_TRUE(ajtest::contains(log().out, "network refused.example:443")) << describe(q);

    // Control: a run that was refused nothing says nothing, and its entry says so.
    auto clean = sh("echo fine");
    ASSERT_EQ(clean.status, 0) << describe(clean);
    EXPECT_FALSE(ajtest::contains(clean.err, "refused")) << describe(clean);
    EXPECT_TRUE(ajtest::contains(log().out, "nothing was refused")) << describe(clean);
}

TEST_F(Refusals, TheLimitThatEndedTheRunIsNamedWithItsFlag) {
    auto r = sh("sleep 30", {"--timeout", "1s"});
    EXPECT_EQ(r.status, 124) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "agentjail:   limit: the wall-clock limit of 1s ran out")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "--timeout or [limits] timeout")) << describe(r);
}

TEST_F(Refusals, TheProxySaysWhatHappenedInAHeaderAndTheBody) {
    // A tunnel's refusal (its headers: curl shows no CONNECT body), then plain HTTP.
    auto r = sh("curl -s -i -p -x \"$HTTPS_PROXY\" https://refused.example/ | tr -d '\\r'; "
                "curl -s -i http://refused.example/ | tr -d '\\r'; "
                "curl -s -i http://unresolvable.invalid/ | tr -d '\\r'",
                {"--allow-host", "unresolvable.invalid"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "HTTP/1.1 403 Forbidden\n")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "X-Agentjail-Error: policy\n")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "agentjail: refused by policy: refused.example is not in the allowlist")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "X-Agentjail-Error: unresolved\n")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "agentjail: name not resolved: cannot resolve unresolvable.invalid")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.err, "network unresolvable.invalid:80: unresolved: cannot resolve")) << describe(r);
}

// A name the sandbox chose (a socket's path here) reaches the terminal escaped: an
// escape sequence in it must not act on the user's terminal, after the run or in
// `agentjail log`.
TEST_F(Refusals, NamesFromTheSandboxAreEscaped) {
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    const std::string name = "evil\x1b]0;pwned\x07.sock";
    const std::string path = jail.ws() + "/" + name;
    int fd = listen_at(path);
    ASSERT_GE(fd, 0) << std::strerror(-fd);
    // The script finds the socket by glob, so the name never passes through argv.
    auto r = sh("/usr/bin/python3 -c \"import glob, socket; s = socket.socket(socket.AF_UNIX); "
                "p = glob.glob('evil*.sock')[0]\n"
                "try:\n    s.connect(p)\nexcept OSError as e:\n    print('refused', e.errno)\"");
    ::close(fd);
    ::unlink(path.c_str());
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "refused 13")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "agentjail:   socket ")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "evil\\x1b]0;pwned\\x07.sock")) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.err, "\x1b")) << "a raw escape reached stderr";
    auto l = log();
    EXPECT_TRUE(ajtest::contains(l.out, "evil\\x1b]0;pwned\\x07.sock")) << l.out;
    EXPECT_FALSE(ajtest::contains(l.out, "\x1b")) << "a raw escape reached agentjail log";
}

// agentjail learn: a run, then the policy lines it lacked, which allow it. The first
// run is the control: each probe is refused there.
TEST_F(Refusals, LearnProposesThePolicyLinesThatAllowWhatWasRefused) {
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
    const std::string sock = jail.ws() + "/db.sock";
    int fd = listen_at(sock);
    ASSERT_GE(fd, 0) << std::strerror(-fd);
    const std::string script =
        "curl -s -o /dev/null https://learned.example/; "
        "unshare -U true 2>/dev/null && echo nested=ok || echo nested=refused; "
        "/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect('" + sock + "'); print('socket=ok')\nexcept OSError as e:\n    print('socket=refused')\"";
    std::vector<std::string> a = {"learn", "-q", "-C", jail.ws(), "--", "/bin/sh", "-c", script};
    auto learned = jail.run(a, opts());
    ASSERT_EQ(learned.status, 0) << describe(learned);
    EXPECT_EQ(field(learned.out, "nested"), "refused") << describe(learned);
    EXPECT_EQ(field(learned.out, "socket"), "refused") << describe(learned);
    for (const char* want : {"[network]\nmode = \"proxy\"\nallow = [\n    \"learned.example\",  # refused: ",
                             "[seccomp]\nnested_sandboxes = true  # refused: unshare: ",
                             "[filesystem]\nsockets = [\n    \"" })
        EXPECT_TRUE(ajtest::contains(learned.err, want)) << want << "\n" << describe(learned);
    EXPECT_TRUE(ajtest::contains(learned.err, sock)) << describe(learned);

    auto toml = log({"--policy"});
    ASSERT_EQ(toml.status, 0) << describe(toml);
    const std::string file = jail.home() + "/learned.toml";
    jail.home_dir().write("learned.toml", toml.out);
    auto check = jail.run({"check", file}, opts());
    ASSERT_EQ(check.status, 0) << describe(check) << toml.out;
    auto again = sh(script, {"-p", file});
    ::close(fd);
    ::unlink(sock.c_str());
    ASSERT_EQ(again.status, 0) << describe(again);
    EXPECT_EQ(field(again.out, "nested"), "ok") << describe(again);
    EXPECT_EQ(field(again.out, "socket"), "ok") << describe(again);
    // The host is allowed now (it does not resolve here: that is all that is left).
    EXPECT_FALSE(ajtest::contains(again.err, "learned.example is not in the allowlist")) << describe(again);
}

TEST_F(Refusals, TheLogKeepsTheNewestRunsAndRefusesABadId) {
    // The oldest go once 66 are kept, down to the newest 50 (not at every run's exit).
    for (int i = 0; i < 70; ++i) ASSERT_EQ(sh("true").status, 0);
    auto list = log({"--list"});
    ASSERT_EQ(list.status, 0) << describe(list);
    EXPECT_EQ(ajtest::lines(list.out).size(), 54u) << "pruned to 50 at the 67th, 3 since, and the header";
    auto bad = log({"../../etc/passwd"});
    EXPECT_NE(bad.status, 0);
    EXPECT_TRUE(ajtest::contains(bad.err, "is not a run id")) << describe(bad);
}

}  // namespace
}  // namespace ajit
