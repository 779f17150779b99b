// SPDX-License-Identifier: Apache-2.0
// The agent presets in real sandboxes: chosen by the command's name, the agent's
// state kept between runs, the user's own settings read-only, the credentials
// outside, and commits with the user's identity and nothing else of the git
// config. The "agent" here is a script installed the way Claude Code's own
// installer does (~/.local/bin/claude, a link into ~/.local/share/claude); the
// real clients are tests/integration/test_agents.cc.
#include "common.hpp"
#include "plan/internal.hpp"

#include <sys/stat.h>

#include <cstdlib>

namespace ajit {
namespace {

class AgentPresets : public Sandbox {
protected:
    void SetUp() override {
        // The fake agent prints what a real one would depend on, then runs "$@".
        jail.home_dir().write(".local/share/claude/versions/1/claude",
                              "#!/bin/sh\n"
                              "echo CONFIG=$CLAUDE_CONFIG_DIR\n"
                              "echo SANDBOX=$IS_SANDBOX\n"
                              "echo TRAFFIC=$CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC\n"
                              "echo ARGC=$#\n"
                              "[ $# -gt 0 ] && exec \"$@\"\n"
                              "exit 0\n",
                              0755);
        std::string bin = jail.home() + "/.local/bin";
        jail.home_dir().mkdir(".local/bin");
        ASSERT_EQ(::symlink("../share/claude/versions/1/claude", (bin + "/claude").c_str()), 0);
        opts.unset_env = {"XDG_STATE_HOME", "XDG_CONFIG_HOME"};
        // One state per agent and project (lib/plan/agent.cc): this workspace's.
        char* ws = ::realpath(jail.ws().c_str(), nullptr);
        state = jail.home() + "/.local/state/agentjail/claude/" + agentjail::plan::detail::project_key(ws ? ws : "");
        ::free(ws);
    }
    ajtest::RunOutput claude(const std::vector<std::string>& args, const std::vector<std::string>& flags = {}) {
        std::vector<std::string> a = {"-C", jail.ws()};
        a.insert(a.end(), flags.begin(), flags.end());
        a.push_back("--");
        a.push_back("claude");
        a.insert(a.end(), args.begin(), args.end());
        return jail.run(a, opts);
    }
    ajtest::RunOptions opts;
    std::string state;
};

TEST_F(AgentPresets, ClaudeIsChosenByItsNameAndItsStateIsKeptBetweenRuns) {
    auto explain = jail.run({"explain", "-C", jail.ws(), "--", "claude"}, opts);
    ASSERT_EQ(explain.status, 0) << describe(explain);
    EXPECT_TRUE(ajtest::contains(explain.out, "policy     claude  (layers: minimal -> default -> net-balanced -> claude)"))
        << explain.out;
    EXPECT_TRUE(ajtest::contains(explain.out, "chosen by the command's name (claude)")) << explain.out;
    EXPECT_TRUE(ajtest::contains(explain.out, "state      " + state)) << explain.out;

    auto first = claude({"sh", "-c", "echo run >> \"$CLAUDE_CONFIG_DIR/.claude.json\"; wc -l < \"$CLAUDE_CONFIG_DIR/.claude.json\""});
    ASSERT_EQ(first.status, 0) << describe(first);
    EXPECT_EQ(field(first.out, "CONFIG"), state);
    EXPECT_EQ(field(first.out, "SANDBOX"), "1");
    EXPECT_EQ(field(first.out, "TRAFFIC"), "1");
    EXPECT_EQ(ajtest::lines(first.out).back(), "1") << first.out;
    auto second = claude({"sh", "-c", "echo run >> \"$CLAUDE_CONFIG_DIR/.claude.json\"; wc -l < \"$CLAUDE_CONFIG_DIR/.claude.json\""});
    ASSERT_EQ(second.status, 0) << describe(second);
    EXPECT_EQ(ajtest::lines(second.out).back(), "2") << "the state did not persist:\n" << second.out;
    EXPECT_EQ(ajtest::read_file(state + "/.claude.json"), "run\nrun\n");

    // --policy default turns the preset off: no state, and ~/.local/bin is not there.
    auto off = jail.run({"-C", jail.ws(), "--policy", "default", "--", "claude"}, opts);
    EXPECT_EQ(off.status, 127) << describe(off);
    auto verbose = jail.run({"-v", "-C", jail.ws(), "--", "claude"}, opts);
    ASSERT_EQ(verbose.status, 0) << describe(verbose);
    EXPECT_TRUE(ajtest::contains(verbose.err, "chosen by the command's name (claude)")) << verbose.err;
}

// explain makes nothing on the host (issue 12: before, it created the agent's state
// directory and the git identity file); it says what a run will make. And -v prints
// the plan the run carries out: the same rows as explain's for the same arguments.
TEST_F(AgentPresets, ExplainChangesNothingOnTheHostAndVerboseShowsTheRunsOwnPlan) {
    jail.home_dir().write(".gitconfig", "[user]\n\tname = Dry Run\n\temail = dry@example.com\n");
    const std::string base = jail.home() + "/.local/state";
    struct stat st {};
    ASSERT_NE(::lstat(base.c_str(), &st), 0) << "the fixture's home already has " << base;
    auto explain = jail.run({"explain", "-C", jail.ws(), "--", "claude", "true"}, opts);
    ASSERT_EQ(explain.status, 0) << describe(explain);
    EXPECT_NE(::lstat(base.c_str(), &st), 0) << "explain created " << base;
    EXPECT_TRUE(ajtest::contains(explain.out, "agent state: a run creates " + state)) << explain.out;
    EXPECT_TRUE(ajtest::contains(explain.out, "state      " + state)) << explain.out;
    EXPECT_TRUE(ajtest::contains(explain.out, "git identity: a run writes it to " + state + "/agentjail-gitconfig"))
        << explain.out;

    // The run makes them (the positive control: explain could have, and did not).
    auto run = jail.run({"-v", "-C", jail.ws(), "--", "claude", "true"}, opts);
    ASSERT_EQ(run.status, 0) << describe(run);
    EXPECT_EQ(::lstat(state.c_str(), &st), 0) << "the run did not create " << state;
    EXPECT_EQ(ajtest::read_file(state + "/agentjail-gitconfig").find("Dry Run") != std::string::npos, true);
    // -v's plan is the one spawn built: printed once, and its rows are explain's
    // (the mounts, the environment, the command), both ways: explain planned with
    // what the run was going to make as if made (plan::HostView). Only each run's
    // CA directory name is its own.
    size_t n = 0;
    for (size_t at = run.err.find("policy     claude"); at != std::string::npos;
         at = run.err.find("policy     claude", at + 1))
        ++n;
    EXPECT_EQ(n, 1u) << "the plan was printed " << n << " times:\n" << run.err;
    auto rows = [](const std::string& text) {
        std::vector<std::string> out;
        for (const auto& l : ajtest::lines(text))
            if (l.rfind("  ro ", 0) == 0 || l.rfind("  rw ", 0) == 0 || l.rfind("command", 0) == 0 ||
                l.rfind("resolves", 0) == 0)
                if (l.find("agentjail-ca-") == std::string::npos) out.push_back(l);
        return out;
    };
    auto explained = rows(explain.out);
    ASSERT_FALSE(explained.empty()) << explain.out;
    for (const auto& r : explained) EXPECT_TRUE(ajtest::contains(run.err, r)) << "-v lacks: " << r << "\n" << run.err;
    for (const auto& r : rows(run.err))
        EXPECT_TRUE(ajtest::contains(explain.out, r)) << "explain lacks: " << r << "\n" << explain.out;
    EXPECT_TRUE(ajtest::contains(explain.out, "made on the host before the sandbox:")) << explain.out;
    EXPECT_TRUE(ajtest::contains(explain.out, "  file  " + state + "/agentjail-gitconfig")) << explain.out;
}

TEST_F(AgentPresets, TheUsersClaudeFilesAreReadOnlyAndItsTokensStayOutside) {
    std::string token = jail.new_canary();
    jail.home_dir().write(".claude/.credentials.json", "{\"claudeAiOauth\":{\"accessToken\":\"" + token + "\"}}\n", 0600);
    jail.home_dir().write(".claude/settings.json", "{\"model\":\"mine\"}\n");
    jail.home_dir().write(".claude/commands/review.md", "review it\n");
    jail.home_dir().write(".claude.json", "{\"userID\":\"host\"}\n");
    auto r = claude({"sh", "-c",
                     "cat \"$CLAUDE_CONFIG_DIR/settings.json\" \"$CLAUDE_CONFIG_DIR/commands/review.md\";"
                     "echo '{\"hooks\":\"planted\"}' > \"$CLAUDE_CONFIG_DIR/settings.json\" && echo WROTE-SETTINGS;"
                     "echo planted > \"$CLAUDE_CONFIG_DIR/commands/x.md\" && echo WROTE-COMMAND;"
                     "echo stolen > \"$CLAUDE_CONFIG_DIR/.credentials.json\" && echo WROTE-CREDENTIALS;"
                     "cat \"$CLAUDE_CONFIG_DIR/.credentials.json\" ~/.claude/.credentials.json ~/.claude.json 2>&1;"
                     "ls -a ~/.claude 2>&1; true"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "{\"model\":\"mine\"}")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "review it")) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "WROTE-")) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "host")) << "the user's ~/.claude.json is visible:\n" << r.out;
    EXPECT_EQ(ajtest::read_file(jail.home() + "/.claude/settings.json"), "{\"model\":\"mine\"}\n");
    struct stat st {};
    EXPECT_NE(::stat((jail.home() + "/.claude/commands/x.md").c_str(), &st), 0);
    // Positive control: the same script without the preset's binds can write there.
    auto control = jail.control({"-C", jail.ws(), "--policy", "default", "--rw", jail.home() + "/.claude", "--",
                                 "sh", "-c", "echo planted > ~/.claude/commands/x.md && echo WROTE-COMMAND"},
                                opts);
    EXPECT_TRUE(ajtest::contains(control.out, "WROTE-COMMAND")) << describe(control);
}

// The caller's API key becomes a proxied secret with no flag: inside, a placeholder
// that is the same on every run with this state (Claude Code remembers the keys it
// was told to use by their last characters, so a new one each run asks again).
TEST_F(AgentPresets, TheApiKeyIsAPlaceholderInsideTheSameOnEveryRun) {
    std::string key = jail.new_canary();
    opts.env.push_back("ANTHROPIC_API_KEY=" + key);
    auto first = claude({"sh", "-c", "echo KEY=$ANTHROPIC_API_KEY"});
    ASSERT_EQ(first.status, 0) << describe(first);
    std::string inside = field(first.out, "KEY");
    EXPECT_EQ(inside.rfind("agentjail-secret-placeholder-ANTHROPIC_API_KEY-", 0), 0u) << first.out;
    auto second = claude({"sh", "-c", "echo KEY=$ANTHROPIC_API_KEY"});
    EXPECT_EQ(field(second.out, "KEY"), inside) << second.out;
    // Another agent's state gives another placeholder for the same key.
    auto other = jail.run({"-C", jail.ws(), "--policy", "aider", "--", "sh", "-c", "echo KEY=$ANTHROPIC_API_KEY"}, opts);
    ASSERT_EQ(other.status, 0) << describe(other);
    EXPECT_EQ(field(other.out, "KEY").rfind("agentjail-secret-placeholder-ANTHROPIC_API_KEY-", 0), 0u) << other.out;
    EXPECT_NE(field(other.out, "KEY"), inside);
}

TEST_F(AgentPresets, CommitsInsideCarryTheUsersIdentityAndNoOtherGitConfig) {
    jail.home_dir().write(".gitconfig",
                          "[user]\n\tname = Jane Doe\n\temail = jane@example.org\n"
                          "[credential]\n\thelper = store\n"
                          "[alias]\n\tst = !echo ALIAS-RAN\n");
    auto init = jail.host_sh("cd '" + jail.ws() + "' && git init -q . && echo ok");
    ASSERT_TRUE(ajtest::contains(init.out, "ok")) << describe(init);
    auto r = claude({"sh", "-c",
                     "git -c safe.directory='*' commit -q --allow-empty -m inside && git -c safe.directory='*' log "
                     "--format='AUTHOR=%an <%ae>' -1; echo HELPER=$(git config --global credential.helper); git st "
                     "2>&1 | head -1"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "AUTHOR"), "Jane Doe <jane@example.org>") << r.out;
    EXPECT_EQ(field(r.out, "HELPER"), "") << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "ALIAS-RAN")) << r.out;
    // Positive control: on the host the same config has the helper and the alias.
    auto host = jail.host_sh("git config --global credential.helper; cd '" + jail.ws() + "' && git st");
    EXPECT_TRUE(ajtest::contains(host.out, "store")) << describe(host);
    EXPECT_TRUE(ajtest::contains(host.out, "ALIAS-RAN")) << describe(host);
}

// Package managers' caches under an agent preset are the agent's, per project, and
// kept between runs (issue 27, item 1); the host's own ~/.npm is never written.
TEST_F(AgentPresets, CachesAreKeptPerAgentAndProjectNeverTheHosts) {
    jail.home_dir().write(".npm/_cacache/host-entry", "the host's own cache\n");
    auto first = claude({"sh", "-c", "ls ~/.npm; echo cached > ~/.npm/from-run; mkdir -p ~/.cache/pip && echo p > ~/.cache/pip/x"});
    ASSERT_EQ(first.status, 0) << describe(first);
    EXPECT_FALSE(ajtest::contains(first.out, "_cacache")) << "the host's cache is visible:\n" << first.out;
    auto second = claude({"sh", "-c", "cat ~/.npm/from-run ~/.cache/pip/x"});
    ASSERT_EQ(second.status, 0) << describe(second);
    EXPECT_TRUE(ajtest::contains(second.out, "cached\np\n")) << "the cache did not persist:\n" << second.out;
    EXPECT_EQ(ajtest::read_file(state + "/cache/npm/from-run"), "cached\n");
    struct stat st {};
    EXPECT_NE(::lstat((jail.home() + "/.npm/from-run").c_str(), &st), 0) << "the run wrote the host's ~/.npm";
    // Control: with --policy default the cache is the private home's, gone after the run.
    auto off = jail.run({"-C", jail.ws(), "--policy", "default", "--", "sh", "-c", "cat ~/.npm/from-run"}, opts);
    EXPECT_NE(off.status, 0) << describe(off);
}

}  // namespace
}  // namespace ajit
