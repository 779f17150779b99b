// SPDX-License-Identifier: Apache-2.0
// Model gateways on loopback (docs/network.md): the listeners the sandbox's init
// opened at a gateway's loopback address inside the sandbox, each connection on
// them connected to the same origin on the host's loopback and handed to an
// exchange (exchange.cc), which parses, checks and logs every request and puts the
// gateway's secrets in. Nothing else of the host's loopback is reachable this way:
// the proxy connects to exactly the gateway's address and port.
#include <utility>

#include "net/proxy_impl.hpp"

#include "base/time.hpp"


#include <boost/asio.hpp>

#include <sys/socket.h>

#include <chrono>
#include <memory>

namespace agentjail::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// One connection on a gateway's listener until its upstream is connected; then the
// exchange owns both sockets.
class GatewayConnect : public Connection, public std::enable_shared_from_this<GatewayConnect> {
public:
    GatewayConnect(Proxy::Impl& px, tcp::socket client, size_t gateway)
        : px_(px),
          gw_(px.settings.gateways[gateway]),
          client_(std::move(client)),
          upstream_(*px.io),
          timer_(*px.io),
          started_(std::chrono::system_clock::now()) {
        px_.sessions.insert(this);
    }
    ~GatewayConnect() override {
        px_.sessions.erase(this);
        px_.session_gone();
    }

    void start() {
        error_code ec;
        client_.set_option(tcp::no_delay(true), ec);
        tcp::endpoint ep(to_asio(gw_.address), gw_.port);
        upstream_.open(ep.protocol(), ec);
        if (ec) return fail("cannot open a socket: " + ec.message());
        int v = px_.settings.bounds.socket_buffer;
        (void)::setsockopt(upstream_.native_handle(), SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
        (void)::setsockopt(upstream_.native_handle(), SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
        auto self = shared_from_this();
        timer_.expires_after(connect_timeout);
        timer_.async_wait([self](const error_code& e) {
            if (e) return;
            error_code ignore;
            self->timed_out_ = true;
            self->upstream_.close(ignore);
        });
        upstream_.async_connect(ep, [self](const error_code& e) {
            self->timer_.cancel();
            if (e == asio::error::operation_aborted && !self->timed_out_) return;  // stopping
            if (e || self->timed_out_)
                return self->fail(
                    "cannot connect to " + self->gw_.host + ":" + std::to_string(self->gw_.port) +
                    " on the host: " + (self->timed_out_ ? "timed out" : e.message()));
            self->hand_over();
        });
    }

    void abort() override {
        error_code ec;
        timer_.cancel();
        client_.close(ec);
        upstream_.close(ec);
    }

private:
    void hand_over() {
        error_code ignore;
        upstream_.set_option(tcp::no_delay(true), ignore);
        px_.allowed++;
        ExchangeStart x(std::move(client_), std::move(upstream_));
        x.kind = ExchangeStart::Kind::tunnel;
        x.host = gw_.host;
        x.port = gw_.port;
        x.upstream_port = gw_.port;
        x.upstream_tls = gw_.https;
        x.inject_plain = !gw_.https;  // loopback: the value never leaves the machine
        x.method = "GATEWAY";
        x.rule = "gateway $" + gw_.var;
        x.started = started_;
        start_exchange(px_, std::move(x));
    }

    void fail(const std::string& why) {
        px_.allowed++;
        nlohmann::ordered_json j;
        j["time"] = base::iso8601_utc(started_);
        j["host"] = gw_.host;
        j["port"] = gw_.port;
        j["method"] = "GATEWAY";
        j["decision"] = "error";
        j["reason"] = why;
        j["rule"] = "gateway $" + gw_.var;
        j["bytes_up"] = 0;
        j["bytes_down"] = 0;
        px_.write_log(j);
        auto self = shared_from_this();
        auto msg =
            std::make_shared<std::string>(simple_response(502, "Bad Gateway", "agentjail: " + why));
        asio::async_write(client_, asio::buffer(*msg), [self, msg](const error_code&, size_t) {
            error_code e;
            self->client_.shutdown(tcp::socket::shutdown_both, e);
            self->client_.close(e);
        });
    }

    Proxy::Impl& px_;
    const Gateway& gw_;
    tcp::socket client_;
    tcp::socket upstream_;
    asio::steady_timer timer_;
    std::chrono::system_clock::time_point started_;
    bool timed_out_ = false;
};

}  // namespace

void Proxy::Impl::accept_gateway(tcp::acceptor& a, size_t gateway) {
    a.async_accept([this, &a, gateway](const error_code& ec, tcp::socket s) {
        if (stopping) return;
        if (ec) {
            if (ec == asio::error::operation_aborted) return;
            // Out of descriptors and the like: try again shortly rather than spin.
            auto t = std::make_shared<asio::steady_timer>(*io, std::chrono::milliseconds(50));
            t->async_wait([this, t, &a, gateway](const error_code&) {
                if (!stopping) accept_gateway(a, gateway);
            });
            return;
        }
        if (sessions.size() >= settings.max_connections) {
            // The same bound as the proxy's own listener: answered and closed.
            denied++;
            refuse_over_limit(std::move(s));
        } else {
            std::make_shared<GatewayConnect>(*this, std::move(s), gateway)->start();
        }
        accept_gateway(a, gateway);
    });
}

}  // namespace agentjail::net
