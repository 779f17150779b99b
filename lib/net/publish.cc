// SPDX-License-Identifier: Apache-2.0
// Published ports: listeners on the host's loopback, on the run's Boost.Asio loop, and for
// each accepted connection a socket asked of the sandbox's init (publish.hpp),
// connected to the published port inside and relayed both ways.
#include <utility>

#include "net/publish.hpp"

#include "net/drain.hpp"

#include "util/strings.hpp"

#include <boost/asio.hpp>

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <future>
#include <thread>
#include <unordered_set>

namespace agentjail::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

// Connections at once over all published ports: a dev server's browser tabs, not
// a flood the host's process must hold for the sandbox.
constexpr size_t max_connections = 256;
constexpr size_t relay_buffer = 16 * 1024;

struct Relay;

}  // namespace

struct Publisher::Impl {
    std::vector<PublishPort> ports;
    std::vector<sys::UniqueFd> listen_fds;  // bound in bind(), handed to the acceptors in serve()
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
    std::optional<asio::posix::stream_descriptor> control;
    // Accepted connections waiting for their socket from the init, in the order asked.
    struct Waiting {
        tcp::socket client;
        std::uint16_t port;
    };
    std::deque<Waiting> waiting;
    bool reading = false;
    std::unordered_set<Relay*> relays;
    bool stopped = false;      // on the loop
    bool stop_called = false;  // the caller's
    asio::io_context* io = nullptr;  // the run's loop (serve()), not owned
    Drain drain;  // says when a stopped publisher's last relay is gone
    void relay_gone() {
        if (stopped && relays.empty()) drain.done();
    }

    void accept(size_t i);
    void read_control();
};

namespace {

// Both directions of one published connection, copied through a buffer each; a
// direction reads again only once its write is done (back-pressure), and an end of
// one direction is passed on as a half-close.
struct Relay : std::enable_shared_from_this<Relay> {
    Relay(Publisher::Impl& owner, tcp::socket c, tcp::socket in)
        : px(owner), client(std::move(c)), inside(std::move(in)) {
        px.relays.insert(this);
    }
    ~Relay() {
        px.relays.erase(this);
        px.relay_gone();
    }
    void abort() {
        error_code ec;
        client.close(ec);
        inside.close(ec);
    }
    void start() {
        pump(client, inside, up);
        pump(inside, client, down);
    }
    void pump(tcp::socket& from, tcp::socket& to, std::array<char, relay_buffer>& buf) {
        auto self = shared_from_this();
        from.async_read_some(
            asio::buffer(buf), [self, &from, &to, &buf](const error_code& ec, size_t n) {
                if (ec) {
                    error_code ignore;
                    if (ec == asio::error::eof) {
                        to.shutdown(tcp::socket::shutdown_send, ignore);
                        if (++self->closed == 2) self->abort();
                    } else {
                        self->abort();
                    }
                    return;
                }
                asio::async_write(to, asio::buffer(buf.data(), n),
                                  [self, &from, &to, &buf](const error_code& wec, size_t) {
                                      if (wec) return self->abort();
                                      self->pump(from, to, buf);
                                  });
            });
    }
    Publisher::Impl& px;
    tcp::socket client, inside;
    std::array<char, relay_buffer> up{}, down{};
    int closed = 0;
};

}  // namespace

void Publisher::Impl::accept(size_t i) {
    acceptors[i]->async_accept([this, i](const error_code& ec, tcp::socket s) {
        if (stopped || ec == asio::error::operation_aborted) return;
        if (!ec) {
            if (relays.size() + waiting.size() >= max_connections) {
                error_code ignore;
                s.close(ignore);
            } else {
                // One request byte; the init answers with a socket (read_control()).
                char v4 = 4;
                if (::send(control->native_handle(), &v4, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
                    waiting.push_back({std::move(s), ports[i].port});
                    read_control();
                }
            }
        }
        accept(i);
    });
}

void Publisher::Impl::read_control() {
    if (reading || waiting.empty()) return;
    reading = true;
    control->async_wait(asio::posix::stream_descriptor::wait_read, [this](const error_code& ec) {
        reading = false;
        if (ec || stopped) return;
        for (;;) {
            std::int32_t report[3] = {};
            iovec iov{report, sizeof report};
            alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf;
            msg.msg_controllen = sizeof cbuf;
            ssize_t n = ::recvmsg(control->native_handle(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
            if (n < 0 && errno == EINTR) continue;
            if (n == 0) {
                // The init is gone (the run is ending): nobody waiting can be served.
                waiting.clear();
                return;
            }
            if (n < 0) break;  // EAGAIN: the rest comes later
            int fd = -1;
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                    std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
            if (waiting.empty()) {
                if (fd >= 0) ::close(fd);
                continue;
            }
            Waiting w = std::move(waiting.front());
            waiting.pop_front();
            if (fd < 0) continue;  // the init could not make a socket: the client is closed
            auto inside = std::make_shared<tcp::socket>(*io);
            error_code aec;
            inside->assign(tcp::v4(), fd, aec);
            if (aec) {
                ::close(fd);
                continue;
            }
            auto client = std::make_shared<tcp::socket>(std::move(w.client));
            // 127.0.0.1 of the sandbox's namespace, the one the socket was made in.
            inside->async_connect(
                tcp::endpoint(asio::ip::address_v4::loopback(), w.port),
                [this, inside, client](const error_code& cec) {
                    if (cec || stopped) return;  // nothing listens inside: the client is closed
                    error_code ignore;
                    client->set_option(tcp::no_delay(true), ignore);
                    inside->set_option(tcp::no_delay(true), ignore);
                    std::make_shared<Relay>(*this, std::move(*client), std::move(*inside))->start();
                });
        }
        read_control();
    });
}

Publisher::Publisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Publisher::~Publisher() { stop(); }

Result<std::unique_ptr<Publisher>> Publisher::bind(const std::vector<PublishPort>& ports) {
    auto impl = std::make_unique<Impl>();
    impl->ports = ports;
    for (const auto& p : ports) {
        sys::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd) {
            int err = errno;
            return Error(ErrorKind::setup, err, "publish: socket: " + util::errno_text(err));
        }
        int one = 1;
        ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(p.host_port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
            ::listen(fd.get(), 128) != 0) {
            int err = errno;
            std::string why =
                err == EADDRINUSE ? "something already listens there" : util::errno_text(err);
            return Error(
                ErrorKind::invalid_input, err,
                "publish " + std::to_string(p.port) + ":" + std::to_string(p.host_port) +
                    ": cannot listen on the host's 127.0.0.1:" + std::to_string(p.host_port) +
                    ": " + why + " (pick another host port: --publish " + std::to_string(p.port) +
                    ":HOSTPORT)");
        }
        impl->listen_fds.push_back(std::move(fd));
    }
    return std::unique_ptr<Publisher>(new Publisher(std::move(impl)));
}

Result<void> Publisher::serve(asio::io_context& io, sys::UniqueFd control) {
    Impl& m = *impl_;
    if (!control)
        return Error(ErrorKind::internal, EBADF,
                     "publish: no control socket from the sandbox's init");
    try {
        m.control.emplace(io, control.release());
        for (size_t i = 0; i < m.listen_fds.size(); ++i) {
            auto& a = m.acceptors.emplace_back(std::make_unique<tcp::acceptor>(io));
            a->assign(tcp::v4(), m.listen_fds[i].release());
            m.accept(i);
        }
    } catch (const std::exception& e) {
        return Error(ErrorKind::setup, 0, std::string("publish: ") + e.what());
    }
    m.io = &io;
    return {};
}

void Publisher::stop() {
    Impl& m = *impl_;
    if (m.stop_called) return;
    m.stop_called = true;
    if (m.io != nullptr) {
        m.drain.stop_on(*m.io, [&m] {
            m.stopped = true;
            error_code ec;
            for (auto& a : m.acceptors) a->close(ec);
            if (m.control) m.control->close(ec);
            m.waiting.clear();
            std::vector<Relay*> all(m.relays.begin(), m.relays.end());
            for (Relay* r : all) r->abort();
            m.relay_gone();  // none open: drained already
        });
    } else {
        m.stopped = true;
    }
}

}  // namespace agentjail::net
