// SPDX-License-Identifier: Apache-2.0
// Model gateways on loopback (docs/network.md): with ANTHROPIC_BASE_URL naming a
// server on the host's loopback, a client inside reaches it at the same URL (a
// listener the init opened inside, relayed by the proxy) and through HTTP_PROXY,
// with the secret's real value put in while the sandbox holds the placeholder;
// every request is logged; without the variable there is no listener; a malformed
// URL is refused before anything runs; explain shows the gateway.
#include "common.hpp"
#include "net_support.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using ajit::describe;
using ajit::field;
using ajnet::NetPolicy;
using ajnet::TestServer;

namespace {

class NetworkGateway : public ajit::Sandbox {
protected:
    ajtest::TempDir scratch{"aj-gw"};
    TestServer gw{{"gateway"}};
    std::string url = "http://127.0.0.1:" + std::to_string(gw.port());
    std::string log_path = scratch.path() + "/net.jsonl";

    // [network] gateways, and a secret whose base_url is the gateway's variable.
    std::string policy() {
        NetPolicy p;
        p.extra =
            "gateways = [\"ANTHROPIC_BASE_URL\"]\n"
            "\n[secrets]\nANTHROPIC_API_KEY = { source = \"env:AJ_TEST_GW_KEY\", base_url = "
            "\"ANTHROPIC_BASE_URL\" }\n";
        return scratch.write("gw.toml", ajnet::toml(p));
    }

    ajtest::RunOutput run(const std::vector<std::string>& flags, const std::string& script,
                          std::vector<std::string> env) {
        std::vector<std::string> argv = jail.base();
        argv.insert(argv.end(), flags.begin(), flags.end());
        argv.insert(argv.end(), {"--", "/bin/bash", "-c", script});
        ajtest::RunOptions o;
        o.timeout_ms = 60000;
        o.env = std::move(env);
        return jail.run(argv, o);
    }
};

// The gateway at its own URL inside and through the proxy: the origin gets the real
// key, the sandbox only ever the placeholder (the origin's echo of the head comes
// back masked); another port of the host's loopback stays out of reach.
TEST_F(NetworkGateway, LoopbackGatewayGetsTheRealKeyAtItsOwnUrl) {
    TestServer other({"other-loopback"});
    std::string op = std::to_string(other.port());
    const std::string value = ajit::unique_name("sk-gw-");
    std::string script =
        "echo url=$ANTHROPIC_BASE_URL; echo key=$ANTHROPIC_API_KEY; "
        "curl -sS --max-time 15 -o echo.out -w 'direct=%{http_code}\\n' -H \"x-api-key: "
        "$ANTHROPIC_API_KEY\" "
        "\"$ANTHROPIC_BASE_URL/echo\"; echo echoed=$(grep -c 'x-api-key: agentjail-secret' "
        "echo.out); rm -f echo.out; "
        "curl -sS --max-time 15 -o /dev/null -w 'proxied=%{http_code}\\n' --noproxy '' -x "
        "http://127.0.0.1:3128 "
        "-H \"x-api-key: $ANTHROPIC_API_KEY\" \"$ANTHROPIC_BASE_URL/hello\"; "
        "curl -sS --max-time 5 -o /dev/null -w 'other_direct=%{http_code}\\n' http://127.0.0.1:" +
        op +
        "/hello; echo other_direct_exit=$?; "
        "curl -sS --max-time 5 -o /dev/null -w 'other_proxied=%{http_code}\\n' --noproxy '' -x "
        "http://127.0.0.1:3128 "
        "http://127.0.0.1:" +
        op + "/hello";
    auto r = run({"-p", policy(), "--net-log", log_path}, script,
                 {"ANTHROPIC_BASE_URL=" + url, "AJ_TEST_GW_KEY=" + value});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "url"), url) << describe(r);
    EXPECT_TRUE(
        ajtest::contains(field(r.out, "key"), "agentjail-secret-placeholder-ANTHROPIC_API_KEY-"))
        << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, value)) << describe(r);
    EXPECT_EQ(field(r.out, "direct"), "200") << describe(r);
    EXPECT_EQ(field(r.out, "echoed"), "1") << describe(r);
    EXPECT_EQ(field(r.out, "proxied"), "200") << describe(r);
    auto reqs = gw.requests();
    ASSERT_EQ(reqs.size(), 2u) << describe(r);
    for (const auto& q : reqs) {
        EXPECT_TRUE(ajtest::contains(q.head, "x-api-key: " + value)) << q.head;
        EXPECT_FALSE(ajtest::contains(q.head, "placeholder")) << q.head;
    }
    // The other loopback port: nothing listens inside, and the proxy refuses it.
    EXPECT_EQ(field(r.out, "other_direct_exit"), "7") << describe(r);
    EXPECT_EQ(field(r.out, "other_proxied"), "403") << describe(r);
    EXPECT_EQ(other.connections(), 0);
    // Every request to the gateway is in the log, neither with the value.
    int logged = 0;
    for (const auto& e : ajnet::log_entries(ajnet::read_log(log_path), "127.0.0.1", "allow"))
        if (e.contains("path") && e.value("status", 0) == 200) ++logged;
    EXPECT_EQ(logged, 2) << ajnet::dump(ajnet::read_log(log_path));
    EXPECT_FALSE(ajtest::contains(ajtest::read_file(log_path), value));
}

// An https gateway on loopback: the client inside speaks TLS to the listener (the
// run's CA answers, as for any intercepted host), the proxy speaks verified TLS to
// the origin and puts the key in there.
TEST_F(NetworkGateway, HttpsLoopbackGatewayIsInterceptedWithTheKeyInjected) {
    auto cert =
        ajnet::make_cert(scratch.path() + "/ca.crt", scratch.path() + "/key.pem", {"localhost"});
    TestServer tls({"tls-gateway", &cert});
    std::string tls_url = "https://localhost:" + std::to_string(tls.port());
    const std::string value = ajit::unique_name("sk-gws-");
    auto r = run(
        {"-p", policy()},
        "curl -sS --max-time 15 -w '\ncode=%{http_code}\n' -H \"x-api-key: $ANTHROPIC_API_KEY\" "
        "\"$ANTHROPIC_BASE_URL/hello\"",
        {"ANTHROPIC_BASE_URL=" + tls_url, "AJ_TEST_GW_KEY=" + value,
         "SSL_CERT_FILE=" + cert.cert_path});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "code"), "200") << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "hello from tls-gateway")) << describe(r);
    ASSERT_EQ(tls.requests().size(), 1u) << describe(r);
    EXPECT_TRUE(ajtest::contains(tls.requests()[0].head, "x-api-key: " + value))
        << tls.requests()[0].head;
}

// Without the variable the gateway is nothing: no listener inside, no allow entry.
TEST_F(NetworkGateway, NoVariableNoListener) {
    std::string script = "curl -sS --max-time 5 -o /dev/null " + url +
                         "/hello; echo exit=$?; "
                         "echo url=${ANTHROPIC_BASE_URL:-unset}";
    auto r = run({"-p", policy()}, script, {"AJ_TEST_GW_KEY=x"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "exit"), "7") << describe(r);
    EXPECT_EQ(field(r.out, "url"), "unset") << describe(r);
    EXPECT_EQ(gw.connections(), 0);
}

// A malformed URL in the variable: exit 125 before anything runs, one line naming it.
TEST_F(NetworkGateway, MalformedUrlIsRefused) {
    for (const std::string bad :
         {"ftp://127.0.0.1:4000", "http://", "http://user:pw@127.0.0.1:4000",
          "http://127.0.0.1:99999", "127.0.0.1:4000"}) {
        auto r =
            run({"-p", policy()}, "echo ran", {"ANTHROPIC_BASE_URL=" + bad, "AJ_TEST_GW_KEY=x"});
        EXPECT_EQ(r.status, 125) << bad << "\n" << describe(r);
        EXPECT_FALSE(ajtest::contains(r.out, "ran")) << describe(r);
        EXPECT_TRUE(ajtest::contains(r.err, "gateway $ANTHROPIC_BASE_URL")) << describe(r);
        EXPECT_EQ(ajtest::lines(ajtest::trim(r.err)).size(), 1u) << describe(r);
    }
}

// explain says what the gateway opens.
TEST_F(NetworkGateway, ExplainShowsTheGateway) {
    ajtest::RunOptions o;
    o.env = {"ANTHROPIC_BASE_URL=" + url, "AJ_TEST_GW_KEY=x"};
    auto r = jail.run({"explain", "-C", jail.ws(), "-p", policy(), "--", "true"}, o);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "gateway    $ANTHROPIC_BASE_URL = " + url)) << describe(r);
    EXPECT_TRUE(
        ajtest::contains(r.out, "listening at 127.0.0.1:" + std::to_string(gw.port()) + " inside"))
        << describe(r);
}

}  // namespace
