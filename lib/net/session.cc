// SPDX-License-Identifier: Apache-2.0
// One client connection of the proxy (session.hpp), up to its destination: HTTP
// CONNECT, absolute-form HTTP or SOCKS5 parsed strictly, the destination checked (its
// name, then every address it resolves to), refusals answered and logged. Exactly the
// checked address is connected and relayed by session_relay.cc.
#include <utility>

#include "net/proxy_impl.hpp"
#include "net/session.hpp"

#include "base/time.hpp"

#include "netrules/http.hpp"
#include "net/secret_source.hpp"
#include "netrules/socks.hpp"
#include "util/strings.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <ifaddrs.h>
#include <pthread.h>
#include <signal.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unordered_set>

namespace agentjail::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto head_timeout = std::chrono::seconds(30);

Address from_asio(const asio::ip::address& a) {
    Address r;
    if (a.is_v4()) {
        auto b = a.to_v4().to_bytes();
        std::copy(b.begin(), b.end(), r.bytes.begin());
    } else {
        r.v6 = true;
        auto b = a.to_v6().to_bytes();
        std::copy(b.begin(), b.end(), r.bytes.begin());
    }
    return r;
}

}  // namespace

Session::Session(Proxy::Impl& px, tcp::socket client)
    : px_(px),
      client_(std::move(client)),
      upstream_(*px.io),
      resolver_(*px.io),
      timer_(*px.io),
      started_(std::chrono::system_clock::now()) {
    px_.sessions.insert(this);
}

Session::~Session() {
    px_.sessions.erase(this);
    if (!logged_) log();
    px_.session_gone();  // last: its log line and counts are in
}

void Session::start() {
    error_code ec;
    client_.set_option(tcp::no_delay(true), ec);
    bound_buffers(client_.native_handle(), px_.settings.bounds);
    arm_timer(head_timeout);
    read_head();
}

// Ends the connection now (the proxy is stopping): every pending operation
// completes with operation_aborted and the session goes away, logging itself.
void Session::abort() {
    error_code ec;
    timer_.cancel();
    resolver_.cancel();
    client_.close(ec);
    upstream_.close(ec);
}

void Session::arm_timer(std::chrono::seconds d) {
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
        if (ec) return;
        if (self->connecting_) {
            // The destination does not answer: the client hears why.
            self->timed_out_ = true;
            error_code ignore;
            self->upstream_.close(ignore);
            return;
        }
        // Too slow to send a request: a slowloris client must not hold one of
        // the sandbox's connection slots forever.
        self->abort();
    });
}

void Session::read_head() {
    if (!head_buf_) head_buf_ = std::make_unique<std::array<char, 4096>>();
    client_.async_read_some(
        asio::buffer(*head_buf_), [self = shared_from_this()](const error_code& ec, size_t n) {
            if (ec) return;  // the client went away before saying anything useful
            self->inbuf_.append(self->head_buf_->data(), n);
            self->on_head_data();
        });
}

void Session::on_head_data() {
    if (proto_ == Proto::unknown)
        proto_ = static_cast<unsigned char>(inbuf_[0]) == 0x05 ? Proto::socks : Proto::http;
    if (proto_ == Proto::socks) return on_socks_data();
    ParseResult r = parse_request_head(inbuf_);
    switch (r.status) {
    case ParseStatus::incomplete: return read_head();
    case ParseStatus::bad:
    case ParseStatus::too_large:
        method_ = "?";
        return refuse(400, "Bad Request", r.error, "malformed request: " + r.error);
    case ParseStatus::ok: break;
    }
    req_ = std::move(r.request);
    leftover_ = inbuf_.substr(r.head_size);
    inbuf_.clear();
    method_ = req_.method;
    decide(req_.host, req_.port);
}

// SOCKS5 (RFC 1928): no authentication, CONNECT only, names resolved here
// (socks5h), so the sandbox needs no resolver.
void Session::on_socks_data() {
    if (socks_stage_ == 0) {
        SocksGreeting g = parse_socks_greeting(inbuf_);
        if (g.status == ParseStatus::too_large) return socks_fail(1, "malformed SOCKS5 request");
        if (g.status == ParseStatus::incomplete) return read_head();
        inbuf_.erase(0, g.size);
        if (!g.no_auth) {
            method_ = "SOCKS5";
            reply_and_close(std::string("\x05\xff", 2),
                            "SOCKS5 client offered no 'no authentication' method");
            return;
        }
        socks_stage_ = 1;
        auto self = shared_from_this();
        auto msg = std::make_shared<std::string>("\x05\x00", 2);
        asio::async_write(client_, asio::buffer(*msg),
                          [self, msg](const error_code& ec, size_t) {
                              if (ec) return;
                              if (!self->inbuf_.empty())
                                  self->on_socks_data();
                              else
                                  self->read_head();
                          });
        return;
    }
    method_ = "SOCKS5";
    SocksRequest r = parse_socks_request(inbuf_);
    if (r.status == ParseStatus::incomplete) return read_head();
    if (r.status != ParseStatus::ok) return socks_fail(r.reply, r.error);
    leftover_ = inbuf_.substr(r.size);
    inbuf_.clear();
    decide(r.host, r.port);
}

void Session::socks_fail(unsigned char code, const std::string& why) {
    std::string reply = std::string("\x05", 1) + static_cast<char>(code) +
                        std::string("\x00\x01\0\0\0\0\0\0", 8);
    reply_and_close(reply, why);
}

// The two checks, in order: the name against the rules (before any DNS query,
// so a name that is not allowed never reaches a resolver: NET-02), then each
// address the name stands for (NET-03).
void Session::decide(const std::string& raw_host, std::uint16_t port) {
    port_ = port;
    host_ = normalize_host(raw_host);
    if (host_.empty() || host_.size() > 253)
        return deny("the host name is empty or too long", "default");
    // A name is labels of letters, digits, '-' and '_' between single dots (or an
    // address, normalised above): anything else (',', '/', spaces or a NUL from a
    // SOCKS5 name) is no host and must never reach a resolver or a certificate's
    // alt-name text; nor may an empty label: "denied.test.." is "denied.test." once
    // normalised, which no rule names and every resolver reads as denied.test.
    if (!parse_numeric_host(host_).has_value() && !check_name_syntax(host_).empty())
        return deny("'" + host_ + "' is not a host name", "default");
    NameDecision d = check_name(px_.settings.rules, host_, port);
    rule_ = d.rule;
    gateway_ = d.gateway;
    if (!d.allowed) {
        // An internal address (loopback, private, one of the host's own) not in
        // the allowlist: the refusal says what it is rather than how to allow it.
        if (auto numeric = parse_numeric_host(host_)) {
            std::string bad = check_address(host_, *numeric, px_.own_addresses());
            if (!bad.empty()) return deny(bad, d.rule);
        }
        return deny(d.reason, d.rule);
    }
    connect_port_ = port;
    if (proto_ == Proto::http && !req_.connect) {
        // Plain HTTP: the request is in view, so method and path rules apply to it now.
        bool restricted = needs_requests(px_.settings.rules, host_, port);
        std::string path, query, why;
        if (normalize_path(req_.path, path, query, why)) {
            path_ = path;
            first_path_ = path + query;
        } else if (restricted) {
            return refuse(400, "Bad Request", why, "malformed request: " + why);
        } else {
            first_path_ = req_.path;
        }
        if (restricted || !path_.empty()) {
            RequestDecision rd = check_request(px_.settings.rules, host_, port, method_, path_);
            if (!rd.allowed) return deny(rd.reason, rd.rule);
            rule_ = rd.rule;
        }
        const Gateway* gw = px_.gateway_for(host_, port);
        if (gw != nullptr && gw->loopback && !gw->https) {
            // A loopback gateway over plain HTTP: every request is checked and
            // logged, and its secrets go in without TLS (it never leaves the machine).
            exchange_ = true;
        } else {
            pick_secrets();
            exchange_ = restricted || tls_upstream_;
        }
    } else if (needs_requests(px_.settings.rules, host_, port) ||
               !px_.secrets_for(host_, port).empty()) {
        // A tunnel whose requests must be seen: intercepted with the run's CA.
        // Without a CA (interception off) a restricted host cannot be checked,
        // so it is refused rather than tunnelled blind; a secret's host is
        // tunnelled as before (the placeholder stays a placeholder).
        if (px_.ca) {
            intercept_ = true;
        } else if (needs_requests(px_.settings.rules, host_, port)) {
            return deny(
                host_ + ":" + std::to_string(port) +
                    " has method or path rules, which need TLS interception, and it is off",
                rule_);
        }
    }
    if (d.named_address) {
        // Named by the policy itself (a pin or an exact address rule): no range check.
        endpoints_.emplace_back(to_asio(*d.named_address), connect_port_);
        return allow_and_connect();
    }
    if (auto numeric = parse_numeric_host(host_)) {
        std::string bad = check_address(host_, *numeric, px_.own_addresses());
        if (!bad.empty()) return deny(bad, rule_);
        endpoints_.emplace_back(to_asio(*numeric), connect_port_);
        return allow_and_connect();
    }
    auto self = shared_from_this();
    resolver_.async_resolve(host_, std::to_string(connect_port_),
                            tcp::resolver::numeric_service,
                            [self](const error_code& ec, tcp::resolver::results_type results) {
                                self->on_resolved(ec, std::move(results));
                            });
}

// The secrets whose hosts match this plain-HTTP request: their placeholders are
// replaced in its headers, and the request goes on over TLS (port 80 becomes
// 443), since a real credential must not cross the network in clear.
void Session::pick_secrets() {
    if (px_.secrets_for(host_, port_).empty()) return;
    tls_upstream_ = true;
    if (connect_port_ == 80) connect_port_ = 443;
}

void Session::on_resolved(const error_code& ec, tcp::resolver::results_type results) {
    if (ec == asio::error::operation_aborted) return;
    if (ec || results.empty()) {
        allowed_ = true;
        px_.allowed++;
        reason_ = "cannot resolve " + host_ + ": " + (ec ? ec.message() : "no address");
        return reply_error(502, "Bad Gateway", reason_, 4, "unresolved");
    }
    // Every answer is checked, and only checked answers are connected to: a
    // resolver that mixes a public and a private answer (or a rebinding one)
    // gets the whole name refused.
    for (const auto& entry : results) {
        asio::ip::address a = entry.endpoint().address();
        if (a.is_v6() && a.to_v6().scope_id() != 0)
            return deny(host_ + " resolved to a scoped IPv6 address", rule_);
        // A gateway's origin is the one destination named for what it is (the
        // user's own LiteLLM on a private address, say): not range-checked.
        std::string bad =
            gateway_ ? std::string() : check_address(host_, from_asio(a), px_.own_addresses());
        if (!bad.empty()) return deny(bad, rule_);
        endpoints_.push_back(entry.endpoint());
    }
    allow_and_connect();
}

void Session::deny(const std::string& reason, const std::string& rule) {
    allowed_ = false;
    reason_ = reason;
    rule_ = rule;
    px_.denied++;
    log();  // deny lines are written at once
    if (proto_ == Proto::socks) {
        std::string reply = std::string("\x05\x02\x00\x01\0\0\0\0\0\0", 10);
        return write_and_close(reply);
    }
    px_.refused("policy", host_, port_, method_, path_, reason, rule);
    write_and_close(simple_response(403, "Forbidden", "agentjail: refused by policy: " + reason, "policy"));
}

// A refusal before any destination was known (garbage, unknown method).
void Session::refuse(int code, const char* status, const std::string& body, const std::string& reason) {
    allowed_ = false;
    reason_ = reason;
    rule_ = "default";
    px_.denied++;
    log();
    px_.refused("request", host_, port_, {}, {}, reason, {});
    write_and_close(simple_response(code, status, "agentjail: " + body, "request"));
}

void Session::reply_and_close(const std::string& bytes, const std::string& reason) {
    allowed_ = false;
    reason_ = reason;
    rule_ = "default";
    px_.denied++;
    log();
    write_and_close(bytes);
}

void Session::reply_error(int code, const char* status, const std::string& body, unsigned char socks_code,
                          const char* error) {
    error_ = error;
    px_.refused(error, host_, port_, {}, {}, body, {});
    if (proto_ == Proto::socks) {
        std::string reply = std::string("\x05", 1) + static_cast<char>(socks_code) +
                            std::string("\x00\x01\0\0\0\0\0\0", 8);
        return write_and_close(reply);
    }
    const std::string what = error_ == "unresolved" ? "name not resolved: " : "upstream unreachable: ";
    write_and_close(simple_response(code, status, "agentjail: " + what + body, error_));
}

void Session::write_and_close(std::string bytes) {
    timer_.cancel();
    auto msg = std::make_shared<std::string>(std::move(bytes));
    asio::async_write(client_, asio::buffer(*msg),
                      [self = shared_from_this(), msg](const error_code&, size_t) {
                          error_code ec;
                          self->client_.shutdown(tcp::socket::shutdown_both, ec);
                          self->client_.close(ec);
                      });
}

void Session::log() {
    logged_ = true;
    nlohmann::ordered_json j;
    j["time"] = base::iso8601_utc(started_);
    j["host"] = host_;
    j["port"] = port_;
    j["method"] = method_.empty() ? "?" : method_;
    if (!path_.empty()) j["path"] = path_;
    j["decision"] = allowed_ ? "allow" : "deny";
    // Allowed, but it failed upstream: the log says so beside the decision.
    if (!error_.empty()) j["error"] = error_;
    j["reason"] = reason_;
    j["rule"] = rule_.empty() ? "default" : rule_;
    j["bytes_up"] = bytes_up_;
    j["bytes_down"] = bytes_down_;
    px_.write_log(j);
}

void start_session(Proxy::Impl& px, tcp::socket client) {
    std::make_shared<Session>(px, std::move(client))->start();
}

}  // namespace agentjail::net
