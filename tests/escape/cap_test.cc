// SPDX-License-Identifier: Apache-2.0
// Escape tests, privileges: no capability in any set and no_new_privs on (CAP-01);
// minimal id maps that cannot be widened, setgroups denied (CAP-03).
#include "common.hpp"

#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>

using namespace ajesc;

namespace {
// Gives path file capabilities (CAP_SYS_ADMIN and CAP_NET_RAW, permitted + effective).
// Needs CAP_SETFCAP on the host, so only a root run can build this probe.
bool add_file_caps(const std::string& path) {
    vfs_cap_data data{};
    data.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
    data.data[0].permitted = (1u << CAP_SYS_ADMIN) | (1u << CAP_NET_RAW);
    return setxattr(path.c_str(), "security.capability", &data, XATTR_CAPS_SZ_2, 0) == 0;
}
}  // namespace

// CAP-01: all five capability sets are empty (even where the uid maps to 0), the
// bounding and ambient sets are empty by prctl, no_new_privs is on, in the command,
// in a grandchild, and after execve of a binary with file capabilities.
// (bubblewrap "we have no caps as uid != 0"; runc capabilities.bats; crun CVE-2022-27650.)
TEST_F(Escape, CAP01_NoCapabilitiesAndNoNewPrivs) {
    std::string caps = helper("caps");
    auto direct = jail.run(cat(jail.base(), {"--", caps}));
    EXPECT_EQ(direct.status, 0) << describe(direct);
    EXPECT_TRUE(ajtest::contains(direct.out, "verdict: clean")) << direct.out;
    EXPECT_TRUE(ajtest::contains(direct.out, "NoNewPrivs:\t1")) << direct.out;

    auto grandchild = jail.sh("sh -c '" + caps + "'");
    EXPECT_EQ(grandchild.status, 0) << describe(grandchild);

    // After execve of a file-capability binary (root only: setting them needs CAP_SETFCAP).
    std::string fcap = jail.ws() + "/caps-fcap";
    std::filesystem::copy_file(caps, fcap);
    chmod(fcap.c_str(), 0755);
    bool have_fcap = getuid() == 0 && add_file_caps(fcap);
    if (have_fcap) {
        auto f = jail.sh(fcap);
        EXPECT_EQ(f.status, 0) << "execve of a file-capability binary gained capabilities\n" << describe(f);
    } else {
        std::cout << "[   NOTE   ] file-capability probe skipped: not root or no security.capability xattr\n";
    }

    // Positive control: the same probe on the host reports capabilities (at least the
    // bounding set of an ordinary process) and no_new_privs off.
    auto c = ajtest::run_with({caps}, {});
    EXPECT_EQ(c.status, 1) << "control: the probe finds nothing on the host\n" << describe(c);
    EXPECT_TRUE(ajtest::contains(c.out, "verdict: dirty")) << c.out;
}

// CAP-03: maps are one line each (the caller's ids), setgroups reads deny, and writing
// the maps, re-allowing setgroups, or calling setgroups all fail with EPERM.
// (bubblewrap setgroups "deny", CVE-2014-8989; runc userns.bats.)
TEST_F(Escape, CAP03_IdMapsCannotBeWidened) {
    std::string t = helper("trysys");
    std::string u = std::to_string(getuid()), g = std::to_string(getgid());
    auto r = jail.sh(t + " write /proc/self/uid_map '0 0 1' >/dev/null; echo uid=$?; " + t +
                     " write /proc/self/uid_map '" + u + " " + u + " 2' >/dev/null; echo uid2=$?; " + t +
                     " write /proc/self/gid_map '0 0 1' >/dev/null; echo gid=$?; " + t +
                     " write /proc/self/setgroups allow >/dev/null; echo allow=$?; " + t +
                     " setgroups >/dev/null; echo setgroups=$?; echo lines=$(wc -l < /proc/self/uid_map)"
                     "$(wc -l < /proc/self/gid_map); echo sg=$(cat /proc/self/setgroups)");
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* k : {"uid", "uid2", "gid", "allow", "setgroups"}) {
        int e = std::atoi(field(r.out, k).c_str());
        EXPECT_TRUE(e == EPERM || e == EACCES) << k << ": errno " << field(r.out, k) << "\n" << r.out;
    }
    EXPECT_EQ(field(r.out, "lines"), "11") << r.out;
    EXPECT_EQ(field(r.out, "sg"), "deny") << r.out;

    // As root a file of our group with mode 0707 must stay unreadable: dropping the
    // group with setgroups would turn the "other" bits on.
    if (getuid() == 0) {
        std::string secret = jail.new_canary();
        std::string f = jail.plant("group-denied", secret + "\n", 0707);
        ASSERT_EQ(chown(f.c_str(), 65534, getgid()), 0);
        auto g0707 = jail.sh("cat " + f + " 2>/dev/null; echo read=$?");
        EXPECT_NE(field(g0707.out, "read"), "0") << g0707.out;
    }

    // Positive control: on the host, in a fresh user namespace, the same write probes
    // succeed (setgroups "deny" then a one-line uid and gid map).
    auto c = ajtest::run_with({t, "userns_selfmap"}, {});
    EXPECT_EQ(c.status, 0) << "control: the map-writing probe cannot succeed at all\n" << describe(c);
}
