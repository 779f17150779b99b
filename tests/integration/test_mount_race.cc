// SPDX-License-Identifier: Apache-2.0
// The host changes a name between the plan and the root's build: the launcher never
// makes a mount point anew on the host through a bind. A hidden file that is gone by
// then has nothing left to hide and the run goes on (a lock file such as
// /etc/gshadow.lock, matched by gshadow*, lives for a moment); a placeholder of ours
// that is gone fails the launch. Masks and placeholders are the mounts view's (--view
// mounts); the default view builds no mount below the workspace.
#include "api/api.hpp"

#include "test_support.hpp"
#include "util/fault.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace {

using agentjail::Policy;
using agentjail::Sandbox;
using ajtest::Pipe;
namespace fault = agentjail::fault;

class MountRace : public ::testing::Test {
protected:
    void TearDown() override { fault::disarm(); }

    // Spawns `argv` in `ws` under `p` with the child held before it builds its root;
    // `meanwhile` runs on the host while it waits. Returns the run's result, or the
    // spawn's error message (prefixed "spawn: ").
    static std::string run_held(Policy& p, const std::vector<std::string>& argv,
                                const std::function<void()>& meanwhile, agentjail::RunResult* out,
                                const char* point = "child.before-root") {
        Pipe report, release;
        fault::arm(point, fault::Action::hold, report.w, release.r);
        std::optional<agentjail::Result<Sandbox>> spawned;
        std::thread t([&] { spawned.emplace(Sandbox::spawn(p, argv)); });
        const std::string line = report.line(10000);
        meanwhile();
        // A byte, not EOF: the held child holds a copy of the write end too.
        EXPECT_EQ(::write(release.w, "g", 1), 1);
        t.join();
        fault::disarm();
        if (!ajtest::contains(line, point)) return "no report from the held point: " + line;
        if (!*spawned) return "spawn: " + spawned->error().message();
        auto r = (*spawned)->wait();
        if (!r) return "wait: " + r.error().message();
        *out = *r;
        return "";
    }
};

Policy hiding(const ajtest::TempDir& ws, const std::string& name) {
    auto p = Policy::load("default");
    EXPECT_TRUE(p) << p.error().message();
    EXPECT_TRUE(p->set_workspace(ws.path()));
    EXPECT_TRUE(p->set_workspace_view("mounts"));
    EXPECT_TRUE(p->add_hide(ws.path() + "/" + name));
    return std::move(p).value();
}

const std::vector<std::string> kProbe = {
    "/bin/sh", "-c", "if test -e secret.txt; then cat secret.txt > seen 2>/dev/null; echo present >> seen; "
                     "else echo absent > seen; fi"};

// The control: the file is still there when the root is built, so it is masked:
// present inside, its content unreadable, and the host's copy untouched.
TEST_F(MountRace, AHiddenFileStillThereIsMasked) {
    ajtest::TempDir ws;
    const std::string secret = ajtest::canary();
    ws.write("secret.txt", secret);
    Policy p = hiding(ws, "secret.txt");
    agentjail::RunResult r;
    ASSERT_EQ(run_held(p, kProbe, [] {}, &r), "");
    EXPECT_TRUE(r.exited && r.exit_code == 0);
    const std::string seen = ajtest::read_file(ws.path() + "/seen");
    EXPECT_TRUE(ajtest::contains(seen, "present")) << seen;
    EXPECT_FALSE(ajtest::contains(seen, secret)) << seen;
    EXPECT_EQ(ajtest::read_file(ws.path() + "/secret.txt"), secret);
}

// Removed on the host after the plan: the run goes on, the sandbox does not see it,
// and the launcher did not make it again on the host (it used to create an empty file
// there through the workspace's read-write bind, to have a mount point).
TEST_F(MountRace, AHiddenFileGoneBeforeTheRootIsNotMadeAgain) {
    ajtest::TempDir ws;
    const std::string path = ws.path() + "/secret.txt";
    ws.write("secret.txt", ajtest::canary());
    Policy p = hiding(ws, "secret.txt");
    agentjail::RunResult r;
    ASSERT_EQ(run_held(p, kProbe, [&] { ASSERT_EQ(::unlink(path.c_str()), 0); }, &r), "");
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r.exit_code << " " << r.term_signal;
    EXPECT_EQ(ajtest::trim(ajtest::read_file(ws.path() + "/seen")), "absent");
    EXPECT_FALSE(ajtest::exists(path)) << "the launcher made the hidden name anew on the host";
}

// A run's placeholders for files' names are one socket inode under many names (hard
// links: one inode made on the host a run, not one a name), each bound read-only as
// usual, and none is left after the run.
TEST_F(MountRace, TheSocketPlaceholdersOfARunAreOneInode) {
    ajtest::TempDir ws;
    auto p = Policy::load("default");
    ASSERT_TRUE(p && p->set_workspace(ws.path()));
    ASSERT_TRUE(p->set_workspace_view("mounts"));
    agentjail::RunResult r;
    struct stat a {}, b {}, c {};
    ASSERT_EQ(run_held(*p, {"/bin/true"},
                       [&] {
                           ASSERT_EQ(::lstat((ws.path() + "/.envrc").c_str(), &a), 0);
                           ASSERT_EQ(::lstat((ws.path() + "/.mcp.json").c_str(), &b), 0);
                           ASSERT_EQ(::lstat((ws.path() + "/.vscode").c_str(), &c), 0);
                       },
                       &r),
              "");
    EXPECT_TRUE(r.exited && r.exit_code == 0);
    EXPECT_TRUE(S_ISSOCK(a.st_mode) && S_ISSOCK(b.st_mode));
    EXPECT_EQ(a.st_ino, b.st_ino) << "two socket placeholders of one run are two inodes";
    EXPECT_GE(a.st_nlink, 2u);
    EXPECT_TRUE(S_ISDIR(c.st_mode));  // a directory's name keeps a directory of its own
    for (const char* n : {"/.envrc", "/.mcp.json", "/.vscode"})
        EXPECT_FALSE(ajtest::exists(ws.path() + n)) << n << " outlived its run";
}

// A placeholder of ours (a protected name that did not exist: .envrc) removed on the
// host before the root is built: the launch fails, saying where, and makes nothing.
// The control is the run without the removal.
TEST_F(MountRace, APlaceholderGoneFailsTheLaunch) {
    ajtest::TempDir ws;
    const std::string envrc = ws.path() + "/.envrc";
    {
        auto p = Policy::load("default");
        ASSERT_TRUE(p && p->set_workspace(ws.path()));
        ASSERT_TRUE(p->set_workspace_view("mounts"));
        agentjail::RunResult r;
        ASSERT_EQ(run_held(*p, {"/bin/true"}, [&] { EXPECT_TRUE(ajtest::exists(envrc)) << "no placeholder"; }, &r),
                  "");
        EXPECT_TRUE(r.exited && r.exit_code == 0);
        EXPECT_FALSE(ajtest::exists(envrc)) << "the placeholder outlived its run";
    }
    auto p = Policy::load("default");
    ASSERT_TRUE(p && p->set_workspace(ws.path()));
    ASSERT_TRUE(p->set_workspace_view("mounts"));
    agentjail::RunResult r;
    const std::string err = run_held(*p, {"/bin/true"}, [&] { ASSERT_EQ(::unlink(envrc.c_str()), 0); }, &r);
    EXPECT_TRUE(ajtest::contains(err, "spawn: ")) << "the run went on without its protected name: " << err;
    EXPECT_TRUE(ajtest::contains(err, ".envrc")) << err;
    EXPECT_FALSE(ajtest::exists(envrc)) << "the launcher made the placeholder anew on the host";
}

// A directory bound over itself only so it cannot be renamed (it holds a hidden
// name) is removed on the host, with what it held, before the root is built:
// nothing is left to keep or hide, and the run goes on. It used to fail the launch
// (its bind's source gone). The control: the same run without the removal sees the
// directory, its secret masked.
TEST_F(MountRace, ADirectoryAboveAHiddenNameGoneBeforeTheRootIsSkipped) {
    ajtest::TempDir ws;
    const std::string secret = ajtest::canary();
    ws.write("sub/.env", secret);
    const std::vector<std::string> probe = {
        "/bin/sh", "-c", "if test -d sub; then (cat sub/.env 2>/dev/null || echo unreadable) > seen; "
                         "else echo absent > seen; fi"};
    auto p = Policy::load("default");
    ASSERT_TRUE(p && p->set_workspace(ws.path()));
    ASSERT_TRUE(p->set_workspace_view("mounts"));
    {
        agentjail::RunResult r;
        ASSERT_EQ(run_held(*p, probe, [] {}, &r), "");
        EXPECT_TRUE(r.exited && r.exit_code == 0);
        const std::string seen = ajtest::read_file(ws.path() + "/seen");
        EXPECT_FALSE(ajtest::contains(seen, secret)) << seen;
        EXPECT_FALSE(ajtest::contains(seen, "absent")) << seen;
    }
    agentjail::RunResult r;
    ASSERT_EQ(run_held(*p, probe,
                       [&] {
                           ASSERT_EQ(::unlink((ws.path() + "/sub/.env").c_str()), 0);
                           ASSERT_EQ(::rmdir((ws.path() + "/sub").c_str()), 0);
                       },
                       &r),
              "");
    EXPECT_TRUE(r.exited && r.exit_code == 0) << r.exit_code << " " << r.term_signal;
    EXPECT_EQ(ajtest::trim(ajtest::read_file(ws.path() + "/seen")), "absent");
    EXPECT_FALSE(ajtest::exists(ws.path() + "/sub")) << "the launcher made the directory anew on the host";
}

// Another run's placeholder directory (.claude/, made for its protected
// .claude/settings.json) is what this run's plan saw; that run ends and takes it
// before this one sets up (issue 25: 3 of 60 runs at once failed "opening its parent
// directory: ENOENT"). This run makes the directory again as a placeholder of its
// own, then the name in it: the sandbox still cannot create the protected name, and
// nothing is left after the run.
TEST_F(MountRace, AnotherRunsPlaceholderDirectoryGoneBeforeTheSetupIsMadeAgain) {
    ajtest::TempDir ws;
    auto p = Policy::load("default");
    ASSERT_TRUE(p) << p.error().message();
    ASSERT_TRUE(p->set_workspace(ws.path()));
    ASSERT_TRUE(p->set_workspace_view("mounts"));
    ws.mkdir(".claude");  // what another run's placeholder directory looks like
    const std::vector<std::string> probe = {
        "/bin/sh", "-c", "if (: > .claude/settings.json) 2>/dev/null; then echo WROTE > seen; else echo REFUSED > seen; fi"};
    agentjail::RunResult r;
    ASSERT_EQ(run_held(*p, probe, [&] { ASSERT_EQ(::rmdir((ws.path() + "/.claude").c_str()), 0); }, &r,
                       "launch.before-shared"),
              "");
    EXPECT_TRUE(r.exited && r.exit_code == 0);
    EXPECT_EQ(ajtest::read_file(ws.path() + "/seen"), "REFUSED\n");
    EXPECT_FALSE(ajtest::exists(ws.path() + "/.claude")) << "the placeholders were left";
    // Positive control: the probe writes the name where nothing protects it.
    auto host = ajtest::run({"/bin/sh", "-c", "mkdir .claude && : > .claude/settings.json && echo WROTE"}, {}, nullptr,
                            ws.path());
    EXPECT_EQ(ajtest::trim(host.out), "WROTE");
}

}  // namespace
