// SPDX-License-Identifier: Apache-2.0
// The run's event loop: one Boost.Asio io_context on one thread of the library,
// which every component of a run waits on: the supervisor (the init's pidfd, the
// seccomp listener, the clocks, the guarded names), the stdio relay, the network
// proxy and the published ports. Asynchronous signals are blocked on it. A handler
// that throws is counted in failure() and the loop goes on; at the 100th the
// sandbox is killed (stops()), since a component may have lost its way, but the loop still
// runs to the end so that what waits on it can finish.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <boost/asio/post.hpp>

#include <atomic>
#include <future>
#include <optional>

#include <mutex>
#include <string>
#include <thread>

namespace agentjail::run {

class Loop {
public:
    Loop() = default;
    ~Loop() { finish(); }
    Loop(const Loop&) = delete;
    Loop& operator=(const Loop&) = delete;

    boost::asio::io_context& io() { return io_; }
    // Runs the loop on its thread until finish(); the first call only.
    void start();
    // The sandbox the loop kills when it gives up (its init's pidfd, borrowed; -1:
    // none yet): a component may have lost its way, the sandbox must not go on.
    void stops(int pidfd) { sandbox_pidfd_.store(pidfd); }
    // Runs f on the loop's thread and returns what it returned (inline when the loop
    // does not run): a component set up on the loop while it already runs never races
    // its own first completion.
    template <class F>
    auto run_here(F f) -> decltype(f()) {
        if (!thread_.joinable()) return f();
        std::packaged_task<decltype(f())()> task(std::move(f));
        auto result = task.get_future();
        boost::asio::post(io_, [&task] { task(); });
        return result.get();
    }
    // Stops the loop and joins its thread, then runs on the caller's thread what is
    // left ready (the completions of what the components aborted), so that nothing
    // queued outlives them. Idempotent. The components stop their own work first.
    void finish();
    // Why the loop gave up, or "".
    std::string failure() const;

private:
    boost::asio::io_context io_;
    // Keeps run() from returning while no component has work queued yet.
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
    std::thread thread_;
    std::atomic<int> sandbox_pidfd_{-1};
    bool started_ = false;
    mutable std::mutex mu_;
    std::string failure_;
};

}  // namespace agentjail::run
