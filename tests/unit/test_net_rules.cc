// SPDX-License-Identifier: Apache-2.0
// Unit tests of lib/net/rules: host pattern syntax and matching (exact, *.domain,
// *, ports), deny over allow, the default-deny message, and the address check.
#include "net/rules.hpp"

#include <gtest/gtest.h>

#include <string>

namespace agentjail::net {
namespace {

HostPattern pat(const std::string& s) {
    std::string why;
    auto p = parse_host_pattern(s, &why);
    EXPECT_TRUE(p) << s << ": " << why;
    return p ? *p : HostPattern{};
}

std::string pat_err(const std::string& s) {
    std::string why;
    auto p = parse_host_pattern(s, &why);
    return p ? "(ok)" : why;
}

Rule rule(const std::string& s, const std::string& origin = "t.toml:1:1") { return Rule{pat(s), s, origin}; }

TEST(NetRules, PatternSyntax) {
    EXPECT_EQ(pat("Example.COM").host, "example.com");
    EXPECT_EQ(pat("*.npmjs.org").kind, HostPattern::Kind::subdomains);
    EXPECT_EQ(pat("*.npmjs.org").host, "npmjs.org");
    EXPECT_EQ(pat("*").kind, HostPattern::Kind::any);
    EXPECT_EQ(*pat("github.com:22").port, 22);
    EXPECT_EQ(*pat("github.com:*").port, 0);
    EXPECT_FALSE(pat("github.com").port);
    EXPECT_TRUE(pat("10.0.0.5").numeric);
    EXPECT_EQ(pat("[::1]:443").host, "::1");
    EXPECT_EQ(pat("0x7f.1").host, "127.0.0.1");
}

TEST(NetRules, PatternErrors) {
    EXPECT_NE(pat_err(""), "(ok)");
    EXPECT_NE(pat_err("a*.example.com").find("'*' is allowed only"), std::string::npos);
    EXPECT_NE(pat_err("ex ample.com").find("not allowed in a host name"), std::string::npos);
    EXPECT_NE(pat_err("example.com:0").find("port"), std::string::npos);
    EXPECT_NE(pat_err("example.com:65536").find("port"), std::string::npos);
    EXPECT_NE(pat_err("example.com:http").find("port"), std::string::npos);
    EXPECT_NE(pat_err("::1").find("brackets"), std::string::npos);
    EXPECT_NE(pat_err("*.10.0.0.1").find("domain name"), std::string::npos);
    EXPECT_NE(pat_err("a..b").find("empty label"), std::string::npos);
    EXPECT_NE(pat_err(":443").find("no host"), std::string::npos);
}

TEST(NetRules, MatchingExactAndSubdomains) {
    auto exact = pat("example.com");
    EXPECT_TRUE(matches(exact, "example.com", 443, false));
    EXPECT_TRUE(matches(exact, "example.com", 80, false));
    EXPECT_FALSE(matches(exact, "example.com", 8080, false));  // default ports 80 and 443 only
    EXPECT_FALSE(matches(exact, "www.example.com", 443, false));
    auto sub = pat("*.example.com");
    EXPECT_TRUE(matches(sub, "a.example.com", 443, false));
    EXPECT_TRUE(matches(sub, "a.b.example.com", 443, false));
    EXPECT_FALSE(matches(sub, "example.com", 443, false));  // not the bare domain
    EXPECT_FALSE(matches(sub, "badexample.com", 443, false));
    EXPECT_FALSE(matches(sub, "example.com.evil.test", 443, false));
    auto any = pat("*");
    EXPECT_TRUE(matches(any, "whatever.test", 443, false));
    EXPECT_FALSE(matches(any, "whatever.test", 22, false));
    EXPECT_TRUE(matches(pat("*:*"), "whatever.test", 22, false));
    EXPECT_TRUE(matches(pat("github.com:22"), "github.com", 22, false));
    EXPECT_FALSE(matches(pat("github.com:22"), "github.com", 443, false));
    // A deny entry without a port covers every port.
    EXPECT_TRUE(matches(exact, "example.com", 8080, true));
}

TEST(NetRules, DenyWinsAndDefaultDenies) {
    Rules r;
    r.allow = {rule("*.example.com", "a.toml:3:5"), rule("ok.test")};
    r.deny = {rule("secret.example.com", "a.toml:4:5")};
    auto d = check_name(r, "api.example.com", 443);
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.rule, "a.toml:3:5");
    d = check_name(r, "secret.example.com", 443);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.rule, "a.toml:4:5");
    EXPECT_NE(d.reason.find("denied by the rule \"secret.example.com\""), std::string::npos) << d.reason;
    d = check_name(r, "other.test", 443);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.rule, "default");
    EXPECT_EQ(d.reason,
              "other.test is not in the allowlist (default: nothing is allowed; add --allow-host other.test or "
              "[network] allow)");
    d = check_name(r, "ok.test", 22);
    EXPECT_FALSE(d.allowed);
    EXPECT_NE(d.reason.find("allows other ports only"), std::string::npos) << d.reason;
    EXPECT_FALSE(check_name(Rules{}, "example.com", 443).allowed);
}

TEST(NetRules, PinsAndExactAddressesAreNamed) {
    Rules r;
    r.allow = {rule("example.test:8080"), rule("10.1.2.3:443"), rule("*")};
    r.pins = {{"example.test", *parse_numeric_host("127.0.0.1"), "t.toml:9:1"}};
    auto d = check_name(r, "example.test", 8080);
    ASSERT_TRUE(d.allowed);
    ASSERT_TRUE(d.named_address);
    EXPECT_EQ(d.named_address->to_string(), "127.0.0.1");
    d = check_name(r, "10.1.2.3", 443);
    ASSERT_TRUE(d.allowed);
    ASSERT_TRUE(d.named_address);
    // An exact address entry after a broader one still names the address.
    Rules wide;
    wide.allow = {rule("*:*", "a:1:1"), rule("127.0.0.1:8080", "a:2:1")};
    d = check_name(wide, "127.0.0.1", 8080);
    ASSERT_TRUE(d.allowed);
    EXPECT_EQ(d.rule, "a:2:1");
    EXPECT_TRUE(d.named_address);
    d = check_name(wide, "127.0.0.1", 8081);
    EXPECT_EQ(d.rule, "a:1:1");
    EXPECT_FALSE(d.named_address);
    // "*" allows the name 127.0.0.1 but names no address: the address check refuses it.
    d = check_name(r, "127.0.0.1", 443);
    EXPECT_TRUE(d.allowed);
    EXPECT_FALSE(d.named_address);
}

TEST(NetRules, AddressCheck) {
    EXPECT_EQ(check_address("api.test", *parse_numeric_host("127.0.0.1")),
              "api.test resolved to 127.0.0.1, a loopback address (DNS rebinding?)");
    EXPECT_NE(check_address("169.254.169.254", *parse_numeric_host("169.254.169.254")).find("metadata"),
              std::string::npos);
    EXPECT_EQ(check_address("one.test", *parse_numeric_host("1.1.1.1")), "");
}

}  // namespace
}  // namespace agentjail::net
