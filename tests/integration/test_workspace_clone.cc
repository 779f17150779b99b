// SPDX-License-Identifier: Apache-2.0
// Clone mode end to end, with real git on both sides: a run that commits, leaves
// uncommitted and untracked work and plants a hook, core.fsmonitor, a
// .gitattributes filter and a link to ~/.ssh ends with the branch agentjail/<id>
// holding all the work, nothing of the plants anywhere on the host, the report
// flagging each, and the user's repository byte-for-byte as it was. Also: the
// refusal outside a repository, runs/discard, and the C++ API making the clone.
#include "common.hpp"
#include "git_support.hpp"
#include "overlay_support.hpp"
#include "record.hpp"

#include "api/api.hpp"
#include "workspace/runs.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <cstring>

#include <string>

using ajit::describe;

namespace {

class CloneMode : public ajit::Sandbox {
protected:
    void SetUp() override {
        ASSERT_EQ(ajtest::make_user_repo(jail.ws()), "");
        env = {"XDG_STATE_HOME=" + state.path()};
    }
    ajtest::RunOptions opts() const {
        ajtest::RunOptions o;
        o.env = env;
        o.timeout_ms = 120000;
        return o;
    }
    // Files the plants would create if anything ran on the host.
    std::string marker(const std::string& name) const { return markers.path() + "/" + name; }
    ajtest::TempDir state{"aj-state"};
    ajtest::TempDir markers{"aj-markers"};
    std::vector<std::string> env;
};

// The clone's work tree is the user's as it is, though only what differs from HEAD
// is copied (the rest is checked out by git): a tracked file changed, one deleted
// (and the folder that leaves empty), a folder replaced by a file, an untracked
// file, one whose checkout git would make otherwise (a filter attribute: an LFS
// file; eol=crlf), an executable bit, a link. Ignored and hidden files stay out
// (a hidden tracked file shows as deleted inside, as always), what the user staged.
// Inside, git status names the paths the user's names (the clone's index is HEAD's:
// a staged change shows as unstaged there); the control is the host's own.
TEST_F(CloneMode, TheWorkTreeIsTheUsersAsItIsNotHeads) {
    const std::string setup =
        "set -e; cd \"$0\"; mkdir -p gone sub folder lfs;"
        "echo keep > sub/keep.txt; echo x > gone/only.txt; echo f > folder/inner.txt; echo big > lfs/blob.bin;"
        "printf 'a\\nb\\n' > crlf.txt; echo run > tool.sh; ln -s sub/keep.txt link;"
        "printf 'lfs/* filter=lfs\\ncrlf.txt eol=crlf\\n.ignored\\n' > .gitattributes;"
        "echo '*.ignored' > .gitignore; echo SECRET=1 > .env.tracked; git add -A; git add -f .env.tracked;"
        "git -c user.name=U -c user.email=u@x commit -qm files; rm crlf.txt; git checkout -- crlf.txt;"
        // An LFS-like smudge filter of the user's: the file as checked out is not the
        // blob, and the user's index holds it clean (the same size: only the
        // attribute tells).
        "git config filter.lfs.smudge 'tr a-z A-Z'; git config filter.lfs.clean 'tr A-Z a-z';"
        "rm lfs/blob.bin; git checkout -- lfs/blob.bin;"
        // The user's uncommitted state.
        "echo changed >> sub/keep.txt; rm -r gone; rm -r folder; echo now-a-file > folder;"
        "chmod +x tool.sh; echo x > gone2.txt; git add gone2.txt; git -c user.name=U -c user.email=u@x commit -qm more;"
        // Staged and not changed since: a new file, and a change of the same size.
        "echo y > gone2.txt; echo staged-new > staged.txt; git add gone2.txt staged.txt;"
        "echo mine > untracked.txt; echo skip > build.ignored";
    auto m = ajtest::run({"/bin/sh", "-c", setup, jail.ws()}, {"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"});
    ASSERT_EQ(m.status, 0) << m.err;
    const std::string look =
        "git status --porcelain | cut -c4- | grep -v '[.]env\\|lfs/' | sort; echo ---; cat sub/keep.txt lfs/blob.bin folder untracked.txt;"
        "cat staged.txt; echo gone2=$(cat gone2.txt);"
        "od -c crlf.txt | head -1; test -x tool.sh && echo exec; readlink link; ls -d gone 2>&1 | head -1;"
        "ls build.ignored .env.tracked 2>&1 | sort";
    auto host = ajtest::run({"/bin/sh", "-c", "cd \"$0\" && " + look, jail.ws()},
                            {"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"});
    auto r = jail.sh(look, {"--workspace-mode", "clone"}, opts());
    ASSERT_EQ(r.status, 0) << describe(r);
    const std::string in = r.out.substr(0, r.out.find("---"));
    EXPECT_EQ(in, host.out.substr(0, host.out.find("---"))) << describe(r) << "\nhost:\n" << host.out;
    for (const char* want : {"keep\nchanged\n", "BIG\n", "now-a-file\n", "mine\n", "staged-new\n", "gone2=y\n",
                             "\\r  \\n", "exec\n", "sub/keep.txt\n", "No such file"})
        EXPECT_TRUE(ajtest::contains(r.out, want)) << want << "\n" << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "'build.ignored': No such file")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "'.env.tracked': No such file")) << describe(r);
    EXPECT_TRUE(ajtest::contains(host.out, "build.ignored\n")) << host.out;  // the control
}

TEST_F(CloneMode, WorkComesBackAsABranchAndNothingPlantedRunsOnTheHost) {
    std::string before = ajtest::repo_fingerprint(jail.ws());
    ASSERT_FALSE(before.empty());
    const std::string hook = "printf '#!/bin/sh\\ntouch " + marker("hook") + "\\n'";
    std::string script =
        "set -e; id=\"-c user.name=Agent -c user.email=agent@example.invalid\";"
        // The user's repository is not what the sandbox sees: no key of theirs, no hook.
        "echo \"owner=$(git config aj.owner || echo none)\"; echo \"hooks=$(ls .git/hooks 2>/dev/null | wc -l)\";"
        "echo \"branches=$(git branch --format='%(refname:short)' | tr '\\n' ' ')\"; echo \"tags=$(git tag)\";"
        "echo \"dirty=$(grep -c user-dirty tracked.txt)\"; echo \"untracked=$(cat user-untracked.txt)\";"
        "echo \"env=$(test -r .env && echo readable || echo hidden)\";"
        "echo agent-committed > agent1.txt; git add agent1.txt; git $id commit -qm 'agent: one';"
        "echo agent-uncommitted >> tracked.txt; echo agent-untracked > agent2.txt;"
        "mkdir -p .git/hooks; " + hook + " > .git/hooks/post-checkout; " + hook + " > .git/hooks/pre-commit;"
        "chmod +x .git/hooks/*;"
        "git config core.fsmonitor 'touch " + marker("fsmonitor") + "';"
        "git config filter.pwn.clean 'touch " + marker("filter") + "'; echo '* filter=pwn' > .gitattributes;"
        "ln -s \"$HOME/.ssh\" sshkeys";
    auto r = jail.sh(script, {"--workspace-mode", "clone", "--json"}, opts());
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajit::field(r.out, "owner"), "none") << r.out;
    EXPECT_EQ(ajit::field(r.out, "hooks"), "0");
    EXPECT_EQ(ajit::field(r.out, "branches"), "main side ");
    EXPECT_EQ(ajit::field(r.out, "tags"), "v1");
    EXPECT_EQ(ajit::field(r.out, "dirty"), "1");
    EXPECT_EQ(ajit::field(r.out, "untracked"), "user-untracked");
    EXPECT_EQ(ajit::field(r.out, "env"), "hidden");

    // The branch holds the commit, the uncommitted and the untracked work.
    auto branches = ajtest::agentjail_branches(jail.ws());
    ASSERT_EQ(branches.size(), 1u) << describe(r);
    const std::string b = branches[0];
    const std::string id = b.substr(strlen("agentjail/"));
    auto log = ajtest::host_git(jail.ws(), "log --format=%an:%s main.." + b);
    EXPECT_NE(log.out.find("Agent:agent: one"), std::string::npos) << log.out;
    EXPECT_NE(log.out.find("agentjail:agentjail: uncommitted work of run " + id), std::string::npos) << log.out;
    EXPECT_EQ(ajtest::host_git(jail.ws(), "show " + b + ":agent1.txt").out, "agent-committed\n");
    EXPECT_EQ(ajtest::host_git(jail.ws(), "show " + b + ":agent2.txt").out, "agent-untracked\n");
    EXPECT_EQ(ajtest::host_git(jail.ws(), "show " + b + ":tracked.txt").out,
              "one\ntwo\nuser-dirty\nagent-uncommitted\n");
    EXPECT_EQ(ajtest::host_git(jail.ws(), "show " + b + ":user-untracked.txt").out, "user-untracked\n");
    // The link is a link in the branch, its text only: ~/.ssh was never read.
    auto tree = ajtest::host_git(jail.ws(), "ls-tree " + b + " sshkeys");
    EXPECT_EQ(tree.out.substr(0, 6), "120000") << tree.out;
    EXPECT_EQ(ajtest::host_git(jail.ws(), "show " + b + ":sshkeys").out, jail.home() + "/.ssh");
    // Hidden files neither went in nor came back.
    EXPECT_NE(ajtest::host_git(jail.ws(), "cat-file -e " + b + ":.env").status, 0);
    EXPECT_NE(ajtest::host_git(jail.ws(), "cat-file -e " + b + ":.env.local").status, 0);

    // The user's repository: the same bytes; nothing checked out or merged.
    EXPECT_EQ(ajtest::repo_fingerprint(jail.ws()), before);
    EXPECT_EQ(ajtest::trim(ajtest::host_git(jail.ws(), "symbolic-ref HEAD").out), "refs/heads/main");
    // Host git in the user's repository and in the kept clone runs nothing planted.
    std::string clone = state.path() + "/agentjail/runs/" + id + "/clone";
    ajtest::host_git(jail.ws(), "status");
    ajtest::host_git(clone, "status");
    ajtest::host_git(clone, "checkout -q -f " + b + " -- .");
    for (const char* m : {"hook", "fsmonitor", "filter"}) EXPECT_FALSE(ajtest::exists(marker(m))) << m;
    // The planted names, anywhere under the state (the clone) and the user's repository.
    auto hooks = ajtest::run({"find", state.path(), jail.ws(), "(", "-name", "post-checkout", "-o", "-name",
                              "pre-commit", ")"});
    EXPECT_EQ(hooks.out, "") << "a hook on the host";
    EXPECT_EQ(ajtest::read_file(clone + "/.git/config").find("fsmonitor"), std::string::npos);
    // No canary of the hidden .env in the clone.
    auto grep = ajtest::run({"grep", "-rl", jail.secret("ws/.env"), state.path()});
    EXPECT_EQ(grep.out, "");

    // The report: on stderr, in the record and in run.json, each plant flagged.
    for (const char* f : {"[git] .git/hooks/post-checkout", "[git] .git/hooks/pre-commit",
                          "core.fsmonitor", "filter.pwn.clean", "[gitattributes] .gitattributes",
                          "[symlink] sshkeys"})
        EXPECT_NE(r.err.find(f), std::string::npos) << f << "\n" << r.err;
    auto rec = ajit::record_of(r);
    ASSERT_TRUE(rec.contains("workspace")) << r.err;
    EXPECT_EQ(rec["workspace"]["branch"], b);
    EXPECT_EQ(rec["workspace"]["status"], "ok");
    EXPECT_GE(rec["workspace"]["flags"].get<int>(), 6);
    EXPECT_EQ(rec["workspace"]["report"]["commits"].size(), 2u);
    auto runs = ajtest::agentjail_with({"runs", "--json"}, opts());
    ASSERT_EQ(runs.status, 0) << describe(runs);
    auto list = nlohmann::json::parse(runs.out);
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0]["id"], id);
    EXPECT_EQ(list[0]["status"], "ok");
    EXPECT_EQ(list[0]["report"]["branch"], b);

    // discard: the branch and the state go; the rest of the repository stays.
    auto d = ajtest::agentjail_with({"discard", id}, opts());
    ASSERT_EQ(d.status, 0) << describe(d);
    EXPECT_TRUE(ajtest::agentjail_branches(jail.ws()).empty());
    EXPECT_FALSE(ajtest::exists(state.path() + "/agentjail/runs/" + id));
    EXPECT_EQ(ajtest::repo_fingerprint(jail.ws()), before);
    auto again = ajtest::agentjail_with({"discard", id}, opts());
    EXPECT_EQ(again.status, 125);
    EXPECT_NE(again.err.find("no run " + id), std::string::npos) << again.err;
}

// Positive control: the same plants made by the same script on the host, without
// agentjail, do run at the next git command (the markers and probes work).
TEST_F(CloneMode, ControlThePlantsRunWhenMadeInTheUsersRepository) {
    const std::string hook = "printf '#!/bin/sh\\ntouch " + marker("hook") + "\\n'";
    auto r = jail.host_sh("set -e; cd '" + jail.ws() + "'; " + hook +
                          " > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit;"
                          "git config core.fsmonitor 'touch " + marker("fsmonitor") + "; false';"
                          "git config filter.pwn.clean 'touch " + marker("filter") + "; cat';"
                          "echo '* filter=pwn' > .gitattributes; git status >/dev/null; git add -A;"
                          "GIT_CONFIG_GLOBAL=/dev/null git -c user.name=u -c user.email=u@x commit -qm x");
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* m : {"hook", "fsmonitor", "filter"}) EXPECT_TRUE(ajtest::exists(marker(m))) << m;
}

TEST_F(CloneMode, NoUncommittedCommitWhenAskedAndNothingChanged) {
    auto r = jail.sh("echo later > agent-untracked.txt", {"--workspace-mode", "clone", "--no-commit-uncommitted"},
                     opts());
    ASSERT_EQ(r.status, 0) << describe(r);
    auto branches = ajtest::agentjail_branches(jail.ws());
    ASSERT_EQ(branches.size(), 1u);
    // The branch is where the user's HEAD was: the agent made no commit.
    EXPECT_EQ(ajtest::host_git(jail.ws(), "rev-parse " + branches[0]).out,
              ajtest::host_git(jail.ws(), "rev-parse main").out);
    EXPECT_NE(r.err.find("uncommitted work was not carried back"), std::string::npos) << r.err;
}

// Started in a subdirectory of the repository (issue 27): the clone is of the whole
// tree, the command starts in the subdirectory, and the branch holds only what the
// agent changed. (git ran from the caller's directory listed that subdirectory only:
// the clone lost the rest, and the 'uncommitted work' commit deleted it.)
TEST_F(CloneMode, StartedInASubdirectoryTheWholeTreeIsCloned) {
    ::mkdir((jail.ws() + "/pkg").c_str(), 0755);
    ajtest::host_git(jail.ws(), "add -A");
    auto o = opts();
    o.cwd = jail.ws() + "/pkg";
    auto r = jail.run({"--ro", AJ_HELPERS_DIR, "--workspace-mode", "clone", "--", "/bin/sh", "-c",
                       "pwd; cat ../tracked.txt; echo new > made-here.txt"},
                      o);
    ASSERT_EQ(r.status, 0) << describe(r);
    auto l = ajtest::lines(r.out);
    ASSERT_GE(l.size(), 2u) << describe(r);
    EXPECT_EQ(l[0], jail.ws() + "/pkg");
    EXPECT_TRUE(ajtest::contains(r.out, "two")) << "the top of the tree is not in the clone\n" << describe(r);
    auto branches = ajtest::agentjail_branches(jail.ws());
    ASSERT_EQ(branches.size(), 1u);
    auto diff = ajtest::host_git(jail.ws(), "diff --name-status main " + branches[0]).out;
    EXPECT_TRUE(ajtest::contains(diff, "pkg/made-here.txt")) << diff;
    EXPECT_FALSE(ajtest::contains(diff, "D\ttracked.txt")) << "the branch deletes the user's files\n" << diff;
}

TEST_F(CloneMode, ANonRepositoryIsRefusedWithTheWayOut) {
    ajtest::TempDir plain("aj-plain");
    auto r = jail.run({"-C", plain.path(), "--workspace-mode", "clone", "--", "/bin/true"}, opts());
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_NE(r.err.find("is not a git repository"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--workspace-mode overlay"), std::string::npos) << r.err;
    EXPECT_FALSE(ajtest::exists(state.path() + "/agentjail/runs")) << "nothing kept for a refused run";
    // explain shows the plan and makes no clone.
    auto e = jail.run({"explain", "-C", jail.ws(), "--workspace-mode", "clone", "--", "/bin/true"}, opts());
    EXPECT_EQ(e.status, 0) << describe(e);
    EXPECT_FALSE(ajtest::exists(state.path() + "/agentjail"));
}

// The library makes the clone too: Sandbox::spawn in clone mode, RunResult::workspace.
TEST_F(CloneMode, TheCxxApiMakesAndReturnsTheClone) {
    auto p = agentjail::Policy::load("default");
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->set_workspace(jail.ws()));
    ASSERT_TRUE(p->set_workspace_mode("clone"));
    // The library reads XDG_STATE_HOME from the caller's environment.
    ::setenv("XDG_STATE_HOME", state.path().c_str(), 1);
    agentjail::SpawnOptions so;
    so.terminal = agentjail::SpawnOptions::Terminal::pipes;
    ajtest::TempDir out("aj-out");
    auto sb = agentjail::Sandbox::spawn(*p, {"/bin/sh", "-c", "echo api > api.txt"}, so);
    ::unsetenv("XDG_STATE_HOME");
    ASSERT_TRUE(sb) << sb.error().message();
    auto res = sb->wait();
    ASSERT_TRUE(res) << res.error().message();
    EXPECT_EQ(res->workspace.mode, "clone");
    EXPECT_EQ(res->workspace.status, "ok") << res->workspace.message;
    ASSERT_FALSE(res->workspace.branch.empty());
    EXPECT_EQ(ajtest::host_git(jail.ws(), "show " + res->workspace.branch + ":api.txt").out, "api\n");
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/api.txt")) << "written into the user's work tree";
    auto rec = agentjail::workspace::load_run(state.path() + "/agentjail/runs", res->workspace.run_id);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->status, "ok");
}

}  // namespace

// The plan `explain` prints for clone mode is the one the run carries out: the
// workspace bound from the run's clone, no guard of the user's directory.
TEST_F(CloneMode, ExplainPrintsThePlanTheRunCarriesOut) {
    std::vector<std::string> flags = jail.base();
    flags.insert(flags.end(), {"--workspace-mode", "clone"});
    ajtest::RunOptions o = opts();
    o.cwd = jail.ws();
    ajov::expect_explain_is_the_run(jail, flags, o, state.path() + "/agentjail/runs");
}
