// SPDX-License-Identifier: Apache-2.0
// Interactive agents inside agentjail, driven through tmux as a user at a terminal
// drives them: Claude Code's own interface (the first run's screens, the state kept
// for the second, keys, a resize, ^C, the terminal as it was), and a REPL agent
// written against the Anthropic SDK (tests/support/agents/agent.js) that runs the
// model's tool call inside. Both talk to the stand-in model API
// (tests/support/model_standin.hpp); the clients come from scripts/setup.sh
// (tests/support/agent_clients.hpp).
#include "agent_clients.hpp"
#include "common.hpp"
#include "model_standin.hpp"
#include "net_support.hpp"
#include "pty_shell.hpp"
#include "record.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace {

using ajit::describe;
using ajmodel::ModelStandin;

std::string q(const std::string& s) { return ajtest::shell_quote(s); }

long long now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

// Host pids (not this process) whose environment holds marker: the agentjail the
// test started and everything below it, sandbox or not (they inherit the variable).
std::vector<int> pids_with_env(const std::string& marker) {
    std::vector<int> found;
    DIR* d = opendir("/proc");
    if (d == nullptr) return found;
    while (dirent* e = readdir(d)) {
        char* end = nullptr;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || pid == getpid()) continue;
        if (ajtest::read_file(std::string("/proc/") + e->d_name + "/environ").find(marker) != std::string::npos)
            found.push_back(static_cast<int>(pid));
    }
    closedir(d);
    return found;
}

bool wait_no_pids_with_env(const std::string& marker, int timeout_ms) {
    long long deadline = now_ms() + timeout_ms;
    while (!pids_with_env(marker).empty()) {
        if (now_ms() >= deadline) return false;
        ajtest::sleep_ms(50);
    }
    return true;
}

// A private tmux server (its socket in the test's scratch directory, so nothing is
// shared with another test or a user's tmux) with one window running /bin/sh in
// `cwd`: the terminal the test types into and reads from.
class Tmux {
public:
    Tmux(const std::string& dir, int cols, int rows, const std::string& cwd) : sock_(dir + "/tmux.sock") {
        auto r = tmux({"-f", "/dev/null", "new-session", "-d", "-s", "aj", "-x", std::to_string(cols), "-y",
                       std::to_string(rows), "-c", cwd, "-e", "PS1=$ ", "exec /bin/sh"});
        ok_ = r.status == 0;
        if (!ok_) error_ = describe(r);
        // The shell's first prompt ("$ ", or "# " as root whatever PS1 says).
        if (ok_) ok_ = wait_for([](const std::string& s) { return !ajtest::trim(s).empty(); }, 10000);
        if (!ok_ && error_.empty()) error_ = "no prompt from the pane's shell:\n" + last_;
    }
    ~Tmux() { tmux({"kill-server"}); }
    Tmux(const Tmux&) = delete;
    Tmux& operator=(const Tmux&) = delete;

    bool ok() const { return ok_; }
    const std::string& error() const { return error_; }

    ajtest::RunOutput tmux(std::vector<std::string> args) const {
        args.insert(args.begin(), {"tmux", "-S", sock_});
        return ajtest::run(args);
    }
    // Keys by tmux's names (Enter, Up, C-c) and literal text.
    void keys(const std::vector<std::string>& names) const {
        std::vector<std::string> a = {"send-keys", "-t", "aj"};
        a.insert(a.end(), names.begin(), names.end());
        tmux(a);
    }
    void type(const std::string& text) const { tmux({"send-keys", "-t", "aj", "-l", text}); }
    void line(const std::string& text) const {
        type(text);
        keys({"Enter"});
    }
    void resize(int cols, int rows) const {
        tmux({"resize-window", "-t", "aj", "-x", std::to_string(cols), "-y", std::to_string(rows)});
    }
    // The visible screen, one line per row, no-break spaces as spaces (Claude Code
    // writes one after its "❯").
    std::string screen() const {
        std::string s = tmux({"capture-pane", "-p", "-t", "aj"}).out;
        for (size_t p = 0; (p = s.find("\xc2\xa0", p)) != std::string::npos;) s.replace(p, 2, " ");
        return s;
    }
    // `stty -a` of the pane's terminal, read from outside while the shell waits.
    std::string stty() const {
        std::string tty = ajtest::trim(tmux({"display-message", "-p", "-t", "aj", "#{pane_tty}"}).out);
        auto r = ajtest::run({"stty", "-a", "-F", tty});
        return r.status == 0 ? r.out : "stty failed: " + describe(r);
    }
    // Polls the screen until pred holds (every screen seen is kept in seen()).
    bool wait_for(const std::function<bool(const std::string&)>& pred, int timeout_ms) {
        long long deadline = now_ms() + timeout_ms;
        for (;;) {
            last_ = screen();
            if (seen_.empty() || seen_.back() != last_) seen_.push_back(last_);
            if (pred(last_)) return true;
            if (now_ms() >= deadline) return false;
            ajtest::sleep_ms(100);
        }
    }
    // Waits until the screen has not changed for quiet_ms (at most timeout_ms): a
    // dialog still being drawn again takes the keys sent meanwhile.
    bool wait_still(int quiet_ms, int timeout_ms) {
        long long deadline = now_ms() + timeout_ms;
        long long since = now_ms();
        std::string prev = screen();
        for (;;) {
            ajtest::sleep_ms(100);
            last_ = screen();
            if (last_ != prev) {
                if (seen_.empty() || seen_.back() != last_) seen_.push_back(last_);
                prev = last_;
                since = now_ms();
            } else if (now_ms() - since >= quiet_ms) {
                return true;
            }
            if (now_ms() >= deadline) return false;
        }
    }
    bool wait_for(const std::string& needle, int timeout_ms = 60000) {
        return wait_for([&](const std::string& s) { return ajtest::contains(s, needle); }, timeout_ms);
    }
    // Sends a key until the screen shows `needle`: a dialog drawn is not always yet
    // reading keys, and a key sent too early is lost. Waits long enough after each
    // press that a slow redraw is not taken for a lost key.
    bool press_until(const std::string& key, const std::string& needle, int tries = 5) {
        for (int i = 0; i < tries; ++i) {
            keys({key});
            if (wait_for(needle, 3000)) return true;
        }
        return false;
    }
    const std::string& last() const { return last_; }
    // Every distinct screen since the last forget(), for "this never showed".
    std::string seen() const {
        std::string all;
        for (const auto& s : seen_) all += s + "\n=====\n";
        return all;
    }
    void forget() { seen_.clear(); }

private:
    std::string sock_;
    bool ok_ = false;
    std::string error_;
    std::string last_;
    std::vector<std::string> seen_;
};

// The widths of the screen's horizontal rules (lines of U+2500 only), widest first.
int widest_rule(const std::string& screen) {
    int widest = 0;
    for (const auto& l : ajtest::lines(screen)) {
        std::string t = ajtest::trim(l);
        if (t.empty() || t.size() % 3 != 0) continue;
        bool rule = true;
        for (size_t i = 0; i < t.size() && rule; i += 3) rule = t.compare(i, 3, "\u2500") == 0;
        if (rule) widest = std::max(widest, static_cast<int>(t.size() / 3));
    }
    return widest;
}

// The screen shows a line that is only "❯" (Claude Code's empty input line).
bool input_line_empty(const std::string& screen) {
    for (const auto& l : ajtest::lines(screen))
        if (ajtest::trim(l) == "\u276f") return true;
    return false;
}

// The name the tests give the stand-in's host, pinned to the host's loopback.

class AgentsTui : public ajit::Sandbox {
protected:
    // A test that stopped early has ended its tmux server (and so the run, by SIGHUP):
    // wait for agentjail to finish before the workspace and home are removed, so that
    // its teardown does not race their removal.
    void TearDown() override {
        EXPECT_TRUE(wait_no_pids_with_env(marker, 20000)) << "processes left after the test";
        ajit::Sandbox::TearDown();
    }
    ajtest::TempDir scratch{"aj-tui"};
    ajtest::TempDir state{"aj-tui-state"};  // XDG_STATE_HOME: the presets' state dirs go here
    const std::string key = jail.new_canary();          // the real key: a canary, swept from every output
    const std::string marker = ajit::unique_name("AJTUI");  // in the environment of all the run's processes

    ModelStandin::Options standin_options() const { return {}; }  // plain HTTP on the host's 127.0.0.1

    // THE ONE PLACE that says how a sandboxed client reaches the stand-in and gets its key:
    // as a user would. ANTHROPIC_BASE_URL=http://127.0.0.1:PORT in agentjail's
    // environment names the gateway; the key is ANTHROPIC_API_KEY in the environment
    // ("env": the claude preset, chosen by the command's name, makes it a secret put
    // in at the gateway), or in the workspace's .env ("dotenv": `--secret
    // ANTHROPIC_API_KEY=dotenv:.env`, which under `default` goes to the Anthropic API
    // and to the gateway ANTHROPIC_BASE_URL names).
    struct Route {
        std::vector<std::string> flags;
        std::vector<std::string> env;
    };
    Route route(const ModelStandin& standin, const std::string& extends, const std::string& key_source,
                bool /*https*/) {
        Route r;
        r.env = {"ANTHROPIC_BASE_URL=" + standin.origin()};
        if (key_source == "dotenv") {
            r.flags = {"--secret", "ANTHROPIC_API_KEY=dotenv:.env"};
        } else {
            r.env.push_back("ANTHROPIC_API_KEY=" + key);
        }
        if (extends != "claude") r.flags.insert(r.flags.begin(), {"--policy", extends});
        return r;
    }
    // Placeholders are the same on every run for one secret and state directory, so
    // Claude Code asks once whether to use "the custom API key" it sees.
    static constexpr bool kStablePlaceholders = true;

    // A script that runs agentjail with exactly this environment (nothing of the test
    // process's) and the flags, from the pane's shell: `sh SCRIPT; echo AJ-EXIT=$?`.
    std::string script(const std::string& name, const Route& rt, const std::vector<std::string>& flags,
                       const std::vector<std::string>& command) {
        std::string s = "exec env -i TERM=\"$TERM\" PATH=/usr/local/bin:/usr/bin:/bin HOME=" + q(jail.home()) +
                        " XDG_STATE_HOME=" + q(state.path()) + " AJ_TUI_MARKER=" + q(marker);
        for (const auto& e : rt.env) s += " " + q(e);
        s += " " + q(ajtest::agentjail_bin()) + " -C " + q(jail.ws()) + " --ro " + q(ajclients::dir()) +
             " -e AJ_TUI_MARKER=" + q(marker);
        for (const auto& f : rt.flags) s += " " + q(f);
        for (const auto& f : flags) s += " " + q(f);
        s += " --";
        for (const auto& c : command) s += " " + q(c);
        return scratch.write(name, s + "\n");
    }

    // Starts the script in the pane.
    void start(Tmux& t, const std::string& path) {
        t.forget();
        t.line("clear; sh " + q(path) + "; echo AJ-EXIT=$?");
    }
    // The run's exit status as the pane's shell printed it, once it is back; -1 if not.
    int exit_status(Tmux& t, int timeout_ms = 60000) {
        if (!t.wait_for("AJ-EXIT=", timeout_ms)) return -1;
        std::string s = t.last();
        return std::atoi(s.substr(s.find("AJ-EXIT=") + 8).c_str());
    }
    // The screens go into the canary sweep like any run's output.
    void record(const Tmux& t) {
        ajtest::RunOutput r;
        r.out = t.seen();
        jail.record(r);
    }

    // Claude Code inside with the claude preset (its state directory under
    // XDG_STATE_HOME), the key from agentjail's environment.
    std::string claude_script(const std::string& name, const ModelStandin& standin,
                              const std::vector<std::string>& flags = {}) {
        Route rt = route(standin, "claude", "env", true);
        // The test's own install: not under /usr, so not on the preset's PATH.
        std::vector<std::string> f = {"-e", "PATH=" + ajclients::bin() + ":/usr/local/bin:/usr/bin:/bin"};
        f.insert(f.end(), flags.begin(), flags.end());
        return script(name, rt, f, {"claude"});
    }
};

#define REQUIRE_CLIENT(name)                                  \
    do {                                                      \
        std::string why_ = ajclients::missing(name);          \
        if (!why_.empty()) GTEST_SKIP() << why_;              \
    } while (0)

}  // namespace

// A first run as a user with only an API key meets it: Claude Code's onboarding starts
// with a connectivity check of api.anthropic.com/api/hello and
// platform.claude.com/v1/oauth/hello (whatever ANTHROPIC_BASE_URL says: both come from
// its sign-in configuration). The preset lets both through the proxy; where they are
// out of reach (no internet, as on a test machine) Claude Code says so and exits 1 by
// itself, and with them reachable the theme picker follows.
TEST_F(AgentsTui, ClaudeFirstRunChecksAnthropicThroughTheProxy) {
    REQUIRE_CLIENT("claude");
    ModelStandin standin(standin_options());
    Tmux t(scratch.path(), 100, 50, jail.ws());
    ASSERT_TRUE(t.ok()) << t.error();
    std::string before = t.stty();
    std::string log = scratch.path() + "/net.jsonl";
    start(t, claude_script("first.sh", standin, {"--net-log", log}));
    ASSERT_TRUE(t.wait_for("Welcome to Claude Code v2.1.332")) << t.seen();
    ASSERT_TRUE(t.wait_for([](const std::string& s) {
        return ajtest::contains(s, "Unable to connect to Anthropic services") ||
               ajtest::contains(s, "Choose the text style");
    }, 60000)) << t.seen();
    bool offline = ajtest::contains(t.last(), "Unable to connect");
    if (offline) {
        EXPECT_TRUE(ajtest::contains(t.last(), "Failed to connect to api.anthropic.com")) << t.last();
        EXPECT_EQ(exit_status(t), 1) << t.seen();
    } else {
        // Online: the theme picker (the next test goes on from there); ^C twice leaves.
        EXPECT_TRUE(t.press_until("C-c", "Press Ctrl-C again to exit")) << t.last();
        t.keys({"C-c"});
        EXPECT_NE(exit_status(t), -1) << t.seen();
    }
    record(t);
    EXPECT_TRUE(wait_no_pids_with_env(marker, 10000)) << "processes left after the run";
    EXPECT_EQ(t.stty(), before);
    // Both hosts went to the proxy and both were allowed, by the balanced preset and by
    // the claude preset's own entry.
    auto entries = ajnet::read_log(log);
    auto api = ajnet::log_entries(entries, "api.anthropic.com", "allow");
    auto platform = ajnet::log_entries(entries, "platform.claude.com", "allow");
    ASSERT_FALSE(api.empty()) << ajnet::dump(entries);
    ASSERT_FALSE(platform.empty()) << ajnet::dump(entries);
    EXPECT_TRUE(ajtest::contains(api[0].value("rule", ""), "net-balanced.toml")) << ajnet::dump(entries);
    EXPECT_TRUE(ajtest::contains(platform[0].value("rule", ""), "claude.toml")) << ajnet::dump(entries);
    EXPECT_TRUE(ajnet::log_entries(entries, "api.anthropic.com", "deny").empty()) << ajnet::dump(entries);
}

// The interface end to end: the first run's onboarding (theme picker, the API key
// question, the security notes, folder trust), a message to the stand-in typed in, a
// resize, ^C; then a second run straight to the prompt because the preset's state
// directory kept all of it. The user's settings (bound read-only by the preset) name
// an apiKeyHelper, which is what makes Claude Code skip the onboarding's check of
// api.anthropic.com (previous test), out of reach here.
TEST_F(AgentsTui, ClaudeOnboardsOnceThenKeysResizeAndCtrlCWork) {
    REQUIRE_CLIENT("claude");
    jail.home_dir().write(".claude/settings.json", "{\"apiKeyHelper\": \"printenv ANTHROPIC_API_KEY\"}\n");
    ModelStandin standin(standin_options());
    // Tall enough that the welcome banner and the theme picker fit on one screen.
    Tmux t(scratch.path(), 100, 50, jail.ws());
    ASSERT_TRUE(t.ok()) << t.error();
    std::string before = t.stty();
    std::string path = claude_script("claude.sh", standin);

    // First run: the welcome and the theme picker; Down moves the selection.
    start(t, path);
    ASSERT_TRUE(t.wait_for("Welcome to Claude Code v2.1.332")) << t.seen();
    ASSERT_TRUE(t.wait_for("Choose the text style")) << t.seen();
    EXPECT_TRUE(ajtest::contains(t.last(), "\u276f \u2714 Auto (match terminal)")) << t.last();
    EXPECT_TRUE(t.press_until("Down", "\u276f   Dark mode")) << "the arrow key did not reach it:\n" << t.last();
    // The key it sees in its environment is the placeholder: use it.
    ASSERT_TRUE(t.press_until("Enter", "Detected a custom API key in your environment")) << t.seen();
    EXPECT_FALSE(ajtest::contains(t.last(), key.substr(key.size() - 12))) << t.last();
    ASSERT_TRUE(t.press_until("Up", "\u276f Yes")) << t.last();
    ASSERT_TRUE(t.press_until("Enter", "Security notes:")) << t.seen();
    ASSERT_TRUE(t.press_until("Enter", "Yes, I trust this folder")) << t.seen();
    EXPECT_TRUE(ajtest::contains(t.last(), jail.ws())) << t.last();
    // The dialog can be drawn again from scratch (selection back on "No, exit") while
    // the first run settles, taking the keys sent before: choose again until it is gone.
    bool trusted = false;
    for (int i = 0; i < 5 && !trusted; ++i) {
        // Enter on "No, exit" ends the run for good: only once the dialog has settled
        // with "Yes" chosen (under load it is drawn again, back on "No").
        (void)t.wait_still(1000, 10000);
        ASSERT_TRUE(t.press_until("Down", "\u276f Yes, I trust this folder")) << t.last();
        (void)t.wait_still(700, 5000);
        if (!ajtest::contains(t.last(), "\u276f Yes, I trust this folder")) continue;
        t.keys({"Enter"});
        trusted = t.wait_for(input_line_empty, 5000);
    }
    ASSERT_TRUE(trusted || t.wait_for(input_line_empty, 60000)) << t.seen();
    EXPECT_EQ(widest_rule(t.last()), 100) << t.last();

    // Typing reaches the input line, and Enter sends it to the stand-in.
    std::string word = ajit::unique_name("typed-");
    t.type("say " + word);
    ASSERT_TRUE(t.wait_for("\u276f say " + word, 10000)) << t.last();
    t.keys({"Enter"});
    ASSERT_TRUE(t.wait_for("STANDIN-DONE")) << t.seen() << standin.summary();
    bool sent = false;
    for (const auto& ex : standin.requests("messages")) {
        sent = sent || ajtest::contains(ex.body, word);
        EXPECT_EQ(ex.header("x-api-key"), key) << ex.target;
    }
    EXPECT_TRUE(sent) << standin.summary();

    // A narrower window: the interface redraws to its width.
    t.resize(70, 40);
    EXPECT_TRUE(t.wait_for([](const std::string& s) { return widest_rule(s) == 70; }, 15000)) << t.last();

    // ^C once asks, twice ends it; agentjail and everything it started are gone.
    EXPECT_TRUE(t.press_until("C-c", "Press Ctrl-C again to exit")) << t.last();
    t.keys({"C-c"});
    EXPECT_EQ(exit_status(t), 0) << t.seen();
    record(t);
    EXPECT_TRUE(wait_no_pids_with_env(marker, 10000)) << "processes left after the run";
    // The window's size back as it was, then every setting as it was.
    t.resize(100, 50);
    for (int i = 0; i < 50 && !ajtest::contains(t.stty(), "rows 50; columns 100;"); ++i) ajtest::sleep_ms(20);
    EXPECT_EQ(t.stty(), before) << "the terminal changed";

    // Second run, same state: no theme, no notes, no trust question.
    start(t, path);
    ASSERT_TRUE(t.wait_for([](const std::string& s) {
        return input_line_empty(s) || ajtest::contains(s, "Detected a custom API key");
    }, 60000)) << t.seen();
    if (ajtest::contains(t.last(), "Detected a custom API key")) {
        EXPECT_FALSE(kStablePlaceholders) << "asked again for the same placeholder:\n" << t.last();
        ASSERT_TRUE(t.press_until("Up", "\u276f Yes")) << t.last();
        t.keys({"Enter"});
        ASSERT_TRUE(t.wait_for(input_line_empty, 60000)) << t.seen();
    }
    EXPECT_TRUE(ajtest::contains(t.last(), "Claude Code v2.1.332")) << t.last();
    std::string seen = t.seen();
    EXPECT_FALSE(ajtest::contains(seen, "Choose the text style")) << seen;
    EXPECT_FALSE(ajtest::contains(seen, "Security notes:")) << seen;
    EXPECT_FALSE(ajtest::contains(seen, "trust this folder")) << seen;
    EXPECT_TRUE(t.press_until("C-c", "Press Ctrl-C again to exit")) << t.last();
    t.keys({"C-c"});
    EXPECT_EQ(exit_status(t), 0) << t.seen();
    record(t);
    EXPECT_TRUE(wait_no_pids_with_env(marker, 10000)) << "processes left after the second run";
    EXPECT_EQ(t.stty(), before) << "the terminal changed";
}

// A code agent of the project's own (tests/support/agents/agent.js, on
// @anthropic-ai/sdk), its key in the workspace's .env, as a REPL under
//   agentjail --secret ANTHROPIC_API_KEY=dotenv:.env -m 1G --cpus 1 -t 10m -- node agent.js
// The test types a request; the stand-in answers with a Bash call that runs inside and
// reports what it sees; its output goes back; the answer is printed; ^D ends it.
//
// -m and --cpus need a cgroup. Where none can be had for this caller (an unprivileged
// user without a delegated subtree, or without a systemd user manager) agentjail
// refuses the limits unless --allow-degraded: the test asks agentjail once
// (cgroup_probe), adds the flag only then, and checks that the record says the run was
// degraded and why; with a cgroup it checks the record carries both limits.
TEST_F(AgentsTui, SdkAgentRunsItsToolInsideWithTheKeyFromDotenvOutside) {
    {
        std::string why = ajclients::missing_package("@anthropic-ai/sdk");
        if (!why.empty()) GTEST_SKIP() << why;
    }
    jail.plant(".env", "# the project's key\nANTHROPIC_API_KEY=" + key + "\n", 0600);
    jail.ws_dir().write("agent.js", ajtest::read_file(std::string(AJ_SOURCE_DIR) + "/tests/support/agents/agent.js"));
    ModelStandin standin(standin_options());
    standin.script_shell("echo AJ-PROBE hostname=$(hostname); echo AJ-PROBE key=$ANTHROPIC_API_KEY; "
                         "if grep -q '^ANTHROPIC_API_KEY=agentjail-secret-placeholder-' .env; then "
                         "echo AJ-PROBE dotenv=placeholders; elif cat .env >/dev/null 2>&1; then "
                         "echo AJ-PROBE dotenv=readable; else echo AJ-PROBE dotenv=unreadable; fi; "
                         "echo AJ-PROBE end=1");
    Tmux t(scratch.path(), 100, 30, jail.ws());
    ASSERT_TRUE(t.ok()) << t.error();

    const auto& cg = ajit::cgroup_probe();
    std::vector<std::string> flags = {"-m", "1G", "--cpus", "1", "-t", "10m"};
    if (!cg.ok) flags.push_back("--allow-degraded");
    std::string rec = scratch.path() + "/record.json";
    flags.insert(flags.end(), {"--result-file", rec, "-e", "NODE_PATH=" + ajclients::node_modules()});
    Route rt = route(standin, "default", "dotenv", false);
    start(t, script("agent.sh", rt, flags, {"node", "agent.js"}));
    ASSERT_TRUE(t.wait_for("you>")) << t.seen();
    // agent.js reads .env inside (its keys, with placeholders: issue 27, item 3).
    EXPECT_TRUE(ajtest::contains(t.last(), "agent: .env: 1 variable(s)")) << t.last();

    std::string request = "what is in " + ajit::unique_name("dir-");
    t.line(request);
    ASSERT_TRUE(t.wait_for("agent> STANDIN-DONE")) << t.seen() << "\n" << standin.summary();
    EXPECT_TRUE(ajtest::contains(t.last(), "agent: running")) << t.last();
    t.keys({"C-d"});
    EXPECT_EQ(exit_status(t), 0) << t.seen();
    EXPECT_TRUE(ajtest::contains(t.last(), "agent: bye")) << t.last();
    record(t);
    EXPECT_TRUE(wait_no_pids_with_env(marker, 10000)) << "processes left after the run";

    // The request reached the stand-in, the tool ran inside, its output came back.
    std::string seen = "\n--- the stand-in saw:\n" + standin.summary();
    auto model = standin.requests("messages");
    ASSERT_EQ(model.size(), 2u) << seen;
    EXPECT_TRUE(ajtest::contains(model[0].body, request)) << model[0].body;
    ASSERT_EQ(standin.tool_calls(), 1) << seen;
    auto results = standin.tool_results();
    ASSERT_EQ(results.size(), 1u) << seen;
    const std::string& out = results[0].output;
    auto probed = [&](const std::string& name) {
        for (const auto& l : ajtest::lines(out))
            if (l.rfind("AJ-PROBE " + name + "=", 0) == 0) return l.substr(10 + name.size());
        return std::string("<missing>");
    };
    EXPECT_EQ(probed("end"), "1") << out;
    EXPECT_EQ(probed("hostname"), "agentjail") << out;
    EXPECT_TRUE(ajtest::contains(probed("key"), "agentjail-secret-placeholder-")) << out;
    EXPECT_EQ(probed("dotenv"), "placeholders") << out;
    EXPECT_FALSE(ajtest::contains(out, key)) << out;
    // The key the stand-in got is the real one from .env, on every request (this SDK
    // sends it as Authorization: Bearer; Claude Code as x-api-key).
    for (const auto& ex : model) EXPECT_EQ(ex.header("authorization"), "Bearer " + key) << ex.target;
    for (const auto& ex : standin.requests())
        for (const auto& [h, v] : ex.headers)
            EXPECT_FALSE(ajtest::contains(v, "agentjail-secret-placeholder")) << h << ": " << v;

    auto j = nlohmann::json::parse(ajtest::read_file(rec), nullptr, false);
    ASSERT_TRUE(j.is_object()) << ajtest::read_file(rec);
    EXPECT_EQ(j["exit_code"], 0) << j.dump(2);
    if (cg.ok) {
        EXPECT_EQ(j["limits"]["memory_bytes"], 1073741824LL) << j.dump(2);
        EXPECT_EQ(j["limits"]["cpus"], 1.0) << j.dump(2);
        EXPECT_TRUE(j["layers"]["degraded"].empty()) << j.dump(2);
    } else {
        ASSERT_FALSE(j["layers"]["degraded"].empty()) << j.dump(2);
        EXPECT_TRUE(ajtest::contains(j["layers"]["degraded"][0].get<std::string>(), "cgroup")) << j.dump(2);
    }
}
