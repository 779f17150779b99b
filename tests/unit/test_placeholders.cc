// SPDX-License-Identifier: Apache-2.0
// Placeholders of two runs in one workspace (Slurm arrays, srun -n N): the run that
// comes second guards the first one's placeholder as it stands instead of failing,
// and anything else at the name still fails its launch.
#include "guard/placeholder.hpp"
#include "plan/staged_name.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace {

using agentjail::plan::Guard;
using agentjail::plan::Plan;

// A plan whose only guard is a protected name in the workspace that did not exist
// when the plan was made.
Plan plan_with_placeholder(const std::string& ws, const std::string& name, bool is_dir) {
    Plan p;
    p.workspace = ws;
    Guard g;
    g.kind = Guard::Kind::protected_ro;
    g.host = ws + "/" + name;
    g.inside = g.host;
    g.is_dir = is_dir;
    g.placeholder = true;
    p.guards.push_back(g);
    return p;
}

// What a launch does with the plan's placeholders: made under staged names beside
// them (journaled there in a real launch), then renamed into place.
agentjail::Result<agentjail::guard::Placeholders> make_placeholders(const Plan& plan) {
    static int runs = 0;
    auto wanted = agentjail::guard::wanted_placeholders(plan, "t" + std::to_string(::getpid()) + "-" +
                                                               std::to_string(runs++));
    if (!wanted) return std::move(wanted).error();
    auto staged = agentjail::guard::Placeholders::stage(*wanted);
    if (!staged) return std::move(staged).error();
    auto committed = staged->commit();
    if (!committed) return std::move(committed).error();
    return std::move(*staged);
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

TEST(Placeholders, MadeWhenNothingIsThereAndRemovedAfter) {
    ajtest::TempDir ws("aj-ph");
    const std::string name = ws.path() + "/.mcp.json";
    {
        auto made = make_placeholders(
            plan_with_placeholder(ws.path(), ".mcp.json", false));
        ASSERT_TRUE(made) << made.error().message();
        EXPECT_EQ(made->items().size(), 1u);
        EXPECT_TRUE(exists(name));
    }
    EXPECT_FALSE(exists(name)) << "the run's own placeholder outlived it";
}

TEST(Placeholders, AnotherRunsFileIsGuardedAsItStandsAndLeftToItsMaker) {
    ajtest::TempDir ws("aj-ph");
    const std::string name = ws.path() + "/.mcp.json";
    // The first run's placeholder, made after this run planned (the name was missing).
    auto first =
        make_placeholders(plan_with_placeholder(ws.path(), ".mcp.json", false));
    ASSERT_TRUE(first) << first.error().message();
    {
        auto second = make_placeholders(
            plan_with_placeholder(ws.path(), ".mcp.json", false));
        ASSERT_TRUE(second) << second.error().message();
        EXPECT_TRUE(second->items().empty())
            << "the second run took the first one's placeholder as its own";
    }
    EXPECT_TRUE(exists(name)) << "the second run removed the first one's placeholder";
}

TEST(Placeholders, AnotherRunsDirectoryIsGuardedAsItStands) {
    ajtest::TempDir ws("aj-ph");
    auto first =
        make_placeholders(plan_with_placeholder(ws.path(), ".vscode", true));
    ASSERT_TRUE(first) << first.error().message();
    auto second =
        make_placeholders(plan_with_placeholder(ws.path(), ".vscode", true));
    ASSERT_TRUE(second) << second.error().message();
    EXPECT_TRUE(second->items().empty());
}

// The controls: what is not a placeholder's shape at the name still fails the launch.
TEST(Placeholders, ALinkOrAFileWithContentAtTheNameStillFails) {
    ajtest::TempDir ws("aj-ph");
    ASSERT_EQ(::symlink("/etc/passwd", (ws.path() + "/.mcp.json").c_str()), 0);
    auto link =
        make_placeholders(plan_with_placeholder(ws.path(), ".mcp.json", false));
    ASSERT_FALSE(link);
    EXPECT_EQ(link.error().code(), EEXIST);

    ws.write(".envrc", "export X=1\n", 0444);
    auto full =
        make_placeholders(plan_with_placeholder(ws.path(), ".envrc", false));
    ASSERT_FALSE(full);
    EXPECT_EQ(full.error().code(), EEXIST);

    ws.write("agentjail.toml", "", 0644);  // empty, but not the placeholder's mode
    auto writable = make_placeholders(
        plan_with_placeholder(ws.path(), "agentjail.toml", false));
    ASSERT_FALSE(writable);
    EXPECT_EQ(writable.error().code(), EEXIST);
}

// The one form of a staged name: what the guard makes is what the plan passes over
// (another run's placeholder a moment before its rename), and nothing else is.
TEST(StagedName, TheFormMadeIsTheFormRecognised) {
    using agentjail::plan::is_staged_name;
    using agentjail::plan::staged_name;
    EXPECT_EQ(staged_name("12-345-0", 3), ".agentjail-12-345-0-3");
    EXPECT_TRUE(is_staged_name(staged_name("12-345-0", 3)));
    EXPECT_TRUE(is_staged_name(staged_name(std::to_string(::getpid()) + "-99-7", 12)));
    for (const char* other : {".agentjail-1-2-3", ".agentjail-1-2-3-4-5", ".agentjail-1-2-3-",
                              ".agentjail--1-2-3", ".agentjail-1-2-x-3", ".agentjail-mask",
                              ".agentjail-quarantined", "agentjail-1-2-3-4", ".envrc"})
        EXPECT_FALSE(is_staged_name(other)) << other;
}

}  // namespace
