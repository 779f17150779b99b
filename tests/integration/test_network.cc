// SPDX-License-Identifier: Apache-2.0
// Integration tests of the network boundary: the modes (none, proxy, host), the
// allowlist proxy reached by real clients (curl, Python, Node, git) against loopback
// HTTP/HTTPS servers pinned with [network.hosts], refusals (403 naming the rule, a log
// line, the result record's counts) and the presets.
#include "common.hpp"
#include "net_support.hpp"
#include "record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

using ajit::describe;
using ajit::field;
using ajit::helper;
using ajnet::NetPolicy;
using ajnet::TestServer;

namespace {

bool have(const std::string& path) { return ajtest::exists(path); }

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

class Network : public ajit::Sandbox {
protected:
    // Logs, keys and policy files: outside the workspace, so the sandbox never sees them.
    ajtest::TempDir scratch{"aj-net"};

    std::string log_path() const { return scratch.path() + "/net.jsonl"; }

    std::string policy(const NetPolicy& p, const std::string& name = "net.toml") {
        return scratch.write(name, ajnet::toml(p));
    }

    // A policy that allows example.test on the server's port and pins it to the
    // server's loopback address: the "allowed host on the internet" of these tests.
    std::string pinned(const TestServer& s, std::vector<std::string> more_allow = {}) {
        NetPolicy p;
        p.allow = {"example.test:" + std::to_string(s.port())};
        p.allow.insert(p.allow.end(), more_allow.begin(), more_allow.end());
        p.hosts = {{"example.test", "127.0.0.1"}};
        return policy(p);
    }

    // agentjail <base> <flags> -- /bin/bash -c script, 60 s at most.
    ajtest::RunOutput bash(const std::string& script, const std::vector<std::string>& flags) {
        std::vector<std::string> args = jail.base();
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), {"--", "/bin/bash", "-c", script});
        ajtest::RunOptions o;
        o.timeout_ms = 60000;
        return jail.run(args, o);
    }

    // A self-signed certificate for the test names; the CA file in the workspace (the
    // clients inside read it), the key in scratch.
    ajnet::Cert cert() {
        std::string ca = jail.ws() + "/test-ca.crt";
        return ajnet::make_cert(ca, scratch.path() + "/test-key.pem",
                                {"example.test", "other.test"});
    }

    std::vector<nlohmann::json> log() const { return ajnet::read_log(log_path()); }
};

// curl: body and the status line's code, on separate lines of stdout.
std::string curl(const std::string& url, const std::string& extra = "") {
    return "curl -sS --max-time 15 " + extra +
           " -o body.out -w 'code=%{http_code}\\nconnect=%{http_connect}\\n' '" + url +
           "'; echo curl_exit=$?; echo body=$(cat body.out 2>/dev/null | head -c 300 | tr '\\n' ' "
           "'); rm -f body.out";
}

// ---- modes -------------------------------------------------------------------

// The default: a network namespace with only loopback, up, and no proxy variables
// (nothing listens on the proxy's port either).
TEST_F(Network, DefaultModeHasOnlyLoopbackAndNoProxy) {
    auto p = bash(helper("netprobe") +
                      " ifaces tcp 127.0.0.1 3128; env | grep -i '_proxy=' || echo no_proxy_vars",
                  {});
    ASSERT_EQ(p.status, 0) << describe(p);
    EXPECT_EQ(field(p.out, "ifaces"), "lo") << describe(p);
    EXPECT_EQ(field(p.out, "lo"), "UP") << describe(p);
    EXPECT_EQ(field(p.out, "tcp:127.0.0.1:3128"), "ECONNREFUSED") << describe(p);
    EXPECT_TRUE(ajtest::contains(p.out, "no_proxy_vars")) << describe(p);
}

// --net proxy: the same namespace plus the proxy on 127.0.0.1:3128 and the proxy
// variables (both cases) set for the command.
TEST_F(Network, ProxyModeSetsProxyVariables) {
    auto p =
        bash(helper("netprobe") + " ifaces tcp 127.0.0.1 3128; env | sort", {"--net", "proxy"});
    ASSERT_EQ(p.status, 0) << describe(p);
    EXPECT_EQ(field(p.out, "ifaces"), "lo") << describe(p);
    EXPECT_EQ(field(p.out, "tcp:127.0.0.1:3128"), "OK") << describe(p);
    for (const char* v : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
        EXPECT_EQ(field(p.out, v), ajnet::kProxy) << v << "\n" << describe(p);
    for (const char* v : {"ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"})
        EXPECT_NE(field(p.out, v), "<missing>") << v << "\n" << describe(p);
    EXPECT_TRUE(ajtest::contains(field(p.out, "NO_PROXY"), "localhost")) << describe(p);
}

// --net host: no network namespace; the host's interfaces are there and the CLI
// warns that isolation is degraded.
TEST_F(Network, HostModeSeesHostInterfacesAndWarns) {
    std::string host_dev = ajtest::read_file("/proc/net/dev");
    std::string other;
    for (const auto& l : ajtest::lines(host_dev)) {
        auto colon = l.find(':');
        if (colon == std::string::npos) continue;
        std::string name = ajtest::trim(l.substr(0, colon));
        if (name != "lo") other = name;
    }
    if (other.empty())
        GTEST_SKIP() << "the host has no interface but lo: nothing to tell the modes apart";
    auto h = jail.run(with(jail.base(), {"--net", "host", "--", "cat", "/proc/net/dev"}));
    ASSERT_EQ(h.status, 0) << describe(h);
    EXPECT_TRUE(ajtest::contains(h.out, other + ":")) << "host interface " << other << " missing\n"
                                                      << describe(h);
    EXPECT_TRUE(ajtest::contains(h.err, "warning")) << describe(h);
    EXPECT_TRUE(ajtest::contains(h.err, "network")) << describe(h);
    // Control: the default mode does not show it.
    auto n = jail.run(with(jail.base(), {"--", "cat", "/proc/net/dev"}));
    ASSERT_EQ(n.status, 0) << describe(n);
    EXPECT_FALSE(ajtest::contains(n.out, other + ":")) << describe(n);
    EXPECT_FALSE(ajtest::contains(n.err, "warning")) << describe(n);
}

// ---- allowed hosts through the proxy ---------------------------------------------

// Plain HTTP: curl sends the absolute-form request to the proxy, which forwards it
// to the pinned address; the log records the request.
TEST_F(Network, CurlHttpReachesAnAllowedHost) {
    TestServer s({"allowed"});
    std::string pol = pinned(s);
    std::string url = "http://example.test:" + std::to_string(s.port()) + "/hello";
    auto r = bash(curl(url), {"-p", pol, "--net-log", log_path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "code"), "200") << describe(r);
    EXPECT_EQ(field(r.out, "body"), "hello from allowed") << describe(r);
    auto reqs = s.requests();
    ASSERT_EQ(reqs.size(), 1u) << describe(r);
    EXPECT_EQ(reqs[0].method, "GET");
    EXPECT_EQ(reqs[0].host, "example.test:" + std::to_string(s.port()));

    auto entries = ajnet::log_entries(log(), "example.test", "allow");
    ASSERT_EQ(entries.size(), 1u) << ajnet::dump(log());
    auto& e = entries[0];
    EXPECT_EQ(e.value("method", ""), "GET") << e.dump();
    EXPECT_EQ(e.value("port", 0), s.port()) << e.dump();
    EXPECT_GT(e.value("bytes_down", 0), 18) << e.dump();  // at least the body
    EXPECT_GT(e.value("bytes_up", 0), 0) << e.dump();
    for (const char* k : {"time", "reason", "rule"})
        EXPECT_TRUE(e.contains(k)) << k << " missing: " << e.dump();
}

// HTTPS: curl opens a CONNECT tunnel and does TLS end to end with the server (the
// proxy sees only the tunnel); the certificate is checked against the test CA.
TEST_F(Network, CurlHttpsThroughConnectReachesAnAllowedHost) {
    auto c = cert();
    TestServer s({"tls", &c});
    std::string pol = pinned(s);
    std::string url = "https://example.test:" + std::to_string(s.port()) + "/hello";
    auto r = bash(curl(url, "--cacert " + c.cert_path), {"-p", pol, "--net-log", log_path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "code"), "200") << describe(r);
    EXPECT_EQ(field(r.out, "connect"), "200") << describe(r);
    EXPECT_EQ(field(r.out, "body"), "hello from tls") << describe(r);
    EXPECT_EQ(s.requests().size(), 1u);
    auto entries = ajnet::log_entries(log(), "example.test", "allow");
    ASSERT_EQ(entries.size(), 1u) << ajnet::dump(log());
    EXPECT_EQ(entries[0].value("method", ""), "CONNECT") << entries[0].dump();
    EXPECT_EQ(entries[0].value("port", 0), s.port()) << entries[0].dump();
    EXPECT_GT(entries[0].value("bytes_down", 0), 100)
        << entries[0].dump();  // the TLS handshake at least
}

// Python's urllib takes the proxy from the environment, for http and https.
TEST_F(Network, PythonUrllibReachesAnAllowedHost) {
    if (!have("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 on this host";
    auto c = cert();
    TestServer plain({"py-http"});
    TestServer tls({"py-https", &c});
    NetPolicy p;
    p.allow = {"example.test:" + std::to_string(plain.port()),
               "example.test:" + std::to_string(tls.port())};
    p.hosts = {{"example.test", "127.0.0.1"}};
    std::string script =
        "import ssl, urllib.request\n"
        "ctx = ssl.create_default_context(cafile='" +
        c.cert_path +
        "')\n"
        "for url in ['http://example.test:" +
        std::to_string(plain.port()) +
        "/hello',\n"
        "            'https://example.test:" +
        std::to_string(tls.port()) +
        "/hello']:\n"
        "    with urllib.request.urlopen(url, timeout=15, context=ctx if url.startswith('https') "
        "else None) as r:\n"
        "        print(url.split(':')[0] + '=' + r.read().decode().strip())\n";
    jail.ws_dir().write("fetch.py", script);
    auto r = bash("/usr/bin/python3 fetch.py", {"-p", policy(p)});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "http"), "hello from py-http") << describe(r);
    EXPECT_EQ(field(r.out, "https"), "hello from py-https") << describe(r);
}

// Node's fetch ignores proxy variables, so the script speaks to the proxy itself:
// an absolute-form GET for http, and CONNECT then TLS over the tunnel for https.
TEST_F(Network, NodeReachesAnAllowedHostThroughTheProxy) {
    if (!have("/usr/bin/node")) GTEST_SKIP() << "no /usr/bin/node on this host";
    auto c = cert();
    TestServer plain({"node-http"});
    TestServer tls({"node-https", &c});
    NetPolicy p;
    p.allow = {"example.test:" + std::to_string(plain.port()),
               "example.test:" + std::to_string(tls.port())};
    p.hosts = {{"example.test", "127.0.0.1"}};
    std::string hp = std::to_string(plain.port()), tp = std::to_string(tls.port());
    std::string script =
        "const http = require('http'), tls = require('tls'), fs = require('fs');\n"
        "const proxy = new URL(process.env.HTTP_PROXY);\n"
        "const done = (k, v) => console.log(k + '=' + String(v).trim());\n"
        "setTimeout(() => { console.log('timeout'); process.exit(3); }, 20000).unref();\n"
        "http.get({host: proxy.hostname, port: proxy.port, path: 'http://example.test:" +
        hp +
        "/hello',\n"
        "          headers: {Host: 'example.test:" +
        hp +
        "'}}, res => {\n"
        "  let b = ''; res.on('data', d => b += d); res.on('end', () => done('http', b));\n"
        "}).on('error', e => done('http', 'error ' + e.message));\n"
        "http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: "
        "'example.test:" +
        tp +
        "'})\n"
        "  .on('connect', (res, socket) => {\n"
        "    if (res.statusCode !== 200) return done('https', 'CONNECT ' + res.statusCode);\n"
        "    const t = tls.connect({socket, servername: 'example.test', ca: fs.readFileSync('" +
        c.cert_path +
        "')},\n"
        "      () => t.write('GET /hello HTTP/1.1\\r\\nHost: example.test\\r\\nConnection: "
        "close\\r\\n\\r\\n'));\n"
        "    let b = ''; t.on('data', d => b += d);\n"
        "    t.on('end', () => done('https', b.split('\\r\\n\\r\\n')[1] || b));\n"
        "    t.on('error', e => done('https', 'error ' + e.message));\n"
        "  }).on('error', e => done('https', 'error ' + e.message)).end();\n";
    jail.ws_dir().write("fetch.js", script);
    auto r = bash("/usr/bin/node fetch.js", {"-p", policy(p)});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "http"), "hello from node-http") << describe(r);
    EXPECT_EQ(field(r.out, "https"), "hello from node-https") << describe(r);
}

// git over HTTPS (libcurl, https_proxy from the environment) clones a repository
// that the host serves as static files ("dumb" HTTP: no CGI needed).
TEST_F(Network, GitClonesOverHttpsThroughTheProxy) {
    if (!have("/usr/bin/git")) GTEST_SKIP() << "no /usr/bin/git on this host";
    ajtest::TempDir repo{"aj-net-repo"};
    std::string marker = ajit::unique_name("git-content-");
    std::string src = repo.path() + "/src";
    std::string setup =
        "set -e; git init -q -b main " + src + " && cd " + src + " && echo " + marker +
        " > README && git add README && git -c user.name=t -c user.email=t@t commit -qm init && "
        "git clone -q --bare " +
        src + " " + repo.path() + "/repo.git && cd " + repo.path() +
        "/repo.git && git update-server-info";
    auto h = ajtest::run_with({"/bin/sh", "-c", setup}, {});
    ASSERT_EQ(h.status, 0) << describe(h);
    auto c = cert();
    TestServer s({"git", &c});
    s.serve_dir(repo.path());
    std::string url = "https://example.test:" + std::to_string(s.port()) + "/repo.git";
    auto r = bash(
        "git -c http.sslCAInfo=" + c.cert_path + " clone -q " + url + " clone && cat clone/README",
        {"-p", pinned(s), "--net-log", log_path()});
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, marker)) << describe(r);
    EXPECT_GE(ajnet::log_entries(log(), "example.test", "allow").size(), 1u) << ajnet::dump(log());
}

// ---- refusals --------------------------------------------------------------------

// A host the policy does not allow: 403 for plain HTTP with a body that says what
// refused it, a CONNECT refused with 403, a deny line each, the counts in the result
// record, and nothing reaches the server (the name is pinned to it, so only the
// policy stands in the way).
TEST_F(Network, DeniedHostGets403AndALogLine) {
    auto c = cert();
    TestServer s({"denied"});
    TestServer stls({"denied-tls", &c});
    NetPolicy p;
    p.allow = {"example.test:" + std::to_string(s.port())};
    p.hosts = {{"example.test", "127.0.0.1"}, {"other.test", "127.0.0.1"}};
    std::string pol = policy(p);
    std::string res = scratch.path() + "/result.json";
    std::string script = curl("http://other.test:" + std::to_string(s.port()) + "/hello") + "; " +
                         curl("https://other.test:" + std::to_string(stls.port()) + "/hello",
                              "--cacert " + c.cert_path) +
                         "; " + curl("http://example.test:" + std::to_string(s.port()) + "/hello");
    auto r = bash(script, {"-p", pol, "--net-log", log_path(), "--result-file", res});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto ls = ajtest::lines(r.out);
    // First request: plain HTTP, refused by the proxy itself.
    EXPECT_EQ(field(r.out, "code"), "403") << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "other.test")) << "the 403 body does not name the host\n"
                                                       << describe(r);
    // Second: the CONNECT got 403 (curl exits 56, no tunnel).
    EXPECT_TRUE(ajtest::contains(r.out, "connect=403")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "code=200"))
        << "the allowed request after the refusals failed\n"
        << describe(r);

    for (const auto& q : s.requests())
        EXPECT_NE(q.host.rfind("other.test", 0), 0u) << "other.test reached the server";
    EXPECT_EQ(stls.connections(), 0) << "the refused CONNECT reached the TLS server";

    auto denied = ajnet::log_entries(log(), "other.test", "deny");
    ASSERT_EQ(denied.size(), 2u) << ajnet::dump(log());
    std::set<std::string> methods;
    for (const auto& e : denied) {
        methods.insert(e.value("method", ""));
        EXPECT_FALSE(e.value("reason", "").empty()) << e.dump();
        EXPECT_FALSE(e.value("rule", "").empty()) << e.dump();
        EXPECT_EQ(e.value("bytes_down", -1), 0)
            << "bytes relayed from a refused host: " << e.dump();
    }
    EXPECT_EQ(methods, (std::set<std::string>{"GET", "CONNECT"})) << ajnet::dump(log());
    EXPECT_EQ(ajnet::log_entries(log(), "example.test", "allow").size(), 1u) << ajnet::dump(log());

    auto rec = nlohmann::json::parse(ajtest::read_file(res), nullptr, false);
    ASSERT_FALSE(rec.is_discarded()) << ajtest::read_file(res);
    EXPECT_EQ(rec["denials"]["network"], 2) << rec.dump();
    EXPECT_EQ(rec["network"]["allowed"], 1) << rec.dump();
    EXPECT_EQ(rec["network"]["denied"], 2) << rec.dump();
}

// The 403 of a refused CONNECT carries a body naming the rule or reason (curl does
// not show it, so the request is written by hand).
TEST_F(Network, RefusedConnectBodyNamesTheReason) {
    NetPolicy p;
    p.allow = {"example.test"};
    p.deny = {"other.test"};
    std::string script =
        "exec 3<>/dev/tcp/127.0.0.1/3128 || exit 90; "
        "printf 'CONNECT other.test:443 HTTP/1.1\\r\\nHost: other.test:443\\r\\n\\r\\n' >&3; "
        "timeout 10 cat <&3";
    auto r = bash(script, {"-p", policy(p)});
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out.rfind("HTTP/1.1 403", 0), 0u) << describe(r);
    auto body = r.out.substr(std::min(r.out.size(), r.out.find("\r\n\r\n") + 4));
    EXPECT_TRUE(ajtest::contains(body, "other.test")) << describe(r);
    // The deny rule's origin: the policy file and line.
    EXPECT_TRUE(ajtest::contains(body, "net.toml")) << "the body does not say which rule refused\n"
                                                    << describe(r);
}

// Deny wins over allow: *.example.test is allowed, bad.example.test denied on the
// command line; both names are pinned to the same server.
TEST_F(Network, DenyWinsOverAllow) {
    TestServer s({"wild"});
    std::string port = std::to_string(s.port());
    NetPolicy p;
    p.mode = "";
    p.hosts = {{"good.example.test", "127.0.0.1"}, {"bad.example.test", "127.0.0.1"}};
    std::string script = curl("http://good.example.test:" + port + "/hello") + "; echo ---; " +
                         curl("http://bad.example.test:" + port + "/hello");
    auto r = bash(script, {"-p", policy(p), "--allow-host", "*.example.test:" + port, "--deny-host",
                           "bad.example.test", "--net-log", log_path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto parts = r.out.find("---");
    ASSERT_NE(parts, std::string::npos) << describe(r);
    EXPECT_EQ(field(r.out.substr(0, parts), "code"), "200") << describe(r);
    EXPECT_EQ(field(r.out.substr(parts), "code"), "403") << describe(r);
    auto d = ajnet::log_entries(log(), "bad.example.test", "deny");
    ASSERT_EQ(d.size(), 1u) << ajnet::dump(log());
    EXPECT_TRUE(ajtest::contains(d[0].value("rule", ""), "deny-host")) << d[0].dump();
    ASSERT_EQ(s.requests().size(), 1u);
    EXPECT_EQ(s.requests()[0].host, "good.example.test:" + port);
}

// --allow-host alone turns the proxy on (the policy only pins the name).
TEST_F(Network, AllowHostImpliesProxyMode) {
    TestServer s({"implied"});
    NetPolicy p;
    p.mode = "";
    p.hosts = {{"example.test", "127.0.0.1"}};
    std::string url = "http://example.test:" + std::to_string(s.port()) + "/hello";
    auto r = bash(curl(url),
                  {"-p", policy(p), "--allow-host", "example.test:" + std::to_string(s.port())});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "body"), "hello from implied") << describe(r);
}

// A port is part of the rule: example.test:P1 does not allow example.test:P2.
TEST_F(Network, OtherPortOfAnAllowedHostIsRefused) {
    TestServer allowed({"p1"});
    TestServer other({"p2"});
    std::string script = curl("http://example.test:" + std::to_string(other.port()) + "/hello") +
                         "; echo ---; " +
                         curl("http://example.test:" + std::to_string(allowed.port()) + "/hello");
    auto r = bash(script, {"-p", pinned(allowed), "--net-log", log_path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto parts = r.out.find("---");
    ASSERT_NE(parts, std::string::npos) << describe(r);
    EXPECT_EQ(field(r.out.substr(0, parts), "code"), "403") << describe(r);
    EXPECT_EQ(field(r.out.substr(parts), "code"), "200") << describe(r);
    EXPECT_EQ(other.connections(), 0);
}

// --json prints the result record, whose network counts match the log.
TEST_F(Network, JsonRecordCountsNetworkAttempts) {
    TestServer s({"json"});
    std::string script = curl("http://example.test:" + std::to_string(s.port()) + "/hello") +
                         " >/dev/null; " + curl("http://nope.test/") + " >/dev/null; " +
                         curl("http://nope2.test/") + " >/dev/null";
    auto r = bash(script, {"-p", pinned(s), "--json"});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto rec = ajit::record_of(r);
    ASSERT_TRUE(rec.is_object()) << describe(r);
    EXPECT_EQ(rec["denials"]["network"], 2) << rec.dump();
    EXPECT_EQ(rec["network"]["allowed"], 1) << rec.dump();
}

// An exact address rule names the destination, so the private-range check does
// not apply to it (as for a pin): 127.0.0.1:PORT allowed on the command line is
// reached. Adding an allow-everything preset must not take that away: allow rules
// only add, so the open preset's "*:*" must not shadow the rule that names the
// address.
TEST_F(Network, ExplicitAddressRuleIsReachableAlsoUnderOpenPreset) {
    TestServer s({"numeric"});
    std::string t = "127.0.0.1:" + std::to_string(s.port());
    std::string script = curl("http://" + t + "/hello", "-p --noproxy ''");
    auto alone = bash(script, {"--allow-host", t});
    ASSERT_EQ(alone.status, 0) << describe(alone);
    EXPECT_EQ(field(alone.out, "body"), "hello from numeric") << describe(alone);
    for (const auto& order :
         {std::vector<std::string>{"--net-preset", "open", "--allow-host", t},
          std::vector<std::string>{"--allow-host", t, "--net-preset", "open"}}) {
        auto r = bash(script, with(order, {"--net-log", log_path()}));
        ASSERT_EQ(r.status, 0) << describe(r);
        EXPECT_EQ(field(r.out, "body"), "hello from numeric")
            << order[0] << " " << order[1] << " " << order[2] << " " << order[3] << "\n"
            << describe(r) << ajnet::dump(log());
    }
}

// ---- presets ---------------------------------------------------------------------

// locked: nothing at all (no proxy to ask, or a proxy that allows nothing).
TEST_F(Network, LockedPresetReachesNothing) {
    TestServer s({"locked"});
    NetPolicy p;
    p.mode = "";
    p.hosts = {{"example.test", "127.0.0.1"}};
    auto r = bash(curl("http://example.test:" + std::to_string(s.port()) + "/hello"),
                  {"-p", policy(p), "--net-preset", "locked"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_NE(field(r.out, "code"), "200") << describe(r);
    EXPECT_EQ(s.connections(), 0);
}

// balanced: the curated registries and model APIs, as explain shows them.
TEST_F(Network, BalancedPresetListsRegistriesAndModelApis) {
    auto r = ajtest::agentjail_with(
        {"explain", "-C", jail.ws(), "--net-preset", "balanced", "--", "true"}, {});
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* h : {"registry.npmjs.org", "pypi.org", "crates.io", "proxy.golang.org",
                          "github.com", "api.anthropic.com", "api.openai.com", "deb.debian.org"})
        EXPECT_TRUE(ajtest::contains(r.out, h)) << h << " is not in the balanced preset\n"
                                                << describe(r);
    // Control: the default policy names none of them.
    auto d = ajtest::agentjail_with({"explain", "-C", jail.ws(), "--", "true"}, {});
    ASSERT_EQ(d.status, 0) << describe(d);
    EXPECT_FALSE(ajtest::contains(d.out, "registry.npmjs.org")) << describe(d);
}

// locked under an agent preset: the agent's own model API and the command line's
// hosts, nothing of the balanced preset it extends (issue 27, item 5).
TEST_F(Network, LockedUnderAnAgentPresetKeepsItsModelApiAndTheFlagsHosts) {
    ajtest::RunOptions env;
    env.env = {"ANTHROPIC_API_KEY=sk-ant-test", "HOME=" + jail.home()};
    auto r = ajtest::agentjail_with({"explain", "-C", jail.ws(), "--net-preset", "locked", "--allow-host",
                                     "example.com", "--", "claude"},
                                    env);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "allow      platform.claude.com  (claude.toml")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "allow      example.com  (command line (--allow-host))")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "allow      api.anthropic.com  (claude.toml")) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "registry.npmjs.org")) << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "network preset net-locked: dropped ")) << r.out;
    // Control: without locked the preset's registries are there.
    auto c = ajtest::agentjail_with({"explain", "-C", jail.ws(), "--", "claude"}, env);
    ASSERT_EQ(c.status, 0) << describe(c);
    EXPECT_TRUE(ajtest::contains(c.out, "registry.npmjs.org")) << c.out;
    // Without an agent preset locked leaves nothing.
    auto d = ajtest::agentjail_with({"explain", "-C", jail.ws(), "--net-preset", "locked", "--", "true"}, env);
    ASSERT_EQ(d.status, 0) << describe(d);
    EXPECT_TRUE(ajtest::contains(d.out, "mode       none (loopback only)")) << d.out;
}

// open: any name on any port passes the name check (the address checks still apply,
// so only a pinned name reaches a loopback server); the attempt is still logged.
TEST_F(Network, OpenPresetAllowsAnyNameStillLogged) {
    TestServer s({"open"});
    NetPolicy p;
    p.mode = "";
    p.hosts = {{"anything.test", "127.0.0.1"}};
    auto r = bash(curl("http://anything.test:" + std::to_string(s.port()) + "/hello"),
                  {"-p", policy(p), "--net-preset", "open", "--net-log", log_path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "body"), "hello from open") << describe(r);
    auto e = ajnet::log_entries(log(), "anything.test", "allow");
    ASSERT_EQ(e.size(), 1u) << ajnet::dump(log());
    EXPECT_TRUE(ajtest::contains(e[0].value("rule", ""), "net-open")) << e[0].dump();
}

}  // namespace

// ---- TLS interception (method/path rules and secrets over HTTPS) ---------------

namespace {

// Runs `script` with SSL_CERT_FILE=<test CA> in agentjail's own environment: the
// proxy verifies the loopback upstreams against it (what it would do with the
// system's CAs for real hosts), and the sandbox's bundle holds it too.
ajtest::RunOutput bash_trusting(ajtest::Jail& jail, const ajnet::Cert& c, const std::string& script,
                                const std::vector<std::string>& flags, std::vector<std::string> env = {}) {
    std::vector<std::string> args = jail.base();
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/bash", "-c", script});
    ajtest::RunOptions o;
    o.timeout_ms = 60000;
    o.env = std::move(env);
    o.env.push_back("SSL_CERT_FILE=" + c.cert_path);
    return jail.run(args, o);
}

}  // namespace

// A secret bound to one host is put in over HTTPS for that host only (the proxy
// intercepts its tunnel); another allowed host, a plain tunnel, gets the
// placeholder. The real value is nowhere inside: not in any process's environment
// or command line, not in /run, /tmp, HOME or the workspace, and not in the log.
TEST_F(Network, SecretIsReplacedOverHttpsOnlyForItsHost) {
    auto c = ajnet::make_cert(scratch.path() + "/ca.pem", scratch.path() + "/key.pem", {"api.test", "other.test"});
    TestServer api({"api", &c});
    TestServer other({"other", &c});
    std::string ap = std::to_string(api.port()), op = std::to_string(other.port());
    const std::string value = ajit::unique_name("sk-real-");
    NetPolicy p;
    p.allow = {"other.test:" + op};
    p.hosts = {{"api.test", "127.0.0.1"}, {"other.test", "127.0.0.1"}};
    p.extra = "\n[secrets]\nAPI_KEY = { source = \"env:AJ_TEST_NET_SECRET\", hosts = [\"api.test:" + ap + "\"] }\n";
    // The value reaches the script only encoded, so that the script's own command
    // line does not hold it; grep reads it from a pipe, not from a file or argv.
    std::string b64 = ajtest::trim(ajtest::run_with({"/bin/sh", "-c", "printf %s '" + value + "' | base64 -w0"}, {}).out);
    std::string script =
        "v=$(echo " + b64 + " | base64 -d); pat() { printf %s \"$v\"; }; "
        "echo placeholder=$API_KEY; "
        "curl -sS --max-time 15 -o /dev/null -w 'R api %{http_code}\\n' -H \"x-api-key: $API_KEY\" https://api.test:" +
        ap + "/hello; "
        "curl -sS --max-time 15 -o /dev/null -w 'R other %{http_code}\\n' -H \"x-api-key: $API_KEY\" "
        "https://other.test:" + op + "/hello; "
        // TRACE echoes the request's headers back: refused where the secret goes in,
        // passed through (a tunnel) where it does not.
        "curl -sS --max-time 15 -o /dev/null -w 'R trace-api %{http_code}\\n' -X TRACE -H \"x-api-key: $API_KEY\" "
        "https://api.test:" + ap + "/hello; "
        "curl -sS --max-time 15 -o /dev/null -w 'R trace-other %{http_code}\\n' -X TRACE https://other.test:" + op +
        "/hello; "
        "echo R env $(env | grep -cF -f <(pat)); "
        "echo R proc $(cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' | grep -cF -f <(pat)); "
        "echo R files $(grep -rlF -f <(pat) /run /tmp \"$HOME\" \"$PWD\" 2>/dev/null | wc -l); "
        "echo R control $(printf 'x%sx' \"$v\" | grep -cF -f <(pat))";
    auto r = bash_trusting(jail, c, script, {"-p", policy(p), "--net-log", log_path()},
                           {"AJ_TEST_NET_SECRET=" + value});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto line = [&](const std::string& label) {
        for (const auto& l : ajtest::lines(r.out))
            if (l.rfind("R " + label + " ", 0) == 0) return l.substr(label.size() + 3);
        return std::string("<missing>");
    };
    EXPECT_EQ(line("api"), "200") << describe(r);
    EXPECT_EQ(line("other"), "200") << describe(r);
    EXPECT_EQ(line("trace-api"), "403") << describe(r);
    EXPECT_NE(line("trace-other"), "403") << describe(r);
    EXPECT_NE(line("trace-other"), "<missing>") << describe(r);
    std::string placeholder = field(r.out, "placeholder");
    EXPECT_TRUE(ajtest::contains(placeholder, "agentjail-secret-placeholder-API_KEY-")) << describe(r);
    EXPECT_EQ(line("env"), "0") << describe(r);
    EXPECT_EQ(line("proc"), "0") << describe(r);
    EXPECT_EQ(line("files"), "0") << describe(r);
    EXPECT_EQ(line("control"), "1") << "the in-sandbox grep does not find the value where it is\n" << describe(r);
    // What the servers received: the value for api.test only.
    ASSERT_EQ(api.requests().size(), 1u);  // the TRACE never reached it
    ASSERT_EQ(other.requests().size(), 2u);
    EXPECT_EQ(other.requests()[1].method, "TRACE");
    EXPECT_TRUE(ajtest::contains(api.requests()[0].head, "x-api-key: " + value)) << api.requests()[0].head;
    EXPECT_FALSE(ajtest::contains(api.requests()[0].head, "placeholder")) << api.requests()[0].head;
    EXPECT_TRUE(ajtest::contains(other.requests()[0].head, "x-api-key: " + placeholder))
        << other.requests()[0].head;
    EXPECT_FALSE(ajtest::contains(other.requests()[0].head, value)) << other.requests()[0].head;
    EXPECT_FALSE(ajtest::contains(ajtest::read_file(log_path()), value));
    auto api_lines = ajnet::log_entries(log(), "api.test", "allow");
    bool intercepted = false;
    for (const auto& e : api_lines) intercepted = intercepted || e.value("intercepted", "") == "tls";
    EXPECT_TRUE(intercepted) << ajnet::dump(log());
}

// Issue 27, item 3: a project's .env shows its keys inside with placeholders (the
// file load_dotenv() reads no longer fails); a key the policy binds to a host goes in
// for that host with the placeholder the view shows, and no value is anywhere inside.
TEST_F(Network, ADotenvKeyIsAPlaceholderInsideAndItsValueGoesToItsHostOnly) {
    auto c = ajnet::make_cert(scratch.path() + "/ca.pem", scratch.path() + "/key.pem", {"api.test"});
    TestServer api({"api", &c});
    const std::string ap = std::to_string(api.port());
    const std::string value = ajit::unique_name("sk-dotenv-");
    const std::string other = ajit::unique_name("AJ-CANARY-other-");
    jail.plant(".env", "# the project's settings\nAPI_KEY=" + value + "\nOTHER=" + other + "\n");
    NetPolicy p;
    p.allow = {"api.test:" + ap};
    p.hosts = {{"api.test", "127.0.0.1"}};
    p.extra = "\n[secrets]\nAPI_KEY = { source = \"dotenv:" + jail.ws() + "/.env\", hosts = [\"api.test:" + ap + "\"] }\n";
    std::string script =
        "k=$(grep '^API_KEY=' .env | cut -d= -f2-); o=$(grep '^OTHER=' .env | cut -d= -f2-); "
        "echo view=$k; echo same=$([ \"$k\" = \"$API_KEY\" ] && echo yes || echo no); "
        "echo other=$o; "
        "curl -sS --max-time 15 -o /dev/null -w 'code=%{http_code}\\n' -H \"x-api-key: $k\" https://api.test:" + ap + "/hello";
    auto r = bash_trusting(jail, c, script, {"-p", policy(p)});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "view").rfind("agentjail-secret-placeholder-API_KEY-", 0), 0u) << describe(r);
    EXPECT_EQ(field(r.out, "same"), "yes") << describe(r);
    EXPECT_EQ(field(r.out, "other").rfind("agentjail-secret-placeholder-OTHER-", 0), 0u) << describe(r);
    EXPECT_EQ(field(r.out, "code"), "200") << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out + r.err, value)) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out + r.err, other)) << describe(r);
    ASSERT_EQ(api.requests().size(), 1u);
    EXPECT_TRUE(ajtest::contains(api.requests()[0].head, "x-api-key: " + value)) << api.requests()[0].head;
    // Control: the file on the host holds the values the view replaced.
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(jail.ws() + "/.env"), other));
}

// The per-run CA's private key is nowhere inside: the bundle the sandbox gets holds
// certificates only (the system's, or here the test CA from SSL_CERT_FILE, then the
// run's CA), and no private key is readable in /run, /tmp, HOME, the workspace or
// the environment. Control: a key placed in the workspace is found by the same search.
TEST_F(Network, TheCaPrivateKeyIsNotReachableInside) {
    auto c = cert();
    TestServer s({"reg", &c});
    NetPolicy p;
    p.allow_toml = {"{ host = \"example.test:" + std::to_string(s.port()) + "\", methods = [\"GET\"] }"};
    p.hosts = {{"example.test", "127.0.0.1"}};
    jail.ws_dir().write("control-key.txt", ajtest::read_file(scratch.path() + "/test-key.pem"));
    std::string script =
        "b=$SSL_CERT_FILE; echo bundle=$b; echo R certs $(grep -c 'BEGIN CERTIFICATE' \"$b\"); "
        "echo R runca $(grep -c \"this run's CA\" \"$b\"); "
        "echo R keys $(grep -rl 'PRIVATE KEY' /run /tmp \"$HOME\" \"$PWD\" 2>/dev/null | sort -u | tr '\\n' ' '); "
        "echo R envkeys $(env | grep -c 'PRIVATE KEY'); "
        "echo R writable $(echo x 2>/dev/null >> \"$b\" && echo yes || echo no); "
        "curl -sS --max-time 15 -o /dev/null -w 'R get %{http_code}\\n' https://example.test:" +
        std::to_string(s.port()) + "/hello";
    auto r = bash_trusting(jail, c, script, {"-p", policy(p)});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto line = [&](const std::string& label) {
        for (const auto& l : ajtest::lines(r.out))
            if (l.rfind("R " + label + " ", 0) == 0) return ajtest::trim(l.substr(label.size() + 3));
        return std::string("<missing>");
    };
    EXPECT_EQ(field(r.out, "bundle"), "/run/agentjail/ca-bundle.pem") << describe(r);
    EXPECT_EQ(line("certs"), "2") << describe(r);  // the test CA, then the run's
    EXPECT_EQ(line("runca"), "1") << describe(r);
    EXPECT_EQ(line("keys"), jail.ws() + "/control-key.txt") << describe(r);
    EXPECT_EQ(line("envkeys"), "0") << describe(r);
    EXPECT_EQ(line("writable"), "no") << describe(r);
    EXPECT_EQ(line("get"), "200") << describe(r);  // the run's CA is trusted inside
}

// Only hosts whose rules need to see requests are intercepted: an unrestricted host
// stays a blind tunnel, and the client sees the upstream's own certificate, while a
// restricted one shows a leaf of the run's CA. Real clients (curl, Python, Node)
// trust that CA through the variables agentjail sets.
TEST_F(Network, OnlyRestrictedHostsAreInterceptedOthersStayTunnels) {
    auto c = ajnet::make_cert(scratch.path() + "/ca.pem", scratch.path() + "/key.pem",
                              {"upstream-own-cert.test", "reg.test", "open.test"});
    TestServer reg({"reg", &c});
    TestServer open_s({"open", &c});
    std::string rp = std::to_string(reg.port()), opn = std::to_string(open_s.port());
    NetPolicy p;
    p.allow = {"open.test:" + opn};
    p.allow_toml = {"{ host = \"reg.test:" + rp + "\", methods = [\"GET\", \"HEAD\"] }"};
    p.hosts = {{"reg.test", "127.0.0.1"}, {"open.test", "127.0.0.1"}};
    std::string script =
        "echo R open-issuer $(curl -sv --max-time 15 -o /dev/null https://open.test:" + opn +
        "/hello 2>&1 | grep -i '^\\*  *issuer:'); "
        "echo R reg-issuer $(curl -sv --max-time 15 -o /dev/null https://reg.test:" + rp +
        "/hello 2>&1 | grep -i '^\\*  *issuer:'); ";
    if (have("/usr/bin/python3"))
        script += "echo R python $(python3 -c \"import urllib.request as u; "
                  "print(u.urlopen('https://reg.test:" + rp + "/hello', timeout=15).read().decode())\" 2>&1); ";
    if (have("/usr/bin/node")) {
        jail.ws_dir().write(
            "get.js",
            "const http = require('http'), tls = require('tls');\n"
            "const proxy = new URL(process.env.HTTPS_PROXY);\n"
            "setTimeout(() => { console.log('timeout'); process.exit(3); }, 20000).unref();\n"
            "http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: 'reg.test:" + rp + "'})\n"
            "  .on('connect', (res, socket) => {\n"
            "    const t = tls.connect({socket, servername: 'reg.test'},\n"  // no ca: NODE_EXTRA_CA_CERTS
            "      () => t.write('GET /hello HTTP/1.1\\r\\nHost: reg.test:" + rp + "\\r\\nConnection: close\\r\\n\\r\\n'));\n"
            "    let b = ''; t.on('data', d => b += d);\n"
            "    t.on('end', () => console.log('node=' + (b.split('\\r\\n\\r\\n')[1] || b).trim()));\n"
            "    t.on('error', e => console.log('node=error ' + e.message));\n"
            "  }).on('error', e => console.log('node=error ' + e.message)).end();\n");
        script += "echo R node $(node get.js); ";
    }
    auto r = bash_trusting(jail, c, script, {"-p", policy(p), "--net-log", log_path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto line = [&](const std::string& label) {
        for (const auto& l : ajtest::lines(r.out))
            if (l.rfind("R " + label + " ", 0) == 0) return l.substr(label.size() + 3);
        return std::string("<missing>");
    };
    EXPECT_TRUE(ajtest::contains(line("open-issuer"), "upstream-own-cert.test")) << describe(r);
    EXPECT_TRUE(ajtest::contains(line("reg-issuer"), "agentjail run CA")) << describe(r);
    if (have("/usr/bin/python3")) {
        EXPECT_EQ(line("python"), "hello from reg") << describe(r);
    }
    if (have("/usr/bin/node")) {
        EXPECT_EQ(line("node"), "node=hello from reg") << describe(r);
    }
    // The log tells them apart too.
    for (const auto& e : ajnet::log_entries(log(), "open.test"))
        EXPECT_FALSE(e.contains("intercepted")) << e.dump();
    bool intercepted = false;
    for (const auto& e : ajnet::log_entries(log(), "reg.test"))
        intercepted = intercepted || e.value("intercepted", "") == "tls";
    EXPECT_TRUE(intercepted) << ajnet::dump(log());
}

// ---- Issue 9 section 4: what the proxy holds for the sandbox is bounded ----------

namespace {

// The inodes of the sockets and the paths of the pipes among pid's descriptors.
// (One path per pipe: its two ends are one pipe.)
void descriptors(pid_t pid, std::set<unsigned long>& sockets, std::vector<std::string>& pipes) {
    std::error_code ec;
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    std::set<std::string> seen;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        std::string target = std::filesystem::read_symlink(e.path(), ec).string();
        if (ec) continue;
        if (target.rfind("socket:[", 0) == 0) sockets.insert(std::stoul(target.substr(8)));
        if (target.rfind("pipe:[", 0) == 0 && seen.insert(target).second)
            pipes.push_back(e.path().string());
    }
}

// Bytes queued (sent but not acknowledged, or received but not read) on the
// sockets in `inodes`, from a /proc/PID/net/tcp{,6} table of one network namespace.
std::uint64_t queued_bytes(const std::string& table, const std::set<unsigned long>& inodes,
                           int& found) {
    std::uint64_t total = 0;
    auto lines = ajtest::lines(ajtest::read_file(table));
    for (size_t i = 1; i < lines.size(); ++i) {
        auto w = ajit::words(lines[i]);
        if (w.size() < 10) continue;
        unsigned long inode = std::stoul(w[9]);
        if (inodes.count(inode) == 0) continue;
        ++found;
        auto colon = w[4].find(':');
        total += std::stoull(w[4].substr(0, colon), nullptr, 16) +
                 std::stoull(w[4].substr(colon + 1), nullptr, 16);
    }
    return total;
}

std::uint64_t vm_rss_kib(pid_t pid) {
    for (const auto& l :
         ajtest::lines(ajtest::read_file("/proc/" + std::to_string(pid) + "/status")))
        if (l.rfind("VmRSS:", 0) == 0) return std::stoull(ajit::words(l)[1]);
    return 0;
}

struct FloodResult {
    std::uint64_t queued = 0;      // bytes in agentjail's sockets, both namespaces
    int sockets = 0;               // agentjail's TCP sockets found in the tables
    std::uint64_t rss_kib = 0;     // agentjail's VmRSS
    std::uint64_t pipe_bytes = 0;  // capacity of agentjail's pipes (F_GETPIPE_SZ)
    size_t pipes = 0;
    int fresh_pipe = 0;  // F_GETPIPE_SZ of a pipe this process made meanwhile
    ajtest::RunOutput run;
};

// 64 tunnels through the proxy to a server that sends 1 GiB on each, none of them
// read inside: every buffer on the way fills up. Measured once the queues stop
// growing (read twice, 300 ms apart, the same), while the tunnels are still open.
FloodResult flood(ajtest::Jail& jail, const std::string& policy,
                  const std::vector<std::string>& flags, std::uint16_t port) {
    FloodResult f;
    std::string req = "CONNECT example.test:" + std::to_string(port) +
                      " HTTP/1.1\\r\\n\\r\\nGET /bytes/1073741824 "
                      "HTTP/1.1\\r\\nHost: example.test\\r\\n\\r\\n";
    // SIGPIPE ignored: a tunnel over the limit is answered 503 and closed at once.
    std::string script =
        "trap '' PIPE; for i in $(seq 64); do exec {fd}<>/dev/tcp/127.0.0.1/3128 && printf '" +
        req + "' >&$fd; done; touch ready; while [ ! -e go ]; do sleep 0.1; done; echo done";
    std::vector<std::string> args = {ajtest::agentjail_bin(), "-C", jail.ws(), "-p", policy};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/bash", "-c", script});
    ajtest::RunOptions o;
    o.env = {"HOME=" + jail.home()};
    o.timeout_ms = 120000;
    ajtest::Child c(args, o);
    if (!ajtest::wait_for_file(jail.ws() + "/ready", 60000)) {
        f.run = c.wait(1000);
        return f;
    }
    std::string children = ajtest::read_file("/proc/" + std::to_string(c.pid()) + "/task/" +
                                             std::to_string(c.pid()) + "/children");
    auto kids = ajit::words(children);
    pid_t init = kids.empty() ? -1 : static_cast<pid_t>(std::stoi(kids[0]));
    std::uint64_t last = ~0ULL;
    for (int round = 0; round < 100; ++round) {
        std::set<unsigned long> sockets;
        std::vector<std::string> pipes;
        descriptors(c.pid(), sockets, pipes);
        int found = 0;
        std::uint64_t q = 0;
        for (const std::string& pid : {std::to_string(c.pid()), std::to_string(init)})
            for (const char* t : {"/net/tcp", "/net/tcp6"})
                q += queued_bytes("/proc/" + pid + t, sockets, found);
        f.queued = q;
        f.sockets = found;
        f.rss_kib = vm_rss_kib(c.pid());
        f.pipes = pipes.size();
        f.pipe_bytes = 0;
        for (const auto& p : pipes) {
            int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0) continue;
            int sz = ::fcntl(fd, F_GETPIPE_SZ);
            if (sz > 0) f.pipe_bytes += static_cast<std::uint64_t>(sz);
            ::close(fd);
        }
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) == 0) {
            f.fresh_pipe = ::fcntl(fds[0], F_GETPIPE_SZ);
            ::close(fds[0]);
            ::close(fds[1]);
        }
        if (round > 0 && q == last) break;
        last = q;
        ajtest::sleep_ms(300);
    }
    jail.ws_dir().write("go", "");
    f.run = c.wait(60000);
    return f;
}

}  // namespace

// With -m 32M the proxy holds at most one connection per 2 MiB (16), each socket's
// buffers bounded (SO_RCVBUF/SO_SNDBUF 128 KiB): 64 tunnels whose data nobody reads
// leave agentjail with at most 16 MiB queued in its sockets (seen before: ~380 MiB),
// and the 48 over the limit are refused and logged (repeats summarised and counted).
TEST_F(Network, ManyTunnelsUnderASmallMemoryLimitStayWithinTheProxysBounds) {
    TestServer s({"flood"});
    auto f = flood(jail, pinned(s), {"-m", "32M", "--allow-degraded", "--net-log", log_path()},
                   s.port());
    ASSERT_EQ(f.run.status, 0) << describe(f.run);
    ASSERT_TRUE(ajtest::contains(f.run.out, "done")) << describe(f.run);
    std::cout << "[   INFO   ] queued " << f.queued / 1024 << " KiB in " << f.sockets
              << " sockets, VmRSS " << f.rss_kib << " KiB, " << f.pipes << " pipes of "
              << f.pipe_bytes / 1024 << " KiB\n";
    EXPECT_GT(f.sockets, 0) << "no socket of agentjail found in /proc/PID/net/tcp";
    // 16 connections x 2 sockets x (receive + send) x 2 x 128 KiB (the kernel's doubling).
    EXPECT_LE(f.queued, 16u << 20);
    EXPECT_LE(f.rss_kib, 96u * 1024) << "agentjail's own memory grew with the tunnels";
    int over = 0, allowed = 0;
    for (const auto& e : log()) {
        // Repeats past the log's limit come as one summary line with their count.
        if (ajtest::contains(e.value("reason", ""), "more than 16 connections at once"))
            over += e.contains("more_like_this") ? e["more_like_this"].get<int>() : 1;
        if (e.value("host", "") == "example.test" && e.value("decision", "") == "allow") ++allowed;
    }
    EXPECT_EQ(over, 48) << ajnet::dump(log());
    EXPECT_EQ(allowed, 16) << ajnet::dump(log());
}

// Without a memory limit (256 connections) the splice pipes are 16 KiB each and 128
// at most (2 MiB in all), so the user's pipe quota (pipe-user-pages-soft) is never
// used up: a pipe this process (the same user) makes during the run is a full 64 KiB
// one (seen before: 8 KiB, every new pipe of the user). As root the quota does not
// apply, so only the pipes' own sizes are telling there.
TEST_F(Network, ManyTunnelsLeaveTheUsersPipeQuotaAlone) {
    TestServer s({"flood"});
    auto f = flood(jail, pinned(s), {}, s.port());
    ASSERT_EQ(f.run.status, 0) << describe(f.run);
    std::cout << "[   INFO   ] " << f.pipes << " pipes of " << f.pipe_bytes / 1024
              << " KiB in all, queued " << f.queued / 1024 << " KiB in " << f.sockets
              << " sockets, a fresh pipe holds " << f.fresh_pipe << "\n";
    EXPECT_GT(f.pipes, 0u) << "the tunnels were expected to be spliced";
    // 128 splice pipes of 16 KiB, and a few of agentjail's own (stdio, status) of 64 KiB.
    EXPECT_LE(f.pipes, 128u + 8);
    EXPECT_LE(f.pipe_bytes, 128u * 16 * 1024 + 8 * 65536);
    EXPECT_EQ(f.fresh_pipe, 65536) << "a pipe of the same user came out shrunk";
    // 64 connections, each bounded as above.
    EXPECT_LE(f.queued, 64u << 20);
}

// A secret goes in the headers its policy entry names (here X-Goog-Api-Key) besides
// Authorization and x-api-key, and in no other header; the origin's echo of the
// request (a Content-Length body cut in 7-byte writes) comes back with the value
// masked by a string of the same length, so the body's length stays what the origin said.
TEST_F(Network, SecretGoesOnlyInTheHeadersItsEntryNames) {
    auto c =
        ajnet::make_cert(scratch.path() + "/ca.pem", scratch.path() + "/key.pem", {"api.test"});
    TestServer api({"api", &c});
    std::string ap = std::to_string(api.port());
    const std::string value = ajit::unique_name("sk-hdr-");
    NetPolicy p;
    p.hosts = {{"api.test", "127.0.0.1"}};
    p.extra =
        "\n[secrets]\nAPI_KEY = { source = \"env:AJ_TEST_HDR_SECRET\", hosts = [\"api.test:" + ap +
        "\"], headers = [\"X-Goog-Api-Key\"] }\n";
    std::string script =
        "curl -sS --max-time 15 -o body.out -w 'R code %{http_code} %{size_download}\\n' "
        "-H \"X-Goog-Api-Key: $API_KEY\" -H \"X-Other: $API_KEY\" https://api.test:" +
        ap +
        "/echo; echo R body $(grep -c \"X-Goog-Api-Key: agentjail-secret\" body.out); "
        "echo R len $(wc -c < body.out); rm -f body.out";
    auto r = bash_trusting(jail, c, script, {"-p", policy(p)}, {"AJ_TEST_HDR_SECRET=" + value});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, value)) << describe(r);
    auto line = [&](const std::string& label) {
        for (const auto& l : ajtest::lines(r.out))
            if (l.rfind("R " + label + " ", 0) == 0)
                return ajtest::trim(l.substr(label.size() + 3));
        return std::string("<missing>");
    };
    ASSERT_EQ(api.requests().size(), 1u) << describe(r);
    const std::string head = api.requests()[0].head;  // requests() returns a copy
    EXPECT_TRUE(ajtest::contains(head, "X-Goog-Api-Key: " + value)) << head;
    EXPECT_FALSE(ajtest::contains(head, "X-Other: " + value)) << head;
    EXPECT_TRUE(ajtest::contains(head, "X-Other: agentjail-secret-placeholder-API_KEY-")) << head;
    // The echoed body: the value masked (the mask begins like the placeholder) and
    // exactly as long as what the origin sent (its head plus CRLF).
    EXPECT_EQ(line("body"), "1") << describe(r);
    EXPECT_EQ(line("len"), std::to_string(head.size() + 2)) << describe(r);
    EXPECT_EQ(line("code"), "200 " + std::to_string(head.size() + 2)) << describe(r);
}
