// SPDX-License-Identifier: Apache-2.0
// Escape tests of the filesystem advisories of issue 26 (docs/advisories.md):
//   ADV1  setup following a planted link out of where it means to create (bubblewrap
//         CVE-2026-87766): the run's state, the agent's state, the placeholder key,
//         --rw destinations, the private home, a destination swapped after planning
//   ADV2  links toward hidden and protected names (Claude Code CVE-2026-39861,
//         CVE-2026-25724, CVE-2026-25725), a protected or hidden name absent at start
//   ADV3  the files agentjail writes on the host are private (CVE-2026-46406)
//   ADV7  a workspace's own dev, proc and sys links in overlay and clone modes
//         (runc CVE-2026-41579)
// One attack per test, each with a positive control that shows the probe could have
// succeeded.
#include "common.hpp"
#include "live_run.hpp"
#include "git_support.hpp"
#include "guarded_launch.hpp"
#include "net_support.hpp"

#include "launch/launch.hpp"
#include "plan/internal.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"
#include "run/loop.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <fstream>
#include <string>
#include <vector>

using namespace ajesc;

namespace {

bool is_link(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool is_dir(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

unsigned mode_of(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0xffffu;
}

std::string octal(unsigned m) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04o", m);
    return buf;
}

// Everything under dir, one path per line (empty: nothing was made there).
std::string listing(const std::string& dir) {
    return ajtest::run({"/usr/bin/find", dir, "-mindepth", "1"}).out;
}

// "../<name of target>" when target lies beside from's parent: the relative
// spelling of a link planted at from.
std::string beside(const std::string& target) {
    return "../" + target.substr(target.rfind('/') + 1);
}

// A state home of the test's own (0700, as agentjail insists), for runs that keep
// state: overlay and clone runs, the agent's state, the placeholder key.
struct StateHome {
    ajtest::TempDir dir{"aj-adv-state"};
    ajtest::RunOptions opts(int timeout_ms = 60000) const {
        ajtest::RunOptions o;
        o.env = {"XDG_STATE_HOME=" + dir.path()};
        o.unset_env = {"XDG_CONFIG_HOME"};
        o.timeout_ms = timeout_ms;
        return o;
    }
    std::string aj() const { return dir.path() + "/agentjail"; }
};

// ---- ADV1: nothing is created through a link planted where agentjail creates ----

// $XDG_STATE_HOME/agentjail, where every run's state goes, replaced by an absolute
// link to a directory of the attacker's choice (a direct-mode run with -C ~ can write
// there): an overlay run must not make its run directory (upper layer, record, plan)
// through it.
TEST_F(Escape, ADV1_OverlayRunStateThroughALinkedStateDirIsRefused) {
    StateHome state;
    ajtest::TempDir outside("aj-adv-out");
    ASSERT_EQ(::symlink(outside.path().c_str(), state.aj().c_str()), 0);
    auto r = jail.sh("echo written > new.txt", {"--workspace-mode", "overlay"}, state.opts());
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "link")) << describe(r);
    EXPECT_EQ(listing(outside.path()), "") << "the run's state was made through the planted link";
    EXPECT_TRUE(is_link(state.aj()));
    // Control: with a real directory there the same run keeps its state under it.
    ASSERT_EQ(::unlink(state.aj().c_str()), 0);
    auto c = jail.sh("echo written > new.txt", {"--workspace-mode", "overlay"}, state.opts());
    EXPECT_EQ(c.status, 0) << describe(c);
    EXPECT_EQ(ajtest::dir_entries(state.aj() + "/runs").size(), 1u) << listing(state.aj());
}

// The same one level down, as a relative link: agentjail/runs -> ../../outside.
// Clone mode makes its clone (a repository the host's git later reads) there.
TEST_F(Escape, ADV1_CloneRunStateThroughARelativeRunsLinkIsRefused) {
    ASSERT_EQ(ajtest::make_user_repo(jail.ws()), "");
    StateHome state;
    ajtest::TempDir outside("aj-adv-out");
    ASSERT_EQ(::mkdir(state.aj().c_str(), 0700), 0);
    const std::string rel = "../" + beside(outside.path());
    ASSERT_EQ(::symlink(rel.c_str(), (state.aj() + "/runs").c_str()), 0);
    // Positive control for the link itself: it leads to the outside directory.
    ASSERT_TRUE(is_dir(state.aj() + "/runs/.")) << "the relative link does not resolve";
    auto r = jail.sh("true", {"--workspace-mode", "clone"}, state.opts());
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(listing(outside.path()), "") << "the clone was made through the planted link";
    // Control: a real runs directory takes the clone.
    ASSERT_EQ(::unlink((state.aj() + "/runs").c_str()), 0);
    auto c = jail.sh("true", {"--workspace-mode", "clone"}, state.opts());
    EXPECT_EQ(c.status, 0) << describe(c);
    EXPECT_EQ(ajtest::dir_entries(state.aj() + "/runs").size(), 1u) << listing(state.aj());
}

// The agent's state directory, $XDG_STATE_HOME/agentjail/claude, planted as a link:
// the run would bind whatever it points to read-write into the sandbox.
TEST_F(Escape, ADV1_AgentStateThroughALinkedAgentDirIsRefused) {
    StateHome state;
    ajtest::TempDir outside("aj-adv-out");
    outside.write("victim", "the user's file\n");
    ASSERT_EQ(::mkdir(state.aj().c_str(), 0700), 0);
    ASSERT_EQ(::symlink(outside.path().c_str(), (state.aj() + "/claude").c_str()), 0);
    auto r = jail.run({"-C", jail.ws(), "--policy", "claude", "--", "/bin/sh", "-c",
                       "ls -a \"$CLAUDE_CONFIG_DIR\"/.. ; echo x > \"$CLAUDE_CONFIG_DIR\"/planted"},
                      state.opts());
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(ajtest::dir_entries(outside.path()), std::set<std::string>{"victim"})
        << listing(outside.path());
    EXPECT_FALSE(ajtest::contains(r.out, "victim")) << describe(r);
    // Control: without the link the state is made under the state home, and written.
    ASSERT_EQ(::unlink((state.aj() + "/claude").c_str()), 0);
    auto c = jail.run({"-C", jail.ws(), "--policy", "claude", "--", "/bin/sh", "-c",
                       "echo x > \"$CLAUDE_CONFIG_DIR\"/planted && echo WROTE"},
                      state.opts());
    EXPECT_TRUE(ajtest::contains(c.out, "WROTE")) << describe(c);
    EXPECT_TRUE(is_dir(state.aj() + "/claude"));
}

// A mount point agentjail makes in the agent's state (the user's ~/.claude/commands,
// bound read-only at $CLAUDE_CONFIG_DIR/commands) was a link, absolute or relative,
// that the previous run planted while the user had no such directory: the next
// run replaces it by a directory and writes nothing through it.
TEST_F(Escape, ADV1_AgentStateMountPointPlantedAsALinkIsReplaced) {
    StateHome state;
    ajtest::TempDir outside("aj-adv-out");
    auto plant = jail.run({"-C", jail.ws(), "--policy", "claude", "--", "/bin/sh", "-c",
                           "cd \"$CLAUDE_CONFIG_DIR\" && ln -s '" + outside.path() +
                               "' commands && ln -s ../../../../" +
                               beside(outside.path()).substr(3) + " agents && echo PLANTED"},
                          state.opts());
    ASSERT_TRUE(ajtest::contains(plant.out, "PLANTED")) << describe(plant);
    jail.home_dir().write(".claude/commands/mine.md", "the user's command\n");
    jail.home_dir().write(".claude/agents/mine.md", "the user's agent\n");
    // Positive control: between the runs the planted names are links out of the state.
    char* ws = ::realpath(jail.ws().c_str(), nullptr);
    const std::string st =
        state.aj() + "/claude/" + agentjail::plan::detail::project_key(ws ? ws : "");
    ::free(ws);
    ASSERT_TRUE(is_link(st + "/commands")) << listing(st);
    ASSERT_TRUE(is_link(st + "/agents")) << listing(st);
    auto r = jail.run(
        {"-C", jail.ws(), "--policy", "claude", "--", "/bin/sh", "-c",
         "cat \"$CLAUDE_CONFIG_DIR\"/commands/mine.md \"$CLAUDE_CONFIG_DIR\"/agents/mine.md"},
        state.opts());
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out, "the user's command\nthe user's agent\n") << describe(r);
    EXPECT_EQ(listing(outside.path()), "") << "a mount point was made through the planted link";
    EXPECT_TRUE(is_dir(st + "/commands"));
    EXPECT_TRUE(is_dir(st + "/agents"));
}

// The placeholder key (what makes secret placeholders stable between runs) planted as
// a link to a 32-byte file of the attacker's: it is neither written through nor read
// as the key (the placeholders then differ between runs, as with no key at all).
TEST_F(Escape, ADV1_PlaceholderKeyLinkIsNeitherWrittenNorRead) {
    StateHome state;
    ajtest::TempDir outside("aj-adv-out");
    const std::string chosen(32, 'k');
    const std::string victim = outside.write("key", chosen, 0600);
    ASSERT_EQ(::mkdir(state.aj().c_str(), 0700), 0);
    ASSERT_EQ(::symlink(victim.c_str(), (state.aj() + "/placeholder.key").c_str()), 0);
    auto o = state.opts();
    o.env.push_back("AJ_ADV_SECRET=" + jail.new_canary());
    const std::vector<std::string> flags = {"--net", "proxy", "--secret",
                                            "ADV_TOKEN=env:AJ_ADV_SECRET@example.test"};
    auto first = jail.sh("echo \"$ADV_TOKEN\"", flags, o);
    auto second = jail.sh("echo \"$ADV_TOKEN\"", flags, o);
    ASSERT_EQ(first.status, 0) << describe(first);
    ASSERT_EQ(second.status, 0) << describe(second);
    EXPECT_TRUE(ajtest::contains(first.out, "placeholder")) << describe(first);
    EXPECT_NE(first.out, second.out) << "the placeholders are stable: the planted key was read";
    EXPECT_EQ(ajtest::read_file(victim), chosen) << "the key was written through the link";
    EXPECT_TRUE(is_link(state.aj() + "/placeholder.key"));
    // Control: with the link gone the key is made, and the placeholder is stable.
    ASSERT_EQ(::unlink((state.aj() + "/placeholder.key").c_str()), 0);
    auto a = jail.sh("echo \"$ADV_TOKEN\"", flags, o);
    auto b = jail.sh("echo \"$ADV_TOKEN\"", flags, o);
    EXPECT_EQ(a.out, b.out) << describe(a) << describe(b);
    EXPECT_EQ(mode_of(state.aj() + "/placeholder.key"), 0600u);
}

// --rw SRC:DST with DST below a link in the workspace (absolute), which an earlier
// run planted: the mount point would be made on the host, outside the workspace.
TEST_F(Escape, ADV1_RwDestinationBelowAnAbsoluteWorkspaceLinkIsRefused) {
    ajtest::TempDir src("aj-adv-src"), outside("aj-adv-out");
    src.write("data", "bound\n");
    ASSERT_EQ(::symlink(outside.path().c_str(), (jail.ws() + "/abs").c_str()), 0);
    auto r = jail.sh("ls abs/sub", {"--rw", src.path() + ":" + jail.ws() + "/abs/sub"});
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "symlink")) << describe(r);
    EXPECT_EQ(listing(outside.path()), "");
    // Control: a real directory at the same place takes the bind.
    jail.ws_dir().mkdir("real/sub");
    auto c = jail.sh("cat real/sub/data", {"--rw", src.path() + ":" + jail.ws() + "/real/sub"});
    EXPECT_EQ(c.out, "bound\n") << describe(c);
}

// The same with a relative link (rel -> ../outside).
TEST_F(Escape, ADV1_RwDestinationBelowARelativeWorkspaceLinkIsRefused) {
    ajtest::TempDir src("aj-adv-src"), outside("aj-adv-out");
    src.write("data", "bound\n");
    ASSERT_EQ(::symlink(beside(outside.path()).c_str(), (jail.ws() + "/rel").c_str()), 0);
    ASSERT_TRUE(is_dir(jail.ws() + "/rel/.")) << "control: the relative link does not lead outside";
    auto r = jail.sh("ls rel/sub", {"--rw", src.path() + ":" + jail.ws() + "/rel/sub"});
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(listing(outside.path()), "");
    jail.ws_dir().mkdir("real/sub");
    auto c = jail.sh("cat real/sub/data", {"--rw", src.path() + ":" + jail.ws() + "/real/sub"});
    EXPECT_EQ(c.out, "bound\n") << describe(c);
}

// --rw SRC:DST where DST itself is the planted link: refused, never bound on its target.
TEST_F(Escape, ADV1_RwDestinationThatIsALinkIsRefused) {
    ajtest::TempDir src("aj-adv-src"), outside("aj-adv-out");
    src.write("data", "bound\n");
    outside.write("victim", "host file\n");
    ASSERT_EQ(::symlink(outside.path().c_str(), (jail.ws() + "/dst").c_str()), 0);
    auto r =
        jail.sh("echo over > dst/victim; ls dst", {"--rw", src.path() + ":" + jail.ws() + "/dst"});
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(ajtest::read_file(outside.path() + "/victim"), "host file\n");
    EXPECT_EQ(ajtest::dir_entries(outside.path()), std::set<std::string>{"victim"});
    // Control: the link does lead to the victim.
    EXPECT_EQ(ajtest::read_file(jail.ws() + "/dst/victim"), "host file\n");
}

// The race of the same attack: the destination is a real directory when the plan is
// made and becomes a link (absolute, then relative) before the launch. The child
// opens every mount point without following links: the launch fails, nothing is
// created outside. Control: without the swap the same plan runs and shows the bind.
TEST_F(Escape, ADV1_DestinationSwappedToALinkAfterPlanningIsRefused) {
    ajtest::TempDir src("aj-adv-src");
    src.write("data", "bound\n");
    auto plan_for = [&]() -> agentjail::Result<agentjail::plan::Plan> {
        auto pol = agentjail::policy::load("default");
        if (!pol) return std::move(pol).error();
        pol->workspace_path = agentjail::policy::Located<std::string>{jail.ws(), {}};
        pol->workspace_explicit = true;
        agentjail::policy::add_rw(*pol, src.path(), jail.ws() + "/d", {});
        auto host = agentjail::plan::HostFacts::current();
        if (!host) return std::move(host).error();
        return agentjail::plan::build(*pol, {"/bin/sh", "-c", "cat d/data; echo ran"}, *host);
    };
    auto launch = [&](agentjail::plan::Plan& plan, std::string& text) -> int {
        ajtest::Pipe out;
        agentjail::launch::Stdio stdio;
        stdio.out = out.w;
        stdio.err = out.w;
        agentjail::run::Loop loop;
        loop.start();
        ajtest::GuardedLaunch proc;  // the launch with the guard a run has (its placeholders)
        auto started = proc.spawn(plan, stdio, loop.io());
        out.close_write();
        if (!started) {
            text = started.error().message();
            return -1;
        }
        text = out.read_all();
        auto res = proc.wait();
        if (!res) {
            text += res.error().message();
            return -1;
        }
        return res->exit_code;
    };
    for (const bool relative : {false, true}) {
        ajtest::TempDir outside("aj-adv-out");
        jail.ws_dir().mkdir("d");
        auto plan = plan_for();
        ASSERT_TRUE(plan) << plan.error().message();
        ASSERT_EQ(::rename((jail.ws() + "/d").c_str(), (jail.ws() + "/d.real").c_str()), 0);
        const std::string target = relative ? beside(outside.path()) : outside.path();
        ASSERT_EQ(::symlink(target.c_str(), (jail.ws() + "/d").c_str()), 0);
        std::string text;
        int code = launch(*plan, text);
        EXPECT_NE(code, 0) << (relative ? "relative" : "absolute")
                           << ": ran through the swapped link\n"
                           << text;
        EXPECT_FALSE(ajtest::contains(text, "ran")) << text;
        EXPECT_EQ(listing(outside.path()), "") << (relative ? "relative" : "absolute");
        ASSERT_EQ(::unlink((jail.ws() + "/d").c_str()), 0);
        ASSERT_EQ(::rmdir((jail.ws() + "/d.real").c_str()), 0);
    }
    // Control: no swap, the same plan shows the bound file.
    jail.ws_dir().mkdir("d");
    auto plan = plan_for();
    ASSERT_TRUE(plan) << plan.error().message();
    std::string text;
    EXPECT_EQ(launch(*plan, text), 0) << text;
    EXPECT_EQ(text, "bound\nran\n");
}

// The private home is a tmpfs: a bind aimed below a name that is a link in the
// host's home (~/.cache -> elsewhere) gets its mount point in the tmpfs, and the
// host's link and its target are left alone.
TEST_F(Escape, ADV1_BindIntoThePrivateHomeBelowAHostLinkStaysInside) {
    ajtest::TempDir src("aj-adv-src"), outside("aj-adv-out");
    src.write("data", "bound\n");
    ASSERT_EQ(::symlink(outside.path().c_str(), (jail.home() + "/.cache").c_str()), 0);
    auto r = jail.sh("cat ~/.cache/x/data && touch ~/.cache/x/new && echo OK",
                     {"--rw", src.path() + ":" + jail.home() + "/.cache/x"});
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "bound\nOK")) << describe(r);
    EXPECT_EQ(listing(outside.path()), "") << "a mount point was made in the host's link target";
    EXPECT_TRUE(is_link(jail.home() + "/.cache"));
    EXPECT_TRUE(ajtest::exists(src.path() + "/new"));  // the bind itself is what it should be
    // Control: the host's ~/.cache does lead to the outside directory.
    auto c = jail.host_sh("mkdir \"$HOME/.cache/x\" && echo made");
    EXPECT_TRUE(ajtest::contains(c.out, "made")) << describe(c);
    EXPECT_TRUE(is_dir(outside.path() + "/x"));
    ::rmdir((outside.path() + "/x").c_str());
}

// ---- ADV2: links toward hidden and protected names --------------------------------

// A link in the workspace to the hidden ~/.ssh key, absolute: nothing is read
// through it. Control: on the host the link reads the key.
TEST_F(Escape, ADV2_AbsoluteLinkToAHiddenHomeKeyShowsNothing) {
    const std::string key = jail.home() + "/.ssh/id_ed25519";
    ASSERT_EQ(::symlink(key.c_str(), (jail.ws() + "/key").c_str()), 0);
    auto r = jail.sh("cat key; cat /proc/self/root" + key + "; true");
    EXPECT_FALSE(ajtest::contains(r.out + r.err, jail.secret("home/.ssh/id_ed25519")))
        << describe(r);
    auto c = jail.host_sh("cat '" + jail.ws() + "/key'");
    EXPECT_TRUE(ajtest::contains(c.out, jail.secret("home/.ssh/id_ed25519"))) << describe(c);
    ::unlink((jail.ws() + "/key").c_str());  // the sweep of the workspace would read through it
}

// A relative link to the workspace's hidden .env from a subdirectory.
TEST_F(Escape, ADV2_RelativeLinkToTheHiddenEnvShowsNothing) {
    jail.ws_dir().mkdir("sub");
    ASSERT_EQ(::symlink("../.env", (jail.ws() + "/sub/settings").c_str()), 0);
    auto r = jail.sh("cat sub/settings; cp sub/settings copy; cat copy; true");
    EXPECT_FALSE(ajtest::contains(r.out + r.err, jail.secret("ws/.env"))) << describe(r);
    ::unlink((jail.ws() + "/copy").c_str());
    auto c = jail.host_sh("cat '" + jail.ws() + "/sub/settings'");
    EXPECT_TRUE(ajtest::contains(c.out, jail.secret("ws/.env"))) << describe(c);
    ::unlink((jail.ws() + "/sub/settings").c_str());
}

// A hard link in the workspace of a key inside a hidden directory (~/.ssh is hidden
// as a directory): the other name of the hidden file is hidden too.
TEST_F(Escape, ADV2_HardLinkOfAKeyInAHiddenDirectoryIsHidden) {
    const std::string key = jail.home() + "/.ssh/id_ed25519";
    const std::string other = jail.ws() + "/deploy_key";
    if (::link(key.c_str(), other.c_str()) != 0)
        GTEST_SKIP()
            << "the home and the workspace are on different filesystems: no hard link possible";
    auto r = jail.sh("cat deploy_key; true");
    EXPECT_FALSE(ajtest::contains(r.out + r.err, jail.secret("home/.ssh/id_ed25519")))
        << describe(r);
    auto e = jail.run({"explain", "-C", jail.ws(), "--", "/bin/true"});
    EXPECT_TRUE(ajtest::contains(e.out, "hard link of " + key)) << describe(e);
    // Control: the same name is a readable file when it is not a link of the key.
    ASSERT_EQ(::unlink(other.c_str()), 0);
    jail.ws_dir().write("deploy_key", "a public note\n");
    auto c = jail.sh("cat deploy_key");
    EXPECT_EQ(c.out, "a public note\n") << describe(c);
}

// The same deeper on both sides: a key in a directory below the hidden one, linked
// into a sub-folder of the project. The plan finds such links by the inode numbers
// of the names it lists (no stat of every file in a hidden directory), so the test
// runs where that is how it looks (ext4, xfs, btrfs, tmpfs) and says so elsewhere.
TEST_F(Escape, ADV2_HardLinkOfANestedKeyIntoASubfolderIsHidden) {
    const std::string dir = jail.home() + "/.ssh/deploy";
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    const std::string key = dir + "/id_rsa";
    const std::string secret = ajtest::canary();
    {
        std::ofstream(key) << secret << "\n";
    }
    ASSERT_EQ(::mkdir((jail.ws() + "/ops").c_str(), 0755), 0);
    const std::string other = jail.ws() + "/ops/material";
    if (::link(key.c_str(), other.c_str()) != 0)
        GTEST_SKIP() << "the home and the workspace are on different filesystems: no hard link possible";
    auto r = jail.sh("cat ops/material; true");
    EXPECT_FALSE(ajtest::contains(r.out + r.err, secret)) << describe(r);
    // Control: the key's content is what a plain copy beside it shows.
    ASSERT_EQ(::unlink(other.c_str()), 0);
    jail.ws_dir().write("ops/material", secret + "\n");
    auto c = jail.control_sh("cat ops/material");
    EXPECT_TRUE(ajtest::contains(c.out, secret)) << describe(c);
    ::unlink(other.c_str());
    ::unlink(key.c_str());
    ::rmdir(dir.c_str());
}

// ---- WALK: the workspace's walk kept from one run to the next ----------------------

namespace {
// The runs' state under the fake home, named outright (the runner's own
// XDG_STATE_HOME must not take the walks elsewhere).
std::string walk_state(ajtest::Jail& jail) { return jail.home() + "/.local/state"; }
ajtest::RunOptions with_state(ajtest::Jail& jail) {
    ajtest::RunOptions o;
    o.env = {"XDG_STATE_HOME=" + walk_state(jail)};
    return o;
}
std::vector<std::string> kept_walks(ajtest::Jail& jail) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir((walk_state(jail) + "/agentjail/scans").c_str())) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') out.emplace_back(e->d_name);
        ::closedir(d);
    }
    return out;
}
}  // namespace

// The next run starts from the last run's walk: a key the host makes deep in the
// project between runs (a new file in an old directory, a new directory holding one,
// a directory moved in from outside) is hidden all the same. Control: the host reads
// each, and the first run did keep a walk for the second to start from.
TEST_F(Escape, WALK01_KeysTheHostMakesDeepBetweenRunsAreHidden) {
    for (int i = 0; i < 30; ++i) jail.ws_dir().write("src/m" + std::to_string(i) + "/lib/code.py", "pass\n");
    auto first = jail.sh("true", {}, with_state(jail));
    ASSERT_EQ(first.status, 0) << describe(first);
    ASSERT_EQ(kept_walks(jail).size(), 1u) << "the first run kept no walk";
    ajtest::sleep_ms(20);
    const std::string a = jail.new_canary(), b = jail.new_canary(), c = jail.new_canary();
    jail.plant("src/m7/lib/.env", "KEY=" + a + "\n");
    jail.plant("src/m9/new/deeper/.env.local", "KEY=" + b + "\n");
    ajtest::TempDir outside("aj-walk");
    outside.write("moved/.env", "KEY=" + c + "\n");
    ASSERT_EQ(::rename((outside.path() + "/moved").c_str(), (jail.ws() + "/src/m11/moved").c_str()), 0);
    auto e = jail.run({"explain", "-C", jail.ws(), "--", "/bin/true"}, with_state(jail));
    EXPECT_TRUE(ajtest::contains(e.out, "unchanged since the last run's walk")) << describe(e);
    auto r = jail.sh("cat src/m7/lib/.env src/m9/new/deeper/.env.local src/m11/moved/.env; true", {},
                     with_state(jail));
    for (const auto& k : {a, b, c}) EXPECT_FALSE(ajtest::contains(r.out + r.err, k)) << describe(r);
    auto h = jail.host_sh("cd '" + jail.ws() + "' && cat src/m7/lib/.env src/m9/new/deeper/.env.local src/m11/moved/.env");
    for (const auto& k : {a, b, c}) EXPECT_TRUE(ajtest::contains(h.out, k)) << describe(h);
    ::unlink((jail.ws() + "/src/m11/moved/.env").c_str());
}

// A walk keeps only the names the rules could match (and git's), so a walk kept
// under other rules holds nothing of what a new rule looks for: it is not reused, and
// a file only the new rule names is hidden, deep in a directory unchanged since.
// Through the mounts (the plan's walk decides every mask) and through the view.
// Control: the file is readable under the rules that kept the walk, and the next run
// with the new rule starts from the walk the last one kept.
TEST_F(Escape, WALK04_AWalkKeptUnderOtherRulesIsNotReusedForANewRule) {
    for (const char* view : {"mounts", "fuse"}) {
        SCOPED_TRACE(view);
        const std::string k = jail.new_canary();
        jail.plant("pkg/deep/creds.secret", k + "\n");
        for (int i = 0; i < 20; ++i) jail.ws_dir().write("pkg/m" + std::to_string(i) + "/code.py", "pass\n");
        auto opts = with_state(jail);
        auto c = jail.control_sh("cat pkg/deep/creds.secret", {"--view", view}, opts);
        EXPECT_TRUE(ajtest::contains(c.out, k)) << describe(c);  // the control
        ASSERT_FALSE(kept_walks(jail).empty()) << "the first run kept no walk";
        ajtest::sleep_ms(20);
        const std::vector<std::string> rule{"--view", view, "--hide", "{workspace}/**/*.secret"};
        auto r = jail.sh("cat pkg/deep/creds.secret; true", rule, opts);
        EXPECT_FALSE(ajtest::contains(r.out + r.err, k)) << describe(r);
        std::vector<std::string> explain{"explain", "-C", jail.ws()};
        explain.insert(explain.end(), rule.begin(), rule.end());
        explain.insert(explain.end(), {"--", "/bin/true"});
        auto e = jail.run(explain, opts);
        EXPECT_TRUE(ajtest::contains(e.out, "unchanged since the last run's walk")) << describe(e);
        EXPECT_TRUE(ajtest::contains(e.out, "creds.secret")) << describe(e);
        ::unlink((jail.ws() + "/pkg/deep/creds.secret").c_str());
    }
}

// The walk keeps only the names the rules match, but another name of a hidden file
// can be any name: a .env deep in the project hard-linked as notes.txt elsewhere is
// hidden under both, on a run that starts from the last run's walk. Control: the
// second name is an ordinary readable file when it is no link.
TEST_F(Escape, WALK05_AHardLinkOfADeepHiddenFileIsHiddenWhateverItsName) {
    for (int i = 0; i < 20; ++i) jail.ws_dir().write("src/m" + std::to_string(i) + "/code.py", "pass\n");
    jail.ws_dir().write("docs/notes/notes.txt", "plain notes\n");
    auto opts = with_state(jail);
    auto c = jail.sh("cat docs/notes/notes.txt", {}, opts);
    EXPECT_TRUE(ajtest::contains(c.out, "plain notes")) << describe(c);
    ASSERT_FALSE(kept_walks(jail).empty()) << "the first run kept no walk";
    const std::string k = jail.new_canary();
    jail.plant("src/m3/.env", "KEY=" + k + "\n");
    const std::string notes = jail.ws() + "/docs/notes/notes.txt";
    ASSERT_EQ(::unlink(notes.c_str()), 0);
    ASSERT_EQ(::link((jail.ws() + "/src/m3/.env").c_str(), notes.c_str()), 0);
    for (const char* view : {"mounts", "fuse"}) {
        SCOPED_TRACE(view);
        auto r = jail.sh("cat docs/notes/notes.txt; true", {"--view", view}, opts);
        EXPECT_FALSE(ajtest::contains(r.out + r.err, k)) << describe(r);
        // Hidden, not refused: the plan found the other name (a walk of every file).
        EXPECT_EQ(r.status, 0) << describe(r);
    }
    auto e = jail.run({"explain", "-C", jail.ws(), "--", "/bin/true"}, opts);
    EXPECT_TRUE(ajtest::contains(e.out, "hard link of " + jail.ws() + "/src/m3/.env")) << describe(e);
    ::unlink(notes.c_str());
    ::unlink((jail.ws() + "/src/m3/.env").c_str());
}

// The kept walks are agentjail's, out of the sandbox's reach even where a flag binds
// the state home read-write: a walk the sandbox rewrote could make the next plan
// miss a hidden name. Control: on the host the walk is there.
TEST_F(Escape, WALK02_TheKeptWalksAreOutOfTheSandboxsReach) {
    auto first = jail.sh("true", {}, with_state(jail));
    ASSERT_EQ(first.status, 0) << describe(first);
    auto names = kept_walks(jail);
    ASSERT_EQ(names.size(), 1u);
    const std::string dir = walk_state(jail) + "/agentjail/scans";
    auto r = jail.sh("ls '" + dir + "' 2>&1; echo x > '" + dir + "/" + names[0] + "' && echo WROTE; "
                     "echo x > '" + dir + "/other' && echo MADE; true",
                     {"--rw", walk_state(jail)}, with_state(jail));
    EXPECT_FALSE(ajtest::contains(r.out, names[0])) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "WROTE")) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "MADE")) << describe(r);
    EXPECT_EQ(kept_walks(jail), names);
    // Control: the state home itself was writable inside.
    auto c = jail.sh("echo x > '" + walk_state(jail) + "/probe' && echo MADE", {"--rw", walk_state(jail)},
                     with_state(jail));
    EXPECT_TRUE(ajtest::contains(c.out, "MADE")) << describe(c);
}

// A kept walk that is not agentjail's own (open to others, or a link) is not used,
// and explain says why; the walk is then made whole and a key is hidden. Control:
// the run's own walk is used (explain says nothing of it).
TEST_F(Escape, WALK03_AKeptWalkOpenToOthersIsNotUsed) {
    jail.ws_dir().write("deep/er/code.py", "pass\n");
    auto first = jail.sh("true", {}, with_state(jail));
    ASSERT_EQ(first.status, 0) << describe(first);
    auto names = kept_walks(jail);
    ASSERT_EQ(names.size(), 1u);
    const std::string file = walk_state(jail) + "/agentjail/scans/" + names[0];
    auto opts = with_state(jail);
    auto e0 = jail.run({"explain", "-C", jail.ws(), "--", "/bin/true"}, opts);
    EXPECT_FALSE(ajtest::contains(e0.out + e0.err, "walked whole")) << describe(e0);
    ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
    auto e = jail.run({"explain", "-C", jail.ws(), "--", "/bin/true"}, opts);
    EXPECT_TRUE(ajtest::contains(e.out + e.err, "walked whole")) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.out + e.err, "readable or writable by others")) << describe(e);
    const std::string k = jail.new_canary();
    jail.plant("deep/er/.env", "KEY=" + k + "\n");
    auto r = jail.sh("cat deep/er/.env; true", {}, opts);
    EXPECT_FALSE(ajtest::contains(r.out + r.err, k)) << describe(r);
}

// agentjail's configuration directory (config.toml, your policies, the kept secrets)
// is out of the sandbox's reach whatever binds the directory above it: a sandbox that
// wrote config.toml would set the defaults of every later run (`rw = ["/"]`). Control:
// the directory beside it, under the same bind, is written.
TEST_F(Escape, CFG01_TheConfigurationCannotBeWrittenFromInside) {
    ajtest::TempDir config("aj-cfg01");
    config.mkdir("agentjail");
    config.write("agentjail/config.toml", "env = [\"MINE=1\"]\n");
    ajtest::RunOptions o;
    o.env = {"XDG_CONFIG_HOME=" + config.path()};
    const std::string file = config.path() + "/agentjail/config.toml";
    for (const char* policy : {"default", "minimal"}) {
        SCOPED_TRACE(policy);
        auto r = jail.sh("cat '" + file + "' 2>/dev/null; echo 'rw = [\"/\"]' >> '" + file + "' && echo WROTE; "
                         "mkdir -p '" + config.path() + "/agentjail/policies' 2>/dev/null && echo MADE; "
                         "echo x > '" + config.path() + "/other' && echo BESIDE",
                         {"-p", policy, "--rw", config.path()}, o);
        EXPECT_FALSE(ajtest::contains(r.out, "MINE")) << describe(r);
        EXPECT_FALSE(ajtest::contains(r.out, "WROTE")) << describe(r);
        EXPECT_FALSE(ajtest::contains(r.out, "MADE")) << describe(r);
        EXPECT_TRUE(ajtest::contains(r.out, "BESIDE")) << describe(r);
    }
    EXPECT_EQ(ajtest::read_file(file), "env = [\"MINE=1\"]\n");
}

// Links toward a protected directory (.git/hooks), absolute and relative: a hook
// written through either does not land.
TEST_F(Escape, ADV2_LinksToTheProtectedHooksDirectoryCannotPlant) {
    ASSERT_EQ(jail.host_sh("cd '" + jail.ws() + "' && git init -q . && echo ok").out, "ok\n");
    ASSERT_EQ(::symlink((jail.ws() + "/.git/hooks").c_str(), (jail.ws() + "/h-abs").c_str()), 0);
    ASSERT_EQ(::symlink(".git/hooks", (jail.ws() + "/h-rel").c_str()), 0);
    auto r = jail.sh(
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > h-abs/pre-commit; echo abs=$?; "
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > h-rel/post-checkout; echo rel=$?; "
        "mkdir h-rel/x 2>/dev/null; echo mk=$?");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_NE(field(r.out, "abs"), "0") << describe(r);
    EXPECT_NE(field(r.out, "rel"), "0") << describe(r);
    EXPECT_NE(field(r.out, "mk"), "0") << describe(r);
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/.git/hooks/pre-commit"));
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/.git/hooks/post-checkout"));
    // Control: a link to an ordinary directory is written through.
    jail.ws_dir().mkdir("plain");
    ASSERT_EQ(::symlink("plain", (jail.ws() + "/p-rel").c_str()), 0);
    auto c = jail.sh("echo x > p-rel/f && echo OK");
    EXPECT_TRUE(ajtest::contains(c.out, "OK")) << describe(c);
}

// A hard link the host made of .git/config (cp -l, a backup tool): writing the other
// name would change the config git executes from.
TEST_F(Escape, ADV2_HardLinkOfTheGitConfigIsReadOnlyToo) {
    ASSERT_EQ(jail.host_sh("cd '" + jail.ws() + "' && git init -q . && echo ok").out, "ok\n");
    const std::string cfg = jail.ws() + "/.git/config";
    const std::string before = ajtest::read_file(cfg);
    ASSERT_EQ(::link(cfg.c_str(), (jail.ws() + "/config.bak").c_str()), 0);
    auto r =
        jail.sh("printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> config.bak; echo w=$?");
    EXPECT_NE(field(r.out, "w"), "0") << describe(r);
    EXPECT_EQ(ajtest::read_file(cfg), before) << "the config changed through its other name";
    // Control: on the host the other name does write the config.
    auto c = jail.host_sh("echo '# host' >> '" + jail.ws() + "/config.bak'");
    EXPECT_EQ(c.status, 0) << describe(c);
    EXPECT_NE(ajtest::read_file(cfg), before);
}

// A protected name absent at the start (.mcp.json: MCP servers the user's agent
// starts) cannot be put in place by a link, a hard link or a rename from inside, and
// nothing is left there after the run.
TEST_F(Escape, ADV2_AbsentProtectedNameCannotBeLinkedIntoPlace) {
    auto r = jail.sh(
        "echo '{\"mcpServers\":{\"x\":{\"command\":\"/tmp/evil\"}}}' > mine.json; "
        "ln -s mine.json .mcp.json 2>/dev/null; echo sym=$?; "
        "ln -sf \"$PWD/mine.json\" .mcp.json 2>/dev/null; echo symf=$?; "
        "ln mine.json .mcp.json 2>/dev/null; echo hard=$?; "
        "mv -f mine.json .mcp.json 2>/dev/null; echo mv=$?; "
        "ln -s mine.json other.json; echo control=$?");
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* k : {"sym", "symf", "hard", "mv"})
        EXPECT_NE(field(r.out, k), "0") << k << "\n" << describe(r);
    EXPECT_EQ(field(r.out, "control"), "0") << describe(r);
    struct stat st {};
    EXPECT_NE(::lstat((jail.ws() + "/.mcp.json").c_str(), &st), 0)
        << "something was left at .mcp.json";
}

// A hidden name absent at the start that the host creates during the run (the user
// pastes a key into a new .env while the agent works): it must stay out of reach.
// Through the view (direct mode's default) each name is judged at its lookup, so it
// holds, in a folder the host makes during the run too; the mounts view (--view
// mounts) resolves hide rules at start and cannot hold it without a window (issue 26,
// advisory 2; Escape.VIEW02 is the view's own variant). Control: a plain name the
// host makes at the same moment, in the same new folder, is seen inside.
TEST_F(Escape, ADV2_HiddenNameCreatedOnTheHostDuringTheRunIsHidden) {
    const std::string fresh = jail.new_canary();
    LiveRun r = start(jail,
                      "cat .env.production; echo env=$?; cat deploy/id_ed25519; echo key=$?; "
                      "echo found=$(find . -name '.env.production' -o -name 'id_ed25519' | wc -l); "
                      "cat deploy/README");
    ASSERT_TRUE(ready(r));
    host("printf 'API_KEY=" + fresh + "\\n' > .env.production && mkdir deploy && echo " + fresh +
             " > deploy/id_ed25519 && echo readme-" + fresh.substr(0, 4) + " > deploy/README",
         r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "env"), "1") << describe(out);
    EXPECT_EQ(field(out.out, "key"), "1") << describe(out);
    EXPECT_EQ(field(out.out, "found"), "0") << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, fresh)) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "readme-" + fresh.substr(0, 4))) << "control: a plain new name\n"
                                                                          << describe(out);
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(r.ws + "/.env.production"), fresh)) << "the host did not write it";
    // The host's own secrets go before the sweep looks for canaries in the workspace.
    host("rm -rf .env.production deploy", r.ws);
}

// ---- ADV3: what agentjail writes on the host is private ---------------------------

// Runs f with the process umask set to mask (the launcher and all it makes inherit it).
template <class F>
auto with_umask(mode_t mask, F f) {
    mode_t old = ::umask(mask);
    auto r = f();
    ::umask(old);
    return r;
}

// The result file holds the run's command line, paths and refusals: 0600, whatever
// the umask, and never readable by others.
TEST_F(Escape, ADV3_ResultFileIsPrivate) {
    ajtest::TempDir out("aj-adv-out");
    ::chmod(out.path().c_str(), 0755);  // a directory others may enter (a shared $TMPDIR)
    const std::string file = out.path() + "/result.json";
    for (mode_t mask : {mode_t(022), mode_t(0)}) {
        ::unlink(file.c_str());
        auto r = with_umask(mask, [&] {
            return jail.run(cat(jail.base(), {"--result-file", file, "--", "/bin/true"}));
        });
        ASSERT_EQ(r.status, 0) << describe(r);
        EXPECT_EQ(mode_of(file), 0600u)
            << "umask " << octal(mask) << ": the result file is " << octal(mode_of(file));
    }
    // Control: a file made plainly under the same umask is readable by others.
    auto c = with_umask(022, [&] {
        return ajtest::run({"/bin/sh", "-c", "echo x > '" + out.path() + "/plain'"});
    });
    EXPECT_EQ(c.status, 0);
    EXPECT_EQ(mode_of(out.path() + "/plain"), 0644u);
}

// The seccomp and network logs (host names, paths, refused calls), under umask 0.
TEST_F(Escape, ADV3_LogsArePrivateUnderAnOpenUmask) {
    ajtest::TempDir out("aj-adv-out");
    ::chmod(out.path().c_str(), 0755);
    const std::string slog = out.path() + "/seccomp.jsonl", nlog = out.path() + "/net.jsonl";
    auto r = with_umask(0, [&] {
        return jail.run(cat(jail.base(), {"--seccomp-log", slog, "--net", "proxy", "--net-log",
                                          nlog, "--", ajtest::helper("sysprobe"), "three"}));
    });
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(mode_of(slog), 0600u) << octal(mode_of(slog));
    EXPECT_EQ(mode_of(nlog), 0600u) << octal(mode_of(nlog));
    EXPECT_NE(ajtest::read_file(slog), "") << "control: the log was written";
}

// Every directory and file agentjail makes in its state (run state of overlay and
// clone runs, the agent's state, the placeholder key, the journals and locks) is
// 0700 or 0600 under umask 0, and a file of its own is never reachable by others.
TEST_F(Escape, ADV3_StateDirectoriesAndFilesArePrivate) {
    ASSERT_EQ(ajtest::make_user_repo(jail.ws()), "");
    StateHome state;
    auto o = state.opts();
    o.env.push_back("AJ_ADV_SECRET=" + jail.new_canary());
    with_umask(0, [&] {
        for (const char* mode : {"overlay", "clone"}) {
            auto r = jail.sh("echo x > new-file", {"--workspace-mode", mode}, o);
            EXPECT_EQ(r.status, 0) << mode << "\n" << describe(r);
        }
        auto a = jail.run({"-C", jail.ws(), "--policy", "claude", "--secret",
                           "ADV_TOKEN=env:AJ_ADV_SECRET@example.test", "--", "/bin/true"},
                          o);
        EXPECT_EQ(a.status, 0) << describe(a);
        return 0;
    });
    // What agentjail itself makes: the tree down to each run and agent state, and
    // the files at those levels (the sandbox's own files below are its business,
    // behind these directories).
    auto found =
        ajtest::run({"/usr/bin/find", state.aj(), "-maxdepth", "3", "-printf", "%m %y %P\\n"});
    ASSERT_EQ(found.status, 0) << describe(found);
    size_t checked = 0;
    for (const auto& l : ajtest::lines(found.out)) {
        auto w = words(l);
        if (w.size() < 2 || w[1] == "l") continue;
        const std::string rel = w.size() > 2 ? w[2] : "";
        // start.index and clone/ are git's, inside a 0700 run directory.
        if (rel.find("/clone") != std::string::npos || rel.find("start.index") != std::string::npos)
            continue;
        const unsigned m = static_cast<unsigned>(std::strtoul(w[0].c_str(), nullptr, 8));
        EXPECT_EQ(m & 077u, 0u) << "agentjail/" << rel << " is " << w[0];
        ++checked;
    }
    EXPECT_EQ(mode_of(state.aj()), 0700u);
    EXPECT_EQ(mode_of(state.aj() + "/placeholder.key"), 0600u);
    EXPECT_GE(checked, 10u) << "control: the state holds the runs and the agent's state\n"
                            << found.out;
}

// The CA bundle of a run with TLS interception (here for a secret's host) lies in a
// fresh directory of its own under $TMPDIR (often shared): 0700 and the caller's, so
// nobody else can read or replace what the sandbox trusts; gone after the run.
TEST_F(Escape, ADV3_CaDirectoryIsPrivate) {
    const char* t = std::getenv("TMPDIR");
    const std::string tmp = t != nullptr && *t == '/' ? t : "/tmp";
    auto ca_dirs = [&] {
        std::set<std::string> out;
        for (const auto& n : ajtest::dir_entries(tmp))
            if (n.rfind("agentjail-ca-", 0) == 0) out.insert(n);
        return out;
    };
    const auto before = ca_dirs();
    ajtest::RunOptions o;
    o.timeout_ms = 60000;
    o.env = {"HOME=" + jail.home(), "AJ_ADV_SECRET=" + jail.new_canary()};
    std::vector<std::string> argv = {ajtest::agentjail_bin()};
    for (const auto& a : jail.base()) argv.push_back(a);
    for (const auto& a :
         std::vector<std::string>{"--net", "proxy", "--secret",
                                  "ADV_TOKEN=env:AJ_ADV_SECRET@example.test", "--", "/bin/sh", "-c",
                                  "touch ready; i=0; while [ ! -e looked ] && [ $i -lt 1000 ]; do "
                                  "sleep 0.01; i=$((i+1)); done"})
        argv.push_back(a);
    ajtest::Child child(argv, o);
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/ready", 30000));
    std::vector<std::pair<std::string, struct stat>> seen;
    for (const auto& n : ca_dirs()) {
        if (before.count(n)) continue;
        struct stat st {};
        if (::lstat((tmp + "/" + n).c_str(), &st) == 0) seen.emplace_back(tmp + "/" + n, st);
    }
    ::close(::open((jail.ws() + "/looked").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    auto r = child.wait(60000);
    jail.record(r);
    ASSERT_EQ(r.status, 0) << describe(r);
    ASSERT_FALSE(seen.empty()) << "control: no CA directory appeared in " << tmp
                               << " during the run";
    for (const auto& [dir, st] : seen) {
        EXPECT_TRUE(S_ISDIR(st.st_mode)) << dir;
        if (st.st_uid != ::geteuid()) continue;  // another user's run, beside this one
        EXPECT_EQ(st.st_mode & 07777, 0700u) << dir << " is " << octal(st.st_mode & 07777);
    }
}

// ---- ADV7: the workspace's own dev, proc and sys in overlay and clone modes --------

// dev, proc and sys at the workspace's top, as links to host places (absolute and
// relative), committed so clone mode has them too: the sandbox's /dev, /proc and /sys
// are still its own, what is written through the links lands nowhere on the host,
// and the links are only links.
void expect_dev_links_inert(ajtest::Jail& jail, const std::string& mode) {
    ajtest::TempDir outside("aj-adv-out");
    StateHome state;
    ASSERT_EQ(::symlink(outside.path().c_str(), (jail.ws() + "/dev").c_str()), 0);
    ASSERT_EQ(::symlink("/proc/1/root", (jail.ws() + "/proc").c_str()), 0);
    ASSERT_EQ(
        ::symlink(("../" + beside(outside.path()).substr(3)).c_str(), (jail.ws() + "/sys").c_str()),
        0);
    auto g = jail.host_sh("cd '" + jail.ws() +
                          "' && git add dev proc sys && git -c user.name=u -c user.email=u@x "
                          "-c commit.gpgsign=false commit -qm links && echo ok");
    ASSERT_EQ(g.out, "ok\n") << describe(g);
    auto r = jail.sh(helper("trysys") + " statfs /proc; " + helper("trysys") +
                         " lstat /dev/null; "
                         "ls /dev | tr '\\n' ' '; echo; readlink dev proc sys; "
                         "echo x > dev/planted; echo devw=$?; echo x > sys/planted; echo sysw=$?; "
                         "ls proc/ 2>&1 | head -3; true",
                     {"--workspace-mode", mode}, state.opts());
    ASSERT_EQ(r.status, 0) << mode << "\n" << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "9fa0")) << mode << ": /proc is not a procfs\n"
                                                 << r.out;  // PROC_SUPER_MAGIC
    EXPECT_TRUE(ajtest::contains(r.out, "type chr rdev 1:3"))
        << mode << ": /dev/null is not the null device\n"
        << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, " sda")) << r.out;
    EXPECT_EQ(listing(outside.path()), "")
        << mode << ": a write through the workspace's link reached the host";
    // Control: the links were there, inside, as links to those places.
    EXPECT_TRUE(ajtest::contains(r.out, outside.path() + "\n/proc/1/root\n"))
        << mode << "\n"
        << r.out;  // The sweep of the workspace after the test would follow them.
    for (const char* n : {"dev", "proc", "sys"}) ::unlink((jail.ws() + "/" + n).c_str());
}

TEST_F(Escape, ADV7_OverlayModeWorkspaceDevProcSysLinksRedirectNothing) {
    ASSERT_EQ(ajtest::make_user_repo(jail.ws()), "");
    expect_dev_links_inert(jail, "overlay");
}

TEST_F(Escape, ADV7_CloneModeWorkspaceDevProcSysLinksRedirectNothing) {
    ASSERT_EQ(ajtest::make_user_repo(jail.ws()), "");
    expect_dev_links_inert(jail, "clone");
}

}  // namespace
