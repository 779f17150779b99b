// SPDX-License-Identifier: Apache-2.0
// Integration: who the command is inside the sandbox (ids, pid 1, hostname, network,
// capabilities, open fds), checked from inside real sandboxes.
#include "common.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <set>

using ajit::describe;
using ajit::field;
using ajit::helper;
using ajit::Sandbox;
using ajit::words;

TEST_F(Sandbox, UidGidMapIsTheCallersIdsOnlyAndSetgroupsDenied) {
    auto r = jail.sh("echo uid_map=$(cat /proc/self/uid_map); echo gid_map=$(cat /proc/self/gid_map);"
                     "echo setgroups=$(cat /proc/self/setgroups); echo id=$(id -u):$(id -g)");
    ASSERT_EQ(r.status, 0) << describe(r);
    std::string u = std::to_string(getuid()), g = std::to_string(getgid());
    EXPECT_EQ(words(field(r.out, "uid_map")), (std::vector<std::string>{u, u, "1"})) << r.out;
    EXPECT_EQ(words(field(r.out, "gid_map")), (std::vector<std::string>{g, g, "1"})) << r.out;
    EXPECT_EQ(field(r.out, "setgroups"), "deny");
    EXPECT_EQ(field(r.out, "id"), u + ":" + g);
}

TEST_F(Sandbox, CommandRunsUnderTheInitAndHostProcessesAreInvisible) {
    std::string marker = ajit::unique_name("aj-hostproc-");
    // The host canary's script lives outside the workspace, so only its pid and
    // cmdline could reveal it.
    ajtest::TempDir scripts("aj-hostproc");
    std::string path = scripts.write(marker + ".sh", "while :; do sleep 0.2; done\n");
    ajtest::Child host({"/bin/sh", path});
    ASSERT_TRUE(ajtest::exists("/proc/" + std::to_string(host.pid())));

    auto r = jail.sh(
        "echo pid=$$; echo ppid=$PPID; n=0; for p in /proc/[0-9]*; do n=$((n+1));"
        " echo \"proc ${p#/proc/} $(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\"; done; echo count=$n;"
        "test -e /proc/" + std::to_string(host.pid()) + " && echo hostpid=visible || echo hostpid=absent");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "ppid"), "1") << "the command's parent must be the sandbox init\n" << r.out;
    EXPECT_NE(field(r.out, "pid"), "1") << "the command must not be pid 1 itself";
    int count = std::atoi(field(r.out, "count").c_str());
    EXPECT_GE(count, 2) << r.out;
    EXPECT_LE(count, 8) << "more processes than the init, the shell and its subshells\n" << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, marker)) << "host process visible:\n" << r.out;
    if (host.pid() > 100) {
        EXPECT_EQ(field(r.out, "hostpid"), "absent") << r.out;
    }

    // Positive control: the same loop on the host finds the canary process.
    auto c = jail.host_sh("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done");
    EXPECT_TRUE(ajtest::contains(c.out, marker)) << "the probe cannot see host processes at all";
}

TEST_F(Sandbox, HostnameIsAgentjailOrTheFlag) {
    auto r = jail.sh("echo proc=$(cat /proc/sys/kernel/hostname); echo uname=$(uname -n)");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "proc"), "agentjail");
    EXPECT_EQ(field(r.out, "uname"), "agentjail");

    auto r2 = jail.sh("cat /proc/sys/kernel/hostname", {"--hostname", "aj-flag-host"});
    ASSERT_EQ(r2.status, 0) << describe(r2);
    EXPECT_EQ(ajtest::trim(r2.out), "aj-flag-host");
}

TEST_F(Sandbox, OnlyLoopbackInterface) {
    auto r = jail.sh("cat /proc/net/dev; echo ---; if [ -d /sys/class/net ]; then ls -A /sys/class/net; else echo no-sys; fi");
    ASSERT_EQ(r.status, 0) << describe(r);
    auto parts = r.out.find("---");
    ASSERT_NE(parts, std::string::npos);
    std::set<std::string> ifaces;
    for (const auto& l : ajtest::lines(r.out.substr(0, parts))) {
        auto colon = l.find(':');
        if (colon == std::string::npos) continue;
        ifaces.insert(ajtest::trim(l.substr(0, colon)));
    }
    EXPECT_EQ(ifaces, (std::set<std::string>{"lo"})) << r.out;
    auto sys = words(r.out.substr(parts + 3));
    EXPECT_TRUE(sys == std::vector<std::string>{"no-sys"} || sys == std::vector<std::string>{"lo"} ||
                sys.empty())
        << "/sys/class/net shows host interfaces:\n" << r.out;
}

TEST_F(Sandbox, AllCapabilitySetsEmptyAndNoNewPrivs) {
    auto r = jail.run([&] {
        auto a = jail.base();
        a.insert(a.end(), {"--", helper("caps")});
        return a;
    }());
    EXPECT_EQ(r.status, 0) << "caps probe reports a capability or no_new_privs off\n" << describe(r);
    for (const char* key : {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"}) {
        bool seen = false;
        for (const auto& l : ajtest::lines(r.out)) {
            if (l.rfind(key, 0) != 0) continue;
            seen = true;
            EXPECT_EQ(ajtest::trim(l.substr(std::string(key).size())), "0000000000000000") << l;
        }
        EXPECT_TRUE(seen) << key << " missing\n" << r.out;
    }
    EXPECT_TRUE(ajtest::contains(r.out, "NoNewPrivs:\t1")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "prctl_bounding: none")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "prctl_ambient: none")) << r.out;
}

TEST_F(Sandbox, OnlyStdioFdsReachTheCommandEvenWhenTheCallerLeaksFds) {
    // The caller leaks 3..9 without O_CLOEXEC: files, directories (one O_PATH on the
    // fake ~/.ssh), a pipe and a socket.
    int fds[7];
    fds[0] = open("/dev/null", O_RDONLY);
    fds[1] = open("/", O_RDONLY | O_DIRECTORY);
    fds[2] = open((jail.home() + "/.ssh").c_str(), O_PATH | O_DIRECTORY);
    fds[3] = open((jail.home() + "/.ssh/id_ed25519").c_str(), O_RDONLY);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    fds[4] = p[0];
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fds[5] = sv[0];
    fds[6] = open(jail.ws().c_str(), O_RDONLY | O_DIRECTORY);
    ajtest::RunOptions opts;
    for (int i = 0; i < 7; ++i) {
        ASSERT_GE(fds[i], 0);
        opts.leak_fds.emplace_back(fds[i], 3 + i);
    }
    auto args = jail.base();
    args.insert(args.end(), {"--", helper("fdscan")});
    auto r = jail.run(args, opts);

    // Positive control: the same probe with the same leaks on the host sees them.
    auto c = ajtest::run_with({helper("fdscan")}, opts);
    for (int fd : fds) close(fd);
    close(p[1]);
    close(sv[1]);

    EXPECT_EQ(r.status, 0) << describe(r);
    std::vector<std::string> open_fds;
    for (const auto& l : ajtest::lines(r.out))
        if (!l.empty() && l.rfind("count", 0) != 0) open_fds.push_back(words(l).at(0));
    EXPECT_EQ(open_fds, (std::vector<std::string>{"0", "1", "2"})) << r.out;
    EXPECT_EQ(c.status, 1) << "control: fdscan did not see the leaked fds\n" << describe(c);
    for (int i = 3; i <= 9; ++i)
        EXPECT_TRUE(ajtest::contains(c.out, "\n" + std::to_string(i) + " ")) << "control misses fd " << i << "\n" << c.out;
}
