// SPDX-License-Identifier: Apache-2.0
// Intercepted connections (exchange.hpp): HTTP/1.1 requests parsed one by one
// (keep-alive, Content-Length and chunked bodies), each checked against the method and
// path rules before it goes upstream, secrets put in for their hosts only. Tunnels to
// such hosts are terminated with a leaf of the run's CA and re-originated over
// verified TLS. Bodies are relayed with their own framing by exchange_body.cc.
#include <utility>

#include "net/proxy_impl.hpp"
#include "net/exchange.hpp"

#include "base/time.hpp"

#include "netrules/address.hpp"
#include "netrules/redact.hpp"
#include "netrules/rules.hpp"
#include "netrules/websocket.hpp"

#include <openssl/ssl.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

namespace agentjail::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto idle_timeout = std::chrono::seconds(60);  // between requests
constexpr auto handshake_timeout = std::chrono::seconds(30);

}  // namespace

Exchange::Exchange(Proxy::Impl& px, ExchangeStart&& x)
    : px_(px),
      x_(std::move(x)),
      client_(std::move(x_.client)),
      upstream_(std::move(x_.upstream)),
      timer_(*px.io),
      quiet_timer_(*px.io) {
    px_.sessions.insert(this);
    cbuf_ = std::move(x_.client_bytes);
}

Exchange::~Exchange() {
    px_.sessions.erase(this);
    if (x_.kind == ExchangeStart::Kind::tunnel) log_tunnel();
    px_.session_gone();  // last: its log line and counts are in
}

void Exchange::start() {
    auto self = shared_from_this();
    asio::co_spawn(*px_.io, run(), [self](std::exception_ptr) { self->abort(); });
}

void Exchange::abort() {
    error_code ec;
    timer_.cancel();
    quiet_timer_.cancel();
    client_.close(ec);
    upstream_.close(ec);
}

// A deadline for the next step; when it passes, the connection ends.
void Exchange::arm(std::chrono::seconds d) {
    timer_.expires_after(d);
    std::weak_ptr<Exchange> weak = shared_from_this();
    timer_.async_wait([weak](const error_code& ec) {
        if (ec) return;
        if (auto self = weak.lock()) self->abort();
    });
}

// The upstream leg over verified TLS: SNI and host name checked, HTTP/1.1.
asio::awaitable<bool> Exchange::upstream_handshake() {
    try {
        utls_.emplace(upstream_, px_.tls_client());
    } catch (const std::exception& e) {  // no trust store: no upstream TLS at all
        failure_ = "TLS to " + x_.host + " refused: the proxy's TLS client: " + e.what();
        co_return false;
    }
    SSL* ssl = utls_->native_handle();
    if (!parse_numeric_host(x_.host))
        ::SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                   const_cast<char*>(x_.host.c_str()));
    static const unsigned char h11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_set_alpn_protos(ssl, h11, sizeof h11);
    utls_->set_verify_mode(asio::ssl::verify_peer);
    utls_->set_verify_callback(asio::ssl::host_name_verification(x_.host));
    error_code ec;
    arm(handshake_timeout);
    co_await utls_->async_handshake(asio::ssl::stream_base::client,
                                    asio::redirect_error(asio::use_awaitable, ec));
    disarm();
    if (ec) {
        failure_ = "TLS to " + x_.host + ":" + std::to_string(x_.upstream_port) +
                   " failed: " + ec.message();
        co_return false;
    }
    co_return true;
}

// Ends the client's side: TLS close_notify (a client reading to the end of the
// stream needs it), then the sockets.
asio::awaitable<void> Exchange::finish() {
    if (ctls_) {
        error_code ec;
        arm(std::chrono::seconds(2));
        co_await ctls_->async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
        disarm();
    }
    error_code ec;
    client_.shutdown(tcp::socket::shutdown_both, ec);
    abort();
}

asio::awaitable<void> Exchange::refuse_request(const std::string& why) {
    (void)co_await write(Side::client,
                         simple_response(403, "Forbidden", "agentjail: refused by policy: " + why, "policy"));
    co_await finish();
}

asio::awaitable<void> Exchange::reply(int code, const char* status, const std::string& text) {
    // Inside the intercepted tunnel: the same words and header as a refused tunnel.
    const char* error = code == 403 ? "policy" : code >= 500 ? "unreachable" : "request";
    const char* what = code == 403 ? "refused by policy: " : code >= 500 ? "upstream unreachable: " : "";
    if (code == 403 || code >= 500) px_.refused(code == 403 ? "request" : error, x_.host, x_.port, {}, {}, text, {});
    (void)co_await write(Side::client, simple_response(code, status, "agentjail: " + std::string(what) + text, error));
    co_await finish();
}

// GCC 12 at -O2 inlines asio's frame allocation (awaitable_frame_base::operator new,
// ::operator new underneath) into this coroutine but not the matching operator delete,
// and then reports the pair as mismatched (-Wmismatched-new-delete): a false positive
// of GCC's with class-level allocation functions (GCC PR 109224 is a similar case).
// Silenced for this one function.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
asio::awaitable<void> Exchange::run() {
    bool plain = x_.kind == ExchangeStart::Kind::plain;
    std::uint16_t default_port = 80;
    if (plain) {
        if (x_.upstream_tls && !co_await upstream_handshake()) {
            log_request(x_.first.method, x_.first_path, false, failure_, x_.rule, 502);
            co_return co_await reply(502, "Bad Gateway", failure_);
        }
        replace_ = x_.upstream_tls || x_.inject_plain ? px_.secrets_for(x_.host, x_.port)
                                                      : decltype(replace_){};
    } else {
        // The first byte of the tunnel tells TLS (a handshake record) from plain HTTP.
        arm(handshake_timeout);
        if (cbuf_.empty() && !co_await fill(Side::client)) co_return;
        disarm();
        if (static_cast<unsigned char>(cbuf_[0]) == 0x16) {
            std::string why = "TLS from the client, but this run has no CA to answer it";
            asio::ssl::context* ctx = px_.ca ? px_.ca->server_context(x_.host, why) : nullptr;
            if (ctx == nullptr) {
                log_request("?", "", false, why, x_.rule, 0);
                co_return abort();
            }
            ctls_.emplace(client_, *ctx);
            error_code ec;
            arm(handshake_timeout);
            size_t used = co_await ctls_->async_handshake(
                asio::ssl::stream_base::server, asio::buffer(cbuf_),
                asio::redirect_error(asio::use_awaitable, ec));
            disarm();
            (void)used;
            cbuf_.clear();
            if (ec) {
                // Typically a client that does not trust the run's CA.
                tunnel_note_ = "TLS from the client failed: " + ec.message();
                co_return abort();
            }
            // The client named the host it expects; it must be the one checked.
            const char* sni =
                SSL_get_servername(ctls_->native_handle(), TLSEXT_NAMETYPE_host_name);
            if (sni != nullptr && normalize_host(sni) != x_.host) {
                std::string why2 = "the TLS server name " + std::string(sni) +
                                   " is not the tunnel's host " + x_.host;
                log_request("?", "", false, why2, "default", 421);
                co_return co_await reply(421, "Misdirected Request", why2);
            }
            default_port = 443;
            if (!co_await upstream_handshake()) {
                log_request("?", "", false, failure_, x_.rule, 502);
                co_return co_await reply(502, "Bad Gateway", failure_);
            }
            // Secrets go only where the upstream leg is TLS.
            replace_ = px_.secrets_for(x_.host, x_.port);
        } else if (x_.upstream_tls) {
            // A gateway's https origin, spoken to in plain HTTP on its listener
            // inside: the upstream leg is TLS all the same.
            if (!co_await upstream_handshake()) {
                log_request("?", "", false, failure_, x_.rule, 502);
                co_return co_await reply(502, "Bad Gateway", failure_);
            }
            replace_ = px_.secrets_for(x_.host, x_.port);
        } else if (x_.inject_plain) {
            // A loopback gateway's plain-HTTP origin: the value never leaves the machine.
            replace_ = px_.secrets_for(x_.host, x_.port);
        }
    }

    for (bool first = true;; first = false) {
        Request r;
        std::string target;
        if (plain && first) {
            r = std::move(x_.first);
            target = x_.first_path;
        } else if (plain) {
            co_return co_await finish();  // one request per plain connection
        } else {
            arm(idle_timeout);
            ParseResult pr;
            for (;;) {
                pr = parse_request_head(cbuf_, TargetForm::origin);
                if (pr.status != ParseStatus::incomplete) break;
                if (!co_await fill(Side::client)) co_return abort();  // the client is done
            }
            disarm();
            if (pr.status != ParseStatus::ok) {
                log_request("?", "", false, "malformed request: " + pr.error, "default", 400);
                co_return co_await reply(400, "Bad Request", pr.error);
            }
            cbuf_.erase(0, pr.head_size);
            r = std::move(pr.request);
            // Host names the virtual host: it must be the one the tunnel was checked for
            // (without a port it means the tunnel's).
            std::string host_name;
            std::uint16_t host_port = 0;
            const std::string* host_header = find_header(r.headers, "host");
            if (host_header == nullptr ||
                !split_authority(*host_header, x_.port, host_name, host_port) ||
                normalize_host(host_name) != x_.host || host_port != x_.port) {
                std::string why = "Host " + r.host + " is not the tunnel's host " + x_.host;
                log_request(r.method, "", false, why, "default", 421);
                co_return co_await reply(421, "Misdirected Request", why);
            }
            std::string path, query, why;
            if (!normalize_path(r.path, path, query, why)) {
                log_request(r.method, r.path, false, why, "default", 400);
                co_return co_await reply(400, "Bad Request", why);
            }
            RequestDecision d =
                check_request(px_.settings.rules, x_.host, x_.port, r.method, path);
            // Frameworks that honour a method-override header run the request as
            // that method: it must pass the rules as well.
            for (const char* override_header : {"x-http-method-override", "x-http-method", "x-method-override"}) {
                const std::string* v = find_header(r.headers, override_header);
                if (!d.allowed || v == nullptr) continue;
                std::string m;
                for (char ch : *v)
                    if (ch != ' ' && ch != '\t') m += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
                d = check_request(px_.settings.rules, x_.host, x_.port, m, path);
            }
            if (!d.allowed) {
                px_.denied++;
                log_request(r.method, path, false, d.reason, d.rule, 403);
                px_.refused("policy", x_.host, x_.port, r.method, path, d.reason, d.rule);
                co_return co_await refuse_request(d.reason);
            }
            rule_ = d.rule;
            target = path + query;
        }
        std::string path_only = target.substr(0, target.find('?'));
        Body req_body;
        std::string why;
        if (!request_body(r, req_body, why)) {
            log_request(r.method, path_only, false, why, "default", 400);
            co_return co_await reply(400, "Bad Request", why);
        }
        bool keep_alive = !plain && r.version == "HTTP/1.1" &&
                          !header_has_token(r.headers, "connection", "close");
        std::uint64_t up0 = bytes_up_, down0 = bytes_down_;
        if (header_has_token(r.headers, "expect", "100-continue") &&
            req_body.framing != Framing::none &&
            !co_await write(Side::client, "HTTP/1.1 100 Continue\r\n\r\n"))
            co_return abort();
        // TRACE echoes the request's headers in its body: on a host a secret is
        // bound to, that would hand the real value back into the sandbox.
        if (r.method == "TRACE" && !replace_.empty()) {
            std::string no = "TRACE is refused on a host a secret is bound to (the response would echo it)";
            log_request(r.method, path_only, false, no, rule_.empty() ? x_.rule : rule_, 403);
            co_return co_await reply(403, "Forbidden", no);
        }
        // A WebSocket handshake, checked above like any request, goes on with its
        // Upgrade; its client may send frames only after the 101, so bytes already
        // behind its head would be something the proxy never checked, sent into a
        // stream it will relay blind (smuggling): refused.
        bool ws = websocket_upgrade(r);
        if (ws && !cbuf_.empty()) {
            std::string no = "bytes after a WebSocket handshake, before its answer";
            log_request(r.method, path_only, false, no, "default", 400);
            co_return co_await reply(400, "Bad Request", no);
        }
        std::string head = exchange_head(r, target, x_.host, x_.port, plain ? 80 : default_port,
                                         keep_alive, replace_, ws);
        if (!co_await write(Side::upstream, head) ||
            !co_await body(Side::client, Side::upstream, req_body)) {
            log_request(r.method, path_only, true,
                        "the connection broke while sending the request",
                        rule_.empty() ? x_.rule : rule_, 0, up0, down0);
            co_return abort();
        }
        // The response: interim 1xx heads go through, then the final one.
        ResponseParse rp;
        for (;;) {
            for (;;) {
                rp = parse_response_head(ubuf_);
                if (rp.status != ParseStatus::incomplete) break;
                if (!co_await fill(Side::upstream)) break;
            }
            if (rp.status == ParseStatus::ok && rp.response.status >= 100 &&
                rp.response.status < 200 && rp.response.status != 101) {
                std::string interim = redact_head(ubuf_.substr(0, rp.head_size), replace_);
                ubuf_.erase(0, rp.head_size);
                if (!co_await write(Side::client, interim)) co_return abort();
                continue;
            }
            break;
        }
        // A 101 is taken only as the answer to a WebSocket handshake the proxy sent,
        // and only when it answers that handshake's key: then the connection is a
        // two-way relay for the rest of its life. A 101 to anything else (the
        // origin switching a checked request to a stream nobody checks) is a 502.
        std::string switch_why = "an unexpected protocol switch";
        if (rp.status == ParseStatus::ok && rp.response.status == 101 && ws &&
            websocket_switched(r, rp.response, switch_why)) {
            std::string rhead = redact_head(ubuf_.substr(0, rp.head_size), replace_);
            ubuf_.erase(0, rp.head_size);
            if (!co_await write(Side::client, rhead)) co_return abort();
            ++requests_;
            co_return co_await websocket_relay(r.method, path_only, rule_.empty() ? x_.rule : rule_,
                                               up0, down0);
        }
        if (rp.status != ParseStatus::ok || rp.response.status == 101) {
            std::string what = rp.status == ParseStatus::incomplete
                                   ? "no response from " + x_.host
                               : rp.status == ParseStatus::ok
                                   ? switch_why + " from " + x_.host
                                   : "a malformed response from " + x_.host + ": " + rp.error;
            log_request(r.method, path_only, true, what, rule_.empty() ? x_.rule : rule_, 502,
                        up0, down0);
            co_return co_await reply(502, "Bad Gateway", what);
        }
        Body resp_body;
        if (!response_body(rp.response, r.method, resp_body, why)) {
            log_request(r.method, path_only, true, why, rule_.empty() ? x_.rule : rule_, 502,
                        up0, down0);
            co_return co_await reply(502, "Bad Gateway",
                                     "a response from " + x_.host + ": " + why);
        }
        // An origin may echo a credential header in its response's (CORS puts
        // Origin in Access-Control-Allow-Origin; debug endpoints echo more): the
        // sandbox gets the placeholder back, never the value.
        std::string rhead = redact_head(ubuf_.substr(0, rp.head_size), replace_);
        ubuf_.erase(0, rp.head_size);
        bool ok = co_await write(Side::client, rhead);
        ok = ok && co_await body(Side::upstream, Side::client, resp_body);
        ++requests_;
        log_request(r.method, path_only, true, "allowed", rule_.empty() ? x_.rule : rule_,
                    rp.response.status, up0, down0);
        if (resp_body.framing == Framing::until_close) co_return co_await finish();
        if (!ok) co_return abort();
        // More bytes after the response's end answer a request the proxy never sent
        // (the upstream read one it did not check): never hand them to the client.
        if (!ubuf_.empty()) co_return co_await finish();
        if (!keep_alive || header_has_token(rp.response.headers, "connection", "close") ||
            rp.response.version == "HTTP/1.0")
            co_return co_await finish();
    }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

void Exchange::log_request(const std::string& method, const std::string& path, bool allowed,
                           const std::string& reason, const std::string& rule, int status,
                           std::uint64_t up0, std::uint64_t down0) {
    nlohmann::ordered_json j;
    j["time"] = base::iso8601_now();
    j["host"] = x_.host;
    j["port"] = x_.port;
    j["method"] = method.empty() ? "?" : method;
    j["path"] = path;
    j["decision"] = allowed ? "allow" : "deny";
    j["reason"] = reason;
    j["rule"] = rule.empty() ? "default" : rule;
    j["status"] = status;
    j["intercepted"] = ctls_ ? "tls" : "http";
    j["bytes_up"] = bytes_up_ - up0;
    j["bytes_down"] = bytes_down_ - down0;
    px_.write_log(j);
}

void Exchange::log_tunnel() {
    nlohmann::ordered_json j;
    j["time"] = base::iso8601_utc(x_.started);
    j["host"] = x_.host;
    j["port"] = x_.port;
    j["method"] = x_.method.empty() ? "?" : x_.method;
    j["decision"] = "allow";
    std::string reason = "allowed, intercepted (" + std::to_string(requests_) + " requests)";
    if (websocket_) reason += "; then a WebSocket";
    if (!tunnel_note_.empty()) reason += "; " + tunnel_note_;
    j["reason"] = reason;
    j["rule"] = x_.rule.empty() ? "default" : x_.rule;
    j["bytes_up"] = bytes_up_;
    j["bytes_down"] = bytes_down_;
    px_.write_log(j);
}

void start_exchange(Proxy::Impl& px, ExchangeStart&& start) {
    std::make_shared<Exchange>(px, std::move(start))->start();
}

}  // namespace agentjail::net
