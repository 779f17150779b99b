// SPDX-License-Identifier: Apache-2.0
// The git config reading of direct mode's post-run audit: which keys make git run a
// program, in every spelling git accepts (git itself reads the text: these run git).
#include "workspace/audit.hpp"

#include <gtest/gtest.h>

using agentjail::workspace::executable_config;

TEST(WorkspaceAudit, ExecutableConfigKeysAreFoundInEverySpelling) {
    auto keys = *executable_config(
        "[core]\n\trepositoryformatversion = 0\n\tFsMonitor = \"touch /tmp/x; false\"\n"
        "[filter \"lfs\"]\n  clean = git-lfs clean -- %f\n"
        "[diff.pdf]\n textconv = pdftotext\n"
        "[alias]\n st = status\n sh = !sh -c id\n"
        "[include]\n path = ../evil\n"
        "[core] hooksPath = .githooks\n"
        "[credential \"https://x\"]\n helper = store\n");
    std::vector<std::string> want = {
        "core.fsmonitor runs a command on git status",
        "filter.<lfs>.clean runs a command",
        "diff.<pdf>.textconv runs a command",
        "alias.sh runs a shell command",
        "include.path includes another config file",
        "core.hookspath moves the hooks",
        "credential.<https://x>.helper runs a command",
    };
    EXPECT_EQ(keys, want);
}

TEST(WorkspaceAudit, HarmlessConfigIsNotFlagged) {
    EXPECT_TRUE(executable_config("[core]\n\tbare = false\n\tfsmonitor = true\n\tfilemode\n"
                                  "[remote \"origin\"]\n\turl = https://example.test/r.git\n"
                                  "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
                                  "[branch \"main\"]\n\tremote = origin\n[alias]\n\tco = checkout\n"
                                  "# [core] fsmonitor = x\n; editor = vi\n")
                    ->empty());
}

TEST(WorkspaceAudit, ContinuationLinesAndQuotedCommentsAreReadAsGitDoes) {
    // The value goes on after a backslash-newline; a ';' inside quotes is no comment.
    auto keys = *executable_config("[core]\n\tfsmonitor = \"a;b\" \\\n  c\n[core]\n\tpager\n");
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_EQ(keys[0], "core.fsmonitor runs a command on git status");
    EXPECT_EQ(keys[1], "core.pager runs a command");
    // `fsmonitor = false` (a boolean) is the built-in setting, not a command.
    EXPECT_TRUE(executable_config("[core]\nfsmonitor = off\n")->empty());
}

// Spellings a parser of agentjail's own read otherwise than git (issue 25's review):
// each is read as git reads it, because git reads it.
TEST(WorkspaceAudit, SpellingsOnlyGitReadsRightAreReadByGit) {
    const std::vector<std::string> fsmonitor = {"core.fsmonitor runs a command on git status"};
    // A UTF-8 byte-order mark before the first section.
    EXPECT_EQ(*executable_config("\xef\xbb\xbf[core]\n\tfsmonitor = touch x\n"), fsmonitor);
    // A backslash at the end of a comment line continues nothing.
    EXPECT_EQ(*executable_config("# note \\\n[core]\n\tfsmonitor = touch x\n"), fsmonitor);
    EXPECT_EQ(*executable_config("; note \\\n[core]\nfsmonitor = touch x\n"), fsmonitor);
    // CRLF line ends, a section and key in other cases, a header sharing its line.
    EXPECT_EQ(*executable_config("[CoRe]\r\n\tFSMONITOR = touch x\r\n"), fsmonitor);
    EXPECT_EQ(*executable_config("[core] fsmonitor = touch x\n"), fsmonitor);
    // An include in any of its forms is a finding: what it includes is not read.
    EXPECT_EQ(*executable_config("[includeIf \"gitdir:/\"]\n\tpath = x\n"),
              std::vector<std::string>{"includeif.<gitdir:/>.path includes another config file"});
}

TEST(WorkspaceAudit, TextGitRefusesIsAnErrorNotAnEmptyList) {
    auto r = executable_config("[core\n\tfsmonitor = touch x\n");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("bad config line 1"), std::string::npos) << r.error().message();
}

// One list of the keys that run programs, for the audit and for clone mode's report
// alike (clone mode reads `git config --list`'s dotted names), including the ones
// the clone's list had that the audit's lacked.
TEST(WorkspaceAudit, OneListForConfigFilesAndDottedNames) {
    using agentjail::workspace::executable_config_entry;
    EXPECT_EQ(executable_config_entry("core.fsmonitor", "touch /tmp/x"), "core.fsmonitor runs a command on git status");
    EXPECT_EQ(executable_config_entry("filter.lfs.clean", "x"), "filter.<lfs>.clean runs a command");
    EXPECT_EQ(executable_config_entry("credential.https://a.b/c.helper", "store"),
              "credential.<https://a.b/c>.helper runs a command");
    EXPECT_FALSE(executable_config_entry("hook.pre-commit.command", "sh x").empty());
    EXPECT_FALSE(executable_config_entry("remote.origin.vcs", "evil").empty());
    EXPECT_FALSE(executable_config_entry("gpg.ssh.defaultkeycommand", "x").empty());
    EXPECT_FALSE(executable_config_entry("init.templatedir", "/t").empty());
    EXPECT_FALSE(executable_config_entry("sendemail.smtpserver", "/usr/bin/x").empty());
    // Controls: harmless keys and values stay unflagged.
    EXPECT_EQ(executable_config_entry("sendemail.smtpserver", "smtp.example.test"), "");
    EXPECT_EQ(executable_config_entry("remote.origin.url", "https://x/r.git"), "");
    EXPECT_EQ(executable_config_entry("core.fsmonitor", "false"), "");
    EXPECT_EQ(executable_config_entry("user", ""), "");
}
