// SPDX-License-Identifier: Apache-2.0
// One poll(2) round on the run's loop (see poll_async.hpp): the descriptors go into
// an epoll instance of the component's own for the round, the loop waits on that
// instance (and on a timer), and once the wait is over they leave it again and
// poll(2) with no timeout says exactly what is ready.
#include "sys/poll_async.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>

namespace agentjail::sys {

namespace asio = boost::asio;

struct AsyncPoll::Impl : std::enable_shared_from_this<AsyncPoll::Impl> {
    explicit Impl(asio::io_context& ctx) : io(ctx), ready(ctx), timer(ctx) {}

    asio::io_context& io;
    asio::posix::stream_descriptor ready;  // the epoll instance, as the loop sees it
    int epfd = -1;
    asio::steady_timer timer;
    // The round under way:
    std::vector<pollfd> fds;
    std::function<void(std::vector<pollfd>&)> done;
    std::vector<int> added;
    int pending = 0;
    bool fired = false;
    // No wait under way: set by the round whose done() started no other.
    std::mutex idle_mu;
    std::condition_variable idle_cv;
    bool idle = true;

    // What poll(2) says now, without waiting: the number of descriptors ready.
    int poll_now() {
        for (auto& p : fds) p.revents = 0;
        int n;
        do {
            n = ::poll(fds.data(), fds.size(), 0);
        } while (n < 0 && errno == EINTR);
        if (n < 0)
            for (auto& p : fds) p.revents = p.fd >= 0 ? POLLERR : 0;
        return n;
    }

    void deliver() {
        for (int fd : added) {
            epoll_event ev{};
            (void)::epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &ev);
        }
        added.clear();
        (void)poll_now();
        finish();
    }

    // done() may start the next round, which takes fds and done anew.
    void finish() {
        auto d = std::move(done);
        auto f = std::move(fds);
        done = nullptr;
        fds.clear();
        d(f);
        if (done) return;  // the next round is under way
        std::lock_guard lock(idle_mu);
        idle = true;
        idle_cv.notify_all();
    }

    void fire() {
        if (fired) return;
        fired = true;
        boost::system::error_code ec;
        ready.cancel(ec);
        timer.cancel();
    }

    void completed() {
        if (--pending == 0) deliver();
    }

    // On the loop's thread.
    void arm(int timeout_ms) {
        // Ready already (a stream of output, a notification): no registration.
        if (timeout_ms == 0 || poll_now() != 0) {
            finish();
            return;
        }
        bool unwaitable = false;
        for (size_t i = 0; i < fds.size() && !unwaitable; ++i) {
            const int fd = fds[i].fd;
            if (fd < 0) continue;
            bool seen = false;
            for (size_t j = 0; j < i; ++j) seen = seen || fds[j].fd == fd;
            if (seen) continue;
            epoll_event ev{};
            for (const auto& q : fds) {
                if (q.fd != fd) continue;
                if (q.events & POLLIN) ev.events |= EPOLLIN;
                if (q.events & POLLPRI) ev.events |= EPOLLPRI;
                if (q.events & POLLOUT) ev.events |= EPOLLOUT;
            }
            ev.data.fd = fd;
            if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
                added.push_back(fd);
            } else {
                // A descriptor epoll cannot wait on (a regular file) is always ready
                // for poll, as is a bad one (POLLNVAL): poll says which.
                unwaitable = true;
            }
        }
        if (unwaitable) {
            deliver();
            return;
        }
        auto self = shared_from_this();
        fired = false;
        pending = 1;
        ready.async_wait(asio::posix::descriptor_base::wait_read, [self](const boost::system::error_code& ec) {
            if (ec != asio::error::operation_aborted) self->fire();
            self->completed();
        });
        if (timeout_ms > 0) {
            ++pending;
            timer.expires_after(std::chrono::milliseconds(timeout_ms));
            timer.async_wait([self](const boost::system::error_code& ec) {
                if (!ec) self->fire();
                self->completed();
            });
        }
    }
};

AsyncPoll::AsyncPoll(boost::asio::io_context& io) : impl_(std::make_shared<Impl>(io)) {
    impl_->epfd = ::epoll_create1(EPOLL_CLOEXEC);
    if (impl_->epfd < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    impl_->ready.assign(impl_->epfd);  // owned (and closed) by the descriptor from here
}

AsyncPoll::~AsyncPoll() = default;

void AsyncPoll::wait(std::vector<pollfd> fds, int timeout_ms, std::function<void(std::vector<pollfd>&)> done) {
    {
        std::lock_guard lock(impl_->idle_mu);
        impl_->idle = false;
    }
    impl_->fds = std::move(fds);
    impl_->done = std::move(done);
    // Armed on the loop's own thread: a first wait started by the caller's thread
    // never races its completion.
    asio::post(impl_->io, [self = impl_, timeout_ms] { self->arm(timeout_ms); });
}

void AsyncPoll::wait_idle() {
    std::unique_lock lock(impl_->idle_mu);
    impl_->idle_cv.wait(lock, [this] { return impl_->idle; });
}

}  // namespace agentjail::sys
