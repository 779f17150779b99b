// SPDX-License-Identifier: Apache-2.0
// The per-sandbox supervisor, on the run's event loop: answers seccomp notifications with the
// policy's verdict (and logs them), enforces the wall clock and the kill grace of a
// stop, and serves the run's host watch (host_watch.hpp: the workspace's guarded
// names kept guarded when the host replaces them): a frozen sandbox is thawed only
// once the watch has dealt with what the host changed meanwhile.
#pragma once

#include "base/outcome.hpp"
#include "launch/host_watch.hpp"
#include "launch/socket_gate.hpp"
#include "seccomp/seccomp.hpp"
#include "sys/fd.hpp"
#include "sys/poll_async.hpp"
#include "util/log_limit.hpp"

#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <poll.h>


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
        // Freezing (ChildSpec::freeze_sig): the requests to the init and its notes back.
        int freeze_sig = 0;
        int thaw_sig = 0;
        int sync_sig = 0;  // ChildSpec::sync_sig: before a freeze of the cgroup
        sys::UniqueFd freeze_notes;
        std::function<void()> on_kill;
        // launch::Hooks::freeze_group (null: the init's signals stop the sandbox).
        std::function<bool(bool, int)> freeze_group;
        // A watch on the host (Hooks::watch; null: none), borrowed: its fd() is part
        // of every wait, its handle() runs when that is readable and before a frozen
        // sandbox is thawed; a false from it kills the sandbox.
        HostWatch* watch = nullptr;
        // The socket gate's (socket_gate.hpp): the paths allowed and the sandbox's
        // sock_diag socket.
        SocketGate::Config gate;
    };

    // Starts waiting on io, the run's loop (which runs until join() returned).
    Supervisor(Config c, boost::asio::io_context& io);
    ~Supervisor();
    Supervisor(const Supervisor&) = delete;
    Supervisor& operator=(const Supervisor&) = delete;

    // Waits until the supervisor is done: the init has exited (or it failed).
    void join();

    // The caller is about to stop (^Z): every process of the sandbox is stopped when
    // this returns true (false: the init did not answer within timeout_ms, it is
    // exiting). The sandbox stays frozen until thaw().
    bool freeze(int timeout_ms);
    // The caller goes on: the guarded names are checked for what the host changed
    // meanwhile, then the sandbox continues (on the run's loop).
    void thaw();
    // The run is asked to end (a signal to agentjail, which the caller passed on to
    // the command): everything inside is killed after the kill grace; a second
    // stop() kills at once.
    void stop();
    // After join(): stop() had to kill what was left inside.
    bool stop_killed() const { return stop_killed_.load(); }
    bool timed_out() const { return timed_out_.load(); }
    std::uint64_t denials() const { return denials_.load(); }
    // After join(): the refused calls and sockets, by call and rule (or path).
    const RefusalTally& refusals() const { return refusals_; }
    // After join(): why the supervisor failed (it then killed the sandbox); empty if not.
    const std::string& failure() const { return failure_; }
private:
    void wait_next();
    void on_ready(std::vector<pollfd>& fds) noexcept;
    // One round: what the wait found ready; false once the init exited.
    bool handle(std::vector<pollfd>& fds);
    void give_up() noexcept;
    void end() noexcept;
    void commands();
    void freeze_note(char note);
    void resume_after_stop();
    void kill_all();
    void handle_notification();
    void write_line(const nlohmann::json& j);
    void write_summaries(double now);

    Config c_;
    SocketGate gate_;  // the loop's
    std::atomic<bool> timed_out_{false};
    std::atomic<std::uint64_t> denials_{0};
    RefusalTally refusals_;  // the loop's until join()
    std::atomic<bool> stop_killed_{false};
    sys::UniqueFd commands_;  // an eventfd: the caller's requests are waiting
    // The supervisor's waits on the run's loop; released by join(), while the loop is
    // still there.
    std::unique_ptr<sys::AsyncPoll> poll_;
    // The loop's alone (the caller never touches them):
    // The two deadlines (monotonic seconds, 0: none), waited for as the round's
    // timeout: the wall clock, then its grace once SIGTERM went; a stop's kill grace.
    double wall_deadline_ = 0;
    bool term_sent_ = false;
    double kill_deadline_ = 0;
    bool watch_failed_ = false;  // its handle() said no: never asked again
    bool group_frozen_ = false;  // under m_: the caller's freeze went through the cgroup
    // The caller's requests and the init's acknowledgements.
    std::mutex m_;
    std::condition_variable cv_;
    bool held_ = false;          // the caller froze the sandbox; only thaw() continues it
    bool thaw_asked_ = false;
    unsigned stops_asked_ = 0;
    unsigned stops_done_ = 0;    // the loop's
    std::uint64_t acks_ = 0;
    bool done_ = false;  // the supervisor ended (the init exited, or it failed)
    util::LogLimiter limiter_;  // the loop's
    std::string failure_;       // written on the loop, read after join()
};

}  // namespace agentjail::launch
