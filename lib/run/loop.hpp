// SPDX-License-Identifier: Apache-2.0
// The run's event loop: one Boost.Asio io_context on one thread of the library,
// which the network proxy and the published ports serve on (instead of a thread
// each). Asynchronous signals are blocked on it; a handler that throws is logged in
// failure() and the loop goes on (100 times at most).
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

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
    bool started_ = false;
    mutable std::mutex mu_;
    std::string failure_;
};

}  // namespace agentjail::run
