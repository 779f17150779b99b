// SPDX-License-Identifier: Apache-2.0
// Escape tests of direct mode's post-run audit (issue 10; WS-PLANT-*): what a run
// leaves in the workspace for git to execute on the host later, in places the
// plan could not protect before the run because they did not exist: a repository
// the agent creates, with a gitlink in the project's writable index, its config and
// its hooks, and an interactive rebase left stopped with exec lines. Each attack is
// also run on the host without agentjail as its positive control: there the
// user's next git command runs the planted program.
#include "common.hpp"

#include <sys/stat.h>

#include <string>

using namespace ajesc;

namespace {

// git with a fixed identity and no global or system config, on the host.
std::string host_git() {
    return "env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t "
           "GIT_AUTHOR_EMAIL=t@example.test GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.test git";
}

// A repository with one commit at dir, made on the host.
bool make_repo(ajtest::Jail& jail, const std::string& dir) {
    auto r = jail.host_sh("set -e; cd '" + dir + "'; " + host_git() + " init -q .; echo a > a.txt; " +
                          host_git() + " add a.txt; " + host_git() + " commit -qm one; " + host_git() +
                          " commit -q --allow-empty -m two; echo made");
    return ajtest::trim(r.out) == "made";
}

// The agent's side: a new repository `sub` whose config runs `touch MARKER` from
// core.fsmonitor, added to the project's index as a gitlink, so that the
// project's `git status` runs `git status` in sub.
std::string plant_nested_fsmonitor(const std::string& marker) {
    return "set -e; G='env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t "
           "GIT_AUTHOR_EMAIL=t@example.test GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.test git'; "
           "mkdir sub; cd sub; $G init -q .; $G commit -q --allow-empty -m s; "
           "$G config core.fsmonitor 'touch " + marker + "; false'; sha=$($G rev-parse HEAD); cd ..; "
           "$G update-index --add --cacheinfo 160000,$sha,sub; echo planted";
}

bool is_file(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;
}

}  // namespace

// WS-PLANT-01: a nested repository with core.fsmonitor and a gitlink in the index.
// After the run, the user's `git status` in the project must not run it.
TEST_F(Escape, WS_PLANT01_NestedRepositoryConfigDoesNotRunOnTheHostsGitStatus) {
    ajtest::TempDir out("aj-plant01");
    ASSERT_TRUE(make_repo(jail, jail.ws()));
    const std::string marker = out.path() + "/ran";

    // Control: the same planting on the host, then git status, runs the command.
    ajtest::TempDir ctl("aj-plant01-ctl");
    ASSERT_TRUE(make_repo(jail, ctl.path()));
    const std::string ctl_marker = out.path() + "/ran-control";
    auto c = jail.host_sh("cd '" + ctl.path() + "' && " + plant_nested_fsmonitor(ctl_marker));
    ASSERT_EQ(ajtest::trim(c.out), "planted") << describe(c);
    jail.host_sh("cd '" + ctl.path() + "' && " + host_git() + " status >/dev/null 2>&1");
    ASSERT_TRUE(is_file(ctl_marker)) << "the control's git status did not run core.fsmonitor";

    auto r = jail.sh(plant_nested_fsmonitor(marker));
    ASSERT_EQ(ajtest::trim(r.out), "planted") << describe(r);
    EXPECT_NE(r.err.find("agentjail: workspace: sub/.git/config: git config written during the run "
                         "sets core.fsmonitor"),
              std::string::npos)
        << describe(r);
    jail.host_sh("cd '" + jail.ws() + "' && " + host_git() + " status >/dev/null 2>&1");
    EXPECT_FALSE(is_file(marker)) << "the host's git status ran the sandbox's core.fsmonitor";
    EXPECT_TRUE(is_file(jail.ws() + "/sub/.git/config.agentjail-quarantined"));
}

// WS-PLANT-02: hooks written into a repository the agent created run when the user
// commits there; after the run they are renamed aside, mode 000.
TEST_F(Escape, WS_PLANT02_HooksOfANewRepositoryAreMadeInert) {
    ajtest::TempDir out("aj-plant02");
    const std::string marker = out.path() + "/ran";
    const std::string plant =
        "set -e; mkdir -p lib; cd lib; git init -q .; "
        "printf '#!/bin/sh\\ntouch " + marker + "\\n' > .git/hooks/pre-commit; "
        "chmod +x .git/hooks/pre-commit; echo planted";
    auto r = jail.sh(plant);
    ASSERT_EQ(ajtest::trim(r.out), "planted") << describe(r);
    EXPECT_NE(r.err.find("lib/.git/hooks/pre-commit: git hook written during the run"), std::string::npos)
        << describe(r);
    jail.host_sh("cd '" + jail.ws() + "/lib' && " + host_git() + " commit -q --allow-empty -m x");
    EXPECT_FALSE(is_file(marker)) << "the host's git commit ran the sandbox's pre-commit hook";
    struct stat st {};
    ASSERT_EQ(::lstat((jail.ws() + "/lib/.git/hooks/pre-commit.agentjail-quarantined").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0u);

    // Control: the hook, planted the same way on the host, runs on commit.
    ajtest::TempDir ctl("aj-plant02-ctl");
    const std::string ctl_marker = out.path() + "/ran-control";
    auto c = jail.host_sh("cd '" + ctl.path() + "' && " +
                          std::string(plant).replace(plant.find(marker), marker.size(), ctl_marker));
    ASSERT_EQ(ajtest::trim(c.out), "planted") << describe(c);
    jail.host_sh("cd '" + ctl.path() + "/lib' && " + host_git() + " commit -q --allow-empty -m x");
    EXPECT_TRUE(is_file(ctl_marker)) << "the control's hook did not run";
}

// WS-PLANT-03: an interactive rebase stopped at `break`, its remaining todo holding
// an exec line: the user's `git rebase --continue` would run it.
TEST_F(Escape, WS_PLANT03_AnUnfinishedRebaseCannotRunItsExecLinesOnTheHost) {
    ajtest::TempDir out("aj-plant03");
    ASSERT_TRUE(make_repo(jail, jail.ws()));
    const std::string marker = out.path() + "/ran";
    auto stop_rebase = [](const std::string& m) {
        return "env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_COMMITTER_NAME=t "
               "GIT_COMMITTER_EMAIL=t@example.test GIT_SEQUENCE_EDITOR=\"sed -i '1i break'\" "
               "git rebase -q -i --exec 'touch " + m + "' HEAD~1 >/dev/null 2>&1; "
               "test -d .git/rebase-merge && echo stopped";
    };
    auto r = jail.sh(stop_rebase(marker));
    ASSERT_EQ(ajtest::trim(r.out), "stopped") << describe(r);
    EXPECT_NE(r.err.find(".git/rebase-merge/git-rebase-todo: an unfinished rebase"), std::string::npos)
        << describe(r);
    jail.host_sh("cd '" + jail.ws() + "' && " + host_git() + " rebase --continue >/dev/null 2>&1");
    EXPECT_FALSE(is_file(marker)) << "the host's git rebase --continue ran the sandbox's exec line";

    // Control: the same stopped rebase on the host runs the exec line on --continue.
    ajtest::TempDir ctl("aj-plant03-ctl");
    ASSERT_TRUE(make_repo(jail, ctl.path()));
    const std::string ctl_marker = out.path() + "/ran-control";
    auto c = jail.host_sh("cd '" + ctl.path() + "' && " + stop_rebase(ctl_marker));
    ASSERT_EQ(ajtest::trim(c.out), "stopped") << describe(c);
    jail.host_sh("cd '" + ctl.path() + "' && " + host_git() + " rebase --continue >/dev/null 2>&1");
    EXPECT_TRUE(is_file(ctl_marker)) << "the control's rebase did not run its exec line";
}

// WS-PLANT-04: agent settings made in a sub-folder (Claude Code reads a project's
// .claude/settings.json where it is started) are reported; a file the run did not
// touch is not.
TEST_F(Escape, WS_PLANT04_AgentSettingsInASubfolderAreReported) {
    jail.plant("old/.claude/settings.json", "{}\n");
    ajtest::sleep_ms(200);  // well before the run's start, whatever the clock's tick
    auto r = jail.sh("mkdir -p pkg/.claude && echo '{\"hooks\":{}}' > pkg/.claude/settings.json && echo made");
    ASSERT_EQ(ajtest::trim(r.out), "made") << describe(r);
    EXPECT_NE(r.err.find("pkg/.claude/settings.json: agent or editor settings written during the run"),
              std::string::npos)
        << describe(r);
    EXPECT_EQ(r.err.find("old/.claude/settings.json"), std::string::npos) << describe(r);
}

// WS-PLANT-05: the check after the run reads the policy's protect list, not a list of
// its own: every agent's and editor's settings the list names (Cursor, Continue, Zed,
// opencode, Claude Code's skills and commands), made in a sub-folder, are reported;
// a file beside them that no entry names is not (the control).
TEST_F(Escape, WS_PLANT05_EveryProtectedNameMadeInASubfolderIsReported) {
    const std::vector<std::string> named = {"pkg/.cursor/mcp.json",        "pkg/.continue/config.yaml",
                                            "pkg/.zed/tasks.json",         "pkg/opencode.json",
                                            "pkg/.opencode/plugin.js",     "pkg/.claude/skills/s/run.sh",
                                            "pkg/.claude/commands/go.md",  "pkg/.roo/mcp.json"};
    std::string script = "set -e; ";
    for (const auto& n : named)
        script += "mkdir -p \"$(dirname " + n + ")\" && echo x > " + n + "; ";
    script += "echo x > pkg/notes.md; echo x > pkg/cursor.json; echo made";
    auto r = jail.sh(script);
    ASSERT_EQ(ajtest::trim(r.out), "made") << describe(r);
    for (const auto& n : named)
        EXPECT_NE(r.err.find(n + ": agent or editor settings written during the run"), std::string::npos)
            << n << "\n" << describe(r);
    EXPECT_EQ(r.err.find("pkg/notes.md"), std::string::npos) << describe(r);
    EXPECT_EQ(r.err.find("pkg/cursor.json"), std::string::npos) << describe(r);
}
