// SPDX-License-Identifier: Apache-2.0
// The per-sandbox supervisor thread: answers seccomp notifications with the
// policy's verdict (and logs them), enforces the wall clock, and keeps the
// workspace's guarded names guarded when the host replaces them.
#pragma once

#include "launch/guard_watch.hpp"
#include "seccomp/seccomp.hpp"
#include "sys/fd.hpp"
#include "util/log_limit.hpp"

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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
        // The workspace's guarded names (null: none): watched for the run, their
        // protection re-applied when the host replaces them, or the run stopped.
        std::unique_ptr<GuardWatch> guards;
    };

    explicit Supervisor(Config c);
    ~Supervisor();
    Supervisor(const Supervisor&) = delete;
    Supervisor& operator=(const Supervisor&) = delete;

    // Waits for the thread, which ends once the init has exited.
    void join();
    bool timed_out() const { return timed_out_.load(); }
    std::uint64_t denials() const { return denials_.load(); }
    // After join(): why the thread failed (it then killed the sandbox); empty if not.
    const std::string& failure() const { return failure_; }
    // After join(): what the guard watcher did. release_namespaces: the caller has
    // placeholders to remove (see GuardWatch::finish), to which the watcher's own
    // are added.
    void finish_guards(WorkspaceOutcome& out, bool release_namespaces, fs::Placeholders& made) {
        if (c_.guards) c_.guards->finish(out, release_namespaces, made);
    }

private:
    void run();
    void run_guarded() noexcept;
    void handle_notification();
    void write_line(const nlohmann::json& j);
    void write_summaries(double now);

    Config c_;
    std::atomic<bool> timed_out_{false};
    std::atomic<std::uint64_t> denials_{0};
    util::LogLimiter limiter_;  // supervisor thread only
    std::string failure_;       // written by the thread, read after join()
    std::thread thread_;
};

}  // namespace agentjail::launch
