// SPDX-License-Identifier: Apache-2.0
// Unit tests of [network] in policies and plans: parsing and its errors (with
// file:line:col), layering, the presets, the CLI/API overrides, and what the plan
// makes of each mode (clone flags, the proxy variables, the proxy's settings).
#include "test_plan_fixture.hpp"

#include "policy/policy.hpp"

#include <sched.h>

#include <string>

using namespace ajplantest;
namespace plan = agentjail::plan;
namespace policy = agentjail::policy;
using agentjail::policy::NetMode;

namespace {

Policy parse_ok(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    EXPECT_TRUE(r.has_value()) << (r ? std::string() : r.error().message());
    return r ? std::move(r).value() : Policy{};
}

std::string parse_err(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    return r ? "(no error)" : r.error().message();
}

std::string env_of(const Plan& p, const std::string& name) {
    for (const auto& kv : p.env)
        if (kv.compare(0, name.size() + 1, name + "=") == 0) return kv.substr(name.size() + 1);
    return "(unset)";
}

TEST(NetPolicy, DefaultIsNone) {
    Policy p = parse_ok("");
    EXPECT_EQ(p.network.mode.value, NetMode::none);
    EXPECT_EQ(p.network.mode.origin.file, "built-in default");
    EXPECT_TRUE(p.network.allow.empty());
    auto d = policy::load("default");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->network.mode.value, NetMode::none);
}

TEST(NetPolicy, ParsesEveryKey) {
    Policy p = parse_ok(
        "[network]\n"
        "mode = \"proxy\"\n"
        "allow = [\"api.anthropic.com\", \"*.npmjs.org\", \"github.com:443\"]\n"
        "deny = [\"evil.npmjs.org\"]\n"
        "log = \"/tmp/net.jsonl\"\n"
        "max_connections = 32\n"
        "[network.hosts]\n"
        "\"example.test\" = \"127.0.0.1\"\n");
    EXPECT_EQ(p.network.mode.value, NetMode::proxy);
    EXPECT_EQ(p.network.mode.origin.line, 2);
    ASSERT_EQ(p.network.allow.size(), 3u);
    EXPECT_EQ(p.network.allow[1].pattern, "*.npmjs.org");
    EXPECT_EQ(p.network.allow[1].origin.describe(), "t.toml:3:31 (network.allow[1])");
    ASSERT_EQ(p.network.deny.size(), 1u);
    EXPECT_EQ(p.network.log.value, "/tmp/net.jsonl");
    EXPECT_EQ(p.network.max_connections.value, 32u);
    ASSERT_EQ(p.network.hosts.size(), 1u);
    EXPECT_EQ(p.network.hosts[0].host, "example.test");
    EXPECT_EQ(p.network.hosts[0].address, "127.0.0.1");
}

TEST(NetPolicy, ErrorsNameFileLineColumn) {
    EXPECT_EQ(parse_err("[network]\nmode = \"open\"\n"),
              "t.toml:2:8: network.mode: expected \"none\", \"proxy\" or \"host\", got \"open\"");
    EXPECT_EQ(parse_err("[network]\nallow = [\"ok.test\", \"bad host\"]\n"),
              "t.toml:2:21: network.allow[1]: ' ' is not allowed in a host name ('bad host'; patterns are NAME, "
              "*.DOMAIN or *, with an optional :PORT)");
    EXPECT_EQ(parse_err("[network]\ndeny = [\"x.test:0\"]\n"),
              "t.toml:2:9: network.deny[0]: 'x.test:0': the port must be a number from 1 to 65535 or *");
    EXPECT_EQ(parse_err("[network]\nallow = \"x.test\"\n"), "t.toml:2:9: network.allow: expected an array, got a string");
    EXPECT_EQ(parse_err("[network]\nalow = []\n"), "t.toml:2:1: network.alow: unknown key; did you mean 'allow'?");
    EXPECT_EQ(parse_err("[network.hosts]\n\"a.test\" = \"localhost\"\n"),
              "t.toml:2:12: network.hosts.a.test: 'localhost' is not an IP address (write e.g. \"127.0.0.1\" or "
              "\"::1\")");
    EXPECT_EQ(parse_err("[network.hosts]\n\"*.test\" = \"127.0.0.1\"\n"),
              "t.toml:2:1: network.hosts.*.test: '*.test': a pinned host is one exact name, without '*' or a port");
    EXPECT_EQ(parse_err("[network]\nmax_connections = 0\n"),
              "t.toml:2:19: network.max_connections: expected a number from 1 to 65536");
    EXPECT_EQ(parse_err("[network]\nlog = \"rel/net.jsonl\"\n").substr(0, 23), "t.toml:2:7: network.log");
}

TEST(NetPolicy, LayersAccumulateAndOverride) {
    ajtest::TempDir d;
    d.write("base.toml", "[network]\nmode = \"proxy\"\nallow = [\"a.test\"]\n[network.hosts]\n\"a.test\" = \"10.0.0.1\"\n");
    std::string top = d.write("top.toml",
                              "extends = \"base.toml\"\n[network]\nallow = [\"b.test\"]\n[network.hosts]\n"
                              "\"A.test\" = \"127.0.0.1\"\n");
    auto p = policy::load(top);
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_EQ(p->network.mode.value, NetMode::proxy);
    ASSERT_EQ(p->network.allow.size(), 2u);
    ASSERT_EQ(p->network.hosts.size(), 1u);  // re-pinned, not pinned twice
    EXPECT_EQ(p->network.hosts[0].address, "127.0.0.1");
}

TEST(NetPolicy, PresetsAreNotPoliciesButLayers) {
    for (const auto& b : policy::builtins()) EXPECT_NE(b.name.substr(0, 4), "net-") << b.name;
    auto p = policy::load("default");
    ASSERT_TRUE(p);
    auto r = policy::apply_net_preset(*p, "balanced", flag("--net-preset"));
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(p->network.mode.value, NetMode::proxy);
    bool npm = false, anthropic = false;
    for (const auto& a : p->network.allow) {
        npm = npm || a.pattern == "registry.npmjs.org";
        anthropic = anthropic || a.pattern == "api.anthropic.com";
        EXPECT_EQ(a.origin.file, "net-balanced.toml");
        EXPECT_GT(a.origin.line, 0);
    }
    EXPECT_TRUE(npm);
    EXPECT_TRUE(anthropic);
    EXPECT_TRUE(policy::validate(*p));
    ASSERT_TRUE(policy::apply_net_preset(*p, "locked", flag("--net-preset")));
    EXPECT_EQ(p->network.mode.value, NetMode::none);
    ASSERT_TRUE(policy::apply_net_preset(*p, "open", flag("--net-preset")));
    EXPECT_EQ(p->network.mode.value, NetMode::proxy);
    auto bad = policy::apply_net_preset(*p, "nope", flag("--net-preset"));
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("unknown network preset 'nope' (built-in presets: balanced, locked, open"),
              std::string::npos)
        << bad.error().message();
}

// Issue 27, item 5: locked under an agent preset keeps the agent's own hosts (and its
// secrets, whose hosts the plan allows) and nothing else of the policy; the command
// line's --allow-host, before or after it, is added exactly.
TEST(NetPolicy, LockedUnderAnAgentPresetKeepsTheAgentsOwnHostsAndTheCommandLines) {
    auto patterns = [](const Policy& p) {
        std::vector<std::string> out;
        for (const auto& a : p.network.allow) out.push_back(a.pattern);
        return out;
    };
    auto claude = policy::load("claude");
    ASSERT_TRUE(claude) << claude.error().message();
    ASSERT_GT(claude->network.allow.size(), 20u) << "claude extends net-balanced";
    Policy a = *claude;
    ASSERT_TRUE(policy::apply_net_preset(a, "locked", flag("--net-preset")));
    EXPECT_EQ(patterns(a), std::vector<std::string>{"platform.claude.com"});
    EXPECT_EQ(a.network.mode.value, NetMode::proxy);
    EXPECT_FALSE(a.network.secrets.empty());
    ASSERT_EQ(a.network.notes.size(), 1u);
    EXPECT_NE(a.network.notes[0].find("kept the agent's own (claude.toml)"), std::string::npos) << a.network.notes[0];
    ASSERT_TRUE(policy::add_allow_host(a, "example.test", flag("--allow-host")));
    EXPECT_EQ(patterns(a), (std::vector<std::string>{"platform.claude.com", "example.test"}));
    // The flag before the preset counts the same.
    Policy b = *claude;
    ASSERT_TRUE(policy::add_allow_host(b, "example.test", flag("--allow-host")));
    ASSERT_TRUE(policy::apply_net_preset(b, "locked", flag("--net-preset")));
    EXPECT_EQ(patterns(b), (std::vector<std::string>{"platform.claude.com", "example.test"}));
    EXPECT_TRUE(policy::validate(b));

    // Without an agent preset, locked is nothing but what the command line allows.
    auto d = policy::load("default");
    ASSERT_TRUE(d);
    ASSERT_TRUE(policy::apply_net_preset(*d, "balanced", flag("--net-preset")));
    Policy c = *d;
    ASSERT_TRUE(policy::apply_net_preset(c, "locked", flag("--net-preset")));
    EXPECT_TRUE(c.network.allow.empty());
    EXPECT_EQ(c.network.mode.value, NetMode::none);
    ASSERT_TRUE(policy::add_allow_host(*d, "example.test", flag("--allow-host")));
    ASSERT_TRUE(policy::apply_net_preset(*d, "locked", flag("--net-preset")));
    EXPECT_EQ(patterns(*d), std::vector<std::string>{"example.test"});
    EXPECT_EQ(d->network.mode.value, NetMode::proxy);
}

TEST(NetPolicy, Overrides) {
    Policy p = parse_ok("");
    ASSERT_TRUE(policy::add_allow_host(p, "api.test", flag("--allow-host")));
    EXPECT_EQ(p.network.mode.value, NetMode::proxy);  // --allow-host implies proxy
    EXPECT_EQ(p.network.mode.origin.key, "--allow-host");
    ASSERT_TRUE(policy::set_net_mode(p, "host", flag("--net")));
    ASSERT_TRUE(policy::add_allow_host(p, "b.test", flag("--allow-host")));
    EXPECT_EQ(p.network.mode.value, NetMode::host);  // an explicit mode stays
    auto r = policy::add_deny_host(p, "a*b", flag("--deny-host"));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message().substr(0, 26), "command line: --deny-host:");
    EXPECT_FALSE(policy::set_net_mode(p, "bridge", flag("--net")));
}

TEST(NetPolicy, Secrets) {
    Policy p = parse_ok(
        "[network]\nmode = \"proxy\"\n[secrets]\nANTHROPIC_API_KEY = { source = \"env:REAL_KEY\", hosts = "
        "[\"api.anthropic.com\"] }\n");
    ASSERT_EQ(p.network.secrets.size(), 1u);
    ASSERT_EQ(p.network.secrets[0].sources.size(), 1u);
    EXPECT_EQ(p.network.secrets[0].sources[0].value, "env:REAL_KEY");
    EXPECT_EQ(parse_err("[secrets]\nK = { source = \"vault:x\", hosts = [\"a.test\"] }\n"),
              "t.toml:2:16: secrets.K.source: 'vault:x': a secret's source is env:VARIABLE, file:PATH, "
              "dotenv:FILE[#KEY] or json:FILE#dotted.path");
    EXPECT_EQ(parse_err("[secrets]\nK = { source = \"env:X\" }\n"),
              "t.toml:2:5: secrets.K: expected a table with 'source' and 'hosts' (or 'base_url')");
    // headers: more request headers the value may go in; never one that origins reflect.
    Policy h = parse_ok(
        "[network]\nmode = \"proxy\"\n[secrets]\nK = { source = \"env:X\", hosts = [\"a.test\"], "
        "headers = [\"X-Goog-Api-Key\"] }\n");
    ASSERT_EQ(h.network.secrets.size(), 1u);
    EXPECT_EQ(h.network.secrets[0].headers, (std::vector<std::string>{"X-Goog-Api-Key"}));
    for (const char* bad : {"Origin", "referer", "Cookie", "Proxy-Authorization", "Host", "a b"})
        EXPECT_NE(
            parse_err(
                std::string(
                    "[secrets]\nK = { source = \"env:X\", hosts = [\"a.test\"], headers = [\"") +
                bad + "\"] }\n"),
            "(no error)")
            << bad;
    Policy q = parse_ok("");
    ASSERT_TRUE(policy::add_secret(q, "KEY=file:/run/key@api.test,*.api.test", flag("--secret")));
    EXPECT_EQ(q.network.mode.value, NetMode::proxy);
    ASSERT_EQ(q.network.secrets.size(), 1u);
    EXPECT_EQ(q.network.secrets[0].sources[0].value, "file:/run/key");
    EXPECT_EQ(q.network.secrets[0].hosts, (std::vector<std::string>{"api.test", "*.api.test"}));
    // Without hosts: the entry of that name keeps its hosts and gets the new source.
    ASSERT_TRUE(policy::add_secret(q, "KEY=env:X", flag("--secret")));
    EXPECT_EQ(q.network.secrets[0].sources[0].value, "env:X");
    EXPECT_EQ(q.network.secrets[0].hosts, (std::vector<std::string>{"api.test", "*.api.test"}));
    EXPECT_FALSE(policy::add_secret(q, "OTHER=env:X", flag("--secret")));
    EXPECT_FALSE(policy::add_secret(q, "1KEY=env:X@a.test", flag("--secret")));
}

TEST(NetPlan, SecretsHoldAPlaceholderInside) {
    PlanTree t;
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_secret(p, "ANTHROPIC_API_KEY=env:REAL_KEY@api.anthropic.com", flag("--secret")));
    auto host = t.host();
    host.environ.push_back("REAL_KEY=sk-ant-real-value");
    host.environ.push_back("ANTHROPIC_API_KEY=sk-ant-real-value");
    auto r = plan::build(p, {"/x"}, host);
    ASSERT_TRUE(r) << r.error().message();
    std::string v = env_of(*r, "ANTHROPIC_API_KEY");
    EXPECT_EQ(v.rfind("agentjail-secret-placeholder-ANTHROPIC_API_KEY-", 0), 0u) << v;
    for (const auto& kv : r->env) EXPECT_EQ(kv.find("sk-ant-real-value"), std::string::npos) << kv;
    EXPECT_EQ(plan::to_text(*r).find("sk-ant-real-value"), std::string::npos);
    EXPECT_EQ(plan::to_json(*r).find("sk-ant-real-value"), std::string::npos);
    ASSERT_TRUE(r->net);
    ASSERT_EQ(r->net->secrets.size(), 1u);
    EXPECT_EQ(r->net->secrets[0].placeholder, v);
    EXPECT_EQ(r->net->rules.allow.size(), 1u);  // the secret's host is allowed
    // A missing source fails at plan time.
    Policy q = t.defaults();
    ASSERT_TRUE(policy::add_secret(q, "K=env:NOT_THERE@a.test", flag("--secret")));
    auto bad = plan::build(q, {"/x"}, t.host());
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message().find("$NOT_THERE is not set"), std::string::npos) << bad.error().message();
}

TEST(NetPlan, NoneKeepsTheNamespaceAndNoProxy) {
    PlanTree t;
    auto r = plan::build(t.defaults(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->clone_flags & CLONE_NEWNET);
    EXPECT_EQ(r->proxy_port, 0);
    EXPECT_FALSE(r->net);
    EXPECT_EQ(env_of(*r, "HTTPS_PROXY"), "(unset)");
}

TEST(NetPlan, ProxySetsTheEnvironmentAndTheSettings) {
    PlanTree t;
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_allow_host(p, "example.test:8080", at("n.toml", 3, 10, "network.allow[0]")));
    ASSERT_TRUE(policy::add_deny_host(p, "bad.test", flag("--deny-host")));
    p.network.hosts.push_back({"example.test", "127.0.0.1", at("n.toml", 5, 18, "network.hosts.example.test")});
    p.network.log = policy::Located<std::string>{"net.jsonl", flag("--net-log")};
    auto host = t.host();
    host.environ.push_back("HTTPS_PROXY=http://corp-proxy:8080");
    auto r = plan::build(p, {"/x"}, host);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->clone_flags & CLONE_NEWNET);
    EXPECT_EQ(r->proxy_port, 3128);
    for (const char* n : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
        EXPECT_EQ(env_of(*r, n), "http://127.0.0.1:3128") << n;
    EXPECT_EQ(env_of(*r, "ALL_PROXY"), "socks5h://127.0.0.1:3128");
    EXPECT_EQ(env_of(*r, "all_proxy"), "socks5h://127.0.0.1:3128");
    EXPECT_EQ(env_of(*r, "NO_PROXY"), "localhost,127.0.0.1,::1");
    EXPECT_EQ(env_of(*r, "no_proxy"), "localhost,127.0.0.1,::1");
    EXPECT_TRUE(std::is_sorted(r->env.begin(), r->env.end(), [](const std::string& a, const std::string& b) {
        return a.substr(0, a.find('=')) < b.substr(0, b.find('='));
    }));
    ASSERT_TRUE(r->net);
    ASSERT_EQ(r->net->rules.allow.size(), 1u);
    EXPECT_EQ(r->net->rules.allow[0].origin, "n.toml:3:10");
    ASSERT_EQ(r->net->rules.deny.size(), 1u);
    EXPECT_EQ(r->net->rules.deny[0].origin, "command line (--deny-host)");
    ASSERT_EQ(r->net->rules.pins.size(), 1u);
    EXPECT_EQ(r->net->log_path, t.proj() + "/net.jsonl");  // relative to the caller's cwd
    EXPECT_NE(plan::to_text(*r).find("allow      example.test:8080"), std::string::npos);
    EXPECT_NE(plan::to_json(*r).find("\"proxy\": \"127.0.0.1:3128\""), std::string::npos);
}

TEST(NetPlan, HostDropsTheNetworkNamespace) {
    PlanTree t;
    Policy p = t.defaults();
    ASSERT_TRUE(policy::set_net_mode(p, "host", flag("--net")));
    auto r = plan::build(p, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_FALSE(r->clone_flags & CLONE_NEWNET);
    EXPECT_TRUE(r->clone_flags & CLONE_NEWUSER);
    EXPECT_EQ(r->proxy_port, 0);
    bool noted = false;
    for (const auto& n : r->notes) noted = noted || n.find("shares the host's network") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(NetPlan, ProxyNeedsTheNetworkNamespace) {
    PlanTree t;
    Policy p = t.defaults();
    p.ns_net = policy::Located<bool>{false, at("p.toml", 7, 7, "namespaces.net")};
    ASSERT_TRUE(policy::add_allow_host(p, "a.test", flag("--allow-host")));
    auto r = plan::build(p, {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("p.toml:7:7"), std::string::npos) << r.error().message();
}

}  // namespace

namespace {

TEST(NetPolicy, RuleTablesWithMethodsAndPaths) {
    Policy p = parse_ok("[network]\nmode = \"proxy\"\nallow = [\"a.test\", { host = \"r.test\", methods = [\"GET\", "
                        "\"HEAD\"], paths = [\"/simple/**\"] }]\ndeny = [{ host = \"r.test\", paths = [\"/x\"] }]\n");
    ASSERT_EQ(p.network.allow.size(), 2u);
    EXPECT_EQ(p.network.allow[1].pattern, "r.test");
    EXPECT_EQ(p.network.allow[1].methods, (std::vector<std::string>{"GET", "HEAD"}));
    EXPECT_EQ(p.network.allow[1].paths, (std::vector<std::string>{"/simple/**"}));
    EXPECT_EQ(p.network.allow[1].origin.line, 3);
    ASSERT_EQ(p.network.deny.size(), 1u);
    EXPECT_EQ(p.network.deny[0].paths, (std::vector<std::string>{"/x"}));
    EXPECT_EQ(parse_err("[network]\nallow = [{ host = \"r.test\", methods = [\"get\"] }]\n").substr(0, 47),
              "t.toml:2:40: network.allow[0].methods[0]: 'get'");
    EXPECT_EQ(parse_err("[network]\nallow = [{ host = \"r.test\", paths = [\"x\"] }]\n"),
              "t.toml:2:38: network.allow[0].paths[0]: 'x': a path pattern starts with '/'");
    EXPECT_EQ(parse_err("[network]\nallow = [{ methods = [\"GET\"] }]\n"),
              "t.toml:2:10: network.allow[0]: expected a table with 'host' (and 'methods' or 'paths')");
    EXPECT_EQ(parse_err("[network]\nallow = [{ host = \"r.test\", method = [\"GET\"] }]\n"),
              "t.toml:2:29: network.allow[0].method: unknown key; did you mean 'methods'?");
    EXPECT_EQ(parse_err("[network]\nallow = [{ host = \"r.test\", methods = [] }]\n"),
              "t.toml:2:39: network.allow[0].methods: expected at least one entry (leave the key out for all)");
}

TEST(NetPlan, RestrictedRulesMountTheCaBundleAndPointClientsAtIt) {
    PlanTree t;
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_allow_host(p, "plain.test", flag("--allow-host")));
    auto plain = plan::build(p, {"/x"}, t.host());
    ASSERT_TRUE(plain) << plain.error().message();
    EXPECT_TRUE(plain->net->ca_bundle_inside.empty());  // nothing to intercept
    EXPECT_EQ(env_of(*plain, "SSL_CERT_FILE"), "(unset)");
    Policy q = parse_ok("extends = \"default\"\n[network]\nmode = \"proxy\"\nallow = [{ host = \"r.test\", methods = "
                        "[\"GET\"] }]\n");
    auto r = plan::build(q, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_TRUE(r->net);
    EXPECT_EQ(r->net->ca_bundle_inside, "/run/agentjail/ca-bundle.pem");
    EXPECT_NE(r->net->ca_bundle_host.find("/agentjail-ca-"), std::string::npos) << r->net->ca_bundle_host;
    for (const char* v : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "npm_config_cafile", "YARN_CAFILE", "YARN_HTTPS_CA_FILE_PATH", "BUN_CA_BUNDLE_PATH", "PIP_CERT", "CARGO_HTTP_CAINFO", "COMPOSER_CAFILE", "DENO_CERT", "AWS_CA_BUNDLE", "HEX_CACERTS_PATH", "NIX_SSL_CERT_FILE"})
        EXPECT_EQ(env_of(*r, v), "/run/agentjail/ca-bundle.pem") << v;
    bool mounted = false;
    for (const auto& m : r->mounts)
        mounted = mounted || (m.dst == "/run/agentjail/ca-bundle.pem" && m.src == r->net->ca_bundle_host &&
                              m.read_only && !m.is_dir);
    EXPECT_TRUE(mounted);
    EXPECT_EQ(r->net->rules.allow[0].methods, (std::vector<std::string>{"GET"}));
}

}  // namespace
