// SPDX-License-Identifier: Apache-2.0
// Clone mode's escape tests (THREATS AGT-01, FS-04): what the sandbox does to its
// clone must not reach the user's repository or make git on the host follow,
// block or execute anything. One attack per test, each with a positive control
// showing the attack was made and would have worked.
#include "common.hpp"
#include "git_support.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

namespace {

using ajesc::describe;

class WsClone : public ajesc::Escape {
protected:
    void SetUp() override { ASSERT_EQ(ajtest::make_user_repo(jail.ws()), ""); }
    ajtest::RunOutput clone_sh(const std::string& script, std::vector<std::string> flags = {}) {
        ajtest::RunOptions o;
        o.env = {"XDG_STATE_HOME=" + state.path()};
        o.timeout_ms = 60000;
        flags.insert(flags.begin(), {"--workspace-mode", "clone"});
        return jail.sh(script, flags, o);
    }
    // The only run's clone directory.
    std::string the_clone() const {
        auto ids = ajtest::run({"ls", state.path() + "/agentjail/runs"});
        auto l = ajtest::lines(ids.out);
        return l.size() == 1 ? state.path() + "/agentjail/runs/" + l[0] + "/clone" : "";
    }
    ajtest::TempDir state{"aj-state"};
};

// The user's repository is not what the sandbox sees: its config is not readable
// there. Control: the same read in direct mode shows the user's key.
TEST_F(WsClone, TheUsersRepositoryIsNotVisibleInside) {
    auto r = clone_sh("cat .git/config; echo; ls .git/hooks 2>&1; true");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out.find("user-config-marker"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("pre-push"), std::string::npos) << r.out;
    auto control = jail.sh("cat .git/config", {}, {});
    EXPECT_NE(control.out.find("user-config-marker"), std::string::npos) << describe(control);
}

// .git replaced by a link to the user's own .git (the same path, from the host's
// side): git on the host would then commit into the user's index and repository.
TEST_F(WsClone, GitDirReplacedByALinkToTheUsersRepositoryIsRefused) {
    std::string before = ajtest::repo_fingerprint(jail.ws());
    auto r = clone_sh("mv .git .git-moved && ln -s \"$PWD/.git\" .git && echo x > planted.txt");
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_NE(r.err.find("did not come back (refused)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no longer a directory"), std::string::npos) << r.err;
    EXPECT_TRUE(ajtest::agentjail_branches(jail.ws()).empty());
    EXPECT_EQ(ajtest::repo_fingerprint(jail.ws()), before);
    // Control: the link is there, and git following it lands in the user's repository.
    std::string clone = the_clone();
    ASSERT_FALSE(clone.empty());
    EXPECT_EQ(ajesc::host_link(clone + "/.git"), jail.ws() + "/.git");
    auto followed = ajtest::host_git(clone, "config aj.owner");
    EXPECT_EQ(ajtest::trim(followed.out), "user-config-marker") << describe(followed);
}

// A FIFO where git reads (.git/HEAD): git on the host would block on it forever.
TEST_F(WsClone, AFifoInTheGitDirIsRefusedWithoutBlocking) {
    auto r = clone_sh("rm .git/HEAD && mkfifo .git/HEAD");
    EXPECT_FALSE(r.timed_out) << "agentjail blocked on the FIFO";
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_NE(r.err.find("special file"), std::string::npos) << r.err;
    EXPECT_TRUE(ajtest::agentjail_branches(jail.ws()).empty());
    // Control: the FIFO was made and is still there.
    struct stat st {};
    ASSERT_EQ(::lstat((the_clone() + "/.git/HEAD").c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

// A link to a secret outside the repository: the branch stores the link's text,
// never the file it names. Control: following it on the host reads the secret.
TEST_F(WsClone, ALinkToTheSshKeyIsStoredAsALinkNotFollowed) {
    const std::string key = jail.home() + "/.ssh/id_ed25519";
    auto r = clone_sh("ln -s '" + key + "' key && mkdir d && ln -s '" + jail.home() + "/.ssh' d/ssh");
    ASSERT_EQ(r.status, 0) << describe(r);
    auto b = ajtest::agentjail_branches(jail.ws());
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(ajtest::host_git(jail.ws(), "ls-tree " + b[0] + " key").out.substr(0, 6), "120000");
    EXPECT_EQ(ajtest::host_git(jail.ws(), "show " + b[0] + ":key").out, key);
    EXPECT_EQ(ajtest::host_git(jail.ws(), "ls-tree -r " + b[0] + " d").out.find("id_ed25519"), std::string::npos);
    auto all = ajtest::host_git(jail.ws(), "cat-file --batch-all-objects --batch");
    EXPECT_EQ(all.out.find(jail.secret("home/.ssh/id_ed25519")), std::string::npos) << "the key went into git";
    EXPECT_NE(r.err.find("[symlink] key"), std::string::npos) << r.err;
    auto control = jail.host_sh("cat '" + the_clone() + "/key'");
    EXPECT_NE(control.out.find(jail.secret("home/.ssh/id_ed25519")), std::string::npos) << describe(control);
}

// A nested repository's .git with a hook: it is not carried back, so no checkout
// of the branch can bring the hook to the host. Control: the sandbox made it (the
// report names it) and its hook file was there in the clone's work tree.
TEST_F(WsClone, ANestedRepositorysHookIsNotCarriedBack) {
    auto r = clone_sh("mkdir sub && cd sub && git init -q . && printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit"
                      " && chmod +x .git/hooks/pre-commit && echo content > file.txt && test -x .git/hooks/pre-commit"
                      " && echo planted=yes");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajesc::field(r.out, "planted"), "yes");
    auto b = ajtest::agentjail_branches(jail.ws());
    ASSERT_EQ(b.size(), 1u);
    auto tree = ajtest::host_git(jail.ws(), "ls-tree -r --name-only " + b[0]);
    EXPECT_NE(tree.out.find("sub/file.txt"), std::string::npos) << tree.out;
    EXPECT_EQ(tree.out.find("sub/.git"), std::string::npos) << tree.out;
    EXPECT_EQ(tree.out.find("pre-commit"), std::string::npos) << tree.out;
    EXPECT_NE(r.err.find("[git] sub/.git"), std::string::npos) << r.err;
    EXPECT_FALSE(ajtest::exists(the_clone() + "/sub/.git"));
}

}  // namespace
