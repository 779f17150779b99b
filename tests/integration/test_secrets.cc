// SPDX-License-Identifier: Apache-2.0
// Integration tests of where secrets come from (docs/network.md, "Where a secret
// comes from"): a key in a project's .env, a token in a JSON credentials file,
// alternatives, optional secrets, an expired token's warning, and placeholders
// that stay the same across runs. Real sandboxes, curl inside, loopback HTTPS
// origins on the host that see what the proxy sends.
#include "common.hpp"
#include "net_support.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using ajit::describe;
using ajit::field;
using ajnet::NetPolicy;
using ajnet::TestServer;

namespace {

class Secrets : public ajit::Sandbox {
protected:
    // Policies, the test CA and the state directory (the placeholder key): outside
    // the workspace and the home, so the sandbox never sees them.
    ajtest::TempDir scratch{"aj-sec"};
    ajnet::Cert c =
        ajnet::make_cert(scratch.path() + "/ca.crt", scratch.path() + "/key.crt", {"api.test"});
    TestServer api{{"api", &c}};
    std::string port = std::to_string(api.port());

    std::string state() const { return scratch.path() + "/state"; }

    std::string policy(const std::string& secrets) {
        NetPolicy p;
        p.hosts = {{"api.test", "127.0.0.1"}};
        p.extra = "\n[secrets]\n" + secrets;
        return scratch.write("p.toml", ajnet::toml(p));
    }

    // agentjail -p POLICY FLAGS -- bash -c SCRIPT, in the workspace, with the test CA
    // trusted by the proxy (SSL_CERT_FILE) and the state directory in scratch.
    ajtest::RunOutput run(const std::string& script, const std::vector<std::string>& flags,
                          std::vector<std::string> env = {}) {
        std::vector<std::string> args = jail.base();
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), {"--", "/bin/bash", "-c", script});
        ajtest::RunOptions o;
        o.timeout_ms = 60000;
        o.cwd = jail.ws();
        o.env = std::move(env);
        o.env.push_back("SSL_CERT_FILE=" + c.cert_path);
        if (std::none_of(o.env.begin(), o.env.end(),
                         [](const std::string& e) { return e.rfind("XDG_STATE_HOME=", 0) == 0; }))
            o.env.push_back("XDG_STATE_HOME=" + state());
        return jail.run(args, o);
    }

    // curl to the origin with the secret in HEADER; prints "R code N".
    std::string curl(const std::string& header) const {
        return "curl -sS --max-time 15 -o /dev/null -w 'R code %{http_code}\\n' -H \"" + header +
               "\" https://api.test:" + port + "/hello; ";
    }
};

std::string line(const ajtest::RunOutput& r, const std::string& label) {
    for (const auto& l : ajtest::lines(r.out))
        if (l.rfind("R " + label + " ", 0) == 0) return l.substr(label.size() + 3);
    return "<missing>";
}

}  // namespace

// The project keeps its key in .env: `--secret ANTHROPIC_API_KEY=dotenv:.env`, with no
// hosts because the policy declares them (as an agent preset does). The origin gets
// the real value; inside, $ANTHROPIC_API_KEY is the placeholder and the .env shows the
// same placeholder for its key, never the value.
TEST_F(Secrets, DotenvKeyReachesTheOriginAndTheSandboxSeesOnlyThePlaceholder) {
    const std::string value = jail.new_canary();
    jail.plant(".env", "# the project's keys\n\nexport ANTHROPIC_API_KEY=\"" + value +
                           "\"  # from the console\n");
    std::string p = policy(
        "ANTHROPIC_API_KEY = { source = \"env:ANTHROPIC_API_KEY\", hosts = [\"api.test:" + port +
        "\"], optional = true }\n");
    // The value reaches the script only encoded, so that no command line inside holds it.
    std::string b64 = ajtest::trim(
        ajtest::run_with({"/bin/sh", "-c", "printf %s '" + value + "' | base64 -w0"}, {}).out);
    std::string script =
        "v=$(echo " + b64 +
        " | base64 -d); pat() { printf %s \"$v\"; }; "
        "echo placeholder=$ANTHROPIC_API_KEY; " +
        curl("x-api-key: $ANTHROPIC_API_KEY") +
        "echo R env-same $(grep -c \"^ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY\\$\" .env); "
        "echo R env $(env | grep -cF -f <(pat)); "
        "echo R files $(grep -rlF -f <(pat) /run /tmp \"$HOME\" \"$PWD\" 2>/dev/null | wc -l); "
        "echo R control $(printf 'x%sx' \"$v\" | grep -cF -f <(pat))";
    auto r = run(script, {"-p", p, "--secret", "ANTHROPIC_API_KEY=dotenv:.env"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(line(r, "code"), "200") << describe(r);
    EXPECT_EQ(line(r, "env-same"), "1") << describe(r);
    EXPECT_EQ(line(r, "env"), "0") << describe(r);
    EXPECT_EQ(line(r, "files"), "0") << describe(r);
    EXPECT_EQ(line(r, "control"), "1") << "the grep inside does not find the value where it is\n"
                                       << describe(r);
    std::string placeholder = field(r.out, "placeholder");
    EXPECT_EQ(placeholder.rfind("agentjail-secret-placeholder-ANTHROPIC_API_KEY-", 0), 0u)
        << describe(r);
    ASSERT_EQ(api.requests().size(), 1u) << describe(r);
    EXPECT_TRUE(ajtest::contains(api.requests()[0].head, "x-api-key: " + value))
        << api.requests()[0].head;
    EXPECT_FALSE(ajtest::contains(api.requests()[0].head, "placeholder")) << api.requests()[0].head;
    // Without the policy's entry a well-known key goes to its own API (here refused:
    // api.anthropic.com is not reachable from the test, but the plan says so), and
    // any other name must be told its hosts.
    auto known = ajtest::agentjail_with({"explain", "-C", jail.ws(), "--secret", "ANTHROPIC_API_KEY=dotenv:.env", "--", "true"},
                                        [&] { ajtest::RunOptions o; o.env = {"HOME=" + jail.home()}; o.cwd = jail.ws(); return o; }());
    EXPECT_EQ(known.status, 0) << describe(known);
    EXPECT_TRUE(ajtest::contains(known.out, "ANTHROPIC_API_KEY from dotenv:" + jail.ws() + "/.env#ANTHROPIC_API_KEY for api.anthropic.com"))
        << describe(known);
    jail.plant(".env.mine", "MY_KEY=1\n");
    auto e = run("true", {"--secret", "MY_KEY=dotenv:.env.mine"});
    EXPECT_EQ(e.status, 125) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.err, "which hosts is MY_KEY for? The policy does not say; add them: --secret "
                                        "MY_KEY=dotenv:" + jail.ws() + "/.env.mine@HOST[,HOST...]\n"))
        << describe(e);
    // A missing key is refused before anything runs, in one line.
    jail.plant(".env.other", "OTHER=1\n");
    auto m = run("echo ran", {"-p", p, "--secret", "ANTHROPIC_API_KEY=dotenv:.env.other"});
    EXPECT_EQ(m.status, 125) << describe(m);
    EXPECT_FALSE(ajtest::contains(m.out, "ran"));
    EXPECT_TRUE(ajtest::contains(m.err, ".env.other: no ANTHROPIC_API_KEY= line")) << describe(m);
}

// A subscription token in a JSON credentials file under the home (hidden inside),
// behind an unset environment alternative; an optional secret with no source is
// left out. -v says which source was taken and what is not set.
TEST_F(Secrets, JsonTokenAlternativesAndAnOptionalSecretLeftOut) {
    const std::string token = jail.new_canary();
    jail.home_dir().write(
        ".claude/.credentials.json",
        "{\"claudeAiOauth\": {\"accessToken\": \"" + token +
            "\", \"refreshToken\": \"never-read\", \"expiresAt\": 4102444800000}}",
        0600);
    std::string p = policy(
        "CLAUDE_CODE_OAUTH_TOKEN = { source = [\"env:AJ_TEST_UNSET_TOKEN\", "
        "\"json:~/.claude/.credentials.json#claudeAiOauth.accessToken\"], hosts = [\"api.test:" +
        port +
        "\"], optional = true, expires = \"claudeAiOauth.expiresAt\" }\n"
        "GEMINI_API_KEY = { source = \"env:AJ_TEST_UNSET_GEMINI\", hosts = [\"gemini.test\"], "
        "optional = true }\n");
    std::string script =
        "echo placeholder=$CLAUDE_CODE_OAUTH_TOKEN; echo gemini=${GEMINI_API_KEY-unset}; " +
        curl("Authorization: Bearer $CLAUDE_CODE_OAUTH_TOKEN") +
        "echo R creds $(cat ~/.claude/.credentials.json 2>/dev/null | wc -c)";
    auto r = run(script, {"-p", p, "-v"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(line(r, "code"), "200") << describe(r);
    EXPECT_EQ(line(r, "creds"), "0") << describe(r);
    EXPECT_EQ(field(r.out, "gemini"), "unset") << describe(r);
    EXPECT_EQ(field(r.out, "placeholder")
                  .rfind("agentjail-secret-placeholder-CLAUDE_CODE_OAUTH_TOKEN-", 0),
              0u)
        << describe(r);
    EXPECT_TRUE(ajtest::contains(
        r.err, "the first available of 2 sources; $AJ_TEST_UNSET_TOKEN is not set"))
        << describe(r);
    EXPECT_TRUE(ajtest::contains(
        r.err, "GEMINI_API_KEY not set (optional: $AJ_TEST_UNSET_GEMINI is not set)"))
        << describe(r);
    EXPECT_FALSE(ajtest::contains(r.err, "expired"));
    ASSERT_EQ(api.requests().size(), 1u) << describe(r);
    EXPECT_TRUE(ajtest::contains(api.requests()[0].head, "Authorization: Bearer " + token))
        << api.requests()[0].head;
    EXPECT_FALSE(ajtest::contains(api.requests()[0].head, "never-read"));
    // Set, the environment alternative wins.
    const std::string env_token = ajit::unique_name("sk-ant-oat-env-");
    auto e = run(curl("Authorization: Bearer $CLAUDE_CODE_OAUTH_TOKEN"), {"-p", p},
                 {"AJ_TEST_UNSET_TOKEN=" + env_token});
    ASSERT_EQ(e.status, 0) << describe(e);
    ASSERT_EQ(api.requests().size(), 2u) << describe(e);
    EXPECT_TRUE(ajtest::contains(api.requests()[1].head, "Authorization: Bearer " + env_token))
        << api.requests()[1].head;
}

// An expired token: one line on stderr with the policy's help, and the run goes on.
TEST_F(Secrets, ExpiredTokenIsSaidOnStderrAndTheRunGoesOn) {
    jail.home_dir().write(
        ".claude/.credentials.json",
        "{\"claudeAiOauth\": {\"accessToken\": \"sk-ant-oat-old\", \"expiresAt\": 1700000000000}}",
        0600);
    std::string p = policy(
        "CLAUDE_CODE_OAUTH_TOKEN = { source = "
        "\"json:~/.claude/.credentials.json#claudeAiOauth.accessToken\", "
        "hosts = [\"api.test:" +
        port +
        "\"], expires = \"claudeAiOauth.expiresAt\", help = \"run `claude` once "
        "outside the sandbox to refresh it\" }\n");
    auto r = run("echo ran", {"-p", p});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "ran")) << describe(r);
    EXPECT_TRUE(ajtest::contains(
        r.err,
        "agentjail: warning: secret CLAUDE_CODE_OAUTH_TOKEN: the token in "
        "~/.claude/.credentials.json expired at 2023-11-14 22:13 UTC: run `claude` "
        "once outside the sandbox to refresh it\n"))
        << describe(r);
}

// The placeholder is the same on the next run (an agent that remembers the key it
// approved does not ask again) and another with another state directory.
TEST_F(Secrets, PlaceholderIsStableAcrossRunsAndPerStateDirectory) {
    const std::string value = ajit::unique_name("sk-stable-");
    std::string p = policy(
        "API_KEY = { source = \"env:AJ_TEST_STABLE\", hosts = [\"api.test:" + port + "\"] }\n");
    auto once = [&](const std::string& state_home) {
        auto r = run("echo placeholder=$API_KEY", {"-p", p},
                     {"AJ_TEST_STABLE=" + value, "XDG_STATE_HOME=" + state_home});
        EXPECT_EQ(r.status, 0) << describe(r);
        return field(r.out, "placeholder");
    };
    std::string a = once(state());
    std::string b = once(state());
    std::string other = once(scratch.path() + "/other-state");
    EXPECT_EQ(a.rfind("agentjail-secret-placeholder-API_KEY-", 0), 0u) << a;
    EXPECT_EQ(a, b);
    EXPECT_NE(a, other);
    EXPECT_TRUE(ajtest::exists(state() + "/agentjail/placeholder.key"));
}

namespace {

// What one probe's echo looked like from inside: its bytes, how many came in each
// burst (a new burst after 100 ms without a byte: the origin writes 10 ms apart, the
// proxy's quiet period is 200 ms, the origin's last pause a second), and when each
// burst began, in seconds after the first byte.
struct Arrival {
    std::string bytes;
    std::vector<size_t> bursts;
    std::vector<double> starts;
};

// Lines "A LABEL SECONDS.MICROS CODE", one per byte as the shell inside read it.
std::map<std::string, Arrival> arrivals(const std::string& out) {
    std::map<std::string, Arrival> all;
    std::map<std::string, double> first, last;
    for (const auto& l : ajtest::lines(out)) {
        std::istringstream in(l);
        std::string tag, label;
        double t = 0;
        int code = 0;
        if (!(in >> tag >> label >> t >> code) || tag != "A") continue;
        Arrival& a = all[label];
        if (a.bursts.empty()) first[label] = t;
        if (a.bursts.empty() || t - last[label] >= 0.1) {
            a.bursts.push_back(0);
            a.starts.push_back(t - first[label]);
        }
        ++a.bursts.back();
        a.bytes += static_cast<char>(code);
        last[label] = t;
    }
    return all;
}

std::string show(const std::vector<size_t>& v) {
    std::string s;
    for (size_t n : v) s += (s.empty() ? "" : ",") + std::to_string(n);
    return "[" + s + "]";
}

// The probe inside: POSTs BODY to PATH with the secret in Authorization, and prints
// each byte of the echo with the time it was read (bash reads a pipe a byte at a time).
std::string probe_script(const std::string& port) {
    const std::string url = "https://api.test:" + port + "$2";
    return "export LC_ALL=C; echo \"R placeholder $API_KEY\"; "
           "probe() { printf %s \"$3\" > g.out; "
           "curl -sSN --max-time 10 --data-binary @g.out -H \"Authorization: Bearer $API_KEY\" " +
           url +
           " | while IFS= read -r -N 1 c; do "
           "printf 'A %s %s %d\\n' \"$1\" \"$EPOCHREALTIME\" \"'$c\"; done; "
           "rm -f g.out; }; ";
}

}  // namespace

// Issue 26, the secret masker as a prefix oracle. An allowed origin echoes the
// sandbox's request (its Authorization header, where the proxy put the real value,
// and its body, the sandbox's guess) 3 bytes every 10 ms, pauses a second, and ends.
// Before, a tail that began the secret was held back until the origin went on and any
// other went at once, so the time the echo came told the sandbox whether its guess
// began the secret, byte by byte. Now the proxy holds back the same window whatever
// the bytes (the longest string it looks for, less one) and lets it go after 200 ms
// without a byte from the origin: a right guess and a wrong one come back as the same
// bursts at the same times, and the value never. Positive control: with the secret
// not bound (the sandbox sends the value itself, the connection still intercepted by
// a method rule), the same measurement sees no window held and the value comes back
// as it was sent.
TEST_F(Secrets, AnEchoedGuessComesBackTheSameWhetherItBeginsTheSecretOrNot) {
    const std::string value = ajit::unique_name("sk-probe-") + "-4f9c2b7e";
    const std::string right = value.substr(0, value.size() - 2);
    std::string wrong = right;
    wrong.back() = wrong.back() == 'Z' ? 'Y' : 'Z';
    const std::string filler(20, 'q');
    // The proxy holds back the longest string it looks for, less one: here the
    // value's base64 at one of its three alignments (its other encoded forms are the
    // value itself), whatever the bytes that come.
    size_t longest = value.size();
    for (size_t a = 0; a < 3; ++a)
        longest = std::max(longest, 8 * (a + value.size()) / 6 - (8 * a + 5) / 6);
    const size_t window = longest - 1;
    std::string script = probe_script(port);
    for (std::string path : {"/echo-paced", "/echo-paced-chunked"})
        script += "probe right" + path + " " + path + " " + filler + right + "; probe wrong" +
                  path + " " + path + " " + filler + wrong + "; ";
    auto r = run(
        script,
        {"-p", policy("API_KEY = { source = \"env:AJ_TEST_PROBE_SECRET\", hosts = [\"api.test:" +
                      port + "\"] }\n")},
        {"AJ_TEST_PROBE_SECRET=" + value});
    ASSERT_EQ(r.status, 0) << describe(r);
    const std::string placeholder = line(r, "placeholder");
    ASSERT_EQ(placeholder.rfind("agentjail-secret-placeholder-API_KEY-", 0), 0u) << describe(r);
    std::string mask;
    while (mask.size() < value.size()) mask += placeholder;
    mask.resize(value.size());
    ASSERT_EQ(api.requests().size(), 4u) << describe(r);
    for (const auto& q : api.requests())
        EXPECT_TRUE(ajtest::contains(q.head, "Authorization: Bearer " + value))
            << "the value never went to the origin: the probe proves nothing\n"
            << q.head;
    auto got = arrivals(r.out);
    const std::string head = "auth=Bearer " + mask + "\n" + filler;
    const size_t total = head.size() + right.size();
    for (std::string path : {"/echo-paced", "/echo-paced-chunked"}) {
        const Arrival& a = got["right" + path];
        const Arrival& b = got["wrong" + path];
        EXPECT_EQ(a.bytes, head + right + "|end\n") << path << "\n" << describe(r);
        EXPECT_EQ(b.bytes, head + wrong + "|end\n") << path << "\n" << describe(r);
        EXPECT_FALSE(ajtest::contains(a.bytes + b.bytes, value));
        // The same bursts for both: all but the window as the origin writes, the
        // window after the quiet period, the end after the origin's pause.
        EXPECT_EQ(show(a.bursts), show(b.bursts)) << path << "\n" << describe(r);
        EXPECT_EQ(show(a.bursts), show({total - window, window, 5})) << path << "\n" << describe(r);
        // At the same times: a tail that began the secret, held until the quiet period
        // while a wrong one went at once, would come 200 ms later in the same bursts.
        for (size_t i = 0; i < a.starts.size() && i < b.starts.size(); ++i)
            EXPECT_NEAR(a.starts[i], b.starts[i], 0.1) << path << " burst " << i << "\n"
                                                       << describe(r);
    }
    EXPECT_FALSE(ajtest::contains(r.out + r.err, value)) << describe(r);

    // Positive control: no secret bound, the value sent by the sandbox itself.
    NetPolicy p;
    p.hosts = {{"api.test", "127.0.0.1"}};
    p.allow_toml = {"{ host = \"api.test:" + port + "\", methods = [\"POST\"] }"};
    auto u = run("API_KEY=" + value + "; " + probe_script(port) + "probe control /echo-paced " +
                     filler + right,
                 {"-p", scratch.write("open.toml", ajnet::toml(p))});
    ASSERT_EQ(u.status, 0) << describe(u);
    const Arrival ctl = arrivals(u.out)["control"];
    const std::string clear = "auth=Bearer " + value + "\n" + filler + right;
    EXPECT_EQ(ctl.bytes, clear + "|end\n") << describe(u);
    EXPECT_EQ(show(ctl.bursts), show({clear.size(), 5})) << describe(u);
}

// A secret kept with `agentjail secret set` (value from stdin, never an argument) is
// put in with no flag where the run allows its host, and nowhere else: a run through
// the proxy that does not allow the host, or one without the proxy, has no $NAME and
// runs all the same. `secret list` names it and its host, never its value; `secret
// rm` takes it away. Control: the origin gets the exact value.
TEST_F(Secrets, AStoredSecretGoesOnlyWhereTheRunAllowsItsHost) {
    const std::string value = jail.new_canary();
    const std::string config = scratch.path() + "/config";
    auto with_config = [&] {
        ajtest::RunOptions o;
        o.env = {"HOME=" + jail.home(), "XDG_CONFIG_HOME=" + config};
        o.cwd = jail.ws();
        return o;
    };
    auto set_opts = with_config();
    set_opts.input = value + "\n";
    auto set = ajtest::agentjail_with({"secret", "set", "STORED_KEY", "--host", "api.test"}, set_opts);
    ASSERT_EQ(set.status, 0) << describe(set);
    struct stat st {};
    ASSERT_EQ(::stat((config + "/agentjail/secrets/STORED_KEY").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto list = ajtest::agentjail_with({"secret", "list"}, with_config());
    EXPECT_EQ(list.out, "STORED_KEY  api.test\n") << describe(list);
    EXPECT_FALSE(ajtest::contains(list.out + list.err + set.out + set.err, value));
    // An argument is never taken as the value.
    auto arg = ajtest::agentjail_with({"secret", "set", "OTHER", value, "--host", "api.test"}, with_config());
    EXPECT_EQ(arg.status, 125) << describe(arg);

    const std::string p = policy("");
    const std::string script = "echo placeholder=${STORED_KEY-unset}; " + curl("x-api-key: ${STORED_KEY-none}") + "true";
    const std::vector<std::string> env = {"XDG_CONFIG_HOME=" + config};
    auto allowed = run(script, {"-p", p, "--allow-host", "api.test:" + port}, env);
    ASSERT_EQ(allowed.status, 0) << describe(allowed);
    EXPECT_EQ(field(allowed.out, "placeholder").rfind("agentjail-secret-placeholder-STORED_KEY-", 0), 0u)
        << describe(allowed);
    EXPECT_EQ(line(allowed, "code"), "200") << describe(allowed);
    ASSERT_EQ(api.requests().size(), 1u) << describe(allowed);
    EXPECT_TRUE(ajtest::contains(api.requests()[0].head, "x-api-key: " + value)) << api.requests()[0].head;
    // Through the proxy without its host: not there, and the host stays refused.
    auto other = run(script, {"-p", p, "--allow-host", "other.test"}, env);
    EXPECT_EQ(other.status, 0) << describe(other);
    EXPECT_EQ(field(other.out, "placeholder"), "unset") << describe(other);
    EXPECT_EQ(api.requests().size(), 1u) << "a stored secret allowed its host";
    auto note = ajtest::agentjail_with({"explain", "-C", jail.ws(), "--allow-host", "other.test", "--", "true"},
                                       with_config());
    EXPECT_TRUE(ajtest::contains(note.out, "stored secret STORED_KEY: not put in (the run allows none of its hosts: "
                                           "api.test)"))
        << describe(note);
    // No proxy at all: not there either, and the run goes on.
    auto none = run("echo placeholder=${STORED_KEY-unset}", {}, env);
    EXPECT_EQ(none.status, 0) << describe(none);
    EXPECT_EQ(field(none.out, "placeholder"), "unset") << describe(none);
    // The store is hidden inside whatever binds it.
    auto peek = run("cat '" + config + "/agentjail/secrets/STORED_KEY'; echo done", {"--ro", config}, env);
    EXPECT_TRUE(ajtest::contains(peek.out, "done")) << describe(peek);
    auto rm = ajtest::agentjail_with({"secret", "rm", "STORED_KEY"}, with_config());
    EXPECT_EQ(rm.status, 0) << describe(rm);
    EXPECT_EQ(ajtest::agentjail_with({"secret", "list"}, with_config()).out, "");
}
