// SPDX-License-Identifier: Apache-2.0
// Unit tests of hide rules ("deny wins"), same-destination conflicts, and the
// rule that no mount point is ever created on the host.
#include "test_plan_fixture.hpp"

#include "util/strings.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>

using namespace ajplantest;
namespace plan = agentjail::plan;
using agentjail::ErrorKind;

TEST(PlanHide, WorkspaceGlobMatchesFilesAndDirsSorted) {
    PlanTree t;
    t.tmp.mkdir("home/u/proj/.envs");  // a directory also matches .env*
    t.tmp.write("home/u/proj/not.env", "x");
    auto r = plan::build(t.defaults(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    std::vector<std::string> masked;
    for (const auto& op : r->mounts)
        if ((op.kind == MountKind::mask_dir || op.kind == MountKind::mask_file) &&
            !agentjail::util::path_within(op.dst, "/proc"))
            masked.push_back(op.dst);
    EXPECT_EQ(masked, (std::vector<std::string>{t.proj() + "/.env", t.proj() + "/.env.local",
                                                t.proj() + "/.envs"}));
    EXPECT_EQ(find_op(*r, t.proj() + "/.envs")->kind, MountKind::mask_dir);
    EXPECT_EQ(find_op(*r, t.proj() + "/.env")->kind, MountKind::mask_file);
    EXPECT_EQ(find_op(*r, t.proj() + "/not.env"), nullptr);
}

TEST(PlanHide, DenyWinsOverAnExplicitRoOfSsh) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.ro.push_back(MountRule{"~/.ssh", "", false, flag("--ro")});
    pol.ro.push_back(MountRule{"~/.ssh/config", "/etc/ssh_config", false, flag("--ro")});
    pol.rw.push_back(MountRule{"~/.aws", "/aws", false, flag("--rw")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    EXPECT_EQ(find_op(*r, t.home() + "/.ssh"), nullptr);
    EXPECT_EQ(find_op(*r, "/etc/ssh_config"), nullptr);
    EXPECT_EQ(find_op(*r, "/aws"), nullptr);
    for (const auto& op : r->mounts) {
        EXPECT_FALSE(agentjail::util::path_within(op.src, t.home() + "/.ssh")) << op.dst;
        EXPECT_FALSE(agentjail::util::path_within(op.src, t.home() + "/.aws")) << op.dst;
    }
    // Asked for on the command line: a warning at the run, not only explain's note.
    EXPECT_TRUE(has_warning(*r, "dropped ro bind " + t.home() + "/.ssh (command line"));
    EXPECT_TRUE(has_warning(*r, "hidden by ~/.ssh (default.toml:30:5"));
    EXPECT_TRUE(has_warning(*r, "dropped rw bind /aws"));
    EXPECT_FALSE(has_note(*r, "dropped rw bind /aws"));
}

TEST(PlanHide, BindOfAParentGetsAMaskAtTheInsidePath) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.ro.push_back(MountRule{"~", "/hosthome", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    const MountOp* m = find_op(*r, "/hosthome/.ssh");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->kind, MountKind::mask_dir);
    ASSERT_NE(find_op(*r, "/hosthome/.aws"), nullptr);
    // The project's .env is reachable through /hosthome too: masked there as well.
    ASSERT_NE(find_op(*r, "/hosthome/proj/.env"), nullptr);
    EXPECT_EQ(find_op(*r, "/hosthome/proj/.env")->kind, MountKind::mask_file);
    ASSERT_NE(find_op(*r, t.proj() + "/.env"), nullptr);
}

TEST(PlanHide, HiddenSymlinkMasksItsTarget) {
    // THREATS FS-04: proj/.env -> ~/.ssh/id_ed25519; masking the link's name
    // would leave the key readable wherever a bind shows it.
    PlanTree t;
    ASSERT_EQ(unlink((t.proj() + "/.env").c_str()), 0);
    ASSERT_EQ(symlink((t.home() + "/secret.txt").c_str(), (t.proj() + "/.env").c_str()), 0);
    t.tmp.write("home/u/secret.txt", "AJ-CANARY\n");
    Policy pol = t.defaults();
    pol.ro.push_back(MountRule{"~", "/hosthome", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    const MountOp* m = find_op(*r, "/hosthome/secret.txt");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->kind, MountKind::mask_file);
}

TEST(PlanHide, NestedHiddenPathsGiveOneMask) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.hide.push_back(HideRule{"~/.ssh/*", flag("--hide")});
    pol.workspace_path = agentjail::policy::Located<std::string>{t.home(), flag("-C")};
    pol.workspace_explicit = true;
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    EXPECT_NE(find_op(*r, t.home() + "/.ssh"), nullptr);
    EXPECT_EQ(find_op(*r, t.home() + "/.ssh/config"), nullptr);
    EXPECT_EQ(find_op(*r, t.home() + "/.ssh/id_ed25519"), nullptr);
}

TEST(PlanHide, NothingIsMountedUnderAMask) {
    PlanTree t;
    t.tmp.mkdir("home/u/proj/.envs/lib");
    Policy pol = t.defaults();
    pol.ro.push_back(MountRule{t.p("data/dir"), "{workspace}/.envs/lib", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    EXPECT_EQ(find_op(*r, t.proj() + "/.envs/lib"), nullptr);
    EXPECT_TRUE(has_note(*r, "dropped ro bind " + t.proj() + "/.envs/lib"));
    EXPECT_NE(find_op(*r, t.proj() + "/.envs"), nullptr);
}

TEST(PlanHide, HiddenWorkspaceDropsTheWorkspaceBind) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.hide.push_back(HideRule{"{workspace}", at("x.toml", 1, 2, "filesystem.hide[0]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
    EXPECT_NE(r.error().message().find("x.toml:1:2"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("a hidden path cannot be the workspace"), std::string::npos)
        << r.error().message();
}

TEST(PlanHide, GlobCharactersInTheWorkspacePathAreLiteral) {
    // A project directory named "proj [old]" must not make {workspace}/.env*
    // a character class that matches nothing.
    PlanTree t;
    t.tmp.write("home/u/proj [old]/.env", "KEY=AJ-CANARY\n");
    t.tmp.write("home/u/My [Keys]/k", "AJ-CANARY\n");
    HostFacts h = t.host();
    h.cwd = t.home() + "/proj [old]";
    Policy pol = t.defaults();
    pol.hide.push_back(HideRule{"~/My [Keys]", flag("--hide")});
    pol.ro.push_back(MountRule{"~", "/hosthome", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    ASSERT_NE(find_op(*r, h.cwd + "/.env"), nullptr);
    EXPECT_EQ(find_op(*r, h.cwd + "/.env")->kind, MountKind::mask_file);
    ASSERT_NE(find_op(*r, "/hosthome/My [Keys]"), nullptr);
    EXPECT_EQ(find_op(*r, "/hosthome/My [Keys]")->kind, MountKind::mask_dir);
}

TEST(PlanHide, HidePatternsWithoutWorkspaceAreSkipped) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.workspace = {agentjail::policy::WorkspaceAccess::none, {}};
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    for (const auto& op : r->mounts) {
        if (!agentjail::util::path_within(op.dst, "/proc")) {
            EXPECT_NE(op.kind, MountKind::mask_file) << op.dst;
        }
    }
}

TEST(PlanHide, MaskOnlyWhereTheBindIsWhatTheSandboxShows) {
    // The host's ~/.ssh is below the private home tmpfs: a bind of a parent of
    // home shows the tmpfs there, not the keys, so no mask is planned.
    PlanTree t;
    Policy pol = t.defaults();
    pol.ro.push_back(MountRule{t.p("home"), "", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    EXPECT_EQ(find_op(*r, t.home() + "/.ssh"), nullptr);
    EXPECT_EQ(find_op(*r, t.home())->kind, MountKind::tmpfs);
}

// --- same destination -------------------------------------------------------

TEST(PlanConflicts, ExactDuplicatesCollapseSilently) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.push_back(pol.ro.front());
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    size_t n = 0;
    for (const auto& op : r->mounts) n += op.dst == t.sys("usr");
    EXPECT_EQ(n, 1u);
    EXPECT_FALSE(has_note(*r, "replaces"));
}

TEST(PlanConflicts, LaterOpOnTheSameDstReplacesWithANote) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.tmpfs.push_back(TmpfsRule{"/scratch", 0, at("m.toml", 2, 2, "filesystem.tmpfs[1]")});
    pol.rw.push_back(MountRule{t.p("data/dir"), "/scratch", false, flag("--rw")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const MountOp* s = find_op(*r, "/scratch");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->kind, MountKind::bind);
    EXPECT_EQ(s->src, t.p("data/dir"));
    EXPECT_TRUE(
        has_note(*r, "rw bind /scratch (command line (--rw)) replaces tmpfs /scratch (m.toml:2:2"))
        << dump_mounts(*r);
}

// --- mount points -------------------------------------------------------------

TEST(PlanMountPoints, NotCreatedInsideABind) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.push_back(MountRule{t.p("data/dir"), t.sys("usr/foo"), false,
                               at("m.toml", 3, 9, "filesystem.ro[9]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
    EXPECT_NE(r.error().message().find("m.toml:3:9"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("cannot create mount point " + t.sys("usr/foo") +
                                       " inside the bind of " + t.sys("usr") +
                                       " (it does not exist there)"),
              std::string::npos)
        << r.error().message();
}

TEST(PlanMountPoints, ExistingMountPointInsideABindIsFine) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.rw.push_back(MountRule{t.p("data/dir"), t.sys("usr/lib"), false, flag("--rw")});
    pol.ro.push_back(MountRule{t.p("data/file"), t.sys("usr/bin/tool"), false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_NE(find_op(*r, t.sys("usr/lib")), nullptr);
    EXPECT_FALSE(find_op(*r, t.sys("usr/bin/tool"))->is_dir);
}

TEST(PlanMountPoints, TypeMustMatch) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.push_back(MountRule{t.p("data/dir"), t.sys("usr/bin/tool"), false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("the mount needs a directory"), std::string::npos)
        << r.error().message();

    pol = t.minimal();
    pol.ro.push_back(MountRule{t.p("data/file"), t.sys("usr/lib"), false, flag("--ro")});
    r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("the mount needs a file"), std::string::npos)
        << r.error().message();
}

TEST(PlanMountPoints, NeverThroughASymlinkInABind) {
    // A link inside a bound tree could send the mount onto a host path.
    PlanTree t;
    ASSERT_EQ(symlink(t.p("data").c_str(), (t.proj() + "/out").c_str()), 0);
    Policy pol = t.defaults();
    pol.ro.push_back(MountRule{t.p("data/dir"), "{workspace}/out/dir", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("is a symlink in the bind of " + t.proj()),
              std::string::npos)
        << r.error().message();
}

TEST(PlanMountPoints, UnderATmpfsTheLauncherCreatesThem) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.tmpfs.push_back(TmpfsRule{"/scratch", 0, flag("--tmpfs")});
    pol.ro.push_back(MountRule{t.p("data/dir"), "/scratch/a/b", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_LT(index_of(*r, "/scratch"), index_of(*r, "/scratch/a/b"));
}

TEST(PlanMountPoints, NotUnderASymlinkOp) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.push_back(MountRule{t.p("data/dir"), t.sys("bin/extra"), false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("under the symlink " + t.sys("bin")), std::string::npos)
        << r.error().message();
}

TEST(PlanMountPoints, SymlinkAlreadyInTheBindIsNotRecreated) {
    PlanTree t;
    Policy pol = t.minimal();
    pol.ro.insert(pol.ro.begin(), MountRule{t.sys(""), "", false, flag("--ro")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    EXPECT_EQ(find_op(*r, t.sys("bin")), nullptr);
}

TEST(PlanMountPoints, SymlinkPlantedInTheWorkspaceIsNotFollowed) {
    // THREATS FS-04: session N links proj/.cache -> ~/.aws; session N+1's policy
    // binds {workspace}/.cache read-write. Following it would expose ~/.aws.
    PlanTree t;
    t.tmp.mkdir("home/u/.config/autostart");
    ASSERT_EQ(symlink((t.home() + "/.config/autostart").c_str(), (t.proj() + "/.cache").c_str()),
              0);
    Policy pol = t.defaults();
    pol.rw.push_back(
        MountRule{"{workspace}/.cache", "", false, at("p.toml", 5, 7, "filesystem.rw[0]")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("p.toml:5:7"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("symlink"), std::string::npos) << r.error().message();
}

// --- /proc hardening ------------------------------------------------------------

TEST(PlanProc, GlobalKnobsReadOnlyAndLeaksMasked) {
    // Root outside is uid 0 inside: /proc/sys must not be writable through DAC.
    PlanTree t;
    auto r = plan::build(t.minimal(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(dump_mounts(*r));
    const MountOp* sys = find_op(*r, "/proc/sys");
    ASSERT_NE(sys, nullptr);
    EXPECT_EQ(sys->kind, MountKind::readonly);
    EXPECT_TRUE(sys->is_dir);
    EXPECT_GT(index_of(*r, "/proc/sys"), index_of(*r, "/proc"));
    struct stat st {};
    if (lstat("/proc/sysrq-trigger", &st) == 0) {
        ASSERT_NE(find_op(*r, "/proc/sysrq-trigger"), nullptr);
        EXPECT_FALSE(find_op(*r, "/proc/sysrq-trigger")->is_dir);
    }
    for (const char* leak :
         {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/slabinfo", "/proc/pagetypeinfo",
          "/proc/vmallocinfo", "/proc/interrupts", "/proc/kpageflags"}) {
        if (lstat(leak, &st) != 0) continue;
        const MountOp* m = find_op(*r, leak);
        ASSERT_NE(m, nullptr) << leak;
        EXPECT_EQ(m->kind, MountKind::mask_file) << leak;
    }
    // The class: every kernel file (and directory) only root may read is masked, so
    // a root run sees no more of /proc than a user run.
    size_t root_only = 0;
    if (DIR* d = opendir("/proc")) {
        while (dirent* e = readdir(d)) {
            std::string name = e->d_name, path = "/proc/" + name;
            if (name[0] == '.' || name.find_first_not_of("0123456789") == std::string::npos ||
                name == "sysrq-trigger" || name == "self" || name == "thread-self")
                continue;
            if (lstat(path.c_str(), &st) != 0 || (st.st_mode & S_IROTH) != 0) continue;
            if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) continue;
            ++root_only;
            const MountOp* m = find_op(*r, path);
            ASSERT_NE(m, nullptr) << path << " is root-only on the host but not masked";
            EXPECT_EQ(m->kind, S_ISDIR(st.st_mode) ? MountKind::mask_dir : MountKind::mask_file)
                << path;
        }
        closedir(d);
    }
    std::printf("[ info ] %zu root-only /proc entries masked\n", root_only);
    // Read-only trees hold no masks (they could not be mounted there).
    for (const auto& op : r->mounts) {
        if (op.kind == MountKind::mask_file || op.kind == MountKind::mask_dir) {
            EXPECT_FALSE(agentjail::util::path_within(op.dst, "/proc/sys")) << op.dst;
        }
    }

    Policy pol = t.minimal();
    pol.proc = {false, {}};
    r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    for (const auto& op : r->mounts)
        EXPECT_FALSE(agentjail::util::path_within(op.dst, "/proc")) << op.dst;
}
