// SPDX-License-Identifier: Apache-2.0
// Overlay mode without privileges: the plan's overlay op (masks still on top),
// the protected-path matcher, the change set's JSON, the bases found at the end, and
// apply on plain directories (upper layers without whiteouts).
#include "test_plan_fixture.hpp"

#include "sys/state_dir.hpp"
#include "workspace/overlay.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <map>

namespace {

using namespace ajplantest;
namespace plan = agentjail::plan;
namespace ws = agentjail::workspace;
using agentjail::policy::WorkspaceMode;

TEST(OverlayPlan, WorkspaceBindBecomesAnOverlayWithMasksOnTop) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.workspace_mode = {WorkspaceMode::overlay, at("p.toml", 2, 8, "workspace.mode")};
    auto host = t.host();
    host.run_id = "20261206-010203-abcdef";
    auto r = plan::build(pol, {"tool"}, host);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->workspace_mode, WorkspaceMode::overlay);
    EXPECT_EQ(r->run_id, host.run_id);
    const MountOp* op = find_op(*r, t.proj());
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->kind, MountKind::overlay);
    EXPECT_EQ(op->src, t.proj());
    EXPECT_FALSE(op->read_only);
    // The run's state is the plan's: the layers lie in its run directory.
    EXPECT_EQ(r->run_dir.substr(r->run_dir.rfind('/') + 1), host.run_id);
    EXPECT_EQ(op->upper, r->run_dir + "/upper");
    EXPECT_EQ(op->work, r->run_dir + "/work");
    EXPECT_NE(op->why.find("p.toml:2:8"), std::string::npos) << op->why;
    const MountOp* env = find_op(*r, t.proj() + "/.env");
    ASSERT_NE(env, nullptr);
    EXPECT_EQ(env->kind, MountKind::mask_file);
    EXPECT_GT(index_of(*r, t.proj() + "/.env"), index_of(*r, t.proj()));
    EXPECT_NE(plan::to_text(*r).find("overlay"), std::string::npos);

    // Direct mode keeps the bind.
    auto d = plan::build(t.defaults(), {"tool"}, t.host());
    ASSERT_TRUE(d);
    EXPECT_EQ(find_op(*d, t.proj())->kind, MountKind::bind);
    EXPECT_TRUE(d->run_dir.empty());
}

// Clone mode: the workspace is bound from the run's clone, and no guard of the
// user's directory stays (the sandbox does not see it).
TEST(OverlayPlan, CloneModeBindsTheRunsClone) {
    PlanTree t;
    Policy pol = t.defaults();
    auto direct = plan::build(pol, {"tool"}, t.host());
    ASSERT_TRUE(direct);
    // Control: in direct mode the workspace's names are guarded.
    EXPECT_TRUE(std::any_of(direct->guards.begin(), direct->guards.end(),
                            [&](const plan::Guard& g) { return g.host.rfind(t.proj() + "/", 0) == 0; }));
    pol.workspace_mode = {WorkspaceMode::clone, at("p.toml", 2, 8, "workspace.mode")};
    auto r = plan::build(pol, {"tool"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const MountOp* op = find_op(*r, t.proj());
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->kind, MountKind::bind);
    EXPECT_EQ(op->src, r->run_dir + "/clone");
    EXPECT_TRUE(agentjail::sys::valid_run_id(r->run_id)) << r->run_id;
    for (const auto& g : r->guards) EXPECT_NE(g.host.rfind(t.proj() + "/", 0), 0u) << g.host;
}

TEST(OverlayProtect, DefaultListMatchesWhatRunsLater) {
    const auto& list = ws::default_protected();
    for (const char* p : {".git/hooks/pre-commit", ".git/config", "sub/.git/config", ".gitattributes",
                          "pkg/.gitattributes", ".gitmodules", ".claude/settings.json",
                          ".claude/settings.local.json", ".mcp.json", ".vscode/tasks.json", ".envrc",
                          ".git/modules/lib/hooks/post-checkout", ".git/info/attributes", ".cursor/mcp.json",
                          "pkg/.zed/tasks.json", "opencode.json", ".claude/skills/s/run.sh", ".continue/config.yaml",
                          ".husky/pre-commit"})
        EXPECT_TRUE(ws::is_protected(p, list)) << p;
    for (const char* p : {"src/main.c", ".git/objects/ab/cdef", ".git/refs/heads/main", ".git/index",
                          "README.md", ".claude/notes.md", "vscode/tasks.json"})
        EXPECT_FALSE(ws::is_protected(p, list)) << p;
    EXPECT_TRUE(ws::is_protected("deploy/secrets/x", {"{workspace}/deploy/secrets"}));
    EXPECT_TRUE(ws::is_protected("a/b/c/Makefile", {"**/Makefile"}));
    EXPECT_FALSE(ws::is_protected("Makefile.old", {"**/Makefile"}));
}

TEST(OverlayChanges, JsonRoundTrip) {
    ws::LayerChange c;
    c.kind = ws::LayerChange::Kind::modified;
    c.type = ws::LayerChange::Type::symlink;
    c.path = "dir/odd\nname";
    c.target = "/elsewhere";
    c.mode = 0777;
    c.protected_path = true;
    ws::Stamp s;
    s.dev = 1;
    s.ino = 2;
    s.mode = 0120777;
    s.size = 10;
    s.mtime_ns = 123456789012345;
    s.ctime_ns = 223456789012345;
    c.base = s;
    ws::LayerChange d;
    d.kind = ws::LayerChange::Kind::deleted;
    d.type = ws::LayerChange::Type::dir;
    d.path = "gone";
    auto back = ws::changes_from_json(ws::changes_to_json({c, d}), "test");
    ASSERT_TRUE(back) << back.error().message();
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[0].path, c.path);
    EXPECT_EQ((*back)[0].target, c.target);
    EXPECT_EQ((*back)[0].kind, c.kind);
    EXPECT_TRUE((*back)[0].protected_path);
    ASSERT_TRUE((*back)[0].base);
    EXPECT_EQ(*(*back)[0].base, s);
    EXPECT_FALSE((*back)[1].base);
    EXPECT_FALSE(ws::changes_from_json("{\"not\":1}", "x"));
    EXPECT_FALSE(ws::changes_from_json("[{\"path\":\"a\"}]", "x"));
}

// An upper layer made by hand (no whiteouts: those need mknod), collected and
// applied to a copy of the lower one.
TEST(OverlayApply, CollectAndApplyOnPlainDirectories) {
    ajtest::TempDir t("aj-ovl-unit");
    t.write("lower/a.txt", "a\n");
    t.write("lower/same.txt", "same\n");
    t.write("lower/dir/f", "f\n");
    t.write("upper/a.txt", "changed\n");
    t.write("upper/same.txt", "same\n");  // copied up only
    t.write("upper/new/n.txt", "n\n");
    t.write("upper/.git/hooks/post-merge", "#!/bin/sh\n", 0755);
    ASSERT_EQ(::symlink("/etc", (t.path() + "/upper/link").c_str()), 0);
    ajtest::sleep_ms(30);  // the run starts a few clock ticks after the lower layer was made
    const struct timespec since = ws::run_start(t.path() + "/lower");
    auto changes = ws::collect_changes(t.path() + "/upper", t.path() + "/lower", since, ws::default_protected());
    ASSERT_TRUE(changes) << changes.error().message();
    std::vector<std::string> got;
    for (const auto& c : *changes)
        got.push_back(std::string(ws::layer_kind_name(c.kind)) + " " + c.path + (c.protected_path ? " P" : ""));
    EXPECT_EQ(got, (std::vector<std::string>{"added .git", "added .git/hooks P", "added .git/hooks/post-merge P",
                                             "modified a.txt", "added link", "added new", "added new/n.txt"}));

    auto out = ws::apply_changes(t.path() + "/lower", t.path() + "/upper", *changes, {});
    ASSERT_TRUE(out) << out.error().message();
    EXPECT_EQ(out->applied.size(), 5u);
    EXPECT_EQ(out->skipped.size(), 2u);
    EXPECT_TRUE(out->failed.empty());
    EXPECT_EQ(ajtest::read_file(t.path() + "/lower/a.txt"), "changed\n");
    EXPECT_EQ(ajtest::read_file(t.path() + "/lower/new/n.txt"), "n\n");
    EXPECT_FALSE(ajtest::exists(t.path() + "/lower/.git/hooks"));
    char buf[16] = {};
    EXPECT_EQ(::readlink((t.path() + "/lower/link").c_str(), buf, sizeof buf - 1), 4);
    EXPECT_STREQ(buf, "/etc");
}

// What the host changed during the run is found from the change set alone (no walk
// at the start): a file the run changed that the host edited, deleted or made after
// the run began is a conflict, left out, and so is a file the run made in a folder
// the host changed; one the host left alone is applied. With --force the host's
// change is overwritten.
TEST(OverlayApply, AHostChangeDuringTheRunIsAConflictWithoutAStartWalk) {
    ajtest::TempDir t("aj-ovl-unit");
    for (const char* f : {"kept.txt", "edited.txt", "deleted.txt", "moved/x.txt"}) t.write(std::string("lower/") + f, "old\n");
    t.write("lower/dir/keep", "k\n");
    ajtest::sleep_ms(30);
    const struct timespec since = ws::run_start(t.path() + "/lower");
    ajtest::sleep_ms(30);
    // The run's changes (the upper layer) and the host's meanwhile.
    for (const char* f : {"kept.txt", "edited.txt", "deleted.txt", "made.txt", "dir/new.txt", "moved/x.txt", "fresh.txt"})
        t.write(std::string("upper/") + f, "run\n");
    t.write("lower/edited.txt", "host\n");
    ASSERT_EQ(::unlink((t.path() + "/lower/deleted.txt").c_str()), 0);
    t.write("lower/made.txt", "host\n");
    ASSERT_EQ(::rename((t.path() + "/lower/moved").c_str(), (t.path() + "/lower/elsewhere").c_str()), 0);
    auto changes = ws::collect_changes(t.path() + "/upper", t.path() + "/lower", since, {});
    ASSERT_TRUE(changes) << changes.error().message();
    std::map<std::string, std::string> why;
    auto out = ws::apply_changes(t.path() + "/lower", t.path() + "/upper", *changes, {});
    ASSERT_TRUE(out) << out.error().message();
    for (const auto& i : out->applied) why[i.change.path] = "applied";
    for (const auto& i : out->skipped) why[i.change.path] = i.why;
    EXPECT_EQ(why["kept.txt"], "applied");
    EXPECT_EQ(why["dir/new.txt"], "applied");  // a folder the host did not touch
    // One the host did change: the run made this name, but whether the host deleted
    // one of that name meanwhile cannot be told (the run's copy may be a rewrite).
    EXPECT_NE(why["fresh.txt"].find("changed on the host during the run"), std::string::npos) << why["fresh.txt"];
    EXPECT_NE(why["edited.txt"].find("changed on the host during the run"), std::string::npos) << why["edited.txt"];
    EXPECT_NE(why["deleted.txt"].find("changed on the host during the run"), std::string::npos) << why["deleted.txt"];
    EXPECT_NE(why["made.txt"].find("changed on the host during the run"), std::string::npos) << why["made.txt"];
    EXPECT_NE(why["moved/x.txt"].find("changed on the host during the run"), std::string::npos) << why["moved/x.txt"];
    EXPECT_EQ(ajtest::read_file(t.path() + "/lower/kept.txt"), "run\n");
    EXPECT_EQ(ajtest::read_file(t.path() + "/lower/edited.txt"), "host\n");
    EXPECT_FALSE(ajtest::exists(t.path() + "/lower/deleted.txt"));
    // The control: forced, the host's edit is overwritten.
    ws::ApplyOptions force;
    force.force = true;
    auto forced = ws::apply_changes(t.path() + "/lower", t.path() + "/upper", *changes, force);
    ASSERT_TRUE(forced) << forced.error().message();
    EXPECT_EQ(ajtest::read_file(t.path() + "/lower/edited.txt"), "run\n");
}

}  // namespace
