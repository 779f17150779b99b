// SPDX-License-Identifier: Apache-2.0
// An intercepted connection of the proxy (an Exchange), private to lib/net: its state
// and its steps, the requests checked one by one (exchange.cc) and the bytes of either
// side read, written and relayed by their framing (exchange_body.cc).
#pragma once

#include "net/proxy_impl.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::net {

class Exchange : public Connection, public std::enable_shared_from_this<Exchange> {
public:
    Exchange(Proxy::Impl& px, ExchangeStart&& x);
    ~Exchange() override;

    void start();
    void abort() override;

private:
    enum class Side { client, upstream };

    // The connection's course: deadlines, TLS on both legs, every request checked
    // and its response relayed, the log lines (exchange.cc).
    void arm(std::chrono::seconds d);
    void disarm() { timer_.cancel(); }
    boost::asio::awaitable<bool> upstream_handshake();
    boost::asio::awaitable<void> finish();
    boost::asio::awaitable<void> reply(int code, const char* status, const std::string& text);
    // A request a method or path rule refuses: 403, tallied by the caller (with the
    // request's method and path) rather than by reply().
    boost::asio::awaitable<void> refuse_request(const std::string& why);
    boost::asio::awaitable<void> run();
    void log_request(const std::string& method, const std::string& path, bool allowed,
                     const std::string& reason, const std::string& rule, int status,
                     std::uint64_t up0 = 0, std::uint64_t down0 = 0);
    void log_tunnel();

    // Bytes read, written and relayed by their framing (exchange_body.cc).
    std::string& buf(Side s) { return s == Side::client ? cbuf_ : ubuf_; }
    boost::asio::awaitable<bool> fill(Side s);
    boost::asio::awaitable<bool> write(Side s, std::string_view data);
    boost::asio::awaitable<bool> copy(Side from, Side to, std::uint64_t n, Redactor* red = nullptr,
                                      bool framed = false);
    boost::asio::awaitable<bool> send_piece(Side to, const std::string& part, bool framed);
    boost::asio::awaitable<bool> line(Side from, std::string& out, Redactor* red = nullptr);
    // Whether a read of `from` would return at once (bytes buffered here, in TLS or
    // in the socket).
    bool readable_now(Side from);
    // Waits until `from` has bytes to read or quiet_period passes; true: it passed.
    boost::asio::awaitable<bool> quiet(Side from);
    // Before a read of `from` that may wait: when the redactor holds bytes and the
    // origin stays quiet, they go to `to`, so nothing waits for bytes that may never come.
    boost::asio::awaitable<bool> settle(Side from, Side to, Redactor* red, bool framed);
    boost::asio::awaitable<bool> body(Side from, Side to, Body b);
    boost::asio::awaitable<void> websocket_relay(std::string method, std::string path, std::string rule,
                                                 std::uint64_t up0, std::uint64_t down0);
    boost::asio::awaitable<void> websocket_up();

    Proxy::Impl& px_;
    ExchangeStart x_;
    boost::asio::ip::tcp::socket client_;
    boost::asio::ip::tcp::socket upstream_;
    boost::asio::steady_timer timer_;
    // The quiet period's timer (quiet()), and which wait is the current one: a wait on
    // the socket left from an earlier one must not end a later one's timer.
    boost::asio::steady_timer quiet_timer_;
    std::uint64_t quiet_wait_ = 0;
    std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> ctls_, utls_;
    std::string cbuf_, ubuf_;
    std::vector<SecretUse> replace_;
    std::string rule_, failure_, tunnel_note_;
    std::uint64_t bytes_up_ = 0, bytes_down_ = 0;
    int requests_ = 0;
    bool websocket_ = false;  // switched to a WebSocket relay
};

}  // namespace agentjail::net
