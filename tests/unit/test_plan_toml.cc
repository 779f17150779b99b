// SPDX-License-Identifier: Apache-2.0
// Unit tests from TOML text (and the built-in policies) through the real parser
// to a Plan: origins in errors and notes point at the policy file's lines.
#include "test_plan_fixture.hpp"

#include "plan/view_rules.hpp"
#include "util/strings.hpp"

using namespace ajplantest;
namespace plan = agentjail::plan;
namespace policy = agentjail::policy;

namespace {
agentjail::Result<Plan> from_toml(const PlanTree& t, const std::string& text,
                                  const std::vector<std::string>& argv = {"/x"}) {
    auto pol = policy::load_text(text, "my.toml");
    if (!pol) return std::move(pol).error();
    return plan::build(*pol, argv, t.host());
}
}  // namespace

TEST(PlanToml, BuiltinDefaultOnAScratchHome) {
    PlanTree t;
    auto pol = policy::load("default");
    ASSERT_TRUE(pol) << pol.error().message();
    auto r = plan::build(*pol, {"ls"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    const Plan& p = *r;
    SCOPED_TRACE(plan::to_text(p));
    EXPECT_EQ(p.policy_name, "default");
    EXPECT_EQ(p.workspace, t.proj());
    ASSERT_NE(find_op(p, t.home()), nullptr);
    EXPECT_EQ(find_op(p, t.home())->kind, MountKind::tmpfs);
    ASSERT_NE(find_op(p, "/usr"), nullptr);
    EXPECT_TRUE(find_op(p, "/usr")->read_only);
    // The workspace is served by the view (the default), which hides .env by the
    // policy's pattern at each lookup; through --view mounts a mask covers it, with the
    // policy line that asked for it.
    const MountOp* ws = find_op(p, t.proj());
    ASSERT_NE(ws, nullptr);
    ASSERT_EQ(ws->kind, MountKind::view);
    EXPECT_TRUE(ws->view_rules->hides(".env", false));
    EXPECT_TRUE(ws->view_rules->hides("sub/.env.local", false));
    pol->workspace_view = {policy::WorkspaceView::mounts, {}};
    auto by_mounts = plan::build(*pol, {"ls"}, t.host());
    ASSERT_TRUE(by_mounts) << by_mounts.error().message();
    const MountOp* env = find_op(*by_mounts, t.proj() + "/.env");
    ASSERT_NE(env, nullptr);
    EXPECT_EQ(env->kind, MountKind::mask_file);
    EXPECT_TRUE(agentjail::util::starts_with(env->why, "default.toml:")) << env->why;
    EXPECT_NE(env->why.find("filesystem.hide["), std::string::npos) << env->why;
    EXPECT_EQ(env_of(p, "GITHUB_TOKEN"), "<unset>");
    EXPECT_EQ(env_of(p, "OPENAI_API_KEY"), "<unset>");
    EXPECT_EQ(env_of(p, "SSH_AUTH_SOCK"), "<unset>");
    EXPECT_EQ(env_of(p, "TERM"), "xterm-256color");
    EXPECT_EQ(env_of(p, "HOME"), t.home());
    EXPECT_EQ(env_of(p, "USER"), "u");
    EXPECT_EQ(p.hostname, "agentjail");
}

TEST(PlanToml, BuiltinMinimalHasNoWorkspaceNoHome) {
    PlanTree t;
    auto pol = policy::load("minimal");
    ASSERT_TRUE(pol) << pol.error().message();
    auto r = plan::build(*pol, {"true"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->workspace.empty());
    EXPECT_EQ(find_op(*r, t.home()), nullptr);
    EXPECT_EQ(find_op(*r, t.proj()), nullptr);
    EXPECT_EQ(r->cwd, "/");
    ASSERT_NE(find_op(*r, "/tmp"), nullptr);
    EXPECT_EQ(find_op(*r, "/tmp")->kind, MountKind::tmpfs);
}

TEST(PlanToml, MountsAndHidesFromText) {
    PlanTree t;
    t.tmp.write("data/secret.key", "AJ-CANARY\n");
    const std::string text =
        "extends = \"default\"\n"
        "[filesystem]\n"
        "ro = [{ src = \"" +
        t.p("data") +
        "\", dst = \"/data\" },\n"
        "      { path = \"" +
        t.p("nope") +
        "\", optional = true }]\n"
        "hide = [\"" +
        t.p("data") + "/*.key\"]\n";
    auto r = from_toml(t, text);
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(plan::to_text(*r));
    ASSERT_NE(find_op(*r, "/data"), nullptr);
    EXPECT_EQ(find_op(*r, "/data")->src, t.p("data"));
    EXPECT_TRUE(agentjail::util::starts_with(find_op(*r, "/data")->why, "my.toml:3:"))
        << find_op(*r, "/data")->why;
    const MountOp* m = find_op(*r, "/data/secret.key");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->kind, MountKind::mask_file);
    EXPECT_TRUE(agentjail::util::starts_with(m->why, "my.toml:5:")) << m->why;
    EXPECT_TRUE(has_note(*r, "skipped " + t.p("nope") + " (missing, optional: my.toml:4:"));
}

TEST(PlanToml, RequiredMissingPathNamesTheLine) {
    PlanTree t;
    const std::string text =
        "extends = \"minimal\"\n"
        "[filesystem]\n"
        "ro = [\"" +
        t.p("does/not/exist") + "\"]\n";
    auto r = from_toml(t, text);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), agentjail::ErrorKind::invalid_input);
    EXPECT_TRUE(agentjail::util::starts_with(r.error().message(), "my.toml:3:"))
        << r.error().message();
    EXPECT_NE(r.error().message().find(t.p("does/not/exist") + " does not exist"),
              std::string::npos)
        << r.error().message();
}

TEST(PlanToml, CwdUnderProcNamesTheLine) {
    PlanTree t;
    const std::string text =
        "extends = \"default\"\n"
        "[process]\n"
        "cwd = \"/proc/self/fd/3\"\n";
    auto r = from_toml(t, text);
    ASSERT_FALSE(r);
    EXPECT_TRUE(agentjail::util::starts_with(r.error().message(), "my.toml:3:"))
        << r.error().message();
    EXPECT_NE(r.error().message().find("CVE-2024-21626"), std::string::npos) << r.error().message();
}

TEST(PlanToml, CommandLineRoOfSshIsDroppedByTheDefaultHide) {
    PlanTree t;
    auto pol = policy::load("default");
    ASSERT_TRUE(pol) << pol.error().message();
    policy::add_ro(*pol, "~/.ssh", "", Origin{"command line", 0, 0, "--ro"});
    policy::pass_env(*pol, "GITHUB_TOKEN", Origin{"command line", 0, 0, "-e"});
    auto r = plan::build(*pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    for (const auto& op : r->mounts)
        EXPECT_FALSE(agentjail::util::path_within(op.src, t.home() + "/.ssh")) << op.dst;
    EXPECT_TRUE(has_warning(*r, "dropped ro bind " + t.home() + "/.ssh (command line (--ro))"));
    EXPECT_EQ(env_of(*r, "GITHUB_TOKEN"), "AJ-CANARY-gh");  // named exactly: passes
}

TEST(PlanToml, ExplicitHomeWorkspaceKeepsSecretsMasked) {
    PlanTree t;
    auto pol = policy::load("default");
    ASSERT_TRUE(pol) << pol.error().message();
    pol->workspace_path =
        policy::Located<std::string>{t.home(), Origin{"command line", 0, 0, "-C"}};
    pol->workspace_explicit = true;
    auto r = plan::build(*pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    SCOPED_TRACE(plan::to_text(*r));
    // Served by the view (the default): its rules hide them; through the mounts, masks.
    const MountOp* ws = find_op(*r, t.home());
    ASSERT_NE(ws, nullptr);
    ASSERT_EQ(ws->kind, MountKind::view);
    for (const char* hidden : {".ssh", ".aws"}) EXPECT_TRUE(ws->view_rules->hides(hidden, true)) << hidden;
    pol->workspace_view = {policy::WorkspaceView::mounts, {}};
    auto m_plan = plan::build(*pol, {"/x"}, t.host());
    ASSERT_TRUE(m_plan) << m_plan.error().message();
    for (const char* hidden : {"/.ssh", "/.aws"}) {
        const MountOp* m = find_op(*m_plan, t.home() + hidden);
        ASSERT_NE(m, nullptr) << hidden;
        EXPECT_EQ(m->kind, MountKind::mask_dir) << hidden;
    }
}

// The view is direct mode's default: where it does not apply (a read-only workspace)
// the default says nothing, and a view asked for by name says why it is not used.
TEST(PlanToml, TheViewNotesOnlyWhatWasAskedFor) {
    PlanTree t;
    auto quiet = from_toml(t, "extends = \"default\"\n[filesystem]\nworkspace = \"ro\"\n");
    ASSERT_TRUE(quiet) << quiet.error().message();
    EXPECT_FALSE(has_note(*quiet, "workspace view fuse")) << plan::to_text(*quiet);
    auto asked = from_toml(t, "extends = \"default\"\n[filesystem]\nworkspace = \"ro\"\n[workspace]\nview = \"fuse\"\n");
    ASSERT_TRUE(asked) << asked.error().message();
    EXPECT_TRUE(has_note(*asked, "workspace view fuse (my.toml:")) << plan::to_text(*asked);
    EXPECT_TRUE(has_note(*asked, "only a writable workspace in direct mode is served")) << plan::to_text(*asked);
}
