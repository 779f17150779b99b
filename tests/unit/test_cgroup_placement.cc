// SPDX-License-Identifier: Apache-2.0
// Where a run's cgroup goes when the caller says (CgroupPlacement::caller, ::under):
// a named parent must be a cgroup path that stays inside the hierarchy, and it
// resolves against the hierarchy's mount and root. Over a scratch directory that
// stands in for a mount: no cgroupfs, no privileges.
#include "cgroup/internal.hpp"

#include "test_support.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using agentjail::CgroupPlacement;
namespace cg = agentjail::cgroup;

cg::Hierarchy fake(const ajtest::TempDir& mount, const std::string& root, const std::string& self) {
    cg::Hierarchy h;
    h.mount = mount.path();
    h.root = root;
    h.self = self;
    return h;
}

std::string placed(const cg::Hierarchy& h, const std::string& parent, std::string& why) {
    agentjail::limits::Settings s;
    s.placement = parent.empty() ? CgroupPlacement::caller : CgroupPlacement::under;
    s.parent = parent;
    return cg::detail::placed_parent(h, s, why);
}

TEST(CgroupPlacement, ANamedParentResolvesUnderTheMount) {
    ajtest::TempDir mount("aj-cg");
    mount.mkdir("jobs/42");
    std::string why;
    EXPECT_EQ(placed(fake(mount, "/", "/user.slice/me"), "/jobs/42", why),
              mount.path() + "/jobs/42")
        << why;
    EXPECT_EQ(placed(fake(mount, "/", "/user.slice/me"), "/jobs/42/", why),
              mount.path() + "/jobs/42")
        << why;
    // A mount that shows a subtree (a container's): the path is the hierarchy's.
    EXPECT_EQ(
        placed(fake(mount, "/kubepods/pod1", "/kubepods/pod1/c"), "/kubepods/pod1/jobs/42", why),
        mount.path() + "/jobs/42")
        << why;
}

TEST(CgroupPlacement, ANamedParentCannotLeaveTheHierarchy) {
    ajtest::TempDir mount("aj-cg");
    mount.mkdir("jobs");
    const auto h = fake(mount, "/", "/me");
    for (const char* bad : {"jobs", "/jobs/..", "/../etc", "//jobs", "/jobs/./x"}) {
        std::string why;
        EXPECT_EQ(placed(h, bad, why), "") << bad;
        EXPECT_NE(why.find("not a cgroup path"), std::string::npos) << bad << ": " << why;
    }
    std::string why;
    EXPECT_EQ(placed(h, "/missing", why), "");
    EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
    // Outside the subtree the mount shows: not visible, not guessed.
    EXPECT_EQ(placed(fake(mount, "/kubepods/pod1", "/kubepods/pod1/c"), "/other", why), "");
    EXPECT_NE(why.find("not visible"), std::string::npos) << why;
}

TEST(CgroupPlacement, TheCallersOwnIsItsCgroupsDirectory) {
    ajtest::TempDir mount("aj-cg");
    std::string why;
    EXPECT_EQ(placed(fake(mount, "/", "/user.slice/me"), "", why), mount.path() + "/user.slice/me");
    EXPECT_EQ(placed(fake(mount, "/pod", "/elsewhere"), "", why), "");
    EXPECT_NE(why.find("not visible"), std::string::npos) << why;
}

}  // namespace
