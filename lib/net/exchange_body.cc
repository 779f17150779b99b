// SPDX-License-Identifier: Apache-2.0
// The bytes of an intercepted connection (exchange.hpp): reads and writes on either
// side, over TLS or not; bodies relayed as their framing delimits them, with every
// secret's value masked on the way to the client; and the two-way relay after a
// WebSocket handshake.
#include "net/proxy_impl.hpp"
#include "net/exchange.hpp"

#include "netrules/chunked.hpp"
#include "netrules/redact.hpp"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

namespace agentjail::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// One read of an intercepted stream (the coroutine frame holding it is per connection).
constexpr size_t chunk = 16 * 1024;

// How long the origin must send nothing before the bytes the redactor holds back
// (its fixed window, redact.hpp) go on to the sandbox. Long against the gaps inside
// a response that an origin writes in pieces (its own small writes, TCP segments,
// TLS records: microseconds, a few milliseconds on a busy host), since a value cut
// by such a pause would go out in two unmasked halves; short enough that the end of
// a streamed response (server-sent events, a model's tokens) is not held up much.
// When the window goes depends on the origin's timing only, never on the bytes, so
// it tells the sandbox nothing about the secret (issue 26). Not "nothing readable at
// this instant": an origin writing 7 bytes at a time leaves that between any two.
constexpr std::chrono::milliseconds quiet_period{200};

}  // namespace

// Reads more bytes from a side into its buffer; false at the end or on an error.
asio::awaitable<bool> Exchange::fill(Side s) {
    std::array<char, chunk> tmp;
    error_code ec;
    size_t n = 0;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    if (s == Side::client && ctls_)
        n = co_await ctls_->async_read_some(asio::buffer(tmp), token);
    else if (s == Side::client)
        n = co_await client_.async_read_some(asio::buffer(tmp), token);
    else if (utls_)
        n = co_await utls_->async_read_some(asio::buffer(tmp), token);
    else
        n = co_await upstream_.async_read_some(asio::buffer(tmp), token);
    if (n > 0) buf(s).append(tmp.data(), n);
    co_return n > 0;
}

bool Exchange::readable_now(Side from) {
    if (!buf(from).empty()) return true;
    auto& tls = from == Side::client ? ctls_ : utls_;
    if (tls) {
        SSL* ssl = tls->native_handle();
        if (SSL_pending(ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0) return true;
    }
    error_code ec;
    const size_t n = (from == Side::client ? client_ : upstream_).available(ec);
    return !ec && n > 0;
}

// A wait on the socket raced with a timer (Boost 1.74 has no awaitable operators):
// the coroutine waits on the timer, and the socket's readiness ends that wait early.
// Never socket.cancel() here: it would cancel every operation on the socket, the
// WebSocket relay's writes to the origin included, which run beside this wait. A
// wait left on the socket when the timer wins ends at the next byte or at close;
// it then finds quiet_wait_ moved on and does nothing.
asio::awaitable<bool> Exchange::quiet(Side from) {
    const std::uint64_t mine = ++quiet_wait_;
    quiet_timer_.expires_after(quiet_period);
    std::weak_ptr<Exchange> weak = shared_from_this();
    (from == Side::client ? client_ : upstream_)
        .async_wait(tcp::socket::wait_read, [weak, mine](const error_code&) {
            auto self = weak.lock();
            if (self && self->quiet_wait_ == mine) self->quiet_timer_.cancel();
        });
    error_code ec;
    co_await quiet_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    ++quiet_wait_;
    co_return !ec;
}

asio::awaitable<bool> Exchange::settle(Side from, Side to, Redactor* red, bool framed) {
    if (red == nullptr || red->held() == 0 || readable_now(from)) co_return true;
    if (!co_await quiet(from)) co_return true;  // bytes came (or the socket closed): read them
    const std::string held = red->finish();
    co_return co_await send_piece(to, held, framed);
}

asio::awaitable<bool> Exchange::write(Side s, std::string_view data) {
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    if (s == Side::client) {
        if (ctls_)
            co_await asio::async_write(*ctls_, asio::buffer(data), token);
        else
            co_await asio::async_write(client_, asio::buffer(data), token);
        bytes_down_ += data.size();
    } else {
        if (utls_)
            co_await asio::async_write(*utls_, asio::buffer(data), token);
        else
            co_await asio::async_write(upstream_, asio::buffer(data), token);
        bytes_up_ += data.size();
    }
    co_return !ec;
}

// Moves exactly n body bytes from one side to the other. With `red`, the bytes
// pass through the redactor first (what it holds back goes out later), and with
// `framed` each piece it lets go is sent as a chunk of its own.
asio::awaitable<bool> Exchange::copy(Side from, Side to, std::uint64_t n, Redactor* red,
                                     bool framed) {
    while (n > 0) {
        std::string& b = buf(from);
        if (b.empty()) {
            if (!co_await settle(from, to, red, framed)) co_return false;
            if (!co_await fill(from)) co_return false;
        }
        size_t take = static_cast<size_t>(std::min<std::uint64_t>(n, b.size()));
        std::string part = b.substr(0, take);
        b.erase(0, take);
        n -= take;
        if (red != nullptr) part = red->feed(part);
        if (!co_await send_piece(to, part, framed)) co_return false;
    }
    co_return true;
}

asio::awaitable<bool> Exchange::send_piece(Side to, const std::string& part, bool framed) {
    if (part.empty()) co_return true;
    if (!framed) co_return co_await write(to, part);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    co_return co_await write(to, size + part + "\r\n");
}

// One CRLF-terminated line of a chunked body (kept with its CRLF; chunked.hpp
// checks what it holds). false when the stream ends or the line is too long. With
// `red`, what it holds goes to the client as a chunk when the origin is quiet
// between chunks (an event stream's pause).
asio::awaitable<bool> Exchange::line(Side from, std::string& out, Redactor* red) {
    for (;;) {
        std::string& b = buf(from);
        size_t eol = b.find("\r\n");
        if (eol != std::string::npos) {
            out = b.substr(0, eol + 2);
            b.erase(0, eol + 2);
            co_return true;
        }
        if (b.size() > max_chunk_line) co_return false;
        if (!co_await settle(from, Side::client, red, true)) co_return false;
        if (!co_await fill(from)) co_return false;
    }
}

// A body, relayed as its framing delimits it. false: the stream is broken (or,
// for until_close, ended), and the connection ends. Towards the client on a
// connection that carries secrets, every real value is masked (redact.hpp): a
// length body keeps its length (the mask is as long as the value); a chunked
// body is sent on in chunks of what the redactor lets go, so a value split
// across two chunks or two reads is found all the same.
asio::awaitable<bool> Exchange::body(Side from, Side to, Body b) {
    std::optional<Redactor> red;
    if (to == Side::client && !replace_.empty()) red.emplace(replace_);
    Redactor* r = red ? &*red : nullptr;
    switch (b.framing) {
    case Framing::none: co_return true;
    case Framing::length:
        if (!co_await copy(from, to, b.length, r)) co_return false;
        // (Written out: GCC 12 evaluates the operands of a co_await under || or &&
        // before the condition, so r->finish() must not sit in one.)
        if (r == nullptr) co_return true;
        co_return co_await write(to, r->finish());
    case Framing::until_close:
        for (;;) {
            std::string& buffer = buf(from);
            if (!buffer.empty()) {
                std::string part = std::move(buffer);
                buffer.clear();
                if (r != nullptr) part = r->feed(part);
                if (!co_await send_piece(to, part, false)) co_return false;
            }
            if (!co_await settle(from, to, r, false)) co_return false;
            if (!co_await fill(from)) {
                if (r != nullptr) {
                    std::string rest = r->finish();
                    (void)co_await send_piece(to, rest, false);
                }
                co_return false;
            }
        }
    case Framing::chunked: break;
    }
    ChunkedFraming chunked;
    for (;;) {
        std::string l;
        if (!co_await line(from, l, r)) co_return false;
        // The size lines are written anew, without extensions, and trailers are
        // dropped: nothing of the sender's own spelling of the framing goes on.
        // (Redacted bodies get their own chunk sizes, see copy().)
        switch (chunked.on_line(l)) {
        case ChunkedFraming::Line::bad: co_return false;
        case ChunkedFraming::Line::chunk:
            if (r == nullptr) {
                if (!co_await write(to, std::string(chunked.size_text()) + "\r\n")) co_return false;
            }
            if (!co_await copy(from, to, chunked.chunk_size(), r, r != nullptr)) co_return false;
            chunked.data_done();
            break;
        case ChunkedFraming::Line::chunk_end:
            if (r == nullptr) {
                if (!co_await write(to, l)) co_return false;
            }
            break;
        case ChunkedFraming::Line::last:
        case ChunkedFraming::Line::trailer: break;
        case ChunkedFraming::Line::end:
            if (r != nullptr) {
                if (!co_await send_piece(to, r->finish(), true)) co_return false;
            }
            co_return co_await write(to, "0\r\n\r\n");
        }
    }
}

// After a 101: both directions relayed as they come, for the rest of the
// connection. What the origin sends goes through the redactor (frames from a
// server are unmasked, so a value echoed in one is found; the mask is as long as
// the value, so every frame's length stays true); what the client sends goes on
// untouched (a secret goes only into the handshake's credential headers). The
// client's direction runs as a coroutine of its own; when either side ends, the
// connection ends (WebSocket has its own closing handshake, which has passed by then).
asio::awaitable<void> Exchange::websocket_relay(std::string method, std::string path, std::string rule,
                                                std::uint64_t up0, std::uint64_t down0) {
    disarm();
    websocket_ = true;
    auto self = shared_from_this();
    asio::co_spawn(*px_.io, websocket_up(), [self](std::exception_ptr e) {
        if (e) self->abort();
    });
    Redactor red(replace_);
    for (;;) {
        if (!ubuf_.empty()) {
            std::string part = std::move(ubuf_);
            ubuf_.clear();
            if (!red.idle()) part = red.feed(part);
            if (!co_await send_piece(Side::client, part, false)) break;
        }
        if (!co_await settle(Side::upstream, Side::client, red.idle() ? nullptr : &red, false))
            break;
        if (!co_await fill(Side::upstream)) {
            if (!red.idle()) (void)co_await send_piece(Side::client, red.finish(), false);
            break;
        }
    }
    log_request(method, path, true, "allowed, WebSocket", rule, 101, up0, down0);
    abort();
}

asio::awaitable<void> Exchange::websocket_up() {
    for (;;) {
        if (!cbuf_.empty()) {
            std::string part = std::move(cbuf_);
            cbuf_.clear();
            if (!co_await write(Side::upstream, part)) break;
        }
        if (!co_await fill(Side::client)) {
            // The client is done sending: a plain upstream hears it (half-close);
            // over TLS the origin's side goes on until it closes.
            error_code ec;
            if (!utls_) upstream_.shutdown(tcp::socket::shutdown_send, ec);
            co_return;
        }
    }
    abort();
}

}  // namespace agentjail::net
