// SPDX-License-Identifier: Apache-2.0
// A proxy session (session.hpp) once its destination is checked: exactly the checked
// address connected, the connection handed to an exchange when its requests must be
// seen, otherwise both ways relayed with back-pressure (splice where it can).
#include "net/proxy_impl.hpp"
#include "net/session.hpp"

#include "util/fault.hpp"
#include "sys/json_lines.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <fcntl.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

namespace agentjail::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

void Session::allow_and_connect() {
    allowed_ = true;
    px_.allowed++;
    reason_ = "allowed";
    connecting_ = true;
    arm_timer(connect_timeout);
    connect_next();
}

void Session::connect_next() {
    if (next_endpoint_ >= endpoints_.size()) {
        connecting_ = false;
        reason_ =
            "cannot connect to " + host_ + ":" + std::to_string(port_) + ": " + last_error_;
        return reply_error(502, "Bad Gateway", reason_, 5, "unreachable");
    }
    tcp::endpoint ep = endpoints_[next_endpoint_++];
    error_code ignore;
    upstream_.close(ignore);
    // Opened here, not by async_connect, so that the buffers are bounded before
    // the handshake (the window it announces follows them).
    upstream_.open(ep.protocol(), ignore);
    if (!ignore) bound_buffers(upstream_.native_handle(), px_.settings.bounds);
    upstream_.async_connect(ep, [self = shared_from_this()](const error_code& ec) {
        if (ec == asio::error::operation_aborted || self->timed_out_) {
            if (!self->timed_out_) return;  // the proxy is stopping
            self->connecting_ = false;
            self->reason_ = "cannot connect to " + self->host_ + ":" +
                            std::to_string(self->port_) + ": timed out";
            return self->reply_error(504, "Gateway Timeout", self->reason_, 4, "unreachable");
        }
        if (ec) {
            self->last_error_ = ec.message();
            return self->connect_next();
        }
        self->on_connected();
    });
}

// The rest of the connection goes to an exchange, which checks every request.
void Session::hand_over() {
    ExchangeStart x(std::move(client_), std::move(upstream_));
    x.kind = exchange_ ? ExchangeStart::Kind::plain : ExchangeStart::Kind::tunnel;
    x.host = host_;
    x.port = port_;
    x.upstream_port = connect_port_;
    x.client_bytes = std::move(leftover_);
    x.first = std::move(req_);
    x.first_path = first_path_;
    x.upstream_tls = tls_upstream_;
    const Gateway* gw = px_.gateway_for(host_, port_);
    x.inject_plain = gw != nullptr && gw->loopback && !gw->https;
    x.method = method_;
    x.rule = rule_;
    x.started = started_;
    logged_ = true;  // the exchange logs each request, and the tunnel when it ends
    start_exchange(px_, std::move(x));
}

void Session::on_connected() {
    connecting_ = false;
    timer_.cancel();
    error_code ignore;
    upstream_.set_option(tcp::no_delay(true), ignore);
    auto self = shared_from_this();
    if (exchange_) return hand_over();
    std::string to_client, to_upstream;
    if (proto_ == Proto::socks) {
        to_client = std::string("\x05\x00\x00\x01\0\0\0\0\0\0", 10);
        to_upstream = leftover_;
    } else if (req_.connect) {
        to_client = "HTTP/1.1 200 Connection established\r\n\r\n";
        to_upstream = leftover_;  // a client may send its TLS hello without waiting
    } else {
        to_upstream = origin_form_head(req_) + leftover_;
    }
    if (intercept_) {
        // The tunnel is answered here; what the client sends through it is the
        // exchange's (its first bytes tell TLS from plain HTTP).
        auto down = std::make_shared<std::string>(std::move(to_client));
        asio::async_write(client_, asio::buffer(*down),
                          [self, down](const error_code& ec, size_t) {
                              if (ec) return self->abort();
                              self->hand_over();
                          });
        return;
    }
    leftover_.clear();
    bytes_up_ += to_upstream.size();
    auto up = std::make_shared<std::string>(std::move(to_upstream));
    auto down = std::make_shared<std::string>(std::move(to_client));
    auto start_relay = [self, up]() {
        if (up->empty()) return self->relay_both();
        auto then = [self, up](const error_code& ec, size_t) {
            if (ec) return self->abort();
            self->relay_both();
        };
        asio::async_write(self->upstream_, asio::buffer(*up), then);
    };
    if (down->empty()) return start_relay();
    asio::async_write(client_, asio::buffer(*down),
                      [self, down, start_relay](const error_code& ec, size_t) {
                          if (ec) return self->abort();
                          start_relay();
                      });
}

void Session::relay_both() {
    (void)fault::hit("proxy.tunnel");
    if (up_pipe_.make(px_.pipes_open, px_.settings.bounds) &&
        down_pipe_.make(px_.pipes_open, px_.settings.bounds)) {
        // Both ends are plain TCP: the kernel moves the bytes (socket -> pipe ->
        // socket), nothing is copied through this process.
        error_code ignore;
        client_.native_non_blocking(true, ignore);
        upstream_.native_non_blocking(true, ignore);
        pump(client_, upstream_, up_pipe_, bytes_up_);
        pump(upstream_, client_, down_pipe_, bytes_down_);
        return;
    }
    up_pipe_.close();
    down_pipe_.close();
    up_buf_.resize(px_.settings.bounds.copy_buffer);
    down_buf_.resize(px_.settings.bounds.copy_buffer);
    relay(client_, upstream_, up_buf_, bytes_up_);
    relay(upstream_, client_, down_buf_, bytes_down_);
}

namespace {

// The most splice(2) chunks one call of pump() moves before it yields to the loop.
constexpr int splice_budget = 16;

}  // namespace

// One direction with splice(2): drain the pipe into `to`, then refill it from
// `from`. The pipe is refilled only once it is empty, so a slow reader holds back
// a fast writer (back-pressure), and EAGAIN from the refill means `from` has no
// data. Each turn moves at most splice_budget chunks, then yields to the other
// connections of the loop.
void Session::pump(tcp::socket& from, tcp::socket& to, SplicePipe& p, std::uint64_t& count) {
    auto self = shared_from_this();
    auto again = [self, &from, &to, &p, &count](const error_code& ec) {
        if (ec) return self->abort();
        self->pump(from, to, p, count);
    };
    for (int turn = 0; turn < splice_budget; ++turn) {
        while (p.pending > 0) {
            ssize_t n = ::splice(p.r, nullptr, to.native_handle(), nullptr, p.pending,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                p.pending -= static_cast<size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) return to.async_wait(tcp::socket::wait_write, again);
            // EPIPE: the reader closed early (curl | head -c 3). splice raised
            // SIGPIPE at this thread, which blocks it: taken off, and only this
            // connection ends.
            if (n < 0 && errno == EPIPE) sys::drain_sigpipe();
            return abort();
        }
        ssize_t n = ::splice(from.native_handle(), nullptr, p.w, nullptr,
                             static_cast<size_t>(px_.settings.bounds.pipe_size),
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            p.pending = static_cast<size_t>(n);
            count += static_cast<std::uint64_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return from.async_wait(tcp::socket::wait_read, again);
        if (n == 0) {
            error_code ignore;
            to.shutdown(tcp::socket::shutdown_send, ignore);
            if (++closed_dirs_ == 2) abort();
            return;
        }
        return abort();
    }
    asio::post(*px_.io, [again] { again(error_code()); });
}

// One direction: read, write all of it, read again. The next read waits for
// the write, so a slow reader holds back a fast writer (back-pressure) and
// a connection never holds more than one buffer per direction.
template <class From, class To>
void Session::relay(From& from, To& to, std::vector<char>& buf, std::uint64_t& count) {
    auto self = shared_from_this();
    from.async_read_some(
        asio::buffer(buf), [self, &from, &to, &buf, &count](const error_code& ec, size_t n) {
            if (ec) {
                error_code ignore;
                // A TLS server that closes without close_notify ends its stream all the same.
                if (ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
                    // Half-close: pass the end of this direction on, keep the other open.
                    to.shutdown(tcp::socket::shutdown_send, ignore);
                    if (++self->closed_dirs_ == 2) self->abort();
                } else {
                    self->abort();
                }
                return;
            }
            count += n;
            asio::async_write(to, asio::buffer(buf.data(), n),
                              [self, &from, &to, &buf, &count](const error_code& wec, size_t) {
                                  if (wec) return self->abort();
                                  self->relay(from, to, buf, count);
                              });
        });
}

}  // namespace agentjail::net
