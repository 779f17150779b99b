// SPDX-License-Identifier: Apache-2.0
// A step of one of agentjail's components on the run's loop (the supervisor, the
// stdio relay): an exception must never reach the loop, or std::terminate of the
// caller's process. It ends the run instead: SIGKILL to the sandbox and a message for the
// result ("the supervisor failed (what) and stopped the sandbox").
#pragma once

#include "sys/syscalls.hpp"
#include "util/fault.hpp"

#include <signal.h>

#include <exception>
#include <stdexcept>
#include <string>

namespace agentjail::util {

// Runs body(). On an exception: SIGKILL through sandbox_pidfd (-1: none), failure
// set (left empty only if even that allocation fails), false returned. fault_point:
// the test-only point (util/fault.hpp) that makes body throw (null: none).
template <class Body>
bool run_or_stop(const char* who, const char* fault_point, int sandbox_pidfd, std::string& failure,
                 Body&& body) noexcept {
    // The message is made inside the handler: e.what() points into the exception
    // object, which is gone once the handler ends (ASan found the read after free).
    auto stop = [&](const char* what) noexcept {
        if (sandbox_pidfd >= 0) sys::pidfd_send_signal(sandbox_pidfd, SIGKILL);
        try {
            failure = std::string(who) + " failed (" + what + ") and stopped the sandbox";
        } catch (...) {
        }
        return false;
    };
    try {
        if (fault_point != nullptr && fault::hit(fault_point)) throw std::runtime_error("an injected fault");
        body();
        return true;
    } catch (const std::exception& e) {
        return stop(e.what());
    } catch (...) {
        return stop("an unknown exception");
    }
}

}  // namespace agentjail::util
