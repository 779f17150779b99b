// SPDX-License-Identifier: Apache-2.0
// The threaded server skeleton the test servers share (TestServer, ModelStandin): a
// listening socket on the loopback, an acceptor thread, one worker thread per
// connection, optional TLS, and a stop() that ends them all. What is said on a
// connection is the handler's business.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace ajtest {

class ThreadServer {
public:
    struct Options {
        std::string what = "test server";  // the start of error messages
        bool ipv6 = false;                 // listen on ::1 instead of 127.0.0.1
        std::uint16_t port = 0;            // 0: an ephemeral port
        bool reuse_addr = false;           // SO_REUSEADDR (a fixed port used again soon)
        std::string tls_cert, tls_key;     // PEM files: TLS on every connection when set
        bool nodelay = false;              // TCP_NODELAY on each connection
        int recv_timeout_s = 0;            // SO_RCVTIMEO on each connection (0: none)
        int send_timeout_s = 0;            // SO_SNDTIMEO on each connection (0: none)
    };
    // Called on a worker thread with the connection (ssl is null without TLS; the TLS
    // handshake is done). The server closes the connection when it returns.
    using Handler = std::function<void(int fd, SSL* ssl)>;

    // Listens and starts accepting; throws std::runtime_error when that fails.
    ThreadServer(const Options& opts, Handler handler);
    ~ThreadServer();
    ThreadServer(const ThreadServer&) = delete;
    ThreadServer& operator=(const ThreadServer&) = delete;

    std::uint16_t port() const { return port_; }
    bool tls() const { return ctx_ != nullptr; }
    // Connections accepted so far (a TCP handshake counts even without a request).
    int connections() const { return connections_.load(); }
    // Shuts every connection down and joins the threads; idempotent.
    void stop();

private:
    struct State;
    void accept_loop();
    void serve(int fd);
    void release(int fd);
    void close_all();
    Options opts_;
    Handler handler_;
    SSL_CTX* ctx_ = nullptr;
    int listen_fd_ = -1;
    int stop_pipe_[2] = {-1, -1};
    std::unique_ptr<State> state_;
    std::uint16_t port_ = 0;
    std::atomic<int> connections_{0};
};

}  // namespace ajtest
