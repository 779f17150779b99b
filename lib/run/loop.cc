// SPDX-License-Identifier: Apache-2.0
// The run's one event loop thread (see loop.hpp).
#include "run/loop.hpp"

#include "sys/json_lines.hpp"
#include "sys/syscalls.hpp"

#include <boost/asio/executor_work_guard.hpp>

#include <pthread.h>
#include <signal.h>

#include <exception>

namespace agentjail::run {

void Loop::start() {
    if (started_) return;
    started_ = true;
    work_.emplace(boost::asio::make_work_guard(io_));
    // Every asynchronous signal is blocked on the loop's thread, from its first
    // instruction (it inherits the mask it is created with): the caller's signals are
    // its own threads' business, never run in the middle of a handler; SIGTTOU and
    // SIGTTIN never stop agentjail for the relay's use of a terminal (a background
    // job gets EIO); and SIGPIPE, which write(2) and splice(2) raise at the thread
    // that writes into a pipe or socket its reader closed, stays pending instead of
    // killing the process (sys::drain_sigpipe() takes it).
    sigset_t mask, old;
    ::sigfillset(&mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) ::sigdelset(&mask, sig);
    ::pthread_sigmask(SIG_BLOCK, &mask, &old);
    thread_ = std::thread([this] {
        int errors = 0;
        auto failed = [&](const char* what) {
            std::lock_guard lock(mu_);
            if (++errors != 100) return;
            failure_ = std::string("the run's event loop: internal error: ") + what +
                       " (100 handlers failed; the sandbox was stopped)";
            if (int fd = sandbox_pidfd_.load(); fd >= 0) sys::pidfd_send_signal(fd, SIGKILL);
        };
        for (;;) {
            try {
                io_.run();
                break;
            } catch (const std::exception& e) {
                // A handler threw (bad_alloc): the other connections go on.
                failed(e.what());
            } catch (...) {
                failed("an unknown exception");
            }
        }
        sys::drain_sigpipe();
    });
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
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
