// SPDX-License-Identifier: Apache-2.0
// Test servers and helpers of the network tests: loopback HTTP and HTTPS servers
// (threads of the test process) that stand in for the internet, a self-signed
// certificate made at test time, the proxy's JSON log, and policy files that pin
// test names to those servers.
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct ssl_st;  // OpenSSL's SSL

namespace ajnet {

// A self-signed certificate (EC P-256, SHA-256, valid one day) for `names`
// (subjectAltName DNS entries; the first is also the CN), written as PEM files.
struct Cert {
    std::string cert_path;  // hand this to clients as their CA (curl --cacert)
    std::string key_path;
};
// Throws std::runtime_error when OpenSSL fails.
Cert make_cert(const std::string& cert_path, const std::string& key_path,
               const std::vector<std::string>& names);

// One request as the server read it.
struct Request {
    std::string method;
    std::string target;  // as on the request line: "/hello", or absolute-form
    std::string host;    // the Host header
    std::size_t body_bytes = 0;
    std::string head;    // the request line and headers as received
};

// An HTTP/1.1 server on 127.0.0.1 (or ::1) at an ephemeral port, one thread per
// connection, every response with "Connection: close". Routes:
//   GET /hello          "hello from NAME\n"
//   GET /bytes/N        N bytes of 'x' (at most 2 GiB)
//   GET/HEAD other      a body set with set_body(), else a file under the root set
//                       with serve_dir() (query strings ignored), else 404
//   POST, PUT           reads the body, answers "got N bytes\n"
//   GET /echo           reflects: Access-Control-Allow-Origin = Origin, X-Echo-Authorization,
//                       X-Echo-Api-Key and X-Echo-Marker = those request headers, the body =
//                       the request head, written 7 bytes at a time (Content-Length)
//   GET /echo-chunked   the same with a chunked body of 7-byte chunks
//   POST /echo-paced[-chunked]  "auth=" + the Authorization header + "\n" + the body,
//                       3 bytes every 10 ms (Content-Length, or one chunk each), then
//                       a second's pause, then "|end\n"
//   GET /ws             with Upgrade: websocket, a WebSocket echo (101, then each message
//                       back; the message "head" is answered with the handshake's head)
//   GET /ws-wrong-accept, /switch   a 101 with a wrong Sec-WebSocket-Accept, then bytes
//                       that look like a response (what a proxy must not relay)
// Each connection waits at most 10 s for a request; stop() ends everything.
class TestServer {
public:
    struct Options {
        std::string name = "test";
        const Cert* tls = nullptr;  // HTTPS with this certificate when set
        bool ipv6 = false;          // listen on ::1 instead of 127.0.0.1
        bool keep_alive = false;    // answer body-less requests without closing (HTTP/1.1 keep-alive)
    };
    TestServer();
    explicit TestServer(const Options& opts);
    ~TestServer();
    TestServer(const TestServer&) = delete;
    TestServer& operator=(const TestServer&) = delete;

    std::uint16_t port() const { return port_; }
    // Connections accepted so far (a TCP handshake counts even without a request).
    int connections() const;
    std::vector<Request> requests() const;
    void set_body(const std::string& path, const std::string& body);
    void serve_dir(const std::string& root);
    void stop();

private:
    struct Impl;
    void handle(int fd, ssl_st* ssl);
    std::unique_ptr<Impl> impl_;
    std::uint16_t port_ = 0;
};

// The proxy's log (--net-log): one JSON object per line; lines that do not parse
// are returned as {"unparsed": LINE} so a test can show them.
std::vector<nlohmann::json> read_log(const std::string& path);
// The entries whose "host" is host (and, when given, whose decision is decision).
std::vector<nlohmann::json> log_entries(const std::vector<nlohmann::json>& log,
                                        const std::string& host, const std::string& decision = {});
std::string dump(const std::vector<nlohmann::json>& log);

// A policy file extending `extends`, with [network] mode/allow/deny and
// [network.hosts] pins ({name, address}); empty mode leaves it unset.
struct NetPolicy {
    std::string extends = "default";
    std::string mode = "proxy";
    std::vector<std::string> allow;
    std::vector<std::string> deny;
    // Entries written as TOML values, verbatim, after the quoted ones: rule tables
    // such as { host = "example.test:8080", methods = ["GET"] }.
    std::vector<std::string> allow_toml;
    std::vector<std::string> deny_toml;
    std::vector<std::pair<std::string, std::string>> hosts;
    std::string extra;  // more TOML appended verbatim
};
std::string toml(const NetPolicy& p);

// The proxy's address inside the sandbox.
inline constexpr const char* kProxy = "http://127.0.0.1:3128";

}  // namespace ajnet
