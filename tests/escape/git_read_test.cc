// SPDX-License-Identifier: Apache-2.0
// Escape tests of how direct mode's check after the run reads what a run left for
// git (issue 25: "the check after the run reads git differently from git"). Each
// attack keeps a nested repository's core.fsmonitor, which the user's next `git
// status` in the project runs (a gitlink in the project's index makes git recurse
// into it), in a spelling or a place that a reader of agentjail's own would miss:
// the config as a link, too large, with a byte-order mark, after a comment that ends
// in a backslash; HEAD as a link; the git directory under another one's .git/lfs,
// behind a .git link, or reached through commondir; the hooks as a link. The check
// now has git read the config, and puts aside what it cannot read with certainty.
// Each test plants the same on the host first, without agentjail, as its positive
// control: there the host's git status runs the command.
#include "common.hpp"

#include <sys/stat.h>

#include <string>

using namespace ajesc;

namespace {

const char* const kGit =
    "env GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.test "
    "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.test git";

bool exists(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;
}

// A repository with one commit at dir, made on the host.
bool make_repo(ajtest::Jail& jail, const std::string& dir) {
    auto r = jail.host_sh(std::string("set -e; cd '") + dir + "'; G='" + kGit + "'; $G init -q .; echo a > a.txt; "
                          "$G add a.txt; $G commit -qm one; echo made");
    return ajtest::trim(r.out) == "made";
}

// The agent's side: `make` (run at the project's top, with $G for git and $M for
// the marker's path) makes a repository `sub` with one commit whose git status runs
// `touch $M`; then its commit goes into the project's index as a gitlink.
std::string plant(const std::string& make, const std::string& marker) {
    return std::string("set -e; G='") + kGit + "'; M='" + marker + "'; FS=\"touch $M; false\"; " + make +
           "; sha=$(cd sub && $G rev-parse HEAD); $G update-index --add --cacheinfo 160000,$sha,sub; echo planted";
}

// A plain nested repository with a commit (the start of most variants).
const char* const kSub = "mkdir sub; (cd sub && $G init -q . && $G commit -q --allow-empty -m s)";

struct Outcome {
    bool control_ran = false;
    bool ran = false;
    ajtest::RunOutput run;
};

// Plants `make` on the host (the control: git status there must run it) and in the
// sandbox (the host's git status in the project afterwards must not).
Outcome attack(ajtest::Jail& jail, const std::string& name, const std::string& make) {
    Outcome o;
    ajtest::TempDir out("aj-" + name);
    ajtest::TempDir ctl("aj-" + name + "-ctl");
    EXPECT_TRUE(make_repo(jail, ctl.path()));
    const std::string ctl_marker = out.path() + "/ran-control";
    auto c = jail.host_sh("cd '" + ctl.path() + "' && " + plant(make, ctl_marker));
    EXPECT_EQ(ajtest::trim(c.out), "planted") << describe(c);
    jail.host_sh("cd '" + ctl.path() + "' && " + kGit + " status >/dev/null 2>&1");
    o.control_ran = exists(ctl_marker);

    EXPECT_TRUE(make_repo(jail, jail.ws()));
    const std::string marker = out.path() + "/ran";
    o.run = jail.sh(plant(make, marker));
    EXPECT_EQ(ajtest::trim(o.run.out), "planted") << describe(o.run);
    jail.host_sh("cd '" + jail.ws() + "' && " + kGit + " status >/dev/null 2>&1");
    o.ran = exists(marker);
    return o;
}

}  // namespace

// GITREAD-01: the nested repository's config is a link to a file elsewhere in the
// project; git follows it, a reader that opens without following links reads nothing.
TEST_F(Escape, GITREAD01_AConfigThatIsALinkIsPutAside) {
    auto o = attack(jail, "gitread01",
                    std::string(kSub) + "; printf '[core]\\n\\tfsmonitor = %s\\n' \"$FS\" > notes.cfg; : > ref.cfg; "
                                        "rm sub/.git/config; ln -s ../../notes.cfg sub/.git/config");
    ASSERT_TRUE(o.control_ran) << "the control's git status did not follow the linked config";
    EXPECT_FALSE(o.ran) << "the host's git status ran the linked config's core.fsmonitor";
    EXPECT_NE(o.run.err.find("sub/.git/config: a git config that is a symbolic link"), std::string::npos)
        << describe(o.run);
    EXPECT_TRUE(exists(jail.ws() + "/sub/.git/config.agentjail-quarantined"));
    // Put aside, not followed: the file the link named keeps its mode.
    struct stat st {}, ref {};  // ref.cfg: made beside it by the same run, never linked
    ASSERT_EQ(::stat((jail.ws() + "/notes.cfg").c_str(), &st), 0);
    ASSERT_EQ(::stat((jail.ws() + "/ref.cfg").c_str(), &ref), 0);
    EXPECT_EQ(st.st_mode & 07777, ref.st_mode & 07777) << "the check changed the mode of the link's target";
}

// GITREAD-11: the config is a link to a file outside the workspace (here one the
// test made, standing for ~/.bashrc or /etc/shadow): putting the link aside must not
// touch what it points at.
TEST_F(Escape, GITREAD11_PuttingALinkAsideLeavesItsTargetAlone) {
    ajtest::TempDir outside("aj-gitread11-outside");
    const std::string target = outside.path() + "/precious";
    ASSERT_EQ(ajtest::run({"/bin/sh", "-c", "echo keep > '" + target + "'; chmod 644 '" + target + "'"}).status, 0);
    auto r = jail.sh(std::string("set -e; G='") + kGit + "'; " + kSub +
                     "; rm sub/.git/config; ln -s '" + target + "' sub/.git/config; echo planted");
    ASSERT_EQ(ajtest::trim(r.out), "planted") << describe(r);
    EXPECT_NE(r.err.find("sub/.git/config: a git config that is a symbolic link"), std::string::npos)
        << describe(r);
    struct stat st {};
    ASSERT_EQ(::stat(target.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u) << "the check chmod'ed the file a link outside the workspace named";
    EXPECT_EQ(ajtest::read_file(target), "keep\n");
    // Control: the link was there to be found (it is put aside, by its own name).
    struct stat lst {};
    EXPECT_EQ(::lstat((jail.ws() + "/sub/.git/config.agentjail-quarantined").c_str(), &lst), 0);
    EXPECT_TRUE(S_ISLNK(lst.st_mode));
}

// GITREAD-02: the setting after 5 MiB of comments: git reads a config of any size,
// the check reads up to a bound, and past it puts the file aside unread.
TEST_F(Escape, GITREAD02_AConfigTooLargeToReadIsPutAside) {
    auto o = attack(jail, "gitread02",
                    std::string(kSub) + "; yes '# padding padding padding padding padding padding padding padding' | "
                                        "head -n 80000 >> sub/.git/config; "
                                        "printf '[core]\\n\\tfsmonitor = %s\\n' \"$FS\" >> sub/.git/config");
    ASSERT_TRUE(o.control_ran) << "the control's git status did not read past 5 MiB";
    EXPECT_FALSE(o.ran) << "the host's git status ran the setting after the padding";
    EXPECT_NE(o.run.err.find("sub/.git/config: git config written during the run, larger than the check reads"),
              std::string::npos)
        << describe(o.run);
}

// GITREAD-03: a config that is large but under the bound is read whole, by git:
// the setting after 1.5 MiB of comments is found (the old reader stopped at 1 MiB).
TEST_F(Escape, GITREAD03_ASettingAfterAMegabyteOfCommentsIsFound) {
    auto o = attack(jail, "gitread03",
                    std::string(kSub) + "; yes '# padding padding padding padding padding padding padding padding' | "
                                        "head -n 24000 >> sub/.git/config; "
                                        "printf '[core]\\n\\tfsmonitor = %s\\n' \"$FS\" >> sub/.git/config");
    ASSERT_TRUE(o.control_ran);
    EXPECT_FALSE(o.ran);
    EXPECT_NE(o.run.err.find("sub/.git/config: git config written during the run sets core.fsmonitor"),
              std::string::npos)
        << describe(o.run);
}

// GITREAD-04: a UTF-8 byte-order mark before the first section header.
TEST_F(Escape, GITREAD04_AByteOrderMarkHidesNothing) {
    auto o = attack(jail, "gitread04",
                    std::string(kSub) + "; printf '\\357\\273\\277[core]\\n\\tfsmonitor = %s\\n' \"$FS\" > sub/.git/config");
    ASSERT_TRUE(o.control_ran) << "the control's git did not read the config after its BOM";
    EXPECT_FALSE(o.ran);
    EXPECT_NE(o.run.err.find("sub/.git/config: git config written during the run sets core.fsmonitor"),
              std::string::npos)
        << describe(o.run);
}

// GITREAD-05: a comment line that ends in a backslash: git continues no comment, a
// reader that joins continuation lines first loses the section header after it.
TEST_F(Escape, GITREAD05_ACommentEndingInABackslashHidesNothing) {
    auto o = attack(jail, "gitread05",
                    std::string(kSub) + "; printf '# note \\\\\\n[core]\\n\\tfsmonitor = %s\\n' \"$FS\" > sub/.git/config");
    ASSERT_TRUE(o.control_ran);
    EXPECT_FALSE(o.ran);
    EXPECT_NE(o.run.err.find("sub/.git/config: git config written during the run sets core.fsmonitor"),
              std::string::npos)
        << describe(o.run);
}

// GITREAD-06: HEAD as a symbolic link (git still takes the directory for a
// repository; a check that wants HEAD to be a file passed it by).
TEST_F(Escape, GITREAD06_AHeadThatIsALinkStillMakesARepository) {
    auto o = attack(jail, "gitread06",
                    std::string(kSub) + "; (cd sub && $G config core.fsmonitor \"$FS\" && h=$($G symbolic-ref HEAD) && "
                                        "rm .git/HEAD && ln -s \"$h\" .git/HEAD)");
    ASSERT_TRUE(o.control_ran) << "the control's git did not take a linked HEAD";
    EXPECT_FALSE(o.ran);
    EXPECT_NE(o.run.err.find("sub/.git/config: git config written during the run sets core.fsmonitor"),
              std::string::npos)
        << describe(o.run);
}

// GITREAD-07: the nested repository's git directory lies under the project's own
// .git/lfs (which the walk does not enter), named by sub/.git, a gitdir file.
TEST_F(Escape, GITREAD07_AGitDirectoryUnderLfsNamedByAGitFileIsChecked) {
    auto o = attack(jail, "gitread07",
                    "mkdir -p .git/lfs && $G init -q --separate-git-dir .git/lfs/x sub && (cd sub && $G commit -q --allow-empty -m s && "
                    "$G config core.fsmonitor \"$FS\")");
    ASSERT_TRUE(o.control_ran);
    EXPECT_FALSE(o.ran) << "the host's git status ran the config of a git directory under .git/lfs";
    EXPECT_NE(o.run.err.find(".git/lfs/x/config: git config written during the run sets core.fsmonitor"),
              std::string::npos)
        << describe(o.run);
}

// GITREAD-08: sub/.git is a symbolic link to a git directory elsewhere in the
// project (git follows it as it does a gitdir file).
TEST_F(Escape, GITREAD08_AGitLinkToAGitDirectoryIsPutAside) {
    auto o = attack(jail, "gitread08",
                    "$G init -q --bare .git/lfs/y && mkdir sub && ln -s ../.git/lfs/y sub/.git && "
                    "$G --git-dir=.git/lfs/y config core.bare false && "
                    "(cd sub && $G commit -q --allow-empty -m s && $G config core.fsmonitor \"$FS\")");
    ASSERT_TRUE(o.control_ran) << "the control's git did not follow sub/.git as a link";
    EXPECT_FALSE(o.ran);
    EXPECT_NE(o.run.err.find("sub/.git: a .git link written during the run"), std::string::npos)
        << describe(o.run);
}

// GITREAD-09: a linked worktree's git directory (HEAD and commondir, no config of
// its own) whose commondir is a repository hidden under .git/lfs with the setting.
TEST_F(Escape, GITREAD09_ACommondirLeadsTheCheckToTheConfigGitReads) {
    auto o = attack(jail, "gitread09",
                    std::string(kSub) + "; (cd sub && $G worktree add -q ../wt >/dev/null 2>&1) && "
                                        "mkdir -p .git/lfs && mv sub/.git .git/lfs/common && "
                                        "printf '%s\\n' \"$PWD/.git/lfs/common\" > .git/lfs/common/worktrees/wt/commondir && "
                                        "$G --git-dir=.git/lfs/common config core.fsmonitor \"$FS\" && "
                                        "rm -rf sub && mv wt sub && "
                                        "printf 'gitdir: %s\\n' \"$PWD/.git/lfs/common/worktrees/wt\" > sub/.git");
    ASSERT_TRUE(o.control_ran) << "the control's git did not read the common directory's config";
    EXPECT_FALSE(o.ran);
    EXPECT_NE(o.run.err.find(".git/lfs/common/config: git config written during the run sets core.fsmonitor"),
              std::string::npos)
        << describe(o.run);
}

// GITREAD-10: the nested repository's hooks directory is a link to a directory of
// the agent's with a pre-commit hook (the user's commit there runs it).
TEST_F(Escape, GITREAD10_AHooksDirectoryThatIsALinkIsPutAside) {
    ajtest::TempDir out("aj-gitread10");
    const std::string marker = out.path() + "/ran";
    const std::string make = std::string("set -e; G='") + kGit + "'; mkdir -p lib/myhooks; cd lib; $G init -q .; "
                             "printf '#!/bin/sh\\ntouch " + marker + "\\n' > myhooks/pre-commit; "
                             "chmod +x myhooks/pre-commit; rm -rf .git/hooks; ln -s ../myhooks .git/hooks; echo planted";
    // Control first, on the host.
    ajtest::TempDir ctl("aj-gitread10-ctl");
    const std::string ctl_make = std::string(make).replace(make.find(marker), marker.size(), marker + "-control");
    auto c = jail.host_sh("cd '" + ctl.path() + "' && " + ctl_make);
    ASSERT_EQ(ajtest::trim(c.out), "planted") << describe(c);
    jail.host_sh("cd '" + ctl.path() + "/lib' && " + kGit + " commit -q --allow-empty -m x");
    ASSERT_TRUE(exists(marker + "-control")) << "the control's linked hooks did not run";

    auto r = jail.sh(make);
    ASSERT_EQ(ajtest::trim(r.out), "planted") << describe(r);
    EXPECT_NE(r.err.find("lib/.git/hooks: git's hooks directory is a symbolic link"), std::string::npos)
        << describe(r);
    jail.host_sh("cd '" + jail.ws() + "/lib' && " + kGit + " commit -q --allow-empty -m x");
    EXPECT_FALSE(exists(marker)) << "the host's git commit ran a hook through the linked hooks directory";
}
