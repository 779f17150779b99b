// SPDX-License-Identifier: Apache-2.0
// The real agent clients inside agentjail: Claude Code and Codex from npm (pinned, put
// in place by scripts/setup.sh), end to end against the stand-in model API of
// tests/support/model_standin.hpp. The stand-in answers with a call of the client's
// shell tool; the command runs inside the sandbox, its output comes back to the
// stand-in in the next request, and the test reads it there: the real key reached the
// stand-in while the sandbox held a placeholder, ~/.ssh was hidden, other loopback
// ports and other hosts were out of reach.
#include "common.hpp"
#include "model_standin.hpp"
#include "net_support.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

using ajit::describe;
using ajmodel::ModelStandin;

enum class Agent { claude, codex, gemini };

const char* name_of(Agent a) { return a == Agent::claude ? "claude" : a == Agent::codex ? "codex" : "gemini"; }

// Where scripts/setup.sh installs the clients (AGENTJAIL_CLIENTS_DIR there and here).
std::string clients_dir() {
    const char* d = std::getenv("AGENTJAIL_CLIENTS_DIR");
    return d != nullptr && *d != '\0' ? d : std::string(AJ_SOURCE_DIR) + "/.clients";
}
std::string clients_bin() { return clients_dir() + "/node_modules/.bin"; }

// Empty when the client can run, else why not (for the skip message).
std::string missing(Agent a) {
    std::string bin = clients_bin() + "/" + name_of(a);
    if (::access(bin.c_str(), X_OK) != 0)
        return std::string(name_of(a)) + " is not installed at " + bin +
               ": run scripts/setup.sh (it installs the pinned agent clients from npm)";
    return {};
}

#define REQUIRE_CLIENT(a)                        \
    do {                                         \
        std::string why_ = missing(a);           \
        if (!why_.empty()) GTEST_SKIP() << why_; \
    } while (0)

// The names the tests give the stand-in's host and the "other host" (pinned to the
// host's loopback by the policy: nothing here resolves them for real).
constexpr const char* kModelHost = "model.test";
constexpr const char* kOtherHost = "other.test";

// How one client run is set up: agentjail's flags, agentjail's own environment (the
// caller's), and the client's arguments that name the stand-in.
struct ClientSetup {
    std::vector<std::string> flags;
    std::vector<std::string> env;
    std::vector<std::string> client_args;
    std::string key_var;  // the variable inside that holds the key's placeholder
};

class Agents : public ajit::Sandbox {
protected:
    // Policy, certificate, state: outside the workspace and the fake home.
    ajtest::TempDir scratch{"aj-agents"};
    ajtest::TempDir state{"aj-agents-state"};  // XDG_STATE_HOME: the presets' state dirs go here
    ajnet::Cert cert = ajnet::make_cert(scratch.path() + "/model.crt",
                                        scratch.path() + "/model.key", {kModelHost, kOtherHost});
    const std::string key = ajit::unique_name("sk-standin-real-");

    // The switch to the form a user types once the loopback gateways ([network]
    // gateways, secrets with base_url) and the agent presets have landed: then the
    // stand-in is plain HTTP on 127.0.0.1 and setup() passes only the caller's
    // environment. They have: true (false keeps the older route, a pinned name over TLS).
    static constexpr bool kPlainForm = true;

    ModelStandin::Options standin_options() const {
        ModelStandin::Options o;
        if (!kPlainForm) {
            o.tls_cert = cert.cert_path;
            o.tls_key = cert.key_path;
        }
        return o;
    }

    // THE ONE PLACE that says how a client reaches the stand-in and gets its key.
    //
    // Before the gateways: a policy that pins model.test to the host's loopback, allows it on the
    // stand-in's port and binds the key to it as a secret (so the proxy puts the real
    // key in over intercepted TLS, with the stand-in's certificate trusted through
    // agentjail's SSL_CERT_FILE); the client's base URL is https://model.test:PORT;
    // the clients' switches are given with -e.
    //
    // kPlainForm: no flags but --ro/PATH for the test's own install of the clients,
    // and in the caller's environment the key and ANTHROPIC_BASE_URL=http://127.0.0.1:PORT;
    // the preset (chosen by the command's name) does the rest.
    ClientSetup setup(Agent a, const ModelStandin& standin) {
        ClientSetup s;
        std::string port = std::to_string(standin.port());
        s.key_var = a == Agent::claude ? "ANTHROPIC_API_KEY" : a == Agent::codex ? "CODEX_API_KEY" : "GEMINI_API_KEY";
        s.flags = {"--ro", clients_dir(), "-e",
                   "PATH=" + clients_bin() + ":/usr/local/bin:/usr/bin:/bin"};
        s.env = {s.key_var + "=" + key, "XDG_STATE_HOME=" + state.path()};
        std::string origin;
        if (kPlainForm) {
            origin = standin.origin();
            // The preset's gateway variable: exactly that origin is reachable, with the
            // key put in there. Codex does not read its own variable, so it is also
            // told with -c below.
            if (a == Agent::claude) s.env.push_back("ANTHROPIC_BASE_URL=" + origin);
            if (a == Agent::codex) s.env.push_back("OPENAI_BASE_URL=" + origin + "/v1");
            if (a == Agent::gemini) s.env.push_back("GOOGLE_GEMINI_BASE_URL=" + origin);
        } else {
            origin = std::string("https://") + kModelHost + ":" + port;
            ajnet::NetPolicy p;
            p.hosts = {{kModelHost, "127.0.0.1"}, {kOtherHost, "127.0.0.1"}};
            p.extra = "\n[secrets]\n" + s.key_var + " = { source = \"env:" + s.key_var +
                      "\", hosts = [\"" + kModelHost + ":" + port + "\"] }\n";
            s.flags.insert(s.flags.begin(), {"-p", scratch.write(std::string(name_of(a)) + ".toml",
                                                                 ajnet::toml(p))});
            s.env.push_back("SSL_CERT_FILE=" + cert.cert_path);
            if (a == Agent::claude) {
                s.flags.insert(s.flags.end(),
                               {"-e", "ANTHROPIC_BASE_URL=" + origin,
                                // --dangerously-skip-permissions is refused as root without it.
                                "-e", "IS_SANDBOX=1",
                                // Else it calls api.anthropic.com at start (bootstrap,
                                // event logging) whatever the base URL says.
                                "-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"});
            }
        }
        // Codex ignores OPENAI_BASE_URL; exec attaches CODEX_API_KEY (not
        // OPENAI_API_KEY) on its built-in provider.
        if (a == Agent::codex) s.client_args = {"-c", "openai_base_url=\"" + origin + "/v1\""};
        return s;
    }

    // agentjail <base> <setup> -- <client> <args>, 120 s at most.
    ajtest::RunOutput run(Agent a, const ModelStandin& standin,
                          const std::vector<std::string>& args) {
        ClientSetup s = setup(a, standin);
        std::vector<std::string> argv = jail.base();
        argv.insert(argv.end(), s.flags.begin(), s.flags.end());
        argv.push_back("--");
        argv.push_back(name_of(a));
        if (a == Agent::codex && !args.empty() && args[0] == "exec") {
            argv.push_back("exec");
            argv.insert(argv.end(), s.client_args.begin(), s.client_args.end());
            argv.insert(argv.end(), args.begin() + 1, args.end());
        } else {
            argv.insert(argv.end(), args.begin(), args.end());
        }
        ajtest::RunOptions o;
        o.env = s.env;
        o.timeout_ms = 120000;
        return jail.run(argv, o);
    }

    // A command for the agent's shell tool that reports, one "AJ-PROBE name=value" line
    // each, what it can see and reach from inside.
    std::string probe(Agent a, int other_port) const {
        std::string op = std::to_string(other_port);
        std::string var = a == Agent::claude ? "ANTHROPIC_API_KEY" : "CODEX_API_KEY";
        return "echo AJ-PROBE hostname=$(hostname); "
               "echo AJ-PROBE key=$" +
               var +
               "; "
               "if cat ~/.ssh/id_ed25519 >/dev/null 2>&1; then echo AJ-PROBE ssh=readable; "
               "else echo AJ-PROBE ssh=unreadable; fi; "
               // A host loopback port other than the model's: nothing listens on the
               // sandbox's own loopback.
               "if (exec 3<>/dev/tcp/127.0.0.1/" +
               op +
               ") 2>/dev/null; then echo AJ-PROBE loopback=open; "
               "else echo AJ-PROBE loopback=closed; fi; "
               // Another host (pinned to that same server, not allowed): the proxy refuses it.
               "echo AJ-PROBE other=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "
               "http://" +
               kOtherHost + ":" + op +
               "/hello); "
               "echo AJ-PROBE end=1";
    }

    // The value of "AJ-PROBE name=value" in the tool output, or "<missing>".
    static std::string probed(const std::string& out, const std::string& name) {
        for (const auto& l : ajtest::lines(out)) {
            auto pos = l.find("AJ-PROBE " + name + "=");
            if (pos != std::string::npos) return ajtest::trim(l.substr(pos + 10 + name.size()));
        }
        return "<missing>";
    }

    // The end-to-end check, the same for both clients.
    void end_to_end(Agent a, const std::vector<std::string>& args) {
        ModelStandin standin(standin_options());
        ajnet::TestServer other;  // the other loopback port and the other host
        // Positive control: the other server does answer on the host's loopback.
        auto control = ajtest::run({"curl", "-s", "--max-time", "10",
                                    "http://127.0.0.1:" + std::to_string(other.port()) + "/hello"});
        ASSERT_EQ(ajtest::trim(control.out), "hello from test") << describe(control);
        // Positive control of the probe itself: on the host, with the same fake home,
        // it reads the key file and reaches the other port.
        ajtest::RunOptions ho;
        ho.env = {"HOME=" + jail.home()};
        auto host = ajtest::run_with({"/bin/bash", "-c", probe(a, other.port())}, ho);
        ASSERT_EQ(probed(host.out, "ssh"), "readable") << describe(host);
        ASSERT_EQ(probed(host.out, "loopback"), "open") << describe(host);
        int before = other.connections();
        standin.script_shell(probe(a, other.port()));

        auto r = run(a, standin, args);
        std::string seen = "\n--- the stand-in saw:\n" + standin.summary();
        ASSERT_EQ(r.status, 0) << describe(r) << seen;
        EXPECT_TRUE(ajtest::contains(r.out, "STANDIN-DONE")) << describe(r) << seen;
        ASSERT_EQ(standin.tool_calls(), 1) << seen;
        auto results = standin.tool_results();
        ASSERT_EQ(results.size(), 1u) << "the shell tool's output never came back\n"
                                      << describe(r) << seen;
        const std::string& out = results[0].output;
        SCOPED_TRACE("tool output:\n" + out);
        EXPECT_EQ(probed(out, "end"), "1") << "the probe did not run to its end";
        EXPECT_EQ(probed(out, "hostname"), "agentjail");  // it ran inside
        std::string placeholder = probed(out, "key");
        EXPECT_TRUE(ajtest::contains(placeholder, "agentjail-secret-placeholder-")) << placeholder;
        EXPECT_FALSE(ajtest::contains(out, key));
        EXPECT_EQ(probed(out, "ssh"), "unreadable");
        EXPECT_FALSE(ajtest::contains(out, jail.secret("home/.ssh/id_ed25519")));
        EXPECT_EQ(probed(out, "loopback"), "closed");
        EXPECT_EQ(probed(out, "other"), "403");
        EXPECT_EQ(other.connections(), before) << "the other server was reached from inside";

        // Every model request carried the real key, and none the placeholder.
        auto model_requests = standin.requests(a == Agent::claude ? "messages" : "responses");
        ASSERT_GE(model_requests.size(), 2u) << seen;
        for (const auto& ex : model_requests) {
            std::string cred =
                a == Agent::claude ? ex.header("x-api-key") : ex.header("authorization");
            EXPECT_EQ(cred, a == Agent::claude ? key : "Bearer " + key)
                << ex.method << " " << ex.target;
        }
        for (const auto& ex : standin.requests())
            for (const auto& [h, v] : ex.headers)
                EXPECT_FALSE(ajtest::contains(v, "agentjail-secret-placeholder")) << h << ": " << v;
        // The result came back in a request the proxy also signed with the real key.
        EXPECT_EQ(a == Agent::claude ? results[0].headers["x-api-key"]
                                     : results[0].headers["authorization"],
                  a == Agent::claude ? key : "Bearer " + key);
    }

    void version(Agent a, const std::string& expect) {
        ModelStandin standin(standin_options());  // the setup names it; --version calls nothing
        auto r = run(a, standin, {"--version"});
        ASSERT_EQ(r.status, 0) << describe(r);
        EXPECT_TRUE(ajtest::contains(r.out, expect)) << describe(r);
        EXPECT_TRUE(standin.requests().empty()) << standin.summary();
    }
};

}  // namespace

TEST_F(Agents, ClaudeVersion) {
    REQUIRE_CLIENT(Agent::claude);
    version(Agent::claude, "2.1.332 (Claude Code)");
}

TEST_F(Agents, CodexVersion) {
    REQUIRE_CLIENT(Agent::codex);
    version(Agent::codex, "codex-cli 0.171.0");
}

TEST_F(Agents, GeminiVersion) {
    REQUIRE_CLIENT(Agent::gemini);
    version(Agent::gemini, "0.61.0");
}

// claude -p runs its Bash tool inside; see end_to_end for what is checked.
TEST_F(Agents, ClaudePrintRunsBashInsideWithTheKeyOutside) {
    REQUIRE_CLIENT(Agent::claude);
    end_to_end(Agent::claude, {"-p", "Run the probe.", "--dangerously-skip-permissions"});
}

// codex exec, its own sandbox off (bubblewrap cannot nest inside agentjail): the
// code-mode exec tool runs the command through exec_command inside.
TEST_F(Agents, CodexExecRunsShellInsideWithTheKeyOutside) {
    REQUIRE_CLIENT(Agent::codex);
    // No --dangerously-bypass-approvals-and-sandbox: the codex preset turns Codex's
    // own sandbox and approvals off itself (-c sandbox_mode, approval_policy).
    end_to_end(Agent::codex, {"exec", "--skip-git-repo-check", "Run the probe."});
}

// ---- The stand-in itself (no client needed) ---------------------------------------
//
// What the end-to-end tests rely on, checked with curl from the host: each API's
// streamed and non-streamed forms, the shell call and the recording of its result,
// and the calls the clients make at start.

namespace {

class AgentsStandin : public ::testing::Test {
protected:
    ModelStandin standin;

    ajtest::RunOutput curl(const std::vector<std::string>& args) {
        std::vector<std::string> argv = {"curl", "-sS", "--max-time", "10"};
        argv.insert(argv.end(), args.begin(), args.end());
        return ajtest::run(argv);
    }
    ajtest::RunOutput post(const std::string& path, const nlohmann::json& body,
                           const std::vector<std::string>& headers = {}) {
        std::vector<std::string> args = {
            "-X", "POST", "-H", "content-type: application/json", "--data-binary", body.dump()};
        for (const auto& h : headers) args.insert(args.end(), {"-H", h});
        args.push_back(standin.origin() + path);
        return curl(args);
    }
    // The data: lines of an SSE stream, parsed.
    static std::vector<nlohmann::json> events(const std::string& sse) {
        std::vector<nlohmann::json> v;
        for (const auto& l : ajtest::lines(sse))
            if (l.rfind("data: ", 0) == 0)
                v.push_back(nlohmann::json::parse(l.substr(6), nullptr, false));
        return v;
    }
};

const nlohmann::json kBash = {{"name", "Bash"}, {"input_schema", {{"type", "object"}}}};

}  // namespace

TEST_F(AgentsStandin, AnthropicStreamsABashCallThenRecordsItsResult) {
    standin.script_shell("echo probe");
    nlohmann::json req = {{"model", "m"},
                          {"stream", true},
                          {"max_tokens", 100},
                          {"tools", {kBash}},
                          {"messages", {{{"role", "user"}, {"content", "go"}}}}};
    auto r = post("/v1/messages?beta=true", req, {"x-api-key: k1"});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto ev = events(r.out);
    ASSERT_GE(ev.size(), 6u) << r.out;
    EXPECT_EQ(ev.front()["type"], "message_start") << r.out;
    EXPECT_EQ(ev.back()["type"], "message_stop") << r.out;
    std::string id, input;
    std::string stop;
    for (const auto& e : ev) {
        if (e["type"] == "content_block_start") id = e["content_block"].value("id", "");
        if (e["type"] == "content_block_delta") input += e["delta"].value("partial_json", "");
        if (e["type"] == "message_delta") stop = e["delta"].value("stop_reason", "");
    }
    EXPECT_EQ(stop, "tool_use");
    EXPECT_EQ(nlohmann::json::parse(input, nullptr, false)["command"], "echo probe") << input;
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(standin.tool_calls(), 1);

    req["messages"].push_back({{"role", "assistant"},
                               {"content",
                                {{{"type", "tool_use"},
                                  {"id", id},
                                  {"name", "Bash"},
                                  {"input", {{"command", "echo probe"}}}}}}});
    req["messages"].push_back(
        {{"role", "user"},
         {"content", {{{"type", "tool_result"}, {"tool_use_id", id}, {"content", "probe\n"}}}}});
    r = post("/v1/messages", req, {"x-api-key: k2"});
    EXPECT_TRUE(ajtest::contains(r.out, "STANDIN-DONE")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "end_turn")) << r.out;
    auto results = standin.tool_results();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].output, "probe\n");
    EXPECT_EQ(results[0].headers["x-api-key"], "k2");
    EXPECT_EQ(standin.tool_calls(), 1);  // not asked again once the result is in
    auto rq = standin.requests("messages");
    ASSERT_EQ(rq.size(), 2u);
    EXPECT_EQ(rq[0].header("x-api-key"), "k1");
    EXPECT_EQ(rq[0].target, "/v1/messages?beta=true");
}

TEST_F(AgentsStandin, AnthropicNonStreamedAndNoToolGetTheFinalText) {
    standin.script_shell("echo probe");
    // No Bash offered (a title or quota request): text, even with a script set.
    auto r = post(
        "/v1/messages",
        {{"model", "m"}, {"max_tokens", 5}, {"messages", {{{"role", "user"}, {"content", "x"}}}}});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << describe(r);
    EXPECT_EQ(j["type"], "message");
    EXPECT_EQ(j["content"][0]["text"], "STANDIN-DONE");
    EXPECT_EQ(j["stop_reason"], "end_turn");
    EXPECT_EQ(standin.tool_calls(), 0);
    // Non-streamed with Bash offered: the call as one JSON message.
    r = post("/v1/messages", {{"model", "m"},
                              {"max_tokens", 5},
                              {"tools", {kBash}},
                              {"messages", {{{"role", "user"}, {"content", "x"}}}}});
    j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << describe(r);
    EXPECT_EQ(j["content"][0]["type"], "tool_use") << r.out;
    EXPECT_EQ(j["content"][0]["input"]["command"], "echo probe") << r.out;
    r = post("/v1/messages/count_tokens", {{"model", "m"}, {"messages", nlohmann::json::array()}});
    EXPECT_EQ(nlohmann::json::parse(r.out, nullptr, false).value("input_tokens", -1), 10) << r.out;
}

TEST_F(AgentsStandin, OpenAiCodeModeExecCallThenRecordsItsOutput) {
    standin.script_shell("id -u");
    // Tools as Codex 0.171 sends them: in an additional_tools input item, namespaced.
    nlohmann::json tools_item = {{"type", "additional_tools"},
                                 {"tools",
                                  {{{"type", "namespace"},
                                    {"name", "functions"},
                                    {"tools", {{{"type", "custom"}, {"name", "exec"}}}}}}}};
    nlohmann::json req = {
        {"model", "m"},
        {"stream", true},
        {"input", {tools_item, {{"type", "message"}, {"role", "user"}, {"content", "go"}}}}};
    auto r = post("/v1/responses", req, {"authorization: Bearer k1"});
    auto ev = events(r.out);
    ASSERT_GE(ev.size(), 4u) << describe(r);
    EXPECT_EQ(ev.front()["type"], "response.created");
    EXPECT_EQ(ev.back()["type"], "response.completed");
    nlohmann::json item;
    for (const auto& e : ev)
        if (e["type"] == "response.output_item.done") item = e["item"];
    ASSERT_EQ(item.value("type", ""), "custom_tool_call") << r.out;
    EXPECT_EQ(item["name"], "exec");
    EXPECT_TRUE(ajtest::contains(item.value("input", ""), "tools.exec_command({cmd: \"id -u\"})"))
        << item.dump();

    req["input"].push_back(item);
    req["input"].push_back({{"type", "custom_tool_call_output"},
                            {"call_id", item["call_id"]},
                            {"output",
                             {{{"type", "input_text"}, {"text", "Script completed"}},
                              {{"type", "input_text"}, {"text", "0\n"}}}}});
    r = post("/v1/responses", req, {"authorization: Bearer k2"});
    EXPECT_TRUE(ajtest::contains(r.out, "STANDIN-DONE")) << r.out;
    auto results = standin.tool_results();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].output, "Script completed\n0\n");
    EXPECT_EQ(results[0].headers["authorization"], "Bearer k2");
}

TEST_F(AgentsStandin, OpenAiFunctionShellToolsAndNonStreamed) {
    standin.script_shell("true");
    auto call = [&](const std::string& tool) {
        auto r = post(
            "/v1/responses",
            {{"model", "m"}, {"tools", {{{"type", "function"}, {"name", tool}}}}, {"input", "go"}});
        return nlohmann::json::parse(r.out, nullptr, false);
    };
    auto j = call("exec_command");
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["status"], "completed");
    EXPECT_EQ(j["output"][0]["type"], "function_call") << j.dump();
    EXPECT_EQ(nlohmann::json::parse(j["output"][0].value("arguments", "{}"))["cmd"], "true")
        << j.dump();
    j = call("shell");
    EXPECT_EQ(nlohmann::json::parse(j["output"][0].value("arguments", "{}"))["command"],
              nlohmann::json({"bash", "-lc", "true"}))
        << j.dump();
    j = call("web_search");  // no shell tool: the final text
    EXPECT_EQ(j["output"][0]["content"][0]["text"], "STANDIN-DONE") << j.dump();
}

TEST_F(AgentsStandin, StartupCallsWebSocketAndUnknownPaths) {
    auto status = [&](const std::vector<std::string>& args) {
        std::vector<std::string> a = {"-o", "/dev/null", "-w", "%{http_code}"};
        a.insert(a.end(), args.begin(), args.end());
        return curl(a).out;
    };
    EXPECT_EQ(status({"-I", standin.origin() + "/api/hello"}), "200");
    EXPECT_EQ(status({standin.origin() + "/v1/models"}), "200");
    EXPECT_EQ(status({"-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
                      standin.origin() + "/v1/responses"}),
              "426");
    EXPECT_EQ(status({"-X", "POST", "--data", "{}", standin.origin() + "/api/event_logging/batch"}),
              "200");
    EXPECT_EQ(status({standin.origin() + "/nowhere"}), "404");
    auto models =
        nlohmann::json::parse(curl({standin.origin() + "/v1/models"}).out, nullptr, false);
    EXPECT_EQ(models["data"][0]["id"], "standin-model") << models.dump();
    auto kinds = standin.requests();
    ASSERT_EQ(kinds.size(), 6u) << standin.summary();
    EXPECT_EQ(kinds[0].kind, "hello");
    EXPECT_EQ(kinds[2].kind, "websocket");
    EXPECT_EQ(kinds[4].kind, "unknown");
    // stop() ends the thread and frees the port: nothing accepts there any more.
    std::string origin = standin.origin();
    standin.stop();
    EXPECT_EQ(status({origin + "/api/hello"}), "000");
}
