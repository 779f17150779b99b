// SPDX-License-Identifier: Apache-2.0
// How the proxy and the published ports stop on the run's loop: what they abort is
// posted there, and the caller waits (2 s at most) until their last connection said
// it is gone. One shape for both, so neither returns while a connection of its own
// still runs on the loop.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <future>
#include <utility>

namespace agentjail::net {

class Drain {
public:
    // On the loop, when a stopping component has no connection left (again: once).
    void done() {
        if (set_) return;
        set_ = true;
        drained_.set_value();
    }
    // The caller's: runs `abort` on the loop (which then calls done() when nothing
    // is left) and waits for done(), 2 s at most: a stuck handler must not hang the
    // caller, whose run ends the loop after this anyway.
    template <class Abort>
    void stop_on(boost::asio::io_context& io, Abort abort) {
        auto finished = drained_.get_future();
        boost::asio::post(io, std::move(abort));
        (void)finished.wait_for(std::chrono::seconds(2));
    }

private:
    std::promise<void> drained_;
    bool set_ = false;  // the loop's
};

}  // namespace agentjail::net
