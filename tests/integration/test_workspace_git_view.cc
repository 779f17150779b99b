// SPDX-License-Identifier: Apache-2.0
// Direct mode and the project as git shows it (issue 25: "the project as it is"):
// the names a run protects against creation (.envrc, .mcp.json, .gitattributes,
// lefthook.yml, ...) must not show in `git status` inside or on the host, nor go
// into the agent's `git add -A`; after the run the host's `git status` shows what the
// agent wrote and nothing else. The names stay impossible to create inside.
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace {

const char* const kGit =
    "env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.test "
    "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.test git";

// The lines of `git status --porcelain` that are not the test's own sync files.
std::string status_lines(const std::string& porcelain) {
    std::string out;
    for (const auto& l : ajtest::lines(porcelain))
        if (!l.empty() && !ajtest::contains(l, "sync/")) out += l + "\n";
    return out;
}

class WorkspaceGitView : public ::testing::Test {
protected:
    void SetUp() override {
        auto r = ajtest::run({"/bin/sh", "-c",
                              std::string("set -e; ") + kGit + " init -q .; echo a > a.txt; " + kGit + " add a.txt; " +
                                  kGit + " commit -qm one; mkdir sync; echo made"},
                             {}, nullptr, ws.path());
        ASSERT_EQ(ajtest::trim(r.out), "made") << r.err;
    }
    ajtest::RunOutput host_git(const std::string& args) {
        return ajtest::run({"/bin/sh", "-c", std::string(kGit) + " " + args}, {}, nullptr, ws.path());
    }
    ajtest::TempDir ws{"aj-gitview"}, home{"aj-gitviewhome"}, state{"aj-gitviewstate"};
};

// The agent's side: what git shows inside before and after it wrote a file, which
// protected names it could create, what `git add -A` took; then it waits for the
// host's look during the run.
const char* const kAgent =
    "echo BEFORE; git status --porcelain --untracked-files=all; "
    "echo x > new.txt; "
    "for n in .envrc .mcp.json .gitattributes .gitmodules lefthook.yml mise.toml .claude/settings.json; do "
    "  if (: > $n) 2>/dev/null; then echo WROTE $n; fi; done; "
    "echo AFTER; git status --porcelain --untracked-files=all; "
    "git add -A; echo STAGED; git diff --cached --name-only; "
    "touch sync/started; while [ ! -e sync/go ]; do sleep 0.05; done; echo END";

// Through both views: the mounts view takes the names on the host for the run (its
// placeholders, which git does not show); the default view makes nothing on the host.
TEST_F(WorkspaceGitView, NoPlaceholderIsInGitStatusOrTheAgentsCommitInsideOrOnTheHost) {
    for (const char* view : {"mounts", "fuse"}) {
        SCOPED_TRACE(std::string("--view ") + view);
        ajtest::RunOptions o;
        o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + state.path()};
        o.cwd = ws.path();
        ajtest::Child run({ajtest::agentjail_bin(), "-C", ws.path(), "--view", view, "--", "/bin/sh", "-c", kAgent}, o);
        ASSERT_TRUE(ajtest::wait_for_file(ws.path() + "/sync/started", 20000)) << "the run did not get going";

        // During the run, on the host: the agent's file, staged, and nothing else.
        EXPECT_EQ(status_lines(host_git("status --porcelain --untracked-files=all").out), "A  new.txt\n");
        EXPECT_EQ(ajtest::exists(ws.path() + "/.mcp.json"), std::string(view) == "mounts");
        ASSERT_TRUE(ajtest::run({"touch", ws.path() + "/sync/go"}).status == 0);
        auto r = run.wait(30000);
        ASSERT_EQ(r.status, 0) << r.err;

        const std::string out = r.out;
        // Inside: nothing before the agent wrote; its file after (the control: the probe
        // sees an untracked file when there is one); no protected name could be made.
        auto between = [&](const std::string& a, const std::string& b) {
            auto i = out.find(a + "\n"), j = out.find(b + "\n");
            return i == std::string::npos || j == std::string::npos ? std::string("?") : status_lines(out.substr(i + a.size() + 1, j - i - a.size() - 1));
        };
        EXPECT_EQ(between("BEFORE", "AFTER"), "") << out;
        EXPECT_EQ(between("AFTER", "STAGED"), "?? new.txt\n") << out;
        EXPECT_EQ(between("STAGED", "END"), "new.txt\n") << out;
        EXPECT_FALSE(ajtest::contains(out, "WROTE")) << out;

        // After the run: the agent's file and nothing else, on disk and in git.
        EXPECT_EQ(status_lines(host_git("status --porcelain --untracked-files=all").out), "A  new.txt\n");
        EXPECT_EQ(ajtest::dir_entries(ws.path()), (std::set<std::string>{".git", "a.txt", "new.txt", "sync"}));
        // The next view starts from the same project.
        ASSERT_EQ(host_git("rm -q --cached new.txt").status, 0);
        ::unlink((ws.path() + "/new.txt").c_str());
        ::unlink((ws.path() + "/sync/started").c_str());
        ::unlink((ws.path() + "/sync/go").c_str());
    }
}

}  // namespace
