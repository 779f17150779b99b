// SPDX-License-Identifier: Apache-2.0
// Runs at once in one workspace (two agents in one project, a CI matrix, a Slurm
// array): the placeholders one run makes are existing names to the next one's plan,
// so they stay until the last run there ends (guard/shared_roots.hpp). Before, the
// first run to end removed them under the others: a run still setting up failed
// (its bind source gone), a running one saw "removed by the host" and re-applied,
// and another run's staged placeholder names showed up in plans. Placeholders and the
// setup lock are the mounts view's (--view mounts); the default view makes neither, and
// ManyAtOnceAllRunAndLeaveNothing runs through both.
#include "api/api.hpp"

#include "test_support.hpp"
#include "util/fault.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fault = agentjail::fault;
using json = nlohmann::json;

class SharedWorkspace : public ::testing::Test {
protected:
    void TearDown() override {
        fault::disarm();
        ::unsetenv("XDG_STATE_HOME");
    }
    std::vector<std::string> env() const { return {"HOME=" + home.path(), "XDG_STATE_HOME=" + state.path()}; }
    ajtest::RunOptions opts() const {
        ajtest::RunOptions o;
        o.env = env();
        o.cwd = ws.path();
        return o;
    }
    // `agentjail -C ws [args] -- sh -c script` in the background, through the mounts
    // view unless args name one.
    std::unique_ptr<ajtest::Child> start(const std::string& script, std::vector<std::string> args = {}) {
        std::vector<std::string> argv{ajtest::agentjail_bin(), "-C", ws.path()};
        if (std::find(args.begin(), args.end(), "--view") == args.end()) args.insert(args.begin(), {"--view", "mounts"});
        argv.insert(argv.end(), args.begin(), args.end());
        for (const char* a : {"--", "/bin/sh", "-c"}) argv.emplace_back(a);
        argv.push_back(script);
        return std::make_unique<ajtest::Child>(argv, opts());
    }
    std::set<std::string> journals() const { return ajtest::dir_entries(state.path() + "/agentjail/leftovers"); }
    std::string host(const std::string& rel) const { return ws.path() + "/" + rel; }
    static std::string messages(const std::string& err) {
        std::string out;
        for (const auto& l : ajtest::lines(err))
            if (ajtest::contains(l, "agentjail:")) out += l + "\n";
        return out;
    }

    ajtest::TempDir ws{"aj-sharedws"}, home{"aj-sharedhome"}, state{"aj-sharedstate"};
};

// A script that waits on the host for `go` (a file the test makes), then tries to
// write a protected name and says whether it could.
std::string wait_then_write(const std::string& started, const std::string& go, const std::string& name) {
    return "touch " + started + "; while [ ! -e " + go + " ]; do sleep 0.05; done; " +
           "if (: > " + name + ") 2>/dev/null; then echo WROTE; else echo REFUSED; fi";
}

// The probe itself: on the host, outside any sandbox, it writes the name.
// A private workspace (0700) the host writes into while runs start there (Slurm array
// tasks write their output beside it): each run enters it. The view's root had no
// permission bits until the kernel's first answer for it, and a host change reported
// meanwhile made the kernel drop that answer: about one start in twenty failed with
// EACCES entering the working directory. Control: the host's writes happened.
TEST_F(SharedWorkspace, RunsStartInAPrivateWorkspaceTheHostWritesInto) {
    ASSERT_EQ(::chmod(ws.path().c_str(), 0700), 0);
    std::atomic<bool> stop{false};
    std::atomic<int> wrote{0};
    std::thread writer([&] {
        // Names made and removed: each changes the workspace's own attributes, which
        // the view reports to the kernel.
        for (int i = 0; !stop; ++i) {
            if (std::FILE* fp = std::fopen(host("out-" + std::to_string(i)).c_str(), "w")) {
                std::fclose(fp);
                ++wrote;
            }
            if (i >= 8) ::unlink(host("out-" + std::to_string(i - 8)).c_str());
        }
    });
    int failed = 0;
    std::string said;
    for (int round = 0; round < 4; ++round) {
        std::vector<std::unique_ptr<ajtest::Child>> runs;
        for (int i = 0; i < 20; ++i) runs.push_back(start("true", {"--view", "fuse"}));
        for (auto& c : runs) {
            auto r = c->wait(60000);
            if (r.status != 0) {
                ++failed;
                said += r.err;
            }
        }
    }
    stop = true;
    writer.join();
    for (const auto& e : ajtest::dir_entries(ws.path())) ::unlink(host(e).c_str());
    EXPECT_GT(wrote.load(), 0) << "control: the host wrote nothing";
    EXPECT_EQ(failed, 0) << said;
}

TEST_F(SharedWorkspace, ControlTheProbeWritesOnTheHost) {
    auto r = ajtest::run({"/bin/sh", "-c", "touch go; " + wait_then_write("s", "go", ".mcp.json")}, {}, nullptr,
                         ws.path());
    EXPECT_EQ(ajtest::trim(r.out), "WROTE");
}

// Through either view: the mounts view makes placeholders the runs share, the default
// view makes none and reports each refusal after its run.
TEST_F(SharedWorkspace, ManyAtOnceAllRunAndLeaveNothing) {
    const auto before = ajtest::dir_entries(ws.path());
    constexpr int n = 24;
    for (const char* view : {"mounts", "fuse"}) {
        std::vector<std::unique_ptr<ajtest::Child>> runs;
        for (int i = 0; i < n; ++i)
            runs.push_back(start("if (: > .mcp.json) 2>/dev/null; then echo WROTE; else echo REFUSED; fi; sleep 0.2",
                                 {"--view", view}));
        int refused = 0;
        for (int i = 0; i < n; ++i) {
            auto r = runs[static_cast<size_t>(i)]->wait(60000);
            EXPECT_EQ(r.status, 0) << view << " run " << i << ": " << r.err;
            const std::string said = messages(r.err);
            if (std::string(view) == "mounts")
                EXPECT_EQ(said, "") << "run " << i;
            else
                EXPECT_TRUE(ajtest::contains(said, "/.mcp.json: create: protected") &&
                            ajtest::lines(said).size() == 2)
                    << "run " << i << ": " << said;
            refused += ajtest::trim(r.out) == "REFUSED" ? 1 : 0;
            EXPECT_FALSE(ajtest::contains(r.out, "WROTE")) << view << " run " << i << " created a protected name";
        }
        EXPECT_EQ(refused, n) << view;
        EXPECT_EQ(ajtest::dir_entries(ws.path()), before) << view << ": placeholders left in the workspace";
        EXPECT_TRUE(journals().empty()) << view << ": journals left";
    }
}

TEST_F(SharedWorkspace, TheFirstToEndLeavesThePlaceholdersToTheOther) {
    const std::string rec = state.path() + "/a.json";
    auto a = start(wait_then_write("started-a", "go-a", ".mcp.json"), {"--result-file", rec});
    ASSERT_TRUE(ajtest::wait_for_file(host("started-a"), 10000));
    // The control: a run in progress has its placeholders on the host.
    ASSERT_TRUE(ajtest::exists(host(".mcp.json"))) << "no placeholder made";
    auto b = start(wait_then_write("started-b", "go-b", ".mcp.json"));
    ASSERT_TRUE(ajtest::wait_for_file(host("started-b"), 10000));
    (void)ajtest::run({"touch", host("go-a")});
    auto ra = a->wait(30000);
    EXPECT_EQ(ra.status, 0) << ra.err;
    EXPECT_EQ(ajtest::trim(ra.out), "REFUSED");
    EXPECT_TRUE(ajtest::exists(host(".mcp.json"))) << "the first run took the placeholder the second binds";
    auto j = json::parse(ajtest::read_file(rec));
    const std::string kept = j["workspace"]["placeholders"]["kept"].dump();
    EXPECT_TRUE(ajtest::contains(kept, "left for another run")) << kept;
    bool handed = false;
    for (const auto& j2 : journals()) handed = handed || j2.rfind("ended-", 0) == 0;
    EXPECT_TRUE(handed) << "the first run's journal was not handed over";
    (void)ajtest::run({"touch", host("go-b")});
    auto rb = b->wait(30000);
    EXPECT_EQ(rb.status, 0) << rb.err;
    EXPECT_EQ(ajtest::trim(rb.out), "REFUSED");
    // Nothing was taken from under the second run: no guard had to act.
    EXPECT_EQ(messages(rb.err), "");
    EXPECT_EQ(ajtest::dir_entries(ws.path()), (std::set<std::string>{"started-a", "started-b", "go-a", "go-b"}));
    EXPECT_TRUE(journals().empty());
}

TEST_F(SharedWorkspace, AKilledRunsPlaceholdersGoWithTheLastRun) {
    auto a = start(wait_then_write("started-a", "never", ".mcp.json"));
    ASSERT_TRUE(ajtest::wait_for_file(host("started-a"), 10000));
    auto b = start(wait_then_write("started-b", "go-b", ".mcp.json"));
    ASSERT_TRUE(ajtest::wait_for_file(host("started-b"), 10000));
    ASSERT_EQ(::kill(a->pid(), SIGKILL), 0);
    EXPECT_EQ(a->wait_exit(5000), 128 + SIGKILL);
    ajtest::sleep_ms(200);  // its sandbox dies with it
    EXPECT_TRUE(ajtest::exists(host(".mcp.json"))) << "the killed run's placeholder went while the other binds it";
    (void)ajtest::run({"touch", host("go-b")});
    auto rb = b->wait(30000);
    EXPECT_EQ(rb.status, 0) << rb.err;
    EXPECT_EQ(ajtest::trim(rb.out), "REFUSED");
    EXPECT_EQ(messages(rb.err), "");
    EXPECT_EQ(ajtest::dir_entries(ws.path()), (std::set<std::string>{"started-a", "started-b", "go-b"}));
    EXPECT_TRUE(journals().empty()) << "the killed run's journal was not swept by the last run";
}

// In process: the launch held at a point while the host acts.
class SharedWorkspaceHeld : public SharedWorkspace {
protected:
    agentjail::Policy policy() {
        ::setenv("XDG_STATE_HOME", state.path().c_str(), 1);
        auto p = agentjail::Policy::load("default");
        EXPECT_TRUE(p) << p.error().message();
        EXPECT_TRUE(p->set_workspace(ws.path()));
        EXPECT_TRUE(p->set_workspace_view("mounts"));
        return std::move(p).value();
    }
};

// A protected name the plan saw is removed before the launch (by the user, or by
// the end of the run whose placeholder it was): the run makes a placeholder for it,
// so the sandbox still cannot create it. Before, the launch failed (bind source gone).
TEST_F(SharedWorkspaceHeld, AProtectedNameGoneBeforeTheLaunchGetsAPlaceholder) {
    ws.write(".mcp.json", "{}\n");
    agentjail::Policy p = policy();
    ajtest::Pipe report, release;
    fault::arm("launch.before-shared", fault::Action::hold, report.w, release.r);
    std::optional<agentjail::Result<agentjail::Sandbox>> spawned;
    std::thread t([&] {
        spawned.emplace(agentjail::Sandbox::spawn(
            p, {"/bin/sh", "-c", "if (: > .mcp.json) 2>/dev/null; then echo WROTE; else echo REFUSED; fi > said"}));
    });
    const std::string line = report.line(10000);
    ::unlink(host(".mcp.json").c_str());
    EXPECT_EQ(::write(release.w, "g", 1), 1);
    t.join();
    fault::disarm();
    ASSERT_TRUE(ajtest::contains(line, "launch.before-shared")) << line;
    ASSERT_TRUE(*spawned) << (*spawned).error().message();
    auto r = (*spawned)->wait();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->exited && r->exit_code == 0);
    EXPECT_EQ(ajtest::trim(ajtest::read_file(host("said"))), "REFUSED");
    EXPECT_FALSE(ajtest::exists(host(".mcp.json"))) << "the placeholder was left";
    bool made = false;
    for (const auto& m : r->workspace.placeholders_made) made = made || m == host(".mcp.json");
    EXPECT_TRUE(made);
}

// Setups take turns: a run held while it holds the workspace's setup lock keeps a
// second run (another process) from making its sandbox until it goes on.
TEST_F(SharedWorkspaceHeld, SetupsTakeTurns) {
    agentjail::Policy p = policy();
    ajtest::Pipe report, release;
    fault::arm("launch.shared-entered", fault::Action::hold, report.w, release.r);
    std::optional<agentjail::Result<agentjail::Sandbox>> spawned;
    std::thread t([&] { spawned.emplace(agentjail::Sandbox::spawn(p, {"/bin/sh", "-c", "touch a-ran"})); });
    const std::string line = report.line(10000);
    auto b = start("touch b-ran");
    // The control for the wait: b is running (its launcher) but its command is not.
    ajtest::sleep_ms(700);
    EXPECT_TRUE(b->running());
    EXPECT_FALSE(ajtest::exists(host("b-ran"))) << "the second run set up while the first held the lock";
    EXPECT_EQ(::write(release.w, "g", 1), 1);
    t.join();
    fault::disarm();
    ASSERT_TRUE(ajtest::contains(line, "launch.shared-entered")) << line;
    ASSERT_TRUE(*spawned) << (*spawned).error().message();
    auto r = (*spawned)->wait();
    ASSERT_TRUE(r) << r.error().message();
    auto rb = b->wait(30000);
    EXPECT_EQ(rb.status, 0) << rb.err;
    EXPECT_TRUE(ajtest::exists(host("a-ran")));
    EXPECT_TRUE(ajtest::exists(host("b-ran")));
    EXPECT_EQ(ajtest::dir_entries(ws.path()), (std::set<std::string>{"a-ran", "b-ran"}));
}

// A placeholder the guard makes again during the run (the host removed it) is
// written down at once: a launcher killed afterwards leaves nothing that `gc`
// cannot take. Before, only the first one's inode was listed, and the new one
// stayed on the host for good.
TEST_F(SharedWorkspace, APlaceholderMadeAgainDuringTheRunIsJournaled) {
    auto a = start(wait_then_write("started-a", "never", ".mcp.json"));
    ASSERT_TRUE(ajtest::wait_for_file(host("started-a"), 10000));
    struct stat first {};
    ASSERT_EQ(::lstat(host(".mcp.json").c_str(), &first), 0) << "no placeholder made";
    // Moved away, not removed: its inode stays taken, so the guard's new placeholder
    // gets another one, which the run's first journal does not know.
    ASSERT_EQ(::rename(host(".mcp.json").c_str(), host("moved").c_str()), 0);
    // The control: the guard made it again (another inode).
    ASSERT_TRUE(ajtest::wait_for_file(host(".mcp.json"), 10000)) << "the guard did not make it again";
    struct stat again {};
    ASSERT_EQ(::lstat(host(".mcp.json").c_str(), &again), 0);
    EXPECT_NE(again.st_ino, first.st_ino);
    // Killed once the journal lists it (made, then written down: a kill in between,
    // a few microseconds, would leave it, as the launch's own staged names avoid).
    const std::string ino = "\"ino\":" + std::to_string(again.st_ino);
    bool listed = false;
    for (int i = 0; i < 100 && !listed; ++i) {
        for (const auto& j : journals())
            listed = listed || ajtest::contains(ajtest::read_file(state.path() + "/agentjail/leftovers/" + j), ino);
        if (!listed) ajtest::sleep_ms(100);
    }
    EXPECT_TRUE(listed) << "the new placeholder never reached the journal";
    ASSERT_EQ(::kill(a->pid(), SIGKILL), 0);
    EXPECT_EQ(a->wait_exit(5000), 128 + SIGKILL);
    ajtest::sleep_ms(200);  // its sandbox dies with it
    auto gc = ajtest::agentjail_with({"gc"}, opts());
    EXPECT_EQ(gc.status, 0) << gc.err;
    EXPECT_EQ(ajtest::dir_entries(ws.path()), (std::set<std::string>{"started-a", "moved"})) << gc.out << gc.err;
    EXPECT_TRUE(journals().empty());
}

}  // namespace
