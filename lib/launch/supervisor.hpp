// SPDX-License-Identifier: Apache-2.0
// The per-sandbox supervisor thread: answers seccomp notifications with the
// policy's verdict (and logs them), and enforces the wall clock.
#pragma once

#include "seccomp/seccomp.hpp"
#include "sys/fd.hpp"
#include "util/log_limit.hpp"

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

namespace agentjail::launch {

class Supervisor {
public:
    struct Config {
        int pidfd = -1;  // the init's; borrowed, must outlive the supervisor
        sys::UniqueFd listener;
        std::shared_ptr<const seccomp::Program> program;
        sys::UniqueFd log;  // JSON lines of refused calls; may be invalid
        double timeout_s = 0;
        double grace_s = 5;
        int broadcast_sig = 0;
        std::function<void()> on_kill;
    };

    explicit Supervisor(Config c);
    ~Supervisor();
    Supervisor(const Supervisor&) = delete;
    Supervisor& operator=(const Supervisor&) = delete;

    // Waits for the thread, which ends once the init has exited.
    void join();
    bool timed_out() const { return timed_out_.load(); }
    std::uint64_t denials() const { return denials_.load(); }

private:
    void run();
    void handle_notification();
    void write_line(const nlohmann::json& j);
    void write_summaries(double now);

    Config c_;
    std::atomic<bool> timed_out_{false};
    std::atomic<std::uint64_t> denials_{0};
    util::LogLimiter limiter_;  // supervisor thread only
    std::thread thread_;
};

}  // namespace agentjail::launch
