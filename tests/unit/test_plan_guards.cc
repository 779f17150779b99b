// SPDX-License-Identifier: Apache-2.0
// The plan's guards (the names the supervisor watches for the run) and how the
// workspace is resolved when -C names it through a link (issue 10, direct mode).
#include "test_plan_fixture.hpp"

#include <sys/stat.h>

using namespace ajplantest;
namespace plan = agentjail::plan;
using agentjail::ErrorKind;
using agentjail::plan::Guard;

namespace {

const Guard* find_guard(const Plan& p, const std::string& host) {
    for (const auto& g : p.guards)
        if (g.host == host) return &g;
    return nullptr;
}

}  // namespace

TEST(PlanGuards, EveryWorkspaceMaskIsAGuardWithItsIdentity) {
    PlanTree t;
    auto r = plan::build(t.defaults(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    for (const char* name : {"/.env", "/.env.local"}) {
        const Guard* g = find_guard(*r, t.proj() + name);
        ASSERT_NE(g, nullptr) << name;
        EXPECT_EQ(g->kind, Guard::Kind::hidden);
        EXPECT_EQ(g->inside, t.proj() + name);
        EXPECT_FALSE(g->is_dir);
        EXPECT_FALSE(g->placeholder);
        struct stat st {};
        ASSERT_EQ(::lstat(g->host.c_str(), &st), 0);
        EXPECT_EQ(g->ino, st.st_ino);
        EXPECT_EQ(g->dev, st.st_dev);
    }
    // A hidden path under no bind (~/.ssh below the private home tmpfs) has no host
    // name the sandbox sees: nothing to watch.
    EXPECT_EQ(find_guard(*r, t.home() + "/.ssh"), nullptr);
}

TEST(PlanGuards, ReadOnlySelfBindInsideTheWorkspaceIsProtected) {
    PlanTree t;
    t.tmp.write("home/u/proj/.git/config", "[core]\n");
    Policy pol = t.defaults();
    pol.ro.push_back(MountRule{t.proj() + "/.git/config", "", false, flag("--ro")});
    // Control: a read-only bind from elsewhere is no protection of a workspace name.
    pol.ro.push_back(MountRule{t.p("data/file"), "", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const Guard* g = find_guard(*r, t.proj() + "/.git/config");
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->kind, Guard::Kind::protected_ro);
    EXPECT_EQ(find_guard(*r, t.p("data/file")), nullptr);
}

TEST(PlanGuards, NoGuardsWithoutHiddenNamesInTheWorkspace) {
    PlanTree t;
    ::unlink((t.proj() + "/.env").c_str());
    ::unlink((t.proj() + "/.env.local").c_str());
    auto r = plan::build(t.defaults(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->guards.empty());  // the watcher costs nothing then
}

// An earlier run had the project read-write and replaced `build` by a link to ~.
TEST(PlanWorkspace, ExplicitPathThroughALinkInTheProjectIsRefused) {
    PlanTree t;
    ASSERT_EQ(::symlink(t.home().c_str(), (t.proj() + "/build").c_str()), 0);
    Policy pol = t.defaults();
    pol.workspace_path = agentjail::policy::Located<std::string>{"build", flag("-C")};
    pol.workspace_explicit = true;
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
    EXPECT_NE(r.error().message().find("could have been planted by an earlier run; name the real path"),
              std::string::npos)
        << r.error().message();
    // The same link below the project to an ordinary directory is refused too.
    t.tmp.mkdir("data/real");
    ASSERT_EQ(::symlink(t.p("data/real").c_str(), (t.proj() + "/sub").c_str()), 0);
    pol.workspace_path = agentjail::policy::Located<std::string>{"sub", flag("-C")};
    EXPECT_FALSE(plan::build(pol, {"/x"}, t.host()));
    // Control: the real path is accepted.
    pol.workspace_path = agentjail::policy::Located<std::string>{t.p("data/real"), flag("-C")};
    auto ok = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(ok) << ok.error().message();
    EXPECT_EQ(ok->workspace, t.p("data/real"));
}

// A link outside the current directory that resolves to the home: explicit, yet not
// named as itself, so refused; the home named as itself stays allowed.
TEST(PlanWorkspace, ExplicitPathResolvingToTheHomeIsRefusedUnlessNamedAsItself) {
    PlanTree t;
    ASSERT_EQ(::symlink(t.home().c_str(), t.p("data/h").c_str()), 0);
    Policy pol = t.defaults();
    pol.workspace_path = agentjail::policy::Located<std::string>{t.p("data/h"), flag("-C")};
    pol.workspace_explicit = true;
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("resolves to " + t.home() + ", the home directory"), std::string::npos)
        << r.error().message();
    pol.workspace_path = agentjail::policy::Located<std::string>{"~", flag("-C")};
    auto ok = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(ok) << ok.error().message();
    EXPECT_EQ(ok->workspace, t.home());
    EXPECT_NE(find_op(*ok, t.home() + "/.ssh"), nullptr);  // hidden paths stay hidden
}
