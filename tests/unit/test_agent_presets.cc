// SPDX-License-Identifier: Apache-2.0
// Unit tests of [agent] and the agent presets: parsing and its errors, the preset
// chosen by the command's name, and what the plan makes of a preset (the state
// directory, the binds into it, the git identity, the agent's own arguments).
#include "plan/internal.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"
#include "run/host_actions.hpp"
#include "util/strings.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace agentjail {
namespace {

using ajtest::TempDir;

std::string parse_err(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    if (r) return "(no error)";
    return r.error().message();
}

std::string env_of(const plan::Plan& p, const std::string& name) {
    for (const auto& kv : p.env)
        if (kv.rfind(name + "=", 0) == 0) return kv.substr(name.size() + 1);
    return "(unset)";
}

const plan::MountOp* mount_at(const plan::Plan& p, const std::string& dst) {
    const plan::MountOp* found = nullptr;
    for (const auto& m : p.mounts)
        if (m.dst == dst) found = &m;
    return found;
}

// A home with a logged-in user's Claude Code and git config, a project, and the
// host facts of a caller there.
struct Home {
    TempDir tmp;
    Home() {
        tmp.write("home/.claude/settings.json", "{\"theme\": \"dark\"}\n");
        tmp.write("home/.claude/.credentials.json", "{\"claudeAiOauth\": {\"accessToken\": \"AJ-CANARY\"}}\n", 0600);
        tmp.write("home/.claude/CLAUDE.md", "be brief\n");
        tmp.mkdir("home/.claude/commands");
        tmp.write("home/.gitconfig",
                  "[user]\n\tname = \"Jane \\\"J\\\" Doe\"  # a comment\n\temail = jane@example.org\n"
                  "[credential]\n\thelper = store\n[url \"https://tok@github.com/\"]\n\tinsteadOf = https://github.com/\n");
        tmp.mkdir("home/proj");
    }
    std::string home() const { return tmp.path() + "/home"; }
    plan::HostFacts host() const {
        plan::HostFacts h;
        h.uid = ::getuid();
        h.gid = ::getgid();
        h.user = "u";
        h.home = home();
        h.cwd = home() + "/proj";
        h.environ = {"PATH=/usr/bin:/bin", "HOME=" + home()};
        return h;
    }
};

TEST(AgentParse, EveryKeyAndItsErrors) {
    auto p = policy::load_text(
        "[agent]\nname = 'X'\ncommands = ['x', 'x-cli']\nstate = 'x.1'\ngit_identity = true\nargs = ['--no-sandbox']\n"
        "notes = ['a note']\n",
        "t.toml");
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_EQ(p->agent.name.value, "X");
    ASSERT_EQ(p->agent.commands.size(), 2u);
    EXPECT_EQ(p->agent.commands[1].value, "x-cli");
    EXPECT_EQ(p->agent.state.value, "x.1");
    EXPECT_EQ(p->agent.state.origin.describe(), "t.toml:4:9 (agent.state)");
    EXPECT_TRUE(p->agent.git_identity.value);
    EXPECT_EQ(p->agent.args.at(0).value, "--no-sandbox");
    EXPECT_EQ(p->agent.notes.at(0).value, "a note");

    EXPECT_EQ(parse_err("[agent]\nstate = '../x'\n"),
              "t.toml:2:9: agent.state: expected a state directory name of letters, digits, '.', '_' and '-' "
              "(\"claude\"), not 'runs', got '../x'");
    EXPECT_EQ(parse_err("[agent]\nstate = 'runs'\n").substr(0, 21), "t.toml:2:9: agent.sta");
    EXPECT_EQ(parse_err("[agent]\ncommands = ['/usr/bin/claude']\n"),
              "t.toml:2:13: agent.commands[0]: expected a command's name without a directory (\"claude\"), got "
              "'/usr/bin/claude'");
    EXPECT_EQ(parse_err("[agent]\nstat = 'x'\n"), "t.toml:2:1: agent.stat: unknown key; did you mean 'state'?");
    EXPECT_EQ(parse_err("state = 'x'\n"), "t.toml:1:1: state: unknown key; did you mean 'agent.state'?");
    EXPECT_EQ(parse_err("[filesystem]\nro = ['{stat}/x']\n").find("t.toml:2:7: filesystem.ro[0]: expected an absolute"),
              0u);
}

TEST(AgentPresets, ChosenByTheCommandsNameOnly) {
    for (const std::string agent : {"claude", "codex", "gemini", "aider"}) {
        const auto* b = policy::preset_for_command(agent);
        ASSERT_NE(b, nullptr) << agent;
        EXPECT_EQ(b->name, agent);
        ASSERT_NE(policy::preset_for_command("/opt/bin/" + agent), nullptr);
        EXPECT_EQ(policy::preset_for_command("/opt/bin/" + agent)->name, agent);
    }
    EXPECT_EQ(policy::preset_for_command("claude-dev"), nullptr);
    EXPECT_EQ(policy::preset_for_command("agent"), nullptr);  // the generic preset is named, never guessed
    EXPECT_EQ(policy::preset_for_command("sh"), nullptr);
    EXPECT_EQ(policy::preset_for_command("/usr/bin/"), nullptr);
    EXPECT_EQ(policy::preset_for_command(""), nullptr);
}

TEST(AgentPresets, EachExtendsDefaultAndTheBalancedNetwork) {
    for (const std::string name : {"claude", "codex", "gemini", "aider", "agent"}) {
        auto p = policy::load(name);
        ASSERT_TRUE(p) << name << ": " << p.error().message();
        EXPECT_EQ(p->layers, (std::vector<std::string>{"minimal", "default", "net-balanced", name})) << name;
        EXPECT_EQ(p->network.mode.value, policy::NetMode::proxy) << name;
        EXPECT_FALSE(p->agent.state.value.empty()) << name;
        EXPECT_TRUE(p->agent.git_identity.value) << name;
        // default's hidden credentials stay hidden in every preset.
        bool hides_claude_tokens = false;
        for (const auto& h : p->hide) hides_claude_tokens |= h.pattern == "~/.claude/.credentials.json";
        EXPECT_TRUE(hides_claude_tokens) << name;
    }
}

TEST(AgentPlan, ClaudeGetsItsStateTheUsersSettingsReadOnlyAndNoTokens) {
    Home h;
    auto pol = policy::load("claude");
    ASSERT_TRUE(pol);
    auto plan = plan::build(*pol, {"claude", "-p", "hi"}, h.host());
    ASSERT_TRUE(plan) << plan.error().message();
    const std::string state = h.home() + "/.local/state/agentjail/claude/" + plan::detail::project_key(plan->workspace);
    EXPECT_EQ(plan->state_dir, state);
    EXPECT_EQ(plan::detail::project_key(plan->workspace).rfind("proj-", 0), 0u);
    // The plan made nothing on the host: it lists what the run makes.
    struct stat none {};
    EXPECT_NE(::lstat((h.home() + "/.local/state").c_str(), &none), 0) << "the planner wrote to the host";
    std::vector<std::string> warnings;
    ASSERT_TRUE(run::carry_out(*plan, warnings));
    EXPECT_TRUE(warnings.empty());
    EXPECT_EQ(plan->agent, "Claude Code");
    EXPECT_EQ(env_of(*plan, "CLAUDE_CONFIG_DIR"), state);
    EXPECT_EQ(env_of(*plan, "IS_SANDBOX"), "1");
    EXPECT_EQ(env_of(*plan, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), "1");
    // The caller's PATH, and no ~/.local/bin in front: this home has no claude there.
    EXPECT_EQ(env_of(*plan, "PATH"), "/usr/bin:/bin");

    struct stat st {};
    ASSERT_EQ(::stat(state.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 077, 0u);  // the state is nobody else's business

    const auto* s = mount_at(*plan, state);
    ASSERT_NE(s, nullptr);
    EXPECT_FALSE(s->read_only);
    const auto* settings = mount_at(*plan, state + "/settings.json");
    ASSERT_NE(settings, nullptr);
    EXPECT_TRUE(settings->read_only);
    EXPECT_EQ(settings->src, h.home() + "/.claude/settings.json");
    ASSERT_NE(mount_at(*plan, state + "/commands"), nullptr);
    EXPECT_TRUE(mount_at(*plan, state + "/commands")->read_only);
    // The user's own ~/.claude is never bound whole, and a /login inside finds its
    // credentials file masked.
    EXPECT_EQ(mount_at(*plan, h.home() + "/.claude"), nullptr);
    const auto* creds = mount_at(*plan, state + "/.credentials.json");
    ASSERT_NE(creds, nullptr);
    EXPECT_EQ(creds->kind, plan::MountKind::mask_file);

    // Only user.name and user.email reach the sandbox, in a file of the state.
    EXPECT_EQ(plan->git_identity, "Jane \"J\" Doe <jane@example.org>");
    EXPECT_EQ(env_of(*plan, "GIT_CONFIG_GLOBAL"), state + "/agentjail-gitconfig");
    std::string gc = ajtest::read_file(state + "/agentjail-gitconfig");
    EXPECT_NE(gc.find("name = \"Jane \\\"J\\\" Doe\""), std::string::npos) << gc;
    EXPECT_NE(gc.find("email = \"jane@example.org\""), std::string::npos) << gc;
    EXPECT_EQ(gc.find("helper"), std::string::npos) << gc;
    EXPECT_EQ(gc.find("tok@"), std::string::npos) << gc;
}

TEST(AgentPlan, LinksTheSandboxLeftInTheStateAreReplacedNotFollowed) {
    Home h;
    const std::string key = plan::detail::project_key(h.home() + "/proj");
    const std::string state = h.home() + "/.local/state/agentjail/claude/" + key;
    h.tmp.mkdir("home/.local/state/agentjail/claude/" + key, 0700);
    ::chmod((h.home() + "/.local/state/agentjail/claude").c_str(), 0700);
    ::chmod((h.home() + "/.local/state/agentjail").c_str(), 0700);
    ::chmod((h.home() + "/.local/state").c_str(), 0700);
    h.tmp.write("home/victim", "keep\n");
    // An earlier run planted links where agentjail makes its mount points and writes.
    ASSERT_EQ(::symlink((h.home() + "/victim").c_str(), (state + "/settings.json").c_str()), 0);
    ASSERT_EQ(::symlink((h.home() + "/victim").c_str(), (state + "/agentjail-gitconfig").c_str()), 0);
    ASSERT_EQ(::symlink(h.home().c_str(), (state + "/commands").c_str()), 0);
    auto pol = policy::load("claude");
    ASSERT_TRUE(pol);
    auto plan = plan::build(*pol, {"claude"}, h.host());
    ASSERT_TRUE(plan) << plan.error().message();
    std::vector<std::string> warnings;
    ASSERT_TRUE(run::carry_out(*plan, warnings));
    EXPECT_EQ(ajtest::read_file(h.home() + "/victim"), "keep\n");
    struct stat st {};
    ASSERT_EQ(::lstat((state + "/settings.json").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    ASSERT_EQ(::lstat((state + "/commands").c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    ASSERT_EQ(::lstat((state + "/agentjail-gitconfig").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(AgentPlan, AStateDirectoryThatIsALinkOrForeignIsRefused) {
    Home h;
    h.tmp.mkdir("home/.local/state/agentjail", 0700);
    h.tmp.mkdir("elsewhere", 0700);
    ASSERT_EQ(::symlink((h.tmp.path() + "/elsewhere").c_str(), (h.home() + "/.local/state/agentjail/claude").c_str()),
              0);
    auto pol = policy::load("claude");
    ASSERT_TRUE(pol);
    auto plan = plan::build(*pol, {"claude"}, h.host());
    ASSERT_TRUE(plan) << plan.error().message();
    std::vector<std::string> warnings;
    auto made = run::carry_out(*plan, warnings);
    ASSERT_FALSE(made);
    EXPECT_NE(made.error().message().find("is not a directory (a link or a file): refused"), std::string::npos)
        << made.error().message();
    struct stat st {};
    EXPECT_NE(::lstat((h.tmp.path() + "/elsewhere/settings.json").c_str(), &st), 0) << "made through the link";
}

TEST(AgentPlan, XdgStateHomeMovesTheStateAndOverlapWithTheWorkspaceIsRefused) {
    Home h;
    auto pol = policy::load("codex");
    ASSERT_TRUE(pol);
    auto host = h.host();
    host.environ.push_back("XDG_STATE_HOME=" + h.tmp.path() + "/xdg");
    auto plan = plan::build(*pol, {"codex", "exec", "hi"}, host);
    ASSERT_TRUE(plan) << plan.error().message();
    EXPECT_EQ(plan->state_dir, h.tmp.path() + "/xdg/agentjail/codex/" + plan::detail::project_key(plan->workspace));
    EXPECT_EQ(env_of(*plan, "CODEX_HOME"), plan->state_dir);
    // Codex's own sandbox is turned off with the flags it documents, before its subcommand.
    ASSERT_GE(plan->argv.size(), 4u);
    EXPECT_EQ(plan->argv[0], "codex");
    EXPECT_EQ(plan->argv[1], "-c");
    EXPECT_EQ(plan->argv[2], "sandbox_mode=\"danger-full-access\"");
    EXPECT_EQ(plan->argv[plan->argv.size() - 2], "exec");

    // Another command under the codex preset keeps its arguments as they are.
    auto sh = plan::build(*pol, {"sh", "-c", "true"}, host);
    ASSERT_TRUE(sh);
    EXPECT_EQ(sh->argv, (std::vector<std::string>{"sh", "-c", "true"}));

    host.environ.back() = "XDG_STATE_HOME=" + h.home() + "/proj/.state";
    auto bad = plan::build(*pol, {"codex"}, host);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("overlap; set XDG_STATE_HOME to a directory outside it"), std::string::npos)
        << bad.error().message();
}

// One state per agent and project (issue 25): what one project's run writes into
// the agent's state (a hook, an MCP server) is not there in another project's run.
TEST(AgentPlan, EachProjectHasAStateOfItsOwn) {
    Home h;
    h.tmp.mkdir("home/other/proj");
    auto pol = policy::load("claude");
    ASSERT_TRUE(pol);
    auto a = plan::build(*pol, {"claude"}, h.host());
    auto again = plan::build(*pol, {"claude"}, h.host());
    auto host = h.host();
    host.cwd = h.home() + "/other/proj";  // the same name, another project
    auto b = plan::build(*pol, {"claude"}, host);
    ASSERT_TRUE(a && again && b);
    EXPECT_EQ(a->state_dir, again->state_dir);
    EXPECT_NE(a->state_dir, b->state_dir);
    EXPECT_EQ(util::base_name(a->state_dir).substr(0, 5), "proj-");
    EXPECT_EQ(util::base_name(b->state_dir).substr(0, 5), "proj-");
    EXPECT_EQ(env_of(*b, "CLAUDE_CONFIG_DIR"), b->state_dir);
    // Only the project's own state is bound: the agent's directory of all projects is not.
    EXPECT_EQ(mount_at(*b, h.home() + "/.local/state/agentjail/claude"), nullptr);
    ASSERT_NE(mount_at(*b, b->state_dir), nullptr);
    // Names that are no file name, and no workspace at all.
    EXPECT_EQ(plan::detail::project_key("/"), "root-" + plan::detail::project_key("/").substr(5));
    EXPECT_EQ(plan::detail::project_key("/x/.hidden dir").substr(0, 12), "_hidden_dir-");
    EXPECT_EQ(plan::detail::project_key(""), "no-workspace");
    EXPECT_EQ(plan::detail::project_key("/a/" + std::string(60, 'n')).size(), 32u + 1 + 12);
}

TEST(AgentPlan, NoGitIdentityIsANoteNotAnError) {
    Home h;
    ::unlink((h.home() + "/.gitconfig").c_str());
    auto pol = policy::load("agent");
    ASSERT_TRUE(pol);
    auto plan = plan::build(*pol, {"my-agent"}, h.host());
    ASSERT_TRUE(plan) << plan.error().message();
    EXPECT_TRUE(plan->git_identity.empty());
    EXPECT_EQ(env_of(*plan, "GIT_CONFIG_GLOBAL"), "(unset)");
    EXPECT_EQ(env_of(*plan, "AGENTJAIL_STATE"), plan->state_dir);
    bool noted = false;
    for (const auto& n : plan->notes) noted |= n.find("git identity: no user.name") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(AgentPlan, StatePlaceholdersNeedAState) {
    Home h;
    auto pol = policy::load_text("[environment.set]\nX = '{state}/x'\n", "t.toml");
    ASSERT_TRUE(pol);
    auto plan = plan::build(*pol, {"true"}, h.host());
    ASSERT_FALSE(plan);
    EXPECT_EQ(plan.error().message(), "t.toml:2:5 (environment.set.X): X uses {state}, but the policy has no [agent] state");
}

}  // namespace
}  // namespace agentjail
