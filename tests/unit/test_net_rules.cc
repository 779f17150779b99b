// SPDX-License-Identifier: Apache-2.0
// Unit tests of lib/netrules/rules: host pattern syntax and matching (exact, *.domain,
// *, ports), deny over allow, the default-deny message, and the address check.
#include "netrules/rules.hpp"

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

Rule rule(const std::string& s, const std::string& origin = "t.toml:1:1") {
    Rule r;
    r.pattern = pat(s);
    r.text = s;
    r.origin = origin;
    return r;
}

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

// What the proxy asks of every name before the rules see it (issue 26, advisory 4):
// one trailing dot and case are normalize_host()'s; any empty label left ("a.." is
// "a." then, which a resolver reads as "a") and bytes no DNS name has are refused.
TEST(NetRules, RequestNamesWithEmptyLabelsOrStrayBytesAreNoNames) {
    EXPECT_EQ(check_name_syntax(normalize_host("Denied.Test.")), "");
    EXPECT_EQ(check_name_syntax("xn--bcher-kva.test"), "");
    EXPECT_EQ(check_name_syntax("_srv.example.test"), "");
    for (const std::string bad :
         {"denied.test..", "denied.test...", ".denied.test", "denied..test", "."})
        EXPECT_NE(check_name_syntax(normalize_host(bad)), "") << bad;
    for (const std::string& bad :
         {std::string("a\0b.test", 8), std::string("a.test\r\n"), std::string("a b.test"),
          std::string("a/b.test"), std::string("b\xc3\xbc" "cher.test"),
          std::string("a\xe3\x80\x82test"), std::string(64, 'a') + ".test"})
        EXPECT_NE(check_name_syntax(normalize_host(bad)), "") << bad;
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

// The host's own addresses are refused whatever their range: a public address of
// the host's interface reaches its services as 127.0.0.1 does.
TEST(NetRules, TheHostsOwnAddressesAreRefusedLikeLoopback) {
    std::vector<Address> own = {*parse_numeric_host("203.0.113.7"),
                                *parse_numeric_host("2001:db8::7")};
    std::string why = check_address("203.0.113.7", own[0], own);
    EXPECT_NE(why.find("an address of this host"), std::string::npos) << why;
    EXPECT_NE(check_address("api.test", own[1], own).find("an address of this host"),
              std::string::npos);
    // The same address spelt as IPv4-mapped IPv6.
    EXPECT_NE(check_address("x", *parse_numeric_host("::ffff:203.0.113.7"), own), "");
    // Control: the same public address is fine when it is not the host's.
    EXPECT_EQ(check_address("203.0.113.7", own[0], {}), "");
    EXPECT_EQ(check_address("203.0.113.8", *parse_numeric_host("203.0.113.8"), own), "");
    // An allow entry naming the address exactly still decides (named_address skips the check).
    Rules r;
    r.allow.push_back(rule("203.0.113.7:8080", "t.toml:1:1"));
    auto d = check_name(r, "203.0.113.7", 8080);
    ASSERT_TRUE(d.allowed);
    ASSERT_TRUE(d.named_address.has_value());
}

// No refusal suggests a range, a wildcard, or loopback/private wholesale: the hint
// names the one destination asked for, and for internal ones says what it opens.
TEST(NetRules, HintsNeverOpenARangeOrLoopback) {
    Rules r;
    r.allow.push_back(rule("*.example.com", "t.toml:1:1"));
    for (const char* host : {"127.0.0.1", "10.1.2.3", "192.168.1.1", "169.254.169.254", "::1",
                             "fd00::1", "localhost", "db.localhost", "0.0.0.0", "public.test"}) {
        for (std::uint16_t port : {80, 5432}) {
            auto d = check_name(r, normalize_host(host), port);
            ASSERT_FALSE(d.allowed) << host;
            for (const char* bad :
                 {"/8", "/16", "/12", "*", "allow loopback", "allow_private", "0.0.0.0/0"})
                EXPECT_EQ(d.reason.find(bad), std::string::npos) << host << ": " << d.reason;
        }
    }
    std::string h = allow_hint("127.0.0.1", 5432);
    EXPECT_NE(h.find("only an allow entry naming exactly \"127.0.0.1:5432\""), std::string::npos)
        << h;
    EXPECT_EQ(h.find("add --allow-host"), std::string::npos) << h;
    h = allow_hint("localhost", 80);
    EXPECT_NE(h.find("a name of this host"), std::string::npos) << h;
    h = allow_hint("::1", 631);
    EXPECT_NE(h.find("\"[::1]:631\""), std::string::npos) << h;
    // Public names get the plain hint, with the port when it is not 80/443.
    EXPECT_EQ(allow_hint("public.test", 443), "add --allow-host public.test or [network] allow");
    EXPECT_EQ(allow_hint("public.test", 8443),
              "add --allow-host public.test:8443 or [network] allow");
    // Refusals by address never invite either.
    for (const char* a : {"127.0.0.1", "10.0.0.1", "169.254.169.254"}) {
        std::string why = check_address(a, *parse_numeric_host(a));
        EXPECT_NE(why.find("refused unless an allow entry names exactly this address"),
                  std::string::npos)
            << why;
    }
}

}  // namespace
}  // namespace agentjail::net

// ---- method and path rules -------------------------------------------------------

namespace agentjail::net {
namespace {

Rule restricted(const std::string& s, std::vector<std::string> methods, std::vector<std::string> paths,
                const std::string& origin) {
    Rule r = rule(s, origin);
    r.methods = std::move(methods);
    r.paths = std::move(paths);
    return r;
}

TEST(NetRequestRules, PathGlobs) {
    EXPECT_TRUE(path_matches("/simple/**", "/simple/pkg/"));
    EXPECT_TRUE(path_matches("/simple/**", "/simple"));  // the bare prefix
    EXPECT_FALSE(path_matches("/simple/**", "/simplex"));
    EXPECT_TRUE(path_matches("/*/*/git-upload-pack", "/o/r.git/git-upload-pack"));
    EXPECT_FALSE(path_matches("/*/git-upload-pack", "/o/r.git/git-upload-pack"));  // * stays in a segment
    EXPECT_TRUE(path_matches("/**/git-upload-pack", "/g/sub/r.git/git-upload-pack"));
    EXPECT_FALSE(path_matches("/**/git-upload-pack", "/g/r.git/git-receive-pack"));
    EXPECT_FALSE(path_matches("/Api", "/api"));
    EXPECT_TRUE(path_matches("/Api", "/api", true));
    EXPECT_EQ(check_path_pattern("api/**"), "'api/**': a path pattern starts with '/'");
    EXPECT_NE(check_path_pattern("/a?b"), "");
    EXPECT_EQ(check_path_pattern("/a/**"), "");
    EXPECT_EQ(check_method_name("GET"), "");
    EXPECT_NE(check_method_name("get"), "");
    EXPECT_NE(check_method_name("CONNECT"), "");
    // Many wildcards against a long path: linear per token, so no blow-up.
    EXPECT_FALSE(path_matches("/**a**a**a**a**a**a**a**b", "/" + std::string(10000, 'a')));
}

TEST(NetRequestRules, DenyWinsAndAnyAllowEntryAdmits) {
    Rules rs;
    rs.allow = {restricted("reg.test", {"GET", "HEAD"}, {}, "p.toml:3:5"),
                restricted("reg.test", {"POST"}, {"/-/npm/v1/security/**"}, "p.toml:4:5")};
    rs.deny = {restricted("reg.test", {}, {"/**/secret"}, "p.toml:6:5")};
    EXPECT_TRUE(check_name(rs, "reg.test", 443).allowed);  // a restricted deny refuses no name
    EXPECT_TRUE(needs_requests(rs, "reg.test", 443));
    auto d = check_request(rs, "reg.test", 443, "GET", "/pkg");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.rule, "p.toml:3:5");
    d = check_request(rs, "reg.test", 443, "POST", "/-/npm/v1/security/audits");
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.rule, "p.toml:4:5");
    d = check_request(rs, "reg.test", 443, "PUT", "/pkg");
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.rule, "p.toml:3:5");
    EXPECT_EQ(d.reason, "PUT reg.test:443/pkg is refused: the rule \"reg.test\" (p.toml:3:5) allows only methods GET, "
                        "HEAD");
    // Deny entries match generously: case and an encoded slash do not get around them.
    for (const char* p : {"/a/secret", "/a/SECRET", "/a%2Fsecret", "/a/secret;x", "/a;b/secret;jsessionid=1"}) {
        d = check_request(rs, "reg.test", 443, "GET", p);
        EXPECT_FALSE(d.allowed) << p;
        EXPECT_EQ(d.rule, "p.toml:6:5") << p;
    }
    // An unrestricted entry for the host admits every request: nothing to intercept.
    rs.allow.push_back(rule("reg.test", "p.toml:9:5"));
    rs.deny.clear();
    EXPECT_FALSE(needs_requests(rs, "reg.test", 443));
    EXPECT_TRUE(check_request(rs, "reg.test", 443, "PUT", "/pkg").allowed);
}

TEST(NetRequestRules, ASecretsImpliedEntryDoesNotWiden) {
    Rules rs;
    rs.allow = {restricted("api.test", {"GET"}, {}, "p.toml:3:5")};
    Rule implied = rule("api.test", "p.toml:8:1 (secrets.KEY)");
    implied.implied = true;
    rs.allow.push_back(implied);
    EXPECT_TRUE(needs_requests(rs, "api.test", 443));
    EXPECT_FALSE(check_request(rs, "api.test", 443, "POST", "/v1").allowed);
    // Alone, it allows its host.
    Rules only;
    only.allow = {implied};
    EXPECT_TRUE(check_request(only, "api.test", 443, "POST", "/v1").allowed);
}

}  // namespace
}  // namespace agentjail::net
