// SPDX-License-Identifier: Apache-2.0
// poll(2) on the run's event loop: a component that waits on a few descriptors (the
// supervisor, the stdio relay) keeps its poll-shaped state machine, but waits on
// the run's one Boost.Asio loop instead of on a thread of its own.
#pragma once

#include <poll.h>

#include <functional>
#include <memory>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace agentjail::sys {

class AsyncPoll {
public:
    // Throws std::system_error when the kernel gives no epoll instance.
    explicit AsyncPoll(boost::asio::io_context& io);
    ~AsyncPoll();
    AsyncPoll(const AsyncPoll&) = delete;
    AsyncPoll& operator=(const AsyncPoll&) = delete;

    // Calls done(fds) on io's thread once one of fds is ready or timeout_ms passed
    // (-1: no timeout, 0: at once), with every revents filled in by poll(2) itself (a
    // regular file is ready, as with poll). A negative fd is skipped, as poll does.
    // The descriptors are watched through an epoll instance of this object's, which
    // the loop waits on: their own flags are never changed (the loop's reactor would
    // set O_NONBLOCK on a descriptor it waits on, which a pidfd's waitid or the user's
    // terminal must not get), and they are out of it again before done() runs, which
    // may close any of them and start the next wait. One wait at a time; the caller
    // keeps the descriptors open and itself alive until done() ran, and destroys this
    // object only when no wait is left.
    void wait(std::vector<pollfd> fds, int timeout_ms, std::function<void(std::vector<pollfd>&)> done);
    // The caller's: blocks until no wait is under way and the last done() returned
    // without starting another: the component has ended on the loop (the owner then
    // destroys this object while the loop is still there).
    void wait_idle();

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace agentjail::sys
