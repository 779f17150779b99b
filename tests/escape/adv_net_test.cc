// SPDX-License-Identifier: Apache-2.0
// Escape tests of advisory 4 of issue 26 (docs/advisories.md): host names that a
// parser, a rule and a resolver may read differently (sandbox-runtime's SOCKS5 NUL
// and CR/LF names; trailing dots, IDNA, IPv4-mapped and NAT64 forms, octal, hex and
// decimal IPv4) in CONNECT, SOCKS5 and the Host header are refused or normalised
// before the rules see them, and never reach a denied host or a resolver. A canary
// server on loopback stands for the denied host (zero connections); each test's
// control shows the same request reaches it when nothing refuses it.
#include "common.hpp"
#include "net_support.hpp"

#include <cstdio>
#include <string>
#include <vector>

using namespace ajesc;
using ajnet::NetPolicy;
using ajnet::TestServer;

namespace {

// req LABEL RAW: one raw HTTP request to the proxy, prints "R LABEL <status line>".
// s LABEL BYTES: one SOCKS5 greeting and request, prints "S LABEL <reply bytes in hex>".
const char* kClients =
    "req() { exec 3<>/dev/tcp/127.0.0.1/3128 || { echo \"R $1 no-proxy\"; return; }; "
    "printf \"$2\" >&3; l=$(timeout 5 head -n1 <&3 | tr -d '\\r'); exec 3<&-; "
    "echo \"R $1 ${l:-no-answer}\"; }; "
    "s() { exec 3<>/dev/tcp/127.0.0.1/3128 || { echo \"S $1 no-proxy\"; return; }; "
    "printf \"$2\" >&3; r=$(timeout 5 head -c 12 <&3 | od -An -tx1 | tr -d ' \\n'); exec 3<&-; "
    "echo \"S $1 ${r:-none}\"; }; ";

std::string port_bytes(int port) {
    return std::string(1, static_cast<char>(port >> 8)) + static_cast<char>(port & 0xff);
}

// A SOCKS5 greeting (no auth) and CONNECT by name (ATYP 3), as printf escapes.
std::string socks_name(const std::string& name, int port) {
    return hex_escaped(std::string("\x05\x01\x00\x05\x01\x00\x03", 7) +
                       static_cast<char>(name.size()) + name + port_bytes(port));
}

// The same by address: ATYP 1 (4 bytes) or 4 (16 bytes).
std::string socks_addr(const std::string& addr, int port) {
    const char atyp = addr.size() == 4 ? 1 : 4;
    return hex_escaped(std::string("\x05\x01\x00\x05\x01\x00", 6) + atyp + addr + port_bytes(port));
}

std::string v6(std::initializer_list<int> b) {
    std::string s;
    for (int x : b) s += static_cast<char>(x);
    return s;
}

std::string connect_req(const std::string& target) {
    return "CONNECT " + target + " HTTP/1.1\\r\\nHost: " + target + "\\r\\n\\r\\n";
}

std::string get_req(const std::string& url, const std::string& host) {
    return "GET " + url + " HTTP/1.1\\r\\nHost: " + host + "\\r\\nConnection: close\\r\\n\\r\\n";
}

std::string result_of(const std::string& out, const std::string& kind, const std::string& label) {
    for (const auto& l : ajtest::lines(out))
        if (l.rfind(kind + " " + label + " ", 0) == 0)
            return l.substr(kind.size() + label.size() + 2);
    return "<missing>";
}

bool http_ok(const std::string& status) { return status.rfind("HTTP/1.1 200", 0) == 0; }
// Greeting answered with "no auth", then CONNECT answered with success (REP 0).
bool socks_ok(const std::string& reply) { return reply.rfind("05000500", 0) == 0; }

struct Attack {
    std::string kind;  // "R" (raw HTTP) or "S" (SOCKS5)
    std::string label;
    std::string bytes;  // printf format
};

class AdvNet : public Escape {
protected:
    ajtest::TempDir scratch{"aj-adv-net"};
    std::string log_path() const { return scratch.path() + "/net.jsonl"; }

    ajtest::RunOutput bash(const std::string& script, const NetPolicy& p,
                           std::vector<std::string> flags = {}) {
        const std::string policy = scratch.write("net.toml", ajnet::toml(p));
        ::unlink(log_path().c_str());
        std::vector<std::string> args = cat(jail.base(), {"-p", policy, "--net-log", log_path()});
        args = cat(args, flags);
        args = cat(args, {"--", "/bin/bash", "-c", std::string(kClients) + script});
        ajtest::RunOptions o;
        o.timeout_ms = 60000;
        return jail.run(args, o);
    }

    // Runs every attack under p and expects each refused: no 200 (HTTP) or SOCKS
    // success, zero connections at the canary, and one log line each that is no
    // "allow" (so no name of them was handed to a resolver as an allowed one).
    void expect_refused(const std::vector<Attack>& attacks, const NetPolicy& p,
                        const TestServer& canary, std::vector<std::string> flags = {}) {
        std::string script;
        for (const auto& a : attacks)
            script += (a.kind == "R" ? "req '" : "s '") + a.label + "' '" + a.bytes + "'; ";
        auto r = bash(script, p, flags);
        ASSERT_EQ(r.status, 0) << describe(r);
        for (const auto& a : attacks) {
            std::string got = result_of(r.out, a.kind, a.label);
            EXPECT_NE(got, "<missing>") << a.label << "\n" << describe(r);
            EXPECT_FALSE(a.kind == "R" ? http_ok(got) : socks_ok(got))
                << a.label << " was let through: " << got;
        }
        EXPECT_EQ(canary.connections(), 0) << "the denied host was reached\n" << describe(r);
        auto log = ajnet::read_log(log_path());
        // A name that passed the rules and went to the resolver is logged "allow"
        // (with "cannot resolve" when nothing answered): none of these may be.
        for (const auto& e : log)
            EXPECT_NE(e.value("decision", ""), "allow") << "passed the rules: " << e.dump();
        EXPECT_EQ(log.size(), attacks.size()) << ajnet::dump(log);
    }

    // The control: under p, `script` (a curl or a raw request) reaches `server`.
    void expect_reached(const std::string& script, const NetPolicy& p, const TestServer& server,
                        const std::string& want, std::vector<std::string> flags = {}) {
        int before = server.connections();
        auto r = bash(script, p, flags);
        EXPECT_TRUE(ajtest::contains(r.out, want)) << "control: " << describe(r);
        EXPECT_GT(server.connections(), before) << "control: the server was not reached\n"
                                                << describe(r);
    }
};

// The open rules with one host denied, that host pinned to the canary: the deny
// rule is all that stands between the sandbox and it.
NetPolicy deny_one(const std::string& deny, const std::string& pinned) {
    NetPolicy p;
    p.allow = {"*:*"};
    p.deny = {deny};
    p.hosts = {{pinned, "127.0.0.1"}};
    return p;
}

// "denied.test.." is "denied.test." after the one trailing dot a name may carry: not
// the deny rule's name, yet the resolver's. Every spelling with an empty label is
// refused before the rules (and never resolved); case and one trailing dot are
// normalised, so they meet the rule.
TEST_F(AdvNet, ADV4_ExtraDotsCannotSkipADenyRule) {
    TestServer canary({"canary"});
    const std::string port = std::to_string(canary.port());
    std::vector<Attack> attacks;
    for (const std::string h : {"denied.test..", "denied.test...", ".denied.test", "denied..test",
                                "DENIED.TEST.", "Denied.Test"})
        attacks.push_back({"R", "connect " + h, connect_req(h + ":" + port)});
    attacks.push_back(
        {"R", "get", get_req("http://denied.test..:" + port + "/hello", "denied.test..:" + port)});
    attacks.push_back({"S", "socks", socks_name("denied.test..", canary.port())});
    expect_refused(attacks, deny_one("denied.test", "denied.test"), canary);
    // Control: without the deny rule the pinned name reaches the canary.
    NetPolicy open = deny_one("other.test", "denied.test");
    expect_reached("curl -sS --max-time 10 -p http://denied.test:" + port + "/hello", open, canary,
                   "hello from canary");
}

// The same against a subdomain rule (*.denied.test).
TEST_F(AdvNet, ADV4_ExtraDotsCannotSkipASubdomainDenyRule) {
    TestServer canary({"canary"});
    const std::string port = std::to_string(canary.port());
    std::vector<Attack> attacks;
    for (const std::string h :
         {"a.denied.test..", "a.denied.test.", "A.DENIED.TEST", "a..denied.test"})
        attacks.push_back({"R", "connect " + h, connect_req(h + ":" + port)});
    attacks.push_back({"S", "socks", socks_name("a.denied.test..", canary.port())});
    expect_refused(attacks, deny_one("*.denied.test", "a.denied.test"), canary);
    expect_reached("curl -sS --max-time 10 -p http://a.denied.test:" + port + "/hello",
                   deny_one("*.other.test", "a.denied.test"), canary, "hello from canary");
}

// An address denied by an exact rule (which an exact allow would otherwise reach):
// every other spelling of it is the same address once normalised, and denied.
TEST_F(AdvNet, ADV4_NumericSpellingsCannotSkipAnAddressDenyRule) {
    TestServer canary({"canary"});
    const int p = canary.port();
    const std::string port = std::to_string(p);
    NetPolicy pol;
    pol.allow = {"127.0.0.1:" + port};
    pol.deny = {"127.0.0.1:" + port};
    std::vector<Attack> attacks;
    for (const std::string h :
         {"127.0.0.1", "0x7f.1", "0x7f000001", "2130706433", "0177.0.0.1", "017700000001", "127.1",
          "127.0.1", "127.0.0.1.", "127.0.0.1..", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]",
          "[64:ff9b::7f00:1]", "[::127.0.0.1]"})
        attacks.push_back({"R", "connect " + h, connect_req(h + ":" + port)});
    attacks.push_back(
        {"R", "get hex", get_req("http://0x7f000001:" + port + "/hello", "0x7f000001:" + port)});
    attacks.push_back({"S", "socks v4", socks_addr(v6({127, 0, 0, 1}), p)});
    attacks.push_back(
        {"S", "socks mapped",
         socks_addr(v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}), p)});
    attacks.push_back(
        {"S", "socks nat64",
         socks_addr(v6({0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1}), p)});
    attacks.push_back({"S", "socks octal", socks_name("0177.0.0.1", p)});
    attacks.push_back({"S", "socks decimal", socks_name("2130706433", p)});
    expect_refused(attacks, pol, canary);
    // Control: without the deny rule a hex spelling is normalised to the allowed
    // address and reaches the canary (normalisation happens before matching).
    NetPolicy allow = pol;
    allow.deny.clear();
    expect_reached("req hex '" + connect_req("0x7f.0.0.1:" + port) + "'", allow, canary,
                   "R hex HTTP/1.1 200");
}

// SOCKS5 names are length-prefixed bytes: a NUL, CR/LF, a space or a slash inside
// one makes a name that a C-string, a header or a URL parser reads as another.
// Refused as no host name, whatever the allowlist (*.example.test) says.
TEST_F(AdvNet, ADV4_SocksNamesWithNulCrLfOrSpacesAreRefused) {
    TestServer canary({"canary"});
    TestServer control({"control"});
    NetPolicy p;
    p.allow = {"*.example.test:*"};
    p.hosts = {{"www.example.test", "127.0.0.1"}, {"evil.test", "127.0.0.1"}};
    std::vector<Attack> attacks;
    int i = 0;
    for (const std::string& n :
         {std::string("evil.test\0.example.test", 23), std::string("www.example.test\0", 17),
          std::string("evil.test\r\n.example.test"), std::string("www.example.test\r\nX: y"),
          std::string("www.example.test\n"), std::string(" www.example.test"),
          std::string("www.example.test "), std::string("evil.test/.example.test"),
          std::string("evil.test:80.example.test"), std::string("evil.test#.example.test")})
        attacks.push_back({"S", "n" + std::to_string(i++), socks_name(n, canary.port())});
    expect_refused(attacks, p, canary);
    expect_reached(
        "curl -sS --max-time 10 --socks5-hostname 127.0.0.1:3128 http://www.example.test:" +
            std::to_string(control.port()) + "/hello",
        p, control, "hello from control");
}

// The same bytes in CONNECT's authority and an absolute URL's host.
TEST_F(AdvNet, ADV4_HttpTargetsWithNulOrCrLfAreRefused) {
    TestServer canary({"canary"});
    TestServer control({"control"});
    NetPolicy p;
    p.allow = {"*.example.test:*"};
    p.hosts = {{"www.example.test", "127.0.0.1"}, {"evil.test", "127.0.0.1"}};
    const std::string port = std::to_string(canary.port());
    std::vector<Attack> attacks = {
        {"R", "nul", connect_req("evil.test\\x00.example.test:" + port)},
        {"R", "nul2", connect_req("www.example.test\\x00:" + port)},
        {"R", "cr", "CONNECT www.example.test\\r:" + port + " HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"},
        {"R", "space", connect_req("www.example.test%20:" + port)},
        {"R", "getnul",
         get_req("http://evil.test\\x00.example.test:" + port + "/", "www.example.test")},
        {"R", "getpct",
         get_req("http://evil.test%00.example.test:" + port + "/", "www.example.test")},
        {"R", "getat", get_req("http://www.example.test@evil.test:" + port + "/", "evil.test")},
        {"R", "getbs",
         get_req("http://evil.test\\\\.example.test:" + port + "/", "www.example.test")},
    };
    expect_refused(attacks, p, canary);
    expect_reached("curl -sS --max-time 10 -p http://www.example.test:" +
                       std::to_string(control.port()) + "/hello",
                   p, control, "hello from control");
}

// IDNA: the rules speak ASCII (a name in punycode); the Unicode spelling of a name
// is no host name to the proxy, its upper-case and dotted punycode spellings meet
// the rule, and a full-width dot (U+3002, which IDNA maps to '.') is refused.
TEST_F(AdvNet, ADV4_UnicodeAndPunycodeSpellingsCannotSkipADenyRule) {
    TestServer canary({"canary"});
    const int p = canary.port();
    const std::string port = std::to_string(p);
    const std::string puny = "xn--bcher-kva.test";  // bücher.test
    std::vector<Attack> attacks = {
        {"S", "unicode",
         socks_name("b\xc3\xbc"
                    "cher.test",
                    p)},
        {"S", "upper", socks_name("XN--BCHER-KVA.TEST.", p)},
        {"S", "dots", socks_name(puny + "..", p)},
        {"S", "fullwidth", socks_name("xn--bcher-kva\xe3\x80\x82test", p)},
        {"R", "connect upper", connect_req("XN--BCHER-KVA.TEST:" + port)},
        {"R", "connect unicode", connect_req("b\\xc3\\xbccher.test:" + port)},
    };
    expect_refused(attacks, deny_one(puny, puny), canary);
    expect_reached("curl -sS --max-time 10 --socks5-hostname 127.0.0.1:3128 http://" + puny + ":" +
                       port + "/hello",
                   deny_one("other.test", puny), canary, "hello from canary");
}

// With every name and port allowed (the open preset), only the address checks stand
// between the sandbox and the host's loopback: SOCKS5 by address (IPv4, IPv4-mapped,
// IPv4-compatible and NAT64 IPv6, ::1) and by every numeric spelling of a name.
TEST_F(AdvNet, ADV4_SocksSpellingsOfLoopbackAreRefused) {
    TestServer canary({"canary"});
    TestServer control({"control"});
    const int p = canary.port();
    NetPolicy pol;
    pol.mode = "";
    pol.hosts = {{"example.test", "127.0.0.1"}};
    std::vector<Attack> attacks = {
        {"S", "v4", socks_addr(v6({127, 0, 0, 1}), p)},
        {"S", "v4any", socks_addr(v6({0, 0, 0, 0}), p)},
        {"S", "mapped",
         socks_addr(v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1}), p)},
        {"S", "compat", socks_addr(v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1}), p)},
        {"S", "nat64",
         socks_addr(v6({0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1}), p)},
        {"S", "loop6", socks_addr(v6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}), p)},
    };
    for (const std::string n :
         {"0x7f000001", "017700000001", "2130706433", "127.1", "0x7f.1", "127.0.0.1.",
          "127.0.0.1..", "localhost", "LOCALHOST.", "::ffff:127.0.0.1", "0"})
        attacks.push_back({"S", "name " + n, socks_name(n, p)});
    expect_refused(attacks, pol, canary, {"--net-preset", "open"});
    expect_reached("curl -sS --max-time 10 --socks5-hostname 127.0.0.1:3128 http://example.test:" +
                       std::to_string(control.port()) + "/hello",
                   pol, control, "hello from control", {"--net-preset", "open"});
}

// A request that names its target only in the Host header (origin form, as to a
// server) names no target to a proxy: refused, whatever the header says.
TEST_F(AdvNet, ADV4_HostHeaderAloneNamesNoTarget) {
    TestServer canary({"canary"});
    TestServer control({"control"});
    NetPolicy p;
    p.allow = {"example.test:*"};
    p.hosts = {{"example.test", "127.0.0.1"}};
    const std::string port = std::to_string(canary.port());
    std::vector<Attack> attacks;
    for (const std::string& h :
         {"127.0.0.1:" + port, "0x7f.1:" + port, "example.test:" + port, "[::1]:" + port})
        attacks.push_back(
            {"R", "origin " + h, "GET /hello HTTP/1.1\\r\\nHost: " + h + "\\r\\n\\r\\n"});
    expect_refused(attacks, p, canary);
    expect_reached("curl -sS --max-time 10 -p http://example.test:" +
                       std::to_string(control.port()) + "/hello",
                   p, control, "hello from control");
}

}  // namespace
