// SPDX-License-Identifier: Apache-2.0
// Unit tests of where secrets come from (net/secret_source.hpp) and what the plan
// makes of them: the dotenv syntax, json paths, [secrets] parsing with its
// file:line:col errors, --secret without hosts, alternatives, optional secrets, the
// expiry warning, and the stable placeholders with their key (plan/placeholder.cc).
#include "test_plan_fixture.hpp"

#include "net/secret_source.hpp"
#include "plan/internal.hpp"
#include "run/host_actions.hpp"
#include "policy/policy.hpp"

#include <sys/stat.h>

#include <ctime>
#include <string>

using namespace ajplantest;
namespace plan = agentjail::plan;
namespace policy = agentjail::policy;
namespace net = agentjail::net;
namespace run = agentjail::run;

namespace {

std::string parse_err(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    return r ? "(no error)" : r.error().message();
}

Policy parse_ok(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    EXPECT_TRUE(r.has_value()) << (r ? std::string() : r.error().message());
    return r ? std::move(r).value() : Policy{};
}

std::string dotenv(const std::string& text, const std::string& key) {
    std::string why;
    auto v = net::dotenv_value(text, key, &why);
    return v ? *v : "(" + why + ")";
}

// Host facts whose state directory is the tree's own (XDG_STATE_HOME), so that the
// placeholder key is made there and nowhere else.
HostFacts with_state(const PlanTree& t) {
    HostFacts h = t.host();
    h.environ.push_back("XDG_STATE_HOME=" + t.p("state"));
    return h;
}

// The placeholder a run gets: the plan built, then what it makes on the host made
// (the placeholder key on first use), as lib/run does.
std::string placeholder_of(const Policy& p, const HostFacts& h, const std::string& name) {
    auto r = plan::build(p, {"/x"}, h);
    EXPECT_TRUE(r) << r.error().message();
    if (!r) return {};
    std::vector<std::string> warnings;
    auto made = run::carry_out(*r, warnings);
    EXPECT_TRUE(made) << made.error().message();
    EXPECT_TRUE(warnings.empty());
    return env_of(*r, name);
}

}  // namespace

TEST(SecretSource, DotenvSyntax) {
    const std::string text =
        "# a comment\n"
        "\n"
        "   \n"
        "export A=alpha\n"
        "B = bravo   # inline comment\n"
        "C='charlie # not a comment'\n"
        "D=\"delta \\\"quoted\\\" \\\\ end\"\n"
        "E=`echo`\n"
        "F=first\n"
        "F=second\n"
        "G=a#b\n"
        "H=\r\n"
        "I=\"two\nlines\"\n"
        "J=\"with \\n escape\"\n"
        "K='open\n"
        "not a line at all\n"
        "L=after\n";
    EXPECT_EQ(dotenv(text, "A"), "alpha");
    EXPECT_EQ(dotenv(text, "B"), "bravo");
    EXPECT_EQ(dotenv(text, "C"), "charlie # not a comment");
    EXPECT_EQ(dotenv(text, "D"), "delta \"quoted\" \\ end");
    EXPECT_EQ(dotenv(text, "E"), "echo");
    EXPECT_EQ(dotenv(text, "F"), "second");  // the last line of a key wins
    EXPECT_EQ(dotenv(text, "G"), "a#b");     // '#' starts a comment only after whitespace
    EXPECT_EQ(dotenv(text, "H"), "(H: the value is empty)");
    EXPECT_EQ(dotenv(text, "I"), "(I: the value holds a line break or NUL (a secret is one line))");
    EXPECT_EQ(dotenv(text, "J"), "(J: the value holds a line break or NUL (a secret is one line))");
    EXPECT_EQ(dotenv(text, "NOPE"), "(no NOPE= line)");
    // An unclosed quote swallows the rest: nothing after it is a line of its own.
    EXPECT_EQ(dotenv(text, "K"), "(line 16: the quote is never closed)");
    EXPECT_EQ(dotenv("export  X=1\nY=2", "Y"), "2");       // no newline at the end
    EXPECT_EQ(dotenv("X=${HOME}/k\n", "X"), "${HOME}/k");  // no expansion
}

TEST(SecretSource, SpecsAndTheirErrors) {
    std::string why;
    auto d = net::parse_source("dotenv:.env", &why);
    ASSERT_TRUE(d) << why;
    EXPECT_EQ(d->kind, net::SourceSpec::Kind::dotenv);
    EXPECT_EQ(d->where, ".env");
    EXPECT_EQ(d->key, "");
    auto k = net::parse_source("dotenv:/p/my#env#OTHER_KEY", &why);
    ASSERT_TRUE(k) << why;
    EXPECT_EQ(k->where, "/p/my#env");
    EXPECT_EQ(k->key, "OTHER_KEY");
    auto j = net::parse_source("json:~/.claude/.credentials.json#claudeAiOauth.accessToken", &why);
    ASSERT_TRUE(j) << why;
    EXPECT_EQ(j->where, "~/.claude/.credentials.json");
    EXPECT_EQ(j->key, "claudeAiOauth.accessToken");
    EXPECT_EQ(net::source_text(*j), "json:~/.claude/.credentials.json#claudeAiOauth.accessToken");
    EXPECT_FALSE(net::parse_source("json:/f.json", &why));
    EXPECT_EQ(why, "'json:/f.json': expected json:FILE#dotted.path (the string field to read)");
    EXPECT_FALSE(net::parse_source("json:/f.json#a..b", &why));
    EXPECT_FALSE(net::parse_source("json:/f.json#claudeAiOauth.refreshToken", &why));
    EXPECT_NE(why.find("a refresh token is never read or passed"), std::string::npos) << why;
    EXPECT_FALSE(net::parse_source("dotenv:", &why));
    EXPECT_FALSE(net::parse_source("dotenv:.env#", &why));
    EXPECT_FALSE(net::parse_source("env:1X", &why));
    EXPECT_FALSE(net::parse_source("vault:x", &why));
}

TEST(SecretSource, ProbeReadsJsonAndLeavesTheValueOut) {
    ajtest::TempDir d("aj-src");
    std::string f =
        d.write("auth.json",
                "{\"claudeAiOauth\": {\"accessToken\": \"sk-ant-oat-1\", \"refreshToken\": \"r\", "
                "\"expiresAt\": 1000000000000}, \"list\": [\"zero\", {\"k\": \"v\"}], \"n\": 5}");
    auto spec = [&](const std::string& path) {
        std::string why;
        auto s = net::parse_source("json:" + f + "#" + path, &why);
        EXPECT_TRUE(s) << why;
        return *s;
    };
    const agentjail::plan::HostView host;  // how the planner probes a source
    auto probe = [&](const net::SourceSpec& sp, const std::vector<std::string>& env = {},
                     const std::string& expires = {}) { return host.probe_secret(sp, "T", env, expires); };
    auto p = probe(spec("claudeAiOauth.accessToken"), {}, "claudeAiOauth.expiresAt");
    EXPECT_TRUE(p.available) << p.why;
    ASSERT_TRUE(p.expires_at);
    EXPECT_DOUBLE_EQ(*p.expires_at, 1000000000.0);  // milliseconds read as such
    auto v = net::read_source(spec("list.1.k"), "T");
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_EQ(*v, "v");
    EXPECT_EQ(probe(spec("n")).why, f + ": n is not a string");
    EXPECT_EQ(probe(spec("claudeAiOauth.nope")).why,
              f + ": no field claudeAiOauth.nope");
    std::string bad = d.write("bad.json", "{\"a\": \"sk-secret-in-a-broken-file\",");
    std::string why;
    auto b = probe(*net::parse_source("json:" + bad + "#a", &why));
    // A parse error names the file, never the text around the error (it may be the token).
    EXPECT_EQ(b.why, bad + ": not valid JSON");
    auto e = probe(*net::parse_source("env:AJ_NOT_SET_HERE", &why), {"OTHER=1"});
    EXPECT_EQ(e.why, "$AJ_NOT_SET_HERE is not set");
    EXPECT_TRUE(e.unset);
    EXPECT_FALSE(b.unset);  // a file's failure is not an unset variable
}

// [secrets] in a policy file: alternatives, optional, expires and help, and each bad
// value as one file:line:col line.
TEST(SecretPolicy, ParsesAlternativesAndReportsBadSpecsAtTheirPosition) {
    Policy p = parse_ok(
        "[network]\nmode = \"proxy\"\n[secrets]\n"
        "T = { source = [\"env:CLAUDE_CODE_OAUTH_TOKEN\", "
        "\"json:~/.claude/.credentials.json#claudeAiOauth.accessToken\"], "
        "hosts = [\"api.anthropic.com\"], optional = true, expires = \"claudeAiOauth.expiresAt\", "
        "help = \"run claude\" }\n");
    ASSERT_EQ(p.network.secrets.size(), 1u);
    const auto& s = p.network.secrets[0];
    ASSERT_EQ(s.sources.size(), 2u);
    EXPECT_EQ(s.sources[1].value, "json:~/.claude/.credentials.json#claudeAiOauth.accessToken");
    EXPECT_EQ(s.sources[1].origin.line, 4);
    EXPECT_TRUE(s.optional);
    EXPECT_EQ(s.expires, "claudeAiOauth.expiresAt");
    EXPECT_EQ(s.help, "run claude");
    EXPECT_EQ(
        parse_err("[secrets]\nK = { source = [\"env:A\", \"vault:x\"], hosts = [\"a.test\"] }\n"),
        "t.toml:2:26: secrets.K.source[1]: 'vault:x': a secret's source is env:VARIABLE, "
        "file:PATH, "
        "dotenv:FILE[#KEY] or json:FILE#dotted.path");
    EXPECT_EQ(parse_err("[secrets]\nK = { source = [], hosts = [\"a.test\"] }\n"),
              "t.toml:2:16: secrets.K.source: expected at least one source");
    EXPECT_EQ(parse_err("[secrets]\nK = { source = \"json:rel.json#a\", hosts = [\"a.test\"] }\n"),
              "t.toml:2:16: secrets.K.source: 'json:rel.json#a': expected an absolute path or one "
              "starting with ~, "
              "{workspace}, {tmp} or {state}, got 'rel.json'");
    EXPECT_EQ(
        parse_err(
            "[secrets]\nK = { source = \"env:A\", hosts = [\"a.test\"], expires = \"x.y\" }\n"),
        "t.toml:2:55: secrets.K.expires: expires is a JSON path in the file of a json: source, and "
        "this "
        "secret has none");
    EXPECT_EQ(
        parse_err(
            "[secrets]\nK = { source = \"env:A\", hosts = [\"a.test\"], optional = \"yes\" }\n"),
        "t.toml:2:56: secrets.K.optional: expected true or false, got a string");
    EXPECT_EQ(
        parse_err(
            "[secrets]\nK = { source = \"env:A\", hosts = [\"a.test\"], help = \"a\\nb\" }\n"),
        "t.toml:2:52: secrets.K.help: expected one line of text (no control characters)");
    EXPECT_EQ(
        parse_err("[secrets]\nK = { source = \"env:A\", hosts = [\"a.test\"], expire = \"a\" }\n"),
        "t.toml:2:45: secrets.K.expire: unknown key; did you mean 'expires'?");
    // dotenv: may be relative (to the directory agentjail runs in).
    EXPECT_EQ(parse_err("[secrets]\nK = { source = \"dotenv:.env\", hosts = [\"a.test\"] }\n"),
              "(no error)");
}

// --secret NAME=SOURCE without hosts: the policy's own entry gets the source; a
// well-known key goes to its API (and the gateway its base-URL variable names);
// anything else is an error that says to name the hosts.
TEST(SecretPolicy, SecretFlagWithoutHostsUsesThePolicysEntry) {
    Policy none = parse_ok("");
    ASSERT_TRUE(policy::add_secret(none, "ANTHROPIC_API_KEY=dotenv:.env", flag("--secret")));
    ASSERT_EQ(none.network.secrets.size(), 1u);
    EXPECT_EQ(none.network.secrets[0].hosts, (std::vector<std::string>{"api.anthropic.com"}));
    EXPECT_EQ(none.network.secrets[0].base_url, "ANTHROPIC_BASE_URL");
    EXPECT_EQ(none.network.mode.value, policy::NetMode::proxy);
    ASSERT_TRUE(policy::add_secret(none, "GITHUB_TOKEN=env:GH", flag("--secret")));
    EXPECT_EQ(none.network.secrets[1].hosts, (std::vector<std::string>{"api.github.com"}));
    EXPECT_EQ(none.network.secrets[1].base_url, "");
    auto u = policy::add_secret(none, "MY_KEY=env:X", flag("--secret"));
    ASSERT_FALSE(u);
    EXPECT_NE(u.error().message().find("--secret MY_KEY=env:X@HOST[,HOST...]"), std::string::npos);
    Policy p = parse_ok(
        "[secrets]\nANTHROPIC_API_KEY = { source = \"env:ANTHROPIC_API_KEY\", hosts = "
        "[\"api.anthropic.com\"], "
        "headers = [\"X-Extra\"], optional = true }\n");
    ASSERT_TRUE(policy::add_secret(p, "ANTHROPIC_API_KEY=dotenv:/p/.env", flag("--secret")));
    ASSERT_EQ(p.network.secrets.size(), 1u);
    const auto& s = p.network.secrets[0];
    ASSERT_EQ(s.sources.size(), 1u);
    EXPECT_EQ(s.sources[0].value, "dotenv:/p/.env");
    EXPECT_EQ(s.hosts, (std::vector<std::string>{"api.anthropic.com"}));
    EXPECT_EQ(s.headers, (std::vector<std::string>{"X-Extra"}));
    EXPECT_FALSE(s.optional);  // asked for by name: a missing .env is an error
    EXPECT_EQ(p.network.mode.value, policy::NetMode::proxy);
    EXPECT_FALSE(policy::add_secret(p, "ANTHROPIC_API_KEY=vault:x", flag("--secret")));
}

// A dotenv secret: the plan holds the placeholder and the absolute source, never the
// value; the .env is hidden inside by the default policy's {workspace}/**/.env*.
TEST(SecretPlan, DotenvSourceIsCheckedAndTheValueStaysOut) {
    PlanTree t;
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_secret(p, "KEY=dotenv:.env@api.test", flag("--secret")));
    auto r = plan::build(p, {"/x"}, with_state(t));
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_TRUE(r->net);
    ASSERT_EQ(r->net->secrets.size(), 1u);
    EXPECT_EQ(r->net->secrets[0].source, "dotenv:" + t.proj() + "/.env#KEY");
    EXPECT_EQ(env_of(*r, "KEY").rfind("agentjail-secret-placeholder-KEY-", 0), 0u);
    EXPECT_EQ(plan::to_text(*r).find("AJ-CANARY-env"), std::string::npos);
    EXPECT_EQ(plan::to_json(*r).find("AJ-CANARY-env"), std::string::npos);
    for (const auto& kv : r->env) EXPECT_EQ(kv.find("AJ-CANARY-env"), std::string::npos) << kv;
    bool hidden = false;
    for (const auto& m : r->mounts)
        hidden = hidden || (m.dst == t.proj() + "/.env" && m.kind == MountKind::mask_file);
    EXPECT_TRUE(hidden) << plan::to_text(*r);
    // A file name with a '#': the key written out; what the proxy reads back is the same.
    t.tmp.write("home/u/proj/my#env", "KEY=from-hash-file\n");
    Policy hp = t.defaults();
    ASSERT_TRUE(policy::add_secret(hp, "KEY=dotenv:my#env#KEY@api.test", flag("--secret")));
    auto hr = plan::build(hp, {"/x"}, with_state(t));
    ASSERT_TRUE(hr) << hr.error().message();
    std::string why;
    auto again = net::parse_source(hr->net->secrets[0].source, &why);
    ASSERT_TRUE(again) << why;
    auto value = net::read_source(*again, "KEY");
    ASSERT_TRUE(value) << value.error().message();
    EXPECT_EQ(*value, "from-hash-file");
    // Another key of the file, a missing key, a missing file: checked at plan time.
    t.tmp.write("home/u/proj/.env.two", "export OTHER='x y'\nMULTI=\"a\\nb\"\n");
    Policy q = t.defaults();
    ASSERT_TRUE(policy::add_secret(q, "KEY=dotenv:.env.two#OTHER@api.test", flag("--secret")));
    EXPECT_TRUE(plan::build(q, {"/x"}, with_state(t)));
    for (const auto& [spec, message] : std::vector<std::pair<std::string, std::string>>{
             {"KEY=dotenv:.env.two@api.test",
              "secret KEY: " + t.proj() + "/.env.two: no KEY= line"},
             {"KEY=dotenv:.env.two#MULTI@api.test",
              "secret KEY: " + t.proj() +
                  "/.env.two: MULTI: the value holds a line break or NUL (a secret is one line)"},
             {"KEY=dotenv:.env.none@api.test",
              "secret KEY: " + t.proj() + "/.env.none: ENOENT (No such file or directory)"}}) {
        Policy b = t.defaults();
        ASSERT_TRUE(policy::add_secret(b, spec, flag("--secret")));
        auto bad = plan::build(b, {"/x"}, with_state(t));
        ASSERT_FALSE(bad) << spec;
        EXPECT_EQ(bad.error().message(), "command line (--secret): " + message) << spec;
    }
}

// Alternatives: the first available wins and explain says which and why; an
// optional secret with none is left out (no variable, no host); a required one fails.
TEST(SecretPlan, AlternativesAndOptionalSecrets) {
    PlanTree t;
    std::string creds =
        t.tmp.write("home/u/.claude/.credentials.json",
                    "{\"claudeAiOauth\":{\"accessToken\":\"AJ-CANARY-oauth\",\"expiresAt\":" +
                        std::to_string((std::time(nullptr) + 3600) * 1000LL) + "}}");
    std::string toml =
        "[network]\nmode = \"proxy\"\n[secrets]\n"
        "CLAUDE_CODE_OAUTH_TOKEN = { source = [\"env:CLAUDE_CODE_OAUTH_TOKEN\", "
        "\"json:~/.claude/.credentials.json#claudeAiOauth.accessToken\"], hosts = "
        "[\"api.anthropic.com\"], "
        "optional = true, expires = \"claudeAiOauth.expiresAt\", help = \"run claude once "
        "outside\" }\n"
        "ANTHROPIC_API_KEY = { source = \"env:ANTHROPIC_API_KEY\", hosts = "
        "[\"api.anthropic.com\"], optional = true }\n";
    Policy p = parse_ok(toml);
    Policy base = t.defaults();
    base.network = p.network;
    auto r = plan::build(base, {"/x"}, with_state(t));
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_TRUE(r->net);
    ASSERT_EQ(r->net->secrets.size(), 1u);
    EXPECT_EQ(r->net->secrets[0].source, "json:" + creds + "#claudeAiOauth.accessToken");
    std::string text = plan::to_text(*r);
    EXPECT_NE(text.find("the first available of 2 sources; $CLAUDE_CODE_OAUTH_TOKEN is not set"),
              std::string::npos)
        << text;
    EXPECT_NE(
        text.find("secret     ANTHROPIC_API_KEY not set (optional: $ANTHROPIC_API_KEY is not set)"),
        std::string::npos)
        << text;
    EXPECT_EQ(text.find("AJ-CANARY-oauth"), std::string::npos);
    EXPECT_EQ(env_of(*r, "ANTHROPIC_API_KEY"), "<unset>");
    EXPECT_TRUE(r->warnings.empty());  // not expired
    // The env alternative set: it wins.
    auto h = with_state(t);
    h.environ.push_back("CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat-from-env");
    auto r2 = plan::build(base, {"/x"}, h);
    ASSERT_TRUE(r2) << r2.error().message();
    EXPECT_EQ(r2->net->secrets[0].source, "env:CLAUDE_CODE_OAUTH_TOKEN");
    // Expired: a warning with the help, and the run still planned.
    t.tmp.write(
        "home/u/.claude/.credentials.json",
        "{\"claudeAiOauth\":{\"accessToken\":\"AJ-CANARY-oauth\",\"expiresAt\":1700000000000}}");
    auto r3 = plan::build(base, {"/x"}, with_state(t));
    ASSERT_TRUE(r3) << r3.error().message();
    ASSERT_EQ(r3->warnings.size(), 1u);
    EXPECT_EQ(r3->warnings[0],
              "secret CLAUDE_CODE_OAUTH_TOKEN: the token in ~/.claude/.credentials.json expired at "
              "2023-11-14 22:13 "
              "UTC: run claude once outside");
    // Required and none available: today's error, or every alternative's reason.
    Policy req = base;
    req.network.secrets[1].optional = false;
    auto bad = plan::build(req, {"/x"}, with_state(t));
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find(
                  "secret ANTHROPIC_API_KEY: $ANTHROPIC_API_KEY is not set in agentjail's "
                  "environment"),
              std::string::npos)
        << bad.error().message();
    Policy req2 = base;
    req2.network.secrets[0].optional = false;
    ::unlink(creds.c_str());
    auto bad2 = plan::build(req2, {"/x"}, with_state(t));
    ASSERT_FALSE(bad2);
    EXPECT_NE(bad2.error().message().find(
                  "none of its sources is available ($CLAUDE_CODE_OAUTH_TOKEN is not set; " +
                  creds + ": ENOENT (No such file or directory))"),
              std::string::npos)
        << bad2.error().message();
    // Optional secrets without the proxy are left out; required ones are an error.
    Policy off = base;
    off.network.mode.value = policy::NetMode::none;
    auto r4 = plan::build(off, {"/x"}, with_state(t));
    ASSERT_TRUE(r4) << r4.error().message();
    EXPECT_FALSE(r4->net);
}

// The placeholder is the same across plans for one secret, source and state
// directory, and differs for another state directory, name or source; the key is
// made once, 0600, and hidden inside even when its directory is bound read-write.
TEST(SecretPlan, StablePlaceholdersAndTheirKey) {
    PlanTree t;
    auto h = with_state(t);
    h.environ.push_back("REAL=sk-real");
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_secret(p, "K=env:REAL@api.test", flag("--secret")));
    std::string a = placeholder_of(p, h, "K");
    std::string b = placeholder_of(p, h, "K");
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.rfind("agentjail-secret-placeholder-K-", 0), 0u) << a;
    EXPECT_EQ(a.size(), std::string("agentjail-secret-placeholder-K-").size() + 32);
    std::string key = t.p("state/agentjail/placeholder.key");
    struct stat st {};
    ASSERT_EQ(::stat(key.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(st.st_size, 32);
    // Another source, another name, another scope.
    Policy p2 = t.defaults();
    ASSERT_TRUE(policy::add_secret(p2, "K=env:OPENAI_API_KEY@api.test", flag("--secret")));
    EXPECT_NE(placeholder_of(p2, h, "K"), a);
    std::string k1 = plan::detail::stable_placeholder(std::string(32, 'k'), "", "K", {"env:REAL"});
    EXPECT_EQ(k1, plan::detail::stable_placeholder(std::string(32, 'k'), "", "K", {"env:REAL"}));
    EXPECT_NE(k1, plan::detail::stable_placeholder(std::string(32, 'k'), "/state/agentjail/claude",
                                                   "K", {"env:REAL"}));
    EXPECT_NE(k1, plan::detail::stable_placeholder(std::string(32, 'x'), "", "K", {"env:REAL"}));
    // Another key (another user): another placeholder.
    ASSERT_EQ(::unlink(key.c_str()), 0);
    EXPECT_NE(placeholder_of(p, h, "K"), a);
    // The key is masked even under a read-write bind of its directory.
    Policy rw = p;
    rw.rw.push_back(MountRule{t.p("state/agentjail"), "", false, flag("--rw")});
    auto r = plan::build(rw, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    bool masked = false;
    for (const auto& m : r->mounts)
        masked = masked || (m.dst == key && m.kind == MountKind::mask_file);
    EXPECT_TRUE(masked) << plan::to_text(*r);
}

// No usable state directory: the placeholder falls back to random per run, with a
// note, never an error.
TEST(SecretPlan, NoStateDirectoryFallsBackToRandomPlaceholders) {
    PlanTree t;
    auto h = t.host();
    t.tmp.write("not-a-dir", "x");
    h.environ.push_back("XDG_STATE_HOME=" + t.p("not-a-dir"));
    h.environ.push_back("REAL=sk-real");
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_secret(p, "K=env:REAL@api.test", flag("--secret")));
    auto r1 = plan::build(p, {"/x"}, h);
    auto r2 = plan::build(p, {"/x"}, h);
    ASSERT_TRUE(r1) << r1.error().message();
    ASSERT_TRUE(r2) << r2.error().message();
    EXPECT_NE(env_of(*r1, "K"), env_of(*r2, "K"));
    bool noted = false;
    for (const auto& n : r1->notes)
        noted = noted || n.find("the placeholder is random for this run") != std::string::npos;
    EXPECT_TRUE(noted) << plan::to_text(*r1);
}

// A root run whose HOME is another user's (sudo keeps HOME): root makes no directory
// in that user's tree (they would be root's, and that user's agentjail would refuse
// them); the placeholder is random for the run, with a note that says why.
TEST(SecretPlan, RootWithAnotherUsersHomeMakesNoKeyThere) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (chown of the scratch home to another uid)";
    PlanTree t;
    std::string other = t.tmp.mkdir("other-home", 0755);
    ASSERT_EQ(::chown(other.c_str(), 65534, 65534), 0);
    auto h = t.host();
    h.environ.push_back("XDG_STATE_HOME=" + other + "/.local/state");
    h.environ.push_back("REAL=sk-real");
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_secret(p, "K=env:REAL@api.test", flag("--secret")));
    auto r = plan::build(p, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_FALSE(ajtest::exists(other + "/.local"));
    EXPECT_TRUE(has_note(*r, "belongs to uid 65534 (a root run with another user's HOME)"))
        << plan::to_text(*r);
}
