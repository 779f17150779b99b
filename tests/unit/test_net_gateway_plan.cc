// SPDX-License-Identifier: Apache-2.0
// Unit tests of the plan's model gateways ([network] gateways, a secret's base_url)
// and published ports ([network] publish, --publish): parsing, the allow entries and
// listeners a gateway variable opens, where its secret may go, and the refusals.
#include "test_plan_fixture.hpp"

#include "policy/policy.hpp"

#include <string>

using namespace ajplantest;
namespace plan = agentjail::plan;
namespace policy = agentjail::policy;
using agentjail::policy::NetMode;

namespace {

std::string parse_err(const std::string& text) {
    auto r = policy::load_text(text, "t.toml");
    return r ? "(no error)" : r.error().message();
}

std::string env_of(const Plan& p, const std::string& name) {
    for (const auto& kv : p.env)
        if (kv.compare(0, name.size() + 1, name + "=") == 0) return kv.substr(name.size() + 1);
    return "(unset)";
}

// The defaults plus a [network] layer and a secret bound to the gateway variable.
Policy gateway_policy(PlanTree& t, const std::string& extra = "") {
    Policy p = t.defaults();
    auto layer = policy::load_text(
        "[network]\nmode = \"proxy\"\ngateways = [\"ANTHROPIC_BASE_URL\"]\n" + extra +
            "\n[secrets]\nKEY = { source = \"env:REAL\", base_url = \"OPENAI_BASE_URL\" }\n",
        "g.toml");
    EXPECT_TRUE(layer) << (layer ? "" : layer.error().message());
    if (!layer) return p;
    p.network.mode = layer->network.mode;
    p.network.gateways = layer->network.gateways;
    p.network.secrets = layer->network.secrets;
    p.network.publish = layer->network.publish;
    return p;
}

TEST(NetGateway, PolicyKeysParseAndBadOnesNameTheirPlace) {
    EXPECT_EQ(parse_err("[network]\ngateways = [\"9X\"]\n").substr(0, 10), "t.toml:2:1");
    EXPECT_NE(parse_err("[network]\npublish = [\"0\"]\n").find("expected PORT or PORT:HOSTPORT"),
              std::string::npos);
    EXPECT_NE(parse_err("[network]\npublish = [\"a:b\"]\n").find("network.publish[0]"),
              std::string::npos);
    EXPECT_NE(parse_err("[secrets]\nK = { source = \"env:X\", base_url = \"not a var\" }\n")
                  .find("secrets.K.base_url"),
              std::string::npos);
    auto ok = policy::load_text(
        "[network]\ngateways = [\"A_URL\"]\npublish = [\"3000\", \"8080:18080\"]\n", "t.toml");
    ASSERT_TRUE(ok) << ok.error().message();
    ASSERT_EQ(ok->network.publish.size(), 2u);
    EXPECT_EQ(ok->network.publish[0].host_port, 3000);
    EXPECT_EQ(ok->network.publish[1].port, 8080);
    EXPECT_EQ(ok->network.publish[1].host_port, 18080);
}

TEST(NetGateway, ALoopbackGatewayOpensItsOriginAndAListenerOnly) {
    PlanTree t;
    auto host = t.host();
    host.environ.push_back("ANTHROPIC_BASE_URL=http://127.0.0.1:4000/v1");
    host.environ.push_back("OPENAI_BASE_URL=http://localhost:4001");
    host.environ.push_back("REAL=sk-real");
    Policy p = gateway_policy(t);
    // Not a secret: it passes even past a deny pattern that would catch it.
    p.env_deny.push_back({"*_BASE_URL", flag("--env-deny")});
    auto r = plan::build(p, {"/x"}, host);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(env_of(*r, "ANTHROPIC_BASE_URL"), "http://127.0.0.1:4000/v1");
    EXPECT_EQ(env_of(*r, "OPENAI_BASE_URL"), "http://localhost:4001");
    // Control: the same deny pattern holds the variable back when it is no gateway.
    Policy plain = t.defaults();
    plain.env_deny.push_back({"*_BASE_URL", flag("--env-deny")});
    auto c = plan::build(plain, {"/x"}, host);
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_EQ(env_of(*c, "ANTHROPIC_BASE_URL"), "(unset)");
    ASSERT_TRUE(r->net);
    ASSERT_EQ(r->net->gateways.size(), 2u);
    const auto& a = r->net->gateways[0];
    EXPECT_TRUE(a.loopback && a.listener && !a.https);
    EXPECT_EQ(a.host, "127.0.0.1");
    EXPECT_EQ(a.port, 4000);
    const auto& o = r->net->gateways[1];
    EXPECT_EQ(o.host, "localhost");
    EXPECT_EQ(o.address.to_string(), "127.0.0.1");
    // Exactly the two origins are allowed, and the secret is bound to its base URL's.
    ASSERT_EQ(r->net->rules.allow.size(), 2u);
    EXPECT_EQ(r->net->rules.allow[0].text, "127.0.0.1:4000");
    EXPECT_TRUE(r->net->rules.allow[0].gateway);
    ASSERT_EQ(r->net->secrets.size(), 1u);
    ASSERT_EQ(r->net->secrets[0].hosts.size(), 1u);
    EXPECT_EQ(r->net->secrets[0].hosts[0].text, "localhost:4001");
    EXPECT_NE(plan::to_text(*r).find("gateway    $ANTHROPIC_BASE_URL"), std::string::npos);
    EXPECT_NE(plan::to_json(*r).find("\"gateways\""), std::string::npos);
}

// A gateway's entry never widens the method rules written for its origin.
TEST(NetGateway, TheGatewaysEntryKeepsTheRulesForItsOrigin) {
    PlanTree t;
    Policy p = gateway_policy(t);
    p.network.allow.push_back({"127.0.0.1:4000", flag("--allow-host"), {"GET"}, {}});
    auto host = t.host();
    host.environ.push_back("ANTHROPIC_BASE_URL=http://127.0.0.1:4000");
    host.environ.push_back("REAL=x");
    auto r = plan::build(p, {"/x"}, host);
    ASSERT_TRUE(r) << r.error().message();
    namespace net = agentjail::net;
    EXPECT_TRUE(net::check_name(r->net->rules, "127.0.0.1", 4000).allowed);
    EXPECT_TRUE(net::check_request(r->net->rules, "127.0.0.1", 4000, "GET", "/v1").allowed);
    EXPECT_FALSE(net::check_request(r->net->rules, "127.0.0.1", 4000, "POST", "/v1").allowed);
    EXPECT_FALSE(net::check_name(r->net->rules, "127.0.0.1", 4001).allowed);
}

TEST(NetGateway, UnsetVariableOpensNothingAndPlainHttpElsewhereGetsNoSecret) {
    PlanTree t;
    auto host = t.host();
    host.environ.push_back("REAL=sk-real");
    auto r = plan::build(gateway_policy(t), {"/x"}, host);
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_TRUE(r->net);
    EXPECT_TRUE(r->net->gateways.empty());
    EXPECT_TRUE(r->net->rules.allow.empty());
    EXPECT_EQ(env_of(*r, "ANTHROPIC_BASE_URL"), "(unset)");
    host.environ.push_back("OPENAI_BASE_URL=http://gw.example.com:8000");
    auto plain = plan::build(gateway_policy(t), {"/x"}, host);
    ASSERT_TRUE(plain) << plain.error().message();
    EXPECT_FALSE(plain->net->gateways[0].loopback);
    EXPECT_TRUE(plain->net->secrets[0].hosts.empty());  // never in clear off the machine
    host.environ.back() = "OPENAI_BASE_URL=https://gw.example.com";
    auto tls = plan::build(gateway_policy(t), {"/x"}, host);
    ASSERT_TRUE(tls) << tls.error().message();
    ASSERT_EQ(tls->net->secrets[0].hosts.size(), 1u);
    EXPECT_EQ(tls->net->secrets[0].hosts[0].text, "gw.example.com:443");
}

TEST(NetGateway, MalformedUrlsAndTheProxysOwnPortAreRefused) {
    PlanTree t;
    for (const std::string bad :
         {"ftp://x", "http://", "http://a:b@127.0.0.1", "http://127.0.0.1:0", "http://[::1",
          "http://exa mple", "http://127.0.0.1:3128"}) {
        auto host = t.host();
        host.environ.push_back("ANTHROPIC_BASE_URL=" + bad);
        host.environ.push_back("REAL=x");
        auto r = plan::build(gateway_policy(t), {"/x"}, host);
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message().find("gateway $ANTHROPIC_BASE_URL"), std::string::npos)
            << r.error().message();
    }
}

TEST(NetGateway, PublishIsPlannedExceptInHostModeOrTwiceOnOnePort) {
    PlanTree t;
    Policy p = t.defaults();
    ASSERT_TRUE(policy::add_publish(p, "3000", flag("--publish")));
    ASSERT_TRUE(policy::add_publish(p, "8080:18080", flag("--publish")));
    auto r = plan::build(p, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    ASSERT_EQ(r->publish.size(), 2u);
    EXPECT_EQ(r->publish[1].port, 8080);
    EXPECT_EQ(r->publish[1].host_port, 18080);
    EXPECT_NE(plan::to_text(*r).find("127.0.0.1:18080 on the host -> 127.0.0.1:8080 inside"),
              std::string::npos);
    Policy twice = p;
    ASSERT_TRUE(policy::add_publish(twice, "9000:3000", flag("--publish")));
    auto dup = plan::build(twice, {"/x"}, t.host());
    ASSERT_FALSE(dup);
    EXPECT_NE(dup.error().message().find("already published"), std::string::npos);
    ASSERT_TRUE(policy::set_net_mode(p, "host", flag("--net")));
    auto h = plan::build(p, {"/x"}, t.host());
    ASSERT_FALSE(h);
    EXPECT_NE(h.error().message().find("publish needs a network namespace"), std::string::npos);
    EXPECT_FALSE(policy::add_publish(p, "70000", flag("--publish")));
}

}  // namespace
