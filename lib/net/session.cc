// SPDX-License-Identifier: Apache-2.0
// One client connection of the proxy, from its first byte to the end of its relay:
// HTTP CONNECT, absolute-form HTTP or SOCKS5 parsed strictly, the destination
// checked (its name, then every address it resolves to), exactly the checked
// address connected, both ways relayed with back-pressure (splice where it can).
#include <utility>

#include "net/proxy_impl.hpp"

#include "base/time.hpp"

#include "netrules/http.hpp"
#include "net/secret_source.hpp"
#include "netrules/socks.hpp"
#include "util/fault.hpp"
#include "util/strings.hpp"
#include "sys/json_lines.hpp"

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

constexpr int splice_budget = 16;

// Takes a SIGPIPE this thread raised off its pending set. The proxy's thread blocks
// SIGPIPE (serve()), so a splice(2) into a socket the client closed, which raises
// SIGPIPE unlike send(MSG_NOSIGNAL), leaves it pending on this thread instead of
// killing the process; it is taken here so that it is not left pending. A
// process-wide SIG_IGN is not used: the library may live in a host that wants its
// own SIGPIPE disposition.
// A pipe for splice(2) relaying, of the run's pipe size (a small pipe: the user's
// pipe quota, pipe-user-pages-soft, is shared by all of the user's programs, and a
// user over it gets 8 KiB pipes everywhere). Not open when the run's pipe budget is
// spent or pipes cannot be had (EMFILE): then the relay copies through a buffer.
struct SplicePipe {
    int r = -1, w = -1;
    size_t pending = 0;  // bytes in the pipe, not yet written on
    size_t* open_count = nullptr;
    SplicePipe() = default;
    bool make(size_t& count, const Bounds& b) {
        if (count >= b.max_pipes) return false;
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return false;
        r = fds[0];
        w = fds[1];
        (void)::fcntl(w, F_SETPIPE_SZ, b.pipe_size);
        open_count = &count;
        ++count;
        return true;
    }
    ~SplicePipe() { close(); }
    SplicePipe(const SplicePipe&) = delete;
    SplicePipe& operator=(const SplicePipe&) = delete;
    bool open() const { return r >= 0; }
    void close() {
        if (r >= 0) ::close(r);
        if (w >= 0) ::close(w);
        if (r >= 0 && open_count != nullptr) --*open_count;
        r = w = -1;
        open_count = nullptr;
    }
};

// One client connection, from its first byte to the end of its relay.
class Session : public Connection, public std::enable_shared_from_this<Session> {
public:
    Session(Proxy::Impl& px, tcp::socket client)
        : px_(px),
          client_(std::move(client)),
          upstream_(*px.io),
          resolver_(*px.io),
          timer_(*px.io),
          started_(std::chrono::system_clock::now()) {
        px_.sessions.insert(this);
    }
    ~Session() {
        px_.sessions.erase(this);
        if (!logged_) log();
        px_.session_gone();  // last: its log line and counts are in
    }

    void start() {
        error_code ec;
        client_.set_option(tcp::no_delay(true), ec);
        bound_buffers(client_.native_handle(), px_.settings.bounds);
        arm_timer(head_timeout);
        read_head();
    }

    // Ends the connection now (the proxy is stopping): every pending operation
    // completes with operation_aborted and the session goes away, logging itself.
    void abort() override {
        error_code ec;
        timer_.cancel();
        resolver_.cancel();
        client_.close(ec);
        upstream_.close(ec);
    }

private:
    enum class Proto { unknown, http, socks };

    void arm_timer(std::chrono::seconds d) {
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

    void read_head() {
        if (!head_buf_) head_buf_ = std::make_unique<std::array<char, 4096>>();
        client_.async_read_some(
            asio::buffer(*head_buf_), [self = shared_from_this()](const error_code& ec, size_t n) {
                if (ec) return;  // the client went away before saying anything useful
                self->inbuf_.append(self->head_buf_->data(), n);
                self->on_head_data();
            });
    }

    void on_head_data() {
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
    void on_socks_data() {
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

    void socks_fail(unsigned char code, const std::string& why) {
        std::string reply = std::string("\x05", 1) + static_cast<char>(code) +
                            std::string("\x00\x01\0\0\0\0\0\0", 8);
        reply_and_close(reply, why);
    }

    // The two checks, in order: the name against the rules (before any DNS query,
    // so a name that is not allowed never reaches a resolver: NET-02), then each
    // address the name stands for (NET-03).
    void decide(const std::string& raw_host, std::uint16_t port) {
        port_ = port;
        host_ = normalize_host(raw_host);
        if (host_.empty() || host_.size() > 253)
            return deny("the host name is empty or too long", "default");
        // A name is letters, digits, '-', '_' and dots (or an address, normalised
        // above): anything else (',', '/', spaces from a SOCKS5 name) is no host
        // and must never reach a resolver or a certificate's alt-name text.
        if (!parse_numeric_host(host_).has_value() &&
            host_.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-_.") != std::string::npos)
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
    void pick_secrets() {
        if (px_.secrets_for(host_, port_).empty()) return;
        tls_upstream_ = true;
        if (connect_port_ == 80) connect_port_ = 443;
    }

    void on_resolved(const error_code& ec, tcp::resolver::results_type results) {
        if (ec == asio::error::operation_aborted) return;
        if (ec || results.empty()) {
            allowed_ = true;
            px_.allowed++;
            reason_ = "cannot resolve " + host_ + ": " + (ec ? ec.message() : "no address");
            return reply_error(502, "Bad Gateway", reason_, 4);
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

    void allow_and_connect() {
        allowed_ = true;
        px_.allowed++;
        reason_ = "allowed";
        connecting_ = true;
        arm_timer(connect_timeout);
        connect_next();
    }

    void connect_next() {
        if (next_endpoint_ >= endpoints_.size()) {
            connecting_ = false;
            reason_ =
                "cannot connect to " + host_ + ":" + std::to_string(port_) + ": " + last_error_;
            return reply_error(502, "Bad Gateway", reason_, 5);
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
                return self->reply_error(504, "Gateway Timeout", self->reason_, 4);
            }
            if (ec) {
                self->last_error_ = ec.message();
                return self->connect_next();
            }
            self->on_connected();
        });
    }

    // The rest of the connection goes to an exchange, which checks every request.
    void hand_over() {
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

    void on_connected() {
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

    void relay_both() {
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

    // One direction with splice(2): drain the pipe into `to`, then refill it from
    // `from`. The pipe is refilled only once it is empty, so a slow reader holds back
    // a fast writer (back-pressure), and EAGAIN from the refill means `from` has no
    // data. Each turn moves at most splice_budget chunks, then yields to the other
    // connections of the loop.
    void pump(tcp::socket& from, tcp::socket& to, SplicePipe& p, std::uint64_t& count) {
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
    void relay(From& from, To& to, std::vector<char>& buf, std::uint64_t& count) {
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

    void deny(const std::string& reason, const std::string& rule) {
        allowed_ = false;
        reason_ = reason;
        rule_ = rule;
        px_.denied++;
        log();  // deny lines are written at once
        if (proto_ == Proto::socks) {
            std::string reply = std::string("\x05\x02\x00\x01\0\0\0\0\0\0", 10);
            return write_and_close(reply);
        }
        write_and_close(simple_response(403, "Forbidden", "agentjail: " + reason));
    }

    // A refusal before any destination was known (garbage, unknown method).
    void refuse(int code, const char* status, const std::string& body, const std::string& reason) {
        allowed_ = false;
        reason_ = reason;
        rule_ = "default";
        px_.denied++;
        log();
        write_and_close(simple_response(code, status, "agentjail: " + body));
    }

    void reply_and_close(const std::string& bytes, const std::string& reason) {
        allowed_ = false;
        reason_ = reason;
        rule_ = "default";
        px_.denied++;
        log();
        write_and_close(bytes);
    }

    void reply_error(int code, const char* status, const std::string& body,
                     unsigned char socks_code) {
        if (proto_ == Proto::socks) {
            std::string reply = std::string("\x05", 1) + static_cast<char>(socks_code) +
                                std::string("\x00\x01\0\0\0\0\0\0", 8);
            return write_and_close(reply);
        }
        write_and_close(simple_response(code, status, "agentjail: " + body));
    }

    void write_and_close(std::string bytes) {
        timer_.cancel();
        auto msg = std::make_shared<std::string>(std::move(bytes));
        asio::async_write(client_, asio::buffer(*msg),
                          [self = shared_from_this(), msg](const error_code&, size_t) {
                              error_code ec;
                              self->client_.shutdown(tcp::socket::shutdown_both, ec);
                              self->client_.close(ec);
                          });
    }

    void log() {
        logged_ = true;
        nlohmann::ordered_json j;
        j["time"] = base::iso8601_utc(started_);
        j["host"] = host_;
        j["port"] = port_;
        j["method"] = method_.empty() ? "?" : method_;
        if (!path_.empty()) j["path"] = path_;
        j["decision"] = allowed_ ? "allow" : "deny";
        j["reason"] = reason_;
        j["rule"] = rule_.empty() ? "default" : rule_;
        j["bytes_up"] = bytes_up_;
        j["bytes_down"] = bytes_down_;
        px_.write_log(j);
    }

    Proxy::Impl& px_;
    tcp::socket client_;
    tcp::socket upstream_;
    tcp::resolver resolver_;
    asio::steady_timer timer_;
    std::chrono::system_clock::time_point started_;
    Proto proto_ = Proto::unknown;
    int socks_stage_ = 0;
    std::unique_ptr<std::array<char, 4096>> head_buf_;
    std::string inbuf_;
    std::string leftover_;
    Request req_;
    std::string host_, method_, reason_, rule_, last_error_;
    std::uint16_t port_ = 0;
    bool allowed_ = false;
    bool logged_ = false;
    bool connecting_ = false;
    bool timed_out_ = false;
    bool tls_upstream_ = false;
    bool gateway_ = false;    // allowed as a model gateway's origin (no range check)
    bool exchange_ = false;   // plain HTTP whose requests the exchange forwards
    bool intercept_ = false;  // a tunnel the exchange intercepts
    std::uint16_t connect_port_ = 0;
    std::string path_;        // the request's normalised path (plain HTTP), for the log
    std::string first_path_;  // with its query, as it goes upstream
    std::vector<tcp::endpoint> endpoints_;
    size_t next_endpoint_ = 0;
    int closed_dirs_ = 0;
    std::uint64_t bytes_up_ = 0, bytes_down_ = 0;
    std::vector<char> up_buf_, down_buf_;
    SplicePipe up_pipe_, down_pipe_;
};

}  // namespace

void start_session(Proxy::Impl& px, tcp::socket client) {
    std::make_shared<Session>(px, std::move(client))->start();
}

}  // namespace agentjail::net
