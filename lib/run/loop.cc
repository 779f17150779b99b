// SPDX-License-Identifier: Apache-2.0
// The run's one event loop thread (see loop.hpp).
#include "run/loop.hpp"

#include "sys/json_lines.hpp"

#include <boost/asio/executor_work_guard.hpp>

#include <pthread.h>
#include <signal.h>

#include <exception>

namespace agentjail::run {

void Loop::start() {
    if (started_) return;
    started_ = true;
    work_.emplace(boost::asio::make_work_guard(io_));
    thread_ = std::thread([this] {
        // Every asynchronous signal is blocked here: the caller's signals are its own
        // threads' business, never run in the middle of a handler, and SIGPIPE, which
        // splice(2) raises at the thread that writes into a socket its client closed,
        // stays pending instead of killing the process (sys::drain_sigpipe() takes it).
        sigset_t mask;
        ::sigfillset(&mask);
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) ::sigdelset(&mask, sig);
        ::pthread_sigmask(SIG_BLOCK, &mask, nullptr);
        for (int errors = 0;;) {
            try {
                io_.run();
                break;
            } catch (const std::exception& e) {
                // A handler threw (bad_alloc): the other connections go on, but a loop
                // that keeps failing ends, said in the record.
                std::lock_guard lock(mu_);
                if (++errors >= 100) {
                    failure_ = std::string("the run's event loop: internal error: ") + e.what();
                    break;
                }
            } catch (...) {
                std::lock_guard lock(mu_);
                if (++errors >= 100) {
                    failure_ = "the run's event loop: internal error";
                    break;
                }
            }
        }
        sys::drain_sigpipe();
    });
}

void Loop::finish() {
    work_.reset();
    if (thread_.joinable()) {
        io_.stop();
        thread_.join();
    }
    io_.restart();
    for (int i = 0; i < 100; ++i) {
        try {
            if (io_.poll() == 0) break;
        } catch (...) {
        }
    }
}

std::string Loop::failure() const {
    std::lock_guard lock(mu_);
    return failure_;
}

}  // namespace agentjail::run
