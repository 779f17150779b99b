// SPDX-License-Identifier: Apache-2.0
// Unit tests of the plan's mount list: shapes, order, symlinked system dirs,
// missing paths, the workspace rules, hide rules (deny wins) and mount points.
#include "test_plan_fixture.hpp"

#include "plan/host_view.hpp"
#include "util/strings.hpp"

#include <sys/stat.h>

using namespace ajplantest;
namespace plan = agentjail::plan;
using agentjail::ErrorKind;
using agentjail::policy::WorkspaceAccess;

namespace {

// Ops are ordered by depth of dst, masks last (also by depth).
void expect_ordered(const Plan& p) {
    auto depth = [](const std::string& s) {
        int n = 0;
        for (size_t i = 0; i < s.size(); ++i)
            if (s[i] != '/' && (i == 0 || s[i - 1] == '/')) ++n;
        return n;
    };
    bool in_masks = false;
    int last = -1;
    for (const auto& op : p.mounts) {
        bool mask = op.kind == MountKind::mask_dir || op.kind == MountKind::mask_file;
        if (mask && !in_masks) {
            in_masks = true;
            last = -1;
        }
        EXPECT_EQ(mask, in_masks) << "a non-mask op after a mask: " << op.dst;
        EXPECT_GE(depth(op.dst), last) << "out of depth order: " << op.dst;
        last = depth(op.dst);
    }
}

}  // namespace

TEST(PlanMounts, MinimalShape) {
    PlanTree t;
    auto r = plan::build(t.minimal(), {"tool"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const Plan& p = *r;
    SCOPED_TRACE(dump_mounts(p));
    expect_ordered(p);

    const MountOp* usr = find_op(p, t.sys("usr"));
    ASSERT_NE(usr, nullptr);
    EXPECT_EQ(usr->kind, MountKind::bind);
    EXPECT_EQ(usr->src, t.sys("usr"));
    EXPECT_TRUE(usr->read_only);
    EXPECT_TRUE(usr->is_dir);
    EXPECT_NE(usr->why.find("minimal.toml:4:9"), std::string::npos) << usr->why;

    // bin -> usr/bin: the link itself, and no extra bind since /usr covers it.
    const MountOp* bin = find_op(p, t.sys("bin"));
    ASSERT_NE(bin, nullptr);
    EXPECT_EQ(bin->kind, MountKind::symlink);
    EXPECT_EQ(bin->src, "usr/bin");
    EXPECT_EQ(find_op(p, t.sys("usr/bin")), nullptr);
    ASSERT_NE(find_op(p, t.sys("lib64")), nullptr);
    EXPECT_EQ(find_op(p, t.sys("lib64"))->kind, MountKind::symlink);
    EXPECT_TRUE(
        has_note(p, "skipped " + t.sys("lib32") + " (missing, optional: minimal.toml:5:30"));

    const MountOp* tmp = find_op(p, "/tmp");
    ASSERT_NE(tmp, nullptr);
    EXPECT_EQ(tmp->kind, MountKind::tmpfs);
    EXPECT_EQ(tmp->mode, 01777u);
    EXPECT_EQ(tmp->size_bytes, 1024ull * 1024 * 1024);
    EXPECT_FALSE(tmp->read_only);

    ASSERT_NE(find_op(p, "/proc"), nullptr);
    EXPECT_EQ(find_op(p, "/proc")->kind, MountKind::proc);
    const MountOp* dev = find_op(p, "/dev");
    ASSERT_NE(dev, nullptr);
    EXPECT_EQ(dev->kind, MountKind::tmpfs);
    EXPECT_EQ(dev->mode, 0755u);
    EXPECT_LE(dev->size_bytes, 16ull * 1024 * 1024);
    const MountOp* null = find_op(p, "/dev/null");
    ASSERT_NE(null, nullptr);
    EXPECT_EQ(null->kind, MountKind::bind);
    EXPECT_EQ(null->src, "/dev/null");
    // Read-only: the node still reads and writes, but root inside (uid 0 outside)
    // cannot chmod, chown or touch the host's inode through it.
    EXPECT_TRUE(null->read_only);
    EXPECT_FALSE(null->is_dir);
    EXPECT_GT(index_of(p, "/dev/null"), index_of(p, "/dev"));
    ASSERT_NE(find_op(p, "/dev/pts"), nullptr);
    EXPECT_EQ(find_op(p, "/dev/pts")->kind, MountKind::devpts);
    const std::pair<const char*, const char*> links[] = {{"/dev/ptmx", "pts/ptmx"},
                                                         {"/dev/fd", "/proc/self/fd"},
                                                         {"/dev/stdin", "/proc/self/fd/0"},
                                                         {"/dev/stdout", "/proc/self/fd/1"},
                                                         {"/dev/stderr", "/proc/self/fd/2"}};
    for (const auto& [dst, target] : links) {
        const MountOp* l = find_op(p, dst);
        ASSERT_NE(l, nullptr) << dst;
        EXPECT_EQ(l->kind, MountKind::symlink) << dst;
        EXPECT_EQ(l->src, target) << dst;
    }
    const MountOp* shm = find_op(p, "/dev/shm");
    ASSERT_NE(shm, nullptr);
    EXPECT_EQ(shm->mode, 01777u);
    EXPECT_EQ(shm->size_bytes, 64ull * 1024 * 1024);

    // No workspace, no private home: nothing at the home path, cwd "/".
    EXPECT_TRUE(p.workspace.empty());
    EXPECT_EQ(find_op(p, t.home()), nullptr);
    EXPECT_EQ(find_op(p, t.proj()), nullptr);
    EXPECT_EQ(p.cwd, "/");
    EXPECT_EQ(p.home, t.home());
    EXPECT_EQ(p.policy_name, "minimal");
    EXPECT_EQ(p.layers, std::vector<std::string>{"minimal"});
}

TEST(PlanMounts, DefaultShape) {
    PlanTree t;
    auto r = plan::build(t.defaults(), {"tool"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const Plan& p = *r;
    SCOPED_TRACE(dump_mounts(p));
    expect_ordered(p);

    EXPECT_EQ(p.workspace, t.proj());
    EXPECT_EQ(p.cwd, t.proj());
    const MountOp* home = find_op(p, t.home());
    ASSERT_NE(home, nullptr);
    EXPECT_EQ(home->kind, MountKind::tmpfs);
    EXPECT_EQ(home->mode, 0700u);
    EXPECT_EQ(home->size_bytes, 256ull * 1024 * 1024);
    EXPECT_EQ(env_of(p, "HOME"), t.home());

    const MountOp* ws = find_op(p, t.proj());
    ASSERT_NE(ws, nullptr);
    EXPECT_EQ(ws->kind, MountKind::bind);
    EXPECT_EQ(ws->src, t.proj());
    EXPECT_FALSE(ws->read_only);
    EXPECT_GT(index_of(p, t.proj()), index_of(p, t.home()));

    // .env and .env.local are shown by the workspace bind: masked, last.
    for (const char* name : {"/.env", "/.env.local"}) {
        const MountOp* m = find_op(p, t.proj() + name);
        ASSERT_NE(m, nullptr) << name;
        EXPECT_EQ(m->kind, MountKind::mask_file);
        EXPECT_TRUE(m->read_only);
        EXPECT_NE(m->why.find("default.toml:31:5"), std::string::npos) << m->why;
    }
    EXPECT_EQ(p.mounts.back().kind, MountKind::mask_file);
    // ~/.ssh is not visible at all (the home is an empty tmpfs): no op needed.
    EXPECT_EQ(find_op(p, t.home() + "/.ssh"), nullptr);
    for (const auto& op : p.mounts)
        EXPECT_FALSE(agentjail::util::path_within(op.src, t.home() + "/.ssh")) << op.dst;
}

TEST(PlanMounts, OrderIsByDepthWhateverTheRuleOrder) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.clear();
    pol.rw.push_back(MountRule{t.p("data/dir"), "", false, flag("--rw")});
    pol.ro.push_back(MountRule{t.p("data"), "", false, flag("--ro")});
    pol.ro.push_back(MountRule{t.sys("usr"), "", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    expect_ordered(*r);
    EXPECT_LT(index_of(*r, "/tmp"), index_of(*r, t.p("data")));
    EXPECT_LT(index_of(*r, t.p("data")), index_of(*r, t.p("data/dir")));
    EXPECT_LT(index_of(*r, "/dev"), index_of(*r, "/dev/null"));
    EXPECT_FALSE(find_op(*r, t.p("data/dir"))->read_only);
    EXPECT_TRUE(find_op(*r, t.p("data"))->read_only);
}

TEST(PlanMounts, SymlinkedSystemDirWithoutCoveringBind) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.clear();
    pol.ro.push_back(MountRule{t.sys("lib64"), "", false, at("a.toml", 1, 1, "filesystem.ro[0]")});
    pol.rw.push_back(MountRule{t.sys("bin"), "", false, at("a.toml", 2, 1, "filesystem.rw[0]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    const MountOp* link = find_op(*r, t.sys("lib64"));
    ASSERT_NE(link, nullptr);
    EXPECT_EQ(link->kind, MountKind::symlink);
    EXPECT_EQ(link->src, "usr/lib64");
    const MountOp* target = find_op(*r, t.sys("usr/lib64"));
    ASSERT_NE(target, nullptr);
    EXPECT_EQ(target->kind, MountKind::bind);
    EXPECT_EQ(target->src, t.sys("usr/lib64"));
    EXPECT_TRUE(target->read_only);
    // Same access as the rule: the rw rule's target is bound rw.
    ASSERT_NE(find_op(*r, t.sys("usr/bin")), nullptr);
    EXPECT_FALSE(find_op(*r, t.sys("usr/bin"))->read_only);
}

TEST(PlanMounts, DerivedBindKeptWhenTheCoveringBindHasOtherAccess) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.clear();
    pol.ro.push_back(MountRule{t.sys("usr"), "", false, flag("--ro")});
    pol.rw.push_back(MountRule{t.sys("bin"), "", false, flag("--rw")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const MountOp* b = find_op(*r, t.sys("usr/bin"));
    ASSERT_NE(b, nullptr) << dump_mounts(*r);
    EXPECT_FALSE(b->read_only);
    EXPECT_GT(index_of(*r, t.sys("usr/bin")), index_of(*r, t.sys("usr")));
}

TEST(PlanMounts, BindAtAnotherPathUsesTheCanonicalSource) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.push_back(MountRule{t.sys("bin"), "/opt/tools", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const MountOp* b = find_op(*r, "/opt/tools");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->kind, MountKind::bind);
    EXPECT_EQ(b->src, t.sys("usr/bin"));
}

TEST(PlanMounts, RequiredMissingPathNamesItsOrigin) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.push_back(MountRule{t.p("nope"), "", false, at("my.toml", 7, 11, "filesystem.ro[5]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
    EXPECT_NE(r.error().message().find("my.toml:7:11"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(t.p("nope") + " does not exist"), std::string::npos)
        << r.error().message();
}

TEST(PlanMounts, OptionalMissingPathIsANote) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.push_back(
        MountRule{t.p("nope/deeper"), "", true, at("my.toml", 7, 11, "filesystem.ro[5]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(
        has_note(*r, "skipped " + t.p("nope/deeper") + " (missing, optional: my.toml:7:11"));
    EXPECT_EQ(find_op(*r, t.p("nope/deeper")), nullptr);
}

TEST(PlanMounts, DanglingSymlinkCountsAsMissing) {
    PlanTree t;
    symlink("does-not-exist", t.p("dangling").c_str());
    Policy pol = t.minimal();
    pol.ro.push_back(
        MountRule{t.p("dangling"), "", false, at("my.toml", 3, 1, "filesystem.ro[5]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("my.toml:3:1"), std::string::npos) << r.error().message();
}

TEST(PlanMounts, RelativeOrUserTildePathsAreRefused) {
    PlanTree t;
    for (const char* bad : {"relative/path", "~root/x"}) {
        Policy pol = t.minimal();
        pol.ro.push_back(MountRule{bad, "", false, at("my.toml", 2, 2, "filesystem.ro[9]")});
        auto r = plan::build(pol, {"/x"}, t.host());
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
        EXPECT_NE(r.error().message().find("my.toml:2:2"), std::string::npos)
            << r.error().message();
    }
}

TEST(PlanMounts, PlaceholdersExpand) {
    PlanTree t;
    t.tmp.mkdir("tmpdir/cache");
    t.tmp.mkdir("home/u/.cache/pip");
    Policy pol = t.defaults();
    pol.rw.push_back(MountRule{"~/.cache/pip", "", false, flag("--rw")});
    pol.ro.push_back(MountRule{"{tmp}/cache", "{workspace}/src", false, flag("--ro")});
    pol.tmpfs.push_back(TmpfsRule{"{workspace}/build", 512ull << 20, flag("--tmpfs")});
    t.tmp.mkdir("home/u/proj/build");
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    ASSERT_NE(find_op(*r, t.home() + "/.cache/pip"), nullptr);
    const MountOp* src = find_op(*r, t.proj() + "/src");
    ASSERT_NE(src, nullptr);
    EXPECT_EQ(src->src, t.p("tmpdir/cache"));
    const MountOp* build = find_op(*r, t.proj() + "/build");
    ASSERT_NE(build, nullptr);
    EXPECT_EQ(build->kind, MountKind::tmpfs);
    EXPECT_EQ(build->size_bytes, 512ull << 20);
    EXPECT_EQ(build->mode, 0755u);
}

TEST(PlanMounts, WorkspacePlaceholderWithoutWorkspaceIsAnError) {
    PlanTree t;
    Policy pol = t.minimal();  // workspace = none
    pol.ro.push_back(
        MountRule{"{workspace}/src", "", false, at("my.toml", 4, 4, "filesystem.ro[5]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("my.toml:4:4"), std::string::npos);
    EXPECT_NE(r.error().message().find("no workspace"), std::string::npos) << r.error().message();
}

// --- the workspace ---------------------------------------------------------

TEST(PlanWorkspace, RefusesRootHomeAndParentsOfHome) {
    PlanTree t;
    const std::pair<std::string, std::string> cases[] = {
        {"/", "is the root directory"},
        {t.home(),
         "is the home directory: a workspace is a project, not a home; cd into the "
         "project or name it with -C DIR"},
        {t.p("home"), "a parent of the home directory"},
        {t.tmp.path(), "a parent of the home directory"},
    };
    for (const auto& [dir, words] : cases) {
        HostFacts h = t.host();
        h.cwd = dir;
        auto r = plan::build(t.defaults(), {"/x"}, h);
        ASSERT_FALSE(r) << dir;
        EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
        EXPECT_NE(r.error().message().find("workspace " + dir + " "), std::string::npos)
            << r.error().message();
        EXPECT_NE(r.error().message().find(words), std::string::npos) << r.error().message();
    }
    // Also when -C names it without making it explicit (e.g. an API default).
    Policy pol = t.defaults();
    pol.workspace_path = agentjail::policy::Located<std::string>{t.home(), flag("-C")};
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("command line"), std::string::npos) << r.error().message();
}

TEST(PlanWorkspace, ExplicitHomeIsAcceptedAndSecretsStayHidden) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.workspace_path = agentjail::policy::Located<std::string>{t.home(), flag("-C")};
    pol.workspace_explicit = true;
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const Plan& p = *r;
    SCOPED_TRACE(dump_mounts(p));
    expect_ordered(p);
    EXPECT_EQ(p.workspace, t.home());
    const MountOp* ws = find_op(p, t.home());
    ASSERT_NE(ws, nullptr);
    EXPECT_EQ(ws->kind, MountKind::bind);  // replaces the private home tmpfs
    EXPECT_FALSE(ws->read_only);
    EXPECT_TRUE(has_note(p, "replaces tmpfs " + t.home()));
    const MountOp* ssh = find_op(p, t.home() + "/.ssh");
    ASSERT_NE(ssh, nullptr);
    EXPECT_EQ(ssh->kind, MountKind::mask_dir);
    EXPECT_NE(ssh->why.find("default.toml:30:5"), std::string::npos);
    ASSERT_NE(find_op(p, t.home() + "/.aws"), nullptr);
    EXPECT_EQ(find_op(p, t.home() + "/.aws")->kind, MountKind::mask_dir);
    // ~/.gnupg does not exist: nothing to mask.
    EXPECT_EQ(find_op(p, t.home() + "/.gnupg"), nullptr);
    // {workspace}/.env* now means ~/.env*: none there, and proj/.env is not matched.
    EXPECT_EQ(find_op(p, t.proj() + "/.env"), nullptr);
}

TEST(PlanWorkspace, ExplicitRootIsAcceptedAndSecretsStayHidden) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.ro.clear();
    pol.tmpfs.clear();
    pol.workspace = {WorkspaceAccess::ro, flag("--ro-workspace")};
    pol.workspace_path = agentjail::policy::Located<std::string>{"/", flag("-C")};
    pol.workspace_explicit = true;
    // With a private home the tmpfs would already hide ~/.ssh; without it only
    // the mask stands between the command and the keys.
    pol.private_home = {false, {}};
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    ASSERT_FALSE(r->mounts.empty());
    EXPECT_EQ(r->mounts.front().dst, "/");
    EXPECT_TRUE(r->mounts.front().read_only);
    const MountOp* ssh = find_op(*r, t.home() + "/.ssh");
    ASSERT_NE(ssh, nullptr);
    EXPECT_EQ(ssh->kind, MountKind::mask_dir);
}

TEST(PlanWorkspace, MissingOrNotADirectory) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.workspace_path = agentjail::policy::Located<std::string>{t.p("gone"), flag("-C")};
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("command line"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("does not exist"), std::string::npos) << r.error().message();

    pol.workspace_path = agentjail::policy::Located<std::string>{t.p("data/file"), flag("-C")};
    r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("is not a directory"), std::string::npos)
        << r.error().message();
}

TEST(PlanWorkspace, CanonicalisedAndRelativeToCwd) {
    PlanTree t;
    symlink(t.proj().c_str(), t.p("link-to-proj").c_str());
    HostFacts h = t.host();
    h.cwd = t.p("data");
    Policy pol = t.defaults();
    pol.workspace_path = agentjail::policy::Located<std::string>{"../link-to-proj", flag("-C")};
    auto r = plan::build(pol, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->workspace, t.proj());
    ASSERT_NE(find_op(*r, t.proj()), nullptr);
}

TEST(PlanWorkspace, NoneMeansNoBind) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.workspace = {WorkspaceAccess::none, {}};
    HostFacts h = t.host();
    h.cwd = "/";  // would be refused as a workspace; irrelevant with none
    auto r = plan::build(pol, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->workspace.empty());
    EXPECT_EQ(find_op(*r, t.proj()), nullptr);
    EXPECT_EQ(r->cwd, "/");
}

TEST(PlanWorkspace, ReadOnly) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.workspace = {WorkspaceAccess::ro, {}};
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_NE(find_op(*r, t.proj()), nullptr);
    EXPECT_TRUE(find_op(*r, t.proj())->read_only);
}

// The planner's view of the host: a name a host action makes answers as what it
// will be (never a link, even where the host has one now), through the user's own
// links above it; everything else is the host's answer.
TEST(HostView, NamesAHostActionMakesAnswerAsTheyWillBe) {
    ajtest::TempDir t;
    t.mkdir("real");
    ASSERT_EQ(::symlink((t.path() + "/real").c_str(), (t.path() + "/state").c_str()), 0);
    t.write("real/other", "x");
    plan::HostView view;
    const std::string dir = t.path() + "/state/agentjail";
    view.will_make(dir, true);
    view.will_make(dir + "/settings.json", false);
    struct stat st {};
    ASSERT_EQ(view.lstat(dir, st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    ASSERT_EQ(view.stat(dir + "/settings.json", st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(view.canonical(dir + "/settings.json"), t.path() + "/real/agentjail/settings.json");
    EXPECT_TRUE(view.makes(t.path() + "/real/agentjail"));  // by its canonical name too
    // Below it, a name no action makes is not there (the host has none).
    EXPECT_NE(view.lstat(dir + "/other", st), 0);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_FALSE(view.canonical(dir + "/other"));
    // Elsewhere: the host's own answers, links included.
    ASSERT_EQ(view.lstat(t.path() + "/state", st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    EXPECT_EQ(view.canonical(t.path() + "/state/other"), t.path() + "/real/other");
    // Nothing was made on the host.
    EXPECT_NE(::lstat((t.path() + "/real/agentjail").c_str(), &st), 0);
    // A link planted where an action makes a name is not followed by the view.
    t.mkdir("real/agentjail2");
    ASSERT_EQ(::symlink("/etc", (t.path() + "/real/agentjail2/cfg").c_str()), 0);
    view.will_make(t.path() + "/state/agentjail2/cfg", true);
    EXPECT_EQ(view.canonical(t.path() + "/state/agentjail2/cfg"), t.path() + "/real/agentjail2/cfg");
}

// The view's glob answers as glob(3) does (wildcards in the middle, dot names only
// when the pattern names a dot, a literal last part checked on the host), and reads
// each directory once: later patterns see the listing of the first read.
TEST(HostView, GlobAnswersAsGlobAndReadsADirectoryOnce) {
    ajtest::TempDir t;
    t.mkdir("run/1000/bus");
    t.mkdir("run/1001");
    t.write("run/1002", "a file, not a directory");
    t.write("tmp/tmux-1000", "");
    t.write("tmp/.X11-unix", "");
    t.write("tmp/other", "");
    const plan::HostView view;
    const std::string r = t.path() + "/run", tmp = t.path() + "/tmp";
    EXPECT_EQ(view.glob(r + "/*/bus"), std::vector<std::string>{r + "/1000/bus"});
    EXPECT_EQ(view.glob(tmp + "/tmux-*"), std::vector<std::string>{tmp + "/tmux-1000"});
    EXPECT_EQ(view.glob(tmp + "/.X11-*"), std::vector<std::string>{tmp + "/.X11-unix"});
    EXPECT_EQ(view.glob(tmp + "/*"), (std::vector<std::string>{tmp + "/other", tmp + "/tmux-1000"}));
    EXPECT_EQ(view.glob(tmp + "/other"), std::vector<std::string>{tmp + "/other"});
    EXPECT_TRUE(view.glob(t.path() + "/none/*").empty());
    // A name made after the first read of its directory is not in the view's
    // snapshot (the directory is not read again) ...
    t.write("tmp/tmux-1001", "");
    EXPECT_EQ(view.glob(tmp + "/tmux-*"), std::vector<std::string>{tmp + "/tmux-1000"});
    // ... and is in a new view's (positive control: the glob sees it at all).
    EXPECT_EQ(plan::HostView().glob(tmp + "/tmux-*"),
              (std::vector<std::string>{tmp + "/tmux-1000", tmp + "/tmux-1001"}));
    EXPECT_EQ(view.list(tmp).size(), 3u);
}

// What the planner reads of the workspace (a .git file's gitdir, a commondir) is read
// without following a link below the root and without blocking on a FIFO: an earlier
// run had the workspace read-write and may have planted either.
TEST(HostView, ReadBeneathFollowsNoLinkAndOpensNoFifo) {
    ajtest::TempDir t;
    t.mkdir("ws/sub");
    t.write("ws/sub/.git", "gitdir: ../real\n");
    t.write("secret", "outside");
    ASSERT_EQ(::symlink((t.path() + "/secret").c_str(), (t.path() + "/ws/link").c_str()), 0);
    ASSERT_EQ(::symlink(t.path().c_str(), (t.path() + "/ws/up").c_str()), 0);
    ASSERT_EQ(::mkfifo((t.path() + "/ws/fifo").c_str(), 0600), 0);
    const plan::HostView view;
    const std::string ws = t.path() + "/ws";
    EXPECT_EQ(view.read_beneath(ws, "sub/.git"), "gitdir: ../real\n");  // positive control
    EXPECT_FALSE(view.read_beneath(ws, "link"));
    EXPECT_FALSE(view.read_beneath(ws, "up/secret"));
    EXPECT_FALSE(view.read_beneath(ws, "../secret"));
    EXPECT_FALSE(view.read_beneath(ws, "fifo"));  // returns at once: the test does not hang
    EXPECT_FALSE(view.read_beneath(ws, "sub/.git", 4));  // over the bound
}

// The state file the plan reads (the placeholder key) must be the caller's own,
// closed to others, of one link and of its size; the view says why not otherwise.
TEST(HostView, ReadStateFileTakesOnlyTheCallersOwnClosedFile) {
    ajtest::TempDir t;
    t.mkdir("agentjail");
    ASSERT_EQ(::chmod((t.path() + "/agentjail").c_str(), 0700), 0);
    t.write("agentjail/key", "0123456789abcdef");
    ASSERT_EQ(::chmod((t.path() + "/agentjail/key").c_str(), 0600), 0);
    const plan::HostView view;
    std::string out;
    const std::string key = t.path() + "/agentjail/key: ";
    auto why = [&](const char* name, std::size_t size) { return view.read_state_file(t.path(), name, size, out).why; };
    EXPECT_EQ(why("key", 16), "");
    EXPECT_EQ(out, "0123456789abcdef");
    EXPECT_EQ(why("key", 32), key + "not 32 bytes");
    EXPECT_TRUE(view.read_state_file(t.path(), "none", 16, out).missing);
    EXPECT_EQ(why("none", 16), "");
    EXPECT_FALSE(view.read_state_file(t.path(), "key", 16, out).missing);
    ASSERT_EQ(::chmod((t.path() + "/agentjail/key").c_str(), 0644), 0);
    EXPECT_EQ(why("key", 16), key + "readable or writable by others (it must be mode 0600)");
    ASSERT_EQ(::chmod((t.path() + "/agentjail/key").c_str(), 0600), 0);
    ASSERT_EQ(::link((t.path() + "/agentjail/key").c_str(), (t.path() + "/other").c_str()), 0);
    EXPECT_EQ(why("key", 16), key + "has other hard links");
    // The directory itself is what cannot be used: its name leads.
    ASSERT_EQ(::chmod((t.path() + "/agentjail").c_str(), 0775), 0);  // writable by its group
    EXPECT_EQ(why("key", 16).rfind(t.path() + "/agentjail: ", 0), 0u) << why("key", 16);
    ASSERT_EQ(::chmod((t.path() + "/agentjail").c_str(), 0700), 0);
    // No directory at all: missing, not refused.
    ajtest::TempDir empty;
    EXPECT_TRUE(view.read_state_file(empty.path(), "key", 16, out).missing);
}

// A secret's source, probed through the view: the value found, never kept.
TEST(HostView, ProbeSecretFindsTheValueInTheCallersFiles) {
    ajtest::TempDir t;
    t.write(".env", "OTHER=1\nTOKEN=abc\n");
    const plan::HostView view;
    std::string why;
    auto dotenv = agentjail::net::parse_source("dotenv:" + t.path() + "/.env#TOKEN", &why);
    ASSERT_TRUE(dotenv) << why;
    EXPECT_TRUE(view.probe_secret(*dotenv, "TOKEN", {}, "").available);
    auto missing = agentjail::net::parse_source("dotenv:" + t.path() + "/.env#NOPE", &why);
    ASSERT_TRUE(missing) << why;
    auto p = view.probe_secret(*missing, "NOPE", {}, "");
    EXPECT_FALSE(p.available);
    EXPECT_EQ(p.why, t.path() + "/.env: no NOPE= line");
    auto env = agentjail::net::parse_source("env:AJ_TEST_TOKEN", &why);
    ASSERT_TRUE(env) << why;
    EXPECT_TRUE(view.probe_secret(*env, "T", {"AJ_TEST_TOKEN=x"}, "").available);
    EXPECT_EQ(view.probe_secret(*env, "T", {"AJ_TEST_TOKENS=x"}, "").why, "$AJ_TEST_TOKEN is not set");
}
