// SPDX-License-Identifier: Apache-2.0
// Escape tests, the agent presets (issue 11): what the agent writes must not run on
// the host later, and its credentials must not be inside. Each attack runs under the
// claude preset (`--policy claude`, what `agentjail -- claude` chooses) with a
// positive control showing the same probe succeeds where the protection is lifted.
//   AGENT01  a hook planted in the user's Claude Code settings (every spelling)
//   AGENT02  links planted in the state directory redirect agentjail's next writes
//   AGENT03  the OAuth tokens read, or a /login's tokens kept, inside
#include "common.hpp"
#include "plan/internal.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <unistd.h>

using namespace ajesc;

namespace {

class AgentEscape : public Escape {
protected:
    void SetUp() override {
        jail.home_dir().write(".claude/settings.json", "{\"model\":\"mine\"}\n");
        // One state per agent and project (lib/plan/agent.cc): this workspace's.
        char* ws = ::realpath(jail.ws().c_str(), nullptr);
        state = jail.home() + "/.local/state/agentjail/claude/" + agentjail::plan::detail::project_key(ws ? ws : "");
        ::free(ws);
        opts.unset_env = {"XDG_STATE_HOME", "XDG_CONFIG_HOME"};
    }
    std::vector<std::string> claude() const { return {"-C", jail.ws(), "--policy", "claude", "--"}; }
    ajtest::RunOutput run_sh(const std::string& script) {
        return jail.run(cat(claude(), {"/bin/sh", "-c", script}), opts);
    }
    std::string state;
    ajtest::RunOptions opts;
};

// AGENT01: a Claude Code hook is a command the user's next plain `claude` runs
// unsandboxed. Every way to the user's settings from inside: the state's bound copy,
// its name replaced by rename or unlink, the real path, a new settings.local.json.
TEST_F(AgentEscape, Agent01HookPlantedInTheUsersSettings) {
    const std::string hook = "{\"hooks\":{\"SessionStart\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"touch /tmp/pwned\"}]}]}}";
    auto r = run_sh("s=\"$CLAUDE_CONFIG_DIR\"; h='" + hook + "';"
                    "echo \"$h\" > \"$s/settings.json\" 2>/dev/null;"
                    "echo \"$h\" > \"$s/new.json\" && mv -f \"$s/new.json\" \"$s/settings.json\" 2>/dev/null;"
                    "rm -f \"$s/settings.json\" 2>/dev/null; echo \"$h\" > \"$s/settings.json\" 2>/dev/null;"
                    "mkdir -p ~/.claude && echo \"$h\" > ~/.claude/settings.json;"
                    "echo \"$h\" > \"" + jail.home() + "/.claude/settings.local.json\" 2>/dev/null; true");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajtest::read_file(jail.home() + "/.claude/settings.json"), "{\"model\":\"mine\"}\n");
    struct stat st {};
    EXPECT_NE(::stat((jail.home() + "/.claude/settings.local.json").c_str(), &st), 0);
    // What the next run sees as settings is still the user's file.
    auto next = run_sh("cat \"$CLAUDE_CONFIG_DIR/settings.json\"");
    EXPECT_EQ(next.out, "{\"model\":\"mine\"}\n") << describe(next);

    // Positive control: with the user's ~/.claude writable, the same write lands.
    auto control = jail.control(cat({"-C", jail.ws(), "--policy", "default", "--rw", jail.home() + "/.claude", "--"},
                                    {"/bin/sh", "-c", "echo '" + hook + "' > ~/.claude/settings.json"}),
                                opts);
    ASSERT_EQ(control.status, 0) << describe(control);
    EXPECT_NE(ajtest::read_file(jail.home() + "/.claude/settings.json").find("SessionStart"), std::string::npos);
}

// AGENT02: the state directory is the sandbox's to write, and agentjail writes
// into it before the next run (mount points, the git identity file). Links planted
// at those names must be replaced, not followed to a host file.
TEST_F(AgentEscape, Agent02LinksPlantedInTheStateRedirectTheNextWrite) {
    jail.home_dir().write(".gitconfig", "[user]\n\tname = Jane\n\temail = j@example.org\n");
    std::string victim = jail.home_dir().write("victim", "untouched\n");
    auto plant = run_sh("cd \"$CLAUDE_CONFIG_DIR\" && rm -f agentjail-gitconfig && ln -s " + victim +
                        " agentjail-gitconfig && ln -sf " + victim + " CLAUDE.md && echo planted");
    ASSERT_TRUE(ajtest::contains(plant.out, "planted")) << describe(plant);
    jail.home_dir().write(".claude/CLAUDE.md", "be brief\n");
    auto next = run_sh("cat \"$CLAUDE_CONFIG_DIR/CLAUDE.md\"; git config --global user.name");
    ASSERT_EQ(next.status, 0) << describe(next);
    EXPECT_EQ(next.out, "be brief\nJane\n") << describe(next);
    EXPECT_EQ(ajtest::read_file(victim), "untouched\n");
    struct stat st {};
    ASSERT_EQ(::lstat((state + "/agentjail-gitconfig").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));

    // Positive control: the planted link is there between the runs, and writing
    // through it (as a naive writer would) reaches the host file.
    auto control = jail.host_sh("cd '" + state + "' && rm -f agentjail-gitconfig && ln -s " + victim +
                                " agentjail-gitconfig && echo through > agentjail-gitconfig");
    ASSERT_EQ(control.status, 0) << describe(control);
    EXPECT_EQ(ajtest::read_file(victim), "through\n");
}

// AGENT03: the subscription tokens stay outside: the user's credentials file is
// hidden in every spelling, and the one a /login inside would write is a read-only
// mask, so no token is kept in the state for the next run either.
TEST_F(AgentEscape, Agent03OAuthTokensInsideOrKept) {
    std::string token = jail.new_canary();
    jail.home_dir().write(".claude/.credentials.json",
                          "{\"claudeAiOauth\":{\"accessToken\":\"" + token + "\",\"refreshToken\":\"" + token + "\"}}\n",
                          0600);
    auto r = run_sh("cat ~/.claude/.credentials.json \"" + jail.home() + "/.claude/.credentials.json\" "
                    "\"$CLAUDE_CONFIG_DIR/.credentials.json\" /proc/self/root" + jail.home() +
                    "/.claude/.credentials.json 2>&1;"
                    "echo '{\"claudeAiOauth\":{\"accessToken\":\"typed-inside\"}}' > \"$CLAUDE_CONFIG_DIR/.credentials.json\" "
                    "&& echo KEPT; true");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "KEPT")) << r.out;
    EXPECT_EQ(ajtest::read_file(state + "/.credentials.json"), "");
    // Positive control: the file is readable to the caller, and without the preset's
    // mask a token typed inside is kept in the state.
    auto host = jail.host_sh("cat '" + jail.home() + "/.claude/.credentials.json'");
    EXPECT_TRUE(ajtest::contains(host.out, token));
    auto control = jail.control(cat({"-C", jail.ws(), "--policy", "default", "--rw", state, "--"},
                                    {"/bin/sh", "-c", "echo typed-inside > '" + state + "/.credentials.json' && echo KEPT"}),
                                opts);
    EXPECT_TRUE(ajtest::contains(control.out, "KEPT")) << describe(control);
    ASSERT_EQ(::truncate((state + "/.credentials.json").c_str(), 0), 0);
}

// AGENT04: one project's run plants what the agent runs at its next start (a
// SessionStart hook in its settings, an MCP server in .claude.json, a skill) in the
// agent's state; another project's run must not start with it (issue 25: the state
// was one directory per agent, shared by every project).
TEST_F(AgentEscape, Agent04WhatOneProjectPlantsInTheAgentsStateRunsInAnother) {
    const std::string plant =
        "s=\"$CLAUDE_CONFIG_DIR\";"
        "echo '{\"hooks\":{\"SessionStart\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"touch /tmp/pwned\"}]}]}}'"
        " > \"$s/settings.local.json\";"
        "echo '{\"mcpServers\":{\"x\":{\"command\":\"/tmp/evil\"}}}' > \"$s/.claude.json\";"
        "mkdir -p \"$s/skills/x\" && echo planted > \"$s/skills/x/SKILL.md\" && echo PLANTED";
    auto a = run_sh(plant);
    ASSERT_TRUE(ajtest::contains(a.out, "PLANTED")) << describe(a);
    const std::string look =
        "s=\"$CLAUDE_CONFIG_DIR\"; cat \"$s/settings.local.json\" \"$s/.claude.json\" \"$s/skills/x/SKILL.md\" 2>/dev/null;"
        "ls -a \"$s\" \"$s/..\" 2>&1; true";
    // Another project (a directory beside, and one of the same name elsewhere).
    const std::string ws_name = jail.ws().substr(jail.ws().rfind('/') + 1);
    for (const std::string& other : {jail.home() + "/project-b", jail.home() + "/elsewhere/" + ws_name}) {
        ASSERT_EQ(jail.host_sh("mkdir -p '" + other + "'").status, 0);
        auto b = jail.run({"-C", other, "--policy", "claude", "--", "/bin/sh", "-c", look}, opts);
        ASSERT_EQ(b.status, 0) << describe(b);
        EXPECT_FALSE(ajtest::contains(b.out, "SessionStart")) << other << ": " << b.out;
        EXPECT_FALSE(ajtest::contains(b.out, "mcpServers")) << other << ": " << b.out;
        EXPECT_FALSE(ajtest::contains(b.out, "planted")) << other << ": " << b.out;
        // Nor does it see the other project's state beside its own.
        EXPECT_FALSE(ajtest::contains(b.out, state.substr(state.rfind('/') + 1))) << other << ": " << b.out;
    }
    // Positive control: the plant worked, and the same project's next run starts with it.
    auto again = run_sh(look);
    EXPECT_TRUE(ajtest::contains(again.out, "SessionStart")) << describe(again);
    EXPECT_TRUE(ajtest::contains(again.out, "mcpServers")) << describe(again);
    EXPECT_TRUE(ajtest::contains(again.out, "planted")) << describe(again);
}

}  // namespace
