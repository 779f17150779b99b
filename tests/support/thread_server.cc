// SPDX-License-Identifier: Apache-2.0
#include "thread_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ajtest {

struct ThreadServer::State {
    std::thread acceptor;
    std::mutex mu;
    std::vector<std::thread> workers;
    std::vector<int> open_fds;
    bool stopped = false;
};

ThreadServer::ThreadServer(const Options& opts, Handler handler)
    : opts_(opts), handler_(std::move(handler)), state_(std::make_unique<State>()) {
    // A client that hangs up mid-answer must end that answer, not the test process:
    // SSL_write and write on such a socket raise SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    // The destructor does not run when the constructor throws: close_all() first.
    auto fail = [this](const std::string& why) {
        close_all();
        throw std::runtime_error(opts_.what + ": " + why);
    };
    if (!opts.tls_cert.empty()) {
        ctx_ = SSL_CTX_new(TLS_server_method());
        if (ctx_ == nullptr ||
            SSL_CTX_use_certificate_file(ctx_, opts.tls_cert.c_str(), SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx_, opts.tls_key.c_str(), SSL_FILETYPE_PEM) != 1) {
            char err[256] = "";
            ERR_error_string_n(ERR_get_error(), err, sizeof err);
            ERR_clear_error();
            fail("cannot load " + opts.tls_cert + " / " + opts.tls_key + ": " + err);
        }
    }
    listen_fd_ = ::socket(opts.ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) fail(std::string("socket failed: ") + std::strerror(errno));
    if (opts.reuse_addr) {
        int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    }
    sockaddr_storage ss{};
    socklen_t len;
    if (opts.ipv6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        a->sin6_port = htons(opts.port);
        len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(opts.port);
        len = sizeof *a;
    }
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
        ::listen(listen_fd_, 128) != 0)
        fail(std::string("bind/listen on ") + (opts.ipv6 ? "[::1]:" : "127.0.0.1:") +
             std::to_string(opts.port) + ": " + std::strerror(errno));
    len = sizeof ss;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ntohs(opts.ipv6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    if (::pipe2(stop_pipe_, O_CLOEXEC) != 0)
        fail(std::string("pipe failed: ") + std::strerror(errno));
    state_->acceptor = std::thread([this] { accept_loop(); });
}

ThreadServer::~ThreadServer() {
    stop();
    close_all();
}

void ThreadServer::close_all() {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    for (int& fd : stop_pipe_)
        if (fd >= 0) ::close(fd);
    listen_fd_ = stop_pipe_[0] = stop_pipe_[1] = -1;
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    ctx_ = nullptr;
}

void ThreadServer::stop() {
    {
        std::lock_guard<std::mutex> l(state_->mu);
        if (state_->stopped) return;
        state_->stopped = true;
        for (int fd : state_->open_fds) ::shutdown(fd, SHUT_RDWR);
    }
    char c = 'x';
    (void)!::write(stop_pipe_[1], &c, 1);
    if (state_->acceptor.joinable()) state_->acceptor.join();
    std::vector<std::thread> workers;
    {
        std::lock_guard<std::mutex> l(state_->mu);
        workers.swap(state_->workers);
    }
    for (auto& t : workers) t.join();
}

void ThreadServer::accept_loop() {
    for (;;) {
        pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
        int n = ::poll(p, 2, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || p[1].revents != 0) return;
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        ++connections_;
        std::lock_guard<std::mutex> l(state_->mu);
        if (state_->stopped) {
            ::close(fd);
            return;
        }
        state_->open_fds.push_back(fd);
        state_->workers.emplace_back([this, fd] { serve(fd); });
    }
}

void ThreadServer::serve(int fd) {
    if (opts_.nodelay) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (opts_.recv_timeout_s > 0) {
        timeval tv{opts_.recv_timeout_s, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    if (opts_.send_timeout_s > 0) {
        timeval tv{opts_.send_timeout_s, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    SSL* ssl = nullptr;
    if (ctx_ != nullptr) {
        ssl = SSL_new(ctx_);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) != 1) {
            ERR_clear_error();
            SSL_free(ssl);
            return release(fd);
        }
    }
    handler_(fd, ssl);
    if (ssl != nullptr) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    release(fd);
}

// Closes a connection under the lock stop() shuts connections down with, so that stop()
// never touches a number the process has since reused.
void ThreadServer::release(int fd) {
    std::lock_guard<std::mutex> l(state_->mu);
    auto& fds = state_->open_fds;
    fds.erase(std::remove(fds.begin(), fds.end(), fd), fds.end());
    ::close(fd);
}

}  // namespace ajtest
