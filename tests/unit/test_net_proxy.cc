// SPDX-License-Identifier: Apache-2.0
// The proxy in-process: a listening socket of the test's own stands in for the one
// inside a sandbox, loopback servers stand in for the internet (reached through
// [network.hosts]-style pins), and a canary server counts connections that must
// never happen (SSRF to host loopback, NET-03).
#include "net/proxy.hpp"
#include "run/loop.hpp"

#include "net_support.hpp"
#include "test_support.hpp"

#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace agentjail::net {
namespace {

int listen_loopback(std::uint16_t& port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
        ::close(fd);
        return -1;
    }
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}

// A loopback server: "echo" mode sends back what it reads; "http" mode reads one
// request head, records it, and answers "hello" with Connection: close.
class Upstream {
public:
    enum class Mode { echo, http };
    explicit Upstream(Mode mode) : mode_(mode) {
        fd_ = listen_loopback(port_);
        thread_ = std::thread([this] { loop(); });
    }
    ~Upstream() {
        stop_ = true;
        ::shutdown(fd_, SHUT_RDWR);
        thread_.join();
        ::close(fd_);
    }
    std::uint16_t port() const { return port_; }
    int accepted() const { return accepted_.load(); }
    std::string last_request() {
        std::lock_guard l(mu_);
        return last_;
    }

private:
    void loop() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            accepted_++;
            std::thread([this, c] { serve(c); }).detach();
        }
    }
    void serve(int c) {
        timeval tv{5, 0};
        ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[65536];
        std::string head;
        for (;;) {
            ssize_t n = ::read(c, buf, sizeof buf);
            if (n <= 0) break;
            if (mode_ == Mode::echo) {
                if (::write(c, buf, static_cast<size_t>(n)) != n) break;
                continue;
            }
            head.append(buf, static_cast<size_t>(n));
            if (head.find("\r\n\r\n") != std::string::npos) {
                {
                    std::lock_guard l(mu_);
                    last_ = head;
                }
                std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
                (void)!::write(c, r.data(), r.size());
                break;
            }
        }
        ::close(c);
    }
    Mode mode_;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<int> accepted_{0};
    std::mutex mu_;
    std::string last_;
};

int connect_to(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void send_all(int fd, const std::string& s) { ASSERT_EQ(::write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size())); }

// Reads until the peer closes (or `until` appears, or the 10 s timeout).
std::string read_until(int fd, const std::string& until = {}) {
    std::string out;
    char buf[4096];
    for (;;) {
        if (!until.empty() && out.find(until) != std::string::npos) break;
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    return out;
}

std::string read_exact(int fd, size_t n) {
    std::string out;
    char buf[512];
    while (out.size() < n) {
        ssize_t r = ::read(fd, buf, std::min(sizeof buf, n - out.size()));
        if (r <= 0) break;
        out.append(buf, static_cast<size_t>(r));
    }
    return out;
}

Rule rule(const std::string& text, const std::string& origin) {
    std::string why;
    auto p = parse_host_pattern(text, &why);
    EXPECT_TRUE(p) << why;
    Rule r;
    r.pattern = p ? *p : HostPattern{};
    r.text = text;
    r.origin = origin;
    return r;
}

class ProxyTest : public ::testing::Test {
protected:
    void start(Settings s) {
        s.log_path = dir.path() + "/net.jsonl";
        auto p = Proxy::create(s);
        ASSERT_TRUE(p) << p.error().message();
        proxy = std::move(*p);
        int lfd = listen_loopback(proxy_port);
        ASSERT_GE(lfd, 0);
        auto r = proxy->serve(loop.io(), sys::UniqueFd(lfd));
        ASSERT_TRUE(r) << r.error().message();
        loop.start();
    }
    // As a run ends: the proxy stops, then the loop, then the proxy goes.
    void TearDown() override {
        if (proxy) (void)proxy->stop();
        loop.finish();
        proxy.reset();
    }
    // Settings that allow example.test (pinned to loopback) on the echo and HTTP ports.
    Settings pinned() {
        Settings s;
        s.rules.allow = {rule("example.test:" + std::to_string(echo.port()), "t.toml:3:10"),
                         rule("example.test:" + std::to_string(http.port()), "t.toml:3:30"),
                         rule("*:*", "t.toml:3:50")};
        s.rules.deny = {rule("bad.example.test", "t.toml:4:9")};
        s.rules.pins = {{"example.test", *parse_numeric_host("127.0.0.1"), "t.toml:6:1"}};
        return s;
    }
    std::vector<nlohmann::json> log_lines() {
        std::vector<nlohmann::json> out;
        for (const auto& l : ajtest::lines(ajtest::read_file(dir.path() + "/net.jsonl")))
            if (!l.empty()) out.push_back(nlohmann::json::parse(l));
        return out;
    }
    // CONNECT through the proxy; returns the whole response when refused.
    std::string connect_and_read(const std::string& target) {
        int c = connect_to(proxy_port);
        EXPECT_GE(c, 0);
        send_all(c, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
        std::string r = read_until(c);
        ::close(c);
        return r;
    }

    ajtest::TempDir dir{"aj-net-proxy"};
    Upstream echo{Upstream::Mode::echo};
    Upstream http{Upstream::Mode::http};
    Upstream canary{Upstream::Mode::echo};
    agentjail::run::Loop loop;  // the run's loop the proxy serves on; outlives it
    std::unique_ptr<Proxy> proxy;
    std::uint16_t proxy_port = 0;
};

TEST_F(ProxyTest, ConnectToAPinnedHostRelaysBothWays) {
    start(pinned());
    int c = connect_to(proxy_port);
    ASSERT_GE(c, 0);
    std::string target = "example.test:" + std::to_string(echo.port());
    send_all(c, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
    EXPECT_EQ(read_until(c, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
    std::string big(300000, 'a');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    std::thread writer([&] { send_all(c, big); ::shutdown(c, SHUT_WR); });
    std::string back = read_until(c);
    writer.join();
    ::close(c);
    EXPECT_EQ(back.size(), big.size());
    EXPECT_TRUE(back == big);
    Counters n = proxy->stop();
    EXPECT_EQ(n.allowed, 1u);
    EXPECT_EQ(n.denied, 0u);
    auto lines = log_lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["host"], "example.test");
    EXPECT_EQ(lines[0]["port"], echo.port());
    EXPECT_EQ(lines[0]["method"], "CONNECT");
    EXPECT_EQ(lines[0]["decision"], "allow");
    EXPECT_EQ(lines[0]["rule"], "t.toml:3:10");
    EXPECT_EQ(lines[0]["bytes_up"], big.size());
    EXPECT_EQ(lines[0]["bytes_down"], big.size());
    EXPECT_TRUE(lines[0].contains("time"));
}

TEST_F(ProxyTest, DeniedHostsGet403NamingTheRule) {
    start(pinned());
    std::string r = connect_and_read("bad.example.test:443");
    EXPECT_EQ(r.substr(0, 22), "HTTP/1.1 403 Forbidden");
    EXPECT_NE(r.find("agentjail: refused by policy: bad.example.test:443 is denied by the rule \"bad.example.test\" (t.toml:4:9)"),
              std::string::npos)
        << r;
    proxy->stop();
    auto lines = log_lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["decision"], "deny");
    EXPECT_EQ(lines[0]["rule"], "t.toml:4:9");
}

TEST_F(ProxyTest, NothingIsAllowedByDefault) {
    start(Settings{});
    std::string r = connect_and_read("example.com:443");
    EXPECT_NE(r.find("403 Forbidden"), std::string::npos);
    EXPECT_NE(r.find("agentjail: refused by policy: example.com is not in the allowlist (default: nothing is allowed; add --allow-host "
                     "example.com or [network] allow)"),
              std::string::npos)
        << r;
    EXPECT_EQ(proxy->stop().denied, 1u);
}

// NET-03: with every name allowed, no spelling of loopback, metadata or the LAN is
// reached, and the canary server on host loopback sees no connection.
TEST_F(ProxyTest, SsrfSpellingsAreRefusedAndTheCanaryIsNeverReached) {
    start(pinned());
    std::string p = std::to_string(canary.port());
    for (const char* host :
         {"127.0.0.1", "127.1", "0x7f.0.0.1", "2130706433", "017700000001", "[::ffff:127.0.0.1]", "[::1]", "0.0.0.0",
          "localhost", "LOCALHOST.", "169.254.169.254", "10.0.0.1", "[::ffff:7f00:1]", "127.0.0.1."}) {
        std::string r = connect_and_read(std::string(host) + ":" + p);
        EXPECT_EQ(r.substr(0, 22), "HTTP/1.1 403 Forbidden") << host << ": " << r;
        EXPECT_TRUE(r.find("address") != std::string::npos) << host << ": " << r;
    }
    // A name that resolves to loopback (localhost) names the rebinding.
    std::string r = connect_and_read("localhost:" + p);
    EXPECT_NE(r.find("localhost resolved to"), std::string::npos) << r;
    EXPECT_NE(r.find("loopback address (DNS rebinding?)"), std::string::npos) << r;
    // Plain HTTP to the metadata address.
    int c = connect_to(proxy_port);
    send_all(c, "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n");
    r = read_until(c);
    ::close(c);
    EXPECT_NE(r.find("403 Forbidden"), std::string::npos) << r;
    EXPECT_NE(r.find("the cloud metadata address"), std::string::npos) << r;
    proxy->stop();
    EXPECT_EQ(canary.accepted(), 0);
}

TEST_F(ProxyTest, PlainHttpIsRewrittenToOriginForm) {
    start(pinned());
    int c = connect_to(proxy_port);
    std::string url = "http://example.test:" + std::to_string(http.port()) + "/path?q=1";
    send_all(c, "GET " + url + " HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic eDp5\r\nUser-Agent: t\r\n\r\n");
    std::string r = read_until(c);
    ::close(c);
    EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
    EXPECT_NE(r.find("hello\n"), std::string::npos) << r;
    std::string seen = http.last_request();
    EXPECT_EQ(seen.substr(0, 25), "GET /path?q=1 HTTP/1.1\r\nU") << seen;
    EXPECT_EQ(seen.find("Proxy-Authorization"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("evil.test"), std::string::npos) << seen;
    EXPECT_NE(seen.find("Host: example.test:" + std::to_string(http.port())), std::string::npos) << seen;
    EXPECT_NE(seen.find("Connection: close"), std::string::npos) << seen;
    proxy->stop();
    auto lines = log_lines();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["method"], "GET");
    EXPECT_EQ(lines[0]["decision"], "allow");
    EXPECT_GT(lines[0]["bytes_down"].get<long>(), 0);
}

TEST_F(ProxyTest, GarbageAndOversizedHeadsGet400) {
    start(pinned());
    for (const std::string& req : {std::string("hello there\r\n\r\n"), std::string("BREW http://pot/ HTTP/1.1\r\n\r\n"),
                                   "GET http://a/ HTTP/1.1\r\nX: " + std::string(20000, 'x') + "\r\n\r\n"}) {
        int c = connect_to(proxy_port);
        ASSERT_GE(c, 0);
        // The proxy may answer and close before it read everything: ignore EPIPE.
        (void)!::send(c, req.data(), req.size(), MSG_NOSIGNAL);
        std::string r = read_until(c);
        ::close(c);
        EXPECT_EQ(r.substr(0, 24), "HTTP/1.1 400 Bad Request") << r.substr(0, 200);
    }
    EXPECT_EQ(proxy->stop().denied, 3u);
}

TEST_F(ProxyTest, Socks5WithARemoteName) {
    start(pinned());
    int c = connect_to(proxy_port);
    ASSERT_GE(c, 0);
    send_all(c, std::string("\x05\x01\x00", 3));
    EXPECT_EQ(read_exact(c, 2), std::string("\x05\x00", 2));
    std::string name = "example.test";
    std::string req = std::string("\x05\x01\x00\x03", 4) + static_cast<char>(name.size()) + name +
                      static_cast<char>(echo.port() >> 8) + static_cast<char>(echo.port() & 0xff);
    send_all(c, req);
    std::string reply = read_exact(c, 10);
    ASSERT_EQ(reply.size(), 10u);
    EXPECT_EQ(reply[1], 0) << "SOCKS5 reply code " << int(reply[1]);
    send_all(c, "ping");
    ::shutdown(c, SHUT_WR);
    std::string back = read_until(c);
    ::close(c);
    EXPECT_EQ(back, "ping");
    // A refused SOCKS5 destination gets code 2 (not allowed by the ruleset).
    c = connect_to(proxy_port);
    send_all(c, std::string("\x05\x01\x00", 3));
    EXPECT_EQ(read_exact(c, 2), std::string("\x05\x00", 2));
    name = "bad.example.test";
    send_all(c, std::string("\x05\x01\x00\x03", 4) + static_cast<char>(name.size()) + name + std::string("\x01\xbb", 2));
    reply = read_until(c);
    ::close(c);
    ASSERT_GE(reply.size(), 2u);
    EXPECT_EQ(reply[1], 2);
    proxy->stop();
    auto lines = log_lines();
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0]["method"], "SOCKS5");
    EXPECT_EQ(lines[1]["decision"], "deny");
}

TEST_F(ProxyTest, ConnectionLimit) {
    Settings s = pinned();
    s.max_connections = 2;
    start(s);
    std::string target = "example.test:" + std::to_string(echo.port());
    std::vector<int> open;
    for (int i = 0; i < 2; ++i) {
        int c = connect_to(proxy_port);
        send_all(c, "CONNECT " + target + " HTTP/1.1\r\n\r\n");
        EXPECT_EQ(read_until(c, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
        open.push_back(c);
    }
    int c = connect_to(proxy_port);
    std::string r = read_until(c);
    ::close(c);
    EXPECT_EQ(r.substr(0, 32), "HTTP/1.1 503 Service Unavailable") << r;
    for (int fd : open) ::close(fd);
    Counters n = proxy->stop();
    EXPECT_EQ(n.allowed, 2u);
    EXPECT_EQ(n.denied, 1u);
}

TEST_F(ProxyTest, StopEndsOpenTunnelsAndLogsThem) {
    start(pinned());
    int c = connect_to(proxy_port);
    std::string target = "example.test:" + std::to_string(echo.port());
    send_all(c, "CONNECT " + target + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(read_until(c, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
    auto t0 = std::chrono::steady_clock::now();
    proxy->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    EXPECT_EQ(read_until(c), "");  // closed by the proxy
    ::close(c);
    EXPECT_EQ(log_lines().size(), 1u);
}

// A one-connection HTTPS server that answers with the request head it read.
class TlsEcho {
public:
    // What the server answers to a request head (by default: the head, echoed as a
    // Content-Length body), written in pieces of `piece` bytes, one TLS record each.
    using Respond = std::function<std::string(const std::string& head)>;
    TlsEcho(const std::string& cert, const std::string& key, Respond respond = {}, size_t piece = 0)
        : respond_(respond ? std::move(respond) : Respond(echo_head)), piece_(piece) {
        ctx_ = SSL_CTX_new(TLS_server_method());
        SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str());
        SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM);
        fd_ = listen_loopback(port_);
        thread_ = std::thread([this] {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 10000) <= 0) return;
            int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) return;
            int one = 1;
            ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            SSL* ssl = SSL_new(ctx_);
            SSL_set_fd(ssl, c);
            if (SSL_accept(ssl) == 1) {
                std::string head;
                char buf[4096];
                while (head.find("\r\n\r\n") == std::string::npos) {
                    int n = SSL_read(ssl, buf, sizeof buf);
                    if (n <= 0) break;
                    head.append(buf, static_cast<size_t>(n));
                }
                {
                    std::lock_guard<std::mutex> l(mu_);
                    received_ = head;
                }
                std::string r = respond_(head);
                size_t step = piece_ == 0 ? r.size() : piece_;
                for (size_t at = 0; at < r.size(); at += step) {
                    int k = static_cast<int>(std::min(step, r.size() - at));
                    if (SSL_write(ssl, r.data() + at, k) != k) break;
                }
                SSL_shutdown(ssl);
            }
            SSL_free(ssl);
            ::close(c);
        });
    }
    ~TlsEcho() {
        thread_.join();
        ::close(fd_);
        SSL_CTX_free(ctx_);
    }
    std::uint16_t port() const { return port_; }
    std::string received() const {
        std::lock_guard<std::mutex> l(mu_);
        return received_;
    }
    static std::string echo_head(const std::string& head) {
        return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(head.size()) +
               "\r\nConnection: close\r\n\r\n" + head;
    }

private:
    Respond respond_;
    size_t piece_ = 0;
    SSL_CTX* ctx_ = nullptr;
    int fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread thread_;
    mutable std::mutex mu_;
    std::string received_;
};

// The secret's placeholder is replaced only in requests to its host, and those go
// upstream over TLS (verified against the CA in SSL_CERT_FILE).
TEST_F(ProxyTest, SecretsAreAddedForTheirHostOnlyAndSentOverTls) {
    auto cert = ajnet::make_cert(dir.path() + "/cert.pem", dir.path() + "/key.pem", {"api.test"});
    TlsEcho tls(cert.cert_path, cert.key_path);
    ::setenv("SSL_CERT_FILE", cert.cert_path.c_str(), 1);
    ::setenv("AJ_TEST_SECRET_VALUE", "sk-real-123", 1);
    Settings s = pinned();
    s.rules.pins.push_back({"api.test", *parse_numeric_host("127.0.0.1"), "t.toml:7:1"});
    Secret sec;
    sec.name = "KEY";
    sec.source = "env:AJ_TEST_SECRET_VALUE";
    sec.placeholder = "agentjail-secret-placeholder-KEY-0123";
    sec.hosts = {rule("api.test:" + std::to_string(tls.port()), "t.toml:9:1")};
    s.rules.allow.push_back(sec.hosts[0]);
    s.secrets = {sec};
    start(s);
    int c = connect_to(proxy_port);
    send_all(c, "GET http://api.test:" + std::to_string(tls.port()) +
                    "/v1/messages HTTP/1.1\r\nx-api-key: agentjail-secret-placeholder-KEY-0123\r\n\r\n");
    std::string r = read_until(c);
    ::close(c);
    EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
    EXPECT_NE(tls.received().find("x-api-key: sk-real-123\r\n"), std::string::npos)
        << tls.received();
    EXPECT_EQ(tls.received().find("placeholder"), std::string::npos) << tls.received();
    // The echo of the request comes back with the value masked (as long as the value).
    EXPECT_NE(r.find("x-api-key: agentjail-s\r\n"), std::string::npos) << r;
    EXPECT_EQ(r.find("sk-real-123"), std::string::npos) << r;
    // Another allowed host gets the placeholder as it is, in clear.
    c = connect_to(proxy_port);
    send_all(c, "GET http://example.test:" + std::to_string(http.port()) +
                    "/ HTTP/1.1\r\nx-api-key: agentjail-secret-placeholder-KEY-0123\r\n\r\n");
    r = read_until(c);
    ::close(c);
    EXPECT_NE(r.find("hello"), std::string::npos) << r;
    std::string seen = http.last_request();
    EXPECT_NE(seen.find("x-api-key: agentjail-secret-placeholder-KEY-0123"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("sk-real-123"), std::string::npos) << seen;
    proxy->stop();
    EXPECT_EQ(ajtest::read_file(dir.path() + "/net.jsonl").find("sk-real-123"), std::string::npos);
    ::unsetenv("SSL_CERT_FILE");
    ::unsetenv("AJ_TEST_SECRET_VALUE");
}

TEST_F(ProxyTest, AnUnverifiableUpstreamGets502) {
    auto cert = ajnet::make_cert(dir.path() + "/cert.pem", dir.path() + "/key.pem", {"api.test"});
    TlsEcho tls(cert.cert_path, cert.key_path);
    ::unsetenv("SSL_CERT_FILE");  // the system CAs do not know this certificate
    ::setenv("AJ_TEST_SECRET_VALUE", "sk-real-123", 1);
    Settings s = pinned();
    s.rules.pins.push_back({"api.test", *parse_numeric_host("127.0.0.1"), "t.toml:7:1"});
    Secret sec{"KEY",
               "env:AJ_TEST_SECRET_VALUE",
               "ph-KEY",
               {rule("api.test:" + std::to_string(tls.port()), "x")},
               {},
               {}};
    s.rules.allow.push_back(sec.hosts[0]);
    s.secrets = {sec};
    start(s);
    int c = connect_to(proxy_port);
    send_all(c, "GET http://api.test:" + std::to_string(tls.port()) + "/ HTTP/1.1\r\nx-api-key: ph-KEY\r\n\r\n");
    std::string r = read_until(c);
    ::close(c);
    EXPECT_EQ(r.substr(0, 24), "HTTP/1.1 502 Bad Gateway") << r;
    EXPECT_NE(r.find("TLS to api.test"), std::string::npos) << r;
    EXPECT_EQ(r.find("sk-real"), std::string::npos) << r;
    ::unsetenv("AJ_TEST_SECRET_VALUE");
}

// The proxy's own failure during the run (here its listening socket is shut down
// under it, so accept fails for good) is kept for the result record and logged,
// instead of the proxy spinning or the sandbox losing its way out without a word.
TEST_F(ProxyTest, AFailureOfTheProxyItselfIsReported) {
    Settings s = pinned();
    s.log_path = dir.path() + "/net.jsonl";
    auto p = Proxy::create(s);
    ASSERT_TRUE(p) << p.error().message();
    proxy = std::move(*p);
    int lfd = listen_loopback(proxy_port);
    ASSERT_GE(lfd, 0);
    int keep = ::dup(lfd);
    ASSERT_TRUE(proxy->serve(loop.io(), sys::UniqueFd(lfd)));
    loop.start();
    EXPECT_EQ(proxy->counters().failure, "");
    // Control: it serves.
    int probe = connect_to(proxy_port);
    ASSERT_GE(probe, 0);
    send_all(probe, "CONNECT example.test:" + std::to_string(echo.port()) + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(read_until(probe, "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
    ::close(probe);
    ::shutdown(keep, SHUT_RDWR);  // a listening socket shut down: accept gets EINVAL
    for (int i = 0; i < 500 && proxy->counters().failure.empty(); ++i) ajtest::sleep_ms(10);
    Counters c = proxy->stop();
    ::close(keep);
    EXPECT_NE(c.failure.find("network proxy: accept on the sandbox's proxy socket"), std::string::npos)
        << c.failure;
    EXPECT_NE(ajtest::read_file(dir.path() + "/net.jsonl").find("\"decision\":\"error\""), std::string::npos);
}

TEST(Proxy, AMissingSecretFailsAtServe) {
    Settings s;
    s.secrets = {Secret{"KEY", "env:AJ_TEST_SURELY_UNSET_VARIABLE", "ph", {}, {}, {}}};
    agentjail::run::Loop loop;  // outlives the proxy
    auto p = Proxy::create(s);
    ASSERT_TRUE(p);
    std::uint16_t port = 0;
    auto r = (*p)->serve(loop.io(), sys::UniqueFd(listen_loopback(port)));
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("secret KEY (env:AJ_TEST_SURELY_UNSET_VARIABLE): the variable is not set"),
              std::string::npos)
        << r.error().message();
}

TEST(Proxy, ABadLogPathFailsAtCreate) {
    Settings s;
    s.log_path = "/nonexistent-dir/x/net.jsonl";
    auto p = Proxy::create(s);
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message().find("network log /nonexistent-dir/x/net.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace agentjail::net
