// SPDX-License-Identifier: Apache-2.0
// Escape tests, kernel filesystems: /proc is a fresh procfs of the sandbox's pid
// namespace (EXP-03); /dev holds only the minimal device set (EXP-05).
#include "common.hpp"

#include <dirent.h>

#include <set>

using namespace ajesc;

// EXP-03: /proc is a real procfs (statfs magic), not a symlink, mounted
// nosuid,nodev,noexec, and lists only sandbox pids (a host canary is absent).
// (runc mounts.bats "/proc is a symlink", CVE-2019-19921, CVE-2023-27561.)
TEST_F(Escape, EXP03_ProcIsAFreshProcfs) {
    std::string marker = unique_name("aj-exp03-");
    ajtest::TempDir dir("aj-exp03");
    ajtest::Child host({"/bin/sh", dir.write(marker + ".sh", "while :; do sleep 0.2; done\n")});
    std::string t = helper("trysys");
    std::string script = t + " statfs /proc; " + t + " lstat /proc; " + t + " statfs /;"
                         " grep ' /proc ' /proc/self/mountinfo | sed 's/^/mnt /';"
                         " n=0; for p in /proc/[0-9]*; do n=$((n+1)); tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done;"
                         " echo count=$n";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    auto out = ajtest::lines(r.out);
    ASSERT_GE(out.size(), 5u) << r.out;
    std::vector<std::string> ftypes;
    for (const auto& l : out)
        if (l.rfind("f_type ", 0) == 0) ftypes.push_back(l);
    ASSERT_EQ(ftypes.size(), 2u) << r.out;
    EXPECT_EQ(ftypes[0], "f_type 0x9fa0") << "/proc is not procfs\n" << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "type dir ")) << "/proc is not a directory\n" << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "type symlink")) << r.out;
    std::string mnt;
    for (const auto& l : out)
        if (l.rfind("mnt ", 0) == 0) mnt = l;
    ASSERT_FALSE(mnt.empty()) << "no /proc line in mountinfo\n" << r.out;
    EXPECT_TRUE(ajtest::contains(mnt, " - proc ")) << mnt;
    auto opts = words(mnt).at(6);
    for (const char* o : {"nosuid", "nodev", "noexec"}) EXPECT_TRUE(ajtest::contains(opts, o)) << mnt;
    EXPECT_FALSE(ajtest::contains(r.out, marker)) << "host process in the sandbox /proc\n" << r.out;
    EXPECT_LE(std::atoi(field(r.out, "count").c_str()), 8) << r.out;

    // Positive controls: statfs tells procfs from another filesystem, and the same
    // listing on the host finds the canary.
    EXPECT_NE(ftypes[1], "f_type 0x9fa0") << "control: statfs cannot tell procfs apart";
    auto c = jail.host_sh(script);
    EXPECT_TRUE(ajtest::contains(c.out, marker)) << "control: the listing misses host processes";
}

namespace {
const char* const kForbiddenDevices[] = {
    "/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/nvme0n1", "/dev/kvm",
    "/dev/fuse", "/dev/net/tun", "/dev/dri", "/dev/input", "/dev/snd", "/dev/video0", "/dev/hidraw0",
    "/dev/tty0", "/dev/tty1", "/dev/vcs", "/dev/vcsa", "/dev/console", "/dev/userfaultfd",
    "/dev/loop-control", "/dev/loop0", "/dev/nvidia0", "/dev/cpu", "/dev/autofs", "/dev/btrfs-control"};
}  // namespace

// EXP-05: /dev holds exactly null zero full random urandom tty, ptmx -> pts/ptmx, pts/,
// shm/ and the fd/stdin/stdout/stderr links; no disk, kernel memory, kvm, fuse, tun,
// input, vt or console device. (bubblewrap "all expected devices were created";
// minijail -d; runc dev.bats.)
TEST_F(Escape, EXP05_DevIsMinimal) {
    std::string t = helper("trysys");
    std::string script = "ls -A /dev; echo ---; ls -A /dev/pts; echo ---; echo ptmx=$(readlink /dev/ptmx);";
    for (const char* d : {"null", "zero", "full", "random", "urandom", "tty"})
        script += std::string(" echo ") + d + "=$(" + t + " lstat /dev/" + d + " | head -1);";
    for (const char* f : kForbiddenDevices) script += std::string(" test -e ") + f + " && echo present=" + f + ";";
    script += " true";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    auto first = r.out.find("---\n");
    auto second = r.out.find("---\n", first + 4);
    ASSERT_NE(second, std::string::npos) << r.out;
    auto dev = words(r.out.substr(0, first));
    std::set<std::string> got(dev.begin(), dev.end());
    const std::set<std::string> expected = {"null", "zero", "full", "random", "urandom", "tty", "ptmx",
                                            "pts", "shm", "fd", "stdin", "stdout", "stderr"};
    EXPECT_EQ(got, expected) << r.out;
    for (const auto& p : words(r.out.substr(first + 4, second - first - 4)))
        EXPECT_TRUE(p == "ptmx" || p == "0") << "unexpected /dev/pts entry " << p;
    EXPECT_EQ(field(r.out, "ptmx"), "pts/ptmx") << r.out;
    const std::pair<const char*, const char*> numbers[] = {{"null", "1:3"}, {"zero", "1:5"},   {"full", "1:7"},
                                                           {"random", "1:8"}, {"urandom", "1:9"}, {"tty", "5:0"}};
    for (const auto& [name, rdev] : numbers)
        EXPECT_TRUE(ajtest::contains(field(r.out, name), std::string("type chr rdev ") + rdev + " "))
            << "/dev/" << name << ": " << field(r.out, name);
    EXPECT_FALSE(ajtest::contains(r.out, "present=")) << r.out;

    // Positive controls: the host's /dev differs from the expected set and holds at
    // least one forbidden device, so both checks can fail.
    std::set<std::string> host;
    if (DIR* d = opendir("/dev")) {
        while (dirent* e = readdir(d))
            if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") host.insert(e->d_name);
        closedir(d);
    }
    EXPECT_NE(host, expected) << "control: the host /dev is already minimal";
    auto c = jail.host_sh(script);
    EXPECT_TRUE(ajtest::contains(c.out, "present=")) << "control: no forbidden device on the host\n" << c.out;
}
